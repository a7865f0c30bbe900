/*
 * dpnode --relay: a branch of the bus tree (bus_relay_t) between the master,
 * or a relay nearer to it, and the agents and consoles of one part of a
 * large cluster.  Agents there publish to it (--hub-pub tcp://RELAY:P+1) and
 * consoles subscribe to it (dptop --hub-sub tcp://RELAY:P+2); both still
 * register and fetch state at the master (--hub).
 *
 * Every heartbeat period the relay reports its counters to the master's
 * registration socket (a `relay` message; relay_master, or hub when the
 * relay sits right below the master), so that the master's relay table, on
 * the bus, shows every branch: what it moved, what it lost, and which one
 * went silent.
 */
#include "node/node_int.h"

#include "bus/bus.h"

#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#define RELAY_REPORT_NS (10 * 1000000000LL)

static void report(bus_relay_t *relay, uint64_t *dropped_seen, bool last)
{
    struct bus_relay_stats st;
    bus_relay_stats(relay, &st);
    bool lost = st.up_dropped > *dropped_seen;
    base_log(lost ? BASE_LOG_WARN : BASE_LOG_INFO, "relay",
             "%s%" PRIu64 " messages up (%.1f MB), %" PRIu64 " lost there (upstream full), "
             "%" PRIu64 " down (%.1f MB), %" PRIu64 "/%" PRIu64
             " subscription changes up/down, CURVE %" PRIu64 " admitted %" PRIu64 " refused",
             last ? "at exit: " : "", st.up_msgs, (double)st.up_bytes / 1e6, st.up_dropped,
             st.down_msgs, (double)st.down_bytes / 1e6, st.subs_from_below, st.subs_from_up,
             st.auth_allowed, st.auth_denied);
    *dropped_seen = st.up_dropped;
}

/* The relay's name in the master's table: its endpoint, with this host's
 * name for a wildcard address, so that relays of many hosts on one port
 * stay apart. */
static void relay_name(const char *listen, char *out, size_t len)
{
    const char *host = strstr(listen, "://");
    const char *colon = host ? strrchr(host + 3, ':') : NULL;
    size_t hl = host && colon ? (size_t)(colon - (host + 3)) : 0;
    char me[256];
    if (host && colon &&
        ((hl == 1 && host[3] == '*') || (hl == 7 && !strncmp(host + 3, "0.0.0.0", 7))) &&
        gethostname(me, sizeof me) == 0) {
        me[sizeof me - 1] = '\0';
        snprintf(out, len, "%.*s%s%s", (int)(host + 3 - listen), listen, me, colon);
        return;
    }
    snprintf(out, len, "%s", listen);
}

/* The counters as the master's relay table takes them (bus kind `relay`). */
static void report_master(bus_reg_t *reg, bus_relay_t *relay, const char *name,
                          const char *upstream, int64_t t0, uint64_t *refused)
{
    struct bus_relay_stats st;
    bus_relay_stats(relay, &st);
    bus_msg_t *m = bus_msg_new(BUS_K_RELAY);
    bus_msg_set_str(m, "name", name);
    bus_msg_set_str(m, "upstream", upstream);
    bus_msg_set_u64(m, "up_msgs", st.up_msgs);
    bus_msg_set_u64(m, "up_bytes", st.up_bytes);
    bus_msg_set_u64(m, "up_dropped", st.up_dropped);
    bus_msg_set_u64(m, "down_msgs", st.down_msgs);
    bus_msg_set_u64(m, "down_bytes", st.down_bytes);
    bus_msg_set_u64(m, "auth_denied", st.auth_denied);
    bus_msg_set_double(m, "uptime_s", (double)(base_monotonic_ns() - t0) / 1e9);
    char err[BASE_ERRLEN];
    /* No master yet, or gone: the next period tries again (counted). */
    if (bus_reg_send(reg, m, err) != BASE_OK)
        (*refused)++;
    bus_msg_destroy(&m);
}

int node_relay_run(const base_config_t *cfg, volatile sig_atomic_t *stop, char *err)
{
    struct bus_curve *client = NULL, *server = NULL;
    bus_reg_t *reg = NULL;
    int rc = BASE_ERR;
    const char *cdir = base_config_str(cfg, "curve_dir");
    if (*cdir && node_curve_load(cdir, true, &client, &server, err) != BASE_OK)
        goto out;
    struct bus_relay_opts o = {
        .upstream = base_config_str(cfg, "hub"),
        .listen = base_config_str(cfg, "listen"),
        .hwm = (int)base_config_int(cfg, "relay_hwm"),
        .client_curve = client,
        .server_curve = server,
    };
    bus_relay_t *relay = bus_relay_new(&o, err);
    if (relay == NULL)
        goto out;
    const char *master = base_config_str(cfg, "relay_master");
    struct bus_endpoints mep;
    if (bus_endpoints_derive(*master ? master : o.upstream, &mep, err) != BASE_OK) {
        bus_relay_destroy(&relay);
        goto out;
    }
    struct bus_reg_opts ro = {.endpoint = mep.reg, .node = BUS_NODE_NONE, .curve = client};
    reg = bus_reg_new(&ro, err);
    if (reg == NULL) {
        bus_relay_destroy(&relay);
        goto out;
    }
    base_log(BASE_LOG_INFO, "relay", "publishers %s, subscribers %s, upstream %s, master %s",
             bus_relay_endpoint(relay, BUS_HUB_PUB), bus_relay_endpoint(relay, BUS_HUB_SUB),
             o.upstream, mep.reg);
    char name[300];
    relay_name(o.listen, name, sizeof name);
    uint64_t dropped_seen = 0, refused = 0;
    int64_t t0 = base_monotonic_ns(), next = t0 + RELAY_REPORT_NS, next_master = t0 + 200000000;
    int64_t hb = base_config_int(cfg, "heartbeat_ms") * 1000000;
    bool failed = false;
    while (!*stop && !failed) {
        base_sleep_ns(50 * 1000000);
        struct bus_relay_stats st;
        bus_relay_stats(relay, &st);
        failed = st.failed;
        int64_t now = base_monotonic_ns();
        if (!failed && now >= next_master) {
            report_master(reg, relay, name, o.upstream, t0, &refused);
            next_master = now + hb;
        }
        if (!failed && now >= next) {
            report(relay, &dropped_seen, false);
            next += RELAY_REPORT_NS;
        }
    }
    report(relay, &dropped_seen, true);
    if (refused)
        base_log(BASE_LOG_INFO, "relay",
                 "%" PRIu64 " reports to the master not sent (no connection)", refused);
    bus_relay_destroy(&relay);
    rc = failed ? base_err(err, "relay: stopped on an error (logged above)") : BASE_OK;
out:
    bus_reg_destroy(&reg);
    node_curve_free(client);
    node_curve_free(server);
    return rc;
}
