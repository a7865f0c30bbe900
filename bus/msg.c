/* Bus messages: building, encoding, and the one generic decoder. */
#include "bus/bus_int.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bus_limits bus_limits_default(void)
{
    struct bus_limits l = {.max_header = BUS_DEFAULT_MAX_HEADER,
                           .max_payload = BUS_DEFAULT_MAX_PAYLOAD};
    return l;
}

struct bus_limits bus_limits_fill(const struct bus_limits *lim)
{
    struct bus_limits l = bus_limits_default();
    if (lim != NULL) {
        if (lim->max_header)
            l.max_header = lim->max_header;
        if (lim->max_payload)
            l.max_payload = lim->max_payload;
    }
    return l;
}

void bus_render(const void *data, size_t len, char *out, size_t outlen)
{
    const unsigned char *p = data;
    size_t o = 0;
    for (size_t i = 0; i < len && o + 5 < outlen; i++) {
        if (i >= 40) {
            o += (size_t)snprintf(out + o, outlen - o, "...");
            break;
        }
        if (isprint(p[i]) && p[i] != '\\')
            out[o++] = (char)p[i];
        else
            o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", p[i]);
    }
    out[o < outlen ? o : outlen - 1] = '\0';
}

static bus_msg_t *msg_alloc(void)
{
    bus_msg_t *self = xcalloc(1, sizeof *self);
    for (size_t i = 0; i < BUS_MAX_FRAMES; i++)
        zmq_msg_init(&self->frames[i]);
    self->node = BUS_NODE_NONE;
    return self;
}

bus_msg_t *bus_msg_new(enum bus_kind kind)
{
    assert((unsigned)kind < BUS_K_NKINDS);
    bus_msg_t *self = msg_alloc();
    self->kind = kind;
    self->hdr = json_object_new_object();
    json_object_object_add(self->hdr, "type", json_object_new_string(bus_kind_name(kind)));
    return self;
}

void bus_msg_destroy(bus_msg_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    bus_msg_t *self = *self_p;
    for (size_t i = 0; i < BUS_MAX_FRAMES; i++)
        zmq_msg_close(&self->frames[i]);
    json_object_put(self->hdr);
    free(self);
    *self_p = NULL;
}

json_object *bus_msg_header(const bus_msg_t *self)
{
    assert(self);
    return self->hdr;
}

void bus_msg_set_i64(bus_msg_t *self, const char *key, int64_t v)
{
    assert(self);
    json_object_object_add(self->hdr, key, json_object_new_int64(v));
}

void bus_msg_set_u64(bus_msg_t *self, const char *key, uint64_t v)
{
    assert(self);
    json_object_object_add(self->hdr, key, json_object_new_uint64(v));
}

void bus_msg_set_double(bus_msg_t *self, const char *key, double v)
{
    assert(self);
    json_object_object_add(self->hdr, key, json_object_new_double(v));
}

void bus_msg_set_str(bus_msg_t *self, const char *key, const char *v)
{
    assert(self);
    json_object_object_add(self->hdr, key, json_object_new_string(v));
}

void bus_msg_set_bool(bus_msg_t *self, const char *key, bool v)
{
    assert(self);
    json_object_object_add(self->hdr, key, json_object_new_boolean(v));
}

void *bus_msg_payload_alloc(bus_msg_t *self, size_t len)
{
    assert(self);
    zmq_msg_close(&self->frames[2]);
    if (zmq_msg_init_size(&self->frames[2], len) != 0) {
        fprintf(stderr, "fatal: out of memory allocating a %zu-byte payload\n", len);
        abort();
    }
    self->has_payload = true;
    self->nframes = 0; /* the wire frames are stale until the next encode */
    return zmq_msg_data(&self->frames[2]);
}

void bus_msg_set_payload(bus_msg_t *self, const void *data, size_t len)
{
    void *buf = bus_msg_payload_alloc(self, len);
    if (len)
        memcpy(buf, data, len);
}

enum bus_kind bus_msg_kind(const bus_msg_t *self)
{
    assert(self);
    return self->kind;
}

