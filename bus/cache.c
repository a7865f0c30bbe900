/*
 * The hub's late-joiner cache.  Entries are keyed by kind, topic node and
 * the schema's key fields; a LATEST entry holds one message, an APPEND entry
 * every message of its key (incremental name tables, scope trees) within a
 * per-key budget.  Entries sit on a list ordered by their last update: a
 * state reply walks it oldest first.  The total budget trims the entry of
 * the most messages first, oldest message first, and evicts from the
 * list's head only when every entry holds one: an incremental table that
 * grows all the time (a workload's scope trees) would otherwise push out
 * the tables that stopped changing long ago (its name tables), and late
 * joiners would see every event unnamed.  Every eviction is counted and
 * reported in state_end.
 *
 * Anyone can publish, under any topic node: a flood of per-node keys
 * (200,000 statuses under 60,000 ids) pushed the master's plan out, and a
 * late joiner had no plan.  So once the master's node table has been seen
 * (a `nodes` message of the hub's own node), entries of topic nodes not in
 * it are foreign: they sit on a list of their own, are evicted first, and
 * hold at most a quarter of the budget.  The master's single keys (plan,
 * nodes, solve, relays) are never evicted, only replaced.
 */
#include "bus/bus_int.h"

#include <stdlib.h>
#include <string.h>

#define MSG_OVERHEAD 128 /* bookkeeping bytes charged per cached message */

struct entry {
    char *key;
    int node;  /* the topic node of its messages */
    bool kept; /* one of the master's single keys: never evicted */
    bus_msg_t **msgs;
    size_t n, cap, bytes;
    size_t app_ix; /* its place in the cache's APPEND entries; SIZE_MAX: a LATEST one */
    struct entry *prev, *next;
    bool foreign;                /* its node is not in the master's table */
    struct entry *fprev, *fnext; /* on the foreign list, in update order */
};

struct bus_cache {
    struct bus_cache_opts o;
    bus_map_t *map;
    struct entry *head, *tail;
    struct entry **app; /* the APPEND entries, the only ones that hold more than one message */
    size_t napp, capapp;
    size_t msgs, bytes;
    uint64_t evicted;
    bool have_table;                           /* the master's node table was seen */
    uint8_t table[(BUS_NODE_MAX + 1 + 7) / 8]; /* its node ids */
    struct entry *fhead, *ftail;
    size_t fmsgs, fbytes; /* held by foreign entries */
    uint64_t foreign_evicted;
};

bus_cache_t *bus_cache_new(const struct bus_cache_opts *opts)
{
    bus_cache_t *self = xcalloc(1, sizeof *self);
    self->o = *opts;
    self->map = bus_map_new();
    return self;
}

static void entry_free(struct entry *e)
{
    for (size_t i = 0; i < e->n; i++)
        bus_msg_destroy(&e->msgs[i]);
    free(e->msgs);
    free(e->key);
    free(e);
}

static void entry_free_cb(void *p)
{
    entry_free(p);
}

void bus_cache_destroy(bus_cache_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    bus_cache_t *self = *self_p;
    bus_map_destroy(&self->map, entry_free_cb);
    free(self->app);
    free(self);
    *self_p = NULL;
}

static size_t msg_bytes(const bus_msg_t *m)
{
    struct bus_frame f[BUS_MAX_FRAMES];
    size_t n = bus_msg_frames(m, f), total = MSG_OVERHEAD;
    for (size_t i = 0; i < n; i++)
        total += f[i].len;
    return total;
}

static void list_unlink(bus_cache_t *self, struct entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        self->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        self->tail = e->prev;
    e->prev = e->next = NULL;
}

static void flist_unlink(bus_cache_t *self, struct entry *e)
{
    if (e->fprev)
        e->fprev->fnext = e->fnext;
    else
        self->fhead = e->fnext;
    if (e->fnext)
        e->fnext->fprev = e->fprev;
    else
        self->ftail = e->fprev;
    e->fprev = e->fnext = NULL;
}

static void flist_append(bus_cache_t *self, struct entry *e)
{
    e->fprev = self->ftail;
    e->fnext = NULL;
    if (self->ftail)
        self->ftail->fnext = e;
    else
        self->fhead = e;
    self->ftail = e;
}

static bool in_table(const bus_cache_t *self, int node)
{
    return node < 0 || node == self->o.self_node ||
           (node <= BUS_NODE_MAX && (self->table[node / 8] >> (node % 8) & 1));
}

