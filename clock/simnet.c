/*
 * Network simulator (SPEC §4.6): nodes with simulated clocks exchanging coded
 * probes over links with a minimum delay, bursty queuing, timestamp noise
 * and loss.  docs/CLOCK.md documents every scenario's parameters.
 *
 * Queuing: each directed link carries cross traffic that alternates between
 * burst periods and quiet periods (exponential lengths).  Within a period,
 * cross-traffic jobs arrive as a Poisson process with exponential sizes at
 * the period's utilisation, and a FIFO queue drains at line rate.  A probe's
 * two packets see the queue of one realisation simulated from a few busy
 * periods before the first packet, so they are correlated the way real
 * back-to-back packets are: a pair is pure mostly when both found the queue
 * empty, sometimes when both waited about equally.
 */
#include "clock/clock_int.h"

#include <stdlib.h>
#include <string.h>

/* clang-format off */
static const clock_scenario_t sc_lan = {
    .name = "lan", .summary = "idle LAN, hardware timestamps (sigma 40 ns), light queuing",
    .ts_sigma_ns = 40, .dmin_lo_ns = 5000, .dmin_hi_ns = 20000, .asym_ns = 20,
    .on_frac = 0.05, .on_mean_ms = 20, .util_on = 0.30, .util_off = 0.02, .job_mean_us = 2,
    .loss = 1e-4, .drift_ppm = 50, .offset_ms = 5, .wander_ppb = 2,
};
static const clock_scenario_t sc_busy = {
    .name = "busy", .summary = "loaded LAN: heavy bursty queuing, hardware timestamps",
    .ts_sigma_ns = 40, .dmin_lo_ns = 5000, .dmin_hi_ns = 20000, .asym_ns = 20,
    .on_frac = 0.5, .on_mean_ms = 50, .util_on = 0.85, .util_off = 0.40, .job_mean_us = 8,
    .loss = 1e-3, .drift_ppm = 50, .offset_ms = 5, .wander_ppb = 2,
};
static const clock_scenario_t sc_oneway = {
    .name = "oneway", .summary = "busy's queuing one way on every link, lan's the other way",
    .ts_sigma_ns = 40, .dmin_lo_ns = 5000, .dmin_hi_ns = 20000, .asym_ns = 20,
    .on_frac = 0.5, .on_mean_ms = 50, .util_on = 0.85, .util_off = 0.40, .job_mean_us = 8,
    .loss = 1e-3, .drift_ppm = 50, .offset_ms = 5, .wander_ppb = 2, .oneway = true,
};
static const clock_scenario_t sc_swts = {
    .name = "swts", .summary = "software timestamps: sigma 400 ns plus late receive stamps",
    .ts_sigma_ns = 400, .ts_tail_prob = 0.05, .ts_tail_mean_ns = 3000,
    .dmin_lo_ns = 15000, .dmin_hi_ns = 40000, .asym_ns = 20,
    .on_frac = 0.05, .on_mean_ms = 20, .util_on = 0.30, .util_off = 0.02, .job_mean_us = 2,
    .loss = 1e-4, .drift_ppm = 50, .offset_ms = 5, .wander_ppb = 2,
};
static const clock_scenario_t sc_asym = {
    .name = "asym", .summary = "asymmetric paths: forward and reverse minimum delays differ by up to 4 us",
    .ts_sigma_ns = 40, .dmin_lo_ns = 5000, .dmin_hi_ns = 20000, .asym_ns = 4000,
    .on_frac = 0.05, .on_mean_ms = 20, .util_on = 0.30, .util_off = 0.02, .job_mean_us = 2,
    .loss = 1e-4, .drift_ppm = 50, .offset_ms = 5, .wander_ppb = 2, .per_network = true,
};
static const clock_scenario_t sc_detour = {
    .name = "detour", .summary = "lan where 2 links take a longer way one direction (2-4 us)",
    .ts_sigma_ns = 40, .dmin_lo_ns = 5000, .dmin_hi_ns = 20000, .asym_ns = 20,
    .detour_links = 2, .detour_ns = 4000,
    .on_frac = 0.05, .on_mean_ms = 20, .util_on = 0.30, .util_off = 0.02, .job_mean_us = 2,
    .loss = 1e-4, .drift_ppm = 50, .offset_ms = 5, .wander_ppb = 2, .per_network = true,
};
static const clock_scenario_t sc_drift = {
    .name = "drift", .summary = "high drift: +-500 ppm per node plus 20 ppb/sqrt(s) wander",
    .ts_sigma_ns = 40, .dmin_lo_ns = 5000, .dmin_hi_ns = 20000, .asym_ns = 20,
    .on_frac = 0.05, .on_mean_ms = 20, .util_on = 0.30, .util_off = 0.02, .job_mean_us = 2,
    .loss = 1e-4, .drift_ppm = 500, .offset_ms = 5, .wander_ppb = 20,
};
static const clock_scenario_t sc_lossy = {
    .name = "lossy", .summary = "lan with 20 % packet loss",
    .ts_sigma_ns = 40, .dmin_lo_ns = 5000, .dmin_hi_ns = 20000, .asym_ns = 20,
    .on_frac = 0.05, .on_mean_ms = 20, .util_on = 0.30, .util_off = 0.02, .job_mean_us = 2,
    .loss = 0.20, .drift_ppm = 50, .offset_ms = 5, .wander_ppb = 2,
};
static const clock_scenario_t sc_slowhost = {
    .name = "slowhost", .summary = "lan where hosts now and then stamp late: 20 % of the time, 0.2-1 us",
    .ts_sigma_ns = 40, .dmin_lo_ns = 5000, .dmin_hi_ns = 20000, .asym_ns = 20,
    .on_frac = 0.05, .on_mean_ms = 20, .util_on = 0.30, .util_off = 0.02, .job_mean_us = 2,
    .loss = 1e-4, .drift_ppm = 50, .offset_ms = 5, .wander_ppb = 2,
    .slow_frac = 0.2, .slow_mean_s = 4, .slow_lo_ns = 200, .slow_hi_ns = 1000, .slow_jitter_ns = 30,
    .seed_runs = 3,
};
static const clock_scenario_t sc_step = {
    .name = "step", .summary = "lan where one node's clock steps by +1 ms mid-run",
    .ts_sigma_ns = 40, .dmin_lo_ns = 5000, .dmin_hi_ns = 20000, .asym_ns = 20,
    .on_frac = 0.05, .on_mean_ms = 20, .util_on = 0.30, .util_off = 0.02, .job_mean_us = 2,
    .loss = 1e-4, .drift_ppm = 50, .offset_ms = 5, .wander_ppb = 2, .step_ns = 1e6,
};
/* clang-format on */

