/*
 * PyTorch profiler traces (Kineto's Chrome trace JSON), plain or gzip.
 *
 * What Kineto writes (docs/IMPORT.md has the details and the sources):
 *   - one JSON object: schemaVersion, deviceProperties, metadata keys
 *     (distributedInfo: rank, world_size, ...), traceEvents, traceName and,
 *     from PyTorch 2.4 on, baseTimeNanoseconds (at the end of the file in
 *     2.4 to early 2025, before traceEvents since);
 *   - `ts` in µs: integers since the Unix epoch up to PyTorch 2.3, "µs.ns"
 *     relative to baseTimeNanoseconds since 2.4; both on the host's
 *     CLOCK_REALTIME (CPU ops through a TSC fit to it, CUPTI records through
 *     the same converter);
 *   - pid / tid: the OS pid and tid for CPU-side events, the device index
 *     and the stream for GPU work, strings for the profiler's own spans;
 *   - flows ("s" / "f", cat ac2g or fwdbwd) with correlation ids as ids.
 * PyTorch built without Kineto (Debian's 1.13) writes a bare array with
 * times relative to the profiler's start and no base: it cannot be placed
 * on any clock unless the user gives the start (FILE@NS).
 *
 * Every event is copied as written except ts, dur (mapped onto the global
 * time base), pid (a lane of its own per file and process), flow ids (made
 * unique over files) and args (dptop_unc_ns and, when not inside the
 * aligned windows, dptop_time added).
 */
#include "tui/import_int.h"

#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Times before this many µs after the epoch (1973) are not absolute. */
#define ABS_MIN_US  100000000000000LL
#define MAX_MEMBERS 128
#define META_MAX    (1u << 20)

static bool detect(const char *head, size_t n)
{
    size_t i = 0;
    while (i < n && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t'))
        i++;
    if (i >= n)
        return false;
    if (head[i] == '[') {
        /* A bare array of events: the legacy profiler's (or any Chrome array). */
        size_t j = i + 1;
        while (j < n && (head[j] == ' ' || head[j] == '\n' || head[j] == '\r' || head[j] == '\t'))
            j++;
        return j < n && head[j] == '{' && memmem(head, n, "\"ph\"", 4) != NULL;
    }
    if (head[i] != '{')
        return false;
    return memmem(head, n, "\"traceEvents\"", 13) != NULL ||
           memmem(head, n, "\"schemaVersion\"", 15) != NULL ||
           memmem(head, n, "\"deviceProperties\"", 18) != NULL;
}

struct ev {
    struct base_jspan ph, ts, dur, pid, tid, id, args, name, cat;
    bool has_ts;
    size_t n;
    /* Not cleared for each event (split fills what it uses). */
    struct base_jspan key[MAX_MEMBERS], val[MAX_MEMBERS];
};

static int split(const struct base_jspan *obj, struct ev *e)
{
    memset(e, 0, offsetof(struct ev, key));
    e->n = 0;
    if (obj->n == 0 || obj->p[0] != '{')
        return BASE_ERR;
    const char *cur = NULL;
    struct base_jspan k, v;
    while (base_jspan_member(obj, &cur, &k, &v)) {
        if (e->n == MAX_MEMBERS)
            return BASE_ERR;
        e->key[e->n] = k;
        e->val[e->n] = v;
        e->n++;
        if (k.n < 2 || k.n > 4)
            continue;
        if (base_jspan_is(&k, "ph"))
            e->ph = v;
        else if (base_jspan_is(&k, "ts")) {
            e->ts = v;
            e->has_ts = true;
        } else if (base_jspan_is(&k, "dur"))
            e->dur = v;
        else if (base_jspan_is(&k, "pid"))
            e->pid = v;
        else if (base_jspan_is(&k, "tid"))
            e->tid = v;
        else if (base_jspan_is(&k, "id"))
            e->id = v;
        else if (base_jspan_is(&k, "args"))
            e->args = v;
        else if (base_jspan_is(&k, "name"))
            e->name = v;
        else if (base_jspan_is(&k, "cat"))
            e->cat = v;
    }
    return BASE_OK;
}

static bool str_is(const struct base_jspan *s, const char *lit)
{
    size_t l = strlen(lit);
    return s->n == l + 2 && s->p[0] == '"' && memcmp(s->p + 1, lit, l) == 0;
}

/* A pid as its key: a number's digits, a string's contents (quotes kept apart). */
static void pid_key(const struct base_jspan *pid, const char **k, size_t *n)
{
    if (pid->n >= 2 && pid->p[0] == '"') {
        *k = pid->p + 1;
        *n = pid->n - 2;
    } else {
        *k = pid->p;
        *n = pid->n;
    }
}

static bool cpu_cat(const struct base_jspan *cat)
{
    static const char *const cats[] = {"cpu_op",      "user_annotation",    "cuda_runtime",
                                       "cuda_driver", "python_function",    "cpu_instant_event",
                                       "xpu_runtime", "privateuse1_runtime"};
    for (size_t i = 0; i < BASE_ARRAY_LEN(cats); i++)
        if (str_is(cat, cats[i]))
            return true;
    return false;
}

static bool gpu_cat(const struct base_jspan *cat)
{
    static const char *const cats[] = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation",
                                       "cuda_sync"};
    for (size_t i = 0; i < BASE_ARRAY_LEN(cats); i++)
        if (str_is(cat, cats[i]))
            return true;
    return false;
}

