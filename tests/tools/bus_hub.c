/*
 * bus_hub — a minimal master for bus tests (dpnode does not host the hub
 * here): runs bus_hub_t, answers hello with welcome (ids from 1, or the
 * requested one), keeps a node table and publishes it as `nodes`.
 *
 *   bus_hub --hub tcp://127.0.0.1:PORT [--sndhwm N] [--rcvhwm N] [--cache-msgs N]
 *           [--curve-public KEY --curve-secret KEY [--allow CLIENT_KEY]...]
 *
 * Prints "READY reg=... pub=... sub=..." once serving, and a HUB summary
 * line on SIGINT/SIGTERM.
 */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/bus.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

struct node_row {
    bool used;
    char host[64];
    int64_t pid, last_seen_ns;
};

static void publish_nodes(bus_pub_t *pub, const struct node_row *rows, size_t n)
{
    char err[BASE_ERRLEN];
    bus_msg_t *m = bus_msg_new(BUS_K_NODES);
    bus_msg_set_i64(m, "epoch", 1);
    bus_msg_set_i64(m, "ref", 0);
    json_object *arr = json_object_new_array();
    int64_t now = base_realtime_ns();
    for (size_t i = 0; i < n; i++) {
        if (!rows[i].used)
            continue;
        json_object *o = json_object_new_object();
        json_object_object_add(o, "node", json_object_new_int64((int64_t)i));
        json_object_object_add(o, "host", json_object_new_string(rows[i].host));
        bool up = now - rows[i].last_seen_ns < 3000000000LL;
        json_object_object_add(o, "state", json_object_new_string(up ? "up" : "down"));
        json_object_object_add(o, "last_seen_ns", json_object_new_int64(rows[i].last_seen_ns));
        json_object_object_add(o, "pid", json_object_new_int64(rows[i].pid));
        json_object_array_add(arr, o);
    }
    json_object_object_add(bus_msg_header(m), "nodes", arr);
    if (bus_pub_send(pub, m, err) == BASE_ERR)
        fprintf(stderr, "bus_hub: nodes: %s\n", err);
    bus_msg_destroy(&m);
}

