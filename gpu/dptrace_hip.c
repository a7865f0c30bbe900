/*
 * libdptrace's HIP backend: the interposed HIP entry points.
 *
 * Every interposed function forwards to the real one (resolved once, see
 * dpt_real) whatever happens to tracing.  Around a call that enqueues GPU
 * work it records the API call's host times and brackets the work with two
 * pooled HIP events recorded on the same stream, writing one ring record in
 * place; the background thread turns it into an API event and a GPU
 * operation correlated by id.  Synchronisation calls become host events.
 *
 * The current device is tracked per thread through hipSetDevice (read once
 * with hipGetDevice); events come from that device's pool.  When recording
 * fails because the stream belongs to another device, the stream's device
 * is asked for and its pool used.  Calls made while a thread is already
 * inside an interposed function (a runtime calling its own entry points)
 * are forwarded without being recorded.
 */
#include "gpu/dptrace_int.h"
#include "gpu/hip_int.h"
#include "gpu/hip_real.h"

#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static void *resolve(void)
{
    struct gpu_hip_real *r = xcalloc(1, sizeof *r);
    const char *lib = getenv("DPTOP_TRACE_HIP_LIBRARY");
    gpu_hip_resolve(r, lib != NULL && *lib != '\0' ? lib : NULL);
    return r;
}

static inline const struct gpu_hip_real *real(void)
{
    return dpt_real(resolve);
}

/* ---- the backend ---- */

/* The capture engine is the registered "hip" GPU source; this backend adds
 * what only an interposer has: the operations it records, thread hooks. */
static void *hipb_open(const struct dpt_env *env, char *err)
{
    const struct gpu_source *src = gpu_source_find("hip");
    if (src == NULL) {
        base_err(err, "no hip GPU source in this build");
        return NULL;
    }
    if (env->hip_library != NULL && strchr(env->hip_library, ',') != NULL) {
        base_err(err, "HIP library path '%s' contains a comma", env->hip_library);
        return NULL;
    }
    /* Only what is set: the source's own defaults apply to the rest. */
    char opts[700] = "";
    size_t n = 0;
    if (env->snapshot_ns > 0)
        n += (size_t)snprintf(opts + n, sizeof opts - n, ",snapshot_ms=%lld",
                              (long long)((env->snapshot_ns + 999999) / 1000000));
    if (env->max_pending > 0 && n < sizeof opts)
        n += (size_t)snprintf(opts + n, sizeof opts - n, ",max_pending=%zu", env->max_pending);
    if (env->events_per_dev > 0 && n < sizeof opts)
        n +=
            (size_t)snprintf(opts + n, sizeof opts - n, ",events_per_dev=%zu", env->events_per_dev);
    if (env->hip_library != NULL && n < sizeof opts)
        snprintf(opts + n, sizeof opts - n, ",library=%s", env->hip_library);
    struct gpu_source_opts o = {.pid = env->pid, .options = opts, .names = env->names};
    /* open copies what it keeps (gpu.h); the state it returns holds no pointer to o. */
    // cppcheck-suppress returnDanglingLifetime
    return src->open(&o, err);
}

static void hipb_thread_fini(void *st, struct dpt_thread *t)
{
    if (t->nevc > 0)
        gpu_hip_events_give(st, t->evc_device, t->evc, t->nevc);
    t->nevc = 0;
}

static bool hipb_submit(void *st, const struct dpt_rec *r, uint32_t tid)
{
    struct gpu_hip_op op;
    memset(&op, 0, sizeof op);
    op.ev.kind = r->kind;
    op.ev.device = r->device;
    op.ev.tid = tid;
    op.ev.corr_id = r->corr;
    op.ev.scope_id = r->scope;
    op.ev.bytes = r->u.op.bytes;
    op.ev.copy_kind = r->copy_kind;
    memcpy(op.ev.grid, r->u.op.grid, sizeof op.ev.grid);
    memcpy(op.ev.block, r->u.op.block, sizeof op.ev.block);
    op.fn = r->u.op.fn;
    op.fn_kind = r->fn_kind;
    op.label = r->u.op.label;
    op.stream = (void *)(uintptr_t)r->u.op.stream;
    op.ev0 = r->u.op.ev0;
    op.ev1 = r->u.op.ev1;
    return gpu_hip_submit(st, &op) == BASE_OK;
}

static void hipb_note_function(void *st, const void *fn, const char *name)
{
    /* The ring record holds DPT_NAME_INLINE bytes: a name that fills them was cut. */
    gpu_hip_note_function(st, fn, name, strnlen(name, DPT_NAME_INLINE) < DPT_NAME_INLINE - 1);
}

static uint32_t hipb_stream_id(void *st, const void *stream, int device)
{
    return gpu_hip_stream_id(st, stream, device);
}

static int hipb_poll(void *st, int64_t now, gpu_msg_fn fn, void *ctx)
{
    return gpu_source_find("hip")->poll(st, now, fn, ctx, NULL);
}

static void hipb_finish(void *st, int64_t timeout_ns, gpu_msg_fn fn, void *ctx)
{
    gpu_hip_finish(st, timeout_ns, fn, ctx);
}

static uint32_t hipb_devices(void *st)
{
    return gpu_hip_devices(st);
}

static uint64_t hipb_dropped(void *st)
{
    struct gpu_source_counters c;
    gpu_source_find("hip")->counters(st, &c);
    return c.dropped;
}

const struct dpt_backend dpt_backend_impl = {
    .name = "hip",
    .open = hipb_open,
    .thread_fini = hipb_thread_fini,
    .submit = hipb_submit,
    .note_function = hipb_note_function,
    .stream_id = hipb_stream_id,
    .poll = hipb_poll,
    .finish = hipb_finish,
    .devices = hipb_devices,
    .dropped = hipb_dropped,
};

