/*
 * tui — dptop, the console.  The module has three layers:
 *
 *   - the model (tui_model_t): cluster state fed by bus messages — node
 *     table, fits, window statistics, names per (node, pid), scope trees,
 *     snapshot pairs and a bounded event store.  No terminal: the live bus,
 *     a recording (replay, export) and the unit tests feed the same model;
 *   - pure helpers used by the panels and the tests: time <-> column
 *     mapping, tick placement and labels in human units, lane packing,
 *     sorting of the node table, the Chrome Trace and XSpace writers, the
 *     window statistics export;
 *   - the console (tui_app_t, ncursesw): panels are const vtables
 *     registered in one table (tui/tui_int.h), drawn into their own curses
 *     windows with wnoutrefresh + doupdate.
 *
 * Time domains: events carry their node's trace clock.  Aligned time (the
 * global time base) is trace -> probe clock by the node's snapshot pairs,
 * then probe -> reference probe clock by the node fits (clock_conv_t).  Raw
 * time stops after the first stage: each node's own probe clock, so nodes
 * are comparable on one axis but keep their clock errors.  docs/CONSOLE.md
 * explains the console.
 */
#ifndef DP_TUI_H
#define DP_TUI_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/base.h"
#include "bus/bus.h"
#include "clock/clock.h"
#include "gpu/gpu.h"

/* ------------------------------------------------------------------------
 * Formatting in human units.
 */

/* A duration or signed offset with 3-4 significant digits and its unit:
 * "12ns", "1.25µs", "-3.40ms", "2.50s", "1m05s".  Returns the length. */
size_t tui_fmt_dur(char *buf, size_t len, double ns);
/* A signed offset with a fixed 1 ns resolution below 1 s: "+4.012345ms",
 * "-812.003µs", "+37ns"; beyond 1 s "+1.234567890s".  NAN: "?". */
size_t tui_fmt_offset(char *buf, size_t len, double ns);
/* A count with k/M/G suffixes: "950", "12.3k", "4.10M". */
size_t tui_fmt_count(char *buf, size_t len, double v);

/* ------------------------------------------------------------------------
 * Time axis: a view of `span_ns` starting at `t0` drawn over `cols` columns.
 * Column c covers [t0 + c·span/cols, t0 + (c+1)·span/cols).
 */
typedef struct tui_axis {
    int64_t t0;
    int64_t span_ns; /* > 0 */
    int cols;        /* > 0 */
} tui_axis_t;

/* The column of time t (floor); may lie outside [0, cols), clamped to ±2^30. */
int tui_axis_col(const tui_axis_t *ax, int64_t t);
/* The first time in column c (tui_axis_col of it is c). */
int64_t tui_axis_time(const tui_axis_t *ax, int c);

/* A tick step from the 1-2-5 series (1 ns .. 1000 s) so that ticks are at
 * least min_gap_cols apart. */
int64_t tui_tick_step(int64_t span_ns, int cols, int min_gap_cols);
/* The label of a tick at t_ns (relative to the axis origin) for ticks
 * step_ns apart, with just the precision the step needs: "0", "250ms",
 * "1.25s", "1.2500005s", "40µs", "2m30s".  Returns the length. */
size_t tui_tick_label(char *buf, size_t len, int64_t t_ns, int64_t step_ns);

struct tui_tick {
    int col;
    int64_t t; /* absolute */
    char label[32];
};
/* Ticks of an axis whose labels count from `origin`: the multiples of the
 * step (tui_tick_step) inside the view.  Returns how many (at most max). */
size_t tui_axis_ticks(const tui_axis_t *ax, int64_t origin, int min_gap_cols, struct tui_tick *out,
                      size_t max);

/* ------------------------------------------------------------------------
 * Lane packing: intervals sorted by start go to the first row whose last
 * interval ended at or before their start (greedy interval partitioning;
 * nested ranges fall into increasing rows).  row[i] receives the row, or
 * TUI_PACK_NONE when all max_rows rows are busy.  Returns the rows used.
 */
#define TUI_PACK_NONE 0xffu
#define TUI_PACK_MAX  16
struct tui_span {
    int64_t start, end;
};
size_t tui_pack(const struct tui_span *spans, size_t n, uint8_t *row, size_t max_rows);

/* ------------------------------------------------------------------------
 * The event store: every event the console holds, within a budget.  Events
 * live in tracks — a GPU queue (node, pid, device, stream) for kernels and
 * copies, a host thread (node, pid, tid) for API calls, waits, ranges,
 * steps and marks — each kept sorted by start time.  When the budget is
 * full the event that arrived first goes (FIFO over arrivals), counted per
 * node and in total.
 */
typedef struct tui_ev {
    int64_t start, end; /* trace clock, ns */
    uint64_t scope;
    union {
        struct {
            uint64_t bytes, step;
        } x;
        struct {
            uint32_t grid_x, grid_y;
            uint16_t grid_z, block_x, block_y, block_z;
        } k; /* kernels */
    } u;
    uint32_t name_id, corr_id, tid;
    uint8_t kind, flags, copy_kind, pad;
} tui_ev_t;

struct tui_track_key {
    uint16_t node;
    uint16_t device; /* device tracks */
    uint32_t pid;
    uint32_t id; /* stream (device track) or tid (host track) */
    bool host;
};

struct tui_track_info {
    struct tui_track_key key;
    size_t count;
    int64_t max_dur;    /* longest event seen in the track */
    int64_t last_start; /* latest start held */
    int64_t last_end;   /* latest end held */
};