/* Move e on or off the foreign list as the table says now. */
static void classify(bus_cache_t *self, struct entry *e)
{
    bool foreign = self->have_table && !in_table(self, e->node);
    if (foreign == e->foreign)
        return;
    if (foreign) {
        flist_append(self, e);
        self->fmsgs += e->n;
        self->fbytes += e->bytes;
    } else {
        flist_unlink(self, e);
        self->fmsgs -= e->n;
        self->fbytes -= e->bytes;
    }
    e->foreign = foreign;
}

/* A `nodes` message of the master: its rows are the nodes whose entries count. */
static void take_table(bus_cache_t *self, const bus_msg_t *msg)
{
    json_object *rows = NULL;
    if (!json_object_object_get_ex(msg->hdr, "nodes", &rows) ||
        !json_object_is_type(rows, json_type_array))
        return;
    memset(self->table, 0, sizeof self->table);
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        json_object *id = NULL;
        if (json_object_object_get_ex(json_object_array_get_idx(rows, i), "node", &id)) {
            int64_t n = json_object_get_int64(id);
            if (n >= 0 && n <= BUS_NODE_MAX)
                self->table[n / 8] |= (uint8_t)(1u << (n % 8));
        }
    }
    self->have_table = true;
    for (struct entry *e = self->head; e; e = e->next)
        classify(self, e);
}

static void list_append(bus_cache_t *self, struct entry *e)
{
    e->prev = self->tail;
    e->next = NULL;
    if (self->tail)
        self->tail->next = e;
    else
        self->head = e;
    self->tail = e;
}

/* Drop the oldest message of e; the entry goes when it empties. */
static void evict_one(bus_cache_t *self, struct entry *e)
{
    size_t b = msg_bytes(e->msgs[0]);
    bus_msg_destroy(&e->msgs[0]);
    memmove(e->msgs, e->msgs + 1, (e->n - 1) * sizeof *e->msgs);
    e->n--;
    e->bytes -= b;
    self->bytes -= b;
    self->msgs--;
    self->evicted++;
    if (e->foreign) {
        self->fmsgs--;
        self->fbytes -= b;
        self->foreign_evicted++;
    }
    if (e->n == 0) {
        if (e->foreign)
            flist_unlink(self, e);
        if (e->app_ix != SIZE_MAX) {
            self->app[e->app_ix] = self->app[--self->napp];
            self->app[e->app_ix]->app_ix = e->app_ix;
        }
        list_unlink(self, e);
        bus_map_remove(self->map, e->key);
        entry_free(e);
    }
}

/*
 * What the total budget trims: a foreign entry, the oldest; else the entry
 * of the most messages (bytes); else the oldest that is not one of the
 * master's single keys (NULL when only those are left).
 */
static struct entry *victim(const bus_cache_t *self, bool by_bytes)
{
    if (self->fhead)
        return self->fhead;
    struct entry *big = NULL;
    for (size_t i = 0; i < self->napp; i++) {
        struct entry *e = self->app[i];
        if (e->n > 1 && (big == NULL || (by_bytes ? e->bytes > big->bytes : e->n > big->n)))
            big = e;
    }
    if (big)
        return big;
    struct entry *e = self->head;
    while (e && e->kept)
        e = e->next;
    return e;
}

/* The master's single keys: what every late joiner needs first. */
static bool single_key(const bus_cache_t *self, const bus_msg_t *msg)
{
    return msg->node == self->o.self_node && self->o.self_node >= 0 &&
           (msg->kind == BUS_K_PLAN || msg->kind == BUS_K_NODES || msg->kind == BUS_K_SOLVE ||
            msg->kind == BUS_K_RELAYS);
}

char *bus_cache_key(const bus_msg_t *msg)
{
    const struct bus_kind_def *d = bus_kind_def(msg->kind);
    char *key;
    xasprintf(&key, "%s|%d", d->name, msg->node);
    for (size_t i = 0; i < d->nfields; i++) {
        if (!d->fields[i].key)
            continue;
        json_object *v = NULL;
        json_object_object_get_ex(msg->hdr, d->fields[i].name, &v);
        const char *text = v ? json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN) : "-";
        char *longer;
        xasprintf(&longer, "%s|%s", key, text);
        free(key);
        key = longer;
    }
    return key;
}

