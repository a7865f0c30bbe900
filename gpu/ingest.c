/*
 * The local link, receiver side: a PULL socket bound where applications
 * with libdptrace connect, and the decoder that validates every message
 * before anything downstream sees it.  Nothing is allocated from a size the
 * input states: every array has a fixed limit (gpu.h, GPU_LINK_MAX_*) and
 * its storage is allocated once.
 */
#include "gpu/gpu.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmq.h>

#define MAX_FRAMES 3
#define MAX_EXE    255

struct gpu_ingest {
    void *ctx;
    void *pull;
    gpu_msg_fn fn;
    void *fn_ctx;
    json_object *hdr; /* of the last decoded message, kept until the next */
    gpu_event_t *ev;
    uint32_t *name_ids;
    const char **name_strs;
    struct gpu_scope_pair *scope;
    struct gpu_snap_pair *snap;
    base_decstats_t stats;
    uint64_t per_kind[GPU_MSG_NKINDS];
    char last_err[BASE_ERRLEN];
};

gpu_ingest_t *gpu_ingest_new(const char *endpoint, gpu_msg_fn fn, void *ctx, char *err)
{
    gpu_ingest_t *self = xcalloc(1, sizeof *self);
    self->fn = fn;
    self->fn_ctx = ctx;
    self->ev = xcalloc(GPU_LINK_MAX_EVENTS, sizeof *self->ev);
    self->name_ids = xcalloc(GPU_LINK_MAX_NAMES, sizeof *self->name_ids);
    self->name_strs = xcalloc(GPU_LINK_MAX_NAMES, sizeof *self->name_strs);
    self->scope = xcalloc(GPU_LINK_MAX_SCOPE, sizeof *self->scope);
    self->snap = xcalloc(GPU_LINK_MAX_SNAP, sizeof *self->snap);
    if (endpoint == NULL)
        return self;
    int linger = 0, hwm = 10000;
    /* A peer that sends a frame larger than any valid message is cut off by
     * ZeroMQ itself before the frame is buffered. */
    int64_t maxmsg = GPU_LINK_MAX_HDR + (int64_t)gpu_batch_size(GPU_LINK_MAX_EVENTS);
    self->ctx = zmq_ctx_new();
    if (self->ctx == NULL) {
        base_err(err, "zmq_ctx_new: %s", zmq_strerror(errno));
        goto err;
    }
    self->pull = zmq_socket(self->ctx, ZMQ_PULL);
    if (self->pull == NULL) {
        base_err(err, "zmq_socket: %s", zmq_strerror(errno));
        goto err;
    }
    zmq_setsockopt(self->pull, ZMQ_LINGER, &linger, sizeof linger);
    zmq_setsockopt(self->pull, ZMQ_RCVHWM, &hwm, sizeof hwm);
    zmq_setsockopt(self->pull, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
    if (zmq_bind(self->pull, endpoint) != 0) {
        base_err(err, "cannot bind the trace endpoint %s: %s", endpoint, zmq_strerror(errno));
        goto err;
    }
    return self;
err:
    gpu_ingest_destroy(&self);
    return NULL;
}

void gpu_ingest_destroy(gpu_ingest_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    gpu_ingest_t *self = *self_p;
    if (self->pull != NULL)
        zmq_close(self->pull);
    if (self->ctx != NULL)
        zmq_ctx_term(self->ctx);
    json_object_put(self->hdr);
    free(self->ev);
    free(self->name_ids);
    free(self->name_strs);
    free(self->scope);
    free(self->snap);
    free(self);
    *self_p = NULL;
}

void *gpu_ingest_socket(gpu_ingest_t *self)
{
    assert(self);
    return self->pull;
}

/* Strict UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF). */
static bool utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        size_t len;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            len = 2;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + len > n)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += len;
    }
    return true;
}

