#!/usr/bin/env bash
# Screenshots of the real console: runs `dptop --demo` in a private tmux
# server of fixed size, captures the pane with its colours
# (capture-pane -e -p), renders each capture to HTML with aha and to PNG with
# headless Chromium, into screenshots/:
#
#   dptop-main     the whole console on the 4-node demo (aligned)
#   dptop-help     the help overlay
#   dptop-aligned  paused and zoomed in on a step: collectives line up
#   dptop-raw      the same moment on raw clocks: staggered by the offsets
#   dptop-collectives  the collectives view, jumped to an instance
#
# Usage: scripts/screenshots.sh [BUILD_DIR]   (make screenshots)
# Installs aha and chromium when missing (scripts/deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
OUTDIR=screenshots
COLS=170
ROWS=46

bash scripts/deps.sh aha chromium
for f in "$BUILD/dptop" "$BUILD/dpnode"; do
    [ -x "$f" ] || { echo "screenshots: $f is not built (make all)" >&2; exit 1; }
done
CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
[ -n "$CHROMIUM" ] || { echo "screenshots: no chromium" >&2; exit 1; }

TMP=$(mktemp -d /tmp/dptop-shots.XXXXXX)
SOCK="dptop-shots-$$"
TM=(tmux -L "$SOCK" -f /dev/null)
cleanup() {
    "${TM[@]}" kill-server 2>/dev/null || true
    # dptop stops its demo children on SIGHUP; make sure nothing is left.
    if [ -f "$TMP/demo.log" ]; then
        sleep 1
        for p in $(sed -n 's/.*"\(dptop_pid\|pid\)":\([0-9]*\).*/\2/p' "$TMP/demo.log"); do
            kill -KILL "$p" 2>/dev/null || true
        done
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT

wait_for() { # wait_for SECS PATTERN: until the pane shows PATTERN
    local i
    for i in $(seq 1 $(($1 * 10))); do
        "${TM[@]}" capture-pane -p -t shot | grep -qE "$2" && return 0
        sleep 0.1
    done
    echo "screenshots: timed out waiting for '$2'" >&2
    "${TM[@]}" capture-pane -p -t shot >&2
    return 1
}

render() { # render NAME TITLE: the pane now -> OUTDIR/NAME.html and NAME.png
    local name=$1 title=$2
    "${TM[@]}" capture-pane -e -p -t shot >"$TMP/$name.ansi"
    {
        printf '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>%s</title>\n' "$title"
        printf '<style>body{margin:0;background:#000;color:#ddd}'
        printf 'pre{margin:8px;font-family:"DejaVu Sans Mono",monospace;font-size:13px;'
        printf 'line-height:16px;white-space:pre}</style></head><body><pre>'
        aha --black --no-header <"$TMP/$name.ansi"
        printf '</pre></body></html>\n'
    } >"$OUTDIR/$name.html"
    local w=$((COLS * 8 + 16)) h=$((ROWS * 16 + 16))
    "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run \
        --user-data-dir="$TMP/chromium-profile" --hide-scrollbars \
        --screenshot="$PWD/$OUTDIR/$name.png" --window-size="$w,$h" \
        "file://$PWD/$OUTDIR/$name.html" >"$TMP/chromium.log" 2>&1 ||
        { cat "$TMP/chromium.log" >&2; return 1; }
    echo "screenshots: $OUTDIR/$name.png"
}

mkdir -p "$OUTDIR"
"${TM[@]}" new-session -d -s shot -x "$COLS" -y "$ROWS" \
    "env LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=xterm-256color $PWD/$BUILD/dptop --demo \
     --demo-log $TMP/demo.log --output-dir $TMP 2>$TMP/dptop.err"
# Four aligned nodes in the table, then a few seconds of timeline.
wait_for 90 '^n3 +[^ ]+ +up +[+-][0-9]'
sleep 6
render dptop-main "dptop: the console on the 4-node demo"

"${TM[@]}" send-keys -t shot '?'
wait_for 10 'dptop keys'
render dptop-help "dptop: keys"
"${TM[@]}" send-keys -t shot x
sleep 0.5
"${TM[@]}" send-keys -t shot L
wait_for 10 'log, newest first'
render dptop-log "dptop: the log, the nodes' messages and alerts"
"${TM[@]}" send-keys -t shot x
sleep 0.5

# Freeze the view, one lane per node, 100 ms: a step's collective on each.
"${TM[@]}" send-keys -t shot ' ' + e
sleep 1
render dptop-aligned "dptop: aligned clocks, the collectives line up"
"${TM[@]}" send-keys -t shot a
wait_for 10 'RAW: each node'
sleep 0.5
render dptop-raw "dptop: raw clocks, the collectives are staggered by the clock offsets"
# Back to aligned and live; the collectives view, and a jump to an instance.
"${TM[@]}" send-keys -t shot a End c
wait_for 20 'Collectives: [1-9]'
sleep 2
"${TM[@]}" send-keys -t shot j Enter
wait_for 10 'allreduce #[0-9]+: '
sleep 0.5
render dptop-collectives "dptop: collectives, the last rank and its lateness against the clocks' uncertainty"
"${TM[@]}" send-keys -t shot q
sleep 2
