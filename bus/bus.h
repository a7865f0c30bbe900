/*
 * bus — the dptop wire protocol (v1) over ZeroMQ and its recording format.
 *
 * A bus message is a ZeroMQ multipart message of 2 or 3 frames:
 *   1. topic   "dp1.<kind>.<node>"  (<node>: the sender's decimal id, "-" before it has one)
 *   2. header  a JSON object whose "type" is <kind> and "seq" the sender's per-topic counter
 *   3. payload binary, only for kinds that declare one (GPU event batches)
 * Every kind is one row of a const schema table (bus_kind_def) that the one
 * generic decoder validates; docs/PROTOCOL.md documents the same table.
 *
 * Sockets (each object is used by one thread at a time):
 *   bus_hub_t  master side: ROUTER (registration, state requests), XSUB <-> XPUB
 *              joined by zmq_proxy in its own thread, a bounded late-joiner cache;
 *   bus_pub_t  publisher into the hub's XSUB; never blocks, full queue = counted drop;
 *   bus_sub_t  subscriber on the hub's XPUB with prefix filters, seq gap accounting
 *              and the late-joiner state fetch;
 *   bus_reg_t  registration DEALER towards the hub's ROUTER.
 * Every socket takes optional CURVE keys (struct bus_curve, SPEC §10).
 * Recording: bus_recwriter_t / bus_recreader_t (docs/RECORDING.md), with
 * CRC32C frame checksums (bus_crc32c).
 */
#ifndef DP_BUS_H
#define DP_BUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

#define BUS_PROTO_VERSION 1
#define BUS_TOPIC_PREFIX  "dp1."
#define BUS_MAX_FRAMES    3
#define BUS_MAX_TOPIC     64 /* bytes, the longest topic frame accepted */
#define BUS_NODE_NONE     (-1)
#define BUS_NODE_MAX      65535
#define BUS_PEER_MAX      255 /* ZeroMQ routing ids are at most 255 bytes */

/* Default limits; both are configurable per socket and per reader. */
#define BUS_DEFAULT_MAX_HEADER  (1u << 20)  /* 1 MiB of JSON */
#define BUS_DEFAULT_MAX_PAYLOAD (64u << 20) /* 64 MiB of binary payload */

/* Default master ports: registration ROUTER, XSUB (publishers), XPUB (subscribers). */
#define BUS_PORT_REG 7410
#define BUS_PORT_PUB 7411
#define BUS_PORT_SUB 7412

/* Returned by the send functions when a full queue made them drop the message. */
#define BUS_DROPPED 1

/* Message kinds; bus_kind_def() describes each one. */
enum bus_kind {
    BUS_K_HELLO,
    BUS_K_WELCOME,
    BUS_K_PLAN,
    BUS_K_HB,
    BUS_K_BYE,
    BUS_K_NODES,
    BUS_K_STATUS,
    BUS_K_WIN,
    BUS_K_EDGE_FIT,
    BUS_K_NODE_FIT,
    BUS_K_SOLVE,
    BUS_K_SNAP,
    BUS_K_EV,
    BUS_K_NAMES,
    BUS_K_SCOPE,
    BUS_K_LOG,
    BUS_K_SIM_TRUTH,
    BUS_K_PROC,
    BUS_K_STATE_REQ,
    BUS_K_STATE_END,
    BUS_K_SYNC,
    BUS_K_RELAY,
    BUS_K_RELAYS,
    BUS_K_NKINDS
};

/* ---- schema ------------------------------------------------------------ */

/* JSON value types a field may have. */
enum bus_type {
    BUS_T_INT,  /* JSON integer in the int64 range (optionally [min, max]) */
    BUS_T_U64,  /* JSON integer in [0, 2^64) */
    BUS_T_NUM,  /* JSON number, integer or decimal, finite (optionally [min, max]) */
    BUS_T_NS,   /* a time in ns: integer or decimal within the int64 range */
    BUS_T_STR,  /* JSON string (optionally one of `enums`) */
    BUS_T_BOOL, /* true / false */
    BUS_T_ARR,  /* JSON array whose elements all have type `item` */
    BUS_T_OBJ,  /* JSON object with the fields `sub` (NULL: any object) */
    BUS_T_MAP,  /* JSON object whose values all have type `item` */
    BUS_T_PAIR, /* JSON array of exactly two elements of types pair[0], pair[1] */
};

