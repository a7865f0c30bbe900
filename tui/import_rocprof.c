/*
 * rocprofv3 (ROCprofiler-SDK) output: its CSV files and its JSON file.
 *
 * Times are CLOCK_BOOTTIME ns (rocprofiler_get_timestamp), which the agents
 * map through their boottime snapshot pairs.  What the tool writes
 * (docs/IMPORT.md has the versions):
 *
 *   CSV, one file per kind, PID_kernel_trace.csv, PID_hip_api_trace.csv,
 *   PID_memory_copy_trace.csv, PID_marker_api_trace.csv, ...: a header of
 *   quoted names, then rows; strings quoted (not escaped), numbers bare.
 *   Columns are found by name, so the 16-, 18- and 22-column kernel layouts
 *   of the releases all read.  The pid is the Process_Id column where there
 *   is one, else the file name's PID_ prefix.
 *
 *   JSON ({"rocprofiler-sdk-tool": [{metadata, agents, strings,
 *   kernel_symbols, buffer_records: {kernel_dispatch, hip_api, memory_copy,
 *   marker_api, ...}}]}): kinds and operations are numbers named by
 *   strings.buffer_records, kernels by kernel_symbols, markers by
 *   strings.marker_api.  Pass 1 keeps those names; pass 2 writes events.
 *
 * Events go on a lane per process (API calls, markers; tid = thread) and a
 * lane per GPU agent (kernels by queue, copies), with flow arrows from a
 * launch or copy call to its GPU work (the same correlation id).
 */
#include "tui/import_int.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#define CSV_MAX_LINE (1u << 20)
#define CSV_MAX_COLS 64

/* ---- CSV -------------------------------------------------------------------- */

enum csv_kind { CSV_KERNEL, CSV_API, CSV_COPY, CSV_OTHER };

struct csv {
    gzFile gz;
    char *line;
    uint64_t lineno;
    char *field[CSV_MAX_COLS];
    size_t nfield;
    /* column indexes, -1 when absent */
    int start, end, kind, agent, queue, stream, thread, dispatch, kernel_name, corr, domain,
        function, pid, direction, src, dst, operation, grid[3], wg[3], size;
    enum csv_kind type;
    size_t ncols; /* of the header */
};

static bool csv_detect(const char *head, size_t n)
{
    const char *nl = memchr(head, '\n', n);
    size_t len = nl ? (size_t)(nl - head) : n;
    char first[4096];
    if (len >= sizeof first || len == 0 || head[0] != '"')
        return false;
    memcpy(first, head, len);
    first[len] = '\0';
    return strcasestr(first, "\"Start_Timestamp\"") && strcasestr(first, "\"End_Timestamp\"");
}

/* Split a row in place: quoted fields (rocprofv3 does not escape quotes in
 * them; a doubled quote is read as one) and bare ones. */
static int csv_split(struct csv *c, char *err, const char *path)
{
    char *p = c->line;
    size_t l = strlen(p);
    while (l && (p[l - 1] == '\n' || p[l - 1] == '\r'))
        p[--l] = '\0';
    c->nfield = 0;
    for (;;) {
        if (c->nfield == CSV_MAX_COLS)
            return base_err(err, "%s:%" PRIu64 ": more than %d columns", path, c->lineno,
                            CSV_MAX_COLS);
        if (*p == '"') {
            char *w = ++p, *r = p;
            c->field[c->nfield++] = w;
            for (;;) {
                if (*r == '\0')
                    return base_err(err, "%s:%" PRIu64 ": a quoted field is not closed", path,
                                    c->lineno);
                if (*r == '"' && r[1] == '"') {
                    *w++ = '"';
                    r += 2;
                    continue;
                }
                if (*r == '"' && (r[1] == ',' || r[1] == '\0'))
                    break;
                *w++ = *r++;
            }
            *w = '\0';
            p = r + 1;
        } else {
            c->field[c->nfield++] = p;
            p += strcspn(p, ",");
        }
        if (*p == '\0')
            return BASE_OK;
        if (*p != ',')
            return base_err(err, "%s:%" PRIu64 ": text after a quoted field", path, c->lineno);
        *p++ = '\0';
    }
}

