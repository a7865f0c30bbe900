/*
 * cupti_app — a CUDA program's calls, played through the fake libcupti
 * (tests/fake_cupti/fake_cupti.c) into libdptrace_cupti.so, loaded the way
 * the CUDA driver loads it (InitializeInjection).  In a range "forward":
 *
 *   1. the exit of a cudaMalloc whose entry came before CUPTI was on;
 *   2. cudaLaunchKernel of a C++ kernel, launching through cuLaunchKernel;
 *   3. cudaGetDevice (a query);
 *   4. cuLaunchKernel of an NCCL kernel, called directly (as cuBLAS, NCCL
 *      and Triton do);
 *   5. cudaMemcpyAsync, cudaMemsetAsync;
 *   6. a launch through a runtime entry point newer than the headers;
 *   7. through the driver, directly (as XLA does): cuMemcpyDtoHAsync,
 *      cuGraphLaunch, cuStreamSynchronize, and cuCtxGetCurrent (a query);
 *
 * then, outside the range, cudaDeviceSynchronize; then 300 activity buffers
 * handed over back to back, with 7 records CUPTI says it lost; then it runs
 * on for 0.3 s.  Prints one line per call
 * ("call NAME CORR") for the test to check against.
 *
 * With --bench N T it only times, on T threads at once, N calls each of a
 * runtime call the library does not follow (cudaGetDevice) and of one it
 * does (cudaLaunchKernel, with no GPU work): the difference is what the
 * library's callbacks cost a call, CUPTI left out (bench/bench_cupti_fake.sh).
 *
 * With --threads T, T threads at once each open a range "thread-I" and
 * make 100 kernel launches in it (cudaLaunchKernel), then the main thread
 * calls cudaDeviceSynchronize: every kernel must carry its own thread's
 * range.
 *
 * Usage: cupti_app LIBRARY [--bench N T | --threads T]   (libcupti.so and libcuda.so.1:
 * the fakes, found first; the driver's device count answers from its second
 * call)
 */
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef uint32_t (*call_fn)(int domain, uint32_t cbid, const char *fn, int work, const char *kernel,
                            int nested);
typedef void (*exit_fn)(int domain, uint32_t cbid, const char *fn);
typedef void (*flood_fn)(int n, size_t lost, const char *kernel);

enum { NONE, KERNEL, MEMCPY, MEMSET, MEMCPY_D2H };

static struct {
    call_fn call;
    long n;
    pthread_barrier_t start;
} bench;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* One thread's ns per call: [0] not followed, [1] followed. */
static void *bench_thread(void *arg)
{
    double *out = arg;
    static const struct {
        uint32_t cbid;
        const char *fn;
    } calls[2] = {{CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, "cudaGetDevice"},
                  {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel"}};
    pthread_barrier_wait(&bench.start);
    /* Timed in bursts of 256 with 200 µs untimed between: the library's
     * thread empties the rings meanwhile, so events are kept, not dropped
     * (a drop costs less), as at any rate a real program calls. */
    for (int k = 0; k < 2; k++) {
        double busy = 0;
        for (long done = 0; done < bench.n;) {
            long burst = bench.n - done < 256 ? bench.n - done : 256;
            double t0 = now_ns();
            for (long i = 0; i < burst; i++)
                bench.call(CUPTI_CB_DOMAIN_RUNTIME_API, calls[k].cbid, calls[k].fn, NONE, NULL, 0);
            busy += now_ns() - t0;
            done += burst;
            nanosleep(&(struct timespec){0, 200000}, NULL);
        }
        out[k] = busy / (double)bench.n;
    }
    return NULL;
}

static struct {
    call_fn call;
    void (*push)(const char *);
    void (*pop)(void);
    pthread_barrier_t start;
} ranged;

static void *ranged_thread(void *arg)
{
    char name[32];
    snprintf(name, sizeof name, "thread-%d", (int)(intptr_t)arg);
    pthread_barrier_wait(&ranged.start);
    ranged.push(name);
    for (int i = 0; i < 100; i++)
        ranged.call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                    "cudaLaunchKernel", KERNEL, "_Z12scale_kernelIfEvPT_S0_i", 0);
    ranged.pop();
    return NULL;
}

static int run_ranged(call_fn call, void (*push)(const char *), void (*pop)(void), int nthreads)
{
    ranged.call = call;
    ranged.push = push;
    ranged.pop = pop;
    pthread_barrier_init(&ranged.start, NULL, (unsigned)nthreads);
    pthread_t th[64];
    for (int i = 0; i < nthreads; i++)
        pthread_create(&th[i], NULL, ranged_thread, (void *)(intptr_t)i);
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
         "cudaDeviceSynchronize", NONE, NULL, 0);
    printf("threads %d 100\n", nthreads);
    fflush(stdout);
    nanosleep(&(struct timespec){0, 100000000}, NULL);
    return 0;
}

