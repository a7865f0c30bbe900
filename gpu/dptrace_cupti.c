/*
 * libdptrace_cupti.so: the libdptrace core driven by CUPTI instead of HIP
 * interception.  Load it with CUDA_INJECTION64_PATH: the CUDA driver calls
 * InitializeInjection(), which starts the core and the "cupti" source:
 *
 *   - activity records (concurrent kernels, memcpy, memset) arrive in
 *     buffers CUPTI completes on its own thread; they are queued (bounded,
 *     a full queue drops the buffer and counts it) and translated by the
 *     background thread (gpu_cupti_translate, gpu/cupti.c);
 *   - runtime API callbacks (the calls that do, wait for or allocate
 *     work, or all) and the driver's launch calls made outside them, on
 *     the application's threads, record each call's host times as an API
 *     event and remember its correlation id's scope (the thread's
 *     innermost range) so that the GPU work it launched carries the same
 *     scope id;
 *   - CUPTI is given the trace clock for its timestamps
 *     (cuptiActivityRegisterTimestampCallback): it converts the GPU's
 *     times to that clock itself.  A libcupti without it stamps with a
 *     clock of its own (CLOCK_REALTIME by its documentation, which NTP may
 *     step), so its timestamps are mapped onto the trace clock with
 *     snapshot pairs (cuptiGetTimestamp read between two CLOCK_MONOTONIC
 *     readings).  Either way the pairs are published as "cupti"/"trace"
 *     snap messages (with the trace clock, exact ones).
 *
 * libcupti is opened with dlopen, so the library loads (and annotations
 * work) where it is missing.  The build machines have no GPU: the record
 * translation is unit-tested (tests/test_gpu.c), and where an NVIDIA GPU
 * answers, test_dptrace_cuda_gpu.sh, test_dptrace_torch_gpu.sh and
 * test_dptrace_jax_gpu.sh run real programs under the library (docs/GPU.md,
 * "On a real GPU").
 */
#include "gpu/cupti_work.h"
#include "gpu/dptrace_int.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#define CUPTI_FNS(X)                                                                               \
    X(cuptiActivityRegisterCallbacks)                                                              \
    X(cuptiActivityEnable)                                                                         \
    X(cuptiActivityDisable)                                                                        \
    X(cuptiActivityGetNextRecord)                                                                  \
    X(cuptiActivityFlushAll)                                                                       \
    X(cuptiActivityGetNumDroppedRecords)                                                           \
    X(cuptiGetTimestamp)                                                                           \
    X(cuptiSubscribe)                                                                              \
    X(cuptiUnsubscribe)                                                                            \
    X(cuptiEnableDomain)                                                                           \
    X(cuptiEnableCallback)                                                                         \
    X(cuptiGetCallbackName)

#define BUF_SIZE   (1u << 20)
#define MAX_BUFS   64 /* completed buffers waiting for poll */
#define CORR_SLOTS 65536
#define SNAP_PAIRS 64

/* A call's scope and thread by correlation id, written at the call's
 * entry on its own thread and read by the background thread: without a
 * lock, the id itself says whether the slot is whole (written last with
 * release, read before and after the fields).  A writer first claims the
 * slot (CORR_BUSY): of two calls CORR_SLOTS apart that enter at the same
 * moment, the second finds it claimed and its work goes without a scope,
 * rather than the two mixing. */
#define CORR_BUSY UINT32_MAX
struct corr_slot {
    _Atomic uint32_t corr;
    _Atomic uint32_t tid;
    _Atomic uint64_t scope;
};

