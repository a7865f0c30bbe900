/*
 * What other windows taught the solver (clock_history_t), and pooling a
 * node's window map with its neighbouring windows.
 *
 * Per node the history keeps (1) the typical misfit of the offset curve
 * around its line and the typical extra per-edge variance (persistent
 * wander and asymmetry, see solve.c), and (2) a track: the node's own map of
 * every recent window (level at its centre, slope, their window-to-window
 * errors, its range).  Per edge it keeps the loop residual of every recent
 * window: what of the extra variance persists (asymmetry) and what changes
 * (noise the edges' σ missed).
 *
 * Pooling.  Within one window the offset at the window's centre is well
 * determined, its slope much less so: the map error at the window's edges
 * is mostly slope error when timestamps are noisy.  Neighbouring windows
 * measure the same clock pair: their offsets 2, 4, ... s away pin the slope
 * down over a longer baseline, as an NTP or PTP servo's frequency loop
 * does.  How far back (and, offline, ahead) that is valid is bounded by the
 * wander of the frequency, modelled as a random walk (what crystal
 * oscillators do over seconds to minutes).
 *
 * The model, exact for a random-walk frequency: state s(t) = (ψ, f), the
 * offset in ns and its rate in ppb, time in s from the current anchor;
 * between two instants d apart s(t+d) = F(d)·s(t) + w with F = [1 d; 0 1]
 * and w ~ N(0, Q(d)), Q(d) = q·[|d|³/3, d|d|/2; d|d|/2, |d|].  A window
 * [a, b] (w = b − a) is a line fitted to ψ over it: its slope is the chord
 * (ψ(b) − ψ(a))/w and its level at the centre (ψ(a) + ψ(b))/2 −
 * w·(f(b) − f(a))/12, up to a random walk's residuals (variance q·w/210 and
 * q·w³/720, simulated), both linear in the boundary states (s(a), s(b)).  A
 * forward Kalman filter runs over the earlier windows to the current
 * window's start, a backward one over the later windows (when the history
 * has them: offline fits) to its end; the current window's line is then the
 * posterior of (s(a), s(b)) given both and the window's own line (the
 * two-filter smoother), read as the line.  q and two scales of the windows'
 * own σ (which come from a few subsets each and miss what all subsets
 * share) are the maximum-likelihood values of the filter's innovations over
 * the neighbouring windows, never below floors.  A window whose innovation
 * is beyond 6σ (a clock step, a bad fit, a change the model cannot follow)
 * does not restart a filter: it hands over only when more such windows
 * agree than it rests on, or three (run_side).  A window in which the node
 * was unaligned (its edges saw a step, it was cut off, or it had no edge
 * fit) is a break that no filter crosses.  The current window is compared
 * with what its neighbours predict for it: moderately off, its variances
 * are inflated (Huber); far off, it is dropped when windows on both sides
 * agree on what it should be, and stands alone (no pooling) otherwise.
 */
#include "clock/clock_int.h"

#include <stdlib.h>
#include <string.h>

/* χ² (2 degrees of freedom) beyond which a window does not belong: ≈ 6σ, p ≈ 1.5e-8. */
#define POOL_GATE 36.0
/* χ² beyond which a window is inflated to stand at it (Huber): ≈ 3σ. */
#define POOL_HUBER 9.0
/* Windows the noise model is estimated from (half on either side when there are). */
#define POOL_ML_WINDOWS 32
/* Fewest windows for estimating the scales of the windows' own σ. */
#define POOL_SCALE_MIN 8
/* Windows that must agree before they outvote a current window that disagrees with them. */
#define POOL_OUTVOTE 3
/* A neighbour's slow-host bound may exceed this window's by this many of their offset σ. */
#define POOL_DELAY_K 3.0
/* Grid of the wander estimate: floor·√2^i ppb/√s. */
#define Q_STEPS 24
/* The likeliest wander, and the largest the windows make less likely by at most this. */
#define Q_UPPER_LL 0.5

typedef struct track_entry {
    int64_t window;
    uint32_t ref;
    int64_t anchor; /* node clock */
    double off;     /* ref − node at anchor, ns */
    double drift;   /* ppb */
    double sd_off, sd_drift;
    double half_s; /* half the window's range, s */
    double delay;  /* the slow-host bound on its map, ns (0: none known) */
} track_entry_t;

typedef struct track_node {
    uint32_t node;
    double mean, meansq; /* of misfit_ms_ns2 */
    double weight, weight2;
    uint32_t count;
    track_entry_t *tr; /* sorted by anchor */
    size_t ntr, captr;
    int64_t *brk; /* windows in which the node could not be aligned, sorted */
    size_t nbrk, capbrk;
    int64_t *cut; /* windows its clock stepped just before (clock_history_cut), sorted */
    size_t ncut, capcut;
} track_node_t;

/*
 * The typical τ² is the half-life-weighted mean of the windows' τ² over the
 * last TAU2_RING windows, leaving out those beyond TAU2_OUTLIER times their
 * median: one window's transient (a node joining mid-window, a partial
 * first window) can throw τ up tenfold, and as a floor it would otherwise
 * widen every following window for a half-life.  Ten times the median keeps
 * the tail of an honestly noisy τ² (one loop: χ² with one degree of freedom
 * is past ten times its median 3 % of the time).  A window's own τ² is 0
 * where its loops call for none, in about half the windows of one loop:
 * where most are 0 the cut is ten times the median of the others, or it
 * would leave out every window that saw any.
 */
#define TAU2_RING    256
#define TAU2_OUTLIER 10.0

/*
 * Edge tracks (loop residuals and margins): at most EDGE_MAX edges (later
 * ones ignored and counted), EDGE_KEEP windows each (the farthest from the
 * newest dropped),
 * and an edge counts only with EDGE_MIN windows within the span asked for.
 * An edge in no loop (a bridge) has a residual of 0 whatever its
 * asymmetry: it is not recorded, or a link that later closes a loop
 * through it would bring a track that says nothing persists.
 */
#define EDGE_MAX        65536
#define EDGE_KEEP       64
#define EDGE_MIN        6
#define EDGE_LOOP_SHARE 1e-6

typedef struct resid_entry {
    int64_t window;
    double r; /* ns, oriented lo → hi; the mean when the window had the edge twice */
    uint32_t n;
} resid_entry_t;

/*
 * Margin tracks: every edge fit with a margin and no step, bridges too,
 * EDGE_KEEP windows each.
 * A margin is known once MARGIN_MIN other windows give its usual level.
 */
#define MARGIN_MIN CLOCK_MARGIN_MIN

typedef struct edge_track {
    uint32_t lo, hi;
    resid_entry_t *tr; /* loop residuals, sorted by window */
    size_t ntr, captr;
    resid_entry_t *mg; /* margins (r: ns), sorted by window */
    size_t nmg, capmg;
} edge_track_t;

struct clock_history {
    double decay; /* weight kept per window; 1: plain mean */
    size_t max_nodes;
    size_t track_max;
    track_node_t *nodes; /* sorted by node id */
    size_t n, capn;
    uint64_t ignored;
    /* Each window's extra per-edge variance (newest at tau2_pos − 1), and
     * their typical value (tau2_typical). */
    double tau2_ring[TAU2_RING];
    size_t tau2_n, tau2_pos;
    double tau2_typical;
    uint32_t tau2_count;
    edge_track_t *edges; /* sorted by (lo, hi) */
    size_t nedges, capedges;
};

clock_history_t *clock_history_new(double halflife_windows, size_t max_nodes)
{
    clock_history_t *self = xcalloc(1, sizeof *self);
    self->decay = halflife_windows > 0 ? exp2(-1.0 / halflife_windows) : 1.0;
    self->max_nodes = max_nodes ? max_nodes : 4096;
    self->track_max = CLOCK_HISTORY_TRACK;
    return self;
}

