/* Unit tests for node/: probe packet codec, SipHash, two probers on loopback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bus/bus.h"
#include "node/node_int.h"

static const uint8_t key16[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

static void test_siphash_vectors(void **state)
{
    /* Reference vectors of the SipHash-2-4 paper (key 00..0f, message 00..len-1). */
    uint8_t msg[16];
    for (int i = 0; i < 16; i++)
        msg[i] = (uint8_t)i;
    assert_true(node_siphash(key16, msg, 0) == 0x726fdb47dd0e0e31ULL);
    assert_true(node_siphash(key16, msg, 15) == 0xa129ca6149be45e5ULL);
    assert_true(node_siphash(key16, msg, 8) == 0x93f5f5799a932462ULL);
}

static struct node_probe_pkt sample_pkt(void)
{
    struct node_probe_pkt p = {0};
    p.index = 1;
    p.src = 3;
    p.dst = 70000;
    p.seq = 1000;
    p.tx_user = 1790000000123456789LL;
    p.fu[0].seq = 999;
    p.fu[0].tx[0] = 1790000000000000001LL;
    p.fu[0].tx[1] = 1790000000000100002LL;
    p.fu[1].seq = 998;
    p.fu[1].flags = NODE_SAMPLE_USER_TX;
    p.n_echo = 2;
    for (int i = 0; i < 2; i++) {
        p.echo[i].seq = 500 + (uint64_t)i;
        p.echo[i].tx[0] = 1790000000000000000LL + i;
        p.echo[i].tx[1] = 1790000000000100000LL + i;
        p.echo[i].rx[0] = 1790000000000050000LL + i;
        p.echo[i].rx[1] = NODE_TS_NONE;
        p.echo[i].flags = NODE_SAMPLE_USER_RX;
    }
    return p;
}

static void test_codec_roundtrip(void **state)
{
    for (int keyed = 0; keyed < 2; keyed++) {
        const uint8_t *key = keyed ? key16 : NULL;
        struct node_probe_pkt in = sample_pkt(), out;
        uint8_t buf[NODE_PROBE_MAX_SIZE];
        size_t len = node_probe_encode(&in, key, buf);
        assert_int_equal(len, 32 + 64 + 96 + (keyed ? 8 : 0));
        char err[BASE_ERRLEN];
        assert_int_equal(node_probe_decode(buf, len, key, &out, err), BASE_DEC_OK);
        assert_int_equal(out.index, 1);
        assert_int_equal(out.src, 3);
        assert_int_equal(out.dst, 70000);
        assert_true(out.seq == 1000);
        assert_true(out.tx_user == in.tx_user);
        assert_true(out.fu[0].seq == 999 && out.fu[0].tx[1] == in.fu[0].tx[1]);
        assert_int_equal(out.fu[1].flags, NODE_SAMPLE_USER_TX);
        assert_int_equal(out.n_echo, 2);
        assert_true(out.echo[1].rx[1] == NODE_TS_NONE);
        assert_true(out.echo[1].tx[1] == in.echo[1].tx[1]);
        /* Echoes describe the other direction. */
        assert_int_equal(out.echo[0].src, 70000);
        assert_int_equal(out.echo[0].dst, 3);
    }
}

static void test_codec_malformed(void **state)
{
    struct node_probe_pkt in = sample_pkt(), out;
    uint8_t buf[NODE_PROBE_MAX_SIZE + 8];
    char err[BASE_ERRLEN];
    size_t len = node_probe_encode(&in, key16, buf);
    for (size_t l = 0; l < len; l++) {
        enum base_dec rc = node_probe_decode(buf, l, key16, &out, err);
        assert_true(rc != BASE_DEC_OK);
        assert_true(strlen(err) > 0);
    }
    /* Every single bit flip of a keyed packet is refused. */
    for (size_t bit = 0; bit < len * 8; bit++) {
        uint8_t bad[sizeof buf];
        memcpy(bad, buf, len);
        bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        assert_true(node_probe_decode(bad, len, key16, &out, NULL) != BASE_DEC_OK);
    }
    /* A keyed receiver refuses unkeyed packets as forgeries. */
    size_t plain = node_probe_encode(&in, NULL, buf);
    assert_int_equal(node_probe_decode(buf, plain, key16, &out, err), BASE_DEC_BAD_CHECKSUM);
    /* Wrong key. */
    uint8_t other[16] = {9};
    len = node_probe_encode(&in, other, buf);
    assert_int_equal(node_probe_decode(buf, len, key16, &out, err), BASE_DEC_BAD_CHECKSUM);

    plain = node_probe_encode(&in, NULL, buf);
    buf[4] = 9;
    assert_int_equal(node_probe_decode(buf, plain, NULL, &out, err), BASE_DEC_BAD_VERSION);
    plain = node_probe_encode(&in, NULL, buf);
    buf[0] ^= 1;
    assert_int_equal(node_probe_decode(buf, plain, NULL, &out, err), BASE_DEC_BAD_MAGIC);
    plain = node_probe_encode(&in, NULL, buf);
    buf[7] = 4; /* too many echoes */
    assert_int_equal(node_probe_decode(buf, plain, NULL, &out, err), BASE_DEC_BAD_VALUE);
    plain = node_probe_encode(&in, NULL, buf);
    assert_int_equal(node_probe_decode(buf, plain + 1, NULL, &out, err), BASE_DEC_OVERSIZED);
    struct node_probe_pkt bad = in;
    bad.fu[0].seq = bad.seq; /* a follow-up must be older than its packet */
    plain = node_probe_encode(&bad, NULL, buf);
    assert_int_equal(node_probe_decode(buf, plain, NULL, &out, err), BASE_DEC_BAD_VALUE);
    bad = in;
    bad.seq = 0;
    bad.fu[0].seq = bad.fu[1].seq = 0;
    plain = node_probe_encode(&bad, NULL, buf);
    assert_int_equal(node_probe_decode(buf, plain, NULL, &out, err), BASE_DEC_BAD_VALUE);
}

static void test_parse_addr(void **state)
{
    struct sockaddr_storage a;
    socklen_t len;
    char err[BASE_ERRLEN];
    assert_int_equal(node_parse_addr("127.0.0.1:7000", &a, &len, err), BASE_OK);
    assert_int_equal(a.ss_family, AF_INET);
    assert_int_equal(node_parse_addr("[::1]:7000", &a, &len, err), BASE_OK);
    assert_int_equal(a.ss_family, AF_INET6);
    assert_int_equal(node_parse_addr("127.0.0.1", &a, &len, err), BASE_ERR);
    assert_int_equal(node_parse_addr("127.0.0.1:0", &a, &len, err), BASE_ERR);
    assert_int_equal(node_parse_addr("host:70", &a, &len, err), BASE_ERR);
    assert_int_equal(node_parse_addr("1.2.3.4:99999", &a, &len, err), BASE_ERR);
}

struct sim {
    int64_t offset;
};

static int64_t sim_clock(void *ctx, int64_t t)
{
    return t + ((struct sim *)ctx)->offset;
}

static node_prober_t *make_prober(uint32_t id, bool user_ts, struct sim *sim, const uint8_t *key)
{
    struct node_prober_cfg cfg = {
        .bind_ip = "127.0.0.1",
        .self_id = id,
        .spacing_ns = 100000,
        .cadence_ns = 2000000,
        .jitter = 0.1,
        .user_timestamps = user_ts,
        .clock = sim ? sim_clock : NULL,
        .clock_ctx = sim,
        .key = key,
        .seed = id + 1,
    };
    char err[BASE_ERRLEN];
    node_prober_t *p = node_prober_new(&cfg, err);
    assert_non_null(p);
    return p;
}

static void peer_of(node_prober_t *p, uint32_t id, struct node_peer *peer)
{
    char addr[96];
    node_prober_address(p, addr, sizeof addr);
    peer->id = id;
    assert_int_equal(node_parse_addr(addr, &peer->addr, &peer->addrlen, NULL), BASE_OK);
}

/* Run two probers for a while; return samples of both directions seen by a. */
static size_t exchange(node_prober_t *a, node_prober_t *b, struct node_probe_sample *out,
                       size_t max, int64_t run_ns)
{
    struct node_peer pa, pb;
    peer_of(a, 1, &pa);
    peer_of(b, 2, &pb);
    node_prober_set_peers(a, &pb, 1);
    node_prober_set_peers(b, &pa, 1);
    assert_int_equal(node_prober_start(a, NULL), BASE_OK);
    assert_int_equal(node_prober_start(b, NULL), BASE_OK);
    base_sleep_ns(run_ns);
    size_t n = node_prober_drain(a, out, max);
    struct node_probe_sample junk[4096];
    while (node_prober_drain(b, junk, 4096) > 0)
        ;
    return n;
}

static void test_probers_loopback(void **state)
{
    struct sim simb = {.offset = 5000000}; /* b's clock is 5 ms ahead */
    node_prober_t *a = make_prober(1, false, NULL, key16);
    node_prober_t *b = make_prober(2, false, &simb, key16);
    assert_true(node_prober_kernel_timestamps(a));
    enum { MAX = 8192 };
    struct node_probe_sample *s = calloc(MAX, sizeof *s);
    size_t n = exchange(a, b, s, MAX, 1500000000LL);
    size_t fwd = 0, rev = 0, pure = 0;
    double *delay = calloc(n ? n : 1, sizeof *delay);
    for (size_t i = 0; i < n; i++) {
        if (s[i].rx[0] == NODE_TS_NONE || s[i].rx[1] == NODE_TS_NONE)
            continue;
        int64_t d0 = s[i].rx[0] - s[i].tx[0];
        int64_t gap_tx = s[i].tx[1] - s[i].tx[0], gap_rx = s[i].rx[1] - s[i].rx[0];
        assert_true(gap_tx > 0);
        if (llabs(gap_rx - gap_tx) < 50000)
            pure++;
        assert_int_equal(s[i].flags, 0);
        /* a -> b sees the one-way delay plus b's 5 ms lead, b -> a the delay
         * minus it.  A delay is never negative; on a loaded host a softirq can
         * stamp a packet late, so only the median must be loopback-small. */
        int64_t d;
        if (s[i].src == 1 && s[i].dst == 2) {
            fwd++;
            d = d0 - 5000000;
        } else {
            assert_true(s[i].src == 2 && s[i].dst == 1);
            rev++;
            d = d0 + 5000000;
        }
        assert_true(d > -1000);
        delay[fwd + rev - 1] = (double)d;
    }
    qsort(delay, fwd + rev, sizeof *delay, base_cmp_double);
    assert_true(fwd + rev > 0 && delay[(fwd + rev) / 2] < 1000000);
    free(delay);
    /* At 2 ms cadence over 1.5 s, expect hundreds per direction even on a loaded machine. */
    assert_true(fwd > 100);
    assert_true(rev > 100);
    assert_true(pure > (fwd + rev) / 2);
    struct node_prober_stats st;
    node_prober_stats(a, &st);
    assert_true(st.tx_kernel_ts > 0);
    assert_true(st.rx_kernel_ts > 0);
    assert_int_equal(st.forged, 0);
    assert_int_equal(st.garbage, 0);
    free(s);
    node_prober_destroy(&a);
    node_prober_destroy(&b);
    assert_null(a);
}

