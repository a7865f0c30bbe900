#!/usr/bin/python3
"""Questions about a dpnode_watch.py recording, for the dpnode tests.

usage: dpnode_check.py COMMAND FILE ARGS...

  aligned FILE N [SINCE]      the latest solved window has >= N aligned nodes
                              (only node fits that arrived after unix time SINCE)
  windows-to-align FILE N SINCE
                              print how many windows it took, counting from the
                              one in progress at SINCE, until one had >= N
                              aligned nodes (exit 1: never)
  errors FILE N SINCE MAX_NS  error of every aligned node fit against the
                              simulated truth, over windows solved after SINCE in
                              which >= N nodes were aligned; prints the figures,
                              exit 1 when the largest exceeds MAX_NS
  state FILE NODE STATE [SINCE]
                              the latest node table says NODE is STATE
  up FILE N [SINCE]           the latest node table has N nodes up or unaligned
  when-up FILE N SINCE        print the arrival time of the first node table
                              (live or the late-joiner state's) after SINCE
                              with N nodes up or unaligned
  status FILE NODE FIELD MIN [MAX]
                              the latest status of NODE has FIELD >= MIN (and <= MAX)
                              (dec_errors_total: the sum of its dec_errors)
  refined FILE SINCE MAX_NS    the master's refinements (node fits with a lag) after
                              SINCE: each arrived after its window's first map and
                              after the first map of the window it waited for;
                              prints the errors of both against the truth, exit 1
                              when there is none, one is out of order, or a
                              refined map is off by more than MAX_NS
  state-fits FILE NODE        the late-joiner state holds NODE's newest first map
                              and its newest refinement (exit 1: not both)
  suspects FILE SINCE         solve messages after SINCE: print how many, and per
                              edge how many marked it suspect (exit 1: none, or
                              one whose extra_sigma_ns comes without a
                              persist_sigma_ns within it)
  step-line LINE NODE SIZE_NS TOL_NS
                              a master's clock step line (LINE, not a file): every
                              edge it names ("a clock step on": A→B +S ns) is one of
                              NODE's and saw |S| within TOL_NS of SIZE_NS, every node
                              it names ("a clock step since": node N +S ns) is NODE
                              and stepped by SIZE_NS within TOL_NS (sign included)
  epoch FILE                  print the latest plan epoch
  probe-addr FILE NODE        print the probe address of NODE's first hello
  node-of-pid FILE PID        print the node id whose hello carries PID
  collectives FILE SINCE STRAGGLER LATE_NS MAX_NS
                              the simulated workload's allreduce kernels put on
                              global time (snapshot pairs, then node fits):
                              per step, every node but the straggler starts
                              within MAX_NS of the others, and the straggler
                              LATE_NS late (+-MAX_NS); the same on raw clocks
                              is printed for comparison

Truth (SPEC 4.6): node N's probe clock reads S_N(t) = t + OFFSET + DRIFT*1e-6*(t - t0)
for a real time t; the true map of x from N's clock onto the reference R's is
S_R(S_N^-1(x)).  Differences are taken from integer anchors so that doubles
keep their ns precision.
"""
import base64
import bisect
import json
import re
import struct
import sys


def load(path):
    recs = []
    try:
        f = open(path)
    except FileNotFoundError:
        return recs  # the recorder has not written yet
    with f:
        for line in f:
            try:
                recs.append(json.loads(line))
            except ValueError:
                pass  # a line being written
    return recs


def kind(rec):
    return rec["topic"].split(".")[1]


def truths(recs):
    t = {}
    for r in recs:
        if kind(r) == "sim_truth":
            h = r["h"]
            t[h["node"]] = h
    return t


def stepped(t, tau):
    """Whether clock t has stepped by real time t0_N + tau (tau relative to t0 of t)."""
    at = int(t.get("step_at_ns") or 0)
    return bool(t.get("step_ns")) and at != 0 and int(t["t0_ns"]) - at + tau >= 0