static const clock_scenario_t *const scenarios[] = {&sc_lan,      &sc_busy,   &sc_oneway, &sc_swts,
                                                    &sc_asym,     &sc_detour, &sc_drift,  &sc_lossy,
                                                    &sc_slowhost, &sc_step};

const clock_scenario_t *const *clock_scenarios(size_t *n)
{
    assert(n);
    *n = BASE_ARRAY_LEN(scenarios);
    return scenarios;
}

const clock_scenario_t *clock_scenario_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < BASE_ARRAY_LEN(scenarios); i++)
        if (strcmp(scenarios[i]->name, name) == 0)
            return scenarios[i];
    return NULL;
}

void clock_simnet_opts_default(clock_simnet_opts_t *opts)
{
    assert(opts);
    memset(opts, 0, sizeof *opts);
    opts->seed = 1;
    opts->nodes = 8;
    opts->seconds = 60;
    opts->k = 4;
    opts->cadence_ns = 800000;
    opts->spacing_ns = 100000;
}

void clock_truth_free(clock_truth_t *truth)
{
    if (truth == NULL)
        return;
    free(truth->nodes);
    free(truth->links);
    memset(truth, 0, sizeof *truth);
}

typedef struct dlink {
    double dmin;
    bool on;
    double switch_at; /* true time (ns from start) of the next burst/quiet switch */
    clk_rng_t rng;
    uint64_t seq;
    const clock_scenario_t *traffic; /* whose cross-traffic parameters this direction has */
} dlink_t;

typedef struct snode {
    clock_sim_t *clk;
    uint32_t *partners; /* node indices */
    size_t np;
    size_t rr;
    double next; /* ns from start */
    /* Slow to stamp (slowhost): the current period, its end, its delays. */
    bool slow;
    double slow_until; /* ns from start */
    double late_rx, early_tx;
    clk_rng_t srng;
} snode_t;

