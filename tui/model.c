/*
 * The console's model of the cluster, fed one bus message at a time (live,
 * from a recording, or by a test).  Control messages are small and their
 * headers were already checked against the protocol schema by the bus
 * decoder; the model reads them again with the strict getters because tests
 * and replays may feed it messages that never went through that decoder.
 *
 * Everything is bounded: nodes, edges, names, processes (scope trees and
 * drop counters) and events (the store); what does not fit is counted.
 */
#include "tui/tui.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PROCS       4096
#define SCOPE_PER_PROC  65536
#define DOWN_SILENCE_NS 5000000000LL /* without a master node table: down after 5 s */

struct mnode {
    struct tui_node pub;
    size_t raw_pairs; /* trace -> probe snapshot pairs held by the clock conversion */
    int64_t raw_last;
    /* The last three trace pairs and how far each middle one lay off the
     * line through its neighbours: what interpolating between pairs can be
     * wrong by (the ring's largest of the latest SNAP_DEV). */
    int64_t px[3], py[3];
    size_t np;
    double dev[8];
    size_t ndev, dev_pos;
    /* the latest TUI_GPU_HIST device readings of its status messages, a ring */
    struct tui_gpu_reading *gpu_hist;
    size_t ngpu_hist, gpu_hist_pos;
    size_t boot_pairs; /* boottime -> probe */
    int64_t boot_last;
    bool have_shift; /* trace + shift ~ arrival time, when no pairs */
    int64_t shift;
    uint64_t events_at_tick;
    int64_t prev_status_t;
    uint64_t prev_probes_sent;
    uint64_t prev_user_ts; /* tx_user_ts + rx_user_ts of the status before */
    bool have_prev_user;
};

struct proc {
    uint16_t node;
    uint32_t pid;
    uint64_t dropped;
    gpu_scopetree_t *scope;
};

struct name {
    uint16_t node;
    uint32_t pid, id;
    char *str; /* NULL: empty slot */
};

struct tui_model {
    struct tui_model_opts opts;
    struct mnode *nodes; /* sorted by id */
    size_t nnodes, capnodes;
    struct tui_edge *edges; /* sorted by (src, dst) */
    size_t nedges, capedges;
    struct name *names; /* open addressing */
    size_t nnames, capnames;
    struct proc *procs;
    size_t nprocs;
    size_t last_proc;
    tui_store_t *store;
    clock_conv_t *conv;
    gpu_event_t *scratch;
    size_t scratch_cap;
    int ref;
    /* The newest solve's loops (offset degrees of freedom) and edges used. */
    int64_t solve_window, loops, solve_edges;
    double stamp_asym_ns; /* the host stamp asymmetry its ± assume (NAN: not said) */
    double delay_ns;      /* its largest bound from hosts slow to stamp (NAN: not said) */
    int64_t warming;      /* hosts it bounded by their least margin, no level yet */
    /* The master's relay table (`relays`), as last published. */
    size_t relays, relays_up;
    uint64_t relays_lost;
    bool have_table; /* the master's node table has arrived */
    uint64_t gen;
    base_decstats_t dec;
    char last_error[BASE_ERRLEN];
    char last_log[256];
    int64_t last_log_ns;
    struct tui_log_line log[TUI_LOG_LINES]; /* a ring: log_next is the oldest once full */
    size_t log_next;
    struct tui_log_stats log_st;
    uint64_t dropped_nodes, dropped_edges, dropped_names, dropped_procs;
    int64_t latest_global, latest_raw;
    int64_t tick_ns;
};

/* ---- construction ------------------------------------------------------ */

static void model_init(tui_model_t *self)
{
    self->store = tui_store_new(self->opts.event_budget, TUI_MAX_TRACKS);
    self->conv = clock_conv_new(NULL);
    self->ref = -1;
    self->solve_window = INT64_MIN;
    self->loops = -1;
    self->stamp_asym_ns = self->delay_ns = NAN;
}

static void model_fini(tui_model_t *self)
{
    for (size_t i = 0; i < self->nnodes; i++)
        free(self->nodes[i].gpu_hist);
    free(self->nodes);
    free(self->edges);
    for (size_t i = 0; i < self->capnames; i++)
        free(self->names[i].str);
    free(self->names);
    for (size_t i = 0; i < self->nprocs; i++)
        gpu_scopetree_destroy(&self->procs[i].scope);
    free(self->procs);
    free(self->scratch);
    tui_store_destroy(&self->store);
    clock_conv_destroy(&self->conv);
    struct tui_model_opts o = self->opts;
    memset(self, 0, sizeof *self);
    self->opts = o;
}

tui_model_t *tui_model_new(const struct tui_model_opts *opts)
{
    tui_model_t *self = xcalloc(1, sizeof *self);
    if (opts)
        self->opts = *opts;
    if (self->opts.event_budget == 0)
        self->opts.event_budget = TUI_DEFAULT_BUDGET;
    if (self->opts.max_nodes == 0 || self->opts.max_nodes > 65536)
        self->opts.max_nodes = 4096;
    if (self->opts.max_names == 0)
        self->opts.max_names = 1u << 20;
    if (self->opts.max_edges == 0)
        self->opts.max_edges = 16384;
    if (self->opts.max_batch == 0)
        self->opts.max_batch = 1u << 20;
    model_init(self);
    return self;
}

void tui_model_destroy(tui_model_t **self)
{
    if (self == NULL || *self == NULL)
        return;
    model_fini(*self);
    free(*self);
    *self = NULL;
}

void tui_model_reset(tui_model_t *self)
{
    assert(self);
    model_fini(self);
    model_init(self);
}

/* ---- lookups ----------------------------------------------------------- */

static struct mnode *find_node(tui_model_t *self, uint16_t id, bool create)
{
    size_t lo = 0, hi = self->nnodes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (self->nodes[mid].pub.id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < self->nnodes && self->nodes[lo].pub.id == id)
        return &self->nodes[lo];
    if (!create)
        return NULL;
    if (self->nnodes >= self->opts.max_nodes) {
        self->dropped_nodes++;
        return NULL;
    }
    if (self->nnodes == self->capnodes) {
        self->capnodes = self->capnodes ? 2 * self->capnodes : 16;
        self->nodes = xreallocarray(self->nodes, self->capnodes, sizeof *self->nodes);
    }
    memmove(&self->nodes[lo + 1], &self->nodes[lo], (self->nnodes - lo) * sizeof *self->nodes);
    self->nnodes++;
    struct mnode *n = &self->nodes[lo];
    memset(n, 0, sizeof *n);
    n->pub.id = id;
    n->pub.state = TUI_NODE_UNKNOWN;
    n->pub.fit.window = -1;
    n->pub.gpu_busy_pct = n->pub.vram_used_b = n->pub.vram_total_b = NAN;
    n->pub.power_w = n->pub.temp_c = NAN;
    n->pub.user_ts = -1;
    n->pub.rtt_min_ns = n->pub.rtt_med_ns = n->pub.pure_pct = n->pub.loss_pct = NAN;
    n->pub.is_ref = self->ref == (int)id;
    self->gen++;
    return n;
}

static struct tui_edge *find_edge(tui_model_t *self, uint16_t src, uint16_t dst, bool create)
{
    uint32_t key = (uint32_t)src << 16 | dst;
    size_t lo = 0, hi = self->nedges;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t k = (uint32_t)self->edges[mid].src << 16 | self->edges[mid].dst;
        if (k < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < self->nedges && self->edges[lo].src == src && self->edges[lo].dst == dst)
        return &self->edges[lo];
    if (!create)
        return NULL;
    if (self->nedges >= self->opts.max_edges) {
        self->dropped_edges++;
        return NULL;
    }
    if (self->nedges == self->capedges) {
        self->capedges = self->capedges ? 2 * self->capedges : 16;
        self->edges = xreallocarray(self->edges, self->capedges, sizeof *self->edges);
    }
    memmove(&self->edges[lo + 1], &self->edges[lo], (self->nedges - lo) * sizeof *self->edges);
    self->nedges++;
    struct tui_edge *e = &self->edges[lo];
    memset(e, 0, sizeof *e);
    e->src = src;
    e->dst = dst;
    return e;
}

