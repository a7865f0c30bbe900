#!/usr/bin/env bash
# timeout: 300
# Import other profilers' traces: a master and two agents with simulated
# clocks (+3 ms and 20 ppm, -5 ms and -30 ppm) and workload are recorded;
# tests/import/kineto_gen.py writes one PyTorch profiler trace per rank on
# those nodes' clocks (Kineto's two timestamp eras, plain and gzip), where
# every rank's all-reduce ends at the same real time.  `dptop --replay REC
# --import ... --export OUT.json` must find each file's node by its pid,
# and the all-reduces must end together after alignment (within the
# files' resolution and the reported uncertainty) while the raw files are
# milliseconds apart.  Then the refusals: PyTorch's legacy profiler's file
# (written by Debian's python3-torch 1.13), malformed and foreign input,
# another host's clock, unknown nodes; each is one line, exit 1 (2 for a
# missing file), and no output is left.  Finally --strict and events before
# the nodes were aligned.  rocprofv3's CSV (two releases' layouts) and
# JSON on CLOCK_BOOTTIME, the map filters (dptop --map, dpclock map), and
# XSpace (JAX's saved profiles, dptop's own export read back, malformed
# protobuf), the imports in an XSpace export and in the console.
source "$(dirname "$0")/lib.sh"

[ -x "$B/dptop" ] && [ -x "$B/dpnode" ] || it_skip "dptop or dpnode not built in $B"
GEN="$IT_ROOT/tests/import/kineto_gen.py"
LEGACY="$IT_ROOT/tests/import/torch113_legacy.json"

P=$(it_ports 3) || it_skip "no free ports"
HUB="tcp://127.0.0.1:$P"
common=(--hub="$HUB" --bind-ip=127.0.0.1 --sim-workload --trace-endpoint=none)
it_spawn master "$B/dpnode" --master --listen="$HUB" --node-id=0 --sim-clock=0,0 "${common[@]}"
it_wait 20 sh -c "ss -Hltn 'sport = :$P' | grep -q ." || it_fail "the master did not bind $HUB"
it_spawn agent1 "$B/dpnode" --node-id=1 --sim-clock=3000000,20 "${common[@]}"
# Node 2's process is rank 1 of the job (its launcher's RANK), as the files say.
it_spawn agent2 env RANK=1 "$B/dpnode" --node-id=2 --sim-clock=-5000000,-30 "${common[@]}"
REC="$IT_TMP/run.dprec"
it_spawn rec "$B/dptop" --record "$REC" --hub "$HUB"
RECPID=$IT_PID
RANKS=(1:new:end:gz 2:old 0:new:start)
# The recording holds the steps once every node is aligned, named its
# process, and 2 s of steps and a margin followed.
it_wait 120 "$IT_PY" "$GEN" "$REC" "$IT_TMP/gen" "${RANKS[@]}" --check 2>/dev/null ||
    it_fail "the recording never held aligned nodes and the steps"
kill -INT "$RECPID"
it_wait 20 sh -c "! kill -0 $RECPID 2>/dev/null" || it_fail "the recorder did not stop"

"$IT_PY" "$GEN" "$REC" "$IT_TMP/gen" "${RANKS[@]}" >"$IT_TMP/truth.json" || it_fail "kineto_gen failed"
OUT="$IT_TMP/merged.json"
"$B/dptop" --replay "$REC" --import "$IT_TMP"/gen/rank*.json* --export "$OUT" \
    >"$IT_TMP/imp.out" 2>"$IT_TMP/imp.err" || it_fail "import failed: $(cat "$IT_TMP/imp.out" "$IT_TMP/imp.err")"
cat "$IT_TMP/imp.out"
[ "$(grep -c '^dptop: imported .* as node [0-2] (Kineto' "$IT_TMP/imp.out")" -eq 3 ] ||
    it_fail "not three import lines: $(cat "$IT_TMP/imp.out")"