#define TUI_DEFAULT_BUDGET 2097152 /* events */
#define TUI_MAX_TRACKS     65536

typedef struct tui_store tui_store_t;

/* budget >= 1 events, at most max_tracks tracks (events of further tracks are
 * refused and counted). */
tui_store_t *tui_store_new(size_t budget, size_t max_tracks);
void tui_store_destroy(tui_store_t **self);
void tui_store_clear(tui_store_t *self);
/* BASE_OK, or BASE_ERR when the track table is full or the event is
 * malformed (end before start, unknown kind): refused and counted. */
int tui_store_add(tui_store_t *self, const gpu_event_t *ev, char *err);
size_t tui_store_budget(const tui_store_t *self);
size_t tui_store_count(const tui_store_t *self);
uint64_t tui_store_added(const tui_store_t *self);
uint64_t tui_store_evicted(const tui_store_t *self);
uint64_t tui_store_refused(const tui_store_t *self);
uint64_t tui_store_node_evicted(const tui_store_t *self, uint16_t node);
size_t tui_store_ntracks(const tui_store_t *self);
const struct tui_track_info *tui_store_track(const tui_store_t *self, size_t track);
/* The k-th event of a track in start order (k < count). */
const tui_ev_t *tui_store_ev(const tui_store_t *self, size_t track, size_t k);
/* The first k whose event starts at or after t (count when none). */
size_t tui_store_lower_bound(const tui_store_t *self, size_t track, int64_t t);
/* Whether a kind goes to a device (GPU queue) track. */
bool tui_kind_on_device(uint8_t kind);

/* ------------------------------------------------------------------------
 * The model.
 */
enum tui_node_state { TUI_NODE_UNKNOWN, TUI_NODE_UP, TUI_NODE_DOWN, TUI_NODE_UNALIGNED };
const char *tui_node_state_name(enum tui_node_state s);

enum tui_clock { TUI_CLOCK_ALIGNED, TUI_CLOCK_RAW };

#define TUI_HOST_LEN 64
#define TUI_MAX_GPUS 16

struct tui_node {
    uint16_t id;
    char host[TUI_HOST_LEN];
    char version[16];
    uint32_t pid;
    enum tui_node_state state; /* from the master's node table (or hello / bye) */
    bool is_ref;
    int64_t last_arrival_ns; /* console clock, any message of the node */
    /* Time base: the latest node fit (fit.window < 0: none yet). */
    clock_node_fit_t fit;
    bool have_fit;
    /* status */
    bool have_status;
    uint64_t probes_sent, probes_recv, ev_drops;
    /* the master's: edge fits it could not use (late, too far ahead, bad, no room) */
    uint64_t fits_lost;
    double probes_per_s; /* from consecutive status messages */
    double agent_events_per_s, cpu_pct;
    double gpu_busy_pct; /* mean over GPUs; NAN: unknown */
    /* over the GPUs that report them (NAN: none does): memory in use and in all, power summed;
     * the hottest temperature */
    double vram_used_b, vram_total_b, power_w, temp_c;
    uint64_t rejects; /* inputs the agent's decoders refused (its status `dec_errors`) */
    int user_ts;      /* probe stamps: 1 user space (no kernel stamps, or some fell back to
                         user space in the latest period), 0 kernel, -1 unknown */
    int64_t status_t_ns;
    /* probe statistics over the node's outgoing edges (latest windows) */
    double rtt_min_ns, rtt_med_ns, pure_pct, loss_pct; /* NAN: unknown */
    /* events received by this console */
    uint64_t events;
    double events_per_s;
    uint64_t proc_dropped; /* sum over processes of their latest `dropped` */
    /* simulation truth (sim_truth), when the node announced one */
    bool have_truth;
    clock_sim_params_t truth;
    uint32_t ngpus;
    char gpu_name[32];
};

#define TUI_WIN_HIST 8
struct tui_win {
    int64_t window;
    int64_t from_ns, to_ns;
    uint64_t sent, received, lost;
    double pure_pct, rtt_min_ns, rtt_med_ns;
    char estimator[CLOCK_NAME_LEN];
    double offset_ns, drift_ppb, uncertainty_ns, margin_ns; /* NAN when no fit */
    uint32_t n_fwd, n_rev;
    double residual_ns; /* loop residual of the solve (NAN: none yet) */
    bool suspect;       /* the solve left it out of the offsets (a detour) */
    bool step;          /* its fit found a clock step inside the window (left out of the solve) */
    double step_ns;     /* the jump it saw, dst − src */
    bool have_stats, have_fit;
};
struct tui_edge {
    uint16_t src, dst;
    int64_t last_ns; /* arrival of its newest window statistics or fit (0: none) */
    size_t nwin;
    struct tui_win win[TUI_WIN_HIST]; /* newest first */
};

