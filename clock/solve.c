/*
 * The network effect (SPEC §4.3): one window's edge fits → one affine map per
 * node onto the reference clock.
 *
 * Unknowns per node n: its log-rate ρ_n = ln(dc_n/dc_ref) and c_n, its clock
 * reading at the common instant T (reference clock).  An edge fit A→B says
 * ρ_B − ρ_A = ln(1 + D) and c_B = c_A + O + D·(c_A − L); both are linear in
 * the unknowns, so each is one weighted least-squares problem.  The fits were
 * anchored at different local times; evaluating every edge at c_A (A's
 * reading of the same instant T) is what accounts for drift.  c_n is kept as
 * an int64 start value from a spanning tree plus a small double correction.
 *
 * Loops over-determine the offsets.  Path asymmetry and other errors the
 * edges cannot see themselves show up as loop residuals; their size beyond
 * what the edges' own uncertainties explain is estimated as an extra
 * per-edge variance τ² (the random-effects / Paule–Mandel estimator of
 * meta-analysis) and enters the weights and the node uncertainties.
 */
#include "clock/clock_int.h"

#include <stdlib.h>
#include <string.h>

/* Sorts ids and keeps each once; returns how many remain. */
static size_t sort_unique(uint32_t *ids, size_t n)
{
    qsort(ids, n, sizeof *ids, base_cmp_u32);
    size_t u = 0;
    for (size_t i = 0; i < n; i++)
        if (u == 0 || ids[i] != ids[u - 1])
            ids[u++] = ids[i];
    return u;
}

/*
 * A margin counts as raised beyond MARGIN_Z σ of its noise from window to
 * window (clock_history_margin_level's, at least the edge's offset σ);
 * then the bound is what it is raised by plus MARGIN_UP σ, an upper bound
 * on the true rise (one-sided 97.7 %).  Queuing the purity filter lets
 * through moves the soft margin svm reports from window to window, and a
 * node's bound adds every raised edge's share: the simulated networks
 * without slow hosts had their median uncertainty up by as much as 60 %
 * at 3σ, 11 % at 4σ and 5 % at 5σ (swts at the agents' probe rate).
 */
#define MARGIN_Z  5.0
#define MARGIN_UP 2.0
/* An edge fit whose range is shorter than this part of the window's longest was trimmed. */
#define TRIMMED_SPAN 0.9

void clock_solve_opts_default(clock_solve_opts_t *opts)
{
    assert(opts);
    memset(opts, 0, sizeof *opts);
    opts->coverage_k = 3.0;
    opts->misfit_k = 2.0;
    opts->pool_windows = 8;
    opts->wander_floor_ppb = 0.5;
    opts->pool_k = 2.5;
    opts->pool_k_both = 2.2;
    opts->persist_k = 2.7;
    opts->suspect_k = 5.0;
    opts->margin_z = MARGIN_Z;
}

void clock_node_fit_init(clock_node_fit_t *f, int64_t window, uint32_t node, uint32_t ref)
{
    assert(f);
    memset(f, 0, sizeof *f);
    f->window = window;
    f->node = node;
    f->ref = ref;
    f->drift_unc_ppb = f->model_ns = f->misfit_ms_ns2 = f->delay_ns = NAN;
    f->own_offset_ns = f->own_drift_ppb = f->own_offset_sd_ns = f->own_drift_sd_ppb = NAN;
}

int64_t clock_node_map(const clock_node_fit_t *fit, int64_t x)
{
    assert(fit);
    return clk_add_offset(x, fit->offset_ns, fit->drift_ppb * 1e-9 * clk_diff(x, fit->anchor_ns));
}

/* x of src's clock for a reading y of dst's clock (inverse of clock_edge_map). */
static int64_t edge_inverse(const clock_edge_fit_t *e, int64_t y)
{
    double r = 1.0 + e->drift_ppb * 1e-9;
    return clk_add(e->anchor_ns, clk_diff_add(y, e->anchor_ns, -e->offset_ns) / r);
}

static int64_t node_inverse(const clock_node_fit_t *f, int64_t y)
{
    double r = 1.0 + f->drift_ppb * 1e-9;
    return clk_add(f->anchor_ns, clk_diff_add(y, f->anchor_ns, -f->offset_ns) / r);
}

typedef struct sedge {
    size_t e;   /* index into the caller's array */
    int ia, ib; /* unknown indices of src and dst, −1 for the reference */
    size_t na, nb;
    double sig;       /* offset σ, ns */
    double sig0;      /* offset σ at the edge's anchor, ns (its margin's too) */
    double sigd;      /* log-rate σ */
    double k;         /* constant part of the offset residual */
    double g;         /* 1 + D */
    double lr;        /* ln(1 + D) */
    double rw;        /* weight factor in the offset solve: 0 for a suspect edge */
    double mis[3];    /* misfit of the edge's offset curve from its line: start, centre, end */
    double mis_sd[3]; /* their σ; 0: unknown */
} sedge_t;

/* WLS_MISFIT + j solves misfit reading j. */
enum wls_kind { WLS_OFFSET, WLS_RATE, WLS_MISFIT };

/*
 * 95th percentile of the largest distance, over a window of ±h s, between a
 * random-walk frequency's phase and its least-squares line, in units of
 * sqrt(q·h³) (simulated): how far a pooled line may miss the wander's bend.
 */
#define POOL_BEND95 0.6

/*
 * The error a map is held to is its largest over the window: the error at
 * the anchor (persistent asymmetry part and changing part, at the centre)
 * plus how far drift error and wander carry it towards either end.  The
 * worst instant is the end where the excursion has the anchor error's sign,
 * so the two add, |a| + b, rather than in quadrature.  A bound on the sum:
 * the quadrature of every part (u_all, right when the parts are alike),
 * but no less than either part's bound plus the other's mean (qa + mean b,
 * qb + mean |a|), which is what the sum's tail is when one part dominates:
 * in a lan the anchor's asymmetry part, which otherwise lost the excursion
 * it always carries.
 */
static double worst_instant_bound(double u_all, double qa, double mean_a, double qb, double mean_b)
{
    return fmax(u_all, fmax(qa + mean_b, qb + mean_a));
}

/*
 * Two-sided 95 % quantile of Student's t with nu degrees of freedom (exact to
 * the table's digits up to 30, then the Cornish–Fisher series in 1/nu).
 */
static double student_t975(uint32_t nu)
{
    static const double tab[30] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                   2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                   2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                   2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
    assert(nu >= 1);
    if (nu <= 30)
        return tab[nu - 1];
    double v = (double)nu;
    return 1.960 + 2.372 / v + 2.82 / (v * v);
}

/*
 * The loops the persistent factor was calibrated with (the bench's graphs:
 * 8 nodes, a ring plus 3 random partners each, 12 to 20 loops).
 */
#define PERSIST_CAL_DOF 16

/*
 * τ comes from dof loop residuals, so a node's persistent error over its
 * estimated σ is Student-t with dof degrees of freedom: the factor follows
 * the t quantile.  With one loop (three nodes, or a bare ring) τ is one
 * residual's worth and the factor is six times what sixteen loops need.
 * Without a loop this window sees no asymmetry; τ² is then only its floor
 * (what earlier windows' loops taught the history, or the caller's), and
 * gets the factor of the fewest loops, so that a window that lost its
 * loops is never surer of the asymmetry than one that kept one.
 */