void clock_history_destroy(clock_history_t **self)
{
    if (self == NULL || *self == NULL)
        return;
    for (size_t i = 0; i < (*self)->n; i++) {
        free((*self)->nodes[i].tr);
        free((*self)->nodes[i].brk);
        free((*self)->nodes[i].cut);
    }
    free((*self)->nodes);
    for (size_t i = 0; i < (*self)->nedges; i++) {
        free((*self)->edges[i].tr);
        free((*self)->edges[i].mg);
    }
    free((*self)->edges);
    free(*self);
    *self = NULL;
}

static void track_trim(track_node_t *t, size_t max)
{
    if (t->ntr > max) {
        memmove(t->tr, t->tr + (t->ntr - max), max * sizeof *t->tr);
        t->ntr = max;
    }
    if (t->nbrk > max) {
        memmove(t->brk, t->brk + (t->nbrk - max), max * sizeof *t->brk);
        t->nbrk = max;
    }
    if (t->ncut > max) {
        memmove(t->cut, t->cut + (t->ncut - max), max * sizeof *t->cut);
        t->ncut = max;
    }
}

void clock_history_set_track(clock_history_t *self, size_t windows)
{
    assert(self);
    self->track_max = windows < 4 ? 4 : windows;
    for (size_t i = 0; i < self->n; i++)
        track_trim(&self->nodes[i], self->track_max);
}

static bool node_before(const void *elem, const void *key)
{
    return ((const track_node_t *)elem)->node < *(const uint32_t *)key;
}

static track_node_t *track_find(const clock_history_t *self, uint32_t node, size_t *pos)
{
    size_t lo = clk_lower_bound(self->nodes, self->n, sizeof *self->nodes, &node, node_before);
    if (pos)
        *pos = lo;
    return lo < self->n && self->nodes[lo].node == node ? &self->nodes[lo] : NULL;
}

static bool anchor_before(const void *elem, const void *key)
{
    return ((const track_entry_t *)elem)->anchor < *(const int64_t *)key;
}

/* First entry whose anchor is at or after x. */
static size_t track_lower(const track_node_t *t, int64_t x)
{
    return clk_lower_bound(t->tr, t->ntr, sizeof *t->tr, &x, anchor_before);
}

/* The entry of window w, whose map is anchored at x (SIZE_MAX: none): it sits next to x. */
static size_t track_entry_of(const track_node_t *t, int64_t w, int64_t x)
{
    size_t pos = track_lower(t, x);
    size_t lo = pos > 2 ? pos - 2 : 0, hi = pos + 2 < t->ntr ? pos + 2 : t->ntr;
    for (size_t i = lo; i < hi; i++)
        if (t->tr[i].window == w)
            return i;
    return SIZE_MAX;
}

/* A warming-up host's part is left out: that window is in doubt only for want of history. */
static double entry_delay(const clock_node_fit_t *f)
{
    double d = isfinite(f->delay_ns) ? f->delay_ns : 0;
    return isfinite(f->warm_ns) ? fmax(0, d - f->warm_ns) : d;
}

/* One window's own map into the node's track (replacing the same window's entry). */
static void track_add(clock_history_t *self, track_node_t *t, const clock_node_fit_t *f)
{
    if (!(isfinite(f->own_offset_ns) && isfinite(f->own_drift_ppb) && f->own_offset_sd_ns > 0 &&
          f->own_drift_sd_ppb > 0 && isfinite(f->own_offset_sd_ns) &&
          isfinite(f->own_drift_sd_ppb)))
        return;
    double half = 0.5e-9 * clk_diff(f->to_ns, f->from_ns);
    track_entry_t e = {f->window,           f->ref,
                       f->anchor_ns,        f->own_offset_ns,
                       f->own_drift_ppb,    f->own_offset_sd_ns,
                       f->own_drift_sd_ppb, half > 0 && isfinite(half) ? half : 1.0,
                       entry_delay(f)};
    if (t->ntr > 0 && t->tr[t->ntr - 1].ref != f->ref)
        t->ntr = 0; /* another reference: the old maps say nothing about the new one */
    /* The same window added again: replace it. */
    size_t old = track_entry_of(t, f->window, e.anchor);
    if (old != SIZE_MAX)
        clk_array_close(t->tr, t->ntr--, sizeof *t->tr, old);
    size_t pos = track_lower(t, e.anchor);
    t->tr = clk_array_reserve(t->tr, t->ntr, &t->captr, sizeof *t->tr);
    clk_array_open(t->tr, t->ntr, sizeof *t->tr, pos);
    t->tr[pos] = e;
    t->ntr++;
    track_trim(t, self->track_max);
}

static void tau2_add(clock_history_t *self, double v)
{
    self->tau2_ring[self->tau2_pos] = v;
    self->tau2_pos = (self->tau2_pos + 1) % TAU2_RING;
    if (self->tau2_n < TAU2_RING)
        self->tau2_n++;
    self->tau2_count++;
    double tmp[TAU2_RING];
    size_t npos = 0;
    for (size_t k = 0; k < self->tau2_n; k++)
        if (self->tau2_ring[k] > 0)
            tmp[npos++] = self->tau2_ring[k];
    double med = npos > 0 ? clk_median(tmp, npos) : 0;
    if (2 * npos > self->tau2_n) {
        memcpy(tmp, self->tau2_ring, self->tau2_n * sizeof *tmp);
        med = clk_median(tmp, self->tau2_n);
    }
    double cut = TAU2_OUTLIER * med;
    double sum = 0, wsum = 0, w = 1;
    for (size_t k = 0; k < self->tau2_n; k++, w *= self->decay) {
        double x = self->tau2_ring[(self->tau2_pos + TAU2_RING - 1 - k) % TAU2_RING];
        if (x <= cut) {
            sum += w * x;
            wsum += w;
        }
    }
    self->tau2_typical = wsum > 0 ? sum / wsum : 0;
}

static bool edge_before(const void *elem, const void *key)
{
    const edge_track_t *e = elem;
    const uint32_t *k = key;
    return e->lo < k[0] || (e->lo == k[0] && e->hi < k[1]);
}

static edge_track_t *edge_find(const clock_history_t *self, uint32_t lo, uint32_t hi, size_t *pos)
{
    uint32_t key[2] = {lo, hi};
    size_t a = clk_lower_bound(self->edges, self->nedges, sizeof *self->edges, key, edge_before);
    if (pos)
        *pos = a;
    return a < self->nedges && self->edges[a].lo == lo && self->edges[a].hi == hi ? &self->edges[a]
                                                                                  : NULL;
}

static bool window_before(const void *elem, const void *key)
{
    return ((const resid_entry_t *)elem)->window < *(const int64_t *)key;
}

/* First entry of window w or later. */
static size_t resid_lower(const resid_entry_t *tr, size_t n, int64_t w)
{
    return clk_lower_bound(tr, n, sizeof *tr, &w, window_before);
}

/*
 * Window w's value into a track of entries sorted by window: averaged with
 * the same window's, or inserted; beyond EDGE_KEEP the entry farthest from
 * the one added goes.
 */
static resid_entry_t *entry_add(resid_entry_t *tr, size_t *n, size_t *cap, int64_t w, double v)
{
    size_t at = resid_lower(tr, *n, w);
    if (at < *n && tr[at].window == w) {
        resid_entry_t *x = &tr[at];
        x->r += (v - x->r) / (double)++x->n;
        return tr;
    }
    tr = clk_array_reserve(tr, *n, cap, sizeof *tr);
    clk_array_open(tr, (*n)++, sizeof *tr, at);
    tr[at] = (resid_entry_t){w, v, 1};
    if (*n > EDGE_KEEP) {
        size_t drop = clk_array_far_end(*n, at);
        clk_array_close(tr, (*n)--, sizeof *tr, drop);
    }
    return tr;
}

