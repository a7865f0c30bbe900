/*
 * The master: hosts the hub, keeps the node table, plans the probe graph and
 * solves the time base once per window.
 *
 * Registration is a conversation on the hub's ROUTER: hello -> welcome (+
 * plan), hb -> hb (an acknowledgement that says whether the node is known,
 * so that an agent learns at once that a restarted master forgot it), bye.
 * Edge fits come back over the bus like any subscriber sees them.  A window
 * K (K·W .. (K+1)·W on each node's own probe clock) is solved as soon as
 * every planned edge between live nodes has reported, or when the master's
 * clock says the stragglers are too late; either way every live node gets a
 * node fit for every window, aligned or not.
 */
#include "node/node_int.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/bus.h"

#define PENDING_WINDOWS 8
/*
 * How far ahead of the solve an edge fit's window may be.  Fits wait in
 * the pending windows until their window is solved, so windows far ahead
 * (a node whose clock is seconds off, or a bogus window number) would hold
 * every slot and leave none for the windows about to be solved: with at
 * most PENDING_WINDOWS windows from next_k on, one is always free.
 */
#define AHEAD_WINDOWS    (PENDING_WINDOWS - 1)
#define MAX_EDGE_FITS    (NODE_MAX_NODES * 64)
#define MAX_REG_PER_TICK 256
/*
 * Re-plans at most this often: each goes to every live node, so a table
 * that changes on every tick (a flood of hellos, a thousand agents
 * registering again after a master restart) would otherwise cost a plan
 * to every node every tick.  A join waits this long for its plan at most.
 */
#define REPLAN_GAP_NS    100000000LL
#define MAX_FIT_PER_TICK 4096

struct mnode {
    uint32_t id;
    char host[NODE_HOST_LEN], version[32], instance[64], addr[NODE_ADDR_LEN];
    int64_t pid;
    bus_peer_t peer;
    bool self;
    bool up;
    bool aligned;    /* in the latest solve that saw it */
    bool ahead_said; /* its edge fits came far ahead of the solve: alerted once */
    int64_t last_mono, last_probe;
    int64_t down_mono;
};

struct pending {
    bool used;
    int64_t k;
    clock_edge_fit_t *e;
    size_t n, cap;
};

/*
 * A solved window kept while it may be refined or its slow-host bounds
 * noted again (clock_history_note_bounds): its edge fits and solve options.
 * Window K lives in slot K mod SOLVED_KEEP.
 */
#define SOLVED_KEEP ((NODE_REFINE_MAX > CLOCK_RENOTE_MAX ? NODE_REFINE_MAX : CLOCK_RENOTE_MAX) + 1)
struct solved {
    bool used;
    bool refined;
    int64_t k;
    clock_solve_opts_t so;
    clock_edge_fit_t *e;
    size_t n, cap;
};

/*
 * Relays of the bus tree report their counters here every heartbeat
 * (node/relay.c); the table goes on the bus as `relays`, so that a console
 * sees every branch, what it lost, and which went silent.  Keyed by name.
 */
#define RELAYS_MAX      256
#define RELAY_NAME_MAX  300
#define RELAY_LOG_EVERY 10000000000LL /* at most one loss line per relay this often */
struct mrelay {
    char name[RELAY_NAME_MAX], upstream[RELAY_NAME_MAX];
    bool up;
    int64_t last_mono, down_mono, loss_logged_mono;
    uint64_t up_msgs, up_dropped, down_msgs, auth_denied;
    uint64_t dropped_logged; /* up_dropped at the last loss line */
};

struct node_master {
    struct node_master_cfg cfg;
    struct mrelay *relays;
    size_t nrelays;
    bool relays_dirty;
    bus_hub_t *hub;
    bus_sub_t *sub;
    bus_pub_t *pub;
    struct mnode *nodes;
    size_t nnodes;
    uint32_t ref;
    struct node_plan plan;
    bool plan_dirty, table_dirty;
    int64_t next_k;   /* the oldest window not solved yet */
    int64_t last_now; /* the probe clock at the last solve_due */
    bool started;
    struct pending pend[PENDING_WINDOWS];
    clock_history_t *history;
    struct solved solved[SOLVED_KEEP];
    int64_t last_nodes_pub;
    int64_t last_plan_mono; /* the last re-plan (they are spaced REPLAN_GAP_NS apart) */
    int64_t full_said_mono; /* the last "node table is full" line */
    bool announced;
    struct node_master_stats st;
};

static int64_t probe_now(node_master_t *self)
{
    return self->cfg.probe_now(self->cfg.ctx);
}

static struct mnode *find_node(node_master_t *self, uint32_t id)
{
    for (size_t i = 0; i < self->nnodes; i++)
        if (self->nodes[i].id == id)
            return &self->nodes[i];
    return NULL;
}

static void mlog(node_master_t *self, enum base_log_level level, const char *fmt, ...)
    BASE_PRINTF(3, 4);

/* Log locally and on the bus (consoles show these as alerts). */
static void mlog(node_master_t *self, enum base_log_level level, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    base_log(level, "master", "%s", line);
    if (self->pub == NULL)
        return;
    bus_msg_t *m = node_log_msg(self->cfg.self_id, level, "master", line, probe_now(self));
    bus_pub_send(self->pub, m, NULL);
    bus_msg_destroy(&m);
}

/* ---- set-up ------------------------------------------------------------ */

/* A subscriber endpoint on this host for an endpoint the hub bound. */
static void local_endpoint(const char *bound, char *out, size_t len)
{
    const char *wild[] = {"tcp://0.0.0.0:", "tcp://[::]:", "tcp://*:"};
    const char *local[] = {"tcp://127.0.0.1:", "tcp://[::1]:", "tcp://127.0.0.1:"};
    for (size_t i = 0; i < BASE_ARRAY_LEN(wild); i++) {
        size_t wl = strlen(wild[i]);
        if (strncmp(bound, wild[i], wl) == 0) {
            snprintf(out, len, "%s%s", local[i], bound + wl);
            return;
        }
    }
    snprintf(out, len, "%s", bound);
}

