/*
 * gpu internals shared inside the module (libdptrace, its background
 * thread, the unit tests): the per-thread single-producer / single-consumer
 * ring, and the per-thread stack of open scope ranges.  Not part of the
 * module's interface.
 */
#ifndef DP_GPU_INT_H
#define DP_GPU_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu/gpu.h"

/*
 * SPSC ring of fixed-size records.  The producer (an application thread)
 * never waits: when the ring is full the record is refused and counted.
 * The producer-side and consumer-side indices live on separate cache lines;
 * the producer caches the consumer's index so that a push reads no shared
 * line while there is room.
 */
typedef struct gpu_ring {
    _Alignas(64) _Atomic uint64_t tail; /* written by the producer */
    uint64_t head_cache;                /* producer's last view of head */
    _Atomic uint64_t dropped;           /* written by the producer only */
    _Alignas(64) _Atomic uint64_t head; /* written by the consumer */
    _Alignas(64) uint64_t mask;
    size_t rec_size;
    unsigned char *buf;
} gpu_ring_t;

/* capacity is rounded up to a power of two (at least 2). */
gpu_ring_t *gpu_ring_new(size_t capacity, size_t rec_size);
void gpu_ring_destroy(gpu_ring_t **self);

/* Free slots as the producer sees them (refreshing its view when needed). */
static inline size_t gpu_ring_space(gpu_ring_t *r)
{
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint64_t cap = r->mask + 1;
    if (t - r->head_cache >= cap)
        r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
    return (size_t)(cap - (t - r->head_cache));
}

/* The slot the next record goes into, or NULL when full (counted as a drop).
 * Fill it, then gpu_ring_commit(). */
static inline void *gpu_ring_reserve(gpu_ring_t *r)
{
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
    if (t - r->head_cache > r->mask) {
        r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
        if (t - r->head_cache > r->mask) {
            atomic_store_explicit(&r->dropped,
                                  atomic_load_explicit(&r->dropped, memory_order_relaxed) + 1,
                                  memory_order_relaxed);
            return NULL;
        }
    }
    return r->buf + (size_t)(t & r->mask) * r->rec_size;
}

static inline void gpu_ring_commit(gpu_ring_t *r)
{
    atomic_store_explicit(&r->tail, atomic_load_explicit(&r->tail, memory_order_relaxed) + 1,
                          memory_order_release);
}

/* Count a record the producer gave up on before reserving (e.g. no room for
 * the pair of records an operation needs). */
static inline void gpu_ring_count_drop(gpu_ring_t *r, uint64_t n)
{
    atomic_store_explicit(&r->dropped, atomic_load_explicit(&r->dropped, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* Copy one record in (reserve + commit); false when full (counted). */
bool gpu_ring_push(gpu_ring_t *r, const void *rec);
/* Consumer: hand up to max records to fn, oldest first, then free their
 * slots.  Returns how many were handed. */
size_t gpu_ring_drain(gpu_ring_t *r, void (*fn)(void *ctx, const void *rec), void *ctx, size_t max);
size_t gpu_ring_used(gpu_ring_t *r);
uint64_t gpu_ring_dropped(gpu_ring_t *r);

/*
 * Per-thread stack of open scope ranges.  Ids come from a caller-refilled
 * block so that a push touches no shared state; depth is bounded (deeper
 * pushes are counted and their pops ignored, so the stack stays balanced).
 */
#define GPU_SCOPE_DEPTH 128

struct gpu_scope_frame {
    uint64_t id;
    uint64_t parent; /* the frame below, or what the caller nests a bottom frame in (0: none) */
    int64_t start_ns;
    uint64_t step; /* step number (GPU_EV_STEP frames) */
    uint8_t kind;  /* GPU_EV_RANGE or GPU_EV_STEP */
    bool lost;     /* its open record was dropped: its close is dropped too */
};

struct gpu_scope_stack {
    struct gpu_scope_frame f[GPU_SCOPE_DEPTH];
    uint32_t depth;      /* frames in f[] */
    uint32_t overflow;   /* pushes beyond GPU_SCOPE_DEPTH not yet popped */
    uint64_t too_deep;   /* pushes refused for depth */
    uint64_t unbalanced; /* pops with nothing open */
};

/* Innermost open scope id, 0 when none. */
static inline uint64_t gpu_scope_current(const struct gpu_scope_stack *s)
{
    return s->depth ? s->f[s->depth - 1].id : 0;
}

/* Push a frame; returns it (the caller sets lost) or NULL when too deep.
 * *parent receives the enclosing scope id (0: a root). */
struct gpu_scope_frame *gpu_scope_push(struct gpu_scope_stack *s, uint64_t id, uint8_t kind,
                                       int64_t start_ns, uint64_t step, uint64_t *parent);
/* Pop the innermost frame into *out.  Returns 1 when a frame was popped,
 * 0 when the pop matched a refused (too deep) push, -1 when nothing was
 * open (counted as unbalanced). */
int gpu_scope_pop(struct gpu_scope_stack *s, struct gpu_scope_frame *out);
/* Depth of the innermost open step frame counted from the top (1: the
 * innermost frame is a step), 0 when no step is open. */
uint32_t gpu_scope_step_depth(const struct gpu_scope_stack *s);

/*
 * A u64 -> u64 hash map (linear probing, backward-shift deletion), bounded
 * by its owner.  Key 0 is reserved (empty slot).
 */
struct gpu_u64map {
    uint64_t *keys;
    uint64_t *vals;
    size_t cap; /* power of two */
    size_t n;
};

void gpu_u64map_init(struct gpu_u64map *m, size_t expected);
void gpu_u64map_fini(struct gpu_u64map *m);
/* Pointer to the value of key, NULL when absent. */
uint64_t *gpu_u64map_get(const struct gpu_u64map *m, uint64_t key);
/* Insert or replace (grows as needed; the owner bounds n). */
void gpu_u64map_put(struct gpu_u64map *m, uint64_t key, uint64_t val);
bool gpu_u64map_del(struct gpu_u64map *m, uint64_t key);

/*
 * Source options "key=value,key=value".  gpu_opts_check refuses a key not
 * in the NULL-terminated list `known` (or a malformed item); gpu_opts_get
 * copies the value of key into val and says whether it was there.
 */
int gpu_opts_check(const char *opts, const char *const *known, char *err);
bool gpu_opts_get(const char *opts, const char *key, char *val, size_t len);
/* An integer option in [lo, hi] into *out, left as it was when absent;
 * an error names the source (src). */
int gpu_opts_int(const char *opts, const char *src, const char *key, int64_t lo, int64_t hi,
                 int64_t *out, char *err);

#endif /* DP_GPU_INT_H */
