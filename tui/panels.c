/*
 * The panels of the console (SPEC §7): header, node table, window table,
 * timeline (timeline.c), status line and the help overlay.  Each is a const
 * vtable registered in tui_panels[]; app.c gives each a window and calls
 * its hooks.  Panels only read the model and the view; actions that change
 * the view go through app.c.
 */
#include "tui/tui_int.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <wchar.h>

/* ---- text helpers ------------------------------------------------------- */

/* Decode s into wide characters of at most `cols` display columns. */
static size_t widen(const char *s, int cols, wchar_t *out, size_t max, int *used)
{
    mbstate_t st;
    memset(&st, 0, sizeof st);
    size_t n = 0, len = strlen(s);
    int w = 0;
    while (len > 0 && n + 1 < max) {
        wchar_t wc;
        size_t k = mbrtowc(&wc, s, len, &st);
        if (k == (size_t)-1 || k == (size_t)-2) {
            memset(&st, 0, sizeof st);
            wc = L'?';
            k = 1;
        } else if (k == 0) {
            break;
        }
        int cw = wcwidth(wc);
        if (cw < 0) {
            wc = L'?';
            cw = 1;
        }
        if (w + cw > cols)
            break;
        out[n++] = wc;
        w += cw;
        s += k;
        len -= k;
    }
    out[n] = L'\0';
    if (used)
        *used = w;
    return n;
}

int tui_strwidth(const char *s)
{
    wchar_t buf[512];
    int w;
    widen(s, 1 << 20, buf, BASE_ARRAY_LEN(buf), &w);
    return w;
}

int tui_put(WINDOW *win, int y, int x, const char *s, int cols, chtype attr)
{
    int h, w;
    getmaxyx(win, h, w);
    if (y < 0 || y >= h || x < 0 || x >= w || cols <= 0)
        return 0;
    if (cols > w - x)
        cols = w - x;
    wchar_t buf[512];
    int used;
    size_t n = widen(s, cols, buf, BASE_ARRAY_LEN(buf), &used);
    wattrset(win, attr);
    mvwaddnwstr(win, y, x, buf, (int)n);
    wattrset(win, A_NORMAL);
    return used;
}

/* Fill columns [x, x+n) of row y with spaces in attr. */
static void fill(WINDOW *win, int y, int x, int n, chtype attr)
{
    int h, w;
    getmaxyx(win, h, w);
    if (y < 0 || y >= h || x >= w || n <= 0)
        return;
    if (x < 0) {
        n += x;
        x = 0;
    }
    if (n > w - x)
        n = w - x;
    if (n > 0)
        mvwhline(win, y, x, ' ' | attr, n);
}

void tui_draw_title(struct tui_app *app, struct tui_pane *pane, const char *title)
{
    bool focus = app->focus == (int)(pane - app->pane);
    chtype a = focus ? app->role[R_TITLE_FOCUS] : app->role[R_TITLE];
    fill(pane->win, 0, 0, pane->w, focus ? a : A_NORMAL);
    tui_put(pane->win, 0, 0, title, pane->w, a);
}

static void fmt_or_dash(char *buf, size_t len, double v, size_t (*fmt)(char *, size_t, double))
{
    if (isfinite(v))
        fmt(buf, len, v);
    else
        snprintf(buf, len, "-");
}

/* Right-align s in a field of width w at x. */
static void put_right(WINDOW *win, int y, int x, int w, const char *s, chtype attr)
{
    int sw = tui_strwidth(s);
    if (sw > w)
        sw = w;
    tui_put(win, y, x + w - sw, s, w, attr);
}

/* ---- header -------------------------------------------------------------- */