struct cupti_src {
    void *lib;
#define FN_PTR(f) __typeof__(&f) f;
    CUPTI_FNS(FN_PTR)
#undef FN_PTR
    CUpti_SubscriberHandle sub;
    bool trace_clock; /* CUPTI stamps with the trace clock */
    /* The driver is inside cuInit when it loads this library: the device
     * count is asked later, from the background thread, until it answers. */
    __typeof__(&cuDeviceGetCount) device_count;
    uint32_t ndevices;
    struct gpu_source_opts o;
    gpu_names_t *own_names;
    gpu_clockmap_t *map;
    /* Records are asked for (cuptiActivityFlushAll) every flush_ns rather
     * than at each poll, and otherwise come when a buffer fills: a flush
     * blocks while CUPTI walks every context's buffers.  Asked at every
     * 2 ms cycle, it may have been part of what tracing added to PyTorch
     * and JAX steps beyond CUPTI's own cost (docs/GPU.md). */
    int64_t snap_ns, flush_ns;
    int64_t last_snap, last_flush;
    struct gpu_snap_pair snaps[SNAP_PAIRS];
    size_t nsnaps;
    pthread_mutex_t mu; /* bufs */
    struct {
        uint8_t *buf;
        size_t valid;
    } bufs[MAX_BUFS];
    size_t nbufs;
    uint64_t dropped;
    struct corr_slot *corr;
};

/* Where a libcupti names no driver entry point, or follows none of those
 * it names: the launches by id. */
static const CUpti_CallbackId driver_launches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
};

/* Runtime calls the thread is inside (driver callbacks nest in them).
 * Only followed runtime calls count: with api=work, a driver call of the
 * followed kinds made inside an unfollowed runtime call would be reported
 * as the program's own; no such pair is known (the unfollowed runtime
 * calls are queries, set-up and capture, whose driver calls are not of
 * those kinds). */
static _Thread_local unsigned in_runtime;

/* CUPTI's buffer callbacks carry no user pointer: the one instance of the
 * process lives in libdptrace's process state (dpt_cupti_slot). */
static struct cupti_src *instance(void)
{
    return *(struct cupti_src *volatile *)dpt_cupti_slot();
}

static void CUPTIAPI buf_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, BUF_SIZE);
    *size = *buffer ? BUF_SIZE : 0;
    *max_records = 0;
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                   size_t valid)
{
    struct cupti_src *s = instance();
    if (s == NULL) {
        free(buffer);
        return;
    }
    /* What CUPTI itself could not keep (no buffer room) is a drop too. */
    size_t lost = 0;
    if (s->cuptiActivityGetNumDroppedRecords(ctx, stream, &lost) != CUPTI_SUCCESS)
        lost = 0;
    pthread_mutex_lock(&s->mu);
    s->dropped += lost;
    if (valid > 0 && s->nbufs < MAX_BUFS) {
        s->bufs[s->nbufs].buf = buffer;
        s->bufs[s->nbufs].valid = valid;
        s->nbufs++;
        buffer = NULL;
    } else if (valid > 0) {
        /* The queue is full: its records are lost, each one counted. */
        size_t n = 0;
        CUpti_Activity *rec = NULL;
        while (s->cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
            n++;
        s->dropped += n ? n : 1;
    }
    pthread_mutex_unlock(&s->mu);
    free(buffer);
}

static void CUPTIAPI api_callback(void *userdata, CUpti_CallbackDomain domain,
                                  CUpti_CallbackId cbid, const void *cbdata)
{
    struct cupti_src *s = userdata;
    const CUpti_CallbackData *cb = cbdata;
    if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
        if (cb->callbackSite == CUPTI_API_ENTER)
            in_runtime++;
        else if (in_runtime > 0)
            in_runtime--;
    } else if (domain != CUPTI_CB_DOMAIN_DRIVER_API || in_runtime > 0) {
        return;
    }
    /* The call CUPTI was switched on in (cuInit's) has an exit, no entry. */
    if (cb->correlationData == NULL ||
        (cb->callbackSite == CUPTI_API_EXIT && *cb->correlationData == 0))
        return;
    if (cb->callbackSite == CUPTI_API_ENTER) {
        uint32_t tid = 0;
        uint64_t scope = s->o.scope_now ? s->o.scope_now(s->o.app, &tid) : 0;
        *cb->correlationData = (uint64_t)base_monotonic_ns();
        struct corr_slot *c = &s->corr[cb->correlationId % CORR_SLOTS];
        uint32_t old = atomic_load_explicit(&c->corr, memory_order_relaxed);
        if (cb->correlationId == CORR_BUSY || old == CORR_BUSY ||
            !atomic_compare_exchange_strong_explicit(&c->corr, &old, CORR_BUSY,
                                                     memory_order_relaxed, memory_order_relaxed))
            return;
        atomic_thread_fence(memory_order_release);
        atomic_store_explicit(&c->tid, tid, memory_order_relaxed);
        atomic_store_explicit(&c->scope, scope, memory_order_relaxed);
        atomic_store_explicit(&c->corr, cb->correlationId, memory_order_release);
        return;
    }
    if (s->o.host_event == NULL)
        return;
    gpu_event_t ev = {0};
    ev.kind = GPU_EV_API;
    ev.pid = s->o.pid;
    ev.corr_id = cb->correlationId;
    ev.scope_id = s->o.scope_now ? s->o.scope_now(s->o.app, &ev.tid) : 0;
    ev.start_ns = (int64_t)*cb->correlationData;
    ev.end_ns = base_monotonic_ns();
    if (strstr(cb->functionName, "Synchronize") != NULL)
        ev.kind = GPU_EV_SYNC;
    s->o.host_event(s->o.app, &ev, cb->functionName);
}

