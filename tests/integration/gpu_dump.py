"""What tests/tools/gpu_ingest_dump printed, for the libdptrace tests.

  msgs, events = load(path)   its messages ({"msg": ...}) and events
                              ({"ev": ...}), one JSON object a line
  check(cond, what)           fail the test (exit 1) with a message
  check_all(cond, what)       say a failure and go on; fails_exit() at the
                              end exits 1 if any was said
  base_name(name)             a CUDA entry point's name without its ABI
                              version (cuMemcpyHtoDAsync_v2)

For the CUPTI tests of training loops (check_all):
  gpu_trace(msgs, events)     the receiver took all, the hello names cupti and
                              a device, nothing dropped; says the events by
                              kind and the kernels most launched; returns
                              (kinds Counter, GPU operations, kernel names Counter)
  gpu_calls(events, gpu)      every GPU operation has its call; says which
                              calls launched them; returns ({corr: call},
                              Counter of (kind, call name))
  gpu_in_steps(events, gpu, apis)  the operations of calls made during a
                              step lie inside it (2 us); returns [(step index,
                              operation)]
"""
import collections
import json
import re
import sys


def load(path):
    msgs, events = [], []
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            o = json.loads(line)
            (events if "ev" in o else msgs).append(o)
    return msgs, events


def early_events(path):
    """Events of the dump at path that came before their scope's pair (in file
    order): every scope id must reach a receiver before the first event that
    carries it, whichever thread's ring the pair came through."""
    known, early = {0}, 0
    for line in open(path):
        if line.startswith("{"):
            o = json.loads(line)
            if o.get("msg") == "scope":
                known.update(c for c, _ in o["pairs"])
            elif "ev" in o and o["scope"] not in known:
                early += 1
    return early


def check(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


_fails = []


def check_all(cond, what):
    if not cond:
        print("FAIL:", what)
        _fails.append(what)


def fails_exit():
    sys.exit(1 if _fails else 0)


def base_name(name):
    return re.sub(r"_v[0-9]+$", "", name)


def gpu_trace(msgs, events):
    stats = [m for m in msgs if m["msg"] == "stats"][-1]
    check_all(stats["rejected"] == 0 and stats["unknown_names"] == 0, "receiver: %s" % stats)
    proc = [m for m in msgs if m["msg"] == "proc"]
    check_all(proc and proc[-1]["backend"] == "cupti" and proc[-1]["devices"] >= 1,
              "hello %s" % proc[-1:])
    evmsgs = [m for m in msgs if m["msg"] == "ev"]
    check_all(evmsgs[-1]["dropped_total"] == 0, "dropped %d" % evmsgs[-1]["dropped_total"])
    kinds = collections.Counter(e["ev"] for e in events)
    print("events by kind:", dict(kinds))
    gpu = [e for e in events if e["ev"] in ("kernel", "memcpy", "memset")]
    names = collections.Counter(e["name"] for e in gpu if e["ev"] == "kernel")
    print("%d kernels, %d names; most launched:" % (sum(names.values()), len(names)))
    for n, c in names.most_common(8):
        print("  %5d  %s" % (c, n[:150]))
    return kinds, gpu, names


def gpu_calls(events, gpu):
    apis = {e["corr"]: e for e in events if e["ev"] in ("api", "sync") and e["corr"]}
    no_api = [e for e in gpu if e["corr"] not in apis]
    via = collections.Counter((e["ev"], base_name(apis[e["corr"]]["name"]))
                              for e in gpu if e["corr"] in apis)
    print("GPU ops launched by:", dict(via.most_common(10)))
    print("GPU ops without their call: %d of %d" % (len(no_api), len(gpu)))
    for e in no_api[:3]:
        print("  e.g.", e["ev"], e["name"][:100], "corr", e["corr"])
    check_all(not no_api, "GPU work without its launching call")
    return apis, via


def gpu_in_steps(events, gpu, apis):
    steps = sorted((e["start"], e["end"]) for e in events if e["ev"] == "step")
    out, before, after = [], 0, 0
    for e in gpu:
        a = apis.get(e["corr"])
        i = next((i for i, t in enumerate(steps) if a and t[0] <= a["start"] <= t[1]), None)
        if i is None:
            continue
        out.append((i, e))
        before = max(before, steps[i][0] - e["start"])
        after = max(after, e["end"] - steps[i][1])
    print("GPU work of %d calls made in a step: up to %d ns before the step, %d ns after" %
          (len(out), before, after))
    check_all(before <= 2000 and after <= 2000, "GPU work outside its step")
    return out
