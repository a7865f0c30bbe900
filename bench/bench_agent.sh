#!/usr/bin/env bash
# The agent path (SPEC 9: GPU events per second from one agent to a
# subscriber): a sender on the local link (bench/agent_feed: batches of 4096
# kernel events, as fast as the link takes them) -> dpnode (ingest: decode,
# copy, re-encode, publish) -> its hub -> a subscriber (bus_tail).
# Baseline in the same run: the same sender into a receiver that decodes
# the link and keeps nothing (gpu_ingest_dump --count), the link alone.
# Reports events/s of each, their ratio and what the subscriber missed.
#
# Usage: bench/bench_agent.sh [batches]   (DPTEST_BUILD=build dir)
set -u
. "$(dirname "$0")/../tests/integration/lib.sh"
N=${1:-500}
BATCH=4096
FEED=$B/bench/agent_feed
for f in "$B/dpnode" "$FEED" "$B/tests/tools/bus_tail" "$B/tests/tools/gpu_ingest_dump"; do
    [ -x "$f" ] || { echo "bench_agent: $f is missing (make tests-build bench-build)" >&2; exit 1; }
done
EP=ipc://$IT_TMP/trace.sock

# Baseline: the link alone.
it_spawn dump "$B/tests/tools/gpu_ingest_dump" "$EP" --count --ready "$IT_TMP/dump.ready"
DUMP=$IT_PID
it_wait 10 test -f "$IT_TMP/dump.ready" || { echo "bench_agent: no link receiver" >&2; exit 1; }
"$FEED" "$EP" "$N" $BATCH >"$IT_TMP/feed-link.log" || { echo "bench_agent: feed failed" >&2; exit 1; }
sleep 0.5
it_stop "$DUMP"
read -r link_events link_ms < <("$IT_PY" -c '
import json, sys
d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print(d["events"], d["ev_span_ms"])' "$IT_TMP/dump.log")

# The agent: a master alone (its own agent) serving the link on EP.
port=$(it_ports 3) || { echo "bench_agent: no free ports" >&2; exit 1; }
H=tcp://127.0.0.1:$port
it_spawn master "$B/dpnode" --master --listen "$H" --trace-endpoint "$EP"
it_wait 20 grep -q "master is node" "$IT_TMP/master.log" ||
    { echo "bench_agent: dpnode did not start" >&2; exit 1; }
it_spawn tail "$B/tests/tools/bus_tail" --hub "$H" --prefix dp1.ev. --until-ev "$N" --idle-ms 5000 \
    --ready "$IT_TMP/tail.ready"
TAIL=$IT_PID
it_wait 10 test -f "$IT_TMP/tail.ready" || { echo "bench_agent: bus_tail did not subscribe" >&2; exit 1; }
"$FEED" "$EP" "$N" $BATCH >"$IT_TMP/feed-agent.log" || { echo "bench_agent: feed failed" >&2; exit 1; }
it_wait 60 sh -c "! kill -0 $TAIL 2>/dev/null" || { echo "bench_agent: bus_tail hangs" >&2; exit 1; }
line=$(grep '^TAIL' "$IT_TMP/tail.log")
agent_events=$(sed -n 's/.* ev_records=\([0-9]*\).*/\1/p' <<<"$line")
agent_ms=$(sed -n 's/.* ev_span_ms=\([0-9.]*\).*/\1/p' <<<"$line")
gaps=$(sed -n 's/.* ev_gaps=\([0-9]*\).*/\1/p' <<<"$line")

"$IT_PY" - "$N" "$BATCH" "$link_events" "$link_ms" "$agent_events" "$agent_ms" "$gaps" \
    "$(cat "$IT_TMP/feed-link.log")" "$(cat "$IT_TMP/feed-agent.log")" <<'PY'
import sys
n, batch, le, lms, ae, ams, gaps = (float(x) for x in sys.argv[1:8])
link = le / (lms / 1e3) if lms > 0 else 0
agent = ae / (ams / 1e3) if ams > 0 else 0
print("bench_agent: %d batches of %d kernel events, sent as fast as the link takes them" % (n, batch))
print("  %-52s %12s %10s" % ("path", "events/s", "events"))
print("  %-52s %12.0f %10d" % ("link alone: feed -> link receiver (decode only)", link, le))
print("  %-52s %12.0f %10d" % ("agent: feed -> dpnode -> hub -> subscriber", agent, ae))
print("  agent / link %.2f; batches the subscriber missed (seq gaps): %d" % (agent / link if link else 0, gaps))
print("  feeds: %s | %s" % (sys.argv[8], sys.argv[9]))
print("BENCH agent_events_per_s %.0f ev/s" % agent)
print("BENCH agent_link_events_per_s %.0f ev/s" % link)
print("BENCH agent_vs_link_ratio %.3f ratio" % (agent / link if link else 0))
print("BENCH agent_missed_batches %d batches" % gaps)
PY