struct tui_summary {
    size_t nodes_total, nodes_up, nodes_down, nodes_unaligned;
    int ref; /* -1: unknown */
    /*
     * Loops in the newest solve's probe graph (-1: unknown).  None, with
     * edges: path asymmetry cannot be seen, and no ± includes it.
     */
    int loops;
    bool asym_unseen;
    /*
     * The host stamp asymmetry (σ, ns) the newest solve's ± assume: no probe
     * sees it, so it is a setting of the master (NAN: not said).
     */
    double stamp_asym_ns;
    /*
     * The largest bound, within the newest solve's ±, on what hosts slow to
     * stamp put on a map: their margins stood raised (0: none; NAN: not
     * said).
     */
    double delay_ns;
    /*
     * Hosts no margin of which has a level yet (the master's first windows,
     * or a host just joined): their ± takes their least margin, since
     * nothing yet tells how slow they were all along.
     */
    int hosts_warming;
    /* The bus tree's relays the master knows, those reporting, and what
     * they lost on the way up (their upstream queues full). */
    size_t relays, relays_up;
    uint64_t relays_lost;
    double worst_unc_ns;
    int worst_unc_node;
    double events_per_s;
    uint64_t events, ev_drops; /* agents' and processes' drops, before the bus */
    uint64_t fits_lost;        /* edge fits the master could not use */
    uint64_t evicted, refused; /* the console's event store */
    uint64_t dec_errors;       /* messages the model rejected */
    uint64_t node_rejects;     /* inputs the agents' decoders refused (their status) */
    uint64_t conv_rejected;    /* snapshot pairs / fits the converter refused */
    int64_t latest_global;     /* latest event end on the global time base (0: none) */
    int64_t latest_raw;        /* latest event end on raw clocks */
};

struct tui_model_opts {
    size_t event_budget; /* 0: TUI_DEFAULT_BUDGET */
    size_t max_nodes;    /* 0: 4096 */
    size_t max_names;    /* 0: 1 << 20 */
    size_t max_edges;    /* 0: 16384 */
    size_t max_batch;    /* events per ev message; 0: 1 << 20 */
};

typedef struct tui_model tui_model_t;

tui_model_t *tui_model_new(const struct tui_model_opts *opts);
void tui_model_destroy(tui_model_t **self);
/* Forget everything (replay seeks backwards by replaying from the start). */
void tui_model_reset(tui_model_t *self);
/*
 * Apply one bus message that arrived at arrival_ns (CLOCK_REALTIME of the
 * console, or of the recorder).  Messages the model does not use are
 * accepted and ignored.  Every rejection is counted (tui_model_decstats).
 */
enum base_dec tui_model_apply(tui_model_t *self, const bus_msg_t *msg, int64_t arrival_ns,
                              char *err);
/* Decode wire frames (bus_msg_decode) and apply them. */
enum base_dec tui_model_apply_frames(tui_model_t *self, const struct bus_frame *frames,
                                     size_t nframes, const struct bus_limits *lim,
                                     int64_t arrival_ns, char *err);
/* Recompute rates (events/s); call about once per second with the console clock. */
void tui_model_tick(tui_model_t *self, int64_t now_ns);
const base_decstats_t *tui_model_decstats(const tui_model_t *self);
const char *tui_model_last_error(const tui_model_t *self);
/* Increments whenever the node table, fits or windows change. */
uint64_t tui_model_generation(const tui_model_t *self);

size_t tui_model_nnodes(const tui_model_t *self);
const struct tui_node *tui_model_node(const tui_model_t *self, size_t i); /* by id order */
const struct tui_node *tui_model_find(const tui_model_t *self, uint16_t id);
int tui_model_ref(const tui_model_t *self); /* -1: unknown */
size_t tui_model_nedges(const tui_model_t *self);
const struct tui_edge *tui_model_edge(const tui_model_t *self, size_t i); /* (src, dst) order */
/* Name of (node, pid, id); NULL when unknown. */
const char *tui_model_name(const tui_model_t *self, uint16_t node, uint32_t pid, uint32_t id);
/* Parent of a scope range id of (node, pid): BASE_OK, or BASE_ERR when unknown. */
int tui_model_scope_parent(const tui_model_t *self, uint16_t node, uint32_t pid, uint64_t id,
                           uint64_t *parent);
tui_store_t *tui_model_store(const tui_model_t *self);
void tui_model_summary(const tui_model_t *self, struct tui_summary *out);
/* The last log line or alert published on the bus ("" when none). */
const char *tui_model_last_log(const tui_model_t *self, int64_t *arrival_ns);

/* The log: the latest TUI_LOG_LINES lines and alerts of every node (debug
 * left out), newest first; older ones are counted as dropped. */
#define TUI_LOG_LINES 256
struct tui_log_line {
    int64_t arrival_ns; /* CLOCK_REALTIME when it arrived */
    int node;           /* -1: no node */
    char level;         /* 'I'nfo, 'W'arn, 'E'rror */
    char text[220];     /* "component: message", control characters as spaces */
};
struct tui_log_stats {
    size_t lines;              /* held */
    uint64_t total, dropped;   /* received; pushed out of the ring */
    uint64_t warnings, errors; /* received of each level */
};
const struct tui_log_line *tui_model_log_line(const tui_model_t *self, size_t newest_first);
/* A line of the console's own (node -1) or of a node's; level 'I', 'W' or 'E'. */
void tui_model_log_add(tui_model_t *self, int64_t arrival_ns, int node, char level,
                       const char *component, const char *text);
void tui_model_log_stats(const tui_model_t *self, struct tui_log_stats *out);

/* Whether a node's events can be put on the global time base: its latest
 * fit is aligned (or it is the reference) and it has snapshot pairs. */
bool tui_model_aligned(const tui_model_t *self, uint16_t node);

/* Flags of a converted time. */
#define TUI_T_RAW    0x01u /* asked for aligned, node unaligned: raw clock instead */
#define TUI_T_NOSNAP 0x02u /* no snapshot pairs: trace clock shifted by arrival times */
#define TUI_T_EXTRAP 0x04u /* extrapolated beyond the pairs or fits */
#define TUI_T_GAP    0x08u /* across windows where the node was unaligned, or a clock step */
/*
 * A trace-clock time of a node on the chosen axis.  Aligned: the global time
 * base; when the node cannot be aligned, its raw time with TUI_T_RAW set
 * (never silently mixed: callers show the flag).  Raw: the node's own probe
 * clock through its snapshot pairs.  BASE_ERR when nothing is known of the
 * node (no pairs and no events).
 */
