#!/usr/bin/env bash
# timeout: 180
# Perfetto's native format: a master and two agents with simulated clocks
# and workload (one a straggler), recorded; the recording exported as a
# Chrome trace and as .pftrace.  The .pftrace is decoded by a decoder of our
# own written from Perfetto's protos (pftrace_check.py: every track, slice,
# flow and counter, against the Chrome trace of the same recording) and by
# protoc --decode_raw; it must be at least 5x smaller.  The replay console's
# `s` with --snapshot-format perfetto writes one too; bad formats are refused.
source "$(dirname "$0")/lib.sh"
[ -x "$B/dptop" ] && [ -x "$B/dpnode" ] || it_skip "dptop or dpnode not built in $B"
command -v tmux >/dev/null || it_skip "tmux is not installed"
CHK="$IT_PY $(dirname "$0")/pftrace_check.py"

P=$(it_ports 3) || it_skip "no free ports"
HUB="tcp://127.0.0.1:$P"
common=(--hub="$HUB" --bind-ip=127.0.0.1 --sim-workload --trace-endpoint=none --sim-step-ms=20)
it_spawn master "$B/dpnode" --master --listen="$HUB" --node-id=0 --sim-clock=0,0 "${common[@]}"
it_wait 20 sh -c "ss -Hltn 'sport = :$P' | grep -q ." || it_fail "the master did not bind $HUB"
it_spawn agent1 "$B/dpnode" --node-id=1 --sim-clock=3000000,20 "${common[@]}"
it_spawn agent2 "$B/dpnode" --node-id=2 --sim-clock=-5000000,-30 --sim-straggler=2 \
    --sim-late-us=300 "${common[@]}"
it_spawn rec "$B/dptop" --record "$IT_TMP/run.dprec" --hub "$HUB"
REC=$IT_PID
sleep 9
kill -INT "$REC"
it_wait 20 sh -c "! kill -0 $REC 2>/dev/null" || it_fail "the recorder did not stop"

"$B/dptop" --replay "$IT_TMP/run.dprec" --export "$IT_TMP/run.json" >"$IT_TMP/json.out" 2>&1 ||
    it_fail "Chrome export failed: $(cat "$IT_TMP/json.out")"
"$B/dptop" --replay "$IT_TMP/run.dprec" --export "$IT_TMP/run.pftrace" >"$IT_TMP/pf.out" 2>&1 ||
    it_fail "Perfetto export failed: $(cat "$IT_TMP/pf.out")"
cat "$IT_TMP/pf.out"
grep -q "partly overlapped" "$IT_TMP/pf.out" && it_fail "the workload's slices do not nest"
out=$($CHK "$IT_TMP/run.pftrace" "$IT_TMP/run.json") || it_fail "pftrace check: $out"
echo "$out"
# --format perfetto to any name, and .perfetto-trace by its name: the same bytes.
"$B/dptop" --replay "$IT_TMP/run.dprec" --export "$IT_TMP/same.bin" --format perfetto >/dev/null 2>&1 ||
    it_fail "--format perfetto failed"
"$B/dptop" --replay "$IT_TMP/run.dprec" --export "$IT_TMP/same.perfetto-trace" >/dev/null 2>&1 ||
    it_fail ".perfetto-trace failed"
cmp -s "$IT_TMP/run.pftrace" "$IT_TMP/same.bin" && cmp -s "$IT_TMP/run.pftrace" "$IT_TMP/same.perfetto-trace" ||
    it_fail "the three exports differ"

# Debian's protoc reads the wire format: as many packets as the decoder counted.
if command -v protoc >/dev/null; then
    protoc --decode_raw <"$IT_TMP/run.pftrace" >"$IT_TMP/raw.txt" 2>"$IT_TMP/raw.err" ||
        it_fail "protoc --decode_raw: $(head -3 "$IT_TMP/raw.err")"
    n=$(grep -c '^1 {' "$IT_TMP/raw.txt")
    want=$(sed -n 's/.* \([0-9]*\) packets.*/\1/p' <<<"$out")
    [ "$n" = "$want" ] || it_fail "protoc read $n packets, the decoder $want"
    echo "protoc --decode_raw: $n packets"
else
    it_fail "protoc is not installed (make test installs protobuf-compiler)"
fi
js=$(stat -c %s "$IT_TMP/run.json") pf=$(stat -c %s "$IT_TMP/run.pftrace")
ratio=$(awk -v a="$js" -v b="$pf" 'BEGIN { printf "%.2f", a / b }')
awk -v r="$ratio" 'BEGIN { exit !(r >= 5) }' || it_fail "only ${ratio}x smaller than the Chrome trace"
echo "size: Chrome $js bytes, pftrace $pf bytes: ${ratio}x smaller"

# The replay console's `s` writes Perfetto's format when configured.
SOCK="dptop-pf-$$"
TM=(tmux -L "$SOCK" -f /dev/null)
trap '"${TM[@]}" kill-server 2>/dev/null; it_cleanup' EXIT
mkdir -p "$IT_TMP/snap"
"${TM[@]}" new-session -d -s r -x 150 -y 45 \
    "env LANG=C.UTF-8 LC_ALL=C.UTF-8 $B/dptop --replay $IT_TMP/run.dprec --speed 0 --snapshot-format perfetto --output-dir $IT_TMP/snap 2>$IT_TMP/r.err"
it_wait 30 sh -c "tmux -L $SOCK capture-pane -p -t r | grep -q 'run.dprec +[0-9.]*s 100% max end'" ||
    it_fail "the replay never reached its end"
"${TM[@]}" send-keys -t r s
it_wait 20 sh -c "tmux -L $SOCK capture-pane -p -t r | grep -q 'snapshot: .*\.pftrace'" ||
    it_fail "no .pftrace snapshot: $(tmux -L "$SOCK" capture-pane -p -t r | tail -1)"
SNAP=$(ls "$IT_TMP"/snap/dptop-*.pftrace | head -1)
$CHK "$SNAP" "$IT_TMP/run.json" >/dev/null || it_fail "the console's .pftrace differs from the export"
"${TM[@]}" send-keys -t r q

"$B/dptop" --replay "$IT_TMP/run.dprec" --snapshot-format svg 2>"$IT_TMP/e1" </dev/null && it_fail "svg accepted"
grep -q "snapshot_format" "$IT_TMP/e1" || it_fail "no message: $(cat "$IT_TMP/e1")"
it_pass "$out; ${ratio}x smaller than the Chrome trace"
