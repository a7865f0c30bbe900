/*
 * The HIP resolver (hip_int.h), and the "hip" source of the table.
 *
 * GPU work is bracketed by two pooled HIP events recorded on its stream.
 * The background thread queries the end event of the oldest operation of
 * each stream (work on a stream completes in order, so one query per
 * stream and poll is enough) and, once complete, reads both events'
 * elapsed time from the device's latest snapshot event.
 *
 * Snapshot pairs: every snapshot period the background thread records an
 * event on a private non-blocking stream of each device it has seen, reads
 * CLOCK_MONOTONIC around it and spins (bounded) until it completes; the
 * event's GPU time lies between the record call and the completion, and the
 * midpoint is its trace time.  GPU time itself is only known as elapsed
 * time between events, so the "gpuN" domain is built by chaining
 * consecutive snapshot events from the first one (whose GPU time is defined
 * as its trace time): the float milliseconds of hipEventElapsedTime stay
 * within a few ns over one snapshot period, and every operation is
 * measured from the latest snapshot event.  A gpu_clockmap of the recent
 * pairs then maps GPU time to trace time, which absorbs GPU clock drift.
 */
#include "gpu/hip_int.h"
#include "gpu/gpu_int.h"
#include "gpu/hip_real.h"

#include <assert.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES  64
#define SNAP_PAIRS   64
#define SNAP_SPIN_NS 2000000 /* longest wait for a snapshot event */
#define PREFILL      128     /* events created per refill by the background thread */
#define OUT_MAX      GPU_LINK_MAX_EVENTS
#define NAME_CACHE   65536

struct pool {
    pthread_mutex_t mu;
    void **free;
    size_t nfree;
    size_t created;
};

struct pstream {
    const void *stream;
    int device;
    uint32_t id;
    struct gpu_hip_op *q; /* ring */
    size_t head, n, cap;
};

struct dev {
    bool seen;
    hipStream_t snap_stream;
    bool have_ref;
    hipEvent_t ref;
    int64_t ref_gpu;
    hipEvent_t snap_pending; /* recorded, not yet complete */
    int64_t snap_trace;      /* its trace time */
    int64_t last_snap;
    gpu_clockmap_t *map;
    struct gpu_snap_pair pairs[SNAP_PAIRS]; /* not yet handed */
    size_t npairs;
};

struct gpu_hip {
    struct gpu_hip_real r;
    struct gpu_hip_opts o;
    gpu_names_t *own_names;
    uint32_t names_sent;
    struct pool pools[MAX_DEVICES];
    struct dev devs[MAX_DEVICES];
    struct pstream *streams;
    size_t nstreams, cap_streams;
    struct gpu_u64map stream_index; /* key(stream, device) -> index + 1 */
    struct gpu_u64map fn_names;     /* fn pointer -> name id */
    struct gpu_u64map module_fns;   /* hipFunction_t -> name id (hipModuleGetFunction) */
    size_t pending;
    uint64_t dropped;
    gpu_event_t *out;
    size_t nout;
};

size_t gpu_hip_resolve(struct gpu_hip_real *r, const char *library)
{
    void *h = NULL;
    size_t found = 0;
    memset(r, 0, sizeof *r);
    if (library != NULL && *library != '\0') {
        h = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    } else {
        /* Never load HIP into a process that has not: only find it. */
        h = dlopen("libamdhip64.so.5", RTLD_NOW | RTLD_NOLOAD);
        if (h == NULL)
            h = dlopen("libamdhip64.so", RTLD_NOW | RTLD_NOLOAD);
    }
#define GPU_HIP_LOOKUP(f, sym)                                                                     \
    {                                                                                              \
        void *p = (library != NULL && *library != '\0') ? NULL : dlsym(RTLD_NEXT, sym);            \
        if (p == NULL && h != NULL)                                                                \
            p = dlsym(h, sym);                                                                     \
        *(void **)&r->f = p;                                                                       \
        found += p != NULL;                                                                        \
    }
    GPU_HIP_FNS(GPU_HIP_LOOKUP)
#undef GPU_HIP_LOOKUP
    /* The handle stays open: the functions must outlive this call. */
    return found;
}

