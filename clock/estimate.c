/*
 * Per-edge window fits: the estimators (one const vtable each, registered in
 * the one table below) and the driver that anchors the points, detects clock
 * steps and estimates the uncertainty.
 *
 * Geometry (SPEC §4.2): forward points (x, y) lie above the true offset line
 * θ(x) = a·x + b by the forward one-way delay, reverse points lie below it by
 * the reverse delay.  Queuing only pushes points further away from the line;
 * timestamp noise can push a few across it (the "forbidden zone").
 *
 * svm: the soft-margin maximum-margin line.  With vertical margins the 2-D
 * soft-margin LP separates: for a fixed slope a its optimum places each
 * margin boundary at the mean of the k closest points of its side (k = the
 * soft fraction of the side), so the objective is
 *     F(a) = ½ [ mean_k-lowest(Y − aX | fwd) − mean_k-highest(Y − aX | rev) ],
 * concave in a; its derivative is ½ (mean X of the chosen reverse points −
 * mean X of the chosen forward points), so the optimum is where that
 * derivative changes sign.  k = 1 is the hard-margin SVM (the bisector of the
 * closest pair of hulls); a larger k uses many points near the boundary,
 * which is what averages down timestamp noise.  The soft fraction adapts:
 * 10 % of each side when the window shows queuing (the points far from the
 * boundary are queued and must not count), up to 50 % when nearly all points
 * belong to the unqueued core (noise, not queuing, is what limits the fit).
 * Gross violators far inside the forbidden zone are removed and the fit
 * repeated.
 * Where a side shows queuing, the line is then refitted to the centres of
 * the two sides' unqueued cores (core_refine): the same count of points is
 * a different depth into cores of different sizes.
 *
 * Uncertainty, for every estimator: the spread of the same fit on 8
 * interleaved subsets (each spans the whole window), scaled to the full
 * data, plus the misfit of the line to a bending offset curve (frequency
 * wander) where the window shows one clear of its noise.  Below 128 points
 * a side, a subset holds a dozen points or fewer, too few for svm's margin
 * and cores: there the 8 fits each leave one subset out (a jackknife).
 */
#include "clock/clock_int.h"

#include <stdlib.h>
#include <string.h>

void clock_fit_opts_default(clock_fit_opts_t *opts)
{
    assert(opts);
    opts->min_points = 4;
    opts->soft_frac = 0.10;
    opts->soft_frac_clean = 0.50;
    opts->subsets = 8;
    opts->jackknife_below = 128;
    opts->intervals = 8;
    opts->detect_steps = true;
    opts->step_min_ns = 500;
    opts->coverage_k = 3.0;
    opts->slope_hint = NAN;
    opts->core_sigma[0] = opts->core_sigma[1] = NAN;
}

/* ---- selection of (z, x) pairs by z ---- */

typedef struct zx {
    double z, x;
} zx_t;

/* clk_select for pairs: x travels with its z.  Kept apart from clk_select
 * because it runs inside every svm slope step (a generic element-size
 * version would cost the fit its inner loop). */
static void select_zx(zx_t *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        double a = v[lo].z, b = v[mid].z, c = v[hi].z;
        double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i].z < pivot)
                i++;
            while (v[j].z > pivot)
                j--;
            if (i <= j) {
                zx_t t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
}

/*
 * Mean of z and of X over the k points of a side closest to the line:
 * the lowest Y − aX (lower) or the highest (upper).
 */
static void side_extreme(const clock_side_t *s, double a, size_t k, bool lower, zx_t *tmp,
                         double *zmean, double *xmean)
{
    double sign = lower ? 1.0 : -1.0;
    for (size_t i = 0; i < s->n; i++) {
        tmp[i].z = sign * (s->Y[i] - a * s->X[i]);
        tmp[i].x = s->X[i];
    }
    if (k > s->n)
        k = s->n;
    if (k < s->n)
        select_zx(tmp, s->n, k - 1);
    double sz = 0, sx = 0;
    for (size_t i = 0; i < k; i++) {
        sz += tmp[i].z;
        sx += tmp[i].x;
    }
    *zmean = sign * sz / (double)k;
    *xmean = sx / (double)k;
}

/* Least squares line y = a·x + b. */
static void ols_line(const double *x, const double *y, size_t n, double *a, double *b)
{
    double mx = 0, my = 0;
    for (size_t i = 0; i < n; i++) {
        mx += x[i];
        my += y[i];
    }
    mx /= (double)n;
    my /= (double)n;
    double sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; i++) {
        sxx += (x[i] - mx) * (x[i] - mx);
        sxy += (x[i] - mx) * (y[i] - my);
    }
    *a = sxx > 0 ? sxy / sxx : 0.0;
    *b = my - *a * mx;
}

/* A side's first and last X, and its mean X (0 for no points). */
static void side_extent(const clock_side_t *s, double *lo, double *hi, double *mean)
{
    double sx = 0;
    *lo = INFINITY;
    *hi = -INFINITY;
    for (size_t i = 0; i < s->n; i++) {
        *lo = fmin(*lo, s->X[i]);
        *hi = fmax(*hi, s->X[i]);
        sx += s->X[i];
    }
    *mean = s->n ? sx / (double)s->n : 0.0;
}

static double side_span(const clock_side_t *f, const clock_side_t *r)
{
    double flo, fhi, rlo, rhi, m;
    side_extent(f, &flo, &fhi, &m);
    side_extent(r, &rlo, &rhi, &m);
    return fmax(fhi, rhi) - fmin(flo, rlo);
}

/* A clock 1 % fast is no clock: a start beyond that starts at 0. */
static double plausible_slope(double a)
{
    return isfinite(a) && fabs(a) <= 0.01 ? a : 0.0;
}

/* Starting slope: the mean of the two sides' least-squares slopes. */
static double start_slope(const clock_side_t *f, const clock_side_t *r)
{
    double af = 0, ar = 0, b;
    if (f->n >= 2)
        ols_line(f->X, f->Y, f->n, &af, &b);
    if (r->n >= 2)
        ols_line(r->X, r->Y, r->n, &ar, &b);
    return plausible_slope(0.5 * (af + ar));
}

/*
 * Maximise a concave function of the slope given the sign of its
 * derivative: bracket around a0, then close in on the sign change.  A
 * derivative that keeps its sign a whole unit of slope away (a clock
 * running at twice the other's rate) has no maximum to find: NAN.
 */
typedef double (*grad_fn)(void *ctx, double a);
/* Told the bracket every few steps, so that it may drop data that can no longer matter. */
typedef void (*narrow_fn)(void *ctx, double lo, double hi);

static double maximise_concave(grad_fn grad, narrow_fn narrow, void *ctx, double a0)
{
    /*
     * The start is usually within a ppm of the optimum, and a slope to
     * 1e-11 (10 ps per second) is more than any window resolves.
     */
    double w = 1e-6;
    double lo = a0 - w, hi = a0 + w;
    double glo, ghi;
    while ((glo = grad(ctx, lo)) < 0 && w < 1.0) {
        hi = lo;
        w *= 8;
        lo = a0 - w;
    }
    w = 1e-6;
    while ((ghi = grad(ctx, hi)) > 0 && w < 1.0) {
        lo = hi;
        glo = ghi;
        w *= 8;
        hi = a0 + w;
    }
    if (glo < 0 || ghi > 0)
        return NAN;
    if (glo == 0)
        return lo;
    if (ghi == 0)
        return hi;
    /*
     * The derivative is a step function, nearly linear when many points are
     * in the soft margin: false position (Illinois) finds its sign change in
     * a few steps there; every fourth step bisects, so a hard margin's few big
     * steps cost no more than plain bisection.
     */
    int side = 0;
    for (int it = 0; it < 100 && hi - lo > 1e-11; it++) {
        if (narrow && it % 4 == 0)
            narrow(ctx, lo, hi);
        double mid = 0.5 * (lo + hi);
        if (it % 4 != 3) {
            double fp = (lo * ghi - hi * glo) / (ghi - glo);
            if (fp > lo && fp < hi)
                mid = fp;
        }
        double g = grad(ctx, mid);
        if (g > 0) {
            lo = mid;
            glo = g;
            if (side == 1)
                ghi *= 0.5;
            side = 1;
        } else if (g < 0) {
            hi = mid;
            ghi = g;
            if (side == -1)
                glo *= 0.5;
            side = -1;
        } else {
            return mid;
        }
    }
    return 0.5 * (lo + hi);
}

/* ---- svm ---- */

typedef struct svm_ctx {
    clock_side_t f, r; /* current candidates */
    size_t kf, kr;
    zx_t *tmp;
    double *buf;     /* two halves, each room for X and Y of both sides */
    size_t nf0, nr0; /* original side sizes */
    int half;        /* where the candidates are: -1 the caller's arrays, else 0/1 */
    double mxf, mxr; /* mean X of each whole side */
} svm_ctx_t;

/*
 * Each side's margin is measured from that side's own mean X.  A constant
 * per side ranks its points the same for every slope, so the k closest
 * points do not change; what changes is where the objective's slope
 * balances.  At the true slope a side's k closest points are a random draw
 * from it, their mean X is the side's own; measured from 0 (or any common
 * origin), the derivative there is half the distance between the two
 * sides' means, and where one side covers only part of the window (its
 * probes lost, or queued and filtered out, for the rest) that pulled the
 * line off by hundreds of ns (a clean window, 400 points a side, σ 50 ns,
 * forward over its first half: 130 ns off at the median, none of 200
 * draws inside its uncertainty; over its first 10 %: 672 ns).
 */
static double svm_grad(void *vctx, double a)
{
    svm_ctx_t *c = vctx;
    double zf, xf, zr, xr;
    side_extreme(&c->f, a, c->kf, true, c->tmp, &zf, &xf);
    side_extreme(&c->r, a, c->kr, false, c->tmp, &zr, &xr);
    return 0.5 * ((xr - c->mxr) - (xf - c->mxf));
}

/*
 * Keep only the points that can still be among a side's k closest for some
 * slope in [lo, hi]: over the bracket a point's Y − aX moves by at most
 * w·|X| (w the half-width), so one more than 2·w·max|X| beyond the k-th
 * value at the middle never makes the cut.  Exact, and late in the search
 * it leaves little more than k points per side.
 */
static void narrow_side(const clock_side_t *in, double mid, double w, size_t k, bool lower,
                        zx_t *tmp, double *X, double *Y, clock_side_t *out)
{
    double sign = lower ? 1.0 : -1.0, xmax = 0;
    for (size_t i = 0; i < in->n; i++) {
        tmp[i].z = sign * (in->Y[i] - mid * in->X[i]);
        tmp[i].x = in->X[i];
        xmax = fmax(xmax, fabs(in->X[i]));
    }
    if (k >= in->n) {
        *out = *in;
        return;
    }
    select_zx(tmp, in->n, k - 1);
    double zk = tmp[k - 1].z;
    for (size_t i = 0; i < k; i++)
        zk = fmax(zk, tmp[i].z);
    double limit = zk + 2.0 * w * xmax;
    size_t m = 0;
    for (size_t i = 0; i < in->n; i++) {
        if (sign * (in->Y[i] - mid * in->X[i]) <= limit) {
            X[m] = in->X[i];
            Y[m] = in->Y[i];
            m++;
        }
    }
    *out = (clock_side_t){X, Y, m};
}

static void svm_narrow(void *vctx, double lo, double hi)
{
    svm_ctx_t *c = vctx;
    double mid = 0.5 * (lo + hi), w = 0.5 * (hi - lo);
    int next = c->half == 0 ? 1 : 0;
    double *base = c->buf + (size_t)next * 2 * (c->nf0 + c->nr0);
    double *Xf = base, *Yf = Xf + c->nf0, *Xr = Yf + c->nf0, *Yr = Xr + c->nr0;
    clock_side_t nf, nr;
    narrow_side(&c->f, mid, w, c->kf, true, c->tmp, Xf, Yf, &nf);
    narrow_side(&c->r, mid, w, c->kr, false, c->tmp, Xr, Yr, &nr);
    /* narrow_side hands back its input when it kept everything: copy so halves stay apart. */
    if (nf.X != Xf) {
        memcpy(Xf, nf.X, nf.n * sizeof *Xf);
        memcpy(Yf, nf.Y, nf.n * sizeof *Yf);
        nf = (clock_side_t){Xf, Yf, nf.n};
    }
    if (nr.X != Xr) {
        memcpy(Xr, nr.X, nr.n * sizeof *Xr);
        memcpy(Yr, nr.Y, nr.n * sizeof *Yr);
        nr = (clock_side_t){Xr, Yr, nr.n};
    }
    c->f = nf;
    c->r = nr;
    c->half = next;
}

static size_t soft_k(size_t n, double frac)
{
    double k = round(frac * (double)n);
    if (k < 1)
        k = 1;
    if (k > (double)n)
        k = (double)n;
    return (size_t)k;
}

static double first_slope(const clock_side_t *f, const clock_side_t *r, double hint)
{
    return isfinite(hint) ? plausible_slope(hint) : start_slope(f, r);
}

/* The error of a window no slope fits: most often one side covers only part of it. */
static int no_slope(char *err, const char *name, const clock_side_t *f, const clock_side_t *r)
{
    return base_err(err,
                    "%s: no slope separates the sides (forward over %.3f s, reverse over %.3f s "
                    "of the window)",
                    name, 1e-9 * side_span(f, f), 1e-9 * side_span(r, r));
}

