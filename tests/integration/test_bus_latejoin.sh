#!/usr/bin/env bash
# timeout: 120
# Late joiner: a node publishes its state once (hello, name tables, two
# windows of node fits, scope tree, snapshot pairs, sim_truth, an event
# batch) and stays quiet.  A subscriber that connects afterwards receives that
# state at once from the hub's cache — the latest fit only, every name table,
# never the event batch — while a subscriber without the state request sees
# none of it.
. "$(dirname "$0")/lib.sh"
for t in bus_hub bus_emit bus_tail; do
    [ -x "$B/tests/tools/$t" ] || it_skip "$t not built (needs the bus and gpu modules)"
done

port=$(it_ports 3) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
it_spawn hub "$B/tests/tools/bus_hub" --hub "$H"
it_wait 20 grep -q '^READY' "$IT_TMP/hub.log" || it_fail "hub did not start"
# A witness sees the emitter's last message pass the hub (so all of it did).
it_spawn witness "$B/tests/tools/bus_tail" --hub "$H" --prefix dp1.sim_truth. --prefix dp1.nodes. --print \
    --ready "$IT_TMP/ready" --duration-ms 100000
it_wait 30 test -f "$IT_TMP/ready" || it_fail "witness not ready"
it_spawn emit "$B/tests/tools/bus_emit" --hub "$H" --node 4 --scenario state --wait-sub 20000
it_wait 30 grep -q '^PUBLISHED sent=9 dropped=0' "$IT_TMP/emit.log" || it_fail "emitter did not publish its state"
it_wait 30 grep -q '^MSG dp1.sim_truth.4 ' "$IT_TMP/witness.log" || it_fail "the state did not pass the hub"
it_wait 30 grep -q '^MSG dp1.nodes.0 ' "$IT_TMP/witness.log" || it_fail "the hub published no node table"

# The emitter is now silent.  A late subscriber with the state request:
"$B/tests/tools/bus_tail" --hub "$H" --state --print --prefix dp1. --duration-ms 1500 \
    >"$IT_TMP/late.log" 2>&1 || it_fail "late subscriber failed"
# ... and one without it, for contrast.
"$B/tests/tools/bus_tail" --hub "$H" --print --prefix dp1. --duration-ms 1500 \
    >"$IT_TMP/plain.log" 2>&1 || it_fail "plain subscriber failed"
cat "$IT_TMP/late.log"

state() { grep "^MSG dp1\.$1\.$2 [0-9]* 1 " "$IT_TMP/late.log"; }
grep -q '^STATE count=[0-9]* complete=1 synced=1 evicted=0' "$IT_TMP/late.log" || it_fail "state reply incomplete"
state hello 4 | grep -q '"host":"emit-host"' || it_fail "no hello in the state"
[ "$(state names 4 | wc -l)" -eq 2 ] || it_fail "expected both name tables"
state names 4 | grep -q '\[3,"gemm_bwd"\]' || it_fail "second name table missing"
[ "$(state node_fit 4 | wc -l)" -eq 1 ] || it_fail "expected exactly one node fit"
state node_fit 4 | grep -q '"window":2,' || it_fail "the cached node fit is not the latest"
state scope 4 | grep -q '"tree":\[\[5,0\],\[6,5\]\]' || it_fail "scope tree missing"
state snap 4 | grep -q '"a":"trace","b":"probe"' || it_fail "snapshot pairs missing"
state sim_truth 4 | grep -q '"drift_ppm":-35.5' || it_fail "sim_truth missing"
state nodes 0 >/dev/null || it_fail "the hub's node table is missing"
grep -q '^MSG dp1\.ev\.' "$IT_TMP/late.log" && it_fail "an event batch came from the state"
# State first: no live message before the last state message.
awk '/^MSG/ { if ($4 == 1 && live) bad = 1; if ($4 == 0) live = 1 } END { exit bad }' \
    "$IT_TMP/late.log" || it_fail "a state message came after a live one"
grep -q '^MSG dp1\.node_fit\.' "$IT_TMP/plain.log" && it_fail "the plain subscriber saw a fit"
grep -q '^MSG dp1\.names\.' "$IT_TMP/plain.log" && it_fail "the plain subscriber saw names"
it_pass "late joiner got $(grep -c '^MSG .* 1 ' "$IT_TMP/late.log") state messages at once"
