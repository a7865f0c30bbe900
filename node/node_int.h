/*
 * node internals shared between the files of dpnode.  Not a public
 * interface: other modules use node/node.h.
 */
#ifndef DP_NODE_INT_H
#define DP_NODE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/base.h"
#include "bus/bus.h"
#include "clock/clock.h"
#include "gpu/gpu.h"
#include "node/node.h"

/* ---- Coded UDP probes (node/probe.c) ---------------------------------- */

#define NODE_TS_NONE        INT64_MIN   /* a lost packet's receive time */
#define NODE_PROBE_MAGIC    0x42505044u /* "DPPB" little-endian */
#define NODE_PROBE_VERSION  1
#define NODE_PROBE_FU       2 /* follow-ups per packet */
#define NODE_PROBE_MAX_ECHO 3 /* echoed samples per packet */
#define NODE_PROBE_HDR      32
#define NODE_PROBE_FU_SIZE  32
#define NODE_PROBE_ECHO_SZ  48
#define NODE_PROBE_MAC_SIZE 8
#define NODE_PROBE_MAX_SIZE                                                                        \
    (NODE_PROBE_HDR + NODE_PROBE_FU * NODE_PROBE_FU_SIZE +                                         \
     NODE_PROBE_MAX_ECHO * NODE_PROBE_ECHO_SZ + NODE_PROBE_MAC_SIZE)
#define NODE_PROBE_KEY_SIZE 16

/* Sample flags: which timestamps came from user space instead of the kernel. */
#define NODE_SAMPLE_USER_TX 0x01
#define NODE_SAMPLE_USER_RX 0x02

/* One coded probe in one direction, SPEC §4.5: tx in src's probe clock, rx in dst's. */
struct node_probe_sample {
    uint32_t src, dst;
    uint64_t seq;
    int64_t tx[2];
    int64_t rx[2]; /* NODE_TS_NONE when that packet was lost */
    uint32_t flags;
};

/*
 * The wire packet.  A coded probe is two packets (index 0 and 1) sent
 * `spacing` apart.  Kernel transmit timestamps are only known after a packet
 * left, so each packet carries the transmit times of the sender's previous
 * two pairs to this peer ("follow-ups", PTP two-step style), and the
 * receiver completes a sample when a follow-up arrives.  Each packet also
 * echoes back the latest samples the sender completed for the other
 * direction, so that both endpoints of an edge see both directions.
 */
struct node_probe_fu {
    uint64_t seq; /* 0: empty slot (sequence numbers start at 1) */
    int64_t tx[2];
    uint32_t flags; /* NODE_SAMPLE_USER_TX when tx are user-space readings */
};

struct node_probe_pkt {
    uint8_t index;
    uint8_t n_echo;
    bool has_mac;
    uint32_t src, dst;
    uint64_t seq;
    int64_t tx_user; /* sender's probe clock just before sending */
    struct node_probe_fu fu[NODE_PROBE_FU];
    struct node_probe_sample echo[NODE_PROBE_MAX_ECHO]; /* direction dst -> src */
};

/* Encode into buf (NODE_PROBE_MAX_SIZE bytes); key may be NULL (no MAC). Returns the length. */
size_t node_probe_encode(const struct node_probe_pkt *pkt, const uint8_t *key, uint8_t *buf);
/*
 * Decode a datagram.  With a key, a packet without a valid MAC is refused
 * (BASE_DEC_BAD_CHECKSUM: a forgery); without a key, a MAC is ignored.
 */
enum base_dec node_probe_decode(const uint8_t *buf, size_t len, const uint8_t *key,
                                struct node_probe_pkt *out, char *err);
/* SipHash-2-4 of data under a 16-byte key. */
uint64_t node_siphash(const uint8_t key[NODE_PROBE_KEY_SIZE], const uint8_t *data, size_t len);

/* Maps a real CLOCK_REALTIME reading to this node's (possibly simulated) probe clock. */
typedef int64_t (*node_clock_fn)(void *ctx, int64_t real_ns);

