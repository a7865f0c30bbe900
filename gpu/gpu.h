/*
 * gpu — the one event model every GPU source fills (HIP interception,
 * CUPTI, the simulated workload) and its wire encoding; the local link from
 * an application (libdptrace) to its dpnode; GPU sources as const vtables;
 * the simulated workload; device metrics.  docs/GPU.md explains the design.
 *
 * Events travel in batches: a 16-byte batch header followed by `count`
 * fixed-size 64-byte little-endian records (docs/PROTOCOL.md has the byte
 * layout).  Names are not in the records: a record carries a name id that a
 * name-table message of the same (node, pid) resolves.
 */
#ifndef DP_GPU_H
#define DP_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

enum gpu_event_kind {
    GPU_EV_KERNEL = 1,
    GPU_EV_MEMCPY = 2,
    GPU_EV_MEMSET = 3,
    GPU_EV_API = 4,     /* a host-side runtime call (launch, copy, ...) */
    GPU_EV_SYNC = 5,    /* a host thread waiting on a stream/device/event */
    GPU_EV_RANGE = 6,   /* a user annotation range (dpt_range_push/pop) */
    GPU_EV_STEP = 7,    /* a training step (dpt_step_begin/end) */
    GPU_EV_INSTANT = 8, /* a point mark (dpt_mark); end == start */
    GPU_EV_NKINDS
};

/* Record flags. */
#define GPU_EVF_DEVICE_TIME 0x01 /* start/end were measured on the GPU, then mapped */
#define GPU_EVF_ASYNC       0x02 /* the API call returned before the work finished */
#define GPU_EVF_CLAMPED     0x04 /* a size field did not fit the record and was clamped */
#define GPU_EVF_COLLECTIVE  0x08 /* the work is a cross-node collective */

enum gpu_copy_kind {
    GPU_COPY_UNKNOWN = 0,
    GPU_COPY_H2D = 1,
    GPU_COPY_D2H = 2,
    GPU_COPY_D2D = 3,
    GPU_COPY_H2H = 4,
    GPU_COPY_P2P = 5,
};

/*
 * One event.  Times are in the node's trace clock (CLOCK_MONOTONIC, through
 * the agent's simulated clock when it has one) in ns.  `node` is not on the
 * wire: the batch's sender fills it.
 */
typedef struct gpu_event {
    uint8_t kind;  /* enum gpu_event_kind */
    uint8_t flags; /* GPU_EVF_* */
    uint16_t device;
    uint16_t node;
    uint8_t copy_kind; /* enum gpu_copy_kind, memcpy only */
    uint32_t pid;
    uint32_t tid;
    uint32_t stream;   /* stream/queue id, unique within (node, pid, device) */
    uint32_t name_id;  /* 0: no name */
    uint32_t corr_id;  /* links an API call to its GPU work; 0: none */
    uint64_t scope_id; /* innermost open range of the issuing thread; 0: none */
    int64_t start_ns;
    int64_t end_ns;
    uint64_t bytes;    /* memcpy/memset */
    uint64_t step;     /* step number (GPU_EV_STEP) */
    uint32_t grid[3];  /* kernel grid, in workgroups */
    uint32_t block[3]; /* kernel workgroup size, in work items */
} gpu_event_t;

#define GPU_RECORD_SIZE   64
#define GPU_BATCH_HDR     16
#define GPU_BATCH_MAGIC   0x56455044u /* "DPEV" little-endian */
#define GPU_BATCH_VERSION 1

/* Size in bytes of a batch of n events. */
size_t gpu_batch_size(size_t n);
/* Encode n events into buf (at least gpu_batch_size(n) bytes); returns bytes written. */
size_t gpu_batch_encode(const gpu_event_t *ev, size_t n, void *buf);
/*
 * Decode a batch.  At most `max` events are accepted (a larger count is
 * BASE_DEC_OVERSIZED, nothing is allocated from input sizes).  On success
 * *n holds the number written to out and every record's node is set to `node`.
 */
enum base_dec gpu_batch_decode(const void *buf, size_t len, uint16_t node, gpu_event_t *out,
                               size_t max, size_t *n, char *err);
/* Count the events of a batch without decoding them (validates the header). */
enum base_dec gpu_batch_count(const void *buf, size_t len, size_t *n, char *err);

