#!/usr/bin/env bash
# timeout: 120
# libdptrace_cupti.so's CUPTI backend on a machine without a GPU: a fake
# libcupti (tests/fake_cupti) plays a CUDA program's calls (cupti_app) and
# the dump tool receives what the library makes of them.  Checked: the
# runtime calls followed by default (work: launches, copies, memsets,
# synchronisations; not cudaGetDevice) and with DPTOP_TRACE_CUDA_API=all;
# launches, copies, graph launches and waits made through the driver API
# reported (a driver query not), a launch inside a runtime call not, and
# with a libcupti that names no driver id the launches by id alone;
# the exit of a call that began before CUPTI was on not reported; a runtime
# entry point newer than the headers followed; every GPU operation with its
# call's correlation id and range, on the trace clock within its call (the
# clock CUPTI is given: exactly; an older libcupti's own, through the
# snapshot pairs, and one that accepts the clock but keeps its own too); C++
# kernel names demangled; NCCL's kernel marked a collective; records asked
# for every DPTOP_TRACE_FLUSH_MS, no more often; a libcupti that takes the
# trace clock but ignores it said in the log, an older one quiet; eight
# threads' kernels each in their own thread's range; the device
# count, which the (fake) driver gives only from its second call, in the
# last hello.
. "$(dirname "$0")/lib.sh"

LIB=$B/libdptrace_cupti.so
APP=$B/tests/fake_cupti/cupti_app
DUMP=$B/tests/tools/gpu_ingest_dump
for f in "$LIB" "$APP" "$DUMP" "$B/tests/fake_cupti/libcupti.so"; do
    [ -e "$f" ] || it_skip "$f not built (no CUPTI headers)"
done

