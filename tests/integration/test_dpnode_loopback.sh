#!/usr/bin/env bash
# timeout: 150
# A master and 4 agents on loopback, each with its own simulated clock
# (offsets up to +-50 ms, drifts up to +-200 ppm): every node is aligned
# within 3 windows of joining, and the master's node fits match the
# simulated truth (sim_truth on the bus) within 10 us, refined maps too.  One agent writes its
# probes as SPEC 4.5 lines, which dpclock fits offline.
. "$(dirname "$0")/lib.sh"
it_dpnode_bus

COMMON=(--trace-endpoint none --heartbeat-ms 300 --status-period-ms 500)
it_spawn master "$B/dpnode" --master --listen "$H" --probe-window-s 1 --probe-cadence-us 10000 \
    --sim-clock 3000000,40 "${COMMON[@]}"
it_wait 20 grep -q "hub tcp://" "$IT_TMP/master.log" || it_fail "the master did not start"
sims=("-50000000,200" "-17000000,-200" "24000000,-75" "50000000,120")
for i in 0 1 2 3; do
    extra=()
    [ $i -eq 0 ] && extra=(--probe-log "$IT_TMP/probes.jsonl")
    it_spawn "agent$i" "$B/dpnode" --hub "$H" --sim-clock "${sims[$i]}" "${COMMON[@]}" "${extra[@]}"
done
t0=$(date +%s.%N)
it_wait 30 $CHECK up "$REC" 5 || it_fail "5 nodes never came up"
t_up=$($CHECK when-up "$REC" 5 "$t0") || it_fail "no node table with 5 nodes"
echo "all 5 nodes registered"

it_wait 30 $CHECK aligned "$REC" 5 "$t_up" || it_fail "the nodes were not all aligned"
n=$($CHECK windows-to-align "$REC" 5 "$t_up") || it_fail "never aligned"
echo "aligned after $n window(s)"
[ "$n" -le 3 ] || it_fail "alignment took $n windows (more than 3)"

# Four more windows, then the error of every aligned node fit against the truth.
t_al=$(date +%s.%N)
sleep 4.5
out=$($CHECK errors "$REC" 5 "$t_al" 10000) || it_fail "node fits off the truth: $out"
echo "$out"

# The master solves each window again once the next one is in (refine_windows
# 1) and publishes the refined maps, in order and near the truth.
ref=$($CHECK refined "$REC" "$t_al" 10000) || it_fail "refined maps: $ref"
echo "$ref"
$CHECK status "$REC" 0 refines 3 >/dev/null || it_fail "the master's status counts no refinements"
# Refinements and the earlier windows' bounds noted again every window: none failed.
$CHECK status "$REC" 0 refine_errors 0 0 >/dev/null ||
    it_fail "the master's refinements or noted bounds failed: $($CHECK status "$REC" 0 refine_errors 0)"
# A late joiner gets each node's newest first map and its newest refinement.
it_spawn late "$IT_PY" "$IT_ROOT/tests/integration/dpnode_watch.py" "$H" "$IT_TMP/late.jsonl"
it_wait 10 $CHECK state-fits "$IT_TMP/late.jsonl" 1 >/dev/null ||
    it_fail "the late joiner's state: $($CHECK state-fits "$IT_TMP/late.jsonl" 1)"

# Every agent published its status, window statistics and edge fits.
for node in 0 1 2 3 4; do
    $CHECK status "$REC" $node probes_sent 50 >/dev/null || it_fail "node $node: no probes in its status"
done
grep -q '"type": "win"' "$REC" || it_fail "no window statistics"
grep -q '"type": "edge_fit"' "$REC" || it_fail "no edge fits"
grep -q '"type": "solve"' "$REC" || it_fail "no solve messages"
# Until an edge's margin has a level, nothing tells how slow its hosts have
# been all along: the first solves say which hosts that is, the newest none.
w=$($CHECK warming "$REC") || it_fail "warming up: $w"
echo "$w"

# The probe log is SPEC 4.5: dpclock fits it offline.
lines=$(grep -c '"type":"probe"' "$IT_TMP/probes.jsonl")
[ "$lines" -gt 100 ] || it_fail "probe log has $lines lines"
if [ -x "$B/dpclock" ]; then
    "$B/dpclock" fit "$IT_TMP/probes.jsonl" --window-s 1 >"$IT_TMP/offline.jsonl" 2>"$IT_TMP/dpclock.log" ||
        it_fail "dpclock fit refused the probe log: $(tail -3 "$IT_TMP/dpclock.log")"
    grep -q '"type":"edge_fit"' "$IT_TMP/offline.jsonl" || it_fail "dpclock found no edge fit in the probe log"
fi
it_pass "5 nodes aligned after $n window(s); $out; $ref; probe log of $lines lines"