int bus_msg_node(const bus_msg_t *self)
{
    assert(self);
    return self->node;
}

uint64_t bus_msg_seq(const bus_msg_t *self)
{
    assert(self);
    return self->seq;
}

const char *bus_msg_topic(const bus_msg_t *self)
{
    assert(self);
    return self->topic;
}

const void *bus_msg_payload(const bus_msg_t *self, size_t *len)
{
    assert(self);
    if (!self->has_payload) {
        *len = 0;
        return NULL;
    }
    *len = zmq_msg_size((zmq_msg_t *)&self->frames[2]);
    return zmq_msg_data((zmq_msg_t *)&self->frames[2]);
}

bool bus_msg_from_state(const bus_msg_t *self)
{
    assert(self);
    return self->from_state;
}

int64_t bus_msg_arrival_ns(const bus_msg_t *self)
{
    assert(self);
    return self->arrival_ns;
}

size_t bus_msg_frames(const bus_msg_t *self, struct bus_frame out[BUS_MAX_FRAMES])
{
    assert(self);
    for (size_t i = 0; i < self->nframes; i++) {
        zmq_msg_t *f = (zmq_msg_t *)&self->frames[i];
        out[i].data = zmq_msg_data(f);
        out[i].len = zmq_msg_size(f);
    }
    return self->nframes;
}

/* ---- validation shared by encoder and decoder ---- */

static enum base_dec parse_topic(const char *t, size_t len, enum bus_kind *kind, int *node,
                                 char *err)
{
    char shown[200];
    bus_render(t, len, shown, sizeof shown);
    if (len > BUS_MAX_TOPIC) {
        base_err(err, "topic of %zu bytes exceeds %d", len, BUS_MAX_TOPIC);
        return BASE_DEC_OVERSIZED;
    }
    if (len < 4 || memcmp(t, BUS_TOPIC_PREFIX, 4) != 0) {
        size_t i = 2;
        if (len > 3 && t[0] == 'd' && t[1] == 'p' && isdigit((unsigned char)t[2])) {
            while (i < len && isdigit((unsigned char)t[i]))
                i++;
            if (i < len && t[i] == '.') {
                base_err(err, "topic \"%s\" is protocol version %.*s, this reader speaks dp%d",
                         shown, (int)(i - 2), t + 2, BUS_PROTO_VERSION);
                return BASE_DEC_BAD_VERSION;
            }
        }
        base_err(err, "topic \"%s\" does not start with \"" BUS_TOPIC_PREFIX "\"", shown);
        return BASE_DEC_BAD_MAGIC;
    }
    const char *rest = t + 4, *end = t + len;
    const char *dot = memchr(rest, '.', (size_t)(end - rest));
    if (dot == NULL) {
        base_err(err, "topic \"%s\" has no node part", shown);
        return BASE_DEC_BAD_VALUE;
    }
    const struct bus_kind_def *d = bus_kind_lookup(rest, (size_t)(dot - rest));
    if (d == NULL) {
        base_err(err, "topic \"%s\" names an unknown message kind", shown);
        return BASE_DEC_BAD_TYPE;
    }
    const char *n = dot + 1;
    size_t nlen = (size_t)(end - n);
    if (nlen == 1 && n[0] == '-') {
        *node = BUS_NODE_NONE;
    } else {
        long v = 0;
        bool ok = nlen >= 1 && nlen <= 5 && !(nlen > 1 && n[0] == '0');
        for (size_t i = 0; ok && i < nlen; i++) {
            if (!isdigit((unsigned char)n[i]))
                ok = false;
            else
                v = v * 10 + (n[i] - '0');
        }
        if (!ok || v > BUS_NODE_MAX) {
            base_err(err, "topic \"%s\": node must be \"-\" or 0..%d", shown, BUS_NODE_MAX);
            return BASE_DEC_BAD_VALUE;
        }
        *node = (int)v;
    }
    *kind = d->kind;
    return BASE_DEC_OK;
}

