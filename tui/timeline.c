/*
 * The timeline panel: a time axis with labelled ticks, then one lane per
 * node (its GPU work, one row), or with `e` one lane per GPU queue and per
 * host thread (nested ranges packed into up to three rows).
 *
 * Placing events: per node and frame, the map trace clock -> axis (aligned
 * or raw, tui_model_to_axis) is linearised around the middle of the view
 * with a few exact conversions.  Across one screen the map is affine to far
 * better than a column (drift changes by ppb between windows), so every
 * event costs two multiplications instead of two conversions, and a frame
 * stays cheap with millions of events buffered.  When events are narrower
 * than a column, a column shows the first event that starts in it and the
 * rest of that column is skipped by binary search: the work per lane is
 * bounded by its width, not by the events it holds.
 */
#include "tui/tui_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ITER_PER_LANE 200000 /* events visited per lane and frame, at most */
#define HOST_LEVELS       3

struct nodemap {
    bool ok;
    unsigned flags;
    int64_t lc, gc; /* local and axis time of the linearisation point */
    double slope;   /* d axis / d local */
};

static int64_t nm_axis(const struct nodemap *m, int64_t local)
{
    return m->gc + (int64_t)llround((double)(local - m->lc) * m->slope);
}

static int64_t nm_local(const struct nodemap *m, int64_t axis)
{
    return m->lc + (int64_t)llround((double)(axis - m->gc) / m->slope);
}

/* Linearise the node's map near axis time `center`, starting from local `hint`. */
static void node_map(struct tui_app *app, uint16_t node, int64_t hint, int64_t center,
                     struct nodemap *m)
{
    memset(m, 0, sizeof *m);
    int64_t g0, g1;
    unsigned f0, f1;
    if (tui_model_to_axis(app->model, node, hint, app->clock, &g0, &f0) != BASE_OK ||
        tui_model_to_axis(app->model, node, hint + 1000000000LL, app->clock, &g1, &f1) != BASE_OK)
        return;
    double slope = (double)(g1 - g0) / 1e9;
    if (!(slope > 0.5 && slope < 2.0))
        slope = 1.0;
    int64_t l = hint + (int64_t)llround((double)(center - g0) / slope), g = g0;
    unsigned f = f0;
    for (int it = 0; it < 2; it++) {
        if (tui_model_to_axis(app->model, node, l, app->clock, &g, &f) != BASE_OK)
            return;
        if (g == center)
            break;
        l += (int64_t)llround((double)(center - g) / slope);
    }
    tui_model_to_axis(app->model, node, l, app->clock, &g, &f);
    m->ok = true;
    m->lc = l;
    m->gc = g;
    m->slope = slope;
    m->flags = f | f0;
}

static chtype event_role(struct tui_app *app, const tui_ev_t *e, bool raw)
{
    if (raw)
        return app->role[R_EV_RAW];
    if (e->flags & GPU_EVF_COLLECTIVE)
        return app->role[R_EV_COLLECTIVE];
    switch (e->kind) {
    case GPU_EV_KERNEL:
        return app->role[e->name_id & 1 ? R_EV_KERNEL_A : R_EV_KERNEL_B];
    case GPU_EV_MEMCPY:
    case GPU_EV_MEMSET:
        return app->role[R_EV_COPY];
    case GPU_EV_API:
        return app->role[R_EV_API];
    case GPU_EV_SYNC:
        return app->role[R_EV_SYNC];
    case GPU_EV_STEP:
        return app->role[R_EV_STEP];
    default:
        return app->role[R_EV_RANGE];
    }
}

struct lane_ctx {
    struct tui_app *app;
    WINDOW *win;
    int y, x0, w;
    tui_axis_t ax;
    const struct nodemap *nm;
    bool raw;
};

bool tui_name_matches(const char *filter, const char *name)
{
    if (!filter[0])
        return true;
    return name && strcasestr(name, filter);
}

static bool name_matches(struct tui_app *app, uint16_t node, uint32_t pid, const tui_ev_t *e)
{
    if (!app->filter[0])
        return true;
    return tui_name_matches(app->filter, tui_model_name(app->model, node, pid, e->name_id));
}

/* Paint columns [c0, c1] with the event's block and as much of its name as fits. */
static void paint(struct lane_ctx *c, int c0, int c1, chtype attr, const char *name)
{
    int n = c1 - c0 + 1;
    mvwhline(c->win, c->y, c->x0 + c0, ' ' | attr, n);
    /* A blank last cell keeps the names of adjacent blocks apart. */
    if (n >= 3 && name)
        tui_put(c->win, c->y, c->x0 + c0, name, n >= 5 ? n - 1 : n, attr);
}