static struct tui_win *edge_window(struct tui_edge *e, int64_t window)
{
    for (size_t i = 0; i < e->nwin; i++)
        if (e->win[i].window == window)
            return &e->win[i];
    if (e->nwin > 0 && window < e->win[e->nwin - 1].window && e->nwin == TUI_WIN_HIST)
        return NULL; /* older than everything kept */
    /* Insert keeping newest first. */
    size_t pos = 0;
    while (pos < e->nwin && e->win[pos].window > window)
        pos++;
    size_t n = e->nwin < TUI_WIN_HIST ? e->nwin : TUI_WIN_HIST - 1;
    memmove(&e->win[pos + 1], &e->win[pos], (n - pos) * sizeof e->win[0]);
    if (e->nwin < TUI_WIN_HIST)
        e->nwin++;
    struct tui_win *w = &e->win[pos];
    memset(w, 0, sizeof *w);
    w->window = window;
    w->offset_ns = w->drift_ppb = w->uncertainty_ns = w->margin_ns = NAN;
    w->rtt_min_ns = w->rtt_med_ns = w->pure_pct = NAN;
    w->residual_ns = NAN;
    return w;
}

static struct proc *find_proc(tui_model_t *self, uint16_t node, uint32_t pid, bool create)
{
    if (self->last_proc < self->nprocs && self->procs[self->last_proc].node == node &&
        self->procs[self->last_proc].pid == pid)
        return &self->procs[self->last_proc];
    for (size_t i = 0; i < self->nprocs; i++)
        if (self->procs[i].node == node && self->procs[i].pid == pid) {
            self->last_proc = i;
            return &self->procs[i];
        }
    if (!create)
        return NULL;
    if (self->nprocs >= MAX_PROCS) {
        self->dropped_procs++;
        return NULL;
    }
    if (self->procs == NULL)
        self->procs = xcalloc(MAX_PROCS, sizeof *self->procs);
    struct proc *p = &self->procs[self->nprocs];
    p->node = node;
    p->pid = pid;
    p->dropped = 0;
    p->scope = NULL;
    self->last_proc = self->nprocs++;
    return p;
}

static size_t name_slot(const tui_model_t *self, uint16_t node, uint32_t pid, uint32_t id)
{
    uint64_t h = ((uint64_t)node << 48) ^ ((uint64_t)pid << 20) ^ id;
    h *= 0x9e3779b97f4a7c15ULL;
    h ^= h >> 31;
    size_t mask = self->capnames - 1;
    size_t s = (size_t)h & mask;
    while (self->names[s].str &&
           !(self->names[s].node == node && self->names[s].pid == pid && self->names[s].id == id))
        s = (s + 1) & mask;
    return s;
}

static void name_put(tui_model_t *self, uint16_t node, uint32_t pid, uint32_t id, const char *str)
{
    if (self->capnames == 0 || 2 * (self->nnames + 1) > self->capnames) {
        if (self->nnames >= self->opts.max_names) {
            /* Full: replace an existing entry, never add. */
            if (self->capnames) {
                size_t s = name_slot(self, node, pid, id);
                if (self->names[s].str) {
                    free(self->names[s].str);
                    self->names[s].str = xstrndup(str, GPU_NAME_MAX);
                    return;
                }
            }
            self->dropped_names++;
            return;
        }
        size_t oldcap = self->capnames;
        struct name *old = self->names;
        self->capnames = oldcap ? 2 * oldcap : 1024;
        self->names = xcalloc(self->capnames, sizeof *self->names);
        for (size_t i = 0; i < oldcap; i++)
            if (old[i].str)
                self->names[name_slot(self, old[i].node, old[i].pid, old[i].id)] = old[i];
        free(old);
    }
    size_t s = name_slot(self, node, pid, id);
    if (self->names[s].str) {
        if (strcmp(self->names[s].str, str) == 0)
            return;
        free(self->names[s].str);
    } else {
        self->nnames++;
    }
    self->names[s] = (struct name){node, pid, id, xstrndup(str, GPU_NAME_MAX)};
}

const char *tui_model_name(const tui_model_t *self, uint16_t node, uint32_t pid, uint32_t id)
{
    assert(self);
    if (self->capnames == 0 || id == 0)
        return NULL;
    return self->names[name_slot(self, node, pid, id)].str;
}

int tui_model_scope_parent(const tui_model_t *self, uint16_t node, uint32_t pid, uint64_t id,
                           uint64_t *parent)
{
    assert(self && parent);
    for (size_t i = 0; i < self->nprocs; i++)
        if (self->procs[i].node == node && self->procs[i].pid == pid && self->procs[i].scope)
            return gpu_scopetree_parent(self->procs[i].scope, id, parent);
    return BASE_ERR;
}

/* ---- message handlers -------------------------------------------------- */

#define TRY(expr)                                                                                  \
    do {                                                                                           \
        enum base_dec rc_ = (expr);                                                                \
        if (rc_ != BASE_DEC_OK)                                                                    \
            return rc_;                                                                            \
    } while (0)

static enum base_dec get_node_id(json_object *h, const bus_msg_t *msg, const char *key,
                                 uint16_t *out, char *err)
{
    int64_t v = -1;
    TRY(base_json_opt_i64(h, key, &v, err));
    if (v < 0)
        v = bus_msg_node(msg);
    if (v < 0 || v > BUS_NODE_MAX) {
        base_err(err, "message without a valid \"%s\"", key);
        return BASE_DEC_BAD_VALUE;
    }
    *out = (uint16_t)v;
    return BASE_DEC_OK;
}

static enum base_dec get_u16(json_object *h, const char *key, uint16_t *out, char *err)
{
    int64_t v;
    TRY(base_json_get_i64(h, key, &v, err));
    if (v < 0 || v > BUS_NODE_MAX) {
        base_err(err, "field \"%s\" = %lld is not a node id", key, (long long)v);
        return BASE_DEC_BAD_VALUE;
    }
    *out = (uint16_t)v;
    return BASE_DEC_OK;
}

static enum base_dec get_pid(json_object *h, uint32_t *out, char *err)
{
    int64_t v;
    TRY(base_json_get_i64(h, "pid", &v, err));
    if (v < 0 || v > INT32_MAX) {
        base_err(err, "field \"pid\" = %lld is out of range", (long long)v);
        return BASE_DEC_BAD_VALUE;
    }
    *out = (uint32_t)v;
    return BASE_DEC_OK;
}

static enum base_dec get_array(json_object *h, const char *key, json_object **arr, char *err)
{
    if (!json_object_object_get_ex(h, key, arr) || !json_object_is_type(*arr, json_type_array)) {
        base_err(err, "field \"%s\" must be an array", key);
        return BASE_DEC_BAD_TYPE;
    }
    return BASE_DEC_OK;
}

static void set_ref(tui_model_t *self, int ref)
{
    if (ref == self->ref)
        return;
    self->ref = ref;
    for (size_t i = 0; i < self->nnodes; i++)
        self->nodes[i].pub.is_ref = (int)self->nodes[i].pub.id == ref;
    self->gen++;
}

static enum tui_node_state parse_state(const char *s)
{
    if (strcmp(s, "up") == 0)
        return TUI_NODE_UP;
    if (strcmp(s, "down") == 0)
        return TUI_NODE_DOWN;
    if (strcmp(s, "unaligned") == 0)
        return TUI_NODE_UNALIGNED;
    return TUI_NODE_UNKNOWN;
}

static enum base_dec on_hello(tui_model_t *self, const bus_msg_t *msg, json_object *h, char *err)
{
    int64_t node = -1;
    TRY(base_json_opt_i64(h, "node", &node, err));
    if (node < 0)
        node = bus_msg_node(msg);
    const char *host, *version;
    uint32_t pid;
    TRY(base_json_get_str(h, "host", &host, err));
    TRY(base_json_get_str(h, "version", &version, err));
    TRY(get_pid(h, &pid, err));
    if (node < 0 || node > BUS_NODE_MAX)
        return BASE_DEC_OK; /* a registration hello before the node has an id */
    struct mnode *n = find_node(self, (uint16_t)node, true);
    if (n == NULL)
        return BASE_DEC_OK;
    snprintf(n->pub.host, sizeof n->pub.host, "%s", host);
    snprintf(n->pub.version, sizeof n->pub.version, "%s", version);
    n->pub.pid = pid;
    if (!self->have_table && n->pub.state != TUI_NODE_UNALIGNED)
        n->pub.state = TUI_NODE_UP;
    json_object *gpus;
    if (json_object_object_get_ex(h, "gpus", &gpus) && json_object_is_type(gpus, json_type_array)) {
        size_t ng = json_object_array_length(gpus);
        n->pub.ngpus = (uint32_t)(ng > 0xffff ? 0xffff : ng);
        if (ng > 0) {
            const char *name = NULL;
            if (base_json_get_str(json_object_array_get_idx(gpus, 0), "name", &name, NULL) ==
                BASE_DEC_OK)
                snprintf(n->pub.gpu_name, sizeof n->pub.gpu_name, "%s", name);
        }
    }
    self->gen++;
    return BASE_DEC_OK;
}

