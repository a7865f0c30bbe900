/*
 * bench_bus — GPU events per second from one publisher through the hub
 * (XSUB -> zmq_proxy -> XPUB, tcp loopback) to one subscriber, in batches of
 * 64-byte binary records, against two peers measured in the same run:
 *
 *   raw   the same bytes (one frame per batch, same encoder) over a direct
 *         PUSH -> PULL tcp connection: no proxy hop, no topic, no JSON
 *         header, no validation — what ZeroMQ itself can move;
 *   json  the same events as a JSON array over the same hub path, encoded
 *         and parsed with json-c — what the binary records save.
 *
 * Every path runs publisher and subscriber as separate threads with their
 * own ZeroMQ contexts (as separate processes would) and counts only what
 * the subscriber received; a publisher meeting a full queue waits and
 * retries, so nothing is lost and the rate is the sustained one.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include <zmq.h>

#include "bus/bus.h"
#include "gpu/gpu.h"

enum path { PATH_BUS, PATH_BUS_DECODE, PATH_RAW, PATH_JSON };

/* The batch an agent sends under load: 4096 records (256 KiB), which it
 * fills in under a millisecond at millions of events per second (at low
 * rates a timer flushes smaller batches).  The table shows smaller ones too. */
#define HEADLINE_BATCH 4096

struct run {
    enum path path;
    size_t batch;
    uint64_t target_events;
    const char *pub_ep, *sub_ep; /* hub endpoints (bus, json) */
    char raw_ep[128];
    /* results */
    uint64_t events, msgs, retries;
    double secs, cpu_s;
    int failed;
};

static double cpu_seconds(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
           ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
}

static void fill_events(gpu_event_t *ev, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        memset(&ev[i], 0, sizeof ev[i]);
        ev[i].kind = (uint8_t)(i % 3 == 0   ? GPU_EV_KERNEL
                               : i % 3 == 1 ? GPU_EV_MEMCPY
                                            : GPU_EV_API);
        ev[i].flags = GPU_EVF_DEVICE_TIME;
        ev[i].device = (uint16_t)(i % 8);
        ev[i].pid = 4242;
        ev[i].tid = 4243 + (uint32_t)(i % 16);
        ev[i].stream = (uint32_t)(i % 4);
        ev[i].name_id = 1 + (uint32_t)(i % 100);
        ev[i].corr_id = (uint32_t)i;
        ev[i].scope_id = 7;
        ev[i].start_ns = 1000000000LL + (int64_t)i * 1000;
        ev[i].end_ns = ev[i].start_ns + 700;
        ev[i].grid[0] = 1024;
        ev[i].grid[1] = ev[i].grid[2] = 1;
        ev[i].block[0] = 256;
        ev[i].block[1] = ev[i].block[2] = 1;
        ev[i].bytes = 1 << 20;
        ev[i].copy_kind = GPU_COPY_H2D;
    }
}

static void *ctx_new(void)
{
    void *ctx = zmq_ctx_new();
    if (ctx == NULL) {
        fprintf(stderr, "bench_bus: zmq_ctx_new failed\n");
        exit(1);
    }
    return ctx;
}

/* ---- publishers ---- */

static void *pub_bus(struct run *r)
{
    char err[BASE_ERRLEN];
    struct bus_pub_opts o = {.endpoint = r->pub_ep, .node = 1};
    bus_pub_t *pub = bus_pub_new(&o, err);
    if (pub == NULL || !bus_pub_wait_subscribed(pub, BUS_K_EV, 10000)) {
        fprintf(stderr, "bench_bus: publisher: %s\n", pub ? "no subscriber" : err);
        r->failed = 1;
        bus_pub_destroy(&pub);
        return NULL;
    }
    gpu_event_t *ev = xcalloc(r->batch, sizeof *ev);
    fill_events(ev, r->batch);
    uint64_t nmsgs = r->target_events / r->batch;
    for (uint64_t i = 0; i < nmsgs; i++) {
        bus_msg_t *m = bus_msg_new(BUS_K_EV);
        bus_msg_set_i64(m, "node", 1);
        bus_msg_set_i64(m, "pid", 4242);
        bus_msg_set_i64(m, "count", (int64_t)r->batch);
        bus_msg_set_u64(m, "dropped", 0);
        gpu_batch_encode(ev, r->batch, bus_msg_payload_alloc(m, gpu_batch_size(r->batch)));
        int rc;
        while ((rc = bus_pub_send(pub, m, err)) == BUS_DROPPED) {
            r->retries++;
            base_sleep_ns(20000);
        }
        bus_msg_destroy(&m);
        if (rc != BASE_OK) {
            fprintf(stderr, "bench_bus: %s\n", err);
            r->failed = 1;
            break;
        }
    }
    free(ev);
    bus_pub_destroy(&pub);
    return NULL;
}

