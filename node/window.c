/*
 * Per-edge windows: the samples of the edges this node owns, cut into
 * windows of its probe clock, fitted with the clock module when a window
 * closes.  Besides the fit, each window yields the statistics a console
 * shows per edge: probes sent, received and lost per direction, pure share
 * and the round trip.
 */
#include "node/node_int.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct peer_buf {
    uint32_t id;
    clock_probe_t *s;
    int64_t *t; /* each sample's time on this node's probe clock */
    size_t n, cap;
    uint64_t last_pairs_sent; /* prober counter at the previous close */
    bool have_last;
    double hint; /* last window's drift as a fraction (NAN: none) */
};

struct node_windows {
    struct node_windows_cfg cfg;
    struct peer_buf *peers;
    size_t npeers;
    int64_t last_closed; /* INT64_MIN: none yet */
    struct node_windows_stats st;
};

int64_t node_window_of(int64_t t, int64_t window_ns)
{
    int64_t k = t / window_ns;
    if (t % window_ns < 0)
        k--;
    return k;
}

void node_sample_to_probe(const struct node_probe_sample *s, clock_probe_t *p)
{
    memset(p, 0, sizeof *p);
    p->src = s->src;
    p->dst = s->dst;
    p->seq = s->seq;
    for (int i = 0; i < 2; i++) {
        p->tx[i] = s->tx[i];
        p->rx_ok[i] = s->rx[i] != NODE_TS_NONE;
        p->rx[i] = p->rx_ok[i] ? s->rx[i] : 0;
    }
}

node_windows_t *node_windows_new(const struct node_windows_cfg *cfg)
{
    assert(cfg && cfg->window_ns > 0 && cfg->est);
    node_windows_t *self = xcalloc(1, sizeof *self);
    self->cfg = *cfg;
    if (self->cfg.max_per_peer == 0)
        self->cfg.max_per_peer = 1 << 16;
    self->last_closed = INT64_MIN;
    return self;
}

static void free_buf(struct peer_buf *b)
{
    free(b->s);
    free(b->t);
}

void node_windows_destroy(node_windows_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    node_windows_t *self = *self_p;
    for (size_t i = 0; i < self->npeers; i++)
        free_buf(&self->peers[i]);
    free(self->peers);
    free(self);
    *self_p = NULL;
}

static struct peer_buf *find(node_windows_t *self, uint32_t id)
{
    for (size_t i = 0; i < self->npeers; i++)
        if (self->peers[i].id == id)
            return &self->peers[i];
    return NULL;
}

void node_windows_set_owned(node_windows_t *self, const uint32_t *peers, size_t n)
{
    assert(self);
    struct peer_buf *next = xcalloc(n ? n : 1, sizeof *next);
    for (size_t i = 0; i < n; i++) {
        struct peer_buf *old = find(self, peers[i]);
        if (old) {
            next[i] = *old;
            old->s = NULL;
            old->t = NULL;
            old->id = UINT32_MAX; /* taken: a duplicate in peers gets a fresh buffer */
        } else {
            next[i].id = peers[i];
            next[i].hint = NAN;
        }
    }
    for (size_t i = 0; i < self->npeers; i++)
        free_buf(&self->peers[i]);
    free(self->peers);
    self->peers = next;
    self->npeers = n;
}

void node_windows_add(node_windows_t *self, const struct node_probe_sample *s)
{
    assert(self && s);
    uint32_t me = self->cfg.self, peer;
    int64_t t;
    if (s->src == me) {
        peer = s->dst;
        t = s->tx[0];
    } else if (s->dst == me) {
        peer = s->src;
        /* A reverse sample whose packets were both lost has no time of ours:
         * the sender's is close enough to count it. */
        t = s->rx[0] != NODE_TS_NONE ? s->rx[0] : s->rx[1] != NODE_TS_NONE ? s->rx[1] : s->tx[0];
    } else {
        self->st.not_owned++;
        return;
    }
    struct peer_buf *b = find(self, peer);
    if (b == NULL) {
        self->st.not_owned++;
        return;
    }
    if (self->last_closed != INT64_MIN &&
        node_window_of(t, self->cfg.window_ns) <= self->last_closed) {
        self->st.late++;
        return;
    }
    if (b->n == b->cap) {
        if (b->cap >= self->cfg.max_per_peer) {
            self->st.full++;
            return;
        }
        size_t cap = b->cap ? b->cap * 2 : 256;
        if (cap > self->cfg.max_per_peer)
            cap = self->cfg.max_per_peer;
        b->s = xreallocarray(b->s, cap, sizeof *b->s);
        b->t = xreallocarray(b->t, cap, sizeof *b->t);
        b->cap = cap;
    }
    node_sample_to_probe(s, &b->s[b->n]);
    b->t[b->n] = t;
    b->n++;
    self->st.added++;
}

static double line_at(const clock_edge_fit_t *f, int64_t x)
{
    return f->offset_ns + f->drift_ppb * 1e-9 * (double)(x - f->anchor_ns);
}

/*
 * Round trips from the fitted line: a forward point lies its one-way delay
 * above the line, a reverse point its delay below, so pairing each forward
 * point with the reverse point nearest in time gives a round trip that
 * neither the offset nor the drift distorts.
 */
