/*
 * Other profilers' traces, aligned on dptop's clock (docs/IMPORT.md).
 *
 * `dptop --replay REC --import [NODE=]FILE ... --export OUT.json` folds the
 * recording as an export does, then reads each imported file twice:
 *
 *   1. scan: the format (from the content), its metadata, the span of its
 *      timestamps and the process it describes; the whole file is checked
 *      here, so a malformed one fails before anything is written;
 *   2. emit: every event again, each time mapped from the node's clock
 *      domain onto the global time base through the node's snapshot pairs
 *      and window maps (tui_model_map: what the live events go through),
 *      written into the merged Chrome trace with the map's uncertainty.
 *
 * Between the two, each file is given its node (NODE=, or the recording's
 * proc messages against the file's pid) and its clock is checked against
 * the recording: a file whose events land far from every time the
 * recording covers is another host's clock, or another run, and an error.
 *
 * Reading twice keeps memory to one event at a time, whatever the size of
 * the files; the formats' readers are const vtables registered in
 * `formats` below.
 */
#include "tui/import_int.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const struct imp_format *const formats[] = {&imp_kineto, &imp_rocprof_csv, &imp_rocprof_json,
                                                   &imp_xplane};

/* A file's events this far from everything the recording covers: not this node's clock. */
#define CLOCK_MISMATCH_NS (120LL * 1000000000LL)

struct proc_seen {
    uint16_t node;
    uint32_t pid;
    int rank; /* -1: unknown */
    char exe[48];
};

/* An interned name of an imported lane (the model keys names by node, pid, id). */
struct imp_name {
    uint16_t node;
    uint32_t pid, id;
    char *str;
};

struct tui_import {
    struct imp_file *files;
    size_t n, cap;
    bool strict;
    /* tui_import_load: the events as their nodes' own, and their names */
    gpu_event_t *ev;
    size_t nev, capev, budget;
    uint64_t over_budget;
    struct imp_name *names;
    size_t nnames, capnames;
    uint32_t *slots; /* open addressing over names: index + 1, 0 empty */
    size_t nslots;
    struct proc_seen *procs;
    size_t nprocs, capprocs;
    int64_t first_global;
};

tui_import_t *tui_import_new(bool strict)
{
    tui_import_t *self = xcalloc(1, sizeof *self);
    self->strict = strict;
    self->first_global = INT64_MAX;
    return self;
}

void tui_import_destroy(tui_import_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    tui_import_t *self = *self_p;
    for (size_t i = 0; i < self->n; i++) {
        free(self->files[i].path);
        free(self->files[i].dist_info);
        free(self->files[i].dev_props);
        free(self->files[i].pids);
        if (self->files[i].fmt && self->files[i].fmt->release)
            self->files[i].fmt->release(&self->files[i]);
    }
    free(self->files);
    free(self->procs);
    free(self->ev);
    for (size_t i = 0; i < self->nnames; i++)
        free(self->names[i].str);
    free(self->names);
    free(self->slots);
    free(self);
    *self_p = NULL;
}

size_t tui_import_count(const tui_import_t *self)
{
    assert(self);
    return self->n;
}

static struct imp_file *add_file(tui_import_t *self, const char *path, int node, int64_t start,
                                 bool start_given)
{
    if (self->n == self->cap) {
        self->cap = self->cap ? 2 * self->cap : 8;
        self->files = xreallocarray(self->files, self->cap, sizeof *self->files);
    }
    struct imp_file *f = &self->files[self->n];
    memset(f, 0, sizeof *f);
    f->path = xstrdup(path);
    f->node = node;
    f->node_given = node >= 0;
    f->start_ns = start;
    f->start_given = start_given;
    f->index = (unsigned)self->n;
    f->rank = f->world = -1;
    f->raw_min = INT64_MAX;
    f->raw_max = INT64_MIN;
    f->in_from = INT64_MAX;
    f->in_to = INT64_MIN;
    self->n++;
    return f;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files of a directory that look like traces, in name order. */
static int add_dir(tui_import_t *self, const char *dir, int node, char *err)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return base_err(err, "--import %s: %s", dir, strerror(errno));
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    static const char *const exts[] = {".json", ".json.gz", ".pb", ".csv"};
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        bool ok = false;
        for (size_t i = 0; i < BASE_ARRAY_LEN(exts); i++) {
            size_t e = strlen(exts[i]);
            ok |= l > e && strcmp(de->d_name + l - e, exts[i]) == 0;
        }
        if (!ok)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            names = xreallocarray(names, cap, sizeof *names);
        }
        xasprintf(&names[n++], "%s/%s", dir, de->d_name);
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof *names, cmp_str);
    size_t added = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat sb;
        if (stat(names[i], &sb) == 0 && S_ISREG(sb.st_mode)) {
            add_file(self, names[i], node, 0, false);
            added++;
        }
        free(names[i]);
    }
    free(names);
    if (added == 0)
        return base_err(err,
                        "--import %s: no trace files in the directory (*.json, *.json.gz, "
                        "*.pb, *.csv)",
                        dir);
    return BASE_OK;
}