static void header_draw(struct tui_app *app, struct tui_pane *p)
{
    struct tui_summary s;
    tui_model_summary(app->model, &s);
    chtype hd = app->role[R_HEADER];
    char buf[512], unc[32], eps[32], a[32], b[32];
    fill(p->win, 0, 0, p->w, hd);
    fmt_or_dash(unc, sizeof unc, s.worst_unc_ns, tui_fmt_dur);
    tui_fmt_count(eps, sizeof eps, s.events_per_s);
    char ref[16] = "-";
    if (s.ref >= 0)
        snprintf(ref, sizeof ref, "n%d", s.ref);
    char worst[48] = "-";
    if (s.worst_unc_node >= 0)
        snprintf(worst, sizeof worst, "±%s (n%d)", unc, s.worst_unc_node);
    /* Live: whether the master is heard (its node table, every heartbeat). */
    char live[48];
    bool silent = false;
    int64_t now = base_monotonic_ns();
    snprintf(live, sizeof live, "%s", app->paused ? "PAUSED" : "LIVE");
    if (app->sub && app->master_last_ns == 0 && now - app->live_since_ns >= TUI_SILENT_NS) {
        snprintf(live, sizeof live, "NO MASTER %.0fs", (double)(now - app->live_since_ns) / 1e9);
        silent = true;
    } else if (app->sub && app->master_last_ns > 0 &&
               now - app->master_last_ns >= tui_app_silence_ns(app)) {
        snprintf(live, sizeof live, "MASTER SILENT %.0fs",
                 (double)(now - app->master_last_ns) / 1e9);
        silent = true;
    }
    char src[320];
    if (app->replay) {
        char d[128];
        tui_replay_describe(app, d, sizeof d);
        snprintf(src, sizeof src, "REPLAY %s", d);
    } else {
        snprintf(src, sizeof src, "%s %s", live, app->hub);
    }
    char rec[96];
    if (app->rec && app->rec_dropped)
        snprintf(rec, sizeof rec, "● REC %llu msgs, %llu dropped ",
                 (unsigned long long)app->rec_msgs, (unsigned long long)app->rec_dropped);
    else if (app->rec)
        snprintf(rec, sizeof rec, "● REC %llu msgs ", (unsigned long long)app->rec_msgs);
    else
        snprintf(rec, sizeof rec, "not recording");
    /*
     * Narrow terminals lose the version, then the hub's address, before
     * any figure: at 80 columns the drops and the recording state stay.
     */
    for (int fit = 0; fit < 3; fit++) {
        const char *where = fit < 2 ? src : app->replay ? "REPLAY" : live;
        snprintf(buf, sizeof buf,
                 " %s%s%s%s │ nodes %zu/%zu%s │ ref %s │ worst %s │ %s ev/s │ drops %llu │ ",
                 fit == 0 ? "dptop " : "", fit == 0 ? DP_VERSION : "", fit == 0 ? " │ " : "", where,
                 s.nodes_up, s.nodes_total, fit < 2 ? " up" : "", ref, worst, eps,
                 (unsigned long long)(s.ev_drops + s.evicted));
        if (tui_strwidth(buf) + tui_strwidth(rec) <= p->w)
            break;
    }
    if (!app->rec && tui_strwidth(buf) + tui_strwidth(rec) > p->w)
        snprintf(rec, sizeof rec, "no rec");
    int x = tui_put(p->win, 0, 0, buf, p->w, silent ? app->role[R_WARN] | A_BOLD : hd | A_BOLD);
    tui_put(p->win, 0, x, rec, p->w - x, app->rec ? app->role[R_REC] : hd);
    if (p->h < 2)
        return;
    tui_fmt_count(a, sizeof a, (double)tui_store_count(tui_model_store(app->model)));
    tui_fmt_count(b, sizeof b, (double)tui_store_budget(tui_model_store(app->model)));
    /* Shown once there are any: each is a window's edge the solve went without. */
    char lost[96] = "";
    const char *warn = s.nodes_unaligned ? "⚠ unaligned nodes on raw clocks"
                       : s.asym_unseen ? "⚠ no loop in the probe graph: ± leaves out path asymmetry"
                                       : "";
    bool aligned = app->clock == TUI_CLOCK_ALIGNED;
    /* Messages the hub sent this console that never came (gaps in their sequence). */
    uint64_t bus_lost = 0;
    if (app->sub) {
        struct bus_sub_stats bst;
        bus_sub_stats(app->sub, &bst);
        bus_lost = bst.gaps;
    }
    uint64_t rejected = s.dec_errors + s.refused + s.node_rejects;
    /* The bus tree's relays, once the master knows any: a silent one, or
     * one whose upstream queue overflowed, is a warning. */
    char relays[128] = "";
    bool relay_warn = s.relays_up < s.relays || s.relays_lost > 0;
    if (s.relays && s.relays_lost)
        snprintf(relays, sizeof relays, "relays %zu/%zu up, lost %llu │ ", s.relays_up, s.relays,
                 (unsigned long long)s.relays_lost);
    else if (s.relays)
        snprintf(relays, sizeof relays, "relays %zu/%zu up │ ", s.relays_up, s.relays);
    int off = 0;
    if (s.fits_lost)
        off =
            snprintf(lost, sizeof lost, "edge fits lost %llu │ ", (unsigned long long)s.fits_lost);
    if (bus_lost)
        snprintf(lost + off, sizeof lost - (size_t)off, "bus lost %llu │ ",
                 (unsigned long long)bus_lost);
    snprintf(buf, sizeof buf,
             " clock: %s │ events %s/%s buffered, %llu evicted │ agent drops %llu │ "
             "rejected %llu │ %s%s%s",
             aligned ? "ALIGNED (global)" : "RAW (per node)", a, b, (unsigned long long)s.evicted,
             (unsigned long long)s.ev_drops, (unsigned long long)rejected, relays, lost, warn);
    /* Narrow: the same figures, fewer words (a warning keeps its place). */
    if (tui_strwidth(buf) > p->w) {
        off = 0;
        lost[0] = '\0';
        if (s.fits_lost)
            off = snprintf(lost, sizeof lost, "fits lost %llu │ ", (unsigned long long)s.fits_lost);
        if (bus_lost)
            snprintf(lost + off, sizeof lost - (size_t)off, "bus lost %llu │ ",
                     (unsigned long long)bus_lost);
        snprintf(buf, sizeof buf,
                 " %s │ ev %s/%s, %llu evicted │ drops %llu │ rejected %llu │ %s%s%s",
                 aligned ? "ALIGNED" : "RAW", a, b, (unsigned long long)s.evicted,
                 (unsigned long long)s.ev_drops, (unsigned long long)rejected,
                 relay_warn ? relays : "", lost,
                 s.nodes_unaligned ? "⚠ unaligned on raw clocks"
                 : s.asym_unseen   ? "⚠ no loop"
                                   : "");
    }
    /* Narrower still: the warning first, so that the edge cuts figures, not it. */
    if (tui_strwidth(buf) > p->w) {
        lost[0] = '\0';
        if (s.fits_lost || bus_lost)
            snprintf(lost, sizeof lost, " │ lost %llu+%llu", (unsigned long long)s.fits_lost,
                     (unsigned long long)bus_lost);
        snprintf(buf, sizeof buf, " %s%s │ ev %s/%s -%llu │ drop %llu │ rej %llu%s",
                 s.nodes_unaligned ? "⚠ unaligned │ "
                 : s.asym_unseen   ? "⚠ no loop │ "
                                   : "",
                 aligned ? "ALIGNED" : "RAW", a, b, (unsigned long long)s.evicted,
                 (unsigned long long)s.ev_drops, (unsigned long long)rejected, lost);
    }
    tui_put(p->win, 1, 0, buf, p->w,
            s.nodes_unaligned || s.dec_errors || s.asym_unseen || s.fits_lost || bus_lost ||
                    relay_warn
                ? app->role[R_WARN]
                : A_NORMAL);
}

/* ---- node table ------------------------------------------------------------ */

enum ncol {
    C_ID,
    C_HOST,
    C_STATE,
    C_OFF,
    C_DRIFT,
    C_UNC,
    C_RTTMIN,
    C_RTTMED,
    C_PRB,
    C_PURE,
    C_LOSS,
    C_GPU,
    C_VRAM,
    C_POWER,
    C_TEMP,
    C_TS,
    C_REJ,
    C_EVS,
    C_LATE,
    C_N
};
static const struct {
    const char *name;
    int width, prio; /* lower prio is dropped last */
    enum tui_sort sort;
} ncols[C_N] = {
    /* Device figures before probe details: the Windows table has those per edge. */
    [C_ID] = {"ID", 5, 0, TUI_SORT_ID},
    [C_HOST] = {"HOST", 12, 1, TUI_SORT_HOST},
    [C_STATE] = {"STATE", 9, 0, TUI_SORT_STATE},
    [C_OFF] = {"OFFSET", 13, 0, TUI_SORT_OFFSET},
    [C_DRIFT] = {"DRIFT", 11, 1, TUI_SORT_DRIFT},
    [C_UNC] = {"±UNC", 9, 0, TUI_SORT_UNC},
    [C_RTTMIN] = {"RTTmin", 8, 5, TUI_SORT_RTT},
    [C_RTTMED] = {"RTTmed", 8, 2, TUI_SORT_RTT},
    [C_PRB] = {"PRB/s", 6, 4, TUI_SORT_PROBES},
    [C_PURE] = {"PURE%", 6, 5, TUI_SORT_PURE},
    [C_LOSS] = {"LOSS%", 6, 4, TUI_SORT_LOSS},
    [C_GPU] = {"GPU%", 5, 2, TUI_SORT_GPU},
    [C_VRAM] = {"VRAM", 10, 3, TUI_SORT_VRAM},
    [C_POWER] = {"W", 5, 4, TUI_SORT_POWER},
    [C_TEMP] = {"°C", 4, 4, TUI_SORT_TEMP},
    [C_TS] = {"TS", 4, 3, TUI_SORT_STAMPS},
    [C_REJ] = {"REJ", 5, 3, TUI_SORT_REJECTS},
    [C_EVS] = {"EV/s", 7, 2, TUI_SORT_EVENTS},
    /* Straggler score: the smoothed lateness at collectives (not sortable). */
    [C_LATE] = {"LATE", 8, 1, TUI_SORT_NKEYS},
};

/*
 * Which of n columns fit in w, and their x positions (-1: left out): the
 * lowest priorities first, then the next while they fit, so that a narrow
 * pane loses its least telling columns, not its rightmost; the columns
 * kept stay in their order.
 */
#define PRIO_NEVER 8