/* The track of edge (lo, hi), made when missing (NULL: too many edges, counted). */
static edge_track_t *edge_get(clock_history_t *self, uint32_t lo, uint32_t hi)
{
    size_t pos;
    edge_track_t *t = edge_find(self, lo, hi, &pos);
    if (t != NULL)
        return t;
    if (self->nedges >= EDGE_MAX) {
        self->ignored++;
        return NULL;
    }
    self->edges =
        clk_array_reserve(self->edges, self->nedges, &self->capedges, sizeof *self->edges);
    clk_array_open(self->edges, self->nedges, sizeof *self->edges, pos);
    t = &self->edges[pos];
    memset(t, 0, sizeof *t);
    t->lo = lo;
    t->hi = hi;
    self->nedges++;
    return t;
}

/* The key of an edge's tracks, the lower node id first. */
static void edge_ends(const clock_edge_fit_t *e, uint32_t *lo, uint32_t *hi)
{
    *lo = e->src < e->dst ? e->src : e->dst;
    *hi = e->src < e->dst ? e->dst : e->src;
}

/*
 * Whether an edge fit's residual belongs in a track, and the track's key
 * (lo < hi) and the residual oriented lo → hi.  A suspect edge's residual
 * is its whole detour, not asymmetry of its loops.
 */
static bool edge_key(const clock_edge_fit_t *e, uint32_t *lo, uint32_t *hi, double *r)
{
    if (e->suspect || !isfinite(e->residual_ns) || e->src == e->dst ||
        !(e->loop_share > EDGE_LOOP_SHARE))
        return false;
    edge_ends(e, lo, hi);
    *r = e->src < e->dst ? e->residual_ns : -e->residual_ns;
    return true;
}

/* Whether an edge fit's margin belongs in its track. */
static bool edge_has_margin(const clock_edge_fit_t *e)
{
    return !e->step && e->src != e->dst && isfinite(e->margin_ns);
}

/*
 * One window's edge fit into its edge's tracks: its margin (every edge with
 * one, bridges too) and, when `residual`, its loop residual (edge_key).
 * An edge beyond EDGE_MAX is counted once.
 */
static void edge_add(clock_history_t *self, const clock_edge_fit_t *e, bool residual)
{
    uint32_t lo, hi;
    double r;
    bool has_r = residual && edge_key(e, &lo, &hi, &r);
    bool has_m = edge_has_margin(e);
    if (!has_r && !has_m)
        return;
    edge_ends(e, &lo, &hi);
    edge_track_t *t = edge_get(self, lo, hi);
    if (t == NULL)
        return;
    if (has_r)
        t->tr = entry_add(t->tr, &t->ntr, &t->captr, e->window, r);
    if (has_m)
        t->mg = entry_add(t->mg, &t->nmg, &t->capmg, e->window, e->margin_ns);
}

