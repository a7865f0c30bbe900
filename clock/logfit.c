/*
 * Fitting a whole probe log: what `dpclock fit` and `dpclock bench` run.
 *
 * A log written by anyone may have any node ids, any probe graph, lines in
 * any order, clocks that differ by seconds.  Windows must cover the same
 * real interval on every edge for the network solve to make sense, so a
 * coarse pass first fits each edge over the whole log (minrtt, microsecond
 * class is plenty), chains those fits from the reference into a rough map
 * per node, and assigns every probe to the window of its send time on the
 * reference clock.  Then, per window: purity filter and estimator per edge,
 * then the solve.
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
    /* What the edge fits left for the solves (clock_logfit_resolve reuses it). */
    bool fitted;
    int64_t *wins; /* the windows that saw probes, ascending */
    int64_t *span; /* per window: its probes' first and last time on the reference clock */
    size_t nw;
    uint32_t *ids; /* node ids, ascending */
    size_t nn;
    int64_t origin;
};

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

typedef struct cpoint {
    double x, y;
} cpoint_t;

static int cmp_cpoint(const void *a, const void *b)
{
    const cpoint_t *p = a, *q = b;
    return (p->x > q->x) - (p->x < q->x);
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
        const clock_probe_t *p = &P[k[i].i];
        if (!p->rx_ok[0])
            continue;
        bool fwd = p->src == a;
        int64_t x = fwd ? p->tx[0] : p->rx[0];
        if (!have) {
            anchor = x;
            have = true;
        }
        double y = fwd ? clk_diff(p->rx[0], p->tx[0]) : clk_diff(p->tx[0], p->rx[0]);
        cpoint_t c = {clk_diff(x, anchor), y};
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
        clock_line_t ln = {0, 0, 0, NAN, {NAN, NAN}};
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

typedef struct cedge {
    uint64_t key;
    uint32_t a, b; /* node indices */
    bool ok;
    clock_edge_fit_t fit; /* a's clock → b's clock */
    size_t first, count;  /* range in the keyed array */
} cedge_t;

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

/* Compose the rough maps outward from `root` over coarse edges (breadth first). */
static void rough_spread(const cedge_t *E, size_t ne, rough_t *R, size_t nn, size_t root)
{
    size_t *queue = xmalloc(nn * sizeof *queue);
    size_t qh = 0, qt = 0;
    queue[qt++] = root;
    while (qh < qt) {
        size_t u = queue[qh++];
        for (size_t e = 0; e < ne; e++) {
            if (!E[e].ok || (E[e].a != u && E[e].b != u))
                continue;
            size_t v = E[e].a == u ? E[e].b : E[e].a;
            if (R[v].known)
                continue;
            /* x_v → x_u through the edge, then u's map; sampled at two points one second apart. */
            const clock_edge_fit_t *f = &E[e].fit;
            double rr = 1.0 + f->drift_ppb * 1e-9;
            int64_t xv0 = E[e].a == u ? clock_edge_map(f, f->anchor_ns) : f->anchor_ns;
            int64_t xs[2] = {xv0, clk_add(xv0, 1e9)}, ys[2];
            for (int j = 0; j < 2; j++) {
                int64_t xu =
                    E[e].a == u
                        ? clk_add(f->anchor_ns, (clk_diff(xs[j], f->anchor_ns) - f->offset_ns) / rr)
                        : clock_edge_map(f, xs[j]);
                ys[j] = rough_map(&R[u], xu);
            }
            R[v].known = true;
            R[v].anchor = xs[0];
            R[v].off = clk_diff(ys[0], xs[0]);
            R[v].rate = clk_diff(ys[1], ys[0]) / 1e9 - 1.0;
            queue[qt++] = v;
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
static int solve_window(const win_ctx_t *c, size_t w, bool use_hist, bool feed, bool write,
                        uint32_t lag, char *err)
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
    so.from_ns = clk_add(self->origin, (double)win * (double)W);
    so.to_ns = clk_add(so.from_ns, (double)W);
    int64_t lo = self->span[2 * w], hi = self->span[2 * w + 1];
    if ((w == 0 || self->wins[w - 1] != win - 1) && so.from_ns < lo && lo < so.to_ns)
        so.from_ns = lo;
    if ((w + 1 == self->nw || self->wins[w + 1] != win + 1) && so.to_ns > hi && hi > so.from_ns)
        so.to_ns = hi;
    so.at_ns = clk_mid(so.from_ns, so.to_ns);
    so.history = use_hist ? c->hist : NULL;
    double t0 = cpu_ns();
    if (use_hist && !feed && !write) {
        int rc =
            clock_history_note_bounds(c->hist, ej > ei ? &self->ef[ei] : NULL, ej - ei, &so, err);
        self->st.solve_ns_total += cpu_ns() - t0;
        return rc;
    }
    clock_node_fit_t *nodes = NULL;
    size_t nnodes = 0;
    clock_solve_stats_t sst;
    if (clock_solve(ej > ei ? &self->ef[ei] : NULL, ej - ei, &so, &nodes, &nnodes, &sst, err) !=
        BASE_OK)
        return BASE_ERR;
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
    return BASE_OK;
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
    for (size_t e = 0; e < ne; e++)
        E[e].ok = coarse_edge(P, K + E[e].first, E[e].count, ids[E[e].a], W, &E[e].fit);
    if (!self->o.ref_set)
        ref = ids[default_ref(E, ne, nn)];
    self->st.ref_moved = !self->o.ref_set && ref != ids[0];
    self->ref = ref;
    size_t iref = id_index(ids, nn, ref);

    /* Rough maps: the reference's component, then every other component on its own root. */
    rough_t *R = xcalloc(nn, sizeof *R);
    R[iref] = (rough_t){true, 0, 0, 0};
    rough_spread(E, ne, R, nn, iref);
    bool *in_ref = xcalloc(nn, sizeof *in_ref);
    for (size_t i = 0; i < nn; i++)
        in_ref[i] = R[i].known;
    for (size_t i = 0; i < nn; i++) {
        if (!R[i].known) {
            R[i] = (rough_t){true, 0, 0, 0};
            rough_spread(E, ne, R, nn, i);
        }
    }

    /* Windows on the (rough) reference clock, from the sender's transmit time. */
    int64_t tmin = INT64_MAX, tmax = INT64_MIN;
    bool any_ref = false;
    for (size_t i = 0; i < n; i++) {
        size_t s = id_index(ids, nn, P[K[i].i].src);
        int64_t t = rough_map(&R[s], P[K[i].i].tx[0]);
        K[i].t = t;
        if (in_ref[s]) {
            tmin = t < tmin ? t : tmin;
            tmax = t > tmax ? t : tmax;
            any_ref = true;
        }
    }
    if (!any_ref) {
        for (size_t i = 0; i < n; i++) {
            tmin = K[i].t < tmin ? K[i].t : tmin;
            tmax = K[i].t > tmax ? K[i].t : tmax;
        }
    }
    int64_t origin = clk_floor_div(tmin, W) * W;
    for (size_t i = 0; i < n; i++)
        K[i].win = clk_floor_div(K[i].t, W) - clk_floor_div(origin, W);
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
            size_t m = 0;
            while (i < end && K[i].win == win)
                buf[m++] = P[K[i++].i];
            uint32_t a = ids[E[e].a], b = ids[E[e].b];
            self->st.edge_windows++;
            double t0 = cpu_ns();
            clock_purity_stats_t ps;
            size_t nf, nr;
            clock_edge_points(buf, m, a, b, &self->o.purity, fw, &nf, rv, &nr, &ps);
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
            self->st.margin_steps += fit.margin_step_ns != 0;
            if (fit.step) {
                self->st.steps++;
            } else {
                /* The window's bounds, where the samples reach them (not at a log's ends). */
                int64_t w0 = clk_add(origin, (double)win * (double)W);
                int64_t lo = rough_inverse(&R[E[e].a], w0);
                int64_t hi = rough_inverse(&R[E[e].a], clk_add(w0, (double)W));
                double slack = 0.05 * (double)W;
                if (clk_diff(fit.from_ns, lo) < slack)
                    fit.from_ns = lo;
                if (clk_diff(hi, fit.to_ns) < slack)
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
    free(R);
    free(E);
    free(K);
    self->wins = wins;
    self->span = span;
    self->nw = nw;
    self->ids = ids;
    self->nn = nn;
    self->origin = origin;
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
    int rc = BASE_OK;
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
        for (size_t w = 0; w < nw && rc == BASE_OK; w++)
            rc = solve_window(&wc, w, false, true, false, 0, err);
        /* Each window's slow-host bounds, now that every margin has its level. */
        for (size_t w = 0; w < nw && rc == BASE_OK; w++)
            rc = solve_window(&wc, w, true, false, false, 0, err);
        self->st.solve_ns_total = 0; /* the cost of the solve that is written */
        for (size_t w = 0; w < nw && rc == BASE_OK; w++)
            rc = solve_window(&wc, w, true, false, true, 0, err);
    } else {
        for (size_t w = 0; w < nw + lag && rc == BASE_OK; w++) {
            if (w < nw)
                rc = solve_window(&wc, w, true, true, lag == 0, 0, err);
            /*
             * Earlier windows' slow-host bounds, with the levels there are
             * now: window numbers k − 1, k − 2, k − 4, … as the master counts
             * them (a window without probes has nothing to note).
             */
            for (size_t d = 1, j = w; w < nw && d <= CLOCK_RENOTE_MAX && rc == BASE_OK; d *= 2) {
                while (j > 0 && self->wins[j] > self->wins[w] - (int64_t)d)
                    j--;
                /* The window written below is noted by that solve. */
                if (self->wins[j] == self->wins[w] - (int64_t)d && !(lag > 0 && j + lag == w))
                    rc = solve_window(&wc, j, true, false, false, 0, err);
            }
            if (rc != BASE_OK || lag == 0 || w < lag)
                continue;
            /* The log's last windows have fewer later ones to wait for. */
            size_t seen = (w < nw ? w : nw - 1) - (w - lag);
            rc = solve_window(&wc, w - lag, true, false, true, (uint32_t)seen, err);
        }
    }
    self->st.tau_ns_median = ntau ? clk_median(wc.tau, ntau) : NAN;
    self->st.persist_ns_median = ntau ? clk_median(wc.persist, ntau) : NAN;
    free(wc.tau);
    free(wc.persist);
    free(first);
    clock_history_destroy(&hist);
    return rc;
}
