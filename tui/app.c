/*
 * The console: the terminal (ncursesw, through newterm so that a test or a
 * benchmark can give it any stream), the palette, the layout of the panels,
 * the keys that act on the whole view, the frame loop and the live source.
 *
 * Frames: each panel draws into its own window only when something it
 * shows changed (model generation, view, once a second for rates), then
 * wnoutrefresh; one doupdate sends the difference to the terminal, so
 * nothing flickers and an idle console writes next to nothing.
 */
#include "tui/tui_int.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MIN_SPAN_NS     1000LL          /* 1 µs across the timeline */
#define MAX_SPAN_NS     3600000000000LL /* 1 h */
#define DEFAULT_SPAN_NS 200000000LL     /* 2 steps of the simulated workload */
#define STATUS_SHOW_NS  6000000000LL
#define EDGE_CAP_NS     2000000000LL /* extrapolate the live edge at most this far */

/* ---- palette ------------------------------------------------------------ */

static void palette(struct tui_app *app)
{
    chtype *r = app->role;
    for (int i = 0; i < R_NROLES; i++)
        r[i] = A_NORMAL;
    if (app->color) {
        start_color();
        use_default_colors();
        static const short pairs[][2] = {
            /* 1 */ {COLOR_BLACK, COLOR_CYAN},    /* header */
            /* 2 */ {COLOR_CYAN, -1},             /* titles */
            /* 3 */ {COLOR_GREEN, -1},            /* up */
            /* 4 */ {COLOR_RED, -1},              /* down, errors */
            /* 5 */ {COLOR_YELLOW, -1},           /* unaligned, warnings */
            /* 6 */ {COLOR_WHITE, COLOR_BLUE},    /* kernel A */
            /* 7 */ {COLOR_BLACK, COLOR_CYAN},    /* kernel B */
            /* 8 */ {COLOR_BLACK, COLOR_GREEN},   /* copies */
            /* 9 */ {COLOR_WHITE, COLOR_MAGENTA}, /* collectives */
            /* 10 */ {COLOR_BLACK, COLOR_WHITE},  /* API calls */
            /* 11 */ {COLOR_WHITE, COLOR_RED},    /* waits */
            /* 12 */ {COLOR_BLACK, COLOR_YELLOW}, /* ranges */
            /* 13 */ {COLOR_BLUE, -1},            /* dim, axis */
            /* 14 */ {COLOR_BLACK, COLOR_YELLOW}, /* raw-clock events */
            /* 15 */ {COLOR_WHITE, COLOR_RED},    /* recording badge */
        };
        for (size_t i = 0; i < BASE_ARRAY_LEN(pairs); i++)
            init_pair((short)(i + 1), pairs[i][0], pairs[i][1]);
        r[R_HEADER] = COLOR_PAIR(1);
        r[R_TITLE] = COLOR_PAIR(2) | A_BOLD;
        r[R_TITLE_FOCUS] = COLOR_PAIR(1) | A_BOLD;
        r[R_COLHDR] = A_BOLD | A_UNDERLINE;
        r[R_SELECTED] = A_REVERSE;
        r[R_DIM] = COLOR_PAIR(13);
        r[R_UP] = COLOR_PAIR(3);
        r[R_DOWN] = COLOR_PAIR(4) | A_BOLD;
        r[R_UNALIGNED] = COLOR_PAIR(5) | A_BOLD;
        r[R_WARN] = COLOR_PAIR(5) | A_BOLD;
        r[R_ERROR] = COLOR_PAIR(4) | A_BOLD;
        r[R_REC] = COLOR_PAIR(15) | A_BOLD;
        r[R_AXIS] = COLOR_PAIR(2);
        r[R_EV_KERNEL_A] = COLOR_PAIR(6);
        r[R_EV_KERNEL_B] = COLOR_PAIR(7);
        r[R_EV_COPY] = COLOR_PAIR(8);
        r[R_EV_COLLECTIVE] = COLOR_PAIR(9) | A_BOLD;
        r[R_EV_API] = COLOR_PAIR(10);
        r[R_EV_SYNC] = COLOR_PAIR(11);
        r[R_EV_RANGE] = COLOR_PAIR(12);
        r[R_EV_STEP] = COLOR_PAIR(10) | A_BOLD;
        r[R_EV_RAW] = COLOR_PAIR(14) | A_DIM;
    } else {
        /* Monochrome: reverse video for blocks, bold and underline for structure. */
        r[R_HEADER] = A_REVERSE;
        r[R_TITLE] = A_BOLD;
        r[R_TITLE_FOCUS] = A_REVERSE | A_BOLD;
        r[R_COLHDR] = A_UNDERLINE;
        r[R_SELECTED] = A_REVERSE;
        r[R_DIM] = A_DIM;
        r[R_DOWN] = A_BOLD;
        r[R_UNALIGNED] = A_BOLD | A_UNDERLINE;
        r[R_WARN] = A_BOLD;
        r[R_ERROR] = A_BOLD;
        r[R_REC] = A_REVERSE | A_BOLD;
        r[R_EV_KERNEL_A] = A_REVERSE;
        r[R_EV_KERNEL_B] = A_REVERSE | A_BOLD;
        r[R_EV_COPY] = A_REVERSE | A_DIM;
        r[R_EV_COLLECTIVE] = A_REVERSE | A_BOLD | A_UNDERLINE;
        r[R_EV_API] = A_UNDERLINE;
        r[R_EV_SYNC] = A_REVERSE | A_DIM;
        r[R_EV_RANGE] = A_UNDERLINE;
        r[R_EV_STEP] = A_BOLD | A_UNDERLINE;
        r[R_EV_RAW] = A_DIM | A_UNDERLINE;
    }
}

/* ---- status line ---------------------------------------------------------- */

void tui_app_status(struct tui_app *app, enum tui_status_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(app->status, sizeof app->status, fmt, ap);
    va_end(ap);
    for (char *c = app->status; *c; c++)
        if ((unsigned char)*c < 0x20)
            *c = ' ';
    app->status_level = level;
    app->status_until = base_monotonic_ns() + STATUS_SHOW_NS;
    app->pane[TUI_P_STATUS].dirty = true;
    /* The status line is gone in seconds: warnings and errors stay in `L`. */
    if (level != TUI_MSG_INFO)
        tui_model_log_add(app->model, base_realtime_ns(), -1, level == TUI_MSG_ERROR ? 'E' : 'W',
                          "dptop", app->status);
}

void tui_app_redraw(tui_app_t *app)
{
    assert(app);
    tui_app_mark_all_dirty(app);
}