/* Simulation: probes from node `from` arrive `ns` later (a path that detours one way). */
#define NODE_SIM_DELAY_MAX 16
struct node_sim_delay {
    uint32_t from;
    int64_t ns;
};

struct node_prober_cfg {
    const char *bind_ip; /* "0.0.0.0", "127.0.0.1", "::", ... */
    uint16_t port;       /* 0: the OS chooses */
    uint32_t self_id;
    int64_t spacing_ns; /* gap between the two packets of a pair */
    int64_t cadence_ns; /* mean interval between pairs to one peer */
    double jitter;      /* cadence randomised by +-jitter (fraction) so edges do not phase-lock */
    node_clock_fn clock;
    void *clock_ctx;
    bool user_timestamps; /* do not ask the kernel for timestamps (fallback test) */
    const uint8_t *key;   /* NODE_PROBE_KEY_SIZE bytes, or NULL for no MAC */
    size_t queue_len;     /* completed samples buffered for the agent */
    uint64_t seed;
    struct node_sim_delay sim_delay[NODE_SIM_DELAY_MAX];
    size_t n_sim_delay;
};

struct node_peer {
    uint32_t id;
    struct sockaddr_storage addr;
    socklen_t addrlen;
};

struct node_prober_stats {
    uint64_t pairs_sent, packets_sent, send_errors;
    uint64_t packets_received;
    uint64_t tx_kernel_ts, tx_user_ts, rx_kernel_ts, rx_user_ts;
    uint64_t samples_in;   /* completed samples peer -> self */
    uint64_t samples_out;  /* completed samples self -> peer, learned from echoes */
    uint64_t lost_packets; /* incoming packets never received (from follow-ups) */
    uint64_t lost_pairs;   /* incoming pairs whose follow-ups never came */
    uint64_t garbage;      /* datagrams that are not probes */
    uint64_t unknown;      /* probes from ids / addresses that are not peers */
    uint64_t forged;       /* bad MAC, impossible echo */
    uint64_t misaddressed; /* for another node, or from another address than the peer's */
    uint64_t replayed;     /* duplicates and sequence numbers from the past */
    uint64_t held;         /* sequence numbers far ahead, not (yet) taken (SEQ_AHEAD) */
    uint64_t queue_drops;  /* samples dropped because the agent did not drain */
    base_decstats_t dec;   /* decoder outcomes, by kind */
};

typedef struct node_prober node_prober_t;

node_prober_t *node_prober_new(const struct node_prober_cfg *cfg, char *err);
void node_prober_destroy(node_prober_t **self_p);
/* Start the probing thread. */
int node_prober_start(node_prober_t *self, char *err);
/* "ip:port" of the socket as bound (the OS-chosen port included). */
void node_prober_address(const node_prober_t *self, char *buf, size_t len);
uint16_t node_prober_port(const node_prober_t *self);
/* True when both transmit and receive timestamps come from the kernel. */
bool node_prober_kernel_timestamps(const node_prober_t *self);
/* Replace the peer set; state of peers that stay (same id and address) is kept. */
void node_prober_set_peers(node_prober_t *self, const struct node_peer *peers, size_t n);
/* Move up to max completed samples to out; returns how many. */
size_t node_prober_drain(node_prober_t *self, struct node_probe_sample *out, size_t max);
void node_prober_stats(node_prober_t *self, struct node_prober_stats *out);
/* Parse "ip:port" / "[ip6]:port" into a peer address. */
int node_parse_addr(const char *text, struct sockaddr_storage *addr, socklen_t *len, char *err);

/* ---- Probe graph (node/graph.c) --------------------------------------- */

struct node_edge {
    uint32_t src, dst; /* src fits the edge; both directions are probed */
};

