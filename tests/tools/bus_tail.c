/*
 * bus_tail — a subscriber for bus tests.
 *
 *   bus_tail --hub tcp://HOST:PORT [--prefix P]... [--state] [--rcvhwm N]
 *            [--slow-us US] [--duration-ms MS] [--idle-ms MS] [--until-ev N]
 *            [--print] [--ready FILE]
 *
 * Subscribes (to everything unless --prefix), optionally fetches the
 * late-joiner state, then receives until SIGTERM, --duration-ms, --idle-ms
 * without a message, or until it accounted for --until-ev event batches
 * (received + seq gaps).  --slow-us sleeps after each message (a slow
 * consumer).  --print writes "MSG topic seq state header" per message.
 * --ready touches FILE once the subscription is known to be active.
 * Ends with "TAIL ..." (ev_span_ms: from the first event batch to the last)
 * and one "TOPIC ..." line per topic.
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

int main(int argc, char **argv)
{
    const char *hub_ep = "tcp://127.0.0.1:7410", *ready = NULL;
    const char *prefixes[32];
    size_t nprefixes = 0;
    bool state = false, print = false;
    long slow_us = 0, duration_ms = 0, idle_ms = 0, until_ev = 0;
    int rcvhwm = 0;
    static const struct option longopts[] = {
        {"hub", required_argument, NULL, 'h'},
        {"prefix", required_argument, NULL, 'p'},
        {"state", no_argument, NULL, 's'},
        {"rcvhwm", required_argument, NULL, 'H'},
        {"slow-us", required_argument, NULL, 'u'},
        {"duration-ms", required_argument, NULL, 'd'},
        {"idle-ms", required_argument, NULL, 'i'},
        {"until-ev", required_argument, NULL, 'e'},
        {"print", no_argument, NULL, 'P'},
        {"ready", required_argument, NULL, 'r'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (c) {
        case 'h':
            hub_ep = optarg;
            break;
        case 'p':
            if (nprefixes < 31)
                prefixes[nprefixes++] = optarg;
            break;
        case 's':
            state = true;
            break;
        case 'H':
            rcvhwm = atoi(optarg);
            break;
        case 'u':
            slow_us = atol(optarg);
            break;
        case 'd':
            duration_ms = atol(optarg);
            break;
        case 'i':
            idle_ms = atol(optarg);
            break;
        case 'e':
            until_ev = atol(optarg);
            break;
        case 'P':
            print = true;
            break;
        case 'r':
            ready = optarg;
            break;
        default:
            fprintf(stderr, "usage: see the comment at the top of tests/tools/bus_tail.c\n");
            return 2;
        }
    }
    prefixes[nprefixes] = NULL;
    char err[BASE_ERRLEN];
    struct bus_endpoints ep;
    if (bus_endpoints_derive(hub_ep, &ep, err) != BASE_OK) {
        fprintf(stderr, "bus_tail: %s\n", err);
        return 2;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    struct bus_sub_opts so = {
        .endpoint = ep.sub, .prefixes = nprefixes ? prefixes : NULL, .rcvhwm = rcvhwm};
    bus_sub_t *sub = bus_sub_new(&so, err);
    if (sub == NULL) {
        fprintf(stderr, "bus_tail: %s\n", err);
        return 1;
    }
    if (state || ready) {
        /* The state fetch also proves that the subscription is active. */
        struct bus_state_info info;
        int64_t t0 = base_monotonic_ns();
        if (bus_sub_fetch_state(sub, ep.reg, 10000, &info, err) != BASE_OK) {
            fprintf(stderr, "bus_tail: %s\n", err);
            bus_sub_destroy(&sub);
            return 1;
        }
        printf("STATE count=%" PRIu64 " complete=%d synced=%d evicted=%" PRIu64 " ms=%.1f\n",
               info.count, info.complete, info.synced, info.evicted,
               (double)(base_monotonic_ns() - t0) / 1e6);
        fflush(stdout);
        if (!state) {
            /* Only the readiness was wanted: drop the state messages. */
            bus_msg_t *m;
            for (uint64_t i = 0; i < info.count && bus_sub_recv(sub, &m, 0, err) == 1; i++)
                bus_msg_destroy(&m);
        }
        if (ready) {
            FILE *f = fopen(ready, "w");
            if (f)
                fclose(f);
        }
    }
    int64_t start = base_monotonic_ns(), last_msg = start;
    uint64_t ev_msgs = 0, ev_records = 0;
    int64_t ev_first_ns = 0, ev_last_ns = 0; /* arrivals of the first and last batch */
    int rc = 0;
    while (!stop_flag) {
        int64_t now = base_monotonic_ns();
        if (duration_ms > 0 && now - start > duration_ms * 1000000)
            break;
        if (idle_ms > 0 && now - last_msg > idle_ms * 1000000)
            break;
        struct bus_sub_stats st;
        bus_sub_stats(sub, &st);
        if (until_ev > 0 && ev_msgs + st.kind[BUS_K_EV].gaps >= (uint64_t)until_ev)
            break;
        bus_msg_t *m = NULL;
        int r = bus_sub_recv(sub, &m, 100, err);
        if (r < 0) {
            fprintf(stderr, "bus_tail: %s\n", err);
            rc = 1;
            break;
        }
        if (r == 0)
            continue;
        last_msg = base_monotonic_ns();
        if (bus_msg_kind(m) == BUS_K_EV) {
            ev_last_ns = base_monotonic_ns();
            if (ev_first_ns == 0)
                ev_first_ns = ev_last_ns;
            ev_msgs++;
            int64_t count = 0;
            base_json_get_i64(bus_msg_header(m), "count", &count, NULL);
            ev_records += (uint64_t)count;
        }
        if (print) {
            printf("MSG %s %" PRIu64 " %d %s\n", bus_msg_topic(m), bus_msg_seq(m),
                   bus_msg_from_state(m),
                   json_object_to_json_string_ext(bus_msg_header(m), JSON_C_TO_STRING_PLAIN));
            fflush(stdout);
        }
        bus_msg_destroy(&m);
        if (slow_us > 0)
            base_sleep_ns(slow_us * 1000);
    }
    struct bus_sub_stats st;
    bus_sub_stats(sub, &st);
    printf("TAIL msgs=%" PRIu64 " state=%" PRIu64 " ev=%" PRIu64 " ev_records=%" PRIu64
           " gaps=%" PRIu64 " ev_gaps=%" PRIu64 " resets=%" PRIu64 " dec_errors=%" PRIu64
           " queue_drops=%" PRIu64 " ev_span_ms=%.3f\n",
           st.msgs, st.state_msgs, ev_msgs, ev_records, st.gaps, st.kind[BUS_K_EV].gaps, st.resets,
           base_decstats_errors(&st.dec), st.queue_drops, (double)(ev_last_ns - ev_first_ns) / 1e6);
    struct bus_topic_stats ts[256];
    size_t n = bus_sub_topic_stats(sub, ts, 256);
    for (size_t i = 0; i < n && i < 256; i++)
        printf("TOPIC %s msgs=%" PRIu64 " gaps=%" PRIu64 " resets=%" PRIu64 " last_seq=%" PRIu64
               "\n",
               ts[i].topic, ts[i].msgs, ts[i].gaps, ts[i].resets, ts[i].last_seq);
    fflush(stdout);
    bus_sub_destroy(&sub);
    return rc;
}
