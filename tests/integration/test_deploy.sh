#!/usr/bin/env bash
# timeout: 180
# The deployment recipes (docs/DEPLOY.md):
#   - dist/slurm/dptop-slurm.sh in a two-node "allocation" on this host
#     (srun and scontrol stand-ins that run each step here): the master on
#     the first node, an agent on the other, dptop --check until aligned,
#     the bus recorded while the job's command runs, everything stopped
#     after it (the job's exit status kept);
#   - dist/k8s/dptop.yaml parsed as YAML: the kinds, host networking, the
#     commands and ports, the configuration's hub naming the Service.
source "$(dirname "$0")/lib.sh"
[ -x "$B/dptop" ] && [ -x "$B/dpnode" ] || it_skip "not built in $B"
FAKE="$IT_TMP/bin"
mkdir -p "$FAKE"
cat >"$FAKE/scontrol" <<'SH'
#!/usr/bin/env bash
# scontrol show hostnames LIST: one name per line (a comma list here).
[ "$1 $2" = "show hostnames" ] || exit 2
tr ',' '\n' <<<"$3"
SH
cat >"$FAKE/srun" <<'SH'
#!/usr/bin/env bash
# srun OPTIONS... COMMAND: the options are SLURM's business; run the command
# here, once (each test node is this host).  Every dpnode of the test binds
# loopback, and each agent gets a probe port of its own.
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
echo "srun: $*" >>"$SRUN_LOG"
exec "$@"
SH
chmod +x "$FAKE/scontrol" "$FAKE/srun"
PORT=$(it_ports 3) || it_skip "no free ports"
export SRUN_LOG="$IT_TMP/srun.log" SLURM_JOB_NODELIST="localhost,127.0.0.1"
export PATH="$FAKE:$B:$PATH" DPTOP_BIND_IP=127.0.0.1 DPTOP_TRACE_ENDPOINT=none
export DPTOP_SIM_CLOCK=0,0 # every test "node" is this host: one clock
timeout 150 bash "$IT_ROOT/dist/slurm/dptop-slurm.sh" --port "$PORT" --record "$IT_TMP/job.dprec" \
    -- bash -c 'sleep 4; exit 7' >"$IT_TMP/slurm.out" 2>&1
rc=$?
cat "$IT_TMP/slurm.out"
[ $rc -eq 7 ] || it_fail "the job's exit status was not kept: $rc"
grep -q "2 of 2 nodes up and aligned" "$IT_TMP/slurm.out" || it_fail "dptop --check did not see the two nodes"
[ "$(grep -c "dpnode" "$SRUN_LOG")" -eq 2 ] || it_fail "not one master and one agent step: $(cat "$SRUN_LOG")"
grep -q -- "--master --listen tcp://\*:$PORT" "$SRUN_LOG" || it_fail "the master step: $(cat "$SRUN_LOG")"
grep -q -- "--hub tcp://localhost:$PORT" "$SRUN_LOG" || it_fail "the agent step: $(cat "$SRUN_LOG")"
sleep 1
pgrep -f "dpnode.*$PORT" >/dev/null && it_fail "dpnode still running after the job"
"$B/dptop" --replay "$IT_TMP/job.dprec" --export "$IT_TMP/job.json" >/dev/null 2>&1 ||
    it_fail "the job's recording does not export"
"$IT_PY" - "$IT_TMP/job.json" <<'PY' || it_fail "the job's recording"
import json, sys
d = json.load(open(sys.argv[1]))
al = {a["node"]: a["aligned"] for a in d["metadata"]["alignment"]}
assert len(al) == 2 and all(al.values()), al
PY

if "$IT_PY" -c "import yaml" 2>/dev/null; then
    "$IT_PY" - "$IT_ROOT/dist/k8s/dptop.yaml" <<'PY' || it_fail "the Kubernetes manifests"
import json, sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
kinds = {d["kind"]: d for d in docs}
assert set(kinds) == {"Namespace", "ConfigMap", "Service", "Deployment", "DaemonSet"}, set(kinds)
cfg = json.loads(kinds["ConfigMap"]["data"]["dptop.json"])
svc = kinds["Service"]["metadata"]
assert cfg["hub"] == "tcp://%s.%s.svc.cluster.local:7410" % (svc["name"], svc["namespace"]), cfg
assert sorted(p["port"] for p in kinds["Service"]["spec"]["ports"]) == [7410, 7411, 7412]
for k, args in (("Deployment", ["dpnode", "--master"]), ("DaemonSet", ["dpnode"])):
    spec = kinds[k]["spec"]["template"]["spec"]
    assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "ClusterFirstWithHostNet", k
    c = spec["containers"][0]
    assert c["command"][:len(args)] == args and c["image"].startswith("dptop:"), (k, c)
    assert any(p["containerPort"] == cfg["probe_port"] and p["protocol"] == "UDP"
               for p in c["ports"]), (k, c["ports"])
    assert {v["mountPath"] for v in c["volumeMounts"]} == {"/etc/dptop", "/run/dptop"}
# The manifests' configuration is one dpnode and dptop accept.
print("k8s: %s" % ", ".join(sorted(kinds)))
PY
    kube="manifests parsed"
else
    kube="no python3-yaml: manifests not parsed"
fi
it_pass "SLURM recipe: master and agent started, aligned, recorded, stopped; $kube"