/* False (out untouched) where no slope gives the sides a widest margin. */
static bool svm_core(const clock_side_t *f, const clock_side_t *r, double frac, double hint,
                     zx_t *tmp, clock_line_t *out)
{
    size_t n = f->n + r->n;
    double flo, fhi, fmean, rlo, rhi, rmean;
    side_extent(f, &flo, &fhi, &fmean);
    side_extent(r, &rlo, &rhi, &rmean);
    svm_ctx_t c = {*f,
                   *r,
                   soft_k(f->n, frac),
                   soft_k(r->n, frac),
                   tmp,
                   xmalloc((4 * n + 1) * sizeof(double)),
                   f->n,
                   r->n,
                   -1,
                   fmean,
                   rmean};
    double a;
    if (fmax(flo, rlo) > fmin(fhi, rhi))
        /*
         * Sides apart in time bound the line from above in one stretch and
         * from below in another: its offset between them is an extrapolation
         * of each side's own edge, not a margin.
         */
        a = NAN;
    else if (fmax(fhi, rhi) > fmin(flo, rlo))
        a = maximise_concave(svm_grad, svm_narrow, &c, first_slope(f, r, hint));
    else
        a = 0.0;
    free(c.buf);
    if (!isfinite(a))
        return false;
    double zf, xf, zr, xr;
    side_extreme(f, a, c.kf, true, tmp, &zf, &xf);
    side_extreme(r, a, c.kr, false, tmp, &zr, &xr);
    out->a = a;
    out->b = 0.5 * (zf + zr);
    out->margin = 0.5 * (zf - zr);
    return true;
}

/*
 * How deep into the forbidden zone a side's own noise reaches: its points'
 * distances to the line (dist, n ≥ 20, on the side's own side: < 0 is the
 * forbidden zone) from the lower tail, where queuing does not reach.
 * Below the returned limit a point is a gross error, not noise; *depth
 * (may be NULL) gets 6σ of that noise (at least 20 ns), the limit's
 * distance below the 5 % quantile.
 */
static double gross_limit(const double *dist, size_t n, double *depth)
{
    double *tmp = xmalloc(n * sizeof *tmp);
    memcpy(tmp, dist, n * sizeof *tmp);
    /* The 25 % quantile first: the 5 % one is then among the values below it. */
    size_t k05 = (size_t)(0.05 * (double)(n - 1)), k25 = (size_t)(0.25 * (double)(n - 1));
    double q25 = clk_select(tmp, n, k25);
    double q05 = k05 < k25 ? clk_select(tmp, k25, k05) : q25;
    free(tmp);
    double sigma = (q25 - q05) / 0.97; /* Gaussian: z(0.25) − z(0.05) = 0.97 */
    double d = fmax(6.0 * sigma, 20.0);
    if (depth)
        *depth = d;
    return q05 - d;
}

/* Distances of a side's points to the line, on the side's own side. */
static void side_dist(const clock_side_t *s, const clock_line_t *ln, bool lower, double *dist)
{
    for (size_t i = 0; i < s->n; i++) {
        double d = s->Y[i] - (ln->a * s->X[i] + ln->b);
        dist[i] = lower ? d : -d;
    }
}

/*
 * Points far inside the forbidden zone (beyond what the side's own noise
 * explains) are gross errors, not noise: flag them for removal.  Returns the
 * number kept.
 */
static size_t keep_plausible(const clock_side_t *s, const clock_line_t *ln, bool lower,
                             double *dist, double *X, double *Y)
{
    size_t n = s->n;
    if (n < 20) {
        memcpy(X, s->X, n * sizeof *X);
        memcpy(Y, s->Y, n * sizeof *Y);
        return n;
    }
    side_dist(s, ln, lower, dist);
    double limit = gross_limit(dist, n, NULL);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (dist[i] >= limit) {
            X[m] = s->X[i];
            Y[m] = s->Y[i];
            m++;
        }
    }
    return m;
}

/*
 * Share of a side that looks like the unqueued core: the core's centre and σ
 * come from the lowest quarter of the distances to the line (queuing only
 * adds on top), and points beyond centre + 2σ are counted as queued.
 */
static double clean_share(const clock_side_t *s, const clock_line_t *ln, bool lower, double *d)
{
    size_t n = s->n;
    if (n < 20)
        return NAN;
    for (size_t i = 0; i < n; i++) {
        double v = s->Y[i] - (ln->a * s->X[i] + ln->b);
        d[i] = lower ? v : -v;
    }
    double *t = d + n;
    memcpy(t, d, n * sizeof *t);
    double q05 = clk_select(t, n, (size_t)(0.05 * (double)(n - 1)));
    double q25 = clk_select(t, n, (size_t)(0.25 * (double)(n - 1)));
    double sigma = (q25 - q05) / 0.97, centre = q25 + 0.674 * sigma;
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += d[i] <= centre + 2 * sigma;
    return (double)c / (double)n / 0.977;
}

/*
 * Each side's unqueued core: the centre and σ of the Gaussian its unqueued
 * points form around the line (distances d ≥ 0 on the side's own side).
 * Queuing only adds on the far side and is sparse next to the core, so a
 * mean over a window of ±CORE_W σ around the centre (mean shift) finds the
 * centre, and the points below the centre, which are core alone, give σ.
 * It starts one spread (twice the RMS of the k closest points) above the
 * side's soft-margin boundary (their mean), which lies below the centre.
 */
#define CORE_W        2.5
#define CORE_HALF_RMS 0.9546 /* RMS of a unit half-normal cut at CORE_W */
#define CORE_PEAK     0.25   /* most points just beyond a core, for each one in it */
#define CORE_FAR      0.05   /* least share of a side queued well beyond its core */

static bool core_side(const double *d, size_t n, size_t k, double given, double *tmp, double *mu,
                      double *sigma, double *far_share)
{
    bool fixed = isfinite(given);
    if (n < (fixed ? 4 : 20) || k < 1)
        return false;
    memcpy(tmp, d, n * sizeof *tmp);
    clk_select(tmp, n, k - 1);
    double m = 0, v = 0;
    for (size_t i = 0; i < k; i++)
        m += tmp[i];
    m /= (double)k;
    for (size_t i = 0; i < k; i++)
        v += (tmp[i] - m) * (tmp[i] - m);
    double s = fixed ? given : fmax(2.0 * sqrt(v / (double)k), 1.0);
    double c = m + s;
    for (int it = 0; it < 40; it++) {
        double ss = 0, sm = 0;
        size_t nl = 0, nw = 0;
        for (size_t i = 0; i < n; i++) {
            double e = d[i] - c;
            if (e < 0 && e > -CORE_W * s) {
                ss += e * e;
                nl++;
            }
            if (fabs(e) < CORE_W * s) {
                sm += d[i];
                nw++;
            }
        }
        if (nl >= 3 && !fixed)
            s = fmax(sqrt(ss / (double)nl) / CORE_HALF_RMS, 1.0);
        if (nw < (fixed ? 2u : 5u))
            return false;
        double nc = sm / (double)nw;
        bool done = fabs(nc - c) < 1e-3 * s;
        c = nc;
        if (done)
            break;
    }
    if (!isfinite(c) || !isfinite(s))
        return false;
    if (!fixed) {
        /*
         * A core is a peak: just beyond it (the next 2·CORE_W σ) lie few
         * points, a Gaussian's 0.6 % and the thin start of the queue's tail.
         * Delays spread evenly over microseconds (scheduling on a software
         * path) have no core to centre on; their edge is the better guide.
         */
        size_t in = 0, beyond = 0, far = 0;
        for (size_t i = 0; i < n; i++) {
            double e = d[i] - c;
            in += fabs(e) < CORE_W * s;
            beyond += e >= CORE_W * s && e < 3.0 * CORE_W * s;
            far += e >= 3.0 * CORE_W * s;
        }
        if ((double)beyond > CORE_PEAK * (double)in)
            return false;
        *far_share = (double)far / (double)n;
    }
    *mu = c;
    *sigma = s;
    return true;
}

/*
 * The soft margin puts both boundaries at the same count of points from
 * each side's edge.  When one direction queues more than the other, its
 * unqueued core is smaller, the same count reaches deeper into it, and the
 * midline moves toward the busier side by up to a third of a point's noise
 * (docs/CLOCK.md section 2 has the figures).
 * The centres of the two cores carry no such bias: refit the line by least
 * squares on the core points alone (within ±CORE_W σ of each side's centre),
 * one slope, one intercept per side, the offset halfway between.  hint: the
 * two cores' σ from the whole window (a subset's fit), or NULL to find them.
 * False (line unchanged) when a side's core cannot be found.
 */
static bool core_refine(const clock_side_t *f, const clock_side_t *r, size_t kf, size_t kr,
                        const double *hint, clock_line_t *ln)
{
    const clock_side_t *sd[2] = {f, r};
    const size_t ks[2] = {kf, kr};
    size_t nmax = f->n > r->n ? f->n : r->n;
    double *d[2], *tmp = xmalloc((f->n + r->n + nmax + 1) * sizeof *tmp);
    d[0] = tmp + nmax + 1;
    d[1] = d[0] + f->n;
    clock_line_t cur = *ln;
    bool ok = false;
    for (int round = 0; round < 3; round++) {
        double mu[2], sg[2], far[2] = {0, 0};
        for (int s = 0; s < 2; s++) {
            double sign = s == 0 ? 1.0 : -1.0;
            for (size_t i = 0; i < sd[s]->n; i++)
                d[s][i] = sign * (sd[s]->Y[i] - cur.a * sd[s]->X[i] - cur.b);
            if (!core_side(d[s], sd[s]->n, ks[s], hint ? hint[s] : NAN, tmp, &mu[s], &sg[s],
                           &far[s]))
                goto done;
        }
        /*
         * Only a queue well apart from its core biases the soft margin.  Delays
         * that spread evenly from their edge (a software path's scheduling:
         * one-sided, skewed, wider one way than the other) make a "core" as
         * wide as the side; its centre then follows the side's width, and the
         * edge is the better guide (three namespaces on one host: 0.44 µs
         * median node error with the edge, 0.70 µs centred).
         */
        if (round == 0 && hint == NULL && fmax(far[0], far[1]) < CORE_FAR)
            goto done;
        double sx[2] = {0, 0}, sy[2] = {0, 0}, sxx = 0, sxy = 0;
        for (int s = 0; s < 2; s++) {
            size_t cnt = 0;
            for (size_t i = 0; i < sd[s]->n; i++)
                if (fabs(d[s][i] - mu[s]) < CORE_W * sg[s]) {
                    sx[s] += sd[s]->X[i];
                    sy[s] += sd[s]->Y[i];
                    cnt++;
                }
            if (cnt < (hint ? 2u : 10u))
                goto done;
            sx[s] /= (double)cnt;
            sy[s] /= (double)cnt;
            for (size_t i = 0; i < sd[s]->n; i++)
                if (fabs(d[s][i] - mu[s]) < CORE_W * sg[s]) {
                    double dx = sd[s]->X[i] - sx[s];
                    sxx += dx * dx;
                    sxy += dx * (sd[s]->Y[i] - sy[s]);
                }
        }
        double a = sxx > 0 ? sxy / sxx : cur.a;
        double b = 0.5 * ((sy[0] - a * sx[0]) + (sy[1] - a * sx[1]));
        /* A core far from where the soft margin put the line is not a core. */
        if (!isfinite(a) || !isfinite(b) || fabs(b - ln->b) > 3.0 * fmax(sg[0], sg[1]) + 1.0)
            goto done;
        bool converged = fabs(b - cur.b) < 1e-3 * fmin(sg[0], sg[1]);
        cur.a = a;
        cur.b = b;
        cur.core_sigma[0] = sg[0];
        cur.core_sigma[1] = sg[1];
        ok = true;
        if (converged)
            break;
    }
done:
    free(tmp);
    if (ok)
        *ln = cur;
    return ok;
}

