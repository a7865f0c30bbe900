/*
 * The map filter shared by `dpclock map` (maps from a fit log) and
 * `dptop --replay REC --map` (maps from a recording): times of a node's
 * clock in, global times out, one line for one line, so any tool can put
 * its own timestamps on dptop's clock with a pipe.
 *
 * Input lines, either
 *   text:        T | NODE CLOCK T      (T in ns, integer or decimal)
 *   JSON lines:  {"node": N, "clock": "realtime", "t_ns": T, ...}
 * where NODE and CLOCK fall back to the defaults given on the command line.
 * Output, in the same form:
 *   text:        GLOBAL_NS UNCERTAINTY_NS FLAGS   (nan: no uncertainty; -: no flags)
 *   JSON lines:  the input object plus "global_ns", "unc_ns", "flags"
 * A line that cannot be mapped gives "error: ..." (text) or {"error": ...}
 * and is counted; blank lines and # comments are copied as they are.
 */
#include "clock/clock_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    uint32_t domain;
} domains[] = {
    {"realtime", CLOCK_DOMAIN_PROBE},  {"probe", CLOCK_DOMAIN_PROBE},
    {"monotonic", CLOCK_DOMAIN_TRACE}, {"trace", CLOCK_DOMAIN_TRACE},
    {"boottime", CLOCK_DOMAIN_BOOT},
};

int clock_domain_parse(const char *name, uint32_t *domain)
{
    assert(name && domain);
    for (size_t i = 0; i < BASE_ARRAY_LEN(domains); i++)
        if (strcmp(name, domains[i].name) == 0) {
            *domain = domains[i].domain;
            return BASE_OK;
        }
    if (strncmp(name, "gpu", 3) == 0 && name[3] >= '0' && name[3] <= '9') {
        char *end;
        long d = strtol(name + 3, &end, 10);
        if (*end == '\0' && d >= 0 && d < 48) {
            *domain = CLOCK_DOMAIN_GPU0 + (uint32_t)d;
            return BASE_OK;
        }
    }
    return BASE_ERR;
}

const char *clock_domain_name(uint32_t domain, char *buf, size_t len)
{
    assert(buf && len > 0);
    if (domain >= CLOCK_DOMAIN_GPU0)
        snprintf(buf, len, "gpu%u", domain - CLOCK_DOMAIN_GPU0);
    else
        snprintf(buf, len, "%s",
                 domain == CLOCK_DOMAIN_PROBE   ? "realtime"
                 : domain == CLOCK_DOMAIN_TRACE ? "monotonic"
                 : domain == CLOCK_DOMAIN_BOOT  ? "boottime"
                                                : "?");
    return buf;
}

static void flag_names(unsigned flags, char *buf, size_t len)
{
    static const struct {
        unsigned bit;
        const char *name;
    } names[] = {{CLOCK_CONV_RAW, "raw"},
                 {CLOCK_CONV_EXTRAPOLATED, "extrapolated"},
                 {CLOCK_CONV_GAP, "gap"},
                 {CLOCK_CONV_STEP, "step"}};
    buf[0] = '\0';
    for (size_t i = 0; i < BASE_ARRAY_LEN(names); i++)
        if (flags & names[i].bit)
            snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? "," : "",
                     names[i].name);
}

/* "123" or "123.5" (ns, rounded exactly: no double at epoch magnitudes). */
static int parse_ns(const char *s, int64_t *out)
{
    struct base_jspan sp = {s, strlen(s), true};
    return base_jspan_ns(&sp, 0, out);
}

static int map_one(const struct clock_map_opts *o, uint32_t node, uint32_t domain, int64_t t,
                   clock_conv_result_t *r, char *err)
{
    r->flags = 0;
    r->uncertainty_ns = NAN;
    return o->map(o->ctx, node, domain, t, r, err);
}

static void text_line(const struct clock_map_opts *o, const char *line, size_t len, FILE *out,
                      struct clock_map_stats *st)
{
    char buf[CLOCK_MAX_LINE + 1], err[BASE_ERRLEN] = "";
    snprintf(buf, sizeof buf, "%.*s", (int)len, line);
    char *tok[4], *save = NULL;
    size_t n = 0;
    for (char *t = strtok_r(buf, " \t\r,", &save); t && n < 4; t = strtok_r(NULL, " \t\r,", &save))
        tok[n++] = t;
    uint32_t node = o->node, domain = o->domain;
    int64_t t = 0;
    bool ok = false;
    if (n == 1 && o->have_node) {
        ok = parse_ns(tok[0], &t) == BASE_OK;
        if (!ok)
            base_err(err, "not a time in ns: %.40s", tok[0]);
    } else if (n == 3) {
        char *end;
        const char *ns = tok[0][0] == 'n' ? tok[0] + 1 : tok[0];
        long v = strtol(ns, &end, 10);
        if (*ns == '\0' || *end != '\0' || v < 0 || v > 65535)
            base_err(err, "not a node: %.40s", tok[0]);
        else if (clock_domain_parse(tok[1], &domain) != BASE_OK)
            base_err(err, "not a clock: %.40s (realtime, monotonic, boottime, gpuN)", tok[1]);
        else if (parse_ns(tok[2], &t) != BASE_OK)
            base_err(err, "not a time in ns: %.40s", tok[2]);
        else {
            node = (uint32_t)v;
            ok = true;
        }
    } else {
        base_err(err, "%s",
                 o->have_node ? "expected T or NODE CLOCK T"
                              : "expected NODE CLOCK T (no --node given)");
    }
    clock_conv_result_t r;
    if (ok && map_one(o, node, domain, t, &r, err) == BASE_OK) {
        char fl[64];
        flag_names(r.flags, fl, sizeof fl);
        if (isfinite(r.uncertainty_ns))
            fprintf(out, "%" PRId64 " %.1f %s\n", r.t, r.uncertainty_ns, fl[0] ? fl : "-");
        else
            fprintf(out, "%" PRId64 " nan %s\n", r.t, fl[0] ? fl : "-");
        st->mapped++;
        if (r.flags)
            st->flagged++;
        return;
    }
    fprintf(out, "error: %s\n", err);
    st->errors++;
}

