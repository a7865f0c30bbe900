/*
 * Collectives: who did everyone wait for (docs/COLLECTIVES.md).
 *
 * Every update scans the events the model holds for collectives — GPU work
 * flagged GPU_EVF_COLLECTIVE (NCCL/RCCL kernels, the simulated allreduce)
 * per GPU stream, and host ranges or API calls named like a collective
 * (allreduce, nccl:all_reduce, gloo:broadcast, ...) per host thread, the
 * host ones only in processes with no collective GPU work (there the GPU
 * kernel is the arrival) and only the outermost of nested ones.  A
 * participant is such a track.  Each collective gets a key: its operation,
 * the step its process was in when it started (the latest step begin at or
 * before it; steps come from dpt_step_begin or the workload) and its
 * ordinal among that operation's collectives of the participant in that
 * step.  Equal keys are one instance.  Sources with communicator and
 * sequence numbers would key on those; the event model has neither yet.
 *
 * Instances are committed in order of first arrival on the global time base
 * (a watermark), each once: when every participant of the operation is in
 * it, or, missing some, once the newest global time is `settle` past it
 * (then it is partial, reported with what is missing).  Committing updates
 * the per-participant statistics, so they outlive the store's eviction.
 */
#include "tui/tui.h"

#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define COLL_MAX_OPS    256
#define COLL_MAX_PARTS  65536
#define COLL_RECENT     256 /* lateness values kept per participant (p95) */
#define COLL_EWMA_ALPHA 0.1
#define COLL_SETTLE_NS  2000000000LL
/* Live, each track is scanned back this far from its newest event (or 2.5
 * of the longest step seen, if longer): the settle time, with room. */
#define COLL_LOOKBACK_NS 4000000000LL

struct part {
    struct tui_track_key key;
    uint64_t instances, last, late;
    double sum_late, ewma;
    float recent[COLL_RECENT];
    size_t nrecent, recent_pos;
    size_t node_parts; /* participants of its node (labels) */
};

struct cand {
    uint32_t part;
    uint16_t op;
    bool dup; /* in a step whose number its process repeated */
    uint32_t ord;
    uint64_t step;
    int64_t t0, g0, g1;
    double unc;
    unsigned flags;
};

struct name_slot {
    bool used;
    bool flagged;
    uint16_t node;
    uint32_t pid, name_id;
    int op; /* -1: not a collective */
    uint64_t hash;
};

struct step_rec {
    uint16_t node;
    uint32_t pid;
    int64_t start;
    uint64_t step;
    bool dup;
};

struct tui_coll {
    size_t keep;
    tui_coll_sink_fn sink;
    void *sink_ctx;
    char ops[COLL_MAX_OPS][TUI_COLL_OP_LEN];
    size_t nops;
    struct part *parts;
    size_t nparts, capparts;
    struct name_slot *names;
    size_t nnames, capnames;
    /* scratch, rebuilt per update */
    struct cand *cand;
    size_t ncand, capcand;
    struct step_rec *steps;
    size_t nsteps, capsteps;
    /* committed */
    int64_t watermark; /* first arrival of the newest instance committed */
    bool have_watermark;
    uint64_t seq;
    int64_t max_step_ns;          /* longest step seen: how far back a live scan looks */
    int64_t scan_ns;              /* this update's lookback (INT64_MAX: everything) */
    struct tui_coll_inst *recent; /* ring of `keep` */
    size_t nrecent, recent_head;
    struct tui_coll_stats st;
};

/* ---- names --------------------------------------------------------------- */

static const char *const known_ops[] = {
    /* longer first: "reducescatter" must not read as "reduce" */
    "reducescatter", "allreduce", "allgather", "alltoall", "broadcast",
    "barrier",       "reduce",    "gather",    "scatter",
};
static const char *const lib_prefixes[] = {"",    "nccl", "rccl", "gloo",
                                           "mpi", "c10d", "ucc",  "dist"};
static const char *const op_suffixes[] = {
    "", "base", "coalesced", "tensor", "tensorcoalesced", "intotensor", "intotensorcoalesced", "v"};

/* Lower case, letters and digits only: "nccl:All_Reduce" -> "ncclallreduce". */
static void normalize(const char *s, char *out, size_t len)
{
    size_t n = 0;
    for (; *s && n + 1 < len; s++)
        if (isalnum((unsigned char)*s))
            out[n++] = (char)tolower((unsigned char)*s);
    out[n] = 0;
}

static int find_op(const char *norm)
{
    for (size_t i = 0; i < sizeof known_ops / sizeof *known_ops; i++)
        if (strstr(norm, known_ops[i]))
            return (int)i;
    return -1;
}

/* A host range or call is a collective when its whole name is one: an
 * operation with an optional library prefix and variant suffix. */
static int host_op(const char *norm)
{
    for (size_t p = 0; p < sizeof lib_prefixes / sizeof *lib_prefixes; p++) {
        size_t pl = strlen(lib_prefixes[p]);
        if (strncmp(norm, lib_prefixes[p], pl) != 0)
            continue;
        for (size_t o = 0; o < sizeof known_ops / sizeof *known_ops; o++) {
            size_t ol = strlen(known_ops[o]);
            if (strncmp(norm + pl, known_ops[o], ol) != 0)
                continue;
            for (size_t s = 0; s < sizeof op_suffixes / sizeof *op_suffixes; s++)
                if (strcmp(norm + pl + ol, op_suffixes[s]) == 0)
                    return (int)o;
        }
    }
    return -1;
}