void tui_app_mark_all_dirty(struct tui_app *app)
{
    for (int i = 0; i < TUI_P_NPANES; i++)
        app->pane[i].dirty = true;
}

/* ---- layout --------------------------------------------------------------- */

static void free_windows(struct tui_app *app)
{
    for (int i = 0; i < TUI_P_NPANES; i++) {
        if (app->pane[i].win)
            delwin(app->pane[i].win);
        app->pane[i].win = NULL;
        app->pane[i].h = app->pane[i].w = 0;
    }
}

static void place(struct tui_app *app, enum tui_pane_id id, int y, int x, int h, int w)
{
    struct tui_pane *p = &app->pane[id];
    p->y = y;
    p->x = x;
    p->h = h;
    p->w = w;
    p->dirty = true;
    /* newwin(0, ...) means "to the edge of the screen": never ask for it. */
    if (h > 0 && w > 0 && y >= 0 && x >= 0 && y + h <= app->rows && x + w <= app->cols)
        p->win = newwin(h, w, y, x);
    if (p->win == NULL) {
        p->h = p->w = 0;
        return;
    }
    leaveok(p->win, TRUE);
    if (p->panel->resize)
        p->panel->resize(app, p);
}

/*
 * Rows of `rest` the timeline would leave empty below a table of `table`
 * rows: it needs its title, axis and lanes, as many as it will draw:
 * expanded where they fit beside that table (`e` unpressed) or where
 * asked, one per node otherwise.
 */
static int timeline_spare(const struct tui_app *app, int rest, int table)
{
    int nn = (int)tui_model_nnodes(app->model);
    int lanes = nn < 1 ? 1 : nn, all = (int)app->lanes_all > lanes ? (int)app->lanes_all : lanes;
    bool expanded = app->expand_auto ? all <= rest - table - 2 : app->expand;
    return rest - ((expanded ? all : lanes) + 2);
}

static void layout(struct tui_app *app)
{
    free_windows(app);
    app->laid_nodes = tui_model_nnodes(app->model);
    app->laid_edges = tui_model_nedges(app->model);
    app->laid_lanes = app->lanes_all;
    app->laid_expand = app->expand;
    /* A table focused by a click is the one a shared slot shows. */
    if (app->focus == TUI_P_NODES || app->focus == TUI_P_WINDOWS)
        app->slot_table = app->focus;
    int R = app->rows, C = app->cols;
    app->tiny = R < 8 || C < 30;
    if (app->tiny) {
        place(app, TUI_P_STATUS, 0, 0, R > 0 ? R : 0, C > 0 ? C : 0);
        return;
    }
    int hh = R >= 20 ? 2 : 1;
    place(app, TUI_P_HEADER, 0, 0, hh, C);
    place(app, TUI_P_STATUS, R - 1, 0, 1, C);
    int top = hh, avail = R - hh - 1;
    int nn = (int)tui_model_nnodes(app->model), ne = (int)tui_model_nedges(app->model);
    int want_nodes = (nn < 2 ? 2 : nn) + 2;
    int max_nodes = avail * 38 / 100;
    if (max_nodes < 3)
        max_nodes = 3;
    int nh = want_nodes < max_nodes ? want_nodes : max_nodes;
    if (avail < 12)
        nh = avail >= 6 ? 3 : 0;
    app->tables_shared = false;
    if (C >= 150) {
        /* Side by side: as tall as the node table, or as the edges need
         * where the timeline leaves the rows empty. */
        int nw = C * 62 / 100, th = nh, want = (ne < 2 ? 2 : ne) + 2;
        if (want > nh && nh >= 3) {
            int spare = timeline_spare(app, avail, nh);
            if (spare > nh)
                th = spare < want ? spare : want;
        }
        place(app, TUI_P_NODES, top, 0, th, nw);
        place(app, TUI_P_WINDOWS, top, nw, th, C - nw);
        top += th;
    } else if (R - 1 - top - nh >= 16) {
        place(app, TUI_P_NODES, top, 0, nh, C);
        top += nh;
        int rest = R - 1 - top;
        int want = (ne < 2 ? 2 : ne) + 2, max = rest * 25 / 100;
        int wh = want < max ? want : max;
        /* The rows the timeline would leave empty go to the windows too. */
        int spare = timeline_spare(app, rest, wh >= 3 ? wh : 0);
        if (spare > wh)
            wh = spare < want ? spare : want;
        if (wh >= 3) {
            place(app, TUI_P_WINDOWS, top, 0, wh, C);
            top += wh;
        }
    } else if (nh >= 3) {
        /* No room for both tables (80x24): they take turns in one slot,
         * the one last focused shown (Tab), so the windows are never out
         * of reach. The slot fits the taller of the two, so the timeline
         * below does not move when they swap. */
        int want_win = (ne < 2 ? 2 : ne) + 2;
        int sh = want_win > nh ? want_win : nh;
        if (sh > max_nodes)
            sh = nh > max_nodes ? nh : max_nodes;
        if (sh > avail - 3) /* the timeline keeps its title, axis and a lane */
            sh = avail - 3;
        app->tables_shared = true;
        place(app, app->slot_table, top, 0, sh, C);
        top += sh;
    }
    place(app, TUI_P_TIMELINE, top, 0, R - 1 - top, C);
    /* The help overlay: centred, as large as it needs up to the screen. */
    int need = tui_help_lines() + 2;
    int hw = C < 76 ? C : 76, hhgt = R - 2 < need ? R - 2 : need;
    place(app, TUI_P_HELP, (R - hhgt) / 2, (C - hw) / 2, hhgt, hw);
    if (app->pane[app->focus].win == NULL || !app->pane[app->focus].panel->focusable)
        app->focus = app->pane[TUI_P_TIMELINE].win ? TUI_P_TIMELINE : TUI_P_NODES;
}

void tui_app_resize(tui_app_t *app, int rows, int cols)
{
    assert(app);
    if (rows > 0 && cols > 0)
        resizeterm(rows, cols);
    getmaxyx(stdscr, app->rows, app->cols);
    clearok(curscr, TRUE);
    layout(app);
}

/* ---- the view ------------------------------------------------------------- */

void tui_app_axis(struct tui_app *app, int cols, tui_axis_t *ax)
{
    int64_t right = app->paused ? app->right_ns : app->edge_ns;
    ax->span_ns = app->span_ns;
    ax->cols = cols > 0 ? cols : 1;
    ax->t0 = right - app->span_ns;
}

