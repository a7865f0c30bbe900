#!/usr/bin/env bash
# `make test` on a clean clone of HEAD while a busy loop runs on every
# core, RUNS times in a row (default 5): the proof that the suite does not
# depend on an idle machine.  Prints one line a run (result, seconds) and
# keeps each run's output in its clone's make-test.log; exits 1 at the
# first failing run, naming its log.
#
# Usage: scripts/load_test.sh [RUNS]
set -u
cd "$(dirname "$0")/.."
runs=${1:-5}
repo=$(pwd)
cores=$(nproc 2>/dev/null || echo 2)
for run in $(seq 1 "$runs"); do
    dir=$(mktemp -d /tmp/dptop-load.XXXXXX)
    git clone -q "$repo" "$dir/dptop" || exit 1
    hogs=()
    for _ in $(seq 1 "$cores"); do
        (while :; do :; done) &
        hogs+=($!)
    done
    start=$(date +%s)
    (cd "$dir/dptop" && make test >make-test.log 2>&1)
    rc=$?
    kill "${hogs[@]}" 2>/dev/null
    wait "${hogs[@]}" 2>/dev/null
    secs=$(($(date +%s) - start))
    if [ $rc -ne 0 ]; then
        echo "run $run: FAILED after ${secs}s ($(git -C "$dir/dptop" log --oneline -1)); log: $dir/dptop/make-test.log"
        grep -E '^FAIL' "$dir/dptop/make-test.log" | sed 's/^/  /'
        exit 1
    fi
    echo "run $run: green in ${secs}s ($(git -C "$dir/dptop" log --oneline -1 | cut -c1-60))"
    rm -rf "$dir"
done
echo "$runs runs of make test under load on $cores busy cores: all green"