int tui_import_add(tui_import_t *self, const char *arg, char *err)
{
    assert(self && arg);
    int node = -1;
    const char *path = arg;
    /* NODE=FILE, NODE as "3" or "n3"; a path that merely holds '=' stays a path. */
    const char *eq = strchr(arg, '=');
    if (eq) {
        const char *p = arg[0] == 'n' ? arg + 1 : arg;
        size_t digits = strspn(p, "0123456789");
        struct stat sb;
        if (digits > 0 && p + digits == eq && stat(arg, &sb) != 0) {
            long v = strtol(p, NULL, 10);
            if (v > 65535)
                return base_err(err, "--import %s: node %ld is out of range (0..65535)", arg, v);
            node = (int)v;
            path = eq + 1;
        }
    }
    if (path[0] == '\0')
        return base_err(err, "--import %s: no file named", arg);
    struct stat sb;
    if (stat(path, &sb) == 0) {
        if (S_ISDIR(sb.st_mode))
            return add_dir(self, path, node, err);
        add_file(self, path, node, 0, false);
        return BASE_OK;
    }
    /* FILE@START: the absolute time (ns since the epoch, the node's clock)
     * of the file's zero, for traces that have none. */
    const char *at = strrchr(path, '@');
    if (at && at[1] && strspn(at + 1, "0123456789") == strlen(at + 1)) {
        char *file = xstrndup(path, (size_t)(at - path));
        int ok = stat(file, &sb) == 0 && S_ISREG(sb.st_mode);
        if (ok)
            add_file(self, file, node, strtoll(at + 1, NULL, 10), true);
        int e = errno;
        free(file);
        if (ok)
            return BASE_OK;
        return base_err(err, "--import %s: %s", arg, strerror(e));
    }
    return base_err(err, "--import %s: %s", path, strerror(errno));
}

void tui_import_note(tui_import_t *self, const bus_msg_t *msg)
{
    assert(self && msg);
    if (bus_msg_kind(msg) != BUS_K_PROC)
        return;
    json_object *h = bus_msg_header(msg);
    int64_t node, pid, rank = -1;
    const char *exe = "";
    if (base_json_get_i64(h, "node", &node, NULL) != BASE_DEC_OK ||
        base_json_get_i64(h, "pid", &pid, NULL) != BASE_DEC_OK || node < 0 || node > 65535 ||
        pid <= 0 || pid > UINT32_MAX)
        return;
    base_json_opt_i64(h, "rank", &rank, NULL);
    base_json_opt_str(h, "exe", &exe, NULL);
    for (size_t i = 0; i < self->nprocs; i++)
        if (self->procs[i].node == node && self->procs[i].pid == pid) {
            if (rank >= 0)
                self->procs[i].rank = (int)rank;
            return;
        }
    if (self->nprocs == self->capprocs) {
        self->capprocs = self->capprocs ? 2 * self->capprocs : 32;
        self->procs = xreallocarray(self->procs, self->capprocs, sizeof *self->procs);
    }
    struct proc_seen *p = &self->procs[self->nprocs++];
    p->node = (uint16_t)node;
    p->pid = (uint32_t)pid;
    p->rank = rank >= 0 && rank < INT32_MAX ? (int)rank : -1;
    snprintf(p->exe, sizeof p->exe, "%s", exe);
}

static const struct imp_format *detect(const char *head, size_t n)
{
    for (size_t i = 0; i < BASE_ARRAY_LEN(formats); i++)
        if (formats[i]->detect(head, n))
            return formats[i];
    return NULL;
}