/* The next line: 1, 0 at the end, BASE_ERR. */
static int csv_next(struct csv *c, const char *path, char *err)
{
    if (gzgets(c->gz, c->line, CSV_MAX_LINE) == NULL) {
        int code;
        const char *msg = gzerror(c->gz, &code);
        if (code != Z_OK && code != Z_STREAM_END)
            return base_err(err, "%s: %s (damaged or cut gzip data)", path, msg);
        return 0;
    }
    c->lineno++;
    size_t l = strlen(c->line);
    if (l == CSV_MAX_LINE - 1 && c->line[l - 1] != '\n')
        return base_err(err, "%s:%" PRIu64 ": a line longer than %u bytes", path, c->lineno,
                        CSV_MAX_LINE);
    return 1;
}

static int col(const struct csv *c, const char *name)
{
    for (size_t i = 0; i < c->nfield; i++)
        if (strcasecmp(c->field[i], name) == 0)
            return (int)i;
    return -1;
}

static int csv_open(struct csv *c, const struct imp_file *f, char *err)
{
    memset(c, 0, sizeof *c);
    c->gz = gzopen(f->path, "rb");
    if (c->gz == NULL)
        return base_err(err, "%s: cannot open", f->path);
    c->line = xmalloc(CSV_MAX_LINE);
    int r = csv_next(c, f->path, err);
    if (r <= 0)
        return r == 0 ? base_err(err, "%s: empty", f->path) : BASE_ERR;
    if (csv_split(c, err, f->path) != BASE_OK)
        return BASE_ERR;
    c->ncols = c->nfield;
    c->start = col(c, "Start_Timestamp");
    c->end = col(c, "End_Timestamp");
    c->kind = col(c, "Kind");
    c->agent = col(c, "Agent_Id");
    c->queue = col(c, "Queue_Id");
    c->stream = col(c, "Stream_Id");
    c->thread = col(c, "Thread_Id");
    c->dispatch = col(c, "Dispatch_Id");
    c->kernel_name = col(c, "Kernel_Name");
    c->corr = col(c, "Correlation_Id");
    c->domain = col(c, "Domain");
    c->function = col(c, "Function");
    c->pid = col(c, "Process_Id");
    c->direction = col(c, "Direction");
    c->src = col(c, "Source_Agent_Id");
    c->dst = col(c, "Destination_Agent_Id");
    c->operation = col(c, "Operation");
    c->size = col(c, "Allocation_Size");
    static const char *const xyz[3] = {"X", "Y", "Z"};
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "Grid_Size_%s", xyz[i]);
        c->grid[i] = col(c, name);
        snprintf(name, sizeof name, "Workgroup_Size_%s", xyz[i]);
        c->wg[i] = col(c, name);
    }
    if (c->start < 0 || c->end < 0)
        return base_err(err, "%s: a CSV without Start_Timestamp and End_Timestamp", f->path);
    c->type = c->kernel_name >= 0 ? CSV_KERNEL
              : c->function >= 0  ? CSV_API
              : c->direction >= 0 ? CSV_COPY
                                  : CSV_OTHER;
    return BASE_OK;
}

static void csv_close(struct csv *c)
{
    if (c->gz)
        gzclose(c->gz);
    free(c->line);
    c->gz = NULL;
    c->line = NULL;
}

static const char *fld(const struct csv *c, int i)
{
    return i >= 0 && (size_t)i < c->nfield ? c->field[i] : "";
}

static int num(const struct csv *c, int i, int64_t *out)
{
    const char *s = fld(c, i);
    char *end;
    if (*s == '\0')
        return BASE_ERR;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end != '\0' || errno == ERANGE || v < -(1LL << 62) || v > (1LL << 62))
        return BASE_ERR;
    *out = v;
    return BASE_OK;
}

static int row_times(const struct csv *c, const struct imp_file *f, int64_t *t0, int64_t *t1,
                     char *err)
{
    if (c->nfield <= (size_t)(c->start > c->end ? c->start : c->end))
        return base_err(err, "%s:%" PRIu64 ": %zu columns, the header has more", f->path, c->lineno,
                        c->nfield);
    if (num(c, c->start, t0) != BASE_OK || num(c, c->end, t1) != BASE_OK || *t0 < 0)
        return base_err(err, "%s:%" PRIu64 ": a timestamp that is not a number of ns: %.30s",
                        f->path, c->lineno, fld(c, num(c, c->start, t0) ? c->start : c->end));
    return BASE_OK;
}

