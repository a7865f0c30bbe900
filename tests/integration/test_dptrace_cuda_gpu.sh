#!/usr/bin/env bash
# timeout: 180
# libdptrace_cupti.so on a real NVIDIA GPU: cuda_app (tests/cuda) runs with
# CUDA_INJECTION64_PATH, once into an ingest endpoint where every event is
# checked (kinds, names, sizes, correlation API <-> GPU work, scopes, GPU
# times mapped onto the trace clock: a synchronous copy lies inside its
# cudaMemcpy call, a kernel starts after its launch, a spin kernel lasts its
# set time; only the calls that do or wait for work), then, recording every
# runtime call, once under each of two dpnode agents (one with a simulated
# clock 3 ms off) with `dptop --record`: in the export both programs'
# kernels must sit where the GPU's own clock puts them.
# Skipped where no NVIDIA GPU answers (every build machine of the project).
. "$(dirname "$0")/lib.sh"

APP=$B/tests/cuda/cuda_app
LIB=$B/libdptrace_cupti.so
DUMP=$B/tests/tools/gpu_ingest_dump
# libcupti: the toolkit's, else DPTEST_CUPTI_LIBDIR.
it_need_nvidia "$APP" "$LIB" "$DUMP"
cat "$IT_TMP/gpus.txt"
STEPS=6 SPIN_US=500

# 1. Into an ingest endpoint, every event checked.
it_receiver || it_fail "the dump tool did not bind $EP"
rc=0
CUDA_INJECTION64_PATH=$LIB DPTOP_TRACE_ENDPOINT=$EP timeout 120 \
    "$APP" --steps $STEPS --spin-us $SPIN_US >"$IT_TMP/app.log" 2>&1 || rc=$?
cat "$IT_TMP/app.log"
[ $rc -eq 3 ] && it_skip "cuda_app found no usable CUDA device"
[ $rc -eq 0 ] || it_fail "cuda_app failed (exit $rc) under libdptrace_cupti"
grep -q "CUDA activity will not be traced" "$IT_TMP/app.log" && it_fail "CUPTI refused"
it_wait 20 grep -q '"name":"cudaDeviceSynchronize"' "$IT_TMP/dump.log" ||
    it_fail "the final batch did not arrive"
it_stop "$DUMP_PID"
it_wait 10 grep -q '"msg":"stats"' "$IT_TMP/dump.log" || it_fail "no stats from the dump tool"
[ -n "${DPTEST_KEEP_DUMP:-}" ] && cp "$IT_TMP/dump.log" "$DPTEST_KEEP_DUMP"

# The devices CUDA lets the program see (CUDA_VISIBLE_DEVICES, MIG).
NGPU=$(sed -n 's/^cuda_app: ok, .* on \([0-9]*\) device(s)$/\1/p' "$IT_TMP/app.log")
"$IT_PY" - "$IT_TMP/dump.log" "$STEPS" "$SPIN_US" "$NGPU" <<'PY' || it_fail "trace check failed"
import collections, json, re, statistics, sys
from gpu_dump import check, load

path, steps, spin_us, ngpu = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
msgs, events = load(path)

def base(name):  # CUPTI may name an entry point with its ABI version
    return re.sub(r"_v[0-9]+$", "", name)

stats = [m for m in msgs if m["msg"] == "stats"][-1]
check(stats["rejected"] == 0, "the receiver rejected messages: %s" % stats)
check(stats["unknown_names"] == 0, "events used names never sent")
proc = [m for m in msgs if m["msg"] == "proc"]
check(proc and proc[0]["exe"] == "cuda_app" and proc[0]["backend"] == "cupti",
      "proc hello %s" % proc[:1])
# The driver loads the library inside cuInit: the count comes in a later hello.
check(proc[-1]["devices"] == ngpu, "devices in the last hello: %s, GPUs: %d" % (proc[-1], ngpu))
evmsgs = [m for m in msgs if m["msg"] == "ev"]
check(evmsgs[-1]["dropped_total"] == 0, "dropped_total in the batch header")
snaps = [m for m in msgs if m["msg"] == "snap" and m["domains"] == ["cupti", "trace"]]
check(snaps, "no cupti/trace snapshot pairs")
pr = [p for m in snaps for p in m["pairs"]]
# CUPTI converts the GPU's times to its host clock itself: the trace clock
# where libcupti takes it (pairs of one reading), else CLOCK_REALTIME.
if all(p[0] == p[1] for p in pr):
    print("CUPTI stamps with the trace clock (%d exact snapshot pairs)" % len(pr))
