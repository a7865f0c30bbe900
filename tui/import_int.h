/*
 * Imported traces: what tui/import.c (files, nodes, clocks, the merged
 * output) shares with the readers of each format (tui/import_*.c).  Not a
 * public interface: dptop uses tui/tui.h.
 */
#ifndef DP_TUI_IMPORT_INT_H
#define DP_TUI_IMPORT_INT_H

#include "tui/tui.h"

/* Largest single JSON value (one event, or one metadata member) a reader takes. */
#define IMP_MAX_VALUE (64u << 20)
/* Chrome pids of imported processes: (file index + 1) * IMP_PID_STRIDE + ordinal. */
#define IMP_PID_STRIDE 100000u

struct imp_pid {
    char key[40]; /* the file's pid, as written (numbers and strings alike) */
    uint32_t chrome;
    bool named;  /* a process_name was written for it */
    bool device; /* a GPU's lane (Kineto: pid = device index) */
};

/* One input file: what the command line said, then what pass 1 found. */
struct imp_file {
    char *path;
    int node;         /* -1 until known */
    bool node_given;  /* NODE=FILE */
    int64_t start_ns; /* FILE@START: the absolute time of the file's zero */
    bool start_given;
    const struct imp_format *fmt;
    unsigned index;

    /* pass 1 (the reader's scan) */
    uint32_t domain;             /* CLOCK_DOMAIN_* the file's times are on */
    const char *domain_name;     /* "realtime", ... */
    char variant[96];            /* e.g. "Kineto schema 1, ts relative to baseTimeNanoseconds" */
    int64_t base_ns;             /* added to every time read (0: absolute times) */
    int64_t raw_min, raw_max;    /* the file's own clock, ns, with base_ns */
    uint64_t events;             /* events with a time */
    uint32_t main_pid;           /* the host process the file describes (0: unknown) */
    int rank, world;             /* -1: not in the file */
    char host[64];               /* "" when the file does not say */
    char *dist_info, *dev_props; /* JSON text kept for the metadata, or NULL */

    /* pass 2 */
    uint64_t written, outside, dropped, raw;
    int64_t in_from, in_to; /* global span of the events inside aligned windows */
    double unc_max;
    struct imp_pid *pids;
    size_t npids, cappids;
    void *priv; /* the reader's own, from scan to emit (released by release()) */
};

/* Where the events go (pass 2): Chrome JSON into out, or, with sink set, as
 * the node's own events (trace clock, interned names) to sink(). */
struct imp_ctx {
    tui_model_t *model;
    FILE *out;
    int64_t origin;
    bool strict;
    bool *first; /* no event written yet into traceEvents */
    void (*sink)(void *arg, const gpu_event_t *ev, const char *name);
    void *sink_arg;
};

/* Imported lanes as tracks of the model: pids apart from any real one (a
 * Linux pid is below 2^22). */
#define IMP_TRACK_PID 0x80000000u

/*
 * A format: a const vtable registered in tui/import.c.  detect() looks at
 * the first bytes (decompressed); scan() reads the whole file once and fills
 * pass 1's fields, failing on anything malformed; emit() reads it again and
 * writes every event through imp_map / imp_pid.
 */
struct imp_format {
    const char *name;
    const char *what; /* for the list of understood formats */
    bool (*detect)(const char *head, size_t n);
    int (*scan)(struct imp_file *f, char *err);
    int (*emit)(struct imp_file *f, struct imp_ctx *ctx, char *err);
    void (*release)(struct imp_file *f); /* may be NULL */
};

extern const struct imp_format imp_kineto, imp_rocprof_csv, imp_rocprof_json, imp_xplane;

/*
 * A file time (the file's clock, ns, base_ns added) on the global base,
 * with the node map's uncertainty there and TUI_T_* flags; false when the
 * node has no map at all for the file's clock.
 */
bool imp_map(struct imp_ctx *ctx, struct imp_file *f, int64_t local, int64_t *global, double *unc,
             unsigned *flags);
/* Count one event about to be written (its start, its flags over start and
 * end); false when it is dropped instead (--strict, outside the windows). */
bool imp_keep(struct imp_ctx *ctx, struct imp_file *f, int64_t global, double unc, unsigned flags);
/* The lane of one of the file's pids: created (numbered) on first sight,
 * or only looked up (NULL when the file has no events under it). */
struct imp_pid *imp_pid(struct imp_file *f, const char *key, size_t n);
struct imp_pid *imp_pid_find(struct imp_file *f, const char *key, size_t n);
/* The name a process of the file gets in the merged trace. */
void imp_process_label(const struct imp_file *f, const struct imp_pid *p, const char *own,
                       char *buf, size_t len);
/*
 * For readers that build their events (rather than copy them): one complete
 * event on `lane`, times of the file's clock; args is JSON members without
 * braces ("" for none).  false when it was dropped.  And one end of a flow
 * arrow (ids are strings, unique over the merged trace).
 */
bool imp_emit_x(struct imp_ctx *ctx, struct imp_file *f, const struct imp_pid *lane,
                const char *tid, const char *cat, const char *name, int64_t t0, int64_t t1,
                const char *args);
/* Sink mode: one event as its node's own (times of the file's clock); counted
 * as imp_keep counts it (global, unc, flags: its mapped start) once its times
 * reach the node's trace clock, else dropped. */
struct imp_sink_ev {
    const struct imp_pid *lane;
    uint32_t tid; /* a thread, or a stream on a device lane */
    uint8_t kind; /* GPU_EV_* */
    const char *name;
    int64_t t0, t1;
    uint64_t step; /* GPU_EV_STEP */
};
bool imp_sink_event(struct imp_ctx *ctx, struct imp_file *f, const struct imp_sink_ev *e,
                    int64_t global, double unc, unsigned flags);
void imp_emit_flow(struct imp_ctx *ctx, struct imp_file *f, const struct imp_pid *lane,
                   const char *tid, bool start, const char *id, int64_t t);
/* A thread_name metadata event for a lane's tid. */
void imp_emit_thread_name(struct imp_ctx *ctx, const struct imp_pid *lane, const char *tid,
                          const char *name);
/* Every element of the JSON array the stream is at (its '[' next), to fn. */
int imp_each(base_jstream_t *js, int (*fn)(void *ctx, const struct base_jspan *v, char *err),
             void *ctx, char *err);
/* The dptop_* keys of an event's args (without braces), from imp_map's result. */
void imp_put_args(FILE *out, double unc, unsigned flags);

#endif /* DP_TUI_IMPORT_INT_H */
