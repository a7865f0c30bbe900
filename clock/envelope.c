/*
 * Sparse symmetric positive definite systems for the network solve: an
 * envelope (profile) Cholesky factor in reverse Cuthill–McKee order.
 *
 * The normal matrix of a window is the probe graph's weighted Laplacian
 * (the reference's row and column taken out): one row per node, one entry
 * per probed neighbour.  Ordered so that neighbours sit close (RCM), every
 * row's entries start a little left of its diagonal, and the factor fills
 * in only between that first entry and the diagonal (its envelope): the
 * agents' plan at its default of 4 neighbours (each node probing offsets
 * 1, 2, 4, 8 around the ring of ids) has an envelope of about 17 entries a
 * row whatever the cluster's size, so a factor costs O(n) where the dense
 * one cost O(n³).  More neighbours reach further round the ring and widen
 * it (8: about 240 a row at 4096 nodes).  A graph without such an order
 * (random partners: an expander) fills most of its envelope and costs
 * about what the dense factor did.
 *
 * The solve needs more of the inverse than a solution: the entries on the
 * graph's pattern (each edge's leverage, Paule–Mandel's trace) and the
 * diagonal (each node's variance).  Takahashi's recurrence gives every entry
 * inside the envelope from the factor alone, at the factor's own cost; a
 * whole column, when wanted, is one solve.
 */
#include "clock/clock_int.h"

#include <stdlib.h>
#include <string.h>

struct clk_env {
    size_t m, nnz;
    size_t *perm;  /* perm[p]: the unknown at position p */
    size_t *iperm; /* iperm[u]: the position of unknown u */
    size_t *first; /* first[p]: row p's first column inside the envelope */
    size_t *start; /* start[p]: where row p begins in a, l and z (m + 1 entries) */
    size_t *cptr;  /* column q's rows below the diagonal inside the envelope: */
    size_t *crow;  /* crow[cptr[q]] .. crow[cptr[q + 1] - 1], ascending */
    double *a;     /* the matrix as added up */
    double *l;     /* its factor */
    double *z;     /* its inverse inside the envelope (clk_env_invert) */
    double *work;  /* m */
    double *block; /* m × CLK_ENV_BLOCK, clk_env_solve_columns' */
    bool factored, inverted;
};

typedef struct {
    size_t *ptr, *adj, *deg;
} graph_t;

static void graph_free(graph_t *g)
{
    free(g->ptr);
    free(g->adj);
    free(g->deg);
}

/* Adjacency of the unknowns (pairs with an end at −1, the reference, add nothing). */
static graph_t graph_build(size_t m, const int *ia, const int *ib, size_t n)
{
    graph_t g = {xcalloc(m + 1, sizeof *g.ptr), NULL, xcalloc(m ? m : 1, sizeof *g.deg)};
    for (size_t i = 0; i < n; i++)
        if (ia[i] >= 0 && ib[i] >= 0 && ia[i] != ib[i]) {
            g.ptr[ia[i] + 1]++;
            g.ptr[ib[i] + 1]++;
        }
    for (size_t u = 0; u < m; u++)
        g.ptr[u + 1] += g.ptr[u];
    g.adj = xmalloc((g.ptr[m] ? g.ptr[m] : 1) * sizeof *g.adj);
    size_t *fill = xmalloc((m + 1) * sizeof *fill);
    memcpy(fill, g.ptr, (m + 1) * sizeof *fill);
    for (size_t i = 0; i < n; i++)
        if (ia[i] >= 0 && ib[i] >= 0 && ia[i] != ib[i]) {
            g.adj[fill[ia[i]]++] = (size_t)ib[i];
            g.adj[fill[ib[i]]++] = (size_t)ia[i];
        }
    free(fill);
    for (size_t u = 0; u < m; u++)
        g.deg[u] = g.ptr[u + 1] - g.ptr[u];
    return g;
}

/*
 * Breadth-first levels from r over the unvisited (mark[u] != stamp) part:
 * fills order[0..count) and returns the number of levels; *last is where
 * the last level begins.
 */
static size_t bfs_levels(const graph_t *g, size_t r, size_t *mark, size_t stamp, size_t *order,
                         size_t *count, size_t *last)
{
    size_t head = 0, tail = 0, levels = 0;
    order[tail++] = r;
    mark[r] = stamp;
    while (head < tail) {
        size_t end = tail;
        *last = head;
        levels++;
        for (; head < end; head++) {
            size_t u = order[head];
            for (size_t k = g->ptr[u]; k < g->ptr[u + 1]; k++) {
                size_t v = g->adj[k];
                if (mark[v] != stamp) {
                    mark[v] = stamp;
                    order[tail++] = v;
                }
            }
        }
    }
    *count = tail;
    return levels;
}

