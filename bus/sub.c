/*
 * Subscriber: SUB on the hub's XPUB, the generic decoder on every message,
 * seq gap accounting per topic, and the late-joiner state fetch.
 *
 * State fetch (clone pattern with a sync marker, docs/PROTOCOL.md): the SUB
 * is subscribed first; a DEALER sends state_req{token} to the hub's ROUTER;
 * the hub publishes sync{token} on the bus, reads its own cache subscription
 * until that marker comes back (so the cache holds everything that passed
 * the XPUB before it), replies with the cached messages and state_end.
 * When our SUB also receives sync{token}, our subscription was active
 * before the snapshot point: snapshot + live stream leave no hole.
 */
#include "bus/bus_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SUB_MAX_TOPICS 65536
#define SUB_MAX_PREFIX 64

/*
 * A sequence number this far past the last one is not loss: no sender
 * drops a million messages on one topic between two that arrive.  It is a
 * forged or damaged message, or a sender whose counter was reset forward.
 */
#define SEQ_JUMP (1ULL << 20)

struct topic_state {
    enum bus_kind kind;
    uint64_t last_seq, msgs, gaps, resets;
    uint64_t jump_from; /* last_seq before a jump not yet followed (0: none) */
};

/* With CURVE, a hub that refuses the client's key looks just like one that
 * is not there: say which to check. */
#define CURVE_HINT                                                                                 \
    " (with CURVE, a hub refusing this key looks the same: check its authorized_keys)"

struct bus_sub {
    void *ctx;
    bool own_ctx;
    void *sock;
    struct bus_limits lim;
    size_t queue_max, queue_max_bytes, qbytes;
    bus_msg_t **queue; /* ring buffer of messages to deliver before the socket */
    size_t qhead, qlen, qcap;
    bus_map_t *topics;
    char **prefixes;
    size_t nprefixes;
    struct bus_curve *curve; /* for the state fetch's DEALER too */
    uint64_t tokens;
    struct bus_sub_stats st;
    char last_err[BASE_ERRLEN];
};

static void free_topic(void *p)
{
    free(p);
}

bus_sub_t *bus_sub_new(const struct bus_sub_opts *opts, char *err)
{
    assert(opts && opts->endpoint);
    bus_sub_t *self = xcalloc(1, sizeof *self);
    self->lim = bus_limits_fill(&opts->limits);
    self->queue_max = opts->queue_max ? opts->queue_max : 100000;
    self->queue_max_bytes = opts->queue_max_bytes ? opts->queue_max_bytes : 256u << 20;
    self->topics = bus_map_new();
    self->ctx = bus_zmq_context(opts->zctx, &self->own_ctx, "subscriber", err);
    if (self->ctx == NULL)
        goto err;
    self->sock = bus_zmq_socket(self->ctx, ZMQ_SUB, 0, opts->rcvhwm > 0 ? opts->rcvhwm : 10000,
                                "subscriber", err);
    if (self->sock == NULL || bus_zmq_maxmsg(self->sock, &self->lim, "subscriber", err) != BASE_OK)
        goto err;
    static const char *const everything[] = {BUS_TOPIC_PREFIX, NULL};
    const char *const *pre = opts->prefixes ? opts->prefixes : everything;
    for (size_t i = 0; pre[i]; i++) {
        if (strlen(pre[i]) > SUB_MAX_PREFIX) {
            base_err(err, "subscriber: prefix '%.20s...' is longer than %d", pre[i],
                     SUB_MAX_PREFIX);
            goto err;
        }
        if (zmq_setsockopt(self->sock, ZMQ_SUBSCRIBE, pre[i], strlen(pre[i])) != 0) {
            base_err(err, "subscriber: subscribe: %s", zmq_strerror(errno));
            goto err;
        }
        self->prefixes = xreallocarray(self->prefixes, self->nprefixes + 1, sizeof(char *));
        self->prefixes[self->nprefixes++] = xstrdup(pre[i]);
    }
    /* The state fetch needs the hub's sync markers whatever the filters are. */
    static const char sync_prefix[] = BUS_TOPIC_PREFIX "sync.";
    if (zmq_setsockopt(self->sock, ZMQ_SUBSCRIBE, sync_prefix, strlen(sync_prefix)) != 0) {
        base_err(err, "subscriber: subscribe: %s", zmq_strerror(errno));
        goto err;
    }
    if (bus_curve_client(self->sock, opts->curve, err) != BASE_OK)
        goto err;
    self->curve = bus_curve_copy(opts->curve);
    if (zmq_connect(self->sock, opts->endpoint) != 0) {
        base_err(err, "subscriber: cannot connect to %s: %s", opts->endpoint, zmq_strerror(errno));
        goto err;
    }
    return self;
err:
    bus_sub_destroy(&self);
    return NULL;
}

