/*
 * Conversion between clock domains (SPEC §4.4, seed "R↔S").
 *
 * A local time of (node, domain) becomes global time in two stages:
 *   1. snapshot pairs, domain → parent → … → probe clock: piecewise-linear
 *      interpolation between the pairs (both coordinates strictly
 *      increasing, so each stage is monotonic and invertible); outside the
 *      known pairs, extrapolation with the rate over the last ~2 s of pairs
 *      (one 100 ms segment's rate carries the read jitter of its pairs);
 *   2. the node's window maps, probe → reference probe: each map is exact at
 *      its window centre and the two maps around a time are blended
 *      linearly between the centres, so the result is continuous across
 *      window boundaries and — while neighbouring maps disagree by less than
 *      half the distance between their centres — monotonic; two maps a
 *      clock step apart are not blended (step_map).
 * Everything stays int64 at the anchors; only differences are doubles.
 */
#include "clock/clock_int.h"

#include <stdlib.h>
#include <string.h>

typedef struct series {
    uint32_t domain, parent;
    int64_t *a, *b; /* a: the domain's reading, b: the parent's */
    size_t n, cap;
} series_t;

typedef struct cnode {
    uint32_t node;
    series_t *dom;
    size_t ndom;
    clock_node_fit_t *fits; /* aligned fits, sorted by window */
    size_t nfits, capfits;
    int64_t *end_max; /* [i]: the latest global time fits 0..i end at (end_images) */
} cnode_t;

struct clock_conv {
    clock_conv_limits_t lim;
    cnode_t *nodes; /* sorted by node id */
    size_t n, cap;
    bool have_ref;
    uint32_t ref;
    clock_conv_stats_t st;
};

#define EXTRAP_BASE_NS 2000000000LL

void clock_conv_limits_default(clock_conv_limits_t *lim)
{
    assert(lim);
    lim->max_nodes = 4096;
    lim->max_domains = 64;
    lim->max_pairs = 36000;
    lim->max_fits = 7200;
}

clock_conv_t *clock_conv_new(const clock_conv_limits_t *lim)
{
    clock_conv_t *self = xcalloc(1, sizeof *self);
    if (lim)
        self->lim = *lim;
    else
        clock_conv_limits_default(&self->lim);
    if (self->lim.max_pairs < 2)
        self->lim.max_pairs = 2;
    if (self->lim.max_fits < 1)
        self->lim.max_fits = 1;
    if (self->lim.max_domains < 1)
        self->lim.max_domains = 1;
    return self;
}

void clock_conv_destroy(clock_conv_t **self)
{
    if (self == NULL || *self == NULL)
        return;
    clock_conv_t *c = *self;
    for (size_t i = 0; i < c->n; i++) {
        for (size_t j = 0; j < c->nodes[i].ndom; j++) {
            free(c->nodes[i].dom[j].a);
            free(c->nodes[i].dom[j].b);
        }
        free(c->nodes[i].dom);
        free(c->nodes[i].fits);
        free(c->nodes[i].end_max);
    }
    free(c->nodes);
    free(c);
    *self = NULL;
}

void clock_conv_get_stats(const clock_conv_t *self, clock_conv_stats_t *st)
{
    assert(self && st);
    *st = self->st;
}

/*
 * Every conversion starts here, so the search is written out rather than
 * clk_lower_bound's callback (about 3 ns of 42 per conversion).
 */
static cnode_t *find_node(clock_conv_t *self, uint32_t node, bool create, char *err)
{
    size_t lo = 0, hi = self->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (self->nodes[mid].node < node)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo < self->n && self->nodes[lo].node == node)
        return &self->nodes[lo];
    if (!create) {
        base_err(err, "node %u is unknown to the converter", node);
        return NULL;
    }
    if (self->n >= self->lim.max_nodes) {
        base_err(err, "node %u: converter already holds %zu nodes", node, self->n);
        return NULL;
    }
    if (self->n == self->cap) {
        self->cap = self->cap ? 2 * self->cap : 8;
        self->nodes = xreallocarray(self->nodes, self->cap, sizeof *self->nodes);
    }
    memmove(&self->nodes[lo + 1], &self->nodes[lo], (self->n - lo) * sizeof *self->nodes);
    memset(&self->nodes[lo], 0, sizeof *self->nodes);
    self->nodes[lo].node = node;
    self->n++;
    return &self->nodes[lo];
}

