#!/usr/bin/env bash
# timeout: 240
# Overload: one publisher bursts large event batches at full speed; a slow
# subscriber with small queues loses messages at the hub's high-water mark,
# and counts exactly those losses from seq gaps; a fast subscriber beside it
# loses nothing.  Publisher-side refusals (EAGAIN) are counted by the
# publisher and consume no seq, so: subscriber received + gaps == publisher
# sent, and publisher attempts == sent + dropped.
. "$(dirname "$0")/lib.sh"
for t in bus_hub bus_emit bus_tail; do
    [ -x "$B/tests/tools/$t" ] || it_skip "$t not built (needs the bus and gpu modules)"
done

BURST=3000 TAIL=20
port=$(it_ports 3) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
it_spawn hub "$B/tests/tools/bus_hub" --hub "$H" --sndhwm 500
it_wait 20 grep -q '^READY' "$IT_TMP/hub.log" || it_fail "hub did not start"

it_spawn slow "$B/tests/tools/bus_tail" --hub "$H" --prefix dp1.ev. --rcvhwm 20 --slow-us 5000 \
    --ready "$IT_TMP/ready-slow" --until-ev $((BURST + TAIL)) --duration-ms 200000
SLOW=$IT_PID
it_spawn fast "$B/tests/tools/bus_tail" --hub "$H" --prefix dp1.ev. --rcvhwm 100000 \
    --ready "$IT_TMP/ready-fast" --until-ev $((BURST + TAIL)) --duration-ms 200000
FAST=$IT_PID
it_wait 30 test -f "$IT_TMP/ready-slow" -a -f "$IT_TMP/ready-fast" || it_fail "subscribers not ready"

# 16 KiB batches at 1000/s (the slow subscriber reads 200/s; the hub keeps
# 500 per subscriber), then, once the slow one drained, a slow tail that lets
# it see where the stream ends.
it_spawn emit "$B/tests/tools/bus_emit" --hub "$H" --node 5 --count $BURST --batch 256 \
    --rate 1000 --tail $TAIL --tail-gap-ms 8000 --wait-sub 20000
EMIT=$IT_PID
wait $EMIT || it_fail "emitter failed"
line=$(grep '^EMIT' "$IT_TMP/emit.log") || it_fail "no emitter summary"
val() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$2"; }
sent=$(val sent "$line") dropped=$(val dropped "$line") attempts=$(val attempts "$line")
retries=$(val retries "$line") lost=$(val lost "$line")
[ "$attempts" -eq $((sent + dropped)) ] || it_fail "publisher: attempts $attempts != sent $sent + dropped $dropped"
[ "$lost" -eq $((dropped - retries)) ] || it_fail "publisher: lost $lost != dropped - retries"
[ "$sent" -eq $((BURST + TAIL - lost)) ] || it_fail "publisher: sent $sent + lost $lost != $((BURST + TAIL))"

for p in $SLOW $FAST; do
    it_wait 120 bash -c "! kill -0 $p 2>/dev/null" || it_fail "a subscriber did not finish"
done
s=$(grep '^TAIL' "$IT_TMP/slow.log") || it_fail "no slow summary"
f=$(grep '^TAIL' "$IT_TMP/fast.log") || it_fail "no fast summary"
s_ev=$(val ev "$s") s_gaps=$(val ev_gaps "$s") f_ev=$(val ev "$f") f_gaps=$(val ev_gaps "$f")
echo "publisher: $line"
echo "slow subscriber: received $s_ev, seq gaps $s_gaps"
echo "fast subscriber: received $f_ev, seq gaps $f_gaps"
[ "$s_gaps" -gt 0 ] || it_fail "the slow subscriber lost nothing: no overload happened"
[ $((s_ev + s_gaps)) -eq "$sent" ] || it_fail "slow: received $s_ev + gaps $s_gaps != sent $sent"
grep -q "^TOPIC dp1.ev.5 .* last_seq=$sent\$" "$IT_TMP/slow.log" || it_fail "slow: did not see the last seq"
[ "$f_gaps" -eq 0 ] && [ "$f_ev" -eq "$sent" ] || it_fail "fast: received $f_ev gaps $f_gaps, sent $sent"
it_pass "slow subscriber lost $s_gaps of $sent (counted exactly); fast one lost none"