static void *pub_raw(struct run *r)
{
    void *ctx = ctx_new(), *s = zmq_socket(ctx, ZMQ_PUSH);
    int linger = 5000;
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect(s, r->raw_ep) != 0) {
        r->failed = 1;
        return NULL;
    }
    gpu_event_t *ev = xcalloc(r->batch, sizeof *ev);
    fill_events(ev, r->batch);
    uint64_t nmsgs = r->target_events / r->batch;
    for (uint64_t i = 0; i < nmsgs; i++) {
        zmq_msg_t m;
        zmq_msg_init_size(&m, gpu_batch_size(r->batch));
        gpu_batch_encode(ev, r->batch, zmq_msg_data(&m));
        if (zmq_msg_send(&m, s, 0) < 0) { /* PUSH blocks on a full queue */
            zmq_msg_close(&m);
            r->failed = 1;
            break;
        }
    }
    free(ev);
    zmq_close(s);
    zmq_ctx_term(ctx);
    return NULL;
}

static void *pub_json(struct run *r)
{
    void *ctx = ctx_new(), *s = zmq_socket(ctx, ZMQ_XPUB);
    int one = 1, linger = 5000;
    zmq_setsockopt(s, ZMQ_XPUB_NODROP, &one, sizeof one);
    zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect(s, r->pub_ep) != 0) {
        r->failed = 1;
        return NULL;
    }
    char sub[64];
    if (zmq_recv(s, sub, sizeof sub, 0) < 0) { /* the subscriber's subscription */
        r->failed = 1;
        return NULL;
    }
    gpu_event_t *ev = xcalloc(r->batch, sizeof *ev);
    fill_events(ev, r->batch);
    uint64_t nmsgs = r->target_events / r->batch;
    for (uint64_t i = 0; i < nmsgs; i++) {
        json_object *arr = json_object_new_array_ext((int)r->batch);
        for (size_t j = 0; j < r->batch; j++) {
            const gpu_event_t *e = &ev[j];
            json_object *o = json_object_new_object();
            json_object_object_add(o, "kind", json_object_new_int(e->kind));
            json_object_object_add(o, "flags", json_object_new_int(e->flags));
            json_object_object_add(o, "device", json_object_new_int(e->device));
            json_object_object_add(o, "pid", json_object_new_int64(e->pid));
            json_object_object_add(o, "tid", json_object_new_int64(e->tid));
            json_object_object_add(o, "stream", json_object_new_int64(e->stream));
            json_object_object_add(o, "name_id", json_object_new_int64(e->name_id));
            json_object_object_add(o, "corr_id", json_object_new_int64(e->corr_id));
            json_object_object_add(o, "scope_id", json_object_new_uint64(e->scope_id));
            json_object_object_add(o, "start_ns", json_object_new_int64(e->start_ns));
            json_object_object_add(o, "end_ns", json_object_new_int64(e->end_ns));
            if (e->kind == GPU_EV_KERNEL) {
                json_object *g = json_object_new_array(), *b = json_object_new_array();
                for (int k = 0; k < 3; k++) {
                    json_object_array_add(g, json_object_new_int64(e->grid[k]));
                    json_object_array_add(b, json_object_new_int64(e->block[k]));
                }
                json_object_object_add(o, "grid", g);
                json_object_object_add(o, "block", b);
            } else {
                json_object_object_add(o, "bytes", json_object_new_uint64(e->bytes));
            }
            json_object_array_add(arr, o);
        }
        size_t len;
        const char *text = json_object_to_json_string_length(arr, JSON_C_TO_STRING_PLAIN, &len);
        int rc;
        while ((rc = zmq_send(s, "dp1.jsonbench.1", 15, ZMQ_SNDMORE | ZMQ_DONTWAIT)) < 0 &&
               zmq_errno() == EAGAIN) {
            r->retries++;
            base_sleep_ns(20000);
        }
        if (rc < 0 || zmq_send(s, text, len, 0) < 0)
            r->failed = 1;
        json_object_put(arr);
        if (r->failed)
            break;
    }
    free(ev);
    zmq_close(s);
    zmq_ctx_term(ctx);
    return NULL;
}