int clk_fit_svm(const clock_side_t *fwd, const clock_side_t *rev, const clock_fit_opts_t *opts,
                clock_line_t *out, char *err)
{
    size_t n = fwd->n + rev->n;
    zx_t *tmp = xmalloc((n ? n : 1) * sizeof *tmp);
    double *buf = xmalloc((3 * n + 1) * sizeof *buf);
    double *Xf = buf, *Yf = buf + fwd->n, *Xr = buf + 2 * fwd->n, *Yr = Xr + rev->n;
    double *dist = buf + 2 * n;
    clock_side_t f = *fwd, r = *rev;
    int rc = BASE_OK;
    if (!svm_core(&f, &r, opts->soft_frac, opts->slope_hint, tmp, out)) {
        rc = no_slope(err, "svm", fwd, rev);
        goto done;
    }
    for (int round = 0; round < 3; round++) {
        size_t mf = keep_plausible(&f, out, true, dist, Xf, Yf);
        size_t mr = keep_plausible(&r, out, false, dist, Xr, Yr);
        if (mf == f.n && mr == r.n)
            break;
        if (mf < 2 || mr < 2)
            break;
        f = (clock_side_t){Xf, Yf, mf};
        r = (clock_side_t){Xr, Yr, mr};
        if (!svm_core(&f, &r, opts->soft_frac, out->a, tmp, out))
            break;
    }
    out->frac = opts->soft_frac;
    out->core_sigma[0] = out->core_sigma[1] = NAN;
    /*
     * Noise, not queuing: when nearly every point belongs to the unqueued
     * core, a wider soft margin averages many more points near the boundary.
     */
    if (opts->soft_frac_clean > opts->soft_frac) {
        double *d = xmalloc((2 * (f.n > r.n ? f.n : r.n) + 1) * sizeof *d);
        double c = fmin(clean_share(&f, out, true, d), clean_share(&r, out, false, d));
        free(d);
        if (isfinite(c)) {
            double w = (c - 0.6) / 0.3;
            w = w < 0 ? 0 : (w > 1 ? 1 : w);
            double frac = opts->soft_frac + w * (opts->soft_frac_clean - opts->soft_frac);
            /* Half of each side can be too many to pin a slope: the narrower margin stands. */
            if (frac > opts->soft_frac + 1e-3 && svm_core(&f, &r, frac, out->a, tmp, out))
                out->frac = frac;
        }
    }
    /*
     * Only where a side shows queuing: when both are noise only, the soft
     * margin already takes half of each side, the same share of two cores
     * of the same size.  A subset tries to refit iff its window did (it is
     * handed the window's core σ; its soft fraction is the window's); one
     * too small to find its cores keeps the soft margin, which widens the
     * subsets' spread (more so in windows of a few dozen points a side).
     * The margin reported stays the soft margin's.
     */
    /* Hints come in pairs (a subset's, from its window); one alone is none. */
    bool hinted = isfinite(opts->core_sigma[0]) && isfinite(opts->core_sigma[1]);
    if (hinted || out->frac < opts->soft_frac_clean - 1e-3)
        core_refine(&f, &r, soft_k(f.n, out->frac), soft_k(r.n, out->frac),
                    hinted ? opts->core_sigma : NULL, out);
done:
    free(buf);
    free(tmp);
    return rc;
}

/* ---- hull ---- */

typedef struct hull_ctx {
    const clock_side_t *f, *r;
} hull_ctx_t;

/* Hard margin min(fwd Y − aX) − max(rev Y − aX) and the X of the two extreme points. */
static double hard_margin(const hull_ctx_t *c, double a, double *xf, double *xr, size_t *imin,
                          size_t *jmax, double *u, double *l)
{
    double lo = INFINITY, hi = -INFINITY;
    size_t im = 0, jm = 0;
    for (size_t i = 0; i < c->f->n; i++) {
        double z = c->f->Y[i] - a * c->f->X[i];
        if (z < lo) {
            lo = z;
            im = i;
        }
    }
    for (size_t j = 0; j < c->r->n; j++) {
        double z = c->r->Y[j] - a * c->r->X[j];
        if (z > hi) {
            hi = z;
            jm = j;
        }
    }
    if (xf)
        *xf = c->f->X[im];
    if (xr)
        *xr = c->r->X[jm];
    if (imin)
        *imin = im;
    if (jmax)
        *jmax = jm;
    if (u)
        *u = lo;
    if (l)
        *l = hi;
    return lo - hi;
}

static double hull_grad(void *vctx, double a)
{
    double xf, xr;
    hard_margin(vctx, a, &xf, &xr, NULL, NULL, NULL, NULL);
    return xr - xf;
}

/*
 * Where the hard margin crosses zero, walking from a feasible slope am in
 * direction dir; NAN where it does not within a slope of 1 (sides that
 * overlap for next to no time bound nothing that way).
 */
static double feasible_edge(const hull_ctx_t *c, double am, double dir)
{
    double w = 1e-7;
    while (hard_margin(c, am + dir * w, NULL, NULL, NULL, NULL, NULL, NULL) >= 0) {
        w *= 4;
        if (w > 1.0)
            return NAN;
    }
    double in = am + dir * (w / 4), out = am + dir * w;
    if (w <= 1e-7)
        in = am;
    for (int it = 0; it < 100 && fabs(out - in) > 1e-15; it++) {
        double mid = 0.5 * (in + out);
        if (hard_margin(c, mid, NULL, NULL, NULL, NULL, NULL, NULL) >= 0)
            in = mid;
        else
            out = mid;
    }
    return in;
}

/* Violating pairs dropped one at a time before the batches. */
#define HULL_ONE_BY_ONE 32

size_t clk_drop_extreme(double *X, double *Y, size_t n, double a, size_t k, bool lowest, double *z)
{
    if (k == 0 || k >= n)
        return k >= n ? 0 : n;
    double *sel = z + n;
    for (size_t i = 0; i < n; i++)
        z[i] = sel[i] = lowest ? Y[i] - a * X[i] : a * X[i] - Y[i];
    double cut = clk_select(sel, n, k - 1); /* the k-th worst */
    size_t below = 0, ties = 0, out = 0;
    for (size_t i = 0; i < n; i++)
        below += z[i] < cut;
    for (size_t i = 0; i < n; i++) {
        if (z[i] < cut || (z[i] == cut && ties++ < k - below))
            continue;
        X[out] = X[i];
        Y[out++] = Y[i];
    }
    return out;
}

int clk_fit_hull(const clock_side_t *fwd, const clock_side_t *rev, const clock_fit_opts_t *opts,
                 clock_line_t *out, char *err)
{
    size_t n = fwd->n + rev->n;
    double *buf = xmalloc((3 * n + 1) * sizeof *buf);
    double *Xf = buf, *Yf = buf + fwd->n, *Xr = buf + 2 * fwd->n, *Yr = Xr + rev->n;
    /*
     * Gross errors first, against a soft-margin line: a hard margin can
     * "separate" a few far violators by tilting, which no later step undoes.
     */
    zx_t *tmp = xmalloc((n ? n : 1) * sizeof *tmp);
    clock_line_t soft;
    clock_side_t f = *fwd, r = *rev;
    bool found = svm_core(&f, &r, opts->soft_frac, opts->slope_hint, tmp, &soft);
    free(tmp);
    if (!found)
        goto unbounded;
    f = (clock_side_t){Xf, Yf, keep_plausible(fwd, &soft, true, buf + 2 * n, Xf, Yf)};
    r = (clock_side_t){Xr, Yr, keep_plausible(rev, &soft, false, buf + 2 * n, Xr, Yr)};
    if (f.n < 2 || r.n < 2) {
        memcpy(Xf, fwd->X, fwd->n * sizeof *Xf);
        memcpy(Yf, fwd->Y, fwd->n * sizeof *Yf);
        memcpy(Xr, rev->X, rev->n * sizeof *Xr);
        memcpy(Yr, rev->Y, rev->n * sizeof *Yr);
        f.n = fwd->n;
        r.n = rev->n;
    }
    hull_ctx_t c = {&f, &r};
    bool flat = side_span(&f, &r) <= 0;
    /*
     * Overlapping hulls (noise in the forbidden zone): drop the worst
     * violators, a few at most: one pair at a time, the line fitted again
     * after each, for the first HULL_ONE_BY_ONE pairs; then in batches that
     * double.  One pair a pass made sides that overlap throughout (noise
     * beyond the delay) cost n/50 fits of n points: 56 s for one window of
     * 320 000 points, where svm took 1.5 s.
     */
    size_t budget = n / 50 + 1, dropped = 0, batch = 2;
    double am = 0, *zs = NULL; /* the batches' scratch, made on the first */
    for (;;) {
        am = flat ? 0.0 : maximise_concave(hull_grad, NULL, &c, soft.a);
        if (!isfinite(am)) {
            free(zs);
            goto unbounded;
        }
        size_t im, jm;
        double m = hard_margin(&c, am, NULL, NULL, &im, &jm, NULL, NULL);
        if (m >= 0 || budget == 0 || f.n <= 2 || r.n <= 2)
            break;
        if (dropped < HULL_ONE_BY_ONE) {
            Xf[im] = Xf[f.n - 1];
            Yf[im] = Yf[f.n - 1];
            f.n--;
            Xr[jm] = Xr[r.n - 1];
            Yr[jm] = Yr[r.n - 1];
            r.n--;
            budget--;
            dropped++;
            continue;
        }
        size_t k = batch < budget ? batch : budget;
        k = k < f.n - 2 ? k : f.n - 2;
        k = k < r.n - 2 ? k : r.n - 2;
        if (zs == NULL)
            zs = xmalloc(2 * (f.n > r.n ? f.n : r.n) * sizeof *zs);
        f.n = clk_drop_extreme(Xf, Yf, f.n, am, k, true, zs);
        r.n = clk_drop_extreme(Xr, Yr, r.n, am, k, false, zs);
        budget -= k;
        dropped += k;
        batch *= 2;
    }
    free(zs);
    double a = am;
    if (!flat && hard_margin(&c, am, NULL, NULL, NULL, NULL, NULL, NULL) >= 0) {
        /*
         * Each end of the feasible slopes is a line through a forward point
         * and a reverse point far apart in time, off the truth's slope by
         * the gap G between the sides over that time: +G/L_hi with the
         * forward side's last point and the reverse side's first, −G/L_lo
         * with the reverse side's last and the forward side's first.  Where
         * one side goes on alone the two L differ and the middle of the two
         * ends was pulled by G/2 (1/L_hi − 1/L_lo): 1.3 µs off with the
         * forward side over 90 % of the window, 175 µs over 10 %, at
         * uncertainties of tens of ns.  Weighted by their L, the pulls
         * cancel whatever the coverage.  An end that nothing bounds stands
         * at am, unweighted: its L would put the line on the band's edge.
         */
        double lo = feasible_edge(&c, am, -1.0), hi = feasible_edge(&c, am, 1.0);
        double flo, fhi, rlo, rhi, m;
        side_extent(&f, &flo, &fhi, &m);
        side_extent(&r, &rlo, &rhi, &m);
        double llo = fmax(rhi - flo, 0), lhi = fmax(fhi - rlo, 0);
        if (isfinite(lo) && isfinite(hi) && llo + lhi > 0)
            a = (llo * lo + lhi * hi) / (llo + lhi);
        else
            a = 0.5 * ((isfinite(lo) ? lo : am) + (isfinite(hi) ? hi : am));
    }
    double u, l;
    hard_margin(&c, a, NULL, NULL, NULL, NULL, &u, &l);
    out->a = a;
    out->b = 0.5 * (u + l);
    out->margin = 0.5 * (u - l);
    free(buf);
    return BASE_OK;
unbounded:
    free(buf);
    return no_slope(err, "hull", fwd, rev);
}

/* ---- minrtt and ols: per-pair offsets, NTP style ---- */

/*
 * minrtt's spread: its line runs through the interval minima, so what
 * they scatter by is what it is off by, and each interval's runners-up
 * (the next smallest round trips: MINRTT_SPREAD_K in all) scatter alike
 * and give that scatter more points than the 8 minima alone (whose
 * σ, from 6 degrees of freedom, made pooled maps that trusted the windows
 * it read low: swts covered 92.4 %).  Subsets of the points said
 * otherwise both ways: stamp noise leaves a subset's minima as noisy as
 * the whole window's, so their spread over 8 read too narrow (35 of 40
 * windows covered at 1.9× the median error, test_minrtt_uncertainty), and
 * under queuing a subset's few points have far worse minima than the
 * window's many (18× there, about 100× on busy edges).  With fewer than
 * 3 minima or 5 residuals these say nothing, and the subsets are used.
 */
#define MINRTT_SPREAD_K 3

static void minrtt_spread(const double *bx, size_t nb, const double *rx, const double *ry,
                          size_t nr, clock_line_t *ln)
{
    ln->own_var = false;
    if (nb < 3 || nr < 5)
        return;
    double mx = 0;
    for (size_t i = 0; i < nb; i++)
        mx += bx[i];
    mx /= (double)nb;
    double sxx = 0, ss = 0;
    for (size_t i = 0; i < nb; i++)
        sxx += (bx[i] - mx) * (bx[i] - mx);
    for (size_t i = 0; i < nr; i++) {
        double r = ry[i] - (ln->a * rx[i] + ln->b);
        ss += r * r;
    }
    if (!(sxx > 0))
        return;
    double s2 = ss / (double)(nr - 2);
    ln->own_var = true;
    ln->var_a = s2 / sxx;
    ln->var_b = s2 * (1.0 / (double)nb + mx * mx / sxx);
}

typedef struct rtt_pair {
    double x, off, rtt;
    double dx; /* forward point's X − reverse point's */
} rtt_pair_t;

typedef struct ranked {
    double key, near; /* near: how far above (forward) or below (reverse) the line it flew */
    size_t i;
} ranked_t;

static int cmp_ranked(const void *a, const void *b)
{
    const ranked_t *p = a, *q = b;
    if (p->key != q->key)
        return p->key < q->key ? -1 : 1;
    if (p->near != q->near)
        return p->near < q->near ? -1 : 1;
    return (p->i > q->i) - (p->i < q->i);
}

/*
 * A side's points in order of X + half·Y.  Points of equal key go by how
 * near the line they flew, which the other end sees alike (its Y is −Y, and
 * the side the other): by input order, the two ends paired them otherwise
 * (ols 2.5–6.2 ns apart with one point in 40 sharing another's key).
 */
