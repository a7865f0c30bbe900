/*
 * dptop — entry point.  The command line has two parts:
 *
 *   - a mode flag that picks what dptop does (`modes` below): none for the
 *     live console, --record FILE (headless), --replay FILE (the console on
 *     a recording, or with --export OUT a Chrome trace or an XSpace, and/or
 *     with --export-windows OUT the window statistics, without a terminal),
 *     --demo [N] (a local simulated cluster and the console on it);
 *   - configuration flags: every key of `cfg_keys` is also a flag
 *     (--hub tcp://HOST:7410, --state-timeout-ms 2000, ...), applied over
 *     the built-in defaults, the JSON file (--config FILE or DPTOP_CONFIG)
 *     and the environment (DPTOP_HUB, ...), SPEC.md §3.
 *
 * Exit codes: 0 success, 1 runtime failure, 2 bad usage or configuration
 * (one line on stderr naming the offending option or key).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "tui/tui.h"

static volatile sig_atomic_t stop_flag;
/* --import arguments (repeatable, each may name several files) and --strict. */
static const char **import_args;
static size_t nimport_args;
static bool import_strict;

static void on_stop(int sig)
{
    (void)sig;
    stop_flag = 1;
}

/* The run functions take the mode's argument (NULL when it has none). */
static int run_record(const base_config_t *cfg, const char *arg, volatile sig_atomic_t *stop)
{
    return tui_record_run(cfg, arg, stop);
}

static int run_check(const base_config_t *cfg, const char *arg, volatile sig_atomic_t *stop)
{
    return tui_check_run(cfg, arg, stop);
}

static int run_replay(const base_config_t *cfg, const char *arg, volatile sig_atomic_t *stop)
{
    /* A recording that cannot be opened is a bad argument (2), as dpclock's
     * inputs are; what goes wrong once it is read is a failure (1). */
    FILE *f = fopen(arg, "rb");
    if (f == NULL) {
        fprintf(stderr, "dptop: cannot open recording %s: %s\n", arg, strerror(errno));
        return 2;
    }
    fclose(f);
    struct tui_export_req req = {.out = base_config_str(cfg, "export"),
                                 .windows = base_config_str(cfg, "export_windows"),
                                 .collectives = base_config_str(cfg, "export_collectives"),
                                 .imports = import_args,
                                 .nimports = nimport_args,
                                 .strict = import_strict,
                                 .map = base_config_str(cfg, "map")};

    /* Checked in main(): the value is one of the names. */
    tui_export_format_parse(base_config_str(cfg, "format"), &req.format);
    if (req.out[0] || req.windows[0] || req.collectives[0] || req.map[0])
        return tui_export_run(cfg, arg, &req, stop);
    return tui_replay_run(cfg, arg, &req, stop);
}

static const char *argv0;

static int run_demo(const base_config_t *cfg, const char *arg, volatile sig_atomic_t *stop)
{
    int n = arg ? atoi(arg) : (int)base_config_int(cfg, "demo_nodes");
    return tui_demo_run(cfg, n, argv0, stop);
}

enum mode_arg { ARG_REQUIRED, ARG_OPTIONAL_NUMBER };

struct mode {
    const char *flag;
    enum mode_arg takes;
    const char *arg; /* its name in --help */
    const char *help;
    int (*run)(const base_config_t *cfg, const char *arg, volatile sig_atomic_t *stop);
};

static const struct mode modes[] = {
    {"--record", ARG_REQUIRED, "FILE",
     "record every bus message to FILE, headless, until SIGINT/SIGTERM", run_record},
    {"--replay", ARG_REQUIRED, "FILE",
     "the console on a recording (with --export OUT / --export-windows OUT: files, no terminal)",
     run_replay},
    {"--check", ARG_REQUIRED, "N",
     "exit 0 once N nodes of the hub are up and aligned within --check-unc-ns, 1 at "
     "--check-timeout-s (for job scripts)",
     run_check},
    {"--demo", ARG_OPTIONAL_NUMBER, "[N]",
     "start a local cluster of N nodes (default 4) with simulated clocks and workload, "
     "and the console on it",
     run_demo},
};

