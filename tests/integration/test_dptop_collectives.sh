#!/usr/bin/env bash
# timeout: 240
# Collectives from a recording: three simulated clusters (a master and three
# agents with millisecond clock offsets, 20 ms steps), each recorded, then
# `dptop --replay --export-collectives`:
#   - a straggler 1.5 ms late: named last in every instance, its lateness
#     within the stated uncertainty (coll_check.py says the bound);
#   - a straggler 5 ns late, below what the clocks can tell apart: called
#     late only where the measured lateness is beyond the stated ± (how
#     often the maps' ± held against the truth is printed);
#   - no straggler, a random per-step arrival jitter on every node: the last
#     rank as the simulation had it, and no rank last more than chance.
# CSV and JSON lines hold the same instances; bad arguments are refused.
source "$(dirname "$0")/lib.sh"
[ -x "$B/dptop" ] && [ -x "$B/dpnode" ] || it_skip "dptop or dpnode not built in $B"
CHK="/usr/bin/python3 $(dirname "$0")/coll_check.py"

cluster() { # NAME SECONDS dpnode-options...
    local name=$1 secs=$2
    shift 2
    local P
    P=$(it_ports 1) || it_skip "no free ports"
    local HUB="tcp://127.0.0.1:$P"
    local common=(--hub="$HUB" --bind-ip=127.0.0.1 --sim-workload --trace-endpoint=none
        --sim-step-ms=20 --probe-window-s=1 "$@")
    it_spawn "$name-m" "$B/dpnode" --master --listen="$HUB" --node-id=0 --sim-clock=0,0 "${common[@]}"
    local m=$IT_PID
    it_wait 20 sh -c "ss -Hltn 'sport = :$P' | grep -q ." || it_fail "$name: the master did not bind"
    it_spawn "$name-a1" "$B/dpnode" --node-id=1 --sim-clock=3000000,20 "${common[@]}"
    local a1=$IT_PID
    it_spawn "$name-a2" "$B/dpnode" --node-id=2 --sim-clock=-5000000,-30 "${common[@]}"
    local a2=$IT_PID
    it_spawn "$name-a3" "$B/dpnode" --node-id=3 --sim-clock=1000000,10 "${common[@]}"
    local a3=$IT_PID
    it_spawn "$name-rec" "$B/dptop" --record "$IT_TMP/$name.dprec" --hub "$HUB"
    local rec=$IT_PID
    sleep "$secs"
    kill -INT "$rec"
    it_wait 20 sh -c "! kill -0 $rec 2>/dev/null" || it_fail "$name: the recorder did not stop"
    kill "$m" "$a1" "$a2" "$a3" 2>/dev/null
    "$B/dptop" --replay "$IT_TMP/$name.dprec" --export-collectives "$IT_TMP/$name.jsonl" \
        >"$IT_TMP/$name.out" 2>&1 || it_fail "$name: export failed: $(cat "$IT_TMP/$name.out")"
    cat "$IT_TMP/$name.out"
}

cluster late 14 --sim-straggler=2 --sim-late-us=1500
grep -q "most often late: n2" "$IT_TMP/late.out" || it_fail "the summary does not name n2"
out=$($CHK straggler "$IT_TMP/late.jsonl" n2 1500000) || it_fail "$out"
echo "$out"
"$B/dptop" --replay "$IT_TMP/late.dprec" --export-collectives "$IT_TMP/late.csv" >/dev/null 2>&1 ||
    it_fail "CSV export failed"
c=$($CHK csv "$IT_TMP/late.csv" "$IT_TMP/late.jsonl") || it_fail "$c"
echo "$c"

# The Chrome trace: the collectives in its metadata and an arrival-skew counter.
"$B/dptop" --replay "$IT_TMP/late.dprec" --export "$IT_TMP/late.json" >/dev/null 2>&1 ||
    it_fail "Chrome export failed"
/usr/bin/python3 - "$IT_TMP/late.json" "$IT_TMP/late.jsonl" <<'PY' || it_fail "Chrome trace collectives"
import json, sys
d = json.load(open(sys.argv[1]))
lines = [json.loads(l) for l in open(sys.argv[2])]
called = [x for x in lines if x["verdict"] == "late"]
m = d["metadata"]["collectives"]
n2 = [r for r in m["ranks"] if r["rank"] == "n2"][0]
ctr = [e for e in d["traceEvents"] if e.get("ph") == "C" and e["pid"] == 65536]
print(f"chrome: {m['instances']} instances, n2 late in {n2['late']}, {len(ctr)} counter points")
assert m["instances"] == len(lines) and m["late"] == len(called), m
assert n2["late"] == len(called) and abs(n2["mean_late_ns"] - 1500000) < 1000, n2
assert len(ctr) == len(called) and all(abs(e["args"]["late_us"] - 1500) < 1 for e in ctr)
PY

cluster tiny 14 --sim-straggler=2 --sim-late-us=0.005
w=$($CHK within "$IT_TMP/tiny.jsonl" 5 n2) || it_fail "$w"
echo "$w"

cluster jit 14 --sim-jitter-us=1000
j=$($CHK jitter "$IT_TMP/jit.jsonl" 1000000) || it_fail "$j"
echo "$j"
ch=$($CHK chance "$IT_TMP/jit.jsonl") || it_fail "$ch"
echo "$ch"

# Refusals: without --replay, and one file named twice.
"$B/dptop" --export-collectives "$IT_TMP/x.jsonl" >/dev/null 2>"$IT_TMP/e1" && it_fail "accepted without --replay"
grep -q "needs --replay" "$IT_TMP/e1" || it_fail "no message: $(cat "$IT_TMP/e1")"
"$B/dptop" --replay "$IT_TMP/late.dprec" --export "$IT_TMP/same" --export-collectives "$IT_TMP/same" \
    >/dev/null 2>"$IT_TMP/e2" && it_fail "accepted one file for two exports"
grep -q "same file" "$IT_TMP/e2" || it_fail "no message: $(cat "$IT_TMP/e2")"
it_pass "$out; $w; $j"