void bus_sub_destroy(bus_sub_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    bus_sub_t *self = *self_p;
    for (size_t i = 0; i < self->qlen; i++)
        bus_msg_destroy(&self->queue[(self->qhead + i) % self->qcap]);
    free(self->queue);
    bus_map_destroy(&self->topics, free_topic);
    for (size_t i = 0; i < self->nprefixes; i++)
        free(self->prefixes[i]);
    free(self->prefixes);
    bus_curve_free(self->curve);
    if (self->sock)
        zmq_close(self->sock);
    if (self->own_ctx && self->ctx)
        zmq_ctx_term(self->ctx);
    free(self);
    *self_p = NULL;
}

/* ---- delivery queue ---- */

static size_t msg_size(const bus_msg_t *m)
{
    struct bus_frame f[BUS_MAX_FRAMES];
    size_t n = bus_msg_frames(m, f), bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += f[i].len;
    return bytes;
}

static bool queue_push(bus_sub_t *self, bus_msg_t *msg, bool front)
{
    size_t size = msg_size(msg);
    if (self->qlen >= self->queue_max || self->qbytes + size > self->queue_max_bytes) {
        self->st.queue_drops++;
        bus_msg_destroy(&msg);
        return false;
    }
    if (self->qlen == self->qcap) {
        size_t ncap = self->qcap ? self->qcap * 2 : 64;
        bus_msg_t **q = xcalloc(ncap, sizeof *q);
        for (size_t i = 0; i < self->qlen; i++)
            q[i] = self->queue[(self->qhead + i) % self->qcap];
        free(self->queue);
        self->queue = q;
        self->qcap = ncap;
        self->qhead = 0;
    }
    if (front) {
        self->qhead = (self->qhead + self->qcap - 1) % self->qcap;
        self->queue[self->qhead] = msg;
    } else {
        self->queue[(self->qhead + self->qlen) % self->qcap] = msg;
    }
    self->qlen++;
    self->qbytes += size;
    return true;
}

static bus_msg_t *queue_pop(bus_sub_t *self)
{
    if (self->qlen == 0)
        return NULL;
    bus_msg_t *m = self->queue[self->qhead];
    self->queue[self->qhead] = NULL;
    self->qbytes -= msg_size(m);
    self->qhead = (self->qhead + 1) % self->qcap;
    self->qlen--;
    return m;
}

/* ---- receiving ---- */

static void track_seq(bus_sub_t *self, const bus_msg_t *m)
{
    struct topic_state *t = bus_map_get(self->topics, m->topic);
    uint64_t seq = m->seq;
    if (t == NULL) {
        if (bus_map_count(self->topics) >= SUB_MAX_TOPICS) {
            self->st.untracked++;
            return;
        }
        t = xcalloc(1, sizeof *t);
        t->kind = m->kind;
        t->last_seq = seq;
        t->msgs = 1;
        bus_map_put(self->topics, m->topic, t);
        return;
    }
    t->msgs++;
    /*
     * After a jump, a message that takes up the sequence where it was
     * before the jump shows the jumping one for a stray (one forged
     * message must not count as a sender's restart either: the console
     * reads a `nodes` reset as the master's); one that goes on from the
     * jump confirms it.
     */
    if (t->jump_from != 0) {
        uint64_t from = t->jump_from;
        t->jump_from = 0;
        if (seq > from && seq < t->last_seq) {
            self->st.strays++;
            t->last_seq = from;
        }
    }
    if (seq > t->last_seq + SEQ_JUMP) {
        self->st.jumps++;
        t->jump_from = t->last_seq;
    } else if (seq > t->last_seq + 1) {
        uint64_t gap = seq - t->last_seq - 1;
        t->gaps += gap;
        self->st.gaps += gap;
        self->st.kind[m->kind].gaps += gap;
    } else if (seq <= t->last_seq) {
        /* A restarted sender counts again from 1. */
        t->resets++;
        self->st.resets++;
        self->st.kind[m->kind].resets++;
    }
    t->last_seq = seq;
}