node_master_t *node_master_new(const struct node_master_cfg *cfg, char *err)
{
    node_master_t *self = xcalloc(1, sizeof *self);
    self->cfg = *cfg;
    self->nodes = xcalloc(NODE_MAX_NODES, sizeof *self->nodes);
    self->relays = xcalloc(RELAYS_MAX, sizeof *self->relays);
    self->history = clock_history_new(30, NODE_MAX_NODES);
    struct bus_endpoints ep;
    if (bus_endpoints_derive(cfg->listen, &ep, err) != BASE_OK)
        goto err;
    struct bus_hub_opts ho = {.reg_endpoint = ep.reg,
                              .pub_endpoint = ep.pub,
                              .sub_endpoint = ep.sub,
                              .node = (int)cfg->self_id,
                              .curve = cfg->server_curve};
    self->hub = bus_hub_new(&ho, err);
    if (self->hub == NULL)
        goto err;
    char subep[300];
    local_endpoint(bus_hub_endpoint(self->hub, BUS_HUB_SUB), subep, sizeof subep);
    static const char *const prefixes[] = {"dp1.edge_fit.", NULL};
    struct bus_sub_opts so = {.endpoint = subep, .prefixes = prefixes, .curve = cfg->client_curve};
    self->sub = bus_sub_new(&so, err);
    if (self->sub == NULL)
        goto err;
    /* The master is node self_id, up from the start. */
    struct mnode *me = &self->nodes[self->nnodes++];
    me->id = cfg->self_id;
    me->self = true;
    me->up = true;
    me->pid = cfg->pid;
    snprintf(me->host, sizeof me->host, "%s", cfg->host);
    snprintf(me->version, sizeof me->version, "%s", cfg->version);
    snprintf(me->instance, sizeof me->instance, "%s", cfg->instance);
    snprintf(me->addr, sizeof me->addr, "%s", cfg->probe_addr);
    me->last_mono = base_monotonic_ns();
    self->ref = cfg->ref >= 0 ? (uint32_t)cfg->ref : cfg->self_id;
    self->plan_dirty = true;
    self->table_dirty = true;
    return self;
err:
    node_master_destroy(&self);
    return NULL;
}

void node_master_destroy(node_master_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    node_master_t *self = *self_p;
    bus_sub_destroy(&self->sub);
    bus_hub_destroy(&self->hub);
    for (int i = 0; i < PENDING_WINDOWS; i++)
        free(self->pend[i].e);
    for (int i = 0; i < SOLVED_KEEP; i++)
        free(self->solved[i].e);
    clock_history_destroy(&self->history);
    node_plan_free(&self->plan);
    free(self->nodes);
    free(self->relays);
    free(self);
    *self_p = NULL;
}

bus_hub_t *node_master_hub(node_master_t *self)
{
    assert(self);
    return self->hub;
}

void node_master_set_pub(node_master_t *self, bus_pub_t *pub)
{
    assert(self);
    self->pub = pub;
}

void node_master_stats(const node_master_t *self, struct node_master_stats *out)
{
    assert(self);
    *out = self->st;
    out->history_ignored = clock_history_ignored(self->history);
}

void node_master_counts(const node_master_t *self, size_t *up, size_t *known)
{
    assert(self);
    size_t u = 0;
    for (size_t i = 0; i < self->nnodes; i++)
        u += self->nodes[i].up;
    *up = u;
    *known = self->nnodes;
}

/* ---- plan ---------------------------------------------------------------- */

/* The reference: the configured one while it is up, else the master. */
static uint32_t current_ref(node_master_t *self)
{
    if (self->cfg.ref >= 0) {
        struct mnode *r = find_node(self, (uint32_t)self->cfg.ref);
        if (r && r->up)
            return (uint32_t)self->cfg.ref;
    }
    return self->cfg.self_id;
}

static void make_plan(node_master_t *self)
{
    uint32_t *ids = xcalloc(self->nnodes ? self->nnodes : 1, sizeof *ids);
    size_t n = 0;
    for (size_t i = 0; i < self->nnodes; i++)
        if (self->nodes[i].up)
            ids[n++] = self->nodes[i].id;
    qsort(ids, n, sizeof *ids, base_cmp_u32);
    int64_t epoch = self->plan.epoch + 1;
    node_plan_free(&self->plan);
    self->plan.epoch = epoch;
    self->ref = current_ref(self);
    self->plan.ref = self->ref;
    self->plan.nnodes = n;
    self->plan.nodes = xcalloc(n ? n : 1, sizeof *self->plan.nodes);
    for (size_t i = 0; i < n; i++) {
        const struct mnode *m = find_node(self, ids[i]);
        struct node_plan_node *pn = &self->plan.nodes[i];
        pn->id = m->id;
        snprintf(pn->host, sizeof pn->host, "%s", m->host);
        snprintf(pn->addr, sizeof pn->addr, "%s", m->addr);
    }
    size_t max = n * (size_t)self->cfg.k + n * n / 2 + 1;
    self->plan.edges = xcalloc(max, sizeof *self->plan.edges);
    self->plan.nedges = node_graph_plan(ids, n, self->cfg.k, self->plan.edges, max);
    free(ids);
}

static bus_msg_t *plan_msg(node_master_t *self)
{
    bus_msg_t *m = bus_msg_new(BUS_K_PLAN);
    node_plan_to_json(&self->plan, bus_msg_header(m));
    return m;
}

/* Re-plan and tell everyone: the live agents over the ROUTER (reliable,
 * in order with their welcome), consoles over the bus, the master's own
 * prober through the callback. */
static void replan(node_master_t *self)
{
    make_plan(self);
    self->st.plans++;
    self->plan_dirty = false;
    self->last_plan_mono = base_monotonic_ns();
    self->table_dirty = true;
    mlog(self, BASE_LOG_INFO, "plan epoch %" PRId64 ": %zu nodes, %zu edges, reference %u",
         self->plan.epoch, self->plan.nnodes, self->plan.nedges, self->ref);
    char err[BASE_ERRLEN];
    for (size_t i = 0; i < self->nnodes; i++) {
        struct mnode *m = &self->nodes[i];
        if (!m->up || m->self)
            continue;
        bus_msg_t *msg = plan_msg(self);
        if (bus_hub_send(self->hub, &m->peer, msg, err) != BASE_OK)
            base_log(BASE_LOG_WARN, "master", "plan to node %u: %s", m->id, err);
        bus_msg_destroy(&msg);
    }
    if (self->pub) {
        bus_msg_t *msg = plan_msg(self);
        bus_pub_send(self->pub, msg, NULL);
        bus_msg_destroy(&msg);
    }
    if (self->cfg.on_plan)
        self->cfg.on_plan(self->cfg.ctx, &self->plan);
}