int tui_coll_op_of(const char *name, bool device, char *op, size_t len)
{
    assert(name && op && len > 0);
    char norm[GPU_NAME_MAX + 1];
    normalize(name, norm, sizeof norm);
    int k = device ? find_op(norm) : host_op(norm);
    if (k >= 0) {
        snprintf(op, len, "%s", known_ops[k]);
        return BASE_OK;
    }
    if (device && norm[0]) { /* a collective kernel of no known operation: its own name */
        snprintf(op, len, "%s", norm);
        return BASE_OK;
    }
    op[0] = 0;
    return BASE_ERR;
}

static uint16_t op_index(tui_coll_t *self, const char *op)
{
    for (size_t i = 0; i < self->nops; i++)
        if (strcmp(self->ops[i], op) == 0)
            return (uint16_t)i;
    if (self->nops == COLL_MAX_OPS) {
        self->st.ops_over++;
        return COLL_MAX_OPS - 1; /* the last one takes the rest */
    }
    snprintf(self->ops[self->nops], TUI_COLL_OP_LEN, "%s", op);
    return (uint16_t)self->nops++;
}

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

/* The operation of (node, pid, name id) on a device or host track, cached;
 * -1: not a collective. */
static int name_op(tui_coll_t *self, tui_model_t *model, const struct tui_track_key *k,
                   uint32_t name_id, bool flagged)
{
    uint64_t h = mix(((uint64_t)k->node << 48) ^ ((uint64_t)k->pid << 16) ^
                     ((uint64_t)name_id << 32) ^ (uint64_t)flagged);
    if (self->nnames * 2 >= self->capnames) {
        size_t n = self->capnames ? self->capnames * 2 : 1024;
        struct name_slot *ns = xcalloc(n, sizeof *ns);
        for (size_t i = 0; i < self->capnames; i++)
            if (self->names[i].used) {
                size_t j = self->names[i].hash & (n - 1);
                while (ns[j].used)
                    j = (j + 1) & (n - 1);
                ns[j] = self->names[i];
            }
        free(self->names);
        self->names = ns;
        self->capnames = n;
    }
    struct name_slot want = {true, flagged, k->node, k->pid, name_id, 0, h};
    size_t j = h & (self->capnames - 1);
    for (; self->names[j].used; j = (j + 1) & (self->capnames - 1)) {
        const struct name_slot *o = &self->names[j];
        if (o->hash == h && o->node == k->node && o->pid == k->pid && o->name_id == name_id &&
            o->flagged == flagged)
            return o->op;
    }
    const char *name = tui_model_name(model, k->node, k->pid, name_id);
    char op[TUI_COLL_OP_LEN];
    /* A name not yet known is not cached: its names message may come later. */
    if (name == NULL)
        return flagged ? op_index(self, "unnamed") : -1;
    int r = tui_coll_op_of(name, flagged, op, sizeof op) == BASE_OK ? op_index(self, op) : -1;
    want.op = r;
    self->names[j] = want;
    self->nnames++;
    return r;
}

/* ---- participants -------------------------------------------------------- */

static bool key_eq(const struct tui_track_key *a, const struct tui_track_key *b)
{
    return a->node == b->node && a->pid == b->pid && a->host == b->host && a->id == b->id &&
           (a->host || a->device == b->device);
}

static int part_index(tui_coll_t *self, const struct tui_track_key *k)
{
    /* Linear, but over participants only (a few per node), once per track. */
    for (size_t i = 0; i < self->nparts; i++)
        if (key_eq(&self->parts[i].key, k))
            return (int)i;
    if (self->nparts == COLL_MAX_PARTS) {
        self->st.parts_over++;
        return -1;
    }
    if (self->nparts == self->capparts) {
        self->capparts = self->capparts ? self->capparts * 2 : 64;
        self->parts = xrealloc(self->parts, self->capparts * sizeof *self->parts);
    }
    struct part *p = &self->parts[self->nparts];
    memset(p, 0, sizeof *p);
    p->key = *k;
    p->ewma = NAN;
    size_t same = 0;
    for (size_t i = 0; i <= self->nparts; i++)
        same += self->parts[i].key.node == k->node;
    for (size_t i = 0; i <= self->nparts; i++)
        if (self->parts[i].key.node == k->node)
            self->parts[i].node_parts = same;
    return (int)self->nparts++;
}

void tui_coll_label(const tui_coll_t *self, uint32_t part, char *buf, size_t len)
{
    assert(self && buf);
    if (part >= self->nparts) {
        snprintf(buf, len, "?");
        return;
    }
    const struct part *p = &self->parts[part];
    if (p->node_parts <= 1)
        snprintf(buf, len, "n%u", p->key.node);
    else if (p->key.host)
        snprintf(buf, len, "n%u.t%" PRIu32, p->key.node, p->key.id);
    else
        snprintf(buf, len, "n%u.g%us%" PRIu32, p->key.node, p->key.device, p->key.id);
}

/* ---- lifetime ------------------------------------------------------------ */

