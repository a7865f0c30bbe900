/*
 * XSpace export (`.xplane.pb`) for TensorBoard / xprof, and the scope pair
 * collector it needs.  The messages are those of
 * tsl/profiler/protobuf/xplane.proto (package tensorflow.profiler), written
 * with the small wire-format writer at the top of this file:
 *
 *   XSpace        planes=1 errors=2 warnings=3 hostnames=4
 *   XPlane        id=1 name=2 lines=3 event_metadata=4 (map<int64,_>)
 *                 stat_metadata=5 (map<int64,_>) stats=6
 *   XLine         id=1 name=2 timestamp_ns=3 events=4 duration_ps=9
 *                 display_id=10 display_name=11
 *   XEvent        metadata_id=1 offset_ps=2 duration_ps=3 stats=4
 *   XStat         metadata_id=1 double=2 uint64=3 int64=4 str=5
 *   XEventMetadata / XStatMetadata  id=1 name=2
 *
 * A map<int64, M> field is a repeated entry message {key=1, value=2}.
 * The file is written one plane at a time: a plane is built in memory (its
 * length prefix needs its size), written out, and the buffer reused, so
 * memory follows the largest plane, not the whole file.
 *
 * Times: every event is put on the global time base exactly as the Chrome
 * export does (tui_model_to_axis, aligned); XLine.timestamp_ns is the
 * line's first event, XEvent.offset_ps counts from it.  docs/CONSOLE.md
 * describes the planes, lines and stats.
 */
#include "tui/tui.h"
#include "tui/xplane_int.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- protobuf writer -------------------------------------------------- */

void tui_pb_init(struct tui_pb *pb)
{
    memset(pb, 0, sizeof *pb);
}

void tui_pb_free(struct tui_pb *pb)
{
    free(pb->buf);
    memset(pb, 0, sizeof *pb);
}

void tui_pb_reset(struct tui_pb *pb)
{
    assert(pb->depth == 0);
    pb->len = 0;
}

static void pb_reserve(struct tui_pb *pb, size_t more)
{
    if (pb->cap - pb->len >= more)
        return;
    size_t cap = pb->cap ? pb->cap : 4096;
    while (cap - pb->len < more)
        cap *= 2;
    pb->buf = xrealloc(pb->buf, cap);
    pb->cap = cap;
}

size_t tui_pb_varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static size_t put_varint(uint8_t *p, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

void tui_pb_varint(struct tui_pb *pb, uint64_t v)
{
    pb_reserve(pb, 10);
    pb->len += put_varint(pb->buf + pb->len, v);
}

void tui_pb_tag(struct tui_pb *pb, uint32_t field, unsigned wire)
{
    tui_pb_varint(pb, (uint64_t)field << 3 | (wire & 7u));
}

void tui_pb_uint(struct tui_pb *pb, uint32_t field, uint64_t v)
{
    tui_pb_tag(pb, field, TUI_PB_VARINT);
    tui_pb_varint(pb, v);
}

void tui_pb_int(struct tui_pb *pb, uint32_t field, int64_t v)
{
    tui_pb_tag(pb, field, TUI_PB_VARINT);
    tui_pb_varint(pb, (uint64_t)v); /* two's complement, as protobuf's int64 */
}

void tui_pb_fixed64(struct tui_pb *pb, uint32_t field, uint64_t v)
{
    tui_pb_tag(pb, field, TUI_PB_FIXED64);
    pb_reserve(pb, 8);
    for (int i = 0; i < 8; i++)
        pb->buf[pb->len++] = (uint8_t)(v >> (8 * i));
}

void tui_pb_double(struct tui_pb *pb, uint32_t field, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    tui_pb_fixed64(pb, field, u);
}

void tui_pb_bytes(struct tui_pb *pb, uint32_t field, const void *data, size_t len)
{
    tui_pb_tag(pb, field, TUI_PB_LEN);
    tui_pb_varint(pb, len);
    pb_reserve(pb, len);
    if (len)
        memcpy(pb->buf + pb->len, data, len);
    pb->len += len;
}

void tui_pb_str(struct tui_pb *pb, uint32_t field, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p), i = 0;
    while (i < n) {
        size_t k = base_utf8_len(p + i, p + n);
        if (k == 0)
            break;
        i += k;
    }
    if (i >= n) {
        tui_pb_bytes(pb, field, p, n);
        return;
    }
    /* Invalid: every bad byte becomes U+FFFD (3 bytes). */
    unsigned char *fix = xmalloc(3 * n + 1);
    size_t m = 0;
    for (i = 0; i < n;) {
        size_t k = base_utf8_len(p + i, p + n);
        if (k > 0) {
            memcpy(fix + m, p + i, k);
            m += k;
            i += k;
        } else {
            memcpy(fix + m, "\xef\xbf\xbd", 3);
            m += 3;
            i++;
        }
    }
    tui_pb_bytes(pb, field, fix, m);
    free(fix);
}

void tui_pb_begin(struct tui_pb *pb, uint32_t field)
{
    assert(pb->depth < TUI_PB_MAX_DEPTH);
    tui_pb_tag(pb, field, TUI_PB_LEN);
    pb_reserve(pb, 1);
    pb->open[pb->depth++] = pb->len;
    pb->len++; /* the length byte; more are made room for at the end */
}

void tui_pb_end(struct tui_pb *pb)
{
    assert(pb->depth > 0);
    size_t at = pb->open[--pb->depth];
    size_t n = pb->len - at - 1;
    size_t k = tui_pb_varint_len(n);
    if (k > 1) {
        pb_reserve(pb, k - 1);
        memmove(pb->buf + at + k, pb->buf + at + 1, n);
        pb->len += k - 1;
    }
    put_varint(pb->buf + at, n);
}

/* ---- scope pairs ------------------------------------------------------------ */

/*
 * A ring of the most recent pairs (grown on demand up to `max`) and an
 * open-addressing index (node, pid, child) -> ring sequence number.  An
 * evicted pair's index slot is not cleared: a slot whose sequence is older
 * than the ring's head is stale, reused by later inserts, and the index is
 * rebuilt from the ring when stale and live slots fill it.
 */
struct sc_ent {
    uint64_t child, parent;
    uint32_t pid;
    uint16_t node;
};

struct tui_scopes {
    struct sc_ent *ent;
    size_t cap, max;
    uint64_t head, tail; /* sequence numbers: oldest held, next */
    uint64_t *slot;      /* sequence + 1; 0: empty */
    size_t nslot, used;
    uint64_t evicted, conflicts;
    base_decstats_t dec;
};

#define SC_NONE UINT64_MAX

static uint64_t sc_hash(uint16_t node, uint32_t pid, uint64_t child)
{
    uint64_t h = child * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)node << 32 | pid);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 32;
    return h;
}

static struct sc_ent *sc_at(const tui_scopes_t *self, uint64_t seq)
{
    return &self->ent[seq % self->cap];
}

/* The sequence of the pair, or SC_NONE; *ins: where a new key would go. */
static uint64_t sc_find(const tui_scopes_t *self, uint16_t node, uint32_t pid, uint64_t child,
                        size_t *ins)
{
    size_t mask = self->nslot - 1, s = (size_t)sc_hash(node, pid, child) & mask;
    size_t reuse = SIZE_MAX;
    while (self->slot[s] != 0) {
        uint64_t seq = self->slot[s] - 1;
        if (seq < self->head) {
            if (reuse == SIZE_MAX)
                reuse = s;
        } else {
            const struct sc_ent *e = sc_at(self, seq);
            if (e->child == child && e->pid == pid && e->node == node)
                return seq;
        }
        s = (s + 1) & mask;
    }
    if (ins)
        *ins = reuse != SIZE_MAX ? reuse : s;
    return SC_NONE;
}

