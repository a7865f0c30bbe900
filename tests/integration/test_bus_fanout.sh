#!/usr/bin/env bash
# timeout: 180
# Three publishers, one hub, two subscribers, real processes on tcp loopback:
# at a moderate rate nothing is lost — every subscriber gets every event batch
# of every publisher, in order, seq 1..N without a gap.
. "$(dirname "$0")/lib.sh"
for t in bus_hub bus_emit bus_tail; do
    [ -x "$B/tests/tools/$t" ] || it_skip "$t not built (needs the bus and gpu modules)"
done

N=600
port=$(it_ports 3) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
it_spawn hub "$B/tests/tools/bus_hub" --hub "$H"
it_wait 20 grep -q '^READY' "$IT_TMP/hub.log" || it_fail "hub did not start"

# Subscribers first; --ready proves their subscription reached the hub.
tails=()
for s in 1 2; do
    it_spawn tail$s "$B/tests/tools/bus_tail" --hub "$H" --prefix dp1.ev. \
        --ready "$IT_TMP/ready$s" --until-ev $((3 * N)) --duration-ms 120000
    tails+=("$IT_PID")
done
it_wait 30 test -f "$IT_TMP/ready1" -a -f "$IT_TMP/ready2" || it_fail "subscribers not ready"

emits=()
for n in 1 2 3; do
    it_spawn emit$n "$B/tests/tools/bus_emit" --hub "$H" --node $n --count $N --batch 64 \
        --rate 300 --wait-sub 20000
    emits+=("$IT_PID")
done
for p in "${emits[@]}"; do wait "$p" || it_fail "an emitter failed"; done
for n in 1 2 3; do
    grep -q "^EMIT node=$n sent=$N dropped=0 " "$IT_TMP/emit$n.log" ||
        it_fail "emitter $n did not send $N messages without drops"
done
for p in "${tails[@]}"; do
    it_wait 60 bash -c "! kill -0 $p 2>/dev/null" || it_fail "a subscriber did not finish"
done

for s in 1 2; do
    log=$IT_TMP/tail$s.log
    grep -q "^TAIL .* ev=$((3 * N)) ev_records=$((3 * N * 64)) gaps=0 ev_gaps=0 resets=0 dec_errors=0 " "$log" ||
        it_fail "subscriber $s: wrong totals: $(grep '^TAIL' "$log")"
    for n in 1 2 3; do
        grep -q "^TOPIC dp1.ev.$n msgs=$N gaps=0 resets=0 last_seq=$N\$" "$log" ||
            it_fail "subscriber $s: topic dp1.ev.$n incomplete: $(grep "dp1.ev.$n " "$log")"
    done
done
it_pass "2 subscribers x 3 publishers x $N batches: all received, seq continuous"
