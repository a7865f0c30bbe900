#!/usr/bin/env bash
# timeout: 300
# dptop --demo end to end, in a tmux session of fixed size:
#   - the node table lists 4 nodes whose offsets are within 10 µs of the
#     simulated truth (the demo's sim_truth, logged with --demo-log);
#   - the timeline shows named blocks; a, +, -, arrows, ?, a click on a
#     column head, the wheel, resizes (down to a tiny window) all work and
#     keep the console alive and sane;
#   - `r` records the bus into a self-contained recording (it exports);
#   - `s` writes a Chrome trace in which every step's collective starts
#     within 10 µs on all nodes;
#   - `q` exits and leaves no child behind (checked by pid and process group).
# A private tmux server (-L) is used, so no other tmux session is touched.
source "$(dirname "$0")/lib.sh"

command -v tmux >/dev/null || it_skip "tmux is not installed"
[ -x "$B/dptop" ] && [ -x "$B/dpnode" ] || it_skip "dptop or dpnode not built in $B"

SOCK="dptop-it-$$"
TM=(tmux -L "$SOCK" -f /dev/null)
OUT="$IT_TMP/out"
LOG="$IT_TMP/demo.log"
mkdir -p "$OUT"

cleanup_tmux() {
    # dptop's own pid and its children, whatever state the test ended in.
    if [ -f "$LOG" ]; then
        for p in $(sed -n 's/.*"\(dptop_pid\|pid\)":\([0-9]*\).*/\2/p' "$LOG"); do
            kill -KILL "$p" 2>/dev/null
        done
    fi
    "${TM[@]}" kill-server 2>/dev/null
}
trap 'cleanup_tmux; it_cleanup' EXIT

pane() { "${TM[@]}" capture-pane -p -t t; }

"${TM[@]}" new-session -d -s t -x 160 -y 50 \
    "env LANG=C.UTF-8 LC_ALL=C.UTF-8 TMPDIR=$IT_TMP $B/dptop --demo --demo-log $LOG --output-dir $OUT \
     2>$IT_TMP/dptop.err; echo \$? >$IT_TMP/exit"

# The demo log names the children; the node table needs fits for all four.
it_wait 30 grep -q '"role":"agent"' "$LOG" 2>/dev/null || it_fail "the demo did not start its nodes"
DPTEST_PID=$(sed -n 's/.*"dptop_pid":\([0-9]*\).*/\1/p' "$LOG")
CHILDREN=$(sed -n 's/.*"type":"child".*"pid":\([0-9]*\).*/\1/p' "$LOG")
[ "$(echo "$CHILDREN" | wc -w)" -eq 4 ] || it_fail "expected 4 children, log: $(cat "$LOG")"

fits_ready() {
    pane >"$IT_TMP/pane.txt"
    # Four rows n0..n3 with a numeric offset (n0 is the reference: +0ns).
    [ "$(grep -cE '^n[0-3]\*? +[^ ]+ +up +[+-][0-9.]+(ns|µs|ms)' "$IT_TMP/pane.txt")" -eq 4 ] &&
        [ "$(grep -c '"type":"sim_truth"' "$LOG")" -ge 4 ]
}
it_wait 90 fits_ready || { cat "$IT_TMP/pane.txt"; it_fail "the node table never showed 4 aligned nodes"; }
# Beside the nodes (160 columns) the Windows table keeps the clock columns.
grep -Eq 'EDGE +OFFSET +DRIFT +±UNC +LOOP' "$IT_TMP/pane.txt" ||
    { cat "$IT_TMP/pane.txt"; it_fail "the narrow Windows table lost its clock columns"; }
sleep 3 # a few more windows: the fits settle

