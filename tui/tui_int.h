/*
 * tui internals shared between the console's files (app.c, panels.c,
 * timeline.c, replay.c).  Not a public interface: other modules and
 * programs use tui/tui.h.
 */
#ifndef DP_TUI_INT_H
#define DP_TUI_INT_H

#include <curses.h>

#include "tui/tui.h"

struct tui_app;

/* A rectangle of the screen given to one panel. */
struct tui_pane {
    const struct tui_panel *panel;
    WINDOW *win; /* NULL: the panel has no room at this terminal size */
    int y, x, h, w;
    int scroll; /* first row shown (tables, lanes) */
    int sel;    /* selected row (tables) */
    bool dirty; /* redraw at the next frame */
    uint64_t drawn_gen;
};

/*
 * A screen panel: a const vtable, registered in tui_panels[] (panels.c).
 * Hooks may be NULL.  key() and mouse() return true when they used the
 * event; coordinates given to mouse() are relative to the pane.
 */
struct tui_panel {
    const char *name;
    bool focusable;
    void (*draw)(struct tui_app *app, struct tui_pane *pane);
    bool (*key)(struct tui_app *app, struct tui_pane *pane, int key);
    bool (*mouse)(struct tui_app *app, struct tui_pane *pane, int y, int x, mmask_t bstate);
    void (*resize)(struct tui_app *app, struct tui_pane *pane);
};

enum tui_pane_id {
    TUI_P_HEADER,
    TUI_P_NODES,
    TUI_P_WINDOWS,
    TUI_P_TIMELINE,
    TUI_P_STATUS,
    TUI_P_HELP, /* overlay, shown on `?` */
    TUI_P_NPANES
};

/* The one table of panels, indexed by enum tui_pane_id. */
extern const struct tui_panel *const tui_panels[TUI_P_NPANES];
/* The collectives view: `c` shows it in the windows table's place. */
extern const struct tui_panel tui_panel_coll;

/* The instance the collectives view jumped to: its arrivals, marked on the
 * timeline's node lanes. */
#define TUI_HL_MAX 64
struct tui_coll_hl {
    uint64_t seq; /* 0: none */
    size_t n;
    uint16_t node[TUI_HL_MAX];
    int64_t start[TUI_HL_MAX];
    bool last[TUI_HL_MAX];
};

/* Colour roles; attributes come from the palette (colour or monochrome). */
enum tui_role {
    R_NORMAL,
    R_HEADER,
    R_TITLE,
    R_TITLE_FOCUS,
    R_COLHDR,
    R_SELECTED,
    R_DIM,
    R_UP,
    R_DOWN,
    R_UNALIGNED,
    R_WARN,
    R_ERROR,
    R_REC,
    R_AXIS,
    R_EV_KERNEL_A,
    R_EV_KERNEL_B,
    R_EV_COPY,
    R_EV_COLLECTIVE,
    R_EV_API,
    R_EV_SYNC,
    R_EV_RANGE,
    R_EV_STEP,
    R_EV_RAW, /* events of an unaligned node drawn on its raw clock */
    R_NROLES
};

enum tui_status_level { TUI_MSG_INFO, TUI_MSG_WARN, TUI_MSG_ERROR };

/* A master unheard this long (or 4 of its periods, if longer) is shown as silent. */
#define TUI_SILENT_NS 5000000000LL

/* A lane of the timeline: one screen row. */
struct tui_lane {
    uint16_t node;
    bool node_row; /* the node's summary row (device tracks merged) */
    int track;     /* expanded: the track drawn (-1: node row) */
    int level;     /* expanded host tracks: packing row of nested ranges */
    char label[48];
};

struct tui_replay; /* replay.c */

struct tui_app {
    tui_model_t *model;
    SCREEN *screen;
    FILE *term_in, *term_out;
    bool own_term_files;
    int rows, cols;
    chtype role[R_NROLES];
    bool color;
    int fps;
    int record_flush_ms;
    bool snap_perfetto; /* `s` writes .pftrace */
    char outdir[1024];
    char hub[256];
    struct bus_limits limits;

    /* sources */
    bus_sub_t *sub; /* live */
    struct bus_endpoints ep;
    int state_timeout_ms;
    /* The master's liveness, from its node table's arrivals (monotonic ns;
     * 0: never heard), and the state fetch wanted again (app.c). */
    int64_t live_since_ns, master_last_ns, master_period_ns;
    uint64_t master_resets;
    bool want_state;
    int64_t state_next_ns, state_wait_ns;
    tui_recq_t *rec; /* `r`: recording from the console, by a writer thread */
    char rec_path[1100];
    uint64_t rec_msgs, rec_dropped; /* handed to the writer / refused by its full queue */
    struct tui_replay *replay;      /* --replay */
    tui_import_t *imports;          /* --replay with --import: held from the start */

    /* collectives: matched once a second; `c` shows them */
    tui_coll_t *coll;
    bool show_coll;
    uint64_t coll_sel; /* the selected instance's seq (0: the newest), kept as new ones come */
    struct tui_coll_hl hl;

