/*
 * libcupti_floor.so — what CUPTI itself costs a CUDA program, for
 * bench/bench_cupti_gpu.sh: an injection library (CUDA_INJECTION64_PATH)
 * that asks CUPTI for what libdptrace_cupti.so asks on a kernel launch and
 * does nothing with it.  The same clock (CLOCK_MONOTONIC, where libcupti
 * takes one), the same activity records (kernels, copies, memsets:
 * buffers handed back unread) and, unless DPTOP_FLOOR=activity, the same
 * API callbacks (the runtime's and the driver's calls that do, wait for or
 * allocate work), empty.  What a program's calls take beyond this floor is
 * libdptrace's own.
 *
 * libcupti is opened with dlopen, like libdptrace_cupti.so does, so that
 * the library builds where only CUPTI's headers are.
 */
#include <cupti.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUF_SIZE (8u << 20)

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

static void CUPTIAPI on_call(void *ud, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                             const void *data)
{
    (void)ud, (void)domain, (void)id, (void)data;
}

/* The calls libdptrace_cupti.so follows by default (gpu/dptrace_cupti.c,
 * api=work): work, waits and allocations, runtime and driver. */
static const char *const work_prefixes[] = {
    "cudaLaunch",
    "cudaGraphLaunch",
    "cudaMemcpy",
    "cudaMemset",
    "cudaMalloc",
    "cudaFree",
    "cudaHostAlloc",
    "cudaEventRecord",
    "cudaStreamWaitEvent",
    "cuLaunch",
    "cuGraphLaunch",
    "cuMemcpy",
    "cuMemset",
    "cuMemAlloc",
    "cuMemFree",
    "cuMemHostAlloc",
    "cuEventRecord",
    "cuStreamWaitEvent",
    NULL,
};

static bool is_work(const char *name)
{
    if (strstr(name, "Synchronize") != NULL)
        return true;
    for (size_t i = 0; work_prefixes[i] != NULL; i++)
        if (strncmp(name, work_prefixes[i], strlen(work_prefixes[i])) == 0)
            return true;
    return false;
}

/* Every id of the domain that names such a call. */
static int follow(void *lib, CUpti_SubscriberHandle sub, CUpti_CallbackDomain domain,
                  CUpti_CallbackId size)
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
        if (name_of(domain, id, &name) == CUPTI_SUCCESS && name != NULL && is_work(name))
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
    const char *mode = getenv("DPTOP_FLOOR");
    if (mode != NULL && strcmp(mode, "activity") == 0) {
        fprintf(stderr, "cupti_floor: activity records\n");
        return 1;
    }
    CUpti_SubscriberHandle sub;
    int rt = -1, drv = -1;
    if (subscribe(&sub, on_call, NULL) == CUPTI_SUCCESS) {
        rt = follow(lib, sub, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE);
        drv = follow(lib, sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE);
    }
    fprintf(stderr,
            "cupti_floor: activity records and empty callbacks on %d runtime, %d driver ids\n", rt,
            drv);
    return 1;
}
