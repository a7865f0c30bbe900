/*
 * Coded UDP probes with kernel timestamps.
 *
 * One thread owns one UDP socket and probes every peer: a pair of packets
 * `spacing` apart every `cadence` (randomised).  The kernel stamps both
 * transmit (SO_TIMESTAMPING, read back from the error queue and matched by
 * SOF_TIMESTAMPING_OPT_ID) and receive (SCM_TIMESTAMPING) times; when it
 * cannot, user-space readings are used and every sample says so in its
 * flags.  Every reading goes through the node's clock function, which is
 * where a simulated clock distorts it.
 *
 * A sample of direction peer -> self completes when a follow-up carrying
 * the peer's transmit times for that sequence number arrives.  Completed
 * samples are echoed back to the peer, so each side ends up with both
 * directions of the edge.  Completed samples go to a bounded queue that the
 * agent drains; when it is full, samples are dropped and counted.
 */
#include "node/node_int.h"

#include <arpa/inet.h>
#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define OUT_RING   8    /* pairs we sent, per peer, kept for follow-ups and echo checks */
#define IN_RING    32   /* pairs we receive, per peer, waiting for their follow-up */
#define ECHO_RING  3    /* latest completed incoming samples, echoed back */
#define SENT_RING  1024 /* OPT_ID counter -> packet, for transmit timestamps */
#define MAX_PEERS  256
#define RESYNC_GAP 100000 /* a sequence jump this large is a restarted peer, not loss */
/*
 * Without a MAC anyone who can send from a peer's address can write any
 * sequence number, and the replay window follows the highest one seen: one
 * forged far-ahead number used to turn every later real probe of that peer
 * into a "replay", for good.  So a packet may move the window ahead by at
 * most SEQ_AHEAD pairs (half the window: the real stream stays inside it);
 * one further ahead is held, and taken as the peer's new sequence (a
 * restart) only once SEQ_CONFIRM such packets came close together while
 * the old sequence was silent for SEQ_QUIET_NS: a restarted peer's old
 * sequence stops, a forger cannot silence the real one.
 */
#define SEQ_AHEAD    (IN_RING / 2)
#define SEQ_CONFIRM  4
#define SEQ_QUIET_NS 500000000LL
#define REFUSED_SAY  16 /* refusals in a row from one peer before they are logged */

struct out_pair {
    uint64_t seq;
    int64_t tx[2];
    bool kernel[2];
};

struct in_pair {
    uint64_t seq;
    int64_t rx[2];
    bool have[2];
    bool user_rx;
    bool done;
};

struct peer_state {
    struct node_peer peer;
    uint64_t next_seq; /* of the next pair to send */
    int next_index;    /* 0: the next packet starts a pair */
    struct out_pair out[OUT_RING];
    struct in_pair in[IN_RING];
    uint64_t in_max_seq;  /* highest incoming sequence number seen */
    uint64_t in_done_max; /* highest incoming sequence number completed */
    int64_t in_last_mono; /* when a packet last moved or fell within the window */
    uint64_t ahead_seq;   /* the held far-ahead sequence (SEQ_AHEAD) */
    int ahead_n;          /* packets held close to ahead_seq */
    uint64_t refused_run; /* packets refused in a row as replays */
    struct node_probe_sample echo[ECHO_RING];
    int n_echo, echo_pos;
    uint64_t echoed_max;  /* highest outgoing sample learned from an echo */
    uint64_t echoed_bits; /* bit i: echoed_max - i already seen */
    struct node_peer_count count;
};

struct sent_slot {
    uint32_t peer_id;
    uint64_t seq;
    int index;
    bool used;
};

struct node_prober {
    struct node_prober_cfg cfg;
    uint8_t key[NODE_PROBE_KEY_SIZE];
    bool has_key;
    int fd;
    int family;
    bool kernel_tx, kernel_rx;
    char address[96];
    uint16_t port;
    uint32_t send_counter; /* mirrors the kernel's OPT_ID counter */
    struct sent_slot sent[SENT_RING];
    uint64_t rng;

    pthread_t thread;
    bool started;
    int wake[2]; /* pipe: wakes the thread for peer changes and shutdown */

    pthread_mutex_t lock; /* protects everything below */
    bool stop;
    struct peer_state *peers;
    size_t npeers;
    size_t round_first; /* the peer a round starts with; moves on every round */
    struct node_peer *pending;
    size_t npending;
    bool has_pending;
    struct node_probe_sample *queue;
    size_t qhead, qlen;
    struct node_prober_stats stats;
};

/* ---- wire codec ------------------------------------------------------ */

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
    do {                                                                                           \
        v0 += v1;                                                                                  \
        v1 = ROTL(v1, 13);                                                                         \
        v1 ^= v0;                                                                                  \
        v0 = ROTL(v0, 32);                                                                         \
        v2 += v3;                                                                                  \
        v3 = ROTL(v3, 16);                                                                         \
        v3 ^= v2;                                                                                  \
        v0 += v3;                                                                                  \
        v3 = ROTL(v3, 21);                                                                         \
        v3 ^= v0;                                                                                  \
        v2 += v1;                                                                                  \
        v1 = ROTL(v1, 17);                                                                         \
        v1 ^= v2;                                                                                  \
        v2 = ROTL(v2, 32);                                                                         \
    } while (0)