/*
 * Open a file for a pass: the stream, and whether it is a bare array of
 * events (the legacy format) rather than Kineto's object.
 */
static base_jstream_t *open_trace(const struct imp_file *f, bool *array, char *err)
{
    base_jstream_t *js = base_jstream_open(f->path, IMP_MAX_VALUE, err);
    char c;
    if (js && base_jstream_first(js, &c, err) != BASE_OK)
        base_jstream_destroy(&js);
    if (js)
        *array = c == '[';
    return js;
}

/* ---- pass 1 ----------------------------------------------------------------- */

struct scan_state {
    struct imp_file *f;
    uint64_t pid_votes[8];
    uint32_t pid_cand[8];
    size_t ncand;
    int64_t min_us, max_us; /* ns actually: ts scaled, before the base */
    uint64_t no_ts;
};

static void vote_pid(struct scan_state *st, const struct base_jspan *pid)
{
    int64_t v;
    if (pid->n == 0 || pid->p[0] == '"' || base_jspan_ns(pid, 0, &v) != BASE_OK || v <= 0 ||
        v > UINT32_MAX)
        return;
    for (size_t i = 0; i < st->ncand; i++)
        if (st->pid_cand[i] == (uint32_t)v) {
            st->pid_votes[i]++;
            return;
        }
    if (st->ncand < BASE_ARRAY_LEN(st->pid_cand)) {
        st->pid_cand[st->ncand] = (uint32_t)v;
        st->pid_votes[st->ncand++] = 1;
    }
}

static int scan_event(void *ctx, const struct base_jspan *span, char *err)
{
    struct scan_state *st = ctx;
    struct ev e;
    if (split(span, &e) != BASE_OK)
        return base_err(err, "%s: an element of traceEvents is not an object of at most %d members",
                        st->f->path, MAX_MEMBERS);
    if (str_is(&e.ph, "M") || !e.has_ts) {
        if (!e.has_ts && !str_is(&e.ph, "M"))
            st->no_ts++;
        return BASE_OK;
    }
    int64_t t0, d = 0;
    if (base_jspan_ns(&e.ts, 3, &t0) != BASE_OK)
        return base_err(err, "%s: an event's ts is not a number: %.*s", st->f->path,
                        (int)(e.ts.n > 40 ? 40 : e.ts.n), e.ts.p);
    if (e.dur.n && base_jspan_ns(&e.dur, 3, &d) != BASE_OK)
        return base_err(err, "%s: an event's dur is not a number: %.*s", st->f->path,
                        (int)(e.dur.n > 40 ? 40 : e.dur.n), e.dur.p);
    if (d < 0)
        d = 0;
    const int64_t lim = INT64_C(1) << 62;
    if (t0 <= -lim || t0 >= lim || d >= lim)
        return base_err(err, "%s: an event's time is out of range: ts %.*s", st->f->path,
                        (int)(e.ts.n > 40 ? 40 : e.ts.n), e.ts.p);
    if (t0 < st->min_us)
        st->min_us = t0;
    if (t0 + d > st->max_us)
        st->max_us = t0 + d;
    st->f->events++;
    const char *k;
    size_t kn;
    if (e.pid.n) {
        pid_key(&e.pid, &k, &kn);
        struct imp_pid *p = imp_pid(st->f, k, kn);
        if (gpu_cat(&e.cat))
            p->device = true;
        if (cpu_cat(&e.cat))
            vote_pid(st, &e.pid);
    }
    return BASE_OK;
}

