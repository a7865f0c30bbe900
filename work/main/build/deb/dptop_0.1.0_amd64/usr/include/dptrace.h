/*
 * dptrace — annotations for applications traced by dptop.
 *
 * Link with libdptrace.so (or load it with LD_PRELOAD and declare these
 * yourself) to mark ranges, training steps and instants.  Works in any
 * program, with or without HIP: in a CPU-only program the annotations are
 * the whole trace.
 *
 *   dpt_step_begin(step);
 *   dpt_range_push("forward");
 *   ... launches: each kernel, copy and API call carries the innermost
 *       open range's scope id ...
 *   dpt_range_pop();
 *   dpt_step_end();
 *
 * Every pushed range gets a scope range id unique in the process; the tree
 * child -> parent of those ids is sent once per id to the local dpnode.
 * Ranges are per thread (a thread's pops close its own pushes).  The calls
 * never block and never fail: when the agent is absent or slow, events are
 * dropped and counted, and the count is reported at exit.
 *
 * Names are copied at the call (at most 71 bytes are kept; longer names are
 * cut on a UTF-8 boundary), so any buffer may be passed.  docs/dptrace.3
 * has the details.
 */
#ifndef DPTRACE_H
#define DPTRACE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Open a range named name on the calling thread. */
void dpt_range_push(const char *name);
/* Close the calling thread's innermost open range (a pop with nothing
 * open is counted and ignored). */
void dpt_range_pop(void);
/* Open training step n: a range named "step" that carries n. */
void dpt_step_begin(uint64_t n);
/* Close the innermost open step, and any range still open inside it. */
void dpt_step_end(void);
/* A point in time named name. */
void dpt_mark(const char *name);

/* The calling thread's innermost open scope range id, 0 when none. */
uint64_t dpt_scope_current(void);
/* 1 when tracing is active in this process, 0 when disabled
 * (DPTOP_TRACE_ENABLE=0 or a bad DPTOP_TRACE_* setting). */
int dpt_enabled(void);

#ifdef __cplusplus
}
#endif

#endif /* DPTRACE_H */
