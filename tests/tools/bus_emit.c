/*
 * bus_emit — a publisher for bus tests (dpnode stands in later).
 *
 *   bus_emit --hub tcp://HOST:PORT [--node N] [--scenario stream|state|follow]
 *            [--kind ev|hb] [--count N] [--batch B] [--rate MSGS_PER_S] [--retry]
 *            [--wait-sub MS] [--tail N] [--tail-gap-ms MS] [--sndhwm N] [--linger-ms MS]
 *            [--curve-server KEY --curve-public KEY --curve-secret KEY]
 *
 * stream: --count messages of --kind (GPU event batches of --batch records,
 *         real gpu/ codec), at --rate (0: as fast as possible); with --retry a
 *         dropped message is sent again after a short pause (back-pressure
 *         instead of loss).  --tail N more messages follow, after
 *         --tail-gap-ms and 100 ms apart, so that subscribers can account for
 *         every seq up to the end.
 * state:  one message of each cached kind with known values, then stays
 *         until --linger-ms passes or SIGTERM.
 * follow: registers over the ROUTER (hello -> welcome gives the node id),
 *         then publishes hello, node_fit, names and a 3-event batch every
 *         100 ms (--count rounds, 0: until SIGTERM).
 * Prints one EMIT summary line at the end.
 */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bus/bus.h"
#include "gpu/gpu.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

struct emit {
    bus_pub_t *pub;
    int node;
    uint64_t attempts, retries, events;
};

/* Send, retrying a dropped message when asked; returns BASE_OK, BUS_DROPPED or BASE_ERR. */
static int send_msg(struct emit *e, bus_msg_t *m, bool retry)
{
    char err[BASE_ERRLEN];
    for (;;) {
        e->attempts++;
        int rc = bus_pub_send(e->pub, m, err);
        if (rc == BASE_ERR)
            fprintf(stderr, "bus_emit: %s\n", err);
        if (rc != BUS_DROPPED || !retry || stop_flag)
            return rc;
        e->retries++;
        base_sleep_ns(50000);
    }
}

static json_object *pair_ii(int64_t a, int64_t b)
{
    json_object *p = json_object_new_array();
    json_object_array_add(p, json_object_new_int64(a));
    json_object_array_add(p, json_object_new_int64(b));
    return p;
}

static json_object *pair_is(int64_t a, const char *s)
{
    json_object *p = json_object_new_array();
    json_object_array_add(p, json_object_new_int64(a));
    json_object_array_add(p, json_object_new_string(s));
    return p;
}

/* The 3 events the pyzmq follower test checks field by field. */
static void follow_events(gpu_event_t ev[3])
{
    memset(ev, 0, 3 * sizeof *ev);
    ev[0] = (gpu_event_t){.kind = GPU_EV_KERNEL,
                          .flags = GPU_EVF_DEVICE_TIME,
                          .device = 1,
                          .pid = 4242,
                          .tid = 4243,
                          .stream = 2,
                          .name_id = 1,
                          .corr_id = 10,
                          .scope_id = 5,
                          .start_ns = 1000000,
                          .end_ns = 1002500,
                          .grid = {120, 2, 1},
                          .block = {256, 1, 1}};
    ev[1] = (gpu_event_t){.kind = GPU_EV_MEMCPY,
                          .flags = GPU_EVF_ASYNC,
                          .pid = 4242,
                          .tid = 4243,
                          .stream = 2,
                          .name_id = 2,
                          .corr_id = 11,
                          .scope_id = 5,
                          .start_ns = 1003000,
                          .end_ns = 1004000,
                          .bytes = 1048576,
                          .copy_kind = GPU_COPY_D2H};
    ev[2] = (gpu_event_t){.kind = GPU_EV_STEP,
                          .pid = 4242,
                          .tid = 4243,
                          .start_ns = 900000,
                          .end_ns = 1100000,
                          .step = 42};
}

static bus_msg_t *make_ev(const struct emit *e, const gpu_event_t *ev, size_t n, uint64_t dropped)
{
    bus_msg_t *m = bus_msg_new(BUS_K_EV);
    bus_msg_set_i64(m, "node", e->node);
    bus_msg_set_i64(m, "pid", 4242);
    bus_msg_set_i64(m, "count", (int64_t)n);
    bus_msg_set_u64(m, "dropped", dropped);
    gpu_batch_encode(ev, n, bus_msg_payload_alloc(m, gpu_batch_size(n)));
    return m;
}