# run MODE: the app into a fresh dump tool, then the checks.
run() {
    local mode=$1 ep="ipc://$IT_TMP/trace-$1.sock"
    it_spawn "dump_$mode" "$DUMP" "$ep" --ready "$IT_TMP/ready-$mode"
    local dump=$IT_PID
    it_wait 10 test -f "$IT_TMP/ready-$mode" || it_fail "the dump tool did not bind $ep"
    local api=work old= ignored= flush=20
    [ "$mode" = all ] && api=all
    [ "$mode" = oldcupti ] && old=1
    [ "$mode" = ownclock ] && ignored=1 flush=100
    FAKECUPTI_NO_DRIVER_NAMES=$old FAKECUPTI_NO_TS_CALLBACK=$old FAKECUPTI_TS_CALLBACK_IGNORED=$ignored \
        DPTOP_TRACE_FLUSH_MS=$flush \
        LD_LIBRARY_PATH="$B/tests/fake_cupti" DPTOP_TRACE_ENDPOINT=$ep DPTOP_TRACE_CUDA_API=$api \
        timeout 60 "$APP" "$LIB" >"$IT_TMP/app-$mode.log" 2>&1 || it_fail "cupti_app failed ($mode)"
    grep -q "InitializeInjection: 1" "$IT_TMP/app-$mode.log" ||
        it_fail "the library refused the fake CUPTI: $(cat "$IT_TMP/app-$mode.log")"
    it_wait 20 grep -q '"name":"cudaDeviceSynchronize"' "$IT_TMP/dump_$mode.log" ||
        it_fail "the last call did not arrive ($mode)"
    sleep 1 # the flood's last batches
    it_stop "$dump"
    it_wait 10 grep -q '"msg":"stats"' "$IT_TMP/dump_$mode.log" || it_fail "no stats ($mode)"
    "$IT_PY" - "$IT_TMP/dump_$mode.log" "$IT_TMP/app-$mode.log" "$mode" <<'PY' ||
import collections, sys
from gpu_dump import check, load

msgs, events = load(sys.argv[1])
mode = sys.argv[3]
calls = {l.split()[1]: int(l.split()[2]) for l in open(sys.argv[2]) if l.startswith("call ")}
stats = [m for m in msgs if m["msg"] == "stats"][-1]
check(stats["rejected"] == 0 and stats["unknown_names"] == 0, "receiver: %s" % stats)
proc = [m for m in msgs if m["msg"] == "proc"]
check(proc and proc[-1]["backend"] == "cupti" and proc[-1]["exe"] == "cupti_app", "hello %s" % proc)
# The driver cannot count its devices at first: the hello goes again with them.
check(proc[-1]["devices"] == 2, "devices in the last hello: %s" % proc[-1])

apis = [e for e in events if e["ev"] in ("api", "sync")]
names = collections.Counter(e["name"] for e in apis)
want = {"cudaLaunchKernel": 1, "cuLaunchKernel": 1, "cudaMemcpyAsync": 1, "cudaMemsetAsync": 1,
        "cudaLaunchKernelFuture": 1, "cudaDeviceSynchronize": 1, "cuMemcpyDtoHAsync_v2": 1,
        "cuGraphLaunch": 1, "cuStreamSynchronize": 1}
if mode == "all":
    want["cudaGetDevice"] = 1
# A libcupti that names no driver id: its launches are followed by id alone.
driver_named = mode != "oldcupti"
if not driver_named:
    for n in ("cuMemcpyDtoHAsync_v2", "cuGraphLaunch", "cuStreamSynchronize"):
        del want[n]
check(names == want, "%s: API calls %s, expected %s" % (mode, dict(names), want))
by_name = {e["name"]: e for e in apis}
for n, e in by_name.items():
    check(e["corr"] == calls[n], "%s: corr %d, the call had %d" % (n, e["corr"], calls[n]))
check(by_name["cudaDeviceSynchronize"]["ev"] == "sync" and
      (not driver_named or by_name["cuStreamSynchronize"]["ev"] == "sync"),
      "a synchronisation is a sync event")

# The clock of CUPTI's records: the trace clock where libcupti takes it
# (snapshot pairs of one reading), else its own, 1e18 ns away.
pairs = [p for m in msgs if m["msg"] == "snap" for p in m["pairs"]]
trace_clock = mode not in ("oldcupti", "ownclock")
check(pairs and all((p[0] == p[1]) == trace_clock for p in pairs) and
      all(abs(p[0] - p[1]) < 10**17 for p in pairs) == trace_clock,
      "%s: snapshot pairs %s" % (mode, pairs[:2]))

fwd = [e for e in events if e["ev"] == "range" and e["name"] == "forward"]
check(len(fwd) == 1, "the range")
scope = fwd[0]["scope"]
ops = {e["name"]: e for e in events
       if e["ev"] in ("kernel", "memcpy", "memset") and e["name"] != "flood_kernel"}
launched = {"void scale_kernel<float>(float*, float, int)": "cudaLaunchKernel",
            "ncclDevKernel_AllReduce_Sum_f32_RING_LL": "cuLaunchKernel",
            "memcpy_h2d": "cudaMemcpyAsync", "memset": "cudaMemsetAsync",
            "spin_kernel": "cudaLaunchKernelFuture", "memcpy_d2h": "cuMemcpyDtoHAsync_v2",
            "graph_kernel": "cuGraphLaunch"}
check(sorted(ops) == sorted(launched), "GPU operations %s" % sorted(ops))
for op_name, call in launched.items():
    if call not in by_name and not driver_named and call.startswith("cu"):
        continue  # its call was not followed: the record still came
    op, a = ops[op_name], by_name[call]
    check(op["corr"] == a["corr"], "%s carries %s's corr" % (op_name, call))
    check(op["scope"] == scope and a["scope"] == scope, "%s in the range" % op_name)
    check(op["flags"] & 1, "%s: device times" % op_name)
    # The fake records the work inside the call: on the trace clock it was
    # given, exactly there; on its own clock, mapped back through the
    # snapshot pairs, within the call ± 20 µs.
    slack = 0 if trace_clock else 20000
    check(a["start"] - slack <= op["start"] <= a["end"] + slack,
          "%s at %d, its call %d..%d" % (op_name, op["start"], a["start"], a["end"]))
    check(bool(op["flags"] & 8) == op_name.startswith("nccl"), "%s: collective flag" % op_name)
check(ops["memcpy_h2d"]["bytes"] == 4096 and ops["memset"]["bytes"] == 512 and
      ops["memcpy_d2h"]["bytes"] == 8192, "sizes")
# 300 buffers back to back and 7 records CUPTI lost: every record is
# delivered or counted as dropped (a full buffer queue counts its records).
flood = sum(1 for e in events if e["name"] == "flood_kernel")
dropped = [m for m in msgs if m["msg"] == "ev"][-1]["dropped_total"]
print("%s: flood of 300 buffers: %d delivered, %d counted dropped" % (mode, flood, dropped))
check(dropped >= 7 and flood + dropped == 307, "flood: %d + %d != 307" % (flood, dropped))
# Records are asked for every DPTOP_TRACE_FLUSH_MS, no more often (each
# flush blocks CUPTI): 20 ms, 100 ms in ownclock mode.
period = 0.1 if mode == "ownclock" else 0.02
fl = [l.split() for l in open(sys.argv[2]) if l.startswith("fakecupti: ")]
check(fl, "the fake said nothing of its flushes")
n, span = int(fl[-1][1]), float(fl[-1][5])
print("%s: %d unforced flushes over %.3f s" % (mode, n, span))
check(2 <= n <= span / (0.75 * period) + 2, "%d flushes in %.3f s" % (n, span))
with_call = sum(1 for c in launched.values() if c in by_name)
print("%s: %d calls, %d GPU operations, %d with their calls" % (mode, len(apis), len(ops), with_call))
PY
        it_fail "the $mode run's trace is wrong"
}
run work
run all
run oldcupti
run ownclock