/* Advance a host's slow/normal periods to time t (ns from start); its stamp delays then. */
static void host_state(snode_t *n, const clock_scenario_t *sc, double t)
{
    if (!(sc->slow_frac > 0))
        return;
    double slow_mean = sc->slow_mean_s * 1e9;
    double normal_mean = slow_mean * (1 - sc->slow_frac) / sc->slow_frac;
    while (n->slow_until <= t) {
        n->slow = !n->slow;
        n->slow_until += clk_rng_exp(&n->srng, n->slow ? slow_mean : normal_mean);
        double L = clk_rng_uniform(&n->srng, sc->slow_lo_ns, sc->slow_hi_ns);
        double f = clk_rng_unit(&n->srng);
        n->late_rx = n->slow ? f * L : 0;
        n->early_tx = n->slow ? (1 - f) * L : 0;
    }
}

/*
 * How late (> 0) a host stamps a packet it receives, or how early one it sends (as < 0);
 * its jitter times keep (0 in a noiseless run: drawn all the same).
 */
static double host_stamp(snode_t *n, const clock_scenario_t *sc, double t, bool receive,
                         double keep)
{
    host_state(n, sc, t);
    if (!n->slow)
        return 0;
    double d = receive ? n->late_rx : -n->early_tx;
    double j = keep * (sc->slow_jitter_ns > 0 ? clk_rng_exp(&n->srng, sc->slow_jitter_ns) : 0);
    return d + (receive ? j : -j);
}

/* Advance a link's burst/quiet state to time t (ns from start). */
static void link_state(dlink_t *l, double t)
{
    double on_mean = l->traffic->on_mean_ms * 1e6;
    double off_mean = l->traffic->on_frac > 0
                          ? on_mean * (1 - l->traffic->on_frac) / l->traffic->on_frac
                          : INFINITY;
    while (l->switch_at <= t) {
        l->on = !l->on;
        double mean = l->on ? on_mean : off_mean;
        if (!isfinite(mean)) {
            l->switch_at = INFINITY;
            break;
        }
        l->switch_at += clk_rng_exp(&l->rng, mean);
    }
}

/* Queue delays seen by packets at t0 and t1 = t0 + gap (ns), from one realisation. */
static void queue_pair(dlink_t *l, double t0, double gap, double *q0, double *q1)
{
    link_state(l, t0);
    double util = l->on ? l->traffic->util_on : l->traffic->util_off;
    *q0 = *q1 = 0;
    if (util <= 0 || l->traffic->job_mean_us <= 0)
        return;
    if (util > 0.98)
        util = 0.98;
    double job = l->traffic->job_mean_us * 1e3;
    double rate = util / job; /* jobs per ns */
    double horizon = 30.0 * job / (1 - util);
    if (horizon > 2e6)
        horizon = 2e6;
    double t = -horizon, q = 0, last = -horizon;
    bool first = true;
    for (;;) {
        double next = t + clk_rng_exp(&l->rng, 1.0 / rate);
        double probe = first ? 0.0 : gap;
        if (next > probe) {
            double qq = q - (probe - last);
            if (qq < 0)
                qq = 0;
            if (first) {
                *q0 = qq;
                q = qq;
                last = probe;
                t = probe;
                first = false;
                /* The Poisson process is memoryless: restarting at the probe is exact. */
                continue;
            }
            *q1 = qq;
            return;
        }
        q -= next - last;
        if (q < 0)
            q = 0;
        q += clk_rng_exp(&l->rng, job);
        last = next;
        t = next;
    }
}

static double stamp_noise(const clock_scenario_t *sc, clk_rng_t *r, bool receive)
{
    double n = sc->ts_sigma_ns * clk_rng_gauss(r);
    if (receive && sc->ts_tail_prob > 0 && clk_rng_unit(r) < sc->ts_tail_prob)
        n += clk_rng_exp(r, sc->ts_tail_mean_ns);
    return n;
}

