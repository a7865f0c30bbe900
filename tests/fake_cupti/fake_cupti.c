/*
 * A fake libcupti.so for tests: the CUPTI subset libdptrace_cupti.so uses,
 * with no GPU and no driver, so that its backend (callbacks, the runtime
 * calls it follows, driver launches outside them, activity buffers, clock
 * pairs) is tested on every build machine.
 *
 *   - subscriptions and the callbacks enabled (per domain, per id) are
 *     kept; cuptiGetCallbackName names a few runtime ids as CUPTI does
 *     ("cudaLaunchKernel_v7000") and a few driver ids, the others have none;
 *   - cuptiGetTimestamp and the records' times are CLOCK_MONOTONIC plus
 *     FAKECUPTI_OFFSET_NS (a clock of its own, as CUPTI's CLOCK_REALTIME
 *     is), or the clock cuptiActivityRegisterTimestampCallback was given;
 *     FAKECUPTI_NO_TS_CALLBACK makes that refuse (CUPTI_ERROR_NOT_SUPPORTED,
 *     for an older libcupti), FAKECUPTI_TS_CALLBACK_IGNORED makes it
 *     accept and keep its own clock;
 *   - the test drives it through fakecupti_call(): an API call whose
 *     callbacks are issued (when enabled) around the work it records, and
 *     fakecupti_exit_only(): a call whose entry was before the
 *     subscription.  Activity records (kernel, memcpy, memset) are queued
 *     and handed out in a buffer of the library's asking at
 *     cuptiActivityFlushAll; at exit it says how many unforced flushes
 *     came over how long.
 *
 * Its state is one static struct, as in the libraries it stands for.
 */
#include <cupti.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKECUPTI_OFFSET_NS 1000000000000000000ULL
#define MAX_PENDING         (256u << 10)
#define MAX_IDS             4096

/* The test's side: what the call puts on the GPU. */
enum fakecupti_work {
    FAKECUPTI_NONE,
    FAKECUPTI_KERNEL,
    FAKECUPTI_MEMCPY,
    FAKECUPTI_MEMSET,
    FAKECUPTI_MEMCPY_D2H
};

static struct {
    pthread_mutex_t mu;
    CUpti_BuffersCallbackRequestFunc requested;
    CUpti_BuffersCallbackCompleteFunc completed;
    CUpti_CallbackFunc callback;
    void *userdata;
    bool subscribed;
    bool domain_all[4];
    uint8_t enabled[4][MAX_IDS];
    bool activity[64];
    uint8_t pending[MAX_PENDING];
    size_t npending;
    uint32_t corr;
    size_t dropped; /* what cuptiActivityGetNumDroppedRecords says next */
} fc = {.mu = PTHREAD_MUTEX_INITIALIZER};

static uint64_t(CUPTIAPI *ts_callback)(void);