tui_coll_t *tui_coll_new(size_t keep_recent)
{
    tui_coll_t *self = xcalloc(1, sizeof *self);
    self->keep = keep_recent ? keep_recent : TUI_COLL_KEEP;
    self->recent = xcalloc(self->keep, sizeof *self->recent);
    return self;
}

static void inst_free(struct tui_coll_inst *in)
{
    free(in->arr);
    free(in->missing);
    memset(in, 0, sizeof *in);
}

void tui_coll_reset(tui_coll_t *self)
{
    assert(self);
    for (size_t i = 0; i < self->keep; i++)
        inst_free(&self->recent[i]);
    self->nrecent = self->recent_head = 0;
    self->nparts = 0;
    self->nops = 0;
    free(self->names);
    self->names = NULL;
    self->nnames = self->capnames = 0;
    self->have_watermark = false;
    self->seq = 0;
    self->max_step_ns = 0;
    memset(&self->st, 0, sizeof self->st);
}

void tui_coll_destroy(tui_coll_t **pself)
{
    if (pself == NULL || *pself == NULL)
        return;
    tui_coll_t *self = *pself;
    tui_coll_reset(self);
    free(self->recent);
    free(self->parts);
    free(self->cand);
    free(self->steps);
    free(self);
    *pself = NULL;
}

void tui_coll_set_sink(tui_coll_t *self, tui_coll_sink_fn fn, void *ctx)
{
    assert(self);
    self->sink = fn;
    self->sink_ctx = ctx;
}

/* ---- one update ---------------------------------------------------------- */

static int cmp_step(const void *pa, const void *pb)
{
    const struct step_rec *a = pa, *b = pb;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return (a->start > b->start) - (a->start < b->start);
}

/* The first event of a track a scan looks at: everything, or the lookback
 * (steps: one longest step further, to find the step of the first). */
static size_t scan_start(const tui_coll_t *self, tui_store_t *st, size_t t, bool steps)
{
    if (self->scan_ns == INT64_MAX)
        return 0;
    const struct tui_track_info *ti = tui_store_track(st, t);
    int64_t back = self->scan_ns + (steps ? self->max_step_ns : 0);
    if (ti->last_start < INT64_MIN + back)
        return 0;
    return tui_store_lower_bound(st, t, ti->last_start - back);
}

static void collect_steps(tui_coll_t *self, tui_store_t *st)
{
    self->nsteps = 0;
    for (size_t t = 0; t < tui_store_ntracks(st); t++) {
        const struct tui_track_info *ti = tui_store_track(st, t);
        if (!ti->key.host)
            continue;
        for (size_t k = scan_start(self, st, t, true); k < ti->count; k++) {
            const tui_ev_t *e = tui_store_ev(st, t, k);
            if (e->kind != GPU_EV_STEP)
                continue;
            if (e->end - e->start > self->max_step_ns)
                self->max_step_ns = e->end - e->start;
            if (self->nsteps == self->capsteps) {
                self->capsteps = self->capsteps ? self->capsteps * 2 : 256;
                self->steps = xrealloc(self->steps, self->capsteps * sizeof *self->steps);
            }
            self->steps[self->nsteps++] = (struct step_rec){
                ti->key.node, tui_import_process_of(ti->key.pid), e->start, e->u.x.step, false};
        }
    }
    if (self->nsteps > 1)
        qsort(self->steps, self->nsteps, sizeof *self->steps, cmp_step);
    /* A step number seen twice in a process (a restart, two threads both
     * counting): the later begins are not trusted to key anything. */
    for (size_t i = 0; i < self->nsteps; i++) {
        size_t j = i;
        while (j > 0 && self->steps[j - 1].node == self->steps[i].node &&
               self->steps[j - 1].pid == self->steps[i].pid) {
            j--;
            if (self->steps[j].step == self->steps[i].step) {
                self->steps[i].dup = true;
                break;
            }
            if (i - j > 64)
                break; /* step numbers recur only as mistakes; look back a little */
        }
    }
}

/* The step of a process at trace time t: 1 and *step, 0 when it has steps
 * but none begun by t, -1 when it has none at all.  *dup when the step's
 * number was seen before. */