gpu_hip_t *gpu_hip_new(const struct gpu_hip_opts *opts, char *err)
{
    gpu_hip_t *self = xcalloc(1, sizeof *self);
    self->o = *opts;
    if (self->o.snapshot_ns <= 0)
        self->o.snapshot_ns = 100000000;
    if (self->o.max_pending == 0)
        self->o.max_pending = 65536;
    if (self->o.events_per_dev < 4)
        self->o.events_per_dev = 16384;
    gpu_hip_resolve(&self->r, opts->library);
    if (self->r.hipEventCreateWithFlags == NULL || self->r.hipEventRecord == NULL ||
        self->r.hipEventQuery == NULL || self->r.hipEventElapsedTime == NULL ||
        self->r.hipStreamCreateWithFlags == NULL || self->r.hipSetDevice == NULL ||
        self->r.hipGetDevice == NULL) {
        base_err(err, "hip: no HIP runtime in this process%s%s", opts->library ? " from " : "",
                 opts->library ? opts->library : "");
        free(self);
        return NULL;
    }
    if (self->o.names == NULL)
        self->o.names = self->own_names = gpu_names_new(65536);
    for (int i = 0; i < MAX_DEVICES; i++)
        pthread_mutex_init(&self->pools[i].mu, NULL);
    gpu_u64map_init(&self->stream_index, 64);
    gpu_u64map_init(&self->fn_names, 256);
    gpu_u64map_init(&self->module_fns, 64);
    self->out = xcalloc(OUT_MAX, sizeof *self->out);
    return self;
}

void gpu_hip_destroy(gpu_hip_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    gpu_hip_t *self = *self_p;
    for (size_t i = 0; i < self->nstreams; i++) {
        struct pstream *ps = &self->streams[i];
        for (size_t k = 0; k < ps->n; k++) {
            struct gpu_hip_op *op = &ps->q[(ps->head + k) % ps->cap];
            gpu_hip_events_give(self, ps->device, &op->ev0, 1);
            gpu_hip_events_give(self, ps->device, &op->ev1, 1);
        }
        free(ps->q);
    }
    free(self->streams);
    for (int d = 0; d < MAX_DEVICES; d++) {
        struct dev *dv = &self->devs[d];
        if (dv->seen && self->r.hipEventDestroy != NULL) {
            if (dv->have_ref)
                self->r.hipEventDestroy(dv->ref);
            if (dv->snap_pending != NULL)
                self->r.hipEventDestroy(dv->snap_pending);
        }
        if (dv->snap_stream != NULL && self->r.hipStreamDestroy != NULL)
            self->r.hipStreamDestroy(dv->snap_stream);
        gpu_clockmap_destroy(&dv->map);
        struct pool *p = &self->pools[d];
        for (size_t k = 0; k < p->nfree; k++)
            if (self->r.hipEventDestroy != NULL)
                self->r.hipEventDestroy((hipEvent_t)p->free[k]);
        free(p->free);
        pthread_mutex_destroy(&p->mu);
    }
    gpu_u64map_fini(&self->stream_index);
    gpu_u64map_fini(&self->fn_names);
    gpu_u64map_fini(&self->module_fns);
    gpu_names_destroy(&self->own_names);
    free(self->out);
    free(self);
    *self_p = NULL;
}

const struct gpu_hip_real *gpu_hip_real(const gpu_hip_t *self)
{
    assert(self);
    return &self->r;
}