/* The pid of rocprofv3's file names, PID_kernel_trace.csv: 0 when not so named. */
static uint32_t pid_of_name(const char *path)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t d = strspn(b, "0123456789");
    return d > 0 && d < 10 && b[d] == '_' ? (uint32_t)strtoul(b, NULL, 10) : 0;
}

static int csv_scan(struct imp_file *f, char *err)
{
    struct csv c;
    int rc = csv_open(&c, f, err);
    uint32_t votes_pid = 0;
    uint64_t votes = 0;
    int r = 0;
    while (rc == BASE_OK && (r = csv_next(&c, f->path, err)) == 1) {
        if (c.line[0] == '\n' || c.line[0] == '\r')
            continue;
        int64_t t0, t1;
        if (csv_split(&c, err, f->path) != BASE_OK || row_times(&c, f, &t0, &t1, err) != BASE_OK) {
            rc = BASE_ERR;
            break;
        }
        if (t1 < t0)
            t1 = t0;
        if (t0 < f->raw_min)
            f->raw_min = t0;
        if (t1 > f->raw_max)
            f->raw_max = t1;
        f->events++;
        int64_t pid;
        if (c.pid >= 0 && num(&c, c.pid, &pid) == BASE_OK && pid > 0 && pid <= UINT32_MAX) {
            if (votes == 0 || (uint32_t)pid == votes_pid)
                votes++, votes_pid = (uint32_t)pid;
            else
                votes--;
        }
    }
    if (r < 0)
        rc = BASE_ERR;
    csv_close(&c);
    if (rc != BASE_OK)
        return BASE_ERR;
    f->main_pid = votes_pid ? votes_pid : pid_of_name(f->path);
    f->domain = CLOCK_DOMAIN_BOOT;
    f->domain_name = "boottime";
    static const char *const kinds[] = {"kernel trace", "API trace", "memory copy trace", "trace"};
    snprintf(f->variant, sizeof f->variant, "rocprofv3 CSV %s, %zu columns", kinds[c.type],
             c.ncols);
    return BASE_OK;
}

/* "GPU agent N" lanes: N as the file writes it (a node id, or "Agent N"). */
static struct imp_pid *agent_lane(struct imp_file *f, const char *id)
{
    char key[40];
    const char *digits = id + strcspn(id, "0123456789");
    snprintf(key, sizeof key, "GPU agent %s", *digits ? digits : id);
    struct imp_pid *p = imp_pid(f, key, strlen(key));
    p->device = true;
    return p;
}

static struct imp_pid *proc_lane(struct imp_file *f, uint32_t pid)
{
    char key[24];
    snprintf(key, sizeof key, "%" PRIu32, pid);
    return imp_pid(f, key, strlen(key));
}

static bool is_launch(const char *fn)
{
    return strstr(fn, "Launch") || strstr(fn, "Memcpy") || strstr(fn, "Memset") ||
           strstr(fn, "launch");
}

