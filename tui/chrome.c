/*
 * Chrome Trace Event output (JSON Object Format), for the snapshot key and
 * for --export.  Written with stdio, not json-c: a snapshot holds up to the
 * whole event budget (millions of events) and must not need a DOM.
 *
 * Layout: pid = node id, one tid per track (host threads first, then GPU
 * queues), named by metadata events; "X" complete events with ts/dur in µs
 * (3 decimals: ns resolution) relative to origin_ns on the global time base;
 * "s"/"f" flow events from an API call to the GPU work of the same
 * correlation id; the alignment of every node in "metadata".
 */
#include "tui/tui.h"

#include <assert.h>
#include <errno.h>
#include <sys/stat.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void tui_json_str(FILE *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    putc('"', out);
    while (*p) {
        unsigned char c = *p;
        if (c == '"' || c == '\\') {
            putc('\\', out);
            putc(c, out);
            p++;
        } else if (c < 0x20) {
            fprintf(out, "\\u%04x", c);
            p++;
        } else if (c < 0x80) {
            putc(c, out);
            p++;
        } else {
            /* A whole, shortest-form UTF-8 sequence passes; anything else is U+FFFD. */
            size_t len = base_utf8_len(p, p + strnlen((const char *)p, 4));
            if (len > 0) {
                fwrite(p, 1, len, out);
                p += len;
            } else {
                fputs("\\ufffd", out);
                p++;
            }
        }
    }
    putc('"', out);
}

/* ns as µs with 3 decimals, exactly. */
void tui_json_us(FILE *out, int64_t ns)
{
    if (ns < 0) {
        putc('-', out);
        ns = ns == INT64_MIN ? INT64_MAX : -ns;
    }
    fprintf(out, "%" PRId64 ".%03d", ns / 1000, (int)(ns % 1000));
}

/* A flow arrow binds in Chrome DevTools only to a slice of its own category
 * (and in Perfetto only to one flow of that category): API calls and the
 * GPU work they launch share "gpu", their kind in args.kind. */
static const char *kind_cat(uint8_t kind)
{
    switch (kind) {
    case GPU_EV_KERNEL:
    case GPU_EV_MEMCPY:
    case GPU_EV_MEMSET:
    case GPU_EV_API:
        return "gpu";
    case GPU_EV_SYNC:
        return "sync";
    case GPU_EV_RANGE:
        return "range";
    case GPU_EV_STEP:
        return "step";
    case GPU_EV_INSTANT:
        return "mark";
    default:
        return "event";
    }
}

struct flow_end {
    uint16_t node;
    bool api;
    uint32_t pid, corr, tid;
    int64_t rel; /* ns from origin */
};

static int cmp_flow(const void *pa, const void *pb)
{
    const struct flow_end *a = pa, *b = pb;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->corr != b->corr)
        return a->corr < b->corr ? -1 : 1;
    if (a->api != b->api)
        return a->api ? -1 : 1; /* the API call first */
    return (a->rel > b->rel) - (a->rel < b->rel);
}