/* ---- recording around a call ---- */

struct op {
    struct dpt_thread *t;
    struct dpt_rec *r;
    gpu_hip_t *hip;
    const struct gpu_hip_real *R;
    hipStream_t stream;
};

/* Two events of device dev for thread t (its cache, refilled in bulk). */
static bool take_events(struct dpt_thread *t, gpu_hip_t *hip, int dev, void **e0, void **e1)
{
    if (t->evc_device != dev) {
        if (t->nevc > 0)
            gpu_hip_events_give(hip, t->evc_device, t->evc, t->nevc);
        t->nevc = 0;
        t->evc_device = dev;
    }
    if (t->nevc < 2)
        t->nevc += gpu_hip_events_take(hip, dev, t->evc + t->nevc, DPT_EVCACHE - t->nevc, true);
    if (t->nevc < 2)
        return false;
    *e0 = t->evc[--t->nevc];
    *e1 = t->evc[--t->nevc];
    return true;
}

/* n events of device dev, which need not be the thread's current one:
 * events are created on their device, so switch to it for a moment. */
static int take_on(struct dpt_thread *t, gpu_hip_t *hip, const struct gpu_hip_real *R, int dev,
                   void **evs, int n)
{
    int got = gpu_hip_events_take(hip, dev, evs, n, dev == t->device);
    if (got < n && dev != t->device && R->hipSetDevice != NULL &&
        R->hipSetDevice(dev) == hipSuccess) {
        got += gpu_hip_events_take(hip, dev, evs + got, n - got, true);
        R->hipSetDevice(t->device);
    }
    if (got < n) {
        gpu_hip_events_give(hip, dev, evs, got);
        return 0;
    }
    return n;
}

/* Record the start event; on a stream of another device use that device's
 * events.  Sets r->timed and r->device. */
static void record_start(struct op *o)
{
    struct dpt_rec *r = o->r;
    struct dpt_thread *t = o->t;
    if (o->hip == NULL || !take_events(t, o->hip, t->device, &r->u.op.ev0, &r->u.op.ev1))
        return;
    if (o->R->hipEventRecord(r->u.op.ev0, o->stream) == hipSuccess) {
        r->timed = 1;
        return;
    }
    void *evs[2] = {r->u.op.ev0, r->u.op.ev1};
    gpu_hip_events_give(o->hip, t->device, evs, 2);
    int sd = o->R->hipGetStreamDeviceId ? o->R->hipGetStreamDeviceId(o->stream) : -1;
    if (sd < 0 || sd == t->device || take_on(t, o->hip, o->R, sd, evs, 2) != 2)
        return;
    if (o->R->hipEventRecord(evs[0], o->stream) != hipSuccess) {
        gpu_hip_events_give(o->hip, sd, evs, 2);
        return;
    }
    r->u.op.ev0 = evs[0];
    r->u.op.ev1 = evs[1];
    r->device = (uint16_t)sd;
    r->timed = 1;
}

static void init_device(struct dpt_thread *t, const struct gpu_hip_real *R)
{
    int d = 0;
    if (R->hipGetDevice == NULL || R->hipGetDevice(&d) != hipSuccess || d < 0)
        d = 0;
    t->device = d;
}

/* Start recording a call that enqueues GPU work of `kind` on `stream`.
 * false: the call is only forwarded. */
static inline bool op_begin(struct op *o, const struct gpu_hip_real *R, uint8_t kind,
                            const char *api, hipStream_t stream, uint8_t api_flags)
{
    o->r = NULL;
    struct dpt_thread *t = dpt_thread_get();
    if (t == NULL || t->busy)
        return false;
    dpt_announce(t);
    struct dpt_rec *r = gpu_ring_reserve(t->ring);
    if (r == NULL)
        return false;
    t->busy = 1;
    if (__builtin_expect(t->device < 0, 0))
        init_device(t, R);
    o->t = t;
    o->r = r;
    o->R = R;
    o->hip = dpt_backend_ensure();
    o->stream = stream;
    r->type = DPT_REC_OP;
    r->kind = kind;
    r->flags = api_flags;
    r->copy_kind = GPU_COPY_UNKNOWN;
    r->device = (uint16_t)t->device;
    r->fn_kind = GPU_HIP_FN_LABEL;
    r->timed = 0;
    r->reserved = 0;
    r->corr = dpt_corr_next(t);
    r->scope = dpt_scope_of(t);
    r->u.op.api = api;
    r->u.op.label = api;
    r->u.op.fn = NULL;
    r->u.op.stream = stream;
    r->u.op.bytes = 0;
    memset(r->u.op.grid, 0, sizeof r->u.op.grid);
    memset(r->u.op.block, 0, sizeof r->u.op.block);
    record_start(o);
    r->t0 = dpt_stamp(t);
    return true;
}

static inline void op_end(struct op *o, hipError_t rc)
{
    struct dpt_rec *r = o->r;
    if (r == NULL)
        return;
    r->t1 = dpt_stamp(o->t);
    if (r->timed &&
        (rc != hipSuccess || o->R->hipEventRecord(r->u.op.ev1, o->stream) != hipSuccess)) {
        void *evs[2] = {r->u.op.ev0, r->u.op.ev1};
        gpu_hip_events_give(o->hip, r->device, evs, 2);
        r->timed = 0;
        if (rc == hipSuccess)
            dpt_count_untimed();
    } else if (!r->timed && rc == hipSuccess) {
        dpt_count_untimed();
    }
    o->t->busy = 0;
    gpu_ring_commit(o->t->ring);
}