static int key_cmp(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/*
 * The tracks an add's edges lack, made in one merge: made one by one, each
 * new edge that sorts before existing ones moved every track after it
 * (32768 new edges between as many known ones: 551 ms, merged 11 ms;
 * bench_clock_solve).  Where they would pass EDGE_MAX, edge_get makes them
 * one by one, first come first served, and counts the rest.
 */
static void edges_make(clock_history_t *self, const clock_edge_fit_t *edges, size_t ne,
                       bool residual)
{
    if (ne < 2)
        return;
    uint32_t(*k)[2] = xmalloc(ne * sizeof *k);
    size_t nk = 0;
    for (size_t i = 0; i < ne; i++) {
        const clock_edge_fit_t *e = &edges[i];
        uint32_t lo, hi;
        double r;
        if (!(edge_has_margin(e) || (residual && edge_key(e, &lo, &hi, &r))))
            continue;
        edge_ends(e, &lo, &hi);
        if (edge_find(self, lo, hi, NULL) == NULL) {
            k[nk][0] = lo;
            k[nk][1] = hi;
            nk++;
        }
    }
    qsort(k, nk, sizeof *k, key_cmp);
    size_t u = 0;
    for (size_t i = 0; i < nk; i++)
        if (u == 0 || key_cmp(k[u - 1], k[i]) != 0)
            memcpy(k[u++], k[i], sizeof *k);
    if (u >= 2 && self->nedges + u <= EDGE_MAX) {
        size_t n = self->nedges + u;
        if (n > self->capedges) {
            self->capedges = n > 2 * self->capedges ? n : 2 * self->capedges;
            self->edges = xreallocarray(self->edges, self->capedges, sizeof *self->edges);
        }
        /* From the back: each track moves once, to where it ends up. */
        for (size_t i = self->nedges, j = u, w = n; j > 0;) {
            const edge_track_t *t = i > 0 ? &self->edges[i - 1] : NULL;
            if (t && (t->lo > k[j - 1][0] || (t->lo == k[j - 1][0] && t->hi > k[j - 1][1]))) {
                self->edges[--w] = self->edges[--i];
                continue;
            }
            edge_track_t *nt = &self->edges[--w];
            memset(nt, 0, sizeof *nt);
            nt->lo = k[j - 1][0];
            nt->hi = k[j - 1][1];
            j--;
        }
        self->nedges = n;
    }
    free(k);
}

static bool break_before(const void *elem, const void *key)
{
    return *(const int64_t *)elem < *(const int64_t *)key;
}

/*
 * A window in which the node could not be aligned (its edges saw its clock
 * step; or it was cut off, or had no edge fit, while its clock may have
 * been stepped) is a break in its track: pooling never reaches across it.
 * A window added again, aligned this time, is no break.
 */
static void break_note(track_node_t *t, int64_t window, bool set, size_t keep)
{
    size_t at = clk_lower_bound(t->brk, t->nbrk, sizeof *t->brk, &window, break_before);
    bool have = at < t->nbrk && t->brk[at] == window;
    if (have == set)
        return;
    if (!set) {
        clk_array_close(t->brk, t->nbrk--, sizeof *t->brk, at);
        return;
    }
    t->brk = clk_array_reserve(t->brk, t->nbrk, &t->capbrk, sizeof *t->brk);
    clk_array_open(t->brk, t->nbrk++, sizeof *t->brk, at);
    t->brk[at] = window;
    if (t->nbrk > keep) /* as many as the maps kept: the oldest goes */
        clk_array_close(t->brk, t->nbrk--, sizeof *t->brk, 0);
}

static void cut_note(track_node_t *t, int64_t window, size_t keep)
{
    size_t at = clk_lower_bound(t->cut, t->ncut, sizeof *t->cut, &window, break_before);
    if (at < t->ncut && t->cut[at] == window)
        return;
    t->cut = clk_array_reserve(t->cut, t->ncut, &t->capcut, sizeof *t->cut);
    clk_array_open(t->cut, t->ncut++, sizeof *t->cut, at);
    t->cut[at] = window;
    if (t->ncut > keep)
        clk_array_close(t->cut, t->ncut--, sizeof *t->cut, 0);
}

void clock_history_cut(clock_history_t *self, uint32_t node, uint32_t ref, int64_t window)
{
    assert(self);
    for (size_t i = 0; i < self->n; i++)
        if (node == self->nodes[i].node || node == ref)
            cut_note(&self->nodes[i], window, self->track_max);
}

/*
 * The windows around `window` that no break or cut separates from it: (lo,
 * hi), both excluded.  A cut at c parts windows before c from c and after.
 */
static void break_span(const track_node_t *t, int64_t window, int64_t *lo, int64_t *hi)
{
    size_t at = clk_lower_bound(t->brk, t->nbrk, sizeof *t->brk, &window, break_before);
    *lo = at > 0 ? t->brk[at - 1] : INT64_MIN;
    size_t up = at < t->nbrk && t->brk[at] == window ? at + 1 : at;
    *hi = up < t->nbrk ? t->brk[up] : INT64_MAX;
    /* Cuts at or before the window: the last one; after it: the first. */
    size_t c = clk_lower_bound(t->cut, t->ncut, sizeof *t->cut, &window, break_before);
    size_t below = c < t->ncut && t->cut[c] == window ? c + 1 : c;
    if (below > 0 && t->cut[below - 1] > INT64_MIN && t->cut[below - 1] - 1 > *lo)
        *lo = t->cut[below - 1] - 1;
    if (below < t->ncut && t->cut[below] < *hi)
        *hi = t->cut[below];
}

/*
 * Whether any edge of a window stands raised against the margin levels the
 * history has now, as the solve reads them (by margin_z of their noise, at
 * least the edge's own σ), or saw its margin move inside the window.
 * Neither: every bound of the window is 0.
 */
static bool any_raised(const clock_edge_fit_t *edges, size_t n, const clock_solve_opts_t *opts)
{
    double kcov = opts->coverage_k > 0 ? opts->coverage_k : 3.0;
    for (size_t i = 0; i < n; i++) {
        const clock_edge_fit_t *e = &edges[i];
        if (isfinite(e->margin_step_ns) && e->margin_step_ns != 0)
            return true;
        double vb, sigd, sd;
        clk_edge_sigmas(e, kcov, &vb, &sigd);
        if (clk_margin_raised(opts, e, sqrt(vb), &sd, NULL) > 0)
            return true;
    }
    return false;
}

/* Window w's map of node n, anchored near x (its clock), no longer in doubt. */
static void clear_delay(clock_history_t *self, uint32_t node, int64_t w, int64_t x)
{
    track_node_t *t = track_find(self, node, NULL);
    size_t at = t ? track_entry_of(t, w, x) : SIZE_MAX;
    if (at != SIZE_MAX)
        t->tr[at].delay = 0;
}

int64_t clock_history_renote_lag(size_t i)
{
    return i < 62 && (INT64_C(1) << i) <= CLOCK_RENOTE_MAX ? INT64_C(1) << i : 0;
}

int clock_history_note_bounds(clock_history_t *self, const clock_edge_fit_t *edges, size_t n,
                              const clock_solve_opts_t *opts, char *err)
{
    assert(self && opts && (edges || n == 0));
    if (!(opts->margin_z > 0) || n == 0)
        return BASE_OK;
    clock_solve_opts_t so = *opts;
    so.history = self;
    so.pool_windows = 0; /* the bounds come before pooling, which would go unused */
    /* Most windows of most networks: nothing to solve for (a solve is O(nodes²) and more). */
    if (!any_raised(edges, n, &so)) {
        for (size_t i = 0; i < n; i++) {
            clear_delay(self, edges[i].src, edges[i].window, edges[i].anchor_ns);
            clear_delay(self, edges[i].dst, edges[i].window,
                        clock_edge_map(&edges[i], edges[i].anchor_ns));
        }
        return BASE_OK;
    }
    /* The solve writes its residuals into the edges: those of the window's own solve stay. */
    clock_edge_fit_t *e = xmalloc(n * sizeof *e);
    memcpy(e, edges, n * sizeof *e);
    clock_node_fit_t *fits = NULL;
    size_t nf = 0;
    int rc = clock_solve(e, n, &so, &fits, &nf, NULL, err);
    free(e);
    if (rc != BASE_OK)
        return BASE_ERR;
    clock_history_keep_bounds(self, fits, nf);
    free(fits);
    return BASE_OK;
}

void clock_history_keep_bounds(clock_history_t *self, const clock_node_fit_t *fits, size_t n)
{
    assert(self && (fits || n == 0));
    for (size_t i = 0; i < n; i++) {
        const clock_node_fit_t *f = &fits[i];
        track_node_t *t = f->aligned ? track_find(self, f->node, NULL) : NULL;
        size_t at = t ? track_entry_of(t, f->window, f->anchor_ns) : SIZE_MAX;
        if (at != SIZE_MAX)
            t->tr[at].delay = entry_delay(f);
    }
}

void clock_history_add(clock_history_t *self, const clock_node_fit_t *fits, size_t n,
                       const clock_edge_fit_t *edges, size_t ne, const clock_solve_stats_t *st)
{
    assert(self && (fits || n == 0) && (edges || ne == 0));
    if (st && st->dof > 0 && isfinite(st->own_sigma_ns))
        tau2_add(self, st->own_sigma_ns * st->own_sigma_ns);
    edges_make(self, edges, ne, st && st->dof > 0);
    for (size_t i = 0; i < ne; i++)
        edge_add(self, &edges[i], st && st->dof > 0);
    for (size_t i = 0; i < n; i++) {
        const clock_node_fit_t *f = &fits[i];
        if (f->node == f->ref) {
            /*
             * The reference now: its maps onto an earlier reference end
             * here, or they would pool with its maps onto that one once it
             * is back, across a time nothing watched its clock.
             */
            track_node_t *r = track_find(self, f->node, NULL);
            if (r)
                r->ntr = 0;
            continue;
        }
        size_t pos;
        track_node_t *t = track_find(self, f->node, &pos);
        if (t == NULL) {
            if (self->n >= self->max_nodes) {
                self->ignored++;
                continue;
            }
            self->nodes = clk_array_reserve(self->nodes, self->n, &self->capn, sizeof *self->nodes);
            clk_array_open(self->nodes, self->n, sizeof *self->nodes, pos);
            t = &self->nodes[pos];
            memset(t, 0, sizeof *t);
            t->node = f->node;
            self->n++;
        }
        break_note(t, f->window, !f->aligned, self->track_max);
        if (!f->aligned)
            continue;
        track_add(self, t, f);
        if (!isfinite(f->misfit_ms_ns2))
            continue;
        double x = f->misfit_ms_ns2;
        t->weight = t->weight * self->decay + 1.0;
        t->weight2 = t->weight2 * self->decay * self->decay + 1.0;
        t->mean += (x - t->mean) / t->weight;
        t->meansq += (x * x - t->meansq) / t->weight;
        t->count++;
    }
}

double clock_history_misfit_rms(const clock_history_t *self, uint32_t node)
{
    assert(self);
    const track_node_t *t = track_find(self, node, NULL);
    if (t == NULL || t->count < 3)
        return NAN;
    /*
     * Noisy readings average to a small positive mean by chance: the mean
     * square counts only when it stands two standard errors clear of zero.
     */
    double n_eff = t->weight * t->weight / t->weight2;
    double var = fmax(t->meansq - t->mean * t->mean, 0) * n_eff / fmax(n_eff - 1, 1);
    double se = sqrt(var / n_eff);
    return t->mean > 2 * se ? sqrt(t->mean) : 0;
}

uint64_t clock_history_ignored(const clock_history_t *self)
{
    assert(self);
    return self->ignored;
}

double clock_history_extra_var(const clock_history_t *self)
{
    assert(self);
    return self->tau2_count >= 3 ? self->tau2_typical : 0;
}

/*
 * The persistent part of the loops' excess.  A loop residual is the edge's
 * own noise, noise its σ missed, and path asymmetry; only the last stays
 * the same from window to window.  Per edge, over the K windows nearest
 * this one within the span, the mean residual m and their scatter s² give
 * m² − s²/K, an unbiased estimate of the persistent residual's square
 * (variance about 2(s²/K)² + 4m²s²/K).  The span is the pooling's: an
 * asymmetry that appears is in the pooled map within that many windows,
 * and a longer span would go on averaging it with the time before it.  A
 * residual keeps 1 − leverage (loop_share) of its edge's variance, so the
 * sum over the edges, two standard errors above the estimate (a short or
 * noisy track must not pass for no asymmetry), over the sum of their loop
 * shares is the per-edge variance of the asymmetry.  Each edge's own
 * estimate goes to edge_var[i] without the margin: one edge's bound would
 * be mostly margin, and it only has to single out an edge whose asymmetry
 * stands above the network's.
 */
double clock_history_persist_var(const clock_history_t *self, const clock_edge_fit_t *edges,
                                 size_t n, uint32_t span, double *edge_var)
{
    assert(self && (edges || n == 0));
    double P = 0, V = 0, share = 0;
    size_t total = 0, used = 0;
    for (size_t i = 0; i < n; i++) {
        const clock_edge_fit_t *e = &edges[i];
        if (edge_var)
            edge_var[i] = NAN;
        uint32_t lo, hi;
        double r;
        if (!edge_key(e, &lo, &hi, &r))
            continue;
        total++;
        const edge_track_t *t = edge_find(self, lo, hi, NULL);
        if (t == NULL)
            continue;
        size_t at = resid_lower(t->tr, t->ntr, e->window), a = at, b = at;
        while (b - a < span && (a > 0 || b < t->ntr)) {
            bool left = a > 0 && (b >= t->ntr ||
                                  e->window - t->tr[a - 1].window <= t->tr[b].window - e->window);
            int64_t d = left ? e->window - t->tr[a - 1].window : t->tr[b].window - e->window;
            if (d > (int64_t)span)
                break;
            if (left)
                a--;
            else
                b++;
        }
        size_t K = b - a;
        if (K < EDGE_MIN)
            continue;
        double m = 0, ss = 0;
        for (size_t k = a; k < b; k++)
            m += t->tr[k].r;
        m /= (double)K;
        for (size_t k = a; k < b; k++)
            ss += (t->tr[k].r - m) * (t->tr[k].r - m);
        double s2k = ss / (double)(K - 1) / (double)K;
        double p = m * m - s2k, v = 2 * s2k * s2k + 4 * m * m * s2k;
        if (edge_var)
            edge_var[i] = fmax(p, 0) / e->loop_share;
        P += p;
        V += v;
        share += e->loop_share;
        used++;
    }
    if (used < 3 || 2 * used < total)
        return NAN;
    return (fmax(P, 0) + 2 * sqrt(V)) / share;
}

/*
 * The usual, undisturbed level of an edge's margin: the 10th percentile of
 * the other windows' margins the history holds for the edge.  A delay
 * beyond the usual only ever raises a margin, so the low end is the
 * undisturbed one, even when most windows are disturbed (a host under
 * sustained load).
 */
double clock_history_margin_level(const clock_history_t *self, const clock_edge_fit_t *e,
                                  double *sd, size_t *earlier)
{
    assert(self && e);
    if (sd)
        *sd = NAN;
    if (earlier)
        *earlier = 0;
    if (e->src == e->dst)
        return NAN;
    uint32_t lo, hi;
    edge_ends(e, &lo, &hi);
    const edge_track_t *t = edge_find(self, lo, hi, NULL);
    if (t == NULL)
        return NAN;
    double v[EDGE_KEEP], d[EDGE_KEEP];
    size_t n = 0, nd = 0;
    for (size_t i = 0; i < t->nmg && n < EDGE_KEEP; i++) {
        if (t->mg[i].window == e->window)
            continue;
        if (earlier && t->mg[i].window < e->window)
            (*earlier)++;
        v[n++] = t->mg[i].r;
        /* Successive windows, the current one left out. */
        if (i > 0 && t->mg[i - 1].window != e->window)
            d[nd++] = fabs(t->mg[i].r - t->mg[i - 1].r);
    }
    if (n < MARGIN_MIN)
        return NAN;
    qsort(v, n, sizeof *v, clk_cmp_double);
    /*
     * The noise from one window to the next, from the differences of
     * successive windows' margins (of two normals' difference, |d| has its
     * median at 0.954 σ, its lower quartile at 0.4506 σ).  A disturbance
     * that comes and stays adds one large difference, however long it
     * lasts, where a spread across windows would take it in whole; one
     * that comes and goes in short spells adds one at every turn, which
     * can be half of them.  So the median, unless the lower quartile
     * (once there are enough) stands apart from it, as quiet steps among
     * turns do: under 0.35 of it, where noise alone puts it 1 time in 70
     * with 8 differences, 1 in 170 with 16 and almost never with 32 (the
     * quartile alone, noisier, raised clean margins 2-4 times as often).
     */
    if (sd && nd > 0) {
        qsort(d, nd, sizeof *d, clk_cmp_double);
        *sd = clk_quantile_sorted(d, nd, 0.5) / 0.954;
        double low = nd >= 8 ? clk_quantile_sorted(d, nd, 0.25) / 0.4506 : INFINITY;
        if (low < 0.35 * *sd)
            *sd = low;
    }
    return clk_quantile_sorted(v, n, 0.10);
}

size_t clock_history_track_len(const clock_history_t *self, uint32_t node)
{
    assert(self);
    const track_node_t *t = track_find(self, node, NULL);
    return t ? t->ntr : 0;
}

void clock_history_forget(clock_history_t *self, uint32_t node)
{
    assert(self);
    size_t pos;
    track_node_t *t = track_find(self, node, &pos);
    if (t != NULL) {
        free(t->tr);
        free(t->brk);
        free(t->cut);
        clk_array_close(self->nodes, self->n--, sizeof *self->nodes, pos);
    }
    for (size_t i = 0; i < self->nedges;) {
        edge_track_t *e = &self->edges[i];
        if (e->lo != node && e->hi != node) {
            i++;
            continue;
        }
        free(e->tr);
        free(e->mg);
        clk_array_close(self->edges, self->nedges--, sizeof *self->edges, i);
    }
}

/* ---- the smoother ---- */

/* The noise model: wander q (ppb²/s) and scales of the windows' own σ (phase, rate). */
typedef struct model {
    double q, so, sr;
} model_t;

/* One window as the filter sees it: times in s from the current anchor. */
typedef struct obs {
    double a, b; /* its range */
    double z[2]; /* level at its centre (ns, relative to the current window's), slope (ppb) */
    double v[2]; /* own variances, before scales and wander terms */
} obs_t;

/* A Gaussian over one boundary state (ψ, f) at time t. */
typedef struct kf {
    bool have;
    double t;
    double x[2];
    double P[2][2];
    uint32_t used; /* windows since the last restart */
} kf_t;

static bool inv2(const double A[2][2], double out[2][2])
{
    double det = A[0][0] * A[1][1] - A[0][1] * A[1][0];
    if (!(det > 0) || !isfinite(det))
        return false;
    out[0][0] = A[1][1] / det;
    out[1][1] = A[0][0] / det;
    out[0][1] = -A[0][1] / det;
    out[1][0] = -A[1][0] / det;
    return true;
}

static double chi2_of(const double d[2], const double Si[2][2])
{
    return d[0] * (Si[0][0] * d[0] + Si[0][1] * d[1]) + d[1] * (Si[1][0] * d[0] + Si[1][1] * d[1]);
}

/* Inverse of a symmetric positive definite n×n matrix (n ≤ 4) by Cholesky. */
static bool inv_spd(const double *A, size_t n, double *out)
{
    double L[16], col[4];
    memcpy(L, A, n * n * sizeof *L);
    if (!clk_chol(L, n))
        return false;
    clk_chol_inverse(L, n, out, col);
    return true;
}

static void q_of(double d, double q, double Q[2][2])
{
    double ad = fabs(d);
    Q[0][0] = q * ad * ad * ad / 3;
    Q[0][1] = Q[1][0] = q * d * ad / 2;
    Q[1][1] = q * ad;
}

static void kf_predict(kf_t *k, double t, double q)
{
    double d = t - k->t, Q[2][2];
    q_of(d, q, Q);
    k->x[0] += k->x[1] * d;
    double p00 = k->P[0][0] + 2 * d * k->P[0][1] + d * d * k->P[1][1] + Q[0][0];
    double p01 = k->P[0][1] + d * k->P[1][1] + Q[0][1];
    double p11 = k->P[1][1] + Q[1][1];
    k->P[0][0] = p00;
    k->P[0][1] = k->P[1][0] = p01;
    k->P[1][1] = p11;
    k->t = t;
}

/* A window's measurement variances: its own σ scaled, plus the random walk's residuals. */
static void obs_var(const obs_t *o, const model_t *m, double R[2])
{
    double w = o->b - o->a;
    R[0] = m->so * m->so * o->v[0] + m->q * w * w * w / 720;
    R[1] = m->sr * m->sr * o->v[1] + m->q * w / 210;
}

/*
 * The window's line from its boundary states, entered at p and left at
 * the other end, ws = ±w the signed time from p to there: rows (level,
 * slope) over (ψ_p, f_p, ψ_q, f_q).
 */
static void line_rows(double ws, double H[2][4])
{
    H[0][0] = 0.5;
    H[0][1] = ws / 12;
    H[0][2] = 0.5;
    H[0][3] = -ws / 12;
    H[1][0] = -1 / ws;
    H[1][1] = 0;
    H[1][2] = 1 / ws;
    H[1][3] = 0;
}

/*
 * Joint Gaussian of (s_p, s_q) from a state at p: mean X, covariance C (4×4,
 * row-major), q the process noise.
 */
static void augment(const kf_t *k, double ws, double q, double X[4], double C[16])
{
    double Q[2][2];
    q_of(ws, q, Q);
    double F[2][2] = {{1, ws}, {0, 1}};
    double FP[2][2];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            FP[i][j] = F[i][0] * k->P[0][j] + F[i][1] * k->P[1][j];
    X[0] = k->x[0];
    X[1] = k->x[1];
    X[2] = k->x[0] + ws * k->x[1];
    X[3] = k->x[1];
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < 2; j++) {
            C[i * 4 + j] = k->P[i][j];
            C[i * 4 + 2 + j] = FP[j][i]; /* P·Fᵀ */
            C[(2 + i) * 4 + j] = FP[i][j];
            C[(2 + i) * 4 + 2 + j] = FP[i][0] * F[j][0] + FP[i][1] * F[j][1] + Q[i][j];
        }
    }
}