static void pick_columns(int n, const int *width, const int *prio, int w, int *xs)
{
    bool on[24] = {0};
    assert(n <= 24);
    int used = 0;
    for (int pr = 0; pr < PRIO_NEVER; pr++)
        for (int c = 0; c < n; c++)
            if (prio[c] == pr && used + width[c] + 1 <= w) {
                on[c] = true;
                used += width[c] + 1;
            }
    for (int c = 0, x = 0; c < n; c++) {
        xs[c] = on[c] ? x : -1;
        if (on[c])
            x += width[c] + 1;
    }
}

/* A device column no node has a reading for is left out (no GPU, a simulated one). */
static void node_columns(const struct tui_app *app, int w, int xs[C_N])
{
    const tui_model_t *model = app->model;
    int width[C_N], prio[C_N];
    bool have[C_N] = {0};
    for (size_t i = 0; i < tui_model_nnodes(model); i++) {
        const struct tui_node *n = tui_model_node(model, i);
        if (n->state == TUI_NODE_DOWN)
            continue;
        have[C_GPU] |= isfinite(n->gpu_busy_pct);
        have[C_VRAM] |= isfinite(n->vram_used_b);
        have[C_POWER] |= isfinite(n->power_w);
        have[C_TEMP] |= isfinite(n->temp_c);
    }
    for (int c = 0; c < C_N; c++) {
        width[c] = ncols[c].width;
        bool device = c == C_GPU || c == C_VRAM || c == C_POWER || c == C_TEMP;
        prio[c] = device && !have[c] ? PRIO_NEVER : ncols[c].prio;
    }
    if (app->coll == NULL || tui_coll_nparts(app->coll) == 0)
        prio[C_LATE] = PRIO_NEVER;
    pick_columns(C_N, width, prio, w, xs);
}

static void node_cell(struct tui_app *app, const struct tui_node *n, int c, char *buf, size_t len,
                      chtype *attr)
{
    buf[0] = '\0';
    bool fit = n->have_fit && n->fit.aligned;
    /* What a node's status said stands only while it is up: a node gone down shows none. */
    bool down = n->state == TUI_NODE_DOWN;
    switch (c) {
    case C_ID:
        snprintf(buf, len, "n%u%s", n->id, n->is_ref ? "*" : "");
        break;
    case C_HOST:
        snprintf(buf, len, "%s", n->host[0] ? n->host : "?");
        break;
    case C_STATE:
        snprintf(buf, len, "%s", tui_node_state_name(n->state));
        *attr = n->state == TUI_NODE_UP     ? app->role[R_UP]
                : n->state == TUI_NODE_DOWN ? app->role[R_DOWN]
                                            : app->role[R_UNALIGNED];
        break;
    case C_OFF:
        fmt_or_dash(buf, len, tui_model_offset_at(app->model, n->id, app->eval_global),
                    tui_fmt_offset);
        break;
    case C_DRIFT:
        if (fit)
            snprintf(buf, len, "%+.3fppm", n->fit.drift_ppb / 1000.0);
        else
            snprintf(buf, len, n->is_ref ? "0" : "-");
        break;
    case C_UNC:
        if (fit && isfinite(n->fit.uncertainty_ns)) {
            char d[24];
            tui_fmt_dur(d, sizeof d, n->fit.uncertainty_ns);
            snprintf(buf, len, "±%s", d);
        } else {
            snprintf(buf, len, n->is_ref ? "ref" : "-");
        }
        break;
    case C_RTTMIN:
        fmt_or_dash(buf, len, n->rtt_min_ns, tui_fmt_dur);
        break;
    case C_RTTMED:
        fmt_or_dash(buf, len, n->rtt_med_ns, tui_fmt_dur);
        break;
    case C_PRB:
        fmt_or_dash(buf, len, n->have_status && !down ? n->probes_per_s : NAN, tui_fmt_count);
        break;
    case C_PURE:
        if (isfinite(n->pure_pct))
            snprintf(buf, len, "%.1f", n->pure_pct);
        else
            snprintf(buf, len, "-");
        break;
    case C_LOSS:
        if (isfinite(n->loss_pct))
            snprintf(buf, len, "%.1f", n->loss_pct);
        else
            snprintf(buf, len, "-");
        break;
    case C_GPU:
        if (isfinite(n->gpu_busy_pct) && !down)
            snprintf(buf, len, "%.0f", n->gpu_busy_pct);
        else
            snprintf(buf, len, "-");
        break;
    case C_VRAM:
        /* In use of all, over the node's GPUs: GiB (a decimal below 100), TiB from 10000. */
        if (isfinite(n->vram_used_b) && !down) {
            double u = n->vram_used_b / 1073741824.0;
            double t = isfinite(n->vram_total_b) ? n->vram_total_b / 1073741824.0 : u;
            if (!isfinite(n->vram_total_b))
                snprintf(buf, len, u >= 100 ? "%.0fG" : "%.1fG", u);
            else if (t >= 10000)
                snprintf(buf, len, "%.1f/%.0fT", u / 1024, t / 1024);
            else if (t >= 100)
                snprintf(buf, len, "%.0f/%.0fG", u, t);
            else
                snprintf(buf, len, "%.1f/%.0fG", u, t);
        } else {
            snprintf(buf, len, "-");
        }
        break;
    case C_POWER:
        if (isfinite(n->power_w) && !down)
            snprintf(buf, len, "%.0f", n->power_w);
        else
            snprintf(buf, len, "-");
        break;
    case C_TEMP:
        if (isfinite(n->temp_c) && !down)
            snprintf(buf, len, "%.0f", n->temp_c);
        else
            snprintf(buf, len, "-");
        break;
    case C_TS:
        /* User-space probe stamps: µs of scheduling noise in every probe (SPEC 4.1). */
        snprintf(buf, len, "%s", n->user_ts < 0 || down ? "-" : n->user_ts ? "user" : "kern");
        if (n->user_ts > 0 && !down)
            *attr = app->role[R_WARN];
        break;
    case C_REJ:
        if (down)
            snprintf(buf, len, "-");
        else
            tui_fmt_count(buf, len, (double)n->rejects);
        if (n->rejects > 0 && !down)
            *attr = app->role[R_WARN];
        break;
    case C_EVS:
        tui_fmt_count(buf, len, n->events_per_s);
        break;
    case C_LATE: {
        double v = app->coll ? tui_coll_node_score(app->coll, n->id) : NAN;
        fmt_or_dash(buf, len, v, tui_fmt_dur);
        /* Late beyond a tenth of a millisecond, smoothed: a chronic straggler. */
        if (isfinite(v) && v > 100000)
            *attr = app->role[R_WARN];
        break;
    }
    default:
        break;
    }
}

static size_t *node_order(struct tui_app *app)
{
    size_t n = tui_model_nnodes(app->model);
    if (n >= app->caporder) {
        app->caporder = n * 2 + 16;
        app->order = xreallocarray(app->order, app->caporder, sizeof *app->order);
    }
    tui_sort_nodes(app->model, app->sort, app->sort_desc, app->order);
    return app->order;
}