static uint64_t scope_of(void *ctx, uint32_t corr, uint32_t *tid)
{
    struct cupti_src *s = ctx;
    struct corr_slot *c = &s->corr[corr % CORR_SLOTS];
    if (corr == 0 || corr == CORR_BUSY ||
        atomic_load_explicit(&c->corr, memory_order_acquire) != corr)
        return 0;
    uint32_t t = atomic_load_explicit(&c->tid, memory_order_relaxed);
    uint64_t scope = atomic_load_explicit(&c->scope, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&c->corr, memory_order_relaxed) != corr)
        return 0; /* rewritten meanwhile */
    *tid = t;
    return scope;
}

static int cupti_probe(char *err)
{
    void *h = dlopen("libcupti.so", RTLD_LAZY | RTLD_LOCAL);
    if (h == NULL)
        h = dlopen("libcupti.so.13", RTLD_LAZY | RTLD_LOCAL);
    if (h == NULL)
        return base_err(err, "cupti: libcupti cannot be loaded: %s", dlerror());
    dlclose(h);
    return BASE_OK;
}

static void cupti_close(void *state);

static uint64_t CUPTIAPI trace_clock_now(void)
{
    return (uint64_t)base_monotonic_ns();
}

/* Hands CUPTI the trace clock, before any activity kind is on (records
 * made before would carry its own).  Trusted only once cuptiGetTimestamp,
 * which follows the records' clock, reads it.  A libcupti without the
 * entry point, or one that refuses it, keeps its own clock quietly (the
 * snapshot pairs then map it); one that accepts it but does not use it is
 * said once. */
static bool use_trace_clock(struct cupti_src *s)
{
    /* Declared here: CUPTI's headers before CUDA 11.6 lack the type. */
    CUptiResult (*reg)(uint64_t(CUPTIAPI *)(void));
    *(void **)&reg = dlsym(s->lib, "cuptiActivityRegisterTimestampCallback");
    if (reg == NULL || reg(trace_clock_now) != CUPTI_SUCCESS)
        return false;
    uint64_t ts = 0;
    int64_t a = base_monotonic_ns();
    CUptiResult rc = s->cuptiGetTimestamp(&ts);
    int64_t b = base_monotonic_ns();
    if (rc == CUPTI_SUCCESS && (int64_t)ts >= a && (int64_t)ts <= b)
        return true;
    base_log(BASE_LOG_INFO, "dptrace",
             "CUPTI took the trace clock but keeps its own: its times are mapped by snapshot "
             "pairs");
    return false;
}

static void snapshot(struct cupti_src *s)
{
    uint64_t ts;
    if (s->trace_clock) {
        int64_t t = base_monotonic_ns();
        if (gpu_clockmap_add(s->map, t, t, NULL) == BASE_OK && s->nsnaps < SNAP_PAIRS)
            s->snaps[s->nsnaps++] = (struct gpu_snap_pair){t, t};
        s->last_snap = t;
        return;
    }
    int64_t a = base_monotonic_ns();
    if (s->cuptiGetTimestamp(&ts) != CUPTI_SUCCESS)
        return;
    int64_t b = base_monotonic_ns();
    int64_t mid = a + (b - a) / 2;
    if (gpu_clockmap_add(s->map, (int64_t)ts, mid, NULL) == BASE_OK && s->nsnaps < SNAP_PAIRS)
        s->snaps[s->nsnaps++] = (struct gpu_snap_pair){(int64_t)ts, mid};
    s->last_snap = mid;
}