/* H·X and H·C·Hᵀ (+ R on the diagonal). */
static void project(const double H[2][4], const double X[4], const double C[16], const double R[2],
                    double y[2], double S[2][2])
{
    for (int i = 0; i < 2; i++) {
        y[i] = 0;
        for (int j = 0; j < 4; j++)
            y[i] += H[i][j] * X[j];
    }
    double HC[2][4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 4; j++) {
            HC[i][j] = 0;
            for (int k = 0; k < 4; k++)
                HC[i][j] += H[i][k] * C[k * 4 + j];
        }
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            S[i][j] = 0;
            for (int k = 0; k < 4; k++)
                S[i][j] += HC[i][k] * H[j][k];
        }
    S[0][0] += R[0];
    S[1][1] += R[1];
    S[0][1] = S[1][0] = 0.5 * (S[0][1] + S[1][0]);
}

/* The state at the far end of a window from its line alone (a filter's first window). */
static void kf_start(kf_t *k, const obs_t *o, bool backwards, const model_t *m)
{
    double R[2];
    obs_var(o, m, R);
    double w = o->b - o->a, hs = backwards ? -w / 2 : w / 2;
    k->have = true;
    k->t = backwards ? o->a : o->b;
    k->x[0] = o->z[0] + o->z[1] * hs;
    k->x[1] = o->z[1];
    k->P[0][0] = R[0] + hs * hs * R[1] + m->q * fabs(hs * hs * hs) / 3;
    k->P[0][1] = k->P[1][0] = hs * R[1];
    k->P[1][1] = R[1] + m->q * w / 3;
    k->used = 1;
}