static void test_user_timestamps_flagged(void **state)
{
    node_prober_t *a = make_prober(1, true, NULL, NULL);
    node_prober_t *b = make_prober(2, true, NULL, NULL);
    assert_false(node_prober_kernel_timestamps(a));
    struct node_probe_sample s[2048];
    size_t n = exchange(a, b, s, 2048, 600000000LL);
    assert_true(n > 20);
    for (size_t i = 0; i < n; i++)
        assert_true(s[i].flags & (NODE_SAMPLE_USER_TX | NODE_SAMPLE_USER_RX));
    node_prober_destroy(&a);
    node_prober_destroy(&b);
}

static void send_raw(uint16_t port, const void *buf, size_t len)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    assert_int_equal(sendto(fd, buf, len, 0, (struct sockaddr *)&to, sizeof to), (ssize_t)len);
    close(fd);
}

static void test_garbage_and_forgeries(void **state)
{
    node_prober_t *a = make_prober(1, false, NULL, key16);
    node_prober_t *b = make_prober(2, false, NULL, key16);
    struct node_probe_sample s[2048];
    exchange(a, b, s, 2048, 300000000LL);
    uint16_t port = node_prober_port(b);
    struct node_prober_stats before;
    node_prober_stats(b, &before);

    send_raw(port, "hello, world", 12);
    uint8_t big[1000] = {0};
    send_raw(port, big, sizeof big);
    struct node_probe_pkt pkt = sample_pkt();
    uint8_t buf[NODE_PROBE_MAX_SIZE];
    pkt.src = 1;
    pkt.dst = 2;
    pkt.n_echo = 0;
    size_t len = node_probe_encode(&pkt, NULL, buf); /* no MAC: a forgery */
    send_raw(port, buf, len);
    len = node_probe_encode(&pkt, key16, buf); /* right MAC, wrong source address */
    send_raw(port, buf, len);
    pkt.src = 77;
    len = node_probe_encode(&pkt, key16, buf); /* not a peer */
    send_raw(port, buf, len);

    struct node_prober_stats after;
    for (int i = 0; i < 50; i++) {
        base_sleep_ns(20000000);
        node_prober_stats(b, &after);
        if (after.garbage >= before.garbage + 2 && after.forged >= before.forged + 1 &&
            after.misaddressed >= before.misaddressed + 1 && after.unknown >= before.unknown + 1)
            break;
    }
    assert_int_equal(after.garbage, before.garbage + 2);
    assert_int_equal(after.forged, before.forged + 1); /* the MAC, not the address */
    assert_int_equal(after.misaddressed, before.misaddressed + 1);
    assert_int_equal(after.unknown, before.unknown + 1);
    assert_true(base_decstats_errors(&after.dec) >= 3);
    /* Probing goes on. */
    for (int i = 0; i < 200 && after.samples_in <= before.samples_in; i++) {
        base_sleep_ns(10000000);
        node_prober_stats(b, &after);
    }
    assert_true(after.samples_in > before.samples_in);
    node_prober_destroy(&a);
    node_prober_destroy(&b);
}

/* A probe of node 1 to node 2 with sequence `seq` from socket fd to `to`. */
static void send_probe_seq(int fd, const struct node_peer *to, uint64_t seq, int index)
{
    struct node_probe_pkt pkt = {0};
    pkt.src = 1;
    pkt.dst = 2;
    pkt.seq = seq;
    pkt.index = (uint8_t)index;
    pkt.tx_user = base_realtime_ns();
    uint8_t buf[NODE_PROBE_MAX_SIZE];
    size_t len = node_probe_encode(&pkt, NULL, buf);
    assert_int_equal(sendto(fd, buf, len, 0, (const struct sockaddr *)&to->addr, to->addrlen),
                     (ssize_t)len);
}

static void await_received(node_prober_t *b, uint64_t want)
{
    struct node_prober_stats st;
    for (int i = 0; i < 500; i++) {
        node_prober_stats(b, &st);
        if (st.packets_received >= want)
            return;
        base_sleep_ns(2000000);
    }
    fail_msg("prober got %" PRIu64 " packets of %" PRIu64, st.packets_received, want);
}

/*
 * Without a MAC, three datagrams with a far-ahead sequence number, sent from
 * a peer's address, cut that peer off for good: the replay window followed
 * them, and every later real probe counted as a replay.  Now a far-ahead
 * number is held while the real sequence is alive, a few forged ones move
 * nothing, and a peer whose sequence really moved (a restart: its old one
 * fell silent) is taken up after a few packets.
 */
static void test_probe_seq_far_ahead(void **state)
{
    node_prober_t *b = make_prober(2, true, NULL, NULL);
    /* Node 1 is this test's own socket: what it sends, the peer sent. */
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in me = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &me.sin_addr);
    assert_int_equal(bind(fd, (struct sockaddr *)&me, sizeof me), 0);
    socklen_t mlen = sizeof me;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&me, &mlen), 0);
    struct node_peer pa = {.id = 1, .addrlen = sizeof me}, pb;
    memcpy(&pa.addr, &me, sizeof me);
    peer_of(b, 2, &pb);
    node_prober_set_peers(b, &pa, 1);
    assert_int_equal(node_prober_start(b, NULL), BASE_OK);
    uint64_t sent = 0, seq = 1000;
    for (; seq < 1010; seq++, sent += 2) {
        send_probe_seq(fd, &pb, seq, 0);
        send_probe_seq(fd, &pb, seq, 1);
    }
    await_received(b, sent);
    struct node_prober_stats st;
    node_prober_stats(b, &st);
    assert_int_equal(st.replayed, 0);
    /* Three forged far-ahead probes between real ones. */
    for (int i = 0; i < 3; i++, sent++)
        send_probe_seq(fd, &pb, (1ULL << 60) + (uint64_t)i, 0);
    for (int i = 0; i < 20; i++, seq++, sent += 2) {
        send_probe_seq(fd, &pb, seq, 0);
        send_probe_seq(fd, &pb, seq, 1);
    }
    /* Forged ones a little ahead, each within the window, to walk it off. */
    for (int i = 1; i <= 3; i++, sent++)
        send_probe_seq(fd, &pb, seq + (uint64_t)i * (16 - 1), 0);
    for (int i = 0; i < 64; i++, seq++, sent += 2) {
        send_probe_seq(fd, &pb, seq, 0);
        send_probe_seq(fd, &pb, seq, 1);
    }
    await_received(b, sent);
    node_prober_stats(b, &st);
    assert_int_equal(st.held, 3);
    /* The walk refuses some real probes for a moment, not for good. */
    assert_true(st.replayed <= 2 * 3 * 16);
    uint64_t replayed = st.replayed;
    for (int i = 0; i < 10; i++, seq++, sent += 2) {
        send_probe_seq(fd, &pb, seq, 0);
        send_probe_seq(fd, &pb, seq, 1);
    }
    await_received(b, sent);
    node_prober_stats(b, &st);
    assert_int_equal(st.replayed, replayed);
    /* The peer restarts: its old sequence falls silent, its new one is taken. */
    base_sleep_ns(700000000);
    uint64_t held = st.held;
    seq = 1ULL << 50;
    for (int i = 0; i < 10; i++, seq++, sent += 2) {
        send_probe_seq(fd, &pb, seq, 0);
        send_probe_seq(fd, &pb, seq, 1);
    }
    await_received(b, sent);
    node_prober_stats(b, &st);
    assert_int_equal(st.held - held, 3);
    assert_int_equal(st.replayed, replayed);
    close(fd);
    node_prober_destroy(&b);
}

/* Every node reaches every other along planned edges. */
static bool strongly_connected(const uint32_t *ids, size_t n, const struct node_edge *e, size_t m)
{
    for (size_t s = 0; s < n; s++) {
        bool seen[64] = {false};
        uint32_t stack[64];
        size_t top = 0, count = 1;
        seen[s] = true;
        stack[top++] = ids[s];
        while (top > 0) {
            uint32_t u = stack[--top];
            for (size_t i = 0; i < m; i++) {
                if (e[i].src != u)
                    continue;
                for (size_t j = 0; j < n; j++)
                    if (ids[j] == e[i].dst && !seen[j]) {
                        seen[j] = true;
                        count++;
                        stack[top++] = ids[j];
                    }
            }
        }
        if (count != n)
            return false;
    }
    return true;
}