static enum base_dec get_string(json_object *o, const char *key, size_t max, bool nonempty,
                                const char **out, char *err)
{
    json_object *v;
    if (!json_object_object_get_ex(o, key, &v) || v == NULL) {
        base_err(err, "missing field \"%s\"", key);
        return BASE_DEC_BAD_TYPE;
    }
    if (!json_object_is_type(v, json_type_string)) {
        base_err(err, "field \"%s\" must be a string", key);
        return BASE_DEC_BAD_TYPE;
    }
    *out = json_object_get_string(v);
    size_t n = (size_t)json_object_get_string_len(v);
    if (n > max) {
        base_err(err, "field \"%s\" is longer than %zu bytes", key, max);
        return BASE_DEC_OVERSIZED;
    }
    if (strlen(*out) != n) {
        base_err(err, "field \"%s\" holds a NUL character", key);
        return BASE_DEC_BAD_VALUE;
    }
    if (nonempty && n == 0) {
        base_err(err, "field \"%s\" is empty", key);
        return BASE_DEC_BAD_VALUE;
    }
    if (!utf8_valid((const unsigned char *)*out, n)) {
        base_err(err, "field \"%s\" is not valid UTF-8", key);
        return BASE_DEC_BAD_VALUE;
    }
    return BASE_DEC_OK;
}

/* The array under key, with at most max elements. */
static enum base_dec get_array(json_object *o, const char *key, size_t max, json_object **arr,
                               size_t *n, char *err)
{
    if (!json_object_object_get_ex(o, key, arr) || *arr == NULL) {
        base_err(err, "missing field \"%s\"", key);
        return BASE_DEC_BAD_TYPE;
    }
    if (!json_object_is_type(*arr, json_type_array)) {
        base_err(err, "field \"%s\" must be an array", key);
        return BASE_DEC_BAD_TYPE;
    }
    *n = json_object_array_length(*arr);
    if (*n > max) {
        base_err(err, "field \"%s\" holds %zu elements, the limit is %zu", key, *n, max);
        return BASE_DEC_OVERSIZED;
    }
    return BASE_DEC_OK;
}

/* Element i of arr as a 2-element array. */
static enum base_dec get_pair(json_object *arr, size_t i, const char *key, json_object **a,
                              json_object **b, char *err)
{
    json_object *p = json_object_array_get_idx(arr, i);
    if (p == NULL || !json_object_is_type(p, json_type_array) || json_object_array_length(p) != 2) {
        base_err(err, "%s[%zu] must be a pair [x, y]", key, i);
        return BASE_DEC_BAD_TYPE;
    }
    *a = json_object_array_get_idx(p, 0);
    *b = json_object_array_get_idx(p, 1);
    return BASE_DEC_OK;
}

/* A JSON integer as u64 (json-c keeps large positives as uint64). */
static enum base_dec as_u64(json_object *v, uint64_t *out)
{
    if (v == NULL || !json_object_is_type(v, json_type_int))
        return BASE_DEC_BAD_TYPE;
    errno = 0;
    int64_t s = json_object_get_int64(v);
    if (errno == 0 && s < 0)
        return BASE_DEC_BAD_VALUE;
    errno = 0;
    uint64_t u = json_object_get_uint64(v);
    if (errno != 0)
        return BASE_DEC_BAD_VALUE;
    *out = u;
    return BASE_DEC_OK;
}

static enum base_dec as_i64(json_object *v, int64_t *out)
{
    if (v == NULL || !json_object_is_type(v, json_type_int))
        return BASE_DEC_BAD_TYPE;
    errno = 0;
    int64_t s = json_object_get_int64(v);
    if (errno != 0)
        return BASE_DEC_BAD_VALUE;
    *out = s;
    return BASE_DEC_OK;
}