void tui_app_zoom(struct tui_app *app, int steps, int64_t around)
{
    int64_t old = app->span_ns, span = old;
    for (int i = 0; i < steps; i++)
        span = span / 2 < MIN_SPAN_NS ? MIN_SPAN_NS : span / 2;
    for (int i = 0; i > steps; i--)
        span = span > MAX_SPAN_NS / 2 ? MAX_SPAN_NS : span * 2;
    if (span == old)
        return;
    if (app->paused && around != 0) {
        /* Keep `around` at the same place on screen. */
        int64_t right = app->right_ns;
        double frac = (double)(right - around) / (double)old;
        app->right_ns = around + (int64_t)(frac * (double)span);
    }
    app->span_ns = span;
    app->pane[TUI_P_TIMELINE].dirty = true;
    char d[32];
    tui_fmt_dur(d, sizeof d, (double)span);
    tui_app_status(app, TUI_MSG_INFO, "timeline span %s", d);
}

void tui_app_pan(struct tui_app *app, int64_t delta)
{
    if (!app->paused) {
        app->paused = true;
        app->right_ns = app->edge_ns;
    }
    app->right_ns += delta;
    if (app->right_ns >= app->edge_ns && delta > 0) {
        /* Panned back to the live edge: follow again (less's F habit). */
        app->paused = false;
        tui_app_status(app, TUI_MSG_INFO, "following the live edge");
    }
    app->pane[TUI_P_TIMELINE].dirty = true;
    app->pane[TUI_P_HEADER].dirty = true;
}

static void update_edge(struct tui_app *app, int64_t now_mono)
{
    struct tui_summary s;
    tui_model_summary(app->model, &s);
    int64_t latest = app->clock == TUI_CLOCK_ALIGNED ? s.latest_global : s.latest_raw;
    if (latest == 0 && app->clock == TUI_CLOCK_ALIGNED)
        latest = s.latest_raw; /* nothing aligned yet: do not stall at 0 */
    /* t0 from the first data, not from the wall clock (a replay's data is old). */
    if (app->origin_ns == 0 && latest != 0)
        app->origin_ns = latest - latest % 1000000000LL;
    if (latest == 0)
        latest = base_realtime_ns();
    if (latest != app->edge_latest) {
        app->edge_latest = latest;
        app->edge_mono = now_mono;
    }
    int64_t el = now_mono - app->edge_mono;
    if (el > EDGE_CAP_NS)
        el = EDGE_CAP_NS;
    if (app->replay)
        el = 0; /* the replay clock moves the data itself */
    int64_t target = latest + el;
    /* Smooth: never step back by a little (a late batch); resync on a jump. */
    if (target > app->edge_ns || app->edge_ns - target > EDGE_CAP_NS)
        app->edge_ns = target;
    if (!app->paused)
        app->pane[TUI_P_TIMELINE].dirty = true;
    app->eval_global = app->edge_ns;
}

/* ---- actions --------------------------------------------------------------- */

/* What a snapshot child reports through its pipe (under PIPE_BUF: one write). */
struct snap_result {
    int rc;
    unsigned long long events, raw_events;
    char err[BASE_ERRLEN];
};

static void snapshot_report(struct tui_app *app, const struct snap_result *r)
{
    if (r->rc != BASE_OK)
        tui_app_status(app, TUI_MSG_ERROR, "snapshot failed: %s", r->err);
    else
        tui_app_status(app, r->raw_events ? TUI_MSG_WARN : TUI_MSG_INFO,
                       "snapshot: %s (%llu events%s)", app->snap_path, r->events,
                       r->raw_events ? ", some on raw clocks" : "");
}

static void snapshot_write(struct tui_app *app, struct snap_result *r)
{
    if (app->snap_perfetto) {
        struct tui_pftrace_stats ps = {0};
        r->rc = tui_pftrace_write_file(app->model, app->snap_path, NULL, &ps, r->err);
        r->events = ps.slices + ps.instants;
        r->raw_events = ps.raw_events;
        return;
    }
    struct tui_chrome_opts o = {.flows = true, .source = "snapshot", .hub = app->hub};
    struct tui_chrome_stats st = {0};
    r->rc = tui_chrome_write_file(app->model, app->snap_path, &o, &st, r->err);
    r->events = st.events;
    r->raw_events = st.raw_events;
}

/* The running snapshot's end, when it came (wait: until it comes). */
static void snapshot_poll(struct tui_app *app, bool wait)
{
    if (app->snap_pid <= 0)
        return;
    int status;
    pid_t got;
    do
        got = waitpid(app->snap_pid, &status, wait ? 0 : WNOHANG);
    while (wait && got < 0 && errno == EINTR);
    if (got == 0 || (got < 0 && errno == EINTR))
        return;
    struct snap_result r = {.rc = BASE_ERR};
    ssize_t n = read(app->snap_fd, &r, sizeof r);
    if (n != (ssize_t)sizeof r) {
        r.rc = BASE_ERR;
        if (got > 0 && WIFSIGNALED(status))
            snprintf(r.err, sizeof r.err, "its writer died of signal %d", WTERMSIG(status));
        else
            snprintf(r.err, sizeof r.err, "its writer ended without a result");
    }
    close(app->snap_fd);
    app->snap_pid = 0;
    snapshot_report(app, &r);
}

void tui_app_snapshot(struct tui_app *app)
{
    char err[BASE_ERRLEN];
    if (app->snap_pid > 0) {
        tui_app_status(app, TUI_MSG_WARN, "a snapshot is still being written: %s", app->snap_path);
        return;
    }
    if (tui_snapshot_path(app->snap_path, sizeof app->snap_path, app->outdir,
                          base_realtime_ns() / 1000000000LL,
                          app->snap_perfetto ? "pftrace" : "json", err) != BASE_OK) {
        tui_app_status(app, TUI_MSG_ERROR, "snapshot failed: %s", err);
        return;
    }
    size_t count = tui_store_count(tui_model_store(app->model));
    int fds[2];
    pid_t pid = -1;
    if (pipe2(fds, O_CLOEXEC) == 0) {
        pid = fork();
        if (pid == 0) {
            /* The child: only the file; no curses, no sockets, no exit handlers. */
            close(fds[0]);
            struct snap_result r = {0};
            snapshot_write(app, &r);
            _exit(write(fds[1], &r, sizeof r) == (ssize_t)sizeof r ? 0 : 1);
        }
        close(fds[1]);
        if (pid < 0)
            close(fds[0]);
    }
    if (pid > 0) {
        app->snap_pid = pid;
        app->snap_fd = fds[0];
        tui_app_status(app, TUI_MSG_INFO, "writing %s (%zu events) ...", app->snap_path, count);
        return;
    }
    /* No process to spare: write it here, the console waits. */
    tui_app_status(app, TUI_MSG_INFO, "writing %s (%zu events) ...", app->snap_path, count);
    tui_app_frame(app, base_monotonic_ns());
    struct snap_result r = {0};
    snapshot_write(app, &r);
    snapshot_report(app, &r);
}