check_offsets() {
    pane >"$IT_TMP/pane.txt"
    $IT_PY - "$IT_TMP/pane.txt" "$LOG" <<'EOF'
import datetime, json, re, sys, time
text = open(sys.argv[1], encoding="utf-8").read()
truth = {}
for line in open(sys.argv[2]):
    o = json.loads(line)
    if o["type"] == "sim_truth":
        truth[o["node"]] = o
m = re.search(r"offsets to n(\d+) at (\d\d):(\d\d):(\d\d)\.(\d{6})", text)
if not m:
    sys.exit("no evaluation time in the node table title")
ref = int(m.group(1))
# The time of day is local; pick the date that puts it nearest to now.
now = time.time()
best = None
for days in (-1, 0, 1):
    d = datetime.date.fromtimestamp(now) + datetime.timedelta(days=days)
    t = datetime.datetime(d.year, d.month, d.day, int(m.group(2)), int(m.group(3)),
                          int(m.group(4)), int(m.group(5))).timestamp()
    if best is None or abs(t - now) < abs(best - now):
        best = t
E = best * 1e9  # global ns (the reference's simulated probe clock)
def sim(o, t):  # the node's simulated probe clock at real time t (no wander in the demo)
    return t + o["offset_ns"] + o["drift_ppm"] * 1e-6 * (t - o["t0_ns"])
r = truth[ref]
# Real time at which the reference read E.
t = (E - r["offset_ns"] + r["drift_ppm"] * 1e-6 * r["t0_ns"]) / (1 + r["drift_ppm"] * 1e-6)
units = {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9}
rows = re.findall(r"^n(\d+)\*? +\S+ +up +([+-][0-9.]+)(ns|µs|ms|s) ", text, re.M)
if len(rows) != 4:
    sys.exit("expected 4 node rows, got %d" % len(rows))
worst = 0
for node, val, unit in rows:
    shown = float(val) * units[unit]
    want = sim(r, t) - sim(truth[int(node)], t)
    err = shown - want
    print("n%s shown %+.0f ns truth %+.0f ns error %+.0f ns" % (node, shown, want, err))
    worst = max(worst, abs(err))
print("worst offset error %.0f ns" % worst)
sys.exit(0 if worst <= 10000 else 1)
EOF
}
check_offsets || { cat "$IT_TMP/pane.txt"; it_fail "offsets are not within 10 µs of the truth"; }

# The timeline draws named blocks for every node.
for n in 0 1 2 3; do
    grep -qE "^n$n .*│.*(fwd_g|bwd_g|allred|sgd_|batc|kernel#)" "$IT_TMP/pane.txt" ||
        { cat "$IT_TMP/pane.txt"; it_fail "no blocks in node $n's lane"; }
done

# Four nodes probe each other: the Windows title counts the loops the
# asymmetry can show in (no warning that it is unseen).
grep -qE "Windows: [0-9]+ edges, [1-9][0-9]* loops?," "$IT_TMP/pane.txt" ||
    { cat "$IT_TMP/pane.txt"; it_fail "the Windows title does not count the loops"; }
! grep -q "asymmetry unseen\|leaves out path asymmetry" "$IT_TMP/pane.txt" ||
    { cat "$IT_TMP/pane.txt"; it_fail "loops present, yet asymmetry said unseen"; }
# ...and says what host stamp asymmetry the master's ± assume (its default).
grep -q "loops, stamps ±3ns" "$IT_TMP/pane.txt" ||
    { cat "$IT_TMP/pane.txt"; it_fail "the Windows title does not give the assumed stamp asymmetry"; }

# Keys.
"${TM[@]}" send-keys -t t a
it_wait 5 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q 'RAW: each node'" || it_fail "'a' did not switch to raw clocks"
"${TM[@]}" send-keys -t t a
it_wait 5 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q 'ALIGNED: global'" || it_fail "'a' did not switch back"
"${TM[@]}" send-keys -t t +
it_wait 5 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q 'span 100ms'" || it_fail "'+' did not zoom in"
"${TM[@]}" send-keys -t t - -
it_wait 5 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q 'span 400ms'" || it_fail "'-' did not zoom out"
"${TM[@]}" send-keys -t t Left
it_wait 5 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q 'paused'" || it_fail "Left did not pan back"
# While paused the live edge moves on: Right pans a quarter span (here
# 100 ms) at a time and follows again once it reaches the edge.  Each try
# pans 4 s, well past what the edge moves while a loaded machine polls the
# screen (ten presses, 1 s, fell behind it: the edge moved faster).
live=0
rights=$(printf 'Right %.0s' $(seq 1 40))
for _ in $(seq 1 10); do
    # shellcheck disable=SC2086
    "${TM[@]}" send-keys -t t $rights
    if it_wait 1 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q '▶ live'"; then
        live=1
        break
    fi
