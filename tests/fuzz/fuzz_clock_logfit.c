/*
 * libFuzzer target: fitting a whole probe log (clock_logfit), the path
 * from decoded probes to node maps.  The line decoder has its own target
 * (fuzz_clock_line); a log of valid lines can still hold anything, and a
 * few hundred bytes of JSON give no estimator enough points to reach its
 * numerics.  So the input drives a log instead: its first bytes choose the
 * nodes, their clocks (realistic, or anywhere in 0..CLOCK_TIME_MAX_NS;
 * edits take them below 0), the estimator and the solve mode, a realistic
 * log of coded probes is drawn from them, and
 * every 12 bytes after that edit it: one field of one probe, or one
 * node's clock stepped (seeds h* and the regressions: whole logs; s*:
 * short ones, a fifth of the probes in windows a fifth as long).  Whatever the fit makes of it,
 * every map it calls aligned must be finite, with a positive finite uncertainty over a range in
 * order, and every line it would write must read back.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock/clock.h"
#include "tests/fuzz/fuzz.h"

#define FZ_HEADER 8
#define FZ_EDIT   12
#define FZ_PROBES 1200
/*
 * A whole log only where bit 7 of the clocks' byte asks for one; else a
 * short log, a fifth of the probes in windows a fifth as long (the same
 * number of windows, for a fraction of the fit).  Under libFuzzer and
 * ASan whole logs ran 27-64 inputs a second.
 */
#define FZ_SHORT_PROBES 240
#define FZ_SPAN         (INT64_C(1) << 40)

/* Which invariant broke, and where, before the abort the fuzzer catches. */
#define FZ_FAIL(what, k, f)                                                                        \
    do {                                                                                           \
        fprintf(stderr, "fuzz_clock_logfit: %s %zu (window %lld): offset %g drift %g U %g\n",      \
                what, (size_t)(k), (long long)(f)->window, (f)->offset_ns, (f)->drift_ppb,         \
                (f)->uncertainty_ns);                                                              \
        abort();                                                                                   \
    } while (0)

