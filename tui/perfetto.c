/*
 * Perfetto's native trace format (`.pftrace`, `.perfetto-trace`): a stream
 * of TracePacket messages (field 1 of Trace, so the file is one Trace) with
 * TrackEvents, written with the protobuf writer behind the XSpace export.
 * docs/PERFETTO.md has the layout and the proto release followed.
 *
 * One packet sequence.  Its first packet clears the incremental state, says
 * that the trace's clock is CLOCK_REALTIME (the global time base is the
 * reference node's CLOCK_REALTIME) and defines a sequence clock that counts
 * in deltas, so that each packet's timestamp is a few bytes: packets are
 * therefore written in time order, merged from every track (a heap of
 * streams).  Names and categories are interned on first use.
 *
 * Tracks: per node a process ("n3 host"), per (node, process) a process
 * with its host threads as thread tracks and its GPU streams as tracks;
 * pids and tids are numbered here (1, 2, ...) so that processes of
 * different hosts never merge, with the real ones in the names and labels.
 * A slice that partly overlaps an open one on its track (Perfetto would
 * drop it) goes to an overlap track beside it, counted.  Counters: each
 * node's offset and ± over time, GPU busy and power from its status
 * messages, its raw clock as a clock of its own in ClockSnapshots, and the
 * collectives' arrival skew.
 */
#include "tui/tui.h"
#include "tui/xplane_int.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Field numbers (perfetto/protos/perfetto/trace/...). */
enum {
    F_TRACE_PACKET = 1,
    /* TracePacket */
    TP_CLOCK_SNAPSHOT = 6,
    TP_TIMESTAMP = 8,
    TP_SEQ_ID = 10,
    TP_TRACK_EVENT = 11,
    TP_INTERNED = 12,
    TP_SEQ_FLAGS = 13,
    TP_TS_CLOCK = 58,
    TP_DEFAULTS = 59,
    TP_TRACK_DESC = 60,
    /* TracePacketDefaults */
    TPD_TS_CLOCK = 58,
    /* ClockSnapshot, .Clock */
    CS_CLOCKS = 1,
    CS_PRIMARY = 2,
    CL_ID = 1,
    CL_TS = 2,
    CL_INCREMENTAL = 3,
    /* TrackDescriptor */
    TD_UUID = 1,
    TD_NAME = 2,
    TD_PROCESS = 3,
    TD_THREAD = 4,
    TD_PARENT = 5,
    TD_COUNTER = 8,
    /* ProcessDescriptor */
    PD_PID = 1,
    PD_NAME = 6,
    PD_LABELS = 8,
    /* ThreadDescriptor */
    THD_PID = 1,
    THD_TID = 2,
    THD_NAME = 5,
    /* CounterDescriptor */
    CD_UNIT_NAME = 6,
    /* TrackEvent */
    TE_CATEGORY_IIDS = 3,
    TE_DEBUG = 4,
    TE_TYPE = 9,
    TE_NAME_IID = 10,
    TE_TRACK = 11,
    TE_DOUBLE_VALUE = 44,
    TE_FLOW_IDS = 47,
    TE_TERM_FLOW_IDS = 48,
    /* DebugAnnotation */
    DA_NAME_IID = 1,
    DA_INT = 4,
    DA_DOUBLE = 5,
    DA_UINT = 3,
    /* InternedData, EventCategory / EventName / DebugAnnotationName */
    ID_CATEGORIES = 1,
    ID_NAMES = 2,
    ID_DEBUG_NAMES = 3,
    IN_IID = 1,
    IN_NAME = 2,
};