def true_offset(x, tn, tr):
    """True (reference clock - node clock) at x of node N's clock, in ns (float).

    A clock step (sim_truth step_at_ns, step_ns) counts from its instant on;
    a clock stepped back reads some times twice, which are taken as after it.
    """
    zero = {"t0_ns": x, "offset_ns": 0.0, "drift_ppm": 0.0}
    tn = tn or zero
    tr = tr or zero
    dn = tn["drift_ppm"] * 1e-6
    dr = tr["drift_ppm"] * 1e-6
    u = x - int(tn["t0_ns"])                      # int, small
    tau = (u - tn["offset_ns"]) / (1.0 + dn)      # real time since t0_N
    if tn.get("step_ns"):
        tau_s = (u - tn["offset_ns"] - tn["step_ns"]) / (1.0 + dn)
        if stepped(tn, tau_s):
            tau = tau_s
    base = int(tn["t0_ns"]) - int(tr["t0_ns"])    # int, small
    off = tau - u + tr["offset_ns"] + dr * (base + tau)
    if tr.get("step_ns") and stepped(tr, base + tau):
        off += tr["step_ns"]
    return off


def fit_error(fit, tn, tr):
    """Largest |fitted - true| over the fit's range (ends and anchor)."""
    worst = 0.0
    for x in (int(fit["from_ns"]), int(fit["anchor_ns"]), int(fit["to_ns"])):
        fitted = fit["offset_ns"] + fit["drift_ppb"] * 1e-9 * (x - int(fit["anchor_ns"]))
        worst = max(worst, abs(fitted - true_offset(x, tn, tr)))
    return worst


def windows(recs, since=0.0, until=float("inf")):
    """window -> {node: fit} from node fits that arrived in [since, until), in arrival order."""
    w = {}
    order = []
    for r in recs:
        if kind(r) != "node_fit" or r["state"] or r["t"] < since or r["t"] >= until:
            continue
        h = r["h"]
        if h["window"] not in w:
            w[h["window"]] = {}
            order.append(h["window"])
        w[h["window"]][h["node"]] = h
    return w, order


def aligned_count(fits):
    return sum(1 for f in fits.values() if f["aligned"])