int gpu_hip_events_take(gpu_hip_t *self, int device, void **out, int n, bool may_create)
{
    if (device < 0 || device >= MAX_DEVICES || n <= 0)
        return 0;
    struct pool *p = &self->pools[device];
    int got = 0;
    pthread_mutex_lock(&p->mu);
    while (got < n && p->nfree > 0)
        out[got++] = p->free[--p->nfree];
    size_t room = self->o.events_per_dev - p->created;
    int want = n - got;
    if (may_create && want > 0 && room > 0) {
        if ((size_t)want > room)
            want = (int)room;
        p->created += (size_t)want; /* reserved: creation happens unlocked */
        pthread_mutex_unlock(&p->mu);
        int made = 0;
        for (int i = 0; i < want; i++)
            if (self->r.hipEventCreateWithFlags((hipEvent_t *)&out[got + made], hipEventDefault) ==
                hipSuccess)
                made++;
        got += made;
        pthread_mutex_lock(&p->mu);
        p->created -= (size_t)(want - made);
    }
    pthread_mutex_unlock(&p->mu);
    return got;
}

void gpu_hip_events_give(gpu_hip_t *self, int device, void *const *evs, int n)
{
    if (device < 0 || device >= MAX_DEVICES || n <= 0)
        return;
    struct pool *p = &self->pools[device];
    pthread_mutex_lock(&p->mu);
    if (p->free == NULL)
        p->free = xcalloc(self->o.events_per_dev, sizeof *p->free);
    for (int i = 0; i < n; i++)
        if (evs[i] != NULL && p->nfree < self->o.events_per_dev)
            p->free[p->nfree++] = evs[i];
    pthread_mutex_unlock(&p->mu);
}

static uint64_t stream_key(const void *stream, int device)
{
    return ((uint64_t)(uintptr_t)stream << 6) + (uint64_t)device + 1;
}

static struct pstream *stream_of(gpu_hip_t *self, const void *stream, int device)
{
    uint64_t *v = gpu_u64map_get(&self->stream_index, stream_key(stream, device));
    if (v != NULL)
        return &self->streams[*v - 1];
    if (self->nstreams == self->cap_streams) {
        self->cap_streams = self->cap_streams ? 2 * self->cap_streams : 16;
        self->streams = xreallocarray(self->streams, self->cap_streams, sizeof *self->streams);
    }
    struct pstream *ps = &self->streams[self->nstreams++];
    memset(ps, 0, sizeof *ps);
    ps->stream = stream;
    ps->device = device;
    /* The null stream of every device is 0 on the wire; others count from 1. */
    ps->id = stream == NULL ? 0 : (uint32_t)self->nstreams;
    gpu_u64map_put(&self->stream_index, stream_key(stream, device), self->nstreams);
    return ps;
}

uint32_t gpu_hip_stream_id(gpu_hip_t *self, const void *stream, int device)
{
    assert(self);
    return stream_of(self, stream, device)->id;
}

void gpu_hip_note_function(gpu_hip_t *self, const void *fn, const char *name, bool whole)
{
    assert(self);
    uint32_t id = whole ? gpu_names_intern_symbol(self->o.names, name)
                        : gpu_names_intern(self->o.names, name);
    if (id != 0 && self->module_fns.n < NAME_CACHE)
        gpu_u64map_put(&self->module_fns, (uint64_t)(uintptr_t)fn, id);
}

static void dev_seen(gpu_hip_t *self, int device)
{
    struct dev *dv = &self->devs[device];
    if (!dv->seen) {
        dv->seen = true;
        dv->map = gpu_clockmap_new(SNAP_PAIRS);
    }
}

int gpu_hip_submit(gpu_hip_t *self, const struct gpu_hip_op *op)
{
    assert(self);
    int device = op->ev.device;
    if (device >= MAX_DEVICES || self->pending >= self->o.max_pending) {
        gpu_hip_events_give(self, device, &op->ev0, 1);
        gpu_hip_events_give(self, device, &op->ev1, 1);
        self->dropped++;
        return BASE_ERR;
    }
    dev_seen(self, device);
    struct pstream *ps = stream_of(self, op->stream, device);
    if (ps->n == ps->cap) {
        size_t cap = ps->cap ? 2 * ps->cap : 64;
        struct gpu_hip_op *q = xcalloc(cap, sizeof *q);
        for (size_t k = 0; k < ps->n; k++)
            q[k] = ps->q[(ps->head + k) % ps->cap];
        free(ps->q);
        ps->q = q;
        ps->head = 0;
        ps->cap = cap;
    }
    ps->q[(ps->head + ps->n) % ps->cap] = *op;
    ps->n++;
    self->pending++;
    return BASE_OK;
}