static double persist_factor(double kp, uint32_t dof)
{
    return kp * student_t975(dof > 0 ? dof : 1) / student_t975(PERSIST_CAL_DOF);
}

/* Two-sided 95 % of a normal: the stamp asymmetry is a given σ, not a fit's. */
#define STAMP_Z 1.96

/* Mean of |x| for a centred normal x, per unit σ: sqrt(2/π). */
#define MEAN_ABS_NORMAL 0.798

/*
 * Mean largest distance between a random-walk frequency's phase and its
 * least-squares line over the window, in units of its 95th percentile
 * (POOL_BEND95, same simulation).
 */
#define POOL_BEND_MEAN 0.48

/* Nodes without misfit readings keep a weak prior of no misfit. */
#define MISFIT_PRIOR_SIGMA 1e6

static size_t node_index(const uint32_t *ids, size_t n, uint32_t id)
{
    const uint32_t *p = bsearch(&id, ids, n, sizeof *ids, base_cmp_u32);
    return p ? (size_t)(p - ids) : SIZE_MAX;
}

static bool edge_usable(const clock_edge_fit_t *e)
{
    return !e->step && e->src != e->dst && isfinite(e->offset_ns) && isfinite(e->drift_ppb) &&
           isfinite(e->uncertainty_ns) && e->uncertainty_ns > 0 && fabs(e->drift_ppb) < 1e8;
}

/*
 * Variance of the solved offset difference an edge measures (g·c_a − c_b),
 * from the solve's inverse: times the edge's weight, its leverage.
 */
static double offset_var(const sedge_t *s, const clk_env_t *inv)
{
    double ga = s->g, gb = -1.0, q = 0;
    if (s->ia >= 0)
        q += ga * ga * clk_env_read_inverse(inv, (size_t)s->ia, (size_t)s->ia);
    if (s->ib >= 0)
        q += gb * gb * clk_env_read_inverse(inv, (size_t)s->ib, (size_t)s->ib);
    if (s->ia >= 0 && s->ib >= 0)
        q += 2 * ga * gb * clk_env_read_inverse(inv, (size_t)s->ia, (size_t)s->ib);
    return q;
}

/*
 * 1 − the edge's leverage at weight w: the share of its residual the loops
 * see.  An edge that carries its nodes alone has a leverage of 1, which
 * rounding takes past 1 where weights stand 1e9 apart; below 0 it cancelled
 * the τ² step's sum, and τ² ran to 1e300.
 */
static double loop_share(const sedge_t *s, double w, const clk_env_t *inv)
{
    return fmax(0.0, 1.0 - w * offset_var(s, inv));
}

/*
 * Weighted least squares over the used edges; rhs receives the solution,
 * and with invert the covariance is in env (clk_env_read_inverse) until its next use.
 */
static bool wls(const sedge_t *se, size_t ne, size_t m, int kind, double tau2, clk_env_t *env,
                double *rhs, bool invert)
{
    clk_env_zero(env);
    memset(rhs, 0, m * sizeof *rhs);
    if (kind >= WLS_MISFIT)
        for (size_t i = 0; i < m; i++)
            clk_env_add(env, i, i, 1.0 / (MISFIT_PRIOR_SIGMA * MISFIT_PRIOR_SIGMA));
    for (size_t i = 0; i < ne; i++) {
        const sedge_t *s = &se[i];
        double ga = -1.0, gb = 1.0, c, w;
        if (kind == WLS_OFFSET) {
            ga = s->g;
            gb = -1.0;
            c = s->k;
            if (!(s->rw > 0))
                continue;
            w = s->rw / (s->sig * s->sig + tau2);
        } else if (kind == WLS_RATE) {
            c = -s->lr;
            w = 1.0 / (s->sigd * s->sigd);
        } else {
            int j = kind - WLS_MISFIT;
            if (!(s->mis_sd[j] > 0))
                continue;
            c = -s->mis[j];
            w = 1.0 / (s->mis_sd[j] * s->mis_sd[j]);
        }
        if (s->ia >= 0) {
            clk_env_add(env, (size_t)s->ia, (size_t)s->ia, w * ga * ga);
            rhs[s->ia] -= w * c * ga;
        }
        if (s->ib >= 0) {
            clk_env_add(env, (size_t)s->ib, (size_t)s->ib, w * gb * gb);
            rhs[s->ib] -= w * c * gb;
        }
        if (s->ia >= 0 && s->ib >= 0)
            clk_env_add(env, (size_t)s->ia, (size_t)s->ib, w * ga * gb);
    }
    if (!clk_env_factor(env))
        return false;
    clk_env_solve(env, rhs);
    if (invert)
        clk_env_invert(env);
    return true;
}

static double resid(const sedge_t *s, const double *x, bool rates)
{
    double xa = s->ia >= 0 ? x[s->ia] : 0.0, xb = s->ib >= 0 ? x[s->ib] : 0.0;
    if (rates)
        return xb - xa - s->lr;
    return s->k + s->g * xa - xb;
}

static size_t uf_find(size_t *up, size_t i)
{
    while (up[i] != i)
        i = up[i] = up[up[i]];
    return i;
}

/* Whether the edges that are not suspect still join all nn nodes of se into one. */
static bool still_joined(const sedge_t *se, size_t ne, size_t nn, const bool *reach)
{
    size_t *up = xmalloc(nn * sizeof *up), parts = 0;
    for (size_t i = 0; i < nn; i++) {
        up[i] = i;
        parts += reach[i];
    }
    for (size_t i = 0; i < ne; i++) {
        if (!(se[i].rw > 0))
            continue;
        size_t a = uf_find(up, se[i].na), b = uf_find(up, se[i].nb);
        if (a != b) {
            up[a] = b;
            parts--;
        }
    }
    free(up);
    return parts == 1;
}

/*
 * Path detours.  An edge whose path is longer one way is biased by half the
 * difference, and least squares spreads that bias over every node in its
 * loops.  Least absolute deviations does not spread a few large errors: it
 * fits the consistent majority and leaves each bias in its own edge's
 * residual (IRLS from the least-squares start).  With residuals in units of
 * the edges' σ (widened, see below), an edge stands out when it is beyond k
 * times both 1 and their robust spread (robust sizes are medians of those
 * LAD did not fit exactly: it interpolates m of the edges, a spanning
 * tree).  The median bounds how many stand out to half the redundancy, and
 * when asymmetry is on every path the spread takes it in and none does: it
 * cannot be told apart from offsets at all, and stays in τ².  The edges LAD
 * fits join every node; should they not (IRLS short of its vertex), nothing
 * is flagged.  Returns the number flagged (rw = 0).
 */
/* 1.4826 × the k-th smallest |v|: a robust σ when k is the median's place (reorders v). */
static double robust_size(double *v, size_t n, size_t k)
{
    return 1.4826 * clk_select(v, n, k);
}

