#!/usr/bin/env bash
# timeout: 240
# dptop --record: usage errors (exit 2), a clean SIGINT stop with a summary,
# a truncated file and a corrupted frame in the middle (reported with their
# offsets; the reader resynchronises and reads the rest), an unwritable
# destination and a disk that fills up (exit 1 with the reason; what was
# written reads back).
. "$(dirname "$0")/lib.sh"
for t in bus_hub bus_emit rec_check; do
    [ -x "$B/tests/tools/$t" ] || it_skip "$t not built (needs the bus and gpu modules)"
done
[ -x "$B/dptop" ] || it_skip "dptop not built"
D=$B/dptop

# --- usage ---
"$D" --help | grep -q -- '--record FILE' || it_fail "--help does not show --record"
"$D" --version | grep -q '^dptop [0-9]' || it_fail "--version"
expect2() {
    local out rc
    out=$("$@" 2>&1 >/dev/null)
    rc=$?
    [ $rc -eq 2 ] || it_fail "'$*' exited $rc, expected 2"
    [ "$(wc -l <<<"$out")" -eq 1 ] || it_fail "'$*' did not print one line: $out"
    echo "$out"
}
expect2 "$D"
expect2 "$D" --record
expect2 "$D" --record x.dprec --no-such-flag 1 | grep -q -- '--no-such-flag' || it_fail "unknown flag not named"
expect2 "$D" --record x.dprec --hub nowhere | grep -q 'hub' || it_fail "bad hub not named"
expect2 "$D" --record x.dprec --state-timeout-ms -5 | grep -q 'state_timeout_ms' || it_fail "range not named"
expect2 env DPTOP_SUB_HWM=many "$D" --record x.dprec | grep -q 'sub_hwm' || it_fail "bad env not named"
echo '{"hub": 7}' >"$IT_TMP/bad.json"
expect2 "$D" --config "$IT_TMP/bad.json" --record x.dprec | grep -q 'hub' || it_fail "bad file value not named"

port=$(it_ports 3) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
it_spawn hub "$B/tests/tools/bus_hub" --hub "$H"
it_wait 20 grep -q '^READY' "$IT_TMP/hub.log" || it_fail "hub did not start"

# --- an unwritable destination fails at once ---
out=$("$D" --record /dev/full --hub "$H" 2>&1)
rc=$?
[ $rc -eq 1 ] || it_fail "/dev/full: exit $rc, expected 1"
grep -q 'No space left on device' <<<"$out" || it_fail "/dev/full: no reason given: $out"

# --- a clean session ---
REC=$IT_TMP/clean.dprec
it_spawn rec "$D" --record "$REC" --hub "$H"
RECPID=$IT_PID
"$B/tests/tools/bus_emit" --hub "$H" --node 3 --count 300 --batch 64 --rate 300 --wait-sub 20000 \
    >"$IT_TMP/emit1.log" 2>&1 || it_fail "emitter failed"
it_wait 30 bash -c "'$B/tests/tools/rec_check' '$REC' | grep -q ' ev=300 '" ||
    it_fail "the recording did not get the 300 batches"
kill -INT "$RECPID"
wait "$RECPID"
rc=$?
[ $rc -eq 0 ] || it_fail "recorder exited $rc after SIGINT"
cat "$IT_TMP/rec.log"
grep -q '^dptop: recorded [0-9]* messages' "$IT_TMP/rec.log" || it_fail "no summary"
grep -q '^dptop: drops seen via seq gaps: 0' "$IT_TMP/rec.log" || it_fail "drops reported"
grep -q '^dptop: decode errors: 0' "$IT_TMP/rec.log" || it_fail "decode errors reported"
"$B/tests/tools/rec_check" "$REC" --dump >"$IT_TMP/clean.txt"
grep -q '^REC frames=[0-9]* corrupt=0 skipped=0 truncated=0 undecodable=0 ev=300 ev_seq_gaps=0 ' \
    "$IT_TMP/clean.txt" || it_fail "clean recording: $(grep '^REC' "$IT_TMP/clean.txt")"