# Eight threads launching at once, each in its own range: every kernel
# carries its own thread's range through the correlation table, written
# by all of them at once (their ids do not share slots: what is checked is
# that each thread's work keeps its own range).
it_receiver "$IT_TMP/dump_threads.log" || it_fail "the dump tool did not bind $EP"
dump=$DUMP_PID
LD_LIBRARY_PATH="$B/tests/fake_cupti" DPTOP_TRACE_ENDPOINT=$EP \
    timeout 60 "$APP" "$LIB" --threads 8 >"$IT_TMP/app-threads.log" 2>&1 || it_fail "cupti_app --threads failed"
it_wait 20 grep -q '"name":"cudaDeviceSynchronize"' "$IT_TMP/dump_threads.log" ||
    it_fail "the threads' last call did not arrive"
sleep 1
it_stop "$dump"
it_wait 10 grep -q '"msg":"stats"' "$IT_TMP/dump_threads.log" || it_fail "no stats (threads)"
"$IT_PY" - "$IT_TMP/dump_threads.log" <<'PY' || it_fail "the threads' kernels are not in their ranges"
import collections, sys
from gpu_dump import check, load

msgs, events = load(sys.argv[1])
check([m for m in msgs if m["msg"] == "ev"][-1]["dropped_total"] == 0, "dropped")
ranges = {e["scope"]: e for e in events if e["ev"] == "range"}
kernels = [e for e in events if e["ev"] == "kernel"]
apis = {e["corr"]: e for e in events if e["ev"] == "api"}
check(len(ranges) == 8 and len(kernels) == 800, "%d ranges, %d kernels" % (len(ranges), len(kernels)))
per = collections.Counter()
for k in kernels:
    r, a = ranges.get(k["scope"]), apis.get(k["corr"])
    check(r is not None and a is not None, "kernel corr %d: scope %d" % (k["corr"], k["scope"]))
    check(k["tid"] == r["tid"] == a["tid"] and a["scope"] == k["scope"],
          "kernel corr %d of thread %d in %s of thread %d" % (k["corr"], k["tid"], r["name"], r["tid"]))
    per[r["name"]] += 1
check(sorted(per.values()) == [100] * 8, "kernels per range %s" % dict(per))
print("threads: 800 kernels, each in its own thread's range")
PY
grep -q "CUPTI took the trace clock but keeps its own" "$IT_TMP/app-ownclock.log" ||
    it_fail "a libcupti that ignores the trace clock was not said"
grep -q "CUPTI took the trace clock" "$IT_TMP/app-oldcupti.log" "$IT_TMP/app-work.log" &&
    it_fail "the trace clock was said ignored where it was refused or used"
it_pass "CUPTI backend through a fake libcupti: calls followed, driver-API work, names, collectives, CUPTI on the trace clock or mapped onto it, 8 threads in their ranges"