/*
 * Feed one window (forward: enter at a, leave at b; backwards the other
 * way); returns its log-likelihood term.  Beyond the gate the window
 * restarts the filter (what came before says nothing about what follows)
 * and its term is capped, so that a step costs a bounded amount; between
 * 3σ and the gate its variances are inflated until it stands at 3σ (Huber).
 */
static double kf_step(kf_t *k, const obs_t *o, bool backwards, const model_t *m)
{
    if (!k->have) {
        kf_start(k, o, backwards, m);
        return 0;
    }
    double w = o->b - o->a, ws = backwards ? -w : w;
    kf_predict(k, backwards ? o->b : o->a, m->q);
    double X[4], C[16], H[2][4], R[2], y[2], S[2][2], Si[2][2];
    augment(k, ws, m->q, X, C);
    line_rows(ws, H);
    obs_var(o, m, R);
    project(H, X, C, R, y, S);
    if (!inv2(S, Si)) {
        kf_start(k, o, backwards, m);
        return 0;
    }
    double nu[2] = {o->z[0] - y[0], o->z[1] - y[1]};
    double chi2 = chi2_of(nu, Si);
    double ll = -0.5 * (fmin(chi2, POOL_GATE) + log(S[0][0] * S[1][1] - S[0][1] * S[1][0]));
    if (!(chi2 <= POOL_GATE)) {
        kf_start(k, o, backwards, m);
        return ll;
    }
    if (chi2 > POOL_HUBER) {
        S[0][0] += (chi2 / POOL_HUBER - 1) * R[0];
        S[1][1] += (chi2 / POOL_HUBER - 1) * R[1];
        if (!inv2(S, Si)) {
            kf_start(k, o, backwards, m);
            return ll;
        }
    }
    /* K = C·Hᵀ·S⁻¹ (4×2); X += K·ν; C −= K·H·C; keep the far end. */
    double CHt[4][2], K[4][2];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++) {
            CHt[i][j] = 0;
            for (int l = 0; l < 4; l++)
                CHt[i][j] += C[i * 4 + l] * H[j][l];
        }
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            K[i][j] = CHt[i][0] * Si[0][j] + CHt[i][1] * Si[1][j];
    for (int i = 2; i < 4; i++)
        X[i] += K[i][0] * nu[0] + K[i][1] * nu[1];
    for (int i = 2; i < 4; i++)
        for (int j = 2; j < 4; j++)
            k->P[i - 2][j - 2] = C[i * 4 + j] - (K[i][0] * CHt[j][0] + K[i][1] * CHt[j][1]);
    k->P[0][1] = k->P[1][0] = 0.5 * (k->P[0][1] + k->P[1][0]);
    k->x[0] = X[2];
    k->x[1] = X[3];
    k->t = backwards ? o->a : o->b;
    k->used++;
    return ll;
}

/* Log-likelihood of a model over windows sorted by time. */
static double loglik(const obs_t *o, size_t n, const model_t *m)
{
    kf_t k = {0};
    double ll = 0;
    for (size_t i = 0; i < n; i++)
        ll += kf_step(&k, &o[i], false, m);
    return ll;
}

/*
 * Maximum-likelihood noise model over windows sorted by time: the wander on
 * a grid of factors of √2 in ppb/√s from the floor, and (with enough
 * windows) the scales of the windows' own σ, only ≥ 1, so that a lucky run
 * of quiet windows never makes a map look surer than its windows say.
 * Coordinate ascent, twice round.  From fewer windows than the scales need,
 * the grid starts at twice the floor (q four times): an ML variance from a
 * handful of innovations runs low, and a live master's windows 2 to 7 were
 * pooled too surely (busy, 30 networks: 92–95 % covered there, 96–100 %
 * later; 95.9 % live in all, 97.0 % with this).  *q_hi (may be NULL):
 * from those few, the largest q of the grid within Q_UPPER_LL of the
 * likeliest in log-likelihood, which bounds are made for too; else the
 * likeliest.
 */