/* One message from sock: 1 decoded into *out, 2 rejected (counted), 0
 * nothing there, BASE_ERR on failure. */
static int recv_decoded(bus_sub_t *self, void *sock, bus_msg_t **out, char *err)
{
    zmq_msg_t frames[BUS_MAX_FRAMES + 1];
    size_t n;
    *out = NULL;
    int rc = bus_zmq_recv_multi(sock, frames, BASE_ARRAY_LEN(frames), &n, ZMQ_DONTWAIT, err);
    if (rc <= 0)
        return rc;
    enum base_dec dec = bus_msg_decode_zmq(frames, n, &self->lim, out, self->last_err);
    bus_zmq_close_frames(frames, n < BASE_ARRAY_LEN(frames) ? n : BASE_ARRAY_LEN(frames));
    base_decstats_add(&self->st.dec, dec);
    return dec == BASE_DEC_OK ? 1 : 2;
}

/* The same from the subscription, stamped and sequence-checked. */
static int recv_live(bus_sub_t *self, bus_msg_t **out, char *err)
{
    int rc = recv_decoded(self, self->sock, out, err);
    if (rc != 1)
        return rc;
    (*out)->arrival_ns = base_realtime_ns();
    track_seq(self, *out);
    return 1;
}

static void count_delivery(bus_sub_t *self, const bus_msg_t *m)
{
    size_t bytes = msg_size(m);
    self->st.msgs++;
    self->st.bytes += bytes;
    self->st.kind[m->kind].msgs++;
    self->st.kind[m->kind].bytes += bytes;
    if (m->from_state)
        self->st.state_msgs++;
}

int bus_sub_recv(bus_sub_t *self, bus_msg_t **out, int timeout_ms, char *err)
{
    assert(self && out);
    *out = queue_pop(self);
    if (*out) {
        count_delivery(self, *out);
        return 1;
    }
    int64_t deadline = base_monotonic_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        int rc = recv_live(self, out, err);
        if (rc == 1) {
            count_delivery(self, *out);
            return 1;
        }
        if (rc < 0)
            return BASE_ERR;
        if (rc == 2)
            continue;
        int64_t left = (deadline - base_monotonic_ns() + 999999) / 1000000;
        if (left <= 0)
            return 0;
        rc = bus_zmq_wait_in(self->sock, (int)left, err);
        if (rc < 0)
            return BASE_ERR;
    }
}

/* ---- late-joiner state ---- */

static bool is_token(const bus_msg_t *m, enum bus_kind kind, const char *token)
{
    const char *t;
    return m->kind == kind && base_json_get_str(m->hdr, "token", &t, NULL) == BASE_DEC_OK &&
           strcmp(t, token) == 0;
}

struct fetch {
    bus_msg_t **msgs; /* state messages of the current attempt */
    size_t n, cap, bytes;
    bool ended, synced;
    struct bus_state_info info;
};

static void fetch_reset(struct fetch *f)
{
    for (size_t i = 0; i < f->n; i++)
        bus_msg_destroy(&f->msgs[i]);
    f->n = 0;
    f->bytes = 0;
    f->ended = f->synced = false;
    memset(&f->info, 0, sizeof f->info);
}

