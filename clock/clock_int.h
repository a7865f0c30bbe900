/*
 * Internal helpers shared by the files of clock/ (not part of the module's
 * interface): anchored arithmetic, selection, a seeded generator, the
 * estimator cores that other parts of the module reuse.
 */
#ifndef DP_CLOCK_INT_H
#define DP_CLOCK_INT_H

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "clock/clock.h"

/* a − b as a double, exact while |a − b| < 2^53 and never overflowing. */
static inline double clk_diff(int64_t a, int64_t b)
{
    int64_t d;
    if (__builtin_sub_overflow(a, b, &d))
        return (double)a - (double)b;
    return (double)d;
}

/*
 * a + llround(d), saturating where the sum does not fit.  An addend beyond
 * int64 may still have a sum that fits (a = −9e18, d = 1.8e19): such a d
 * is even (its lowest bits are zero), so it is added in two exact halves.
 */
static inline int64_t clk_add(int64_t a, double d)
{
    if (!isfinite(d))
        return a;
    int64_t r;
    if (fabs(d) < 0x1p63) {
        if (!__builtin_add_overflow(a, (int64_t)llround(d), &r))
            return r;
    } else if (fabs(d) < 0x1p64) {
        int64_t h = (int64_t)(d / 2);
        if (!__builtin_add_overflow(a, h, &r) && !__builtin_add_overflow(r, h, &r))
            return r;
    }
    return d > 0 ? INT64_MAX : INT64_MIN;
}

/*
 * (a − b) + o for readings a, b and an offset o as large as they: exact
 * where the sum fits (clk_diff(a, b) + o rounds each term to the doubles'
 * spacing first, 256 ns for clocks 55 years apart, though the sum is
 * small).  Terms below 2^40 ns (18 minutes) lose nothing that way.
 */
static inline double clk_diff_add(int64_t a, int64_t b, double o)
{
    int64_t d, s;
    if (fabs(o) < 0x1p63 && !__builtin_sub_overflow(a, b, &d)) {
        if (fabs(o) < 0x1p40 && d > -(INT64_C(1) << 40) && d < (INT64_C(1) << 40))
            return (double)d + o;
        int64_t w = (int64_t)o;
        if (!__builtin_add_overflow(d, w, &s))
            return (double)s + (o - (double)w);
    }
    return clk_diff(a, b) + o;
}

/*
 * x + llround(o + d) for an offset o as large as a clock reading and a small
 * d (as above): o's whole part w first, then the rest rounded as o + d is,
 * half away from zero on w's side.
 */
static inline int64_t clk_add_offset(int64_t x, double o, double d)
{
    if (!(fabs(o) >= 0x1p40))
        return clk_add(x, o + d);
    double w = trunc(o), f = (o - w) + d;
    return clk_add(clk_add(x, w), w > 0 ? floor(f + 0.5) : ceil(f - 0.5));
}

/*
 * Half the spacing of doubles at v: how far an offset held as a double may
 * be from the one it stands for (128 ns for a clock that reads 1970
 * against one that reads 2025).  0 below 2^40 ns, where it is under
 * 1.2e-4 ns and would only move printed figures in their last digit.
 */
static inline double clk_round_ns(double v)
{
    double a = fabs(v);
    return isfinite(a) && a >= 0x1p40 ? 0.5 * (nextafter(a, INFINITY) - a) : 0;
}

/* a + (b − a)/2 without overflow. */
static inline int64_t clk_mid(int64_t a, int64_t b)
{
    return a / 2 + b / 2 + ((a % 2) + (b % 2)) / 2;
}

/* floor(a / b) for b > 0. */
static inline int64_t clk_floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if ((a % b != 0) && (a < 0))
        q--;
    return q;
}

/* Seeded generator (splitmix64): deterministic, cheap, good enough for simulation. */
typedef struct clk_rng {
    uint64_t s;
} clk_rng_t;

static inline uint64_t clk_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline uint64_t clk_rng_next(clk_rng_t *r)
{
    r->s += 0x9e3779b97f4a7c15ULL;
    return clk_mix64(r->s);
}

