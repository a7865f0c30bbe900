#!/usr/bin/env bash
# timeout: 90
# A device driver call that does not return (NVML while a board resets)
# must not stop the agent: the fake NVML blocks in its third reading for
# 6 s.  Meanwhile the agent's status keeps coming at its period, a traced
# application's events still reach the bus, the cards drop out of the
# status once their reading is stale (said once in the log) and come back
# when the driver answers.  An agent stopped while the call still hangs
# exits at once.
. "$(dirname "$0")/lib.sh"
NVML=$B/tests/fake_nvml/libnvidia-ml.so.1
[ -e "$NVML" ] || it_skip "$NVML not built (make tests-build)"
it_dpnode_bus status log ev
EP="ipc://$IT_TMP/trace.sock"
mkdir -p "$IT_TMP/sys"

FAKENVML_HANG_AFTER=4 FAKENVML_HANG_S=6 it_spawn master "$B/dpnode" --master --listen "$H" \
    --status-period-ms 300 --sysfs-root "$IT_TMP/sys" --nvml-library "$NVML" --trace-endpoint "$EP"
it_wait 20 grep -q "fake nvml: hanging" "$IT_TMP/master.log" || it_fail "the fake NVML never hung"
hang_at=$(date +%s.%N)
it_wait 8 grep -q "device metrics: no reading for" "$IT_TMP/master.log" ||
    it_fail "the agent did not say its device metrics stopped coming"

# The loop still takes in traced events while the driver hangs: every
# event the app captured is on the bus before the driver answers.
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
    it_wait 2 on_bus || it_fail "the app's $captured events did not all reach the bus during the hang"
    grep -q "fake nvml: answering again" "$IT_TMP/master.log" && it_fail "the hang ended before the check"
    app_ok="$captured app events on the bus"
fi
it_wait 10 grep -q "fake nvml: answering again" "$IT_TMP/master.log" || it_fail "the fake NVML never answered again"
end_at=$(date +%s.%N)
it_wait 5 grep -q "device metrics: readings come again" "$IT_TMP/master.log" ||
    it_fail "the agent did not say its device metrics came back"
it_wait 5 "$IT_PY" - "$REC" <<'PY' || it_fail "the cards did not come back in the status"
import json, sys
st = [json.loads(l)["h"] for l in open(sys.argv[1])]
st = [h for h in st if h.get("type") == "status"]
sys.exit(0 if st and len(st[-1].get("gpus", [])) == 2 else 1)
PY
"$IT_PY" - "$REC" "$hang_at" "$end_at" <<'PY' || it_fail "status during the hang"
import json, sys
rec, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
recs = [json.loads(l) for l in open(rec)]
st = [r for r in recs if r["h"].get("type") == "status"]
during = [r for r in st if t0 + 0.5 < r["t"] < t1 - 0.2]
span = t1 - t0 - 0.7
# 300 ms apart: a loop blocked in the driver would send none.
print(f"{len(during)} status messages in the {span:.1f} s of the hang")
assert len(during) >= span / 0.3 * 0.5, len(during)
# Stale figures are not shown as current: none once the reading is 3 s old.
late = [r for r in during if r["t"] > t0 + 4.0]
assert late and all(not r["h"].get("gpus") for r in late), [r["h"].get("gpus") for r in late]
before = [r for r in st if r["t"] < t0]
assert before and len(before[-1]["h"]["gpus"]) == 2, before[-1]["h"].get("gpus") if before else None
PY
# Stopped while a driver call hangs: the agent does not wait for it.
port=$(it_ports 3) || it_fail "no free ports"
FAKENVML_HANG_AFTER=2 it_spawn stuck "$B/dpnode" --master --listen "tcp://127.0.0.1:$port" \
    --status-period-ms 300 --sysfs-root "$IT_TMP/sys" --nvml-library "$NVML"
STUCK=$IT_PID
it_wait 20 grep -q "fake nvml: hanging" "$IT_TMP/stuck.log" || it_fail "the second fake NVML never hung"
kill -TERM "$STUCK"
it_wait 5 sh -c "! kill -0 $STUCK 2>/dev/null" || it_fail "the agent did not exit while a driver call hangs"
wait "$STUCK"
rc=$?
[ "$rc" -eq 0 ] || it_fail "the agent exited $rc while a driver call hangs"
grep -q "a driver call still has not returned" "$IT_TMP/stuck.log" || it_fail "the exit did not say a call hangs"
it_pass "a hung NVML call: status kept coming, stale cards left out and back, $app_ok during it, exit not held"
