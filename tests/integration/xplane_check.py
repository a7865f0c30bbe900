#!/usr/bin/python3
"""Check a dptop XSpace export (.xplane.pb) and window statistics (JSON lines).

No protobuf package is needed (nor available): the file is read with a small
wire-format decoder written from tsl/profiler/protobuf/xplane.proto, and
every field number and wire type is checked against that definition, so a
field written under the wrong number or type fails here.

    xplane_check.py XSPACE.pb [--windows W.jsonl] [--nodes N] [--chrome T.json]
                    [--per-node DIR] [--max-skew-ns NS]

Asserts (see tests/integration/test_dptop_xplane.sh):
  * a host plane and at least one device plane per node, with node stats and
    the alignment (offset, drift, uncertainty) of the node on the host plane;
  * the "Task Environment" plane with profile_start_time < profile_stop_time,
    and XSpace.hostnames holding every node's host;
  * step markers as xprof's step tools read them (one "train" event
    metadata, step_num = N and _r = 1 stats) with increasing numbers per node;
  * launch arrows: a "flow" stat (xprof's XFlow: category 9, direction 2 on
    the API call, 1 on its GPU work, the same id) on every pair;
  * kernels on device lines with durations > 0, and their stats;
  * the "/host:__ScopeRangeCallStack__" plane: a forest (each child once, no
    cycles), holding every scope id the events carry, and consistent with
    the ranges (a layer range lies inside its parent's range);
  * each step's collective ("allreduce") starts within --max-skew-ns across
    nodes on the global time base (with --windows: in the windows whose fits
    claim an uncertainty within --max-unc-ns for every node);
  * with --chrome: the same events at the same aligned times as the Chrome
    export of the same recording;
  * with --per-node: one XSpace per node with xprof's single-host plane names;
  * with --windows: win / edge_fit / node_fit / solve lines for every edge,
    node and window once every node has joined.
Prints a summary line and exits 0, or raises (non-zero exit) on a failure.
"""
import argparse
import json
import os
import re
import struct
import sys

# ---- wire format ---------------------------------------------------------------

VARINT, FIXED64, LEN, FIXED32 = 0, 1, 2, 5


class WireError(Exception):
    pass


def read_varint(buf, pos):
    v = shift = 0
    for i in range(10):
        if pos >= len(buf):
            raise WireError("truncated varint at %d" % pos)
        b = buf[pos]
        pos += 1
        v |= (b & 0x7F) << shift
        if b < 0x80:
            if i > 0 and b == 0:
                raise WireError("non-minimal varint before %d" % pos)
            return v, pos
        shift += 7
    raise WireError("varint longer than 10 bytes at %d" % pos)