static void nodes_draw(struct tui_app *app, struct tui_pane *p)
{
    size_t n = tui_model_nnodes(app->model);
    size_t *order = node_order(app);
    char title[256], at[48] = "-";
    if (app->eval_global > 0) {
        time_t secs = (time_t)(app->eval_global / 1000000000LL);
        struct tm tm;
        localtime_r(&secs, &tm);
        char hms[16];
        strftime(hms, sizeof hms, "%H:%M:%S", &tm);
        snprintf(at, sizeof at, "%s.%06lld", hms,
                 (long long)(app->eval_global % 1000000000LL / 1000));
    }
    int ref = tui_model_ref(app->model);
    snprintf(title, sizeof title, " Nodes (%zu)  sort %s%s   offsets to n%d at %s   (* reference) ",
             n, tui_sort_name(app->sort), app->sort_desc ? "▼" : "▲", ref < 0 ? 0 : ref, at);
    tui_draw_title(app, p, title);
    if (p->h < 2)
        return;
    int xs[C_N];
    node_columns(app, p->w, xs);
    for (int c = 0; c < C_N; c++) {
        if (xs[c] < 0)
            continue;
        chtype a = app->role[R_COLHDR] |
                   (ncols[c].sort == app->sort && c != C_RTTMIN ? A_BOLD | A_REVERSE : 0);
        if (c == C_ID || c == C_HOST || c == C_STATE)
            tui_put(p->win, 1, xs[c], ncols[c].name, ncols[c].width, a);
        else
            put_right(p->win, 1, xs[c], ncols[c].width, ncols[c].name, a);
    }
    int rows = p->h - 2;
    /* Keep the selection on its node across re-sorts. */
    p->sel = -1;
    for (size_t i = 0; i < n; i++)
        if ((int)tui_model_node(app->model, order[i])->id == app->sel_node)
            p->sel = (int)i;
    if (p->sel >= 0) {
        if (p->sel < p->scroll)
            p->scroll = p->sel;
        if (p->sel >= p->scroll + rows)
            p->scroll = p->sel - rows + 1;
    }
    if (p->scroll > (int)n - rows)
        p->scroll = (int)n - rows;
    if (p->scroll < 0)
        p->scroll = 0;
    bool focus = app->focus == TUI_P_NODES;
    for (int r = 0; r < rows && p->scroll + r < (int)n; r++) {
        const struct tui_node *node = tui_model_node(app->model, order[p->scroll + r]);
        bool sel = p->scroll + r == p->sel;
        chtype base = sel                            ? (focus ? app->role[R_SELECTED] : A_BOLD)
                      : node->state == TUI_NODE_DOWN ? app->role[R_DIM]
                                                     : A_NORMAL;
        if (sel)
            fill(p->win, 2 + r, 0, p->w, base);
        for (int c = 0; c < C_N; c++) {
            if (xs[c] < 0)
                continue;
            char buf[64];
            chtype a = base;
            node_cell(app, node, c, buf, sizeof buf, &a);
            if (sel)
                a = base | (a & A_BOLD);
            if (c == C_ID || c == C_HOST || c == C_STATE)
                tui_put(p->win, 2 + r, xs[c], buf, ncols[c].width, a);
            else
                put_right(p->win, 2 + r, xs[c], ncols[c].width, buf, a);
        }
    }
}

static void select_row(struct tui_app *app, int row)
{
    size_t n = tui_model_nnodes(app->model);
    if (n == 0)
        return;
    if (row < 0)
        row = 0;
    if (row >= (int)n)
        row = (int)n - 1;
    size_t *order = node_order(app);
    app->sel_node = tui_model_node(app->model, order[row])->id;
    app->pane[TUI_P_TIMELINE].dirty = true;
}

static bool nodes_key(struct tui_app *app, struct tui_pane *p, int key)
{
    int page = p->h > 3 ? p->h - 2 : 1;
    switch (key) {
    case KEY_UP:
    case 'k':
        select_row(app, p->sel < 0 ? 0 : p->sel - 1);
        return true;
    case KEY_DOWN:
    case 'j':
        select_row(app, p->sel + 1);
        return true;
    case KEY_PPAGE:
        select_row(app, p->sel - page);
        return true;
    case KEY_NPAGE:
        select_row(app, p->sel + page);
        return true;
    case KEY_HOME:
        select_row(app, 0);
        return true;
    case '<':
    case ',':
        app->sort = (enum tui_sort)((app->sort + TUI_SORT_NKEYS - 1) % TUI_SORT_NKEYS);
        tui_app_status(app, TUI_MSG_INFO, "nodes sorted by %s", tui_sort_name(app->sort));
        return true;
    case '>':
    case '.':
        app->sort = (enum tui_sort)((app->sort + 1) % TUI_SORT_NKEYS);
        tui_app_status(app, TUI_MSG_INFO, "nodes sorted by %s", tui_sort_name(app->sort));
        return true;
    case 'I':
        app->sort_desc = !app->sort_desc;
        return true;
    case '\n':
    case '\r':
    case KEY_ENTER:
        if (app->pane[TUI_P_TIMELINE].win) {
            app->focus = TUI_P_TIMELINE;
            tui_app_mark_all_dirty(app);
        }
        return true;
    default:
        return false;
    }
}

static bool nodes_mouse(struct tui_app *app, struct tui_pane *p, int y, int x, mmask_t b)
{
    if (b & BUTTON4_PRESSED) {
        select_row(app, p->sel - 1);
        return true;
    }
    if (b & BUTTON5_PRESSED) {
        select_row(app, p->sel + 1);
        return true;
    }
    if (y == 1) { /* a column header: sort by it, again to invert */
        int xs[C_N];
        node_columns(app, p->w, xs);
        for (int c = 0; c < C_N; c++)
            if (xs[c] >= 0 && x >= xs[c] && x < xs[c] + ncols[c].width) {
                if (ncols[c].sort == TUI_SORT_NKEYS)
                    continue;
                if (app->sort == ncols[c].sort)
                    app->sort_desc = !app->sort_desc;
                app->sort = ncols[c].sort;
                tui_app_status(app, TUI_MSG_INFO, "nodes sorted by %s", tui_sort_name(app->sort));
            }
        return true;
    }
    if (y >= 2)
        select_row(app, p->scroll + y - 2);
    return true;
}

/* ---- window table ---------------------------------------------------------- */

/*
 * An edge no longer probed (the plan changed, a node went down) keeps its
 * last windows: they go after the probed ones, dimmed.  Stale: nothing
 * came for it for two and a half window lengths while other edges were
 * heard from.  Told by arrival, not by window number: each agent numbers
 * windows by its own clock, and one far ahead would make every other edge
 * look old.  Fills order[]; returns how many are stale.
 */
static size_t windows_order(const tui_model_t *m, size_t *order, bool *stale)
{
    size_t ne = tui_model_nedges(m), k = 0, nstale = 0;
    int64_t newest = 0;
    double span = 0;
    for (size_t i = 0; i < ne; i++) {
        const struct tui_edge *e = tui_model_edge(m, i);
        if (e->last_ns > newest)
            newest = e->last_ns;
        if (e->nwin > 0 && e->win[0].to_ns > e->win[0].from_ns)
            span = fmax(span, (double)(e->win[0].to_ns - e->win[0].from_ns));
    }
    if (!(span > 0))
        span = 2e9;
    for (size_t i = 0; i < ne; i++) {
        const struct tui_edge *e = tui_model_edge(m, i);
        stale[i] = e->last_ns > 0 && (double)(newest - e->last_ns) > 2.5 * span;
        nstale += stale[i];
    }
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < ne; i++)
            if (stale[i] == (pass == 1))
                order[k++] = i;
    return nstale;
}

