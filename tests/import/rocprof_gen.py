#!/usr/bin/env python3
"""rocprofv3 output of a simulated job, stamped with the simulated clocks
of a recording's nodes, for the import tests.

Per rank (one node each) it writes what `rocprofv3 --kernel-trace
--hip-trace --memory-copy-trace --marker-trace --output-format csv` writes
into HOST/ (file names PID_<kind>_trace.csv), in the column layout of a
release:

  --layout 6.4   kernel_trace with 18 columns (ROCm 6.2 to 6.4): Kind,
                 Agent_Id, Queue_Id, Thread_Id, Dispatch_Id, Kernel_Id,
                 Kernel_Name, Correlation_Id, Start_Timestamp, End_Timestamp,
                 Private_Segment_Size, Group_Segment_Size, Workgroup_Size_X..Z,
                 Grid_Size_X..Z; memory_copy_trace with 7;
  --layout 7.0   22 columns (Stream_Id, LDS_Block_Size, Scratch_Size,
                 VGPR_Count, Accum_VGPR_Count, SGPR_Count; Agent_Id "Agent N"),
                 memory_copy_trace with 8 (Stream_Id);

hip_api_trace and marker_api_trace: Domain, Function, Process_Id,
Thread_Id, Correlation_Id, Start_Timestamp, End_Timestamp.  Strings are
quoted without escaping, numbers bare, as rocprofv3's csv encoder does.

Times are CLOCK_BOOTTIME ns on the node's simulated clock: the host's
boottime at real time t is t - (CLOCK_REALTIME - CLOCK_BOOTTIME), measured
here, plus the node's OFFSET + DRIFT * 1e-6 * (t - t0) from its sim_truth.
The steps are those of kineto_gen.py (the same real times), so the
all-reduce kernels of all ranks end together.

Usage: rocprof_gen.py REC OUTDIR NODE ... [--layout 6.4|7.0] [--format csv|json] [--steps N]

With --format json it writes PID_results.json instead, in the layout of
rocprofv3 --output-format json (its cereal archive: rocprofiler-sdk-tool,
metadata, agents, strings, kernel_symbols, buffer_records).
Prints JSON: {"steps": [...], "files": [...], "t_start": ns}.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kineto_gen  # noqa: E402


def real_minus_boot():
    """CLOCK_REALTIME - CLOCK_BOOTTIME, from the tightest of several brackets."""
    best = None
    for _ in range(50):
        b1 = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        r = time.clock_gettime_ns(time.CLOCK_REALTIME)
        b2 = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
        if best is None or b2 - b1 < best[0]:
            best = (b2 - b1, r - (b1 + b2) // 2)
    return best[1]


def q(s):
    return '"%s"' % s


def write_csv(d, pid, recs, layout):
    """rocprofv3's CSV files (quoted strings, bare numbers) in a release's layout."""
    new = layout == "7.0"
    agent = q("Agent 4") if new else "4"
    tid = pid + 3
    rows = {"kernel": [], "hip_api": [], "memory_copy": [], "marker_api": []}
    for n, r in enumerate(recs["kernel"]):
        if new:
            rows["kernel"].append([q("KERNEL_DISPATCH"), agent, r["queue"], 0, tid, n + 1, r["kid"],
                                   q(r["name"]), r["corr"], r["t0"], r["t1"], r["lds"], 0, 64, 0, 24,
                                   r["wg"], 1, 1, r["grid"], 1, 1])
        else:
            rows["kernel"].append([q("KERNEL_DISPATCH"), 4, r["queue"], tid, n + 1, r["kid"],
                                   q(r["name"]), r["corr"], r["t0"], r["t1"], 0, r["lds"], r["wg"], 1,
                                   1, r["grid"], 1, 1])
    for r in recs["hip_api"]:
        rows["hip_api"].append([q("HIP_RUNTIME_API"), q(r["fn"]), pid, pid, r["corr"], r["t0"], r["t1"]])
    for r in recs["memory_copy"]:
        rows["memory_copy"].append([q("MEMORY_COPY"), q(r["dir"])] + ([0] if new else []) +
                                   ([agent, q("Agent 0")] if new else [0, 4]) +
                                   [r["corr"], r["t0"], r["t1"]])
    for r in recs["marker_api"]:
        rows["marker_api"].append([q("MARKER_CORE_API"), q(r["msg"]), pid, pid, 0, r["t0"], r["t1"]])
    if new:
        kh = ("Kind,Agent_Id,Queue_Id,Stream_Id,Thread_Id,Dispatch_Id,Kernel_Id,Kernel_Name,"
              "Correlation_Id,Start_Timestamp,End_Timestamp,LDS_Block_Size,Scratch_Size,"
              "VGPR_Count,Accum_VGPR_Count,SGPR_Count,Workgroup_Size_X,Workgroup_Size_Y,"
              "Workgroup_Size_Z,Grid_Size_X,Grid_Size_Y,Grid_Size_Z")
        ch = ("Kind,Direction,Stream_Id,Source_Agent_Id,Destination_Agent_Id,Correlation_Id,"
              "Start_Timestamp,End_Timestamp")
    else:
        kh = ("Kind,Agent_Id,Queue_Id,Thread_Id,Dispatch_Id,Kernel_Id,Kernel_Name,Correlation_Id,"
              "Start_Timestamp,End_Timestamp,Private_Segment_Size,Group_Segment_Size,"
              "Workgroup_Size_X,Workgroup_Size_Y,Workgroup_Size_Z,Grid_Size_X,Grid_Size_Y,Grid_Size_Z")
        ch = ("Kind,Direction,Source_Agent_Id,Destination_Agent_Id,Correlation_Id,"
              "Start_Timestamp,End_Timestamp")
    ah = "Domain,Function,Process_Id,Thread_Id,Correlation_Id,Start_Timestamp,End_Timestamp"
    written = []
    for kind, head in (("kernel", kh), ("hip_api", ah), ("memory_copy", ch), ("marker_api", ah)):
        path = os.path.join(d, "%d_%s_trace.csv" % (pid, kind))
        with open(path, "w") as f:
            f.write(",".join(q(h) for h in head.split(",")) + "\n")
            for r in rows[kind]:
                f.write(",".join(str(x) for x in r) + "\n")
        written.append(path)
    return written


# rocprofiler_buffer_tracing_kind_t values as this generator numbers them; a
# reader resolves every kind and operation through strings.buffer_records.
KINDS = ["NONE", "HSA_CORE_API", "HSA_AMD_EXT_API", "HSA_IMAGE_EXT_API", "HSA_FINALIZE_EXT_API",
         "HIP_RUNTIME_API", "HIP_COMPILER_API", "MARKER_CORE_API", "MARKER_CONTROL_API",
         "MARKER_NAME_API", "MEMORY_COPY", "KERNEL_DISPATCH"]
HIP_OPS = ["HIP_API_ID_NONE"] + ["hipOp%d" % i for i in range(1, 40)]
HIP_OPS[12], HIP_OPS[25], HIP_OPS[31] = "hipLaunchKernel", "hipMemcpyAsync", "hipExtLaunchKernel"
MARKER_OPS = ["ROCTX_API_ID_NONE", "roctxMarkA", "roctxRangePushA", "roctxRangePop",
              "roctxRangeStartA", "roctxRangeStop"]
COPY_OPS = ["MEMORY_COPY_NONE", "MEMORY_COPY_HOST_TO_HOST", "MEMORY_COPY_HOST_TO_DEVICE",
            "MEMORY_COPY_DEVICE_TO_HOST", "MEMORY_COPY_DEVICE_TO_DEVICE"]


def write_json(d, pid, recs):
    """rocprofv3 --output-format json: PID_results.json, as its cereal archive lays it out."""
    tid = pid + 3
    ops = {"HIP_RUNTIME_API": HIP_OPS, "MARKER_CORE_API": MARKER_OPS, "MEMORY_COPY": COPY_OPS,
           "KERNEL_DISPATCH": ["DISPATCH_NONE", "KERNEL_DISPATCH_ENQUEUE", "KERNEL_DISPATCH_COMPLETE"]}
    strings = {"callback_records": [],
               "buffer_records": [{"kind": k, "operations": ops.get(k, [])} for k in KINDS],
               "marker_api": [{"key": r["corr"], "value": r["msg"]} for r in recs["marker_api"]],
               "correlation_id": {"external": []}}
    cid = lambda c: {"internal": c, "external": 0, "ancestor": 0}  # noqa: E731
    kernels = [{"size": 96, "kind": KINDS.index("KERNEL_DISPATCH"), "operation": 2, "thread_id": tid,
                "correlation_id": cid(r["corr"]), "start_timestamp": r["t0"], "end_timestamp": r["t1"],
                "dispatch_info": {"size": 80, "agent_id": {"handle": 1012}, "queue_id": {"handle": r["queue"]},
                                  "kernel_id": r["kid"], "dispatch_id": n + 1, "private_segment_size": 0,
                                  "group_segment_size": r["lds"],
                                  "workgroup_size": {"x": r["wg"], "y": 1, "z": 1},
                                  "grid_size": {"x": r["grid"], "y": 1, "z": 1}},
                "stream_id": {"handle": 0}} for n, r in enumerate(recs["kernel"])]
    api = [{"size": 48, "kind": KINDS.index("HIP_RUNTIME_API"), "operation": HIP_OPS.index(r["fn"]),
            "correlation_id": cid(r["corr"]), "start_timestamp": r["t0"], "end_timestamp": r["t1"],
            "thread_id": pid} for r in recs["hip_api"]]
    copies = [{"size": 72, "kind": KINDS.index("MEMORY_COPY"), "operation": COPY_OPS.index(r["dir"]),
               "thread_id": pid, "correlation_id": cid(r["corr"]), "start_timestamp": r["t0"],
               "end_timestamp": r["t1"], "dst_agent_id": {"handle": 1012}, "src_agent_id": {"handle": 1000},
               "bytes": 1048576} for r in recs["memory_copy"]]
    markers = [{"size": 48, "kind": KINDS.index("MARKER_CORE_API"), "operation": MARKER_OPS.index(r["fn"]),
                "correlation_id": cid(r["corr"]), "start_timestamp": r["t0"], "end_timestamp": r["t1"],
                "thread_id": pid} for r in recs["marker_api"]]
    agents = [{"size": 1024, "id": {"handle": 1000}, "type": 1, "node_id": 0, "logical_node_id": 0,
               "name": "AMD EPYC 9654", "product_name": "AMD EPYC 9654"},
              {"size": 1024, "id": {"handle": 1012}, "type": 2, "node_id": 4, "logical_node_id": 1,
               "name": "gfx942", "product_name": "AMD Instinct MI300X"}]
    symbols = [{"kernel_id": 0, "formatted_kernel_name": "0"}]
    for r in recs["kernel"]:
        if all(s["kernel_id"] != r["kid"] for s in symbols):
            symbols.append({"kernel_id": r["kid"], "code_object_id": 1, "kernel_name": "_Z" + r["name"][:8],
                            "formatted_kernel_name": r["name"], "demangled_kernel_name": r["name"]})
    doc = {"rocprofiler-sdk-tool": [{
        "metadata": {"pid": pid, "init_time": recs["marker_api"][0]["t0"] - 1000000,
                     "fini_time": recs["kernel"][-1]["t1"] + 1000000, "command": ["python3", "train.py"]},
        "agents": agents, "counters": [], "strings": strings, "code_objects": [],
        "kernel_symbols": symbols, "host_functions": [], "summary": [], "callback_records": {},
        "buffer_records": {"kernel_dispatch": kernels, "hip_api": api, "memory_copy": copies,
                           "marker_api": markers}}]}
    path = os.path.join(d, "%d_results.json" % pid)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rec")
    ap.add_argument("outdir")
    ap.add_argument("nodes", nargs="+", type=lambda s: int(s.lstrip("n")))
    ap.add_argument("--layout", choices=("6.4", "7.0"), default="6.4")
    ap.add_argument("--format", choices=("csv", "json"), default="csv")
    ap.add_argument("--steps", type=int, default=20)
    a = ap.parse_args()
    truth, procs, hosts, fits, t_start, ends = kineto_gen.job(a.rec, a.steps, len(a.nodes))
    step_ns = kineto_gen.STEP_NS
    rb = real_minus_boot()
    files = []
    for rank, node in enumerate(a.nodes):
        tr = truth[node]
        pid = procs.get(node) or 40000 + node
        B = lambda t: kineto_gen.local_ns(t, tr) - rb  # noqa: E731
        d = os.path.join(a.outdir, "rank%d" % rank, hosts.get(node, "host"))
        os.makedirs(d, exist_ok=True)
        recs = {"kernel": [], "hip_api": [], "memory_copy": [], "marker_api": []}
        corr = 0
        for k in range(a.steps):
            s0 = t_start + k * step_ns
            corr += 1
            recs["marker_api"].append(dict(fn="roctxRangePushA", msg="step %d" % k, corr=corr,
                                           t0=B(s0), t1=B(s0 + 90000000)))
            t = s0 + 200000
            for i in range(4):
                corr += 1
                recs["hip_api"].append(dict(fn="hipLaunchKernel", corr=corr, t0=B(t), t1=B(t + 6000)))
                recs["kernel"].append(dict(name="void gemm_kernel<float, 128, 64>(float const*, float*, int)",
                                           kid=12, queue=1, corr=corr, t0=B(t + 25000), t1=B(t + 47000),
                                           grid=33280, wg=256, lds=16384))
                t += 50000
            corr += 1
            recs["hip_api"].append(dict(fn="hipMemcpyAsync", corr=corr, t0=B(t), t1=B(t + 8000)))
            recs["memory_copy"].append(dict(dir="MEMORY_COPY_HOST_TO_DEVICE", corr=corr,
                                            t0=B(t + 20000), t1=B(t + 60000)))
            join = s0 + 30000000 + 700000 * rank
            corr += 1
            recs["hip_api"].append(dict(fn="hipExtLaunchKernel", corr=corr, t0=B(join - 20000),
                                        t1=B(join - 12000)))
            recs["kernel"].append(dict(name="ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                                       kid=31, queue=2, corr=corr, t0=B(join), t1=B(ends[k]), grid=2048,
                                       wg=512, lds=8448))
        if a.format == "json":
            written = [write_json(d, pid, recs)]
        else:
            written = write_csv(d, pid, recs, a.layout)
        files.append({"node": node, "rank": rank, "pid": pid, "paths": written, "dir": d})
    print(json.dumps({"steps": [{"step": k, "allreduce_end_ns": e} for k, e in enumerate(ends)],
                      "files": files, "t_start": t_start, "real_minus_boot": rb}))


if __name__ == "__main__":
    main()