static uint32_t flag_suspects(sedge_t *se, size_t ne, size_t m, size_t nn, const bool *reach,
                              double floor2, double k, clk_env_t *env, double *x)
{
    for (size_t i = 0; i < ne; i++)
        se[i].rw = 1.0;
    size_t dof = ne > m ? ne - m : 0;
    if (!(k > 0) || m == 0 || dof < 3)
        return 0;
    double *u = xmalloc(ne * sizeof *u), *us = xmalloc(ne * sizeof *us);
    double *prev = xmalloc(m * sizeof *prev);
    size_t mid = m + dof / 2;
    double t2 = 0;
    bool ok = wls(se, ne, m, WLS_OFFSET, floor2, env, x, false);
    /*
     * Small link asymmetries are in every residual.  The first round, with
     * the edges' own σ, learns their typical size t; the second widens every
     * σ by it, so that an edge with a tiny σ neither holds its node against
     * the others nor stands out by a small asymmetry alone.
     */
    for (int round = 0; ok && round < 2; round++) {
        for (int it = 0; ok && it < 40; it++) {
            for (size_t i = 0; i < ne; i++) {
                double sd = sqrt(se[i].sig * se[i].sig + floor2 + t2);
                se[i].rw = 1.0 / fmax(fabs(resid(&se[i], x, false)) / sd, 1e-3);
            }
            memcpy(prev, x, m * sizeof *x);
            ok = wls(se, ne, m, WLS_OFFSET, floor2 + t2, env, x, false);
            /* Settled when no offset moves by a picosecond (big networks). */
            double moved = 0;
            for (size_t j = 0; ok && j < m; j++)
                moved = fmax(moved, fabs(x[j] - prev[j]));
            if (moved < 1e-3)
                break;
        }
        for (size_t i = 0; ok && i < ne; i++)
            us[i] = fabs(resid(&se[i], x, false));
        double t = ok ? robust_size(us, ne, mid) : 0;
        t2 = t * t;
    }
    uint32_t flagged = 0;
    if (ok) {
        for (size_t i = 0; i < ne; i++)
            us[i] = u[i] =
                fabs(resid(&se[i], x, false)) / sqrt(se[i].sig * se[i].sig + floor2 + t2);
        double bar = k * fmax(robust_size(us, ne, mid), 1.0);
        for (size_t i = 0; i < ne; i++) {
            bool out = u[i] > bar;
            se[i].rw = out ? 0.0 : 1.0;
            flagged += out;
        }
    }
    if (!ok || (flagged > 0 && !still_joined(se, ne, nn, reach))) {
        for (size_t i = 0; i < ne; i++)
            se[i].rw = 1.0;
        flagged = 0;
    }
    free(u);
    free(us);
    free(prev);
    return flagged;
}

/* The classes of an edge fit for the slow-host bound. */
enum edge_class {
    EDGE_STEADY,  /* its margin did not move inside the window */
    EDGE_TRIMMED, /* it moved, and the fit kept the undisturbed part */
    EDGE_WHOLE,   /* it moved, and the fit is the whole window's */
    EDGE_CLASSES
};

/*
 * Hosts slow to stamp (section 3 of docs/CLOCK.md).  A host's delay is a
 * shift of that host alone; edge by edge goes what is not: xs[i] bounds
 * edge i's bias beyond its hosts' shifts (NAN: its margin has no level
 * yet), host[n] the shift of node n (0: none; NAN: no edge of it has a
 * level), warm[n] the bound on it while none has (NAN: host[n] stands).
 */
static void slow_hosts(const sedge_t *se, size_t ne, const clock_edge_fit_t *edges, size_t nn,
                       const clock_solve_opts_t *opts, double *xs, double *host, double *warm)
{
    double *rise = xmalloc(ne * sizeof *rise);
    enum edge_class *cls = xmalloc(ne * sizeof *cls);
    size_t(*count)[EDGE_CLASSES] = xcalloc(nn, sizeof *count);
    double span = 0;
    for (size_t i = 0; i < ne; i++)
        span = fmax(span, clk_diff(edges[se[i].e].to_ns, edges[se[i].e].from_ns));
    for (size_t i = 0; i < nn; i++)
        host[i] = warm[i] = INFINITY;
    bool *seen =
        xcalloc(nn, sizeof *seen); /* an edge of it is in the history from an earlier window */
    for (size_t i = 0; i < ne; i++) {
        const clock_edge_fit_t *e = &edges[se[i].e];
        size_t ends[2] = {se[i].na, se[i].nb}, earlier;
        double sd;
        xs[i] = clk_margin_raised(opts, e, se[i].sig0, &sd, &earlier);
        /*
         * Warming up: a host none of whose edges has a level yet, nor any
         * window before this one in the history (a master's first window,
         * also when refined once the next is in; a host's first after it
         * joins), may have been slow since before, and nothing tells by
         * how much but its margins: a margin is half a round trip, so no
         * host delay biases an edge by more than it.  Its least margin
         * (plus 2σ) bounds it (shifted: no edge of it is trimmed); its
         * edges' differences are link delays, which the solve takes as
         * symmetric, as it always does.  Only the first window: until a
         * level stands (3 windows) such µs bounds would be a third of the
         * maps of a 20 s run.
         */
        if (isfinite(e->margin_ns) && se[i].rw > 0) {
            double up = fmax(e->margin_ns, 0) + MARGIN_UP * se[i].sig0;
            for (int j = 0; j < 2; j++) {
                seen[ends[j]] = seen[ends[j]] || earlier > 0;
                warm[ends[j]] = fmin(warm[ends[j]], up);
            }
        }
        bool moved = isfinite(e->margin_step_ns) && e->margin_step_ns != 0;
        bool cut = clk_diff(e->to_ns, e->from_ns) < TRIMMED_SPAN * span;
        cls[i] = !moved ? EDGE_STEADY : cut ? EDGE_TRIMMED : EDGE_WHOLE;
        /* The rise it saw: inside the window, on top of where it started. */
        rise[i] = xs[i];
        if (moved && isfinite(xs[i]))
            rise[i] = (xs[i] > 0 ? xs[i] : MARGIN_UP * sd) + fabs(e->margin_step_ns);
        if (!isfinite(rise[i]) || !(se[i].rw > 0))
            continue;
        /* A host is slow by no more than its least raised edge. */
        for (int j = 0; j < 2; j++) {
            host[ends[j]] = fmin(host[ends[j]], rise[i]);
            count[ends[j]][cls[i]]++;
        }
    }
    /*
     * Which shift a host's maps carry: its edges fitted over their
     * undisturbed part carry none of it, the others all (steady) or a part
     * (whole, γ unknown).  A host whose trimmed edges are the most is
     * taken for unshifted, any other for shifted; every edge that differs
     * from its host's choice carries up to that host's delay edge by edge,
     * as does what an edge rose by beyond its two hosts (a slow link) or,
     * steady, short of them (a part of the window it did not see).
     */
    bool *shifted = xmalloc(nn * sizeof *shifted);
    for (size_t n = 0; n < nn; n++) {
        size_t *c = count[n];
        shifted[n] = c[EDGE_TRIMMED] <= c[EDGE_STEADY] + c[EDGE_WHOLE];
        if (!isfinite(host[n]))
            host[n] = NAN;
        if (seen[n] || !isnan(host[n]) || !isfinite(warm[n]))
            warm[n] = NAN;
    }
    free(seen);
    for (size_t i = 0; i < ne; i++) {
        if (!isfinite(xs[i]))
            continue;
        size_t ends[2] = {se[i].na, se[i].nb};
        double both = 0, off = 0;
        for (int j = 0; j < 2; j++) {
            double M = isfinite(host[ends[j]]) ? host[ends[j]] : 0;
            both += M;
            bool fits = shifted[ends[j]] ? cls[i] == EDGE_STEADY : cls[i] == EDGE_TRIMMED;
            off += fits ? 0 : M;
        }
        off += cls[i] == EDGE_STEADY ? fabs(xs[i] - both) : fmax(0, xs[i] - both);
        xs[i] = off;
    }
    for (size_t n = 0; n < nn; n++)
        if (!shifted[n] && isfinite(host[n]))
            host[n] = 0;
    free(shifted);
    free(count);
    free(cls);
    free(rise);
}