const char *gpu_event_kind_name(enum gpu_event_kind kind);

const char *gpu_copy_kind_name(enum gpu_copy_kind kind);

/* ------------------------------------------------------------------------
 * Names: an intern table, string -> id (1, 2, ...), bounded.  Id 0 means
 * "no name".  Not thread-safe: one owner.
 */
#define GPU_NAME_MAX 255 /* longest name in bytes; longer ones are cut (on UTF-8 boundaries) */

typedef struct gpu_names gpu_names_t;

gpu_names_t *gpu_names_new(size_t max_names);
void gpu_names_destroy(gpu_names_t **self);
/* The id of name, interned when new; 0 when the table is full (counted). */
uint32_t gpu_names_intern(gpu_names_t *self, const char *name);
/* The id of a kernel's symbol under the name people read: a C++ symbol
 * demangled (where libstdc++ is in the process), a name too long cut with
 * a hash of the whole.  Each symbol is turned into its name once. */
uint32_t gpu_names_intern_symbol(gpu_names_t *self, const char *sym);
/* The name of id, NULL when unknown. */
const char *gpu_names_get(const gpu_names_t *self, uint32_t id);
/* Whether id names a kernel of a collective library (NCCL, RCCL): such
 * work is marked GPU_EVF_COLLECTIVE by the sources. */
bool gpu_names_collective(const gpu_names_t *self, uint32_t id);
/* Number of names interned so far (ids 1..count). */
uint32_t gpu_names_count(const gpu_names_t *self);
uint64_t gpu_names_full_drops(const gpu_names_t *self);

/* ------------------------------------------------------------------------
 * Scope range ids (seed 004).  Every pushed range gets an id unique in its
 * process; the tree child -> parent (0: a root) is recorded once per id.
 * gpu_scopetree keeps the most recent `capacity` pairs (older ones are
 * evicted, counted), which bounds memory in long runs.
 */
struct gpu_scope_pair {
    uint64_t child;
    uint64_t parent;
};

typedef struct gpu_scopetree gpu_scopetree_t;

gpu_scopetree_t *gpu_scopetree_new(size_t capacity);
void gpu_scopetree_destroy(gpu_scopetree_t **self);
/* Record child -> parent.  Returns 1 when new, 0 when already known with
 * the same parent, BASE_ERR when known with another parent (a conflict) or
 * when child is 0 or equals parent. */
int gpu_scopetree_add(gpu_scopetree_t *self, uint64_t child, uint64_t parent, char *err);
/* Record a root-to-leaf path of ids: walks from the leaf up and stops at the
 * first id already known (its ancestors are then known too).  Returns the
 * number of new pairs. */
size_t gpu_scopetree_add_path(gpu_scopetree_t *self, const uint64_t *ids, size_t n);
/* Parent of id: BASE_OK and *parent, or BASE_ERR when unknown. */
int gpu_scopetree_parent(const gpu_scopetree_t *self, uint64_t id, uint64_t *parent);
/* Fill out[] with the path root..id (at most max ids); returns its length
 * (0 when id is unknown).  Stops at an unknown ancestor or after max. */
size_t gpu_scopetree_path(const gpu_scopetree_t *self, uint64_t id, uint64_t *out, size_t max);
size_t gpu_scopetree_size(const gpu_scopetree_t *self);
uint64_t gpu_scopetree_evicted(const gpu_scopetree_t *self);
/* Visit the pairs, oldest first. */
void gpu_scopetree_foreach(const gpu_scopetree_t *self,
                           void (*fn)(void *ctx, const struct gpu_scope_pair *pair), void *ctx);

/* ------------------------------------------------------------------------
 * Snapshot pairs and clock maps.  A snapshot pair is two clock readings
 * taken (as nearly as possible) at the same instant, `a` in one domain and
 * `b` in another (e.g. "gpu0" and "trace").  A clock map holds the most
 * recent pairs of one domain pair and converts a -> b: linear interpolation
 * between the bracketing pairs, extrapolation with the slope of the nearest
 * segment outside them (offset only with a single pair).  Arithmetic is on
 * differences from integer anchors, so ns precision holds at any magnitude.
 */
struct gpu_snap_pair {
    int64_t a_ns;
    int64_t b_ns;
};

typedef struct gpu_clockmap gpu_clockmap_t;