static int open_and_detect(struct imp_file *f, char *err)
{
    char e[BASE_ERRLEN];
    base_jstream_t *js = base_jstream_open(f->path, IMP_MAX_VALUE, e);
    if (js == NULL)
        return base_err(err, "%s", e);
    const char *head;
    size_t n;
    int rc = base_jstream_peek(js, &head, &n, e);
    if (rc == BASE_OK)
        f->fmt = detect(head, n);
    base_jstream_destroy(&js);
    if (rc != BASE_OK)
        return base_err(err, "%s", e);
    if (f->fmt == NULL) {
        char list[400] = "";
        for (size_t i = 0; i < BASE_ARRAY_LEN(formats); i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? "; " : "",
                     formats[i]->what);
        return base_err(err, "%s: not a trace format dptop reads (it reads: %s)", f->path, list);
    }
    return BASE_OK;
}

static void node_list(tui_model_t *model, char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t i = 0; i < tui_model_nnodes(model); i++) {
        const struct tui_node *nd = tui_model_node(model, i);
        snprintf(buf + strlen(buf), len - strlen(buf), "%sn%u %s", i ? ", " : "", nd->id,
                 nd->host[0] ? nd->host : "?");
    }
}

/* The node a file belongs to, from the recording: its pid (and rank). */
static int match_node(tui_import_t *self, tui_model_t *model, struct imp_file *f, char *err)
{
    char nodes[600];
    node_list(model, nodes, sizeof nodes);
    if (f->node_given) {
        if (tui_model_find(model, (uint16_t)f->node) == NULL)
            return base_err(err, "%s: node %d is not in the recording (it has: %s)", f->path,
                            f->node, nodes[0] ? nodes : "no nodes");
        return BASE_OK;
    }
    if (f->main_pid == 0 && f->host[0]) {
        /* No process, a host (XSpace): the node of that host, when only one is. */
        int hfound = -1, hcount = 0;
        char hcand[600] = "";
        for (size_t i = 0; i < tui_model_nnodes(model); i++) {
            const struct tui_node *nd = tui_model_node(model, i);
            if (strcmp(nd->host, f->host) != 0)
                continue;
            hfound = nd->id;
            hcount++;
            snprintf(hcand + strlen(hcand), sizeof hcand - strlen(hcand), "%sn%u",
                     hcand[0] ? ", " : "", nd->id);
        }
        if (hcount == 1) {
            f->node = hfound;
            return BASE_OK;
        }
        return base_err(err, "%s: host %s is %s; name its node: --import N=%s", f->path, f->host,
                        hcount ? hcand : "no node of the recording", f->path);
    }
    if (f->main_pid == 0)
        return base_err(err,
                        "%s: the file names no process to match with the recording; name "
                        "its node: --import N=%s (nodes: %s)",
                        f->path, f->path, nodes);
    char cand[600] = "";
    int found = -1, count = 0;
    for (size_t i = 0; i < self->nprocs; i++) {
        const struct proc_seen *p = &self->procs[i];
        if (p->pid != f->main_pid)
            continue;
        /* Where both say a rank, they must agree. */
        if (f->rank >= 0 && p->rank >= 0 && f->rank != p->rank)
            continue;
        const struct tui_node *nd = tui_model_find(model, p->node);
        if (f->host[0] && nd && nd->host[0] && strcmp(f->host, nd->host) != 0)
            continue;
        if (found != p->node) {
            count += found < 0 || found != p->node;
            snprintf(cand + strlen(cand), sizeof cand - strlen(cand),
                     "%sn%u %s (pid %" PRIu32 " %s)", cand[0] ? ", " : "", p->node,
                     nd && nd->host[0] ? nd->host : "?", p->pid, p->exe);
            found = p->node;
        }
    }
    if (count == 0) {
        char rank[32] = "";
        if (f->rank >= 0)
            snprintf(rank, sizeof rank, " as rank %d", f->rank);
        return base_err(err,
                        "%s: no node of the recording ran pid %" PRIu32 "%s%s; name its node: "
                        "--import N=%s (nodes: %s)",
                        f->path, f->main_pid, rank, f->host[0] ? " on that host" : "", f->path,
                        nodes);
    }
    if (count > 1)
        return base_err(err,
                        "%s: pid %" PRIu32 " ran on more than one node (%s); name its node: "
                        "--import N=%s",
                        f->path, f->main_pid, cand, f->path);
    f->node = found;
    return BASE_OK;
}