struct bus_field {
    const char *name;
    enum bus_type type;
    bool required;
    bool key;                    /* part of the late-joiner cache key of the message */
    bool ranged;                 /* numbers: value must lie in [min, max] */
    double min, max;             /* inclusive */
    enum bus_type item;          /* BUS_T_ARR / BUS_T_MAP: element type */
    enum bus_type pair[2];       /* BUS_T_PAIR (field or item): element types */
    const struct bus_field *sub; /* BUS_T_OBJ (field or item): its fields */
    size_t nsub;
    const char *const *enums; /* BUS_T_STR: NULL-terminated allowed values, or NULL */
    const char *unit;         /* "ns", "ppb", "%", ... or NULL */
    const char *doc;          /* one line */
};

/* How the hub's late-joiner cache keeps a kind. */
enum bus_cache_policy {
    BUS_CACHE_NONE,   /* never cached (event batches, logs, control) */
    BUS_CACHE_LATEST, /* the latest message per key */
    BUS_CACHE_APPEND, /* every message per key (incremental tables), within budget */
};

#define BUS_KF_PAYLOAD     0x01 /* a binary payload frame is required */
#define BUS_KF_SIM         0x02 /* simulation only: never trust it as a measurement */
#define BUS_KF_SENDER_NODE 0x04 /* header "node" must equal the topic's node */

struct bus_kind_def {
    enum bus_kind kind;
    const char *name;  /* the <kind> of the topic and the header's "type" */
    const char *route; /* who sends it where (documentation) */
    const char *doc;
    const struct bus_field *fields; /* besides the envelope "type" and "seq" */
    size_t nfields;
    enum bus_cache_policy cache;
    unsigned flags; /* BUS_KF_* */
    /* BUS_KF_PAYLOAD: payload = payload_hdr + header[count_field] * payload_unit bytes */
    const char *count_field;
    size_t payload_hdr, payload_unit;
};

const struct bus_kind_def *bus_kind_def(enum bus_kind kind);
/* The kind named by name[0..len); NULL when unknown. */
const struct bus_kind_def *bus_kind_lookup(const char *name, size_t len);
const char *bus_kind_name(enum bus_kind kind);
const char *bus_type_name(enum bus_type type);
/* Validate a header object against the kind's fields (not the envelope). */
enum base_dec bus_schema_validate(enum bus_kind kind, json_object *hdr, char *err);

/* ---- messages ---------------------------------------------------------- */

typedef struct bus_msg bus_msg_t;

/* A view of one frame. */
struct bus_frame {
    const void *data;
    size_t len;
};

struct bus_limits {
    size_t max_header;  /* bytes of the JSON header frame */
    size_t max_payload; /* bytes of the binary payload frame */
};
struct bus_limits bus_limits_default(void);

/* A new message of `kind` whose header is {"type": <kind>}; add fields with
 * json-c on bus_msg_header() or the bus_msg_set_* helpers. */
bus_msg_t *bus_msg_new(enum bus_kind kind);
void bus_msg_destroy(bus_msg_t **self);
json_object *bus_msg_header(const bus_msg_t *self); /* borrowed */
void bus_msg_set_i64(bus_msg_t *self, const char *key, int64_t v);
void bus_msg_set_u64(bus_msg_t *self, const char *key, uint64_t v);
void bus_msg_set_double(bus_msg_t *self, const char *key, double v);
void bus_msg_set_str(bus_msg_t *self, const char *key, const char *v);
void bus_msg_set_bool(bus_msg_t *self, const char *key, bool v);
/* Replace the payload with a new buffer of len bytes and return it for the
 * caller to fill (no further copy is made when the message is sent). */
void *bus_msg_payload_alloc(bus_msg_t *self, size_t len);
void bus_msg_set_payload(bus_msg_t *self, const void *data, size_t len);

enum bus_kind bus_msg_kind(const bus_msg_t *self);
int bus_msg_node(const bus_msg_t *self); /* topic node; BUS_NODE_NONE for "-" */
uint64_t bus_msg_seq(const bus_msg_t *self);
const char *bus_msg_topic(const bus_msg_t *self); /* after encode or decode */
const void *bus_msg_payload(const bus_msg_t *self, size_t *len);
bool bus_msg_from_state(const bus_msg_t *self);    /* came from a late-joiner state reply */
int64_t bus_msg_arrival_ns(const bus_msg_t *self); /* CLOCK_REALTIME at receipt; 0 if built */

/* Stamp topic node and seq, validate against the schema and the limits, and
 * serialise the header.  Afterwards bus_msg_frames() views the wire frames. */
int bus_msg_encode(bus_msg_t *self, int node, uint64_t seq, const struct bus_limits *lim,
                   char *err);
