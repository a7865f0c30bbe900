/*
 * bench_clock_solve — the master's solve per window as the cluster grows.
 *
 * Each window of each size is what a live master does once window k is in:
 * the first solve (with the history, then fed to it), the slow-host bounds
 * of windows k − 2, k − 4, … noted again, and window k − 1 solved again
 * (refined).  The edge fits are made up from known clocks (offsets up to
 * ±1 ms, drifts up to ±50 ppm, each fit off by its own σ of 1–5 ns), so the
 * bench also says whether the maps are right: p99 offset error and how
 * many lie within their uncertainty.
 *
 *   plan     the agents' probe graph at the default of 4 neighbours: node i
 *            probes i + 1, i + 2, i + 4, i + 8 around the ring of ids
 *            (node/graph.c), the graph a live master solves;
 *   random   a ring plus 3 random partners each (dpclock sim's graphs), whose
 *            factor fills as a dense one does: the baseline, same sizes,
 *            same process.
 *
 * CPU per window is the mean over the windows after the first four (the
 * history warm).  The master keeps at most NODE_MAX_NODES (1024) nodes; the
 * 4096-node plan shows the solver's own scaling.
 *
 * Then the history's edge tracks (what dpclock fit of a large log feeds
 * it): 32768 new edges in one add, sorting between 32768 known ones,
 * against as many that sort after them all (the baseline: nothing moves).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock/clock.h"

#define T0_NS   1821000000000000000LL /* CLOCK_REALTIME-sized */
#define WINDOW  2000000000LL
#define WINDOWS 8
#define WARM    4
#define KEEP    (CLOCK_RENOTE_MAX + 1)

typedef struct {
    double off_ns, drift; /* c_n(t) = t + off + drift·(t − T0) */
} nclock_t;

typedef struct {
    uint64_t s;
} rng_t;

static uint64_t rng_next(rng_t *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double rng_unit(rng_t *r)
{
    return ((double)(rng_next(r) >> 11) + 0.5) / 9007199254740992.0;
}

static double rng_gauss(rng_t *r)
{
    return sqrt(-2.0 * log(rng_unit(r))) * cos(2.0 * M_PI * rng_unit(r));
}

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Clock c's reading at true time t (whole ns: a reading). */
static int64_t node_clock(const nclock_t *c, int64_t t)
{
    return t + (int64_t)llround(c->off_ns + c->drift * (double)(t - T0_NS));
}

/*
 * The true time, in ns after T0 and not rounded, at which clock c reads x;
 * and c's reading at such a time, likewise.  In doubles relative to T0
 * (tens of seconds: well under a ps of rounding), so that the fits and
 * the errors carry no rounding to whole ns.
 */
static double true_at(const nclock_t *c, int64_t x)
{
    return ((double)(x - T0_NS) - c->off_ns) / (1 + c->drift);
}

static double reading_at(const nclock_t *c, double t)
{
    return t + c->off_ns + c->drift * t;
}

/* Unordered pairs of the graph: (src, dst) per edge; returns how many. */
static size_t make_graph(int plan, uint32_t n, rng_t *r, uint32_t (*e)[2])
{
    size_t m = 0;
    if (plan) {
        static const uint32_t off[] = {1, 2, 4, 8};
        for (uint32_t i = 0; i < n; i++)
            for (size_t j = 0; j < sizeof off / sizeof *off; j++)
                if (off[j] < n && 2 * off[j] != n)
                    e[m][0] = i, e[m][1] = (i + off[j]) % n, m++;
        return m;
    }
    uint8_t *adj = calloc((size_t)n * n, 1);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t j = (i + 1) % n;
        if (!adj[(size_t)i * n + j]) {
            adj[(size_t)i * n + j] = adj[(size_t)j * n + i] = 1;
            e[m][0] = i, e[m][1] = j, m++;
        }
        for (int c = 0; c < 3;) {
            uint32_t k = (uint32_t)(rng_next(r) % n);
            if (k == i || adj[(size_t)i * n + k])
                continue;
            adj[(size_t)i * n + k] = adj[(size_t)k * n + i] = 1;
            e[m][0] = i, e[m][1] = k, m++;
            c++;
        }
    }
    free(adj);
    return m;
}