static void sc_rebuild(tui_scopes_t *self)
{
    size_t live = (size_t)(self->tail - self->head), n = 1024;
    while (n < 4 * live)
        n *= 2;
    free(self->slot);
    self->slot = xcalloc(n, sizeof *self->slot);
    self->nslot = n;
    self->used = 0;
    for (uint64_t seq = self->head; seq < self->tail; seq++) {
        const struct sc_ent *e = sc_at(self, seq);
        size_t ins = 0;
        sc_find(self, e->node, e->pid, e->child, &ins);
        self->slot[ins] = seq + 1;
        self->used++;
    }
}

tui_scopes_t *tui_scopes_new(size_t max_pairs)
{
    tui_scopes_t *self = xcalloc(1, sizeof *self);
    self->max = max_pairs ? max_pairs : TUI_SCOPES_DEFAULT_MAX;
    self->cap = self->max < 1024 ? self->max : 1024;
    self->ent = xcalloc(self->cap, sizeof *self->ent);
    sc_rebuild(self);
    return self;
}

void tui_scopes_destroy(tui_scopes_t **self)
{
    if (self == NULL || *self == NULL)
        return;
    free((*self)->ent);
    free((*self)->slot);
    free(*self);
    *self = NULL;
}

int tui_scopes_add(tui_scopes_t *self, uint16_t node, uint32_t pid, uint64_t child, uint64_t parent,
                   char *err)
{
    assert(self);
    if (child == 0 || child == parent)
        return base_err(err, "scope pair [%" PRIu64 ", %" PRIu64 "] is not a child-parent pair",
                        child, parent);
    size_t ins = 0;
    uint64_t seq = sc_find(self, node, pid, child, &ins);
    if (seq != SC_NONE) {
        struct sc_ent *e = sc_at(self, seq);
        if (e->parent != parent) {
            e->parent = parent; /* a restarted process reusing ids: the newer tree wins */
            self->conflicts++;
        }
        return 0;
    }
    if (self->tail - self->head == self->max) {
        self->head++; /* its index slot turns stale */
        self->evicted++;
    } else if (self->tail == self->cap) {
        /* Still growing: nothing was evicted yet, so sequence == index. */
        size_t cap = self->cap * 2 < self->max ? self->cap * 2 : self->max;
        self->ent = xreallocarray(self->ent, cap, sizeof *self->ent);
        self->cap = cap;
    }
    if (self->slot[ins] == 0)
        self->used++;
    self->slot[ins] = self->tail + 1;
    *sc_at(self, self->tail) = (struct sc_ent){child, parent, pid, node};
    self->tail++;
    if (10 * self->used > 7 * self->nslot)
        sc_rebuild(self);
    return 1;
}

int tui_scopes_parent(const tui_scopes_t *self, uint16_t node, uint32_t pid, uint64_t child,
                      uint64_t *parent)
{
    assert(self && parent);
    uint64_t seq = sc_find(self, node, pid, child, NULL);
    if (seq == SC_NONE)
        return BASE_ERR;
    *parent = sc_at(self, seq)->parent;
    return BASE_OK;
}

enum base_dec tui_scopes_apply(tui_scopes_t *self, const bus_msg_t *msg, char *err)
{
    assert(self && msg);
    if (bus_msg_kind(msg) != BUS_K_SCOPE)
        return BASE_DEC_OK;
    json_object *h = bus_msg_header(msg), *tree;
    int64_t node = bus_msg_node(msg), pid;
    enum base_dec rc;
    if (h == NULL || !json_object_is_type(h, json_type_object)) {
        rc = BASE_DEC_BAD_TYPE;
        base_err(err, "scope: no JSON object header");
        goto out;
    }
    if ((rc = base_json_opt_i64(h, "node", &node, err)) != BASE_DEC_OK ||
        (rc = base_json_get_i64(h, "pid", &pid, err)) != BASE_DEC_OK)
        goto out;
    if (node < 0 || node > BUS_NODE_MAX || pid < 0 || pid > INT32_MAX) {
        rc = BASE_DEC_BAD_VALUE;
        base_err(err, "scope: node %lld / pid %lld out of range", (long long)node, (long long)pid);
        goto out;
    }
    if (!json_object_object_get_ex(h, "tree", &tree) ||
        !json_object_is_type(tree, json_type_array)) {
        rc = BASE_DEC_BAD_TYPE;
        base_err(err, "scope: field \"tree\" must be an array");
        goto out;
    }
    size_t n = json_object_array_length(tree);
    /* Validate every pair before taking any. */
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(tree, i), *c, *p;
        if (!json_object_is_type(e, json_type_array) || json_object_array_length(e) != 2 ||
            !json_object_is_type(c = json_object_array_get_idx(e, 0), json_type_int) ||
            !json_object_is_type(p = json_object_array_get_idx(e, 1), json_type_int)) {
            rc = BASE_DEC_BAD_TYPE;
            base_err(err, "scope: entry %zu is not [child, parent]", i);
            goto out;
        }
        uint64_t cu = json_object_get_uint64(c), pu = json_object_get_uint64(p);
        if (json_object_get_int64(c) < 0 || json_object_get_int64(p) < 0 || cu == 0 || cu == pu) {
            rc = BASE_DEC_BAD_VALUE;
            base_err(err, "scope: entry %zu is not a child-parent pair of ids", i);
            goto out;
        }
    }
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(tree, i);
        tui_scopes_add(self, (uint16_t)node, (uint32_t)pid,
                       json_object_get_uint64(json_object_array_get_idx(e, 0)),
                       json_object_get_uint64(json_object_array_get_idx(e, 1)), NULL);
    }
    rc = BASE_DEC_OK;
out:
    base_decstats_add(&self->dec, rc);
    return rc;
}

size_t tui_scopes_count(const tui_scopes_t *self)
{
    assert(self);
    return (size_t)(self->tail - self->head);
}

uint64_t tui_scopes_evicted(const tui_scopes_t *self)
{
    assert(self);
    return self->evicted;
}

uint64_t tui_scopes_conflicts(const tui_scopes_t *self)
{
    assert(self);
    return self->conflicts;
}

const base_decstats_t *tui_scopes_decstats(const tui_scopes_t *self)
{
    assert(self);
    return &self->dec;
}

void tui_scopes_foreach(const tui_scopes_t *self,
                        void (*fn)(void *ctx, const struct tui_scope_rec *rec), void *ctx)
{
    assert(self && fn);
    for (uint64_t seq = self->head; seq < self->tail; seq++) {
        const struct sc_ent *e = sc_at(self, seq);
        struct tui_scope_rec r = {e->node, e->pid, e->child, e->parent};
        fn(ctx, &r);
    }
}

/* ---- the XSpace ------------------------------------------------------------- */