static void windows_draw(struct tui_app *app, struct tui_pane *p)
{
    size_t ne = tui_model_nedges(app->model);
    size_t *order = xmalloc((ne ? ne : 1) * sizeof *order);
    bool *stale = xmalloc((ne ? ne : 1) * sizeof *stale);
    size_t nstale = windows_order(app->model, order, stale);
    struct tui_summary s;
    tui_model_summary(app->model, &s);
    char title[320], loops[64] = "", stamp[64] = "", delay[64] = "";
    if (s.asym_unseen)
        snprintf(loops, sizeof loops, ", no loop: asymmetry unseen");
    else if (s.loops >= 0)
        snprintf(loops, sizeof loops, ", %d loop%s", s.loops, s.loops == 1 ? "" : "s");
    /* Short words: the title must hold the slow-host bound in a pane of 60 columns. */
    if (isfinite(s.stamp_asym_ns)) {
        char d[32];
        tui_fmt_dur(d, sizeof d, s.stamp_asym_ns);
        snprintf(stamp, sizeof stamp, ", stamps ±%s", d);
    }
    if (s.hosts_warming > 0) {
        /* Their ± takes their least margin: the nodes' ± say how much. */
        snprintf(delay, sizeof delay, ", hosts warming up");
    } else if (s.delay_ns > 0) {
        char d[32];
        tui_fmt_dur(d, sizeof d, s.delay_ns);
        snprintf(delay, sizeof delay, ", slow hosts ±%s", d);
    }
    char gone[48] = "";
    if (nstale > 0)
        snprintf(gone, sizeof gone, " (%zu not probed now)", nstale);
    snprintf(title, sizeof title, " Windows: %zu edge%s%s%s%s%s, newest first ", ne,
             ne == 1 ? "" : "s", gone, loops, stamp, delay);
    if (tui_strwidth(title) > p->w) /* the order goes first: the rows show it anyway */
        snprintf(title, sizeof title, " Windows: %zu edge%s%s%s%s%s ", ne, ne == 1 ? "" : "s", gone,
                 loops, stamp, delay);
    tui_draw_title(app, p, title);
    if (p->h < 2) {
        free(order);
        free(stale);
        return;
    }
    /* Narrow (beside the nodes at 150 columns and more): the edge, its
     * offset, ±, drift and loop residual stay longest. */
    static const struct {
        const char *name;
        int w, prio;
    } cols[] = {{"EDGE", 11, 0},  {"WIN", 8, 3},     {"SAMPLES", 10, 3}, {"PURE%", 6, 4},
                {"EST", 6, 5},    {"OFFSET", 13, 0}, {"DRIFT", 11, 2},   {"±UNC", 9, 1},
                {"MARGIN", 9, 4}, {"LOOP", 9, 2}};
    int xs[BASE_ARRAY_LEN(cols)], width[BASE_ARRAY_LEN(cols)], prio[BASE_ARRAY_LEN(cols)];
    for (size_t c = 0; c < BASE_ARRAY_LEN(cols); c++) {
        width[c] = cols[c].w;
        prio[c] = cols[c].prio;
    }
    pick_columns((int)BASE_ARRAY_LEN(cols), width, prio, p->w, xs);
    for (size_t c = 0; c < BASE_ARRAY_LEN(cols); c++) {
        if (xs[c] < 0)
            continue;
        if (c < 1)
            tui_put(p->win, 1, xs[c], cols[c].name, cols[c].w, app->role[R_COLHDR]);
        else
            put_right(p->win, 1, xs[c], cols[c].w, cols[c].name, app->role[R_COLHDR]);
    }
    int rows = p->h - 2;
    /* As many windows per edge as the rows allow, newest first. */
    int per = ne ? rows / (int)ne : 1;
    per = per < 1 ? 1 : per > TUI_WIN_HIST ? TUI_WIN_HIST : per;
    int total = 0;
    for (size_t i = 0; i < ne; i++) {
        int k = (int)tui_model_edge(app->model, i)->nwin;
        total += k < per ? (k ? k : 1) : per;
    }
    if (p->scroll > total - rows)
        p->scroll = total - rows;
    if (p->scroll < 0)
        p->scroll = 0;
    int line = 0;
    for (size_t oi = 0; oi < ne; oi++) {
        size_t i = order[oi];
        const struct tui_edge *e = tui_model_edge(app->model, i);
        int k = (int)e->nwin < per ? (int)e->nwin : per;
        for (int j = 0; j < (k ? k : 1); j++, line++) {
            int y = 2 + line - p->scroll;
            if (y < 2 || y >= p->h)
                continue;
            bool sel = app->sel_node >= 0 && (e->src == app->sel_node || e->dst == app->sel_node);
            chtype base = j > 0 || stale[i] ? app->role[R_DIM] : sel ? A_BOLD : A_NORMAL;
            char v[BASE_ARRAY_LEN(cols)][40];
            memset(v, 0, sizeof v);
            bool suspect = false;
            if (j == 0)
                snprintf(v[0], sizeof v[0], "n%u→n%u", e->src, e->dst);
            if (e->nwin == 0) {
                snprintf(v[1], sizeof v[1], "-");
            } else {
                const struct tui_win *w = &e->win[j];
                if (w->window >= 1000000) /* time-based window numbers: the last digits */
                    snprintf(v[1], sizeof v[1], "#…%06lld", (long long)(w->window % 1000000));
                else
                    snprintf(v[1], sizeof v[1], "#%lld", (long long)w->window);
                if (w->have_fit)
                    snprintf(v[2], sizeof v[2], "%u/%u", w->n_fwd, w->n_rev);
                else if (w->have_stats)
                    snprintf(v[2], sizeof v[2], "%llu", (unsigned long long)w->received);
                if (isfinite(w->pure_pct))
                    snprintf(v[3], sizeof v[3], "%.1f", w->pure_pct);
                snprintf(v[4], sizeof v[4], "%s", w->estimator);
                fmt_or_dash(v[5], sizeof v[5], w->offset_ns, tui_fmt_offset);
                if (isfinite(w->drift_ppb))
                    snprintf(v[6], sizeof v[6], "%+.3fppm", w->drift_ppb / 1000.0);
                if (isfinite(w->uncertainty_ns)) {
                    char d[24];
                    tui_fmt_dur(d, sizeof d, w->uncertainty_ns);
                    snprintf(v[7], sizeof v[7], "±%s", d);
                }
                fmt_or_dash(v[8], sizeof v[8], w->margin_ns, tui_fmt_dur);
                fmt_or_dash(v[9], sizeof v[9], w->residual_ns, tui_fmt_dur);
                /* Left out of the offsets: its path is longer one way. */
                suspect = w->suspect && isfinite(w->residual_ns);
                if (suspect)
                    strncat(v[9], "!", sizeof v[9] - strlen(v[9]) - 1);
                /* Left out of the solve: a clock jumped inside the window. */
                if (w->step) {
                    snprintf(v[9], sizeof v[9], "step");
                    suspect = true;
                }
            }
            for (size_t c = 0; c < BASE_ARRAY_LEN(cols); c++) {
                if (xs[c] < 0)
                    continue;
                if (c == 0)
                    tui_put(p->win, y, xs[c], v[c], cols[c].w, base);
                else
                    put_right(p->win, y, xs[c], cols[c].w, v[c][0] ? v[c] : "-",
                              c == 9 && suspect ? app->role[R_WARN] : base);
            }
        }
    }
    free(order);
    free(stale);
}

