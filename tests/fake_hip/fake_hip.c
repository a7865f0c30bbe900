/*
 * A fake libamdhip64.so.5 for tests: the subset of the HIP 5.2 runtime
 * libdptrace and the test applications use, executed on the CPU.
 *
 *   - streams are ordered queues, each run by its own worker thread; the
 *     null stream of each device (and hipStreamPerThread) is one more;
 *   - a kernel sleeps for the duration given as its first argument
 *     (args[0] points to an int64_t of nanoseconds, copied at launch);
 *   - copies and memsets really copy / set host memory (device memory is
 *     host memory here);
 *   - an event recorded on a stream completes when the stream reaches it,
 *     stamped with CLOCK_MONOTONIC then; hipEventQuery / ElapsedTime /
 *     Synchronize behave like HIP's (never-recorded events are "complete"
 *     for Query, invalid for ElapsedTime);
 *   - __hipRegisterFunction / hipModuleGetFunction give kernels names for
 *     hipKernelNameRefByPtr / hipKernelNameRef.
 *
 * FAKEHIP_DEVICES (default 2) sets the number of devices.  Link with
 * -Bsymbolic: the fake's own calls between entry points must not go
 * through an interposing library.  Its state is one static struct, as in
 * libdptrace (a library has no main file).
 */
#include <hip/hip_runtime_api.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define MAX_DEV     8
#define MAX_KERNELS 256

enum op_kind { OP_KERNEL, OP_COPY, OP_SET, OP_MARK };

struct ihipEvent_t {
    _Atomic int state; /* 0 never recorded, 1 pending, 2 complete */
    _Atomic uint64_t gen;
    _Atomic int64_t t_ns;
};

struct op {
    enum op_kind kind;
    int64_t dur_ns;
    void *dst;
    const void *src;
    size_t n;
    int value;
    int elem; /* memset element size */
    struct ihipEvent_t *ev;
    uint64_t gen;
    struct op *next;
};

struct ihipStream_t {
    int device;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;      /* work arrived / stop */
    pthread_cond_t idle_cv; /* an operation completed */
    struct op *head, *tail;
    uint64_t submitted, completed;
    bool waiting, stop;
    struct ihipStream_t *next_in_dev;
    /*
     * Under fk.mu: device-wide synchronizations walking this stream now,
     * and whether it was destroyed meanwhile (the last of them frees it).
     * An application may destroy a stream on one thread while another
     * synchronizes the device, as the real runtime allows.
     */
    int walkers;
    bool destroyed;
};

struct ihipModuleSymbol_t {
    char name[128];
};

struct ihipModule_t {
    int unused;
};

static struct fake {
    pthread_mutex_t mu;
    int ndev;
    struct ihipStream_t *null_stream[MAX_DEV];
    struct ihipStream_t *streams[MAX_DEV]; /* every stream of a device */
    struct {
        const void *host;
        char name[128];
    } kernels[MAX_KERNELS];
    int nkernels;
} fk = {.mu = PTHREAD_MUTEX_INITIALIZER};