/* Field numbers of xplane.proto. */
enum {
    XSPACE_PLANES = 1,
    XSPACE_WARNINGS = 3,
    XSPACE_HOSTNAMES = 4,
    XPLANE_ID = 1,
    XPLANE_NAME = 2,
    XPLANE_LINES = 3,
    XPLANE_EVENT_METADATA = 4,
    XPLANE_STAT_METADATA = 5,
    XPLANE_STATS = 6,
    XLINE_ID = 1,
    XLINE_NAME = 2,
    XLINE_TIMESTAMP_NS = 3,
    XLINE_EVENTS = 4,
    XLINE_DURATION_PS = 9,
    XLINE_DISPLAY_NAME = 11,
    XEVENT_METADATA_ID = 1,
    XEVENT_OFFSET_PS = 2,
    XEVENT_DURATION_PS = 3,
    XEVENT_STATS = 4,
    XSTAT_METADATA_ID = 1,
    XSTAT_DOUBLE = 2,
    XSTAT_UINT64 = 3,
    XSTAT_INT64 = 4,
    XSTAT_STR = 5,
    XMETA_ID = 1, /* XEventMetadata and XStatMetadata */
    XMETA_NAME = 2,
    XMETA_DESCRIPTION = 3, /* XStatMetadata */
    MAP_KEY = 1,
    MAP_VALUE = 2,
};

/* Plane names xprof knows (tsl/profiler/utils/xplane_schema.cc). */
#define HOST_PLANE_NAME    "/host:CPU"
#define GPU_PLANE_PREFIX   "/device:GPU:"
#define SCOPE_PLANE_NAME   "/host:__ScopeRangeCallStack__"
#define TASK_ENV_NAME      "Task Environment"
#define PLANE_ID_HOST_BASE (1 << 20) /* host planes: this + node id; GPU planes: ordinal */
#define PLANE_ID_SCOPE     (1 << 21)
#define PLANE_ID_TASK_ENV  ((1 << 21) + 1)

/*
 * The stats of the export.  Their metadata ids are these values in every
 * plane; a plane's stat_metadata lists those it uses.  Names that xprof
 * knows are its own (correlation_id, scope_range_id, kernel_details, ...).
 */
enum xstat {
    XS_CORR = 1,
    XS_SCOPE,
    XS_DEVICE_ID,
    XS_KERNEL,
    XS_MEMCPY,
    XS_MEMSET,
    XS_BYTES,
    XS_STEP_NUM,
    XS_ROOT,
    XS_COLLECTIVE,
    XS_TRACE_NS,
    XS_TIME_FLAGS,
    XS_NODE,
    XS_HOSTNAME,
    XS_STATE,
    XS_ALIGNED,
    XS_REFERENCE,
    XS_TIME_BASE,
    XS_OFFSET,
    XS_DRIFT,
    XS_UNC,
    XS_FIT_WINDOW,
    XS_FIT_ANCHOR,
    XS_FIT_FROM,
    XS_FIT_TO,
    XS_EVICTED,
    XS_DEVICE_ORDINAL,
    XS_GPU_NAME,
    XS_START,
    XS_STOP,
    XS_REF_NODE,
    XS_PRODUCER,
    XS_SOURCE,
    XS_SCOPE_PROCS,
    XS_FLOW,
    XS_NKINDS
};

static const struct {
    const char *name, *desc;
} xstat_def[XS_NKINDS] = {
    [XS_CORR] = {"correlation_id", "links an API call to the GPU work it launched"},
    [XS_SCOPE] = {"scope_range_id", "innermost open range, unique over the export"},
    [XS_DEVICE_ID] = {"device_id", "the /device:GPU:<n> ordinal the call launched work on"},
    [XS_KERNEL] = {"kernel_details", "grid and workgroup sizes"},
    [XS_MEMCPY] = {"memcpy_details", "copy size, kind and asynchrony"},
    [XS_MEMSET] = {"Memset_details", "memset size and asynchrony"},
    [XS_BYTES] = {"bytes_transferred", "bytes copied or set"},
    [XS_STEP_NUM] = {"step_num", "training step number"},
    [XS_ROOT] = {"_r", "root event of a step (xprof grouping)"},
    [XS_COLLECTIVE] = {"collective", "1: a cross-node collective"},
    [XS_TRACE_NS] = {"trace_ns", "start on the node's own trace clock"},
    [XS_TIME_FLAGS] = {"time_flags",
                       "1 raw clock (node unaligned), 2 no snapshot pairs, 4 extrapolated, "
                       "8 across unaligned windows"},
    [XS_NODE] = {"node", "dptop node id"},
    [XS_HOSTNAME] = {"hostname", "the node's host"},
    [XS_STATE] = {"state", "node state at the end of the recording"},
    [XS_ALIGNED] = {"aligned", "1: on the global time base, 0: on the node's raw clock"},
    [XS_REFERENCE] = {"reference", "1: the reference node of the time base"},
    [XS_TIME_BASE] = {"time_base", "global or raw"},
    [XS_OFFSET] = {"offset_ns", "latest node fit: offset onto the reference clock"},
    [XS_DRIFT] = {"drift_ppb", "latest node fit: drift against the reference clock"},
    [XS_UNC] = {"uncertainty_ns", "latest node fit: uncertainty"},
    [XS_FIT_WINDOW] = {"fit_window", "latest node fit: window"},
    [XS_FIT_ANCHOR] = {"fit_anchor_ns", "latest node fit: anchor on the node's probe clock"},
    [XS_FIT_FROM] = {"fit_from_ns", "latest node fit: window start"},
    [XS_FIT_TO] = {"fit_to_ns", "latest node fit: window end"},
    [XS_EVICTED] = {"evicted_events", "events of the node that did not fit the event budget"},
    [XS_DEVICE_ORDINAL] = {"device_ordinal", "the device id on its node"},
    [XS_GPU_NAME] = {"gpu_name", "device name from the node's hello"},
    [XS_START] = {"profile_start_time", "first event start, global time base, ns"},
    [XS_STOP] = {"profile_stop_time", "last event end, global time base, ns"},
    [XS_REF_NODE] = {"reference_node", "reference node of the global time base"},
    [XS_PRODUCER] = {"producer", "the program that wrote the file"},
    [XS_SOURCE] = {"source", "the recording exported"},
    [XS_SCOPE_PROCS] = {"scope_id_processes",
                        "ordinal=node/pid of each process: scope id = ordinal << 40 | id"},
    [XS_FLOW] = {"flow", "launch arrow: category 9 (GPU launch) << 58 | id << 2 | direction "
                         "(2 out of the API call, 1 into its GPU work)"},
};

/* xprof's XFlow: bits 0-1 direction (1 in, 2 out), 2-57 the id, 58-63 the
 * category (9: kGpuLaunch).  The id: (node, pid, correlation id) mixed to
 * 56 bits, the same at both ends. */
static uint64_t xflow(uint16_t node, uint32_t pid, uint32_t corr, bool out)
{
    uint64_t id = ((uint64_t)node << 48) ^ ((uint64_t)pid << 20) ^ corr;
    id = (id * 0x9e3779b97f4a7c15ull) >> 8;
    return (9ull << 58) | ((id & ((1ull << 56) - 1)) << 2) | (out ? 2u : 1u);
}

struct gpu_ord {
    uint16_t node, device;
};
struct proc_ord {
    uint16_t node;
    uint32_t pid;
};
struct md_ent {
    const char *name; /* NULL: empty slot */
    int64_t id;
};

