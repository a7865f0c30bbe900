#!/usr/bin/env bash
# timeout: 150
# The console and a master that comes and goes, in tmux:
#   - started before any master: the header says NO MASTER; once the
#     master is heard its state (name tables, plan) is fetched, so every
#     event is named in a snapshot, the master's own included;
#   - the master killed with SIGKILL: the header says MASTER SILENT within
#     seconds (the node table alone would go on claiming every node up);
#   - the master started again: the console fetches the new master's state
#     and its events are named too, and the warnings stay in the log (L).
# A private tmux server (-L) is used, so no other tmux session is touched.
source "$(dirname "$0")/lib.sh"

command -v tmux >/dev/null || it_skip "tmux is not installed"
[ -x "$B/dptop" ] && [ -x "$B/dpnode" ] || it_skip "dptop or dpnode not built"

port=$(it_ports 4) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
COMMON=(--trace-endpoint none --heartbeat-ms 300 --status-period-ms 300 --bind-ip 127.0.0.1
    --sim-workload)
OUT=$IT_TMP/out
mkdir -p "$OUT"

SOCK="dptop-restart-$$"
TM=(tmux -L "$SOCK" -f /dev/null)
trap '"${TM[@]}" kill-server 2>/dev/null; it_cleanup' EXIT
"${TM[@]}" new-session -d -s t -x 200 -y 45 \
    "env LANG=C.UTF-8 LC_ALL=C.UTF-8 $B/dptop --hub $H --output-dir $OUT --state-timeout-ms 300 2>$IT_TMP/dptop.err"
pane() { "${TM[@]}" capture-pane -p -t t >"$IT_TMP/pane.txt"; }
shows() {
    pane
    grep -Eq "$1" "$IT_TMP/pane.txt"
}

it_wait 20 shows 'NO MASTER [0-9]+s' || { cat "$IT_TMP/pane.txt"; it_fail "no NO MASTER in the header"; }

it_spawn master "$B/dpnode" --master --listen "$H" --hub "$H" --probe-port $((port + 3)) "${COMMON[@]}"
MASTER=$IT_PID
it_spawn agent "$B/dpnode" --hub "$H" "${COMMON[@]}" --sim-clock 2000000,10
it_wait 40 shows 'LIVE tcp.*nodes 2/2 up' || { cat "$IT_TMP/pane.txt"; it_fail "never LIVE with 2 nodes"; }

# Every event of a snapshot named (a name table missed shows as kind#id).
snapshot() {
    local before n
    before=$(ls "$OUT"/dptop-*.json 2>/dev/null | wc -l)
    "${TM[@]}" send-keys -t t s
    it_wait 20 bash -c "[ \$(ls $OUT/dptop-*.json 2>/dev/null | wc -l) -gt $before ]" ||
        it_fail "'s' wrote no snapshot"
    it_wait 20 shows 'snapshot: ' || it_fail "the snapshot did not finish"
    SNAP=$(ls -t "$OUT"/dptop-*.json | head -1)
}
named() {
    $IT_PY - "$SNAP" "$1" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
ev = [e for e in d["traceEvents"] if e.get("ph") in ("X", "i", "I", "B", "E")]
pids = {e["pid"] for e in ev}
bad = [e["name"] for e in ev if re.match(r"^[a-z_]+#\d+$", e.get("name", ""))]
print("%s: %d events, %d processes, %d unnamed %s" % (sys.argv[2], len(ev), len(pids), len(bad), sorted(set(bad))[:8]))
sys.exit(0 if len(ev) > 100 and not bad else 1)
PY
}
sleep 3
snapshot
named "first master" || it_fail "events without names while the master was new"

kill -9 "$MASTER"
it_wait 30 shows 'MASTER SILENT [0-9]+s' || { cat "$IT_TMP/pane.txt"; it_fail "the header did not say the master is silent"; }
grep -E 'MASTER SILENT' "$IT_TMP/pane.txt" | head -1

it_spawn master2 "$B/dpnode" --master --listen "$H" --hub "$H" --probe-port $((port + 3)) "${COMMON[@]}"
it_wait 40 shows 'LIVE tcp.*nodes 2/2 up' || { cat "$IT_TMP/pane.txt"; it_fail "never LIVE again"; }
sleep 3
snapshot
named "after the restart" || it_fail "the new master's events without names"

"${TM[@]}" send-keys -t t L
it_wait 10 shows 'log, newest first' || it_fail "L did not open the log"
grep -Eq 'W dptop: (the master answers again|the master restarted)' "$IT_TMP/pane.txt" ||
    { cat "$IT_TMP/pane.txt"; it_fail "the log does not keep the console's warning"; }
"${TM[@]}" send-keys -t t x q
it_pass "NO MASTER before it, MASTER SILENT after a kill -9, every event named before and after a restart"