static enum base_dec on_nodes(tui_model_t *self, json_object *h, char *err)
{
    uint16_t ref;
    TRY(get_u16(h, "ref", &ref, err));
    json_object *arr;
    TRY(get_array(h, "nodes", &arr, err));
    size_t n = json_object_array_length(arr);
    /* Validate every row before changing anything. */
    for (size_t i = 0; i < n; i++) {
        json_object *row = json_object_array_get_idx(arr, i);
        uint16_t id;
        const char *host, *state;
        TRY(get_u16(row, "node", &id, err));
        TRY(base_json_get_str(row, "host", &host, err));
        TRY(base_json_get_str(row, "state", &state, err));
        if (parse_state(state) == TUI_NODE_UNKNOWN) {
            base_err(err, "node %u: unknown state \"%s\"", id, state);
            return BASE_DEC_BAD_VALUE;
        }
    }
    self->have_table = true;
    set_ref(self, ref);
    for (size_t i = 0; i < n; i++) {
        json_object *row = json_object_array_get_idx(arr, i);
        uint16_t id = 0;
        const char *host = "", *state = "", *version = NULL;
        int64_t pid = -1;
        get_u16(row, "node", &id, NULL);
        base_json_get_str(row, "host", &host, NULL);
        base_json_get_str(row, "state", &state, NULL);
        base_json_opt_i64(row, "pid", &pid, NULL);
        base_json_opt_str(row, "version", &version, NULL);
        struct mnode *m = find_node(self, id, true);
        if (m == NULL)
            continue;
        snprintf(m->pub.host, sizeof m->pub.host, "%s", host);
        if (version)
            snprintf(m->pub.version, sizeof m->pub.version, "%s", version);
        if (pid > 0 && pid <= INT32_MAX)
            m->pub.pid = (uint32_t)pid;
        m->pub.state = parse_state(state);
    }
    self->gen++;
    return BASE_DEC_OK;
}

static enum base_dec on_status(tui_model_t *self, const bus_msg_t *msg, json_object *h, char *err)
{
    uint16_t id;
    int64_t t;
    uint64_t sent, recv, drops;
    double eps, cpu;
    TRY(get_node_id(h, msg, "node", &id, err));
    TRY(base_json_get_i64(h, "t_ns", &t, err));
    TRY(base_json_get_u64(h, "probes_sent", &sent, err));
    TRY(base_json_get_u64(h, "probes_recv", &recv, err));
    TRY(base_json_get_double(h, "events_per_s", &eps, err));
    TRY(base_json_get_u64(h, "ev_drops", &drops, err));
    TRY(base_json_get_double(h, "cpu_pct", &cpu, err));
    struct mnode *n = find_node(self, id, true);
    if (n == NULL)
        return BASE_DEC_OK;
    struct tui_node *p = &n->pub;
    if (n->prev_status_t != 0 && t > n->prev_status_t && sent >= n->prev_probes_sent)
        p->probes_per_s =
            (double)(sent - n->prev_probes_sent) * 1e9 / (double)(t - n->prev_status_t);
    n->prev_status_t = t;
    n->prev_probes_sent = sent;
    p->have_status = true;
    p->probes_sent = sent;
    p->probes_recv = recv;
    p->ev_drops = drops;
    /* Only the master's status has these; each is optional to older agents. */
    static const char *const lost[] = {"edge_fits_late", "edge_fits_ahead", "edge_fits_bad",
                                       "edge_fits_dropped"};
    p->fits_lost = 0;
    for (size_t i = 0; i < BASE_ARRAY_LEN(lost); i++) {
        int64_t v = 0;
        if (base_json_opt_i64(h, lost[i], &v, NULL) == BASE_DEC_OK && v > 0)
            p->fits_lost += (uint64_t)v;
    }
    p->agent_events_per_s = eps;
    p->cpu_pct = cpu;
    p->status_t_ns = t;
    json_object *gpus;
    p->gpu_busy_pct = p->vram_used_b = p->vram_total_b = p->power_w = p->temp_c = NAN;
    if (json_object_object_get_ex(h, "gpus", &gpus) && json_object_is_type(gpus, json_type_array)) {
        double sum = 0;
        int cnt = 0;
        for (size_t i = 0; i < json_object_array_length(gpus); i++) {
            json_object *g = json_object_array_get_idx(gpus, i);
            double b;
            if (base_json_get_double(g, "busy_pct", &b, NULL) == BASE_DEC_OK && isfinite(b)) {
                sum += b;
                cnt++;
            }
            /* Each optional (a field a GPU's reader could not get is left out). */
            uint64_t u;
            if (json_object_object_get_ex(g, "vram_used_bytes", NULL) &&
                base_json_get_u64(g, "vram_used_bytes", &u, NULL) == BASE_DEC_OK)
                p->vram_used_b = (isnan(p->vram_used_b) ? 0 : p->vram_used_b) + (double)u;
            if (json_object_object_get_ex(g, "vram_total_bytes", NULL) &&
                base_json_get_u64(g, "vram_total_bytes", &u, NULL) == BASE_DEC_OK)
                p->vram_total_b = (isnan(p->vram_total_b) ? 0 : p->vram_total_b) + (double)u;
            if (json_object_object_get_ex(g, "power_w", NULL) &&
                base_json_get_double(g, "power_w", &b, NULL) == BASE_DEC_OK && isfinite(b))
                p->power_w = (isnan(p->power_w) ? 0 : p->power_w) + b;
            if (json_object_object_get_ex(g, "temp_c", NULL) &&
                base_json_get_double(g, "temp_c", &b, NULL) == BASE_DEC_OK && isfinite(b))
                p->temp_c = isnan(p->temp_c) ? b : fmax(p->temp_c, b);
        }
        if (cnt)
            p->gpu_busy_pct = sum / cnt;
    }
    if (isfinite(p->gpu_busy_pct) || isfinite(p->power_w)) {
        if (n->gpu_hist == NULL)
            n->gpu_hist = xcalloc(TUI_GPU_HIST, sizeof *n->gpu_hist);
        n->gpu_hist[n->gpu_hist_pos] =
            (struct tui_gpu_reading){t, p->gpu_busy_pct, p->power_w, p->vram_used_b};
        n->gpu_hist_pos = (n->gpu_hist_pos + 1) % TUI_GPU_HIST;
        if (n->ngpu_hist < TUI_GPU_HIST)
            n->ngpu_hist++;
    }
    json_object *dec;
    p->rejects = 0;
    if (json_object_object_get_ex(h, "dec_errors", &dec) &&
        json_object_is_type(dec, json_type_object)) {
        json_object_object_foreach(dec, key, val)
        {
            (void)key;
            int64_t v = json_object_is_type(val, json_type_int) ? json_object_get_int64(val) : 0;
            if (v > 0) /* saturating: the counts are the agent's to state, not to wrap */
                p->rejects =
                    (uint64_t)v > UINT64_MAX - p->rejects ? UINT64_MAX : p->rejects + (uint64_t)v;
        }
    }
    /* Optional beyond the schema: older agents leave the stamps unknown. */
    bool kernel_ts;
    uint64_t tx_user = 0, rx_user = 0;
    if (json_object_object_get_ex(h, "kernel_timestamps", NULL) &&
        base_json_get_bool(h, "kernel_timestamps", &kernel_ts, NULL) == BASE_DEC_OK) {
        if (json_object_object_get_ex(h, "tx_user_ts", NULL))
            base_json_get_u64(h, "tx_user_ts", &tx_user, NULL);
        if (json_object_object_get_ex(h, "rx_user_ts", NULL))
            base_json_get_u64(h, "rx_user_ts", &rx_user, NULL);
        /* New fallbacks since the status before; the first seen, or fewer than
         * before (the agent restarted), has no before to compare with. */
        uint64_t user = tx_user + rx_user;
        bool fell_back = n->have_prev_user && user > n->prev_user_ts;
        p->user_ts = !kernel_ts || fell_back ? 1 : 0;
        n->prev_user_ts = user;
        n->have_prev_user = true;
    }
    self->gen++;
    return BASE_DEC_OK;
}