static void op_kernel(struct op *o, const void *fn, uint8_t fn_kind, dim3 grid, dim3 block)
{
    struct dpt_rec *r = o->r;
    r->fn_kind = fn_kind;
    r->u.op.fn = fn;
    r->u.op.grid[0] = grid.x;
    r->u.op.grid[1] = grid.y;
    r->u.op.grid[2] = grid.z;
    r->u.op.block[0] = block.x;
    r->u.op.block[1] = block.y;
    r->u.op.block[2] = block.z;
}

static uint8_t copy_kind(hipMemcpyKind k)
{
    switch (k) {
    case hipMemcpyHostToDevice:
        return GPU_COPY_H2D;
    case hipMemcpyDeviceToHost:
        return GPU_COPY_D2H;
    case hipMemcpyDeviceToDevice:
        return GPU_COPY_D2D;
    case hipMemcpyHostToHost:
        return GPU_COPY_H2H;
    default:
        return GPU_COPY_UNKNOWN;
    }
}

static void op_copy(struct op *o, uint64_t bytes, uint8_t ck)
{
    static const char *const labels[] = {
        [GPU_COPY_UNKNOWN] = "memcpy", [GPU_COPY_H2D] = "memcpy_h2d", [GPU_COPY_D2H] = "memcpy_d2h",
        [GPU_COPY_D2D] = "memcpy_d2d", [GPU_COPY_H2H] = "memcpy_h2h", [GPU_COPY_P2P] = "memcpy_p2p",
    };
    o->r->u.op.bytes = bytes;
    o->r->copy_kind = ck;
    o->r->u.op.label = labels[ck <= GPU_COPY_P2P ? ck : 0];
}

static void op_set(struct op *o, uint64_t bytes)
{
    o->r->u.op.bytes = bytes;
    o->r->u.op.label = "memset";
}

/* A host-side call (synchronisation): one host event. */
static inline bool host_begin(struct op *o, const char *api, hipStream_t stream)
{
    o->r = NULL;
    struct dpt_thread *t = dpt_thread_get();
    if (t == NULL || t->busy)
        return false;
    dpt_announce(t);
    struct dpt_rec *r = gpu_ring_reserve(t->ring);
    if (r == NULL)
        return false;
    t->busy = 1;
    o->t = t;
    o->r = r;
    r->type = DPT_REC_HOST;
    r->kind = GPU_EV_SYNC;
    r->flags = 0;
    r->device = (uint16_t)(t->device < 0 ? 0 : t->device);
    r->corr = 0;
    r->reserved = 0;
    r->scope = dpt_scope_of(t);
    r->u.op.api = api;
    r->u.op.stream = stream;
    r->t0 = dpt_stamp(t);
    return true;
}

static inline void host_end(struct op *o)
{
    if (o->r == NULL)
        return;
    o->r->t1 = dpt_stamp(o->t);
    o->t->busy = 0;
    gpu_ring_commit(o->t->ring);
}

#define NOREAL hipErrorNotInitialized

/* An interposed function: forward to the real one, recording around it.
 * `begin` starts the record (using `api`), `setup` fills it in. */
#define DPT_WRAP(fn, name, params, args, begin, setup)                                             \
    hipError_t fn params                                                                           \
    {                                                                                              \
        static const char api[] = name;                                                            \
        const struct gpu_hip_real *R = real();                                                     \
        if (R->fn == NULL)                                                                         \
            return NOREAL;                                                                         \
        struct op o;                                                                               \
        if (begin) {                                                                               \
            setup;                                                                                 \
        }                                                                                          \
        hipError_t rc = R->fn args;                                                                \
        op_end(&o, rc);                                                                            \
        return rc;                                                                                 \
    }