static _Thread_local int cur_dev;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_until(int64_t t)
{
    /* Short waits spin so that short kernels keep their length. */
    if (t - now_ns() > 200000) {
        struct timespec ts = {(time_t)((t - 100000) / 1000000000LL),
                              (long)((t - 100000) % 1000000000LL)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
    }
    while (now_ns() < t)
        ;
}

static int ndev(void)
{
    pthread_mutex_lock(&fk.mu);
    if (fk.ndev == 0) {
        const char *e = getenv("FAKEHIP_DEVICES");
        int n = e ? atoi(e) : 2;
        fk.ndev = n < 1 ? 1 : n > MAX_DEV ? MAX_DEV : n;
    }
    int n = fk.ndev;
    pthread_mutex_unlock(&fk.mu);
    return n;
}

static void run(struct op *o)
{
    switch (o->kind) {
    case OP_KERNEL:
        if (o->dur_ns > 0)
            sleep_until(now_ns() + o->dur_ns);
        break;
    case OP_COPY:
        if (o->n > 0 && o->dst != NULL && o->src != NULL)
            memmove(o->dst, o->src, o->n);
        break;
    case OP_SET:
        if (o->dst != NULL) {
            if (o->elem == 1) {
                memset(o->dst, o->value, o->n);
            } else {
                for (size_t i = 0; i < o->n; i++) {
                    if (o->elem == 2)
                        ((uint16_t *)o->dst)[i] = (uint16_t)o->value;
                    else
                        ((uint32_t *)o->dst)[i] = (uint32_t)o->value;
                }
            }
        }
        break;
    case OP_MARK:
        atomic_store(&o->ev->t_ns, now_ns());
        if (atomic_load(&o->ev->gen) == o->gen)
            atomic_store(&o->ev->state, 2);
        break;
    }
}

static void *worker(void *arg)
{
    struct ihipStream_t *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (s->head == NULL && !s->stop) {
            s->waiting = true;
            pthread_cond_wait(&s->cv, &s->mu);
            s->waiting = false;
        }
        if (s->head == NULL && s->stop)
            break;
        struct op *o = s->head;
        s->head = o->next;
        if (s->head == NULL)
            s->tail = NULL;
        pthread_mutex_unlock(&s->mu);
        run(o);
        free(o);
        pthread_mutex_lock(&s->mu);
        s->completed++;
        pthread_cond_broadcast(&s->idle_cv);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static struct ihipStream_t *stream_new(int device)
{
    struct ihipStream_t *s = calloc(1, sizeof *s);
    if (s == NULL)
        return NULL;
    s->device = device;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_cond_init(&s->idle_cv, NULL);
    if (pthread_create(&s->th, NULL, worker, s) != 0) {
        free(s);
        return NULL;
    }
    pthread_mutex_lock(&fk.mu);
    s->next_in_dev = fk.streams[device];
    fk.streams[device] = s;
    pthread_mutex_unlock(&fk.mu);
    return s;
}

/* The stream behind a handle: the null stream and hipStreamPerThread are
 * the current device's default stream. */
static struct ihipStream_t *resolve(hipStream_t h)
{
    if (h != NULL && h != hipStreamPerThread)
        return h;
    int d = cur_dev;
    pthread_mutex_lock(&fk.mu);
    struct ihipStream_t *s = fk.null_stream[d];
    pthread_mutex_unlock(&fk.mu);
    if (s != NULL)
        return s;
    s = stream_new(d);
    pthread_mutex_lock(&fk.mu);
    if (fk.null_stream[d] == NULL)
        fk.null_stream[d] = s;
    else
        s = fk.null_stream[d]; /* lost a race: the other one is used, this one idles */
    pthread_mutex_unlock(&fk.mu);
    return s;
}

static uint64_t enqueue(struct ihipStream_t *s, struct op *o)
{
    o->next = NULL;
    pthread_mutex_lock(&s->mu);
    if (s->tail != NULL)
        s->tail->next = o;
    else
        s->head = o;
    s->tail = o;
    uint64_t ticket = ++s->submitted;
    if (s->waiting)
        pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return ticket;
}

static void wait_ticket(struct ihipStream_t *s, uint64_t ticket)
{
    pthread_mutex_lock(&s->mu);
    while (s->completed < ticket)
        pthread_cond_wait(&s->idle_cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

static void sync_stream(struct ihipStream_t *s)
{
    pthread_mutex_lock(&s->mu);
    uint64_t t = s->submitted;
    while (s->completed < t)
        pthread_cond_wait(&s->idle_cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

static struct op *op_new(enum op_kind k)
{
    struct op *o = calloc(1, sizeof *o);
    if (o != NULL)
        o->kind = k;
    return o;
}

/* ---- devices ---- */

hipError_t hipGetDeviceCount(int *count)
{
    if (count == NULL)
        return hipErrorInvalidValue;
    *count = ndev();
    return hipSuccess;
}

hipError_t hipGetDevice(int *d)
{
    if (d == NULL)
        return hipErrorInvalidValue;
    *d = cur_dev;
    return hipSuccess;
}

hipError_t hipSetDevice(int d)
{
    if (d < 0 || d >= ndev())
        return hipErrorInvalidDevice;
    cur_dev = d;
    return hipSuccess;
}

int hipGetStreamDeviceId(hipStream_t s)
{
    return resolve(s)->device;
}

static void stream_free(struct ihipStream_t *s)
{
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    pthread_cond_destroy(&s->idle_cv);
    free(s);
}

hipError_t hipDeviceSynchronize(void)
{
    int d = cur_dev;
    /* The device's streams as of now, each held until synchronized. */
    pthread_mutex_lock(&fk.mu);
    size_t n = 0;
    for (struct ihipStream_t *s = fk.streams[d]; s != NULL; s = s->next_in_dev)
        n++;
    struct ihipStream_t **held = malloc((n ? n : 1) * sizeof *held);
    if (held == NULL) {
        pthread_mutex_unlock(&fk.mu);
        return hipErrorOutOfMemory;
    }
    n = 0;
    for (struct ihipStream_t *s = fk.streams[d]; s != NULL; s = s->next_in_dev) {
        s->walkers++;
        held[n++] = s;
    }
    pthread_mutex_unlock(&fk.mu);
    for (size_t i = 0; i < n; i++) {
        sync_stream(held[i]);
        pthread_mutex_lock(&fk.mu);
        bool last = --held[i]->walkers == 0 && held[i]->destroyed;
        pthread_mutex_unlock(&fk.mu);
        if (last)
            stream_free(held[i]);
    }
    free(held);
    return hipSuccess;
}

hipError_t hipCtxSynchronize(void)
{
    return hipDeviceSynchronize();
}

const char *hipGetErrorString(hipError_t e)
{
    return e == hipSuccess ? "no error" : "fake hip error";
}

const char *hipGetErrorName(hipError_t e)
{
    return e == hipSuccess ? "hipSuccess" : "hipErrorFake";
}

/* ---- memory ---- */

hipError_t hipMalloc(void **p, size_t n)
{
    if (p == NULL)
        return hipErrorInvalidValue;
    *p = calloc(1, n ? n : 1);
    return *p ? hipSuccess : hipErrorOutOfMemory;
}

hipError_t hipFree(void *p)
{
    free(p);
    return hipSuccess;
}

static hipError_t copy(void *d, const void *s, size_t n, hipStream_t h, bool wait)
{
    struct op *o = op_new(OP_COPY);
    if (o == NULL)
        return hipErrorOutOfMemory;
    o->dst = d;
    o->src = s;
    o->n = n;
    struct ihipStream_t *st = resolve(h);
    uint64_t t = enqueue(st, o);
    if (wait)
        wait_ticket(st, t);
    return hipSuccess;
}

static hipError_t set(void *d, int v, size_t n, int elem, hipStream_t h, bool wait)
{
    struct op *o = op_new(OP_SET);
    if (o == NULL)
        return hipErrorOutOfMemory;
    o->dst = d;
    o->value = v;
    o->n = n;
    o->elem = elem;
    struct ihipStream_t *st = resolve(h);
    uint64_t t = enqueue(st, o);
    if (wait)
        wait_ticket(st, t);
    return hipSuccess;
}

hipError_t hipMemcpy(void *d, const void *s, size_t n, hipMemcpyKind k)
{
    return copy(d, s, n, NULL, true);
}

hipError_t hipMemcpyWithStream(void *d, const void *s, size_t n, hipMemcpyKind k, hipStream_t st)
{
    return copy(d, s, n, st, true);
}

hipError_t hipMemcpyAsync(void *d, const void *s, size_t n, hipMemcpyKind k, hipStream_t st)
{
    return copy(d, s, n, st, false);
}

hipError_t hipMemcpyHtoD(hipDeviceptr_t d, void *s, size_t n)
{
    return copy(d, s, n, NULL, true);
}

hipError_t hipMemcpyDtoH(void *d, hipDeviceptr_t s, size_t n)
{
    return copy(d, s, n, NULL, true);
}

hipError_t hipMemcpyDtoD(hipDeviceptr_t d, hipDeviceptr_t s, size_t n)
{
    return copy(d, s, n, NULL, true);
}

hipError_t hipMemcpyHtoDAsync(hipDeviceptr_t d, void *s, size_t n, hipStream_t st)
{
    return copy(d, s, n, st, false);
}

hipError_t hipMemcpyDtoHAsync(void *d, hipDeviceptr_t s, size_t n, hipStream_t st)
{
    return copy(d, s, n, st, false);
}

hipError_t hipMemcpyDtoDAsync(hipDeviceptr_t d, hipDeviceptr_t s, size_t n, hipStream_t st)
{
    return copy(d, s, n, st, false);
}

hipError_t hipMemset(void *d, int v, size_t n)
{
    return set(d, v, n, 1, NULL, true);
}

hipError_t hipMemsetAsync(void *d, int v, size_t n, hipStream_t st)
{
    return set(d, v, n, 1, st, false);
}

hipError_t hipMemsetD32(hipDeviceptr_t d, int v, size_t n)
{
    return set(d, v, n, 4, NULL, true);
}

hipError_t hipMemsetD32Async(hipDeviceptr_t d, int v, size_t n, hipStream_t st)
{
    return set(d, v, n, 4, st, false);
}

hipError_t hipMemsetD16Async(hipDeviceptr_t d, unsigned short v, size_t n, hipStream_t st)
{
    return set(d, v, n, 2, st, false);
}

/* ---- streams ---- */

hipError_t hipStreamCreateWithFlags(hipStream_t *s, unsigned int flags)
{
    if (s == NULL)
        return hipErrorInvalidValue;
    *s = stream_new(cur_dev);
    return *s ? hipSuccess : hipErrorOutOfMemory;
}

hipError_t hipStreamCreate(hipStream_t *s)
{
    return hipStreamCreateWithFlags(s, 0);
}

hipError_t hipStreamSynchronize(hipStream_t h)
{
    sync_stream(resolve(h));
    return hipSuccess;
}

hipError_t hipStreamDestroy(hipStream_t h)
{
    if (h == NULL || h == hipStreamPerThread)
        return hipErrorInvalidHandle;
    struct ihipStream_t *s = h;
    sync_stream(s);
    pthread_mutex_lock(&fk.mu);
    for (struct ihipStream_t **pp = &fk.streams[s->device]; *pp != NULL; pp = &(*pp)->next_in_dev) {
        if (*pp == s) {
            *pp = s->next_in_dev;
            break;
        }
    }
    pthread_mutex_unlock(&fk.mu);
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
    pthread_mutex_lock(&fk.mu);
    s->destroyed = true;
    bool held = s->walkers > 0;
    pthread_mutex_unlock(&fk.mu);
    if (!held)
        stream_free(s);
    return hipSuccess;
}

/* ---- events ---- */

hipError_t hipEventCreateWithFlags(hipEvent_t *e, unsigned flags)
{
    if (e == NULL)
        return hipErrorInvalidValue;
    *e = calloc(1, sizeof **e);
    return *e ? hipSuccess : hipErrorOutOfMemory;
}

hipError_t hipEventCreate(hipEvent_t *e)
{
    return hipEventCreateWithFlags(e, 0);
}

hipError_t hipEventDestroy(hipEvent_t e)
{
    free(e);
    return hipSuccess;
}

hipError_t hipEventRecord(hipEvent_t e, hipStream_t h)
{
    if (e == NULL)
        return hipErrorInvalidHandle;
    struct ihipStream_t *s = resolve(h);
    struct op *o = op_new(OP_MARK);
    if (o == NULL)
        return hipErrorOutOfMemory;
    o->ev = e;
    o->gen = atomic_fetch_add(&e->gen, 1) + 1;
    atomic_store(&e->state, 1);
    enqueue(s, o);
    return hipSuccess;
}

hipError_t hipEventQuery(hipEvent_t e)
{
    if (e == NULL)
        return hipErrorInvalidHandle;
    return atomic_load(&e->state) == 1 ? hipErrorNotReady : hipSuccess;
}

hipError_t hipEventSynchronize(hipEvent_t e)
{
    if (e == NULL)
        return hipErrorInvalidHandle;
    while (atomic_load(&e->state) == 1) {
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
    return hipSuccess;
}

hipError_t hipEventElapsedTime(float *ms, hipEvent_t a, hipEvent_t b)
{
    if (ms == NULL || a == NULL || b == NULL)
        return hipErrorInvalidValue;
    int sa = atomic_load(&a->state), sb = atomic_load(&b->state);
    if (sa == 0 || sb == 0)
        return hipErrorInvalidHandle;
    if (sa == 1 || sb == 1)
        return hipErrorNotReady;
    *ms = (float)((double)(atomic_load(&b->t_ns) - atomic_load(&a->t_ns)) / 1e6);
    return hipSuccess;
}

/* ---- kernels ---- */

void __hipRegisterFunction(void **modules, const void *host, char *dev_fn, const char *dev_name,
                           unsigned int limit, void *tid, void *bid, void *bdim, void *gdim,
                           int *wsize);
void __hipRegisterFunction(void **modules, const void *host, char *dev_fn, const char *dev_name,
                           unsigned int limit, void *tid, void *bid, void *bdim, void *gdim,
                           int *wsize)
{
    pthread_mutex_lock(&fk.mu);
    if (fk.nkernels < MAX_KERNELS && dev_name != NULL) {
        fk.kernels[fk.nkernels].host = host;
        snprintf(fk.kernels[fk.nkernels].name, sizeof fk.kernels[0].name, "%s", dev_name);
        fk.nkernels++;
    }
    pthread_mutex_unlock(&fk.mu);
}

const char *hipKernelNameRefByPtr(const void *host, hipStream_t s)
{
    const char *name = NULL;
    pthread_mutex_lock(&fk.mu);
    for (int i = 0; i < fk.nkernels && name == NULL; i++)
        if (fk.kernels[i].host == host)
            name = fk.kernels[i].name;
    pthread_mutex_unlock(&fk.mu);
    return name;
}

const char *hipKernelNameRef(const hipFunction_t f)
{
    return f != NULL ? f->name : NULL;
}

hipError_t hipModuleLoad(hipModule_t *m, const char *fname)
{
    if (m == NULL)
        return hipErrorInvalidValue;
    *m = calloc(1, sizeof **m);
    return *m ? hipSuccess : hipErrorOutOfMemory;
}

hipError_t hipModuleUnload(hipModule_t m)
{
    free(m);
    return hipSuccess;
}

hipError_t hipModuleGetFunction(hipFunction_t *f, hipModule_t m, const char *name)
{
    if (f == NULL || m == NULL || name == NULL)
        return hipErrorInvalidValue;
    *f = calloc(1, sizeof **f);
    if (*f == NULL)
        return hipErrorOutOfMemory;
    snprintf((*f)->name, sizeof(*f)->name, "%s", name);
    return hipSuccess;
}

static hipError_t launch(void **args, hipStream_t h)
{
    struct op *o = op_new(OP_KERNEL);
    if (o == NULL)
        return hipErrorOutOfMemory;
    if (args != NULL && args[0] != NULL)
        memcpy(&o->dur_ns, args[0], sizeof o->dur_ns);
    if (o->dur_ns < 0 || o->dur_ns > 10000000000LL) {
        free(o);
        return hipErrorInvalidValue;
    }
    enqueue(resolve(h), o);
    return hipSuccess;
}

hipError_t hipLaunchKernel(const void *f, dim3 g, dim3 b, void **args, size_t shm, hipStream_t s)
{
    return f ? launch(args, s) : hipErrorInvalidDeviceFunction;
}

hipError_t hipExtLaunchKernel(const void *f, dim3 g, dim3 b, void **args, size_t shm, hipStream_t s,
                              hipEvent_t e0, hipEvent_t e1, int flags)
{
    if (f == NULL)
        return hipErrorInvalidDeviceFunction;
    if (e0 != NULL)
        hipEventRecord(e0, s);
    hipError_t rc = launch(args, s);
    if (e1 != NULL)
        hipEventRecord(e1, s);
    return rc;
}

hipError_t hipLaunchCooperativeKernel(const void *f, dim3 g, dim3 b, void **args, unsigned int shm,
                                      hipStream_t s)
{
    return f ? launch(args, s) : hipErrorInvalidDeviceFunction;
}

hipError_t hipLaunchCooperativeKernelMultiDevice(hipLaunchParams *list, int n, unsigned int flags)
{
    if (list == NULL || n <= 0 || n > ndev())
        return hipErrorInvalidValue;
    for (int i = 0; i < n; i++) {
        hipError_t rc = launch(list[i].args, list[i].stream);
        if (rc != hipSuccess)
            return rc;
    }
    return hipSuccess;
}

hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gx, unsigned int gy, unsigned int gz,
                                 unsigned int bx, unsigned int by, unsigned int bz,
                                 unsigned int shm, hipStream_t s, void **params, void **extra)
{
    return f ? launch(params, s) : hipErrorInvalidResourceHandle;
}

/* C++ linkage in the real 5.2 library: the same mangled name here. */
hipError_t
fake_ext_module_launch(hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t lx,
                       uint32_t ly, uint32_t lz, size_t shm, hipStream_t s, void **params,
                       void **extra, hipEvent_t e0, hipEvent_t e1,
                       uint32_t flags) __asm__("_Z24hipExtModuleLaunchKernelP18ihipModuleSymbol_"
                                               "tjjjjjjmP12ihipStream_tPPvS4_P11ihipE"
                                               "vent_tS6_j");
hipError_t fake_ext_module_launch(hipFunction_t f, uint32_t gx, uint32_t gy, uint32_t gz,
                                  uint32_t lx, uint32_t ly, uint32_t lz, size_t shm, hipStream_t s,
                                  void **params, void **extra, hipEvent_t e0, hipEvent_t e1,
                                  uint32_t flags)
{
    if (f == NULL)
        return hipErrorInvalidResourceHandle;
    if (e0 != NULL)
        hipEventRecord(e0, s);
    hipError_t rc = launch(params, s);
    if (e1 != NULL)
        hipEventRecord(e1, s);
    return rc;
}