frames=$(sed -n 's/^REC frames=\([0-9]*\).*/\1/p' "$IT_TMP/clean.txt")
grep -q "^dptop: recorded $frames messages" "$IT_TMP/rec.log" || it_fail "summary count != frames in the file"
mapfile -t offs < <(sed -n 's/^FRAME offset=\([0-9]*\).*/\1/p' "$IT_TMP/clean.txt")
[ "${#offs[@]}" -eq "$frames" ] || it_fail "frame list"

# --- truncated in the middle of the last frame ---
last=${offs[$((frames - 1))]}
head -c $((last + 50)) "$REC" >"$IT_TMP/cut.dprec"
"$B/tests/tools/rec_check" "$IT_TMP/cut.dprec" >"$IT_TMP/cut.txt"
cat "$IT_TMP/cut.txt"
grep -q "^PROBLEM truncated .*offset $last" "$IT_TMP/cut.txt" || it_fail "truncation not reported at $last"
grep -q "^REC frames=$((frames - 1)) corrupt=0 .* truncated=50 " "$IT_TMP/cut.txt" ||
    it_fail "truncated file: wrong counts"

# --- one corrupted byte in a frame in the middle ---
mid=${offs[$((frames / 2))]}
cp "$REC" "$IT_TMP/bad.dprec"
printf '\xff' | dd of="$IT_TMP/bad.dprec" bs=1 seek=$((mid + 40)) conv=notrunc status=none
"$B/tests/tools/rec_check" "$IT_TMP/bad.dprec" --dump >"$IT_TMP/bad.txt"
grep '^PROBLEM' "$IT_TMP/bad.txt"
grep -q "^PROBLEM bad_checksum .*offset $mid" "$IT_TMP/bad.txt" || it_fail "corruption not reported at $mid"
grep -q "^REC frames=$((frames - 1)) corrupt=1 skipped=$((offs[frames / 2 + 1] - mid)) truncated=0 " \
    "$IT_TMP/bad.txt" || it_fail "corrupt file: $(grep '^REC' "$IT_TMP/bad.txt")"
grep -q "^FRAME offset=${offs[$((frames - 1))]} " "$IT_TMP/bad.txt" || it_fail "did not resynchronise"

# --- the disk fills up (a 100 KiB file size limit stands in for it) ---
FULL=$IT_TMP/full.dprec
it_spawn recfull bash -c 'ulimit -f 100; exec "$0" --record "$1" --hub "$2"' "$D" "$FULL" "$H"
FULLPID=$IT_PID
it_spawn emit2 "$B/tests/tools/bus_emit" --hub "$H" --node 4 --count 100000 --batch 64 --rate 300 \
    --retry --wait-sub 20000
it_wait 60 bash -c "! kill -0 $FULLPID 2>/dev/null" || it_fail "the recorder hangs on a full disk"
wait "$FULLPID"
rc=$?
cat "$IT_TMP/recfull.log"
[ $rc -eq 1 ] || it_fail "full disk: exit $rc, expected 1"
grep -q 'write failed: File too large; recording stopped' "$IT_TMP/recfull.log" || it_fail "no reason given"
grep -q '^dptop: recorded [0-9]* messages' "$IT_TMP/recfull.log" || it_fail "no summary after the failure"
[ "$(stat -c %s "$FULL")" -le 102400 ] || it_fail "the file outgrew the limit"
"$B/tests/tools/rec_check" "$FULL" >"$IT_TMP/full.txt"
cat "$IT_TMP/full.txt"
grep -q '^REC frames=[1-9][0-9]* corrupt=0 .* undecodable=0 ' "$IT_TMP/full.txt" ||
    it_fail "what was written before the disk filled does not read back"
n=$(sed -n 's/^REC frames=\([0-9]*\).*/\1/p' "$IT_TMP/full.txt")
grep -q "^dptop: recorded $n messages" "$IT_TMP/recfull.log" || it_fail "summary count != $n frames read back"
it_pass "usage, clean stop, truncation, corruption and a full disk all behave"
