#!/usr/bin/env bash
# timeout: 180
# The receiver comes and goes: it starts after the application, and is
# replaced by a new one mid-run.  Each receiver must get the hello, every
# name, the scope pairs its events use and a GPU/trace snapshot pair
# (libdptrace re-sends its state on each new connection; with one snapshot
# a minute, the run's only pair went out before any receiver was there);
# what could not be delivered is counted as dropped.
. "$(dirname "$0")/lib.sh"

APP=$B/tests/fake_hip/hip_app
LIB=$B/libdptrace.so
DUMP=$B/tests/tools/gpu_ingest_dump
for f in "$APP" "$LIB" "$DUMP"; do
    [ -e "$f" ] || it_skip "$f not built (make tests-build)"
done
EP="ipc://$IT_TMP/trace.sock"

# About 3 s of work: 300 steps of 5 kernels of 2 ms.
DPTOP_TRACE_ENDPOINT=$EP DPTOP_TRACE_SNAPSHOT_MS=60000 LD_PRELOAD=$LIB \
    "$APP" --steps 300 --kernel-us 2000 \
    >"$IT_TMP/app.log" 2>&1 &
APP_PID=$!
IT_PIDS+=("$APP_PID")
sleep 0.5
it_spawn dump1 "$DUMP" "$EP" --ready "$IT_TMP/ready1"
D1=$IT_PID
it_wait 20 grep -q '"ev":"kernel"' "$IT_TMP/dump1.log" || it_fail "the first receiver got nothing"
sleep 0.5
it_stop "$D1"
it_spawn dump2 "$DUMP" "$EP" --ready "$IT_TMP/ready2"
D2=$IT_PID
wait "$APP_PID" || it_fail "hip_app failed"
it_wait 20 grep -q '"name":"hipDeviceSynchronize"' "$IT_TMP/dump2.log" ||
    it_fail "the second receiver did not get the end of the run"
it_stop "$D2"
it_wait 10 grep -q '"msg":"stats"' "$IT_TMP/dump2.log" || it_fail "no stats"
grep "dptrace: " "$IT_TMP/app.log"

"$IT_PY" - "$IT_TMP/dump1.log" "$IT_TMP/dump2.log" <<'PY' || it_fail "trace check failed"
import json, sys

def check(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)

total = 0
for path in sys.argv[1:]:
    msgs, events = [], []
    for line in open(path):
        if line.startswith("{"):
            o = json.loads(line)
            (events if "ev" in o else msgs).append(o)
    stats = [m for m in msgs if m["msg"] == "stats"][-1]
    check(stats["rejected"] == 0, "%s: rejected messages" % path)
    check(stats["unknown_names"] == 0, "%s: events with names never received" % path)
    check(any(m["msg"] == "proc" for m in msgs), "%s: no hello" % path)
    first_ev = next(i for i, m in enumerate(msgs) if m["msg"] == "ev")
    first_proc = next(i for i, m in enumerate(msgs) if m["msg"] == "proc")
    check(first_proc < first_ev, "%s: events before the hello" % path)
    snap = [i for i, m in enumerate(msgs) if m["msg"] == "snap" and m["domains"] == ["gpu0", "trace"]]
    check(snap and snap[0] < first_ev, "%s: no GPU/trace snapshot pair before the events" % path)
    parent = dict(p for m in msgs if m["msg"] == "scope" for p in m["pairs"])
    missing = [e for e in events if e["scope"] and e["scope"] not in parent]
    check(not missing, "%s: %d events in scopes never received" % (path, len(missing)))
    check(len(events) > 100, "%s: only %d events" % (path, len(events)))
    total += len(events)
print("reconnect OK: %d events over two receivers" % total)
PY
line=$(grep "dptrace: " "$IT_TMP/app.log")
dropped=$(sed -n 's/.* \([0-9]*\) dropped$/\1/p' <<<"$line")
[ "${dropped:-0}" -gt 0 ] || it_fail "events sent while nobody listened were not counted as dropped"
it_pass "late and replaced receivers got a consistent trace; $dropped drops counted"
