/*
 * Replay and export of a recording (docs/RECORDING.md).
 *
 * Replay feeds the same model as the live console, by the recorded arrival
 * times: a replay clock runs at `speed` (space stops it) and every frame
 * that arrived before it is applied.  Seeking forward applies frames at
 * once; seeking backward rebuilds the model from the start of the file up
 * to the new position, because the model is a fold over the messages and
 * has no undo.  Export folds the whole file as fast as it reads, then
 * writes one trace with the final time base: a Chrome trace, or an XSpace
 * (tui/xplane.c), for which the scope pairs are collected beside the model;
 * the window statistics (tui/winexport.c) are streamed as they come.
 *
 * Damage in the file is reported with its offset (the reader resynchronises
 * on the next frame that verifies) and the rest is still used.
 */
#include "tui/tui_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct tui_replay {
    char path[4096];
    struct bus_limits lim;
    bus_recreader_t *rd;
    double speed; /* 0: as fast as possible */
    bool paused, have, eof;
    struct bus_rec_frame next; /* read, not yet applied (views valid until the next read) */
    int64_t first_arrival, cursor, last_mono;
    int64_t last_applied; /* arrival of the last frame applied: the cursor's end */
    uint64_t applied, problems;
    char last_problem[BASE_ERRLEN];
};

/* Read the next frame that verifies into rp->next; damage is counted. */
static void read_next(struct tui_replay *rp)
{
    rp->have = false;
    while (!rp->eof) {
        enum base_dec dec = BASE_DEC_OK;
        char err[BASE_ERRLEN];
        int r = bus_recreader_next(rp->rd, &rp->next, &dec, err);
        if (r == 1) {
            rp->have = true;
            return;
        }
        if (r == 0) {
            rp->eof = true;
            return;
        }
        rp->problems++;
        snprintf(rp->last_problem, sizeof rp->last_problem, "%s", err);
        if (dec == BASE_DEC_TRUNCATED)
            rp->eof = true;
    }
}

static int reopen(struct tui_replay *rp, char *err)
{
    bus_recreader_destroy(&rp->rd);
    rp->rd = bus_recreader_open(rp->path, &rp->lim, err);
    if (rp->rd == NULL)
        return BASE_ERR;
    rp->eof = false;
    rp->applied = 0;
    rp->last_applied = rp->first_arrival;
    read_next(rp);
    return BASE_OK;
}

struct tui_replay *tui_replay_open(const char *path, double speed, const struct bus_limits *lim,
                                   char *err)
{
    struct tui_replay *rp = xcalloc(1, sizeof *rp);
    snprintf(rp->path, sizeof rp->path, "%s", path);
    rp->lim = lim ? *lim : bus_limits_default();
    rp->speed = speed < 0 ? 1 : speed;
    if (reopen(rp, err) != BASE_OK) {
        free(rp);
        return NULL;
    }
    rp->first_arrival = rp->have ? rp->next.arrival_ns : bus_recreader_created_ns(rp->rd);
    rp->cursor = rp->last_applied = rp->first_arrival;
    return rp;
}

void tui_replay_close(struct tui_replay **self)
{
    if (self == NULL || *self == NULL)
        return;
    bus_recreader_destroy(&(*self)->rd);
    free(*self);
    *self = NULL;
}

static void apply_next(struct tui_app *app, struct tui_replay *rp)
{
    char err[BASE_ERRLEN];
    struct bus_frame f[BUS_REC_MAX_FRAMES];
    size_t n = rp->next.nframes;
    for (size_t i = 0; i < n; i++)
        f[i] = rp->next.frames[i];
    /* Rejections are counted by the model and shown in the header. */
    tui_model_apply_frames(app->model, f, n, &rp->lim, rp->next.arrival_ns, err);
    rp->applied++;
    rp->last_applied = rp->next.arrival_ns;
    read_next(rp);
}

static void report(struct tui_app *app, struct tui_replay *rp, uint64_t problems_before)
{
    if (rp->problems != problems_before)
        tui_app_status(app, TUI_MSG_WARN, "recording: %s (%llu problems so far; skipped)",
                       rp->last_problem, (unsigned long long)rp->problems);
}

