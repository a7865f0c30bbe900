/*
 * A relay: one thread moving frames between four sockets.
 *
 *   pub_in   XSUB, bound at P+1: publishers below connect here
 *   pub_up   XPUB, connected to the upstream's P+1 (its XSUB)
 *   sub_up   XSUB, connected to the upstream's P+2 (its XPUB)
 *   sub_out  XPUB, bound at P+2: subscribers below connect here
 *
 * Data goes pub_in -> pub_up and sub_up -> sub_out; subscriptions go the
 * other way (pub_up -> pub_in, sub_out -> sub_up), so publishers below learn
 * what the cluster's subscribers want, and the upstream only sends what the
 * subscribers below want.  This is zmq_proxy twice over, written out so that
 * a message the upstream cannot take is counted: pub_up is XPUB_NODROP, and
 * a refused first frame drops the whole message.
 */
#include "bus/bus_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Messages moved from one socket before the next gets its turn. */
#define RELAY_BURST 256

struct bus_relay {
    void *ctx;
    void *pub_in, *pub_up, *sub_up, *sub_out;
    void *ctl_thread, *ctl_app; /* PAIR: the application says quit */
    struct bus_zap zap;
    pthread_t thread;
    bool running;
    char ep[2][256]; /* bound P+1 and P+2 */
    char inproc_ctl[96];
    _Atomic uint64_t up_msgs, up_bytes, up_dropped, down_msgs, down_bytes, subs_from_up,
        subs_from_below;
    _Atomic uint64_t auth_allowed, auth_denied;
    atomic_bool failed;
};

