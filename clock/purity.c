/*
 * Coded probes: the purity filter and the points of an edge.
 *
 * A probe is two packets sent `spacing` apart.  When neither met a queue the
 * receive gap equals the send gap up to timestamp noise (and the rate
 * difference of the two clocks over the spacing); a packet that waited
 * behind cross traffic stretches or squeezes the gap.  The automatic guard
 * learns the noise of the gap error per window and direction from the
 * shortest interval holding a quarter of the probes (the "shorth"), which
 * stays on the unqueued core even when most probes were queued.
 */
#include "clock/clock_int.h"

#include <stdlib.h>
#include <string.h>

void clock_purity_opts_default(clock_purity_opts_t *opts)
{
    assert(opts);
    opts->guard_ns = 0;
    opts->min_guard_ns = 100;
    opts->auto_k = 4.0;
}

/* Gap error of a probe with both packets received: (rx1 − rx0) − (tx1 − tx0). */
static bool gap_error(const clock_probe_t *p, int64_t *g)
{
    int64_t txg, rxg;
    if (__builtin_sub_overflow(p->tx[1], p->tx[0], &txg) ||
        __builtin_sub_overflow(p->rx[1], p->rx[0], &rxg))
        return false;
    if (txg <= 0 || txg > 1000000000LL)
        return false;
    return !__builtin_sub_overflow(rxg, txg, g);
}

enum clock_purity clock_probe_purity(const clock_probe_t *p, int64_t guard_ns, int64_t center_ns)
{
    assert(p);
    if (!p->rx_ok[0] || !p->rx_ok[1])
        return CLOCK_LOST;
    int64_t g;
    if (!gap_error(p, &g))
        return CLOCK_BAD;
    if (p->rx[1] <= p->rx[0])
        return CLOCK_IMPURE; /* reordered: certainly queued */
    double d = clk_diff(g, center_ns);
    return fabs(d) <= (double)guard_ns ? CLOCK_PURE : CLOCK_IMPURE;
}

/* Automatic guard and centre for one direction from its gap errors g[0..n). */
static void auto_guard(double *g, size_t n, const clock_purity_opts_t *opts, int64_t *guard,
                       int64_t *center)
{
    *center = 0;
    if (n < 8) {
        /* Too few to learn the noise: a generous fixed band. */
        *guard = opts->min_guard_ns > INT64_MAX / 10 ? INT64_MAX : opts->min_guard_ns * 10;
        return;
    }
    qsort(g, n, sizeof *g, clk_cmp_double);
    size_t m = (n + 3) / 4;
    if (m < 2)
        m = 2;
    size_t best = 0;
    double width = g[m - 1] - g[0];
    for (size_t i = 1; i + m - 1 < n; i++) {
        double w = g[i + m - 1] - g[i];
        if (w < width) {
            width = w;
            best = i;
        }
    }
    /* A Gaussian's shortest 25 % interval is ±0.3186σ wide. */
    double sigma = width / 0.6372;
    double c = 0.5 * (g[best] + g[best + m - 1]);
    double gd = opts->auto_k * sigma;
    if (gd < (double)opts->min_guard_ns)
        gd = (double)opts->min_guard_ns;
    if (gd > 1e9)
        gd = 1e9;
    *guard = (int64_t)llround(gd);
    *center = (int64_t)llround(c);
}

static int cmp_point(const void *a, const void *b)
{
    const clock_point_t *p = a, *q = b;
    return (p->x > q->x) - (p->x < q->x);
}

/* Point of a pure probe; forward: (tx, rx − tx), reverse: (rx, tx − rx), packets averaged. */
static bool make_point(const clock_probe_t *p, bool forward, clock_point_t *out)
{
    int64_t d0, d1;
    if (forward) {
        if (__builtin_sub_overflow(p->rx[0], p->tx[0], &d0) ||
            __builtin_sub_overflow(p->rx[1], p->tx[1], &d1))
            return false;
        out->x = clk_mid(p->tx[0], p->tx[1]);
    } else {
        if (__builtin_sub_overflow(p->tx[0], p->rx[0], &d0) ||
            __builtin_sub_overflow(p->tx[1], p->rx[1], &d1))
            return false;
        out->x = clk_mid(p->rx[0], p->rx[1]);
    }
    out->y = clk_mid(d0, d1);
    return true;
}

void clock_edge_points(const clock_probe_t *probes, size_t n, uint32_t a, uint32_t b,
                       const clock_purity_opts_t *opts, clock_point_t *fwd, size_t *nf,
                       clock_point_t *rev, size_t *nr, clock_purity_stats_t *st)
{
    assert(probes || n == 0);
    assert(opts && fwd && rev && nf && nr);
    clock_purity_stats_t local;
    if (st == NULL)
        st = &local;
    memset(st, 0, sizeof *st);
    *nf = *nr = 0;

    int64_t guard[2] = {opts->guard_ns, opts->guard_ns};
    int64_t center[2] = {0, 0};
    if (opts->guard_ns <= 0) {
        double *g = xmalloc((n ? n : 1) * sizeof *g);
        for (int dir = 0; dir < 2; dir++) {
            uint32_t s = dir == 0 ? a : b, d = dir == 0 ? b : a;
            size_t m = 0;
            for (size_t i = 0; i < n; i++) {
                const clock_probe_t *p = &probes[i];
                int64_t e;
                if (p->src == s && p->dst == d && p->rx_ok[0] && p->rx_ok[1] && gap_error(p, &e))
                    g[m++] = (double)e;
            }
            auto_guard(g, m, opts, &guard[dir], &center[dir]);
        }
        free(g);
    }
    st->guard_ns[0] = guard[0];
    st->guard_ns[1] = guard[1];

    for (size_t i = 0; i < n; i++) {
        const clock_probe_t *p = &probes[i];
        int dir;
        if (p->src == a && p->dst == b)
            dir = 0;
        else if (p->src == b && p->dst == a)
            dir = 1;
        else
            continue;
        st->total++;
        enum clock_purity pu = clock_probe_purity(p, guard[dir], center[dir]);
        clock_point_t pt;
        if (pu == CLOCK_PURE && !make_point(p, dir == 0, &pt))
            pu = CLOCK_BAD;
        switch (pu) {
        case CLOCK_PURE:
            st->pure++;
            if (dir == 0)
                fwd[(*nf)++] = pt;
            else
                rev[(*nr)++] = pt;
            break;
        case CLOCK_IMPURE:
            st->impure++;
            break;
        case CLOCK_LOST:
            st->lost++;
            break;
        case CLOCK_BAD:
            st->bad++;
            break;
        }
    }
    qsort(fwd, *nf, sizeof *fwd, cmp_point);
    qsort(rev, *nr, sizeof *rev, cmp_point);
}
