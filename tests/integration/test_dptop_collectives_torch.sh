#!/usr/bin/env bash
# timeout: 240
# A real framework: four torch.distributed ranks (Debian's python3-torch,
# gloo on loopback), each annotating its steps and its allreduce through
# libdptrace (ctypes) and reporting to its own agent on a simulated clock
# (milliseconds apart).  Recorded, then `dptop --replay --export-collectives`:
#   - rank 2 sleeps 20 ms before its allreduce: its node is named last,
#     beyond the clocks' uncertainty, in (nearly) every instance;
#   - no slow rank: no node is last more often than chance allows.
source "$(dirname "$0")/lib.sh"
[ -x "$B/dptop" ] && [ -x "$B/dpnode" ] && [ -e "$B/libdptrace.so" ] ||
    it_skip "dptop, dpnode or libdptrace.so not built in $B"
"$IT_PY" -c "import torch.distributed as d; assert d.is_gloo_available()" 2>/dev/null ||
    it_skip "no torch.distributed with gloo for $IT_PY (Debian: python3-torch)"
STEPS=100

P=$(it_ports 4) || it_skip "no free ports"
HUB="tcp://127.0.0.1:$P"
TP=$((P + 3)) # the hub takes P, P+1 and P+2
common=(--hub="$HUB" --bind-ip=127.0.0.1 --probe-window-s=1)
clocks=(0,0 3000000,20 -5000000,-30 1000000,10)
for n in 0 1 2 3; do
    role=()
    [ $n -eq 0 ] && role=(--master --listen="$HUB")
    it_spawn "node$n" "$B/dpnode" "${role[@]}" --node-id=$n --sim-clock="${clocks[$n]}" \
        --trace-endpoint="ipc://$IT_TMP/t$n.sock" "${common[@]}"
    [ $n -eq 0 ] && { it_wait 20 sh -c "ss -Hltn 'sport = :$P' | grep -q ." ||
        it_fail "the master did not bind"; }
done
it_spawn rec "$B/dptop" --record "$IT_TMP/run.dprec" --hub "$HUB"
REC=$IT_PID
sleep 4 # the clocks align while the ranks import torch (a few seconds more)

ranks=()
for r in 0 1 2 3; do
    DPTOP_TRACE_ENDPOINT="ipc://$IT_TMP/t$r.sock" RANK=$r WORLD_SIZE=4 \
        timeout 150 "$IT_PY" "$(dirname "$0")/torch_coll.py" "$B/libdptrace.so" "$TP" 2 $STEPS \
        >"$IT_TMP/rank$r.log" 2>&1 &
    ranks+=($!)
done
for i in 0 1 2 3; do
    wait "${ranks[$i]}" || it_fail "rank $i failed: $(tail -5 "$IT_TMP/rank$i.log")"
done
sleep 3 # the agents' last batches, and the settle time
kill -INT "$REC"
it_wait 20 sh -c "! kill -0 $REC 2>/dev/null" || it_fail "the recorder did not stop"

"$B/dptop" --replay "$IT_TMP/run.dprec" --export-collectives "$IT_TMP/c.jsonl" \
    >"$IT_TMP/export.out" 2>&1 || it_fail "export failed: $(cat "$IT_TMP/export.out")"
cat "$IT_TMP/export.out"
"$IT_PY" - "$IT_TMP/c.jsonl" $STEPS <<'PY' || it_fail "collectives check failed"
import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
steps = int(sys.argv[2])
ar = [x for x in lines if x["op"] == "allreduce" and x["step"] is not None]
slow = [x for x in ar if x["step"] < 1000 and x["verdict"] in ("late", "within_uncertainty")]
even = [x for x in ar if x["step"] >= 1000 and x["verdict"] in ("late", "within_uncertainty")]
named = sum(1 for x in slow if x["last_rank"] == "n2" and x["verdict"] == "late")
late = [x["lateness_ns"] for x in slow if x["last_rank"] == "n2"]
late.sort()
print(f"slow rank 2: named late in {named} of {len(slow)} instances (of {steps} steps), "
      f"lateness median {late[len(late) // 2] / 1e6 if late else 0:.2f} ms")
ok = len(slow) >= steps * 8 // 10 and named >= len(slow) * 9 // 10
calls = {}
for x in even:
    if x["verdict"] == "late":
        calls[x["last_rank"]] = calls.get(x["last_rank"], 0) + 1
n = sum(calls.values())
# Binomial(n, 1/4): 4.5 sigma above the mean is chance at p < 1e-5.
bound = n / 4 + 4.5 * math.sqrt(n * 0.25 * 0.75) + 1
print(f"no slow rank: {len(even)} instances, significant last-rank calls {calls}, "
      f"chance bound {bound:.1f}")
ok = ok and len(even) >= steps * 8 // 10 and max(calls.values(), default=0) <= bound
sys.exit(0 if ok else 1)
PY
it_pass "$(grep -h 'most often late' "$IT_TMP/export.out")"
