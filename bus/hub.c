/*
 * The hub, hosted by the master.  Three threads touch it:
 *
 *   proxy thread  zmq_proxy_steerable(XSUB, XPUB): every bus message passes
 *                 here once; slow subscribers lose messages at the XPUB's
 *                 high-water mark (they see seq gaps), publishers see EAGAIN
 *                 when the XSUB side is full.
 *   hub thread    owns the ROUTER, the cache subscription (a SUB on the
 *                 XPUB over inproc, filtered to the cached kinds, so event
 *                 batches never reach it) and an internal publisher for sync
 *                 markers.  It answers state requests itself and passes all
 *                 other registration traffic to the application over an
 *                 inproc PAIR; the application's replies come back the same
 *                 way and leave through the ROUTER.
 *   application   bus_hub_recv / bus_hub_send / bus_hub_stats / destroy.
 *
 * All sockets are created and bound in bus_hub_new (so a busy port fails
 * there, synchronously) and handed to the threads they belong to.
 */
#include "bus/bus_int.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OP_SEND 'S'
#define OP_QUIT 'Q'

struct bus_hub {
    void *ctx;
    void *router, *xsub, *xpub, *ctl_proxy, *ctl_app, *cache_sub, *pair_hub, *pair_app;
    struct bus_zap zap; /* CURVE handshakes: admitted client keys */
    bus_pub_t *sync_pub;
    pthread_t proxy_thread, hub_thread;
    bool proxy_running, hub_running;
    char ep[3][256];
    char inproc_pub[96], inproc_sub[96], inproc_ctl[96], inproc_app[96];
    int node, sync_timeout_ms;
    struct bus_limits lim;
    bus_cache_t *cache;
    uint64_t app_seq[BUS_K_NKINDS]; /* replies sent by the application */
    uint64_t hub_seq[BUS_K_NKINDS]; /* state_end sent by the hub thread */
    pthread_mutex_t lock;           /* guards st */
    struct bus_hub_stats st;
    /* hub thread: rejected input is logged once, then a line at most every
     * HUB_REJECT_LOG_NS with how many came since (a flood must not fill
     * the log; every one is counted in st.dec). */
    int64_t reject_logged_ns;
    uint64_t reject_unlogged;
};

#define HUB_REJECT_LOG_NS 10000000000LL

#define STAT_ADD(h, field, v)                                                                      \
    do {                                                                                           \
        pthread_mutex_lock(&(h)->lock);                                                            \
        (h)->st.field += (v);                                                                      \
        pthread_mutex_unlock(&(h)->lock);                                                          \
    } while (0)

static void count_dec(bus_hub_t *self, enum base_dec dec)
{
    pthread_mutex_lock(&self->lock);
    base_decstats_add(&self->st.dec, dec);
    pthread_mutex_unlock(&self->lock);
}

static void log_reject(bus_hub_t *self, const char *what, const char *err)
{
    int64_t now = base_monotonic_ns();
    if (self->reject_logged_ns != 0 && now - self->reject_logged_ns < HUB_REJECT_LOG_NS) {
        self->reject_unlogged++;
        return;
    }
    if (self->reject_unlogged)
        base_log(BASE_LOG_WARN, "hub", "%s rejected: %s (and %" PRIu64 " more since the last line)",
                 what, err, self->reject_unlogged);
    else
        base_log(BASE_LOG_WARN, "hub", "%s rejected: %s", what, err);
    self->reject_logged_ns = now;
    self->reject_unlogged = 0;
}

static void *proxy_main(void *arg)
{
    bus_hub_t *self = arg;
    pthread_setname_np(pthread_self(), "dp-hub-proxy"); /* for top -H and perf */
    zmq_proxy_steerable(self->xsub, self->xpub, NULL, self->ctl_proxy);
    return NULL;
}

/* ---- hub thread ---- */

