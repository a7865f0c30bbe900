#!/usr/bin/env bash
# dptop for a SLURM job: inside an allocation (sbatch or salloc), start the
# dptop master on the job's first node and an agent on every other node,
# wait until their clocks are aligned, record the bus if asked, run the
# job's command, and stop everything when it ends (or when the job is
# cancelled: srun's steps end with the allocation).
#
#   dptop-slurm.sh [--port P] [--record FILE] [--check-unc-ns NS] -- COMMAND...
#
# COMMAND is the job itself, typically an srun of the training script with
# the tracing library loaded (docs/DEPLOY.md):
#   dptop-slurm.sh --record run.dprec -- \
#     srun --ntasks-per-node=8 env LD_PRELOAD=/usr/lib/libdptrace.so python train.py
# Programs are found on PATH (DPTOP_BIN overrides the directory).
set -euo pipefail
PORT=7410
RECORD=""
UNC=1000
while [ $# -gt 0 ]; do
    case $1 in
    --port) PORT=$2; shift 2 ;;
    --record) RECORD=$2; shift 2 ;;
    --check-unc-ns) UNC=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "dptop-slurm: unknown option $1 (usage: see the script's head)" >&2; exit 2 ;;
    esac
done
[ $# -gt 0 ] || { echo "dptop-slurm: no command after --" >&2; exit 2; }
: "${SLURM_JOB_NODELIST:?dptop-slurm: not inside a SLURM allocation}"
BIN=${DPTOP_BIN:+$DPTOP_BIN/}
mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")
FIRST=${NODES[0]}
HUB="tcp://$FIRST:$PORT"
pids=()
stop() {
    # The recorder first (it flushes), then the agents, the master last.
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -INT "${pids[$i]}" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap stop EXIT

# One task each, beside the job's own steps (--overlap).
srun --nodes=1 --ntasks=1 --nodelist="$FIRST" --overlap \
    "${BIN}dpnode" --master --listen "tcp://*:$PORT" &
pids+=($!)
if [ ${#NODES[@]} -gt 1 ]; then
    srun --nodes=$((${#NODES[@]} - 1)) --ntasks-per-node=1 --exclude="$FIRST" --overlap \
        "${BIN}dpnode" --hub "$HUB" &
    pids+=($!)
fi
if ! "${BIN}dptop" --hub "$HUB" --check "${#NODES[@]}" --check-unc-ns "$UNC" \
    --check-timeout-s 120; then
    echo "dptop-slurm: the clocks are not aligned yet; the job runs anyway" >&2
fi
if [ -n "$RECORD" ]; then
    "${BIN}dptop" --hub "$HUB" --record "$RECORD" &
    pids+=($!)
fi
export DPTOP_HUB="$HUB"
rc=0
"$@" || rc=$?
exit $rc