# Collectives of the imported job: rank r joins its allreduce 0.7 ms after
# rank r-1 (kineto_gen), so rank 2 (node 0) is everyone's wait, 0.7 ms late;
# keyed by ProfilerStep#N, apart from the recording's own simulated job.
"$B/dptop" --replay "$REC" --import "$IT_TMP"/gen/rank*.json* --export-collectives "$IT_TMP/coll.jsonl" \
    >"$IT_TMP/coll.out" 2>&1 || it_fail "collectives of the imports failed: $(cat "$IT_TMP/coll.out")"
"$IT_PY" - "$IT_TMP/coll.jsonl" <<'PY' || it_fail "the imported job's collectives"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
imp = [x for x in lines if x["step"] is not None and x["step"] < 1000]
own = [x for x in lines if x["step"] is not None and x["step"] >= 1000]
ok = [x for x in imp if x["verdict"] == "late" and x["ranks"] == 3 and
      x["last_rank"].startswith("n0.") and abs(x["lateness_ns"] - 700000) <= 3000]
print(f"imported job: {len(ok)} of {len(imp)} allreduce instances name node 0's rank 0.7 ms late; "
      f"the recording's own: {len(own)} instances, "
      f"{sum(1 for x in own if x['verdict'] == 'partial')} partial")
assert len(imp) == 20 and len(ok) == 20, [(x["last_rank"], x["lateness_ns"], x["verdict"]) for x in imp][:5]
assert all(len(x["arrivals"]) <= 3 for x in own)
PY

"$IT_PY" - "$OUT" "$IT_TMP/truth.json" <<'EOF' || it_fail "the imported ranks are not aligned"
import gzip, json, sys
d = json.load(open(sys.argv[1]))
truth = json.load(open(sys.argv[2]))
meta = d["metadata"]
origin = meta["origin_ns"]
imps = meta["imports"]
assert len(imps) == 3, imps
by_path = {f["path"]: f for f in truth["files"]}
lane = {}
for i, m in enumerate(imps):
    t = by_path[m["file"]]
    # Each file's node came from its pid in the recording's proc messages.
    assert m["node"] == t["node"] and m["node_from"] == "pid in the recording", m
    assert m["clock"] == "realtime" and m["rank"] == t["rank"] and m["world_size"] == 3, m
    assert m["distributedInfo"]["nccl_version"] == "2.20.5", m
    assert m["deviceProperties"][0]["numSms"] == 132, m
    assert m["outside_aligned"] == 0 and m["dropped"] == 0 and m["events"] > 400, m
    assert ("base_ns" in m) == (t["style"] == "new"), m
    for k in range(100):
        lane[(i + 1) * 100000 + k] = (t, m)
ends, flows, unc = {}, 0, {}
for e in d["traceEvents"]:
    if e.get("pid") not in lane:
        continue
    t, m = lane[e["pid"]]
    if e.get("ph") in ("s", "f") and e.get("cat") == "ac2g":
        flows += 1
        assert e["id"] >> 32 == imps.index(m) + 1, e  # ids kept apart per file
    if e.get("ph") == "X" and e["name"].startswith("ncclDevKernel_AllReduce"):
        assert e["args"]["Collective name"] == "allreduce" and "dptop_time" not in e["args"], e
        ends.setdefault(t["rank"], []).append((e["ts"] + e["dur"]) * 1000 + origin)
        unc[t["rank"]] = max(unc.get(t["rank"], 0), e["args"]["dptop_unc_ns"])
assert flows > 100, flows
names = [e["args"]["name"] for e in d["traceEvents"]
         if e.get("ph") == "M" and e["name"] == "process_name" and e["pid"] in lane]
# GPUs 1..15 that Kineto names but never used are left out.
assert sum("GPU" in n or "python3" in n for n in names) == 6, names
# Old-era files count whole microseconds: ts and dur each cut up to 1 us.
res = {f["rank"]: 2000 if f["style"] == "old" else 2 for f in truth["files"]}
worst = {}
for k, st in enumerate(truth["steps"]):
    for r in ends:
        err = abs(ends[r][k] - st["allreduce_end_ns"])
        worst[r] = max(worst.get(r, 0), err)
spread = max(max(ends[r][k] for r in ends) - min(ends[r][k] for r in ends)
             for k in range(len(truth["steps"])))