static void fmt_time(int64_t ns, char *buf, size_t len)
{
    time_t s = (time_t)(ns / 1000000000);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm);
}

int tui_import_prepare(tui_import_t *self, tui_model_t *model, int64_t rec_from, int64_t rec_to,
                       char *err)
{
    assert(self && model);
    for (size_t i = 0; i < self->n; i++) {
        struct imp_file *f = &self->files[i];
        if (open_and_detect(f, err) != BASE_OK)
            return BASE_ERR;
        if (f->fmt->scan(f, err) != BASE_OK)
            return BASE_ERR;
        if (match_node(self, model, f, err) != BASE_OK)
            return BASE_ERR;
        if (f->events == 0)
            continue;
        /* The file's clock against the recording: its span mapped through
         * the node's maps must come near the recording's. */
        int64_t g0, g1;
        double unc;
        unsigned fl;
        if (tui_model_map(model, (uint16_t)f->node, f->domain, f->raw_min, &g0, &unc, &fl) !=
                BASE_OK ||
            tui_model_map(model, (uint16_t)f->node, f->domain, f->raw_max, &g1, &unc, &fl) !=
                BASE_OK)
            return base_err(err, "%s: node %d has no map for the %s clock in the recording",
                            f->path, f->node, f->domain_name);
        if (rec_from < rec_to &&
            (g1 < rec_from - CLOCK_MISMATCH_NS || g0 > rec_to + CLOCK_MISMATCH_NS)) {
            char a[40], b[40], c[40];
            fmt_time(g0, a, sizeof a);
            fmt_time(rec_from, b, sizeof b);
            fmt_time(rec_to, c, sizeof c);
            double off =
                g1 < rec_from ? (double)(rec_from - g1) / 1e9 : (double)(g0 - rec_to) / 1e9;
            return base_err(err,
                            "%s: its events (from %s) lie %.0f s %s the recording (%s .. %s): "
                            "not node %d's clock, or another run",
                            f->path, a, off, g1 < rec_from ? "before" : "after", b, c + 11,
                            f->node);
        }
        if (g0 < self->first_global)
            self->first_global = g0;
    }
    return BASE_OK;
}

int64_t tui_import_first(const tui_import_t *self)
{
    assert(self);
    return self->first_global;
}

/* ---- what the readers share ------------------------------------------------ */

bool imp_map(struct imp_ctx *ctx, struct imp_file *f, int64_t local, int64_t *global, double *unc,
             unsigned *flags)
{
    return tui_model_map(ctx->model, (uint16_t)f->node, f->domain, local, global, unc, flags) ==
           BASE_OK;
}

bool imp_keep(struct imp_ctx *ctx, struct imp_file *f, int64_t global, double unc, unsigned flags)
{
    if (flags & (TUI_T_RAW | TUI_T_EXTRAP | TUI_T_GAP)) {
        if (ctx->strict) {
            f->dropped++;
            return false;
        }
        f->outside++;
        if (flags & TUI_T_RAW)
            f->raw++;
    } else {
        if (global < f->in_from)
            f->in_from = global;
        if (global > f->in_to)
            f->in_to = global;
    }
    if (isfinite(unc) && unc > f->unc_max)
        f->unc_max = unc;
    f->written++;
    return true;
}

struct imp_pid *imp_pid_find(struct imp_file *f, const char *key, size_t n)
{
    if (n >= sizeof f->pids[0].key)
        n = sizeof f->pids[0].key - 1;
    for (size_t i = 0; i < f->npids; i++)
        if (strlen(f->pids[i].key) == n && memcmp(f->pids[i].key, key, n) == 0)
            return &f->pids[i];
    return NULL;
}

struct imp_pid *imp_pid(struct imp_file *f, const char *key, size_t n)
{
    struct imp_pid *found = imp_pid_find(f, key, n);
    if (found)
        return found;
    if (n >= sizeof f->pids[0].key)
        n = sizeof f->pids[0].key - 1;
    if (f->npids + 1 >= IMP_PID_STRIDE)
        return &f->pids[f->npids - 1]; /* absurd files share the last lane */
    if (f->npids == f->cappids) {
        f->cappids = f->cappids ? 2 * f->cappids : 8;
        f->pids = xreallocarray(f->pids, f->cappids, sizeof *f->pids);
    }
    struct imp_pid *p = &f->pids[f->npids];
    memset(p, 0, sizeof *p);
    memcpy(p->key, key, n);
    p->key[n] = '\0';
    p->chrome = (f->index + 1) * IMP_PID_STRIDE + (uint32_t)f->npids;
    f->npids++;
    return p;
}