/* Node-level probe statistics: the latest window of every outgoing edge. */
static void node_probe_stats(tui_model_t *self, uint16_t id)
{
    struct mnode *n = find_node(self, id, false);
    if (n == NULL)
        return;
    double rmin = NAN, meds[64], pure_w = 0, pure_sum = 0;
    uint64_t sent = 0, lost = 0;
    size_t nmed = 0;
    for (size_t i = 0; i < self->nedges; i++) {
        const struct tui_edge *e = &self->edges[i];
        if (e->src != id)
            continue;
        const struct tui_win *w = NULL;
        for (size_t k = 0; k < e->nwin && w == NULL; k++)
            if (e->win[k].have_stats)
                w = &e->win[k];
        if (w == NULL)
            continue;
        if (isfinite(w->rtt_min_ns) && !(rmin <= w->rtt_min_ns))
            rmin = w->rtt_min_ns;
        if (isfinite(w->rtt_med_ns) && nmed < BASE_ARRAY_LEN(meds))
            meds[nmed++] = w->rtt_med_ns;
        if (isfinite(w->pure_pct) && w->received > 0) {
            pure_sum += w->pure_pct * (double)w->received;
            pure_w += (double)w->received;
        }
        sent += w->sent;
        lost += w->lost;
    }
    n->pub.rtt_min_ns = rmin;
    if (nmed) { /* median, by insertion sort: a node has a handful of edges */
        for (size_t i = 1; i < nmed; i++)
            for (size_t j = i; j > 0 && meds[j - 1] > meds[j]; j--) {
                double t = meds[j];
                meds[j] = meds[j - 1];
                meds[j - 1] = t;
            }
        n->pub.rtt_med_ns = nmed % 2 ? meds[nmed / 2] : (meds[nmed / 2 - 1] + meds[nmed / 2]) / 2;
    } else {
        n->pub.rtt_med_ns = NAN;
    }
    n->pub.pure_pct = pure_w > 0 ? pure_sum / pure_w : NAN;
    n->pub.loss_pct = sent > 0 ? 100.0 * (double)lost / (double)sent : NAN;
}

static enum base_dec on_win(tui_model_t *self, json_object *h, int64_t arrival_ns, char *err)
{
    int64_t window;
    uint16_t src, dst;
    uint64_t sent, received, lost;
    double pure;
    const char *est;
    TRY(base_json_get_i64(h, "window", &window, err));
    TRY(get_u16(h, "src", &src, err));
    TRY(get_u16(h, "dst", &dst, err));
    TRY(base_json_get_u64(h, "sent", &sent, err));
    TRY(base_json_get_u64(h, "received", &received, err));
    TRY(base_json_get_u64(h, "lost", &lost, err));
    TRY(base_json_get_double(h, "pure_pct", &pure, err));
    TRY(base_json_get_str(h, "estimator", &est, err));
    double rmin = NAN, rmed = NAN, off = NAN, drift = NAN, unc = NAN, margin = NAN;
    TRY(base_json_opt_double(h, "rtt_min_ns", &rmin, err));
    TRY(base_json_opt_double(h, "rtt_median_ns", &rmed, err));
    TRY(base_json_opt_double(h, "offset_ns", &off, err));
    TRY(base_json_opt_double(h, "drift_ppb", &drift, err));
    TRY(base_json_opt_double(h, "uncertainty_ns", &unc, err));
    TRY(base_json_opt_double(h, "margin_ns", &margin, err));
    int64_t from = 0, to = 0;
    json_object *v;
    if (json_object_object_get_ex(h, "from_ns", &v) && base_json_value_ns(v, &from) != BASE_DEC_OK)
        from = 0;
    if (json_object_object_get_ex(h, "to_ns", &v) && base_json_value_ns(v, &to) != BASE_DEC_OK)
        to = 0;
    struct tui_edge *e = find_edge(self, src, dst, true);
    struct tui_win *w = e ? edge_window(e, window) : NULL;
    if (e && arrival_ns > e->last_ns)
        e->last_ns = arrival_ns;
    if (w == NULL)
        return BASE_DEC_OK;
    w->have_stats = true;
    w->sent = sent;
    w->received = received;
    w->lost = lost;
    w->pure_pct = pure;
    w->rtt_min_ns = rmin;
    w->rtt_med_ns = rmed;
    snprintf(w->estimator, sizeof w->estimator, "%s", est);
    if (!w->have_fit) { /* the edge_fit message, when it comes, is the authority */
        w->offset_ns = off;
        w->drift_ppb = drift;
        w->uncertainty_ns = unc;
        w->margin_ns = margin;
    }
    if (from)
        w->from_ns = from;
    if (to)
        w->to_ns = to;
    node_probe_stats(self, src);
    self->gen++;
    return BASE_DEC_OK;
}

static enum base_dec on_edge_fit(tui_model_t *self, json_object *h, int64_t arrival_ns, char *err)
{
    clock_record_t r;
    TRY(clock_json_decode(h, &r, err));
    if (r.type != CLOCK_REC_EDGE_FIT) {
        base_err(err, "edge_fit header of another type");
        return BASE_DEC_BAD_TYPE;
    }
    const clock_edge_fit_t *f = &r.u.edge;
    if (f->src > BUS_NODE_MAX || f->dst > BUS_NODE_MAX) {
        base_err(err, "edge_fit %u -> %u: node id out of range", f->src, f->dst);
        return BASE_DEC_BAD_VALUE;
    }
    struct tui_edge *e = find_edge(self, (uint16_t)f->src, (uint16_t)f->dst, true);
    struct tui_win *w = e ? edge_window(e, f->window) : NULL;
    if (e && arrival_ns > e->last_ns)
        e->last_ns = arrival_ns;
    if (w == NULL)
        return BASE_DEC_OK;
    w->have_fit = true;
    w->offset_ns = f->offset_ns;
    w->drift_ppb = f->drift_ppb;
    w->uncertainty_ns = f->uncertainty_ns;
    w->margin_ns = f->margin_ns;
    w->n_fwd = f->n_fwd;
    w->n_rev = f->n_rev;
    w->from_ns = f->from_ns;
    w->to_ns = f->to_ns;
    snprintf(w->estimator, sizeof w->estimator, "%s", f->estimator);
    w->step = f->step;
    w->step_ns = f->step ? f->step_ns : NAN;
    if (isfinite(f->residual_ns)) {
        w->residual_ns = f->residual_ns;
        w->suspect = f->suspect;
    }
    self->gen++;
    return BASE_DEC_OK;
}

static enum base_dec on_node_fit(tui_model_t *self, json_object *h, char *err)
{
    clock_record_t r;
    TRY(clock_json_decode(h, &r, err));
    if (r.type != CLOCK_REC_NODE_FIT) {
        base_err(err, "node_fit header of another type");
        return BASE_DEC_BAD_TYPE;
    }
    const clock_node_fit_t *f = &r.u.node;
    if (f->node > BUS_NODE_MAX || f->ref > BUS_NODE_MAX) {
        base_err(err, "node_fit of node %u: id out of range", f->node);
        return BASE_DEC_BAD_VALUE;
    }
    char cerr[BASE_ERRLEN];
    /* A refused fit (out of order) is counted by the converter; the table
     * still shows the newest window. */
    clock_conv_add_fit(self->conv, f, cerr);
    set_ref(self, (int)f->ref);
    struct mnode *n = find_node(self, (uint16_t)f->node, true);
    if (n == NULL)
        return BASE_DEC_OK;
    if (!n->pub.have_fit || f->window >= n->pub.fit.window) {
        n->pub.fit = *f;
        n->pub.have_fit = true;
    }
    self->gen++;
    return BASE_DEC_OK;
}

