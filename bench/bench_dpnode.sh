#!/usr/bin/env bash
# dpnode live figures (SPEC 9), all at the built-in defaults unless noted:
#   1. CPU share of an agent probing 4 neighbours (a master and 4 agents),
#      against the seed settings (cadence 800 us, window 4 s) measured in
#      the same run;
#   2. live alignment error of 8 nodes on loopback, each with its own
#      simulated clock (offsets up to +-50 ms, drifts up to +-200 ppm),
#      against the simulated truth, over 30 s, beside a measured peer: the
#      same run's probe logs fitted offline by an NTP-style estimator
#      (minrtt) and by svm; and each agent's CPU share.
# CPU share = (utime + stime) / wall, from /proc/PID/stat, over the
# measurement interval only (start-up excluded).
#
# Usage: bench/bench_dpnode.sh [seconds]   (DPTEST_BUILD=build dir)
set -u
. "$(dirname "$0")/../tests/integration/lib.sh"
SECS=${1:-30}
D=$B/dpnode
[ -x "$D" ] || { echo "bench_dpnode: $D is missing (build it first)" >&2; exit 1; }
"$IT_PY" -c 'import zmq' 2>/dev/null || { echo "bench_dpnode: python3-zmq missing" >&2; exit 1; }
CHECK="$IT_PY $IT_ROOT/tests/integration/dpnode_check.py"
HZ=$(getconf CLK_TCK)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }

# run_cluster NAME NODES SECONDS [dpnode flags...]: starts a cluster, waits
# until it is aligned, measures for SECONDS; leaves per-pid CPU % in
# $IT_TMP/NAME.cpu (one line per process: node pid pct) and the recording
# in $IT_TMP/NAME.jsonl; prints the wall time it measured from.
run_cluster() {
    local name=$1 nodes=$2 secs=$3
    shift 3
    local port H rec=$IT_TMP/$name.jsonl pids=() i
    port=$(it_ports 3) || { echo "no free ports" >&2; exit 1; }
    H=tcp://127.0.0.1:$port
    it_spawn "$name-watch" "$IT_PY" "$IT_ROOT/tests/integration/dpnode_watch.py" "$H" "$rec"
    local wpid=$IT_PID
    # With PROBE_LOGS set, every node also writes its probe log (SPEC 4.5).
    plog() { [ -n "${PROBE_LOGS:-}" ] && echo "--probe-log=$IT_TMP/$name-$1.probes"; }
    it_spawn "$name-m" "$D" --master --listen "$H" --trace-endpoint none \
        --sim-clock "$(sim_of 0)" $(plog 0) "$@"
    pids+=("$IT_PID")
    for i in $(seq 1 $((nodes - 1))); do
        it_spawn "$name-$i" "$D" --hub "$H" --trace-endpoint none --sim-clock "$(sim_of "$i")" \
            $(plog "$i") "$@"
        pids+=("$IT_PID")
    done
    it_wait 60 $CHECK up "$rec" "$nodes" >/dev/null || { echo "$name: nodes did not come up" >&2; exit 1; }
    it_wait 60 $CHECK aligned "$rec" "$nodes" "$(date +%s.%N)" >/dev/null ||
        { echo "$name: not aligned" >&2; exit 1; }
    sleep 2 # let the first windows after alignment pass
    local t0 w0 c0=() c1=()
    t0=$(date +%s.%N)
    w0=$(date +%s%N)
    for p in "${pids[@]}"; do c0+=("$(cpu_ticks "$p")"); done
    sleep "$secs"
    local w1
    w1=$(date +%s%N)
    for p in "${pids[@]}"; do c1+=("$(cpu_ticks "$p")"); done
    : >"$IT_TMP/$name.cpu"
    for i in "${!pids[@]}"; do
        echo "$i ${pids[$i]} $(awk -v c0="${c0[$i]}" -v c1="${c1[$i]}" -v hz="$HZ" -v w0="$w0" -v w1="$w1" \
            'BEGIN { printf "%.3f", 100 * (c1 - c0) / hz / ((w1 - w0) / 1e9) }')" \
            >>"$IT_TMP/$name.cpu"
    done
    for p in "${pids[@]}"; do it_stop "$p"; done
    it_stop "$wpid"
    echo "$t0"
}

# Simulated clocks: offsets spread over +-50 ms, drifts over +-200 ppm.
sim_of() {
    local i=$1
    echo "$(((i * 37 % 11 - 5) * 10000000)),$(((i * 53 % 9 - 4) * 50))"
}

max_of() { awk '{ if ($3 > m) m = $3 } END { printf "%.2f", m }' "$1"; }
mean_of() { awk '{ s += $3; n++ } END { printf "%.2f", s / n }' "$1"; }

