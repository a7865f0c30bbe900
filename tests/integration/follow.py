#!/usr/bin/python3
"""Follow a dptop cluster from Python, written from docs/PROTOCOL.md alone.

usage: follow.py tcp://MASTER:7410 [seconds]

Subscribes to the hub's XPUB (port + 2), decodes hello, node_fit, names and
ev messages (the event records included) and prints one line per item until
it has seen each kind once, or the time is up (exit 1 then).
"""
import json
import struct
import sys
import time

import zmq

hub = sys.argv[1]
host, port = hub.rsplit(":", 1)
sub = zmq.Context().socket(zmq.SUB)
sub.connect(f"{host}:{int(port) + 2}")
for kind in ("hello", "node_fit", "names", "ev"):
    sub.setsockopt_string(zmq.SUBSCRIBE, f"dp1.{kind}.")

bad, seen, deadline = 0, set(), time.time() + float(sys.argv[2] if len(sys.argv) > 2 else 20)
while len(seen) < 4 and time.time() < deadline:
    if not sub.poll(200):
        continue
    frames = sub.recv_multipart()
    try:  # anyone can publish: a malformed message is skipped and counted, not fatal
        _, kind, node = frames[0].decode().split(".")
        hdr = json.loads(frames[1])
        assert hdr["type"] == kind and hdr["seq"] >= 1 and (kind != "ev" or len(frames) > 2)
    except (ValueError, IndexError, KeyError, TypeError, AssertionError) as e:
        bad += 1
        print(f"skipped a malformed message ({bad} so far): {e!r}", file=sys.stderr)
        continue
    if kind in seen:
        continue
    seen.add(kind)
    if kind == "hello":
        gpus = ",".join(g["name"] for g in hdr["gpus"])
        print(f"HELLO node={node} host={hdr['host']} probe={hdr['probe_addr']} gpus={gpus}")
    elif kind == "node_fit":
        print(f"NODE_FIT node={hdr['node']} window={hdr['window']} offset_ns={hdr['offset_ns']} "
              f"drift_ppb={hdr['drift_ppb']} aligned={hdr['aligned']}")
    elif kind == "names":
        print("NAMES " + " ".join(f"{i}={n}" for i, n in hdr["names"]))
    else:
        payload = frames[2]
        magic, version, size, count, _ = struct.unpack_from("<IHHII", payload, 0)
        assert (magic, version, size, count) == (0x56455044, 1, 64, hdr["count"])
        print(f"EV node={node} pid={hdr['pid']} count={count} dropped={hdr['dropped']}")
        for i in range(count):
            off = 16 + 64 * i
            k, fl, dev, pid, tid, stream, name, corr, scope, start, end = struct.unpack_from(
                "<BBHIIIIIQqq", payload, off)
            if k == 1:
                gx, gy, gz, bx, by, bz = struct.unpack_from("<IIHHHH", payload, off + 48)
                extra = f"grid={gx},{gy},{gz} block={bx},{by},{bz}"
            else:
                extra = "bytes={} aux={}".format(*struct.unpack_from("<QQ", payload, off + 48))
            print(f"REC kind={k} flags={fl} dev={dev} pid={pid} tid={tid} stream={stream} "
                  f"name={name} corr={corr} scope={scope} start={start} end={end} {extra}")
sys.exit(0 if len(seen) == 4 else 1)