static const char *kernel_name(gpu_hip_t *self, const struct gpu_hip_op *op, char *buf, size_t len)
{
    const char *name = NULL;
    if (op->fn_kind == GPU_HIP_FN_HOSTPTR) {
        if (self->r.hipKernelNameRefByPtr != NULL)
            name = self->r.hipKernelNameRefByPtr(op->fn, (hipStream_t)op->stream);
        if (name == NULL || *name == '\0') {
            Dl_info info;
            if (dladdr(op->fn, &info) != 0 && info.dli_sname != NULL)
                name = info.dli_sname;
        }
        if (name == NULL || *name == '\0') {
            snprintf(buf, len, "kernel@%p", op->fn);
            name = buf;
        }
    } else {
        /*
         * The name recorded when the application got the function first: this
         * runs on the background thread, after the launch, when the
         * application may have unloaded the module and freed the function
         * (hipKernelNameRef on it then reads freed memory: ASan caught it in
         * the threads test, once in about 16 runs).
         */
        uint64_t *id = gpu_u64map_get(&self->module_fns, (uint64_t)(uintptr_t)op->fn);
        if (id != NULL)
            return gpu_names_get(self->o.names, (uint32_t)*id);
        if (self->r.hipKernelNameRef != NULL)
            name = self->r.hipKernelNameRef((hipFunction_t)(uintptr_t)op->fn);
        if (name == NULL || *name == '\0') {
            snprintf(buf, len, "function@%p", op->fn);
            name = buf;
        }
    }
    return name;
}

static uint32_t op_name(gpu_hip_t *self, const struct gpu_hip_op *op)
{
    if (op->fn_kind == GPU_HIP_FN_LABEL || op->fn == NULL)
        return gpu_names_intern(self->o.names, op->label);
    uint64_t key = (uint64_t)(uintptr_t)op->fn;
    uint64_t *id = gpu_u64map_get(&self->fn_names, key);
    if (id != NULL)
        return (uint32_t)*id;
    char buf[64];
    uint32_t nid = gpu_names_intern_symbol(self->o.names, kernel_name(self, op, buf, sizeof buf));
    if (nid != 0 && self->fn_names.n < NAME_CACHE)
        gpu_u64map_put(&self->fn_names, key, nid);
    return nid;
}

/* Make sure device d (the current one) has a private stream for its
 * snapshot events. */
static bool snap_stream(gpu_hip_t *self, int d)
{
    struct dev *dv = &self->devs[d];
    if (dv->snap_stream != NULL)
        return true;
    return self->r.hipStreamCreateWithFlags(&dv->snap_stream, hipStreamNonBlocking) == hipSuccess;
}

/* Accept a completed snapshot event as the device's new reference. */
static void snap_complete(gpu_hip_t *self, int d, hipEvent_t e, int64_t trace)
{
    struct dev *dv = &self->devs[d];
    int64_t gpu = trace;
    if (dv->have_ref) {
        float ms;
        if (self->r.hipEventElapsedTime(&ms, dv->ref, e) != hipSuccess) {
            gpu_hip_events_give(self, d, (void *const *)&e, 1);
            return;
        }
        gpu = dv->ref_gpu + llround((double)ms * 1e6);
        gpu_hip_events_give(self, d, (void *const *)&dv->ref, 1);
    }
    dv->ref = e;
    dv->ref_gpu = gpu;
    dv->have_ref = true;
    if (gpu_clockmap_add(dv->map, gpu, trace, NULL) == BASE_OK && dv->npairs < SNAP_PAIRS)
        dv->pairs[dv->npairs++] = (struct gpu_snap_pair){gpu, trace};
}

