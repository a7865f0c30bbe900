/*
 * Fitting a whole probe log: what `dpclock fit` and `dpclock bench` run.
 *
 * A log written by anyone may have any node ids, any probe graph, lines in
 * any order, clocks that differ by seconds.  Windows must cover the same
 * real interval on every edge for the network solve to make sense, so a
 * coarse pass first fits each edge over the whole log (minrtt, microsecond
 * class is plenty), chains those fits from the reference into a rough map
 * per node, and assigns every probe to the window of its send time on the
 * reference clock.  A clock that steps by a hundredth of a window or more
 * (a time daemon's step of seconds or hours) breaks a straight line: the
 * edges of such a node are fitted piece by piece between the jumps of
 * their offsets, its rough map has a piece per stretch between its steps,
 * and a window that holds a step is fitted on one side of it and flagged
 * (a step of the reference's clock, on which the windows are, flags its
 * edges in the windows it touches).  More than JUMP_MAX steps make an edge
 * one line again, which keeps the pieces' cost bounded.
 * Then, per window: purity filter and estimator per edge, then the solve.
 */
#include "clock/clock_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

struct clock_logfit {
    clock_logfit_opts_t o;
    clock_probe_t *p;
    size_t n, cap;
    clock_logfit_stats_t st;
    clock_edge_fit_t *ef;
    size_t nef, capef;
    clock_node_fit_t *nf;
    size_t nnf, capnf;
    uint32_t ref;
    clock_logfit_failure_t fail[CLOCK_LOGFIT_FAILURES_KEPT];
    size_t nfail;
    clock_logfit_failure_t unsolved; /* the first window the solver refused */
    /* What the edge fits left for the solves (clock_logfit_resolve reuses it). */
    bool fitted;
    int64_t *wins; /* the windows that saw probes, ascending */
    int64_t *span; /* per window: its probes' first and last time on the reference clock */
    size_t nw;
    uint32_t *ids; /* node ids, ascending */
    size_t nn;
    int64_t worg; /* window 0 is [worg·W, (worg + 1)·W) on the reference clock */
};

/*
 * Where window `win` starts.  Probes are placed within ±CLOCK_TIME_MAX_NS
 * on the reference's clock (strays beyond are set aside), so this fits
 * int64 by far; it saturates rather than overflow should that ever change.
 */
static int64_t window_start(int64_t worg, int64_t win, int64_t W)
{
    int64_t k, r;
    if (__builtin_add_overflow(worg, win, &k))
        return win > 0 ? INT64_MAX : INT64_MIN;
    if (__builtin_mul_overflow(k, W, &r))
        return k > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

void clock_logfit_opts_default(clock_logfit_opts_t *opts)
{
    assert(opts);
    memset(opts, 0, sizeof *opts);
    opts->est = clock_estimator_default();
    opts->window_ns = 2000000000LL;
    opts->max_probes = 20000000;
    clock_purity_opts_default(&opts->purity);
    clock_fit_opts_default(&opts->fit);
    clock_solve_opts_default(&opts->solve);
}

clock_logfit_t *clock_logfit_new(const clock_logfit_opts_t *opts)
{
    clock_logfit_t *self = xcalloc(1, sizeof *self);
    if (opts)
        self->o = *opts;
    else
        clock_logfit_opts_default(&self->o);
    if (self->o.est == NULL)
        self->o.est = clock_estimator_default();
    if (self->o.window_ns <= 0)
        self->o.window_ns = 2000000000LL;
    return self;
}

void clock_logfit_destroy(clock_logfit_t **self)
{
    if (self == NULL || *self == NULL)
        return;
    free((*self)->p);
    free((*self)->ef);
    free((*self)->nf);
    free((*self)->wins);
    free((*self)->span);
    free((*self)->ids);
    free(*self);
    *self = NULL;
}

int clock_logfit_add(clock_logfit_t *self, const clock_probe_t *p)
{
    assert(self && p);
    if (self->n >= self->o.max_probes) {
        self->st.probes_dropped++;
        return BASE_ERR;
    }
    if (self->n == self->cap) {
        size_t cap = self->cap ? 2 * self->cap : 4096;
        if (cap > self->o.max_probes)
            cap = self->o.max_probes;
        self->p = xreallocarray(self->p, cap, sizeof *self->p);
        self->cap = cap;
    }
    self->p[self->n++] = *p;
    self->st.probes++;
    return BASE_OK;
}

const clock_edge_fit_t *clock_logfit_edges(const clock_logfit_t *self, size_t *n)
{
    assert(self && n);
    *n = self->nef;
    return self->ef;
}

const clock_node_fit_t *clock_logfit_nodes(const clock_logfit_t *self, size_t *n)
{
    assert(self && n);
    *n = self->nnf;
    return self->nf;
}

void clock_logfit_get_stats(const clock_logfit_t *self, clock_logfit_stats_t *st)
{
    assert(self && st);
    *st = self->st;
}

const clock_logfit_failure_t *clock_logfit_failures(const clock_logfit_t *self, size_t *n)
{
    assert(self && n);
    *n = self->nfail;
    return self->fail;
}

const clock_logfit_failure_t *clock_logfit_unsolved(const clock_logfit_t *self)
{
    assert(self);
    return self->st.windows_unsolved ? &self->unsolved : NULL;
}

uint32_t clock_logfit_ref(const clock_logfit_t *self)
{
    assert(self);
    return self->ref;
}

static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static size_t id_index(const uint32_t *ids, size_t n, uint32_t id)
{
    const uint32_t *p = bsearch(&id, ids, n, sizeof *ids, base_cmp_u32);
    return p ? (size_t)(p - ids) : SIZE_MAX;
}

typedef struct keyed {
    uint64_t key; /* edge (min id << 32 | max id) */
    int64_t win;
    int64_t t; /* sender's transmit time, for a stable order */
    size_t i;  /* probe index */
} keyed_t;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed_t *p = a, *q = b;
    if (p->key != q->key)
        return (p->key > q->key) - (p->key < q->key);
    if (p->win != q->win)
        return (p->win > q->win) - (p->win < q->win);
    if (p->t != q->t)
        return (p->t > q->t) - (p->t < q->t);
    return (p->i > q->i) - (p->i < q->i);
}

static int cmp_edge_fit(const void *a, const void *b)
{
    const clock_edge_fit_t *p = a, *q = b;
    if (p->window != q->window)
        return (p->window > q->window) - (p->window < q->window);
    if (p->src != q->src)
        return (p->src > q->src) - (p->src < q->src);
    return (p->dst > q->dst) - (p->dst < q->dst);
}

/* A rough affine map node clock → reference clock: y = x + off + rate·(x − anchor). */
typedef struct rough {
    bool known;
    int64_t anchor;
    double off, rate;
} rough_t;

static int64_t rough_map(const rough_t *r, int64_t x)
{
    return clk_add(x, r->off + r->rate * clk_diff(x, r->anchor));
}

static int64_t rough_inverse(const rough_t *r, int64_t y)
{
    return clk_add(r->anchor, (clk_diff(y, r->anchor) - r->off) / (1.0 + r->rate));
}

/*
 * A node's rough map: one straight line, or one per stretch between the
 * steps of its clock that the coarse pass found.  A piece holds for the
 * node's stamps it was made from, on its own clock, and `slack` beyond
 * them (another edge's stamps reach a little further).  A clock stepped
 * back reads the same times twice, so a stamp may fit two pieces: the
 * other end of its probe tells which (rmap_pick).
 */
typedef struct rpiece {
    rough_t m;
    int64_t xlo, xhi;
    double slack;
} rpiece_t;

typedef struct rmap {
    bool known;
    bool sorted; /* pieces in order on the node's clock too (it never stepped back) */
    size_t n;    /* pieces, in time order; at most JUMP_MAX + 1 */
    rpiece_t *pc;
} rmap_t;

static void rmap_set_line(rmap_t *r, const rough_t *m)
{
    free(r->pc);
    r->known = true;
    r->sorted = true;
    r->n = 1;
    r->pc = xmalloc(sizeof *r->pc);
    r->pc[0] = (rpiece_t){*m, INT64_MIN, INT64_MAX, 0};
}

/* How far x lies outside [lo, hi] (0 inside it). */
static double range_outside(int64_t lo, int64_t hi, int64_t x)
{
    return fmax(fmax(clk_diff(lo, x), clk_diff(x, hi)), 0);
}

/*
 * How far x lies outside piece j (0 inside it): a stamp on the node's clock
 * outside the piece's stamps, or (mapped) a reference time outside where
 * the piece maps them.
 */
static double rmap_outside_by(const rmap_t *r, size_t j, int64_t x, bool mapped)
{
    const rpiece_t *c = &r->pc[j];
    if (mapped)
        return range_outside(rough_map(&c->m, c->xlo), rough_map(&c->m, c->xhi), x);
    return range_outside(c->xlo, c->xhi, x);
}

static double rmap_outside(const rmap_t *r, size_t j, int64_t x)
{
    return rmap_outside_by(r, j, x, false);
}

/* The pieces stamp x may belong to (into out, room for r->n); their count. */
static size_t rmap_candidates(const rmap_t *r, int64_t x, size_t *out)
{
    size_t m = 0, j = 0;
    if (r->sorted) { /* the first piece that does not end before x */
        size_t hi = r->n;
        while (j < hi) {
            size_t mid = j + (hi - j) / 2;
            if (clk_diff(x, r->pc[mid].xhi) > r->pc[mid].slack)
                j = mid + 1;
            else
                hi = mid;
        }
    }
    for (; j < r->n; j++) {
        if (rmap_outside(r, j, x) <= r->pc[j].slack)
            out[m++] = j;
        else if (r->sorted && clk_diff(r->pc[j].xlo, x) > r->pc[j].slack)
            break; /* this one and all later ones begin after x */
    }
    return m;
}