static void *pub_main(void *arg)
{
    struct run *r = arg;
    switch (r->path) {
    case PATH_BUS:
    case PATH_BUS_DECODE:
        return pub_bus(r);
    case PATH_RAW:
        return pub_raw(r);
    case PATH_JSON:
        return pub_json(r);
    }
    return NULL;
}

/* ---- subscribers (the calling thread) ---- */

static void run_bus(struct run *r, const char *reg_ep)
{
    char err[BASE_ERRLEN];
    static const char *const prefixes[] = {"dp1.ev.", NULL};
    struct bus_sub_opts o = {.endpoint = r->sub_ep, .prefixes = prefixes};
    bus_sub_t *sub = bus_sub_new(&o, err);
    struct bus_state_info info;
    if (sub == NULL || bus_sub_fetch_state(sub, reg_ep, 10000, &info, err) != BASE_OK) {
        fprintf(stderr, "bench_bus: subscriber: %s\n", err);
        r->failed = 1;
        bus_sub_destroy(&sub);
        return;
    }
    gpu_event_t *out = xcalloc(r->batch, sizeof *out);
    pthread_t t;
    pthread_create(&t, NULL, pub_main, r);
    int64_t t0 = 0, t1 = 0;
    double c0 = cpu_seconds();
    while (r->events < r->target_events / r->batch * r->batch) {
        bus_msg_t *m;
        int rc = bus_sub_recv(sub, &m, 5000, err);
        if (rc <= 0)
            break; /* nothing for 5 s: give up, report what arrived */
        if (bus_msg_kind(m) == BUS_K_EV) {
            if (t0 == 0)
                t0 = base_monotonic_ns();
            size_t len, n = 0;
            const void *p = bus_msg_payload(m, &len);
            if (r->path == PATH_BUS_DECODE)
                gpu_batch_decode(p, len, 1, out, r->batch, &n, err);
            else
                gpu_batch_count(p, len, &n, err);
            r->events += n;
            r->msgs++;
            t1 = base_monotonic_ns();
        }
        bus_msg_destroy(&m);
    }
    r->cpu_s = cpu_seconds() - c0;
    pthread_join(t, NULL);
    r->secs = (double)(t1 - t0) / 1e9;
    struct bus_sub_stats st;
    bus_sub_stats(sub, &st);
    if (st.gaps)
        fprintf(stderr, "bench_bus: %" PRIu64 " batches lost at the hub\n", st.gaps);
    free(out);
    bus_sub_destroy(&sub);
}

static void run_raw(struct run *r)
{
    void *ctx = ctx_new(), *s = zmq_socket(ctx, ZMQ_PULL);
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    size_t len = sizeof r->raw_ep;
    if (zmq_bind(s, "tcp://127.0.0.1:*") != 0 ||
        zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, r->raw_ep, &len) != 0) {
        r->failed = 1;
        return;
    }
    pthread_t t;
    pthread_create(&t, NULL, pub_main, r);
    int timeout = 5000;
    zmq_setsockopt(s, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    int64_t t0 = 0, t1 = 0;
    double c0 = cpu_seconds();
    char err[BASE_ERRLEN];
    while (r->events < r->target_events / r->batch * r->batch) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, s, 0) < 0) {
            zmq_msg_close(&m);
            break;
        }
        if (t0 == 0)
            t0 = base_monotonic_ns();
        size_t n = 0;
        gpu_batch_count(zmq_msg_data(&m), zmq_msg_size(&m), &n, err);
        r->events += n;
        r->msgs++;
        t1 = base_monotonic_ns();
        zmq_msg_close(&m);
    }
    r->cpu_s = cpu_seconds() - c0;
    pthread_join(t, NULL);
    r->secs = (double)(t1 - t0) / 1e9;
    zmq_close(s);
    zmq_ctx_term(ctx);
}