/* Follows the calls of a domain that are work, by name; *named: how many
 * of its ids have a name at all.  With `strict`, an id CUPTI will not
 * follow is an error; otherwise it is left out (the driver's: the calls
 * a runtime call makes are its own, and their GPU work has its id). */
static CUptiResult follow_work(struct cupti_src *s, CUpti_CallbackDomain domain,
                               CUpti_CallbackId size, const char *const *prefixes, bool strict,
                               size_t *named, size_t *followed)
{
    *named = *followed = 0;
    /* Past this header's last id too: a newer libcupti names its new
     * entry points, an id it does not know has no name. */
    for (CUpti_CallbackId id = 1; id < size + 1024; id++) {
        const char *name = NULL;
        if (s->cuptiGetCallbackName(domain, id, &name) != CUPTI_SUCCESS || name == NULL)
            continue;
        ++*named;
        if (!gpu_cupti_is_work(name, prefixes))
            continue;
        CUptiResult rc = s->cuptiEnableCallback(1, s->sub, domain, id);
        if (rc != CUPTI_SUCCESS && strict)
            return rc;
        *followed += rc == CUPTI_SUCCESS;
    }
    return CUPTI_SUCCESS;
}

static CUptiResult follow_calls(struct cupti_src *s, bool all)
{
    size_t named, followed;
    CUptiResult rc =
        all ? s->cuptiEnableDomain(1, s->sub, CUPTI_CB_DOMAIN_RUNTIME_API)
            : follow_work(s, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE,
                          gpu_cupti_runtime_work, true, &named, &followed);
    if (rc != CUPTI_SUCCESS)
        return rc;
    follow_work(s, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, gpu_cupti_driver_work,
                false, &named, &followed);
    if (followed > 0)
        return CUPTI_SUCCESS;
    /* An older libcupti may lack some of these: the others are followed. */
    for (size_t i = 0; i < sizeof driver_launches / sizeof *driver_launches; i++)
        s->cuptiEnableCallback(1, s->sub, CUPTI_CB_DOMAIN_DRIVER_API, driver_launches[i]);
    return CUPTI_SUCCESS;
}

static void *cupti_open(const struct gpu_source_opts *opts, char *err)
{
    static const char *const known[] = {"api", "snapshot_ms", "flush_ms", NULL};
    char api[16] = "work";
    if (instance() != NULL) {
        base_err(err, "cupti: the source is already open in this process");
        return NULL;
    }
    if (gpu_opts_check(opts->options, known, err) != BASE_OK)
        return NULL;
    gpu_opts_get(opts->options, "api", api, sizeof api);
    if (strcmp(api, "work") != 0 && strcmp(api, "all") != 0) {
        base_err(err, "cupti: api must be work or all, not '%s'", api);
        return NULL;
    }
    bool api_all = strcmp(api, "all") == 0;
    int64_t snap_ms = 100, flush_ms = 20;
    if (gpu_opts_int(opts->options, "cupti", "snapshot_ms", 1, 60000, &snap_ms, err) != BASE_OK ||
        gpu_opts_int(opts->options, "cupti", "flush_ms", 1, 10000, &flush_ms, err) != BASE_OK)
        return NULL;
    struct cupti_src *s = xcalloc(1, sizeof *s);
    s->snap_ns = snap_ms * 1000000;
    s->flush_ns = flush_ms * 1000000;
    s->o = *opts;
    pthread_mutex_init(&s->mu, NULL);
    s->corr = xcalloc(CORR_SLOTS, sizeof *s->corr);
    s->map = gpu_clockmap_new(SNAP_PAIRS);
    if (s->o.names == NULL)
        s->o.names = s->own_names = gpu_names_new(65536);
    s->lib = dlopen("libcupti.so", RTLD_NOW | RTLD_LOCAL);
    if (s->lib == NULL)
        s->lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
    if (s->lib == NULL) {
        base_err(err, "cupti: libcupti cannot be loaded: %s", dlerror());
        goto err;
    }
#define FN_LOAD(f)                                                                                 \
    *(void **)&s->f = dlsym(s->lib, #f);                                                           \
    if (s->f == NULL) {                                                                            \
        base_err(err, "cupti: libcupti lacks %s", #f);                                             \
        goto err;                                                                                  \
    }
    CUPTI_FNS(FN_LOAD)
#undef FN_LOAD
    *dpt_cupti_slot() = s;
    s->trace_clock = use_trace_clock(s);
    CUptiResult rc;
    if ((rc = s->cuptiActivityRegisterCallbacks(buf_requested, buf_completed)) != CUPTI_SUCCESS ||
        (rc = s->cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) != CUPTI_SUCCESS ||
        (rc = s->cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY)) != CUPTI_SUCCESS ||
        (rc = s->cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET)) != CUPTI_SUCCESS) {
        base_err(err, "cupti: cannot enable activity records (CUPTI error %d)", (int)rc);
        goto err;
    }
    if ((rc = s->cuptiSubscribe(&s->sub, api_callback, s)) != CUPTI_SUCCESS ||
        (rc = follow_calls(s, api_all)) != CUPTI_SUCCESS) {
        base_err(err, "cupti: cannot subscribe to API callbacks (CUPTI error %d)", (int)rc);
        goto err;
    }
    snapshot(s);
    return s;
err:
    cupti_close(s);
    return NULL;
}

