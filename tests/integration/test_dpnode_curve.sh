#!/usr/bin/env bash
# timeout: 120
# A secured cluster (SPEC 10): dpnode --gen-keys writes the key pairs, the
# master and an agent with --curve-dir register, probe and align over CURVE;
# an agent with foreign client keys and one without keys get nothing in, and
# the master counts the refusals.  The keyed agent and the foreign one
# publish through a relay (dpnode --relay --curve-dir), which is the
# master's client and serves the hub's keys: the keyed agent's fits pass it,
# the foreign publisher is refused there.
. "$(dirname "$0")/lib.sh"
[ -x "$B/dpnode" ] || it_skip "dpnode not built"
"$IT_PY" -c 'import zmq, sys; sys.exit(0 if zmq.has("curve") else 1)' 2>/dev/null ||
    it_skip "no CURVE support in libzmq/pyzmq"
CHECK="$IT_PY $IT_ROOT/tests/integration/dpnode_check.py"
REC=$IT_TMP/rec.jsonl
K=$IT_TMP/keys
"$B/dpnode" --gen-keys "$K" >/dev/null || it_fail "--gen-keys failed"
for f in hub.public hub.secret client.public client.secret; do
    [ "$(tr -d '\n' <"$K/$f" | wc -c)" -eq 40 ] || it_fail "$f is not a 40-character key"
done
[ "$(stat -c %a "$K/hub.secret")" = 600 ] || it_fail "hub.secret is not private"
# Foreign keys: the right server key, another client pair.
"$B/dpnode" --gen-keys "$IT_TMP/rogue" >/dev/null || it_fail "--gen-keys failed"
cp "$K/hub.public" "$IT_TMP/rogue/hub.public"

port=$(it_ports 6) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
RELAY_PUB=tcp://127.0.0.1:$((port + 4))
COMMON=(--trace-endpoint none --heartbeat-ms 300 --status-period-ms 300)
DPNODE_WATCH_CURVE=$K it_spawn watch "$IT_PY" "$IT_ROOT/tests/integration/dpnode_watch.py" "$H" "$REC"
it_spawn master "$B/dpnode" --master --listen "$H" --curve-dir "$K" --probe-window-s 1 \
    --probe-cadence-us 10000 --sim-clock 1000000,10 "${COMMON[@]}"
it_spawn relay "$B/dpnode" --relay --hub "$H" --listen "tcp://127.0.0.1:$((port + 3))" \
    --curve-dir "$K"
RELAY=$IT_PID
it_spawn good "$B/dpnode" --hub "$H" --hub-pub "$RELAY_PUB" --curve-dir "$K" \
    --sim-clock -8000000,60 "${COMMON[@]}"
it_spawn rogue "$B/dpnode" --hub "$H" --hub-pub "$RELAY_PUB" --curve-dir "$IT_TMP/rogue" \
    "${COMMON[@]}"
it_spawn plain "$B/dpnode" --hub "$H" "${COMMON[@]}"
it_wait 30 grep -q "welcomed as node" "$IT_TMP/good.log" || it_fail "the keyed agent was not welcomed"
it_wait 30 $CHECK aligned "$REC" 2 "$(date +%s.%N)" || it_fail "the secured pair did not align"
sleep 2
grep -q "welcomed" "$IT_TMP/rogue.log" && it_fail "an agent with foreign keys got in"
grep -q "welcomed" "$IT_TMP/plain.log" && it_fail "an agent without keys got in"
$CHECK up "$REC" 2 || it_fail "the node table should hold exactly 2 nodes"
it_wait 10 $CHECK status "$REC" 0 hub_auth_denied 1 >/dev/null || it_fail "refusals not counted"
it_stop "$RELAY"
line=$(grep "at exit:" "$IT_TMP/relay.log") || it_fail "the relay has no exit line"
echo "relay: $line"
up=$(sed -n 's/.*at exit: \([0-9]*\) messages up.*/\1/p' <<<"$line")
[ "${up:-0}" -gt 10 ] || it_fail "the keyed agent's messages did not pass the relay: $line"
grep -Eq "CURVE [1-9][0-9]* admitted [1-9][0-9]* refused" <<<"$line" ||
    it_fail "the relay should admit the keyed agent and refuse the foreign one: $line"
it_pass "CURVE: keyed agent aligned, foreign and keyless agents refused ($($CHECK status "$REC" 0 hub_auth_denied 1))"