gpu_clockmap_t *gpu_clockmap_new(size_t capacity);
void gpu_clockmap_destroy(gpu_clockmap_t **self);
/* Add a pair; both readings must be later than the last pair's (BASE_ERR). */
int gpu_clockmap_add(gpu_clockmap_t *self, int64_t a_ns, int64_t b_ns, char *err);
/* Map a time of domain a onto domain b; BASE_ERR when the map has no pair. */
int gpu_clockmap_map(const gpu_clockmap_t *self, int64_t a_ns, int64_t *b_ns);
size_t gpu_clockmap_count(const gpu_clockmap_t *self);

/* ------------------------------------------------------------------------
 * Messages of the local link (application -> dpnode) and of every source.
 * On the wire (ZeroMQ, docs/GPU.md and docs/PROTOCOL.md): frame 1 the
 * topic "dp1.<kind>.-", frame 2 a JSON header whose "type" is the kind,
 * frame 3 (ev only) an event batch.  Header fields per kind (named as in
 * the bus schema, so that dpnode republishes them adding only "node"):
 *   proc  {type, pid, seq, exe, backend, devices, version, t0_ns}
 *   ev    {type, pid, seq, count, dropped}
 *   names {type, pid, seq, names: [[id, "name"], ...]}
 *   scope {type, pid, seq, tree: [[child, parent], ...]}
 *   snap  {type, pid, seq, a: "gpu0", b: "trace", pairs: [[a, b], ...]}
 */
enum gpu_msg_kind {
    GPU_MSG_PROC = 0, /* process hello: who is tracing, with which backend */
    GPU_MSG_EV,       /* an event batch */
    GPU_MSG_NAMES,    /* [id, name] pairs, sent before any event that uses them */
    GPU_MSG_SCOPE,    /* [child, parent] scope range id pairs */
    GPU_MSG_SNAP,     /* snapshot pairs between two clock domains */
    GPU_MSG_NKINDS
};

/* Limits a receiver enforces (and a sender respects). */
#define GPU_LINK_MAX_EVENTS 4096   /* events per ev message */
#define GPU_LINK_MAX_NAMES  1024   /* pairs per names message */
#define GPU_LINK_MAX_SCOPE  4096   /* pairs per scope message */
#define GPU_LINK_MAX_SNAP   256    /* pairs per snap message */
#define GPU_LINK_MAX_HDR    262144 /* bytes of a JSON header frame */
#define GPU_LINK_MAX_TOPIC  64     /* bytes of a topic frame */
#define GPU_DOMAIN_MAX      31     /* bytes of a clock domain name */

typedef struct gpu_msg {
    enum gpu_msg_kind kind;
    uint32_t pid;
    uint64_t seq;     /* per-sender message number; gaps mean lost messages */
    json_object *hdr; /* the decoded header (receiver side; borrowed), else NULL */
    /* proc */
    const char *exe;
    const char *backend; /* "hip", "cupti", "sim", "none" */
    uint32_t devices;
    int64_t t0_ns; /* trace clock when the sender started */
    /* ev */
    const gpu_event_t *ev;
    size_t nev;
    uint64_t dropped_total; /* events the sender dropped since it started */
    /* names */
    const uint32_t *name_ids;
    const char *const *name_strs;
    size_t nnames;
    /* scope */
    const struct gpu_scope_pair *scope;
    size_t nscope;
    /* snap */
    const char *domain_a;
    const char *domain_b;
    const struct gpu_snap_pair *snap;
    size_t nsnap;
} gpu_msg_t;

/* Where sources and receivers hand their messages. */
typedef void (*gpu_msg_fn)(void *ctx, const gpu_msg_t *msg);

const char *gpu_msg_kind_name(enum gpu_msg_kind kind);

/* The topic frame of a message kind: "dp1.<kind>.-"; returns its length. */
size_t gpu_msg_topic(enum gpu_msg_kind kind, char *buf, size_t len);
/* The JSON header text of msg (the caller frees it); NULL with a message
 * when msg breaks a limit.  msg->seq is written as given. */
char *gpu_msg_header(const gpu_msg_t *msg, char *err);

/*
 * The default endpoint of the local link: $DPTOP_TRACE_ENDPOINT when set,
 * else ipc://$XDG_RUNTIME_DIR/dptop-trace.sock when XDG_RUNTIME_DIR is set,
 * else ipc:///tmp/dptop-trace-<uid>.sock.  dpnode binds it, libdptrace
 * connects to it.  Returns BASE_ERR when buf is too small.
 */