static void publish_nodes(node_master_t *self)
{
    if (self->pub == NULL)
        return;
    bus_msg_t *m = bus_msg_new(BUS_K_NODES);
    json_object *h = bus_msg_header(m);
    json_object_object_add(h, "epoch", json_object_new_int64(self->plan.epoch));
    json_object_object_add(h, "ref", json_object_new_int64(self->ref));
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < self->nnodes; i++) {
        const struct mnode *n = &self->nodes[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "node", json_object_new_int64(n->id));
        json_object_object_add(o, "host", json_object_new_string(n->host));
        const char *state = !n->up                               ? "down"
                            : (n->aligned || n->id == self->ref) ? "up"
                                                                 : "unaligned";
        json_object_object_add(o, "state", json_object_new_string(state));
        json_object_object_add(o, "last_seen_ns", json_object_new_int64(n->last_probe));
        json_object_object_add(o, "pid", json_object_new_int64(n->pid));
        json_object_object_add(o, "probe_addr", json_object_new_string(n->addr));
        json_object_object_add(o, "version", json_object_new_string(n->version));
        json_object_object_add(o, "master", json_object_new_boolean(n->self));
        json_object_array_add(arr, o);
    }
    json_object_object_add(h, "nodes", arr);
    bus_pub_send(self->pub, m, NULL);
    bus_msg_destroy(&m);
    self->table_dirty = false;
    self->last_nodes_pub = base_monotonic_ns();
}

/* ---- registration ------------------------------------------------------- */

static void send_welcome(node_master_t *self, const struct mnode *n)
{
    bus_msg_t *m = bus_msg_new(BUS_K_WELCOME);
    bus_msg_set_i64(m, "node", n->id);
    bus_msg_set_i64(m, "ref", self->ref);
    bus_msg_set_i64(m, "epoch", self->plan.epoch);
    bus_msg_set_str(m, "instance", n->instance);
    bus_msg_set_double(m, "window_s", (double)self->cfg.window_ns / 1e9);
    bus_msg_set_i64(m, "cadence_us", self->cfg.cadence_ns / 1000);
    bus_msg_set_i64(m, "spacing_us", self->cfg.spacing_ns / 1000);
    bus_msg_set_i64(m, "snapshot_period_ms", self->cfg.snapshot_ns / 1000000);
    bus_msg_set_i64(m, "hb_period_ms", self->cfg.hb_ns / 1000000);
    bus_msg_set_i64(m, "status_period_ms", self->cfg.status_ns / 1000000);
    bus_msg_set_i64(m, "k", self->cfg.k);
    /* The cluster's probe key: to this node's connection only, never published. */
    if (self->cfg.probe_key)
        bus_msg_set_str(m, "probe_key", self->cfg.probe_key);
    char err[BASE_ERRLEN];
    if (bus_hub_send(self->hub, &n->peer, m, err) != BASE_OK)
        base_log(BASE_LOG_WARN, "master", "welcome to node %u: %s", n->id, err);
    else
        self->st.welcomes++;
    bus_msg_destroy(&m);
}

/* Whether `peer` is the connection that registered n (its hello's). */
static bool node_peer_is(const struct mnode *n, const bus_peer_t *peer)
{
    return n->peer.len == peer->len && memcmp(n->peer.id, peer->id, peer->len) == 0;
}

/* The id a hello gets, or -1 when the table is full. */
static int64_t choose_id(node_master_t *self, const char *instance, const char *host, int64_t req)
{
    for (size_t i = 0; i < self->nnodes; i++)
        if (!self->nodes[i].self && *instance && strcmp(self->nodes[i].instance, instance) == 0)
            return self->nodes[i].id;
    if (req >= 0) {
        struct mnode *n = find_node(self, (uint32_t)req);
        /* A down node's id is free again; a live one on the same host that
         * missed its last two heartbeats is the same agent restarted (its
         * old process was killed).  One that still beats is another agent:
         * one late heartbeat is not enough, or anyone who knows a node's
         * host could take its row by timing a hello. */
        bool stale = n != NULL && base_monotonic_ns() - n->last_mono > 2 * self->cfg.hb_ns;
        if (n == NULL && self->nnodes >= NODE_MAX_NODES)
            return -1;
        if (n == NULL || (!n->self && (!n->up || (stale && strcmp(n->host, host) == 0))))
            return req;
    }
    /*
     * A restarted agent (a new instance) on a host with a down row takes
     * that row's id, so that agents restarted without --node-id do not
     * leave a down row each until they are forgotten (ten minutes).
     */
    const struct mnode *oldest = NULL;
    for (size_t i = 0; i < self->nnodes; i++) {
        const struct mnode *n = &self->nodes[i];
        if (n->self || n->up)
            continue;
        if (strcmp(n->host, host) == 0)
            return n->id;
        if (oldest == NULL || n->down_mono < oldest->down_mono)
            oldest = n;
    }
    if (self->nnodes < NODE_MAX_NODES)
        for (uint32_t id = 1; id <= BUS_NODE_MAX; id++)
            if (find_node(self, id) == NULL)
                return (int64_t)id;
    /* Full: the node down the longest gives up its row. */
    return oldest ? (int64_t)oldest->id : -1;
}

