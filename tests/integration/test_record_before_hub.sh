#!/usr/bin/env bash
# timeout: 90
# dptop --record started before the master: it records the live stream, and
# fetches the hub's state (name tables, node table, plan) once the hub is
# heard, so that every recorded event has its name in the file.
. "$(dirname "$0")/lib.sh"
[ -x "$B/dptop" ] && [ -x "$B/dpnode" ] || it_skip "dptop or dpnode not built"
port=$(it_ports 3) || it_fail "no free ports"
H=tcp://127.0.0.1:$port
REC=$IT_TMP/late.dprec
it_spawn rec "$B/dptop" --hub "$H" --record "$REC"
RP=$IT_PID
# Longer than the state request waits (3 s): the first one finds no hub.
sleep 5
it_spawn master "$B/dpnode" --master --listen "$H" --probe-window-s 1 --sim-clock 3000000,40 \
    --sim-workload --trace-endpoint none
it_spawn a1 "$B/dpnode" --hub "$H" --sim-clock -5000000,20 --sim-workload --trace-endpoint none
it_wait 30 grep -q "the hub answered" "$IT_TMP/rec.log" ||
    it_fail "the recorder never fetched the hub's state"
sleep 4
kill -INT "$RP"
wait "$RP" || it_fail "the recorder exited $?"
cat "$IT_TMP/rec.log"
"$B/dptop" --replay "$REC" --export "$IT_TMP/late.json" >/dev/null 2>&1 || it_fail "export failed"
"$IT_PY" - "$IT_TMP/late.json" <<'PY' || it_fail "events without names"
import collections, json, re, sys
d = json.load(open(sys.argv[1]))
names = collections.Counter(e.get("name", "") for e in d["traceEvents"] if e.get("ph") in ("X", "B", "i"))
unnamed = sum(v for k, v in names.items() if re.match(r"^(api|kernel|range|step|copy|mark)#\d+$", k))
total = sum(names.values())
print("events %d, unnamed %d" % (total, unnamed))
assert total > 100 and unnamed == 0, names.most_common(8)
PY
it_pass "recorder started before the hub: state fetched when it answered, every event named"