static enum base_dec decode_topic(const void *buf, size_t len, enum gpu_msg_kind *kind, char *err)
{
    char t[GPU_LINK_MAX_TOPIC + 1];
    if (len > GPU_LINK_MAX_TOPIC) {
        base_err(err, "topic of %zu bytes exceeds %d", len, GPU_LINK_MAX_TOPIC);
        return BASE_DEC_OVERSIZED;
    }
    memcpy(t, buf, len);
    t[len] = '\0';
    if (strlen(t) != len) {
        base_err(err, "topic holds a NUL byte");
        return BASE_DEC_BAD_VALUE;
    }
    if (strncmp(t, "dp1.", 4) != 0) {
        if (len >= 3 && t[0] == 'd' && t[1] == 'p' && t[2] >= '0' && t[2] <= '9') {
            base_err(err, "topic '%.40s' is not protocol version 1", t);
            return BASE_DEC_BAD_VERSION;
        }
        base_err(err, "topic '%.40s' does not start with dp1.", t);
        return BASE_DEC_BAD_MAGIC;
    }
    char *k = t + 4, *dot = strchr(k, '.');
    if (dot == NULL) {
        base_err(err, "topic '%.40s' has no node part", t);
        return BASE_DEC_BAD_VALUE;
    }
    *dot = '\0';
    for (int i = 0; i < GPU_MSG_NKINDS; i++) {
        if (strcmp(k, gpu_msg_kind_name((enum gpu_msg_kind)i)) == 0) {
            if (strcmp(dot + 1, "-") != 0) {
                base_err(err, "topic node part '%.20s' is not '-' on the local link", dot + 1);
                return BASE_DEC_BAD_VALUE;
            }
            *kind = (enum gpu_msg_kind)i;
            return BASE_DEC_OK;
        }
    }
    base_err(err, "topic kind '%.20s' is not a local link message kind", k);
    return BASE_DEC_BAD_TYPE;
}

static enum base_dec decode_names(gpu_ingest_t *self, json_object *h, gpu_msg_t *m, char *err)
{
    json_object *arr, *a, *b;
    size_t n;
    enum base_dec rc = get_array(h, "names", GPU_LINK_MAX_NAMES, &arr, &n, err);
    if (rc != BASE_DEC_OK)
        return rc;
    for (size_t i = 0; i < n; i++) {
        uint64_t id;
        if ((rc = get_pair(arr, i, "names", &a, &b, err)) != BASE_DEC_OK)
            return rc;
        if ((rc = as_u64(a, &id)) != BASE_DEC_OK || id == 0 || id > UINT32_MAX) {
            base_err(err, "names[%zu]: id must be an integer in [1, 2^32)", i);
            return rc != BASE_DEC_OK ? rc : BASE_DEC_BAD_VALUE;
        }
        if (!json_object_is_type(b, json_type_string)) {
            base_err(err, "names[%zu]: name must be a string", i);
            return BASE_DEC_BAD_TYPE;
        }
        const char *s = json_object_get_string(b);
        size_t len = (size_t)json_object_get_string_len(b);
        if (len > GPU_NAME_MAX || strlen(s) != len) {
            base_err(err, "names[%zu]: name is longer than %d bytes or holds NUL", i, GPU_NAME_MAX);
            return len > GPU_NAME_MAX ? BASE_DEC_OVERSIZED : BASE_DEC_BAD_VALUE;
        }
        if (!utf8_valid((const unsigned char *)s, len)) {
            base_err(err, "names[%zu]: name is not valid UTF-8", i);
            return BASE_DEC_BAD_VALUE;
        }
        self->name_ids[i] = (uint32_t)id;
        self->name_strs[i] = s;
    }
    m->name_ids = self->name_ids;
    m->name_strs = self->name_strs;
    m->nnames = n;
    return BASE_DEC_OK;
}

static enum base_dec decode_scope(gpu_ingest_t *self, json_object *h, gpu_msg_t *m, char *err)
{
    json_object *arr, *a, *b;
    size_t n;
    enum base_dec rc = get_array(h, "tree", GPU_LINK_MAX_SCOPE, &arr, &n, err);
    if (rc != BASE_DEC_OK)
        return rc;
    for (size_t i = 0; i < n; i++) {
        uint64_t child, parent;
        if ((rc = get_pair(arr, i, "tree", &a, &b, err)) != BASE_DEC_OK)
            return rc;
        if ((rc = as_u64(a, &child)) != BASE_DEC_OK || (rc = as_u64(b, &parent)) != BASE_DEC_OK) {
            base_err(err, "tree[%zu]: ids must be non-negative integers", i);
            return rc;
        }
        if (child == 0 || child == parent) {
            base_err(err, "tree[%zu]: [%" PRIu64 ", %" PRIu64 "] is not a child-parent pair", i,
                     child, parent);
            return BASE_DEC_BAD_VALUE;
        }
        self->scope[i] = (struct gpu_scope_pair){child, parent};
    }
    m->scope = self->scope;
    m->nscope = n;
    return BASE_DEC_OK;
}

