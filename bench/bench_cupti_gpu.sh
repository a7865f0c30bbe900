#!/usr/bin/env bash
# Host time per CUDA kernel launch call with libdptrace_cupti.so injected,
# against the same program without it, in the same run, on a real NVIDIA
# GPU (cuda_app --launches: an empty kernel launched 200000 times on one
# stream, in bursts of 256 that the GPU drains between, untimed).  Five
# rounds (DPTEST_BENCH_ROUNDS), each mode once a round (the order turned by
# one each round), medians:
#   plain     no CUDA_INJECTION64_PATH (the library is linked but never starts)
#   records   CUPTI's floor (bench/cupti_floor.c): the same activity
#             records, buffers handed back unread
#   cupti     CUPTI's floor: those records and the same API callbacks
#             (runtime and driver), empty
#   traced    injected, events sent to a receiver (the dpnode ingest path)
#   dropping  injected, no receiver: everything is counted and dropped
# traced - cupti is libdptrace's own share (its callbacks, queue and
# thread); cupti - plain is what CUPTI costs anyone who asks it the same.
# Prints nothing but a note where no NVIDIA GPU answers.
#
# Usage: bench/bench_cupti_gpu.sh [launches]   (DPTEST_BUILD=build dir)
set -u
. "$(dirname "$0")/../tests/integration/lib.sh"
N=${1:-200000}
APP=$B/tests/cuda/cuda_app
LIB=$B/libdptrace_cupti.so
FLOOR=$B/bench/libcupti_floor.so
it_bench_start bench_cupti_gpu --gpu "$APP" "$LIB" "$FLOOR"

# per_launch MODE: one run's ns per launch call.
per_launch() {
    local out
    case $1 in
    plain) out=$(env -u CUDA_INJECTION64_PATH "$APP" --launches "$N" 2>&1) ;;
    records) out=$(CUDA_INJECTION64_PATH=$FLOOR DPTEST_FLOOR=activity "$APP" --launches "$N" 2>&1) ;;
    cupti) out=$(CUDA_INJECTION64_PATH=$FLOOR "$APP" --launches "$N" 2>&1) ;;
    traced) out=$(CUDA_INJECTION64_PATH=$LIB DPTOP_TRACE_ENDPOINT=$EP "$APP" --launches "$N" 2>&1) ;;
    dropping) out=$(CUDA_INJECTION64_PATH=$LIB DPTOP_TRACE_ENDPOINT="ipc://$IT_TMP/nobody.sock" \
        "$APP" --launches "$N" 2>&1) ;;
    esac
    echo "$out" >>"$IT_TMP/runs.log"
    echo "$out" | sed -n 's/.*launches: \([0-9.]*\) ns per launch call.*/\1/p'
}
# Each mode once a round, the order turned by one each round: a machine
# that drifts over the run, or a run that follows another, moves every
# mode alike.  One run takes about 1.5 s on an H200.
it_bench_rounds 5
declare -A runs med
MODES="plain records cupti traced dropping"
it_bench_modes per_launch $MODES || exit 1
gpu=$(head -1 "$IT_TMP/gpus.txt" | sed 's/ (UUID.*//')
printf '%s, %d empty-kernel launches per run, median of %d runs\n' "$gpu" "$N" "$ROUNDS"
printf '%-10s %12s %12s   %s\n' mode "ns/launch" "added ns" "runs"
for mode in $MODES; do
    awk -v m=$mode -v x="${med[$mode]}" -v p="${med[plain]}" -v r="${runs[$mode]}" \
        'BEGIN { printf "%-10s %12.1f %12.1f   %s\n", m, x, x - p, r }'
done
grep -h "cupti_floor:" "$IT_TMP/runs.log" | sort -u
grep -h "dptrace:" "$IT_TMP/runs.log" | tail -2
awk -v p="${med[plain]}" -v t="${med[traced]}" -v d="${med[dropping]}" \
    -v r="${med[records]}" -v c="${med[cupti]}" 'BEGIN {
    printf "BENCH cupti_launch_plain_ns %.1f ns\n", p
    printf "BENCH cupti_launch_records_added_ns %.1f ns\n", r - p
    printf "BENCH cupti_launch_cupti_added_ns %.1f ns\n", c - p
    printf "BENCH cupti_launch_dptrace_share_ns %.1f ns\n", t - c
    printf "BENCH cupti_launch_traced_ns %.1f ns\n", t
    printf "BENCH cupti_launch_added_ns %.1f ns\n", t - p
    printf "BENCH cupti_launch_dropping_added_ns %.1f ns\n", d - p
    printf "BENCH cupti_launch_traced_ratio %.2f x\n", t / p
}'
