/*
 * dptop --record FILE: headless.  Subscribes to every bus message, fetches
 * the late-joiner state first (so the file is self-contained: node table,
 * plan, fits, name tables and scope trees come before the live stream), and
 * appends every message with its arrival time to a recording
 * (docs/RECORDING.md).  SIGINT/SIGTERM stop it cleanly; a write error stops
 * it at once with the reason.  Either way it prints a summary.
 */
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "bus/bus.h"
#include "tui/tui_int.h"

static void print_summary(FILE *out, const char *path, const struct bus_sub_stats *st,
                          const struct tui_recq_stats *ws, double secs)
{
    /* What reached the file, then what came (the state's part of what came:
     * a file cut short holds less than it). */
    fprintf(out,
            "dptop: recorded %" PRIu64 " messages in %.1f s to %s (%" PRIu64
            " bytes on disk) of %" PRIu64 " received (%" PRIu64 " bytes, %" PRIu64
            " of them the late-joiner state)\n",
            ws->written, secs, path, ws->bytes, st->msgs, st->bytes, st->state_msgs);
    if (ws->written != st->msgs)
        fprintf(out,
                "dptop: received %" PRIu64 " messages, %" PRIu64 " did not reach the file (%" PRIu64
                " dropped: the write queue was full)\n",
                st->msgs, st->msgs - ws->written, ws->dropped);
    fprintf(out, "dptop: drops seen via seq gaps: %" PRIu64, st->gaps);
    const char *sep = " (";
    for (int k = 0; k < BUS_K_NKINDS; k++)
        if (st->kind[k].gaps) {
            fprintf(out, "%s%s %" PRIu64, sep, bus_kind_name((enum bus_kind)k), st->kind[k].gaps);
            sep = ", ";
        }
    fprintf(out,
            "%s; sender restarts: %" PRIu64 "; seq jumps past any plausible loss: %" PRIu64
            " (%" PRIu64 " of them one stray message); local queue drops: %" PRIu64 "\n",
            sep[0] == ',' ? ")" : "", st->resets, st->jumps, st->strays, st->queue_drops);
    fprintf(out, "dptop: decode errors: %" PRIu64, base_decstats_errors(&st->dec));
    sep = " (";
    for (int i = 1; i < BASE_DEC_NKINDS; i++)
        if (st->dec.n[i]) {
            fprintf(out, "%s%s %" PRIu64, sep, base_dec_name((enum base_dec)i), st->dec.n[i]);
            sep = ", ";
        }
    fprintf(out, "%s\n", sep[0] == ',' ? ")" : "");
    fflush(out);
}

int tui_sub_setup(const base_config_t *cfg, const char *hub_override, struct tui_sub_setup *out,
                  char *err)
{
    memset(out, 0, sizeof *out);
    const char *hub = hub_override ? hub_override : base_config_str(cfg, "hub");
    char why[BASE_ERRLEN];
    if (bus_endpoints_derive(hub, &out->ep, why) != BASE_OK)
        return base_err(err, "invalid value for hub: %s", why);
    out->sub_ep = hub_override ? "" : base_config_str(cfg, "hub_sub");
    if (out->sub_ep[0] == '\0')
        out->sub_ep = out->ep.sub;
    out->lim.max_header = (size_t)base_config_int(cfg, "max_header_bytes");
    out->lim.max_payload = (size_t)base_config_int(cfg, "max_payload_bytes");
    /* CURVE: all three keys, or none. */
    static const char *const curve_keys[] = {"curve_server_key", "curve_public_key",
                                             "curve_secret_key"};
    const char *keys[3];
    int nkeys = 0;
    for (int i = 0; i < 3; i++) {
        keys[i] = base_config_str(cfg, curve_keys[i]);
        nkeys += keys[i][0] != '\0';
    }
    const char *dir = base_config_str(cfg, "curve_dir");
    if (*dir && nkeys > 0)
        return base_err(err,
                        "invalid value for curve_dir: '%s' (give the key directory or the "
                        "three curve keys, not both)",
                        dir);
    static const char *const key_files[] = {"hub.public", "client.public", "client.secret"};
    for (int i = 0; i < 3 && *dir; i++) {
        if (bus_curve_key_file(dir, key_files[i], out->key_buf[i], err) != BASE_OK)
            return BASE_ERR;
        keys[i] = out->key_buf[i];
        nkeys++;
    }
    for (int i = 0; i < 3 && nkeys > 0; i++)
        if (strlen(keys[i]) != 40)
            return base_err(err, "invalid value for %s: expected 40 characters of Z85 (%s)",
                            curve_keys[i],
                            nkeys < 3 ? "the three curve keys go together" : "a CURVE key");
    out->curve =
        (struct bus_curve){.server_key = keys[0], .public_key = keys[1], .secret_key = keys[2]};
    out->use_curve = nkeys > 0;
    return BASE_OK;
}