static void round_trips(const clock_edge_fit_t *f, const clock_point_t *fwd, size_t nf,
                        const clock_point_t *rev, size_t nr, struct node_win_result *r)
{
    r->rtt_min_ns = r->rtt_median_ns = r->rtt_p99_ns = NAN;
    if (nf == 0 || nr == 0)
        return;
    double *rtt = xmalloc(nf * sizeof *rtt);
    size_t j = 0;
    for (size_t i = 0; i < nf; i++) {
        while (j + 1 < nr && llabs(rev[j + 1].x - fwd[i].x) <= llabs(rev[j].x - fwd[i].x))
            j++;
        double df = (double)fwd[i].y - line_at(f, fwd[i].x);
        double dr = line_at(f, rev[j].x) - (double)rev[j].y;
        rtt[i] = df + dr;
    }
    qsort(rtt, nf, sizeof *rtt, base_cmp_double);
    r->rtt_min_ns = rtt[0];
    r->rtt_median_ns = rtt[nf / 2];
    size_t p = (size_t)ceil(0.99 * (double)nf);
    r->rtt_p99_ns = rtt[p > 0 ? p - 1 : 0];
    free(rtt);
}

static void dir_counts(const clock_probe_t *s, size_t n, uint32_t src, struct node_win_dir *d)
{
    uint64_t lo = UINT64_MAX, hi = 0, count = 0;
    memset(d, 0, sizeof *d);
    for (size_t i = 0; i < n; i++) {
        if (s[i].src != src)
            continue;
        count++;
        if (s[i].rx_ok[0] && s[i].rx_ok[1])
            d->received++;
        if (s[i].seq < lo)
            lo = s[i].seq;
        if (s[i].seq > hi)
            hi = s[i].seq;
    }
    /* Sequence numbers count the pairs whose follow-ups never arrived too. */
    d->sent = count ? hi - lo + 1 : 0;
    if (d->sent < count)
        d->sent = count;
    d->lost = d->sent - d->received;
}

static void fit_one(node_windows_t *self, struct peer_buf *b, const clock_probe_t *s, size_t n,
                    uint64_t sent_hint, int64_t k, struct node_win_result *r)
{
    uint32_t me = self->cfg.self;
    memset(r, 0, sizeof *r);
    r->window = k;
    r->src = me;
    r->dst = b->id;
    r->from_ns = k * self->cfg.window_ns;
    r->to_ns = r->from_ns + self->cfg.window_ns;
    r->rtt_min_ns = r->rtt_median_ns = r->rtt_p99_ns = NAN;
    dir_counts(s, n, me, &r->fwd);
    dir_counts(s, n, b->id, &r->rev);
    if (r->fwd.sent == 0 && sent_hint > 0) {
        r->fwd.sent = sent_hint;
        r->fwd.lost = sent_hint;
    }
    clock_point_t *fwd = xmalloc((n ? n : 1) * sizeof *fwd);
    clock_point_t *rev = xmalloc((n ? n : 1) * sizeof *rev);
    size_t nf = 0, nr = 0;
    clock_edge_points(s, n, me, b->id, &self->cfg.purity, fwd, &nf, rev, &nr, &r->purity);
    r->fwd.pure = nf;
    r->rev.pure = nr;
    clock_fit_opts_t fo = self->cfg.fit;
    fo.slope_hint = b->hint;
    if (clock_fit_edge(self->cfg.est, fwd, nf, rev, nr, &fo, &r->fit, r->err) == BASE_OK) {
        r->fitted = true;
        r->fit.window = k;
        r->fit.src = me;
        r->fit.dst = b->id;
        b->hint = r->fit.drift_ppb * 1e-9;
        round_trips(&r->fit, fwd, nf, rev, nr, r);
        self->st.fits++;
    } else {
        self->st.fit_errors++;
    }
    free(fwd);
    free(rev);
}

size_t node_windows_close(node_windows_t *self, int64_t k, const struct node_peer_count *counts,
                          size_t ncounts, struct node_win_result *out, size_t max)
{
    assert(self);
    size_t nout = 0;
    for (size_t p = 0; p < self->npeers; p++) {
        struct peer_buf *b = &self->peers[p];
        uint64_t hint = 0;
        for (size_t c = 0; c < ncounts; c++) {
            if (counts[c].id != b->id)
                continue;
            uint64_t now = counts[c].pairs_sent;
            hint = b->have_last && now >= b->last_pairs_sent ? now - b->last_pairs_sent : now;
            b->last_pairs_sent = now;
            b->have_last = true;
        }
        /* Take window k's samples out; older ones (a window skipped) go too. */
        clock_probe_t *sel = xmalloc((b->n ? b->n : 1) * sizeof *sel);
        size_t nsel = 0, keep = 0;
        for (size_t i = 0; i < b->n; i++) {
            int64_t w = node_window_of(b->t[i], self->cfg.window_ns);
            if (w == k)
                sel[nsel++] = b->s[i];
            if (w > k) {
                b->s[keep] = b->s[i];
                b->t[keep] = b->t[i];
                keep++;
            }
        }
        b->n = keep;
        if ((nsel > 0 || hint > 0) && nout < max)
            fit_one(self, b, sel, nsel, hint, k, &out[nout++]);
        free(sel);
    }
    if (self->last_closed == INT64_MIN || k > self->last_closed)
        self->last_closed = k;
    return nout;
}

void node_windows_stats(const node_windows_t *self, struct node_windows_stats *out)
{
    assert(self);
    *out = self->st;
}