static series_t *find_series(cnode_t *cn, uint32_t domain)
{
    for (size_t i = 0; i < cn->ndom; i++)
        if (cn->dom[i].domain == domain)
            return &cn->dom[i];
    return NULL;
}

static bool fit_before(const void *elem, const void *key)
{
    return ((const clock_node_fit_t *)elem)->window < *(const int64_t *)key;
}

/* First index with v[i] > t. */
static size_t upper_bound(const int64_t *v, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int clock_conv_add_pair(clock_conv_t *self, uint32_t node, uint32_t domain, uint32_t parent,
                        int64_t t_domain, int64_t t_parent, char *err)
{
    assert(self);
    if (domain == CLOCK_DOMAIN_PROBE || domain == parent) {
        self->st.pairs_rejected++;
        return base_err(err, "snapshot pair %u -> %u: the probe clock is the root of every chain",
                        domain, parent);
    }
    cnode_t *cn = find_node(self, node, true, err);
    if (cn == NULL) {
        self->st.pairs_rejected++;
        return BASE_ERR;
    }
    series_t *s = find_series(cn, domain);
    if (s && s->parent != parent) {
        self->st.pairs_rejected++;
        return base_err(err, "node %u: domain %u already maps to %u, not %u", node, domain,
                        s->parent, parent);
    }
    if (s == NULL) {
        if (cn->ndom >= self->lim.max_domains) {
            self->st.pairs_rejected++;
            return base_err(err, "node %u: more than %zu clock domains", node,
                            self->lim.max_domains);
        }
        /* The new link must not close a loop. */
        uint32_t p = parent;
        for (size_t steps = 0; p != CLOCK_DOMAIN_PROBE; steps++) {
            const series_t *up = find_series(cn, p);
            if (up == NULL)
                break;
            if (up->parent == domain || steps > self->lim.max_domains) {
                self->st.pairs_rejected++;
                return base_err(err, "node %u: domain %u -> %u would make a loop", node, domain,
                                parent);
            }
            p = up->parent;
        }
        cn->dom = xreallocarray(cn->dom, cn->ndom + 1, sizeof *cn->dom);
        s = &cn->dom[cn->ndom++];
        memset(s, 0, sizeof *s);
        s->domain = domain;
        s->parent = parent;
    }
    size_t pos = upper_bound(s->a, s->n, t_domain);
    /* A pair held already is no news (a sender re-sends its latest to a
     * receiver that may have it). */
    if (pos > 0 && s->a[pos - 1] == t_domain && s->b[pos - 1] == t_parent)
        return BASE_OK;
    /* Checked before any room is made: a pair refused must not cost pairs held. */
    if ((pos > 0 && (s->a[pos - 1] >= t_domain || s->b[pos - 1] >= t_parent)) ||
        (pos < s->n && s->b[pos] <= t_parent)) {
        self->st.pairs_rejected++;
        return base_err(err, "node %u domain %u: pair (%lld, %lld) is not increasing", node, domain,
                        (long long)t_domain, (long long)t_parent);
    }
    if (s->n >= self->lim.max_pairs) {
        size_t drop = self->lim.max_pairs / 8 ? self->lim.max_pairs / 8 : 1;
        memmove(s->a, s->a + drop, (s->n - drop) * sizeof *s->a);
        memmove(s->b, s->b + drop, (s->n - drop) * sizeof *s->b);
        s->n -= drop;
        self->st.pairs_dropped += drop;
        pos = pos > drop ? pos - drop : 0;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        if (s->cap > self->lim.max_pairs)
            s->cap = self->lim.max_pairs;
        s->a = xreallocarray(s->a, s->cap, sizeof *s->a);
        s->b = xreallocarray(s->b, s->cap, sizeof *s->b);
    }
    memmove(s->a + pos + 1, s->a + pos, (s->n - pos) * sizeof *s->a);
    memmove(s->b + pos + 1, s->b + pos, (s->n - pos) * sizeof *s->b);
    s->a[pos] = t_domain;
    s->b[pos] = t_parent;
    s->n++;
    self->st.pairs++;
    return BASE_OK;
}

/* Piecewise-linear map xs → ys (both strictly increasing). */
static int64_t pl_eval(const int64_t *xs, const int64_t *ys, size_t n, int64_t t, unsigned *flags)
{
    if (n == 1) {
        *flags |= CLOCK_CONV_EXTRAPOLATED;
        return clk_add(ys[0], clk_diff(t, xs[0]));
    }
    size_t i = upper_bound(xs, n, t);
    size_t j1, j2, k;
    if (i == 0 || (i == n && t != xs[n - 1])) {
        *flags |= CLOCK_CONV_EXTRAPOLATED;
        /*
         * The rate over about EXTRAP_BASE_NS of pairs at the end, picked
         * by a rule the same on both clocks (from the first pair: the
         * pairs within it on both; to the last: from the latest pair it
         * or more before on either), so that the inverse (xs and ys
         * swapped) takes the same pairs and extrapolates the same line
         * back (measured on one clock only, the two could take different
         * pairs: a pair 200 ns off the line at the cut put a round trip a
         * day out 8.6 ms off).
         */
        if (i == 0) {
            j1 = 0;
            size_t cx = upper_bound(xs, n, clk_add(xs[0], (double)EXTRAP_BASE_NS));
            size_t cy = upper_bound(ys, n, clk_add(ys[0], (double)EXTRAP_BASE_NS));
            j2 = cx < cy ? cx : cy;
            j2 = j2 >= n ? n - 1 : (j2 < 2 ? 1 : j2 - 1);
            k = 0;
        } else {
            j2 = n - 1;
            size_t cx = upper_bound(xs, n, clk_add(xs[n - 1], -(double)EXTRAP_BASE_NS));
            size_t cy = upper_bound(ys, n, clk_add(ys[n - 1], -(double)EXTRAP_BASE_NS));
            size_t lo = cx > cy ? cx : cy;
            j1 = lo > 0 ? lo - 1 : 0;
            if (j1 >= j2)
                j1 = j2 - 1;
            k = n - 1;
        }
    } else if (i == n) {
        return ys[n - 1];
    } else {
        j1 = i - 1;
        j2 = i;
        k = i - 1;
    }
    double rate = clk_diff(ys[j2], ys[j1]) / clk_diff(xs[j2], xs[j1]);
    return clk_add(ys[k], clk_diff(t, xs[k]) * rate);
}

static void end_images(cnode_t *cn, size_t from);
static int add_fit(clock_conv_t *self, cnode_t *cn, const clock_node_fit_t *fit, size_t *changed,
                   char *err);

int clock_conv_add_fit(clock_conv_t *self, const clock_node_fit_t *fit, char *err)
{
    assert(self && fit);
    /* Refused before anything changes: a bad map naming a new reference must not clear the old. */
    if (fit->aligned &&
        (!(fit->to_ns > fit->from_ns) || !isfinite(fit->offset_ns) || !isfinite(fit->drift_ppb))) {
        self->st.fits_rejected++;
        return base_err(err, "node %u window %lld: empty range or non-finite map", fit->node,
                        (long long)fit->window);
    }
    cnode_t *cn = find_node(self, fit->node, true, err);
    if (cn == NULL)
        return BASE_ERR;
    size_t changed = SIZE_MAX;
    int rc = add_fit(self, cn, fit, &changed, err);
    end_images(cn, changed);
    return rc;
}

/* *changed: the first of cn's fits that moved or changed (SIZE_MAX: none). */
static int add_fit(clock_conv_t *self, cnode_t *cn, const clock_node_fit_t *fit, size_t *changed,
                   char *err)
{
    if (!self->have_ref) {
        self->have_ref = true;
        self->ref = fit->ref;
    } else if (fit->ref != self->ref) {
        for (size_t i = 0; i < self->n; i++)
            self->nodes[i].nfits = 0;
        self->ref = fit->ref;
        self->st.ref_changes++;
    }
    size_t lo = clk_lower_bound(cn->fits, cn->nfits, sizeof *cn->fits, &fit->window, fit_before);
    bool same = lo < cn->nfits && cn->fits[lo].window == fit->window;
    if (!fit->aligned) {
        self->st.fits_unaligned++;
        if (same) { /* a newer solve of that window says unaligned */
            memmove(&cn->fits[lo], &cn->fits[lo + 1], (cn->nfits - lo - 1) * sizeof *cn->fits);
            cn->nfits--;
            *changed = lo;
        }
        return BASE_OK;
    }
    int64_t c = clk_mid(fit->from_ns, fit->to_ns);
    size_t before = lo, after = same ? lo + 1 : lo;
    if ((before > 0 && clk_mid(cn->fits[before - 1].from_ns, cn->fits[before - 1].to_ns) >= c) ||
        (after < cn->nfits && clk_mid(cn->fits[after].from_ns, cn->fits[after].to_ns) <= c)) {
        self->st.fits_rejected++;
        return base_err(err, "node %u window %lld: its range is out of order with its neighbours",
                        fit->node, (long long)fit->window);
    }
    if (same) {
        cn->fits[lo] = *fit;
        self->st.fits++;
        *changed = lo;
        return BASE_OK;
    }
    if (cn->nfits >= self->lim.max_fits) {
        size_t drop = self->lim.max_fits / 8 ? self->lim.max_fits / 8 : 1;
        if (lo < drop) { /* older than everything that stays */
            self->st.fits_dropped++;
            return BASE_OK;
        }
        memmove(cn->fits, cn->fits + drop, (cn->nfits - drop) * sizeof *cn->fits);
        cn->nfits -= drop;
        lo -= drop;
        self->st.fits_dropped += drop;
        *changed = 0;
    }
    if (cn->nfits == cn->capfits) {
        cn->capfits = cn->capfits ? 2 * cn->capfits : 16;
        if (cn->capfits > self->lim.max_fits)
            cn->capfits = self->lim.max_fits;
        cn->fits = xreallocarray(cn->fits, cn->capfits, sizeof *cn->fits);
    }
    memmove(&cn->fits[lo + 1], &cn->fits[lo], (cn->nfits - lo) * sizeof *cn->fits);
    cn->fits[lo] = *fit;
    cn->nfits++;
    self->st.fits++;
    *changed = *changed < lo ? *changed : lo;
    return BASE_OK;
}

/*
 * A node's corrections are taken less one whole number of ns, its first
 * map's offset where that is 2^40 ns or more: a clock decades off has
 * offsets near 1.8e18, where a double's steps are 256 ns and a blend of
 * two would round to them (0 below, where nothing is lost).
 */
static int64_t corr_base(const clock_node_fit_t *f)
{
    double o = f->offset_ns;
    return fabs(o) >= 0x1p40 && fabs(o) < 0x1p63 ? (int64_t)o : 0;
}

/* The window map's correction (global − local) for probe time x with fit f, less base. */
static double fit_corr(const clock_node_fit_t *f, int64_t x, int64_t base)
{
    return (f->offset_ns - (double)base) + f->drift_ppb * 1e-9 * clk_diff(x, f->anchor_ns);
}

/* x + base + k: the whole part first. */
static int64_t add_corr(int64_t x, int64_t base, double k)
{
    return clk_add(clk_add(x, (double)base), k);
}

/* end_max of fits from, from + 1, …: a fit added at the end costs one map. */
static void end_images(cnode_t *cn, size_t from)
{
    if (cn->nfits == 0 || from >= cn->nfits)
        return;
    cn->end_max = xreallocarray(cn->end_max, cn->capfits, sizeof *cn->end_max);
    int64_t base = corr_base(&cn->fits[0]);
    for (size_t i = from; i < cn->nfits; i++) {
        const clock_node_fit_t *f = &cn->fits[i];
        int64_t g = add_corr(f->to_ns, base, fit_corr(f, f->to_ns, base));
        cn->end_max[i] = i > 0 && cn->end_max[i - 1] > g ? cn->end_max[i - 1] : g;
    }
}

static int64_t fit_center(const clock_node_fit_t *f)
{
    return clk_mid(f->from_ns, f->to_ns);
}

/*
 * Two neighbouring maps apart by a clock step where their windows meet (the
 * node's clock jumped between them: in an unaligned window between, or at
 * their boundary; maps whose drifts differ but that meet are blended).
 * Blending them would put every time between their centres up to half
 * the step off at the uncertainty of either.  Each map holds over its own
 * window's readings instead; readings between the two windows' (the
 * unaligned window's, or those a clock stepped forward skipped) lie
 * before or after the step, which nothing here tells: they are joined
 * linearly from the first window's end to the second's start, monotonic,
 * and uncertain by the step.  A clock stepped back reads the windows'
 * overlap twice; it goes to the earlier map.
 */
static int64_t step_map(const clock_node_fit_t *f0, const clock_node_fit_t *f1, int64_t x,
                        int64_t base, double k0, double k1, double *unc, unsigned *flags)
{
    if (x <= f0->to_ns) {
        *unc = f0->uncertainty_ns;
        return add_corr(x, base, k0);
    }
    int64_t g0 = add_corr(f0->to_ns, base, fit_corr(f0, f0->to_ns, base));
    if (x >= f1->from_ns) {
        *unc = f1->uncertainty_ns;
        int64_t g = add_corr(x, base, k1);
        /*
         * The maps step down where the readings run on: the reference's
         * clock stepped back, and read these times before the step too.
         */
        if (g < g0)
            *flags |= CLOCK_CONV_STEP;
        return g;
    }
    *flags |= CLOCK_CONV_STEP;
    *unc = fmax(f0->uncertainty_ns, f1->uncertainty_ns) + fabs(k1 - k0);
    int64_t g1 = add_corr(f1->from_ns, base, fit_corr(f1, f1->from_ns, base));
    if (g1 <= g0)
        return g0;
    double w = clk_diff(x, f0->to_ns) / clk_diff(f1->from_ns, f0->to_ns);
    return clk_add(g0, w * clk_diff(g1, g0));
}

/*
 * Whether a step parts two neighbouring maps, asked once for the pair where
 * their windows meet: apart there by more than 10 µs and ten times their
 * uncertainties, plus half their change of rate over the readings between
 * them; or so far apart (*dm, over half the distance between their centres)
 * that their centres' images would be joined, and the later is not after
 * the earlier: time went back, across a step that maps too unsure
 * (uncertainties of 100 ms and more) hid from the first test.
 */
static bool maps_parted(const clock_node_fit_t *f0, const clock_node_fit_t *f1, int64_t base,
                        double *dm)
{
    int64_t xm = clk_mid(f0->to_ns, f1->from_ns);
    *dm = fabs(fit_corr(f1, xm, base) - fit_corr(f0, xm, base));
    double apart = 0.5e-9 * fabs(f1->drift_ppb - f0->drift_ppb) *
                   fabs(clk_diff(f1->from_ns, f0->to_ns)); /* rates apart over unaligned windows */
    if (*dm >
        fmax(CLOCK_STEP_BETWEEN_MIN_NS, 10.0 * (f0->uncertainty_ns + f1->uncertainty_ns)) + apart)
        return true;
    int64_t c0 = fit_center(f0), c1 = fit_center(f1);
    if (!(*dm > 0.5 * clk_diff(c1, c0)))
        return false;
    int64_t g0 = add_corr(c0, base, fit_corr(f0, c0, base));
    int64_t g1 = add_corr(c1, base, fit_corr(f1, c1, base));
    return g1 <= g0;
}

/* Probe time → global with the node's window maps; *at: how many centres are at or before x. */
static int64_t map_between(const cnode_t *cn, int64_t x, double *unc, unsigned *flags, size_t *at)
{
    size_t m = cn->nfits;
    const clock_node_fit_t *F = cn->fits;
    int64_t base = corr_base(&F[0]);
    size_t lo = 0, hi = m;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (fit_center(&F[mid]) <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    *at = lo;
    if (lo == 0 || lo == m) {
        const clock_node_fit_t *f = lo == 0 ? &F[0] : &F[m - 1];
        if (x < f->from_ns || x > f->to_ns)
            *flags |= CLOCK_CONV_EXTRAPOLATED;
        *unc = f->uncertainty_ns;
        return add_corr(x, base, fit_corr(f, x, base));
    }
    const clock_node_fit_t *f0 = &F[lo - 1], *f1 = &F[lo];
    if (f1->window > f0->window && (uint64_t)f1->window - (uint64_t)f0->window > 1)
        *flags |= CLOCK_CONV_GAP;
    int64_t c0 = fit_center(f0), c1 = fit_center(f1);
    double span = clk_diff(c1, c0);
    double w = clk_diff(x, c0) / span;
    double k0 = fit_corr(f0, x, base), k1 = fit_corr(f1, x, base);
    double u0 = f0->uncertainty_ns, u1 = f1->uncertainty_ns;
    /*
     * Asked once for the pair, not at each time: whether the maps were too
     * far apart to blend flipped inside the span for maps of different
     * rates, and the result jumped there.
     */
    double dm;
    if (maps_parted(f0, f1, base, &dm))
        return step_map(f0, f1, x, base, k0, k1, unc, flags);
    *unc = (1 - w) * u0 + w * u1;
    if (dm > 0.5 * span) {
        /* Maps too far apart to blend monotonically: join the centres' images. */
        int64_t g0 = add_corr(c0, base, fit_corr(f0, c0, base));
        int64_t g1 = add_corr(c1, base, fit_corr(f1, c1, base));
        return clk_add(g0, w * clk_diff(g1, g0));
    }
    return add_corr(x, base, (1 - w) * k0 + w * k1);
}

/*
 * Whether a step parts two neighbouring maps between fit `last` and the
 * window whose end the latest end image before it is: maps parted by a step
 * stand for what they say, as step_map takes them, and a time before that
 * end is one the reference read twice however close to it.
 */
static bool stepped_back(const cnode_t *cn, size_t last)
{
    size_t j = last - 1;
    while (j > 0 && cn->end_max[j - 1] == cn->end_max[last - 1])
        j--;
    int64_t base = corr_base(&cn->fits[0]);
    double dm;
    for (size_t i = j; i < last; i++)
        if (maps_parted(&cn->fits[i], &cn->fits[i + 1], base, &dm))
            return true;
    return false;
}

static int64_t window_map(const cnode_t *cn, int64_t x, double *unc, unsigned *flags)
{
    size_t at;
    int64_t g = map_between(cn, x, unc, flags, &at);
    /*
     * A time before one that a window two or more back ends at, by more
     * than the maps could disagree, or at all where a step parts the maps
     * in between: the reference's clock stepped back and read it before the
     * step too (the window just before is step_map's).  Past the earlier
     * window's centre a time is half a window on, so no disagreement comes
     * near.
     */
    if (at >= 2 && g < cn->end_max[at - 2]) {
        const clock_node_fit_t *f0 = &cn->fits[at - 2], *f1 = &cn->fits[at - 1];
        double tol = 10.0 * (f0->uncertainty_ns + f1->uncertainty_ns);
        if (g < clk_add(cn->end_max[at - 2], -tol) || stepped_back(cn, at - 1))
            *flags |= CLOCK_CONV_STEP;
    }
    return g;
}

static int probe_to_global(clock_conv_t *self, uint32_t node, int64_t x, clock_conv_result_t *out,
                           char *err)
{
    cnode_t *cn = find_node(self, node, false, NULL);
    if (cn == NULL || cn->nfits == 0) {
        if (self->have_ref && node == self->ref) {
            out->t = x;
            out->uncertainty_ns = 0;
            return BASE_OK;
        }
        return base_err(err, "node %u has no aligned window fit", node);
    }
    out->t = window_map(cn, x, &out->uncertainty_ns, &out->flags);
    return BASE_OK;
}

int clock_conv_to_probe(clock_conv_t *self, uint32_t node, uint32_t domain, int64_t local,
                        clock_conv_result_t *out, char *err)
{
    assert(self && out);
    out->flags = 0;
    out->uncertainty_ns = NAN;
    out->t = local;
    if (domain == CLOCK_DOMAIN_PROBE)
        return BASE_OK;
    cnode_t *cn = find_node(self, node, false, err);
    if (cn == NULL)
        return BASE_ERR;
    uint32_t d = domain;
    for (size_t steps = 0; d != CLOCK_DOMAIN_PROBE; steps++) {
        const series_t *s = find_series(cn, d);
        if (s == NULL || s->n == 0 || steps > self->lim.max_domains)
            return base_err(err, "node %u has no snapshot pairs from domain %u", node, d);
        out->t = pl_eval(s->a, s->b, s->n, out->t, &out->flags);
        d = s->parent;
    }
    return BASE_OK;
}

int clock_conv_to_global(clock_conv_t *self, uint32_t node, uint32_t domain, int64_t local,
                         clock_conv_result_t *out, char *err)
{
    if (clock_conv_to_probe(self, node, domain, local, out, err) != BASE_OK)
        return BASE_ERR;
    unsigned flags = out->flags;
    int rc = probe_to_global(self, node, out->t, out, err);
    out->flags |= flags;
    return rc;
}

/* out->t, a probe time of the node, onto `domain` through the inverse of its pairs. */
static int from_probe(clock_conv_t *self, cnode_t *cn, uint32_t node, uint32_t domain,
                      clock_conv_result_t *out, char *err)
{
    (void)self;
    if (domain == CLOCK_DOMAIN_PROBE)
        return BASE_OK;
    if (cn == NULL)
        return base_err(err, "node %u has no snapshot pairs from domain %u", node, domain);
    /* The chain domain → … → probe (no longer than the node's domains),
     * then undone from the probe end. */
    const series_t **chain = xmalloc((cn->ndom + 1) * sizeof *chain);
    size_t len = 0;
    for (uint32_t d = domain; d != CLOCK_DOMAIN_PROBE;) {
        const series_t *s = find_series(cn, d);
        if (s == NULL || s->n == 0 || len > cn->ndom) {
            free(chain);
            return base_err(err, "node %u has no snapshot pairs from domain %u", node, d);
        }
        chain[len++] = s;
        d = s->parent;
    }
    int64_t x = out->t;
    while (len-- > 0)
        x = pl_eval(chain[len]->b, chain[len]->a, chain[len]->n, x, &out->flags);
    free(chain);
    out->t = x;
    return BASE_OK;
}

int clock_conv_from_global(clock_conv_t *self, uint32_t node, uint32_t domain, int64_t global,
                           clock_conv_result_t *out, char *err)
{
    assert(self && out);
    out->flags = 0;
    out->uncertainty_ns = NAN;
    cnode_t *cn = find_node(self, node, false, NULL);
    int64_t x = global;
    if (cn != NULL && cn->nfits > 0) {
        /* Solve G(x) = global: G has slope 1 + O(drift), so fixed-point steps converge fast. */
        unsigned fl = 0;
        double unc = 0;
        const clock_node_fit_t *last = &cn->fits[cn->nfits - 1];
        int64_t base = corr_base(last);
        x = add_corr(global, -base, -fit_corr(last, global, base));
        int64_t g = 0;
        for (int it = 0; it < 30; it++) {
            fl = 0;
            g = window_map(cn, x, &unc, &fl);
            double d = clk_diff(global, g);
            if (d == 0)
                break;
            x = clk_add(x, d);
        }
        /*
         * Where a clock step joins two maps (step_map) G is flat or jumps,
         * and the steps above can stall: bisect for the smallest x with
         * G(x) ≥ global between bounds found by doubling.
         */
        if (fabs(clk_diff(g, global)) > 2) {
            /* Bounds 1 µs away, doubling until they bracket or clk_add saturates. */
            int64_t lo = x, hi = x;
            double reach = 1000;
            for (int it = 0; it < 70 && lo > INT64_MIN && window_map(cn, lo, &unc, &fl) >= global;
                 it++, reach *= 2)
                lo = clk_add(x, -reach);
            reach = 1000;
            for (int it = 0; it < 70 && hi < INT64_MAX && window_map(cn, hi, &unc, &fl) < global;
                 it++, reach *= 2)
                hi = clk_add(x, reach);
            for (uint64_t span = (uint64_t)hi - (uint64_t)lo; span > 1;
                 span = (uint64_t)hi - (uint64_t)lo) {
                int64_t mid = (int64_t)((uint64_t)lo + span / 2);
                if (window_map(cn, mid, &unc, &fl) >= global)
                    hi = mid;
                else
                    lo = mid;
            }
            x = hi;
        }
        for (int it = 0; it < 4; it++) { /* smallest x with G(x) ≥ global, within a few ns */
            fl = 0;
            if (window_map(cn, x, &unc, &fl) >= global || x == INT64_MAX)
                break;
            x++;
        }
        fl = 0;
        window_map(cn, x, &unc, &fl);
        out->flags |= fl;
        out->uncertainty_ns = unc;
    } else if (!(self->have_ref && node == self->ref)) {
        return base_err(err, "node %u has no aligned window fit", node);
    } else {
        out->uncertainty_ns = 0;
    }
    out->t = x;
    return from_probe(self, cn, node, domain, out, err);
}

int clock_conv_from_probe(clock_conv_t *self, uint32_t node, uint32_t domain, int64_t probe,
                          clock_conv_result_t *out, char *err)
{
    assert(self && out);
    out->flags = 0;
    out->uncertainty_ns = NAN;
    out->t = probe;
    return from_probe(self, find_node(self, node, false, NULL), node, domain, out, err);
}