void tui_replay_pump(struct tui_app *app, int64_t now_mono, int64_t budget_ns)
{
    struct tui_replay *rp = app->replay;
    if (rp->last_mono == 0)
        rp->last_mono = now_mono;
    if (!rp->paused) {
        int64_t el = now_mono - rp->last_mono;
        rp->cursor = rp->speed <= 0 ? INT64_MAX : rp->cursor + (int64_t)((double)el * rp->speed);
    }
    rp->last_mono = now_mono;
    uint64_t before = rp->problems;
    bool was_eof = rp->eof && !rp->have;
    int64_t deadline = now_mono + budget_ns;
    for (int i = 0; rp->have && rp->next.arrival_ns <= rp->cursor; i++) {
        apply_next(app, rp);
        if ((i & 255) == 255 && base_monotonic_ns() > deadline)
            break;
    }
    /* As fast as possible: the cursor is where the frames applied got to;
     * at the end, it stops at the last one. */
    if (rp->cursor == INT64_MAX || (!rp->have && rp->eof && rp->cursor > rp->last_applied))
        rp->cursor = rp->last_applied;
    report(app, rp, before);
    if (!was_eof && rp->eof && !rp->have) {
        tui_app_status(app, TUI_MSG_INFO, "end of the recording (%llu messages)",
                       (unsigned long long)rp->applied);
        app->pane[TUI_P_HEADER].dirty = true;
    }
}

void tui_replay_seek(struct tui_app *app, int64_t delta)
{
    struct tui_replay *rp = app->replay;
    char err[BASE_ERRLEN];
    int64_t target = rp->cursor + delta;
    uint64_t before = rp->problems;
    if (delta < 0) {
        if (target < rp->first_arrival)
            target = rp->first_arrival;
        if (reopen(rp, err) != BASE_OK) {
            tui_app_status(app, TUI_MSG_ERROR, "cannot seek: %s", err);
            return;
        }
        tui_model_reset(app->model);
        tui_coll_reset(app->coll);
        memset(&app->hl, 0, sizeof app->hl);
        app->coll_sel = 0;
        if (app->imports)
            tui_import_apply(app->imports, app->model);
        before = rp->problems = 0;
    }
    while (rp->have && rp->next.arrival_ns <= target)
        apply_next(app, rp);
    if (!rp->have && rp->eof && target > rp->last_applied)
        target = rp->last_applied; /* no seeking past the end */
    rp->cursor = target;
    /* The view jumps with the data. */
    app->edge_ns = app->edge_latest = 0;
    if (app->paused) {
        struct tui_summary s;
        tui_model_summary(app->model, &s);
        app->right_ns =
            app->clock == TUI_CLOCK_ALIGNED && s.latest_global ? s.latest_global : s.latest_raw;
    }
    report(app, rp, before);
    if (rp->problems == before)
        tui_app_status(app, TUI_MSG_INFO, "replay at %+.1f s",
                       (double)(target - rp->first_arrival) / 1e9);
    tui_app_mark_all_dirty(app);
}

void tui_replay_pause(struct tui_app *app, bool paused)
{
    app->replay->paused = paused;
    app->replay->last_mono = base_monotonic_ns();
}

void tui_replay_describe(const struct tui_app *app, char *buf, size_t len)
{
    const struct tui_replay *rp = app->replay;
    uint64_t size = bus_recreader_size(rp->rd);
    double pct = rp->have && size ? 100.0 * (double)rp->next.offset / (double)size : 100.0;
    int64_t at = (rp->cursor == INT64_MAX ? rp->last_applied : rp->cursor) - rp->first_arrival;
    char sp[16];
    if (rp->speed > 0)
        snprintf(sp, sizeof sp, "×%g", rp->speed);
    else
        snprintf(sp, sizeof sp, "max");
    snprintf(buf, len, "%s +%.1fs %.0f%% %s%s%s", rp->path, (double)at / 1e9, pct, sp,
             rp->paused ? " paused" : "", !rp->have && rp->eof ? " end" : "");
}

/* ---- export --------------------------------------------------------------- */

int tui_export_format_parse(const char *s, enum tui_export_format *out)
{
    static const char *const names[] = {"auto", "chrome", "xplane", "perfetto"};
    for (size_t i = 0; i < BASE_ARRAY_LEN(names); i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (enum tui_export_format)i;
            return BASE_OK;
        }
    return BASE_ERR;
}

