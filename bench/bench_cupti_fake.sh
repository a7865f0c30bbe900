#!/usr/bin/env bash
# What libdptrace_cupti.so's own callbacks cost a followed CUDA call, CUPTI
# left out: the fake libcupti (tests/fake_cupti) calls the library's
# callback exactly as CUPTI does, with no GPU and nothing else behind it.
# cupti_app --bench times calls the library does not follow (cudaGetDevice:
# no callback at all) against calls it does (cudaLaunchKernel with no GPU
# work: an entry and an exit callback, an API event), on 1, 2 and 8
# threads at once, in bursts of 256 (the events kept and sent to a
# receiver, as the counts at the end say).  Median of 3 runs.  The
# difference is the library's work per call: the scope and correlation
# bookkeeping at entry, the event at exit.
#
# Usage: bench/bench_cupti_fake.sh [calls]   (DPTEST_BUILD=build dir)
set -u
. "$(dirname "$0")/../tests/integration/lib.sh"
N=${1:-100000}
LIB=$B/libdptrace_cupti.so
APP=$B/tests/fake_cupti/cupti_app
it_bench_start bench_cupti_fake "$LIB" "$APP"

printf '%-8s %14s %14s %10s\n' threads "not followed" followed added
bench=()
for t in 1 2 8; do
    n=$((N / t))
    runs=()
    for _ in 1 2 3; do
        out=$(LD_LIBRARY_PATH="$B/tests/fake_cupti" DPTOP_TRACE_ENDPOINT=$EP \
            timeout 120 "$APP" "$LIB" --bench "$n" "$t" 2>&1)
        echo "$out" >>"$IT_TMP/runs.log"
        line=$(echo "$out" | sed -n 's/.*not followed \([0-9.]*\) ns, followed \([0-9.]*\) ns.*/\1 \2/p')
        [ -n "$line" ] || { echo "bench_cupti_fake: run failed: $out" >&2; exit 1; }
        drops=$(echo "$out" | sed -n 's/.*dptrace: .*, \([0-9]*\) dropped.*/\1/p')
        [ "${drops:-0}" -eq 0 ] || echo "bench_cupti_fake: warning: $t threads: $drops events dropped (a drop costs less than a kept event)"
        runs+=("$line")
    done
    # The run with the median followed figure.
    read -r u f <<<"$(printf '%s\n' "${runs[@]}" | sort -g -k2 | sed -n 2p)"
    awk -v t=$t -v u="$u" -v f="$f" 'BEGIN { printf "%-8d %11.1f ns %11.1f ns %7.1f ns\n", t, u, f, f - u }'
    bench+=("$(awk -v t=$t -v u="$u" -v f="$f" \
        'BEGIN { printf "BENCH cupti_callback_added_ns_%dthreads %.1f ns", t, f - u }')")
done
printf '%s\n' "${bench[@]}"
grep -h "dptrace:" "$IT_TMP/runs.log" | sed 's/.*dptrace: //;s/ to ipc[^,]*//' | sort | uniq -c
