#!/usr/bin/env bash
# Run every benchmark: the programs bench/bench_*.c (built into BUILD/bench)
# and the scripts bench/bench_*.sh.  Each prints a table and BENCH lines.
set -u
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
filter=${2:-}
rc=0
for b in "$build"/bench/bench_* bench/bench_*.sh; do
    [ -e "$b" ] || continue
    name=$(basename "$b")
    [ -n "$filter" ] && [[ $name != *$filter* ]] && continue
    echo "== $name"
    case $b in
    *.sh) DPTEST_BUILD="$build" bash "$b" || rc=1 ;;
    *) "$b" || rc=1 ;;
    esac
    echo
done
exit $rc
