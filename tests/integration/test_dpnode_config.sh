#!/usr/bin/env bash
# timeout: 90
# dpnode configuration (SPEC 3): defaults < file < environment < flags, with
# --print-config naming each value's source; bad values from every layer
# exit 2 with one line naming the key; runtime failures exit 1;
# --exit-with-parent follows its parent out.
. "$(dirname "$0")/lib.sh"
[ -x "$B/dpnode" ] || it_skip "dpnode not built"
D=$B/dpnode

# expect_bad KEY CMD...: exit status 2 and a one-line message naming KEY.
expect_bad() {
    local key=$1
    shift
    local out rc
    out=$("$@" 2>&1 >/dev/null)
    rc=$?
    [ $rc -eq 2 ] || it_fail "'$*' exited $rc, not 2 ($out)"
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || it_fail "'$*': more than one line: $out"
    printf '%s' "$out" | grep -q -- "$key" || it_fail "'$*': message does not name $key: $out"
    echo "ok: $out"
}

# Flags.
expect_bad probe_cadence_us "$D" --probe-cadence-us fast --print-config
expect_bad probe_cadence_us "$D" --probe-cadence-us 5 --print-config
expect_bad packet_spacing_us "$D" --packet-spacing-us 15000 --print-config
expect_bad probe_window_s "$D" --probe-window-s 0.01 --print-config
expect_bad estimator "$D" --estimator magic --print-config
expect_bad sim_clock "$D" --sim-clock 1,2,3,4 --print-config
expect_bad sim_clock "$D" --sim-clock "5ms,3" --print-config
expect_bad sim_late_us "$D" --sim-late-us 50000 --print-config
expect_bad probe_key "$D" --probe-key 1234 --print-config
expect_bad hub "$D" --hub http://x:1 --print-config
expect_bad bind_ip "$D" --bind-ip nowhere --print-config
expect_bad neighbors "$D" --neighbors 0 --print-config
expect_bad master "$D" --master=perhaps --print-config
expect_bad frobnicate "$D" --frobnicate 3
expect_bad probe-cadence-us "$D" --probe-cadence-us
# Environment.
expect_bad probe_window_s env DPTOP_PROBE_WINDOW_S=0 "$D" --print-config
expect_bad snapshot_period_ms env DPTOP_SNAPSHOT_PERIOD_MS=soon "$D" --print-config
expect_bad sim_clock env DPTOP_SIM_CLOCK=x "$D" --print-config
# A DPTOP_ variable no program reads is a misspelling, never passed over.
expect_bad "DPTOP_PROBE_CADENSE_US.*did you mean DPTOP_PROBE_CADENCE_US" \
    env DPTOP_PROBE_CADENSE_US=800 "$D" --print-config
expect_bad "DPTOP_SNAPSHOT_PERIOD.*DPTOP_SNAPSHOT_PERIOD_MS" env DPTOP_SNAPSHOT_PERIOD=5 "$D" \
    --print-config
# Files.
echo '{"estimator": "bogus"}' >"$IT_TMP/bad1.json"
expect_bad estimator "$D" --config "$IT_TMP/bad1.json" --print-config
echo '{"probe_cadence_us": "10000"}' >"$IT_TMP/bad2.json"
expect_bad probe_cadence_us "$D" --config "$IT_TMP/bad2.json" --print-config
echo '{"no_such_key": 1}' >"$IT_TMP/bad3.json"
expect_bad no_such_key "$D" --config "$IT_TMP/bad3.json" --print-config
echo '{"probe_cadence_us": 10000' >"$IT_TMP/bad4.json"
expect_bad bad4.json "$D" --config "$IT_TMP/bad4.json" --print-config
expect_bad estimator env DPTOP_CONFIG="$IT_TMP/bad1.json" "$D" --print-config
expect_bad missing.json "$D" --config "$IT_TMP/missing.json" --print-config
echo '{"probe_window_s": 4, "probe_window_s": 5}' >"$IT_TMP/twice.json"
expect_bad "probe_window_s' given twice" "$D" --config "$IT_TMP/twice.json" --print-config
echo '{"probe_window_s": 4}' >"$IT_TMP/good.json"
expect_bad "config given twice" "$D" --config "$IT_TMP/good.json" --config "$IT_TMP/good.json" \
    --print-config
[ -x "$B/dptop" ] && expect_bad "config given twice" "$B/dptop" --config "$IT_TMP/good.json" \
    --config "$IT_TMP/good.json" --print-config
echo '{"probe_cadense_us": 1000}' >"$IT_TMP/bad5.json"
expect_bad "probe_cadense_us.*did you mean 'probe_cadence_us'" "$D" --config "$IT_TMP/bad5.json" \
    --print-config

# One file and one environment for every program: what dptop or libdptrace
# reads is passed over by dpnode (and shown), and the other way round.
cat >"$IT_TMP/shared.json" <<'JSON'
{"probe_cadence_us": 3000, "fps": 20, "event_budget": 5000, "hub": "tcp://127.0.0.1:7510"}
JSON
out=$(DPTOP_CONFIG="$IT_TMP/shared.json" DPTOP_TRACE_RING=1024 DPTOP_COLOR=0 "$D" --print-config) ||
    it_fail "dpnode refused a file shared with dptop"