static enum base_dec decode_snap(gpu_ingest_t *self, json_object *h, gpu_msg_t *m, char *err)
{
    json_object *arr, *a, *b;
    size_t n;
    enum base_dec rc;
    static const char *const fields[2] = {"a", "b"};
    const char *d[2];
    for (size_t i = 0; i < 2; i++) {
        json_object *v;
        if (!json_object_object_get_ex(h, fields[i], &v) || v == NULL) {
            base_err(err, "missing field \"%s\" (clock domain)", fields[i]);
            return BASE_DEC_BAD_TYPE;
        }
        if (!json_object_is_type(v, json_type_string)) {
            base_err(err, "field \"%s\" must be a string", fields[i]);
            return BASE_DEC_BAD_TYPE;
        }
        d[i] = json_object_get_string(v);
        size_t len = (size_t)json_object_get_string_len(v);
        if (len == 0 || len > GPU_DOMAIN_MAX || strlen(d[i]) != len) {
            base_err(err, "field \"%s\" must be 1 to %d bytes", fields[i], GPU_DOMAIN_MAX);
            return BASE_DEC_BAD_VALUE;
        }
        for (size_t k = 0; k < len; k++) {
            char c = d[i][k];
            if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '.')) {
                base_err(err, "field \"%s\" holds a character outside [A-Za-z0-9_.-]", fields[i]);
                return BASE_DEC_BAD_VALUE;
            }
        }
    }
    if (strcmp(d[0], d[1]) == 0) {
        base_err(err, "snap pairs one domain with itself (%s)", d[0]);
        return BASE_DEC_BAD_VALUE;
    }
    if ((rc = get_array(h, "pairs", GPU_LINK_MAX_SNAP, &arr, &n, err)) != BASE_DEC_OK)
        return rc;
    for (size_t i = 0; i < n; i++) {
        int64_t x, y;
        if ((rc = get_pair(arr, i, "pairs", &a, &b, err)) != BASE_DEC_OK)
            return rc;
        if ((rc = as_i64(a, &x)) != BASE_DEC_OK || (rc = as_i64(b, &y)) != BASE_DEC_OK) {
            base_err(err, "pairs[%zu]: readings must be integers (ns)", i);
            return rc;
        }
        if (i > 0 && (x <= self->snap[i - 1].a_ns || y <= self->snap[i - 1].b_ns)) {
            base_err(err, "pairs[%zu]: readings must increase in both domains", i);
            return BASE_DEC_BAD_VALUE;
        }
        self->snap[i] = (struct gpu_snap_pair){x, y};
    }
    m->domain_a = d[0];
    m->domain_b = d[1];
    m->snap = self->snap;
    m->nsnap = n;
    return BASE_DEC_OK;
}

static enum base_dec decode_proc(json_object *h, gpu_msg_t *m, char *err)
{
    static const char *const backends[] = {"hip", "cupti", "sim", "none"};
    enum base_dec rc;
    uint64_t devices;
    if ((rc = get_string(h, "exe", MAX_EXE, false, &m->exe, err)) != BASE_DEC_OK ||
        (rc = get_string(h, "backend", 16, true, &m->backend, err)) != BASE_DEC_OK ||
        (rc = base_json_get_u64(h, "devices", &devices, err)) != BASE_DEC_OK ||
        (rc = base_json_get_i64(h, "t0_ns", &m->t0_ns, err)) != BASE_DEC_OK)
        return rc;
    bool known = false;
    for (size_t i = 0; i < BASE_ARRAY_LEN(backends); i++)
        known = known || strcmp(m->backend, backends[i]) == 0;
    if (!known) {
        base_err(err, "unknown backend '%s'", m->backend);
        return BASE_DEC_BAD_VALUE;
    }
    if (devices > 4096) {
        base_err(err, "devices %" PRIu64 " is out of range", devices);
        return BASE_DEC_BAD_VALUE;
    }
    m->devices = (uint32_t)devices;
    return BASE_DEC_OK;
}