/*
 * A time of another clock domain of a node (CLOCK_DOMAIN_PROBE: its
 * CLOCK_REALTIME, CLOCK_DOMAIN_TRACE: its CLOCK_MONOTONIC, ...) on the global
 * time base, with the uncertainty of the node's map there (NAN: none, the
 * node is unaligned and the time raw) and TUI_T_* flags, as
 * tui_model_to_axis does for trace times.  What imported traces go through.
 */
int tui_model_map(tui_model_t *self, uint16_t node, uint32_t domain, int64_t local, int64_t *out,
                  double *unc, unsigned *flags);
/* A node's device readings over time, from its status messages (the
 * latest TUI_GPU_HIST): busy % (mean over its GPUs), power (summed), memory
 * in use; NAN where none reported.  t_ns is the node's probe clock. */
#define TUI_GPU_HIST 4096
struct tui_gpu_reading {
    int64_t t_ns;
    double busy_pct, power_w, vram_used_b;
};
/* How many are held; with i below that, the i-th oldest into *out. */
size_t tui_model_gpu_history(const tui_model_t *self, uint16_t node, size_t i,
                             struct tui_gpu_reading *out);
/* What a node's trace -> probe snapshot pairs can be wrong by between
 * pairs, which the maps' ± leave out: the largest deviation of a pair from
 * the line through its two neighbours, over the latest 8 (0: unknown). */
double tui_model_snap_dev(const tui_model_t *self, uint16_t node);
/* A time of another domain of a node on its trace clock (through its
 * snapshot pairs only): how imported events join the node's own. */
int tui_model_to_trace(tui_model_t *self, uint16_t node, uint32_t domain, int64_t local,
                       int64_t *trace);
/* An interned name of (node, pid), as a names message gives them. */
void tui_model_add_name(tui_model_t *self, uint16_t node, uint32_t pid, uint32_t id,
                        const char *name);
int tui_model_to_axis(tui_model_t *self, uint16_t node, int64_t trace_ns, enum tui_clock clock,
                      int64_t *out, unsigned *flags);
/*
 * Node offset to the reference right now: global − node probe clock at the
 * global instant `at_global` (with the latest fit's drift).  NAN when the
 * node has no aligned fit.
 */
double tui_model_offset_at(tui_model_t *self, uint16_t node, int64_t at_global);

/* ------------------------------------------------------------------------
 * Sorting the node table.
 */
enum tui_sort {
    TUI_SORT_ID,
    TUI_SORT_HOST,
    TUI_SORT_STATE,
    TUI_SORT_OFFSET,
    TUI_SORT_DRIFT,
    TUI_SORT_UNC,
    TUI_SORT_RTT,
    TUI_SORT_PURE,
    TUI_SORT_LOSS,
    TUI_SORT_EVENTS,
    TUI_SORT_PROBES,
    TUI_SORT_GPU,
    TUI_SORT_VRAM,
    TUI_SORT_POWER,
    TUI_SORT_TEMP,
    TUI_SORT_REJECTS,
    TUI_SORT_STAMPS,
    TUI_SORT_NKEYS
};
const char *tui_sort_name(enum tui_sort key);
/* Fill order[] (room for tui_model_nnodes) with node indices sorted by key;
 * ties by id; unknown values (NAN) last either way. */
void tui_sort_nodes(const tui_model_t *self, enum tui_sort key, bool descending, size_t *order);

/* ------------------------------------------------------------------------
 * Collectives (tui/coll.c, docs/COLLECTIVES.md): every instance of a
 * collective matched across its participants (a GPU stream of collective
 * kernels, or a host thread's collective ranges and calls), on the global
 * time base: who arrived last, by how much, and whether that is more than
 * the two maps' uncertainty can tell apart; per participant how often it was
 * last and how late it runs.  Fed from a model's event store by
 * tui_coll_update (live: about once a second; export: once, final).
 */
#define TUI_COLL_OP_LEN 24
#define TUI_COLL_KEEP   512 /* instances kept for the console */
#define TUI_COLL_NOSTEP UINT64_MAX

enum tui_coll_verdict {
    TUI_COLL_LATE,      /* the last one's lateness is beyond the clocks' uncertainty */
    TUI_COLL_WITHIN,    /* every arrival within the clocks' uncertainty of the last */
    TUI_COLL_PARTIAL,   /* participants missing (settled without them) */
    TUI_COLL_MISMATCH,  /* the key paired what cannot be one instance */
    TUI_COLL_UNALIGNED, /* a participant's node is not aligned: no call */
};
const char *tui_coll_verdict_name(enum tui_coll_verdict v);

struct tui_coll_arrival {
    uint32_t part;      /* participant index */
    int64_t start, end; /* global ns */
    double unc_ns;      /* the node map's ± at start (NAN: unaligned) */
    unsigned flags;     /* TUI_T_* */
};

struct tui_coll_inst {
    uint64_t seq; /* commit order, from 1 */
    char op[TUI_COLL_OP_LEN];
    uint64_t step; /* TUI_COLL_NOSTEP: the participants have no steps */
    uint32_t ordinal;
    size_t n;
    struct tui_coll_arrival *arr; /* by arrival */
    size_t nmissing;
    uint32_t *missing;
    enum tui_coll_verdict verdict;
    int64_t first_ns, last_ns; /* first and last arrival */
    int64_t skew_ns;           /* last − first arrival */
    int64_t lateness_ns;       /* last − second last arrival */
    double unc_ns;             /* what the clocks cannot tell apart between those two */
    int64_t end_spread_ns;     /* latest − earliest end */
    int64_t transfer_ns;       /* the last arriver's end − its arrival */
    uint32_t last_part, second_part;
};

