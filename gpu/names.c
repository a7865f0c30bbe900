/*
 * Names (the intern table), the scope range id tree and the u64 hash map
 * both are built on.
 */
#include "gpu/gpu_int.h"

#include <assert.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

void gpu_u64map_init(struct gpu_u64map *m, size_t expected)
{
    size_t cap = 16;
    while (cap < expected * 2)
        cap <<= 1;
    m->cap = cap;
    m->n = 0;
    m->keys = xcalloc(cap, sizeof *m->keys);
    m->vals = xcalloc(cap, sizeof *m->vals);
}

void gpu_u64map_fini(struct gpu_u64map *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* Where key is, else the empty slot that ends its probe chain (the map
 * is never full: put grows it at three quarters). */
static size_t slot_of(const struct gpu_u64map *m, uint64_t key)
{
    size_t mask = m->cap - 1, i = mix64(key) & mask;
    while (m->keys[i] != 0 && m->keys[i] != key)
        i = (i + 1) & mask;
    return i;
}

uint64_t *gpu_u64map_get(const struct gpu_u64map *m, uint64_t key)
{
    if (key == 0 || m->cap == 0)
        return NULL;
    size_t i = slot_of(m, key);
    return m->keys[i] == key ? &m->vals[i] : NULL;
}

static void grow(struct gpu_u64map *m)
{
    struct gpu_u64map old = *m;
    gpu_u64map_init(m, old.cap);
    for (size_t i = 0; i < old.cap; i++)
        if (old.keys[i] != 0)
            gpu_u64map_put(m, old.keys[i], old.vals[i]);
    gpu_u64map_fini(&old);
}

void gpu_u64map_put(struct gpu_u64map *m, uint64_t key, uint64_t val)
{
    if (key == 0)
        return;
    if (m->cap == 0)
        gpu_u64map_init(m, 8);
    if ((m->n + 1) * 4 > m->cap * 3)
        grow(m);
    size_t i = slot_of(m, key);
    if (m->keys[i] == 0)
        m->n++;
    m->keys[i] = key;
    m->vals[i] = val;
}

bool gpu_u64map_del(struct gpu_u64map *m, uint64_t key)
{
    if (key == 0 || m->cap == 0)
        return false;
    size_t mask = m->cap - 1, i = slot_of(m, key);
    if (m->keys[i] != key)
        return false;
    /* Backward-shift deletion keeps probe chains unbroken without tombstones. */
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (m->keys[j] == 0)
            break;
        size_t home = mix64(m->keys[j]) & mask;
        bool movable = (j > i) ? (home <= i || home > j) : (home <= i && home > j);
        if (movable) {
            m->keys[i] = m->keys[j];
            m->vals[i] = m->vals[j];
            i = j;
        }
    }
    m->keys[i] = 0;
    m->vals[i] = 0;
    m->n--;
    return true;
}

/* ---- names ---- */

/* libstdc++'s demangler (the Itanium C++ ABI's __cxa_demangle). */
typedef char *(*demangle_fn)(const char *mangled, char *buf, size_t *len, int *status);

struct gpu_symbol {
    char *sym;
    uint32_t id;
};

struct gpu_names {
    char **str;    /* str[id - 1] */
    uint8_t *coll; /* coll[id - 1]: a collective's kernel (gpu_names_collective) */
    uint32_t count;
    size_t max;
    struct gpu_u64map index; /* string hash -> first id with it (collisions chained by probing) */
    uint64_t full;
    /* gpu_names_intern_symbol: symbol -> the id of its display name */
    struct gpu_symbol *syms; /* syms[i - 1] */
    uint32_t nsyms, syms_cap;
    struct gpu_u64map sym_index;
    demangle_fn demangle;
    bool demangle_looked;
};

static uint64_t hash_str(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ULL;
    }
    return h ? h : 1;
}

/* Length of name cut to GPU_NAME_MAX bytes without splitting a UTF-8 sequence. */
static size_t name_len(const char *name)
{
    size_t n = strnlen(name, GPU_NAME_MAX + 1);
    if (n <= GPU_NAME_MAX)
        return n;
    n = GPU_NAME_MAX;
    while (n > 0 && ((unsigned char)name[n] & 0xc0) == 0x80)
        n--;
    return n;
}

/*
 * The kernels of the collective libraries, NCCL's and RCCL's (the same
 * names): ncclDevKernel_AllReduce_Sum_f32_RING_LL(…), ncclKernel_…,
 * ncclDevKernel_Generic, demangled or not, with or without "void ".
 */
static bool name_is_collective(const char *name)
{
    if (strncmp(name, "void ", 5) == 0)
        name += 5;
    return (strncmp(name, "nccl", 4) == 0 || strncmp(name, "rccl", 4) == 0) &&
           strstr(name, "Kernel") != NULL;
}

