/*
 * dpnode --relay: a branch of the bus tree (bus_relay_t) between the master,
 * or a relay nearer to it, and the agents and consoles of one part of a
 * large cluster.  Agents there publish to it (--hub-pub tcp://RELAY:P+1) and
 * consoles subscribe to it (dptop --hub-sub tcp://RELAY:P+2); both still
 * register and fetch state at the master (--hub).
 */
#include "node/node_int.h"

#include "bus/bus.h"

#include <inttypes.h>

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

int node_relay_run(const base_config_t *cfg, volatile sig_atomic_t *stop, char *err)
{
    struct bus_curve *client = NULL, *server = NULL;
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
    base_log(BASE_LOG_INFO, "relay", "publishers %s, subscribers %s, upstream %s",
             bus_relay_endpoint(relay, BUS_HUB_PUB), bus_relay_endpoint(relay, BUS_HUB_SUB),
             o.upstream);
    uint64_t dropped_seen = 0;
    int64_t next = base_monotonic_ns() + RELAY_REPORT_NS;
    bool failed = false;
    while (!*stop && !failed) {
        base_sleep_ns(50 * 1000000);
        struct bus_relay_stats st;
        bus_relay_stats(relay, &st);
        failed = st.failed;
        if (!failed && base_monotonic_ns() >= next) {
            report(relay, &dropped_seen, false);
            next += RELAY_REPORT_NS;
        }
    }
    report(relay, &dropped_seen, true);
    bus_relay_destroy(&relay);
    rc = failed ? base_err(err, "relay: stopped on an error (logged above)") : BASE_OK;
out:
    node_curve_free(client);
    node_curve_free(server);
    return rc;
}
