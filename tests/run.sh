#!/usr/bin/env bash
# Run every test: cmocka unit tests of the release and sanitizer builds, then
# every integration test (tests/integration/test_*.sh).  Each test runs in
# its own process group, bounded in time; whatever it leaves running is
# killed.  Exit status is non-zero when anything failed.
#
# Usage: tests/run.sh BUILD_DIR [ASAN_BUILD_DIR] [name-filter]
set -u
cd "$(dirname "$0")/.."
root=$(pwd)
build=$(cd "${1:-build}" && pwd)
asan=${2:-}
[ -n "$asan" ] && asan=$(cd "$asan" && pwd)
filter=${3:-}
logs="$build/test-logs"
mkdir -p "$logs"

pass=0 fail=0 skip=0
failed=()
touch "$logs/.run-start" # logs older than this run are not counted in the summary
sleep 1                  # (mtimes have one-second resolution on some file systems)

# run_one LABEL TIMEOUT_S CMD...: run in a new process group, kill the group after.
run_one() {
    local label=$1 limit=$2
    shift 2
    local log="$logs/${label//\//_}.log" start rc
    start=$(date +%s)
    setsid "$@" >"$log" 2>&1 </dev/null &
    local pid=$! waited=0
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$waited" -ge $((limit * 10)) ]; then
            echo "TIMEOUT after ${limit}s" >>"$log"
            kill -TERM -- -"$pid" 2>/dev/null
            sleep 2
            kill -KILL -- -"$pid" 2>/dev/null
            break
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    wait "$pid"
    rc=$?
    # Whatever the test left behind in its group goes now.
    kill -TERM -- -"$pid" 2>/dev/null && sleep 0.5 && kill -KILL -- -"$pid" 2>/dev/null
    local secs=$(($(date +%s) - start))
    case $rc in
    0)
        pass=$((pass + 1))
        printf 'PASS  %-46s %4ss  %s\n' "$label" "$secs" "$(grep -E '^\[  (PASSED|FAILED)|^PASS:|^RESULT' "$log" | tail -1)"
        ;;
    77)
        skip=$((skip + 1))
        printf 'SKIP  %-46s %4ss  %s\n' "$label" "$secs" "$(grep -E 'SKIP' "$log" | tail -1)"
        ;;
    *)
        fail=$((fail + 1))
        failed+=("$label")
        printf 'FAIL  %-46s %4ss  (exit %s, log %s)\n' "$label" "$secs" "$rc" "$log"
        tail -n 40 "$log" | sed 's/^/      | /'
        ;;
    esac
}

echo "== unit tests ($build)"
for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    name=$(basename "$t")
    [ -n "$filter" ] && [[ $name != *$filter* ]] && continue
    run_one "unit/$name" 300 env CMOCKA_MESSAGE_OUTPUT=stdout "$t"
done

if [ -n "$asan" ]; then
    echo "== unit tests under ASan+UBSan ($asan)"
    for t in "$asan"/tests/test_*; do
        [ -x "$t" ] || continue
        name=$(basename "$t")
        [ -n "$filter" ] && [[ $name != *$filter* ]] && continue
        run_one "asan/$name" 600 env CMOCKA_MESSAGE_OUTPUT=stdout \
            ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 "$t"
    done
fi

echo "== integration tests"
for t in tests/integration/test_*.sh tests/integration/test_*.py; do
    [ -f "$t" ] || continue
    name=$(basename "$t")
    [ -n "$filter" ] && [[ $name != *$filter* ]] && continue
    limit=$(sed -n 's/^# timeout: *\([0-9]*\).*/\1/p' "$t" | head -1)
    case $t in
    *.py) runner=/usr/bin/python3 ;;
    *) runner=bash ;;
    esac
    run_one "integration/$name" "${limit:-300}" env DPTEST_BUILD="$build" DPTEST_ASAN_BUILD="$asan" \
        DPTEST_ROOT="$root" "$runner" "$t"
done

echo
echo "== summary: $pass passed, $fail failed, $skip skipped"
[ "$fail" -ne 0 ] && printf '   failed: %s\n' "${failed[@]}"

# Last, cmocka's own summary over every unit suite run (release and sanitizer
# builds): the totals of their "[==========] N test(s) run." and
# "[  PASSED  ]" / "[  FAILED  ]" lines.
suites=0 run=0 passed=0 cfailed=0
for log in "$logs"/unit_test_*.log "$logs"/asan_test_*.log; do
    [ -f "$log" ] && [ "$log" -nt "$logs/.run-start" ] || continue
    suites=$((suites + 1))
    run=$((run + $(sed -n 's/^\[==========\] \([0-9]*\) test(s) run\..*/\1/p' "$log" | tail -1 | grep . || echo 0)))
    passed=$((passed + $(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\..*/\1/p' "$log" | tail -1 | grep . || echo 0)))
    cfailed=$((cfailed + $(sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:.*/\1/p' "$log" | tail -1 | grep . || echo 0)))
done
if [ $suites -gt 0 ]; then
    echo "[==========] $run test(s) run in $suites cmocka suites."
    echo "[  PASSED  ] $passed test(s)."
    [ $cfailed -gt 0 ] && echo "[  FAILED  ] $cfailed test(s)."
fi
[ "$fail" -ne 0 ] && exit 1
exit 0
