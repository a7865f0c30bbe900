/*
 * The table of real HIP functions libdptrace forwards to and the HIP
 * resolver calls (gpu/hip.c, gpu/dptrace_hip.c).  Internal to the gpu
 * module; it includes the HIP headers, so compile with
 * -D__HIP_PLATFORM_AMD__ (the HIP and CUDA headers cannot share a
 * translation unit: gpu/hip_int.h, the resolver's interface, needs neither).
 */
#ifndef DP_GPU_HIP_REAL_H
#define DP_GPU_HIP_REAL_H

#include <stdbool.h>
#include <stdint.h>

#include <hip/hip_runtime_api.h>

#include "gpu/gpu.h"
#include "gpu/hip_int.h"

/*
 * hip_ext.h is C++ only (default arguments), and in the 5.2.3 library these
 * two functions have C++ linkage: the C declarations below carry their
 * mangled names.
 */
#define GPU_HIP_EXT_MODULE_LAUNCH                                                                  \
    "_Z24hipExtModuleLaunchKernelP18ihipModuleSymbol_tjjjjjjmP12ihipStream_tPPvS4_P11ihipEvent_"   \
    "tS6_j"
#define GPU_HIP_HCC_MODULE_LAUNCH                                                                  \
    "_Z24hipHccModuleLaunchKernelP18ihipModuleSymbol_tjjjjjjmP12ihipStream_tPPvS4_P11ihipEvent_"   \
    "tS6_"
hipError_t hipExtModuleLaunchKernel_c(hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz,
                                      uint32_t lx, uint32_t ly, uint32_t lz, size_t shm,
                                      hipStream_t stream, void **params, void **extra,
                                      hipEvent_t start, hipEvent_t stop,
                                      uint32_t flags) __asm__(GPU_HIP_EXT_MODULE_LAUNCH);
hipError_t hipHccModuleLaunchKernel_c(hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz,
                                      uint32_t lx, uint32_t ly, uint32_t lz, size_t shm,
                                      hipStream_t stream, void **params, void **extra,
                                      hipEvent_t start,
                                      hipEvent_t stop) __asm__(GPU_HIP_HCC_MODULE_LAUNCH);