static void stop_record(struct tui_app *app, const char *why)
{
    char err[BASE_ERRLEN];
    struct tui_recq_stats rs = {0};
    int rc = tui_recq_close(&app->rec, &rs, err);
    if (why)
        tui_app_status(app, TUI_MSG_ERROR, "recording stopped: %s", why);
    else if (rc != BASE_OK)
        tui_app_status(app, TUI_MSG_ERROR, "recording %s: %s", app->rec_path, err);
    else
        tui_app_status(app, rs.dropped ? TUI_MSG_WARN : TUI_MSG_INFO,
                       "recorded %llu messages to %s%s", (unsigned long long)rs.written,
                       app->rec_path, rs.dropped ? " (some dropped: the disk fell behind)" : "");
    app->pane[TUI_P_HEADER].dirty = true;
}

void tui_app_toggle_record(struct tui_app *app)
{
    char err[BASE_ERRLEN];
    if (app->sub == NULL) {
        tui_app_status(app, TUI_MSG_WARN, "recording needs a live hub (this is a replay)");
        return;
    }
    if (app->rec) {
        stop_record(app, NULL);
        return;
    }
    if (tui_snapshot_path(app->rec_path, sizeof app->rec_path, app->outdir,
                          base_realtime_ns() / 1000000000LL, "dprec", err) != BASE_OK ||
        (app->rec = tui_recq_open(app->rec_path, app->record_flush_ms, 0, err)) == NULL) {
        tui_app_status(app, TUI_MSG_ERROR, "cannot record: %s", err);
        return;
    }
    app->rec_msgs = app->rec_dropped = 0;
    /* Ask the hub for its state again: it is queued ahead of the live
     * stream, so the recording starts self-contained (docs/RECORDING.md). */
    struct bus_state_info info;
    int to = app->state_timeout_ms > 0
                 ? (app->state_timeout_ms < 2000 ? app->state_timeout_ms : 2000)
                 : 0;
    if (to > 0 && bus_sub_fetch_state(app->sub, app->ep.reg, to, &info, err) != BASE_OK)
        tui_app_status(app, TUI_MSG_WARN, "recording %s without the hub's state: %s", app->rec_path,
                       err);
    else
        tui_app_status(app, TUI_MSG_INFO, "recording to %s (r stops)", app->rec_path);
    app->pane[TUI_P_HEADER].dirty = true;
}

static void record_msg(struct tui_app *app, bus_msg_t *m)
{
    if (app->rec == NULL)
        return;
    char err[BASE_ERRLEN];
    int rc = tui_recq_add(app->rec, m, err);
    if (rc == BASE_ERR)
        stop_record(app, err);
    else if (rc == BUS_DROPPED)
        app->rec_dropped++;
    else
        app->rec_msgs++;
}

/* ---- keys ------------------------------------------------------------------ */

static bool can_focus(const struct tui_app *app, int p)
{
    if (!app->pane[p].panel->focusable)
        return false;
    /* Sharing a slot, the table not shown is shown when it takes the focus. */
    return app->pane[p].win || (app->tables_shared && (p == TUI_P_NODES || p == TUI_P_WINDOWS));
}

static void cycle_focus(struct tui_app *app, int dir)
{
    for (int i = 1; i <= TUI_P_NPANES; i++) {
        int p = ((app->focus + dir * i) % TUI_P_NPANES + TUI_P_NPANES) % TUI_P_NPANES;
        if (can_focus(app, p)) {
            app->pane[app->focus].dirty = true;
            app->focus = p;
            if (p == TUI_P_NODES || p == TUI_P_WINDOWS)
                app->slot_table = p;
            if (app->pane[p].win == NULL)
                layout(app);
            app->pane[p].dirty = true;
            return;
        }
    }
}

static void filter_key(struct tui_app *app, int ch)
{
    size_t n = strlen(app->filter_buf);
    if (ch == 27) { /* Esc: leave the filter as it was */
        app->filter_edit = false;
    } else if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
        app->filter_edit = false;
        snprintf(app->filter, sizeof app->filter, "%s", app->filter_buf);
        if (app->filter[0])
            tui_app_status(app, TUI_MSG_INFO, "showing events whose name contains \"%s\"",
                           app->filter);
        else
            tui_app_status(app, TUI_MSG_INFO, "filter cleared");
    } else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
        /* Drop one whole UTF-8 character. */
        while (n > 0 && ((unsigned char)app->filter_buf[n - 1] & 0xc0) == 0x80)
            app->filter_buf[--n] = '\0';
        if (n > 0)
            app->filter_buf[--n] = '\0';
    } else if (ch >= 0x20 && ch < 0x100 && ch != 0x7f && n + 1 < sizeof app->filter_buf) {
        app->filter_buf[n] = (char)ch;
        app->filter_buf[n + 1] = '\0';
    }
    app->pane[TUI_P_STATUS].dirty = true;
    app->pane[TUI_P_TIMELINE].dirty = true;
}

static void on_mouse(struct tui_app *app)
{
    MEVENT ev;
    if (getmouse(&ev) != OK)
        return;
    if (app->help) {
        if ((ev.bstate & BUTTON4_PRESSED) && tui_help_scroll(app, KEY_UP))
            return;
        if ((ev.bstate & BUTTON5_PRESSED) && tui_help_scroll(app, KEY_DOWN))
            return;
        app->help = false;
        tui_app_mark_all_dirty(app);
        return;
    }
    for (int i = 0; i < TUI_P_NPANES; i++) {
        struct tui_pane *p = &app->pane[i];
        if (i == TUI_P_HELP || p->win == NULL || !p->panel->mouse)
            continue;
        if (ev.y >= p->y && ev.y < p->y + p->h && ev.x >= p->x && ev.x < p->x + p->w) {
            if (p->panel->focusable && (ev.bstate & (BUTTON1_CLICKED | BUTTON1_PRESSED))) {
                app->pane[app->focus].dirty = true;
                app->focus = i;
            }
            p->panel->mouse(app, p, ev.y - p->y, ev.x - p->x, ev.bstate);
            p->dirty = true;
            return;
        }
    }
}

