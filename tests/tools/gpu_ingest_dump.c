/*
 * gpu_ingest_dump — bind the local link endpoint the way dpnode does
 * (gpu_ingest) and print what arrives, one JSON object per line:
 *
 *   {"msg":"proc"|"names"|"scope"|"snap"|"ev", ...}   each message
 *   {"ev":"kernel", "name":"fwd_gemm", ...}            each event, its name
 *                                                      resolved from the
 *                                                      names received so far
 *   {"msg":"stats", ...}                               at exit
 *
 * Usage: gpu_ingest_dump ENDPOINT [--seconds S] [--ready FILE] [--count]
 * Runs until SIGTERM/SIGINT or for S seconds; FILE is created once the
 * endpoint is bound.  --count prints nothing but the stats, which then also
 * say over how long the events came (ev_span_ms: first to last event
 * message), for benchmarks.  Exit status 0, or 1 when the endpoint cannot
 * be bound.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

#define MAX_PIDS 64

struct pid_names {
    uint32_t pid;
    gpu_names_t *names;
};

struct dump {
    struct pid_names pids[MAX_PIDS];
    size_t npids;
    uint64_t events, unknown_names;
    bool count_only;
    int64_t first_ev_ns, last_ev_ns;
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

/* Names are per sender: keep one table per pid (ids map to this tool's own
 * intern table through the strings). */
static struct pid_names *names_of(struct dump *d, uint32_t pid)
{
    for (size_t i = 0; i < d->npids; i++)
        if (d->pids[i].pid == pid)
            return &d->pids[i];
    if (d->npids == MAX_PIDS)
        return NULL;
    d->pids[d->npids].pid = pid;
    d->pids[d->npids].names = gpu_names_new(1u << 20);
    return &d->pids[d->npids++];
}

static void print_json_string(const char *s)
{
    json_object *o = json_object_new_string(s);
    fputs(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN), stdout);
    json_object_put(o);
}

/* The sender's id -> its name.  Ids arrive in order 1, 2, ... from one
 * sender, so a table that interns them in arrival order maps id to id; a
 * gap (a lost names message) is filled with placeholders. */
static void add_name(struct pid_names *pn, uint32_t id, const char *name)
{
    while (gpu_names_count(pn->names) + 1 < id) {
        char ph[32];
        snprintf(ph, sizeof ph, "<missing %u>", gpu_names_count(pn->names) + 1);
        gpu_names_intern(pn->names, ph);
    }
    if (gpu_names_count(pn->names) + 1 == id)
        gpu_names_intern(pn->names, name);
}

