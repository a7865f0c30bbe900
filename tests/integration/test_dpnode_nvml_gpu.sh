#!/usr/bin/env bash
# timeout: 120
# dpnode's NVIDIA device metrics from the real driver's NVML, against
# nvidia-smi read at the same moments: the hello lists every GPU
# nvidia-smi lists (name, memory size, vendor), and the status's busy
# percentage, memory in use (without the driver's own reserve), power and
# temperature agree with nvidia-smi's while a CUDA program keeps the first
# GPU busy.  Skipped where no NVIDIA
# GPU answers (every build machine of the project).
. "$(dirname "$0")/lib.sh"

TAIL=$B/tests/tools/bus_tail
APP=$B/tests/cuda/cuda_app
it_need_nvidia "$B/dpnode" "$TAIL" "$APP"
cat "$IT_TMP/gpus.txt"
port=$(it_ports 3) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
mkdir -p "$IT_TMP/sys" # no amdgpu cards: NVML's alone
it_spawn master "$B/dpnode" --master --listen "$H" --status-period-ms 300 \
    --sysfs-root "$IT_TMP/sys" --trace-endpoint "ipc://$IT_TMP/t.sock"
it_spawn tail "$TAIL" --hub "$H" --state --print --prefix dp1.hello. --prefix dp1.status.
TAIL_PID=$IT_PID
it_wait 20 grep -q '^MSG dp1.status.*"gpus":\[{' "$IT_TMP/tail.log" ||
    it_fail "no status with GPUs: $(grep -i nvml "$IT_TMP/master.log")"
grep -i "nvml\|nvidia" "$IT_TMP/master.log"

# nvidia-smi's readings every 0.3 s, beside the agent's, while cuda_app
# spins the first GPU for about 3 s between two idle seconds.
Q=index,name,memory.total,memory.used,utilization.gpu,power.draw,temperature.gpu
(while :; do
    nvidia-smi --query-gpu=$Q --format=csv,noheader,nounits | sed "s/^/$(date +%s%N), /"
    sleep 0.3
done) >"$IT_TMP/smi.csv" 2>&1 &
SMI_PID=$!
IT_PIDS+=($SMI_PID)
sleep 1
START=$(date +%s%N)
# NVML numbers boards in PCI bus order; CUDA only when told to.
CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=0 timeout 60 "$APP" --steps 15 --spin-us 100000 \
    >"$IT_TMP/app.log" 2>&1 || it_fail "cuda_app failed: $(tail -3 "$IT_TMP/app.log")"
END=$(date +%s%N)
sleep 1
it_stop "$TAIL_PID"
it_stop "$SMI_PID"

"$IT_PY" - "$IT_TMP/tail.log" "$IT_TMP/smi.csv" "$START" "$END" <<'PY' || it_fail "metrics check failed"
import json, statistics, sys
from gpu_dump import check_all as check, fails_exit


def num(s):
    try:
        return float(s)
    except ValueError:
        return None  # "[N/A]", "[Not Supported]"

tail, smi_path, start, end = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
hellos, status = [], []
for line in open(tail):
    if line.startswith("MSG "):
        h = json.loads(line.split(" ", 4)[4])
        (hellos if h["type"] == "hello" else status).append(h)
smi = {}
for line in open(smi_path):
    f = [x.strip() for x in line.split(",")]
    if len(f) == 8:
        smi.setdefault(int(f[1]), []).append(
            {"t": int(f[0]), "name": f[2], "total": num(f[3]), "used": num(f[4]),
             "busy": num(f[5]), "power": num(f[6]), "temp": num(f[7])})
check(smi, "no readings from nvidia-smi")
check(hellos, "no hello")
cards = hellos[-1]["gpus"] if hellos else []
print("hello:", cards)
check(sorted(c["index"] for c in cards) == sorted(smi), "GPUs %s, nvidia-smi %s" %
      ([c["index"] for c in cards], sorted(smi)))
for c in cards:
    s = smi.get(c["index"], [{}])[0]
    check(c.get("vendor") == "nvidia", "vendor %s" % c)
    check(c["name"] == s.get("name"), "name %r, nvidia-smi %r" % (c["name"], s.get("name")))
    if s.get("total"):
        check(abs(c.get("vram_bytes", 0) / 2**20 - s["total"]) <= 0.01 * s["total"],
              "memory %s bytes, nvidia-smi %s MiB" % (c.get("vram_bytes"), s["total"]))

# Per GPU: the agent's and nvidia-smi's readings side by side.
for idx, rows in sorted(smi.items()):
    mine = [(h["t_ns"], g) for h in status for g in h.get("gpus", []) if g["index"] == idx]
    check(mine, "GPU %d in no status" % idx)
    if not mine:
        continue
    print("GPU %d: %d statuses, %d nvidia-smi readings" % (idx, len(mine), len(rows)))
    for key, smikey, scale in (("busy_pct", "busy", 1), ("vram_used_bytes", "used", 2**20),
                               ("power_w", "power", 1), ("temp_c", "temp", 1)):
        a = [g[key] / scale for _, g in mine if key in g]
        b = [r[smikey] for r in rows if r[smikey] is not None]
        print("  %-16s agent min/med/max %8.1f %8.1f %8.1f   nvidia-smi %s" % (
            key, min(a), statistics.median(a), max(a),
            "%8.1f %8.1f %8.1f" % (min(b), statistics.median(b), max(b)) if b else "none")
              if a else "  %-16s not in the status; nvidia-smi %s" % (key, b[:3] or "none"))
        check(bool(a) == bool(b), "%s: the agent has %d readings, nvidia-smi %d" % (key, len(a), len(b)))
    # The medians of what both read agree: temperature within 5 C, power
    # within 25 % and 10 W (both are sampled, at different instants).
    for key, smikey, tol in (("temp_c", "temp", lambda x: 5), ("power_w", "power", lambda x: 0.25 * x + 10)):
        a = [g[key] for _, g in mine if key in g]
        b = [r[smikey] for r in rows if r[smikey] is not None]
        if a and b:
            ma, mb = statistics.median(a), statistics.median(b)
            check(abs(ma - mb) <= tol(mb), "%s: agent median %.1f, nvidia-smi %.1f" % (key, ma, mb))
    # Memory in use, idle and with the program's context: within 64 MiB
    # (without what the driver reserves for itself, as nvidia-smi shows it).
    a = [g["vram_used_bytes"] / 2**20 for _, g in mine if "vram_used_bytes" in g]
    b = [r["used"] for r in rows if r["used"] is not None]
    if a and b:
        check(abs(min(a) - min(b)) <= 64 and abs(max(a) - max(b)) <= 64,
              "memory in use, MiB: agent %.0f..%.0f, nvidia-smi %.0f..%.0f" %
              (min(a), max(a), min(b), max(b)))
    if idx == 0:  # the spinning GPU: busy while the program ran, as nvidia-smi saw it
        # NVML's utilisation lags by its own sample period (up to 1 s).
        busy = [g.get("busy_pct", 0) for t, g in mine if start + 1e9 <= t <= end]
        smibusy = [r["busy"] for r in rows if start + 1e9 <= r["t"] <= end and r["busy"] is not None]
        print("  while spinning: agent busy %s, nvidia-smi %s" % (busy, smibusy))
        check(busy and max(busy) >= 50, "GPU 0 busy while cuda_app spun: %s" % busy)
fails_exit()
PY
it_pass "NVML metrics of $(wc -l <"$IT_TMP/gpus.txt") GPU(s) agree with nvidia-smi"