/* A synchronisation: one host event. */
#define DPT_SYNC(fn, params, args, stream)                                                         \
    hipError_t fn params                                                                           \
    {                                                                                              \
        const struct gpu_hip_real *R = real();                                                     \
        if (R->fn == NULL)                                                                         \
            return NOREAL;                                                                         \
        struct op o;                                                                               \
        host_begin(&o, #fn, stream);                                                               \
        hipError_t rc = R->fn args;                                                                \
        host_end(&o);                                                                              \
        return rc;                                                                                 \
    }
#define KERNEL(stream)   op_begin(&o, R, GPU_EV_KERNEL, api, stream, GPU_EVF_ASYNC)
#define COPY(stream, fl) op_begin(&o, R, GPU_EV_MEMCPY, api, stream, fl)
#define SET(stream, fl)  op_begin(&o, R, GPU_EV_MEMSET, api, stream, fl)
#define SYNC_CALL        0
#define ASYNC_CALL       GPU_EVF_ASYNC
#define SPT              hipStreamPerThread
#define HOSTPTR          GPU_HIP_FN_HOSTPTR
#define FUNCTION         GPU_HIP_FN_FUNCTION

/* Grid in workgroups from a global work size in work items. */
static dim3 groups(uint32_t gx, uint32_t gy, uint32_t gz, uint32_t lx, uint32_t ly, uint32_t lz)
{
    dim3 d = {lx ? (gx + lx - 1) / lx : gx, ly ? (gy + ly - 1) / ly : gy,
              lz ? (gz + lz - 1) / lz : gz};
    return d;
}

static dim3 d3(uint32_t x, uint32_t y, uint32_t z)
{
    dim3 d = {x, y, z};
    return d;
}

/* ---- kernel launches ---- */

DPT_WRAP(hipLaunchKernel, "hipLaunchKernel",
         (const void *f, dim3 g, dim3 b, void **args, size_t shm, hipStream_t s),
         (f, g, b, args, shm, s), KERNEL(s), op_kernel(&o, f, HOSTPTR, g, b))
DPT_WRAP(hipLaunchKernel_spt, "hipLaunchKernel_spt",
         (const void *f, dim3 g, dim3 b, void **args, size_t shm, hipStream_t s),
         (f, g, b, args, shm, s), KERNEL(s), op_kernel(&o, f, HOSTPTR, g, b))
DPT_WRAP(hipExtLaunchKernel, "hipExtLaunchKernel",
         (const void *f, dim3 g, dim3 b, void **args, size_t shm, hipStream_t s, hipEvent_t e0,
          hipEvent_t e1, int flags),
         (f, g, b, args, shm, s, e0, e1, flags), KERNEL(s), op_kernel(&o, f, HOSTPTR, g, b))
DPT_WRAP(hipLaunchCooperativeKernel, "hipLaunchCooperativeKernel",
         (const void *f, dim3 g, dim3 b, void **args, unsigned int shm, hipStream_t s),
         (f, g, b, args, shm, s), KERNEL(s), op_kernel(&o, f, HOSTPTR, g, b))
DPT_WRAP(hipLaunchCooperativeKernel_spt, "hipLaunchCooperativeKernel_spt",
         (const void *f, dim3 g, dim3 b, void **args, uint32_t shm, hipStream_t s),
         (f, g, b, args, shm, s), KERNEL(s), op_kernel(&o, f, HOSTPTR, g, b))
DPT_WRAP(hipModuleLaunchKernel, "hipModuleLaunchKernel",
         (hipFunction_t f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
          unsigned int by, unsigned int bz, unsigned int shm, hipStream_t s, void **params,
          void **extra),
         (f, gx, gy, gz, bx, by, bz, shm, s, params, extra), KERNEL(s),
         op_kernel(&o, f, FUNCTION, d3(gx, gy, gz), d3(bx, by, bz)))
DPT_WRAP(hipExtModuleLaunchKernel_c, "hipExtModuleLaunchKernel",
         (hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t lx, uint32_t ly,
          uint32_t lz, size_t shm, hipStream_t s, void **params, void **extra, hipEvent_t e0,
          hipEvent_t e1, uint32_t flags),
         (f, gx, gy, gz, lx, ly, lz, shm, s, params, extra, e0, e1, flags), KERNEL(s),
         op_kernel(&o, f, FUNCTION, groups(gx, gy, gz, lx, ly, lz), d3(lx, ly, lz)))
DPT_WRAP(hipHccModuleLaunchKernel_c, "hipHccModuleLaunchKernel",
         (hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t lx, uint32_t ly,
          uint32_t lz, size_t shm, hipStream_t s, void **params, void **extra, hipEvent_t e0,
          hipEvent_t e1),
         (f, gx, gy, gz, lx, ly, lz, shm, s, params, extra, e0, e1), KERNEL(s),
         op_kernel(&o, f, FUNCTION, groups(gx, gy, gz, lx, ly, lz), d3(lx, ly, lz)))
DPT_WRAP(hipGraphLaunch, "hipGraphLaunch", (hipGraphExec_t g, hipStream_t s), (g, s), KERNEL(s),
         o.r->u.op.label = "graph")

/* hipLaunchByPtr launches with what hipConfigureCall set on this thread. */
hipError_t hipConfigureCall(dim3 g, dim3 b, size_t shm, hipStream_t s)
{
    const struct gpu_hip_real *R = real();
    if (R->hipConfigureCall == NULL)
        return NOREAL;
    struct dpt_thread *t = dpt_thread_get();
    if (t != NULL && !t->busy) {
        t->cfg.set = true;
        t->cfg.grid[0] = g.x;
        t->cfg.grid[1] = g.y;
        t->cfg.grid[2] = g.z;
        t->cfg.block[0] = b.x;
        t->cfg.block[1] = b.y;
        t->cfg.block[2] = b.z;
        t->cfg.stream = s;
    }
    return R->hipConfigureCall(g, b, shm, s);
}

hipError_t hipLaunchByPtr(const void *f)
{
    const struct gpu_hip_real *R = real();
    if (R->hipLaunchByPtr == NULL)
        return NOREAL;
    struct dpt_thread *t = dpt_thread_get();
    hipStream_t s = NULL;
    dim3 g = {1, 1, 1}, b = {1, 1, 1};
    if (t != NULL && t->cfg.set) {
        s = (hipStream_t)(uintptr_t)t->cfg.stream;
        g = d3(t->cfg.grid[0], t->cfg.grid[1], t->cfg.grid[2]);
        b = d3(t->cfg.block[0], t->cfg.block[1], t->cfg.block[2]);
        t->cfg.set = false;
    }
    struct op o;
    if (op_begin(&o, R, GPU_EV_KERNEL, "hipLaunchByPtr", s, GPU_EVF_ASYNC))
        op_kernel(&o, f, HOSTPTR, g, b);
    hipError_t rc = R->hipLaunchByPtr(f);
    op_end(&o, rc);
    return rc;
}

#define MULTI_MAX 16

/* One API event and one bracketed kernel per device, all under one
 * correlation id.  Records are built aside and pushed after the call
 * (several cannot be reserved in place at once). */
static hipError_t launch_multi(__typeof__(&hipLaunchCooperativeKernelMultiDevice) fn,
                               const char *api, hipLaunchParams *list, int n, unsigned int flags)
{
    const struct gpu_hip_real *R = real();
    struct dpt_thread *t = dpt_thread_get();
    gpu_hip_t *hip = dpt_backend_ensure();
    if (t == NULL || t->busy || n <= 0 || n > MULTI_MAX || list == NULL)
        return fn(list, n, flags);
    if (t->device < 0)
        init_device(t, R);
    struct dpt_rec recs[MULTI_MAX];
    uint32_t corr = dpt_corr_next(t);
    dpt_announce(t);
    t->busy = 1;
    for (int i = 0; i < n; i++) {
        struct dpt_rec *r = &recs[i];
        memset(r, 0, sizeof *r);
        r->type = DPT_REC_OP;
        r->kind = GPU_EV_KERNEL;
        r->flags = GPU_EVF_ASYNC;
        r->reserved = i > 0 ? DPT_OP_NO_API : 0;
        r->corr = corr;
        r->scope = dpt_scope_of(t);
        r->fn_kind = HOSTPTR;
        r->u.op.api = api;
        r->u.op.label = api;
        r->u.op.fn = list[i].func;
        r->u.op.stream = list[i].stream;
        op_kernel(&(struct op){.r = r}, list[i].func, HOSTPTR, list[i].gridDim, list[i].blockDim);
        int dev = R->hipGetStreamDeviceId ? R->hipGetStreamDeviceId(list[i].stream) : -1;
        r->device = (uint16_t)(dev >= 0 ? dev : t->device);
        void *evs[2];
        if (hip != NULL && take_on(t, hip, R, r->device, evs, 2) == 2) {
            if (R->hipEventRecord(evs[0], list[i].stream) == hipSuccess) {
                r->u.op.ev0 = evs[0];
                r->u.op.ev1 = evs[1];
                r->timed = 1;
            } else {
                gpu_hip_events_give(hip, r->device, evs, 2);
            }
        }
    }
    int64_t t0 = dpt_stamp(t);
    hipError_t rc = fn(list, n, flags);
    int64_t t1 = dpt_stamp(t);
    for (int i = 0; i < n; i++) {
        struct dpt_rec *r = &recs[i];
        r->t0 = t0;
        r->t1 = t1;
        if (r->timed &&
            (rc != hipSuccess || R->hipEventRecord(r->u.op.ev1, list[i].stream) != hipSuccess)) {
            void *evs[2] = {r->u.op.ev0, r->u.op.ev1};
            gpu_hip_events_give(hip, r->device, evs, 2);
            r->timed = 0;
        }
        if (!r->timed && rc == hipSuccess)
            dpt_count_untimed();
        if (!gpu_ring_push(t->ring, r) && r->timed) {
            void *evs[2] = {r->u.op.ev0, r->u.op.ev1};
            gpu_hip_events_give(hip, r->device, evs, 2);
        }
    }
    t->busy = 0;
    return rc;
}

hipError_t hipLaunchCooperativeKernelMultiDevice(hipLaunchParams *list, int n, unsigned int flags)
{
    const struct gpu_hip_real *R = real();
    if (R->hipLaunchCooperativeKernelMultiDevice == NULL)
        return NOREAL;
    return launch_multi(R->hipLaunchCooperativeKernelMultiDevice,
                        "hipLaunchCooperativeKernelMultiDevice", list, n, flags);
}

hipError_t hipExtLaunchMultiKernelMultiDevice(hipLaunchParams *list, int n, unsigned int flags)
{
    const struct gpu_hip_real *R = real();
    if (R->hipExtLaunchMultiKernelMultiDevice == NULL)
        return NOREAL;
    return launch_multi(R->hipExtLaunchMultiKernelMultiDevice, "hipExtLaunchMultiKernelMultiDevice",
                        list, n, flags);
}

/* ---- bookkeeping: current device, module function names ---- */

hipError_t hipSetDevice(int d)
{
    const struct gpu_hip_real *R = real();
    if (R->hipSetDevice == NULL)
        return NOREAL;
    hipError_t rc = R->hipSetDevice(d);
    struct dpt_thread *t = rc == hipSuccess ? dpt_thread_get() : NULL;
    if (t != NULL && !t->busy)
        t->device = d;
    return rc;
}

hipError_t hipModuleGetFunction(hipFunction_t *f, hipModule_t m, const char *kname)
{
    const struct gpu_hip_real *R = real();
    if (R->hipModuleGetFunction == NULL)
        return NOREAL;
    hipError_t rc = R->hipModuleGetFunction(f, m, kname);
    struct dpt_thread *t = rc == hipSuccess && f != NULL ? dpt_thread_get() : NULL;
    if (t == NULL || t->busy || kname == NULL)
        return rc;
    struct dpt_rec *r = gpu_ring_reserve(t->ring);
    if (r != NULL) {
        r->type = DPT_REC_FUNC;
        r->u.fn.fn = *f;
        size_t n = strnlen(kname, DPT_NAME_INLINE - 1);
        memcpy(r->u.fn.name, kname, n);
        r->u.fn.name[n] = '\0';
        gpu_ring_commit(t->ring);
    }
    return rc;
}

/* ---- copies ---- */

#define CK(k) copy_kind(k)

DPT_WRAP(hipMemcpy, "hipMemcpy", (void *d, const void *s, size_t n, hipMemcpyKind k), (d, s, n, k),
         COPY(NULL, SYNC_CALL), op_copy(&o, n, CK(k)))
DPT_WRAP(hipMemcpy_spt, "hipMemcpy_spt", (void *d, const void *s, size_t n, hipMemcpyKind k),
         (d, s, n, k), COPY(SPT, SYNC_CALL), op_copy(&o, n, CK(k)))
DPT_WRAP(hipMemcpyWithStream, "hipMemcpyWithStream",
         (void *d, const void *s, size_t n, hipMemcpyKind k, hipStream_t st), (d, s, n, k, st),
         COPY(st, SYNC_CALL), op_copy(&o, n, CK(k)))
DPT_WRAP(hipMemcpyHtoD, "hipMemcpyHtoD", (hipDeviceptr_t d, void *s, size_t n), (d, s, n),
         COPY(NULL, SYNC_CALL), op_copy(&o, n, GPU_COPY_H2D))
DPT_WRAP(hipMemcpyDtoH, "hipMemcpyDtoH", (void *d, hipDeviceptr_t s, size_t n), (d, s, n),
         COPY(NULL, SYNC_CALL), op_copy(&o, n, GPU_COPY_D2H))
DPT_WRAP(hipMemcpyDtoD, "hipMemcpyDtoD", (hipDeviceptr_t d, hipDeviceptr_t s, size_t n), (d, s, n),
         COPY(NULL, SYNC_CALL), op_copy(&o, n, GPU_COPY_D2D))
DPT_WRAP(hipMemcpyToSymbol, "hipMemcpyToSymbol",
         (const void *sym, const void *s, size_t n, size_t off, hipMemcpyKind k),
         (sym, s, n, off, k), COPY(NULL, SYNC_CALL), op_copy(&o, n, CK(k)))
DPT_WRAP(hipMemcpyToSymbol_spt, "hipMemcpyToSymbol_spt",
         (const void *sym, const void *s, size_t n, size_t off, hipMemcpyKind k),
         (sym, s, n, off, k), COPY(SPT, SYNC_CALL), op_copy(&o, n, CK(k)))
DPT_WRAP(hipMemcpyFromSymbol, "hipMemcpyFromSymbol",
         (void *d, const void *sym, size_t n, size_t off, hipMemcpyKind k), (d, sym, n, off, k),
         COPY(NULL, SYNC_CALL), op_copy(&o, n, CK(k)))
DPT_WRAP(hipMemcpyFromSymbol_spt, "hipMemcpyFromSymbol_spt",
         (void *d, const void *sym, size_t n, size_t off, hipMemcpyKind k), (d, sym, n, off, k),
         COPY(SPT, SYNC_CALL), op_copy(&o, n, CK(k)))
DPT_WRAP(hipMemcpy2D, "hipMemcpy2D",
         (void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, hipMemcpyKind k),
         (d, dp, s, sp, w, h, k), COPY(NULL, SYNC_CALL), op_copy(&o, (uint64_t)w *h, CK(k)))
DPT_WRAP(hipMemcpy2D_spt, "hipMemcpy2D_spt",
         (void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, hipMemcpyKind k),
         (d, dp, s, sp, w, h, k), COPY(SPT, SYNC_CALL), op_copy(&o, (uint64_t)w *h, CK(k)))
DPT_WRAP(hipMemcpyParam2D, "hipMemcpyParam2D", (const hip_Memcpy2D *p), (p), COPY(NULL, SYNC_CALL),
         op_copy(&o, p ? (uint64_t)p->WidthInBytes * p->Height : 0, GPU_COPY_UNKNOWN))
DPT_WRAP(hipDrvMemcpy2DUnaligned, "hipDrvMemcpy2DUnaligned", (const hip_Memcpy2D *p), (p),
         COPY(NULL, SYNC_CALL),
         op_copy(&o, p ? (uint64_t)p->WidthInBytes * p->Height : 0, GPU_COPY_UNKNOWN))
DPT_WRAP(hipMemcpy2DToArray, "hipMemcpy2DToArray",
         (hipArray * d, size_t wo, size_t ho, const void *s, size_t sp, size_t w, size_t h,
          hipMemcpyKind k),
         (d, wo, ho, s, sp, w, h, k), COPY(NULL, SYNC_CALL), op_copy(&o, (uint64_t)w *h, CK(k)))
DPT_WRAP(hipMemcpy2DToArray_spt, "hipMemcpy2DToArray_spt",
         (hipArray * d, size_t wo, size_t ho, const void *s, size_t sp, size_t w, size_t h,
          hipMemcpyKind k),
         (d, wo, ho, s, sp, w, h, k), COPY(SPT, SYNC_CALL), op_copy(&o, (uint64_t)w *h, CK(k)))
DPT_WRAP(hipMemcpyToArray, "hipMemcpyToArray",
         (hipArray * d, size_t wo, size_t ho, const void *s, size_t n, hipMemcpyKind k),
         (d, wo, ho, s, n, k), COPY(NULL, SYNC_CALL), op_copy(&o, n, CK(k)))
DPT_WRAP(hipMemcpyFromArray, "hipMemcpyFromArray",
         (void *d, hipArray_const_t s, size_t wo, size_t ho, size_t n, hipMemcpyKind k),
         (d, s, wo, ho, n, k), COPY(NULL, SYNC_CALL), op_copy(&o, n, CK(k)))
DPT_WRAP(hipMemcpy2DFromArray, "hipMemcpy2DFromArray",
         (void *d, size_t dp, hipArray_const_t s, size_t wo, size_t ho, size_t w, size_t h,
          hipMemcpyKind k),
         (d, dp, s, wo, ho, w, h, k), COPY(NULL, SYNC_CALL), op_copy(&o, (uint64_t)w *h, CK(k)))
DPT_WRAP(hipMemcpy2DFromArray_spt, "hipMemcpy2DFromArray_spt",
         (void *d, size_t dp, hipArray_const_t s, size_t wo, size_t ho, size_t w, size_t h,
          hipMemcpyKind k),
         (d, dp, s, wo, ho, w, h, k), COPY(SPT, SYNC_CALL), op_copy(&o, (uint64_t)w *h, CK(k)))
DPT_WRAP(hipMemcpyAtoH, "hipMemcpyAtoH", (void *d, hipArray *s, size_t off, size_t n),
         (d, s, off, n), COPY(NULL, SYNC_CALL), op_copy(&o, n, GPU_COPY_D2H))
DPT_WRAP(hipMemcpyHtoA, "hipMemcpyHtoA", (hipArray * d, size_t off, const void *s, size_t n),
         (d, off, s, n), COPY(NULL, SYNC_CALL), op_copy(&o, n, GPU_COPY_H2D))

static uint64_t bytes3d(const struct hipMemcpy3DParms *p)
{
    return p ? (uint64_t)p->extent.width * p->extent.height * p->extent.depth : 0;
}

static uint64_t bytes3d_drv(const HIP_MEMCPY3D *p)
{
    return p ? (uint64_t)p->WidthInBytes * p->Height * p->Depth : 0;
}

DPT_WRAP(hipMemcpy3D, "hipMemcpy3D", (const struct hipMemcpy3DParms *p), (p), COPY(NULL, SYNC_CALL),
         op_copy(&o, bytes3d(p), p ? CK(p->kind) : GPU_COPY_UNKNOWN))
DPT_WRAP(hipMemcpy3D_spt, "hipMemcpy3D_spt", (const struct hipMemcpy3DParms *p), (p),
         COPY(SPT, SYNC_CALL), op_copy(&o, bytes3d(p), p ? CK(p->kind) : GPU_COPY_UNKNOWN))
DPT_WRAP(hipDrvMemcpy3D, "hipDrvMemcpy3D", (const HIP_MEMCPY3D *p), (p), COPY(NULL, SYNC_CALL),
         op_copy(&o, bytes3d_drv(p), GPU_COPY_UNKNOWN))
DPT_WRAP(hipMemcpyPeer, "hipMemcpyPeer", (void *d, int dd, const void *s, int sd, size_t n),
         (d, dd, s, sd, n), COPY(NULL, SYNC_CALL), op_copy(&o, n, GPU_COPY_P2P))

DPT_WRAP(hipMemcpyAsync, "hipMemcpyAsync",
         (void *d, const void *s, size_t n, hipMemcpyKind k, hipStream_t st), (d, s, n, k, st),
         COPY(st, ASYNC_CALL), op_copy(&o, n, CK(k)))
DPT_WRAP(hipMemcpyAsync_spt, "hipMemcpyAsync_spt",
         (void *d, const void *s, size_t n, hipMemcpyKind k, hipStream_t st), (d, s, n, k, st),
         COPY(st, ASYNC_CALL), op_copy(&o, n, CK(k)))
DPT_WRAP(hipMemcpyHtoDAsync, "hipMemcpyHtoDAsync",
         (hipDeviceptr_t d, void *s, size_t n, hipStream_t st), (d, s, n, st), COPY(st, ASYNC_CALL),
         op_copy(&o, n, GPU_COPY_H2D))
DPT_WRAP(hipMemcpyDtoHAsync, "hipMemcpyDtoHAsync",
         (void *d, hipDeviceptr_t s, size_t n, hipStream_t st), (d, s, n, st), COPY(st, ASYNC_CALL),
         op_copy(&o, n, GPU_COPY_D2H))
DPT_WRAP(hipMemcpyDtoDAsync, "hipMemcpyDtoDAsync",
         (hipDeviceptr_t d, hipDeviceptr_t s, size_t n, hipStream_t st), (d, s, n, st),
         COPY(st, ASYNC_CALL), op_copy(&o, n, GPU_COPY_D2D))
DPT_WRAP(hipMemcpyToSymbolAsync, "hipMemcpyToSymbolAsync",
         (const void *sym, const void *s, size_t n, size_t off, hipMemcpyKind k, hipStream_t st),
         (sym, s, n, off, k, st), COPY(st, ASYNC_CALL), op_copy(&o, n, CK(k)))
DPT_WRAP(hipMemcpyFromSymbolAsync, "hipMemcpyFromSymbolAsync",
         (void *d, const void *sym, size_t n, size_t off, hipMemcpyKind k, hipStream_t st),
         (d, sym, n, off, k, st), COPY(st, ASYNC_CALL), op_copy(&o, n, CK(k)))
DPT_WRAP(hipMemcpy2DAsync, "hipMemcpy2DAsync",
         (void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, hipMemcpyKind k,
          hipStream_t st),
         (d, dp, s, sp, w, h, k, st), COPY(st, ASYNC_CALL), op_copy(&o, (uint64_t)w *h, CK(k)))
DPT_WRAP(hipMemcpyParam2DAsync, "hipMemcpyParam2DAsync", (const hip_Memcpy2D *p, hipStream_t st),
         (p, st), COPY(st, ASYNC_CALL),
         op_copy(&o, p ? (uint64_t)p->WidthInBytes * p->Height : 0, GPU_COPY_UNKNOWN))
DPT_WRAP(hipMemcpy2DToArrayAsync, "hipMemcpy2DToArrayAsync",
         (hipArray * d, size_t wo, size_t ho, const void *s, size_t sp, size_t w, size_t h,
          hipMemcpyKind k, hipStream_t st),
         (d, wo, ho, s, sp, w, h, k, st), COPY(st, ASYNC_CALL), op_copy(&o, (uint64_t)w *h, CK(k)))
DPT_WRAP(hipMemcpy2DFromArrayAsync, "hipMemcpy2DFromArrayAsync",
         (void *d, size_t dp, hipArray_const_t s, size_t wo, size_t ho, size_t w, size_t h,
          hipMemcpyKind k, hipStream_t st),
         (d, dp, s, wo, ho, w, h, k, st), COPY(st, ASYNC_CALL), op_copy(&o, (uint64_t)w *h, CK(k)))
DPT_WRAP(hipMemcpy3DAsync, "hipMemcpy3DAsync", (const struct hipMemcpy3DParms *p, hipStream_t st),
         (p, st), COPY(st, ASYNC_CALL), op_copy(&o, bytes3d(p), p ? CK(p->kind) : GPU_COPY_UNKNOWN))
DPT_WRAP(hipDrvMemcpy3DAsync, "hipDrvMemcpy3DAsync", (const HIP_MEMCPY3D *p, hipStream_t st),
         (p, st), COPY(st, ASYNC_CALL), op_copy(&o, bytes3d_drv(p), GPU_COPY_UNKNOWN))
DPT_WRAP(hipMemcpyPeerAsync, "hipMemcpyPeerAsync",
         (void *d, int dd, const void *s, int sd, size_t n, hipStream_t st), (d, dd, s, sd, n, st),
         COPY(st, ASYNC_CALL), op_copy(&o, n, GPU_COPY_P2P))

/* ---- memsets ---- */

DPT_WRAP(hipMemset, "hipMemset", (void *d, int v, size_t n), (d, v, n), SET(NULL, SYNC_CALL),
         op_set(&o, n))
DPT_WRAP(hipMemset_spt, "hipMemset_spt", (void *d, int v, size_t n), (d, v, n), SET(SPT, SYNC_CALL),
         op_set(&o, n))
DPT_WRAP(hipMemsetD8, "hipMemsetD8", (hipDeviceptr_t d, unsigned char v, size_t n), (d, v, n),
         SET(NULL, SYNC_CALL), op_set(&o, n))
DPT_WRAP(hipMemsetD16, "hipMemsetD16", (hipDeviceptr_t d, unsigned short v, size_t n), (d, v, n),
         SET(NULL, SYNC_CALL), op_set(&o, (uint64_t)n * 2))
DPT_WRAP(hipMemsetD32, "hipMemsetD32", (hipDeviceptr_t d, int v, size_t n), (d, v, n),
         SET(NULL, SYNC_CALL), op_set(&o, (uint64_t)n * 4))
DPT_WRAP(hipMemset2D, "hipMemset2D", (void *d, size_t p, int v, size_t w, size_t h),
         (d, p, v, w, h), SET(NULL, SYNC_CALL), op_set(&o, (uint64_t)w *h))
DPT_WRAP(hipMemset2D_spt, "hipMemset2D_spt", (void *d, size_t p, int v, size_t w, size_t h),
         (d, p, v, w, h), SET(SPT, SYNC_CALL), op_set(&o, (uint64_t)w *h))
DPT_WRAP(hipMemset3D, "hipMemset3D", (hipPitchedPtr p, int v, hipExtent e), (p, v, e),
         SET(NULL, SYNC_CALL), op_set(&o, (uint64_t)e.width *e.height *e.depth))
DPT_WRAP(hipMemset3D_spt, "hipMemset3D_spt", (hipPitchedPtr p, int v, hipExtent e), (p, v, e),
         SET(SPT, SYNC_CALL), op_set(&o, (uint64_t)e.width *e.height *e.depth))
DPT_WRAP(hipMemsetAsync, "hipMemsetAsync", (void *d, int v, size_t n, hipStream_t st),
         (d, v, n, st), SET(st, ASYNC_CALL), op_set(&o, n))
DPT_WRAP(hipMemsetD8Async, "hipMemsetD8Async",
         (hipDeviceptr_t d, unsigned char v, size_t n, hipStream_t st), (d, v, n, st),
         SET(st, ASYNC_CALL), op_set(&o, n))
DPT_WRAP(hipMemsetD16Async, "hipMemsetD16Async",
         (hipDeviceptr_t d, unsigned short v, size_t n, hipStream_t st), (d, v, n, st),
         SET(st, ASYNC_CALL), op_set(&o, (uint64_t)n * 2))
DPT_WRAP(hipMemsetD32Async, "hipMemsetD32Async",
         (hipDeviceptr_t d, int v, size_t n, hipStream_t st), (d, v, n, st), SET(st, ASYNC_CALL),
         op_set(&o, (uint64_t)n * 4))
DPT_WRAP(hipMemset2DAsync, "hipMemset2DAsync",
         (void *d, size_t p, int v, size_t w, size_t h, hipStream_t st), (d, p, v, w, h, st),
         SET(st, ASYNC_CALL), op_set(&o, (uint64_t)w *h))
DPT_WRAP(hipMemset3DAsync, "hipMemset3DAsync",
         (hipPitchedPtr p, int v, hipExtent e, hipStream_t st), (p, v, e, st), SET(st, ASYNC_CALL),
         op_set(&o, (uint64_t)e.width *e.height *e.depth))

/* ---- synchronisation ---- */

DPT_SYNC(hipStreamSynchronize, (hipStream_t s), (s), s)
DPT_SYNC(hipStreamSynchronize_spt, (hipStream_t s), (s), s)
DPT_SYNC(hipDeviceSynchronize, (void), (), NULL)
DPT_SYNC(hipEventSynchronize, (hipEvent_t e), (e), NULL)
DPT_SYNC(hipCtxSynchronize, (void), (), NULL)
