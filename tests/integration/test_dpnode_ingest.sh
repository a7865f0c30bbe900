#!/usr/bin/env bash
# timeout: 120
# libdptrace -> dpnode -> bus: hip_app (fake HIP runtime, LD_PRELOAD
# libdptrace.so) sends its events to the agent's trace endpoint; the agent
# republishes every event batch, name table, scope tree and GPU snapshot
# pair under its node id, republishes the process hello as `proc`, and puts
# the application's CLOCK_MONOTONIC stamps on its simulated trace clock
# (here 5 s ahead), like its own snapshot pairs.  Device metrics come from a
# fake amdgpu sysfs tree (--sysfs-root), in the units of the bus.
. "$(dirname "$0")/lib.sh"
it_dpnode_app
REC=$IT_TMP/rec.jsonl
EP="ipc://$IT_TMP/trace.sock"
OFFSET=5000000000

SYS=$IT_TMP/sys
it_fake_amdgpu "$SYS"
mkdir -p "$SYS/card0-DP-1" # a connector, not a card

port=$(it_ports 3) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
it_spawn watch "$IT_PY" "$IT_ROOT/tests/integration/dpnode_watch.py" "$H" "$REC" \
    nodes hello ev names scope snap log status proc
it_spawn master "$B/dpnode" --master --listen "$H" --trace-endpoint "$EP" \
    --sim-clock "$OFFSET,25" --status-period-ms 300 --sysfs-root "$SYS" \
    --nvml-library "$B/tests/fake_nvml/libnvidia-ml.so.1"
MASTER=$IT_PID
it_wait 20 grep -q "trace endpoint $EP" "$IT_TMP/master.log" || it_fail "the agent did not bind $EP"
it_wait 20 $CHECK up "$REC" 1 || it_fail "the master's node table never came"

STEPS=5
DPTOP_TRACE_ENDPOINT=$EP RANK=3 LD_PRELOAD=$LIB "$APP" --steps $STEPS --kernel-us 20000 \
    >"$IT_TMP/app.log" 2>&1 || it_fail "hip_app failed under libdptrace"
grep -q "hip_app: ok" "$IT_TMP/app.log" || it_fail "hip_app did not finish"
line=$(grep "dptrace: .* events captured" "$IT_TMP/app.log")
echo "app: $line"
captured=$(echo "$line" | sed -n 's/.*dptrace: \([0-9]*\) events captured.*/\1/p')
apppid=$(echo "$line" | sed -n 's/^hip_app\[\([0-9]*\)\].*/\1/p')
[ -n "$captured" ] && [ -n "$apppid" ] || it_fail "cannot read the app's summary line"
# Events of a pid on the bus so far, and the largest drop count its batches carried.
bus_events() {
    "$IT_PY" -c 'import json, sys
n = d = 0
for r in map(json.loads, open(sys.argv[1])):
    h = r["h"]
    if h.get("type") == "ev" and h.get("pid") == int(sys.argv[2]):
        n += h["count"]
        d = max(d, h["dropped"])
print(n, d)' "$REC" "$1"
}
# Everything the app sent reaches the bus.
for _ in $(seq 1 100); do
    set -- $(bus_events "$apppid")
    [ "$1" -ge "$captured" ] && break
    sleep 0.2
done
[ "$1" -eq "$captured" ] || it_fail "$1 events of the app on the bus, it sent $captured"
"$IT_PY" - "$REC" "$apppid" "$captured" "$OFFSET" <<'PY' || it_fail "republished trace check failed"
import base64, json, struct, sys
path, pid, captured, offset = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
recs = [json.loads(l) for l in open(path)]
def of(kind):
    return [r for r in recs if r["h"].get("type") == kind and r["h"].get("pid") == pid]
def check(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)
ev = of("ev")
check(ev, "no event batch of the app")
check(all(r["topic"] == "dp1.ev.0" and r["h"]["node"] == 0 for r in ev), "node id on batches")
total = sum(r["h"]["count"] for r in ev)
check(total == captured, f"{total} events on the bus, the app captured {captured}")
check(ev[-1]["h"]["dropped"] == 0, "drops reported")
names = {i: n for r in of("names") for i, n in r["h"]["names"]}
check("fwd_gemm" in names.values() and "hipLaunchKernel" in names.values(), "name table")
tree = [p for r in of("scope") for p in r["h"]["tree"]]
check(tree, "scope tree")
snaps = [r for r in of("snap") if r["h"]["a"] == "gpu0" and r["h"]["b"] == "trace"]
check(snaps, "gpu0/trace snapshot pairs")
procs = of("proc")
check(any(r["h"].get("exe") == "hip_app" and r["h"].get("backend") == "hip" and
          r["h"].get("devices", 0) >= 1 for r in procs), "process hello as a proc message")
