/*
 * dpnode's configuration keys and the checks a key's type cannot express.
 * Every key is a flag (--probe-cadence-us), an environment variable
 * (DPTOP_PROBE_CADENCE_US) and a JSON file member ("probe_cadence_us").
 */
#include "node/node_int.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bus/bus.h"
#include "clock/clock.h"
#include "gpu/gpu.h"

#define STR(x)  #x
#define XSTR(x) STR(x)

/* Ranges are inclusive; min > max means "not a number" (strings, bools). */
static const struct base_cfg_key keys[] = {
    {"master", BASE_CFG_BOOL, "false", 1, 0,
     "run as the master: host the bus hub, plan the probe graph, solve the time base"},
    {"hub", BASE_CFG_STRING, "tcp://127.0.0.1:7410", 1, 0,
     "the master's registration endpoint (tcp://HOST:PORT; PORT+1 and PORT+2 are derived)"},
    {"listen", BASE_CFG_STRING, "tcp://*:7410", 1, 0,
     "master: where the hub binds its three sockets (tcp://ADDR:PORT, ipc://PATH)"},
    {"relay", BASE_CFG_BOOL, "false", 1, 0,
     "run as a relay of the bus tree: bind listen's PORT+1 and PORT+2 and forward them to and "
     "from hub's (hub: the master or another relay)"},
    {"relay_hwm", BASE_CFG_INT, "10000", 100, 10000000,
     "relay: messages queued per socket and peer before the relay drops (upstream: counted) "
     "or a subscriber below loses them (seen as seq gaps)"},
    {"relay_master", BASE_CFG_STRING, "", 1, 0,
     "relay: the master's registration endpoint, where the relay reports its counters every "
     "heartbeat (empty: hub, right when the relay is directly below the master)"},
    {"hub_pub", BASE_CFG_STRING, "", 1, 0,
     "where to publish when it is not the hub's PORT+1, e.g. a relay's tcp://RELAY:PORT+1 "
     "(empty: derived from hub)"},
    {"node_id", BASE_CFG_INT, "-1", -1, 65535,
     "requested node id (-1: the master assigns one; the master itself takes 0)"},
    {"ref_node", BASE_CFG_INT, "-1", -1, 65535,
     "master: reference node of the time base (-1: the master itself)"},
    {"bind_ip", BASE_CFG_STRING, "0.0.0.0", 1, 0,
     "address of the UDP probe socket (0.0.0.0 or :: : every interface)"},
    {"probe_port", BASE_CFG_INT, "0", 0, 65535, "UDP port of the probe socket (0: the OS picks)"},
    {"probe_cadence_us", BASE_CFG_INT, XSTR(NODE_DEFAULT_CADENCE_US), 200, 10000000,
     "time between two coded probes to one neighbour (the master's value is used cluster-wide)"},
    {"probe_window_s", BASE_CFG_DOUBLE, "2", 0.1, 3600,
     "length of a fit window, seconds (the master's value is used cluster-wide)"},
    {"packet_spacing_us", BASE_CFG_INT, XSTR(NODE_DEFAULT_SPACING_US), 1, 1000000,
     "gap between the two packets of a coded probe"},
    {"guard_ns", BASE_CFG_INT, "0", 0, 1000000000,
     "purity guard band in ns (0: automatic per window and direction)"},
    {"estimator", BASE_CFG_STRING, "svm", 1, 0, "edge estimator: svm, hull, minrtt or ols"},
    {"neighbors", BASE_CFG_INT, "4", 1, 64,
     "master: out-neighbours each node probes (all others when fewer)"},
    {"snapshot_period_ms", BASE_CFG_INT, "100", 1, 3600000,
     "period of the trace/probe snapshot pairs"},
    {"heartbeat_ms", BASE_CFG_INT, "1000", 10, 3600000,
     "heartbeat period; a node silent for 3 periods is marked down"},
    {"status_period_ms", BASE_CFG_INT, "1000", 50, 3600000, "period of the status message"},
    {"refine_windows", BASE_CFG_INT, "1", 0, NODE_REFINE_MAX,
     "master: solve each window again once this many later windows are in, and publish its "
     "refined maps (0: never)"},
    {"stamp_asym_ns", BASE_CFG_DOUBLE, "3", 0, 1e9,
     "master: sigma of one host's stamp asymmetry (transmit stamp to wire minus wire to "
     "receive stamp), ns, which no probe can see; it widens every node's uncertainty"},
    {"margin_z", BASE_CFG_DOUBLE, "5", 0, 1e6,
     "master: an edge's margin this many sigmas above its usual level bounds what a host slow "
     "to stamp puts on the maps, in their uncertainty (0: never)"},
    {"forget_down_s", BASE_CFG_INT, "600", 1, 31536000,
     "master: a node down this long leaves the node table"},
    {"output_dir", BASE_CFG_STRING, ".", 1, 0, "directory for files given as relative paths"},
    {"probe_log", BASE_CFG_STRING, "", 1, 0,
     "write every probe as a JSON line (SPEC 4.5) to this file (empty: none)"},
    {"sim_clock", BASE_CFG_STRING, "", 1, 0,
     "simulated clock OFFSET_NS,DRIFT_PPM[,WANDER_PPB[,STEP_AFTER_S,STEP_NS]] (a step of STEP_NS "
     "STEP_AFTER_S after start; empty: the real clocks)"},
    {"sim_path_delay", BASE_CFG_STRING, "", 1, 0,
     "simulated detours: probes from node ID arrive NS later, ID:NS[,ID:NS...] (empty: none)"},
    {"sim_seed", BASE_CFG_INT, "0", 0, 9007199254740992.0,
     "seed of the simulated wander and workload (0: drawn at start, announced in sim_truth)"},
    {"sim_workload", BASE_CFG_BOOL, "false", 1, 0, "run the simulated training workload"},
    {"sim_step_ms", BASE_CFG_DOUBLE, "100", 1, 60000, "simulated workload: step period, ms"},
    {"sim_layers", BASE_CFG_INT, "4", 1, 64, "simulated workload: layers per pass"},
    {"sim_straggler", BASE_CFG_INT, "-1", -1, 65535,
     "simulated workload: node id of the straggler (-1: none)"},
    {"sim_late_us", BASE_CFG_DOUBLE, "0", 0, 1000000000,
     "simulated workload: how late the straggler's collective starts, us (ns resolution)"},
    {"sim_jitter_us", BASE_CFG_INT, "0", 0, 1000000000,
     "simulated workload: every node's collective starts up to this much late, per step, us"},
    {"trace_endpoint", BASE_CFG_STRING, "auto", 1, 0,
     "local link for libdptrace (auto: the default endpoint; none: no local link)"},
    {"sysfs_root", BASE_CFG_STRING, GPU_METRICS_ROOT, 1, 0, "where amdgpu device metrics are read"},
    {"nvml_library", BASE_CFG_STRING, GPU_NVML_LIBRARY, 0, 0,
     "NVML library for NVIDIA device metrics (empty: none)"},
    {"probe_key", BASE_CFG_STRING, "", 1, 0,
     "32 hex digits: MAC key of the probe packets, the same on every node (empty: the "
     "master draws one and hands it out in the welcome)"},
    {"curve_dir", BASE_CFG_STRING, "", 1, 0,
     "directory of CURVE keys (dpnode --gen-keys) to secure the bus (empty: none)"},
    {"user_timestamps", BASE_CFG_BOOL, "false", 1, 0,
     "stamp probes in user space instead of the kernel (testing the fallback)"},
    {"exit_with_parent", BASE_CFG_BOOL, "false", 1, 0, "exit when the parent process dies"},
};

