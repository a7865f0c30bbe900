#!/usr/bin/env bash
# Clock accuracy per estimator and scenario against simulation truth
# (SPEC §9): runs `dpclock bench`, which prints the table and the BENCH lines
# (p50/p99/max offset error, drift error, uncertainty coverage and width, fit
# time, minrtt/svm ratios, the 1000-sample fit time).
#
# Usage: bench/bench_clock.sh [extra dpclock bench flags]   (DPTOP_BUILD=build dir)
set -u
build=${DPTOP_BUILD:-$(cd "$(dirname "$0")/.." && pwd)/build}
dp=$build/dpclock
if [ ! -x "$dp" ]; then
    echo "bench_clock: $dp is missing (build it first)" >&2
    exit 1
fi
exec "$dp" bench "$@"