static void run_json(struct run *r)
{
    void *ctx = ctx_new(), *s = zmq_socket(ctx, ZMQ_SUB);
    int zero = 0, timeout = 5000;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    zmq_setsockopt(s, ZMQ_RCVTIMEO, &timeout, sizeof timeout);
    zmq_setsockopt(s, ZMQ_SUBSCRIBE, "dp1.jsonbench.", 14);
    if (zmq_connect(s, r->sub_ep) != 0) {
        r->failed = 1;
        return;
    }
    pthread_t t;
    pthread_create(&t, NULL, pub_main, r);
    int64_t t0 = 0, t1 = 0;
    double c0 = cpu_seconds();
    while (r->events < r->target_events / r->batch * r->batch) {
        zmq_msg_t topic, body;
        zmq_msg_init(&topic);
        zmq_msg_init(&body);
        if (zmq_msg_recv(&topic, s, 0) < 0 || zmq_msg_recv(&body, s, 0) < 0) {
            zmq_msg_close(&topic);
            zmq_msg_close(&body);
            break;
        }
        if (t0 == 0)
            t0 = base_monotonic_ns();
        json_object *arr = NULL;
        char err[BASE_ERRLEN];
        if (base_json_parse(zmq_msg_data(&body), zmq_msg_size(&body), &arr, err) == BASE_DEC_OK) {
            size_t n = json_object_array_length(arr);
            /* Read the fields a consumer needs, as it would. */
            for (size_t i = 0; i < n; i++) {
                int64_t v;
                json_object *o = json_object_array_get_idx(arr, i);
                base_json_get_i64(o, "start_ns", &v, NULL);
                base_json_get_i64(o, "end_ns", &v, NULL);
                base_json_get_i64(o, "name_id", &v, NULL);
            }
            r->events += n;
        }
        json_object_put(arr);
        r->msgs++;
        t1 = base_monotonic_ns();
        zmq_msg_close(&topic);
        zmq_msg_close(&body);
    }
    r->cpu_s = cpu_seconds() - c0;
    pthread_join(t, NULL);
    r->secs = (double)(t1 - t0) / 1e9;
    zmq_close(s);
    zmq_ctx_term(ctx);
}

static double rate(const struct run *r)
{
    return r->secs > 0 ? (double)r->events / r->secs : 0;
}

static void print_row(const char *name, const struct run *r, double lo, double hi)
{
    printf("%-34s %6zu %8.3f %13.0f %8.1f %13.0f %13.0f %9.1f %8" PRIu64 "%s\n", name, r->batch,
           r->secs, rate(r), rate(r) * GPU_RECORD_SIZE / 1e6, lo, hi,
           r->events ? r->cpu_s * 1e9 / (double)r->events : 0, r->retries,
           r->failed || r->events < r->target_events / r->batch * r->batch ? "  INCOMPLETE" : "");
    fflush(stdout);
}

static int by_rate(const void *a, const void *b)
{
    double x = rate(a), y = rate(b);
    return x < y ? -1 : x > y;
}

/* The machine is shared: every figure is the median of REPS runs, the bus
 * and raw runs interleaved so that both see the same background load. */
#define REPS 3

static void report(const char *name, struct run *runs, struct run *median)
{
    qsort(runs, REPS, sizeof *runs, by_rate);
    *median = runs[REPS / 2];
    print_row(name, median, rate(&runs[0]), rate(&runs[REPS - 1]));
}

/*
 * Relays (the bus as a tree): the same event batches from a publisher below
 * one relay, and below two chained relays, to a subscriber on the same
 * relay, through the hub at the root, against publisher and subscriber on
 * the hub itself.  All on ipc, so the ratio is the relays' own cost.
 */