static int send_state_req(bus_sub_t *self, void *dealer, const char *token, int64_t deadline,
                          char *err)
{
    bus_msg_t *req = bus_msg_new(BUS_K_STATE_REQ);
    bus_msg_set_str(req, "token", token);
    json_object *arr = json_object_new_array();
    for (size_t i = 0; i < self->nprefixes; i++)
        json_object_array_add(arr, json_object_new_string(self->prefixes[i]));
    json_object_object_add(bus_msg_header(req), "prefixes", arr);
    int rc = bus_msg_encode(req, BUS_NODE_NONE, ++self->tokens, &self->lim, err);
    /* The DEALER has ZMQ_IMMEDIATE: a send before the connection is up fails. */
    while (rc == BASE_OK) {
        rc = bus_zmq_send_msg(dealer, req, ZMQ_DONTWAIT, err);
        if (rc != BUS_DROPPED)
            break;
        if (base_monotonic_ns() >= deadline) {
            rc = base_err(err, "no connection to the hub's registration endpoint%s",
                          self->curve ? CURVE_HINT : "");
            break;
        }
        base_sleep_ns(5 * 1000000);
        rc = BASE_OK;
    }
    bus_msg_destroy(&req);
    return rc;
}

/* Read what the DEALER has: state messages and the end marker. */
static int read_state_reply(bus_sub_t *self, void *dealer, struct fetch *f, const char *token,
                            char *err)
{
    for (;;) {
        bus_msg_t *m = NULL;
        int rc = recv_decoded(self, dealer, &m, err);
        if (rc <= 0)
            return rc;
        if (rc == 2)
            continue;
        if (m->kind == BUS_K_STATE_END) {
            if (is_token(m, BUS_K_STATE_END, token)) {
                json_object *h = m->hdr;
                base_json_get_u64(h, "count", &f->info.count, NULL);
                base_json_get_bool(h, "complete", &f->info.complete, NULL);
                base_json_get_u64(h, "evicted", &f->info.evicted, NULL);
                f->ended = true;
                if (f->info.count != f->n)
                    f->info.complete = false;
            }
            bus_msg_destroy(&m);
            continue;
        }
        if (f->ended) { /* a late message of an older attempt */
            bus_msg_destroy(&m);
            continue;
        }
        m->from_state = true;
        m->arrival_ns = base_realtime_ns();
        if (f->n >= self->queue_max || f->bytes + msg_size(m) > self->queue_max_bytes) {
            self->st.queue_drops++;
            bus_msg_destroy(&m);
            continue;
        }
        if (f->n == f->cap) {
            f->cap = f->cap ? f->cap * 2 : 64;
            f->msgs = xreallocarray(f->msgs, f->cap, sizeof *f->msgs);
        }
        f->bytes += msg_size(m);
        f->msgs[f->n++] = m;
    }
}

