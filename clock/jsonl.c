/*
 * The JSON lines of SPEC §4.5 (probe, edge_fit, node_fit) and the sim_truth
 * object of §4.6: one strict decoder for files and bus headers alike, and
 * the writers.  Unknown fields are ignored, lines of other types come back
 * as CLOCK_REC_OTHER, times may be integers or decimals.
 */
#include "clock/clock_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- decoding ---- */

static enum base_dec get_node(json_object *obj, const char *key, uint32_t *out, char *err)
{
    int64_t v;
    enum base_dec rc = base_json_get_i64(obj, key, &v, err);
    if (rc != BASE_DEC_OK)
        return rc;
    if (v < 0 || v > (int64_t)UINT32_MAX) {
        base_err(err, "field \"%s\" = %lld is not a node id (0..%u)", key, (long long)v,
                 UINT32_MAX);
        return BASE_DEC_BAD_VALUE;
    }
    *out = (uint32_t)v;
    return BASE_DEC_OK;
}

/* A time in ns: integer or decimal; absent is an error unless `opt`. */
static enum base_dec get_ns(json_object *obj, const char *key, int64_t *out, bool opt, char *err)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(obj, key, &v) || v == NULL) {
        if (opt)
            return BASE_DEC_OK;
        base_err(err, "missing field \"%s\"", key);
        return BASE_DEC_BAD_TYPE;
    }
    enum base_dec rc = base_json_value_ns(v, out);
    if (rc == BASE_DEC_BAD_TYPE)
        base_err(err, "field \"%s\" must be a number of ns", key);
    else if (rc != BASE_DEC_OK)
        base_err(err, "field \"%s\" is out of range", key);
    return rc;
}

static enum base_dec get_u32(json_object *obj, const char *key, uint32_t *out, char *err)
{
    return get_node(obj, key, out, err);
}

/* An optional number that may also be null (NAN). */
static enum base_dec opt_num(json_object *obj, const char *key, double *out, char *err)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(obj, key, &v) || v == NULL)
        return BASE_DEC_OK;
    return base_json_get_double(obj, key, out, err);
}

/* An optional array of three numbers (each may be null: NAN). */
static enum base_dec opt_triple(json_object *obj, const char *key, double v[3], char *err)
{
    json_object *arr = NULL;
    if (!json_object_object_get_ex(obj, key, &arr) || arr == NULL)
        return BASE_DEC_OK;
    if (!json_object_is_type(arr, json_type_array) || json_object_array_length(arr) != 3) {
        base_err(err, "field \"%s\" must be an array of three numbers", key);
        return BASE_DEC_BAD_TYPE;
    }
    for (size_t i = 0; i < 3; i++) {
        json_object *e = json_object_array_get_idx(arr, i);
        if (e == NULL) {
            v[i] = NAN;
            continue;
        }
        if (!json_object_is_type(e, json_type_double) && !json_object_is_type(e, json_type_int)) {
            base_err(err, "field \"%s\"[%zu] must be a number", key, i);
            return BASE_DEC_BAD_TYPE;
        }
        v[i] = json_object_get_double(e);
        if (!isfinite(v[i])) {
            base_err(err, "field \"%s\"[%zu] is not finite", key, i);
            return BASE_DEC_BAD_VALUE;
        }
    }
    return BASE_DEC_OK;
}

static enum base_dec pair_of_ns(json_object *obj, const char *key, int64_t t[2], bool ok[2],
                                bool nullable, char *err)
{
    json_object *arr = NULL;
    if (!json_object_object_get_ex(obj, key, &arr) || arr == NULL) {
        base_err(err, "missing field \"%s\"", key);
        return BASE_DEC_BAD_TYPE;
    }
    if (!json_object_is_type(arr, json_type_array) || json_object_array_length(arr) != 2) {
        base_err(err, "field \"%s\" must be an array of two times", key);
        return BASE_DEC_BAD_TYPE;
    }
    for (size_t i = 0; i < 2; i++) {
        json_object *v = json_object_array_get_idx(arr, i);
        if (v == NULL && nullable) {
            ok[i] = false;
            t[i] = 0;
            continue;
        }
        if (v == NULL) {
            base_err(err, "field \"%s\"[%zu] must not be null", key, i);
            return BASE_DEC_BAD_VALUE;
        }
        enum base_dec rc = base_json_value_ns(v, &t[i]);
        if (rc != BASE_DEC_OK) {
            base_err(err, "field \"%s\"[%zu] must be a number of ns%s", key, i,
                     nullable ? " or null" : "");
            return rc;
        }
        ok[i] = true;
    }
    return BASE_DEC_OK;
}

