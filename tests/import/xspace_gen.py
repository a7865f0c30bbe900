#!/usr/bin/env python3
"""XSpace files (.xplane.pb) as JAX writes them per host, stamped with the
simulated clocks of a recording's nodes, for the import tests.

What a saved JAX profile holds (tsl/profiler/protobuf/xplane.proto; the
profiler's post-processing before saving):

  - a "/host:CPU" plane: one line per thread (id = tid, name = the thread's),
    events named by event_metadata (train steps with a step_num stat);
  - a "/device:GPU:0" plane: one line per stream ("Stream #7"), kernels with
    correlation_id and a kernel_details stat that refers (ref_value) to a
    stat metadata whose name is the details text;
  - a "Task Environment" plane whose stats hold profile_start_time (ns, the
    host's CLOCK_REALTIME);
  - XLine.timestamp_ns counted from that start (the saved profile is
    normalised to the session's start), XEvent offsets in ps from it;
  - XSpace.hostnames with the host's name.

Each rank's times are its node's simulated clock (as kineto_gen.py does),
and the steps' all-reduce kernels end at the same real times on every rank.

Usage: xspace_gen.py REC OUTDIR NODE ... [--steps N] [--absolute]
Prints JSON: {"steps": [...], "files": [...]}.
"""
import argparse
import json
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kineto_gen  # noqa: E402


def varint(v):
    v &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, wire, payload):
    tag = varint(num << 3 | wire)
    if wire == 0:
        return tag + varint(payload)
    if wire == 1:
        return tag + struct.pack("<d", payload)
    return tag + varint(len(payload)) + payload


def s(text):
    return text.encode()


class Plane:
    def __init__(self, pid, name):
        self.id, self.name, self.lines, self.ev, self.st, self.stats = pid, name, [], {}, {}, []

    def ev_id(self, name):
        return self.ev.setdefault(name, len(self.ev) + 1)

    def st_id(self, name):
        return self.st.setdefault(name, len(self.st) + 1)

    def stat(self, name, value, kind):
        sid = self.st_id(name)
        if kind == "u":
            body = field(1, 0, sid) + field(3, 0, value)
        elif kind == "i":
            body = field(1, 0, sid) + field(4, 0, value)
        elif kind == "ref":
            body = field(1, 0, sid) + field(7, 0, self.st_id(value))
        else:
            body = field(1, 0, sid) + field(5, 2, s(value))
        return body

    def encode(self):
        out = field(1, 0, self.id) + field(2, 2, s(self.name))
        for lid, lname, ts, events in self.lines:
            body = field(1, 0, lid) + field(2, 2, s(lname)) + field(3, 0, ts)
            for mid, off_ps, dur_ps, stats in events:
                ev = field(1, 0, mid) + field(2, 0, off_ps) + field(3, 0, dur_ps)
                for st in stats:
                    ev += field(4, 2, st)
                body += field(4, 2, ev)
            out += field(3, 2, body)
        for name, mid in self.ev.items():
            out += field(4, 2, field(1, 0, mid) + field(2, 2, field(1, 0, mid) + field(2, 2, s(name))))
        for name, sid in self.st.items():
            out += field(5, 2, field(1, 0, sid) + field(2, 2, field(1, 0, sid) + field(2, 2, s(name))))
        for st in self.stats:
            out += field(6, 2, st)
        return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("rec")
    ap.add_argument("outdir")
    ap.add_argument("nodes", nargs="+", type=lambda x: int(x.lstrip("n")))
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--absolute", action="store_true",
                    help="absolute timestamp_ns and no Task Environment (not as saved profiles are)")
    a = ap.parse_args()
    truth, procs, hosts, fits, t_start, ends = kineto_gen.job(a.rec, a.steps, len(a.nodes))
    step_ns = kineto_gen.STEP_NS
    os.makedirs(a.outdir, exist_ok=True)
    files = []
    for rank, node in enumerate(a.nodes):
        tr = truth[node]
        L = lambda t: kineto_gen.local_ns(t, tr)  # noqa: E731
        start = L(t_start - 1000000)  # the session started 1 ms before the first step
        base = 0 if a.absolute else start
        tid = 50000 + node
        host = Plane(1048576, "/host:CPU")
        gpu = Plane(0, "/device:GPU:0")
        hev, gev, nev = [], [], []
        for k in range(a.steps):
            s0 = t_start + k * step_ns
            hev.append((host.ev_id("train_step"), (L(s0) - start) * 1000, 90000000 * 1000,
                        [host.stat("step_num", k, "i")]))
            join = s0 + 30000000 + 700000 * rank
            gev.append((gpu.ev_id("fusion_%d" % (k % 3)), (L(s0 + 200000) - start) * 1000, 22000 * 1000,
                        [gpu.stat("correlation_id", 2 * k + 1, "u"),
                         gpu.stat("kernel_details", "regs:32 static_shared:0 dynamic_shared:0 grid:130,1,1 "
                                  "block:128,1,1 occ_pct:50", "ref")]))
            nev.append((gpu.ev_id("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), (L(join) - start) * 1000,
                        (L(ends[k]) - L(join)) * 1000, [gpu.stat("correlation_id", 2 * k + 2, "u")]))
        host.lines.append((tid, "python", start - base, hev))
        gpu.lines.append((7, "Stream #7", start - base, gev))
        gpu.lines.append((20, "Stream #20", start - base, nev))
        planes = [host, gpu]
        if not a.absolute:
            env = Plane(2097153, "Task Environment")
            env.stats.append(env.stat("profile_start_time", start, "u"))
            env.stats.append(env.stat("profile_stop_time", L(t_start + a.steps * step_ns), "u"))
            planes.append(env)
        data = b"".join(field(1, 2, p.encode()) for p in planes)
        data += field(4, 2, s(hosts.get(node, "host")))
        path = os.path.join(a.outdir, "rank%d.xplane.pb" % rank)
        with open(path, "wb") as f:
            f.write(data)
        files.append({"path": path, "node": node, "rank": rank})
    print(json.dumps({"steps": [{"step": k, "allreduce_end_ns": e} for k, e in enumerate(ends)],
                      "files": files, "t_start": t_start}))


if __name__ == "__main__":
    main()
