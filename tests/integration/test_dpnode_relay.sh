#!/usr/bin/env bash
# timeout: 120
# Relays chain the hub into a tree (SPEC 5): relay 1 under the master, relay
# 2 under relay 1.  Two agents publish through relay 2 and a watcher
# subscribes there, while registration and the late-joiner state go to the
# master.  The node table and node fits (from the master, down both relays),
# the agents' statuses and event batches (up both relays and down again)
# arrive with no seq gaps; each relay's exit line counts what it moved, and
# lost nothing.
. "$(dirname "$0")/lib.sh"
[ -x "$B/dpnode" ] || it_skip "dpnode not built"
"$IT_PY" -c 'import zmq' 2>/dev/null || it_skip "python3-zmq is not installed"
CHECK="$IT_PY $IT_ROOT/tests/integration/dpnode_check.py"
REC=$IT_TMP/rec.jsonl
port=$(it_ports 9) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
R1=tcp://127.0.0.1:$((port + 3))
R2=tcp://127.0.0.1:$((port + 6))

out=$("$B/dpnode" --relay --master --print-config 2>&1)
[ $? -eq 2 ] && echo "$out" | grep -q "relay" || it_fail "--relay with --master: $out"

it_spawn relay1 "$B/dpnode" --relay --hub "$H" --listen "$R1" --heartbeat-ms 300
RELAY1=$IT_PID
it_spawn relay2 "$B/dpnode" --relay --hub "$R1" --listen "$R2" --relay-master "$H" --heartbeat-ms 300
RELAY2=$IT_PID
it_wait 10 grep -q "I relay: publishers" "$IT_TMP/relay2.log" || it_fail "relay 2 did not start"
DPNODE_WATCH_SUB=tcp://127.0.0.1:$((port + 8)) it_spawn watch "$IT_PY" \
    "$IT_ROOT/tests/integration/dpnode_watch.py" "$H" "$REC" nodes node_fit status ev hello relays
COMMON=(--trace-endpoint none --heartbeat-ms 300 --probe-window-s 1 --probe-cadence-us 10000)
it_spawn master "$B/dpnode" --master --listen "$H" --sim-clock 7000000,-60 "${COMMON[@]}"
for n in 1 2; do
    it_spawn agent$n "$B/dpnode" --hub "$H" --hub-pub "tcp://127.0.0.1:$((port + 7))" \
        --node-id $n --sim-clock $((n * -3000000)),$((n * 40)) --sim-workload "${COMMON[@]}"
done
it_wait 30 $CHECK up "$REC" 3 || it_fail "3 nodes never came up (seen through the relays)"
it_wait 30 $CHECK aligned "$REC" 3 "$(date +%s.%N)" || it_fail "no aligned node fits"
sleep 2
for n in 1 2; do
    $CHECK status "$REC" $n events_per_s 100 >/dev/null || it_fail "node $n: no events in its status"
done
# The master's relay table (both relays report to it, relay 2 through
# --relay-master): both up, with what they moved; relay 2 stopped shows
# as down, and the master says so.
relays() {
    "$IT_PY" - "$REC" "$@" <<'PY'
import json, sys
want = dict(a.split("=") for a in sys.argv[2:])
last = None
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["topic"].startswith("dp1.relays."):
        last = {x["name"]: x for x in r["h"]["relays"]}
if last is None:
    sys.exit(1)
for name, state in want.items():
    x = last.get(name)
    if x is None or x["state"] != state or (state == "up" and x["up_msgs"] < 100):
        sys.exit(1)
print(" ".join("%s %s up_msgs=%d lost=%d" % (n, x["state"], x["up_msgs"], x["up_dropped"])
               for n, x in sorted(last.items())))
PY
}
it_wait 20 relays "$R1=up" "$R2=up" >"$IT_TMP/relays.txt" ||
    it_fail "the relay table never showed both relays up: $(grep -c relays "$REC") tables"
cat "$IT_TMP/relays.txt"
it_stop "$RELAY2"
it_wait 20 relays "$R1=up" "$R2=down" >/dev/null || it_fail "relay 2 stopped, never shown down"
grep -q "relay $R2 silent for" "$IT_TMP/master.log" || it_fail "the master did not say relay 2 is silent"
it_stop "$RELAY1"
sleep 0.5
report=$("$IT_PY" - "$REC" <<'PY'
import json, sys
seqs, ev = {}, {1: 0, 2: 0}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["state"]:
        continue
    seqs.setdefault(r["topic"], []).append(r["h"]["seq"])
    if r["topic"].startswith("dp1.ev."):
        ev[int(r["topic"].split(".")[2])] += 1
gaps = sum(s[-1] - s[0] + 1 - len(s) for s in seqs.values())
print(f"topics={len(seqs)} messages={sum(len(s) for s in seqs.values())} gaps={gaps} "
      f"ev1={ev[1]} ev2={ev[2]}")
sys.exit(0 if gaps == 0 and ev[1] > 0 and ev[2] > 0 else 1)
PY
) || it_fail "through the relays: $report"
for r in relay1 relay2; do
    line=$(grep "at exit:" "$IT_TMP/$r.log") || it_fail "$r: no exit line"
    up=$(sed -n 's/.*at exit: \([0-9]*\) messages up.*/\1/p' <<<"$line")
    [ "${up:-0}" -gt 100 ] || it_fail "$r moved too little up: $line"
    grep -q " 0 lost there" <<<"$line" || it_fail "$r lost messages: $line"
    echo "$r: $line"
done
it_pass "$report; master, 2 relays, 2 agents; relay table: $(cat "$IT_TMP/relays.txt")"