#define TRY(x)                                                                                     \
    do {                                                                                           \
        enum base_dec rc_ = (x);                                                                   \
        if (rc_ != BASE_DEC_OK)                                                                    \
            return rc_;                                                                            \
    } while (0)

static enum base_dec decode_probe(json_object *o, clock_probe_t *p, char *err)
{
    memset(p, 0, sizeof *p);
    TRY(get_node(o, "src", &p->src, err));
    TRY(get_node(o, "dst", &p->dst, err));
    if (p->src == p->dst) {
        base_err(err, "probe from node %u to itself", p->src);
        return BASE_DEC_BAD_VALUE;
    }
    json_object *seq = NULL;
    if (json_object_object_get_ex(o, "seq", &seq) && seq != NULL)
        TRY(base_json_get_u64(o, "seq", &p->seq, err));
    bool txok[2];
    TRY(pair_of_ns(o, "tx", p->tx, txok, false, err));
    TRY(pair_of_ns(o, "rx", p->rx, p->rx_ok, true, err));
    for (int i = 0; i < 4; i++) {
        int64_t t = i < 2 ? p->tx[i] : p->rx[i - 2];
        if (t > CLOCK_TIME_MAX_NS || t < -CLOCK_TIME_MAX_NS) {
            base_err(err, "field \"%s\"[%d] = %lld is beyond ±2^62 ns (the years 1824-2116)",
                     i < 2 ? "tx" : "rx", i % 2, (long long)t);
            return BASE_DEC_BAD_VALUE;
        }
    }
    return BASE_DEC_OK;
}

static enum base_dec decode_estimator(json_object *o, char *dst, char *err)
{
    const char *name;
    TRY(base_json_get_str(o, "estimator", &name, err));
    size_t len = strlen(name);
    if (len == 0 || len >= CLOCK_NAME_LEN) {
        base_err(err, "field \"estimator\" must be 1..%d characters", CLOCK_NAME_LEN - 1);
        return BASE_DEC_BAD_VALUE;
    }
    memcpy(dst, name, len + 1);
    return BASE_DEC_OK;
}

static enum base_dec check_unc(double u, const char *key, char *err)
{
    if (u < 0) {
        base_err(err, "field \"%s\" must not be negative", key);
        return BASE_DEC_BAD_VALUE;
    }
    return BASE_DEC_OK;
}

static enum base_dec decode_edge(json_object *o, clock_edge_fit_t *f, char *err)
{
    memset(f, 0, sizeof *f);
    f->margin_ns = f->drift_unc_ppb = f->residual_ns = NAN;
    f->model_ns = NAN;
    for (int j = 0; j < 3; j++)
        f->misfit_ns[j] = f->misfit_sigma_ns[j] = NAN;
    TRY(base_json_get_i64(o, "window", &f->window, err));
    TRY(get_node(o, "src", &f->src, err));
    TRY(get_node(o, "dst", &f->dst, err));
    TRY(decode_estimator(o, f->estimator, err));
    TRY(get_ns(o, "anchor_ns", &f->anchor_ns, false, err));
    TRY(base_json_get_double(o, "offset_ns", &f->offset_ns, err));
    TRY(base_json_get_double(o, "drift_ppb", &f->drift_ppb, err));
    TRY(base_json_get_double(o, "uncertainty_ns", &f->uncertainty_ns, err));
    TRY(check_unc(f->uncertainty_ns, "uncertainty_ns", err));
    TRY(get_u32(o, "n_fwd", &f->n_fwd, err));
    TRY(get_u32(o, "n_rev", &f->n_rev, err));
    TRY(get_ns(o, "from_ns", &f->from_ns, false, err));
    TRY(get_ns(o, "to_ns", &f->to_ns, false, err));
    if (f->to_ns < f->from_ns) {
        base_err(err, "to_ns is before from_ns");
        return BASE_DEC_BAD_VALUE;
    }
    TRY(opt_num(o, "margin_ns", &f->margin_ns, err));
    TRY(opt_num(o, "drift_uncertainty_ppb", &f->drift_unc_ppb, err));
    TRY(opt_num(o, "residual_ns", &f->residual_ns, err));
    TRY(opt_num(o, "model_ns", &f->model_ns, err));
    TRY(opt_triple(o, "misfit_ns", f->misfit_ns, err));
    TRY(opt_triple(o, "misfit_sigma_ns", f->misfit_sigma_ns, err));
    TRY(base_json_opt_bool(o, "suspect", &f->suspect, err));
    TRY(base_json_opt_bool(o, "step", &f->step, err));
    TRY(get_ns(o, "step_at_ns", &f->step_at_ns, true, err));
    TRY(opt_num(o, "step_ns", &f->step_ns, err));
    TRY(opt_num(o, "margin_step_ns", &f->margin_step_ns, err));
    json_object *v = NULL;
    if (json_object_object_get_ex(o, "set_aside", &v) && v != NULL)
        TRY(get_u32(o, "set_aside", &f->set_aside, err));
    return BASE_DEC_OK;
}