def fields(buf):
    """Yield (field, wire, value) of one message; value: int or bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = read_varint(buf, pos)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise WireError("field number 0")
        if wire == VARINT:
            v, pos = read_varint(buf, pos)
        elif wire == FIXED64:
            if pos + 8 > len(buf):
                raise WireError("truncated fixed64")
            v = struct.unpack_from("<Q", buf, pos)[0]
            pos += 8
        elif wire == LEN:
            n, pos = read_varint(buf, pos)
            if pos + n > len(buf):
                raise WireError("length %d beyond the message" % n)
            v = bytes(buf[pos:pos + n])
            pos += n
        elif wire == FIXED32:
            if pos + 4 > len(buf):
                raise WireError("truncated fixed32")
            v = struct.unpack_from("<I", buf, pos)[0]
            pos += 4
        else:
            raise WireError("wire type %d (groups are not used by xplane.proto)" % wire)
        yield field, wire, v


def int64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


# The messages of xplane.proto: field -> (name, proto type, repeated).
SCHEMA = {
    "XSpace": {1: ("planes", "XPlane", True), 2: ("errors", "string", True),
               3: ("warnings", "string", True), 4: ("hostnames", "string", True)},
    "XPlane": {1: ("id", "int64", False), 2: ("name", "string", False),
               3: ("lines", "XLine", True), 4: ("event_metadata", "EventMetadataEntry", True),
               5: ("stat_metadata", "StatMetadataEntry", True), 6: ("stats", "XStat", True)},
    "XLine": {1: ("id", "int64", False), 10: ("display_id", "int64", False),
              2: ("name", "string", False), 11: ("display_name", "string", False),
              3: ("timestamp_ns", "int64", False), 9: ("duration_ps", "int64", False),
              4: ("events", "XEvent", True)},
    "XEvent": {1: ("metadata_id", "int64", False), 2: ("offset_ps", "int64", False),
               5: ("num_occurrences", "int64", False), 3: ("duration_ps", "int64", False),
               4: ("stats", "XStat", True)},
    "XStat": {1: ("metadata_id", "int64", False), 2: ("double_value", "double", False),
              3: ("uint64_value", "uint64", False), 4: ("int64_value", "int64", False),
              5: ("str_value", "string", False), 6: ("bytes_value", "bytes", False),
              7: ("ref_value", "uint64", False)},
    "XEventMetadata": {1: ("id", "int64", False), 2: ("name", "string", False),
                       4: ("display_name", "string", False), 3: ("metadata", "bytes", False),
                       5: ("stats", "XStat", True), 6: ("child_id", "int64", True)},
    "XStatMetadata": {1: ("id", "int64", False), 2: ("name", "string", False),
                      3: ("description", "string", False)},
    # map<int64, M> entries
    "EventMetadataEntry": {1: ("key", "int64", False), 2: ("value", "XEventMetadata", False)},
    "StatMetadataEntry": {1: ("key", "int64", False), 2: ("value", "XStatMetadata", False)},
}
WIRE = {"int64": VARINT, "uint64": VARINT, "double": FIXED64, "string": LEN, "bytes": LEN}
ONEOFS = {"XEvent": [("offset_ps", "num_occurrences")],
          "XStat": [("double_value", "uint64_value", "int64_value", "str_value", "bytes_value",
                     "ref_value")]}


def decode(msg, buf):
    out = {}
    for field, wire, v in fields(buf):
        if field not in SCHEMA[msg]:
            raise WireError("%s has no field %d" % (msg, field))
        name, typ, rep = SCHEMA[msg][field]
        if typ in SCHEMA:
            if wire != LEN:
                raise WireError("%s.%s: wire type %d, want LEN" % (msg, name, wire))
            val = decode(typ, v)
        elif typ == "int64" and wire == LEN:
            # packed repeated int64 (child_id)
            if not rep:
                raise WireError("%s.%s: packed but not repeated" % (msg, name))
            vals, p = [], 0
            while p < len(v):
                x, p = read_varint(v, p)
                vals.append(int64(x))
            out.setdefault(name, []).extend(vals)
            continue
        else:
            if wire != WIRE[typ]:
                raise WireError("%s.%s: wire type %d, want %d" % (msg, name, wire, WIRE[typ]))
            if typ == "int64":
                val = int64(v)
            elif typ == "double":
                val = struct.unpack("<d", struct.pack("<Q", v))[0]
            elif typ == "string":
                val = v.decode("utf-8")  # proto3 strings must be UTF-8
            else:
                val = v
        if rep:
            out.setdefault(name, []).append(val)
        else:
            if name in out:
                raise WireError("%s.%s given twice" % (msg, name))
            out[name] = val
    for group in ONEOFS.get(msg, []):
        if sum(1 for g in group if g in out) > 1:
            raise WireError("%s: more than one member of a oneof" % msg)
    return out


def load(path):
    with open(path, "rb") as f:
        return decode("XSpace", f.read())


# ---- views ---------------------------------------------------------------------


def stat_value(s):
    for k in ("int64_value", "uint64_value", "double_value", "str_value", "bytes_value",
              "ref_value"):
        if k in s:
            return s[k]
    raise AssertionError("a stat without a value: %r" % s)


def plane_views(space):
    """Planes with their metadata resolved: name -> dict."""
    out = {}
    for p in space.get("planes", []):
        name = p.get("name", "")
        assert name not in out, "two planes named %r" % name
        emd = {}
        for e in p.get("event_metadata", []):
            v = e.get("value", {})
            assert e.get("key", 0) == v.get("id", 0), "event metadata key != id in %s" % name
            emd[e["key"]] = v.get("name", "")
        smd = {}
        for e in p.get("stat_metadata", []):
            v = e.get("value", {})
            assert e.get("key", 0) == v.get("id", 0), "stat metadata key != id in %s" % name
            smd[e["key"]] = v.get("name", "")
        assert len(set(smd.values())) == len(smd), "two stat metadata of one name in %s" % name

        def stats(lst, smd=smd):
            return {smd.get(s.get("metadata_id", 0), s.get("metadata_id", 0)): stat_value(s)
                    for s in lst}

        lines = []
        for ln in p.get("lines", []):
            ts = ln.get("timestamp_ns", 0)
            evs = []
            for e in ln.get("events", []):
                assert "offset_ps" in e, "an event without offset_ps in %s" % name
                md = e.get("metadata_id", 0)
                assert md in emd, "event metadata %d unknown in %s" % (md, name)
                dur = e.get("duration_ps", 0)
                assert dur >= 0
                start_ps = ts * 1000 + e["offset_ps"]
                evs.append({"name": emd[md], "start_ps": start_ps, "end_ps": start_ps + dur,
                            "dur_ps": dur, "stats": stats(e.get("stats", []))})
            lines.append({"id": ln.get("id", 0), "name": ln.get("name", ""), "ts": ts,
                          "duration_ps": ln.get("duration_ps", 0), "events": evs})
        # xprof keeps a 32-bit resource id per line: unique ones, in 32 bits.
        ids = [ln["id"] for ln in lines]
        assert len(set(ids)) == len(ids), "two lines share an id in %s" % name
        assert all(0 <= i < 1 << 31 for i in ids), "a line id beyond 31 bits in %s" % name
        out[name] = {"id": p.get("id", 0), "lines": lines, "stats": stats(p.get("stats", [])),
                     "raw": p}
    return out


# ---- checks --------------------------------------------------------------------

def is_step(e):
    return e["name"] == "train" and "step_num" in e["stats"]
HOST_RE = re.compile(r"^/host:CPU:n(\d+) (.*)$")
GPU_RE = re.compile(r"^/device:GPU:(\d+)$")
TREE = "/host:__ScopeRangeCallStack__"


def fit_windows(path):
    """The time base of each window from a window-statistics file: a list of
    (from_ns, to_ns on the global time base, {node: (aligned, uncertainty_ns)})."""
    per, ref_span = {}, {}
    for line in open(path):
        d = json.loads(line)
        if d["type"] != "node_fit":
            continue
        per.setdefault(d["window"], {})[d["node"]] = (d["aligned"], d["uncertainty_ns"])
        if d["node"] == d["ref"]:  # the reference's probe clock is the global time base
            ref_span[d["window"]] = (d["from_ns"], d["to_ns"])
    return [(ref_span[k][0], ref_span[k][1], per[k]) for k in sorted(ref_span)]


def well_fitted(windows, t_ns, nodes, max_unc_ns):
    """Whether, at global time t_ns, every node had an aligned fit claiming an
    uncertainty within max_unc_ns (None: no windows given, assume so)."""
    if windows is None:
        return True
    for lo, hi, fits in windows:
        if lo <= t_ns < hi:
            return len(fits) == nodes and all(a and u <= max_unc_ns for a, u in fits.values())
    return False


def check_space(space, nodes, max_skew_ns, per_node=False, windows=None, max_unc_ns=2000):
    planes = plane_views(space)
    hostnames = space.get("hostnames", [])
    assert hostnames, "XSpace.hostnames is empty"

    # Task environment.
    env = planes.get("Task Environment")
    assert env is not None, "no Task Environment plane"
    start, stop = env["stats"].get("profile_start_time"), env["stats"].get("profile_stop_time")
    assert isinstance(start, int) and isinstance(stop, int), env["stats"]
    assert "uint64_value" in env["raw"]["stats"][0], "profile times must be uint64 stats"
    assert 0 < start < stop, (start, stop)

    # Host and device planes per node.
    hosts, gpus = {}, {}
    for name, p in planes.items():
        if per_node:
            if name == "/host:CPU":
                hosts[p["stats"]["node"]] = p
            m = GPU_RE.match(name)
            if m:
                gpus.setdefault(p["stats"]["node"], []).append(p)
            continue
        m = HOST_RE.match(name)
        if m:
            node = int(m.group(1))
            assert p["stats"]["node"] == node and p["stats"]["hostname"] == m.group(2), name
            hosts[node] = p
        m = GPU_RE.match(name)
        if m:
            assert p["id"] == int(m.group(1)), "GPU plane id != its ordinal: %s" % name
            gpus.setdefault(p["stats"]["node"], []).append(p)
    assert len(hosts) == nodes, "host planes of nodes %s, want %d" % (sorted(hosts), nodes)
    assert sorted(gpus) == sorted(hosts), "device planes of nodes %s" % sorted(gpus)
    for node, p in hosts.items():
        st = p["stats"]
        assert st["hostname"] in hostnames, "host %r not in hostnames" % st["hostname"]
        assert st["aligned"] == 1 and st["time_base"] == "global", (node, st)
        for k in ("offset_ns", "drift_ppb", "uncertainty_ns"):
            assert isinstance(st.get(k), float), "node %d: no %s stat" % (node, k)
        assert all(ln["events"] for ln in p["lines"]), "an empty line on node %d" % node
    refs = sum(1 for p in hosts.values() if p["stats"]["reference"] == 1)
    assert refs == 1 or (per_node and refs == 0), "%d reference nodes" % refs

    # Events by node, with absolute aligned times.
    host_ev, dev_ev = {}, {}
    for node, p in hosts.items():
        host_ev[node] = [e for ln in p["lines"] for e in ln["events"]]
        for ln in p["lines"]:
            starts = [e["start_ps"] for e in ln["events"]]
            assert starts == sorted(starts), "line %s not in time order" % ln["name"]
            assert ln["duration_ps"] >= max(e["end_ps"] for e in ln["events"]) - ln["ts"] * 1000
    kernels = 0
    for node, planes_of in gpus.items():
        dev_ev[node] = []
        for p in planes_of:
            assert p["lines"], "device plane without lines on node %d" % node
            for ln in p["lines"]:
                assert ln["name"].startswith("Stream #"), ln["name"]
                for e in ln["events"]:
                    dev_ev[node].append(e)
                    st = e["stats"]
                    if "kernel_details" in st:
                        kernels += 1
                        assert e["dur_ps"] > 0, "kernel %s without duration" % e["name"]
                        assert re.match(r"^grid:\d+,\d+,\d+ block:\d+,\d+,\d+$",
                                        st["kernel_details"]), st["kernel_details"]
                        assert "correlation_id" in st and "scope_range_id" in st, st
                    elif "memcpy_details" in st:
                        assert st["bytes_transferred"] > 0, st
                    else:
                        raise AssertionError("device event %s without details" % e["name"])
    assert kernels > 0, "no kernels"

    # Launch arrows: every GPU operation with a correlation id ends a flow
    # (direction 1, category 9) that an API call on its node starts (2).
    outs, ins = set(), set()
    for node, evs in host_ev.items():
        for e in evs:
            f = e["stats"].get("flow")
            if f is not None:
                assert f >> 58 == 9 and f & 3 == 2, "API flow stat %x" % f
                outs.add((node, f >> 2))
    for node, evs in dev_ev.items():
        for e in evs:
            if "correlation_id" in e["stats"]:
                f = e["stats"].get("flow")
                assert f is not None and f >> 58 == 9 and f & 3 == 1, e["stats"]
                ins.add((node, f >> 2))
    assert outs and outs <= ins, "%d launch arrows start with no GPU work to end on" % len(outs - ins)

    # Steps: "train" markers with increasing step numbers.
    steps = {}  # node -> {step: event}
    for node, evs in host_ev.items():
        marks = sorted((e for e in evs if is_step(e)), key=lambda e: e["start_ps"])
        assert len(marks) >= 10, "node %d: %d step markers" % (node, len(marks))
        nums = [e["stats"]["step_num"] for e in marks]
        assert all(a < b for a, b in zip(nums, nums[1:])), "node %d steps %s" % (node, nums)
        for e, n in zip(marks, nums):
            assert e["stats"]["step_num"] == n and e["stats"]["_r"] == 1, e["stats"]
        steps[node] = {n: e for e, n in zip(marks, nums)}

    # The scope tree: a forest holding every scope id of the events.
    tree_plane = planes.get(TREE)
    assert tree_plane is not None, "no %s plane" % TREE
    assert not tree_plane["raw"].get("stat_metadata"), "the tree plane has stat metadata"
    tree = {}
    for s in tree_plane["raw"].get("stats", []):
        c, par = s["metadata_id"], s.get("int64_value")
        assert par is not None, "tree stat without int64_value"
        assert c not in tree, "scope %d listed twice" % c
        assert c > 0 and par > 0 and c != par
        tree[c] = par
    assert tree, "the scope tree plane is empty"
    for c in tree:
        seen, x = set(), c
        while x in tree:
            assert x not in seen, "a cycle through scope %d" % x
            seen.add(x)
            x = tree[x]
    known = set(tree) | set(tree.values())
    used = [e["stats"]["scope_range_id"] for evs in list(host_ev.values()) + list(dev_ev.values())
            for e in evs if "scope_range_id" in e["stats"]]
    assert used, "no event carries a scope_range_id"
    missing = [s for s in used if s not in known]
    assert not missing, "%d of %d scope ids not in the tree, e.g. %s" % (
        len(missing), len(used), missing[:5])
    nested = 0
    for node, evs in host_ev.items():
        by_scope = {e["stats"]["scope_range_id"]: e for e in evs
                    if "scope_range_id" in e["stats"] and not is_step(e)
                    and e["name"] in ("forward", "backward")}
        for e in evs:
            if not e["name"].startswith("layer_"):
                continue
            par = tree.get(e["stats"]["scope_range_id"])
            outer = by_scope.get(par)
            if outer is None:
                continue  # its parent's range was evicted or not recorded
            assert outer["start_ps"] <= e["start_ps"] and e["end_ps"] <= outer["end_ps"], (
                "layer range outside its parent range on node %d" % node)
            nested += 1
    assert nested > 0, "no layer range found inside its parent range"

    # Each step's collective across nodes.  The allreduce kernel's scope is
    # its range's, whose parent is the step's scope, carried by the step marker.
    step_of_scope = {}
    for node, marks in steps.items():
        for n, e in marks.items():
            if "scope_range_id" in e["stats"]:
                step_of_scope[e["stats"]["scope_range_id"]] = n
    coll = {}  # step -> {node: start_ps}
    flagged = 0
    for node, evs in dev_ev.items():
        for e in evs:
            if e["name"] != "allreduce" or "kernel_details" not in e["stats"]:
                continue
            assert e["stats"].get("collective") == 1, "allreduce not marked collective"
            n = step_of_scope.get(tree.get(e["stats"]["scope_range_id"]))
            if n is None:
                continue
            if e["stats"].get("time_flags", 0):
                flagged += 1
                coll.setdefault(n, {})[node] = None
            else:
                coll.setdefault(n, {}).setdefault(node, e["start_ps"])
    compared, worst, loose = 0, 0, 0
    for n, by_node in sorted(coll.items()):
        if len(by_node) != nodes or None in by_node.values():
            continue
        # Alignment is only as good as the fits claim: windows whose fits
        # claim more than max_unc_ns (a fit over a partial first window) are
        # not held to max_skew_ns.  Estimator accuracy is tested elsewhere;
        # this checks that the export puts events where the time base says.
        if not well_fitted(windows, min(by_node.values()) // 1000, nodes, max_unc_ns):
            loose += 1
            continue
        skew_ns = (max(by_node.values()) - min(by_node.values())) / 1000.0
        assert skew_ns <= max_skew_ns, "step %d: collectives %.0f ns apart across nodes %s" % (
            n, skew_ns, by_node)
        worst = max(worst, skew_ns)
        compared += 1
    assert compared >= 10, ("only %d steps with a collective on every node (%d flagged, %d in "
                            "loosely fitted windows)" % (compared, flagged, loose))
    return {"planes": len(planes), "events": sum(len(v) for v in host_ev.values()) +
            sum(len(v) for v in dev_ev.values()), "kernels": kernels, "tree": len(tree),
            "steps_compared": compared, "steps_loose": loose, "worst_skew_ns": worst,
            "hosts": hosts,
            "host_ev": host_ev, "dev_ev": dev_ev, "start": start, "stop": stop}


def check_chrome(res, chrome_path):
    """The XSpace holds the Chrome export's events at the same aligned times."""
    d = json.load(open(chrome_path))
    origin = d["metadata"]["origin_ns"]
    want = {}
    for e in d["traceEvents"]:
        if e.get("ph") not in ("X", "i"):
            continue
        # API calls and GPU work share the category "gpu"; their kind is in args.
        cat = e["args"]["kind"] if e["cat"] == "gpu" else e["cat"]
        key = (e["pid"], e["name"], e["args"]["trace_ns"], cat)
        want[key] = round(e["ts"] * 1000) + origin
    got = {}
    cat = {"kernel_details": "kernel", "memcpy_details": "memcpy", "Memset_details": "memset"}
    for node, evs in list(res["host_ev"].items()) + list(res["dev_ev"].items()):
        for e in evs:
            c = next((cat[k] for k in cat if k in e["stats"]), None)
            name = e["name"]
            if is_step(e):
                c = "step"
            key = (node, name, e["stats"]["trace_ns"], c)
            got[key] = e["start_ps"] // 1000
    # Steps carry their own names in the XSpace; compare them by (node, trace_ns) only.
    w_steps = {(k[0], k[2]): v for k, v in want.items() if k[3] == "step"}
    g_steps = {(k[0], k[2]): v for k, v in got.items() if k[3] == "step"}
    assert w_steps.keys() == g_steps.keys(), "step events differ"
    worst = max([abs(w_steps[k] - g_steps[k]) for k in w_steps] + [0])
    w_dev = {k: v for k, v in want.items() if k[3] in ("kernel", "memcpy", "memset")}
    g_dev = {k: v for k, v in got.items() if k[3] in ("kernel", "memcpy", "memset")}
    assert w_dev.keys() == g_dev.keys(), "device events differ: %s / %s" % (
        sorted(set(w_dev) - set(g_dev))[:3], sorted(set(g_dev) - set(w_dev))[:3])
    worst = max([worst] + [abs(w_dev[k] - g_dev[k]) for k in w_dev])
    n_host = sum(len(v) for v in res["host_ev"].values())
    n_want_host = sum(1 for k in want if k[3] not in ("kernel", "memcpy", "memset"))
    assert n_host == n_want_host, "host events: xspace %d, chrome %d" % (n_host, n_want_host)
    assert worst <= 1, "aligned times differ from the Chrome export by %d ns" % worst
    return len(want), worst