/* Envelope, schema, sender node and payload rules for a parsed header. */
static enum base_dec check_message(enum bus_kind kind, int node, json_object *hdr,
                                   const struct bus_frame *payload, const struct bus_limits *lim,
                                   uint64_t *seq, char *err)
{
    const struct bus_kind_def *d = bus_kind_def(kind);
    if (!json_object_is_type(hdr, json_type_object)) {
        base_err(err, "%s header is not a JSON object", d->name);
        return BASE_DEC_BAD_TYPE;
    }
    json_object *v;
    if (!json_object_object_get_ex(hdr, "type", &v) || !json_object_is_type(v, json_type_string)) {
        base_err(err, "%s header has no string \"type\"", d->name);
        return BASE_DEC_BAD_TYPE;
    }
    if (strcmp(json_object_get_string(v), d->name) != 0) {
        char shown[100];
        const char *s = json_object_get_string(v);
        bus_render(s, strlen(s), shown, sizeof shown);
        base_err(err, "header type \"%s\" does not match topic kind \"%s\"", shown, d->name);
        return BASE_DEC_BAD_TYPE;
    }
    if (!json_object_object_get_ex(hdr, "seq", &v) || !json_object_is_type(v, json_type_int)) {
        base_err(err, "%s header has no integer \"seq\"", d->name);
        return BASE_DEC_BAD_TYPE;
    }
    if (json_object_get_int64(v) < 0) {
        base_err(err, "%s header \"seq\" is negative", d->name);
        return BASE_DEC_BAD_VALUE;
    }
    *seq = json_object_get_uint64(v);
    enum base_dec rc = bus_schema_validate(kind, hdr, err);
    if (rc != BASE_DEC_OK)
        return rc;
    if ((d->flags & BUS_KF_SENDER_NODE) && json_object_object_get_ex(hdr, "node", &v) &&
        json_object_get_int64(v) != node) {
        base_err(err, "%s header node %" PRId64 " is not the topic's sender node %d", d->name,
                 json_object_get_int64(v), node);
        return BASE_DEC_BAD_VALUE;
    }
    if (!(d->flags & BUS_KF_PAYLOAD)) {
        if (payload != NULL) {
            base_err(err, "%s messages carry no payload frame", d->name);
            return BASE_DEC_BAD_TYPE;
        }
        return BASE_DEC_OK;
    }
    if (payload == NULL) {
        base_err(err, "%s message lacks its payload frame", d->name);
        return BASE_DEC_TRUNCATED;
    }
    int64_t count = 0;
    if (d->count_field != NULL) {
        json_object_object_get_ex(hdr, d->count_field, &v);
        count = json_object_get_int64(v); /* schema-checked, 0..2^32-1 */
    }
    uint64_t need = d->payload_hdr + (uint64_t)count * d->payload_unit;
    if (need > lim->max_payload) {
        base_err(err, "%s payload of %" PRIu64 " bytes would exceed the limit of %zu", d->name,
                 need, lim->max_payload);
        return BASE_DEC_OVERSIZED;
    }
    if (payload->len < need) {
        base_err(err, "%s payload holds %zu bytes, %s=%" PRId64 " needs %" PRIu64, d->name,
                 payload->len, d->count_field ? d->count_field : "count", count, need);
        return BASE_DEC_TRUNCATED;
    }
    if (payload->len > need) {
        base_err(err, "%s payload has %zu bytes beyond its %" PRId64 " records", d->name,
                 (size_t)(payload->len - need), count);
        return BASE_DEC_BAD_VALUE;
    }
    return BASE_DEC_OK;
}

