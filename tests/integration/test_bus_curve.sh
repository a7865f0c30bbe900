#!/usr/bin/env bash
# timeout: 120
# CURVE on the bus: with keys configured, a recorder holding an
# admitted key records the stream, one holding another key gets nothing
# (the hub refuses its handshake and counts it, the recorder says what to
# check), and so does a publisher.  A recorder given a key directory
# (--curve-dir, as dpnode --gen-keys writes it) records like the first.
. "$(dirname "$0")/lib.sh"
for t in bus_hub bus_emit rec_check; do
    [ -x "$B/tests/tools/$t" ] || it_skip "$t not built (needs the bus and gpu modules)"
done
[ -x "$B/dptop" ] || it_skip "dptop not built"
"$IT_PY" -c 'import zmq, sys; sys.exit(0 if zmq.has("curve") else 1)' 2>/dev/null ||
    it_skip "no CURVE-capable pyzmq to make keys with"
keys() { "$IT_PY" -c 'import zmq; p, s = zmq.curve_keypair(); print(p.decode(), s.decode())'; }
read -r SP SS <<<"$(keys)"
read -r C1P C1S <<<"$(keys)"
read -r C2P C2S <<<"$(keys)"

port=$(it_ports 3) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
it_spawn hub "$B/tests/tools/bus_hub" --hub "$H" --curve-public "$SP" --curve-secret "$SS" --allow "$C1P"
HUB=$IT_PID
it_wait 20 grep -q '^READY' "$IT_TMP/hub.log" || it_fail "hub did not start"

# Keys through the environment layer of the configuration.
it_spawn good env DPTOP_CURVE_SERVER_KEY="$SP" DPTOP_CURVE_PUBLIC_KEY="$C1P" \
    DPTOP_CURVE_SECRET_KEY="$C1S" "$B/dptop" --record "$IT_TMP/good.dprec" --hub "$H"
GOOD=$IT_PID
mkdir -p "$IT_TMP/keys"
echo "$SP" >"$IT_TMP/keys/hub.public"
echo "$C1P" >"$IT_TMP/keys/client.public"
(umask 077 && echo "$C1S" >"$IT_TMP/keys/client.secret")
it_spawn dir "$B/dptop" --record "$IT_TMP/dir.dprec" --hub "$H" --curve-dir "$IT_TMP/keys"
DIR=$IT_PID
out=$("$B/dptop" --record "$IT_TMP/x.dprec" --hub "$H" --curve-dir "$IT_TMP/keys" \
    --curve-public-key "$C1P" 2>&1)
[ $? -eq 2 ] && grep -q "curve_dir" <<<"$out" || it_fail "--curve-dir with a key: $out"
it_spawn bad "$B/dptop" --record "$IT_TMP/bad.dprec" --hub "$H" --curve-server-key "$SP" \
    --curve-public-key "$C2P" --curve-secret-key "$C2S" --state-timeout-ms 1000
BAD=$IT_PID
it_spawn intruder "$B/tests/tools/bus_emit" --hub "$H" --node 9 --count 1000000 --rate 50 \
    --curve-server "$SP" --curve-public "$C2P" --curve-secret "$C2S"
INTRUDER=$IT_PID
# The emitter waits for its first subscriber only: both admitted recorders
# must be subscribed first (each records the hub's sync marker, which comes
# through its subscription, once its state fetch is done).
for f in good dir; do
    it_wait 30 bash -c "'$B/tests/tools/rec_check' '$IT_TMP/$f.dprec' 2>/dev/null | grep -q 'frames=[1-9]'" ||
        it_fail "the $f recorder never recorded the hub's sync marker"
done
"$B/tests/tools/bus_emit" --hub "$H" --node 1 --count 50 --rate 100 --wait-sub 20000 \
    --curve-server "$SP" --curve-public "$C1P" --curve-secret "$C1S" >"$IT_TMP/emit.log" 2>&1 ||
    it_fail "the admitted publisher failed: $(cat "$IT_TMP/emit.log")"
it_wait 30 bash -c "'$B/tests/tools/rec_check' '$IT_TMP/good.dprec' | grep -q ' ev=50 '" ||
    it_fail "the admitted recorder did not get the 50 batches"
it_wait 30 bash -c "'$B/tests/tools/rec_check' '$IT_TMP/dir.dprec' | grep -q ' ev=50 '" ||
    it_fail "the recorder with --curve-dir did not get the 50 batches"
kill -TERM $GOOD $BAD $DIR
wait $GOOD || it_fail "admitted recorder exit status"
wait $DIR || it_fail "--curve-dir recorder exit status"
wait $BAD || it_fail "refused recorder exit status"
"$B/tests/tools/rec_check" "$IT_TMP/good.dprec" --dump >"$IT_TMP/good.txt"
grep -q '^REC .* ev=50 ev_seq_gaps=0 ' "$IT_TMP/good.txt" || it_fail "good recording"
grep -q 'topic=dp1.ev.9 ' "$IT_TMP/good.txt" && it_fail "the refused publisher got through"
"$B/tests/tools/rec_check" "$IT_TMP/bad.dprec" >"$IT_TMP/bad.txt"
grep -q '^REC frames=0 ' "$IT_TMP/bad.txt" || it_fail "the refused recorder recorded: $(cat "$IT_TMP/bad.txt")"
grep -qE '(no state reply|no connection to the hub).*authorized_keys' "$IT_TMP/bad.log" ||
    it_fail "the refused recorder did not say it got no state and what to check"
it_stop "$INTRUDER"
kill -TERM "$HUB"
it_wait 20 grep -q '^HUB auth_allowed' "$IT_TMP/hub.log" || it_fail "no hub summary"
grep -q '^HUB auth_allowed=[1-9][0-9]* auth_denied=[1-9]' "$IT_TMP/hub.log" ||
    it_fail "refusals not counted: $(grep auth "$IT_TMP/hub.log")"
it_pass "admitted key recorded 50 batches; other keys got nothing ($(grep -o 'auth_denied=[0-9]*' "$IT_TMP/hub.log"))"
