/*
 * libFuzzer target: registration traffic as the master handles it (hello,
 * hb, bye), after the hub's own decoding (frames, schema).  One master for
 * the whole run, so that hellos fill its node table, heartbeats and byes
 * find the nodes they name, and plans are made over many inputs.
 * Input: fuzz_split frames; the last byte of a short peer id.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fuzz.h"
#include "node/node_int.h"

static int64_t fake_now(void *ctx)
{
    (void)ctx;
    return base_realtime_ns();
}

static node_master_t *master(void)
{
    static node_master_t *m;
    if (m)
        return m;
    static char ep[96];
    snprintf(ep, sizeof ep, "ipc:///tmp/dptop-fuzz-master-%d", (int)getpid());
    struct node_master_cfg c = {
        .listen = ep,
        .ref = -1,
        .k = 4,
        .window_ns = 1000000000,
        .cadence_ns = 10000000,
        .spacing_ns = 100000,
        .snapshot_ns = 100000000,
        .hb_ns = 1000000000,
        .status_ns = 1000000000,
        .grace_ns = 250000000,
        .forget_ns = 600000000000LL,
        .host = "fuzzhost",
        .version = DP_VERSION,
        .instance = "m",
        .probe_addr = "127.0.0.1:40000",
        .pid = 1,
        .probe_now = fake_now,
    };
    char err[BASE_ERRLEN];
    m = node_master_new(&c, err);
    if (m == NULL) {
        fprintf(stderr, "fuzz_node_master: %s\n", err);
        abort();
    }
    return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const void *fr[BUS_MAX_FRAMES];
    size_t lens[BUS_MAX_FRAMES];
    size_t n = fuzz_split(data, size, fr, lens, BUS_MAX_FRAMES);
    struct bus_frame frames[BUS_MAX_FRAMES];
    for (size_t i = 0; i < n; i++)
        frames[i] = (struct bus_frame){.data = fr[i], .len = lens[i]};
    struct bus_limits lim = {0};
    bus_msg_t *msg = NULL;
    char err[BASE_ERRLEN];
    if (bus_msg_decode(frames, n, &lim, &msg, err) != BASE_DEC_OK)
        return 0;
    node_master_t *m = master();
    bus_peer_t peer = {.id = {0, size ? data[size - 1] : 0}, .len = 2};
    node_master_registration(m, &peer, msg);
    bus_msg_destroy(&msg);
    if (node_master_tick(m, 0, err) != BASE_OK)
        abort();
    size_t up, known;
    node_master_counts(m, &up, &known);
    if (up > known || known > NODE_MAX_NODES)
        abort();
    return 0;
}
