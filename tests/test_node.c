/* Unit tests for node/: probe packet codec, SipHash, two probers on loopback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    for (size_t i = 0; i < n; i++) {
        if (s[i].rx[0] == NODE_TS_NONE || s[i].rx[1] == NODE_TS_NONE)
            continue;
        int64_t d0 = s[i].rx[0] - s[i].tx[0];
        int64_t gap_tx = s[i].tx[1] - s[i].tx[0], gap_rx = s[i].rx[1] - s[i].rx[0];
        assert_true(gap_tx > 0);
        if (llabs(gap_rx - gap_tx) < 50000)
            pure++;
        assert_int_equal(s[i].flags, 0);
        if (s[i].src == 1 && s[i].dst == 2) {
            fwd++;
            /* a -> b: one-way delay plus b's 5 ms lead; loopback delay well under 5 ms. */
            assert_true(d0 > 5000000 - 1000 && d0 < 10000000);
        } else {
            assert_true(s[i].src == 2 && s[i].dst == 1);
            rev++;
            assert_true(d0 < -5000000 + 5000000 && d0 > -5000000 - 1000);
        }
    }
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
        if (after.garbage >= before.garbage + 2 && after.forged >= before.forged + 2 &&
            after.unknown >= before.unknown + 1)
            break;
    }
    assert_int_equal(after.garbage, before.garbage + 2);
    assert_int_equal(after.forged, before.forged + 2);
    assert_int_equal(after.unknown, before.unknown + 1);
    assert_true(base_decstats_errors(&after.dec) >= 3);
    /* Probing goes on. */
    assert_true(node_prober_drain(b, s, 2048) > 0 || after.samples_in > before.samples_in);
    node_prober_destroy(&a);
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
        cmocka_unit_test(test_graph_plan),
    };
    return cmocka_run_group_tests_name("node", tests, NULL, NULL);
}