enum tui_export_format tui_export_format_of(const char *path, enum tui_export_format asked)
{
    if (asked != TUI_EXPORT_AUTO)
        return asked;
    size_t n = strlen(path);
    if ((n >= 8 && strcmp(path + n - 8, ".pftrace") == 0) ||
        (n >= 15 && strcmp(path + n - 15, ".perfetto-trace") == 0))
        return TUI_EXPORT_PERFETTO;
    return n >= 3 && strcmp(path + n - 3, ".pb") == 0 ? TUI_EXPORT_XPLANE : TUI_EXPORT_CHROME;
}

/* Whether a frame's topic is "dp1.<kind>." for kind. */
static bool topic_is(const struct bus_frame *topic, enum bus_kind kind)
{
    const char *name = bus_kind_name(kind);
    size_t p = strlen(BUS_TOPIC_PREFIX), n = strlen(name);
    const char *t = topic->data;
    return topic->len > p + n && memcmp(t, BUS_TOPIC_PREFIX, p) == 0 &&
           memcmp(t + p, name, n) == 0 && t[p + n] == '.';
}

/* Fail before folding a long recording, not after: can path be created? */
static int probe_writable(const char *path, bool dir, char *err)
{
    if (dir)
        return access(path, W_OK) == 0 ? BASE_OK : base_err(err, "%s: %s", path, strerror(errno));
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return base_err(err, "%s: path too long", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return base_err(err, "%s: %s", tmp, strerror(errno));
    fclose(f);
    unlink(tmp);
    return BASE_OK;
}

static bool is_dir(const char *path)
{
    struct stat sb;
    size_t n = strlen(path);
    return (n > 0 && path[n - 1] == '/') || (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode));
}

/* Bytes the store may take per event at worst: a ring that doubled, and its queue entry. */
#define EXPORT_BYTES_PER_EVENT (2 * sizeof(tui_ev_t) + 8)

/* The memory this process may use: the machine's, or its cgroup's limit when lower. */
static uint64_t memory_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t mem = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX;
    FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
    if (f != NULL) {
        unsigned long long v;
        if (fscanf(f, "%llu", &v) == 1 && v < mem) /* "max": no limit */
            mem = v;
        fclose(f);
    }
    return mem;
}

/*
 * An export is of the whole recording: unless a budget was set (flag,
 * environment or file), it grows to what the file can hold (its size over
 * the 64 bytes of an event record, an upper bound), no further than half
 * the memory this process may use at the store's worst per event.
 */
static size_t export_budget(const base_config_t *cfg, const char *path, bool exporting)
{
    size_t budget = (size_t)base_config_int(cfg, "event_budget");
    struct stat sb;
    if (!exporting || base_config_source(cfg, "event_budget") != BASE_CFG_DEFAULT ||
        stat(path, &sb) != 0)
        return budget;
    uint64_t want = (uint64_t)sb.st_size / GPU_RECORD_SIZE + 1;
    uint64_t mem = memory_limit();
    uint64_t room = mem == UINT64_MAX ? want : mem / 2 / EXPORT_BYTES_PER_EVENT;
    uint64_t most = want < room ? want : room;
    if (most > 1000000000)
        most = 1000000000; /* the key's own bound */
    return most > budget ? (size_t)most : budget;
}

/* --map's resolver: the model's maps, as imported traces use them. */
static int map_model(void *ctx, uint32_t node, uint32_t domain, int64_t local,
                     clock_conv_result_t *out, char *err)
{
    if (node > 65535 || tui_model_find(ctx, (uint16_t)node) == NULL)
        return base_err(err, "node %u is not in the recording", node);
    unsigned fl;
    if (tui_model_map(ctx, (uint16_t)node, domain, local, &out->t, &out->uncertainty_ns, &fl) !=
        BASE_OK) {
        char name[16];
        return base_err(err, "node %u has no map for its %s clock in the recording", node,
                        clock_domain_name(domain, name, sizeof name));
    }
    out->flags = ((fl & TUI_T_RAW) ? CLOCK_CONV_RAW : 0) |
                 ((fl & TUI_T_EXTRAP) ? CLOCK_CONV_EXTRAPOLATED : 0) |
                 ((fl & TUI_T_GAP) ? CLOCK_CONV_GAP : 0);
    return BASE_OK;
}