static enum base_dec on_solve(tui_model_t *self, json_object *h, char *err)
{
    int64_t window;
    uint16_t ref;
    json_object *arr;
    TRY(base_json_get_i64(h, "window", &window, err));
    TRY(get_u16(h, "ref", &ref, err));
    TRY(get_array(h, "residuals", &arr, err));
    int64_t dof = -1, used = 0, warming = 0;
    double stamp = NAN, delay = NAN;
    TRY(base_json_opt_i64(h, "dof", &dof, err));
    TRY(base_json_opt_i64(h, "edges_used", &used, err));
    TRY(base_json_opt_double(h, "stamp_asym_ns", &stamp, err));
    TRY(base_json_opt_double(h, "delay_ns", &delay, err));
    TRY(base_json_opt_i64(h, "hosts_warming", &warming, err));
    if (warming < 0 || warming > INT32_MAX) {
        base_err(err, "solve: hosts_warming %" PRId64 " out of range", warming);
        return BASE_DEC_BAD_VALUE;
    }
    if (dof < -1 || dof > INT32_MAX || used < 0 || used > INT32_MAX) {
        base_err(err, "solve: dof %" PRId64 " or edges_used %" PRId64 " out of range", dof, used);
        return BASE_DEC_BAD_VALUE;
    }
    if (!isnan(stamp) && !(stamp >= 0 && stamp < 1e12)) {
        base_err(err, "solve: stamp_asym_ns %g out of range", stamp);
        return BASE_DEC_BAD_VALUE;
    }
    if (!isnan(delay) && !(delay >= 0 && delay < 1e12)) {
        base_err(err, "solve: delay_ns %g out of range", delay);
        return BASE_DEC_BAD_VALUE;
    }
    /* Every residual is checked before anything is applied: a rejected
     * message changes nothing. */
    size_t nres = json_object_array_length(arr);
    for (size_t pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < nres; i++) {
            json_object *r = json_object_array_get_idx(arr, i);
            uint16_t src, dst;
            double res;
            bool suspect = false;
            TRY(get_u16(r, "src", &src, err));
            TRY(get_u16(r, "dst", &dst, err));
            TRY(base_json_get_double(r, "residual_ns", &res, err));
            TRY(base_json_opt_bool(r, "suspect", &suspect, err));
            if (pass == 0)
                continue;
            struct tui_edge *e = find_edge(self, src, dst, true);
            struct tui_win *w = e ? edge_window(e, window) : NULL;
            if (w) {
                w->residual_ns = res;
                w->suspect = suspect;
            }
        }
    set_ref(self, ref);
    /* Refinements of older windows arrive late: the newest window's count stands. */
    if (dof >= 0 && window >= self->solve_window) {
        self->solve_window = window;
        self->loops = dof;
        self->solve_edges = used;
        self->stamp_asym_ns = stamp;
        self->delay_ns = delay;
        self->warming = warming;
    }
    self->gen++;
    return BASE_DEC_OK;
}

static void snap_deviation(struct mnode *m, int64_t x, int64_t y)
{
    if (m->np == 3) {
        memmove(m->px, m->px + 1, 2 * sizeof *m->px);
        memmove(m->py, m->py + 1, 2 * sizeof *m->py);
        m->np = 2;
    }
    m->px[m->np] = x;
    m->py[m->np++] = y;
    if (m->np < 3 || m->px[2] == m->px[0])
        return;
    /* In the pairs' own offsets (probe − trace): exact in a double. */
    double o0 = (double)(m->py[0] - m->px[0]), o1 = (double)(m->py[1] - m->px[1]),
           o2 = (double)(m->py[2] - m->px[2]);
    double f = (double)(m->px[1] - m->px[0]) / (double)(m->px[2] - m->px[0]);
    m->dev[m->dev_pos] = fabs(o1 - (o0 + f * (o2 - o0)));
    m->dev_pos = (m->dev_pos + 1) % (sizeof m->dev / sizeof *m->dev);
    if (m->ndev < sizeof m->dev / sizeof *m->dev)
        m->ndev++;
}

static enum base_dec on_snap(tui_model_t *self, const bus_msg_t *msg, json_object *h, char *err)
{
    uint16_t id;
    const char *a, *b;
    json_object *pairs;
    TRY(get_node_id(h, msg, "node", &id, err));
    TRY(base_json_get_str(h, "a", &a, err));
    TRY(base_json_get_str(h, "b", &b, err));
    TRY(get_array(h, "pairs", &pairs, err));
    size_t n = json_object_array_length(pairs);
    for (size_t i = 0; i < n; i++) {
        json_object *p = json_object_array_get_idx(pairs, i);
        int64_t x, y;
        if (!json_object_is_type(p, json_type_array) || json_object_array_length(p) != 2 ||
            base_json_value_ns(json_object_array_get_idx(p, 0), &x) != BASE_DEC_OK ||
            base_json_value_ns(json_object_array_get_idx(p, 1), &y) != BASE_DEC_OK) {
            base_err(err, "snap: pair %zu is not [ns, ns]", i);
            return BASE_DEC_BAD_TYPE;
        }
    }
    /* Events are stamped on the trace clock; only its map to the probe
     * clock places them.  BOOTTIME's places imported traces (rocprofv3).
     * Other domain pairs (GPU clocks) are for the agent. */
    bool boot = strcmp(a, "boottime") == 0;
    if ((strcmp(a, "trace") != 0 && !boot) || strcmp(b, "probe") != 0)
        return BASE_DEC_OK;
    struct mnode *m = find_node(self, id, true);
    if (m == NULL)
        return BASE_DEC_OK;
    size_t *count = boot ? &m->boot_pairs : &m->raw_pairs;
    int64_t *last = boot ? &m->boot_last : &m->raw_last;
    for (size_t i = 0; i < n; i++) {
        json_object *p = json_object_array_get_idx(pairs, i);
        int64_t x, y;
        base_json_value_ns(json_object_array_get_idx(p, 0), &x);
        base_json_value_ns(json_object_array_get_idx(p, 1), &y);
        /* The late-joiner state repeats pairs already seen: skip them quietly. */
        if (*count > 0 && x <= *last)
            continue;
        if (clock_conv_add_pair(self->conv, id, boot ? CLOCK_DOMAIN_BOOT : CLOCK_DOMAIN_TRACE,
                                CLOCK_DOMAIN_PROBE, x, y, NULL) == BASE_OK) {
            (*count)++;
            *last = x;
            if (!boot)
                snap_deviation(m, x, y);
        }
    }
    return BASE_DEC_OK;
}

size_t tui_model_gpu_history(const tui_model_t *self, uint16_t node, size_t i,
                             struct tui_gpu_reading *out)
{
    assert(self);
    const struct mnode *m = find_node((tui_model_t *)self, node, false);
    if (m == NULL || i >= m->ngpu_hist)
        return m ? m->ngpu_hist : 0;
    size_t first = (m->gpu_hist_pos + TUI_GPU_HIST - m->ngpu_hist) % TUI_GPU_HIST;
    *out = m->gpu_hist[(first + i) % TUI_GPU_HIST];
    return m->ngpu_hist;
}

double tui_model_snap_dev(const tui_model_t *self, uint16_t node)
{
    assert(self);
    const struct mnode *m = find_node((tui_model_t *)self, node, false);
    if (m == NULL || m->ndev == 0)
        return 0;
    double worst = 0;
    for (size_t i = 0; i < m->ndev; i++)
        worst = fmax(worst, m->dev[i]);
    return worst;
}

static enum base_dec on_names(tui_model_t *self, const bus_msg_t *msg, json_object *h, char *err)
{
    uint16_t id;
    uint32_t pid;
    json_object *arr;
    TRY(get_node_id(h, msg, "node", &id, err));
    TRY(get_pid(h, &pid, err));
    TRY(get_array(h, "names", &arr, err));
    size_t n = json_object_array_length(arr);
    for (size_t i = 0; i < n; i++) {
        json_object *p = json_object_array_get_idx(arr, i), *jid, *jname;
        if (!json_object_is_type(p, json_type_array) || json_object_array_length(p) != 2 ||
            !json_object_is_type(jid = json_object_array_get_idx(p, 0), json_type_int) ||
            !json_object_is_type(jname = json_object_array_get_idx(p, 1), json_type_string)) {
            base_err(err, "names: entry %zu is not [id, \"name\"]", i);
            return BASE_DEC_BAD_TYPE;
        }
        int64_t v = json_object_get_int64(jid);
        if (v <= 0 || v > (int64_t)UINT32_MAX) {
            base_err(err, "names: id %lld out of range", (long long)v);
            return BASE_DEC_BAD_VALUE;
        }
    }
    for (size_t i = 0; i < n; i++) {
        json_object *p = json_object_array_get_idx(arr, i);
        name_put(self, id, pid, (uint32_t)json_object_get_int64(json_object_array_get_idx(p, 0)),
                 json_object_get_string(json_object_array_get_idx(p, 1)));
    }
    return BASE_DEC_OK;
}