int gpu_link_default_endpoint(char *buf, size_t len, char *err);

/*
 * Sender side (libdptrace): a PUSH socket connected to the endpoint, with a
 * bounded send queue, that never blocks: a message that cannot be queued at
 * once (no receiver, or a slow one) is refused and the caller counts it.
 */
typedef struct gpu_link gpu_link_t;

gpu_link_t *gpu_link_new(const char *endpoint, int sndhwm, char *err);
void gpu_link_destroy(gpu_link_t **self);
/* Send without blocking; msg->seq is replaced by the link's own counter.
 * BASE_OK: queued.  BASE_ERR: not sent (err says why). */
int gpu_link_send(gpu_link_t *self, const gpu_msg_t *msg, char *err);
/* True once after each change of receiver (one connected, or one lost: a
 * new one's pipe may take a message before its connection is reported):
 * the sender should then send its state again (hello, names, recent scope
 * pairs) before anything else. */
bool gpu_link_take_reconnect(gpu_link_t *self);
/* Whether a receiver is connected (as the socket monitor last said): a
 * refused message then met a full queue, not an absent receiver. */
bool gpu_link_up(gpu_link_t *self);
uint64_t gpu_link_sent(const gpu_link_t *self);
/* Failed connection attempts seen so far (counted by gpu_link_take_reconnect). */
uint64_t gpu_link_retries(const gpu_link_t *self);
uint64_t gpu_link_refused(const gpu_link_t *self);

/*
 * Receiver side (dpnode): binds the endpoint (PULL), receives and validates
 * every message, and hands each valid one to fn.  Every rejection is
 * counted by outcome (gpu_ingest_stats) and the last reason is kept.
 */
typedef struct gpu_ingest gpu_ingest_t;

/* endpoint NULL: decoder only (gpu_ingest_decode), no socket. */
gpu_ingest_t *gpu_ingest_new(const char *endpoint, gpu_msg_fn fn, void *ctx, char *err);
void gpu_ingest_destroy(gpu_ingest_t **self);
/* The ZeroMQ socket, for the caller's zmq_poll (NULL without endpoint). */
void *gpu_ingest_socket(gpu_ingest_t *self);
/* Receive and hand on what is waiting, waiting up to timeout_ms (0: do not
 * wait, -1: forever) for the first message; at most `max` messages.
 * Returns the number of messages received (valid or not) or BASE_ERR. */
int gpu_ingest_poll(gpu_ingest_t *self, int timeout_ms, int max, char *err);
/* Validate one message given as frames.  On success *msg points into
 * storage owned by self, valid until the next call. */
enum base_dec gpu_ingest_decode(gpu_ingest_t *self, const void *const *frames, const size_t *lens,
                                size_t nframes, gpu_msg_t *msg, char *err);
/* Outcome counters of every message decoded so far (n[BASE_DEC_OK] are the
 * accepted ones) and accepted messages per kind. */
const base_decstats_t *gpu_ingest_stats(const gpu_ingest_t *self);
uint64_t gpu_ingest_count(const gpu_ingest_t *self, enum gpu_msg_kind kind);
const char *gpu_ingest_last_error(const gpu_ingest_t *self);

/* ------------------------------------------------------------------------
 * Simulated workload (SPEC §6): a training-like loop per node.  Steps start
 * at multiples of the step period of TRUE time; in each: an H2D copy, a
 * forward and a backward pass of per-layer kernels (stream 1, inside
 * "forward"/"backward"/"layer_<i>" ranges), a collective "allreduce"
 * (stream 2, GPU_EVF_COLLECTIVE) that starts at the same true time on every
 * node except the straggler, which is late by straggler_late_ns (every
 * node's collective then ends together, as a real one waits for its last
 * member), an optimizer kernel, a D2H copy and a host synchronisation.  API
 * events (hipLaunchKernel, hipMemcpyAsync) carry correlation ids linking
 * them to their GPU work.  Every timestamp goes through the caller's clock
 * function (true time -> the node's trace clock), so that under raw clocks
 * the collectives look staggered by the nodes' clock offsets.
 */