double clk_margin_raised(const clock_solve_opts_t *opts, const clock_edge_fit_t *e, double sig0,
                         double *sd, size_t *earlier)
{
    assert(opts && e && sd);
    double level = clock_history_margin_level(opts->history, e, sd, earlier);
    double raised = e->margin_ns - level;
    *sd = fmax(*sd, sig0); /* fmax takes the number over a NAN */
    return !isfinite(raised) ? NAN : raised > opts->margin_z * *sd ? raised + MARGIN_UP * *sd : 0.0;
}

void clk_edge_sigmas(const clock_edge_fit_t *e, double kcov, double *vb, double *sigd)
{
    double model = isfinite(e->model_ns) && e->model_ns > 0 ? e->model_ns : 0;
    double u_end = fmax(e->uncertainty_ns - model, 0.1 * e->uncertainty_ns) / kcov;
    double span = fmax(0.5 * clk_diff(e->to_ns, e->from_ns), 1e8);
    bool have_d = isfinite(e->drift_unc_ppb) && e->drift_unc_ppb > 0;
    *sigd = have_d ? e->drift_unc_ppb * 1e-9 / kcov : u_end / span;
    if (!(*sigd > 1e-15))
        *sigd = 1e-15;
    /*
     * The edge's uncertainty holds over its whole range, slope error at its
     * ends included; at its anchor the slope part comes off (what is left is
     * at least a tenth, as the subsets' two parts are estimates).
     */
    *vb = have_d ? u_end * u_end - *sigd * *sigd * span * span : 0;
    *vb = fmax(*vb, 0.01 * u_end * u_end);
}