static enum base_dec on_scope(tui_model_t *self, const bus_msg_t *msg, json_object *h, char *err)
{
    uint16_t id;
    uint32_t pid;
    json_object *arr;
    TRY(get_node_id(h, msg, "node", &id, err));
    TRY(get_pid(h, &pid, err));
    TRY(get_array(h, "tree", &arr, err));
    struct proc *p = find_proc(self, id, pid, true);
    if (p == NULL)
        return BASE_DEC_OK;
    if (p->scope == NULL)
        p->scope = gpu_scopetree_new(SCOPE_PER_PROC);
    size_t n = json_object_array_length(arr);
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(arr, i), *c, *q;
        if (!json_object_is_type(e, json_type_array) || json_object_array_length(e) != 2 ||
            !json_object_is_type(c = json_object_array_get_idx(e, 0), json_type_int) ||
            !json_object_is_type(q = json_object_array_get_idx(e, 1), json_type_int)) {
            base_err(err, "scope: entry %zu is not [child, parent]", i);
            return BASE_DEC_BAD_TYPE;
        }
        /* A conflict (a restarted process reusing ids) is the tree's to refuse. */
        gpu_scopetree_add(p->scope, json_object_get_uint64(c), json_object_get_uint64(q), NULL);
    }
    return BASE_DEC_OK;
}

static enum base_dec on_ev(tui_model_t *self, const bus_msg_t *msg, json_object *h,
                           int64_t arrival_ns, char *err)
{
    uint16_t id;
    uint32_t pid;
    int64_t count;
    uint64_t dropped;
    TRY(get_node_id(h, msg, "node", &id, err));
    TRY(get_pid(h, &pid, err));
    TRY(base_json_get_i64(h, "count", &count, err));
    TRY(base_json_get_u64(h, "dropped", &dropped, err));
    size_t len;
    const void *payload = bus_msg_payload(msg, &len);
    if (payload == NULL) {
        base_err(err, "ev without a payload");
        return BASE_DEC_TRUNCATED;
    }
    size_t n;
    TRY(gpu_batch_count(payload, len, &n, err));
    if (count < 0 || (uint64_t)count != n) {
        base_err(err, "ev: header count %lld, payload holds %zu", (long long)count, n);
        return BASE_DEC_BAD_VALUE;
    }
    if (n > self->opts.max_batch) {
        base_err(err, "ev: %zu events in one batch, the limit is %zu", n, self->opts.max_batch);
        return BASE_DEC_OVERSIZED;
    }
    if (n > self->scratch_cap) {
        free(self->scratch);
        self->scratch_cap = n < 4096 ? 4096 : n;
        self->scratch = xcalloc(self->scratch_cap, sizeof *self->scratch);
    }
    TRY(gpu_batch_decode(payload, len, id, self->scratch, self->scratch_cap, &n, err));
    struct mnode *m = find_node(self, id, true);
    struct proc *p = find_proc(self, id, pid, true);
    if (p) {
        if (m && dropped >= p->dropped)
            m->pub.proc_dropped += dropped - p->dropped;
        p->dropped = dropped;
    }
    int64_t max_end = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        self->scratch[i].node = id;
        /* The batch's pid is the process; a record that says otherwise is
         * still filed under its own pid (names resolve per record). */
        if (tui_store_add(self->store, &self->scratch[i], NULL) == BASE_OK &&
            self->scratch[i].end_ns > max_end)
            max_end = self->scratch[i].end_ns;
    }
    if (m == NULL || max_end == INT64_MIN)
        return BASE_DEC_OK;
    m->pub.events += n;
    /* Fallback placement for nodes without snapshot pairs: the smallest
     * (arrival − trace time) seen, i.e. the least delayed batch. */
    if (arrival_ns > 0) {
        int64_t shift = arrival_ns - max_end;
        if (!m->have_shift || shift < m->shift) {
            m->shift = shift;
            m->have_shift = true;
        }
    }
    int64_t g;
    unsigned fl;
    if (tui_model_to_axis(self, id, max_end, TUI_CLOCK_RAW, &g, &fl) == BASE_OK &&
        g > self->latest_raw)
        self->latest_raw = g;
    if (tui_model_to_axis(self, id, max_end, TUI_CLOCK_ALIGNED, &g, &fl) == BASE_OK &&
        !(fl & TUI_T_RAW) && g > self->latest_global)
        self->latest_global = g;
    return BASE_DEC_OK;
}

void tui_model_log_add(tui_model_t *self, int64_t arrival_ns, int node, char level,
                       const char *component, const char *text)
{
    assert(self && text);
    struct tui_log_line *l = &self->log[self->log_next];
    if (self->log_st.lines == TUI_LOG_LINES)
        self->log_st.dropped++;
    else
        self->log_st.lines++;
    self->log_next = (self->log_next + 1) % TUI_LOG_LINES;
    self->log_st.total++;
    l->arrival_ns = arrival_ns;
    l->node = node >= 0 && node <= 65535 ? node : -1;
    l->level = level == 'E' || level == 'W' ? level : 'I';
    self->log_st.warnings += l->level == 'W';
    self->log_st.errors += l->level == 'E';
    snprintf(l->text, sizeof l->text, "%s%s%s", component ? component : "", component ? ": " : "",
             text);
    for (char *c = l->text; *c; c++)
        if ((unsigned char)*c < 0x20)
            *c = ' ';
}

static enum base_dec on_log(tui_model_t *self, json_object *h, int64_t arrival_ns, char *err)
{
    const char *level, *text, *comp = NULL;
    int64_t node = -1;
    TRY(base_json_get_str(h, "level", &level, err));
    TRY(base_json_get_str(h, "msg", &text, err));
    TRY(base_json_opt_i64(h, "node", &node, err));
    if (strcmp(level, "debug") == 0)
        return BASE_DEC_OK;
    base_json_get_str(h, "component", &comp, NULL);
    tui_model_log_add(self, arrival_ns, node >= 0 && node <= 65535 ? (int)node : -1,
                      !strcmp(level, "error")  ? 'E'
                      : !strcmp(level, "warn") ? 'W'
                                               : 'I',
                      comp, text);
    if (node >= 0)
        snprintf(self->last_log, sizeof self->last_log, "n%lld %s: %s", (long long)node, level,
                 text);
    else
        snprintf(self->last_log, sizeof self->last_log, "%s: %s", level, text);
    /* One line on the status bar: no control characters. */
    for (char *c = self->last_log; *c; c++)
        if ((unsigned char)*c < 0x20)
            *c = ' ';
    self->last_log_ns = arrival_ns;
    return BASE_DEC_OK;
}

static enum base_dec on_truth(tui_model_t *self, json_object *h, char *err)
{
    clock_record_t r;
    TRY(clock_json_decode(h, &r, err));
    if (r.type != CLOCK_REC_SIM_TRUTH) {
        base_err(err, "sim_truth header of another type");
        return BASE_DEC_BAD_TYPE;
    }
    if (r.u.truth.node > BUS_NODE_MAX) {
        base_err(err, "sim_truth: node %u out of range", r.u.truth.node);
        return BASE_DEC_BAD_VALUE;
    }
    struct mnode *m = find_node(self, (uint16_t)r.u.truth.node, true);
    if (m) {
        m->pub.have_truth = true;
        m->pub.truth = r.u.truth.p;
    }
    return BASE_DEC_OK;
}

/* The bus tree's relays: how many, how many report, what they lost upstream. */
static enum base_dec on_relays(tui_model_t *self, json_object *h, char *err)
{
    json_object *arr;
    if (!json_object_object_get_ex(h, "relays", &arr) ||
        !json_object_is_type(arr, json_type_array)) {
        base_err(err, "relays: no array");
        return BASE_DEC_BAD_VALUE;
    }
    size_t n = json_object_array_length(arr), up = 0;
    uint64_t lost = 0;
    for (size_t i = 0; i < n; i++) {
        json_object *r = json_object_array_get_idx(arr, i);
        const char *state;
        uint64_t d;
        TRY(base_json_get_str(r, "state", &state, err));
        TRY(base_json_get_u64(r, "up_dropped", &d, err));
        up += strcmp(state, "up") == 0;
        lost += d;
    }
    self->relays = n;
    self->relays_up = up;
    self->relays_lost = lost;
    self->gen++;
    return BASE_DEC_OK;
}