static void on_hello(node_master_t *self, const bus_peer_t *peer, bus_msg_t *msg)
{
    json_object *h = bus_msg_header(msg);
    const char *host = "?", *version = "?", *instance = "", *addr;
    int64_t pid = 0, req = -1;
    char err[BASE_ERRLEN];
    self->st.hellos++;
    /* The hub validated the schema; these are present and typed. */
    base_json_get_str(h, "host", &host, NULL);
    base_json_get_str(h, "version", &version, NULL);
    base_json_get_i64(h, "pid", &pid, NULL);
    base_json_opt_str(h, "instance", &instance, NULL);
    base_json_opt_i64(h, "req_node", &req, NULL);
    if (base_json_get_str(h, "probe_addr", &addr, err) != BASE_DEC_OK) {
        base_decstats_add(&self->st.dec, BASE_DEC_BAD_TYPE);
        return;
    }
    struct sockaddr_storage sa;
    socklen_t salen;
    if (node_parse_addr(addr, &sa, &salen, err) != BASE_OK) {
        base_decstats_add(&self->st.dec, BASE_DEC_BAD_VALUE);
        mlog(self, BASE_LOG_WARN, "hello from %s refused: probe_addr: %s", host, err);
        return;
    }
    int64_t id = choose_id(self, instance, host, req);
    if (id < 0) {
        /* Every row up: said once, then at most every 10 s with the count. */
        int64_t now = base_monotonic_ns();
        if (self->st.table_full++ == 0 || now - self->full_said_mono >= 10000000000LL) {
            mlog(self, BASE_LOG_WARN,
                 "hello from %s refused: the node table is full (%d nodes up; %" PRIu64
                 " hellos refused so far)",
                 host, NODE_MAX_NODES, self->st.table_full);
            self->full_said_mono = now;
        }
        return;
    }
    struct mnode *n = find_node(self, (uint32_t)id);
    bool changed = false;
    if (n == NULL) {
        n = &self->nodes[self->nnodes++];
        memset(n, 0, sizeof *n);
        n->id = (uint32_t)id;
        changed = true;
    }
    if (!n->up || strcmp(n->addr, addr) != 0 || strcmp(n->instance, instance) != 0)
        changed = true;
    if (strcmp(n->instance, instance) != 0) {
        /*
         * Another agent under this id (a restart, or another host taking a
         * down node's id): what the history learnt of the old one's clock
         * and paths (its maps, its edges' margin levels) is not this one's.
         */
        n->aligned = false;
        n->ahead_said = false;
        clock_history_forget(self->history, n->id);
    }
    snprintf(n->host, sizeof n->host, "%s", host);
    snprintf(n->version, sizeof n->version, "%s", version);
    snprintf(n->instance, sizeof n->instance, "%s", instance);
    snprintf(n->addr, sizeof n->addr, "%s", addr);
    n->pid = pid;
    n->peer = *peer;
    n->up = true;
    n->last_mono = base_monotonic_ns();
    n->last_probe = probe_now(self);
    if (changed)
        mlog(self, BASE_LOG_INFO, "node %u joined: %s pid %" PRId64 " probe %s", n->id, host, pid,
             addr);
    self->table_dirty = true;
    /*
     * Welcome first: the plan that follows on the same connection names the
     * node.  A changed table is re-planned once, at the end of the tick
     * (plan_dirty), however many hellos the tick read: a re-plan goes to
     * every live node, so one per hello made a flood of hellos (or a whole
     * cluster registering again after a master restart) quadratic.
     */
    send_welcome(self, n);
    if (changed) {
        self->plan_dirty = true;
    } else {
        bus_msg_t *pm = plan_msg(self);
        if (bus_hub_send(self->hub, &n->peer, pm, err) != BASE_OK)
            base_log(BASE_LOG_WARN, "master", "plan to node %u: %s", n->id, err);
        bus_msg_destroy(&pm);
    }
}

static void on_hb(node_master_t *self, const bus_peer_t *peer, bus_msg_t *msg)
{
    int64_t id = bus_msg_node(msg);
    self->st.hbs++;
    struct mnode *n = id >= 0 ? find_node(self, (uint32_t)id) : NULL;
    /* The id must also be this connection's: after a takeover (or a
     * reconnection) the other holder is told to register again. */
    bool known = n != NULL && !n->self && node_peer_is(n, peer);
    if (known) {
        n->last_mono = base_monotonic_ns();
        n->last_probe = probe_now(self);
        if (!n->up) {
            n->up = true;
            mlog(self, BASE_LOG_INFO, "node %u is back", n->id);
            self->plan_dirty = true;
        }
    } else {
        self->st.unknown_hb++;
    }
    bus_msg_t *m = bus_msg_new(BUS_K_HB);
    bus_msg_set_i64(m, "node", self->cfg.self_id);
    bus_msg_set_i64(m, "t_ns", probe_now(self));
    bus_msg_set_i64(m, "epoch", self->plan.epoch);
    bus_msg_set_bool(m, "known", known);
    bus_msg_set_i64(m, "ack_node", id);
    char err[BASE_ERRLEN];
    if (bus_hub_send(self->hub, peer, m, err) != BASE_OK)
        base_log(BASE_LOG_WARN, "master", "hb reply: %s", err);
    bus_msg_destroy(&m);
}

static void mark_down(node_master_t *self, struct mnode *n, const char *why)
{
    if (!n->up || n->self)
        return;
    n->up = false;
    n->aligned = false;
    n->down_mono = base_monotonic_ns();
    self->st.marked_down++;
    self->plan_dirty = true;
    self->table_dirty = true;
    mlog(self, BASE_LOG_WARN, "node %u (%s) is down: %s", n->id, n->host, why);
}

/*
 * A bye counts only from the node's own connection, as a heartbeat does:
 * the id in a registration message is anyone's to write, and a forged bye
 * would mark a live node down and re-plan the cluster around it.
 */
static void on_bye(node_master_t *self, const bus_peer_t *peer, bus_msg_t *msg)
{
    int64_t id = bus_msg_node(msg);
    self->st.byes++;
    struct mnode *n = id >= 0 ? find_node(self, (uint32_t)id) : NULL;
    if (n == NULL || n->self || !node_peer_is(n, peer)) {
        self->st.byes_refused++;
        return;
    }
    mark_down(self, n, "it said bye");
}

/* ---- edge fits and the solve -------------------------------------------- */

/* Window k's pending fits (k within AHEAD_WINDOWS of next_k: a slot is free). */
static struct pending *pending_for(node_master_t *self, int64_t k)
{
    struct pending *freep = NULL;
    for (int i = 0; i < PENDING_WINDOWS; i++) {
        struct pending *p = &self->pend[i];
        if (p->used && p->k == k)
            return p;
        if (!p->used && freep == NULL)
            freep = p;
    }
    if (freep == NULL)
        return NULL;
    freep->used = true;
    freep->k = k;
    freep->n = 0;
    return freep;
}

/* Pending windows older than the solve point are stale: counted late. */
static void drop_stale(node_master_t *self)
{
    for (int i = 0; i < PENDING_WINDOWS; i++) {
        struct pending *p = &self->pend[i];
        if (p->used && p->k < self->next_k) {
            self->st.edge_fits_late += p->n;
            p->used = false;
            p->n = 0;
        }
    }
}

/*
 * Where the solve stands at `now`: it starts at the current window, and
 * after a long stall (the master not ticking) it skips to the last
 * PENDING_WINDOWS windows rather than solve a backlog of empty ones.  Run
 * before a tick's edge fits too, so that after a stall the windows that
 * just closed are not taken for windows far ahead.
 */
static void solve_catch_up(node_master_t *self, int64_t now)
{
    int64_t cur = node_window_of(now, self->cfg.window_ns);
    if (!self->started) {
        self->next_k = cur;
        self->started = true;
    }
    if (cur - self->next_k > PENDING_WINDOWS) {
        self->next_k = cur - PENDING_WINDOWS;
        drop_stale(self);
    }
}