static char *keep_text(const struct base_jspan *v)
{
    if (v->n > META_MAX)
        return NULL;
    /* Kept as JSON text for the metadata: clean it now so it can be written as is. */
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (m == NULL)
        return NULL;
    base_jspan_write(v, m);
    fclose(m);
    return buf;
}

/* The host of TensorBoard's trace handler's file names: HOST_PID.NS.pt.trace.json. */
static void host_of_trace_name(struct imp_file *f, const struct base_jspan *v)
{
    char name[512];
    base_jspan_str(v, name, sizeof name);
    const char *b = strrchr(name, '/');
    b = b ? b + 1 : name;
    const char *dot = strstr(b, ".pt.trace.json");
    if (dot == NULL)
        return;
    const char *first_dot = strchr(b, '.');
    const char *us = NULL;
    for (const char *p = b; p < first_dot; p++)
        if (*p == '_')
            us = p;
    if (us == NULL || us == b)
        return;
    size_t digits = strspn(us + 1, "0123456789");
    if (digits == 0 || us + 1 + digits != first_dot)
        return;
    if (f->main_pid == 0)
        f->main_pid = (uint32_t)strtoul(us + 1, NULL, 10);
    snprintf(f->host, sizeof f->host, "%.*s", (int)(us - b), b);
}

static void dist_info(struct imp_file *f, const struct base_jspan *v)
{
    json_object *o = NULL;
    if (v->n > META_MAX || base_json_parse(v->p, v->n, &o, NULL) != BASE_DEC_OK)
        return;
    int64_t x;
    if (json_object_is_type(o, json_type_object)) {
        if (base_json_get_i64(o, "rank", &x, NULL) == BASE_DEC_OK && x >= 0 && x < INT32_MAX)
            f->rank = (int)x;
        if (base_json_get_i64(o, "world_size", &x, NULL) == BASE_DEC_OK && x > 0 && x < INT32_MAX)
            f->world = (int)x;
    }
    json_object_put(o);
    free(f->dist_info);
    f->dist_info = keep_text(v);
}

