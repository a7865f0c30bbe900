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

"$IT_PY" "$IT_ROOT/tests/integration/follow.py" "$H" 30 >"$IT_TMP/follow.out" 2>&1 ||
    it_fail "follow.py failed: $(cat "$IT_TMP/follow.out")"
cat "$IT_TMP/follow.out"
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
it_pass "pyzmq follower decoded hello, node_fit, names and 3 event records"
