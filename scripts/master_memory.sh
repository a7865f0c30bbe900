#!/usr/bin/env bash
# The master's memory over time: a master and AGENTS agents (default 8) with
# simulated clocks and the simulated workload on loopback, for SECONDS
# (default 240); every 15 s, the master's RSS and its hub cache (messages,
# bytes of frames, evictions) from its status.  The figures of "The master's
# memory in steady state" in docs/DPNODE.md come from this script.
#
# Usage: scripts/master_memory.sh [SECONDS] [AGENTS] [BUILD_DIR]
set -u
cd "$(dirname "$0")/.."
root=$(pwd)
secs=${1:-240} agents=${2:-8} B=${3:-build}
port=$(( (RANDOM % 2000) + 47000 ))
H=tcp://127.0.0.1:$port
D=$(mktemp -d /tmp/dptop-mem.XXXXXX)
C=(--bind-ip 127.0.0.1 --sim-workload --trace-endpoint none)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$D"' EXIT
"$B/dpnode" --master --listen "$H" --sim-clock 0,0 "${C[@]}" >"$D/master.log" 2>&1 &
M=$!
pids+=($M)
sleep 1
for i in $(seq 1 "$agents"); do
    "$B/dpnode" --hub "$H" --sim-clock $((i * 1000000)),$((i * 5)) "${C[@]}" >"$D/a$i.log" 2>&1 &
    pids+=($!)
done
/usr/bin/python3 "$root/tests/integration/dpnode_watch.py" "$H" "$D/rec.jsonl" status >/dev/null 2>&1 &
pids+=($!)
for t in $(seq 15 15 "$secs"); do
    sleep 15
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$M/status")
    cache=$(/usr/bin/python3 - "$D/rec.jsonl" <<'PY'
import json, sys
last = None
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["h"].get("node") == 0 and r["h"].get("type") == "status":
        last = r["h"]
print("-" if last is None else "msgs=%s bytes=%s evicted=%s" % (
    last.get("hub_cache_msgs"), last.get("hub_cache_bytes"), last.get("hub_cache_evicted")))
PY
)
    echo "t=${t}s master_rss_kib=$rss cache $cache"
done