static int scan(struct imp_file *f, char *err)
{
    bool array = false;
    base_jstream_t *js = open_trace(f, &array, err);
    if (js == NULL)
        return BASE_ERR;
    struct scan_state st = {.f = f, .min_us = INT64_MAX, .max_us = INT64_MIN};
    int rc = BASE_ERR;
    bool have_events = false, have_base = false;
    int64_t base = 0, schema = -1;
    struct base_jspan v;
    bool first = true;
    if (array) {
        have_events = true;
        if (imp_each(js, scan_event, &st, err) != BASE_OK)
            goto out;
    } else {
        if (base_jstream_expect(js, '{', err) != BASE_OK)
            goto out;
        for (;;) {
            int r = base_jstream_next(js, '}', &first, err);
            if (r < 0)
                goto out;
            if (r == 0)
                break;
            char key[64];
            if (base_jstream_key(js, key, sizeof key, err) != BASE_OK)
                goto out;
            if (strcmp(key, "traceEvents") == 0) {
                if (have_events) {
                    base_err(err, "%s: traceEvents twice", f->path);
                    goto out;
                }
                have_events = true;
                if (imp_each(js, scan_event, &st, err) != BASE_OK)
                    goto out;
                continue;
            }
            if (base_jstream_value(js, &v, err) != BASE_OK)
                goto out;
            if (strcmp(key, "baseTimeNanoseconds") == 0) {
                if (v.p[0] == '"' || base_jspan_ns(&v, 0, &base) != BASE_OK || base < 0 ||
                    base > (INT64_C(1) << 62)) {
                    base_err(
                        err,
                        "%s: baseTimeNanoseconds is not a number of ns (or out of range): %.*s",
                        f->path, (int)(v.n > 40 ? 40 : v.n), v.p);
                    goto out;
                }
                have_base = true;
            } else if (strcmp(key, "schemaVersion") == 0) {
                if (base_jspan_ns(&v, 0, &schema) != BASE_OK)
                    schema = -1;
            } else if (strcmp(key, "distributedInfo") == 0) {
                dist_info(f, &v);
            } else if (strcmp(key, "deviceProperties") == 0) {
                free(f->dev_props);
                f->dev_props = keep_text(&v);
            } else if (strcmp(key, "traceName") == 0 && v.p[0] == '"') {
                host_of_trace_name(f, &v);
            }
        }
        if (base_jstream_end(js, err) != BASE_OK)
            goto out;
    }
    if (array && base_jstream_end(js, err) != BASE_OK)
        goto out;
    if (!have_events) {
        base_err(err, "%s: a JSON object without traceEvents: not a Chrome / PyTorch trace",
                 f->path);
        goto out;
    }
    if (st.ncand) {
        size_t best = 0;
        for (size_t i = 1; i < st.ncand; i++)
            if (st.pid_votes[i] > st.pid_votes[best])
                best = i;
        f->main_pid = st.pid_cand[best];
    }
    f->domain = CLOCK_DOMAIN_PROBE; /* CLOCK_REALTIME of the host */
    f->domain_name = "realtime";
    /* Where the times start from. */
    if (have_base) {
        f->base_ns = base;
        snprintf(f->variant, sizeof f->variant,
                 "Kineto%s%.0" PRId64 ", ts in us relative to baseTimeNanoseconds",
                 schema >= 0 ? " schema " : "", schema >= 0 ? schema : 0);
    } else if (st.f->events && st.max_us / 1000 >= ABS_MIN_US && st.min_us / 1000 >= ABS_MIN_US) {
        snprintf(f->variant, sizeof f->variant, "Kineto%s%.0" PRId64 ", ts in us since the epoch",
                 schema >= 0 ? " schema " : "", schema >= 0 ? schema : 0);
    } else if (f->start_given) {
        f->base_ns = f->start_ns;
        snprintf(f->variant, sizeof f->variant, "%s, ts in us from the start given (@%" PRId64 ")",
                 array ? "legacy PyTorch profiler array" : "Chrome trace", f->start_ns);
    } else if (st.f->events) {
        const char *bn = strrchr(f->path, '/');
        base_err(err,
                 "%s: %s: times count from the profiler's start, no clock can place them "
                 "(PyTorch without Kineto, e.g. Debian's); give the start: --import FILE@NS",
                 bn ? bn + 1 : f->path,
                 array ? "a legacy bare array of events" : "no baseTimeNanoseconds");
        goto out;
    } else {
        snprintf(f->variant, sizeof f->variant, "Kineto, no events");
    }
    if (f->events) {
        if (__builtin_add_overflow(st.min_us, f->base_ns, &f->raw_min) ||
            __builtin_add_overflow(st.max_us, f->base_ns, &f->raw_max)) {
            base_err(err, "%s: times out of range with the base of %" PRId64 " ns", f->path,
                     f->base_ns);
            goto out;
        }
    }
    rc = BASE_OK;
out:
    base_jstream_destroy(&js);
    return rc;
}

/* ---- pass 2 ----------------------------------------------------------------- */

static void write_flow_id(FILE *out, const struct imp_file *f, const struct base_jspan *id)
{
    int64_t v;
    if (id->p[0] != '"' && base_jspan_ns(id, 0, &v) == BASE_OK && v >= 0 && v < (1LL << 32)) {
        fprintf(out, "%" PRIu64, ((uint64_t)(f->index + 1) << 32) | (uint64_t)v);
        return;
    }
    /* Other ids stay apart by a prefix of their file. */
    char s[128];
    base_jspan_str(id, s, sizeof s);
    char pre[160];
    snprintf(pre, sizeof pre, "f%u:%s", f->index + 1, s);
    tui_json_str(out, pre);
}

static void write_args(FILE *out, const struct base_jspan *args, double unc, unsigned flags)
{
    fputs("{", out);
    imp_put_args(out, unc, flags);
    if (args && args->n > 2 && args->p[0] == '{') {
        /* Whatever follows the brace, when the object is not empty. */
        const char *p = args->p + 1;
        while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
            p++;
        if (*p != '}') {
            putc(',', out);
            struct base_jspan rest = {p, (size_t)(args->p + args->n - p), args->clean};
            base_jspan_write(&rest, out);
            return;
        }
    }
    fputs("}", out);
}

