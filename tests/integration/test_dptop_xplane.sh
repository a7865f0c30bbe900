#!/usr/bin/env bash
# timeout: 150
# XSpace and window-statistics export of a recording.  A master and two
# agents with simulated clocks (+3 ms / +20 ppm, -5 ms / -30 ppm) and the
# simulated training workload; `dptop --record` until the recording holds a
# few windows in which every node is aligned (polled by exporting the growing
# file).  Then `dptop --replay REC --export out.xplane.pb --export-windows
# out.jsonl`, the Chrome export of the same recording, and one XSpace per node
# into a directory; xplane_check.py decodes the protobuf from the wire format
# (no protobuf package) and checks planes, task environment, hostnames, step
# markers, kernels, the scope tree, the collectives' alignment across nodes
# (10 µs), agreement with the Chrome export, and the window lines; the
# sanitizer build (when given) must write the same bytes.  Finally
# the failures: unwritable outputs (exit 1, nothing left behind), bad usage
# (exit 2), and a damaged recording (exported, with the damage in the
# XSpace's warnings).
source "$(dirname "$0")/lib.sh"

[ -x "$B/dptop" ] && [ -x "$B/dpnode" ] || it_skip "dptop or dpnode not built in $B"
CHECK="$IT_ROOT/tests/integration/xplane_check.py"
REC="$IT_TMP/run.dprec"

P=$(it_ports 3) || it_skip "no free ports"
HUB="tcp://127.0.0.1:$P"
common=(--hub="$HUB" --bind-ip=127.0.0.1 --sim-workload --trace-endpoint=none)
it_spawn master "$B/dpnode" --master --listen="$HUB" --node-id=0 --sim-clock=0,0 "${common[@]}"
it_wait 20 sh -c "ss -Hltn 'sport = :$P' | grep -q ." || it_fail "the master did not bind $HUB"
it_spawn agent1 "$B/dpnode" --node-id=1 --sim-clock=3000000,20 "${common[@]}"
it_spawn agent2 "$B/dpnode" --node-id=2 --sim-clock=-5000000,-30 "${common[@]}"
it_spawn rec "$B/dptop" --record "$REC" --hub "$HUB"
RECPID=$IT_PID

# Enough data: 5 windows in which all three nodes have an aligned node fit
# (the growing recording reads back up to its last whole frame).
aligned_windows() {
    "$B/dptop" --replay "$REC" --export-windows "$IT_TMP/poll.jsonl" >/dev/null 2>&1 || return 1
    $IT_PY - "$IT_TMP/poll.jsonl" <<'EOF'
import json, sys
per = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d["type"] == "node_fit" and d["aligned"]:
        per.setdefault(d["window"], set()).add(d["node"])
sys.exit(0 if sum(1 for s in per.values() if len(s) == 3) >= 5 else 1)
EOF
}
deadline=$((SECONDS + 90))
until aligned_windows; do
    [ $SECONDS -lt $deadline ] || it_fail "the recording never held 5 aligned windows"
    sleep 1
done
kill -INT "$RECPID"
it_wait 20 sh -c "! kill -0 $RECPID 2>/dev/null" || it_fail "the recorder did not stop"
grep -q "recorded" "$IT_TMP/rec.log" || it_fail "no recorder summary: $(cat "$IT_TMP/rec.log")"
for p in "${IT_PIDS[@]}"; do it_stop "$p"; done

# The exports.
"$B/dptop" --replay "$REC" --export "$IT_TMP/out.xplane.pb" \
    --export-windows "$IT_TMP/out.jsonl" >"$IT_TMP/xplane.out" 2>&1 ||
    it_fail "XSpace export failed: $(cat "$IT_TMP/xplane.out")"
cat "$IT_TMP/xplane.out"
grep -q "planes" "$IT_TMP/xplane.out" || it_fail "no XSpace export summary"
grep -q "edge_fit" "$IT_TMP/xplane.out" || it_fail "no window export summary"
[ ! -e "$IT_TMP/out.xplane.pb.tmp" ] && [ ! -e "$IT_TMP/out.jsonl.tmp" ] ||
    it_fail "temporary files left behind"
"$B/dptop" --replay "$REC" --export "$IT_TMP/out.json" >"$IT_TMP/chrome.out" 2>&1 ||
    it_fail "Chrome export failed: $(cat "$IT_TMP/chrome.out")"
mkdir "$IT_TMP/per"
"$B/dptop" --replay "$REC" --export "$IT_TMP/per" --format xplane >"$IT_TMP/per.out" 2>&1 ||
    it_fail "per-node export failed: $(cat "$IT_TMP/per.out")"