static void test_graph_plan(void **state)
{
    struct node_edge e[512];
    uint32_t ids[40];
    for (size_t n = 2; n <= 40; n++) {
        for (size_t i = 0; i < n; i++)
            ids[i] = (uint32_t)(1000 - 7 * i); /* unsorted, sparse */
        for (int k = 1; k <= 6; k++) {
            size_t m = node_graph_plan(ids, n, k, e, 512);
            bool all = n - 1 <= 2 * (size_t)k;
            assert_int_equal(m, all ? n * (n - 1) / 2 : n * (size_t)k);
            /* Directed: the ring alone connects; n = 2 has one fitted pair, probed both ways. */
            if (n > 2)
                assert_true(strongly_connected(ids, n, e, m));
            /* Each unordered pair at most once. */
            for (size_t i = 0; i < m; i++) {
                assert_true(e[i].src != e[i].dst);
                for (size_t j = i + 1; j < m; j++) {
                    assert_false(e[i].src == e[j].src && e[i].dst == e[j].dst);
                    assert_false(e[i].src == e[j].dst && e[i].dst == e[j].src);
                }
            }
            uint32_t peers[64];
            size_t np = node_graph_peers(e, m, ids[0], peers, 64);
            if (all)
                assert_int_equal(np, n - 1);
            else
                assert_true(np >= (size_t)k && np <= 2 * (size_t)k);
        }
    }
    /* The undirected graph has loops for the network effect: edges > nodes - 1. */
    assert_true(node_graph_plan(ids, 10, 4, e, 512) > 9);
    assert_int_equal(node_graph_plan(ids, 1, 4, e, 512), 0);
}

/* ---- windows ----------------------------------------------------------- */

/* True offset of node 2's clock over node 1's at time x of node 1: 5 ms + 20 ppm. */
static const int64_t W_T0 = 1790000000000000000LL;
static double theta(int64_t x)
{
    return 5e6 + 20e-6 * (double)(x - W_T0);
}

/* A pure pair in each direction at x (node 1's clock), one-way delay d ns. */
static void make_pair(int64_t x, uint64_t seq, int64_t d, struct node_probe_sample *fwd,
                      struct node_probe_sample *rev)
{
    *fwd = (struct node_probe_sample){.src = 1, .dst = 2, .seq = seq};
    *rev = (struct node_probe_sample){.src = 2, .dst = 1, .seq = seq + 7};
    for (int i = 0; i < 2; i++) {
        int64_t xi = x + i * 100000;
        fwd->tx[i] = xi;
        fwd->rx[i] = xi + d + (int64_t)llround(theta(xi));
        /* The reverse packet leaves node 2 at node 1's time xi and lands d later. */
        rev->tx[i] = xi + (int64_t)llround(theta(xi));
        rev->rx[i] = xi + d;
    }
}

static node_windows_t *make_windows(size_t max)
{
    struct node_windows_cfg wc = {.self = 1, .window_ns = 1000000000, .max_per_peer = max};
    wc.est = clock_estimator_default();
    clock_purity_opts_default(&wc.purity);
    clock_fit_opts_default(&wc.fit);
    return node_windows_new(&wc);
}

static void test_window_fit(void **state)
{
    node_windows_t *w = make_windows(0);
    uint32_t owned = 2;
    node_windows_set_owned(w, &owned, 1);
    int64_t k = node_window_of(W_T0, 1000000000);
    int64_t start = k * 1000000000;
    /* 200 pairs each way over window k, one reverse pair lost, then some of window k+1. */
    for (int i = 0; i < 260; i++) {
        struct node_probe_sample f, r;
        make_pair(start + 2000000 + i * 5000000LL, 100 + (uint64_t)i, 20000 + (i % 7) * 30, &f, &r);
        if (i == 50)
            r.rx[1] = NODE_TS_NONE;
        node_windows_add(w, &f);
        node_windows_add(w, &r);
    }
    /* Samples of edges this node does not own (or that do not involve it). */
    struct node_probe_sample other = {.src = 3, .dst = 1, .seq = 1};
    node_windows_add(w, &other);
    other.src = 4;
    other.dst = 5;
    node_windows_add(w, &other);
    struct node_win_result r[4];
    size_t n = node_windows_close(w, k, NULL, 0, r, 4);
    assert_int_equal(n, 1);
    assert_true(r[0].fitted);
    assert_int_equal(r[0].src, 1);
    assert_int_equal(r[0].dst, 2);
    assert_true(r[0].window == k && r[0].fit.window == k);
    assert_true(r[0].from_ns == start && r[0].to_ns == start + 1000000000);
    /* 200 pairs fall in window k (the last one starts at 997 ms). */
    assert_int_equal(r[0].fwd.sent, 200);
    assert_int_equal(r[0].fwd.received, 200);
    assert_int_equal(r[0].rev.received, 199);
    assert_int_equal(r[0].rev.lost, 1);
    assert_true(r[0].fwd.pure > 150 && r[0].rev.pure > 150);
    double err = clock_edge_map(&r[0].fit, start + 500000000) - (start + 500000000) -
                 theta(start + 500000000);
    assert_true(fabs(err) < 100);
    assert_true(fabs(r[0].fit.drift_ppb - 20000) < 50);
    /* Round trip: twice the one-way delay. */
    assert_true(fabs(r[0].rtt_min_ns - 40000) < 200);
    assert_true(r[0].rtt_median_ns >= r[0].rtt_min_ns && r[0].rtt_p99_ns >= r[0].rtt_median_ns);
    /* A sample for window k now is late; window k+1 still has its own. */
    struct node_probe_sample f, rv;
    make_pair(start + 10000000, 5000, 20000, &f, &rv);
    node_windows_add(w, &f);
    struct node_windows_stats st;
    node_windows_stats(w, &st);
    assert_int_equal(st.late, 1);
    assert_int_equal(st.not_owned, 2);
    assert_int_equal(st.fits, 1);
    n = node_windows_close(w, k + 1, NULL, 0, r, 4);
    assert_int_equal(n, 1);
    assert_int_equal(r[0].fwd.received, 60);
    node_windows_destroy(&w);
    assert_null(w);
}

static void test_window_bounds(void **state)
{
    assert_true(node_window_of(-1, 10) == -1);
    assert_true(node_window_of(-10, 10) == -1);
    assert_true(node_window_of(9, 10) == 0);
    assert_true(node_window_of(10, 10) == 1);
    /* A full buffer drops and counts; too few points is a fit error with a reason. */
    node_windows_t *w = make_windows(8);
    uint32_t owned = 2;
    node_windows_set_owned(w, &owned, 1);
    int64_t k = node_window_of(W_T0, 1000000000), start = k * 1000000000;
    for (int i = 0; i < 10; i++) {
        struct node_probe_sample f, r;
        make_pair(start + i * 1000000LL, 1 + (uint64_t)i, 20000, &f, &r);
        node_windows_add(w, &f);
    }
    struct node_windows_stats st;
    node_windows_stats(w, &st);
    assert_int_equal(st.added, 8);
    assert_int_equal(st.full, 2);
    /* A peer that never answered: `sent` comes from the prober's counter. */
    struct node_peer_count pc = {.id = 2, .pairs_sent = 40};
    struct node_win_result r;
    assert_int_equal(node_windows_close(w, k, &pc, 1, &r, 1), 1);
    assert_false(r.fitted);
    assert_true(strlen(r.err) > 0);
    assert_int_equal(r.rev.received, 0);
    pc.pairs_sent = 70;
    assert_int_equal(node_windows_close(w, k + 1, &pc, 1, &r, 1), 1);
    assert_int_equal(r.fwd.sent, 30);
    assert_int_equal(r.fwd.lost, 30);
    /* Not owned any more: nothing to report. */
    node_windows_set_owned(w, NULL, 0);
    assert_int_equal(node_windows_close(w, k + 2, &pc, 1, &r, 1), 0);
    node_windows_destroy(&w);
}

/* ---- plan ------------------------------------------------------------------ */

static void test_plan_json(void **state)
{
    struct node_plan p = {.epoch = 7, .ref = 0, .nnodes = 3, .nedges = 3};
    p.nodes = calloc(3, sizeof *p.nodes);
    p.edges = calloc(3, sizeof *p.edges);
    for (uint32_t i = 0; i < 3; i++) {
        p.nodes[i].id = i * 10;
        snprintf(p.nodes[i].host, sizeof p.nodes[i].host, "host%u", i);
        snprintf(p.nodes[i].addr, sizeof p.nodes[i].addr, "10.0.0.%u:%u", i + 1, 4000 + i);
        p.edges[i] = (struct node_edge){i * 10, ((i + 1) % 3) * 10};
    }
    json_object *h = json_object_new_object();
    node_plan_to_json(&p, h);
    struct node_plan q;
    char err[BASE_ERRLEN];
    assert_int_equal(node_plan_from_json(h, &q, err), BASE_DEC_OK);
    assert_true(q.epoch == 7 && q.nnodes == 3 && q.nedges == 3);
    assert_string_equal(q.nodes[2].addr, "10.0.0.3:4002");
    assert_int_equal(q.edges[2].src, 20);
    assert_int_equal(q.edges[2].dst, 0);
    assert_non_null(node_plan_find(&q, 10));
    assert_null(node_plan_find(&q, 11));
    node_plan_free(&q);
    /* The bus schema accepts what the master writes. */
    assert_int_equal(bus_schema_validate(BUS_K_PLAN, h, err), BASE_DEC_OK);

    /* Malformed plans are refused with a reason, never half-applied. */
    json_object *bad = json_tokener_parse("{\"epoch\":1,\"ref\":0,\"nodes\":[],\"edges\":[[1]]}");
    assert_int_equal(node_plan_from_json(bad, &q, err), BASE_DEC_BAD_VALUE);
    assert_null(q.nodes);
    json_object_put(bad);
    bad = json_tokener_parse("{\"epoch\":1,\"ref\":0,\"nodes\":[{\"node\":70000,\"host\":\"h\","
                             "\"probe_addr\":\"1.2.3.4:5\"}],\"edges\":[]}");
    assert_int_equal(node_plan_from_json(bad, &q, err), BASE_DEC_BAD_VALUE);
    json_object_put(bad);
    bad = json_tokener_parse("{\"epoch\":1,\"ref\":0,\"nodes\":{},\"edges\":[]}");
    assert_int_equal(node_plan_from_json(bad, &q, err), BASE_DEC_BAD_TYPE);
    json_object_put(bad);
    json_object *big = json_object_new_object();
    json_object_object_add(big, "epoch", json_object_new_int(1));
    json_object_object_add(big, "ref", json_object_new_int(0));
    json_object *arr = json_object_new_array();
    for (int i = 0; i <= NODE_MAX_NODES; i++)
        json_object_array_add(arr, json_object_new_object());
    json_object_object_add(big, "nodes", arr);
    json_object_object_add(big, "edges", json_object_new_array());
    assert_int_equal(node_plan_from_json(big, &q, err), BASE_DEC_OVERSIZED);
    json_object_put(big);
    json_object_put(h);
    node_plan_free(&p);
}

