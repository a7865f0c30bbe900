/*
 * bench_tui — the console's cost (SPEC §9: "dptop frame time with 64 nodes
 * and a full event budget").
 *
 *   frames   64 simulated nodes (gpu/ simulated workload, each on its own
 *            clock, with snapshot pairs and node fits) fill the event budget
 *            (2 Mi events) through the real bus message path; then the live
 *            console runs on a 200x50 terminal rendered by ncurses into
 *            /dev/null: every frame ingests the next 100 ms of all 64 nodes
 *            (evicting as much, the budget stays full) and draws.  Frame
 *            times are taken with every panel redrawn (worst case) and as
 *            the console runs (only what changed), and for a view zoomed out
 *            over the whole buffer.  Baseline in the same run: the same
 *            frame with an empty model (64 nodes, no events).
 *   idle     dptop itself on a pseudo-terminal, 10 frames/s, no cluster:
 *            its CPU share over 10 s (getrusage of the child).  With dpnode
 *            built, also `dptop --demo` (4 nodes): dptop's own share.
 *   export   Chrome trace writer throughput over the full buffer.
 *
 * Goals (task): p99 frame <= 5 ms; idle CPU <= 3 %.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "tui/tui.h"

#define NODES   64
#define STEP_NS 100000000LL
#define T_START 1790000000000000000LL
#define Q_NS    ((int64_t)(T_START - 5000000000000LL)) /* realtime − monotonic on every node */

struct sim_node {
    gpu_sim_t *sim;
    int node;
    double off_ns, drift_ppm;
};

struct feed {
    tui_model_t *m;
    int node;
    int64_t arrival;
};

/* True time -> the node's trace clock (and probe clock = trace + Q). */
static int64_t node_trace(void *ctx, int64_t t)
{
    const struct sim_node *n = ctx;
    return t - Q_NS + (int64_t)n->off_ns + (int64_t)(n->drift_ppm * 1e-6 * (double)(t - T_START));
}

static void on_gpu(void *ctx, const gpu_msg_t *msg)
{
    struct feed *f = ctx;
    bus_msg_t *m = NULL;
    if (msg->kind == GPU_MSG_EV) {
        m = bus_msg_new(BUS_K_EV);
        bus_msg_set_i64(m, "node", f->node);
        bus_msg_set_i64(m, "pid", msg->pid);
        bus_msg_set_i64(m, "count", (int64_t)msg->nev);
        bus_msg_set_u64(m, "dropped", 0);
        gpu_batch_encode(msg->ev, msg->nev, bus_msg_payload_alloc(m, gpu_batch_size(msg->nev)));
    } else if (msg->kind == GPU_MSG_NAMES) {
        m = bus_msg_new(BUS_K_NAMES);
        bus_msg_set_i64(m, "node", f->node);
        bus_msg_set_i64(m, "pid", msg->pid);
        json_object *arr = json_object_new_array();
        for (size_t i = 0; i < msg->nnames; i++) {
            json_object *p = json_object_new_array();
            json_object_array_add(p, json_object_new_int64(msg->name_ids[i]));
            json_object_array_add(p, json_object_new_string(msg->name_strs[i]));
            json_object_array_add(arr, p);
        }
        json_object_object_add(bus_msg_header(m), "names", arr);
    } else {
        return;
    }
    if (tui_model_apply(f->m, m, f->arrival, NULL) != BASE_DEC_OK) {
        fprintf(stderr, "bench_tui: %s\n", tui_model_last_error(f->m));
        exit(1);
    }
    bus_msg_destroy(&m);
}

