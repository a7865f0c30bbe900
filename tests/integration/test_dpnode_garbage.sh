#!/usr/bin/env bash
# timeout: 150
# UDP garbage and forged probes sent to an agent's probe port (the cluster
# runs with a probe MAC key): random datagrams, wrong versions, probes
# without or with a wrong MAC, probes with the right MAC from the wrong
# address, probes from an unknown node, and a flood.  Every one is counted
# in the agent's status, the fits are unaffected, nothing crashes.  Then 300
# malformed messages to the master's registration port: counted in its
# status (the console's REJ), logged in a line or two, not 300.
. "$(dirname "$0")/lib.sh"
it_dpnode_bus
KEY=00112233445566778899aabbccddeeff

COMMON=(--trace-endpoint none --heartbeat-ms 300 --status-period-ms 300 --probe-key $KEY)
it_spawn master "$B/dpnode" --master --listen "$H" --probe-window-s 1 --probe-cadence-us 10000 \
    --sim-clock -4000000,-30 "${COMMON[@]}"
it_spawn agent1 "$B/dpnode" --hub "$H" --node-id 1 --sim-clock 9000000,80 "${COMMON[@]}"
VICTIM=$IT_PID
it_spawn agent2 "$B/dpnode" --hub "$H" --node-id 2 --sim-clock -22000000,-150 "${COMMON[@]}"
it_wait 30 $CHECK up "$REC" 3 || it_fail "3 nodes never came up"
it_wait 30 $CHECK aligned "$REC" 3 "$(date +%s.%N)" || it_fail "not aligned before the attack"
t_aligned=$(date +%s.%N)
sleep 3 # a few windows to compare with
target=$($CHECK probe-addr "$REC" 1) || it_fail "no hello of node 1"
echo "attacking node 1 at $target"
t_attack=$(date +%s.%N)

"$IT_PY" - "$target" "$KEY" >"$IT_TMP/attack.log" <<'PY' || it_fail "attack script failed"
import os, random, socket, struct, sys
host, port = sys.argv[1].rsplit(":", 1)
dst = (host, int(port))
key = bytes.fromhex(sys.argv[2])
M = (1 << 64) - 1

def rotl(x, b):
    return ((x << b) | (x >> (64 - b))) & M

def siphash(k, data):
    k0, k1 = struct.unpack("<QQ", k)
    v = [0x736f6d6570736575 ^ k0, 0x646f72616e646f6d ^ k1, 0x6c7967656e657261 ^ k0,
         0x7465646279746573 ^ k1]
    def rnd():
        v[0] = (v[0] + v[1]) & M; v[1] = rotl(v[1], 13) ^ v[0]; v[0] = rotl(v[0], 32)
        v[2] = (v[2] + v[3]) & M; v[3] = rotl(v[3], 16) ^ v[2]
        v[0] = (v[0] + v[3]) & M; v[3] = rotl(v[3], 21) ^ v[0]
        v[2] = (v[2] + v[1]) & M; v[1] = rotl(v[1], 17) ^ v[2]; v[2] = rotl(v[2], 32)
    n = len(data) & ~7
    for i in range(0, n, 8):
        m, = struct.unpack_from("<Q", data, i)
        v[3] ^= m; rnd(); rnd(); v[0] ^= m
    b = (len(data) & 0xff) << 56
    for i, c in enumerate(data[n:]):
        b |= c << (8 * i)
    v[3] ^= b; rnd(); rnd(); v[0] ^= b
    v[2] ^= 0xff
    for _ in range(4):
        rnd()
    return v[0] ^ v[1] ^ v[2] ^ v[3]

def probe(src, dst_id, seq, mac_key=None, version=1):
    # node/node_int.h: 32-byte header, 2 follow-ups of 32 bytes, no echo, optional MAC.
    hdr = struct.pack("<IBBBBIIQq", 0x42505044, version, 0, 1 if mac_key else 0, 0, src, dst_id,
                      seq, 1790000000000000000)
    body = hdr + bytes(64)
    if mac_key:
        body += struct.pack("<Q", siphash(mac_key, body))
    return body

