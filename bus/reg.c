/*
 * Registration client: a DEALER towards the hub's ROUTER.  ZMQ_IMMEDIATE
 * makes a send fail while there is no connection, instead of queueing a
 * hello for a master that may come back much later; the caller re-sends.
 */
#include "bus/bus_int.h"

#include <errno.h>
#include <stdlib.h>

struct bus_reg {
    void *ctx;
    bool own_ctx;
    void *sock;
    int node;
    struct bus_limits lim;
    uint64_t seq[BUS_K_NKINDS];
    base_decstats_t dec;
};

bus_reg_t *bus_reg_new(const struct bus_reg_opts *opts, char *err)
{
    assert(opts && opts->endpoint);
    bus_reg_t *self = xcalloc(1, sizeof *self);
    self->node = opts->node;
    self->lim = bus_limits_fill(&opts->limits);
    self->ctx = bus_zmq_context(opts->zctx, &self->own_ctx, "registration", err);
    if (self->ctx == NULL)
        goto err;
    self->sock = bus_zmq_socket(self->ctx, ZMQ_DEALER, 1000, 10000, "registration", err);
    if (self->sock == NULL ||
        bus_zmq_maxmsg(self->sock, &self->lim, "registration", err) != BASE_OK)
        goto err;
    int one = 1;
    if (zmq_setsockopt(self->sock, ZMQ_IMMEDIATE, &one, sizeof one) != 0) {
        base_err(err, "registration: socket options: %s", zmq_strerror(errno));
        goto err;
    }
    if (bus_curve_client(self->sock, opts->curve, err) != BASE_OK)
        goto err;
    if (zmq_connect(self->sock, opts->endpoint) != 0) {
        base_err(err, "registration: cannot connect to %s: %s", opts->endpoint,
                 zmq_strerror(errno));
        goto err;
    }
    return self;
err:
    bus_reg_destroy(&self);
    return NULL;
}

void bus_reg_destroy(bus_reg_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    bus_reg_t *self = *self_p;
    if (self->sock)
        zmq_close(self->sock);
    if (self->own_ctx && self->ctx)
        zmq_ctx_term(self->ctx);
    free(self);
    *self_p = NULL;
}

void bus_reg_set_node(bus_reg_t *self, int node)
{
    assert(self);
    self->node = node;
}

int bus_reg_send(bus_reg_t *self, bus_msg_t *msg, char *err)
{
    assert(self && msg);
    enum bus_kind kind = bus_msg_kind(msg);
    if (bus_msg_encode(msg, self->node, self->seq[kind] + 1, &self->lim, err) != BASE_OK)
        return BASE_ERR;
    int rc = bus_zmq_send_msg(self->sock, msg, ZMQ_DONTWAIT, err);
    if (rc == BASE_OK)
        self->seq[kind]++;
    return rc;
}

int bus_reg_recv(bus_reg_t *self, bus_msg_t **out, int timeout_ms, char *err)
{
    assert(self && out);
    *out = NULL;
    int64_t deadline = base_monotonic_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        zmq_msg_t frames[BUS_MAX_FRAMES + 1];
        size_t n;
        int rc =
            bus_zmq_recv_multi(self->sock, frames, BASE_ARRAY_LEN(frames), &n, ZMQ_DONTWAIT, err);
        if (rc < 0)
            return BASE_ERR;
        if (rc == 1) {
            char derr[BASE_ERRLEN];
            enum base_dec dec = bus_msg_decode_zmq(frames, n, &self->lim, out, derr);
            bus_zmq_close_frames(frames, n < BASE_ARRAY_LEN(frames) ? n : BASE_ARRAY_LEN(frames));
            base_decstats_add(&self->dec, dec);
            if (dec == BASE_DEC_OK) {
                (*out)->arrival_ns = base_realtime_ns();
                return 1;
            }
            base_log(BASE_LOG_WARN, "bus", "registration reply rejected: %s", derr);
            continue;
        }
        int64_t left = (deadline - base_monotonic_ns() + 999999) / 1000000;
        if (left <= 0)
            return 0;
        if (bus_zmq_wait_in(self->sock, (int)left, err) < 0)
            return BASE_ERR;
    }
}

const base_decstats_t *bus_reg_decstats(const bus_reg_t *self)
{
    assert(self);
    return &self->dec;
}