/* Uniform in (0, 1). */
static inline double clk_rng_unit(clk_rng_t *r)
{
    return ((double)(clk_rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static inline double clk_rng_uniform(clk_rng_t *r, double lo, double hi)
{
    return lo + (hi - lo) * clk_rng_unit(r);
}

static inline double clk_rng_exp(clk_rng_t *r, double mean)
{
    return -mean * log(clk_rng_unit(r));
}

double clk_rng_gauss(clk_rng_t *r);
/* Standard normal that is a pure function of (seed, k). */
double clk_hash_gauss(uint64_t seed, uint64_t k);

/* k-th smallest (0-based) of v[0..n), reordering v. */
double clk_select(double *v, size_t n, size_t k);
/*
 * Drop the k points (X, Y) of a side furthest into the forbidden zone at
 * slope a: the k lowest Y − aX (lowest: a forward side) or the k highest
 * (a reverse side), the first of equal ones where the k-th is tied; the
 * rest keep their order.  z: room for 2n values.  Returns the count left.
 */
size_t clk_drop_extreme(double *X, double *Y, size_t n, double a, size_t k, bool lowest, double *z);
/* Median of v[0..n) (reorders v); NAN when n == 0. */
double clk_median(double *v, size_t n);
/* Quantile q in [0,1] of sorted v (linear interpolation). */
double clk_quantile_sorted(const double *v, size_t n, double q);
/*
 * Dense Cholesky, row-major, for small systems (the pooling's 2×2 to 4×4):
 * clk_chol factors a symmetric positive definite m×m matrix in place into
 * its lower factor (false: not positive definite); clk_chol_inverse writes
 * the inverse (col: m doubles of scratch).
 */
bool clk_chol(double *A, size_t m);
void clk_chol_inverse(const double *L, size_t m, double *inv, double *col);
/*
 * A sparse symmetric positive definite system (envelope.c): m unknowns,
 * entries on the diagonal and on the pairs (ia[i], ib[i]) (an end at −1,
 * the reference, adds none; the two ends of a pair differ).  NULL when its
 * factor would hold more than max_entries entries (*entries: how many, in
 * either case).  Add up the matrix (clk_env_add: a pair's entry once for
 * both its places, a diagonal entry once), factor it (a tiny ridge when
 * numerically singular; false: not positive definite even so), then solve
 * in place, invert inside the envelope (every diagonal and pair entry of
 * the inverse, read with clk_env_read_inverse) or solve for whole columns
 * of the inverse, up to CLK_ENV_BLOCK at a time.
 */
typedef struct clk_env clk_env_t;
clk_env_t *clk_env_new(size_t m, const int *ia, const int *ib, size_t n, size_t max_entries,
                       size_t *entries);
void clk_env_destroy(clk_env_t **self_p);
void clk_env_zero(clk_env_t *self);
void clk_env_add(clk_env_t *self, size_t i, size_t j, double v);
bool clk_env_factor(clk_env_t *self);
void clk_env_solve(clk_env_t *self, double *b);
void clk_env_invert(clk_env_t *self);
double clk_env_read_inverse(const clk_env_t *self, size_t i, size_t j);
#define CLK_ENV_BLOCK 8
void clk_env_solve_columns(clk_env_t *self, size_t j0, size_t nb, double *out);
int clk_cmp_double(const void *a, const void *b);
/*
 * First of the n elements of base (size bytes each, sorted) for which
 * before(elem, key) is false: where key is, or would go.
 */
size_t clk_lower_bound(const void *base, size_t n, size_t size, const void *key,
                       bool (*before)(const void *elem, const void *key));
/*
 * Growable sorted arrays (the history's tracks): room for one more element
 * (doubling the capacity from 16 when full; returns the array), a gap
 * opened at `at` of n elements (room for n + 1), element `at` of n removed,
 * and which end of n elements lies farther from `at` (what a capped track
 * drops).
 */
void *clk_array_reserve(void *base, size_t n, size_t *cap, size_t size);
void clk_array_open(void *base, size_t n, size_t size, size_t at);
void clk_array_close(void *base, size_t n, size_t size, size_t at);
size_t clk_array_far_end(size_t n, size_t at);
int clk_cmp_i64(const void *a, const void *b);

/*
 * Estimator cores on anchored sides; they share the clock_estimator_t
 * signature and are reused by the coarse alignment and the step detector.
 */
int clk_fit_svm(const clock_side_t *fwd, const clock_side_t *rev, const clock_fit_opts_t *opts,
                clock_line_t *out, char *err);
int clk_fit_hull(const clock_side_t *fwd, const clock_side_t *rev, const clock_fit_opts_t *opts,
                 clock_line_t *out, char *err);
int clk_fit_minrtt(const clock_side_t *fwd, const clock_side_t *rev, const clock_fit_opts_t *opts,
                   clock_line_t *out, char *err);
int clk_fit_ols(const clock_side_t *fwd, const clock_side_t *rev, const clock_fit_opts_t *opts,
                clock_line_t *out, char *err);

/*
 * Pooling a node's window map with the windows its history holds (history.c):
 * in is this window's own map, out the pooled one with its covariance
 * (ns², ns·ppb, ppb²).  False when nothing was pooled (no usable neighbour,
 * or every neighbour disagreed): keep the window's own map then, and cover
 * out->disagree_ns.
 */
typedef struct clk_pool_in {
    int64_t window;
    uint32_t ref;
    int64_t anchor;          /* node clock */
    double off, drift;       /* ns at anchor, ppb */
    double sd_off, sd_drift; /* 1σ, window to window */
    double half_s;           /* half the window, s */
    uint32_t max_windows;    /* on either side */
    double wander_floor_ppb;
    double delay; /* this window's slow-host bound, ns (0: none) */
} clk_pool_in_t;

typedef struct clk_pool_out {
    double off, drift;
    double P[2][2];
    double q;      /* frequency wander the bound is made for, ppb²/s */
    uint32_t used; /* other windows pooled */
    bool both;     /* windows on both sides went in */
    /*
     * When false because this window's map disagrees with what its
     * neighbours predict (beyond 6σ) and they cannot outvote it: how far
     * the prediction is from it at the window's worse end (ns; 0
     * otherwise); P and q are then the prediction's.
     */
    double disagree_ns;
} clk_pool_out_t;

bool clk_history_pool(const clock_history_t *self, uint32_t node, const clk_pool_in_t *in,
                      clk_pool_out_t *out);
/*
 * What the solve takes from an edge fit's uncertainty (U at coverage kcov):
 * the variance of its offset at its anchor (ns², the σ its margin is held
 * to too) and its drift's σ (a fraction).
 */
void clk_edge_sigmas(const clock_edge_fit_t *e, double kcov, double *vb, double *sigd);
/*
 * How far edge e's margin stands raised above its level in opts->history,
 * as the solve's slow-host bounds read it: NAN without a level (or margin),
 * 0 within margin_z of its noise, else the rise plus 2 of that noise.  sig0
 * is the edge's offset σ at its anchor, the least noise a margin is held
 * to; *sd gets the noise used, *earlier (where not NULL) how many earlier
 * windows the level has.  One test for the solve and for the history's
 * skip of windows with nothing raised, so the two cannot disagree.
 */
double clk_margin_raised(const clock_solve_opts_t *opts, const clock_edge_fit_t *e, double sig0,
                         double *sd, size_t *earlier);

#endif /* DP_CLOCK_INT_H */