s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
rng = random.Random(7)
sent = {"random": 0, "version": 0, "nomac": 0, "badmac": 0, "wrongaddr": 0, "unknown": 0}
for i in range(40):
    s.sendto(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 600))), dst); sent["random"] += 1
for i in range(10):
    s.sendto(probe(0, 1, 10 + i, key, version=9), dst); sent["version"] += 1
for i in range(10):
    s.sendto(probe(0, 1, 1 << 60 | i), dst); sent["nomac"] += 1
for i in range(10):
    s.sendto(probe(0, 1, 1 << 60 | i, bytes(16)), dst); sent["badmac"] += 1
for i in range(10):
    s.sendto(probe(0, 1, 1 << 61 | i, key), dst); sent["wrongaddr"] += 1
for i in range(10):
    s.sendto(probe(4242, 1, 1 << 61 | i, key), dst); sent["unknown"] += 1
flood = 0
for i in range(20000):
    try:
        s.sendto(os.urandom(64), dst); flood += 1
    except OSError:
        pass
print(" ".join(f"{k}={v}" for k, v in sent.items()), f"flood={flood}")
PY
cat "$IT_TMP/attack.log"
# Random bytes and wrong versions are garbage (the flood too, as far as the
# socket buffer let it in); MAC failures and address mismatches are forgeries.
it_wait 20 $CHECK status "$REC" 1 probes_garbage 50 >/dev/null || it_fail "garbage not counted"
it_wait 10 $CHECK status "$REC" 1 probes_forged 30 >/dev/null ||
    it_fail "forgeries not counted: $($CHECK status "$REC" 1 probes_forged)"
$CHECK status "$REC" 1 probes_unknown 10 >/dev/null || it_fail "unknown sender not counted"
"$IT_PY" - "$REC" <<'PY' || it_fail "decoder counters"
import json, sys
last = None
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["h"].get("type") == "status" and r["h"].get("node") == 1:
        last = r["h"]
d = last["dec_errors"]
print("node 1:", {k: last[k] for k in ("probes_garbage", "probes_forged", "probes_forged_mac",
                                       "probes_unknown", "probes_replayed")}, "decoder:", d)
assert d["bad_checksum"] >= 20, d
assert d["bad_version"] >= 10, d
assert d["bad_magic"] + d["truncated"] + d["oversized"] + d["bad_value"] >= 40, d
PY
kill -0 "$VICTIM" 2>/dev/null || it_fail "the agent died"
# The fits are as good as before: the windows during and after the attack
# are within twice the worst error before it (plus 200 ns for noise).
sleep 2.5
before=$($CHECK errors "$REC" 3 "$t_aligned" 10000 "$t_attack") || it_fail "no fits before the attack: $before"
bmax=$(echo "$before" | sed -n 's/.* max_ns=\([0-9.]*\).*/\1/p')
limit=$(awk -v m="$bmax" 'BEGIN { printf "%.0f", 2 * m + 200 }')
after=$($CHECK errors "$REC" 3 "$t_attack" "$limit") || it_fail "fits disturbed: before $before; after $after"
echo "before: $before"
echo "after:  $after"

# Junk on the master's registration port (ROUTER): a DEALER anyone can open.
before_rej=$($CHECK status "$REC" 0 dec_errors_total 0 | sed 's/.*=//')
"$IT_PY" - "$H" <<'PY' || it_fail "registration junk script failed"
import sys, zmq
d = zmq.Context().socket(zmq.DEALER)
d.setsockopt(zmq.LINGER, 2000)
d.connect(sys.argv[1])
for i in range(100):
    d.send_multipart([b"garbage"])
    d.send_multipart([b"dp1.hello.-", b"{not json"])
    d.send_multipart([b"dp9.hello.-", b"{}"])
d.close()
PY
it_wait 10 $CHECK status "$REC" 0 dec_errors_total $((before_rej + 300)) >/dev/null ||
    it_fail "registration junk not counted: $($CHECK status "$REC" 0 dec_errors_total)"
lines=$(grep -c "registration message rejected" "$IT_TMP/master.log")
[ "$lines" -le 3 ] || it_fail "$lines log lines for 300 rejected registration messages"
it_pass "garbage and forgeries counted; fits before the attack max ${bmax} ns, after: $after;" \
    "300 registration messages rejected in $lines log lines"
