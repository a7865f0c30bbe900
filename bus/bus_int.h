/* Shared inside bus/ only: message internals, a small string map, socket helpers. */
#ifndef DP_BUS_INT_H
#define DP_BUS_INT_H

#include "bus/bus.h"

#include <assert.h>
#include <zmq.h>

struct bus_msg {
    enum bus_kind kind;
    int node;
    uint64_t seq;
    bool from_state;
    int64_t arrival_ns;
    json_object *hdr;
    char topic[BUS_MAX_TOPIC + 1];
    zmq_msg_t frames[BUS_MAX_FRAMES]; /* topic, header, payload; always initialised */
    size_t nframes;                   /* wire frames valid (0 until encoded or decoded) */
    bool has_payload;                 /* frames[2] holds a payload */
};

/* Validate wire frames (views) and move zmq frames into a new message. */
enum base_dec bus_msg_decode_zmq(zmq_msg_t *frames, size_t nframes, const struct bus_limits *lim,
                                 bus_msg_t **out, char *err);
/* Receive one multipart message into frames[0..cap).  A message of more
 * than cap frames is drained and dropped: *nframes then holds its true count
 * and every frames[i] is empty.  Returns 1, 0 (EAGAIN with ZMQ_DONTWAIT) or
 * BASE_ERR.  The caller closes frames[0..min(*nframes, cap)). */
int bus_zmq_recv_multi(void *sock, zmq_msg_t *frames, size_t cap, size_t *nframes, int flags,
                       char *err);
void bus_zmq_close_frames(zmq_msg_t *frames, size_t n);
/* Send the frames of an encoded message (copies share the buffers).
 * Returns BASE_OK, BUS_DROPPED (EAGAIN on the first frame) or BASE_ERR. */
int bus_zmq_send_msg(void *sock, const bus_msg_t *msg, int flags, char *err);
/* Limits with zero fields replaced by the defaults. */
struct bus_limits bus_limits_fill(const struct bus_limits *lim);
/* Printable rendering of untrusted bytes for error messages. */
void bus_render(const void *data, size_t len, char *out, size_t outlen);
/* Poll one socket for input: 1 ready, 0 timeout or signal, BASE_ERR. */
int bus_zmq_wait_in(void *sock, int timeout_ms, char *err);
/* The caller's context, or a new one that *own says the caller must end;
 * NULL with err filled ("who: ...") when none can be made. */
void *bus_zmq_context(void *given, bool *own, const char *who, char *err);
/* A socket with linger 0 and the given high-water marks (0 = leave), or NULL
 * with err filled. */
void *bus_zmq_socket(void *ctx, int type, int sndhwm, int rcvhwm, const char *who, char *err);
/* No frame larger than the bus limits' largest on a socket facing the network. */
int bus_zmq_maxmsg(void *sock, const struct bus_limits *lim, const char *who, char *err);
/* Bind sock to endpoint and write the endpoint actually bound (a wildcard
 * port resolved) to out; "who: cannot bind the WHAT endpoint ..." on failure. */
int bus_zmq_bind(void *sock, const char *who, const char *what, const char *endpoint, char *out,
                 size_t len, char *err);

/* CURVE options on a client socket (curve may be NULL: nothing to do). */
int bus_curve_client(void *sock, const struct bus_curve *curve, char *err);
/*
 * The server side, shared by the hub and relays: the admitted client keys
 * decoded, and the ZAP handler (RFC 27) libzmq asks about every CURVE
 * handshake on the context's server sockets.  A zeroed struct is "no
 * security".
 */
struct bus_zap {
    void *sock;             /* REP on inproc://zeromq.zap.01; NULL: no CURVE */
    uint8_t (*allowed)[32]; /* NULL: any client that knows the server key */
    size_t nallowed;
};
/* Check the keys, decode the admitted ones and bind the handler in ctx
 * (before the first handshake); curve NULL: nothing to do. */
int bus_zap_open(struct bus_zap *zap, void *ctx, const struct bus_curve *curve, const char *who,
                 char *err);
/* Make sock a CURVE server (before it binds); curve NULL: nothing to do. */
int bus_curve_server(void *sock, const struct bus_curve *curve, const char *who, char *err);
/* Answer every pending request, adding to *allowed and *denied. */
void bus_zap_answer(struct bus_zap *zap, const char *who, uint64_t *allowed, uint64_t *denied);
void bus_zap_close(struct bus_zap *zap);
/* A private copy of curve options (strings and list), NULL for NULL. */
struct bus_curve *bus_curve_copy(const struct bus_curve *curve);
void bus_curve_free(struct bus_curve *curve);

/* A string-keyed hash map with chaining; values are owned by the caller. */
typedef struct bus_map bus_map_t;
bus_map_t *bus_map_new(void);
void bus_map_destroy(bus_map_t **self, void (*free_value)(void *));
void *bus_map_get(const bus_map_t *self, const char *key);
/* Insert or replace; returns the previous value (NULL when none). */
void *bus_map_put(bus_map_t *self, const char *key, void *value);
void *bus_map_remove(bus_map_t *self, const char *key);
size_t bus_map_count(const bus_map_t *self);
/* Visit every entry; stop early when fn returns false. */
void bus_map_foreach(const bus_map_t *self, bool (*fn)(const char *key, void *value, void *arg),
                     void *arg);

/* The late-joiner cache (hub thread only). */
typedef struct bus_cache bus_cache_t;
struct bus_cache_opts {
    size_t max_msgs, max_bytes, key_bytes;
    int self_node; /* the hub's (the master's) topic node; BUS_NODE_NONE: no table is kept */
};
bus_cache_t *bus_cache_new(const struct bus_cache_opts *opts);
void bus_cache_destroy(bus_cache_t **self);
/* Keep msg (taken over) per its kind's policy; NONE kinds are freed. */
void bus_cache_put(bus_cache_t *self, bus_msg_t *msg);
/* Visit the cached messages oldest update first; stop when fn returns false. */
void bus_cache_foreach(bus_cache_t *self, bool (*fn)(const bus_msg_t *msg, void *arg), void *arg);
void bus_cache_counts(const bus_cache_t *self, uint64_t *msgs, uint64_t *bytes, uint64_t *evicted);
/* Messages held for nodes not in the master's table, and those evicted. */
void bus_cache_foreign(const bus_cache_t *self, uint64_t *msgs, uint64_t *evicted);
/* The cache key of a message (malloc'd): kind, topic node and the values of
 * the schema's key fields. */
char *bus_cache_key(const bus_msg_t *msg);

#endif /* DP_BUS_INT_H */
