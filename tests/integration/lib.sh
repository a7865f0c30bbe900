# Shared helpers for integration tests; source it first.
#
#   it_spawn NAME CMD...   start a process in the background, log to $IT_TMP/NAME.log;
#                          its pid is in $IT_PID and is killed at exit
#   it_stop PID            SIGTERM, then SIGKILL after 5 s
#   it_ports N             print a base port with N consecutive free TCP/UDP ports
#   it_wait SECS CMD...    poll CMD every 0.1 s until it succeeds; fail after SECS
#   it_dpnode_bus [KIND...] the dpnode tests' start: skips without dpnode or
#                          python3-zmq, sets CHECK (dpnode_check.py), REC (the
#                          bus recording) and H (a free loopback hub) and starts
#                          dpnode_watch.py recording KINDs (all when none)
#   it_dpnode_app [FILE...] the traced-app dpnode tests' start: sets APP (the fake HIP
#                          app), LIB (libdptrace.so) and CHECK (dpnode_check.py); skips
#                          without them, dpnode, a FILE or python3-zmq
#   it_step_cluster CLOCK ARG...  after it_dpnode_bus: a master (node 0, sim clock
#                          0,0) and 3 agents on H with ARGs, the third on --sim-clock
#                          CLOCK (one that steps); waits until all 4 are aligned and
#                          sets STEPPER to the third one's node id
#   it_receiver [LOG]      gpu_ingest_dump bound to EP=ipc://$IT_TMP/trace.sock, what
#                          it prints into LOG (default $IT_TMP/dump.log); its pid in
#                          DUMP_PID; non-zero when it did not bind in 10 s
#   it_need_nvidia FILE... skip without a FILE or an NVIDIA GPU (nvidia-smi -L, its
#                          list in $IT_TMP/gpus.txt); CUDA's libraries on the path
#   it_trace_py_app FW PY STEPS  the GPU tests' Python loops (tests/cuda/FW_app.py,
#                          FW torch or jax) with PY: skips without an NVIDIA GPU,
#                          the library or FW; runs it plain, then traced into
#                          it_receiver until its last step arrived; prints both
#                          step times; the events in $IT_TMP/dump.log (copied to
#                          DPTEST_KEEP_DUMP where set)
#   it_bench_start NAME [--gpu] FILE...  a bench script's start: NAME prints
#                          "skipped" and exits 0 without a FILE (or, with --gpu,
#                          without an NVIDIA GPU: then CUDA's libraries go on the
#                          path), else it_receiver into /dev/null
#   it_bench_rounds N      ROUNDS: DPTEST_BENCH_ROUNDS, else N; exit 2 below 1
#   it_cuda_libpath        put CUDA's libraries (libcupti) on LD_LIBRARY_PATH: the
#                          toolkit's, and DPTEST_CUPTI_LIBDIR where set
#   it_fail MSG / it_skip MSG / it_pass MSG
#   IT_PY                  Debian's python3 (it has python3-zmq), else the first on PATH;
#                          PYTHONPATH holds this directory (gpu_dump.py and the others)
set -u
IT_ROOT=${DPTEST_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
B=${DPTEST_BUILD:-$IT_ROOT/build}
IT_PY=/usr/bin/python3
[ -x "$IT_PY" ] || IT_PY=$(command -v python3)
# The tests' Python helpers (gpu_dump, dpnode_check) import from here.
export PYTHONPATH="$IT_ROOT/tests/integration${PYTHONPATH:+:$PYTHONPATH}"
IT_TMP=$(mktemp -d /tmp/dptop-it.XXXXXX)
IT_PIDS=()
IT_NAME=$(basename "$0" .sh)

it_cleanup() {
    local p
    for p in "${IT_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
    for _ in $(seq 1 30); do
        local alive=0
        for p in "${IT_PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ $alive -eq 0 ] && break
        sleep 0.1
    done
    for p in "${IT_PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
    if [ -z "${DPTEST_KEEP:-}" ]; then rm -rf "$IT_TMP"; else echo "kept $IT_TMP"; fi
}
trap it_cleanup EXIT

it_spawn() {
    local name=$1
    shift
    "$@" >"$IT_TMP/$name.log" 2>&1 &
    IT_PID=$!
    IT_PIDS+=("$IT_PID")
}

it_stop() {
    kill -TERM "$1" 2>/dev/null || return 0
    for _ in $(seq 1 50); do
        kill -0 "$1" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$1" 2>/dev/null
    return 0
}

it_fail() {
    echo "FAIL: $*"
    local f
    for f in "$IT_TMP"/*.log; do
        [ -f "$f" ] || continue
        echo "---- $(basename "$f") (last 20 lines)"
        tail -n 20 "$f"
    done
    exit 1
}
it_skip() {
    echo "SKIP: $*"
    exit 77
}
it_pass() {
    echo "PASS: $*"
    exit 0
}

it_port_free() {
    ! ss -Htan "sport = :$1" 2>/dev/null | grep -q . && ! ss -Huan "sport = :$1" 2>/dev/null | grep -q .
}

it_receiver() {
    EP="ipc://$IT_TMP/trace.sock"
    rm -f "$IT_TMP/ready" # a receiver before this one's
    "$B/tests/tools/gpu_ingest_dump" "$EP" --ready "$IT_TMP/ready" >"${1:-$IT_TMP/dump.log}" 2>&1 &
    DUMP_PID=$!
    IT_PIDS+=("$DUMP_PID")
    it_wait 10 test -f "$IT_TMP/ready"
}

# it_fake_amdgpu DIR: an amdgpu card0 under the sysfs tree DIR (--sysfs-root):
# busy 37 %, 1 GiB of 16 GiB in use, 123.45 W, 54.5 °C.
it_fake_amdgpu() {
    local d=$1/card0/device
    mkdir -p "$d/hwmon/hwmon1"
    echo 37 >"$d/gpu_busy_percent"
    echo 1073741824 >"$d/mem_info_vram_used"
    echo 17179869184 >"$d/mem_info_vram_total"
    echo 123450000 >"$d/hwmon/hwmon1/power1_average"
    echo 54500 >"$d/hwmon/hwmon1/temp1_input"
}

it_need_nvidia() {
    local f
    for f in "$@"; do
        [ -e "$f" ] || it_skip "$f not built (no CUDA toolkit or nvcc)"
    done
    nvidia-smi -L >"$IT_TMP/gpus.txt" 2>&1 || it_skip "no NVIDIA GPU answers here (nvidia-smi -L)"
    it_cuda_libpath
}

it_trace_py_app() {
    local fw=$1 py=$2 steps=$3 rc=0
    local app=$IT_ROOT/tests/cuda/${fw}_app.py lib=$B/libdptrace_cupti.so
    it_need_nvidia "$lib" "$B/tests/tools/gpu_ingest_dump"
    "$py" -c "import $fw" 2>/dev/null || it_skip "no $fw for $py"
    timeout 150 "$py" "$app" "$steps" >"$IT_TMP/plain.log" 2>&1 || rc=$?
    [ $rc -eq 3 ] && it_skip "$fw cannot use the GPU here"
    [ $rc -eq 0 ] || it_fail "${fw}_app failed without the library: $(tail -5 "$IT_TMP/plain.log")"
    it_receiver || it_fail "the dump tool did not bind $EP"
    CUDA_INJECTION64_PATH=$lib DPTOP_TRACE_ENDPOINT=$EP timeout 150 "$py" "$app" "$steps" \
        >"$IT_TMP/app.log" 2>&1 || it_fail "${fw}_app failed under libdptrace_cupti: $(tail -5 "$IT_TMP/app.log")"
    grep -q "CUDA activity will not be traced" "$IT_TMP/app.log" && it_fail "CUPTI refused"
    echo "without: $(grep "${fw}_app:" "$IT_TMP/plain.log")"
    echo "with:    $(grep "${fw}_app:" "$IT_TMP/app.log")"
    grep "dptrace:" "$IT_TMP/app.log"
    it_wait 20 grep -q '"ev":"step".*"step":'$((steps - 1)), "$IT_TMP/dump.log" ||
        it_fail "the last step did not arrive"
    sleep 1 # the last batches
    it_stop "$DUMP_PID"
    it_wait 10 grep -q '"msg":"stats"' "$IT_TMP/dump.log" || it_fail "no stats from the dump tool"
    [ -z "${DPTEST_KEEP_DUMP:-}" ] || cp "$IT_TMP/dump.log" "$DPTEST_KEEP_DUMP"
}

it_bench_start() {
    local name=$1 gpu=0 f
    shift
    [ "${1:-}" = --gpu ] && { gpu=1; shift; }
    for f in "$@" "$B/tests/tools/gpu_ingest_dump"; do
        [ -e "$f" ] || { echo "$name: skipped: $f not built (no CUDA toolkit, headers or nvcc)"; exit 0; }
    done
    if [ $gpu = 1 ]; then
        nvidia-smi -L >"$IT_TMP/gpus.txt" 2>&1 ||
            { echo "$name: skipped: no NVIDIA GPU answers here (nvidia-smi -L)"; exit 0; }
        it_cuda_libpath
    fi
    # The receiver prints every event: to /dev/null.
    it_receiver /dev/null || { echo "$name: the receiver did not start" >&2; exit 1; }
}

it_bench_rounds() {
    ROUNDS=${DPTEST_BENCH_ROUNDS:-$1}
    [ "$ROUNDS" -ge 1 ] 2>/dev/null || { echo "DPTEST_BENCH_ROUNDS must be 1 or more" >&2; exit 2; }
}

# it_bench_modes FN MODE...: ROUNDS rounds of `FN MODE` for every mode, the
# modes' order turning each round (none always runs first), into the
# caller's associative arrays runs[MODE] ("x x x ") and med[MODE] (their
# median).  FN prints a number, "nogpu" (returns 2) or nothing (a failure,
# shown with the tail of $IT_TMP/runs.log; returns 1).
it_bench_modes() {
    local fn=$1 mode x
    shift
    local order=("$@")
    runs=() med=()
    for _ in $(seq 1 "$ROUNDS"); do
        for mode in "${order[@]}"; do
            x=$("$fn" "$mode")
            [ "$x" = nogpu ] && return 2
            [ -n "$x" ] || { echo "$fn $mode failed:" >&2; tail -5 "$IT_TMP/runs.log" >&2; return 1; }
            runs[$mode]+="$x "
        done
        order=("${order[@]:1}" "${order[0]}")
    done
    for mode in "$@"; do
        med[$mode]=$(printf '%s\n' ${runs[$mode]} | sort -g | sed -n "$(((ROUNDS + 1) / 2))p")
    done
}

it_cuda_libpath() {
    local d
    for d in /usr/local/cuda/lib64 /usr/local/cuda/extras/CUPTI/lib64 ${DPTEST_CUPTI_LIBDIR:-}; do
        [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    done
}

it_ports() {
    local n=${1:-1} base i ok
    for _ in $(seq 1 200); do
        base=$((20000 + RANDOM % 30000))
        ok=1
        for i in $(seq 0 $((n - 1))); do
            it_port_free $((base + i)) || { ok=0; break; }
        done
        [ $ok -eq 1 ] && { echo "$base"; return 0; }
    done
    return 1
}

it_wait() {
    local secs=$1
    shift
    local i
    for i in $(seq 1 $((secs * 10))); do
        "$@" && return 0
        sleep 0.1
    done
    return 1
}

it_dpnode_app() {
    APP=$B/tests/fake_hip/hip_app
    LIB=$B/libdptrace.so
    local f
    for f in "$B/dpnode" "$APP" "$LIB" "$@"; do
        [ -e "$f" ] || it_skip "$f not built (make tests-build)"
    done
    "$IT_PY" -c 'import zmq' 2>/dev/null || it_skip "python3-zmq is not installed"
    CHECK="$IT_PY $IT_ROOT/tests/integration/dpnode_check.py"
}

it_step_cluster() {
    local clock=$1
    shift
    it_spawn master "$B/dpnode" --master --listen "$H" --sim-clock 0,0 "$@"
    it_wait 20 grep -q "hub tcp://" "$IT_TMP/master.log" || it_fail "the master did not start"
    it_spawn agent1 "$B/dpnode" --hub "$H" --sim-clock 2000000,20 "$@"
    it_spawn agent2 "$B/dpnode" --hub "$H" --sim-clock -3000000,-10 "$@"
    it_spawn agent3 "$B/dpnode" --hub "$H" --sim-clock "$clock" "$@"
    local t0 t_up
    t0=$(date +%s.%N)
    it_wait 30 $CHECK up "$REC" 4 || it_fail "4 nodes never came up"
    t_up=$($CHECK when-up "$REC" 4 "$t0") || it_fail "no node table with 4 nodes"
    it_wait 30 $CHECK aligned "$REC" 4 "$t_up" || it_fail "the nodes were not all aligned"
    STEPPER=$(sed -n 's/.*welcomed as node \([0-9]*\).*/\1/p' "$IT_TMP/agent3.log" | head -1)
    [ -n "$STEPPER" ] || it_fail "the stepping agent has no node id"
}

it_dpnode_bus() {
    [ -x "$B/dpnode" ] || it_skip "dpnode not built"
    "$IT_PY" -c 'import zmq' 2>/dev/null || it_skip "python3-zmq is not installed"
    CHECK="$IT_PY $IT_ROOT/tests/integration/dpnode_check.py"
    REC=$IT_TMP/rec.jsonl
    local port
    port=$(it_ports 3) || it_fail "no free ports"
    H=tcp://127.0.0.1:$port
    it_spawn watch "$IT_PY" "$IT_ROOT/tests/integration/dpnode_watch.py" "$H" "$REC" "$@"
}
