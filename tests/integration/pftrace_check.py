#!/usr/bin/env python3
"""A decoder of Perfetto's trace format written from its published protos
(the field numbers docs/PERFETTO.md lists), and the checks of a dptop
`.pftrace` export against the Chrome trace of the same recording.

  pftrace_check.py TRACE.pftrace CHROME.json   check, print a summary line
  pftrace_check.py --dump TRACE.pftrace        every packet, decoded

Checked: the wire format (every field of every message known or skipped
by its wire type, nothing left over); the sequence (its first packet clears
the state; interned names defined before use); the clocks (the delta clock
defined against CLOCK_REALTIME, the primary clock); every track (processes
with distinct pids and a node label, threads under them, counters); every
slice (BEGIN/END nest on their track, nothing left open) equal, as a
multiset of (node, name, start ns, end ns), to the Chrome trace's complete
events; flows (as many as the Chrome trace's arrows, every id begun on an
API call and terminated on GPU work); the counters (offset and ± of every
aligned node, equal to the Chrome metadata's offset at the fit's anchor
within a microsecond; GPU busy within 0..100 %; the collectives' skew
points as many as the Chrome counter's) and each node's clock snapshots.
"""
import collections
import json
import struct
import sys


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if not c & 0x80:
            return v, i
        if s > 63:
            raise ValueError("varint too long")


def fields(b):
    """(number, wire type, value) of every field of a message; LEN values as bytes."""
    i, out = 0, []
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise ValueError("field number 0")
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v = struct.unpack_from("<Q", b, i)[0]
            i += 8
        elif wt == 2:
            n, i = varint(b, i)
            if i + n > len(b):
                raise ValueError("length beyond the message")
            v = b[i:i + n]
            i += n
        elif wt == 5:
            v = struct.unpack_from("<I", b, i)[0]
            i += 4
        else:
            raise ValueError("wire type %d" % wt)
        out.append((num, wt, v))
    return out


def msg(b):
    d = collections.defaultdict(list)
    for num, wt, v in fields(b):
        d[num].append(v)
    return d


def s64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def one(d, k, default=None):
    return d[k][-1] if k in d and d[k] else default


def decode(path):
    data = open(path, "rb").read()
    packets = [v for num, wt, v in fields(data) if num == 1 and wt == 2]
    if len(packets) != len(fields(data)):
        raise ValueError("the file holds fields other than Trace.packet (1)")
    return packets


