#!/usr/bin/env python3
"""Per-rank PyTorch profiler traces (Kineto's Chrome trace JSON) of a
simulated training job, stamped with the simulated clocks of a recording's
nodes, for the import tests and benchmarks.

The layout follows Kineto's ChromeTraceLogger (libkineto/src/output_json.cpp)
field by field, in its two timestamp eras:

  --style new   PyTorch >= 2.4: "ts"/"dur" as "us.ns" (3 decimals) relative
                to baseTimeNanoseconds, a multiple of 7,889,238 s (Kineto's
                ChromeTraceBaseTime); --base-at end writes the key last, as
                2.4 to early-2025 releases do, --base-at start before
                traceEvents, as later ones do;
  --style old   PyTorch <= 2.3: integer microseconds since the epoch.

Events per step (every 100 ms of real time): ProfilerStep#N
(user_annotation), aten ops (cpu_op) launching kernels through
cudaLaunchKernel (cuda_runtime) with ac2g flows to the kernels (pid = device
0, tid = stream 7), a host-to-device copy, and an all-reduce:
record_param_comms (cpu_op with the c10d collective args) launching
ncclDevKernel_AllReduce_Sum_f32_RING_LL on the NCCL stream, whose end is
the same real time on every rank (the collective completes when the last
rank joins); each rank joins at its own time.  Process and thread metadata
for the host process and GPUs 0..15 (Kineto names all 16), the profiler's
spans ("Spans", "Traces") and "Record Window End" are there too.

Each rank's times are its node's clock: real time t becomes
t + OFFSET + DRIFT * 1e-6 * (t - t0), the node's sim_truth from the
recording (a node with wander is refused).  The real times chosen lie
where every node has an aligned fit in the recording.

Usage: kineto_gen.py REC OUTDIR NODE[:STYLE[:BASEAT[:gz]]] ... [--steps N]
           [--before S] [--shift S] [--events-per-step N] [--pid P] [--check]
Prints JSON: {"steps": [{"step": k, "allreduce_end_ns": real ns}], "files": [...]}.
"""
import argparse
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import dprec  # noqa: E402

BASE_INTERVAL_S = 7889238  # Kineto's ChromeTraceBaseTime: about three months


def truths_and_procs(rec):
    truth, procs, hosts, fits = {}, {}, {}, {}
    first = last = None
    for arrival, kind, h in dprec.messages(rec, {"sim_truth", "proc", "hello", "node_fit"}):
        first = arrival if first is None else first
        last = arrival
        if kind == "sim_truth":
            truth[h["node"]] = h
        elif kind == "proc":
            procs.setdefault(h["node"], h["pid"])
        elif kind == "hello":
            hosts[h["node"]] = h.get("host", "host")
        elif kind == "node_fit" and h.get("aligned"):
            fits.setdefault(h["node"], arrival)
    return truth, procs, hosts, fits, first, last


STEP_NS = 100000000  # one training step every 100 ms of real time


def job(rec, steps, world, before=0.0):
    """The simulated job the generators share, from a recording: the nodes'
    truths, processes and hosts, the real time of the first step (2 s after
    every node has an aligned fit, less BEFORE seconds) and the real times
    at which each step's all-reduce ends on every rank."""
    truth, procs, hosts, fits, first, last = truths_and_procs(rec)
    if not fits:
        raise SystemExit("no node was aligned in %s" % rec)
    t_start = max(fits.values()) + 2000000000 - int(before * 1e9)
    if t_start + steps * STEP_NS > last - 1000000000:
        raise SystemExit("the recording ends too early for %d steps" % steps)
    ends = [t_start + k * STEP_NS + 30000000 + 700000 * world + 400000 for k in range(steps)]
    return truth, procs, hosts, fits, t_start, ends


def local_ns(t, tr):
    if tr.get("wander_ppb", 0) or tr.get("step_ns", 0):
        raise SystemExit("node %d: a clock with wander or a step cannot be generated" % tr["node"])
    return t + int(round(tr["offset_ns"] + tr["drift_ppm"] * 1e-6 * (t - tr["t0_ns"])))


