/* Probe graph planning. */
#include "node/node_int.h"

#include <stdlib.h>
#include <string.h>

/*
 * Both directions of an edge are probed anyway, so each unordered pair is
 * fitted once: a pair fitted from both ends would only add a mirror image
 * whose loop residual is zero by construction.  When every pair fits in the
 * budget (n - 1 <= 2k) the plan is a rotational tournament; otherwise each
 * node takes offsets 1, 2, 4, ... around the ring of sorted ids, skipping an
 * offset whose mirror (n - o) is taken.
 */
size_t node_graph_plan(const uint32_t *ids, size_t n, int k, struct node_edge *edges, size_t max)
{
    if (n < 2 || k < 1)
        return 0;
    uint32_t *v = xmalloc(n * sizeof *v);
    memcpy(v, ids, n * sizeof *v);
    qsort(v, n, sizeof *v, base_cmp_u32);
    bool *used = xcalloc(n, sizeof *used);
    if (n - 1 <= 2 * (size_t)k) {
        for (size_t o = 1; o <= (n - 1) / 2; o++)
            used[o] = true;
    } else {
        size_t off = 1;
        for (int j = 0; j < k; j++) {
            size_t o = off % n;
            while (o == 0 || used[o] || used[n - o] || 2 * o == n)
                o = (o + 1) % n;
            used[o] = true;
            off *= 2;
        }
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t o = 1; o < n; o++) {
            /* For even n the diameter is one pair per two nodes: only the first half owns it. */
            bool take = used[o] || (2 * o == n && n - 1 <= 2 * (size_t)k && i < n / 2);
            if (take && m < max)
                edges[m++] = (struct node_edge){v[i], v[(i + o) % n]};
        }
    }
    free(used);
    free(v);
    return m;
}

size_t node_graph_peers(const struct node_edge *edges, size_t nedges, uint32_t self,
                        uint32_t *peers, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < nedges; i++) {
        uint32_t other;
        if (edges[i].src == self)
            other = edges[i].dst;
        else if (edges[i].dst == self)
            other = edges[i].src;
        else
            continue;
        bool seen = false;
        for (size_t j = 0; j < n; j++)
            seen |= peers[j] == other;
        if (!seen && n < max)
            peers[n++] = other;
    }
    return n;
}
