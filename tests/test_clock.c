/*
 * Unit tests for clock/: estimators on constructed point sets with known
 * answers, the purity filter, the network solver on graphs, step detection,
 * precision at CLOCK_REALTIME magnitudes, domain conversion, the simulated
 * clock, the §4.5 JSON lines, and a small simulate → fit → evaluate run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock/clock.h"
#include "clock/clock_int.h"

#define T0 1790000000000000000LL /* a CLOCK_REALTIME-sized instant */

/* Deterministic uniform in [0, 1). */
static double urand(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static double gauss(uint64_t *s)
{
    double u1 = urand(s) + 1e-12, u2 = urand(s);
    return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

/* True offset line of an edge: θ(x) = O + D·1e-9·(x − L). */
typedef struct line_truth {
    int64_t L;
    double O, D;
} line_truth_t;

static double theta(const line_truth_t *t, int64_t x)
{
    return t->O + t->D * 1e-9 * (double)(x - t->L);
}

/*
 * n points per side over `span` ns from T0: forward above the line by dmin +
 * queue (exponential, mean qmean, on a share qfrac of points) + noise,
 * reverse below it the same way.
 */
static void make_points(const line_truth_t *t, size_t n, int64_t span, double dmin, double qfrac,
                        double qmean, double noise, uint64_t seed, clock_point_t *fwd,
                        clock_point_t *rev)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        int64_t xf = T0 + (int64_t)((double)span * ((double)i + 0.3) / (double)n);
        int64_t xr = T0 + (int64_t)((double)span * ((double)i + 0.7) / (double)n);
        double qf = urand(&s) < qfrac ? -qmean * log(urand(&s) + 1e-12) : 0;
        double qr = urand(&s) < qfrac ? -qmean * log(urand(&s) + 1e-12) : 0;
        fwd[i] =
            (clock_point_t){xf, (int64_t)llround(theta(t, xf) + dmin + qf + noise * gauss(&s))};
        rev[i] =
            (clock_point_t){xr, (int64_t)llround(theta(t, xr) - dmin - qr + noise * gauss(&s))};
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* |fitted − true| of an edge map, worst of the ends and the middle of [lo, hi]. */
static double edge_error(const clock_edge_fit_t *f, const line_truth_t *t, int64_t lo, int64_t hi)
{
    double worst = 0;
    for (int j = 0; j <= 2; j++) {
        int64_t x = lo + (hi - lo) / 2 * j;
        double fit = f->offset_ns + f->drift_ppb * 1e-9 * (double)(x - f->anchor_ns);
        worst = fmax(worst, fabs(fit - theta(t, x)));
    }
    return worst;
}

/* ---- estimators ---- */

static void test_estimator_table(void **state)
{
    (void)state;
    size_t n;
    const clock_estimator_t *const *e = clock_estimators(&n);
    assert_int_equal(n, 4);
    assert_string_equal(e[0]->name, "svm");
    assert_ptr_equal(clock_estimator_default(), e[0]);
    const char *names[] = {"svm", "hull", "minrtt", "ols"};
    for (size_t i = 0; i < 4; i++) {
        assert_non_null(clock_estimator_find(names[i]));
        assert_string_equal(clock_estimator_find(names[i])->name, names[i]);
    }
    assert_null(clock_estimator_find("nope"));
    assert_null(clock_estimator_find(NULL));
}

/* Constant delays, no noise: every estimator must find the exact line. */
static void test_exact_lines(void **state)
{
    (void)state;
    line_truth_t t = {T0 + 1000000000LL, 1234567.25, 42.5};
    clock_point_t fwd[200], rev[200];
    make_points(&t, 200, 2000000000LL, 8000, 0, 0, 0, 1, fwd, rev);
    /* Both directions at the same instants: the feasible band is symmetric, so even the
     * hull's midline is exact. */
    for (size_t i = 0; i < 200; i++)
        rev[i] = (clock_point_t){fwd[i].x, (int64_t)llround(theta(&t, fwd[i].x) - 8000)};
    size_t n;
    const clock_estimator_t *const *e = clock_estimators(&n);
    for (size_t i = 0; i < n; i++) {
        clock_edge_fit_t f;
        char err[BASE_ERRLEN];
        assert_int_equal(clock_fit_edge(e[i], fwd, 200, rev, 200, NULL, &f, err), BASE_OK);
        double er = edge_error(&f, &t, T0, T0 + 2000000000LL);
        if (er > 2.0)
            fail_msg("%s: error %.3f ns on an exact line", e[i]->name, er);
        /* Points are whole ns: half a ns of rounding over a second is half a ppb. */
        if (fabs(f.drift_ppb - 42.5) > 1.0)
            fail_msg("%s: drift %.3f ppb, want 42.5", e[i]->name, f.drift_ppb);
        assert_int_equal(f.n_fwd, 200);
        assert_int_equal(f.n_rev, 200);
        assert_true(f.uncertainty_ns >= 1.0);
        assert_string_equal(f.estimator, e[i]->name);
        /* Half the round trip: the margin of a noise-free band is the one-way delay. */
        assert_true(fabs(f.margin_ns - 8000) < 5);
    }
}

/* Queuing only pushes points away from the line: svm and hull must not care, ols must. */
static void test_queuing_robustness(void **state)
{
    (void)state;
    line_truth_t t = {T0 + 1000000000LL, -5000000.0, -310.0};
    clock_point_t fwd[400], rev[400];
    make_points(&t, 400, 2000000000LL, 12000, 0.6, 20000, 30, 7, fwd, rev);
    clock_edge_fit_t f;
    char err[BASE_ERRLEN];
    assert_int_equal(clock_fit_edge(clock_estimator_find("svm"), fwd, 400, rev, 400, NULL, &f, err),
                     BASE_OK);
    double esvm = edge_error(&f, &t, T0, T0 + 2000000000LL);
    assert_int_equal(
        clock_fit_edge(clock_estimator_find("hull"), fwd, 400, rev, 400, NULL, &f, err), BASE_OK);
    double ehull = edge_error(&f, &t, T0, T0 + 2000000000LL);
    assert_int_equal(clock_fit_edge(clock_estimator_find("ols"), fwd, 400, rev, 400, NULL, &f, err),
                     BASE_OK);
    double eols = edge_error(&f, &t, T0, T0 + 2000000000LL);
    if (!(esvm < 40 && ehull < 150 && eols > 500))
        fail_msg("queued data: svm %.1f hull %.1f ols %.1f ns", esvm, ehull, eols);
}

/*
 * One direction queued far more than the other (a link loaded one way): the
 * soft margin's two boundaries then sit at different depths of the two
 * unqueued cores, about 17 ns off here (checked: 16.9 ns mean); svm centres on the cores instead.
 */
static void test_svm_unequal_queuing(void **state)
{
    (void)state;
    enum { N = 400, RUNS = 16 };
    clock_point_t busy_f[N], busy_r[N], quiet_f[N], quiet_r[N];
    double sum = 0, worst = 0;
    int covered = 0;
    for (int run = 0; run < RUNS; run++) {
        line_truth_t t = {T0 + 1000000000LL, 3000000.0 + 1000.0 * run, 40.0 * run - 300.0};
        make_points(&t, N, 2000000000LL, 9000, 0.75, 20000, 40, 100 + (uint64_t)run, busy_f,
                    busy_r);
        make_points(&t, N, 2000000000LL, 9000, 0.05, 20000, 40, 200 + (uint64_t)run, quiet_f,
                    quiet_r);
        /* Even runs load the forward direction, odd ones the reverse. */
        const clock_point_t *f = run % 2 ? quiet_f : busy_f, *r = run % 2 ? busy_r : quiet_r;
        clock_edge_fit_t fit;
        char err[BASE_ERRLEN];
        assert_int_equal(clock_fit_edge(clock_estimator_find("svm"), f, N, r, N, NULL, &fit, err),
                         BASE_OK);
        double e = fit.offset_ns - theta(&t, fit.anchor_ns);
        sum += run % 2 ? -e : e; /* the soft margin's bias changes sign with the loaded side */
        worst = fmax(worst, fabs(e));
        covered += fabs(e) <= fit.uncertainty_ns;
    }
    if (!(fabs(sum / RUNS) < 4.0 && worst < 15.0 && covered >= RUNS - 2))
        fail_msg("one side queued: mean error %.1f ns, worst %.1f ns, %d of %d covered", sum / RUNS,
                 worst, covered, RUNS);
}

/*
 * Delays that spread from their edge with no separate core (a software
 * path's scheduling, wider one way than the other): the edge is the guide,
 * and svm must not centre on "cores" as wide as the sides.  Delays over the
 * same minimum, each the sum of three exponentials, 0.3 µs forward and 0.9
 * µs reverse: nothing can see that they are not path asymmetry, but the
 * edges are 430 ns off and the two humps' centres 770 ns (checked: a refit
 * allowed here, without the far-queue test, lands at 768 ns).  And delays
 * falling from the edge (one exponential, 1 and 3 µs): 42 ns off at the
 * edges, 204 ns when the peak test is off.
 */
static void test_svm_spread_delays(void **state)
{
    (void)state;
    enum { N = 400 };
    /* shape 3: humps (a "core" as wide as the side); shape 1: delays that fall from the edge */
    static const struct {
        int shape;
        double scale_f, scale_r, bound;
    } cases[] = {{3, 300, 900, 600}, {1, 1000, 3000, 120}};
    clock_point_t fwd[N], rev[N];
    line_truth_t t = {T0 + 1000000000LL, -2500000.0, 120.0};
    for (size_t c = 0; c < BASE_ARRAY_LEN(cases); c++) {
        uint64_t s = 99;
        for (size_t i = 0; i < N; i++) {
            int64_t xf = T0 + (int64_t)(2e9 * ((double)i + 0.3) / N);
            int64_t xr = T0 + (int64_t)(2e9 * ((double)i + 0.7) / N);
            double qf = 0, qr = 0;
            for (int j = 0; j < cases[c].shape; j++) {
                qf -= cases[c].scale_f * log(urand(&s) + 1e-12);
                qr -= cases[c].scale_r * log(urand(&s) + 1e-12);
            }
            fwd[i] = (clock_point_t){xf, (int64_t)llround(theta(&t, xf) + 3000 + qf)};
            rev[i] = (clock_point_t){xr, (int64_t)llround(theta(&t, xr) - 3000 - qr)};
        }
        clock_edge_fit_t fit;
        char err[BASE_ERRLEN];
        assert_int_equal(
            clock_fit_edge(clock_estimator_find("svm"), fwd, N, rev, N, NULL, &fit, err), BASE_OK);
        double e = fit.offset_ns - theta(&t, fit.anchor_ns);
        if (!(fabs(e) < cases[c].bound))
            fail_msg("spread delays (shape %d): offset %.1f ns off", cases[c].shape, e);
    }
}

/*
 * A small window under heavy queuing: 40 points a side, half of them
 * queued, as a busy link probed every 20 ms gives.  svm's fit is good to
 * ~10 ns there, but subsets of 5 points a side fitted alone scatter by
 * microseconds (one point in the margin, no core): the uncertainty came out
 * 43 times the error (median 670 ns against 16 ns, with jackknife_below 0).
 * The jackknife gives 46 ns and covers 47 of the 48.
 */
static void test_svm_small_window(void **state)
{
    (void)state;
    enum { N = 40, RUNS = 48 };
    clock_point_t f[N], r[N];
    double err[RUNS], unc[RUNS];
    int covered = 0;
    for (int run = 0; run < RUNS; run++) {
        line_truth_t t = {T0 + 1000000000LL, 1500000.0 - 700.0 * run, 25.0 * run - 400.0};
        make_points(&t, N, 2000000000LL, 9000, 0.5, 5000, 40, 300 + (uint64_t)run, f, r);
        clock_edge_fit_t fit;
        char msg[BASE_ERRLEN];
        assert_int_equal(clock_fit_edge(clock_estimator_find("svm"), f, N, r, N, NULL, &fit, msg),
                         BASE_OK);
        if (fit.step)
            fail_msg("small busy window %d: a clock step where there is none", run);
        err[run] = edge_error(&fit, &t, fit.from_ns, fit.to_ns);
        unc[run] = fit.uncertainty_ns;
        covered += err[run] <= unc[run];
    }
    qsort(err, RUNS, sizeof *err, cmp_double);
    qsort(unc, RUNS, sizeof *unc, cmp_double);
    double me = err[RUNS / 2], mu = unc[RUNS / 2];
    if (!(covered >= RUNS * 9 / 10 && mu <= 10 * me && me < 40))
        fail_msg("small busy windows: %d of %d covered, median error %.1f ns, median "
                 "uncertainty %.1f ns",
                 covered, RUNS, me, mu);
}

/*
 * hull's batches drop exactly the k points furthest into the forbidden
 * zone, the first of equal ones where the k-th is tied, and keep the
 * others in their order.
 */
static void test_drop_extreme(void **state)
{
    (void)state;
    /* Y − 2X: 5, 1, 3, 1, 1, 7, 3 */
    const double X0[] = {0, 1, 2, 3, 4, 5, 6}, Y0[] = {5, 3, 7, 7, 9, 17, 15};
    double X[7], Y[7], z[14];
    const struct {
        size_t k;
        bool lowest;
        size_t left;
        double keep[7]; /* the X kept, in order */
    } cs[] = {
        {1, true, 6, {0, 2, 3, 4, 5, 6}}, /* the first of three tied at 1 */
        {2, true, 5, {0, 2, 4, 5, 6}},
        {3, true, 4, {0, 2, 5, 6}},
        {4, true, 3, {0, 5, 6}}, /* the three 1s and the first 3 */
        {1, false, 6, {0, 1, 2, 3, 4, 6}},
        {2, false, 5, {1, 2, 3, 4, 6}}, /* 7 and 5 */
        {3, false, 4, {1, 3, 4, 6}},    /* and the first of the tied 3s */
        {0, true, 7, {0, 1, 2, 3, 4, 5, 6}},
        {7, false, 0, {0}},
    };
    for (size_t c = 0; c < BASE_ARRAY_LEN(cs); c++) {
        memcpy(X, X0, sizeof X);
        memcpy(Y, Y0, sizeof Y);
        size_t left = clk_drop_extreme(X, Y, 7, 2.0, cs[c].k, cs[c].lowest, z);
        assert_int_equal(left, cs[c].left);
        for (size_t i = 0; i < left; i++) {
            assert_true(X[i] == cs[c].keep[i]);
            assert_true(Y[i] == Y0[(size_t)X[i]]);
        }
    }
}

/*
 * Sides that overlap throughout (stamp noise beyond the delay): hull drops
 * its n/50 worst violators, the first 32 pairs one at a time and then in
 * doubling batches (one at a time, such a window of 320 000 samples took
 * 56 s).  Its line must still hold the truth within its uncertainty.
 */
static void test_hull_overlapping_sides(void **state)
{
    (void)state;
    enum { N = 4000 };
    clock_point_t *f = malloc(2 * N * sizeof *f), *r = f + N;
    assert_non_null(f);
    line_truth_t t = {T0 + 1000000000LL, -2500000.0, 37000.0};
    make_points(&t, N, 2000000000LL, 0, 0, 0, 8000, 17, f, r);
    clock_edge_fit_t fit;
    char err[BASE_ERRLEN];
    assert_int_equal(clock_fit_edge(clock_estimator_find("hull"), f, N, r, N, NULL, &fit, err),
                     BASE_OK);
    double e = edge_error(&fit, &t, fit.from_ns, fit.to_ns);
    print_message("hull, overlapping sides: %.0f ns off at ±%.0f ns\n", e, fit.uncertainty_ns);
    assert_true(e <= fit.uncertainty_ns);
    free(f);
}

/* A few points deep in the forbidden zone must not drag svm or hull along. */
static void test_forbidden_zone_outliers(void **state)
{
    (void)state;
    line_truth_t t = {T0 + 1000000000LL, 777.0, 5.0};
    clock_point_t fwd[300], rev[300];
    make_points(&t, 300, 2000000000LL, 6000, 0.3, 3000, 20, 3, fwd, rev);
    /* Three forward points 4 µs below the line, two reverse points 3 µs above it. */
    for (int i = 0; i < 3; i++)
        fwd[50 + 80 * i].y = (int64_t)llround(theta(&t, fwd[50 + 80 * i].x) - 4000);
    for (int i = 0; i < 2; i++)
        rev[100 + 90 * i].y = (int64_t)llround(theta(&t, rev[100 + 90 * i].x) + 3000);
    const char *names[] = {"svm", "hull"};
    for (int k = 0; k < 2; k++) {
        clock_edge_fit_t f;
        char err[BASE_ERRLEN];
        assert_int_equal(
            clock_fit_edge(clock_estimator_find(names[k]), fwd, 300, rev, 300, NULL, &f, err),
            BASE_OK);
        double er = edge_error(&f, &t, T0, T0 + 2000000000LL);
        if (er > 60)
            fail_msg("%s with forbidden-zone outliers: error %.1f ns", names[k], er);
    }
}

/*
 * One pure sample 100 µs deep in the forbidden zone (both receive stamps
 * early by as much, so its gap passes the purity filter), near a window's
 * end or in its middle: it is set aside and counted, fakes no step and
 * leaves the uncertainty within twice the clean window's (it put a step
 * of −4 µs in the end block, and in the middle a bend that took the
 * uncertainty from 17 to 750 ns).  The same 100 µs held by every sample
 * from there on, a real step, is still one.  Every estimator.
 */
static void test_isolated_outlier_is_no_step(void **state)
{
    (void)state;
    line_truth_t t = {T0 + 1000000000LL, 250000.0, 20.0};
    enum { N = 600 };
    clock_point_t fwd[N], rev[N], f2[N], r2[N];
    make_points(&t, N, 2000000000LL, 9000, 0.05, 2000, 40, 41, fwd, rev);
    char err[BASE_ERRLEN];
    size_t ne;
    const clock_estimator_t *const *e = clock_estimators(&ne);
    for (size_t k = 0; k < ne; k++) {
        clock_edge_fit_t clean, f;
        assert_int_equal(clock_fit_edge(e[k], fwd, N, rev, N, NULL, &clean, err), BASE_OK);
        assert_false(clean.step);
        assert_int_equal(clean.set_aside, 0);
        const size_t at[3] = {N - 8, N / 2, 5}; /* 1.3 % from the end, the middle, the start */
        for (int j = 0; j < 3; j++) {
            memcpy(f2, fwd, sizeof f2);
            memcpy(r2, rev, sizeof r2);
            /* A forward sample below the line; for the start, a reverse one above it. */
            if (j < 2)
                f2[at[j]].y -= 100000;
            else
                r2[at[j]].y += 100000;
            assert_int_equal(clock_fit_edge(e[k], f2, N, r2, N, NULL, &f, err), BASE_OK);
            double er = edge_error(&f, &t, T0, T0 + 2000000000LL);
            if (f.step || f.set_aside != 1 || f.n_fwd + f.n_rev != 2 * N - 1 ||
                f.uncertainty_ns > 2 * clean.uncertainty_ns || er > 2 * clean.uncertainty_ns)
                fail_msg("%s, outlier at %zu: step %d (%.0f ns), %u set aside, %u+%u samples, "
                         "uncertainty %.1f ns (clean %.1f), error %.1f ns",
                         e[k]->name, at[j], f.step, f.step_ns, f.set_aside, f.n_fwd, f.n_rev,
                         f.uncertainty_ns, clean.uncertainty_ns, er);
        }
        /* Two outliers next to each other are errors too; three in a row pass for a step. */
        memcpy(f2, fwd, sizeof f2);
        f2[N - 8].y -= 100000;
        f2[N - 7].y -= 100000;
        assert_int_equal(clock_fit_edge(e[k], f2, N, rev, N, NULL, &f, err), BASE_OK);
        if (f.step || f.set_aside != 2)
            fail_msg("%s, two outliers: step %d, %u set aside", e[k]->name, f.step, f.set_aside);
        /* A step of the same size there: every later sample moves, both sides. */
        memcpy(f2, fwd, sizeof f2);
        memcpy(r2, rev, sizeof r2);
        int64_t step_at = fwd[N - 24].x;
        for (size_t i = 0; i < N; i++) {
            f2[i].y -= f2[i].x >= step_at ? 100000 : 0;
            r2[i].y -= r2[i].x >= step_at ? 100000 : 0;
        }
        assert_int_equal(clock_fit_edge(e[k], f2, N, r2, N, NULL, &f, err), BASE_OK);
        if (!f.step || fabs(f.step_ns + 100000) > 30000 || f.set_aside != 0)
            fail_msg("%s, step of -100 us 4 %% from the end: step %d, %.0f ns, %u set aside",
                     e[k]->name, f.step, f.step_ns, f.set_aside);
    }
}

/*
 * A sample with a wild stamp, far from the window's others (a receive
 * stamp 46 years off, which the decoder's ±2^62 lets through): it is set
 * aside and counted, and the window fits as without it; it used to fail
 * the whole window.  A forward sample whose offset is wild, and a reverse
 * one whose receive stamp (its time) is.
 */
static void test_far_sample_set_aside(void **state)
{
    (void)state;
    line_truth_t t = {T0 + 1000000000LL, -3000000.0, 40.0};
    enum { N = 300 };
    clock_point_t fwd[N], rev[N];
    make_points(&t, N, 2000000000LL, 9000, 0.05, 2000, 40, 43, fwd, rev);
    clock_edge_fit_t clean, f;
    char err[BASE_ERRLEN];
    assert_int_equal(clock_fit_edge(NULL, fwd, N, rev, N, NULL, &clean, err), BASE_OK);
    const int64_t wild = INT64_C(4000000000000000000);
    fwd[100].y -= wild;     /* its receive stamp early */
    rev[200].x += wild / 2; /* its receive stamp late... */
    rev[200].y -= wild / 2; /* ...moves both */
    assert_int_equal(clock_fit_edge(NULL, fwd, N, rev, N, NULL, &f, err), BASE_OK);
    assert_int_equal(f.set_aside, 2);
    assert_int_equal(f.n_fwd, N - 1);
    assert_int_equal(f.n_rev, N - 1);
    assert_false(f.step);
    assert_true(f.to_ns < T0 + 2000000000LL && f.from_ns >= T0);
    assert_true(fabs(f.offset_ns - clean.offset_ns) < clean.uncertainty_ns);
    assert_true(f.uncertainty_ns < 2 * clean.uncertainty_ns);
    assert_true(edge_error(&f, &t, T0, T0 + 2000000000LL) < clean.uncertainty_ns);

    /* Too few left once it is gone: the error says what was set aside. */
    assert_int_equal(clock_fit_edge(NULL, fwd + 97, 4, rev, N, NULL, &f, err), BASE_ERR);
    assert_non_null(strstr(err, "too few"));
    assert_non_null(strstr(err, "2 more set aside"));
}

static void test_too_few_and_one_sided(void **state)
{
    (void)state;
    line_truth_t t = {T0, 0, 0};
    clock_point_t fwd[50], rev[50];
    make_points(&t, 50, 1000000000LL, 5000, 0, 0, 10, 5, fwd, rev);
    clock_edge_fit_t f;
    char err[BASE_ERRLEN] = "";
    size_t n;
    const clock_estimator_t *const *e = clock_estimators(&n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(clock_fit_edge(e[i], fwd, 50, rev, 0, NULL, &f, err), BASE_ERR);
        assert_non_null(strstr(err, "one-sided"));
        assert_int_equal(clock_fit_edge(e[i], fwd, 0, rev, 50, NULL, &f, err), BASE_ERR);
        assert_int_equal(clock_fit_edge(e[i], fwd, 3, rev, 50, NULL, &f, err), BASE_ERR);
        assert_non_null(strstr(err, "too few"));
        assert_int_equal(clock_fit_edge(e[i], fwd, 50, rev, 3, NULL, &f, err), BASE_ERR);
    }
    /*
     * Every point at one instant: an offset there, and a drift that nothing
     * bounds (its uncertainty read 0, as if known exactly).
     */
    for (int j = 0; j < 50; j++)
        fwd[j].x = rev[j].x = T0;
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(clock_fit_edge(e[i], fwd, 50, rev, 50, NULL, &f, err), BASE_OK);
        assert_true(f.from_ns == T0 && f.to_ns == T0);
        assert_true(isnan(f.drift_unc_ppb));
        assert_true(isfinite(f.offset_ns) && f.uncertainty_ns > 0);
    }
}

enum { UNEVEN_N = 400, UNEVEN_RUNS = 40 };

/* UNEVEN_RUNS clean windows, the forward side squeezed into the first `cover` of each. */
static void uneven_runs(const char *name, double cover, unsigned seed, int *covered, double *worst)
{
    line_truth_t t = {T0, 1e6, 20000};
    static clock_point_t fwd[UNEVEN_N], rev[UNEVEN_N];
    char err[BASE_ERRLEN] = "";
    clock_edge_fit_t f;
    *covered = 0;
    *worst = 0;
    for (int run = 0; run < UNEVEN_RUNS; run++) {
        make_points(&t, UNEVEN_N, 2000000000LL, 20000, 0, 0, 50, seed + (unsigned)run, fwd, rev);
        for (size_t i = 0; i < UNEVEN_N; i++) {
            int64_t x = T0 + (int64_t)((double)(fwd[i].x - T0) * cover);
            fwd[i].y += (int64_t)llround(theta(&t, x) - theta(&t, fwd[i].x));
            fwd[i].x = x;
        }
        assert_int_equal(
            clock_fit_edge(clock_estimator_find(name), fwd, UNEVEN_N, rev, UNEVEN_N, NULL, &f, err),
            BASE_OK);
        assert_true(strcmp(name, "svm") != 0 || fabs(f.drift_ppb - 20000) < 100);
        double e = edge_error(&f, &t, T0, T0 + 2000000000LL);
        *worst = fmax(*worst, e);
        *covered += e <= f.uncertainty_ns;
    }
    print_message("%s, forward over %.0f %% of the window: %d of %d covered, worst %.1f ns\n", name,
                  100 * cover, *covered, UNEVEN_RUNS, *worst);
}

/*
 * One direction over part of the window only (its probes lost, or queued and
 * filtered, for the rest): svm's soft margin has no maximum when half of
 * each side must stand apart, and must not take the end of its search for
 * one (a drift of 2.1e9 ppb, 3 s off).  Nor may the side that covers less
 * pull the line: each side's margin is measured from its own mean time, so
 * the fit stays within its uncertainty (measured from a common origin, none
 * of 200 draws was at 50 % cover, 130 ns off at the median).  Nor may it
 * pull hull's feasible band: the middle of its slopes was 1.3 µs off at 90 %
 * cover, 175 µs at 10 %, none of 40 covered; its two ends weighted by the
 * times between the sides' far ends, it is off by at most a few times what
 * it is with both sides over the whole window (hull's own fits of such clean
 * windows are covered less often than svm's, 35 of 40 then).  A slope hint from a
 * broken window starts no search outside plausible clocks; sides apart in
 * time fix no offset at all and are said.
 */
static void test_uneven_coverage(void **state)
{
    (void)state;
    enum { N = UNEVEN_N, RUNS = UNEVEN_RUNS };
    line_truth_t t = {T0, 1e6, 20000};
    static clock_point_t fwd[N], rev[N];
    const double covers[] = {0.9, 0.5, 0.3, 0.1};
    char err[BASE_ERRLEN] = "";
    clock_edge_fit_t f;
    int covered, even_covered;
    double worst, even_worst;
    uneven_runs("hull", 1, 11, &even_covered, &even_worst);
    for (size_t c = 0; c < sizeof covers / sizeof covers[0]; c++) {
        uneven_runs("svm", covers[c], 11 + 100 * (unsigned)c, &covered, &worst);
        assert_true(covered >= RUNS * 85 / 100);
        assert_true(worst < 60);
        uneven_runs("hull", covers[c], 11 + 100 * (unsigned)c, &covered, &worst);
        assert_true(covered >= even_covered / 2);
        assert_true(worst < 4 * even_worst);
    }
    make_points(&t, N, 2000000000LL, 20000, 0, 0, 50, 3, fwd, rev);
    clock_fit_opts_t o;
    clock_fit_opts_default(&o);
    o.slope_hint = -5;
    assert_int_equal(clock_fit_edge(clock_estimator_find("svm"), fwd, N, rev, N, &o, &f, err),
                     BASE_OK);
    assert_true(fabs(f.drift_ppb - 20000) < 100);
    for (size_t i = 0; i < N; i++) { /* forward in the first second, reverse in the next */
        fwd[i].x = T0 + (fwd[i].x - T0) / 2;
        rev[i].x = T0 + 1000000000LL + (rev[i].x - T0) / 2;
    }
    for (size_t i = 0; i < 2; i++) {
        const char *name = i == 0 ? "svm" : "hull";
        assert_int_equal(clock_fit_edge(clock_estimator_find(name), fwd, N, rev, N, NULL, &f, err),
                         BASE_ERR);
        assert_non_null(strstr(err, "no slope separates"));
    }
    /*
     * Sides that overlap for next to no time: nothing bounds hull's slopes
     * one way.  Its end there stood at the widest margin's slope, and
     * weighted by its short L the line went to the band's edge: 20 µs off
     * at ±1–3 ns.
     */
    for (int run = 0; run < 10; run++) {
        make_points(&t, N, 2000000000LL, 20000, 0, 0, 50, 900 + (unsigned)run, fwd, rev);
        for (size_t i = 0; i < N; i++) {
            int64_t xf = T0 + (int64_t)((double)(fwd[i].x - T0) * 0.5017);
            int64_t xr = T0 + 999800000LL + (int64_t)((double)(rev[i].x - T0) * 0.5001);
            fwd[i].y += (int64_t)llround(theta(&t, xf) - theta(&t, fwd[i].x));
            rev[i].y += (int64_t)llround(theta(&t, xr) - theta(&t, rev[i].x));
            fwd[i].x = xf;
            rev[i].x = xr;
        }
        assert_int_equal(
            clock_fit_edge(clock_estimator_find("hull"), fwd, N, rev, N, NULL, &f, err), BASE_OK);
        double e = edge_error(&f, &t, T0, T0 + 2000000000LL);
        if (e > f.uncertainty_ns)
            fail_msg("sides 0.4 %% of the window together: %.0f ns off at ±%.0f", e,
                     f.uncertainty_ns);
    }
}

/* One edge's points fitted from its end and, mirrored, from the other. */
static void fit_both_ends(const clock_estimator_t *est, const clock_point_t *fwd, size_t nf,
                          const clock_point_t *rev, size_t nr, clock_edge_fit_t *a,
                          clock_edge_fit_t *b)
{
    clock_point_t *mf = xmalloc((nr + 1) * sizeof *mf), *mr = xmalloc((nf + 1) * sizeof *mr);
    for (size_t i = 0; i < nr; i++) /* a reverse point (x, y) is (x + y, −y) from the other end */
        mf[i] = (clock_point_t){rev[i].x + rev[i].y, -rev[i].y};
    for (size_t i = 0; i < nf; i++)
        mr[i] = (clock_point_t){fwd[i].x + fwd[i].y, -fwd[i].y};
    char err[BASE_ERRLEN];
    assert_int_equal(clock_fit_edge(est, fwd, nf, rev, nr, NULL, a, err), BASE_OK);
    assert_int_equal(clock_fit_edge(est, mf, nr, mr, nf, NULL, b, err), BASE_OK);
    free(mf);
    free(mr);
}

/*
 * The two ends' uncertainties: the same but for the clock they are read on
 * (1 + D apart).  Taken on the fitting end's X, minrtt's were 43 % apart
 * (254 and 146 ns: other pairs) and one svm fit in 45 was 4.5 % apart.
 */
static void mirror_same_spread(const char *name, int run, const clock_edge_fit_t *a,
                               const clock_edge_fit_t *b)
{
    if (fabs(a->uncertainty_ns - b->uncertainty_ns) > 1e-3 * a->uncertainty_ns + 0.01)
        fail_msg("%s, draw %d: uncertainties %.3f and %.3f ns", name, run, a->uncertainty_ns,
                 b->uncertainty_ns);
}

/*
 * The same probes seen from the other end: a forward point (x, y) of a → b
 * is a reverse point (x + y, −y) of b → a, and the other way round.  Every
 * estimator's map of b → a is the inverse of its map of a → b, queued or
 * not (within 0.2 ns over 30 draws each; hull's weights swap ends too).
 */
static void test_edge_mirror(void **state)
{
    (void)state;
    enum { N = 500 };
    static clock_point_t fwd[N], rev[N];
    size_t ne;
    const clock_estimator_t *const *e = clock_estimators(&ne);
    const double queued[3] = {0, 0.5, 0.9};
    for (size_t k = 0; k < ne; k++)
        for (int q = 0; q < 3; q++)
            for (int run = 0; run < 30; run++) {
                line_truth_t t = {T0 + 1000000000LL, 1234567.25, 20000};
                make_points(&t, N, 2000000000LL, 10000, queued[q], 5000, 40, 77 + (unsigned)run,
                            fwd, rev);
                clock_edge_fit_t a, b;
                fit_both_ends(e[k], fwd, N, rev, N, &a, &b);
                for (int j = 0; j <= 2; j++) {
                    int64_t x = a.from_ns + (a.to_ns - a.from_ns) / 2 * j;
                    double o1 = a.offset_ns + a.drift_ppb * 1e-9 * (double)(x - a.anchor_ns);
                    int64_t xb = x + (int64_t)llround(o1);
                    double o2 = b.offset_ns + b.drift_ppb * 1e-9 * (double)(xb - b.anchor_ns);
                    if (fabs(o1 + o2) > 1)
                        fail_msg("%s, %.0f %% queued, draw %d: %.2f ns apart", e[k]->name,
                                 100 * queued[q], run, o1 + o2);
                }
                mirror_same_spread(e[k]->name, run, &a, &b);
            }
    /*
     * A margin is a length on the rate the two clocks share, whichever end
     * reads it: at 500 ppm one of 10 µs was 5 ns longer read from B.
     */
    for (size_t k = 0; k < ne; k++)
        for (int run = 0; run < 10; run++) {
            line_truth_t t = {T0 + 1000000000LL, -7654321.5, 500000};
            make_points(&t, N, 2000000000LL, 10000, 0.3, 5000, 40, 500 + (unsigned)run, fwd, rev);
            clock_edge_fit_t a, b;
            fit_both_ends(e[k], fwd, N, rev, N, &a, &b);
            if (!(a.margin_ns > 1000) || fabs(a.margin_ns - b.margin_ns) > 0.05)
                fail_msg("%s, draw %d: margins %.3f and %.3f ns", e[k]->name, run, a.margin_ns,
                         b.margin_ns);
            mirror_same_spread(e[k]->name, run, &a, &b);
        }
    /*
     * Probes whose flights share a middle: one point in 40 with a twin 1 µs
     * earlier (reverse) or later (forward) and 2 µs nearer the line.  Each
     * end met the twins in its own order, and ols paired them otherwise
     * (2.5–6.2 ns apart).
     */
    enum { NT = N + N / 40 + 1 };
    static clock_point_t tf[NT], tr[NT];
    for (size_t k = 0; k < ne; k++)
        for (int run = 0; run < 10; run++) {
            line_truth_t t = {T0 + 1000000000LL, 1234567.25, 20000};
            make_points(&t, N, 2000000000LL, 10000, 0.3, 5000, 40, 700 + (unsigned)run, fwd, rev);
            size_t nf = 0, nr = 0;
            for (size_t i = 0; i < N; i++) {
                tf[nf++] = fwd[i];
                tr[nr++] = rev[i];
                if (i % 40 == 7)
                    tf[nf++] = (clock_point_t){fwd[i].x + 1000, fwd[i].y - 2000};
                if (i % 40 == 23)
                    tr[nr++] = (clock_point_t){rev[i].x - 1000, rev[i].y + 2000};
            }
            clock_edge_fit_t a, b;
            fit_both_ends(e[k], tf, nf, tr, nr, &a, &b);
            double o1 = a.offset_ns,
                   o2 = b.offset_ns +
                        b.drift_ppb * 1e-9 * (double)(a.anchor_ns + llround(o1) - b.anchor_ns);
            if (fabs(o1 + o2) > 0.05 || fabs(a.margin_ns - b.margin_ns) > 0.05)
                fail_msg("%s, twins, draw %d: offsets %.3f ns apart, margins %.3f and %.3f",
                         e[k]->name, run, o1 + o2, a.margin_ns, b.margin_ns);
            mirror_same_spread(e[k]->name, run, &a, &b);
        }
    /*
     * A block of the reverse side 2 µs late, queued windows (levels of two
     * or three points), and a reverse point 5 µs after that block's end: its
     * flight (its delay and its queue) puts it in the next block from one
     * end and in the late one from the other, where it is the one on time.
     * A probe's block is the middle of its flight, and the bend read from the
     * blocks is the same either way round (the bend term was 408 ns one way
     * and 274 the other).
     */
    line_truth_t t = {T0 + 1000000000LL, 2.8e6, 20000};
    for (int run = 0; run < 10; run++) {
        make_points(&t, N, 2000000000LL, 10000, 0.5, 5000, 40, 300 + (unsigned)run, fwd, rev);
        int64_t lo = fwd[0].x < rev[0].x ? fwd[0].x : rev[0].x;
        int64_t hi = fwd[N - 1].x > rev[N - 1].x ? fwd[N - 1].x : rev[N - 1].x;
        int64_t edge = lo + (hi - lo) / 16 * 8;
        for (size_t i = 0; i < N; i++)
            if (rev[i].x >= edge - (hi - lo) / 16 && rev[i].x < edge)
                rev[i].y -= 2000;
        for (size_t i = 0; i < N; i++)
            if (rev[i].x >= edge) { /* the first after it, 5 µs after it and on time */
                rev[i].y = (int64_t)llround(theta(&t, edge + 5000) - 10000);
                rev[i].x = edge + 5000;
                break;
            }
        clock_edge_fit_t a, b;
        fit_both_ends(NULL, fwd, N, rev, N, &a, &b);
        for (int m = 0; m < 3; m++)
            assert_true(fabs(a.misfit_ns[m] + b.misfit_ns[m]) < 1);
        if (fabs(a.model_ns - b.model_ns) > 1 || fabs(a.uncertainty_ns - b.uncertainty_ns) > 1)
            fail_msg("draw %d: bend %.1f / %.1f ns, uncertainty %.1f / %.1f", run, a.model_ns,
                     b.model_ns, a.uncertainty_ns, b.uncertainty_ns);
    }
}

/* Unsorted input is accepted and gives the same answer. */
static void test_unsorted_points(void **state)
{
    (void)state;
    line_truth_t t = {T0 + 500000000LL, 1e6, 12};
    clock_point_t fwd[100], rev[100], sf[100], sr[100];
    make_points(&t, 100, 1000000000LL, 5000, 0.2, 2000, 15, 11, fwd, rev);
    for (size_t i = 0; i < 100; i++) {
        sf[i] = fwd[(i * 37) % 100];
        sr[i] = rev[(i * 53) % 100];
    }
    clock_edge_fit_t a, b;
    assert_int_equal(clock_fit_edge(NULL, fwd, 100, rev, 100, NULL, &a, NULL), BASE_OK);
    assert_int_equal(clock_fit_edge(NULL, sf, 100, sr, 100, NULL, &b, NULL), BASE_OK);
    assert_true(a.anchor_ns == b.anchor_ns);
    assert_true(fabs(a.offset_ns - b.offset_ns) < 1e-6);
    assert_true(fabs(a.drift_ppb - b.drift_ppb) < 1e-6);
}

/*
 * Precision at CLOCK_REALTIME magnitudes: a double cannot even hold such an
 * instant to the nanosecond, but fits on anchored differences must recover
 * offsets of seconds and drifts of hundreds of ppm to well under a ns.
 */
static void test_precision_large_magnitudes(void **state)
{
    (void)state;
    /* The hazard this guards against: 1.79e18 + 1 is not representable. */
    double d = (double)T0;
    assert_true((int64_t)(d + 1.0) == (int64_t)d);

    line_truth_t t = {T0 + 987654321LL, 3.25e9, -480000.0}; /* 3.25 s, −480 ppm */
    clock_point_t fwd[300], rev[300];
    make_points(&t, 300, 2000000000LL, 9000, 0, 0, 0, 9, fwd, rev);
    clock_edge_fit_t f;
    assert_int_equal(
        clock_fit_edge(clock_estimator_find("svm"), fwd, 300, rev, 300, NULL, &f, NULL), BASE_OK);
    assert_true(edge_error(&f, &t, T0, T0 + 2000000000LL) < 1.5);
    assert_true(fabs(f.drift_ppb + 480000.0) < 0.01);
    /* The integer map agrees too. */
    int64_t x = T0 + 1500000000LL;
    int64_t y = clock_edge_map(&f, x);
    assert_true(llabs(y - (x + (int64_t)llround(theta(&t, x)))) <= 2);
}

/*
 * Anchored addition at the ends of int64: a sum that fits is exact, whatever
 * the addend's size (an addend beyond ±9.2e18 was clamped before adding:
 * −9e18 + 1.8e19 came out 2e17), and one that does not saturates.
 */
static void test_clk_add_limits(void **state)
{
    (void)state;
    assert_true(clk_add(T0, 1.4) == T0 + 1);
    assert_true(clk_add(T0, -1.6) == T0 - 2);
    assert_true(clk_add(T0, NAN) == T0);
    assert_true(clk_add(-9000000000000000000LL, 1.8e19) == 9000000000000000000LL);
    assert_true(clk_add(9000000000000000000LL, -1.8e19) == -9000000000000000000LL);
    assert_true(clk_add(INT64_MIN, 0x1p63) == 0);
    assert_true(clk_add(INT64_MIN, 0x1p64 - 2048) == INT64_MAX - 2047);
    assert_true(clk_add(-1, 9.2e18) == 9200000000000000000LL - 1);
    assert_true(clk_add(0, 9.21e18) == 9210000000000000000LL);
    assert_true(clk_add(1, 0x1p63) == INT64_MAX);
    assert_true(clk_add(INT64_MAX - 5, 10) == INT64_MAX);
    assert_true(clk_add(INT64_MIN + 5, -10) == INT64_MIN);
    assert_true(clk_add(INT64_MAX, 0x1p64) == INT64_MAX);
    assert_true(clk_add(INT64_MAX, -0x1p64) == INT64_MIN);
    assert_true(clk_add(0, 1e300) == INT64_MAX);
    assert_true(clk_add(0, -INFINITY) == 0);
    /* An offset as large as a reading: its whole part first, rounded as the sum is. */
    assert_true(clk_add_offset(0, 0x1p41 + 0.5, -1) == llround(0x1p41 - 0.5));
    assert_true(clk_add_offset(0, -0x1p41 - 0.5, 1) == llround(-0x1p41 + 0.5));
    assert_true(clk_add_offset(5, 0x1p41 + 0.25, 0.5) == 5 + (INT64_C(1) << 41) + 1);
    assert_true(clk_add_offset(T0, -1.7e18 - 0.5, 0.25) == T0 - INT64_C(1700000000000000000));
    assert_true(clk_add_offset(T0, 12.4, 0.2) == T0 + 13);
    /* And the inverse: a − b of any two readings, to the double nearest. */
    assert_true(clk_diff(INT64_MAX, INT64_MIN) == 0x1p64);
    assert_true(clk_diff(T0 + 7, T0) == 7.0);
}

/* ---- purity filter and points ---- */

static clock_probe_t probe(uint32_t src, uint32_t dst, int64_t tx0, int64_t gap_tx, int64_t delay0,
                           int64_t delay1)
{
    clock_probe_t p = {.src = src, .dst = dst, .seq = 1};
    p.tx[0] = tx0;
    p.tx[1] = tx0 + gap_tx;
    p.rx[0] = tx0 + delay0;
    p.rx[1] = tx0 + gap_tx + delay1;
    p.rx_ok[0] = p.rx_ok[1] = true;
    return p;
}

static void test_purity(void **state)
{
    (void)state;
    clock_probe_t p = probe(1, 2, T0, 100000, 5000, 5000);
    assert_int_equal(clock_probe_purity(&p, 100, 0), CLOCK_PURE);
    p = probe(1, 2, T0, 100000, 5000, 5090);
    assert_int_equal(clock_probe_purity(&p, 100, 0), CLOCK_PURE);
    assert_int_equal(clock_probe_purity(&p, 50, 0), CLOCK_IMPURE);
    assert_int_equal(clock_probe_purity(&p, 50, 90), CLOCK_PURE); /* centred on the rate */
    p = probe(1, 2, T0, 100000, 5000, 12000);                     /* second packet queued */
    assert_int_equal(clock_probe_purity(&p, 1000, 0), CLOCK_IMPURE);
    p.rx_ok[1] = false;
    assert_int_equal(clock_probe_purity(&p, 1000, 0), CLOCK_LOST);
    p = probe(1, 2, T0, -5, 5000, 5000); /* transmit times out of order */
    assert_int_equal(clock_probe_purity(&p, 1000, 0), CLOCK_BAD);
    p = probe(1, 2, T0, 100000, 5000, -200000); /* received in the wrong order */
    assert_int_equal(clock_probe_purity(&p, 1000000, 0), CLOCK_IMPURE);

    clock_purity_opts_t o;
    clock_purity_opts_default(&o);
    assert_int_equal(o.guard_ns, 0);
    assert_true(o.min_guard_ns > 0 && o.auto_k > 0);
    /* Too few probes for the automatic guard: ten times its floor, which may not overflow. */
    clock_probe_t few[4];
    for (int i = 0; i < 4; i++)
        few[i] = probe(0, 1, T0 + i * 1000000LL, 100000, 50000, 50000);
    o.min_guard_ns = INT64_MAX / 4;
    clock_point_t f[4], r[4];
    size_t nf, nr;
    clock_purity_stats_t st;
    clock_edge_points(few, 4, 0, 1, &o, f, &nf, r, &nr, &st);
    assert_true(st.guard_ns[0] == INT64_MAX);
    assert_int_equal(nf, 4);
}

/* The automatic guard learns the noise and rejects the queued pairs. */
static void test_auto_guard_and_points(void **state)
{
    (void)state;
    enum { N = 400 };
    clock_probe_t *pr = calloc(2 * N + 2, sizeof *pr);
    uint64_t s = 99;
    size_t queued = 0;
    for (int i = 0; i < N; i++) {
        int64_t tx = T0 + (int64_t)i * 5000000;
        int64_t d0 = 7000 + (int64_t)llround(40 * gauss(&s));
        int64_t d1 = 7000 + (int64_t)llround(40 * gauss(&s));
        if (i % 5 == 0) { /* one packet of the pair waited behind a burst */
            d1 += 3000 + (int64_t)(urand(&s) * 20000);
            queued++;
        }
        pr[i] = probe(10, 20, tx, 100000, d0, d1);
        /* Reverse: node 20 → 10, B's clock ahead by 1 ms. */
        clock_probe_t r =
            probe(20, 10, tx + 1000000 + 2000000, 100000, -1000000 + 7000, -1000000 + 7000);
        pr[N + i] = r;
    }
    pr[2 * N] = probe(3, 4, T0, 100000, 1, 1); /* another edge: ignored */
    clock_purity_opts_t o;
    clock_purity_opts_default(&o);
    clock_point_t *fwd = calloc(2 * N + 2, sizeof *fwd), *rev = calloc(2 * N + 2, sizeof *rev);
    size_t nf, nr;
    clock_purity_stats_t st;
    clock_edge_points(pr, 2 * N + 1, 10, 20, &o, fwd, &nf, rev, &nr, &st);
    assert_int_equal(st.total, 2 * N);
    assert_int_equal(st.impure, queued);
    assert_int_equal(nf, N - queued);
    assert_int_equal(nr, N);
    assert_true(st.guard_ns[0] >= 100 && st.guard_ns[0] < 1500);
    for (size_t i = 1; i < nf; i++)
        assert_true(fwd[i].x >= fwd[i - 1].x);
    /* Forward point: y = rx − tx ≈ +7000; reverse: y = tx_B − rx_A = +1 ms − 7000. */
    assert_true(llabs(fwd[0].y - 7000) < 200);
    assert_true(llabs(rev[0].y - (1000000 - 7000)) < 5);

    /* The whole live path in one call. */
    clock_edge_fit_t f;
    char err[BASE_ERRLEN];
    assert_int_equal(clock_fit_probes(NULL, pr, 2 * N + 1, 10, 20, NULL, NULL, &f, &st, err),
                     BASE_OK);
    assert_int_equal(f.src, 10);
    assert_int_equal(f.dst, 20);
    assert_true(fabs(f.offset_ns - 500000.0) < 20000); /* midway: forward and reverse disagree */
    free(fwd);
    free(rev);
    free(pr);
}

/* ---- steps ---- */

static void test_step_detection(void **state)
{
    (void)state;
    line_truth_t t = {T0 + 1000000000LL, 250000.0, 20.0};
    clock_point_t fwd[600], rev[600];
    make_points(&t, 600, 2000000000LL, 9000, 0.05, 2000, 40, 21, fwd, rev);
    /* dst steps forward by 1 ms at 1.3 s: dst − src jumps by +1 ms. */
    int64_t at = T0 + 1300000000LL;
    for (int i = 0; i < 600; i++) {
        if (fwd[i].x >= at)
            fwd[i].y += 1000000;
        if (rev[i].x >= at)
            rev[i].y += 1000000;
    }
    clock_edge_fit_t f;
    char err[BASE_ERRLEN];
    assert_int_equal(clock_fit_edge(NULL, fwd, 600, rev, 600, NULL, &f, err), BASE_OK);
    assert_true(f.step);
    assert_true(fabs(f.step_ns - 1e6) < 5e4);
    assert_true(llabs(f.step_at_ns - at) < 300000000LL);
    /* The fit describes the longer clean part (before the step) and says so. */
    assert_true(f.to_ns < at);
    assert_true(edge_error(&f, &t, f.from_ns, f.to_ns) < 50);

    /* No false alarm on clean data, nor on queuing bursts on one side. */
    make_points(&t, 600, 2000000000LL, 9000, 0.05, 2000, 40, 22, fwd, rev);
    for (int i = 300; i < 360; i++)
        fwd[i].y += 50000;
    assert_int_equal(clock_fit_edge(NULL, fwd, 600, rev, 600, NULL, &f, err), BASE_OK);
    assert_false(f.step);

    clock_fit_opts_t o;
    clock_fit_opts_default(&o);
    o.detect_steps = false;
    make_points(&t, 600, 2000000000LL, 9000, 0.05, 2000, 40, 21, fwd, rev);
    for (int i = 0; i < 600; i++)
        if (fwd[i].x >= at)
            fwd[i].y += 1000000;
    assert_int_equal(clock_fit_edge(NULL, fwd, 600, rev, 600, &o, &f, err), BASE_OK);
    assert_false(f.step);
}

/*
 * A host slow to stamp for part of a window: from `at` on (until `at`,
 * when `until`), forward points sit late_f higher and reverse points
 * late_r lower (the gap widens; the offset the two sides say moves by
 * (late_f − late_r)/2).  Returns the fit's error over its own range, which
 * the truth holds at every point.
 */
typedef struct delay_window {
    size_t n;            /* points a side over 2 s */
    double qfrac, qmean; /* queuing */
    uint64_t seed;
} delay_window_t;

static double fit_delay_window(const delay_window_t *w, int64_t at, bool until, double late_f,
                               double late_r, const clock_fit_opts_t *o, clock_edge_fit_t *f)
{
    line_truth_t t = {T0 + 1000000000LL, 250000.0, 20.0};
    clock_point_t fwd[600], rev[600];
    assert_true(w->n <= 600);
    make_points(&t, w->n, 2000000000LL, 9000, w->qfrac, w->qmean, 40, w->seed, fwd, rev);
    for (size_t i = 0; i < w->n; i++) {
        fwd[i].y += (fwd[i].x < at) == until ? (int64_t)late_f : 0;
        rev[i].y -= (rev[i].x < at) == until ? (int64_t)late_r : 0;
    }
    char err[BASE_ERRLEN];
    assert_int_equal(clock_fit_edge(NULL, fwd, w->n, rev, w->n, o, f, err), BASE_OK);
    return edge_error(f, &t, T0, T0 + 2000000000LL);
}

static double fit_delay_change(int64_t at, bool until, double late_f, double late_r,
                               const clock_fit_opts_t *o, clock_edge_fit_t *f)
{
    const delay_window_t w = {600, 0.05, 2000, 31};
    return fit_delay_window(&w, at, until, late_f, late_r, o, f);
}

/*
 * Where the gap jumps the fit keeps the narrower, undisturbed part (before
 * the change or after it), is no step and is good over the whole window
 * (within 30 ns where it reaches past the part it kept), when that part
 * holds an eighth of the window's points; without it (detect_steps off)
 * the line through both parts is about 90 ns off at the window's ends (400
 * ns of delay on the forward side, 100 on the reverse).  Clean data and a
 * change within the noise are fitted whole.
 */
static void test_delay_change(void **state)
{
    (void)state;
    clock_edge_fit_t f;
    int64_t at = T0 + 1200000000LL;
    double e = fit_delay_change(at, false, 400, 100, NULL, &f);
    if (!(e < 30 && f.to_ns < at && !f.step && f.n_fwd > 200 && f.n_fwd < 360 &&
          fabs(f.margin_step_ns - 250) < 25))
        fail_msg("delay from 1.2 s: %.1f ns off, to %.3f s, %u points, step %d, margin %+.1f", e,
                 (double)(f.to_ns - T0) / 1e9, f.n_fwd, f.step, f.margin_step_ns);
    clock_fit_opts_t o;
    clock_fit_opts_default(&o);
    o.detect_steps = false;
    double whole = fit_delay_change(at, false, 400, 100, &o, &f);
    if (!(whole > 60 && f.n_fwd == 600))
        fail_msg("through both parts: %.1f ns off, %u points", whole, f.n_fwd);
    at = T0 + 800000000LL;
    e = fit_delay_change(at, true, 400, 100, NULL, &f);
    if (!(e < 30 && f.from_ns > at && !f.step && fabs(f.margin_step_ns + 250) < 25))
        fail_msg("delay until 0.8 s: %.1f ns off, from %.3f s, step %d, margin %+.1f", e,
                 (double)(f.from_ns - T0) / 1e9, f.step, f.margin_step_ns);
    /*
     * Undisturbed for the first 0.4 s: a fifth of the points is enough to
     * keep (less the block the change falls in); past the part kept, its
     * drift's uncertainty covers what its slope carries.
     */
    e = fit_delay_change(T0 + 400000000LL, false, 400, 100, NULL, &f);
    double reach = (double)(T0 + 2000000000LL - f.to_ns) * 1e-9; /* s past the part kept */
    if (!(f.n_fwd < 150 && !f.step && e <= f.uncertainty_ns + f.drift_unc_ppb * reach))
        fail_msg("delay from 0.4 s: %.1f ns off, %u points, ±%.1f ns ±%.1f ppb over %.2f s", e,
                 f.n_fwd, f.uncertainty_ns, f.drift_unc_ppb, reach);
    /*
     * Undisturbed for the first 0.15 s only: too little to carry a slope
     * over the window; the whole window is fitted and says the disturbed
     * part's margin (the undisturbed one's plus 250 ns), for the solver to
     * bound.
     */
    e = fit_delay_change(at, false, 0, 0, NULL, &f);
    assert_true(f.n_fwd == 600 && e < 15 && f.margin_step_ns == 0);
    double m0 = f.margin_ns;
    fit_delay_change(T0 + 150000000LL, false, 400, 100, NULL, &f);
    if (!(f.n_fwd == 600 && f.margin_step_ns > 100 && fabs(f.margin_ns - m0 - 250) < 30))
        fail_msg("delay from 0.15 s: %u points, margin step %+.1f, margin %.1f (%.1f without)",
                 f.n_fwd, f.margin_step_ns, f.margin_ns, m0);
    /* A change of the gap within GAP_MIN_NS is none. */
    fit_delay_change(at, false, 20, 0, NULL, &f);
    assert_true(f.n_fwd == 600 && f.margin_step_ns == 0);
    /*
     * A delay that ends inside the last block (or starts after the first
     * block's beginning) narrows that block's gap by 600 ns, as a step in
     * it would, but from both sides at once: no step.
     */
    const int64_t ends[2] = {T0 + 1900000000LL, T0 + 100000000LL};
    for (int k = 0; k < 2; k++) {
        fit_delay_change(ends[k], k == 0, 300, 300, NULL, &f);
        if (f.step)
            fail_msg("delay %s %.1f s taken for a %+.0f ns step", k == 0 ? "until" : "from",
                     (double)(ends[k] - T0) / 1e9, f.step_ns);
    }
}

/*
 * The same at an agent's probe rate: 80 points a side.  The delayed part
 * looks queued, so svm's soft levels shrink to one point a block, and the
 * change must still be found (levels of three points for it).  Bursty
 * queuing in windows that small (half the points queued by 5 µs on
 * average) must not pass for one: a burst widens a block or two, a delay
 * every block it covers.
 */
static void test_delay_change_small_window(void **state)
{
    (void)state;
    enum { RUNS = 24 };
    int64_t at = T0 + 900000000LL;
    int found = 0, covered = 0, whole_off = 0, false_alarms = 0;
    clock_fit_opts_t o;
    clock_fit_opts_default(&o);
    o.detect_steps = false;
    for (int run = 0; run < RUNS; run++) {
        clock_edge_fit_t f;
        bool until = run % 2 == 1;
        const delay_window_t w = {80, 0.05, 2000, 500 + (uint64_t)run};
        double e = fit_delay_window(&w, at, until, 400, 100, NULL, &f);
        bool kept = until ? f.from_ns > at : f.to_ns < at;
        found += kept && !f.step && fabs(fabs(f.margin_step_ns) - 250) < 50;
        /* Past the part kept, its drift's uncertainty covers what its slope carries. */
        double reach = (double)(T0 + 2000000000LL - f.to_ns + f.from_ns - T0) * 1e-9;
        covered += e <= f.uncertainty_ns + f.drift_unc_ppb * reach;
        whole_off += fit_delay_window(&w, at, until, 400, 100, &o, &f) > 60;
        const delay_window_t busy = {80, 0.5, 5000, 600 + (uint64_t)run};
        fit_delay_window(&busy, at, false, 0, 0, NULL, &f);
        false_alarms += f.margin_step_ns != 0;
    }
    /*
     * A standing queue over the forward side of blocks 1 and 2 of six: the
     * first three blocks stand apart from the last three by their median,
     * but a delay that came before the split would have covered block 0 too
     * (this one came and went inside the window: no part of it is a clean
     * side to keep).
     */
    for (int run = 0; run < RUNS; run++) {
        line_truth_t t = {T0 + 1000000000LL, 250000.0, 20.0};
        clock_point_t fwd[80], rev[80];
        make_points(&t, 80, 2000000000LL, 9000, 0.05, 2000, 40, 700 + (uint64_t)run, fwd, rev);
        uint64_t rs = 800 + (uint64_t)run;
        for (int i = 0; i < 80; i++) {
            int b = (int)((fwd[i].x - T0) * 6 / 2000000000LL);
            if (b == 1 || b == 2)
                fwd[i].y += (int64_t)(600 - 100 * log(urand(&rs) + 1e-12));
        }
        clock_edge_fit_t f;
        char err[BASE_ERRLEN];
        assert_int_equal(clock_fit_edge(NULL, fwd, 80, rev, 80, NULL, &f, err), BASE_OK);
        false_alarms += f.margin_step_ns != 0;
    }
    if (!(found >= RUNS * 3 / 4 && covered >= RUNS * 3 / 4 && whole_off >= RUNS / 2 &&
          false_alarms <= 2))
        fail_msg("80-point windows: delay change found in %d of %d, covered in %d (%d over 60 "
                 "ns without the search); bursty queuing taken for one in %d",
                 found, RUNS, covered, whole_off, false_alarms);
}

/*
 * minrtt and ols pair each point with the nearest one the other way, 1.3 ms
 * apart here: at 500 ppm that is 670 ns of round trip the clocks' drift
 * made, which their margins take out (the line's own fit never counted it;
 * ols's margin read 8760 ns for 9100).
 */
static void test_minrtt_margin_drift(void **state)
{
    (void)state;
    line_truth_t t = {T0 + 1000000000LL, 250000.0, 500000.0};
    clock_point_t fwd[600], rev[600];
    make_points(&t, 600, 2000000000LL, 9000, 0.05, 2000, 40, 41, fwd, rev);
    clock_edge_fit_t f;
    char err[BASE_ERRLEN];
    assert_int_equal(
        clock_fit_edge(clock_estimator_find("minrtt"), fwd, 600, rev, 600, NULL, &f, err), BASE_OK);
    if (!(fabs(f.margin_ns - 9000) < 120))
        fail_msg("minrtt margin %.1f ns at 500 ppm (the path's 9000)", f.margin_ns);
    /* ols's margin, the mean half round trip: the path's plus the queues' mean (5 % at 2 µs). */
    assert_int_equal(clock_fit_edge(clock_estimator_find("ols"), fwd, 600, rev, 600, NULL, &f, err),
                     BASE_OK);
    print_message("ols margin %.1f ns at 500 ppm\n", f.margin_ns);
    if (!(fabs(f.margin_ns - 9100) < 120))
        fail_msg("ols margin %.1f ns at 500 ppm (the path's 9000, queues 100)", f.margin_ns);
    /* Intervals by the billion ask for no 32 GiB: at most CLOCK_MINRTT_INTERVALS_MAX. */
    clock_fit_opts_t o;
    clock_fit_opts_default(&o);
    o.intervals = UINT32_MAX;
    assert_int_equal(
        clock_fit_edge(clock_estimator_find("minrtt"), fwd, 600, rev, 600, &o, &f, err), BASE_OK);
}

/*
 * minrtt's uncertainty is the scatter of its interval minima about its
 * line.  Subsets of the points said otherwise both ways: stamp noise
 * leaves a subset's minima as good as the whole window's (its spread
 * over 8 read too narrow), and under queuing a subset's few points have
 * far worse minima than the window's many (100 times too wide on busy
 * edges).
 */
static void minrtt_runs(double qfrac, double qmean, double noise, unsigned seed, int *covered,
                        double *ratio)
{
    enum { N = 500, RUNS = 40 };
    clock_point_t fwd[N], rev[N];
    double e[RUNS], u[RUNS];
    char err[BASE_ERRLEN];
    *covered = 0;
    for (int run = 0; run < RUNS; run++) {
        line_truth_t t = {T0 + 1000000000LL, 250000.0 + 37.0 * run, 30.0 - run};
        make_points(&t, N, 2000000000LL, 9000, qfrac, qmean, noise, seed + (unsigned)run, fwd, rev);
        clock_edge_fit_t f;
        assert_int_equal(
            clock_fit_edge(clock_estimator_find("minrtt"), fwd, N, rev, N, NULL, &f, err), BASE_OK);
        e[run] = edge_error(&f, &t, f.from_ns, f.to_ns);
        u[run] = f.uncertainty_ns;
        *covered += e[run] <= u[run];
        if (e[run] > u[run])
            print_message("  run %d: %.1f ns off at +-%.1f\n", run, e[run], u[run]);
    }
    qsort(e, RUNS, sizeof e[0], cmp_double);
    qsort(u, RUNS, sizeof u[0], cmp_double);
    *ratio = u[RUNS / 2] / e[RUNS / 2];
}

static void test_minrtt_uncertainty(void **state)
{
    (void)state;
    int covered;
    double ratio;
    minrtt_runs(0, 0, 400, 700, &covered, &ratio); /* software stamps, no queues */
    print_message("minrtt, stamp noise 400 ns: %d of 40 covered at %.1fx the median error\n",
                  covered, ratio);
    assert_true(covered >= 38);
    assert_true(ratio <= 4);
    minrtt_runs(0.6, 5000, 40, 800, &covered, &ratio); /* busy: most probes queued */
    print_message("minrtt, 60 %% queued: %d of 40 covered at %.1fx the median error\n", covered,
                  ratio);
    assert_true(covered >= 38);
    assert_true(ratio <= 4);
}

/*
 * Small real steps are found wherever they fall: the step test asks each
 * side's median to move by many standard errors, which must not cost
 * sensitivity where the timestamps are good.  (False alarms under bursty
 * queuing are checked on simulated traffic by the dpclock integration test.)
 */
static void test_step_small(void **state)
{
    (void)state;
    line_truth_t t = {T0 + 1000000000LL, 250000.0, 20.0};
    enum { N = 450 };
    clock_point_t *fwd = calloc(N, sizeof *fwd), *rev = calloc(N, sizeof *rev);
    char err[BASE_ERRLEN];
    /* 1 µs under hardware timestamps (σ 40 ns), 5 µs under software ones (σ 400 ns). */
    const double noise[2] = {40, 400}, size[2] = {1000, 5000};
    for (int c = 0; c < 2; c++) {
        for (int k = 0; k < 6; k++) {
            make_points(&t, N, 2000000000LL, 30000, 0.05, 2000, noise[c],
                        300 + (uint64_t)(10 * c + k), fwd, rev);
            int64_t at = T0 + 300000000LL + 250000000LL * k;
            for (size_t i = 0; i < N; i++) {
                fwd[i].y += fwd[i].x >= at ? (int64_t)size[c] : 0;
                rev[i].y += rev[i].x >= at ? (int64_t)size[c] : 0;
            }
            clock_edge_fit_t f;
            assert_int_equal(clock_fit_edge(NULL, fwd, N, rev, N, NULL, &f, err), BASE_OK);
            if (!f.step || fabs(f.step_ns - size[c]) > 0.1 * size[c])
                fail_msg("%.0f ns step (noise %.0f ns) at %d/8 of the window: step %d, %.0f ns",
                         size[c], noise[c], k + 1, f.step, f.step_ns);
        }
    }
    free(fwd);
    free(rev);
}

/*
 * A step in a small window: 48 points a side (a neighbour probed every 20 ms
 * keeps that many, or fewer under queuing).  With twelve points a side per
 * block it had no blocks at all and the step went unseen; six blocks of
 * eight find it, forward or back, its size within 15 % (30 % when it falls
 * in an end block).  Inside the first
 * or last block only where the block levels average a few points (light
 * queuing: the gap collapses there); under heavy queuing a level is one
 * point and that test stands aside, so the steps there fall in blocks 1-4.
 */
static void test_step_small_window(void **state)
{
    (void)state;
    line_truth_t t = {T0 + 1000000000LL, -420000.0, 35.0};
    enum { N = 48 };
    clock_point_t fwd[N], rev[N];
    char err[BASE_ERRLEN];
    for (int k = 0; k < 28; k++) {
        /* k < 16: light queuing, eight places from 150 to 1865 ms; then heavy, blocks 1-4. */
        bool light = k < 16;
        make_points(&t, N, 2000000000LL, 12000, light ? 0.02 : 0.3, 3000, 40, 700 + (uint64_t)k,
                    fwd, rev);
        int64_t at = light ? T0 + 150000000LL + 245000000LL * (k % 8)
                           : T0 + 400000000LL + 200000000LL * ((k - 16) % 6);
        int64_t size = k % 2 ? -1000000 : 1000000;
        for (size_t i = 0; i < N; i++) {
            fwd[i].y += fwd[i].x >= at ? size : 0;
            rev[i].y += rev[i].x >= at ? size : 0;
        }
        clock_edge_fit_t f;
        assert_int_equal(clock_fit_edge(NULL, fwd, N, rev, N, NULL, &f, err), BASE_OK);
        /* Read against the blocks next to it, an end block's size is rougher. */
        bool end_block = at < T0 + 333333333LL || at > T0 + 1666666667LL;
        if (!f.step || fabs(f.step_ns - (double)size) > (end_block ? 0.3 : 0.15) * 1e6)
            fail_msg("%+.0f ns step at %.0f ms of a 48-point window: step %d, %.0f ns",
                     (double)size, (double)(at - T0) / 1e6, f.step, f.step_ns);
    }
}

/*
 * Steps far beyond the points' spread (a clock set by milliseconds).  The
 * fitted line followed them (a live edge fitted a 300 ms step as −221594
 * ppm at ±14.8 ms, unflagged), and where the fitter's own clock jumped
 * forward, its window had a stretch without points, a block held one
 * point a side and no step was looked for.  Every estimator, steps of the
 * fitter's clock (x and y move) and of the other end's (y only), forward
 * and back (the fitter's clock back by 1 s reads most of its window
 * twice; by 300 ms a tenth in, from before the window's start), 70 points
 * a side with light queuing: the step flagged, its
 * size within 1 %, the fit that of the larger side's points alone (svm's
 * within 50 ns of the truth).
 */
static void test_step_gross(void **state)
{
    (void)state;
    line_truth_t t = {T0 + 1000000000LL, 3500000.0, -15000.0};
    enum { N = 70 };
    const int64_t W = 2000000000LL;
    char err[BASE_ERRLEN];
    size_t nest;
    const clock_estimator_t *const *ests = clock_estimators(&nest);
    const int64_t sizes[] = {300000000LL, -300000000LL, 20000000LL,
                             -1000000LL,  -300000000LL, -1000000000LL};
    const double where[] = {0.35, 0.8, 0.6, 0.1, 0.1, 0.3};
    for (size_t e = 0; e < nest; e++) {
        for (int c = 0; c < 12; c++) {
            clock_point_t pts[2][N], kept[2][N], side[2][2][N];
            make_points(&t, N, W, 30000, 0.05, 2000, 40, 900 + (uint64_t)c, pts[0], pts[1]);
            int64_t s = sizes[c % 6], at = T0 + (int64_t)(where[c % 6] * (double)W);
            bool own = c >= 6; /* the fitter's clock: its readings after the step move too */
            size_t n[2] = {0, 0}, ns[2][2] = {{0, 0}, {0, 0}};
            for (int d = 0; d < 2; d++) {
                for (size_t i = 0; i < N; i++) {
                    clock_point_t q = pts[d][i];
                    bool after = q.x >= at;
                    if (after) {
                        q.y += own ? -s : s;
                        q.x += own ? s : 0;
                    }
                    /* The window is the fitter's: what its clock reads past the end is not in. */
                    if (q.x < T0 || q.x >= T0 + W)
                        continue;
                    kept[d][n[d]++] = q;
                    side[after][d][ns[after][d]++] = q;
                }
            }
            /* clock_fit_edge sorts them by x: a clock stepped back interleaves them. */
            clock_edge_fit_t f;
            if (clock_fit_edge(ests[e], kept[0], n[0], kept[1], n[1], NULL, &f, err) != BASE_OK)
                fail_msg("%s: %+lld ns step (%s clock): %s", ests[e]->name, (long long)s,
                         own ? "own" : "peer", err);
            double want = own ? -(double)s : (double)s;
            if (!f.step || fabs(f.step_ns - want) > 0.01 * fabs(want))
                fail_msg("%s: %+lld ns step (%s clock) at %.0f %% of the window: step %d, %.0f ns",
                         ests[e]->name, (long long)s, own ? "own" : "peer", 100 * where[c % 6],
                         f.step, f.step_ns);
            /* The fit is that of the larger side alone; svm's is right to 50 ns. */
            bool later = (ns[1][0] < ns[1][1] ? ns[1][0] : ns[1][1]) >
                         (ns[0][0] < ns[0][1] ? ns[0][0] : ns[0][1]);
            clock_edge_fit_t g;
            assert_int_equal(clock_fit_edge(ests[e], side[later][0], ns[later][0], side[later][1],
                                            ns[later][1], NULL, &g, err),
                             BASE_OK);
            assert_false(g.step);
            if (f.n_fwd != g.n_fwd || f.n_rev != g.n_rev || fabs(f.offset_ns - g.offset_ns) > 1 ||
                fabs(f.uncertainty_ns - g.uncertainty_ns) > 1)
                fail_msg("%s: %+lld ns step (%s clock): %u/%u points, %.1f ± %.1f ns; the side "
                         "alone %u/%u, %.1f ± %.1f",
                         ests[e]->name, (long long)s, own ? "own" : "peer", f.n_fwd, f.n_rev,
                         f.offset_ns, f.uncertainty_ns, g.n_fwd, g.n_rev, g.offset_ns,
                         g.uncertainty_ns);
            line_truth_t tk = t;
            if (later) {
                tk.O += want;
                if (own)
                    tk.L += s;
            }
            double er = edge_error(&f, &tk, f.from_ns, f.to_ns);
            if (strcmp(ests[e]->name, "svm") == 0 && er > 50)
                fail_msg("svm: %+lld ns step (%s clock): kept side %.1f ns off", (long long)s,
                         own ? "own" : "peer", er);
        }
    }
}

/*
 * No gross step where no clock stepped.  Delays that take two levels in
 * turn (two paths; receive stamps woken 30 µs late now and then) split each
 * side's residuals into two clusters as well, but interleaved over the
 * whole window: an early version took half of such windows for steps and
 * fitted one side's slow points against the other's fast ones, 16–25 µs
 * off.  Every estimator, 8 to 300 points a side: no step, and svm's fit
 * from 70 points within its uncertainty (8 points of two delays are beyond
 * it; ols averages the two delays by design).  Points on one line exactly
 * (no noise) neither.
 */
static void test_step_gross_none(void **state)
{
    (void)state;
    line_truth_t t = {T0 + 1000000000LL, -720000.0, 4000.0};
    const size_t sizes[] = {8, 70, 300};
    size_t nest;
    const clock_estimator_t *const *ests = clock_estimators(&nest);
    char err[BASE_ERRLEN];
    for (size_t e = 0; e < nest; e++) {
        for (size_t z = 0; z < 3; z++) {
            size_t n = sizes[z];
            clock_point_t *fwd = calloc(n, sizeof *fwd), *rev = calloc(n, sizeof *rev);
            for (int c = 0; c < 20; c++) {
                make_points(&t, n, 2000000000LL, 30000, 0, 0, c % 2 ? 400 : 40, 1000 + (uint64_t)c,
                            fwd, rev);
                uint64_t r = 77 + (uint64_t)c;
                for (size_t i = 0; i < n; i++) {
                    /* Two paths (+50 µs half the time) or a late wake-up (+30–35 µs, 40 %). */
                    bool late = c % 2 ? urand(&r) < 0.4 : urand(&r) < 0.5;
                    double d = c % 2 ? 30000 + 5000 * urand(&r) : 50000;
                    fwd[i].y += late ? (int64_t)d : 0;
                    late = c % 2 ? urand(&r) < 0.4 : urand(&r) < 0.5;
                    rev[i].y -= late ? (int64_t)d : 0;
                }
                clock_edge_fit_t f;
                if (clock_fit_edge(ests[e], fwd, n, rev, n, NULL, &f, err) != BASE_OK)
                    fail_msg("%s, %zu points, case %d: %s", ests[e]->name, n, c, err);
                double er = edge_error(&f, &t, fwd[0].x, rev[n - 1].x);
                bool svm = strcmp(ests[e]->name, "svm") == 0;
                if (f.step || (svm && n >= 70 && er > fmax(f.uncertainty_ns, 100)))
                    fail_msg("%s, %zu points, case %d: step %d (%.0f ns), %.1f ns off at ±%.1f",
                             ests[e]->name, n, c, f.step, f.step_ns, er, f.uncertainty_ns);
            }
            /* One line exactly. */
            for (size_t i = 0; i < n; i++) {
                fwd[i] = (clock_point_t){T0 + (int64_t)i * 1000000, 5000};
                rev[i] = (clock_point_t){T0 + (int64_t)i * 1000000 + 500000, 3000};
            }
            clock_edge_fit_t f;
            assert_int_equal(clock_fit_edge(ests[e], fwd, n, rev, n, NULL, &f, err), BASE_OK);
            assert_false(f.step);
            free(fwd);
            free(rev);
        }
    }
}

/*
 * Steps between two windows (clock_steps_between), on a ring of four
 * nodes and a fifth probed by node 2 alone: node 2's clock jumps by 1 ms
 * between the windows.  Its three edges jump (as +1 ms where it is dst, −1
 * ms where src); node 4's one edge jumps too, but that is node 2's: only
 * node 2 is named.  Jumps of 5 µs, edges of one node that disagree on the
 * size, or node 2's rate changing by 500 ppm at the boundary (its offsets
 * bend there, they do not jump: a line carried a whole window on would be
 * 500 µs off) name nobody; two nodes and the edge between them cannot be
 * told apart and are both named.  An edge of node 2 too uncertain to show
 * its step does not veto it.
 */
static clock_edge_fit_t between_edge(uint32_t a, uint32_t b, int64_t anchor, double off)
{
    clock_edge_fit_t e;
    memset(&e, 0, sizeof e);
    e.src = a;
    e.dst = b;
    e.anchor_ns = anchor;
    e.offset_ns = off;
    e.drift_ppb = 2000.0 * (double)(b + 1) - 1000.0 * (double)(a + 1);
    e.uncertainty_ns = 8;
    e.margin_ns = 120;
    e.drift_unc_ppb = 3;
    /* Samples over the window, its first and last 10 ms aside. */
    e.from_ns = anchor - 990000000LL;
    e.to_ns = anchor + 990000000LL;
    return e;
}

static void test_steps_between(void **state)
{
    (void)state;
    const uint32_t ends[][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 0}, {2, 4}};
    enum { NE = 5 };
    const int64_t W = 2000000000LL, A = T0 + W / 2;
    /* jump[i]: what node i's clock did between the windows; freq: node 2's rate changed, ppb. */
    struct {
        double jump[5];
        double skew; /* added to the last edge's jump */
        size_t ne;
        uint32_t want[2];
        size_t nwant;
        double freq;
    } cases[] = {
        {{0, 0, 1e6, 0, 0}, 0, NE, {2, 0}, 1, 0},
        {{0, 0, -1e6, 0, 0}, 0, NE, {2, 0}, 1, 0},
        {{0, 0, 5000, 0, 0}, 0, NE, {0, 0}, 0, 0},
        {{0, 0, 1e6, 0, 0}, 3e5, NE, {0, 0}, 0, 0}, /* node 2's edges disagree: 1 ms, 1.3 ms */
        {{0, 1e6, 0, 0, 0}, 0, 1, {0, 1}, 2, 0},    /* one edge: either end */
        {{0, 0, 0, 0, 0}, 0, NE, {0, 0}, 0, 0},
        {{0, 0, 0, 0, 0}, 0, NE, {0, 0}, 0, 500000},   /* a 500 ppm slew, no step */
        {{0, 0, 1e6, 0, 0}, 0, NE, {2, 0}, 1, 500000}, /* a slew and a step */
    };
    for (size_t c = 0; c < BASE_ARRAY_LEN(cases); c++) {
        clock_edge_fit_t prev[NE], cur[NE];
        for (size_t i = 0; i < cases[c].ne; i++) {
            uint32_t a = ends[i][0], b = ends[i][1];
            double off = 1e6 * (double)b - 7e5 * (double)a;
            prev[i] = between_edge(a, b, A, off);
            /* The line to the boundary, the ends' jumps (dst − src), the new rate after. */
            double at_b = off + prev[i].drift_ppb * 1e-9 * (double)(W / 2);
            at_b += cases[c].jump[b] - cases[c].jump[a];
            if (i + 1 == cases[c].ne)
                at_b += cases[c].skew;
            double rate =
                prev[i].drift_ppb + (b == 2 ? cases[c].freq : 0) - (a == 2 ? cases[c].freq : 0);
            cur[i] = between_edge(a, b, A + W, at_b + rate * 1e-9 * (double)(W / 2));
            cur[i].drift_ppb = rate;
        }
        clock_step_between_t got[5];
        size_t n = clock_steps_between(prev, cases[c].ne, cur, cases[c].ne, got, 5);
        if (n != cases[c].nwant)
            fail_msg("case %zu: %zu steps, want %zu", c, n, cases[c].nwant);
        for (size_t i = 0; i < n; i++) {
            uint32_t node = cases[c].want[i];
            assert_int_equal(got[i].node, node);
            if (fabs(got[i].step_ns - cases[c].jump[node] - (cases[c].jump[node] == 0 ? -1e6 : 0)) >
                1)
                fail_msg("case %zu: node %u stepped %.1f ns", c, node, got[i].step_ns);
        }
    }
    /* Fits flagged with a step, and edges in one window only, are not compared. */
    clock_edge_fit_t p1 = between_edge(0, 1, A, 0), c1 = between_edge(0, 1, A + W, 5e6);
    c1.step = true;
    clock_step_between_t got[2];
    assert_int_equal(clock_steps_between(&p1, 1, &c1, 1, got, 2), 0);
    clock_edge_fit_t c2 = between_edge(1, 2, A + W, 5e6);
    assert_int_equal(clock_steps_between(&p1, 1, &c2, 1, got, 2), 0);
    /*
     * A slew that starts 0.7 of the way into the later window, whose fit
     * kept only what came after it (a margin change trimmed it): its line,
     * read back at the boundary, is 350 µs off the earlier one without any
     * step (the change of rate over the stretch neither fit saw).
     */
    {
        clock_edge_fit_t pv[NE], cu[NE];
        const double slew = 500000;
        for (size_t i = 0; i < NE; i++) {
            uint32_t a = ends[i][0], b = ends[i][1];
            double off = 1e6 * (double)b - 7e5 * (double)a;
            pv[i] = between_edge(a, b, A, off);
            cu[i] = between_edge(a, b, A + W, off + pv[i].drift_ppb * 1e-9 * (double)W);
            double d = (b == 2 ? slew : 0) - (a == 2 ? slew : 0);
            if (d == 0)
                continue;
            /* The kept part: from 0.7 on; its line through the truth there. */
            int64_t ts = A + W / 2 + (int64_t)(0.7 * (double)W);
            double at_s = off + pv[i].drift_ppb * 1e-9 * (double)(ts - A);
            cu[i].from_ns = ts + 10000000;
            cu[i].anchor_ns = ts + (A + W + W / 2 - ts) / 2;
            cu[i].drift_ppb = pv[i].drift_ppb + d;
            cu[i].offset_ns = at_s + cu[i].drift_ppb * 1e-9 * (double)(cu[i].anchor_ns - ts);
        }
        clock_step_between_t g[5];
        assert_int_equal(clock_steps_between(pv, NE, cu, NE, g, 5), 0);
    }
    /*
     * An edge too uncertain to show the step (±200 µs: it would have had to
     * jump 4 ms) does not veto it; one that could have shown it does.
     */
    for (int k = 0; k < 2; k++) {
        clock_edge_fit_t pv[NE], cu[NE];
        for (size_t i = 0; i < NE; i++) {
            uint32_t a = ends[i][0], b = ends[i][1];
            double off = 1e6 * (double)b - 7e5 * (double)a;
            pv[i] = between_edge(a, b, A, off);
            bool quiet = a == 2 && b == 4; /* edge 2→4 shows no jump */
            double jump = quiet ? 0 : (b == 2 ? 1e6 : 0) - (a == 2 ? 1e6 : 0);
            cu[i] = between_edge(a, b, A + W, off + pv[i].drift_ppb * 1e-9 * (double)W + jump);
            if (quiet && k == 0)
                cu[i].uncertainty_ns = pv[i].uncertainty_ns = 200000;
        }
        clock_step_between_t g[5];
        size_t ng = clock_steps_between(pv, NE, cu, NE, g, 5);
        assert_int_equal(ng, k == 0 ? 1 : 0);
        if (k == 0)
            assert_int_equal(g[0].node, 2);
    }
    /* Nor fits without a drift bound (a handful of points: their line says nothing far off). */
    clock_edge_fit_t c3 = between_edge(0, 1, A + W, 5e6);
    assert_int_equal(clock_steps_between(&p1, 1, &c3, 1, got, 2), 2);
    c3.drift_unc_ppb = NAN;
    assert_int_equal(clock_steps_between(&p1, 1, &c3, 1, got, 2), 0);
}

/* ---- the sparse factor (envelope.c) against the dense one ---- */

/*
 * Pairs of a graph of m nodes (4m + 2 at most): kind 0 the agents' plan
 * and 1 random partners, each tied to the reference (−1: on the diagonal
 * only) at two nodes, as the solve's Laplacian is; kind 2 two paths and a
 * lone node, one path tied.
 */
static size_t test_graph(int kind, size_t m, uint64_t *seed, int *ia, int *ib)
{
    size_t n = 0;
    if (kind == 0) {
        static const size_t off[] = {1, 2, 4, 8};
        for (size_t i = 0; i < m; i++)
            for (int j = 0; j < 4; j++)
                if (off[j] < m && 2 * off[j] != m) {
                    ia[n] = (int)i;
                    ib[n++] = (int)((i + off[j]) % m);
                }
    } else if (kind == 1) {
        for (size_t i = 0; i < m; i++) {
            ia[n] = (int)i;
            ib[n++] = (int)((i + 1) % m);
            for (int c = 0; c < 3; c++) {
                size_t k = (size_t)(urand(seed) * (double)m) % m;
                if (k != i) {
                    ia[n] = (int)k; /* either end first; a pair may come twice */
                    ib[n++] = (int)i;
                }
            }
        }
    } else {
        /* 0 … h−1 and h … m−2 in a shuffled order; node m − 1 only on the diagonal. */
        size_t h = m / 2;
        for (size_t i = 0; i + 1 < m - 1; i++)
            if (i + 1 != h) {
                ia[n] = (int)(((i * 7) % (m - 1)));
                ib[n++] = (int)((((i + 1) * 7) % (m - 1)));
            }
    }
    ia[n] = -1;
    ib[n++] = 0;
    if (kind != 2) {
        ia[n] = -1;
        ib[n++] = (int)(m / 2);
    }
    return n;
}

static void test_envelope_against_dense(void **state)
{
    (void)state;
    uint64_t seed = 99;
    for (int kind = 0; kind < 3; kind++) {
        for (size_t m = 5; m <= 200; m = m * 2 + 1) {
            if (kind == 2 && m % 7 == 1)
                continue; /* 7 and m − 1 must be coprime for the shuffle */
            int *ia = malloc((4 * m + 2) * sizeof *ia), *ib = malloc((4 * m + 2) * sizeof *ib);
            size_t n = test_graph(kind, m, &seed, ia, ib), entries;
            clk_env_t *env = clk_env_new(m, ia, ib, n, SIZE_MAX, &entries);
            assert_non_null(env);
            double *A = calloc(m * m, sizeof *A), *L = malloc(m * m * sizeof *L);
            double *inv = malloc(m * m * sizeof *inv), *col = malloc(m * sizeof *col);
            double *blk = malloc(m * CLK_ENV_BLOCK * sizeof *blk);
            double *x = malloc(m * sizeof *x), *y = malloc(m * sizeof *y);
            for (int rep = 0; rep < 2; rep++) {
                clk_env_zero(env);
                memset(A, 0, m * m * sizeof *A);
                /* A weighted Laplacian (as the solve's); the second time only the reference
                 * ties it, but where a part has no tie (kind 2): a small diagonal. */
                for (size_t i = 0; i < n; i++) {
                    double w = 0.1 + 10 * urand(&seed), g = 1 + 1e-4 * (urand(&seed) - 0.5);
                    if (ia[i] >= 0) {
                        clk_env_add(env, (size_t)ia[i], (size_t)ia[i], w * g * g);
                        A[ia[i] * (int)m + ia[i]] += w * g * g;
                    }
                    clk_env_add(env, (size_t)ib[i], (size_t)ib[i], w);
                    A[ib[i] * (int)m + ib[i]] += w;
                    if (ia[i] >= 0) {
                        clk_env_add(env, (size_t)ia[i], (size_t)ib[i], -w * g);
                        A[ia[i] * (int)m + ib[i]] -= w * g;
                        A[ib[i] * (int)m + ia[i]] -= w * g;
                    }
                }
                for (size_t i = 0; i < m && (rep == 0 || kind == 2); i++) {
                    double d = 0.05 + urand(&seed);
                    clk_env_add(env, i, i, d);
                    A[i * m + i] += d;
                }
                memcpy(L, A, m * m * sizeof *L);
                assert_true(clk_chol(L, m));
                assert_true(clk_env_factor(env));
                clk_chol_inverse(L, m, inv, col);
                for (size_t i = 0; i < m; i++)
                    y[i] = urand(&seed) - 0.5;
                for (size_t i = 0; i < m; i++) { /* the dense solution: A⁻¹ y */
                    x[i] = 0;
                    for (size_t k = 0; k < m; k++)
                        x[i] += inv[i * m + k] * y[k];
                }
                clk_env_solve(env, y);
                for (size_t i = 0; i < m; i++)
                    if (fabs(x[i] - y[i]) > 1e-9 * (1 + fabs(x[i])))
                        fail_msg("kind %d m %zu: solve[%zu] %.12g, dense %.12g", kind, m, i, y[i],
                                 x[i]);
                clk_env_invert(env);
                for (size_t i = 0; i < m; i++) {
                    double z = clk_env_read_inverse(env, i, i), d = inv[i * m + i];
                    if (fabs(z - d) > 1e-9 * fabs(d))
                        fail_msg("kind %d m %zu: inverse[%zu][%zu] %.12g, dense %.12g", kind, m, i,
                                 i, z, d);
                }
                for (size_t i = 0; i < n; i++) {
                    if (ia[i] < 0)
                        continue;
                    double z = clk_env_read_inverse(env, (size_t)ia[i], (size_t)ib[i]);
                    double d = inv[ia[i] * (int)m + ib[i]],
                           scale = sqrt(inv[ia[i] * (int)m + ia[i]] * inv[ib[i] * (int)m + ib[i]]);
                    if (fabs(z - d) > 1e-9 * scale)
                        fail_msg("kind %d m %zu: inverse on pair %zu %.12g, dense %.12g", kind, m,
                                 i, z, d);
                }
                /* Every column, in blocks of every width up to CLK_ENV_BLOCK. */
                for (size_t j0 = 0, nb = 1; j0 < m; j0 += nb, nb = nb % CLK_ENV_BLOCK + 1) {
                    if (j0 + nb > m)
                        nb = m - j0;
                    clk_env_solve_columns(env, j0, nb, blk);
                    for (size_t c = 0; c < nb; c++)
                        for (size_t i = 0; i < m; i++) {
                            size_t j = j0 + c;
                            double got = blk[i * nb + c], d = inv[i * m + j];
                            if (fabs(got - d) > 1e-9 * sqrt(inv[i * m + i] * inv[j * m + j]))
                                fail_msg("kind %d m %zu: column %zu row %zu %.12g, dense %.12g",
                                         kind, m, j, i, got, d);
                        }
                }
            }
            free(A);
            free(L);
            free(inv);
            free(col);
            free(blk);
            free(x);
            free(y);
            free(ia);
            free(ib);
            clk_env_destroy(&env);
            assert_null(env);
        }
    }
}

/*
 * The ordering is what makes the factor sparse: the agents' plan of 2000
 * nodes (offsets 1, 2, 4, 8 around the ring), its nodes numbered at random
 * (ids need not follow the ring; in their given order the envelope holds
 * about m/2 entries a node), fits in a few tens of entries a node.
 */
static void test_envelope_plan_is_narrow(void **state)
{
    (void)state;
    size_t m = 2000;
    uint64_t seed = 5;
    int *ia = malloc((4 * m + 2) * sizeof *ia), *ib = malloc((4 * m + 2) * sizeof *ib);
    int *label = malloc(m * sizeof *label);
    size_t n = test_graph(0, m, &seed, ia, ib);
    for (size_t i = 0; i < m; i++)
        label[i] = (int)i;
    for (size_t i = m - 1; i > 0; i--) {
        size_t j = (size_t)(urand(&seed) * (double)(i + 1)) % (i + 1);
        int t = label[i];
        label[i] = label[j];
        label[j] = t;
    }
    for (size_t i = 0; i < n; i++) {
        ia[i] = ia[i] < 0 ? -1 : label[ia[i]];
        ib[i] = label[ib[i]];
    }
    int label_lone = label[m / 2];
    free(label);
    size_t entries;
    /* A bound below its size refuses it before anything is allocated. */
    assert_null(clk_env_new(m, ia, ib, n, 10 * m, &entries));
    assert_true(entries > 10 * m);
    clk_env_t *env = clk_env_new(m, ia, ib, n, 40 * m, &entries);
    if (env == NULL)
        fail_msg("plan of %zu nodes: %zu entries a node", m, entries / m);
    /* Singular (a lone node, nothing on its diagonal): a tiny ridge; indefinite: refused. */
    clk_env_zero(env);
    for (size_t i = 0; i < n; i++) {
        if (ia[i] < 0 || ia[i] == label_lone || ib[i] == label_lone)
            continue;
        clk_env_add(env, (size_t)ia[i], (size_t)ia[i], 1);
        clk_env_add(env, (size_t)ib[i], (size_t)ib[i], 1);
        clk_env_add(env, (size_t)ia[i], (size_t)ib[i], -1);
    }
    for (size_t i = 0; i < m; i++)
        if ((int)i != label_lone)
            clk_env_add(env, i, i, 0.5);
    assert_true(clk_env_factor(env));
    clk_env_add(env, 7, 7, -10);
    assert_false(clk_env_factor(env));
    clk_env_destroy(&env);
    free(ia);
    free(ib);
}

/* ---- the network solver ---- */

/* Node n's clock: c_n(t) = t + off[n] + rate[n]·(t − T0), t the reference's reading. */
typedef struct net {
    double off[8], rate[8];
} net_t;

/* The eight clocks of the complete-graph (K8) tests. */
static const net_t K8_NET = {{0, 1e5, -2e5, 3e5, -4e5, 5e5, -6e5, 7e5},
                             {0, 10e-6, -20e-6, 30e-6, 5e-6, -5e-6, 15e-6, -25e-6}};

static int64_t net_clock(const net_t *net, int n, int64_t t)
{
    return t + (int64_t)llround(net->off[n] + net->rate[n] * (double)(t - T0));
}

/* An exact edge fit a → b anchored at a's reading of reference time tl, plus a bias. */
static clock_edge_fit_t exact_edge(const net_t *net, int a, int b, int64_t tl, double bias)
{
    clock_edge_fit_t e;
    memset(&e, 0, sizeof e);
    e.src = (uint32_t)a;
    e.dst = (uint32_t)b;
    snprintf(e.estimator, sizeof e.estimator, "svm");
    int64_t la = net_clock(net, a, tl);
    e.anchor_ns = la;
    e.offset_ns = (double)(net_clock(net, b, tl) - la) + bias;
    e.drift_ppb = ((1 + net->rate[b]) / (1 + net->rate[a]) - 1) * 1e9;
    e.uncertainty_ns = 10;
    e.drift_unc_ppb = 1;
    e.n_fwd = e.n_rev = 100;
    e.from_ns = net_clock(net, a, T0);
    e.to_ns = net_clock(net, a, T0 + 2000000000LL);
    e.model_ns = e.residual_ns = e.margin_ns = NAN;
    for (int j = 0; j < 3; j++)
        e.misfit_ns[j] = e.misfit_sigma_ns[j] = NAN;
    return e;
}

static const clock_node_fit_t *find_node(const clock_node_fit_t *n, size_t cnt, uint32_t id)
{
    for (size_t i = 0; i < cnt; i++)
        if (n[i].node == id)
            return &n[i];
    return NULL;
}

/* Worst |fit − truth| of node n's map over window w (2 s each from T0). */
static double node_error_at(const net_t *net, const clock_node_fit_t *f, int n, int w)
{
    double worst = 0;
    for (int j = 0; j <= 4; j++) {
        int64_t t = T0 + 2000000000LL * w + 500000000LL * j;
        int64_t x = net_clock(net, n, t);
        double fit = f->offset_ns + f->drift_ppb * 1e-9 * (double)(x - f->anchor_ns);
        worst = fmax(worst, fabs(fit - (double)(t - x)));
    }
    return worst;
}

static double node_error(const net_t *net, const clock_node_fit_t *f, int n)
{
    return node_error_at(net, f, n, 0);
}

/* Options for window w (2 s each from T0) with reference ref. */
static clock_solve_opts_t window_opts(uint32_t ref, int w)
{
    clock_solve_opts_t o;
    clock_solve_opts_default(&o);
    o.ref = ref;
    o.from_ns = T0 + 2000000000LL * w;
    o.to_ns = o.from_ns + 2000000000LL;
    o.at_ns = o.from_ns + 1000000000LL;
    return o;
}

/*
 * Edges whose uncertainties stand 1e6 apart: the sharp ones carry their
 * nodes alone (leverage 1, which rounding took past 1), and the extra
 * variance's step divided by a sum they cancelled: τ² ran to 1e300 and
 * every aligned node was ±inf.  (Reduced from a fuzzed solve.)
 */
static void test_solver_sharp_edges(void **state)
{
    (void)state;
    static const struct {
        uint32_t a, b;
        double off, drift, unc, dunc;
    } E[6] = {
        {5, 4, -292083.16569594725, -502538.26804849243, 11.969705611507742, 2},
        {4, 2, 736462.30795174767, -106593.78790613817, 32.214996843982497, 1.7331402469607018},
        {1, 5, 64179.502338586288, 227169.26156461603, 1e-5, NAN},
        {1, 0, 44313.953938443323, -650110.41271218727, 42.433447280044533, 1.7310022997707968},
        {2, 1, -508558.86763226759, 381962.79439001461, 37.032291920491616, 1.4850026384640342},
        {2, 1, -508555.15695341013, 381962.79439001461, 1e-5, 1.9986692238629904}};
    const int64_t base = T0 + 2000000000LL;
    clock_edge_fit_t e[6];
    for (int i = 0; i < 6; i++) {
        e[i] = between_edge(E[i].a, E[i].b, base + 1000000000LL, E[i].off);
        e[i].drift_ppb = E[i].drift;
        e[i].uncertainty_ns = E[i].unc;
        e[i].drift_unc_ppb = E[i].dunc;
        e[i].margin_ns = NAN;
        e[i].from_ns = base;
        e[i].to_ns = base + 2000000000LL;
    }
    clock_solve_opts_t o = window_opts(0, 1);
    clock_node_fit_t *nodes;
    size_t nn;
    clock_solve_stats_t st;
    char err[BASE_ERRLEN];
    /* Options that would make maps look right and be wrong are refused. */
    clock_solve_opts_t bad = o;
    bad.stamp_asym_ns = NAN;
    assert_int_equal(clock_solve(e, 6, &bad, &nodes, &nn, &st, err), BASE_ERR);
    assert_null(nodes);
    bad = o;
    bad.to_ns = bad.from_ns - 1;
    assert_int_equal(clock_solve(e, 6, &bad, &nodes, &nn, &st, err), BASE_ERR);
    assert_non_null(strstr(err, "ends before it starts"));
    assert_int_equal(clock_solve(e, 6, &o, &nodes, &nn, &st, err), BASE_OK);
    assert_true(isfinite(st.extra_sigma_ns) && st.extra_sigma_ns < 1e6);
    for (size_t i = 0; i < nn; i++)
        if (nodes[i].aligned && !(nodes[i].uncertainty_ns < 1e6))
            fail_msg("node %u aligned at ±%g ns", nodes[i].node, nodes[i].uncertainty_ns);
    free(nodes);
}

static clock_solve_opts_t solve_opts(uint32_t ref)
{
    return window_opts(ref, 0);
}

/*
 * A cluster the size of a master's table and more: 2500 nodes on the
 * agents' plan, each fit exact but for a few ns, solve in one piece, every
 * node aligned and within its uncertainty.
 */
static void test_solver_large_plan(void **state)
{
    (void)state;
    const uint32_t N = 2500;
    static const uint32_t off[] = {1, 2, 4, 8};
    clock_edge_fit_t *e = calloc(4 * N, sizeof *e);
    double *offs = malloc(N * sizeof *offs);
    uint64_t seed = 17;
    for (uint32_t i = 0; i < N; i++)
        offs[i] = i == 0 ? 0 : round((urand(&seed) - 0.5) * 2e6);
    size_t n = 0;
    for (uint32_t i = 0; i < N; i++)
        for (int j = 0; j < 4; j++) {
            clock_edge_fit_t *f = &e[n++];
            uint32_t b = (i + off[j]) % N;
            f->src = i;
            f->dst = b;
            snprintf(f->estimator, sizeof f->estimator, "svm");
            f->anchor_ns = T0 + 1000000000LL + (int64_t)llround(offs[i]);
            f->offset_ns = offs[b] - offs[i] + 3 * gauss(&seed);
            f->uncertainty_ns = 9;
            f->drift_unc_ppb = 1;
            f->n_fwd = f->n_rev = 100;
            f->from_ns = f->anchor_ns - 1000000000LL;
            f->to_ns = f->anchor_ns + 1000000000LL;
            f->model_ns = f->residual_ns = f->margin_ns = NAN;
            for (int k = 0; k < 3; k++)
                f->misfit_ns[k] = f->misfit_sigma_ns[k] = NAN;
        }
    clock_solve_opts_t o = solve_opts(0);
    clock_node_fit_t *nodes;
    size_t nn;
    clock_solve_stats_t st;
    char err[BASE_ERRLEN];
    if (clock_solve(e, n, &o, &nodes, &nn, &st, err) != BASE_OK)
        fail_msg("%s", err);
    assert_int_equal(nn, N);
    assert_int_equal(st.aligned, N);
    assert_true(st.factor_entries < 40 * (uint64_t)N);
    size_t inside = 0;
    for (size_t i = 0; i < nn; i++) {
        /* Node n reads t + offs[n]: its map onto the reference is −offs[n]. */
        double er = fabs(nodes[i].offset_ns + offs[nodes[i].node]);
        inside += er <= nodes[i].uncertainty_ns;
    }
    if (inside < nn * 95 / 100)
        fail_msg("%zu of %zu maps within their uncertainty", inside, nn);
    free(nodes);
    free(e);
    free(offs);
}

/*
 * The variances the sparse factor gives, end to end, against a closed
 * form: a ring of N equal edges tied to the reference at node 0 is two
 * paths of k and N − k edges in parallel, so node k's offset variance is
 * σ² k(N − k)/N.  With an extra per-edge variance τ² (the caller's floor)
 * every weight is 1/(σ² + τ²) and the changing part the sandwich keeps,
 * own_offset_sd_ns², is still σ² k(N − k)/N: a row of the inverse taken
 * wrong, or the wrong entry of one, moves it.
 */
static void test_solver_ring_variance(void **state)
{
    (void)state;
    const uint32_t N = 1001;
    clock_edge_fit_t *e = calloc(N, sizeof *e);
    for (uint32_t i = 0; i < N; i++) {
        clock_edge_fit_t *f = &e[i];
        f->src = i;
        f->dst = (i + 1) % N;
        snprintf(f->estimator, sizeof f->estimator, "svm");
        f->anchor_ns = T0 + 1000000000LL;
        f->offset_ns = 0;
        f->uncertainty_ns = 9;
        f->drift_unc_ppb = 1;
        f->n_fwd = f->n_rev = 100;
        f->from_ns = T0;
        f->to_ns = T0 + 2000000000LL;
        f->model_ns = f->residual_ns = f->margin_ns = NAN;
        for (int k = 0; k < 3; k++)
            f->misfit_ns[k] = f->misfit_sigma_ns[k] = NAN;
    }
    for (int with_tau = 0; with_tau < 2; with_tau++) {
        clock_solve_opts_t o = solve_opts(0);
        o.extra_var_ns2 = with_tau ? 25.0 : 0.0;
        clock_node_fit_t *nodes;
        size_t nn;
        clock_solve_stats_t st;
        char err[BASE_ERRLEN];
        if (clock_solve(e, N, &o, &nodes, &nn, &st, err) != BASE_OK)
            fail_msg("%s", err);
        assert_int_equal(st.aligned, N);
        assert_int_equal(st.dof, 1);
        const clock_node_fit_t *one = find_node(nodes, nn, 1);
        double s1 = one->own_offset_sd_ns * one->own_offset_sd_ns;
        static const uint32_t ks[] = {2, 10, 250, 500, 501, 777, 1000};
        for (size_t j = 0; j < sizeof ks / sizeof *ks; j++) {
            const clock_node_fit_t *f = find_node(nodes, nn, ks[j]);
            double k = ks[j], want = k * (N - k) / (N - 1.0);
            double got = f->own_offset_sd_ns * f->own_offset_sd_ns / s1;
            if (fabs(got - want) > 1e-6 * want)
                fail_msg("τ² %g: node %u variance %.9g of node 1's, want %.9g", o.extra_var_ns2,
                         ks[j], got, want);
            assert_true(fabs(f->offset_ns) < 1e-6);
        }
        free(nodes);
    }
    free(e);
}

static void test_solver_tree(void **state)
{
    (void)state;
    /* Large offsets and ±500 ppm: edges anchored at different local times. */
    net_t net = {{0, 3.5e6, -2.25e9, 7e5}, {0, 480e-6, -495e-6, 120e-6}};
    clock_edge_fit_t e[3] = {exact_edge(&net, 0, 1, T0 + 300000000LL, 0),
                             exact_edge(&net, 2, 1, T0 + 1700000000LL, 0),
                             exact_edge(&net, 3, 2, T0 + 900000000LL, 0)};
    clock_solve_opts_t o = solve_opts(0);
    clock_node_fit_t *nodes;
    size_t nn;
    clock_solve_stats_t st;
    char err[BASE_ERRLEN];
    assert_int_equal(clock_solve(e, 3, &o, &nodes, &nn, &st, err), BASE_OK);
    assert_int_equal(nn, 4);
    assert_int_equal(st.aligned, 4);
    assert_int_equal(st.dof, 0);
    for (int n = 1; n < 4; n++) {
        const clock_node_fit_t *f = find_node(nodes, nn, (uint32_t)n);
        assert_non_null(f);
        assert_true(f->aligned);
        assert_int_equal(f->ref, 0);
        double er = node_error(&net, f, n);
        if (er > 2)
            fail_msg("tree node %d: error %.2f ns", n, er);
        assert_true(f->uncertainty_ns > 0);
        assert_true(f->from_ns < f->to_ns);
    }
    const clock_node_fit_t *r = find_node(nodes, nn, 0);
    assert_true(r->aligned && r->offset_ns == 0 && r->drift_ppb == 0);
    for (int i = 0; i < 3; i++)
        assert_true(fabs(e[i].residual_ns) < 1e-3); /* a tree has no loops */
    free(nodes);
}

/*
 * τ comes from the loop residuals, so with few loops it is a poor estimate
 * and the persistent part's factor follows Student's t quantile: a triangle
 * (one loop) gets about six times the factor of a complete graph of 8 nodes
 * (21 loops).  Tiny edge σ, so the asymmetry is the whole uncertainty: with
 * equal weights a node's variance is 2/3 of τ² in a triangle, 2/8 in K8.
 */
static double persistent_factor(const clock_node_fit_t *f, double tau, double share)
{
    return (f->uncertainty_ns - f->model_ns) / (tau * sqrt(share));
}

static void test_solver_few_loops_widen_persistent(void **state)
{
    (void)state;
    net_t net = K8_NET;
    clock_solve_opts_t o = solve_opts(0);
    clock_node_fit_t *nodes;
    size_t nn;
    clock_solve_stats_t st;

    clock_edge_fit_t tri[3] = {exact_edge(&net, 0, 1, T0 + 1e9, 0),
                               exact_edge(&net, 1, 2, T0 + 1e9, 300),
                               exact_edge(&net, 2, 0, T0 + 1e9, 0)};
    for (int i = 0; i < 3; i++)
        tri[i].uncertainty_ns = 1;
    assert_int_equal(clock_solve(tri, 3, &o, &nodes, &nn, &st, NULL), BASE_OK);
    assert_int_equal(st.dof, 1);
    double tau = st.extra_sigma_ns, one[2];
    assert_true(tau > 150 && tau < 200); /* 300/√3: one residual's worth */
    for (int n = 1; n <= 2; n++) {
        one[n - 1] = persistent_factor(find_node(nodes, nn, (uint32_t)n), tau, 2.0 / 3.0);
        /* 2.7 × t(0.975, 1) / t(0.975, 16) = 2.7 × 12.706 / 2.120 */
        if (!(one[n - 1] > 15.5 && one[n - 1] < 17.0))
            fail_msg("triangle node %d: persistent factor %.2f", n, one[n - 1]);
    }
    free(nodes);

    clock_edge_fit_t k8[28];
    size_t ne = 0;
    for (int a = 0; a < 8; a++)
        for (int b = a + 1; b < 8; b++) {
            k8[ne] = exact_edge(&net, a, b, T0 + 1e9, 100.0 * ((a * 7 + b * 3) % 5 - 2));
            k8[ne++].uncertainty_ns = 1;
        }
    assert_int_equal(clock_solve(k8, ne, &o, &nodes, &nn, &st, NULL), BASE_OK);
    assert_int_equal(st.dof, 21);
    assert_int_equal(st.edges_suspect, 0);
    tau = st.extra_sigma_ns;
    for (int n = 1; n < 8; n++) {
        double many = persistent_factor(find_node(nodes, nn, (uint32_t)n), tau, 2.0 / 8.0);
        /* t(0.975, 1) / t(0.975, 21) = 12.706 / 2.080 */
        if (!(many > 2.5 && many < 2.75 && one[0] / many > 5.8 && one[0] / many < 6.4))
            fail_msg("K8 node %d: persistent factor %.3f (triangle %.2f)", n, many, one[0]);
    }
    free(nodes);

    /*
     * No loop, but an asymmetry floor (what a history learnt from earlier
     * windows' loops): never surer of it than one loop would be.
     */
    clock_edge_fit_t pair = exact_edge(&net, 0, 1, T0 + 1e9, 0);
    pair.uncertainty_ns = 1;
    o.extra_var_ns2 = 100.0 * 100.0;
    assert_int_equal(clock_solve(&pair, 1, &o, &nodes, &nn, &st, NULL), BASE_OK);
    assert_int_equal(st.dof, 0);
    double lone = persistent_factor(find_node(nodes, nn, 1), st.extra_sigma_ns, 1.0);
    if (!(st.extra_sigma_ns == 100 && lone > 15.5 && lone < 17.0))
        fail_msg("no loop, τ floor %.1f: persistent factor %.2f", st.extra_sigma_ns, lone);
    free(nodes);
}

/* Complete graph on 8 nodes, window w (2 s each from T0), exact but for host asymmetries. */
static size_t k8_window(const net_t *net, const double asym[8], int w, clock_edge_fit_t *e)
{
    int64_t t0 = T0 + 2000000000LL * w;
    size_t ne = 0;
    for (int a = 0; a < 8; a++)
        for (int b = a + 1; b < 8; b++) {
            e[ne] = exact_edge(net, a, b, t0 + 1000000000LL, 0.5 * (asym[b] - asym[a]));
            e[ne].window = (uint64_t)w;
            e[ne].from_ns = net_clock(net, a, t0);
            e[ne].to_ns = net_clock(net, a, t0 + 2000000000LL);
            e[ne++].uncertainty_ns = 0.1;
        }
    return ne;
}

/*
 * Solves window w of edges e with the history h (and stamp_asym_ns) and
 * feeds the solve to it.
 */
static void solve_fed(clock_history_t *h, clock_edge_fit_t *e, size_t ne, int w, double stamp,
                      clock_node_fit_t **nodes, size_t *nn, clock_solve_stats_t *st)
{
    clock_solve_opts_t o = window_opts(0, w);
    o.history = h;
    o.stamp_asym_ns = stamp;
    assert_int_equal(clock_solve(e, ne, &o, nodes, nn, st, NULL), BASE_OK);
    clock_history_add(h, *nodes, *nn, e, ne, st);
}

/*
 * Solves window w (with the history h, when not NULL) with and without
 * stamp_asym_ns 6: without, no node's uncertainty covers its error; with it,
 * every one does, widened by 1.96 × 6 / √2.  pooled: whether the maps must
 * have been pooled with other windows.
 */
static void check_stamp_term(const net_t *net, const double asym[8], int w, clock_history_t *h,
                             bool pooled)
{
    clock_edge_fit_t k8[28];
    size_t ne = k8_window(net, asym, w, k8);
    clock_solve_opts_t o = window_opts(0, w);
    o.history = h;
    double unc0[8], err[8];
    for (int pass = 0; pass < 2; pass++) {
        o.stamp_asym_ns = pass ? 6 : 0;
        clock_node_fit_t *nodes;
        size_t nn;
        clock_solve_stats_t st;
        assert_int_equal(clock_solve(k8, ne, &o, &nodes, &nn, &st, NULL), BASE_OK);
        /* The loops close: none of it shows. */
        assert_true(st.extra_sigma_ns < 1e-3);
        for (size_t i = 0; i < ne; i++)
            assert_true(fabs(k8[i].residual_ns) < 1e-3);
        for (int n = 1; n < 8; n++) {
            const clock_node_fit_t *f = find_node(nodes, nn, (uint32_t)n);
            assert_true(f->aligned && (f->pooled > 0) == pooled);
            double u = f->uncertainty_ns, want = 1.96 * 6 / sqrt(2.0);
            if (pass == 0) {
                err[n] = node_error_at(net, f, n, w);
                unc0[n] = u;
                /* The error is half the host's asymmetry against the reference's. */
                if (fabs(err[n] - 0.5 * fabs(asym[n])) > 0.5 || u >= err[n])
                    fail_msg("window %d node %d: error %.2f ns, uncertainty %.2f", w, n, err[n], u);
            } else if (!(u >= want && u < unc0[n] + want + 1 && u > err[n])) {
                fail_msg("window %d node %d: uncertainty %.2f ns (%.2f without; error %.2f)", w, n,
                         u, unc0[n], err[n]);
            }
        }
        assert_true(find_node(nodes, nn, 0)->uncertainty_ns == 0);
        free(nodes);
    }
}

/*
 * A host's own stamp asymmetry shifts all its edges alike: the biases are a
 * gradient, the loops close exactly and no uncertainty built from them
 * covers the error.  stamp_asym_ns brings it in, for every node but the
 * reference, in a window alone and in maps pooled with other windows.
 */
static void test_solver_stamp_asymmetry(void **state)
{
    (void)state;
    net_t net = K8_NET;
    const double asym[8] = {0, 8, -6, 4, -10, 2, 7, -3}; /* ns, per host */
    check_stamp_term(&net, asym, 0, NULL, false);

    clock_history_t *h = clock_history_new(30, 16);
    for (int w = 0; w < 4; w++) {
        clock_edge_fit_t k8[28];
        size_t ne = k8_window(&net, asym, w, k8);
        clock_node_fit_t *nodes;
        size_t nn;
        clock_solve_stats_t st;
        solve_fed(h, k8, ne, w, 0, &nodes, &nn, &st);
        free(nodes);
    }
    check_stamp_term(&net, asym, 4, h, true);
    clock_history_destroy(&h);
}

/*
 * Path bias on the edges of K8 that the edges' σ (1 ns) do not show: noise
 * of σ `noise` drawn afresh every window, asymmetry of `asym` rms per edge
 * from window `asym_from` on, and `one` ns on a single edge throughout.
 * Solved causally with a history, as a live master does; counted from
 * window `count_from` to `windows` − 1.
 */
typedef struct bias_case {
    double noise, asym, one;
    int asym_from, windows, count_from;
    uint64_t seed;
} bias_case_t;

typedef struct bias_run {
    double persist_share; /* mean persist_sigma / extra_sigma */
    double unc, covered;  /* mean uncertainty, share of node windows covered */
    double pooled;        /* share of node windows pooled with others */
} bias_run_t;

static bias_run_t solve_biased(const bias_case_t *c)
{
    net_t net = K8_NET;
    const double host[8] = {0};
    uint64_t seed = c->seed;
    double fixed[28];
    for (int i = 0; i < 28; i++)
        fixed[i] = c->asym * gauss(&seed);
    clock_history_t *h = clock_history_new(30, 16);
    bias_run_t r = {0, 0, 0, 0};
    int counted = 0, node_windows = 0;
    for (int w = 0; w < c->windows; w++) {
        clock_edge_fit_t k8[28];
        size_t ne = k8_window(&net, host, w, k8);
        for (size_t i = 0; i < ne; i++) {
            k8[i].offset_ns += c->noise * gauss(&seed) + (w >= c->asym_from ? fixed[i] : 0);
            k8[i].uncertainty_ns = 3;
        }
        k8[0].offset_ns += c->one;
        clock_node_fit_t *nodes;
        size_t nn;
        clock_solve_stats_t st;
        solve_fed(h, k8, ne, w, 0, &nodes, &nn, &st);
        if (w >= c->count_from) {
            assert_true(st.extra_sigma_ns > 5);
            r.persist_share += st.persist_sigma_ns / st.extra_sigma_ns;
            counted++;
            for (int n = 1; n < 8; n++) {
                const clock_node_fit_t *f = find_node(nodes, nn, (uint32_t)n);
                assert_true(f->aligned);
                r.pooled += f->pooled > 0;
                r.unc += f->uncertainty_ns;
                r.covered += node_error_at(&net, f, n, w) <= f->uncertainty_ns;
                node_windows++;
            }
        }
        free(nodes);
    }
    clock_history_destroy(&h);
    r.persist_share /= counted;
    r.unc /= node_windows;
    r.covered /= node_windows;
    r.pooled /= node_windows;
    return r;
}

/*
 * The loops see the same τ whether the bias is noise or asymmetry; the
 * residual tracks tell them apart.  Noise is pooled away and its maps are
 * narrower; both cover.  An asymmetry that appears mid-run counts as
 * persistent within the pooling's span, and one edge far off keeps its
 * own share however little the others' tracks show.
 */
static void test_solver_noise_is_not_asymmetry(void **state)
{
    (void)state;
    bias_case_t nc = {
        .noise = 15, .asym_from = 1 << 30, .windows = 24, .count_from = 12, .seed = 99};
    bias_case_t ac = {.asym = 15, .windows = 24, .count_from = 12, .seed = 99};
    bias_run_t noise = solve_biased(&nc), asym = solve_biased(&ac);
    if (!(noise.persist_share < 0.6 && asym.persist_share > 0.99))
        fail_msg("share of τ that persists: %.2f with noise, %.2f with asymmetry",
                 noise.persist_share, asym.persist_share);
    assert_true(noise.pooled == 1 && asym.pooled == 1);
    if (!(noise.unc < 0.8 * asym.unc && noise.covered >= 0.95 && asym.covered >= 0.95))
        fail_msg("noise: uncertainty %.1f ns, %.0f %% covered; asymmetry: %.1f ns, %.0f %%",
                 noise.unc, 100 * noise.covered, asym.unc, 100 * asym.covered);
    print_message("persisting share of tau: %.2f (noise), %.2f (asymmetry); uncertainty %.1f / "
                  "%.1f ns; covered %.0f / %.0f %%\n",
                  noise.persist_share, asym.persist_share, noise.unc, asym.unc, 100 * noise.covered,
                  100 * asym.covered);
    double late_sum = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        bias_case_t late = {.noise = 15,
                            .asym = 30,
                            .asym_from = 30,
                            .windows = 60,
                            .count_from = 30,
                            .seed = seed};
        bias_case_t one = {.noise = 15,
                           .one = 100,
                           .asym_from = 1 << 30,
                           .windows = 40,
                           .count_from = 12,
                           .seed = seed};
        bias_run_t rl = solve_biased(&late), ro = solve_biased(&one);
        print_message("seed %d: asymmetry from window 30: %.1f %% covered; one edge 100 ns off: "
                      "%.1f %%\n",
                      (int)seed, 100 * rl.covered, 100 * ro.covered);
        /* Over 64 windows instead of the pooling's 17: 86, 93, 72 %; with no
         * edge's own share: 92.3 % for seed 1's one edge, against 97.4 %
         * (99.0 and 95.4 % while the history learnt the floored τ², which
         * climbed: test_history_tau_own). */
        if (!(rl.covered >= 0.85 && ro.covered >= 0.96))
            fail_msg("seed %d: %.1f %% covered after an asymmetry appeared, %.1f %% with one edge "
                     "off",
                     (int)seed, 100 * rl.covered, 100 * ro.covered);
        late_sum += rl.covered;
    }
    if (!(late_sum / 3 >= 0.95))
        fail_msg("%.1f %% covered after an asymmetry appeared", 100 * late_sum / 3);
}

/*
 * A live master feeds every window to the history as it solves it, and
 * the history's typical τ² is the floor of the next window's.  What it
 * learns is each window's own τ², not the floored one: with the floor,
 * every window stands at least at the typical, and the typical climbs
 * toward the largest windows' τ² (1.33 × the true τ² after these 80
 * windows, where it is 1.04 × now; 2.1 × in oneway at the agents'
 * probe rate).
 */
static void test_history_tau_own(void **state)
{
    (void)state;
    net_t net = K8_NET;
    const double host[8] = {0};
    const double sigma = 15, unc = 3; /* noise per edge fit; σ = unc / 3 */
    double truth = sigma * sigma - unc * unc / 9, sum_own = 0, sum_used = 0;
    uint64_t seed = 7;
    clock_history_t *h = clock_history_new(30, 16);
    const int windows = 80;
    for (int w = 0; w < windows; w++) {
        clock_edge_fit_t k8[28];
        size_t ne = k8_window(&net, host, w, k8);
        for (size_t i = 0; i < ne; i++) {
            k8[i].offset_ns += sigma * gauss(&seed);
            k8[i].uncertainty_ns = unc;
        }
        clock_node_fit_t *nodes;
        size_t nn;
        clock_solve_stats_t st;
        solve_fed(h, k8, ne, w, 0, &nodes, &nn, &st);
        assert_true(isfinite(st.own_sigma_ns) && st.own_sigma_ns <= st.extra_sigma_ns);
        sum_own += st.own_sigma_ns * st.own_sigma_ns;
        sum_used += st.extra_sigma_ns * st.extra_sigma_ns;
        free(nodes);
    }
    double typical = clock_history_extra_var(h);
    print_message("τ² %.0f ns²: the windows' own %.0f, used %.0f, typical after %d windows %.0f\n",
                  truth, sum_own / windows, sum_used / windows, windows, typical);
    if (!(fabs(sum_own / windows / truth - 1) < 0.15 && typical > 0.8 * truth &&
          typical < 1.2 * truth))
        fail_msg("true τ² %.0f ns²: the windows' own %.0f on average, the typical %.0f", truth,
                 sum_own / windows, typical);
    clock_history_destroy(&h);
}

/*
 * Disturbed windows (bit i of `bad`: window 12 + i) in which every edge of
 * node 1 is off (`off` ns at the centre, `drift` ppb: a host whose stamps
 * were disturbed, a gradient, which no loop shows), after 12 clean windows,
 * solved causally; host 1's steady stamp asymmetry `host1` ns under the
 * allowance `stamp` ns.  A disturbed window's map cannot be pooled (it
 * disagrees with what the earlier windows predict far beyond their noise),
 * goes out as it is, and its uncertainty reaches past the prediction:
 * either may be right.  A second disturbed window in a row is held against
 * the windows before the first, not against the first alone.  The clean
 * windows after and between them are pooled with the windows before and
 * narrow.  Solved again once the history holds all 20 windows (as `dpclock
 * fit` does), the disturbed windows are outvoted by both sides and pooled
 * from them.
 */
static void check_disagreeing(unsigned bad, double off, double drift, double host1, double stamp)
{
    net_t net = K8_NET;
    const double host[8] = {0, host1};
    clock_history_t *h = clock_history_new(30, 16);
    double narrow = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (int w = pass ? 12 : 0; w < 20; w++) {
            bool disturbed = w >= 12 && (bad >> (w - 12) & 1u);
            if (pass == 1 && !disturbed)
                continue;
            clock_edge_fit_t k8[28];
            size_t ne = k8_window(&net, host, w, k8);
            for (size_t i = 0; i < ne; i++) {
                k8[i].uncertainty_ns = 3;
                if (disturbed && (k8[i].src == 1 || k8[i].dst == 1)) {
                    k8[i].offset_ns += k8[i].src == 1 ? off : -off;
                    k8[i].drift_ppb += k8[i].src == 1 ? drift : -drift;
                }
            }
            clock_node_fit_t *nodes;
            size_t nn;
            clock_solve_stats_t st;
            if (pass == 0) {
                solve_fed(h, k8, ne, w, stamp, &nodes, &nn, &st);
            } else {
                clock_solve_opts_t o = window_opts(0, w);
                o.history = h;
                o.stamp_asym_ns = stamp;
                assert_int_equal(clock_solve(k8, ne, &o, &nodes, &nn, &st, NULL), BASE_OK);
            }
            const clock_node_fit_t *f = find_node(nodes, nn, 1);
            double err = node_error_at(&net, f, 1, w);
            if (w == 11)
                narrow = f->uncertainty_ns;
            if (pass == 0 && disturbed &&
                !(err > 25 && f->pooled == 0 && f->uncertainty_ns >= err + 1))
                fail_msg("disturbed window %d (pattern %#x; %.0f ns, %.0f ppb, host %.0f): error "
                         "%.1f ns, uncertainty %.1f, pooled %u",
                         w, bad, off, drift, host1, err, f->uncertainty_ns, f->pooled);
            if ((pass == 1 || (w >= 12 && !disturbed)) &&
                !(f->uncertainty_ns < narrow + 3 && err < f->uncertainty_ns && f->pooled >= 3))
                fail_msg("%s window %d (pattern %#x): error %.1f ns, uncertainty %.1f (%.1f "
                         "before), pooled %u",
                         pass ? "offline," : "clean", w, bad, err, f->uncertainty_ns, narrow,
                         f->pooled);
            free(nodes);
        }
    }
    clock_history_destroy(&h);
}

static void test_solver_disagreeing_window(void **state)
{
    (void)state;
    /* One disturbed window, two in a row, and three with clean ones between. */
    static const unsigned patterns[] = {0x1, 0x3, 0x15};
    for (size_t p = 0; p < BASE_ARRAY_LEN(patterns); p++) {
        check_disagreeing(patterns[p], 40, 0, 0, 0);
        check_disagreeing(patterns[p], 0, 30, 0, 0); /* 30 ns off at the ends, none at the centre */
        check_disagreeing(patterns[p], 40, 0, -20, 15); /* on top of a steady 10 ns allowed for */
    }
}

/*
 * Node 1's clock moves by `jump` ns before window 13.  With `unaligned`,
 * window 12 sees every edge of node 1 step, so node 1 is unaligned there:
 * a break in its track.  The next window is not held against the maps
 * before the break (it would reach a millisecond), and no pooling reaches
 * across it, until window 12 is solved again and aligned.  Without the
 * unaligned window, the change is seen only by the pooling: the first
 * maps of windows 13 to 15 stand alone and reach the earlier windows'
 * prediction (either side may be right), and from window 16 on, three
 * windows agree and the maps are pooled and narrow again.
 */
static void check_break(double jump, bool unaligned)
{
    net_t net = K8_NET;
    const double host[8] = {0};
    clock_history_t *h = clock_history_new(30, 16);
    clock_edge_fit_t k8[20][28];
    size_t ne[20];
    for (int w = 0; w < 20; w++) {
        if (w == 13)
            net.off[1] += jump;
        ne[w] = k8_window(&net, host, w, k8[w]);
        for (size_t i = 0; i < ne[w]; i++) {
            k8[w][i].uncertainty_ns = 3;
            k8[w][i].step = unaligned && w == 12 && (k8[w][i].src == 1 || k8[w][i].dst == 1);
        }
        clock_node_fit_t *nodes;
        size_t nn;
        clock_solve_stats_t st;
        solve_fed(h, k8[w], ne[w], w, 0, &nodes, &nn, &st);
        const clock_node_fit_t *f = find_node(nodes, nn, 1);
        assert_true(f->aligned == (!unaligned || w != 12));
        double err = node_error_at(&net, f, 1, w);
        bool wide = !unaligned && w >= 13 && w <= 15;
        if (w > 12 && !(err < f->uncertainty_ns &&
                        (wide ? f->uncertainty_ns > 0.9 * jump : f->uncertainty_ns < 30)))
            fail_msg("jump %.0f ns%s, window %d: error %.1f ns, uncertainty %.1f, pooled %u", jump,
                     unaligned ? " and a break" : "", w, err, f->uncertainty_ns, f->pooled);
        uint32_t pooled = unaligned ? (uint32_t)(w - 13) : w < 16 ? 0 : (uint32_t)(w - 13);
        if (w > 12 && f->pooled != pooled)
            fail_msg("jump %.0f ns%s, window %d: pooled %u, not %u", jump,
                     unaligned ? " and a break" : "", w, f->pooled, pooled);
        free(nodes);
    }
    /* Offline, window 11 pools the 8 windows before it and none after the break. */
    for (int again = 0; unaligned && again < 2; again++) {
        clock_solve_opts_t o = window_opts(0, 11);
        o.history = h;
        clock_node_fit_t *nodes;
        size_t nn;
        clock_solve_stats_t st;
        clock_edge_fit_t e[28];
        memcpy(e, k8[11], sizeof e);
        assert_int_equal(clock_solve(e, ne[11], &o, &nodes, &nn, &st, NULL), BASE_OK);
        uint32_t want = again ? 8 + 8 : 8;
        if (find_node(nodes, nn, 1)->pooled != want)
            fail_msg("jump %.0f ns, window 11 %s: pooled %u, not %u", jump,
                     again ? "once 12 is aligned" : "before the break",
                     find_node(nodes, nn, 1)->pooled, want);
        free(nodes);
        if (again || jump != 0)
            break;
        /*
         * Window 12 itself, solved again without the step: its own break
         * separates it from neither side (8 windows before, 7 after); fed
         * to the history aligned, it is no break any more.
         */
        for (size_t i = 0; i < ne[12]; i++)
            k8[12][i].step = false;
        clock_solve_opts_t o12 = window_opts(0, 12);
        o12.history = h;
        memcpy(e, k8[12], sizeof e);
        assert_int_equal(clock_solve(e, ne[12], &o12, &nodes, &nn, &st, NULL), BASE_OK);
        if (find_node(nodes, nn, 1)->pooled != 8 + 7)
            fail_msg("window 12 solved again: pooled %u, not 15", find_node(nodes, nn, 1)->pooled);
        free(nodes);
        solve_fed(h, k8[12], ne[12], 12, 0, &nodes, &nn, &st);
        free(nodes);
    }
    clock_history_destroy(&h);
}

static void test_history_break_at_unaligned_window(void **state)
{
    (void)state;
    check_break(1e6, true);
    check_break(0, true);
    check_break(1e6, false);
}

/* A forgotten node's track and its edges' residual tracks are gone; the others stay. */
static void test_history_forget(void **state)
{
    (void)state;
    net_t net = K8_NET;
    const double asym[8] = {0, 30, -20, 10, 0, -10, 25, -5};
    clock_history_t *h = clock_history_new(30, 16);
    clock_edge_fit_t k8[28];
    size_t ne = 0;
    for (int w = 0; w < 12; w++) {
        ne = k8_window(&net, asym, w, k8);
        clock_node_fit_t *nodes;
        size_t nn;
        clock_solve_stats_t st;
        solve_fed(h, k8, ne, w, 0, &nodes, &nn, &st);
        free(nodes);
    }
    double before[28], after[28];
    clock_history_persist_var(h, k8, ne, 17, before);
    clock_history_forget(h, 1);
    clock_history_forget(h, 99); /* never seen: nothing happens */
    clock_history_persist_var(h, k8, ne, 17, after);
    assert_int_equal(clock_history_track_len(h, 1), 0);
    assert_int_equal(clock_history_track_len(h, 2), 12);
    for (size_t i = 0; i < ne; i++) {
        bool of1 = k8[i].src == 1 || k8[i].dst == 1;
        assert_true(isfinite(before[i]));
        if (of1 ? !isnan(after[i]) : after[i] != before[i])
            fail_msg("edge %u-%u: %g before, %g after forgetting node 1", k8[i].src, k8[i].dst,
                     before[i], after[i]);
    }
    clock_history_destroy(&h);
}

/* What the edge fits of solve_slow_host report as margins. */
enum slow_margins { MARGINS_RISE, MARGINS_STAY, MARGINS_NONE };

typedef struct slow_case {
    int host;     /* the slow host, −1: none */
    int link;     /* the one edge whose path, not a host, got slower both ways, −1: none */
    double delay; /* what the margins rise by, twice: ns */
    double split; /* the part of the delay that biases the offsets (1: all of it) */
    enum slow_margins mg;
    int from, until; /* slow in windows from ≤ w < until */
    /*
     * Window 17: every other edge of the host saw its margin move inside the
     * window and is unbiased: MOVED_WHOLE, fitted over the whole window
     * (how much of the shift it carries is unknown to the solve);
     * MOVED_CUT, fitted over its undisturbed part (its range 1.2 of 2 s).
     */
    enum { MOVED_NONE, MOVED_WHOLE, MOVED_CUT } moved;
    uint32_t spells; /* nonzero: slow in window w where bit w is set, from and until aside */
} slow_case_t;

/*
 * A host that is slow to stamp what it receives (a host under load): every
 * edge of it is off by half the delay (a gradient: the loops close) and its
 * margins rise by as much.  A link slower both ways raises its margin and
 * moves no offset.  The windows before teach the history each edge's usual
 * margin (5 µs ± 2 ns); windows up to 17 are solved as a live master would,
 * the margins as `mg` says (MARGINS_STAY: they do not rise; MARGINS_NONE:
 * the fits report none).  Returns node n's uncertainty and error in window
 * 17 in unc[n], err[n], and the part of it the margins bound in dly[n].
 */
static void solve_slow_host(const slow_case_t *c, double unc[8], double err[8], double dly[8])
{
    net_t net = K8_NET;
    uint64_t seed = 7;
    clock_history_t *h = clock_history_new(30, 16);
    for (int w = 0; w <= 17; w++) {
        bool slow = c->spells ? (c->spells >> w & 1u) != 0 : w >= c->from && w < c->until;
        double asym[8] = {0}, none[8] = {0};
        if (slow && c->host >= 0)
            asym[c->host] = c->split * c->delay;
        clock_edge_fit_t k8[28], clean[28];
        size_t ne = k8_window(&net, asym, w, k8);
        k8_window(&net, none, w, clean);
        for (size_t i = 0, j = 0; i < ne; i++) {
            bool of_host = (int)k8[i].src == c->host || (int)k8[i].dst == c->host;
            bool trim = c->moved != MOVED_NONE && w == 17 && of_host && j++ % 2 == 0;
            if (trim) {
                k8[i] = clean[i];
                k8[i].margin_step_ns = 0.5 * c->delay;
                if (c->moved == MOVED_CUT)
                    k8[i].from_ns += 800000000;
            }
            k8[i].uncertainty_ns = 6;
            k8[i].margin_ns = c->mg == MARGINS_NONE ? NAN : 5000 + 2 * gauss(&seed);
            if (c->mg == MARGINS_RISE && slow && !trim && (of_host || (int)i == c->link))
                k8[i].margin_ns += 0.5 * c->delay;
        }
        clock_node_fit_t *nodes;
        size_t nn;
        clock_solve_stats_t st;
        solve_fed(h, k8, ne, w, 0, &nodes, &nn, &st);
        for (int n = 0; w == 17 && n < 8; n++) {
            const clock_node_fit_t *f = find_node(nodes, nn, (uint32_t)n);
            unc[n] = f->uncertainty_ns;
            err[n] = node_error_at(&net, f, n, w);
            dly[n] = f->delay_ns;
        }
        free(nodes);
    }
    clock_history_destroy(&h);
}

/*
 * Margins bound what no loop shows of a slow host: its node's map (or every
 * map, when the reference's host is slow) is off by half the delay and
 * covered once the margins say so, and only then, also when the host has
 * been slow for most of the windows the history holds (14 of 17: the
 * usual level is the low end of the margins, their noise the
 * differences of successive windows).  A host's delay is a shift of that
 * host alone, so the other maps are not widened by it; a link slower both
 * ways widens its two ends by their share in it; edges that kept only
 * their undisturbed part leave the host's map between the two, and every
 * map that leans on them widens.  A window after a slow spell is not
 * pooled with it.  Fits without margins say nothing of it (delay_ns
 * unknown).
 */
static void test_solver_slow_host(void **state)
{
    (void)state;
    double unc[8], err[8], dly[8];
    for (int c = 0; c < 6; c++) {
        bool ref_slow = c & 1;
        bool rise = c < 2 || c >= 4;
        slow_case_t sc = {ref_slow ? 0 : 3, -1, 400,        1, rise ? MARGINS_RISE : MARGINS_STAY,
                          c < 4 ? 12 : 3,   18, MOVED_NONE, 0};
        solve_slow_host(&sc, unc, err, dly);
        assert_true(dly[0] == 0);
        for (int n = 1; n < 8; n++) {
            bool hit = ref_slow || n == sc.host;
            if (fabs(err[n] - (hit ? 200 : 0)) > 5)
                fail_msg("host %d slow: node %d is %.1f ns off", sc.host, n, err[n]);
            /* Covered with the margins, missed without them (the old bound). */
            if (hit && (rise ? unc[n] < err[n] : unc[n] >= err[n]))
                fail_msg("host %d slow from window %d, margins %s: node %d %.1f ns off, ±%.1f",
                         sc.host, sc.from, rise ? "rise" : "stay", n, err[n], unc[n]);
            /*
             * What the fit says of it: half the delay and a little (2σ of
             * the margins' noise); the others, nearly nothing; without
             * raised margins, nothing.
             */
            double lo = rise && hit ? 200 : 0, hi = rise ? (hit ? 215 : 10) : 0;
            if (!(dly[n] >= lo && dly[n] <= hi && unc[n] < dly[n] + 10))
                fail_msg("host %d slow from window %d, margins %s: node %d ±%.1f, bound %.1f",
                         sc.host, sc.from, rise ? "rise" : "stay", n, unc[n], dly[n]);
        }
    }
    /* One link slower both ways (edge 1–2, the eighth of k8_window's order): its ends widen. */
    slow_case_t link = {-1, 7, 400, 1, MARGINS_RISE, 12, 18, MOVED_NONE, 0};
    solve_slow_host(&link, unc, err, dly);
    for (int n = 1; n < 8; n++) {
        bool end = n == 1 || n == 2;
        if (err[n] > 5 || !(end ? dly[n] > 20 && dly[n] < 40 : dly[n] < 5))
            fail_msg("one slow link: node %d %.1f ns off, ±%.1f, delay bound %.1f", n, err[n],
                     unc[n], dly[n]);
    }
    /*
     * Four of host 3's seven edges saw the delay go inside window 17 and are
     * unbiased (the loops set the other three aside, so no map is off).
     * Fitted over the whole window, they may carry any part of it: host 3
     * is bounded by its delay and every map that leans on them by its share.
     * Fitted over their undisturbed part, they carry none, and the host's
     * map is taken for unshifted: nothing to bound.
     */
    for (int cut = 0; cut < 2; cut++) {
        slow_case_t half = {3, -1, 400, 1, MARGINS_RISE, 12, 18, cut ? MOVED_CUT : MOVED_WHOLE, 0};
        solve_slow_host(&half, unc, err, dly);
        for (int n = 1; n < 8; n++) {
            double lo = cut ? 0 : n == 3 ? 200 : 20, hi = cut ? 5 : 1000;
            if (err[n] > 1 || !(dly[n] >= lo && dly[n] <= hi))
                fail_msg("edges moved inside the window, fitted %s: node %d %.1f ns off, ±%.1f, "
                         "delay bound %.1f",
                         cut ? "over a part" : "whole", n, err[n], unc[n], dly[n]);
        }
    }
    /*
     * Host 3 slow in windows 12–16, its delay split nearly evenly between
     * what it sends and what it receives (offsets 3 ns off, margins 200
     * ns up): window 17, its spell over, is not pooled with them.
     */
    slow_case_t after = {3, -1, 400, 0.015, MARGINS_RISE, 12, 17, MOVED_NONE, 0};
    solve_slow_host(&after, unc, err, dly);
    if (!(err[3] < 1 && unc[3] >= err[3] && dly[3] == 0))
        fail_msg("after a slow spell: node 3 %.2f ns off, ±%.2f, delay bound %.1f", err[3], unc[3],
                 dly[3]);
    /*
     * Host 3 slow in short spells, on and off 10 times in windows 0–16 and
     * slow again in 17: the noise of its edges' margins is that of the 6
     * quiet steps between windows (their lower quartile), not the median
     * step (a toggle, 200 ns), which would hide the rise under 5σ: the
     * bound is the rise (the history's misfit may widen node 3 further,
     * the spells being in its track).
     */
    slow_case_t spells = {3, -1, 400, 1, MARGINS_RISE, 0, 0, MOVED_NONE, 0x29326u};
    solve_slow_host(&spells, unc, err, dly);
    for (int n = 1; n < 8; n++) {
        double lo = n == 3 ? 200 : 0, hi = n == 3 ? 230 : 10;
        if (fabs(err[n] - (n == 3 ? 200 : 0)) > 5 || !(dly[n] >= lo && dly[n] <= hi) ||
            unc[n] < err[n])
            fail_msg("host 3 slow in spells: node %d %.1f ns off, ±%.1f, delay bound %.1f", n,
                     err[n], unc[n], dly[n]);
    }
    /* No margins at all: nothing to bound with, and the fits say so. */
    slow_case_t blind = {3, -1, 400, 1, MARGINS_NONE, 12, 18, MOVED_NONE, 0};
    solve_slow_host(&blind, unc, err, dly);
    for (int n = 1; n < 8; n++)
        if (!isnan(dly[n]) || (n == 3 && unc[n] >= err[n]))
            fail_msg("no margins: node %d %.1f ns off, ±%.1f, delay bound %.1f", n, err[n], unc[n],
                     dly[n]);
}

/*
 * Warming up: host 3 slow since before the first window (window 0), every
 * map of it 200 ns off.  In a host's first window nothing tells how slow
 * it has been all along but its margins: each host is bounded by its
 * least margin (5 µs here), every map covered, and the solve counts the
 * hosts.  Windows 1 and 2 have no level yet and say so (delay_ns unknown);
 * from window 3 the bound is the margins' rise again, and the warm-up
 * does not keep window 0 out of the pools (it is in doubt only for want
 * of history).
 */
/* Window w of K8 with margins, node 3 slow to stamp up to window slow_to (400 ns, margins +200). */
static size_t slow3_window(const net_t *net, int w, int slow_to, uint64_t *seed,
                           clock_edge_fit_t k8[28])
{
    double asym[8] = {0};
    if (w <= slow_to)
        asym[3] = 400;
    size_t ne = k8_window(net, asym, w, k8);
    for (size_t i = 0; i < ne; i++) {
        k8[i].uncertainty_ns = 6;
        k8[i].margin_ns = 5000 + 2 * gauss(seed);
        if (w <= slow_to && (k8[i].src == 3 || k8[i].dst == 3))
            k8[i].margin_ns += 200;
    }
    return ne;
}

/*
 * Every map of window 0 warms up, first and refined: with the next window
 * in the history its edges still have no level, and node 3 may have been
 * slow all along.  Once levels stand, window 0 solved again takes node 3's
 * raised margins for what they are instead.
 */
static void test_solver_warm_up(void **state)
{
    (void)state;
    net_t net = K8_NET;
    uint64_t seed = 11;
    clock_history_t *h = clock_history_new(30, 16);
    for (int w = 0; w <= 5; w++) {
        clock_edge_fit_t k8[28];
        size_t ne = slow3_window(&net, w, 0, &seed, k8);
        clock_node_fit_t *nodes;
        size_t nn;
        clock_solve_stats_t st;
        solve_fed(h, k8, ne, w, 0, &nodes, &nn, &st);
        bool warm = w < 1;
        assert_int_equal(st.hosts_warming, warm ? 8 : 0);
        for (int n = 1; n < 8; n++) {
            const clock_node_fit_t *f = find_node(nodes, nn, (uint32_t)n);
            double err = node_error_at(&net, f, n, w);
            bool ok = f->uncertainty_ns >= err;
            if (warm)
                ok = ok && f->warm_ns >= 9900 && f->delay_ns >= f->warm_ns &&
                     f->uncertainty_ns >= f->delay_ns;
            else
                ok = ok && f->warm_ns == 0 && (w < 3 ? isnan(f->delay_ns) : f->delay_ns < 10);
            if (!ok)
                fail_msg("window %d, node %d: %.1f ns off, ±%.1f, delay bound %.1f, warm %.1f", w,
                         n, err, f->uncertainty_ns, f->delay_ns, f->warm_ns);
            if (w == 5 && n != 3 && f->pooled < 5)
                fail_msg("window 5, node %d pooled with %u windows", n, f->pooled);
        }
        free(nodes);
        if (w != 1 && w != 3)
            continue;
        /* Window 0 refined, with window 1 (then 1 to 3) in the history. */
        uint64_t s0 = 11;
        ne = slow3_window(&net, 0, 0, &s0, k8);
        clock_solve_opts_t o = window_opts(0, 0);
        o.history = h;
        assert_int_equal(clock_solve(k8, ne, &o, &nodes, &nn, &st, NULL), BASE_OK);
        assert_int_equal(st.hosts_warming, w == 1 ? 8 : 0);
        const clock_node_fit_t *f = find_node(nodes, nn, 3);
        double err = node_error_at(&net, f, 3, 0);
        if (!(f->uncertainty_ns >= err && (w == 1 ? f->warm_ns >= 9900 : f->warm_ns == 0) &&
              f->delay_ns >= 200 && f->delay_ns < (w == 1 ? 1e5 : 1000)))
            fail_msg("window 0 again after window %d: node 3 %.1f ns off, ±%.1f, delay bound "
                     "%.1f, warm %.1f",
                     w, err, f->uncertainty_ns, f->delay_ns, f->warm_ns);
        free(nodes);
    }
    clock_history_destroy(&h);
}

/*
 * Node 3 slow to stamp from the start to window 4 (400 ns, its margins
 * +200), quiet after: a live master's first windows had no margin level,
 * and windows 3 and 4 had levels from windows that were all slow, so none
 * of them was bounded when solved.  Kept so in the history, they stand
 * against the quiet windows after them, which must reach what they predict
 * (±200 ns) until three quiet ones outvote them; noted again once the
 * levels stand (clock_history_note_bounds, windows k − 1, k − 2, k − 4,
 * k − 8), they pool with none of those, which are ±8–25 ns instead.
 */
static void test_history_note_bounds(void **state)
{
    (void)state;
    enum { W = 12 };
    net_t net = K8_NET;
    /* Earlier windows noted again: never, as the master does, then once more with the
     * margin term off (which must change nothing), and window k − 1 by its refinement's
     * bounds (clock_history_keep_bounds, which must change nothing either). */
    double unc[4] = {0, 0, 0, 0};
    for (int mode = 0; mode < 4; mode++) {
        uint64_t seed = 5;
        clock_history_t *h = clock_history_new(30, 16);
        clock_edge_fit_t e[W][28];
        size_t ne[W];
        for (int w = 0; w < W; w++) {
            ne[w] = slow3_window(&net, w, 4, &seed, e[w]);
            clock_node_fit_t *nodes;
            size_t nn;
            clock_solve_stats_t st;
            solve_fed(h, e[w], ne[w], w, 0, &nodes, &nn, &st);
            const clock_node_fit_t *f = find_node(nodes, nn, 3);
            double err = node_error_at(&net, f, 3, w);
            if (w >= 5 && err > f->uncertainty_ns)
                fail_msg("mode %d, window %d: node 3 %.1f ns off, ±%.1f", mode, w, err,
                         f->uncertainty_ns);
            if (w == 6 || w == 7)
                unc[mode] += f->uncertainty_ns;
            free(nodes);
            for (int d = 1; mode > 0 && d <= 8 && d <= w; d *= 2) {
                clock_solve_opts_t o = window_opts(0, w - d);
                char msg[BASE_ERRLEN];
                if (mode == 3 && d == 1) {
                    o.history = h;
                    clock_edge_fit_t er[28];
                    memcpy(er, e[w - d], ne[w - d] * sizeof *er);
                    assert_int_equal(clock_solve(er, ne[w - d], &o, &nodes, &nn, NULL, msg),
                                     BASE_OK);
                    clock_history_keep_bounds(h, nodes, nn);
                    free(nodes);
                    continue;
                }
                for (int pass = 0; pass < (mode == 3 ? 1 : mode); pass++) {
                    o.margin_z = pass ? 0 : o.margin_z;
                    assert_int_equal(clock_history_note_bounds(h, e[w - d], ne[w - d], &o, msg),
                                     BASE_OK);
                }
            }
        }
        clock_history_destroy(&h);
    }
    if (!(unc[1] < 0.2 * unc[0] && unc[2] == unc[1] && unc[3] == unc[1]))
        fail_msg("windows 6 and 7, node 3: ±%.1f ns together with the bounds noted again, ±%.1f "
                 "without, ±%.1f noted once more with the margin term off, ±%.1f with window "
                 "k − 1's from its refinement",
                 unc[1], unc[0], unc[2], unc[3]);
}

static void test_solver_loops_show_asymmetry(void **state)
{
    (void)state;
    net_t net = {{0, 1e5, -2e5, 3e5, -4e5}, {0, 10e-6, -20e-6, 30e-6, 5e-6}};
    /* A ring with one chord; edge 1→2 has 600 ns of path asymmetry. */
    clock_edge_fit_t e[6] = {
        exact_edge(&net, 0, 1, T0 + 1e9, 0), exact_edge(&net, 1, 2, T0 + 1e9, 600),
        exact_edge(&net, 2, 3, T0 + 1e9, 0), exact_edge(&net, 3, 4, T0 + 1e9, 0),
        exact_edge(&net, 4, 0, T0 + 1e9, 0), exact_edge(&net, 0, 2, T0 + 1e9, 0)};
    clock_solve_opts_t o = solve_opts(0);
    clock_node_fit_t *nodes;
    size_t nn;
    clock_solve_stats_t st;
    assert_int_equal(clock_solve(e, 6, &o, &nodes, &nn, &st, NULL), BASE_OK);
    assert_int_equal(st.dof, 2);
    assert_true(st.extra_sigma_ns > 50); /* the residuals called for extra variance */
    size_t worst = 0;
    for (size_t i = 0; i < 6; i++)
        if (fabs(e[i].residual_ns) > fabs(e[worst].residual_ns))
            worst = i;
    assert_int_equal(worst, 1);
    assert_true(fabs(e[1].residual_ns) > 150);
    /* The uncertainties widen to cover what the asymmetry did. */
    for (int n = 1; n < 5; n++) {
        const clock_node_fit_t *f = find_node(nodes, nn, (uint32_t)n);
        double er = node_error(&net, f, n);
        if (er > f->uncertainty_ns)
            fail_msg("node %d: error %.1f outside ±%.1f", n, er, f->uncertainty_ns);
        assert_true(f->uncertainty_ns > 30);
        /*
         * The window-to-window part of the offset's σ leaves the asymmetry
         * out (it would not average away over windows); the map is unpooled.
         */
        assert_true(f->own_offset_sd_ns > 0 && 3 * f->own_offset_sd_ns < 0.5 * f->uncertainty_ns);
        assert_true(f->own_offset_ns == f->offset_ns && f->pooled == 0);
    }
    /*
     * persist_k sizes the persistent part alone: twice the factor, and the
     * uncertainty grows by nearly 2× (the asymmetry dominates), never by more.
     */
    clock_node_fit_t *wide;
    size_t nw;
    clock_solve_opts_t o2 = o;
    o2.persist_k = 2 * o.persist_k;
    assert_int_equal(clock_solve(e, 6, &o2, &wide, &nw, &st, NULL), BASE_OK);
    assert_int_equal(nw, nn);
    for (int n = 1; n < 5; n++) {
        const clock_node_fit_t *f = find_node(nodes, nn, (uint32_t)n);
        const clock_node_fit_t *g = find_node(wide, nw, (uint32_t)n);
        double r = (g->uncertainty_ns - g->model_ns) / (f->uncertainty_ns - f->model_ns);
        if (!(r > 1.8 && r <= 2.0 + 1e-9))
            fail_msg("node %d: persist_k ×2 widened the uncertainty %.3f×", n, r);
        assert_true(g->offset_ns == f->offset_ns);
    }
    free(wide);

    /*
     * The map's error is held over the whole window: a drift error carries
     * the anchor's error further at one end, with its sign half the time, so
     * the uncertainty grows by at least the mean excursion, not by the little
     * it would in quadrature with the much larger asymmetry part.
     */
    clock_edge_fit_t ed[6];
    memcpy(ed, e, sizeof ed);
    for (int i = 0; i < 6; i++)
        ed[i].drift_unc_ppb = 60;
    assert_int_equal(clock_solve(ed, 6, &o, &wide, &nw, &st, NULL), BASE_OK);
    for (int n = 1; n < 5; n++) {
        const clock_node_fit_t *f = find_node(nodes, nn, (uint32_t)n);
        const clock_node_fit_t *g = find_node(wide, nw, (uint32_t)n);
        double half = 0.5 * (double)(o.to_ns - o.from_ns);
        double sd_end = g->drift_unc_ppb / o.coverage_k * 1e-9 * half;
        double sd_was = f->drift_unc_ppb / o.coverage_k * 1e-9 * half;
        double grew = g->uncertainty_ns - f->uncertainty_ns, u = f->uncertainty_ns;
        double quad = sqrt(u * u + pow(o.coverage_k * sd_end, 2)) - u;
        if (!(sd_end > 5 && grew >= 0.75 * (sd_end - sd_was) && grew > 2 * quad &&
              grew <= o.coverage_k * sd_end))
            fail_msg("node %d: a drift σ of %.1f ns at the ends widened ±%.1f by %.2f ns "
                     "(quadrature alone: %.2f)",
                     n, sd_end, u, grew, quad);
    }
    free(wide);
    free(nodes);

    /* Without the asymmetry everything is consistent and tight. */
    e[1] = exact_edge(&net, 1, 2, T0 + 1e9, 0);
    assert_int_equal(clock_solve(e, 6, &o, &nodes, &nn, &st, NULL), BASE_OK);
    assert_true(st.extra_sigma_ns < 1);
    for (int n = 1; n < 5; n++) {
        const clock_node_fit_t *f = find_node(nodes, nn, (uint32_t)n);
        assert_true(node_error(&net, f, n) < 2);
        assert_true(f->uncertainty_ns < 30);
    }
    free(nodes);
}

/* A ring of 6 with chords two and three apart: 12 edges, 5 unknowns, 7 loops. */
static size_t mesh6(const net_t *net, const double *bias, clock_edge_fit_t *e)
{
    static const int pairs[12][2] = {{0, 1}, {1, 2}, {2, 3}, {3, 4}, {4, 5}, {5, 0},
                                     {0, 2}, {1, 3}, {2, 4}, {3, 5}, {4, 0}, {0, 3}};
    for (size_t i = 0; i < 12; i++)
        e[i] = exact_edge(net, pairs[i][0], pairs[i][1], T0 + 1e9, bias[i]);
    return 12;
}

static void test_solver_sets_detours_aside(void **state)
{
    (void)state;
    net_t net = {{0, 1e5, -2e5, 3e5, -4e5, 2.5e5}, {0, 10e-6, -20e-6, 30e-6, 5e-6, -40e-6}};
    /* Two paths take a longer way one direction: 1→2 and 3→4. */
    double bias[12] = {0, 2000, 0, -1500, 0, 0, 0, 0, 0, 0, 0, 0};
    clock_edge_fit_t e[12];
    size_t ne = mesh6(&net, bias, e);
    clock_solve_opts_t o = solve_opts(0);
    clock_node_fit_t *nodes;
    size_t nn;
    clock_solve_stats_t st;
    assert_int_equal(clock_solve(e, ne, &o, &nodes, &nn, &st, NULL), BASE_OK);
    assert_int_equal(st.edges_suspect, 2);
    assert_int_equal(st.dof, 12 - 2 - 5);
    for (size_t i = 0; i < ne; i++)
        assert_int_equal(e[i].suspect, bias[i] != 0);
    /* The residual of a suspect edge is its disagreement with the rest: its bias. */
    assert_true(fabs(e[1].residual_ns + 2000) < 5 || fabs(e[1].residual_ns - 2000) < 5);
    assert_true(fabs(e[3].residual_ns + 1500) < 5 || fabs(e[3].residual_ns - 1500) < 5);
    for (int n = 1; n < 6; n++) {
        const clock_node_fit_t *f = find_node(nodes, nn, (uint32_t)n);
        double er = node_error(&net, f, n);
        if (er > 2 || er > f->uncertainty_ns || f->uncertainty_ns > 30)
            fail_msg("node %d: error %.1f, uncertainty %.1f", n, er, f->uncertainty_ns);
    }
    free(nodes);

    /* Turned off, least squares spreads the two biases over the nodes. */
    o.suspect_k = 0;
    mesh6(&net, bias, e);
    assert_int_equal(clock_solve(e, ne, &o, &nodes, &nn, &st, NULL), BASE_OK);
    assert_int_equal(st.edges_suspect, 0);
    double worst = 0;
    for (int n = 1; n < 6; n++)
        worst = fmax(worst, node_error(&net, find_node(nodes, nn, (uint32_t)n), n));
    assert_true(worst > 100);
    for (size_t i = 0; i < ne; i++)
        assert_false(e[i].suspect);
    free(nodes);

    /*
     * Asymmetry on every path is not a detour: no edge stands out, nothing is
     * set aside, and the uncertainties widen instead.
     */
    o.suspect_k = 5;
    for (size_t i = 0; i < 12; i++)
        bias[i] = 500 * sin(2.1 * (double)i + 0.3);
    mesh6(&net, bias, e);
    assert_int_equal(clock_solve(e, ne, &o, &nodes, &nn, &st, NULL), BASE_OK);
    assert_int_equal(st.edges_suspect, 0);
    assert_int_equal(st.dof, 7);
    assert_true(st.extra_sigma_ns > 50);
    free(nodes);

    /*
     * Large biases on 5 of 12 edges: more than half the loops.  The typical
     * residual takes them in, none stands out and nothing is set aside.
     */
    memset(bias, 0, sizeof bias);
    bias[0] = 3000;
    bias[2] = -2500;
    bias[4] = 2000;
    bias[7] = -3500;
    bias[9] = 2800;
    mesh6(&net, bias, e);
    assert_int_equal(clock_solve(e, ne, &o, &nodes, &nn, &st, NULL), BASE_OK);
    assert_int_equal(st.edges_suspect, 0);
    assert_int_equal(st.dof, 7);
    for (size_t i = 0; i < ne; i++)
        assert_false(e[i].suspect);
    free(nodes);

    /* A biased bridge is in no loop: nothing can single it out. */
    clock_edge_fit_t b[13];
    memset(bias, 0, sizeof bias);
    mesh6(&net, bias, b);
    net.off[6] = 7e4;
    net.rate[6] = 3e-6;
    b[12] = exact_edge(&net, 5, 6, T0 + 1e9, 3000);
    assert_int_equal(clock_solve(b, 13, &o, &nodes, &nn, &st, NULL), BASE_OK);
    assert_int_equal(st.edges_suspect, 0);
    assert_false(b[12].suspect);
    assert_true(fabs(b[12].residual_ns) < 1);
    free(nodes);
}

static void test_solver_disconnected_and_steps(void **state)
{
    (void)state;
    net_t net = {{0, 1e5, 2e5, 3e5, 4e5}, {0}};
    clock_edge_fit_t e[4] = {exact_edge(&net, 0, 1, T0 + 1e9, 0),
                             exact_edge(&net, 2, 3, T0 + 1e9, 0),
                             exact_edge(&net, 1, 4, T0 + 1e9, 0), exact_edge(&net, 3, 4, T0, 0)};
    e[2].step = true; /* 1–4 saw a clock step: not used */
    e[3].uncertainty_ns = NAN;
    clock_solve_opts_t o = solve_opts(0);
    clock_node_fit_t *nodes;
    size_t nn;
    clock_solve_stats_t st;
    assert_int_equal(clock_solve(e, 4, &o, &nodes, &nn, &st, NULL), BASE_OK);
    assert_int_equal(nn, 5);
    assert_int_equal(st.edges_skipped, 2);
    assert_true(find_node(nodes, nn, 1)->aligned);
    assert_false(find_node(nodes, nn, 2)->aligned); /* a component of its own: never guessed */
    assert_false(find_node(nodes, nn, 3)->aligned);
    assert_false(find_node(nodes, nn, 4)->aligned);
    assert_true(isnan(e[2].residual_ns));
    free(nodes);

    /* A reference that appears in no edge: only the reference is aligned. */
    o.ref = 9;
    assert_int_equal(clock_solve(e, 2, &o, &nodes, &nn, &st, NULL), BASE_OK);
    assert_int_equal(st.aligned, 1);
    assert_true(find_node(nodes, nn, 9)->aligned);
    free(nodes);
    /* No edges at all. */
    assert_int_equal(clock_solve(NULL, 0, &o, &nodes, &nn, &st, NULL), BASE_OK);
    assert_int_equal(nn, 1);
    free(nodes);
}

/*
 * A random graph of the eight K8 clocks: a ring and chords, each fit off by
 * up to ±60 ns and now and then 3 µs (a detour), of random uncertainty; with
 * `flip`, each either way round.  Returns how many of e[28] it filled.
 */
static size_t random_k8_edges(uint64_t *seed, bool flip, clock_edge_fit_t e[28])
{
    memset(e, 0, 28 * sizeof *e);
    size_t n = 0;
    for (int a = 0; a < 8; a++)
        for (int b = a + 1; b < 8; b++) {
            if (b != a + 1 && !(a == 0 && b == 7) && urand(seed) > 0.4)
                continue;
            double bias = 30 * gauss(seed) + (urand(seed) < 0.05 ? 3000 : 0);
            bool back = flip && urand(seed) < 0.5;
            e[n] = exact_edge(&K8_NET, back ? b : a, back ? a : b,
                              T0 + (int64_t)(2e9 * urand(seed)), bias);
            e[n].uncertainty_ns = 5 + 50 * urand(seed);
            e[n].drift_unc_ppb = 0.5 + 5 * urand(seed);
            n++;
        }
    return n;
}

/* Edge a → b as b → a: anchored at b's reading of a's anchor, the inverse map. */
static clock_edge_fit_t mirror_edge(const clock_edge_fit_t *e)
{
    clock_edge_fit_t m = *e;
    double D = 1e-9 * e->drift_ppb, r = (double)llround(e->offset_ns) - e->offset_ns;
    m.src = e->dst;
    m.dst = e->src;
    m.anchor_ns = e->anchor_ns + llround(e->offset_ns);
    m.offset_ns = -e->offset_ns - r * D / (1 + D);
    m.drift_ppb = (1 / (1 + D) - 1) * 1e9;
    m.drift_unc_ppb = e->drift_unc_ppb / ((1 + D) * (1 + D));
    m.from_ns = clock_edge_map(e, e->from_ns);
    m.to_ns = clock_edge_map(e, e->to_ns);
    m.n_fwd = e->n_rev;
    m.n_rev = e->n_fwd;
    return m;
}

/*
 * Node ids are labels and edges come in any order, either way round: random graphs of the
 * eight K8 clocks (a ring and random chords, edges off by up to ±60 ns,
 * now and then one 3 µs off: a detour), solved once with ids 0–7 in one
 * order, then with ids anywhere in 32 bits, the edges shuffled and half of
 * them seen from the other end, give every node the same map, to well
 * under a ns.
 */
static void test_solver_labels_and_order(void **state)
{
    (void)state;
    uint64_t seed = 0x1abe1;
    char err[BASE_ERRLEN];
    for (int run = 0; run < 100; run++) {
        clock_edge_fit_t e[28], g[28];
        size_t n = random_k8_edges(&seed, true, e);
        uint32_t id[8];
        for (int i = 0; i < 8; i++) {
            bool used;
            do {
                id[i] = (uint32_t)(urand(&seed) * 4294967295.0);
                used = false;
                for (int j = 0; j < i; j++)
                    used |= id[j] == id[i];
            } while (used);
        }
        size_t perm[28];
        for (size_t i = 0; i < n; i++)
            perm[i] = i;
        for (size_t i = n - 1; i > 0; i--) {
            size_t j = (size_t)(urand(&seed) * (double)(i + 1)) % (i + 1), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        bool flipped[28];
        for (size_t i = 0; i < n; i++) {
            g[i] = e[perm[i]];
            g[i].src = id[g[i].src];
            g[i].dst = id[g[i].dst];
            flipped[i] = urand(&seed) < 0.5;
            if (flipped[i]) /* the same fit seen from the other end */
                g[i] = mirror_edge(&g[i]);
        }
        clock_solve_opts_t o = solve_opts(0), q = solve_opts(id[0]);
        clock_node_fit_t *nodes, *other;
        size_t nn, mm;
        assert_int_equal(clock_solve(e, n, &o, &nodes, &nn, NULL, err), BASE_OK);
        assert_int_equal(clock_solve(g, n, &q, &other, &mm, NULL, err), BASE_OK);
        assert_int_equal(nn, mm);
        double worst_unc = 0;
        for (int i = 0; i < 8; i++) {
            const clock_node_fit_t *f = find_node(nodes, nn, (uint32_t)i);
            const clock_node_fit_t *h = find_node(other, mm, id[i]);
            assert_non_null(f);
            assert_non_null(h);
            assert_true(f->aligned && h->aligned);
            double at = f->offset_ns + 1e-9 * f->drift_ppb * (double)(h->anchor_ns - f->anchor_ns);
            /* An edge the other way round is read in the other end's ns: 1e-4 here at most. */
            double tol = 0.01 + 1e-4 * f->uncertainty_ns;
            worst_unc = fmax(worst_unc, f->uncertainty_ns);
            if (fabs(at - h->offset_ns) > tol || fabs(f->drift_ppb - h->drift_ppb) > 1e-4 ||
                fabs(f->uncertainty_ns - h->uncertainty_ns) > tol)
                fail_msg("run %d, node %d: %.3f / %.3f ns, %.5f / %.5f ppb, ±%.3f / ±%.3f", run, i,
                         at, h->offset_ns, f->drift_ppb, h->drift_ppb, f->uncertainty_ns,
                         h->uncertainty_ns);
        }
        for (size_t i = 0; i < n; i++) /* and the loops say the same of every edge */
            if (fabs(e[perm[i]].residual_ns - (flipped[i] ? -1 : 1) * g[i].residual_ns) >
                    0.01 + 1e-4 * (fabs(g[i].residual_ns) + 2 * worst_unc) ||
                e[perm[i]].suspect != g[i].suspect)
                fail_msg("run %d, edge %u-%u: residual %.3f / %.3f ns, suspect %d / %d", run,
                         e[perm[i]].src, e[perm[i]].dst, e[perm[i]].residual_ns, g[i].residual_ns,
                         e[perm[i]].suspect, g[i].suspect);
        free(nodes);
        free(other);
    }
}

/*
 * The reference is a choice of origin: random graphs as above solved onto
 * node 0 and onto another node give maps that compose, i → r → 0 as i → 0
 * to the ns, and set aside the same detours (5000 other draws too).
 */
static void test_solver_reference_choice(void **state)
{
    (void)state;
    uint64_t seed = 0x5ef;
    char err[BASE_ERRLEN];
    for (int run = 0; run < 100; run++) {
        clock_edge_fit_t e[28], g[28];
        size_t n = random_k8_edges(&seed, false, e);
        memcpy(g, e, n * sizeof *e);
        uint32_t r = 1 + (uint32_t)(urand(&seed) * 7) % 7;
        clock_solve_opts_t o = solve_opts(0), q = solve_opts(r);
        clock_node_fit_t *m0, *mr;
        size_t n0, nr;
        assert_int_equal(clock_solve(e, n, &o, &m0, &n0, NULL, err), BASE_OK);
        assert_int_equal(clock_solve(g, n, &q, &mr, &nr, NULL, err), BASE_OK);
        const clock_node_fit_t *r0 = find_node(m0, n0, r);
        for (int i = 0; i < 8; i++) {
            const clock_node_fit_t *f = find_node(m0, n0, (uint32_t)i);
            const clock_node_fit_t *h = find_node(mr, nr, (uint32_t)i);
            int64_t x = f->anchor_ns;
            int64_t via = clock_node_map(r0, clock_node_map(h, x));
            if (llabs(via - clock_node_map(f, x)) > 1) /* two maps rounded to the ns */
                fail_msg("run %d, node %d: onto 0 %lld ns, via %u %+lld ns", run, i,
                         (long long)(clock_node_map(f, x) - T0), r,
                         (long long)(via - clock_node_map(f, x)));
        }
        for (size_t i = 0; i < n; i++)
            if (e[i].suspect != g[i].suspect)
                fail_msg("run %d, edge %u-%u: suspect %d onto 0, %d onto %u", run, e[i].src,
                         e[i].dst, e[i].suspect, g[i].suspect, r);
        free(m0);
        free(mr);
    }
}

/*
 * New edges that sort between known ones are merged in, one pass per add
 * (one by one, each moved every track after it), and each keeps its own
 * margins; past EDGE_MAX (65536) edges come in first come first served and
 * the rest are counted, as before.
 */
static void test_history_many_new_edges(void **state)
{
    (void)state;
    enum { N = 4096, EDGES_MAX = 65536 };
    clock_history_t *h = clock_history_new(30, 100000);
    clock_edge_fit_t *e = calloc(EDGES_MAX + 10, sizeof *e);
    assert_non_null(e);
    /* Windows 0–3 of the even edges, then of the odd ones (between them), then one of each. */
    for (int pass = 0; pass < 3; pass++) {
        for (int w = 0; w < (pass < 2 ? 4 : 1); w++) {
            size_t m = 0;
            for (uint32_t i = 0; i < N; i++) {
                if (pass < 2 && i % 2 != (uint32_t)pass)
                    continue;
                clock_edge_fit_t *f = &e[m++];
                memset(f, 0, sizeof *f);
                f->window = pass < 2 ? w : 4;
                f->src = i / 4 + 1 + i % 4; /* both orders, and (lo, hi) not in add order */
                f->dst = i / 4;
                f->margin_ns = 1000.0 * (i + 1) + w;
                f->residual_ns = NAN;
            }
            clock_history_add(h, NULL, 0, e, m, NULL);
        }
    }
    assert_int_equal(clock_history_ignored(h), 0);
    for (uint32_t i = 0; i < N; i++) {
        clock_edge_fit_t q = {.window = 5, .src = i / 4, .dst = i / 4 + 1 + i % 4};
        double lv = clock_history_margin_level(h, &q, NULL, NULL);
        if (!(fabs(lv - 1000.0 * (i + 1)) < 4))
            fail_msg("edge %u-%u: margin level %.1f, not %.0f", q.src, q.dst, lv, 1000.0 * (i + 1));
    }
    clock_history_destroy(&h);
    /* One add beyond EDGE_MAX: the first EDGE_MAX in, 10 counted. */
    h = clock_history_new(30, 100000);
    for (int w = 0; w < 4; w++) {
        for (uint32_t i = 0; i < EDGES_MAX + 10; i++) {
            clock_edge_fit_t *f = &e[i];
            memset(f, 0, sizeof *f);
            f->window = w;
            f->src = i + 1;
            f->dst = 0;
            f->margin_ns = 5000;
            f->residual_ns = NAN;
        }
        clock_history_add(h, NULL, 0, e, EDGES_MAX + 10, NULL);
    }
    assert_int_equal(clock_history_ignored(h), 40);
    clock_edge_fit_t in = {.window = 9, .src = EDGES_MAX, .dst = 0};
    clock_edge_fit_t out = {.window = 9, .src = EDGES_MAX + 1, .dst = 0};
    assert_true(fabs(clock_history_margin_level(h, &in, NULL, NULL) - 5000) < 1e-9);
    assert_true(isnan(clock_history_margin_level(h, &out, NULL, NULL)));
    clock_history_destroy(&h);
    free(e);
}

static void test_history(void **state)
{
    (void)state;
    clock_history_t *h = clock_history_new(0, 2);
    clock_node_fit_t f[3];
    memset(f, 0, sizeof f);
    for (int i = 0; i < 3; i++) {
        f[i].node = (uint32_t)(i + 1);
        f[i].ref = 0;
        f[i].aligned = true;
    }
    clock_solve_stats_t st = {.dof = 4, .extra_sigma_ns = 10, .own_sigma_ns = 10};
    assert_true(isnan(clock_history_misfit_rms(h, 1)));
    assert_true(clock_history_extra_var(h) == 0);
    for (int w = 0; w < 10; w++) {
        f[0].misfit_ms_ns2 = 400 + (w % 2 ? 50 : -50); /* a clear 20 ns misfit */
        f[1].misfit_ms_ns2 = (w % 2 ? 300 : -300);     /* noise around zero */
        f[2].misfit_ms_ns2 = 100;
        clock_history_add(h, f, 3, NULL, 0, &st);
    }
    assert_true(fabs(clock_history_misfit_rms(h, 1) - 20) < 1);
    assert_true(clock_history_misfit_rms(h, 2) == 0);
    assert_true(isnan(clock_history_misfit_rms(h, 3))); /* beyond max_nodes */
    assert_int_equal(clock_history_ignored(h), 10);
    assert_true(fabs(clock_history_extra_var(h) - 100) < 1e-9);
    clock_history_destroy(&h);
    assert_null(h);

    /*
     * A first window thrown off by a transient (a node joining mid-window)
     * does not set the floor of the windows after it; a real change of
     * level is followed.
     */
    h = clock_history_new(0, 2);
    st.own_sigma_ns = 1000;
    clock_history_add(h, NULL, 0, NULL, 0, &st);
    st.own_sigma_ns = 10;
    for (int w = 0; w < 3; w++)
        clock_history_add(h, NULL, 0, NULL, 0, &st);
    if (!(fabs(clock_history_extra_var(h) - 100) < 1e-9))
        fail_msg("typical τ² %.1f after an outlier window", clock_history_extra_var(h));
    st.own_sigma_ns = 50;
    for (int w = 0; w < 4; w++)
        clock_history_add(h, NULL, 0, NULL, 0, &st);
    /* 3 windows at 10 ns, 4 at 50 ns (the outlier still left out): their mean. */
    if (!(fabs(clock_history_extra_var(h) - (3 * 100 + 4 * 2500) / 7.0) < 1e-6))
        fail_msg("typical τ² %.1f after a change of level", clock_history_extra_var(h));
    clock_history_destroy(&h);

    /*
     * One loop: most windows' own τ² is 0.  The others count, an outlier
     * among them (τ² a hundred times theirs) does not.
     */
    h = clock_history_new(0, 2);
    for (int w = 0; w < 12; w++) {
        st.own_sigma_ns = w % 3 == 2 ? 20 : 0;
        clock_history_add(h, NULL, 0, NULL, 0, &st);
    }
    st.own_sigma_ns = 200;
    clock_history_add(h, NULL, 0, NULL, 0, &st);
    if (!(fabs(clock_history_extra_var(h) - 4 * 400 / 12.0) < 1e-6))
        fail_msg("typical τ² %.1f where 8 of 12 windows saw none", clock_history_extra_var(h));
    clock_history_destroy(&h);
}

/*
 * Residual tracks of the 28 edges of K8 (21 loops, a loop share of 3/4
 * each): r = a_e + noise, a_e = ±fixed ns per edge from window `from` on
 * (0 before), the noise σ_n new every window; every other window's edges
 * given the other way round, and `doubled` windows twice (each twice in a
 * window, the noise halved: their mean is what the edge saw).  Returns
 * what the history says persists for window `at`, over `span` windows;
 * `bridges`: the first 18 edges are in no loop until the last window.
 */
typedef struct persist_case {
    double fixed, sigma_n;
    int windows, from, at;
    uint32_t span;
    bool suspect, bridges, doubled;
} persist_case_t;

static double persist_of(const persist_case_t *c, uint64_t seed)
{
    clock_history_t *h = clock_history_new(0, 16);
    clock_solve_stats_t st = {.dof = 21};
    clock_edge_fit_t e[56];
    size_t ne = 0;
    for (int w = 0; w < c->windows; w++) {
        ne = 0;
        for (uint32_t a = 0; a < 8; a++)
            for (uint32_t b = a + 1; b < 8; b++) {
                size_t k = ne / (c->doubled ? 2 : 1);
                double fixed = w >= c->from ? (k % 2 ? c->fixed : -c->fixed) : 0;
                double r = fixed + c->sigma_n * gauss(&seed);
                for (int twice = 0; twice < (c->doubled ? 2 : 1); twice++, ne++) {
                    bool flip = (w + twice) % 2;
                    memset(&e[ne], 0, sizeof e[ne]);
                    e[ne].window = (uint64_t)w;
                    e[ne].src = flip ? b : a;
                    e[ne].dst = flip ? a : b;
                    e[ne].residual_ns = flip ? -r : r;
                    e[ne].suspect = c->suspect;
                    e[ne].loop_share = c->bridges && k < 18 ? 0 : 0.75;
                }
            }
        clock_history_add(h, NULL, 0, e, ne, &st);
    }
    for (size_t i = 0; i < ne; i++) {
        e[i].suspect = false;
        e[i].loop_share = 0.75;
        e[i].window = c->at;
    }
    double own[56];
    double v = clock_history_persist_var(h, e, ne, c->span, own);
    /* Each edge's own: its fixed part, over its loop share. */
    for (size_t i = 0; isfinite(v) && c->sigma_n < 1 && i < ne; i++)
        if (!(fabs(own[i] - c->fixed * c->fixed / 0.75) < 0.05 * c->fixed * c->fixed / 0.75 + 1))
            fail_msg("edge %zu: own persistent variance %.1f ns², fixed part %.1f ns", i, own[i],
                     c->fixed);
    clock_history_destroy(&h);
    return v;
}

/*
 * What of the loops' excess persists.  All of it: the edges' fixed parts
 * (28 × 100 ns² over 21 loops).  Residuals three times that size changing
 * every window: little more than the fixed part, far below what the
 * windows' residuals hold (28 × 1000 / 21); changing residuals alone:
 * next to nothing.  An asymmetry that appears is all there once the span
 * has passed it, and a window before it still shows none.  Too few
 * windows, only suspect edges, or tracks only from edges that were in no
 * loop: no answer.
 */
static void test_history_persistent_residuals(void **state)
{
    (void)state;
    double fixed = 28 * 100 / 21.0;
    persist_case_t c = {.fixed = 10, .sigma_n = 0.5, .windows = 40, .at = 39, .span = 17};
    double v = persist_of(&c, 7);
    if (!(v > fixed && v < 1.05 * fixed))
        fail_msg("fixed residuals: %.1f ns² persist, want %.1f", v, fixed);
    c.sigma_n = 30;
    v = persist_of(&c, 7);
    if (!(v > 0.5 * fixed && v < 3 * fixed))
        fail_msg("changing residuals: %.1f ns² persist, fixed part %.1f, all %.1f", v, fixed,
                 28 * 1000 / 21.0);
    assert_true(persist_of(&c, 8) < 3 * fixed);
    c.doubled = true;
    v = persist_of(&c, 9);
    if (!(v > 0.5 * fixed && v < 3 * fixed))
        fail_msg("every edge twice a window: %.1f ns² persist, fixed part %.1f", v, fixed);
    c.doubled = false;
    c.fixed = 0;
    c.span = 40; /* the noise's own share, s²/K, is then well below the fixed part */
    v = persist_of(&c, 7);
    if (!(v < 0.25 * fixed))
        fail_msg("no fixed part: %.1f ns² persist", v);

    persist_case_t step = {.fixed = 20, .sigma_n = 5, .windows = 100, .from = 60, .span = 17};
    double after = 28 * 400 / 21.0;
    step.at = 99; /* the newest window, as a live master asks */
    v = persist_of(&step, 7);
    if (!(v > 0.9 * after && v < 1.5 * after))
        fail_msg("asymmetry from window 60, at 99: %.1f ns², want %.1f", v, after);
    step.at = 30; /* offline, a window long before it */
    v = persist_of(&step, 7);
    if (!(v < 0.1 * after))
        fail_msg("asymmetry from window 60, at 30: %.1f ns², want about 0", v);

    persist_case_t few = {.fixed = 10, .sigma_n = 0.5, .windows = 5, .at = 4, .span = 17};
    assert_true(isnan(persist_of(&few, 7)));
    few.windows = 40;
    few.at = 39;
    few.suspect = true;
    assert_true(isnan(persist_of(&few, 7)));
    few.suspect = false;
    few.bridges = true;
    assert_true(isnan(persist_of(&few, 7)));
}

/* ---- pooling windows ---- */

/*
 * A node (1) against a perfect reference (0): its clock wanders (a random
 * walk of the frequency, W ppb/√s) and may step.  Each 2 s window is
 * "measured" by one edge 1 → 0 that carries the true map at its centre plus
 * Gaussian noise of the σ the edge claims: offset σo, drift σd.
 */
#define PW      40 /* windows */
#define PWIN_NS 2000000000LL

typedef struct ptrack {
    clock_sim_t *clk;
    double step_ns; /* added to the node's clock from window step_at on */
    int step_at;
    double so, sd; /* noise σ of the offset (ns) and drift (ppb) */
    uint64_t seed;
} ptrack_t;

/* True (ref − node) at node reading x, and the node reading at true time t. */
static double ptrue(const ptrack_t *pt, int64_t t, int w, int64_t *x)
{
    int64_t c = clock_sim_apply(pt->clk, t) + (w >= pt->step_at ? (int64_t)pt->step_ns : 0);
    *x = c;
    return (double)(t - c);
}

static clock_edge_fit_t pedge(const ptrack_t *pt, int w, uint64_t *rs)
{
    int64_t t0 = T0 + (int64_t)w * PWIN_NS, tc = t0 + PWIN_NS / 2, t1 = t0 + PWIN_NS;
    int64_t x0, xc, x1;
    double o0 = ptrue(pt, t0, w, &x0), oc = ptrue(pt, tc, w, &xc), o1 = ptrue(pt, t1, w, &x1);
    (void)oc;
    /* The window's least-squares line ≈ the chord; its level at the centre. */
    double D = (o1 - o0) / (double)(x1 - x0) * 1e9;
    double O = 0;
    for (int j = 0; j <= 8; j++) { /* mean of the curve minus the chord slope: the LS level */
        int64_t xj, tj = t0 + PWIN_NS / 8 * j;
        double oj = ptrue(pt, tj, w, &xj);
        O += (oj - D * 1e-9 * (double)(xj - xc)) / 9.0;
    }
    clock_edge_fit_t e;
    memset(&e, 0, sizeof e);
    e.window = w;
    e.src = 1;
    e.dst = 0;
    snprintf(e.estimator, sizeof e.estimator, "svm");
    e.anchor_ns = xc;
    e.offset_ns = O + pt->so * gauss(rs);
    e.drift_ppb = D + pt->sd * gauss(rs);
    e.uncertainty_ns = 3 * sqrt(pt->so * pt->so + pow(pt->sd * 1.0, 2));
    e.drift_unc_ppb = 3 * pt->sd;
    e.n_fwd = e.n_rev = 500;
    e.from_ns = x0;
    e.to_ns = x1;
    e.model_ns = 0;
    e.margin_ns = e.residual_ns = NAN;
    for (int j = 0; j < 3; j++)
        e.misfit_ns[j] = e.misfit_sigma_ns[j] = NAN;
    return e;
}

/* Worst |fit − truth| of node 1's map over window w (five instants). */
static double pnode_error(const ptrack_t *pt, const clock_node_fit_t *f, int w)
{
    double worst = 0;
    for (int j = 0; j <= 4; j++) {
        int64_t x, t = T0 + (int64_t)w * PWIN_NS + PWIN_NS / 4 * j;
        double tr = ptrue(pt, t, w, &x);
        double fit = f->offset_ns + f->drift_ppb * 1e-9 * (double)(x - f->anchor_ns);
        worst = fmax(worst, fabs(fit - tr));
    }
    return worst;
}

typedef struct pres {
    double rms_raw, rms_pooled, covered;
    uint32_t pooled_min, pooled_max;
    double wander;
    double worst_near_step;
} pres_t;

/* The solve of node 1's window w onto node 0, pooled with up to `pool` windows of h. */
static clock_solve_opts_t pwindow_opts(int w, clock_history_t *h, uint32_t pool)
{
    clock_solve_opts_t o;
    clock_solve_opts_default(&o);
    o.ref = 0;
    o.from_ns = T0 + (int64_t)w * PWIN_NS;
    o.to_ns = o.from_ns + PWIN_NS;
    o.at_ns = o.from_ns + PWIN_NS / 2;
    o.history = h;
    o.pool_windows = pool;
    return o;
}

/* Solve every window alone, then (causal: as they come / offline: with all) pooled. */
static void pool_run(ptrack_t *pt, bool causal, uint32_t pool, pres_t *r)
{
    uint64_t rs = pt->seed;
    clock_edge_fit_t e[PW];
    for (int w = 0; w < PW; w++)
        e[w] = pedge(pt, w, &rs);
    clock_history_t *h = clock_history_new(0, 8);
    clock_history_set_track(h, PW + 1);
    clock_node_fit_t *nodes;
    size_t nn;
    char err[BASE_ERRLEN];
    double se_raw = 0, se_pool = 0;
    memset(r, 0, sizeof *r);
    r->pooled_min = UINT32_MAX;
    for (int pass = causal ? 1 : 0; pass < 2; pass++) {
        for (int w = 0; w < PW; w++) {
            clock_solve_opts_t o = pwindow_opts(w, pass == 1 ? h : NULL, pool);
            clock_edge_fit_t ew = e[w];
            clock_solve_stats_t st;
            assert_int_equal(clock_solve(&ew, 1, &o, &nodes, &nn, &st, err), BASE_OK);
            const clock_node_fit_t *f = find_node(nodes, nn, 1);
            assert_non_null(f);
            assert_true(f->aligned);
            assert_true(isfinite(f->own_offset_sd_ns) && f->own_offset_sd_ns > 0);
            if (pass == 0 || causal)
                clock_history_add(h, nodes, nn, &ew, 1, &st);
            if (pass == 1) {
                double er = pnode_error(pt, f, w);
                /* The window's own map, from the fields the solver kept. */
                clock_node_fit_t own = *f;
                own.offset_ns = f->own_offset_ns;
                own.drift_ppb = f->own_drift_ppb;
                double eo = pnode_error(pt, &own, w);
                se_raw += eo * eo;
                se_pool += er * er;
                r->covered += er <= f->uncertainty_ns;
                if (w > 0) {
                    r->pooled_min = f->pooled < r->pooled_min ? f->pooled : r->pooled_min;
                    r->pooled_max = f->pooled > r->pooled_max ? f->pooled : r->pooled_max;
                } else if (causal) {
                    assert_int_equal(f->pooled, 0); /* nothing earlier to pool with */
                }
                if (pt->step_at > 0 && abs(w - pt->step_at) <= 1)
                    r->worst_near_step = fmax(r->worst_near_step, er);
            }
            free(nodes);
        }
    }
    r->rms_raw = sqrt(se_raw / PW);
    r->rms_pooled = sqrt(se_pool / PW);
    r->covered /= PW;
    r->wander = clock_history_wander_ppb(h, 1, 0.1);
    clock_history_destroy(&h);
}

/*
 * A short log (7 windows: the noise model from few of them, and the bound
 * made for a larger wander too) whose middle window is 5 µs off: the
 * windows on both sides outvote it, the map comes from them, and its bound
 * holds (that bound, made without the window's own line, once read a line
 * it had not been given).
 */
static void test_pooling_short_outvote(void **state)
{
    (void)state;
    enum { NW = 7 };
    clock_sim_params_t p = {.t0_ns = T0 - 10000000000LL,
                            .offset_ns = 2.5e5,
                            .drift_ppm = 37,
                            .wander_ppb = 2,
                            .seed = 17};
    ptrack_t pt = {clock_sim_new(&p), 0, -1, 8, 20, 404};
    uint64_t rs = pt.seed;
    clock_edge_fit_t e[NW];
    for (int w = 0; w < NW; w++)
        e[w] = pedge(&pt, w, &rs);
    e[3].offset_ns += 5000;
    clock_history_t *h = clock_history_new(0, 8);
    clock_history_set_track(h, NW + 1);
    char err[BASE_ERRLEN];
    for (int pass = 0; pass < 2; pass++)
        for (int w = 0; w < NW; w++) {
            clock_solve_opts_t o = pwindow_opts(w, pass == 1 ? h : NULL, 8);
            clock_edge_fit_t ew = e[w];
            clock_solve_stats_t st;
            clock_node_fit_t *nodes;
            size_t nn;
            assert_int_equal(clock_solve(&ew, 1, &o, &nodes, &nn, &st, err), BASE_OK);
            const clock_node_fit_t *f = find_node(nodes, nn, 1);
            assert_non_null(f);
            if (pass == 0)
                clock_history_add(h, nodes, nn, &ew, 1, &st);
            else if (w == 3) {
                double er = pnode_error(&pt, f, w);
                if (!(f->pooled == 6 && er < 100 && er <= f->uncertainty_ns))
                    fail_msg("outvoted window: %.1f ns off at ±%.1f, %u pooled", er,
                             f->uncertainty_ns, f->pooled);
            }
            free(nodes);
        }
    clock_history_destroy(&h);
    clock_sim_destroy(&pt.clk);
}

static void test_pooling(void **state)
{
    (void)state;
    clock_sim_params_t p = {.t0_ns = T0 - 10000000000LL,
                            .offset_ns = 2.5e5,
                            .drift_ppm = 37,
                            .wander_ppb = 2,
                            .seed = 11};
    ptrack_t pt = {clock_sim_new(&p), 0, -1, 8, 20, 101};
    pres_t r;

    /* Noisy windows, slow wander: pooling pins the slope down over several windows. */
    pool_run(&pt, false, 8, &r);
    if (!(r.rms_pooled < 0.6 * r.rms_raw && r.covered >= 0.9 && r.pooled_min >= 4))
        fail_msg("offline: rms %.1f pooled vs %.1f alone, coverage %.2f, pooled %u..%u",
                 r.rms_pooled, r.rms_raw, r.covered, r.pooled_min, r.pooled_max);
    assert_true(r.pooled_max <= 16);
    /* Causal (a live master): earlier windows only, still better than alone. */
    pool_run(&pt, true, 8, &r);
    if (!(r.rms_pooled < 0.85 * r.rms_raw && r.covered >= 0.9 && r.pooled_max <= 8))
        fail_msg("causal: rms %.1f pooled vs %.1f alone, coverage %.2f, pooled ≤ %u", r.rms_pooled,
                 r.rms_raw, r.covered, r.pooled_max);
    /* Off: nothing pooled, the window's own map. */
    pool_run(&pt, false, 0, &r);
    assert_int_equal(r.pooled_max, 0);
    assert_true(fabs(r.rms_pooled - r.rms_raw) < 1e-6);
    clock_sim_destroy(&pt.clk);

    /* The wander is estimated from the windows: fast wander, precise windows. */
    p.wander_ppb = 20;
    p.seed = 12;
    pt = (ptrack_t){clock_sim_new(&p), 0, -1, 1, 2, 202};
    pool_run(&pt, false, 8, &r);
    if (!(r.wander > 10 && r.wander < 40))
        fail_msg("wander %.1f ppb/√s, truth 20", r.wander);
    /* ...and pooling then leans on the window itself: no worse than alone. */
    if (!(r.rms_pooled < 1.1 * r.rms_raw && r.covered >= 0.9))
        fail_msg("fast wander: rms %.2f pooled vs %.2f alone, coverage %.2f", r.rms_pooled,
                 r.rms_raw, r.covered);
    clock_sim_destroy(&pt.clk);

    /* A 20 µs clock step between windows 19 and 20: nothing is pooled across it. */
    p.wander_ppb = 2;
    p.seed = 13;
    pt = (ptrack_t){clock_sim_new(&p), 20000, 20, 8, 20, 303};
    pool_run(&pt, false, 8, &r);
    if (!(r.worst_near_step < 60 && r.rms_pooled < r.rms_raw))
        fail_msg("step: worst %.1f ns next to it, rms %.1f pooled vs %.1f alone", r.worst_near_step,
                 r.rms_pooled, r.rms_raw);
    pool_run(&pt, true, 8, &r);
    if (!(r.worst_near_step < 100))
        fail_msg("step, causal: worst %.1f ns next to it", r.worst_near_step);
    clock_sim_destroy(&pt.clk);
}

static void test_history_track(void **state)
{
    (void)state;
    clock_history_t *h = clock_history_new(30, 4);
    clock_node_fit_t f;
    memset(&f, 0, sizeof f);
    f.node = 3;
    f.ref = 0;
    f.aligned = true;
    f.own_offset_sd_ns = 5;
    f.own_drift_sd_ppb = 5;
    f.misfit_ms_ns2 = NAN;
    for (int w = 0; w < 100; w++) {
        f.window = w;
        f.anchor_ns = T0 + (int64_t)w * PWIN_NS;
        f.from_ns = f.anchor_ns - PWIN_NS / 2;
        f.to_ns = f.anchor_ns + PWIN_NS / 2;
        f.own_offset_ns = 1000 + 500.0 * w; /* 250 ppb over 2 s windows */
        f.own_drift_ppb = 250;
        clock_history_add(h, &f, 1, NULL, 0, NULL);
    }
    assert_int_equal(clock_history_track_len(h, 3), CLOCK_HISTORY_TRACK); /* bounded */
    /* The same window again replaces its entry. */
    clock_history_add(h, &f, 1, NULL, 0, NULL);
    assert_int_equal(clock_history_track_len(h, 3), CLOCK_HISTORY_TRACK);
    /* A straight track: the wander stays at its floor. */
    double wd = clock_history_wander_ppb(h, 3, 0.5);
    assert_true(wd >= 0.5 && wd < 1.0);
    clock_history_set_track(h, 10);
    assert_int_equal(clock_history_track_len(h, 3), 10);
    /* Fits that carry no own map (decoded from JSON, say) are not tracked. */
    f.window = 100;
    f.own_offset_sd_ns = NAN;
    clock_history_add(h, &f, 1, NULL, 0, NULL);
    assert_int_equal(clock_history_track_len(h, 3), 10);
    /* Another reference: the old maps say nothing about the new one. */
    f.own_offset_sd_ns = 5;
    f.ref = 7;
    f.window = 101;
    clock_history_add(h, &f, 1, NULL, 0, NULL);
    assert_int_equal(clock_history_track_len(h, 3), 1);
    assert_true(isnan(clock_history_wander_ppb(h, 3, 0.5))); /* too few windows */
    assert_int_equal(clock_history_track_len(h, 9), 0);
    /*
     * Node 3 is the reference for a while (7 gone), then 7 is back: its maps
     * onto 7 from before must not pool with those after, across a time no
     * map watched its clock (7 may have restarted with its clock stepped).
     */
    for (int w = 102; w < 106; w++) {
        f.window = w;
        clock_history_add(h, &f, 1, NULL, 0, NULL);
    }
    assert_int_equal(clock_history_track_len(h, 3), 5);
    clock_node_fit_t self;
    clock_node_fit_init(&self, 106, 3, 3);
    self.aligned = true;
    clock_history_add(h, &self, 1, NULL, 0, NULL);
    assert_int_equal(clock_history_track_len(h, 3), 0);
    f.window = 107;
    clock_history_add(h, &f, 1, NULL, 0, NULL);
    assert_int_equal(clock_history_track_len(h, 3), 1);
    clock_history_destroy(&h);
}

/* ---- conversion ---- */

static clock_node_fit_t window_fit(int64_t w, int64_t from, double off, double drift, double wobble)
{
    clock_node_fit_t f;
    memset(&f, 0, sizeof f);
    f.window = w;
    f.node = 5;
    f.ref = 0;
    f.from_ns = from;
    f.to_ns = from + 2000000000LL;
    f.anchor_ns = from + 1000000000LL;
    f.offset_ns = off + wobble;
    f.drift_ppb = drift;
    f.uncertainty_ns = 20;
    f.aligned = true;
    return f;
}

static void test_conversion(void **state)
{
    (void)state;
    clock_conv_t *c = clock_conv_new(NULL);
    char err[BASE_ERRLEN];
    /* Windows 0..4 of node 5, drift 300 ppb, maps that disagree by tens of ns. */
    double wob[5] = {0, 35, -20, 10, -40};
    for (int w = 0; w < 5; w++) {
        if (w == 3)
            continue; /* window 3 unaligned: a gap */
        int64_t from = T0 + (int64_t)w * 2000000000LL;
        double off = -123456.0 + 300e-9 * (double)(from + 1000000000LL - T0);
        clock_node_fit_t f = window_fit(w, from, off, 300, wob[w]);
        assert_int_equal(clock_conv_add_fit(c, &f, err), BASE_OK);
    }
    clock_node_fit_t un = window_fit(3, T0 + 6000000000LL, 0, 0, 0);
    un.aligned = false;
    assert_int_equal(clock_conv_add_fit(c, &un, err), BASE_OK);
    /* Trace clock (MONOTONIC, ~1e12) → probe clock: pairs every 100 ms, rate 1 + 2e-6. */
    int64_t m0 = 1000000000000LL;
    for (int i = 0; i <= 100; i++) {
        int64_t m = m0 + (int64_t)i * 100000000LL;
        int64_t p = T0 + (int64_t)llround((double)(m - m0) * (1 + 2e-6)) + (i % 3) * 7;
        assert_int_equal(
            clock_conv_add_pair(c, 5, CLOCK_DOMAIN_TRACE, CLOCK_DOMAIN_PROBE, m, p, err), BASE_OK);
    }
    /* GPU 0 → trace, chained. */
    for (int i = 0; i <= 20; i++) {
        int64_t g = 5000000000LL + (int64_t)i * 500000000LL;
        int64_t m = m0 + (int64_t)i * 500000000LL + 1234;
        assert_int_equal(
            clock_conv_add_pair(c, 5, CLOCK_DOMAIN_GPU0, CLOCK_DOMAIN_TRACE, g, m, err), BASE_OK);
    }

    /* Monotonic and continuous over the whole span, window boundaries included. */
    clock_conv_result_t prev, r;
    assert_int_equal(clock_conv_to_global(c, 5, CLOCK_DOMAIN_PROBE, T0, &prev, err), BASE_OK);
    for (int64_t x = T0 + 999983; x < T0 + 10000000000LL; x += 999983) {
        assert_int_equal(clock_conv_to_global(c, 5, CLOCK_DOMAIN_PROBE, x, &r, err), BASE_OK);
        assert_true(r.t >= prev.t);
        double step = (double)(r.t - prev.t) - 999983.0;
        if (fabs(step) > 5)
            fail_msg("jump of %.1f ns near %lld", step, (long long)(x - T0));
        prev = r;
    }
    /* Fine-grained monotonicity right at a boundary (between windows 0 and 1). */
    assert_int_equal(clock_conv_to_global(c, 5, CLOCK_DOMAIN_PROBE, T0 + 1999999990LL, &prev, err),
                     BASE_OK);
    for (int64_t x = T0 + 1999999991LL; x < T0 + 2000000010LL; x++) {
        assert_int_equal(clock_conv_to_global(c, 5, CLOCK_DOMAIN_PROBE, x, &r, err), BASE_OK);
        assert_true(r.t >= prev.t && r.t <= prev.t + 2);
        prev = r;
    }
    /* At a window centre the blend is exactly that window's map. */
    assert_int_equal(clock_conv_to_global(c, 5, CLOCK_DOMAIN_PROBE, T0 + 3000000000LL, &r, err),
                     BASE_OK);
    double off1 = -123456.0 + 300e-9 * 3e9 + 35;
    assert_true(llabs(r.t - (T0 + 3000000000LL + (int64_t)llround(off1))) <= 1);
    assert_int_equal(r.flags, 0);
    /* Across the unaligned window 3: flagged; beyond the last fit: extrapolated. */
    assert_int_equal(clock_conv_to_global(c, 5, CLOCK_DOMAIN_PROBE, T0 + 7000000000LL, &r, err),
                     BASE_OK);
    assert_true(r.flags & CLOCK_CONV_GAP);
    assert_int_equal(clock_conv_to_global(c, 5, CLOCK_DOMAIN_PROBE, T0 + 11000000000LL, &r, err),
                     BASE_OK);
    assert_true(r.flags & CLOCK_CONV_EXTRAPOLATED);

    /* Invertible, in every domain. */
    uint32_t doms[3] = {CLOCK_DOMAIN_PROBE, CLOCK_DOMAIN_TRACE, CLOCK_DOMAIN_GPU0};
    int64_t base[3] = {T0, m0, 5000000000LL};
    for (int d = 0; d < 3; d++) {
        for (int64_t k = 0; k < 9000000000LL; k += 123456789) {
            int64_t local = base[d] + k;
            clock_conv_result_t g, back;
            assert_int_equal(clock_conv_to_global(c, 5, doms[d], local, &g, err), BASE_OK);
            assert_int_equal(clock_conv_from_global(c, 5, doms[d], g.t, &back, err), BASE_OK);
            if (llabs(back.t - local) > 2)
                fail_msg("domain %u: %lld -> %lld -> %lld", doms[d], (long long)local,
                         (long long)g.t, (long long)back.t);
        }
    }
    /* Trace time through the chain equals probe time through the maps. */
    clock_conv_result_t viat, viap;
    int64_t m = m0 + 2500000000LL;
    assert_int_equal(clock_conv_to_global(c, 5, CLOCK_DOMAIN_TRACE, m, &viat, err), BASE_OK);
    int64_t p = T0 + (int64_t)llround(2500000000.0 * (1 + 2e-6)) + (25 % 3) * 7;
    assert_int_equal(clock_conv_to_global(c, 5, CLOCK_DOMAIN_PROBE, p, &viap, err), BASE_OK);
    assert_true(llabs(viat.t - viap.t) <= 1);
    /* The raw clock: the same trace time through the pairs alone lands on p. */
    clock_conv_result_t raw;
    assert_int_equal(clock_conv_to_probe(c, 5, CLOCK_DOMAIN_TRACE, m, &raw, err), BASE_OK);
    assert_true(llabs(raw.t - p) <= 1);
    assert_int_equal(clock_conv_to_probe(c, 5, CLOCK_DOMAIN_PROBE, p, &raw, err), BASE_OK);
    assert_true(raw.t == p);
    assert_int_equal(clock_conv_to_probe(c, 6, CLOCK_DOMAIN_TRACE, m, &raw, err), BASE_ERR);

    /* Refusals. */
    assert_int_equal(clock_conv_to_global(c, 6, CLOCK_DOMAIN_PROBE, T0, &r, err), BASE_ERR);
    assert_int_equal(clock_conv_to_global(c, 5, 99, T0, &r, err), BASE_ERR);
    assert_int_equal(clock_conv_add_pair(c, 5, CLOCK_DOMAIN_TRACE, CLOCK_DOMAIN_PROBE,
                                         m0 + 50000000LL, T0 - 5, err),
                     BASE_ERR); /* not increasing */
    assert_int_equal(clock_conv_add_pair(c, 5, CLOCK_DOMAIN_TRACE, CLOCK_DOMAIN_GPU0, m0, T0, err),
                     BASE_ERR); /* a different parent */
    assert_int_equal(clock_conv_add_pair(c, 5, CLOCK_DOMAIN_PROBE, CLOCK_DOMAIN_TRACE, 1, 2, err),
                     BASE_ERR); /* the probe clock is the root */
    assert_int_equal(clock_conv_add_pair(c, 5, 40, 41, 1, 2, err), BASE_OK);
    assert_int_equal(clock_conv_add_pair(c, 5, 41, 40, 1, 2, err), BASE_ERR); /* a loop */
    clock_conv_stats_t st;
    clock_conv_get_stats(c, &st);
    /* A pair held already (a sender re-sends its latest) is no news and no error. */
    uint64_t held = st.pairs;
    assert_int_equal(clock_conv_add_pair(c, 5, 40, 41, 1, 2, err), BASE_OK);
    assert_int_equal(clock_conv_add_pair(c, 5, 40, 41, 1, 3, err), BASE_ERR); /* not the same */
    clock_conv_get_stats(c, &st);
    assert_int_equal(st.pairs, held);
    assert_int_equal(st.pairs_rejected, 5);
    assert_int_equal(st.fits, 4);
    assert_int_equal(st.fits_unaligned, 1);
    /* A map refused (non-finite) that names another reference clears nothing. */
    clock_node_fit_t bad = window_fit(7, T0 + 14000000000LL, 0, 0, 0);
    bad.ref = 9;
    bad.offset_ns = NAN;
    assert_int_equal(clock_conv_add_fit(c, &bad, err), BASE_ERR);
    assert_int_equal(clock_conv_to_global(c, 5, CLOCK_DOMAIN_PROBE, T0 + 1000000000LL, &r, err),
                     BASE_OK);
    clock_conv_get_stats(c, &st);
    assert_int_equal(st.ref_changes, 0);
    assert_int_equal(st.fits_rejected, 1);

    /* The reference converts to itself without fits of its own. */
    assert_int_equal(clock_conv_to_global(c, 0, CLOCK_DOMAIN_PROBE, T0 + 5, &r, err), BASE_OK);
    assert_true(r.t == T0 + 5);
    clock_conv_destroy(&c);
    assert_null(c);
}

/*
 * A pair refused when a series is full costs none of the pairs held, and a
 * chain longer than 64 domains, where the limits allow it, converts both ways.
 */
static void test_conversion_full_pairs(void **state)
{
    (void)state;
    clock_conv_limits_t lim;
    clock_conv_limits_default(&lim);
    lim.max_pairs = 8;
    clock_conv_t *c = clock_conv_new(&lim);
    char err[BASE_ERRLEN];
    for (int64_t i = 0; i < 8; i++)
        assert_int_equal(clock_conv_add_pair(c, 1, CLOCK_DOMAIN_TRACE, CLOCK_DOMAIN_PROBE,
                                             1000 + i * 100, T0 + i * 100, err),
                         BASE_OK);
    assert_int_equal(
        clock_conv_add_pair(c, 1, CLOCK_DOMAIN_TRACE, CLOCK_DOMAIN_PROBE, 2000, T0, err), BASE_ERR);
    clock_conv_stats_t st;
    clock_conv_get_stats(c, &st);
    assert_int_equal(st.pairs_dropped, 0);
    assert_int_equal(st.pairs_rejected, 1);
    clock_conv_result_t r;
    assert_int_equal(clock_conv_to_probe(c, 1, CLOCK_DOMAIN_TRACE, 1050, &r, err), BASE_OK);
    assert_false(r.flags & CLOCK_CONV_EXTRAPOLATED);
    assert_true(r.t == T0 + 50);
    clock_conv_destroy(&c);

    /* A chain of 70 domains where the limits allow 128 converts both ways. */
    lim.max_domains = 128;
    c = clock_conv_new(&lim);
    for (uint32_t d = 0; d < 70; d++)
        for (int64_t k = 0; k < 3; k++)
            assert_int_equal(
                clock_conv_add_pair(c, 5, 100 + d, d == 69 ? CLOCK_DOMAIN_PROBE : 101 + d,
                                    T0 + k * 1000000000LL, T0 + k * 1000000000LL + 7, err),
                BASE_OK);
    clock_node_fit_t f = window_fit(0, T0 + 400000000LL, 100, 0, 0);
    assert_int_equal(clock_conv_add_fit(c, &f, err), BASE_OK);
    assert_int_equal(clock_conv_to_global(c, 5, 100, T0 + 1500000000LL, &r, err), BASE_OK);
    int64_t g = r.t;
    assert_int_equal(clock_conv_from_global(c, 5, 100, g, &r, err), BASE_OK);
    assert_true(llabs(r.t - (T0 + 1500000000LL)) <= 1);
    clock_conv_destroy(&c);
}

/*
 * Window maps a clock step apart (node 5's clock jumped by S between
 * windows 1 and 2, at their boundary or inside window 2, unaligned).
 * Blended, every time between the two maps' centres came out up to S/2
 * off at the maps' ±20 ns (0.4998 ms off at ±20 for S = 1 ms a
 * microsecond before window 1's end).  Each map now holds over its own window's
 * readings; readings between the two windows are flagged CLOCK_CONV_STEP
 * and uncertain by the step; the whole stays monotonic where the clock
 * stepped forward, and invertible over the windows' readings.
 */
static void test_conversion_step(void **state)
{
    (void)state;
    const int64_t W = 2000000000LL;
    const double corr = -123456.0; /* global − local before the step */
    const int64_t steps[] = {1000000, -1000000, 1000000, 300000000};
    for (int c = 0; c < 4; c++) {
        int64_t S = steps[c];
        bool inside = c == 2; /* the step in window 2, which is unaligned */
        clock_conv_t *cv = clock_conv_new(NULL);
        char err[BASE_ERRLEN];
        clock_node_fit_t f[5];
        for (int w = 0; w < 5; w++) {
            /* Window w covers global [T0 + w·W, T0 + (w+1)·W); after the step local = global − corr
             * + S. */
            double k = w < 2 ? corr : corr - (double)S;
            f[w] = window_fit(w, T0 + (int64_t)w * W - (int64_t)k, k, 0, 0);
            f[w].aligned = !(inside && w == 2);
            assert_int_equal(clock_conv_add_fit(cv, &f[w], err), BASE_OK);
        }
        const clock_node_fit_t *a = &f[1], *b = inside ? &f[3] : &f[2];
        clock_conv_result_t r;
        /*
         * Each window's readings with its own map, at its own uncertainty (a
         * clock stepped back reads the windows' overlap twice: the earlier map).
         */
        int64_t xs[2] = {a->to_ns - 1000, (b->from_ns > a->to_ns ? b->from_ns : a->to_ns) + 1000};
        for (int i = 0; i < 2; i++) {
            const clock_node_fit_t *g = i ? b : a;
            assert_int_equal(clock_conv_to_global(cv, 5, CLOCK_DOMAIN_PROBE, xs[i], &r, err),
                             BASE_OK);
            int64_t want = xs[i] + (int64_t)llround(g->offset_ns);
            if (llabs(r.t - want) > 1 || r.uncertainty_ns > 21 || (r.flags & CLOCK_CONV_STEP))
                fail_msg("step %lld%s: in window %lld, 1 us from its %s: %+lld ns off at ±%.1f",
                         (long long)S, inside ? " inside" : "", (long long)g->window,
                         i ? "start" : "end", (long long)(r.t - want), r.uncertainty_ns);
            clock_conv_result_t back;
            assert_int_equal(clock_conv_from_global(cv, 5, CLOCK_DOMAIN_PROBE, r.t, &back, err),
                             BASE_OK);
            if (llabs(back.t - xs[i]) > 2)
                fail_msg("step %lld: %lld -> %lld -> %lld", (long long)S, (long long)xs[i],
                         (long long)r.t, (long long)back.t);
        }
        /* Between the two windows' readings: flagged, uncertain by the step. */
        if (a->to_ns + 1 < b->from_ns) {
            int64_t mid = a->to_ns + (b->from_ns - a->to_ns) / 2;
            assert_int_equal(clock_conv_to_global(cv, 5, CLOCK_DOMAIN_PROBE, mid, &r, err),
                             BASE_OK);
            assert_true(r.flags & CLOCK_CONV_STEP);
            assert_true(r.uncertainty_ns >= (double)llabs(S));
        }
        /* Monotonic over the whole span where the clock stepped forward. */
        if (S > 0) {
            clock_conv_result_t prev;
            int64_t x0 = f[0].from_ns, x1 = f[4].to_ns, dx = (x1 - x0) / 20011;
            assert_int_equal(clock_conv_to_global(cv, 5, CLOCK_DOMAIN_PROBE, x0, &prev, err),
                             BASE_OK);
            for (int64_t x = x0 + dx; x < x1; x += dx) {
                assert_int_equal(clock_conv_to_global(cv, 5, CLOCK_DOMAIN_PROBE, x, &r, err),
                                 BASE_OK);
                if (r.t < prev.t)
                    fail_msg("step %lld: back by %lld ns at %lld", (long long)S,
                             (long long)(prev.t - r.t), (long long)(x - x0));
                prev = r;
            }
        }
        /* Times far off either way come back without overflow. */
        clock_conv_result_t far;
        assert_int_equal(clock_conv_from_global(cv, 5, CLOCK_DOMAIN_PROBE, INT64_MAX, &far, err),
                         BASE_OK);
        assert_int_equal(clock_conv_from_global(cv, 5, CLOCK_DOMAIN_PROBE, INT64_MIN, &far, err),
                         BASE_OK);
        clock_conv_destroy(&cv);
    }
    /* A clock stepped forward by 116 days: the inverse brackets it all the same. */
    {
        clock_conv_t *cv = clock_conv_new(NULL);
        char err[BASE_ERRLEN];
        const double big = 1e16;
        for (int w = 0; w < 4; w++) {
            double k = w < 2 ? corr : corr - big;
            clock_node_fit_t f = window_fit(w, T0 + (int64_t)w * W - (int64_t)k, k, 0, 0);
            assert_int_equal(clock_conv_add_fit(cv, &f, err), BASE_OK);
        }
        /* Before the step and after it. */
        const int64_t xs[2] = {T0 + W - (int64_t)corr + 1000000000LL,
                               T0 + 2 * W - (int64_t)(corr - big) + 1000000000LL};
        for (int i = 0; i < 2; i++) {
            clock_conv_result_t g, back;
            assert_int_equal(clock_conv_to_global(cv, 5, CLOCK_DOMAIN_PROBE, xs[i], &g, err),
                             BASE_OK);
            assert_int_equal(clock_conv_from_global(cv, 5, CLOCK_DOMAIN_PROBE, g.t, &back, err),
                             BASE_OK);
            if (llabs(back.t - xs[i]) > 4)
                fail_msg("a 1e16 ns step: %lld -> %lld -> %lld", (long long)xs[i], (long long)g.t,
                         (long long)back.t);
        }
        clock_conv_destroy(&cv);
    }
    /*
     * Maps whose rates differ by up to 500 ppm but that meet at their
     * boundary are no step: blended, continuous and monotonic, moving at
     * 1 ± 2·D (a first version asked at each time, and switched between
     * blending and not inside the span: back by 2-4 µs).
     */
    for (int c = 0; c < 3; c++) {
        const double dppm[] = {25, 200, 500};
        clock_conv_t *cv = clock_conv_new(NULL);
        char err[BASE_ERRLEN];
        double k = corr;
        for (int w = 0; w < 4; w++) {
            double drift = w < 2 ? 0 : dppm[c] * 1000;
            int64_t from = T0 + (int64_t)w * W - (int64_t)k;
            /* The map's correction at its window's start is where the last one ended. */
            clock_node_fit_t f = window_fit(w, from, k + drift * 1e-9 * 1e9, drift, 0);
            f.to_ns = from + W - (int64_t)(drift * 1e-9 * (double)W);
            assert_int_equal(clock_conv_add_fit(cv, &f, err), BASE_OK);
            k += drift * 1e-9 * (double)W;
        }
        clock_conv_result_t prev, r;
        int64_t x0 = T0 + W, x1 = T0 + 3 * W, dx = 999983;
        assert_int_equal(clock_conv_to_global(cv, 5, CLOCK_DOMAIN_PROBE, x0, &prev, err), BASE_OK);
        for (int64_t x = x0 + dx; x < x1; x += dx) {
            assert_int_equal(clock_conv_to_global(cv, 5, CLOCK_DOMAIN_PROBE, x, &r, err), BASE_OK);
            double jump = (double)(r.t - prev.t) - (double)dx;
            /* Blending lines of rates D apart moves at 1 ± D at most. */
            if ((r.flags & CLOCK_CONV_STEP) || r.t < prev.t ||
                fabs(jump) > 2e-6 * dppm[c] * (double)dx + 5)
                fail_msg("%.0f ppm: %+.1f ns beyond the clock at %lld (flags %u)", dppm[c], jump,
                         (long long)(x - x0), r.flags);
            prev = r;
        }
        clock_conv_destroy(&cv);
    }
}

/*
 * Two maps further apart than half the distance between their centres (and
 * so unsure, ±60 ms, that no step is taken between them) have their
 * centres' images joined instead of blended.  Whether they are is asked
 * once for the pair: asked at each time, maps 1000 ppm apart in rate crossed
 * the bar half a second past where their windows meet, and the result jumped
 * there by 0.375 ms.  Maps whose centres' images go back (±150 ms, 2.5 s
 * apart) came out decreasing, unflagged: they are a step.
 */
static void test_conversion_blend_or_join(void **state)
{
    (void)state;
    const int64_t W = INT64_C(2000000000);
    const int64_t dx = 1000000, c0 = T0 + W / 2, c1 = c0 + W;
    for (int c = 0; c < 3; c++) {
        clock_conv_t *cv = clock_conv_new(NULL);
        char err[BASE_ERRLEN];
        clock_node_fit_t f[2];
        /* Apart by 1 s − 0.5 ms (blended), 1 s + 0.5 ms (joined) or −2.5 s where the windows meet.
         */
        const double apart = c == 2 ? -2.5e9 : 1e9 + (c == 0 ? -5e5 : 5e5);
        const double drift = c == 2 ? 0 : 1e6;
        f[0] = window_fit(0, T0, 0, 0, 0);
        f[1] = window_fit(1, T0 + W, apart + 1e-9 * drift * 1e9, drift, 0);
        for (int w = 0; w < 2; w++) {
            f[w].uncertainty_ns = c == 2 ? 1.5e8 : 6e7;
            assert_int_equal(clock_conv_add_fit(cv, &f[w], err), BASE_OK);
        }
        clock_conv_result_t r, prev;
        for (int64_t x = c0; x <= c1; x += dx) {
            assert_int_equal(clock_conv_to_global(cv, 5, CLOCK_DOMAIN_PROBE, x, &r, err), BASE_OK);
            if (c == 2) {
                /* Each map over its own window's readings; the later ones flagged. */
                const clock_node_fit_t *g = x <= f[0].to_ns ? &f[0] : &f[1];
                double want = g->offset_ns + 1e-9 * g->drift_ppb * (double)(x - g->anchor_ns);
                assert_true(fabs((double)(r.t - x) - want) <= 2);
                assert_true(x == c1 || ((r.flags & CLOCK_CONV_STEP) != 0) == (x > f[0].to_ns));
                continue;
            }
            assert_false(r.flags & CLOCK_CONV_STEP);
            double w = (double)(x - c0) / (double)W;
            double k0 = 0, k1 = f[1].offset_ns + 1e-9 * drift * (double)(x - c1);
            /* Global − local: the blend's, or the line between the centres' images. */
            double want = c == 0 ? (1 - w) * k0 + w * k1
                                 : (double)(c0 - x) + w * ((double)W + f[1].offset_ns);
            if (fabs((double)(r.t - x) - want) > 2)
                fail_msg("apart %.1f ms, %lld ns past the centre: %+.0f ns from the %s",
                         1e-6 * apart, (long long)(x - c0), (double)(r.t - x) - want,
                         c == 0 ? "blend" : "join");
            clock_conv_result_t back;
            assert_int_equal(clock_conv_from_global(cv, 5, CLOCK_DOMAIN_PROBE, r.t, &back, err),
                             BASE_OK);
            assert_true(llabs(back.t - x) <= 2);
            if (x > c0) {
                double step = (double)(r.t - prev.t);
                if (step < 0 || fabs(step - (double)dx) > 0.51 * (double)dx + 2)
                    fail_msg("apart %.1f ms: %+.0f ns over %lld ns at %lld ns past the centre",
                             1e-6 * apart, step, (long long)dx, (long long)(x - c0));
            }
            prev = r;
        }
        clock_conv_destroy(&cv);
    }
}

/*
 * Random sequences of window maps: small changes between windows, now and
 * then a step (±1 µs to ±1 s), a gap of unaligned windows, a rate that
 * changes, maps sure to a ns or unsure by 100 ms.  Wherever a time and the
 * next one a step dx on are both unflagged (no step, no gap), global time
 * goes on by dx within the maps' rates and the blend's slack; unflagged
 * times never go back (what the reference read twice is flagged); each
 * comes back to the ns, or to the other reading of a time read twice.
 */
static void test_conversion_random_maps(void **state)
{
    (void)state;
    const int64_t W = INT64_C(2000000000), dx = 999983;
    uint64_t seed = 0x5eed;
    for (int run = 0; run < 300; run++) {
        clock_conv_t *cv = clock_conv_new(NULL);
        char err[BASE_ERRLEN];
        enum { NW = 8 };
        clock_node_fit_t f[NW];
        double off = 1e6 * (urand(&seed) - 0.5), drift = 2e5 * (urand(&seed) - 0.5);
        int64_t local = T0;
        for (int w = 0; w < NW; w++) {
            double u = urand(&seed);
            if (u < 0.1)
                off += (urand(&seed) < 0.5 ? -1 : 1) * pow(10, 3 + 6 * urand(&seed));
            else
                off += 100 * (urand(&seed) - 0.5);
            if (urand(&seed) < 0.2)
                drift += 2e4 * (urand(&seed) - 0.5);
            f[w] = window_fit(w, local, off, drift, 0);
            if (run % 2) { /* windows of other lengths, apart or overlapping */
                f[w].to_ns = f[w].from_ns + (int64_t)(W * (0.25 + 0.75 * urand(&seed)));
                f[w].anchor_ns = f[w].from_ns + (f[w].to_ns - f[w].from_ns) / 2;
            }
            f[w].uncertainty_ns = pow(10, 8 * urand(&seed));
            f[w].aligned = urand(&seed) > 0.1;
            local += run % 2 ? (int64_t)(W * (0.9 + 0.2 * urand(&seed))) : W;
            assert_int_equal(clock_conv_add_fit(cv, &f[w], err), BASE_OK);
        }
        clock_conv_result_t prev = {0, 0, CLOCK_CONV_STEP}, r, back;
        int64_t top = 0;
        bool have_top = false;
        for (int64_t x = T0 - W / 2; x < local + W / 2; x += dx) {
            assert_int_equal(clock_conv_to_global(cv, 5, CLOCK_DOMAIN_PROBE, x, &r, err), BASE_OK);
            unsigned odd = (prev.flags | r.flags) & (CLOCK_CONV_STEP | CLOCK_CONV_GAP);
            /*
             * Across a step: where the reference's clock jumped on, global
             * time does too; where it stepped back, what it read twice is
             * flagged, and dx may be past it.
             */
            bool jump = false;
            for (int w = 0, a = -1; w < NW; w++) {
                if (!f[w].aligned)
                    continue;
                /* Between their centres: parted, or joined centre to centre. */
                if (a >= 0 && fabs(f[w].offset_ns - f[a].offset_ns) > 1e4)
                    jump |= x > f[a].anchor_ns && x - dx <= f[w].anchor_ns;
                a = w;
            }
            /* What the reference read twice is flagged: unflagged times never go back. */
            if (!(r.flags & CLOCK_CONV_STEP)) {
                if (have_top && r.t < top - 2)
                    fail_msg("run %d: %lld ns into the log, %lld ns before a time already "
                             "converted, unflagged",
                             run, (long long)(x - T0), (long long)(top - r.t));
                top = have_top && top > r.t ? top : r.t;
                have_top = true;
            }
            if (!odd) {
                double g = (double)(r.t - prev.t);
                if (g < 0 || (!jump && fabs(g - (double)dx) > 0.51 * (double)dx + 2))
                    fail_msg("run %d: %+.0f ns over %lld ns, %lld ns into the log (flags %#x)", run,
                             g, (long long)dx, (long long)(x - T0), r.flags);
            }
            if (!(r.flags & (CLOCK_CONV_STEP | CLOCK_CONV_GAP))) {
                assert_int_equal(clock_conv_from_global(cv, 5, CLOCK_DOMAIN_PROBE, r.t, &back, err),
                                 BASE_OK);
                /*
                 * Back to the ns, or, where the reference read that time
                 * twice (its clock stepped back), to the other reading,
                 * flagged: either is a time that converts to it.
                 */
                clock_conv_result_t again;
                assert_int_equal(
                    clock_conv_to_global(cv, 5, CLOCK_DOMAIN_PROBE, back.t, &again, err), BASE_OK);
                if (llabs(again.t - r.t) > 2 ||
                    (llabs(back.t - x) > 2 && !(back.flags & CLOCK_CONV_STEP)))
                    fail_msg("run %d: %lld ns into the log came back %lld ns off (flags %#x, "
                             "back %#x), to %+lld ns",
                             run, (long long)(x - T0), (long long)(back.t - x), r.flags, back.flags,
                             (long long)(again.t - r.t));
            }
            prev = r;
        }
        clock_conv_destroy(&cv);
    }
}

/*
 * Random chains GPU → trace → probe → global: snapshot pairs read 100 ms
 * apart with a µs of read jitter, clocks ±100 ppm apart with wander, pairs
 * over part of the windows' span only (extrapolated beyond them), window
 * maps as in lan.  From a GPU time, every 10 ms over the pairs and 3 s
 * beyond either end: global time goes on at the three clocks' rates (within
 * 4e-4 of 1 here, 3e-4 from the rates, the rest the pairs' read jitter),
 * and comes back to within 2 ns.  2000 draws pass.
 */
static void test_conversion_random_chains(void **state)
{
    (void)state;
    const int64_t W = INT64_C(2000000000), dx = 9999991;
    uint64_t seed = 0xc4a2;
    for (int run = 0; run < 200; run++) {
        clock_conv_t *cv = clock_conv_new(NULL);
        char err[BASE_ERRLEN];
        double off = 1e6 * (urand(&seed) - 0.5), drift = 2e5 * (urand(&seed) - 0.5);
        for (int w = 0; w < 6; w++) {
            off += 1e-9 * drift * (double)W + 20 * gauss(&seed);
            clock_node_fit_t f = window_fit(w, T0 + w * W, off, drift, 0);
            f.uncertainty_ns = 10 + 20 * urand(&seed);
            assert_int_equal(clock_conv_add_fit(cv, &f, err), BASE_OK);
        }
        /* GPU and trace clocks: offsets of seconds, rates ±100 ppm off their parents'. */
        const int64_t start = T0 + (int64_t)(4e9 * urand(&seed));
        const int64_t end = start + (int64_t)(2e9 + 4e9 * urand(&seed));
        double rate[2] = {1 + 1e-4 * (2 * urand(&seed) - 1), 1 + 1e-4 * (2 * urand(&seed) - 1)};
        const int64_t o_trace = -(int64_t)(1e9 * (1 + 1e3 * urand(&seed)));
        const int64_t o_gpu = (int64_t)(1e9 * 1e3 * urand(&seed));
        int64_t last_trace = INT64_MIN, last_gpu = INT64_MIN, last_probe = INT64_MIN;
        int64_t gpu_lo = 0, gpu_hi = 0;
        double run_trace = 0, run_gpu = 0; /* ns since start on each clock */
        for (int64_t t = start; t < end; t += 100000000) {
            if (t > start) {
                rate[0] += 1e-8 * gauss(&seed);
                rate[1] += 1e-8 * gauss(&seed);
                run_trace += 1e8 * rate[0];
                run_gpu += 1e8 * rate[0] * rate[1];
            }
            int64_t probe = t + (int64_t)(1000 * urand(&seed));
            int64_t trace = T0 + o_trace + (int64_t)run_trace;
            int64_t gpu = T0 + o_gpu + (int64_t)run_gpu;
            if (probe <= last_probe || trace <= last_trace || gpu <= last_gpu)
                continue;
            assert_int_equal(clock_conv_add_pair(cv, 5, CLOCK_DOMAIN_TRACE, CLOCK_DOMAIN_PROBE,
                                                 trace, probe, err),
                             BASE_OK);
            assert_int_equal(clock_conv_add_pair(cv, 5, CLOCK_DOMAIN_GPU0, CLOCK_DOMAIN_TRACE, gpu,
                                                 trace + (int64_t)(500 * urand(&seed)), err),
                             BASE_OK);
            if (last_gpu == INT64_MIN)
                gpu_lo = gpu;
            gpu_hi = gpu;
            last_probe = probe;
            last_trace = trace;
            last_gpu = gpu;
        }
        clock_conv_result_t prev, r, back;
        bool have = false;
        for (int64_t x = gpu_lo - 3 * INT64_C(1000000000); x < gpu_hi + 3 * INT64_C(1000000000);
             x += dx) {
            assert_int_equal(clock_conv_to_global(cv, 5, CLOCK_DOMAIN_GPU0, x, &r, err), BASE_OK);
            if (have) {
                double g = (double)(r.t - prev.t);
                if (g <= 0 || fabs(g - (double)dx) > 4e-4 * (double)dx)
                    fail_msg("run %d: %+.0f ns over %lld ns at %lld ns from the first pair", run, g,
                             (long long)dx, (long long)(x - gpu_lo));
            }
            assert_int_equal(clock_conv_from_global(cv, 5, CLOCK_DOMAIN_GPU0, r.t, &back, err),
                             BASE_OK);
            if (llabs(back.t - x) > 2)
                fail_msg("run %d: %lld ns from the first pair came back %lld ns off (flags %#x)",
                         run, (long long)(x - gpu_lo), (long long)(back.t - x), r.flags);
            prev = r;
            have = true;
        }
        clock_conv_destroy(&cv);
    }
}

/*
 * The reference's clock stepped back 1 ms between windows 1 and 2: the
 * node's readings run on, its maps step down.  Readings just after the
 * step convert to times the reference read before it too: flagged
 * CLOCK_CONV_STEP (they went back by the step, unflagged); once past the
 * earlier window's last time, and before the step, no flag.  Maps unsure by
 * ±20 ms are parted by the 1.5 s and 5 s steps all the same, and what the
 * reference read twice is flagged to its end (the last 0.4 s of it, ten
 * times their uncertainties, was not; past the next window, at 5 s, it
 * was not while the pair next to the time had no step between them).
 */
static void test_conversion_reference_step_back(void **state)
{
    (void)state;
    const int64_t W = INT64_C(2000000000);
    /* 1 ms, and 1.5 s and 5 s: past the next window's centre, and windows on. */
    const int64_t steps[5] = {1000000, INT64_C(1500000000), INT64_C(5000000000),
                              INT64_C(1500000000), INT64_C(5000000000)};
    for (int c = 0; c < 5; c++) {
        const int64_t S = steps[c];
        clock_conv_t *cv = clock_conv_new(NULL);
        char err[BASE_ERRLEN];
        clock_node_fit_t f[6];
        for (int w = 0; w < 6; w++) {
            f[w] = window_fit(w, T0 + w * W, w < 2 ? -5000.0 : -5000.0 - (double)S, 0, 0);
            if (c >= 3)
                f[w].uncertainty_ns = 2e7;
            assert_int_equal(clock_conv_add_fit(cv, &f[w], err), BASE_OK);
        }
        const int64_t after = f[2].from_ns;
        const struct {
            int64_t x;
            bool flagged;
        } cs[] = {{f[1].to_ns - 1000, false}, {after + 1000, true},
                  {after + S / 2, true},      {after + S - 1000, true},
                  {after + S + 1000, false},  {after + S + W / 2, false}};
        for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
            clock_conv_result_t r;
            assert_int_equal(clock_conv_to_global(cv, 5, CLOCK_DOMAIN_PROBE, cs[i].x, &r, err),
                             BASE_OK);
            const clock_node_fit_t *g = cs[i].x < after ? &f[1] : &f[2];
            assert_true(llabs(r.t - (cs[i].x + (int64_t)llround(g->offset_ns))) <= 1);
            if (((r.flags & CLOCK_CONV_STEP) != 0) != cs[i].flagged)
                fail_msg("step back %lld ns: %lld ns after it, flags %#x", (long long)S,
                         (long long)(cs[i].x - after), r.flags);
        }
        clock_conv_destroy(&cv);
    }
}

/*
 * A node whose probe clock reads 1970 against a reference at 2025: its
 * maps' offsets are near 1.8e18 ns, where doubles are 256 ns apart.  A
 * blend of two maps 512 ns apart is their offsets' blend to the ns at
 * every tenth of the way (it came out on the doubles' steps: 51 ns off a
 * tenth of the way), and the way back meets the way there.
 */
static void test_conversion_far_clock(void **state)
{
    (void)state;
    clock_conv_t *c = clock_conv_new(NULL);
    char err[BASE_ERRLEN];
    const int64_t O0 = INT64_C(1765643728000000000);
    for (int w = 0; w < 2; w++) {
        clock_node_fit_t f = window_fit(w, INT64_C(1000000000) + w * INT64_C(2000000000),
                                        (double)O0 + 512.0 * w, 0, 0);
        assert_int_equal(clock_conv_add_fit(c, &f, err), BASE_OK);
    }
    clock_conv_result_t r, b;
    const int64_t centre = INT64_C(2000000000);
    for (int k = 0; k <= 10; k++) {
        int64_t x = centre + k * INT64_C(200000000);
        assert_int_equal(clock_conv_to_global(c, 5, CLOCK_DOMAIN_PROBE, x, &r, err), BASE_OK);
        int64_t want = x + O0 + (int64_t)llround(51.2 * k);
        if (llabs(r.t - want) > 1)
            fail_msg("%d0 %% of the way: %lld ns off", k, (long long)(r.t - want));
        assert_int_equal(clock_conv_from_global(c, 5, CLOCK_DOMAIN_PROBE, r.t, &b, err), BASE_OK);
        assert_true(llabs(b.t - x) <= 1);
    }
    /* Monotonic ns by ns across where the blend crosses a double's step. */
    int64_t x0 = centre + INT64_C(500000000), prev = INT64_MIN;
    for (int64_t x = x0; x < x0 + 2000; x++) {
        assert_int_equal(clock_conv_to_global(c, 5, CLOCK_DOMAIN_PROBE, x, &r, err), BASE_OK);
        assert_true(prev == INT64_MIN || (r.t >= prev && r.t <= prev + 2));
        prev = r.t;
    }
    clock_conv_destroy(&c);
}

/*
 * Beyond the snapshot pairs, the way there and the way back extrapolate
 * one line: both take the rate over the pairs of the last (first) 2 s on
 * both clocks.  Two pairs 200 ns off the line sit where 2 s on one clock is
 * just over 2 s on the other: measured on one clock each way, the rates
 * differed by a pair and a round trip a day before the pairs came back
 * 8.6 ms off.
 */
static void test_conversion_extrapolated_round_trip(void **state)
{
    (void)state;
    clock_conv_t *c = clock_conv_new(NULL);
    char err[BASE_ERRLEN];
    clock_node_fit_t f = window_fit(0, T0, 0, 0, 0);
    assert_int_equal(clock_conv_add_fit(c, &f, err), BASE_OK);
    const int64_t m0 = INT64_C(1000000000000);
    const double rate = 1 + 2e-6;
    for (int i = 0; i <= 45; i++) {
        if (i == 20 || i == 25)
            continue;
        int64_t m = m0 + i * INT64_C(100000000);
        int64_t p = T0 + (int64_t)llround((double)(m - m0) * rate);
        assert_int_equal(
            clock_conv_add_pair(c, 5, CLOCK_DOMAIN_TRACE, CLOCK_DOMAIN_PROBE, m, p, err), BASE_OK);
    }
    /* 2 s − 1 µs from the first pair and from the last, on the trace clock. */
    const int64_t odd[2] = {m0 + INT64_C(2000000000) - 1000, m0 + INT64_C(2500000000) + 1000};
    for (int i = 0; i < 2; i++) {
        int64_t p = T0 + (int64_t)llround((double)(odd[i] - m0) * rate) + (i ? -200 : 200);
        assert_int_equal(
            clock_conv_add_pair(c, 5, CLOCK_DOMAIN_TRACE, CLOCK_DOMAIN_PROBE, odd[i], p, err),
            BASE_OK);
    }
    const int64_t far[] = {INT64_C(-86400000000000), INT64_C(-57000000000),
                           INT64_C(4500000000) + INT64_C(57000000000),
                           INT64_C(4500000000) + INT64_C(86400000000000)};
    for (size_t i = 0; i < sizeof far / sizeof far[0]; i++) {
        clock_conv_result_t g, back;
        int64_t m = m0 + far[i];
        assert_int_equal(clock_conv_to_global(c, 5, CLOCK_DOMAIN_TRACE, m, &g, err), BASE_OK);
        assert_true(g.flags & CLOCK_CONV_EXTRAPOLATED);
        assert_int_equal(clock_conv_from_global(c, 5, CLOCK_DOMAIN_TRACE, g.t, &back, err),
                         BASE_OK);
        if (llabs(back.t - m) > 2)
            fail_msg("%lld s from the first pair: back %lld ns off",
                     (long long)(far[i] / 1000000000), (long long)(back.t - m));
    }
    clock_conv_destroy(&c);
}

static void test_conversion_limits(void **state)
{
    (void)state;
    clock_conv_limits_t lim;
    clock_conv_limits_default(&lim);
    lim.max_pairs = 16;
    lim.max_fits = 8;
    lim.max_nodes = 2;
    clock_conv_t *c = clock_conv_new(&lim);
    for (int i = 0; i < 100; i++)
        assert_int_equal(clock_conv_add_pair(c, 1, CLOCK_DOMAIN_TRACE, CLOCK_DOMAIN_PROBE, i * 10,
                                             T0 + i * 10, NULL),
                         BASE_OK);
    for (int w = 0; w < 30; w++) {
        clock_node_fit_t f = window_fit(w, T0 + (int64_t)w * 2000000000LL, 100, 0, 0);
        f.node = 1;
        assert_int_equal(clock_conv_add_fit(c, &f, NULL), BASE_OK);
    }
    clock_conv_stats_t st;
    clock_conv_get_stats(c, &st);
    assert_true(st.pairs_dropped > 0 && st.fits_dropped > 0);
    assert_int_equal(clock_conv_add_pair(c, 2, CLOCK_DOMAIN_TRACE, 0, 1, 2, NULL), BASE_OK);
    assert_int_equal(clock_conv_add_pair(c, 3, CLOCK_DOMAIN_TRACE, 0, 1, 2, NULL), BASE_ERR);
    /* A different reference clears the history. */
    clock_node_fit_t f = window_fit(0, T0, 0, 0, 0);
    f.node = 1;
    f.ref = 7;
    assert_int_equal(clock_conv_add_fit(c, &f, NULL), BASE_OK);
    clock_conv_get_stats(c, &st);
    assert_int_equal(st.ref_changes, 1);
    clock_conv_destroy(&c);
}

/* ---- the simulated clock ---- */

static void test_sim_clock(void **state)
{
    (void)state;
    clock_sim_params_t p = {.t0_ns = T0,
                            .m0_ns = 5000000000LL,
                            .offset_ns = 2.5e6,
                            .drift_ppm = -37.5,
                            .wander_ppb = 5,
                            .seed = 42};
    clock_sim_t *a = clock_sim_new(&p), *b = clock_sim_new(&p);
    assert_true(clock_sim_apply(a, T0) == T0 + 2500000);
    assert_true(clock_sim_wander_ns(a, T0) == 0);
    assert_true(clock_sim_wander_ns(a, T0 - 1000) == 0);
    /* Reproducible from (seed, t), whatever order the readings come in. */
    int64_t t1 = T0 + 3600LL * 1000000000LL + 12345, t2 = T0 + 777777777LL;
    int64_t a1 = clock_sim_apply(a, t1), a2 = clock_sim_apply(a, t2);
    int64_t b2 = clock_sim_apply(b, t2), b1 = clock_sim_apply(b, t1);
    assert_true(a1 == b1 && a2 == b2);
    /* Drift as specified: over one hour 37.5 ppm is 135 ms, plus a little wander. */
    double dev = (double)(a1 - t1) - 2.5e6 + 37.5e-6 * 3600e9;
    assert_true(fabs(dev) < 5e5);
    /* Another seed wanders differently. */
    p.seed = 43;
    clock_sim_t *c = clock_sim_new(&p);
    assert_true(clock_sim_apply(c, t1) != a1);
    /* Inverse. */
    for (int64_t t = T0 - 1000000; t < T0 + 100000000000LL; t += 7777777777LL)
        assert_true(llabs(clock_sim_invert(a, clock_sim_apply(a, t)) - t) <= 1);
    /* The trace clock runs at the same simulated rate. */
    int64_t m = p.m0_ns + 2000000000LL;
    assert_true(llabs((clock_sim_apply_mono(a, m) - m) -
                      (clock_sim_apply(a, T0 + 2000000000LL) - (T0 + 2000000000LL))) <= 1);
    /* A step. */
    clock_sim_params_t q = {.t0_ns = T0, .step_at_ns = T0 + 1000, .step_ns = 1e6};
    clock_sim_t *s = clock_sim_new(&q);
    assert_true(clock_sim_apply(s, T0 + 999) == T0 + 999);
    assert_true(clock_sim_apply(s, T0 + 1000) == T0 + 1000 + 1000000);
    assert_true(clock_sim_invert(s, T0 + 5000) == T0 + 1000); /* inside the gap */
    assert_true(clock_sim_invert(s, T0 + 1000 + 1000000 + 5) == T0 + 1005);
    /* At the ends of int64 the inverse saturates (it stepped past them). */
    for (int sgn = -1; sgn <= 1; sgn += 2) {
        clock_sim_params_t far = {.t0_ns = T0, .offset_ns = -sgn * 9e18};
        clock_sim_t *fs = clock_sim_new(&far);
        assert_true(clock_sim_invert(fs, sgn > 0 ? INT64_MAX - 5 : INT64_MIN + 5) ==
                    (sgn > 0 ? INT64_MAX : INT64_MIN));
        clock_sim_destroy(&fs);
    }
    clock_sim_params_t edge = {.t0_ns = T0, .step_at_ns = INT64_MIN, .step_ns = 1e6};
    clock_sim_t *es = clock_sim_new(&edge);
    assert_true(clock_sim_invert(es, INT64_MIN) == INT64_MIN);
    clock_sim_destroy(&es);
    clock_sim_destroy(&a);
    clock_sim_destroy(&b);
    clock_sim_destroy(&c);
    clock_sim_destroy(&s);
    assert_null(a);

    clock_sim_params_t sp;
    memset(&sp, 0, sizeof sp);
    char err[BASE_ERRLEN];
    assert_int_equal(clock_sim_parse_spec("250000,-12.5", &sp, err), BASE_OK);
    assert_true(sp.offset_ns == 250000 && sp.drift_ppm == -12.5 && sp.wander_ppb == 0);
    assert_int_equal(clock_sim_parse_spec("-1e6,500,20", &sp, err), BASE_OK);
    assert_true(sp.wander_ppb == 20 && sp.step_at_ns == 0);
    sp.t0_ns = T0;
    assert_int_equal(clock_sim_parse_spec("0,0,0,4.5,1e6", &sp, err), BASE_OK);
    assert_true(sp.step_at_ns == T0 + 4500000000LL && sp.step_ns == 1e6);
    const char *bad[] = {"",       "5",       "1,2,3,4", "x,1",        "1,,2",
                         "1,2,-3", "1,20000", "1,2,",    "1,2,3,-1,5", "1,2,3,4,5,6"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = 0;
        assert_int_equal(clock_sim_parse_spec(bad[i], &sp, err), BASE_ERR);
        assert_true(strlen(err) > 0);
    }
}

/* ---- JSON lines ---- */

static enum base_dec dec(const char *s, clock_record_t *r, char *err)
{
    return clock_json_decode_line(s, strlen(s), r, err);
}

static void test_json_good(void **state)
{
    (void)state;
    clock_record_t r;
    char err[BASE_ERRLEN];
    assert_int_equal(dec("{\"type\":\"probe\",\"src\":0,\"dst\":4000000000,\"seq\":17,"
                         "\"tx\":[1790000000000000000,1790000000000100000],"
                         "\"rx\":[1790000000000005000,null],\"extra\":{\"x\":[1]}}",
                         &r, err),
                     BASE_DEC_OK);
    assert_int_equal(r.type, CLOCK_REC_PROBE);
    assert_int_equal(r.u.probe.dst, 4000000000u);
    assert_true(r.u.probe.tx[1] == 1790000000000100000LL);
    assert_true(r.u.probe.rx_ok[0] && !r.u.probe.rx_ok[1]);
    /* Decimal times are accepted (rounded). */
    assert_int_equal(dec("{\"type\":\"probe\",\"src\":1,\"dst\":2,\"tx\":[10.4,20.6],"
                         "\"rx\":[30,40]}",
                         &r, err),
                     BASE_DEC_OK);
    assert_true(r.u.probe.tx[0] == 10 && r.u.probe.tx[1] == 21 && r.u.probe.seq == 0);
    /* ...exactly at CLOCK_REALTIME sizes, where a double is 256 ns coarse. */
    assert_int_equal(dec("{\"type\":\"probe\",\"src\":1,\"dst\":2,"
                         "\"tx\":[1765643728995645999.0,-1765643728995645998.5],"
                         "\"rx\":[1765643728995645999.49,1]}",
                         &r, err),
                     BASE_DEC_OK);
    assert_true(r.u.probe.tx[0] == 1765643728995645999LL);
    assert_true(r.u.probe.tx[1] == -1765643728995645999LL);
    assert_true(r.u.probe.rx[0] == 1765643728995645999LL);
    /* The largest times a probe may carry, ±2^62. */
    assert_int_equal(dec("{\"type\":\"probe\",\"src\":1,\"dst\":2,"
                         "\"tx\":[4611686018427387904,-4611686018427387904],\"rx\":[1,2]}",
                         &r, err),
                     BASE_DEC_OK);
    assert_int_equal(dec("{\"type\":\"window_stats\",\"anything\":1}", &r, err), BASE_DEC_OK);
    assert_int_equal(r.type, CLOCK_REC_OTHER);
    assert_int_equal(dec("{\"type\":\"edge_fit\",\"window\":3,\"src\":1,\"dst\":2,"
                         "\"estimator\":\"hull\",\"anchor_ns\":1.79e18,\"offset_ns\":-12.5,"
                         "\"drift_ppb\":3,\"uncertainty_ns\":4.5,\"n_fwd\":10,\"n_rev\":11,"
                         "\"from_ns\":1,\"to_ns\":2,\"new_field\":\"ok\"}",
                         &r, err),
                     BASE_DEC_OK);
    assert_int_equal(r.type, CLOCK_REC_EDGE_FIT);
    assert_string_equal(r.u.edge.estimator, "hull");
    assert_true(r.u.edge.offset_ns == -12.5 && isnan(r.u.edge.residual_ns));
    assert_int_equal(dec("{\"type\":\"node_fit\",\"window\":0,\"node\":7,\"ref\":0,"
                         "\"anchor_ns\":5,\"offset_ns\":1,\"drift_ppb\":0,\"uncertainty_ns\":0,"
                         "\"from_ns\":0,\"to_ns\":10,\"aligned\":false}",
                         &r, err),
                     BASE_DEC_OK);
    assert_int_equal(r.type, CLOCK_REC_NODE_FIT);
    assert_false(r.u.node.aligned);
}

static void test_json_roundtrip(void **state)
{
    (void)state;
    char buf[2048], err[BASE_ERRLEN];
    clock_record_t r;
    clock_probe_t p = {.src = 3, .dst = 99999, .seq = 12345678901ULL};
    p.tx[0] = T0;
    p.tx[1] = T0 + 100003;
    p.rx[0] = T0 - 5;
    p.rx_ok[0] = true;
    clock_json_format_probe(&p, buf, sizeof buf);
    assert_int_equal(dec(buf, &r, err), BASE_DEC_OK);
    assert_true(memcmp(&r.u.probe.tx, &p.tx, sizeof p.tx) == 0);
    assert_true(r.u.probe.rx[0] == p.rx[0] && r.u.probe.rx_ok[0] && !r.u.probe.rx_ok[1]);
    assert_true(r.u.probe.seq == p.seq);

    clock_edge_fit_t e;
    memset(&e, 0, sizeof e);
    e.window = 42;
    e.src = 1;
    e.dst = 2;
    snprintf(e.estimator, sizeof e.estimator, "svm");
    e.anchor_ns = T0 + 1;
    e.offset_ns = 123456.789;
    e.drift_ppb = -480123.4567;
    e.uncertainty_ns = 12.25;
    e.n_fwd = 500;
    e.n_rev = 499;
    e.from_ns = T0 - 1000000000LL;
    e.to_ns = T0 + 1000000000LL;
    e.margin_ns = 9000.5;
    e.drift_unc_ppb = NAN;
    e.model_ns = 1.5;
    e.misfit_ns[0] = 1;
    e.misfit_ns[1] = NAN;
    e.misfit_ns[2] = -3;
    e.misfit_sigma_ns[0] = e.misfit_sigma_ns[1] = e.misfit_sigma_ns[2] = 2;
    e.residual_ns = -0.125;
    e.suspect = true;
    e.step = true;
    e.step_at_ns = T0 + 5;
    e.step_ns = 1e6;
    e.margin_step_ns = -212.5;
    e.set_aside = 3;
    clock_json_format_edge_fit(&e, buf, sizeof buf);
    assert_int_equal(dec(buf, &r, err), BASE_DEC_OK);
    const clock_edge_fit_t *g = &r.u.edge;
    assert_true(g->window == 42 && g->anchor_ns == e.anchor_ns && g->from_ns == e.from_ns);
    assert_true(fabs(g->offset_ns - e.offset_ns) < 1e-3 && fabs(g->drift_ppb - e.drift_ppb) < 1e-4);
    assert_true(isnan(g->drift_unc_ppb) && g->residual_ns == -0.125 && g->step && g->suspect);
    assert_true(g->misfit_ns[0] == 1 && isnan(g->misfit_ns[1]) && g->misfit_ns[2] == -3);
    assert_true(g->margin_step_ns == -212.5 && g->set_aside == 3);
    /* The json-c object for the bus is the same object. */
    json_object *o = clock_json_edge_fit(&e);
    assert_int_equal(clock_json_decode(o, &r, err), BASE_DEC_OK);
    assert_true(fabs(r.u.edge.offset_ns - e.offset_ns) < 1e-3 && r.u.edge.step && r.u.edge.suspect);
    assert_true(r.u.edge.margin_step_ns == -212.5 && r.u.edge.set_aside == 3);
    json_object_put(o);
    /* Not suspect, not trimmed: the fields are left out and read back false and 0. */
    e.suspect = false;
    e.margin_step_ns = 0;
    e.set_aside = 0;
    clock_json_format_edge_fit(&e, buf, sizeof buf);
    assert_null(strstr(buf, "suspect"));
    assert_null(strstr(buf, "margin_step"));
    assert_null(strstr(buf, "set_aside"));
    assert_int_equal(dec(buf, &r, err), BASE_DEC_OK);
    assert_false(r.u.edge.suspect);
    assert_true(r.u.edge.margin_step_ns == 0 && r.u.edge.set_aside == 0);

    clock_node_fit_t n;
    memset(&n, 0, sizeof n);
    n.window = 7;
    n.node = 123456;
    n.ref = 0;
    n.anchor_ns = T0;
    n.offset_ns = -2.5e9;
    n.drift_ppb = 12.5;
    n.uncertainty_ns = 30;
    n.from_ns = T0 - 1;
    n.to_ns = T0 + 1;
    n.aligned = true;
    n.drift_unc_ppb = 0.5;
    n.model_ns = NAN;
    n.delay_ns = 41.5;
    clock_json_format_node_fit(&n, buf, sizeof buf);
    assert_int_equal(dec(buf, &r, err), BASE_DEC_OK);
    assert_true(r.u.node.node == 123456 && r.u.node.offset_ns == -2.5e9 && r.u.node.aligned);
    assert_true(r.u.node.delay_ns == 41.5);
    /* The window's own map is not in the JSON: a decoded fit carries none (not tracked). */
    assert_true(isnan(r.u.node.own_offset_ns) && isnan(r.u.node.own_offset_sd_ns) &&
                r.u.node.pooled == 0);
    assert_null(strstr(buf, "lag")); /* a first map carries no lag */
    assert_int_equal(r.u.node.lag, 0);
    o = clock_json_node_fit(&n);
    assert_int_equal(clock_json_decode(o, &r, err), BASE_DEC_OK);
    assert_true(r.u.node.anchor_ns == T0 && r.u.node.delay_ns == 41.5);
    json_object_put(o);
    /* A fit that says nothing of slow hosts reads back unknown. */
    n.delay_ns = NAN;
    clock_json_format_node_fit(&n, buf, sizeof buf);
    assert_int_equal(dec(buf, &r, err), BASE_DEC_OK);
    assert_true(isnan(r.u.node.delay_ns));
    /* A refinement carries its lag, both ways. */
    n.lag = 3;
    clock_json_format_node_fit(&n, buf, sizeof buf);
    assert_non_null(strstr(buf, "\"lag\":3"));
    assert_int_equal(dec(buf, &r, err), BASE_DEC_OK);
    assert_int_equal(r.u.node.lag, 3);
    o = clock_json_node_fit(&n);
    assert_int_equal(clock_json_decode(o, &r, err), BASE_DEC_OK);
    assert_int_equal(r.u.node.lag, 3);
    json_object_put(o);

    clock_truth_node_t t = {.node = 4,
                            .p = {.t0_ns = T0,
                                  .offset_ns = -5,
                                  .drift_ppm = 1.5,
                                  .wander_ppb = 2,
                                  .seed = 9876543210123ULL}};
    clock_json_format_truth(&t, buf, sizeof buf);
    assert_int_equal(dec(buf, &r, err), BASE_DEC_OK);
    assert_int_equal(r.type, CLOCK_REC_SIM_TRUTH);
    assert_true(r.u.truth.p.seed == t.p.seed && r.u.truth.p.drift_ppm == 1.5);
    o = clock_json_truth(&t);
    assert_int_equal(clock_json_decode(o, &r, err), BASE_DEC_OK);
    assert_true(r.u.truth.p.seed == t.p.seed && r.u.truth.node == 4);
    json_object_put(o);

    /* Truncation never overruns the buffer. */
    char small[16];
    size_t len = clock_json_format_edge_fit(&e, small, sizeof small);
    assert_true(len < sizeof small && strlen(small) == len);
}

static void test_json_malformed(void **state)
{
    (void)state;
    struct {
        const char *line;
        enum base_dec want;
    } cases[] = {
        {"", BASE_DEC_TRUNCATED},
        {"not json", BASE_DEC_BAD_JSON},
        {"{\"type\":\"probe\"", BASE_DEC_TRUNCATED},
        {"[1,2]", BASE_DEC_BAD_TYPE},
        {"42", BASE_DEC_BAD_TYPE}, /* a whole value, not one cut short */
        {"null", BASE_DEC_BAD_TYPE},
        {"{\"src\":1}", BASE_DEC_BAD_TYPE},
        {"{\"type\":5}", BASE_DEC_BAD_TYPE},
        {"{\"type\":\"probe\",\"src\":1,\"dst\":2,\"tx\":[1,2]}", BASE_DEC_BAD_TYPE},
        {"{\"type\":\"probe\",\"src\":1,\"dst\":2,\"tx\":[1],\"rx\":[1,2]}", BASE_DEC_BAD_TYPE},
        {"{\"type\":\"probe\",\"src\":1,\"dst\":2,\"tx\":[1,\"2\"],\"rx\":[1,2]}",
         BASE_DEC_BAD_TYPE},
        {"{\"type\":\"probe\",\"src\":1,\"dst\":2,\"tx\":[1,null],\"rx\":[1,2]}",
         BASE_DEC_BAD_VALUE},
        {"{\"type\":\"probe\",\"src\":-1,\"dst\":2,\"tx\":[1,2],\"rx\":[1,2]}", BASE_DEC_BAD_VALUE},
        {"{\"type\":\"probe\",\"src\":5000000000,\"dst\":2,\"tx\":[1,2],\"rx\":[1,2]}",
         BASE_DEC_BAD_VALUE},
        {"{\"type\":\"probe\",\"src\":2,\"dst\":2,\"tx\":[1,2],\"rx\":[1,2]}", BASE_DEC_BAD_VALUE},
        {"{\"type\":\"probe\",\"src\":1.5,\"dst\":2,\"tx\":[1,2],\"rx\":[1,2]}", BASE_DEC_BAD_TYPE},
        {"{\"type\":\"probe\",\"src\":1,\"dst\":2,\"tx\":[1e300,2],\"rx\":[1,2]}",
         BASE_DEC_BAD_VALUE},
        {"{\"type\":\"edge_fit\",\"window\":0,\"src\":1,\"dst\":2,\"estimator\":\"svm\"}",
         BASE_DEC_BAD_TYPE},
        {"{\"type\":\"edge_fit\",\"window\":0,\"src\":1,\"dst\":2,\"estimator\":"
         "\"abcdefghijklmnopqrstuvwxyz\",\"anchor_ns\":1,\"offset_ns\":1,\"drift_ppb\":1,"
         "\"uncertainty_ns\":1,\"n_fwd\":1,\"n_rev\":1,\"from_ns\":1,\"to_ns\":2}",
         BASE_DEC_BAD_VALUE},
        {"{\"type\":\"edge_fit\",\"window\":0,\"src\":1,\"dst\":2,\"estimator\":\"svm\","
         "\"anchor_ns\":1,\"offset_ns\":1,\"drift_ppb\":1,\"uncertainty_ns\":-1,\"n_fwd\":1,"
         "\"n_rev\":1,\"from_ns\":1,\"to_ns\":2}",
         BASE_DEC_BAD_VALUE},
        {"{\"type\":\"node_fit\",\"window\":0,\"node\":1,\"ref\":0,\"anchor_ns\":1,"
         "\"offset_ns\":1,\"drift_ppb\":1,\"uncertainty_ns\":1,\"from_ns\":5,\"to_ns\":2,"
         "\"aligned\":true}",
         BASE_DEC_BAD_VALUE},
        {"{\"type\":\"node_fit\",\"window\":0,\"node\":1,\"ref\":0,\"anchor_ns\":1,"
         "\"offset_ns\":1,\"drift_ppb\":1,\"uncertainty_ns\":1,\"from_ns\":1,\"to_ns\":2,"
         "\"aligned\":1}",
         BASE_DEC_BAD_TYPE},
        {"{\"type\":\"node_fit\",\"window\":0,\"node\":1,\"ref\":0,\"anchor_ns\":1,"
         "\"offset_ns\":1,\"drift_ppb\":1,\"uncertainty_ns\":1,\"from_ns\":1,\"to_ns\":2,"
         "\"aligned\":true,\"lag\":65}",
         BASE_DEC_BAD_VALUE},
        {"{\"type\":\"node_fit\",\"window\":0,\"node\":1,\"ref\":0,\"anchor_ns\":1,"
         "\"offset_ns\":1,\"drift_ppb\":1,\"uncertainty_ns\":1,\"from_ns\":1,\"to_ns\":2,"
         "\"aligned\":true,\"lag\":-1}",
         BASE_DEC_BAD_VALUE},
        {"{\"type\":\"node_fit\",\"window\":0,\"node\":1,\"ref\":0,\"anchor_ns\":1,"
         "\"offset_ns\":1,\"drift_ppb\":1,\"uncertainty_ns\":1,\"from_ns\":1,\"to_ns\":2,"
         "\"aligned\":true,\"lag\":\"1\"}",
         BASE_DEC_BAD_TYPE},
        {"{\"type\":\"node_fit\",\"window\":0,\"node\":1,\"ref\":0,\"anchor_ns\":1,"
         "\"offset_ns\":1,\"drift_ppb\":1,\"uncertainty_ns\":1,\"from_ns\":1,\"to_ns\":2,"
         "\"aligned\":true,\"delay_ns\":-3}",
         BASE_DEC_BAD_VALUE},
        {"{\"type\":\"node_fit\",\"window\":0,\"node\":1,\"ref\":0,\"anchor_ns\":1,"
         "\"offset_ns\":1,\"drift_ppb\":1,\"uncertainty_ns\":1,\"from_ns\":1,\"to_ns\":2,"
         "\"aligned\":true,\"delay_ns\":\"3\"}",
         BASE_DEC_BAD_TYPE},
        {"{\"type\":\"probe\",\"src\":1,\"dst\":2,\"tx\":[1,2],\"rx\":[1,2]} trailing",
         BASE_DEC_BAD_JSON},
        /* A truth beyond what a simulated clock may be (its inverse overflowed). */
        {"{\"type\":\"sim_truth\",\"node\":1,\"t0_ns\":1,\"offset_ns\":9.2e18,"
         "\"drift_ppm\":1}",
         BASE_DEC_BAD_VALUE},
        {"{\"type\":\"sim_truth\",\"node\":1,\"t0_ns\":1,\"offset_ns\":1,\"drift_ppm\":1,"
         "\"step_at_ns\":5,\"step_ns\":-2e12}",
         BASE_DEC_BAD_VALUE},
        /* Beyond ±2^62: one stray stamp would overflow the window arithmetic. */
        {"{\"type\":\"probe\",\"src\":1,\"dst\":2,\"tx\":[4611686018427387905,2],"
         "\"rx\":[1,2]}",
         BASE_DEC_BAD_VALUE},
        {"{\"type\":\"probe\",\"src\":1,\"dst\":2,\"tx\":[1,2],"
         "\"rx\":[1,-7960000000000000000]}",
         BASE_DEC_BAD_VALUE},
        /* json-c clamps integers beyond int64 without a word: out of range. */
        {"{\"type\":\"probe\",\"src\":1,\"dst\":2,\"tx\":[18446744073709551615,2],"
         "\"rx\":[1,2]}",
         BASE_DEC_BAD_VALUE},
        {"{\"type\":\"probe\",\"src\":1,\"dst\":2,\"tx\":[-9223372036854775809,2],"
         "\"rx\":[1,2]}",
         BASE_DEC_BAD_VALUE},
        {"{\"type\":\"node_fit\",\"window\":100000000000000000000000,\"node\":1,\"ref\":0,"
         "\"anchor_ns\":1,\"offset_ns\":1,\"drift_ppb\":1,\"uncertainty_ns\":1,\"from_ns\":1,"
         "\"to_ns\":2,\"aligned\":true}",
         BASE_DEC_BAD_VALUE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        clock_record_t r;
        char err[BASE_ERRLEN] = "";
        enum base_dec got = dec(cases[i].line, &r, err);
        if (got != cases[i].want)
            fail_msg("case %zu (%s): got %s, want %s (%s)", i, cases[i].line, base_dec_name(got),
                     base_dec_name(cases[i].want), err);
        assert_true(strlen(err) > 0);
    }
    /* Oversized input is refused before parsing. */
    size_t big = CLOCK_MAX_LINE + 10;
    char *s = malloc(big);
    memset(s, ' ', big);
    clock_record_t r;
    assert_int_equal(clock_json_decode_line(s, big, &r, NULL), BASE_DEC_OVERSIZED);
    free(s);
    /* Arbitrary bytes never crash the decoder. */
    uint64_t seed = 5;
    char junk[64];
    for (int k = 0; k < 2000; k++) {
        size_t n = (size_t)(urand(&seed) * sizeof junk);
        for (size_t i = 0; i < n; i++)
            junk[i] = "{}[]\",:0123456789.-etruflasnpoxyd \\"[(int)(urand(&seed) * 36)];
        clock_json_decode_line(junk, n, &r, NULL);
    }
}

static void test_line_reader(void **state)
{
    (void)state;
    size_t big = CLOCK_MAX_LINE + 100;
    size_t total = big + 64;
    char *text = malloc(total);
    size_t n = 0;
    n += (size_t)sprintf(text + n, "\xEF\xBB\xBF"
                                   "first\n"); /* a byte order mark first */
    memset(text + n, 'x', big);
    n += big;
    text[n++] = '\n';
    n += (size_t)sprintf(text + n, "\nlast");
    FILE *f = fmemopen(text, n, "r");
    clock_lines_t *lr = clock_lines_new(f);
    const char *line;
    size_t len;
    bool over;
    assert_int_equal(clock_lines_next(lr, &line, &len, &over), 1);
    assert_int_equal(len, 5);
    assert_false(over);
    assert_memory_equal(line, "first", 5);
    assert_int_equal(clock_lines_next(lr, &line, &len, &over), 1);
    assert_true(over);
    assert_int_equal(clock_lines_next(lr, &line, &len, &over), 1);
    assert_int_equal(len, 0);
    assert_int_equal(clock_lines_next(lr, &line, &len, &over), 1);
    assert_int_equal(len, 4); /* no final newline */
    assert_int_equal(clock_lines_next(lr, &line, &len, &over), 0);
    clock_lines_destroy(&lr);
    fclose(f);
    free(text);
}

/* ---- simulate → fit → evaluate ---- */

typedef struct pvec {
    clock_probe_t *p;
    size_t n, cap;
} pvec_t;

static int collect(void *ctx, const clock_probe_t *p)
{
    pvec_t *v = ctx;
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 4096;
        v->p = realloc(v->p, v->cap * sizeof *v->p);
    }
    v->p[v->n++] = *p;
    return BASE_OK;
}

static void test_simulate_fit_eval(void **state)
{
    (void)state;
    size_t ns;
    const clock_scenario_t *const *sc = clock_scenarios(&ns);
    assert_true(ns >= 7);
    const char *need[] = {"lan", "busy", "swts", "asym", "drift", "lossy", "step"};
    for (size_t i = 0; i < 7; i++)
        assert_non_null(clock_scenario_find(need[i]));
    (void)sc;

    clock_simnet_opts_t so;
    clock_simnet_opts_default(&so);
    so.nodes = 5;
    so.seconds = 8;
    so.seed = 3;
    pvec_t v = {0};
    clock_truth_t truth;
    char err[BASE_ERRLEN];
    assert_int_equal(clock_simnet_run(clock_scenario_find("lan"), &so, collect, &v, &truth, err),
                     BASE_OK);
    assert_true(v.n > 40000);
    assert_int_equal(truth.n_nodes, 5);
    assert_true(truth.start_ns > 1700000000000000000LL && truth.start_ns < 1900000000000000000LL);
    /* The probe graph is strongly connected: a ring plus more. */
    assert_true(truth.n_links >= 5);

    /* Truth survives its file. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_int_equal(clock_truth_write(&truth, f, err), BASE_OK);
    fclose(f);
    f = fmemopen(buf, len, "r");
    clock_truth_t back;
    assert_int_equal(clock_truth_read(f, &back, err), BASE_OK);
    fclose(f);
    free(buf);
    assert_int_equal(back.n_nodes, 5);
    assert_true(back.nodes[3].p.seed == truth.nodes[3].p.seed);

    clock_logfit_opts_t lo;
    clock_logfit_opts_default(&lo);
    clock_logfit_t *lf = clock_logfit_new(&lo);
    for (size_t i = 0; i < v.n; i++)
        assert_int_equal(clock_logfit_add(lf, &v.p[v.n - 1 - i]), BASE_OK); /* any order */
    assert_int_equal(clock_logfit_run(lf, err), BASE_OK);
    assert_int_equal(clock_logfit_ref(lf), 0);
    size_t nn, ne;
    const clock_node_fit_t *nf = clock_logfit_nodes(lf, &nn);
    const clock_edge_fit_t *ef = clock_logfit_edges(lf, &ne);
    assert_true(nn >= 20 && ne >= 20);
    clock_eval_t ev;
    assert_int_equal(clock_eval_nodes(&back, nf, nn, &ev, err), BASE_OK);
    if (!(ev.off_p99 < 100 && ev.coverage >= 0.8))
        fail_msg("lan 8 s: p99 %.1f ns, coverage %.2f", ev.off_p99, ev.coverage);
    assert_int_equal(clock_eval_edges(&back, ef, ne, &ev, err), BASE_OK);
    assert_true(ev.off_p99 < 300);
    /* Offline, every window of a node is pooled with its neighbours. */
    for (size_t i = 0; i < nn; i++)
        if (nf[i].aligned && nf[i].node != nf[i].ref)
            assert_true(nf[i].pooled >= 2);
    size_t npooled = nn;
    clock_node_fit_t *pooled = malloc(nn * sizeof *pooled);
    assert_non_null(pooled);
    memcpy(pooled, nf, nn * sizeof *pooled);
    clock_logfit_destroy(&lf);

    /* Causal, as a live master: the first window stands alone, later ones pool earlier ones. */
    lo.causal = true;
    lf = clock_logfit_new(&lo);
    for (size_t i = 0; i < v.n; i++)
        clock_logfit_add(lf, &v.p[i]);
    assert_int_equal(clock_logfit_run(lf, err), BASE_OK);
    nf = clock_logfit_nodes(lf, &nn);
    int64_t w0 = nf[0].window;
    size_t later = 0;
    for (size_t i = 0; i < nn; i++) {
        if (!nf[i].aligned || nf[i].node == nf[i].ref)
            continue;
        if (nf[i].window == w0)
            assert_int_equal(nf[i].pooled, 0);
        else
            later += nf[i].pooled > 0;
    }
    assert_true(later >= 8);
    assert_int_equal(clock_eval_nodes(&back, nf, nn, &ev, err), BASE_OK);
    if (!(ev.off_p99 < 100 && ev.coverage >= 0.8))
        fail_msg("lan 8 s causal: p99 %.1f ns, coverage %.2f", ev.off_p99, ev.coverage);
    /* Solving the causal run's edge fits again, pooled, gives the pooled run's maps. */
    lo.causal = false;
    assert_int_equal(clock_logfit_resolve(lf, &lo, err), BASE_OK);
    nf = clock_logfit_nodes(lf, &nn);
    assert_int_equal(nn, npooled);
    for (size_t i = 0; i < nn; i++) {
        assert_int_equal(nf[i].node, pooled[i].node);
        assert_int_equal(nf[i].window, pooled[i].window);
        assert_int_equal(nf[i].aligned, pooled[i].aligned);
        assert_true(nf[i].offset_ns == pooled[i].offset_ns);
        assert_true(nf[i].uncertainty_ns == pooled[i].uncertainty_ns);
    }
    free(pooled);
    lo.causal = true;
    lo.lag = CLOCK_LAG_MAX + 1;
    assert_int_equal(clock_logfit_resolve(lf, &lo, err), BASE_ERR);
    assert_non_null(strstr(err, "beyond"));
    lo.causal = false;
    lo.lag = 0;
    clock_logfit_destroy(&lf);
    clock_truth_free(&back);

    /* A step: the stepping node's window is unaligned, every aligned window stays good. */
    v.n = 0;
    so.seconds = 12;
    clock_truth_free(&truth);
    assert_int_equal(clock_simnet_run(clock_scenario_find("step"), &so, collect, &v, &truth, err),
                     BASE_OK);
    lf = clock_logfit_new(&lo);
    for (size_t i = 0; i < v.n; i++)
        clock_logfit_add(lf, &v.p[i]);
    assert_int_equal(clock_logfit_run(lf, err), BASE_OK);
    clock_logfit_stats_t st;
    clock_logfit_get_stats(lf, &st);
    assert_true(st.steps >= 1);
    nf = clock_logfit_nodes(lf, &nn);
    assert_int_equal(clock_eval_nodes(&truth, nf, nn, &ev, err), BASE_OK);
    assert_true(ev.unaligned >= 1);
    if (ev.off_max > 1000)
        fail_msg("step: an aligned window is %.0f ns off", ev.off_max);
    clock_logfit_destroy(&lf);
    clock_truth_free(&truth);
    free(v.p);
}

/* Node `node` stepped by s ns once its clock read c0: every stamp it took from then on. */
static void step_stamps(clock_probe_t *p, size_t n, uint32_t node, int64_t c0, int64_t s)
{
    for (size_t i = 0; i < n; i++) {
        for (int j = 0; j < 2; j++) {
            if (p[i].src == node && p[i].tx[j] >= c0)
                p[i].tx[j] += s;
            if (p[i].dst == node && p[i].rx_ok[j] && p[i].rx[j] >= c0)
                p[i].rx[j] += s;
        }
    }
}

/* Fitted as dpclock fit does, or causally as a live master does. */
static clock_logfit_t *fit_probes_opt(const clock_probe_t *p, size_t n, bool causal)
{
    clock_logfit_opts_t lo;
    clock_logfit_opts_default(&lo);
    lo.causal = causal;
    clock_logfit_t *lf = clock_logfit_new(&lo);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(clock_logfit_add(lf, &p[i]), BASE_OK);
    char err[BASE_ERRLEN];
    assert_int_equal(clock_logfit_run(lf, err), BASE_OK);
    return lf;
}

static clock_logfit_t *fit_probes(const clock_probe_t *p, size_t n)
{
    return fit_probes_opt(p, n, false);
}

/* rx − tx of a received packet of a simulated probe, less the clocks' true difference. */
static double sim_delay(clock_sim_t *const *sims, const clock_probe_t *p, int i)
{
    int64_t send = clock_sim_invert(sims[p->src], p->tx[i]);
    return (double)(p->rx[i] - clock_sim_apply(sims[p->dst], send));
}

/*
 * The noiseless twin of a run (what the bench measures the paths' floor
 * and the estimators' own errors with) is the same run: the same probes,
 * losses and slow spells, every delay its path's minimum, nothing else.
 */
static void test_simnet_noiseless_twin(void **state)
{
    (void)state;
    const char *scen[] = {"busy", "slowhost"};
    for (size_t k = 0; k < 2; k++) {
        clock_simnet_opts_t so;
        clock_simnet_opts_default(&so);
        so.nodes = 4;
        so.seconds = 6;
        so.seed = 1;
        pvec_t noisy = {0}, clean = {0};
        clock_truth_t truth, truth2;
        char err[BASE_ERRLEN];
        const clock_scenario_t *sc = clock_scenario_find(scen[k]);
        assert_int_equal(clock_simnet_run(sc, &so, collect, &noisy, &truth, err), BASE_OK);
        so.noiseless = true;
        assert_int_equal(clock_simnet_run(sc, &so, collect, &clean, &truth2, err), BASE_OK);
        assert_int_equal(noisy.n, clean.n);
        assert_int_equal(truth.n_links, truth2.n_links);
        clock_sim_t *sims[4];
        for (int i = 0; i < 4; i++)
            sims[i] = clock_sim_new(&truth.nodes[i].p);
        size_t received = 0, far = 0, spread = 0, both = 0, apart = 0, in_spell = 0;
        for (size_t j = 0; j < noisy.n; j++) {
            const clock_probe_t *a = &noisy.p[j], *b = &clean.p[j];
            assert_true(a->src == b->src && a->dst == b->dst && a->seq == b->seq);
            double dmin = NAN;
            for (size_t l = 0; l < truth.n_links; l++) {
                const clock_simnet_link_t *L = &truth.links[l];
                if (L->a == a->src && L->b == a->dst)
                    dmin = L->dmin_ab_ns;
                else if (L->b == a->src && L->a == a->dst)
                    dmin = L->dmin_ba_ns;
            }
            assert_true(isfinite(dmin));
            if (b->rx_ok[0] && b->rx_ok[1]) {
                /* A pair's two packets, 100 us apart, meet the same spell: no jitter between. */
                both++;
                apart += fabs(sim_delay(sims, b, 0) - sim_delay(sims, b, 1)) > 3;
            }
            for (int i = 0; i < 2; i++) {
                assert_int_equal(a->rx_ok[i], b->rx_ok[i]);
                if (!a->rx_ok[i])
                    continue;
                received++;
                double dc = sim_delay(sims, b, i), dn = sim_delay(sims, a, i);
                if (k == 0) {
                    /* busy: no slow host, so the twin's delay is the path's minimum. */
                    if (fabs(dc - dmin) > 3)
                        fail_msg("busy twin: delay %.1f ns on a %.1f ns path", dc, dmin);
                    spread += dn - dmin > 1000;
                } else {
                    /* slowhost: the same spells, so only noise and queuing between them. */
                    far += dn - dc < -300;
                    in_spell += dc - dmin > 3;
                    assert_true(dc >= dmin - 3);
                }
            }
        }
        assert_true(received > 30000);
        if (apart > both / 1000)
            fail_msg("%s twin: %zu of %zu pairs' packets delayed apart", scen[k], apart, both);
        if (k == 0 && spread < received / 20)
            fail_msg("busy: only %zu of %zu packets queued over 1 us", spread, received);
        if (k == 1 && in_spell < received / 10)
            fail_msg("slowhost: only %zu of %zu packets in a slow spell", in_spell, received);
        if (k == 1 && far > received / 1000)
            fail_msg("slowhost twin: %zu of %zu packets off the noisy run's spells", far, received);
        for (int i = 0; i < 4; i++)
            clock_sim_destroy(&sims[i]);
        clock_truth_free(&truth);
        clock_truth_free(&truth2);
        free(noisy.p);
        free(clean.p);
    }
}

/* Node fits against other fits: their map difference over the fit's range. */
static double vs_one(const clock_node_fit_t *a, const clock_node_fit_t *b, double *anc,
                     double *drift)
{
    clock_eval_acc_t *acc = clock_eval_acc_new();
    clock_eval_acc_nodes_vs(acc, a, 1, b, 1);
    clock_eval_t ev;
    char err[BASE_ERRLEN];
    assert_int_equal(clock_eval_acc_result(acc, &ev, err), BASE_OK);
    assert_int_equal(ev.n, 1);
    clock_eval_acc_destroy(&acc);
    *anc = ev.anc_p99;
    *drift = ev.drift_p99;
    return ev.off_max;
}

static void test_eval_nodes_vs(void **state)
{
    (void)state;
    clock_node_fit_t a[4], b[4];
    for (int i = 0; i < 4; i++) {
        clock_node_fit_init(&a[i], 7, (uint32_t)i, 0);
        a[i].aligned = true;
        a[i].anchor_ns = 1800000000000000000LL;
        a[i].from_ns = a[i].anchor_ns - 1000000000;
        a[i].to_ns = a[i].anchor_ns + 1000000000;
        a[i].offset_ns = 1000.0 * i;
        a[i].drift_ppb = 500;
        a[i].uncertainty_ns = 10;
        b[i] = a[i];
    }
    double anc, drift;
    /* 4 ns off throughout. */
    b[1].offset_ns += 4;
    assert_true(fabs(vs_one(&a[1], &b[1], &anc, &drift) - 4) < 1e-6);
    assert_true(fabs(anc - 4) < 1e-6 && drift < 1e-9);
    /* 3 ppb apart: 3 ns at either end of the ±1 s range, nothing at the anchor. */
    b[2].drift_ppb += 3;
    assert_true(fabs(vs_one(&a[2], &b[2], &anc, &drift) - 3) < 1e-6);
    assert_true(anc < 1e-6 && fabs(drift - 3) < 1e-9);
    /* The same line anchored 0.5 s later (250 ns on at 500 ppb): no difference. */
    b[3].anchor_ns += 500000000;
    b[3].offset_ns += 250;
    assert_true(vs_one(&a[3], &b[3], &anc, &drift) < 1e-6);
    assert_true(anc < 1e-6);

    /* Several at once, the base in another order: each finds its own. */
    clock_node_fit_t rb[4] = {b[3], b[1], b[0], b[2]};
    clock_eval_acc_t *acc = clock_eval_acc_new();
    clock_eval_acc_nodes_vs(acc, a, 4, rb, 4);
    clock_eval_t ev;
    char err[BASE_ERRLEN];
    assert_int_equal(clock_eval_acc_result(acc, &ev, err), BASE_OK);
    assert_int_equal(ev.n, 3); /* the reference's own fit is not counted */
    assert_true(fabs(ev.off_max - 4) < 1e-6);
    clock_eval_acc_destroy(&acc);

    /* Nothing to compare with: skipped or unaligned, never compared with nothing. */
    acc = clock_eval_acc_new();
    b[1].window = 8;
    b[2].aligned = false;
    a[3].aligned = false;
    clock_eval_acc_nodes_vs(acc, a, 4, b, 4);
    assert_int_equal(clock_eval_acc_result(acc, &ev, err), BASE_ERR);
    assert_int_equal(ev.skipped, 2);
    assert_int_equal(ev.unaligned, 1);
    clock_eval_acc_destroy(&acc);
    acc = clock_eval_acc_new();
    clock_eval_acc_nodes_vs(acc, a, 4, NULL, 0);
    assert_int_equal(clock_eval_acc_result(acc, &ev, err), BASE_ERR);
    assert_int_equal(ev.skipped, 2);
    clock_eval_acc_destroy(&acc);
}

/* A lan log of 4 nodes, 10 s, and node's clock reading at `after_s` into it. */
static void lan4_log(pvec_t *v, clock_truth_t *truth, uint32_t node, double after_s, int64_t *c0,
                     clock_sim_params_t **sp)
{
    clock_simnet_opts_t so;
    clock_simnet_opts_default(&so);
    so.nodes = 4;
    so.seconds = 10;
    so.seed = 1;
    char err[BASE_ERRLEN];
    assert_int_equal(clock_simnet_run(clock_scenario_find("lan"), &so, collect, v, truth, err),
                     BASE_OK);
    *sp = NULL;
    for (size_t i = 0; i < truth->n_nodes; i++)
        if (truth->nodes[i].node == node)
            *sp = &truth->nodes[i].p;
    assert_non_null(*sp);
    clock_sim_t *sim = clock_sim_new(*sp);
    *c0 = clock_sim_apply(sim, truth->start_ns + llround(after_s * 1e9));
    clock_sim_destroy(&sim);
}

/*
 * A node's clock stepped by a second or an hour (a time daemon's step)
 * inside the log.  The coarse pass drew one line per node through the
 * whole log to put probes into windows: across a step of 1 s the stepping
 * node's probes landed in the wrong windows on one side of it (its map
 * 178 ns off at ±67 ns after the step, an edge fit of −2.1e9 ppb, nodes
 * that never stepped unaligned in a window past the log's end), and at 5 s
 * or an hour the step was never reported and the stepping node was
 * unaligned in every window after it.  Now: the same windows as without
 * the step, only the step's window of the stepping node unaligned, the
 * other nodes as before, the stepping node's maps after the step those of
 * the log without it moved by the step.  A step back is checked against
 * the log without it only: a clock stepped back reads the same times
 * twice, which the truth's inverse cannot tell apart.
 */
static void test_logfit_large_step(void **state)
{
    (void)state;
    pvec_t v = {0};
    clock_truth_t truth;
    const uint32_t node = 3;
    clock_sim_params_t *sp;
    int64_t c0;
    /* The step where the sim's step scenario puts it; its truth written the same way. */
    lan4_log(&v, &truth, node, 5.377, &c0, &sp);
    int64_t at = truth.start_ns + 5377000000LL;
    char err[BASE_ERRLEN];

    clock_logfit_t *base = fit_probes(v.p, v.n);
    clock_logfit_stats_t bst;
    clock_logfit_get_stats(base, &bst);
    size_t nb;
    const clock_node_fit_t *bf = clock_logfit_nodes(base, &nb);
    assert_int_equal(bst.clock_jumps, 0);

    clock_probe_t *p = malloc(v.n * sizeof *p);
    assert_non_null(p);
    const int64_t steps[] = {1000000000LL, 3600000000000LL, -1000000000LL};
    for (size_t k = 0; k < 3; k++) {
        int64_t s = steps[k];
        memcpy(p, v.p, v.n * sizeof *p);
        step_stamps(p, v.n, node, c0, s);
        clock_logfit_t *lf = fit_probes(p, v.n);
        clock_logfit_stats_t st;
        clock_logfit_get_stats(lf, &st);
        size_t nn;
        const clock_node_fit_t *nf = clock_logfit_nodes(lf, &nn);
        /* No window beyond the log's: the same windows, node by node. */
        assert_int_equal(st.windows, bst.windows);
        assert_int_equal(nn, nb);
        assert_int_equal(st.edge_fit_errors, bst.edge_fit_errors);
        int64_t step_win = INT64_MIN;
        for (size_t i = 0; i < nn; i++) {
            assert_int_equal(nf[i].window, bf[i].window);
            assert_int_equal(nf[i].node, bf[i].node);
            if (nf[i].node == node && !nf[i].aligned) {
                assert_true(step_win == INT64_MIN); /* one window only */
                step_win = nf[i].window;
                continue;
            }
            if (!(nf[i].aligned && bf[i].aligned))
                fail_msg("step %lld: node %u unaligned in window %lld", (long long)s, nf[i].node,
                         (long long)nf[i].window);
            /* Offsets are reference − node: the stepping node's drop by the step after it. */
            double want = bf[i].offset_ns;
            if (nf[i].node == node && step_win != INT64_MIN)
                want -= (double)s;
            if (fabs(nf[i].offset_ns - want) > 5)
                fail_msg("step %lld: node %u window %lld is %.1f ns off the unstepped log's",
                         (long long)s, nf[i].node, (long long)nf[i].window, nf[i].offset_ns - want);
        }
        assert_true(step_win != INT64_MIN);
        /* The step is seen: by the coarse pass, and in its window by the stepping node's edges. */
        assert_int_equal(st.clock_jumps, 1);
        assert_true(st.steps >= 3);
        if (s > 0) {
            sp->step_at_ns = at;
            sp->step_ns = (double)s;
            clock_eval_t ev;
            assert_int_equal(clock_eval_nodes(&truth, nf, nn, &ev, err), BASE_OK);
            sp->step_at_ns = 0;
            sp->step_ns = 0;
            if (!(ev.unaligned == 1 && ev.off_max < 20 && ev.coverage >= 0.95))
                fail_msg("step %lld: %llu unaligned, max %.1f ns, coverage %.3f", (long long)s,
                         (unsigned long long)ev.unaligned, ev.off_max, ev.coverage);
        }
        clock_logfit_destroy(&lf);
    }
    free(p);
    clock_logfit_destroy(&base);
    clock_truth_free(&truth);
    free(v.p);
}

/*
 * A clock step half a millisecond before a window's boundary: the window's
 * fits set the few samples after it aside as stamp errors, the next
 * window's start at the new offset, and no edge fit flags it.  A causal
 * fit (as a live master) then took the next three windows of the stepping
 * node for disturbed ones: ±1 ms each, at errors of a few ns.  Now the
 * step is found between the windows (counted), pooling starts again after
 * it, and those maps are those of the log without the step, moved by it,
 * at uncertainties like theirs; nobody else's change.
 */
static void test_logfit_step_between(void **state)
{
    (void)state;
    pvec_t v = {0};
    clock_truth_t truth;
    const uint32_t node = 3;
    const int64_t W = 2000000000LL, S = 1000000;
    clock_sim_params_t *sp;
    int64_t c0;
    lan4_log(&v, &truth, node, 0, &c0, &sp);
    /* Windows are on the reference's clock (node 0), from a multiple of W before the log. */
    clock_sim_params_t *rp = NULL;
    for (size_t i = 0; i < truth.n_nodes; i++)
        if (truth.nodes[i].node == 0)
            rp = &truth.nodes[i].p;
    assert_non_null(rp);
    int64_t bound = (truth.start_ns / W + 4) * W;
    clock_sim_t *rs = clock_sim_new(rp), *ns = clock_sim_new(sp);
    c0 = clock_sim_apply(ns, clock_sim_invert(rs, bound - 500000));
    clock_sim_destroy(&rs);
    clock_sim_destroy(&ns);
    clock_probe_t *p = malloc(v.n * sizeof *p);
    assert_non_null(p);
    memcpy(p, v.p, v.n * sizeof *p);
    step_stamps(p, v.n, node, c0, S);
    clock_logfit_opts_t lo;
    clock_logfit_opts_default(&lo);
    lo.causal = true;
    clock_logfit_t *lf[2];
    for (int k = 0; k < 2; k++) {
        lf[k] = clock_logfit_new(&lo);
        for (size_t i = 0; i < v.n; i++)
            assert_int_equal(clock_logfit_add(lf[k], k ? &p[i] : &v.p[i]), BASE_OK);
        char err[BASE_ERRLEN];
        assert_int_equal(clock_logfit_run(lf[k], err), BASE_OK);
    }
    clock_logfit_stats_t st;
    clock_logfit_get_stats(lf[1], &st);
    assert_int_equal(st.steps, 0);
    assert_int_equal(st.steps_between, 1);
    size_t nb, nn;
    const clock_node_fit_t *bf = clock_logfit_nodes(lf[0], &nb),
                           *nf = clock_logfit_nodes(lf[1], &nn);
    assert_int_equal(nn, nb);
    int64_t step_win = bound / W - truth.start_ns / W; /* the window the boundary opens, roughly */
    size_t after = 0;
    for (size_t i = 0; i < nn; i++) {
        assert_int_equal(nf[i].node, bf[i].node);
        assert_int_equal(nf[i].window, bf[i].window);
        assert_true(nf[i].aligned);
        /* Offsets are reference − node: the stepping node's drop by the step after it. */
        bool moved = nf[i].node == node && nf[i].offset_ns < bf[i].offset_ns - 0.5 * (double)S;
        double want = bf[i].offset_ns - (moved ? (double)S : 0);
        if (fabs(nf[i].offset_ns - want) > 5 || nf[i].uncertainty_ns > 2 * bf[i].uncertainty_ns + 5)
            fail_msg("node %u window %lld: %.1f ± %.1f ns, the log without the step %.1f ± %.1f",
                     nf[i].node, (long long)nf[i].window, nf[i].offset_ns - (moved ? -S : 0),
                     nf[i].uncertainty_ns, bf[i].offset_ns, bf[i].uncertainty_ns);
        if (nf[i].node == node && after > 0 && !moved)
            fail_msg("node %u window %lld: back before the step after it", node,
                     (long long)nf[i].window);
        after += moved;
    }
    /* The windows from the boundary on, and only they, moved. */
    if (after == 0 || after > 3)
        fail_msg("%zu windows of node %u moved by the step (it opens window ~%lld)", after, node,
                 (long long)step_win);
    clock_logfit_destroy(&lf[0]);
    clock_logfit_destroy(&lf[1]);
    clock_truth_free(&truth);
    free(p);
    free(v.p);
}

/*
 * The reference's clock stepped (node 0, the default reference).  Windows
 * are on its clock, so the one it leaves off in holds no more of its
 * time after the step and the one it reads on in none before: every
 * other node's map there held on one side of the step only, and with the
 * rough maps' pieces each other node came out a whole step off there at
 * a claimed ~10 ns, unflagged (the step at 4.3 s leaves off in window 2
 * and reads on in window 3).  Now every other node is unaligned in the
 * windows the step touches, every map that is aligned is right, and the
 * step counts once (it showed in the rough map of each of the 3 others).
 */
static void test_logfit_ref_step(void **state)
{
    (void)state;
    const double at_s[] = {4.3, 5.1};
    const int64_t steps[] = {1000000000LL, 3600000000000LL, -1000000000LL};
    for (size_t a = 0; a < 2; a++) {
        for (size_t k = 0; k < 3; k++) {
            pvec_t v = {0};
            clock_truth_t truth;
            clock_sim_params_t *sp;
            int64_t c0, s = steps[k];
            lan4_log(&v, &truth, 0, at_s[a], &c0, &sp);
            step_stamps(v.p, v.n, 0, c0, s);
            clock_logfit_t *lf = fit_probes(v.p, v.n);
            assert_int_equal(clock_logfit_ref(lf), 0);
            clock_logfit_stats_t st;
            clock_logfit_get_stats(lf, &st);
            assert_int_equal(st.clock_jumps, 1);
            assert_int_equal(st.coarse_capped, 0);
            size_t nn;
            const clock_node_fit_t *nf = clock_logfit_nodes(lf, &nn);
            /* A window where every other node is unaligned: the step's. */
            size_t allout = 0;
            for (size_t i = 0; i + 4 <= nn; i += 4) {
                assert_int_equal(nf[i].node, 0);
                allout += !nf[i + 1].aligned && !nf[i + 2].aligned && !nf[i + 3].aligned;
            }
            if (!(allout >= 1 && allout <= 3))
                fail_msg("step %lld at %.1f s: %zu windows without the others", (long long)s,
                         at_s[a], allout);
            if (s > 0) { /* (a clock stepped back: the truth's inverse cannot tell its two times) */
                sp->step_at_ns = truth.start_ns + (int64_t)(at_s[a] * 1e9);
                sp->step_ns = (double)s;
                clock_eval_t ev;
                char err[BASE_ERRLEN];
                assert_int_equal(clock_eval_nodes(&truth, nf, nn, &ev, err), BASE_OK);
                if (!(ev.off_max < 20 && ev.coverage >= 0.95))
                    fail_msg("step %lld at %.1f s: max %.1f ns, coverage %.3f", (long long)s,
                             at_s[a], ev.off_max, ev.coverage);
            }
            /*
             * The reference's edges say so where they fit, and, stepped
             * forward, where: its first reading after the step, also in the
             * window its clock leaves off in when the step crosses a window
             * boundary (held to that window's last sample, it was the step
             * off).
             */
            size_t ne, flagged = 0;
            const clock_edge_fit_t *ef = clock_logfit_edges(lf, &ne);
            for (size_t i = 0; i < ne; i++) {
                if (!ef[i].step || ef[i].src != 0 || !isfinite(ef[i].step_ns))
                    continue;
                flagged += fabs(ef[i].step_ns + (double)s) < 1e6;
                double at = clk_diff(ef[i].step_at_ns, c0 + s);
                if (s > 0 && !(at >= 0 && at < 1e7))
                    fail_msg("step %lld at %.1f s: placed %.0f ns from the first reading after it",
                             (long long)s, at_s[a], at);
            }
            assert_true(flagged >= 1);
            clock_logfit_destroy(&lf);
            clock_truth_free(&truth);
            free(v.p);
        }
    }
}

/*
 * The smaller id of an edge (its src, whose clock the edge fit maps from)
 * stepped: node 1, on edges 1-2 and 1-3.  The window's two pieces were
 * both read at one reading of node 1's clock, a step apart in time, so the
 * step's size was off by the edge's drift times the step (10^8 ns at an
 * hour); stepped back by more than the log on either side, node 1's clock
 * reads the stretch after the step first, and the pieces came out in that
 * order: a step of -1 h said +1 h.  Now each edge's step is its offset's
 * (dst − src) move at one instant, put where the later piece starts on
 * src's clock; the step counts once.
 */
static void test_logfit_src_step(void **state)
{
    (void)state;
    const int64_t steps[] = {1000000000LL, -1000000000LL, 3600000000000LL, -3600000000000LL};
    for (size_t k = 0; k < 4; k++) {
        pvec_t v = {0};
        clock_truth_t truth;
        clock_sim_params_t *sp;
        int64_t c0, s = steps[k];
        lan4_log(&v, &truth, 1, 5.377, &c0, &sp);
        step_stamps(v.p, v.n, 1, c0, s);
        clock_logfit_t *lf = fit_probes(v.p, v.n);
        clock_logfit_stats_t st;
        clock_logfit_get_stats(lf, &st);
        assert_int_equal(st.clock_jumps, 1);
        size_t ne, seen = 0;
        const clock_edge_fit_t *ef = clock_logfit_edges(lf, &ne);
        for (size_t i = 0; i < ne; i++) {
            if (!ef[i].step)
                continue;
            assert_true(ef[i].src == 1 || ef[i].dst == 1);
            /* dst − src: down by node 1's step where it is src, up where dst. */
            double want = ef[i].src == 1 ? -(double)s : (double)s;
            int64_t where = ef[i].src == 1 ? c0 + s : c0; /* on src's clock, ms from node 1's */
            if (!(fabs(ef[i].step_ns - want) < 1e4 && llabs(ef[i].step_at_ns - where) < 100000000))
                fail_msg("step %lld: edge %u-%u says %.0f ns at %lld (want %.0f near %lld)",
                         (long long)s, ef[i].src, ef[i].dst, ef[i].step_ns,
                         (long long)ef[i].step_at_ns, want, (long long)where);
            seen += ef[i].src == 1;
        }
        assert_true(seen >= 2); /* 1-2 and 1-3 */
        clock_logfit_destroy(&lf);
        clock_truth_free(&truth);
        free(v.p);
    }
}

/*
 * A clock stepped over and over (a sawtooth of ±50 ms every 100 ms): each
 * edge with more than 64 jumps is one line, as before steps were looked
 * for, and said so.  Pieces cost time and memory that grow with their
 * square (5000 steps took a minute and half a gigabyte), which the cap
 * keeps to a bound; fewer steps keep their pieces.
 */
static void test_logfit_step_cap(void **state)
{
    (void)state;
    const int nsteps[] = {20, 70};
    for (size_t k = 0; k < 2; k++) {
        pvec_t v = {0};
        clock_truth_t truth;
        clock_sim_params_t *sp;
        int64_t c0;
        lan4_log(&v, &truth, 3, 1.5, &c0, &sp);
        const int64_t period = 100000000LL;
        for (size_t i = 0; i < v.n; i++) {
            clock_probe_t *p = &v.p[i];
            for (int j = 0; j < 2; j++) {
                int64_t *x =
                    p->src == 3 ? &p->tx[j] : (p->dst == 3 && p->rx_ok[j] ? &p->rx[j] : NULL);
                if (x == NULL || *x < c0)
                    continue;
                int64_t per = (*x - c0) / period;
                if (per < nsteps[k] && per % 2 == 0)
                    *x += 50000000LL;
            }
        }
        clock_logfit_t *lf = fit_probes(v.p, v.n);
        clock_logfit_stats_t st;
        clock_logfit_get_stats(lf, &st);
        if (nsteps[k] > 64) {
            assert_int_equal(st.coarse_capped, 3); /* node 3's three edges */
            assert_int_equal(st.clock_jumps, 0);
        } else {
            assert_int_equal(st.coarse_capped, 0);
            assert_true(st.clock_jumps > 0 && st.clock_jumps <= (uint64_t)nsteps[k]);
        }
        clock_logfit_destroy(&lf);
        clock_truth_free(&truth);
        free(v.p);
    }
}

/* Half of how far apart the log's range lets two clocks be, less 20 s. */
#define FAR_APART_NS ((INT64_C(1) << 62) - INT64_C(20000000000))

/* Every stamp of `node`'s clock moved by `moved`, every other node's by `rest`. */
static void shift_clocks(clock_probe_t *p, size_t n, uint32_t node, int64_t moved, int64_t rest)
{
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < 2; j++) {
            p[i].tx[j] += p[i].src == node ? moved : rest;
            p[i].rx[j] += p[i].dst == node ? moved : rest;
        }
}

/*
 * Clocks decades apart: node 1 reading 1970 against the others' now, and
 * clocks as far apart as the log's range allows (node 0, the reference,
 * 2^62 − 20 s below zero, the others as far above it).  Offsets that size
 * are doubles 256 and 1024 ns apart.  Every map comes out aligned and,
 * carried back, agrees with the unshifted log's within its uncertainty,
 * which now says what the doubles cost (node 1's maps were 1.99× their
 * bound off, 1.60× live).  The rough maps' offsets had been clamped to
 * ±9.2e18 before adding: at 2^63 apart node 0's probes landed windows away
 * from the others' and every edge of it was one-sided.
 */
static void test_logfit_clocks_far_apart(void **state)
{
    (void)state;
    pvec_t v = {0};
    clock_truth_t truth;
    clock_sim_params_t *sp;
    int64_t c0;
    lan4_log(&v, &truth, 0, 0, &c0, &sp);
    const int64_t E = FAR_APART_NS;
    /* The node moved, its shift and the others'; the second case fitted as a master does. */
    const struct {
        uint32_t node;
        int64_t moved, rest;
        bool live;
        const char *what;
    } cs[3] = {{1, -c0 + INT64_C(1000000000), 0, false, "node 1 at 1970"},
               {1, -c0 + INT64_C(1000000000), 0, true, "node 1 at 1970, live"},
               {0, -c0 - E, -c0 + E, false, "clocks 2^63 - 40 s apart"}};
    clock_probe_t *p = malloc(v.n * sizeof *p);
    assert_non_null(p);
    for (int c = 0; c < 3; c++) {
        clock_logfit_t *base = fit_probes_opt(v.p, v.n, cs[c].live);
        size_t nb;
        const clock_node_fit_t *bf = clock_logfit_nodes(base, &nb);
        memcpy(p, v.p, v.n * sizeof *p);
        shift_clocks(p, v.n, cs[c].node, cs[c].moved, cs[c].rest);
        clock_logfit_t *lf = fit_probes_opt(p, v.n, cs[c].live);
        size_t nn;
        const clock_node_fit_t *nf = clock_logfit_nodes(lf, &nn);
        assert_int_equal(nn, nb);
        int64_t sref = cs[c].node == 0 ? cs[c].moved : cs[c].rest;
        double worst = 0, worst_u = 0;
        for (size_t i = 0; i < nn; i++) {
            if (!nf[i].aligned || !bf[i].aligned)
                fail_msg("%s: node %u window %lld unaligned", cs[c].what, nf[i].node,
                         (long long)nf[i].window);
            if (nf[i].node == 0)
                continue;
            /* One instant: the unshifted map's anchor, read on the shifted clocks. */
            int64_t x = bf[i].anchor_ns;
            int64_t xs = x + (nf[i].node == cs[c].node ? cs[c].moved : cs[c].rest);
            double err = (double)(clock_node_map(&nf[i], xs) - sref - clock_node_map(&bf[i], x));
            double r = fabs(err) / nf[i].uncertainty_ns;
            worst = fabs(err) > worst ? fabs(err) : worst;
            worst_u = r > worst_u ? r : worst_u;
        }
        print_message("%s: maps within %.0f ns, %.2f of their uncertainty\n", cs[c].what, worst,
                      worst_u);
        assert_true(worst_u <= 1.0);
        clock_logfit_destroy(&lf);
        clock_logfit_destroy(&base);
    }
    free(p);
    clock_truth_free(&truth);
    free(v.p);
}

/*
 * A stray stamp of a node whose clock is 2^63 − 40 s from the reference's,
 * in range on its own clock, lands beyond int64 on the reference's: it
 * made a window of its own whose start overflowed (7 windows instead of
 * 6; saturated, its node fits were written with from_ns at INT64_MIN,
 * which no reader takes).  It is set aside now and counted as bad; every
 * map is as without it, and every line written reads back.
 */
static void test_logfit_stray_beyond_range(void **state)
{
    (void)state;
    pvec_t v = {0};
    clock_truth_t truth;
    clock_sim_params_t *sp;
    int64_t c0;
    lan4_log(&v, &truth, 0, 0, &c0, &sp);
    const int64_t E = FAR_APART_NS;
    shift_clocks(v.p, v.n, 0, -c0 - E, -c0 + E);
    clock_logfit_t *base = fit_probes(v.p, v.n);
    size_t k = 0;
    while (k < v.n && v.p[k].src != 1)
        k++;
    assert_true(k < v.n);
    clock_probe_t stray = v.p[k];
    stray.seq = UINT64_MAX;
    stray.tx[0] = -E;
    stray.tx[1] = -E + 20000;
    collect(&v, &stray);
    clock_logfit_t *lf = fit_probes(v.p, v.n);
    clock_logfit_stats_t sb, st;
    clock_logfit_get_stats(base, &sb);
    clock_logfit_get_stats(lf, &st);
    assert_int_equal(st.bad, sb.bad + 1);
    assert_int_equal(st.windows, sb.windows);
    size_t nb, nn;
    const clock_node_fit_t *bf = clock_logfit_nodes(base, &nb);
    const clock_node_fit_t *nf = clock_logfit_nodes(lf, &nn);
    assert_int_equal(nn, nb);
    char line[4096];
    for (size_t i = 0; i < nn; i++) {
        assert_int_equal(nf[i].aligned, bf[i].aligned);
        assert_true(nf[i].offset_ns == bf[i].offset_ns);
        clock_record_t r;
        size_t len = clock_json_format_node_fit(&nf[i], line, sizeof line);
        assert_int_equal(clock_json_decode_line(line, len, &r, NULL), BASE_DEC_OK);
    }
    clock_logfit_destroy(&lf);
    clock_logfit_destroy(&base);
    clock_truth_free(&truth);
    free(v.p);
}

/*
 * A window the solver refuses is refused alone.  One window of a lan log
 * also holds a star of CLOCK_SOLVE_MAX_NODES leaves around node 0, more
 * nodes than one solve takes: that window's nodes come out unaligned,
 * counted and with the solver's reason, and every other window is solved
 * as before.  (The run failed and wrote nothing.)  A log of that window
 * alone has nothing solved, and says so.
 */
static void star_probes(pvec_t *v, int64_t t0)
{
    const int64_t gap = 20000, d = 5000;
    for (uint32_t leaf = 1000; leaf < 1000 + CLOCK_SOLVE_MAX_NODES; leaf++) {
        for (int k = 0; k < 8; k++) {
            clock_probe_t p = {.seq = (uint64_t)k, .rx_ok = {true, true}};
            int64_t t = t0 + (int64_t)(leaf - 1000) * 20 + (int64_t)k * 40000000;
            p.src = k % 2 ? leaf : 0;
            p.dst = k % 2 ? 0 : leaf;
            p.tx[0] = t;
            p.tx[1] = t + gap;
            p.rx[0] = t + d;
            p.rx[1] = t + gap + d;
            collect(v, &p);
        }
    }
}

static void test_logfit_unsolved_window(void **state)
{
    (void)state;
    pvec_t v = {0};
    clock_truth_t truth;
    clock_sim_params_t *sp;
    int64_t c0;
    lan4_log(&v, &truth, 0, 4.5, &c0, &sp);
    clock_logfit_t *base = fit_probes(v.p, v.n);
    size_t nb;
    const clock_node_fit_t *bf = clock_logfit_nodes(base, &nb);
    clock_logfit_stats_t bst;
    clock_logfit_get_stats(base, &bst);
    assert_int_equal(bst.windows_unsolved, 0);
    assert_null(clock_logfit_unsolved(base));

    size_t nlan = v.n;
    star_probes(&v, c0);
    clock_logfit_t *lf = fit_probes(v.p, v.n);
    clock_logfit_stats_t st;
    clock_logfit_get_stats(lf, &st);
    assert_int_equal(st.windows, bst.windows);
    assert_int_equal(st.windows_unsolved, 1);
    const clock_logfit_failure_t *u = clock_logfit_unsolved(lf);
    assert_non_null(u);
    print_message("unsolved: window %lld: %s\n", (long long)u->window, u->why);
    assert_non_null(strstr(u->why, "nodes in one window"));
    size_t nn;
    const clock_node_fit_t *nf = clock_logfit_nodes(lf, &nn);
    assert_int_equal(nn, st.windows * (4 + CLOCK_SOLVE_MAX_NODES));
    size_t lan_aligned = 0, bi = 0;
    for (size_t i = 0; i < nn; i++) {
        if (nf[i].window == u->window) {
            if (nf[i].aligned && nf[i].node != 0)
                fail_msg("node %u aligned in the unsolved window", nf[i].node);
            continue;
        }
        if (nf[i].node >= 4) {
            assert_false(nf[i].aligned); /* a leaf has probes in the unsolved window only */
            continue;
        }
        while (bi < nb && !(bf[bi].window == nf[i].window && bf[bi].node == nf[i].node))
            bi++;
        assert_true(bi < nb);
        if (bf[bi].aligned != nf[i].aligned)
            fail_msg("node %u window %lld: aligned %d, without the star %d", nf[i].node,
                     (long long)nf[i].window, nf[i].aligned, bf[bi].aligned);
        lan_aligned += nf[i].aligned;
    }
    /* The other windows' lan nodes: all solved (pooling around the gap may move them a little). */
    assert_true(lan_aligned >= 4 * (bst.windows - 1));
    clock_logfit_destroy(&lf);

    /* The star alone: nothing solved is an error, with the reason. */
    clock_logfit_opts_t lo;
    clock_logfit_opts_default(&lo);
    lf = clock_logfit_new(&lo);
    for (size_t i = nlan; i < v.n; i++)
        assert_int_equal(clock_logfit_add(lf, &v.p[i]), BASE_OK);
    char err[BASE_ERRLEN];
    assert_int_equal(clock_logfit_run(lf, err), BASE_ERR);
    print_message("star alone: %s\n", err);
    assert_non_null(strstr(err, "no window could be solved"));
    assert_non_null(strstr(err, "nodes in one window"));
    clock_logfit_destroy(&lf);
    clock_logfit_destroy(&base);
    clock_truth_free(&truth);
    free(v.p);
}

static void test_logfit_refusals(void **state)
{
    (void)state;
    clock_logfit_opts_t lo;
    clock_logfit_opts_default(&lo);
    lo.max_probes = 3;
    lo.ref_set = true;
    lo.ref = 77;
    clock_logfit_t *lf = clock_logfit_new(&lo);
    char err[BASE_ERRLEN];
    assert_int_equal(clock_logfit_run(lf, err), BASE_ERR);          /* nothing to fit */
    assert_int_equal(clock_logfit_resolve(lf, &lo, err), BASE_ERR); /* no fits to solve again */
    assert_non_null(strstr(err, "no edge fits"));
    clock_probe_t p = probe(1, 2, T0, 100000, 5000, 5000);
    for (int i = 0; i < 5; i++)
        clock_logfit_add(lf, &p);
    clock_logfit_stats_t st;
    clock_logfit_get_stats(lf, &st);
    assert_int_equal(st.probes, 3);
    assert_int_equal(st.probes_dropped, 2);
    assert_int_equal(clock_logfit_run(lf, err), BASE_ERR);
    assert_non_null(strstr(err, "77"));
    clock_logfit_destroy(&lf);
    assert_null(lf);
}

/*
 * What a log's fit could not do is said: the first failed edge windows
 * with their reasons (dpclock fit prints them), and the samples the edge
 * fits set aside are counted.  Edge 1-2 fits with one wild probe among
 * its own (set aside); edge 1-3 has 2 probes one way.
 */
static void test_logfit_failure_reasons(void **state)
{
    (void)state;
    clock_logfit_t *lf = clock_logfit_new(NULL);
    for (int i = 0; i < 100; i++) {
        int64_t tx = T0 + 100000000LL + 8000000LL * i;
        clock_probe_t p = probe(1, 2, tx, 100000, 5000 + i % 7, 5000 + i % 7);
        p.seq = (uint64_t)i;
        assert_int_equal(clock_logfit_add(lf, &p), BASE_OK);
        p = probe(2, 1, tx + 1000000, 100000, 6000 + i % 5, 6000 + i % 5);
        assert_int_equal(clock_logfit_add(lf, &p), BASE_OK);
        p = probe(3, 1, tx + 2000000, 100000, 7000 + i % 3, 7000 + i % 3);
        assert_int_equal(clock_logfit_add(lf, &p), BASE_OK);
        if (i % 50 == 7) {
            p = probe(1, 3, tx + 3000000, 100000, 7000, 7000);
            assert_int_equal(clock_logfit_add(lf, &p), BASE_OK);
        }
    }
    /* Both receive stamps 46 years early: its gap is pure. */
    clock_probe_t w = probe(1, 2, T0 + 500300000LL, 100000, 5000, 5000);
    w.rx[0] -= INT64_C(4000000000000000000);
    w.rx[1] -= INT64_C(4000000000000000000);
    assert_int_equal(clock_logfit_add(lf, &w), BASE_OK);
    char err[BASE_ERRLEN];
    assert_int_equal(clock_logfit_run(lf, err), BASE_OK);
    clock_logfit_stats_t st;
    clock_logfit_get_stats(lf, &st);
    assert_int_equal(st.edge_fits, 1);
    assert_int_equal(st.edge_fit_errors, 1);
    assert_int_equal(st.set_aside, 1);
    size_t ne, nfail;
    const clock_edge_fit_t *ef = clock_logfit_edges(lf, &ne);
    assert_int_equal(ne, 1);
    assert_true(ef[0].src == 1 && ef[0].dst == 2 && ef[0].set_aside == 1 && ef[0].n_fwd == 100);
    const clock_logfit_failure_t *fl = clock_logfit_failures(lf, &nfail);
    assert_int_equal(nfail, 1);
    assert_true(fl[0].src == 1 && fl[0].dst == 3 && fl[0].window == ef[0].window);
    if (!strstr(fl[0].why, "too few pure samples: 2 forward, 100 reverse"))
        fail_msg("reason: %s", fl[0].why);
    clock_logfit_destroy(&lf);
}

/* The map filter's resolver in the test: node 1 is 1000 ns ahead on
 * realtime, 5 ns uncertain; boottime reads 100 s behind realtime, flagged
 * extrapolated; other nodes are unknown. */
static int fake_map(void *ctx, uint32_t node, uint32_t domain, int64_t local,
                    clock_conv_result_t *out, char *err)
{
    (void)ctx;
    if (node != 1)
        return base_err(err, "node %u is not known", node);
    out->t = local - 1000 + (domain == CLOCK_DOMAIN_BOOT ? 100000000000LL : 0);
    out->uncertainty_ns = 5;
    out->flags = domain == CLOCK_DOMAIN_BOOT ? CLOCK_CONV_EXTRAPOLATED : 0;
    return BASE_OK;
}

static void test_map_lines(void **state)
{
    (void)state;
    const char *in = "5000\n"
                     "# a comment\n"
                     "\n"
                     "1 boottime 7000\n"
                     "2 realtime 5\n"
                     "{\"t_ns\": 9000, \"tag\": \"x\"}\n"
                     "{\"node\": 1, \"clock\": \"boottime\", \"t_ns\": 1.5e3}\n"
                     "{\"node\": 1, \"clock\": \"sundial\", \"t_ns\": 1}\n"
                     "{not json\n"
                     "1 realtime soon\n"
                     "1 2 3 4\n";
    FILE *fin = fmemopen((void *)in, strlen(in), "r");
    char *buf = NULL;
    size_t len = 0;
    FILE *fout = open_memstream(&buf, &len);
    struct clock_map_opts o = {
        .map = fake_map, .have_node = true, .node = 1, .domain = CLOCK_DOMAIN_PROBE};
    struct clock_map_stats st;
    char err[BASE_ERRLEN];
    assert_int_equal(clock_map_lines(fin, fout, &o, &st, err), BASE_OK);
    fclose(fin);
    fclose(fout);
    const char *want =
        "4000 5.0 -\n"
        "# a comment\n"
        "\n"
        "100000006000 5.0 extrapolated\n"
        "error: node 2 is not known\n"
        "{\"t_ns\":9000,\"tag\":\"x\",\"global_ns\":8000,\"unc_ns\":5.0,\"flags\":[]}\n"
        "{\"node\":1,\"clock\":\"boottime\",\"t_ns\":1.5e3,\"global_ns\":100000000500,"
        "\"unc_ns\":5.0,\"flags\":[\"extrapolated\"]}\n";
    assert_int_equal(strncmp(buf, want, strlen(want)), 0);
    const char *rest = buf + strlen(want);
    /* The refusals, one line each, in order. */
    assert_non_null(strstr(rest, "{\"error\":\"not a clock: sundial"));
    assert_non_null(strstr(rest, "{\"error\":\"invalid JSON"));
    assert_non_null(strstr(rest, "error: not a time in ns: soon"));
    assert_non_null(strstr(rest, "error: expected T or NODE CLOCK T"));
    assert_true(st.lines == 11 && st.mapped == 4 && st.flagged == 2 && st.errors == 5);
    free(buf);

    /* Without defaults a bare time is refused. */
    fin = fmemopen((void *)"5000\n", 5, "r");
    fout = open_memstream(&buf, &len);
    o.have_node = false;
    assert_int_equal(clock_map_lines(fin, fout, &o, &st, err), BASE_OK);
    fclose(fin);
    fclose(fout);
    assert_string_equal(buf, "error: expected NODE CLOCK T (no --node given)\n");
    free(buf);

    uint32_t d;
    char name[16];
    assert_int_equal(clock_domain_parse("gpu3", &d), BASE_OK);
    assert_int_equal(d, CLOCK_DOMAIN_GPU0 + 3);
    assert_string_equal(clock_domain_name(d, name, sizeof name), "gpu3");
    assert_int_equal(clock_domain_parse("boottime", &d), BASE_OK);
    assert_string_equal(clock_domain_name(d, name, sizeof name), "boottime");
    assert_int_equal(clock_domain_parse("gpu", &d), BASE_ERR);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_estimator_table),
        cmocka_unit_test(test_exact_lines),
        cmocka_unit_test(test_queuing_robustness),
        cmocka_unit_test(test_svm_unequal_queuing),
        cmocka_unit_test(test_svm_spread_delays),
        cmocka_unit_test(test_svm_small_window),
        cmocka_unit_test(test_forbidden_zone_outliers),
        cmocka_unit_test(test_drop_extreme),
        cmocka_unit_test(test_hull_overlapping_sides),
        cmocka_unit_test(test_isolated_outlier_is_no_step),
        cmocka_unit_test(test_far_sample_set_aside),
        cmocka_unit_test(test_too_few_and_one_sided),
        cmocka_unit_test(test_uneven_coverage),
        cmocka_unit_test(test_edge_mirror),
        cmocka_unit_test(test_unsorted_points),
        cmocka_unit_test(test_precision_large_magnitudes),
        cmocka_unit_test(test_clk_add_limits),
        cmocka_unit_test(test_purity),
        cmocka_unit_test(test_auto_guard_and_points),
        cmocka_unit_test(test_step_detection),
        cmocka_unit_test(test_step_small),
        cmocka_unit_test(test_step_gross),
        cmocka_unit_test(test_step_gross_none),
        cmocka_unit_test(test_solver_sharp_edges),
        cmocka_unit_test(test_steps_between),
        cmocka_unit_test(test_delay_change),
        cmocka_unit_test(test_delay_change_small_window),
        cmocka_unit_test(test_minrtt_margin_drift),
        cmocka_unit_test(test_minrtt_uncertainty),
        cmocka_unit_test(test_step_small_window),
        cmocka_unit_test(test_envelope_against_dense),
        cmocka_unit_test(test_envelope_plan_is_narrow),
        cmocka_unit_test(test_solver_large_plan),
        cmocka_unit_test(test_solver_ring_variance),
        cmocka_unit_test(test_solver_tree),
        cmocka_unit_test(test_solver_stamp_asymmetry),
        cmocka_unit_test(test_solver_slow_host),
        cmocka_unit_test(test_solver_warm_up),
        cmocka_unit_test(test_history_note_bounds),
        cmocka_unit_test(test_solver_loops_show_asymmetry),
        cmocka_unit_test(test_solver_noise_is_not_asymmetry),
        cmocka_unit_test(test_history_tau_own),
        cmocka_unit_test(test_solver_disagreeing_window),
        cmocka_unit_test(test_history_break_at_unaligned_window),
        cmocka_unit_test(test_history_forget),
        cmocka_unit_test(test_solver_few_loops_widen_persistent),
        cmocka_unit_test(test_solver_sets_detours_aside),
        cmocka_unit_test(test_solver_disconnected_and_steps),
        cmocka_unit_test(test_solver_labels_and_order),
        cmocka_unit_test(test_solver_reference_choice),
        cmocka_unit_test(test_history_many_new_edges),
        cmocka_unit_test(test_history),
        cmocka_unit_test(test_history_persistent_residuals),
        cmocka_unit_test(test_pooling),
        cmocka_unit_test(test_pooling_short_outvote),
        cmocka_unit_test(test_history_track),
        cmocka_unit_test(test_conversion),
        cmocka_unit_test(test_conversion_full_pairs),
        cmocka_unit_test(test_conversion_step),
        cmocka_unit_test(test_conversion_blend_or_join),
        cmocka_unit_test(test_conversion_random_maps),
        cmocka_unit_test(test_conversion_random_chains),
        cmocka_unit_test(test_conversion_reference_step_back),
        cmocka_unit_test(test_conversion_far_clock),
        cmocka_unit_test(test_conversion_extrapolated_round_trip),
        cmocka_unit_test(test_conversion_limits),
        cmocka_unit_test(test_sim_clock),
        cmocka_unit_test(test_json_good),
        cmocka_unit_test(test_json_roundtrip),
        cmocka_unit_test(test_json_malformed),
        cmocka_unit_test(test_line_reader),
        cmocka_unit_test(test_simulate_fit_eval),
        cmocka_unit_test(test_simnet_noiseless_twin),
        cmocka_unit_test(test_eval_nodes_vs),
        cmocka_unit_test(test_logfit_large_step),
        cmocka_unit_test(test_logfit_ref_step),
        cmocka_unit_test(test_logfit_step_between),
        cmocka_unit_test(test_logfit_src_step),
        cmocka_unit_test(test_logfit_step_cap),
        cmocka_unit_test(test_logfit_clocks_far_apart),
        cmocka_unit_test(test_logfit_stray_beyond_range),
        cmocka_unit_test(test_logfit_unsolved_window),
        cmocka_unit_test(test_logfit_refusals),
        cmocka_unit_test(test_logfit_failure_reasons),
        cmocka_unit_test(test_map_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