static enum base_dec dispatch(tui_model_t *self, const bus_msg_t *msg, json_object *h,
                              int64_t arrival_ns, char *err)
{
    switch (bus_msg_kind(msg)) {
    case BUS_K_HELLO:
        return on_hello(self, msg, h, err);
    case BUS_K_NODES:
        return on_nodes(self, h, err);
    case BUS_K_PLAN: {
        uint16_t ref;
        TRY(get_u16(h, "ref", &ref, err));
        set_ref(self, ref);
        return BASE_DEC_OK;
    }
    case BUS_K_BYE: {
        uint16_t id;
        TRY(get_node_id(h, msg, "node", &id, err));
        struct mnode *m = find_node(self, id, false);
        if (m) {
            m->pub.state = TUI_NODE_DOWN;
            self->gen++;
        }
        return BASE_DEC_OK;
    }
    case BUS_K_HB: {
        uint16_t id;
        return get_node_id(h, msg, "node", &id, err);
    }
    case BUS_K_STATUS:
        return on_status(self, msg, h, err);
    case BUS_K_WIN:
        return on_win(self, h, arrival_ns, err);
    case BUS_K_EDGE_FIT:
        return on_edge_fit(self, h, arrival_ns, err);
    case BUS_K_NODE_FIT:
        return on_node_fit(self, h, err);
    case BUS_K_SOLVE:
        return on_solve(self, h, err);
    case BUS_K_SNAP:
        return on_snap(self, msg, h, err);
    case BUS_K_EV:
        return on_ev(self, msg, h, arrival_ns, err);
    case BUS_K_NAMES:
        return on_names(self, msg, h, err);
    case BUS_K_SCOPE:
        return on_scope(self, msg, h, err);
    case BUS_K_LOG:
        return on_log(self, h, arrival_ns, err);
    case BUS_K_SIM_TRUTH:
        return on_truth(self, h, err);
    case BUS_K_RELAYS:
        return on_relays(self, h, err);
    default: /* registration and state control: not the console's business */
        return BASE_DEC_OK;
    }
}

enum base_dec tui_model_apply(tui_model_t *self, const bus_msg_t *msg, int64_t arrival_ns,
                              char *err)
{
    assert(self && msg);
    char buf[BASE_ERRLEN];
    if (err == NULL)
        err = buf;
    err[0] = '\0';
    json_object *h = bus_msg_header(msg);
    enum base_dec rc;
    if (h == NULL || !json_object_is_type(h, json_type_object)) {
        base_err(err, "message without a JSON object header");
        rc = BASE_DEC_BAD_TYPE;
    } else {
        rc = dispatch(self, msg, h, arrival_ns, err);
    }
    base_decstats_add(&self->dec, rc);
    if (rc != BASE_DEC_OK) {
        snprintf(self->last_error, sizeof self->last_error, "%.20s: %.200s",
                 bus_kind_name(bus_msg_kind(msg)), err);
        return rc;
    }
    /* Any message of a node says it is alive (for clusters without a master table). */
    int node = bus_msg_node(msg);
    if (node >= 0) {
        struct mnode *m = find_node(self, (uint16_t)node, false);
        if (m)
            m->pub.last_arrival_ns = arrival_ns;
    }
    return BASE_DEC_OK;
}

enum base_dec tui_model_apply_frames(tui_model_t *self, const struct bus_frame *frames,
                                     size_t nframes, const struct bus_limits *lim,
                                     int64_t arrival_ns, char *err)
{
    assert(self && frames);
    bus_msg_t *msg = NULL;
    enum base_dec rc = bus_msg_decode(frames, nframes, lim, &msg, err);
    if (rc != BASE_DEC_OK) {
        base_decstats_add(&self->dec, rc);
        snprintf(self->last_error, sizeof self->last_error, "%s", err ? err : "undecodable");
        return rc;
    }
    rc = tui_model_apply(self, msg, arrival_ns, err);
    bus_msg_destroy(&msg);
    return rc;
}

void tui_model_tick(tui_model_t *self, int64_t now_ns)
{
    assert(self);
    if (self->tick_ns == 0 || now_ns <= self->tick_ns) {
        self->tick_ns = now_ns;
        for (size_t i = 0; i < self->nnodes; i++)
            self->nodes[i].events_at_tick = self->nodes[i].pub.events;
        return;
    }
    double dt = (double)(now_ns - self->tick_ns) / 1e9;
    for (size_t i = 0; i < self->nnodes; i++) {
        struct mnode *n = &self->nodes[i];
        double rate = (double)(n->pub.events - n->events_at_tick) / dt;
        n->pub.events_per_s = rate;
        n->events_at_tick = n->pub.events;
        if (!self->have_table && n->pub.last_arrival_ns > 0 &&
            now_ns - n->pub.last_arrival_ns > DOWN_SILENCE_NS)
            n->pub.state = TUI_NODE_DOWN;
    }
    self->tick_ns = now_ns;
    self->gen++;
}

const base_decstats_t *tui_model_decstats(const tui_model_t *self)
{
    assert(self);
    return &self->dec;
}

const char *tui_model_last_error(const tui_model_t *self)
{
    assert(self);
    return self->last_error;
}

uint64_t tui_model_generation(const tui_model_t *self)
{
    assert(self);
    return self->gen;
}

size_t tui_model_nnodes(const tui_model_t *self)
{
    assert(self);
    return self->nnodes;
}

const struct tui_node *tui_model_node(const tui_model_t *self, size_t i)
{
    assert(self && i < self->nnodes);
    return &self->nodes[i].pub;
}

const struct tui_node *tui_model_find(const tui_model_t *self, uint16_t id)
{
    assert(self);
    struct mnode *n = find_node((tui_model_t *)self, id, false);
    return n ? &n->pub : NULL;
}

int tui_model_ref(const tui_model_t *self)
{
    assert(self);
    return self->ref;
}

size_t tui_model_nedges(const tui_model_t *self)
{
    assert(self);
    return self->nedges;
}

const struct tui_edge *tui_model_edge(const tui_model_t *self, size_t i)
{
    assert(self && i < self->nedges);
    return &self->edges[i];
}

tui_store_t *tui_model_store(const tui_model_t *self)
{
    assert(self);
    return self->store;
}

const struct tui_log_line *tui_model_log_line(const tui_model_t *self, size_t newest_first)
{
    assert(self);
    if (newest_first >= self->log_st.lines)
        return NULL;
    size_t i = (self->log_next + TUI_LOG_LINES - 1 - newest_first) % TUI_LOG_LINES;
    return &self->log[i];
}

void tui_model_log_stats(const tui_model_t *self, struct tui_log_stats *out)
{
    assert(self && out);
    *out = self->log_st;
}

const char *tui_model_last_log(const tui_model_t *self, int64_t *arrival_ns)
{
    assert(self);
    if (arrival_ns)
        *arrival_ns = self->last_log_ns;
    return self->last_log;
}

void tui_model_summary(const tui_model_t *self, struct tui_summary *out)
{
    assert(self && out);
    memset(out, 0, sizeof *out);
    out->ref = self->ref;
    out->loops = (int)self->loops;
    out->asym_unseen = self->loops == 0 && self->solve_edges > 0;
    out->stamp_asym_ns = self->stamp_asym_ns;
    out->delay_ns = self->delay_ns;
    out->hosts_warming = (int)self->warming;
    out->relays = self->relays;
    out->relays_up = self->relays_up;
    out->relays_lost = self->relays_lost;
    out->worst_unc_ns = NAN;
    out->worst_unc_node = -1;
    for (size_t i = 0; i < self->nnodes; i++) {
        const struct tui_node *n = &self->nodes[i].pub;
        out->nodes_total++;
        if (n->state == TUI_NODE_UP)
            out->nodes_up++;
        else if (n->state == TUI_NODE_DOWN)
            out->nodes_down++;
        else if (n->state == TUI_NODE_UNALIGNED)
            out->nodes_unaligned++;
        if (n->have_fit && n->fit.aligned && !n->is_ref && isfinite(n->fit.uncertainty_ns) &&
            !(out->worst_unc_ns >= n->fit.uncertainty_ns)) {
            out->worst_unc_ns = n->fit.uncertainty_ns;
            out->worst_unc_node = n->id;
        }
        out->events_per_s += n->events_per_s;
        out->events += n->events;
        out->ev_drops += n->ev_drops + n->proc_dropped;
        out->fits_lost += n->fits_lost;
        out->node_rejects += n->rejects;
    }
    out->evicted = tui_store_evicted(self->store);
    out->refused = tui_store_refused(self->store);
    out->dec_errors = base_decstats_errors(&self->dec);
    clock_conv_stats_t cs;
    clock_conv_get_stats(self->conv, &cs);
    out->conv_rejected = cs.pairs_rejected + cs.fits_rejected;
    out->latest_global = self->latest_global;
    out->latest_raw = self->latest_raw;
}

/* ---- time ---------------------------------------------------------------- */

bool tui_model_aligned(const tui_model_t *self, uint16_t node)
{
    assert(self);
    const struct mnode *m = find_node((tui_model_t *)self, node, false);
    if (m == NULL || m->raw_pairs == 0)
        return false;
    if (m->pub.state == TUI_NODE_UNALIGNED)
        return false;
    if (m->pub.have_fit)
        return m->pub.fit.aligned;
    return self->ref >= 0 && (int)node == self->ref;
}