static enum base_dec decode_node(json_object *o, clock_node_fit_t *f, char *err)
{
    clock_node_fit_init(f, 0, 0, 0);
    TRY(base_json_get_i64(o, "window", &f->window, err));
    TRY(get_node(o, "node", &f->node, err));
    TRY(get_node(o, "ref", &f->ref, err));
    TRY(get_ns(o, "anchor_ns", &f->anchor_ns, false, err));
    TRY(base_json_get_double(o, "offset_ns", &f->offset_ns, err));
    TRY(base_json_get_double(o, "drift_ppb", &f->drift_ppb, err));
    TRY(base_json_get_double(o, "uncertainty_ns", &f->uncertainty_ns, err));
    TRY(check_unc(f->uncertainty_ns, "uncertainty_ns", err));
    TRY(get_ns(o, "from_ns", &f->from_ns, false, err));
    TRY(get_ns(o, "to_ns", &f->to_ns, false, err));
    if (f->to_ns < f->from_ns) {
        base_err(err, "to_ns is before from_ns");
        return BASE_DEC_BAD_VALUE;
    }
    TRY(base_json_get_bool(o, "aligned", &f->aligned, err));
    TRY(opt_num(o, "drift_uncertainty_ppb", &f->drift_unc_ppb, err));
    TRY(opt_num(o, "model_ns", &f->model_ns, err));
    TRY(opt_num(o, "delay_ns", &f->delay_ns, err));
    TRY(check_unc(isnan(f->delay_ns) ? 0 : f->delay_ns, "delay_ns", err));
    f->warm_ns = 0;
    TRY(opt_num(o, "warm_ns", &f->warm_ns, err));
    TRY(check_unc(isnan(f->warm_ns) ? 0 : f->warm_ns, "warm_ns", err));
    int64_t lag = 0;
    TRY(base_json_opt_i64(o, "lag", &lag, err));
    if (lag < 0 || lag > CLOCK_LAG_MAX) {
        base_err(err, "lag %lld out of range 0..%d", (long long)lag, CLOCK_LAG_MAX);
        return BASE_DEC_BAD_VALUE;
    }
    f->lag = (uint32_t)lag;
    return BASE_DEC_OK;
}