void imp_process_label(const struct imp_file *f, const struct imp_pid *p, const char *own,
                       char *buf, size_t len)
{
    const char *base = strrchr(f->path, '/');
    base = base ? base + 1 : f->path;
    char rank[24] = "";
    if (f->rank >= 0)
        snprintf(rank, sizeof rank, " rank %d", f->rank);
    /* "pid P" after the file, for the lanes of an OS process. */
    size_t digits = strspn(p->key, "0123456789");
    bool is_pid = !p->device && digits > 0 && p->key[digits] == '\0';
    snprintf(buf, len, "n%d%s %s (%s%s%s)", f->node, rank, own && own[0] ? own : p->key, base,
             is_pid ? " pid " : "", is_pid ? p->key : "");
}

void imp_put_args(FILE *out, double unc, unsigned flags)
{
    if (isfinite(unc))
        fprintf(out, "\"dptop_unc_ns\":%.1f", unc);
    else
        fputs("\"dptop_unc_ns\":null", out);
    if (flags) {
        fputs(",\"dptop_time\":\"", out);
        const char *sep = "";
        if (flags & TUI_T_RAW) {
            fputs("raw", out);
            sep = "+";
        }
        if (flags & TUI_T_EXTRAP) {
            fprintf(out, "%sextrapolated", sep);
            sep = "+";
        }
        if (flags & TUI_T_GAP)
            fprintf(out, "%sgap", sep);
        putc('"', out);
    }
}

int imp_each(base_jstream_t *js, int (*fn)(void *ctx, const struct base_jspan *v, char *err),
             void *ctx, char *err)
{
    if (base_jstream_expect(js, '[', err) != BASE_OK)
        return BASE_ERR;
    bool first = true;
    struct base_jspan v;
    for (;;) {
        int r = base_jstream_next(js, ']', &first, err);
        if (r <= 0)
            return r;
        if (base_jstream_value(js, &v, err) != BASE_OK || fn(ctx, &v, err) != BASE_OK)
            return BASE_ERR;
    }
}

/* A thread id as a number when it is one (viewers sort those), else a string. */
static void put_tid(FILE *out, const char *tid)
{
    size_t d = strspn(tid, "0123456789");
    if (d > 0 && d < 16 && tid[d] == '\0')
        fputs(tid, out);
    else
        tui_json_str(out, tid);
}

bool imp_emit_x(struct imp_ctx *ctx, struct imp_file *f, const struct imp_pid *lane,
                const char *tid, const char *cat, const char *name, int64_t t0, int64_t t1,
                const char *args)
{
    int64_t g0, g1;
    double unc, u1;
    unsigned fl, f1;
    if (t1 < t0)
        t1 = t0;
    if (!imp_map(ctx, f, t0, &g0, &unc, &fl) || !imp_map(ctx, f, t1, &g1, &u1, &f1)) {
        f->dropped++;
        return false;
    }
    fl |= f1;
    if (g1 < g0)
        g1 = g0;
    if (ctx->sink) {
        uint8_t kind = strstr(cat, "memcpy")                             ? GPU_EV_MEMCPY
                       : strstr(cat, "kernel") || !strcmp(cat, "device") ? GPU_EV_KERNEL
                       : strstr(cat, "_api") || strstr(cat, "runtime")   ? GPU_EV_API
                                                                         : GPU_EV_RANGE;
        if (!lane->device && (kind == GPU_EV_KERNEL || kind == GPU_EV_MEMCPY))
            kind = GPU_EV_RANGE;
        const char *d = tid + strcspn(tid, "0123456789");
        struct imp_sink_ev ev = {lane, (uint32_t)strtoul(d, NULL, 10), kind, name, t0, t1, 0};
        return imp_sink_event(ctx, f, &ev, g0, unc, fl);
    }
    if (!imp_keep(ctx, f, g0, unc, fl))
        return false;
    FILE *out = ctx->out;
    fputs(*ctx->first ? "{\"ph\":\"X\",\"cat\":" : ",\n{\"ph\":\"X\",\"cat\":", out);
    *ctx->first = false;
    tui_json_str(out, cat);
    fputs(",\"name\":", out);
    tui_json_str(out, name);
    fprintf(out, ",\"pid\":%" PRIu32 ",\"tid\":", lane->chrome);
    put_tid(out, tid);
    fputs(",\"ts\":", out);
    tui_json_us(out, g0 - ctx->origin);
    fputs(",\"dur\":", out);
    tui_json_us(out, g1 - g0);
    fputs(",\"args\":{", out);
    imp_put_args(out, unc, fl);
    if (args && args[0])
        fprintf(out, ",%s", args);
    fputs("}}", out);
    return true;
}