static int cupti_poll(void *state, int64_t now_ns, gpu_msg_fn fn, void *ctx, char *err)
{
    struct cupti_src *s = state;
    gpu_msg_t m;
    if (now_ns - s->last_snap >= s->snap_ns)
        snapshot(s);
    if (now_ns - s->last_flush >= s->flush_ns) {
        s->cuptiActivityFlushAll(0);
        s->last_flush = now_ns;
    }
    /* The pairs go out before the events mapped with them. */
    if (s->nsnaps > 0) {
        memset(&m, 0, sizeof m);
        m.kind = GPU_MSG_SNAP;
        m.pid = s->o.pid;
        m.domain_a = "cupti";
        m.domain_b = "trace";
        m.snap = s->snaps;
        m.nsnap = s->nsnaps;
        fn(ctx, &m);
        s->nsnaps = 0;
    }
    pthread_mutex_lock(&s->mu);
    size_t nb = s->nbufs;
    uint8_t *bufs[MAX_BUFS];
    size_t valid[MAX_BUFS];
    for (size_t i = 0; i < nb; i++) {
        bufs[i] = s->bufs[i].buf;
        valid[i] = s->bufs[i].valid;
    }
    s->nbufs = 0;
    pthread_mutex_unlock(&s->mu);
    struct gpu_cupti_xlat x = {s->o.pid, s->map, s->o.names, scope_of, s};
    gpu_event_t *out = xcalloc(GPU_LINK_MAX_EVENTS, sizeof *out);
    int total = 0;
    for (size_t i = 0; i < nb; i++) {
        CUpti_Activity *rec = NULL;
        size_t n = 0;
        while (s->cuptiActivityGetNextRecord(bufs[i], valid[i], &rec) == CUPTI_SUCCESS) {
            if (gpu_cupti_translate(rec, &x, &out[n], NULL) != BASE_DEC_OK)
                continue;
            if (++n == GPU_LINK_MAX_EVENTS) {
                memset(&m, 0, sizeof m);
                m.kind = GPU_MSG_EV;
                m.pid = s->o.pid;
                m.ev = out;
                m.nev = n;
                fn(ctx, &m);
                total += (int)n;
                n = 0;
            }
        }
        if (n > 0) {
            memset(&m, 0, sizeof m);
            m.kind = GPU_MSG_EV;
            m.pid = s->o.pid;
            m.ev = out;
            m.nev = n;
            fn(ctx, &m);
            total += (int)n;
        }
        free(bufs[i]);
    }
    free(out);
    (void)err;
    return total;
}

static void cupti_close(void *state)
{
    struct cupti_src *s = state;
    if (s == NULL)
        return;
    if (s->lib != NULL && instance() == s) {
        if (s->sub != NULL)
            s->cuptiUnsubscribe(s->sub);
        s->cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        s->cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMCPY);
        s->cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMSET);
        s->cuptiActivityFlushAll(1);
    }
    if (instance() == s)
        *dpt_cupti_slot() = NULL;
    for (size_t i = 0; i < s->nbufs; i++)
        free(s->bufs[i].buf);
    /* libcupti stays loaded: its threads may still be running. */
    gpu_names_destroy(&s->own_names);
    gpu_clockmap_destroy(&s->map);
    pthread_mutex_destroy(&s->mu);
    free(s->corr);
    free(s);
}