gpu_names_t *gpu_names_new(size_t max_names)
{
    gpu_names_t *self = xcalloc(1, sizeof *self);
    self->max = max_names ? max_names : 1;
    self->str = xcalloc(self->max, sizeof *self->str);
    self->coll = xcalloc(self->max, sizeof *self->coll);
    gpu_u64map_init(&self->index, 64);
    return self;
}

void gpu_names_destroy(gpu_names_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    gpu_names_t *self = *self_p;
    for (uint32_t i = 0; i < self->count; i++)
        free(self->str[i]);
    free(self->str);
    free(self->coll);
    gpu_u64map_fini(&self->index);
    for (uint32_t i = 0; i < self->nsyms; i++)
        free(self->syms[i].sym);
    free(self->syms);
    gpu_u64map_fini(&self->sym_index);
    free(self);
    *self_p = NULL;
}

/* The value under which an index holds string s: its keys are the hash,
 * perturbed on a collision until a free or matching key is found, so
 * distinct strings never share one.  0 when absent, *h then the free key
 * to put it under. */
static uint64_t index_find(const gpu_names_t *self, const struct gpu_u64map *index, uint64_t *h,
                           bool (*holds)(const gpu_names_t *, uint64_t, const char *, size_t),
                           const char *s, size_t n)
{
    for (;; *h = mix64(*h) | 1) {
        const uint64_t *v = gpu_u64map_get(index, *h);
        if (v == NULL)
            return 0;
        if (holds(self, *v, s, n))
            return *v;
    }
}

static bool name_holds(const gpu_names_t *self, uint64_t v, const char *s, size_t n)
{
    const char *x = self->str[v - 1];
    return strlen(x) == n && memcmp(x, s, n) == 0;
}

static bool symbol_holds(const gpu_names_t *self, uint64_t v, const char *s, size_t n)
{
    (void)n;
    return strcmp(self->syms[v - 1].sym, s) == 0;
}

uint32_t gpu_names_intern(gpu_names_t *self, const char *name)
{
    assert(self);
    if (name == NULL)
        return 0;
    size_t n = name_len(name);
    uint64_t h = hash_str(name, n);
    uint64_t v = index_find(self, &self->index, &h, name_holds, name, n);
    if (v != 0)
        return (uint32_t)v;
    if (self->count >= self->max) {
        self->full++;
        return 0;
    }
    self->str[self->count] = xstrndup(name, n);
    self->coll[self->count] = name_is_collective(self->str[self->count]);
    self->count++;
    gpu_u64map_put(&self->index, h, self->count);
    return self->count;
}

/*
 * A kernel's symbol as people read it: C++ symbols demangled when the
 * process has libstdc++ (every process libdptrace is in does: libzmq needs
 * it; it is looked up, not linked, so nothing else depends on it), and a
 * name longer than GPU_NAME_MAX cut with a hash of the whole after "…",
 * so that two templates alike for 239 bytes keep two names.
 */
static const char *symbol_display(gpu_names_t *self, const char *sym, char *buf, size_t len)
{
    if (!self->demangle_looked) {
        self->demangle_looked = true;
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD);
        if (h != NULL) {
            *(void **)&self->demangle = dlsym(h, "__cxa_demangle");
            dlclose(h); /* it stays: it was loaded before */
        }
    }
    char *plain = NULL;
    int status = -1;
    if (self->demangle != NULL && strncmp(sym, "_Z", 2) == 0)
        plain = self->demangle(sym, NULL, NULL, &status);
    const char *name = plain != NULL && status == 0 ? plain : sym;
    size_t n = strlen(name);
    if (n <= GPU_NAME_MAX) {
        snprintf(buf, len, "%s", name);
    } else {
        size_t keep = GPU_NAME_MAX - 16; /* "…" (3 bytes), '#', 12 hex digits */
        while (keep > 0 && ((unsigned char)name[keep] & 0xc0) == 0x80)
            keep--;
        snprintf(buf, len,
                 "%.*s\xe2\x80\xa6"
                 "#%012" PRIx64,
                 (int)keep, name, (uint64_t)(hash_str(name, n) & 0xffffffffffffULL));
    }
    free(plain);
    return buf;
}

uint32_t gpu_names_intern_symbol(gpu_names_t *self, const char *sym)
{
    assert(self);
    if (sym == NULL)
        return 0;
    size_t n = strlen(sym);
    uint64_t h = hash_str(sym, n);
    uint64_t v = index_find(self, &self->sym_index, &h, symbol_holds, sym, n);
    if (v != 0)
        return self->syms[v - 1].id;
    char buf[GPU_NAME_MAX + 1];
    /* Remembered even when the table is full (id 0): no demangling again. */
    uint32_t id = gpu_names_intern(self, symbol_display(self, sym, buf, sizeof buf));
    if (self->nsyms >= self->max)
        return id;
    if (self->nsyms == self->syms_cap) {
        self->syms_cap = self->syms_cap ? 2 * self->syms_cap : 64;
        self->syms = xreallocarray(self->syms, self->syms_cap, sizeof *self->syms);
    }
    self->syms[self->nsyms++] = (struct gpu_symbol){xstrdup(sym), id};
    gpu_u64map_put(&self->sym_index, h, self->nsyms);
    return id;
}