static int relay_section(uint64_t events)
{
    char err[BASE_ERRLEN], root[64], mid[80], low[80];
    snprintf(root, sizeof root, "ipc:///tmp/dp-bench-bus-%d", (int)getpid());
    snprintf(mid, sizeof mid, "%s-r1", root);
    snprintf(low, sizeof low, "%s-r2", root);
    struct bus_endpoints ep;
    if (bus_endpoints_derive(root, &ep, err) != BASE_OK)
        return fprintf(stderr, "bench_bus: %s\n", err), 1;
    struct bus_hub_opts ho = {
        .reg_endpoint = ep.reg, .pub_endpoint = ep.pub, .sub_endpoint = ep.sub};
    bus_hub_t *hub = bus_hub_new(&ho, err);
    struct bus_relay_opts o1 = {.upstream = root, .listen = mid},
                          o2 = {.upstream = mid, .listen = low};
    bus_relay_t *r1 = hub ? bus_relay_new(&o1, err) : NULL;
    bus_relay_t *r2 = r1 ? bus_relay_new(&o2, err) : NULL;
    if (r2 == NULL) {
        fprintf(stderr, "bench_bus: %s\n", err);
        bus_relay_destroy(&r1);
        bus_hub_destroy(&hub);
        return 1;
    }
    const char *pubs[3] = {ep.pub, bus_relay_endpoint(r1, BUS_HUB_PUB),
                           bus_relay_endpoint(r2, BUS_HUB_PUB)};
    const char *subs[3] = {ep.sub, bus_relay_endpoint(r1, BUS_HUB_SUB),
                           bus_relay_endpoint(r2, BUS_HUB_SUB)};
    static const char *const names[3] = {"ipc: pub -> hub -> sub", "ipc: through 1 relay",
                                         "ipc: through 2 chained relays"};
    struct run runs[3][REPS], med[3];
    int failed = 0;
    for (int k = 0; k < REPS; k++)
        for (int i = 0; i < 3; i++) {
            runs[i][k] = (struct run){.path = PATH_BUS,
                                      .batch = HEADLINE_BATCH,
                                      .target_events = events,
                                      .pub_ep = pubs[i],
                                      .sub_ep = subs[i]};
            run_bus(&runs[i][k], ep.reg);
            failed |= runs[i][k].failed;
        }
    printf("\n");
    for (int i = 0; i < 3; i++)
        report(names[i], runs[i], &med[i]);
    struct bus_relay_stats s1, s2;
    bus_relay_stats(r1, &s1);
    bus_relay_stats(r2, &s2);
    printf("relays: upstream drops %" PRIu64 " and %" PRIu64 "\n", s1.up_dropped, s2.up_dropped);
    printf("BENCH bus_relay1_events_per_s %.0f ev/s\n", rate(&med[1]));
    printf("BENCH bus_relay2_events_per_s %.0f ev/s\n", rate(&med[2]));
    printf("BENCH bus_relay1_vs_hub_ratio %.3f ratio\n",
           rate(&med[0]) > 0 ? rate(&med[1]) / rate(&med[0]) : 0);
    printf("BENCH bus_relay2_vs_hub_ratio %.3f ratio\n",
           rate(&med[0]) > 0 ? rate(&med[2]) / rate(&med[0]) : 0);
    bus_relay_destroy(&r2);
    bus_relay_destroy(&r1);
    bus_hub_destroy(&hub);
    return failed;
}