done
[ $live -eq 1 ] || it_fail "Right did not return to the live edge"
"${TM[@]}" send-keys -t t '?'
it_wait 5 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q 'dptop keys'" || it_fail "'?' did not show the help"
"${TM[@]}" send-keys -t t x
it_wait 5 sh -c "! tmux -L $SOCK capture-pane -p -t t | grep -q 'dptop keys'" || it_fail "a key did not close the help"

# Mouse, as a terminal sends it to the application (X10 encoding: ESC [ M,
# then button+32, column+33, row+33; columns kept under 94 so each is one
# ASCII byte): a click on a column head sorts by it, the wheel zooms.
mouse() {
    "${TM[@]}" send-keys -t t -l "$(printf '\033[M%b%b%b' "\\0$(printf %o "$(($1 + 32))")" \
        "\\0$(printf %o "$(($2 + 33))")" "\\0$(printf %o "$(($3 + 33))")")"
}
pane >"$IT_TMP/pane.txt"
head_row=$(grep -n '^ID  *HOST' "$IT_TMP/pane.txt" | head -1 | cut -d: -f1)
head_col=$(sed -n "${head_row}p" "$IT_TMP/pane.txt" | grep -bo OFFSET | head -1 | cut -d: -f1)
[ -n "$head_row" ] && [ -n "$head_col" ] || it_fail "no node table head to click on"
# A click's escape sequence can reach the console split on a loaded machine
# (its ESC alone, then the rest after curses stopped waiting): up to three
# tries, each sorting by offset (a second click only inverts it).
sorted=0
for _ in 1 2 3; do
    mouse 0 $((head_col + 2)) $((head_row - 1)) # press
    mouse 3 $((head_col + 2)) $((head_row - 1)) # release
    if it_wait 3 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q 'sort offset'"; then
        sorted=1
        break
    fi
done
[ $sorted -eq 1 ] || it_fail "a click on the OFFSET head did not sort by offset"
pane >"$IT_TMP/pane.txt"
lane_row=$(grep -n '^n1 ' "$IT_TMP/pane.txt" | tail -1 | cut -d: -f1)
[ -n "$lane_row" ] || it_fail "no timeline lane to scroll over"
# wheel BUTTON SPAN: a wheel step over the lane until the span reads SPAN
# (a step whose sequence came split is sent again, as a click above).
wheel() {
    for _ in 1 2 3; do
        mouse "$1" 80 $((lane_row - 1))
        it_wait 3 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q 'span $2'" && return 0
    done
    return 1
}
wheel 64 200ms || it_fail "the wheel did not zoom in" # up: zoom in around the pointer
wheel 65 400ms || it_fail "the wheel did not zoom out"

# Resizes, down to a window too small to use, and back.
for size in "80 24" "100 30" "40 10" "20 5" "1 1" "160 50"; do
    set -- $size
    "${TM[@]}" resize-window -t t -x "$1" -y "$2" 2>/dev/null || "${TM[@]}" resize-pane -t t -x "$1" -y "$2"
    sleep 0.6
    kill -0 "$DPTEST_PID" 2>/dev/null || it_fail "dptop died at ${1}x${2}: $(cat "$IT_TMP/dptop.err")"
done
"${TM[@]}" resize-window -t t -x 20 -y 5 2>/dev/null
it_wait 5 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q 'small'" || it_fail "no 'too small' notice at 20x5"
# At 80x24 the help is taller than the screen: it scrolls, another key closes it.
"${TM[@]}" resize-window -t t -x 80 -y 24 2>/dev/null
sleep 0.6
"${TM[@]}" send-keys -t t '?'
it_wait 5 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q ' 1–[0-9]* of [0-9]*, ↑↓'" ||
    { pane; it_fail "the help at 80x24 does not say it scrolls"; }