const struct base_cfg_key *node_config_keys(size_t *n)
{
    *n = BASE_ARRAY_LEN(keys);
    return keys;
}

static int check_endpoint(const base_config_t *cfg, const char *key, char *err)
{
    struct bus_endpoints ep;
    char e[BASE_ERRLEN];
    if (bus_endpoints_derive(base_config_str(cfg, key), &ep, e) != BASE_OK)
        return base_err(err, "invalid value for %s: %s", key, e);
    return BASE_OK;
}

int node_parse_sim_delay(const char *text, struct node_sim_delay *out, size_t *n, char *err)
{
    *n = 0;
    const char *p = text;
    while (*p) {
        if (*n == NODE_SIM_DELAY_MAX)
            return base_err(err, "at most %d entries", NODE_SIM_DELAY_MAX);
        char *end;
        errno = 0;
        unsigned long long id = strtoull(p, &end, 10);
        if (end == p || *end != ':' || errno || id > UINT32_MAX || *p == '-')
            return base_err(err, "expected ID:NS at '%s'", p);
        p = end + 1;
        long long ns = strtoll(p, &end, 10);
        if (end == p || errno || ns < 0 || ns > 1000000000LL || (*end && *end != ','))
            return base_err(err, "expected a delay of 0..1000000000 ns at '%s'", p);
        out[*n].from = (uint32_t)id;
        out[*n].ns = ns;
        (*n)++;
        p = *end ? end + 1 : end;
        if (*end == ',' && !*p)
            return base_err(err, "a trailing comma");
    }
    return BASE_OK;
}

int node_parse_key(const char *text, uint8_t key[NODE_PROBE_KEY_SIZE], char *err)
{
    if (strlen(text) != 2 * NODE_PROBE_KEY_SIZE)
        return base_err(err, "expected %d hex digits", 2 * NODE_PROBE_KEY_SIZE);
    for (int i = 0; i < NODE_PROBE_KEY_SIZE; i++) {
        unsigned v = 0;
        for (int j = 0; j < 2; j++) {
            int c = tolower((unsigned char)text[2 * i + j]);
            if (c >= '0' && c <= '9')
                v = v * 16 + (unsigned)(c - '0');
            else if (c >= 'a' && c <= 'f')
                v = v * 16 + (unsigned)(c - 'a' + 10);
            else
                return base_err(err, "'%c' is not a hex digit", text[2 * i + j]);
        }
        key[i] = (uint8_t)v;
    }
    return BASE_OK;
}