static void apply_json(tui_model_t *m, enum bus_kind kind, const char *text)
{
    bus_msg_t *msg = bus_msg_new(kind);
    json_object *o = json_tokener_parse(text);
    for (struct json_object_iterator it = json_object_iter_begin(o), end = json_object_iter_end(o);
         !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
        json_object_object_add(bus_msg_header(msg), json_object_iter_peek_name(&it),
                               json_object_get(json_object_iter_peek_value(&it)));
    json_object_put(o);
    if (tui_model_apply(m, msg, 0, NULL) != BASE_DEC_OK) {
        fprintf(stderr, "bench_tui: %s\n", tui_model_last_error(m));
        exit(1);
    }
    bus_msg_destroy(&msg);
}

/* Snapshot pair at true time t and, every 2 s, the node's fit of the window. */
static void clocks_at(tui_model_t *m, const struct sim_node *n, int64_t t, bool fit)
{
    char buf[512];
    int64_t tr = node_trace((void *)n, t);
    snprintf(buf, sizeof buf,
             "{\"node\":%d,\"pid\":0,\"a\":\"trace\",\"b\":\"probe\",\"pairs\":[[%" PRId64
             ",%" PRId64 "]]}",
             n->node, tr, tr + Q_NS);
    apply_json(m, BUS_K_SNAP, buf);
    if (!fit)
        return;
    int64_t w = (t - T_START) / 2000000000LL;
    int64_t anchor = tr + Q_NS; /* the node's probe clock at t */
    double corr = -(n->off_ns + n->drift_ppm * 1e-6 * (double)(t - T_START));
    snprintf(buf, sizeof buf,
             "{\"window\":%" PRId64 ",\"node\":%d,\"ref\":0,\"anchor_ns\":%" PRId64
             ",\"offset_ns\":%.3f,\"drift_ppb\":%.3f,\"uncertainty_ns\":150,\"from_ns\":%" PRId64
             ",\"to_ns\":%" PRId64 ",\"aligned\":true}",
             w, n->node, anchor, corr, -n->drift_ppm * 1000.0, anchor - (int64_t)1000000000,
             anchor + (int64_t)1000000000);
    apply_json(m, BUS_K_NODE_FIT, buf);
}

static void advance(tui_model_t *m, struct sim_node *nodes, int n, int64_t from, int64_t to)
{
    for (int64_t t = from + 50000000LL; t <= to; t += 50000000LL) {
        bool snap = (t - T_START) % STEP_NS == 0;
        bool fit = (t - T_START) % 2000000000LL == 0;
        for (int i = 0; i < n; i++) {
            struct feed f = {m, nodes[i].node, t + 30000000LL};
            if (snap)
                clocks_at(m, &nodes[i], t, fit);
            gpu_sim_poll(nodes[i].sim, t, on_gpu, &f, NULL);
        }
    }
}

/*
 * The matcher on 64 nodes x 8 GPUs (a process per GPU, its collective on
 * its own stream: 512 ranks an instance), node 5 late by 200 us and every
 * rank jittered by up to 50 us; beside the plain replay of the same
 * messages into the model, in the same run.
 */
static void bench_collectives(int steps)
{
    enum { GPUS = 8 };
    struct tui_model_opts mo = {.event_budget = 8u << 20};
    tui_model_t *m = tui_model_new(&mo);
    struct sim_node *ns = calloc(NODES * GPUS, sizeof *ns);
    for (int i = 0; i < NODES * GPUS; i++) {
        int node = i / GPUS;
        struct gpu_sim_cfg c;
        gpu_sim_defaults(&c);
        c.node = (uint16_t)node;
        c.device = (uint16_t)(i % GPUS);
        c.pid = 1000 + (uint32_t)i;
        c.seed = (uint64_t)i + 1;
        c.straggler_node = 5;
        c.straggler_late_ns = 200000;
        c.jitter_ns = 50000;
        ns[i].node = node;
        ns[i].off_ns = node == 0 ? 0 : (double)(node % 13) * 1.1e6 - 7e6;
        ns[i].drift_ppm = node == 0 ? 0 : (double)(node % 7) * 3 - 9;
        ns[i].sim = gpu_sim_new(&c, node_trace, &ns[i], NULL);
    }
    int64_t a = base_monotonic_ns();
    for (int64_t t = T_START + 50000000LL; t <= T_START + (int64_t)steps * STEP_NS;
         t += 50000000LL) {
        bool snap = (t - T_START) % STEP_NS == 0, fit = (t - T_START) % 2000000000LL == 0;
        for (int i = 0; i < NODES * GPUS; i++) {
            struct feed f = {m, ns[i].node, t + 30000000LL};
            if (snap && i % GPUS == 0)
                clocks_at(m, &ns[i], t, fit);
            gpu_sim_poll(ns[i].sim, t, on_gpu, &f, NULL);
        }
    }
    double replay_s = (double)(base_monotonic_ns() - a) / 1e9;
    tui_coll_t *c = tui_coll_new(0);
    a = base_monotonic_ns();
    int got = tui_coll_update(c, m, true);
    double match_s = (double)(base_monotonic_ns() - a) / 1e9;
    struct tui_coll_stats cs;
    tui_coll_stats(c, &cs);
    uint64_t straggler_last = 0;
    for (size_t i = 0; i < tui_coll_nparts(c); i++) {
        struct tui_coll_part p;
        tui_coll_part(c, i, &p);
        if (p.key.node == 5)
            straggler_last += p.last;
    }
    size_t events = tui_store_count(tui_model_store(m));
    printf("collectives: %d nodes x %d GPUs, %zu events, %d instances of %zu ranks (%" PRIu64
           " late, %" PRIu64 " within, %" PRIu64 " partial), node 5 last in %" PRIu64 "\n",
           NODES, GPUS, events, got, cs.participants, cs.late, cs.within, cs.partial,
           straggler_last);
    printf("%-44s %9.3f s\n", "plain replay into the model (baseline)", replay_s);
    printf("%-44s %9.3f s\n", "matching every instance", match_s);
    printf("BENCH collectives_instances_per_s %.0f inst/s\n", got / match_s);
    printf("BENCH collectives_arrivals_per_s %.0f arrivals/s\n",
           (double)got * (double)cs.participants / match_s);
    printf("BENCH collectives_match_vs_replay %.3f x\n", match_s / replay_s);
    tui_coll_destroy(&c);
    for (int i = 0; i < NODES * GPUS; i++)
        gpu_sim_destroy(&ns[i].sim);
    free(ns);
    tui_model_destroy(&m);
}

/* A stream that only counts what is written to it (bytes of an export). */
static ssize_t count_write(void *cookie, const char *buf, size_t n)
{
    (void)buf;
    *(uint64_t *)cookie += n;
    return (ssize_t)n;
}

static FILE *counting_stream(uint64_t *bytes)
{
    cookie_io_functions_t io = {.write = count_write};
    *bytes = 0;
    return fopencookie(bytes, "w", io);
}

static double pct(double *v, size_t n, double p)
{
    qsort(v, n, sizeof *v, base_cmp_double);
    size_t i = (size_t)ceil(p / 100.0 * (double)n);
    return v[i ? i - 1 : 0];
}

struct frames {
    double p50, p99, max;
};

/* n frames; each ingests the next 100 ms when `live` and redraws all when `full`. */
static void run_frames(tui_app_t *app, tui_model_t *m, struct sim_node *nodes, int nn,
                       int64_t *t_true, int64_t *mono, int n, bool live, bool full,
                       struct frames *out, double *ingest_ms)
{
    double *ft = calloc((size_t)n, sizeof *ft);
    double ing = 0;
    for (int i = 0; i < n; i++) {
        if (live) {
            int64_t a = base_monotonic_ns();
            advance(m, nodes, nn, *t_true, *t_true + STEP_NS);
            ing += (double)(base_monotonic_ns() - a);
            *t_true += STEP_NS;
        }
        *mono += STEP_NS;
        if (full)
            tui_app_redraw(app);
        int64_t a = base_monotonic_ns();
        tui_app_frame(app, *mono);
        ft[i] = (double)(base_monotonic_ns() - a) / 1e6;
    }
    out->p50 = pct(ft, (size_t)n, 50);
    out->p99 = pct(ft, (size_t)n, 99);
    out->max = ft[n - 1];
    if (ingest_ms)
        *ingest_ms = ing / 1e6 / n;
    free(ft);
}

static tui_app_t *open_app(tui_model_t *m, FILE *in, FILE *out)
{
    struct tui_app_opts o = {.hub = "bench",
                             .outdir = "/tmp",
                             .fps = 10,
                             .color = true,
                             .in = in,
                             .out = out,
                             .term = "xterm-256color",
                             .rows = 50,
                             .cols = 200};
    char err[BASE_ERRLEN];
    tui_app_t *app = tui_app_new(m, &o, err);
    if (app == NULL) {
        fprintf(stderr, "bench_tui: %s\n", err);
        exit(1);
    }
    return app;
}

/* ---- CPU share of the real program on a pseudo-terminal ------------------ */

static int dptop_path(char *out, size_t len)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return BASE_ERR;
    self[n] = '\0';
    char *s = strrchr(self, '/');
    *s = '\0';
    s = strrchr(self, '/'); /* BUILD/bench -> BUILD */
    if (s)
        *s = '\0';
    snprintf(out, len, "%s", self);
    return BASE_OK;
}