/* Degree then index: the order Cuthill–McKee visits neighbours in. */
typedef struct {
    size_t deg, u;
} keyed_t;

static int cmp_keyed_deg(const void *a, const void *b)
{
    const keyed_t *x = a, *y = b;
    if (x->deg != y->deg)
        return x->deg < y->deg ? -1 : 1;
    return (x->u > y->u) - (x->u < y->u);
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/*
 * Reverse Cuthill–McKee, component by component, each from a
 * pseudo-peripheral node (George and Liu): started at one end of a long
 * path, the levels are narrow, and no row reaches back further than the
 * level before its own.  Neighbours are placed by degree, then index, so
 * the order is a pure function of the graph.
 */
static void order_rcm(const graph_t *g, size_t m, size_t *perm)
{
    keyed_t *key = xmalloc(m * sizeof *key);
    for (size_t u = 0; u < m; u++)
        key[u] = (keyed_t){g->deg[u], u};
    qsort(key, m, sizeof *key, cmp_keyed_deg);
    size_t *rank = xmalloc(m * sizeof *rank), *tmp = xmalloc(m * sizeof *tmp);
    for (size_t r = 0; r < m; r++)
        rank[key[r].u] = r;
    size_t *mark = xcalloc(m, sizeof *mark), stamp = 0;
    bool *placed = xcalloc(m, sizeof *placed);
    size_t tail = 0;
    for (size_t s = 0; s < m; s++) {
        size_t r = key[s].u;
        if (placed[r])
            continue;
        size_t cnt, last, levels = bfs_levels(g, r, mark, ++stamp, tmp, &cnt, &last);
        for (int it = 0; it < 8; it++) {
            size_t best = tmp[last];
            for (size_t j = last; j < cnt; j++)
                if (rank[tmp[j]] < rank[best])
                    best = tmp[j];
            size_t cnt2, last2, lev2 = bfs_levels(g, best, mark, ++stamp, tmp, &cnt2, &last2);
            if (lev2 <= levels)
                break;
            r = best;
            levels = lev2;
            last = last2;
            cnt = cnt2;
        }
        size_t head = tail;
        perm[tail++] = r;
        placed[r] = true;
        while (head < tail) {
            size_t u = perm[head++], from = tail;
            for (size_t k = g->ptr[u]; k < g->ptr[u + 1]; k++) {
                size_t v = g->adj[k];
                if (!placed[v]) {
                    placed[v] = true;
                    perm[tail++] = rank[v];
                }
            }
            qsort(&perm[from], tail - from, sizeof *perm, cmp_size);
            for (size_t j = from; j < tail; j++)
                perm[j] = key[perm[j]].u;
        }
    }
    for (size_t i = 0; i < m / 2; i++) {
        size_t t = perm[i];
        perm[i] = perm[m - 1 - i];
        perm[m - 1 - i] = t;
    }
    free(placed);
    free(mark);
    free(tmp);
    free(rank);
    free(key);
}

clk_env_t *clk_env_new(size_t m, const int *ia, const int *ib, size_t n, size_t max_entries,
                       size_t *entries)
{
    assert(m > 0 && (ia || n == 0) && (ib || n == 0) && entries);
    for (size_t i = 0; i < n; i++)
        assert(ia[i] < (int)m && ib[i] < (int)m);
    clk_env_t *self = xcalloc(1, sizeof *self);
    self->m = m;
    self->perm = xmalloc(m * sizeof *self->perm);
    self->iperm = xmalloc(m * sizeof *self->iperm);
    self->first = xmalloc(m * sizeof *self->first);
    self->start = xmalloc((m + 1) * sizeof *self->start);
    self->cptr = xcalloc(m + 1, sizeof *self->cptr);
    self->work = xmalloc(m * sizeof *self->work);
    self->block = xmalloc(m * CLK_ENV_BLOCK * sizeof *self->block);
    graph_t g = graph_build(m, ia, ib, n);
    order_rcm(&g, m, self->perm);
    for (size_t p = 0; p < m; p++)
        self->iperm[self->perm[p]] = p;
    self->start[0] = 0;
    for (size_t p = 0; p < m; p++) {
        size_t u = self->perm[p], f = p;
        for (size_t k = g.ptr[u]; k < g.ptr[u + 1]; k++)
            if (self->iperm[g.adj[k]] < f)
                f = self->iperm[g.adj[k]];
        self->first[p] = f;
        self->start[p + 1] = self->start[p] + (p - f + 1);
        for (size_t q = f; q < p; q++)
            self->cptr[q + 1]++;
    }
    graph_free(&g);
    self->nnz = *entries = self->start[m];
    /* Refused before the entries are allocated: their count is the caller's bound. */
    if (self->nnz > max_entries) {
        clk_env_destroy(&self);
        return NULL;
    }
    for (size_t q = 0; q < m; q++)
        self->cptr[q + 1] += self->cptr[q];
    self->crow = xmalloc((self->cptr[m] ? self->cptr[m] : 1) * sizeof *self->crow);
    size_t *fill = xmalloc(m * sizeof *fill);
    memcpy(fill, self->cptr, m * sizeof *fill);
    for (size_t p = 0; p < m; p++)
        for (size_t q = self->first[p]; q < p; q++)
            self->crow[fill[q]++] = p;
    free(fill);
    self->a = xcalloc(self->nnz, sizeof *self->a);
    self->l = xmalloc(self->nnz * sizeof *self->l);
    self->z = xmalloc(self->nnz * sizeof *self->z);
    return self;
}

void clk_env_destroy(clk_env_t **self_p)
{
    assert(self_p);
    clk_env_t *self = *self_p;
    if (self == NULL)
        return;
    free(self->perm);
    free(self->iperm);
    free(self->first);
    free(self->start);
    free(self->cptr);
    free(self->crow);
    free(self->a);
    free(self->l);
    free(self->z);
    free(self->work);
    free(self->block);
    free(self);
    *self_p = NULL;
}

void clk_env_zero(clk_env_t *self)
{
    assert(self);
    memset(self->a, 0, self->nnz * sizeof *self->a);
    self->factored = self->inverted = false;
}

/* Where entry (p, q) of the permuted matrix is kept, p ≥ q inside the envelope. */
static inline size_t at(const clk_env_t *self, size_t p, size_t q)
{
    return self->start[p] + q - self->first[p];
}

static inline size_t at_sym(const clk_env_t *self, size_t p, size_t q)
{
    return p >= q ? at(self, p, q) : at(self, q, p);
}

/* Where entry (i, j) of unknowns i and j (the diagonal, or a pair) is kept. */
static size_t locate(const clk_env_t *self, size_t i, size_t j)
{
    assert(i < self->m && j < self->m);
    size_t p = self->iperm[i], q = self->iperm[j];
    if (p < q) {
        size_t t = p;
        p = q;
        q = t;
    }
    assert(q >= self->first[p]);
    return at(self, p, q);
}

void clk_env_add(clk_env_t *self, size_t i, size_t j, double v)
{
    assert(self);
    self->a[locate(self, i, j)] += v;
    self->factored = self->inverted = false;
}

/* x · y over n entries, four sums at a time (no chain of dependent adds). */
static inline double dot(const double *x, const double *y, size_t n)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t k = 0;
    for (; k + 4 <= n; k += 4) {
        s0 += x[k] * y[k];
        s1 += x[k + 1] * y[k + 1];
        s2 += x[k + 2] * y[k + 2];
        s3 += x[k + 3] * y[k + 3];
    }
    for (; k < n; k++)
        s0 += x[k] * y[k];
    return (s0 + s1) + (s2 + s3);
}