/* Chrome tids: host threads first, then GPU queues, each in key order. */
static int cmp_track(const void *pa, const void *pb, void *arg)
{
    const tui_store_t *s = arg;
    const struct tui_track_key *a = &tui_store_track(s, *(const size_t *)pa)->key;
    const struct tui_track_key *b = &tui_store_track(s, *(const size_t *)pb)->key;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    if (a->host != b->host)
        return a->host ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static void write_args(FILE *out, const tui_ev_t *e, const struct tui_track_key *k, bool raw)
{
    fprintf(out, ",\"args\":{\"kind\":\"%s\",\"trace_ns\":%" PRId64,
            gpu_event_kind_name((enum gpu_event_kind)e->kind), e->start);
    if (e->corr_id)
        fprintf(out, ",\"corr\":%" PRIu32, e->corr_id);
    if (e->scope)
        fprintf(out, ",\"scope\":%" PRIu64, e->scope);
    if (!k->host)
        fprintf(out, ",\"device\":%u,\"stream\":%" PRIu32, k->device, k->id);
    else
        fprintf(out, ",\"pid\":%" PRIu32, k->pid);
    if (e->kind == GPU_EV_KERNEL)
        fprintf(out, ",\"grid\":[%" PRIu32 ",%" PRIu32 ",%u],\"block\":[%u,%u,%u]", e->u.k.grid_x,
                e->u.k.grid_y, e->u.k.grid_z, e->u.k.block_x, e->u.k.block_y, e->u.k.block_z);
    else if (e->kind == GPU_EV_MEMCPY || e->kind == GPU_EV_MEMSET)
        fprintf(out, ",\"bytes\":%" PRIu64, e->u.x.bytes);
    if (e->kind == GPU_EV_MEMCPY)
        fprintf(out, ",\"copy\":\"%s\"", gpu_copy_kind_name((enum gpu_copy_kind)e->copy_kind));
    if (e->kind == GPU_EV_STEP)
        fprintf(out, ",\"step\":%" PRIu64, e->u.x.step);
    if (e->flags & GPU_EVF_COLLECTIVE)
        fputs(",\"collective\":true", out);
    if (raw)
        fputs(",\"clock\":\"raw\"", out);
    fputs("}}", out);
}

static void write_alignment(FILE *out, tui_model_t *m)
{
    fputs("\"alignment\":[", out);
    for (size_t i = 0; i < tui_model_nnodes(m); i++) {
        const struct tui_node *n = tui_model_node(m, i);
        bool al = tui_model_aligned(m, n->id);
        fprintf(out, "%s{\"node\":%u,\"host\":", i ? "," : "", n->id);
        tui_json_str(out, n->host);
        fprintf(out, ",\"state\":\"%s\",\"aligned\":%s,\"reference\":%s",
                tui_node_state_name(n->state), al ? "true" : "false", n->is_ref ? "true" : "false");
        if (n->have_fit && n->fit.aligned && isfinite(n->fit.offset_ns)) {
            fprintf(out,
                    ",\"window\":%" PRId64 ",\"anchor_ns\":%" PRId64
                    ",\"offset_ns\":%.3f,\"drift_ppb\":%.3f,\"uncertainty_ns\":%.3f,"
                    "\"from_ns\":%" PRId64 ",\"to_ns\":%" PRId64,
                    n->fit.window, n->fit.anchor_ns, n->fit.offset_ns, n->fit.drift_ppb,
                    isfinite(n->fit.uncertainty_ns) ? n->fit.uncertainty_ns : -1.0, n->fit.from_ns,
                    n->fit.to_ns);
        } else if (n->is_ref) {
            fputs(",\"offset_ns\":0,\"drift_ppb\":0,\"uncertainty_ns\":0", out);
        }
        fputs("}", out);
    }
    fputs("]", out);
}

/* The collectives' process: beyond every node id. */
#define COLL_PID 65536u

struct coll_ctx {
    FILE *out;
    bool *first;
    int64_t origin;
    uint64_t counters;
};

/* Each instance with a call as a point of the "arrival skew" counter track. */
static void coll_counter(void *arg, const tui_coll_t *c, const struct tui_coll_inst *in)
{
    struct coll_ctx *ctx = arg;
    if (in->verdict != TUI_COLL_LATE && in->verdict != TUI_COLL_WITHIN)
        return;
    FILE *out = ctx->out;
    if (ctx->counters++ == 0) {
        fprintf(out,
                "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"args\":{\"name\":"
                "\"collectives: arrival skew\"}}",
                *ctx->first ? "" : ",\n", COLL_PID);
        *ctx->first = false;
    }
    char lab[32];
    tui_coll_label(c, in->last_part, lab, sizeof lab);
    fprintf(out, ",\n{\"ph\":\"C\",\"name\":");
    tui_json_str(out, in->op);
    fprintf(out, ",\"pid\":%u,\"ts\":", COLL_PID);
    tui_json_us(out, in->first_ns - ctx->origin);
    fputs(",\"args\":{\"skew_us\":", out);
    tui_json_us(out, in->skew_ns);
    fputs(",\"late_us\":", out);
    tui_json_us(out, in->verdict == TUI_COLL_LATE ? in->lateness_ns : 0);
    fputs("}}", out);
}

static void write_collectives(FILE *out, const tui_coll_t *c)
{
    struct tui_coll_stats cs;
    tui_coll_stats(c, &cs);
    fprintf(out,
            ",\"collectives\":{\"instances\":%" PRIu64 ",\"late\":%" PRIu64
            ",\"within_uncertainty\":%" PRIu64 ",\"partial\":%" PRIu64 ",\"mismatch\":%" PRIu64
            ",\"unaligned\":%" PRIu64 ",\"ranks\":[",
            cs.instances, cs.late, cs.within, cs.partial, cs.mismatch, cs.unaligned);
    for (size_t i = 0; i < tui_coll_nparts(c); i++) {
        struct tui_coll_part p;
        tui_coll_part(c, i, &p);
        fprintf(out, "%s{\"rank\":", i ? "," : "");
        tui_json_str(out, p.label);
        fprintf(out,
                ",\"node\":%u,\"instances\":%" PRIu64 ",\"last\":%" PRIu64 ",\"late\":%" PRIu64,
                p.key.node, p.instances, p.last, p.late);
        const double v[3] = {p.mean_late_ns, p.p95_late_ns, p.ewma_late_ns};
        const char *const k[3] = {"mean_late_ns", "p95_late_ns", "ewma_late_ns"};
        for (int j = 0; j < 3; j++)
            if (isfinite(v[j]))
                fprintf(out, ",\"%s\":%.0f", k[j], v[j]);
        fputs("}", out);
    }
    fputs("]}", out);
}

/*
 * Viewers keep a thread's slices only where they nest (Perfetto drops one
 * that starts inside an open slice and ends after it).  Real push/pop ranges
 * nest, but two sources on one thread, or maps that moved between two
 * events, may not: such a slice goes to an overlap thread beside its own.
 */
#define CHROME_LEVELS 8
struct level {
    uint32_t tid; /* 0: not made yet */
    int64_t *stack;
    size_t depth, cap;
};

/* The level a slice [g0, g1] nests in; -1: none of them. */
static int level_for(struct level *lv, int64_t g0, int64_t g1)
{
    for (int l = 0; l < CHROME_LEVELS; l++) {
        while (lv[l].depth && lv[l].stack[lv[l].depth - 1] <= g0)
            lv[l].depth--;
        if (lv[l].depth && g1 > lv[l].stack[lv[l].depth - 1])
            continue;
        if (lv[l].depth == lv[l].cap) {
            lv[l].cap = lv[l].cap ? lv[l].cap * 2 : 16;
            lv[l].stack = xreallocarray(lv[l].stack, lv[l].cap, sizeof *lv[l].stack);
        }
        lv[l].stack[lv[l].depth++] = g1;
        return l;
    }
    return -1;
}

static void thread_meta(FILE *out, uint16_t node, uint32_t tid, const char *name)
{
    fprintf(out,
            ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%" PRIu32
            ",\"args\":{\"name\":",
            node, tid);
    tui_json_str(out, name);
    fprintf(out,
            "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%u,\"tid\":%" PRIu32
            ",\"args\":{\"sort_index\":%" PRIu32 "}}",
            node, tid, tid);
}

int tui_chrome_write(tui_model_t *model, FILE *out, const struct tui_chrome_opts *opts,
                     struct tui_chrome_stats *st, char *err)
{
    assert(model && out);
    struct tui_chrome_opts o = {0};
    if (opts)
        o = *opts;
    struct tui_chrome_stats s = {0};
    tui_store_t *store = tui_model_store(model);
    size_t nt = tui_store_ntracks(store);
    size_t *order = xcalloc(nt ? nt : 1, sizeof *order);
    for (size_t i = 0; i < nt; i++)
        order[i] = i;
    qsort_r(order, nt, sizeof *order, cmp_track, store);

    /* Origin: the earliest start (tracks are sorted, conversion is monotonic). */
    int64_t origin = INT64_MAX;
    for (size_t i = 0; i < nt; i++) {
        const struct tui_track_info *ti = tui_store_track(store, i);
        if (ti->count == 0)
            continue;
        int64_t g;
        unsigned fl;
        if (tui_model_to_axis(model, ti->key.node, tui_store_ev(store, i, 0)->start,
                              TUI_CLOCK_ALIGNED, &g, &fl) == BASE_OK &&
            g < origin)
            origin = g;
    }
    if (o.imports && tui_import_first(o.imports) < origin)
        origin = tui_import_first(o.imports);
    if (origin == INT64_MAX)
        origin = 0;
    origin -= origin % 1000000; /* a whole millisecond: readable timestamps */
    s.origin_ns = origin;

    struct flow_end *fe = NULL;
    size_t nfe = 0, capfe = 0;
    /* ts and dur are µs (3 decimals: ns); no displayTimeUnit, which some
     * readers took as the unit of ts. */
    fputs("{\"traceEvents\":[\n", out);
    bool first = true;
    int last_node = -1;
    uint32_t ctid = 0;
    for (size_t oi = 0; oi < nt; oi++) {
        size_t ti = order[oi];
        const struct tui_track_info *info = tui_store_track(store, ti);
        const struct tui_track_key *k = &info->key;
        if (info->count == 0)
            continue;
        bool aligned = tui_model_aligned(model, k->node);
        if ((int)k->node != last_node) {
            last_node = k->node;
            ctid = 0;
            const struct tui_node *n = tui_model_find(model, k->node);
            char pname[160];
            snprintf(pname, sizeof pname, "n%u %s%s", k->node, n && n->host[0] ? n->host : "?",
                     aligned ? "" : " [UNALIGNED: raw clock]");
            fprintf(out, "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"args\":{\"name\":",
                    first ? "" : ",\n", k->node);
            tui_json_str(out, pname);
            fprintf(out,
                    "}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%u,"
                    "\"args\":{\"sort_index\":%u}}",
                    k->node, k->node);
            first = false;
        }
        ctid++;
        char tname[96];
        if (k->host)
            snprintf(tname, sizeof tname, "pid %" PRIu32 " host thread %" PRIu32, k->pid, k->id);
        else
            snprintf(tname, sizeof tname, "pid %" PRIu32 " gpu%u stream %" PRIu32, k->pid,
                     k->device, k->id);
        thread_meta(out, k->node, ctid, tname);
        struct level lv[CHROME_LEVELS];
        memset(lv, 0, sizeof lv);
        lv[0].tid = ctid;
        for (size_t j = 0; j < info->count; j++) {
            const tui_ev_t *e = tui_store_ev(store, ti, j);
            int64_t g0, g1;
            unsigned f0, f1;
            if (tui_model_to_axis(model, k->node, e->start, TUI_CLOCK_ALIGNED, &g0, &f0) !=
                    BASE_OK ||
                tui_model_to_axis(model, k->node, e->end, TUI_CLOCK_ALIGNED, &g1, &f1) != BASE_OK) {
                s.skipped++;
                continue;
            }
            if (g1 < g0)
                g1 = g0;
            if ((o.from_global && g1 < o.from_global) || (o.to_global && g0 > o.to_global))
                continue;
            bool raw = (f0 | f1) & TUI_T_RAW;
            uint32_t tid = ctid;
            if (e->kind != GPU_EV_INSTANT) {
                int l = level_for(lv, g0, g1);
                if (l < 0) {
                    s.overlaps_dropped++;
                    continue;
                }
                if (lv[l].tid == 0) {
                    char oname[128];
                    lv[l].tid = ++ctid;
                    snprintf(oname, sizeof oname, "%s (overlaps %d)", tname, l);
                    thread_meta(out, k->node, lv[l].tid, oname);
                }
                tid = lv[l].tid;
                s.overlaps_split += l > 0;
            }
            const char *name = tui_model_name(model, k->node, k->pid, e->name_id);
            char fallback[48];
            if (name == NULL) {
                snprintf(fallback, sizeof fallback, "%s#%" PRIu32, kind_cat(e->kind), e->name_id);
                name = fallback;
            }
            fputs(",\n{\"name\":", out);
            tui_json_str(out, name);
            fprintf(out,
                    ",\"cat\":\"%s\",\"pid\":%u,\"tid\":%" PRIu32 ",\"ts\":", kind_cat(e->kind),
                    k->node, tid);
            tui_json_us(out, g0 - origin);
            if (e->kind == GPU_EV_INSTANT) {
                fputs(",\"ph\":\"i\",\"s\":\"t\"", out);
            } else {
                fputs(",\"ph\":\"X\",\"dur\":", out);
                tui_json_us(out, g1 - g0);
            }
            write_args(out, e, k, raw);
            s.events++;
            if (raw)
                s.raw_events++;
            if (o.flows && e->corr_id && (e->kind == GPU_EV_API || tui_kind_on_device(e->kind))) {
                if (nfe == capfe) {
                    capfe = capfe ? 2 * capfe : 4096;
                    fe = xreallocarray(fe, capfe, sizeof *fe);
                }
                fe[nfe++] = (struct flow_end){
                    k->node, e->kind == GPU_EV_API, k->pid, e->corr_id, tid, g0 - origin};
            }
        }
        for (int l = 0; l < CHROME_LEVELS; l++)
            free(lv[l].stack);
    }
    if (nfe) {
        qsort(fe, nfe, sizeof *fe, cmp_flow);
        uint64_t id = 0;
        for (size_t i = 0; i < nfe;) {
            size_t j = i + 1;
            while (j < nfe && fe[j].node == fe[i].node && fe[j].pid == fe[i].pid &&
                   fe[j].corr == fe[i].corr)
                j++;
            if (fe[i].api)
                for (size_t k = i + 1; k < j; k++) {
                    if (fe[k].api)
                        continue;
                    id++;
                    fprintf(out,
                            ",\n{\"ph\":\"s\",\"id\":%" PRIu64 ",\"name\":\"launch\",\"cat\":"
                            "\"gpu\",\"pid\":%u,\"tid\":%" PRIu32 ",\"ts\":",
                            id, fe[i].node, fe[i].tid);
                    tui_json_us(out, fe[i].rel);
                    fprintf(out,
                            "},\n{\"ph\":\"f\",\"bp\":\"e\",\"id\":%" PRIu64
                            ",\"name\":\"launch\",\"cat\":\"gpu\",\"pid\":%u,\"tid\":%" PRIu32
                            ",\"ts\":",
                            id, fe[k].node, fe[k].tid);
                    tui_json_us(out, fe[k].rel);
                    fputs("}", out);
                    s.flows++;
                }
            i = j;
        }
    }
    free(fe);
    free(order);
    /* Collectives of what is written (the model's own events). */
    tui_coll_t *coll = tui_coll_new(1);
    struct coll_ctx cc = {out, &first, origin, 0};
    tui_coll_set_sink(coll, coll_counter, &cc);
    tui_coll_update(coll, model, true);
    if (o.imports &&
        tui_import_write_events(o.imports, model, out, origin, &first, err) != BASE_OK) {
        tui_coll_destroy(&coll);
        return BASE_ERR;
    }

    struct tui_summary sum;
    tui_model_summary(model, &sum);
    fprintf(out, "\n],\n\"metadata\":{\"producer\":\"dptop %s\",\"source\":\"%s\",", DP_VERSION,
            o.source ? o.source : "snapshot");
    if (o.hub) {
        fputs("\"hub\":", out);
        tui_json_str(out, o.hub);
        fputs(",", out);
    }
    fprintf(out,
            "\"time_base\":\"global: the reference node's probe clock (CLOCK_REALTIME)\","
            "\"reference\":%d,\"origin_ns\":%" PRId64 ",\"events\":%" PRIu64
            ",\"raw_events\":%" PRIu64 ",\"flows\":%" PRIu64 ",\"evicted\":%" PRIu64
            ",\"ev_drops\":%" PRIu64 ",\"overlaps_split\":%" PRIu64 ",\"overlaps_dropped\":%" PRIu64
            ",",
            sum.ref, origin, s.events, s.raw_events, s.flows, sum.evicted, sum.ev_drops,
            s.overlaps_split, s.overlaps_dropped);
    write_alignment(out, model);
    write_collectives(out, coll);
    tui_coll_destroy(&coll);
    if (o.imports) {
        fputs(",", out);
        tui_import_write_meta(o.imports, out);
    }
    fputs("}}\n", out);
    if (st)
        *st = s;
    if (fflush(out) != 0 || ferror(out))
        return base_err(err, "write failed: %s", strerror(errno ? errno : EIO));
    return BASE_OK;
}

int tui_chrome_write_file(tui_model_t *model, const char *path, const struct tui_chrome_opts *opts,
                          struct tui_chrome_stats *st, char *err)
{
    assert(model && path);
    base_afile_t *out = base_afile_open(path, err);
    if (out == NULL)
        return BASE_ERR;
    char werr[BASE_ERRLEN];
    if (tui_chrome_write(model, base_afile_stream(out), opts, st, werr) != BASE_OK) {
        base_afile_abort(&out);
        return base_err(err, "%s: %s", path, werr);
    }
    return base_afile_commit(&out, err);
}

int tui_snapshot_path(char *buf, size_t len, const char *dir, int64_t when_s, const char *ext,
                      char *err)
{
    time_t t = (time_t)when_s;
    struct tm tm;
    if (localtime_r(&t, &tm) == NULL)
        return base_err(err, "cannot convert the time %" PRId64, when_s);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    const char *d = dir && dir[0] ? dir : ".";
    for (int k = 1; k <= 1000; k++) {
        char suffix[16] = "";
        if (k > 1)
            snprintf(suffix, sizeof suffix, "-%d", k);
        int n = snprintf(buf, len, "%s%sdptop-%s%s.%s", d, d[strlen(d) - 1] == '/' ? "" : "/",
                         stamp, suffix, ext ? ext : "json");
        if (n < 0 || (size_t)n >= len)
            return base_err(err, "output path too long in %s", d);
        struct stat sb;
        if (stat(buf, &sb) != 0 && errno == ENOENT)
            return BASE_OK;
    }
    return base_err(err, "%s: 1000 files named dptop-%s already", d, stamp);
}
