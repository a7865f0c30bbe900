#!/usr/bin/env bash
# timeout: 180
# libdptrace never blocks the application: with no receiver on the
# endpoint the traced application finishes at normal speed (compared with
# the same run untraced, with a generous factor) and reports its drops at
# exit.  Bad settings turn tracing off without harming the application.
. "$(dirname "$0")/lib.sh"

APP=$B/tests/fake_hip/hip_app
LIB=$B/libdptrace.so
for f in "$APP" "$LIB"; do
    [ -e "$f" ] || it_skip "$f not built (make tests-build)"
done
ARGS=(--steps 40 --kernel-us 300 --threads 2)
now_ms() { echo $(($(date +%s%N) / 1000000)); }

t=$(now_ms)
"$APP" "${ARGS[@]}" >"$IT_TMP/plain.log" 2>&1 || it_fail "hip_app failed untraced"
plain=$(($(now_ms) - t))

t=$(now_ms)
DPTOP_TRACE_ENDPOINT="ipc://$IT_TMP/nobody.sock" LD_PRELOAD=$LIB "$APP" "${ARGS[@]}" \
    >"$IT_TMP/traced.log" 2>&1 || it_fail "hip_app failed traced without a receiver"
traced=$(($(now_ms) - t))
echo "untraced ${plain} ms, traced without receiver ${traced} ms"
[ "$traced" -lt $((3 * plain + 1000)) ] || it_fail "traced run took ${traced} ms vs ${plain} ms"

line=$(grep "dptrace: " "$IT_TMP/traced.log") || it_fail "no drop report at exit"
echo "$line"
captured=$(sed -n 's/.*: \([0-9]*\) events captured.*/\1/p' <<<"$line")
dropped=$(sed -n 's/.* \([0-9]*\) dropped$/\1/p' <<<"$line")
[ -n "$captured" ] && [ -n "$dropped" ] || it_fail "cannot read the report: $line"
# 2 threads x 40 steps x 23 events + 1 device sync each.
[ "$captured" -eq $((2 * 40 * 23 + 2)) ] || it_fail "captured $captured events"
[ "$dropped" -eq "$captured" ] || it_fail "dropped $dropped of $captured with nobody listening"

# Settings: bad values turn tracing off with a message; the app runs.
DPTOP_TRACE_RING=lots LD_PRELOAD=$LIB "$APP" --steps 2 >"$IT_TMP/bad.log" 2>&1 ||
    it_fail "hip_app failed with a bad setting"
grep -q "tracing off: invalid value for trace_ring: 'lots'" "$IT_TMP/bad.log" ||
    it_fail "no message naming the bad setting"
grep -q "hip_app: ok" "$IT_TMP/bad.log" || it_fail "hip_app did not finish with a bad setting"
# A misspelt variable too, naming the one meant; dpnode's and dptop's pass.
DPTOP_TRACE_INHERIT=1 LD_PRELOAD=$LIB "$APP" --steps 2 >"$IT_TMP/typo.log" 2>&1 ||
    it_fail "hip_app failed with a misspelt setting"
grep -q "tracing off: unknown environment variable DPTOP_TRACE_INHERIT: .*DPTOP_TRACE_INHERIT_STEP" \
    "$IT_TMP/typo.log" || it_fail "misspelt setting: $(cat "$IT_TMP/typo.log")"
DPTOP_FPS=5 DPTOP_PROBE_CADENCE_US=900 LD_PRELOAD=$LIB "$APP" --steps 2 >"$IT_TMP/other.log" 2>&1 ||
    it_fail "hip_app failed with other programs' settings"
grep -q "tracing off" "$IT_TMP/other.log" && it_fail "other programs' settings turned tracing off"
DPTOP_TRACE_ENABLE=0 LD_PRELOAD=$LIB "$APP" --steps 2 >"$IT_TMP/off.log" 2>&1 ||
    it_fail "hip_app failed with tracing disabled"
grep -q "events captured" "$IT_TMP/off.log" && it_fail "tracing was not disabled"
DPTOP_TRACE_ENDPOINT="bogus://x" LD_PRELOAD=$LIB "$APP" --steps 2 >"$IT_TMP/ep.log" 2>&1 ||
    it_fail "hip_app failed with a bad endpoint"
grep -q "events will be dropped" "$IT_TMP/ep.log" || it_fail "no message about the bad endpoint"
grep -Eq "dptrace: 47 events captured, 0 sent .* 47 dropped" "$IT_TMP/ep.log" ||
    it_fail "bad endpoint: $(grep dptrace: "$IT_TMP/ep.log")"
it_pass "no receiver: ${traced} ms traced vs ${plain} ms untraced, $dropped drops reported"
