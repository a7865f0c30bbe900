#!/usr/bin/env bash
# timeout: 300
# Record, then replay and export: a master and two agents with simulated
# clocks and workload; `dptop --record` and a live console (in tmux) watch
# the same bus.  The console's snapshot (`s`) and `dptop --replay FILE
# --export OUT` of the recording must hold the same events over the period
# both saw, at the same aligned times, and the export has flow arrows.  A
# damaged copy of the recording (garbage in the middle, a cut tail) is
# reported with offsets and the rest is still exported.  Finally the replay
# console opens on the recording, seeks, and quits.
source "$(dirname "$0")/lib.sh"

command -v tmux >/dev/null || it_skip "tmux is not installed"
[ -x "$B/dptop" ] && [ -x "$B/dpnode" ] || it_skip "dptop or dpnode not built in $B"

SOCK="dptop-exp-$$"
TM=(tmux -L "$SOCK" -f /dev/null)
trap '"${TM[@]}" kill-server 2>/dev/null; it_cleanup' EXIT
OUT="$IT_TMP/out"
mkdir -p "$OUT"

# A recording that is not there is a bad argument (2), as dpclock's missing
# inputs are, for the console and the export alike; nothing is written.
for extra in "" "--export=$IT_TMP/none.json"; do
    "$B/dptop" --replay "$IT_TMP/none.dprec" $extra 2>"$IT_TMP/none.err" </dev/null
    rc=$?
    [ $rc -eq 2 ] || it_fail "dptop --replay of a missing file $extra: exit $rc, not 2"
    grep -q "cannot open recording" "$IT_TMP/none.err" || it_fail "no message: $(cat "$IT_TMP/none.err")"
done
[ -e "$IT_TMP/none.json" ] && it_fail "an export was written from a missing recording"

P=$(it_ports 3) || it_skip "no free ports"
HUB="tcp://127.0.0.1:$P"
common=(--hub="$HUB" --bind-ip=127.0.0.1 --sim-workload --trace-endpoint=none)
it_spawn master "$B/dpnode" --master --listen="$HUB" --node-id=0 --sim-clock=0,0 "${common[@]}"
it_wait 20 sh -c "ss -Hltn 'sport = :$P' | grep -q ." || it_fail "the master did not bind $HUB"
it_spawn agent1 "$B/dpnode" --node-id=1 --sim-clock=3000000,20 "${common[@]}"
it_spawn agent2 "$B/dpnode" --node-id=2 --sim-clock=-5000000,-30 "${common[@]}"
it_spawn rec "$B/dptop" --record "$IT_TMP/run.dprec" --hub "$HUB"
REC=$IT_PID

"${TM[@]}" new-session -d -s live -x 150 -y 45 \
    "env LANG=C.UTF-8 LC_ALL=C.UTF-8 $B/dptop --hub $HUB --output-dir $OUT 2>$IT_TMP/live.err"
ready() {
    "${TM[@]}" capture-pane -p -t live >"$IT_TMP/pane.txt"
    [ "$(grep -cE '^n[0-2]\*? +[^ ]+ +up +[+-][0-9.]+(ns|µs|ms)' "$IT_TMP/pane.txt")" -eq 3 ]
}
it_wait 90 ready || { cat "$IT_TMP/pane.txt"; it_fail "the live console never showed 3 aligned nodes"; }
sleep 6
"${TM[@]}" send-keys -t live s
it_wait 20 sh -c "ls $OUT/dptop-*.json >/dev/null 2>&1" || it_fail "no live snapshot"
sleep 2
kill -INT "$REC"
it_wait 20 sh -c "! kill -0 $REC 2>/dev/null" || it_fail "the recorder did not stop"
grep -q "recorded" "$IT_TMP/rec.log" || it_fail "no recorder summary: $(cat "$IT_TMP/rec.log")"