/* --map NODE[:CLOCK] (defaults for lines that leave them out) or "lines". */
static int map_spec(const char *spec, struct clock_map_opts *o, char *err)
{
    o->domain = CLOCK_DOMAIN_PROBE;
    o->flush = true;
    if (strcmp(spec, "lines") == 0)
        return BASE_OK;
    char node[16], clk[16] = "realtime";
    const char *colon = strchr(spec, ':');
    size_t nl = colon ? (size_t)(colon - spec) : strlen(spec);
    if (nl == 0 || nl >= sizeof node || (colon && strlen(colon + 1) >= sizeof clk))
        return base_err(err, "invalid value for map: '%s' (NODE[:CLOCK] or lines)", spec);
    memcpy(node, spec, nl);
    node[nl] = '\0';
    if (colon)
        snprintf(clk, sizeof clk, "%s", colon + 1);
    const char *d = node[0] == 'n' ? node + 1 : node;
    char *end;
    long v = strtol(d, &end, 10);
    if (*d == '\0' || *end != '\0' || v < 0 || v > 65535)
        return base_err(err, "invalid node in --map '%s' (NODE[:CLOCK] or lines)", spec);
    if (clock_domain_parse(clk, &o->domain) != BASE_OK)
        return base_err(err, "invalid clock in --map '%s' (realtime, monotonic, boottime)", spec);
    o->node = (uint32_t)v;
    o->have_node = true;
    return BASE_OK;
}

/*
 * The console with imported traces: the recording folded once beforehand
 * (the clock maps are all the import needs: a small event budget), the
 * files prepared and loaded as their nodes' own events; the console then
 * replays the recording as usual and holds the imported events from the
 * start (tui_import_apply, again after a seek back rebuilds the model).
 */
tui_import_t *tui_import_for_console(const base_config_t *cfg, const char *path,
                                     const struct tui_export_req *req, char *err)
{
    tui_import_t *imp = tui_import_new(req->strict);
    for (size_t i = 0; i < req->nimports; i++)
        if (tui_import_add(imp, req->imports[i], err) != BASE_OK)
            goto err;
    struct bus_limits lim = {
        .max_header = (size_t)base_config_int(cfg, "max_header_bytes"),
        .max_payload = (size_t)base_config_int(cfg, "max_payload_bytes"),
    };
    bus_recreader_t *rd = bus_recreader_open(path, &lim, err);
    if (rd == NULL)
        goto err;
    struct tui_model_opts mo = {.event_budget = 1000,
                                .max_batch = (size_t)base_config_int(cfg, "max_payload_bytes") /
                                             GPU_RECORD_SIZE};
    tui_model_t *model = tui_model_new(&mo);
    int64_t first = 0, last = 0;
    for (;;) {
        struct bus_rec_frame f;
        enum base_dec dec = BASE_DEC_OK;
        char ferr[BASE_ERRLEN];
        int r = bus_recreader_next(rd, &f, &dec, ferr);
        if (r == 0 || (r < 0 && dec == BASE_DEC_TRUNCATED))
            break;
        if (r < 0)
            continue; /* the console reports damage itself as it replays */
        struct bus_frame fr[BUS_REC_MAX_FRAMES];
        for (size_t i = 0; i < f.nframes; i++)
            fr[i] = f.frames[i];
        tui_model_apply_frames(model, fr, f.nframes, &lim, f.arrival_ns, NULL);
        if (f.nframes > 0 && topic_is(&fr[0], BUS_K_PROC)) {
            bus_msg_t *msg = NULL;
            if (bus_msg_decode(fr, f.nframes, &lim, &msg, NULL) == BASE_DEC_OK)
                tui_import_note(imp, msg);
            bus_msg_destroy(&msg);
        }
        first = first ? first : f.arrival_ns;
        last = f.arrival_ns;
    }
    bus_recreader_destroy(&rd);
    int rc = tui_import_prepare(imp, model, first, last, err);
    if (rc == BASE_OK)
        rc = tui_import_load(imp, model, (size_t)base_config_int(cfg, "event_budget"), err);
    tui_model_destroy(&model);
    if (rc == BASE_OK)
        return imp;
err:
    tui_import_destroy(&imp);
    return NULL;
}