static bool windows_key(struct tui_app *app, struct tui_pane *p, int key)
{
    int page = p->h > 3 ? p->h - 2 : 1;
    switch (key) {
    case KEY_UP:
    case 'k':
        p->scroll--;
        return true;
    case KEY_DOWN:
    case 'j':
        p->scroll++;
        return true;
    case KEY_PPAGE:
        p->scroll -= page;
        return true;
    case KEY_NPAGE:
        p->scroll += page;
        return true;
    case KEY_HOME:
        p->scroll = 0;
        return true;
    default:
        return false;
    }
}

static bool windows_mouse(struct tui_app *app, struct tui_pane *p, int y, int x, mmask_t b)
{
    if (b & BUTTON4_PRESSED)
        p->scroll -= 3;
    else if (b & BUTTON5_PRESSED)
        p->scroll += 3;
    return true;
}

/* ---- collectives view ---------------------------------------------------------- */

static void coll_draw(struct tui_app *app, struct tui_pane *p)
{
    struct tui_coll_stats cs = {0};
    if (app->coll)
        tui_coll_stats(app->coll, &cs);
    size_t n = app->coll ? tui_coll_nrecent(app->coll) : 0;
    char title[200];
    snprintf(title, sizeof title,
             " Collectives: %" PRIu64 " (%" PRIu64 " late, %" PRIu64 " within ±, %" PRIu64
             " partial%s), newest first; Enter: timeline, c: windows ",
             cs.instances, cs.late, cs.within, cs.partial + cs.mismatch + cs.unaligned,
             cs.mismatch ? ", some mismatched" : "");
    if (tui_strwidth(title) > p->w) /* the counts first: the keys are in the help */
        snprintf(title, sizeof title,
                 " Collectives: %" PRIu64 " (%" PRIu64 " late, %" PRIu64 " within ±, %" PRIu64
                 " other) ",
                 cs.instances, cs.late, cs.within, cs.partial + cs.mismatch + cs.unaligned);
    tui_draw_title(app, p, title);
    if (p->h < 2)
        return;
    static const struct {
        const char *name;
        int w, prio;
    } cols[] = {{"OP", 10, 0},   {"STEP", 7, 3},    {"RANKS", 5, 2}, {"SKEW", 9, 0},
                {"LAST", 10, 0}, {"LATE", 9, 0},    {"±UNC", 8, 1},  {"CALL", 8, 0},
                {"XFER", 9, 4},  {"MISSING", 12, 4}};
    int xs[BASE_ARRAY_LEN(cols)], width[BASE_ARRAY_LEN(cols)], prio[BASE_ARRAY_LEN(cols)];
    for (size_t c = 0; c < BASE_ARRAY_LEN(cols); c++) {
        width[c] = cols[c].w;
        prio[c] = cols[c].prio;
    }
    pick_columns((int)BASE_ARRAY_LEN(cols), width, prio, p->w, xs);
    for (size_t c = 0; c < BASE_ARRAY_LEN(cols); c++)
        if (xs[c] >= 0)
            (c == 0 || c == 4 || c == 9
                 ? tui_put(p->win, 1, xs[c], cols[c].name, cols[c].w, app->role[R_COLHDR])
                 : put_right(p->win, 1, xs[c], cols[c].w, cols[c].name, app->role[R_COLHDR]));
    int rows = p->h - 2;
    if (n == 0) {
        tui_put(p->win, 2, 0, "no collective matched yet (NCCL/RCCL kernels, allreduce ranges …)",
                p->w, app->role[R_DIM]);
        return;
    }
    /* The selection stays on its instance while newer ones push it down. */
    p->sel = 0;
    for (size_t i = 0; app->coll_sel && i < n; i++)
        if (tui_coll_recent(app->coll, i)->seq == app->coll_sel) {
            p->sel = (int)i;
            break;
        }
    if (p->sel < p->scroll)
        p->scroll = p->sel;
    if (p->sel >= p->scroll + rows)
        p->scroll = p->sel - rows + 1;
    for (int r = 0; r < rows && p->scroll + r < (int)n; r++) {
        const struct tui_coll_inst *in = tui_coll_recent(app->coll, (size_t)(p->scroll + r));
        char v[BASE_ARRAY_LEN(cols)][48];
        memset(v, 0, sizeof v);
        bool full = in->verdict != TUI_COLL_PARTIAL;
        snprintf(v[0], sizeof v[0], "%s", in->op);
        if (in->step != TUI_COLL_NOSTEP)
            snprintf(v[1], sizeof v[1], "…%03" PRIu64, in->step % 1000);
        snprintf(v[2], sizeof v[2], "%zu", in->n);
        tui_fmt_dur(v[3], sizeof v[3], (double)in->skew_ns);
        if (full) {
            tui_coll_label(app->coll, in->last_part, v[4], sizeof v[4]);
            tui_fmt_dur(v[5], sizeof v[5], (double)in->lateness_ns);
        }
        if (isfinite(in->unc_ns)) {
            char d[24];
            tui_fmt_dur(d, sizeof d, in->unc_ns);
            snprintf(v[6], sizeof v[6], "±%s", d);
        }
        snprintf(v[7], sizeof v[7], "%s",
                 in->verdict == TUI_COLL_LATE       ? "late"
                 : in->verdict == TUI_COLL_WITHIN   ? "within±"
                 : in->verdict == TUI_COLL_PARTIAL  ? "partial"
                 : in->verdict == TUI_COLL_MISMATCH ? "mismatch"
                                                    : "raw");
        tui_fmt_dur(v[8], sizeof v[8], (double)in->transfer_ns);
        for (size_t i = 0; i < in->nmissing; i++) {
            char lab[32];
            tui_coll_label(app->coll, in->missing[i], lab, sizeof lab);
            size_t l = strlen(v[9]);
            snprintf(v[9] + l, sizeof v[9] - l, "%s%s", i ? " " : "", lab);
        }
        bool sel = p->scroll + r == p->sel && app->focus == TUI_P_WINDOWS;
        chtype base = sel ? app->role[R_SELECTED] : in->seq == app->hl.seq ? A_BOLD : A_NORMAL;
        for (size_t c = 0; c < BASE_ARRAY_LEN(cols); c++) {
            if (xs[c] < 0)
                continue;
            chtype a = base;
            if (!sel && c == 7)
                a = in->verdict == TUI_COLL_LATE     ? app->role[R_WARN]
                    : in->verdict == TUI_COLL_WITHIN ? base
                                                     : app->role[R_DIM];
            if (c == 0 || c == 4 || c == 9)
                tui_put(p->win, 2 + r, xs[c], v[c][0] ? v[c] : "-", cols[c].w, a);
            else
                put_right(p->win, 2 + r, xs[c], cols[c].w, v[c][0] ? v[c] : "-", a);
        }
    }
}