int clock_simnet_run(const clock_scenario_t *sc, const clock_simnet_opts_t *opts,
                     int (*emit)(void *ctx, const clock_probe_t *p), void *ctx,
                     clock_truth_t *truth, char *err)
{
    assert(sc && opts && emit && truth);
    memset(truth, 0, sizeof *truth);
    uint32_t N = opts->nodes;
    if (N < 2 || N > 1024)
        return base_err(err, "--nodes %u: between 2 and 1024 nodes", N);
    if (!(opts->seconds > 0) || opts->seconds > 86400)
        return base_err(err, "--seconds %g: between 0 and 86400", opts->seconds);
    if (opts->cadence_ns <= 0 || opts->spacing_ns <= 0 || opts->spacing_ns >= opts->cadence_ns)
        return base_err(err, "probe cadence must exceed the packet spacing");
    clk_rng_t rng = {clk_mix64(opts->seed ^ 0x5eed5eed5eedULL)};
    int64_t start = opts->start_ns;
    if (start == 0)
        start = 1760000000LL * 1000000000LL +
                (int64_t)(clk_rng_unit(&rng) * 9.0e7) * 1000000000LL; /* 2025..2028 */
    double dur = opts->seconds * 1e9;
    snprintf(truth->scenario, sizeof truth->scenario, "%s", sc->name);
    truth->seed = opts->seed;
    truth->start_ns = start;
    truth->end_ns = clk_add(start, dur);
    truth->n_nodes = N;
    truth->nodes = xcalloc(N, sizeof *truth->nodes);

    /* Clocks: node 0 is the usual reference but has an imperfect clock too. */
    uint32_t stepper = N - 1;
    for (uint32_t i = 0; i < N; i++) {
        clock_truth_node_t *t = &truth->nodes[i];
        t->node = i;
        t->p.t0_ns = start;
        t->p.m0_ns = 1000000000000LL + (int64_t)i * 7777777LL;
        t->p.offset_ns = clk_rng_uniform(&rng, -1, 1) * sc->offset_ms * 1e6;
        t->p.drift_ppm = clk_rng_uniform(&rng, -1, 1) * sc->drift_ppm;
        t->p.wander_ppb = sc->wander_ppb;
        t->p.seed = clk_mix64(opts->seed * 1000003ULL + i);
        if (sc->step_ns != 0 && i == stepper) {
            /* Mid-run, deliberately off any window boundary. */
            t->p.step_at_ns = clk_add(start, 0.5 * dur + 0.377e9);
            t->p.step_ns = sc->step_ns;
        }
    }

    /* Probe graph: a ring (strongly connected) plus k − 1 random out-neighbours each. */
    uint32_t k = opts->k ? opts->k : 4;
    if (k > N - 1)
        k = N - 1;
    uint8_t *adj = xcalloc((size_t)N * N, 1), *outm = xcalloc((size_t)N * N, 1);
    for (uint32_t i = 0; i < N; i++) {
        uint32_t j = (i + 1) % N;
        outm[(size_t)i * N + j] = 1;
        adj[(size_t)i * N + j] = adj[(size_t)j * N + i] = 1;
        for (uint32_t c = 1; c < k;) {
            uint32_t r = (uint32_t)(clk_rng_next(&rng) % N);
            if (r == i || outm[(size_t)i * N + r])
                continue;
            outm[(size_t)i * N + r] = 1;
            adj[(size_t)i * N + r] = adj[(size_t)r * N + i] = 1;
            c++;
        }
    }
    free(outm);
    size_t nl = 0;
    for (uint32_t a = 0; a < N; a++)
        for (uint32_t b = a + 1; b < N; b++)
            nl += adj[(size_t)a * N + b];
    truth->links = xcalloc(nl, sizeof *truth->links);
    /* Which links detour: a random few (partial Fisher–Yates over the link order). */
    bool *detour = xcalloc(nl ? nl : 1, sizeof *detour);
    size_t *order = xmalloc((nl ? nl : 1) * sizeof *order);
    for (size_t i = 0; i < nl; i++)
        order[i] = i;
    for (size_t i = 0; i < sc->detour_links && i < nl; i++) {
        size_t j = i + (size_t)(clk_rng_next(&rng) % (nl - i));
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
        detour[order[i]] = true;
    }
    free(order);
    dlink_t *dl = xcalloc((size_t)N * N, sizeof *dl);
    for (uint32_t a = 0; a < N; a++) {
        for (uint32_t b = a + 1; b < N; b++) {
            if (!adj[(size_t)a * N + b])
                continue;
            double base = clk_rng_uniform(&rng, sc->dmin_lo_ns, sc->dmin_hi_ns);
            double asym = clk_rng_uniform(&rng, -1, 1) * sc->asym_ns;
            clock_simnet_link_t *L = &truth->links[truth->n_links++];
            L->a = a;
            L->b = b;
            L->dmin_ab_ns = base + 0.5 * asym;
            L->dmin_ba_ns = base - 0.5 * asym;
            if (detour[truth->n_links - 1]) {
                double extra = clk_rng_uniform(&rng, 0.5, 1.0) * sc->detour_ns;
                if (clk_rng_unit(&rng) < 0.5)
                    L->dmin_ab_ns += extra;
                else
                    L->dmin_ba_ns += extra;
            }
            /* oneway: which direction is the quiet one, per link (drawn only there,
             * so the other scenarios keep their networks). */
            int quiet = sc->oneway ? (int)(clk_rng_next(&rng) & 1) : -1;
            for (int d = 0; d < 2; d++) {
                dlink_t *l = &dl[d == 0 ? (size_t)a * N + b : (size_t)b * N + a];
                l->dmin = d == 0 ? L->dmin_ab_ns : L->dmin_ba_ns;
                l->rng.s = clk_rng_next(&rng);
                l->traffic = d == quiet ? &sc_lan : sc;
                l->on = clk_rng_unit(&l->rng) < l->traffic->on_frac;
                l->switch_at = -1;
                link_state(l, 0);
            }
        }
    }

    free(detour);
    snode_t *nodes = xcalloc(N, sizeof *nodes);
    for (uint32_t i = 0; i < N; i++) {
        nodes[i].clk = clock_sim_new(&truth->nodes[i].p);
        nodes[i].partners = xmalloc(N * sizeof *nodes[i].partners);
        for (uint32_t j = 0; j < N; j++)
            if (adj[(size_t)i * N + j])
                nodes[i].partners[nodes[i].np++] = j;
        qsort(nodes[i].partners, nodes[i].np, sizeof *nodes[i].partners, base_cmp_u32);
        nodes[i].rr = (size_t)(clk_rng_next(&rng) % (nodes[i].np ? nodes[i].np : 1));
        nodes[i].next = clk_rng_uniform(&rng, 0, (double)opts->cadence_ns);
        /* Its own stream, so that the other scenarios keep their networks and noise. */
        nodes[i].srng.s = clk_mix64(opts->seed * 7919ULL + i + 0x510e);
        if (sc->slow_frac > 0) {
            nodes[i].slow = clk_rng_unit(&nodes[i].srng) >= sc->slow_frac; /* flipped at t = 0 */
            nodes[i].slow_until = -1;
            host_state(&nodes[i], sc, 0);
        }
    }

    int rc = BASE_OK;
    clk_rng_t noise = {clk_mix64(opts->seed ^ 0xabcdef12345ULL)};
    for (;;) {
        uint32_t s = 0;
        for (uint32_t i = 1; i < N; i++)
            if (nodes[i].next < nodes[s].next)
                s = i;
        snode_t *sn = &nodes[s];
        if (sn->next >= dur)
            break;
        if (sn->np == 0) {
            sn->next = INFINITY;
            continue;
        }
        uint32_t d = sn->partners[sn->rr];
        sn->rr = (sn->rr + 1) % sn->np;
        dlink_t *l = &dl[(size_t)s * N + d];
        double t0 = sn->next;
        /* The sender's spacing is not exact: the packets carry what the clock said. */
        double gap = (double)opts->spacing_ns + clk_rng_uniform(&noise, -2000, 2000);
        double q[2];
        queue_pair(l, t0, gap, &q[0], &q[1]);
        /*
         * A noiseless run draws the noise too, and drops it, so that every
         * stream stays in step with the noisy run; the receiver's slow spell
         * is read at the noisy arrival time for the same reason (the spells'
         * draws interleave with the jitter's).
         */
        double keep = opts->noiseless ? 0 : 1;
        double q_spell[2] = {q[0], q[1]};
        q[0] *= keep;
        q[1] *= keep;
        clock_probe_t p = {.src = s, .dst = d, .seq = l->seq++};
        for (int i = 0; i < 2; i++) {
            double ts = t0 + (i ? gap : 0);
            int64_t send = clk_add(start, ts);
            int64_t arrive = clk_add(start, ts + l->dmin + q[i]);
            double tx_noise = keep * stamp_noise(sc, &noise, false);
            p.tx[i] = clk_add(clock_sim_apply(sn->clk, send),
                              tx_noise + host_stamp(sn, sc, ts, false, keep));
            p.rx_ok[i] = clk_rng_unit(&noise) >= sc->loss;
            double late = host_stamp(&nodes[d], sc, ts + l->dmin + q_spell[i], true, keep);
            p.rx[i] = p.rx_ok[i] ? clk_add(clock_sim_apply(nodes[d].clk, arrive),
                                           keep * stamp_noise(sc, &noise, true) + late)
                                 : 0;
        }
        if (emit(ctx, &p) != BASE_OK) {
            rc = base_err(err, "simulation stopped by its consumer");
            break;
        }
        sn->next = t0 + (double)opts->cadence_ns * clk_rng_uniform(&noise, 0.9, 1.1);
    }

    for (uint32_t i = 0; i < N; i++) {
        clock_sim_destroy(&nodes[i].clk);
        free(nodes[i].partners);
    }
    free(nodes);
    free(dl);
    free(adj);
    if (rc != BASE_OK)
        clock_truth_free(truth);
    return rc;
}