"$B/dptop" --replay "$IT_TMP/run.dprec" --export "$IT_TMP/export.json" >"$IT_TMP/export.out" 2>&1 ||
    it_fail "export failed: $(cat "$IT_TMP/export.out")"
grep -q "exported" "$IT_TMP/export.out" || it_fail "no export summary"
SNAP=$(ls "$OUT"/dptop-*.json | head -1)

$IT_PY - "$SNAP" "$IT_TMP/export.json" <<'EOF' || it_fail "the export and the live snapshot differ"
import json, sys
def load(path):
    d = json.load(open(path))
    ev = d["traceEvents"]
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
               if e.get("ph") == "M" and e["name"] == "thread_name"}
    out = {}
    for e in ev:
        if e.get("ph") not in ("X", "i"):
            continue
        key = (e["pid"], threads[(e["pid"], e["tid"])], e["name"], e["cat"], e["args"]["trace_ns"])
        out[key] = e["ts"] * 1000 + d["metadata"]["origin_ns"]  # aligned start, ns
    flows = sum(1 for e in ev if e.get("ph") == "s")
    return out, flows, d
live, _, dl = load(sys.argv[1])
exp, flows, de = load(sys.argv[2])
assert flows > 0, "no flow arrows in the export"
assert de["metadata"]["source"] == "export"
nodes = sorted({k[0] for k in live})
assert nodes == [0, 1, 2], nodes
total = worst = 0
for n in nodes:
    lt = [k[4] for k in live if k[0] == n]
    et = [k[4] for k in exp if k[0] == n]
    lo = max(min(lt), min(et)) + 1000000000  # both saw this period whole
    hi = min(max(lt), max(et)) - 1000000000
    a = {k for k in live if k[0] == n and lo <= k[4] <= hi}
    b = {k for k in exp if k[0] == n and lo <= k[4] <= hi}
    if a != b:
        print("node", n, "only live:", sorted(a - b)[:5], "only export:", sorted(b - a)[:5])
        sys.exit(1)
    total += len(a)
    for k in a:
        worst = max(worst, abs(live[k] - exp[k]))
print("events compared %d, worst aligned time difference %.0f ns" % (total, worst))
assert total >= 1000, total
assert worst <= 10000, worst
EOF

# A damaged copy: 64 bytes of garbage at 40 %, the last 100 bytes cut.
$IT_PY - "$IT_TMP/run.dprec" "$IT_TMP/bad.dprec" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
at = len(b) * 4 // 10
b[at:at + 64] = b"\xa5" * 64
open(sys.argv[2], "wb").write(bytes(b[:-100]))
EOF
"$B/dptop" --replay "$IT_TMP/bad.dprec" --export "$IT_TMP/bad.json" >"$IT_TMP/bad.out" 2>&1 ||
    it_fail "export of a damaged recording failed: $(cat "$IT_TMP/bad.out")"
