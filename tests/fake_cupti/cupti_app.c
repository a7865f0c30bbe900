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
 * Usage: cupti_app LIBRARY   (libcupti.so and libcuda.so.1: the fakes, found
 * first; the driver's device count answers from its second call)
 */
#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

typedef uint32_t (*call_fn)(int domain, uint32_t cbid, const char *fn, int work, const char *kernel,
                            int nested);
typedef void (*exit_fn)(int domain, uint32_t cbid, const char *fn);
typedef void (*flood_fn)(int n, size_t lost, const char *kernel);

enum { NONE, KERNEL, MEMCPY, MEMSET, MEMCPY_D2H };

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: cupti_app LIBRARY\n");
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