/* The wire frames of an encoded or decoded message; returns their count. */
size_t bus_msg_frames(const bus_msg_t *self, struct bus_frame out[BUS_MAX_FRAMES]);
/*
 * The generic decoder: frame count, topic (version, kind, node), header size,
 * JSON, envelope, schema, payload size.  On success *out is a new message
 * holding copies of the frames.  Never allocates from an input size beyond
 * the limits.
 */
enum base_dec bus_msg_decode(const struct bus_frame *frames, size_t nframes,
                             const struct bus_limits *lim, bus_msg_t **out, char *err);

/* ---- endpoints --------------------------------------------------------- */

struct bus_endpoints {
    char reg[256]; /* ROUTER: registration and state requests */
    char pub[256]; /* XSUB: where publishers connect */
    char sub[256]; /* XPUB: where subscribers connect */
};
/*
 * Derive the three endpoints from the master endpoint: tcp://HOST:P gives
 * P (registration), P+1 (publishers) and P+2 (subscribers); ipc:// and
 * inproc:// endpoints E give E, E.pub and E.sub.
 */
int bus_endpoints_derive(const char *hub, struct bus_endpoints *out, char *err);

/* ---- security ---------------------------------------------------------- */

/*
 * ZeroMQ CURVE (SPEC §10).  Keys are Z85 text, 40 characters
 * (zmq_curve_keypair, dpnode --gen-keys).  The hub is the CURVE server of
 * all three of its sockets; every client names the hub's public key and its
 * own key pair.  The hub admits only the client public keys in `allowed`
 * (NULL: any client that completes the handshake, i.e. that knows the hub's
 * public key); a refused peer gets nothing in and nothing out, and is
 * counted (bus_hub_stats.auth_denied).  NULL options: no security.
 */
struct bus_curve {
    const char *public_key; /* this side's key pair */
    const char *secret_key;
    const char *server_key;     /* clients: the hub's public key */
    const char *const *allowed; /* hub: NULL-terminated admitted client public keys */
};
/* Whether this libzmq can do CURVE. */
bool bus_curve_available(void);
/* One key of a key directory (dpnode --gen-keys DIR: hub.public, hub.secret,
 * client.public, client.secret): 40 characters of Z85, NUL-terminated. */
int bus_curve_key_file(const char *dir, const char *name, char out[41], char *err);

/* ---- publisher --------------------------------------------------------- */

typedef struct bus_pub bus_pub_t;

struct bus_pub_opts {
    const char *endpoint; /* the hub's XSUB endpoint (connect) */
    int node;             /* topic node, BUS_NODE_NONE until assigned */
    int sndhwm;           /* messages queued before sends drop; 0: default 10000 */
    int linger_ms;        /* at destroy, time to deliver what is queued; 0: 1000, <0: none */
    struct bus_limits limits;
    const struct bus_curve *curve; /* NULL: no security */
    void *zctx;                    /* ZeroMQ context to share (for inproc), NULL: own */
};

struct bus_pub_stats {
    uint64_t sent, dropped, bytes; /* dropped: full queue (EAGAIN) */
    uint64_t unrouted;             /* sent while no subscriber wanted the kind */
    uint64_t kind_sent[BUS_K_NKINDS], kind_dropped[BUS_K_NKINDS];
};

bus_pub_t *bus_pub_new(const struct bus_pub_opts *opts, char *err);
void bus_pub_destroy(bus_pub_t **self);
void bus_pub_set_node(bus_pub_t *self, int node);
/* BASE_OK, BUS_DROPPED (queue full: nothing sent, counted) or BASE_ERR.  The
 * seq of a kind only advances when a message is sent, so subscribers count
 * downstream losses and the publisher counts its own. */
int bus_pub_send(bus_pub_t *self, bus_msg_t *msg, char *err);
/* Whether some subscriber of the hub currently wants `kind` from this node. */
bool bus_pub_subscribed(bus_pub_t *self, enum bus_kind kind);
/* Wait until bus_pub_subscribed(); 1 yes, 0 timed out. */
int bus_pub_wait_subscribed(bus_pub_t *self, enum bus_kind kind, int timeout_ms);
void bus_pub_stats(const bus_pub_t *self, struct bus_pub_stats *out);

/* ---- subscriber -------------------------------------------------------- */

typedef struct bus_sub bus_sub_t;