grep -q "offset" "$IT_TMP/bad.out" || it_fail "damage not reported with offsets: $(cat "$IT_TMP/bad.out")"
grep -qE "truncated|1 corrupt" "$IT_TMP/bad.out" || it_fail "damage not summarised: $(cat "$IT_TMP/bad.out")"
$IT_PY - "$IT_TMP/export.json" "$IT_TMP/bad.json" <<'EOF' || it_fail "the damaged export lost too much"
import json, sys
good = sum(1 for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X")
bad = sum(1 for e in json.load(open(sys.argv[2]))["traceEvents"] if e.get("ph") == "X")
print("events: intact %d, damaged %d" % (good, bad))
# The damaged frames may hold no complete events (a fit or snapshot frame).
assert 0.8 * good < bad <= good, (good, bad)
EOF

# A budget too small for the recording: the export says on stderr that it
# is incomplete and exits 1 (without --event-budget the budget grows to
# what the file can hold).
"$B/dptop" --replay "$IT_TMP/run.dprec" --export "$IT_TMP/small.json" --event-budget 1000 \
    >"$IT_TMP/small.out" 2>"$IT_TMP/small.err" && it_fail "an export that lost events exited 0"
grep -q "incomplete export: the first [0-9]* events did not fit" "$IT_TMP/small.err" ||
    it_fail "no word of the lost events: $(cat "$IT_TMP/small.out" "$IT_TMP/small.err")"
grep -q "did not fit" "$IT_TMP/export.out" && it_fail "the full export lost events: $(cat "$IT_TMP/export.out")"

# A name without an extension gets a Chrome trace, and a word that a
# directory of XSpaces takes a trailing '/'.
"$B/dptop" --replay "$IT_TMP/run.dprec" --export "$IT_TMP/run2" >/dev/null 2>"$IT_TMP/noext.err" ||
    it_fail "export to a name without an extension failed: $(cat "$IT_TMP/noext.err")"
grep -q "has no extension: writing one Chrome trace file .* trailing '/'" "$IT_TMP/noext.err" ||
    it_fail "no word on the missing extension: $(cat "$IT_TMP/noext.err")"

# The replay console: header, node table, seek, quit.
"${TM[@]}" new-session -d -s replay -x 150 -y 45 \
    "env LANG=C.UTF-8 LC_ALL=C.UTF-8 $B/dptop --replay $IT_TMP/run.dprec --speed 4 \
     2>$IT_TMP/replay.err; echo \$? >$IT_TMP/replay.exit"
it_wait 30 sh -c "tmux -L $SOCK capture-pane -p -t replay | grep -q 'REPLAY'" || it_fail "no replay header"
it_wait 30 sh -c "[ \$(tmux -L $SOCK capture-pane -p -t replay | grep -cE '^n[0-2]\*? +[^ ]+ +up') -eq 3 ]" ||
    it_fail "the replay never showed the 3 nodes"
"${TM[@]}" send-keys -t replay ']'
sleep 1
"${TM[@]}" send-keys -t replay '['
it_wait 10 sh -c "tmux -L $SOCK capture-pane -p -t replay | grep -q 'replay at'" || it_fail "seeking said nothing"
"${TM[@]}" send-keys -t replay q
it_wait 10 test -f "$IT_TMP/replay.exit" || it_fail "the replay console did not quit"
[ "$(cat "$IT_TMP/replay.exit")" = 0 ] || it_fail "replay exited with $(cat "$IT_TMP/replay.exit")"
# As fast as possible (--speed 0): the position is where the data got to;
# at the end it stays at the last message, `]` does not pass it, and `[`
# goes 10 s back from there (not from some far future).
"${TM[@]}" new-session -d -s fast -x 150 -y 45 \
    "env LANG=C.UTF-8 LC_ALL=C.UTF-8 $B/dptop --replay $IT_TMP/run.dprec --speed 0 2>$IT_TMP/fast.err"
pos() { tmux -L "$SOCK" capture-pane -p -t fast | sed -n 's/.*run\.dprec +\([0-9.]*\)s 100% max end.*/\1/p' | head -1; }
it_wait 30 sh -c "tmux -L $SOCK capture-pane -p -t fast | grep -q 'run.dprec +[0-9.]*s 100% max end'" ||
    it_fail "the fast replay never reached its end: $(tmux -L "$SOCK" capture-pane -p -t fast | head -1)"
end=$(pos)
"${TM[@]}" send-keys -t fast ']' ']'
sleep 1
[ "$(pos)" = "$end" ] || it_fail "']' moved the replay past its end: +$end s -> +$(pos) s"
# `]` at the end says "replay at" the end already, and a replay running as
# fast as it can is back at its end at once, its log lines over the status:
# paused (space) first, the seek stays where it went and says so last.
seek() { tmux -L "$SOCK" capture-pane -p -t fast | sed -n 's/.*replay at +\([0-9.]*\) s.*/\1/p' | head -1; }
moved() { local b; b=$(seek); [ -n "$b" ] && [ "$b" != "$end" ]; }
"${TM[@]}" send-keys -t fast ' '
sleep 0.5
"${TM[@]}" send-keys -t fast '['
it_wait 10 moved || it_fail "seeking back said nothing new: $(tmux -L "$SOCK" capture-pane -p -t fast | tail -1)"
back=$(seek)
$IT_PY -c "import sys; e, b = float('$end'), float('$back' or -1); sys.exit(0 if abs(b - max(0.0, e - 10)) < 0.2 else 1)" ||
    it_fail "'[' from the end at +$end s went to +$back s"
echo "fast replay: end at +$end s, ']' stays, '[' to +$back s"
"${TM[@]}" send-keys -t fast q
# The collectives view (c) in the windows' place, on the whole recording;
# Enter jumps the timeline to the newest instance and marks its ranks' arrivals.
"${TM[@]}" new-session -d -s coll -x 150 -y 45 \
    "env LANG=C.UTF-8 LC_ALL=C.UTF-8 $B/dptop --replay $IT_TMP/run.dprec --speed 0 2>$IT_TMP/coll.err"
it_wait 30 sh -c "tmux -L $SOCK capture-pane -p -t coll | grep -q 'run.dprec +[0-9.]*s 100% max end'" ||
    it_fail "the collectives replay never reached its end"
collpane() { tmux -L "$SOCK" capture-pane -p -t coll; }
"${TM[@]}" send-keys -t coll c
it_wait 10 sh -c "tmux -L $SOCK capture-pane -p -t coll | grep -q 'Collectives: [1-9]'" ||
    it_fail "no collectives view: $(collpane | head -5)"
it_wait 10 sh -c "tmux -L $SOCK capture-pane -p -t coll | grep -Eq 'allreduce +3 +[0-9.]+(ns|µs|ms) +n[0-2] '" ||
    it_fail "no collective instance rows: $(collpane | head -8)"
# The newest may be partial (the recording ended inside it): the first whole one.
k=$(collpane | grep -E ' allreduce +[0-9]+ ' | grep -n ' allreduce +3 ' | head -1 | cut -d: -f1)
for _ in $(seq 2 "${k:-1}"); do "${TM[@]}" send-keys -t coll j; done
"${TM[@]}" send-keys -t coll Enter
it_wait 10 sh -c "tmux -L $SOCK capture-pane -p -t coll | grep -Eq 'allreduce #[0-9]+: 3 ranks, last n[0-2] by'" ||
    it_fail "Enter did not jump to the instance: $(collpane | tail -2)"
[ "$(collpane | grep -c '▼')" -ge 3 ] || it_fail "the ranks' arrivals are not marked: $(collpane)"
collpane | grep -q ' LATE' || it_fail "no LATE column in the node table"
"${TM[@]}" send-keys -t coll q
# A locale that is not UTF-8 (no LANG at all): the console draws in a
# UTF-8 one all the same, and says so in its log, where it drew '?' and
# raw line-drawing letters.
"${TM[@]}" new-session -d -s cloc -x 150 -y 45 \
    "env -u LANG -u LC_ALL -u LC_CTYPE $B/dptop --replay $IT_TMP/run.dprec 2>$IT_TMP/cloc.err"
it_wait 20 sh -c "tmux -L $SOCK capture-pane -p -t cloc | grep -q '^ REPLAY .* │ nodes'" ||
    it_fail "no UTF-8 header in a C locale: $(tmux -L "$SOCK" capture-pane -p -t cloc | head -2)"
"${TM[@]}" send-keys -t cloc L
it_wait 10 sh -c "tmux -L $SOCK capture-pane -p -t cloc | grep -q 'not UTF-8: drawing'" ||
    it_fail "the locale switch is not in the log"
"${TM[@]}" send-keys -t cloc x q
it_pass "export equals the live snapshot over the common period; damage reported; replay seeks, and stops at its end"