/* Row by row: L_pq = (A_pq − Σ_k L_pk L_qk) / L_qq over where rows p and q overlap. */
static bool chol(clk_env_t *self)
{
    double *l = self->l;
    for (size_t p = 0; p < self->m; p++) {
        size_t fp = self->first[p];
        double *lp = &l[self->start[p]];
        for (size_t q = fp; q < p; q++) {
            size_t fq = self->first[q], lo = fp > fq ? fp : fq;
            double s = lp[q - fp] - dot(&lp[lo - fp], &l[at(self, q, lo)], q - lo);
            lp[q - fp] = s / l[self->start[q + 1] - 1];
        }
        double d = lp[p - fp] - dot(lp, lp, p - fp);
        if (!(d > 0) || !isfinite(d))
            return false;
        lp[p - fp] = sqrt(d);
    }
    return true;
}

bool clk_env_factor(clk_env_t *self)
{
    assert(self);
    self->inverted = false;
    memcpy(self->l, self->a, self->nnz * sizeof *self->l);
    self->factored = chol(self);
    if (self->factored)
        return true;
    /* Numerically singular (a node joined by edges of no weight): a tiny ridge. */
    double tr = 0;
    for (size_t p = 0; p < self->m; p++)
        tr += self->a[self->start[p + 1] - 1];
    memcpy(self->l, self->a, self->nnz * sizeof *self->l);
    for (size_t p = 0; p < self->m; p++)
        self->l[self->start[p + 1] - 1] += 1e-12 * tr / (double)self->m + 1e-300;
    self->factored = chol(self);
    return self->factored;
}

/* L y = (work), in place. */
static void forward(clk_env_t *self)
{
    const double *l = self->l;
    double *y = self->work;
    for (size_t p = 0; p < self->m; p++) {
        size_t fp = self->first[p];
        y[p] = (y[p] - dot(&l[self->start[p]], &y[fp], p - fp)) / l[self->start[p + 1] - 1];
    }
}