elif len(pr) >= 2 and pr[-1][1] > pr[0][1]:
    print("CUPTI's clock against the trace clock over %.1f s: %+.2f ppm" % (
        (pr[-1][1] - pr[0][1]) / 1e9,
        ((pr[-1][0] - pr[0][0]) / (pr[-1][1] - pr[0][1]) - 1) * 1e6))

kinds = collections.Counter(e["ev"] for e in events)
print("events by kind:", dict(kinds))
kernels = [e for e in events if e["ev"] == "kernel"]
knames = collections.Counter(e["name"] for e in kernels)
print("kernel names:", dict(knames))
spins = [e for e in kernels if e["name"] == "spin_kernel"]
# C++ kernels by their source names (CUPTI gives the mangled symbol).
scales = [e for e in kernels if e["name"] == "void scale_kernel<float>(float*, float, int)"]
check(len(spins) == 2 * steps and len(scales) == steps, "kernels %s" % dict(knames))
check(len(kernels) == 3 * steps, "other kernels ran: %s" % dict(knames))
check(kinds["memset"] == steps, "memsets")
copies = sorted((c["copy"], c["bytes"]) for c in events if c["ev"] == "memcpy")
check(copies == sorted([("h2d", 1 << 20)] * steps + [("d2h", 65536)] * steps +
                       [("d2h", 16 * steps)]),
      "memcpy kinds and sizes %s" % copies)
check(all(e["bytes"] == 4096 for e in events if e["ev"] == "memset"), "memset sizes")
check(kinds["range"] == 2 * steps and kinds["step"] == steps and kinds["instant"] == steps,
      "annotations")
for e in events:
    check(e["end"] >= e["start"], "an event ends before it starts")
    if e["ev"] in ("kernel", "memcpy", "memset"):
        check(e["flags"] & 1, "GPU work carries device times")
check(all(s["grid"] == [1, 1, 1] or s["grid"] == [2, 1, 1] for s in spins), "spin geometry")
check(all(s["grid"] == [1024, 1, 1] and s["block"] == [256, 1, 1] for s in scales),
      "scale geometry %s" % scales[0])

# By default only the calls that do or wait for work (cuda_app calls
# cudaGetLastError after each launch).
check(not any(e["name"] == "cudaGetLastError" for e in events), "queries recorded by default")
# Driver calls the runtime makes are its own work, not calls of the program.
drv = [e["name"] for e in events if e["ev"] in ("api", "sync") and not e["name"].startswith("cuda")]
check(not drv, "driver calls inside runtime calls reported: %s" % drv[:3])
# Correlation: each GPU operation <-> exactly one API call, same thread and scope.
apis = {e["corr"]: e for e in events if e["ev"] in ("api", "sync") and e["corr"]}
expect = {"kernel": ("cudaLaunchKernel",), "memcpy": ("cudaMemcpyAsync", "cudaMemcpy"),
          "memset": ("cudaMemsetAsync",)}
launch_lat, inside = [], []
for op in (e for e in events if e["ev"] in expect):
    a = apis.get(op["corr"])
    check(a is not None, "%s %s has no API call (corr %d)" % (op["ev"], op["name"], op["corr"]))
    check(base(a["name"]) in expect[op["ev"]], "%s launched a %s" % (a["name"], op["ev"]))
    check(op["tid"] == a["tid"] and op["scope"] == a["scope"], "API and GPU op agree")
    launch_lat.append(op["start"] - a["start"])
    if base(a["name"]) == "cudaMemcpy":  # synchronous: the copy lies inside the call
        inside.append((op["start"] - a["start"], a["end"] - op["end"]))
print("GPU start - API start, ns: min %d p50 %d max %d" %
      (min(launch_lat), statistics.median(launch_lat), max(launch_lat)))
print("sync D2H copy inside cudaMemcpy, slack before/after, ns: min %d / %d, p50 %d / %d" %
      (min(i[0] for i in inside), min(i[1] for i in inside),
       statistics.median(i[0] for i in inside), statistics.median(i[1] for i in inside)))
check(min(launch_lat) >= -2000, "GPU work began %d ns before its launch call" % min(launch_lat))
check(min(i[0] for i in inside) >= -2000 and min(i[1] for i in inside) >= -2000,
      "a synchronous copy sticks out of its cudaMemcpy call by > 2 us")