static int csv_emit(struct imp_file *f, struct imp_ctx *ctx, char *err)
{
    struct csv c;
    int rc = csv_open(&c, f, err);
    int r = 0;
    char args[512], tid[64], id[64];
    while (rc == BASE_OK && (r = csv_next(&c, f->path, err)) == 1) {
        if (c.line[0] == '\n' || c.line[0] == '\r')
            continue;
        int64_t t0, t1, v;
        if (csv_split(&c, err, f->path) != BASE_OK || row_times(&c, f, &t0, &t1, err) != BASE_OK) {
            rc = BASE_ERR;
            break;
        }
        int64_t corr = num(&c, c.corr, &v) == BASE_OK ? v : 0;
        snprintf(id, sizeof id, "rocprof n%d p%" PRIu32 " c%" PRId64, f->node, f->main_pid, corr);
        args[0] = '\0';
        if (corr)
            snprintf(args, sizeof args, "\"correlation_id\":%" PRId64, corr);
        switch (c.type) {
        case CSV_KERNEL: {
            struct imp_pid *lane = agent_lane(f, fld(&c, c.agent));
            snprintf(tid, sizeof tid, "%s %s", c.stream >= 0 ? "stream" : "queue",
                     fld(&c, c.stream >= 0 ? c.stream : c.queue));
            int64_t g[3] = {0, 0, 0}, w[3] = {0, 0, 0};
            for (int i = 0; i < 3; i++) {
                num(&c, c.grid[i], &g[i]);
                num(&c, c.wg[i], &w[i]);
            }
            size_t l = strlen(args);
            snprintf(args + l, sizeof args - l,
                     "%s\"grid\":[%" PRId64 ",%" PRId64 ",%" PRId64 "],\"workgroup\":[%" PRId64
                     ",%" PRId64 ",%" PRId64 "]",
                     l ? "," : "", g[0], g[1], g[2], w[0], w[1], w[2]);
            if (imp_emit_x(ctx, f, lane, tid, "kernel", fld(&c, c.kernel_name), t0, t1, args) &&
                corr)
                imp_emit_flow(ctx, f, lane, tid, false, id, t0);
            break;
        }
        case CSV_COPY: {
            /* On the GPU's lane: the destination of a copy from the host. */
            bool to_dev = strstr(fld(&c, c.direction), "HOST_TO_DEVICE") != NULL;
            struct imp_pid *lane = agent_lane(f, fld(&c, to_dev ? c.dst : c.src));
            snprintf(tid, sizeof tid, "copies");
            if (imp_emit_x(ctx, f, lane, tid, "memcpy", fld(&c, c.direction), t0, t1, args) && corr)
                imp_emit_flow(ctx, f, lane, tid, false, id, t0);
            break;
        }
        case CSV_API: {
            int64_t pid = 0;
            if (num(&c, c.pid, &pid) != BASE_OK || pid <= 0 || pid > UINT32_MAX)
                pid = f->main_pid;
            struct imp_pid *lane = proc_lane(f, (uint32_t)pid);
            snprintf(tid, sizeof tid, "%s", fld(&c, c.thread));
            char cat[48];
            snprintf(cat, sizeof cat, "%s", fld(&c, c.domain));
            for (char *p = cat; *p; p++)
                *p = (char)tolower((unsigned char)*p);
            const char *fn = fld(&c, c.function);
            bool marker = strstr(cat, "marker") != NULL;
            if (imp_emit_x(ctx, f, lane, tid, cat, fn, t0, t1, args) && corr && !marker &&
                is_launch(fn))
                imp_emit_flow(ctx, f, lane, tid, true, id, t0);
            break;
        }
        default: {
            struct imp_pid *lane =
                c.agent >= 0 ? agent_lane(f, fld(&c, c.agent)) : proc_lane(f, f->main_pid);
            const char *name = c.operation >= 0 ? fld(&c, c.operation) : fld(&c, c.kind);
            imp_emit_x(ctx, f, lane, c.thread >= 0 ? fld(&c, c.thread) : "0",
                       c.kind >= 0 ? fld(&c, c.kind) : "rocprof", name, t0, t1, args);
            break;
        }
        }
    }
    if (r < 0)
        rc = BASE_ERR;
    csv_close(&c);
    return rc;
}

const struct imp_format imp_rocprof_csv = {
    .name = "rocprofv3-csv",
    .what = "rocprofv3 CSV (kernel, API, marker and memory copy traces)",
    .detect = csv_detect,
    .scan = csv_scan,
    .emit = csv_emit,
};

/* ---- JSON ------------------------------------------------------------------- */

struct id_name {
    uint64_t id;
    char *name;
};

/* What pass 1 keeps for pass 2: the names the records refer to by number. */
struct rp_tables {
    struct id_name *kernels, *markers, *agents;
    size_t nkernels, nmarkers, nagents;
    json_object *kinds; /* strings.buffer_records: [{kind, operations: [...]}] */
};

static void tables_free(struct rp_tables *t)
{
    struct id_name *lists[3] = {t->kernels, t->markers, t->agents};
    size_t ns[3] = {t->nkernels, t->nmarkers, t->nagents};
    for (int l = 0; l < 3; l++) {
        for (size_t i = 0; i < ns[l]; i++)
            free(lists[l][i].name);
        free(lists[l]);
    }
    json_object_put(t->kinds);
    free(t);
}