bus_sub_t *tui_sub_open(const base_config_t *cfg, const struct tui_sub_setup *su, char *err)
{
    struct bus_sub_opts so = {.endpoint = su->sub_ep,
                              .rcvhwm = (int)base_config_int(cfg, "sub_hwm"),
                              .limits = su->lim,
                              .curve = su->use_curve ? &su->curve : NULL};
    return bus_sub_new(&so, err);
}

int tui_record_run(const base_config_t *cfg, const char *path, volatile sig_atomic_t *stop)
{
    char err[BASE_ERRLEN];
    struct tui_sub_setup su;
    if (tui_sub_setup(cfg, NULL, &su, err) != BASE_OK) {
        fprintf(stderr, "dptop: %s\n", err);
        return 2;
    }
    const char *sub_ep = su.sub_ep;
    struct bus_endpoints ep = su.ep;
    /* Written by a thread of its own, so that a slow disk does not stop the
     * receiving (the hub would drop for this subscriber, seen as gaps). */
    tui_recq_t *w = tui_recq_open(path, (int)base_config_int(cfg, "record_flush_ms"), 0, err);
    if (w == NULL) {
        fprintf(stderr, "dptop: %s\n", err);
        return 1;
    }
    bus_sub_t *sub = tui_sub_open(cfg, &su, err);
    if (sub == NULL) {
        fprintf(stderr, "dptop: %s\n", err);
        tui_recq_close(&w, NULL, NULL);
        return 1;
    }
    fprintf(stderr, "dptop: recording %s to %s (SIGINT or SIGTERM stops)\n", sub_ep, path);
    int64_t t0 = base_monotonic_ns(), next_state_try = 0; /* the wait for the state counts */
    int timeout = (int)base_config_int(cfg, "state_timeout_ms");
    struct bus_state_info info;
    bool want_state = false; /* no state yet: asked again once the hub is heard */
    if (timeout > 0) {
        if (bus_sub_fetch_state(sub, ep.reg, timeout, &info, err) != BASE_OK) {
            fprintf(stderr,
                    "dptop: %s; recording the live stream, and the hub's state once it answers\n",
                    err);
            want_state = true;
        } else if (!info.complete || !info.synced)
            fprintf(stderr,
                    "dptop: the hub's state was %s%s (%" PRIu64 " messages); recording anyway\n",
                    info.complete ? "" : "incomplete", info.synced ? "" : " and not synchronised",
                    info.count);
    }
    int rc = 0;
    while (!*stop) {
        bus_msg_t *m = NULL;
        int r = bus_sub_recv(sub, &m, 100, err);
        if (r < 0) {
            fprintf(stderr, "dptop: %s\n", err);
            rc = 1;
            break;
        }
        if (r == 1) {
            r = tui_recq_add(w, m, err);
            bus_msg_destroy(&m);
            if (r == BUS_DROPPED)
                r = BASE_OK; /* counted, and in the summary */
            /*
             * Started before the hub: its first message says it is up, and
             * its state (name tables, node table, plan...) is fetched then,
             * so that the recording holds what names the events (the state
             * comes ahead of the live stream).  Tried again every 5 s.
             */
            int64_t now = base_monotonic_ns();
            if (want_state && r == BASE_OK && now >= next_state_try) {
                char e2[BASE_ERRLEN];
                if (bus_sub_fetch_state(sub, ep.reg, timeout, &info, e2) == BASE_OK) {
                    want_state = false;
                    fprintf(stderr,
                            "dptop: the hub answered: its state (%" PRIu64
                            " messages) is in the recording\n",
                            info.count);
                } else {
                    next_state_try = now + 5000000000LL;
                }
            }
        } else {
            struct tui_recq_stats rs;
            tui_recq_stats(w, &rs, err);
            r = rs.failed ? BASE_ERR : BASE_OK;
        }
        if (r != BASE_OK) {
            fprintf(stderr, "dptop: %s; recording stopped\n", err);
            rc = 1;
            break;
        }
    }
    /* Everything queued is written, flushed and synced before the counts. */
    struct tui_recq_stats ws;
    if (tui_recq_close(&w, &ws, err) != BASE_OK) {
        if (rc == 0)
            fprintf(stderr, "dptop: %s\n", err);
        rc = 1;
    }
    struct bus_sub_stats st;
    bus_sub_stats(sub, &st);
    bus_sub_destroy(&sub);
    print_summary(stdout, path, &st, &ws, (double)(base_monotonic_ns() - t0) / 1e9);
    return rc;
}

