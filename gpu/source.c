/*
 * The table of GPU sources, the "sim" source, and the helpers every source
 * shares (options, copy kind names).
 */
#include "gpu/gpu_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *gpu_copy_kind_name(enum gpu_copy_kind kind)
{
    static const char *const names[] = {
        [GPU_COPY_UNKNOWN] = "unknown", [GPU_COPY_H2D] = "h2d", [GPU_COPY_D2H] = "d2h",
        [GPU_COPY_D2D] = "d2d",         [GPU_COPY_H2H] = "h2h", [GPU_COPY_P2P] = "p2p",
    };
    return (unsigned)kind < BASE_ARRAY_LEN(names) ? names[kind] : "unknown";
}

/* The next "key=value" item of opts from *pos: key and value spans. */
static bool next_item(const char **pos, const char **k, size_t *klen, const char **v, size_t *vlen)
{
    const char *p = *pos;
    while (*p == ',')
        p++;
    if (*p == '\0')
        return false;
    const char *end = strchr(p, ',');
    if (end == NULL)
        end = p + strlen(p);
    const char *eq = memchr(p, '=', (size_t)(end - p));
    *k = p;
    *klen = eq ? (size_t)(eq - p) : (size_t)(end - p);
    *v = eq ? eq + 1 : end;
    *vlen = eq ? (size_t)(end - eq - 1) : 0;
    *pos = end;
    return true;
}

int gpu_opts_check(const char *opts, const char *const *known, char *err)
{
    if (opts == NULL)
        return BASE_OK;
    const char *pos = opts, *k, *v;
    size_t klen, vlen;
    while (next_item(&pos, &k, &klen, &v, &vlen)) {
        if (klen == 0 || memchr(k, '=', (size_t)(v - k)) == NULL)
            return base_err(err, "source option '%.*s' is not key=value", (int)(klen + vlen + 1),
                            k);
        bool ok = false;
        for (size_t i = 0; known[i] != NULL && !ok; i++)
            ok = strlen(known[i]) == klen && strncmp(known[i], k, klen) == 0;
        if (!ok)
            return base_err(err, "unknown source option '%.*s'", (int)klen, k);
    }
    return BASE_OK;
}

bool gpu_opts_get(const char *opts, const char *key, char *val, size_t len)
{
    if (opts == NULL)
        return false;
    const char *pos = opts, *k, *v;
    size_t klen, vlen;
    bool found = false;
    while (next_item(&pos, &k, &klen, &v, &vlen)) {
        if (strlen(key) == klen && strncmp(key, k, klen) == 0) {
            snprintf(val, len, "%.*s", (int)vlen, v);
            found = true; /* the last one wins */
        }
    }
    return found;
}

int gpu_opts_int(const char *opts, const char *src, const char *key, int64_t lo, int64_t hi,
                 int64_t *out, char *err)
{
    char v[32];
    if (!gpu_opts_get(opts, key, v, sizeof v))
        return BASE_OK;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end != '\0' || x < lo || x > hi)
        return base_err(err, "%s: option %s '%s' is not an integer in [%" PRId64 ", %" PRId64 "]",
                        src, key, v, lo, hi);
    *out = x;
    return BASE_OK;
}

/* ---- the "sim" source ---- */

static int sim_probe(char *err)
{
    return BASE_OK;
}

static void *sim_open(const struct gpu_source_opts *o, char *err)
{
    static const char *const known[] = {"step_ms", "step_us",   "layers", "straggler", "late_us",
                                        "late_ns", "jitter_us", "seed",   "device",    NULL};
    struct gpu_sim_cfg cfg;
    gpu_sim_defaults(&cfg);
    cfg.node = o->node;
    cfg.pid = o->pid;
    int64_t step_ms = cfg.step_period_ns / 1000000, step_us = 0, layers = cfg.layers,
            straggler = -1, late_us = 0, late_ns = -1, jitter_us = 0, seed = 1, device = 0;
    if (gpu_opts_check(o->options, known, err) != BASE_OK ||
        gpu_opts_int(o->options, "sim", "step_ms", 1, 60000, &step_ms, err) != BASE_OK ||
        gpu_opts_int(o->options, "sim", "step_us", 0, 60000000, &step_us, err) != BASE_OK ||
        gpu_opts_int(o->options, "sim", "layers", 1, 64, &layers, err) != BASE_OK ||
        gpu_opts_int(o->options, "sim", "straggler", -1, 65535, &straggler, err) != BASE_OK ||
        gpu_opts_int(o->options, "sim", "late_us", 0, 6000000, &late_us, err) != BASE_OK ||
        gpu_opts_int(o->options, "sim", "late_ns", -1, 6000000000LL, &late_ns, err) != BASE_OK ||
        gpu_opts_int(o->options, "sim", "jitter_us", 0, 6000000, &jitter_us, err) != BASE_OK ||
        gpu_opts_int(o->options, "sim", "seed", 0, INT64_MAX, &seed, err) != BASE_OK ||
        gpu_opts_int(o->options, "sim", "device", 0, 65535, &device, err) != BASE_OK)
        return NULL;
    cfg.step_period_ns = step_us > 0 ? step_us * 1000 : step_ms * 1000000;
    cfg.layers = (uint32_t)layers;
    cfg.straggler_node = (int32_t)straggler;
    cfg.straggler_late_ns = late_ns >= 0 ? late_ns : late_us * 1000;
    cfg.jitter_ns = jitter_us * 1000;
    cfg.seed = (uint64_t)seed;
    cfg.device = (uint16_t)device;
    return gpu_sim_new(&cfg, o->clock, o->clock_ctx, err);
}

static int sim_poll(void *state, int64_t now_ns, gpu_msg_fn fn, void *ctx, char *err)
{
    return gpu_sim_poll(state, now_ns, fn, ctx, err);
}

static void sim_counters(void *state, struct gpu_source_counters *out)
{
    memset(out, 0, sizeof *out);
    out->steps = gpu_sim_steps(state);
    out->skipped = gpu_sim_skipped(state);
}

static void sim_close(void *state)
{
    gpu_sim_t *sim = state;
    gpu_sim_destroy(&sim);
}

static const struct gpu_source gpu_source_sim = {
    .name = "sim",
    .summary = "simulated training workload: steps, kernels, copies, one collective per step",
    .flags = GPU_SRC_IN_AGENT,
    .probe = sim_probe,
    .counters = sim_counters,
    .open = sim_open,
    .poll = sim_poll,
    .close = sim_close,
};

extern const struct gpu_source gpu_source_hip;
/* Defined in libdptrace_cupti.so only (it needs libcupti's callbacks and
 * the library's process state); elsewhere the weak reference is NULL. */
extern const struct gpu_source gpu_source_cupti __attribute__((weak));

const struct gpu_source *gpu_source_find(const char *name)
{
    for (const struct gpu_source *const *s = gpu_sources(); *s != NULL; s++)
        if (strcmp((*s)->name, name) == 0)
            return *s;
    return NULL;
}

const struct gpu_source *const *gpu_sources(void)
{
    /* cupti last: where it is not linked its weak address is NULL and ends
     * the table one entry early. */
    static const struct gpu_source *const table[] = {&gpu_source_hip, &gpu_source_sim,
                                                     &gpu_source_cupti, NULL};
    return table;
}
