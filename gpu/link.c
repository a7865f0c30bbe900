/*
 * The local link, sender side: message headers (JSON) and topics shared
 * with the receiver, the default endpoint, and a non-blocking PUSH socket.
 *
 * Why ZMQ_IMMEDIATE: without it a connecting PUSH queues messages for a peer
 * that is not there yet, up to the high-water mark, and delivers a stale
 * backlog much later.  With it a message is refused (EAGAIN under
 * ZMQ_DONTWAIT) when no receiver is connected, and the sender counts the
 * drop at once.  A socket monitor tells the sender when a receiver
 * (re)connects so that it re-sends its state (hello, names, scope pairs).
 */
#include "gpu/gpu.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

static const char *const msg_kind_names[GPU_MSG_NKINDS] = {
    [GPU_MSG_PROC] = "proc",   [GPU_MSG_EV] = "ev",     [GPU_MSG_NAMES] = "names",
    [GPU_MSG_SCOPE] = "scope", [GPU_MSG_SNAP] = "snap",
};

const char *gpu_msg_kind_name(enum gpu_msg_kind kind)
{
    return (unsigned)kind < GPU_MSG_NKINDS ? msg_kind_names[kind] : "unknown";
}

size_t gpu_msg_topic(enum gpu_msg_kind kind, char *buf, size_t len)
{
    int n = snprintf(buf, len, "dp1.%s.-", gpu_msg_kind_name(kind));
    return n < 0 ? 0 : (size_t)n;
}

static json_object *pair_i64(int64_t a, int64_t b)
{
    json_object *p = json_object_new_array_ext(2);
    json_object_array_add(p, json_object_new_int64(a));
    json_object_array_add(p, json_object_new_int64(b));
    return p;
}

static int check_domain(const char *d, const char *which, char *err)
{
    if (d == NULL || *d == '\0' || strlen(d) > GPU_DOMAIN_MAX)
        return base_err(err, "snap: domain %s is empty or longer than %d bytes", which,
                        GPU_DOMAIN_MAX);
    return BASE_OK;
}

char *gpu_msg_header(const gpu_msg_t *m, char *err)
{
    json_object *o = json_object_new_object();
    json_object *arr;
    char *text = NULL;
    json_object_object_add(o, "type", json_object_new_string(gpu_msg_kind_name(m->kind)));
    json_object_object_add(o, "pid", json_object_new_int64(m->pid));
    json_object_object_add(o, "seq", json_object_new_uint64(m->seq));
    switch (m->kind) {
    case GPU_MSG_PROC:
        json_object_object_add(o, "exe", json_object_new_string(m->exe ? m->exe : ""));
        json_object_object_add(o, "backend",
                               json_object_new_string(m->backend ? m->backend : "none"));
        json_object_object_add(o, "devices", json_object_new_int64(m->devices));
        json_object_object_add(o, "version", json_object_new_string(DP_VERSION));
        json_object_object_add(o, "t0_ns", json_object_new_int64(m->t0_ns));
        break;
    case GPU_MSG_EV:
        if (m->nev > GPU_LINK_MAX_EVENTS) {
            base_err(err, "ev: %zu events exceed the limit of %d", m->nev, GPU_LINK_MAX_EVENTS);
            goto err;
        }
        json_object_object_add(o, "count", json_object_new_int64((int64_t)m->nev));
        json_object_object_add(o, "dropped", json_object_new_uint64(m->dropped_total));
        break;
    case GPU_MSG_NAMES:
        if (m->nnames > GPU_LINK_MAX_NAMES) {
            base_err(err, "names: %zu names exceed the limit of %d", m->nnames, GPU_LINK_MAX_NAMES);
            goto err;
        }
        arr = json_object_new_array_ext((int)m->nnames);
        json_object_object_add(o, "names", arr);
        for (size_t i = 0; i < m->nnames; i++) {
            json_object *p = json_object_new_array_ext(2);
            json_object_array_add(p, json_object_new_int64(m->name_ids[i]));
            json_object_array_add(p, json_object_new_string(m->name_strs[i]));
            json_object_array_add(arr, p);
        }
        break;
    case GPU_MSG_SCOPE:
        if (m->nscope > GPU_LINK_MAX_SCOPE) {
            base_err(err, "scope: %zu pairs exceed the limit of %d", m->nscope, GPU_LINK_MAX_SCOPE);
            goto err;
        }
        arr = json_object_new_array_ext((int)m->nscope);
        json_object_object_add(o, "tree", arr);
        for (size_t i = 0; i < m->nscope; i++) {
            json_object *p = json_object_new_array_ext(2);
            json_object_array_add(p, json_object_new_uint64(m->scope[i].child));
            json_object_array_add(p, json_object_new_uint64(m->scope[i].parent));
            json_object_array_add(arr, p);
        }
        break;
    case GPU_MSG_SNAP:
        if (m->nsnap > GPU_LINK_MAX_SNAP) {
            base_err(err, "snap: %zu pairs exceed the limit of %d", m->nsnap, GPU_LINK_MAX_SNAP);
            goto err;
        }
        if (check_domain(m->domain_a, "a", err) != BASE_OK ||
            check_domain(m->domain_b, "b", err) != BASE_OK)
            goto err;
        json_object_object_add(o, "a", json_object_new_string(m->domain_a));
        json_object_object_add(o, "b", json_object_new_string(m->domain_b));
        arr = json_object_new_array_ext((int)m->nsnap);
        json_object_object_add(o, "pairs", arr);
        for (size_t i = 0; i < m->nsnap; i++)
            json_object_array_add(arr, pair_i64(m->snap[i].a_ns, m->snap[i].b_ns));
        break;
    default:
        base_err(err, "unknown message kind %d", (int)m->kind);
        goto err;
    }
    text = xstrdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
    if (strlen(text) > GPU_LINK_MAX_HDR) {
        base_err(err, "%s: header of %zu bytes exceeds the limit of %d", gpu_msg_kind_name(m->kind),
                 strlen(text), GPU_LINK_MAX_HDR);
        free(text);
        text = NULL;
    }
err:
    json_object_put(o);
    return text;
}