/* One line per node: what keeps it from counting as aligned within bound_ns. */
static void check_report(const tui_model_t *m, double bound_ns, FILE *out)
{
    for (size_t i = 0; i < tui_model_nnodes(m); i++) {
        const struct tui_node *n = tui_model_node(m, i);
        bool fit = n->have_fit && n->fit.aligned && isfinite(n->fit.uncertainty_ns);
        fprintf(out, "dptop:   n%u %s: %s", n->id, n->host[0] ? n->host : "?",
                tui_node_state_name(n->state));
        if (n->is_ref)
            fputs(", the reference\n", out);
        else if (!fit)
            fputs(", no aligned fit\n", out);
        else
            fprintf(out, ", ±%.0f ns%s\n", n->fit.uncertainty_ns,
                    n->fit.uncertainty_ns > bound_ns ? " (above the bound)" : "");
    }
}

int tui_check_run(const base_config_t *cfg, const char *arg, volatile sig_atomic_t *stop)
{
    char err[BASE_ERRLEN], *end;
    long want = strtol(arg, &end, 10);
    if (*arg == '\0' || *end != '\0' || want < 1 || want > 65536) {
        fprintf(stderr, "dptop: --check needs the number of nodes expected (1..65536), not '%s'\n",
                arg);
        return 2;
    }
    double bound = base_config_double(cfg, "check_unc_ns");
    int64_t deadline =
        base_monotonic_ns() + (int64_t)(base_config_double(cfg, "check_timeout_s") * 1e9);
    struct tui_sub_setup su;
    if (tui_sub_setup(cfg, NULL, &su, err) != BASE_OK) {
        fprintf(stderr, "dptop: %s\n", err);
        return 2;
    }
    bus_sub_t *sub = tui_sub_open(cfg, &su, err);
    if (sub == NULL) {
        fprintf(stderr, "dptop: %s\n", err);
        return 1;
    }
    tui_model_t *m = tui_model_new(NULL);
    struct bus_state_info info;
    bool have_state = false;
    int64_t next_try = 0, next_eval = 0;
    int rc = 1;
    while (!*stop && base_monotonic_ns() < deadline) {
        int64_t now = base_monotonic_ns();
        if (!have_state && now >= next_try) {
            have_state =
                bus_sub_fetch_state(sub, su.ep.reg, (int)base_config_int(cfg, "state_timeout_ms"),
                                    &info, err) == BASE_OK;
            next_try = now + 2000000000LL;
        }
        bus_msg_t *msg = NULL;
        int r = bus_sub_recv(sub, &msg, 100, err);
        if (r < 0) {
            fprintf(stderr, "dptop: %s\n", err);
            break;
        }
        if (r == 1) {
            tui_model_apply(m, msg, base_realtime_ns(), NULL);
            bus_msg_destroy(&msg);
        }
        if (base_monotonic_ns() < next_eval)
            continue;
        next_eval = base_monotonic_ns() + 250000000LL;
        size_t ok = 0;
        double worst = 0;
        int worst_node = -1;
        for (size_t i = 0; i < tui_model_nnodes(m); i++) {
            const struct tui_node *n = tui_model_node(m, i);
            if (n->state != TUI_NODE_UP)
                continue;
            if (n->is_ref) {
                ok++;
                continue;
            }
            if (!n->have_fit || !n->fit.aligned || !isfinite(n->fit.uncertainty_ns) ||
                n->fit.uncertainty_ns > bound)
                continue;
            ok++;
            if (n->fit.uncertainty_ns >= worst) {
                worst = n->fit.uncertainty_ns;
                worst_node = n->id;
            }
        }
        if (ok >= (size_t)want) {
            printf("dptop: %zu of %ld nodes up and aligned within ±%g ns (worst ±%.0f ns, n%d)\n",
                   ok, want, bound, worst, worst_node);
            rc = 0;
            break;
        }
    }
    if (rc != 0) {
        printf("dptop: not %ld nodes aligned within ±%g ns%s:\n", want, bound,
               *stop ? " (stopped)" : " before the timeout");
        if (tui_model_nnodes(m) == 0)
            printf("dptop:   no node heard from %s\n", su.sub_ep);
        check_report(m, bound, stdout);
    }
    fflush(stdout);
    tui_model_destroy(&m);
    bus_sub_destroy(&sub);
    return rc;
}