"${TM[@]}" send-keys -t t End
it_wait 5 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q 'the master assumes of it'" ||
    { pane; it_fail "End did not scroll the help to its last line"; }
"${TM[@]}" send-keys -t t Up
it_wait 5 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q 'dptop keys'" || it_fail "Up closed the help"
"${TM[@]}" send-keys -t t x
it_wait 5 sh -c "! tmux -L $SOCK capture-pane -p -t t | grep -q 'dptop keys'" ||
    it_fail "a key did not close the scrolled help"
# At 80x24 the two tables do not both fit: they take turns in one slot,
# and Tab brings the Windows table in place of the nodes and back.
"${TM[@]}" capture-pane -p -t t | grep -q ' Windows: ' && { pane; it_fail "both tables at 80x24?"; }
"${TM[@]}" capture-pane -p -t t | grep -q 'Tab windows' || { pane; it_fail "no 'Tab windows' hint at 80x24"; }
# The focus is on one of the three: at most two Tabs reach the windows.
for _ in 1 2 3; do
    "${TM[@]}" send-keys -t t Tab
    it_wait 5 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q ' Windows: .* edges'" && break
done
"${TM[@]}" capture-pane -p -t t | grep -q ' Windows: .* edges' ||
    { pane; it_fail "Tab did not show the Windows table at 80x24"; }
"${TM[@]}" capture-pane -p -t t | grep -q ' Nodes (' && { pane; it_fail "nodes and windows both shown at 80x24"; }
"${TM[@]}" capture-pane -p -t t | grep -Eq '^n[0-9]+→n[0-9]+ ' || { pane; it_fail "no edge rows in the swapped-in Windows table"; }
"${TM[@]}" capture-pane -p -t t | grep -q 'Tab nodes' || { pane; it_fail "no 'Tab nodes' hint"; }
"${TM[@]}" send-keys -t t Tab  # the timeline: the windows stay shown
sleep 0.5
"${TM[@]}" capture-pane -p -t t | grep -q ' Windows: ' || { pane; it_fail "the windows left when the timeline took the focus"; }
"${TM[@]}" send-keys -t t Tab
it_wait 5 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q ' Nodes ('" || { pane; it_fail "Tab did not bring the nodes back"; }
# At 80x12 the shared slot leaves the timeline its lanes.
"${TM[@]}" resize-window -t t -x 80 -y 12 2>/dev/null
lane_under_timeline() {
    "${TM[@]}" capture-pane -p -t t | awk '/ Timeline /{t=1; next} t && /^n[0-9]+ .*│/{found=1} END{exit !found}'
}
it_wait 5 lane_under_timeline || { pane; it_fail "no timeline lane at 80x12"; }
# Rows the timeline leaves empty go to the Windows table: at 100x40 it
# shows every edge, not a quarter of the rows (4 nodes' lanes per stream do
# not fit there, one lane per node leaves plenty).
all_edges() {
    "${TM[@]}" capture-pane -p -t t >"$IT_TMP/pane.txt"
    edges=$(sed -n 's/.* Windows: \([0-9]*\) edges.*/\1/p' "$IT_TMP/pane.txt")
    shown=$(grep -Eo 'n[0-9]+→n[0-9]+ ' "$IT_TMP/pane.txt" | wc -l)
    [ -n "$edges" ] && [ "$shown" -eq "$edges" ]
}
"${TM[@]}" resize-window -t t -x 100 -y 40 2>/dev/null
it_wait 5 all_edges ||
    { cat "$IT_TMP/pane.txt"; it_fail "at 100x40 the Windows table shows $shown of ${edges:-?} edges"; }
"${TM[@]}" resize-window -t t -x 160 -y 50 2>/dev/null
it_wait 10 fits_ready || { cat "$IT_TMP/pane.txt"; it_fail "the console did not recover after resizing"; }
# Beside the nodes too, the Windows table grows into rows the timeline
# leaves (4 nodes' lanes per stream leave plenty at 50 rows).
it_wait 5 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q ' Nodes (.* Windows: '" ||
    { pane; it_fail "no side-by-side tables at 160x50"; }