/*
 * Plan the probe graph over the given node ids: every node gets k
 * out-neighbours (all others when there are at most k+1 nodes) at offsets
 * 1, 2, 4, ... around the ring of sorted ids.  The ring makes the graph
 * strongly connected; the chords close loops for the network effect.
 * Returns the number of edges written (at most max).
 */
size_t node_graph_plan(const uint32_t *ids, size_t n, int k, struct node_edge *edges, size_t max);
/* The peers a node probes: its out- and in-neighbours, each once.  Returns the count. */
size_t node_graph_peers(const struct node_edge *edges, size_t nedges, uint32_t self,
                        uint32_t *peers, size_t max);

/* ---- Prober additions ------------------------------------------------- */

/* Cumulative per-peer counters (reset when a peer's id or address changes). */
struct node_peer_count {
    uint32_t id;
    uint64_t pairs_sent;
    uint64_t samples_in, samples_out;
};

/* Change the node id stamped on packets (after registration); known peers are reset. */
void node_prober_set_self(node_prober_t *self, uint32_t id);
/* Change the probe schedule (the master's settings). */
int node_prober_set_timing(node_prober_t *self, int64_t cadence_ns, int64_t spacing_ns, char *err);
/* MAC every probe with key from now on (the cluster's, handed out in the welcome). */
void node_prober_set_key(node_prober_t *self, const uint8_t key[NODE_PROBE_KEY_SIZE]);
bool node_prober_has_key(node_prober_t *self);
/* Per-peer counters of the current peers; returns how many (at most max). */
size_t node_prober_peer_counts(node_prober_t *self, struct node_peer_count *out, size_t max);
/* Parse 32 hex digits into a probe MAC key. */
int node_parse_key(const char *text, uint8_t key[NODE_PROBE_KEY_SIZE], char *err);
/* "ID:NS[,ID:NS...]" (sim_path_delay) into at most NODE_SIM_DELAY_MAX entries. */
int node_parse_sim_delay(const char *text, struct node_sim_delay *out, size_t *n, char *err);

/* ---- Per-edge windows (node/window.c) --------------------------------- */

/*
 * Samples of the edges this node owns, sorted into windows of its probe
 * clock: window K covers [K·W, (K+1)·W).  A forward sample (self -> peer)
 * belongs to the window of its transmit time, a reverse one to the window of
 * its receive time (both this node's clock).  Buffers are bounded per peer;
 * what does not fit, arrives for a window already closed, or belongs to an
 * edge this node does not own is dropped and counted.
 */
struct node_win_dir {
    uint64_t sent;     /* coded probes sent in the window (from sequence numbers) */
    uint64_t received; /* with both packets received */
    uint64_t lost;     /* sent - received */
    uint64_t pure;     /* received and pure */
};

struct node_win_result {
    int64_t window;
    uint32_t src, dst; /* src = this node (the owner) */
    int64_t from_ns, to_ns;
    struct node_win_dir fwd, rev;
    double rtt_min_ns, rtt_median_ns, rtt_p99_ns; /* NAN when unknown */
    bool fitted;
    clock_edge_fit_t fit;  /* when fitted; fit.window = window */
    char err[BASE_ERRLEN]; /* why not fitted */
    clock_purity_stats_t purity;
};

struct node_windows_cfg {
    uint32_t self;
    int64_t window_ns;
    size_t max_per_peer; /* samples buffered per peer (both directions) */
    const clock_estimator_t *est;
    clock_purity_opts_t purity;
    clock_fit_opts_t fit;
};

struct node_windows_stats {
    uint64_t added;     /* samples kept */
    uint64_t not_owned; /* samples of edges another node fits */
    uint64_t late;      /* samples for a window already closed */
    uint64_t full;      /* dropped: the peer's buffer was full */
    uint64_t fits, fit_errors;
};

typedef struct node_windows node_windows_t;