struct xw {
    int64_t next_extra_line; /* ids of overlap lines, per plane: beyond any tid or ordinal */
    tui_model_t *m;
    const tui_scopes_t *scopes;
    struct tui_xplane_opts o;
    FILE *out;
    struct tui_pb pb;
    tui_store_t *store;
    size_t *order, nt; /* tracks, sorted */
    struct gpu_ord *gpus;
    size_t ngpus;
    struct proc_ord *procs;
    size_t nprocs, capprocs;
    /* per plane */
    struct md_ent *md; /* open addressing by name */
    size_t capmd, nmd;
    const char **md_names; /* by id - 1 */
    char **owned;          /* generated names, freed with the plane */
    size_t nowned, capowned;
    uint64_t stats_used; /* bit per enum xstat */
    /* The node being written: the device of an API call's GPU work, by
     * (pid, correlation id); with a single device no map is needed. */
    int only_dev; /* -1: none, -2: several (see corr) */
    uint64_t *corr_key;
    uint16_t *corr_dev;
    size_t capcorr;
    struct tui_xplane_stats st;
    bool io_error;
    int io_errno;
};

/* Tracks by node, host threads first, then device (so that a device's
 * tracks are one run: one plane), pid, id. */
static int cmp_track(const void *pa, const void *pb, void *arg)
{
    const tui_store_t *s = arg;
    const struct tui_track_key *a = &tui_store_track(s, *(const size_t *)pa)->key;
    const struct tui_track_key *b = &tui_store_track(s, *(const size_t *)pb)->key;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    if (a->host != b->host)
        return a->host ? -1 : 1;
    if (!a->host && a->device != b->device)
        return a->device < b->device ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static bool node_wanted(const struct xw *w, uint16_t node)
{
    return w->o.node < 0 || (int)node == w->o.node;
}

/* ---- processes (scope id ordinals) and GPUs (plane ordinals) ---- */

static int cmp_proc(const void *pa, const void *pb)
{
    const struct proc_ord *a = pa, *b = pb;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    return (a->pid > b->pid) - (a->pid < b->pid);
}

static void procs_unique(struct xw *w)
{
    if (w->nprocs == 0)
        return;
    qsort(w->procs, w->nprocs, sizeof *w->procs, cmp_proc);
    size_t n = 1;
    for (size_t i = 1; i < w->nprocs; i++)
        if (cmp_proc(&w->procs[n - 1], &w->procs[i]) != 0)
            w->procs[n++] = w->procs[i];
    w->nprocs = n;
}

static void proc_push(struct xw *w, uint16_t node, uint32_t pid)
{
    if (w->nprocs == w->capprocs) {
        /* Repeats (pairs of interleaved processes) are squeezed out before
         * growing, so the list stays near the number of processes. */
        procs_unique(w);
        if (w->capprocs == 0 || 2 * w->nprocs > w->capprocs) {
            w->capprocs = w->capprocs ? 2 * w->capprocs : 64;
            w->procs = xreallocarray(w->procs, w->capprocs, sizeof *w->procs);
        }
    }
    w->procs[w->nprocs++] = (struct proc_ord){node, pid};
}

static void proc_from_scope(void *ctx, const struct tui_scope_rec *r)
{
    struct xw *w = ctx;
    /* Pairs come in runs of one process: skip the repeats cheaply. */
    if (w->nprocs && w->procs[w->nprocs - 1].node == r->node &&
        w->procs[w->nprocs - 1].pid == r->pid)
        return;
    if (node_wanted(w, r->node))
        proc_push(w, r->node, r->pid);
}

static void build_ordinals(struct xw *w)
{
    for (size_t i = 0; i < w->nt; i++) {
        const struct tui_track_key *k = &tui_store_track(w->store, w->order[i])->key;
        if (!node_wanted(w, k->node))
            continue;
        proc_push(w, k->node, k->pid);
        if (!k->host && (w->ngpus == 0 || w->gpus[w->ngpus - 1].node != k->node ||
                         w->gpus[w->ngpus - 1].device != k->device)) {
            /* Tracks are sorted, so each (node, device) comes in one run. */
            w->gpus = xreallocarray(w->gpus, w->ngpus + 1, sizeof *w->gpus);
            w->gpus[w->ngpus++] = (struct gpu_ord){k->node, k->device};
        }
    }
    if (w->scopes)
        tui_scopes_foreach(w->scopes, proc_from_scope, w);
    procs_unique(w);
}

/* The export's scope id of (node, pid, id); 0 when it has none. */
static int64_t scope_gid(struct xw *w, uint16_t node, uint32_t pid, uint64_t id)
{
    if (id == 0)
        return 0;
    if (id >> TUI_XPLANE_SCOPE_BITS) {
        w->st.scope_unmapped++;
        return 0;
    }
    struct proc_ord key = {node, pid};
    const struct proc_ord *p = bsearch(&key, w->procs, w->nprocs, sizeof key, cmp_proc);
    if (p == NULL) /* cannot happen: every exported process has an ordinal */
        return 0;
    return (int64_t)((uint64_t)(p - w->procs + 1) << TUI_XPLANE_SCOPE_BITS | id);
}

/* The <n> of "/device:GPU:<n>": the device id in a one-node XSpace, else
 * the (node, device) ordinal over the export; -1: no such plane. */
static int gpu_number(const struct xw *w, uint16_t node, uint16_t device)
{
    for (size_t lo = 0, hi = w->ngpus; lo < hi;) {
        size_t mid = lo + (hi - lo) / 2;
        const struct gpu_ord *g = &w->gpus[mid];
        if (g->node == node && g->device == device)
            return w->o.node >= 0 ? (int)device : (int)mid;
        if (g->node < node || (g->node == node && g->device < device))
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* ---- API call -> device, per node ---- */

static size_t corr_slot(const struct xw *w, uint64_t key)
{
    size_t mask = w->capcorr - 1, s = (size_t)(key * 0x9e3779b97f4a7c15ULL >> 17) & mask;
    while (w->corr_key[s] && w->corr_key[s] != key)
        s = (s + 1) & mask;
    return s;
}

/* Learn the devices of the node's GPU work (device tracks [a, b)). */
static void corr_build(struct xw *w, size_t a, size_t b)
{
    w->only_dev = -1;
    size_t n = 0;
    for (size_t i = a; i < b; i++) {
        const struct tui_track_info *t = tui_store_track(w->store, w->order[i]);
        if (w->only_dev == -1)
            w->only_dev = t->key.device;
        else if (w->only_dev != t->key.device)
            w->only_dev = -2;
        n += t->count;
    }
    /* Built even for one device: an arrow is drawn only to work that is held. */
    size_t cap = 1024;
    while (cap < 2 * n)
        cap *= 2;
    if (cap > w->capcorr) {
        free(w->corr_key);
        free(w->corr_dev);
        w->corr_key = xmalloc(cap * sizeof *w->corr_key);
        w->corr_dev = xmalloc(cap * sizeof *w->corr_dev);
        w->capcorr = cap;
    }
    memset(w->corr_key, 0, w->capcorr * sizeof *w->corr_key);
    for (size_t i = a; i < b; i++) {
        const struct tui_track_info *t = tui_store_track(w->store, w->order[i]);
        for (size_t j = 0; j < t->count; j++) {
            const tui_ev_t *e = tui_store_ev(w->store, w->order[i], j);
            if (e->corr_id == 0)
                continue;
            uint64_t key = (uint64_t)t->key.pid << 32 | e->corr_id;
            size_t s = corr_slot(w, key);
            w->corr_key[s] = key;
            w->corr_dev[s] = t->key.device;
        }
    }
}

/* The device an API call of (pid, corr) launched work on; -1: unknown. */
static int corr_device(const struct xw *w, uint32_t pid, uint32_t corr)
{
    if (w->only_dev != -2)
        return w->only_dev;
    uint64_t key = (uint64_t)pid << 32 | corr;
    size_t s = corr_slot(w, key);
    return w->corr_key[s] == key ? w->corr_dev[s] : -1;
}

/* Whether the GPU work of (pid, corr) is in the export. */
static bool corr_held(const struct xw *w, uint32_t pid, uint32_t corr)
{
    uint64_t key = (uint64_t)pid << 32 | corr;
    return w->corr_key[corr_slot(w, key)] == key;
}

/* ---- planes: event metadata, stats ---- */

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static void md_clear(struct xw *w)
{
    if (w->md)
        memset(w->md, 0, w->capmd * sizeof *w->md);
    w->nmd = 0;
    for (size_t i = 0; i < w->nowned; i++)
        free(w->owned[i]);
    w->nowned = 0;
}

static void md_grow(struct xw *w)
{
    size_t oldcap = w->capmd;
    struct md_ent *old = w->md;
    w->capmd = oldcap ? 2 * oldcap : 256;
    w->md = xcalloc(w->capmd, sizeof *w->md);
    w->md_names = xreallocarray(w->md_names, w->capmd, sizeof *w->md_names);
    for (size_t i = 0; i < oldcap; i++) {
        if (old[i].name == NULL)
            continue;
        size_t s = (size_t)str_hash(old[i].name) & (w->capmd - 1);
        while (w->md[s].name)
            s = (s + 1) & (w->capmd - 1);
        w->md[s] = old[i];
    }
    free(old);
}

/* The event metadata id of name in this plane (1, 2, ...); copy: the name
 * does not outlive the call. */
static int64_t md_id(struct xw *w, const char *name, bool copy)
{
    if (2 * (w->nmd + 1) > w->capmd)
        md_grow(w);
    size_t s = (size_t)str_hash(name) & (w->capmd - 1);
    while (w->md[s].name) {
        if (strcmp(w->md[s].name, name) == 0)
            return w->md[s].id;
        s = (s + 1) & (w->capmd - 1);
    }
    if (copy) {
        if (w->nowned == w->capowned) {
            w->capowned = w->capowned ? 2 * w->capowned : 64;
            w->owned = xreallocarray(w->owned, w->capowned, sizeof *w->owned);
        }
        name = w->owned[w->nowned++] = xstrdup(name);
    }
    w->md[s] = (struct md_ent){name, (int64_t)++w->nmd};
    w->md_names[w->nmd - 1] = name;
    return (int64_t)w->nmd;
}

static void stat_begin(struct xw *w, uint32_t field, enum xstat k)
{
    w->stats_used |= 1ULL << k;
    tui_pb_begin(&w->pb, field);
    tui_pb_int(&w->pb, XSTAT_METADATA_ID, k);
}

static void stat_int(struct xw *w, uint32_t field, enum xstat k, int64_t v)
{
    stat_begin(w, field, k);
    tui_pb_int(&w->pb, XSTAT_INT64, v);
    tui_pb_end(&w->pb);
}

static void stat_uint(struct xw *w, uint32_t field, enum xstat k, uint64_t v)
{
    stat_begin(w, field, k);
    tui_pb_uint(&w->pb, XSTAT_UINT64, v);
    tui_pb_end(&w->pb);
}

static void stat_double(struct xw *w, uint32_t field, enum xstat k, double v)
{
    stat_begin(w, field, k);
    tui_pb_double(&w->pb, XSTAT_DOUBLE, v);
    tui_pb_end(&w->pb);
}

static void stat_str(struct xw *w, uint32_t field, enum xstat k, const char *v)
{
    stat_begin(w, field, k);
    tui_pb_str(&w->pb, XSTAT_STR, v);
    tui_pb_end(&w->pb);
}

static void plane_begin(struct xw *w, int64_t id, const char *name)
{
    tui_pb_begin(&w->pb, XSPACE_PLANES);
    if (id)
        tui_pb_int(&w->pb, XPLANE_ID, id);
    tui_pb_str(&w->pb, XPLANE_NAME, name);
    md_clear(w);
    w->stats_used = 0;
    w->next_extra_line = 1 << 30; /* tids stay below 2^22, ordinals small */
}

static void flush(struct xw *w)
{
    if (w->pb.len && !w->io_error && fwrite(w->pb.buf, 1, w->pb.len, w->out) != w->pb.len) {
        w->io_error = true;
        w->io_errno = errno ? errno : EIO;
    }
    w->st.bytes += w->pb.len;
    tui_pb_reset(&w->pb);
}

/* Metadata maps (fields may come in any order: these follow the lines). */
static void plane_end(struct xw *w, bool stat_metadata)
{
    for (size_t i = 0; i < w->nmd; i++) {
        tui_pb_begin(&w->pb, XPLANE_EVENT_METADATA);
        tui_pb_int(&w->pb, MAP_KEY, (int64_t)i + 1);
        tui_pb_begin(&w->pb, MAP_VALUE);
        tui_pb_int(&w->pb, XMETA_ID, (int64_t)i + 1);
        tui_pb_str(&w->pb, XMETA_NAME, w->md_names[i]);
        tui_pb_end(&w->pb);
        tui_pb_end(&w->pb);
    }
    for (int k = 1; stat_metadata && k < XS_NKINDS; k++) {
        if (!(w->stats_used & (1ULL << k)))
            continue;
        tui_pb_begin(&w->pb, XPLANE_STAT_METADATA);
        tui_pb_int(&w->pb, MAP_KEY, k);
        tui_pb_begin(&w->pb, MAP_VALUE);
        tui_pb_int(&w->pb, XMETA_ID, k);
        tui_pb_str(&w->pb, XMETA_NAME, xstat_def[k].name);
        tui_pb_str(&w->pb, XMETA_DESCRIPTION, xstat_def[k].desc);
        tui_pb_end(&w->pb);
        tui_pb_end(&w->pb);
    }
    tui_pb_end(&w->pb);
    w->st.planes++;
    md_clear(w);
    flush(w);
}

/* ---- events ---- */

static const char *kind_word(uint8_t kind)
{
    return gpu_event_kind_name((enum gpu_event_kind)kind);
}

static void event_stats(struct xw *w, const tui_ev_t *e, const struct tui_track_key *k,
                        unsigned flags)
{
    char buf[160];
    /* xprof reads correlation_id and the step stats as int64 values. */
    if (e->corr_id)
        stat_int(w, XEVENT_STATS, XS_CORR, e->corr_id);
    if (e->corr_id && tui_kind_on_device(e->kind))
        stat_uint(w, XEVENT_STATS, XS_FLOW, xflow(k->node, k->pid, e->corr_id, false));
    int64_t gid = scope_gid(w, k->node, k->pid, e->scope);
    if (gid)
        stat_int(w, XEVENT_STATS, XS_SCOPE, gid);
    switch (e->kind) {
    case GPU_EV_KERNEL:
        snprintf(buf, sizeof buf, "grid:%" PRIu32 ",%" PRIu32 ",%u block:%u,%u,%u", e->u.k.grid_x,
                 e->u.k.grid_y, e->u.k.grid_z, e->u.k.block_x, e->u.k.block_y, e->u.k.block_z);
        stat_str(w, XEVENT_STATS, XS_KERNEL, buf);
        break;
    case GPU_EV_MEMCPY:
        snprintf(buf, sizeof buf, "kind:%s size:%" PRIu64 " async:%d",
                 gpu_copy_kind_name((enum gpu_copy_kind)e->copy_kind), e->u.x.bytes,
                 (e->flags & GPU_EVF_ASYNC) ? 1 : 0);
        stat_str(w, XEVENT_STATS, XS_MEMCPY, buf);
        stat_uint(w, XEVENT_STATS, XS_BYTES, e->u.x.bytes);
        break;
    case GPU_EV_MEMSET:
        snprintf(buf, sizeof buf, "size:%" PRIu64 " async:%d", e->u.x.bytes,
                 (e->flags & GPU_EVF_ASYNC) ? 1 : 0);
        stat_str(w, XEVENT_STATS, XS_MEMSET, buf);
        stat_uint(w, XEVENT_STATS, XS_BYTES, e->u.x.bytes);
        break;
    case GPU_EV_API:
        if (e->corr_id) {
            int dev = corr_device(w, k->pid, e->corr_id);
            int ord = dev >= 0 ? gpu_number(w, k->node, (uint16_t)dev) : -1;
            if (ord >= 0)
                stat_uint(w, XEVENT_STATS, XS_DEVICE_ID, (uint64_t)ord);
            if (corr_held(w, k->pid, e->corr_id)) /* an arrow to its GPU work */
                stat_uint(w, XEVENT_STATS, XS_FLOW, xflow(k->node, k->pid, e->corr_id, true));
        }
        break;
    case GPU_EV_STEP:
        stat_int(w, XEVENT_STATS, XS_STEP_NUM, (int64_t)e->u.x.step);
        stat_int(w, XEVENT_STATS, XS_ROOT, 1);
        break;
    default:
        break;
    }
    if (e->flags & GPU_EVF_COLLECTIVE)
        stat_int(w, XEVENT_STATS, XS_COLLECTIVE, 1);
    stat_int(w, XEVENT_STATS, XS_TRACE_NS, e->start);
    if (flags) {
        stat_int(w, XEVENT_STATS, XS_TIME_FLAGS, (int64_t)flags);
        w->st.flagged++;
    }
}

/*
 * Trace viewers keep a line's events only where they nest.  The level of
 * each event of a track: 0 its own line, L an overlap line beside it for
 * one that starts inside an open event and ends after it (as the Chrome
 * and Perfetto exports do); XS_NO_LEVEL: not placed in time, or beyond the
 * last overlap line (counted).  Returns the highest level used.
 */
#define XS_LEVELS   8
#define XS_NO_LEVEL 0xffu
static int track_levels(struct xw *w, size_t ti, uint8_t *lvl)
{
    const struct tui_track_info *info = tui_store_track(w->store, ti);
    int64_t *stack[XS_LEVELS] = {0};
    size_t depth[XS_LEVELS] = {0}, cap[XS_LEVELS] = {0};
    int top = 0;
    for (size_t j = 0; j < info->count; j++) {
        const tui_ev_t *e = tui_store_ev(w->store, ti, j);
        int64_t g0, g1;
        unsigned f;
        lvl[j] = XS_NO_LEVEL;
        if (tui_model_to_axis(w->m, info->key.node, e->start, TUI_CLOCK_ALIGNED, &g0, &f) !=
                BASE_OK ||
            tui_model_to_axis(w->m, info->key.node, e->end, TUI_CLOCK_ALIGNED, &g1, &f) != BASE_OK)
            continue;
        if (e->kind == GPU_EV_INSTANT) {
            lvl[j] = 0;
            continue;
        }
        for (int l = 0; l < XS_LEVELS; l++) {
            while (depth[l] && stack[l][depth[l] - 1] <= g0)
                depth[l]--;
            if (depth[l] && g1 > stack[l][depth[l] - 1])
                continue;
            if (depth[l] == cap[l]) {
                cap[l] = cap[l] ? cap[l] * 2 : 16;
                stack[l] = xreallocarray(stack[l], cap[l], sizeof *stack[l]);
            }
            stack[l][depth[l]++] = g1;
            lvl[j] = (uint8_t)l;
            top = l > top ? l : top;
            w->st.overlaps_split += l > 0;
            break;
        }
        if (lvl[j] == XS_NO_LEVEL)
            w->st.overlaps_dropped++;
    }
    for (int l = 0; l < XS_LEVELS; l++)
        free(stack[l]);
    return top;
}

/* One line: a track's events of one overlap level on the global time base.
 * Events that cannot be placed (nothing known of the node's clock) are
 * counted, not written. */
static void write_line(struct xw *w, size_t ti, int64_t line_id, const char *line_name,
                       const uint8_t *lvl, int level)
{
    const struct tui_track_info *info = tui_store_track(w->store, ti);
    const struct tui_track_key *k = &info->key;
    bool open = false;
    int64_t ts = 0, last = 0;
    for (size_t j = 0; j < info->count; j++) {
        if (lvl[j] != level) {
            w->st.skipped += level == 0 && lvl[j] == XS_NO_LEVEL;
            continue;
        }
        const tui_ev_t *e = tui_store_ev(w->store, ti, j);
        int64_t g0, g1;
        unsigned f0, f1;
        if (tui_model_to_axis(w->m, k->node, e->start, TUI_CLOCK_ALIGNED, &g0, &f0) != BASE_OK ||
            tui_model_to_axis(w->m, k->node, e->end, TUI_CLOCK_ALIGNED, &g1, &f1) != BASE_OK) {
            w->st.skipped++;
            continue;
        }
        if (g1 < g0)
            g1 = g0;
        if (!open) {
            /* Conversion is monotonic and the track sorted: the first is the earliest. */
            ts = g0;
            tui_pb_begin(&w->pb, XPLANE_LINES);
            tui_pb_int(&w->pb, XLINE_ID, line_id);
            tui_pb_str(&w->pb, XLINE_NAME, line_name);
            tui_pb_int(&w->pb, XLINE_TIMESTAMP_NS, ts);
            open = true;
        }
        const char *name = tui_model_name(w->m, k->node, k->pid, e->name_id);
        char gen[64];
        bool copy = false;
        if (e->kind == GPU_EV_STEP) {
            /* xprof's explicit step marker: a name starting "train", the
             * number in step_num, _r = 1 (one metadata entry for all). */
            name = "train";
        } else if (name == NULL) {
            snprintf(gen, sizeof gen, "%s#%" PRIu32, kind_word(e->kind), e->name_id);
            name = gen;
            copy = true;
        }
        tui_pb_begin(&w->pb, XLINE_EVENTS);
        tui_pb_int(&w->pb, XEVENT_METADATA_ID, md_id(w, name, copy));
        tui_pb_int(&w->pb, XEVENT_OFFSET_PS, (g0 - ts) * 1000); /* oneof: written even when 0 */
        if (g1 > g0)
            tui_pb_int(&w->pb, XEVENT_DURATION_PS, (g1 - g0) * 1000);
        event_stats(w, e, k, f0 | f1);
        tui_pb_end(&w->pb);
        w->st.events++;
        if ((f0 | f1) & TUI_T_RAW)
            w->st.raw_events++;
        if (g0 < w->st.start_ns || w->st.start_ns == 0)
            w->st.start_ns = g0;
        if (g1 > w->st.stop_ns)
            w->st.stop_ns = g1;
        if (g1 > last)
            last = g1;
    }
    if (open) {
        tui_pb_int(&w->pb, XLINE_DURATION_PS, (last - ts) * 1000);
        tui_pb_end(&w->pb);
        w->st.lines++;
    }
}

/* Whether the tracks [a, b) belong to more than one process. */
static bool several_pids(const struct xw *w, size_t a, size_t b)
{
    for (size_t i = a + 1; i < b; i++)
        if (tui_store_track(w->store, w->order[i])->key.pid !=
            tui_store_track(w->store, w->order[a])->key.pid)
            return true;
    return false;
}

/* Lines [a, b) of one plane.  Line id: the thread (stream) id, or, when
 * the plane holds several processes (or an id beyond 31 bits), the line's
 * ordinal in the plane from 1: xprof keeps a 32-bit resource id per line,
 * so pid << 32 | id would put two processes' "Stream #1" on one row. */
static void write_lines(struct xw *w, size_t a, size_t b)
{
    bool shared = several_pids(w, a, b);
    for (size_t i = a; i < b; i++) {
        const struct tui_track_key *k = &tui_store_track(w->store, w->order[i])->key;
        char lname[64];
        if (k->host)
            snprintf(lname, sizeof lname, "tid %" PRIu32 " (pid %" PRIu32 ")", k->id, k->pid);
        else if (shared)
            snprintf(lname, sizeof lname, "Stream #%" PRIu32 " (pid %" PRIu32 ")", k->id, k->pid);
        else
            snprintf(lname, sizeof lname, "Stream #%" PRIu32, k->id);
        int64_t id = shared || k->id > INT32_MAX ? (int64_t)(i - a + 1) : (int64_t)k->id;
        size_t ti = w->order[i];
        size_t n = tui_store_track(w->store, ti)->count;
        uint8_t *lvl = xcalloc(n ? n : 1, 1);
        int top = track_levels(w, ti, lvl);
        write_line(w, ti, id, lname, lvl, 0);
        for (int l = 1; l <= top; l++) {
            char oname[96];
            snprintf(oname, sizeof oname, "%s (overlaps %d)", lname, l);
            write_line(w, ti, w->next_extra_line++, oname, lvl, l);
        }
        free(lvl);
    }
}

static void node_stats(struct xw *w, const struct tui_node *n)
{
    stat_int(w, XPLANE_STATS, XS_NODE, n->id);
    stat_str(w, XPLANE_STATS, XS_HOSTNAME, n->host);
}

static void host_plane(struct xw *w, const struct tui_node *n, size_t a, size_t b)
{
    char name[160];
    if (w->o.node >= 0)
        snprintf(name, sizeof name, "%s", HOST_PLANE_NAME);
    else
        snprintf(name, sizeof name, HOST_PLANE_NAME ":n%u %s", n->id, n->host[0] ? n->host : "?");
    plane_begin(w, PLANE_ID_HOST_BASE + n->id, name);
    write_lines(w, a, b);
    bool aligned = tui_model_aligned(w->m, n->id);
    node_stats(w, n);
    stat_str(w, XPLANE_STATS, XS_STATE, tui_node_state_name(n->state));
    stat_int(w, XPLANE_STATS, XS_ALIGNED, aligned);
    stat_int(w, XPLANE_STATS, XS_REFERENCE, n->is_ref);
    stat_str(w, XPLANE_STATS, XS_TIME_BASE, aligned ? "global" : "raw");
    if (n->have_fit && n->fit.aligned && isfinite(n->fit.offset_ns)) {
        stat_double(w, XPLANE_STATS, XS_OFFSET, n->fit.offset_ns);
        stat_double(w, XPLANE_STATS, XS_DRIFT, n->fit.drift_ppb);
        if (isfinite(n->fit.uncertainty_ns))
            stat_double(w, XPLANE_STATS, XS_UNC, n->fit.uncertainty_ns);
        stat_int(w, XPLANE_STATS, XS_FIT_WINDOW, n->fit.window);
        stat_int(w, XPLANE_STATS, XS_FIT_ANCHOR, n->fit.anchor_ns);
        stat_int(w, XPLANE_STATS, XS_FIT_FROM, n->fit.from_ns);
        stat_int(w, XPLANE_STATS, XS_FIT_TO, n->fit.to_ns);
    } else if (n->is_ref) {
        stat_double(w, XPLANE_STATS, XS_OFFSET, 0);
        stat_double(w, XPLANE_STATS, XS_DRIFT, 0);
        stat_double(w, XPLANE_STATS, XS_UNC, 0);
    }
    stat_uint(w, XPLANE_STATS, XS_EVICTED, tui_store_node_evicted(w->store, n->id));
    plane_end(w, true);
}

/* One plane per device: the device tracks of the node form runs by device. */
static void device_planes(struct xw *w, const struct tui_node *n, size_t a, size_t b)
{
    for (size_t i = a; i < b;) {
        const struct tui_track_key *k = &tui_store_track(w->store, w->order[i])->key;
        size_t j = i + 1;
        while (j < b && tui_store_track(w->store, w->order[j])->key.device == k->device)
            j++;
        char name[64];
        int num = gpu_number(w, n->id, k->device);
        snprintf(name, sizeof name, GPU_PLANE_PREFIX "%d", num);
        plane_begin(w, num, name);
        write_lines(w, i, j);
        node_stats(w, n);
        stat_int(w, XPLANE_STATS, XS_DEVICE_ORDINAL, k->device);
        if (n->gpu_name[0])
            stat_str(w, XPLANE_STATS, XS_GPU_NAME, n->gpu_name);
        plane_end(w, true);
        i = j;
    }
}

static void tree_pair(void *ctx, const struct tui_scope_rec *r)
{
    struct xw *w = ctx;
    /* Roots are not listed: xprof walks child -> parent until an id is not
     * found, and a 0 there would add a level (XLA's collectors do the same). */
    if (r->parent == 0 || !node_wanted(w, r->node))
        return;
    int64_t c = scope_gid(w, r->node, r->pid, r->child);
    int64_t p = scope_gid(w, r->node, r->pid, r->parent);
    if (c == 0 || p == 0)
        return;
    /* Metadata id = child, value = parent; no stat metadata: the plane is a map. */
    tui_pb_begin(&w->pb, XPLANE_STATS);
    tui_pb_int(&w->pb, XSTAT_METADATA_ID, c);
    tui_pb_int(&w->pb, XSTAT_INT64, p);
    tui_pb_end(&w->pb);
    w->st.scope_pairs++;
}

static void task_env_plane(struct xw *w)
{
    plane_begin(w, PLANE_ID_TASK_ENV, TASK_ENV_NAME);
    int64_t start = w->st.start_ns, stop = w->st.stop_ns;
    if (w->st.events == 0) {
        start = w->o.start_ns;
        stop = w->o.stop_ns;
    }
    if (stop <= start)
        stop = start + 1; /* xprof wants a span */
    w->st.start_ns = start;
    w->st.stop_ns = stop;
    stat_uint(w, XPLANE_STATS, XS_START, (uint64_t)(start > 0 ? start : 0));
    stat_uint(w, XPLANE_STATS, XS_STOP, (uint64_t)(stop > 0 ? stop : 0));
    stat_int(w, XPLANE_STATS, XS_REF_NODE, tui_model_ref(w->m));
    stat_str(w, XPLANE_STATS, XS_PRODUCER, "dptop " DP_VERSION);
    if (w->o.source)
        stat_str(w, XPLANE_STATS, XS_SOURCE, w->o.source);
    /* "1=n0/pid123 2=n1/pid456 ..." */
    size_t cap = 16 + 32 * w->nprocs, len = 0;
    char *procs = xmalloc(cap);
    procs[0] = '\0';
    for (size_t i = 0; i < w->nprocs; i++)
        len += (size_t)snprintf(procs + len, cap - len, "%s%zu=n%u/pid%" PRIu32, i ? " " : "",
                                i + 1, w->procs[i].node, w->procs[i].pid);
    stat_str(w, XPLANE_STATS, XS_SCOPE_PROCS, procs);
    free(procs);
    plane_end(w, true);
}

int tui_xplane_write(tui_model_t *model, const tui_scopes_t *scopes, FILE *out,
                     const struct tui_xplane_opts *opts, struct tui_xplane_stats *st, char *err)
{
    assert(model && out);
    struct xw w;
    memset(&w, 0, sizeof w);
    w.m = model;
    w.scopes = scopes;
    w.o.node = -1;
    if (opts)
        w.o = *opts;
    w.out = out;
    w.store = tui_model_store(model);
    w.nt = tui_store_ntracks(w.store);
    w.order = xcalloc(w.nt ? w.nt : 1, sizeof *w.order);
    for (size_t i = 0; i < w.nt; i++)
        w.order[i] = i;
    qsort_r(w.order, w.nt, sizeof *w.order, cmp_track, w.store);
    tui_pb_init(&w.pb);
    build_ordinals(&w);
    errno = 0;

    /* Per node (id order): the host plane, then one plane per GPU. */
    size_t ti = 0;
    for (size_t i = 0; i < tui_model_nnodes(model); i++) {
        const struct tui_node *n = tui_model_node(model, i);
        while (ti < w.nt && tui_store_track(w.store, w.order[ti])->key.node < n->id)
            ti++;
        size_t a = ti;
        while (ti < w.nt && tui_store_track(w.store, w.order[ti])->key.node == n->id)
            ti++;
        if (!node_wanted(&w, n->id))
            continue;
        size_t h = a; /* host tracks come first */
        while (h < ti && tui_store_track(w.store, w.order[h])->key.host)
            h++;
        corr_build(&w, h, ti);
        host_plane(&w, n, a, h);
        device_planes(&w, n, h, ti);
    }

    plane_begin(&w, PLANE_ID_SCOPE, SCOPE_PLANE_NAME);
    if (scopes)
        tui_scopes_foreach(scopes, tree_pair, &w);
    plane_end(&w, false);
    task_env_plane(&w);

    /* Hostnames: each node's host once, in node order. */
    for (size_t i = 0; i < tui_model_nnodes(model); i++) {
        const struct tui_node *n = tui_model_node(model, i);
        if (!node_wanted(&w, n->id) || n->host[0] == '\0')
            continue;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++) {
            const struct tui_node *o = tui_model_node(model, j);
            seen = node_wanted(&w, o->id) && strcmp(o->host, n->host) == 0;
        }
        if (!seen)
            tui_pb_str(&w.pb, XSPACE_HOSTNAMES, n->host);
    }
    for (size_t i = 0; w.o.warnings && w.o.warnings[i]; i++)
        tui_pb_str(&w.pb, XSPACE_WARNINGS, w.o.warnings[i]);
    char msg[200];
    if (w.st.raw_events) {
        snprintf(msg, sizeof msg,
                 "%" PRIu64 " events of unaligned nodes are on their raw clocks (time_flags 1)",
                 w.st.raw_events);
        tui_pb_str(&w.pb, XSPACE_WARNINGS, msg);
    }
    if (w.st.scope_unmapped) {
        snprintf(msg, sizeof msg, "%" PRIu64 " scope range ids of 2^40 or more were left out",
                 w.st.scope_unmapped);
        tui_pb_str(&w.pb, XSPACE_WARNINGS, msg);
    }
    if (scopes && tui_scopes_evicted(scopes)) {
        snprintf(msg, sizeof msg,
                 "%" PRIu64 " older scope pairs did not fit the pair budget of the export",
                 tui_scopes_evicted(scopes));
        tui_pb_str(&w.pb, XSPACE_WARNINGS, msg);
    }
    struct tui_summary sum;
    tui_model_summary(model, &sum);
    if (sum.evicted) {
        snprintf(msg, sizeof msg, "%" PRIu64 " older events did not fit the event budget",
                 sum.evicted);
        tui_pb_str(&w.pb, XSPACE_WARNINGS, msg);
    }
    flush(&w);

    int rc = BASE_OK;
    if (!w.io_error && (fflush(out) != 0 || ferror(out))) {
        w.io_error = true;
        w.io_errno = errno ? errno : EIO;
    }
    if (w.io_error)
        rc = base_err(err, "write failed: %s", strerror(w.io_errno));
    if (st)
        *st = w.st;
    md_clear(&w);
    free(w.md);
    free(w.md_names);
    free(w.owned);
    free(w.procs);
    free(w.gpus);
    free(w.corr_key);
    free(w.corr_dev);
    free(w.order);
    tui_pb_free(&w.pb);
    return rc;
}

int tui_xplane_write_file(tui_model_t *model, const tui_scopes_t *scopes, const char *path,
                          const struct tui_xplane_opts *opts, struct tui_xplane_stats *st,
                          char *err)
{
    assert(model && path);
    base_afile_t *out = base_afile_open(path, err);
    if (out == NULL)
        return BASE_ERR;
    char werr[BASE_ERRLEN];
    if (tui_xplane_write(model, scopes, base_afile_stream(out), opts, st, werr) != BASE_OK) {
        base_afile_abort(&out);
        return base_err(err, "%s: %s", path, werr);
    }
    return base_afile_commit(&out, err);
}

int tui_xplane_write_dir(tui_model_t *model, const tui_scopes_t *scopes, const char *dir,
                         const struct tui_xplane_opts *opts, struct tui_xplane_stats *st, char *err)
{
    assert(model && dir);
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return base_err(err, "%s: not a directory", dir);
    struct tui_xplane_opts o = {.node = -1};
    if (opts)
        o = *opts;
    struct tui_xplane_stats sum;
    memset(&sum, 0, sizeof sum);
    size_t dl = strlen(dir);
    for (size_t i = 0; i < tui_model_nnodes(model); i++) {
        const struct tui_node *n = tui_model_node(model, i);
        /* The host in a file name: no separators, no dot files. */
        char host[TUI_HOST_LEN];
        snprintf(host, sizeof host, "%s", n->host[0] ? n->host : "unknown");
        for (char *c = host; *c; c++)
            if (*c == '/' || (unsigned char)*c < 0x20 || (c == host && *c == '.'))
                *c = '_';
        char path[4096];
        if (snprintf(path, sizeof path, "%s%s%s-n%u.xplane.pb", dir,
                     dl && dir[dl - 1] == '/' ? "" : "/", host, n->id) >= (int)sizeof path)
            return base_err(err, "%s: path too long", dir);
        o.node = n->id;
        struct tui_xplane_stats one;
        if (tui_xplane_write_file(model, scopes, path, &o, &one, err) != BASE_OK)
            return BASE_ERR;
        sum.planes += one.planes;
        sum.lines += one.lines;
        sum.events += one.events;
        sum.raw_events += one.raw_events;
        sum.flagged += one.flagged;
        sum.skipped += one.skipped;
        sum.scope_pairs += one.scope_pairs;
        sum.scope_unmapped += one.scope_unmapped;
        sum.bytes += one.bytes;
        if (sum.start_ns == 0 || (one.start_ns && one.start_ns < sum.start_ns))
            sum.start_ns = one.start_ns;
        if (one.stop_ns > sum.stop_ns)
            sum.stop_ns = one.stop_ns;
    }
    if (st)
        *st = sum;
    return BASE_OK;
}
