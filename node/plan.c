/* The probe plan as it travels in `plan` messages (docs/PROTOCOL.md). */
#include "node/node_int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void node_plan_free(struct node_plan *plan)
{
    if (plan == NULL)
        return;
    free(plan->nodes);
    free(plan->edges);
    memset(plan, 0, sizeof *plan);
}

void node_plan_to_json(const struct node_plan *plan, json_object *hdr)
{
    assert(plan && hdr);
    json_object_object_add(hdr, "epoch", json_object_new_int64(plan->epoch));
    json_object_object_add(hdr, "ref", json_object_new_int64(plan->ref));
    json_object *nodes = json_object_new_array();
    for (size_t i = 0; i < plan->nnodes; i++) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "node", json_object_new_int64(plan->nodes[i].id));
        json_object_object_add(o, "host", json_object_new_string(plan->nodes[i].host));
        json_object_object_add(o, "probe_addr", json_object_new_string(plan->nodes[i].addr));
        json_object_array_add(nodes, o);
    }
    json_object_object_add(hdr, "nodes", nodes);
    json_object *edges = json_object_new_array();
    for (size_t i = 0; i < plan->nedges; i++) {
        json_object *e = json_object_new_array();
        json_object_array_add(e, json_object_new_int64(plan->edges[i].src));
        json_object_array_add(e, json_object_new_int64(plan->edges[i].dst));
        json_object_array_add(edges, e);
    }
    json_object_object_add(hdr, "edges", edges);
}

static enum base_dec get_id(json_object *v, uint32_t *out)
{
    if (!json_object_is_type(v, json_type_int))
        return BASE_DEC_BAD_TYPE;
    int64_t x = json_object_get_int64(v);
    if (x < 0 || x > 65535)
        return BASE_DEC_BAD_VALUE;
    *out = (uint32_t)x;
    return BASE_DEC_OK;
}

enum base_dec node_plan_from_json(json_object *hdr, struct node_plan *plan, char *err)
{
    memset(plan, 0, sizeof *plan);
    int64_t epoch, ref;
    enum base_dec rc;
    if ((rc = base_json_get_i64(hdr, "epoch", &epoch, err)) != BASE_DEC_OK ||
        (rc = base_json_get_i64(hdr, "ref", &ref, err)) != BASE_DEC_OK)
        return rc;
    if (ref < 0 || ref > 65535) {
        base_err(err, "plan: ref %lld out of range", (long long)ref);
        return BASE_DEC_BAD_VALUE;
    }
    json_object *nodes, *edges;
    if (!json_object_object_get_ex(hdr, "nodes", &nodes) ||
        !json_object_is_type(nodes, json_type_array) ||
        !json_object_object_get_ex(hdr, "edges", &edges) ||
        !json_object_is_type(edges, json_type_array)) {
        base_err(err, "plan: nodes and edges must be arrays");
        return BASE_DEC_BAD_TYPE;
    }
    size_t nn = json_object_array_length(nodes), ne = json_object_array_length(edges);
    /* Every node probes at most 64 others: the edge count follows from the node count. */
    if (nn > NODE_MAX_NODES || ne > (size_t)NODE_MAX_NODES * 64) {
        base_err(err, "plan: %zu nodes and %zu edges exceed the limits", nn, ne);
        return BASE_DEC_OVERSIZED;
    }
    plan->epoch = epoch;
    plan->ref = (uint32_t)ref;
    plan->nodes = xcalloc(nn ? nn : 1, sizeof *plan->nodes);
    plan->edges = xcalloc(ne ? ne : 1, sizeof *plan->edges);
    for (size_t i = 0; i < nn; i++) {
        json_object *o = json_object_array_get_idx(nodes, i), *v;
        struct node_plan_node *pn = &plan->nodes[i];
        const char *host, *addr;
        if (!json_object_is_type(o, json_type_object) ||
            !json_object_object_get_ex(o, "node", &v) || (rc = get_id(v, &pn->id)) != BASE_DEC_OK ||
            (rc = base_json_get_str(o, "host", &host, err)) != BASE_DEC_OK ||
            (rc = base_json_get_str(o, "probe_addr", &addr, err)) != BASE_DEC_OK) {
            base_err(err, "plan: nodes[%zu] is malformed", i);
            node_plan_free(plan);
            return rc != BASE_DEC_OK ? rc : BASE_DEC_BAD_TYPE;
        }
        snprintf(pn->host, sizeof pn->host, "%s", host);
        snprintf(pn->addr, sizeof pn->addr, "%s", addr);
    }
    plan->nnodes = nn;
    for (size_t i = 0; i < ne; i++) {
        json_object *e = json_object_array_get_idx(edges, i);
        if (!json_object_is_type(e, json_type_array) || json_object_array_length(e) != 2 ||
            get_id(json_object_array_get_idx(e, 0), &plan->edges[i].src) != BASE_DEC_OK ||
            get_id(json_object_array_get_idx(e, 1), &plan->edges[i].dst) != BASE_DEC_OK) {
            base_err(err, "plan: edges[%zu] is not a [src, dst] pair of node ids", i);
            node_plan_free(plan);
            return BASE_DEC_BAD_VALUE;
        }
    }
    plan->nedges = ne;
    return BASE_DEC_OK;
}

const struct node_plan_node *node_plan_find(const struct node_plan *plan, uint32_t id)
{
    for (size_t i = 0; i < plan->nnodes; i++)
        if (plan->nodes[i].id == id)
            return &plan->nodes[i];
    return NULL;
}
