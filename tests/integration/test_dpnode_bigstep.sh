#!/usr/bin/env bash
# timeout: 150
# A clock set by 300 ms, live (a time daemon's step): a master and 3 agents
# on loopback at the default window and probe rate, one agent's simulated
# clock jumping forward 300 ms some seconds in.  Its own edge fits then have
# a stretch of the window without samples; the line used to follow the step
# (an edge of -221594 ppm at +-14.8 ms, unflagged), or, where the step fell
# at a window's boundary, the next windows' maps of the node were widened to
# +-300 ms and every node's bound polluted for a dozen seconds.  Now the step
# is reported once with its size (inside a window by the edges, or between
# two by the master), and the maps after it are right at uncertainties of
# nanoseconds again, against a truth that knows the step.
. "$(dirname "$0")/lib.sh"
it_dpnode_bus

# The stepping agent's clock: +300 ms eight seconds after it starts.
it_step_cluster 5000000,5,0,8,300000000 --trace-endpoint none --heartbeat-ms 300 \
    --status-period-ms 500

it_wait 30 grep -Eq "a clock step (on|since)" "$IT_TMP/master.log" ||
    it_fail "the master did not report the step: $(grep -i step "$IT_TMP"/*.log | tail -5)"
line=$(grep -E "a clock step (on|since)" "$IT_TMP/master.log" | head -1)
echo "$line"
# Each edge (or the node) it names is the stepping node's, seeing 300 ms to 1 %.
$CHECK step-line "$line" "$STEPPER" 300000000 3000000 || it_fail "the step line is wrong: $line"
[ "$(grep -cE "a clock step (on|since)" "$IT_TMP/master.log")" -le 2 ] ||
    it_fail "the step was reported for more than its window (and the next, where it may fall)"

# Two windows on, every map is right again and says so at nanoseconds.
sleep 5
t_after=$(date +%s.%N)
it_wait 30 $CHECK aligned "$REC" 4 "$t_after" || it_fail "the cluster did not align again"
sleep 8
out=$($CHECK errors "$REC" 4 "$t_after" 1000) || it_fail "maps after the step are off: $out"
echo "$out"
unc_max=$(sed -n 's/.*unc_max_ns=\([0-9.]*\).*/\1/p' <<<"$out")
"$IT_PY" -c "import sys; sys.exit(0 if float('$unc_max') < 1000 else 1)" ||
    it_fail "uncertainties after the step still wide: $out"
it_pass "a 300 ms clock step reported with its size on the stepping node's edges; maps after it right at $unc_max ns at most"
