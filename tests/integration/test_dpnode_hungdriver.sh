#!/usr/bin/env bash
# timeout: 120
# A device driver call that does not return (NVML while a board resets)
# must not stop the agent: the fake NVML blocks while a file exists.
# Meanwhile the agent's status keeps coming at its period, a traced
# application's events still reach the bus, the cards drop out of the
# status once their reading is stale (said once in the log) while the
# hello keeps them, and they come back when the driver answers.  An agent
# whose driver hangs from its first reading starts without cards, and one
# stopped while the call hangs exits at once.
. "$(dirname "$0")/lib.sh"
NVML=$B/tests/fake_nvml/libnvidia-ml.so.1
[ -e "$NVML" ] || it_skip "$NVML not built (make tests-build)"
it_dpnode_bus status log ev hello
EP="ipc://$IT_TMP/trace.sock"
HANG=$IT_TMP/hang
mkdir -p "$IT_TMP/sys"

# The last status and hello on the bus: how many cards each lists.
cards() {
    "$IT_PY" - "$REC" "$1" <<'PY'
import json, os, sys
recs = open(sys.argv[1]) if os.path.exists(sys.argv[1]) else []
hs = [h for h in (json.loads(l)["h"] for l in recs) if h.get("type") == sys.argv[2]]
print(len(hs[-1].get("gpus", [])) if hs else -1)
PY
}
two_cards() { [ "$(cards status)" = 2 ]; }
no_cards() { [ "$(cards status)" = 0 ]; }

FAKENVML_HANG_FILE=$HANG it_spawn master "$B/dpnode" --master --listen "$H" \
    --status-period-ms 300 --sysfs-root "$IT_TMP/sys" --nvml-library "$NVML" --trace-endpoint "$EP"
it_wait 20 two_cards || it_fail "no status with the fake NVML's two boards"
touch "$HANG"
it_wait 10 grep -q "fake nvml: hanging" "$IT_TMP/master.log" || it_fail "the fake NVML never hung"

# The loop still takes in traced events while the driver hangs: every
# event the app captured reaches the bus.
APP=$B/tests/fake_hip/hip_app
app_ok="no traced app (hip_app not built)"
if [ -x "$APP" ] && [ -e "$B/libdptrace.so" ]; then
    DPTOP_TRACE_ENDPOINT=$EP LD_PRELOAD=$B/libdptrace.so "$APP" --steps 3 --kernel-us 1000 \
        >"$IT_TMP/app.log" 2>&1 || it_fail "hip_app failed under libdptrace"
    line=$(grep "dptrace: .* events captured" "$IT_TMP/app.log")
    captured=$(echo "$line" | sed -n 's/.*dptrace: \([0-9]*\) events captured.*/\1/p')
    apppid=$(echo "$line" | sed -n 's/^hip_app\[\([0-9]*\)\].*/\1/p')
    [ -n "$captured" ] && [ -n "$apppid" ] || it_fail "cannot read the app's summary line"
    on_bus() {
        "$IT_PY" -c 'import json, sys
n = sum(r["h"]["count"] for r in map(json.loads, open(sys.argv[1]))
        if r["h"].get("type") == "ev" and r["h"].get("pid") == int(sys.argv[2]))
sys.exit(0 if n == int(sys.argv[3]) else 1)' "$REC" "$apppid" "$captured"
    }
    it_wait 10 on_bus || it_fail "the app's $captured events did not all reach the bus during the hang"
    app_ok="$captured app events on the bus"
fi
it_wait 15 grep -q "device metrics: no reading for" "$IT_TMP/master.log" ||
    it_fail "the agent did not say its device metrics stopped coming"
