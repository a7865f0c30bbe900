/*
 * cuda_app — a small CUDA runtime program for libdptrace_cupti on a real
 * GPU (tests/integration/test_dptrace_cuda_gpu.sh).  Per step, inside
 * dpt_step_begin/end:
 *
 *   "forward":  1 MiB H2D copy and a spin kernel on stream 1; a templated
 *               kernel (its name is mangled in CUDA's records) and a 4 KiB
 *               memset on stream 2
 *   "backward": a second spin kernel on stream 1, then a synchronous 64 KiB
 *               D2H cudaMemcpy
 *   a mark, then cudaStreamSynchronize(stream 2)
 *
 * and one cudaDeviceSynchronize after the last step, outside every range.
 * A spin kernel runs for --spin-us of the GPU's global timer, so its
 * recorded duration is known; with --stamps the program prints the global
 * timer at each spin kernel's start ("cuda_app: spin I NS"), the clock of
 * CUPTI's records: the truth to compare their times with.
 *
 * With --launches N it only launches an empty kernel N times on one stream
 * (after 1000 to warm up) and prints the host time per launch call, for
 * bench/bench_cupti_gpu.sh.
 *
 * With --start-at NS the steps begin once CLOCK_REALTIME reaches NS, so that
 * two programs' steps can run at the same time.
 *
 * Usage: cuda_app [--steps N] [--spin-us U] [--stamps] [--start-at NS] [--launches N]
 * Exit status 0; 3 when no CUDA device can be used; 1 on a CUDA error.
 */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/dptrace.h"

/* A GPU this build has no code for counts as no usable device (exit 3). */
#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "cuda_app: %s: %s\n", #call, cudaGetErrorString(e_));                  \
            exit(e_ == cudaErrorNoKernelImageForDevice || e_ == cudaErrorUnsupportedPtxVersion     \
                     ? 3                                                                           \
                     : 1);                                                                         \
        }                                                                                          \
    } while (0)

static __device__ unsigned long long global_ns(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Spins for ns of the global timer; block 0 writes when it started. */
extern "C" __global__ void spin_kernel(unsigned long long ns, unsigned long long *started)
{
    unsigned long long t0 = global_ns();
    if (blockIdx.x == 0 && threadIdx.x == 0)
        *started = t0;
    while (global_ns() - t0 < ns)
        ;
}

extern "C" __global__ void empty_kernel(void) {}

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/*
 * Host time per launch call.  Launches go in bursts of 256, each followed by
 * an untimed wait: a stream holds about a thousand pending launches, and
 * past that a launch call waits for the GPU, which would be timed instead.
 */
static int launch_loop(long n)
{
    const int burst = 256;
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    for (int i = 0; i < 1000; i++)
        empty_kernel<<<1, 1, 0, s>>>();
    CHECK(cudaStreamSynchronize(s));
    double host = 0;
    long done = 0;
    while (done < n) {
        double t0 = now_ns();
        for (int i = 0; i < burst; i++)
            empty_kernel<<<1, 1, 0, s>>>();
        host += now_ns() - t0;
        done += burst;
        CHECK(cudaStreamSynchronize(s));
    }
    CHECK(cudaGetLastError());
    CHECK(cudaStreamDestroy(s));
    printf("cuda_app: %ld launches: %.1f ns per launch call\n", done, host / done);
    return 0;
}

template <typename T> __global__ void scale_kernel(T *x, T a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        x[i] *= a;
}

int main(int argc, char **argv)
{
    int steps = 4;
    long launches = 0;
    int stamps = 0;
    long long start_at = 0;
    unsigned long long spin_us = 500;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--steps") == 0 && i + 1 < argc)
            steps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--spin-us") == 0 && i + 1 < argc)
            spin_us = strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--launches") == 0 && i + 1 < argc)
            launches = atol(argv[++i]);
        else if (strcmp(argv[i], "--stamps") == 0)
            stamps = 1;
        else if (strcmp(argv[i], "--start-at") == 0 && i + 1 < argc)
            start_at = atoll(argv[++i]);
        else {
            fprintf(stderr, "usage: cuda_app [--steps N] [--spin-us U] [--stamps] [--start-at NS] "
                            "[--launches N]\n");
            return 2;
        }
    }
    int ndev = 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    if (e != cudaSuccess || ndev == 0) {
        fprintf(stderr, "cuda_app: no CUDA device: %s\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return 3;
    }
    if (launches > 0)
        return launch_loop(launches);
    const int n = 1 << 18; /* 1 MiB of floats */
    float *d_a, *d_b, *h;
    unsigned long long *d_started, *started;
    cudaStream_t s1, s2;
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc(&d_a, n * sizeof *d_a));
    CHECK(cudaMalloc(&d_b, n * sizeof *d_b));
    CHECK(cudaMallocHost(&h, n * sizeof *h));
    CHECK(cudaMalloc(&d_started, 2 * steps * sizeof *d_started));
    started = (unsigned long long *)calloc(2 * steps, sizeof *started);
    for (int i = 0; i < n; i++)
        h[i] = (float)i;
    CHECK(cudaStreamCreate(&s1));
    CHECK(cudaStreamCreate(&s2));
    for (;;) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long long left = start_at - (ts.tv_sec * 1000000000LL + ts.tv_nsec);
        if (left <= 0)
            break;
        ts.tv_sec = left / 1000000000LL;
        ts.tv_nsec = left % 1000000000LL;
        nanosleep(&ts, NULL);
    }
    for (int step = 0; step < steps; step++) {
        dpt_step_begin((uint64_t)step);
        dpt_range_push("forward");
        CHECK(cudaMemcpyAsync(d_a, h, n * sizeof *h, cudaMemcpyHostToDevice, s1));
        spin_kernel<<<1, 1, 0, s1>>>(spin_us * 1000, d_started + 2 * step);
        CHECK(cudaGetLastError());
        scale_kernel<float><<<n / 256, 256, 0, s2>>>(d_b, 2.0f, n);
        CHECK(cudaGetLastError());
        CHECK(cudaMemsetAsync(d_b, 0, 4096, s2));
        dpt_range_pop();
        dpt_range_push("backward");
        spin_kernel<<<2, 32, 0, s1>>>(spin_us * 1000, d_started + 2 * step + 1);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpy(h, d_a, 65536, cudaMemcpyDeviceToHost));
        dpt_range_pop();
        dpt_mark("step_done");
        CHECK(cudaStreamSynchronize(s2));
        dpt_step_end();
    }
    CHECK(cudaDeviceSynchronize());
    int ok = h[1] == 1.0f && h[100] == 100.0f;
    CHECK(cudaMemcpy(started, d_started, 2 * steps * sizeof *started, cudaMemcpyDeviceToHost));
    for (int i = 0; stamps && i < 2 * steps; i++)
        printf("cuda_app: spin %d %llu\n", i, started[i]);
    free(started);
    CHECK(cudaFree(d_started));
    CHECK(cudaStreamDestroy(s1));
    CHECK(cudaStreamDestroy(s2));
    CHECK(cudaFreeHost(h));
    CHECK(cudaFree(d_a));
    CHECK(cudaFree(d_b));
    if (!ok) {
        fprintf(stderr, "cuda_app: the copies returned wrong data\n");
        return 1;
    }
    printf("cuda_app: ok, %d steps on %d device(s)\n", steps, ndev);
    return 0;
}
