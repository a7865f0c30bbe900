/*
 * The simulated clock of SPEC §4.6.
 *
 * Wander is a random walk of the frequency: knots every second after t0, the
 * frequency at knot k is f_k = f_{k−1} + wander_ppb·N(seed, k) (a standard
 * normal that is a pure function of the seed and k), linear in between, and
 * the phase is its integral.  So the wander is smooth (no phase jumps),
 * reproducible from (seed, t) alone, and its frequency has drifted by about
 * wander_ppb·√T ppb after T seconds.  The running sums are cached; past
 * CLOCK_SIM_KNOTS seconds the frequency stays at its last value.
 */
#include "clock/clock_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define KNOT_NS         1000000000LL
#define CLOCK_SIM_KNOTS (7 * 24 * 3600) /* a week of knots at most */

struct clock_sim {
    clock_sim_params_t p;
    double *f;     /* frequency at knot k, ppb */
    double *phase; /* phase at knot k, ns */
    size_t n, cap;
};

clock_sim_t *clock_sim_new(const clock_sim_params_t *params)
{
    assert(params);
    clock_sim_t *self = xcalloc(1, sizeof *self);
    self->p = *params;
    return self;
}

void clock_sim_destroy(clock_sim_t **self)
{
    if (self == NULL || *self == NULL)
        return;
    free((*self)->f);
    free((*self)->phase);
    free(*self);
    *self = NULL;
}

const clock_sim_params_t *clock_sim_params(const clock_sim_t *self)
{
    assert(self);
    return &self->p;
}

static void grow_knots(clock_sim_t *self, size_t k)
{
    if (k >= CLOCK_SIM_KNOTS)
        k = CLOCK_SIM_KNOTS - 1;
    if (self->n > k)
        return;
    if (k + 1 > self->cap) {
        size_t cap = self->cap ? self->cap : 256;
        while (cap < k + 1)
            cap *= 2;
        self->f = xreallocarray(self->f, cap, sizeof *self->f);
        self->phase = xreallocarray(self->phase, cap, sizeof *self->phase);
        self->cap = cap;
    }
    if (self->n == 0) {
        self->f[0] = 0;
        self->phase[0] = 0;
        self->n = 1;
    }
    for (size_t i = self->n; i <= k; i++) {
        self->f[i] = self->f[i - 1] + self->p.wander_ppb * clk_hash_gauss(self->p.seed, i);
        /* 1 ppb over one second is 1 ns. */
        self->phase[i] = self->phase[i - 1] + 0.5 * (self->f[i - 1] + self->f[i]);
    }
    self->n = k + 1;
}

double clock_sim_wander_ns(clock_sim_t *self, int64_t t)
{
    assert(self);
    if (self->p.wander_ppb == 0 || t <= self->p.t0_ns)
        return 0;
    double dt = clk_diff(t, self->p.t0_ns);
    double kf = floor(dt / (double)KNOT_NS);
    if (kf >= CLOCK_SIM_KNOTS - 1) {
        grow_knots(self, CLOCK_SIM_KNOTS - 1);
        size_t last = CLOCK_SIM_KNOTS - 1;
        return self->phase[last] + self->f[last] * (dt / (double)KNOT_NS - (double)last);
    }
    size_t k = (size_t)kf;
    grow_knots(self, k + 1);
    double u = dt / (double)KNOT_NS - kf;
    double f0 = self->f[k], f1 = self->f[k + 1];
    return self->phase[k] + f0 * u + 0.5 * (f1 - f0) * u * u;
}

/* Simulated − real at real time t (without the int64 base). */
static double sim_corr(clock_sim_t *self, int64_t t)
{
    double c = self->p.offset_ns + self->p.drift_ppm * 1e-6 * clk_diff(t, self->p.t0_ns) +
               clock_sim_wander_ns(self, t);
    if (self->p.step_at_ns != 0 && t >= self->p.step_at_ns)
        c += self->p.step_ns;
    return c;
}

int64_t clock_sim_apply(clock_sim_t *self, int64_t t)
{
    assert(self);
    return clk_add(t, sim_corr(self, t));
}