static void on_msg(void *ctx, const gpu_msg_t *m)
{
    struct dump *d = ctx;
    if (d->count_only) {
        if (m->kind == GPU_MSG_EV) {
            d->last_ev_ns = base_monotonic_ns();
            if (d->first_ev_ns == 0)
                d->first_ev_ns = d->last_ev_ns;
            d->events += m->nev;
        }
        return;
    }
    struct pid_names *pn = names_of(d, m->pid);
    printf("{\"msg\":\"%s\",\"pid\":%" PRIu32 ",\"seq\":%" PRIu64, gpu_msg_kind_name(m->kind),
           m->pid, m->seq);
    switch (m->kind) {
    case GPU_MSG_PROC:
        printf(",\"exe\":");
        print_json_string(m->exe);
        printf(",\"backend\":\"%s\",\"devices\":%" PRIu32 ",\"t0_ns\":%" PRId64 "}\n", m->backend,
               m->devices, m->t0_ns);
        break;
    case GPU_MSG_NAMES:
        printf(",\"names\":[");
        for (size_t i = 0; i < m->nnames; i++) {
            printf("%s[%" PRIu32 ",", i ? "," : "", m->name_ids[i]);
            print_json_string(m->name_strs[i]);
            printf("]");
            if (pn != NULL)
                add_name(pn, m->name_ids[i], m->name_strs[i]);
        }
        printf("]}\n");
        break;
    case GPU_MSG_SCOPE:
        printf(",\"pairs\":[");
        for (size_t i = 0; i < m->nscope; i++)
            printf("%s[%" PRIu64 ",%" PRIu64 "]", i ? "," : "", m->scope[i].child,
                   m->scope[i].parent);
        printf("]}\n");
        break;
    case GPU_MSG_SNAP:
        printf(",\"domains\":[\"%s\",\"%s\"],\"pairs\":[", m->domain_a, m->domain_b);
        for (size_t i = 0; i < m->nsnap; i++)
            printf("%s[%" PRId64 ",%" PRId64 "]", i ? "," : "", m->snap[i].a_ns, m->snap[i].b_ns);
        printf("]}\n");
        break;
    case GPU_MSG_EV:
        printf(",\"count\":%zu,\"dropped_total\":%" PRIu64 "}\n", m->nev, m->dropped_total);
        for (size_t i = 0; i < m->nev; i++) {
            const gpu_event_t *e = &m->ev[i];
            const char *name = e->name_id && pn ? gpu_names_get(pn->names, e->name_id) : NULL;
            if (e->name_id != 0 && name == NULL)
                d->unknown_names++;
            d->events++;
            printf("{\"ev\":\"%s\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"dev\":%u"
                   ",\"stream\":%" PRIu32 ",\"name_id\":%" PRIu32 ",\"name\":",
                   gpu_event_kind_name((enum gpu_event_kind)e->kind), e->pid, e->tid, e->device,
                   e->stream, e->name_id);
            if (name != NULL)
                print_json_string(name);
            else
                printf("null");
            printf(",\"corr\":%" PRIu32 ",\"scope\":%" PRIu64 ",\"start\":%" PRId64
                   ",\"end\":%" PRId64 ",\"bytes\":%" PRIu64 ",\"step\":%" PRIu64
                   ",\"copy\":\"%s\",\"flags\":%u,\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u]}\n",
                   e->corr_id, e->scope_id, e->start_ns, e->end_ns, e->bytes, e->step,
                   gpu_copy_kind_name((enum gpu_copy_kind)e->copy_kind), e->flags, e->grid[0],
                   e->grid[1], e->grid[2], e->block[0], e->block[1], e->block[2]);
        }
        break;
    default:
        printf("}\n");
        break;
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *endpoint = NULL, *ready = NULL;
    double seconds = 0;
    bool count_only = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--ready") && i + 1 < argc)
            ready = argv[++i];
        else if (!strcmp(argv[i], "--count"))
            count_only = true;
        else if (argv[i][0] != '-' && endpoint == NULL)
            endpoint = argv[i];
        else {
            fprintf(stderr,
                    "usage: gpu_ingest_dump ENDPOINT [--seconds S] [--ready FILE] [--count]\n");
            return 2;
        }
    }
    if (endpoint == NULL) {
        fprintf(stderr, "usage: gpu_ingest_dump ENDPOINT [--seconds S] [--ready FILE] [--count]\n");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    struct dump d;
    memset(&d, 0, sizeof d);
    d.count_only = count_only;
    char err[BASE_ERRLEN];
    gpu_ingest_t *in = gpu_ingest_new(endpoint, on_msg, &d, err);
    if (in == NULL) {
        base_log(BASE_LOG_ERROR, "ingest", "%s", err);
        return 1;
    }
    if (ready != NULL) {
        FILE *f = fopen(ready, "w");
        if (f != NULL)
            fclose(f);
    }
    int64_t end = seconds > 0 ? base_monotonic_ns() + (int64_t)(seconds * 1e9) : INT64_MAX;
    while (!stop_flag && base_monotonic_ns() < end) {
        if (gpu_ingest_poll(in, 50, 1000, err) < 0) {
            base_log(BASE_LOG_ERROR, "ingest", "%s", err);
            break;
        }
    }
    const base_decstats_t *st = gpu_ingest_stats(in);
    printf("{\"msg\":\"stats\",\"accepted\":%" PRIu64 ",\"rejected\":%" PRIu64
           ",\"events\":%" PRIu64 ",\"unknown_names\":%" PRIu64,
           st->n[BASE_DEC_OK], base_decstats_errors(st), d.events, d.unknown_names);
    for (int k = 1; k < BASE_DEC_NKINDS; k++)
        printf(",\"%s\":%" PRIu64, base_dec_name((enum base_dec)k), st->n[k]);
    if (count_only)
        printf(",\"ev_span_ms\":%.3f", (double)(d.last_ev_ns - d.first_ev_ns) / 1e6);
    printf(",\"last_error\":");
    print_json_string(gpu_ingest_last_error(in));
    printf("}\n");
    fflush(stdout);
    for (size_t i = 0; i < d.npids; i++)
        gpu_names_destroy(&d.pids[i].names);
    gpu_ingest_destroy(&in);
    return 0;
}