# Raw: the files' own first all-reduce ends, milliseconds apart.
raw = []
for f in truth["files"]:
    op = gzip.open if f["path"].endswith(".gz") else open
    tr = json.load(op(f["path"], "rt"))
    base = tr.get("baseTimeNanoseconds", 0)
    e = next(e for e in tr["traceEvents"] if e.get("name", "").startswith("ncclDevKernel"))
    raw.append(base + round((e["ts"] + e["dur"]) * 1000))
raw_spread = max(raw) - min(raw)
print("all-reduce ends: raw files %.3f ms apart; aligned spread %.0f ns; vs truth per rank %s ns "
      "(uncertainty %s ns)" % (raw_spread / 1e6, spread,
                               {r: round(v) for r, v in worst.items()}, unc))
assert raw_spread > 3e6, raw_spread
for r, v in worst.items():
    # The bound: the file's resolution plus three times the uncertainty the
    # node's map reports, plus 1 us for a loaded machine's fits.
    assert v <= res[r] + 3 * unc[r] + 1000, (r, v, unc[r])
assert spread <= max(res.values()) * 2 + 3 * sum(unc.values()) + 2000, spread
EOF

# rocprofv3 on CLOCK_BOOTTIME (the agents' boottime snapshot pairs): the
# CSV files of ROCm 6.4 and 7.0 layouts and the JSON file, one rank each.
RG="$IT_ROOT/tests/import/rocprof_gen.py"
"$IT_PY" "$RG" "$REC" "$IT_TMP/rp64" 1 2 --layout 6.4 >"$IT_TMP/rp64.json" || it_fail "rocprof_gen 6.4 failed"
"$IT_PY" "$RG" "$REC" "$IT_TMP/rp70" 1 2 --layout 7.0 >"$IT_TMP/rp70.json" || it_fail "rocprof_gen 7.0 failed"
"$IT_PY" "$RG" "$REC" "$IT_TMP/rpj" 1 2 --format json >"$IT_TMP/rpj.json" || it_fail "rocprof_gen json failed"
"$B/dptop" --replay "$REC" --import "$IT_TMP"/rp64/rank0/* "$IT_TMP"/rp70/rank1/* \
    "$IT_TMP"/rpj/rank*/*/*_results.json --export "$IT_TMP/rocprof.json" >"$IT_TMP/rp.out" 2>&1 ||
    it_fail "rocprofv3 import failed: $(cat "$IT_TMP/rp.out")"
grep -q "rocprofv3 CSV kernel trace, 18 columns, boottime clock" "$IT_TMP/rp.out" &&
    grep -q "rocprofv3 CSV kernel trace, 22 columns" "$IT_TMP/rp.out" &&
    [ "$(grep -c 'rocprofv3 JSON, 3 kernel names, 1 GPU agents, boottime clock' "$IT_TMP/rp.out")" -eq 2 ] ||
    it_fail "not every rocprofv3 file was read as such: $(cat "$IT_TMP/rp.out")"
"$IT_PY" - "$IT_TMP/rocprof.json" "$IT_TMP/rp64.json" <<'EOF' || it_fail "rocprofv3 ranks not aligned"
import json, sys
d = json.load(open(sys.argv[1]))
truth = json.load(open(sys.argv[2]))
origin = d["metadata"]["origin_ns"]
files = {i: m for i, m in enumerate(d["metadata"]["imports"])}
assert all(m["clock"] == "boottime" and m["outside_aligned"] == 0 for m in files.values()), files
ends, worst, flows = {}, 0, {}
for e in d["traceEvents"]:
    if not isinstance(e.get("pid"), int) or e["pid"] < 100000:
        continue
    f = e["pid"] // 100000 - 1
    if e.get("ph") == "X" and e["name"].startswith("ncclDevKernel_AllReduce"):
        ends.setdefault(f, []).append((e["ts"] + e["dur"]) * 1000 + origin)
        worst = max(worst, e["args"]["dptop_unc_ns"])
    if e.get("ph") in ("s", "f") and e.get("cat") == "flow":
        flows.setdefault(e["id"], set()).add(e["ph"])
err = {files[f]["file"].split("/")[-1]: max(abs(x - s["allreduce_end_ns"]) for x, s in zip(v, truth["steps"]))
       for f, v in ends.items()}
print("rocprofv3 all-reduce ends vs truth (ns):", err, "uncertainty up to %.0f ns" % worst)
assert len(err) == 4 and all(len(v) == len(truth["steps"]) for v in ends.values()), ends.keys()
# The bound: the boottime pairs (each read within its bracket, a few hundred
# ns on a loaded host), three times the maps' uncertainty, and 2 us.
assert max(err.values()) <= 3 * worst + 2000, err
# Launch calls and their kernels joined by flow ids over a rank's CSV files.
whole = sum(1 for v in flows.values() if v == {"s", "f"})
assert whole >= 4 * len(truth["steps"]), whole
EOF

# The map filters on the same recording: a node's realtime (text and JSON
# lines) and boottime readings of a known real time; an unknown node
# refused; dpclock map from the window statistics agrees with dptop's.
"$B/dptop" --replay "$REC" --export-windows "$IT_TMP/win.jsonl" >/dev/null 2>&1 || it_fail "export-windows failed"
IT_ROOT="$IT_ROOT" "$IT_PY" - "$REC" "$IT_TMP" "$B" <<'EOF' || it_fail "the map filters disagree with the truth or each other"
import json, os, subprocess, sys
rec, tmp, b = sys.argv[1:4]
sys.path.insert(0, os.environ["IT_ROOT"] + "/tests/import")
import kineto_gen, rocprof_gen
truth, procs, hosts, fits, first, last = kineto_gen.truths_and_procs(rec)
T = max(fits.values()) + 2500000000
rb = rocprof_gen.real_minus_boot()
loc = {n: kineto_gen.local_ns(T, truth[n]) for n in (1, 2)}
lines = ["%d" % loc[1], '{"node": 2, "clock": "realtime", "t_ns": %d}' % loc[2],
         "1 boottime %d" % (loc[1] - rb), "9 realtime 5"]
p = subprocess.run([b + "/dptop", "--replay", rec, "--map", "n1"], input="\n".join(lines) + "\n",
                   capture_output=True, text=True)
out = p.stdout.splitlines()
print("dptop --map:", out)
assert p.returncode == 1 and len(out) == 4, (p.returncode, out, p.stderr)
g1 = int(out[0].split()[0])
j = json.loads(out[1])
g3 = int(out[2].split()[0])
assert out[3].startswith("error: node 9 is not in the recording"), out[3]
assert abs(g1 - T) <= 1000 and abs(j["global_ns"] - T) <= 1000 and j["flags"] == [], (g1 - T, j)
assert abs(g3 - T) <= 3000, g3 - T
q = subprocess.run([b + "/dpclock", "map", tmp + "/win.jsonl", "--node", "1"], input="%d\n" % loc[1],
                   capture_output=True, text=True)
print("dpclock map: %s (dptop's %d)" % (q.stdout.strip(), g1))
g4 = int(q.stdout.split()[0])
assert q.returncode == 0 and abs(g4 - g1) <= 200, (q.returncode, g4 - g1)
EOF

fails() { # NAME EXPECTED-RC PATTERN ARGS...: dptop must fail so, say PATTERN, write nothing
    local name=$1 want=$2 pat=$3
    shift 3
    rm -f "$IT_TMP/bad.json"
    "$B/dptop" --replay "$REC" "$@" --export "$IT_TMP/bad.json" >"$IT_TMP/$name.out" 2>"$IT_TMP/$name.err"
    local rc=$?
    [ $rc -eq "$want" ] || it_fail "$name: exit $rc, not $want: $(cat "$IT_TMP/$name.out" "$IT_TMP/$name.err")"
    grep -qE "$pat" "$IT_TMP/$name.err" || it_fail "$name: no '$pat' in: $(cat "$IT_TMP/$name.err")"
    [ -e "$IT_TMP/bad.json" ] && it_fail "$name: an output was written"
    ls "$IT_TMP"/bad.json.* >/dev/null 2>&1 && it_fail "$name: a temporary was left"
    echo "$name: $(head -c 300 "$IT_TMP/$name.err")"
}
G="$IT_TMP/gen"
# The real legacy file: refused with the reason, accepted with a start time.
fails legacy 1 "legacy bare array of events: times count from the profiler's start.*Kineto.*@NS" --import "0=$LEGACY"
"$B/dptop" --replay "$REC" --import "0=$LEGACY@$(sed -n 's/.*"t_start": \([0-9]*\).*/\1/p' "$IT_TMP/truth.json")" \
    --export "$IT_TMP/legacy.json" >"$IT_TMP/legacy_ok.out" 2>&1 ||
    it_fail "the legacy file with a start time failed: $(cat "$IT_TMP/legacy_ok.out")"