static uint64_t fz_u64(const uint8_t *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* A probe of a → b sent at `t` on the true clock: clocks offset by off[] and off by ppm[]. */
static void fz_probe(clock_probe_t *p, uint32_t a, uint32_t b, uint64_t seq, int64_t t,
                     const int64_t *off, const double *ppm, uint64_t *rng)
{
    int64_t delay = 5000 + (int64_t)(fuzz_rand(rng) % 3000), gap = 20000;
    int64_t queue = fuzz_rand(rng) % 4 == 0 ? (int64_t)(fuzz_rand(rng) % 20000) : 0;
    p->src = a;
    p->dst = b;
    p->seq = seq;
    for (int k = 0; k < 2; k++) {
        int64_t ts = t + k * gap, tr = ts + delay + (k ? queue : 0);
        p->tx[k] = ts + off[a] + (int64_t)(ppm[a] * 1e-6 * (double)ts) +
                   (int64_t)(fuzz_rand(rng) % 80) - 40;
        p->rx[k] = tr + off[b] + (int64_t)(ppm[b] * 1e-6 * (double)tr) +
                   (int64_t)(fuzz_rand(rng) % 80) - 40;
        p->rx_ok[k] = fuzz_rand(rng) % 64 != 0;
        if (!p->rx_ok[k])
            p->rx[k] = 0;
    }
}

/*
 * One edit: a stamp overwritten, moved or flipped, an end or a sequence
 * number changed, a packet lost or found, or one node's clock stepped
 * from a probe on (every later stamp it made).  Stamps wrap within the
 * decoder's range: it refuses what lies beyond.
 */
static int64_t fz_fold(uint64_t s)
{
    uint64_t half = (uint64_t)CLOCK_TIME_MAX_NS;
    return (int64_t)((s + half) % (2 * half)) - CLOCK_TIME_MAX_NS; /* the range itself unmoved */
}

static void fz_edit(clock_probe_t *probes, size_t n, const uint8_t *e, uint32_t nodes)
{
    size_t at = fz_u64(e, 2) % n;
    clock_probe_t *p = &probes[at];
    uint8_t field = e[2] % 9, op = e[3] % 4;
    uint64_t v = fz_u64(e + 4, 8);
    int64_t *stamp = field < 2 ? &p->tx[field] : field < 4 ? &p->rx[field - 2] : NULL;
    if (stamp != NULL) {
        /* Unsigned arithmetic: wrapping is what an edit may do, not UB in the target. */
        uint64_t s = (uint64_t)*stamp;
        s = op == 0 ? v : op == 1 ? s + (uint64_t)(int64_t)(int32_t)v : op == 2 ? s ^ v : s - v;
        *stamp = fz_fold(s);
    } else if (field == 4 || field == 5) {
        /* One past the nodes: a node with no other edge.  Never a probe to itself (refused). */
        uint32_t id = (uint32_t)(v % (nodes + 1)), *end = field == 4 ? &p->src : &p->dst;
        if (id != (field == 4 ? p->dst : p->src))
            *end = id;
    } else if (field == 6) {
        p->rx_ok[v & 1] = !p->rx_ok[v & 1];
        if (!p->rx_ok[v & 1])
            p->rx[v & 1] = 0; /* as the decoder leaves a null */
    } else if (field == 7) {
        p->seq = v % 16; /* duplicates, and copies that disagree */
    } else {
        /* A step of ±2^31 ns times a power of two up to 2^31. */
        uint32_t node = (uint32_t)(e[3] % nodes);
        uint64_t step = (uint64_t)(int64_t)(int32_t)v << (e[3] >> 3 & 31);
        for (size_t i = at; i < n; i++)
            for (int k = 0; k < 2; k++) {
                if (probes[i].src == node)
                    probes[i].tx[k] = fz_fold((uint64_t)probes[i].tx[k] + step);
                if (probes[i].dst == node && probes[i].rx_ok[k])
                    probes[i].rx[k] = fz_fold((uint64_t)probes[i].rx[k] + step);
            }
    }
}

/* What dpclock fit would write of a fit reads back as that kind of line. */
static void fz_reread(const char *line, size_t len, enum clock_rec_type type)
{
    clock_record_t rec;
    char err[BASE_ERRLEN];
    if (clock_json_decode_line(line, len, &rec, err) != BASE_DEC_OK || rec.type != type) {
        fprintf(stderr, "fuzz_clock_logfit: a fit line does not read back: %.*s\n", (int)len, line);
        abort();
    }
}

static void fz_check(const clock_logfit_t *lf)
{
    char line[4096];
    size_t nn, ne;
    const clock_node_fit_t *nodes = clock_logfit_nodes(lf, &nn);
    const clock_edge_fit_t *edges = clock_logfit_edges(lf, &ne);
    for (size_t i = 0; i < nn; i++) {
        const clock_node_fit_t *f = &nodes[i];
        if (!f->aligned)
            continue;
        /* The reference's map onto itself is exact: 0 there, positive elsewhere. */
        if (!isfinite(f->offset_ns) || !isfinite(f->drift_ppb) || !isfinite(f->uncertainty_ns) ||
            !(f->node == f->ref ? f->uncertainty_ns >= 0 : f->uncertainty_ns > 0) ||
            f->from_ns > f->to_ns)
            FZ_FAIL("node fit", i, f);
    }
    for (size_t i = 0; i < nn; i++)
        fz_reread(line, clock_json_format_node_fit(&nodes[i], line, sizeof line),
                  CLOCK_REC_NODE_FIT);
    for (size_t i = 0; i < ne; i++)
        fz_reread(line, clock_json_format_edge_fit(&edges[i], line, sizeof line),
                  CLOCK_REC_EDGE_FIT);
    for (size_t i = 0; i < ne; i++) {
        const clock_edge_fit_t *f = &edges[i];
        if (!isfinite(f->offset_ns) || !isfinite(f->drift_ppb) || !(f->uncertainty_ns > 0) ||
            f->from_ns > f->to_ns)
            FZ_FAIL("edge fit", i, f);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < FZ_HEADER)
        return 0;
    size_t nest;
    const clock_estimator_t *const *ests = clock_estimators(&nest);
    uint32_t nodes = 2 + data[0] % 3;
    uint64_t rng = fz_u64(data + 1, 2) | 1;
    clock_logfit_opts_t opts;
    clock_logfit_opts_default(&opts);
    opts.est = ests[data[3] % nest];
    opts.causal = data[4] & 1;
    opts.lag = opts.causal ? (data[4] >> 1) % 3 : 0;
    bool short_log = !(data[6] & 0x80);
    size_t nprobes = short_log ? FZ_SHORT_PROBES : FZ_PROBES;
    opts.window_ns = (int64_t)(50 + data[5] % 8 * 50) * (short_log ? 200000 : 1000000);
    if (data[4] & 8) {
        opts.ref_set = true;
        opts.ref = (data[4] >> 4) % (nodes + 1);
    }
    /* Clocks: realistic, or anywhere in 0..CLOCK_TIME_MAX_NS (the log spans < FZ_SPAN). */
    int64_t off[5];
    double ppm[5];
    for (uint32_t i = 0; i < nodes; i++) {
        uint64_t r = fuzz_rand(&rng);
        off[i] = (data[6] & (1u << i)) ? (int64_t)(r % (uint64_t)(CLOCK_TIME_MAX_NS - FZ_SPAN))
                                       : INT64_C(1790000000000000000) + (int64_t)(r % 1000000000);
        ppm[i] = (double)(fuzz_rand(&rng) % 1001) - 500.0;
        if (data[7] & (1u << i))
            ppm[i] = 0;
    }
    /* A ring, and a chord between 0 and 2 when there are four, probed both ways every 2 ms. */
    clock_probe_t *probes = calloc(nprobes, sizeof *probes);
    if (probes == NULL)
        abort();
    size_t n = 0;
    uint64_t seq = 0;
    for (int64_t t = 1000000; n < nprobes; t += 2000000)
        for (uint32_t a = 0; a < nodes && n < nprobes; a++) {
            uint32_t b = (a + 1) % nodes;
            fz_probe(&probes[n++], a, b, seq, t, off, ppm, &rng);
            if (n < nprobes && (nodes > 2 || a == 0))
                fz_probe(&probes[n++], b, a, seq, t + 500000, off, ppm, &rng);
            if (nodes == 4 && a == 0 && n < nprobes)
                fz_probe(&probes[n++], 0, 2, seq, t + 900000, off, ppm, &rng);
            seq++;
        }
    for (size_t pos = FZ_HEADER; pos + FZ_EDIT <= size; pos += FZ_EDIT)
        fz_edit(probes, n, data + pos, nodes);

    clock_logfit_t *lf = clock_logfit_new(&opts);
    for (size_t i = 0; i < n; i++)
        clock_logfit_add(lf, &probes[i]);
    char err[BASE_ERRLEN];
    if (clock_logfit_run(lf, err) == BASE_OK)
        fz_check(lf);
    else if (err[0] == '\0') {
        fprintf(stderr, "fuzz_clock_logfit: an error without a message\n");
        abort();
    }
    clock_logfit_destroy(&lf);
    if (lf != NULL)
        abort();
    free(probes);
    return 0;
}