struct bus_sub_opts {
    const char *endpoint;        /* the hub's XPUB endpoint (connect) */
    const char *const *prefixes; /* NULL-terminated topic prefixes; NULL: everything.
                                  * dp1.sync. is always added (the state fetch needs it) */
    int rcvhwm;                  /* 0: default 10000 */
    size_t queue_max;            /* state + buffered messages; 0: default 100000 */
    size_t queue_max_bytes;      /* and their bytes; 0: default 256 MiB */
    struct bus_limits limits;
    const struct bus_curve *curve; /* also used by the state fetch; NULL: none */
    void *zctx;
};

struct bus_kind_stats {
    uint64_t msgs, bytes, gaps, resets;
};
struct bus_sub_stats {
    uint64_t msgs, bytes; /* delivered by bus_sub_recv (live and state) */
    uint64_t state_msgs;  /* of which from state replies */
    uint64_t gaps;        /* messages missing according to seq (dropped upstream) */
    uint64_t resets;      /* seq went backwards: a sender restarted */
    uint64_t jumps;       /* seq leapt past any plausible loss (2^20): not counted lost */
    uint64_t strays;      /* jumps the next message showed for one stray (forged) message */
    uint64_t untracked;   /* messages on topics beyond the tracking table */
    uint64_t queue_drops; /* state/buffer queue full */
    base_decstats_t dec;  /* decoder outcomes of every received message */
    struct bus_kind_stats kind[BUS_K_NKINDS];
};

struct bus_topic_stats {
    char topic[BUS_MAX_TOPIC + 1];
    uint64_t msgs, gaps, resets, last_seq;
};

struct bus_state_info {
    uint64_t count;   /* state messages received */
    bool complete;    /* the hub sent all it had (no reply queue overflow) */
    bool synced;      /* the subscription was proven active before the snapshot */
    uint64_t evicted; /* messages the hub's cache ever evicted (budget) */
};

bus_sub_t *bus_sub_new(const struct bus_sub_opts *opts, char *err);
void bus_sub_destroy(bus_sub_t **self);
/*
 * Late joiner: fetch the hub's state over its ROUTER (reg_endpoint).  The
 * state messages are queued and bus_sub_recv() returns them first (flagged
 * from_state), then live messages in arrival order.  BASE_ERR when no
 * complete reply arrived within timeout_ms.
 */
int bus_sub_fetch_state(bus_sub_t *self, const char *reg_endpoint, int timeout_ms,
                        struct bus_state_info *info, char *err);
/* 1: *out is a new message; 0: nothing within timeout_ms (signals do not
 * cut the wait short: keep timeouts short where a flag must be seen);
 * BASE_ERR: socket failure.  Malformed messages are counted and skipped. */
int bus_sub_recv(bus_sub_t *self, bus_msg_t **out, int timeout_ms, char *err);
void bus_sub_stats(const bus_sub_t *self, struct bus_sub_stats *out);
/* Per-topic counters; returns how many topics are tracked (fills up to max). */
size_t bus_sub_topic_stats(const bus_sub_t *self, struct bus_topic_stats *out, size_t max);
/* The last decoder rejection message ("" when none). */
const char *bus_sub_last_error(const bus_sub_t *self);

/* ---- registration client ----------------------------------------------- */

typedef struct bus_reg bus_reg_t;

struct bus_reg_opts {
    const char *endpoint; /* the hub's ROUTER endpoint (connect) */
    int node;
    struct bus_limits limits;
    const struct bus_curve *curve;
    void *zctx;
};

bus_reg_t *bus_reg_new(const struct bus_reg_opts *opts, char *err);
void bus_reg_destroy(bus_reg_t **self);
void bus_reg_set_node(bus_reg_t *self, int node);
/* BASE_OK, BUS_DROPPED (no connection or queue full; counted) or BASE_ERR. */
int bus_reg_send(bus_reg_t *self, bus_msg_t *msg, char *err);
/* 1: *out is a new message; 0: timeout; BASE_ERR on failure. */
int bus_reg_recv(bus_reg_t *self, bus_msg_t **out, int timeout_ms, char *err);
const base_decstats_t *bus_reg_decstats(const bus_reg_t *self);

/* ---- hub (master) ------------------------------------------------------ */

typedef struct bus_hub bus_hub_t;

typedef struct bus_peer {
    uint8_t id[BUS_PEER_MAX];
    size_t len;
} bus_peer_t;