int main(int argc, char **argv)
{
    const char *hub_ep = "tcp://127.0.0.1:7410";
    struct bus_hub_opts o = {.node = 0};
    struct bus_curve curve = {0};
    const char *allowed[16];
    size_t nallowed = 0;
    static const struct option longopts[] = {
        {"hub", required_argument, NULL, 'h'},
        {"sndhwm", required_argument, NULL, 's'},
        {"rcvhwm", required_argument, NULL, 'r'},
        {"cache-msgs", required_argument, NULL, 'c'},
        {"curve-public", required_argument, NULL, 'P'},
        {"curve-secret", required_argument, NULL, 'S'},
        {"allow", required_argument, NULL, 'A'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            hub_ep = optarg;
            break;
        case 's':
            o.sndhwm = atoi(optarg);
            break;
        case 'r':
            o.rcvhwm = atoi(optarg);
            break;
        case 'c':
            o.cache_max_msgs = (size_t)atol(optarg);
            break;
        case 'P':
            curve.public_key = optarg;
            break;
        case 'S':
            curve.secret_key = optarg;
            break;
        case 'A':
            if (nallowed < 15)
                allowed[nallowed++] = optarg;
            break;
        default:
            fprintf(stderr, "usage: bus_hub --hub tcp://HOST:PORT [--sndhwm N] [--rcvhwm N] "
                            "[--cache-msgs N]\n");
            return 2;
        }
    }
    char err[BASE_ERRLEN];
    struct bus_endpoints ep;
    if (bus_endpoints_derive(hub_ep, &ep, err) != BASE_OK) {
        fprintf(stderr, "bus_hub: %s\n", err);
        return 2;
    }
    allowed[nallowed] = NULL;
    curve.allowed = nallowed ? allowed : NULL;
    o.curve = curve.secret_key ? &curve : NULL;
    o.reg_endpoint = ep.reg;
    o.pub_endpoint = ep.pub;
    o.sub_endpoint = ep.sub;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    bus_hub_t *hub = bus_hub_new(&o, err);
    if (hub == NULL) {
        fprintf(stderr, "bus_hub: %s\n", err);
        return 1;
    }
    struct bus_pub_opts po = {
        .endpoint = bus_hub_inproc_pub(hub), .node = 0, .linger_ms = -1, .zctx = bus_hub_zctx(hub)};
    bus_pub_t *pub = bus_pub_new(&po, err);
    if (pub == NULL || !bus_pub_wait_subscribed(pub, BUS_K_NODES, 5000)) {
        fprintf(stderr, "bus_hub: internal publisher: %s\n", pub ? "not subscribed" : err);
        return 1;
    }
    printf("READY reg=%s pub=%s sub=%s\n", bus_hub_endpoint(hub, BUS_HUB_REG),
           bus_hub_endpoint(hub, BUS_HUB_PUB), bus_hub_endpoint(hub, BUS_HUB_SUB));
    fflush(stdout);

    struct node_row rows[256] = {{0}};
    int next_id = 1;
    int64_t last_table = 0;
    while (!stop_flag) {
        bus_peer_t peer;
        bus_msg_t *m = NULL;
        int rc = bus_hub_recv(hub, &peer, &m, 200, err);
        if (rc < 0) {
            fprintf(stderr, "bus_hub: %s\n", err);
            break;
        }
        bool changed = false;
        if (rc == 1 && bus_msg_kind(m) == BUS_K_HELLO) {
            json_object *h = bus_msg_header(m);
            int64_t id = -1, pid = 0;
            const char *host = "?", *instance = NULL;
            base_json_opt_i64(h, "req_node", &id, NULL);
            base_json_get_i64(h, "pid", &pid, NULL);
            base_json_get_str(h, "host", &host, NULL);
            base_json_opt_str(h, "instance", &instance, NULL);
            if (id < 0 || id >= 256) {
                while (next_id < 255 && rows[next_id].used)
                    next_id++;
                id = next_id;
            }
            rows[id].used = true;
            snprintf(rows[id].host, sizeof rows[id].host, "%s", host);
            rows[id].pid = pid;
            rows[id].last_seen_ns = base_realtime_ns();
            bus_msg_t *w = bus_msg_new(BUS_K_WELCOME);
            bus_msg_set_i64(w, "node", id);
            bus_msg_set_i64(w, "ref", 0);
            bus_msg_set_i64(w, "epoch", 1);
            if (instance)
                bus_msg_set_str(w, "instance", instance);
            bus_msg_set_double(w, "window_s", 2.0);
            bus_msg_set_i64(w, "cadence_us", 10000);
            bus_msg_set_i64(w, "spacing_us", 100);
            bus_msg_set_i64(w, "snapshot_period_ms", 100);
            bus_msg_set_i64(w, "hb_period_ms", 1000);
            if (bus_hub_send(hub, &peer, w, err) != BASE_OK)
                fprintf(stderr, "bus_hub: welcome: %s\n", err);
            bus_msg_destroy(&w);
            changed = true;
        } else if (rc == 1 && bus_msg_kind(m) == BUS_K_HB) {
            int node = bus_msg_node(m);
            if (node >= 0 && node < 256 && rows[node].used)
                rows[node].last_seen_ns = base_realtime_ns();
        }
        bus_msg_destroy(&m);
        int64_t now = base_monotonic_ns();
        if (changed || now - last_table > 1000000000LL) {
            publish_nodes(pub, rows, 256);
            last_table = now;
        }
    }
    struct bus_hub_stats st;
    bus_hub_stats(hub, &st);
    printf("HUB auth_allowed=%" PRIu64 " auth_denied=%" PRIu64 "\n", st.auth_allowed,
           st.auth_denied);
    printf("HUB reg_msgs=%" PRIu64 " forwarded=%" PRIu64 " replies=%" PRIu64 " state_reqs=%" PRIu64
           " state_msgs=%" PRIu64 " cache_msgs=%" PRIu64 " cache_evicted=%" PRIu64
           " sync_timeouts=%" PRIu64 " dec_errors=%" PRIu64 "\n",
           st.reg_msgs, st.reg_forwarded, st.replies, st.state_reqs, st.state_msgs_sent,
           st.cache_msgs, st.cache_evicted, st.sync_timeouts, base_decstats_errors(&st.dec));
    fflush(stdout);
    bus_pub_destroy(&pub);
    bus_hub_destroy(&hub);
    return 0;
}