/* Whether r's pieces, with their slack, begin and end in order on the node's clock. */
static bool rmap_in_order(const rmap_t *r)
{
    for (size_t j = 0; j + 1 < r->n; j++) {
        const rpiece_t *p = &r->pc[j], *q = &r->pc[j + 1];
        if (clk_diff(q->xhi, p->xhi) < p->slack - q->slack ||
            clk_diff(q->xlo, p->xlo) < q->slack - p->slack)
            return false;
    }
    return true;
}

/* The piece of r whose range (mapped: on the reference clock) is nearest x (the first of equals).
 */
static size_t rmap_nearest_by(const rmap_t *r, int64_t x, bool mapped)
{
    size_t best = 0;
    double bd = rmap_outside_by(r, 0, x, mapped);
    for (size_t j = 1; j < r->n; j++) {
        double d = rmap_outside_by(r, j, x, mapped);
        if (d < bd) {
            bd = d;
            best = j;
        }
    }
    return best;
}

static size_t rmap_nearest(const rmap_t *r, int64_t x)
{
    return rmap_nearest_by(r, x, false);
}

/*
 * The piece of the sender's map for probe p: where its send stamp fits
 * more than one (or none), the one that puts it nearest to where the
 * receiver's map puts the receive stamp: the wrong side of a step is off
 * by the step, the right one by the path's delay.  cs and cd have room
 * for the two maps' pieces.
 */
static size_t rmap_pick(const rmap_t *rs, const rmap_t *rd, const clock_probe_t *p, size_t *cs,
                        size_t *cd)
{
    if (rs->n == 1)
        return 0;
    int pk = p->rx_ok[0] ? 0 : (p->rx_ok[1] ? 1 : -1);
    size_t ns = rmap_candidates(rs, p->tx[pk < 0 ? 0 : pk], cs);
    if (ns == 1)
        return cs[0];
    if (pk < 0)
        return ns > 0 ? cs[0] : rmap_nearest(rs, p->tx[0]);
    if (ns == 0)
        for (size_t j = 0; j < rs->n; j++)
            cs[ns++] = j;
    size_t nd = rd->n == 1 ? 0 : rmap_candidates(rd, p->rx[pk], cd);
    if (nd == 0)
        for (size_t j = 0; j < rd->n; j++)
            cd[nd++] = j;
    size_t best = cs[0];
    double bd = INFINITY;
    for (size_t i = 0; i < ns; i++) {
        int64_t ts = rough_map(&rs->pc[cs[i]].m, p->tx[pk]);
        for (size_t j = 0; j < nd; j++) {
            double d = fabs(clk_diff(rough_map(&rd->pc[cd[j]].m, p->rx[pk]), ts));
            if (d < bd) {
                bd = d;
                best = cs[i];
            }
        }
    }
    return best;
}

/* Reference time y back onto the node's clock, through the piece that holds at y. */
static int64_t rmap_inverse(const rmap_t *r, int64_t y)
{
    return rough_inverse(&r->pc[r->n == 1 ? 0 : rmap_nearest_by(r, y, true)].m, y);
}

typedef struct cpoint {
    double x, y;
} cpoint_t;

static int cmp_cpoint(const void *a, const void *b)
{
    const cpoint_t *p = a, *q = b;
    return (p->x > q->x) - (p->x < q->x);
}

/*
 * A probe's packet 0 as a point of edge a → b: dx on a's clock from the
 * first point's (*anchor, set then: *have), y the offset b − a it reads
 * (forward: rx − tx; reverse: tx − rx); false when the packet was lost.
 */
static bool edge_point(const clock_probe_t *p, uint32_t a, int64_t *anchor, bool *have, bool *fwd,
                       double *dx, double *y)
{
    if (!p->rx_ok[0])
        return false;
    *fwd = p->src == a;
    int64_t x = *fwd ? p->tx[0] : p->rx[0];
    if (!*have) {
        *anchor = x;
        *have = true;
    }
    *dx = clk_diff(x, *anchor);
    *y = *fwd ? clk_diff(p->rx[0], p->tx[0]) : clk_diff(p->tx[0], p->rx[0]);
    return true;
}

/*
 * Whole-log coarse fit of an edge (a → b) from packet 0 of every received
 * probe, as an edge fit (anchor, offset, drift); false when one direction
 * is missing.
 */
static bool coarse_edge(const clock_probe_t *P, const keyed_t *k, size_t cnt, uint32_t a,
                        int64_t window_ns, clock_edge_fit_t *out)
{
    cpoint_t *f = xmalloc(cnt * sizeof *f), *r = xmalloc(cnt * sizeof *r);
    size_t nf = 0, nr = 0;
    int64_t anchor = 0;
    bool have = false;
    for (size_t i = 0; i < cnt; i++) {
        bool fwd;
        double dx, y;
        if (!edge_point(&P[k[i].i], a, &anchor, &have, &fwd, &dx, &y))
            continue;
        cpoint_t c = {dx, y};
        if (fwd)
            f[nf++] = c;
        else
            r[nr++] = c;
    }
    bool ok = false;
    if (nf > 0 && nr > 0) {
        qsort(f, nf, sizeof *f, cmp_cpoint);
        qsort(r, nr, sizeof *r, cmp_cpoint);
        double *buf = xmalloc(2 * (nf + nr) * sizeof *buf);
        double *Xf = buf, *Yf = buf + nf, *Xr = buf + 2 * nf, *Yr = Xr + nr;
        double yref = f[0].y;
        for (size_t i = 0; i < nf; i++) {
            Xf[i] = f[i].x;
            Yf[i] = f[i].y - yref;
        }
        for (size_t i = 0; i < nr; i++) {
            Xr[i] = r[i].x;
            Yr[i] = r[i].y - yref;
        }
        double span = fmax(fmax(Xf[nf - 1], Xr[nr - 1]) - fmin(Xf[0], Xr[0]), 0);
        clock_fit_opts_t o;
        clock_fit_opts_default(&o);
        double iv = span / (double)window_ns;
        o.intervals = (uint32_t)(iv < 2 ? 2 : (iv > 100000 ? 100000 : iv));
        clock_side_t sf = {Xf, Yf, nf}, sr = {Xr, Yr, nr};
        clock_line_t ln = CLOCK_LINE_NONE;
        if (clk_fit_minrtt(&sf, &sr, &o, &ln, NULL) == BASE_OK && isfinite(ln.a) &&
            isfinite(ln.b) && fabs(ln.a) < 0.01) {
            out->anchor_ns = anchor;
            out->offset_ns = yref + ln.b;
            out->drift_ppb = ln.a * 1e9;
            ok = true;
        }
        free(buf);
    }
    free(f);
    free(r);
    return ok;
}

/*
 * A piece of an edge's coarse fit where the other's fails: the level
 * between its lowest forward and highest reverse offset (one of them when
 * it has one direction) at a neighbouring piece's drift; a few path delays
 * off at worst, which is plenty to place probes into windows.
 */
static bool crude_edge(const clock_probe_t *P, const keyed_t *k, size_t cnt, uint32_t a,
                       double drift_ppb, clock_edge_fit_t *out)
{
    double hi = INFINITY, lo = -INFINITY;
    int64_t anchor = 0;
    bool have = false;
    for (size_t i = 0; i < cnt; i++) {
        bool fwd;
        double dx, y;
        if (!edge_point(&P[k[i].i], a, &anchor, &have, &fwd, &dx, &y))
            continue;
        y -= drift_ppb * 1e-9 * dx;
        if (fwd)
            hi = fmin(hi, y);
        else
            lo = fmax(lo, y);
    }
    if (!have)
        return false;
    out->anchor_ns = anchor;
    out->offset_ns = isfinite(hi) && isfinite(lo) ? 0.5 * (hi + lo) : (isfinite(hi) ? hi : lo);
    out->drift_ppb = drift_ppb;
    return true;
}

/*
 * Clock steps too large for the coarse pass's straight lines.  One line
 * through a step of seconds puts the stepping node's probes into the wrong
 * windows on one side of it, or fails (the nodes beyond it then keep their
 * own clocks, windows past the log's end), so an edge whose offset jumps
 * is fitted piece by piece between its jumps.  A step of a node's clock
 * moves the offset of its edges at once, both directions alike; queuing
 * moves one direction, and only the one way.  So the edge's probes, in the
 * order of one end's clock (jpoint_order), are cut into blocks of
 * JUMP_BLOCK points a side, each
 * block's level is the midpoint of its lowest forward and highest reverse
 * offset, and a jump between two blocks is one where both of these move
 * the same way by a jump's size after the drift: at least a share
 * 1/JUMP_SHARE of a window (a smaller step moves few probes across a
 * window's edge, and the window's own fit finds it) and ten times the
 * blocks' width and level noise.  A block holding a step (or the stretch
 * a clock stepped back reads twice) is wider or narrower than the others
 * by about the step; its points go to the level they are nearer.  A step
 * before the first or after the last clean block leaves points off the
 * level by more than a jump, all one way, some of them on the side of the
 * level that no delay reaches: those are a piece of their own.
 */
#define JUMP_BLOCK 8
#define JUMP_SHARE 100
#define JUMP_MAX   64 /* jumps of an edge, pieces of a rough map beyond one (edge_jumps) */