static bus_msg_t *make_hello(int node)
{
    bus_msg_t *m = bus_msg_new(BUS_K_HELLO);
    if (node >= 0)
        bus_msg_set_i64(m, "node", node);
    bus_msg_set_str(m, "host", "emit-host");
    bus_msg_set_i64(m, "pid", getpid());
    bus_msg_set_str(m, "version", DP_VERSION);
    char inst[32];
    snprintf(inst, sizeof inst, "emit-%d", (int)getpid());
    bus_msg_set_str(m, "instance", inst);
    bus_msg_set_str(m, "probe_addr", "127.0.0.1:40000");
    json_object *clocks = json_object_new_array();
    json_object_array_add(clocks, json_object_new_string("probe"));
    json_object_array_add(clocks, json_object_new_string("trace"));
    json_object_object_add(bus_msg_header(m), "clocks", clocks);
    json_object *gpus = json_object_new_array(), *g = json_object_new_object();
    json_object_object_add(g, "index", json_object_new_int(0));
    json_object_object_add(g, "name", json_object_new_string("SimGPU"));
    json_object_object_add(g, "backend", json_object_new_string("sim"));
    json_object_array_add(gpus, g);
    json_object_object_add(bus_msg_header(m), "gpus", gpus);
    return m;
}

static bus_msg_t *make_node_fit(int node, int window)
{
    bus_msg_t *m = bus_msg_new(BUS_K_NODE_FIT);
    bus_msg_set_i64(m, "window", window);
    bus_msg_set_i64(m, "node", node);
    bus_msg_set_i64(m, "ref", 0);
    bus_msg_set_i64(m, "anchor_ns", 1790000000000000000LL);
    bus_msg_set_double(m, "offset_ns", 1234.5);
    bus_msg_set_double(m, "drift_ppb", -20.25);
    bus_msg_set_double(m, "uncertainty_ns", 45);
    bus_msg_set_i64(m, "from_ns", 1790000000000000000LL);
    bus_msg_set_i64(m, "to_ns", 1790000002000000000LL);
    bus_msg_set_bool(m, "aligned", true);
    return m;
}

static bus_msg_t *make_names(int node, const char *a, const char *b, int first)
{
    bus_msg_t *m = bus_msg_new(BUS_K_NAMES);
    bus_msg_set_i64(m, "node", node);
    bus_msg_set_i64(m, "pid", 4242);
    json_object *arr = json_object_new_array();
    json_object_array_add(arr, pair_is(first, a));
    json_object_array_add(arr, pair_is(first + 1, b));
    json_object_object_add(bus_msg_header(m), "names", arr);
    return m;
}

static int scenario_stream(struct emit *e, const char *kind, long count, long batch, double rate,
                           bool retry, long tail, long tail_gap_ms)
{
    size_t nb = batch > 0 ? (size_t)batch : 1;
    gpu_event_t *ev = xcalloc(nb, sizeof *ev);
    for (size_t i = 0; i < nb; i++) {
        ev[i].kind = GPU_EV_KERNEL;
        ev[i].pid = 4242;
        ev[i].tid = (uint32_t)i;
        ev[i].name_id = 1;
        ev[i].start_ns = (int64_t)i * 1000;
        ev[i].end_ns = ev[i].start_ns + 500;
        ev[i].grid[0] = ev[i].block[0] = 1;
    }
    bool is_ev = strcmp(kind, "ev") == 0;
    int64_t t0 = base_monotonic_ns();
    for (long i = 0; i < count + tail && !stop_flag; i++) {
        if (i == count)
            base_sleep_ns(tail_gap_ms * 1000000); /* let slow consumers drain */
        if (i >= count) {
            base_sleep_ns(100000000); /* the tail: slow enough to be delivered */
        } else if (rate > 0) {
            int64_t due = t0 + (int64_t)((double)i * 1e9 / rate);
            int64_t now = base_monotonic_ns();
            if (due > now)
                base_sleep_ns(due - now);
        }
        bus_msg_t *m;
        if (is_ev) {
            m = make_ev(e, ev, nb, 0);
        } else {
            m = bus_msg_new(BUS_K_HB);
            bus_msg_set_i64(m, "node", e->node);
            bus_msg_set_i64(m, "t_ns", base_realtime_ns());
        }
        int rc = send_msg(e, m, retry || i >= count);
        if (rc == BASE_OK && is_ev)
            e->events += nb;
        bus_msg_destroy(&m);
        if (rc == BASE_ERR) {
            free(ev);
            return 1;
        }
    }
    free(ev);
    return 0;
}