/* ---- truth.jsonl ---- */

int clock_truth_write(const clock_truth_t *truth, FILE *out, char *err)
{
    assert(truth && out);
    char line[1024];
    fprintf(out,
            "{\"type\":\"sim_scenario\",\"scenario\":\"%s\",\"seed\":%llu,\"start_ns\":%lld,"
            "\"end_ns\":%lld,\"nodes\":%zu}\n",
            truth->scenario, (unsigned long long)truth->seed, (long long)truth->start_ns,
            (long long)truth->end_ns, truth->n_nodes);
    for (size_t i = 0; i < truth->n_nodes; i++) {
        clock_json_format_truth(&truth->nodes[i], line, sizeof line);
        fprintf(out, "%s\n", line);
    }
    for (size_t i = 0; i < truth->n_links; i++) {
        const clock_simnet_link_t *l = &truth->links[i];
        fprintf(out,
                "{\"type\":\"sim_link\",\"a\":%u,\"b\":%u,\"dmin_ab_ns\":%.3f,"
                "\"dmin_ba_ns\":%.3f}\n",
                l->a, l->b, l->dmin_ab_ns, l->dmin_ba_ns);
    }
    if (fflush(out) != 0 || ferror(out))
        return base_err(err, "cannot write the truth file");
    return BASE_OK;
}

