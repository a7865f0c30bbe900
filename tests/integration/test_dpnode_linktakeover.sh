#!/usr/bin/env bash
# timeout: 90
# Two agents on one host with the default trace endpoint: the second runs
# without a local link while the first serves it, and takes it over once
# the first is gone, so the host's traced processes reach the bus again
# (they went nowhere until an agent restarted).
. "$(dirname "$0")/lib.sh"
it_dpnode_app
export XDG_RUNTIME_DIR=$IT_TMP/xdg
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
unset DPTOP_TRACE_ENDPOINT
SOCK=$XDG_RUNTIME_DIR/dptop-trace.sock
port=$(it_ports 6) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
COMMON=(--bind-ip 127.0.0.1 --status-period-ms 300 --heartbeat-ms 300)
it_spawn master "$B/dpnode" --master --listen "$H" --trace-endpoint none \
    --probe-port $((port + 3)) "${COMMON[@]}"
it_spawn first "$B/dpnode" --hub "$H" --node-id 1 --probe-port $((port + 4)) "${COMMON[@]}"
FIRST=$IT_PID
it_wait 20 grep -q "trace endpoint ipc://$SOCK" "$IT_TMP/first.log" || it_fail "the first agent did not bind"
it_spawn second "$B/dpnode" --hub "$H" --node-id 2 --probe-port $((port + 5)) "${COMMON[@]}"
it_wait 20 grep -q "no local link for libdptrace: another process serves .* (taken over if that process goes)" \
    "$IT_TMP/second.log" || it_fail "the second agent did not say it waits for the endpoint"
it_stop "$FIRST"
it_wait 10 grep -q "took the trace endpoint ipc://$SOCK over" "$IT_TMP/second.log" ||
    it_fail "the second agent did not take the endpoint over"
REC=$IT_TMP/rec.jsonl
it_spawn watch "$IT_PY" "$IT_ROOT/tests/integration/dpnode_watch.py" "$H" "$REC" status
LD_PRELOAD=$LIB "$APP" --steps 20 --kernel-us 2000 >"$IT_TMP/app.log" 2>&1 ||
    it_fail "hip_app failed under libdptrace"
sent=$(sed -n 's/.* \([0-9]*\) sent in .*/\1/p' "$IT_TMP/app.log")
[ "${sent:-0}" -gt 0 ] || it_fail "the app sent nothing: $(cat "$IT_TMP/app.log")"
it_wait 20 $CHECK status "$REC" 2 events "$sent" ||
    it_fail "the app's events did not reach the bus through the second agent"
it_pass "the second agent took the trace endpoint over from the first and published $sent events"
