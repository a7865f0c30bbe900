/*
 * Simulated training workload (gpu.h).  A step is laid out in TRUE time as
 * fractions of the step period P, starting at T = k·P:
 *
 *   0.01–0.05  batch_h2d copy (stream 2)
 *   0.05–0.35  forward: fwd_gemm_<i> per layer (stream 1)
 *   0.35–0.65  backward: bwd_gemm_<i> (stream 1); the straggler's backward
 *              is stretched by its lateness
 *   0.70–0.80  allreduce (stream 2, collective); the straggler starts late,
 *              everyone ends together at 0.80 + late
 *   then       sgd_update (stream 1), loss_d2h (stream 2), a host
 *              hipStreamSynchronize, and the step ends
 *
 * Host ranges (step, forward, backward, layer_<i>, allreduce, optimizer)
 * enclose the API calls and the GPU work they issue, which carry the
 * innermost range's scope id.  Times are generated in true time and pass
 * through the caller's clock function only when handed out, so a node's
 * clock offset shows exactly as it would on real hardware.
 */
#include "gpu/gpu.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LAYERS     64
#define STEP_EVENTS    (6 * MAX_LAYERS + 16)
#define PENDING_STEPS  4
#define PENDING_EVENTS (PENDING_STEPS * STEP_EVENTS)
#define API_NS         8000  /* host duration of a launch call */
#define LEAD_NS        20000 /* a range opens this long before its GPU work */

enum sim_name {
    N_STEP,
    N_FORWARD,
    N_BACKWARD,
    N_OPTIMIZER,
    N_ALLREDUCE,
    N_SGD,
    N_H2D,
    N_D2H,
    N_LAUNCH,
    N_MEMCPY,
    N_NCCL,
    N_SYNC,
    N_FIXED
};

static const char *const fixed_names[N_FIXED] = {
    "step",           "forward",       "backward",
    "optimizer",      "allreduce",     "sgd_update",
    "batch_h2d",      "loss_d2h",      "hipLaunchKernel",
    "hipMemcpyAsync", "ncclAllReduce", "hipStreamSynchronize",
};

struct sim_ev {
    gpu_event_t e; /* start_ns/end_ns in true time until handed out */
};

struct gpu_sim {
    struct gpu_sim_cfg cfg;
    gpu_sim_clock_fn clock;
    void *clock_ctx;
    gpu_names_t *names;
    uint32_t id_fixed[N_FIXED];
    uint32_t id_layer[MAX_LAYERS], id_fwd[MAX_LAYERS], id_bwd[MAX_LAYERS];
    bool names_sent;
    uint64_t next_scope;
    uint32_t next_corr;
    bool started;
    uint64_t next_step;
    struct sim_ev *pend;
    size_t npend;
    struct gpu_scope_pair *pairs; /* generated, not yet handed */
    size_t npairs;
    uint64_t steps, skipped, overflow;
};

void gpu_sim_defaults(struct gpu_sim_cfg *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->step_period_ns = 100000000;
    cfg->layers = 4;
    cfg->straggler_node = -1;
    cfg->seed = 1;
}

gpu_sim_t *gpu_sim_new(const struct gpu_sim_cfg *cfg, gpu_sim_clock_fn clock, void *clock_ctx,
                       char *err)
{
    if (cfg->step_period_ns < 1000000 || cfg->step_period_ns > 60000000000LL) {
        base_err(err, "sim: step period %" PRId64 " ns is outside [1 ms, 60 s]",
                 cfg->step_period_ns);
        return NULL;
    }
    if (cfg->layers < 1 || cfg->layers > MAX_LAYERS) {
        base_err(err, "sim: layers %" PRIu32 " is outside [1, %d]", cfg->layers, MAX_LAYERS);
        return NULL;
    }
    if (cfg->straggler_late_ns < 0 || cfg->straggler_late_ns > cfg->step_period_ns / 10) {
        base_err(err, "sim: straggler lateness %" PRId64 " ns is outside [0, step period / 10]",
                 cfg->straggler_late_ns);
        return NULL;
    }
    if (cfg->jitter_ns < 0 || cfg->jitter_ns > cfg->step_period_ns / 10) {
        base_err(err, "sim: arrival jitter %" PRId64 " ns is outside [0, step period / 10]",
                 cfg->jitter_ns);
        return NULL;
    }
    if (cfg->pid == 0) {
        base_err(err, "sim: pid must not be 0");
        return NULL;
    }
    gpu_sim_t *self = xcalloc(1, sizeof *self);
    self->cfg = *cfg;
    self->clock = clock;
    self->clock_ctx = clock_ctx;
    self->names = gpu_names_new(N_FIXED + 3 * MAX_LAYERS);
    for (int i = 0; i < N_FIXED; i++)
        self->id_fixed[i] = gpu_names_intern(self->names, fixed_names[i]);
    for (uint32_t i = 0; i < cfg->layers; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "layer_%" PRIu32, i);
        self->id_layer[i] = gpu_names_intern(self->names, buf);
        snprintf(buf, sizeof buf, "fwd_gemm_%" PRIu32, i);
        self->id_fwd[i] = gpu_names_intern(self->names, buf);
        snprintf(buf, sizeof buf, "bwd_gemm_%" PRIu32, i);
        self->id_bwd[i] = gpu_names_intern(self->names, buf);
    }
    self->next_scope = 1;
    self->next_corr = 1;
    self->pend = xcalloc(PENDING_EVENTS, sizeof *self->pend);
    self->pairs = xcalloc(PENDING_EVENTS, sizeof *self->pairs);
    return self;
}