void imp_emit_flow(struct imp_ctx *ctx, struct imp_file *f, const struct imp_pid *lane,
                   const char *tid, bool start, const char *id, int64_t t)
{
    int64_t g;
    double unc;
    unsigned fl;
    if (!imp_map(ctx, f, t, &g, &unc, &fl) ||
        (ctx->strict && (fl & (TUI_T_RAW | TUI_T_EXTRAP | TUI_T_GAP))))
        return;
    if (ctx->sink)
        return; /* the console draws no arrows between imported lanes */
    FILE *out = ctx->out;
    fprintf(out, "%s{\"ph\":\"%s\",%s\"cat\":\"flow\",\"name\":\"launch\",\"id\":",
            *ctx->first ? "" : ",\n", start ? "s" : "f", start ? "" : "\"bp\":\"e\",");
    *ctx->first = false;
    tui_json_str(out, id);
    fprintf(out, ",\"pid\":%" PRIu32 ",\"tid\":", lane->chrome);
    put_tid(out, tid);
    fputs(",\"ts\":", out);
    tui_json_us(out, g - ctx->origin);
    fputs("}", out);
}

void imp_emit_thread_name(struct imp_ctx *ctx, const struct imp_pid *lane, const char *tid,
                          const char *name)
{
    if (ctx->sink)
        return;
    FILE *out = ctx->out;
    fprintf(out, "%s{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%" PRIu32 ",\"tid\":",
            *ctx->first ? "" : ",\n", lane->chrome);
    *ctx->first = false;
    put_tid(out, tid);
    fputs(",\"args\":{\"name\":", out);
    tui_json_str(out, name);
    fputs("}}", out);
}

bool imp_sink_event(struct imp_ctx *ctx, struct imp_file *f, const struct imp_sink_ev *e,
                    int64_t global, double unc, unsigned flags)
{
    int64_t a, b;
    if (tui_model_to_trace(ctx->model, (uint16_t)f->node, f->domain, e->t0, &a) != BASE_OK ||
        tui_model_to_trace(ctx->model, (uint16_t)f->node, f->domain, e->t1, &b) != BASE_OK) {
        f->dropped++;
        return false;
    }
    if (!imp_keep(ctx, f, global, unc, flags))
        return false;
    const struct imp_pid *lane = e->lane;
    gpu_event_t ev = {.kind = e->kind,
                      .node = (uint16_t)f->node,
                      .pid = IMP_TRACK_PID | lane->chrome,
                      .tid = e->tid,
                      .stream = e->tid,
                      .start_ns = a,
                      .end_ns = b < a ? a : b,
                      .step = e->step};
    if (lane->device) {
        const char *d = lane->key + strcspn(lane->key, "0123456789");
        ev.device = (uint16_t)strtoul(d, NULL, 10);
    }
    if (strstr(e->name, "nccl") || strstr(e->name, "rccl"))
        ev.flags |= GPU_EVF_COLLECTIVE;
    ctx->sink(ctx->sink_arg, &ev, e->name);
    return true;
}

uint32_t tui_import_process_of(uint32_t pid)
{
    if (!(pid & IMP_TRACK_PID))
        return pid;
    uint32_t chrome = pid & ~IMP_TRACK_PID;
    return IMP_TRACK_PID | (chrome / IMP_PID_STRIDE * IMP_PID_STRIDE);
}

/* ---- the events as their nodes' own (console, XSpace) ------------------------- */

