#!/usr/bin/env bash
# Run every libFuzzer target for a while.  Corpora persist in BUILD/fuzz/corpus;
# a crash leaves its input there and fails the run.
# Seeds (valid inputs to start from) are read from tests/fuzz/seeds/<target>/.
# Usage: tests/fuzz/run.sh BUILD_DIR [SECONDS]
set -u
build=${1:-build/fuzz}
secs=${2:-20}
rc=0
for f in "$build"/fuzz/fuzz_*; do
    [ -x "$f" ] || continue
    name=$(basename "$f")
    corpus="$build/fuzz/corpus/$name"
    mkdir -p "$corpus"
    printf '%-22s ' "$name"
    seeds=()
    [ -d "tests/fuzz/seeds/$name" ] && seeds=("tests/fuzz/seeds/$name")
    if "$f" -max_total_time="$secs" -max_len=8192 -timeout=10 -artifact_prefix="$corpus/" \
        "$corpus" "${seeds[@]}" >"$build/fuzz/$name.log" 2>&1; then
        grep -Eo 'Done [0-9]+ runs' "$build/fuzz/$name.log" | tail -1 | sed 's/$/, no crash/'
    else
        echo "CRASH (see $build/fuzz/$name.log)"
        tail -n 30 "$build/fuzz/$name.log" | sed 's/^/   | /'
        rc=1
    fi
done
exit $rc
