#!/usr/bin/env bash
# timeout: 90
# Two traced processes on one node (fake HIP runtime, libdptrace preloaded)
# recorded through the agent and replayed in the console: each process's
# GPU queues get lanes of their own, told apart by pid (both have a gpu0 s1).
source "$(dirname "$0")/lib.sh"
command -v tmux >/dev/null || it_skip "tmux is not installed"
APP=$B/tests/fake_hip/hip_app
LIB=$B/libdptrace.so
for f in "$B/dpnode" "$B/dptop" "$APP" "$LIB"; do
    [ -e "$f" ] || it_skip "$f not built (make tests-build)"
done
port=$(it_ports 4) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
EP="ipc://$IT_TMP/trace.sock"
it_spawn master "$B/dpnode" --master --listen "$H" --trace-endpoint "$EP" --bind-ip 127.0.0.1 \
    --probe-port $((port + 3))
it_wait 20 grep -q "trace endpoint $EP" "$IT_TMP/master.log" || it_fail "the agent did not bind $EP"
it_spawn rec "$B/dptop" --record "$IT_TMP/run.dprec" --hub "$H"
REC=$IT_PID
it_wait 20 grep -q 'recording' "$IT_TMP/rec.log" || it_fail "the recorder did not start"
pids=()
for i in 1 2; do
    DPTOP_TRACE_ENDPOINT=$EP LD_PRELOAD=$LIB "$APP" --steps 3 --kernel-us 20000 \
        >"$IT_TMP/app$i.log" 2>&1 &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || it_fail "hip_app failed: $(cat "$IT_TMP"/app*.log)"; done
sleep 2
kill -INT "$REC"
it_wait 20 bash -c "! kill -0 $REC 2>/dev/null" || it_fail "the recorder did not stop"

SOCK="dptop-twoproc-$$"
TM=(tmux -L "$SOCK" -f /dev/null)
trap '"${TM[@]}" kill-server 2>/dev/null; it_cleanup' EXIT
"${TM[@]}" new-session -d -s t -x 120 -y 40 \
    "env LANG=C.UTF-8 LC_ALL=C.UTF-8 $B/dptop --replay $IT_TMP/run.dprec --speed 0"
it_wait 20 bash -c "[ \$(${TM[*]} capture-pane -p -t t | grep -oE '^ gpu0 s1 p[0-9]+' | sort -u | wc -l) -eq 2 ]" ||
    { "${TM[@]}" capture-pane -p -t t; it_fail "the two processes' queues are not told apart"; }
"${TM[@]}" capture-pane -p -t t | grep -E '^ gpu0 s1 p'
"${TM[@]}" send-keys -t t q
# The XSpace: one GPU plane holds both processes' stream 1 on two lines,
# with ids unique in 32 bits (xprof's resource id) and the pids in the names.
"$B/dptop" --replay "$IT_TMP/run.dprec" --export "$IT_TMP/run.xplane.pb" >"$IT_TMP/x.out" 2>&1 ||
    it_fail "XSpace export failed: $(cat "$IT_TMP/x.out")"
$IT_PY - "$IT_ROOT/tests/integration/xplane_check.py" "$IT_TMP/run.xplane.pb" <<'EOF' ||
import importlib.util, sys
spec = importlib.util.spec_from_file_location("xplane_check", sys.argv[1])
xc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(xc)
views = xc.plane_views(xc.load(sys.argv[2]))
gpu = [v for n, v in views.items() if n.startswith("/device:GPU:")]
lines = [ln for v in gpu for ln in v["lines"]
         if ln["name"].startswith("Stream #1 (pid ") and "(overlaps" not in ln["name"]]
print("GPU lines of stream 1:", [(ln["id"], ln["name"]) for ln in lines])
assert len(lines) == 2 and len({ln["id"] for ln in lines}) == 2, lines
EOF
    it_fail "the two processes' stream 1 do not get lines of their own"
it_pass "two processes on one node: gpu0 s1 of each in its own lane and XSpace line, with its pid"