static void json_line(const struct clock_map_opts *o, const char *line, size_t len, FILE *out,
                      struct clock_map_stats *st)
{
    char err[BASE_ERRLEN] = "";
    json_object *obj = NULL;
    uint32_t node = o->node, domain = o->domain;
    int64_t t = 0;
    bool ok = false;
    if (base_json_parse(line, len, &obj, err) != BASE_DEC_OK)
        goto done;
    if (!json_object_is_type(obj, json_type_object)) {
        base_err(err, "not a JSON object");
        goto done;
    }
    int64_t v = -1;
    const char *clk = NULL;
    json_object *tv;
    if (base_json_opt_i64(obj, "node", &v, err) != BASE_DEC_OK ||
        base_json_opt_str(obj, "clock", &clk, err) != BASE_DEC_OK)
        goto done;
    if (json_object_object_get_ex(obj, "node", NULL) && (v < 0 || v > 65535)) {
        base_err(err, "node %" PRId64 " is out of range", v);
        goto done;
    }
    if (v >= 0)
        node = (uint32_t)v;
    else if (!o->have_node) {
        base_err(err, "no \"node\" (and no --node given)");
        goto done;
    }
    if (v > 65535) {
        base_err(err, "node %" PRId64 " is out of range", v);
        goto done;
    }
    if (clk && clock_domain_parse(clk, &domain) != BASE_OK) {
        base_err(err, "not a clock: %.40s (realtime, monotonic, boottime, gpuN)", clk);
        goto done;
    }
    if (!json_object_object_get_ex(obj, "t_ns", &tv) || base_json_value_ns(tv, &t) != BASE_DEC_OK) {
        base_err(err, "no \"t_ns\" time in ns");
        goto done;
    }
    ok = true;
done:;
    clock_conv_result_t r;
    if (ok && map_one(o, node, domain, t, &r, err) == BASE_OK) {
        json_object_object_add(obj, "global_ns", json_object_new_int64(r.t));
        json_object_object_add(obj, "unc_ns",
                               isfinite(r.uncertainty_ns) ? json_object_new_double(r.uncertainty_ns)
                                                          : NULL);
        json_object *fl = json_object_new_array();
        char names[64];
        flag_names(r.flags, names, sizeof names);
        char *save = NULL;
        for (char *f = strtok_r(names, ",", &save); f; f = strtok_r(NULL, ",", &save))
            json_object_array_add(fl, json_object_new_string(f));
        json_object_object_add(obj, "flags", fl);
        fprintf(out, "%s\n", json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN));
        st->mapped++;
        if (r.flags)
            st->flagged++;
    } else {
        json_object *e = json_object_new_object();
        json_object_object_add(e, "error", json_object_new_string(err));
        fprintf(out, "%s\n", json_object_to_json_string_ext(e, JSON_C_TO_STRING_PLAIN));
        json_object_put(e);
        st->errors++;
    }
    json_object_put(obj);
}

int clock_map_lines(FILE *in, FILE *out, const struct clock_map_opts *o, struct clock_map_stats *st,
                    char *err)
{
    assert(in && out && o && o->map && st);
    memset(st, 0, sizeof *st);
    clock_lines_t *lr = clock_lines_new(in);
    const char *line;
    size_t len;
    bool over;
    int r;
    while ((r = clock_lines_next(lr, &line, &len, &over)) == 1) {
        st->lines++;
        if (over) {
            fprintf(out, "error: a line longer than %d bytes\n", CLOCK_MAX_LINE);
            st->errors++;
            continue;
        }
        size_t skip = strspn(line, " \t\r");
        if (skip == len || line[skip] == '#') {
            fprintf(out, "%.*s\n", (int)len, line);
            continue;
        }
        if (line[skip] == '{')
            json_line(o, line + skip, len - skip, out, st);
        else
            text_line(o, line + skip, len - skip, out, st);
        /* A pipe reader sees each answer as its question goes in. */
        if (o->flush)
            fflush(out);
    }
    int read_errno = errno;
    clock_lines_destroy(&lr);
    if (r < 0)
        return base_err(err, "reading the times: %s", strerror(read_errno));
    if (fflush(out) != 0 || ferror(out))
        return base_err(err, "writing the global times: %s", strerror(errno ? errno : EIO));
    return BASE_OK;
}