enum { TYPE_BEGIN = 1, TYPE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
enum { SEQ_CLEARED = 1, SEQ_NEEDS = 2 };
#define CLOCK_REALTIME_ID 1u
#define CLOCK_SEQ_DELTA   64u  /* sequence-scoped, incremental */
#define CLOCK_NODE_BASE   128u /* + node id: a node's own probe clock */
#define SEQ_ID            1u
#define MAX_LEVELS        4 /* a track and up to 3 overlap tracks */
#define COUNTER_SAMPLES   1000

/* Debug annotation names, interned once at the start. */
enum { DN_BYTES = 1, DN_UNC, DN_FLAGS, DN_STEP, DN_N };
static const char *const debug_names[DN_N] = {NULL, "bytes", "unc_ns", "time_flags", "step"};

/* Categories: the event kinds, interned once at the start (iid = kind). */

struct stream;

struct pw {
    tui_model_t *model;
    FILE *out;
    struct tui_pb pb;
    bool failed;
    int64_t last_ts; /* the sequence clock's value after the last packet */
    /* interned names: open addressing on (hash, string) */
    struct iname {
        uint64_t hash;
        char *str; /* NULL: empty */
        uint64_t iid;
    } * names;
    size_t nnames, capnames;
    uint64_t next_iid;
    /* flows: (node, pid, corr) present at both ends */
    uint64_t *flow_api, *flow_dev;
    size_t nflow_api, nflow_dev, capflow_api, capflow_dev;
    /* streams and their heap */
    struct stream **heap;
    size_t nheap;
    uint64_t next_uuid;
    struct tui_pftrace_stats st;
};

/* ---- packets --------------------------------------------------------------- */

static void packet_begin(struct pw *w)
{
    tui_pb_reset(&w->pb);
    tui_pb_begin(&w->pb, F_TRACE_PACKET);
}

static void packet_end(struct pw *w)
{
    tui_pb_uint(&w->pb, TP_SEQ_ID, SEQ_ID);
    tui_pb_end(&w->pb);
    if (!w->failed && fwrite(w->pb.buf, 1, w->pb.len, w->out) != w->pb.len)
        w->failed = true;
    w->st.bytes += w->pb.len;
    w->st.packets++;
}

/* The timestamp of a packet in the sequence's delta clock (time order). */
static void packet_ts(struct pw *w, int64_t t)
{
    if (t < w->last_ts)
        t = w->last_ts; /* not reached: streams are merged in order */
    tui_pb_uint(&w->pb, TP_TIMESTAMP, (uint64_t)(t - w->last_ts));
    w->last_ts = t;
}

static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The iid of a name; *fresh when it must go into this packet's InternedData. */
static uint64_t name_iid(struct pw *w, const char *s, bool *fresh)
{
    if (w->nnames * 2 >= w->capnames) {
        size_t n = w->capnames ? w->capnames * 2 : 4096;
        struct iname *t = xcalloc(n, sizeof *t);
        for (size_t i = 0; i < w->capnames; i++)
            if (w->names[i].str) {
                size_t j = w->names[i].hash & (n - 1);
                while (t[j].str)
                    j = (j + 1) & (n - 1);
                t[j] = w->names[i];
            }
        free(w->names);
        w->names = t;
        w->capnames = n;
    }
    uint64_t h = str_hash(s);
    size_t j = h & (w->capnames - 1);
    for (; w->names[j].str; j = (j + 1) & (w->capnames - 1))
        if (w->names[j].hash == h && strcmp(w->names[j].str, s) == 0) {
            *fresh = false;
            return w->names[j].iid;
        }
    w->names[j] = (struct iname){h, xstrdup(s), w->next_iid++};
    w->nnames++;
    *fresh = true;
    return w->names[j].iid;
}

/* One entry of the packet's InternedData, which the caller opens once: a
 * reader keeps only the last of several (the field is not repeated). */
static void interned_entry(struct pw *w, uint32_t field, uint64_t iid, const char *s)
{
    tui_pb_begin(&w->pb, field);
    tui_pb_uint(&w->pb, IN_IID, iid);
    tui_pb_str(&w->pb, IN_NAME, s);
    tui_pb_end(&w->pb);
}

/* ---- flows --------------------------------------------------------------------- */

static uint64_t flow_key(uint16_t node, uint32_t pid, uint32_t corr)
{
    return ((uint64_t)node << 48) ^ ((uint64_t)pid << 20) ^ corr ^ ((uint64_t)corr << 40);
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

static bool has_key(const uint64_t *v, size_t n, uint64_t k)
{
    return n && bsearch(&k, v, n, sizeof *v, cmp_u64) != NULL;
}

/* Keys of every API call and every GPU operation with a correlation id; a
 * flow is drawn where both are held. */
static void flows_collect(struct pw *w)
{
    tui_store_t *st = tui_model_store(w->model);
    for (size_t t = 0; t < tui_store_ntracks(st); t++) {
        const struct tui_track_info *ti = tui_store_track(st, t);
        for (size_t k = 0; k < ti->count; k++) {
            const tui_ev_t *e = tui_store_ev(st, t, k);
            if (e->corr_id == 0 || (ti->key.host && e->kind != GPU_EV_API))
                continue;
            uint64_t **v = ti->key.host ? &w->flow_api : &w->flow_dev;
            size_t *n = ti->key.host ? &w->nflow_api : &w->nflow_dev;
            size_t *cap = ti->key.host ? &w->capflow_api : &w->capflow_dev;
            if (*n == *cap) {
                *cap = *cap ? *cap * 2 : 1024;
                *v = xrealloc(*v, *cap * sizeof **v);
            }
            (*v)[(*n)++] = flow_key(ti->key.node, ti->key.pid, e->corr_id);
        }
    }
    if (w->nflow_api)
        qsort(w->flow_api, w->nflow_api, sizeof *w->flow_api, cmp_u64);
    if (w->nflow_dev)
        qsort(w->flow_dev, w->nflow_dev, sizeof *w->flow_dev, cmp_u64);
}

/* ---- streams: what each track has to say, in time order ----------------------- */

enum stream_kind { S_TRACK, S_COUNTER };

struct pending {
    size_t k; /* event index in its store track */
    int64_t g0, g1;
    unsigned flags;
};

struct stream {
    enum stream_kind kind;
    size_t heap_pos; /* its place in the heap */
    int64_t next_t;  /* INT64_MAX: done */
    uint64_t uuid;
    /* S_TRACK: a store track at a level (0: the track; 1..: its overlap tracks) */
    size_t track;
    int level;
    struct stream *over;   /* the next level, made when first needed */
    size_t k;              /* level 0: next event of the store track */
    struct pending *queue; /* levels > 0: events handed down, in start order */
    size_t qhead, qlen, qcap;
    struct pending head; /* the next event to begin (valid: have_head) */
    bool have_head;
    int64_t *stack; /* ends of open slices */
    size_t depth, capdepth;
    uint64_t parent_uuid;
    char name[96];
    bool described;
    /* S_COUNTER */
    const int64_t *ct;
    const double *cv;
    size_t cn, ci;
};

static void heap_swap(struct pw *w, size_t a, size_t b)
{
    struct stream *t = w->heap[a];
    w->heap[a] = w->heap[b];
    w->heap[b] = t;
    w->heap[a]->heap_pos = a;
    w->heap[b]->heap_pos = b;
}

static void heap_down(struct pw *w, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < w->nheap && w->heap[l]->next_t < w->heap[m]->next_t)
            m = l;
        if (r < w->nheap && w->heap[r]->next_t < w->heap[m]->next_t)
            m = r;
        if (m == i)
            return;
        heap_swap(w, i, m);
        i = m;
    }
}