/* Window k's edge fits from the true clocks, each off by its own σ. */
static void make_fits(int64_t k, const nclock_t *nc, uint32_t (*g)[2], size_t ne, const double *sig,
                      rng_t *r, clock_edge_fit_t *e)
{
    int64_t tmid = T0_NS + k * WINDOW + WINDOW / 2;
    for (size_t i = 0; i < ne; i++) {
        const nclock_t *a = &nc[g[i][0]], *b = &nc[g[i][1]];
        clock_edge_fit_t *f = &e[i];
        memset(f, 0, sizeof *f);
        f->window = k;
        f->src = g[i][0];
        f->dst = g[i][1];
        snprintf(f->estimator, sizeof f->estimator, "svm");
        f->anchor_ns = node_clock(a, tmid);
        double at_b = reading_at(b, true_at(a, f->anchor_ns));
        f->offset_ns = at_b - (double)(f->anchor_ns - T0_NS) + sig[i] * rng_gauss(r);
        double sd = 0.5e-9 * sig[i]; /* drift σ: the offset's over about 1 s */
        f->drift_ppb = ((1 + b->drift) / (1 + a->drift) - 1 + sd * rng_gauss(r)) * 1e9;
        f->uncertainty_ns = 3 * sqrt(sig[i] * sig[i] + (sd * 1e9) * (sd * 1e9));
        f->drift_unc_ppb = 3 * sd * 1e9;
        f->n_fwd = f->n_rev = 100;
        f->from_ns = node_clock(a, tmid - WINDOW / 2);
        f->to_ns = node_clock(a, tmid + WINDOW / 2);
        f->margin_ns = 5000 + sig[i] * rng_gauss(r);
        f->model_ns = 0;
        for (int j = 0; j < 3; j++)
            f->misfit_ns[j] = f->misfit_sigma_ns[j] = NAN;
        f->residual_ns = NAN;
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    double ms, p99_ns, covered, entries_per_node;
    int ok;
} result_t;

static result_t run(int plan, uint32_t n, uint64_t seed)
{
    result_t res = {0};
    rng_t r = {seed * 7919 + n + (uint64_t)plan};
    nclock_t *nc = calloc(n, sizeof *nc);
    for (uint32_t i = 1; i < n; i++) {
        nc[i].off_ns = (2 * rng_unit(&r) - 1) * 1e6;
        nc[i].drift = (2 * rng_unit(&r) - 1) * 50e-6;
    }
    size_t cap = (size_t)n * 4 + 1;
    uint32_t(*g)[2] = calloc(cap, sizeof *g);
    size_t ne = make_graph(plan, n, &r, g);
    double *sig = malloc(ne * sizeof *sig);
    for (size_t i = 0; i < ne; i++)
        sig[i] = 1 + 4 * rng_unit(&r);
    clock_edge_fit_t *kept[KEEP] = {0};
    clock_solve_opts_t kso[KEEP];
    clock_history_t *h = clock_history_new(30, n);
    double cpu = 0, *err = malloc((size_t)n * WINDOWS * sizeof *err);
    size_t nerr = 0, inside = 0;
    char msg[BASE_ERRLEN];
    res.ok = 1;
    for (int64_t k = 0; k < WINDOWS && res.ok; k++) {
        clock_edge_fit_t *e = kept[k % KEEP] ? kept[k % KEEP] : malloc(ne * sizeof *e);
        kept[k % KEEP] = e;
        make_fits(k, nc, g, ne, sig, &r, e);
        clock_solve_opts_t so;
        clock_solve_opts_default(&so);
        so.ref = 0;
        so.from_ns = T0_NS + k * WINDOW;
        so.to_ns = so.from_ns + WINDOW;
        so.at_ns = so.from_ns + WINDOW / 2;
        so.history = h;
        kso[k % KEEP] = so;
        clock_node_fit_t *fits = NULL;
        size_t nf = 0;
        clock_solve_stats_t st;
        double t0 = cpu_s();
        if (clock_solve(e, ne, &so, &fits, &nf, &st, msg) != BASE_OK) {
            fprintf(stderr, "bench_clock_solve: %s\n", msg);
            res.ok = 0;
            break;
        }
        clock_history_add(h, fits, nf, e, ne, &st);
        res.entries_per_node = (double)st.factor_entries / (double)n;
        /* Window k − 1 is refined below, which keeps its bounds. */
        int64_t d;
        for (size_t i = 1; (d = clock_history_renote_lag(i)) > 0 && k - d >= 0; i++)
            clock_history_note_bounds(h, kept[(k - d) % KEEP], ne, &kso[(k - d) % KEEP], msg);
        clock_node_fit_t *ref = NULL;
        size_t nref = 0;
        if (k >= 1 && clock_solve(kept[(k - 1) % KEEP], ne, &kso[(k - 1) % KEEP], &ref, &nref, NULL,
                                  msg) == BASE_OK)
            clock_history_keep_bounds(h, ref, nref);
        double t1 = cpu_s();
        if (k >= WARM)
            cpu += t1 - t0;
        /* The live maps against the truth, at each node's anchor. */
        for (size_t i = 0; i < nf; i++) {
            const clock_node_fit_t *f = &fits[i];
            if (f->node == 0 || !f->aligned)
                continue;
            /* The reference's clock is true time: its reading at the node's anchor. */
            double truth = true_at(&nc[f->node], f->anchor_ns);
            double e_ns = (double)(f->anchor_ns - T0_NS) + f->offset_ns - truth;
            err[nerr++] = fabs(e_ns);
            inside += fabs(e_ns) <= f->uncertainty_ns;
        }
        free(fits);
        free(ref);
    }
    if (res.ok && nerr > 0) {
        qsort(err, nerr, sizeof *err, cmp_double);
        res.ms = 1e3 * cpu / (WINDOWS - WARM);
        res.p99_ns = err[(size_t)(0.99 * (double)(nerr - 1))];
        res.covered = 100.0 * (double)inside / (double)nerr;
    }
    clock_history_destroy(&h);
    for (int i = 0; i < KEEP; i++)
        free(kept[i]);
    free(err);
    free(sig);
    free(g);
    free(nc);
    return res;
}

/* CPU ms of one add of HIST_EDGES new edges after HIST_EDGES known ones, between them or after. */
#define HIST_EDGES 32768
static double hist_add_ms(bool between)
{
    clock_history_t *h = clock_history_new(30, 4 * HIST_EDGES);
    clock_edge_fit_t *e = calloc(HIST_EDGES, sizeof *e);
    if (e == NULL)
        abort();
    double ms = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < HIST_EDGES; i++) {
            /* Known: (i, i + 1); new: (i, i + 2), or after them all (HIST_EDGES + i, …). */
            uint32_t lo = pass == 1 && !between ? HIST_EDGES + i : i;
            e[i] = (clock_edge_fit_t){.window = pass, .src = lo, .dst = lo + 1 + (uint32_t)pass};
            e[i].margin_ns = 5000;
            e[i].residual_ns = NAN;
        }
        double t0 = cpu_s();
        clock_history_add(h, NULL, 0, e, HIST_EDGES, NULL);
        if (pass == 1)
            ms = (cpu_s() - t0) * 1e3;
    }
    free(e);
    clock_history_destroy(&h);
    return ms;
}