/* A node's raw clock: its own probe clock through its snapshot pairs only. */
static int raw_time(tui_model_t *self, const struct mnode *m, int64_t t, int64_t *out,
                    unsigned *flags)
{
    clock_conv_result_t r;
    if (m->raw_pairs > 0 &&
        clock_conv_to_probe(self->conv, m->pub.id, CLOCK_DOMAIN_TRACE, t, &r, NULL) == BASE_OK) {
        *out = r.t;
        if (r.flags & CLOCK_CONV_EXTRAPOLATED)
            *flags |= TUI_T_EXTRAP;
        return BASE_OK;
    }
    if (m->have_shift) {
        *out = t + m->shift;
        *flags |= TUI_T_NOSNAP;
        return BASE_OK;
    }
    return BASE_ERR;
}

int tui_model_to_axis(tui_model_t *self, uint16_t node, int64_t trace_ns, enum tui_clock clock,
                      int64_t *out, unsigned *flags)
{
    assert(self && out && flags);
    *flags = 0;
    const struct mnode *m = find_node(self, node, false);
    if (m == NULL)
        return BASE_ERR;
    if (clock == TUI_CLOCK_ALIGNED) {
        double unc;
        return tui_model_map(self, node, CLOCK_DOMAIN_TRACE, trace_ns, out, &unc, flags);
    }
    return raw_time(self, m, trace_ns, out, flags);
}

int tui_model_map(tui_model_t *self, uint16_t node, uint32_t domain, int64_t local, int64_t *out,
                  double *unc, unsigned *flags)
{
    assert(self && out && unc && flags);
    *flags = 0;
    *unc = NAN;
    const struct mnode *m = find_node(self, node, false);
    if (m == NULL)
        return BASE_ERR;
    clock_conv_result_t r;
    if (tui_model_aligned(self, node) &&
        clock_conv_to_global(self->conv, node, domain, local, &r, NULL) == BASE_OK) {
        if (r.flags & CLOCK_CONV_EXTRAPOLATED)
            *flags |= TUI_T_EXTRAP;
        if (r.flags & (CLOCK_CONV_GAP | CLOCK_CONV_STEP))
            *flags |= TUI_T_GAP;
        *out = r.t;
        *unc = r.uncertainty_ns;
        if (!isfinite(*unc) && self->ref >= 0 && (int)node == self->ref)
            *unc = 0; /* the reference is the time base */
        return BASE_OK;
    }
    *flags |= TUI_T_RAW;
    if (domain == CLOCK_DOMAIN_TRACE)
        return raw_time(self, m, local, out, flags);
    if (clock_conv_to_probe(self->conv, node, domain, local, &r, NULL) != BASE_OK)
        return BASE_ERR;
    if (r.flags & CLOCK_CONV_EXTRAPOLATED)
        *flags |= TUI_T_EXTRAP;
    *out = r.t;
    return BASE_OK;
}

int tui_model_to_trace(tui_model_t *self, uint16_t node, uint32_t domain, int64_t local,
                       int64_t *trace)
{
    assert(self && trace);
    clock_conv_result_t r;
    if (domain == CLOCK_DOMAIN_TRACE) {
        *trace = local;
        return BASE_OK;
    }
    if (clock_conv_to_probe(self->conv, node, domain, local, &r, NULL) != BASE_OK ||
        clock_conv_from_probe(self->conv, node, CLOCK_DOMAIN_TRACE, r.t, &r, NULL) != BASE_OK)
        return BASE_ERR;
    *trace = r.t;
    return BASE_OK;
}

void tui_model_add_name(tui_model_t *self, uint16_t node, uint32_t pid, uint32_t id,
                        const char *name)
{
    assert(self && name);
    name_put(self, node, pid, id, name);
}

double tui_model_offset_at(tui_model_t *self, uint16_t node, int64_t at_global)
{
    assert(self);
    const struct mnode *m = find_node(self, node, false);
    if (m == NULL)
        return NAN;
    bool fit_ok = m->pub.have_fit && m->pub.fit.aligned;
    if (!fit_ok)
        return (self->ref >= 0 && (int)node == self->ref) ? 0.0 : NAN;
    clock_conv_result_t r;
    if (clock_conv_from_global(self->conv, node, CLOCK_DOMAIN_PROBE, at_global, &r, NULL) !=
        BASE_OK)
        return NAN;
    return (double)(at_global - r.t);
}

/* ---- sorting ------------------------------------------------------------- */

const char *tui_node_state_name(enum tui_node_state s)
{
    switch (s) {
    case TUI_NODE_UP:
        return "up";
    case TUI_NODE_DOWN:
        return "down";
    case TUI_NODE_UNALIGNED:
        return "unaligned";
    default:
        return "?";
    }
}

const char *tui_sort_name(enum tui_sort key)
{
    static const char *const names[TUI_SORT_NKEYS] = {
        "id",   "host",  "state",       "offset",   "drift",    "uncertainty",
        "rtt",  "pure",  "loss",        "events/s", "probes/s", "gpu%",
        "vram", "power", "temperature", "rejects",  "stamps"};
    return key < TUI_SORT_NKEYS ? names[key] : "?";
}

struct sort_ctx {
    const tui_model_t *m;
    enum tui_sort key;
    bool desc;
};

static double sort_value(const struct tui_node *n, enum tui_sort key)
{
    bool down = n->state == TUI_NODE_DOWN;
    switch (key) {
    case TUI_SORT_STATE:
        return (double)n->state;
    case TUI_SORT_OFFSET:
        return n->have_fit && n->fit.aligned ? n->fit.offset_ns : (n->is_ref ? 0.0 : NAN);
    case TUI_SORT_DRIFT:
        return n->have_fit && n->fit.aligned ? n->fit.drift_ppb : (n->is_ref ? 0.0 : NAN);
    case TUI_SORT_UNC:
        return n->have_fit && n->fit.aligned ? n->fit.uncertainty_ns : (n->is_ref ? 0.0 : NAN);
    case TUI_SORT_RTT:
        return n->rtt_med_ns;
    case TUI_SORT_PURE:
        return n->pure_pct;
    case TUI_SORT_LOSS:
        return n->loss_pct;
    case TUI_SORT_EVENTS:
        return n->events_per_s;
    /* What a status said counts only while its node is up (the table shows none). */
    case TUI_SORT_PROBES:
        return n->have_status && !down ? n->probes_per_s : NAN;
    case TUI_SORT_GPU:
        return down ? NAN : n->gpu_busy_pct;
    case TUI_SORT_VRAM:
        return down ? NAN : n->vram_used_b;
    case TUI_SORT_POWER:
        return down ? NAN : n->power_w;
    case TUI_SORT_TEMP:
        return down ? NAN : n->temp_c;
    case TUI_SORT_REJECTS:
        return down ? NAN : (double)n->rejects;
    case TUI_SORT_STAMPS:
        return n->user_ts < 0 || down ? NAN : n->user_ts;
    default:
        return (double)n->id;
    }
}

static int cmp_nodes(const struct tui_node *a, const struct tui_node *b, enum tui_sort key,
                     bool desc)
{
    int c = 0;
    if (key == TUI_SORT_HOST) {
        c = strcmp(a->host, b->host);
    } else if (key != TUI_SORT_ID) {
        double x = sort_value(a, key), y = sort_value(b, key);
        bool xn = isnan(x), yn = isnan(y);
        if (xn || yn)
            return xn && yn ? (a->id > b->id) - (a->id < b->id) : xn ? 1 : -1;
        c = (x > y) - (x < y);
    }
    if (c == 0 && key != TUI_SORT_ID)
        return (a->id > b->id) - (a->id < b->id);
    if (key == TUI_SORT_ID)
        c = (a->id > b->id) - (a->id < b->id);
    return desc ? -c : c;
}

static int cmp_order(const void *pa, const void *pb, void *arg)
{
    const struct sort_ctx *c = arg;
    return cmp_nodes(&c->m->nodes[*(const size_t *)pa].pub, &c->m->nodes[*(const size_t *)pb].pub,
                     c->key, c->desc);
}

void tui_sort_nodes(const tui_model_t *self, enum tui_sort key, bool descending, size_t *order)
{
    assert(self && order);
    for (size_t i = 0; i < self->nnodes; i++)
        order[i] = i;
    /* Ties are broken by id, so the order is total and the unstable qsort is fine. */
    struct sort_ctx c = {self, key, descending};
    qsort_r(order, self->nnodes, sizeof *order, cmp_order, &c);
}