static void rp_release(struct imp_file *f)
{
    if (f->priv)
        tables_free(f->priv);
    f->priv = NULL;
}

static void add_name(struct id_name **list, size_t *n, uint64_t id, const char *name)
{
    if ((*n & (*n - 1)) == 0) /* 0, 1, 2, 4, ...: grow to the next power of two */
        *list = xreallocarray(*list, *n ? 2 * *n : 1, sizeof **list);
    (*list)[(*n)++] = (struct id_name){id, xstrdup(name)};
}

static int cmp_id(const void *a, const void *b)
{
    uint64_t x = ((const struct id_name *)a)->id, y = ((const struct id_name *)b)->id;
    return (x > y) - (x < y);
}

/* Lists are sorted by id once pass 1 has filled them (sort_tables). */
static const char *find_name(const struct id_name *list, size_t n, uint64_t id)
{
    struct id_name key = {id, NULL};
    const struct id_name *r = n ? bsearch(&key, list, n, sizeof *list, cmp_id) : NULL;
    return r ? r->name : NULL;
}

static void sort_tables(struct rp_tables *t)
{
    /* Stable for equal ids is not needed: a later duplicate is as good. */
    if (t->nkernels > 1)
        qsort(t->kernels, t->nkernels, sizeof *t->kernels, cmp_id);
    if (t->nmarkers > 1)
        qsort(t->markers, t->nmarkers, sizeof *t->markers, cmp_id);
    if (t->nagents > 1)
        qsort(t->agents, t->nagents, sizeof *t->agents, cmp_id);
}

static bool json_detect(const char *head, size_t n)
{
    size_t i = 0;
    while (i < n && (head[i] == ' ' || head[i] == '\t' || head[i] == '\r' || head[i] == '\n'))
        i++;
    return i < n && head[i] == '{' && memmem(head, n, "\"rocprofiler-sdk-tool\"", 22) != NULL;
}

/* A member of an object span by a dotted path ("dispatch_info.grid_size.x"). */
static bool jget(const struct base_jspan *obj, const char *path, struct base_jspan *out)
{
    struct base_jspan cur = *obj;
    while (*path) {
        size_t l = strcspn(path, ".");
        bool found = false;
        const char *c = NULL;
        struct base_jspan k, v;
        if (cur.n == 0 || cur.p[0] != '{')
            return false;
        while (base_jspan_member(&cur, &c, &k, &v))
            if (k.n == l && memcmp(k.p, path, l) == 0) {
                cur = v;
                found = true;
                break;
            }
        if (!found)
            return false;
        path += l + (path[l] == '.');
    }
    *out = cur;
    return true;
}

static int64_t jnum(const struct base_jspan *obj, const char *path, int64_t def)
{
    struct base_jspan v;
    int64_t x;
    return jget(obj, path, &v) && v.p[0] != '"' && base_jspan_ns(&v, 0, &x) == BASE_OK ? x : def;
}

enum rp_rec { RP_KERNEL, RP_API, RP_MARKER, RP_COPY, RP_OTHER };

static enum rp_rec rec_type(const char *key)
{
    if (!strcmp(key, "kernel_dispatch") || !strcmp(key, "kernel_dispatches"))
        return RP_KERNEL;
    if (!strcmp(key, "marker_api"))
        return RP_MARKER;
    if (!strcmp(key, "memory_copy"))
        return RP_COPY;
    if (strstr(key, "_api"))
        return RP_API;
    return RP_OTHER;
}

struct rp_walk {
    struct imp_file *f;
    struct imp_ctx *ctx; /* NULL in pass 1 */
    struct rp_tables *t;
    enum rp_rec type;
    char key[64];
};