class Writer:
    def __init__(self, style, base):
        self.style, self.base, self.events = style, base, []

    def ts(self, ns):
        if self.style == "old":
            return "%d" % (ns // 1000)
        t = max(0, ns - self.base)
        return "%d.%03d" % (t // 1000, t % 1000)

    def dur(self, ns):
        ns = max(0, ns)
        if self.style == "old":
            return "%d" % (ns // 1000)
        return "%d.%03d" % (ns // 1000, ns % 1000)

    def x(self, cat, name, pid, tid, t0, t1, args=None):
        s = '{"ph": "X", "cat": "%s", "name": %s, "pid": %s, "tid": %s, "ts": %s, "dur": %s' % (
            cat, json.dumps(name), json.dumps(pid), json.dumps(tid), self.ts(t0), self.dur(t1 - t0))
        if args:
            s += ', "args": %s' % json.dumps(args)
        self.events.append(s + "}")

    def flow(self, ph, fid, pid, tid, t, cat="ac2g"):
        s = '{"ph": "%s", "id": %d, "pid": %s, "tid": %s, "ts": %s, "cat": "%s", "name": "%s"' % (
            ph, fid, json.dumps(pid), json.dumps(tid), self.ts(t), cat, cat)
        if ph == "f":
            s += ', "bp": "e"'
        self.events.append(s + "}")

    def meta(self, name, pid, tid, t, args):
        self.events.append('{"name": "%s", "ph": "M", "ts": %s, "pid": %s, "tid": %s, "args": %s}' % (
            name, self.ts(t), json.dumps(pid), json.dumps(tid), json.dumps(args)))

    def instant(self, name, pid, tid, t, scope="t", cat=None, args=None):
        if cat:  # cpu_instant_event: {"ph", "cat", "s", "name", ...}
            s = '{"ph": "i", "cat": "%s", "s": "%s", "name": %s' % (cat, scope, json.dumps(name))
        else:  # the profiler's own marks: {"name", "ph", "s", ...}
            s = '{"name": %s, "ph": "i", "s": "%s"' % (json.dumps(name), scope)
        s += ', "pid": %s, "tid": %s, "ts": %s' % (json.dumps(pid), json.dumps(tid), self.ts(t))
        if args:
            s += ', "args": %s' % json.dumps(args)
        self.events.append(s + "}")


def rank_trace(rank, world, node, tr, pid, host, steps, t_start, step_ns, ends, style, per_step,
               shift_ns):
    now_ns = local_ns(t_start, tr) + shift_ns
    base = (now_ns // 1000000000 // BASE_INTERVAL_S) * BASE_INTERVAL_S * 1000000000
    w = Writer(style, base)
    L = lambda t: local_ns(t, tr) + shift_ns  # noqa: E731
    corr = 1000 * (rank + 1)
    ext = 1
    window0, window1 = t_start - 2000000, t_start + steps * step_ns + 2000000
    for k in range(steps):
        s0 = t_start + k * step_ns
        w.x("user_annotation", "ProfilerStep#%d" % k, pid, pid, L(s0), L(s0 + step_ns - 5000000),
            {"External id": ext, "Record function id": 0, "Ev Idx": ext - 1})
        ext += 1
        t = s0 + 200000
        for i in range(per_step):
            op0, op1 = t, t + 40000
            w.x("cpu_op", "aten::addmm", pid, pid, L(op0), L(op1),
                {"External id": ext, "Record function id": 0, "Ev Idx": ext - 1,
                 "Input Dims": [[64], [64, 128], [128, 64], [], []],
                 "Input type": ["float", "float", "float", "Scalar", "Scalar"],
                 "Sequence number": ext, "Fwd thread id": 0})
            l0, l1 = op0 + 10000, op0 + 15000
            corr += 1
            w.x("cuda_runtime", "cudaLaunchKernel", pid, pid, L(l0), L(l1),
                {"External id": ext, "cbid": 211, "correlation": corr})
            w.flow("s", corr, pid, pid, L(l0))
            k0, k1 = l0 + 30000 + 7000 * i, l0 + 52000 + 7000 * i
            w.x("kernel", "void gemm_kernel<float, 128, 64>(float const*, float*, int)", 0, 7,
                L(k0), L(k1),
                {"External id": ext, "queued": 0, "device": 0, "context": 1, "stream": 7,
                 "correlation": corr, "registers per thread": 72, "shared memory": 16384,
                 "blocks per SM": 0.984848, "warps per SM": 3.939394, "grid": [130, 1, 1],
                 "block": [128, 1, 1], "est. achieved occupancy %": 6})
            w.flow("f", corr, 0, 7, L(k0))
            ext += 1
            t = op1 + 5000
        # A host-to-device copy.
        corr += 1
        c0 = t + 5000
        w.x("cuda_runtime", "cudaMemcpyAsync", pid, pid, L(c0), L(c0 + 8000),
            {"External id": ext, "cbid": 41, "correlation": corr})
        w.flow("s", corr, pid, pid, L(c0))
        w.x("gpu_memcpy", "Memcpy HtoD (Pageable -> Device)", 0, 7, L(c0 + 20000), L(c0 + 60000),
            {"External id": ext, "device": 0, "context": 1, "stream": 7, "correlation": corr,
             "bytes": 1048576, "memory bandwidth (GB/s)": 26.2144})
        w.flow("f", corr, 0, 7, L(c0 + 20000))
        ext += 1
        # The all-reduce: each rank joins at its own time, all end together.
        join = s0 + 30000000 + 700000 * rank
        end = ends[k]
        coll = {"Collective name": "allreduce", "dtype": "Float", "In msg nelems": 1048576,
                "Out msg nelems": 1048576, "Group size": world, "In split size": "[]",
                "Out split size": "[]", "Global rank start": 0, "Global rank stride": 1,
                "Process Group Name": "0", "Process Group Description": "default_pg",
                "Process Group Ranks": "[%s]" % ", ".join(str(r) for r in range(world)),
                "Rank": rank}
        w.x("cpu_op", "record_param_comms", pid, pid, L(join - 30000), L(join - 5000),
            dict({"External id": ext, "Record function id": 0, "Ev Idx": ext - 1}, **coll))
        corr += 1
        w.x("cuda_runtime", "cudaLaunchKernel", pid, pid, L(join - 20000), L(join - 12000),
            {"External id": ext, "cbid": 211, "correlation": corr})
        w.flow("s", corr, pid, pid, L(join - 20000))
        kargs = {"External id": ext, "queued": 0, "device": 0, "context": 1, "stream": 20,
                 "correlation": corr, "registers per thread": 96, "shared memory": 8448,
                 "blocks per SM": 0.030303, "warps per SM": 0.484848, "grid": [4, 1, 1],
                 "block": [512, 1, 1], "est. achieved occupancy %": 0}
        kargs.update({kk: coll[kk] for kk in ("Collective name", "In msg nelems",
                                              "Out msg nelems", "Group size", "dtype")})
        w.x("kernel", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
            0, 20, L(join), L(end), kargs)
        w.flow("f", corr, 0, 20, L(join))
        ext += 1
        w.instant("[memory]", pid, pid, L(s0 + 1000000), cat="cpu_instant_event",
                  args={"Ev Idx": ext, "Device Type": 1, "Device Id": 0, "Addr": 139872036323328,
                        "Bytes": 512, "Total Allocated": 1024, "Total Reserved": 2097152})
    w.x("Trace", "PyTorch Profiler (0)", "Spans", "PyTorch Profiler", L(window0), L(window1),
        {"Op count": 0})
    w.meta("process_sort_index", "Spans", 0, L(window0), {"sort_index": 536870912})
    w.instant("Iteration Start: PyTorch Profiler", "Traces", "Trace PyTorch Profiler", L(window0),
              scope="g")
    # Metadata, after the activities as Kineto writes it.
    w.meta("process_name", pid, 0, L(window0), {"name": "python3"})
    w.meta("process_labels", pid, 0, L(window0), {"labels": "CPU"})
    w.meta("process_sort_index", pid, 0, L(window0), {"sort_index": pid})
    for g in range(16):
        w.meta("process_name", g, 0, L(window0), {"name": "python3"})
        w.meta("process_labels", g, 0, L(window0), {"labels": "GPU %d" % g})
        w.meta("process_sort_index", g, 0, L(window0), {"sort_index": 5000000 + g})
    w.meta("thread_name", pid, pid, L(window0), {"name": "thread %d (python3)" % pid})
    w.meta("thread_sort_index", pid, pid, L(window0), {"sort_index": pid})
    for stream in (7, 20):
        w.meta("thread_name", 0, stream, L(window0), {"name": "stream %d " % stream})
        w.meta("thread_sort_index", 0, stream, L(window0), {"sort_index": stream})
    w.instant("Record Window End", "", "", L(window1) + 1000, scope="g")
    return w, base


def render(w, base, base_at, style, rank, world, trace_name):
    dist = {"backend": "nccl", "rank": rank, "world_size": world, "pg_count": 1,
            "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
                           "pg_size": world, "ranks": list(range(world))}],
            "nccl_version": "2.20.5"}
    props = [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85029158912,
              "computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024,
              "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 32,
              "sharedMemPerBlock": 49152, "numSms": 132, "regsPerMultiprocessor": 65536,
              "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472}]
    out = ['{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    %s\n  ],\n' %
           ",\n    ".join(json.dumps(p) for p in props)]
    out.append('  "distributedInfo": %s,\n' % json.dumps(dist))
    if style == "new" and base_at == "start":
        out.append('  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": %d,\n' % base)
    out.append('  "traceEvents": [\n  ')
    out.append(",\n  ".join(w.events))
    out.append('\n  ],\n  "traceName": %s' % json.dumps(trace_name))
    if style == "new" and base_at == "end":
        out.append(',\n  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": %d' % base)
    out.append("\n}\n")
    return "".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rec")
    ap.add_argument("outdir")
    ap.add_argument("ranks", nargs="+", help="NODE[:new|old[:start|end[:gz]]], one per rank")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--events-per-step", type=int, default=4)
    ap.add_argument("--before", type=float, default=0,
                    help="start this many seconds before every node is aligned (not after)")
    ap.add_argument("--shift", type=float, default=0,
                    help="shift every rank's clock by this many seconds (another host's clock)")
    ap.add_argument("--pid", type=int, default=0, help="this pid for every rank (not the node's)")
    ap.add_argument("--check", action="store_true",
                    help="only say (exit status) whether the recording holds the steps yet")
    a = ap.parse_args()
    truth, procs, hosts, fits, first, last = truths_and_procs(a.rec)
    specs = []
    for r in a.ranks:
        parts = r.split(":")
        node = int(parts[0].lstrip("n"))
        style = parts[1] if len(parts) > 1 else "new"
        base_at = parts[2] if len(parts) > 2 else "end"
        gz = len(parts) > 3 and parts[3] == "gz"
        if node not in truth:
            raise SystemExit("node %d has no sim_truth in %s" % (node, a.rec))
        specs.append((node, style, base_at, gz))
    nodes = sorted(truth)
    if any(n not in fits for n in nodes) or any(s[0] not in procs for s in specs if not a.pid):
        raise SystemExit("not every node was aligned (%s) or named its process (%s) in the "
                         "recording" % (sorted(fits), sorted(procs)))
    truth, procs, hosts, fits, t_start, ends = job(a.rec, a.steps, len(specs), a.before)
    step_ns = STEP_NS
    if a.check:
        return
    files = []
    os.makedirs(a.outdir, exist_ok=True)
    for rank, (node, style, base_at, gz) in enumerate(specs):
        pid = a.pid or procs.get(node) or 40000 + node
        host = hosts.get(node, "host")
        tn = "%s/%s_%d.%d.pt.trace.json" % (a.outdir, host, pid, t_start)
        w, base = rank_trace(rank, len(specs), node, truth[node], pid, host, a.steps, t_start,
                             step_ns, ends, style, a.events_per_step, int(a.shift * 1e9))
        text = render(w, base, base_at, style, rank, len(specs), tn)
        path = "%s/rank%d.json%s" % (a.outdir, rank, ".gz" if gz else "")
        if gz:
            with gzip.open(path, "wt") as f:
                f.write(text)
        else:
            with open(path, "w") as f:
                f.write(text)
        files.append({"path": path, "node": node, "rank": rank, "pid": pid, "style": style,
                      "base_at": base_at, "offset_ns": truth[node]["offset_ns"],
                      "drift_ppm": truth[node]["drift_ppm"]})
    print(json.dumps({"steps": [{"step": k, "allreduce_end_ns": e} for k, e in enumerate(ends)],
                      "files": files, "t_start": t_start}))


if __name__ == "__main__":
    main()