struct bus_hub_opts {
    /* Bind endpoints; NULL: ports 7410, 7411, 7412 on every interface.  A port
     * written "*" picks a free one (see bus_hub_endpoint). */
    const char *reg_endpoint, *pub_endpoint, *sub_endpoint;
    int node;               /* the hub's topic node: the master's id (0 usually) */
    int sndhwm;             /* XPUB per-subscriber queue (messages); 0: default 10000 */
    int rcvhwm;             /* XSUB per-publisher queue; 0: default 10000 */
    size_t cache_max_msgs;  /* late-joiner cache budget; 0: default 16384 */
    size_t cache_max_bytes; /* 0: default 64 MiB */
    size_t cache_key_bytes; /* per key, for append kinds; 0: default 8 MiB */
    int sync_timeout_ms;    /* wait for the sync marker; 0: default 1000 */
    struct bus_limits limits;
    const struct bus_curve *curve; /* server keys and admitted clients; NULL: none */
};

enum bus_hub_port { BUS_HUB_REG, BUS_HUB_PUB, BUS_HUB_SUB };

struct bus_hub_stats {
    uint64_t reg_msgs;                 /* valid messages on the ROUTER */
    uint64_t reg_forwarded;            /* passed to the application */
    uint64_t reg_dropped;              /* application queue full */
    uint64_t replies, replies_dropped; /* bus_hub_send: unknown peer / full */
    uint64_t state_reqs, state_msgs_sent, state_truncated, sync_timeouts;
    uint64_t cache_msgs, cache_bytes, cache_evicted, cache_in;
    /* held for topic nodes not in the master's node table (at most a quarter
     * of the budget), and evicted of those (included in cache_evicted) */
    uint64_t cache_foreign, cache_foreign_evicted;
    uint64_t auth_allowed, auth_denied; /* CURVE handshakes */
    base_decstats_t dec;                /* ROUTER and cache input */
};

bus_hub_t *bus_hub_new(const struct bus_hub_opts *opts, char *err);
void bus_hub_destroy(bus_hub_t **self);
/* The endpoint actually bound (wildcard ports resolved). */
const char *bus_hub_endpoint(const bus_hub_t *self, enum bus_hub_port which);
/* An inproc endpoint of the XSUB for publishers sharing bus_hub_zctx(). */
const char *bus_hub_inproc_pub(const bus_hub_t *self);
void *bus_hub_zctx(const bus_hub_t *self);
/* Registration traffic for the application (everything but state requests):
 * 1: *out and *peer filled; 0: timeout; BASE_ERR on failure. */
int bus_hub_recv(bus_hub_t *self, bus_peer_t *peer, bus_msg_t **out, int timeout_ms, char *err);
/* Reply to one peer; BASE_OK or BASE_ERR.  An unreachable peer is counted
 * in replies_dropped, not reported as an error. */
int bus_hub_send(bus_hub_t *self, const bus_peer_t *peer, bus_msg_t *msg, char *err);
void bus_hub_stats(bus_hub_t *self, struct bus_hub_stats *out);

/* ---- relay (a branch of the hub's tree) -------------------------------- */

/*
 * For clusters too large for one hub's fan-in and fan-out (SPEC §5), relays
 * chain the same proxy pair into a tree.  A relay binds a publisher port
 * (XSUB) and a subscriber port (XPUB) of its own, forwards what its
 * publishers send to the upstream's publisher port and what the upstream's
 * subscriber port carries to its subscribers; subscriptions travel up, so a
 * topic nobody wants still never leaves its node.  The upstream is the
 * hub or another relay.  Registration and state requests are not relayed:
 * they are small, and go to the master's registration port directly.
 *
 * Messages pass through untouched (frames are forwarded, not decoded), so
 * seq gaps still tell every subscriber what was lost on the way.  Upstream
 * is one peer: a full queue there drops the message, counted (up_dropped).
 * Downstream, as at the hub, a slow subscriber loses messages at its own
 * high-water mark without holding up the others; it sees them as seq gaps.
 */
typedef struct bus_relay bus_relay_t;

struct bus_relay_opts {
    const char *upstream; /* registration endpoint of the hub or relay above:
                           * its P+1 and P+2 are used (bus_endpoints_derive) */
    const char *listen;   /* this relay's P: it binds P+1 and P+2 */
    int hwm;              /* messages queued per socket and peer; 0: default 10000 */
    const struct bus_curve *client_curve; /* towards the upstream; NULL: none */
    const struct bus_curve *server_curve; /* the hub's server keys and admitted
                                           * clients, for the peers below */
};