static int step_at(const tui_coll_t *self, uint16_t node, uint32_t pid, int64_t t, uint64_t *step,
                   bool *dup)
{
    struct step_rec key = {node, pid, t, 0, false};
    size_t lo = 0, hi = self->nsteps;
    while (lo < hi) { /* first record > key */
        size_t mid = (lo + hi) / 2;
        if (cmp_step(&self->steps[mid], &key) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && self->steps[lo - 1].node == node && self->steps[lo - 1].pid == pid) {
        *step = self->steps[lo - 1].step;
        *dup = self->steps[lo - 1].dup;
        return 1;
    }
    if (lo < self->nsteps && self->steps[lo].node == node && self->steps[lo].pid == pid)
        return 0;
    return -1;
}

static void add_cand(tui_coll_t *self, const struct cand *c)
{
    if (self->ncand == self->capcand) {
        self->capcand = self->capcand ? self->capcand * 2 : 1024;
        self->cand = xrealloc(self->cand, self->capcand * sizeof *self->cand);
    }
    self->cand[self->ncand++] = *c;
}

/* Whether (node, pid) has collective GPU work among the candidates so far. */
struct proc_key {
    uint16_t node;
    uint32_t pid;
};

static void collect_cands(tui_coll_t *self, tui_model_t *model, uint64_t *outside)
{
    tui_store_t *st = tui_model_store(model);
    self->ncand = 0;
    size_t nt = tui_store_ntracks(st);
    /* Device tracks first: the processes they name skip their host side. */
    struct proc_key *dev = NULL;
    size_t ndev = 0, capdev = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t t = 0; t < nt; t++) {
            const struct tui_track_info *ti = tui_store_track(st, t);
            if (ti->key.host != (pass == 1) || ti->count == 0)
                continue;
            if (pass == 1) {
                bool skip = false;
                for (size_t i = 0; i < ndev && !skip; i++)
                    skip = dev[i].node == ti->key.node &&
                           dev[i].pid == tui_import_process_of(ti->key.pid);
                if (skip)
                    continue;
            }
            int part = -2;
            int64_t outer_end = INT64_MIN;
            /* The map's ± holds its probe clock; the trace clock reaches
             * it through snapshot pairs, whose error between pairs adds. */
            double snap = tui_model_snap_dev(model, ti->key.node);
            for (size_t k = scan_start(self, st, t, false); k < ti->count; k++) {
                const tui_ev_t *e = tui_store_ev(st, t, k);
                int op;
                if (pass == 0) {
                    if (!(e->flags & GPU_EVF_COLLECTIVE))
                        continue;
                    op = name_op(self, model, &ti->key, e->name_id, true);
                } else {
                    if (e->kind != GPU_EV_RANGE && e->kind != GPU_EV_API)
                        continue;
                    if (e->start < outer_end)
                        continue; /* inside a collective of its own thread */
                    op = name_op(self, model, &ti->key, e->name_id, false);
                    if (op < 0)
                        continue;
                    outer_end = e->end;
                }
                if (op < 0)
                    continue;
                if (part == -2)
                    part = part_index(self, &ti->key);
                if (part < 0)
                    break;
                struct cand c = {.part = (uint32_t)part, .op = (uint16_t)op, .t0 = e->start};
                int s = step_at(self, ti->key.node, tui_import_process_of(ti->key.pid), e->start,
                                &c.step, &c.dup);
                if (s == 0) {
                    (*outside)++; /* before the first step held: its key is not known */
                    continue;
                }
                if (s < 0)
                    c.step = TUI_COLL_NOSTEP;
                double u0 = NAN, u1 = NAN;
                unsigned f0 = 0, f1 = 0;
                if (tui_model_map(model, ti->key.node, CLOCK_DOMAIN_TRACE, e->start, &c.g0, &u0,
                                  &f0) != BASE_OK ||
                    tui_model_map(model, ti->key.node, CLOCK_DOMAIN_TRACE, e->end, &c.g1, &u1,
                                  &f1) != BASE_OK)
                    continue;
                c.unc = u0 + snap;
                c.flags = f0 | f1;
                add_cand(self, &c);
            }
            if (pass == 0 && part >= 0) {
                if (ndev == capdev) {
                    capdev = capdev ? capdev * 2 : 16;
                    dev = xrealloc(dev, capdev * sizeof *dev);
                }
                dev[ndev++] = (struct proc_key){ti->key.node, tui_import_process_of(ti->key.pid)};
            }
        }
    }
    free(dev);
}

static int cmp_ord(const void *pa, const void *pb)
{
    const struct cand *a = pa, *b = pb;
    if (a->part != b->part)
        return a->part < b->part ? -1 : 1;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    if (a->op != b->op)
        return a->op < b->op ? -1 : 1;
    return (a->t0 > b->t0) - (a->t0 < b->t0);
}

static int cmp_key(const void *pa, const void *pb)
{
    const struct cand *a = pa, *b = pb;
    if (a->op != b->op)
        return a->op < b->op ? -1 : 1;
    if (a->step != b->step)
        return a->step < b->step ? -1 : 1;
    if (a->ord != b->ord)
        return a->ord < b->ord ? -1 : 1;
    return (a->g0 > b->g0) - (a->g0 < b->g0);
}

/* Who takes part in an operation: participants and their first and last step. */
struct opinfo {
    uint32_t *part;
    uint64_t *lo, *hi;
    size_t n;
};

/* A group of candidates (one key) before it is committed. */
struct group {
    size_t from, n;
    int64_t first, last_arrival;
    uint64_t jlo, jhi; /* the steps of the job its ranks belong to */
    bool complete, overlap;
};

static int cmp_group(const void *pa, const void *pb)
{
    const struct group *a = pa, *b = pb;
    return (a->first > b->first) - (a->first < b->first);
}

/* Median of the others' arrivals, for lateness: sorted arrivals without i. */
static int64_t median_others(const struct tui_coll_inst *in, size_t i)
{
    size_t m = in->n - 1, k = m / 2; /* the k-th of the others (upper median) */
    size_t idx = k < i ? k : k + 1;
    return in->arr[idx].start;
}