    /* view */
    enum tui_clock clock;
    bool paused; /* the timeline stopped following (space, panning) */
    int64_t span_ns;
    int64_t right_ns; /* right edge of the timeline when not following */
    int64_t edge_ns;  /* followed right edge, extrapolated between batches */
    int64_t edge_latest, edge_mono;
    int64_t origin_ns; /* axis labels count from here (first time seen, whole second) */
    bool expand;       /* lanes per GPU queue and host thread */
    bool expand_auto;  /* until `e`: expanded whenever every lane fits */
    char filter[64];
    bool filter_edit;
    char filter_buf[64];
    enum tui_sort sort;
    bool sort_desc;
    int sel_node; /* node id, -1: none */
    int focus;    /* enum tui_pane_id of the focused panel */
    bool help;
    bool help_log; /* the overlay shows the log (L), not the keys (?) */
    int help_top;  /* first help line shown when it does not fit */
    bool quit;
    int64_t eval_global; /* the global instant the node table's offsets are evaluated at */

    /* status line */
    /* `s`: a snapshot written by a child process (fork: a copy of the
     * store that costs nothing until the console changes it), so that the
     * console runs on while seconds of JSON are written. */
    pid_t snap_pid; /* 0: none running */
    int snap_fd;    /* the child's result */
    char snap_path[1200];

    char status[320];
    enum tui_status_level status_level;
    int64_t status_until; /* monotonic ns */

    struct tui_pane pane[TUI_P_NPANES];
    bool tiny;                     /* terminal below the smallest usable size */
    bool tables_shared;            /* nodes and windows take turns in one slot */
    enum tui_pane_id slot_table;   /* the one shown there: the last focused */
    size_t laid_nodes, laid_edges; /* table sizes the layout was made for */
    size_t lanes_all, laid_lanes;  /* timeline lanes, expanded: last drawn, laid out for */
    bool laid_expand;

    /* timeline scratch, rebuilt per frame */
    struct tui_lane *lanes;
    size_t nlanes, caplanes;
    size_t *order; /* node table order */
    size_t caporder;

    /* called once per loop iteration (the demo watches its children) */
    void (*hook)(struct tui_app *app, void *ctx);
    void *hook_ctx;

    /* frame statistics */
    uint64_t frames;
    int64_t last_frame_ns, last_tick_ns;
};

/* app.c */
/* How long the master may go unheard before the header says so. */
int64_t tui_app_silence_ns(const struct tui_app *app);
void tui_app_status(struct tui_app *app, enum tui_status_level level, const char *fmt, ...)
    BASE_PRINTF(3, 4);
/* The axis of the timeline for this frame (label column excluded). */
void tui_app_axis(struct tui_app *app, int cols, tui_axis_t *ax);
void tui_app_zoom(struct tui_app *app, int steps, int64_t around);
void tui_app_pan(struct tui_app *app, int64_t delta_ns);
void tui_app_snapshot(struct tui_app *app);
void tui_app_toggle_record(struct tui_app *app);
void tui_app_mark_all_dirty(struct tui_app *app);

/* panels.c: drawing helpers */
/* Write s at (y, x) in at most cols display columns; returns the columns used. */
int tui_put(WINDOW *w, int y, int x, const char *s, int cols, chtype attr);
/* A panel frame: a title line (focus highlighted). */
void tui_draw_title(struct tui_app *app, struct tui_pane *pane, const char *title);
/* Display width of a UTF-8 string. */
int tui_strwidth(const char *s);
/* Lines of the help overlay. */
int tui_help_lines(void);
/* A key or wheel turn that scrolls a help overlay too short for its lines
 * (arrows, j k, PgUp PgDn, space, Home End, g G); false: it closes it. */
bool tui_help_scroll(struct tui_app *app, int ch);

/* timeline.c */
void tui_timeline_draw(struct tui_app *app, struct tui_pane *pane);
bool tui_timeline_key(struct tui_app *app, struct tui_pane *pane, int key);
bool tui_timeline_mouse(struct tui_app *app, struct tui_pane *pane, int y, int x, mmask_t bstate);

/* record.c: the subscriber settings of the configuration (hub, limits, CURVE keys). */
struct tui_sub_setup {
    struct bus_endpoints ep;
    const char *sub_ep;
    struct bus_limits lim;
    struct bus_curve curve;
    bool use_curve;
    char key_buf[3][41]; /* the keys read from curve_dir */
};
/* hub_override: use this master endpoint instead of the configured one. */
int tui_sub_setup(const base_config_t *cfg, const char *hub_override, struct tui_sub_setup *out,
                  char *err);
/* The subscriber of a setup (the configured receive high-water mark). */
bus_sub_t *tui_sub_open(const base_config_t *cfg, const struct tui_sub_setup *su, char *err);

/* app.c: whether a terminal can be opened (the console's precondition). */
bool tui_have_terminal(char *err);

/* app.c: the live console on the configured hub (or hub_override), with an
 * optional hook run once per loop iteration. */
int tui_console_live(const base_config_t *cfg, const char *hub_override,
                     volatile sig_atomic_t *stop, void (*hook)(struct tui_app *, void *),
                     void *hook_ctx);

/* replay.c */
struct tui_replay *tui_replay_open(const char *path, double speed, const struct bus_limits *lim,
                                   char *err);
void tui_replay_close(struct tui_replay **self);
/* Apply what is due at this moment of the replay clock (bounded work). */
void tui_replay_pump(struct tui_app *app, int64_t now_mono, int64_t budget_ns);
void tui_replay_seek(struct tui_app *app, int64_t delta_ns);
void tui_replay_pause(struct tui_app *app, bool paused);
/* "replay 12.3s / 60.0s ×1" for the header. */
void tui_replay_describe(const struct tui_app *app, char *buf, size_t len);

#endif /* DP_TUI_INT_H */