typedef struct jpoint {
    int64_t x, xo; /* the stamp they are ordered by (a's or b's) and the other one */
    double y;      /* b's stamp − a's stamp */
    bool fwd;
    size_t k; /* index in the edge's keyed range */
} jpoint_t;

static int cmp_jpoint(const void *a, const void *b)
{
    const jpoint_t *p = a, *q = b;
    if (p->x != q->x)
        return (p->x > q->x) - (p->x < q->x);
    return (p->k > q->k) - (p->k < q->k);
}

/*
 * Times the other clock goes back by more than T from one point to the
 * next; *by gets how far it goes back in all.
 */
static size_t jpoint_descents(const jpoint_t *pt, size_t m, double T, double *by)
{
    size_t d = 0;
    *by = 0;
    for (size_t i = 0; i + 1 < m; i++) {
        double back = clk_diff(pt[i].xo, pt[i + 1].xo);
        if (back > T) {
            d++;
            *by += back;
        }
    }
    return d;
}

/*
 * Order the points by a's clock, or by b's where a's clock stepped back:
 * it reads the stretch it stepped over twice, and in its order the points
 * of both passes interleave (b's clock goes back and forth between them),
 * where in b's order a's clock goes back once, at the step.  Both orders
 * are the same but at steps.
 */
static void jpoint_order(jpoint_t *pt, size_t m, double T)
{
    qsort(pt, m, sizeof *pt, cmp_jpoint);
    double ba, bb;
    size_t da = jpoint_descents(pt, m, T, &ba);
    if (da == 0)
        return;
    jpoint_t *alt = xmalloc(m * sizeof *alt);
    for (size_t i = 0; i < m; i++)
        alt[i] = (jpoint_t){pt[i].xo, pt[i].x, pt[i].y, pt[i].fwd, pt[i].k};
    qsort(alt, m, sizeof *alt, cmp_jpoint);
    size_t db = jpoint_descents(alt, m, T, &bb);
    /*
     * A clock stepped back by more than the stretches on either side of the
     * step reads them one after the other, in the wrong order: each order
     * then has one descent, and the stepping clock's (by the step) is the
     * larger, the other's is at most the log's span.
     */
    if (db < da || (db == da && bb > ba))
        memcpy(pt, alt, m * sizeof *pt);
    free(alt);
}

typedef struct jblock {
    size_t from, to; /* points [from, to) */
    double hi, lo;   /* the lowest forward and the highest reverse offset */
    double xc;       /* its middle point, ns after the edge's first */
    bool clean;
    uint32_t run; /* clean blocks: the stretch between jumps */
} jblock_t;

/* Block level predicted at x (ns after the edge's first point). */
static double jlevel(const jblock_t *b, double drift, double x)
{
    return 0.5 * (b->hi + b->lo) + drift * (x - b->xc);
}

/*
 * The points of a head or tail stretch (blocks [b0, b1)) that stand off
 * level L by more than a jump: a piece of their own when they all stand
 * off the same way and one at least where no delay puts it (forward below
 * the level, reverse above).
 */
/* Point i's offset off level L, 0 unless by more than T. */
static double jump_off(const jpoint_t *pt, size_t i, const jblock_t *L, double drift, double T)
{
    double dev = pt[i].y - jlevel(L, drift, clk_diff(pt[i].x, pt[0].x));
    return fabs(dev) > T ? dev : 0;
}

static bool jump_edge_piece(const jpoint_t *pt, const jblock_t *bl, size_t b0, size_t b1,
                            const jblock_t *L, double drift, double T)
{
    int sign = 0;
    bool causal_break = false;
    for (size_t b = b0; b < b1; b++) {
        for (size_t i = bl[b].from; i < bl[b].to; i++) {
            double dev = jump_off(pt, i, L, drift, T);
            if (dev == 0)
                continue;
            int sg = dev > 0 ? 1 : -1;
            if (sign != 0 && sg != sign)
                return false;
            sign = sg;
            causal_break |= pt[i].fwd ? sg < 0 : sg > 0;
        }
    }
    return sign != 0 && causal_break;
}

/*
 * Cut an edge's probes (keyed range k[0..cnt), a its smaller id) at the
 * jumps of its offset: the pieces' count, piece[] (by probe index) for
 * every probe with packet 0 received (UINT32_MAX for the others), the jump
 * size looked for in *jump_ns.  An edge with more than JUMP_MAX jumps
 * (a clock stepped over and over, a sawtooth) is one piece, as before
 * steps were looked for, and *capped says so: its pieces would cost time
 * and memory that grow with their square (spread_edge, rmap_pick), and a
 * line through them places its probes no worse than before.
 */
static uint32_t edge_jumps(const clock_probe_t *P, const keyed_t *k, size_t cnt, uint32_t a,
                           int64_t window_ns, uint32_t *piece, double *jump_ns, bool *capped)
{
    double T = (double)window_ns / JUMP_SHARE;
    *jump_ns = T;
    *capped = false;
    jpoint_t *pt = xmalloc((cnt ? cnt : 1) * sizeof *pt);
    size_t m = 0;
    for (size_t i = 0; i < cnt; i++) {
        const clock_probe_t *p = &P[k[i].i];
        piece[k[i].i] = p->rx_ok[0] ? 0 : UINT32_MAX;
        if (!p->rx_ok[0])
            continue;
        bool fwd = p->src == a;
        int64_t xa = fwd ? p->tx[0] : p->rx[0], xb = fwd ? p->rx[0] : p->tx[0];
        pt[m++] = (jpoint_t){xa, xb, clk_diff(xb, xa), fwd, i};
    }
    jpoint_order(pt, m, T);
    jblock_t *bl = xmalloc((m / (2 * JUMP_BLOCK) + 1) * sizeof *bl);
    size_t nb = 0;
    for (size_t i = 0, from = 0, nf = 0, nr = 0; i < m; i++) {
        nf += pt[i].fwd;
        nr += !pt[i].fwd;
        if (nf >= JUMP_BLOCK && nr >= JUMP_BLOCK) {
            bl[nb++] = (jblock_t){from, i + 1, INFINITY, -INFINITY, 0, false, 0};
            from = i + 1;
            nf = nr = 0;
        }
    }
    uint32_t np = 1;
    if (nb < 3) /* too few to tell a jump from a trend */
        goto out;
    bl[nb - 1].to = m; /* the rest joins the last block */
    double *v = xmalloc(nb * sizeof *v);
    for (size_t b = 0; b < nb; b++) {
        for (size_t i = bl[b].from; i < bl[b].to; i++) {
            if (pt[i].fwd)
                bl[b].hi = fmin(bl[b].hi, pt[i].y);
            else
                bl[b].lo = fmax(bl[b].lo, pt[i].y);
        }
        bl[b].xc = clk_diff(pt[(bl[b].from + bl[b].to) / 2].x, pt[0].x);
        v[b] = bl[b].hi - bl[b].lo;
    }
    /*
     * The blocks' usual width (the round trip) and, from neighbours both
     * that wide (a block across a step is not), the drift and the level
     * noise.
     */
    double width = clk_median(v, nb);
    T = fmax(T, 10 * fabs(width));
    for (size_t b = 0; b < nb; b++)
        bl[b].clean = fabs(bl[b].hi - bl[b].lo - width) < 0.5 * T;
    size_t ns = 0;
    for (size_t b = 0; b + 1 < nb; b++) {
        double dx = bl[b + 1].xc - bl[b].xc;
        if (bl[b].clean && bl[b + 1].clean && dx > 0)
            v[ns++] = (jlevel(&bl[b + 1], 0, 0) - jlevel(&bl[b], 0, 0)) / dx;
    }
    double drift = ns >= 3 ? clk_median(v, ns) : 0;
    if (!(fabs(drift) < 0.01))
        drift = 0;
    ns = 0;
    for (size_t b = 0; b + 1 < nb; b++)
        if (bl[b].clean && bl[b + 1].clean)
            v[ns++] = fabs(jlevel(&bl[b + 1], drift, bl[b].xc) - jlevel(&bl[b], drift, bl[b].xc));
    double noise = ns > 0 ? clk_median(v, ns) : 0;
    free(v);
    T = fmax(T, 10 * noise);
    *jump_ns = T;
    size_t c0 = nb, cl = 0;
    uint32_t runs = 0;
    for (size_t b = 0, prev = nb; b < nb; b++) {
        bl[b].clean = fabs(bl[b].hi - bl[b].lo - width) < 0.5 * T;
        if (!bl[b].clean)
            continue;
        if (prev < nb) {
            double dx = bl[b].xc - bl[prev].xc;
            double rh = bl[b].hi - bl[prev].hi - drift * dx,
                   rl = bl[b].lo - bl[prev].lo - drift * dx;
            double r = 0.5 * (rh + rl);
            runs += fabs(r) >= T && rh * r > 0 && rl * r > 0 && fabs(rh) >= 0.5 * T &&
                    fabs(rl) >= 0.5 * T;
        }
        bl[b].run = runs;
        c0 = c0 < nb ? c0 : b;
        cl = b;
        prev = b;
    }
    if (c0 == nb) /* no block as wide as the usual: nothing to go by */
        goto out;
    bool head = jump_edge_piece(pt, bl, 0, c0, &bl[c0], drift, T);
    bool tail = jump_edge_piece(pt, bl, cl + 1, nb, &bl[cl], drift, T);
    np = (uint32_t)head + runs + 1 + (uint32_t)tail;
    if (np - 1 > JUMP_MAX) { /* one line, as if no jump were found (counted) */
        *capped = true;
        np = 1;
    }
    if (np == 1)
        goto out;
    uint32_t *pp = xmalloc(m * sizeof *pp);
    for (size_t b = 0, prev = nb; b < nb; b++) {
        if (!bl[b].clean)
            continue;
        for (size_t i = bl[b].from; i < bl[b].to; i++)
            pp[i] = (uint32_t)head + bl[b].run;
        size_t from = prev < nb ? bl[prev].from : 0;
        if (prev < nb && bl[prev].run != bl[b].run) {
            /* A jump: the points from the block before to this one go to the nearer level. */
            for (size_t i = from; i < bl[b].to; i++) {
                double x = clk_diff(pt[i].x, pt[0].x);
                double dp = fabs(pt[i].y - jlevel(&bl[prev], drift, x));
                double dn = fabs(pt[i].y - jlevel(&bl[b], drift, x));
                pp[i] = (uint32_t)head + (dn < dp ? bl[b].run : bl[prev].run);
            }
        } else {
            for (size_t i = prev < nb ? bl[prev].to : 0; i < bl[b].from; i++)
                pp[i] = (uint32_t)head + bl[b].run;
        }
        prev = b;
    }
    for (size_t i = bl[cl].to; i < m; i++)
        pp[i] = (uint32_t)head + bl[cl].run;
    for (int end = 0; end < 2; end++) {
        if (!(end == 0 ? head : tail))
            continue;
        const jblock_t *L = &bl[end == 0 ? c0 : cl];
        size_t i0 = end == 0 ? 0 : bl[cl].to, i1 = end == 0 ? bl[c0].from : m;
        for (size_t i = i0; i < i1; i++)
            if (jump_off(pt, i, L, drift, T) != 0)
                pp[i] = end == 0 ? 0 : np - 1;
    }
    for (size_t i = 0; i < m; i++)
        piece[k[pt[i].k].i] = pp[i];
    free(pp);
out:
    free(bl);
    free(pt);
    return np;
}

