#!/usr/bin/env bash
# timeout: 120
# Every libFuzzer target (tests/fuzz/fuzz_*.c), linked with a main of its
# own (tests/fuzz/replay.c), replays its seeds, 2000 mutations of each and
# 5000 random inputs (a target that fits a whole log per input, 150 and
# 400: a few ms each), in the normal build and in the ASan+UBSan one: the
# targets compile without clang and no decoder crashes on what they give.
. "$(dirname "$0")/lib.sh"
builds=("$B")
[ -n "${DPTEST_ASAN_BUILD:-}" ] && [ -d "$DPTEST_ASAN_BUILD/tests/fuzz/replay" ] &&
    builds+=("$DPTEST_ASAN_BUILD")
total=0 targets=0
for b in "${builds[@]}"; do
    n=0
    for src in "$IT_ROOT"/tests/fuzz/fuzz_*.c; do
        name=$(basename "$src" .c)
        f=$b/tests/fuzz/replay/$name
        [ -x "$f" ] || it_fail "$name was not built in $b"
        seeds=()
        [ -d "$IT_ROOT/tests/fuzz/seeds/$name" ] && seeds=("$IT_ROOT/tests/fuzz/seeds/$name")
        counts=(--mutate 2000 --random 5000)
        [ "$name" = fuzz_clock_logfit ] && counts=(--mutate 150 --random 400)
        # Each input is a file written, read twice and loaded into a model
        # (about 2 ms under ASan): fewer, for a replay that stays in seconds.
        [ "$name" = fuzz_tui_import ] && counts=(--mutate 300 --random 1000)
        run() {
            ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
                "$f" "$@" "${counts[@]}" "${seeds[@]}" 2>&1
        }
        # The replay is deterministic: run again, keeping each input, to leave the crash's.
        out=$(run) || {
            run --keep "$b/$name.crash" >/dev/null
            it_fail "$name ($b), the input in $b/$name.crash: $(tail -30 <<<"$out")"
        }
        runs=$(sed -n 's/.*: \([0-9]*\) inputs, no crash$/\1/p' <<<"$out")
        [ -n "$runs" ] || it_fail "$name: $out"
        total=$((total + runs))
        n=$((n + 1))
    done
    echo "$b: $n targets"
    targets=$((targets + n))
done
[ "$targets" -ge 11 ] || it_fail "only $targets fuzz targets ran"
it_pass "$targets fuzz target runs (${#builds[@]} builds), $total inputs, no crash"