int clock_truth_read(FILE *in, clock_truth_t *truth, char *err)
{
    assert(in && truth);
    memset(truth, 0, sizeof *truth);
    clock_lines_t *lr = clock_lines_new(in);
    const char *line;
    size_t len, cap = 0;
    bool over;
    int r, rc = BASE_OK;
    size_t lineno = 0;
    while ((r = clock_lines_next(lr, &line, &len, &over)) == 1) {
        lineno++;
        if (over || len == 0 || strspn(line, " \t\r") == len)
            continue; /* blank, or the CR of a CRLF file */
        json_object *obj;
        char e[BASE_ERRLEN];
        if (base_json_parse(line, len, &obj, e) != BASE_DEC_OK) {
            rc = base_err(err, "truth line %zu: %s", lineno, e);
            break;
        }
        const char *type = NULL;
        base_json_get_str(obj, "type", &type, NULL);
        if (type && strcmp(type, "sim_scenario") == 0) {
            const char *name = "";
            uint64_t seed = 0;
            base_json_get_str(obj, "scenario", &name, NULL);
            base_json_get_u64(obj, "seed", &seed, NULL);
            snprintf(truth->scenario, sizeof truth->scenario, "%s", name);
            truth->seed = seed;
            json_object *v;
            if (json_object_object_get_ex(obj, "start_ns", &v))
                base_json_value_ns(v, &truth->start_ns);
            if (json_object_object_get_ex(obj, "end_ns", &v))
                base_json_value_ns(v, &truth->end_ns);
        } else if (type && strcmp(type, "sim_truth") == 0) {
            clock_record_t rec;
            if (clock_json_decode(obj, &rec, e) != BASE_DEC_OK) {
                json_object_put(obj);
                rc = base_err(err, "truth line %zu: %s", lineno, e);
                break;
            }
            if (truth->n_nodes >= 1u << 20) {
                json_object_put(obj);
                rc = base_err(err, "truth file holds too many nodes");
                break;
            }
            if (truth->n_nodes == cap) {
                cap = cap ? 2 * cap : 16;
                truth->nodes = xreallocarray(truth->nodes, cap, sizeof *truth->nodes);
            }
            truth->nodes[truth->n_nodes++] = rec.u.truth;
        }
        json_object_put(obj);
    }
    clock_lines_destroy(&lr);
    if (r < 0 && rc == BASE_OK)
        rc = base_err(err, "cannot read the truth file");
    if (rc == BASE_OK && truth->n_nodes == 0)
        rc = base_err(err, "no sim_truth lines in the truth file");
    if (rc != BASE_OK)
        clock_truth_free(truth);
    return rc;
}