static enum base_dec decode_ev(gpu_ingest_t *self, json_object *h, const void *payload, size_t plen,
                               gpu_msg_t *m, char *err)
{
    uint64_t count;
    enum base_dec rc;
    if ((rc = base_json_get_u64(h, "count", &count, err)) != BASE_DEC_OK ||
        (rc = base_json_get_u64(h, "dropped", &m->dropped_total, err)) != BASE_DEC_OK)
        return rc;
    if (count > GPU_LINK_MAX_EVENTS) {
        base_err(err, "ev: count %" PRIu64 " exceeds the limit of %d", count, GPU_LINK_MAX_EVENTS);
        return BASE_DEC_OVERSIZED;
    }
    size_t n;
    char berr[BASE_ERRLEN];
    rc = gpu_batch_decode(payload, plen, 0, self->ev, GPU_LINK_MAX_EVENTS, &n, berr);
    if (rc != BASE_DEC_OK) {
        base_err(err, "ev payload: %s", berr);
        return rc;
    }
    if (n != count) {
        base_err(err, "ev: header says %" PRIu64 " events, the payload holds %zu", count, n);
        return BASE_DEC_BAD_VALUE;
    }
    for (size_t i = 0; i < n; i++) {
        if (self->ev[i].pid != m->pid) {
            base_err(err, "ev: event %zu has pid %" PRIu32 ", the sender is %" PRIu32, i,
                     self->ev[i].pid, m->pid);
            return BASE_DEC_BAD_VALUE;
        }
    }
    m->ev = self->ev;
    m->nev = n;
    return BASE_DEC_OK;
}

static enum base_dec decode(gpu_ingest_t *self, const void *const *frames, const size_t *lens,
                            size_t nframes, gpu_msg_t *m, char *err)
{
    enum base_dec rc;
    json_object *h;
    const char *type;
    uint64_t pid;
    memset(m, 0, sizeof *m);
    json_object_put(self->hdr);
    self->hdr = NULL;
    if (nframes < 2 || nframes > MAX_FRAMES) {
        base_err(err, "message has %zu frames, expected 2 or 3", nframes);
        return nframes < 2 ? BASE_DEC_TRUNCATED : BASE_DEC_BAD_TYPE;
    }
    if ((rc = decode_topic(frames[0], lens[0], &m->kind, err)) != BASE_DEC_OK)
        return rc;
    if ((m->kind == GPU_MSG_EV) != (nframes == 3)) {
        base_err(err, "%s message has %zu frames, expected %d", gpu_msg_kind_name(m->kind), nframes,
                 m->kind == GPU_MSG_EV ? 3 : 2);
        return m->kind == GPU_MSG_EV ? BASE_DEC_TRUNCATED : BASE_DEC_BAD_TYPE;
    }
    if (lens[1] > GPU_LINK_MAX_HDR) {
        base_err(err, "header of %zu bytes exceeds %d", lens[1], GPU_LINK_MAX_HDR);
        return BASE_DEC_OVERSIZED;
    }
    if ((rc = base_json_parse(frames[1], lens[1], &self->hdr, err)) != BASE_DEC_OK)
        return rc;
    h = self->hdr;
    if (!json_object_is_type(h, json_type_object)) {
        base_err(err, "header is not a JSON object");
        return BASE_DEC_BAD_TYPE;
    }
    if ((rc = base_json_get_str(h, "type", &type, err)) != BASE_DEC_OK)
        return rc;
    if (strcmp(type, gpu_msg_kind_name(m->kind)) != 0) {
        base_err(err, "header type '%.20s' does not match the topic kind '%s'", type,
                 gpu_msg_kind_name(m->kind));
        return BASE_DEC_BAD_TYPE;
    }
    if ((rc = base_json_get_u64(h, "pid", &pid, err)) != BASE_DEC_OK ||
        (rc = base_json_get_u64(h, "seq", &m->seq, err)) != BASE_DEC_OK)
        return rc;
    if (pid == 0 || pid > INT32_MAX) {
        base_err(err, "pid %" PRIu64 " is out of range", pid);
        return BASE_DEC_BAD_VALUE;
    }
    m->pid = (uint32_t)pid;
    m->hdr = h;
    switch (m->kind) {
    case GPU_MSG_PROC:
        return decode_proc(h, m, err);
    case GPU_MSG_EV:
        return decode_ev(self, h, frames[2], lens[2], m, err);
    case GPU_MSG_NAMES:
        return decode_names(self, h, m, err);
    case GPU_MSG_SCOPE:
        return decode_scope(self, h, m, err);
    case GPU_MSG_SNAP:
        return decode_snap(self, h, m, err);
    default:
        break;
    }
    base_err(err, "unknown message kind");
    return BASE_DEC_BAD_TYPE;
}