const char *gpu_names_get(const gpu_names_t *self, uint32_t id)
{
    assert(self);
    return (id == 0 || id > self->count) ? NULL : self->str[id - 1];
}

bool gpu_names_collective(const gpu_names_t *self, uint32_t id)
{
    assert(self);
    return id != 0 && id <= self->count && self->coll[id - 1];
}

uint32_t gpu_names_count(const gpu_names_t *self)
{
    assert(self);
    return self->count;
}

uint64_t gpu_names_full_drops(const gpu_names_t *self)
{
    assert(self);
    return self->full;
}

/* ---- scope tree ---- */

struct gpu_scopetree {
    struct gpu_scope_pair *fifo; /* insertion order, for eviction and foreach */
    size_t cap, head, n;
    struct gpu_u64map parent; /* child -> parent */
    uint64_t evicted;
};

gpu_scopetree_t *gpu_scopetree_new(size_t capacity)
{
    gpu_scopetree_t *self = xcalloc(1, sizeof *self);
    self->cap = capacity ? capacity : 1;
    self->fifo = xcalloc(self->cap, sizeof *self->fifo);
    gpu_u64map_init(&self->parent, self->cap < 4096 ? self->cap : 4096);
    return self;
}

void gpu_scopetree_destroy(gpu_scopetree_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    gpu_scopetree_t *self = *self_p;
    free(self->fifo);
    gpu_u64map_fini(&self->parent);
    free(self);
    *self_p = NULL;
}

int gpu_scopetree_add(gpu_scopetree_t *self, uint64_t child, uint64_t parent, char *err)
{
    assert(self);
    if (child == 0 || child == parent)
        return base_err(err, "scope pair [%llu, %llu] is not a child-parent pair",
                        (unsigned long long)child, (unsigned long long)parent);
    uint64_t *known = gpu_u64map_get(&self->parent, child);
    if (known != NULL) {
        if (*known != parent)
            return base_err(err, "scope %llu already has parent %llu, not %llu",
                            (unsigned long long)child, (unsigned long long)*known,
                            (unsigned long long)parent);
        return 0;
    }
    if (self->n == self->cap) {
        gpu_u64map_del(&self->parent, self->fifo[self->head].child);
        self->head = (self->head + 1) % self->cap;
        self->n--;
        self->evicted++;
    }
    self->fifo[(self->head + self->n) % self->cap] = (struct gpu_scope_pair){child, parent};
    self->n++;
    gpu_u64map_put(&self->parent, child, parent);
    return 1;
}

size_t gpu_scopetree_add_path(gpu_scopetree_t *self, const uint64_t *ids, size_t n)
{
    assert(self);
    size_t added = 0;
    for (size_t i = n; i > 0; i--) {
        uint64_t child = ids[i - 1], parent = i > 1 ? ids[i - 2] : 0;
        if (gpu_u64map_get(&self->parent, child) != NULL)
            break;
        if (gpu_scopetree_add(self, child, parent, NULL) == 1)
            added++;
    }
    return added;
}

int gpu_scopetree_parent(const gpu_scopetree_t *self, uint64_t id, uint64_t *parent)
{
    assert(self);
    uint64_t *p = gpu_u64map_get(&self->parent, id);
    if (p == NULL)
        return BASE_ERR;
    *parent = *p;
    return BASE_OK;
}

size_t gpu_scopetree_path(const gpu_scopetree_t *self, uint64_t id, uint64_t *out, size_t max)
{
    assert(self);
    size_t n = 0;
    uint64_t cur = id;
    while (cur != 0 && n < max) {
        uint64_t *p = gpu_u64map_get(&self->parent, cur);
        if (p == NULL)
            break;
        out[n++] = cur;
        cur = *p;
    }
    for (size_t i = 0; i < n / 2; i++) {
        uint64_t t = out[i];
        out[i] = out[n - 1 - i];
        out[n - 1 - i] = t;
    }
    return n;
}

size_t gpu_scopetree_size(const gpu_scopetree_t *self)
{
    assert(self);
    return self->n;
}

uint64_t gpu_scopetree_evicted(const gpu_scopetree_t *self)
{
    assert(self);
    return self->evicted;
}

void gpu_scopetree_foreach(const gpu_scopetree_t *self,
                           void (*fn)(void *ctx, const struct gpu_scope_pair *pair), void *ctx)
{
    assert(self);
    for (size_t i = 0; i < self->n; i++)
        fn(ctx, &self->fifo[(self->head + i) % self->cap]);
}
