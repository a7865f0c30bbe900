/*
 * Publisher.  The socket is an XPUB connecting to the hub's XSUB: it sends
 * exactly like a PUB, and it also receives the subscriptions the hub
 * forwards, so that a producer can tell whether anybody listens (and tests
 * can wait for the subscription instead of sleeping).  ZMQ_XPUB_NODROP with
 * ZMQ_DONTWAIT turns a full queue into EAGAIN, counted as a drop: a
 * publisher never blocks its caller.
 */
#include "bus/bus_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PUB_MAX_SUBS 256

struct bus_pub {
    void *ctx;
    bool own_ctx;
    void *sock;
    int node;
    struct bus_limits lim;
    uint64_t seq[BUS_K_NKINDS]; /* last seq sent per kind (topic node is fixed) */
    struct bus_pub_stats st;
    char *subs[PUB_MAX_SUBS];
    size_t nsubs;
    bool subs_overflow; /* too many distinct subscriptions: assume everything */
};

bus_pub_t *bus_pub_new(const struct bus_pub_opts *opts, char *err)
{
    assert(opts && opts->endpoint);
    bus_pub_t *self = xcalloc(1, sizeof *self);
    self->node = opts->node;
    self->lim = bus_limits_fill(&opts->limits);
    self->ctx = bus_zmq_context(opts->zctx, &self->own_ctx, "publisher", err);
    if (self->ctx == NULL)
        goto err;
    self->sock = bus_zmq_socket(self->ctx, ZMQ_XPUB, opts->sndhwm > 0 ? opts->sndhwm : 10000, 0,
                                "publisher", err);
    if (self->sock == NULL || bus_zmq_maxmsg(self->sock, &self->lim, "publisher", err) != BASE_OK)
        goto err;
    int one = 1, linger = opts->linger_ms == 0 ? 1000 : opts->linger_ms < 0 ? 0 : opts->linger_ms;
    if (zmq_setsockopt(self->sock, ZMQ_XPUB_NODROP, &one, sizeof one) != 0 ||
        zmq_setsockopt(self->sock, ZMQ_LINGER, &linger, sizeof linger) != 0) {
        base_err(err, "publisher: socket options: %s", zmq_strerror(errno));
        goto err;
    }
    if (bus_curve_client(self->sock, opts->curve, err) != BASE_OK)
        goto err;
    if (zmq_connect(self->sock, opts->endpoint) != 0) {
        base_err(err, "publisher: cannot connect to %s: %s", opts->endpoint, zmq_strerror(errno));
        goto err;
    }
    return self;
err:
    bus_pub_destroy(&self);
    return NULL;
}

void bus_pub_destroy(bus_pub_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    bus_pub_t *self = *self_p;
    if (self->sock)
        zmq_close(self->sock);
    if (self->own_ctx && self->ctx)
        zmq_ctx_term(self->ctx);
    for (size_t i = 0; i < self->nsubs; i++)
        free(self->subs[i]);
    free(self);
    *self_p = NULL;
}

void bus_pub_set_node(bus_pub_t *self, int node)
{
    assert(self);
    self->node = node;
}

/* Apply the subscription changes the hub forwarded since the last call. */
static void drain_subscriptions(bus_pub_t *self)
{
    for (;;) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, self->sock, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&m);
            return;
        }
        const char *d = zmq_msg_data(&m);
        size_t len = zmq_msg_size(&m);
        if (len >= 1 && (d[0] == 0 || d[0] == 1)) {
            char *prefix = xstrndup(d + 1, len - 1);
            size_t i = 0;
            while (i < self->nsubs && strcmp(self->subs[i], prefix) != 0)
                i++;
            if (d[0] == 1 && i == self->nsubs) {
                if (self->nsubs < PUB_MAX_SUBS) {
                    self->subs[self->nsubs++] = prefix;
                    prefix = NULL;
                } else {
                    self->subs_overflow = true;
                }
            } else if (d[0] == 0 && i < self->nsubs) {
                free(self->subs[i]);
                self->subs[i] = self->subs[--self->nsubs];
            }
            free(prefix);
        }
        zmq_msg_close(&m);
    }
}

static bool topic_wanted(const bus_pub_t *self, enum bus_kind kind)
{
    if (self->subs_overflow)
        return true;
    char topic[BUS_MAX_TOPIC + 1];
    if (self->node == BUS_NODE_NONE)
        snprintf(topic, sizeof topic, "%s%s.-", BUS_TOPIC_PREFIX, bus_kind_name(kind));
    else
        snprintf(topic, sizeof topic, "%s%s.%d", BUS_TOPIC_PREFIX, bus_kind_name(kind), self->node);
    for (size_t i = 0; i < self->nsubs; i++)
        if (strncmp(topic, self->subs[i], strlen(self->subs[i])) == 0)
            return true;
    return false;
}

bool bus_pub_subscribed(bus_pub_t *self, enum bus_kind kind)
{
    assert(self);
    drain_subscriptions(self);
    return topic_wanted(self, kind);
}

int bus_pub_wait_subscribed(bus_pub_t *self, enum bus_kind kind, int timeout_ms)
{
    assert(self);
    int64_t deadline = base_monotonic_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        if (bus_pub_subscribed(self, kind))
            return 1;
        int64_t left = (deadline - base_monotonic_ns()) / 1000000;
        if (left <= 0)
            return 0;
        bus_zmq_wait_in(self->sock, left > 100 ? 100 : (int)left, NULL);
    }
}

int bus_pub_send(bus_pub_t *self, bus_msg_t *msg, char *err)
{
    assert(self && msg);
    enum bus_kind kind = bus_msg_kind(msg);
    drain_subscriptions(self);
    if (bus_msg_encode(msg, self->node, self->seq[kind] + 1, &self->lim, err) != BASE_OK)
        return BASE_ERR;
    int rc = bus_zmq_send_msg(self->sock, msg, ZMQ_DONTWAIT, err);
    if (rc == BUS_DROPPED) {
        self->st.dropped++;
        self->st.kind_dropped[kind]++;
        return BUS_DROPPED;
    }
    if (rc != BASE_OK)
        return BASE_ERR;
    self->seq[kind]++;
    self->st.sent++;
    self->st.kind_sent[kind]++;
    if (!topic_wanted(self, kind))
        self->st.unrouted++;
    struct bus_frame f[BUS_MAX_FRAMES];
    size_t n = bus_msg_frames(msg, f);
    for (size_t i = 0; i < n; i++)
        self->st.bytes += f[i].len;
    return BASE_OK;
}

void bus_pub_stats(const bus_pub_t *self, struct bus_pub_stats *out)
{
    assert(self);
    *out = self->st;
}