static enum base_dec decode_truth(json_object *o, clock_truth_node_t *t, char *err)
{
    memset(t, 0, sizeof *t);
    TRY(get_node(o, "node", &t->node, err));
    TRY(get_ns(o, "t0_ns", &t->p.t0_ns, false, err));
    TRY(base_json_get_double(o, "offset_ns", &t->p.offset_ns, err));
    TRY(base_json_get_double(o, "drift_ppm", &t->p.drift_ppm, err));
    TRY(base_json_opt_double(o, "wander_ppb", &t->p.wander_ppb, err));
    TRY(get_ns(o, "m0_ns", &t->p.m0_ns, true, err));
    json_object *seed = NULL;
    if (json_object_object_get_ex(o, "seed", &seed) && seed != NULL)
        TRY(base_json_get_u64(o, "seed", &t->p.seed, err));
    TRY(get_ns(o, "step_at_ns", &t->p.step_at_ns, true, err));
    TRY(base_json_opt_double(o, "step_ns", &t->p.step_ns, err));
    if (fabs(t->p.drift_ppm) > CLOCK_SIM_DRIFT_MAX_PPM || t->p.wander_ppb < 0 ||
        t->p.wander_ppb > CLOCK_SIM_WANDER_MAX_PPB) {
        base_err(err, "sim_truth of node %u: drift or wander out of range", t->node);
        return BASE_DEC_BAD_VALUE;
    }
    if (!(fabs(t->p.offset_ns) <= CLOCK_SIM_OFFSET_MAX_NS) ||
        !(fabs(t->p.step_ns) <= CLOCK_SIM_STEP_MAX_NS)) {
        base_err(err, "sim_truth of node %u: offset %g ns or step %g ns out of range", t->node,
                 t->p.offset_ns, t->p.step_ns);
        return BASE_DEC_BAD_VALUE;
    }
    return BASE_DEC_OK;
}

enum base_dec clock_json_decode(json_object *obj, clock_record_t *out, char *err)
{
    assert(out);
    memset(out, 0, sizeof *out);
    if (obj == NULL || !json_object_is_type(obj, json_type_object)) {
        base_err(err, "not a JSON object");
        return BASE_DEC_BAD_TYPE;
    }
    const char *type;
    TRY(base_json_get_str(obj, "type", &type, err));
    if (strcmp(type, "probe") == 0) {
        out->type = CLOCK_REC_PROBE;
        return decode_probe(obj, &out->u.probe, err);
    }
    if (strcmp(type, "edge_fit") == 0) {
        out->type = CLOCK_REC_EDGE_FIT;
        return decode_edge(obj, &out->u.edge, err);
    }
    if (strcmp(type, "node_fit") == 0) {
        out->type = CLOCK_REC_NODE_FIT;
        return decode_node(obj, &out->u.node, err);
    }
    if (strcmp(type, "sim_truth") == 0) {
        out->type = CLOCK_REC_SIM_TRUTH;
        return decode_truth(obj, &out->u.truth, err);
    }
    out->type = CLOCK_REC_OTHER;
    return BASE_DEC_OK;
}

enum base_dec clock_json_decode_line(const char *line, size_t len, clock_record_t *out, char *err)
{
    assert(out);
    memset(out, 0, sizeof *out);
    if (len > CLOCK_MAX_LINE) {
        base_err(err, "line of %zu bytes is longer than %d", len, CLOCK_MAX_LINE);
        return BASE_DEC_OVERSIZED;
    }
    json_object *obj;
    enum base_dec rc = base_json_parse(line, len, &obj, err);
    if (rc != BASE_DEC_OK)
        return rc;
    rc = clock_json_decode(obj, out, err);
    json_object_put(obj);
    return rc;
}

/* ---- encoding ---- */

typedef struct out {
    char *buf;
    size_t cap, len;
} out_t;

static void put(out_t *o, const char *fmt, ...) BASE_PRINTF(2, 3);
static void put(out_t *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->cap ? o->cap - o->len : 0;
    int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

/* A number, or null when it is not finite (JSON has no NaN). */
static void put_num(out_t *o, const char *key, double v, int prec)
{
    if (isfinite(v))
        put(o, ",\"%s\":%.*f", key, prec, v);
    else
        put(o, ",\"%s\":null", key);
}

static void put_triple(out_t *o, const char *key, const double v[3])
{
    if (!isfinite(v[0]) && !isfinite(v[1]) && !isfinite(v[2]))
        return;
    put(o, ",\"%s\":[", key);
    for (int i = 0; i < 3; i++) {
        if (isfinite(v[i]))
            put(o, "%s%.3f", i ? "," : "", v[i]);
        else
            put(o, "%snull", i ? "," : "");
    }
    put(o, "]");
}

static void put_str(out_t *o, const char *key, const char *s)
{
    put(o, ",\"%s\":\"", key);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            put(o, "\\%c", c);
        else if (c < 0x20)
            put(o, "\\u%04x", c);
        else
            put(o, "%c", c);
    }
    put(o, "\"");
}