static void add_edge_fit(node_master_t *self, const clock_edge_fit_t *f)
{
    if (f->window < self->next_k) {
        self->st.edge_fits_late++;
        return;
    }
    if (f->window - self->next_k > AHEAD_WINDOWS) {
        self->st.edge_fits_ahead++;
        struct mnode *n = find_node(self, f->src);
        if (n && !n->ahead_said) {
            n->ahead_said = true;
            mlog(self, BASE_LOG_WARN,
                 "node %u: edge fit for window %" PRId64 ", %" PRId64
                 " windows ahead of the solve (its clock is off?): refused, and counted "
                 "(edge_fits_ahead)",
                 f->src, f->window, f->window - self->next_k);
        }
        return;
    }
    /*
     * Only edges between nodes the master knows are solved (the solve
     * would drop it; kept, junk ids could fill the windows).  Not lost
     * either: after a master restart, fits to peers that have not
     * registered again yet come in for a moment.
     */
    if (find_node(self, f->dst) == NULL) {
        self->st.edge_fits_unknown++;
        return;
    }
    struct pending *p = pending_for(self, f->window);
    if (p == NULL) {
        self->st.edge_fits_dropped++;
        return;
    }
    /*
     * One fit per edge and window, whichever end fitted it: after a new
     * plan hands an edge to its other end, the two ends can send the same
     * window's fit of the same probes, and both would make a false loop.
     */
    for (size_t i = 0; i < p->n; i++) {
        clock_edge_fit_t *e = &p->e[i];
        if (e->src == f->src && e->dst == f->dst) {
            *e = *f; /* the same end again: its newer fit */
            self->st.edge_fits_replaced++;
            return;
        }
        if (e->src == f->dst && e->dst == f->src) {
            /* The other end, which took the edge over mid-window: the fit of more probes. */
            if ((uint64_t)f->n_fwd + f->n_rev > (uint64_t)e->n_fwd + e->n_rev)
                *e = *f;
            self->st.edge_fits_replaced++;
            return;
        }
    }
    if (p->n == p->cap) {
        if (p->cap >= MAX_EDGE_FITS) {
            self->st.edge_fits_dropped++;
            return;
        }
        p->cap = p->cap ? p->cap * 2 : 64;
        p->e = xreallocarray(p->e, p->cap, sizeof *p->e);
    }
    p->e[p->n++] = *f;
    self->st.edge_fits++;
}

static void on_edge_fit(node_master_t *self, bus_msg_t *msg)
{
    clock_record_t rec;
    char err[BASE_ERRLEN];
    enum base_dec rc = clock_json_decode(bus_msg_header(msg), &rec, err);
    if (rc == BASE_DEC_OK && rec.type != CLOCK_REC_EDGE_FIT)
        rc = BASE_DEC_BAD_TYPE;
    /* A node fits only its own edges. */
    if (rc == BASE_DEC_OK && (int64_t)rec.u.edge.src != bus_msg_node(msg))
        rc = BASE_DEC_BAD_VALUE;
    base_decstats_add(&self->st.dec, rc);
    if (rc != BASE_DEC_OK) {
        self->st.edge_fits_bad++;
        return;
    }
    add_edge_fit(self, &rec.u.edge);
}

static bool has_edge(const struct pending *p, uint32_t a, uint32_t b)
{
    for (size_t i = 0; i < p->n; i++)
        if ((p->e[i].src == a && p->e[i].dst == b) || (p->e[i].src == b && p->e[i].dst == a))
            return true;
    return false;
}

/* Every planned edge between live nodes has reported for this window. */
static bool window_complete(node_master_t *self, const struct pending *p)
{
    size_t expected = 0;
    for (size_t i = 0; i < self->plan.nedges; i++) {
        const struct node_edge *e = &self->plan.edges[i];
        struct mnode *a = find_node(self, e->src), *b = find_node(self, e->dst);
        if (!a || !b || !a->up || !b->up)
            continue;
        expected++;
        if (!has_edge(p, e->src, e->dst))
            return false;
    }
    return expected > 0;
}

static void publish_node_fit(node_master_t *self, const clock_node_fit_t *f)
{
    json_object *o = clock_json_node_fit(f);
    bus_msg_t *m = bus_msg_new(BUS_K_NODE_FIT);
    json_object *h = bus_msg_header(m);
    json_object_object_foreach(o, key, val)
    {
        if (strcmp(key, "type") != 0)
            json_object_object_add(h, key, json_object_get(val));
    }
    json_object_put(o);
    if (bus_pub_send(self->pub, m, NULL) == BASE_OK)
        self->st.node_fits++;
    bus_msg_destroy(&m);
}

static struct solved *solved_slot(node_master_t *self, int64_t k)
{
    int64_t m = SOLVED_KEEP;
    return &self->solved[((k % m) + m) % m];
}

/* Window k as solved, NULL when it was not (no edges, a failed solve, a stall). */
static struct solved *solved_window(node_master_t *self, int64_t k)
{
    struct solved *s = solved_slot(self, k);
    return s->used && s->k == k ? s : NULL;
}

/* Keep window k's edge fits for its refinement and its bounds. */
static void keep_solved(node_master_t *self, int64_t k, const clock_solve_opts_t *so,
                        const clock_edge_fit_t *e, size_t n)
{
    struct solved *s = solved_slot(self, k);
    if (n > s->cap) {
        s->e = xreallocarray(s->e, n, sizeof *s->e);
        s->cap = n;
    }
    memcpy(s->e, e, n * sizeof *e);
    s->n = n;
    s->so = *so;
    s->k = k;
    s->used = true;
    s->refined = false;
}

/*
 * The slow-host bounds of earlier windows, with the margin levels the
 * history has now that window k is in: a window solved before its edges
 * had levels (a master's first windows, or levels from windows a host was
 * slow in all along) would otherwise carry its bias into later maps'
 * pools unbounded.  Windows k − 1, k − 2, k − 4, … k − CLOCK_RENOTE_MAX:
 * a window j is noted again at k = j + 1, j + 2, j + 4, …, with levels
 * that have grown since by as many windows.
 */
static void renote_windows(node_master_t *self, int64_t k)
{
    int64_t d;
    for (size_t i = 0; (d = clock_history_renote_lag(i)) > 0; i++) {
        if (d == self->cfg.refine_lag)
            continue; /* refine_window solves it next and keeps its bounds */
        struct solved *s = solved_window(self, k - d);
        char err[BASE_ERRLEN];
        if (s == NULL || s->so.ref != self->ref)
            continue;
        if (clock_history_note_bounds(self->history, s->e, s->n, &s->so, err) != BASE_OK) {
            self->st.refine_errors++;
            base_log(BASE_LOG_WARN, "master", "window %" PRId64 ": bounds not noted: %s", k - d,
                     err);
        }
    }
}

/*
 * Solve window k again now that the history holds the windows after it (a
 * fixed-lag smoother: the pooling sees both sides, as an offline fit does)
 * and publish the refined maps with their lag.  The edges, and so which
 * nodes are aligned, are the same as in the first solve: only the maps of
 * aligned nodes other than the reference are sent again.
 */