/* One piece of an edge's coarse fit. */
typedef struct cpiece {
    bool ok;
    clock_edge_fit_t fit; /* a's clock → b's clock */
} cpiece_t;

typedef struct cedge {
    uint64_t key;
    uint32_t a, b;        /* node indices */
    bool ok;              /* some piece fitted */
    clock_edge_fit_t fit; /* a's clock → b's clock (one piece: the whole log) */
    size_t first, count;  /* range in the keyed array */
    uint32_t npiece;      /* 1 unless its offset jumps (a clock stepped): see edge_jumps */
    bool capped;          /* one piece for more than JUMP_MAX jumps */
    cpiece_t *piece;
    double jump_ns; /* the jump size looked for */
} cedge_t;

/*
 * The piece with the most probes of cnt[0..n) but `skip` (the first of
 * equals); UINT32_MAX where none but `skip` has any.
 */
static uint32_t largest_piece(const size_t *cnt, uint32_t n, uint32_t skip)
{
    uint32_t best = UINT32_MAX;
    for (uint32_t pc = 0; pc < n; pc++)
        if (pc != skip && cnt[pc] > 0 && (best == UINT32_MAX || cnt[pc] > cnt[best]))
            best = pc;
    return best;
}

/*
 * The coarse fit of edge E (a: its smaller id): over the whole log, or
 * piece by piece where its offset jumps (edge_jumps: ppiece gets each
 * probe's piece, by probe index).  A piece whose own fit fails gets a
 * crude one at its nearest fitted neighbour's drift, so that a step a few
 * probes before the log's end still moves them; with none fitted the edge
 * is not used.
 */
static void coarse_pieces(const clock_probe_t *P, const keyed_t *K, uint32_t *ppiece, uint32_t a,
                          int64_t window_ns, cedge_t *E)
{
    const keyed_t *k = K + E->first;
    E->npiece = edge_jumps(P, k, E->count, a, window_ns, ppiece, &E->jump_ns, &E->capped);
    E->piece = xcalloc(E->npiece, sizeof *E->piece);
    if (E->npiece == 1) {
        E->ok = coarse_edge(P, k, E->count, a, window_ns, &E->fit);
        E->piece[0] = (cpiece_t){E->ok, E->fit};
        return;
    }
    /* The edge's probes grouped by piece, each group in the edge's order. */
    keyed_t *sub = xmalloc(E->count * sizeof *sub);
    size_t *at = xcalloc((size_t)E->npiece + 1, sizeof *at);
    for (size_t i = 0; i < E->count; i++)
        if (ppiece[k[i].i] != UINT32_MAX)
            at[ppiece[k[i].i] + 1]++;
    for (uint32_t pc = 0; pc < E->npiece; pc++)
        at[pc + 1] += at[pc];
    size_t *fill = xmalloc((size_t)E->npiece * sizeof *fill);
    memcpy(fill, at, (size_t)E->npiece * sizeof *fill);
    for (size_t i = 0; i < E->count; i++)
        if (ppiece[k[i].i] != UINT32_MAX)
            sub[fill[ppiece[k[i].i]]++] = k[i];
    free(fill);
    size_t *len = xmalloc((size_t)E->npiece * sizeof *len);
    for (uint32_t pc = 0; pc < E->npiece; pc++) {
        E->piece[pc].ok =
            coarse_edge(P, sub + at[pc], at[pc + 1] - at[pc], a, window_ns, &E->piece[pc].fit);
        len[pc] = E->piece[pc].ok ? at[pc + 1] - at[pc] : 0;
        E->ok |= E->piece[pc].ok;
    }
    uint32_t most = largest_piece(len, E->npiece, UINT32_MAX);
    free(len);
    for (uint32_t pc = 0; pc < E->npiece && E->ok; pc++) {
        if (E->piece[pc].ok)
            continue;
        uint32_t near = most;
        for (uint32_t q = 0; q < E->npiece; q++)
            if (E->piece[q].ok && (q > pc ? q - pc : pc - q) < (near > pc ? near - pc : pc - near))
                near = q;
        E->piece[pc].ok = crude_edge(P, sub + at[pc], at[pc + 1] - at[pc], a,
                                     E->piece[near].fit.drift_ppb, &E->piece[pc].fit);
    }
    if (E->ok)
        E->fit = E->piece[most].fit;
    free(sub);
    free(at);
}

static size_t uf_root(size_t *up, size_t i)
{
    while (up[i] != i)
        i = up[i] = up[up[i]];
    return i;
}

/*
 * The default reference: the smallest id of the largest part of the graph
 * that edges fitted both ways connect (ties: the part with the smaller
 * id).  That is the smallest id overall unless that node is cut off, say it
 * only received: every map onto it would be unaligned.
 */
static size_t default_ref(const cedge_t *E, size_t ne, size_t nn)
{
    size_t *up = xmalloc(nn * sizeof *up), *size = xcalloc(nn, sizeof *size);
    for (size_t i = 0; i < nn; i++)
        up[i] = i;
    for (size_t e = 0; e < ne; e++) {
        if (!E[e].ok)
            continue;
        size_t a = uf_root(up, E[e].a), b = uf_root(up, E[e].b);
        if (a != b)
            up[a > b ? a : b] = a < b ? a : b; /* the root is the part's smallest index */
    }
    size_t best = 0;
    for (size_t i = 0; i < nn; i++)
        size[uf_root(up, i)]++;
    for (size_t i = 0; i < nn; i++)
        if (size[i] > size[best])
            best = i;
    free(up);
    free(size);
    return best;
}

/* Edge fit f backwards: the reading of a's clock where b's reads y. */
static int64_t edge_inverse(const clock_edge_fit_t *f, int64_t y)
{
    return clk_add(f->anchor_ns,
                   clk_diff_add(y, f->anchor_ns, -f->offset_ns) / (1.0 + f->drift_ppb * 1e-9));
}

/* v's line through edge fit f (a's clock → b's clock) and u's line ru, v being b when u is a. */
static rough_t rough_through(const clock_edge_fit_t *f, bool u_is_a, const rough_t *ru)
{
    /* x_v → x_u through the edge, then u's map; sampled at two points one second apart. */
    int64_t xv0 = u_is_a ? clock_edge_map(f, f->anchor_ns) : f->anchor_ns;
    int64_t xs[2] = {xv0, clk_add(xv0, 1e9)}, ys[2];
    for (int j = 0; j < 2; j++) {
        int64_t xu = u_is_a ? edge_inverse(f, xs[j]) : clock_edge_map(f, xs[j]);
        ys[j] = rough_map(ru, xu);
    }
    return (rough_t){true, xs[0], clk_diff(ys[0], xs[0]), clk_diff(ys[1], ys[0]) / 1e9 - 1.0};
}

typedef struct spread_ctx {
    const clock_probe_t *P;
    const keyed_t *K;
    const uint32_t *ppiece; /* per probe: its piece of its edge (edge_jumps) */
    const uint32_t *ids;
    const cedge_t *E;
    size_t ne;
    rmap_t *R;
    size_t nn;
    size_t *root;     /* per node: the node its map was composed from */
    uint64_t *capped; /* maps that got one line for more than JUMP_MAX + 1 pieces */
} spread_ctx_t;

/*
 * v's rough map from u's over edge E.  Each of E's pieces is split where u's
 * map changes piece (a probe's u stamp tells which; one a stepped-back clock
 * reads twice goes with the rest of its edge piece) and composed with that
 * piece of u's; consecutive parts that agree on v's clock are one piece of
 * v's map (what changed was u's clock, or E's piece ended), parts a jump
 * apart are two (v's clock stepped).
 */