static size_t finish(out_t *o)
{
    if (o->cap == 0)
        return o->len;
    if (o->len >= o->cap)
        o->buf[o->cap - 1] = 0;
    return o->len < o->cap ? o->len : o->cap - 1;
}

size_t clock_json_format_probe(const clock_probe_t *p, char *buf, size_t cap)
{
    assert(p);
    out_t o = {buf, cap, 0};
    put(&o, "{\"type\":\"probe\",\"src\":%u,\"dst\":%u,\"seq\":%llu,\"tx\":[%lld,%lld],\"rx\":[",
        p->src, p->dst, (unsigned long long)p->seq, (long long)p->tx[0], (long long)p->tx[1]);
    for (int i = 0; i < 2; i++) {
        if (p->rx_ok[i])
            put(&o, "%s%lld", i ? "," : "", (long long)p->rx[i]);
        else
            put(&o, "%snull", i ? "," : "");
    }
    put(&o, "]}");
    return finish(&o);
}

size_t clock_json_format_edge_fit(const clock_edge_fit_t *f, char *buf, size_t cap)
{
    assert(f);
    out_t o = {buf, cap, 0};
    put(&o, "{\"type\":\"edge_fit\",\"window\":%lld,\"src\":%u,\"dst\":%u", (long long)f->window,
        f->src, f->dst);
    put_str(&o, "estimator", f->estimator);
    put(&o, ",\"anchor_ns\":%lld", (long long)f->anchor_ns);
    put_num(&o, "offset_ns", f->offset_ns, 3);
    put_num(&o, "drift_ppb", f->drift_ppb, 4);
    put_num(&o, "uncertainty_ns", f->uncertainty_ns, 3);
    put(&o, ",\"n_fwd\":%u,\"n_rev\":%u,\"from_ns\":%lld,\"to_ns\":%lld", f->n_fwd, f->n_rev,
        (long long)f->from_ns, (long long)f->to_ns);
    put_num(&o, "margin_ns", f->margin_ns, 3);
    put_num(&o, "drift_uncertainty_ppb", f->drift_unc_ppb, 4);
    put_num(&o, "model_ns", f->model_ns, 3);
    put_triple(&o, "misfit_ns", f->misfit_ns);
    put_triple(&o, "misfit_sigma_ns", f->misfit_sigma_ns);
    put_num(&o, "residual_ns", f->residual_ns, 3);
    if (f->suspect)
        put(&o, ",\"suspect\":true");
    if (f->step) {
        put(&o, ",\"step\":true,\"step_at_ns\":%lld", (long long)f->step_at_ns);
        put_num(&o, "step_ns", f->step_ns, 1);
    }
    if (f->margin_step_ns != 0 && isfinite(f->margin_step_ns))
        put_num(&o, "margin_step_ns", f->margin_step_ns, 1);
    if (f->set_aside > 0)
        put(&o, ",\"set_aside\":%u", f->set_aside);
    put(&o, "}");
    return finish(&o);
}

size_t clock_json_format_node_fit(const clock_node_fit_t *f, char *buf, size_t cap)
{
    assert(f);
    out_t o = {buf, cap, 0};
    put(&o, "{\"type\":\"node_fit\",\"window\":%lld,\"node\":%u,\"ref\":%u,\"anchor_ns\":%lld",
        (long long)f->window, f->node, f->ref, (long long)f->anchor_ns);
    put_num(&o, "offset_ns", f->aligned ? f->offset_ns : 0, 3);
    put_num(&o, "drift_ppb", f->aligned ? f->drift_ppb : 0, 4);
    put_num(&o, "uncertainty_ns", f->aligned ? f->uncertainty_ns : 0, 3);
    put(&o, ",\"from_ns\":%lld,\"to_ns\":%lld,\"aligned\":%s", (long long)f->from_ns,
        (long long)f->to_ns, f->aligned ? "true" : "false");
    put_num(&o, "drift_uncertainty_ppb", f->drift_unc_ppb, 4);
    put_num(&o, "model_ns", f->aligned ? f->model_ns : NAN, 3);
    put_num(&o, "delay_ns", f->aligned ? f->delay_ns : NAN, 3);
    if (f->aligned && f->warm_ns > 0)
        put_num(&o, "warm_ns", f->warm_ns, 3);
    if (f->lag > 0)
        put(&o, ",\"lag\":%u", f->lag);
    put(&o, "}");
    return finish(&o);
}