static void refine_window(node_master_t *self, int64_t k, uint32_t lag)
{
    struct solved *s = solved_window(self, k);
    if (s == NULL || s->refined)
        return;
    s->refined = true;
    /* A new reference since: the history forgot the old one's maps, and a
     * map onto the old reference would switch every consumer back to it. */
    if (s->so.ref != self->ref)
        return;
    clock_node_fit_t *fits = NULL;
    size_t nfits = 0;
    clock_solve_stats_t st;
    char err[BASE_ERRLEN];
    if (clock_solve(s->e, s->n, &s->so, &fits, &nfits, &st, err) != BASE_OK) {
        self->st.refine_errors++;
        base_log(BASE_LOG_WARN, "master", "window %" PRId64 ": refinement failed: %s", k, err);
        return;
    }
    self->st.refines++;
    clock_history_keep_bounds(self->history, fits, nfits);
    for (size_t i = 0; i < nfits && self->pub; i++) {
        if (!fits[i].aligned || fits[i].node == s->so.ref)
            continue;
        fits[i].lag = lag;
        publish_node_fit(self, &fits[i]);
    }
    free(fits);
}

/*
 * Clock steps the agents' fits found in window k: one alert for the window.
 * The solve leaves those edges out (a node joined by no other edge is
 * unaligned for the window); the node every step edge shares is the one
 * whose clock jumped, and each edge saw the jump as dst − src.
 */
static void report_steps(node_master_t *self, int64_t k, const clock_edge_fit_t *e, size_t n)
{
    char line[400];
    size_t off = 0, nstep = 0;
    for (size_t i = 0; i < n && off < sizeof line; i++) {
        if (!e[i].step)
            continue;
        off += (size_t)snprintf(line + off, sizeof line - off, "%s%u→%u %+.0f ns",
                                nstep ? ", " : "", e[i].src, e[i].dst, e[i].step_ns);
        nstep++;
    }
    if (nstep > 0)
        mlog(self, BASE_LOG_WARN,
             "window %" PRId64 ": a clock step on %zu edge(s) (%s), left out of the solve", k,
             nstep, line);
}

/*
 * Clock steps between window k − 1 and k (clock_steps_between): a step the
 * edge fits of neither window saw, at their boundary.  Said once, counted,
 * and pooling is cut there; otherwise the new offsets would be taken for a
 * disturbed window and the node's uncertainty widened to the step.
 */
static void cut_steps_between(node_master_t *self, int64_t k, const clock_edge_fit_t *e, size_t n)
{
    const struct solved *s = solved_window(self, k - 1);
    if (s == NULL || s->so.ref != self->ref)
        return;
    clock_step_between_t *st = xmalloc((self->nnodes + 1) * sizeof *st);
    size_t ns = clock_steps_between(s->e, s->n, e, n, st, self->nnodes + 1);
    char line[400];
    size_t off = 0;
    for (size_t i = 0; i < ns; i++) {
        clock_history_cut(self->history, st[i].node, self->ref, k);
        self->st.steps_between++;
        if (off < sizeof line)
            off += (size_t)snprintf(line + off, sizeof line - off, "%snode %u %+.0f ns (%u edges)",
                                    i ? ", " : "", st[i].node, st[i].step_ns, st[i].edges);
    }
    if (ns > 0)
        mlog(self, BASE_LOG_WARN,
             "window %" PRId64 ": a clock step since window %" PRId64 " (%s), not pooled across", k,
             k - 1, line);
    free(st);
}

static void solve_window(node_master_t *self, int64_t k)
{
    struct pending *p = NULL;
    for (int i = 0; i < PENDING_WINDOWS; i++)
        if (self->pend[i].used && self->pend[i].k == k)
            p = &self->pend[i];
    int64_t w = self->cfg.window_ns;
    clock_solve_opts_t so;
    clock_solve_opts_default(&so);
    so.ref = self->ref;
    so.from_ns = k * w;
    so.to_ns = so.from_ns + w;
    so.at_ns = so.from_ns + w / 2;
    so.history = self->history;
    so.stamp_asym_ns = self->cfg.stamp_asym_ns;
    so.margin_z = self->cfg.margin_z;

    clock_node_fit_t *fits = NULL;
    size_t nfits = 0;
    clock_solve_stats_t st;
    memset(&st, 0, sizeof st);
    char err[BASE_ERRLEN];
    bool fed = false;
    /* Only edges between live nodes count. */
    size_t n = 0;
    if (p) {
        for (size_t i = 0; i < p->n; i++) {
            struct mnode *a = find_node(self, p->e[i].src), *b = find_node(self, p->e[i].dst);
            if (a && b && a->up && b->up)
                p->e[n++] = p->e[i];
        }
    }
    if (n > 0) {
        report_steps(self, k, p->e, n);
        cut_steps_between(self, k, p->e, n);
        if (clock_solve(p->e, n, &so, &fits, &nfits, &st, err) != BASE_OK) {
            self->st.solve_errors++;
            base_log(BASE_LOG_WARN, "master", "window %" PRId64 ": solve failed: %s", k, err);
            fits = NULL;
            nfits = 0;
        } else {
            self->st.solves++;
            clock_history_add(self->history, fits, nfits, p->e, n, &st);
            fed = true;
            keep_solved(self, k, &so, p->e, n);
        }
    }
    bool changed = false;
    json_object *unaligned = json_object_new_array();
    for (size_t i = 0; i < self->nnodes; i++) {
        struct mnode *m = &self->nodes[i];
        const clock_node_fit_t *f = NULL;
        for (size_t j = 0; m->up && j < nfits; j++)
            if (fits[j].node == m->id)
                f = &fits[j];
        clock_node_fit_t own;
        if (f == NULL) {
            /*
             * Not seen by the solve: the reference maps onto itself, anyone
             * else is cut off this window, a break in its track for the
             * history (a host that is down or lost its edges may have had
             * its clock stepped meanwhile).
             */
            clock_node_fit_init(&own, k, m->id, self->ref);
            own.anchor_ns = so.at_ns;
            own.from_ns = so.from_ns;
            own.to_ns = so.to_ns;
            own.aligned = m->id == self->ref;
            f = &own;
            clock_history_add(self->history, &own, 1, NULL, 0, NULL);
        }
        if (!m->up)
            continue;
        if (self->pub)
            publish_node_fit(self, f);
        if (!f->aligned)
            json_object_array_add(unaligned, json_object_new_int64(m->id));
        if (m->aligned != f->aligned) {
            m->aligned = f->aligned;
            changed = true;
        }
    }
    if (self->pub) {
        bus_msg_t *m = bus_msg_new(BUS_K_SOLVE);
        json_object *h = bus_msg_header(m);
        json_object_object_add(h, "window", json_object_new_int64(k));
        json_object_object_add(h, "ref", json_object_new_int64(self->ref));
        json_object *res = json_object_new_array();
        for (size_t i = 0; i < n && fits; i++) {
            if (!isfinite(p->e[i].residual_ns))
                continue;
            json_object *o = json_object_new_object();
            json_object_object_add(o, "src", json_object_new_int64(p->e[i].src));
            json_object_object_add(o, "dst", json_object_new_int64(p->e[i].dst));
            json_object_object_add(
                o, "residual_ns", json_object_new_double(round(p->e[i].residual_ns * 1000) / 1000));
            if (p->e[i].suspect)
                json_object_object_add(o, "suspect", json_object_new_boolean(1));
            json_object_array_add(res, o);
        }
        json_object_object_add(h, "residuals", res);
        json_object_object_add(h, "unaligned", unaligned);
        json_object_object_add(h, "edges_used", json_object_new_int64(st.edges_used));
        json_object_object_add(h, "edges_skipped", json_object_new_int64(st.edges_skipped));
        json_object_object_add(h, "dof", json_object_new_int64(st.dof));
        json_object_object_add(h, "edges_suspect", json_object_new_int64(st.edges_suspect));
        if (isfinite(st.chi2))
            json_object_object_add(h, "chi2", json_object_new_double(st.chi2));
        if (isfinite(st.extra_sigma_ns))
            json_object_object_add(h, "extra_sigma_ns", json_object_new_double(st.extra_sigma_ns));
        if (isfinite(st.persist_sigma_ns))
            json_object_object_add(h, "persist_sigma_ns",
                                   json_object_new_double(st.persist_sigma_ns));
        json_object_object_add(h, "stamp_asym_ns", json_object_new_double(so.stamp_asym_ns));
        json_object_object_add(h, "delay_ns", json_object_new_double(st.delay_ns));
        json_object_object_add(h, "hosts_warming", json_object_new_int64(st.hosts_warming));
        bus_pub_send(self->pub, m, NULL);
        bus_msg_destroy(&m);
    } else {
        json_object_put(unaligned);
    }
    free(fits);
    if (p) {
        p->used = false;
        p->n = 0;
    }
    if (changed)
        self->table_dirty = true;
    /* Only a window that taught the history something refines an earlier one. */
    if (fed)
        renote_windows(self, k);
    if (fed && self->cfg.refine_lag > 0)
        refine_window(self, k - self->cfg.refine_lag, (uint32_t)self->cfg.refine_lag);
}

