/*
 * The event store: bounded, evicting in arrival order, counting every
 * eviction.  Tracks are rings kept sorted by start time: events of one queue
 * or thread arrive nearly in order (batches end-ordered at worst), so an
 * insertion walks back a few places at most.  A FIFO of track indices, one
 * entry per held event in arrival order, says which track gives up its
 * oldest event when the budget is full.
 */
#include "tui/tui.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

struct track {
    struct tui_track_info info;
    tui_ev_t *ring;
    size_t cap, head; /* cap: a power of two (0: nothing allocated) */
};

struct tui_store {
    size_t budget, max_tracks;
    struct track *tracks;
    size_t ntracks, captracks;
    uint32_t *hash; /* open addressing: track index + 1, 0 empty */
    size_t hashcap;
    uint32_t *fifo; /* track of each held event, in arrival order */
    size_t fifocap, fifohead, count;
    uint64_t added, evicted, refused;
    uint64_t *node_evicted; /* by node id */
};

bool tui_kind_on_device(uint8_t kind)
{
    return kind == GPU_EV_KERNEL || kind == GPU_EV_MEMCPY || kind == GPU_EV_MEMSET;
}

tui_store_t *tui_store_new(size_t budget, size_t max_tracks)
{
    tui_store_t *self = xcalloc(1, sizeof *self);
    self->budget = budget ? budget : 1;
    self->max_tracks = max_tracks ? max_tracks : 1;
    if (self->max_tracks > TUI_MAX_TRACKS)
        self->max_tracks = TUI_MAX_TRACKS;
    self->node_evicted = xcalloc(65536, sizeof *self->node_evicted);
    return self;
}

static void free_tracks(tui_store_t *self)
{
    for (size_t i = 0; i < self->ntracks; i++)
        free(self->tracks[i].ring);
    free(self->tracks);
    free(self->hash);
    self->tracks = NULL;
    self->hash = NULL;
    self->ntracks = self->captracks = self->hashcap = 0;
}

void tui_store_destroy(tui_store_t **self)
{
    if (self == NULL || *self == NULL)
        return;
    free_tracks(*self);
    free((*self)->fifo);
    free((*self)->node_evicted);
    free(*self);
    *self = NULL;
}

void tui_store_clear(tui_store_t *self)
{
    assert(self);
    free_tracks(self);
    free(self->fifo);
    self->fifo = NULL;
    self->fifocap = self->fifohead = self->count = 0;
    self->added = self->evicted = self->refused = 0;
    memset(self->node_evicted, 0, 65536 * sizeof *self->node_evicted);
}

static uint64_t key_hash(const struct tui_track_key *k)
{
    uint64_t h = ((uint64_t)k->node << 48) ^ ((uint64_t)k->device << 32) ^ k->pid;
    h ^= ((uint64_t)k->id << 17) ^ ((uint64_t)k->host << 63);
    h *= 0x9e3779b97f4a7c15ULL;
    return h ^ (h >> 29);
}

static bool key_eq(const struct tui_track_key *a, const struct tui_track_key *b)
{
    return a->node == b->node && a->device == b->device && a->pid == b->pid && a->id == b->id &&
           a->host == b->host;
}

static void hash_put(tui_store_t *self, size_t idx)
{
    size_t mask = self->hashcap - 1;
    size_t h = (size_t)key_hash(&self->tracks[idx].info.key) & mask;
    while (self->hash[h])
        h = (h + 1) & mask;
    self->hash[h] = (uint32_t)idx + 1;
}

static long find_track(tui_store_t *self, const struct tui_track_key *k, bool create)
{
    if (self->hashcap) {
        size_t mask = self->hashcap - 1;
        for (size_t h = (size_t)key_hash(k) & mask; self->hash[h]; h = (h + 1) & mask)
            if (key_eq(&self->tracks[self->hash[h] - 1].info.key, k))
                return (long)self->hash[h] - 1;
    }
    if (!create || self->ntracks >= self->max_tracks)
        return -1;
    if (self->ntracks == self->captracks) {
        self->captracks = self->captracks ? 2 * self->captracks : 16;
        self->tracks = xreallocarray(self->tracks, self->captracks, sizeof *self->tracks);
    }
    size_t idx = self->ntracks++;
    memset(&self->tracks[idx], 0, sizeof self->tracks[idx]);
    self->tracks[idx].info.key = *k;
    self->tracks[idx].info.last_start = INT64_MIN;
    self->tracks[idx].info.last_end = INT64_MIN;
    if (2 * self->ntracks > self->hashcap) { /* keep the load under one half */
        free(self->hash);
        self->hashcap = self->hashcap ? 2 * self->hashcap : 64;
        self->hash = xcalloc(self->hashcap, sizeof *self->hash);
        for (size_t i = 0; i < self->ntracks; i++)
            hash_put(self, i);
    } else {
        hash_put(self, idx);
    }
    return (long)idx;
}

static tui_ev_t *at(struct track *t, size_t k)
{
    return &t->ring[(t->head + k) & (t->cap - 1)];
}

static void evict_one(tui_store_t *self)
{
    uint32_t ti = self->fifo[self->fifohead];
    self->fifohead = (self->fifohead + 1) & (self->fifocap - 1);
    self->count--;
    struct track *t = &self->tracks[ti];
    assert(t->info.count > 0);
    t->head = (t->head + 1) & (t->cap - 1);
    t->info.count--;
    self->evicted++;
    self->node_evicted[t->info.key.node]++;
}