static uint64_t now_ns(void)
{
    if (ts_callback != NULL)
        return ts_callback();
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec + FAKECUPTI_OFFSET_NS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(uint64_t(CUPTIAPI *fn)(void))
{
    if (fn == NULL)
        return CUPTI_ERROR_INVALID_PARAMETER;
    const char *refuse = getenv("FAKECUPTI_NO_TS_CALLBACK");
    const char *ignore = getenv("FAKECUPTI_TS_CALLBACK_IGNORED");
    if (refuse != NULL && *refuse != '\0')
        return CUPTI_ERROR_NOT_SUPPORTED;
    if (ignore == NULL || *ignore == '\0')
        ts_callback = fn;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp)
{
    *timestamp = now_ns();
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                    CUpti_BuffersCallbackCompleteFunc done)
{
    fc.requested = req;
    fc.completed = done;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
    if ((unsigned)kind >= 64)
        return CUPTI_ERROR_INVALID_KIND;
    fc.activity[kind] = true;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind kind)
{
    if ((unsigned)kind >= 64)
        return CUPTI_ERROR_INVALID_KIND;
    fc.activity[kind] = false;
    return CUPTI_SUCCESS;
}

static size_t record_size(const CUpti_Activity *r)
{
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET:
        return sizeof(CUpti_ActivityMemset4);
    default:
        return 0;
    }
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
                                                CUpti_Activity **record)
{
    size_t off = 0;
    if (*record != NULL)
        off = (size_t)((uint8_t *)*record - buffer) + record_size(*record);
    if (off >= valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = (CUpti_Activity *)(buffer + off);
    return record_size(*record) ? CUPTI_SUCCESS : CUPTI_ERROR_INVALID_KIND;
}

/* Unforced flushes and their first and last time: said at exit. */
static struct {
    unsigned n;
    struct timespec first, last;
} flushes;

__attribute__((destructor)) static void say_flushes(void)
{
    double span = (double)(flushes.last.tv_sec - flushes.first.tv_sec) +
                  (double)(flushes.last.tv_nsec - flushes.first.tv_nsec) / 1e9;
    fprintf(stderr, "fakecupti: %u unforced flushes over %.3f s\n", flushes.n, span);
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
    if (flag == 0) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (flushes.n++ == 0)
            flushes.first = now;
        flushes.last = now;
    }
    pthread_mutex_lock(&fc.mu);
    size_t n = fc.npending;
    uint8_t *buf = NULL;
    size_t size = 0, max = 0;
    if (n > 0 && fc.requested != NULL)
        fc.requested(&buf, &size, &max);
    if (buf == NULL || size < n) {
        pthread_mutex_unlock(&fc.mu);
        return n == 0 ? CUPTI_SUCCESS : CUPTI_ERROR_UNKNOWN;
    }
    memcpy(buf, fc.pending, n);
    fc.npending = 0;
    pthread_mutex_unlock(&fc.mu);
    fc.completed(NULL, 0, buf, size, n);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream,
                                                       size_t *dropped)
{
    (void)ctx;
    (void)stream;
    pthread_mutex_lock(&fc.mu);
    *dropped = fc.dropped;
    fc.dropped = 0;
    pthread_mutex_unlock(&fc.mu);
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb,
                                    void *userdata)
{
    if (fc.subscribed)
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    fc.callback = cb;
    fc.userdata = userdata;
    fc.subscribed = true;
    *sub = (CUpti_SubscriberHandle)&fc;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle sub)
{
    (void)sub;
    fc.subscribed = false;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle sub,
                                       CUpti_CallbackDomain domain)
{
    (void)sub;
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API && domain != CUPTI_CB_DOMAIN_RUNTIME_API)
        return CUPTI_ERROR_INVALID_PARAMETER;
    fc.domain_all[domain] = enable != 0;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle sub,
                                         CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    (void)sub;
    if ((domain != CUPTI_CB_DOMAIN_DRIVER_API && domain != CUPTI_CB_DOMAIN_RUNTIME_API) ||
        cbid >= MAX_IDS)
        return CUPTI_ERROR_INVALID_PARAMETER;
    fc.enabled[domain][cbid] = enable != 0;
    return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid,
                                          const char **name)
{
    static const struct {
        CUpti_CallbackDomain domain;
        uint32_t id;
        const char *name;
    } names[] = {
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
         "cudaGetDevice_v3020"},
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
         "cudaMalloc_v3020"},
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
         "cudaMemcpyAsync_v3020"},
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
         "cudaMemsetAsync_v3020"},
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
         "cudaDeviceSynchronize_v3020"},
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
         "cudaLaunchKernel_v7000"},
        /* an entry point newer than these headers */
        {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE + 5,
         "cudaLaunchKernelFuture_v99000"},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel"},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
         "cuMemcpyDtoHAsync_v2"},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch"},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
         "cuStreamSynchronize"},
        {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, "cuCtxGetCurrent"},
    };
    /* FAKECUPTI_NO_DRIVER_NAMES: an older libcupti that names no driver id. */
    const char *old = getenv("FAKECUPTI_NO_DRIVER_NAMES");
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API && old != NULL && *old != '\0')
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].domain == domain && names[i].id == cbid) {
            *name = names[i].name;
            return CUPTI_SUCCESS;
        }
    return CUPTI_ERROR_INVALID_PARAMETER;
}

static bool followed(CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    return fc.subscribed && (fc.domain_all[domain] || (cbid < MAX_IDS && fc.enabled[domain][cbid]));
}

static void issue(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const char *fn,
                  CUpti_ApiCallbackSite site, uint32_t corr, uint64_t *data)
{
    if (!followed(domain, cbid))
        return;
    CUpti_CallbackData d;
    memset(&d, 0, sizeof d);
    d.callbackSite = site;
    d.functionName = fn;
    d.correlationData = data;
    d.correlationId = corr;
    fc.callback(fc.userdata, domain, cbid, &d);
}

static void put_record(const void *r, size_t size)
{
    pthread_mutex_lock(&fc.mu);
    if (fc.npending + size <= MAX_PENDING) {
        memcpy(fc.pending + fc.npending, r, size);
        fc.npending += size;
    }
    pthread_mutex_unlock(&fc.mu);
}

