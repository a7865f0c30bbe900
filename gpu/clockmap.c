/*
 * Clock maps: domain a -> domain b from snapshot pairs.  Interpolation uses
 * integer differences from the bracketing pair and a long double ratio, so
 * precision does not depend on the magnitude of the timestamps.
 */
#include "gpu/gpu.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

struct gpu_clockmap {
    struct gpu_snap_pair *p; /* ring, oldest at head */
    size_t cap, head, n;
};

gpu_clockmap_t *gpu_clockmap_new(size_t capacity)
{
    gpu_clockmap_t *self = xcalloc(1, sizeof *self);
    self->cap = capacity < 2 ? 2 : capacity;
    self->p = xcalloc(self->cap, sizeof *self->p);
    return self;
}

void gpu_clockmap_destroy(gpu_clockmap_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    free((*self_p)->p);
    free(*self_p);
    *self_p = NULL;
}

/* Pair i from the oldest; head + i < 2 * cap, so no division (this is on
 * libdptrace's per-event path). */
static const struct gpu_snap_pair *at(const gpu_clockmap_t *self, size_t i)
{
    size_t k = self->head + i;
    return &self->p[k >= self->cap ? k - self->cap : k];
}

int gpu_clockmap_add(gpu_clockmap_t *self, int64_t a_ns, int64_t b_ns, char *err)
{
    assert(self);
    if (self->n > 0) {
        const struct gpu_snap_pair *last = at(self, self->n - 1);
        if (a_ns <= last->a_ns || b_ns <= last->b_ns)
            return base_err(err,
                            "snapshot pair (%" PRId64 ", %" PRId64 ") does not follow (%" PRId64
                            ", %" PRId64 ")",
                            a_ns, b_ns, last->a_ns, last->b_ns);
    }
    if (self->n == self->cap) {
        self->head = (self->head + 1) % self->cap;
        self->n--;
    }
    self->p[(self->head + self->n) % self->cap] = (struct gpu_snap_pair){a_ns, b_ns};
    self->n++;
    return BASE_OK;
}

/* b at a on the line through p and q (p->a_ns != q->a_ns), anchored at p. */
static int64_t along(const struct gpu_snap_pair *p, const struct gpu_snap_pair *q, int64_t a)
{
    long double slope = (long double)(q->b_ns - p->b_ns) / (long double)(q->a_ns - p->a_ns);
    return p->b_ns + (int64_t)llroundl(slope * (long double)(a - p->a_ns));
}

int gpu_clockmap_map(const gpu_clockmap_t *self, int64_t a_ns, int64_t *b_ns)
{
    assert(self);
    if (self->n == 0)
        return BASE_ERR;
    if (self->n == 1) {
        *b_ns = at(self, 0)->b_ns + (a_ns - at(self, 0)->a_ns);
        return BASE_OK;
    }
    /*
     * The last pair with a <= a_ns.  Times mapped are mostly recent ones,
     * past the last pair but one: that segment is tried first, the binary
     * search is for older times.
     */
    size_t lo = 0, hi = self->n;
    if (at(self, self->n - 2)->a_ns <= a_ns)
        lo = self->n - 2, hi = lo + 1;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (at(self, mid)->a_ns <= a_ns)
            lo = mid;
        else
            hi = mid;
    }
    if (lo == self->n - 1)
        lo = self->n - 2; /* after the last pair: extend the last segment */
    *b_ns = along(at(self, lo), at(self, lo + 1), a_ns);
    return BASE_OK;
}

size_t gpu_clockmap_count(const gpu_clockmap_t *self)
{
    assert(self);
    return self->n;
}