/* Run argv on a 200x50 pty for secs seconds; its CPU share in percent (-1: failed). */
static double cpu_share(char *const argv[], double secs)
{
    int mfd = posix_openpt(O_RDWR | O_NOCTTY);
    if (mfd < 0 || grantpt(mfd) != 0 || unlockpt(mfd) != 0)
        return -1;
    struct winsize ws = {.ws_row = 50, .ws_col = 200};
    const char *slave = ptsname(mfd);
    pid_t pid = fork();
    if (pid == 0) {
        setsid();
        int sfd = open(slave, O_RDWR);
        if (sfd < 0)
            _exit(127);
        ioctl(sfd, TIOCSCTTY, 0);
        ioctl(sfd, TIOCSWINSZ, &ws);
        dup2(sfd, 0);
        dup2(sfd, 1);
        int nul = open("/dev/null", O_WRONLY);
        dup2(nul, 2);
        setenv("TERM", "xterm-256color", 1);
        setenv("LANG", "C.UTF-8", 1);
        execv(argv[0], argv);
        _exit(127);
    }
    /* Drain the terminal, let it settle for 3 s, then measure. */
    int64_t t0 = base_monotonic_ns(), start_cpu_at = t0 + 3000000000LL,
            end = start_cpu_at + (int64_t)(secs * 1e9);
    double cpu0 = -1;
    char buf[65536];
    unsigned long long ticks0 = 0;
    for (;;) {
        int64_t now = base_monotonic_ns();
        if (now >= start_cpu_at && cpu0 < 0) {
            char path[64], stat[1024];
            snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
            FILE *f = fopen(path, "r");
            if (f && fgets(stat, sizeof stat, f)) {
                char *p = strrchr(stat, ')');
                unsigned long long ut = 0, st = 0;
                if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
                                &st) == 2)
                    ticks0 = ut + st;
            }
            if (f)
                fclose(f);
            cpu0 = (double)now;
        }
        if (now >= end)
            break;
        struct pollfd pfd = {.fd = mfd, .events = POLLIN};
        if (poll(&pfd, 1, 50) > 0 && read(mfd, buf, sizeof buf) < 0 && errno != EAGAIN)
            break;
    }
    char path[64], stat[1024];
    unsigned long long ticks1 = 0;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (f && fgets(stat, sizeof stat, f)) {
        char *p = strrchr(stat, ')');
        unsigned long long ut = 0, st = 0;
        if (p &&
            sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) == 2)
            ticks1 = ut + st;
    }
    if (f)
        fclose(f);
    double wall = (double)(base_monotonic_ns() - (int64_t)cpu0) / 1e9;
    kill(pid, SIGTERM);
    for (int i = 0; i < 100; i++) { /* keep draining while it stops its children */
        struct pollfd pfd = {.fd = mfd, .events = POLLIN};
        if (poll(&pfd, 1, 50) > 0 && read(mfd, buf, sizeof buf) <= 0)
            break;
        if (waitpid(pid, NULL, WNOHANG) == pid) {
            pid = -1;
            break;
        }
    }
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    close(mfd);
    return 100.0 * (double)(ticks1 - ticks0) / (double)sysconf(_SC_CLK_TCK) / wall;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct tui_model_opts mo = {.event_budget = TUI_DEFAULT_BUDGET};
    tui_model_t *m = tui_model_new(&mo);
    struct sim_node nodes[NODES];
    char buf[8192];
    size_t off = (size_t)snprintf(buf, sizeof buf, "{\"epoch\":1,\"ref\":0,\"nodes\":[");
    for (int i = 0; i < NODES; i++) {
        nodes[i].node = i;
        nodes[i].off_ns = i == 0 ? 0 : ((double)((i * 7919) % 21) - 10.0) * 1e6;
        nodes[i].drift_ppm = i == 0 ? 0 : (double)((i * 37) % 101) - 50.0;
        struct gpu_sim_cfg c;
        gpu_sim_defaults(&c);
        c.node = (uint16_t)i;
        c.pid = 1000 + (uint32_t)i;
        c.seed = (uint64_t)i + 1;
        nodes[i].sim = gpu_sim_new(&c, node_trace, &nodes[i], NULL);
        off += (size_t)snprintf(buf + off, sizeof buf - off,
                                "%s{\"node\":%d,\"host\":\"gpu-%02d\",\"state\":\"up\","
                                "\"last_seen_ns\":%lld}",
                                i ? "," : "", i, i, T_START);
    }
    snprintf(buf + off, sizeof buf - off, "]}");
    apply_json(m, BUS_K_NODES, buf);

    /* Empty-model baseline: 64 nodes, no events.  The terminal is /dev/null. */
    FILE *in = fopen("/dev/null", "r"), *out = fopen("/dev/null", "w");
    if (in == NULL || out == NULL)
        return 1;
    int64_t mono = base_monotonic_ns(), t_true = T_START;
    struct frames base_full, full, live, zoom, coll;
    tui_app_t *app = open_app(m, in, out);
    run_frames(app, m, nodes, NODES, &t_true, &mono, 100, false, true, &base_full, NULL);
    tui_app_destroy(&app);

    /* Fill the budget through the bus message path. */
    int64_t a = base_monotonic_ns();
    tui_store_t *st = tui_model_store(m);
    while (tui_store_count(st) < tui_store_budget(st)) {
        advance(m, nodes, NODES, t_true, t_true + STEP_NS);
        t_true += STEP_NS;
    }
    double fill_s = (double)(base_monotonic_ns() - a) / 1e9;
    uint64_t added = tui_store_added(st);
    double ingest_rate = (double)added / fill_s;

    app = open_app(m, in, out);
    double ing_ms;
    run_frames(app, m, nodes, NODES, &t_true, &mono, 300, true, true, &full, &ing_ms);
    run_frames(app, m, nodes, NODES, &t_true, &mono, 300, true, false, &live, NULL);
    /* The collectives view in the windows' place (matching runs once a second in every run). */
    tui_app_key(app, 'c');
    run_frames(app, m, nodes, NODES, &t_true, &mono, 300, true, true, &coll, NULL);
    tui_app_key(app, 'c');
    /* Zoomed out over about a minute of every node, paused on it. */
    tui_app_key(app, ' ');
    for (int i = 0; i < 9; i++)
        tui_app_key(app, '-');
    run_frames(app, m, nodes, NODES, &t_true, &mono, 100, false, true, &zoom, NULL);
    tui_app_destroy(&app);
    fclose(in);
    fclose(out);

    /* Chrome trace of the whole buffer. */
    uint64_t json_bytes = 0;
    FILE *dn = counting_stream(&json_bytes);
    struct tui_chrome_opts co = {.flows = true, .source = "bench"};
    struct tui_chrome_stats cs;
    a = base_monotonic_ns();
    tui_chrome_write(m, dn, &co, &cs, NULL);
    double export_s = (double)(base_monotonic_ns() - a) / 1e9;
    fclose(dn);
    /* The same events in Perfetto's format, in the same run. */
    uint64_t pf_bytes = 0;
    dn = counting_stream(&pf_bytes);
    struct tui_pftrace_stats ps = {0};
    a = base_monotonic_ns();
    tui_pftrace_write(m, dn, NULL, &ps, NULL);
    double pf_s = (double)(base_monotonic_ns() - a) / 1e9;
    fclose(dn);
    /* The same events as an XSpace (TensorBoard / xprof), in the same run. */
    dn = fopen("/dev/null", "w");
    struct tui_xplane_opts xo = {.node = -1, .source = "bench"};
    struct tui_xplane_stats xs = {0};
    a = base_monotonic_ns();
    tui_xplane_write(m, NULL, dn, &xo, &xs, NULL);
    double xplane_s = (double)(base_monotonic_ns() - a) / 1e9;
    fclose(dn);

    struct tui_summary sum;
    tui_model_summary(m, &sum);
    printf("dptop console, %d nodes, event budget %zu (full: %zu held, %" PRIu64
           " evicted), 200x50 terminal\n",
           NODES, tui_store_budget(st), tui_store_count(st), sum.evicted);
    printf("%-44s %9s %9s %9s\n", "frame (ms)", "p50", "p99", "max");
    printf("%-44s %9.3f %9.3f %9.3f\n", "baseline: empty model, every panel", base_full.p50,
           base_full.p99, base_full.max);
    printf("%-44s %9.3f %9.3f %9.3f\n", "full budget, live, collectives view", coll.p50, coll.p99,
           coll.max);
    printf("%-44s %9.3f %9.3f %9.3f\n", "full budget, live, every panel redrawn", full.p50,
           full.p99, full.max);
    printf("%-44s %9.3f %9.3f %9.3f\n", "full budget, live, as the console runs", live.p50,
           live.p99, live.max);
    printf("%-44s %9.3f %9.3f %9.3f\n", "full budget, zoomed out to ~100 s", zoom.p50, zoom.p99,
           zoom.max);
    printf("ingest: %.0f events/s through the bus message path (fill %.1f s); "
           "100 ms of 64 nodes: %.2f ms\n",
           ingest_rate, fill_s, ing_ms);
    printf("snapshot: %" PRIu64 " events + %" PRIu64 " flows in %.2f s (%.0f events/s)\n",
           cs.events, cs.flows, export_s, (double)cs.events / export_s);
    double xrate = (double)xs.events / xplane_s, crate = (double)cs.events / export_s;
    printf("xspace: %" PRIu64 " events in %" PRIu64 " planes, %.1f MB, in %.2f s "
           "(%.0f events/s, %.2fx the Chrome trace's rate)\n",
           xs.events, xs.planes, (double)xs.bytes / 1e6, xplane_s, xrate, xrate / crate);
    printf("BENCH tui_frame_p50 %.3f ms\n", full.p50);
    printf("BENCH tui_frame_p99 %.3f ms\n", full.p99);
    printf("BENCH tui_frame_live_p99 %.3f ms\n", live.p99);
    printf("BENCH tui_frame_collectives_view_p99 %.3f ms\n", coll.p99);
    printf("BENCH tui_frame_zoomed_out_p99 %.3f ms\n", zoom.p99);
    printf("BENCH tui_frame_empty_p50 %.3f ms\n", base_full.p50);
    printf("BENCH tui_frame_p50_vs_empty %.2f x\n", full.p50 / base_full.p50);
    printf("BENCH tui_ingest_events_per_s %.0f ev/s\n", ingest_rate);
    printf("BENCH tui_snapshot_events_per_s %.0f ev/s\n", (double)cs.events / export_s);
    printf("BENCH tui_xplane_events_per_s %.0f ev/s\n", xrate);
    printf("BENCH tui_xplane_vs_snapshot %.2f x\n", xrate / crate);
    printf("perfetto: %" PRIu64 " slices, %" PRIu64 " flows, %" PRIu64
           " bytes in %.2f s; Chrome JSON %" PRIu64 " bytes\n",
           ps.slices, ps.flows, pf_bytes, pf_s, json_bytes);
    printf("BENCH export_json_bytes_per_event %.1f B\n", (double)json_bytes / (double)cs.events);
    printf("BENCH export_pftrace_bytes_per_event %.1f B\n",
           (double)pf_bytes / (double)(ps.slices + ps.instants));
    printf("BENCH export_pftrace_vs_json_size %.2f x smaller\n",
           (double)json_bytes / (double)(pf_bytes ? pf_bytes : 1));
    printf("BENCH export_pftrace_events_per_s %.0f ev/s\n",
           (double)(ps.slices + ps.instants) / pf_s);
    printf("BENCH tui_xplane_bytes_per_event %.1f B\n",
           xs.events ? (double)xs.bytes / (double)xs.events : 0);
    for (int i = 0; i < NODES; i++)
        gpu_sim_destroy(&nodes[i].sim);
    tui_model_destroy(&m);

    bench_collectives(40);

    /* The real program's CPU share at 10 frames/s. */
    char dir[PATH_MAX], dptop[PATH_MAX + 16], dpnode[PATH_MAX + 16];
    if (dptop_path(dir, sizeof dir) != BASE_OK)
        return 0;
    snprintf(dptop, sizeof dptop, "%s/dptop", dir);
    snprintf(dpnode, sizeof dpnode, "%s/dpnode", dir);
    if (access(dptop, X_OK) != 0) {
        printf("(no %s: CPU shares not measured)\n", dptop);
        return 0;
    }
    /* No hub at that address: nothing arrives, the console still runs at 10 fps. */
    char *idle_argv[] = {dptop, "--hub", "tcp://127.0.0.1:9", "--state-timeout-ms", "0", "--fps",
                         "10",  NULL};
    double idle = cpu_share(idle_argv, 10);
    printf("%-44s %8.2f %%\n", "dptop CPU, idle console, 10 frames/s", idle);
    printf("BENCH tui_idle_cpu_pct %.2f %%\n", idle);
    if (access(dpnode, X_OK) == 0) {
        char *demo_argv[] = {dptop, "--demo", "--fps", "10", NULL};
        double demo = cpu_share(demo_argv, 10);
        printf("%-44s %8.2f %%\n", "dptop CPU, --demo (4 nodes), 10 frames/s", demo);
        printf("BENCH tui_demo_cpu_pct %.2f %%\n", demo);
    }
    return 0;
}