static uint64_t name_hash(uint32_t pid, const char *s)
{
    uint64_t h = 1469598103934665603ull ^ pid;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static uint32_t intern(tui_import_t *self, uint16_t node, uint32_t pid, const char *str)
{
    if (self->nnames * 2 >= self->nslots) {
        size_t n = self->nslots ? 2 * self->nslots : 1024;
        free(self->slots);
        self->slots = xcalloc(n, sizeof *self->slots);
        self->nslots = n;
        for (size_t i = 0; i < self->nnames; i++) {
            size_t k = name_hash(self->names[i].pid, self->names[i].str) & (n - 1);
            while (self->slots[k])
                k = (k + 1) & (n - 1);
            self->slots[k] = (uint32_t)i + 1;
        }
    }
    size_t k = name_hash(pid, str) & (self->nslots - 1);
    for (; self->slots[k]; k = (k + 1) & (self->nslots - 1)) {
        const struct imp_name *nm = &self->names[self->slots[k] - 1];
        if (nm->pid == pid && strcmp(nm->str, str) == 0)
            return nm->id;
    }
    if (self->nnames == self->capnames) {
        self->capnames = self->capnames ? 2 * self->capnames : 256;
        self->names = xreallocarray(self->names, self->capnames, sizeof *self->names);
    }
    uint32_t id = (uint32_t)self->nnames + 1;
    self->names[self->nnames] = (struct imp_name){node, pid, id, xstrdup(str)};
    self->slots[k] = (uint32_t)self->nnames + 1;
    self->nnames++;
    return id;
}

static void collect(void *arg, const gpu_event_t *ev, const char *name)
{
    tui_import_t *self = arg;
    if (self->nev >= self->budget) {
        self->over_budget++;
        return;
    }
    if (self->nev == self->capev) {
        self->capev = self->capev ? 2 * self->capev : 4096;
        self->ev = xreallocarray(self->ev, self->capev, sizeof *self->ev);
    }
    gpu_event_t e = *ev;
    e.name_id = intern(self, ev->node, ev->pid, name);
    self->ev[self->nev++] = e;
}

int tui_import_load(tui_import_t *self, tui_model_t *folded, size_t budget, char *err)
{
    assert(self && folded);
    bool first = true;
    self->budget = budget;
    struct imp_ctx ctx = {.model = folded,
                          .strict = self->strict,
                          .first = &first,
                          .sink = collect,
                          .sink_arg = self};
    for (size_t i = 0; i < self->n; i++) {
        struct imp_file *f = &self->files[i];
        f->written = f->outside = f->raw = f->dropped = 0;
        if (f->fmt->emit(f, &ctx, err) != BASE_OK)
            return BASE_ERR;
    }
    return BASE_OK;
}

void tui_import_apply(const tui_import_t *self, tui_model_t *model)
{
    assert(self && model);
    for (size_t i = 0; i < self->nnames; i++)
        tui_model_add_name(model, self->names[i].node, self->names[i].pid, self->names[i].id,
                           self->names[i].str);
    tui_store_t *store = tui_model_store(model);
    for (size_t i = 0; i < self->nev; i++)
        tui_store_add(store, &self->ev[i], NULL);
}

uint64_t tui_import_loaded(const tui_import_t *self, uint64_t *over_budget)
{
    assert(self);
    if (over_budget)
        *over_budget = self->over_budget;
    return self->nev;
}

/* ---- pass 2 and the report -------------------------------------------------- */

int tui_import_write_events(tui_import_t *self, tui_model_t *model, FILE *out, int64_t origin,
                            bool *first, char *err)
{
    assert(self && model && out && first);
    struct imp_ctx ctx = {
        .model = model, .out = out, .origin = origin, .strict = self->strict, .first = first};
    for (size_t i = 0; i < self->n; i++) {
        struct imp_file *f = &self->files[i];
        if (f->fmt->emit(f, &ctx, err) != BASE_OK)
            return BASE_ERR;
        /* Processes the file never named still get a name: node and file. */
        for (size_t k = 0; k < f->npids; k++) {
            struct imp_pid *p = &f->pids[k];
            char label[300], own[48];
            size_t digits = strspn(p->key, "0123456789");
            snprintf(own, sizeof own, "%s%s", p->device && p->key[digits] == '\0' ? "GPU " : "",
                     p->key);
            imp_process_label(f, p, own, label, sizeof label);
            if (!p->named) {
                fprintf(out,
                        "%s{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%" PRIu32
                        ",\"args\":{\"name\":",
                        *first ? "" : ",\n", p->chrome);
                tui_json_str(out, label);
                fputs("}}", out);
                *first = false;
            }
            fprintf(out,
                    ",\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%" PRIu32
                    ",\"args\":{\"sort_index\":%d}}",
                    p->chrome, f->node);
        }
    }
    return BASE_OK;
}

static void put_range(FILE *out, const char *key, int64_t from, int64_t to)
{
    if (from <= to)
        fprintf(out, ",\"%s\":[%" PRId64 ",%" PRId64 "]", key, from, to);
    else
        fprintf(out, ",\"%s\":null", key);
}

void tui_import_write_meta(const tui_import_t *self, FILE *out)
{
    assert(self && out);
    fputs("\"imports\":[", out);
    for (size_t i = 0; i < self->n; i++) {
        const struct imp_file *f = &self->files[i];
        fputs(i ? ",{\"file\":" : "{\"file\":", out);
        tui_json_str(out, f->path);
        fprintf(out, ",\"format\":\"%s\",\"variant\":", f->fmt ? f->fmt->name : "?");
        tui_json_str(out, f->variant);
        fprintf(out, ",\"node\":%d,\"node_from\":\"%s\",\"clock\":\"%s\"", f->node,
                f->node_given ? "command line" : "pid in the recording",
                f->domain_name ? f->domain_name : "?");
        if (f->base_ns)
            fprintf(out, ",\"base_ns\":%" PRId64, f->base_ns);
        if (f->main_pid)
            fprintf(out, ",\"pid\":%" PRIu32, f->main_pid);
        if (f->rank >= 0)
            fprintf(out, ",\"rank\":%d", f->rank);
        if (f->world >= 0)
            fprintf(out, ",\"world_size\":%d", f->world);
        put_range(out, "file_range_ns", f->raw_min, f->raw_max);
        put_range(out, "aligned_range_ns", f->in_from, f->in_to);
        fprintf(out,
                ",\"events\":%" PRIu64 ",\"outside_aligned\":%" PRIu64 ",\"raw_clock\":%" PRIu64
                ",\"dropped\":%" PRIu64 ",\"uncertainty_max_ns\":%.1f",
                f->written, f->outside, f->raw, f->dropped, f->unc_max);
        if (f->dist_info)
            fprintf(out, ",\"distributedInfo\":%s", f->dist_info);
        if (f->dev_props)
            fprintf(out, ",\"deviceProperties\":%s", f->dev_props);
        fputs("}", out);
    }
    fputs("]", out);
}

char *tui_import_describe(const tui_import_t *self, size_t i)
{
    assert(self && i < self->n);
    const struct imp_file *f = &self->files[i];
    char *s = NULL;
    xasprintf(&s,
              "import %s: %s, node %d (%s), %s clock, base %" PRId64 " ns; %" PRIu64
              " events, %" PRIu64 " outside the aligned windows, %" PRIu64
              " dropped; aligned range %" PRId64 "..%" PRId64 " ns; map uncertainty up to %.0f ns",
              f->path, f->variant, f->node, f->node_given ? "command line" : "pid in the recording",
              f->domain_name ? f->domain_name : "?", f->base_ns, f->written, f->outside, f->dropped,
              f->in_from <= f->in_to ? f->in_from : 0, f->in_from <= f->in_to ? f->in_to : 0,
              f->unc_max);
    return s;
}

int tui_import_report(const tui_import_t *self, FILE *out)
{
    assert(self && out);
    uint64_t outside = 0;
    for (size_t i = 0; i < self->n; i++) {
        const struct imp_file *f = &self->files[i];
        fprintf(out,
                "dptop: imported %s as node %d (%s, %s clock): %" PRIu64 " events, %" PRIu64
                " outside the aligned windows%s%s, %" PRIu64
                " dropped; map uncertainty up to %.0f ns\n",
                f->path, f->node, f->variant, f->domain_name, f->written, f->outside,
                f->outside ? " (flagged dptop_time)" : "", f->raw ? " some on the raw clock" : "",
                f->dropped, f->unc_max);
        outside += f->outside + f->dropped;
    }
    return outside ? 1 : 0;
}