void tui_app_key(tui_app_t *app, int ch)
{
    assert(app);
    if (ch == KEY_RESIZE) {
        tui_app_resize(app, 0, 0);
        return;
    }
    if (app->filter_edit) {
        filter_key(app, ch);
        return;
    }
    if (app->help && ch != KEY_MOUSE) {
        if (tui_help_scroll(app, ch))
            return;
        app->help = false; /* any other key closes the help */
        tui_app_mark_all_dirty(app);
        if (ch != 'q')
            return;
    }
    struct tui_pane *fp = &app->pane[app->focus];
    switch (ch) {
    case 'q':
    case 'Q':
        app->quit = true;
        return;
    case '?':
    case KEY_F(1):
    case 'L':
        app->help = true;
        app->help_log = ch == 'L';
        app->help_top = 0;
        app->pane[TUI_P_HELP].dirty = true;
        return;
    case ' ':
        app->paused = !app->paused;
        if (app->paused)
            app->right_ns = app->edge_ns;
        if (app->replay)
            tui_replay_pause(app, app->paused);
        tui_app_status(app, TUI_MSG_INFO, app->paused ? "paused (space resumes)" : "live");
        app->pane[TUI_P_HEADER].dirty = app->pane[TUI_P_TIMELINE].dirty = true;
        return;
    case '+':
    case '=':
        tui_app_zoom(app, 1, app->right_ns - app->span_ns / 2);
        return;
    case '-':
    case '_':
        tui_app_zoom(app, -1, app->right_ns - app->span_ns / 2);
        return;
    case KEY_LEFT:
    case 'h':
        tui_app_pan(app, -app->span_ns / 4);
        return;
    case KEY_RIGHT:
    case 'l':
        tui_app_pan(app, app->span_ns / 4);
        return;
    case KEY_END:
        app->paused = false;
        if (app->replay)
            tui_replay_pause(app, false);
        tui_app_status(app, TUI_MSG_INFO, "following the live edge");
        app->pane[TUI_P_TIMELINE].dirty = app->pane[TUI_P_HEADER].dirty = true;
        return;
    case 'a':
        app->clock = app->clock == TUI_CLOCK_ALIGNED ? TUI_CLOCK_RAW : TUI_CLOCK_ALIGNED;
        /* The other axis has its own live edge.  A paused view stays where it
         * is: both axes are the reference node's clock for the reference, so
         * the same moment is compared. */
        app->edge_ns = app->edge_latest = 0;
        update_edge(app, base_monotonic_ns());
        tui_app_status(app, TUI_MSG_INFO,
                       app->clock == TUI_CLOCK_ALIGNED
                           ? "aligned: every node on the global time base"
                           : "raw clocks: every node on its own clock (offsets uncorrected)");
        tui_app_mark_all_dirty(app);
        return;
    case 'e':
        app->expand = !app->expand;
        app->expand_auto = false;
        app->pane[TUI_P_TIMELINE].dirty = true;
        return;
    case '/':
        app->filter_edit = true;
        snprintf(app->filter_buf, sizeof app->filter_buf, "%s", app->filter);
        app->pane[TUI_P_STATUS].dirty = true;
        return;
    case 27: /* Esc clears the filter */
        if (app->filter[0]) {
            app->filter[0] = '\0';
            tui_app_status(app, TUI_MSG_INFO, "filter cleared");
            app->pane[TUI_P_TIMELINE].dirty = true;
        }
        return;
    case '\t':
        cycle_focus(app, 1);
        return;
    case KEY_BTAB:
        cycle_focus(app, -1);
        return;
    case 's':
        tui_app_snapshot(app);
        return;
    case 'c': {
        /* The collectives take the windows table's place (and its focus). */
        struct tui_pane *wp = &app->pane[TUI_P_WINDOWS];
        app->show_coll = !app->show_coll;
        wp->panel = app->show_coll ? &tui_panel_coll : tui_panels[TUI_P_WINDOWS];
        wp->scroll = wp->sel = 0;
        app->coll_sel = 0;
        if (app->show_coll) {
            app->focus = TUI_P_WINDOWS;
            app->slot_table = TUI_P_WINDOWS;
        }
        tui_app_status(app, TUI_MSG_INFO,
                       app->show_coll ? "collectives (c: back to the windows)" : "windows");
        layout(app);
        tui_app_mark_all_dirty(app);
        return;
    }
    case 'r':
        tui_app_toggle_record(app);
        return;
    case '[':
    case KEY_PPAGE:
    case ']':
    case KEY_NPAGE: {
        bool back = ch == '[' || ch == KEY_PPAGE;
        if (app->replay)
            tui_replay_seek(app, back ? -10000000000LL : 10000000000LL);
        else if (fp->panel->key && fp->panel->key(app, fp, ch))
            fp->dirty = true;
        else
            tui_app_pan(app, back ? -app->span_ns : app->span_ns);
        return;
    }
    case 12: /* ^L */
        clearok(curscr, TRUE);
        tui_app_mark_all_dirty(app);
        return;
    case KEY_MOUSE:
        on_mouse(app);
        return;
    default:
        break;
    }
    if (fp->win && fp->panel->key && fp->panel->key(app, fp, ch))
        fp->dirty = true;
}

/* ---- frames ---------------------------------------------------------------- */

void tui_app_frame(tui_app_t *app, int64_t now)
{
    assert(app);
    if (app->last_tick_ns == 0 || now - app->last_tick_ns >= 1000000000LL) {
        tui_model_tick(app->model, base_realtime_ns());
        tui_coll_update(app->coll, app->model, false);
        app->last_tick_ns = now;
        tui_app_mark_all_dirty(app); /* rates and offsets move once a second */
    }
    update_edge(app, now);
    if (app->status[0] && now > app->status_until) {
        app->status[0] = '\0';
        app->pane[TUI_P_STATUS].dirty = true;
    }
    /* The tables' heights follow the number of nodes, edges and lanes. */
    size_t nn = tui_model_nnodes(app->model), ne = tui_model_nedges(app->model);
    if (nn != app->laid_nodes || ne != app->laid_edges || app->lanes_all != app->laid_lanes ||
        (!app->expand_auto && app->expand != app->laid_expand))
        layout(app);
    uint64_t gen = tui_model_generation(app->model);
    bool any = false;
    for (int i = 0; i < TUI_P_NPANES; i++) {
        struct tui_pane *p = &app->pane[i];
        if (p->win == NULL || i == TUI_P_HELP)
            continue;
        if (app->tiny && i != TUI_P_STATUS)
            continue;
        if (!p->dirty && !(p->drawn_gen != gen && i != TUI_P_STATUS))
            continue;
        werase(p->win);
        p->panel->draw(app, p);
        wnoutrefresh(p->win);
        p->dirty = false;
        p->drawn_gen = gen;
        any = true;
    }
    struct tui_pane *h = &app->pane[TUI_P_HELP];
    if (app->help && h->win && !app->tiny) {
        if (h->dirty || any) {
            werase(h->win);
            h->panel->draw(app, h);
            touchwin(h->win);
            wnoutrefresh(h->win);
            h->dirty = false;
            any = true;
        }
    }
    if (any) {
        doupdate();
        app->frames++;
    }
    app->last_frame_ns = now;
}