static void refresh_cache_stats(bus_hub_t *self)
{
    uint64_t m, b, e, fm, fe;
    bus_cache_counts(self->cache, &m, &b, &e);
    bus_cache_foreign(self->cache, &fm, &fe);
    pthread_mutex_lock(&self->lock);
    self->st.cache_msgs = m;
    self->st.cache_bytes = b;
    self->st.cache_evicted = e;
    self->st.cache_foreign = fm;
    self->st.cache_foreign_evicted = fe;
    pthread_mutex_unlock(&self->lock);
}

/* Read the cache subscription; returns true when sync{token} came by. */
static bool drain_cache_sub(bus_hub_t *self, const char *token)
{
    bool seen = false;
    for (;;) {
        zmq_msg_t frames[BUS_MAX_FRAMES + 1];
        size_t n;
        if (bus_zmq_recv_multi(self->cache_sub, frames, BASE_ARRAY_LEN(frames), &n, ZMQ_DONTWAIT,
                               NULL) <= 0)
            break;
        bus_msg_t *m = NULL;
        char err[BASE_ERRLEN];
        enum base_dec dec = bus_msg_decode_zmq(frames, n, &self->lim, &m, err);
        bus_zmq_close_frames(frames, n < BASE_ARRAY_LEN(frames) ? n : BASE_ARRAY_LEN(frames));
        count_dec(self, dec);
        if (dec != BASE_DEC_OK) {
            log_reject(self, "bus message", err);
            continue;
        }
        if (m->kind == BUS_K_SYNC) {
            const char *t;
            if (token && base_json_get_str(m->hdr, "token", &t, NULL) == BASE_DEC_OK &&
                strcmp(t, token) == 0)
                seen = true;
            bus_msg_destroy(&m);
            continue;
        }
        STAT_ADD(self, cache_in, 1);
        bus_cache_put(self->cache, m);
    }
    refresh_cache_stats(self);
    return seen;
}

struct reply {
    bus_hub_t *self;
    const zmq_msg_t *peer;
    json_object *prefixes;
    uint64_t count;
    bool complete;
};

static bool topic_matches(json_object *prefixes, const char *topic)
{
    if (prefixes == NULL)
        return true;
    size_t n = json_object_array_length(prefixes);
    for (size_t i = 0; i < n; i++) {
        const char *p = json_object_get_string(json_object_array_get_idx(prefixes, i));
        if (strncmp(topic, p, strlen(p)) == 0)
            return true;
    }
    return false;
}

/* Send [peer, frames...] through the ROUTER without blocking. */
static int router_send(bus_hub_t *self, const zmq_msg_t *peer, const bus_msg_t *m)
{
    zmq_msg_t id;
    zmq_msg_init(&id);
    zmq_msg_copy(&id, (zmq_msg_t *)peer);
    /* ROUTER_MANDATORY: an unknown peer or a full queue fails here, at once. */
    if (zmq_msg_send(&id, self->router, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&id);
        return BUS_DROPPED;
    }
    return bus_zmq_send_msg(self->router, m, 0, NULL);
}

static bool reply_one(const bus_msg_t *m, void *arg)
{
    struct reply *r = arg;
    if (!topic_matches(r->prefixes, m->topic))
        return true;
    if (router_send(r->self, r->peer, m) != BASE_OK) {
        r->complete = false;
        return false;
    }
    r->count++;
    return true;
}