/* The name of (kind, operation) from strings.buffer_records. */
static const char *op_name(const struct rp_tables *t, int64_t kind, int64_t op)
{
    if (t->kinds == NULL || kind < 0 || op < 0 ||
        (size_t)kind >= json_object_array_length(t->kinds))
        return NULL;
    json_object *k = json_object_array_get_idx(t->kinds, (size_t)kind), *ops;
    if (!json_object_is_type(k, json_type_object) ||
        !json_object_object_get_ex(k, "operations", &ops) ||
        !json_object_is_type(ops, json_type_array) || (size_t)op >= json_object_array_length(ops))
        return NULL;
    json_object *o = json_object_array_get_idx(ops, (size_t)op);
    return json_object_is_type(o, json_type_string) ? json_object_get_string(o) : NULL;
}

static struct imp_pid *agent_lane_id(struct imp_file *f, const struct rp_tables *t, uint64_t handle)
{
    const char *name = find_name(t->agents, t->nagents, handle);
    char id[32];
    snprintf(id, sizeof id, "%" PRIu64, handle);
    return agent_lane(f, name ? name : id);
}

static int rp_record(void *arg, const struct base_jspan *rec, char *err)
{
    struct rp_walk *w = arg;
    struct imp_file *f = w->f;
    if (rec->n == 0 || rec->p[0] != '{')
        return base_err(err, "%s: a %s record is not an object", f->path, w->key);
    int64_t t0 = jnum(rec, "start_timestamp", -1), t1 = jnum(rec, "end_timestamp", -1);
    if (t0 < 0 || t1 < 0 || t0 > (INT64_C(1) << 62) || t1 > (INT64_C(1) << 62))
        return base_err(err,
                        "%s: a %s record without start_timestamp and end_timestamp as ns "
                        "(in range)",
                        f->path, w->key);
    if (t1 < t0)
        t1 = t0;
    if (w->ctx == NULL) {
        if (t0 < f->raw_min)
            f->raw_min = t0;
        if (t1 > f->raw_max)
            f->raw_max = t1;
        f->events++;
        return BASE_OK;
    }
    const struct rp_tables *t = w->t;
    int64_t corr = jnum(rec, "correlation_id.internal", jnum(rec, "correlation_id", 0));
    char args[512] = "", tid[64], id[64], fallback[100];
    snprintf(id, sizeof id, "rocprof n%d p%" PRIu32 " c%" PRId64, f->node, f->main_pid, corr);
    if (corr)
        snprintf(args, sizeof args, "\"correlation_id\":%" PRId64, corr);
    int64_t kind = jnum(rec, "kind", -1), op = jnum(rec, "operation", -1);
    const char *opn = op_name(t, kind, op);
    snprintf(fallback, sizeof fallback, "%.60s#%" PRId64, w->key, op);
    switch (w->type) {
    case RP_KERNEL: {
        uint64_t kid = (uint64_t)jnum(rec, "dispatch_info.kernel_id", 0);
        const char *name = find_name(t->kernels, t->nkernels, kid);
        snprintf(fallback, sizeof fallback, "kernel#%" PRIu64, kid);
        struct imp_pid *lane =
            agent_lane_id(f, t, (uint64_t)jnum(rec, "dispatch_info.agent_id.handle", 0));
        snprintf(tid, sizeof tid, "queue %" PRId64, jnum(rec, "dispatch_info.queue_id.handle", 0));
        size_t l = strlen(args);
        snprintf(args + l, sizeof args - l,
                 "%s\"grid\":[%" PRId64 ",%" PRId64 ",%" PRId64 "],\"workgroup\":[%" PRId64
                 ",%" PRId64 ",%" PRId64 "]",
                 l ? "," : "", jnum(rec, "dispatch_info.grid_size.x", 0),
                 jnum(rec, "dispatch_info.grid_size.y", 0),
                 jnum(rec, "dispatch_info.grid_size.z", 0),
                 jnum(rec, "dispatch_info.workgroup_size.x", 0),
                 jnum(rec, "dispatch_info.workgroup_size.y", 0),
                 jnum(rec, "dispatch_info.workgroup_size.z", 0));
        if (imp_emit_x(w->ctx, f, lane, tid, "kernel", name ? name : fallback, t0, t1, args) &&
            corr)
            imp_emit_flow(w->ctx, f, lane, tid, false, id, t0);
        break;
    }
    case RP_COPY: {
        /* On a GPU's lane: the source when it is one, else the destination. */
        uint64_t src = (uint64_t)jnum(rec, "src_agent_id.handle", 0);
        bool src_gpu = find_name(t->agents, t->nagents, src) != NULL;
        struct imp_pid *lane =
            agent_lane_id(f, t, src_gpu ? src : (uint64_t)jnum(rec, "dst_agent_id.handle", 0));
        size_t l = strlen(args);
        snprintf(args + l, sizeof args - l, "%s\"bytes\":%" PRId64, l ? "," : "",
                 jnum(rec, "bytes", 0));
        if (imp_emit_x(w->ctx, f, lane, "copies", "memcpy", opn ? opn : fallback, t0, t1, args) &&
            corr)
            imp_emit_flow(w->ctx, f, lane, "copies", false, id, t0);
        break;
    }
    default: {
        struct imp_pid *lane = proc_lane(f, f->main_pid);
        snprintf(tid, sizeof tid, "%" PRId64, jnum(rec, "thread_id", 0));
        const char *name = opn ? opn : fallback;
        if (w->type == RP_MARKER) {
            const char *msg = find_name(t->markers, t->nmarkers, (uint64_t)corr);
            name = msg ? msg : name;
        }
        if (imp_emit_x(w->ctx, f, lane, tid, w->key, name, t0, t1, args) && corr &&
            w->type == RP_API && is_launch(name))
            imp_emit_flow(w->ctx, f, lane, tid, true, id, t0);
        break;
    }
    }
    return BASE_OK;
}