static bool spread_edge(const spread_ctx_t *c, const cedge_t *E, size_t u, size_t v)
{
    const rmap_t *ru = &c->R[u];
    bool u_is_a = E->a == u;
    if (E->npiece == 1 && ru->n == 1) {
        rough_t m = rough_through(&E->fit, u_is_a, &ru->pc[0].m);
        rmap_set_line(&c->R[v], &m);
        return true;
    }
    size_t nu = ru->n, ng = (size_t)E->npiece * nu;
    size_t *votes = xcalloc(ng, sizeof *votes), *cnt = xcalloc(ng, sizeof *cnt);
    size_t *cand = xmalloc(nu * sizeof *cand);
    int64_t *vlo = xmalloc(ng * sizeof *vlo), *vhi = xmalloc(ng * sizeof *vhi);
    for (size_t g = 0; g < ng; g++) {
        vlo[g] = INT64_MAX;
        vhi[g] = INT64_MIN;
    }
    uint32_t a_id = c->ids[E->a];
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = E->first; i < E->first + E->count; i++) {
            uint32_t pc = c->ppiece[c->K[i].i];
            if (pc == UINT32_MAX)
                continue;
            const clock_probe_t *p = &c->P[c->K[i].i];
            bool fwd = p->src == a_id;
            int64_t xa = fwd ? p->tx[0] : p->rx[0], xb = fwd ? p->rx[0] : p->tx[0];
            int64_t xu = u_is_a ? xa : xb, xv = u_is_a ? xb : xa;
            size_t nc = 1, *row = votes + (size_t)pc * nu;
            cand[0] = 0;
            if (nu > 1)
                nc = rmap_candidates(ru, xu, cand);
            if (pass == 0) {
                row[cand[0]] += nc == 1;
                continue;
            }
            size_t j = nc > 0 ? cand[0] : 0;
            for (size_t q = 1; q < nc; q++)
                j = row[cand[q]] > row[j] ? cand[q] : j;
            if (nc == 0) {
                for (size_t q = 1; q < nu; q++)
                    j = row[q] > row[j] ? q : j;
                if (row[j] == 0)
                    j = rmap_nearest(ru, xu);
            }
            size_t g = (size_t)pc * nu + j;
            cnt[g]++;
            vlo[g] = xv < vlo[g] ? xv : vlo[g];
            vhi[g] = xv > vhi[g] ? xv : vhi[g];
        }
    }
    rpiece_t *out = xmalloc(ng * sizeof *out);
    size_t nv = 0, *best = votes; /* reused: the points behind each piece's line */
    rough_t prev = {0};
    for (size_t g = 0; g < ng; g++) {
        const cpiece_t *cp = &E->piece[g / nu];
        if (cnt[g] == 0 || !cp->ok)
            continue;
        rough_t m = rough_through(&cp->fit, u_is_a, &ru->pc[g % nu].m);
        if (nv > 0 &&
            fabs(clk_diff(rough_map(&prev, vlo[g]), rough_map(&m, vlo[g]))) < 0.5 * E->jump_ns) {
            rpiece_t *o = &out[nv - 1];
            o->xlo = vlo[g] < o->xlo ? vlo[g] : o->xlo;
            o->xhi = vhi[g] > o->xhi ? vhi[g] : o->xhi;
            if (cnt[g] > best[nv - 1]) {
                o->m = m;
                best[nv - 1] = cnt[g];
            }
        } else {
            out[nv] = (rpiece_t){m, vlo[g], vhi[g], E->jump_ns};
            best[nv++] = cnt[g];
        }
        prev = m;
    }
    free(votes);
    free(cnt);
    free(cand);
    free(vlo);
    free(vhi);
    if (nv == 0) {
        free(out);
        return false;
    }
    if (nv > JUMP_MAX + 1) { /* one line, as before steps were looked for (counted) */
        free(out);
        (*c->capped)++;
        rough_t m = rough_through(&E->fit, u_is_a, &ru->pc[0].m);
        rmap_set_line(&c->R[v], &m);
        return true;
    }
    free(c->R[v].pc);
    c->R[v] = (rmap_t){true, false, nv, out};
    c->R[v].sorted = rmap_in_order(&c->R[v]);
    return true;
}

/* Compose the rough maps outward from `root` over coarse edges (breadth first). */
static void rough_spread(const spread_ctx_t *c, size_t root)
{
    size_t *queue = xmalloc(c->nn * sizeof *queue);
    size_t qh = 0, qt = 0;
    queue[qt++] = root;
    while (qh < qt) {
        size_t u = queue[qh++];
        for (size_t e = 0; e < c->ne; e++) {
            const cedge_t *E = &c->E[e];
            if (!E->ok || (E->a != u && E->b != u))
                continue;
            size_t v = E->a == u ? E->b : E->a;
            if (c->R[v].known)
                continue;
            if (spread_edge(c, E, u, v)) {
                c->root[v] = c->root[u];
                queue[qt++] = v;
            }
        }
    }
    free(queue);
}

static void push_edge(clock_logfit_t *self, const clock_edge_fit_t *f)
{
    if (self->nef == self->capef) {
        self->capef = self->capef ? 2 * self->capef : 256;
        self->ef = xreallocarray(self->ef, self->capef, sizeof *self->ef);
    }
    self->ef[self->nef++] = *f;
}

static void push_node(clock_logfit_t *self, const clock_node_fit_t *f)
{
    if (self->nnf == self->capnf) {
        self->capnf = self->capnf ? 2 * self->capnf : 256;
        self->nf = xreallocarray(self->nf, self->capnf, sizeof *self->nf);
    }
    self->nf[self->nnf++] = *f;
}

typedef struct win_ctx {
    clock_logfit_t *self;
    const size_t *first; /* edge fits of window w: ef[first[w] .. first[w + 1]) */
    clock_history_t *hist;
    double *tau, *persist; /* of each written window with loops (room for every window) */
    size_t *ntau;
} win_ctx_t;

/*
 * Solve window w (with the history or without), feed it to the history, write
 * its node fits; with the history, neither fed nor written: note its
 * slow-host bounds in the history (written and not fed: keep them).
 */
static void solve_window(const win_ctx_t *c, size_t w, bool use_hist, bool feed, bool write,
                         uint32_t lag)
{
    clock_logfit_t *self = c->self;
    int64_t win = self->wins[w], W = self->o.window_ns;
    size_t ei = c->first[w], ej = c->first[w + 1];
    clock_solve_opts_t so = self->o.solve;
    so.ref = self->ref;
    /*
     * The window, cut to where it has samples at an end with no window next
     * to it: the log's first and last, and those beside a gap (a stray
     * probe an hour on is a window of its own, and the log's last real
     * window still ends where its samples do).
     */
    so.from_ns = window_start(self->worg, win, W);
    so.to_ns = clk_add(so.from_ns, (double)W);
    int64_t lo = self->span[2 * w], hi = self->span[2 * w + 1];
    if ((w == 0 || self->wins[w - 1] != win - 1) && so.from_ns < lo && lo < so.to_ns)
        so.from_ns = lo;
    if ((w + 1 == self->nw || self->wins[w + 1] != win + 1) && so.to_ns > hi && hi > so.from_ns)
        so.to_ns = hi;
    so.at_ns = clk_mid(so.from_ns, so.to_ns);
    so.history = use_hist ? c->hist : NULL;
    /* A step at the boundary with the window before, which neither window's fits saw. */
    if (feed && w > 0 && self->wins[w - 1] == win - 1) {
        size_t pi = c->first[w - 1];
        clock_step_between_t *sb = xmalloc((self->nn + 1) * sizeof *sb);
        /* No fit at all (ef NULL) is no step either: no pointer made from it. */
        size_t nsb = clock_steps_between(ei > pi ? &self->ef[pi] : NULL, ei - pi,
                                         ej > ei ? &self->ef[ei] : NULL, ej - ei, sb, self->nn + 1);
        for (size_t i = 0; i < nsb; i++)
            clock_history_cut(c->hist, sb[i].node, self->ref, win);
        self->st.steps_between += nsb;
        free(sb);
    }
    double t0 = cpu_ns();
    /*
     * What the solver refuses (too many nodes in one window, a graph too
     * dense for its factor) is refused for that window alone: its nodes
     * are written unaligned, counted, and the other windows still solved.
     */
    char why[BASE_ERRLEN];
    if (use_hist && !feed && !write) {
        /* A window the solver refuses has no bounds to note; its written solve counts it. */
        (void)clock_history_note_bounds(c->hist, ej > ei ? &self->ef[ei] : NULL, ej - ei, &so, why);
        self->st.solve_ns_total += cpu_ns() - t0;
        return;
    }
    clock_node_fit_t *nodes = NULL;
    size_t nnodes = 0;
    clock_solve_stats_t sst;
    if (clock_solve(ej > ei ? &self->ef[ei] : NULL, ej - ei, &so, &nodes, &nnodes, &sst, why) !=
        BASE_OK) {
        memset(&sst, 0, sizeof sst);
        if (write && self->st.windows_unsolved++ == 0) {
            self->unsolved.window = win;
            self->unsolved.src = self->unsolved.dst = UINT32_MAX;
            snprintf(self->unsolved.why, sizeof self->unsolved.why, "%s", why);
        }
    }
    self->st.solve_ns_total += cpu_ns() - t0;
    if (write && sst.aligned > 1) {
        self->st.loops_min = sst.dof < self->st.loops_min ? sst.dof : self->st.loops_min;
        self->st.loops_max = sst.dof > self->st.loops_max ? sst.dof : self->st.loops_max;
        self->st.windows_no_loops += sst.dof == 0;
        if (sst.dof > 0 && *c->ntau < self->nw) {
            c->tau[*c->ntau] = sst.extra_sigma_ns;
            c->persist[(*c->ntau)++] = sst.persist_sigma_ns;
        }
    }
    if (feed)
        clock_history_add(c->hist, nodes, nnodes, ej > ei ? &self->ef[ei] : NULL, ej - ei, &sst);
    else if (use_hist)
        clock_history_keep_bounds(c->hist, nodes, nnodes);
    /*
     * Merge with the full node list so that every node is reported every
     * window; a node the window has no edge fit of is unaligned there,
     * which the history takes for a break in its track.
     */
    for (size_t i = 0, k = 0; (write || feed) && i < self->nn; i++) {
        clock_node_fit_t f;
        if (k < nnodes && nodes[k].node == self->ids[i]) {
            f = nodes[k++];
            f.window = win;
        } else {
            clock_node_fit_init(&f, win, self->ids[i], self->ref);
            if (feed)
                clock_history_add(c->hist, &f, 1, NULL, 0, NULL);
        }
        if (!write)
            continue;
        f.lag = f.aligned ? lag : 0;
        self->st.node_windows++;
        if (!f.aligned)
            self->st.node_unaligned++;
        push_node(self, &f);
    }
    free(nodes);
}