static void handle_state_req(bus_hub_t *self, const zmq_msg_t *peer, bus_msg_t *req)
{
    const char *token = "";
    base_json_get_str(req->hdr, "token", &token, NULL);
    json_object *prefixes = NULL;
    json_object_object_get_ex(req->hdr, "prefixes", &prefixes);
    STAT_ADD(self, state_reqs, 1);

    /* Publish the marker, then read our cache subscription until the marker
     * comes back: everything that passed the XPUB before it is cached now. */
    bool synced = false;
    bus_msg_t *sync = bus_msg_new(BUS_K_SYNC);
    bus_msg_set_str(sync, "token", token);
    char err[BASE_ERRLEN];
    if (bus_pub_send(self->sync_pub, sync, err) == BASE_OK) {
        int64_t deadline = base_monotonic_ns() + (int64_t)self->sync_timeout_ms * 1000000;
        while (!synced) {
            synced = drain_cache_sub(self, token);
            int64_t left = (deadline - base_monotonic_ns()) / 1000000;
            if (synced || left <= 0)
                break;
            bus_zmq_wait_in(self->cache_sub, (int)left, NULL);
        }
    }
    bus_msg_destroy(&sync);
    if (!synced)
        STAT_ADD(self, sync_timeouts, 1);

    struct reply r = {self, peer, prefixes, 0, true};
    bus_cache_foreach(self->cache, reply_one, &r);
    uint64_t m, b, evicted;
    bus_cache_counts(self->cache, &m, &b, &evicted);
    bus_msg_t *end = bus_msg_new(BUS_K_STATE_END);
    bus_msg_set_str(end, "token", token);
    bus_msg_set_u64(end, "count", r.count);
    bus_msg_set_bool(end, "complete", r.complete);
    bus_msg_set_bool(end, "synced", synced);
    bus_msg_set_u64(end, "evicted", evicted);
    if (bus_msg_encode(end, self->node, ++self->hub_seq[BUS_K_STATE_END], &self->lim, err) ==
            BASE_OK &&
        router_send(self, peer, end) != BASE_OK)
        r.complete = false;
    bus_msg_destroy(&end);
    pthread_mutex_lock(&self->lock);
    self->st.state_msgs_sent += r.count;
    if (!r.complete)
        self->st.state_truncated++;
    pthread_mutex_unlock(&self->lock);
}

