#!/usr/bin/env bash
# timeout: 120
# libdptrace end to end: hip_app (fake HIP runtime) under LD_PRELOAD, the
# local link to an ingest endpoint, and every event checked: kinds, names,
# durations, correlation ids (API <-> GPU work), scope ids on every kind,
# the scope tree, snapshot pairs.
. "$(dirname "$0")/lib.sh"

APP=$B/tests/fake_hip/hip_app
LIB=$B/libdptrace.so
DUMP=$B/tests/tools/gpu_ingest_dump
for f in "$APP" "$LIB" "$DUMP"; do
    [ -e "$f" ] || it_skip "$f not built (make tests-build)"
done

EP="ipc://$IT_TMP/trace.sock"
it_spawn dump "$DUMP" "$EP" --ready "$IT_TMP/ready"
DUMP_PID=$IT_PID
it_wait 10 test -f "$IT_TMP/ready" || it_fail "the dump tool did not bind $EP"

STEPS=4 KERNEL_US=2000
DPTOP_TRACE_ENDPOINT=$EP LD_PRELOAD=$LIB "$APP" --steps $STEPS --kernel-us $KERNEL_US \
    >"$IT_TMP/app.log" 2>&1 || it_fail "hip_app failed under libdptrace"
grep -q "hip_app: ok" "$IT_TMP/app.log" || it_fail "hip_app did not finish"
grep -Eq "dptrace: .* 0 dropped" "$IT_TMP/app.log" || it_fail "libdptrace reported drops"
# The last event of the app is its hipDeviceSynchronize.
it_wait 20 grep -q '"name":"hipDeviceSynchronize"' "$IT_TMP/dump.log" ||
    it_fail "the final batch did not arrive"
it_stop "$DUMP_PID"
it_wait 10 grep -q '"msg":"stats"' "$IT_TMP/dump.log" || it_fail "no stats from the dump tool"

"$IT_PY" - "$IT_TMP/dump.log" "$STEPS" "$KERNEL_US" <<'PY' || it_fail "trace check failed"
import collections, json, sys
from gpu_dump import check, load

path, steps, kernel_us = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
msgs, events = load(path)

stats = [m for m in msgs if m["msg"] == "stats"][-1]
check(stats["rejected"] == 0, "the receiver rejected messages: %s" % stats)
check(stats["unknown_names"] == 0, "events used names never sent")
proc = [m for m in msgs if m["msg"] == "proc"]
check(proc and proc[0]["exe"] == "hip_app" and proc[0]["backend"] == "hip", "proc hello")
check(proc[0]["devices"] == 2, "device count from the fake runtime")
evmsgs = [m for m in msgs if m["msg"] == "ev"]
check(evmsgs[-1]["dropped_total"] == 0, "dropped_total in the batch header")
snaps = [m for m in msgs if m["msg"] == "snap"]
check(any(m["domains"] == ["gpu0", "trace"] for m in snaps), "gpu0/trace snapshot pairs")

kinds = collections.Counter(e["ev"] for e in events)
per_step = {"kernel": 5, "memcpy": 2, "memset": 1, "api": 8, "range": 3, "step": 1, "instant": 1}
for k, n in per_step.items():
    check(kinds[k] == n * steps, "%d %s events, expected %d" % (kinds[k], k, n * steps))
check(kinds["sync"] == 2 * steps + 1, "sync events")

names = collections.Counter(e["name"] for e in events if e["ev"] == "kernel")
check(names == {"fwd_gemm": steps, "bwd_gemm": steps, "unregistered_kernel": steps,
                "mod_kernel": 2 * steps}, "kernel names %s" % names)
for e in events:
    if e["ev"] == "kernel":
        d = e["end"] - e["start"]
        check(0.9 * kernel_us * 1000 <= d <= kernel_us * 1000 + 200e6,
              "kernel %s lasted %d ns" % (e["name"], d))
        check(e["flags"] & 1, "kernel times are device times")
    check(e["end"] >= e["start"], "an event ends before it starts")

# Launch geometry: hipLaunchKernel and hipExtModuleLaunchKernel (global size).
fwd = [e for e in events if e["name"] == "fwd_gemm"][0]
check(fwd["grid"] == [4, 2, 1] and fwd["block"] == [256, 1, 1], "fwd_gemm geometry")
mods = sorted([e for e in events if e["name"] == "mod_kernel"], key=lambda e: e["corr"])
check(mods[0]["grid"] == [8, 1, 1] and mods[1]["grid"] == [4, 1, 1], "module launch geometry")

copies = [e for e in events if e["ev"] == "memcpy"]
check(sorted((c["copy"], c["bytes"]) for c in copies) ==
      sorted([("h2d", 1 << 20)] * steps + [("d2h", 65536)] * steps), "memcpy kinds and sizes")