static ranked_t *side_order(const clock_side_t *s, bool lower, double half)
{
    ranked_t *o = xmalloc((s->n ? s->n : 1) * sizeof *o);
    bool sorted = true;
    for (size_t i = 0; i < s->n; i++) {
        o[i] = (ranked_t){s->X[i] + half * s->Y[i], lower ? s->Y[i] : -s->Y[i], i};
        sorted = sorted && (i == 0 || cmp_ranked(&o[i - 1], &o[i]) < 0);
    }
    /* Nearly always so already (probes ms apart, flights µs long): no sort then. */
    if (!sorted)
        qsort(o, s->n, sizeof *o, cmp_ranked);
    return o;
}

/* Pair every point with the nearest point of the other direction. */
static size_t make_pairs(const clock_side_t *f, const clock_side_t *r, rtt_pair_t *out)
{
    size_t m = 0;
    ranked_t *of = side_order(f, true, 0), *orv = side_order(r, false, 0);
    for (int pass = 0; pass < 2; pass++) {
        const clock_side_t *a = pass == 0 ? f : r, *b = pass == 0 ? r : f;
        const ranked_t *oa = pass == 0 ? of : orv, *ob = pass == 0 ? orv : of;
        size_t j = 0;
        for (size_t ia = 0; ia < a->n && b->n; ia++) {
            double xa = oa[ia].key;
            while (j + 1 < b->n && ob[j + 1].key <= xa)
                j++;
            size_t k = j;
            if (j + 1 < b->n && fabs(ob[j + 1].key - xa) < fabs(ob[j].key - xa))
                k = j + 1;
            size_t i = oa[ia].i, kb = ob[k].i;
            double yf = pass == 0 ? a->Y[i] : b->Y[kb];
            double yr = pass == 0 ? b->Y[kb] : a->Y[i];
            out[m].x = 0.5 * (a->X[i] + b->X[kb]);
            out[m].off = 0.5 * (yf + yr);
            out[m].rtt = yf - yr;
            out[m].dx = pass == 0 ? a->X[i] - b->X[kb] : b->X[kb] - a->X[i];
            m++;
        }
    }
    free(of);
    free(orv);
    return m;
}

int clk_fit_minrtt(const clock_side_t *fwd, const clock_side_t *rev, const clock_fit_opts_t *opts,
                   clock_line_t *out, char *err)
{
    (void)err;
    rtt_pair_t *p = xmalloc((fwd->n + rev->n) * sizeof *p);
    size_t m = make_pairs(fwd, rev, p);
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < m; i++) {
        lo = fmin(lo, p[i].x);
        hi = fmax(hi, p[i].x);
    }
    size_t ni = opts->intervals ? opts->intervals : 1;
    if (ni > CLOCK_MINRTT_INTERVALS_MAX)
        ni = CLOCK_MINRTT_INTERVALS_MAX; /* more than there are pairs to fill them */
    /* Each interval's MINRTT_SPREAD_K smallest round trips, smallest first. */
    const size_t K = MINRTT_SPREAD_K;
    size_t *best = xmalloc(ni * K * sizeof *best);
    for (size_t k = 0; k < ni * K; k++)
        best[k] = SIZE_MAX;
    for (size_t i = 0; i < m; i++) {
        size_t k = hi > lo ? (size_t)((p[i].x - lo) / (hi - lo) * (double)ni) : 0;
        if (k >= ni)
            k = ni - 1;
        size_t *bk = best + k * K, j = K;
        bool dup = false;
        while (j > 0 && (bk[j - 1] == SIZE_MAX || p[i].rtt < p[bk[j - 1]].rtt ||
                         (p[i].rtt == p[bk[j - 1]].rtt && p[i].x < p[bk[j - 1]].x))) {
            j--;
        }
        /* Both passes of make_pairs may make the same pair: it counts once. */
        for (size_t q = 0; q < K && bk[q] != SIZE_MAX; q++)
            dup = dup ||
                  (p[bk[q]].rtt == p[i].rtt && p[bk[q]].off == p[i].off && p[bk[q]].x == p[i].x);
        if (j == K || dup)
            continue;
        memmove(bk + j + 1, bk + j, (K - 1 - j) * sizeof *bk);
        bk[j] = i;
    }
    double *bx = xmalloc(2 * ni * (K + 1) * sizeof *bx), *by = bx + ni;
    double *rx = by + ni, *ry = rx + ni * K;
    size_t nb = 0, nr = 0;
    for (size_t k = 0; k < ni; k++) {
        if (best[k * K] != SIZE_MAX) {
            bx[nb] = p[best[k * K]].x;
            by[nb] = p[best[k * K]].off;
            nb++;
        }
        for (size_t j = 0; j < K && best[k * K + j] != SIZE_MAX; j++) {
            rx[nr] = p[best[k * K + j]].x;
            ry[nr] = p[best[k * K + j]].off;
            nr++;
        }
    }
    ols_line(bx, by, nb, &out->a, &out->b);
    minrtt_spread(bx, nb, rx, ry, nr, out);
    /*
     * The margin is half the mean round trip of the pairs the line runs
     * through, once the drift between a pair's two points is taken out
     * (500 ppm over the 400 µs between them would otherwise pass for 200
     * ns of round trip).  The window's one smallest round trip stays where
     * it was when a host stamps late for part of the window, while the
     * minima of the intervals it covers, and the line through them, move
     * (slowhost at the agents' rate: 93.3 → 98.0 % of maps covered per
     * window, live 92.8 → 94.7 %, once the solver saw such margins rise).
     */
    double sum = 0;
    for (size_t k = 0; k < ni; k++) {
        size_t i = best[k * K];
        if (i != SIZE_MAX)
            sum += p[i].rtt - out->a * p[i].dx;
    }
    double rtt = nb ? sum / (double)nb : INFINITY;
    out->margin = 0.5 * rtt;
    free(bx);
    free(best);
    free(p);
    return BASE_OK;
}

int clk_fit_ols(const clock_side_t *fwd, const clock_side_t *rev, const clock_fit_opts_t *opts,
                clock_line_t *out, char *err)
{
    (void)opts;
    (void)err;
    rtt_pair_t *p = xmalloc((fwd->n + rev->n) * sizeof *p);
    size_t m = make_pairs(fwd, rev, p);
    double *x = xmalloc(2 * m * sizeof *x), *y = x + m;
    for (size_t i = 0; i < m; i++) {
        x[i] = p[i].x;
        y[i] = p[i].off;
    }
    ols_line(x, y, m, &out->a, &out->b);
    /* The mean round trip, the drift between each pair's two points taken out (as minrtt's). */
    double rtt = 0;
    for (size_t i = 0; i < m; i++)
        rtt += p[i].rtt - out->a * p[i].dx;
    out->margin = 0.5 * rtt / (double)m;
    free(x);
    free(p);
    return BASE_OK;
}

/* ---- the one estimator table ---- */

/*
 * unc_scale of hull and minrtt: calibrated on the simulated scenarios
 * (docs/CLOCK.md); minrtt's applies only where its line has too few
 * interval minima to say its own spread (minrtt_spread).
 */
static const clock_estimator_t est_svm = {
    "svm", "soft-margin maximum-margin line between forward and reverse points (Huygens)",
    clk_fit_svm, 1.0, true};
static const clock_estimator_t est_hull = {
    "hull", "convex-hull bounds, midline of the feasible band (Duda; Moon-Skelly-Towsley)",
    clk_fit_hull, 1.2, false};
static const clock_estimator_t est_minrtt = {
    "minrtt", "NTP style: smallest round trip per interval, line through the best offsets",
    clk_fit_minrtt, 2.0, false};
static const clock_estimator_t est_ols = {"ols", "least squares on per-pair offsets", clk_fit_ols,
                                          1.0, true};

static const clock_estimator_t *const estimators[] = {&est_svm, &est_hull, &est_minrtt, &est_ols};

const clock_estimator_t *const *clock_estimators(size_t *n)
{
    assert(n);
    *n = BASE_ARRAY_LEN(estimators);
    return estimators;
}

const clock_estimator_t *clock_estimator_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < BASE_ARRAY_LEN(estimators); i++)
        if (strcmp(estimators[i]->name, name) == 0)
            return estimators[i];
    return NULL;
}

const clock_estimator_t *clock_estimator_default(void)
{
    return estimators[0];
}

/* ---- the driver ---- */

typedef struct anchored {
    double *Xf, *Yf, *Xr, *Yr;
    clock_side_t f, r;
    double xlo, xhi; /* anchored x range */
} anchored_t;

static int anchor_points(const clock_point_t *fwd, size_t nf, const clock_point_t *rev, size_t nr,
                         int64_t anchor, int64_t yref, anchored_t *a, char *err)
{
    double *buf = xmalloc(2 * (nf + nr) * sizeof *buf);
    a->Xf = buf;
    a->Yf = buf + nf;
    a->Xr = buf + 2 * nf;
    a->Yr = a->Xr + nr;
    a->xlo = INFINITY;
    a->xhi = -INFINITY;
    for (size_t i = 0; i < nf + nr; i++) {
        const clock_point_t *p = i < nf ? &fwd[i] : &rev[i - nf];
        double x = clk_diff(p->x, anchor), y = clk_diff(p->y, yref);
        if (fabs(x) > 4e15 || fabs(y) > 4e15) {
            free(buf);
            return base_err(err, "sample at x=%lld is %.3g s away from the window's others",
                            (long long)p->x, fmax(fabs(x), fabs(y)) * 1e-9);
        }
        if (i < nf) {
            a->Xf[i] = x;
            a->Yf[i] = y;
        } else {
            a->Xr[i - nf] = x;
            a->Yr[i - nf] = y;
        }
        a->xlo = fmin(a->xlo, x);
        a->xhi = fmax(a->xhi, x);
    }
    a->f = (clock_side_t){a->Xf, a->Yf, nf};
    a->r = (clock_side_t){a->Xr, a->Yr, nr};
    return BASE_OK;
}

static bool sorted_by_x(const clock_point_t *p, size_t n)
{
    for (size_t i = 1; i < n; i++)
        if (p[i].x < p[i - 1].x)
            return false;
    return true;
}

static int cmp_point_x(const void *a, const void *b)
{
    const clock_point_t *p = a, *q = b;
    return (p->x > q->x) - (p->x < q->x);
}

/*
 * Block levels.  The window is cut into up to 16 blocks; in each, the level
 * of the forward boundary and of the reverse boundary at the fitted slope
 * (the same soft levels svm uses).  Their midpoints trace the offset through
 * the window: a clock step shows as a jump, frequency wander as a bend.
 */
#define MAX_BLOCKS 16

typedef struct blocks {
    size_t v; /* valid blocks (both sides populated) */
    double x[MAX_BLOCKS], lf[MAX_BLOCKS], lr[MAX_BLOCKS], mid[MAX_BLOCKS];
    double start[MAX_BLOCKS], end[MAX_BLOCKS];
    double idx[MAX_BLOCKS];
    double
        noise2; /* variance of one block's midpoint from everything but the clock (NAN: unknown) */
    size_t level_k; /* points behind a boundary level, typical block (0: no blocks) */
} blocks_t;

static size_t block_of(double xm, double lo, double width, size_t nb)
{
    double b = floor((xm - lo) / width);
    return b < 0 ? 0 : (b >= (double)nb ? nb - 1 : (size_t)b);
}

