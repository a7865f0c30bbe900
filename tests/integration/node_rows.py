#!/usr/bin/env python3
"""The console's node table from a captured pane, as columns.

    node_rows.py PANE check SPEC...

The header is the line that starts with "ID"; its tokens up to the Windows
table's "EDGE" name the columns, and each node row (a line starting with
n<id>) has as many tokens, one a cell (empty cells are "-").  Each SPEC is
"<id> <state> [COLUMN=VALUE | COLUMN=~REGEX]...", e.g. "n0* up W=247"; all
must hold.  Prints the rows; exits 1 when a SPEC does not hold.
"""
import re
import sys


def table(path):
    lines = open(path, encoding="utf-8").read().splitlines()
    head = next((l for l in lines if l.startswith("ID ")), None)
    if head is None:
        return None, {}
    cols = []
    for tok in head.split():
        if tok == "EDGE":
            break
        cols.append(tok)
    rows = {}
    for l in lines[lines.index(head) + 1:]:
        if not re.match(r"^n\d+\*? ", l):
            break  # the table's rows are the lines right below its header
        toks = l.split()[:len(cols)]
        rows[toks[0]] = dict(zip(cols, toks))
    return cols, rows


def holds(rows, spec):
    words = spec.split()
    row = rows.get(words[0])
    if row is None:
        return "no row %s" % words[0]
    if row.get("STATE") != words[1]:
        return "%s: state %s, want %s" % (words[0], row.get("STATE"), words[1])
    for w in words[2:]:
        col, want = w.split("=", 1)
        got = row.get(col)
        if got is None:
            return "%s: no column %s" % (words[0], col)
        if want.startswith("~"):
            if not re.search(want[1:], got):
                return "%s: %s %r does not match %s" % (words[0], col, got, want[1:])
        elif got != want:
            return "%s: %s %r, want %r" % (words[0], col, got, want)
    return None


def main():
    cols, rows = table(sys.argv[1])
    if cols is None:
        print("no node table")
        return 1
    for r in rows.values():
        print("  ".join("%s=%s" % kv for kv in r.items()))
    bad = [e for e in (holds(rows, s) for s in sys.argv[3:]) if e]
    for e in bad:
        print("not yet:", e)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