durs = [s["end"] - s["start"] for s in spins]
print("spin_kernel %d us: recorded min %.1f p50 %.1f max %.1f us" %
      (spin_us, min(durs) / 1e3, statistics.median(durs) / 1e3, max(durs) / 1e3))
check(all(spin_us * 1000 <= d <= spin_us * 1000 + 200000 for d in durs), "spin durations")

# Scopes: GPU work carries its launching range; the tree links ranges to steps.
pairs = dict(p for m in msgs if m["msg"] == "scope" for p in m["pairs"])
ranges = {e["scope"]: e for e in events if e["ev"] in ("range", "step")}
for k in kernels:
    want = "backward" if k["grid"] == [2, 1, 1] else "forward"
    check(ranges[k["scope"]]["name"] == want, "%s in %s" % (k["name"], want))
    check(ranges[pairs[k["scope"]]]["ev"] == "step", "the range is inside a step")
dsync = [e for e in events if base(e["name"]) == "cudaDeviceSynchronize"]
check(len(dsync) == 1 and dsync[0]["scope"] == 0, "device sync outside every range")
print("trace OK: %d events, %d API calls, %d snapshot messages" %
      (len(events), len(apis), len(snaps)))
PY

# 2. Two agents, the second with a simulated clock 3 ms ahead running 40 ppm
# fast, two cuda_app under the first and one under the second; recorded and
# exported on the aligned time base.  The truth: both programs' spin kernels, run at the same time,
# read the one GPU's global timer when they start (the clock of CUPTI's
# records); on the aligned time base each kernel must sit where the GPU
# clock puts it, for both nodes alike, through snapshot pairs, the agents'
# clocks and the solved time base.
HUB="ipc://$IT_TMP/hub"
common=(--hub="$HUB" --bind-ip=127.0.0.1 --probe-window-s 1 --probe-cadence-us 10000)
it_spawn master "$B/dpnode" --master --listen="$HUB" --node-id=0 \
    --trace-endpoint="ipc://$IT_TMP/t0.sock" "${common[@]}"
MASTER=$IT_PID
it_wait 20 test -S "$IT_TMP/hub" || it_fail "the master did not bind $HUB"
it_spawn agent1 "$B/dpnode" --node-id=1 --sim-clock=3000000,40,0 \
    --trace-endpoint="ipc://$IT_TMP/t1.sock" "${common[@]}"
AGENT=$IT_PID
it_spawn rec "$B/dptop" --record "$IT_TMP/run.dprec" --hub "$HUB"
REC=$IT_PID
it_wait 20 grep -q "recording" "$IT_TMP/rec.log" || it_fail "the recorder did not start"
sleep 4 # a few windows: node 1 aligned
# The programs' steps at the same time: the GPU's clock runs a few ppm off
# the host's (the snapshot pairs follow that), which over the seconds
# between runs would be microseconds of the truth's own error.  Two
# programs on node 0 show what two processes on one clock disagree by.
AT=$(($(date +%s%N) + 3000000000))
APPS=()
for run in 0a 0b 1; do
    it_spawn "app_$run" env CUDA_INJECTION64_PATH="$LIB" \
        DPTOP_TRACE_ENDPOINT="ipc://$IT_TMP/t${run%[ab]}.sock" DPTOP_TRACE_CUDA_API=all \
        timeout 120 "$APP" --steps $STEPS --spin-us $SPIN_US --stamps --start-at $AT
    APPS+=("$IT_PID")
done
for pid in "${APPS[@]}"; do
    wait "$pid" || it_fail "a cuda_app failed under its agent"
done
for n in master agent1; do
    it_wait 20 grep -q "traces with cupti, $NGPU device(s)" "$IT_TMP/$n.log" ||
        it_fail "$n never saw its process with its $NGPU GPU(s)"
done
sleep 3
kill -INT "$REC"
it_wait 20 sh -c "! kill -0 $REC 2>/dev/null" || it_fail "the recorder did not stop"
it_stop "$AGENT"
it_stop "$MASTER"
cat "$IT_TMP/rec.log"
"$B/dptop" --replay "$IT_TMP/run.dprec" --export "$IT_TMP/trace.json" >"$IT_TMP/export.out" 2>&1 ||
    it_fail "export failed: $(cat "$IT_TMP/export.out")"