# Three nodes make one loop, so the fits claim up to a few µs (the path
# asymmetry's size rests on one residual); steps are held to 10 µs where
# every node claims half of that.
$IT_PY "$CHECK" "$IT_TMP/out.xplane.pb" --nodes 3 --windows "$IT_TMP/out.jsonl" \
    --chrome "$IT_TMP/out.json" --per-node "$IT_TMP/per" --max-skew-ns 10000 --max-unc-ns 5000 \
    >"$IT_TMP/check.out" 2>&1 || { cat "$IT_TMP/check.out"; it_fail "the XSpace check failed"; }
cat "$IT_TMP/check.out"

# The sanitizer build, when there is one, writes the same bytes (the export
# is deterministic) without a finding.
A=${DPTEST_ASAN_BUILD:-}
if [ -n "$A" ] && [ -x "$A/dptop" ]; then
    ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
        "$A/dptop" --replay "$REC" --export "$IT_TMP/asan.xplane.pb" \
        --export-windows "$IT_TMP/asan.jsonl" >"$IT_TMP/asan.out" 2>&1 ||
        it_fail "the ASan build's export failed: $(tail -n 30 "$IT_TMP/asan.out")"
    cmp -s "$IT_TMP/asan.xplane.pb" "$IT_TMP/out.xplane.pb" &&
        cmp -s "$IT_TMP/asan.jsonl" "$IT_TMP/out.jsonl" ||
        it_fail "the ASan build wrote different files"
    echo "ASan build: the same XSpace and window lines"
fi

# --format picks the format whatever the name says.
"$B/dptop" --replay "$REC" --export "$IT_TMP/named.json" --format xplane >/dev/null 2>&1 ||
    it_fail "--format xplane failed"
$IT_PY "$CHECK" "$IT_TMP/named.json" --nodes 3 >/dev/null 2>&1 ||
    it_fail "--format xplane did not write an XSpace"

# Failures.  Unwritable places (a path under a regular file: refused even for
# root): exit 1, a message, and nothing under the final names.
touch "$IT_TMP/afile"
for args in "--export $IT_TMP/afile/x.xplane.pb" "--export-windows $IT_TMP/afile/w.jsonl" \
    "--export $IT_TMP/out2.xplane.pb --export-windows $IT_TMP/afile/w.jsonl"; do
    # shellcheck disable=SC2086
    "$B/dptop" --replay "$REC" $args >"$IT_TMP/bad.out" 2>&1
    rc=$?
    [ $rc -eq 1 ] || it_fail "unwritable output ($args): exit $rc, want 1"
    grep -q "afile" "$IT_TMP/bad.out" || it_fail "no message naming the path: $(cat "$IT_TMP/bad.out")"
done
[ ! -e "$IT_TMP/out2.xplane.pb" ] && [ ! -e "$IT_TMP/out2.xplane.pb.tmp" ] ||
    it_fail "a failed export left a file behind"
"$B/dptop" --replay "$REC" --export "$IT_TMP/per" --format chrome >"$IT_TMP/bad.out" 2>&1
[ $? -eq 1 ] || it_fail "a Chrome trace into a directory was not refused"
"$B/dptop" --replay "$REC" --export "$IT_TMP/x.pb" --format protobuf >"$IT_TMP/bad.out" 2>&1
[ $? -eq 2 ] && grep -q "format" "$IT_TMP/bad.out" || it_fail "a bad --format was not refused"
"$B/dptop" --export-windows "$IT_TMP/w.jsonl" >"$IT_TMP/bad.out" 2>&1
[ $? -eq 2 ] && grep -q "replay" "$IT_TMP/bad.out" || it_fail "--export-windows without --replay"
"$B/dptop" --replay "$REC" --export "$IT_TMP/same" --export-windows "$IT_TMP/same" \
    >"$IT_TMP/bad.out" 2>&1
[ $? -eq 2 ] || it_fail "one file for both exports was not refused"

# A damaged copy (garbage at 40 %, the tail cut): exported, the damage in
# the XSpace's warnings.
$IT_PY - "$REC" "$IT_TMP/bad.dprec" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
at = len(b) * 4 // 10
b[at:at + 64] = b"\xa5" * 64
open(sys.argv[2], "wb").write(bytes(b[:-100]))
EOF
"$B/dptop" --replay "$IT_TMP/bad.dprec" --export "$IT_TMP/bad.xplane.pb" >"$IT_TMP/bad.out" 2>&1 ||
    it_fail "export of a damaged recording failed: $(cat "$IT_TMP/bad.out")"
$IT_PY - "$CHECK" "$IT_TMP/bad.xplane.pb" <<'EOF' || it_fail "the damage is not in the warnings"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("xplane_check", sys.argv[1])
xc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(xc)
space = xc.load(sys.argv[2])
warn = space.get("warnings", [])
print("damaged recording: %d planes, warnings %s" % (len(space["planes"]), warn))
assert any("corrupt" in w for w in warn), warn
EOF
it_pass "XSpace and window statistics exported and checked from the wire format"