/* The work of call corr, 2 µs long, recorded as CUPTI would. */
static void record_work(enum fakecupti_work work, uint32_t corr, const char *kernel)
{
    uint64_t t = now_ns();
    if (work == FAKECUPTI_KERNEL && fc.activity[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]) {
        CUpti_ActivityKernel10 k;
        memset(&k, 0, sizeof k);
        k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k.start = t;
        k.end = t + 2000;
        k.streamId = 7;
        k.gridX = k.gridY = k.gridZ = 1;
        k.blockX = 128;
        k.blockY = k.blockZ = 1;
        k.correlationId = corr;
        k.name = kernel;
        put_record(&k, sizeof k);
    } else if ((work == FAKECUPTI_MEMCPY || work == FAKECUPTI_MEMCPY_D2H) &&
               fc.activity[CUPTI_ACTIVITY_KIND_MEMCPY]) {
        CUpti_ActivityMemcpy6 m;
        memset(&m, 0, sizeof m);
        m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
        bool d2h = work == FAKECUPTI_MEMCPY_D2H;
        m.copyKind = d2h ? CUPTI_ACTIVITY_MEMCPY_KIND_DTOH : CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
        m.bytes = d2h ? 8192 : 4096;
        m.start = t;
        m.end = t + 2000;
        m.streamId = 7;
        m.correlationId = corr;
        put_record(&m, sizeof m);
    } else if (work == FAKECUPTI_MEMSET && fc.activity[CUPTI_ACTIVITY_KIND_MEMSET]) {
        CUpti_ActivityMemset4 m;
        memset(&m, 0, sizeof m);
        m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
        m.bytes = 512;
        m.start = t;
        m.end = t + 2000;
        m.streamId = 7;
        m.correlationId = corr;
        put_record(&m, sizeof m);
    }
}

/*
 * One API call: its entry callback, the work (a runtime call launches
 * through the driver: with `nested`, a cuLaunchKernel is issued inside it,
 * and the work carries the outer call's id), its exit callback.  Returns
 * the call's correlation id.
 */
uint32_t fakecupti_call(int domain, uint32_t cbid, const char *fn, int work, const char *kernel,
                        int nested);
uint32_t fakecupti_call(int domain, uint32_t cbid, const char *fn, int work, const char *kernel,
                        int nested)
{
    uint32_t corr = __atomic_add_fetch(&fc.corr, 1, __ATOMIC_RELAXED);
    uint64_t data = 0;
    issue((CUpti_CallbackDomain)domain, cbid, fn, CUPTI_API_ENTER, corr, &data);
    if (nested) {
        uint32_t inner = __atomic_add_fetch(&fc.corr, 1, __ATOMIC_RELAXED);
        uint64_t idata = 0;
        issue(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel",
              CUPTI_API_ENTER, inner, &idata);
        issue(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel",
              CUPTI_API_EXIT, inner, &idata);
    }
    record_work((enum fakecupti_work)work, corr, kernel);
    issue((CUpti_CallbackDomain)domain, cbid, fn, CUPTI_API_EXIT, corr, &data);
    return corr;
}

/*
 * CUPTI completing many buffers at once (as its own thread does when work
 * piles up): n buffers of one kernel record each, handed over back to back,
 * and `lost` records CUPTI itself had no room for.
 */
void fakecupti_flood(int n, size_t lost, const char *kernel);
void fakecupti_flood(int n, size_t lost, const char *kernel)
{
    cuptiActivityFlushAll(0); /* the records before these go first, as in CUPTI */
    pthread_mutex_lock(&fc.mu);
    fc.dropped += lost;
    pthread_mutex_unlock(&fc.mu);
    for (int i = 0; i < n; i++) {
        uint32_t corr = __atomic_add_fetch(&fc.corr, 1, __ATOMIC_RELAXED);
        CUpti_ActivityKernel10 k;
        memset(&k, 0, sizeof k);
        k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k.start = now_ns();
        k.end = k.start + 1000;
        k.streamId = 9;
        k.correlationId = corr;
        k.name = kernel;
        uint8_t *buf = NULL;
        size_t size = 0, max = 0;
        fc.requested(&buf, &size, &max);
        if (buf == NULL || size < sizeof k)
            continue;
        memcpy(buf, &k, sizeof k);
        fc.completed(NULL, 0, buf, size, sizeof k);
    }
}

/* The exit of a call whose entry came before the subscription. */
void fakecupti_exit_only(int domain, uint32_t cbid, const char *fn);
void fakecupti_exit_only(int domain, uint32_t cbid, const char *fn)
{
    uint64_t data = 0;
    uint32_t corr = __atomic_add_fetch(&fc.corr, 1, __ATOMIC_RELAXED);
    issue((CUpti_CallbackDomain)domain, cbid, fn, CUPTI_API_EXIT, corr, &data);
}
