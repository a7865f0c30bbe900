#!/usr/bin/env bash
# timeout: 120
# The console's node table against a real master and agent, in tmux:
#   - devices: the master reads a fake amdgpu card and the fake NVML's two
#     boards; its row shows their VRAM in use of all (GiB), power summed
#     (W) and the hottest temperature (°C), beside GPU busy;
#   - probe stamps (TS: kern or user) for every node;
#   - rejected input: datagrams of garbage sent to the master's probe port
#     show in its REJ and in the header's `rejected`, and as a warning the
#     node logs and publishes (one line for the lot), which the status bar
#     shows;
#   - a node killed with SIGKILL is marked down and shows none of what its
#     last status said (probes/s, GPU busy, stamps: `-`).
# A private tmux server (-L) is used, so no other tmux session is touched.
source "$(dirname "$0")/lib.sh"

command -v tmux >/dev/null || it_skip "tmux is not installed"
for f in "$B/dptop" "$B/dpnode" "$B/tests/fake_nvml/libnvidia-ml.so.1"; do
    [ -e "$f" ] || it_skip "$f not built (make tests-build)"
done

SYS=$IT_TMP/sys
it_fake_amdgpu "$SYS"
mkdir -p "$IT_TMP/nosys"

port=$(it_ports 4) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
PROBE=$((port + 3))
COMMON=(--trace-endpoint none --heartbeat-ms 300 --status-period-ms 300)
it_spawn master "$B/dpnode" --master --listen "$H" "${COMMON[@]}" --probe-port "$PROBE" \
    --sysfs-root "$SYS" --nvml-library "$B/tests/fake_nvml/libnvidia-ml.so.1"
it_spawn agent "$B/dpnode" --hub "$H" "${COMMON[@]}" --sim-clock 2000000,10 \
    --sysfs-root "$IT_TMP/nosys" --nvml-library ""
AGENT=$IT_PID

SOCK="dptop-nodes-$$"
TM=(tmux -L "$SOCK" -f /dev/null)
trap '"${TM[@]}" kill-server 2>/dev/null; it_cleanup' EXIT
# 149 columns: the Windows table goes below the nodes, whose columns all but fit.
"${TM[@]}" new-session -d -s t -x 149 -y 40 \
    "env LANG=C.UTF-8 LC_ALL=C.UTF-8 $B/dptop --hub $H 2>$IT_TMP/dptop.err"
pane() { "${TM[@]}" capture-pane -p -t t >"$IT_TMP/pane.txt"; }

# The node table as columns: the header's tokens up to the Windows table,
# then each node row's as many (every cell is one token, `-` when empty).
ROWS="$IT_PY $IT_ROOT/tests/integration/node_rows.py $IT_TMP/pane.txt"
rows_ready() {
    pane
    $ROWS check "$@" >"$IT_TMP/rows.txt" 2>&1
}
# TS: kern here; a host without kernel receive stamps says user, which is right too.
it_wait 40 rows_ready 'n0* up VRAM=~^[0-9.]+/72G$ W=247 °C=~^5[45]$ GPU%=~^[0-9]+$ TS=~^(kern|user)$' \
    'n1 up TS=~^(kern|user)$ VRAM=- W=- °C=- GPU%=-' ||
    { cat "$IT_TMP/pane.txt" "$IT_TMP/rows.txt"; it_fail "the node table never showed the devices"; }
cat "$IT_TMP/rows.txt"

# Garbage to the master's probe port: counted by its decoder, shown in its REJ.
"$IT_PY" - "$PROBE" <<'PY'
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(25):
    s.sendto(b"not a probe %d" % i, ("127.0.0.1", int(sys.argv[1])))
PY
# All 25 (the decoder refuses each); the datagrams may straddle two status periods.
it_wait 20 rows_ready 'n0* up REJ=~^(2[5-9]|[3-9][0-9]|[0-9]{3,})$' ||
    { cat "$IT_TMP/pane.txt" "$IT_TMP/rows.txt"; it_fail "the master's REJ did not count the garbage"; }
grep -Eq 'rejected [1-9][0-9]*' "$IT_TMP/pane.txt" ||
    { cat "$IT_TMP/pane.txt"; it_fail "the header's rejected did not count the garbage"; }
grep -E '^ID=n0' "$IT_TMP/rows.txt"
grep -Eq "rejected input: [0-9]+ probe datagrams" "$IT_TMP/master.log" ||
    it_fail "the master logged no line for the garbage: $(tail -5 "$IT_TMP/master.log")"
it_wait 10 bash -c "${TM[*]} capture-pane -p -t t | grep -Eq 'n0 warn: rejected input: [0-9]+ probe datagrams'" ||
    { pane; cat "$IT_TMP/pane.txt"; it_fail "the console did not show the node's warning"; }
# The log (L) keeps it, marked W, after the status bar has moved on.
"${TM[@]}" send-keys -t t L
it_wait 10 bash -c "${TM[*]} capture-pane -p -t t | grep -q 'log, newest first: [1-9][0-9]* warnings'" ||
    { pane; it_fail "L did not open the log"; }
"${TM[@]}" capture-pane -p -t t | grep -Eq '[0-9:]{8} n0 W node: rejected input: [0-9]+ probe datagrams' ||
    { pane; it_fail "the log does not hold the node's warning"; }
"${TM[@]}" send-keys -t t x
it_wait 5 bash -c "! ${TM[*]} capture-pane -p -t t | grep -q 'log, newest first'" ||
    it_fail "a key did not close the log"

# A node killed: down, and nothing of its last status shown as if it were live.
kill -KILL "$AGENT"
wait "$AGENT" 2>/dev/null
it_wait 30 rows_ready 'n1 down PRB/s=- GPU%=- TS=-' ||
    { cat "$IT_TMP/pane.txt" "$IT_TMP/rows.txt"; it_fail "the killed node kept its last status"; }
grep -E '^ID=n1' "$IT_TMP/rows.txt"
"${TM[@]}" send-keys -t t q
it_wait 10 bash -c "! ${TM[*]} has-session -t t 2>/dev/null" || it_fail "dptop did not quit on q"
it_pass "node table: devices (VRAM, W, °C), probe stamps, rejected input, a killed node's status withdrawn"