static void block_levels(const anchored_t *an, double a, double frac, size_t maxb, blocks_t *B)
{
    B->v = 0;
    B->level_k = 0;
    size_t nmin = an->f.n < an->r.n ? an->f.n : an->r.n;
    /*
     * Twelve points a side per block where the window has them.  A small
     * window (a busy neighbour probed every 20 ms keeps a few dozen) still
     * gets the six blocks that finding a clock step takes, down to five
     * points a side each: a step a line is drawn through is off by half
     * the step at the window's ends.
     */
    size_t nb = nmin / 12;
    if (nb < 6 && nmin >= 30)
        nb = 6;
    if (nb > maxb)
        nb = maxb;
    /*
     * A probe's block is taken by the middle of its flight, X + Y/2, not by
     * the end whose clock the fit is on: the same probe seen from the other
     * end, (X + Y, −Y), is then in the same block.  By X, blocks of the two
     * ends differed by the offset between the clocks and the delays: a
     * point or two at a block's edge, which in a block of a few points (a
     * level of two) moved its level by half a disturbance, and an edge's
     * bend term was 403 ns one way round and 205 the other.
     */
    const clock_side_t *sides[2] = {&an->f, &an->r};
    double lo = INFINITY, hi = -INFINITY;
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sides[s]->n; i++) {
            double xm = sides[s]->X[i] + 0.5 * sides[s]->Y[i];
            lo = fmin(lo, xm);
            hi = fmax(hi, xm);
        }
    if (nb < 6 || !(hi > lo))
        return;
    double width = (hi - lo) / (double)nb;
    /* Each side's points by block (a counting sort), in their order within it. */
    size_t n = an->f.n + an->r.n;
    double *bx = xmalloc(2 * n * sizeof *bx), *by = bx + n;
    size_t start[2][MAX_BLOCKS + 1];
    for (size_t s = 0, base = 0; s < 2; base += sides[s]->n, s++) {
        size_t cnt[MAX_BLOCKS] = {0};
        for (size_t i = 0; i < sides[s]->n; i++)
            cnt[block_of(sides[s]->X[i] + 0.5 * sides[s]->Y[i], lo, width, nb)]++;
        start[s][0] = base;
        for (size_t b = 0; b < nb; b++)
            start[s][b + 1] = start[s][b] + cnt[b];
        size_t at[MAX_BLOCKS];
        memcpy(at, start[s], nb * sizeof *at);
        for (size_t i = 0; i < sides[s]->n; i++) {
            size_t b = block_of(sides[s]->X[i] + 0.5 * sides[s]->Y[i], lo, width, nb);
            bx[at[b]] = sides[s]->X[i];
            by[at[b]++] = sides[s]->Y[i];
        }
    }
    zx_t *tmp = xmalloc((n ? n : 1) * sizeof *tmp);
    for (size_t b = 0; b < nb; b++) {
        double x0 = lo + width * (double)b;
        double x1 = b + 1 == nb ? hi : x0 + width;
        size_t f0 = start[0][b], r0 = start[1][b];
        size_t cf = start[0][b + 1] - f0, cr = start[1][b + 1] - r0;
        if (cf < 2 || cr < 2)
            continue;
        clock_side_t sf = {bx + f0, by + f0, cf};
        clock_side_t sr = {bx + r0, by + r0, cr};
        double zf, xf, zr, xr;
        side_extreme(&sf, a, soft_k(cf, frac), true, tmp, &zf, &xf);
        side_extreme(&sr, a, soft_k(cr, frac), false, tmp, &zr, &xr);
        size_t v = B->v++;
        B->lf[v] = zf;
        B->lr[v] = zr;
        B->mid[v] = 0.5 * (zf + zr);
        B->start[v] = x0;
        B->end[v] = x1;
        B->x[v] = 0.5 * (B->start[v] + B->end[v]);
        B->idx[v] = (double)b;
    }
    free(bx);
    /*
     * The gap between the two boundaries does not move with the clock (a bend
     * or a step moves both) but does with everything else: timestamp noise and
     * queuing on either side.  With independent sides var(mid) = var(gap)/4.
     */
    B->noise2 = NAN;
    if (B->v >= 4) {
        double mg = 0, vg = 0;
        for (size_t i = 0; i < B->v; i++)
            mg += B->lf[i] - B->lr[i];
        mg /= (double)B->v;
        for (size_t i = 0; i < B->v; i++)
            vg += (B->lf[i] - B->lr[i] - mg) * (B->lf[i] - B->lr[i] - mg);
        B->noise2 = vg / (double)(B->v - 1) / 4.0;
    }
    if (B->v > 0)
        B->level_k = soft_k(nmin / B->v, frac);
    free(tmp);
}

/* Remove a linear trend (the median step per block) from s in place; returns it. */
static double detrend(const blocks_t *B, double *s)
{
    double d[MAX_BLOCKS];
    for (size_t i = 0; i + 1 < B->v; i++)
        d[i] = (s[i + 1] - s[i]) / (B->idx[i + 1] - B->idx[i]);
    double t = clk_median(d, B->v - 1);
    for (size_t i = 0; i < B->v; i++)
        s[i] -= t * B->idx[i];
    return t;
}

/* A step's median shift on each side, in standard errors (steps seen: > 400; queuing: < 10). */
#define STEP_Z 10.0

/*
 * Step detection.  A clock step moves both boundaries by the same amount at
 * the same time; queuing moves one side only, which is what tells them
 * apart.  The levels are detrended first (a step tilts the fitted line), and
 * the noise is taken from the detrended block-to-block differences.
 */
typedef struct step_found {
    double at;         /* anchored x where the later segment starts */
    double size;       /* ns */
    double end_before; /* anchored x: the clean earlier segment ends here */
    double start_after;
} step_found_t;

/* σ of one block level (or midpoint) from the block-to-block differences (a step is one of them).
 */
static double side_noise(const double *s, size_t v)
{
    double d[MAX_BLOCKS];
    for (size_t i = 0; i + 1 < v; i++)
        d[i] = fabs(s[i + 1] - s[i]);
    return clk_median(d, v - 1) / 0.6745 / M_SQRT2;
}

/* Median of s[split..v) minus median of s[0..split). */
static double median_shift(const double *s, size_t v, size_t split)
{
    double a[MAX_BLOCKS], b[MAX_BLOCKS];
    memcpy(b, s, split * sizeof *b);
    memcpy(a, s + split, (v - split) * sizeof *a);
    return clk_median(a, v - split) - clk_median(b, split);
}

/*
 * The other side of the end block.  A step's other boundary is the level of
 * the points on its far side of the step alone, or, where those are fewer
 * than a level takes, pulled part of the way after the step by the others:
 * it stays or moves the same way.  A host slow to stamp until inside the
 * last block (or from inside the first) narrows that block's gap as well,
 * but from both sides: its late receive stamps had lowered one boundary,
 * its early transmit stamps raised the other.  So the other side may not
 * move against the step by more than its own block noise allows (slowhost,
 * 8 nodes 30 s, seeds 1-9: 27 such "steps" before and 2 after with about
 * 400 points a side per window, 69 and 21 with about 100; true steps in
 * end blocks were found as often as before, 1 µs to 1 ms, 48 to 600 points
 * a side).
 */
static bool end_still(double still, double moved, const double *level, size_t v)
{
    return still * moved >= 0 || fabs(still) <= 4.0 * side_noise(level, v);
}

/*
 * A step inside the first or the last block: no split has clean blocks on
 * both sides of it, but the block's own two boundaries come from the two
 * clocks.  Stepping forward by S, its forward boundary is the earlier
 * points' (S lower than the blocks after) and its reverse boundary the
 * later points'; backward, the other way round.  Either way the gap
 * between the boundaries shrinks by |S|, which queuing never does: it
 * widens gaps, so the narrowest of the other blocks is the reference (the
 * median would be a queued one's, and an unqueued end block would look
 * narrow).  Only where each level averages three points or more: one
 * late receive stamp (software stamps) narrows a gap read from a single
 * extreme point by microseconds.  The block is left out and its size read
 * on the side that moved, against the median of the three blocks next to it
 * (B0 the raw levels, B the same detrended).
 */
static bool end_step(const blocks_t *B0, const blocks_t *B, const clock_fit_opts_t *o,
                     step_found_t *out)
{
    size_t v = B->v;
    if (B0->level_k < 3)
        return false;
    /* Gaps from the raw levels; the size from the detrended ones. */
    double gap[MAX_BLOCKS];
    for (size_t i = 0; i < v; i++)
        gap[i] = B0->lf[i] - B0->lr[i];
    double gmin = INFINITY;
    for (size_t i = 1; i + 1 < v; i++)
        gmin = fmin(gmin, gap[i]);
    double noise = side_noise(gap + 1, v - 2);
    for (int end = 0; end < 2; end++) {
        size_t e = end ? v - 1 : 0;
        if (!(gmin - gap[e] > fmax((double)o->step_min_ns, 10.0 * noise)))
            continue;
        double nf[3], nr[3];
        for (size_t j = 0; j < 3; j++) {
            size_t i = end ? v - 2 - j : 1 + j;
            nf[j] = B->lf[i];
            nr[j] = B->lr[i];
        }
        /* Later minus earlier, on each side. */
        double df = end ? B->lf[e] - clk_median(nf, 3) : clk_median(nf, 3) - B->lf[e];
        double dr = end ? B->lr[e] - clk_median(nr, 3) : clk_median(nr, 3) - B->lr[e];
        bool fwd = fabs(df) > fabs(dr); /* the forward boundary carried the step */
        if (fwd ? !end_still(dr, df, B->lr, v) : !end_still(df, dr, B->lf, v))
            continue;
        out->size = fwd ? df : dr;
        out->at = 0.5 * (B->start[e] + B->end[e]);
        out->end_before = B->start[e];
        out->start_after = B->end[e];
        return true;
    }
    return false;
}

/* A split with clean blocks on both sides; B detrended (detect_step). */
static bool split_step(const blocks_t *B, const clock_fit_opts_t *o, step_found_t *out)
{
    size_t v = B->v;
    double noise = side_noise(B->mid, v);
    double best = 0;
    size_t split = 0;
    for (size_t sp = 1; sp < v; sp++) {
        double bf = 0, af = 0, br = 0, ar = 0;
        for (size_t i = 0; i < v; i++) {
            if (i < sp) {
                bf += B->lf[i];
                br += B->lr[i];
            } else {
                af += B->lf[i];
                ar += B->lr[i];
            }
        }
        double df = af / (double)(v - sp) - bf / (double)sp;
        double dr = ar / (double)(v - sp) - br / (double)sp;
        double size = 0.5 * (df + dr);
        if (df * dr <= 0 || fabs(df - dr) > 0.5 * fabs(size))
            continue;
        if (fabs(size) > fabs(best)) {
            best = size;
            split = sp;
        }
    }
    if (split == 0 || fabs(best) < fmax((double)o->step_min_ns, 10.0 * noise))
        return false;
    /*
     * Means are swayed by a few queued blocks (a burst that starts on one side
     * as another ends on the other reads as a shift of both), and a split next
     * to either end averages a single noisy block.  A step moves every block
     * after it: each side's median must shift with it, by STEP_Z standard
     * errors of that side's own block noise.
     */
    double mf = median_shift(B->lf, v, split), mr = median_shift(B->lr, v, split);
    if (mf * best <= 0 || mr * best <= 0 || fmin(fabs(mf), fabs(mr)) < 0.5 * fabs(best))
        return false;
    double se = sqrt(1.0 / (double)split + 1.0 / (double)(v - split));
    if (fabs(mf) < STEP_Z * side_noise(B->lf, v) * se ||
        fabs(mr) < STEP_Z * side_noise(B->lr, v) * se)
        return false;
    /*
     * The size from the clean blocks only: the two around the split may be
     * mixed.  A split next to an end (six blocks) leaves no clean block on
     * that side; the mixed block nearer the end stands in for it.
     */
    size_t before_end = split >= 2 ? split - 1 : split;
    size_t after_start = split + 1 < v ? split + 1 : split;
    double sb = 0, sa = 0;
    for (size_t i = 0; i < before_end; i++)
        sb += B->mid[i];
    for (size_t i = after_start; i < v; i++)
        sa += B->mid[i];
    out->size = sa / (double)(v - after_start) - sb / (double)before_end;
    out->at = B->start[split];
    out->end_before = B->start[split - 1];
    out->start_after = B->end[split];
    return true;
}

/*
 * Step detection.  The levels are detrended once (a step tilts the fitted
 * line): a split with clean blocks on both sides, else a step inside an end
 * block.
 */
static bool detect_step(const blocks_t *B0, const clock_fit_opts_t *o, step_found_t *out)
{
    if (B0->v < 6)
        return false;
    blocks_t B = *B0;
    detrend(&B, B.lf);
    detrend(&B, B.lr);
    detrend(&B, B.mid);
    return split_step(&B, o, out) || end_step(B0, &B, o, out);
}

/*
 * A host slow to stamp for part of the window (its receive stamps late, its
 * transmit stamps early) widens the gap between the two boundaries where
 * the delay came or went: twice the margin rises by the delay, the offset
 * by anything up to half of it, and a line drawn through both parts is off
 * by as much and tilted (svm's margin leans into the wider part).  A clock
 * step never moves the gap (it moves both boundaries alike, detect_step);
 * queuing widens the gap in bursts, not from one block on.  A split with
 * at least two blocks on either side whose median gap shifts by STEP_Z
 * standard errors of the gaps' own block noise, and by GAP_MIN_NS (a
 * smaller change moves the offset by less than the fit's own noise on
 * good stamps), is such a change; the narrower side is the undisturbed one
 * (a delay only ever widens the gap).  Only where each level averages
 * three points or more, as for end steps.  Such levels take in queued
 * points that a level of one point passes over, so every block of the
 * wider side must also stand GAP_APART block σ wider than every block of
 * the narrower one: a delay holds for the whole part it covers, a queue's
 * burst comes and goes.
 */
#define GAP_MIN_NS  20.0
#define GAP_LEVEL_K 3
#define GAP_APART   2.0

typedef struct gap_change {
    double end_before, start_after; /* block edges (anchored x + y/2): the clean segments end /
                                       start here */
    bool keep_later;                /* the later segment is the narrower */
    double size;                    /* the median gap's shift, ns */
    double wide_gap;                /* the wider side's median gap, ns */
} gap_change_t;