void gpu_sim_destroy(gpu_sim_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    gpu_sim_t *self = *self_p;
    gpu_names_destroy(&self->names);
    free(self->pend);
    free(self->pairs);
    free(self);
    *self_p = NULL;
}

static uint64_t splitmix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* A duration d shortened by up to 10 %, reproducible from (seed, node, step, i). */
static int64_t jitter(const gpu_sim_t *self, uint64_t step, uint32_t i, int64_t d)
{
    uint64_t r =
        splitmix(self->cfg.seed ^ splitmix(((uint64_t)self->cfg.node << 48) ^ (step << 8) ^ i));
    double u = (double)(r >> 11) / 9007199254740992.0;
    return d - (int64_t)(0.1 * u * (double)d);
}

int64_t gpu_sim_arrival_jitter(uint64_t step, uint16_t node, int64_t jitter_ns)
{
    if (jitter_ns <= 0)
        return 0;
    return (int64_t)(splitmix((step << 16) + node) % (uint64_t)(jitter_ns + 1));
}

static bool is_straggler(const gpu_sim_t *self)
{
    return self->cfg.straggler_node >= 0 && self->cfg.straggler_node == (int32_t)self->cfg.node;
}

static int64_t late_all(const gpu_sim_t *self)
{
    return self->cfg.straggler_node >= 0 ? self->cfg.straggler_late_ns : 0;
}

void gpu_sim_collective_true(const gpu_sim_t *self, uint64_t step, int64_t *start_ns,
                             int64_t *end_ns)
{
    assert(self);
    int64_t p = self->cfg.step_period_ns, t = (int64_t)step * p;
    *start_ns = t + p * 7 / 10 + (is_straggler(self) ? self->cfg.straggler_late_ns : 0) +
                gpu_sim_arrival_jitter(step, self->cfg.node, self->cfg.jitter_ns);
    /* Everyone ends together, after the latest arrival any node can have. */
    *end_ns = t + p * 8 / 10 + late_all(self) + self->cfg.jitter_ns;
}

static gpu_event_t *add(gpu_sim_t *self, uint8_t kind, uint32_t name, uint64_t scope, int64_t start,
                        int64_t end)
{
    if (self->npend >= PENDING_EVENTS) {
        self->overflow++;
        return NULL;
    }
    gpu_event_t *e = &self->pend[self->npend++].e;
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->node = self->cfg.node;
    e->pid = self->cfg.pid;
    e->tid = self->cfg.pid; /* the host work happens on the main thread */
    e->device = self->cfg.device;
    e->name_id = name;
    e->scope_id = scope;
    e->start_ns = start;
    e->end_ns = end < start ? start : end;
    return e;
}

static uint64_t open_scope(gpu_sim_t *self, uint64_t parent)
{
    uint64_t id = self->next_scope++;
    if (self->npairs < PENDING_EVENTS)
        self->pairs[self->npairs++] = (struct gpu_scope_pair){id, parent};
    else
        self->overflow++;
    return id;
}