/* ---- construction ---------------------------------------------------------- */

/*
 * The panels draw box characters, ± and the like: ncursesw writes them in
 * the locale's character set, and in a plain C or POSIX locale (a fresh
 * container, a root shell without LANG) they come out as '?' and raw
 * line-drawing letters.  Terminals today take UTF-8, so the character
 * type switches to a UTF-8 locale where the environment's is not one;
 * only where the system has none does the console refuse to start.
 */
static int utf8_locale(char *note, size_t len, char *err)
{
    setlocale(LC_ALL, "");
    const char *was = nl_langinfo(CODESET);
    char cs[64];
    snprintf(cs, sizeof cs, "%s", was ? was : "?");
    note[0] = '\0';
    if (strcmp(cs, "UTF-8") == 0)
        return BASE_OK;
    static const char *const utf8[] = {"C.UTF-8", "C.utf8", "en_US.UTF-8", "en_US.utf8"};
    for (size_t i = 0; i < BASE_ARRAY_LEN(utf8); i++)
        if (setlocale(LC_CTYPE, utf8[i]) != NULL && strcmp(nl_langinfo(CODESET), "UTF-8") == 0) {
            snprintf(note, len, "locale %s, not UTF-8: drawing in %s", cs, utf8[i]);
            return BASE_OK;
        }
    return base_err(err,
                    "the console draws in UTF-8 and the locale's character set is %s; no UTF-8 "
                    "locale is installed (C.UTF-8 or en_US.UTF-8)",
                    cs);
}

tui_app_t *tui_app_new(tui_model_t *model, const struct tui_app_opts *opts, char *err)
{
    assert(model && opts);
    char locale_note[160];
    if (utf8_locale(locale_note, sizeof locale_note, err) != BASE_OK)
        return NULL;
    struct tui_app *app = xcalloc(1, sizeof *app);
    app->model = model;
    app->coll = tui_coll_new(0);
    app->fps = opts->fps > 0 ? opts->fps : 10;
    app->record_flush_ms = opts->record_flush_ms > 0 ? opts->record_flush_ms : 250;
    app->snap_perfetto = opts->snap_perfetto;
    app->clock = TUI_CLOCK_ALIGNED;
    app->span_ns = DEFAULT_SPAN_NS;
    app->sel_node = -1;
    app->focus = TUI_P_NODES;
    app->slot_table = TUI_P_NODES;
    app->expand_auto = true;
    app->limits = bus_limits_default();
    snprintf(app->outdir, sizeof app->outdir, "%s", opts->outdir ? opts->outdir : ".");
    snprintf(app->hub, sizeof app->hub, "%s", opts->hub ? opts->hub : "");
    const char *nc = getenv("NO_COLOR");
    app->color = opts->color && !(nc && nc[0]);
    for (int i = 0; i < TUI_P_NPANES; i++)
        app->pane[i].panel = tui_panels[i];

    app->term_in = opts->in;
    app->term_out = opts->out;
    if (app->term_in == NULL || app->term_out == NULL) {
        /* The controlling terminal even when stdout is redirected (a log). */
        FILE *tty = fopen("/dev/tty", "r+");
        if (tty == NULL) {
            base_err(err, "no terminal: %s (try --record or --export)", strerror(errno));
            free(app);
            return NULL;
        }
        app->term_in = app->term_out = tty;
        app->own_term_files = true;
    }
    const char *term = opts->term ? opts->term : getenv("TERM");
    app->screen = newterm(term && term[0] ? term : "xterm", app->term_out, app->term_in);
    if (app->screen == NULL) {
        base_err(err, "cannot start the terminal \"%s\"", term ? term : "");
        if (app->own_term_files)
            fclose(app->term_in);
        free(app);
        return NULL;
    }
    set_term(app->screen);
    /* A terminal that cannot place the cursor (TERM=dumb) would show nothing at all. */
    const char *cup = tigetstr("cup");
    if (cup == NULL || cup == (char *)-1) {
        base_err(err,
                 "the terminal \"%s\" cannot place the cursor: run dptop in a full terminal "
                 "(or use --record / --export)",
                 term && term[0] ? term : "xterm");
        endwin();
        delscreen(app->screen);
        if (app->own_term_files)
            fclose(app->term_in);
        free(app);
        return NULL;
    }
    /* ncurses 6.4 flushes its output buffer after every cursor movement while
     * the screen is in its initial state (a write(2) per changed segment:
     * thousands per frame); one endwin/refresh cycle moves it to the running
     * state, where a frame leaves in a few large writes. */
    endwin();
    refresh();
    cbreak();
    noecho();
    nonl();
    curs_set(0);
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    set_escdelay(25);
    mouseinterval(0);
    mousemask(BUTTON1_PRESSED | BUTTON1_CLICKED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL);
    app->color = app->color && has_colors();
    palette(app);
    if (opts->rows > 0 && opts->cols > 0)
        resizeterm(opts->rows, opts->cols);
    refresh(); /* stdscr once, so that getch never repaints it over the panels */
    getmaxyx(stdscr, app->rows, app->cols);
    layout(app);
    if (locale_note[0])
        tui_model_log_add(app->model, base_realtime_ns(), -1, 'I', "dptop", locale_note);
    return app;
}

void tui_app_destroy(tui_app_t **self)
{
    if (self == NULL || *self == NULL)
        return;
    struct tui_app *app = *self;
    if (app->rec)
        stop_record(app, NULL);
    bool snapping = app->snap_pid > 0;
    free_windows(app);
    if (app->screen) {
        endwin();
        delscreen(app->screen);
    }
    /* A snapshot under way is finished, and said how it went. */
    if (snapping) {
        fprintf(stderr, "dptop: waiting for the snapshot %s\n", app->snap_path);
        snapshot_poll(app, true);
        fprintf(stderr, "dptop: %s\n", app->status);
    }
    if (app->own_term_files)
        fclose(app->term_in);
    free(app->lanes);
    free(app->order);
    tui_coll_destroy(&app->coll);
    free(app);
    *self = NULL;
}

/* ---- the loops -------------------------------------------------------------- */