struct emit_state {
    struct imp_ctx *ctx;
    struct imp_file *f;
};

/* Sink mode: the event as one of its node's own (kinds from Kineto's
 * categories); what the console has no kind or lane for is left out, uncounted. */
static int sink_event(struct imp_ctx *ctx, struct imp_file *f, const struct ev *e,
                      const struct imp_pid *pid, int64_t t0, int64_t t1, int64_t global, double unc,
                      unsigned flags)
{
    uint8_t kind;
    if (pid == NULL)
        return BASE_OK;
    if (str_is(&e->ph, "i") || str_is(&e->ph, "I"))
        kind = GPU_EV_INSTANT;
    else if (!str_is(&e->ph, "X"))
        return BASE_OK;
    else if (str_is(&e->cat, "kernel"))
        kind = GPU_EV_KERNEL;
    else if (str_is(&e->cat, "gpu_memcpy"))
        kind = GPU_EV_MEMCPY;
    else if (str_is(&e->cat, "gpu_memset"))
        kind = GPU_EV_MEMSET;
    else if (str_is(&e->cat, "cuda_runtime") || str_is(&e->cat, "cuda_driver"))
        kind = GPU_EV_API;
    else
        kind = GPU_EV_RANGE;
    if (pid->device != tui_kind_on_device(kind))
        return BASE_OK; /* device lanes hold GPU work only (not gpu_user_annotation) */
    char name[256];
    base_jspan_str(&e->name, name, sizeof name);
    /* The profiler's step ranges are the steps (torch.profiler's step()). */
    uint64_t step = 0;
    char *endp;
    if (kind == GPU_EV_RANGE && strncmp(name, "ProfilerStep#", 13) == 0 &&
        isdigit((unsigned char)name[13])) {
        step = strtoull(name + 13, &endp, 10);
        if (*endp == 0)
            kind = GPU_EV_STEP;
    }
    int64_t tid = 0;
    if (e->tid.n && e->tid.p[0] != '"')
        base_jspan_ns(&e->tid, 0, &tid);
    struct imp_sink_ev ev = {pid, (uint32_t)(tid < 0 ? -tid : tid), kind, name,
                             t0,  kind == GPU_EV_INSTANT ? t0 : t1, step};
    imp_sink_event(ctx, f, &ev, global, unc, flags);
    return BASE_OK;
}