size_t clock_json_format_truth(const clock_truth_node_t *t, char *buf, size_t cap)
{
    assert(t);
    out_t o = {buf, cap, 0};
    put(&o, "{\"type\":\"sim_truth\",\"node\":%u,\"t0_ns\":%lld,\"m0_ns\":%lld", t->node,
        (long long)t->p.t0_ns, (long long)t->p.m0_ns);
    put_num(&o, "offset_ns", t->p.offset_ns, 3);
    put_num(&o, "drift_ppm", t->p.drift_ppm, 6);
    put_num(&o, "wander_ppb", t->p.wander_ppb, 6);
    put(&o, ",\"seed\":%llu,\"step_at_ns\":%lld", (unsigned long long)t->p.seed,
        (long long)t->p.step_at_ns);
    put_num(&o, "step_ns", t->p.step_ns, 3);
    put(&o, ",\"simulation_only\":true}");
    return finish(&o);
}

static json_object *num(double v, int prec)
{
    if (!isfinite(v))
        return NULL;
    char s[64];
    snprintf(s, sizeof s, "%.*f", prec, v);
    return json_object_new_double_s(v, s);
}

json_object *clock_json_edge_fit(const clock_edge_fit_t *f)
{
    assert(f);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "type", json_object_new_string("edge_fit"));
    json_object_object_add(o, "window", json_object_new_int64(f->window));
    json_object_object_add(o, "src", json_object_new_int64(f->src));
    json_object_object_add(o, "dst", json_object_new_int64(f->dst));
    json_object_object_add(o, "estimator", json_object_new_string(f->estimator));
    json_object_object_add(o, "anchor_ns", json_object_new_int64(f->anchor_ns));
    json_object_object_add(o, "offset_ns", num(f->offset_ns, 3));
    json_object_object_add(o, "drift_ppb", num(f->drift_ppb, 4));
    json_object_object_add(o, "uncertainty_ns", num(f->uncertainty_ns, 3));
    json_object_object_add(o, "n_fwd", json_object_new_int64(f->n_fwd));
    json_object_object_add(o, "n_rev", json_object_new_int64(f->n_rev));
    json_object_object_add(o, "from_ns", json_object_new_int64(f->from_ns));
    json_object_object_add(o, "to_ns", json_object_new_int64(f->to_ns));
    json_object_object_add(o, "margin_ns", num(f->margin_ns, 3));
    json_object_object_add(o, "drift_uncertainty_ppb", num(f->drift_unc_ppb, 4));
    json_object_object_add(o, "model_ns", num(f->model_ns, 3));
    if (isfinite(f->misfit_ns[0]) || isfinite(f->misfit_ns[1]) || isfinite(f->misfit_ns[2])) {
        json_object *a = json_object_new_array(), *b = json_object_new_array();
        for (int j = 0; j < 3; j++) {
            json_object_array_add(a, num(f->misfit_ns[j], 3));
            json_object_array_add(b, num(f->misfit_sigma_ns[j], 3));
        }
        json_object_object_add(o, "misfit_ns", a);
        json_object_object_add(o, "misfit_sigma_ns", b);
    }
    json_object_object_add(o, "residual_ns", num(f->residual_ns, 3));
    if (f->suspect)
        json_object_object_add(o, "suspect", json_object_new_boolean(1));
    if (f->step) {
        json_object_object_add(o, "step", json_object_new_boolean(1));
        json_object_object_add(o, "step_at_ns", json_object_new_int64(f->step_at_ns));
        json_object_object_add(o, "step_ns", num(f->step_ns, 1));
    }
    if (f->margin_step_ns != 0 && isfinite(f->margin_step_ns))
        json_object_object_add(o, "margin_step_ns", num(f->margin_step_ns, 1));
    if (f->set_aside > 0)
        json_object_object_add(o, "set_aside", json_object_new_int64(f->set_aside));
    return o;
}