static void read_keys(struct tui_app *app)
{
    int ch;
    for (int i = 0; i < 64 && (ch = getch()) != ERR; i++)
        tui_app_key(app, ch);
}

/*
 * The master is heard through its node table, published at least every
 * heartbeat period.  Silence after it was heard (a dead or restarted
 * master, a cut network) is shown in the header, and its state is fetched
 * again once it is heard anew: names, plan and scope trees published while
 * this console was not subscribed would otherwise never come.  A master
 * that restarts within the silence threshold shows as a sender restart on
 * its node table.
 */
static void master_heard(struct tui_app *app, int64_t now)
{
    if (app->master_last_ns > 0) {
        int64_t gap = now - app->master_last_ns;
        if (gap >= tui_app_silence_ns(app)) {
            tui_app_status(app, TUI_MSG_WARN, "the master answers again after %.0f s",
                           (double)gap / 1e9);
            app->want_state = true;
            app->state_next_ns = 0;
        }
        app->master_period_ns = gap;
    }
    app->master_last_ns = now;
    struct bus_sub_stats st;
    bus_sub_stats(app->sub, &st);
    if (st.kind[BUS_K_NODES].resets > app->master_resets) {
        app->master_resets = st.kind[BUS_K_NODES].resets;
        tui_app_status(app, TUI_MSG_WARN, "the master restarted");
        app->want_state = true;
        app->state_next_ns = 0;
    }
    app->pane[TUI_P_HEADER].dirty = true;
}

int64_t tui_app_silence_ns(const struct tui_app *app)
{
    int64_t t = 4 * app->master_period_ns;
    return t > TUI_SILENT_NS ? t : TUI_SILENT_NS;
}

/* The hub's state, asked for again while wanted and the master is heard;
 * every failure doubles the wait before the next try (5 s to 80 s). */
static void state_refetch(struct tui_app *app, int64_t now)
{
    if (!app->want_state || app->state_timeout_ms <= 0 || now < app->state_next_ns ||
        app->master_last_ns == 0 || now - app->master_last_ns > 2000000000LL)
        return;
    struct bus_state_info info;
    char err[BASE_ERRLEN];
    int to = app->state_timeout_ms < 2000 ? app->state_timeout_ms : 2000;
    if (bus_sub_fetch_state(app->sub, app->ep.reg, to, &info, err) == BASE_OK) {
        app->want_state = false;
        app->state_wait_ns = 0;
        tui_app_status(app, TUI_MSG_INFO, "the hub's state fetched (%llu messages)",
                       (unsigned long long)info.count);
        return;
    }
    app->state_wait_ns = app->state_wait_ns ? app->state_wait_ns * 2 : 5000000000LL;
    if (app->state_wait_ns > 80000000000LL)
        app->state_wait_ns = 80000000000LL;
    app->state_next_ns = base_monotonic_ns() + app->state_wait_ns;
    tui_app_status(app, TUI_MSG_WARN, "no state from the hub (%s); asking again in %.0f s", err,
                   (double)app->state_wait_ns / 1e9);
}

/* The loop shared by the live console and the replay. */
static int run_loop(struct tui_app *app, volatile sig_atomic_t *stop)
{
    const int64_t frame = 1000000000LL / app->fps;
    int64_t next = base_monotonic_ns();
    char err[BASE_ERRLEN];
    while (!*stop && !app->quit) {
        int64_t now = base_monotonic_ns();
        if (app->sub) {
            /* Messages until the next frame is due (at least one wait of up to
             * 10 ms, so keys stay responsive and an idle console sleeps). */
            int64_t deadline = now + 30000000LL;
            int timeout = (int)((next - now) / 1000000);
            timeout = timeout < 0 ? 0 : timeout > 10 ? 10 : timeout;
            for (;;) {
                bus_msg_t *m = NULL;
                int r = bus_sub_recv(app->sub, &m, timeout, err);
                if (r < 0) {
                    if (*stop)
                        break;
                    tui_app_status(app, TUI_MSG_ERROR, "bus: %s", err);
                    break;
                }
                if (r == 0)
                    break;
                if (bus_msg_kind(m) == BUS_K_NODES && !bus_msg_from_state(m))
                    master_heard(app, base_monotonic_ns());
                char merr[BASE_ERRLEN];
                if (tui_model_apply(app->model, m, bus_msg_arrival_ns(m), merr) != BASE_DEC_OK)
                    tui_app_status(app, TUI_MSG_WARN, "rejected %s message: %s",
                                   bus_kind_name(bus_msg_kind(m)), merr);
                record_msg(app, m);
                bus_msg_destroy(&m);
                timeout = 0;
                if (base_monotonic_ns() > deadline)
                    break;
            }
            /* The writer thread ticks the file; a failure of its stops here. */
            struct tui_recq_stats rs;
            if (app->rec && (tui_recq_stats(app->rec, &rs, err), rs.failed))
                stop_record(app, err);
            state_refetch(app, base_monotonic_ns());
        } else if (app->replay) {
            tui_replay_pump(app, now, 20000000LL);
            int64_t wait = next - base_monotonic_ns();
            if (wait > 10000000LL)
                wait = 10000000LL;
            if (wait > 0)
                base_sleep_ns(wait);
        }
        read_keys(app);
        snapshot_poll(app, false);
        if (app->hook)
            app->hook(app, app->hook_ctx);
        now = base_monotonic_ns();
        /* Something a key or a message changed is drawn at once; the rest
         * (the scrolling timeline, rates) waits for the next frame. */
        bool key_dirty = false;
        for (int i = 0; i < TUI_P_NPANES; i++)
            key_dirty |= app->pane[i].dirty && app->pane[i].win && i != TUI_P_TIMELINE &&
                         (i != TUI_P_HELP || app->help) && (!app->tiny || i == TUI_P_STATUS);
        if (now >= next || key_dirty) {
            tui_app_frame(app, now);
            if (now >= next)
                next = now - next > frame ? now + frame : next + frame;
        }
    }
    return 0;
}

static void app_opts_from_cfg(const base_config_t *cfg, struct tui_app_opts *o)
{
    memset(o, 0, sizeof *o);
    o->hub = base_config_str(cfg, "hub");
    o->outdir = base_config_str(cfg, "output_dir");
    o->fps = (int)base_config_int(cfg, "fps");
    o->record_flush_ms = (int)base_config_int(cfg, "record_flush_ms");
    o->snap_perfetto = strcmp(base_config_str(cfg, "snapshot_format"), "perfetto") == 0;
    o->color = base_config_bool(cfg, "color");
}

