#!/usr/bin/env bash
# timeout: 180
# dptop --record under a live stream, then kill -9: the file reads back up
# to the last whole frame — every frame verifies, nothing is corrupt, the
# event batches are continuous, and everything that was on disk before the
# kill (the recorder flushes at least once a second) is read back.
. "$(dirname "$0")/lib.sh"
for t in bus_hub bus_emit rec_check; do
    [ -x "$B/tests/tools/$t" ] || it_skip "$t not built (needs the bus and gpu modules)"
done
[ -x "$B/dptop" ] || it_skip "dptop not built"

port=$(it_ports 3) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
REC=$IT_TMP/run.dprec
size() { stat -c %s "$REC" 2>/dev/null || echo 0; }
it_spawn hub "$B/tests/tools/bus_hub" --hub "$H"
it_wait 20 grep -q '^READY' "$IT_TMP/hub.log" || it_fail "hub did not start"
it_spawn rec "$B/dptop" --record "$REC" --hub "$H"
RECPID=$IT_PID
it_spawn emit "$B/tests/tools/bus_emit" --hub "$H" --node 2 --count 1000000 --batch 64 \
    --rate 300 --retry --wait-sub 20000

it_wait 60 bash -c "[ \$(stat -c %s '$REC' 2>/dev/null || echo 0) -gt 200000 ]" ||
    it_fail "the recording does not grow"
# The file keeps growing while messages arrive: flushes happen on their own.
s1=$(size)
it_wait 20 bash -c "[ \$(stat -c %s '$REC') -gt $s1 ]" || it_fail "no flush after $s1 bytes"
on_disk=$(size)
kill -KILL "$RECPID"
wait "$RECPID" 2>/dev/null
final=$(size)
echo "on disk before the kill: $on_disk bytes; after: $final bytes"

"$B/tests/tools/rec_check" "$REC" >"$IT_TMP/check.log" || it_fail "rec_check could not read the file"
cat "$IT_TMP/check.log"
line=$(grep '^REC' "$IT_TMP/check.log")
val() { sed -n "s/.* $1=\([0-9]*\).*/\1/p" <<<"$line"; }
[ "$(val corrupt)" -eq 0 ] || it_fail "corrupt frames after kill -9"
[ "$(val undecodable)" -eq 0 ] || it_fail "frames that verify but do not decode"
[ "$(val ev)" -gt 40 ] || it_fail "too few event batches recorded"
[ "$(val ev_seq_gaps)" -eq 0 ] || it_fail "event batches missing inside the recording"
[ "$(val last_end)" -ge "$on_disk" ] || it_fail "whole frames end at $(val last_end), before $on_disk"
# At most one partial frame follows the last whole one.
[ $(($(val size) - $(val last_end))) -eq "$(val truncated)" ] || it_fail "bytes after the last frame"
grep -q '^PROBLEM' "$IT_TMP/check.log" && ! grep -q '^PROBLEM truncated' "$IT_TMP/check.log" &&
    it_fail "a problem other than a truncated tail"
it_pass "$(val frames) whole frames read back after kill -9 ($(val truncated) bytes of a partial frame)"