static json_object *parse_span(const struct base_jspan *v)
{
    json_object *o = NULL;
    if (base_json_parse(v->p, v->n, &o, NULL) != BASE_DEC_OK)
        return NULL;
    return o;
}

/* Pass 1's tables from the small members of a process's object. */
static void keep_tables(struct imp_file *f, struct rp_tables *t, const char *key,
                        const struct base_jspan *v)
{
    if (!strcmp(key, "metadata")) {
        int64_t pid = jnum(v, "pid", 0);
        if (pid > 0 && pid <= UINT32_MAX && f->main_pid == 0)
            f->main_pid = (uint32_t)pid;
        return;
    }
    if (strcmp(key, "agents") && strcmp(key, "strings") && strcmp(key, "kernel_symbols"))
        return;
    json_object *o = parse_span(v);
    if (o == NULL)
        return;
    size_t n = json_object_is_type(o, json_type_array) ? json_object_array_length(o) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(o, i), *x, *h;
        if (!json_object_is_type(e, json_type_object))
            continue;
        if (!strcmp(key, "kernel_symbols")) {
            const char *name = NULL;
            if ((json_object_object_get_ex(e, "formatted_kernel_name", &x) ||
                 json_object_object_get_ex(e, "kernel_name", &x)) &&
                json_object_is_type(x, json_type_string))
                name = json_object_get_string(x);
            if (name && json_object_object_get_ex(e, "kernel_id", &h))
                add_name(&t->kernels, &t->nkernels, (uint64_t)json_object_get_int64(h), name);
        } else if (!strcmp(key, "agents") && json_object_object_get_ex(e, "id", &x) &&
                   json_object_object_get_ex(x, "handle", &h)) {
            json_object *type, *lid;
            if (json_object_object_get_ex(e, "type", &type) && json_object_get_int(type) != 2)
                continue; /* 2: a GPU */
            char name[32];
            snprintf(name, sizeof name, "%d",
                     json_object_object_get_ex(e, "logical_node_id", &lid)
                         ? json_object_get_int(lid)
                         : (int)i);
            add_name(&t->agents, &t->nagents, (uint64_t)json_object_get_int64(h), name);
        }
    }
    if (!strcmp(key, "strings") && json_object_is_type(o, json_type_object)) {
        json_object *br, *mk;
        if (json_object_object_get_ex(o, "buffer_records", &br) &&
            json_object_is_type(br, json_type_array) && t->kinds == NULL)
            t->kinds = json_object_get(br);
        if (json_object_object_get_ex(o, "marker_api", &mk) &&
            json_object_is_type(mk, json_type_array))
            for (size_t i = 0; i < json_object_array_length(mk); i++) {
                json_object *e = json_object_array_get_idx(mk, i), *k, *val;
                if (json_object_object_get_ex(e, "key", &k) &&
                    json_object_object_get_ex(e, "value", &val) &&
                    json_object_is_type(val, json_type_string))
                    add_name(&t->markers, &t->nmarkers, (uint64_t)json_object_get_int64(k),
                             json_object_get_string(val));
            }
    }
    json_object_put(o);
}

