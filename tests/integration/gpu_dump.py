"""What tests/tools/gpu_ingest_dump printed, for the libdptrace tests.

  msgs, events = load(path)   its messages ({"msg": ...}) and events
                              ({"ev": ...}), one JSON object a line
  check(cond, what)           fail the test (exit 1) with a message
"""
import json
import sys


def load(path):
    msgs, events = [], []
    for line in open(path):
        line = line.strip()
        if line.startswith("{"):
            o = json.loads(line)
            (events if "ev" in o else msgs).append(o)
    return msgs, events


def check(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)