static struct bus_limits cfg_limits(const base_config_t *cfg)
{
    struct bus_limits lim = {
        .max_header = (size_t)base_config_int(cfg, "max_header_bytes"),
        .max_payload = (size_t)base_config_int(cfg, "max_payload_bytes"),
    };
    return lim;
}

tui_model_t *tui_model_from_cfg(const base_config_t *cfg)
{
    struct tui_model_opts mo = {.event_budget = (size_t)base_config_int(cfg, "event_budget")};
    mo.max_batch = (size_t)base_config_int(cfg, "max_payload_bytes") / GPU_RECORD_SIZE;
    return tui_model_new(&mo);
}

bool tui_have_terminal(char *err)
{
    FILE *tty = fopen("/dev/tty", "r+");
    if (tty == NULL) {
        base_err(err,
                 "the console needs a terminal (%s); try --record FILE or --replay FILE "
                 "--export OUT",
                 strerror(errno));
        return false;
    }
    fclose(tty);
    return true;
}

int tui_live_run(const base_config_t *cfg, volatile sig_atomic_t *stop)
{
    char err[BASE_ERRLEN];
    if (!tui_have_terminal(err)) {
        fprintf(stderr, "dptop: %s\n", err);
        return 2;
    }
    return tui_console_live(cfg, NULL, stop, NULL, NULL);
}

int tui_console_live(const base_config_t *cfg, const char *hub_override,
                     volatile sig_atomic_t *stop, void (*hook)(struct tui_app *, void *),
                     void *hook_ctx)
{
    char err[BASE_ERRLEN];
    struct tui_sub_setup su;
    if (tui_sub_setup(cfg, hub_override, &su, err) != BASE_OK) {
        fprintf(stderr, "dptop: %s\n", err);
        return 2;
    }
    const char *hub = hub_override ? hub_override : base_config_str(cfg, "hub");
    bus_sub_t *sub = tui_sub_open(cfg, &su, err);
    if (sub == NULL) {
        fprintf(stderr, "dptop: %s\n", err);
        return 1;
    }
    struct bus_endpoints ep = su.ep;
    tui_model_t *model = tui_model_from_cfg(cfg);
    struct tui_app_opts ao;
    app_opts_from_cfg(cfg, &ao);
    ao.hub = hub;
    tui_app_t *app = tui_app_new(model, &ao, err);
    if (app == NULL) { /* no terminal, or one it cannot draw on */
        fprintf(stderr, "dptop: %s\n", err);
        tui_model_destroy(&model);
        bus_sub_destroy(&sub);
        return 2;
    }
    app->sub = sub;
    app->ep = ep;
    app->hook = hook;
    app->hook_ctx = hook_ctx;
    app->limits = su.lim;
    app->state_timeout_ms = (int)base_config_int(cfg, "state_timeout_ms");
    tui_app_status(app, TUI_MSG_INFO, "connecting to %s ...", hub);
    tui_app_frame(app, base_monotonic_ns());
    struct bus_state_info info;
    app->live_since_ns = base_monotonic_ns();
    if (app->state_timeout_ms > 0 &&
        bus_sub_fetch_state(sub, ep.reg, app->state_timeout_ms, &info, err) != BASE_OK) {
        tui_app_status(app, TUI_MSG_WARN,
                       "no state from the hub yet (%s); showing the live stream, and its state "
                       "once the master is heard",
                       err);
        app->want_state = true;
    } else
        tui_app_status(app, TUI_MSG_INFO, "connected to %s", hub); /* the hint says "? help" */
    int64_t t_start = base_monotonic_ns();
    int rc = run_loop(app, stop);
    uint64_t frames = app->frames;
    tui_app_destroy(&app);
    double secs = (double)(base_monotonic_ns() - t_start) / 1e9;
    fprintf(stderr, "dptop: %llu frames in %.1f s (%.1f/s)\n", (unsigned long long)frames, secs,
            secs > 0 ? (double)frames / secs : 0.0);
    struct bus_sub_stats st;
    bus_sub_stats(sub, &st);
    bus_sub_destroy(&sub);
    struct tui_summary s;
    tui_model_summary(model, &s);
    fprintf(stderr,
            "dptop: %llu events received, %llu evicted by the budget; %llu bus drops (seq gaps), "
            "%llu messages rejected\n",
            (unsigned long long)s.events, (unsigned long long)s.evicted,
            (unsigned long long)st.gaps,
            (unsigned long long)(base_decstats_errors(&st.dec) + s.dec_errors));
    tui_model_destroy(&model);
    return rc;
}

int tui_replay_run(const base_config_t *cfg, const char *path, const struct tui_export_req *req,
                   volatile sig_atomic_t *stop)
{
    char err[BASE_ERRLEN];
    /* The recording first: a missing file is the problem to report. */
    struct bus_limits lim = cfg_limits(cfg);
    struct tui_replay *rp = tui_replay_open(path, base_config_double(cfg, "speed"), &lim, err);
    if (rp == NULL) {
        fprintf(stderr, "dptop: %s\n", err);
        return 1;
    }
    if (!tui_have_terminal(err)) {
        fprintf(stderr, "dptop: %s\n", err);
        tui_replay_close(&rp);
        return 2;
    }
    tui_import_t *imp = NULL;
    if (req && req->nimports && (imp = tui_import_for_console(cfg, path, req, err)) == NULL) {
        fprintf(stderr, "dptop: %s\n", err);
        tui_replay_close(&rp);
        return 1;
    }
    tui_model_t *model = tui_model_from_cfg(cfg);
    struct tui_app_opts ao;
    app_opts_from_cfg(cfg, &ao);
    ao.hub = path;
    tui_app_t *app = tui_app_new(model, &ao, err);
    if (app == NULL) { /* no terminal, or one it cannot draw on */
        fprintf(stderr, "dptop: %s\n", err);
        tui_model_destroy(&model);
        tui_replay_close(&rp);
        tui_import_destroy(&imp);
        return 2;
    }
    app->replay = rp;
    if (imp) {
        uint64_t over;
        app->imports = imp;
        tui_import_apply(imp, model);
        tui_app_status(app, TUI_MSG_INFO, "%zu imported files: %" PRIu64 " events%s",
                       tui_import_count(imp), tui_import_loaded(imp, &over),
                       over ? " (more did not fit the event budget)" : "");
    }
    app->limits = lim;
    tui_app_status(app, TUI_MSG_INFO, "replaying %s — space pauses, [ ] seek 10 s, ? help", path);
    int rc = run_loop(app, stop);
    tui_app_destroy(&app);
    tui_replay_close(&rp);
    tui_model_destroy(&model);
    tui_import_destroy(&imp);
    return rc;
}