json_object *clock_json_node_fit(const clock_node_fit_t *f)
{
    assert(f);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "type", json_object_new_string("node_fit"));
    json_object_object_add(o, "window", json_object_new_int64(f->window));
    json_object_object_add(o, "node", json_object_new_int64(f->node));
    json_object_object_add(o, "ref", json_object_new_int64(f->ref));
    json_object_object_add(o, "anchor_ns", json_object_new_int64(f->anchor_ns));
    json_object_object_add(o, "offset_ns", num(f->aligned ? f->offset_ns : 0, 3));
    json_object_object_add(o, "drift_ppb", num(f->aligned ? f->drift_ppb : 0, 4));
    json_object_object_add(o, "uncertainty_ns", num(f->aligned ? f->uncertainty_ns : 0, 3));
    json_object_object_add(o, "from_ns", json_object_new_int64(f->from_ns));
    json_object_object_add(o, "to_ns", json_object_new_int64(f->to_ns));
    json_object_object_add(o, "aligned", json_object_new_boolean(f->aligned));
    json_object_object_add(o, "drift_uncertainty_ppb", num(f->drift_unc_ppb, 4));
    json_object_object_add(o, "model_ns", num(f->aligned ? f->model_ns : NAN, 3));
    json_object_object_add(o, "delay_ns", num(f->aligned ? f->delay_ns : NAN, 3));
    if (f->aligned && f->warm_ns > 0)
        json_object_object_add(o, "warm_ns", num(f->warm_ns, 3));
    if (f->lag > 0)
        json_object_object_add(o, "lag", json_object_new_int64(f->lag));
    return o;
}

json_object *clock_json_truth(const clock_truth_node_t *t)
{
    assert(t);
    json_object *o = json_object_new_object();
    json_object_object_add(o, "type", json_object_new_string("sim_truth"));
    json_object_object_add(o, "node", json_object_new_int64(t->node));
    json_object_object_add(o, "t0_ns", json_object_new_int64(t->p.t0_ns));
    json_object_object_add(o, "m0_ns", json_object_new_int64(t->p.m0_ns));
    json_object_object_add(o, "offset_ns", num(t->p.offset_ns, 3));
    json_object_object_add(o, "drift_ppm", num(t->p.drift_ppm, 6));
    json_object_object_add(o, "wander_ppb", num(t->p.wander_ppb, 6));
    json_object_object_add(o, "seed", json_object_new_uint64(t->p.seed));
    json_object_object_add(o, "step_at_ns", json_object_new_int64(t->p.step_at_ns));
    json_object_object_add(o, "step_ns", num(t->p.step_ns, 3));
    json_object_object_add(o, "simulation_only", json_object_new_boolean(1));
    return o;
}

/* ---- bounded line reader ---- */

struct clock_lines {
    FILE *in;
    bool first; /* no line read yet */
    char buf[CLOCK_MAX_LINE + 1];
};

clock_lines_t *clock_lines_new(FILE *in)
{
    assert(in);
    clock_lines_t *self = xmalloc(sizeof *self);
    self->in = in;
    self->first = true;
    return self;
}

void clock_lines_destroy(clock_lines_t **self)
{
    if (self == NULL || *self == NULL)
        return;
    free(*self);
    *self = NULL;
}

int clock_lines_next(clock_lines_t *self, const char **line, size_t *len, bool *oversized)
{
    assert(self && line && len && oversized);
    size_t n = 0;
    bool got = false, over = false;
    for (;;) {
        int c = getc_unlocked(self->in);
        if (c == EOF) {
            if (ferror(self->in))
                return -1;
            if (!got)
                return 0;
            break;
        }
        got = true;
        if (c == '\n')
            break;
        if (n < CLOCK_MAX_LINE)
            self->buf[n++] = (char)c;
        else
            over = true;
    }
    self->buf[n] = 0;
    *line = self->buf;
    /* A UTF-8 byte order mark, as some editors write one, is not the line's. */
    if (self->first && !over && n >= 3 && memcmp(self->buf, "\xEF\xBB\xBF", 3) == 0) {
        *line += 3;
        n -= 3;
    }
    self->first = false;
    *len = over ? 0 : n;
    *oversized = over;
    return 1;
}