int bus_sub_fetch_state(bus_sub_t *self, const char *reg_endpoint, int timeout_ms,
                        struct bus_state_info *info, char *err)
{
    assert(self && reg_endpoint);
    struct fetch f = {0};
    int rc = BASE_ERR;
    char token[64] = "";
    int64_t deadline = base_monotonic_ns() + (int64_t)timeout_ms * 1000000;
    int one = 1, hwm = (int)(self->queue_max < 1000000 ? self->queue_max + 16 : 1000000);
    void *dealer = bus_zmq_socket(self->ctx, ZMQ_DEALER, 0, hwm, "state", err);
    if (dealer == NULL || bus_zmq_maxmsg(dealer, &self->lim, "state", err) != BASE_OK)
        goto out;
    if (zmq_setsockopt(dealer, ZMQ_IMMEDIATE, &one, sizeof one) != 0) {
        base_err(err, "state: socket options: %s", zmq_strerror(errno));
        goto out;
    }
    if (bus_curve_client(dealer, self->curve, err) != BASE_OK)
        goto out;
    if (zmq_connect(dealer, reg_endpoint) != 0) {
        base_err(err, "state: cannot connect to %s: %s", reg_endpoint, zmq_strerror(errno));
        goto out;
    }
    bool have_unsynced = false; /* an ended attempt whose marker we did not see */
    struct fetch best = {0};
    while (base_monotonic_ns() < deadline) {
        fetch_reset(&f);
        snprintf(token, sizeof token, "%d-%" PRIu64 "-%" PRIx64, (int)getpid(), self->tokens + 1,
                 (uint64_t)base_monotonic_ns());
        if (send_state_req(self, dealer, token, deadline, err) != BASE_OK)
            goto out;
        int64_t end_seen_at = 0;
        while (!(f.ended && f.synced)) {
            int64_t now = base_monotonic_ns();
            /* After the end marker, give the sync marker a moment, then retry. */
            if (now >= deadline || (end_seen_at && now - end_seen_at > 300 * 1000000LL))
                break;
            zmq_pollitem_t it[2] = {{.socket = self->sock, .events = ZMQ_POLLIN},
                                    {.socket = dealer, .events = ZMQ_POLLIN}};
            if (zmq_poll(it, 2, 20) < 0 && errno != EINTR) {
                base_err(err, "state: poll: %s", zmq_strerror(errno));
                goto out;
            }
            for (;;) {
                bus_msg_t *m;
                int r = recv_live(self, &m, err);
                if (r < 0)
                    goto out;
                if (r == 0)
                    break;
                if (r == 1) {
                    if (is_token(m, BUS_K_SYNC, token))
                        f.synced = true;
                    queue_push(self, m, false);
                }
            }
            if (read_state_reply(self, dealer, &f, token, err) < 0)
                goto out;
            if (f.ended && end_seen_at == 0)
                end_seen_at = base_monotonic_ns();
        }
        if (f.ended && f.synced)
            break;
        if (f.ended) {
            /* Keep this snapshot in case no attempt gets synced in time. */
            fetch_reset(&best);
            free(best.msgs);
            best = f;
            memset(&f, 0, sizeof f);
            have_unsynced = true;
        }
    }
    if (!(f.ended && f.synced)) {
        if (!have_unsynced) {
            base_err(err, "no state reply from %s within %d ms%s", reg_endpoint, timeout_ms,
                     self->curve ? CURVE_HINT : "");
            goto out;
        }
        fetch_reset(&f);
        free(f.msgs);
        f = best;
        memset(&best, 0, sizeof best);
    }
    fetch_reset(&best);
    free(best.msgs);
    /* State goes before everything buffered meanwhile, in the hub's order. */
    for (size_t i = f.n; i-- > 0;) {
        queue_push(self, f.msgs[i], true);
        f.msgs[i] = NULL;
    }
    f.info.synced = f.synced;
    if (info)
        *info = f.info;
    f.n = 0;
    rc = BASE_OK;
out:
    fetch_reset(&f);
    free(f.msgs);
    if (dealer)
        zmq_close(dealer);
    return rc;
}

void bus_sub_stats(const bus_sub_t *self, struct bus_sub_stats *out)
{
    assert(self);
    *out = self->st;
}

struct topic_walk {
    struct bus_topic_stats *out;
    size_t max, n;
};

static bool walk_topic(const char *key, void *value, void *arg)
{
    struct topic_walk *w = arg;
    const struct topic_state *t = value;
    if (w->n < w->max) {
        struct bus_topic_stats *o = &w->out[w->n];
        snprintf(o->topic, sizeof o->topic, "%s", key);
        o->msgs = t->msgs;
        o->gaps = t->gaps;
        o->resets = t->resets;
        o->last_seq = t->last_seq;
    }
    w->n++;
    return true;
}

size_t bus_sub_topic_stats(const bus_sub_t *self, struct bus_topic_stats *out, size_t max)
{
    assert(self);
    struct topic_walk w = {out, max, 0};
    bus_map_foreach(self->topics, walk_topic, &w);
    return w.n;
}

const char *bus_sub_last_error(const bus_sub_t *self)
{
    assert(self);
    return self->last_err;
}