/* An API call [gpu_start - LEAD/2, + API_NS] and the GPU work it launched. */
static gpu_event_t *launch(gpu_sim_t *self, uint8_t kind, uint32_t api, uint32_t name,
                           uint64_t scope, uint32_t stream, int64_t start, int64_t end,
                           uint64_t bytes, uint8_t flags)
{
    uint32_t corr = self->next_corr++;
    if (self->next_corr == 0)
        self->next_corr = 1;
    int64_t a0 = start - LEAD_NS / 2;
    gpu_event_t *a = add(self, GPU_EV_API, self->id_fixed[api], scope, a0, a0 + API_NS);
    if (a != NULL) {
        a->corr_id = corr;
        a->stream = stream;
        a->flags = GPU_EVF_ASYNC;
    }
    gpu_event_t *g = add(self, kind, name, scope, start, end);
    if (g == NULL)
        return NULL;
    g->corr_id = corr;
    g->stream = stream;
    g->flags = GPU_EVF_DEVICE_TIME | flags;
    g->bytes = bytes;
    if (kind == GPU_EV_KERNEL) {
        g->grid[0] = 1024;
        g->grid[1] = g->grid[2] = 1;
        g->block[0] = 256;
        g->block[1] = g->block[2] = 1;
        g->bytes = 0;
    }
    return g;
}

static void gen_step(gpu_sim_t *self, uint64_t k)
{
    const int64_t p = self->cfg.step_period_ns, t = (int64_t)k * p;
    const uint32_t layers = self->cfg.layers;
    int64_t cs, ce;
    gpu_sim_collective_true(self, k, &cs, &ce);
    const int64_t late_self = cs - (t + p * 7 / 10);
    uint64_t s = open_scope(self, 0);

    gpu_event_t *c = launch(self, GPU_EV_MEMCPY, N_MEMCPY, self->id_fixed[N_H2D], s, 2, t + p / 100,
                            t + p * 5 / 100, 64u << 20, 0);
    if (c != NULL)
        c->copy_kind = GPU_COPY_H2D;

    /* Forward.  Host ranges nest as a program's push/pop do: a layer's
     * range holds its launch and closes before the next layer's opens (the
     * kernel runs on, asynchronously), the pass's range holds its layers'. */
    int64_t fd = p * 30 / 100 / layers, f0 = t + p * 5 / 100;
    uint64_t f = open_scope(self, s);
    add(self, GPU_EV_RANGE, self->id_fixed[N_FORWARD], f, f0 - LEAD_NS,
        f0 + fd * layers - LEAD_NS - 500);
    for (uint32_t i = 0; i < layers; i++) {
        int64_t ks = f0 + fd * i, ke = ks + jitter(self, k, i, fd);
        uint64_t l = open_scope(self, f);
        add(self, GPU_EV_RANGE, self->id_layer[i], l, ks - LEAD_NS, ks + fd - LEAD_NS - 1000);
        launch(self, GPU_EV_KERNEL, N_LAUNCH, self->id_fwd[i], l, 1, ks, ke, 0, 0);
    }

    /* Backward, stretched on the straggler. */
    int64_t bd = (p * 30 / 100 + late_self) / layers, b0 = t + p * 35 / 100;
    uint64_t b = open_scope(self, s);
    add(self, GPU_EV_RANGE, self->id_fixed[N_BACKWARD], b, b0 - LEAD_NS,
        b0 + bd * layers - LEAD_NS - 500);
    for (uint32_t j = 0; j < layers; j++) {
        uint32_t i = layers - 1 - j;
        int64_t ks = b0 + bd * j, ke = ks + jitter(self, k, 1000 + i, bd);
        uint64_t l = open_scope(self, b);
        add(self, GPU_EV_RANGE, self->id_layer[i], l, ks - LEAD_NS, ks + bd - LEAD_NS - 1000);
        launch(self, GPU_EV_KERNEL, N_LAUNCH, self->id_bwd[i], l, 1, ks, ke, 0, 0);
    }

    /* The collective: same true start everywhere but on the straggler. */
    uint64_t r = open_scope(self, s);
    add(self, GPU_EV_RANGE, self->id_fixed[N_ALLREDUCE], r, cs - LEAD_NS, ce);
    launch(self, GPU_EV_KERNEL, N_NCCL, self->id_fixed[N_ALLREDUCE], r, 2, cs, ce, 0,
           GPU_EVF_COLLECTIVE);

    /* Optimizer, loss copy, host wait, end of step. */
    int64_t o0 = ce + p / 100, o1 = ce + p * 6 / 100, d1 = ce + p * 7 / 100;
    uint64_t o = open_scope(self, s);
    add(self, GPU_EV_RANGE, self->id_fixed[N_OPTIMIZER], o, o0 - LEAD_NS, o1);
    launch(self, GPU_EV_KERNEL, N_LAUNCH, self->id_fixed[N_SGD], o, 1, o0, o1, 0, 0);
    c = launch(self, GPU_EV_MEMCPY, N_MEMCPY, self->id_fixed[N_D2H], s, 2, o1, d1, 4096, 0);
    if (c != NULL)
        c->copy_kind = GPU_COPY_D2H;
    /* The host waits once the copy's call has returned. */
    gpu_event_t *w = add(self, GPU_EV_SYNC, self->id_fixed[N_SYNC], s, o1, d1 + 5000);
    if (w != NULL)
        w->stream = 2;
    gpu_event_t *st = add(self, GPU_EV_STEP, self->id_fixed[N_STEP], s, t, d1 + p / 100);
    if (st != NULL)
        st->step = k;
    self->steps++;
}