int clock_solve(clock_edge_fit_t *edges, size_t n, const clock_solve_opts_t *opts,
                clock_node_fit_t **nodes, size_t *n_nodes, clock_solve_stats_t *st, char *err)
{
    assert(edges || n == 0);
    assert(opts && nodes && n_nodes);
    clock_solve_stats_t local;
    if (st == NULL)
        st = &local;
    memset(st, 0, sizeof *st);
    st->own_sigma_ns = NAN;
    *nodes = NULL;
    *n_nodes = 0;
    /* Options a caller got wrong would come out as maps that look right. */
    if (!(opts->to_ns >= opts->from_ns))
        return base_err(err, "solve: window ends before it starts (%lld, %lld)",
                        (long long)opts->from_ns, (long long)opts->to_ns);
    if (!(isfinite(opts->stamp_asym_ns) && opts->stamp_asym_ns >= 0))
        return base_err(err, "solve: stamp asymmetry %g ns is not a size", opts->stamp_asym_ns);
    double kcov = opts->coverage_k > 0 ? opts->coverage_k : 3.0;
    double kp = opts->persist_k > 0 ? opts->persist_k : 2.7;
    int rc = BASE_ERR;

    /* Nodes: every endpoint plus the reference. */
    uint32_t *ids = xmalloc((2 * n + 1) * sizeof *ids);
    size_t nn = 0;
    ids[nn++] = opts->ref;
    for (size_t i = 0; i < n; i++) {
        ids[nn++] = edges[i].src;
        ids[nn++] = edges[i].dst;
    }
    nn = sort_unique(ids, nn);
    if (nn > CLOCK_SOLVE_MAX_NODES) {
        free(ids);
        return base_err(err, "%zu nodes in one window; the solver takes at most %d", nn,
                        CLOCK_SOLVE_MAX_NODES);
    }
    size_t iref = node_index(ids, nn, opts->ref);

    /* Reachability from the reference over usable edges (breadth first). */
    size_t *adj_start = xcalloc(nn + 1, sizeof *adj_start);
    size_t *adj = xmalloc((2 * n + 1) * sizeof *adj);
    for (size_t i = 0; i < n; i++) {
        edges[i].residual_ns = NAN;
        edges[i].loop_share = 0;
        edges[i].suspect = false;
        if (!edge_usable(&edges[i])) {
            st->edges_skipped++;
            continue;
        }
        adj_start[node_index(ids, nn, edges[i].src) + 1]++;
        adj_start[node_index(ids, nn, edges[i].dst) + 1]++;
    }
    for (size_t i = 0; i < nn; i++)
        adj_start[i + 1] += adj_start[i];
    size_t *fill = xmalloc((nn + 1) * sizeof *fill);
    memcpy(fill, adj_start, (nn + 1) * sizeof *fill);
    for (size_t i = 0; i < n; i++) {
        if (!edge_usable(&edges[i]))
            continue;
        adj[fill[node_index(ids, nn, edges[i].src)]++] = i;
        adj[fill[node_index(ids, nn, edges[i].dst)]++] = i;
    }
    free(fill);

    /* The common instant and the reference window. */
    int64_t T = opts->at_ns, from = opts->from_ns, to = opts->to_ns;
    if (T == 0 && (from != 0 || to != 0))
        T = clk_mid(from, to);
    if (T == 0) {
        for (size_t k = adj_start[iref]; k < adj_start[iref + 1]; k++) {
            const clock_edge_fit_t *e = &edges[adj[k]];
            int64_t m = clk_mid(e->from_ns, e->to_ns);
            T = e->src == opts->ref ? m : clock_edge_map(e, m);
            break;
        }
    }
    if (from == 0 && to == 0) {
        double w = 0;
        for (size_t i = 0; i < n; i++)
            if (edge_usable(&edges[i]))
                w = fmax(w, clk_diff(edges[i].to_ns, edges[i].from_ns));
        from = clk_add(T, -0.5 * w);
        to = clk_add(T, 0.5 * w);
    }
    double half = 0.5 * clk_diff(to, from);

    /* Spanning tree from the reference: reachability and int64 start values c0. */
    bool *reach = xcalloc(nn, sizeof *reach);
    int64_t *c0 = xcalloc(nn, sizeof *c0);
    size_t *queue = xmalloc(nn * sizeof *queue);
    size_t qh = 0, qt = 0;
    reach[iref] = true;
    c0[iref] = T;
    queue[qt++] = iref;
    while (qh < qt) {
        size_t a = queue[qh++];
        for (size_t k = adj_start[a]; k < adj_start[a + 1]; k++) {
            const clock_edge_fit_t *e = &edges[adj[k]];
            bool fwd = node_index(ids, nn, e->src) == a;
            size_t b = node_index(ids, nn, fwd ? e->dst : e->src);
            if (reach[b])
                continue;
            reach[b] = true;
            c0[b] = fwd ? clock_edge_map(e, c0[a]) : edge_inverse(e, c0[a]);
            queue[qt++] = b;
        }
    }
    free(queue);

    /* Unknowns: every reached node but the reference. */
    int *unk = xmalloc(nn * sizeof *unk);
    size_t m = 0;
    for (size_t i = 0; i < nn; i++)
        unk[i] = (reach[i] && i != iref) ? (int)m++ : -1;

    sedge_t *se = xmalloc((n + 1) * sizeof *se);
    size_t ne = 0;
    for (size_t i = 0; i < n; i++) {
        const clock_edge_fit_t *e = &edges[i];
        if (!edge_usable(e))
            continue;
        size_t a = node_index(ids, nn, e->src), b = node_index(ids, nn, e->dst);
        if (!reach[a] || !reach[b])
            continue;
        sedge_t *s = &se[ne++];
        s->e = i;
        s->na = a;
        s->nb = b;
        s->ia = unk[a];
        s->ib = unk[b];
        for (int j = 0; j < 3; j++) {
            bool ok = isfinite(e->misfit_ns[j]) && isfinite(e->misfit_sigma_ns[j]) &&
                      e->misfit_sigma_ns[j] > 0;
            s->mis[j] = ok ? e->misfit_ns[j] : 0;
            s->mis_sd[j] = ok ? e->misfit_sigma_ns[j] : 0;
        }
        double vb;
        clk_edge_sigmas(e, kcov, &vb, &s->sigd);
        /* The offset's rounding to a double (clocks months apart), uniform over its spacing. */
        double rnd = clk_round_ns(e->offset_ns);
        vb += rnd * rnd / 3.0;
        double dx = clk_diff(c0[a], e->anchor_ns);
        s->sig = sqrt(vb + s->sigd * s->sigd * dx * dx);
        s->sig0 = sqrt(vb);
        double D = e->drift_ppb * 1e-9;
        s->g = 1.0 + D;
        s->lr = log1p(D);
        s->rw = 1.0;
        s->k = clk_diff_add(c0[a], c0[b], e->offset_ns) + D * clk_diff(c0[a], e->anchor_ns);
    }
    st->edges_used = (uint32_t)ne;
    /*
     * An edge's rate σ comes from the spread of a few fits (8 subsets, or in
     * a small window a jackknife of 8) and is now and then far too small
     * (8 subsets: below half the truth about once in 70);
     * such an edge would set its nodes' rates alone.  No edge counts as surer
     * than half the window's median.
     */
    if (ne >= 3) {
        double *sd = xmalloc(ne * sizeof *sd);
        for (size_t i = 0; i < ne; i++)
            sd[i] = se[i].sigd;
        double floor_d = 0.5 * clk_median(sd, ne);
        free(sd);
        for (size_t i = 0; i < ne; i++)
            se[i].sigd = fmax(se[i].sigd, floor_d);
    }

    /*
     * One sparse system for every solve of the window (envelope.c): the
     * rates', each misfit reading's and the offsets' normal matrices share
     * the graph's pattern.  Only the diagonal of the first four inverses
     * is kept (var_r, var_m); the offsets' stays in env to the end.
     */
    clk_env_t *env = NULL;
    double *rho = NULL, *delta = NULL, *var_r = NULL, *col = NULL;
    double *mis[3] = {NULL, NULL, NULL}, *var_m[3] = {NULL, NULL, NULL};
    double floor2 = opts->extra_var_ns2 > 0 ? opts->extra_var_ns2 : 0.0;
    if (opts->history)
        floor2 = fmax(floor2, clock_history_extra_var(opts->history));
    double tau2 = floor2, tau2_used = floor2, own2 = NAN;
    double *vo_stat = NULL, *vo_pers = NULL, *dbound = NULL, *dwarm = NULL;
    bool *dknown = NULL; /* dbound[k] rests on at least one edge with a known margin level */
    if (m > 0) {
        int *pa = xmalloc(ne * sizeof *pa), *pb = xmalloc(ne * sizeof *pb);
        for (size_t i = 0; i < ne; i++) {
            pa[i] = se[i].ia;
            pb[i] = se[i].ib;
        }
        size_t entries;
        env = clk_env_new(m, pa, pb, ne, CLOCK_SOLVE_MAX_ENTRIES, &entries);
        free(pa);
        free(pb);
        st->factor_entries = entries;
        if (env == NULL) {
            base_err(err,
                     "the probe graph of %zu nodes is too dense to solve: its factor would hold "
                     "%zu entries, at most %d",
                     nn, entries, CLOCK_SOLVE_MAX_ENTRIES);
            goto out;
        }
        col = xmalloc(m * CLK_ENV_BLOCK * sizeof *col);
        rho = xmalloc(m * sizeof *rho);
        delta = xmalloc(m * sizeof *delta);
        var_r = xmalloc(m * sizeof *var_r);
        bool ok = wls(se, ne, m, WLS_RATE, 0, env, rho, true);
        for (size_t k = 0; ok && k < m; k++)
            var_r[k] = clk_env_read_inverse(env, k, k);
        for (int j = 0; j < 3 && ok; j++) {
            mis[j] = xmalloc(m * sizeof *mis[j]);
            var_m[j] = xmalloc(m * sizeof *var_m[j]);
            ok = wls(se, ne, m, WLS_MISFIT + j, 0, env, mis[j], true);
            for (size_t k = 0; ok && k < m; k++)
                var_m[j][k] = clk_env_read_inverse(env, k, k);
        }
        st->edges_suspect =
            ok ? flag_suspects(se, ne, m, nn, reach, floor2, opts->suspect_k, env, delta) : 0;
        size_t ne_off = ne - st->edges_suspect;
        st->dof = ne_off > m ? (uint32_t)(ne_off - m) : 0;
        /* Offsets; then τ² by Paule–Mandel steps until Q(τ²) = dof. */
        for (int it = 0; ok && it < 8; it++) {
            ok = wls(se, ne, m, WLS_OFFSET, tau2, env, delta, true);
            tau2_used = tau2;
            if (!ok || st->dof == 0)
                break;
            double Q = 0, c = 0;
            for (size_t i = 0; i < ne; i++) {
                const sedge_t *s = &se[i];
                if (!(s->rw > 0))
                    continue;
                double w = 1.0 / (s->sig * s->sig + tau2);
                double r = resid(s, delta, false);
                Q += w * r * r;
                c += w * loop_share(s, w, env);
            }
            if (!(c > 0))
                break;
            double next = tau2 + (Q - (double)st->dof) / c;
            if (it == 0) {
                st->chi2 = Q;
                /* Below the floor: one moment step from it (no solve more). */
                if (next < floor2)
                    own2 = fmax(next, 0.0);
            }
            if (next < floor2)
                next = floor2;
            if (fabs(next - tau2) <= 1e-3 * fmax(tau2, 1.0))
                break;
            tau2 = next;
        }
        if (!ok) {
            base_err(err, "network solve is singular (%zu unknowns, %zu edges)", m, ne);
            goto out;
        }
    }
    if (st->dof == 0)
        st->chi2 = 0;
    st->extra_sigma_ns = sqrt(tau2);
    st->own_sigma_ns = st->dof == 0 ? NAN : sqrt(isnan(own2) ? tau2 : own2);
    kp = persist_factor(kp, st->dof);

    for (size_t i = 0; i < ne; i++) {
        const sedge_t *s = &se[i];
        clock_edge_fit_t *e = &edges[s->e];
        e->residual_ns = resid(s, delta, false);
        e->suspect = !(s->rw > 0);
        if (e->suspect || m == 0)
            continue;
        double w = s->rw / (s->sig * s->sig + tau2_used);
        e->loop_share = loop_share(s, w, env);
    }
    /*
     * Hosts slow to stamp.  A host that stamps what it receives late (or
     * what it sends early) biases every edge of its own, by up to half its
     * extra delay, and a gradient of such biases looks exactly like
     * offsets: no loop shows it.  The margins do: a margin is half the
     * round trip a fit rests on, and rises by at least the bias (the bound
     * NTP puts on a round trip).  By how much: the margin over its
     * undisturbed level (clock_history_margin_level), once that stands
     * clear of its noise from window to window (at least the edge's
     * offset σ: margin and offset are half the difference and half the sum
     * of the same two boundaries), plus 2σ.  Such a host shifts every map
     * that rests on its edges the way a clock offset would: its own (every
     * other, for the reference's host) by up to its delay, the others not
     * at all; what is not a shift of one host (an edge trimmed to its
     * undisturbed part beside one that was not, a slow link) goes edge by
     * edge: each node's offset is the solve's weighted sum of the edges'
     * (the sandwich below), so the same weights, in absolute value, bound
     * the node's error from them, whatever their pattern (slow_hosts).  A
     * host none of whose edges has a level yet is bounded by its least
     * margin (warming up); pooling does not count that part against a
     * window, which is in doubt only for want of history.
     */
    double *xs = NULL, *host = NULL, *warm = NULL;
    if (opts->history && ne > 0 && m > 0 && opts->margin_z > 0) {
        dbound = xcalloc(m, sizeof *dbound);
        dwarm = xcalloc(m, sizeof *dwarm);
        dknown = xcalloc(m, sizeof *dknown);
        xs = xmalloc(ne * sizeof *xs);
        host = xmalloc(nn * sizeof *host);
        warm = xmalloc(nn * sizeof *warm);
        slow_hosts(se, ne, edges, nn, opts, xs, host, warm);
        for (size_t i = 0; i < nn; i++)
            st->hosts_warming += reach[i] && isfinite(warm[i]);
    }
    /*
     * How much of τ² persists.  τ² is the loops' excess over the edges' own
     * σ: path asymmetry, which stays, and noise the σ missed, which does
     * not (at an agent's probe rate, with software stamps, nearly all of
     * it).  Counting all of it as persistent keeps pooled maps as wide as
     * single windows; the history's residual tracks tell the two apart,
     * over the windows a map is pooled with.  Each edge keeps at least the
     * network's share and at most all of τ²: an edge whose own track shows
     * a large asymmetry keeps it, whatever the others show.
     */
    double phi = 1.0, tp2 = NAN;
    double *edge_p2 = n ? xmalloc(n * sizeof *edge_p2) : NULL;
    if (opts->history && m > 0 && tau2_used > 0 && opts->pool_windows > 0) {
        tp2 =
            clock_history_persist_var(opts->history, edges, n, 2 * opts->pool_windows + 1, edge_p2);
        if (isfinite(tp2)) {
            tp2 = fmax(tp2, opts->extra_var_ns2); /* the caller's floor stays whole */
            phi = fmin(1.0, tp2 / tau2_used);
        }
    }
    st->persist_sigma_ns = sqrt(phi) * st->extra_sigma_ns;

    /*
     * The parts of each node's offset variance, through the same weights (a
     * sandwich): the edges' own σ² and the noise part of τ² change from
     * window to window, and pooling averages them down; the persistent
     * part of τ² does not.
     */
    if (m > 0) {
        vo_stat = xcalloc(m, sizeof *vo_stat);
        vo_pers = xcalloc(m, sizeof *vo_pers);
        double *w = xmalloc(ne * sizeof *w), *w2s2 = xmalloc(ne * sizeof *w2s2);
        double *w2p2 = xmalloc(ne * sizeof *w2p2);
        for (size_t i = 0; i < ne; i++) {
            const sedge_t *s = &se[i];
            w[i] = s->rw / (s->sig * s->sig + tau2_used);
            w2s2[i] = w[i] * w[i] * s->sig * s->sig;
            double p2 = tau2_used;
            if (isfinite(tp2)) {
                double own = edge_p2[s->e];
                p2 = fmin(tau2_used, isfinite(own) ? fmax(tp2, own) : tau2_used);
            }
            w2p2[i] = w[i] * w[i] * p2;
        }
        /*
         * Node k's weights on the edges: row k of the inverse through each
         * edge, rows solved CLK_ENV_BLOCK at a time (col[u·nb + c] is row
         * k0 + c's entry u: the inverse is symmetric).
         */
        for (size_t k0 = 0; k0 < m; k0 += CLK_ENV_BLOCK) {
            size_t nb = m - k0 < CLK_ENV_BLOCK ? m - k0 : CLK_ENV_BLOCK;
            clk_env_solve_columns(env, k0, nb, col);
            for (size_t i = 0; i < ne; i++) {
                const sedge_t *s = &se[i];
                for (size_t j = 0; j < nb; j++) {
                    size_t k = k0 + j;
                    double c = 0;
                    if (s->ia >= 0)
                        c += s->g * col[(size_t)s->ia * nb + j];
                    if (s->ib >= 0)
                        c -= col[(size_t)s->ib * nb + j];
                    vo_stat[k] += c * c * w2s2[i];
                    vo_pers[k] += c * c * w2p2[i];
                    if (xs && isfinite(xs[i]) && c * w[i] != 0) {
                        dbound[k] += fabs(c * w[i]) * xs[i];
                        dknown[k] = true;
                    }
                }
            }
        }
        free(w);
        free(w2s2);
        free(w2p2);
    }
    /* A host's shift: its own map's, and every map's for the reference's host. */
    if (host) {
        for (size_t i = 0; i < nn; i++) {
            if (unk[i] < 0)
                continue;
            size_t k = (size_t)unk[i];
            dbound[k] +=
                (isfinite(host[i]) ? host[i] : 0) + (isfinite(host[iref]) ? host[iref] : 0);
            dwarm[k] = (isfinite(warm[i]) ? warm[i] : 0) + (isfinite(warm[iref]) ? warm[iref] : 0);
            dknown[k] = dknown[k] || isfinite(host[i]) || isfinite(warm[i]);
        }
    }
    free(host);
    free(warm);
    free(xs);
    free(edge_p2);

    clock_node_fit_t *out = xcalloc(nn, sizeof *out);
    for (size_t i = 0; i < nn; i++) {
        clock_node_fit_t *f = &out[i];
        clock_node_fit_init(f, n ? edges[0].window : 0, ids[i], opts->ref);
        if (!reach[i]) {
            f->aligned = false;
            st->unaligned++;
            continue;
        }
        f->aligned = true;
        st->aligned++;
        if (i == iref) {
            f->anchor_ns = T;
            f->from_ns = from;
            f->to_ns = to;
            f->drift_unc_ppb = f->model_ns = 0;
            f->delay_ns = dbound ? 0 : NAN;
            continue;
        }
        int k = unk[i];
        /*
         * The node reads c0 + δ at T, and its map holds from there at its
         * rate: at c0 it is δ·D further off.  Taken as T − c0 − δ, every map
         * was off by δ·D, which hangs on the spanning tree's path (3 µs off
         * on a detour, 30 ppm: 0.09 ns; 1.5 ns at 500 ppm).
         */
        double D = expm1(-rho[k]);
        f->anchor_ns = c0[i];
        f->offset_ns = clk_diff(T, c0[i]) - delta[k] * (1 + D);
        f->drift_ppb = D * 1e9;
        /* δ reaches the offset times 1 + D, and so its variance times (1 + D)². */
        double g2 = (1 + D) * (1 + D);
        double vo = g2 * clk_env_read_inverse(env, (size_t)k, (size_t)k), vr = var_r[k];
        /*
         * How far this node's offset curve bends away from its line, against the
         * reference: the part of each reading that stands clear of its noise.
         */
        f->model_ns = 0;
        f->misfit_ms_ns2 = 0;
        for (int j = 0; j < 3; j++) {
            double v = mis[j][k], var = var_m[j][k];
            /* A reading counts only where it stands clear of its noise. */
            if (v * v > 4 * var)
                f->model_ns = fmax(f->model_ns, sqrt(v * v - var));
            f->misfit_ms_ns2 += (v * v - var) / 3.0;
        }
        double typical = opts->history ? clock_history_misfit_rms(opts->history, f->node) : NAN;
        double mk = opts->misfit_k > 0 ? opts->misfit_k : 2.0;
        if (isfinite(typical))
            f->model_ns = fmax(f->model_ns, mk * typical);
        /*
         * The part that changes from window to window, the persistent part
         * the loops show, and the one no loop can show: this node's and the
         * reference's stamp asymmetry, (a − a_ref)/2 on every edge alike.
         */
        double vp = fmin(g2 * vo_pers[k], fmax(vo - g2 * vo_stat[k], 0)), ed = sqrt(vr) * half;
        double vs = vo - vp;
        double vq = 0.5 * opts->stamp_asym_ns * opts->stamp_asym_ns;
        /* A bound on δ, and so on the offset 1 + D times it. */
        double dw = dwarm ? dwarm[k] * (1 + D) : 0, db = dbound ? dbound[k] * (1 + D) + dw : 0;
        f->delay_ns = dbound && dknown[k] ? db : NAN;
        f->warm_ns = dw;
        st->delay_ns = fmax(st->delay_ns, db);
        double pers2 = kp * kp * vp + STAMP_Z * STAMP_Z * vq + db * db;
        /* The delay bound as the 95 % of a normal, where a σ is wanted. */
        vq += db * db / (STAMP_Z * STAMP_Z);
        f->uncertainty_ns =
            worst_instant_bound(sqrt(kcov * kcov * (vs + ed * ed) + pers2),
                                sqrt(kcov * kcov * vs + pers2), MEAN_ABS_NORMAL * sqrt(vo + vq),
                                kcov * ed, MEAN_ABS_NORMAL * ed) +
            f->model_ns;
        f->drift_unc_ppb = kcov * sqrt(vr) * 1e9;
        f->own_offset_ns = f->offset_ns;
        f->own_drift_ppb = f->drift_ppb;
        /* Its offset rounded to a double, which later windows pooling this one inherit. */
        double own_rnd = clk_round_ns(f->offset_ns);
        f->own_offset_sd_ns = sqrt(vs + own_rnd * own_rnd / 3);
        f->own_drift_sd_ppb = sqrt(vr) * 1e9 * exp(-rho[k]);
        clk_pool_out_t po = {.disagree_ns = 0};
        clk_pool_in_t pin = {f->window,
                             opts->ref,
                             f->anchor_ns,
                             f->offset_ns,
                             f->drift_ppb,
                             f->own_offset_sd_ns,
                             f->own_drift_sd_ppb,
                             half * 1e-9,
                             opts->pool_windows,
                             opts->wander_floor_ppb,
                             db - dw};
        bool pooled = opts->history && opts->pool_windows > 0 &&
                      clk_history_pool(opts->history, f->node, &pin, &po);
        if (pooled || po.disagree_ns > 0) {
            /*
             * po.P is the pooled map's covariance, or the prediction of the
             * neighbours that disagree with this window.  The bound: its σ
             * at the window's ends (pool_k, pool_k_both: the noise model was
             * fitted to the windows' scatter), the persistent part of the
             * offset error that no pooling removes (persist_k, as for a
             * single window: path asymmetry is only partly visible in
             * loops), and how far the wander may bend the offset away from
             * any line over the window (95th percentile).
             */
            double hs = half * 1e-9;
            double ve = po.P[0][0] + 2 * hs * fabs(po.P[0][1]) + hs * hs * po.P[1][1];
            double pk = opts->pool_k > 0 ? opts->pool_k : 2.5;
            if (pooled && po.both && opts->pool_k_both > 0)
                pk = opts->pool_k_both;
            double stat2 = pk * pk * ve + pers2;
            double bend95 = POOL_BEND95 * sqrt(po.q * hs * hs * hs);
            if (pooled) {
                double pd = sqrt(po.P[1][1]) * hs;
                f->offset_ns = po.off;
                f->drift_ppb = po.drift;
                f->pooled = po.used;
                f->uncertainty_ns = worst_instant_bound(
                    sqrt(stat2 + bend95 * bend95), sqrt(pk * pk * po.P[0][0] + pers2),
                    MEAN_ABS_NORMAL * sqrt(po.P[0][0] + vp + vq),
                    sqrt(pk * pk * pd * pd + bend95 * bend95),
                    MEAN_ABS_NORMAL * pd + POOL_BEND_MEAN * bend95);
                f->model_ns = f->uncertainty_ns - sqrt(stat2);
                f->drift_unc_ppb = pk * sqrt(po.P[1][1]);
            } else {
                /*
                 * The neighbours disagree with this window and may be
                 * right: then its error is the distance to what they
                 * predict plus what a map pooled from them would be off
                 * by (the persistent part included, which they share).
                 */
                double u_dis = po.disagree_ns + sqrt(stat2 + bend95 * bend95);
                if (u_dis > f->uncertainty_ns) {
                    f->model_ns += u_dis - f->uncertainty_ns;
                    f->uncertainty_ns = u_dis;
                }
            }
        }
        /* The map's own offset, rounded to a double. */
        double rnd = clk_round_ns(f->offset_ns);
        f->uncertainty_ns += rnd;
        f->model_ns += rnd;
        f->from_ns = node_inverse(f, from);
        f->to_ns = node_inverse(f, to);
    }
    st->nodes = (uint32_t)nn;
    *nodes = out;
    *n_nodes = nn;
    rc = BASE_OK;
out:
    free(dbound);
    free(dwarm);
    free(dknown);
    free(vo_stat);
    free(vo_pers);
    free(rho);
    free(delta);
    free(var_r);
    free(col);
    clk_env_destroy(&env);
    for (int j = 0; j < 3; j++) {
        free(mis[j]);
        free(var_m[j]);
    }
    free(se);
    free(unk);
    free(reach);
    free(c0);
    free(adj);
    free(adj_start);
    free(ids);
    return rc;
}