/* Lᵀ x = (work), in place, row by row of L from the last. */
static void backward(clk_env_t *self)
{
    double *y = self->work;
    for (size_t p = self->m; p-- > 0;) {
        size_t fp = self->first[p];
        const double *lp = &self->l[self->start[p]];
        y[p] /= lp[p - fp];
        double yp = y[p];
        for (size_t k = fp; k < p; k++)
            y[k] -= lp[k - fp] * yp;
    }
}

void clk_env_solve(clk_env_t *self, double *b)
{
    assert(self && self->factored && b);
    for (size_t p = 0; p < self->m; p++)
        self->work[p] = b[self->perm[p]];
    forward(self);
    backward(self);
    for (size_t p = 0; p < self->m; p++)
        b[self->perm[p]] = self->work[p];
}

/*
 * Takahashi's recurrence, from Z L = L⁻ᵀ (upper triangular, 1/L_qq on its
 * diagonal), column by column from the last: for the rows i > q of column
 * q's pattern, Z_iq = −Σ_k L_kq Z_ik / L_qq, then Z_qq = (1/L_qq −
 * Σ_k L_kq Z_kq) / L_qq, k over the same pattern.  Every Z_ik it reads lies
 * in a later column and inside the envelope (both rows start at or before
 * q), so the envelope holds all it needs.
 */
void clk_env_invert(clk_env_t *self)
{
    assert(self && self->factored);
    double *z = self->z, *lk = self->work;
    for (size_t q = self->m; q-- > 0;) {
        const size_t *P = &self->crow[self->cptr[q]];
        size_t np = self->cptr[q + 1] - self->cptr[q];
        double lqq = self->l[self->start[q + 1] - 1];
        for (size_t a = 0; a < np; a++)
            lk[a] = self->l[at(self, P[a], q)];
        for (size_t a = 0; a < np; a++) {
            size_t i = P[a];
            double s = 0;
            for (size_t b = 0; b < np; b++)
                s += lk[b] * z[at_sym(self, i, P[b])];
            z[at(self, i, q)] = -s / lqq;
        }
        double s = 0;
        for (size_t a = 0; a < np; a++)
            s += lk[a] * z[at(self, P[a], q)];
        z[self->start[q + 1] - 1] = (1.0 / lqq - s) / lqq;
    }
    self->inverted = true;
}

double clk_env_read_inverse(const clk_env_t *self, size_t i, size_t j)
{
    assert(self && self->inverted);
    return self->z[locate(self, i, j)];
}

/*
 * Columns j0 … j0 + nb − 1 of the inverse (nb ≤ CLK_ENV_BLOCK) into
 * out[u·nb + c], unknown u, column j0 + c: one pass down and one up the
 * factor for all of them, each entry of L read once for nb right-hand
 * sides side by side (the inner loops run along them).  A unit vector's
 * forward pass starts at its own position, the block's at its first.
 */
void clk_env_solve_columns(clk_env_t *self, size_t j0, size_t nb, double *out)
{
    assert(self && self->factored && out && nb >= 1 && nb <= CLK_ENV_BLOCK && j0 + nb <= self->m);
    const double *l = self->l;
    double *y = self->block; /* y[p·nb + c] */
    size_t m = self->m, p0 = m;
    memset(y, 0, m * nb * sizeof *y);
    for (size_t c = 0; c < nb; c++) {
        size_t p = self->iperm[j0 + c];
        y[p * nb + c] = 1.0;
        p0 = p < p0 ? p : p0;
    }
    for (size_t p = p0; p < m; p++) {
        size_t fp = self->first[p] > p0 ? self->first[p] : p0;
        const double *lp = &l[at(self, p, fp)];
        double acc[CLK_ENV_BLOCK] = {0};
        for (size_t k = fp; k < p; k++) {
            const double *yk = &y[k * nb];
            for (size_t c = 0; c < nb; c++)
                acc[c] += lp[k - fp] * yk[c];
        }
        double d = l[self->start[p + 1] - 1];
        for (size_t c = 0; c < nb; c++)
            y[p * nb + c] = (y[p * nb + c] - acc[c]) / d;
    }
    for (size_t p = m; p-- > 0;) {
        size_t fp = self->first[p];
        const double *lp = &l[self->start[p]];
        double *yp = &y[p * nb];
        for (size_t c = 0; c < nb; c++)
            yp[c] /= lp[p - fp];
        for (size_t k = fp; k < p; k++) {
            double *yk = &y[k * nb];
            for (size_t c = 0; c < nb; c++)
                yk[c] -= lp[k - fp] * yp[c];
        }
    }
    for (size_t p = 0; p < m; p++)
        memcpy(&out[self->perm[p] * nb], &y[p * nb], nb * sizeof *out);
}