it_wait 5 no_cards || it_fail "stale cards still in the status"
stale_at=$(date +%s.%N)
# The hello goes again every 10 s: one sent while the reading is stale
# keeps the cards of the last fresh one.
hello_since() {
    "$IT_PY" - "$REC" "$stale_at" <<'PY'
import json, sys
hs = [r for r in map(json.loads, open(sys.argv[1]))
      if r["h"].get("type") == "hello" and r["t"] > float(sys.argv[2])]
sys.exit(0 if hs else 1)
PY
}
it_wait 15 hello_since || it_fail "no hello while the reading was stale"
rm -f "$HANG"
it_wait 10 grep -q "fake nvml: answering again" "$IT_TMP/master.log" || it_fail "the fake NVML never answered again"
it_wait 10 grep -q "device metrics: readings come again" "$IT_TMP/master.log" ||
    it_fail "the agent did not say its device metrics came back"
it_wait 10 two_cards || it_fail "the cards did not come back in the status"
n=$(grep -c "device metrics: no reading for" "$IT_TMP/master.log")
[ "$n" -eq 1 ] || it_fail "the stale reading was said $n times"
t0=$(sed -n 's/^fake nvml: hanging at \([0-9.]*\)$/\1/p' "$IT_TMP/master.log" | head -1)
t1=$(sed -n 's/^fake nvml: answering again at \([0-9.]*\)$/\1/p' "$IT_TMP/master.log" | head -1)
[ -n "$t0" ] && [ -n "$t1" ] || it_fail "the fake NVML's times are missing"
"$IT_PY" - "$REC" "$t0" "$t1" <<'PY' || it_fail "status during the hang"
import json, sys
rec, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
recs = [json.loads(l) for l in open(rec)]
st = [r for r in recs if r["h"].get("type") == "status"]
# Sent at least 0.3 s after the hang began and received before it ended.
during = [r for r in st if t0 + 0.3 < r["t"] < t1]
span = t1 - t0 - 0.3
# 300 ms apart: a loop blocked in the driver would send none.
print(f"{len(during)} status messages in the {span:.1f} s of the hang")
assert len(during) >= span / 0.3 * 0.5, len(during)
# Stale figures are not shown as current: none once the reading is 3 s old
# (and 0.6 s for the loop, the clocks and the recorder).
late = [r for r in during if r["t"] > t0 + 3.6]
assert late and all(not r["h"].get("gpus") for r in late), [r["h"].get("gpus") for r in late]
# The hello keeps the cards of the last fresh reading.
hellos = [r for r in recs if r["h"].get("type") == "hello"]
assert hellos and all(len(r["h"]["gpus"]) == 2 for r in hellos), [r["h"]["gpus"] for r in hellos]
PY

# A driver that hangs from the first reading: the agent starts without
# cards after its 2 s wait, and stopped while the call hangs it exits at once.
touch "$HANG.2"
port=$(it_ports 3) || it_fail "no free ports"
FAKENVML_HANG_FILE=$HANG.2 it_spawn stuck "$B/dpnode" --master --listen "tcp://127.0.0.1:$port" \
    --status-period-ms 300 --sysfs-root "$IT_TMP/sys" --nvml-library "$NVML"
STUCK=$IT_PID
it_wait 20 grep -q "going on without them" "$IT_TMP/stuck.log" ||
    it_fail "the agent did not start past a driver that hangs from the first reading"
it_wait 20 grep -q "master is node 0" "$IT_TMP/stuck.log" || it_fail "the stuck agent never came up"
kill -TERM "$STUCK"
it_wait 5 sh -c "! kill -0 $STUCK 2>/dev/null" || it_fail "the agent did not exit while a driver call hangs"
wait "$STUCK"
rc=$?
[ "$rc" -eq 0 ] || it_fail "the agent exited $rc while a driver call hangs"
grep -q "a driver call still has not returned" "$IT_TMP/stuck.log" || it_fail "the exit did not say a call hangs"
rm -f "$HANG.2"
it_pass "a hung NVML call: status kept coming, stale cards left out and back, hello kept them, $app_ok during it; a first reading that hangs, an exit not held"