static void part_account(tui_coll_t *self, const struct tui_coll_inst *in)
{
    for (size_t i = 0; i < in->n; i++) {
        struct part *p = &self->parts[in->arr[i].part];
        p->instances++;
        int64_t late = in->arr[i].start - median_others(in, i);
        double l = late > 0 ? (double)late : 0;
        p->sum_late += l;
        p->ewma = isnan(p->ewma) ? l : p->ewma + COLL_EWMA_ALPHA * (l - p->ewma);
        p->recent[p->recent_pos] = (float)l;
        p->recent_pos = (p->recent_pos + 1) % COLL_RECENT;
        if (p->nrecent < COLL_RECENT)
            p->nrecent++;
    }
    if (in->verdict == TUI_COLL_LATE || in->verdict == TUI_COLL_WITHIN) {
        self->parts[in->last_part].last++;
        if (in->verdict == TUI_COLL_LATE)
            self->parts[in->last_part].late++;
    }
}

static int cmp_arr(const void *pa, const void *pb)
{
    const struct tui_coll_arrival *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->part < b->part ? -1 : a->part > b->part;
}

static void commit(tui_coll_t *self, const struct group *g, const struct opinfo *oi, bool *here)
{
    struct tui_coll_inst in = {0};
    const struct cand *c0 = &self->cand[g->from];
    in.seq = ++self->seq;
    snprintf(in.op, sizeof in.op, "%s", self->ops[c0->op]);
    in.step = c0->step;
    in.ordinal = c0->ord;
    in.n = g->n;
    in.arr = xcalloc(g->n, sizeof *in.arr);
    bool raw = false;
    for (size_t i = 0; i < g->n; i++) {
        const struct cand *c = &self->cand[g->from + i];
        in.arr[i] = (struct tui_coll_arrival){c->part, c->g0, c->g1, c->unc, c->flags};
        raw = raw || (c->flags & TUI_T_RAW) || !isfinite(c->unc);
    }
    qsort(in.arr, in.n, sizeof *in.arr, cmp_arr);
    /* Who was expected and is not here (here[]: scratch of nparts, all false). */
    for (size_t j = 0; j < in.n; j++)
        here[in.arr[j].part] = true;
    for (size_t i = 0; i < oi->n; i++)
        if (!here[oi->part[i]] && oi->lo[i] <= g->jhi && g->jlo <= oi->hi[i]) {
            in.missing = xrealloc(in.missing, (in.nmissing + 1) * sizeof *in.missing);
            in.missing[in.nmissing++] = oi->part[i];
        }
    for (size_t j = 0; j < in.n; j++)
        here[in.arr[j].part] = false;
    const struct tui_coll_arrival *first = &in.arr[0], *last = &in.arr[in.n - 1];
    in.first_ns = first->start;
    in.last_ns = last->start;
    in.skew_ns = last->start - first->start;
    in.last_part = last->part;
    int64_t end_min = INT64_MAX, end_max = INT64_MIN;
    for (size_t i = 0; i < in.n; i++) {
        end_min = in.arr[i].end < end_min ? in.arr[i].end : end_min;
        end_max = in.arr[i].end > end_max ? in.arr[i].end : end_max;
    }
    in.end_spread_ns = end_max - end_min;
    in.transfer_ns = last->end - last->start;
    in.unc_ns = NAN;
    if (in.n >= 2) {
        /* Who everyone waited for is a node: the last rank is measured
         * against the latest arrival on another node (GPUs of one node
         * arriving together are a tie that no clock can break), or, all on
         * one node, against the one before it. */
        const struct tui_coll_arrival *second = &in.arr[in.n - 2];
        uint16_t lnode = self->parts[last->part].key.node;
        for (size_t i = in.n - 1; i-- > 0;)
            if (self->parts[in.arr[i].part].key.node != lnode) {
                second = &in.arr[i];
                break;
            }
        in.second_part = second->part;
        in.lateness_ns = last->start - second->start;
        /* The ± are 3σ-like bounds of independent errors (map plus snapshot
         * pairs): the difference of two times is off by at most their root
         * sum of squares.  Two participants of one node share its clocks,
         * whose errors cancel. */
        bool same = self->parts[second->part].key.node == lnode;
        in.unc_ns = same ? 0 : sqrt(last->unc_ns * last->unc_ns + second->unc_ns * second->unc_ns);
    }
    if (in.nmissing || in.n < 2)
        in.verdict = TUI_COLL_PARTIAL;
    else if (g->overlap)
        in.verdict = TUI_COLL_MISMATCH;
    else if (raw)
        in.verdict = TUI_COLL_UNALIGNED;
    else
        in.verdict = (double)in.lateness_ns > in.unc_ns ? TUI_COLL_LATE : TUI_COLL_WITHIN;
    self->st.instances++;
    switch (in.verdict) {
    case TUI_COLL_LATE:
        self->st.late++;
        break;
    case TUI_COLL_WITHIN:
        self->st.within++;
        break;
    case TUI_COLL_PARTIAL:
        self->st.partial++;
        break;
    case TUI_COLL_MISMATCH:
        self->st.mismatch++;
        break;
    case TUI_COLL_UNALIGNED:
        self->st.unaligned++;
        break;
    }
    if (in.verdict == TUI_COLL_LATE || in.verdict == TUI_COLL_WITHIN)
        part_account(self, &in);
    if (self->sink)
        self->sink(self->sink_ctx, self, &in);
    struct tui_coll_inst *slot = &self->recent[self->recent_head];
    inst_free(slot);
    *slot = in;
    self->recent_head = (self->recent_head + 1) % self->keep;
    if (self->nrecent < self->keep)
        self->nrecent++;
    self->watermark = in.first_ns;
    self->have_watermark = true;
}