static model_t model_ml(const obs_t *o, size_t n, double floor_ppb, double *q_hi)
{
    static const double scales[] = {1.0, 1.25, 1.5, 2.0, 2.5, 3.0};
    double f = floor_ppb > 0 ? floor_ppb : 0.01;
    model_t m = {f * f, 1.0, 1.0};
    if (q_hi)
        *q_hi = m.q;
    if (n < 2)
        return m;
    bool fit_scales = n >= POOL_SCALE_MIN;
    for (int round = 0; round < 2; round++) {
        double best = -INFINITY, qbest = m.q;
        double lls[Q_STEPS], qs[Q_STEPS];
        for (int i = 0; i < Q_STEPS; i++) {
            model_t t = m;
            t.q = qs[i] = f * f * pow(2.0, i + (fit_scales ? 0 : 2));
            double ll = lls[i] = loglik(o, n, &t);
            if (ll > best) {
                best = ll;
                qbest = t.q;
            }
        }
        m.q = qbest;
        if (q_hi)
            *q_hi = m.q;
        if (!fit_scales) {
            for (int i = Q_STEPS - 1; q_hi && i >= 0; i--)
                if (lls[i] >= best - Q_UPPER_LL) {
                    *q_hi = qs[i];
                    break;
                }
            break;
        }
        for (int which = 0; which < 2; which++) {
            double sbest = which ? m.sr : m.so;
            for (size_t i = 0; i < BASE_ARRAY_LEN(scales); i++) {
                model_t t = m;
                if (which)
                    t.sr = scales[i];
                else
                    t.so = scales[i];
                double ll = loglik(o, n, &t);
                if (ll > best) {
                    best = ll;
                    sbest = scales[i];
                }
            }
            if (which)
                m.sr = sbest;
            else
                m.so = sbest;
        }
    }
    return m;
}

static obs_t entry_obs(const track_entry_t *e, int64_t anchor, double off)
{
    obs_t o;
    double t = clk_diff(e->anchor, anchor) * 1e-9;
    o.a = t - e->half_s;
    o.b = t + e->half_s;
    o.z[0] = e->off - off;
    o.z[1] = e->drift;
    o.v[0] = e->sd_off * e->sd_off;
    o.v[1] = e->sd_drift * e->sd_drift;
    return o;
}

double clock_history_wander_ppb(const clock_history_t *self, uint32_t node, double floor_ppb)
{
    assert(self);
    const track_node_t *t = track_find(self, node, NULL);
    if (t == NULL || t->ntr < 4)
        return NAN;
    size_t first = t->ntr > POOL_ML_WINDOWS ? t->ntr - POOL_ML_WINDOWS : 0, n = t->ntr - first;
    const track_entry_t *last = &t->tr[t->ntr - 1];
    obs_t *o = xmalloc(n * sizeof *o);
    for (size_t i = 0; i < n; i++)
        o[i] = entry_obs(&t->tr[first + i], last->anchor, last->off);
    model_t m = model_ml(o, n, floor_ppb, NULL);
    free(o);
    return sqrt(m.q);
}

/* The positive part of a symmetric 2×2 matrix: its eigenvalues below 0 set to 0. */
static void psd_part(const double D[2][2], double out[2][2])
{
    double a = D[0][0], b = 0.5 * (D[0][1] + D[1][0]), c = D[1][1];
    memset(out, 0, 4 * sizeof(double));
    if (b == 0) {
        out[0][0] = fmax(a, 0);
        out[1][1] = fmax(c, 0);
        return;
    }
    double mid = 0.5 * (a + c), r = hypot(0.5 * (a - c), b);
    for (int k = 0; k < 2; k++) {
        double l = k == 0 ? mid + r : mid - r;
        if (!(l > 0))
            continue;
        double vx = b, vy = l - a, n2 = vx * vx + vy * vy;
        out[0][0] += l * vx * vx / n2;
        out[0][1] += l * vx * vy / n2;
        out[1][1] += l * vy * vy / n2;
    }
    out[1][0] = out[0][1];
}

/*
 * A filter run over o[from..to) (backwards: from the last), predicted to
 * time t.  A window beyond its gate does not restart it: such windows go
 * to a second filter, which takes over once it rests on more windows than
 * the first or on POOL_OUTVOTE of them (the clocks changed there); a
 * window within the first's gate drops the second.  Until then the first
 * predicts, so that one or two disturbed windows in a row neither vouch
 * for each other nor for the window after them, and windows disturbed
 * now and then do not keep a filter from growing.
 */
static kf_t run_side(const obs_t *o, size_t from, size_t to, bool backwards, const model_t *m,
                     double t)
{
    kf_t k = {0}, alt = {0};
    for (size_t j = 0; j < to - from; j++) {
        const obs_t *x = &o[backwards ? to - 1 - j : from + j];
        kf_t next = k;
        kf_step(&next, x, backwards, m);
        if (next.used > k.used) { /* within the gate (or the first window) */
            k = next;
            alt = (kf_t){0};
            continue;
        }
        kf_step(&alt, x, backwards, m);
        if (alt.used > k.used || alt.used >= POOL_OUTVOTE) {
            k = alt;
            alt = (kf_t){0};
        }
    }
    if (k.have)
        kf_predict(&k, t, m->q);
    return k;
}

/*
 * The current window [−h, h] given what is known: the information of the
 * boundary states (s(−h), s(h)) from the transition between them, a prior
 * on s(−h) (the earlier windows), one on s(h) (the later ones) and the
 * window's own line (R: its variances, NULL: left out).  Out: its line
 * (level, slope) and their covariance.
 */
static bool solve_window(double h, double q, const kf_t *before, const kf_t *after,
                         const double z[2], const double *R, double line[2], double LC[2][2])
{
    double Lam[16] = {0}, eta[4] = {0};
    /* Transition: s_b − F·s_a ~ N(0, Q): rows M = [−F, I], information Mᵀ·Q⁻¹·M. */
    double Q[2][2], Qi[2][2], w = 2 * h;
    q_of(w, q, Q);
    if (!inv2(Q, Qi))
        return false;
    double M[2][4] = {{-1, -w, 1, 0}, {0, -1, 0, 1}};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 2; k++)
                for (int l = 0; l < 2; l++)
                    Lam[i * 4 + j] += M[k][i] * Qi[k][l] * M[l][j];
    const kf_t *pri[2] = {before, after};
    for (int s = 0; s < 2; s++) {
        if (pri[s] == NULL || !pri[s]->have)
            continue;
        double Pi[2][2];
        if (!inv2(pri[s]->P, Pi))
            return false;
        int o = 2 * s;
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++) {
                Lam[(o + i) * 4 + o + j] += Pi[i][j];
                eta[o + i] += Pi[i][j] * pri[s]->x[j];
            }
    }
    double H[2][4];
    line_rows(w, H);
    if (R) {
        for (int i = 0; i < 4; i++) {
            for (int j = 0; j < 4; j++)
                Lam[i * 4 + j] += H[0][i] * H[0][j] / R[0] + H[1][i] * H[1][j] / R[1];
            eta[i] += H[0][i] * z[0] / R[0] + H[1][i] * z[1] / R[1];
        }
    }
    double C[16];
    if (!inv_spd(Lam, 4, C))
        return false;
    double X[4];
    for (int i = 0; i < 4; i++) {
        X[i] = 0;
        for (int j = 0; j < 4; j++)
            X[i] += C[i * 4 + j] * eta[j];
    }
    double zero[2] = {0, 0};
    project(H, X, C, zero, line, LC);
    return true;
}

/* χ² of a predicted line (covariance P) against the window's own (variances R). */
static double misfit_chi2(const double line[2], const double P[2][2], const double z[2],
                          const double R[2])
{
    double S[2][2] = {{P[0][0] + R[0], P[0][1]}, {P[1][0], P[1][1] + R[1]}}, Si[2][2];
    if (!inv2(S, Si))
        return INFINITY;
    double d[2] = {z[0] - line[0], z[1] - line[1]};
    return chi2_of(d, Si);
}

/*
 * A prediction (line, LC) for the window that its own map (0, drift)
 * stands apart from: how far at the window's worse end, with the
 * prediction's covariance; the farther of it and what is already there.
 * A prediction that rests on one window (a filter restarted there, on a
 * window that was itself disturbed, perhaps) is no evidence against the
 * window and is not recorded.
 */