int gpu_link_default_endpoint(char *buf, size_t len, char *err)
{
    const char *env = getenv("DPTOP_TRACE_ENDPOINT");
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int n;
    if (env != NULL && *env != '\0')
        n = snprintf(buf, len, "%s", env);
    else if (xdg != NULL && *xdg == '/')
        n = snprintf(buf, len, "ipc://%s/dptop-trace.sock", xdg);
    else
        n = snprintf(buf, len, "ipc:///tmp/dptop-trace-%u.sock", (unsigned)getuid());
    if (n < 0 || (size_t)n >= len)
        return base_err(err, "trace endpoint is longer than %zu bytes", len);
    return BASE_OK;
}

struct gpu_link {
    void *ctx;
    void *push;
    void *mon;
    uint64_t seq;
    uint64_t sent;
    uint64_t refused;
    uint64_t retries; /* connection attempts that failed (no receiver listening) */
    bool up;          /* a receiver is connected, as far as the monitor has said */
    bool changed;     /* one connected or was lost since gpu_link_take_reconnect */
    char *endpoint;
};

gpu_link_t *gpu_link_new(const char *endpoint, int sndhwm, char *err)
{
    gpu_link_t *self = xcalloc(1, sizeof *self);
    char monep[64];
    int one = 1, linger = 0, hwm = sndhwm > 0 ? sndhwm : 64;
    self->endpoint = xstrdup(endpoint);
    self->ctx = zmq_ctx_new();
    if (self->ctx == NULL) {
        base_err(err, "zmq_ctx_new: %s", zmq_strerror(errno));
        goto err;
    }
    /* One I/O thread is plenty for a trickle of batches; no more threads in
     * someone else's process than needed. */
    zmq_ctx_set(self->ctx, ZMQ_IO_THREADS, 1);
    self->push = zmq_socket(self->ctx, ZMQ_PUSH);
    if (self->push == NULL) {
        base_err(err, "zmq_socket: %s", zmq_strerror(errno));
        goto err;
    }
    zmq_setsockopt(self->push, ZMQ_IMMEDIATE, &one, sizeof one);
    zmq_setsockopt(self->push, ZMQ_SNDHWM, &hwm, sizeof hwm);
    zmq_setsockopt(self->push, ZMQ_LINGER, &linger, sizeof linger);
    snprintf(monep, sizeof monep, "inproc://dptrace-link-mon-%p", (void *)self);
    if (zmq_socket_monitor(self->push, monep,
                           ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_CONNECT_RETRIED |
                               ZMQ_EVENT_DISCONNECTED) != 0) {
        base_err(err, "zmq_socket_monitor: %s", zmq_strerror(errno));
        goto err;
    }
    self->mon = zmq_socket(self->ctx, ZMQ_PAIR);
    if (self->mon == NULL || zmq_connect(self->mon, monep) != 0) {
        base_err(err, "cannot connect the link monitor: %s", zmq_strerror(errno));
        goto err;
    }
    zmq_setsockopt(self->mon, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect(self->push, endpoint) != 0) {
        base_err(err, "cannot connect to %s: %s", endpoint, zmq_strerror(errno));
        goto err;
    }
    return self;
err:
    gpu_link_destroy(&self);
    return NULL;
}

