/*
 * hip_app — a small HIP application for the libdptrace tests, linked
 * against the fake libamdhip64 (tests/fake_hip/fake_hip.c).  Each thread
 * runs `steps` training-like steps:
 *
 *   step n                                   (dpt_step_begin / end)
 *     forward:  fwd_gemm (hipLaunchKernel), mod_kernel (hipModuleLaunchKernel)
 *     backward: bwd_gemm (hipExtLaunchKernel), unregistered_kernel
 *               (hipLaunchKernel, named only through dladdr),
 *               mod_kernel (hipExtModuleLaunchKernel)
 *     io:       hipMemcpyAsync H2D, hipMemsetAsync, hipMemcpy D2H (sync)
 *     mark "step_done", hipStreamSynchronize on both streams
 *
 * Kernels run for --kernel-us microseconds.  The annotations are weak
 * references: without libdptrace the program runs untraced.  With --multi
 * it also launches one hipLaunchCooperativeKernelMultiDevice on 2 devices.
 */
#include <hip/hip_runtime_api.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/dptrace.h"

#pragma weak dpt_range_push
#pragma weak dpt_range_pop
#pragma weak dpt_step_begin
#pragma weak dpt_step_end
#pragma weak dpt_mark

#define COPY_BYTES (1 << 20)
#define SET_BYTES  4096
#define D2H_BYTES  65536

/* hip_ext.h is C++ only; the runtime's symbol has a C++ name. */
hipError_t
app_ext_module_launch(hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t lx,
                      uint32_t ly, uint32_t lz, size_t shm, hipStream_t s, void **params,
                      void **extra, hipEvent_t e0, hipEvent_t e1,
                      uint32_t flags) __asm__("_Z24hipExtModuleLaunchKernelP18ihipModuleSymbol_"
                                              "tjjjjjjmP12ihipStream_tPPvS4_P11ihipE"
                                              "vent_tS6_j");
/* What hipcc-generated code calls to register a kernel's host stub. */
void __hipRegisterFunction(void **modules, const void *host, char *dev_fn, const char *dev_name,
                           unsigned int limit, void *tid, void *bid, void *bdim, void *gdim,
                           int *wsize);

/* Host stubs: their addresses identify the kernels. */
void fwd_gemm(int64_t ns);
void bwd_gemm(int64_t ns);
void unregistered_kernel(int64_t ns);
/* Distinct bodies, so that the compiler never folds them into one address. */
static volatile int64_t sink;
void fwd_gemm(int64_t ns)
{
    sink = ns;
}
void bwd_gemm(int64_t ns)
{
    sink = ns + 1;
}
void unregistered_kernel(int64_t ns)
{
    sink = ns + 2;
}

struct opts {
    int threads;
    int steps;
    int64_t kernel_ns;
    bool multi;
};

static void push(const char *n)
{
    if (dpt_range_push)
        dpt_range_push(n);
}
static void pop(void)
{
    if (dpt_range_pop)
        dpt_range_pop();
}