it_wait 5 all_edges ||
    { cat "$IT_TMP/pane.txt"; it_fail "at 160x50 the Windows table shows $shown of ${edges:-?} edges"; }

# r records the bus from the console; r again stops; the file replays.
"${TM[@]}" send-keys -t t r
it_wait 10 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q 'REC '" || it_fail "'r' did not start recording"
sleep 2
"${TM[@]}" send-keys -t t r
it_wait 10 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q 'recorded [0-9]* messages'" ||
    it_fail "'r' did not stop recording"
REC=$(ls "$OUT"/dptop-*.dprec | head -1)
"$B/dptop" --replay "$REC" --export "$IT_TMP/rec.json" >"$IT_TMP/rec.out" 2>&1 ||
    it_fail "the console's recording does not export: $(cat "$IT_TMP/rec.out")"
$IT_PY -c "
import json, sys
d = json.load(open('$IT_TMP/rec.json'))
n = sum(1 for e in d['traceEvents'] if e.get('ph') == 'X')
assert n > 500 and {a['node'] for a in d['metadata']['alignment']} == {0, 1, 2, 3}, n
" || it_fail "the console's recording is not self-contained"

# Snapshot: valid Chrome trace JSON, collectives line up across nodes.
"${TM[@]}" send-keys -t t s
it_wait 20 sh -c "ls $OUT/dptop-*.json >/dev/null 2>&1" || it_fail "'s' wrote no snapshot"
it_wait 10 sh -c "tmux -L $SOCK capture-pane -p -t t | grep -q 'snapshot: '" || it_fail "no snapshot path on the status line"
SNAP=$(ls "$OUT"/dptop-*.json | head -1)
$IT_PY - "$SNAP" <<'EOF' || it_fail "the snapshot's collectives do not line up"
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "process_name"}
# One process per node, and the collectives' arrival-skew counter track.
assert len([p for p in names if p < 65536]) == 4, names
assert names.get(65536) == "collectives: arrival skew", names
assert d["metadata"]["collectives"]["instances"] > 0, d["metadata"]["collectives"]
al = d["metadata"]["alignment"]
assert len(al) == 4 and all(a["aligned"] for a in al), al
assert all("offset_ns" in a and "uncertainty_ns" in a for a in al), al
coll = {}
for e in ev:
    if e.get("ph") == "X" and e.get("args", {}).get("collective"):
        coll.setdefault(e["pid"], []).append(e["ts"])
assert sorted(coll) == [0, 1, 2, 3], sorted(coll)
ref = sorted(coll[0])
steps = worst = 0
for t in ref:
    near = [min(coll[p], key=lambda x: abs(x - t)) for p in (1, 2, 3)]
    if any(abs(x - t) > 50000 for x in near):  # that step is not in every node's buffer
        continue
    steps += 1
    worst = max(worst, max(abs(x - t) for x in near))
print("steps compared %d, worst collective start spread %.3f us" % (steps, worst))
assert steps >= 20, steps
assert worst <= 10.0, worst
flows = sum(1 for e in ev if e.get("ph") == "s")
assert flows > 0
EOF

# q: dptop exits, every child is gone.
"${TM[@]}" send-keys -t t q
it_wait 20 test -f "$IT_TMP/exit" || it_fail "dptop did not exit on q"
[ "$(cat "$IT_TMP/exit")" = 0 ] || it_fail "dptop exited with $(cat "$IT_TMP/exit"): $(cat "$IT_TMP/dptop.err")"
for p in $DPTEST_PID $CHILDREN; do
    it_wait 10 sh -c "! kill -0 $p 2>/dev/null" || it_fail "process $p outlived dptop"
done
PG=$(echo "$CHILDREN" | head -1)
pgrep -g "$PG" >/dev/null && it_fail "processes left in the demo's group $PG: $(pgrep -g "$PG" -a)"
grep -q '"all_reaped":true' "$LOG" || it_fail "dptop did not reap every child"
it_pass "4 nodes within 10 µs of the truth, keys, mouse and resizes, aligned snapshot, clean exit"
