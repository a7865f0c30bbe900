#!/usr/bin/env bash
# timeout: 360
# libdptrace_cupti.so under PyTorch on a real NVIDIA GPU: a small training
# loop (tests/cuda/torch_app.py) with its steps and ranges annotated through
# the library's C API, into an ingest endpoint.  Every GPU operation must
# come with the call that launched it (runtime or driver API: cuBLAS and
# PyTorch launch through both), the annotated thread's work with its range
# (autograd's thread has none), and the work of a call made during a step
# must lie inside the step on the trace clock; names demangled; nothing
# dropped.  Prints the step time with and without the library.  Skipped
# without an NVIDIA GPU or PyTorch.
. "$(dirname "$0")/lib.sh"

STEPS=20
it_trace_py_app torch "${DPTOP_TORCH_PY:-$(command -v python3)}" $STEPS

"$IT_PY" - "$IT_TMP/dump.log" "$STEPS" <<'PY' || it_fail "trace check failed"
import collections, json, sys
from gpu_dump import check_all as check, fails_exit, load

path, steps = sys.argv[1], int(sys.argv[2])
msgs, events = load(path)


stats = [m for m in msgs if m["msg"] == "stats"][-1]
check(stats["rejected"] == 0 and stats["unknown_names"] == 0, "receiver: %s" % stats)
proc = [m for m in msgs if m["msg"] == "proc"]
check(proc and proc[-1]["backend"] == "cupti" and proc[-1]["devices"] >= 1, "hello %s" % proc[-1:])
evmsgs = [m for m in msgs if m["msg"] == "ev"]
check(evmsgs[-1]["dropped_total"] == 0, "dropped %d" % evmsgs[-1]["dropped_total"])
kinds = collections.Counter(e["ev"] for e in events)
print("events by kind:", dict(kinds))
gpu = [e for e in events if e["ev"] in ("kernel", "memcpy", "memset")]
kernels = [e for e in gpu if e["ev"] == "kernel"]
names = collections.Counter(e["name"] for e in kernels)
print("%d kernels, %d names; most launched:" % (len(kernels), len(names)))
for n, c in names.most_common(8):
    print("  %5d  %s" % (c, n[:150]))
check(len(kernels) >= 10 * steps, "kernels")
check(not any(n.startswith("_Z") for n in names), "mangled names left: %s" %
      [n for n in names if n.startswith("_Z")][:3])
check(kinds["step"] == steps and kinds["range"] == 3 * steps, "annotations")

apis = {e["corr"]: e for e in events if e["ev"] in ("api", "sync") and e["corr"]}
no_api = [e for e in gpu if e["corr"] not in apis]
via = collections.Counter(apis[e["corr"]]["name"] for e in gpu if e["corr"] in apis)
print("GPU ops launched by:", dict(via.most_common(8)))
print("GPU ops without their call: %d of %d" % (len(no_api), len(gpu)))
for e in no_api[:3]:
    print("  e.g.", e["ev"], e["name"][:100], "corr", e["corr"])
check(not no_api, "GPU work without its launching call")

# Ranges are per thread (SPEC 6): work the annotated thread launched carries
# its range; PyTorch's backward pass runs on autograd's own thread, which
# opened none.
ranges = {e["scope"]: e for e in events if e["ev"] in ("range", "step")}
main = {e["tid"] for e in ranges.values()}
check(len(main) == 1, "annotations from %d threads" % len(main))
mine = [e for e in gpu if e["tid"] in main]
other = [e for e in gpu if e["tid"] not in main]
by_range = collections.Counter(ranges[e["scope"]]["name"] if e["scope"] in ranges else "-"
                               for e in mine)
print("GPU ops of the annotated thread by range: %s; of other threads: %d (%d threads)" %
      (dict(by_range), len(other), len({e["tid"] for e in other})))
check(by_range["-"] <= len(mine) // 10, "the annotated thread's work outside its ranges")
check(by_range["forward"] > 0 and by_range["optimizer"] > 0, "work in forward and optimizer")
check(all(e["scope"] == 0 for e in other), "a thread without ranges gave work a scope")

# The GPU work of a call made during a step (on any thread) runs inside the
# step on the trace clock: the step ends after a synchronize.
steps_t = sorted((e["start"], e["end"]) for e in ranges.values() if e["ev"] == "step")
checked = worst_before = worst_after = 0
for e in gpu:
    a = apis.get(e["corr"])
    st = next((t for t in steps_t if a and t[0] <= a["start"] <= t[1]), None)
    if st is None:
        continue
    checked += 1
    worst_before = max(worst_before, st[0] - e["start"])
    worst_after = max(worst_after, e["end"] - st[1])
print("GPU work of %d calls made in a step: up to %d ns before the step, %d ns after" %
      (checked, worst_before, worst_after))
check(checked >= 0.9 * len(gpu), "calls made in steps: %d of %d" % (checked, len(gpu)))
check(worst_before <= 2000 and worst_after <= 2000, "GPU work outside its step")
fails_exit()
PY
it_pass "PyTorch traced through CUPTI: every GPU operation with its call, inside its step"
