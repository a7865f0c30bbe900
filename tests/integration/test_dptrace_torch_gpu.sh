#!/usr/bin/env bash
# timeout: 480
# libdptrace_cupti.so under PyTorch on a real NVIDIA GPU: a small training
# loop (tests/cuda/torch_app.py) with its steps and ranges annotated through
# the library's C API, into an ingest endpoint.  Every GPU operation must
# come with the call that launched it (runtime or driver API: cuBLAS and
# PyTorch launch through both), the annotated thread's work with its range
# (autograd's thread has none), and the work of a call made during a step
# must lie inside the step on the trace clock; names demangled; nothing
# dropped.  Prints the step time with and without the library.  Then once
# more with DPTOP_TRACE_INHERIT_STEP=true: autograd's thread takes the
# training loop's step, so the backward pass's work carries it, and every
# event comes after its scope's pair.  Skipped without an NVIDIA GPU or
# PyTorch.
. "$(dirname "$0")/lib.sh"

STEPS=20
it_trace_py_app torch "${DPTEST_TORCH_PY:-$(command -v python3)}" $STEPS

"$IT_PY" - "$IT_TMP/dump.log" "$STEPS" <<'PY' || it_fail "trace check failed"
import collections, json, sys
from gpu_dump import check_all as check, fails_exit, gpu_calls, gpu_in_steps, gpu_trace, load

path, steps = sys.argv[1], int(sys.argv[2])
msgs, events = load(path)

kinds, gpu, names = gpu_trace(msgs, events)
check(sum(names.values()) >= 10 * steps, "kernels")
check(not any(n.startswith("_Z") for n in names), "mangled names left: %s" %
      [n for n in names if n.startswith("_Z")][:3])
check(kinds["step"] == steps and kinds["range"] == 3 * steps, "annotations")

apis, _ = gpu_calls(events, gpu)

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
in_step = gpu_in_steps(events, gpu, apis)
check(len(in_step) >= 0.9 * len(gpu), "calls made in steps: %d of %d" % (len(in_step), len(gpu)))
fails_exit()
PY

it_receiver "$IT_TMP/inherit.log" || it_fail "the dump tool did not bind $EP"
DPTOP_TRACE_INHERIT_STEP=true CUDA_INJECTION64_PATH=$B/libdptrace_cupti.so DPTOP_TRACE_ENDPOINT=$EP \
    timeout 150 "${DPTEST_TORCH_PY:-$(command -v python3)}" "$IT_ROOT/tests/cuda/torch_app.py" \
    $STEPS >"$IT_TMP/inherit-app.log" 2>&1 ||
    it_fail "torch_app failed with DPTOP_TRACE_INHERIT_STEP: $(tail -5 "$IT_TMP/inherit-app.log")"
it_wait 20 grep -q '"ev":"step".*"step":'$((STEPS - 1)), "$IT_TMP/inherit.log" ||
    it_fail "the last step did not arrive (inherit)"
sleep 1 # the last batches
it_stop "$DUMP_PID"
"$IT_PY" - "$IT_TMP/inherit.log" <<'PY' || it_fail "inherit check failed"
import collections, sys
from gpu_dump import check_all as check, early_events, fails_exit, gpu_calls, gpu_trace, load

msgs, events = load(sys.argv[1])
kinds, gpu, names = gpu_trace(msgs, events)
apis, _ = gpu_calls(events, gpu)
steps = {e["scope"]: e for e in events if e["ev"] == "step"}
main = {e["tid"] for e in steps.values()}
other = [e for e in gpu if e["tid"] not in main]
# Work of another thread's call made while a step was open (not at its edges).
during = [e for e in other if e["corr"] in apis and any(
    s["start"] + 1000 <= apis[e["corr"]]["start"] <= s["end"] - 1000 for s in steps.values())]
carried = collections.Counter("step" if e["scope"] in steps else "none" if e["scope"] == 0
                              else "other" for e in during)
print("autograd's thread (and others): %d GPU ops, %d of calls made in a step: %s" %
      (len(other), len(during), dict(carried)))
check(len(during) > 0, "no other thread's work in a step")
check(carried["other"] == 0, "another thread's work in a range of the annotated thread")
check(carried["step"] >= 0.95 * len(during), "other threads' work in the open step")
for e in other:
    s = steps.get(e["scope"])
    a = apis.get(e["corr"])
    if s and a:
        check(s["start"] - 1000 <= a["start"] <= s["end"] + 1000,
              "a call carries a step it was not made in")
early = early_events(sys.argv[1])
check(early == 0, "%d events came before their scope's pair" % early)
fails_exit()
PY
it_pass "PyTorch traced through CUPTI: every GPU operation with its call, inside its step; autograd's work in the step with DPTOP_TRACE_INHERIT_STEP"