node_windows_t *node_windows_new(const struct node_windows_cfg *cfg);
void node_windows_destroy(node_windows_t **self);
/* The peers whose edges this node owns; buffers of other peers are dropped. */
void node_windows_set_owned(node_windows_t *self, const uint32_t *peers, size_t n);
void node_windows_add(node_windows_t *self, const struct node_probe_sample *s);
/* The window of probe-clock time t. */
int64_t node_window_of(int64_t t, int64_t window_ns);
/*
 * Close window k: fit every owned edge that has samples in it (or was
 * probed: counts gives the prober's cumulative per-peer counters, used for
 * `sent` when no sample came back).  Samples of window k and older leave the
 * buffers.  Returns the number of results written (at most max).
 */
size_t node_windows_close(node_windows_t *self, int64_t k, const struct node_peer_count *counts,
                          size_t ncounts, struct node_win_result *out, size_t max);
void node_windows_stats(const node_windows_t *self, struct node_windows_stats *out);

/* Convert a prober sample into the clock module's probe. */
void node_sample_to_probe(const struct node_probe_sample *s, clock_probe_t *p);

/* ---- The plan (node/plan.c) ------------------------------------------- */

#define NODE_HOST_LEN 128
#define NODE_ADDR_LEN 96

struct node_plan_node {
    uint32_t id;
    char host[NODE_HOST_LEN];
    char addr[NODE_ADDR_LEN]; /* "ip:port"; an unspecified ip means "the master's address" */
};

struct node_plan {
    int64_t epoch;
    uint32_t ref;
    size_t nnodes, nedges;
    struct node_plan_node *nodes;
    struct node_edge *edges;
};

void node_plan_free(struct node_plan *plan);
/* The plan's header fields added to a `plan` bus message header. */
void node_plan_to_json(const struct node_plan *plan, json_object *hdr);
/* Read a `plan` header (already schema-checked); bounded by NODE_MAX_NODES. */
enum base_dec node_plan_from_json(json_object *hdr, struct node_plan *plan, char *err);
/* The node's entry, NULL when absent. */
const struct node_plan_node *node_plan_find(const struct node_plan *plan, uint32_t id);

/* ---- The master (node/master.c) ---------------------------------------- */

/* The most windows a master may wait before it refines a window's maps. */
#define NODE_REFINE_MAX 4
_Static_assert(NODE_REFINE_MAX <= CLOCK_LAG_MAX, "a refinement's lag must decode as node_fit");

struct bus_curve;
struct bus_pub;

/*
 * CURVE keys of curve_dir (dpnode --gen-keys): the client pair with the hub's
 * public key, and with `server` (the master, a relay) the hub's pair with the
 * admitted client keys, client.public plus every line of authorized_keys.
 * On failure what was loaded is still in *client / *server for the caller
 * to free.
 */
int node_curve_load(const char *dir, bool server, struct bus_curve **client,
                    struct bus_curve **server_out, char *err);
void node_curve_free(struct bus_curve *curve);

struct node_master_cfg {
    const char *listen; /* hub bind endpoint */
    uint32_t self_id;   /* the master's own node id */
    int ref;            /* reference node; -1: self */
    int k;              /* out-neighbours */
    int64_t window_ns, cadence_ns, spacing_ns, snapshot_ns, hb_ns, status_ns;
    int64_t grace_ns;  /* agents fit a window this long after it ends */
    int64_t forget_ns; /* down nodes leave the table after this */
    int refine_lag;    /* publish window K's maps again once K + refine_lag is solved; 0: never */
    double stamp_asym_ns;                 /* σ of a host's stamp asymmetry (clock_solve_opts_t) */
    double margin_z;                      /* raised margins bound slow hosts (clock_solve_opts_t) */
    const struct bus_curve *server_curve; /* NULL: no security */
    const struct bus_curve *client_curve; /* the master's own subscriber */
    const char *probe_key;                /* hex, handed out in every welcome; NULL: none */
    /* The master as a node. */
    const char *host, *version, *instance, *probe_addr;
    int pid;
    /* The master's probe clock now (simulated when the agent's is). */
    int64_t (*probe_now)(void *ctx);
    /* A new plan (also for the master's own prober). */
    void (*on_plan)(void *ctx, const struct node_plan *plan);
    void *ctx;
};

