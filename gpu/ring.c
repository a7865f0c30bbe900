/* The per-thread SPSC ring (gpu_int.h) and the per-thread scope stack. */
#include "gpu/gpu_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

gpu_ring_t *gpu_ring_new(size_t capacity, size_t rec_size)
{
    size_t cap = 2;
    while (cap < capacity && cap < ((size_t)1 << 30))
        cap <<= 1;
    gpu_ring_t *r = aligned_alloc(64, (sizeof *r + 63) & ~(size_t)63);
    if (r == NULL) {
        fprintf(stderr, "fatal: out of memory allocating a ring\n");
        abort();
    }
    memset(r, 0, sizeof *r);
    r->mask = cap - 1;
    r->rec_size = rec_size;
    r->buf = xmalloc(cap * rec_size);
    /* Touch every page now: a first write to a fresh page costs a fault,
     * which must not land on the application's hot path later. */
    memset(r->buf, 0, cap * rec_size);
    atomic_init(&r->tail, 0);
    atomic_init(&r->head, 0);
    atomic_init(&r->dropped, 0);
    return r;
}

void gpu_ring_destroy(gpu_ring_t **self)
{
    if (self == NULL || *self == NULL)
        return;
    free((*self)->buf);
    free(*self);
    *self = NULL;
}

bool gpu_ring_push(gpu_ring_t *r, const void *rec)
{
    void *slot = gpu_ring_reserve(r);
    if (slot == NULL)
        return false;
    memcpy(slot, rec, r->rec_size);
    gpu_ring_commit(r);
    return true;
}

size_t gpu_ring_drain(gpu_ring_t *r, void (*fn)(void *ctx, const void *rec), void *ctx, size_t max)
{
    uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
    size_t n = 0;
    while (h + n != t && n < max) {
        fn(ctx, r->buf + (size_t)((h + n) & r->mask) * r->rec_size);
        n++;
    }
    atomic_store_explicit(&r->head, h + n, memory_order_release);
    return n;
}

size_t gpu_ring_used(gpu_ring_t *r)
{
    uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
    uint64_t t = atomic_load_explicit(&r->tail, memory_order_acquire);
    return (size_t)(t - h);
}

uint64_t gpu_ring_dropped(gpu_ring_t *r)
{
    return atomic_load_explicit(&r->dropped, memory_order_relaxed);
}

struct gpu_scope_frame *gpu_scope_push(struct gpu_scope_stack *s, uint64_t id, uint8_t kind,
                                       int64_t start_ns, uint64_t step, uint64_t *parent)
{
    *parent = gpu_scope_current(s);
    if (s->depth >= GPU_SCOPE_DEPTH || s->overflow > 0) {
        /* Once too deep, deeper pushes stay refused until the stack unwinds
         * back, so that pops keep matching their pushes. */
        s->overflow++;
        s->too_deep++;
        return NULL;
    }
    struct gpu_scope_frame *f = &s->f[s->depth++];
    f->id = id;
    f->parent = *parent;
    f->kind = kind;
    f->start_ns = start_ns;
    f->step = step;
    f->lost = false;
    return f;
}

int gpu_scope_pop(struct gpu_scope_stack *s, struct gpu_scope_frame *out)
{
    if (s->overflow > 0) {
        s->overflow--;
        return 0;
    }
    if (s->depth == 0) {
        s->unbalanced++;
        return -1;
    }
    *out = s->f[--s->depth];
    return 1;
}

uint32_t gpu_scope_step_depth(const struct gpu_scope_stack *s)
{
    for (uint32_t i = s->depth; i > 0; i--)
        if (s->f[i - 1].kind == GPU_EV_STEP)
            return s->depth - i + 1 + s->overflow;
    return 0;
}