static void heap_up(struct pw *w, size_t i)
{
    while (i > 0 && w->heap[(i - 1) / 2]->next_t > w->heap[i]->next_t) {
        heap_swap(w, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_push(struct pw *w, struct stream *s)
{
    w->heap = xrealloc(w->heap, (w->nheap + 1) * sizeof *w->heap);
    s->heap_pos = w->nheap;
    w->heap[w->nheap++] = s;
    heap_up(w, w->nheap - 1);
}

/* The next event a track stream will begin: level 0 reads its store track
 * (events that cannot be placed in time are skipped, counted). */
static void stream_fill(struct pw *w, struct stream *s)
{
    if (s->have_head)
        return;
    if (s->level > 0) {
        if (s->qlen) {
            s->head = s->queue[s->qhead];
            s->qhead = (s->qhead + 1) % s->qcap;
            s->qlen--;
            s->have_head = true;
        }
        return;
    }
    tui_store_t *st = tui_model_store(w->model);
    const struct tui_track_info *ti = tui_store_track(st, s->track);
    while (s->k < ti->count) {
        const tui_ev_t *e = tui_store_ev(st, s->track, s->k);
        struct pending p = {.k = s->k++};
        unsigned f1 = 0;
        if (tui_model_to_axis(w->model, ti->key.node, e->start, TUI_CLOCK_ALIGNED, &p.g0,
                              &p.flags) != BASE_OK ||
            tui_model_to_axis(w->model, ti->key.node, e->end, TUI_CLOCK_ALIGNED, &p.g1, &f1) !=
                BASE_OK) {
            w->st.skipped++;
            continue;
        }
        p.flags |= f1;
        if (p.g1 < p.g0)
            p.g1 = p.g0;
        s->head = p;
        s->have_head = true;
        return;
    }
}

static void stream_time(struct pw *w, struct stream *s)
{
    if (s->kind == S_COUNTER) {
        s->next_t = s->ci < s->cn ? s->ct[s->ci] : INT64_MAX;
        return;
    }
    stream_fill(w, s);
    int64_t t = INT64_MAX;
    if (s->depth)
        t = s->stack[s->depth - 1];
    if (s->have_head && s->head.g0 < t)
        t = s->head.g0;
    s->next_t = t;
}

static struct stream *stream_new(struct pw *w, enum stream_kind kind)
{
    struct stream *s = xcalloc(1, sizeof *s);
    s->kind = kind;
    s->uuid = w->next_uuid++;
    return s;
}

static void stream_free(struct stream *s)
{
    while (s) {
        struct stream *n = s->over;
        free(s->queue);
        free(s->stack);
        free(s);
        s = n;
    }
}

/* ---- descriptors ----------------------------------------------------------------- */

struct proc {
    uint16_t node;
    uint32_t pid; /* 0: the node's own process (its counters) */
    uint64_t uuid;
    int32_t ppid; /* numbered here */
    int32_t next_tid;
};

static void describe_process(struct pw *w, const struct proc *p)
{
    const struct tui_node *n = tui_model_find(w->model, p->node);
    const char *host = n && n->host[0] ? n->host : "?";
    bool aligned = tui_model_aligned(w->model, p->node);
    char name[200], label[120];
    if (p->pid == 0)
        snprintf(name, sizeof name, "n%u %s%s", p->node, host,
                 aligned ? "" : " [UNALIGNED: raw clock]");
    else if (p->pid & 0x80000000u)
        snprintf(name, sizeof name, "n%u %s imported trace %" PRIu32 "%s", p->node, host,
                 p->pid & 0x7fffffffu, aligned ? "" : " [UNALIGNED: raw clock]");
    else
        snprintf(name, sizeof name, "n%u %s pid %" PRIu32 "%s", p->node, host, p->pid,
                 aligned ? "" : " [UNALIGNED: raw clock]");
    packet_begin(w);
    tui_pb_begin(&w->pb, TP_TRACK_DESC);
    tui_pb_uint(&w->pb, TD_UUID, p->uuid);
    tui_pb_begin(&w->pb, TD_PROCESS);
    tui_pb_int(&w->pb, PD_PID, p->ppid);
    tui_pb_str(&w->pb, PD_NAME, name);
    snprintf(label, sizeof label, "host=%s", host);
    tui_pb_str(&w->pb, PD_LABELS, label);
    snprintf(label, sizeof label, "node=%u", p->node);
    tui_pb_str(&w->pb, PD_LABELS, label);
    if (p->pid) {
        snprintf(label, sizeof label, "pid=%" PRIu32, p->pid);
        tui_pb_str(&w->pb, PD_LABELS, label);
    }
    tui_pb_end(&w->pb);
    tui_pb_end(&w->pb);
    packet_end(w);
    w->st.tracks++;
}

static void describe_track(struct pw *w, struct stream *s, struct proc *p, bool host_thread)
{
    packet_begin(w);
    tui_pb_begin(&w->pb, TP_TRACK_DESC);
    tui_pb_uint(&w->pb, TD_UUID, s->uuid);
    tui_pb_uint(&w->pb, TD_PARENT, p->uuid);
    if (host_thread && s->level == 0) {
        tui_pb_begin(&w->pb, TD_THREAD);
        tui_pb_int(&w->pb, THD_PID, p->ppid);
        tui_pb_int(&w->pb, THD_TID, p->next_tid++);
        tui_pb_str(&w->pb, THD_NAME, s->name);
        tui_pb_end(&w->pb);
    } else {
        tui_pb_str(&w->pb, TD_NAME, s->name);
    }
    tui_pb_end(&w->pb);
    packet_end(w);
    s->described = true;
    w->st.tracks++;
}

static void describe_counter(struct pw *w, struct stream *s, uint64_t parent, const char *name,
                             const char *unit)
{
    packet_begin(w);
    tui_pb_begin(&w->pb, TP_TRACK_DESC);
    tui_pb_uint(&w->pb, TD_UUID, s->uuid);
    if (parent)
        tui_pb_uint(&w->pb, TD_PARENT, parent);
    tui_pb_str(&w->pb, TD_NAME, name);
    tui_pb_begin(&w->pb, TD_COUNTER);
    tui_pb_str(&w->pb, CD_UNIT_NAME, unit);
    tui_pb_end(&w->pb);
    tui_pb_end(&w->pb);
    packet_end(w);
    w->st.tracks++;
}

/* A counter track of n points (t, v) under parent (0: none), added to the list. */
static void add_counter(struct pw *w, struct stream **list, size_t *n, uint64_t parent,
                        const char *name, const char *unit, const int64_t *t, const double *v,
                        size_t npoints)
{
    struct stream *s = stream_new(w, S_COUNTER);
    describe_counter(w, s, parent, name, unit);
    s->ct = t;
    s->cv = v;
    s->cn = npoints;
    list[(*n)++] = s;
}

/* ---- events ------------------------------------------------------------------------ */

static void debug_int(struct pw *w, int which, int64_t v)
{
    tui_pb_begin(&w->pb, TE_DEBUG);
    tui_pb_uint(&w->pb, DA_NAME_IID, (uint64_t)which);
    tui_pb_int(&w->pb, DA_INT, v);
    tui_pb_end(&w->pb);
}

static void emit_begin(struct pw *w, struct stream *s, const struct pending *p)
{
    tui_store_t *st = tui_model_store(w->model);
    const struct tui_track_info *ti = tui_store_track(st, s->track);
    const tui_ev_t *e = tui_store_ev(st, s->track, p->k);
    const char *name = tui_model_name(w->model, ti->key.node, ti->key.pid, e->name_id);
    char fallback[48];
    if (name == NULL) {
        snprintf(fallback, sizeof fallback, "%s #%" PRIu32, gpu_event_kind_name(e->kind),
                 e->name_id);
        name = fallback;
    }
    bool fresh;
    uint64_t iid = name_iid(w, name, &fresh);
    packet_begin(w);
    packet_ts(w, p->g0);
    tui_pb_uint(&w->pb, TP_SEQ_FLAGS, SEQ_NEEDS);
    if (fresh) {
        tui_pb_begin(&w->pb, TP_INTERNED);
        interned_entry(w, ID_NAMES, iid, name);
        tui_pb_end(&w->pb);
    }
    tui_pb_begin(&w->pb, TP_TRACK_EVENT);
    tui_pb_uint(&w->pb, TE_TYPE, e->kind == GPU_EV_INSTANT ? TYPE_INSTANT : TYPE_BEGIN);
    tui_pb_uint(&w->pb, TE_TRACK, s->uuid);
    tui_pb_uint(&w->pb, TE_CATEGORY_IIDS, e->kind);
    tui_pb_uint(&w->pb, TE_NAME_IID, iid);
    if (e->corr_id) {
        uint64_t key = flow_key(ti->key.node, ti->key.pid, e->corr_id);
        bool api = ti->key.host && e->kind == GPU_EV_API;
        if (api ? has_key(w->flow_dev, w->nflow_dev, key)
                : !ti->key.host && has_key(w->flow_api, w->nflow_api, key)) {
            uint64_t id = (key * 0x9e3779b97f4a7c15ull) | 1;
            tui_pb_fixed64(&w->pb, api ? TE_FLOW_IDS : TE_TERM_FLOW_IDS, id);
            w->st.flows += api;
        }
    }
    if (e->kind == GPU_EV_MEMCPY || e->kind == GPU_EV_MEMSET)
        debug_int(w, DN_BYTES, (int64_t)e->u.x.bytes);
    if (e->kind == GPU_EV_STEP)
        debug_int(w, DN_STEP, (int64_t)e->u.x.step);
    if (p->flags & (TUI_T_RAW | TUI_T_NOSNAP | TUI_T_EXTRAP | TUI_T_GAP))
        debug_int(w, DN_FLAGS, p->flags);
    tui_pb_end(&w->pb);
    packet_end(w);
    if (p->flags & TUI_T_RAW)
        w->st.raw_events++;
    if (e->kind == GPU_EV_INSTANT)
        w->st.instants++;
    else
        w->st.slices++;
}

static void emit_end(struct pw *w, struct stream *s, int64_t t)
{
    packet_begin(w);
    packet_ts(w, t);
    tui_pb_begin(&w->pb, TP_TRACK_EVENT);
    tui_pb_uint(&w->pb, TE_TYPE, TYPE_END);
    tui_pb_uint(&w->pb, TE_TRACK, s->uuid);
    tui_pb_end(&w->pb);
    packet_end(w);
}

static void emit_counter(struct pw *w, struct stream *s)
{
    packet_begin(w);
    packet_ts(w, s->ct[s->ci]);
    tui_pb_begin(&w->pb, TP_TRACK_EVENT);
    tui_pb_uint(&w->pb, TE_TYPE, TYPE_COUNTER);
    tui_pb_uint(&w->pb, TE_TRACK, s->uuid);
    tui_pb_double(&w->pb, TE_DOUBLE_VALUE, s->cv[s->ci]);
    tui_pb_end(&w->pb);
    packet_end(w);
    s->ci++;
    w->st.counters++;
}

/* Hand an event that partly overlaps an open slice to the next level. */
static bool hand_down(struct pw *w, struct stream *s, const struct pending *p, struct proc *proc)
{
    if (s->level + 1 >= MAX_LEVELS) {
        w->st.overlaps_dropped++;
        return false;
    }
    struct stream *o = s->over;
    if (o == NULL) {
        o = s->over = stream_new(w, S_TRACK);
        o->track = s->track;
        o->level = s->level + 1;
        snprintf(o->name, sizeof o->name, "%.70s (overlaps %d)", s->name, o->level);
        describe_track(w, o, proc, false);
        o->next_t = INT64_MAX;
        heap_push(w, o);
    }
    if (o->qlen == o->qcap) {
        size_t n = o->qcap ? o->qcap * 2 : 16;
        struct pending *q = xcalloc(n, sizeof *q);
        for (size_t i = 0; i < o->qlen; i++)
            q[i] = o->queue[(o->qhead + i) % o->qcap];
        free(o->queue);
        o->queue = q;
        o->qhead = 0;
        o->qcap = n;
    }
    o->queue[(o->qhead + o->qlen++) % o->qcap] = *p;
    w->st.overlaps_split++;
    /* Its time may now be earlier: sift it up from where it is. */
    stream_time(w, o);
    heap_up(w, o->heap_pos);
    return true;
}

/* One step of the stream at the heap's top: an end, a begin or a counter point. */
static void stream_step(struct pw *w, struct stream *s, struct proc *proc)
{
    if (s->kind == S_COUNTER) {
        emit_counter(w, s);
        return;
    }
    if (s->depth && (!s->have_head || s->stack[s->depth - 1] <= s->head.g0)) {
        emit_end(w, s, s->stack[--s->depth]);
        return;
    }
    struct pending p = s->head;
    s->have_head = false;
    tui_store_t *st = tui_model_store(w->model);
    const tui_ev_t *e = tui_store_ev(st, s->track, p.k);
    if (s->depth && p.g1 > s->stack[s->depth - 1] && e->kind != GPU_EV_INSTANT) {
        hand_down(w, s, &p, proc);
        return;
    }
    emit_begin(w, s, &p);
    if (e->kind == GPU_EV_INSTANT)
        return;
    if (s->depth == s->capdepth) {
        s->capdepth = s->capdepth ? s->capdepth * 2 : 16;
        s->stack = xrealloc(s->stack, s->capdepth * sizeof *s->stack);
    }
    s->stack[s->depth++] = p.g1;
}

/* ---- the whole trace ---------------------------------------------------------------- */

static int cmp_track_key(const void *pa, const void *pb, void *arg)
{
    const tui_store_t *s = arg;
    const struct tui_track_key *a = &tui_store_track(s, *(const size_t *)pa)->key;
    const struct tui_track_key *b = &tui_store_track(s, *(const size_t *)pb)->key;
    if (a->node != b->node)
        return a->node < b->node ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->host != b->host)
        return a->host ? -1 : 1;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

struct coll_points {
    int64_t *t;
    double *v;
    size_t n, cap;
};

static void coll_point(void *ctx, const tui_coll_t *c, const struct tui_coll_inst *in)
{
    (void)c;
    struct coll_points *cp = ctx;
    if (in->verdict != TUI_COLL_LATE && in->verdict != TUI_COLL_WITHIN)
        return;
    if (cp->n == cp->cap) {
        cp->cap = cp->cap ? cp->cap * 2 : 256;
        cp->t = xrealloc(cp->t, cp->cap * sizeof *cp->t);
        cp->v = xrealloc(cp->v, cp->cap * sizeof *cp->v);
    }
    cp->t[cp->n] = in->first_ns;
    cp->v[cp->n++] = (double)in->skew_ns;
}

/* A node's offset and ± sampled over [t0, t1] of global time, through the
 * maps the model holds; its raw clock's readings at the same instants. */
struct node_samples {
    uint16_t node;
    int64_t *t, *raw;
    double *off, *unc;
    size_t n;
    /* device readings of its status messages, on the global time base */
    int64_t *bt, *pt;
    double *busy, *power;
    size_t nb, np;
};

static void sample_gpus(tui_model_t *m, uint16_t node, struct node_samples *ns)
{
    struct tui_gpu_reading r;
    size_t n = tui_model_gpu_history(m, node, 0, &r);
    if (n == 0)
        return;
    ns->bt = xcalloc(n, sizeof *ns->bt);
    ns->pt = xcalloc(n, sizeof *ns->pt);
    ns->busy = xcalloc(n, sizeof *ns->busy);
    ns->power = xcalloc(n, sizeof *ns->power);
    int64_t lastb = INT64_MIN, lastp = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        tui_model_gpu_history(m, node, i, &r);
        int64_t g;
        double unc;
        unsigned fl;
        if (tui_model_map(m, node, CLOCK_DOMAIN_PROBE, r.t_ns, &g, &unc, &fl) != BASE_OK)
            continue;
        /* A counter's points go in time order (a map that moved: keep the first). */
        if (isfinite(r.busy_pct) && g > lastb) {
            ns->bt[ns->nb] = lastb = g;
            ns->busy[ns->nb++] = r.busy_pct;
        }
        if (isfinite(r.power_w) && g > lastp) {
            ns->pt[ns->np] = lastp = g;
            ns->power[ns->np++] = r.power_w;
        }
    }
}

static void sample_node(tui_model_t *m, uint16_t node, int64_t t0, int64_t t1,
                        struct node_samples *ns)
{
    ns->node = node;
    ns->t = xcalloc(COUNTER_SAMPLES, sizeof *ns->t);
    ns->raw = xcalloc(COUNTER_SAMPLES, sizeof *ns->raw);
    ns->off = xcalloc(COUNTER_SAMPLES, sizeof *ns->off);
    ns->unc = xcalloc(COUNTER_SAMPLES, sizeof *ns->unc);
    int64_t step = (t1 - t0) / (COUNTER_SAMPLES - 1);
    step = step < 100000000 ? 100000000 : step; /* at most ten a second */
    for (int64_t g = t0; g <= t1 && ns->n < COUNTER_SAMPLES; g += step) {
        double o = tui_model_offset_at(m, node, g);
        if (!isfinite(o))
            continue;
        int64_t x = g - (int64_t)llround(o), gx;
        double unc;
        unsigned fl;
        if (tui_model_map(m, node, CLOCK_DOMAIN_PROBE, x, &gx, &unc, &fl) != BASE_OK ||
            (fl & TUI_T_RAW))
            continue;
        ns->t[ns->n] = gx;
        ns->raw[ns->n] = x;
        ns->off[ns->n] = (double)(gx - x);
        ns->unc[ns->n++] = isfinite(unc) ? unc : 0;
    }
}

int tui_pftrace_write(tui_model_t *model, FILE *out, const struct tui_pftrace_opts *opts,
                      struct tui_pftrace_stats *st, char *err)
{
    assert(model && out);
    (void)opts;
    struct pw w = {.model = model, .out = out, .next_iid = 1, .next_uuid = 1};
    tui_pb_init(&w.pb);
    tui_store_t *store = tui_model_store(model);
    size_t nt = tui_store_ntracks(store);
    size_t *order = xcalloc(nt ? nt : 1, sizeof *order);
    for (size_t i = 0; i < nt; i++)
        order[i] = i;
    qsort_r(order, nt, sizeof *order, cmp_track_key, store);

    /* The span, for the counters' samples; the start, for the clocks. */
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    for (size_t i = 0; i < nt; i++) {
        const struct tui_track_info *ti = tui_store_track(store, i);
        int64_t g;
        unsigned fl;
        if (ti->count &&
            tui_model_to_axis(model, ti->key.node, tui_store_ev(store, i, 0)->start,
                              TUI_CLOCK_ALIGNED, &g, &fl) == BASE_OK &&
            g < t0)
            t0 = g;
        if (ti->count &&
            tui_model_to_axis(model, ti->key.node, ti->last_end, TUI_CLOCK_ALIGNED, &g, &fl) ==
                BASE_OK &&
            g > t1)
            t1 = g;
    }
    if (t0 == INT64_MAX)
        t0 = t1 = 0;
    w.last_ts = t0;

    /* The sequence's first packet: its state, the clocks, the defaults and
     * the fixed interned names (categories: the kinds; debug names). */
    packet_begin(&w);
    tui_pb_uint(&w.pb, TP_SEQ_FLAGS, SEQ_CLEARED);
    tui_pb_begin(&w.pb, TP_CLOCK_SNAPSHOT);
    tui_pb_begin(&w.pb, CS_CLOCKS);
    tui_pb_uint(&w.pb, CL_ID, CLOCK_REALTIME_ID);
    tui_pb_uint(&w.pb, CL_TS, (uint64_t)t0);
    tui_pb_end(&w.pb);
    tui_pb_begin(&w.pb, CS_CLOCKS);
    tui_pb_uint(&w.pb, CL_ID, CLOCK_SEQ_DELTA);
    tui_pb_uint(&w.pb, CL_TS, (uint64_t)t0);
    tui_pb_uint(&w.pb, CL_INCREMENTAL, 1);
    tui_pb_end(&w.pb);
    tui_pb_uint(&w.pb, CS_PRIMARY, CLOCK_REALTIME_ID);
    tui_pb_end(&w.pb);
    tui_pb_begin(&w.pb, TP_DEFAULTS);
    tui_pb_uint(&w.pb, TPD_TS_CLOCK, CLOCK_SEQ_DELTA);
    tui_pb_end(&w.pb);
    tui_pb_begin(&w.pb, TP_INTERNED);
    for (int k = 1; k < GPU_EV_NKINDS; k++)
        interned_entry(&w, ID_CATEGORIES, (uint64_t)k, gpu_event_kind_name((enum gpu_event_kind)k));
    for (int k = 1; k < DN_N; k++)
        interned_entry(&w, ID_DEBUG_NAMES, (uint64_t)k, debug_names[k]);
    tui_pb_end(&w.pb);
    packet_end(&w);

    /* Processes and tracks, described before any event. */
    struct proc *procs = xcalloc(2 * nt + tui_model_nnodes(model) + 1, sizeof *procs);
    size_t nprocs = 0;
    int32_t next_ppid = 1;
    struct stream **streams = xcalloc(nt ? nt : 1, sizeof *streams);
    size_t *proc_of = xcalloc(nt ? nt : 1, sizeof *proc_of);
    for (size_t oi = 0; oi < nt; oi++) {
        size_t ti = order[oi];
        const struct tui_track_info *info = tui_store_track(store, ti);
        const struct tui_track_key *k = &info->key;
        if (info->count == 0)
            continue;
        if (nprocs == 0 || procs[nprocs - 1].node != k->node || procs[nprocs - 1].pid != k->pid) {
            procs[nprocs] = (struct proc){k->node, k->pid, w.next_uuid++, next_ppid++, 1};
            describe_process(&w, &procs[nprocs]);
            nprocs++;
        }
        struct stream *s = stream_new(&w, S_TRACK);
        s->track = ti;
        if (k->host)
            snprintf(s->name, sizeof s->name, "host thread %" PRIu32, k->id);
        else
            snprintf(s->name, sizeof s->name, "gpu%u stream %" PRIu32, k->device, k->id);
        describe_track(&w, s, &procs[nprocs - 1], k->host);
        streams[ti] = s;
        proc_of[ti] = nprocs - 1;
        stream_time(&w, s);
        heap_push(&w, s);
    }

    /* Counters: each node's offset and ± (under a process of its own), its
     * raw clock in the clock snapshots; the collectives' arrival skew. */
    size_t nn = tui_model_nnodes(model);
    struct node_samples *samples = xcalloc(nn + 1, sizeof *samples);
    struct stream **counters = xcalloc(4 * nn + 2, sizeof *counters);
    size_t ncounters = 0;
    for (size_t i = 0; i < nn; i++) {
        const struct tui_node *n = tui_model_node(model, i);
        sample_node(model, n->id, t0, t1, &samples[i]);
        sample_gpus(model, n->id, &samples[i]);
        if (samples[i].n == 0 && samples[i].nb == 0 && samples[i].np == 0)
            continue;
        struct proc *p = &procs[nprocs];
        *p = (struct proc){n->id, 0, w.next_uuid++, next_ppid++, 1};
        describe_process(&w, p);
        nprocs++;
        const struct node_samples *ns = &samples[i];
        char name[80];
        if (ns->n) {
            snprintf(name, sizeof name, "n%u clock offset (global − own)", n->id);
            add_counter(&w, counters, &ncounters, p->uuid, name, "ns", ns->t, ns->off, ns->n);
            snprintf(name, sizeof name, "n%u clock ±uncertainty", n->id);
            add_counter(&w, counters, &ncounters, p->uuid, name, "ns", ns->t, ns->unc, ns->n);
        }
        if (ns->nb) {
            snprintf(name, sizeof name, "n%u GPU busy", n->id);
            add_counter(&w, counters, &ncounters, p->uuid, name, "%", ns->bt, ns->busy, ns->nb);
        }
        if (ns->np) {
            snprintf(name, sizeof name, "n%u GPU power", n->id);
            add_counter(&w, counters, &ncounters, p->uuid, name, "W", ns->pt, ns->power, ns->np);
        }
    }
    struct coll_points cp = {0};
    tui_coll_t *coll = tui_coll_new(1);
    tui_coll_set_sink(coll, coll_point, &cp);
    tui_coll_update(coll, model, true);
    tui_coll_destroy(&coll);
    if (cp.n)
        add_counter(&w, counters, &ncounters, 0, "collectives: arrival skew", "ns", cp.t, cp.v,
                    cp.n);
    for (size_t i = 0; i < ncounters; i++) {
        stream_time(&w, counters[i]);
        heap_push(&w, counters[i]);
    }
    /* Each node's own clock against the trace's, where it was sampled. */
    for (size_t i = 0; i < nn; i++)
        for (size_t j = 0; j < samples[i].n; j++) {
            packet_begin(&w);
            tui_pb_begin(&w.pb, TP_CLOCK_SNAPSHOT);
            tui_pb_begin(&w.pb, CS_CLOCKS);
            tui_pb_uint(&w.pb, CL_ID, CLOCK_REALTIME_ID);
            tui_pb_uint(&w.pb, CL_TS, (uint64_t)samples[i].t[j]);
            tui_pb_end(&w.pb);
            tui_pb_begin(&w.pb, CS_CLOCKS);
            tui_pb_uint(&w.pb, CL_ID, CLOCK_NODE_BASE + samples[i].node);
            tui_pb_uint(&w.pb, CL_TS, (uint64_t)samples[i].raw[j]);
            tui_pb_end(&w.pb);
            tui_pb_end(&w.pb);
            packet_end(&w);
            w.st.clock_snapshots++;
        }

    flows_collect(&w);
    /* Everything in time order. */
    while (w.nheap && !w.failed) {
        struct stream *s = w.heap[0];
        if (s->next_t == INT64_MAX)
            break;
        struct proc *p = s->kind == S_TRACK ? &procs[proc_of[s->track]] : NULL;
        stream_step(&w, s, p);
        stream_time(&w, s);
        heap_down(&w, 0);
    }

    int rc = BASE_OK;
    if (w.failed || fflush(out) != 0 || ferror(out))
        rc = base_err(err, "write failed: %s", strerror(errno ? errno : EIO));
    if (st)
        *st = w.st;
    for (size_t i = 0; i < nt; i++)
        stream_free(streams[i]);
    for (size_t i = 0; i < ncounters; i++)
        stream_free(counters[i]);
    for (size_t i = 0; i < nn; i++) {
        free(samples[i].t);
        free(samples[i].raw);
        free(samples[i].off);
        free(samples[i].unc);
        free(samples[i].bt);
        free(samples[i].pt);
        free(samples[i].busy);
        free(samples[i].power);
    }
    free(samples);
    free(counters);
    free(cp.t);
    free(cp.v);
    free(streams);
    free(proc_of);
    free(procs);
    free(order);
    free(w.heap);
    for (size_t i = 0; i < w.capnames; i++)
        free(w.names[i].str);
    free(w.names);
    free(w.flow_api);
    free(w.flow_dev);
    tui_pb_free(&w.pb);
    return rc;
}

int tui_pftrace_write_file(tui_model_t *model, const char *path,
                           const struct tui_pftrace_opts *opts, struct tui_pftrace_stats *st,
                           char *err)
{
    assert(model && path);
    base_afile_t *out = base_afile_open(path, err);
    if (out == NULL)
        return BASE_ERR;
    char werr[BASE_ERRLEN];
    if (tui_pftrace_write(model, base_afile_stream(out), opts, st, werr) != BASE_OK) {
        base_afile_abort(&out);
        return base_err(err, "%s: %s", path, werr);
    }
    return base_afile_commit(&out, err);
}