/* ---- clock steps between two windows ---- */

/* A fit with a drift bound: one without (too few points) says nothing a step away from it. */
static bool step_usable(const clock_edge_fit_t *e)
{
    return !e->step && e->src != e->dst && isfinite(e->offset_ns) && isfinite(e->drift_ppb) &&
           isfinite(e->uncertainty_ns) && e->uncertainty_ns > 0 && isfinite(e->drift_unc_ppb);
}

static double abs_or_0(double v)
{
    return isfinite(v) ? fabs(v) : 0;
}

static int cmp_edge_ends(const void *a, const void *b)
{
    const clock_edge_fit_t *p = *(const clock_edge_fit_t *const *)a,
                           *q = *(const clock_edge_fit_t *const *)b;
    if (p->src != q->src)
        return p->src < q->src ? -1 : 1;
    return (p->dst > q->dst) - (p->dst < q->dst);
}

typedef struct edge_jump {
    uint32_t src, dst;
    double jump;  /* dst − src jumped by this */
    double limit; /* what it had to jump by to count */
    bool jumped;
} edge_jump_t;

typedef struct node_jumps {
    uint32_t node;
    uint32_t jumped;
    double size; /* median of its jumped edges' sizes, in its direction */
    bool step;
} node_jumps_t;

/* The jumps of one node's edges, as its own clock's: + where it is dst, − where src. */
static void node_tally(node_jumps_t *nj, const edge_jump_t *J, size_t n, double *tmp)
{
    size_t k = 0;
    nj->jumped = 0;
    for (size_t i = 0; i < n; i++) {
        if (J[i].src != nj->node && J[i].dst != nj->node)
            continue;
        if (J[i].jumped)
            tmp[k++] = J[i].dst == nj->node ? J[i].jump : -J[i].jump;
    }
    nj->jumped = (uint32_t)k;
    nj->step = false;
    if (k == 0)
        return;
    nj->size = clk_median(tmp, k);
    /*
     * Every edge that jumped, alike; every edge that did not, one that would
     * have shown a jump of half that size (a fit too uncertain to show it, a
     * slow host's or a trimmed one's, says nothing either way).
     */
    for (size_t i = 0; i < n; i++) {
        if (J[i].src != nj->node && J[i].dst != nj->node)
            continue;
        double s = J[i].dst == nj->node ? J[i].jump : -J[i].jump;
        if (J[i].jumped ? fabs(s - nj->size) > 0.1 * fabs(nj->size)
                        : J[i].limit < 0.5 * fabs(nj->size))
            return;
    }
    nj->step = true;
}