/*
 * Draw the events of one track on the lane.  level >= 0: only the events the
 * packing put on that row (host tracks, expanded).
 */
static void draw_track(struct lane_ctx *c, size_t ti, int level)
{
    struct tui_app *app = c->app;
    tui_store_t *st = tui_model_store(app->model);
    const struct tui_track_info *info = tui_store_track(st, ti);
    if (info->count == 0)
        return;
    int64_t vis0 = nm_local(c->nm, c->ax.t0), vis1 = nm_local(c->nm, c->ax.t0 + c->ax.span_ns);
    int64_t col_ns = c->ax.span_ns / c->ax.cols;
    bool jump = info->max_dur <= col_ns && level < 0;
    size_t k = tui_store_lower_bound(st, ti, vis0 - info->max_dur - 1);
    int drawn_to = -1;
    /* Packing state for nested host ranges. */
    int64_t ends[HOST_LEVELS] = {0};
    size_t used = 0;
    for (size_t it = 0; k < info->count && it < MAX_ITER_PER_LANE; k++, it++) {
        const tui_ev_t *e = tui_store_ev(st, ti, k);
        if (e->start > vis1)
            break;
        if (level >= 0) {
            size_t r = 0;
            while (r < used && ends[r] > e->start)
                r++;
            if (r == used && used < HOST_LEVELS)
                used++;
            if (r < used)
                ends[r] = e->end;
            if ((int)r != level)
                continue;
        }
        if (e->end < vis0)
            continue;
        if (!name_matches(app, info->key.node, info->key.pid, e))
            continue;
        int64_t g0 = nm_axis(c->nm, e->start), g1 = nm_axis(c->nm, e->end);
        int c0 = tui_axis_col(&c->ax, g0);
        int c1 = g1 > g0 ? tui_axis_col(&c->ax, g1 - 1) : c0;
        if (c1 < 0 || c0 >= c->w)
            continue;
        if (jump && c0 <= drawn_to) {
            /* Inside a column already painted: skip to the next column. */
            int64_t next = nm_local(c->nm, tui_axis_time(&c->ax, drawn_to + 1));
            size_t nk = tui_store_lower_bound(st, ti, next);
            if (nk > k + 1)
                k = nk - 1;
            continue;
        }
        if (c0 < 0)
            c0 = 0;
        if (c1 >= c->w)
            c1 = c->w - 1;
        const char *name = tui_model_name(app->model, info->key.node, info->key.pid, e->name_id);
        char fallback[40];
        if (name == NULL) { /* its names message has not arrived (yet): say what it is */
            snprintf(fallback, sizeof fallback, "%s#%u",
                     gpu_event_kind_name((enum gpu_event_kind)e->kind), e->name_id);
            name = fallback;
        }
        paint(c, c0, c1, event_role(app, e, c->raw), name);
        if (c1 > drawn_to)
            drawn_to = c1;
    }
}

/* ---- lanes --------------------------------------------------------------- */

static struct tui_lane *add_lane(struct tui_app *app)
{
    if (app->nlanes == app->caplanes) {
        app->caplanes = app->caplanes ? 2 * app->caplanes : 64;
        app->lanes = xreallocarray(app->lanes, app->caplanes, sizeof *app->lanes);
    }
    struct tui_lane *l = &app->lanes[app->nlanes++];
    memset(l, 0, sizeof *l);
    l->track = -1;
    l->level = -1;
    return l;
}

