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
 */
#include "bus/bus_int.h"

#include <stdlib.h>
#include <string.h>

#define MSG_OVERHEAD 128 /* bookkeeping bytes charged per cached message */

struct entry {
    char *key;
    bus_msg_t **msgs;
    size_t n, cap, bytes;
    size_t app_ix; /* its place in the cache's APPEND entries; SIZE_MAX: a LATEST one */
    struct entry *prev, *next;
};

struct bus_cache {
    struct bus_cache_opts o;
    bus_map_t *map;
    struct entry *head, *tail;
    struct entry **app; /* the APPEND entries, the only ones that hold more than one message */
    size_t napp, capapp;
    size_t msgs, bytes;
    uint64_t evicted;
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
    if (e->n == 0) {
        if (e->app_ix != SIZE_MAX) {
            self->app[e->app_ix] = self->app[--self->napp];
            self->app[e->app_ix]->app_ix = e->app_ix;
        }
        list_unlink(self, e);
        bus_map_remove(self->map, e->key);
        entry_free(e);
    }
}

/* What the total budget trims: the entry of the most messages (bytes), else the oldest. */
static struct entry *victim(const bus_cache_t *self, bool by_bytes)
{
    struct entry *big = NULL;
    for (size_t i = 0; i < self->napp; i++) {
        struct entry *e = self->app[i];
        if (e->n > 1 && (big == NULL || (by_bytes ? e->bytes > big->bytes : e->n > big->n)))
            big = e;
    }
    return big ? big : self->head;
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

void bus_cache_put(bus_cache_t *self, bus_msg_t *msg)
{
    assert(self && msg);
    const struct bus_kind_def *d = bus_kind_def(msg->kind);
    if (d->cache == BUS_CACHE_NONE) {
        bus_msg_destroy(&msg);
        return;
    }
    char *key = bus_cache_key(msg);
    /* The header is only needed for the key: keep the wire frames alone. */
    json_object_put(msg->hdr);
    msg->hdr = NULL;
    struct entry *e = bus_map_get(self->map, key);
    if (e == NULL) {
        e = xcalloc(1, sizeof *e);
        e->key = key;
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
        if (d->cache == BUS_CACHE_LATEST) {
            /* Replaced, not evicted: the newer message carries the state. */
            for (size_t i = 0; i < e->n; i++)
                bus_msg_destroy(&e->msgs[i]);
            self->msgs -= e->n;
            self->bytes -= e->bytes;
            e->n = 0;
            e->bytes = 0;
        }
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
    while (e->n > 1 && e->bytes > self->o.key_bytes)
        evict_one(self, e);
    while (self->head && (self->msgs > self->o.max_msgs || self->bytes > self->o.max_bytes))
        evict_one(self, victim(self, self->bytes > self->o.max_bytes));
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