static bool detect_gap_change(const blocks_t *B, gap_change_t *out)
{
    size_t v = B->v;
    if (v < 6 || B->level_k < GAP_LEVEL_K)
        return false;
    double gap[MAX_BLOCKS];
    for (size_t i = 0; i < v; i++)
        gap[i] = B->lf[i] - B->lr[i];
    /* Where: the split that leaves the least scatter about each side's mean. */
    double sse_best = INFINITY;
    size_t split = 0;
    for (size_t sp = 2; sp + 2 <= v; sp++) {
        double mb = 0, ma = 0, sse = 0;
        for (size_t i = 0; i < v; i++)
            *(i < sp ? &mb : &ma) += gap[i];
        mb /= (double)sp;
        ma /= (double)(v - sp);
        for (size_t i = 0; i < v; i++)
            sse += (gap[i] - (i < sp ? mb : ma)) * (gap[i] - (i < sp ? mb : ma));
        if (sse < sse_best) {
            sse_best = sse;
            split = sp;
        }
    }
    /* Whether: the median gap moved, beyond the gaps' block noise. */
    double best = median_shift(gap, v, split);
    double se = sqrt(1.0 / (double)split + 1.0 / (double)(v - split));
    double noise = side_noise(gap, v);
    if (split == 0 || !(fabs(best) > STEP_Z * noise * se) || !(fabs(best) > GAP_MIN_NS))
        return false;
    double wide_min = INFINITY, narrow_max = -INFINITY;
    for (size_t i = 0; i < v; i++) {
        if ((i >= split) == (best > 0))
            wide_min = fmin(wide_min, gap[i]);
        else
            narrow_max = fmax(narrow_max, gap[i]);
    }
    if (!(wide_min - narrow_max > GAP_APART * noise))
        return false;
    double side[MAX_BLOCKS];
    size_t from = best > 0 ? split : 0, to = best > 0 ? v : split;
    memcpy(side, gap + from, (to - from) * sizeof *side);
    out->wide_gap = clk_median(side, to - from);
    out->size = best;
    out->keep_later = best < 0;
    out->end_before = B->start[split - 1];
    out->start_after = B->end[split];
    return true;
}

/*
 * Misfit: how far the offset curve bends away from a straight line, at the
 * start, the centre and the end of the window.  The block midpoints are
 * detrended by their own least-squares line (the level and slope are the
 * fit's business; only the shape is wanted here), then read at the first
 * block, the two central blocks and the last block.  Each value comes with
 * its noise σ (from the blocks' gap, see block_levels).  False when too few
 * blocks.
 */
static bool block_misfit(const blocks_t *B, double m[3], double sd[3])
{
    size_t v = B->v;
    if (v < 6 || !isfinite(B->noise2))
        return false;
    double mx = 0;
    for (size_t i = 0; i < v; i++)
        mx += B->x[i];
    mx /= (double)v;
    double sxx = 0;
    for (size_t i = 0; i < v; i++)
        sxx += (B->x[i] - mx) * (B->x[i] - mx);
    if (!(sxx > 0))
        return false;
    /*
     * Which blocks each reading averages: first; the middle two of an even
     * count, the middle three of an odd one; last.  (The two nearest the
     * anchor, of an odd count, were a tie between the middle one's
     * neighbours that the anchor's place broke: one way round the edge read
     * a disturbed block there, the other way not, and its bend term was
     * 0 or 230 ns.)
     */
    size_t mid_lo = v / 2 - 1, mid_n = v % 2 ? 3 : 2;
    size_t sel[3][3] = {{0}, {mid_lo, mid_lo + 1, mid_lo + 2}, {v - 1}};
    size_t nsel[3] = {1, mid_n, 1};
    for (int j = 0; j < 3; j++) {
        /* Reading = mean of its blocks minus the LS line there; as weights on the blocks. */
        double w[MAX_BLOCKS] = {0};
        size_t cnt = nsel[j];
        double xr = 0;
        for (size_t q = 0; q < cnt; q++) {
            w[sel[j][q]] += 1.0 / (double)cnt;
            xr += B->x[sel[j][q]] / (double)cnt;
        }
        double val = 0, var = 0;
        for (size_t i = 0; i < v; i++) {
            double wi = w[i] - (1.0 / (double)v + (xr - mx) * (B->x[i] - mx) / sxx);
            val += wi * B->mid[i];
            var += wi * wi;
        }
        m[j] = val;
        sd[j] = sqrt(var * B->noise2);
    }
    return true;
}

/* The largest misfit reading that stands clear of its noise (two σ), noise removed. */
static double misfit_mag(const double m[3], const double sd[3])
{
    double worst = 0;
    for (int j = 0; j < 3; j++)
        if (m[j] * m[j] > 4 * sd[j] * sd[j])
            worst = fmax(worst, sqrt(m[j] * m[j] - sd[j] * sd[j]));
    return worst;
}

/*
 * Fit a line on the middle of each probe's flight.  A forward point (X, Y)
 * of A → B is a reverse point (X + Y, −Y) of B → A: X is the fitting end's
 * send time one way and its receive time the other, and what an estimator
 * does with X (svm's means, hull's far ends, minrtt's pairs) then depends
 * on which end fits: minrtt's uncertainties came out up to 43 % apart, and
 * 2 svm fits in 90 2–4.5 % apart, where one subset's line had moved by a
 * few ns.  M = X + Y/2 is the same number from either end, the mirror is
 * then only Y → −Y and the sides swapped, and every fit made on (M, Y) is
 * the other end's mirrored.  A line Y = b + aX is
 * Y = c + sM with s = a/(1 + a/2), c = b/(1 + a/2), and a distance from it
 * in Y is 1 + a/2 times one in (M, Y).  Subsets of a side are taken by M
 * too (and handed their window's core σ, which is in (M, Y)).
 */
static int fit_line(const clock_estimator_t *est, const clock_side_t *f, const clock_side_t *r,
                    const clock_fit_opts_t *o, clock_line_t *ln, char *err)
{
    double *buf = xmalloc((f->n + r->n + 1) * sizeof *buf);
    double *Mf = buf, *Mr = buf + f->n;
    for (size_t i = 0; i < f->n; i++)
        Mf[i] = f->X[i] + 0.5 * f->Y[i];
    for (size_t i = 0; i < r->n; i++)
        Mr[i] = r->X[i] + 0.5 * r->Y[i];
    clock_side_t mf = {Mf, f->Y, f->n}, mr = {Mr, r->Y, r->n};
    clock_fit_opts_t oo = *o;
    if (isfinite(o->slope_hint))
        oo.slope_hint = o->slope_hint / (1 + 0.5 * o->slope_hint);
    clock_line_t m = *ln;
    int rc = est->fit(&mf, &mr, &oo, &m, err);
    free(buf);
    double g = 1 - 0.5 * m.a; /* 1 / (1 + a/2) */
    /*
     * Probes all within a flight of one instant (hand-built windows) lie on
     * Y = 2M: sides apart in M, or a slope no clock has.  X alone has an
     * answer there, or the error to give.
     */
    if (rc != BASE_OK || !(fabs(m.a) <= 0.4)) /* |s| ≤ 0.4: |a| ≤ 0.5 from either end */
        return est->fit(f, r, o, ln, err);
    *ln = m;
    ln->a = m.a / g;
    ln->b = m.b / g;
    ln->margin = m.margin / g;
    ln->var_b = m.var_b / (g * g);
    ln->var_a = m.var_a / (g * g * g * g);
    return BASE_OK;
}

/* Each point's rank on its side in the order of M. */
static size_t *side_ranks(const clock_side_t *s, bool lower)
{
    ranked_t *o = side_order(s, lower, 0.5);
    size_t *rank = xmalloc((s->n ? s->n : 1) * sizeof *rank);
    for (size_t i = 0; i < s->n; i++)
        rank[o[i].i] = i;
    free(o);
    return rank;
}

/*
 * The spread of the window's fit, from S interleaved subsets (each spans
 * the whole window).  Fitted alone, each subset has 1/S of the points, and
 * the window's fit has 1/S of their variance.  A subset of a dozen points
 * holds one or two in svm's margin and no core to find: its fits scatter
 * by microseconds where the window's own is good to nanoseconds (busy
 * probing a neighbour every 20 ms).  There, for estimators that allow it,
 * each of the S fits leaves one subset out instead, and the delete-a-group
 * jackknife, (S − 1)/S × the sum of squared deviations, is the variance.
 * That costs S fits of nearly the whole window, so only small windows use
 * it.  Fills the variances of the offset and the slope; false when fewer
 * than 3 fits came out.
 */
static bool fit_spread(const clock_estimator_t *est, const anchored_t *an,
                       const clock_fit_opts_t *o0, const clock_line_t *full, double *var_b,
                       double *var_a)
{
    if (full->own_var) {
        *var_b = full->var_b;
        *var_a = full->var_a;
        return true;
    }
    clock_fit_opts_t oo = *o0, *o = &oo;
    oo.slope_hint = full->a;
    if (isfinite(full->frac)) /* the subsets keep the soft margin the whole window chose */
        oo.soft_frac = oo.soft_frac_clean = full->frac;
    /* ...and its cores' σ: a subset has too few points to find them itself. */
    oo.core_sigma[0] = full->core_sigma[0];
    oo.core_sigma[1] = full->core_sigma[1];
    size_t nmin = an->f.n < an->r.n ? an->f.n : an->r.n;
    size_t nmax = an->f.n < an->r.n ? an->r.n : an->f.n;
    size_t S = o->subsets;
    if (S > nmin / 2)
        S = nmin / 2;
    if (S > 64)
        S = 64;
    if (S < 3)
        return false;
    /* A small side beside a large one (a direction that lost most of its probes)
     * would pay S fits of the large one: the cost stays bounded. */
    bool jack =
        est->jackknife && nmin < o->jackknife_below && nmax < 4 * (size_t)o->jackknife_below;
    size_t cap_f = jack ? an->f.n : an->f.n / S + 1, cap_r = jack ? an->r.n : an->r.n / S + 1;
    double *buf = xmalloc(2 * (cap_f + cap_r) * sizeof *buf);
    double *Xf = buf, *Yf = buf + cap_f, *Xr = buf + 2 * cap_f, *Yr = Xr + cap_r;
    double as[64], bs[64];
    size_t m = 0;
    size_t *rf = side_ranks(&an->f, true), *rr = side_ranks(&an->r, false);
    for (size_t s = 0; s < S; s++) {
        /* Subset s alone, or every point but subset s. */
        size_t kf = 0, kr = 0;
        for (size_t i = 0; i < an->f.n; i++) {
            if ((rf[i] % S == s) != jack) {
                Xf[kf] = an->f.X[i];
                Yf[kf++] = an->f.Y[i];
            }
        }
        for (size_t i = 0; i < an->r.n; i++) {
            if ((rr[i] % S == s) != jack) {
                Xr[kr] = an->r.X[i];
                Yr[kr++] = an->r.Y[i];
            }
        }
        clock_side_t f = {Xf, Yf, kf}, r = {Xr, Yr, kr};
        clock_line_t ln = CLOCK_LINE_NONE;
        if (kf < 2 || kr < 2 || fit_line(est, &f, &r, o, &ln, NULL) != BASE_OK)
            continue;
        as[m] = ln.a;
        bs[m] = ln.b;
        m++;
    }
    free(buf);
    free(rf);
    free(rr);
    if (m < 3)
        return false;
    double ma = 0, mb = 0;
    for (size_t i = 0; i < m; i++) {
        ma += as[i];
        mb += bs[i];
    }
    ma /= (double)m;
    mb /= (double)m;
    double ssa = 0, ssb = 0;
    for (size_t i = 0; i < m; i++) {
        ssa += (as[i] - ma) * (as[i] - ma);
        ssb += (bs[i] - mb) * (bs[i] - mb);
    }
    /*
     * Jackknife: (S − 1)/S × the sum over all S fits; when only m came out,
     * that sum is estimated as (S − 1) times their sample variance.
     */
    double f = jack ? (double)(S - 1) * (double)(S - 1) / ((double)S * (double)(m - 1))
                    : 1.0 / ((double)(m - 1) * (double)m);
    *var_a = f * ssa;
    *var_b = f * ssb;
    return true;
}

/*
 * The points of a window before end_before or from start_after on (the
 * blocks around a split left out): which part each side keeps.
 */
typedef struct segment {
    size_t before[2], after[2]; /* points a side (forward, reverse) before / after the split */
} segment_t;

static segment_t split_counts(const anchored_t *an, size_t nf, size_t nr, double end_before,
                              double start_after)
{
    segment_t s = {{0, 0}, {0, 0}};
    for (size_t i = 0; i < nf; i++) {
        s.before[0] += an->Xf[i] < end_before;
        s.after[0] += an->Xf[i] >= start_after;
    }
    for (size_t i = 0; i < nr; i++) {
        s.before[1] += an->Xr[i] < end_before;
        s.after[1] += an->Xr[i] >= start_after;
    }
    return s;
}

/*
 * Samples set aside before a fit (counted in clock_edge_fit_t.set_aside).
 *
 * Far: a sample whose time or offset lies farther from the window's median
 * than FAR_NS (a receive stamp years off, which the decoder's ±2^62 still
 * lets through) belongs to no line the others do; every pair of samples
 * kept is then within 2·FAR_NS of each other, which the anchored doubles
 * hold to the nanosecond.
 *
 * Isolated: a point deeper in the forbidden zone than its side's noise
 * reaches (gross_limit, svm's own test) is an error of its stamps, unless
 * the points next to it in time are as deep: a clock step moves every
 * point after it, an error one point.  So such a point stays only where at
 * least ISOLATED_WITH of the ISOLATED_NEAR points before it on its side,
 * or of those after it, are as deep (within the noise's 6σ of it, or past
 * the limit themselves); a step needs that many points on its far side to
 * be seen, and that many errors in a row pass for a step.  Left in, one
 * point 100 µs deep pulls the block level of svm's soft margin (the mean
 * of a few dozen points) by microseconds: a false step in an end block,
 * or a bend that put the edge's uncertainty at 750 ns for 17.
 */
#define FAR_NS        2e15
#define ISOLATED_NEAR 8
#define ISOLATED_WITH 2