enum base_dec gpu_ingest_decode(gpu_ingest_t *self, const void *const *frames, const size_t *lens,
                                size_t nframes, gpu_msg_t *msg, char *err)
{
    assert(self);
    char e[BASE_ERRLEN] = "";
    enum base_dec rc = decode(self, frames, lens, nframes, msg, e);
    base_decstats_add(&self->stats, rc);
    if (rc == BASE_DEC_OK) {
        self->per_kind[msg->kind]++;
    } else {
        snprintf(self->last_err, sizeof self->last_err, "%s", e);
        msg->hdr = NULL;
    }
    if (err != NULL)
        snprintf(err, BASE_ERRLEN, "%s", e);
    return rc;
}

int gpu_ingest_poll(gpu_ingest_t *self, int timeout_ms, int max, char *err)
{
    assert(self);
    if (self->pull == NULL)
        return base_err(err, "ingest has no socket");
    zmq_pollitem_t it = {self->pull, 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&it, 1, timeout_ms) < 0) {
        if (errno == EINTR)
            return 0;
        return base_err(err, "zmq_poll: %s", zmq_strerror(errno));
    }
    int got = 0;
    while (got < max) {
        zmq_msg_t parts[MAX_FRAMES];
        const void *frames[MAX_FRAMES];
        size_t lens[MAX_FRAMES], n = 0, extra = 0;
        int more = 1;
        while (more) {
            zmq_msg_t part;
            zmq_msg_init(&part);
            if (zmq_msg_recv(&part, self->pull, ZMQ_DONTWAIT) < 0) {
                zmq_msg_close(&part);
                if (n == 0 && extra == 0) {
                    if (errno == EAGAIN || errno == EINTR)
                        return got;
                    return base_err(err, "zmq_msg_recv: %s", zmq_strerror(errno));
                }
                break; /* cannot happen mid-message; treat as the end */
            }
            more = zmq_msg_more(&part);
            if (n < MAX_FRAMES) {
                parts[n] = part;
                frames[n] = zmq_msg_data(&parts[n]);
                lens[n] = zmq_msg_size(&parts[n]);
                n++;
            } else {
                zmq_msg_close(&part);
                extra++;
            }
        }
        got++;
        gpu_msg_t m;
        char e[BASE_ERRLEN];
        enum base_dec rc;
        if (extra > 0) {
            /* Count it like any other rejection, without decoding. */
            rc = BASE_DEC_BAD_TYPE;
            base_decstats_add(&self->stats, rc);
            snprintf(self->last_err, sizeof self->last_err,
                     "message has %zu frames, expected 2 or 3", n + extra);
        } else {
            rc = gpu_ingest_decode(self, frames, lens, n, &m, e);
        }
        if (rc == BASE_DEC_OK && self->fn != NULL)
            self->fn(self->fn_ctx, &m);
        for (size_t i = 0; i < n; i++)
            zmq_msg_close(&parts[i]);
    }
    return got;
}

const base_decstats_t *gpu_ingest_stats(const gpu_ingest_t *self)
{
    assert(self);
    return &self->stats;
}

uint64_t gpu_ingest_count(const gpu_ingest_t *self, enum gpu_msg_kind kind)
{
    assert(self);
    return (unsigned)kind < GPU_MSG_NKINDS ? self->per_kind[kind] : 0;
}

const char *gpu_ingest_last_error(const gpu_ingest_t *self)
{
    assert(self);
    return self->last_err;
}
