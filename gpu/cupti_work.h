/*
 * The CUDA calls libdptrace_cupti.so follows by default, by name, shared
 * with CUPTI's floor (bench/cupti_floor.c) so that the floor asks
 * CUPTI for the same callbacks.
 */
#ifndef DP_GPU_CUPTI_WORK_H
#define DP_GPU_CUPTI_WORK_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/*
 * The runtime calls followed by default ("api=work"): those that put work
 * on the GPU or wait for it, and allocations (they may synchronise): much
 * what libdptrace intercepts in HIP, with allocations and event waits.  A
 * framework's queries (PyTorch calls cudaGetDevice ~250 times a training
 * step) would be most of the events and of CUPTI's callback cost.
 * "api=all" follows every runtime call.
 * Matched on the name without its ABI version, so new versions of an
 * entry point are followed too.
 */
static const char *const gpu_cupti_runtime_work[] = {
    "cudaLaunch", "cudaGraphLaunch", "cudaMemcpy",      "cudaMemset",          "cudaMalloc",
    "cudaFree",   "cudaHostAlloc",   "cudaEventRecord", "cudaStreamWaitEvent", NULL,
};

/*
 * Work put on the GPU through the driver API outside any runtime call
 * carries the driver call's correlation id, so those calls are followed
 * too, the same kinds by name: cuBLAS, Triton and PyTorch's compiled
 * kernels launch this way, and XLA (JAX) makes its own launches, copies,
 * graph launches and waits through the driver.  A driver call made inside
 * a runtime call is the runtime's own work: its GPU records carry the
 * runtime call's id, and it is not reported.  The driver's queries
 * (cuCtxGetCurrent, cuGetProcAddress) are not followed in either mode.
 */
static const char *const gpu_cupti_driver_work[] = {
    "cuLaunch",  "cuGraphLaunch",  "cuMemcpy",      "cuMemset",          "cuMemAlloc",
    "cuMemFree", "cuMemHostAlloc", "cuEventRecord", "cuStreamWaitEvent", NULL,
};

/* Whether a call of that name is work: one of the prefixes, or a wait. */
static inline bool gpu_cupti_is_work(const char *name, const char *const *prefixes)
{
    if (strstr(name, "Synchronize") != NULL)
        return true;
    for (size_t i = 0; prefixes[i] != NULL; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

#endif /* DP_GPU_CUPTI_WORK_H */