int main(int argc, char **argv)
{
    static struct {
        int plan;
        uint32_t n;
    } cases[] = {{1, 64}, {0, 64}, {1, 256}, {0, 256}, {1, 512}, {0, 512}, {1, 1024}, {1, 4096}};
    size_t ncases = sizeof cases / sizeof *cases;
    /* One case alone: bench_clock_solve plan|random NODES. */
    if (argc == 3) {
        long n = strtol(argv[2], NULL, 10);
        if (n < 16 || n > CLOCK_SOLVE_MAX_NODES ||
            (strcmp(argv[1], "plan") != 0 && strcmp(argv[1], "random") != 0)) {
            fprintf(stderr, "usage: bench_clock_solve [plan|random NODES (16 to %d)]\n",
                    CLOCK_SOLVE_MAX_NODES);
            return 2;
        }
        cases[0].plan = strcmp(argv[1], "plan") == 0;
        cases[0].n = (uint32_t)n;
        ncases = 1;
    }
    double plan_ms[8] = {0};
    printf("the master's solve per 2 s window (first solve, bounds noted again, refinement),\n"
           "CPU ms; maps against the truth (live):\n");
    printf("%-7s %6s %12s %10s %10s %9s\n", "graph", "nodes", "entries/node", "cpu ms", "p99 ns",
           "cover %");
    int rc = 0;
    for (size_t c = 0; c < ncases; c++) {
        const char *gname = cases[c].plan ? "plan" : "random";
        result_t r = run(cases[c].plan, cases[c].n, 1);
        if (!r.ok) {
            rc = 1;
            continue;
        }
        printf("%-7s %6u %12.1f %10.2f %10.2f %9.1f\n", gname, cases[c].n, r.entries_per_node, r.ms,
               r.p99_ns, r.covered);
        printf("BENCH clock_solve_%s_%u_ms %.2f ms\n", gname, cases[c].n, r.ms);
        printf("BENCH clock_solve_%s_%u_p99_ns %.2f ns\n", gname, cases[c].n, r.p99_ns);
        printf("BENCH clock_solve_%s_%u_coverage_pct %.1f %%\n", gname, cases[c].n, r.covered);
        if (cases[c].plan)
            plan_ms[c / 2] = r.ms;
        else if (plan_ms[c / 2] > 0)
            printf("BENCH clock_solve_random_over_plan_%u %.1f x\n", cases[c].n,
                   r.ms / plan_ms[c / 2]);
    }
    if (ncases > 1) {
        double after = hist_add_ms(false), between = hist_add_ms(true);
        printf("history: %d new edges in one add, CPU ms: after the %d known %.2f, between them "
               "%.2f\n",
               HIST_EDGES, HIST_EDGES, after, between);
        printf("BENCH clock_history_add_between_ms %.2f ms\n", between);
        printf("BENCH clock_history_add_between_over_after %.1f x\n",
               after > 0 ? between / after : NAN);
    }
    return rc;
}