/* What a fit_edge call screens for before fitting. */
enum screen {
    SCREEN_NONE,    /* already done */
    SCREEN_ISOLATE, /* isolated errors only (far samples already gone) */
    SCREEN_ALL,
};

static double median_of(const clock_point_t *a, size_t na, const clock_point_t *b, size_t nb,
                        bool y, double *tmp)
{
    for (size_t i = 0; i < na + nb; i++) {
        const clock_point_t *p = i < na ? &a[i] : &b[i - na];
        tmp[i] = (double)(y ? p->y : p->x);
    }
    return clk_median(tmp, na + nb);
}

/* Marks far samples false in keep (forward then reverse); returns how many. */
static size_t far_samples(const clock_point_t *fwd, size_t nf, const clock_point_t *rev, size_t nr,
                          bool *keep)
{
    /* Within FAR_NS of each other, every sample is within it of the median. */
    int64_t lo[2] = {INT64_MAX, INT64_MAX}, hi[2] = {INT64_MIN, INT64_MIN};
    for (size_t i = 0; i < nf + nr; i++) {
        const clock_point_t *p = i < nf ? &fwd[i] : &rev[i - nf];
        lo[0] = p->x < lo[0] ? p->x : lo[0];
        hi[0] = p->x > hi[0] ? p->x : hi[0];
        lo[1] = p->y < lo[1] ? p->y : lo[1];
        hi[1] = p->y > hi[1] ? p->y : hi[1];
    }
    if (clk_diff(hi[0], lo[0]) <= FAR_NS && clk_diff(hi[1], lo[1]) <= FAR_NS)
        return 0;
    double *tmp = xmalloc((nf + nr) * sizeof *tmp);
    double mx = median_of(fwd, nf, rev, nr, false, tmp);
    double my = median_of(fwd, nf, rev, nr, true, tmp);
    free(tmp);
    size_t gone = 0;
    for (size_t i = 0; i < nf + nr; i++) {
        const clock_point_t *p = i < nf ? &fwd[i] : &rev[i - nf];
        keep[i] = fabs((double)p->x - mx) <= FAR_NS && fabs((double)p->y - my) <= FAR_NS;
        gone += !keep[i];
    }
    return gone;
}

/* Marks a side's isolated gross errors false in keep (its n entries); returns how many. */
static size_t isolated_errors(const clock_side_t *s, const clock_line_t *ln, bool lower,
                              double *dist, bool *keep)
{
    size_t n = s->n, gone = 0;
    for (size_t i = 0; i < n; i++)
        keep[i] = true;
    if (n < 20)
        return 0;
    side_dist(s, ln, lower, dist);
    double depth;
    double limit = gross_limit(dist, n, &depth);
    for (size_t i = 0; i < n; i++) {
        if (dist[i] >= limit)
            continue;
        double deep = fmax(dist[i] + depth, limit);
        size_t before = 0, after = 0;
        for (size_t j = i > ISOLATED_NEAR ? i - ISOLATED_NEAR : 0; j < i; j++)
            before += dist[j] < deep;
        for (size_t j = i + 1; j < n && j <= i + ISOLATED_NEAR; j++)
            after += dist[j] < deep;
        if (before < ISOLATED_WITH && after < ISOLATED_WITH) {
            keep[i] = false;
            gone++;
        }
    }
    return gone;
}

static int fit_edge(const clock_estimator_t *est, const clock_point_t *fwd, size_t nf,
                    const clock_point_t *rev, size_t nr, const clock_fit_opts_t *o, bool steps,
                    enum screen screen, clock_edge_fit_t *out, char *err);

/*
 * Gross steps.  A step far beyond the points' whole spread about a line (a
 * clock set by milliseconds or more) defeats the block levels: the fitted
 * line follows the step (its slope is the step over the window, its margin
 * hugely negative), and a fitter whose own clock jumped forward has a
 * stretch of its window without points, so that a block holds one point a
 * side or none and no step is looked for (a live edge fitted a 300 ms step
 * as a line of −221594 ppm at ±14.8 ms); one whose clock jumped back reads
 * a stretch twice, and its points before and after the step interleave.
 * About a robust slope, each side's points then fall into two clusters,
 * the earlier and the later clock: the largest gap between a side's sorted
 * residuals is a step when it stands GROSS_K times the wider cluster's
 * spread (queuing's tail is no cluster apart), with at least GROSS_SIDE
 * points in each (fewer look the same as as many stamp errors in a row,
 * isolated_errors), one after the other in time (overlapping by no more
 * than the step, as a clock stepped back reads a stretch twice, and not
 * over the whole window: two delays
 * that take turns, two paths or a receive stamp woken late now and then,
 * make clusters that interleave over the whole window), and both sides'
 * clusters say the same: the later one (by median x) moved the same way by
 * about as much, at the same time (within GROSS_SLACK_NS, which one-way
 * delays stay under, and the gaps between samples either side).  Steps
 * within the spread are left to the blocks.
 */
#define GROSS_K        4.0
#define GROSS_SIDE     3
#define GROSS_SLACK_NS 1e6

typedef struct gross_jump {
    bool *later; /* per point of the side: in the later cluster */
    size_t n_later;
    double size;       /* ns, later cluster's level minus the earlier's */
    double end, start; /* anchored x: the earlier cluster's last point, the later's first */
} gross_jump_t;

/* The slope of both sides together: the median over pairs an eighth of a side apart. */
static double gross_slope(const clock_side_t *f, const clock_side_t *r, double *tmp)
{
    size_t k = 0;
    for (int side = 0; side < 2; side++) {
        const clock_side_t *s = side ? r : f;
        size_t m = s->n / 8 > 0 ? s->n / 8 : 1;
        for (size_t i = 0; i + m < s->n; i++) {
            double dx = s->X[i + m] - s->X[i];
            if (dx > 0)
                tmp[k++] = (s->Y[i + m] - s->Y[i]) / dx;
        }
    }
    return k > 0 ? clk_median(tmp, k) : NAN;
}

/*
 * A side's two clusters at slope a, when they stand GROSS_K times their
 * spread apart (and min_ns at least: a side whose whole range is less has
 * none, and needs no sort).
 */
static bool gross_side(const clock_side_t *s, double a, double min_ns, double *tmp, gross_jump_t *j)
{
    size_t n = s->n;
    if (n < 2 * GROSS_SIDE)
        return false;
    double rlo = INFINITY, rhi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        tmp[i] = s->Y[i] - a * s->X[i];
        rlo = fmin(rlo, tmp[i]);
        rhi = fmax(rhi, tmp[i]);
    }
    if (!(rhi - rlo >= min_ns)) /* no gap within the range can be a step */
        return false;
    qsort(tmp, n, sizeof *tmp, base_cmp_double);
    double gap = 0, cut = 0;
    size_t below = 0;
    for (size_t i = GROSS_SIDE; i + GROSS_SIDE <= n; i++)
        if (tmp[i] - tmp[i - 1] > gap) {
            gap = tmp[i] - tmp[i - 1];
            cut = 0.5 * (tmp[i] + tmp[i - 1]);
            below = i;
        }
    if (below == 0)
        return false;
    double spread = fmax(tmp[below - 1] - tmp[0], tmp[n - 1] - tmp[below]);
    if (!(gap > GROSS_K * spread))
        return false;
    double lo = clk_median(tmp, below), hi = clk_median(tmp + below, n - below);
    /* Which cluster is later: the one whose points lie later by their median x. */
    size_t nh = 0, nl = 0;
    for (size_t i = 0; i < n; i++) {
        bool high = s->Y[i] - a * s->X[i] > cut;
        (high ? &tmp[nh++] : &tmp[n - 1 - nl++])[0] = s->X[i];
    }
    double xh = clk_median(tmp, nh), xl = clk_median(tmp + n - nl, nl);
    bool high_later = xh > xl;
    j->size = high_later ? hi - lo : lo - hi;
    j->end = -INFINITY;
    j->start = INFINITY;
    j->n_later = 0;
    for (size_t i = 0; i < n; i++) {
        bool high = s->Y[i] - a * s->X[i] > cut;
        j->later[i] = high == high_later;
        j->n_later += j->later[i];
        if (j->later[i])
            j->start = fmin(j->start, s->X[i]);
        else
            j->end = fmax(j->end, s->X[i]);
    }
    if (j->end <= j->start)
        return true;
    /*
     * The clusters overlap in time: only a clock of the fitter's that
     * stepped back reads a stretch twice, as long as the step, with time
     * before or after it in the window (a step back of a second reads most
     * of a 2 s window twice).  Two delays taking turns (two paths, a
     * receive stamp woken late now and then) interleave over the whole
     * window, far longer than the step between them.
     */
    size_t before = 0, after = 0;
    for (size_t i = 0; i < n; i++) {
        before += !j->later[i] && s->X[i] < j->start;
        after += j->later[i] && s->X[i] > j->end;
    }
    return j->end - j->start <= fabs(j->size) + GROSS_SLACK_NS &&
           (before >= GROSS_SIDE || after >= GROSS_SIDE);
}

static bool gross_step(const anchored_t *an, const clock_fit_opts_t *o, gross_jump_t *jf,
                       gross_jump_t *jr)
{
    double *tmp = xmalloc((an->f.n + an->r.n + 1) * sizeof *tmp);
    double a = gross_slope(&an->f, &an->r, tmp);
    double min_ns = (double)o->step_min_ns;
    bool found = isfinite(a) && gross_side(&an->f, a, min_ns, tmp, jf) &&
                 gross_side(&an->r, a, min_ns, tmp, jr);
    free(tmp);
    if (!found)
        return false;
    double big = fmax(fabs(jf->size), fabs(jr->size)), small = fmin(fabs(jf->size), fabs(jr->size));
    /* Each side's step somewhere between its clusters' meeting points. */
    double tf = 0.5 * (jf->end + jf->start), tr = 0.5 * (jr->end + jr->start);
    double room = 0.5 * (fabs(jf->start - jf->end) + fabs(jr->start - jr->end));
    return jf->size * jr->size > 0 && small >= (double)o->step_min_ns &&
           fabs(jf->size - jr->size) <= 0.5 * small && big <= 2.0 * small &&
           fabs(tf - tr) <= room + GROSS_SLACK_NS;
}

/* The points of one cluster (later or not) of each side, copied to kf, kr. */
static void gross_pick(const clock_point_t *fwd, size_t nf, const clock_point_t *rev, size_t nr,
                       const gross_jump_t *jf, const gross_jump_t *jr, bool later,
                       clock_point_t *kf, size_t *mf, clock_point_t *kr, size_t *mr)
{
    *mf = *mr = 0;
    for (size_t i = 0; i < nf; i++)
        if (jf->later[i] == later)
            kf[(*mf)++] = fwd[i];
    for (size_t i = 0; i < nr; i++)
        if (jr->later[i] == later)
            kr[(*mr)++] = rev[i];
}

/*
 * Fit the larger cluster of a gross step and flag it; its size from a fit
 * of the other too where that has the points, else from the clusters'
 * levels.  The step is put between where the earlier clock's samples end
 * and the later's begin (for a clock of the fitter's that stepped back,
 * where it jumped back from).
 */
static int fit_gross(const clock_estimator_t *est, const clock_point_t *fwd, size_t nf,
                     const clock_point_t *rev, size_t nr, const clock_fit_opts_t *o, int64_t anchor,
                     const gross_jump_t *jf, const gross_jump_t *jr, clock_edge_fit_t *out,
                     char *err)
{
    size_t bmin = nf - jf->n_later < nr - jr->n_later ? nf - jf->n_later : nr - jr->n_later;
    size_t amin = jf->n_later < jr->n_later ? jf->n_later : jr->n_later;
    bool later = amin > bmin;
    double end = fmax(jf->end, jr->end), start = fmin(jf->start, jr->start);
    int64_t at = clk_add(anchor, start > end ? 0.5 * (start + end) : end);
    double size = 0.5 * (jf->size + jr->size);
    clock_point_t *kf = xmalloc((nf + nr) * sizeof *kf), *kr = kf + nf;
    size_t mf, mr;
    gross_pick(fwd, nf, rev, nr, jf, jr, later, kf, &mf, kr, &mr);
    int rc = fit_edge(est, kf, mf, kr, mr, o, false, SCREEN_ISOLATE, out, err);
    if (rc != BASE_OK) {
        free(kf);
        return base_err(err, "clock step of %.0f ns; too few samples on either side", size);
    }
    clock_edge_fit_t other;
    char oerr[BASE_ERRLEN];
    gross_pick(fwd, nf, rev, nr, jf, jr, !later, kf, &mf, kr, &mr);
    if (fit_edge(est, kf, mf, kr, mr, o, false, SCREEN_ISOLATE, &other, oerr) == BASE_OK) {
        double kept = clk_diff(clock_edge_map(out, at), at);
        double gone = clk_diff(clock_edge_map(&other, at), at);
        size = later ? kept - gone : gone - kept;
    }
    free(kf);
    out->step = true;
    out->step_at_ns = at;
    out->step_ns = size;
    return BASE_OK;
}