struct node_master_stats {
    uint64_t hellos, welcomes, hbs, byes, unknown_hb, table_full;
    uint64_t byes_refused; /* for a node not in the table, or not from its connection */
    uint64_t plans, solves, solve_errors, node_fits;
    /* windows solved again with later ones (refine_lag); errors also count windows whose
     * slow-host bounds could not be noted again */
    uint64_t refines, refine_errors;
    uint64_t edge_fits, edge_fits_late, edge_fits_bad, edge_fits_dropped;
    /* fits for windows more than 7 ahead of the solve (a node's clock far off), refused;
     * fits that replaced one of the same edge and window (either direction) */
    uint64_t edge_fits_ahead, edge_fits_replaced;
    uint64_t edge_fits_unknown; /* to a node not in the table (after a master restart, briefly) */
    uint64_t clock_back;        /* the master's probe clock stepped back by more than a window */
    uint64_t steps_between; /* node clocks that stepped between two windows (not pooled across) */
    uint64_t
        history_ignored; /* nodes and edges beyond the history's room (clock_history_ignored) */
    uint64_t marked_down, forgotten;
    /* relay reports taken; refused for want of room in the relay table */
    uint64_t relay_reports, relays_refused;
    base_decstats_t dec; /* edge fits and registration headers */
};

typedef struct node_master node_master_t;

node_master_t *node_master_new(const struct node_master_cfg *cfg, char *err);
void node_master_destroy(node_master_t **self);
/* The hub, for the agent's own publisher (bus_hub_inproc_pub, bus_hub_zctx). */
struct bus_hub *node_master_hub(node_master_t *self);
/* Where the master publishes (the agent's publisher, shared). */
void node_master_set_pub(node_master_t *self, struct bus_pub *pub);
/* Handle registration traffic (waiting up to wait_ms for the first), edge
 * fits, liveness and due solves.  BASE_ERR on a socket failure. */
int node_master_tick(node_master_t *self, int wait_ms, char *err);
/* One registration message (hello, hb, bye, a relay's report; anything
 * else is counted as refused) from a peer of the hub, as node_master_tick hands them over. */
void node_master_registration(node_master_t *self, const bus_peer_t *peer, bus_msg_t *msg);
void node_master_stats(const node_master_t *self, struct node_master_stats *out);
/* Nodes up / known. */
void node_master_counts(const node_master_t *self, size_t *up, size_t *known);

/* ---- device metrics (devices.c) --------------------------------------------
 * amdgpu's and NVIDIA's, read every period on a thread of their own, so that
 * a driver call that hangs never stops the agent's loop. */
struct node_devices_cfg {
    const char *sysfs_root;   /* NULL: GPU_METRICS_ROOT */
    const char *nvml_library; /* NULL or "": no NVML */
    int64_t period_ns;        /* between readings (0: 1 s) */
    int64_t first_wait_ns;    /* how long new() waits for the first (0: 2 s) */
};

typedef struct node_devices node_devices_t;

node_devices_t *node_devices_new(const struct node_devices_cfg *cfg, char *err);
void node_devices_destroy(node_devices_t **self);
/* A new period between readings (the master's status period), from the next one. */
void node_devices_set_period(node_devices_t *self, int64_t period_ns);
/* The latest reading, at most max cards, and the decoders' counts so far;
 * none while the reading is stale (older than 3 periods and 3 s) or none
 * came yet: *fresh (when not NULL) says which. */
size_t node_devices_get(node_devices_t *self, gpu_metrics_t *out, size_t max, base_decstats_t *dec,
                        bool *fresh);

/* A `log` message (consoles show them as alerts) of a node's component. */
bus_msg_t *node_log_msg(int64_t node, enum base_log_level level, const char *component,
                        const char *line, int64_t t_ns);

#endif /* DP_NODE_INT_H */