/* Jump the timeline to an instance: paused, its arrivals in view and marked. */
static void coll_jump(struct tui_app *app, const struct tui_coll_inst *in)
{
    struct tui_coll_hl *h = &app->hl;
    memset(h, 0, sizeof *h);
    h->seq = in->seq;
    for (size_t i = 0; i < in->n && h->n < TUI_HL_MAX; i++) {
        struct tui_coll_part pp;
        tui_coll_part(app->coll, in->arr[i].part, &pp);
        h->node[h->n] = pp.key.node;
        h->start[h->n] = in->arr[i].start;
        h->last[h->n++] = i + 1 == in->n && in->verdict != TUI_COLL_PARTIAL;
    }
    /* The arrivals, their skew an eighth of the view (the collective runs
     * on past its right edge: zoom out to see it end). */
    int64_t span = in->skew_ns * 8;
    if (span < 20000)
        span = 20000;
    app->clock = TUI_CLOCK_ALIGNED;
    app->span_ns = span;
    app->paused = true;
    if (app->replay)
        tui_replay_pause(app, true);
    app->right_ns = in->first_ns + span * 3 / 4;
    char lab[32];
    tui_coll_label(app->coll, in->last_part, lab, sizeof lab);
    char d[24];
    tui_fmt_dur(d, sizeof d, (double)in->lateness_ns);
    tui_app_status(app, TUI_MSG_INFO, "%s #%" PRIu64 ": %zu ranks, last %s by %s (%s)", in->op,
                   in->seq, in->n, in->verdict == TUI_COLL_PARTIAL ? "?" : lab, d,
                   tui_coll_verdict_name(in->verdict));
    tui_app_mark_all_dirty(app);
}

/* Select row `row` of the newest-first list (clamped); row 0 follows the newest. */
static void coll_select(struct tui_app *app, struct tui_pane *p, int row)
{
    int n = app->coll ? (int)tui_coll_nrecent(app->coll) : 0;
    row = row >= n ? n - 1 : row;
    row = row < 0 ? 0 : row;
    p->sel = row;
    app->coll_sel = row > 0 ? tui_coll_recent(app->coll, (size_t)row)->seq : 0;
}

static bool coll_key(struct tui_app *app, struct tui_pane *p, int key)
{
    int page = p->h > 3 ? p->h - 2 : 1;
    switch (key) {
    case KEY_UP:
    case 'k':
        coll_select(app, p, p->sel - 1);
        return true;
    case KEY_DOWN:
    case 'j':
        coll_select(app, p, p->sel + 1);
        return true;
    case KEY_PPAGE:
        coll_select(app, p, p->sel - page);
        return true;
    case KEY_NPAGE:
        coll_select(app, p, p->sel + page);
        return true;
    case KEY_HOME:
        coll_select(app, p, 0);
        return true;
    case '\n':
    case '\r':
    case KEY_ENTER: {
        const struct tui_coll_inst *in =
            app->coll && p->sel >= 0 ? tui_coll_recent(app->coll, (size_t)p->sel) : NULL;
        if (in) {
            app->coll_sel = in->seq; /* it stays selected */
            coll_jump(app, in);
        }
        return true;
    }
    default:
        return false;
    }
}

static bool coll_mouse(struct tui_app *app, struct tui_pane *p, int y, int x, mmask_t b)
{
    if (b & BUTTON4_PRESSED)
        coll_select(app, p, p->sel - 3);
    else if (b & BUTTON5_PRESSED)
        coll_select(app, p, p->sel + 3);
    else if (y >= 2)
        coll_select(app, p, p->scroll + y - 2);
    return true;
}

const struct tui_panel tui_panel_coll = {"collectives", true,       coll_draw,
                                         coll_key,      coll_mouse, NULL};

/* ---- status line -------------------------------------------------------------- */

static void status_draw(struct tui_app *app, struct tui_pane *p)
{
    if (app->tiny) {
        /* As much of the notice as the window holds, most important first. */
        char size[48];
        snprintf(size, sizeof size, "%dx%d, need 30x8", app->cols, app->rows);
        const char *lines[] = {"dptop: too small", size, "q quits"};
        for (int y = 0; y < p->h && y < 3; y++)
            tui_put(p->win, y, 0, lines[y], p->w, A_BOLD);
        return;
    }
    /* Where the tables take turns, say how to reach the other one. */
    const char *hint = !app->tables_shared                ? " ? help  q quit "
                       : app->slot_table == TUI_P_WINDOWS ? " Tab nodes  ? help  q quit "
                                                          : " Tab windows  ? help  q quit ";
    int hw = tui_strwidth(hint);
    int room = p->w - (p->w > hw + 20 ? hw : 0);
    if (app->filter_edit) {
        /* Narrow: the help goes first, then the long prompt, then the
         * text's beginning, so that what is typed stays in sight. */
        char buf[160];
        const char *text = app->filter_buf;
        snprintf(buf, sizeof buf, "filter by name: %s█   (Enter applies, Esc cancels)", text);
        if (tui_strwidth(buf) > room)
            snprintf(buf, sizeof buf, "filter by name: %s█", text);
        if (tui_strwidth(buf) > room)
            snprintf(buf, sizeof buf, "/%s█", text);
        while (tui_strwidth(buf) > room && *text) {
            text++;
            while ((*text & 0xC0) == 0x80) /* a whole character at a time */
                text++;
            snprintf(buf, sizeof buf, "/…%s█", text);
        }
        tui_put(p->win, 0, 0, buf, room, A_BOLD);
    } else if (app->status[0]) {
        chtype a = app->status_level == TUI_MSG_ERROR  ? app->role[R_ERROR]
                   : app->status_level == TUI_MSG_WARN ? app->role[R_WARN]
                                                       : A_NORMAL;
        tui_put(p->win, 0, 0, app->status, room, a);
    } else {
        int64_t at;
        const char *log = tui_model_last_log(app->model, &at);
        const struct tui_log_line *last = tui_model_log_line(app->model, 0);
        bool alert = last && last->level != 'I';
        if (log[0] && base_realtime_ns() - at < 30000000000LL) {
            char buf[300];
            snprintf(buf, sizeof buf, "%s%s", log, alert ? "  (L: the log)" : "");
            tui_put(p->win, 0, 0, buf, room, alert ? app->role[R_WARN] : app->role[R_DIM]);
        } else if (app->filter[0]) {
            char buf[96];
            snprintf(buf, sizeof buf, "filter: \"%s\" (Esc clears)", app->filter);
            tui_put(p->win, 0, 0, buf, room, app->role[R_DIM]);
        }
    }
    if (room < p->w)
        tui_put(p->win, 0, p->w - hw, hint, hw, app->role[R_HEADER]);
}

/* ---- help overlay ---------------------------------------------------------------- */

