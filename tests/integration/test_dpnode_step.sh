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

# The stepping agent's clock: +1 ms six seconds after it starts (its node id
# is whichever the master gave it).
it_step_cluster 5000000,5,0,6,1000000 --trace-endpoint none --heartbeat-ms 300 \
    --status-period-ms 500 --probe-window-s 1 --probe-cadence-us 10000

# A step inside a window is seen by the stepping node's edges ("a clock step
# on"); one at a window's boundary by the master between two windows ("a
# clock step since").  Every edge or node named is the stepping node's, with
# a size of about 1 ms.
it_wait 20 grep -Eq "a clock step (on|since)" "$IT_TMP/master.log" ||
    it_fail "the master did not report the step: $(grep -i step "$IT_TMP"/*.log | tail -5)"
line=$(grep -E "a clock step (on|since)" "$IT_TMP/master.log" | head -1)
echo "$line"
$CHECK step-line "$line" "$STEPPER" 1000000 500000 || it_fail "the step line is wrong: $line"
grep -Eq '"component": ?"master".*a clock step (on|since)' "$REC" ||
    it_fail "no log message of the step on the bus"
[ "$(grep -cE "a clock step (on|since)" "$IT_TMP/master.log")" -le 2 ] ||
    it_fail "the step was reported for more than its window (and the next, where it may fall)"

# Aligned again after it: every node's latest fits within 10 us of each other run's.
t_st=$(date +%s.%N)
sleep 3
it_wait 20 $CHECK aligned "$REC" 4 "$t_st" || it_fail "the cluster did not align again after the step"
it_pass "a 1 ms clock step found on the stepping node's edges, reported once, left out of the solve; aligned again after"