/* Solve every window whose fits are all in, or whose time is up. */
static void solve_due(node_master_t *self)
{
    int64_t w = self->cfg.window_ns;
    int64_t now = probe_now(self);
    solve_catch_up(self, now);
    /*
     * The master's probe clock stepped back (by more than a window): the
     * windows it already solved are not solved again, so the solve waits
     * until the clock is back where it was, and its own edges' fits come
     * late meanwhile.  Said, since nothing else would say why.
     */
    if (self->last_now - now > w) {
        self->st.clock_back++;
        mlog(self, BASE_LOG_WARN,
             "the probe clock stepped back by %.3f s: the next window is solved once it is "
             "back at window %" PRId64,
             (double)(self->last_now - now) / 1e9, self->next_k);
    }
    self->last_now = now;
    int64_t wait = w / 2 > 300000000 ? w / 2 : 300000000;
    for (;;) {
        int64_t k = self->next_k;
        int64_t deadline = (k + 1) * w + self->cfg.grace_ns + wait;
        struct pending *p = NULL;
        for (int i = 0; i < PENDING_WINDOWS; i++)
            if (self->pend[i].used && self->pend[i].k == k)
                p = &self->pend[i];
        bool complete = p != NULL && window_complete(self, p);
        if (!complete && now < deadline)
            break;
        solve_window(self, k);
        self->next_k++;
    }
    drop_stale(self);
}

/* ---- the tick ------------------------------------------------------------ */

static void check_liveness(node_master_t *self)
{
    int64_t now = base_monotonic_ns();
    /* Three heartbeats missed, with a quarter period of grace for a loaded host. */
    int64_t limit = self->cfg.hb_ns * 13 / 4;
    for (size_t i = 0; i < self->nnodes; i++) {
        struct mnode *n = &self->nodes[i];
        if (n->self) {
            n->last_mono = now;
            n->last_probe = probe_now(self);
            continue;
        }
        if (n->up && now - n->last_mono > limit) {
            char why[64];
            snprintf(why, sizeof why, "silent for %.3f s", (double)(now - n->last_mono) / 1e9);
            mark_down(self, n, why);
        }
    }
    for (size_t i = 0; i < self->nnodes;) {
        struct mnode *n = &self->nodes[i];
        if (!n->up && !n->self && now - n->down_mono > self->cfg.forget_ns) {
            base_log(BASE_LOG_INFO, "master", "node %u forgotten", n->id);
            clock_history_forget(self->history, n->id);
            self->nodes[i] = self->nodes[--self->nnodes];
            self->st.forgotten++;
            self->table_dirty = true;
            continue;
        }
        i++;
    }
}

