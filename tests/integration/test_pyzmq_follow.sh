#!/usr/bin/env bash
# timeout: 120
# A pyzmq script written only from docs/PROTOCOL.md follows the bus: it
# decodes a hello, a node fit, a name table and an event batch (its binary
# records included) that a registered test node publishes, and every decoded
# value is the one the node sent.
. "$(dirname "$0")/lib.sh"
for t in bus_hub bus_emit; do
    [ -x "$B/tests/tools/$t" ] || it_skip "$t not built (needs the bus and gpu modules)"
done
"$IT_PY" -c 'import zmq' 2>/dev/null || it_skip "python3-zmq is not installed"

port=$(it_ports 3) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
it_spawn hub "$B/tests/tools/bus_hub" --hub "$H"
it_wait 20 grep -q '^READY' "$IT_TMP/hub.log" || it_fail "hub did not start"
it_spawn emit "$B/tests/tools/bus_emit" --hub "$H" --scenario follow --count 0
it_wait 30 grep -q '^WELCOME node=' "$IT_TMP/emit.log" || it_fail "the node was not welcomed"
node=$(sed -n 's/^WELCOME node=\([0-9]*\).*/\1/p' "$IT_TMP/emit.log")

# Meanwhile a stranger publishes junk on the bus: one-frame messages, a
# header that is not JSON, an event batch without its payload.  The
# follower skips them (counted on stderr) instead of crashing.
# junk.py ADDR connect|bind: publish junk there for 20 s.
cat >"$IT_TMP/junk.py" <<'PY'
import sys, time, zmq
pub = zmq.Context().socket(zmq.PUB)
getattr(pub, sys.argv[2])(sys.argv[1])
end = time.time() + 20
while time.time() < end:
    pub.send(b"dp1.ev.5")
    pub.send_multipart([b"dp1.hello.5", b"{not json"])
    pub.send_multipart([b"dp1.ev.5", b'{"type": "ev", "seq": 3, "count": 1}'])
    pub.send_multipart([b"dp1.names", b"[]"])
    time.sleep(0.02)
PY
it_spawn junk "$IT_PY" "$IT_TMP/junk.py" "tcp://127.0.0.1:$((port + 1))" connect
"$IT_PY" "$IT_ROOT/tests/integration/follow.py" "$H" 30 >"$IT_TMP/follow.out" 2>"$IT_TMP/follow.err" ||
    it_fail "follow.py failed: $(cat "$IT_TMP/follow.out" "$IT_TMP/follow.err")"
cat "$IT_TMP/follow.out"
skipped=$(grep -c "skipped a malformed message" "$IT_TMP/follow.err")
echo "follow.py skipped $skipped malformed messages from the hub:"; sort "$IT_TMP/follow.err" | uniq -c | head -5
# A publisher that does not validate (a hub of another release, a relay
# someone wrote): junk straight to the follower, which counts it and goes
# on (it crashed on a one-frame message).
jport=$(it_ports 3) || it_fail "no free ports"
it_spawn fakehub "$IT_PY" "$IT_TMP/junk.py" "tcp://127.0.0.1:$((jport + 2))" bind
"$IT_PY" "$IT_ROOT/tests/integration/follow.py" "tcp://127.0.0.1:$jport" 3 >"$IT_TMP/junk.out" 2>"$IT_TMP/junk.err"
rc=$?
grep -q Traceback "$IT_TMP/junk.err" && it_fail "follow.py crashed on junk: $(tail -5 "$IT_TMP/junk.err")"
[ $rc -eq 1 ] || it_fail "follow.py on junk alone: exit $rc, not 1 (nothing to follow)"
junk=$(grep -c "skipped a malformed message" "$IT_TMP/junk.err")
[ "$junk" -ge 4 ] || it_fail "follow.py skipped only $junk junk messages: $(head -5 "$IT_TMP/junk.err")"
sort "$IT_TMP/follow.out" >"$IT_TMP/got"
sort >"$IT_TMP/want" <<WANT
HELLO node=$node host=emit-host probe=127.0.0.1:40000 gpus=SimGPU
NODE_FIT node=$node window=3 offset_ns=1234.5 drift_ppb=-20.25 aligned=True
NAMES 1=gemm_fwd 2=allreduce
EV node=$node pid=4242 count=3 dropped=7
REC kind=1 flags=1 dev=1 pid=4242 tid=4243 stream=2 name=1 corr=10 scope=5 start=1000000 end=1002500 grid=120,2,1 block=256,1,1
REC kind=2 flags=2 dev=0 pid=4242 tid=4243 stream=2 name=2 corr=11 scope=5 start=1003000 end=1004000 bytes=1048576 aux=2
REC kind=7 flags=0 dev=0 pid=4242 tid=4243 stream=0 name=0 corr=0 scope=0 start=900000 end=1100000 bytes=0 aux=42
WANT
diff -u "$IT_TMP/want" "$IT_TMP/got" || it_fail "decoded values differ from what the node sent"
it_pass "pyzmq follower decoded hello, node_fit, names and 3 event records ($skipped junk messages skipped); $junk junk messages from a fake hub skipped"