/*
 * A window of edge E that holds probes of more than one of its coarse
 * pieces holds a step of one end's clock, one so large that the window's
 * own fit may well not see it (a clock stepped forward leaves a gap on its
 * own clock, one stepped back reads the same times twice, and a line
 * through either is no fit).  The window keeps the probes of its largest
 * piece (buf and *m cut to them: k[0..*m) are the window's keyed probes,
 * buf their copies) and the step is put where the later piece starts on
 * a's clock, its size from the two pieces' coarse fits.  False where the
 * window holds one piece.
 */
static bool window_piece(const cedge_t *E, const uint32_t *ppiece, const clock_probe_t *P,
                         const keyed_t *k, clock_probe_t *buf, size_t *m, uint32_t a, int64_t *at,
                         double *size)
{
    if (E->npiece == 1)
        return false;
    size_t *cnt = xcalloc(E->npiece, sizeof *cnt);
    for (size_t j = 0; j < *m; j++)
        if (ppiece[k[j].i] != UINT32_MAX)
            cnt[ppiece[k[j].i]]++;
    uint32_t most = largest_piece(cnt, E->npiece, UINT32_MAX);
    uint32_t next = most == UINT32_MAX ? UINT32_MAX : largest_piece(cnt, E->npiece, most);
    free(cnt);
    if (next == UINT32_MAX)
        return false;
    uint32_t early = most < next ? most : next, late = most < next ? next : most;
    /* Each clock's last reading of the early piece and first of the late one. */
    int64_t ea = INT64_MIN, eb = INT64_MIN, la = INT64_MAX, lb = INT64_MAX;
    size_t kept = 0;
    for (size_t j = 0; j < *m; j++) {
        const clock_probe_t *p = &P[k[j].i];
        uint32_t pc = ppiece[k[j].i];
        int64_t xa = p->src == a ? p->tx[0] : p->rx[0], xb = p->src == a ? p->rx[0] : p->tx[0];
        if (pc == late) {
            la = xa < la ? xa : la;
            lb = xb < lb ? xb : lb;
        } else if (pc == early) {
            ea = xa > ea ? xa : ea;
            eb = xb > eb ? xb : eb;
        }
        if (pc == most)
            buf[kept++] = *p;
    }
    *m = kept;
    *at = la;
    /*
     * The clock that stepped is the one that jumps from the early piece to
     * the late one; the other reads on.  Both pieces' offsets are taken at
     * one reading of that other clock: one instant (at one reading of the
     * stepping clock they are a step apart, which puts the edge's drift
     * times the step into the size).
     */
    const cpiece_t *pe = &E->piece[early], *pl = &E->piece[late];
    if (!(pe->ok && pl->ok))
        *size = NAN;
    else if (fabs(clk_diff(la, ea)) > fabs(clk_diff(lb, eb))) /* a stepped: at b's reading lb */
        *size = clk_diff(edge_inverse(&pe->fit, lb), edge_inverse(&pl->fit, lb));
    else
        *size = clk_diff(clock_edge_map(&pl->fit, la), clock_edge_map(&pe->fit, la));
    return true;
}

static int logfit_solve(clock_logfit_t *self, char *err);

static int cmp_probe(const void *a, const void *b)
{
    const clock_probe_t *p = a, *q = b;
    if (p->src != q->src)
        return (p->src > q->src) - (p->src < q->src);
    if (p->dst != q->dst)
        return (p->dst > q->dst) - (p->dst < q->dst);
    for (int j = 0; j < 2; j++)
        if (p->tx[j] != q->tx[j])
            return (p->tx[j] > q->tx[j]) - (p->tx[j] < q->tx[j]);
    /* The copy that saw more of the probe first; then by its stamps, so
     * that the order of the log's lines changes nothing. */
    int rp = p->rx_ok[0] + p->rx_ok[1], rq = q->rx_ok[0] + q->rx_ok[1];
    if (rp != rq)
        return (rq > rp) - (rq < rp);
    for (int j = 0; j < 2; j++) {
        int64_t x = p->rx_ok[j] ? p->rx[j] : 0, y = q->rx_ok[j] ? q->rx[j] : 0;
        if (x != y)
            return (x > y) - (x < y);
    }
    return 0;
}

/* Copies of one probe that tell different receive stamps: one of them is
 * wrong, and nothing says which. */
static bool probe_conflicts(const clock_probe_t *a, const clock_probe_t *b)
{
    for (int j = 0; j < 2; j++)
        if (a->rx_ok[j] && b->rx_ok[j] && a->rx[j] != b->rx[j])
            return true;
    return false;
}

/*
 * The same probe twice (same ends, same send stamps): logs of both ends of
 * an edge hold the same probes, and a log put together from every node's
 * would count each twice, which no fit notices but every uncertainty
 * would be too small by √2.  The first of each (sorted: the one that saw
 * more of it) stays; copies that disagree on a receive stamp are all set
 * aside (counted in *conflicts), whatever order they came in.
 */
static size_t drop_duplicates(clock_logfit_t *self, uint64_t *conflicts)
{
    qsort(self->p, self->n, sizeof *self->p, cmp_probe);
    size_t m = 0, nconf = 0;
    for (size_t i = 0; i < self->n;) {
        const clock_probe_t *a = &self->p[i];
        size_t j = i + 1;
        bool conflict = false;
        while (j < self->n && self->p[j].src == a->src && self->p[j].dst == a->dst &&
               self->p[j].tx[0] == a->tx[0] && self->p[j].tx[1] == a->tx[1]) {
            conflict |= probe_conflicts(a, &self->p[j]);
            j++;
        }
        if (conflict)
            nconf++;
        else
            self->p[m++] = *a;
        i = j;
    }
    /* Copies beyond the first of each probe (conflicting ones included). */
    size_t dropped = self->n - m - nconf;
    self->n = m;
    *conflicts = nconf;
    return dropped;
}

/* A step of the clock a rough map was composed from (its root: the reference). */
typedef struct rstep {
    size_t root;
    int64_t y0, y1; /* its last reading before and first after */
    double size;    /* the step: y1 − y0 less the time the node's clock read meanwhile */
} rstep_t;

/* The stretch of the root's clock across the step, from its lower end to its upper. */
static int64_t rstep_lo(const rstep_t *r)
{
    return r->y0 < r->y1 ? r->y0 : r->y1;
}

static int64_t rstep_hi(const rstep_t *r)
{
    return r->y0 < r->y1 ? r->y1 : r->y0;
}

static int cmp_rstep(const void *a, const void *b)
{
    const rstep_t *p = a, *q = b;
    if (p->root != q->root)
        return (p->root > q->root) - (p->root < q->root);
    return (rstep_lo(p) > rstep_lo(q)) - (rstep_lo(p) < rstep_lo(q));
}

/*
 * The steps behind the rough maps' pieces.  Where a node's map changes
 * piece, either its own clock jumps (a gap or a stretch read twice on it,
 * none on the root's clock) or its root's does (the other way round; the
 * root's map is one line by definition, so its step shows in the map of
 * every node composed from it, at one time on its clock).  The nodes' own
 * steps are counted into *count, and so are the root steps, once each
 * (the maps that show one overlap across it); every map's record of a
 * root step comes back (into *n), in order of root and time.
 */
static rstep_t *rmap_steps(const rmap_t *R, const size_t *root, size_t nn, size_t *n,
                           uint64_t *count)
{
    size_t m = 0, cap = 0;
    rstep_t *rs = NULL;
    for (size_t v = 0; v < nn; v++) {
        for (size_t j = 0; j + 1 < R[v].n; j++) {
            const rpiece_t *p0 = &R[v].pc[j], *p1 = &R[v].pc[j + 1];
            double T = 0.5 * p1->slack;
            double sv = clk_diff(p1->xlo, p0->xhi), dv = fabs(sv);
            int64_t y0 = rough_map(&p0->m, p0->xhi), y1 = rough_map(&p1->m, p1->xlo);
            double sr = clk_diff(y1, y0), dr = fabs(sr);
            if (dv >= T && dv >= dr) {
                (*count)++;
            } else if (dr >= T && dr > dv) {
                if (m == cap) {
                    cap = cap ? 2 * cap : 16;
                    rs = xreallocarray(rs, cap, sizeof *rs);
                }
                rs[m++] = (rstep_t){root[v], y0, y1, sr - sv};
            }
        }
    }
    if (m > 1)
        qsort(rs, m, sizeof *rs, cmp_rstep);
    /* One step of a root: the maps' stretches across it (y0 to y1) overlap. */
    int64_t reach = INT64_MIN;
    for (size_t j = 0; j < m; j++) {
        if (j == 0 || rs[j].root != rs[j - 1].root || rstep_lo(&rs[j]) > reach) {
            (*count)++;
            reach = rstep_hi(&rs[j]);
        } else if (rstep_hi(&rs[j]) > reach) {
            reach = rstep_hi(&rs[j]);
        }
    }
    *n = m;
    return rs;
}