typedef int64_t (*gpu_sim_clock_fn)(void *ctx, int64_t true_ns);

struct gpu_sim_cfg {
    uint16_t node;
    uint32_t pid;              /* the pid the events carry */
    uint16_t device;           /* device id the events carry */
    int64_t step_period_ns;    /* default 100 ms */
    uint32_t layers;           /* default 4, at most 64 */
    int32_t straggler_node;    /* -1: none */
    int64_t straggler_late_ns; /* at most 10 % of the step period */
    /* Every node's collective also starts up to this much late, per step:
     * gpu_sim_arrival_jitter() of (step, node).  At most 10 % of the period. */
    int64_t jitter_ns;
    uint64_t seed; /* kernel duration jitter */
};

typedef struct gpu_sim gpu_sim_t;

void gpu_sim_defaults(struct gpu_sim_cfg *cfg);
/* clock NULL: identity (trace time == true time). */
gpu_sim_t *gpu_sim_new(const struct gpu_sim_cfg *cfg, gpu_sim_clock_fn clock, void *clock_ctx,
                       char *err);
void gpu_sim_destroy(gpu_sim_t **self);
/* Hand to fn every event that has ended by true time `true_now_ns` (and the
 * names and scope pairs they use, first).  The first call starts at the next
 * step boundary; a call after a long pause skips steps older than two
 * periods (counted).  Returns the number of events handed. */
int gpu_sim_poll(gpu_sim_t *self, int64_t true_now_ns, gpu_msg_fn fn, void *ctx, char *err);
/* The arrival jitter of step k on node n for a bound j: splitmix64(k ·
 * 2^16 + n) mod (j + 1) ns — reproducible by a test from the step number. */
int64_t gpu_sim_arrival_jitter(uint64_t step, uint16_t node, int64_t jitter_ns);
/* True start time of step k's collective on this node, and its true end. */
void gpu_sim_collective_true(const gpu_sim_t *self, uint64_t step, int64_t *start_ns,
                             int64_t *end_ns);
uint64_t gpu_sim_steps(const gpu_sim_t *self);
uint64_t gpu_sim_skipped(const gpu_sim_t *self);

/* ------------------------------------------------------------------------
 * GPU sources: const vtables registered in one table (gpu/source.c).
 *   hip    inside an application, through libdptrace.so (HIP interception)
 *   cupti  inside an application, through libdptrace_cupti.so (CUPTI)
 *   sim    inside dpnode: the simulated workload
 * open() takes "key=value,key=value" options (source specific, documented
 * in docs/GPU.md); poll() hands what is ready to fn.
 */
#define GPU_SRC_IN_APP   0x01 /* runs inside the traced application */
#define GPU_SRC_IN_AGENT 0x02 /* runs inside dpnode */

struct gpu_source_opts {
    uint16_t node;
    uint32_t pid;
    const char *options;    /* NULL or "key=value,..." */
    gpu_sim_clock_fn clock; /* sim: true -> trace clock (NULL: identity) */
    void *clock_ctx;
    /* Names are interned here (shared with the caller, who sends them
     * before the events that use them); NULL: the source keeps its own
     * table and hands GPU_MSG_NAMES messages itself. */
    gpu_names_t *names;
    /* In-app sources: the calling thread's innermost scope id (and its
     * thread id), and where host-side API events go (name: a string that
     * lives as long as the process).  May be NULL. */
    uint64_t (*scope_now)(void *app, uint32_t *tid);
    void (*host_event)(void *app, const gpu_event_t *ev, const char *name);
    void *app;
};

/* What a source can say about its own work (zero where not applicable). */
struct gpu_source_counters {
    uint64_t dropped; /* operations it could not time or hand on */
    uint64_t pending; /* operations waiting for their GPU times */
    uint64_t steps;   /* sim: steps produced */
    uint64_t skipped; /* sim: steps skipped after a pause */
};

struct gpu_source {
    const char *name;
    const char *summary;
    unsigned flags; /* GPU_SRC_* */
    /* BASE_OK when the source can run in this process, else why not. */
    int (*probe)(char *err);
    /* Keeps no pointer to opts or its strings (the names table opts points
     * to must outlive the source). */
    void *(*open)(const struct gpu_source_opts *opts, char *err);
    /* now_ns: the trace clock (hip, cupti) or true time (sim). */
    int (*poll)(void *state, int64_t now_ns, gpu_msg_fn fn, void *ctx, char *err);
    void (*counters)(void *state, struct gpu_source_counters *out);
    void (*close)(void *state);
};