class Trace:
    def __init__(self, path):
        self.tracks = {}
        self.slices = []     # (track uuid, name, cat, start, end, flows, term flows, debug)
        self.instants = []
        self.counters = collections.defaultdict(list)  # uuid -> [(t, value)]
        self.snapshots = []  # {clock id: ts}
        self.names, self.cats, self.dnames = {}, {}, {}
        self.primary = None
        open_ = collections.defaultdict(list)
        clock_t = None
        default_clock = None
        incremental = set()
        seq_cleared = False
        packets = decode(path)
        self.npackets = len(packets)
        for n, raw in enumerate(packets):
            p = msg(raw)
            if one(p, 10) != 1:
                raise ValueError("packet %d: sequence id %s" % (n, one(p, 10)))
            flags = one(p, 13, 0)
            if n == 0:
                if not flags & 1:
                    raise ValueError("the first packet does not clear the incremental state")
                seq_cleared = True
            if flags & 2 and not seq_cleared:
                raise ValueError("packet %d needs a state never cleared" % n)
            if len(p.get(12, [])) > 1:
                raise ValueError("packet %d: InternedData twice (a reader keeps the last)" % n)
            for idata in p.get(12, []):
                d = msg(idata)
                for k, table in ((1, self.cats), (2, self.names), (3, self.dnames)):
                    for e in d.get(k, []):
                        e = msg(e)
                        table[one(e, 1)] = one(e, 2).decode()
            if len(p.get(6, [])) > 1 or len(p.get(60, [])) > 1 or len(p.get(11, [])) > 1:
                raise ValueError("packet %d: a field of the data oneof twice" % n)
            for cs in p.get(6, []):
                c = msg(cs)
                snap = {}
                for cl in c.get(1, []):
                    cl = msg(cl)
                    snap[one(cl, 1)] = one(cl, 2)
                    if one(cl, 3, 0):
                        incremental.add(one(cl, 1))
                if one(c, 2) is not None:
                    self.primary = one(c, 2)
                if default_clock in snap or (n == 0 and 64 in snap):
                    clock_t = snap.get(64)
                self.snapshots.append(snap)
            if 59 in p:
                default_clock = one(msg(one(p, 59)), 58)
            if 60 in p:
                td = msg(one(p, 60))
                t = {"uuid": one(td, 1), "parent": one(td, 5),
                     "name": one(td, 2, b"").decode()}
                if 3 in td:
                    pd = msg(one(td, 3))
                    t["process"] = {"pid": s64(one(pd, 1)), "name": one(pd, 6, b"").decode(),
                                    "labels": [x.decode() for x in pd.get(8, [])]}
                if 4 in td:
                    th = msg(one(td, 4))
                    t["thread"] = {"pid": s64(one(th, 1)), "tid": s64(one(th, 2)),
                                   "name": one(th, 5, b"").decode()}
                if 8 in td:
                    t["counter"] = {"unit_name": one(msg(one(td, 8)), 6, b"").decode()}
                if t["uuid"] in self.tracks:
                    raise ValueError("track %d described twice" % t["uuid"])
                self.tracks[t["uuid"]] = t
            ts = None
            if 8 in p:
                if default_clock != 64 or 64 not in incremental or clock_t is None:
                    raise ValueError("packet %d: a timestamp without the delta clock" % n)
                clock_t += one(p, 8)
                ts = clock_t
            if 11 in p:
                te = msg(one(p, 11))
                typ, uuid = one(te, 9), one(te, 11)
                if uuid not in self.tracks:
                    raise ValueError("packet %d: event on undescribed track %s" % (n, uuid))
                if ts is None:
                    raise ValueError("packet %d: an event without a timestamp" % n)
                if typ in (1, 3):
                    name = self.names[one(te, 10)]
                    cat = self.cats[one(te, 3)]
                    debug = {}
                    for da in te.get(4, []):
                        da = msg(da)
                        debug[self.dnames[one(da, 1)]] = s64(one(da, 4, 0))
                    ev = [uuid, name, cat, ts, ts, list(te.get(47, [])), list(te.get(48, [])),
                          debug]
                    if typ == 1:
                        open_[uuid].append(ev)
                    else:
                        self.instants.append(ev)
                elif typ == 2:
                    if not open_[uuid]:
                        raise ValueError("packet %d: END on track %d with nothing open" % (n, uuid))
                    ev = open_[uuid].pop()
                    ev[4] = ts
                    self.slices.append(ev)
                elif typ == 4:
                    if "counter" not in self.tracks[uuid]:
                        raise ValueError("a counter value on a track that is not a counter")
                    self.counters[uuid].append((ts, struct.unpack("<d", struct.pack(
                        "<Q", one(te, 44)))[0]))
                else:
                    raise ValueError("packet %d: event type %s" % (n, typ))
        left = sum(len(v) for v in open_.values())
        if left:
            raise ValueError("%d slices never ended" % left)
        if self.primary != 1:
            raise ValueError("the primary trace clock is %s, not CLOCK_REALTIME (1)" % self.primary)

    def node_of(self, uuid):
        t = self.tracks[uuid]
        while "process" not in t:
            t = self.tracks[t["parent"]]
        return int([lab for lab in t["process"]["labels"] if lab.startswith("node=")][0][5:])


