#!/usr/bin/env bash
# timeout: 150
# The whole agent under ASan+UBSan (the sanitizer build): a master and two
# agents with simulated clocks and workloads, a libdptrace application
# feeding one of them, garbage on a probe port, a registration restart, then
# SIGTERM: every process exits 0 with no sanitizer report and no leak.
. "$(dirname "$0")/lib.sh"
A=${DPTEST_ASAN_BUILD:-}
[ -n "$A" ] && [ -x "$A/dpnode" ] || it_skip "no sanitizer build of dpnode (run with an ASan build directory)"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=98
port=$(it_ports 3) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
EP="ipc://$IT_TMP/trace.sock"
COMMON=(--heartbeat-ms 300 --status-period-ms 300 --sim-workload --probe-cadence-us 10000
    --probe-window-s 1)
it_spawn master "$A/dpnode" --master --listen "$H" --trace-endpoint none --sim-clock 1000000,10 \
    "${COMMON[@]}"
M=$IT_PID
it_spawn agent1 "$A/dpnode" --hub "$H" --trace-endpoint "$EP" --sim-clock -9000000,-80 \
    --probe-log "$IT_TMP/probes.jsonl" "${COMMON[@]}"
A1=$IT_PID
it_spawn agent2 "$A/dpnode" --hub "$H" --trace-endpoint none --sim-clock 4000000,120 "${COMMON[@]}"
A2=$IT_PID
for n in agent1 agent2; do
    it_wait 60 grep -q "welcomed as node" "$IT_TMP/$n.log" || it_fail "$n not welcomed"
done
if [ -x "$B/tests/fake_hip/cpu_app" ]; then
    DPTOP_TRACE_ENDPOINT=$EP "$B/tests/fake_hip/cpu_app" --threads 2 --steps 5 >"$IT_TMP/app.log" 2>&1 ||
        it_fail "cpu_app failed"
fi
port1=$(sed -n 's/.*probe socket 127.0.0.1:\([0-9]*\).*/\1/p' "$IT_TMP/agent1.log")
"$IT_PY" - "$port1" <<'PY'
import os, socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(200):
    s.sendto(os.urandom(i % 300 + 1), ("127.0.0.1", int(sys.argv[1])))
s.sendto(struct.pack("<IBBBB", 0x42505044, 1, 1, 0, 0), ("127.0.0.1", int(sys.argv[1])))
PY
sleep 4
# The master goes away and comes back: the agents register again.
kill -TERM $M
wait $M
rc=$?
[ $rc -eq 0 ] || it_fail "master exit status $rc"
it_spawn master2 "$A/dpnode" --master --listen "$H" --trace-endpoint none "${COMMON[@]}"
M=$IT_PID
for n in agent1 agent2; do
    it_wait 60 bash -c "grep -c 'welcomed as node' '$IT_TMP/$n.log' | grep -q 2" || it_fail "$n did not re-register"
done
sleep 3
for p in $A1 $A2 $M; do
    kill -TERM $p
    wait $p
    rc=$?
    [ $rc -eq 0 ] || it_fail "pid $p exit status $rc"
done
if grep -lE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$IT_TMP"/*.log; then
    it_fail "sanitizer report"
fi
it_pass "master, agents, workload, local link, garbage and a master restart under ASan+UBSan: clean"
