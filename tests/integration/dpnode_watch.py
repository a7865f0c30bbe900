#!/usr/bin/python3
"""Record what a dpnode cluster says on the bus, for the dpnode tests.

usage: dpnode_watch.py tcp://MASTER:PORT OUT.jsonl [kind ...]

Subscribes to the hub's XPUB (PORT + 2) for the given kinds (default: the
control kinds, no snapshot pairs or event batches), asks the hub for its
late-joiner state (docs/PROTOCOL.md section 4) so that announcements made
before it started (sim_truth, hello) are seen, and appends one JSON line per
message, {"t": arrival (unix s), "m": arrival (CLOCK_MONOTONIC ns), "topic": ...,
"state": bool, "h": header[, "p": payload in base64]}, flushed at once, until
SIGTERM/SIGINT.  Written from docs/PROTOCOL.md alone.  With
DPNODE_WATCH_SUB=ENDPOINT it subscribes there instead (a relay's P + 2); the
state still comes from the master.  A restarted
master is followed: ZeroMQ reconnects, and the state is asked for again when
the stream falls silent.  With DPNODE_WATCH_CURVE=DIR (dpnode --gen-keys
DIR), both sockets use CURVE with DIR's client keys.
"""
import base64
import json
import os
import signal
import sys
import time

import zmq

KINDS = ["nodes", "plan", "node_fit", "edge_fit", "solve", "sim_truth", "status", "hello", "win",
         "log", "bye"]

hub = sys.argv[1]
out = open(sys.argv[2], "a", buffering=1)
kinds = sys.argv[3:] or KINDS
host, port = hub.rsplit(":", 1)
ctx = zmq.Context()
curve_dir = os.environ.get("DPNODE_WATCH_CURVE")


def secure(sock):
    if not curve_dir:
        return
    def key(name):
        return open(os.path.join(curve_dir, name)).read().strip().encode()
    sock.curve_serverkey = key("hub.public")
    sock.curve_publickey = key("client.public")
    sock.curve_secretkey = key("client.secret")


sub = ctx.socket(zmq.SUB)
secure(sub)
sub.setsockopt(zmq.RCVHWM, 100000)
sub.connect(os.environ.get("DPNODE_WATCH_SUB") or f"{host}:{int(port) + 2}")
for k in kinds + ["sync"]:
    sub.setsockopt_string(zmq.SUBSCRIBE, f"dp1.{k}.")

stop = False


def on_signal(*_):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_signal)
signal.signal(signal.SIGINT, on_signal)


def write(topic, hdr, state, payload=None):
    rec = {"t": time.time(), "m": time.monotonic_ns(), "topic": topic, "state": state, "h": hdr}
    if payload is not None:
        rec["p"] = base64.b64encode(payload).decode()
    out.write(json.dumps(rec) + "\n")


def fetch_state():
    """The clone pattern: state_req on the ROUTER, replies until state_end."""
    dealer = ctx.socket(zmq.DEALER)
    secure(dealer)
    dealer.setsockopt(zmq.LINGER, 0)
    dealer.connect(f"{host}:{port}")
    token = f"watch-{os.getpid()}-{time.time()}"
    req = {"type": "state_req", "seq": 1, "token": token,
           "prefixes": [f"dp1.{k}." for k in kinds]}
    dealer.send_multipart([b"dp1.state_req.-", json.dumps(req).encode()])
    deadline = time.time() + 5
    got = 0
    while time.time() < deadline:
        if not dealer.poll(200):
            continue
        frames = dealer.recv_multipart()
        try:
            topic = frames[0].decode()
            hdr = json.loads(frames[1])
        except (ValueError, IndexError):
            continue  # a malformed reply: not this recorder's to crash on
        if hdr.get("type") == "state_end":
            dealer.close()
            return got
        write(topic, hdr, True)
        got += 1
    dealer.close()
    return -1


fetch_state()
last_msg = time.time()
while not stop:
    try:
        if not sub.poll(200):
            if time.time() - last_msg > 3:
                # Silence: the master may have restarted; its cache is new.
                fetch_state()
                last_msg = time.time()
            continue
        frames = sub.recv_multipart()
    except zmq.ZMQError:
        if stop:
            break
        raise
    last_msg = time.time()
    try:
        topic = frames[0].decode()
        hdr = json.loads(frames[1])
    except (ValueError, IndexError):
        continue  # a one-frame or malformed message (anyone can publish)
    if topic.startswith("dp1.sync."):
        continue
    write(topic, hdr, False, frames[2] if len(frames) > 2 else None)
out.close()