/* A window the reference stepped in: where it reads on after the step, and by how much. */
typedef struct rwin {
    int64_t win, at;
    double size;
} rwin_t;

static int cmp_rwin(const void *a, const void *b)
{
    const rwin_t *p = a, *q = b;
    return (p->win > q->win) - (p->win < q->win);
}

static bool win_before(const void *elem, const void *key)
{
    return *(const int64_t *)elem < *(const int64_t *)key;
}

int clock_logfit_run(clock_logfit_t *self, char *err)
{
    assert(self);
    self->nef = self->nnf = 0;
    self->nfail = 0;
    self->fitted = false;
    free(self->wins);
    free(self->span);
    free(self->ids);
    self->wins = NULL;
    self->span = NULL;
    self->ids = NULL;
    clock_logfit_stats_t keep = self->st;
    memset(&self->st, 0, sizeof self->st);
    self->st.probes = keep.probes;
    self->st.probes_dropped = keep.probes_dropped;
    self->st.loops_min = UINT32_MAX;
    self->st.tau_ns_median = self->st.persist_ns_median = NAN;
    if (self->n == 0)
        return base_err(err, "no probes to fit");
    uint64_t conflicts = 0;
    self->st.duplicates = keep.duplicates + drop_duplicates(self, &conflicts);
    self->st.duplicate_conflicts = keep.duplicate_conflicts + conflicts;
    /* Probes that contradict each other are all dropped, and they can be all there were. */
    if (self->n == 0)
        return base_err(
            err, "no probes to fit: every one of the %" PRIu64 " probes has a copy that disagrees",
            conflicts);
    const clock_probe_t *P = self->p;
    size_t n = self->n;
    int64_t W = self->o.window_ns;

    /* Node ids. */
    uint32_t *ids = xmalloc(2 * n * sizeof *ids);
    for (size_t i = 0; i < n; i++) {
        ids[2 * i] = P[i].src;
        ids[2 * i + 1] = P[i].dst;
    }
    qsort(ids, 2 * n, sizeof *ids, base_cmp_u32);
    size_t nn = 0;
    for (size_t i = 0; i < 2 * n; i++)
        if (nn == 0 || ids[i] != ids[nn - 1])
            ids[nn++] = ids[i];
    uint32_t ref = self->o.ref_set ? self->o.ref : ids[0];
    if (id_index(ids, nn, ref) == SIZE_MAX) {
        free(ids);
        return base_err(err, "reference node %u does not appear in the log", ref);
    }

    /* Group probes by edge (window unknown yet). */
    keyed_t *K = xmalloc(n * sizeof *K);
    for (size_t i = 0; i < n; i++) {
        uint32_t a = P[i].src < P[i].dst ? P[i].src : P[i].dst;
        uint32_t b = P[i].src < P[i].dst ? P[i].dst : P[i].src;
        K[i] = (keyed_t){((uint64_t)a << 32) | b, 0, P[i].tx[0], i};
    }
    qsort(K, n, sizeof *K, cmp_keyed);
    size_t ne = 0;
    for (size_t i = 0; i < n; i++)
        if (i == 0 || K[i].key != K[i - 1].key)
            ne++;
    cedge_t *E = xcalloc(ne, sizeof *E);
    ne = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || K[i].key != K[i - 1].key) {
            E[ne].key = K[i].key;
            E[ne].a = (uint32_t)id_index(ids, nn, (uint32_t)(K[i].key >> 32));
            E[ne].b = (uint32_t)id_index(ids, nn, (uint32_t)(K[i].key & 0xffffffffu));
            E[ne].first = i;
            ne++;
        }
        E[ne - 1].count++;
    }
    uint32_t *ppiece = xmalloc(n * sizeof *ppiece);
    for (size_t e = 0; e < ne; e++)
        coarse_pieces(P, K, ppiece, ids[E[e].a], W, &E[e]);
    if (!self->o.ref_set)
        ref = ids[default_ref(E, ne, nn)];
    self->st.ref_moved = !self->o.ref_set && ref != ids[0];
    self->ref = ref;
    size_t iref = id_index(ids, nn, ref);

    /* Rough maps: the reference's component, then every other component on its own root. */
    rmap_t *R = xcalloc(nn, sizeof *R);
    size_t *root = xmalloc(nn * sizeof *root);
    spread_ctx_t sc = {P, K, ppiece, ids, E, ne, R, nn, root, &self->st.coarse_capped};
    const rough_t line0 = {true, 0, 0, 0};
    rmap_set_line(&R[iref], &line0);
    root[iref] = iref;
    rough_spread(&sc, iref);
    bool *in_ref = xcalloc(nn, sizeof *in_ref);
    for (size_t i = 0; i < nn; i++)
        in_ref[i] = R[i].known;
    for (size_t i = 0; i < nn; i++) {
        if (!R[i].known) {
            rmap_set_line(&R[i], &line0);
            root[i] = i;
            rough_spread(&sc, i);
        }
    }
    for (size_t e = 0; e < ne; e++)
        self->st.coarse_capped += E[e].capped;
    size_t maxpc = 1;
    for (size_t i = 0; i < nn; i++)
        maxpc = R[i].n > maxpc ? R[i].n : maxpc;
    size_t nrs;
    rstep_t *rs = rmap_steps(R, root, nn, &nrs, &self->st.clock_jumps);
    free(root);

    /* Windows on the (rough) reference clock, from the sender's transmit time. */
    int64_t tmin = INT64_MAX, tmax = INT64_MIN;
    bool any_ref = false;
    size_t *cs = xmalloc(2 * maxpc * sizeof *cs); /* room for two maps' pieces */
    /*
     * A stamp its node's rough map puts beyond ±CLOCK_TIME_MAX_NS on the
     * reference's clock, which reads only within it, is a stray: set aside
     * and counted as bad, or a window of its own would start beyond int64
     * and be written as a line no reader takes.
     */
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        const clock_probe_t *p = &P[K[i].i];
        size_t s = id_index(ids, nn, p->src), d = id_index(ids, nn, p->dst);
        int64_t t = rough_map(&R[s].pc[rmap_pick(&R[s], &R[d], p, cs, cs + maxpc)].m, p->tx[0]);
        if (t > CLOCK_TIME_MAX_NS || t < -CLOCK_TIME_MAX_NS) {
            self->st.bad++;
            continue;
        }
        K[kept] = K[i];
        K[kept++].t = t;
        if (in_ref[s]) {
            tmin = t < tmin ? t : tmin;
            tmax = t > tmax ? t : tmax;
            any_ref = true;
        }
    }
    n = kept;
    if (!any_ref) {
        for (size_t i = 0; i < n; i++) {
            tmin = K[i].t < tmin ? K[i].t : tmin;
            tmax = K[i].t > tmax ? K[i].t : tmax;
        }
    }
    int64_t worg = clk_floor_div(tmin, W);
    for (size_t i = 0; i < n; i++)
        K[i].win = clk_floor_div(K[i].t, W) - worg;
    /*
     * The windows the reference's own steps touch: where its clock leaves
     * off and where it reads on.  Windows are on its clock, so one of them
     * holds a stretch it never read (stepped forward) or read twice
     * (back): every other node's map there would hold on one side of the
     * step only, so the reference's edges are flagged there and every
     * other node is unaligned for those windows.
     */
    size_t nsw = 0;
    rwin_t *sw = xmalloc((2 * nrs + 1) * sizeof *sw);
    for (size_t j = 0; j < nrs; j++) {
        if (rs[j].root != iref)
            continue;
        int64_t w0 = clk_floor_div(rs[j].y0, W) - worg;
        int64_t w1 = clk_floor_div(rs[j].y1, W) - worg;
        sw[nsw++] = (rwin_t){w0, rs[j].y1, rs[j].size};
        if (w1 != w0)
            sw[nsw++] = (rwin_t){w1, rs[j].y1, rs[j].size};
    }
    if (nsw > 1)
        qsort(sw, nsw, sizeof *sw, cmp_rwin);
    free(rs);
    qsort(K, n, sizeof *K, cmp_keyed);
    for (size_t e = 0, i = 0; e < ne; e++) { /* regroup: the sort kept edges contiguous */
        E[e].first = i;
        while (i < n && K[i].key == E[e].key)
            i++;
        E[e].count = i - E[e].first;
    }

    /* Per edge and window: purity, fit. */
    clock_probe_t *buf = xmalloc(n * sizeof *buf);
    clock_point_t *fw = xmalloc(n * sizeof *fw), *rv = xmalloc(n * sizeof *rv);
    for (size_t e = 0; e < ne; e++) {
        size_t i = E[e].first, end = E[e].first + E[e].count;
        while (i < end) {
            int64_t win = K[i].win;
            size_t m = 0, i0 = i;
            while (i < end && K[i].win == win)
                buf[m++] = P[K[i++].i];
            uint32_t a = ids[E[e].a], b = ids[E[e].b];
            self->st.edge_windows++;
            double t0 = cpu_ns();
            clock_purity_stats_t ps;
            size_t nf, nr;
            clock_edge_points(buf, m, a, b, &self->o.purity, fw, &nf, rv, &nr, &ps);
            int64_t step_at = 0;
            double step_size = 0;
            bool cut = window_piece(&E[e], ppiece, P, K + i0, buf, &m, a, &step_at, &step_size);
            if (cut) /* the window's counts stay those of all its probes */
                clock_edge_points(buf, m, a, b, &self->o.purity, fw, &nf, rv, &nr, NULL);
            clock_edge_fit_t fit;
            char e2[BASE_ERRLEN] = "";
            int rc = clock_fit_edge(self->o.est, fw, nf, rv, nr, &self->o.fit, &fit, e2);
            self->st.fit_ns_total += cpu_ns() - t0;
            self->st.pure += ps.pure;
            self->st.impure += ps.impure;
            self->st.lost += ps.lost;
            self->st.bad += ps.bad;
            if (rc != BASE_OK) {
                self->st.edge_fit_errors++;
                if (self->nfail < CLOCK_LOGFIT_FAILURES_KEPT) {
                    clock_logfit_failure_t *f = &self->fail[self->nfail++];
                    *f = (clock_logfit_failure_t){.window = win, .src = a, .dst = b};
                    snprintf(f->why, sizeof f->why, "%s", e2);
                }
                continue;
            }
            self->st.set_aside += fit.set_aside;
            fit.window = win;
            fit.src = a;
            fit.dst = b;
            const rwin_t key = {win, 0, 0};
            const rwin_t *rw = nsw ? bsearch(&key, sw, nsw, sizeof *sw, cmp_rwin) : NULL;
            if (cut) {
                fit.step = true;
                fit.step_at_ns = step_at;
                fit.step_ns = step_size;
            } else if (rw && (E[e].a == iref || E[e].b == iref)) {
                /* The reference stepped: the offset b − a moves by the step (a's: against it). */
                fit.step = true;
                fit.step_at_ns = rmap_inverse(&R[E[e].a], rw->at);
                /*
                 * A far-off rough map of a can place it beyond the range
                 * readers take (saturated even): then at the samples' end
                 * it is nearest.  Otherwise as it is, which for a step
                 * across a window boundary lies between the windows.
                 */
                if (fit.step_at_ns > CLOCK_TIME_MAX_NS || fit.step_at_ns < -CLOCK_TIME_MAX_NS)
                    fit.step_at_ns = fit.step_at_ns < fit.from_ns ? fit.from_ns : fit.to_ns;
                fit.step_ns = E[e].b == iref ? rw->size : -rw->size;
            }
            self->st.margin_steps += fit.margin_step_ns != 0;
            if (fit.step) {
                self->st.steps++;
            } else if (!rw) { /* (a window the reference stepped in ends where its samples do) */
                /* The window's bounds, where the samples reach them (not at a log's ends). */
                int64_t w0 = window_start(worg, win, W);
                int64_t lo = rmap_inverse(&R[E[e].a], w0);
                int64_t hi = rmap_inverse(&R[E[e].a], clk_add(w0, (double)W));
                double slack = 0.05 * (double)W;
                if (clk_diff(fit.from_ns, lo) < slack && lo <= fit.to_ns)
                    fit.from_ns = lo;
                if (clk_diff(hi, fit.to_ns) < slack && hi >= fit.from_ns)
                    fit.to_ns = hi;
            }
            push_edge(self, &fit);
            self->st.edge_fits++;
        }
    }
    free(buf);
    free(fw);
    free(rv);
    if (self->nef > 0) /* ef is NULL without any */
        qsort(self->ef, self->nef, sizeof *self->ef, cmp_edge_fit);

    /* Every window that saw probes gets a node fit per node. */
    int64_t *wins = xmalloc(n * sizeof *wins);
    for (size_t i = 0; i < n; i++)
        wins[i] = K[i].win;
    qsort(wins, n, sizeof *wins, clk_cmp_i64);
    size_t nw = 0;
    for (size_t i = 0; i < n; i++)
        if (nw == 0 || wins[i] != wins[nw - 1])
            wins[nw++] = wins[i];
    /* Each window's samples from the reference's part (from all where it has none). */
    int64_t *span = xmalloc(2 * nw * sizeof *span);
    for (size_t j = 0; j < nw; j++) {
        span[2 * j] = INT64_MAX;
        span[2 * j + 1] = INT64_MIN;
    }
    for (size_t i = 0; i < n; i++) {
        if (any_ref && !in_ref[id_index(ids, nn, P[K[i].i].src)])
            continue;
        size_t j = clk_lower_bound(wins, nw, sizeof *wins, &K[i].win, win_before);
        span[2 * j] = K[i].t < span[2 * j] ? K[i].t : span[2 * j];
        span[2 * j + 1] = K[i].t > span[2 * j + 1] ? K[i].t : span[2 * j + 1];
    }
    free(in_ref);
    for (size_t i = 0; i < nn; i++)
        free(R[i].pc);
    free(R);
    for (size_t e = 0; e < ne; e++)
        free(E[e].piece);
    free(E);
    free(ppiece);
    free(cs);
    free(sw);
    free(K);
    self->wins = wins;
    self->span = span;
    self->nw = nw;
    self->ids = ids;
    self->nn = nn;
    self->worg = worg;
    if (n == 0)
        return base_err(
            err, "no probes to fit: every one maps beyond ±2^62 ns on the reference's clock");
    self->fitted = true;
    return logfit_solve(self, err);
}

