"""What tests/tools/gpu_ingest_dump printed, for the libdptrace tests.

  msgs, events = load(path)   its messages ({"msg": ...}) and events
                              ({"ev": ...}), one JSON object a line
  check(cond, what)           fail the test (exit 1) with a message
  check_all(cond, what)       say a failure and go on; fails_exit() at the
                              end exits 1 if any was said
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


_fails = []


def check_all(cond, what):
    if not cond:
        print("FAIL:", what)
        _fails.append(what)


def fails_exit():
    sys.exit(1 if _fails else 0)
