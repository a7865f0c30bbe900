/*
 * The HIP resolver (gpu/hip.c): brackets GPU work with pooled HIP events,
 * resolves them on the background thread and maps GPU times onto the trace
 * clock with snapshot pairs.  Internal to the gpu module.  Handles (streams,
 * events) are void pointers here so that this header needs no HIP headers;
 * the table of real HIP functions is gpu/hip_real.h.
 */
#ifndef DP_GPU_HIP_INT_H
#define DP_GPU_HIP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/gpu.h"

/* How an operation names its GPU work. */
enum gpu_hip_fn_kind {
    GPU_HIP_FN_LABEL = 0, /* label (a string that lives forever) */
    GPU_HIP_FN_HOSTPTR,   /* fn is a kernel's host-side function pointer */
    GPU_HIP_FN_FUNCTION,  /* fn is a hipFunction_t */
};

/* One piece of GPU work bracketed by two pooled events. */
struct gpu_hip_op {
    gpu_event_t ev; /* filled by the caller but for name_id, stream, start_ns, end_ns */
    const void *fn;
    uint8_t fn_kind;   /* enum gpu_hip_fn_kind */
    const char *label; /* name of GPU_HIP_FN_LABEL work, fallback name of the others */
    void *stream;      /* hipStream_t */
    void *ev0, *ev1;   /* hipEvent_t, from the pool */
};

struct gpu_hip_opts {
    uint32_t pid;
    const char *library;   /* NULL: the next object in lookup order, else libamdhip64 */
    int64_t snapshot_ns;   /* period of GPU <-> trace snapshot pairs */
    size_t max_pending;    /* operations waiting for completion */
    size_t events_per_dev; /* pooled HIP events per device */
    gpu_names_t *names;    /* shared; NULL: own (and handed as NAMES messages) */
};

typedef struct gpu_hip gpu_hip_t;

/* Resolve the real functions.  NULL (and why) when HIP is not loaded. */
gpu_hip_t *gpu_hip_new(const struct gpu_hip_opts *opts, char *err);
void gpu_hip_destroy(gpu_hip_t **self);

/* Pooled events of a device (any thread).  Takes up to n, creating new
 * ones (on the calling thread's current device, which must be `device`)
 * only when `may_create`; returns how many were taken. */
int gpu_hip_events_take(gpu_hip_t *self, int device, void **out, int n, bool may_create);
void gpu_hip_events_give(gpu_hip_t *self, int device, void *const *evs, int n);

/* Background thread only.  Queue an operation for resolution; BASE_ERR
 * (its events go back to the pool) when too many are pending. */
int gpu_hip_submit(gpu_hip_t *self, const struct gpu_hip_op *op);
/* Note the name of a hipFunction_t (from hipModuleGetFunction); `whole`:
 * false when the name was cut on its way (then it is not demangled: a cut
 * mangling can read as another function). */
void gpu_hip_note_function(gpu_hip_t *self, const void *fn, const char *name, bool whole);
/* Wire stream id of (stream, device); 0 is the null stream. */
uint32_t gpu_hip_stream_id(gpu_hip_t *self, const void *stream, int device);
/* Take snapshot pairs when due, resolve completed operations and hand the
 * events (and snapshot pairs) to fn.  Returns the number of events. */
int gpu_hip_poll(gpu_hip_t *self, int64_t now_ns, gpu_msg_fn fn, void *ctx, char *err);
/* Wait up to timeout_ns for pending operations, handing what completes;
 * what is still pending afterwards is dropped (counted). */
void gpu_hip_finish(gpu_hip_t *self, int64_t timeout_ns, gpu_msg_fn fn, void *ctx);
size_t gpu_hip_pending(const gpu_hip_t *self);
/* Operations dropped: pending queue full, event errors, left at finish. */
uint64_t gpu_hip_dropped(const gpu_hip_t *self);
uint32_t gpu_hip_devices(gpu_hip_t *self);

#endif /* DP_GPU_HIP_INT_H */