uint64_t node_siphash(const uint8_t key[NODE_PROBE_KEY_SIZE], const uint8_t *data, size_t len)
{
    uint64_t k0 = base_le_get64(key), k1 = base_le_get64(key + 8);
    uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
    size_t full = len & ~(size_t)7;
    for (size_t i = 0; i < full; i += 8) {
        uint64_t m = base_le_get64(data + i);
        v3 ^= m;
        SIPROUND;
        SIPROUND;
        v0 ^= m;
    }
    uint64_t b = (uint64_t)len << 56;
    for (size_t i = 0; i < (len & 7); i++)
        b |= (uint64_t)data[full + i] << (8 * i);
    v3 ^= b;
    SIPROUND;
    SIPROUND;
    v0 ^= b;
    v2 ^= 0xff;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

size_t node_probe_encode(const struct node_probe_pkt *pkt, const uint8_t *key, uint8_t *buf)
{
    uint8_t n_echo = pkt->n_echo > NODE_PROBE_MAX_ECHO ? NODE_PROBE_MAX_ECHO : pkt->n_echo;
    memset(buf, 0, NODE_PROBE_MAX_SIZE);
    base_le_put32(buf, NODE_PROBE_MAGIC);
    buf[4] = NODE_PROBE_VERSION;
    buf[5] = pkt->index;
    buf[6] = key ? 1 : 0;
    buf[7] = n_echo;
    base_le_put32(buf + 8, pkt->src);
    base_le_put32(buf + 12, pkt->dst);
    base_le_put64(buf + 16, pkt->seq);
    base_le_put64(buf + 24, (uint64_t)pkt->tx_user);
    uint8_t *p = buf + NODE_PROBE_HDR;
    for (int i = 0; i < NODE_PROBE_FU; i++, p += NODE_PROBE_FU_SIZE) {
        base_le_put64(p, pkt->fu[i].seq);
        base_le_put64(p + 8, (uint64_t)pkt->fu[i].tx[0]);
        base_le_put64(p + 16, (uint64_t)pkt->fu[i].tx[1]);
        base_le_put32(p + 24, pkt->fu[i].flags);
    }
    for (int i = 0; i < n_echo; i++, p += NODE_PROBE_ECHO_SZ) {
        const struct node_probe_sample *s = &pkt->echo[i];
        base_le_put64(p, s->seq);
        base_le_put64(p + 8, (uint64_t)s->tx[0]);
        base_le_put64(p + 16, (uint64_t)s->tx[1]);
        base_le_put64(p + 24, (uint64_t)s->rx[0]);
        base_le_put64(p + 32, (uint64_t)s->rx[1]);
        base_le_put32(p + 40, s->flags);
    }
    if (key) {
        base_le_put64(p, node_siphash(key, buf, (size_t)(p - buf)));
        p += NODE_PROBE_MAC_SIZE;
    }
    return (size_t)(p - buf);
}

enum base_dec node_probe_decode(const uint8_t *buf, size_t len, const uint8_t *key,
                                struct node_probe_pkt *out, char *err)
{
    memset(out, 0, sizeof *out);
    if (len < 8) {
        base_err(err, "probe datagram of %zu bytes is too short", len);
        return BASE_DEC_TRUNCATED;
    }
    if (base_le_get32(buf) != NODE_PROBE_MAGIC) {
        base_err(err, "datagram is not a probe (magic 0x%08x)", base_le_get32(buf));
        return BASE_DEC_BAD_MAGIC;
    }
    if (buf[4] != NODE_PROBE_VERSION) {
        base_err(err, "probe version %u is not %d", buf[4], NODE_PROBE_VERSION);
        return BASE_DEC_BAD_VERSION;
    }
    uint8_t index = buf[5], flags = buf[6], n_echo = buf[7];
    if (index > 1 || (flags & ~1u) || n_echo > NODE_PROBE_MAX_ECHO) {
        base_err(err, "probe header has index %u, flags 0x%x, %u echoes", index, flags, n_echo);
        return BASE_DEC_BAD_VALUE;
    }
    size_t body =
        NODE_PROBE_HDR + NODE_PROBE_FU * NODE_PROBE_FU_SIZE + (size_t)n_echo * NODE_PROBE_ECHO_SZ;
    size_t need = body + ((flags & 1) ? NODE_PROBE_MAC_SIZE : 0);
    if (len < need) {
        base_err(err, "probe of %zu bytes is shorter than its %zu-byte layout", len, need);
        return BASE_DEC_TRUNCATED;
    }
    if (len > need) {
        base_err(err, "probe has %zu bytes after its %zu-byte layout", len - need, need);
        return BASE_DEC_OVERSIZED;
    }
    if (key != NULL) {
        if (!(flags & 1) || base_le_get64(buf + body) != node_siphash(key, buf, body)) {
            base_err(err, "probe MAC missing or wrong");
            return BASE_DEC_BAD_CHECKSUM;
        }
    }
    out->index = index;
    out->n_echo = n_echo;
    out->has_mac = flags & 1;
    out->src = base_le_get32(buf + 8);
    out->dst = base_le_get32(buf + 12);
    out->seq = base_le_get64(buf + 16);
    out->tx_user = (int64_t)base_le_get64(buf + 24);
    if (out->seq == 0) {
        base_err(err, "probe sequence number 0 is reserved");
        return BASE_DEC_BAD_VALUE;
    }
    const uint8_t *p = buf + NODE_PROBE_HDR;
    for (int i = 0; i < NODE_PROBE_FU; i++, p += NODE_PROBE_FU_SIZE) {
        out->fu[i].seq = base_le_get64(p);
        out->fu[i].tx[0] = (int64_t)base_le_get64(p + 8);
        out->fu[i].tx[1] = (int64_t)base_le_get64(p + 16);
        out->fu[i].flags = base_le_get32(p + 24);
        if (out->fu[i].seq != 0 && out->fu[i].seq >= out->seq) {
            base_err(err, "probe follow-up for seq %" PRIu64 " is not older than seq %" PRIu64,
                     out->fu[i].seq, out->seq);
            return BASE_DEC_BAD_VALUE;
        }
    }
    for (int i = 0; i < n_echo; i++, p += NODE_PROBE_ECHO_SZ) {
        struct node_probe_sample *s = &out->echo[i];
        s->src = out->dst;
        s->dst = out->src;
        s->seq = base_le_get64(p);
        s->tx[0] = (int64_t)base_le_get64(p + 8);
        s->tx[1] = (int64_t)base_le_get64(p + 16);
        s->rx[0] = (int64_t)base_le_get64(p + 24);
        s->rx[1] = (int64_t)base_le_get64(p + 32);
        s->flags = base_le_get32(p + 40);
        if (s->seq == 0) {
            base_err(err, "probe echo %d has sequence number 0", i);
            return BASE_DEC_BAD_VALUE;
        }
    }
    return BASE_DEC_OK;
}

int node_parse_addr(const char *text, struct sockaddr_storage *addr, socklen_t *len, char *err)
{
    char host[INET6_ADDRSTRLEN + 2];
    const char *colon;
    const char *h = text;
    size_t hlen;
    memset(addr, 0, sizeof *addr);
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (close == NULL || close[1] != ':')
            return base_err(err, "bad address '%s' (expected [ip6]:port)", text);
        h = text + 1;
        hlen = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(text, ':');
        if (colon == NULL)
            return base_err(err, "bad address '%s' (expected ip:port)", text);
        hlen = (size_t)(colon - text);
    }
    if (hlen == 0 || hlen >= sizeof host)
        return base_err(err, "bad address '%s'", text);
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end != '\0' || port <= 0 || port > 65535)
        return base_err(err, "bad port in address '%s'", text);
    struct sockaddr_in *a4 = (struct sockaddr_in *)addr;
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)addr;
    if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        *len = sizeof *a4;
        return BASE_OK;
    }
    if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *len = sizeof *a6;
        return BASE_OK;
    }
    return base_err(err, "bad IP address in '%s'", text);
}