/*
 * Frames as ZeroMQ hands them over can be views into its receive buffer
 * (8 KiB and more, shared by every message read with it): a cached
 * message of 300 bytes kept the whole buffer, and a full cache of 16384
 * such messages held 120 MB where its frames were 6 MB.  Cached frames are
 * copies of their own size.
 */
static void own_frames(bus_msg_t *m)
{
    for (size_t i = 0; i < m->nframes; i++) {
        size_t len = zmq_msg_size(&m->frames[i]);
        zmq_msg_t c;
        if (zmq_msg_init_size(&c, len) != 0)
            continue; /* out of memory: keep the view */
        memcpy(zmq_msg_data(&c), zmq_msg_data(&m->frames[i]), len);
        zmq_msg_move(&m->frames[i], &c);
        zmq_msg_close(&c);
    }
}

void bus_cache_put(bus_cache_t *self, bus_msg_t *msg)
{
    assert(self && msg);
    const struct bus_kind_def *d = bus_kind_def(msg->kind);
    if (d->cache == BUS_CACHE_NONE) {
        bus_msg_destroy(&msg);
        return;
    }
    char *key = bus_cache_key(msg);
    bool kept = single_key(self, msg);
    if (kept && msg->kind == BUS_K_NODES)
        take_table(self, msg);
    /* The header is only needed for the key: keep the wire frames alone. */
    json_object_put(msg->hdr);
    msg->hdr = NULL;
    own_frames(msg);
    struct entry *e = bus_map_get(self->map, key);
    if (e == NULL) {
        e = xcalloc(1, sizeof *e);
        e->key = key;
        e->node = msg->node;
        e->kept = kept;
        e->app_ix = SIZE_MAX;
        if (d->cache == BUS_CACHE_APPEND) {
            if (self->napp == self->capapp) {
                self->capapp = self->capapp ? 2 * self->capapp : 16;
                self->app = xreallocarray(self->app, self->capapp, sizeof *self->app);
            }
            e->app_ix = self->napp;
            self->app[self->napp++] = e;
        }
        bus_map_put(self->map, key, e);
    } else {
        free(key);
        list_unlink(self, e);
        if (e->foreign)
            flist_unlink(self, e);
        if (d->cache == BUS_CACHE_LATEST) {
            /* Replaced, not evicted: the newer message carries the state. */
            for (size_t i = 0; i < e->n; i++)
                bus_msg_destroy(&e->msgs[i]);
            self->msgs -= e->n;
            self->bytes -= e->bytes;
            if (e->foreign) {
                self->fmsgs -= e->n;
                self->fbytes -= e->bytes;
            }
            e->n = 0;
            e->bytes = 0;
        }
        if (e->foreign)
            flist_append(self, e);
    }
    list_append(self, e);
    if (e->n == e->cap) {
        e->cap = e->cap ? e->cap * 2 : 1;
        e->msgs = xreallocarray(e->msgs, e->cap, sizeof *e->msgs);
    }
    size_t b = msg_bytes(msg);
    e->msgs[e->n++] = msg;
    e->bytes += b;
    self->bytes += b;
    self->msgs++;
    if (e->foreign) {
        self->fmsgs++;
        self->fbytes += b;
    } else {
        classify(self, e);
    }
    while (e->n > 1 && e->bytes > self->o.key_bytes)
        evict_one(self, e);
    while (self->fhead &&
           (self->fmsgs > self->o.max_msgs / 4 || self->fbytes > self->o.max_bytes / 4))
        evict_one(self, self->fhead);
    struct entry *v;
    while ((self->msgs > self->o.max_msgs || self->bytes > self->o.max_bytes) &&
           (v = victim(self, self->bytes > self->o.max_bytes)) != NULL)
        evict_one(self, v);
}

void bus_cache_foreach(bus_cache_t *self, bool (*fn)(const bus_msg_t *msg, void *arg), void *arg)
{
    assert(self);
    for (struct entry *e = self->head; e; e = e->next)
        for (size_t i = 0; i < e->n; i++)
            if (!fn(e->msgs[i], arg))
                return;
}

void bus_cache_counts(const bus_cache_t *self, uint64_t *msgs, uint64_t *bytes, uint64_t *evicted)
{
    assert(self);
    *msgs = self->msgs;
    *bytes = self->bytes;
    *evicted = self->evicted;
}

void bus_cache_foreign(const bus_cache_t *self, uint64_t *msgs, uint64_t *evicted)
{
    assert(self);
    *msgs = self->fmsgs;
    *evicted = self->foreign_evicted;
}