size_t clock_steps_between(const clock_edge_fit_t *prev, size_t np, const clock_edge_fit_t *cur,
                           size_t nc, clock_step_between_t *out, size_t max)
{
    if (np == 0 || nc == 0)
        return 0;
    const clock_edge_fit_t **P = xmalloc(np * sizeof *P);
    size_t npu = 0;
    for (size_t i = 0; i < np; i++)
        if (step_usable(&prev[i]))
            P[npu++] = &prev[i];
    qsort(P, npu, sizeof *P, cmp_edge_ends);
    edge_jump_t *J = xmalloc(nc * sizeof *J);
    size_t nj = 0;
    for (size_t i = 0; i < nc; i++) {
        const clock_edge_fit_t *c = &cur[i];
        if (!step_usable(c))
            continue;
        const clock_edge_fit_t **hit = bsearch(&c, P, npu, sizeof *P, cmp_edge_ends);
        if (hit == NULL)
            continue;
        const clock_edge_fit_t *p = *hit;
        /*
         * The two lines at their boundary, between the earlier's last sample
         * and the later's first: a change of frequency there bends the
         * offset without a jump, by up to half the change of rate over the
         * stretch neither saw (long where a fit kept only part of its
         * window).  A host slow to stamp moves a fit by up to half the
         * change of its margin (a bound already, counted once).
         */
        int64_t xb = clk_mid(p->to_ns, c->from_ns);
        double dp = clk_diff(xb, p->anchor_ns), dc = clk_diff(xb, c->anchor_ns);
        double jump =
            (c->offset_ns + c->drift_ppb * 1e-9 * dc) - (p->offset_ns + p->drift_ppb * 1e-9 * dp);
        double unseen = fabs(clk_diff(c->from_ns, p->to_ns));
        double tol = 10.0 * (p->uncertainty_ns + c->uncertainty_ns +
                             1e-9 * (p->drift_unc_ppb * fabs(dp) + c->drift_unc_ppb * fabs(dc))) +
                     abs_or_0(c->margin_ns - p->margin_ns) +
                     0.5e-9 * fabs(c->drift_ppb - p->drift_ppb) * unseen;
        double limit = fmax(CLOCK_STEP_BETWEEN_MIN_NS, tol);
        J[nj++] = (edge_jump_t){c->src, c->dst, jump, limit, fabs(jump) > limit};
    }
    free(P);
    /* The nodes of the compared edges, each once. */
    uint32_t *ids = xmalloc((2 * nj + 1) * sizeof *ids);
    size_t nid = 0;
    for (size_t i = 0; i < nj; i++) {
        ids[nid++] = J[i].src;
        ids[nid++] = J[i].dst;
    }
    size_t nu = sort_unique(ids, nid);
    node_jumps_t *N = xmalloc((nu + 1) * sizeof *N);
    double *tmp = xmalloc((nj + 1) * sizeof *tmp);
    for (size_t i = 0; i < nu; i++) {
        N[i].node = ids[i];
        node_tally(&N[i], J, nj, tmp);
    }
    free(tmp);
    free(ids);
    /*
     * A node whose every jumped edge goes to a node with more of them is
     * only probed by the one that stepped (or by one whose jumps disagree):
     * the jumps are that one's.  Equal counts (two nodes and the edge between
     * them) cannot tell which.
     */
    size_t found = 0;
    for (size_t i = 0; i < nu; i++) {
        if (!N[i].step)
            continue;
        bool own = false;
        for (size_t e = 0; e < nj && !own; e++) {
            if (!J[e].jumped || (J[e].src != N[i].node && J[e].dst != N[i].node))
                continue;
            uint32_t other = J[e].src == N[i].node ? J[e].dst : J[e].src;
            /* N is sorted by node, its first member. */
            const node_jumps_t *o = bsearch(&other, N, nu, sizeof *N, base_cmp_u32);
            own = o == NULL || o->jumped <= N[i].jumped;
        }
        if (own && found < max)
            out[found++] = (clock_step_between_t){N[i].node, N[i].size, N[i].jumped};
    }
    free(N);
    free(J);
    return found;
}