grep -q "legacy PyTorch profiler array, ts in us from the start given" "$IT_TMP/legacy_ok.out" ||
    it_fail "no legacy import line: $(cat "$IT_TMP/legacy_ok.out")"
fails missing 2 "nothere.json: No such file" --import "$G/nothere.json"
# Malformed: cut short, a wrong type, a JSON that is no trace, gzip damage, garbage.
head -c 90000 "$G/rank1.json" >"$G/cut.json"
fails truncated 1 "cut.json: the JSON text ends early" --import "2=$G/cut.json"
sed '0,/"ts": [0-9]*/s//"ts": "soon"/' "$G/rank1.json" >"$G/type.json"
fails wrongtype 1 "type.json: an event's ts is not a number" --import "2=$G/type.json"
echo '{"not": "a trace", "traceEvents_": []}' >"$G/other.json"
fails notatrace 1 "other.json: not a trace format dptop reads \(it reads: PyTorch" --import "$G/other.json"
"$IT_PY" - "$G/rank0.json.gz" "$G/damaged.json.gz" <<'EOF'
import sys
b = bytearray(open(sys.argv[1], "rb").read())
for i in range(len(b) // 2, len(b) // 2 + 16):
    b[i] ^= 0x5A
open(sys.argv[2], "wb").write(bytes(b))
EOF
fails gzip 1 "damaged.json.gz: " --import "1=$G/damaged.json.gz"
head -c 4096 /dev/urandom >"$G/noise.json"
fails garbage 1 "noise.json: not a trace format" --import "$G/noise.json"
# Another host's clock: ten minutes off the recording.
"$IT_PY" "$GEN" "$REC" "$IT_TMP/far" 1:new --shift 600 >/dev/null || it_fail "kineto_gen --shift failed"
fails farclock 1 "rank0.json: its events .* lie 59[0-9] s after the recording.*not node 1's clock" \
    --import "$IT_TMP/far/rank0.json"
# Nodes: one the recording lacks, and a pid no node ran.
fails nonode 1 "node 9 is not in the recording \(it has: n0 .*n1 .*n2 " --import "n9=$G/rank1.json"
"$IT_PY" "$GEN" "$REC" "$IT_TMP/nopid" 1:new --pid 4242424 >/dev/null || it_fail "kineto_gen --pid failed"
fails nopid 1 "no node of the recording ran pid 4242424.*--import N=" --import "$IT_TMP/nopid/rank0.json"
# The pid of node 2 but another rank than its launcher gave it: not that process.
"$IT_PY" "$GEN" "$REC" "$IT_TMP/wrongrank" 2:new >/dev/null || it_fail "kineto_gen (rank 0 on node 2) failed"
fails wrongrank 1 "no node of the recording ran pid [0-9]* as rank 0" --import "$IT_TMP/wrongrank/rank0.json"
"$B/dptop" --replay "$REC" --import "n1=$IT_TMP/nopid/rank0.json" --export "$IT_TMP/named.json" \
    >"$IT_TMP/named.out" 2>&1 || it_fail "an explicit node failed: $(cat "$IT_TMP/named.out")"
grep -q "as node 1 " "$IT_TMP/named.out" || it_fail "not placed on node 1: $(cat "$IT_TMP/named.out")"
# Usage: --import without --replay, --strict without --import.
"$B/dptop" --import "$G/rank1.json" >/dev/null 2>"$IT_TMP/u1.err"
[ $? -eq 2 ] && grep -q "needs --replay" "$IT_TMP/u1.err" || it_fail "--import without --replay: $(cat "$IT_TMP/u1.err")"
"$B/dptop" --replay "$REC" --strict --export "$IT_TMP/u2.json" >/dev/null 2>"$IT_TMP/u2.err"
[ $? -eq 2 ] || it_fail "--strict without --import was accepted"

# XSpace: two ranks as JAX saves them (times from the Task Environment's
# profile_start_time), and dptop's own XSpace export read back as foreign
# input (round trip: every event where the Chrome export has it).
XG="$IT_ROOT/tests/import/xspace_gen.py"
"$IT_PY" "$XG" "$REC" "$IT_TMP/xs" 1 2 >"$IT_TMP/xs.json" || it_fail "xspace_gen failed"
"$B/dptop" --replay "$REC" --export "$IT_TMP/own.xplane.pb" >/dev/null 2>&1 || it_fail "XSpace export failed"
"$B/dptop" --replay "$REC" --import "n1=$IT_TMP/xs/rank0.xplane.pb" "n2=$IT_TMP/xs/rank1.xplane.pb" \
    "n0=$IT_TMP/own.xplane.pb" --export "$IT_TMP/xspace.json" >"$IT_TMP/xsi.out" 2>&1 ||
    it_fail "XSpace import failed: $(cat "$IT_TMP/xsi.out")"
[ "$(grep -c 'XSpace of [^ ]*, times from profile_start_time, realtime clock' "$IT_TMP/xsi.out")" -eq 2 ] &&
    grep -q "XSpace of [^ ]*, times absolute" "$IT_TMP/xsi.out" ||
    it_fail "the XSpace files were not read as such: $(cat "$IT_TMP/xsi.out")"
"$IT_PY" - "$IT_TMP/xspace.json" "$IT_TMP/xs.json" <<'EOF' || it_fail "XSpace import: not aligned, or the round trip differs"
import collections, json, sys
d = json.load(open(sys.argv[1]))
truth = json.load(open(sys.argv[2]))
origin = d["metadata"]["origin_ns"]
ends, own, back = {}, collections.Counter(), collections.Counter()
for e in d["traceEvents"]:
    if e.get("ph") not in ("X", "i"):
        continue
    f = e["pid"] // 100000 - 1 if e["pid"] >= 100000 else None
    if f in (0, 1) and e["name"].startswith("ncclDevKernel_AllReduce"):
        ends.setdefault(f, []).append((e["ts"] + e["dur"]) * 1000 + origin)
    # The round trip: steps are xprof's "train" markers in XSpace, marks get a duration of 0.
    key = ("step" if e["name"] == "train" else e["name"], round(e["ts"] * 1000),
           round(e.get("dur", 0) * 1000))
    if f is None:
        own[key] += 1
    elif f == 2:
        back[key] += 1
err = {f: max(abs(x - s["allreduce_end_ns"]) for x, s in zip(v, truth["steps"])) for f, v in ends.items()}
print("XSpace all-reduce ends vs truth (ns):", err, "; round trip: %d events, %d differ" % (
    sum(own.values()), sum((own - back).values()) + sum((back - own).values())))
assert len(err) == 2 and max(err.values()) <= 2000, err
assert sum(own.values()) > 1000 and own == back
EOF
fails xsambiguous 1 "host [^ ]* is n0, n1, n2; name its node" --import "$IT_TMP/xs/rank0.xplane.pb"
"$IT_PY" "$XG" "$REC" "$IT_TMP/xsabs" 1 --absolute >/dev/null || it_fail "xspace_gen --absolute failed"
"$IT_PY" - "$IT_TMP/xs/rank0.xplane.pb" "$IT_TMP" <<'EOF'
import sys
good = open(sys.argv[1], "rb").read()
out = sys.argv[2]
# A plane with an id, then: a top-level varint, a length far past the end,
# a plane cut short, a truncated varint inside a plane, a name that is a varint.
open(out + "/pbwire.pb", "wb").write(good + b"\x08\x01")
open(out + "/pbhuge.pb", "wb").write(good + b"\x0a\x80\x80\x80\x80\x80\x20")
open(out + "/pbcut.pb", "wb").write(good[:len(good) // 2])
open(out + "/pbvarint.pb", "wb").write(b"\x0a\x04\x08\xff\xff\xff")
open(out + "/pbname.pb", "wb").write(b"\x0a\x04\x08\x01\x10\x05")
EOF
fails pbwire 1 "pbwire.pb: XSpace field 1 with wire type 0 at byte" --import "n1=$IT_TMP/pbwire.pb"
fails pbhuge 1 "pbhuge.pb: a field of [0-9]* bytes at byte" --import "n1=$IT_TMP/pbhuge.pb"
fails pbcut 1 "pbcut.pb: .*(ends early|truncated|past the end)" --import "n1=$IT_TMP/pbcut.pb"
fails pbvarint 1 "pbvarint.pb: XPlane: a truncated varint at byte" --import "n1=$IT_TMP/pbvarint.pb"
fails pbname 1 "pbname.pb: XPlane name: field 2 has wire type 0, not 2" --import "n1=$IT_TMP/pbname.pb"
"$B/dptop" --replay "$REC" --import "n1=$IT_TMP/xsabs/rank0.xplane.pb" --export "$IT_TMP/xsabs.json" \
    >"$IT_TMP/xsabs.out" 2>&1 || it_fail "an absolute XSpace failed: $(cat "$IT_TMP/xsabs.out")"

# The imports as their nodes' own events: in an XSpace export (read back
# through the XSpace reader, the all-reduces still end at the true times),
# and in the console (a snapshot holds them, again after seeking back).
"$B/dptop" --replay "$REC" --import "$IT_TMP"/gen/rank*.json* --export "$IT_TMP/merged.xplane.pb" \
    >"$IT_TMP/mx.out" 2>&1 || it_fail "XSpace export with imports failed: $(cat "$IT_TMP/mx.out")"
# Its warnings say per file what the Chrome trace's metadata.imports says.
[ "$(grep -ac "import [^:]*rank[0-9].json[.gz]*: Kineto schema 1, ts in us [a-z ]*, node [0-2] (pid in the recording), realtime clock, base [0-9]* ns; [0-9]* events, 0 outside the aligned windows, 0 dropped; aligned range [0-9]*\.\.[0-9]* ns" "$IT_TMP/merged.xplane.pb")" -ge 1 ] ||
    it_fail "the merged XSpace does not describe the imported files"
"$B/dptop" --replay "$REC" --import "n0=$IT_TMP/merged.xplane.pb" --export "$IT_TMP/mxback.json" \
    >"$IT_TMP/mxb.out" 2>&1 || it_fail "reading the merged XSpace back failed: $(cat "$IT_TMP/mxb.out")"
"$IT_PY" - "$IT_TMP/mxback.json" "$IT_TMP/truth.json" <<'EOF' || it_fail "the merged XSpace lost the imported events"
import json, sys
d = json.load(open(sys.argv[1]))
truth = json.load(open(sys.argv[2]))
origin = d["metadata"]["origin_ns"]
ends = sorted((e["ts"] + e["dur"]) * 1000 + origin for e in d["traceEvents"]
              if e.get("ph") == "X" and e["pid"] >= 100000 and e["name"].startswith("ncclDevKernel_AllReduce"))
want = sorted(s["allreduce_end_ns"] for s in truth["steps"] for _ in range(3))
worst = max(abs(a - b) for a, b in zip(ends, want))
print("merged XSpace: %d all-reduce kernels of the imports, worst %.0f ns from the truth" % (len(ends), worst))
assert len(ends) == len(want) and worst <= 5000, (len(ends), len(want), worst)
EOF
if command -v tmux >/dev/null; then
    SOCK="dptop-imp-$$"
    TM=(tmux -L "$SOCK" -f /dev/null)
    mkdir -p "$IT_TMP/snap"
    "${TM[@]}" new-session -d -s imp -x 150 -y 45 \
        "env LANG=C.UTF-8 LC_ALL=C.UTF-8 $B/dptop --replay $REC --import $IT_TMP/gen/rank0.json.gz \
         --speed 0 --output-dir $IT_TMP/snap 2>$IT_TMP/cons.err"
    it_wait 30 sh -c "tmux -L $SOCK capture-pane -p -t imp | grep -q 'end of the recording'" ||
        { "${TM[@]}" kill-server; it_fail "the console with imports never reached the end: $(cat "$IT_TMP/cons.err")"; }
    "${TM[@]}" send-keys -t imp s
    it_wait 20 sh -c "ls $IT_TMP/snap/dptop-*.json >/dev/null 2>&1" || it_fail "no console snapshot"
    sleep 1
    "${TM[@]}" send-keys -t imp '['
    sleep 2
    "${TM[@]}" send-keys -t imp s
    it_wait 20 sh -c "[ \$(ls $IT_TMP/snap/dptop-*.json | wc -l) -ge 2 ]" || it_fail "no second snapshot"
    sleep 1
    "${TM[@]}" send-keys -t imp q
    sleep 1
    "${TM[@]}" kill-server 2>/dev/null
    "$IT_PY" - "$IT_TMP/gen/rank0.json.gz" "$IT_TMP"/snap/dptop-*.json <<'EOF' || it_fail "the console does not hold the imported events"
import gzip, json, sys
src = json.load(gzip.open(sys.argv[1], "rt"))
want = sum(1 for e in src["traceEvents"] if e.get("ph") in ("X", "i") and
           not (isinstance(e.get("pid"), int) and e.get("cat") == "gpu_user_annotation"))
for path in sys.argv[2:4]:
    d = json.load(open(path))
    lanes = {(e["pid"], e["tid"]): e["args"]["name"] for e in d["traceEvents"]
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    # Imported lanes are the tracks of pids 2^31 and up (no real pid is).
    imported = {k for k, v in lanes.items() if v.startswith("pid ") and int(v.split()[1]) >= 2 ** 31}
    got = sum(1 for e in d["traceEvents"] if e.get("ph") in ("X", "i") and (e["pid"], e["tid"]) in imported)
    print("console snapshot %s: %d imported events of %d" % (path.split("/")[-1], got, want))
    assert got == want, (got, want)
EOF
fi

# Events from before the nodes were aligned: flagged, or dropped with --strict.
"$IT_PY" "$GEN" "$REC" "$IT_TMP/early" 1:new --before 8 --steps 60 >/dev/null ||
    it_fail "kineto_gen --before failed"
"$B/dptop" --replay "$REC" --import "$IT_TMP/early/rank0.json" --export "$IT_TMP/early.json" \
    >"$IT_TMP/early.out" 2>&1 || it_fail "early import failed: $(cat "$IT_TMP/early.out")"
"$B/dptop" --replay "$REC" --import "$IT_TMP/early/rank0.json" --strict --export "$IT_TMP/strict.json" \
    >"$IT_TMP/strict.out" 2>&1 || it_fail "strict import failed: $(cat "$IT_TMP/strict.out")"
"$IT_PY" - "$IT_TMP/early.json" "$IT_TMP/strict.json" <<'EOF' || it_fail "outside events not flagged or dropped"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ma, mb = a["metadata"]["imports"][0], b["metadata"]["imports"][0]
flagged = [e for e in a["traceEvents"] if e.get("pid", 0) == 100000 and "dptop_time" in e.get("args", {})]
print("before alignment: %d flagged (%s), strict dropped %d, kept %d" % (
    ma["outside_aligned"], flagged[0]["args"]["dptop_time"] if flagged else "-", mb["dropped"], mb["events"]))
assert ma["outside_aligned"] > 0 and len(flagged) > 0 and ma["dropped"] == 0, ma
assert mb["outside_aligned"] == 0 and mb["dropped"] >= ma["outside_aligned"], mb
assert mb["events"] + mb["dropped"] >= ma["events"], (ma, mb)
EOF
grep -q "outside the aligned windows (flagged dptop_time)" "$IT_TMP/early.out" ||
    it_fail "the summary does not report the outside events: $(cat "$IT_TMP/early.out")"
it_pass "Kineto, rocprofv3 (CSV, JSON) and XSpace ranks aligned; map filters agree; legacy, malformed, foreign and far-clock input refused; outside events flagged or dropped"
