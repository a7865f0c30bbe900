#!/usr/bin/env bash
# Import (docs/IMPORT.md): 8 ranks' PyTorch profiler traces of about 200 MB
# each, merged on a recording's clocks.  A master and seven agents with
# simulated clocks and workload are recorded; tests/import/kineto_gen.py
# writes one Kineto trace per node (an op storm: 1,300 kernel launches a
# step), then `dptop --replay --import ... --export` merges them.
# Baseline in the same run: json-c parsing the same files into one document
# each (tests/tools/json_parse), the way a tool without a streaming reader
# does.  Reports wall time, events/s and peak RSS of each, and their ratio.
#
# Usage: bench/bench_import.sh   (DPTEST_BUILD=build dir;
#        DPTEST_IMPORT_MB=per-rank size, default 200; DPTEST_IMPORT_RANKS, default 8)
set -u
. "$(dirname "$0")/../tests/integration/lib.sh"
MB=${DPTEST_IMPORT_MB:-200}
RANKS=${DPTEST_IMPORT_RANKS:-8}
GEN="$IT_ROOT/tests/import/kineto_gen.py"
for f in "$B/dptop" "$B/dpnode" "$B/tests/tools/json_parse" /usr/bin/time; do
    [ -x "$f" ] || { echo "bench_import: $f is missing (make tests-build)" >&2; exit 1; }
done
# About 1.55 MB a step at 1,300 launches a step (measured on the generator's output).
STEPS=$(awk -v mb="$MB" 'BEGIN { s = int(mb / 1.55 + 0.5); print (s < 2 ? 2 : s) }')

port=$(it_ports 3) || { echo "no free ports" >&2; exit 1; }
HUB="tcp://127.0.0.1:$port"
common=(--hub="$HUB" --bind-ip=127.0.0.1 --sim-workload --trace-endpoint=none)
it_spawn master "$B/dpnode" --master --listen="$HUB" --node-id=0 --sim-clock=0,0 "${common[@]}"
it_wait 20 sh -c "ss -Hltn 'sport = :$port' | grep -q ." || { echo "the master did not bind" >&2; exit 1; }
specs=(0:new:end)
for n in $(seq 1 $((RANKS - 1))); do
    off=$(((n % 2 ? 1 : -1) * n * 1000000))
    it_spawn "agent$n" "$B/dpnode" --node-id="$n" --sim-clock="$off,$((n * 7 - 20))" "${common[@]}"
    style=new
    [ $((n % 4)) -eq 3 ] && style=old
    specs+=("$n:$style:end")
done
REC="$IT_TMP/run.dprec"
it_spawn rec "$B/dptop" --record "$REC" --hub "$HUB"
RECPID=$IT_PID
it_wait 240 "$IT_PY" "$GEN" "$REC" "$IT_TMP/gen" "${specs[@]}" --steps "$STEPS" --check 2>/dev/null ||
    { echo "bench_import: the recording never held $STEPS aligned steps" >&2; exit 1; }
kill -INT "$RECPID"
it_wait 20 sh -c "! kill -0 $RECPID 2>/dev/null"
for p in "${IT_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done

# One generator a rank, two at a time (the files are the same job's ranks).
mkdir -p "$IT_TMP/gen"
pids=()
for i in "${!specs[@]}"; do
    "$IT_PY" "$GEN" "$REC" "$IT_TMP/r$i" "${specs[$i]}" --steps "$STEPS" --events-per-step 1300 \
        >/dev/null &
    pids+=($!)
    if [ ${#pids[@]} -ge 2 ]; then
        wait "${pids[0]}" || { echo "bench_import: kineto_gen failed" >&2; exit 1; }
        pids=("${pids[@]:1}")
    fi
done
for p in "${pids[@]}"; do wait "$p" || { echo "bench_import: kineto_gen failed" >&2; exit 1; }; done
files=()
for i in "${!specs[@]}"; do
    mv "$IT_TMP/r$i/rank0.json" "$IT_TMP/gen/rank$i.json"
    files+=("$IT_TMP/gen/rank$i.json")
done
bytes=$(cat "${files[@]}" | wc -c)
sync

# Baseline: json-c, one document a file.
/usr/bin/time -f "%e %M" -o "$IT_TMP/jsonc.time" "$B/tests/tools/json_parse" "${files[@]}" \
    >"$IT_TMP/jsonc.out" || { echo "bench_import: json_parse failed" >&2; exit 1; }
read -r j_wall j_rss <"$IT_TMP/jsonc.time"
j_parse=$(sed -n 's/^total: .* events, \([0-9.]*\) s$/\1/p' "$IT_TMP/jsonc.out")
events=$(sed -n 's/^total: [0-9]* bytes, \([0-9]*\) events.*/\1/p' "$IT_TMP/jsonc.out")

# The import: both passes over every file, mapping, the merged output.
/usr/bin/time -f "%e %M" -o "$IT_TMP/imp.time" "$B/dptop" --replay "$REC" --import "${files[@]}" \
    --export "$IT_TMP/merged.json" >"$IT_TMP/imp.out" 2>&1 ||
    { echo "bench_import: the import failed: $(tail -3 "$IT_TMP/imp.out")" >&2; exit 1; }
read -r i_wall i_rss <"$IT_TMP/imp.time"
imported=$(sed -n 's/^dptop: imported .*clock): \([0-9]*\) events.*/\1/p' "$IT_TMP/imp.out" |
    awk '{ s += $1 } END { print s + 0 }')
out_bytes=$(stat -c %s "$IT_TMP/merged.json")

awk -v files="${#files[@]}" -v bytes="$bytes" -v events="$events" -v imported="$imported" \
    -v iw="$i_wall" -v ir="$i_rss" -v jw="$j_wall" -v jr="$j_rss" -v jp="$j_parse" \
    -v ob="$out_bytes" 'BEGIN {
    printf "%d Kineto traces, %.0f MB in all, %d events (%d with a time, imported)\n",
        files, bytes / 1e6, events, imported
    printf "%-34s %9s %12s %10s\n", "", "wall s", "events/s", "peak MB"
    printf "%-34s %9.1f %12.0f %10.0f\n", "dptop import (2 passes, merged)", iw, events / iw, ir / 1024
    printf "%-34s %9.1f %12.0f %10.0f\n", "json-c parse only (one DOM a file)", jw, events / jw, jr / 1024
    printf "json-c inside its own run: %.1f s parsing and freeing; the merged trace: %.0f MB\n", jp, ob / 1e6
    printf "BENCH import_events_per_s %.0f\n", events / iw
    printf "BENCH import_peak_rss_mb %.0f\n", ir / 1024
    printf "BENCH import_seconds %.1f\n", iw
    printf "BENCH import_jsonc_parse_seconds %.1f\n", jw
    printf "BENCH import_jsonc_peak_rss_mb %.0f\n", jr / 1024
    printf "BENCH import_vs_jsonc_time_ratio %.2f\n", iw / jw
}'