static void note_disagreement(clk_pool_out_t *out, const double line[2], const double LC[2][2],
                              double drift, double h, uint32_t used, double q)
{
    if (used < 2)
        return;
    double dd = (line[1] - drift) * h;
    double D = fmax(fabs(line[0] + dd), fabs(line[0] - dd));
    if (!(D > out->disagree_ns))
        return;
    out->disagree_ns = D;
    memcpy(out->P, LC, sizeof out->P);
    out->q = q;
}

bool clk_history_pool(const clock_history_t *self, uint32_t node, const clk_pool_in_t *in,
                      clk_pool_out_t *out)
{
    assert(self && in && out);
    memset(out, 0, sizeof *out);
    const track_node_t *t = track_find(self, node, NULL);
    double h = in->half_s;
    if (t == NULL || t->ntr == 0 || in->max_windows == 0 || !(h > 0) || !(in->sd_off > 0) ||
        !(in->sd_drift > 0) || !isfinite(in->off) || !isfinite(in->drift))
        return false;
    /*
     * Neighbours: the nearest windows on either side (the track is sorted by
     * anchor), at most POOL_ML_WINDOWS/2 each for the noise model and
     * max_windows each for the pooling, within a horizon of that many
     * typical windows (a partial first or last window has a short range of
     * its own, its neighbours do not).
     */
    size_t reach = in->max_windows > POOL_ML_WINDOWS / 2 ? in->max_windows : POOL_ML_WINDOWS / 2;
    size_t pos = track_lower(t, in->anchor);
    size_t i0 = pos > reach + 1 ? pos - reach - 1 : 0;
    size_t i1 = pos + reach + 1 < t->ntr ? pos + reach + 1 : t->ntr;
    obs_t *c = xmalloc((i1 - i0 + 1) * sizeof *c);
    size_t nc = 0, split = 0;
    double hmax = h;
    int64_t blo, bhi;
    break_span(t, in->window, &blo, &bhi);
    for (size_t i = i0; i < i1; i++) {
        const track_entry_t *e = &t->tr[i];
        if (e->ref != in->ref || e->window == in->window || e->window <= blo || e->window >= bhi)
            continue;
        /*
         * A window hosts were slow in is off by up to its delay bound, which
         * pooling would spread to this window's map, whose bound does not
         * say so: only windows no more in doubt than this one pool with it.
         */
        if (e->delay > in->delay + POOL_DELAY_K * fmax(in->sd_off, e->sd_off))
            continue;
        obs_t x = entry_obs(e, in->anchor, in->off);
        double mid = 0.5 * (x.a + x.b);
        if (fabs(mid) < 0.5 * h)
            continue; /* the same window under another number */
        hmax = fmax(hmax, 0.5 * (x.b - x.a));
        c[nc++] = x;
        if (mid < 0)
            split = nc;
    }
    double horizon = (2.0 * (double)reach + 1.0) * hmax;
    size_t b0 = split, a1 = split;
    while (b0 > 0 && split - b0 < reach && c[b0 - 1].a >= -horizon)
        b0--;
    while (a1 < nc && a1 - split < reach && c[a1].b <= horizon)
        a1++;
    /* The noise model from the neighbours alone: a bad current window must not set it. */
    double q_hi;
    model_t m = model_ml(c + b0, a1 - b0, in->wander_floor_ppb, &q_hi);
    size_t pb0 = b0, pa1 = a1;
    double hp = (2.0 * (double)in->max_windows + 1.0) * hmax;
    while (split - pb0 > in->max_windows || (pb0 < split && c[pb0].a < -hp))
        pb0++;
    while (pa1 - split > in->max_windows || (pa1 > split && c[pa1 - 1].b > hp))
        pa1--;
    kf_t kb = run_side(c, pb0, split, false, &m, -h), ka = run_side(c, split, pa1, true, &m, h);
    /*
     * From a few neighbours the likeliest wander runs low, and the map
     * pools too surely: its bound also holds for a wander they hardly rule
     * out, in every combination of offset and drift, and its bend term is
     * that wander's (128 nodes, busy, live: windows 2 to 5 were 90–93 %
     * covered).
     */
    model_t mh = m;
    mh.q = q_hi;
    kf_t kbh = {0}, kah = {0};
    if (q_hi > m.q) {
        kbh = run_side(c, pb0, split, false, &mh, -h);
        kah = run_side(c, split, pa1, true, &mh, h);
    }
    free(c);
    if (!kb.have && !ka.have)
        return false;

    obs_t cur = {-h, h, {0, in->drift}, {in->sd_off * in->sd_off, in->sd_drift * in->sd_drift}};
    double R[2], line[2], LC[2][2];
    obs_var(&cur, &m, R);
    /*
     * Sides that disagree with each other (what each predicts for this
     * window): a change between them; keep those this window agrees with.
     */
    if (kb.have && ka.have) {
        double lb[2], la[2], Pb[2][2], Pa[2][2];
        if (!solve_window(h, m.q, &kb, NULL, NULL, NULL, lb, Pb) ||
            !solve_window(h, m.q, NULL, &ka, NULL, NULL, la, Pa))
            return false;
        double Rz[2] = {0, 0};
        double Pab[2][2] = {{Pa[0][0] + Pb[0][0], Pa[0][1] + Pb[0][1]},
                            {Pa[1][0] + Pb[1][0], Pa[1][1] + Pb[1][1]}};
        if (misfit_chi2(lb, Pab, la, Rz) > POOL_GATE) {
            kb.have = misfit_chi2(lb, Pb, cur.z, R) <= POOL_GATE;
            ka.have = misfit_chi2(la, Pa, cur.z, R) <= POOL_GATE;
            if (!kb.have && !ka.have) {
                note_disagreement(out, lb, Pb, in->drift, h, kb.used, m.q);
                note_disagreement(out, la, Pa, in->drift, h, ka.used, m.q);
                return false;
            }
        }
    }
    /*
     * What the neighbours predict for this window against what it says:
     * moderately off, its variances are inflated (Huber); far off, windows on
     * both sides that agree outvote it, one side alone does not (a step or a
     * change of frequency at this window looks the same as a bad window).
     */
    if (!solve_window(h, m.q, &kb, &ka, NULL, NULL, line, LC))
        return false;
    double d = misfit_chi2(line, LC, cur.z, R), hub = 1;
    bool use_cur = true;
    uint32_t used = (kb.have ? kb.used : 0) + (ka.have ? ka.used : 0);
    if (d > POOL_GATE) {
        if (!(kb.have && ka.have) || used < POOL_OUTVOTE) {
            /*
             * Either the clocks changed here (the window is right) or the
             * window was disturbed (the neighbours are): its own map goes
             * out, and its uncertainty must reach what they predict.
             */
            note_disagreement(out, line, LC, in->drift, h, used, m.q);
            return false;
        }
        use_cur = false;
    } else if (d > POOL_HUBER) {
        hub = d / POOL_HUBER;
        R[0] *= hub;
        R[1] *= hub;
    }
    if (use_cur && !solve_window(h, m.q, &kb, &ka, cur.z, R, line, LC))
        return false;
    double q_used = m.q;
    if (q_hi > m.q) {
        double lh[2], LH[2][2], Rh[2], D[2][2], Dp[2][2];
        obs_var(&cur, &mh, Rh);
        Rh[0] *= hub;
        Rh[1] *= hub;
        kbh.have = kbh.have && kb.have;
        kah.have = kah.have && ka.have;
        if ((kbh.have || kah.have) && solve_window(h, mh.q, &kbh, &kah, use_cur ? cur.z : NULL,
                                                   use_cur ? Rh : NULL, lh, LH)) {
            /* The least covariance over both: LC and what LH has beyond it in any direction. */
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++)
                    D[i][j] = LH[i][j] - LC[i][j];
            psd_part(D, Dp);
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 2; j++)
                    LC[i][j] += Dp[i][j];
            q_used = mh.q;
        }
    }
    out->off = in->off + line[0];
    out->drift = line[1];
    memcpy(out->P, LC, sizeof LC);
    out->q = q_used;
    out->used = used;
    out->both = kb.have && ka.have;
    return true;
}
