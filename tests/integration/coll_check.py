#!/usr/bin/env python3
"""Checks of dptop --export-collectives output (docs/COLLECTIVES.md).

  coll_check.py straggler FILE RANK LATE_NS   RANK named last in every instance
                                              called, its lateness within the
                                              stated uncertainty of LATE_NS
  coll_check.py within FILE [LATE_NS RANK]    a lateness below the clocks'
                                              uncertainty: called late only
                                              where the measured one is beyond it
  coll_check.py jitter FILE JITTER_NS         the simulated workload's per-step
                                              jitter: the last rank as the
                                              simulation had it
  coll_check.py chance FILE                   no rank last significantly more
                                              often than chance
  coll_check.py csv FILE.csv FILE.jsonl       the same instances in both forms
Prints one summary line; exit 1 when the check fails.
"""
import csv
import json
import math
import sys

MASK = (1 << 64) - 1


def splitmix64(x):
    """gpu/sim.c's splitmix (the arrival jitter of a step and node)."""
    x = (x + 0x9E3779B97F4A7C15) & MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return x ^ (x >> 31)


def jitter(step, node, j):
    return splitmix64(((step << 16) + node) & MASK) % (j + 1) if j > 0 else 0


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def called(lines):
    return [c for c in lines if c["verdict"] in ("late", "within_uncertainty")]


def main():
    cmd, path, a = sys.argv[1], sys.argv[2], sys.argv[3:]
    if cmd == "csv":
        rows = list(csv.DictReader(open(path)))
        js = load(a[0])
        ok = len(rows) == len(js) and all(
            r["seq"] == str(j["seq"]) and r["verdict"] == j["verdict"] and
            r["skew_ns"] == str(j["skew_ns"]) and (r["last_rank"] or None) == j["last_rank"]
            for r, j in zip(rows, js))
        print(f"csv: {len(rows)} rows, jsonl: {len(js)} lines, {'same' if ok else 'DIFFERENT'}")
        return 0 if ok and rows else 1
    lines = load(path)
    c = called(lines)
    verdicts = {}
    for x in lines:
        verdicts[x["verdict"]] = verdicts.get(x["verdict"], 0) + 1
    if len(c) < 50:
        print(f"{cmd}: only {len(c)} instances called ({verdicts})")
        return 1
    if cmd == "straggler":
        rank, late = a[0], float(a[1])
        wrong = [x for x in c if x["last_rank"] != rank or x["verdict"] != "late"]
        # The measured lateness is the true one plus the two maps' errors,
        # which their uncertainty claims to bound (3 sigma-like).  On
        # loopback the claim (+ 20 ns of rounding) held for 92-98 % of the
        # instances, the worst miss 261 ns: reported, and 1 us is the bound
        # asked for (a thousandth of the lateness here).
        off = [abs(x["lateness_ns"] - late) - x["unc_ns"] for x in c]
        bad = sum(1 for o in off if o > 20)
        worst = max(abs(x["lateness_ns"] - late) for x in c)
        print(f"straggler: {len(c) - len(wrong)} of {len(c)} instances name {rank} late; "
              f"lateness off by at most {worst:.0f} ns, {bad} beyond the uncertainty + 20 ns; "
              f"{verdicts}")
        return 0 if not wrong and worst <= 1000 else 1
    if cmd == "within":
        # A lateness below what the clocks can tell apart: the call must be
        # "within" exactly where the measured lateness is inside the stated
        # uncertainty, and "late" only beyond it.  How often that happens
        # depends on how honest the maps' ± are on the day (the truth says:
        # the straggler is LATE_NS late, every other node on time), which is
        # the clock model's to answer for: reported, not asserted.  Seen on
        # loopback: 79-98 % within, and once a map 200 ns off its +-20 ns
        # for a whole run (8 % within).
        true_late = float(a[0]) if a else 5.0
        straggler = a[1] if len(a) > 1 else "n2"
        bad, honest = [], 0
        for x in c:
            if (x["verdict"] == "late") != (x["lateness_ns"] > x["unc_ns"]):
                bad.append(x["seq"])
            last = x["arrivals"][-1]
            lnode = last["node"]
            second = next((r for r in reversed(x["arrivals"][:-1]) if r["node"] != lnode),
                          x["arrivals"][-2])
            truth = (true_late if last["rank"] == straggler else 0) - \
                (true_late if second["rank"] == straggler else 0)
            honest += abs(x["lateness_ns"] - truth) <= x["unc_ns"]
        late = [x for x in c if x["verdict"] == "late"]
        unc = sorted(x["unc_ns"] for x in c)
        who = {}
        for x in late:
            who[x["last_rank"]] = who.get(x["last_rank"], 0) + 1
        print(f"within: {len(c) - len(late)} of {len(c)} instances within the clocks' "
              f"uncertainty (median {unc[len(unc) // 2]:.1f} ns), {len(late)} called late "
              f"{who}; the maps were within their ± of the truth in {honest} of {len(c)}; "
              f"{len(bad)} calls inconsistent with their own figures; {verdicts}")
        return 0 if not bad else 1
    if cmd == "jitter":
        j = int(float(a[0]))
        right = sig = 0
        for x in c:
            nodes = [int(r["node"]) for r in x["arrivals"]]
            truth = max(nodes, key=lambda n: jitter(x["step"], n, j))
            if x["verdict"] == "late":
                sig += 1
                right += x["last_rank"] == f"n{truth}"
        print(f"jitter: {right} of {sig} significant last-rank calls match the simulation "
              f"({100.0 * right / max(sig, 1):.1f} %), {len(c) - sig} within uncertainty; "
              f"{verdicts}")
        return 0 if sig >= len(c) * 8 // 10 and right >= sig * 99 // 100 else 1
    if cmd == "chance":
        ranks = sorted({r["rank"] for x in c for r in x["arrivals"]})
        late = [x for x in c if x["verdict"] == "late"]
        n, k = len(late), len(ranks)
        counts = {r: sum(1 for x in late if x["last_rank"] == r) for r in ranks}
        # Binomial(n, 1/k): 4.5 sigma above the mean is chance at p < 1e-5.
        bound = n / k + 4.5 * math.sqrt(n * (1 / k) * (1 - 1 / k)) + 1
        worst = max(counts.values()) if counts else 0
        print(f"chance: last-rank calls {counts} over {n} significant instances; "
              f"bound {bound:.1f}")
        return 0 if worst <= bound else 1
    print(f"unknown command {cmd}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