static bool addr_equal(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family)
        return false;
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
        return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
        return x->sin6_port == y->sin6_port &&
               memcmp(&x->sin6_addr, &y->sin6_addr, sizeof x->sin6_addr) == 0;
    }
    return false;
}

/* ---- set-up ---------------------------------------------------------- */

static int64_t probe_clock(const node_prober_t *self, int64_t real_ns)
{
    return self->cfg.clock ? self->cfg.clock(self->cfg.clock_ctx, real_ns) : real_ns;
}

static uint64_t rng_next(node_prober_t *self)
{
    /* xorshift64*: cheap, and only spreads send times. */
    uint64_t x = self->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    self->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static int64_t next_interval(node_prober_t *self)
{
    double u = (double)(rng_next(self) >> 11) / 9007199254740992.0; /* [0,1) */
    double f = 1.0 + self->cfg.jitter * (2.0 * u - 1.0);
    return (int64_t)((double)self->cfg.cadence_ns * f);
}

static void enable_timestamps(node_prober_t *self)
{
    if (self->cfg.user_timestamps)
        return;
    int flags = SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_RX_SOFTWARE |
                SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_OPT_ID | SOF_TIMESTAMPING_OPT_TSONLY;
    if (setsockopt(self->fd, SOL_SOCKET, SO_TIMESTAMPING, &flags, sizeof flags) == 0) {
        self->kernel_tx = true;
        self->kernel_rx = true;
        return;
    }
    /* Receive stamps alone are still better than user space. */
    int on = 1;
    if (setsockopt(self->fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) == 0)
        self->kernel_rx = true;
}

node_prober_t *node_prober_new(const struct node_prober_cfg *cfg, char *err)
{
    node_prober_t *self = xcalloc(1, sizeof *self);
    self->cfg = *cfg;
    self->fd = -1;
    self->wake[0] = self->wake[1] = -1;
    pthread_mutex_init(&self->lock, NULL);
    if (cfg->key) {
        memcpy(self->key, cfg->key, NODE_PROBE_KEY_SIZE);
        self->has_key = true;
    }
    if (self->cfg.queue_len == 0)
        self->cfg.queue_len = 65536;
    if (self->cfg.cadence_ns <= 0 || self->cfg.spacing_ns <= 0 ||
        self->cfg.spacing_ns >= self->cfg.cadence_ns) {
        base_err(err, "probe spacing must be positive and shorter than the cadence");
        goto err;
    }
    if (self->cfg.jitter < 0 || self->cfg.jitter > 0.5)
        self->cfg.jitter = 0.1;
    self->rng = cfg->seed ? cfg->seed : (uint64_t)base_monotonic_ns() ^ ((uint64_t)getpid() << 32);
    self->queue = xcalloc(self->cfg.queue_len, sizeof *self->queue);

    char portstr[16];
    snprintf(portstr, sizeof portstr, "%u", cfg->port);
    char spec[INET6_ADDRSTRLEN + 24];
    const char *ip = cfg->bind_ip ? cfg->bind_ip : "0.0.0.0";
    snprintf(spec, sizeof spec, strchr(ip, ':') ? "[%s]:%s" : "%s:%s", ip,
             cfg->port ? portstr : "1");
    struct sockaddr_storage addr;
    socklen_t alen;
    if (node_parse_addr(spec, &addr, &alen, err) != BASE_OK)
        goto err;
    if (cfg->port == 0)
        ((struct sockaddr_in *)&addr)->sin_port = 0; /* same offset for sin6_port */
    self->family = addr.ss_family;
    self->fd = socket(self->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (self->fd < 0) {
        base_err(err, "cannot create UDP socket: %s", strerror(errno));
        goto err;
    }
    if (bind(self->fd, (struct sockaddr *)&addr, alen) != 0) {
        /* The spec's port is a placeholder where the system picks one. */
        char shown[INET6_ADDRSTRLEN + 40];
        snprintf(shown, sizeof shown, strchr(ip, ':') ? "[%s]:%s" : "%s:%s", ip,
                 cfg->port ? portstr : "any port");
        base_err(err, "cannot bind the probe socket to %s (bind_ip, probe_port): %s", shown,
                 strerror(errno));
        goto err;
    }
    int rcvbuf = 1 << 20;
    setsockopt(self->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    enable_timestamps(self);

    struct sockaddr_storage bound;
    socklen_t blen = sizeof bound;
    getsockname(self->fd, (struct sockaddr *)&bound, &blen);
    char host[INET6_ADDRSTRLEN];
    if (bound.ss_family == AF_INET6) {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&bound;
        inet_ntop(AF_INET6, &a6->sin6_addr, host, sizeof host);
        self->port = ntohs(a6->sin6_port);
        snprintf(self->address, sizeof self->address, "[%s]:%u", host, self->port);
    } else {
        struct sockaddr_in *a4 = (struct sockaddr_in *)&bound;
        inet_ntop(AF_INET, &a4->sin_addr, host, sizeof host);
        self->port = ntohs(a4->sin_port);
        snprintf(self->address, sizeof self->address, "%s:%u", host, self->port);
    }
    if (pipe2(self->wake, O_NONBLOCK | O_CLOEXEC) != 0) {
        base_err(err, "cannot create wake pipe: %s", strerror(errno));
        goto err;
    }
    return self;
err:
    node_prober_destroy(&self);
    return NULL;
}

void node_prober_destroy(node_prober_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    node_prober_t *self = *self_p;
    if (self->started) {
        pthread_mutex_lock(&self->lock);
        self->stop = true;
        pthread_mutex_unlock(&self->lock);
        if (write(self->wake[1], "x", 1) < 0)
            (void)errno;
        pthread_join(self->thread, NULL);
    }
    if (self->fd >= 0)
        close(self->fd);
    for (int i = 0; i < 2; i++)
        if (self->wake[i] >= 0)
            close(self->wake[i]);
    pthread_mutex_destroy(&self->lock);
    free(self->peers);
    free(self->pending);
    free(self->queue);
    free(self);
    *self_p = NULL;
}

void node_prober_address(const node_prober_t *self, char *buf, size_t len)
{
    assert(self);
    snprintf(buf, len, "%s", self->address);
}

uint16_t node_prober_port(const node_prober_t *self)
{
    assert(self);
    return self->port;
}

bool node_prober_kernel_timestamps(const node_prober_t *self)
{
    assert(self);
    return self->kernel_tx && self->kernel_rx;
}

void node_prober_set_peers(node_prober_t *self, const struct node_peer *peers, size_t n)
{
    assert(self);
    if (n > MAX_PEERS)
        n = MAX_PEERS;
    pthread_mutex_lock(&self->lock);
    free(self->pending);
    self->pending = xcalloc(n ? n : 1, sizeof *peers);
    if (n)
        memcpy(self->pending, peers, n * sizeof *peers);
    self->npending = n;
    self->has_pending = true;
    pthread_mutex_unlock(&self->lock);
    if (write(self->wake[1], "p", 1) < 0)
        (void)errno;
}

void node_prober_set_self(node_prober_t *self, uint32_t id)
{
    assert(self);
    pthread_mutex_lock(&self->lock);
    if (self->cfg.self_id != id) {
        self->cfg.self_id = id;
        /* Peers knew us under the old id: start every exchange afresh. */
        free(self->peers);
        self->peers = NULL;
        self->npeers = 0;
        if (!self->has_pending) {
            free(self->pending);
            self->pending = NULL;
            self->npending = 0;
        }
    }
    pthread_mutex_unlock(&self->lock);
}

int node_prober_set_timing(node_prober_t *self, int64_t cadence_ns, int64_t spacing_ns, char *err)
{
    assert(self);
    if (cadence_ns <= 0 || spacing_ns <= 0 || spacing_ns >= cadence_ns)
        return base_err(err, "probe spacing must be positive and shorter than the cadence");
    pthread_mutex_lock(&self->lock);
    self->cfg.cadence_ns = cadence_ns;
    self->cfg.spacing_ns = spacing_ns;
    pthread_mutex_unlock(&self->lock);
    if (write(self->wake[1], "t", 1) < 0)
        (void)errno;
    return BASE_OK;
}

void node_prober_set_key(node_prober_t *self, const uint8_t key[NODE_PROBE_KEY_SIZE])
{
    assert(self && key);
    pthread_mutex_lock(&self->lock);
    memcpy(self->key, key, NODE_PROBE_KEY_SIZE);
    self->has_key = true;
    pthread_mutex_unlock(&self->lock);
}

bool node_prober_has_key(node_prober_t *self)
{
    assert(self);
    pthread_mutex_lock(&self->lock);
    bool has = self->has_key;
    pthread_mutex_unlock(&self->lock);
    return has;
}

size_t node_prober_peer_counts(node_prober_t *self, struct node_peer_count *out, size_t max)
{
    assert(self);
    pthread_mutex_lock(&self->lock);
    size_t n = 0;
    for (size_t i = 0; i < self->npeers && n < max; i++)
        out[n++] = self->peers[i].count;
    pthread_mutex_unlock(&self->lock);
    return n;
}

size_t node_prober_drain(node_prober_t *self, struct node_probe_sample *out, size_t max)
{
    assert(self);
    pthread_mutex_lock(&self->lock);
    size_t n = 0;
    while (n < max && self->qlen > 0) {
        out[n++] = self->queue[self->qhead];
        self->qhead = (self->qhead + 1) % self->cfg.queue_len;
        self->qlen--;
    }
    pthread_mutex_unlock(&self->lock);
    return n;
}

void node_prober_stats(node_prober_t *self, struct node_prober_stats *out)
{
    assert(self);
    pthread_mutex_lock(&self->lock);
    *out = self->stats;
    pthread_mutex_unlock(&self->lock);
}

/* ---- the probing thread (holds the lock except while sleeping) ------- */

static void queue_sample(node_prober_t *self, const struct node_probe_sample *s)
{
    if (self->qlen == self->cfg.queue_len) {
        self->stats.queue_drops++;
        return;
    }
    self->queue[(self->qhead + self->qlen) % self->cfg.queue_len] = *s;
    self->qlen++;
}

static struct peer_state *find_peer(node_prober_t *self, uint32_t id)
{
    for (size_t i = 0; i < self->npeers; i++)
        if (self->peers[i].peer.id == id)
            return &self->peers[i];
    return NULL;
}

static void apply_pending(node_prober_t *self)
{
    struct peer_state *next = xcalloc(self->npending ? self->npending : 1, sizeof *next);
    for (size_t i = 0; i < self->npending; i++) {
        struct peer_state *old = find_peer(self, self->pending[i].id);
        if (old && addr_equal(&old->peer.addr, &self->pending[i].addr)) {
            next[i] = *old;
            continue;
        }
        next[i].peer = self->pending[i];
        /* Sequence numbers start from the time in us, so that a restarted
         * agent's probes are newer than anything its peers remember of it
         * instead of looking like replays. */
        int64_t us = base_realtime_ns() / 1000;
        next[i].next_seq = us > 0 ? (uint64_t)us : 1;
        next[i].count.id = self->pending[i].id;
    }
    free(self->peers);
    self->peers = next;
    self->npeers = self->npending;
    self->has_pending = false;
}

static struct out_pair *out_slot(struct peer_state *ps, uint64_t seq)
{
    struct out_pair *o = &ps->out[seq % OUT_RING];
    return o->seq == seq ? o : NULL;
}

static void send_packet(node_prober_t *self, struct peer_state *ps)
{
    struct node_probe_pkt pkt = {0};
    uint64_t seq = ps->next_seq;
    int index = ps->next_index;
    pkt.index = (uint8_t)index;
    pkt.src = self->cfg.self_id;
    pkt.dst = ps->peer.id;
    pkt.seq = seq;
    /* Follow-ups: transmit times of the two previous pairs. */
    for (int i = 0; i < NODE_PROBE_FU; i++) {
        if (seq <= (uint64_t)(i + 1))
            break;
        struct out_pair *o = out_slot(ps, seq - 1 - (uint64_t)i);
        if (o == NULL)
            continue;
        pkt.fu[i].seq = o->seq;
        pkt.fu[i].tx[0] = o->tx[0];
        pkt.fu[i].tx[1] = o->tx[1];
        pkt.fu[i].flags = (o->kernel[0] && o->kernel[1]) ? 0 : NODE_SAMPLE_USER_TX;
    }
    for (int i = 0; i < ps->n_echo; i++)
        pkt.echo[i] = ps->echo[(ps->echo_pos + ECHO_RING - 1 - i) % ECHO_RING];
    pkt.n_echo = (uint8_t)ps->n_echo;

    int64_t real = base_realtime_ns();
    pkt.tx_user = probe_clock(self, real);
    if (index == 0) {
        struct out_pair *o = &ps->out[seq % OUT_RING];
        memset(o, 0, sizeof *o);
        o->seq = seq;
    }
    struct out_pair *o = &ps->out[seq % OUT_RING];
    o->tx[index] = pkt.tx_user;
    o->kernel[index] = false;

    uint8_t buf[NODE_PROBE_MAX_SIZE];
    size_t len = node_probe_encode(&pkt, self->has_key ? self->key : NULL, buf);
    ssize_t n = sendto(self->fd, buf, len, 0, (struct sockaddr *)&ps->peer.addr, ps->peer.addrlen);
    if (n == (ssize_t)len) {
        self->stats.packets_sent++;
        if (self->kernel_tx) {
            struct sent_slot *s = &self->sent[self->send_counter % SENT_RING];
            s->peer_id = ps->peer.id;
            s->seq = seq;
            s->index = index;
            s->used = true;
            self->send_counter++;
        } else {
            self->stats.tx_user_ts++;
        }
    } else {
        self->stats.send_errors++;
    }
    if (index == 0) {
        ps->next_index = 1;
    } else {
        self->stats.pairs_sent++;
        ps->count.pairs_sent++;
        ps->next_index = 0;
        ps->next_seq++;
    }
}

static void read_errqueue(node_prober_t *self)
{
    for (;;) {
        char data[64], control[512];
        struct iovec iov = {data, sizeof data};
        struct msghdr msg = {.msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = control,
                             .msg_controllen = sizeof control};
        if (recvmsg(self->fd, &msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
            return;
        int64_t ts = 0;
        bool have_ts = false, have_id = false;
        uint32_t id = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPING) {
                struct scm_timestamping tss;
                memcpy(&tss, CMSG_DATA(c), sizeof tss);
                ts = (int64_t)tss.ts[0].tv_sec * 1000000000LL + tss.ts[0].tv_nsec;
                have_ts = ts != 0;
            } else if ((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
                       (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR)) {
                struct sock_extended_err ee;
                memcpy(&ee, CMSG_DATA(c), sizeof ee);
                if (ee.ee_origin == SO_EE_ORIGIN_TIMESTAMPING) {
                    id = ee.ee_data;
                    have_id = true;
                }
            }
        }
        if (!have_ts || !have_id)
            continue;
        struct sent_slot *s = &self->sent[id % SENT_RING];
        if (!s->used)
            continue;
        s->used = false;
        struct peer_state *ps = find_peer(self, s->peer_id);
        struct out_pair *o = ps ? out_slot(ps, s->seq) : NULL;
        if (o == NULL)
            continue;
        o->tx[s->index] = probe_clock(self, ts);
        o->kernel[s->index] = true;
        self->stats.tx_kernel_ts++;
    }
}

static void complete_incoming(node_prober_t *self, struct peer_state *ps,
                              const struct node_probe_fu *fu)
{
    if (fu->seq == 0 || fu->seq <= ps->in_done_max)
        return;
    struct in_pair *in = &ps->in[fu->seq % IN_RING];
    struct node_probe_sample s = {.src = ps->peer.id, .dst = self->cfg.self_id, .seq = fu->seq};
    s.tx[0] = fu->tx[0];
    s.tx[1] = fu->tx[1];
    s.flags = fu->flags & NODE_SAMPLE_USER_TX;
    if (in->seq == fu->seq) {
        if (in->done)
            return;
        in->done = true;
        for (int i = 0; i < 2; i++) {
            s.rx[i] = in->have[i] ? in->rx[i] : NODE_TS_NONE;
            if (!in->have[i])
                self->stats.lost_packets++;
        }
        if (in->user_rx)
            s.flags |= NODE_SAMPLE_USER_RX;
    } else {
        s.rx[0] = s.rx[1] = NODE_TS_NONE;
        self->stats.lost_packets += 2;
    }
    /* Pairs between the last completed one and this one never got a
     * follow-up; a jump beyond any plausible loss is the peer restarting. */
    if (ps->in_done_max != 0 && fu->seq > ps->in_done_max + NODE_PROBE_FU &&
        fu->seq - ps->in_done_max < RESYNC_GAP)
        self->stats.lost_pairs += fu->seq - ps->in_done_max - NODE_PROBE_FU;
    if (fu->seq > ps->in_done_max)
        ps->in_done_max = fu->seq;
    self->stats.samples_in++;
    ps->count.samples_in++;
    queue_sample(self, &s);
    ps->echo[ps->echo_pos] = s;
    ps->echo_pos = (ps->echo_pos + 1) % ECHO_RING;
    if (ps->n_echo < ECHO_RING)
        ps->n_echo++;
}

/* A sample of our own direction, as the peer saw it. */
static void accept_echo(node_prober_t *self, struct peer_state *ps,
                        const struct node_probe_sample *e)
{
    if (e->seq >= ps->next_seq + (ps->next_index ? 1 : 0)) {
        self->stats.forged++; /* an echo of a probe we never sent */
        return;
    }
    struct out_pair *o = out_slot(ps, e->seq);
    if (o && (o->tx[0] != e->tx[0] || o->tx[1] != e->tx[1])) {
        self->stats.forged++; /* not the transmit times we sent */
        return;
    }
    if (e->seq + 64 <= ps->echoed_max)
        return; /* too old to tell; already delivered or lost */
    if (e->seq > ps->echoed_max) {
        uint64_t shift = e->seq - ps->echoed_max;
        ps->echoed_bits = shift >= 64 ? 0 : ps->echoed_bits << shift;
        ps->echoed_bits |= 1;
        ps->echoed_max = e->seq;
    } else {
        uint64_t bit = 1ULL << (ps->echoed_max - e->seq);
        if (ps->echoed_bits & bit)
            return; /* echoes repeat by design */
        ps->echoed_bits |= bit;
    }
    self->stats.samples_out++;
    ps->count.samples_out++;
    queue_sample(self, e);
}

static void refuse_replay(node_prober_t *self, struct peer_state *ps)
{
    self->stats.replayed++;
    if (++ps->refused_run == REFUSED_SAY)
        base_log(BASE_LOG_WARN, "probe",
                 "node %u: its last %d probes were refused as replays (sequence numbers at or "
                 "below %" PRIu64 " already seen): forged probes, or a peer that went back",
                 ps->peer.id, REFUSED_SAY, ps->in_max_seq);
}

/* Whether a packet's sequence number may be taken (see SEQ_AHEAD). */
static bool accept_seq(node_prober_t *self, struct peer_state *ps, uint64_t seq)
{
    int64_t now = base_monotonic_ns();
    if (ps->in_max_seq != 0 && seq > ps->in_max_seq + SEQ_AHEAD) {
        if (ps->ahead_n > 0 && seq + IN_RING > ps->ahead_seq && seq < ps->ahead_seq + IN_RING) {
            ps->ahead_n++;
            if (seq > ps->ahead_seq)
                ps->ahead_seq = seq;
        } else {
            ps->ahead_seq = seq;
            ps->ahead_n = 1;
        }
        if (ps->ahead_n < SEQ_CONFIRM || now - ps->in_last_mono < SEQ_QUIET_NS) {
            self->stats.held++;
            return false;
        }
        base_log(BASE_LOG_INFO, "probe",
                 "node %u: its probe sequence moved from %" PRIu64 " to %" PRIu64
                 " after %.1f s of silence: taken as its restart",
                 ps->peer.id, ps->in_max_seq, seq, (double)(now - ps->in_last_mono) / 1e9);
        ps->ahead_n = 0;
    } else if (seq + IN_RING <= ps->in_max_seq) {
        refuse_replay(self, ps);
        return false;
    } else {
        ps->ahead_n = 0; /* the sequence the window follows is alive */
    }
    ps->in_last_mono = now;
    return true;
}

static void handle_packet(node_prober_t *self, const uint8_t *buf, size_t len,
                          const struct sockaddr_storage *from, int64_t rx, bool kernel_rx)
{
    struct node_probe_pkt pkt;
    enum base_dec rc = node_probe_decode(buf, len, self->has_key ? self->key : NULL, &pkt, NULL);
    base_decstats_add(&self->stats.dec, rc);
    if (rc == BASE_DEC_BAD_CHECKSUM) {
        self->stats.forged++;
        return;
    }
    if (rc != BASE_DEC_OK) {
        self->stats.garbage++;
        return;
    }
    struct peer_state *ps = find_peer(self, pkt.src);
    if (ps == NULL) {
        self->stats.unknown++;
        return;
    }
    if (pkt.dst != self->cfg.self_id || !addr_equal(from, &ps->peer.addr)) {
        self->stats.misaddressed++;
        return;
    }
    if (!accept_seq(self, ps, pkt.seq))
        return;
    struct in_pair *in = &ps->in[pkt.seq % IN_RING];
    if (in->seq != pkt.seq) {
        memset(in, 0, sizeof *in);
        in->seq = pkt.seq;
    }
    if (in->have[pkt.index] || in->done) {
        refuse_replay(self, ps);
        return;
    }
    ps->refused_run = 0;
    in->have[pkt.index] = true;
    for (size_t i = 0; i < self->cfg.n_sim_delay; i++)
        if (self->cfg.sim_delay[i].from == pkt.src)
            rx += self->cfg.sim_delay[i].ns;
    in->rx[pkt.index] = rx;
    in->user_rx |= !kernel_rx;
    if (pkt.seq > ps->in_max_seq)
        ps->in_max_seq = pkt.seq;
    /* Oldest follow-up first so samples leave in order. */
    for (int i = NODE_PROBE_FU - 1; i >= 0; i--)
        complete_incoming(self, ps, &pkt.fu[i]);
    for (int i = 0; i < pkt.n_echo; i++)
        accept_echo(self, ps, &pkt.echo[i]);
}

static void read_packets(node_prober_t *self)
{
    for (int budget = 0; budget < 4096; budget++) {
        uint8_t buf[NODE_PROBE_MAX_SIZE + 64];
        char control[256];
        struct sockaddr_storage from;
        struct iovec iov = {buf, sizeof buf};
        struct msghdr msg = {.msg_name = &from,
                             .msg_namelen = sizeof from,
                             .msg_iov = &iov,
                             .msg_iovlen = 1,
                             .msg_control = control,
                             .msg_controllen = sizeof control};
        ssize_t n = recvmsg(self->fd, &msg, MSG_DONTWAIT);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        int64_t ts = 0;
        for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level != SOL_SOCKET)
                continue;
            if (c->cmsg_type == SCM_TIMESTAMPING) {
                struct scm_timestamping tss;
                memcpy(&tss, CMSG_DATA(c), sizeof tss);
                ts = (int64_t)tss.ts[0].tv_sec * 1000000000LL + tss.ts[0].tv_nsec;
            } else if (c->cmsg_type == SCM_TIMESTAMPNS) {
                struct timespec t;
                memcpy(&t, CMSG_DATA(c), sizeof t);
                ts = (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
            }
        }
        bool kernel = ts != 0;
        if (kernel)
            self->stats.rx_kernel_ts++;
        else {
            ts = base_realtime_ns();
            self->stats.rx_user_ts++;
        }
        self->stats.packets_received++;
        if (msg.msg_flags & MSG_TRUNC) {
            self->stats.garbage++;
            base_decstats_add(&self->stats.dec, BASE_DEC_OVERSIZED);
            continue;
        }
        handle_packet(self, buf, (size_t)n, &from, probe_clock(self, ts), kernel);
    }
}

/*
 * Probing runs in rounds: every cadence (randomised per round so that the
 * agents' rounds, and so the edges, never phase-lock) the first packet of a
 * pair goes to every peer, and `spacing` later the second.  A timer wake-up
 * costs far more CPU than a send on virtualised hosts (tens of us against a
 * few), so two wake-ups per round whatever the number of peers is what keeps
 * an agent under its CPU budget.  Receive times are stamped by the kernel on
 * arrival, so incoming packets wait in the socket until the next wake-up;
 * transmit stamps are ready when sendto returns on the usual software path.
 *
 * The round starts one peer later each time.  The first send after a
 * wake-up runs cold, and on a software-stamped path the time it loses
 * falls between the two stamps: with a fixed order, every node's first
 * peer saw it in every pair.  On loopback that flow's fastest packets took
 * 420-450 ns where the others took 250-290, a steady asymmetry that biased
 * one edge per node by about -120 ns, which the loops then had to set aside
 * as detours.  Moved round by round, the cold send lands on each flow in
 * turn and looks like queuing, which the fits already see past.
 */
static void send_round(node_prober_t *self, int index)
{
    size_t n = self->npeers;
    for (size_t k = 0; k < n; k++) {
        struct peer_state *ps = &self->peers[(self->round_first + k) % n];
        if (ps->next_index == index)
            send_packet(self, ps);
    }
    read_errqueue(self);
    if (index == 1 && n > 0)
        self->round_first = (self->round_first + 1) % n;
}

static void *prober_main(void *arg)
{
    node_prober_t *self = arg;
    pthread_setname_np(pthread_self(), "dp-prober");
    /* The pair spacing is 100 us by default: ask for tight timer wake-ups. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    int64_t round_due = base_monotonic_ns() + next_interval(self) / 2;
    int64_t second_due = 0; /* when the round's second packets are due; 0: none */
    pthread_mutex_lock(&self->lock);
    while (!self->stop) {
        int64_t now = base_monotonic_ns();
        if (second_due != 0 && now >= second_due) {
            send_round(self, 1);
            second_due = 0;
        }
        if (self->has_pending)
            apply_pending(self);
        read_packets(self);
        now = base_monotonic_ns();
        if (second_due == 0 && now >= round_due) {
            /* After a long stall, do not burst: restart the schedule. */
            int64_t start = now - round_due > 10 * self->cfg.cadence_ns ? now : round_due;
            send_round(self, 0);
            second_due = base_monotonic_ns() + self->cfg.spacing_ns;
            round_due = start + next_interval(self);
        }
        int64_t next = second_due != 0 ? second_due : round_due;
        pthread_mutex_unlock(&self->lock);

        int64_t wait = next - base_monotonic_ns();
        if (wait > 0) {
            struct timespec ts = {.tv_sec = wait / 1000000000LL, .tv_nsec = wait % 1000000000LL};
            struct pollfd pfd = {self->wake[0], POLLIN, 0};
            if (ppoll(&pfd, 1, &ts, NULL) > 0) {
                char drain[64];
                while (read(self->wake[0], drain, sizeof drain) > 0)
                    ;
            }
        }
        pthread_mutex_lock(&self->lock);
    }
    pthread_mutex_unlock(&self->lock);
    return NULL;
}

int node_prober_start(node_prober_t *self, char *err)
{
    assert(self);
    if (self->started)
        return BASE_OK;
    int rc = pthread_create(&self->thread, NULL, prober_main, self);
    if (rc != 0)
        return base_err(err, "cannot start prober thread: %s", strerror(rc));
    self->started = true;
    return BASE_OK;
}
