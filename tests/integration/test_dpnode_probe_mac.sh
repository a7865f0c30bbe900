#!/usr/bin/env bash
# timeout: 120
# A cluster where nobody set --probe-key still MACs its probes: the master
# draws a key and hands it out in the welcome (never on the bus).  Every
# node says so in its status (probe_mac), the cluster aligns, and probes
# without the MAC, sent to an agent as its peer would send them, are
# counted as MAC failures and never fitted.  No agent's instance (the
# secret that holds its row in the master's table) is on the bus either.
. "$(dirname "$0")/lib.sh"
it_dpnode_bus

COMMON=(--trace-endpoint none --heartbeat-ms 300 --status-period-ms 300 --bind-ip 127.0.0.1)
it_spawn master "$B/dpnode" --master --listen "$H" --probe-window-s 1 --probe-cadence-us 10000 \
    --sim-clock -4000000,-30 "${COMMON[@]}"
it_spawn agent1 "$B/dpnode" --hub "$H" --node-id 1 --sim-clock 9000000,80 "${COMMON[@]}"
it_spawn agent2 "$B/dpnode" --hub "$H" --node-id 2 --sim-clock -22000000,-150 "${COMMON[@]}"
it_wait 30 $CHECK up "$REC" 3 || it_fail "3 nodes never came up"
it_wait 30 $CHECK aligned "$REC" 3 "$(date +%s.%N)" || it_fail "not aligned with the drawn key"
for n in 0 1 2; do
    it_wait 10 $CHECK status "$REC" $n probe_mac 1 >/dev/null ||
        it_fail "node $n does not MAC its probes: $($CHECK status "$REC" $n probe_mac)"
done
grep -q '"probe_key"' "$REC" && it_fail "the probe key went out on the bus"
# Nor does any agent's instance, the secret that holds its row (hellos and
# node tables are in the recording): whoever read one could take the row.
grep -c '"type": "hello"' "$REC" >/dev/null || it_fail "no hello recorded"
grep -q '"instance"' "$REC" && it_fail "an instance went out on the bus: $(grep -m1 '"instance"' "$REC")"
target=$($CHECK probe-addr "$REC" 1) || it_fail "no hello of node 1"
before=$($CHECK status "$REC" 1 probes_forged_mac 0 | sed 's/.*=//')
t_attack=$(date +%s.%N)
"$IT_PY" - "$target" <<'PY' || it_fail "attack script failed"
import socket, struct, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(30):
    # node/node_int.h: header, two follow-ups, no echo, no MAC (flags 0); as node 0 to node 1
    hdr = struct.pack("<IBBBBIIQq", 0x42505044, 1, 0, 0, 0, 0, 1, 1 << 60 | i, 1790000000000000000)
    s.sendto(hdr + bytes(64), (host, int(port)))
PY
it_wait 10 $CHECK status "$REC" 1 probes_forged_mac $((before + 30)) >/dev/null ||
    it_fail "MAC-less probes not counted: $($CHECK status "$REC" 1 probes_forged_mac)"
$CHECK status "$REC" 1 probes_held 0 0 >/dev/null || it_fail "a MAC-less probe reached the window"
sleep 2.2
out=$($CHECK errors "$REC" 3 "$t_attack" 10000) || it_fail "fits disturbed: $out"
it_pass "a drawn cluster key MACs every probe, no key or instance on the bus; 30 MAC-less probes counted as forged; after: $out"
