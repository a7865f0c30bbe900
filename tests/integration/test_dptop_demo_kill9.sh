#!/usr/bin/env bash
# timeout: 120
# dptop --demo killed with SIGKILL (no chance to clean up): its dpnode
# children must still go (PR_SET_PDEATHSIG), within a few seconds.  The demo
# runs with a DPTOP_CONFIG file of dptop's own keys, which its dpnode
# children must not read (they would refuse the keys and exit).
source "$(dirname "$0")/lib.sh"

command -v tmux >/dev/null || it_skip "tmux is not installed"
[ -x "$B/dptop" ] && [ -x "$B/dpnode" ] || it_skip "dptop or dpnode not built in $B"
SOCK="dptop-k9-$$"
TM=(tmux -L "$SOCK" -f /dev/null)
LOG="$IT_TMP/demo.log"
trap '"${TM[@]}" kill-server 2>/dev/null; for p in $(sed -n "s/.*\"pid\":\([0-9]*\).*/\1/p" "$LOG" 2>/dev/null); do kill -KILL $p 2>/dev/null; done; it_cleanup' EXIT

echo '{"fps": 5}' >"$IT_TMP/dptop.json"
"${TM[@]}" new-session -d -s k -x 120 -y 40 \
    "env LANG=C.UTF-8 TMPDIR=$IT_TMP DPTOP_CONFIG=$IT_TMP/dptop.json $B/dptop --demo 3 \
     --demo-log $LOG 2>$IT_TMP/dptop.err; sleep 30"
it_wait 30 sh -c "[ \$(grep -c '\"type\":\"child\"' $LOG 2>/dev/null) -eq 3 ]" || it_fail "the demo did not start 3 nodes"
it_wait 30 sh -c "tmux -L $SOCK capture-pane -p -t k | grep -q 'nodes 3/3 up'" || it_fail "the demo never had 3 nodes up"
DPTOP=$(sed -n 's/.*"dptop_pid":\([0-9]*\).*/\1/p' "$LOG")
CHILDREN=$(sed -n 's/.*"type":"child".*"pid":\([0-9]*\).*/\1/p' "$LOG")
for p in $CHILDREN; do kill -0 "$p" 2>/dev/null || it_fail "child $p is not running"; done
kill -KILL "$DPTOP"
for p in $CHILDREN; do
    it_wait 15 sh -c "! kill -0 $p 2>/dev/null" || it_fail "child $p outlived a SIGKILLed dptop"
done
it_pass "every child of a SIGKILLed dptop --demo exited"