static int run_bench(call_fn call, long n, int nthreads)
{
    bench.call = call;
    bench.n = n;
    pthread_barrier_init(&bench.start, NULL, (unsigned)nthreads);
    pthread_t th[64];
    double per[64][2];
    for (int i = 1; i < nthreads; i++)
        pthread_create(&th[i], NULL, bench_thread, per[i]);
    bench_thread(per[0]);
    double sum[2] = {0, 0};
    for (int i = 0; i < nthreads; i++) {
        if (i > 0)
            pthread_join(th[i], NULL);
        sum[0] += per[i][0];
        sum[1] += per[i][1];
    }
    printf("bench: %d threads, %ld calls each: not followed %.1f ns, followed %.1f ns per call\n",
           nthreads, n, sum[0] / nthreads, sum[1] / nthreads);
    return 0;
}

int main(int argc, char **argv)
{
    long bench_n = 0;
    int nthreads = 1, ranged_threads = 0;
    if (argc == 5 && strcmp(argv[2], "--bench") == 0) {
        bench_n = atol(argv[3]);
        nthreads = atoi(argv[4]);
    } else if (argc == 4 && strcmp(argv[2], "--threads") == 0) {
        ranged_threads = nthreads = atoi(argv[3]);
    }
    if ((argc != 2 && bench_n == 0 && ranged_threads == 0) || bench_n < 0 || nthreads < 1 ||
        nthreads > 64) {
        fprintf(stderr, "usage: cupti_app LIBRARY [--bench N THREADS | --threads THREADS]\n");
        return 2;
    }
    /* The fakes first, global: the library's dlopen("libcupti.so") gets
     * this one, and finds the (fake) driver loaded, as the driver is. */
    void *fake = dlopen("libcupti.so", RTLD_NOW | RTLD_GLOBAL);
    if (fake != NULL && dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL) == NULL)
        fake = NULL;
    void *lib = fake ? dlopen(argv[1], RTLD_NOW | RTLD_LOCAL) : NULL;
    if (lib == NULL) {
        fprintf(stderr, "cupti_app: %s\n", dlerror());
        return 1;
    }
    int (*init)(void);
    void (*push)(const char *);
    void (*pop)(void);
    call_fn call;
    exit_fn exit_only;
    flood_fn flood;
    *(void **)&init = dlsym(lib, "InitializeInjection");
    *(void **)&push = dlsym(lib, "dpt_range_push");
    *(void **)&pop = dlsym(lib, "dpt_range_pop");
    *(void **)&call = dlsym(fake, "fakecupti_call");
    *(void **)&exit_only = dlsym(fake, "fakecupti_exit_only");
    *(void **)&flood = dlsym(fake, "fakecupti_flood");
    if (!init || !push || !pop || !call || !exit_only || !flood) {
        fprintf(stderr, "cupti_app: missing entry points\n");
        return 1;
    }
    printf("InitializeInjection: %d\n", init());
    if (bench_n > 0)
        return run_bench(call, bench_n, nthreads);
    if (ranged_threads > 0)
        return run_ranged(call, push, pop, ranged_threads);
    const int rt = CUPTI_CB_DOMAIN_RUNTIME_API, drv = CUPTI_CB_DOMAIN_DRIVER_API;
    push("forward");
    exit_only(rt, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc");
    printf("call cudaLaunchKernel %u\n",
           call(rt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel", KERNEL,
                "_Z12scale_kernelIfEvPT_S0_i", 1));
    printf("call cudaGetDevice %u\n",
           call(rt, CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, "cudaGetDevice", NONE, NULL, 0));
    printf("call cuLaunchKernel %u\n",
           call(drv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, "cuLaunchKernel", KERNEL,
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0));
    printf("call cudaMemcpyAsync %u\n", call(rt, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
                                             "cudaMemcpyAsync", MEMCPY, NULL, 0));
    printf("call cudaMemsetAsync %u\n", call(rt, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
                                             "cudaMemsetAsync", MEMSET, NULL, 0));
    printf("call cudaLaunchKernelFuture %u\n",
           call(rt, CUPTI_RUNTIME_TRACE_CBID_SIZE + 5, "cudaLaunchKernelFuture", KERNEL,
                "spin_kernel", 1));
    printf("call cuMemcpyDtoHAsync_v2 %u\n", call(drv, CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2,
                                                  "cuMemcpyDtoHAsync_v2", MEMCPY_D2H, NULL, 0));
    printf("call cuGraphLaunch %u\n", call(drv, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
                                           "cuGraphLaunch", KERNEL, "graph_kernel", 0));
    printf("call cuStreamSynchronize %u\n", call(drv, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
                                                 "cuStreamSynchronize", NONE, NULL, 0));
    printf("call cuCtxGetCurrent %u\n",
           call(drv, CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, "cuCtxGetCurrent", NONE, NULL, 0));
    pop();
    printf("call cudaDeviceSynchronize %u\n",
           call(rt, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, "cudaDeviceSynchronize",
                NONE, NULL, 0));
    /* CUPTI hands over 300 buffers back to back, and says it lost 7
     * records: each record is then delivered or counted as dropped. */
    flood(300, 7, "flood_kernel");
    printf("flood 300 7\n");
    fflush(stdout);
    /* Running on for 0.3 s: meanwhile the library asks for records on its
     * own (the fake counts how often). */
    nanosleep(&(struct timespec){0, 300000000}, NULL);
    return 0;
}