int tui_coll_update(tui_coll_t *self, tui_model_t *model, bool final)
{
    assert(self && model);
    uint64_t outside = 0;
    /* Live: what can still be uncommitted is recent (the settle time), so
     * a scan of a long store looks back only so far. */
    self->scan_ns = INT64_MAX;
    if (!final && self->have_watermark) {
        int64_t s = self->max_step_ns * 5 / 2;
        self->scan_ns = s > COLL_LOOKBACK_NS ? s : COLL_LOOKBACK_NS;
    }
    collect_steps(self, tui_model_store(model));
    collect_cands(self, model, &outside);
    self->st.outside_steps = outside;
    if (self->ncand == 0)
        return 0;
    /* Ordinals within (participant, step, operation). */
    qsort(self->cand, self->ncand, sizeof *self->cand, cmp_ord);
    uint64_t dups = 0;
    for (size_t i = 0; i < self->ncand; i++) {
        struct cand *c = &self->cand[i], *p = i ? &self->cand[i - 1] : NULL;
        c->ord = p && p->part == c->part && p->step == c->step && p->op == c->op ? p->ord + 1 : 0;
        dups += c->dup;
    }
    self->st.dup_step_events = dups;
    qsort(self->cand, self->ncand, sizeof *self->cand, cmp_key);
    /* Groups, and per operation who takes part. */
    struct group *gr = xcalloc(self->ncand, sizeof *gr);
    size_t ng = 0;
    for (size_t i = 0; i < self->ncand;) {
        size_t j = i;
        struct group g = {.from = i, .first = self->cand[i].g0, .last_arrival = self->cand[i].g0};
        bool skip = false;
        while (j < self->ncand && self->cand[j].op == self->cand[i].op &&
               self->cand[j].step == self->cand[i].step && self->cand[j].ord == self->cand[i].ord) {
            skip = skip || self->cand[j].dup;
            g.last_arrival = self->cand[j].g0 > g.last_arrival ? self->cand[j].g0 : g.last_arrival;
            j++;
        }
        g.n = j - i;
        if (!skip)
            gr[ng++] = g;
        i = j;
    }
    /* Per operation, its participants and the steps each took part in.  An
     * instance's job is the steps its present ranks ran; it expects every
     * participant whose steps meet the job's: a rank that joined late or
     * left early is missing where it is absent, another job's ranks (apart
     * in steps: the recording's own and an imported one) are not. */
    struct opinfo *info = xcalloc(self->nops + 1, sizeof *info);
    uint64_t *lo = xcalloc(self->nparts + 1, sizeof *lo),
             *hi = xcalloc(self->nparts + 1, sizeof *hi);
    bool *seen = xcalloc(self->nparts + 1, sizeof *seen);
    for (size_t o = 0; o < self->nops; o++) {
        memset(seen, 0, (self->nparts + 1) * sizeof *seen);
        for (size_t i = 0; i < ng; i++) {
            if (self->cand[gr[i].from].op != o)
                continue;
            for (size_t k = 0; k < gr[i].n; k++) {
                const struct cand *c = &self->cand[gr[i].from + k];
                if (!seen[c->part] || c->step < lo[c->part])
                    lo[c->part] = c->step;
                if (!seen[c->part] || c->step > hi[c->part])
                    hi[c->part] = c->step;
                seen[c->part] = true;
            }
        }
        struct opinfo *oi = &info[o];
        for (size_t p = 0; p < self->nparts; p++)
            oi->n += seen[p];
        oi->part = xcalloc(oi->n + 1, sizeof *oi->part);
        oi->lo = xcalloc(oi->n + 1, sizeof *oi->lo);
        oi->hi = xcalloc(oi->n + 1, sizeof *oi->hi);
        for (size_t p = 0, k = 0; p < self->nparts; p++)
            if (seen[p]) {
                oi->part[k] = (uint32_t)p;
                oi->lo[k] = lo[p];
                oi->hi[k++] = hi[p];
            }
        for (size_t i = 0; i < ng; i++) {
            const struct cand *c = &self->cand[gr[i].from];
            if (c->op != o)
                continue;
            gr[i].jlo = UINT64_MAX;
            gr[i].jhi = 0;
            for (size_t k = 0; k < gr[i].n; k++) {
                gr[i].jlo = lo[c[k].part] < gr[i].jlo ? lo[c[k].part] : gr[i].jlo;
                gr[i].jhi = hi[c[k].part] > gr[i].jhi ? hi[c[k].part] : gr[i].jhi;
            }
            size_t want = 0;
            for (size_t k = 0; k < oi->n; k++)
                want += oi->lo[k] <= gr[i].jhi && gr[i].jlo <= oi->hi[k];
            gr[i].complete = gr[i].n >= want;
        }
    }
    memset(seen, 0, (self->nparts + 1) * sizeof *seen);
    qsort(gr, ng, sizeof *gr, cmp_group);
    /* Paired right, a blocking collective's instances of one operation do
     * not overlap: every participant leaves one only after the last arrived,
     * so the next one's first arrival comes after this one's last.  Keys
     * that pair different instances (a rank skipped one) overlap. */
    size_t *prev = xcalloc(self->nops + 1, sizeof *prev);
    for (size_t i = 0; i < ng; i++) {
        uint16_t op = self->cand[gr[i].from].op;
        if (prev[op] && gr[prev[op] - 1].last_arrival > gr[i].first)
            gr[i].overlap = gr[prev[op] - 1].overlap = true;
        prev[op] = i + 1;
    }
    free(prev);

    struct tui_summary sum;
    tui_model_summary(model, &sum);
    int64_t horizon = final ? INT64_MAX : sum.latest_global - COLL_SETTLE_NS;
    int committed = 0;
    for (size_t i = 0; i < ng; i++) {
        if (self->have_watermark && gr[i].first <= self->watermark)
            continue;
        if (!gr[i].complete && gr[i].last_arrival >= horizon)
            break; /* a participant's events may still be on the way */
        uint16_t op = self->cand[gr[i].from].op;
        commit(self, &gr[i], &info[op], seen);
        committed++;
    }
    for (size_t o = 0; o < self->nops; o++) {
        free(info[o].part);
        free(info[o].lo);
        free(info[o].hi);
    }
    free(info);
    free(lo);
    free(hi);
    free(seen);
    free(gr);
    return committed;
}