def pct(v, p):
    v = sorted(v)
    if not v:
        return float("nan")
    i = max(0, min(len(v) - 1, int(-(-p * len(v) // 100)) - 1))
    return v[i]


def latest(recs, k, since=0.0, node=None):
    for r in reversed(recs):
        if kind(r) == k and r["t"] >= since and (node is None or r["h"].get("node") == node):
            return r["h"]
    return None


def records(payload):
    """The 64-byte event records of an ev payload (docs/PROTOCOL.md section 5)."""
    magic, version, size, count, _ = struct.unpack_from("<IHHII", payload, 0)
    assert (magic, version, size) == (0x56455044, 1, 64)
    for i in range(count):
        yield struct.unpack_from("<BBHIIIIIQqq", payload, 16 + 64 * i)


class Node:
    def __init__(self):
        self.snaps = []   # (trace, probe), increasing
        self.fits = []    # aligned node fits

    def probe_of(self, trace):
        """Trace clock -> probe clock by linear interpolation between snapshot pairs."""
        i = bisect.bisect_left(self.snaps, (trace, -1))
        i = min(max(i, 1), len(self.snaps) - 1)
        (a0, b0), (a1, b1) = self.snaps[i - 1], self.snaps[i]
        # Integers stay integers: a double holds only ~256 ns at these magnitudes.
        return b0 + round((trace - a0) * (b1 - b0) / (a1 - a0))

    def global_of(self, probe):
        best = min(self.fits, key=lambda f: abs(probe - int(f["anchor_ns"])))
        return probe + round(best["offset_ns"] +
                             best["drift_ppb"] * 1e-9 * (probe - int(best["anchor_ns"])))


def collectives(recs, since, straggler, late_ns, max_ns):
    nodes, names, starts = {}, {}, []
    for r in recs:
        h, k = r["h"], kind(r)
        if k == "snap" and h["pid"] == 0 and h["a"] == "trace" and h["b"] == "probe":
            nodes.setdefault(h["node"], Node()).snaps.extend(tuple(p) for p in h["pairs"])
        elif k == "node_fit" and h["aligned"] and r["t"] >= since:
            nodes.setdefault(h["node"], Node()).fits.append(h)
        elif k == "names":
            for i, n in h["names"]:
                names[(h["node"], h["pid"], i)] = n
    for r in recs:
        if kind(r) != "ev" or r["t"] < since or "p" not in r:
            continue
        h = r["h"]
        for (knd, fl, dev, pid, tid, stream, name, corr, scope, start, end) in records(
                base64.b64decode(r["p"])):
            if knd == 1 and fl & 8 and names.get((h["node"], pid, name)) == "allreduce":
                starts.append((h["node"], start))
    conv = []
    for node, start in starts:
        n = nodes.get(node)
        if n is None or len(n.snaps) < 2 or not n.fits:
            continue
        n.snaps.sort()
        probe = n.probe_of(start)
        conv.append((n.global_of(probe), probe, node))
    conv.sort()
    # One collective per step: cluster starts closer than 20 ms.
    steps, cur = [], []
    for g in conv:
        if cur and g[0] - cur[-1][0] > 20e6:
            steps.append(cur)
            cur = []
        cur.append(g)
    if cur:
        steps.append(cur)
    all_nodes = set(n for _, _, n in conv)
    spreads, lates, raws = [], [], []
    for st in steps:
        per = {n: (g, p) for g, p, n in st}
        if set(per) != all_nodes or len(all_nodes) < 2:
            continue
        others = [per[n][0] for n in per if n != straggler]
        spreads.append(max(others) - min(others))
        raw = [per[n][1] for n in per if n != straggler]
        raws.append(max(raw) - min(raw))
        if straggler in per:
            lates.append(per[straggler][0] - sum(others) / len(others))
    if not spreads:
        print(f"no complete step ({len(conv)} collectives on {len(all_nodes)} nodes)")
        return 1
    line = (f"COLLECTIVES steps={len(spreads)} nodes={len(all_nodes)} aligned_spread_p50_ns="
            f"{pct(spreads, 50):.0f} aligned_spread_max_ns={max(spreads):.0f} "
            f"raw_spread_p50_ns={pct(raws, 50):.0f}")
    ok = max(spreads) <= max_ns
    if lates:
        line += f" straggler_late_p50_ns={pct(lates, 50):.0f}"
        ok = ok and all(abs(x - late_ns) <= max_ns for x in lates)
    print(line)
    return 0 if ok else 1


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    a = sys.argv[3:]
    if cmd == "step-line":
        line, node, size, tol = path, a[0], float(a[1]), float(a[2])
        edges = re.findall(r"(\d+)→(\d+) ([+-]\d+) ns", line)
        nodes = re.findall(r"node (\d+) ([+-]\d+) ns", line)
        bad = [e for e in edges if node not in e[:2] or abs(abs(int(e[2])) - abs(size)) > tol]
        bad += [n for n in nodes if n[0] != node or abs(int(n[1]) - size) > tol]
        print("%d edge(s), %d node(s) named%s" % (len(edges), len(nodes),
                                                  ", wrong: %s" % bad if bad else ""))
        return 0 if (edges or nodes) and not bad else 1
    recs = load(path)
    if cmd == "aligned":
        n, since = int(a[0]), float(a[1]) if len(a) > 1 else 0.0
        w, order = windows(recs, since)
        if not order:
            return 1
        last = w[order[-1]]
        print(f"window {order[-1]}: {aligned_count(last)} aligned of {len(last)}")
        return 0 if aligned_count(last) >= n else 1
    if cmd == "windows-to-align":
        # Windows are counted from the one in progress at SINCE (on the
        # reference clock), that one included.
        n, since = int(a[0]), float(a[1])
        w, _ = windows(recs)
        t = truths(recs)
        count = 0
        for k in sorted(w):
            fits = w[k]
            ref = next(iter(fits.values()))["ref"]
            rf = fits.get(ref)
            if rf is None:
                continue
            tr = t.get(ref)
            since_ns = int(since * 1e9)
            if tr:
                since_ns += int(tr["offset_ns"] + tr["drift_ppm"] * 1e-6 * (since_ns - tr["t0_ns"]))
            if int(rf["to_ns"]) <= since_ns:
                continue
            count += 1
            if aligned_count(fits) >= n:
                print(count)
                return 0
        print(f"never ({count} windows)")
        return 1
    if cmd == "errors":
        n, since, max_ns = int(a[0]), float(a[1]), float(a[2])
        until = float(a[3]) if len(a) > 3 else float("inf")
        t = truths(recs)
        w, order = windows(recs, since, until)
        errs, uncs, cover, worst = [], [], 0, None
        for k in order:
            fits = w[k]
            if aligned_count(fits) < n:
                continue
            for node, f in fits.items():
                if not f["aligned"] or node == f["ref"]:
                    continue
                if node not in t and f["ref"] not in t:
                    continue
                e = fit_error(f, t.get(node), t.get(f["ref"]))
                errs.append(e)
                uncs.append(f["uncertainty_ns"])
                cover += e <= f["uncertainty_ns"]
                if worst is None or e > worst[0]:
                    worst = (e, k, node, f["uncertainty_ns"])
        if not errs:
            print("no aligned node fit to compare")
            return 1
        print(f"ERR fits={len(errs)} p50_ns={pct(errs, 50):.1f} p99_ns={pct(errs, 99):.1f} "
              f"max_ns={max(errs):.1f} coverage={100.0 * cover / len(errs):.1f}% "
              f"unc_median_ns={pct(uncs, 50):.1f} unc_max_ns={max(uncs):.1f} "
              f"worst=window {worst[1]} node {worst[2]} unc {worst[3]:.1f}")
        return 0 if max(errs) <= max_ns else 1
    if cmd == "state":
        node, state = int(a[0]), a[1]
        since = float(a[2]) if len(a) > 2 else 0.0
        h = latest(recs, "nodes", since)
        if h is None:
            return 1
        for row in h["nodes"]:
            if row["node"] == node:
                return 0 if row["state"] == state else 1
        return 0 if state == "absent" else 1
    if cmd == "up":
        n, since = int(a[0]), float(a[1]) if len(a) > 1 else 0.0
        h = latest(recs, "nodes", since)
        if h is None:
            return 1
        up = sum(1 for row in h["nodes"] if row["state"] != "down")
        return 0 if up == n else 1
    if cmd == "probe-addr":
        for r in recs:
            if kind(r) == "hello" and r["h"].get("node") == int(a[0]):
                print(r["h"]["probe_addr"])
                return 0
        return 1
    if cmd == "when-up":
        n, since = int(a[0]), float(a[1])
        for r in recs:
            # The late-joiner state's table counts too (as for "up"): where
            # every node registered before the watcher asked, no live table
            # follows until something changes.
            if kind(r) == "nodes" and r["t"] >= since and \
                    sum(1 for row in r["h"]["nodes"] if row["state"] != "down") == n:
                print(f"{r['t']:.6f}")
                return 0
        return 1
    if cmd == "status":
        node, field, lo = int(a[0]), a[1], float(a[2])
        hi = float(a[3]) if len(a) > 3 else float("inf")
        h = latest(recs, "status", node=node)
        if h is not None and field == "dec_errors_total":  # every decoder's refusals
            h = dict(h, dec_errors_total=sum(h.get("dec_errors", {}).values()))
        if h is None or field not in h:
            return 1
        print(f"{field}={h[field]}")
        return 0 if lo <= float(h[field]) <= hi else 1
    if cmd == "warming":
        # Hosts bounded by their least margin (no margin level yet): some in
        # the first solves, none in the newest.
        seq = [(r["h"]["window"], r["h"].get("hosts_warming"))
               for r in recs if kind(r) == "solve" and not r["h"].get("lag")]
        if not seq:
            print("no solve")
            return 1
        print("hosts_warming by window: " + " ".join(f"{w}:{n}" for w, n in seq))
        return 0 if any((n or 0) > 0 for _, n in seq[:3]) and seq[-1][1] == 0 else 1
    if cmd == "refined":
        since, max_ns = float(a[0]), float(a[1])
        t = truths(recs)
        first, refined, order_bad = {}, [], []
        for r in recs:
            if kind(r) != "node_fit" or r["state"]:
                continue
            h = r["h"]
            key = (h["window"], h["node"])
            lag = h.get("lag", 0)
            if lag == 0:
                first.setdefault(key, (r["t"], h))
                continue
            if r["t"] < since:
                continue
            later = (h["window"] + lag, h["node"])
            if key not in first or later not in first:
                # The recorder runs from before the master: every refinement
                # must follow its window's first map and the later window's.
                order_bad.append(key)
                continue
            refined.append((first[key][1], h))
        if not refined:
            print("no refined node fit")
            return 1
        if order_bad:
            print(f"refinements before the window they waited for: {order_bad[:5]}")
            return 1
        e0, e1 = [], []
        for f0, f1 in refined:
            if not f1["aligned"] or f1["node"] == f1["ref"]:
                print(f"refined fit of window {f1['window']} node {f1['node']} not aligned")
                return 1
            if f1["node"] not in t and f1["ref"] not in t:
                continue
            e0.append(fit_error(f0, t.get(f0["node"]), t.get(f0["ref"])))
            e1.append(fit_error(f1, t.get(f1["node"]), t.get(f1["ref"])))
        if not e1:
            print("no refined fit to compare with the truth")
            return 1
        print(f"REFINED fits={len(e1)} first_p50_ns={pct(e0, 50):.1f} first_max_ns={max(e0):.1f} "
              f"refined_p50_ns={pct(e1, 50):.1f} refined_max_ns={max(e1):.1f}")
        return 0 if max(e1) <= max_ns else 1
    if cmd == "state-fits":
        node = int(a[0])
        lags = set()
        for r in recs:
            if kind(r) == "node_fit" and r["state"] and r["h"]["node"] == node:
                lags.add(r["h"].get("lag", 0))
        print(f"state node_fit lags of node {node}: {sorted(lags)}")
        return 0 if 0 in lags and len(lags) > 1 else 1
    if cmd == "suspects":
        since = float(a[0])
        solves, edges = 0, {}
        for r in recs:
            if kind(r) != "solve" or r["state"] or r["t"] < since:
                continue
            solves += 1
            tau, persist = r["h"].get("extra_sigma_ns"), r["h"].get("persist_sigma_ns")
            if tau is not None and (persist is None or not 0 <= persist <= tau + 1e-6):
                print(f"window {r['h']['window']}: extra_sigma_ns {tau}, persist_sigma_ns {persist}",
                      file=sys.stderr)
                return 1
            for e in r["h"]["residuals"]:
                key = "%d-%d" % tuple(sorted((e["src"], e["dst"])))
                if e.get("suspect"):
                    edges[key] = edges.get(key, 0) + 1
        print(solves, " ".join(f"{k}:{v}" for k, v in sorted(edges.items())))
        return 0 if solves else 1
    if cmd == "epoch":
        h = latest(recs, "plan")
        print(h["epoch"] if h else -1)
        return 0 if h else 1
    if cmd == "node-of-pid":
        pid = int(a[0])
        for r in reversed(recs):
            if kind(r) == "hello" and r["h"].get("pid") == pid and "node" in r["h"]:
                print(r["h"]["node"])
                return 0
        return 1
    if cmd == "collectives":
        return collectives(recs, float(a[0]), int(a[1]), float(a[2]), float(a[3]))
    print(f"unknown command {cmd}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