cat "$IT_TMP/export.out"
[ -n "${DPTEST_KEEP_DUMP:-}" ] && cp "$IT_TMP/trace.json" "$DPTEST_KEEP_DUMP.trace.json" &&
    cp "$IT_TMP/run.dprec" "$DPTEST_KEEP_DUMP.dprec"
"$IT_PY" - "$IT_TMP/trace.json" "$STEPS" "$IT_TMP"/app_0a.log "$IT_TMP"/app_0b.log \
    "$IT_TMP"/app_1.log <<'PY' ||
import collections, json, re, statistics, sys
d = json.load(open(sys.argv[1]))
steps = int(sys.argv[2])
origin = d["metadata"]["origin_ns"]
align = {a["node"]: a for a in d["metadata"]["alignment"]}
print("alignment:", {n: (a["aligned"], a["offset_ns"], a["uncertainty_ns"]) for n, a in align.items()})
assert sorted(align) == [0, 1] and all(a["aligned"] for a in align.values()), align
x = [e for e in d["traceEvents"] if e.get("ph") == "X"]
# lane -> the process it belongs to
lane_pid = {(e["pid"], e["tid"]): int(re.match(r"pid (\d+) ", e["args"]["name"]).group(1))
            for e in d["traceEvents"] if e.get("ph") == "M" and e["name"] == "thread_name"}
dev, raw = {}, {}
T0 = None
for path, node in zip(sys.argv[3:], (0, 0, 1)):
    log = open(path).read()
    pid = int(re.search(r"cuda_app\[(\d+)\]", log).group(1))
    truth = [int(l.split()[3]) for l in log.splitlines() if l.startswith("cuda_app: spin ")]
    T0 = truth[0] if T0 is None else T0
    mine = [e for e in x if e["pid"] == node and lane_pid[(e["pid"], e["tid"])] == pid]
    k = collections.Counter(e["name"] for e in mine if e["args"]["kind"] == "kernel")
    assert k["spin_kernel"] == 2 * steps, (node, pid, k)
    assert k["void scale_kernel<float>(float*, float, int)"] == steps, (node, pid, k)
    assert sum(1 for e in mine if e["args"]["kind"] == "memcpy") == 2 * steps + 1, (node, pid)
    # DPTOP_TRACE_CUDA_API=all: every runtime call, the queries too.
    q = sum(1 for e in mine if e["name"] == "cudaGetLastError")
    assert q == 3 * steps, "node %d pid %d: cudaGetLastError calls recorded: %d" % (node, pid, q)
    spins = sorted((e for e in mine if e["name"] == "spin_kernel"), key=lambda e: e["ts"])
    assert len(truth) == len(spins), (len(truth), len(spins))
    # aligned start - GPU clock, and the node's own trace clock - GPU clock
    # (the latter from the first truth: its medians stay exact in a double)
    dev[node, pid] = [round(e["ts"] * 1000) + origin - t for e, t in zip(spins, truth)]
    raw[node, pid] = [e["args"]["trace_ns"] - (t - T0) for e, t in zip(spins, truth)]
flows = sum(1 for e in d["traceEvents"] if e.get("ph") == "s")
assert flows >= 15 * steps, flows  # launch -> kernel / copy / memset arrows
first = next(iter(dev))
base, rbase = statistics.median(dev[first]), statistics.median(raw[first])
print("spin kernels on the aligned time base against the GPU clock (the first process's median as zero):")
for (n, pid), v in dev.items():
    e = [a - base for a in v]
    print("  node %d pid %d: median %+.0f ns, range %+.0f..%+.0f ns, its node's own clock: %+.0f ns" %
          (n, pid, statistics.median(e), min(e), max(e), statistics.median(raw[n, pid]) - rbase))
err = [a - base for v in dev.values() for a in v]
lim = 2000 + 3 * align[1]["uncertainty_ns"]
print("largest: %.0f ns (bound %.0f ns)" % (max(abs(v) for v in err), lim))
assert max(abs(v) for v in err) <= lim, "a kernel is off the GPU clock"
n1 = [statistics.median(r) for (n, _), r in raw.items() if n == 1]
assert abs(n1[0] - rbase) > 1e6, "the clocks should differ"
PY
    it_fail "the aligned export does not match the GPU clock"
it_pass "CUDA work traced through CUPTI on $(head -1 "$IT_TMP/gpus.txt" | cut -d'(' -f1), two nodes on the GPU's clock"