/* ---- configuration --------------------------------------------------------- */

static void expect_bad(const char *key, const char *value, const char *named)
{
    size_t n;
    const struct base_cfg_key *keys = node_config_keys(&n);
    base_config_t *cfg = base_config_new(keys, n);
    char err[BASE_ERRLEN] = "";
    int rc = base_config_set(cfg, key, value, BASE_CFG_FLAG, err);
    if (rc == BASE_OK)
        rc = node_config_check(cfg, err);
    assert_int_equal(rc, BASE_ERR);
    if (strstr(err, named) == NULL)
        fail_msg("%s=%s: message \"%s\" does not name %s", key, value, err, named);
    base_config_destroy(&cfg);
}

static void test_config(void **state)
{
    size_t n;
    const struct base_cfg_key *keys = node_config_keys(&n);
    base_config_t *cfg = base_config_new(keys, n);
    char err[BASE_ERRLEN];
    assert_int_equal(node_config_check(cfg, err), BASE_OK);
    assert_int_equal(base_config_int(cfg, "probe_cadence_us"), NODE_DEFAULT_CADENCE_US);
    assert_true(base_config_double(cfg, "probe_window_s") == NODE_DEFAULT_WINDOW_S);
    /* The seed values stay reachable. */
    assert_int_equal(base_config_set(cfg, "probe-cadence-us", "800", BASE_CFG_FLAG, err), BASE_OK);
    assert_int_equal(base_config_set(cfg, "probe_window_s", "4", BASE_CFG_ENV, err), BASE_OK);
    assert_int_equal(node_config_check(cfg, err), BASE_OK);
    base_config_destroy(&cfg);

    expect_bad("probe_cadence_us", "fast", "probe_cadence_us");
    expect_bad("probe_cadence_us", "10", "probe_cadence_us");
    expect_bad("packet_spacing_us", "15000", "packet_spacing_us");
    expect_bad("probe_window_s", "0.15", "probe_window_s");
    expect_bad("estimator", "magic", "estimator");
    expect_bad("sim_clock", "1,2,3,4", "sim_clock");
    expect_bad("sim_clock", "abc,2", "sim_clock");
    expect_bad("sim_late_us", "20000", "sim_late_us");
    expect_bad("probe_key", "00112233", "probe_key");
    expect_bad("probe_key", "zz112233445566778899aabbccddeeff", "probe_key");
    expect_bad("hub", "udp://x:1", "hub");
    expect_bad("listen", "tcp://host", "listen");
    expect_bad("bind_ip", "localhost", "bind_ip");
    expect_bad("trace_endpoint", "shm://x", "trace_endpoint");
    expect_bad("neighbors", "0", "neighbors");
    expect_bad("node_id", "70000", "node_id");
    expect_bad("master", "maybe", "master");
    expect_bad("no_such_key", "1", "no_such_key");

    uint8_t key[NODE_PROBE_KEY_SIZE];
    assert_int_equal(node_parse_key("000102030405060708090A0B0C0D0E0F", key, err), BASE_OK);
    assert_memory_equal(key, key16, 16);

    /* Simulated detours: ID:NS pairs. */
    struct node_sim_delay sd[NODE_SIM_DELAY_MAX];
    size_t nsd = 99;
    assert_int_equal(node_parse_sim_delay("", sd, &nsd, err), BASE_OK);
    assert_int_equal(nsd, 0);
    assert_int_equal(node_parse_sim_delay("3:40000,4000000000:0", sd, &nsd, err), BASE_OK);
    assert_int_equal(nsd, 2);
    assert_true(sd[0].from == 3 && sd[0].ns == 40000 && sd[1].from == 4000000000u && sd[1].ns == 0);
    static const char *const bad_delays[] = {"3",       "3:",           ":5",          "x:5",
                                             "3:x",     "3:-1",         "-3:5",        "3:5,",
                                             "3:5;4:6", "3:2000000000", "5000000000:1"};
    for (size_t i = 0; i < BASE_ARRAY_LEN(bad_delays); i++)
        if (node_parse_sim_delay(bad_delays[i], sd, &nsd, err) == BASE_OK)
            fail_msg("sim_path_delay \"%s\" was accepted", bad_delays[i]);
    char many[512] = "";
    for (int i = 0; i <= NODE_SIM_DELAY_MAX; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%s%d:1", i ? "," : "", i);
    assert_int_not_equal(node_parse_sim_delay(many, sd, &nsd, err), BASE_OK);
    expect_bad("sim_path_delay", "3:x", "sim_path_delay");
}

/* ---- prober additions -------------------------------------------------------- */

/* Packets crafted as peer 1 from a socket registered as its address. */
static void send_probe(int fd, uint16_t port, uint64_t seq, int index,
                       const struct node_probe_fu *fu, size_t nfu)
{
    struct node_probe_pkt p = {0};
    p.index = (uint8_t)index;
    p.src = 1;
    p.dst = 2;
    p.seq = seq;
    p.tx_user = 1790000000000000000LL + (int64_t)seq * 1000000;
    for (size_t i = 0; i < nfu; i++)
        p.fu[i] = fu[i];
    uint8_t buf[NODE_PROBE_MAX_SIZE];
    size_t len = node_probe_encode(&p, key16, buf);
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    assert_int_equal(sendto(fd, buf, len, 0, (struct sockaddr *)&to, sizeof to), (ssize_t)len);
}

static void test_prober_loss_and_duplicates(void **state)
{
    node_prober_t *b = make_prober(2, false, NULL, key16);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in me = {.sin_family = AF_INET};
    inet_pton(AF_INET, "127.0.0.1", &me.sin_addr);
    assert_int_equal(bind(fd, (struct sockaddr *)&me, sizeof me), 0);
    socklen_t mlen = sizeof me;
    getsockname(fd, (struct sockaddr *)&me, &mlen);
    struct node_peer peer = {.id = 1, .addrlen = sizeof me};
    memcpy(&peer.addr, &me, sizeof me);
    node_prober_set_peers(b, &peer, 1);
    assert_int_equal(node_prober_start(b, NULL), BASE_OK);
    uint16_t port = node_prober_port(b);

    struct node_probe_fu fu[2] = {{0}};
    send_probe(fd, port, 1000, 0, NULL, 0);
    send_probe(fd, port, 1000, 0, NULL, 0); /* a duplicate */
    send_probe(fd, port, 1000, 1, NULL, 0);
    send_probe(fd, port, 1001, 0, NULL, 0); /* its second packet is "lost" */
    fu[0] = (struct node_probe_fu){.seq = 1001, .tx = {1, 2}};
    fu[1] = (struct node_probe_fu){.seq = 1000, .tx = {3, 4}};
    send_probe(fd, port, 1002, 0, fu, 2);  /* follow-ups complete 1000 and 1001 */
    send_probe(fd, port, 900, 0, NULL, 0); /* from the past: a replay */

    struct node_prober_stats st = {0};
    for (int i = 0; i < 200 && (st.samples_in < 2 || st.replayed < 2); i++) {
        base_sleep_ns(10000000);
        node_prober_stats(b, &st);
    }
    assert_int_equal(st.samples_in, 2);
    assert_int_equal(st.replayed, 2);
    assert_int_equal(st.lost_packets, 1);
    assert_int_equal(st.forged, 0);
    struct node_probe_sample s[8];
    size_t n = node_prober_drain(b, s, 8);
    assert_int_equal(n, 2);
    /* Oldest first; the tx times are the follow-ups'. */
    assert_true(s[0].seq == 1000 && s[0].tx[0] == 3 && s[0].rx[0] != NODE_TS_NONE &&
                s[0].rx[1] != NODE_TS_NONE);
    assert_true(s[1].seq == 1001 && s[1].rx[0] != NODE_TS_NONE && s[1].rx[1] == NODE_TS_NONE);
    node_prober_destroy(&b);
    close(fd);
}

/*
 * A round starts one peer later each time: the first send after a wake-up
 * is slow between its two software stamps, and with a fixed order one flow
 * per node took all of it (a steady -120 ns edge bias on loopback).  The
 * second packets go out in the round's order too, or a pair's spacing would
 * change with the peer.  Four plain sockets stand for the peers; the
 * packets' own user-space send times order each round.
 */
static void test_prober_round_order(void **state)
{
    node_prober_t *b = make_prober(2, false, NULL, NULL);
    enum { NP = 4, MAXP = 512 };
    int fd[NP];
    struct node_peer peers[NP];
    for (int i = 0; i < NP; i++) {
        fd[i] = socket(AF_INET, SOCK_DGRAM, 0);
        assert_true(fd[i] >= 0);
        struct sockaddr_in me = {.sin_family = AF_INET};
        inet_pton(AF_INET, "127.0.0.1", &me.sin_addr);
        assert_int_equal(bind(fd[i], (struct sockaddr *)&me, sizeof me), 0);
        socklen_t mlen = sizeof me;
        assert_int_equal(getsockname(fd[i], (struct sockaddr *)&me, &mlen), 0);
        peers[i] = (struct node_peer){.id = 10 + (uint32_t)i, .addrlen = sizeof me};
        memcpy(&peers[i].addr, &me, sizeof me);
    }
    node_prober_set_peers(b, peers, NP);
    assert_int_equal(node_prober_start(b, NULL), BASE_OK);
    base_sleep_ns(300000000LL); /* about 150 rounds at 2 ms */
    node_prober_destroy(&b);

    /* Per pair: its peer and the send times of its two packets. */
    struct pair_sent {
        int who;
        uint64_t seq;
        int64_t tx[2];
    };
    static struct pair_sent pr[NP * MAXP];
    size_t n = 0;
    for (int i = 0; i < NP; i++) {
        size_t first = n;
        uint8_t buf[NODE_PROBE_MAX_SIZE];
        ssize_t len;
        while ((len = recv(fd[i], buf, sizeof buf, MSG_DONTWAIT)) > 0) {
            struct node_probe_pkt p;
            char err[BASE_ERRLEN];
            assert_int_equal(node_probe_decode(buf, (size_t)len, NULL, &p, err), BASE_DEC_OK);
            assert_int_equal(p.dst, 10 + (uint32_t)i);
            size_t k = first;
            while (k < n && pr[k].seq != p.seq)
                k++;
            if (k == n) {
                if (n == NP * MAXP)
                    continue;
                pr[n].who = i;
                pr[n].seq = p.seq;
                pr[n].tx[0] = pr[n].tx[1] = 0;
                n++;
            }
            pr[k].tx[p.index] = p.tx_user;
        }
        close(fd[i]);
    }
    /* Whole pairs only, by the send time of their first packet (a few hundred). */
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (pr[i].tx[0] != 0 && pr[i].tx[1] != 0)
            pr[m++] = pr[i];
    for (size_t i = 1; i < m; i++)
        for (size_t j = i; j > 0 && pr[j - 1].tx[0] > pr[j].tx[0]; j--) {
            struct pair_sent t = pr[j];
            pr[j] = pr[j - 1];
            pr[j - 1] = t;
        }
    /* A round's sends are microseconds apart, rounds about 2 ms. */
    int first[NP] = {0}, rounds = 0;
    for (size_t i = 0; i < m;) {
        size_t j = i + 1;
        while (j < m && pr[j].tx[0] - pr[j - 1].tx[0] < 500000)
            j++;
        if (j - i == NP) {
            first[pr[i].who]++;
            rounds++;
            for (size_t k = i + 1; k < j; k++)
                if (pr[k].tx[1] < pr[k - 1].tx[1])
                    fail_msg("round %d: second packets out of the first ones' order", rounds);
        }
        i = j;
    }
    assert_true(rounds >= 30);
    for (int i = 0; i < NP; i++)
        if (first[i] < rounds / 8) /* a quarter each; a fixed order gives 0 */
            fail_msg("peer %d led %d of %d rounds", i, first[i], rounds);
}

static void test_prober_counts_and_timing(void **state)
{
    node_prober_t *a = make_prober(1, false, NULL, NULL);
    node_prober_t *b = make_prober(2, false, NULL, NULL);
    char err[BASE_ERRLEN];
    assert_int_equal(node_prober_set_timing(a, 1000, 1000, err), BASE_ERR);
    assert_int_equal(node_prober_set_timing(a, 1000000, 100000, err), BASE_OK);
    struct node_probe_sample s[4096];
    exchange(a, b, s, 4096, 400000000LL);
    struct node_peer_count pc[4];
    assert_int_equal(node_prober_peer_counts(a, pc, 4), 1);
    assert_int_equal(pc[0].id, 2);
    /* At 1 ms for 0.4 s: far more pairs than b's 2 ms cadence alone would give. */
    assert_true(pc[0].pairs_sent > 100);
    assert_true(pc[0].samples_out > 0 && pc[0].samples_in > 0);
    /* A new id forgets the peers (they knew the old one). */
    node_prober_set_self(a, 9);
    assert_int_equal(node_prober_peer_counts(a, pc, 4), 0);
    node_prober_destroy(&a);
    node_prober_destroy(&b);
}

/* ---- the master ---------------------------------------------------------------- */

struct mctx {
    int plans;
    struct node_plan last;
};

static int64_t m_now(void *ctx)
{
    return base_realtime_ns();
}

static void m_plan(void *ctx, const struct node_plan *plan)
{
    struct mctx *c = ctx;
    c->plans++;
    c->last.epoch = plan->epoch;
    c->last.nnodes = plan->nnodes;
    c->last.nedges = plan->nedges;
}

/* The master the tests run: 1 s windows, heartbeats every hb_ns, on `ep`. */
static struct node_master_cfg test_master_cfg(const char *ep, int64_t hb_ns)
{
    return (struct node_master_cfg){
        .listen = ep,
        .self_id = 0,
        .ref = -1,
        .k = 4,
        .window_ns = 1000000000,
        .cadence_ns = 10000000,
        .spacing_ns = 100000,
        .snapshot_ns = 100000000,
        .hb_ns = hb_ns,
        .status_ns = 1000000000,
        .grace_ns = 250000000,
        .forget_ns = 600000000000LL,
        .host = "masterhost",
        .version = DP_VERSION,
        .instance = "m",
        .probe_addr = "127.0.0.1:40000",
        .pid = 1,
        .probe_now = m_now,
    };
}

static bus_msg_t *hello(const char *instance, int req)
{
    bus_msg_t *m = bus_msg_new(BUS_K_HELLO);
    bus_msg_set_str(m, "host", "testhost");
    bus_msg_set_i64(m, "pid", 1234);
    bus_msg_set_str(m, "version", DP_VERSION);
    bus_msg_set_str(m, "instance", instance);
    bus_msg_set_str(m, "probe_addr", "127.0.0.1:40001");
    if (req >= 0)
        bus_msg_set_i64(m, "req_node", req);
    json_object_object_add(bus_msg_header(m), "clocks", json_object_new_array());
    json_object_object_add(bus_msg_header(m), "gpus", json_object_new_array());
    return m;
}

/* Tick the master until the client gets a message of `kind` (others are skipped). */
static bus_msg_t *await(node_master_t *m, bus_reg_t *r, enum bus_kind kind)
{
    char err[BASE_ERRLEN];
    for (int i = 0; i < 200; i++) {
        assert_int_equal(node_master_tick(m, 5, err), BASE_OK);
        bus_msg_t *msg = NULL;
        while (bus_reg_recv(r, &msg, 5, err) == 1) {
            if (bus_msg_kind(msg) == kind)
                return msg;
            bus_msg_destroy(&msg);
        }
    }
    fail_msg("no %s reply", bus_kind_name(kind));
    return NULL;
}

/* A temporary directory for the hub's ipc endpoint (dir: a mkdtemp template). */
static void hub_dir(char *dir, char *ep, size_t len)
{
    assert_non_null(mkdtemp(dir));
    snprintf(ep, len, "ipc://%s/hub", dir);
}

static void hub_dir_remove(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* A hello (re-sent until the socket takes it) and its welcome: the id given. */
/* Join as agent `instance` of `host` (NULL: hello's own), asking for id
 * `req`; returns the id welcomed. */
static int64_t join_as(node_master_t *m, bus_reg_t *r, const char *instance, const char *host,
                       int req)
{
    char err[BASE_ERRLEN];
    bus_msg_t *msg = hello(instance, req);
    if (host)
        bus_msg_set_str(msg, "host", host);
    for (int i = 0; i < 100 && bus_reg_send(r, msg, err) != BASE_OK; i++)
        base_sleep_ns(10000000);
    bus_msg_destroy(&msg);
    msg = await(m, r, BUS_K_WELCOME);
    int64_t id = -1;
    assert_int_equal(base_json_get_i64(bus_msg_header(msg), "node", &id, err), BASE_DEC_OK);
    bus_msg_destroy(&msg);
    return id;
}

static int64_t join(node_master_t *m, bus_reg_t *r, const char *instance, int req)
{
    return join_as(m, r, instance, NULL, req);
}

static void test_master_registration(void **state)
{
    char dir[] = "/tmp/dpnode-test-XXXXXX", ep[128];
    hub_dir(dir, ep, sizeof ep);
    struct mctx c = {0};
    struct node_master_cfg mc = test_master_cfg(ep, 100000000);
    mc.forget_ns = 60000000000LL;
    mc.on_plan = m_plan;
    mc.ctx = &c;
    char err[BASE_ERRLEN];
    node_master_t *m = node_master_new(&mc, err);
    assert_non_null(m);
    struct bus_reg_opts ro = {.endpoint = ep, .node = BUS_NODE_NONE};
    bus_reg_t *r = bus_reg_new(&ro, err);
    assert_non_null(r);

    /* hello -> welcome with the first free id, then the plan naming it. */
    bus_msg_t *msg = hello("a1", -1);
    for (int i = 0; i < 100 && bus_reg_send(r, msg, err) != BASE_OK; i++)
        base_sleep_ns(10000000);
    bus_msg_destroy(&msg);
    msg = await(m, r, BUS_K_WELCOME);
    int64_t id;
    assert_int_equal(base_json_get_i64(bus_msg_header(msg), "node", &id, err), BASE_DEC_OK);
    assert_int_equal(id, 1);
    double win;
    assert_int_equal(base_json_get_double(bus_msg_header(msg), "window_s", &win, err), BASE_DEC_OK);
    assert_true(win == 1.0);
    bus_msg_destroy(&msg);
    msg = await(m, r, BUS_K_PLAN);
    struct node_plan plan;
    assert_int_equal(node_plan_from_json(bus_msg_header(msg), &plan, err), BASE_DEC_OK);
    assert_int_equal(plan.nnodes, 2);
    assert_int_equal(plan.nedges, 1);
    assert_non_null(node_plan_find(&plan, 1));
    node_plan_free(&plan);
    bus_msg_destroy(&msg);
    assert_true(c.plans >= 1 && c.last.nnodes == 2);
    size_t up, known;
    node_master_counts(m, &up, &known);
    assert_int_equal(up, 2);

    /* The same instance again keeps its id; a requested free id is granted. */
    bus_reg_send(r, msg = hello("a1", -1), err);
    bus_msg_destroy(&msg);
    msg = await(m, r, BUS_K_WELCOME);
    assert_int_equal(base_json_get_i64(bus_msg_header(msg), "node", &id, err), BASE_DEC_OK);
    assert_int_equal(id, 1);
    bus_msg_destroy(&msg);
    bus_reg_send(r, msg = hello("a2", 7), err);
    bus_msg_destroy(&msg);
    msg = await(m, r, BUS_K_WELCOME);
    assert_int_equal(base_json_get_i64(bus_msg_header(msg), "node", &id, err), BASE_DEC_OK);
    assert_int_equal(id, 7);
    bus_msg_destroy(&msg);
    /* The master's own id is never handed out.  This hello is the last thing
     * the master hears from a node that later goes down by silence. */
    int64_t last_contact = base_monotonic_ns();
    bus_reg_send(r, msg = hello("a3", 0), err);
    bus_msg_destroy(&msg);
    msg = await(m, r, BUS_K_WELCOME);
    assert_int_equal(base_json_get_i64(bus_msg_header(msg), "node", &id, err), BASE_DEC_OK);
    assert_true(id != 0 && id != 1 && id != 7);
    bus_msg_destroy(&msg);

    /* hb: a known node is acknowledged, an unknown one told to say hello. */
    bus_reg_set_node(r, 7);
    msg = bus_msg_new(BUS_K_HB);
    bus_msg_set_i64(msg, "node", 7);
    bus_msg_set_i64(msg, "t_ns", base_realtime_ns());
    bus_reg_send(r, msg, err);
    bus_msg_destroy(&msg);
    msg = await(m, r, BUS_K_HB);
    bool is_known = false;
    assert_int_equal(base_json_get_bool(bus_msg_header(msg), "known", &is_known, err), BASE_DEC_OK);
    assert_true(is_known);
    bus_msg_destroy(&msg);
    bus_reg_set_node(r, 77);
    msg = bus_msg_new(BUS_K_HB);
    bus_msg_set_i64(msg, "node", 77);
    bus_msg_set_i64(msg, "t_ns", base_realtime_ns());
    bus_reg_send(r, msg, err);
    bus_msg_destroy(&msg);
    msg = await(m, r, BUS_K_HB);
    assert_int_equal(base_json_get_bool(bus_msg_header(msg), "known", &is_known, err), BASE_DEC_OK);
    assert_false(is_known);
    bus_msg_destroy(&msg);

    /* A known id from another connection is not that node: register again. */
    bus_reg_t *r2 = bus_reg_new(&ro, err);
    assert_non_null(r2);
    bus_reg_set_node(r2, 1);
    msg = bus_msg_new(BUS_K_HB);
    bus_msg_set_i64(msg, "node", 1);
    bus_msg_set_i64(msg, "t_ns", base_realtime_ns());
    for (int i = 0; i < 100 && bus_reg_send(r2, msg, err) != BASE_OK; i++)
        base_sleep_ns(10000000);
    bus_msg_destroy(&msg);
    msg = await(m, r2, BUS_K_HB);
    assert_int_equal(base_json_get_bool(bus_msg_header(msg), "known", &is_known, err), BASE_DEC_OK);
    assert_false(is_known);
    bus_msg_destroy(&msg);
    bus_reg_destroy(&r2);

    /* bye: down at once; silence: down after 3 heartbeats (0.1 s here). */
    bus_reg_set_node(r, 7);
    msg = bus_msg_new(BUS_K_BYE);
    bus_msg_set_i64(msg, "node", 7);
    bus_reg_send(r, msg, err);
    bus_msg_destroy(&msg);
    int plans = c.plans;
    for (int i = 0; i < 100 && c.plans == plans; i++)
        assert_int_equal(node_master_tick(m, 5, err), BASE_OK);
    node_master_counts(m, &up, &known);
    assert_int_equal(known, 4);
    assert_true(up <= 3);
    int64_t t0 = base_monotonic_ns();
    do {
        assert_int_equal(node_master_tick(m, 10, err), BASE_OK);
        node_master_counts(m, &up, &known);
    } while (up > 1 && base_monotonic_ns() - t0 < 5000000000LL);
    assert_int_equal(up, 1);
    /* Not before 3 heartbeat periods of silence. */
    assert_true(base_monotonic_ns() - last_contact >= 300000000);
    struct node_master_stats ms;
    node_master_stats(m, &ms);
    assert_true(ms.marked_down >= 3);
    assert_int_equal(ms.byes, 1);
    assert_int_equal(ms.unknown_hb, 2);

    bus_reg_destroy(&r);
    node_master_destroy(&m);
    assert_null(m);
    hub_dir_remove(dir);
}

static void send_edge_fit(bus_pub_t *pub, uint32_t src, uint32_t dst, int64_t k, int64_t w)
{
    clock_edge_fit_t f;
    memset(&f, 0, sizeof f);
    f.window = k;
    f.src = src;
    f.dst = dst;
    snprintf(f.estimator, sizeof f.estimator, "svm");
    f.from_ns = k * w;
    f.to_ns = f.from_ns + w;
    f.anchor_ns = f.from_ns + w / 2;
    f.uncertainty_ns = 10;
    f.n_fwd = f.n_rev = 100;
    json_object *o = clock_json_edge_fit(&f);
    bus_msg_t *m = bus_msg_new(BUS_K_EDGE_FIT);
    json_object_object_foreach(o, key, val)
    {
        if (strcmp(key, "type") != 0)
            json_object_object_add(bus_msg_header(m), key, json_object_get(val));
    }
    json_object_put(o);
    char err[BASE_ERRLEN];
    assert_int_equal(bus_pub_send(pub, m, err), BASE_OK);
    bus_msg_destroy(&m);
}

/* Tick until the counter at `field` of the master's stats reaches `want`
 * (10 s at most: a tick returns early on any message, so not a count). */
#define AWAIT_STAT(m, field, want)                                                                 \
    do {                                                                                           \
        struct node_master_stats st_;                                                              \
        char e_[BASE_ERRLEN];                                                                      \
        int64_t t0_ = base_monotonic_ns();                                                         \
        while (base_monotonic_ns() - t0_ < 10000000000LL) {                                        \
            assert_int_equal(node_master_tick(m, 5, e_), BASE_OK);                                 \
            node_master_stats(m, &st_);                                                            \
            if (st_.field >= (want))                                                               \
                break;                                                                             \
        }                                                                                          \
        assert_int_equal(st_.field, (want));                                                       \
    } while (0)

static int64_t m_now_shifted(void *ctx)
{
    return base_realtime_ns() + *(const int64_t *)ctx;
}

/* Send over the registration DEALER, ticking the master until it connected. */
static void reg_send(node_master_t *m, bus_reg_t *r, bus_msg_t *msg)
{
    char err[BASE_ERRLEN];
    int rc = BUS_DROPPED;
    for (int i = 0; i < 400 && rc == BUS_DROPPED; i++) {
        rc = bus_reg_send(r, msg, err);
        if (rc == BUS_DROPPED)
            assert_int_equal(node_master_tick(m, 5, err), BASE_OK);
    }
    assert_int_equal(rc, BASE_OK);
    bus_msg_destroy(&msg);
}

static bus_msg_t *relay_report(const char *name, uint64_t up_msgs, uint64_t dropped)
{
    bus_msg_t *m = bus_msg_new(BUS_K_RELAY);
    bus_msg_set_str(m, "name", name);
    bus_msg_set_str(m, "upstream", "tcp://master:7410");
    bus_msg_set_u64(m, "up_msgs", up_msgs);
    bus_msg_set_u64(m, "up_bytes", up_msgs * 100);
    bus_msg_set_u64(m, "up_dropped", dropped);
    bus_msg_set_u64(m, "down_msgs", 7);
    bus_msg_set_u64(m, "down_bytes", 700);
    return m;
}

/* The latest `relays` table the master published within ms, as
 * "name=state/up_msgs/lost ..."; out is left as it was when none came. */
static void latest_relays(node_master_t *m, bus_sub_t *sub, int ms, char *out, size_t len)
{
    char err[BASE_ERRLEN];
    int64_t end = base_monotonic_ns() + (int64_t)ms * 1000000;
    while (base_monotonic_ns() < end) {
        assert_int_equal(node_master_tick(m, 5, err), BASE_OK);
        bus_msg_t *in = NULL;
        while (bus_sub_recv(sub, &in, 0, err) == 1) {
            if (bus_msg_kind(in) == BUS_K_RELAYS) {
                json_object *arr;
                assert_true(json_object_object_get_ex(bus_msg_header(in), "relays", &arr));
                size_t off = 0;
                out[0] = '\0';
                for (size_t i = 0; i < json_object_array_length(arr); i++) {
                    json_object *r = json_object_array_get_idx(arr, i), *v;
                    const char *name, *state;
                    uint64_t up, lost;
                    assert_int_equal(base_json_get_str(r, "name", &name, NULL), BASE_DEC_OK);
                    assert_int_equal(base_json_get_str(r, "state", &state, NULL), BASE_DEC_OK);
                    assert_int_equal(base_json_get_u64(r, "up_msgs", &up, NULL), BASE_DEC_OK);
                    assert_int_equal(base_json_get_u64(r, "up_dropped", &lost, NULL), BASE_DEC_OK);
                    assert_true(json_object_object_get_ex(r, "silent_s", &v));
                    off += (size_t)snprintf(out + off, len - off, "%s%s=%s/%llu/%llu",
                                            off ? " " : "", name, state, (unsigned long long)up,
                                            (unsigned long long)lost);
                }
            }
            bus_msg_destroy(&in);
        }
    }
}

/*
 * Relays report to the master's registration socket; the master keeps
 * their table and publishes it: both up with their counters, one that goes
 * silent for three heartbeats down, a full table refused and counted, and
 * a report without a name refused by the schema before the master.
 */
static void test_master_relays(void **state)
{
    char dir[] = "/tmp/dpnode-test-XXXXXX", ep[128];
    hub_dir(dir, ep, sizeof ep);
    /* Heartbeats of 300 ms: a relay is down after 975 ms of silence, far
     * from the 70 ms between b's reports even on a loaded machine (with
     * 100 ms, b went down there in the 250 ms wait at the end). */
    struct node_master_cfg mc = test_master_cfg(ep, 300000000);
    char err[BASE_ERRLEN];
    node_master_t *m = node_master_new(&mc, err);
    assert_non_null(m);
    struct bus_pub_opts po = {.endpoint = bus_hub_endpoint(node_master_hub(m), BUS_HUB_PUB),
                              .node = 0};
    bus_pub_t *pub = bus_pub_new(&po, err);
    assert_non_null(pub);
    node_master_set_pub(m, pub);
    static const char *const prefixes[] = {"dp1.relays.", NULL};
    struct bus_sub_opts so = {.endpoint = bus_hub_endpoint(node_master_hub(m), BUS_HUB_SUB),
                              .prefixes = prefixes};
    bus_sub_t *sub = bus_sub_new(&so, err);
    assert_non_null(sub);
    for (int j = 0; j < 400 && !bus_pub_subscribed(pub, BUS_K_RELAYS); j++)
        assert_int_equal(node_master_tick(m, 5, err), BASE_OK);
    assert_true(bus_pub_subscribed(pub, BUS_K_RELAYS));
    struct bus_reg_opts ro = {.endpoint = ep, .node = BUS_NODE_NONE};
    bus_reg_t *r = bus_reg_new(&ro, err);
    assert_non_null(r);

    char table[1024] = "";
    /* Both report (the first twice, counting on: the row follows). */
    for (int i = 0; i < 3; i++) {
        reg_send(m, r, relay_report(i == 1 ? "tcp://b:7420" : "tcp://a:7420", 100 + i, i));
    }
    AWAIT_STAT(m, relay_reports, 3);
    latest_relays(m, sub, 150, table, sizeof table);
    assert_string_equal(table, "tcp://a:7420=up/102/2 tcp://b:7420=up/101/1");
    /* b goes on reporting, a falls silent: down after three heartbeats. */
    for (int i = 0; i < 16; i++) {
        reg_send(m, r, relay_report("tcp://b:7420", 200 + i, 1));
        latest_relays(m, sub, 70, table, sizeof table);
    }
    latest_relays(m, sub, 350, table, sizeof table); /* a heartbeat's publication */
    assert_string_equal(table, "tcp://a:7420=down/102/2 tcp://b:7420=up/215/1");
    /* A report without its name never reaches the master's table. */
    bus_msg_t *bad = bus_msg_new(BUS_K_RELAY);
    bus_msg_set_str(bad, "upstream", "x");
    assert_int_not_equal(bus_reg_send(r, bad, err), BASE_OK);
    bus_msg_destroy(&bad);
    /* Room for 256: the 257th relay is refused and counted. */
    for (int i = 0; i < 256; i++) {
        char name[32];
        snprintf(name, sizeof name, "tcp://r%d:7420", i);
        reg_send(m, r, relay_report(name, 1, 0));
    }
    AWAIT_STAT(m, relays_refused, 2); /* a and b hold two places */
    struct node_master_stats ms;
    node_master_stats(m, &ms);
    assert_int_equal(ms.relay_reports, 3 + 16 + 254);
    bus_reg_destroy(&r);
    bus_sub_destroy(&sub);
    node_master_set_pub(m, NULL);
    bus_pub_destroy(&pub);
    node_master_destroy(&m);
    hub_dir_remove(dir);
}

/* A master on ep whose plans c counts; heartbeats a minute apart, so that
 * nobody goes down in a test that does not wait for it. */
static node_master_t *start_counted_master(const char *ep, struct mctx *c)
{
    struct node_master_cfg mc = test_master_cfg(ep, 60000000000LL);
    mc.on_plan = m_plan;
    mc.ctx = c;
    char err[BASE_ERRLEN];
    node_master_t *m = node_master_new(&mc, err);
    assert_non_null(m);
    return m;
}

/*
 * A bye counts only from the connection that registered the node: forged
 * ones (any connection can write any node id) marked a live node down and
 * re-planned the cluster around it, 40 byes 20 downs and 42 plans.
 */
static void test_master_forged_bye(void **state)
{
    char dir[] = "/tmp/dpnode-test-XXXXXX", ep[128];
    hub_dir(dir, ep, sizeof ep);
    struct mctx c = {0};
    node_master_t *m = start_counted_master(ep, &c);
    char err[BASE_ERRLEN];
    struct bus_reg_opts ro = {.endpoint = ep, .node = BUS_NODE_NONE};
    bus_reg_t *r = bus_reg_new(&ro, err), *forger = bus_reg_new(&ro, err);
    assert_non_null(r);
    assert_non_null(forger);
    assert_int_equal(join(m, r, "victim", -1), 1);
    /* The forger is a registered node itself, so its connection is known. */
    assert_int_equal(join(m, forger, "forger", -1), 2);
    AWAIT_STAT(m, plans, 1);
    struct node_master_stats ms;
    node_master_stats(m, &ms);
    uint64_t plans = ms.plans;
    for (int i = 0; i < 40; i++) {
        bus_reg_set_node(forger, i % 2 ? 1 : 0); /* the victim's, and the master's */
        bus_msg_t *msg = bus_msg_new(BUS_K_BYE);
        bus_msg_set_i64(msg, "node", i % 2 ? 1 : 0);
        assert_int_equal(bus_reg_send(forger, msg, err), BASE_OK);
        bus_msg_destroy(&msg);
    }
    AWAIT_STAT(m, byes, 40);
    node_master_stats(m, &ms);
    assert_int_equal(ms.byes_refused, 40);
    assert_int_equal(ms.marked_down, 0);
    assert_int_equal(ms.plans, plans);
    size_t up, known;
    node_master_counts(m, &up, &known);
    assert_int_equal(up, 3);
    /* The victim's own bye still counts. */
    bus_reg_set_node(r, 1);
    bus_msg_t *msg = bus_msg_new(BUS_K_BYE);
    bus_msg_set_i64(msg, "node", 1);
    assert_int_equal(bus_reg_send(r, msg, err), BASE_OK);
    bus_msg_destroy(&msg);
    AWAIT_STAT(m, marked_down, 1);
    node_master_counts(m, &up, &known);
    assert_int_equal(up, 2);
    bus_reg_destroy(&forger);
    bus_reg_destroy(&r);
    node_master_destroy(&m);
    hub_dir_remove(dir);
}

/*
 * A flood of hellos (each a new instance, so each changes the table) is
 * re-planned once a tick, not once a hello: 2,000 of them re-planned for
 * every node a thousand times and kept the master busy for minutes.  The
 * same holds for a cluster registering again after a master restart.
 */
static void test_master_hello_flood(void **state)
{
    char dir[] = "/tmp/dpnode-test-XXXXXX", ep[128];
    hub_dir(dir, ep, sizeof ep);
    struct mctx c = {0};
    node_master_t *m = start_counted_master(ep, &c);
    char err[BASE_ERRLEN];
    struct bus_reg_opts ro = {.endpoint = ep, .node = BUS_NODE_NONE};
    bus_reg_t *r = bus_reg_new(&ro, err);
    assert_non_null(r);
    assert_int_equal(join(m, r, "first", -1), 1);
    enum { FLOOD = 2000 };
    struct node_master_stats ms;
    int64_t t0 = base_monotonic_ns();
    for (int i = 0; i < FLOOD; i++) {
        char inst[32];
        snprintf(inst, sizeof inst, "flood-%d", i);
        bus_msg_t *msg = hello(inst, -1);
        /* The DEALER's queue is bounded: the master drains it meanwhile.
         * Time bounds are generous: a loaded machine under ASan planned
         * 1,024 nodes slowly enough that 1,025 hellos took a minute. */
        while (bus_reg_send(r, msg, err) != BASE_OK) {
            assert_true(base_monotonic_ns() - t0 < 300000000000LL);
            assert_int_equal(node_master_tick(m, 1, err), BASE_OK);
        }
        bus_msg_destroy(&msg);
        bus_msg_t *reply = NULL;
        while (bus_reg_recv(r, &reply, 0, err) == 1)
            bus_msg_destroy(&reply);
    }
    /* Until every hello is read, or none was for 30 s (progress, not a
     * deadline: a slow machine is slow, a stuck master is stuck). */
    uint64_t seen = 0;
    int64_t progress = base_monotonic_ns();
    do {
        assert_int_equal(node_master_tick(m, 5, err), BASE_OK);
        bus_msg_t *reply = NULL;
        while (bus_reg_recv(r, &reply, 0, err) == 1)
            bus_msg_destroy(&reply);
        node_master_stats(m, &ms);
        if (ms.hellos != seen) {
            seen = ms.hellos;
            progress = base_monotonic_ns();
        }
    } while (ms.hellos < FLOOD + 1 && base_monotonic_ns() - progress < 30000000000LL);
    assert_int_equal(ms.hellos, FLOOD + 1);
    /* The table holds NODE_MAX_NODES; the rest are refused as a full table. */
    size_t up, known;
    node_master_counts(m, &up, &known);
    assert_int_equal(known, NODE_MAX_NODES);
    assert_int_equal(ms.table_full, FLOOD + 2 - NODE_MAX_NODES);
    /* One plan a tick at most, a tick reading up to 256 hellos: 8 ticks
     * with hellos at the very least, more as the flood trickles in (and no
     * more than one a REPLAN_GAP_NS, 100 ms).
     * Before, one plan a hello that joined: about a thousand. */
    assert_true(ms.plans >= 2);
    assert_true(ms.plans <= 400);
    assert_int_equal((uint64_t)c.plans, ms.plans);
    bus_reg_destroy(&r);
    node_master_destroy(&m);
    hub_dir_remove(dir);
}

/*
 * What the master does with edge fits that it cannot take as they come: a
 * window far ahead of its solve (a node whose clock is seconds off) is
 * refused and counted, and does not take the room of the windows about to
 * be solved; the same edge fitted from its other end replaces the first
 * fit (both would make a false loop); an edge to a node nobody registered
 * is refused as bad.
 */
static void test_master_edge_fits(void **state)
{
    char dir[] = "/tmp/dpnode-test-XXXXXX", ep[128];
    hub_dir(dir, ep, sizeof ep);
    int64_t shift = 0; /* moves the master's probe clock */
    struct node_master_cfg mc = test_master_cfg(ep, 60000000000LL);
    mc.k = 2;
    mc.probe_now = m_now_shifted;
    mc.ctx = &shift;
    const int64_t w = mc.window_ns;
    char err[BASE_ERRLEN];
    node_master_t *m = node_master_new(&mc, err);
    assert_non_null(m);
    struct bus_reg_opts ro = {.endpoint = ep, .node = BUS_NODE_NONE};
    bus_reg_t *r = bus_reg_new(&ro, err);
    assert_non_null(r);
    assert_int_equal(join(m, r, "a1", 1), 1);
    assert_int_equal(join(m, r, "a2", 2), 2);
    bus_pub_t *pub[3] = {NULL};
    for (int i = 1; i <= 2; i++) {
        struct bus_pub_opts po = {.endpoint = bus_hub_endpoint(node_master_hub(m), BUS_HUB_PUB),
                                  .node = i};
        pub[i] = bus_pub_new(&po, err);
        assert_non_null(pub[i]);
        for (int j = 0; j < 400 && !bus_pub_subscribed(pub[i], BUS_K_EDGE_FIT); j++)
            assert_int_equal(node_master_tick(m, 5, err), BASE_OK);
        assert_true(bus_pub_subscribed(pub[i], BUS_K_EDGE_FIT));
    }
    int64_t k = node_window_of(base_realtime_ns(), w);
    /* Twenty windows ahead, from node 1, for every one of 12 windows: refused. */
    for (int j = 0; j < 12; j++)
        send_edge_fit(pub[1], 1, 2, k + 20 + j, w);
    AWAIT_STAT(m, edge_fits_ahead, 12);
    /* A window about to be solved, its edge from both ends: one fit of it stays. */
    send_edge_fit(pub[1], 1, 2, k + 2, w);
    AWAIT_STAT(m, edge_fits, 1);
    send_edge_fit(pub[2], 2, 1, k + 2, w);
    AWAIT_STAT(m, edge_fits_replaced, 1);
    /* An edge to nobody. */
    send_edge_fit(pub[1], 1, 99, k + 2, w);
    AWAIT_STAT(m, edge_fits_unknown, 1);
    struct node_master_stats ms;
    node_master_stats(m, &ms);
    assert_int_equal(ms.edge_fits, 1);
    assert_int_equal(ms.edge_fits_bad, 0);
    assert_int_equal(ms.edge_fits_dropped, 0);
    /* Window k + 2 is solved with its edge (the far-ahead ones took no room). */
    uint64_t solves = ms.solves;
    int64_t t0 = base_monotonic_ns();
    do {
        assert_int_equal(node_master_tick(m, 10, err), BASE_OK);
        node_master_stats(m, &ms);
    } while (ms.solves == solves && base_monotonic_ns() - t0 < 10000000000LL);
    assert_int_equal(ms.solves, solves + 1);
    assert_int_equal(ms.solve_errors, 0);
    /*
     * The master stalls for 20 windows (its clock jumps; nothing ticks):
     * the first fit it then reads, of the window that just closed, is not
     * taken for one far ahead of where it stopped solving.
     */
    /*
     * Landed a twentieth into a window, so that the window that just closed
     * stays open for fits for most of a second (its deadline is 0.75 w after
     * its end): where the stall ended instead decides whether it is solved
     * before the fit arrives, and on a loaded host it was.
     */
    int64_t at = base_realtime_ns() + shift + 20 * w;
    shift += 20 * w + (w - at % w) + w / 20;
    k = node_window_of(base_realtime_ns() + shift, w);
    send_edge_fit(pub[1], 1, 2, k - 1, w);
    AWAIT_STAT(m, edge_fits, 2);
    node_master_stats(m, &ms);
    assert_int_equal(ms.edge_fits_ahead, 12);
    for (int i = 1; i <= 2; i++)
        bus_pub_destroy(&pub[i]);
    bus_reg_destroy(&r);
    node_master_destroy(&m);
    hub_dir_remove(dir);
}

/*
 * A full node table refuses a hello that asks for an id it does not hold
 * (counted), as it refuses one that asks for none: the table does not grow
 * past NODE_MAX_NODES.  Down nodes fill it here (silent for 3 heartbeats).
 */
/*
 * A table full of rows, most of them down (agents restarted without
 * --node-id, each on a new instance): an agent of a host with a down row
 * takes that row, and one of a new host the row down the longest, where
 * both used to be refused until the down rows were forgotten (ten
 * minutes), locking half a restarted cluster out.
 */
static void test_master_table_full(void **state)
{
    char dir[] = "/tmp/dpnode-test-XXXXXX", ep[128];
    hub_dir(dir, ep, sizeof ep);
    /* Heartbeats of 200 ms: down rows fill the table in under a second. */
    struct node_master_cfg mc = test_master_cfg(ep, 200000000);
    mc.k = 2;
    char err[BASE_ERRLEN];
    node_master_t *m = node_master_new(&mc, err);
    assert_non_null(m);
    struct bus_reg_opts ro = {.endpoint = ep, .node = BUS_NODE_NONE};
    bus_reg_t *r = bus_reg_new(&ro, err);
    assert_non_null(r);
    char inst[32], host[32];
    for (int i = 1; i < NODE_MAX_NODES; i++) {
        snprintf(inst, sizeof inst, "a%d", i);
        snprintf(host, sizeof host, "h%d", i);
        assert_int_equal(join_as(m, r, inst, host, -1), i);
    }
    size_t up, known;
    node_master_counts(m, &up, &known);
    assert_int_equal(known, NODE_MAX_NODES);
    int64_t t0 = base_monotonic_ns();
    do {
        assert_int_equal(node_master_tick(m, 10, err), BASE_OK);
        node_master_counts(m, &up, &known);
    } while (up > 1 && base_monotonic_ns() - t0 < 10000000000LL);
    assert_int_equal(up, 1);
    /* h5's agent, restarted: its row. */
    assert_int_equal(join_as(m, r, "a5-again", "h5", -1), 5);
    /* A host never seen: the row down the longest. */
    int64_t id = join_as(m, r, "new1", "newhost", -1);
    assert_true(id >= 1 && id < NODE_MAX_NODES && id != 5);
    struct node_master_stats ms;
    node_master_stats(m, &ms);
    assert_int_equal(ms.table_full, 0);
    node_master_counts(m, &up, &known);
    assert_int_equal(known, NODE_MAX_NODES);
    /* The master and the last to join; a5-again too unless a loaded machine
     * took more than 3 heartbeats between the two joins (it has: 0.75 s). */
    assert_true(up == 2 || up == 3);
    bus_reg_destroy(&r);
    node_master_destroy(&m);
    hub_dir_remove(dir);
}

/* Device metrics come from their reader thread: the first reading is there
 * when new() returns, later ones follow the files, and a missing root is
 * no cards, not an error. */
static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_devices_reader(void **state)
{
    (void)state;
    char root[] = "/tmp/dptop-devices.XXXXXX", path[512];
    assert_non_null(mkdtemp(root));
    snprintf(path, sizeof path, "%s/card0", root);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/card0/device", root);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof path, "%s/card0/device/gpu_busy_percent", root);
    write_text(path, "37\n");
    char err[BASE_ERRLEN];
    struct node_devices_cfg cfg = {.sysfs_root = root, .period_ns = 60000000000LL};
    node_devices_t *d = node_devices_new(&cfg, err);
    assert_non_null(d);
    gpu_metrics_t m[4];
    base_decstats_t dec;
    bool fresh = false;
    assert_int_equal(node_devices_get(d, m, 4, &dec, &fresh), 1);
    assert_true(fresh);
    assert_int_equal(m[0].busy_pct, 37);
    assert_true(m[0].valid & GPU_MET_BUSY);
    /* A minute apart, then the master's 10 ms: the next reading comes at once. */
    node_devices_set_period(d, 10000000);
    write_text(path, "81\n");
    bool seen = false;
    for (int i = 0; i < 200 && !seen; i++) {
        usleep(10000);
        seen = node_devices_get(d, m, 4, NULL, NULL) == 1 && m[0].busy_pct == 81;
    }
    assert_true(seen);
    /* Garbage is counted, the field left out. */
    write_text(path, "lots\n");
    seen = false;
    for (int i = 0; i < 200 && !seen; i++) {
        usleep(10000);
        seen = node_devices_get(d, m, 4, &dec, NULL) == 1 && !(m[0].valid & GPU_MET_BUSY) &&
               base_decstats_errors(&dec) > 0;
    }
    assert_true(seen);
    node_devices_destroy(&d);
    assert_null(d);
    node_devices_destroy(&d);
    unlink(path);
    snprintf(path, sizeof path, "%s/card0/device", root);
    rmdir(path);
    snprintf(path, sizeof path, "%s/card0", root);
    rmdir(path);
    rmdir(root);
    cfg.sysfs_root = "/nonexistent/dptop";
    d = node_devices_new(&cfg, err);
    assert_non_null(d);
    assert_int_equal(node_devices_get(d, m, 4, NULL, &fresh), 0);
    assert_true(fresh); /* no cards here, and that is a reading */
    node_devices_destroy(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_siphash_vectors),
        cmocka_unit_test(test_codec_roundtrip),
        cmocka_unit_test(test_codec_malformed),
        cmocka_unit_test(test_parse_addr),
        cmocka_unit_test(test_probers_loopback),
        cmocka_unit_test(test_user_timestamps_flagged),
        cmocka_unit_test(test_garbage_and_forgeries),
        cmocka_unit_test(test_probe_seq_far_ahead),
        cmocka_unit_test(test_graph_plan),
        cmocka_unit_test(test_prober_loss_and_duplicates),
        cmocka_unit_test(test_window_fit),
        cmocka_unit_test(test_window_bounds),
        cmocka_unit_test(test_plan_json),
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_prober_round_order),
        cmocka_unit_test(test_prober_counts_and_timing),
        cmocka_unit_test(test_master_registration),
        cmocka_unit_test(test_master_forged_bye),
        cmocka_unit_test(test_master_hello_flood),
        cmocka_unit_test(test_master_table_full),
        cmocka_unit_test(test_master_edge_fits),
        cmocka_unit_test(test_master_relays),
        cmocka_unit_test(test_devices_reader),
    };
    return cmocka_run_group_tests_name("node", tests, NULL, NULL);
}