struct tui_coll_part {
    struct tui_track_key key;
    char label[32];
    uint64_t instances, last, late; /* counted; last in; last and significant */
    /* lateness in an instance: arrival − the median of the others', not below 0 */
    double mean_late_ns, p95_late_ns, ewma_late_ns; /* p95 over the latest 256 */
};

struct tui_coll_stats {
    uint64_t instances, late, within, partial, mismatch, unaligned;
    uint64_t dup_step_events; /* left out: in a step number their process repeated */
    uint64_t outside_steps;   /* left out: before their process's first step held */
    uint64_t ops_over, parts_over;
    size_t participants;
};

typedef struct tui_coll tui_coll_t;
typedef void (*tui_coll_sink_fn)(void *ctx, const tui_coll_t *coll, const struct tui_coll_inst *in);

tui_coll_t *tui_coll_new(size_t keep_recent); /* 0: TUI_COLL_KEEP */
void tui_coll_destroy(tui_coll_t **self);
/* Forget everything (the model was reset). */
void tui_coll_reset(tui_coll_t *self);
/* Every instance committed is handed to fn (before it joins the recent ones). */
void tui_coll_set_sink(tui_coll_t *self, tui_coll_sink_fn fn, void *ctx);
/* Match what the model holds and commit what is settled (final: all);
 * returns the number of instances committed. */
int tui_coll_update(tui_coll_t *self, tui_model_t *model, bool final);
size_t tui_coll_nrecent(const tui_coll_t *self);
const struct tui_coll_inst *tui_coll_recent(const tui_coll_t *self, size_t newest_first);
size_t tui_coll_nparts(const tui_coll_t *self);
void tui_coll_part(const tui_coll_t *self, size_t i, struct tui_coll_part *out);
/* "n3", or "n3.g1s7" / "n3.t42" where a node has several participants. */
void tui_coll_label(const tui_coll_t *self, uint32_t part, char *buf, size_t len);
/* A node's straggler score: the largest smoothed lateness of its participants (NAN: none). */
double tui_coll_node_score(const tui_coll_t *self, uint16_t node);
void tui_coll_stats(const tui_coll_t *self, struct tui_coll_stats *out);
/* The operation a name is an instance of ("allreduce", ...): for GPU work
 * flagged collective any name holding one (else the name itself), for host
 * work a whole name of one (library prefix and variant suffix allowed). */
int tui_coll_op_of(const char *name, bool device, char *op, size_t len);
/* One instance as a JSON line or a CSV row (docs/COLLECTIVES.md). */
void tui_coll_csv_header(FILE *out);
void tui_coll_write_line(FILE *out, bool csv, const tui_coll_t *self,
                         const struct tui_coll_inst *in);
/* A final update written whole to path (through path.tmp and rename): CSV
 * when it ends in ".csv", else JSON lines. */
int tui_coll_write_file(tui_coll_t *self, tui_model_t *model, const char *path, char *err);
/* What was written, in a few lines: counts per verdict, the participant most often late. */
void tui_coll_report(const tui_coll_t *self, FILE *out, const char *path);

/* ------------------------------------------------------------------------
 * Chrome Trace Event output (snapshot and export).  One process per node,
 * one thread per GPU queue and per host thread, times in µs on the global
 * time base relative to `origin_ns` (in the metadata), and the alignment
 * used per node (offset, drift, uncertainty) in the metadata.  Nodes that
 * cannot be aligned are written on their raw clock and say so (process
 * name and metadata).
 */
struct tui_chrome_opts {
    bool flows;          /* flow arrows from API calls to their GPU work */
    const char *source;  /* "snapshot", "export": written in the metadata */
    const char *hub;     /* written in the metadata when not NULL */
    int64_t from_global; /* only events ending after (0: no bound) */
    int64_t to_global;   /* only events starting before (0: no bound) */
    /* Imported traces written in the same file (NULL: none): they may move
     * the origin earlier, add events after the model's and metadata. */
    struct tui_import *imports;
};
struct tui_chrome_stats {
    uint64_t events, flows, raw_events, skipped;
    uint64_t overlaps_split;   /* partly overlapping an open slice: on an overlap thread */
    uint64_t overlaps_dropped; /* the same, beyond the 7th overlap thread: left out */
    int64_t origin_ns;
};
int tui_chrome_write(tui_model_t *model, FILE *out, const struct tui_chrome_opts *opts,
                     struct tui_chrome_stats *st, char *err);
/* Write to path (through path.tmp and rename, so a reader never sees half a
 * file); BASE_ERR with the reason on any I/O error. */
int tui_chrome_write_file(tui_model_t *model, const char *path, const struct tui_chrome_opts *opts,
                          struct tui_chrome_stats *st, char *err);
/* "DIR/dptop-YYYYmmdd-HHMMSS.EXT" for local time `when` (seconds), or with
 * "-2", "-3", ... before the extension where that file exists: two
 * snapshots or recordings in one second must not overwrite each other. */
int tui_snapshot_path(char *buf, size_t len, const char *dir, int64_t when_s, const char *ext,
                      char *err);