static void count(_Atomic uint64_t *c, uint64_t v)
{
    atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/*
 * Move one whole message from `from` to `to` without waiting.  Returns 1
 * moved, 0 nothing to move, -1 dropped (to refused it).  *bytes gets its
 * size.  A message is all or nothing: once its first frame is queued, the
 * rest are too (libzmq checks the high-water mark on the first frame only).
 */
static int move_one(void *from, void *to, uint64_t *bytes)
{
    zmq_msg_t f;
    zmq_msg_init(&f);
    if (zmq_msg_recv(&f, from, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&f);
        return 0;
    }
    bool refused = false;
    *bytes = 0;
    for (;;) {
        bool more = zmq_msg_more(&f);
        *bytes += zmq_msg_size(&f);
        if (!refused && zmq_msg_send(&f, to, (more ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT) < 0)
            refused = true;
        if (refused)
            zmq_msg_close(&f);
        if (!more)
            break;
        zmq_msg_init(&f);
        if (zmq_msg_recv(&f, from, 0) < 0) { /* the rest of a message is already here */
            zmq_msg_close(&f);
            break;
        }
    }
    return refused ? -1 : 1;
}

static void *relay_main(void *arg)
{
    bus_relay_t *self = arg;
    pthread_setname_np(pthread_self(), "dp-relay");
    for (;;) {
        zmq_pollitem_t it[6] = {
            {.socket = self->pub_in, .events = ZMQ_POLLIN},
            {.socket = self->pub_up, .events = ZMQ_POLLIN},
            {.socket = self->sub_up, .events = ZMQ_POLLIN},
            {.socket = self->sub_out, .events = ZMQ_POLLIN},
            {.socket = self->ctl_thread, .events = ZMQ_POLLIN},
            {.socket = self->zap.sock, .events = ZMQ_POLLIN},
        };
        if (zmq_poll(it, self->zap.sock ? 6 : 5, 1000) < 0) {
            if (errno == EINTR)
                continue;
            if (errno != ETERM) {
                base_log(BASE_LOG_ERROR, "relay", "poll: %s", zmq_strerror(errno));
                atomic_store(&self->failed, true);
            }
            break;
        }
        if (it[4].revents & ZMQ_POLLIN)
            break;
        if (self->zap.sock && (it[5].revents & ZMQ_POLLIN)) {
            uint64_t ok = 0, denied = 0;
            bus_zap_answer(&self->zap, "relay", &ok, &denied);
            count(&self->auth_allowed, ok);
            count(&self->auth_denied, denied);
        }
        uint64_t b;
        for (int i = 0; i < RELAY_BURST; i++) {
            int r = move_one(self->pub_in, self->pub_up, &b);
            if (r == 0)
                break;
            count(r > 0 ? &self->up_msgs : &self->up_dropped, 1);
            count(&self->up_bytes, r > 0 ? b : 0);
        }
        for (int i = 0; i < RELAY_BURST; i++) {
            int r = move_one(self->sub_up, self->sub_out, &b);
            if (r == 0)
                break;
            /* XPUB without NODROP never refuses: a full subscriber loses it. */
            count(&self->down_msgs, 1);
            count(&self->down_bytes, b);
        }
        for (int i = 0; i < RELAY_BURST && move_one(self->pub_up, self->pub_in, &b) != 0; i++)
            count(&self->subs_from_up, 1);
        for (int i = 0; i < RELAY_BURST && move_one(self->sub_out, self->sub_up, &b) != 0; i++)
            count(&self->subs_from_below, 1);
    }
    return NULL;
}

/* Whether a connect endpoint reaches a bind endpoint of this host: the
 * same text, or the same TCP port on a wildcard bind and a local address. */
static bool same_place(const char *connect, const char *bind)
{
    if (strcmp(connect, bind) == 0)
        return true;
    if (strncmp(connect, "tcp://", 6) != 0 || strncmp(bind, "tcp://", 6) != 0)
        return false;
    const char *cp = strrchr(connect, ':'), *bp = strrchr(bind, ':');
    if (strcmp(cp, bp) != 0)
        return false;
    bool wild = !strncmp(bind + 6, "*:", 2) || !strncmp(bind + 6, "0.0.0.0:", 8);
    bool local = !strncmp(connect + 6, "127.", 4) || !strncmp(connect + 6, "localhost:", 10);
    return wild && local;
}

static int connect_up(void *sock, const struct bus_curve *curve, const char *endpoint, char *err)
{
    if (bus_curve_client(sock, curve, err) != BASE_OK)
        return BASE_ERR;
    if (zmq_connect(sock, endpoint) != 0)
        return base_err(err, "relay: cannot connect to %s: %s", endpoint, zmq_strerror(errno));
    return BASE_OK;
}

bus_relay_t *bus_relay_new(const struct bus_relay_opts *opts, char *err)
{
    assert(opts && opts->upstream && opts->listen);
    struct bus_endpoints up, own;
    if (bus_endpoints_derive(opts->upstream, &up, err) != BASE_OK ||
        bus_endpoints_derive(opts->listen, &own, err) != BASE_OK)
        return NULL;
    if (same_place(up.pub, own.pub))
        return base_err(err, "relay: the upstream %s is the relay itself", opts->upstream), NULL;
    bus_relay_t *self = xcalloc(1, sizeof *self);
    int hwm = opts->hwm > 0 ? opts->hwm : 10000, one = 1;
    snprintf(self->inproc_ctl, sizeof self->inproc_ctl, "inproc://dp-relay-%p", (void *)self);
    self->ctx = zmq_ctx_new();
    if (self->ctx == NULL) {
        base_err(err, "relay: cannot create a ZeroMQ context: %s", zmq_strerror(errno));
        goto err;
    }
    if (bus_zap_open(&self->zap, self->ctx, opts->server_curve, "relay", err) != BASE_OK)
        goto err;
    self->pub_in = bus_zmq_socket(self->ctx, ZMQ_XSUB, 0, hwm, "relay", err);
    self->pub_up = self->pub_in ? bus_zmq_socket(self->ctx, ZMQ_XPUB, hwm, 0, "relay", err) : NULL;
    self->sub_up = self->pub_up ? bus_zmq_socket(self->ctx, ZMQ_XSUB, 0, hwm, "relay", err) : NULL;
    self->sub_out = self->sub_up ? bus_zmq_socket(self->ctx, ZMQ_XPUB, hwm, 0, "relay", err) : NULL;
    if (self->sub_out == NULL)
        goto err;
    void *faces[] = {self->pub_in, self->pub_up, self->sub_up, self->sub_out};
    for (size_t i = 0; i < BASE_ARRAY_LEN(faces); i++)
        if (bus_zmq_maxmsg(faces[i], NULL, "relay", err) != BASE_OK)
            goto err;
    if (zmq_setsockopt(self->pub_up, ZMQ_XPUB_NODROP, &one, sizeof one) != 0) {
        base_err(err, "relay: socket options: %s", zmq_strerror(errno));
        goto err;
    }
    if (bus_curve_server(self->pub_in, opts->server_curve, "relay", err) != BASE_OK ||
        bus_curve_server(self->sub_out, opts->server_curve, "relay", err) != BASE_OK ||
        bus_zmq_bind(self->pub_in, "relay", "publisher", own.pub, self->ep[0], sizeof self->ep[0],
                     err) != BASE_OK ||
        bus_zmq_bind(self->sub_out, "relay", "subscriber", own.sub, self->ep[1], sizeof self->ep[1],
                     err) != BASE_OK ||
        connect_up(self->pub_up, opts->client_curve, up.pub, err) != BASE_OK ||
        connect_up(self->sub_up, opts->client_curve, up.sub, err) != BASE_OK)
        goto err;
    self->ctl_thread = bus_zmq_socket(self->ctx, ZMQ_PAIR, 0, 0, "relay", err);
    self->ctl_app =
        self->ctl_thread ? bus_zmq_socket(self->ctx, ZMQ_PAIR, 0, 0, "relay", err) : NULL;
    if (self->ctl_app == NULL)
        goto err;
    if (zmq_bind(self->ctl_thread, self->inproc_ctl) != 0 ||
        zmq_connect(self->ctl_app, self->inproc_ctl) != 0) {
        base_err(err, "relay: control socket: %s", zmq_strerror(errno));
        goto err;
    }
    if (pthread_create(&self->thread, NULL, relay_main, self) != 0) {
        base_err(err, "relay: cannot start its thread");
        goto err;
    }
    self->running = true;
    return self;
err:
    bus_relay_destroy(&self);
    return NULL;
}

void bus_relay_destroy(bus_relay_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    bus_relay_t *self = *self_p;
    if (self->running) {
        zmq_send(self->ctl_app, "Q", 1, 0);
        pthread_join(self->thread, NULL);
    }
    void *socks[] = {self->pub_in,  self->pub_up,     self->sub_up,
                     self->sub_out, self->ctl_thread, self->ctl_app};
    for (size_t i = 0; i < BASE_ARRAY_LEN(socks); i++)
        if (socks[i])
            zmq_close(socks[i]);
    bus_zap_close(&self->zap);
    if (self->ctx)
        zmq_ctx_term(self->ctx);
    free(self);
    *self_p = NULL;
}

const char *bus_relay_endpoint(const bus_relay_t *self, enum bus_hub_port which)
{
    assert(self);
    return which == BUS_HUB_SUB ? self->ep[1] : self->ep[0];
}

void bus_relay_stats(bus_relay_t *self, struct bus_relay_stats *out)
{
    assert(self && out);
    *out = (struct bus_relay_stats){
        .up_msgs = atomic_load(&self->up_msgs),
        .up_bytes = atomic_load(&self->up_bytes),
        .up_dropped = atomic_load(&self->up_dropped),
        .down_msgs = atomic_load(&self->down_msgs),
        .down_bytes = atomic_load(&self->down_bytes),
        .subs_from_up = atomic_load(&self->subs_from_up),
        .subs_from_below = atomic_load(&self->subs_from_below),
        .auth_allowed = atomic_load(&self->auth_allowed),
        .auth_denied = atomic_load(&self->auth_denied),
        .failed = atomic_load(&self->failed),
    };
}
