#!/usr/bin/env bash
# Clock accuracy per estimator and scenario against simulation truth
# (SPEC §9): runs `dpclock bench`, which prints the table and the BENCH lines
# (p50/p99/max offset error, drift error, uncertainty coverage and width, fit
# time, minrtt/svm ratios, the 1000-sample fit time); then the same at the
# agent's default probe rate (a pair every 20 ms to each neighbour, about
# 100 a direction per 2 s window: --cadence-us 4000, BENCH names
# clock_c4000us_...).
#
# Usage: bench/bench_clock.sh [extra dpclock bench flags]   (DPTEST_BUILD=build dir)
# With flags, only the one run they describe.
set -u
build=${DPTEST_BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
dp=$build/dpclock
if [ ! -x "$dp" ]; then
    echo "bench_clock: $dp is missing (build it first)" >&2
    exit 1
fi
[ $# -gt 0 ] && exec "$dp" bench "$@"
rc=0
"$dp" bench || rc=1
echo
echo "== the same at the agent's default probe rate (a pair every 20 ms to each neighbour)"
"$dp" bench --cadence-us 4000 || rc=1
exit $rc