int tui_export_run(const base_config_t *cfg, const char *path, const struct tui_export_req *req,
                   volatile sig_atomic_t *stop)
{
    char err[BASE_ERRLEN];
    const char *out = req && req->out && req->out[0] ? req->out : NULL;
    const char *wout = req && req->windows && req->windows[0] ? req->windows : NULL;
    const char *cout = req && req->collectives && req->collectives[0] ? req->collectives : NULL;
    const char *map = req && req->map && req->map[0] ? req->map : NULL;
    /* With --map, stdout carries the mapped times: the summary goes to stderr. */
    FILE *info = map ? stderr : stdout;
    struct clock_map_opts mapo = {.map = map_model};
    if (map && map_spec(map, &mapo, err) != BASE_OK) {
        fprintf(stderr, "dptop: %s\n", err);
        return 2;
    }
    bool to_dir = out && is_dir(out);
    /* A directory can only take XSpaces, one per node. */
    enum tui_export_format fmt = !out ? TUI_EXPORT_CHROME
                                 : to_dir && req->format == TUI_EXPORT_AUTO
                                     ? TUI_EXPORT_XPLANE
                                     : tui_export_format_of(out, req->format);
    if (to_dir && fmt != TUI_EXPORT_XPLANE) {
        fprintf(stderr, "dptop: %s is a directory (a Chrome trace is one file)\n", out);
        return 1;
    }
    /* A name without an extension may have meant a directory of XSpaces
     * (TensorBoard's logs/plugins/profile/RUN/): say which was made. */
    const char *base = out ? strrchr(out, '/') : NULL;
    base = base ? base + 1 : out;
    if (out && !to_dir && fmt == TUI_EXPORT_CHROME && strchr(base, '.') == NULL)
        fprintf(stderr,
                "dptop: %s has no extension: writing one Chrome trace file (a directory of "
                "XSpaces, one per node, takes a trailing '/')\n",
                out);
    /* Imported traces: named files that exist (a bad argument, 2, when not),
     * merged into a Chrome trace. */
    tui_import_t *imp = NULL;
    if (req->nimports) {
        if (!out && !cout) {
            fprintf(stderr, "dptop: --import needs --export OUT (a Chrome trace or an XSpace) or "
                            "--export-collectives OUT\n");
            return 2;
        }
        imp = tui_import_new(req->strict);
        for (size_t i = 0; i < req->nimports; i++)
            if (tui_import_add(imp, req->imports[i], err) != BASE_OK) {
                fprintf(stderr, "dptop: %s\n", err);
                tui_import_destroy(&imp);
                return 2;
            }
    }
    struct stat sb;
    if (to_dir && fmt == TUI_EXPORT_XPLANE && stat(out, &sb) != 0 && mkdir(out, 0777) != 0) {
        fprintf(stderr, "dptop: %s: %s\n", out, strerror(errno));
        tui_import_destroy(&imp);
        return 1;
    }
    if (out && probe_writable(out, to_dir, err) != BASE_OK) {
        fprintf(stderr, "dptop: %s\n", err);
        tui_import_destroy(&imp);
        return 1;
    }
    struct bus_limits lim = {
        .max_header = (size_t)base_config_int(cfg, "max_header_bytes"),
        .max_payload = (size_t)base_config_int(cfg, "max_payload_bytes"),
    };
    bus_recreader_t *rd = bus_recreader_open(path, &lim, err);
    if (rd == NULL) {
        fprintf(stderr, "dptop: %s\n", err);
        tui_import_destroy(&imp);
        return 1;
    }
    size_t budget = export_budget(cfg, path, out != NULL);
    struct tui_model_opts mo = {.event_budget = budget,
                                .max_batch = (size_t)base_config_int(cfg, "max_payload_bytes") /
                                             GPU_RECORD_SIZE};
    tui_model_t *model = tui_model_new(&mo);
    /* The XSpace wants every scope pair, which the model does not keep. */
    tui_scopes_t *scopes = out && fmt == TUI_EXPORT_XPLANE ? tui_scopes_new(budget) : NULL;
    tui_winlog_t *winlog = NULL;
    int rc = 1;
    if (wout && (winlog = tui_winlog_open(wout, err)) == NULL) {
        fprintf(stderr, "dptop: %s\n", err);
        goto done;
    }
    uint64_t msgs = 0, rejected = 0, map_errors = 0;
    int64_t t0 = base_monotonic_ns(), first_arrival = 0, last_arrival = 0;
    for (;;) {
        if (*stop) {
            fprintf(stderr, "dptop: export interrupted; nothing written\n");
            goto done;
        }
        struct bus_rec_frame f;
        enum base_dec dec = BASE_DEC_OK;
        int r = bus_recreader_next(rd, &f, &dec, err);
        if (r == 0)
            break;
        if (r < 0) {
            /* Report and go on: the reader resumes at the next frame that verifies. */
            fprintf(stderr, "dptop: %s: %s (%s)\n", path, err, base_dec_name(dec));
            if (dec == BASE_DEC_TRUNCATED)
                break;
            continue;
        }
        struct bus_frame fr[BUS_REC_MAX_FRAMES];
        for (size_t i = 0; i < f.nframes; i++)
            fr[i] = f.frames[i];
        char merr[BASE_ERRLEN];
        if (tui_model_apply_frames(model, fr, f.nframes, &lim, f.arrival_ns, merr) != BASE_DEC_OK) {
            if (rejected++ < 10)
                fprintf(stderr, "dptop: %s: message at offset %" PRIu64 " rejected: %s\n", path,
                        f.offset, merr);
        } else if (f.nframes > 0 &&
                   ((scopes && topic_is(&fr[0], BUS_K_SCOPE)) ||
                    (imp && topic_is(&fr[0], BUS_K_PROC)) ||
                    (winlog &&
                     (topic_is(&fr[0], BUS_K_WIN) || topic_is(&fr[0], BUS_K_EDGE_FIT) ||
                      topic_is(&fr[0], BUS_K_NODE_FIT) || topic_is(&fr[0], BUS_K_SOLVE))))) {
            /* Decoded again for the collectors: these kinds are few and small. */
            bus_msg_t *msg = NULL;
            if (bus_msg_decode(fr, f.nframes, &lim, &msg, merr) == BASE_DEC_OK) {
                if (scopes && tui_scopes_apply(scopes, msg, merr) != BASE_DEC_OK && rejected++ < 10)
                    fprintf(stderr, "dptop: %s: scope message at offset %" PRIu64 ": %s\n", path,
                            f.offset, merr);
                if (imp)
                    tui_import_note(imp, msg);
                int wr = winlog ? tui_winlog_add(winlog, msg, f.arrival_ns, err) : 0;
                bus_msg_destroy(&msg);
                if (wr < 0) {
                    fprintf(stderr, "dptop: %s\n", err);
                    goto done;
                }
            }
        }
        if (first_arrival == 0)
            first_arrival = f.arrival_ns;
        last_arrival = f.arrival_ns;
        msgs++;
    }
    struct bus_recreader_stats rs;
    bus_recreader_stats(rd, &rs);
    struct tui_chrome_stats cs = {0};
    struct tui_xplane_stats xs = {0};
    struct tui_pftrace_stats ps = {0};
    if (imp && tui_import_prepare(imp, model, first_arrival, last_arrival, err) != BASE_OK) {
        fprintf(stderr, "dptop: %s\n", err);
        goto done;
    }
    /* An XSpace holds what the model holds: the imported events join their
     * nodes' own there (the Chrome trace copies them as they were written). */
    if (imp && out && (fmt == TUI_EXPORT_XPLANE || fmt == TUI_EXPORT_PERFETTO)) {
        if (tui_import_load(imp, model, budget, err) != BASE_OK) {
            fprintf(stderr, "dptop: %s\n", err);
            goto done;
        }
        tui_import_apply(imp, model);
    }
    if (out && fmt == TUI_EXPORT_CHROME) {
        struct tui_chrome_opts o = {.flows = true, .source = "export", .hub = path, .imports = imp};
        if (tui_chrome_write_file(model, out, &o, &cs, err) != BASE_OK) {
            fprintf(stderr, "dptop: %s\n", err);
            goto done;
        }
    } else if (out && fmt == TUI_EXPORT_PERFETTO) {
        struct tui_pftrace_opts o = {.source = path};
        if (tui_pftrace_write_file(model, out, &o, &ps, err) != BASE_OK) {
            fprintf(stderr, "dptop: %s\n", err);
            goto done;
        }
    } else if (out) {
        char damage[200], rej[100];
        /* Two lines of the recording, one a file imported, the NULL. */
        size_t nimp = imp ? tui_import_count(imp) : 0;
        const char **warn = xcalloc(nimp + 3, sizeof *warn);
        char **impline = xcalloc(nimp ? nimp : 1, sizeof *impline);
        size_t nw = 0;
        if (rs.corrupt || rs.truncated_bytes) {
            snprintf(damage, sizeof damage,
                     "recording: %" PRIu64 " corrupt regions (%" PRIu64 " bytes skipped), %" PRIu64
                     " bytes of truncated tail",
                     rs.corrupt, rs.skipped_bytes, rs.truncated_bytes);
            warn[nw++] = damage;
        }
        if (rejected) {
            snprintf(rej, sizeof rej, "recording: %" PRIu64 " messages rejected", rejected);
            warn[nw++] = rej;
        }
        /* XSpace has no metadata of its own for the imports: what the Chrome
         * trace's metadata.imports says, one warning line a file. */
        for (size_t i = 0; i < nimp; i++)
            warn[nw++] = impline[i] = tui_import_describe(imp, i);
        struct tui_xplane_opts o = {.node = -1,
                                    .source = path,
                                    .start_ns = first_arrival,
                                    .stop_ns = last_arrival,
                                    .warnings = warn};
        int w = to_dir ? tui_xplane_write_dir(model, scopes, out, &o, &xs, err)
                       : tui_xplane_write_file(model, scopes, out, &o, &xs, err);
        for (size_t i = 0; i < nimp; i++)
            free(impline[i]);
        free(impline);
        free(warn);
        if (w != BASE_OK) {
            fprintf(stderr, "dptop: %s\n", err);
            goto done;
        }
    }
    tui_coll_t *coll = NULL;
    if (cout) {
        /* Imported events take part as their nodes' own (the XSpace has
         * already put them in the model). */
        if (imp && !(out && (fmt == TUI_EXPORT_XPLANE || fmt == TUI_EXPORT_PERFETTO))) {
            if (tui_import_load(imp, model, budget, err) != BASE_OK) {
                fprintf(stderr, "dptop: %s\n", err);
                goto done;
            }
            tui_import_apply(imp, model);
        }
        coll = tui_coll_new(0);
        if (tui_coll_write_file(coll, model, cout, err) != BASE_OK) {
            fprintf(stderr, "dptop: %s\n", err);
            tui_coll_destroy(&coll);
            goto done;
        }
    }
    if (map) {
        struct clock_map_stats ms;
        mapo.ctx = model;
        if (clock_map_lines(stdin, stdout, &mapo, &ms, err) != BASE_OK) {
            fprintf(stderr, "dptop: %s\n", err);
            goto done;
        }
        fprintf(stderr,
                "dptop: mapped %" PRIu64 " times (%" PRIu64 " flagged), %" PRIu64
                " lines refused\n",
                ms.mapped, ms.flagged, ms.errors);
        map_errors = ms.errors;
    }
    struct tui_winlog_stats ws = {0};
    if (winlog) {
        tui_winlog_stats(winlog, &ws);
        if (tui_winlog_commit(&winlog, err) != BASE_OK) {
            fprintf(stderr, "dptop: %s\n", err);
            goto done;
        }
    }
    rc = map_errors ? 1 : 0;
    double secs = (double)(base_monotonic_ns() - t0) / 1e9;
    uint64_t evicted = tui_store_evicted(tui_model_store(model));
    if (out && fmt == TUI_EXPORT_PERFETTO)
        fprintf(info,
                "dptop: exported %" PRIu64 " slices, %" PRIu64 " marks, %" PRIu64
                " flows and %" PRIu64 " counter points on %" PRIu64 " tracks from %" PRIu64
                " messages to %s (%" PRIu64 " bytes) in %.2f s\n",
                ps.slices, ps.instants, ps.flows, ps.counters, ps.tracks, msgs, out, ps.bytes,
                secs);
    if (xs.overlaps_split || xs.overlaps_dropped)
        fprintf(info,
                "dptop: %" PRIu64 " events partly overlapped an open one on their line: put on "
                "overlap lines (%" PRIu64 " beyond the seventh left out)\n",
                xs.overlaps_split, xs.overlaps_dropped);
    if (cs.overlaps_split || cs.overlaps_dropped)
        fprintf(info,
                "dptop: %" PRIu64 " events partly overlapped an open one on their thread: put on "
                "overlap threads (%" PRIu64 " beyond the seventh left out)\n",
                cs.overlaps_split, cs.overlaps_dropped);
    if (ps.overlaps_split || ps.overlaps_dropped)
        fprintf(info,
                "dptop: %" PRIu64 " slices partly overlapped an open one on their track: put on "
                "overlap tracks (%" PRIu64 " beyond the third dropped)\n",
                ps.overlaps_split, ps.overlaps_dropped);
    if (out && fmt == TUI_EXPORT_CHROME)
        fprintf(info,
                "dptop: exported %" PRIu64 " events and %" PRIu64 " flows from %" PRIu64
                " messages to %s in %.2f s\n",
                cs.events, cs.flows, msgs, out, secs);
    else if (out && fmt == TUI_EXPORT_XPLANE)
        fprintf(info,
                "dptop: exported %" PRIu64 " events in %" PRIu64 " planes, %" PRIu64
                " scope pairs, from %" PRIu64 " messages to %s%s (%" PRIu64 " bytes) in %.2f s\n",
                xs.events, xs.planes, xs.scope_pairs, msgs, out,
                to_dir ? " (one XSpace per node)" : "", xs.bytes, secs);
    if (wout)
        fprintf(info,
                "dptop: wrote %" PRIu64 " win, %" PRIu64 " edge_fit, %" PRIu64
                " node_fit and %" PRIu64 " solve lines to %s (%" PRIu64
                " repeated messages skipped)\n",
                ws.win, ws.edge_fit, ws.node_fit, ws.solve, wout, ws.duplicates);
    if (coll) {
        tui_coll_report(coll, info, cout);
        tui_coll_destroy(&coll);
    }
    if (ws.undeduped)
        fprintf(info,
                "dptop: %" PRIu64 " window messages were written without the repeat check "
                "(its set was full)\n",
                ws.undeduped);
    fprintf(info,
            "dptop: recording: %" PRIu64 " corrupt regions (%" PRIu64 " bytes skipped), %" PRIu64
            " bytes of truncated tail; %" PRIu64 " messages rejected\n",
            rs.corrupt, rs.skipped_bytes, rs.truncated_bytes, rejected);
    if (imp)
        tui_import_report(imp, info);
    uint64_t raw = cs.raw_events + xs.raw_events + ps.raw_events;
    if (raw)
        fprintf(info, "dptop: %" PRIu64 " events of unaligned nodes are on their raw clocks\n",
                raw);
    /* An export that lost events is not the recording's: said on stderr, and exit 1. */
    if (evicted && out) {
        fprintf(stderr,
                "dptop: incomplete export: the first %" PRIu64 " events did not fit the event "
                "budget of %zu (raise --event-budget)\n",
                evicted, budget);
        rc = 1;
    } else if (evicted) {
        fprintf(info,
                "dptop: %" PRIu64 " events did not fit the event budget of %zu "
                "(raise --event-budget)\n",
                evicted, budget);
    }
    if (scopes && tui_scopes_evicted(scopes)) {
        fprintf(stderr,
                "dptop: incomplete export: %" PRIu64
                " older scope pairs did not fit (raise --event-budget)\n",
                tui_scopes_evicted(scopes));
        rc = 1;
    }
done:
    tui_import_destroy(&imp);
    tui_winlog_abort(&winlog);
    tui_scopes_destroy(&scopes);
    bus_recreader_destroy(&rd);
    tui_model_destroy(&model);
    return rc;
}