int clock_logfit_resolve(clock_logfit_t *self, const clock_logfit_opts_t *opts, char *err)
{
    assert(self && opts);
    if (!self->fitted)
        return base_err(err, "no edge fits to solve again (run the fit first)");
    self->o.solve = opts->solve;
    self->o.causal = opts->causal;
    self->o.lag = opts->lag;
    self->nnf = 0;
    self->st.node_windows = self->st.node_unaligned = 0;
    return logfit_solve(self, err);
}

/*
 * Two passes: the first learns each node's typical misfit (wander), the
 * typical path asymmetry and every window's own maps over the whole log,
 * the second solves with them (pooling each window with its neighbours
 * on both sides).  Causal: one pass, each window with what the earlier
 * ones taught, fed as it goes, as a live master does (same half-life);
 * with a lag, window k is written once window k + lag has been fed, as a
 * master that publishes late would (a fixed-lag smoother).
 */
static int logfit_solve(clock_logfit_t *self, char *err)
{
    if (self->o.lag > CLOCK_LAG_MAX)
        return base_err(err, "lag %u is beyond %d", self->o.lag, CLOCK_LAG_MAX);
    size_t nw = self->nw;
    self->st.windows = nw;
    self->st.loops_min = UINT32_MAX;
    self->st.loops_max = 0;
    self->st.windows_no_loops = 0;
    self->st.windows_unsolved = 0;
    bool causal = self->o.causal;
    size_t lag = causal ? self->o.lag : 0;
    clock_history_t *hist = clock_history_new(causal ? 30 : 0, self->nn);
    if (!causal) /* the whole log's maps: about a third of what the node fits hold anyway */
        clock_history_set_track(hist, nw + 1);
    size_t *first = xmalloc((nw + 1) * sizeof *first);
    for (size_t w = 0, ei = 0; w <= nw; w++) {
        while (ei < self->nef && (w == nw || self->ef[ei].window < self->wins[w]))
            ei++;
        first[w] = ei;
    }
    size_t ntau = 0;
    double *tau = xmalloc((nw + 1) * sizeof *tau), *persist = xmalloc((nw + 1) * sizeof *persist);
    win_ctx_t wc = {self, first, hist, tau, persist, &ntau};
    self->st.solve_ns_total = 0;
    if (!causal) {
        for (size_t w = 0; w < nw; w++)
            solve_window(&wc, w, false, true, false, 0);
        /* Each window's slow-host bounds, now that every margin has its level. */
        for (size_t w = 0; w < nw; w++)
            solve_window(&wc, w, true, false, false, 0);
        self->st.solve_ns_total = 0; /* the cost of the solve that is written */
        for (size_t w = 0; w < nw; w++)
            solve_window(&wc, w, true, false, true, 0);
    } else {
        for (size_t w = 0; w < nw + lag; w++) {
            if (w < nw)
                solve_window(&wc, w, true, true, lag == 0, 0);
            /*
             * Earlier windows' slow-host bounds, with the levels there are
             * now: window numbers k − 1, k − 2, k − 4, … as the master counts
             * them (a window without probes has nothing to note).
             */
            int64_t d;
            for (size_t i = 0, j = w; w < nw && (d = clock_history_renote_lag(i)) > 0; i++) {
                while (j > 0 && self->wins[j] > self->wins[w] - d)
                    j--;
                /* The window written below is noted by that solve. */
                if (self->wins[j] == self->wins[w] - d && !(lag > 0 && j + lag == w))
                    solve_window(&wc, j, true, false, false, 0);
            }
            if (lag == 0 || w < lag)
                continue;
            /* The log's last windows have fewer later ones to wait for. */
            size_t seen = (w < nw ? w : nw - 1) - (w - lag);
            solve_window(&wc, w - lag, true, false, true, (uint32_t)seen);
        }
    }
    /* Nothing solved is no fit at all, not a log of unaligned maps. */
    int rc = BASE_OK;
    if (nw > 0 && self->st.windows_unsolved == nw)
        rc = base_err(err, "no window could be solved (window %" PRId64 ": %s)",
                      self->unsolved.window, self->unsolved.why);
    self->st.tau_ns_median = ntau ? clk_median(wc.tau, ntau) : NAN;
    self->st.persist_ns_median = ntau ? clk_median(wc.persist, ntau) : NAN;
    free(wc.tau);
    free(wc.persist);
    free(first);
    clock_history_destroy(&hist);
    return rc;
}
