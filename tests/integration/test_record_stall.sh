#!/usr/bin/env bash
# timeout: 120
# dptop --record on a file system that stops answering for a while (a FIFO
# whose reader is stopped stands in for it): the recorder keeps receiving
# into its write queue, so the hub drops nothing for it, and once the file
# takes writes again every message reaches it.  A recorder that wrote in its
# receive loop would stop reading the bus there, and the hub would drop.
. "$(dirname "$0")/lib.sh"
for t in bus_hub bus_emit rec_check; do
    [ -x "$B/tests/tools/$t" ] || it_skip "$t not built (needs the bus and gpu modules)"
done
[ -x "$B/dptop" ] || it_skip "dptop not built"

port=$(it_ports 3) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
# Small queues at the hub and at the recorder's socket (1000 batches, 16 MB,
# a third of what arrives during the stall; 100 left a loaded machine 25 ms
# to schedule the recorder's reader): what the recorder does not read goes
# to TCP buffers, then is dropped at the hub.
it_spawn hub "$B/tests/tools/bus_hub" --hub "$H" --sndhwm 1000
it_wait 20 grep -q '^READY' "$IT_TMP/hub.log" || it_fail "hub did not start"

FIFO=$IT_TMP/stalled.fifo
OUT=$IT_TMP/out.dprec
mkfifo "$FIFO" || it_skip "mkfifo not permitted here"
it_spawn reader bash -c 'exec cat "$0" >"$1"' "$FIFO" "$OUT"
READER=$IT_PID
it_spawn rec env DPTOP_SUB_HWM=1000 "$B/dptop" --record "$FIFO" --hub "$H" --state-timeout-ms 0
RECPID=$IT_PID
it_wait 20 grep -q 'recording' "$IT_TMP/rec.log" || it_fail "recorder did not start"

# The file stops taking writes; 3000 batches of 256 events (about 50 MB)
# arrive meanwhile, far more than the pipe, the sockets and TCP hold.
kill -STOP "$READER"
"$B/tests/tools/bus_emit" --hub "$H" --node 3 --count 3000 --batch 256 --rate 4000 \
    --wait-sub 20000 --tail 3 --tail-gap-ms 200 >"$IT_TMP/emit.log" 2>&1 || it_fail "emitter failed"
cat "$IT_TMP/emit.log"
sleep 1
kill -CONT "$READER"
kill -INT "$RECPID"
it_wait 60 bash -c "! kill -0 $RECPID 2>/dev/null" || it_fail "the recorder did not stop"
wait "$RECPID"
rc=$?
cat "$IT_TMP/rec.log"
[ $rc -eq 0 ] || it_fail "recorder exited $rc"
it_wait 20 bash -c "! kill -0 $READER 2>/dev/null" || it_fail "the reader did not finish"
grep -q '^dptop: drops seen via seq gaps: 0' "$IT_TMP/rec.log" ||
    it_fail "the hub dropped messages while the file stalled"
"$B/tests/tools/rec_check" "$OUT" >"$IT_TMP/check.txt"
cat "$IT_TMP/check.txt"
grep -q '^REC frames=[0-9]* corrupt=0 skipped=0 truncated=0 undecodable=0 ev=3003 ev_seq_gaps=0 ' \
    "$IT_TMP/check.txt" || it_fail "not every batch reached the file"
it_pass "a file stalled during 3003 batches (about 50 MB): all recorded, none dropped"