echo "$out" | grep -Eq '^probe_cadence_us +=  *3000 +\(file\)' || it_fail "shared file: own key lost"
echo "$out" | grep -Eq '^hub +=  *tcp://127.0.0.1:7510 +\(file\)' || it_fail "shared key lost"
echo "$out" | grep -q '^# fps (file): read by dptop, not here' || it_fail "dptop's key not shown"
echo "$out" | grep -q '^# trace_ring (env): read by libdptrace' || it_fail "libdptrace's not shown"
out=$(DPTOP_CONFIG="$IT_TMP/shared.json" DPTOP_SIM_CLOCK=5,1 "$B/dptop" --print-config) ||
    it_fail "dptop refused a file shared with dpnode"
echo "$out" | grep -Eq '^fps +=  *20 +\(file\)' || it_fail "dptop: own key lost"
echo "$out" | grep -q '^# probe_cadence_us (file): read by dpnode' || it_fail "dpnode's not shown"
echo "$out" | grep -q '^# sim_clock (env): read by dpnode' || it_fail "dpnode's env not shown"
out=$(DPTOP_FSP=20 "$B/dptop" --print-config 2>&1 >/dev/null)
[ $? -eq 2 ] && echo "$out" | grep -q "DPTOP_FSP.*did you mean DPTOP_FPS" ||
    it_fail "dptop passed over a misspelt variable: $out"
echo "ok: $out"

# Layers: file < env < flag, each value with its source.
cat >"$IT_TMP/good.json" <<'JSON'
{"probe_cadence_us": 1000, "probe_window_s": 4, "packet_spacing_us": 100, "output_dir": "/tmp/x"}
JSON
out=$(DPTOP_PROBE_CADENCE_US=800 DPTOP_SNAPSHOT_PERIOD_MS=50 "$D" --config "$IT_TMP/good.json" \
    --snapshot-period-ms 25 --print-config) || it_fail "--print-config failed"
echo "$out"
echo "$out" | grep -Eq '^probe_cadence_us +=  *800 +\(env\)' || it_fail "env must beat the file"
echo "$out" | grep -Eq '^probe_window_s +=  *4 +\(file\)' || it_fail "file value missing"
echo "$out" | grep -Eq '^snapshot_period_ms +=  *25 +\(flag\)' || it_fail "flag must beat env"
echo "$out" | grep -Eq '^estimator +=  *svm +\(default\)' || it_fail "default missing"
[ "$(echo "$out" | wc -l)" -ge 30 ] || it_fail "not every key printed"

"$D" --help | grep -q -- "--sim-clock" || it_fail "--help does not list --sim-clock"
"$D" --version | grep -Eq '^dpnode [0-9]+\.[0-9]+' || it_fail "--version"

# Runtime failures exit 1: the hub's port is taken.
port=$(it_ports 3) || it_fail "no free ports"
it_spawn m1 "$D" --master --listen "tcp://127.0.0.1:$port" --trace-endpoint none
it_wait 20 grep -q "hub tcp://" "$IT_TMP/m1.log" || it_fail "first master did not start"
"$D" --master --listen "tcp://127.0.0.1:$port" --trace-endpoint none >"$IT_TMP/m2.log" 2>&1
rc=$?
[ $rc -eq 1 ] || it_fail "a second master on a busy port exited $rc: $(tail -2 "$IT_TMP/m2.log")"
echo "busy port: exit 1: $(tail -1 "$IT_TMP/m2.log")"
# An explicitly configured trace endpoint that another agent serves is an error too.
it_spawn a1 "$D" --hub "tcp://127.0.0.1:$port" --trace-endpoint "ipc://$IT_TMP/t.sock"
it_wait 20 grep -q "welcomed as node" "$IT_TMP/a1.log" || it_fail "agent 1 not welcomed"
"$D" --hub "tcp://127.0.0.1:$port" --trace-endpoint "ipc://$IT_TMP/t.sock" >"$IT_TMP/a2.log" 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q trace_endpoint "$IT_TMP/a2.log" || it_fail "shared trace endpoint: exit $rc"

# --exit-with-parent: the agent leaves with its parent.
bash -c "\"$D\" --hub tcp://127.0.0.1:$port --trace-endpoint none --exit-with-parent \
    >\"$IT_TMP/child.log\" 2>&1 & echo \$! >\"$IT_TMP/child.pid\"; sleep 2"
child=$(cat "$IT_TMP/child.pid")
IT_PIDS+=("$child")
it_wait 10 bash -c "! kill -0 $child 2>/dev/null" || it_fail "the agent outlived its parent"
grep -q "stopping" "$IT_TMP/child.log" || it_fail "the agent did not stop cleanly"
it_pass "bad values refused from flags, environment and files; layers and sources right"