/* ---- what it found ------------------------------------------------------- */

size_t tui_coll_nrecent(const tui_coll_t *self)
{
    assert(self);
    return self->nrecent;
}

const struct tui_coll_inst *tui_coll_recent(const tui_coll_t *self, size_t newest_first)
{
    assert(self);
    if (newest_first >= self->nrecent)
        return NULL;
    size_t k = (self->recent_head + self->keep - 1 - newest_first) % self->keep;
    return &self->recent[k];
}

size_t tui_coll_nparts(const tui_coll_t *self)
{
    assert(self);
    return self->nparts;
}

void tui_coll_part(const tui_coll_t *self, size_t i, struct tui_coll_part *out)
{
    assert(self && out && i < self->nparts);
    const struct part *p = &self->parts[i];
    memset(out, 0, sizeof *out);
    out->key = p->key;
    tui_coll_label(self, (uint32_t)i, out->label, sizeof out->label);
    out->instances = p->instances;
    out->last = p->last;
    out->late = p->late;
    out->mean_late_ns = p->instances ? p->sum_late / (double)p->instances : NAN;
    out->ewma_late_ns = p->ewma;
    out->p95_late_ns = NAN;
    if (p->nrecent) {
        float v[COLL_RECENT];
        memcpy(v, p->recent, p->nrecent * sizeof *v);
        /* insertion sort: at most 256 values */
        for (size_t a = 1; a < p->nrecent; a++) {
            float x = v[a];
            size_t b = a;
            for (; b > 0 && v[b - 1] > x; b--)
                v[b] = v[b - 1];
            v[b] = x;
        }
        size_t k = (size_t)ceil(0.95 * (double)p->nrecent);
        out->p95_late_ns = v[k ? k - 1 : 0];
    }
}

double tui_coll_node_score(const tui_coll_t *self, uint16_t node)
{
    assert(self);
    double best = NAN;
    for (size_t i = 0; i < self->nparts; i++)
        if (self->parts[i].key.node == node && !isnan(self->parts[i].ewma) &&
            (isnan(best) || self->parts[i].ewma > best))
            best = self->parts[i].ewma;
    return best;
}

void tui_coll_stats(const tui_coll_t *self, struct tui_coll_stats *out)
{
    assert(self && out);
    *out = self->st;
    out->participants = self->nparts;
}

const char *tui_coll_verdict_name(enum tui_coll_verdict v)
{
    switch (v) {
    case TUI_COLL_LATE:
        return "late";
    case TUI_COLL_WITHIN:
        return "within_uncertainty";
    case TUI_COLL_PARTIAL:
        return "partial";
    case TUI_COLL_MISMATCH:
        return "mismatch";
    case TUI_COLL_UNALIGNED:
        return "unaligned";
    }
    return "?";
}

/* ---- lines of the export -------------------------------------------------- */

void tui_coll_csv_header(FILE *out)
{
    fputs("seq,op,step,ordinal,ranks,first_ns,last_rank,last_ns,skew_ns,lateness_ns,unc_ns,"
          "verdict,end_spread_ns,transfer_ns,missing,arrivals\n",
          out);
}

static void put_unc(FILE *out, double u)
{
    if (isfinite(u))
        fprintf(out, "%.1f", u);
    else
        fputs("null", out);
}