static int cmp_track_key(const void *pa, const void *pb, void *arg)
{
    const tui_store_t *st = arg;
    const struct tui_track_key *a = &tui_store_track(st, *(const size_t *)pa)->key;
    const struct tui_track_key *b = &tui_store_track(st, *(const size_t *)pb)->key;
    if (a->host != b->host)
        return a->host ? -1 : 1;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    if (a->device != b->device)
        return a->device < b->device ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* Tracks of one node in a stable order, host threads first; returns the count. */
static size_t node_tracks(tui_store_t *st, uint16_t node, size_t *out, size_t max)
{
    size_t n = 0, nt = tui_store_ntracks(st);
    for (size_t i = 0; i < nt && n < max; i++)
        if (tui_store_track(st, i)->key.node == node)
            out[n++] = i;
    qsort_r(out, n, sizeof *out, cmp_track_key, st);
    return n;
}

static void build_lanes_as(struct tui_app *app, bool expand);

/* Lanes for this frame: expanded when asked, or (until `e`) when they all fit. */
static void build_lanes(struct tui_app *app, int rows)
{
    if (app->expand_auto) {
        build_lanes_as(app, true);
        app->lanes_all = app->nlanes; /* the layout gives the windows what is left */
        app->expand = (int)app->nlanes <= rows;
        if (app->expand)
            return;
    }
    build_lanes_as(app, app->expand);
    if (app->expand)
        app->lanes_all = app->nlanes;
}

static void build_lanes_as(struct tui_app *app, bool expand)
{
    app->nlanes = 0;
    tui_store_t *st = tui_model_store(app->model);
    size_t tracks[256];
    for (size_t i = 0; i < tui_model_nnodes(app->model); i++) {
        const struct tui_node *n = tui_model_node(app->model, i);
        struct tui_lane *l = add_lane(app);
        l->node = n->id;
        l->node_row = true;
        snprintf(l->label, sizeof l->label, "n%u %.32s", n->id, n->host);
        if (!expand)
            continue;
        size_t nt = node_tracks(st, n->id, tracks, BASE_ARRAY_LEN(tracks));
        /* Two processes on a node each have a gpu0 s1: their pids tell them
         * apart (host lanes are told apart by their tids already). */
        bool pids = false;
        for (size_t j = 1; j < nt && !pids; j++)
            pids =
                tui_store_track(st, tracks[j])->key.pid != tui_store_track(st, tracks[0])->key.pid;
        for (size_t j = 0; j < nt; j++) {
            const struct tui_track_info *t = tui_store_track(st, tracks[j]);
            int levels = t->key.host ? HOST_LEVELS : 1;
            for (int lv = 0; lv < levels; lv++) {
                l = add_lane(app);
                l->node = n->id;
                l->track = (int)tracks[j];
                l->level = t->key.host ? lv : -1;
                /* Imported lanes (pids from 2^31, docs/IMPORT.md): "fN" the --import file. */
                unsigned file =
                    (t->key.pid & 0x80000000u) ? (t->key.pid & 0x7fffffffu) / 100000u : 0;
                if (lv > 0)
                    snprintf(l->label, sizeof l->label, "   ·");
                else if (file && t->key.host)
                    snprintf(l->label, sizeof l->label, " f%u host %u", file, t->key.id);
                else if (file)
                    snprintf(l->label, sizeof l->label, " f%u gpu%u s%u", file, t->key.device,
                             t->key.id);
                else if (t->key.host)
                    snprintf(l->label, sizeof l->label, " host %u", t->key.id);
                else if (pids)
                    snprintf(l->label, sizeof l->label, " gpu%u s%u p%u", t->key.device, t->key.id,
                             t->key.pid);
                else
                    snprintf(l->label, sizeof l->label, " gpu%u s%u", t->key.device, t->key.id);
            }
        }
    }
}

/* The latest local time held for a node (a starting point for its map). */
static bool node_hint(tui_store_t *st, uint16_t node, int64_t *hint)
{
    bool any = false;
    for (size_t i = 0; i < tui_store_ntracks(st); i++) {
        const struct tui_track_info *t = tui_store_track(st, i);
        if (t->key.node == node && t->count > 0 && (!any || t->last_end > *hint)) {
            *hint = t->last_end;
            any = true;
        }
    }
    return any;
}

/* ---- drawing ------------------------------------------------------------------ */

static int label_width(int w)
{
    return w >= 100 ? 18 : w >= 60 ? 12 : 6;
}

static void draw_axis(struct tui_app *app, struct tui_pane *p, int y, int lw, const tui_axis_t *ax)
{
    int w = p->w - lw;
    mvwhline_set(p->win, y, lw, WACS_HLINE, w);
    struct tui_tick ticks[64];
    /* No data yet, so no t0: count from the edge's second, not from 1970. */
    int64_t origin = app->origin_ns ? app->origin_ns : app->edge_ns - app->edge_ns % 1000000000LL;
    size_t n = tui_axis_ticks(ax, origin, 14, ticks, BASE_ARRAY_LEN(ticks));
    int free_from = 0;
    for (size_t i = 0; i < n; i++) {
        int c = ticks[i].col;
        if (c < 0 || c >= w)
            continue;
        wattrset(p->win, app->role[R_AXIS]);
        mvwadd_wch(p->win, y, lw + c, WACS_TTEE);
        wattrset(p->win, A_NORMAL);
        if (c + 1 >= free_from) {
            char lab[40];
            snprintf(lab, sizeof lab, "%s", ticks[i].label);
            int used = tui_put(p->win, y, lw + c + 1, lab, w - c - 1, app->role[R_AXIS]);
            free_from = c + 1 + used + 1;
        }
    }
}

/* Whether a node took part in the instance the collectives view jumped to:
 * 0 no, 1 yes, 2 it was the last to arrive. */
static int coll_marked(const struct tui_app *app, uint16_t node)
{
    int r = 0;
    for (size_t i = 0; i < app->hl.n; i++)
        if (app->hl.node[i] == node)
            r = app->hl.last[i] ? 2 : r ? r : 1;
    return r;
}

/* Its arrivals on the node's lane: '▼' in the column each started (aligned axis only). */
static void coll_marks(struct tui_app *app, WINDOW *win, int y, int lw, int w, const tui_axis_t *ax,
                       uint16_t node)
{
    if (app->clock != TUI_CLOCK_ALIGNED)
        return;
    for (size_t i = 0; i < app->hl.n; i++) {
        if (app->hl.node[i] != node)
            continue;
        int col = tui_axis_col(ax, app->hl.start[i]);
        if (col < 0 || col >= w)
            continue;
        tui_put(win, y, lw + col, "▼", 1, app->hl.last[i] ? app->role[R_WARN] : A_BOLD);
    }
}

void tui_timeline_draw(struct tui_app *app, struct tui_pane *p)
{
    int lw = label_width(p->w);
    int w = p->w - lw;
    tui_axis_t ax;
    tui_app_axis(app, w, &ax);
    build_lanes(app, p->h - 2);
    tui_store_t *st = tui_model_store(app->model);

    /* Per node: the map onto the axis, linearised at the view's centre. */
    size_t nn = tui_model_nnodes(app->model);
    struct nodemap *maps = xcalloc(nn ? nn : 1, sizeof *maps);
    int64_t center = ax.t0 + ax.span_ns / 2;
    int raw_nodes = 0;
    char raw_list[64] = "";
    for (size_t i = 0; i < nn; i++) {
        const struct tui_node *n = tui_model_node(app->model, i);
        int64_t hint;
        if (node_hint(st, n->id, &hint))
            node_map(app, n->id, hint, center, &maps[i]);
        if (app->clock == TUI_CLOCK_ALIGNED && maps[i].ok && (maps[i].flags & TUI_T_RAW)) {
            if (raw_nodes++ < 4) {
                size_t l = strlen(raw_list);
                snprintf(raw_list + l, sizeof raw_list - l, "%sn%u", l ? "," : "", n->id);
            }
        }
    }

    char title[300], span[32], base[64];
    tui_fmt_dur(span, sizeof span, (double)ax.span_ns);
    int ref = tui_model_ref(app->model);
    if (app->clock == TUI_CLOCK_ALIGNED && ref >= 0)
        snprintf(base, sizeof base, "ALIGNED: global time (n%d's clock)", ref);
    else if (app->clock == TUI_CLOCK_ALIGNED)
        snprintf(base, sizeof base, "ALIGNED: global time");
    else
        snprintf(base, sizeof base, "RAW: each node's own clock");
    snprintf(title, sizeof title, " Timeline  %s  span %s  %s%s%s%s ", base, span,
             app->paused   ? "■ paused"
             : app->replay ? "▶ replay"
                           : "▶ live",
             app->expand ? "  lanes per stream" : "", app->filter[0] ? "  filter: " : "",
             app->filter);
    tui_draw_title(app, p, title);
    if (raw_nodes) {
        char warn[128];
        snprintf(warn, sizeof warn, " ⚠ unaligned on raw clock: %s%s ", raw_list,
                 raw_nodes > 4 ? ",…" : "");
        int ww = tui_strwidth(warn);
        if (ww < p->w / 2)
            tui_put(p->win, 0, p->w - ww, warn, ww, app->role[R_WARN]);
    }
    if (p->h < 3 || w < 4) {
        free(maps);
        return;
    }
    draw_axis(app, p, 1, lw, &ax);
    tui_put(p->win, 1, 0, "t − t0", lw, app->role[R_DIM]);

    int rows = p->h - 2;
    /* Keep the selected node's first lane on screen. */
    for (size_t i = 0; i < app->nlanes; i++)
        if (app->lanes[i].node_row && (int)app->lanes[i].node == app->sel_node) {
            if ((int)i < p->scroll)
                p->scroll = (int)i;
            if ((int)i >= p->scroll + rows)
                p->scroll = (int)i - rows + 1;
        }
    if (p->scroll > (int)app->nlanes - rows)
        p->scroll = (int)app->nlanes - rows;
    if (p->scroll < 0)
        p->scroll = 0;

    size_t tracks[256];
    for (int r = 0; r < rows && p->scroll + r < (int)app->nlanes; r++) {
        const struct tui_lane *l = &app->lanes[p->scroll + r];
        int y = 2 + r;
        size_t mi = 0;
        while (mi < nn && tui_model_node(app->model, mi)->id != l->node)
            mi++;
        const struct tui_node *n = mi < nn ? tui_model_node(app->model, mi) : NULL;
        const struct nodemap *m = mi < nn ? &maps[mi] : NULL;
        bool raw = app->clock == TUI_CLOCK_ALIGNED && m && m->ok && (m->flags & TUI_T_RAW);
        bool down = n && n->state == TUI_NODE_DOWN;
        bool sel = l->node_row && (int)l->node == app->sel_node;
        chtype la = sel ? app->role[R_SELECTED] : l->node_row ? A_BOLD : app->role[R_DIM];
        int hl = l->node_row ? coll_marked(app, l->node) : 0;
        if (hl && !sel)
            la = hl > 1 ? app->role[R_WARN] : A_BOLD | A_UNDERLINE;
        if (l->node_row && (raw || down)) {
            char lab[64];
            snprintf(lab, sizeof lab, "%s%s", raw ? "⚠" : "✖", l->label);
            tui_put(p->win, y, 0, lab, lw - 1,
                    sel   ? la
                    : raw ? app->role[R_UNALIGNED]
                          : app->role[R_DOWN]);
        } else {
            tui_put(p->win, y, 0, l->label, lw - 1, la);
        }
        mvwadd_wch(p->win, y, lw - 1, WACS_VLINE);
        if (m == NULL || !m->ok)
            continue;
        struct lane_ctx c = {app, p->win, y, lw, w, ax, m, raw};
        if (l->track >= 0) {
            draw_track(&c, (size_t)l->track, l->level);
            continue;
        }
        /* A node row: its GPU queues; a node without any shows its host threads. */
        size_t nt = node_tracks(st, l->node, tracks, BASE_ARRAY_LEN(tracks));
        bool dev = false;
        for (size_t j = 0; j < nt; j++)
            dev |= !tui_store_track(st, tracks[j])->key.host;
        for (size_t j = 0; j < nt; j++)
            if (tui_store_track(st, tracks[j])->key.host != dev)
                draw_track(&c, tracks[j], -1);
        if (hl)
            coll_marks(app, p->win, y, lw, w, &ax, l->node);
    }
    free(maps);
}

/* ---- input ----------------------------------------------------------------------- */

static void select_lane_node(struct tui_app *app, int dir)
{
    if (app->nlanes == 0)
        return;
    int cur = -1;
    for (size_t i = 0; i < app->nlanes; i++)
        if (app->lanes[i].node_row && (int)app->lanes[i].node == app->sel_node)
            cur = (int)i;
    for (int i = cur + dir; i >= 0 && i < (int)app->nlanes; i += dir)
        if (app->lanes[i].node_row) {
            app->sel_node = app->lanes[i].node;
            return;
        }
    if (cur < 0)
        app->sel_node = app->lanes[0].node;
}

bool tui_timeline_key(struct tui_app *app, struct tui_pane *p, int key)
{
    switch (key) {
    case KEY_UP:
    case 'k':
        select_lane_node(app, -1);
        app->pane[TUI_P_NODES].dirty = true;
        return true;
    case KEY_DOWN:
    case 'j':
        select_lane_node(app, 1);
        app->pane[TUI_P_NODES].dirty = true;
        return true;
    case KEY_HOME:
        p->scroll = 0;
        return true;
    default:
        return false;
    }
}

bool tui_timeline_mouse(struct tui_app *app, struct tui_pane *p, int y, int x, mmask_t b)
{
    int lw = label_width(p->w);
    tui_axis_t ax;
    tui_app_axis(app, p->w - lw, &ax);
    int64_t at = x >= lw ? tui_axis_time(&ax, x - lw) : ax.t0 + ax.span_ns / 2;
    if (b & (BUTTON4_PRESSED | BUTTON5_PRESSED)) {
        /* The wheel zooms around the time under the pointer. */
        if (!app->paused) {
            app->paused = true;
            app->right_ns = app->edge_ns;
        }
        tui_app_zoom(app, (b & BUTTON4_PRESSED) ? 1 : -1, at);
        return true;
    }
    int i = p->scroll + y - 2;
    if (y >= 2 && i < (int)app->nlanes) {
        app->sel_node = app->lanes[i].node;
        app->pane[TUI_P_NODES].dirty = true;
    }
    return true;
}
