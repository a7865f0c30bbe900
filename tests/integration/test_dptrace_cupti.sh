#!/usr/bin/env bash
# timeout: 120
# libdptrace_cupti.so loads the way the CUDA driver loads an injection
# library (CUDA_INJECTION64_PATH -> InitializeInjection).  This machine has
# the CUPTI library but no GPU and no driver: CUPTI must refuse cleanly with
# a message, the process must go on, and annotations must still reach the
# receiver.  On a machine with a GPU, InitializeInjection answers 1.
. "$(dirname "$0")/lib.sh"

LIB=$B/libdptrace_cupti.so
INJ=$B/tests/tools/gpu_inject
DUMP=$B/tests/tools/gpu_ingest_dump
[ -e "$LIB" ] || it_skip "libdptrace_cupti.so not built (no CUDA toolkit)"
for f in "$INJ" "$DUMP"; do
    [ -e "$f" ] || it_skip "$f not built (make tests-build)"
done
it_receiver || it_fail "the dump tool did not bind $EP"
it_cuda_libpath
DPTOP_TRACE_ENDPOINT=$EP timeout 60 "$INJ" "$LIB" >"$IT_TMP/inj.log" 2>&1 ||
    it_fail "the injection library could not be loaded and initialised"
cat "$IT_TMP/inj.log"
if grep -q "InitializeInjection: 1" "$IT_TMP/inj.log"; then
    echo "CUPTI is active here (a GPU and a driver are present)"
else
    grep -q "InitializeInjection: 0" "$IT_TMP/inj.log" || it_fail "no answer from InitializeInjection"
    grep -q "CUDA activity will not be traced: cupti: " "$IT_TMP/inj.log" ||
        it_fail "the refusal has no message"
fi
it_wait 20 grep -q '"name":"injected"' "$IT_TMP/dump.log" ||
    it_fail "the annotation did not reach the receiver"
# A bad setting: tracing off with a message naming it, the process goes on.
DPTOP_TRACE_ENDPOINT=$EP DPTOP_TRACE_CUDA_API=some timeout 60 "$INJ" "$LIB" >"$IT_TMP/bad.log" 2>&1 ||
    it_fail "a bad setting stopped the process"
grep -q "InitializeInjection: 0" "$IT_TMP/bad.log" || it_fail "a bad setting was accepted"
grep -q "invalid value for trace_cuda_api: 'some'" "$IT_TMP/bad.log" ||
    it_fail "the bad setting is not named: $(cat "$IT_TMP/bad.log")"
it_stop "$DUMP_PID"
it_pass "libdptrace_cupti.so loads, answers InitializeInjection, annotations flow"