void tui_coll_write_line(FILE *out, bool csv, const tui_coll_t *self,
                         const struct tui_coll_inst *in)
{
    assert(out && self && in);
    char lab[32];
    bool full = in->verdict != TUI_COLL_PARTIAL;
    if (csv) {
        fprintf(out, "%" PRIu64 ",%s,", in->seq, in->op);
        if (in->step == TUI_COLL_NOSTEP)
            fputs(",", out);
        else
            fprintf(out, "%" PRIu64 ",", in->step);
        tui_coll_label(self, in->last_part, lab, sizeof lab);
        fprintf(out, "%" PRIu32 ",%zu,%" PRId64 ",%s,%" PRId64 ",%" PRId64 ",%" PRId64 ",",
                in->ordinal, in->n, in->first_ns, full ? lab : "", in->last_ns, in->skew_ns,
                in->lateness_ns);
        if (isfinite(in->unc_ns))
            fprintf(out, "%.1f", in->unc_ns);
        fprintf(out, ",%s,%" PRId64 ",%" PRId64 ",", tui_coll_verdict_name(in->verdict),
                in->end_spread_ns, in->transfer_ns);
        for (size_t i = 0; i < in->nmissing; i++) {
            tui_coll_label(self, in->missing[i], lab, sizeof lab);
            fprintf(out, "%s%s", i ? " " : "", lab);
        }
        putc(',', out);
        for (size_t i = 0; i < in->n; i++) {
            tui_coll_label(self, in->arr[i].part, lab, sizeof lab);
            fprintf(out, "%s%s:%" PRId64, i ? " " : "", lab, in->arr[i].start);
        }
        putc('\n', out);
        return;
    }
    fprintf(out, "{\"seq\":%" PRIu64 ",\"op\":", in->seq);
    tui_json_str(out, in->op);
    fputs(",\"step\":", out);
    if (in->step == TUI_COLL_NOSTEP)
        fputs("null", out);
    else
        fprintf(out, "%" PRIu64, in->step);
    fprintf(out, ",\"ordinal\":%" PRIu32 ",\"ranks\":%zu,\"first_ns\":%" PRId64, in->ordinal, in->n,
            in->first_ns);
    tui_coll_label(self, in->last_part, lab, sizeof lab);
    fputs(",\"last_rank\":", out);
    if (full)
        tui_json_str(out, lab);
    else
        fputs("null", out);
    fprintf(out,
            ",\"last_ns\":%" PRId64 ",\"skew_ns\":%" PRId64 ",\"lateness_ns\":%" PRId64
            ",\"unc_ns\":",
            in->last_ns, in->skew_ns, in->lateness_ns);
    put_unc(out, in->unc_ns);
    fprintf(out, ",\"verdict\":\"%s\",\"end_spread_ns\":%" PRId64 ",\"transfer_ns\":%" PRId64,
            tui_coll_verdict_name(in->verdict), in->end_spread_ns, in->transfer_ns);
    fputs(",\"missing\":[", out);
    for (size_t i = 0; i < in->nmissing; i++) {
        tui_coll_label(self, in->missing[i], lab, sizeof lab);
        if (i)
            putc(',', out);
        tui_json_str(out, lab);
    }
    fputs("],\"arrivals\":[", out);
    for (size_t i = 0; i < in->n; i++) {
        const struct tui_coll_arrival *a = &in->arr[i];
        tui_coll_label(self, a->part, lab, sizeof lab);
        fprintf(out, "%s{\"rank\":", i ? "," : "");
        tui_json_str(out, lab);
        fprintf(out,
                ",\"node\":%u,\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 ",\"wait_ns\":%" PRId64
                ",\"unc_ns\":",
                self->parts[a->part].key.node, a->start, a->end, in->last_ns - a->start);
        put_unc(out, a->unc_ns);
        putc('}', out);
    }
    fputs("]}\n", out);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcasecmp(s + a - b, suffix) == 0;
}

struct file_sink {
    FILE *out;
    bool csv;
};

static void file_line(void *ctx, const tui_coll_t *c, const struct tui_coll_inst *in)
{
    struct file_sink *fs = ctx;
    tui_coll_write_line(fs->out, fs->csv, c, in);
}

int tui_coll_write_file(tui_coll_t *self, tui_model_t *model, const char *path, char *err)
{
    assert(self && model && path);
    base_afile_t *af = base_afile_open(path, err);
    if (af == NULL)
        return BASE_ERR;
    struct file_sink fs = {base_afile_stream(af), ends_with(path, ".csv")};
    if (fs.csv)
        tui_coll_csv_header(fs.out);
    tui_coll_set_sink(self, file_line, &fs);
    tui_coll_update(self, model, true);
    tui_coll_set_sink(self, NULL, NULL);
    return base_afile_commit(&af, err);
}

void tui_coll_report(const tui_coll_t *self, FILE *out, const char *path)
{
    assert(self && out);
    const struct tui_coll_stats *s = &self->st;
    fprintf(out,
            "dptop: wrote %" PRIu64 " collective instances to %s: %" PRIu64
            " with a late rank, %" PRIu64 " within the clocks' uncertainty, %" PRIu64
            " partial, %" PRIu64 " mismatched, %" PRIu64 " unaligned\n",
            s->instances, path ? path : "-", s->late, s->within, s->partial, s->mismatch,
            s->unaligned);
    if (s->dup_step_events || s->outside_steps)
        fprintf(out,
                "dptop: collectives left out: %" PRIu64 " in a step number their process "
                "repeated, %" PRIu64 " before their process's first step\n",
                s->dup_step_events, s->outside_steps);
    /* The participant most often last, with a significant call. */
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < self->nparts; i++)
        if (self->parts[i].late &&
            (best == SIZE_MAX || self->parts[i].late > self->parts[best].late))
            best = i;
    if (best == SIZE_MAX)
        return;
    struct tui_coll_part p;
    tui_coll_part(self, best, &p);
    fprintf(out,
            "dptop: most often late: %s, last in %" PRIu64 " of %" PRIu64 " (%" PRIu64
            " beyond the clocks' uncertainty), lateness mean %.0f ns, p95 %.0f ns\n",
            p.label, p.last, p.instances, p.late, p.mean_late_ns, p.p95_late_ns);
}