# The launcher's rank, from the process's environment.
check(all(r["h"].get("rank") == 3 for r in procs), "rank 3 (RANK=3) on the proc messages")
# Every time is on the agent's trace clock: the real CLOCK_MONOTONIC + 5 s.
ids = set()
for r in ev:
    p = base64.b64decode(r["p"])
    _, _, _, count, _ = struct.unpack_from("<IHHII", p, 0)
    for i in range(count):
        k, fl, dev, epid, tid, stream, name, corr, scope, start, end = struct.unpack_from(
            "<BBHIIIIIQqq", p, 16 + 64 * i)
        check(epid == pid and end >= start, "record pid/times")
        ahead = start - r["m"]
        check(abs(ahead - offset) < 2e9, f"event {start} is {ahead} ns from the real clock")
        if name:
            ids.add(name)
check(ids <= set(names), "events use names never published")
for r in snaps:
    for a, b in r["h"]["pairs"]:
        check(abs(b - r["m"] - offset) < 2e9, "snapshot pair's trace side not on the agent's clock")
print(f"{total} events in {len(ev)} batches, {len(names)} names, {len(tree)} scope pairs, "
      f"{len(snaps)} snapshot messages")
PY
it_wait 5 $CHECK status "$REC" 0 ingest_msgs 5 >/dev/null || it_fail "status does not count ingested messages"

# Drops travel end to end: the agent stops reading for a second (SIGSTOP)
# while the app sends through a 2-message link queue, so the app must drop;
# the count it reports is what its later batches carry on the bus and what
# the agent's status adds up.
DPTOP_TRACE_HWM=2 DPTOP_TRACE_ENDPOINT=$EP LD_PRELOAD=$LIB "$APP" --threads 2 --steps 15000 \
    --kernel-us 0 >"$IT_TMP/app2.log" 2>&1 &
APP2=$!
IT_PIDS+=("$APP2")
sleep 0.5
kill -STOP "$MASTER"
sleep 1
kill -CONT "$MASTER"
wait "$APP2" || it_fail "hip_app (drops) failed under libdptrace"
line=$(grep "dptrace: .* events captured" "$IT_TMP/app2.log")
echo "app: $line"
dropped=$(echo "$line" | sed -n 's/.*, \([0-9]*\) dropped$/\1/p')
pid2=$(echo "$line" | sed -n 's/^hip_app\[\([0-9]*\)\].*/\1/p')
[ -n "$dropped" ] && [ -n "$pid2" ] || it_fail "cannot read the second app's summary line"
[ "$dropped" -gt 0 ] || it_fail "the app dropped nothing while the agent was stopped: $line"
for _ in $(seq 1 100); do
    set -- $(bus_events "$pid2")
    [ "$2" -ge "$dropped" ] && break
    sleep 0.2
done
[ "$2" -eq "$dropped" ] || it_fail "the bus carries $2 dropped events of pid $pid2, the app counted $dropped"
it_wait 5 $CHECK status "$REC" 0 ev_drops "$dropped" >/dev/null ||
    it_fail "the agent's status does not count the app's $dropped drops"
echo "drops: the app counted $dropped, its batches on the bus say $2"
# A receiver that is there but slow (the queue full) already has the
# process's state: it is not sent again before every batch.
hellos=$("$IT_PY" -c 'import json, sys
print(sum(1 for r in map(json.loads, open(sys.argv[1]))
          if r["h"].get("type") == "proc" and r["h"].get("pid") == int(sys.argv[2])))' "$REC" "$pid2")
echo "hellos of the slowed app on the bus: $hellos"
[ "$hellos" -le 2 ] || it_fail "the slowed app sent its state again $hellos times"
"$IT_PY" - "$REC" <<'PY' || it_fail "device metrics"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
hello = [r["h"] for r in recs if r["h"].get("type") == "hello"][-1]
status = [r["h"] for r in recs if r["h"].get("type") == "status"][-1]
# The amdgpu card of the fake sysfs tree, then the fake NVML's two boards.
assert hello["gpus"] == [
    {"index": 0, "name": "amdgpu card0", "vendor": "amd", "vram_bytes": 17179869184},
    {"index": 0, "name": "Fake NVIDIA A100", "vendor": "nvidia", "vram_bytes": 40 << 30},
    {"index": 1, "name": "Fake NVIDIA T4", "vendor": "nvidia", "vram_bytes": 16 << 30}], hello
# Index 0 twice: the vendor tells the status entries apart.
assert [(g["vendor"], g["index"]) for g in status["gpus"]] == [("amd", 0), ("nvidia", 0), ("nvidia", 1)], status
g = status["gpus"][0]
assert g["index"] == 0 and g["busy_pct"] == 37 and g["vram_used_bytes"] == 1073741824, g
assert abs(g["power_w"] - 123.45) < 1e-9 and abs(g["temp_c"] - 54.5) < 1e-9, g
a100, t4 = status["gpus"][1], status["gpus"][2]
assert a100["busy_pct"] == 37 and a100["vram_used_bytes"] == 1 << 30, a100
assert abs(a100["power_w"] - 123.45) < 1e-9 and a100["temp_c"] == 54, a100
assert "power_w" not in t4 and t4["busy_pct"] == 5 and t4["temp_c"] == 40, t4
print("device metrics:", status["gpus"])
PY
it_pass "libdptrace events republished on the bus under node 0, on its trace clock; $dropped app drops counted end to end; amdgpu and NVML metrics in W and C"
