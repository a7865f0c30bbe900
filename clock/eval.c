/*
 * Accuracy of fits against simulation truth.  A node fit maps node N's clock
 * onto the reference R's; the truth of that map is C_R(C_N⁻¹(x)) with the
 * simulated clocks (an edge fit likewise maps src onto dst).  Two errors are
 * kept per fit: at the anchor (the error of the offset itself) and the
 * largest at five instants spread over the fit's range (the error of the
 * map, drift and bend included); the uncertainty is checked against the
 * latter, since it claims to hold over the whole range.
 */
#include "clock/clock_int.h"

#include <stdlib.h>
#include <string.h>

static clock_sim_t *sim_of(const clock_truth_t *truth, clock_sim_t **sims, uint32_t node)
{
    for (size_t i = 0; i < truth->n_nodes; i++) {
        if (truth->nodes[i].node != node)
            continue;
        if (sims[i] == NULL)
            sims[i] = clock_sim_new(&truth->nodes[i].p);
        return sims[i];
    }
    return NULL;
}

/* True (to − from) at from's reading x. */
static double true_corr(clock_sim_t *from, clock_sim_t *to, int64_t x)
{
    int64_t t = clock_sim_invert(from, x);
    return clk_diff(clock_sim_apply(to, t), x);
}

typedef struct one_fit {
    bool aligned;
    uint32_t from, to;
    int64_t anchor, lo, hi;
    double offset, drift, unc;
} one_fit_t;

struct clock_eval_acc {
    double *eo, *ea, *ed, *un;
    size_t m, cap, covered;
    uint64_t unaligned, skipped;
};

clock_eval_acc_t *clock_eval_acc_new(void)
{
    return xcalloc(1, sizeof(clock_eval_acc_t));
}

void clock_eval_acc_destroy(clock_eval_acc_t **self)
{
    if (self == NULL || *self == NULL)
        return;
    clock_eval_acc_t *a = *self;
    free(a->eo);
    free(a->ea);
    free(a->ed);
    free(a->un);
    free(a);
    *self = NULL;
}

static void acc_push(clock_eval_acc_t *a, double eo, double ea, double ed, double un)
{
    if (a->m == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 256;
        a->eo = xreallocarray(a->eo, a->cap, sizeof *a->eo);
        a->ea = xreallocarray(a->ea, a->cap, sizeof *a->ea);
        a->ed = xreallocarray(a->ed, a->cap, sizeof *a->ed);
        a->un = xreallocarray(a->un, a->cap, sizeof *a->un);
    }
    a->eo[a->m] = eo;
    a->ea[a->m] = ea;
    a->ed[a->m] = ed;
    a->un[a->m] = un;
    a->covered += eo <= un;
    a->m++;
}

static void eval_one(const one_fit_t *f, clock_sim_t *sf, clock_sim_t *st, clock_eval_acc_t *a)
{
    double worst = 0;
    double span = clk_diff(f->hi, f->lo);
    for (int j = 0; j <= 4; j++) {
        int64_t x = clk_add(f->lo, span * j / 4.0);
        double fitted = f->offset + f->drift * 1e-9 * clk_diff(x, f->anchor);
        double e = fabs(fitted - true_corr(sf, st, x));
        if (e > worst)
            worst = e;
    }
    double slope = (true_corr(sf, st, f->hi) - true_corr(sf, st, f->lo)) / span;
    acc_push(a, worst, fabs(f->offset - true_corr(sf, st, f->anchor)), fabs(f->drift - slope * 1e9),
             f->unc);
}

static void acc_all(clock_eval_acc_t *a, const clock_truth_t *truth, const one_fit_t *fits,
                    size_t n)
{
    clock_sim_t **sims = xcalloc(truth->n_nodes ? truth->n_nodes : 1, sizeof *sims);
    for (size_t i = 0; i < n; i++) {
        const one_fit_t *f = &fits[i];
        if (!f->aligned) {
            a->unaligned++;
            continue;
        }
        if (f->from == f->to)
            continue;
        clock_sim_t *sf = sim_of(truth, sims, f->from), *st = sim_of(truth, sims, f->to);
        if (sf == NULL || st == NULL || !(f->hi > f->lo)) {
            a->skipped++;
            continue;
        }
        eval_one(f, sf, st, a);
    }
    for (size_t i = 0; i < truth->n_nodes; i++)
        clock_sim_destroy(&sims[i]);
    free(sims);
}

