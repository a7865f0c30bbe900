/*
 * agent_feed — a sender on the local link that is not the bottleneck, for
 * bench_agent.sh: a process hello, then BATCHES batches of BATCH kernel
 * events sent as fast as the link takes them (a refused send waits 20 us and
 * tries again, counted), so that what is measured downstream is the
 * receiver's rate, not libdptrace's.
 *
 *   agent_feed ENDPOINT BATCHES [BATCH]
 *
 * Ends with "FEED batches=N events=M retries=R secs=S".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gpu/gpu.h"

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: agent_feed ENDPOINT BATCHES [BATCH]\n");
        return 2;
    }
    long batches = atol(argv[2]), batch = argc > 3 ? atol(argv[3]) : 4096;
    if (batches < 1 || batch < 1 || batch > 65536) {
        fprintf(stderr, "agent_feed: BATCHES >= 1, BATCH in 1..65536\n");
        return 2;
    }
    char err[BASE_ERRLEN];
    gpu_link_t *link = gpu_link_new(argv[1], 1000, err);
    if (link == NULL) {
        fprintf(stderr, "agent_feed: %s\n", err);
        return 1;
    }
    for (int i = 0; i < 500 && !gpu_link_up(link); i++)
        base_sleep_ns(10000000);
    uint32_t pid = (uint32_t)getpid();
    gpu_msg_t hello = {.kind = GPU_MSG_PROC,
                       .pid = pid,
                       .exe = "agent_feed",
                       .backend = "none",
                       .t0_ns = base_monotonic_ns()};
    uint64_t retries = 0;
    while (gpu_link_send(link, &hello, err) != BASE_OK) {
        retries++;
        base_sleep_ns(20000);
    }
    gpu_event_t *ev = xcalloc((size_t)batch, sizeof *ev);
    int64_t t0 = base_monotonic_ns(), t = t0;
    for (long b = 0; b < batches; b++) {
        for (long i = 0; i < batch; i++, t += 1000) {
            ev[i] = (gpu_event_t){.kind = GPU_EV_KERNEL,
                                  .pid = pid,
                                  .tid = pid,
                                  .stream = 1,
                                  .start_ns = t,
                                  .end_ns = t + 500};
        }
        gpu_msg_t m = {.kind = GPU_MSG_EV, .pid = pid, .ev = ev, .nev = (size_t)batch};
        while (gpu_link_send(link, &m, err) != BASE_OK) {
            retries++;
            base_sleep_ns(20000);
        }
    }
    double secs = (double)(base_monotonic_ns() - t0) / 1e9;
    gpu_link_destroy(&link); /* lingers until what is queued is delivered */
    printf("FEED batches=%ld events=%ld retries=%" PRIu64 " secs=%.3f\n", batches, batches * batch,
           retries, secs);
    free(ev);
    return 0;
}
