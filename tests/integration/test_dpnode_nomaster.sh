#!/usr/bin/env bash
# timeout: 90
# A traced application on a host whose agent has no master yet: the agent
# cannot publish its events, and says so (status ev_drops and
# ev_unregistered count every one of them, where they went unseen); once a
# master answers, the process's hello (`proc`), names and scope tree go out
# after the welcome, so a console joining later knows the process.  Then
# the trace socket file is removed under the agent.
. "$(dirname "$0")/lib.sh"
it_dpnode_app "$B/tests/tools/bus_tail"
port=$(it_ports 4) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
EP="ipc://$IT_TMP/trace.sock"
it_spawn agent "$B/dpnode" --hub "$H" --trace-endpoint "$EP" --bind-ip 127.0.0.1 \
    --status-period-ms 300 --heartbeat-ms 300
it_wait 20 grep -q "trace endpoint $EP" "$IT_TMP/agent.log" || it_fail "the agent did not bind $EP"
DPTOP_TRACE_ENDPOINT=$EP LD_PRELOAD=$LIB "$APP" --steps 20 --kernel-us 2000 \
    >"$IT_TMP/app.log" 2>&1 || it_fail "hip_app failed under libdptrace"
line=$(grep "dptrace: .* events captured" "$IT_TMP/app.log") || it_fail "no summary from the app"
echo "app: $line"
sent=$(sed -n 's/.* \([0-9]*\) sent in .*/\1/p' <<<"$line")
apppid=$(sed -n 's/^hip_app\[\([0-9]*\)\].*/\1/p' <<<"$line")
[ "${sent:-0}" -gt 0 ] || it_fail "the app sent nothing to the agent"
it_wait 10 grep -q "process $apppid (hip_app) traces with" "$IT_TMP/agent.log" ||
    it_fail "the agent never took the process's hello"

REC=$IT_TMP/rec.jsonl
it_spawn master "$B/dpnode" --master --listen "$H" --trace-endpoint none --bind-ip 127.0.0.1 \
    --probe-port $((port + 3)) --status-period-ms 300 --heartbeat-ms 300
it_spawn watch "$IT_PY" "$IT_ROOT/tests/integration/dpnode_watch.py" "$H" "$REC" status proc names
# The agent's status counts what it could not publish; its proc comes after the welcome.
check() {
    "$IT_PY" - "$REC" "$apppid" "$sent" <<'PY'
import json, sys
pid, sent = int(sys.argv[2]), int(sys.argv[3])
st, proc, names = None, False, False
for r in map(json.loads, open(sys.argv[1])):
    h = r["h"]
    if h.get("type") == "status" and h.get("node") == 1:
        st = h
    proc |= h.get("type") == "proc" and h.get("pid") == pid
    names |= h.get("type") == "names" and h.get("pid") == pid
if st is None or not proc or not names:
    sys.exit(1)
print("agent status: ev_unregistered=%d ev_drops=%d events=%d; proc and names of %d on the bus"
      % (st["ev_unregistered"], st["ev_drops"], st["events"], pid))
sys.exit(0 if st["ev_unregistered"] == sent and st["ev_drops"] >= sent and st["events"] == 0 else 1)
PY
}
it_wait 30 check >"$IT_TMP/check.txt" || { check; it_fail "the events lost before the master are not counted, or no proc"; }
cat "$IT_TMP/check.txt"

# The socket file removed under the running agent (a cleaner of /tmp): it
# is bound again within a status period, said, and the next process's
# events get through.
rm -f "$IT_TMP/trace.sock"
it_wait 10 grep -q "socket ipc://$IT_TMP/trace.sock was gone: bound again" "$IT_TMP/agent.log" ||
    it_fail "the removed trace socket was not bound again"
DPTOP_TRACE_ENDPOINT=$EP LD_PRELOAD=$LIB "$APP" --steps 20 --kernel-us 2000 \
    >"$IT_TMP/app2.log" 2>&1 || it_fail "hip_app failed the second time"
sent2=$(sed -n 's/.* \([0-9]*\) sent in .*/\1/p' "$IT_TMP/app2.log")
[ "${sent2:-0}" -gt 0 ] || it_fail "the second app sent nothing: $(cat "$IT_TMP/app2.log")"
it_wait 20 $CHECK status "$REC" 1 events "$sent2" ||
    it_fail "the events after the socket came back did not get through"
$CHECK status "$REC" 1 ingest_rebinds 1 1 || it_fail "the rebinding not counted once"
it_pass "$sent events sent before any master: counted as dropped; the process announced after the welcome; a removed trace socket bound again and used ($sent2 events)"