static int emit_event(void *arg, const struct base_jspan *span, char *err)
{
    struct imp_ctx *ctx = ((struct emit_state *)arg)->ctx;
    struct imp_file *f = ((struct emit_state *)arg)->f;
    struct ev e;
    if (split(span, &e) != BASE_OK)
        return base_err(err, "%s: an element of traceEvents is not an object of at most %d members",
                        f->path, MAX_MEMBERS);
    FILE *out = ctx->out;
    const char *k;
    size_t kn;
    struct imp_pid *pid = NULL;
    if (e.pid.n) {
        pid_key(&e.pid, &k, &kn);
        pid = imp_pid_find(f, k, kn);
    }
    bool meta = str_is(&e.ph, "M");
    if (meta) {
        /* Lanes without events (Kineto names GPUs 0..15 whether or not they
         * exist) are left out, and dptop sorts the lanes itself. */
        if (pid == NULL || str_is(&e.name, "process_sort_index"))
            return BASE_OK;
    }
    int64_t g0 = 0, g1 = 0;
    double unc = NAN;
    unsigned fl = 0;
    bool is_x = str_is(&e.ph, "X");
    bool is_flow = str_is(&e.ph, "s") || str_is(&e.ph, "f") || str_is(&e.ph, "t");
    if (!meta && e.has_ts) {
        int64_t t0, d = 0;
        if (base_jspan_ns(&e.ts, 3, &t0) != BASE_OK ||
            (e.dur.n && base_jspan_ns(&e.dur, 3, &d) != BASE_OK))
            return base_err(err, "%s: an event's time is not a number", f->path);
        if (d < 0)
            d = 0;
        int64_t end;
        if (__builtin_add_overflow(t0, f->base_ns, &t0) || __builtin_add_overflow(t0, d, &end)) {
            f->dropped++; /* pass 1 bounded the file's span: not reached */
            return BASE_OK;
        }
        unsigned f1 = 0;
        double u1;
        if (!imp_map(ctx, f, t0, &g0, &unc, &fl) ||
            (is_x && !imp_map(ctx, f, t0 + d, &g1, &u1, &f1))) {
            f->dropped++;
            return BASE_OK;
        }
        fl |= f1;
        if (!is_x)
            g1 = g0;
        if (g1 < g0)
            g1 = g0;
        if (ctx->sink)
            return sink_event(ctx, f, &e, pid, t0, t0 + (is_x ? d : 0), g0, unc, fl);
        if (!imp_keep(ctx, f, g0, unc, fl))
            return BASE_OK;
    }
    if (ctx->sink)
        return BASE_OK; /* metadata and flows: the console names lanes itself */
    fputs(*ctx->first ? "{" : ",\n{", out);
    *ctx->first = false;
    bool sep = false, wrote_args = false;
    for (size_t i = 0; i < e.n; i++) {
        const struct base_jspan *key = &e.key[i], *val = &e.val[i];
        bool is_ts = val->p == e.ts.p && e.has_ts, is_dur = e.dur.n && val->p == e.dur.p;
        bool is_pid = e.pid.n && val->p == e.pid.p, is_args = e.args.n && val->p == e.args.p;
        bool is_id = e.id.n && val->p == e.id.p;
        if (meta && is_ts)
            continue; /* metadata has no time of its own */
        if (sep)
            putc(',', out);
        sep = true;
        /* The key with its quotes, so that a sanitised copy knows it is a string. */
        struct base_jspan kk = {key->p - 1, key->n + 2, key->clean};
        base_jspan_write(&kk, out);
        putc(':', out);
        if (is_ts && !meta) {
            tui_json_us(out, g0 - ctx->origin);
        } else if (is_dur && !meta) {
            tui_json_us(out, g1 - g0);
        } else if (is_pid && pid) {
            fprintf(out, "%" PRIu32, pid->chrome);
        } else if (is_id && is_flow) {
            write_flow_id(out, f, val);
        } else if (is_args && meta && pid && str_is(&e.name, "process_name")) {
            char own[200] = "";
            const char *cur = NULL;
            struct base_jspan ak, av;
            while (val->p[0] == '{' && base_jspan_member(val, &cur, &ak, &av))
                if (base_jspan_is(&ak, "name"))
                    base_jspan_str(&av, own, sizeof own);
            char label[400];
            imp_process_label(f, pid, own, label, sizeof label);
            fputs("{\"name\":", out);
            tui_json_str(out, label);
            fputs("}", out);
            pid->named = true;
        } else if (is_args && !meta && !is_flow && e.has_ts) {
            write_args(out, val, unc, fl);
            wrote_args = true;
        } else {
            base_jspan_write(val, out);
        }
    }
    if (!meta && !is_flow && e.has_ts && !wrote_args) {
        fputs(sep ? ",\"args\":" : "\"args\":", out);
        write_args(out, NULL, unc, fl);
    }
    fputs("}", out);
    return BASE_OK;
}

static int emit(struct imp_file *f, struct imp_ctx *ctx, char *err)
{
    bool array = false;
    base_jstream_t *js = open_trace(f, &array, err);
    if (js == NULL)
        return BASE_ERR;
    int rc = BASE_ERR;
    bool first = true;
    struct base_jspan v;
    /* To traceEvents: what is around it was read in pass 1. */
    if (!array && base_jstream_expect(js, '{', err) != BASE_OK)
        goto out;
    while (!array) {
        int r = base_jstream_next(js, '}', &first, err);
        if (r <= 0)
            goto out; /* none (pass 1 would have said) or bad input */
        char key[64];
        if (base_jstream_key(js, key, sizeof key, err) != BASE_OK)
            goto out;
        if (strcmp(key, "traceEvents") == 0)
            break;
        if (base_jstream_value(js, &v, err) != BASE_OK)
            goto out;
    }
    struct emit_state st = {ctx, f};
    rc = imp_each(js, emit_event, &st, err);
    if (rc == BASE_OK && ctx->out && ferror(ctx->out))
        rc = base_err(err, "write failed");
out:
    base_jstream_destroy(&js);
    return rc;
}

const struct imp_format imp_kineto = {
    .name = "kineto",
    .what = "PyTorch profiler / Kineto Chrome trace JSON (.json, .json.gz)",
    .detect = detect,
    .scan = scan,
    .emit = emit,
};