/* Validate the wire frames; on success *hdr is the parsed header. */
static enum base_dec validate(const struct bus_frame *f, size_t n, const struct bus_limits *lim,
                              enum bus_kind *kind, int *node, uint64_t *seq, json_object **hdr,
                              char *err)
{
    *hdr = NULL;
    if (n < 2) {
        base_err(err, "message of %zu frame%s needs a topic and a header", n, n == 1 ? "" : "s");
        return BASE_DEC_TRUNCATED;
    }
    if (n > BUS_MAX_FRAMES) {
        base_err(err, "message of %zu frames exceeds %d", n, BUS_MAX_FRAMES);
        return BASE_DEC_OVERSIZED;
    }
    enum base_dec rc = parse_topic(f[0].data, f[0].len, kind, node, err);
    if (rc != BASE_DEC_OK)
        return rc;
    if (f[1].len > lim->max_header) {
        base_err(err, "%s header of %zu bytes exceeds the limit of %zu", bus_kind_name(*kind),
                 f[1].len, lim->max_header);
        return BASE_DEC_OVERSIZED;
    }
    if (n == 3 && f[2].len > lim->max_payload) {
        base_err(err, "%s payload of %zu bytes exceeds the limit of %zu", bus_kind_name(*kind),
                 f[2].len, lim->max_payload);
        return BASE_DEC_OVERSIZED;
    }
    char jerr[BASE_ERRLEN];
    rc = base_json_parse(f[1].data, f[1].len, hdr, jerr);
    if (rc != BASE_DEC_OK) {
        base_err(err, "%s header: %s", bus_kind_name(*kind), jerr);
        return rc;
    }
    rc = check_message(*kind, *node, *hdr, n == 3 ? &f[2] : NULL, lim, seq, err);
    if (rc != BASE_DEC_OK) {
        json_object_put(*hdr);
        *hdr = NULL;
    }
    return rc;
}

static bus_msg_t *msg_from_valid(enum bus_kind kind, int node, uint64_t seq, json_object *hdr,
                                 const struct bus_frame *f0)
{
    bus_msg_t *self = msg_alloc();
    self->kind = kind;
    self->node = node;
    self->seq = seq;
    self->hdr = hdr;
    memcpy(self->topic, f0->data, f0->len);
    self->topic[f0->len] = '\0';
    return self;
}

enum base_dec bus_msg_decode(const struct bus_frame *frames, size_t nframes,
                             const struct bus_limits *lim, bus_msg_t **out, char *err)
{
    struct bus_limits l = bus_limits_fill(lim);
    enum bus_kind kind;
    int node;
    uint64_t seq;
    json_object *hdr;
    *out = NULL;
    enum base_dec rc = validate(frames, nframes, &l, &kind, &node, &seq, &hdr, err);
    if (rc != BASE_DEC_OK)
        return rc;
    bus_msg_t *self = msg_from_valid(kind, node, seq, hdr, &frames[0]);
    for (size_t i = 0; i < nframes; i++) {
        zmq_msg_close(&self->frames[i]);
        if (zmq_msg_init_size(&self->frames[i], frames[i].len) != 0) {
            fprintf(stderr, "fatal: out of memory copying a %zu-byte frame\n", frames[i].len);
            abort();
        }
        if (frames[i].len)
            memcpy(zmq_msg_data(&self->frames[i]), frames[i].data, frames[i].len);
    }
    self->nframes = nframes;
    self->has_payload = nframes == 3;
    *out = self;
    return BASE_DEC_OK;
}

enum base_dec bus_msg_decode_zmq(zmq_msg_t *frames, size_t nframes, const struct bus_limits *lim,
                                 bus_msg_t **out, char *err)
{
    struct bus_frame views[BUS_MAX_FRAMES + 1];
    size_t nv = nframes < BASE_ARRAY_LEN(views) ? nframes : BASE_ARRAY_LEN(views);
    for (size_t i = 0; i < nv; i++) {
        views[i].data = zmq_msg_data(&frames[i]);
        views[i].len = zmq_msg_size(&frames[i]);
    }
    enum bus_kind kind;
    int node;
    uint64_t seq;
    json_object *hdr;
    *out = NULL;
    enum base_dec rc = validate(views, nframes, lim, &kind, &node, &seq, &hdr, err);
    if (rc != BASE_DEC_OK)
        return rc;
    bus_msg_t *self = msg_from_valid(kind, node, seq, hdr, &views[0]);
    for (size_t i = 0; i < nframes; i++)
        zmq_msg_move(&self->frames[i], &frames[i]);
    self->nframes = nframes;
    self->has_payload = nframes == 3;
    *out = self;
    return BASE_DEC_OK;
}