static void snapshot(gpu_hip_t *self, int d, int64_t now)
{
    struct dev *dv = &self->devs[d];
    if (dv->snap_pending != NULL) {
        hipError_t q = self->r.hipEventQuery(dv->snap_pending);
        if (q == hipErrorNotReady)
            return;
        hipEvent_t e = dv->snap_pending;
        dv->snap_pending = NULL;
        if (q == hipSuccess)
            snap_complete(self, d, e, dv->snap_trace);
        else
            gpu_hip_events_give(self, d, (void *const *)&e, 1);
        return;
    }
    if (dv->have_ref && now - dv->last_snap < self->o.snapshot_ns)
        return;
    if (!snap_stream(self, d))
        return;
    void *ev;
    if (gpu_hip_events_take(self, d, &ev, 1, true) != 1)
        return;
    hipEvent_t e = ev;
    dv->last_snap = now;
    int64_t t0 = base_monotonic_ns();
    if (self->r.hipEventRecord(e, dv->snap_stream) != hipSuccess) {
        gpu_hip_events_give(self, d, (void *const *)&e, 1);
        return;
    }
    int64_t t1 = base_monotonic_ns(), t2 = t1;
    hipError_t q;
    while ((q = self->r.hipEventQuery(e)) == hipErrorNotReady && t2 - t0 < SNAP_SPIN_NS)
        t2 = base_monotonic_ns();
    if (q == hipSuccess) {
        snap_complete(self, d, e, t0 + (t2 - t0) / 2);
    } else if (q == hipErrorNotReady) {
        /* The device is slow to reach it; its time is then best known as
         * the moment of the record call. */
        dv->snap_pending = e;
        dv->snap_trace = t0 + (t1 - t0) / 2;
    } else {
        gpu_hip_events_give(self, d, (void *const *)&e, 1);
    }
}

static void flush_out(gpu_hip_t *self, gpu_msg_fn fn, void *ctx)
{
    if (self->nout == 0)
        return;
    gpu_msg_t m;
    if (self->own_names != NULL && gpu_names_count(self->own_names) > self->names_sent) {
        uint32_t n = gpu_names_count(self->own_names) - self->names_sent;
        if (n > GPU_LINK_MAX_NAMES)
            n = GPU_LINK_MAX_NAMES;
        uint32_t ids[GPU_LINK_MAX_NAMES];
        const char *strs[GPU_LINK_MAX_NAMES];
        while (self->names_sent < gpu_names_count(self->own_names)) {
            uint32_t k = 0;
            for (; k < n && self->names_sent + k < gpu_names_count(self->own_names); k++) {
                ids[k] = self->names_sent + k + 1;
                strs[k] = gpu_names_get(self->own_names, ids[k]);
            }
            memset(&m, 0, sizeof m);
            m.kind = GPU_MSG_NAMES;
            m.pid = self->o.pid;
            m.name_ids = ids;
            m.name_strs = strs;
            m.nnames = k;
            fn(ctx, &m);
            self->names_sent += k;
        }
    }
    memset(&m, 0, sizeof m);
    m.kind = GPU_MSG_EV;
    m.pid = self->o.pid;
    m.ev = self->out;
    m.nev = self->nout;
    fn(ctx, &m);
    self->nout = 0;
}