/*
 * The recording queue (the console's `r` and dptop --record): a writer
 * thread owns the recording, the receiver hands it copies of the messages,
 * so a slow or stuck file system never stops the console or the receiving.  A message beyond
 * max_bytes queued is dropped and counted.  tui_recq_close waits until everything queued is
 * written.
 */
#define TUI_RECQ_MAX_BYTES (64u << 20)
typedef struct tui_recq tui_recq_t;
struct tui_recq_stats {
    uint64_t queued, dropped; /* messages handed over / refused (queue full) */
    uint64_t written, bytes;  /* messages wholly in the file; the file's size */
    bool failed;              /* a write failed: the recording stopped there */
};
/* Create the file (an unwritable one fails here) and start the writer;
 * max_bytes 0: TUI_RECQ_MAX_BYTES. */
tui_recq_t *tui_recq_open(const char *path, int flush_ms, size_t max_bytes, char *err);
/* BASE_OK (queued), BUS_DROPPED (queue full, counted) or BASE_ERR (the
 * writer failed; err says why). */
int tui_recq_add(tui_recq_t *self, const bus_msg_t *m, char *err);
/* failure: NULL, or BASE_ERRLEN bytes for the writer's failure ("" when none). */
void tui_recq_stats(tui_recq_t *self, struct tui_recq_stats *out, char *failure);
int tui_recq_close(tui_recq_t **self, struct tui_recq_stats *out, char *err);

/* Whether an event name passes the timeline's `/` filter: it holds the
 * filter text, letters of either case alike (ASCII); an empty filter passes
 * everything, and a name that is not known passes nothing but it. */
bool tui_name_matches(const char *filter, const char *name);
/* Write s as a JSON string (quotes included): control characters escaped,
 * invalid UTF-8 replaced by U+FFFD. */
void tui_json_str(FILE *out, const char *s);
/* ns as µs with exactly 3 decimals, as Chrome traces' ts and dur are written. */
void tui_json_us(FILE *out, int64_t ns);

/* ------------------------------------------------------------------------
 * XSpace export for TensorBoard / xprof (`.xplane.pb`, the messages of
 * tsl/profiler/protobuf/xplane.proto, written by hand: no protobuf library).
 * Per node a host plane (API calls, waits, ranges, steps per thread) and a
 * device plane per GPU (kernels, copies, memsets per stream), all on the
 * global time base; steps as xprof's "train" markers (step_num, _r); the "Task
 * Environment" plane (profile start/stop); the scope-range-id tree plane
 * "/host:__ScopeRangeCallStack__"; hostnames.  docs/CONSOLE.md has the
 * layout, every stat and the scope id numbering.
 *
 * The model keeps the scope trees the console needs; the export wants every
 * (child, parent) pair of the recording, so they are collected beside it:
 * tui_scopes_t keeps the most recent `max_pairs` pairs over all processes
 * (older ones are evicted, counted), each (node, pid, child) once.
 */
typedef struct tui_scopes tui_scopes_t;

#define TUI_SCOPES_DEFAULT_MAX 2097152

struct tui_scope_rec {
    uint16_t node;
    uint32_t pid;
    uint64_t child, parent; /* parent 0: a root */
};

tui_scopes_t *tui_scopes_new(size_t max_pairs); /* 0: TUI_SCOPES_DEFAULT_MAX */
void tui_scopes_destroy(tui_scopes_t **self);
/* Take the pairs of a `scope` message; other kinds are ignored (BASE_DEC_OK).
 * A malformed message is refused whole, counted and explained. */
enum base_dec tui_scopes_apply(tui_scopes_t *self, const bus_msg_t *msg, char *err);
/* 1: new, 0: known (a different parent replaces the old one, counted as a
 * conflict), BASE_ERR: child 0 or child == parent. */
int tui_scopes_add(tui_scopes_t *self, uint16_t node, uint32_t pid, uint64_t child, uint64_t parent,
                   char *err);
/* BASE_OK and *parent, or BASE_ERR when the pair is unknown (or evicted). */
int tui_scopes_parent(const tui_scopes_t *self, uint16_t node, uint32_t pid, uint64_t child,
                      uint64_t *parent);
size_t tui_scopes_count(const tui_scopes_t *self);
uint64_t tui_scopes_evicted(const tui_scopes_t *self);
uint64_t tui_scopes_conflicts(const tui_scopes_t *self);
const base_decstats_t *tui_scopes_decstats(const tui_scopes_t *self);
/* Visit the pairs held, oldest first. */
void tui_scopes_foreach(const tui_scopes_t *self,
                        void (*fn)(void *ctx, const struct tui_scope_rec *rec), void *ctx);

/* Scope range ids of different processes may collide, so the export makes
 * them unique: (process ordinal << 40) | id, the ordinal counting the
 * (node, pid) pairs of the export from 1 in ascending order (the task
 * environment plane lists them).  Ids of 2^40 and beyond are left out
 * (counted). */
#define TUI_XPLANE_SCOPE_BITS 40

struct tui_xplane_opts {
    int node;                    /* -1: every node; else only this node, with xprof's
                                  * single-host names ("/host:CPU", "/device:GPU:<dev>") */
    const char *source;          /* written in the task environment plane (NULL: none) */
    int64_t start_ns, stop_ns;   /* profile start/stop when no event is exported */
    const char *const *warnings; /* NULL-terminated, copied to XSpace.warnings (NULL: none) */
};
struct tui_xplane_stats {
    uint64_t planes, lines, events;
    uint64_t raw_events;       /* of unaligned nodes, on their raw clocks */
    uint64_t flagged;          /* with a time_flags stat (raw, extrapolated, ...) */
    uint64_t skipped;          /* could not be placed in time at all */
    uint64_t scope_pairs;      /* in the tree plane */
    uint64_t scope_unmapped;   /* scope ids left out (beyond 2^40) */
    uint64_t overlaps_split;   /* partly overlapping an open event: on an overlap line */
    uint64_t overlaps_dropped; /* the same, beyond the 7th overlap line: left out */
    uint64_t bytes;
    int64_t start_ns, stop_ns; /* profile start/stop written */
};
int tui_xplane_write(tui_model_t *model, const tui_scopes_t *scopes, FILE *out,
                     const struct tui_xplane_opts *opts, struct tui_xplane_stats *st, char *err);