def check_windows(path, nodes):
    lines = [json.loads(x) for x in open(path) if x.strip()]
    assert lines, "no window statistics"
    kinds = {"win": set(), "edge_fit": set(), "node_fit": set(), "solve": set()}
    prev = 0
    per = {}
    for d in lines:
        t = d["type"]
        assert t in kinds, t
        assert isinstance(d["arrival_ns"], int) and d["arrival_ns"] >= prev, "arrival order"
        prev = d["arrival_ns"]
        k = d["window"]
        kinds[t].add(k)
        w = per.setdefault(k, {"win": set(), "edge_fit": set(), "node_fit": set(), "solve": 0})
        if t in ("win", "edge_fit"):
            w[t].add((d["src"], d["dst"]))
        elif t == "node_fit":
            w[t].add(d["node"])
            for f in ("ref", "anchor_ns", "offset_ns", "drift_ppb", "uncertainty_ns", "from_ns",
                      "to_ns", "aligned"):
                assert f in d, "node_fit without %s" % f
        else:
            w["solve"] += 1
        if t == "edge_fit":
            for f in ("estimator", "anchor_ns", "offset_ns", "drift_ppb", "uncertainty_ns",
                      "n_fwd", "n_rev", "from_ns", "to_ns"):
                assert f in d, "edge_fit without %s" % f
    wins = sorted(kinds["win"])
    # Windows while the nodes join and the probe graph grows hold other edges
    # (a plan of two nodes may own its one edge from the other end; the first
    # window of a new edge, probed only part of the time, may have no fit);
    # the last may be cut by the end of the recording.  From the first window
    # in which every edge of the final plan has its statistics and its fit,
    # every window has each line kind for every edge and node.
    edges = per[wins[-2]]["win"] if len(wins) >= 2 else set()
    first = next((i for i, k in enumerate(wins)
                  if per[k]["win"] == edges and per[k]["edge_fit"] == edges), len(wins))
    steady = wins[first:-1]
    assert len(steady) >= 3, "only %d complete windows (of %d)" % (len(steady), len(wins))
    for k in steady:
        w = per[k]
        assert w["win"] == edges, "window %d: win lines of %s, edges %s" % (k, w["win"], edges)
        assert w["edge_fit"] == edges, "window %d: edge_fit lines of %s" % (k, w["edge_fit"])
        assert len(w["node_fit"]) == nodes, "window %d: node_fit of %s" % (k, w["node_fit"])
        assert w["solve"] >= 1, "window %d: no solve" % k
    for k in wins:
        assert per[k]["edge_fit"] <= per[k]["win"], "window %d: a fit without statistics" % k
    return len(lines), len(steady)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("xspace")
    ap.add_argument("--windows")
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--chrome")
    ap.add_argument("--per-node")
    ap.add_argument("--max-skew-ns", type=float, default=10000)
    ap.add_argument("--max-unc-ns", type=float, default=2000,
                    help="with --windows: compare only steps whose fits claim this or better")
    a = ap.parse_args()
    wins = fit_windows(a.windows) if a.windows else None
    res = check_space(load(a.xspace), a.nodes, a.max_skew_ns, windows=wins,
                      max_unc_ns=a.max_unc_ns)
    msg = ("xspace: %d planes, %d events, %d kernels, %d scope pairs; %d steps compared "
           "(%d left out: loosely fitted windows), worst collective skew %.0f ns" % (
               res["planes"], res["events"], res["kernels"], res["tree"],
               res["steps_compared"], res["steps_loose"], res["worst_skew_ns"]))
    if a.chrome:
        n, worst = check_chrome(res, a.chrome)
        msg += "; chrome: %d events, worst difference %d ns" % (n, worst)
    if a.per_node:
        files = sorted(f for f in os.listdir(a.per_node) if f.endswith(".xplane.pb"))
        assert len(files) == a.nodes, files
        total = 0
        for f in files:
            r = check_space(load(os.path.join(a.per_node, f)), 1, a.max_skew_ns, per_node=True)
            node = list(r["hosts"])[0]
            assert f.endswith("-n%d.xplane.pb" % node), f
            total += r["events"]
        assert total == res["events"], "per-node files hold %d events, the XSpace %d" % (
            total, res["events"])
        msg += "; per node: %d files" % len(files)
    if a.windows:
        n, wins = check_windows(a.windows, a.nodes)
        msg += "; windows: %d lines, %d complete windows" % (n, wins)
    print(msg)


if __name__ == "__main__":
    main()