static int by_end(const void *a, const void *b)
{
    const gpu_event_t *x = a, *y = b;
    if (x->end_ns != y->end_ns)
        return x->end_ns < y->end_ns ? -1 : 1;
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static int64_t to_local(const gpu_sim_t *self, int64_t t)
{
    return self->clock ? self->clock(self->clock_ctx, t) : t;
}

int gpu_sim_poll(gpu_sim_t *self, int64_t true_now_ns, gpu_msg_fn fn, void *ctx, char *err)
{
    assert(self);
    const int64_t p = self->cfg.step_period_ns;
    gpu_msg_t m;
    if (true_now_ns < 0)
        return base_err(err, "sim: negative true time");
    if (!self->names_sent) {
        uint32_t n = gpu_names_count(self->names);
        uint32_t ids[N_FIXED + 3 * MAX_LAYERS];
        const char *strs[N_FIXED + 3 * MAX_LAYERS];
        for (uint32_t i = 0; i < n; i++) {
            ids[i] = i + 1;
            strs[i] = gpu_names_get(self->names, i + 1);
        }
        memset(&m, 0, sizeof m);
        m.kind = GPU_MSG_NAMES;
        m.pid = self->cfg.pid;
        m.name_ids = ids;
        m.name_strs = strs;
        m.nnames = n;
        fn(ctx, &m);
        self->names_sent = true;
    }
    if (!self->started) {
        self->next_step = (uint64_t)(true_now_ns / p) + 1;
        self->started = true;
    }
    while ((int64_t)self->next_step * p <= true_now_ns) {
        if ((int64_t)self->next_step * p < true_now_ns - 2 * p)
            self->skipped++;
        else
            gen_step(self, self->next_step);
        self->next_step++;
    }
    if (self->npairs > 0) {
        memset(&m, 0, sizeof m);
        m.kind = GPU_MSG_SCOPE;
        m.pid = self->cfg.pid;
        for (size_t off = 0; off < self->npairs; off += GPU_LINK_MAX_SCOPE) {
            m.scope = self->pairs + off;
            m.nscope =
                self->npairs - off < GPU_LINK_MAX_SCOPE ? self->npairs - off : GPU_LINK_MAX_SCOPE;
            fn(ctx, &m);
        }
        self->npairs = 0;
    }
    /* Hand out what has ended, in order of end time, on the local clock. */
    size_t ready = 0;
    for (size_t i = 0; i < self->npend; i++) {
        if (self->pend[i].e.end_ns <= true_now_ns) {
            struct sim_ev tmp = self->pend[ready];
            self->pend[ready] = self->pend[i];
            self->pend[i] = tmp;
            ready++;
        }
    }
    if (ready == 0)
        return 0;
    qsort(self->pend, ready, sizeof *self->pend, by_end);
    gpu_event_t *out = xcalloc(ready, sizeof *out);
    for (size_t i = 0; i < ready; i++) {
        out[i] = self->pend[i].e;
        out[i].start_ns = to_local(self, out[i].start_ns);
        out[i].end_ns = to_local(self, out[i].end_ns);
        if (out[i].end_ns < out[i].start_ns)
            out[i].end_ns = out[i].start_ns;
    }
    memmove(self->pend, self->pend + ready, (self->npend - ready) * sizeof *self->pend);
    self->npend -= ready;
    memset(&m, 0, sizeof m);
    m.kind = GPU_MSG_EV;
    m.pid = self->cfg.pid;
    for (size_t off = 0; off < ready; off += GPU_LINK_MAX_EVENTS) {
        m.ev = out + off;
        m.nev = ready - off < GPU_LINK_MAX_EVENTS ? ready - off : GPU_LINK_MAX_EVENTS;
        fn(ctx, &m);
    }
    free(out);
    return (int)ready;
}

uint64_t gpu_sim_steps(const gpu_sim_t *self)
{
    assert(self);
    return self->steps;
}

uint64_t gpu_sim_skipped(const gpu_sim_t *self)
{
    assert(self);
    return self->skipped;
}