static void fifo_push(tui_store_t *self, uint32_t ti)
{
    if (self->count == self->fifocap) {
        size_t ncap = self->fifocap ? 2 * self->fifocap : 1024;
        uint32_t *nf = xcalloc(ncap, sizeof *nf);
        for (size_t i = 0; i < self->count; i++)
            nf[i] = self->fifo[(self->fifohead + i) & (self->fifocap - 1)];
        free(self->fifo);
        self->fifo = nf;
        self->fifocap = ncap;
        self->fifohead = 0;
    }
    self->fifo[(self->fifohead + self->count) & (self->fifocap - 1)] = ti;
    self->count++;
}

static void track_grow(struct track *t)
{
    size_t ncap = t->cap ? 2 * t->cap : 64;
    tui_ev_t *nr = xreallocarray(NULL, ncap, sizeof *nr);
    for (size_t i = 0; i < t->info.count; i++)
        nr[i] = *at(t, i);
    free(t->ring);
    t->ring = nr;
    t->cap = ncap;
    t->head = 0;
}

int tui_store_add(tui_store_t *self, const gpu_event_t *ev, char *err)
{
    assert(self && ev);
    if (ev->kind < GPU_EV_KERNEL || ev->kind >= GPU_EV_NKINDS) {
        self->refused++;
        return base_err(err, "event of unknown kind %u", ev->kind);
    }
    if (ev->end_ns < ev->start_ns) {
        self->refused++;
        return base_err(err, "event ends before it starts");
    }
    struct tui_track_key k = {.node = ev->node, .pid = ev->pid};
    if (tui_kind_on_device(ev->kind)) {
        k.device = ev->device;
        k.id = ev->stream;
    } else {
        k.host = true;
        k.id = ev->tid;
    }
    long ti = find_track(self, &k, true);
    if (ti < 0) {
        self->refused++;
        return base_err(err, "more than %zu event tracks", self->max_tracks);
    }
    if (self->count >= self->budget)
        evict_one(self);
    struct track *t = &self->tracks[ti];
    if (t->info.count == t->cap)
        track_grow(t);
    tui_ev_t e = {.start = ev->start_ns,
                  .end = ev->end_ns,
                  .scope = ev->scope_id,
                  .name_id = ev->name_id,
                  .corr_id = ev->corr_id,
                  .tid = ev->tid,
                  .kind = ev->kind,
                  .flags = ev->flags,
                  .copy_kind = ev->copy_kind};
    if (ev->kind == GPU_EV_KERNEL) {
        e.u.k.grid_x = ev->grid[0];
        e.u.k.grid_y = ev->grid[1];
        e.u.k.grid_z = ev->grid[2] > UINT16_MAX ? UINT16_MAX : (uint16_t)ev->grid[2];
        e.u.k.block_x = ev->block[0] > UINT16_MAX ? UINT16_MAX : (uint16_t)ev->block[0];
        e.u.k.block_y = ev->block[1] > UINT16_MAX ? UINT16_MAX : (uint16_t)ev->block[1];
        e.u.k.block_z = ev->block[2] > UINT16_MAX ? UINT16_MAX : (uint16_t)ev->block[2];
    } else {
        e.u.x.bytes = ev->bytes;
        e.u.x.step = ev->step;
    }
    /* Insert in start order (from the tail backwards); of events that start
     * together the longer goes first, so that an enclosing range precedes
     * what it encloses. */
    size_t pos = t->info.count;
    while (pos > 0 && (at(t, pos - 1)->start > e.start ||
                       (at(t, pos - 1)->start == e.start && at(t, pos - 1)->end < e.end))) {
        *at(t, pos) = *at(t, pos - 1);
        pos--;
    }
    *at(t, pos) = e;
    t->info.count++;
    fifo_push(self, (uint32_t)ti);
    self->added++;
    int64_t dur = e.end - e.start;
    if (dur > t->info.max_dur)
        t->info.max_dur = dur;
    if (e.start > t->info.last_start)
        t->info.last_start = e.start;
    if (e.end > t->info.last_end)
        t->info.last_end = e.end;
    return BASE_OK;
}

size_t tui_store_budget(const tui_store_t *self)
{
    assert(self);
    return self->budget;
}

size_t tui_store_count(const tui_store_t *self)
{
    assert(self);
    return self->count;
}

uint64_t tui_store_added(const tui_store_t *self)
{
    assert(self);
    return self->added;
}

uint64_t tui_store_evicted(const tui_store_t *self)
{
    assert(self);
    return self->evicted;
}

uint64_t tui_store_refused(const tui_store_t *self)
{
    assert(self);
    return self->refused;
}

uint64_t tui_store_node_evicted(const tui_store_t *self, uint16_t node)
{
    assert(self);
    return self->node_evicted[node];
}

size_t tui_store_ntracks(const tui_store_t *self)
{
    assert(self);
    return self->ntracks;
}

const struct tui_track_info *tui_store_track(const tui_store_t *self, size_t track)
{
    assert(self && track < self->ntracks);
    return &self->tracks[track].info;
}

const tui_ev_t *tui_store_ev(const tui_store_t *self, size_t track, size_t k)
{
    assert(self && track < self->ntracks);
    struct track *t = &self->tracks[track];
    assert(k < t->info.count);
    return at(t, k);
}

size_t tui_store_lower_bound(const tui_store_t *self, size_t track, int64_t time)
{
    assert(self && track < self->ntracks);
    struct track *t = &self->tracks[track];
    size_t lo = 0, hi = t->info.count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (at(t, mid)->start < time)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
