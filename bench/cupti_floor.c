/*
 * libcupti_floor.so — what CUPTI itself costs a CUDA program, for
 * bench/bench_cupti_gpu.sh: an injection library (CUDA_INJECTION64_PATH)
 * that asks CUPTI for what libdptrace_cupti.so asks on a kernel launch and
 * does nothing with it.  The same clock (CLOCK_MONOTONIC, where libcupti
 * takes one), the same activity records (kernels, copies, memsets; 1 MiB
 * buffers asked for every 20 ms and handed back unread) and, unless
 * DPTEST_FLOOR=activity, the same API callbacks (gpu/cupti_work.h: the
 * runtime's and the driver's calls that do, wait for or allocate work),
 * empty.  What a program's calls take beyond this floor is
 * libdptrace's own.
 *
 * libcupti is opened with dlopen, like libdptrace_cupti.so does, so that
 * the library builds where only CUPTI's headers are.
 */
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/cupti_work.h"

#define BUF_SIZE (1u << 20) /* libdptrace_cupti.so's */

static void CUPTIAPI buf_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
    *buf = aligned_alloc(8, BUF_SIZE);
    *size = *buf != NULL ? BUF_SIZE : 0;
    *max_records = 0;
}

static void CUPTIAPI buf_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                   size_t valid)
{
    (void)ctx, (void)stream, (void)size, (void)valid;
    free(buf);
}

static uint64_t CUPTIAPI trace_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Records asked for every 20 ms, as libdptrace_cupti.so does by default
 * (a live consumer must ask: a buffer may take long to fill). */
static CUptiResult (*flush_all)(uint32_t);

static void *flusher(void *arg)
{
    (void)arg;
    for (;;) {
        nanosleep(&(struct timespec){0, 20000000}, NULL);
        flush_all(0);
    }
    return NULL;
}

static void CUPTIAPI on_call(void *ud, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                             const void *data)
{
    (void)ud, (void)domain, (void)id, (void)data;
}

/* Every id of the domain that names one of those calls. */
static int follow(void *lib, CUpti_SubscriberHandle sub, CUpti_CallbackDomain domain,
                  CUpti_CallbackId size, const char *const *work)
{
    CUptiResult (*name_of)(CUpti_CallbackDomain, uint32_t, const char **);
    CUptiResult (*enable)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId);
    *(void **)&name_of = dlsym(lib, "cuptiGetCallbackName");
    *(void **)&enable = dlsym(lib, "cuptiEnableCallback");
    if (name_of == NULL || enable == NULL)
        return -1;
    int n = 0;
    for (CUpti_CallbackId id = 1; id < size + 1024; id++) {
        const char *name = NULL;
        if (name_of(domain, id, &name) == CUPTI_SUCCESS && name != NULL &&
            gpu_cupti_is_work(name, work))
            n += enable(1, sub, domain, id) == CUPTI_SUCCESS;
    }
    return n;
}

int InitializeInjection(void);
int InitializeInjection(void)
{
    void *lib = dlopen("libcupti.so", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        lib = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
    CUptiResult (*reg)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*act)(CUpti_ActivityKind);
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    if (lib == NULL || (*(void **)&reg = dlsym(lib, "cuptiActivityRegisterCallbacks")) == NULL ||
        (*(void **)&act = dlsym(lib, "cuptiActivityEnable")) == NULL ||
        (*(void **)&subscribe = dlsym(lib, "cuptiSubscribe")) == NULL) {
        fprintf(stderr, "cupti_floor: no usable libcupti: %s\n", lib ? "entry points" : dlerror());
        return 0;
    }
    CUptiResult (*clock)(uint64_t(CUPTIAPI *)(void));
    *(void **)&clock = dlsym(lib, "cuptiActivityRegisterTimestampCallback");
    if (clock != NULL)
        clock(trace_clock_now);
    if (reg(buf_requested, buf_completed) != CUPTI_SUCCESS ||
        act(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS ||
        act(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS ||
        act(CUPTI_ACTIVITY_KIND_MEMSET) != CUPTI_SUCCESS) {
        fprintf(stderr, "cupti_floor: activity records refused\n");
        return 0;
    }
    pthread_t t;
    if ((*(void **)&flush_all = dlsym(lib, "cuptiActivityFlushAll")) != NULL &&
        pthread_create(&t, NULL, flusher, NULL) == 0)
        pthread_detach(t);
    const char *mode = getenv("DPTEST_FLOOR");
    if (mode != NULL && strcmp(mode, "activity") == 0) {
        fprintf(stderr, "cupti_floor: activity records\n");
        return 1;
    }
    CUpti_SubscriberHandle sub;
    int rt = -1, drv = -1;
    if (subscribe(&sub, on_call, NULL) == CUPTI_SUCCESS) {
        rt = follow(lib, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE,
                    gpu_cupti_runtime_work);
        drv = follow(lib, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE,
                     gpu_cupti_driver_work);
    }
    fprintf(stderr,
            "cupti_floor: activity records and empty callbacks on %d runtime, %d driver ids\n", rt,
            drv);
    return 1;
}