static void on_relay(node_master_t *self, bus_msg_t *msg)
{
    json_object *h = bus_msg_header(msg);
    const char *name, *upstream;
    struct mrelay in = {0};
    /* The schema has checked them: required, of their types. */
    if (base_json_get_str(h, "name", &name, NULL) != BASE_DEC_OK ||
        base_json_get_str(h, "upstream", &upstream, NULL) != BASE_DEC_OK ||
        base_json_get_u64(h, "up_msgs", &in.up_msgs, NULL) != BASE_DEC_OK ||
        base_json_get_u64(h, "up_dropped", &in.up_dropped, NULL) != BASE_DEC_OK ||
        base_json_get_u64(h, "down_msgs", &in.down_msgs, NULL) != BASE_DEC_OK) {
        base_decstats_add(&self->st.dec, BASE_DEC_BAD_VALUE);
        return;
    }
    base_json_get_u64(h, "auth_denied", &in.auth_denied, NULL);
    int64_t now = base_monotonic_ns();
    struct mrelay *r = NULL;
    for (size_t i = 0; i < self->nrelays && r == NULL; i++)
        if (strcmp(self->relays[i].name, name) == 0)
            r = &self->relays[i];
    if (r == NULL) {
        if (self->nrelays == RELAYS_MAX) {
            if (self->st.relays_refused++ == 0)
                mlog(self, BASE_LOG_WARN, "relay %.80s: the relay table is full (%d)", name,
                     RELAYS_MAX);
            return;
        }
        r = &self->relays[self->nrelays++];
        *r = (struct mrelay){0};
        snprintf(r->name, sizeof r->name, "%s", name);
        mlog(self, BASE_LOG_INFO, "relay %s reports (upstream %s)", name, upstream);
    } else if (!r->up) {
        mlog(self, BASE_LOG_INFO, "relay %s is back", name);
    }
    self->st.relay_reports++;
    snprintf(r->upstream, sizeof r->upstream, "%s", upstream);
    /* A relay that restarted counts from 0 again. */
    if (in.up_dropped < r->dropped_logged)
        r->dropped_logged = 0;
    if (in.up_dropped > r->dropped_logged && now - r->loss_logged_mono >= RELAY_LOG_EVERY) {
        mlog(self, BASE_LOG_WARN,
             "relay %s lost %" PRIu64 " messages on their way up (its queue to %s was full: "
             "relay_hwm), %" PRIu64 " in all",
             name, in.up_dropped - r->dropped_logged, upstream, in.up_dropped);
        r->dropped_logged = in.up_dropped;
        r->loss_logged_mono = now;
    }
    self->relays_dirty |= !r->up || in.up_dropped != r->up_dropped;
    r->up = true;
    r->last_mono = now;
    r->up_msgs = in.up_msgs;
    r->up_dropped = in.up_dropped;
    r->down_msgs = in.down_msgs;
    r->auth_denied = in.auth_denied;
}

/* Relays silent for three heartbeats are down; forgotten as nodes are. */
static void check_relays(node_master_t *self, int64_t now)
{
    int64_t limit = self->cfg.hb_ns * 13 / 4;
    for (size_t i = 0; i < self->nrelays;) {
        struct mrelay *r = &self->relays[i];
        if (r->up && now - r->last_mono > limit) {
            r->up = false;
            r->down_mono = now;
            self->relays_dirty = true;
            mlog(self, BASE_LOG_WARN, "relay %s silent for %.1f s", r->name,
                 (double)(now - r->last_mono) / 1e9);
        }
        if (!r->up && now - r->down_mono > self->cfg.forget_ns) {
            base_log(BASE_LOG_INFO, "master", "relay %s forgotten", r->name);
            self->relays[i] = self->relays[--self->nrelays];
            self->relays_dirty = true;
            continue;
        }
        i++;
    }
}

static void publish_relays(node_master_t *self)
{
    if (self->pub == NULL)
        return;
    int64_t now = base_monotonic_ns();
    bus_msg_t *m = bus_msg_new(BUS_K_RELAYS);
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < self->nrelays; i++) {
        const struct mrelay *r = &self->relays[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "name", json_object_new_string(r->name));
        json_object_object_add(o, "upstream", json_object_new_string(r->upstream));
        json_object_object_add(o, "state", json_object_new_string(r->up ? "up" : "down"));
        json_object_object_add(o, "silent_s",
                               json_object_new_double((double)(now - r->last_mono) / 1e9));
        json_object_object_add(o, "up_msgs", json_object_new_uint64(r->up_msgs));
        json_object_object_add(o, "up_dropped", json_object_new_uint64(r->up_dropped));
        json_object_object_add(o, "down_msgs", json_object_new_uint64(r->down_msgs));
        json_object_object_add(o, "auth_denied", json_object_new_uint64(r->auth_denied));
        json_object_array_add(arr, o);
    }
    json_object_object_add(bus_msg_header(m), "relays", arr);
    bus_pub_send(self->pub, m, NULL);
    bus_msg_destroy(&m);
    self->relays_dirty = false;
}

void node_master_registration(node_master_t *self, const bus_peer_t *peer, bus_msg_t *msg)
{
    assert(self && peer && msg);
    switch (bus_msg_kind(msg)) {
    case BUS_K_HELLO:
        on_hello(self, peer, msg);
        break;
    case BUS_K_HB:
        on_hb(self, peer, msg);
        break;
    case BUS_K_BYE:
        on_bye(self, peer, msg);
        break;
    case BUS_K_RELAY:
        on_relay(self, msg);
        break;
    default:
        base_decstats_add(&self->st.dec, BASE_DEC_BAD_TYPE);
        break;
    }
}

int node_master_tick(node_master_t *self, int wait_ms, char *err)
{
    assert(self);
    for (int i = 0; i < MAX_REG_PER_TICK; i++) {
        bus_peer_t peer;
        bus_msg_t *msg = NULL;
        int rc = bus_hub_recv(self->hub, &peer, &msg, i == 0 ? wait_ms : 0, err);
        if (rc < 0)
            return BASE_ERR;
        if (rc == 0)
            break;
        node_master_registration(self, &peer, msg);
        bus_msg_destroy(&msg);
    }
    /* Where the solve stands before the fits that waited are judged late or ahead. */
    solve_catch_up(self, probe_now(self));
    for (int i = 0; i < MAX_FIT_PER_TICK; i++) {
        bus_msg_t *msg = NULL;
        int rc = bus_sub_recv(self->sub, &msg, 0, err);
        if (rc < 0)
            return BASE_ERR;
        if (rc == 0)
            break;
        if (bus_msg_kind(msg) == BUS_K_EDGE_FIT)
            on_edge_fit(self, msg);
        bus_msg_destroy(&msg);
    }
    check_liveness(self);
    check_relays(self, base_monotonic_ns());
    if (self->plan_dirty && base_monotonic_ns() - self->last_plan_mono >= REPLAN_GAP_NS)
        replan(self);
    solve_due(self);
    /* The table is republished on change and every heartbeat period
     * (last_seen moves). */
    if (self->pub && (!self->announced || self->table_dirty ||
                      base_monotonic_ns() - self->last_nodes_pub >= self->cfg.hb_ns)) {
        if (!self->announced && bus_pub_subscribed(self->pub, BUS_K_PLAN)) {
            /* The hub's cache now listens: what was published before it did is lost. */
            bus_msg_t *pm = plan_msg(self);
            bus_pub_send(self->pub, pm, NULL);
            bus_msg_destroy(&pm);
            self->announced = true;
        }
        /* The relay table goes with the node table, once there is one. */
        if (self->nrelays > 0 || self->relays_dirty)
            publish_relays(self);
        publish_nodes(self);
    } else if (self->relays_dirty) {
        publish_relays(self);
    }
    return BASE_OK;
}