int clock_eval_acc_result(const clock_eval_acc_t *a, clock_eval_t *out, char *err)
{
    assert(a && out);
    memset(out, 0, sizeof *out);
    size_t m = a->m;
    out->n = m;
    out->unaligned = a->unaligned;
    out->skipped = a->skipped;
    if (m == 0)
        return base_err(err, "no aligned fit could be compared with the truth");
    double *v = xmalloc(m * sizeof *v);
    const double *src[4] = {a->eo, a->ea, a->ed, a->un};
    double q[4][3];
    for (int k = 0; k < 4; k++) {
        memcpy(v, src[k], m * sizeof *v);
        qsort(v, m, sizeof *v, clk_cmp_double);
        q[k][0] = clk_quantile_sorted(v, m, 0.50);
        q[k][1] = clk_quantile_sorted(v, m, 0.99);
        q[k][2] = v[m - 1];
    }
    free(v);
    out->off_p50 = q[0][0];
    out->off_p99 = q[0][1];
    out->off_max = q[0][2];
    out->anc_p50 = q[1][0];
    out->anc_p99 = q[1][1];
    out->drift_p50 = q[2][0];
    out->drift_p99 = q[2][1];
    out->unc_p50 = q[3][0];
    out->coverage = (double)a->covered / (double)m;
    out->err_p50 = out->off_p50;
    return BASE_OK;
}

void clock_eval_acc_nodes(clock_eval_acc_t *self, const clock_truth_t *truth,
                          const clock_node_fit_t *fits, size_t n)
{
    assert(self && truth);
    one_fit_t *f = xmalloc((n ? n : 1) * sizeof *f);
    for (size_t i = 0; i < n; i++)
        f[i] = (one_fit_t){fits[i].aligned,   fits[i].node,      fits[i].ref,
                           fits[i].anchor_ns, fits[i].from_ns,   fits[i].to_ns,
                           fits[i].offset_ns, fits[i].drift_ppb, fits[i].uncertainty_ns};
    acc_all(self, truth, f, n);
    free(f);
}

void clock_eval_acc_edges(clock_eval_acc_t *self, const clock_truth_t *truth,
                          const clock_edge_fit_t *fits, size_t n)
{
    assert(self && truth);
    one_fit_t *f = xmalloc((n ? n : 1) * sizeof *f);
    for (size_t i = 0; i < n; i++)
        f[i] = (one_fit_t){!fits[i].step,     fits[i].src,       fits[i].dst,
                           fits[i].anchor_ns, fits[i].from_ns,   fits[i].to_ns,
                           fits[i].offset_ns, fits[i].drift_ppb, fits[i].uncertainty_ns};
    acc_all(self, truth, f, n);
    free(f);
}

static double node_map_at(const clock_node_fit_t *f, int64_t x)
{
    return f->offset_ns + f->drift_ppb * 1e-9 * clk_diff(x, f->anchor_ns);
}

void clock_eval_acc_nodes_vs(clock_eval_acc_t *self, const clock_node_fit_t *fits, size_t n,
                             const clock_node_fit_t *base, size_t nb)
{
    assert(self && (base != NULL || nb == 0));
    size_t hint = 0;
    for (size_t i = 0; i < n; i++) {
        const clock_node_fit_t *f = &fits[i];
        if (!f->aligned) {
            self->unaligned++;
            continue;
        }
        if (f->node == f->ref)
            continue;
        /* Both come in window order, nodes sorted: the match is near the last one. */
        const clock_node_fit_t *b = NULL;
        for (size_t k = 0; k < nb && b == NULL; k++) {
            const clock_node_fit_t *c = &base[(hint + k) % nb];
            if (c->window == f->window && c->node == f->node && c->ref == f->ref) {
                b = c;
                hint = (hint + k) % nb;
            }
        }
        double span = clk_diff(f->to_ns, f->from_ns);
        if (b == NULL || !b->aligned || !(span > 0)) {
            self->skipped++;
            continue;
        }
        double worst = 0;
        for (int j = 0; j <= 4; j++) {
            int64_t x = clk_add(f->from_ns, span * j / 4.0);
            double e = fabs(node_map_at(f, x) - node_map_at(b, x));
            if (e > worst)
                worst = e;
        }
        acc_push(self, worst, fabs(f->offset_ns - node_map_at(b, f->anchor_ns)),
                 fabs(f->drift_ppb - b->drift_ppb), f->uncertainty_ns);
    }
}

int clock_eval_nodes(const clock_truth_t *truth, const clock_node_fit_t *fits, size_t n,
                     clock_eval_t *out, char *err)
{
    clock_eval_acc_t *a = clock_eval_acc_new();
    clock_eval_acc_nodes(a, truth, fits, n);
    int rc = clock_eval_acc_result(a, out, err);
    clock_eval_acc_destroy(&a);
    return rc;
}

int clock_eval_edges(const clock_truth_t *truth, const clock_edge_fit_t *fits, size_t n,
                     clock_eval_t *out, char *err)
{
    clock_eval_acc_t *a = clock_eval_acc_new();
    clock_eval_acc_edges(a, truth, fits, n);
    int rc = clock_eval_acc_result(a, out, err);
    clock_eval_acc_destroy(&a);
    return rc;
}
