/*
 * dpnode — the per-host agent (and, with --master, the master).
 *
 * Exit status: 0 after SIGINT/SIGTERM (or --help, --version,
 * --print-config, --gen-keys), 1 on a runtime failure, 2 on bad usage or bad
 * configuration, with a one-line message that names the key.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "base/base.h"
#include "node/node.h"

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static void usage(FILE *out)
{
    size_t n;
    const struct base_cfg_key *keys = node_config_keys(&n);
    fprintf(out,
            "usage: dpnode [--master] [--hub tcp://MASTER:7410] [options]\n"
            "\n"
            "The dptop agent: probes its neighbour hosts' clocks over UDP, publishes edge\n"
            "fits, snapshot pairs, GPU events and status on the bus.  With --master it also\n"
            "hosts the bus hub, plans the probe graph and solves the time base.\n"
            "\n"
            "  --config FILE        JSON configuration file (else $DPTOP_CONFIG)\n"
            "  --print-config       print the effective configuration and exit\n"
            "  --gen-keys DIR       write CURVE key pairs for curve_dir and exit\n"
            "  --help, --version\n"
            "\n"
            "Configuration keys (flag --key-name, environment DPTOP_KEY_NAME, file key_name):\n");
    for (size_t i = 0; i < n; i++) {
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", keys[i].name);
        for (char *p = flag + 2; *p; p++)
            if (*p == '_')
                *p = '-';
        fprintf(out, "  %-22s %s (default: %s)\n", flag, keys[i].help,
                *keys[i].def ? keys[i].def : "\"\"");
    }
    fprintf(out, "\nSee dpnode(1) and docs/DPNODE.md.\n");
}

/* A flag name ("--probe-cadence-us") as a key name, NULL when it is none. */
static const struct base_cfg_key *flag_key(const char *name, size_t len)
{
    size_t n;
    const struct base_cfg_key *keys = node_config_keys(&n);
    char norm[64];
    if (len >= sizeof norm)
        return NULL;
    for (size_t i = 0; i < len; i++)
        norm[i] = name[i] == '-' ? '_' : name[i];
    norm[len] = '\0';
    for (size_t i = 0; i < n; i++)
        if (strcmp(keys[i].name, norm) == 0)
            return &keys[i];
    return NULL;
}

int main(int argc, char **argv)
{
    size_t nkeys;
    const struct base_cfg_key *keys = node_config_keys(&nkeys);
    base_config_t *cfg = base_config_new(keys, nkeys);
    char err[BASE_ERRLEN];
    const char *config_file = NULL, *gen_keys = NULL;
    bool print_config = false;
    int rc = 2;

    /* First pass: options that are not keys, and the file. */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            rc = 0;
            goto out;
        }
        if (!strcmp(argv[i], "--version") || !strcmp(argv[i], "-V")) {
            printf("dpnode %s\n", DP_VERSION);
            rc = 0;
            goto out;
        }
    }
    /* Flags go last, so collect them after the file and environment layers. */
    const char **names = xcalloc((size_t)argc, sizeof *names),
               **values = xcalloc((size_t)argc, sizeof *values);
    size_t nflags = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "dpnode: unexpected argument '%s' (see --help)\n", a);
            goto out_flags;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        const char *value = eq ? eq + 1 : NULL;
        if ((len == 6 && !strncmp(name, "config", 6)) ||
            (len == 8 && !strncmp(name, "gen-keys", 8))) {
            if (value == NULL) {
                if (i + 1 >= argc) {
                    fprintf(stderr, "dpnode: --%.*s needs a value\n", (int)len, name);
                    goto out_flags;
                }
                value = argv[++i];
            }
            /* Files are not merged: a second one would drop the first unseen. */
            if (len == 6 && config_file != NULL) {
                fprintf(stderr, "dpnode: --config given twice ('%s', '%s'): one file only\n",
                        config_file, value);
                goto out_flags;
            }
            if (len == 6)
                config_file = value;
            else
                gen_keys = value;
            continue;
        }
        if (len == 12 && !strncmp(name, "print-config", 12)) {
            print_config = true;
            continue;
        }
        const struct base_cfg_key *k = flag_key(name, len);
        if (k == NULL) {
            fprintf(stderr, "dpnode: unknown option --%.*s (see --help)\n", (int)len, name);
            goto out_flags;
        }
        if (value == NULL) {
            if (k->type == BASE_CFG_BOOL) {
                value = "true";
            } else {
                if (i + 1 >= argc) {
                    fprintf(stderr, "dpnode: --%.*s needs a value\n", (int)len, name);
                    goto out_flags;
                }
                value = argv[++i];
            }
        }
        names[nflags] = k->name;
        values[nflags] = value;
        nflags++;
    }
    if (gen_keys) {
        if (node_gen_keys(gen_keys, err) != BASE_OK) {
            fprintf(stderr, "dpnode: %s\n", err);
            rc = 1;
        } else {
            printf("dpnode: CURVE keys written to %s (hub.public, hub.secret, client.public, "
                   "client.secret)\n",
                   gen_keys);
            rc = 0;
        }
        goto out_flags;
    }
    if (base_config_load_layers(cfg, config_file, err) != BASE_OK) {
        fprintf(stderr, "dpnode: %s\n", err);
        goto out_flags;
    }
    for (size_t i = 0; i < nflags; i++) {
        if (base_config_set(cfg, names[i], values[i], BASE_CFG_FLAG, err) != BASE_OK) {
            fprintf(stderr, "dpnode: %s\n", err);
            goto out_flags;
        }
    }
    if (node_config_check(cfg, err) != BASE_OK) {
        fprintf(stderr, "dpnode: %s\n", err);
        goto out_flags;
    }
    if (print_config) {
        base_config_print(cfg, stdout);
        rc = 0;
        goto out_flags;
    }

    if (base_config_bool(cfg, "exit_with_parent")) {
        pid_t parent = getppid();
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent || parent == 1) {
            fprintf(stderr, "dpnode: the parent process is gone\n");
            rc = 1;
            goto out_flags;
        }
    }
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (base_config_bool(cfg, "relay")) {
        rc = 0;
        if (node_relay_run(cfg, &stop_flag, err) != BASE_OK) {
            fprintf(stderr, "dpnode: %s\n", err);
            rc = 1;
        }
        goto out_flags;
    }
    node_agent_t *agent = node_agent_new(cfg, err);
    if (agent == NULL) {
        fprintf(stderr, "dpnode: %s\n", err);
        rc = 1;
        goto out_flags;
    }
    if (node_agent_run(agent, &stop_flag, err) != BASE_OK) {
        fprintf(stderr, "dpnode: %s\n", err);
        rc = 1;
    } else {
        rc = 0;
    }
    node_agent_destroy(&agent);
out_flags:
    free(names);
    free(values);
out:
    base_config_destroy(&cfg);
    return rc;
}