echo "dpnode bench: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), defaults: cadence $(
    "$D" --print-config | awk '$1 == "probe_cadence_us" {print $3}') us, window $(
    "$D" --print-config | awk '$1 == "probe_window_s" {print $3}') s"

run_cluster cpu4 5 "$SECS" >/dev/null
run_cluster seed4 5 "$((SECS * 2 / 3))" --probe-cadence-us 800 --probe-window-s 4 >/dev/null
t8=$(PROBE_LOGS=1 run_cluster live8 8 "$SECS")
err=$($CHECK errors "$IT_TMP/live8.jsonl" 8 "$t8" 1e12) || { echo "no error figures: $err" >&2; exit 1; }
# The baseline: how far apart the raw probe clocks are (what alignment removes).
raw=$("$IT_PY" - "$IT_TMP/live8.jsonl" <<'PY'
import json, sys
t = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["h"].get("type") == "sim_truth":
        t[r["h"]["node"]] = r["h"]["offset_ns"]
print(f"{max(t.values()) - min(t.values()):.0f}")
PY
)
# The measured peer: the same run's probes fitted offline by an NTP-style
# estimator (minrtt: the smallest round trip per interval) and by svm, both
# through the same network solve, against the same truth.  Each sample is in
# the logs of both its endpoints: keep one.
mkdir -p "$IT_TMP/off"
"$IT_PY" - "$IT_TMP" "$IT_TMP/live8.jsonl" <<'EOF'
import glob, json, sys
tmp, rec = sys.argv[1], sys.argv[2]
seen = set()
with open(f"{tmp}/off/probes.jsonl", "w") as out:
    for path in sorted(glob.glob(f"{tmp}/live8-*.probes")):
        for line in open(path):
            o = json.loads(line)
            key = (o.get("src"), o.get("dst"), o.get("seq"))
            if o.get("type") == "probe" and key not in seen:
                seen.add(key)
                out.write(line)
with open(f"{tmp}/off/truth.jsonl", "w") as out:
    for line in open(rec):
        h = json.loads(line)["h"]
        if h.get("type") == "sim_truth":
            out.write(json.dumps(h) + "\n")
EOF
# The offline fits are compared on the windows the live figures counted and
# no others: the logs also hold the start-up and the shutdown, when the
# master (the reference) stops first and the last window's maps reach a
# second past its last probe.
"$IT_PY" - "$IT_ROOT" "$IT_TMP/live8.jsonl" 8 "$t8" >"$IT_TMP/off/windows" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1] + "/tests/integration")
import dpnode_check as dc
w, order = dc.windows(dc.load(sys.argv[2]), float(sys.argv[4]))
print(" ".join(str(k) for k in order if dc.aligned_count(w[k]) >= int(sys.argv[3])))
EOF
win_s=$("$D" --print-config | awk '$1 == "probe_window_s" {print $3}')
offline() { # estimator -> "p50 p99" of its node fits against the truth
    "$B/dpclock" fit "$IT_TMP/off/probes.jsonl" --estimator "$1" --ref 0 --window-s "$win_s" \
        >"$IT_TMP/off/$1.all" 2>/dev/null &&
        "$IT_PY" - "$IT_TMP/off/$1.all" "$IT_TMP/off/windows" "$win_s" >"$IT_TMP/off/$1.fits" <<'EOF' &&
import json, sys
keep = set(int(k) for k in open(sys.argv[2]).read().split())
w_ns = int(float(sys.argv[3]) * 1e9)
lines = [(l, json.loads(l)) for l in open(sys.argv[1])]
# A window's number on the reference's probe clock, from its map of itself.
ids = {o["window"]: int(o["anchor_ns"]) // w_ns for _, o in lines
       if o.get("type") == "node_fit" and o["node"] == o["ref"]}
for l, o in lines:
    if o.get("type") != "node_fit" or ids.get(o["window"]) in keep:
        print(l, end="")
EOF
        "$B/dpclock" eval "$IT_TMP/off" "$IT_TMP/off/$1.fits" |
        sed -n 's/^offset error *p50 \([0-9.]*\) ns *p99 \([0-9.]*\) ns.*/\1 \2/p'
}
read -r svm50 svm99 <<<"$(offline svm)"
read -r ntp50 ntp99 <<<"$(offline minrtt)"
p50=$(echo "$err" | sed -n 's/.*p50_ns=\([0-9.]*\).*/\1/p')
p99=$(echo "$err" | sed -n 's/.*p99_ns=\([0-9.]*\).*/\1/p')
mx=$(echo "$err" | sed -n 's/.*max_ns=\([0-9.]*\).*/\1/p')
cov=$(echo "$err" | sed -n 's/.*coverage=\([0-9.]*\)%.*/\1/p')
unc=$(echo "$err" | sed -n 's/.*unc_median_ns=\([0-9.]*\).*/\1/p')
fits=$(echo "$err" | sed -n 's/.*fits=\([0-9]*\).*/\1/p')
c4=$(max_of "$IT_TMP/cpu4.cpu")
c4a=$(awk '$1 > 0 { if ($3 > m) m = $3 } END { printf "%.2f", m }' "$IT_TMP/cpu4.cpu")
cs=$(awk '$1 > 0 { if ($3 > m) m = $3 } END { printf "%.2f", m }' "$IT_TMP/seed4.cpu")
c8=$(awk '$1 > 0 { if ($3 > m) m = $3 } END { printf "%.2f", m }' "$IT_TMP/live8.cpu")
c8m=$(awk '$1 == 0 { printf "%.2f", $3 }' "$IT_TMP/live8.cpu")

