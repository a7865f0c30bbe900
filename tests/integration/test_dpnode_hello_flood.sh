#!/usr/bin/env bash
# timeout: 150
# 2000 hellos, each a new agent, on the master's registration port (a
# DEALER anyone can open), as fast as they go: the master re-plans once a
# tick at most (it re-planned for every node on every hello, and sat at
# 100 % CPU for minutes with nothing solved), the cluster is aligned again
# once the fake nodes have gone silent, and SIGTERM still stops the master
# at once.  The same path serves a whole cluster registering again after a
# master restart.
. "$(dirname "$0")/lib.sh"
it_dpnode_bus

COMMON=(--trace-endpoint none --heartbeat-ms 300 --bind-ip 127.0.0.1)
it_spawn master "$B/dpnode" --master --listen "$H" --probe-window-s 1 --probe-cadence-us 10000 \
    --sim-clock -4000000,-30 "${COMMON[@]}"
MASTER=$IT_PID
it_spawn agent1 "$B/dpnode" --hub "$H" --node-id 1 --sim-clock 9000000,80 "${COMMON[@]}"
it_wait 30 $CHECK up "$REC" 2 || it_fail "2 nodes never came up"
it_wait 30 $CHECK aligned "$REC" 2 "$(date +%s.%N)" || it_fail "not aligned before the flood"
plans0=$(grep -c "plan epoch" "$IT_TMP/master.log")

t_flood=$(date +%s.%N)
"$IT_PY" - "$H" >"$IT_TMP/flood.log" 2>&1 <<'PY' || it_fail "flood script failed: $(cat "$IT_TMP/flood.log")"
import json, sys, time, zmq
d = zmq.Context().socket(zmq.DEALER)
d.setsockopt(zmq.LINGER, 5000)
d.setsockopt(zmq.SNDHWM, 100000)
d.connect(sys.argv[1])
time.sleep(0.3)
for i in range(2000):
    h = {"type": "hello", "seq": i + 1, "host": f"flood-{i}", "pid": 1000 + i, "version": "0",
         "instance": f"flood-{i}", "probe_addr": "127.0.0.1:9", "clocks": ["probe"], "gpus": []}
    d.send_multipart([b"dp1.hello.-", json.dumps(h).encode()])
print("sent 2000")
d.close()
PY
cat "$IT_TMP/flood.log"
# The fake nodes never beat: down after 3 heartbeats, and the two real ones
# aligned again in a few windows.
it_wait 30 $CHECK aligned "$REC" 2 "$(date +%s.%N)" || it_fail "not aligned again after the flood"
t_back=$(date +%s.%N)
plans=$(($(grep -c "plan epoch" "$IT_TMP/master.log") - plans0))
joined=$(grep -c "joined: flood-" "$IT_TMP/master.log")
took=$(awk -v a="$t_back" -v b="$t_flood" 'BEGIN { printf "%.1f", a - b }')
echo "flood: $joined fake nodes joined, $plans plans, aligned again ${took} s after it began"
[ "$joined" -ge 1000 ] || it_fail "only $joined fake nodes joined: no flood to speak of"
# One plan a tick and 100 ms apart: the joins, then the downs, a few dozen
# at most (one a join before: over a thousand).
[ "$plans" -le 200 ] || it_fail "$plans plans for one flood"
t_term=$(date +%s%N)
kill -TERM "$MASTER"
it_wait 10 bash -c "! kill -0 $MASTER 2>/dev/null" || it_fail "the master did not stop on SIGTERM"
ms=$((($(date +%s%N) - t_term) / 1000000))
echo "SIGTERM to exit: $ms ms"
[ "$ms" -le 5000 ] || it_fail "the master took $ms ms to stop"
it_pass "2000 hellos: $joined joined, $plans plans, aligned again after ${took} s, stopped in $ms ms"