static void handle_router(bus_hub_t *self)
{
    for (;;) {
        zmq_msg_t frames[BUS_MAX_FRAMES + 2];
        size_t n;
        if (bus_zmq_recv_multi(self->router, frames, BASE_ARRAY_LEN(frames), &n, ZMQ_DONTWAIT,
                               NULL) <= 0)
            return;
        size_t kept = n < BASE_ARRAY_LEN(frames) ? n : BASE_ARRAY_LEN(frames);
        bus_msg_t *m = NULL;
        char err[BASE_ERRLEN];
        enum base_dec dec = n >= 1 ? bus_msg_decode_zmq(frames + 1, n - 1, &self->lim, &m, err)
                                   : BASE_DEC_TRUNCATED;
        count_dec(self, dec);
        if (dec != BASE_DEC_OK) {
            log_reject(self, "registration message", err);
        } else {
            STAT_ADD(self, reg_msgs, 1);
            if (m->kind == BUS_K_STATE_REQ) {
                handle_state_req(self, &frames[0], m);
            } else {
                /* [peer id, topic, header, payload?] to the application. */
                zmq_msg_t id;
                zmq_msg_init(&id);
                zmq_msg_copy(&id, &frames[0]);
                int rc = BUS_DROPPED;
                if (zmq_msg_send(&id, self->pair_hub, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0)
                    rc = bus_zmq_send_msg(self->pair_hub, m, 0, NULL);
                else
                    zmq_msg_close(&id);
                if (rc == BASE_OK)
                    STAT_ADD(self, reg_forwarded, 1);
                else
                    STAT_ADD(self, reg_dropped, 1);
            }
            bus_msg_destroy(&m);
        }
        bus_zmq_close_frames(frames, kept);
    }
}

/* Application requests: [OP_SEND, peer, frames...] or [OP_QUIT]; false on quit. */
static bool handle_app(bus_hub_t *self)
{
    for (;;) {
        zmq_msg_t frames[BUS_MAX_FRAMES + 2];
        size_t n;
        if (bus_zmq_recv_multi(self->pair_hub, frames, BASE_ARRAY_LEN(frames), &n, ZMQ_DONTWAIT,
                               NULL) <= 0)
            return true;
        size_t kept = n < BASE_ARRAY_LEN(frames) ? n : BASE_ARRAY_LEN(frames);
        const char *op = n >= 1 ? zmq_msg_data(&frames[0]) : NULL;
        if (op && zmq_msg_size(&frames[0]) == 1 && *op == OP_QUIT) {
            bus_zmq_close_frames(frames, kept);
            return false;
        }
        bool ok = false;
        if (op && n >= 4 && n == kept) {
            /* The application encoded the frames; forward them unchanged. */
            zmq_msg_t id;
            zmq_msg_init(&id);
            zmq_msg_copy(&id, &frames[1]);
            if (zmq_msg_send(&id, self->router, ZMQ_SNDMORE | ZMQ_DONTWAIT) >= 0) {
                ok = true;
                for (size_t i = 2; i < n && ok; i++)
                    ok = zmq_msg_send(&frames[i], self->router, i + 1 < n ? ZMQ_SNDMORE : 0) >= 0;
            } else {
                zmq_msg_close(&id);
            }
        }
        STAT_ADD(self, replies, ok ? 1 : 0);
        STAT_ADD(self, replies_dropped, ok ? 0 : 1);
        bus_zmq_close_frames(frames, kept);
    }
}

/* ZeroMQ's authentication protocol (RFC 27): libzmq asks, for each CURVE
 * handshake on the hub's sockets, whether the client key may come in. */
static void handle_zap(bus_hub_t *self)
{
    uint64_t allowed = 0, denied = 0;
    bus_zap_answer(&self->zap, "hub", &allowed, &denied);
    pthread_mutex_lock(&self->lock);
    self->st.auth_allowed += allowed;
    self->st.auth_denied += denied;
    pthread_mutex_unlock(&self->lock);
}

static void *hub_main(void *arg)
{
    bus_hub_t *self = arg;
    pthread_setname_np(pthread_self(), "dp-hub");
    for (;;) {
        zmq_pollitem_t it[4] = {{.socket = self->router, .events = ZMQ_POLLIN},
                                {.socket = self->cache_sub, .events = ZMQ_POLLIN},
                                {.socket = self->pair_hub, .events = ZMQ_POLLIN},
                                {.socket = self->zap.sock, .events = ZMQ_POLLIN}};
        if (zmq_poll(it, self->zap.sock ? 4 : 3, 1000) < 0) {
            if (errno == EINTR)
                continue;
            if (errno == ETERM)
                break;
            base_log(BASE_LOG_ERROR, "hub", "poll: %s", zmq_strerror(errno));
            break;
        }
        if (self->zap.sock && (it[3].revents & ZMQ_POLLIN))
            handle_zap(self);
        if (it[1].revents & ZMQ_POLLIN)
            drain_cache_sub(self, NULL);
        if (it[0].revents & ZMQ_POLLIN)
            handle_router(self);
        if ((it[2].revents & ZMQ_POLLIN) && !handle_app(self))
            break;
    }
    return NULL;
}

/* ---- construction ---- */

static void *make_socket(bus_hub_t *self, int type, int sndhwm, int rcvhwm, char *err)
{
    return bus_zmq_socket(self->ctx, type, sndhwm, rcvhwm, "hub", err);
}

bus_hub_t *bus_hub_new(const struct bus_hub_opts *opts, char *err)
{
    assert(opts);
    bus_hub_t *self = xcalloc(1, sizeof *self);
    pthread_mutex_init(&self->lock, NULL);
    self->node = opts->node;
    self->lim = bus_limits_fill(&opts->limits);
    self->sync_timeout_ms = opts->sync_timeout_ms > 0 ? opts->sync_timeout_ms : 1000;
    struct bus_cache_opts co = {
        .max_msgs = opts->cache_max_msgs ? opts->cache_max_msgs : 16384,
        .max_bytes = opts->cache_max_bytes ? opts->cache_max_bytes : 64u << 20,
        .key_bytes = opts->cache_key_bytes ? opts->cache_key_bytes : 8u << 20,
        .self_node = opts->node,
    };
    self->cache = bus_cache_new(&co);
    snprintf(self->inproc_pub, sizeof self->inproc_pub, "inproc://dp-hub-%p-pub", (void *)self);
    snprintf(self->inproc_sub, sizeof self->inproc_sub, "inproc://dp-hub-%p-sub", (void *)self);
    snprintf(self->inproc_ctl, sizeof self->inproc_ctl, "inproc://dp-hub-%p-ctl", (void *)self);
    snprintf(self->inproc_app, sizeof self->inproc_app, "inproc://dp-hub-%p-app", (void *)self);
    char reg_default[64], pub_default[64], sub_default[64];
    snprintf(reg_default, sizeof reg_default, "tcp://0.0.0.0:%d", BUS_PORT_REG);
    snprintf(pub_default, sizeof pub_default, "tcp://0.0.0.0:%d", BUS_PORT_PUB);
    snprintf(sub_default, sizeof sub_default, "tcp://0.0.0.0:%d", BUS_PORT_SUB);
    int one = 1;

    self->ctx = zmq_ctx_new();
    if (self->ctx == NULL) {
        base_err(err, "hub: cannot create a ZeroMQ context: %s", zmq_strerror(errno));
        goto err;
    }
    if (bus_zap_open(&self->zap, self->ctx, opts->curve, "hub", err) != BASE_OK)
        goto err;
    /* The ROUTER queue holds a whole state reply (the cache is bounded). */
    int router_hwm = (int)(co.max_msgs + 1024);
    self->router = make_socket(self, ZMQ_ROUTER, router_hwm, 10000, err);
    if (self->router == NULL || bus_zmq_maxmsg(self->router, &self->lim, "hub", err) != BASE_OK)
        goto err;
    if (zmq_setsockopt(self->router, ZMQ_ROUTER_MANDATORY, &one, sizeof one) != 0) {
        base_err(err, "hub: socket options: %s", zmq_strerror(errno));
        goto err;
    }
    if (bus_curve_server(self->router, opts->curve, "hub", err) != BASE_OK)
        goto err;
    if (bus_zmq_bind(self->router, "hub", "registration",
                     opts->reg_endpoint ? opts->reg_endpoint : reg_default, self->ep[BUS_HUB_REG],
                     sizeof self->ep[0], err) != BASE_OK)
        goto err;
    self->xsub = make_socket(self, ZMQ_XSUB, 0, opts->rcvhwm > 0 ? opts->rcvhwm : 10000, err);
    if (self->xsub == NULL || bus_zmq_maxmsg(self->xsub, &self->lim, "hub", err) != BASE_OK ||
        bus_curve_server(self->xsub, opts->curve, "hub", err) != BASE_OK ||
        bus_zmq_bind(self->xsub, "hub", "publisher",
                     opts->pub_endpoint ? opts->pub_endpoint : pub_default, self->ep[BUS_HUB_PUB],
                     sizeof self->ep[0], err) != BASE_OK)
        goto err;
    if (zmq_bind(self->xsub, self->inproc_pub) != 0) {
        base_err(err, "hub: bind %s: %s", self->inproc_pub, zmq_strerror(errno));
        goto err;
    }
    self->xpub = make_socket(self, ZMQ_XPUB, opts->sndhwm > 0 ? opts->sndhwm : 10000, 0, err);
    if (self->xpub == NULL || bus_zmq_maxmsg(self->xpub, &self->lim, "hub", err) != BASE_OK ||
        bus_curve_server(self->xpub, opts->curve, "hub", err) != BASE_OK ||
        bus_zmq_bind(self->xpub, "hub", "subscriber",
                     opts->sub_endpoint ? opts->sub_endpoint : sub_default, self->ep[BUS_HUB_SUB],
                     sizeof self->ep[0], err) != BASE_OK)
        goto err;
    if (zmq_bind(self->xpub, self->inproc_sub) != 0) {
        base_err(err, "hub: bind %s: %s", self->inproc_sub, zmq_strerror(errno));
        goto err;
    }
    self->ctl_proxy = make_socket(self, ZMQ_PAIR, 0, 0, err);
    self->ctl_app = self->ctl_proxy ? make_socket(self, ZMQ_PAIR, 0, 0, err) : NULL;
    if (self->ctl_app == NULL)
        goto err;
    if (zmq_bind(self->ctl_proxy, self->inproc_ctl) != 0 ||
        zmq_connect(self->ctl_app, self->inproc_ctl) != 0) {
        base_err(err, "hub: control socket: %s", zmq_strerror(errno));
        goto err;
    }
    if (pthread_create(&self->proxy_thread, NULL, proxy_main, self) != 0) {
        base_err(err, "hub: cannot start the proxy thread");
        goto err;
    }
    self->proxy_running = true;

    /* The cache listens to the cached kinds and to the sync markers only. */
    self->cache_sub = make_socket(self, ZMQ_SUB, 0, 100000, err);
    if (self->cache_sub == NULL)
        goto err;
    for (int k = 0; k < BUS_K_NKINDS; k++) {
        const struct bus_kind_def *d = bus_kind_def((enum bus_kind)k);
        if (d->cache == BUS_CACHE_NONE && k != BUS_K_SYNC)
            continue;
        char prefix[64];
        int len = snprintf(prefix, sizeof prefix, "%s%s.", BUS_TOPIC_PREFIX, d->name);
        zmq_setsockopt(self->cache_sub, ZMQ_SUBSCRIBE, prefix, (size_t)len);
    }
    if (zmq_connect(self->cache_sub, self->inproc_sub) != 0) {
        base_err(err, "hub: connect %s: %s", self->inproc_sub, zmq_strerror(errno));
        goto err;
    }
    struct bus_pub_opts po = {.endpoint = self->inproc_pub,
                              .node = self->node,
                              .linger_ms = -1,
                              .limits = self->lim,
                              .zctx = self->ctx};
    self->sync_pub = bus_pub_new(&po, err);
    if (self->sync_pub == NULL)
        goto err;
    self->pair_hub = make_socket(self, ZMQ_PAIR, 10000, 10000, err);
    self->pair_app = self->pair_hub ? make_socket(self, ZMQ_PAIR, 10000, 10000, err) : NULL;
    if (self->pair_app == NULL)
        goto err;
    if (zmq_bind(self->pair_hub, self->inproc_app) != 0 ||
        zmq_connect(self->pair_app, self->inproc_app) != 0) {
        base_err(err, "hub: application socket: %s", zmq_strerror(errno));
        goto err;
    }
    /* The sync path must work before anyone asks for state. */
    if (!bus_pub_wait_subscribed(self->sync_pub, BUS_K_SYNC, 5000)) {
        base_err(err, "hub: the internal sync path did not come up within 5 s");
        goto err;
    }
    if (pthread_create(&self->hub_thread, NULL, hub_main, self) != 0) {
        base_err(err, "hub: cannot start the hub thread");
        goto err;
    }
    self->hub_running = true;
    return self;
err:
    bus_hub_destroy(&self);
    return NULL;
}

void bus_hub_destroy(bus_hub_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    bus_hub_t *self = *self_p;
    if (self->hub_running) {
        char q = OP_QUIT;
        for (int i = 0; i < 1000 && zmq_send(self->pair_app, &q, 1, ZMQ_DONTWAIT) < 0; i++)
            base_sleep_ns(1000000);
        pthread_join(self->hub_thread, NULL);
    }
    if (self->proxy_running) {
        zmq_send(self->ctl_app, "TERMINATE", 9, 0);
        pthread_join(self->proxy_thread, NULL);
    }
    void *socks[] = {self->router,  self->xsub,      self->xpub,     self->ctl_proxy,
                     self->ctl_app, self->cache_sub, self->pair_hub, self->pair_app};
    for (size_t i = 0; i < BASE_ARRAY_LEN(socks); i++)
        if (socks[i])
            zmq_close(socks[i]);
    bus_zap_close(&self->zap);
    bus_pub_destroy(&self->sync_pub);
    if (self->ctx)
        zmq_ctx_term(self->ctx);
    bus_cache_destroy(&self->cache);
    pthread_mutex_destroy(&self->lock);
    free(self);
    *self_p = NULL;
}

const char *bus_hub_endpoint(const bus_hub_t *self, enum bus_hub_port which)
{
    assert(self && (unsigned)which < 3);
    return self->ep[which];
}

const char *bus_hub_inproc_pub(const bus_hub_t *self)
{
    assert(self);
    return self->inproc_pub;
}

void *bus_hub_zctx(const bus_hub_t *self)
{
    assert(self);
    return self->ctx;
}

int bus_hub_recv(bus_hub_t *self, bus_peer_t *peer, bus_msg_t **out, int timeout_ms, char *err)
{
    assert(self && peer && out);
    *out = NULL;
    int64_t deadline = base_monotonic_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        zmq_msg_t frames[BUS_MAX_FRAMES + 1];
        size_t n;
        int rc = bus_zmq_recv_multi(self->pair_app, frames, BASE_ARRAY_LEN(frames), &n,
                                    ZMQ_DONTWAIT, err);
        if (rc < 0)
            return BASE_ERR;
        if (rc == 1) {
            size_t kept = n < BASE_ARRAY_LEN(frames) ? n : BASE_ARRAY_LEN(frames);
            enum base_dec dec = BASE_DEC_TRUNCATED;
            if (n >= 1 && zmq_msg_size(&frames[0]) <= BUS_PEER_MAX) {
                peer->len = zmq_msg_size(&frames[0]);
                memcpy(peer->id, zmq_msg_data(&frames[0]), peer->len);
                /* Validated by the hub thread already; decoding builds the message. */
                dec = bus_msg_decode_zmq(frames + 1, n - 1, &self->lim, out, err);
            }
            bus_zmq_close_frames(frames, kept);
            if (dec == BASE_DEC_OK) {
                (*out)->arrival_ns = base_realtime_ns();
                return 1;
            }
            continue;
        }
        int64_t left = (deadline - base_monotonic_ns() + 999999) / 1000000;
        if (left <= 0)
            return 0;
        if (bus_zmq_wait_in(self->pair_app, (int)left, err) < 0)
            return BASE_ERR;
    }
}

int bus_hub_send(bus_hub_t *self, const bus_peer_t *peer, bus_msg_t *msg, char *err)
{
    assert(self && peer && msg);
    enum bus_kind kind = bus_msg_kind(msg);
    if (bus_msg_encode(msg, self->node, self->app_seq[kind] + 1, &self->lim, err) != BASE_OK)
        return BASE_ERR;
    char op = OP_SEND;
    if (zmq_send(self->pair_app, &op, 1, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
        STAT_ADD(self, replies_dropped, 1);
        return BASE_OK;
    }
    zmq_send(self->pair_app, peer->id, peer->len, ZMQ_SNDMORE);
    if (bus_zmq_send_msg(self->pair_app, msg, 0, err) != BASE_OK)
        return BASE_ERR;
    self->app_seq[kind]++;
    return BASE_OK;
}

void bus_hub_stats(bus_hub_t *self, struct bus_hub_stats *out)
{
    assert(self);
    pthread_mutex_lock(&self->lock);
    *out = self->st;
    pthread_mutex_unlock(&self->lock);
}