/* Resolve the oldest operations of stream ps that have completed. */
static int resolve_stream(gpu_hip_t *self, struct pstream *ps, gpu_msg_fn fn, void *ctx)
{
    struct dev *dv = &self->devs[ps->device];
    int done = 0;
    if (!dv->have_ref)
        return 0;
    while (ps->n > 0) {
        struct gpu_hip_op *op = &ps->q[ps->head];
        hipError_t q = self->r.hipEventQuery((hipEvent_t)op->ev1);
        if (q == hipErrorNotReady)
            break;
        float ms0 = 0, ms1 = 0;
        bool ok = q == hipSuccess &&
                  self->r.hipEventElapsedTime(&ms0, dv->ref, (hipEvent_t)op->ev0) == hipSuccess &&
                  self->r.hipEventElapsedTime(&ms1, dv->ref, (hipEvent_t)op->ev1) == hipSuccess;
        int64_t s, e;
        if (ok &&
            gpu_clockmap_map(dv->map, dv->ref_gpu + llround((double)ms0 * 1e6), &s) == BASE_OK &&
            gpu_clockmap_map(dv->map, dv->ref_gpu + llround((double)ms1 * 1e6), &e) == BASE_OK) {
            gpu_event_t *ev = &self->out[self->nout++];
            *ev = op->ev;
            ev->pid = self->o.pid;
            ev->stream = ps->id;
            ev->name_id = op_name(self, op);
            ev->flags |= GPU_EVF_DEVICE_TIME;
            if (gpu_names_collective(self->o.names, ev->name_id))
                ev->flags |= GPU_EVF_COLLECTIVE;
            ev->start_ns = s;
            ev->end_ns = e < s ? s : e;
            done++;
            if (self->nout == OUT_MAX)
                flush_out(self, fn, ctx);
        } else {
            self->dropped++;
        }
        gpu_hip_events_give(self, ps->device, &op->ev0, 1);
        gpu_hip_events_give(self, ps->device, &op->ev1, 1);
        ps->head = (ps->head + 1) % ps->cap;
        ps->n--;
        self->pending--;
    }
    return done;
}

static void hand_snaps(gpu_hip_t *self, gpu_msg_fn fn, void *ctx)
{
    for (int d = 0; d < MAX_DEVICES; d++) {
        struct dev *dv = &self->devs[d];
        if (!dv->seen || dv->npairs == 0)
            continue;
        char dom[16];
        snprintf(dom, sizeof dom, "gpu%d", d);
        gpu_msg_t m;
        memset(&m, 0, sizeof m);
        m.kind = GPU_MSG_SNAP;
        m.pid = self->o.pid;
        m.domain_a = dom;
        m.domain_b = "trace";
        m.snap = dv->pairs;
        m.nsnap = dv->npairs;
        fn(ctx, &m);
        dv->npairs = 0;
    }
}

/* Keep a reserve of ready events (of device d, the current one) so that
 * application threads seldom create one themselves. */
static void prefill(gpu_hip_t *self, int d)
{
    struct pool *p = &self->pools[d];
    pthread_mutex_lock(&p->mu);
    bool low = p->nfree < PREFILL / 2 && p->created < self->o.events_per_dev;
    pthread_mutex_unlock(&p->mu);
    if (!low)
        return;
    void *evs[PREFILL];
    int n = gpu_hip_events_take(self, d, evs, PREFILL, true);
    gpu_hip_events_give(self, d, evs, n);
}

int gpu_hip_poll(gpu_hip_t *self, int64_t now_ns, gpu_msg_fn fn, void *ctx, char *err)
{
    assert(self);
    int done = 0;
    for (int d = 0; d < MAX_DEVICES; d++) {
        /* Events and streams are created on the current device: this
         * (background) thread switches to each device it serves. */
        if (!self->devs[d].seen || self->r.hipSetDevice(d) != hipSuccess)
            continue;
        snapshot(self, d, now_ns);
        prefill(self, d);
    }
    /* Pairs go out before the events they map. */
    hand_snaps(self, fn, ctx);
    for (size_t i = 0; i < self->nstreams; i++)
        done += resolve_stream(self, &self->streams[i], fn, ctx);
    flush_out(self, fn, ctx);
    (void)err;
    return done;
}

static bool snaps_pending(const gpu_hip_t *self)
{
    for (int d = 0; d < MAX_DEVICES; d++)
        if (self->devs[d].seen && self->devs[d].snap_pending != NULL)
            return true;
    return false;
}

