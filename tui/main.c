/*
 * dptop — entry point.  The command line has two parts:
 *
 *   - a mode flag that picks what dptop does (`modes` below): today only
 *     --record FILE (headless); the console, --replay and --export add rows;
 *   - configuration flags: every key of `cfg_keys` is also a flag
 *     (--hub tcp://HOST:7410, --state-timeout-ms 2000, ...), applied over
 *     the built-in defaults, the JSON file (--config FILE or DPTOP_CONFIG)
 *     and the environment (DPTOP_HUB, ...), SPEC.md §3.
 *
 * Exit codes: 0 success, 1 runtime failure, 2 bad usage or configuration
 * (one line on stderr naming the offending option or key).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"

static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
    (void)sig;
    stop_flag = 1;
}

/* Modes, implemented in their own files (to move into tui/tui.h with the console). */
int tui_record_run(const base_config_t *cfg, const char *path, volatile sig_atomic_t *stop);

struct mode {
    const char *flag; /* takes one argument */
    const char *arg;  /* its name in --help */
    const char *help;
    int (*run)(const base_config_t *cfg, const char *arg, volatile sig_atomic_t *stop);
};

static const struct mode modes[] = {
    {"--record", "FILE", "record every bus message to FILE, headless, until SIGINT/SIGTERM",
     tui_record_run},
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
    {"curve_server_key", BASE_CFG_STRING, "", 1, 0,
     "the hub's CURVE public key (Z85); empty: no bus security"},
    {"curve_public_key", BASE_CFG_STRING, "", 1, 0, "this client's CURVE public key (Z85)"},
    {"curve_secret_key", BASE_CFG_STRING, "", 1, 0, "this client's CURVE secret key (Z85)"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: dptop MODE [OPTIONS]\n\nmodes:\n");
    for (size_t i = 0; i < BASE_ARRAY_LEN(modes); i++)
        fprintf(out, "  %s %-12s %s\n", modes[i].flag, modes[i].arg, modes[i].help);
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
    fprintf(out, "  --config FILE          JSON configuration file (also DPTOP_CONFIG)\n"
                 "  --print-config         show the effective configuration and exit\n"
                 "  --help, --version\n"
                 "\nSee dptop(1), docs/PROTOCOL.md and docs/RECORDING.md.\n");
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
    size_t nset = 0;
    base_config_t *cfg = base_config_new(cfg_keys, BASE_ARRAY_LEN(cfg_keys));
    int rc = 2;
    if (set_name == NULL || set_value == NULL)
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
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "dptop: unexpected argument '%s' (try --help)\n", a);
            goto out;
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
        const char *value = flag_value(argc, argv, &i, eq);
        if (value == NULL) {
            fprintf(stderr, "dptop: option %s needs a value (try --help)\n", name);
            goto out;
        }
        if (!strcmp(name, "--config")) {
            config_file = value;
            continue;
        }
        const struct mode *m = NULL;
        for (size_t j = 0; j < BASE_ARRAY_LEN(modes); j++)
            if (!strcmp(name, modes[j].flag))
                m = &modes[j];
        if (m) {
            if (mode && mode != m) {
                fprintf(stderr, "dptop: %s and %s cannot be combined\n", mode->flag, m->flag);
                goto out;
            }
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
    if (mode == NULL) {
        fprintf(stderr, "dptop: no mode given; the console is not built yet, try --record FILE "
                        "(see --help)\n");
        goto out;
    }
    if (mode_arg[0] == '\0') {
        fprintf(stderr, "dptop: %s needs a non-empty %s\n", mode->flag, mode->arg);
        goto out;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop; /* no SA_RESTART: a blocking poll returns at once */
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* A full file system or file size limit must be an error, not a signal. */
    signal(SIGXFSZ, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    rc = mode->run(cfg, mode_arg, &stop_flag);
out:
    base_config_destroy(&cfg);
    free(set_name);
    free(set_value);
    return rc;
}
