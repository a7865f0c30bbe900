#!/usr/bin/env bash
# timeout: 360
# libdptrace_cupti.so under JAX on a real NVIDIA GPU: a small training loop
# (tests/cuda/jax_app.py) with its steps and ranges annotated through the
# library's C API, into an ingest endpoint.  XLA makes its own GPU work
# through the driver API (kernel and graph launches, asynchronous copies;
# the libraries it calls also use the runtime), so this is where the driver's work calls must be followed: every GPU
# operation must come with the call that launched it, the batch copies of
# each step must reach the GPU as copies, and the work of a call made
# during a step must lie inside the step on the trace clock; nothing
# dropped.  Prints the step time with and without the library.  Skipped
# without an NVIDIA GPU or JAX.
. "$(dirname "$0")/lib.sh"

STEPS=20
it_trace_py_app jax "${DPTOP_JAX_PY:-$(command -v python3)}" $STEPS

"$IT_PY" - "$IT_TMP/dump.log" "$STEPS" <<'PY' || it_fail "trace check failed"
import collections, re, sys
from gpu_dump import check_all as check, fails_exit, load

path, steps = sys.argv[1], int(sys.argv[2])
msgs, events = load(path)


def base(name):  # CUPTI may name an entry point with its ABI version
    return re.sub(r"_v[0-9]+$", "", name)

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
check(kinds["step"] == steps and kinds["range"] == 3 * steps, "annotations")
calls = collections.Counter(base(e["name"]) for e in events if e["ev"] in ("api", "sync"))
print("calls:", dict(calls.most_common(12)))

apis = {e["corr"]: e for e in events if e["ev"] in ("api", "sync") and e["corr"]}
no_api = [e for e in gpu if e["corr"] not in apis]
via = collections.Counter((e["ev"], base(apis[e["corr"]]["name"])) for e in gpu if e["corr"] in apis)
print("GPU ops launched by:", dict(via.most_common(10)))
print("GPU ops without their call: %d of %d" % (len(no_api), len(gpu)))
for e in no_api[:3]:
    print("  e.g.", e["ev"], e["name"][:100], "corr", e["corr"])
check(not no_api, "GPU work without its launching call")
check(any(n.startswith("cu") and not n.startswith("cuda") for _, n in via),
      "no GPU work launched through the driver API")

# The work of a call made during a step runs inside the step on the trace
# clock (each step ends once the loss is back on the host), and each
# step's two batches (2 MiB each) reach the GPU as copies.
ranges = {e["scope"]: e for e in events if e["ev"] in ("range", "step")}
steps_t = sorted((e["start"], e["end"]) for e in ranges.values() if e["ev"] == "step")
checked = worst_before = worst_after = 0
h2d = collections.Counter()
for e in gpu:
    a = apis.get(e["corr"])
    st = next((i for i, t in enumerate(steps_t) if a and t[0] <= a["start"] <= t[1]), None)
    if st is None:
        continue
    checked += 1
    worst_before = max(worst_before, steps_t[st][0] - e["start"])
    worst_after = max(worst_after, e["end"] - steps_t[st][1])
    if e["ev"] == "memcpy" and e["copy"] == "h2d":
        h2d[st] += e["bytes"]
in_steps = sum(1 for e in gpu if e["start"] >= steps_t[0][0])
print("GPU work of %d calls made in a step (of %d ops after the first step began): "
      "up to %d ns before the step, %d ns after" % (checked, in_steps, worst_before, worst_after))
print("bytes copied to the GPU per step: %s" % sorted(set(h2d.values())))
check(checked >= 0.9 * in_steps, "calls made in steps: %d of %d" % (checked, in_steps))
check(worst_before <= 2000 and worst_after <= 2000, "GPU work outside its step")
check(len(h2d) == steps and min(h2d.values()) >= 2 * 512 * 1024 * 4,
      "the batches' copies: %d steps, %s bytes" % (len(h2d), sorted(set(h2d.values()))))
fails_exit()
PY
it_pass "JAX traced through CUPTI: its driver API work with its calls, inside its step"