/* X(field, "symbol"): every HIP function libdptrace calls or forwards to. */
#define GPU_HIP_FNS(X)                                                                             \
    X(hipEventCreateWithFlags, "hipEventCreateWithFlags")                                          \
    X(hipEventRecord, "hipEventRecord")                                                            \
    X(hipEventQuery, "hipEventQuery")                                                              \
    X(hipEventElapsedTime, "hipEventElapsedTime")                                                  \
    X(hipEventDestroy, "hipEventDestroy")                                                          \
    X(hipStreamCreateWithFlags, "hipStreamCreateWithFlags")                                        \
    X(hipStreamDestroy, "hipStreamDestroy")                                                        \
    X(hipGetDevice, "hipGetDevice")                                                                \
    X(hipSetDevice, "hipSetDevice")                                                                \
    X(hipGetDeviceCount, "hipGetDeviceCount")                                                      \
    X(hipGetStreamDeviceId, "hipGetStreamDeviceId")                                                \
    X(hipKernelNameRef, "hipKernelNameRef")                                                        \
    X(hipKernelNameRefByPtr, "hipKernelNameRefByPtr")                                              \
    X(hipModuleGetFunction, "hipModuleGetFunction")                                                \
    X(hipConfigureCall, "hipConfigureCall")                                                        \
    /* kernel launches */                                                                          \
    X(hipLaunchKernel, "hipLaunchKernel")                                                          \
    X(hipLaunchKernel_spt, "hipLaunchKernel_spt")                                                  \
    X(hipExtLaunchKernel, "hipExtLaunchKernel")                                                    \
    X(hipLaunchCooperativeKernel, "hipLaunchCooperativeKernel")                                    \
    X(hipLaunchCooperativeKernel_spt, "hipLaunchCooperativeKernel_spt")                            \
    X(hipLaunchCooperativeKernelMultiDevice, "hipLaunchCooperativeKernelMultiDevice")              \
    X(hipExtLaunchMultiKernelMultiDevice, "hipExtLaunchMultiKernelMultiDevice")                    \
    X(hipModuleLaunchKernel, "hipModuleLaunchKernel")                                              \
    X(hipExtModuleLaunchKernel_c, GPU_HIP_EXT_MODULE_LAUNCH)                                       \
    X(hipHccModuleLaunchKernel_c, GPU_HIP_HCC_MODULE_LAUNCH)                                       \
    X(hipLaunchByPtr, "hipLaunchByPtr")                                                            \
    X(hipGraphLaunch, "hipGraphLaunch")                                                            \
    /* copies, synchronous */                                                                      \
    X(hipMemcpy, "hipMemcpy")                                                                      \
    X(hipMemcpy_spt, "hipMemcpy_spt")                                                              \
    X(hipMemcpyWithStream, "hipMemcpyWithStream")                                                  \
    X(hipMemcpyHtoD, "hipMemcpyHtoD")                                                              \
    X(hipMemcpyDtoH, "hipMemcpyDtoH")                                                              \
    X(hipMemcpyDtoD, "hipMemcpyDtoD")                                                              \
    X(hipMemcpyToSymbol, "hipMemcpyToSymbol")                                                      \
    X(hipMemcpyToSymbol_spt, "hipMemcpyToSymbol_spt")                                              \
    X(hipMemcpyFromSymbol, "hipMemcpyFromSymbol")                                                  \
    X(hipMemcpyFromSymbol_spt, "hipMemcpyFromSymbol_spt")                                          \
    X(hipMemcpy2D, "hipMemcpy2D")                                                                  \
    X(hipMemcpy2D_spt, "hipMemcpy2D_spt")                                                          \
    X(hipMemcpyParam2D, "hipMemcpyParam2D")                                                        \
    X(hipDrvMemcpy2DUnaligned, "hipDrvMemcpy2DUnaligned")                                          \
    X(hipMemcpy2DToArray, "hipMemcpy2DToArray")                                                    \
    X(hipMemcpy2DToArray_spt, "hipMemcpy2DToArray_spt")                                            \
    X(hipMemcpyToArray, "hipMemcpyToArray")                                                        \
    X(hipMemcpyFromArray, "hipMemcpyFromArray")                                                    \
    X(hipMemcpy2DFromArray, "hipMemcpy2DFromArray")                                                \
    X(hipMemcpy2DFromArray_spt, "hipMemcpy2DFromArray_spt")                                        \
    X(hipMemcpyAtoH, "hipMemcpyAtoH")                                                              \
    X(hipMemcpyHtoA, "hipMemcpyHtoA")                                                              \
    X(hipMemcpy3D, "hipMemcpy3D")                                                                  \
    X(hipMemcpy3D_spt, "hipMemcpy3D_spt")                                                          \
    X(hipDrvMemcpy3D, "hipDrvMemcpy3D")                                                            \
    X(hipMemcpyPeer, "hipMemcpyPeer")                                                              \
    /* copies, asynchronous */                                                                     \
    X(hipMemcpyAsync, "hipMemcpyAsync")                                                            \
    X(hipMemcpyAsync_spt, "hipMemcpyAsync_spt")                                                    \
    X(hipMemcpyHtoDAsync, "hipMemcpyHtoDAsync")                                                    \
    X(hipMemcpyDtoHAsync, "hipMemcpyDtoHAsync")                                                    \
    X(hipMemcpyDtoDAsync, "hipMemcpyDtoDAsync")                                                    \
    X(hipMemcpyToSymbolAsync, "hipMemcpyToSymbolAsync")                                            \
    X(hipMemcpyFromSymbolAsync, "hipMemcpyFromSymbolAsync")                                        \
    X(hipMemcpy2DAsync, "hipMemcpy2DAsync")                                                        \
    X(hipMemcpyParam2DAsync, "hipMemcpyParam2DAsync")                                              \
    X(hipMemcpy2DToArrayAsync, "hipMemcpy2DToArrayAsync")                                          \
    X(hipMemcpy2DFromArrayAsync, "hipMemcpy2DFromArrayAsync")                                      \
    X(hipMemcpy3DAsync, "hipMemcpy3DAsync")                                                        \
    X(hipDrvMemcpy3DAsync, "hipDrvMemcpy3DAsync")                                                  \
    X(hipMemcpyPeerAsync, "hipMemcpyPeerAsync")                                                    \
    /* memsets */                                                                                  \
    X(hipMemset, "hipMemset")                                                                      \
    X(hipMemset_spt, "hipMemset_spt")                                                              \
    X(hipMemsetD8, "hipMemsetD8")                                                                  \
    X(hipMemsetD16, "hipMemsetD16")                                                                \
    X(hipMemsetD32, "hipMemsetD32")                                                                \
    X(hipMemset2D, "hipMemset2D")                                                                  \
    X(hipMemset2D_spt, "hipMemset2D_spt")                                                          \
    X(hipMemset3D, "hipMemset3D")                                                                  \
    X(hipMemset3D_spt, "hipMemset3D_spt")                                                          \
    X(hipMemsetAsync, "hipMemsetAsync")                                                            \
    X(hipMemsetD8Async, "hipMemsetD8Async")                                                        \
    X(hipMemsetD16Async, "hipMemsetD16Async")                                                      \
    X(hipMemsetD32Async, "hipMemsetD32Async")                                                      \
    X(hipMemset2DAsync, "hipMemset2DAsync")                                                        \
    X(hipMemset3DAsync, "hipMemset3DAsync")                                                        \
    /* synchronisation */                                                                          \
    X(hipStreamSynchronize, "hipStreamSynchronize")                                                \
    X(hipStreamSynchronize_spt, "hipStreamSynchronize_spt")                                        \
    X(hipDeviceSynchronize, "hipDeviceSynchronize")                                                \
    X(hipEventSynchronize, "hipEventSynchronize")                                                  \
    X(hipCtxSynchronize, "hipCtxSynchronize")

/* Some of them are deprecated in the headers; naming their type is not a use. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
struct gpu_hip_real {
#define GPU_HIP_FIELD(f, sym) __typeof__(&f) f;
    GPU_HIP_FNS(GPU_HIP_FIELD)
#undef GPU_HIP_FIELD
};
#pragma GCC diagnostic pop

/* The table (NULL entries for what the runtime lacks); the same for the
 * whole process. */
const struct gpu_hip_real *gpu_hip_real(const gpu_hip_t *self);
/* Resolve the real functions without an object: fills r, returns how many
 * were found.  library NULL: the next definition in lookup order, else a
 * libamdhip64 already loaded (never loads one). */
size_t gpu_hip_resolve(struct gpu_hip_real *r, const char *library);

#endif /* DP_GPU_HIP_REAL_H */