int64_t clock_sim_apply_mono(clock_sim_t *self, int64_t m)
{
    assert(self);
    int64_t t = clk_add(self->p.t0_ns, clk_diff(m, self->p.m0_ns));
    return clk_add(m, sim_corr(self, t));
}

int64_t clock_sim_invert(clock_sim_t *self, int64_t y)
{
    assert(self);
    /* apply(x) − x changes by at most |drift| + wander per ns: fixed-point steps converge. */
    int64_t x = clk_add(y, -self->p.offset_ns);
    for (int it = 0; it < 50; it++) {
        int64_t nx = clk_add(y, -sim_corr(self, x));
        if (nx == x)
            break;
        x = nx;
    }
    for (int it = 0; it < 4 && x > INT64_MIN && clock_sim_apply(self, x) > y; it++)
        x--;
    for (int it = 0; it < 4 && x < INT64_MAX && clock_sim_apply(self, x) < y; it++)
        x++;
    /* Inside the gap a forward step leaves, no reading maps there: the step time. */
    if (self->p.step_at_ns > INT64_MIN && self->p.step_at_ns != 0 && self->p.step_ns > 0) {
        int64_t lo = clock_sim_apply(self, self->p.step_at_ns - 1);
        int64_t hi = clock_sim_apply(self, self->p.step_at_ns);
        if (y > lo && y < hi)
            return self->p.step_at_ns;
    }
    return x;
}

static int parse_number(const char *s, size_t len, double *out, const char *what, char *err)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return base_err(err, "--sim-clock: %s is missing or too long", what);
    memcpy(buf, s, len);
    buf[len] = 0;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (errno != 0 || *end != 0 || !isfinite(v))
        return base_err(err, "--sim-clock: %s \"%s\" is not a number", what, buf);
    *out = v;
    return BASE_OK;
}

int clock_sim_parse_spec(const char *spec, clock_sim_params_t *params, char *err)
{
    assert(spec && params);
    const char *names[5] = {"OFFSET_NS", "DRIFT_PPM", "WANDER_PPB", "STEP_AFTER_S", "STEP_NS"};
    double v[5] = {0, 0, 0, 0, 0};
    size_t i = 0;
    const char *p = spec;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (i >= 5)
            return base_err(err,
                            "--sim-clock \"%s\": expected "
                            "OFFSET_NS,DRIFT_PPM[,WANDER_PPB[,STEP_AFTER_S,STEP_NS]]",
                            spec);
        if (parse_number(p, len, &v[i], names[i], err) != BASE_OK)
            return BASE_ERR;
        i++;
        if (comma == NULL)
            break;
        p = comma + 1;
    }
    if (i < 2 || i == 4)
        return base_err(err,
                        "--sim-clock \"%s\": expected "
                        "OFFSET_NS,DRIFT_PPM[,WANDER_PPB[,STEP_AFTER_S,STEP_NS]]",
                        spec);
    if (fabs(v[0]) > CLOCK_SIM_OFFSET_MAX_NS)
        return base_err(err, "--sim-clock: OFFSET_NS %g is out of range", v[0]);
    if (fabs(v[1]) > CLOCK_SIM_DRIFT_MAX_PPM)
        return base_err(err, "--sim-clock: DRIFT_PPM %g is out of range (|d| <= 10000)", v[1]);
    if (v[2] < 0 || v[2] > CLOCK_SIM_WANDER_MAX_PPB)
        return base_err(err, "--sim-clock: WANDER_PPB %g is out of range (0..1e6)", v[2]);
    if (v[3] < 0 || v[3] > 1e6 || fabs(v[4]) > CLOCK_SIM_STEP_MAX_NS)
        return base_err(err, "--sim-clock: STEP_AFTER_S %g or STEP_NS %g is out of range", v[3],
                        v[4]);
    params->offset_ns = v[0];
    params->drift_ppm = v[1];
    params->wander_ppb = v[2];
    /* A step STEP_AFTER_S after t0 (the caller sets t0 first). */
    params->step_at_ns = i == 5 && v[4] != 0 ? params->t0_ns + (int64_t)llround(v[3] * 1e9) : 0;
    params->step_ns = i == 5 ? v[4] : 0;
    return BASE_OK;
}