/* Through path.tmp and rename, like tui_chrome_write_file. */
int tui_xplane_write_file(tui_model_t *model, const tui_scopes_t *scopes, const char *path,
                          const struct tui_xplane_opts *opts, struct tui_xplane_stats *st,
                          char *err);
/* One XSpace per node (TensorBoard's one file per host) in the existing
 * directory dir: "<host>-n<id>.xplane.pb".  st sums every file. */
int tui_xplane_write_dir(tui_model_t *model, const tui_scopes_t *scopes, const char *dir,
                         const struct tui_xplane_opts *opts, struct tui_xplane_stats *st,
                         char *err);

/* ------------------------------------------------------------------------
 * Perfetto's native format (`.pftrace`, `.perfetto-trace`; tui/perfetto.c,
 * docs/PERFETTO.md): TracePackets of TrackEvents on the global time base,
 * interned names and categories, a process per (node, process) with its
 * host threads and GPU streams as tracks, flows from API calls to their GPU
 * work, counters of each node's offset and ± and of the collectives'
 * arrival skew, each node's own clock in ClockSnapshots.  Written in time
 * order through a heap of tracks; memory beyond the model's is per track.
 */
struct tui_pftrace_opts {
    const char *source; /* reserved */
};
struct tui_pftrace_stats {
    uint64_t packets, tracks, slices, instants, flows, counters, clock_snapshots;
    uint64_t raw_events;       /* of unaligned nodes, on their raw clocks */
    uint64_t skipped;          /* could not be placed in time */
    uint64_t overlaps_split;   /* partly overlapping an open slice: put on an overlap track */
    uint64_t overlaps_dropped; /* the same, beyond the last overlap track */
    uint64_t bytes;
};
int tui_pftrace_write(tui_model_t *model, FILE *out, const struct tui_pftrace_opts *opts,
                      struct tui_pftrace_stats *st, char *err);
/* Through path.tmp and rename, like tui_chrome_write_file. */
int tui_pftrace_write_file(tui_model_t *model, const char *path,
                           const struct tui_pftrace_opts *opts, struct tui_pftrace_stats *st,
                           char *err);

/* ------------------------------------------------------------------------
 * Window statistics export (seed "window manager"): the win, edge_fit,
 * node_fit and solve messages of a recording as JSON Lines, each its header
 * object (edge_fit and node_fit are the objects of SPEC.md §4.5) plus
 * "arrival_ns" (when it was recorded) and "sender" (the topic's node).
 * Written to path.tmp and renamed by tui_winlog_commit().  A message seen
 * twice byte for byte (the late-joiner state repeats what was live) is
 * written once.
 */
typedef struct tui_winlog tui_winlog_t;

struct tui_winlog_stats {
    uint64_t win, edge_fit, node_fit, solve;
    uint64_t duplicates; /* skipped */
    uint64_t undeduped;  /* written without the duplicate check (its set was full) */
};

bool tui_winlog_wants(enum bus_kind kind);
tui_winlog_t *tui_winlog_open(const char *path, char *err);
/* 1: written, 0: not a window message or a duplicate, BASE_ERR: write error. */
int tui_winlog_add(tui_winlog_t *self, const bus_msg_t *msg, int64_t arrival_ns, char *err);
void tui_winlog_stats(const tui_winlog_t *self, struct tui_winlog_stats *out);
/* Flush, close and rename into place; BASE_ERR (nothing left behind) on failure. */
int tui_winlog_commit(tui_winlog_t **self, char *err);
/* Close and remove the temporary file. */
void tui_winlog_abort(tui_winlog_t **self);

/* ------------------------------------------------------------------------
 * The console on a terminal.  tui_app_new() starts curses with newterm on
 * the given streams (NULL: the controlling terminal), so that a benchmark or
 * a test can render into a pseudo-terminal or /dev/null.
 */
typedef struct tui_app tui_app_t;

struct tui_app_opts {
    const char *hub;     /* shown in the header and written in snapshots */
    const char *outdir;  /* snapshots and recordings (NULL: ".") */
    int fps;             /* frames per second (0: 10) */
    int record_flush_ms; /* recordings started with `r` (0: 250) */
    bool snap_perfetto;  /* `s` writes Perfetto's format (.pftrace), not a Chrome trace */
    bool color;          /* false, NO_COLOR or a terminal without colours: monochrome */
    FILE *in, *out;      /* NULL: /dev/tty */
    const char *term;    /* NULL: $TERM */
    int rows, cols;      /* a fixed size (0: the terminal's) */
};

tui_app_t *tui_app_new(tui_model_t *model, const struct tui_app_opts *opts, char *err);
void tui_app_destroy(tui_app_t **self);
/* Draw one frame at monotonic time now_ns (panels that changed, then doupdate). */
void tui_app_frame(tui_app_t *self, int64_t now_ns);
/* Redraw every panel at the next frame (^L does the same). */
void tui_app_redraw(tui_app_t *self);
/* Act on one key (a curses key code). */
void tui_app_key(tui_app_t *self, int key);
/* The terminal is now rows x cols (0, 0: ask the terminal). */
void tui_app_resize(tui_app_t *self, int rows, int cols);