/* The fit of the samples keep marks (forward then reverse), counting the `gone` others. */
static int fit_kept(const clock_estimator_t *est, const clock_point_t *fwd, size_t nf,
                    const clock_point_t *rev, size_t nr, const bool *keep, size_t gone,
                    const clock_fit_opts_t *o, bool steps, enum screen screen,
                    clock_edge_fit_t *out, char *err)
{
    clock_point_t *kf = xmalloc((nf + nr) * sizeof *kf), *kr = kf + nf;
    size_t mf = 0, mr = 0;
    for (size_t i = 0; i < nf; i++)
        if (keep[i])
            kf[mf++] = fwd[i];
    for (size_t i = 0; i < nr; i++)
        if (keep[nf + i])
            kr[mr++] = rev[i];
    int rc = fit_edge(est, kf, mf, kr, mr, o, steps, screen, out, err);
    free(kf);
    if (rc == BASE_OK) {
        out->set_aside += (uint32_t)gone;
    } else if (err) {
        char why[BASE_ERRLEN];
        snprintf(why, sizeof why, "%s", err);
        base_err(err, "%s; %zu more set aside", why, gone);
    }
    return rc;
}

static int fit_edge(const clock_estimator_t *est, const clock_point_t *fwd, size_t nf,
                    const clock_point_t *rev, size_t nr, const clock_fit_opts_t *o, bool steps,
                    enum screen screen, clock_edge_fit_t *out, char *err)
{
    if (nf < o->min_points || nr < o->min_points || nf < 2 || nr < 2)
        return base_err(err, "too few pure samples: %zu forward, %zu reverse (need %u each)", nf,
                        nr, o->min_points < 2 ? 2 : o->min_points);
    if (screen == SCREEN_ALL) {
        bool *keep = xmalloc((nf + nr) * sizeof *keep);
        size_t gone = far_samples(fwd, nf, rev, nr, keep);
        int rc =
            gone ? fit_kept(est, fwd, nf, rev, nr, keep, gone, o, steps, SCREEN_ISOLATE, out, err)
                 : BASE_OK;
        free(keep);
        if (gone)
            return rc;
        screen = SCREEN_ISOLATE;
    }
    int64_t xmin = fwd[0].x < rev[0].x ? fwd[0].x : rev[0].x;
    int64_t xmax = fwd[nf - 1].x > rev[nr - 1].x ? fwd[nf - 1].x : rev[nr - 1].x;
    int64_t anchor = clk_mid(xmin, xmax);
    int64_t yref = fwd[0].y;
    anchored_t an;
    if (anchor_points(fwd, nf, rev, nr, anchor, yref, &an, err) != BASE_OK)
        return BASE_ERR;
    if (steps && o->detect_steps) {
        bool *later = xmalloc((nf + nr) * sizeof *later);
        gross_jump_t jf = {.later = later}, jr = {.later = later + nf};
        bool gross = gross_step(&an, o, &jf, &jr);
        int grc = gross ? fit_gross(est, fwd, nf, rev, nr, o, anchor, &jf, &jr, out, err) : BASE_OK;
        free(later);
        if (gross) {
            free(an.Xf);
            return grc;
        }
    }
    clock_line_t ln = CLOCK_LINE_NONE;
    int rc = fit_line(est, &an.f, &an.r, o, &ln, err);
    if (rc != BASE_OK)
        goto done;
    if (!isfinite(ln.a) || !isfinite(ln.b)) {
        rc = base_err(err, "%s fit did not converge", est->name);
        goto done;
    }
    if (!(fabs(ln.a) < 0.5)) {
        rc = base_err(err, "%s fit: a slope of %.3g is no clock's", est->name, ln.a);
        goto done;
    }
    if (screen == SCREEN_ISOLATE) {
        bool *keep = xmalloc((nf + nr) * sizeof *keep);
        double *dist = xmalloc((nf > nr ? nf : nr) * sizeof *dist);
        size_t gone = isolated_errors(&an.f, &ln, true, dist, keep) +
                      isolated_errors(&an.r, &ln, false, dist, keep + nf);
        free(dist);
        if (gone)
            rc = fit_kept(est, fwd, nf, rev, nr, keep, gone, o, steps, SCREEN_NONE, out, err);
        free(keep);
        if (gone)
            goto done;
    }

    blocks_t B;
    block_levels(&an, ln.a, isfinite(ln.frac) ? ln.frac : o->soft_frac, MAX_BLOCKS, &B);
    step_found_t st;
    if (steps && o->detect_steps && detect_step(&B, o, &st)) {
        /* Keep the longer clean segment; the blocks around the step are ambiguous. */
        segment_t sg = split_counts(&an, nf, nr, st.end_before, st.start_after);
        size_t bmin = sg.before[0] < sg.before[1] ? sg.before[0] : sg.before[1];
        bool later = (sg.after[0] < sg.after[1] ? sg.after[0] : sg.after[1]) > bmin;
        size_t cf = later ? sg.after[0] : sg.before[0], cr = later ? sg.after[1] : sg.before[1];
        const clock_point_t *sf = later ? fwd + (nf - cf) : fwd;
        const clock_point_t *sr = later ? rev + (nr - cr) : rev;
        free(an.Xf);
        rc = fit_edge(est, sf, cf, sr, cr, o, false, SCREEN_ISOLATE, out, err);
        if (rc != BASE_OK)
            return base_err(err, "clock step of %.0f ns; too few samples on either side", st.size);
        out->step = true;
        out->step_at_ns = clk_add(anchor, st.at);
        out->step_ns = st.size;
        return BASE_OK;
    }
    /*
     * A delay that came or went: keep the undisturbed segment when it holds
     * an eighth of the points a side or more (a shorter one leaves its
     * slope to be carried across the rest of the window: 125 ms of 2 s put
     * a map 2.4 µs off at the far end).  Otherwise the whole window is
     * fitted and says the disturbed part's margin (its median block gap,
     * halved), which bounds what it is off by (the solver's slow-host
     * bound).
     */
    gap_change_t gc = {0, 0, false, 0, 0};
    bool gap_seen = false;
    if (steps && o->detect_steps) {
        /*
         * A delay over part of the window makes that part look queued, and
         * svm's soft fraction then drops to levels of one or two points:
         * the change itself would hide it.  Its blocks get levels of
         * GAP_LEVEL_K points then (a fraction that rounds to that many in
         * a typical block; slowhost at the agents' probe rate: 92.4 → 97.2
         * % of maps covered per window).
         */
        blocks_t G;
        const blocks_t *gb = &B;
        size_t per = B.v > 0 ? (nf < nr ? nf : nr) / B.v : 0;
        if (B.level_k < GAP_LEVEL_K && per >= GAP_LEVEL_K) {
            block_levels(&an, ln.a, (GAP_LEVEL_K + 0.25) / (double)per, MAX_BLOCKS, &G);
            gb = &G;
        }
        gap_seen = detect_gap_change(gb, &gc);
    }
    if (gap_seen) {
        segment_t sg = split_counts(&an, nf, nr, gc.end_before, gc.start_after);
        size_t cf = gc.keep_later ? sg.after[0] : sg.before[0];
        size_t cr = gc.keep_later ? sg.after[1] : sg.before[1];
        if (cf >= o->min_points && cr >= o->min_points && cf >= 2 && cr >= 2 && 8 * cf >= nf &&
            8 * cr >= nr) {
            const clock_point_t *sf = gc.keep_later ? fwd + (nf - cf) : fwd;
            const clock_point_t *sr = gc.keep_later ? rev + (nr - cr) : rev;
            /* A part that will not fit after all leaves the whole window to fit. */
            if (fit_edge(est, sf, cf, sr, cr, o, false, SCREEN_ISOLATE, out, err) == BASE_OK) {
                out->margin_step_ns = 0.5 * gc.size / sqrt(1 + out->drift_ppb * 1e-9);
                free(an.Xf);
                return BASE_OK;
            }
        }
    }

    double va, vb;
    double h = fmax(fabs(an.xlo), fabs(an.xhi));
    double k = o->coverage_k > 0 ? o->coverage_k : 3.0;
    double unc, dunc;
    if (fit_spread(est, &an, o, &ln, &vb, &va)) {
        /*
         * Fits driven by a few extreme points improve more slowly with more
         * data than 1/S, so their subsets' spread shrinks less: the
         * estimator's own scale says how much.
         */
        double sc = !ln.own_var && est->unc_scale > 0 ? est->unc_scale : 1.0;
        unc = k * sc * sqrt(vb + va * h * h);
        dunc = k * sc * sqrt(va) * 1e9;
    } else {
        /* Too few for subsets: the half-width of the band between the two sides. */
        unc = fabs(ln.margin);
        dunc = NAN;
    }
    if (!(unc >= 1.0))
        unc = 1.0;
    /*
     * A line cannot follow frequency wander: the bend the blocks show away
     * from a straight line is a systematic error of the linear map, added to
     * the statistical part.
     */
    double mis[3] = {NAN, NAN, NAN}, misd[3] = {NAN, NAN, NAN}, model = 0;
    if (block_misfit(&B, mis, misd)) {
        model = misfit_mag(mis, misd);
        unc += model;
    }

    memset(out->estimator, 0, sizeof out->estimator);
    snprintf(out->estimator, sizeof out->estimator, "%s", est->name);
    out->anchor_ns = anchor;
    out->offset_ns = (double)clk_add(yref, floor(ln.b)) + (ln.b - floor(ln.b));
    /* Clocks months apart: the double that holds the offset is coarser than the fit. */
    double rnd = clk_round_ns(out->offset_ns);
    model += rnd;
    unc += rnd;
    out->drift_ppb = ln.a * 1e9;
    out->uncertainty_ns = unc;
    /* Points at one instant say nothing of the drift (their subsets all read 0). */
    out->drift_unc_ppb = xmin == xmax ? NAN : dunc;
    out->n_fwd = (uint32_t)nf;
    out->n_rev = (uint32_t)nr;
    out->from_ns = xmin;
    out->to_ns = xmax;
    /*
     * A margin read on B − A is 1 + D times the one read on A − B: taken in
     * the clocks' mean rate it is the same from either end (a 15 µs margin
     * at 50 ppm was 0.7 ns apart, and so were the bounds made of it); the
     * margin of a delay that came or went, below, likewise.
     */
    out->margin_ns = (gap_seen ? fmax(ln.margin, 0.5 * gc.wide_gap) : ln.margin) / sqrt(1 + ln.a);
    out->model_ns = model;
    memcpy(out->misfit_ns, mis, sizeof mis);
    memcpy(out->misfit_sigma_ns, misd, sizeof misd);
    out->residual_ns = NAN;
    out->suspect = false;
    out->step = false;
    out->step_at_ns = 0;
    out->step_ns = 0;
    out->margin_step_ns = gap_seen ? 0.5 * gc.size / sqrt(1 + ln.a) : 0;
    out->set_aside = 0;
done:
    free(an.Xf);
    return rc;
}

int clock_fit_edge(const clock_estimator_t *est, const clock_point_t *fwd, size_t nf,
                   const clock_point_t *rev, size_t nr, const clock_fit_opts_t *opts,
                   clock_edge_fit_t *out, char *err)
{
    assert(out);
    clock_fit_opts_t def;
    if (opts == NULL) {
        clock_fit_opts_default(&def);
        opts = &def;
    }
    if (est == NULL)
        est = clock_estimator_default();
    if (nf == 0 || nr == 0)
        return base_err(err, "one-sided data: %zu forward, %zu reverse samples", nf, nr);
    if (sorted_by_x(fwd, nf) && sorted_by_x(rev, nr))
        return fit_edge(est, fwd, nf, rev, nr, opts, true, SCREEN_ALL, out, err);
    clock_point_t *cf = xmalloc(nf * sizeof *cf), *cr = xmalloc(nr * sizeof *cr);
    memcpy(cf, fwd, nf * sizeof *cf);
    memcpy(cr, rev, nr * sizeof *cr);
    qsort(cf, nf, sizeof *cf, cmp_point_x);
    qsort(cr, nr, sizeof *cr, cmp_point_x);
    int rc = fit_edge(est, cf, nf, cr, nr, opts, true, SCREEN_ALL, out, err);
    free(cf);
    free(cr);
    return rc;
}

int clock_fit_probes(const clock_estimator_t *est, const clock_probe_t *probes, size_t n,
                     uint32_t a, uint32_t b, const clock_purity_opts_t *popts,
                     const clock_fit_opts_t *fopts, clock_edge_fit_t *out, clock_purity_stats_t *st,
                     char *err)
{
    assert(out);
    clock_purity_opts_t pdef;
    if (popts == NULL) {
        clock_purity_opts_default(&pdef);
        popts = &pdef;
    }
    clock_point_t *fwd = xmalloc((n ? n : 1) * sizeof *fwd);
    clock_point_t *rev = xmalloc((n ? n : 1) * sizeof *rev);
    size_t nf, nr;
    clock_edge_points(probes, n, a, b, popts, fwd, &nf, rev, &nr, st);
    int rc = clock_fit_edge(est, fwd, nf, rev, nr, fopts, out, err);
    free(fwd);
    free(rev);
    if (rc == BASE_OK) {
        out->window = 0;
        out->src = a;
        out->dst = b;
    }
    return rc;
}

int64_t clock_edge_map(const clock_edge_fit_t *fit, int64_t x)
{
    assert(fit);
    return clk_add_offset(x, fit->offset_ns, fit->drift_ppb * 1e-9 * clk_diff(x, fit->anchor_ns));
}
