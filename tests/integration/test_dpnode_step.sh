#!/usr/bin/env bash
# timeout: 120
# A clock that steps, live: a master and 3 agents on loopback, one of whose
# simulated clocks jumps by 1 ms some seconds in.  The agents' fits find the
# step on that node's edges; the master leaves those edges out of the
# window's solve, says so once for the window (in its log and as a `log`
# message on the bus), and the cluster is aligned again in the windows
# after.
. "$(dirname "$0")/lib.sh"
it_dpnode_bus

COMMON=(--trace-endpoint none --heartbeat-ms 300 --status-period-ms 500 --probe-window-s 1
    --probe-cadence-us 10000)
it_spawn master "$B/dpnode" --master --listen "$H" --sim-clock 0,0 "${COMMON[@]}"
it_wait 20 grep -q "hub tcp://" "$IT_TMP/master.log" || it_fail "the master did not start"
it_spawn agent1 "$B/dpnode" --hub "$H" --sim-clock 2000000,20 "${COMMON[@]}"
it_spawn agent2 "$B/dpnode" --hub "$H" --sim-clock -3000000,-10 "${COMMON[@]}"
# The stepping agent's clock: +1 ms six seconds after it starts (its node id
# is whichever the master gave it).
it_spawn agent3 "$B/dpnode" --hub "$H" --sim-clock 5000000,5,0,6,1000000 "${COMMON[@]}"
t0=$(date +%s.%N)
it_wait 30 $CHECK up "$REC" 4 || it_fail "4 nodes never came up"
t_up=$($CHECK when-up "$REC" 4 "$t0") || it_fail "no node table with 4 nodes"
it_wait 30 $CHECK aligned "$REC" 4 "$t_up" || it_fail "the nodes were not all aligned"
STEPPER=$(sed -n 's/.*welcomed as node \([0-9]*\).*/\1/p' "$IT_TMP/agent3.log" | head -1)
[ -n "$STEPPER" ] || it_fail "the stepping agent has no node id"

it_wait 20 grep -q "a clock step on" "$IT_TMP/master.log" ||
    it_fail "the master did not report the step: $(grep -i step "$IT_TMP"/*.log | tail -5)"
line=$(grep "a clock step on" "$IT_TMP/master.log" | head -1)
echo "$line"
# Every edge it names is one of the stepping node's, each seeing the jump as
# about ±1 ms (a step's size comes from the blocks either side of it).
"$IT_PY" - "$line" "$STEPPER" <<'PY' || it_fail "the step line is wrong: $line"
import re, sys
edges = re.findall(r"(\d+)→(\d+) ([+-]\d+) ns", sys.argv[1])
assert edges, sys.argv[1]
for a, b, ns in edges:
    assert sys.argv[2] in (a, b), (a, b)
    assert 500000 < abs(int(ns)) < 1500000, ns
print("%d edge(s) of node %s saw the step" % (len(edges), sys.argv[2]))
PY
grep -Eq '"component": ?"master".*a clock step on' "$REC" || it_fail "no log message of the step on the bus"
[ "$(grep -c "a clock step on" "$IT_TMP/master.log")" -le 2 ] ||
    it_fail "the step was reported for more than its window (and the next, where it may fall)"

# Aligned again after it: every node's latest fits within 10 us of each other run's.
t_st=$(date +%s.%N)
sleep 3
it_wait 20 $CHECK aligned "$REC" 4 "$t_st" || it_fail "the cluster did not align again after the step"
it_pass "a 1 ms clock step found on the stepping node's edges, reported once, left out of the solve; aligned again after"
