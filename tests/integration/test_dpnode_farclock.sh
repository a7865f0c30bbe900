#!/usr/bin/env bash
# timeout: 120
# A node whose clock is 20 s ahead (10 windows of 1 s) sends edge fits for
# windows far ahead of the master's solve.  They are refused and counted
# (edge_fits_ahead, with an alert), and the rest of the cluster stays solved
# and aligned: far-ahead windows must not take the slots of the windows
# about to be solved.
. "$(dirname "$0")/lib.sh"
it_dpnode_bus

COMMON=(--trace-endpoint none --heartbeat-ms 300 --status-period-ms 500)
it_spawn master "$B/dpnode" --master --listen "$H" --probe-window-s 1 --probe-cadence-us 10000 \
    --sim-clock 3000000,40 "${COMMON[@]}"
it_wait 20 grep -q "hub tcp://" "$IT_TMP/master.log" || it_fail "the master did not start"
it_spawn a1 "$B/dpnode" --hub "$H" --node-id 1 --sim-clock -5000000,20 "${COMMON[@]}"
it_spawn a2 "$B/dpnode" --hub "$H" --node-id 2 --sim-clock 7000000,-30 "${COMMON[@]}"
it_wait 30 $CHECK aligned "$REC" 3 "$(date +%s.%N)" || it_fail "3 nodes never aligned"

t_bad=$(date +%s.%N)
it_spawn a3 "$B/dpnode" --hub "$H" --node-id 3 --sim-clock 20000000000,10 "${COMMON[@]}"
it_wait 20 $CHECK up "$REC" 4 || it_fail "node 3 never came up"
# More windows than the master keeps pending (8): before the fix every
# solve from here on had no edges and every node was unaligned.
sleep 12
t=$(date +%s.%N)
it_wait 10 $CHECK aligned "$REC" 3 "$t" || it_fail "the cluster lost its alignment"
out=$($CHECK errors "$REC" 3 "$t_bad" 10000) || it_fail "node fits off: $out"
echo "with node 3 20 s ahead: $out"
it_wait 10 $CHECK status "$REC" 0 edge_fits_ahead 1 || it_fail "no edge_fits_ahead on the master's status"
$CHECK status "$REC" 0 edge_fits_ahead 1
grep -q "windows ahead of the solve" "$REC" || it_fail "no alert on the bus"
it_pass "far-ahead fits refused and counted, the cluster stays aligned"