/* A model sized by the configuration (event_budget, max_payload_bytes). */
tui_model_t *tui_model_from_cfg(const base_config_t *cfg);

/* ------------------------------------------------------------------------
 * Programs (tui/main.c dispatches; each returns the process exit code).
 */
/* Headless recording (docs/RECORDING.md). */
int tui_record_run(const base_config_t *cfg, const char *path, volatile sig_atomic_t *stop);
/* dptop --check N: exit 0 once N nodes are up and aligned within
 * check_unc_ns (the reference counts), 1 at check_timeout_s, saying which
 * are not and why (docs/DEPLOY.md). */
int tui_check_run(const base_config_t *cfg, const char *arg, volatile sig_atomic_t *stop);
/* The console on a live hub. */
int tui_live_run(const base_config_t *cfg, volatile sig_atomic_t *stop);
struct tui_export_req;
/* The console on a recording. */
int tui_replay_run(const base_config_t *cfg, const char *path, const struct tui_export_req *req,
                   volatile sig_atomic_t *stop);
/*
 * A recording to files, without a terminal: one merged, aligned trace (a
 * Chrome trace or an XSpace, by `format` or by the output's name) and/or
 * the window statistics as JSON Lines.
 */
enum tui_export_format {
    TUI_EXPORT_AUTO,
    TUI_EXPORT_CHROME,
    TUI_EXPORT_XPLANE,
    TUI_EXPORT_PERFETTO
};
/* "auto", "chrome", "xplane", "perfetto"; BASE_ERR for anything else. */
int tui_export_format_parse(const char *s, enum tui_export_format *out);
/* By the name: ".pb" (".xplane.pb") is an XSpace, ".pftrace" or
 * ".perfetto-trace" Perfetto's format, anything else Chrome JSON. */
enum tui_export_format tui_export_format_of(const char *path, enum tui_export_format asked);
struct tui_export_req {
    const char *out; /* NULL or "": no trace; an XSpace to a directory: one file per node */
    enum tui_export_format format;
    const char *windows;        /* NULL or "": no window statistics */
    const char *collectives;    /* NULL or "": no collectives (CSV by ".csv", else JSON lines) */
    const char *const *imports; /* --import arguments, [NODE=]FILE[@START_NS] or a directory */
    size_t nimports;
    bool strict;     /* drop imported events outside the aligned windows instead of flagging them */
    const char *map; /* NULL or "": no map filter; NODE[:CLOCK] or "lines": stdin to stdout */
};

/*
 * Other profilers' traces aligned on the recording's clock (tui/import.c,
 * docs/IMPORT.md): files added from --import arguments, the recording's
 * proc messages noted as it is folded, then prepare (pass 1: format,
 * metadata, node, clock check) and the events written into the Chrome
 * export (pass 2).  Every failure is one line naming the file.
 */
typedef struct tui_import tui_import_t;
tui_import_t *tui_import_new(bool strict);
void tui_import_destroy(tui_import_t **self);
int tui_import_add(tui_import_t *self, const char *arg, char *err);
size_t tui_import_count(const tui_import_t *self);
void tui_import_note(tui_import_t *self, const bus_msg_t *msg);
int tui_import_prepare(tui_import_t *self, tui_model_t *model, int64_t rec_from, int64_t rec_to,
                       char *err);
/* The earliest imported event on the global base (INT64_MAX: none). */
int64_t tui_import_first(const tui_import_t *self);
int tui_import_write_events(tui_import_t *self, tui_model_t *model, FILE *out, int64_t origin,
                            bool *first, char *err);
/* The imported events as their nodes' own (trace clock, interned names,
 * lanes of pid 0x80000000 | chrome lane), for the console and the XSpace
 * export: load after prepare (at most budget events, the rest counted),
 * apply into a model (again after each reset of it). */
int tui_import_load(tui_import_t *self, tui_model_t *folded, size_t budget, char *err);
void tui_import_apply(const tui_import_t *self, tui_model_t *model);
uint64_t tui_import_loaded(const tui_import_t *self, uint64_t *over_budget);
/* The process an imported lane's pid belongs to (its file's: the host lane
 * and the GPU lanes of one trace share its steps); other pids as they are. */
uint32_t tui_import_process_of(uint32_t pid);
/* "imports":[...] for the export's metadata. */
void tui_import_write_meta(const tui_import_t *self, FILE *out);
/* File i in one line (what metadata.imports says), to free: XSpace's warnings. */
char *tui_import_describe(const tui_import_t *self, size_t i);
/* One line per file; 1 when some events were outside the aligned windows. */
int tui_import_report(const tui_import_t *self, FILE *out);
int tui_export_run(const base_config_t *cfg, const char *path, const struct tui_export_req *req,
                   volatile sig_atomic_t *stop);
/* --replay FILE --import ... without --export: the imports loaded against
 * the recording, for the console (NULL and a message on failure). */
tui_import_t *tui_import_for_console(const base_config_t *cfg, const char *path,
                                     const struct tui_export_req *req, char *err);
/* A local cluster (master and agents with simulated clocks and workload)
 * and the console on it; every child stops with dptop. */
int tui_demo_run(const base_config_t *cfg, int nodes, const char *argv0,
                 volatile sig_atomic_t *stop);

#endif /* DP_TUI_H */