def check(ptrace, chrome):
    tr = Trace(ptrace)
    d = json.load(open(chrome))
    meta = d["metadata"]
    origin = meta["origin_ns"]
    procs = [t for t in tr.tracks.values() if "process" in t]
    pids = [t["process"]["pid"] for t in procs]
    assert len(set(pids)) == len(pids), "two processes share a pid"
    for t in tr.tracks.values():
        if "thread" in t:
            parent = tr.tracks[t["parent"]]
            assert t["thread"]["pid"] == parent["process"]["pid"], "a thread outside its process"

    def us_ns(v):
        return round(float(v) * 1000)

    want = collections.Counter()
    for e in d["traceEvents"]:
        if e.get("ph") in ("X", "i") and isinstance(e["pid"], int) and e["pid"] < 65536:
            t0 = origin + us_ns(e["ts"])
            want[(e["pid"], e["name"], t0, t0 + us_ns(e.get("dur", 0)))] += 1
    got = collections.Counter()
    for ev in tr.slices:
        got[(tr.node_of(ev[0]), ev[1], ev[3], ev[4])] += 1
    for ev in tr.instants:
        got[(tr.node_of(ev[0]), ev[1], ev[3], ev[3])] += 1
    missing, extra = want - got, got - want
    assert not missing and not extra, "slices differ: %d missing (%s), %d extra (%s)" % (
        sum(missing.values()), list(missing)[:3], sum(extra.values()), list(extra)[:3])
    # Flows: begun on API calls, ended on GPU work, as many as the Chrome arrows.
    begun = collections.Counter(f for ev in tr.slices for f in ev[5])
    ended = collections.Counter(f for ev in tr.slices for f in ev[6])
    assert all(ev[2] == "api" for ev in tr.slices if ev[5]), "a flow begun elsewhere than an API call"
    assert all(ev[2] in ("kernel", "memcpy", "memset") for ev in tr.slices if ev[6])
    assert set(begun) == set(ended) and max(begun.values(), default=1) == 1
    arrows = sum(1 for e in d["traceEvents"] if e.get("ph") == "s")
    assert len(begun) == arrows, "%d flows, the Chrome trace has %d" % (len(begun), arrows)
    # Counters: offset and ± of every aligned node; the collectives' skew.
    names = {t["name"]: u for u, t in tr.tracks.items() if "counter" in t}
    offsets = 0
    for a in meta["alignment"]:
        if not a["aligned"] or a.get("reference"):
            continue
        u = names["n%d clock offset (global − own)" % a["node"]]
        pts = tr.counters[u]
        assert pts, "no offset points for node %d" % a["node"]
        near = min(pts, key=lambda p: abs(p[0] - a["anchor_ns"]))
        # The fit's offset at that point of the node's own clock (its drift).
        x = near[0] - near[1]
        want_off = a["offset_ns"] + a["drift_ppb"] * 1e-9 * (x - a["anchor_ns"])
        assert abs(near[1] - want_off) < 1000, (near, want_off)
        assert tr.counters[names["n%d clock ±uncertainty" % a["node"]]]
        offsets += 1
    busy = [tr.counters[u] for n, u in names.items() if n.endswith(" GPU busy")]
    assert busy and all(pts and all(0 <= v <= 100 for _, v in pts) for pts in busy), \
        "no GPU busy counter, or a value outside 0..100"
    skew = tr.counters.get(names.get("collectives: arrival skew"), [])
    cmeta = meta.get("collectives", {})
    assert len(skew) == cmeta.get("late", 0) + cmeta.get("within_uncertainty", 0)
    snaps = [s for s in tr.snapshots if any(k >= 128 for k in s)]
    assert snaps, "no node clock snapshots"
    print("pftrace: %d packets, %d tracks (%d processes), %d slices and %d instants equal to the Chrome "
          "trace's, %d flows, offset counters of %d nodes, %d skew points, %d node clock "
          "snapshots" % (tr.npackets, len(tr.tracks), len(procs), len(tr.slices), len(tr.instants),
                         len(begun), offsets, len(skew), len(snaps)))


def main():
    if sys.argv[1] == "--dump":
        for raw in decode(sys.argv[2]):
            print(dict(msg(raw)))
        return 0
    check(sys.argv[1], sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