const struct gpu_source *gpu_source_find(const char *name);
/* The table, NULL-terminated. */
const struct gpu_source *const *gpu_sources(void);

/* ------------------------------------------------------------------------
 * CUPTI activity record translation (built when the CUDA toolkit's CUPTI
 * headers are present; gpu_cupti_built() says so).  `record` is a
 * CUpti_Activity* of the CUDA 13 headers: CUpti_ActivityKernel10 (kinds
 * KERNEL and CONCURRENT_KERNEL), CUpti_ActivityMemcpy6, CUpti_ActivityMemset4.
 */
struct gpu_cupti_xlat {
    uint32_t pid;
    const gpu_clockmap_t *map; /* CUPTI timestamps -> trace clock; NULL: identity */
    gpu_names_t *names;        /* kernel names are interned here */
    /* Scope id and issuing thread of a correlation id (0 when unknown). */
    uint64_t (*scope_of)(void *ctx, uint32_t corr, uint32_t *tid);
    void *ctx;
};

bool gpu_cupti_built(void);
/* BASE_DEC_OK: *ev filled.  BASE_DEC_BAD_TYPE: a record kind not translated
 * (skip it).  BASE_DEC_BAD_VALUE: a malformed record (end before start...). */
enum base_dec gpu_cupti_translate(const void *record, const struct gpu_cupti_xlat *x,
                                  gpu_event_t *ev, char *err);

/* ------------------------------------------------------------------------
 * Device metrics from amdgpu sysfs, read under a configurable root
 * (default GPU_METRICS_ROOT): per card `cardN/device/gpu_busy_percent`,
 * `mem_info_vram_used`, `mem_info_vram_total` and the first hwmon's
 * `power1_average` (µW) and `temp1_input` (m°C).  A field is valid only
 * when its file was read and parsed (nvtop-style validity bits), so
 * partial data shows.
 */
#define GPU_METRICS_ROOT   "/sys/class/drm"
#define GPU_MET_BUSY       0x01
#define GPU_MET_VRAM_USED  0x02
#define GPU_MET_VRAM_TOTAL 0x04
#define GPU_MET_POWER      0x08
#define GPU_MET_TEMP       0x10

typedef struct gpu_metrics {
    uint32_t card;      /* N of cardN (NVML: the device index) */
    char name[48];      /* "amdgpu cardN", NVML's device name */
    const char *vendor; /* "amd", "nvidia": card numbers are per vendor */
    uint32_t valid;     /* GPU_MET_* */
    uint32_t busy_pct;
    uint64_t vram_used;  /* bytes */
    uint64_t vram_total; /* bytes */
    uint64_t power_uw;   /* microwatts */
    int64_t temp_mc;     /* millidegrees Celsius */
} gpu_metrics_t;

/* Read every amdgpu card under root (NULL: GPU_METRICS_ROOT), ordered by
 * card number, at most max.  A file that is present but unreadable or holds
 * garbage is counted in st (when not NULL) and leaves its bit clear.
 * BASE_ERR only when root cannot be listed. */
int gpu_metrics_read(const char *root, gpu_metrics_t *out, size_t max, size_t *n,
                     base_decstats_t *st, char *err);

/* NVIDIA GPUs through NVML (the library opened with dlopen, default
 * GPU_NVML_LIBRARY): the same fields and validity bits; a field the board
 * does not give (NVML's "not supported") is left out, uncounted; an error
 * is counted in st.  gpu_nvml_new: NULL when there is no NVML ("nvml:
 * cannot load: ...") or no NVIDIA driver here (err says which).  card is
 * NVML's index, which need not be the CUDA device number. */
#define GPU_NVML_LIBRARY "libnvidia-ml.so.1"
typedef struct gpu_nvml gpu_nvml_t;
gpu_nvml_t *gpu_nvml_new(const char *library, char *err);
void gpu_nvml_destroy(gpu_nvml_t **self);
int gpu_nvml_read(gpu_nvml_t *self, gpu_metrics_t *out, size_t max, size_t *n, base_decstats_t *st,
                  char *err);

#endif /* DP_GPU_H */