int main(int argc, char **argv)
{
    /* Events per measured run: about a second at the target rate.  A second
     * argument "bus" runs the hub path alone (for profiling). */
    uint64_t events = argc > 1 ? strtoull(argv[1], NULL, 10) : 8000000;
    bool only_bus = argc > 2 && strcmp(argv[2], "bus") == 0;
    char err[BASE_ERRLEN];
    struct bus_hub_opts ho = {.reg_endpoint = "tcp://127.0.0.1:*",
                              .pub_endpoint = "tcp://127.0.0.1:*",
                              .sub_endpoint = "tcp://127.0.0.1:*"};
    bus_hub_t *hub = bus_hub_new(&ho, err);
    if (hub == NULL) {
        fprintf(stderr, "bench_bus: %s\n", err);
        return 1;
    }
    const char *pub_ep = bus_hub_endpoint(hub, BUS_HUB_PUB);
    const char *sub_ep = bus_hub_endpoint(hub, BUS_HUB_SUB);
    const char *reg_ep = bus_hub_endpoint(hub, BUS_HUB_REG);
    printf("bench_bus: %" PRIu64 " events per run, 64-byte records, tcp loopback, "
           "median of %d runs (min and max beside it)\n\n",
           events, REPS);
    printf("%-34s %6s %8s %13s %8s %13s %13s %9s %8s\n", "path", "batch", "seconds", "events/s",
           "MB/s", "min ev/s", "max ev/s", "cpu ns/ev", "retries");

    static const size_t batches[] = {256, 1024, HEADLINE_BATCH};
    struct run bus_at[3], raw_at[3];
    int failed = 0;
    for (size_t i = 0; i < BASE_ARRAY_LEN(batches); i++) {
        struct run b[REPS], w[REPS];
        for (int k = 0; k < REPS; k++) {
            b[k] = (struct run){.path = PATH_BUS,
                                .batch = batches[i],
                                .target_events = events,
                                .pub_ep = pub_ep,
                                .sub_ep = sub_ep};
            run_bus(&b[k], reg_ep);
            failed |= b[k].failed;
            w[k] = (struct run){.path = PATH_RAW, .batch = batches[i], .target_events = events};
            if (!only_bus) {
                run_raw(&w[k]);
                failed |= w[k].failed;
            }
        }
        report("bus: pub -> hub proxy -> sub", b, &bus_at[i]);
        if (!only_bus)
            report("raw zmq: push -> pull, same bytes", w, &raw_at[i]);
    }
    if (only_bus) {
        bus_hub_destroy(&hub);
        return failed;
    }
    struct run d[REPS], j[REPS], dm, jm;
    for (int k = 0; k < REPS; k++) {
        d[k] = (struct run){.path = PATH_BUS_DECODE,
                            .batch = HEADLINE_BATCH,
                            .target_events = events,
                            .pub_ep = pub_ep,
                            .sub_ep = sub_ep};
        run_bus(&d[k], reg_ep);
        /* JSON is two orders of magnitude slower: a sixteenth of the events. */
        j[k] = (struct run){.path = PATH_JSON,
                            .batch = 1024,
                            .target_events = events / 16,
                            .pub_ep = pub_ep,
                            .sub_ep = sub_ep};
        run_json(&j[k]);
        failed |= d[k].failed | j[k].failed;
    }
    report("bus + full record decode", d, &dm);
    report("json events: pub -> hub -> sub", j, &jm);

    /* The headline figures: batches of HEADLINE_BATCH events, what the local
     * link carries at its fullest (libdptrace sends when half full, so under
     * load batches are 2048-4096 events).  JSON is compared with the binary
     * path at the batch size it ran at. */
    const struct run *b = &bus_at[2], *w = &raw_at[2];
    double ratio = rate(w) > 0 ? rate(b) / rate(w) : 0;
    double jratio = rate(&jm) > 0 ? rate(&bus_at[1]) / rate(&jm) : 0;
    printf("\nheadline at batch %d: bus / raw zmq %.2f (goal >= 0.5); at batch 1024: bus / json "
           "%.1fx\n",
           HEADLINE_BATCH, ratio, jratio);
    printf("BENCH bus_events_per_s %.0f ev/s\n", rate(b));
    printf("BENCH bus_raw_zmq_events_per_s %.0f ev/s\n", rate(w));
    printf("BENCH bus_json_events_per_s %.0f ev/s\n", rate(&jm));
    printf("BENCH bus_vs_raw_ratio %.3f ratio\n", ratio);
    printf("BENCH bus_vs_json_ratio %.1f ratio\n", jratio);
    printf("BENCH bus_decode_events_per_s %.0f ev/s\n", rate(&dm));
    printf("BENCH bus_cpu_ns_per_event %.1f ns\n",
           b->events ? b->cpu_s * 1e9 / (double)b->events : 0);
    for (size_t i = 0; i < BASE_ARRAY_LEN(batches); i++) {
        printf("BENCH bus_events_per_s_batch%zu %.0f ev/s\n", batches[i], rate(&bus_at[i]));
        printf("BENCH bus_raw_zmq_events_per_s_batch%zu %.0f ev/s\n", batches[i], rate(&raw_at[i]));
        printf("BENCH bus_vs_raw_ratio_batch%zu %.3f ratio\n", batches[i],
               rate(&raw_at[i]) > 0 ? rate(&bus_at[i]) / rate(&raw_at[i]) : 0);
    }
    bus_hub_destroy(&hub);
    failed |= relay_section(events);
    return failed ? 1 : 0;
}