printf '\n%-46s %14s\n' "figure" "value"
printf '%-46s %14s\n' "agent CPU, 4 neighbours, defaults (max)" "$c4a %"
printf '%-46s %14s\n' "  same, mean of the 4 agents" "$(awk '$1 > 0 { s += $3; n++ } END { printf "%.2f", s / n }' "$IT_TMP/cpu4.cpu") %"
printf '%-46s %14s\n' "  master (hub + solve + its own probing)" "$(awk '$1 == 0 { printf "%.2f", $3 }' "$IT_TMP/cpu4.cpu") %"
printf '%-46s %14s\n' "agent CPU, 4 neighbours, seed 800 us / 4 s" "$cs %"
printf '%-46s %14s\n' "  seed / defaults" "$(awk -v a="$cs" -v b="$c4a" 'BEGIN { printf "%.1f", a / b }')x"
printf '%-46s %14s\n' "live error p50, 8 nodes, $SECS s" "$p50 ns"
printf '%-46s %14s\n' "live error p99" "$p99 ns"
printf '%-46s %14s\n' "live error max" "$mx ns"
printf '%-46s %14s\n' "node fits compared / within uncertainty" "$fits / $cov %"
printf '%-46s %14s\n' "  median uncertainty / median error" "$unc ns / $(awk -v a="$unc" -v b="$p50" 'BEGIN { if (b > 0) printf "%.1f", a / b; else printf "-" }')x"
printf '%-46s %14s\n' "same probes offline, svm p50 / p99" "${svm50:-?} / ${svm99:-?} ns"
printf '%-46s %14s\n' "same probes offline, minrtt (NTP-style)" "${ntp50:-?} / ${ntp99:-?} ns"
printf '%-46s %14s\n' "  minrtt p99 / live p99" "$(awk -v a="${ntp99:-0}" -v b="$p99" 'BEGIN { printf "%.1f", a / b }')x"
printf '%-46s %14s\n' "raw clock spread (simulated offsets)" "$raw ns"
printf '%-46s %14s\n' "  raw spread / aligned p99" "$(awk -v a="$raw" -v b="$p99" 'BEGIN { printf "%.0f", a / b }')x"
printf '%-46s %14s\n' "agent CPU, 8 nodes (7 neighbours), max" "$c8 %"
printf '%-46s %14s\n' "master CPU, 8 nodes" "$c8m %"
echo
echo "BENCH dpnode_cpu_pct_4nb_max $c4a %"
echo "BENCH dpnode_cpu_pct_seed_4nb_max $cs %"
echo "BENCH dpnode_cpu_seed_over_default $(awk -v a="$cs" -v b="$c4a" 'BEGIN { printf "%.2f", a / b }') x"
echo "BENCH dpnode_live_p50_ns $p50 ns"
echo "BENCH dpnode_live_p99_ns $p99 ns"
echo "BENCH dpnode_live_max_ns $mx ns"
echo "BENCH dpnode_live_coverage_pct $cov %"
echo "BENCH dpnode_live_unc_p50_ns $unc ns"
echo "BENCH dpnode_offline_svm_p99_ns ${svm99:-nan} ns"
echo "BENCH dpnode_offline_minrtt_p99_ns ${ntp99:-nan} ns"
echo "BENCH dpnode_minrtt_over_live_p99 $(awk -v a="${ntp99:-0}" -v b="$p99" 'BEGIN { printf "%.2f", a / b }') x"
echo "BENCH dpnode_raw_spread_ns $raw ns"
echo "BENCH dpnode_raw_over_p99 $(awk -v a="$raw" -v b="$p99" 'BEGIN { printf "%.0f", a / b }') x"
echo "BENCH dpnode_cpu_pct_max $c8 %"
echo "BENCH dpnode_master_cpu_pct $c8m %"
trap - EXIT
it_cleanup
