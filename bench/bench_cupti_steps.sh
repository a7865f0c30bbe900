#!/usr/bin/env bash
# Training step time under libdptrace_cupti.so on a real NVIDIA GPU, for
# the PyTorch and JAX loops of the GPU tests (tests/cuda/torch_app.py,
# jax_app.py: each prints its median step after the first 3), against the
# same program without it and under CUPTI's floor (bench/cupti_floor.c:
# the same activity records and launch callbacks, nothing done with them).
# Rounds (DPTEST_BENCH_ROUNDS, default 3), each mode once a round, the
# order turned by one each round, medians:
#   plain   no CUDA_INJECTION64_PATH
#   cupti   CUPTI's floor
#   traced  injected, events sent to a receiver (the dpnode ingest path)
#   flush2  the same with records asked for every 2 ms (DPTOP_TRACE_FLUSH_MS=2),
#           as the library did before: what its flushes cost the program
# Prints nothing but a note where no NVIDIA GPU answers; a framework that
# is not installed, or cannot use the GPU, is left out.  Python:
# DPTEST_TORCH_PY, DPTEST_JAX_PY (as the GPU tests), else python3.
#
# Usage: bench/bench_cupti_steps.sh [steps]   (DPTEST_BUILD=build dir)
set -u
. "$(dirname "$0")/../tests/integration/lib.sh"
STEPS=${1:-50}
it_bench_rounds 3
LIB=$B/libdptrace_cupti.so
FLOOR=$B/bench/libcupti_floor.so
it_bench_start bench_cupti_steps --gpu "$LIB" "$FLOOR"

# step_us APP MODE: one run's median step in µs (nothing when it failed;
# "nogpu" when the framework cannot use the GPU: exit status 3).
step_us() {
    local out rc=0 app=$IT_ROOT/tests/cuda/$1_app.py
    case $2 in
    plain) out=$(env -u CUDA_INJECTION64_PATH timeout 150 "$PY" "$app" "$STEPS" 2>&1) ;;
    cupti) out=$(CUDA_INJECTION64_PATH=$FLOOR timeout 150 "$PY" "$app" "$STEPS" 2>&1) ;;
    traced) out=$(CUDA_INJECTION64_PATH=$LIB DPTOP_TRACE_ENDPOINT=$EP timeout 150 "$PY" "$app" "$STEPS" 2>&1) ;;
    flush2) out=$(CUDA_INJECTION64_PATH=$LIB DPTOP_TRACE_ENDPOINT=$EP DPTOP_TRACE_FLUSH_MS=2 \
        timeout 150 "$PY" "$app" "$STEPS" 2>&1) ;;
    esac
    rc=$?
    echo "$out" >>"$IT_TMP/runs.log"
    [ $rc -eq 3 ] && { echo nogpu; return; }
    echo "$out" | sed -n 's/.*median step \([0-9.]*\) us.*/\1/p'
}
gpu=$(head -1 "$IT_TMP/gpus.txt" | sed 's/ (UUID.*//')
MODES="plain cupti traced flush2"
app_step_us() { step_us "$app" "$1"; } # the loop's app
for app in torch jax; do
    if [ $app = torch ]; then PY=${DPTEST_TORCH_PY:-$(command -v python3)}; else PY=${DPTEST_JAX_PY:-$(command -v python3)}; fi
    "$PY" -c "import $app" 2>/dev/null || { echo "bench_cupti_steps: $app: not installed, left out"; continue; }
    declare -A runs=() med=()
    rc=0
    it_bench_modes app_step_us $MODES || rc=$?
    [ $rc -eq 2 ] && { echo "bench_cupti_steps: $app cannot use the GPU, left out"; continue; }
    [ $rc -eq 0 ] || exit 1
    printf '%s, %s, %d steps per run, median of %d runs\n' "$gpu" "$app" "$STEPS" "$ROUNDS"
    printf '%-8s %10s %8s   %s\n' mode "step µs" added runs
    for mode in $MODES; do
        awk -v m=$mode -v x="${med[$mode]}" -v p="${med[plain]}" -v r="${runs[$mode]}" \
            'BEGIN { printf "%-8s %10.1f %+7.1f%%   %s\n", m, x, (x / p - 1) * 100, r }'
    done
    awk -v a=$app -v p="${med[plain]}" -v c="${med[cupti]}" -v t="${med[traced]}" \
        -v f="${med[flush2]}" 'BEGIN {
        printf "BENCH cupti_step_%s_plain_us %.1f us\n", a, p
        printf "BENCH cupti_step_%s_cupti_added_pct %.1f %%\n", a, (c / p - 1) * 100
        printf "BENCH cupti_step_%s_traced_added_pct %.1f %%\n", a, (t / p - 1) * 100
        printf "BENCH cupti_step_%s_flush2ms_added_pct %.1f %%\n", a, (f / p - 1) * 100
    }'
done