static int scenario_state(struct emit *e, long linger_ms)
{
    int node = e->node;
    bus_msg_t *msgs[16];
    size_t n = 0;
    msgs[n++] = make_hello(node);
    msgs[n++] = make_names(node, "gemm_fwd", "allreduce", 1);
    msgs[n++] = make_names(node, "gemm_bwd", "copy_h2d", 3);
    for (int w = 1; w <= 2; w++) /* only window 2 should stay cached */
        msgs[n++] = make_node_fit(node, w);
    bus_msg_t *s = bus_msg_new(BUS_K_SCOPE);
    bus_msg_set_i64(s, "node", node);
    bus_msg_set_i64(s, "pid", 4242);
    json_object *tree = json_object_new_array();
    json_object_array_add(tree, pair_ii(5, 0));
    json_object_array_add(tree, pair_ii(6, 5));
    json_object_object_add(bus_msg_header(s), "tree", tree);
    msgs[n++] = s;
    bus_msg_t *snap = bus_msg_new(BUS_K_SNAP);
    bus_msg_set_i64(snap, "node", node);
    bus_msg_set_i64(snap, "pid", 0);
    bus_msg_set_str(snap, "a", "trace");
    bus_msg_set_str(snap, "b", "probe");
    json_object *pairs = json_object_new_array();
    json_object_array_add(pairs, pair_ii(1000, 1790000000000000000LL));
    json_object_object_add(bus_msg_header(snap), "pairs", pairs);
    msgs[n++] = snap;
    bus_msg_t *truth = bus_msg_new(BUS_K_SIM_TRUTH);
    bus_msg_set_i64(truth, "node", node);
    bus_msg_set_i64(truth, "t0_ns", 1790000000000000000LL);
    bus_msg_set_double(truth, "offset_ns", 250000);
    bus_msg_set_double(truth, "drift_ppm", -35.5);
    bus_msg_set_double(truth, "wander_ppb", 0);
    msgs[n++] = truth;
    gpu_event_t ev[3];
    follow_events(ev);
    msgs[n++] = make_ev(e, ev, 3, 0); /* never cached */
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (send_msg(e, msgs[i], true) != BASE_OK)
            rc = 1;
        bus_msg_destroy(&msgs[i]);
    }
    struct bus_pub_stats st;
    bus_pub_stats(e->pub, &st);
    printf("PUBLISHED sent=%" PRIu64 " dropped=%" PRIu64 "\n", st.sent, st.dropped);
    fflush(stdout);
    int64_t until = base_monotonic_ns() + linger_ms * 1000000;
    while (!stop_flag && (linger_ms < 0 || base_monotonic_ns() < until))
        base_sleep_ns(50000000);
    return rc;
}