struct bus_relay_stats {
    /* Publishers' messages handed to the upstream socket / refused by it.
     * Handed is not delivered: a message no subscriber wants any more (the
     * unsubscription on its way down) is discarded by the upstream socket. */
    uint64_t up_msgs, up_bytes, up_dropped;
    uint64_t down_msgs, down_bytes;     /* upstream messages passed to subscribers */
    uint64_t subs_from_up;              /* subscription changes passed down to publishers */
    uint64_t subs_from_below;           /* subscribers' changes passed up */
    uint64_t auth_allowed, auth_denied; /* CURVE handshakes below */
    bool failed;                        /* the relay's thread stopped on an error (logged) */
};

bus_relay_t *bus_relay_new(const struct bus_relay_opts *opts, char *err);
void bus_relay_destroy(bus_relay_t **self);
/* The endpoints bound (wildcards resolved): BUS_HUB_PUB or BUS_HUB_SUB. */
const char *bus_relay_endpoint(const bus_relay_t *self, enum bus_hub_port which);
void bus_relay_stats(bus_relay_t *self, struct bus_relay_stats *out);

/* ---- CRC32C (Castagnoli) ---------------------------------------------- */

/* Continue a CRC: start with crc = 0.  Hardware SSE4.2 path when available. */
uint32_t bus_crc32c(uint32_t crc, const void *data, size_t len);
uint32_t bus_crc32c_sw(uint32_t crc, const void *data, size_t len);

/* ---- recording (docs/RECORDING.md) ------------------------------------ */

#define BUS_REC_MAGIC      "DPTOPREC"
#define BUS_REC_VERSION    1
#define BUS_REC_FILE_HDR   32
#define BUS_REC_FRAME_HDR  24
#define BUS_REC_MARKER     0x46525044u /* "DPRF" little-endian */
#define BUS_REC_MAX_FRAMES 16

typedef struct bus_recwriter bus_recwriter_t;
typedef struct bus_recreader bus_recreader_t;

struct bus_recwriter_stats {
    uint64_t frames;  /* added */
    uint64_t written; /* of which wholly written to the file */
    uint64_t bytes;   /* written to the file, header included */
    uint64_t flushes;
};

/* Create (truncate) path and write the file header at once, so that an
 * unwritable destination fails here.  flush_ms: longest time a written frame
 * stays in the buffer (0: default 250). */
bus_recwriter_t *bus_recwriter_new(const char *path, int flush_ms, char *err);
/* Append one message; BASE_ERR after a write failure (the writer stays failed). */
int bus_recwriter_add(bus_recwriter_t *self, int64_t arrival_ns, const struct bus_frame *frames,
                      size_t nframes, char *err);
int bus_recwriter_tick(bus_recwriter_t *self, char *err); /* flush when due */
int bus_recwriter_flush(bus_recwriter_t *self, char *err);
/* Flush, sync and close; BASE_ERR when anything failed.  Always frees. */
int bus_recwriter_close(bus_recwriter_t **self, char *err);
void bus_recwriter_stats(const bus_recwriter_t *self, struct bus_recwriter_stats *out);

struct bus_rec_frame {
    uint64_t offset; /* of the frame marker in the file */
    int64_t arrival_ns;
    size_t nframes;
    struct bus_frame frames[BUS_REC_MAX_FRAMES]; /* valid until the next call */
};

struct bus_recreader_stats {
    uint64_t frames;          /* frames that verified */
    uint64_t corrupt;         /* corrupt regions skipped by resynchronisation */
    uint64_t skipped_bytes;   /* bytes inside those regions */
    uint64_t truncated_bytes; /* an incomplete last frame */
    base_decstats_t dec;
};

bus_recreader_t *bus_recreader_open(const char *path, const struct bus_limits *lim, char *err);
void bus_recreader_destroy(bus_recreader_t **self);
/*
 * 1: *f is the next frame that verifies; 0: end of file; BASE_ERR: a problem
 * at an offset (*dec says which: BASE_DEC_TRUNCATED for an incomplete last
 * frame, BAD_CHECKSUM / BAD_MAGIC / OVERSIZED / BAD_VALUE for corruption;
 * err names the offset).  After a corruption the next call resynchronises on
 * the next frame marker whose frame verifies.
 */
int bus_recreader_next(bus_recreader_t *self, struct bus_rec_frame *f, enum base_dec *dec,
                       char *err);
int64_t bus_recreader_created_ns(const bus_recreader_t *self);
uint64_t bus_recreader_size(const bus_recreader_t *self);
void bus_recreader_stats(const bus_recreader_t *self, struct bus_recreader_stats *out);

#endif /* DP_BUS_H */