static const char *const help_lines[] = {
    "q            quit (children of --demo stop too)",
    "?  F1        this help (any other key closes it; ↑↓ scroll it)",
    "space        pause / resume (the timeline stops following)",
    "+  -         zoom the timeline in / out (mouse wheel too)",
    "←  →  h  l   pan a quarter of the view; End: back to live",
    "a            aligned (global time base) / raw (each node's clock)",
    "e            expand lanes: one per GPU queue and host thread",
    "/            filter events by name (Enter applies, Esc clears)",
    "L            the log: the nodes' messages and alerts, newest first",
    "Tab  S-Tab   cycle the focus: nodes, windows, timeline (a screen",
    "             too short for both tables shows the last one focused)",
    "↑  ↓  j  k   select a node / scroll the focused table",
    "<  >  I      node table: previous / next sort column, invert",
    "click        select a row or lane; click a column head: sort",
    "Enter        nodes: jump to the timeline",
    "c            collectives (in the windows' place): newest first, last",
    "             rank and its lateness ± what the clocks tell apart;",
    "             Enter jumps the timeline there, its ranks marked",
    "s            snapshot: Chrome trace of what is buffered",
    "r            start / stop recording the bus (live only)",
    "[  ]  PgUp/PgDn  replay: seek -10 s / +10 s",
    "^L           redraw the screen",
    "",
    "Timeline: one lane per node (device work), blocks named by kernel;",
    "magenta blocks are collectives.  Aligned, every step's collective",
    "lines up across lanes; raw, they are staggered by the clock offsets.",
    "Lanes marked ⚠ belong to unaligned nodes: drawn on their raw clock.",
    "Node table: OFFSET is global − node clock at the time in the title,",
    "±UNC the 95 % bound of the time base, * marks the reference node.",
    "Path asymmetry shows only in loops of the probe graph (Windows",
    "title); with none, ±UNC cannot include it: probe more node pairs.",
    "A host's own stamp asymmetry shows in no loop: ±UNC includes what",
    "the master assumes of it (Windows title; dpnode --stamp-asym-ns).",
    "Node LATE: a node's smoothed lateness at collectives (arrival −",
    "the median of the others'): high and steady, a chronic straggler.",
    "Windows table: ±UNC is the edge fit's own statistical bound; no edge",
    "sees its path's asymmetry, so it is narrower than the error: the",
    "nodes' ±UNC is the one to trust.",
};

int tui_help_lines(void)
{
    return (int)BASE_ARRAY_LEN(help_lines);
}

/* The overlay's lines: the keys, or the log (one line saying it is empty). */
static int overlay_total(const struct tui_app *app)
{
    if (!app->help_log)
        return (int)BASE_ARRAY_LEN(help_lines);
    struct tui_log_stats st;
    tui_model_log_stats(app->model, &st);
    return st.lines ? (int)st.lines : 1;
}

static const char *overlay_line(const struct tui_app *app, int i, char *buf, size_t len,
                                chtype *attr)
{
    *attr = A_NORMAL;
    if (!app->help_log)
        return help_lines[i];
    const struct tui_log_line *l = tui_model_log_line(app->model, (size_t)i);
    if (l == NULL)
        return "(nothing logged yet)";
    time_t t = (time_t)(l->arrival_ns / 1000000000LL);
    struct tm tm;
    char hms[16] = "--:--:--";
    if (localtime_r(&t, &tm))
        strftime(hms, sizeof hms, "%H:%M:%S", &tm);
    char who[16] = "";
    if (l->node >= 0)
        snprintf(who, sizeof who, "n%d ", l->node);
    snprintf(buf, len, "%s %s%c %s", hms, who, l->level, l->text);
    *attr = l->level == 'E' ? app->role[R_ERROR] : l->level == 'W' ? app->role[R_WARN] : A_NORMAL;
    return buf;
}

/* The first line shown, kept where the last page still fills the box. */
static int help_top(const struct tui_app *app, int shown)
{
    int most = overlay_total(app) - shown;
    int top = app->help_top;
    if (top > most)
        top = most;
    return top < 0 ? 0 : top;
}

bool tui_help_scroll(struct tui_app *app, int ch)
{
    int shown = app->pane[TUI_P_HELP].h - 2;
    if (shown <= 0 || shown >= overlay_total(app))
        return false;
    int top = help_top(app, shown);
    switch (ch) {
    case KEY_UP:
    case 'k':
        top--;
        break;
    case KEY_DOWN:
    case 'j':
        top++;
        break;
    case KEY_PPAGE:
        top -= shown - 1;
        break;
    case KEY_NPAGE:
    case ' ':
        top += shown - 1;
        break;
    case KEY_HOME:
    case 'g':
        top = 0;
        break;
    case KEY_END:
    case 'G':
        top = overlay_total(app);
        break;
    default:
        return false;
    }
    app->help_top = top < 0 ? 0 : top;
    app->help_top = help_top(app, shown);
    app->pane[TUI_P_HELP].dirty = true;
    return true;
}

static void help_draw(struct tui_app *app, struct tui_pane *p)
{
    int shown = p->h - 2, total = overlay_total(app);
    int top = help_top(app, shown);
    wattrset(p->win, app->role[R_TITLE]);
    wborder_set(p->win, WACS_VLINE, WACS_VLINE, WACS_HLINE, WACS_HLINE, WACS_ULCORNER,
                WACS_URCORNER, WACS_LLCORNER, WACS_LRCORNER);
    wattrset(p->win, A_NORMAL);
    char title[160] = " dptop keys ";
    if (app->help_log) {
        struct tui_log_stats st;
        tui_model_log_stats(app->model, &st);
        int n = snprintf(title, sizeof title,
                         " log, newest first: %llu warnings, %llu errors of %llu lines ",
                         (unsigned long long)st.warnings, (unsigned long long)st.errors,
                         (unsigned long long)st.total);
        if (st.dropped && n > 0 && (size_t)n < sizeof title)
            snprintf(title + n - 1, sizeof title - (size_t)n + 1, " (%llu oldest not kept) ",
                     (unsigned long long)st.dropped);
    }
    tui_put(p->win, 0, 2, title, p->w - 4, app->role[R_TITLE]);
    for (int i = 0; top + i < total && i < shown; i++) {
        char buf[256];
        chtype attr;
        const char *line = overlay_line(app, top + i, buf, sizeof buf, &attr);
        tui_put(p->win, i + 1, 2, line, p->w - 4, attr);
    }
    if (shown > 0 && shown < total) {
        /* Too short for every line: say where it is and how to move. */
        char where[96];
        snprintf(where, sizeof where, " %d–%d of %d, ↑↓ PgUp PgDn scroll ", top + 1, top + shown,
                 total);
        int ww = tui_strwidth(where);
        tui_put(p->win, p->h - 1, p->w - 2 - ww > 1 ? p->w - 2 - ww : 1, where, p->w - 2,
                app->role[R_TITLE]);
    }
}

/* ---- the table ----------------------------------------------------------------------- */

static const struct tui_panel panel_header = {.name = "header", .draw = header_draw};
static const struct tui_panel panel_nodes = {
    .name = "nodes", .focusable = true, .draw = nodes_draw, .key = nodes_key, .mouse = nodes_mouse};
static const struct tui_panel panel_windows = {.name = "windows",
                                               .focusable = true,
                                               .draw = windows_draw,
                                               .key = windows_key,
                                               .mouse = windows_mouse};
static const struct tui_panel panel_timeline = {.name = "timeline",
                                                .focusable = true,
                                                .draw = tui_timeline_draw,
                                                .key = tui_timeline_key,
                                                .mouse = tui_timeline_mouse};
static const struct tui_panel panel_status = {.name = "status", .draw = status_draw};
static const struct tui_panel panel_help = {.name = "help", .draw = help_draw};

const struct tui_panel *const tui_panels[TUI_P_NPANES] = {
    [TUI_P_HEADER] = &panel_header,   [TUI_P_NODES] = &panel_nodes,
    [TUI_P_WINDOWS] = &panel_windows, [TUI_P_TIMELINE] = &panel_timeline,
    [TUI_P_STATUS] = &panel_status,   [TUI_P_HELP] = &panel_help,
};