#define CHECK(call)                                                                                \
    do {                                                                                           \
        hipError_t rc_ = (call);                                                                   \
        if (rc_ != hipSuccess) {                                                                   \
            fprintf(stderr, "hip_app: %s failed: %d\n", #call, (int)rc_);                          \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static void *run(void *arg)
{
    const struct opts *o = arg;
    hipStream_t s1, s2;
    hipModule_t mod;
    hipFunction_t fmod;
    void *dev;
    char *host = malloc(COPY_BYTES);
    memset(host, 7, COPY_BYTES);
    CHECK(hipStreamCreate(&s1));
    CHECK(hipStreamCreateWithFlags(&s2, hipStreamNonBlocking));
    CHECK(hipMalloc(&dev, COPY_BYTES));
    CHECK(hipModuleLoad(&mod, "fake_module.co"));
    CHECK(hipModuleGetFunction(&fmod, mod, "mod_kernel"));
    int64_t dur = o->kernel_ns;
    void *args[] = {&dur};
    dim3 grid = {4, 2, 1}, block = {256, 1, 1};
    for (int step = 0; step < o->steps; step++) {
        if (dpt_step_begin)
            dpt_step_begin((uint64_t)step);
        push("forward");
        CHECK(hipLaunchKernel((const void *)fwd_gemm, grid, block, args, 0, s1));
        CHECK(hipModuleLaunchKernel(fmod, 8, 1, 1, 64, 1, 1, 0, s1, args, NULL));
        pop();
        push("backward");
        CHECK(hipExtLaunchKernel((const void *)bwd_gemm, grid, block, args, 0, s1, NULL, NULL, 0));
        CHECK(hipLaunchKernel((const void *)unregistered_kernel, grid, block, args, 0, s1));
        CHECK(app_ext_module_launch(fmod, 1024, 1, 1, 256, 1, 1, 0, s1, args, NULL, NULL, NULL, 0));
        pop();
        push("io");
        CHECK(hipMemcpyAsync(dev, host, COPY_BYTES, hipMemcpyHostToDevice, s2));
        CHECK(hipMemsetAsync(dev, 0, SET_BYTES, s2));
        CHECK(hipMemcpy(host, dev, D2H_BYTES, hipMemcpyDeviceToHost));
        pop();
        if (dpt_mark)
            dpt_mark("step_done");
        CHECK(hipStreamSynchronize(s1));
        CHECK(hipStreamSynchronize(s2));
        if (dpt_step_end)
            dpt_step_end();
    }
    CHECK(hipDeviceSynchronize());
    if (host[0] != 0) { /* the memset reached the device buffer, the D2H copy brought it back */
        fprintf(stderr, "hip_app: copies did not happen\n");
        exit(1);
    }
    CHECK(hipStreamDestroy(s1));
    CHECK(hipStreamDestroy(s2));
    CHECK(hipFree(dev));
    free(fmod);
    CHECK(hipModuleUnload(mod));
    free(host);
    return NULL;
}

static void multi(int64_t ns)
{
    hipStream_t s[2];
    int64_t dur = ns;
    void *args[] = {&dur};
    hipLaunchParams p[2];
    for (int d = 0; d < 2; d++) {
        CHECK(hipSetDevice(d));
        CHECK(hipStreamCreate(&s[d]));
        p[d].func = (void *)fwd_gemm;
        p[d].gridDim = (dim3){2, 1, 1};
        p[d].blockDim = (dim3){64, 1, 1};
        p[d].args = args;
        p[d].sharedMem = 0;
        p[d].stream = s[d];
    }
    CHECK(hipSetDevice(0));
    CHECK(hipLaunchCooperativeKernelMultiDevice(p, 2, 0));
    for (int d = 0; d < 2; d++) {
        CHECK(hipStreamSynchronize(s[d]));
        CHECK(hipStreamDestroy(s[d]));
    }
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    struct opts o = {1, 3, 200000, false};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            o.threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            o.steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--kernel-us") && i + 1 < argc)
            o.kernel_ns = atoll(argv[++i]) * 1000;
        else if (!strcmp(argv[i], "--multi"))
            o.multi = true;
        else {
            fprintf(stderr, "usage: hip_app [--threads N] [--steps N] [--kernel-us N] [--multi]\n");
            return 2;
        }
    }
    if (o.threads < 1 || o.threads > 64 || o.steps < 0 || o.kernel_ns < 0) {
        fprintf(stderr, "hip_app: bad arguments\n");
        return 2;
    }
    __hipRegisterFunction(NULL, (const void *)fwd_gemm, NULL, "fwd_gemm", 0, NULL, NULL, NULL, NULL,
                          NULL);
    __hipRegisterFunction(NULL, (const void *)bwd_gemm, NULL, "bwd_gemm", 0, NULL, NULL, NULL, NULL,
                          NULL);
    double t0 = now_ms();
    pthread_t th[64];
    for (int i = 0; i < o.threads; i++)
        if (pthread_create(&th[i], NULL, run, &o) != 0) {
            fprintf(stderr, "hip_app: cannot start a thread\n");
            return 1;
        }
    for (int i = 0; i < o.threads; i++)
        pthread_join(th[i], NULL);
    if (o.multi)
        multi(o.kernel_ns);
    printf("hip_app: ok threads=%d steps=%d elapsed_ms=%.1f\n", o.threads, o.steps, now_ms() - t0);
    return 0;
}
