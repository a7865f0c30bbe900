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
it_trace_py_app jax "${DPTEST_JAX_PY:-$(command -v python3)}" $STEPS

"$IT_PY" - "$IT_TMP/dump.log" "$STEPS" <<'PY' || it_fail "trace check failed"
import collections, sys
from gpu_dump import base_name, check_all as check, fails_exit, gpu_calls, gpu_in_steps, gpu_trace, load

path, steps = sys.argv[1], int(sys.argv[2])
msgs, events = load(path)

kinds, gpu, names = gpu_trace(msgs, events)
check(kinds["step"] == steps and kinds["range"] == 3 * steps, "annotations")
calls = collections.Counter(base_name(e["name"]) for e in events if e["ev"] in ("api", "sync"))
print("calls:", dict(calls.most_common(12)))

apis, via = gpu_calls(events, gpu)
check(any(n.startswith("cu") and not n.startswith("cuda") for _, n in via),
      "no GPU work launched through the driver API")

# The work of a call made during a step runs inside the step on the trace
# clock (each step ends once the loss is back on the host), and each
# step's two batches (2 MiB each) reach the GPU as copies.
in_step = gpu_in_steps(events, gpu, apis)
first = min(e["start"] for e in events if e["ev"] == "step")
after_first = sum(1 for e in gpu if e["start"] >= first)
h2d = collections.Counter()
for i, e in in_step:
    if e["ev"] == "memcpy" and e["copy"] == "h2d":
        h2d[i] += e["bytes"]
print("%d of the %d ops after the first step began; bytes copied to the GPU per step: %s" %
      (len(in_step), after_first, sorted(set(h2d.values()))))
check(len(in_step) >= 0.9 * after_first, "calls made in steps: %d of %d" % (len(in_step), after_first))
check(len(h2d) == steps and min(h2d.values()) >= 2 * 512 * 1024 * 4,
      "the batches' copies: %d steps, %s bytes" % (len(h2d), sorted(set(h2d.values()))))
fails_exit()
PY
it_pass "JAX traced through CUPTI: its driver API work with its calls, inside its step"