static void cupti_counters(void *state, struct gpu_source_counters *out);

const struct gpu_source gpu_source_cupti = {
    .name = "cupti",
    .summary = "CUDA kernels, copies and memsets from CUPTI activity records "
               "(CUDA_INJECTION64_PATH=libdptrace_cupti.so)",
    .flags = GPU_SRC_IN_APP,
    .probe = cupti_probe,
    .open = cupti_open,
    .poll = cupti_poll,
    .counters = cupti_counters,
    .close = cupti_close,
};

/* ---- the libdptrace backend ---- */

static void *cb_open(const struct dpt_env *env, char *err)
{
    /* Periods only where set: the source's own defaults apply otherwise. */
    char opts[96];
    int n = snprintf(opts, sizeof opts, "api=%s", env->cuda_api_all ? "all" : "work");
    if (env->snapshot_ns > 0)
        n += snprintf(opts + n, sizeof opts - (size_t)n, ",snapshot_ms=%lld",
                      (long long)((env->snapshot_ns + 999999) / 1000000));
    if (env->flush_ns > 0)
        snprintf(opts + n, sizeof opts - (size_t)n, ",flush_ms=%lld",
                 (long long)((env->flush_ns + 999999) / 1000000));
    struct gpu_source_opts o = {
        .pid = env->pid,
        .options = opts,
        .names = env->names,
        .scope_now = dpt_scope_now,
        .host_event = dpt_host_event,
    };
    /* open copies what it keeps; the state it returns holds no pointer to o. */
    // cppcheck-suppress returnDanglingLifetime
    return gpu_source_find("cupti")->open(&o, err);
}

static int cb_poll(void *st, int64_t now, gpu_msg_fn fn, void *ctx)
{
    return gpu_source_find("cupti")->poll(st, now, fn, ctx, NULL);
}

static void cb_finish(void *st, int64_t timeout_ns, gpu_msg_fn fn, void *ctx)
{
    struct cupti_src *s = st;
    s->cuptiActivityFlushAll(1);
    cupti_poll(st, dpt_now(), fn, ctx, NULL);
}

static void cupti_counters(void *state, struct gpu_source_counters *out)
{
    struct cupti_src *s = state;
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&s->mu);
    out->dropped = s->dropped;
    pthread_mutex_unlock(&s->mu);
}

static uint32_t cb_devices(void *st)
{
    struct cupti_src *s = st;
    int n = 0;
    /* Linked for its annotations, the library may start before the
     * program loads CUDA: the driver is looked for until it is there. */
    if (s->ndevices == 0 && s->device_count == NULL) {
        void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
        if (cuda != NULL) {
            *(void **)&s->device_count = dlsym(cuda, "cuDeviceGetCount");
            dlclose(cuda); /* it stays: the program loaded it */
        }
    }
    if (s->ndevices == 0 && s->device_count != NULL && s->device_count(&n) == CUDA_SUCCESS && n > 0)
        s->ndevices = (uint32_t)n;
    return s->ndevices;
}

static uint64_t cb_dropped(void *st)
{
    struct gpu_source_counters c;
    gpu_source_find("cupti")->counters(st, &c);
    return c.dropped;
}

const struct dpt_backend dpt_backend_impl = {
    .name = "cupti",
    .open = cb_open,
    .poll = cb_poll,
    .finish = cb_finish,
    .devices = cb_devices,
    .dropped = cb_dropped,
};

/* Called by the CUDA driver when it loads this library
 * (CUDA_INJECTION64_PATH).  Returns 1 on success. */
int InitializeInjection(void);
int InitializeInjection(void)
{
    if (!dpt_process_start())
        return 0;
    if (dpt_backend_state() == NULL) {
        base_log(BASE_LOG_WARN, "dptrace", "CUDA activity will not be traced: %s",
                 dpt_backend_error());
        return 0;
    }
    return 1;
}