static const struct base_cfg_key cfg_keys[] = {
    {"hub", BASE_CFG_STRING, "tcp://127.0.0.1:7410", 1, 0,
     "master endpoint: its registration port P; publishers use P+1, subscribers P+2"},
    {"hub_sub", BASE_CFG_STRING, "", 1, 0,
     "subscriber (XPUB) endpoint when it is not the hub's P+2; empty: derived"},
    {"state_timeout_ms", BASE_CFG_INT, "3000", 0, 600000,
     "wait this long for the hub's late-joiner state (0: do not ask)"},
    {"record_flush_ms", BASE_CFG_INT, "250", 1, 1000,
     "longest time a received message waits in the recording buffer"},
    {"sub_hwm", BASE_CFG_INT, "100000", 1, 10000000,
     "messages queued for this subscriber before the hub drops (seen as seq gaps)"},
    {"max_header_bytes", BASE_CFG_INT, "1048576", 256, 1073741824,
     "largest JSON header frame accepted"},
    {"max_payload_bytes", BASE_CFG_INT, "67108864", 1024, 4294967295.0,
     "largest binary payload frame accepted"},
    {"event_budget", BASE_CFG_INT, "2097152", 1000, 1e9,
     "events the console holds; the oldest are evicted beyond (counted)"},
    {"output_dir", BASE_CFG_STRING, ".", 1, 0, "where snapshots (s) and recordings (r) go"},
    {"fps", BASE_CFG_INT, "10", 1, 60, "console frames per second"},
    {"color", BASE_CFG_BOOL, "true", 1, 0, "colours (NO_COLOR in the environment also disables)"},
    {"speed", BASE_CFG_DOUBLE, "1", 0, 1000, "replay speed (0: as fast as possible)"},
    {"export", BASE_CFG_STRING, "", 1, 0,
     "with --replay: write the merged, aligned trace to this file and exit (a Chrome trace; "
     "Perfetto's own format when it ends in .pftrace or .perfetto-trace; an XSpace for "
     "TensorBoard when it ends in .pb, or to a directory: one file per node)"},
    {"format", BASE_CFG_STRING, "auto", 1, 0,
     "--export format: auto (by the name), chrome, xplane or perfetto"},
    {"export_windows", BASE_CFG_STRING, "", 1, 0,
     "with --replay: write the window statistics (win, edge_fit, node_fit, solve) as JSON "
     "lines to this file and exit"},
    {"check_unc_ns", BASE_CFG_DOUBLE, "1000", 0, 1e12,
     "--check: the largest node uncertainty that counts as aligned, ns"},
    {"check_timeout_s", BASE_CFG_DOUBLE, "60", 0.1, 86400, "--check: how long to wait, s"},
    {"snapshot_format", BASE_CFG_STRING, "chrome", 1, 0,
     "what the console's s writes: chrome (a Chrome trace, .json) or perfetto (.pftrace)"},
    {"export_collectives", BASE_CFG_STRING, "", 1, 0,
     "with --replay: write every collective instance (arrivals, last rank, skew, lateness "
     "against the clocks' uncertainty) to this file and exit: CSV when it ends in .csv, else "
     "JSON lines"},
    {"map", BASE_CFG_STRING, "", 1, 0,
     "with --replay: times of a node's clock on stdin (ns, or JSON lines) to global times on "
     "stdout, through the recording's maps: NODE[:realtime|monotonic|boottime], or lines (each "
     "line names them)"},
    {"demo_nodes", BASE_CFG_INT, "4", 2, 64, "--demo: nodes in all, the master included"},
    {"demo_straggler", BASE_CFG_INT, "-1", -1, 63,
     "--demo: the node (index, 0 = master) whose collectives start late; -1: none"},
    {"demo_log", BASE_CFG_STRING, "", 1, 0,
     "--demo: write the children, endpoints and simulated clocks (JSON lines) here"},
    {"dpnode", BASE_CFG_STRING, "", 1, 0, "--demo: the dpnode program (empty: next to dptop)"},
    {"curve_dir", BASE_CFG_STRING, "", 1, 0,
     "directory of CURVE keys (dpnode --gen-keys): the hub's public key and a client pair, "
     "hub.public, client.public, client.secret (instead of the three keys below)"},
    {"curve_server_key", BASE_CFG_STRING, "", 1, 0,
     "the hub's CURVE public key (Z85); empty: no bus security"},
    {"curve_public_key", BASE_CFG_STRING, "", 1, 0, "this client's CURVE public key (Z85)"},
    {"curve_secret_key", BASE_CFG_STRING, "", 1, 0, "this client's CURVE secret key (Z85)"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: dptop [MODE] [OPTIONS]\n\nmodes (none: the live console on --hub):\n");
    for (size_t i = 0; i < BASE_ARRAY_LEN(modes); i++)
        fprintf(out, "  %s %-6s %s\n", modes[i].flag, modes[i].arg, modes[i].help);
    fprintf(out, "\noptions (also DPTOP_<KEY> in the environment or keys of a JSON --config):\n");
    for (size_t i = 0; i < BASE_ARRAY_LEN(cfg_keys); i++) {
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", cfg_keys[i].name);
        for (char *p = flag; *p; p++)
            if (*p == '_')
                *p = '-';
        fprintf(out, "  %-22s %s (default: %s)\n", flag, cfg_keys[i].help,
                cfg_keys[i].def[0] ? cfg_keys[i].def : "\"\"");
    }
    fprintf(out, "  --import [NODE=]FILE...  with --replay: other profilers' traces (PyTorch/"
                 "Kineto JSON,\n"
                 "                         rocprofv3 CSV/JSON, XSpace) on the recording's clock, "
                 "in the export\n"
                 "                         or the console (docs/IMPORT.md)\n"
                 "  --strict               with --import: drop events outside the aligned windows\n"
                 "  --config FILE          JSON configuration file (also DPTOP_CONFIG)\n"
                 "  --print-config         show the effective configuration and exit\n"
                 "  --help, --version\n"
                 "\nKeys in the console: press ? (see dptop(1) and docs/CONSOLE.md).\n"
                 "See also docs/PROTOCOL.md and docs/RECORDING.md.\n");
}

/* "--name=value" or "--name value": the value, or NULL when missing. */
static const char *flag_value(int argc, char **argv, int *i, const char *eq)
{
    if (eq)
        return eq + 1;
    if (*i + 1 < argc)
        return argv[++*i];
    return NULL;
}

int main(int argc, char **argv)
{
    const struct mode *mode = NULL;
    const char *mode_arg = NULL, *config_file = NULL;
    bool print_config = false;
    char err[BASE_ERRLEN];
    /* Flags are applied after the file and environment layers. */
    const char **set_name = calloc((size_t)argc, sizeof *set_name);
    const char **set_value = calloc((size_t)argc, sizeof *set_value);
    import_args = calloc((size_t)argc, sizeof *import_args);
    size_t nset = 0;
    base_config_t *cfg = base_config_new(cfg_keys, BASE_ARRAY_LEN(cfg_keys));
    int rc = 2;
    if (set_name == NULL || set_value == NULL || import_args == NULL)
        goto out;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            rc = 0;
            goto out;
        }
        if (!strcmp(a, "--version") || !strcmp(a, "-V")) {
            printf("dptop %s\n", DP_VERSION);
            rc = 0;
            goto out;
        }
        if (!strcmp(a, "--print-config")) {
            print_config = true;
            continue;
        }
        if (!strcmp(a, "--strict")) {
            import_strict = true;
            continue;
        }
        /* --import FILE [FILE...]: a shell glob expands to several words. */
        if (!strcmp(a, "--import") || !strncmp(a, "--import=", 9)) {
            size_t before = nimport_args;
            if (a[8] == '=')
                import_args[nimport_args++] = a + 9;
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
                import_args[nimport_args++] = argv[++i];
            if (nimport_args == before || !import_args[nimport_args - 1][0]) {
                fprintf(stderr, "dptop: --import needs a file ([NODE=]FILE, try --help)\n");
                goto out;
            }
            continue;
        }
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "dptop: unexpected argument '%s' (try --help)\n", a);
            goto out;
        }
        const struct mode *m = NULL;
        for (size_t j = 0; j < BASE_ARRAY_LEN(modes); j++)
            if (!strncmp(a, modes[j].flag, strlen(modes[j].flag)) &&
                (a[strlen(modes[j].flag)] == '\0' || a[strlen(modes[j].flag)] == '='))
                m = &modes[j];
        if (m && mode && mode != m) {
            fprintf(stderr, "dptop: %s and %s cannot be combined\n", mode->flag, m->flag);
            goto out;
        }
        if (m && m->takes == ARG_OPTIONAL_NUMBER) {
            const char *v = strchr(a, '=');
            v = v                                                                  ? v + 1
                : (i + 1 < argc && argv[i + 1][0] >= '0' && argv[i + 1][0] <= '9') ? argv[++i]
                                                                                   : NULL;
            if (v && (strspn(v, "0123456789") != strlen(v) || atoi(v) < 2 || atoi(v) > 64)) {
                fprintf(stderr, "dptop: invalid value for %s: '%s' (2..64 nodes)\n", m->flag, v);
                goto out;
            }
            mode = m;
            mode_arg = v;
            continue;
        }
        char name[64];
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        if (len >= sizeof name) {
            fprintf(stderr, "dptop: unknown option '%.40s...' (try --help)\n", a);
            goto out;
        }
        memcpy(name, a, len);
        name[len] = '\0';
        /* An option we do not know is reported as such, not as missing its value. */
        if (!m && strcmp(name, "--config") != 0 &&
            (strncmp(name, "--", 2) != 0 || !base_config_has(cfg, name + 2))) {
            fprintf(stderr, "dptop: unknown option '%s' (try --help)\n", name);
            goto out;
        }
        const char *value = flag_value(argc, argv, &i, eq);
        if (value == NULL) {
            fprintf(stderr, "dptop: option %s needs a value (try --help)\n", name);
            goto out;
        }
        if (!strcmp(name, "--config")) {
            /* Files are not merged: a second one would drop the first unseen. */
            if (config_file != NULL) {
                fprintf(stderr, "dptop: --config given twice ('%s', '%s'): one file only\n",
                        config_file, value);
                goto out;
            }
            config_file = value;
            continue;
        }
        if (m) {
            mode = m;
            mode_arg = value;
            continue;
        }
        if (!base_config_has(cfg, name + 2)) {
            fprintf(stderr, "dptop: unknown option '%s' (try --help)\n", name);
            goto out;
        }
        set_name[nset] = a + 2;
        set_value[nset++] = value;
    }
    if (base_config_load_layers(cfg, config_file, err) != BASE_OK) {
        fprintf(stderr, "dptop: %s\n", err);
        goto out;
    }
    for (size_t i = 0; i < nset; i++) {
        char name[64];
        size_t len = strcspn(set_name[i], "=");
        snprintf(name, sizeof name, "%.*s", (int)len, set_name[i]);
        if (base_config_set(cfg, name, set_value[i], BASE_CFG_FLAG, err) != BASE_OK) {
            fprintf(stderr, "dptop: %s\n", err);
            goto out;
        }
    }
    if (print_config) {
        base_config_print(cfg, stdout);
        rc = 0;
        goto out;
    }
    if (mode && mode->takes == ARG_REQUIRED && mode_arg[0] == '\0') {
        fprintf(stderr, "dptop: %s needs a non-empty %s\n", mode->flag, mode->arg);
        goto out;
    }
    enum tui_export_format fmt;
    if (tui_export_format_parse(base_config_str(cfg, "format"), &fmt) != BASE_OK) {
        fprintf(stderr,
                "dptop: invalid value for format: '%s' (auto, chrome, xplane or perfetto)\n",
                base_config_str(cfg, "format"));
        goto out;
    }
    const char *sf = base_config_str(cfg, "snapshot_format");
    if (strcmp(sf, "chrome") != 0 && strcmp(sf, "perfetto") != 0) {
        fprintf(stderr, "dptop: invalid value for snapshot_format: '%s' (chrome or perfetto)\n",
                sf);
        goto out;
    }
    const char *export_opts[] = {"export", "export_windows", "map", "export_collectives"};
    for (size_t i = 0; i < BASE_ARRAY_LEN(export_opts); i++)
        if (base_config_str(cfg, export_opts[i])[0] && (mode == NULL || mode->run != run_replay)) {
            fprintf(stderr, "dptop: --%s needs --replay FILE\n",
                    i == 0   ? "export"
                    : i == 1 ? "export-windows"
                    : i == 2 ? "map"
                             : "export-collectives");
            goto out;
        }
    if (nimport_args && (mode == NULL || mode->run != run_replay)) {
        fprintf(stderr, "dptop: --import needs --replay FILE (the recording whose clocks align "
                        "it)\n");
        goto out;
    }
    if (import_strict && nimport_args == 0) {
        fprintf(stderr, "dptop: --strict applies to --import, and there is none\n");
        goto out;
    }
    if (base_config_str(cfg, "export")[0] &&
        strcmp(base_config_str(cfg, "export"), base_config_str(cfg, "export_windows")) == 0) {
        fprintf(stderr, "dptop: --export and --export-windows name the same file\n");
        goto out;
    }
    const char *coll_out = base_config_str(cfg, "export_collectives");
    if (coll_out[0] && (strcmp(coll_out, base_config_str(cfg, "export")) == 0 ||
                        strcmp(coll_out, base_config_str(cfg, "export_windows")) == 0)) {
        fprintf(stderr, "dptop: --export-collectives names the same file as another export\n");
        goto out;
    }
    argv0 = argv[0];

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop; /* no SA_RESTART: a blocking poll returns at once */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL); /* the terminal went away: stop (and stop the demo's children) */
    /* A full file system or file size limit must be an error, not a signal. */
    signal(SIGXFSZ, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    rc = mode ? mode->run(cfg, mode_arg, &stop_flag) : tui_live_run(cfg, &stop_flag);
out:
    base_config_destroy(&cfg);
    free(set_name);
    free(set_value);
    free(import_args);
    return rc;
}
