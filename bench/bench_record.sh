#!/usr/bin/env bash
# Recording (SPEC 9: "recording rate and bytes per event"): a hub, a
# publisher sending GPU event batches of 4096 records as fast as the bus
# takes them (back-pressure, no loss), and `dptop --record FILE` on the
# hub.  Baseline in the same run: the same stream into a plain subscriber
# (bus_tail), which keeps nothing.  Reports events/s each, their ratio, and
# the recording's bytes per event (file size over the events in it: the
# batches rec_check counts, reading the file back as a replayer would,
# times their 4096 records).
#
# Usage: bench/bench_record.sh [batches]   (DPTEST_BUILD=build dir)
set -u
. "$(dirname "$0")/../tests/integration/lib.sh"
N=${1:-1000}
BATCH=4096
for f in "$B/dptop" "$B/tests/tools/bus_hub" "$B/tests/tools/bus_emit" "$B/tests/tools/bus_tail" \
    "$B/tests/tools/rec_check"; do
    [ -x "$f" ] || { echo "bench_record: $f is missing (make tests-build)" >&2; exit 1; }
done
port=$(it_ports 3) || { echo "no free ports" >&2; exit 1; }
H=tcp://127.0.0.1:$port
it_spawn hub "$B/tests/tools/bus_hub" --hub "$H"
it_wait 10 grep -q READY "$IT_TMP/hub.log" || { echo "the hub did not start" >&2; exit 1; }

now_ns() { date +%s%N; }

# emit: the stream, timed from its first message to the subscriber's last.
emit() {
    "$B/tests/tools/bus_emit" --hub "$H" --kind ev --count "$N" --batch $BATCH --rate 0 --retry \
        --wait-sub 3000 >"$IT_TMP/emit-$1.log" 2>&1
}

# Baseline: a subscriber that keeps nothing.
it_spawn tail "$B/tests/tools/bus_tail" --hub "$H" --prefix dp1.ev --until-ev "$N" \
    --ready "$IT_TMP/tail.ready"
TAIL=$IT_PID
it_wait 10 test -f "$IT_TMP/tail.ready" || { echo "bus_tail did not subscribe" >&2; exit 1; }
t0=$(now_ns)
emit tail
wait "$TAIL" 2>/dev/null
t1=$(now_ns)
base_evs=$(awk -v n="$N" -v b=$BATCH -v d=$((t1 - t0)) 'BEGIN { printf "%.0f", n * b / (d / 1e9) }')

# The recorder: stopped by SIGINT once the stream's last batch is in the file.
REC=$IT_TMP/run.dprec
it_spawn record "$B/dptop" --record "$REC" --hub "$H"
RECPID=$IT_PID
it_wait 10 grep -q "recording" "$IT_TMP/record.log" || { echo "the recorder did not start" >&2; exit 1; }
sleep 1 # its subscription reaches the hub
t0=$(now_ns)
emit record
# Done when the file has stopped growing for 0.5 s: timed to its last
# growth (seen every 20 ms).
last=-1 still=0
t1=$(now_ns)
while [ $still -lt 25 ]; do
    size=$(stat -c %s "$REC")
    if [ "$size" -ne "$last" ]; then
        t1=$(now_ns) still=0 last=$size
    else
        still=$((still + 1))
    fi
    sleep 0.02
done
kill -INT "$RECPID"
wait "$RECPID" 2>/dev/null
"$B/tests/tools/rec_check" "$REC" >"$IT_TMP/rec.txt" 2>&1
[ "$(sed -n 's/.* ev=\([0-9]*\).*/\1/p' "$IT_TMP/rec.txt")" -ge "$N" ] ||
    { echo "the recording holds fewer than $N batches:" >&2; cat "$IT_TMP/rec.txt" >&2; exit 1; }
ev=$(($(sed -n 's/.* ev=\([0-9]*\).*/\1/p' "$IT_TMP/rec.txt") * BATCH))
size=$(stat -c %s "$REC")
rec_evs=$(awk -v e="$ev" -v d=$((t1 - t0)) 'BEGIN { printf "%.0f", e / (d / 1e9) }')
bpe=$(awk -v s="$size" -v e="$ev" 'BEGIN { printf "%.1f", s / e }')
ratio=$(awk -v a="$rec_evs" -v b="$base_evs" 'BEGIN { printf "%.2f", a / b }')
printf "events of %d batches of %d through the hub:\n" "$N" $BATCH
printf "  plain subscriber (baseline) %12s events/s\n" "$base_evs"
printf "  dptop --record              %12s events/s  (%s x baseline)\n" "$rec_evs" "$ratio"
printf "  recording: %d events in %d bytes, %s bytes per event (a record is 64)\n" "$ev" "$size" "$bpe"
grep "dptop: recorded" "$IT_TMP/record.log" || true
echo "BENCH record_events_per_s $rec_evs events/s"
echo "BENCH record_baseline_events_per_s $base_evs events/s"
echo "BENCH record_over_baseline $ratio x"
echo "BENCH record_bytes_per_event $bpe bytes"