/* Both passes: the file's structure, records to rp_record. */
static int rp_walk_file(struct imp_file *f, struct imp_ctx *ctx, char *err)
{
    base_jstream_t *js = base_jstream_open(f->path, IMP_MAX_VALUE, err);
    if (js == NULL)
        return BASE_ERR;
    struct rp_walk w = {.f = f, .ctx = ctx, .t = f->priv};
    int rc = BASE_ERR;
    bool first = true, tool = false;
    struct base_jspan v;
    char key[64];
    if (base_jstream_expect(js, '{', err) != BASE_OK)
        goto out;
    for (;;) {
        int r = base_jstream_next(js, '}', &first, err);
        if (r < 0)
            goto out;
        if (r == 0)
            break;
        if (base_jstream_key(js, key, sizeof key, err) != BASE_OK)
            goto out;
        if (strcmp(key, "rocprofiler-sdk-tool") != 0) {
            if (base_jstream_value(js, &v, err) != BASE_OK)
                goto out;
            continue;
        }
        tool = true;
        /* [ {process}, ... ] */
        if (base_jstream_expect(js, '[', err) != BASE_OK)
            goto out;
        bool pfirst = true;
        for (;;) {
            int pr = base_jstream_next(js, ']', &pfirst, err);
            if (pr < 0)
                goto out;
            if (pr == 0)
                break;
            if (base_jstream_expect(js, '{', err) != BASE_OK)
                goto out;
            bool mfirst = true;
            for (;;) {
                int mr = base_jstream_next(js, '}', &mfirst, err);
                if (mr < 0)
                    goto out;
                if (mr == 0)
                    break;
                if (base_jstream_key(js, key, sizeof key, err) != BASE_OK)
                    goto out;
                if (strcmp(key, "buffer_records") != 0) {
                    if (base_jstream_value(js, &v, err) != BASE_OK)
                        goto out;
                    if (ctx == NULL)
                        keep_tables(f, w.t, key, &v);
                    continue;
                }
                if (base_jstream_expect(js, '{', err) != BASE_OK)
                    goto out;
                bool bfirst = true;
                for (;;) {
                    int br = base_jstream_next(js, '}', &bfirst, err);
                    if (br < 0)
                        goto out;
                    if (br == 0)
                        break;
                    if (base_jstream_key(js, w.key, sizeof w.key, err) != BASE_OK)
                        goto out;
                    w.type = rec_type(w.key);
                    if (imp_each(js, rp_record, &w, err) != BASE_OK)
                        goto out;
                }
            }
        }
    }
    if (base_jstream_end(js, err) != BASE_OK)
        goto out;
    if (!tool) {
        base_err(err, "%s: no rocprofiler-sdk-tool array", f->path);
        goto out;
    }
    rc = BASE_OK;
out:
    base_jstream_destroy(&js);
    return rc;
}

static int json_scan(struct imp_file *f, char *err)
{
    rp_release(f);
    f->priv = xcalloc(1, sizeof(struct rp_tables));
    if (rp_walk_file(f, NULL, err) != BASE_OK)
        return BASE_ERR;
    f->domain = CLOCK_DOMAIN_BOOT;
    f->domain_name = "boottime";
    struct rp_tables *t = f->priv;
    sort_tables(t);
    snprintf(f->variant, sizeof f->variant, "rocprofv3 JSON, %zu kernel names, %zu GPU agents",
             t->nkernels, t->nagents);
    return BASE_OK;
}

static int json_emit(struct imp_file *f, struct imp_ctx *ctx, char *err)
{
    return rp_walk_file(f, ctx, err);
}

const struct imp_format imp_rocprof_json = {
    .name = "rocprofv3-json",
    .what = "rocprofv3 JSON (--output-format json)",
    .detect = json_detect,
    .scan = json_scan,
    .emit = json_emit,
    .release = rp_release,
};