void gpu_hip_finish(gpu_hip_t *self, int64_t timeout_ns, gpu_msg_fn fn, void *ctx)
{
    assert(self);
    int64_t end = base_monotonic_ns() + timeout_ns;
    /* A snapshot still in flight is waited for too: without a pair, the
     * receiver cannot map this run's GPU times at all. */
    while ((self->pending > 0 || snaps_pending(self)) && base_monotonic_ns() < end) {
        gpu_hip_poll(self, base_monotonic_ns(), fn, ctx, NULL);
        if (self->pending > 0 || snaps_pending(self))
            base_sleep_ns(1000000);
    }
    gpu_hip_poll(self, base_monotonic_ns(), fn, ctx, NULL); /* hands the last pairs on */
    /* What never completed is dropped; its events are released. */
    for (size_t i = 0; i < self->nstreams; i++) {
        struct pstream *ps = &self->streams[i];
        while (ps->n > 0) {
            struct gpu_hip_op *op = &ps->q[ps->head];
            gpu_hip_events_give(self, ps->device, &op->ev0, 1);
            gpu_hip_events_give(self, ps->device, &op->ev1, 1);
            ps->head = (ps->head + 1) % ps->cap;
            ps->n--;
            self->pending--;
            self->dropped++;
        }
    }
}

size_t gpu_hip_pending(const gpu_hip_t *self)
{
    assert(self);
    return self->pending;
}

uint64_t gpu_hip_dropped(const gpu_hip_t *self)
{
    assert(self);
    return self->dropped;
}

uint32_t gpu_hip_devices(gpu_hip_t *self)
{
    assert(self);
    int n = 0;
    if (self->r.hipGetDeviceCount == NULL || self->r.hipGetDeviceCount(&n) != hipSuccess || n < 0)
        return 0;
    return (uint32_t)n;
}

/* ---- the "hip" source: the resolver on its own (operations come from
 * libdptrace's interposed functions through gpu_hip_submit) ---- */

static int hip_probe(char *err)
{
    struct gpu_hip_real r;
    gpu_hip_resolve(&r, NULL);
    if (r.hipEventRecord == NULL)
        return base_err(err, "hip: no HIP runtime in this process");
    return BASE_OK;
}

static void *hip_open(const struct gpu_source_opts *opts, char *err)
{
    struct gpu_hip_opts ho = {.pid = opts->pid, .names = opts->names};
    char lib[512] = "";
    if (gpu_opts_check(
            opts->options,
            (const char *const[]){"library", "snapshot_ms", "max_pending", "events_per_dev", NULL},
            err) != BASE_OK)
        return NULL;
    if (gpu_opts_get(opts->options, "library", lib, sizeof lib))
        ho.library = lib;
    int64_t snap_ms = 0, max_pending = 0, events_per_dev = 0;
    if (gpu_opts_int(opts->options, "hip", "snapshot_ms", 1, 60000, &snap_ms, err) != BASE_OK ||
        gpu_opts_int(opts->options, "hip", "max_pending", 1, 10000000, &max_pending, err) !=
            BASE_OK ||
        gpu_opts_int(opts->options, "hip", "events_per_dev", 1, 10000000, &events_per_dev, err) !=
            BASE_OK)
        return NULL;
    ho.snapshot_ns = snap_ms * 1000000;
    ho.max_pending = (size_t)max_pending;
    ho.events_per_dev = (size_t)events_per_dev;
    return gpu_hip_new(&ho, err);
}

static int hip_poll(void *state, int64_t now_ns, gpu_msg_fn fn, void *ctx, char *err)
{
    return gpu_hip_poll(state, now_ns, fn, ctx, err);
}

static void hip_counters(void *state, struct gpu_source_counters *out)
{
    memset(out, 0, sizeof *out);
    out->dropped = gpu_hip_dropped(state);
    out->pending = gpu_hip_pending(state);
}

static void hip_close(void *state)
{
    gpu_hip_t *self = state;
    gpu_hip_destroy(&self);
}

const struct gpu_source gpu_source_hip = {
    .name = "hip",
    .summary = "HIP kernels, copies, memsets and synchronisation (LD_PRELOAD=libdptrace.so)",
    .flags = GPU_SRC_IN_APP,
    .probe = hip_probe,
    .open = hip_open,
    .poll = hip_poll,
    .counters = hip_counters,
    .close = hip_close,
};