int bus_msg_encode(bus_msg_t *self, int node, uint64_t seq, const struct bus_limits *lim, char *err)
{
    assert(self);
    struct bus_limits l = bus_limits_fill(lim);
    const struct bus_kind_def *d = bus_kind_def(self->kind);
    if (node != BUS_NODE_NONE && (node < 0 || node > BUS_NODE_MAX))
        return base_err(err, "node %d is outside 0..%d", node, BUS_NODE_MAX);
    json_object_object_add(self->hdr, "type", json_object_new_string(d->name));
    json_object_object_add(self->hdr, "seq", json_object_new_uint64(seq));
    struct bus_frame payload = {0};
    if (self->has_payload)
        payload.data = bus_msg_payload(self, &payload.len);
    uint64_t s;
    char verr[BASE_ERRLEN];
    if (check_message(self->kind, node, self->hdr, self->has_payload ? &payload : NULL, &l, &s,
                      verr) != BASE_DEC_OK)
        return base_err(err, "cannot encode: %s", verr);
    if (self->has_payload && payload.len > l.max_payload)
        return base_err(err, "cannot encode: %s payload of %zu bytes exceeds %zu", d->name,
                        payload.len, l.max_payload);
    size_t hlen;
    const char *text = json_object_to_json_string_length(self->hdr, JSON_C_TO_STRING_PLAIN, &hlen);
    if (hlen > l.max_header)
        return base_err(err, "cannot encode: %s header of %zu bytes exceeds %zu", d->name, hlen,
                        l.max_header);
    int tlen;
    if (node == BUS_NODE_NONE)
        tlen = snprintf(self->topic, sizeof self->topic, "%s%s.-", BUS_TOPIC_PREFIX, d->name);
    else
        tlen =
            snprintf(self->topic, sizeof self->topic, "%s%s.%d", BUS_TOPIC_PREFIX, d->name, node);
    zmq_msg_close(&self->frames[0]);
    zmq_msg_close(&self->frames[1]);
    if (zmq_msg_init_size(&self->frames[0], (size_t)tlen) != 0 ||
        zmq_msg_init_size(&self->frames[1], hlen) != 0) {
        fprintf(stderr, "fatal: out of memory encoding a message\n");
        abort();
    }
    memcpy(zmq_msg_data(&self->frames[0]), self->topic, (size_t)tlen);
    memcpy(zmq_msg_data(&self->frames[1]), text, hlen);
    self->node = node;
    self->seq = seq;
    self->nframes = self->has_payload ? 3 : 2;
    return BASE_OK;
}

/* ---- zmq helpers ---- */

void bus_zmq_close_frames(zmq_msg_t *frames, size_t n)
{
    for (size_t i = 0; i < n; i++)
        zmq_msg_close(&frames[i]);
}

int bus_zmq_recv_multi(void *sock, zmq_msg_t *frames, size_t cap, size_t *nframes, int flags,
                       char *err)
{
    size_t n = 0, total = 0;
    int more = 1;
    *nframes = 0;
    while (more) {
        zmq_msg_t scratch;
        zmq_msg_init(&scratch);
        zmq_msg_t *m = &scratch;
        if (n < cap) {
            m = &frames[n];
            zmq_msg_init(m);
        }
        if (zmq_msg_recv(m, sock, total == 0 ? flags : 0) < 0) {
            int e = errno;
            zmq_msg_close(m);
            bus_zmq_close_frames(frames, n);
            if (total == 0 && (e == EAGAIN || e == EINTR))
                return 0;
            return base_err(err, "receive failed: %s", zmq_strerror(e));
        }
        more = zmq_msg_more(m);
        total++;
        if (m == &scratch)
            zmq_msg_close(m); /* frames beyond cap are drained, never kept */
        else
            n++;
    }
    *nframes = total;
    if (total > n) {
        bus_zmq_close_frames(frames, n);
        for (size_t i = 0; i < cap; i++)
            zmq_msg_init(&frames[i]);
    }
    return 1;
}