void gpu_link_destroy(gpu_link_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    gpu_link_t *self = *self_p;
    if (self->push != NULL) {
        /* What is queued (only ever for a connected receiver) gets a moment
         * to go out; the wait is bounded. */
        int linger = 1000;
        zmq_setsockopt(self->push, ZMQ_LINGER, &linger, sizeof linger);
        zmq_socket_monitor(self->push, NULL, 0);
        zmq_close(self->push);
    }
    if (self->mon != NULL)
        zmq_close(self->mon);
    if (self->ctx != NULL)
        zmq_ctx_term(self->ctx);
    free(self->endpoint);
    free(self);
    *self_p = NULL;
}

/* What the monitor has said since it was last read. */
static void read_monitor(gpu_link_t *self)
{
    for (;;) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, self->mon, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&part);
            break;
        }
        /* First frame: u16 event id, u32 value; second: the endpoint. */
        if (zmq_msg_size(&part) >= 2) {
            uint16_t ev;
            memcpy(&ev, zmq_msg_data(&part), 2);
            /* Ready to take messages once the ZMTP handshake is done, not
             * at the socket connect: before it, sends are refused. */
            if (ev == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
                self->up = self->changed = true;
            } else if (ev == ZMQ_EVENT_DISCONNECTED) {
                /* Said before the old pipe goes, so before any new one
                 * takes a message: whoever comes next needs the state. */
                self->up = false;
                self->changed = true;
            } else if (ev == ZMQ_EVENT_CONNECT_RETRIED)
                self->retries++;
        }
        int more = zmq_msg_more(&part);
        zmq_msg_close(&part);
        while (more) {
            zmq_msg_init(&part);
            if (zmq_msg_recv(&part, self->mon, ZMQ_DONTWAIT) < 0) {
                zmq_msg_close(&part);
                break;
            }
            more = zmq_msg_more(&part);
            zmq_msg_close(&part);
        }
    }
}

bool gpu_link_take_reconnect(gpu_link_t *self)
{
    assert(self);
    read_monitor(self);
    bool r = self->changed;
    self->changed = false;
    return r;
}

bool gpu_link_up(gpu_link_t *self)
{
    assert(self);
    read_monitor(self);
    return self->up;
}

int gpu_link_send(gpu_link_t *self, const gpu_msg_t *msg, char *err)
{
    assert(self);
    gpu_msg_t m = *msg;
    /* Every attempt takes a number, so a receiver sees refused messages as gaps. */
    m.seq = ++self->seq;
    char topic[GPU_LINK_MAX_TOPIC];
    size_t tlen = gpu_msg_topic(m.kind, topic, sizeof topic);
    char *hdr = gpu_msg_header(&m, err);
    void *payload = NULL;
    size_t plen = 0;
    int rc = BASE_ERR;
    if (hdr == NULL)
        goto out;
    if (m.kind == GPU_MSG_EV) {
        plen = gpu_batch_size(m.nev);
        payload = xmalloc(plen);
        gpu_batch_encode(m.ev, m.nev, payload);
    }
    /*
     * A send looks at the socket's own commands (a receiver's pipe being
     * attached among them) at most once a millisecond or so; asking for
     * ZMQ_EVENTS makes it look now, so that the first messages after a
     * receiver connects (the state, at a short program's exit the only
     * batch) are not refused for a pipe that is already there.
     */
    int events = 0;
    size_t elen = sizeof events;
    zmq_getsockopt(self->push, ZMQ_EVENTS, &events, &elen);
    /* Later frames of a multipart message are never refused once the first
     * is accepted, so a refusal here leaves nothing half-sent. */
    if (zmq_send(self->push, topic, tlen, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0) {
        base_err(err, "%s not sent to %s: %s", gpu_msg_kind_name(m.kind), self->endpoint,
                 errno == EAGAIN ? "no receiver, or it is slow" : zmq_strerror(errno));
        goto out;
    }
    zmq_send(self->push, hdr, strlen(hdr), (payload ? ZMQ_SNDMORE : 0) | ZMQ_DONTWAIT);
    if (payload != NULL)
        zmq_send(self->push, payload, plen, ZMQ_DONTWAIT);
    rc = BASE_OK;
out:
    if (rc == BASE_OK)
        self->sent++;
    else
        self->refused++;
    free(hdr);
    free(payload);
    return rc;
}

uint64_t gpu_link_retries(const gpu_link_t *self)
{
    assert(self);
    return self->retries;
}

uint64_t gpu_link_sent(const gpu_link_t *self)
{
    assert(self);
    return self->sent;
}

uint64_t gpu_link_refused(const gpu_link_t *self)
{
    assert(self);
    return self->refused;
}
