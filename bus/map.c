/* A small string-keyed hash map (chaining, power-of-two buckets, FNV-1a). */
#include "bus/bus_int.h"

#include <stdlib.h>
#include <string.h>

struct map_node {
    struct map_node *next;
    void *value;
    char key[]; /* NUL-terminated */
};

struct bus_map {
    struct map_node **buckets;
    size_t nbuckets, count;
};

static uint64_t hash_key(const char *key)
{
    uint64_t h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        h ^= *p;
        h *= 1099511628211ULL;
    }
    return h;
}

bus_map_t *bus_map_new(void)
{
    bus_map_t *self = xcalloc(1, sizeof *self);
    self->nbuckets = 64;
    self->buckets = xcalloc(self->nbuckets, sizeof *self->buckets);
    return self;
}

void bus_map_destroy(bus_map_t **self_p, void (*free_value)(void *))
{
    if (self_p == NULL || *self_p == NULL)
        return;
    bus_map_t *self = *self_p;
    for (size_t i = 0; i < self->nbuckets; i++) {
        struct map_node *n = self->buckets[i];
        while (n) {
            struct map_node *next = n->next;
            if (free_value)
                free_value(n->value);
            free(n);
            n = next;
        }
    }
    free(self->buckets);
    free(self);
    *self_p = NULL;
}

static struct map_node **find(const bus_map_t *self, const char *key)
{
    struct map_node **pp = &self->buckets[hash_key(key) & (self->nbuckets - 1)];
    while (*pp && strcmp((*pp)->key, key) != 0)
        pp = &(*pp)->next;
    return pp;
}

void *bus_map_get(const bus_map_t *self, const char *key)
{
    assert(self);
    struct map_node **pp = find(self, key);
    return *pp ? (*pp)->value : NULL;
}

static void grow(bus_map_t *self)
{
    size_t nb = self->nbuckets * 2;
    struct map_node **b = xcalloc(nb, sizeof *b);
    for (size_t i = 0; i < self->nbuckets; i++) {
        struct map_node *n = self->buckets[i];
        while (n) {
            struct map_node *next = n->next;
            size_t h = hash_key(n->key) & (nb - 1);
            n->next = b[h];
            b[h] = n;
            n = next;
        }
    }
    free(self->buckets);
    self->buckets = b;
    self->nbuckets = nb;
}

void *bus_map_put(bus_map_t *self, const char *key, void *value)
{
    assert(self);
    struct map_node **pp = find(self, key);
    if (*pp) {
        void *old = (*pp)->value;
        (*pp)->value = value;
        return old;
    }
    size_t len = strlen(key);
    struct map_node *n = xmalloc(sizeof *n + len + 1);
    memcpy(n->key, key, len + 1);
    n->value = value;
    n->next = NULL;
    *pp = n;
    if (++self->count > self->nbuckets)
        grow(self);
    return NULL;
}

void *bus_map_remove(bus_map_t *self, const char *key)
{
    assert(self);
    struct map_node **pp = find(self, key);
    if (*pp == NULL)
        return NULL;
    struct map_node *n = *pp;
    void *value = n->value;
    *pp = n->next;
    free(n);
    self->count--;
    return value;
}

size_t bus_map_count(const bus_map_t *self)
{
    assert(self);
    return self->count;
}

void bus_map_foreach(const bus_map_t *self, bool (*fn)(const char *key, void *value, void *arg),
                     void *arg)
{
    assert(self);
    for (size_t i = 0; i < self->nbuckets; i++)
        for (struct map_node *n = self->buckets[i]; n; n = n->next)
            if (!fn(n->key, n->value, arg))
                return;
}