static int scenario_follow(struct emit *e, const char *reg_ep, long rounds)
{
    char err[BASE_ERRLEN];
    struct bus_reg_opts ro = {.endpoint = reg_ep, .node = BUS_NODE_NONE};
    bus_reg_t *reg = bus_reg_new(&ro, err);
    if (reg == NULL) {
        fprintf(stderr, "bus_emit: %s\n", err);
        return 1;
    }
    int node = -1;
    bus_msg_t *hello = make_hello(-1);
    while (node < 0 && !stop_flag) {
        if (bus_reg_send(reg, hello, err) == BASE_ERR) {
            fprintf(stderr, "bus_emit: %s\n", err);
            break;
        }
        bus_msg_t *w = NULL;
        if (bus_reg_recv(reg, &w, 200, err) == 1 && bus_msg_kind(w) == BUS_K_WELCOME) {
            int64_t id;
            if (base_json_get_i64(bus_msg_header(w), "node", &id, NULL) == BASE_DEC_OK)
                node = (int)id;
        }
        bus_msg_destroy(&w);
    }
    bus_msg_destroy(&hello);
    bus_reg_destroy(&reg);
    if (node < 0)
        return 1;
    e->node = node;
    bus_pub_set_node(e->pub, node);
    printf("WELCOME node=%d\n", node);
    fflush(stdout);
    gpu_event_t ev[3];
    follow_events(ev);
    for (long r = 0; (rounds <= 0 || r < rounds) && !stop_flag; r++) {
        bus_msg_t *m[4] = {make_hello(node), make_node_fit(node, 3),
                           make_names(node, "gemm_fwd", "allreduce", 1), make_ev(e, ev, 3, 7)};
        for (size_t i = 0; i < 4; i++) {
            if (send_msg(e, m[i], true) == BASE_OK && i == 3)
                e->events += 3;
            bus_msg_destroy(&m[i]);
        }
        base_sleep_ns(100000000);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *hub_ep = "tcp://127.0.0.1:7410", *scenario = "stream", *kind = "ev";
    long node = 1, count = 100, batch = 64, wait_ms = 0, tail = 0, tail_gap_ms = 0, linger_ms = -1;
    double rate = 0;
    int sndhwm = 0;
    bool retry = false;
    struct bus_curve curve = {0};
    static const struct option longopts[] = {
        {"hub", required_argument, NULL, 'h'},
        {"node", required_argument, NULL, 'n'},
        {"scenario", required_argument, NULL, 'S'},
        {"kind", required_argument, NULL, 'k'},
        {"count", required_argument, NULL, 'c'},
        {"batch", required_argument, NULL, 'b'},
        {"rate", required_argument, NULL, 'r'},
        {"retry", no_argument, NULL, 'R'},
        {"wait-sub", required_argument, NULL, 'w'},
        {"tail", required_argument, NULL, 't'},
        {"sndhwm", required_argument, NULL, 'H'},
        {"linger-ms", required_argument, NULL, 'l'},
        {"tail-gap-ms", required_argument, NULL, 'g'},
        {"curve-server", required_argument, NULL, 'C'},
        {"curve-public", required_argument, NULL, 'P'},
        {"curve-secret", required_argument, NULL, 'K'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            hub_ep = optarg;
            break;
        case 'n':
            node = atol(optarg);
            break;
        case 'S':
            scenario = optarg;
            break;
        case 'k':
            kind = optarg;
            break;
        case 'c':
            count = atol(optarg);
            break;
        case 'b':
            batch = atol(optarg);
            break;
        case 'r':
            rate = atof(optarg);
            break;
        case 'R':
            retry = true;
            break;
        case 'w':
            wait_ms = atol(optarg);
            break;
        case 't':
            tail = atol(optarg);
            break;
        case 'H':
            sndhwm = atoi(optarg);
            break;
        case 'l':
            linger_ms = atol(optarg);
            break;
        case 'g':
            tail_gap_ms = atol(optarg);
            break;
        case 'C':
            curve.server_key = optarg;
            break;
        case 'P':
            curve.public_key = optarg;
            break;
        case 'K':
            curve.secret_key = optarg;
            break;
        default:
            fprintf(stderr, "usage: see the comment at the top of tests/tools/bus_emit.c\n");
            return 2;
        }
    }
    char err[BASE_ERRLEN];
    struct bus_endpoints ep;
    if (bus_endpoints_derive(hub_ep, &ep, err) != BASE_OK) {
        fprintf(stderr, "bus_emit: %s\n", err);
        return 2;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    struct emit e = {.node = (int)node};
    struct bus_pub_opts po = {.endpoint = ep.pub,
                              .node = e.node,
                              .sndhwm = sndhwm,
                              .curve = curve.server_key ? &curve : NULL};
    e.pub = bus_pub_new(&po, err);
    if (e.pub == NULL) {
        fprintf(stderr, "bus_emit: %s\n", err);
        return 1;
    }
    if (wait_ms > 0) {
        /* Wait until the hub forwarded a subscription for what we will send:
         * before that, a publisher's messages go nowhere. */
        static const enum bus_kind state_kinds[] = {BUS_K_HELLO, BUS_K_NAMES, BUS_K_NODE_FIT,
                                                    BUS_K_SCOPE, BUS_K_SNAP,  BUS_K_SIM_TRUTH};
        enum bus_kind one = strcmp(kind, "hb") == 0 ? BUS_K_HB : BUS_K_EV;
        bool state = strcmp(scenario, "state") == 0;
        size_t n = state ? BASE_ARRAY_LEN(state_kinds) : 1;
        for (size_t i = 0; i < n; i++) {
            enum bus_kind k = state ? state_kinds[i] : one;
            if (!bus_pub_wait_subscribed(e.pub, k, (int)wait_ms)) {
                fprintf(stderr, "bus_emit: no subscriber for %s within %ld ms\n", bus_kind_name(k),
                        wait_ms);
                bus_pub_destroy(&e.pub);
                return 1;
            }
        }
    }
    int rc;
    if (strcmp(scenario, "stream") == 0)
        rc = scenario_stream(&e, kind, count, batch, rate, retry, tail, tail_gap_ms);
    else if (strcmp(scenario, "state") == 0)
        rc = scenario_state(&e, linger_ms);
    else if (strcmp(scenario, "follow") == 0)
        rc = scenario_follow(&e, ep.reg, count);
    else {
        fprintf(stderr, "bus_emit: unknown scenario '%s'\n", scenario);
        rc = 2;
    }
    struct bus_pub_stats st;
    bus_pub_stats(e.pub, &st);
    /* With --retry a refused send is tried again: `lost` is what was given up. */
    printf("EMIT node=%d sent=%" PRIu64 " dropped=%" PRIu64 " lost=%" PRIu64 " attempts=%" PRIu64
           " retries=%" PRIu64 " events=%" PRIu64 " unrouted=%" PRIu64 "\n",
           e.node, st.sent, st.dropped, st.dropped - e.retries, e.attempts, e.retries, e.events,
           st.unrouted);
    fflush(stdout);
    bus_pub_destroy(&e.pub);
    return rc;
}