int bus_zmq_send_msg(void *sock, const bus_msg_t *msg, int flags, char *err)
{
    for (size_t i = 0; i < msg->nframes; i++) {
        zmq_msg_t copy;
        zmq_msg_init(&copy);
        zmq_msg_copy(&copy, (zmq_msg_t *)&msg->frames[i]);
        int f = flags | (i + 1 < msg->nframes ? ZMQ_SNDMORE : 0);
        /* libzmq checks the high-water mark when a message starts: later
         * frames of an accepted message do not fail with EAGAIN. */
        if (i > 0)
            f &= ~ZMQ_DONTWAIT;
        if (zmq_msg_send(&copy, sock, f) < 0) {
            int e = errno;
            zmq_msg_close(&copy);
            if (i == 0 && e == EAGAIN)
                return BUS_DROPPED;
            return base_err(err, "send failed: %s", zmq_strerror(e));
        }
    }
    return BASE_OK;
}

int bus_zmq_wait_in(void *sock, int timeout_ms, char *err)
{
    zmq_pollitem_t it = {.socket = sock, .events = ZMQ_POLLIN};
    int rc = zmq_poll(&it, 1, timeout_ms);
    if (rc < 0 && errno == EINTR)
        return 0; /* a signal: the caller's loop looks at its deadline and flags */
    if (rc < 0)
        return base_err(err, "poll: %s", zmq_strerror(errno));
    return rc > 0 ? 1 : 0;
}

void *bus_zmq_context(void *given, bool *own, const char *who, char *err)
{
    *own = false;
    if (given)
        return given;
    void *ctx = zmq_ctx_new();
    if (ctx == NULL) {
        base_err(err, "%s: cannot create a ZeroMQ context: %s", who, zmq_strerror(errno));
        return NULL;
    }
    *own = true;
    return ctx;
}

void *bus_zmq_socket(void *ctx, int type, int sndhwm, int rcvhwm, const char *who, char *err)
{
    void *sock = zmq_socket(ctx, type);
    if (sock == NULL) {
        base_err(err, "%s: cannot create a socket: %s", who, zmq_strerror(errno));
        return NULL;
    }
    int zero = 0;
    if (zmq_setsockopt(sock, ZMQ_LINGER, &zero, sizeof zero) != 0 ||
        (sndhwm > 0 && zmq_setsockopt(sock, ZMQ_SNDHWM, &sndhwm, sizeof sndhwm) != 0) ||
        (rcvhwm > 0 && zmq_setsockopt(sock, ZMQ_RCVHWM, &rcvhwm, sizeof rcvhwm) != 0)) {
        base_err(err, "%s: socket options: %s", who, zmq_strerror(errno));
        zmq_close(sock);
        return NULL;
    }
    return sock;
}

/*
 * ZeroMQ reads a frame of any announced size into memory before anyone can
 * look at it, and queues it per subscriber: one peer sending 100 MB frames
 * took a hub from 53 MB to 1.15 GB.  A socket that faces the network takes
 * no frame larger than the bus's largest (the header or payload limit);
 * libzmq drops the connection that announces one.
 */
int bus_zmq_maxmsg(void *sock, const struct bus_limits *lim, const char *who, char *err)
{
    struct bus_limits l = bus_limits_fill(lim);
    int64_t max = (int64_t)(l.max_header > l.max_payload ? l.max_header : l.max_payload);
    if (zmq_setsockopt(sock, ZMQ_MAXMSGSIZE, &max, sizeof max) != 0)
        return base_err(err, "%s: socket options: %s", who, zmq_strerror(errno));
    return BASE_OK;
}

int bus_zmq_bind(void *sock, const char *who, const char *what, const char *endpoint, char *out,
                 size_t len, char *err)
{
    if (zmq_bind(sock, endpoint) != 0)
        return base_err(err, "%s: cannot bind the %s endpoint %s: %s", who, what, endpoint,
                        zmq_strerror(errno));
    size_t l = len;
    if (zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, out, &l) != 0)
        snprintf(out, len, "%s", endpoint);
    return BASE_OK;
}