int node_config_check(const base_config_t *cfg, char *err)
{
    char e[BASE_ERRLEN];
    if (check_endpoint(cfg, "hub", err) != BASE_OK || check_endpoint(cfg, "listen", err) != BASE_OK)
        return BASE_ERR;
    bool master = base_config_bool(cfg, "master");
    if (master && base_config_bool(cfg, "relay"))
        return base_err(err, "invalid value for relay: true (a master hosts the hub; a relay "
                             "runs without master)");
    if (*base_config_str(cfg, "relay_master") &&
        check_endpoint(cfg, "relay_master", err) != BASE_OK)
        return BASE_ERR;
    const char *hp = base_config_str(cfg, "hub_pub");
    if (*hp && strncmp(hp, "tcp://", 6) != 0 && strncmp(hp, "ipc://", 6) != 0)
        return base_err(err,
                        "invalid value for hub_pub: '%s' (expected tcp://HOST:PORT or "
                        "ipc://PATH)",
                        hp);
    if (*hp && master)
        return base_err(err,
                        "invalid value for hub_pub: '%s' (the master publishes into its own "
                        "hub)",
                        hp);
    const char *ip = base_config_str(cfg, "bind_ip");
    struct in6_addr a6;
    struct in_addr a4;
    if (inet_pton(AF_INET, ip, &a4) != 1 && inet_pton(AF_INET6, ip, &a6) != 1)
        return base_err(err, "invalid value for bind_ip: '%s' (expected an IPv4 or IPv6 address)",
                        ip);
    int64_t cadence = base_config_int(cfg, "probe_cadence_us");
    int64_t spacing = base_config_int(cfg, "packet_spacing_us");
    double window = base_config_double(cfg, "probe_window_s");
    if (spacing * 2 > cadence)
        return base_err(err,
                        "invalid value for packet_spacing_us: %lld (must be at most half of "
                        "probe_cadence_us, %lld)",
                        (long long)spacing, (long long)cadence);
    /* A window needs a few probes per direction to fit at all. */
    if (window * 1e6 < 20.0 * (double)cadence)
        return base_err(err,
                        "invalid value for probe_window_s: %g (must hold at least 20 probes at "
                        "probe_cadence_us %lld)",
                        window, (long long)cadence);
    const char *est = base_config_str(cfg, "estimator");
    if (clock_estimator_find(est) == NULL)
        return base_err(
            err, "invalid value for estimator: '%s' (expected svm, hull, minrtt or ols)", est);
    struct node_sim_delay sd[NODE_SIM_DELAY_MAX];
    size_t nsd;
    if (node_parse_sim_delay(base_config_str(cfg, "sim_path_delay"), sd, &nsd, e) != BASE_OK)
        return base_err(err, "invalid value for sim_path_delay: %s", e);
    const char *sim = base_config_str(cfg, "sim_clock");
    if (*sim) {
        clock_sim_params_t p = {0};
        if (clock_sim_parse_spec(sim, &p, e) != BASE_OK)
            return base_err(err, "invalid value for sim_clock: %s", e);
    }
    double step_ms = base_config_double(cfg, "sim_step_ms");
    double late_us = base_config_double(cfg, "sim_late_us");
    if (late_us > step_ms * 1000.0 * 0.1)
        return base_err(err,
                        "invalid value for sim_late_us: %g (at most a tenth of sim_step_ms, %g "
                        "ms)",
                        late_us, step_ms);
    int64_t jitter_us = base_config_int(cfg, "sim_jitter_us");
    if ((double)jitter_us > step_ms * 1000.0 * 0.1)
        return base_err(err,
                        "invalid value for sim_jitter_us: %lld (at most a tenth of sim_step_ms, "
                        "%g ms)",
                        (long long)jitter_us, step_ms);
    const char *key = base_config_str(cfg, "probe_key");
    uint8_t k[NODE_PROBE_KEY_SIZE];
    if (*key && node_parse_key(key, k, e) != BASE_OK)
        return base_err(err, "invalid value for probe_key: %s", e);
    const char *te = base_config_str(cfg, "trace_endpoint");
    if (strcmp(te, "auto") != 0 && strcmp(te, "none") != 0 && strncmp(te, "ipc://", 6) != 0 &&
        strncmp(te, "tcp://", 6) != 0)
        return base_err(err,
                        "invalid value for trace_endpoint: '%s' (expected auto, none, ipc://PATH "
                        "or tcp://ADDR:PORT)",
                        te);
    if (!*base_config_str(cfg, "output_dir"))
        return base_err(err, "invalid value for output_dir: empty");
    return BASE_OK;
}