check(all(e["bytes"] == 4096 for e in events if e["ev"] == "memset"), "memset sizes")
check(all(c["stream"] == 0 for c in copies if c["copy"] == "d2h"), "sync hipMemcpy on stream 0")

# Correlation: each API call <-> exactly one GPU operation, same thread and scope.
gpu_kinds = ("kernel", "memcpy", "memset")
by_corr = collections.defaultdict(list)
for e in events:
    if e["corr"]:
        by_corr[e["corr"]].append(e)
expect = {"hipLaunchKernel": "kernel", "hipModuleLaunchKernel": "kernel",
          "hipExtLaunchKernel": "kernel", "hipExtModuleLaunchKernel": "kernel",
          "hipMemcpyAsync": "memcpy", "hipMemsetAsync": "memset", "hipMemcpy": "memcpy"}
for e in events:
    if e["ev"] != "api":
        continue
    group = by_corr[e["corr"]]
    ops = [g for g in group if g["ev"] in gpu_kinds]
    check(len(group) == 2 and len(ops) == 1, "corr %d links %d events" % (e["corr"], len(group)))
    op = ops[0]
    check(op["ev"] == expect[e["name"]], "%s launched a %s" % (e["name"], op["ev"]))
    check(op["tid"] == e["tid"] and op["scope"] == e["scope"], "API and GPU op agree")
    check(op["stream"] == e["stream"], "API and GPU op on one stream")
    # Generous: fake worker threads and the snapshot midpoint blur by ms.
    check(op["start"] >= e["start"] - 20e6, "GPU work started long before its launch")

# Scope ids on every kind; the tree child -> parent, each id recorded once.
pairs = [p for m in msgs if m["msg"] == "scope" for p in m["pairs"]]
children = [p[0] for p in pairs]
check(len(children) == len(set(children)), "a scope id was recorded twice")
parent = dict(pairs)
ranges = {e["scope"]: e for e in events if e["ev"] in ("range", "step")}
check(len(ranges) == 4 * steps, "range ids are unique")
for e in events:
    if e["ev"] == "sync" and e["name"] == "hipDeviceSynchronize":
        check(e["scope"] == 0, "device sync is outside every range")
        continue
    check(e["scope"] != 0 and e["scope"] in parent, "%s %s has no scope" % (e["ev"], e["name"]))
for sid, r in ranges.items():
    if r["ev"] == "step":
        check(parent[sid] == 0, "a step is a root")
    else:
        check(ranges[parent[sid]]["ev"] == "step", "%s is inside a step" % r["name"])
for e in events:
    if e["ev"] == "kernel":
        want = "forward" if e["name"] == "fwd_gemm" else None
        if want:
            check(ranges[e["scope"]]["name"] == want, "fwd_gemm runs in forward")
    if e["ev"] == "instant":
        check(ranges[e["scope"]]["ev"] == "step", "the mark is in its step")
check(sorted(r["step"] for r in ranges.values() if r["ev"] == "step") == list(range(steps)),
      "step numbers")
print("trace OK: %d events, %d scope pairs" % (len(events), len(pairs)))
PY

# The snapshot period (SPEC 3): DPTOP_SNAPSHOT_PERIOD_MS, the agents', sets
# libdptrace's too unless DPTOP_TRACE_SNAPSHOT_MS is given; about 1 s of work.
snaps() {
    local name=snapdump-$1 pid
    it_spawn "$name" "$DUMP" "$EP" --ready "$IT_TMP/ready-$1"
    pid=$IT_PID
    it_wait 10 test -f "$IT_TMP/ready-$1" || it_fail "the dump tool did not bind $EP"
    shift
    env "$@" DPTOP_TRACE_ENDPOINT="$EP" LD_PRELOAD="$LIB" "$APP" --steps 100 --kernel-us 2000 \
        >/dev/null 2>&1 || it_fail "hip_app failed with $*"
    it_wait 20 grep -q '"name":"hipDeviceSynchronize"' "$IT_TMP/$name.log" ||
        it_fail "$*: the final batch did not arrive"
    it_stop "$pid"
    grep -c '"msg":"snap"' "$IT_TMP/$name.log"
}
base=$(snaps a DPTEST_NONE=1)
fast=$(snaps b DPTOP_SNAPSHOT_PERIOD_MS=20)
own=$(snaps c DPTOP_SNAPSHOT_PERIOD_MS=20 DPTOP_TRACE_SNAPSHOT_MS=300)
echo "snapshot pairs: default $base, DPTOP_SNAPSHOT_PERIOD_MS=20 $fast, and TRACE_SNAPSHOT_MS=300 $own"
# 5x and 1/3 at nominal; three runs of one app last as long as the machine
# lets them, so the bounds keep a factor of 2.5 of room.
[ "$fast" -ge $((2 * base)) ] && [ "$own" -lt "$base" ] ||
    it_fail "snapshot periods not followed: $base / $fast / $own"
it_pass "libdptrace captured every kind with correlation and scopes; snapshot period followed"
