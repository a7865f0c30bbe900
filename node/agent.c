/*
 * The agent: one per host (docs/DPNODE.md).
 *
 * Threads: the prober's (node/probe.c) sends and receives probes; ZeroMQ's
 * I/O threads move bus traffic; everything else runs here, in one loop that
 * wakes when registration traffic arrives or the next timer is due
 * (snapshot pairs, window ends, heartbeats, status, the simulated
 * workload).  Timer wake-ups dominate an idle agent's CPU cost, so the loop
 * sleeps as long as its next deadline allows.
 *
 * Every timestamp the agent produces is read through its clock functions:
 * probe_now() (CLOCK_REALTIME) and trace_now() (CLOCK_MONOTONIC), which
 * apply the simulated clock of SPEC §4.6 when one is configured.  The
 * prober thread has its own clock_sim_t (the objects cache running sums and
 * are not thread-safe; equal parameters give equal readings).
 */
#include "node/node_int.h"

#include <arpa/inet.h>
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <zmq.h>

#include "bus/bus.h"
#include "gpu/gpu.h"

#define DRAIN_CHUNK     4096
#define MAX_RESULTS     256
#define MAX_PROCS       64
#define MAX_NAMES_TOTAL 131072 /* names kept for re-announcing, all processes */
#define SCOPE_KEEP      16384  /* scope pairs kept per process */
#define MAX_CARDS       16
#define MAX_WAIT_MS     100
#define INGEST_WAIT_MS  20
#define SIM_TICK_NS     20000000LL
#define ANNOUNCE_EVERY  10000000000LL /* hello and sim_truth again, for late caches */
#define ALERTS_PENDING  4             /* warnings kept until the node has its id */
#define REJ_SOURCES     6
#define REJ_REPORT_NS   10000000000LL /* lines about rejected input: 10 s apart at first */
#define MAX_INGEST_TICK 512

enum reg_state { REG_HELLO, REG_OK };

/*
 * What the agent knows of a traced process (libdptrace, or its own
 * simulated workload): the name table and recent scope pairs are kept so
 * that a restarted master's cache can be filled again.
 */
struct proc {
    uint32_t pid;
    int rank; /* the launcher's rank in its environment (RANK, ...), -1: none */
    char exe[64];
    char backend[16];
    bool have_hello; /* exe, backend, devices, t0: its `proc`, re-sent to a new master */
    uint32_t devices;
    int64_t t0_ns;
    uint64_t dropped;
    int64_t last_mono;
    uint32_t *name_ids;
    char **name_strs;
    size_t nnames, cap_names;
    gpu_scopetree_t *scope;
};

struct node_agent {
    /* settings */
    bool is_master;
    int req_id;
    int64_t cadence_ns, spacing_ns, window_ns, snapshot_ns, hb_ns, status_ns;
    const clock_estimator_t *est;
    int64_t guard_ns;
    int k;
    int ref_cfg;
    int64_t forget_ns;
    int refine_lag;
    double stamp_asym_ns, margin_z;
    char hub[256], listen[256], sysfs_root[256];
    bool sim_workload;
    struct gpu_sim_cfg wl_cfg;

    /* identity */
    int id; /* -1 until welcomed */
    char host[NODE_HOST_LEN], instance[40];
    int pid;
    int64_t start_mono;

    /* clocks */
    bool has_sim;
    clock_sim_params_t simp;
    clock_sim_t *sim;        /* this thread */
    clock_sim_t *sim_prober; /* the prober thread */

    /* probing */
    node_prober_t *prober;
    char probe_addr[NODE_ADDR_LEN];
    bool key_configured;    /* --probe-key: the welcome's key is not taken */
    char probe_key_hex[40]; /* the master's: the cluster's key, configured or drawn */
    node_windows_t *win;
    bool win_started;
    int64_t next_close_k;
    int64_t grace_ns;
    struct node_probe_sample *drain;
    struct node_win_result *results;
    FILE *probe_log;
    uint64_t probe_log_lines;
    bool probe_log_failed;

    /* plan */
    struct node_plan plan;
    bool have_plan;
    struct sockaddr_storage hub_ip; /* the master's address, for unspecified plan entries */
    bool have_hub_ip;

    /* bus */
    struct bus_curve *client_curve, *server_curve;
    node_master_t *master;
    bus_pub_t *pub;
    bus_reg_t *reg;
    enum reg_state rstate;
    int64_t last_hello, last_hb, last_ack;
    int64_t hello_since, hello_warn; /* unanswered hellos since; next warning after */
    int64_t epoch;
    int ref;
    bool announce_due;
    int64_t last_announce;

    /* timers (CLOCK_MONOTONIC) */
    int64_t next_snap, next_status, next_wl;

    /* GPU side: the simulated workload is the registered "sim" GPU source. */
    const struct gpu_source *wl_src;
    void *wl;
    gpu_ingest_t *ingest;
    char trace_ep[256];
    struct proc procs[MAX_PROCS];
    size_t nprocs;
    node_devices_t *devices;
    gpu_metrics_t cards[MAX_CARDS]; /* its latest reading: amdgpu's, then NVML's */
    size_t ncards;
    gpu_metrics_t hello_cards[MAX_CARDS]; /* the last fresh reading: the hello's */
    size_t nhello_cards;
    bool hello_due; /* the cards changed: the hello goes again */
    base_decstats_t metrics_dec;

    /* alerts: warnings logged before the bus was up, to publish once it is (a few) */
    struct {
        enum base_log_level level;
        char line[256];
    } alerts[ALERTS_PENDING];
    int nalerts;
    /* rejected input as last reported: probes, devices, local link, registration, master */
    uint64_t rej_reported[REJ_SOURCES];
    int64_t rej_reported_ns, rej_interval_ns;

    /* counters */
    uint64_t events, events_period, ev_bus_drops, gpu_msgs_bad;
    /* Events that came over the local link while no master had welcomed
     * this agent: nowhere to publish them, so dropped, counted. */
    uint64_t ev_unregistered;
    uint64_t ingest_rebinds; /* the local link's socket file found gone, bound again */
    size_t names_total;
    uint64_t names_dropped;
    bool replaying; /* re-announcing tables: do not record them again */
    double busy_ns_period;
    struct rusage ru_last;
    int64_t ru_wall_last;
    double cpu_pct;
};

/* ---- clocks ------------------------------------------------------------ */

static int64_t probe_now(node_agent_t *self)
{
    int64_t t = base_realtime_ns();
    return self->has_sim ? clock_sim_apply(self->sim, t) : t;
}

static int64_t probe_now_cb(void *ctx)
{
    return probe_now(ctx);
}

static int64_t trace_of_mono(node_agent_t *self, int64_t m)
{
    return self->has_sim ? clock_sim_apply_mono(self->sim, m) : m;
}

static int64_t prober_clock(void *ctx, int64_t real_ns)
{
    return clock_sim_apply(ctx, real_ns);
}

/* The simulated workload's clock: true time (the host's real
 * CLOCK_REALTIME, shared by every agent on it) -> this node's trace clock. */
static int64_t wl_clock(void *ctx, int64_t true_ns)
{
    node_agent_t *self = ctx;
    return trace_of_mono(self, self->simp.m0_ns + (true_ns - self->simp.t0_ns));
}

/* ---- small helpers ------------------------------------------------------ */

/* A bus message whose header takes the fields of o (but its type). */
static bus_msg_t *msg_from_json(enum bus_kind kind, json_object *o)
{
    bus_msg_t *m = bus_msg_new(kind);
    json_object *h = bus_msg_header(m);
    json_object_object_foreach(o, key, val)
    {
        if (strcmp(key, "type") != 0)
            json_object_object_add(h, key, json_object_get(val));
    }
    return m;
}

static void publish(node_agent_t *self, bus_msg_t *m)
{
    char err[BASE_ERRLEN];
    if (bus_pub_send(self->pub, m, err) == BASE_ERR)
        base_log(BASE_LOG_WARN, "node", "publish %s: %s", bus_kind_name(bus_msg_kind(m)), err);
}

static bool welcomed(const node_agent_t *self)
{
    return self->id >= 0 && self->rstate == REG_OK;
}

bus_msg_t *node_log_msg(int64_t node, enum base_log_level level, const char *component,
                        const char *line, int64_t t_ns)
{
    static const char *const lv[] = {"debug", "info", "warn", "error"};
    bus_msg_t *m = bus_msg_new(BUS_K_LOG);
    bus_msg_set_i64(m, "node", node);
    bus_msg_set_str(m, "level", lv[level & 3]);
    bus_msg_set_str(m, "component", component);
    bus_msg_set_str(m, "msg", line);
    bus_msg_set_i64(m, "t_ns", t_ns);
    return m;
}

static void publish_alert(node_agent_t *self, enum base_log_level level, const char *line)
{
    bus_msg_t *m = node_log_msg(self->id, level, "node", line, probe_now(self));
    publish(self, m);
    bus_msg_destroy(&m);
}

/*
 * Log a warning locally and on the bus, where consoles show it: an agent's
 * trouble (no local link, a probe log that failed, rejected input) is the
 * cluster's to see, not only its host's.  Before the node has its id the
 * first few wait for it (alerts_flush).
 */
static void alog(node_agent_t *self, enum base_log_level level, const char *fmt, ...)
    BASE_PRINTF(3, 4);
static void alog(node_agent_t *self, enum base_log_level level, const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    base_log(level, "node", "%s", line);
    if (self->pub != NULL && welcomed(self)) {
        publish_alert(self, level, line);
    } else if (self->nalerts < ALERTS_PENDING) {
        self->alerts[self->nalerts].level = level;
        snprintf(self->alerts[self->nalerts].line, sizeof self->alerts[0].line, "%s", line);
        self->nalerts++;
    }
}

/* Once a subscriber takes log messages (they are not cached for later ones). */
static void alerts_flush(node_agent_t *self)
{
    if (self->nalerts == 0 || self->pub == NULL || !welcomed(self) ||
        !bus_pub_subscribed(self->pub, BUS_K_LOG))
        return;
    for (int i = 0; i < self->nalerts; i++)
        publish_alert(self, self->alerts[i].level, self->alerts[i].line);
    self->nalerts = 0;
}

/* Secrets: the kernel's random bytes (the clocks only where it has none to give). */
static void random_bytes(void *buf, size_t len)
{
    uint64_t seed = (uint64_t)base_realtime_ns() ^ ((uint64_t)getpid() << 32);
    for (size_t i = 0; i < len; i++) {
        seed = seed * 6364136223846793005ULL + (uint64_t)base_monotonic_ns();
        ((uint8_t *)buf)[i] = (uint8_t)(seed >> 56);
    }
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        if (fread(buf, len, 1, f) != 1)
            base_log(BASE_LOG_WARN, "node", "no random bytes from /dev/urandom: clock-made ones");
        fclose(f);
    }
}

/*
 * The instance names this agent process to the master, which keeps a node's
 * row for whoever says it: it is sent over the registration connection only
 * (never published), and 128 random bits so that it cannot be guessed.
 */
static void random_instance(char *buf, size_t len)
{
    uint64_t x[2];
    random_bytes(x, sizeof x);
    snprintf(buf, len, "%016" PRIx64 "%016" PRIx64, x[0], x[1]);
}

int node_curve_load(const char *dir, bool server, struct bus_curve **client_out,
                    struct bus_curve **server_out, char *err)
{
    *client_out = *server_out = NULL;
    char hub_pub[41], cl_pub[41], cl_sec[41];
    if (bus_curve_key_file(dir, "hub.public", hub_pub, err) != BASE_OK ||
        bus_curve_key_file(dir, "client.public", cl_pub, err) != BASE_OK ||
        bus_curve_key_file(dir, "client.secret", cl_sec, err) != BASE_OK)
        return BASE_ERR;
    if (!bus_curve_available())
        return base_err(err, "curve_dir: this libzmq has no CURVE support");
    struct bus_curve *client = xcalloc(1, sizeof *client);
    client->public_key = xstrdup(cl_pub);
    client->secret_key = xstrdup(cl_sec);
    client->server_key = xstrdup(hub_pub);
    *client_out = client;
    if (!server)
        return BASE_OK;
    char hub_sec[41];
    if (bus_curve_key_file(dir, "hub.secret", hub_sec, err) != BASE_OK)
        return BASE_ERR;
    size_t n = 1, cap = 8;
    char **allowed = xcalloc(cap + 1, sizeof *allowed);
    allowed[0] = xstrdup(cl_pub);
    char path[512];
    snprintf(path, sizeof path, "%s/authorized_keys", dir);
    FILE *f = fopen(path, "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f) && n < 4096) {
            size_t l = strcspn(line, " \r\n#");
            if (l == 0)
                continue;
            if (l != 40) {
                fclose(f);
                for (size_t i = 0; i < n; i++)
                    free(allowed[i]);
                free(allowed);
                return base_err(err, "curve_dir: %s holds a line that is not a 40-character key",
                                path);
            }
            if (n == cap) {
                cap *= 2;
                allowed = xreallocarray(allowed, cap + 1, sizeof *allowed);
            }
            allowed[n++] = xstrndup(line, 40);
        }
        fclose(f);
    }
    allowed[n] = NULL;
    struct bus_curve *srv = xcalloc(1, sizeof *srv);
    srv->public_key = xstrdup(hub_pub);
    srv->secret_key = xstrdup(hub_sec);
    srv->allowed = (const char *const *)allowed;
    *server_out = srv;
    return BASE_OK;
}

void node_curve_free(struct bus_curve *c)
{
    if (c == NULL)
        return;
    free((char *)c->public_key);
    free((char *)c->secret_key);
    free((char *)c->server_key);
    if (c->allowed) {
        for (size_t i = 0; c->allowed[i]; i++)
            free((char *)c->allowed[i]);
        free((char **)c->allowed);
    }
    free(c);
}

int node_gen_keys(const char *dir, char *err)
{
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return base_err(err, "cannot create %s: %s", dir, strerror(errno));
    const char *who[2] = {"hub", "client"};
    for (int i = 0; i < 2; i++) {
        char pub[41], sec[41];
        if (zmq_curve_keypair(pub, sec) != 0)
            return base_err(err, "cannot make a CURVE key pair: %s", zmq_strerror(errno));
        const char *text[2] = {pub, sec};
        const char *ext[2] = {"public", "secret"};
        for (int j = 0; j < 2; j++) {
            char path[512];
            snprintf(path, sizeof path, "%s/%s.%s", dir, who[i], ext[j]);
            FILE *f = fopen(path, "w");
            if (f == NULL)
                return base_err(err, "cannot write %s: %s", path, strerror(errno));
            if (j == 1 && chmod(path, 0600) != 0) {
                fclose(f);
                return base_err(err, "cannot protect %s: %s", path, strerror(errno));
            }
            int bad = fprintf(f, "%s\n", text[j]) < 0;
            if (fclose(f) != 0 || bad)
                return base_err(err, "cannot write %s", path);
        }
    }
    return BASE_OK;
}

/* ---- addresses ---------------------------------------------------------- */

static bool unspecified(const struct sockaddr_storage *a)
{
    if (a->ss_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr == htonl(INADDR_ANY);
    if (a->ss_family == AF_INET6)
        return IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)a)->sin6_addr);
    return false;
}

/* The host of a tcp:// endpoint ("" for ipc/inproc or a wildcard). */
static void endpoint_host(const char *ep, char *host, size_t len)
{
    host[0] = '\0';
    if (strncmp(ep, "tcp://", 6) != 0)
        return;
    const char *h = ep + 6, *colon = strrchr(h, ':');
    if (colon == NULL)
        return;
    size_t n = (size_t)(colon - h);
    if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
        h++;
        n -= 2;
    }
    if (n == 0 || n >= len || (n == 1 && h[0] == '*'))
        return;
    memcpy(host, h, n);
    host[n] = '\0';
}

/* Resolve the master's host into hub_ip (port 0). */
static void resolve_hub(node_agent_t *self, int family)
{
    char host[256];
    endpoint_host(self->hub, host, sizeof host);
    memset(&self->hub_ip, 0, sizeof self->hub_ip);
    if (host[0] == '\0') {
        /* ipc:// or inproc://: the master is on this host. */
        struct sockaddr_in *a4 = (struct sockaddr_in *)&self->hub_ip;
        a4->sin_family = AF_INET;
        a4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        self->have_hub_ip = true;
        return;
    }
    struct addrinfo hints = {.ai_family = family, .ai_socktype = SOCK_DGRAM}, *res = NULL;
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || res == NULL) {
        base_log(BASE_LOG_WARN, "node", "cannot resolve the master's host %s", host);
        return;
    }
    memcpy(&self->hub_ip, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    self->have_hub_ip = true;
}

/*
 * The address peers reach this node's probe socket at.  Bound to a wildcard,
 * an agent names the address of the interface that routes to the master (a
 * UDP connect() only looks the route up); the master, whose peers come from
 * anywhere, names its listen address, or leaves the address unspecified,
 * which agents read as "where you reach the master".
 */
static void probe_address(node_agent_t *self, int family)
{
    char bound[NODE_ADDR_LEN];
    node_prober_address(self->prober, bound, sizeof bound);
    struct sockaddr_storage a;
    socklen_t alen;
    if (node_parse_addr(bound, &a, &alen, NULL) != BASE_OK || !unspecified(&a)) {
        snprintf(self->probe_addr, sizeof self->probe_addr, "%s", bound);
        return;
    }
    uint16_t port = node_prober_port(self->prober);
    char ip[INET6_ADDRSTRLEN] = "";
    if (self->is_master) {
        char host[256];
        endpoint_host(self->listen, host, sizeof host);
        struct in_addr t4;
        struct in6_addr t6;
        if (inet_pton(AF_INET, host, &t4) == 1 || inet_pton(AF_INET6, host, &t6) == 1)
            snprintf(ip, sizeof ip, "%.45s", host);
    } else if (self->have_hub_ip) {
        struct sockaddr_storage dst = self->hub_ip;
        ((struct sockaddr_in *)&dst)->sin_port = htons(9); /* same offset in sin6 */
        int fd = socket(dst.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        socklen_t dlen =
            dst.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
        if (fd >= 0 && connect(fd, (struct sockaddr *)&dst, dlen) == 0) {
            struct sockaddr_storage me;
            socklen_t mlen = sizeof me;
            if (getsockname(fd, (struct sockaddr *)&me, &mlen) == 0) {
                if (me.ss_family == AF_INET)
                    inet_ntop(AF_INET, &((struct sockaddr_in *)&me)->sin_addr, ip, sizeof ip);
                else if (me.ss_family == AF_INET6)
                    inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&me)->sin6_addr, ip, sizeof ip);
            }
        }
        if (fd >= 0)
            close(fd);
    }
    if (ip[0] == '\0')
        snprintf(ip, sizeof ip, "%s", family == AF_INET6 ? "::" : "0.0.0.0");
    snprintf(self->probe_addr, sizeof self->probe_addr, strchr(ip, ':') ? "[%s]:%u" : "%s:%u", ip,
             port);
}

/* ---- the local link ------------------------------------------------------ */

/* Whether a process already accepts connections on an ipc endpoint. */
static bool ipc_in_use(const char *ep)
{
    if (strncmp(ep, "ipc://", 6) != 0)
        return false;
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    if (strlen(ep + 6) >= sizeof un.sun_path)
        return false;
    strcpy(un.sun_path, ep + 6);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    bool used = connect(fd, (struct sockaddr *)&un, sizeof un) == 0;
    close(fd);
    return used;
}

static void on_ingest(void *ctx, const gpu_msg_t *msg);

static int open_ingest(node_agent_t *self, const base_config_t *cfg, char *err)
{
    const char *te = base_config_str(cfg, "trace_endpoint");
    bool explicit = base_config_source(cfg, "trace_endpoint") != BASE_CFG_DEFAULT;
    if (strcmp(te, "none") == 0)
        return BASE_OK;
    if (strcmp(te, "auto") == 0) {
        if (gpu_link_default_endpoint(self->trace_ep, sizeof self->trace_ep, err) != BASE_OK)
            return BASE_ERR;
    } else {
        snprintf(self->trace_ep, sizeof self->trace_ep, "%s", te);
    }
    char e[BASE_ERRLEN];
    bool in_use = ipc_in_use(self->trace_ep);
    if (in_use) {
        snprintf(e, sizeof e, "another process serves the trace endpoint %.200s", self->trace_ep);
        goto fail;
    }
    self->ingest = gpu_ingest_new(self->trace_ep, on_ingest, self, e);
    if (self->ingest != NULL)
        return BASE_OK;
fail:
    if (explicit)
        return base_err(err, "trace_endpoint: %s", e);
    /* Another agent's default endpoint: taken over once that agent is
     * gone (check_ingest_socket, every status period). */
    alog(self, BASE_LOG_WARN, "no local link for libdptrace: %s%s", e,
         in_use ? " (taken over if that process goes)" : "");
    if (!in_use)
        self->trace_ep[0] = '\0';
    return BASE_OK;
}

/*
 * The local link's socket file gone (a cleaner of /tmp or /run, a user's
 * rm): libdptrace can no longer connect, and nothing said so.  Checked
 * every status period; bound again where it is missing, and said.
 */
static void check_ingest_socket(node_agent_t *self)
{
    if (self->trace_ep[0] == '\0' || strncmp(self->trace_ep, "ipc://", 6) != 0)
        return;
    struct stat st;
    if (self->ingest && stat(self->trace_ep + 6, &st) == 0 && S_ISSOCK(st.st_mode))
        return;
    char e[BASE_ERRLEN];
    if (ipc_in_use(self->trace_ep))
        return; /* someone else serves it now: theirs */
    bool was = self->ingest != NULL;
    gpu_ingest_destroy(&self->ingest);
    self->ingest = gpu_ingest_new(self->trace_ep, on_ingest, self, e);
    if (self->ingest && !was) {
        alog(self, BASE_LOG_INFO,
             "took the trace endpoint %s over (the process serving it is "
             "gone)",
             self->trace_ep);
    } else if (self->ingest) {
        self->ingest_rebinds++;
        alog(self, BASE_LOG_WARN, "the trace endpoint's socket %s was gone: bound again",
             self->trace_ep);
    } else if (was) {
        alog(self, BASE_LOG_WARN,
             "the trace endpoint's socket %s is gone and cannot be bound again: %s (trying "
             "every status period)",
             self->trace_ep, e);
    }
}

/* ---- GPU messages onto the bus ----------------------------------------- */

static void free_proc(node_agent_t *self, struct proc *p)
{
    for (size_t i = 0; i < p->nnames; i++)
        free(p->name_strs[i]);
    self->names_total -= p->nnames;
    free(p->name_ids);
    free(p->name_strs);
    gpu_scopetree_destroy(&p->scope);
    memset(p, 0, sizeof *p);
}

/*
 * The distributed rank a launcher gave a traced process, from its
 * environment (torchrun and most launchers: RANK; Open MPI, MPICH, SLURM:
 * their own), so that traces of its own profiler (Kineto's distributedInfo)
 * find it.  -1 when none is set or the environment cannot be read (another
 * user's process).
 */
static int rank_of_process(uint32_t pid)
{
    static const char *const keys[] = {
        "RANK=", "OMPI_COMM_WORLD_RANK=", "PMI_RANK=", "SLURM_PROCID="};
    char path[64];
    snprintf(path, sizeof path, "/proc/%u/environ", pid);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    char *buf = xmalloc(1u << 20);
    size_t n = fread(buf, 1, (1u << 20) - 1, f);
    fclose(f);
    buf[n] = '\0';
    int rank = -1, best = (int)BASE_ARRAY_LEN(keys);
    for (size_t off = 0; off < n; off += strlen(buf + off) + 1)
        for (int k = 0; k < best; k++)
            if (strncmp(buf + off, keys[k], strlen(keys[k])) == 0) {
                char *end;
                long v = strtol(buf + off + strlen(keys[k]), &end, 10);
                if (*end == '\0' && end != buf + off + strlen(keys[k]) && v >= 0 && v < INT32_MAX) {
                    rank = (int)v;
                    best = k;
                }
            }
    free(buf);
    return rank;
}

static struct proc *proc_of(node_agent_t *self, uint32_t pid)
{
    struct proc *oldest = NULL;
    for (size_t i = 0; i < self->nprocs; i++) {
        if (self->procs[i].pid == pid) {
            self->procs[i].last_mono = base_monotonic_ns();
            return &self->procs[i];
        }
        if (oldest == NULL || self->procs[i].last_mono < oldest->last_mono)
            oldest = &self->procs[i];
    }
    struct proc *p = self->nprocs < MAX_PROCS ? &self->procs[self->nprocs++] : oldest;
    free_proc(self, p);
    p->pid = pid;
    p->rank = -1;
    p->last_mono = base_monotonic_ns();
    p->scope = gpu_scopetree_new(SCOPE_KEEP);
    return p;
}

static void record_names(node_agent_t *self, struct proc *p, const gpu_msg_t *msg)
{
    for (size_t i = 0; i < msg->nnames; i++) {
        if (self->names_total >= MAX_NAMES_TOTAL) {
            self->names_dropped += msg->nnames - i;
            return;
        }
        if (p->nnames == p->cap_names) {
            p->cap_names = p->cap_names ? p->cap_names * 2 : 64;
            p->name_ids = xreallocarray(p->name_ids, p->cap_names, sizeof *p->name_ids);
            p->name_strs = xreallocarray(p->name_strs, p->cap_names, sizeof *p->name_strs);
        }
        p->name_ids[p->nnames] = msg->name_ids[i];
        p->name_strs[p->nnames] = xstrdup(msg->name_strs[i]);
        p->nnames++;
        self->names_total++;
    }
}

static void publish_gpu(node_agent_t *self, const gpu_msg_t *msg, bool from_app)
{
    if (!self->replaying && msg->kind == GPU_MSG_NAMES)
        record_names(self, proc_of(self, msg->pid), msg);
    if (!self->replaying && msg->kind == GPU_MSG_SCOPE) {
        struct proc *p = proc_of(self, msg->pid);
        for (size_t i = 0; i < msg->nscope; i++)
            gpu_scopetree_add(p->scope, msg->scope[i].child, msg->scope[i].parent, NULL);
    }
    if (!self->replaying && msg->kind == GPU_MSG_PROC) {
        struct proc *p = proc_of(self, msg->pid);
        snprintf(p->exe, sizeof p->exe, "%s", msg->exe ? msg->exe : "?");
        snprintf(p->backend, sizeof p->backend, "%s", msg->backend ? msg->backend : "none");
        p->devices = msg->devices;
        p->t0_ns = msg->t0_ns;
        p->rank = rank_of_process(msg->pid);
        p->have_hello = true;
        base_log(BASE_LOG_INFO, "node", "process %u (%s) traces with %s, %u device(s)", msg->pid,
                 p->exe, p->backend, msg->devices);
    }
    if (!welcomed(self)) {
        /* No master (yet, or any more): the events cannot be published and
         * are lost, and said so in ev_drops; names, scope pairs and the
         * process's hello are kept above and go out after the welcome. */
        if (msg->kind == GPU_MSG_EV) {
            self->ev_unregistered += msg->nev;
            if (from_app)
                proc_of(self, msg->pid)->dropped = msg->dropped_total;
        }
        return;
    }
    bus_msg_t *m = NULL;
    switch (msg->kind) {
    case GPU_MSG_EV: {
        m = bus_msg_new(BUS_K_EV);
        bus_msg_set_i64(m, "node", self->id);
        bus_msg_set_i64(m, "pid", msg->pid);
        bus_msg_set_i64(m, "count", (int64_t)msg->nev);
        uint64_t dropped = msg->dropped_total;
        if (from_app)
            proc_of(self, msg->pid)->dropped = dropped;
        bus_msg_set_u64(m, "dropped", dropped);
        gpu_event_t *ev = xmalloc((msg->nev ? msg->nev : 1) * sizeof *ev);
        for (size_t i = 0; i < msg->nev; i++) {
            ev[i] = msg->ev[i];
            /* Applications stamp the real CLOCK_MONOTONIC: put it on this
             * node's (simulated) trace clock like everything else. */
            if (from_app && self->has_sim) {
                ev[i].start_ns = trace_of_mono(self, ev[i].start_ns);
                ev[i].end_ns = trace_of_mono(self, ev[i].end_ns);
                if (ev[i].end_ns < ev[i].start_ns)
                    ev[i].end_ns = ev[i].start_ns;
            }
            if (ev[i].kind == GPU_EV_KERNEL || ev[i].kind == GPU_EV_MEMCPY ||
                ev[i].kind == GPU_EV_MEMSET)
                self->busy_ns_period += (double)(ev[i].end_ns - ev[i].start_ns);
        }
        void *buf = bus_msg_payload_alloc(m, gpu_batch_size(msg->nev));
        gpu_batch_encode(ev, msg->nev, buf);
        free(ev);
        self->events += msg->nev;
        self->events_period += msg->nev;
        break;
    }
    case GPU_MSG_NAMES: {
        m = bus_msg_new(BUS_K_NAMES);
        bus_msg_set_i64(m, "node", self->id);
        bus_msg_set_i64(m, "pid", msg->pid);
        json_object *arr = json_object_new_array();
        for (size_t i = 0; i < msg->nnames; i++) {
            json_object *p = json_object_new_array();
            json_object_array_add(p, json_object_new_int64(msg->name_ids[i]));
            json_object_array_add(p, json_object_new_string(msg->name_strs[i]));
            json_object_array_add(arr, p);
        }
        json_object_object_add(bus_msg_header(m), "names", arr);
        break;
    }
    case GPU_MSG_SCOPE: {
        m = bus_msg_new(BUS_K_SCOPE);
        bus_msg_set_i64(m, "node", self->id);
        bus_msg_set_i64(m, "pid", msg->pid);
        json_object *arr = json_object_new_array();
        for (size_t i = 0; i < msg->nscope; i++) {
            json_object *p = json_object_new_array();
            json_object_array_add(p, json_object_new_uint64(msg->scope[i].child));
            json_object_array_add(p, json_object_new_uint64(msg->scope[i].parent));
            json_object_array_add(arr, p);
        }
        json_object_object_add(bus_msg_header(m), "tree", arr);
        break;
    }
    case GPU_MSG_SNAP: {
        m = bus_msg_new(BUS_K_SNAP);
        bus_msg_set_i64(m, "node", self->id);
        bus_msg_set_i64(m, "pid", msg->pid);
        bus_msg_set_str(m, "a", msg->domain_a);
        bus_msg_set_str(m, "b", msg->domain_b);
        bool map_a = from_app && self->has_sim && strcmp(msg->domain_a, "trace") == 0;
        bool map_b = from_app && self->has_sim && strcmp(msg->domain_b, "trace") == 0;
        json_object *arr = json_object_new_array();
        for (size_t i = 0; i < msg->nsnap; i++) {
            int64_t a = msg->snap[i].a_ns, b = msg->snap[i].b_ns;
            json_object *p = json_object_new_array();
            json_object_array_add(p, json_object_new_int64(map_a ? trace_of_mono(self, a) : a));
            json_object_array_add(p, json_object_new_int64(map_b ? trace_of_mono(self, b) : b));
            json_object_array_add(arr, p);
        }
        json_object_object_add(bus_msg_header(m), "pairs", arr);
        break;
    }
    case GPU_MSG_PROC: {
        struct proc *p = proc_of(self, msg->pid);
        m = bus_msg_new(BUS_K_PROC);
        bus_msg_set_i64(m, "node", self->id);
        bus_msg_set_i64(m, "pid", msg->pid);
        bus_msg_set_str(m, "exe", p->exe);
        if (p->rank >= 0)
            bus_msg_set_i64(m, "rank", p->rank);
        bus_msg_set_str(m, "backend", p->backend);
        bus_msg_set_i64(m, "devices", msg->devices);
        bus_msg_set_i64(m, "t0_ns", self->has_sim ? trace_of_mono(self, msg->t0_ns) : msg->t0_ns);
        break;
    }
    default:
        self->gpu_msgs_bad++;
        return;
    }
    char err[BASE_ERRLEN];
    int rc = bus_pub_send(self->pub, m, err);
    if (rc != BASE_OK && msg->kind == GPU_MSG_EV)
        self->ev_bus_drops += msg->nev;
    if (rc == BASE_ERR) {
        self->gpu_msgs_bad++;
        base_log(BASE_LOG_WARN, "node", "cannot republish %s: %s", gpu_msg_kind_name(msg->kind),
                 err);
    }
    bus_msg_destroy(&m);
}

static void on_ingest(void *ctx, const gpu_msg_t *msg)
{
    publish_gpu(ctx, msg, true);
}

static void on_sim(void *ctx, const gpu_msg_t *msg)
{
    publish_gpu(ctx, msg, false);
}

/* ---- device metrics ------------------------------------------------------ */

/* What the hello says of a card: a reading that flickers (a memory query
 * that fails now and then) does not send it again. */
static bool same_cards(const gpu_metrics_t *a, const gpu_metrics_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].card != b[i].card || a[i].vendor != b[i].vendor ||
            strcmp(a[i].name, b[i].name) != 0)
            return false;
    return true;
}

/*
 * The status shows the latest reading, none while it is stale; the hello
 * lists the cards of the last fresh one, and goes again when they change
 * (a driver slow to answer at start, a board that falls off the bus).
 */
static void read_metrics(node_agent_t *self)
{
    bool fresh;
    self->ncards =
        node_devices_get(self->devices, self->cards, MAX_CARDS, &self->metrics_dec, &fresh);
    if (!fresh || (self->ncards == self->nhello_cards &&
                   same_cards(self->cards, self->hello_cards, self->ncards)))
        return;
    memcpy(self->hello_cards, self->cards, self->ncards * sizeof *self->cards);
    self->nhello_cards = self->ncards;
    self->hello_due = true;
}

/* ---- hello, announcements ------------------------------------------------ */

static bus_msg_t *hello_msg(node_agent_t *self, bool bus_copy)
{
    bus_msg_t *m = bus_msg_new(BUS_K_HELLO);
    if (bus_copy)
        bus_msg_set_i64(m, "node", self->id);
    bus_msg_set_str(m, "host", self->host);
    bus_msg_set_i64(m, "pid", self->pid);
    bus_msg_set_str(m, "version", DP_VERSION);
    /* The instance is the row's secret: only the master hears it. */
    if (!bus_copy)
        bus_msg_set_str(m, "instance", self->instance);
    bus_msg_set_str(m, "probe_addr", self->probe_addr);
    bus_msg_set_bool(m, "sim", self->has_sim);
    bus_msg_set_bool(m, "kernel_timestamps", node_prober_kernel_timestamps(self->prober));
    bus_msg_set_bool(m, "master", self->is_master);
    if (self->trace_ep[0] && self->ingest)
        bus_msg_set_str(m, "trace_endpoint", self->trace_ep);
    int req = self->id >= 0 ? self->id : self->req_id;
    if (req >= 0)
        bus_msg_set_i64(m, "req_node", req);
    json_object *h = bus_msg_header(m);
    json_object *clocks = json_object_new_array();
    json_object_array_add(clocks, json_object_new_string("probe"));
    json_object_array_add(clocks, json_object_new_string("boottime"));
    json_object_array_add(clocks, json_object_new_string("trace"));
    json_object_object_add(h, "clocks", clocks);
    json_object *gpus = json_object_new_array();
    for (size_t i = 0; i < self->nhello_cards; i++) {
        const gpu_metrics_t *c = &self->hello_cards[i];
        json_object *g = json_object_new_object();
        json_object_object_add(g, "index", json_object_new_int64(c->card));
        json_object_object_add(g, "name", json_object_new_string(c->name));
        if (c->vendor)
            json_object_object_add(g, "vendor", json_object_new_string(c->vendor));
        if (c->valid & GPU_MET_VRAM_TOTAL)
            json_object_object_add(g, "vram_bytes", json_object_new_uint64(c->vram_total));
        json_object_array_add(gpus, g);
    }
    if (self->sim_workload) {
        json_object *g = json_object_new_object();
        json_object_object_add(g, "index", json_object_new_int64(self->wl_cfg.device));
        json_object_object_add(g, "name", json_object_new_string("simulated GPU"));
        json_object_object_add(g, "backend", json_object_new_string("sim"));
        json_object_array_add(gpus, g);
    }
    json_object_object_add(h, "gpus", gpus);
    return m;
}

struct scope_chunk {
    node_agent_t *agent;
    uint32_t pid;
    struct gpu_scope_pair pairs[GPU_LINK_MAX_SCOPE];
    size_t n;
};

static void flush_scope(struct scope_chunk *c)
{
    if (c->n == 0)
        return;
    gpu_msg_t m = {.kind = GPU_MSG_SCOPE, .pid = c->pid, .scope = c->pairs, .nscope = c->n};
    publish_gpu(c->agent, &m, false);
    c->n = 0;
}

static void add_scope(void *ctx, const struct gpu_scope_pair *pair)
{
    struct scope_chunk *c = ctx;
    c->pairs[c->n++] = *pair;
    if (c->n == GPU_LINK_MAX_SCOPE)
        flush_scope(c);
}

/* Name tables and recent scope pairs again, for a master whose cache is new. */
static void republish_tables(node_agent_t *self)
{
    self->replaying = true;
    struct scope_chunk *c = xmalloc(sizeof *c);
    for (size_t i = 0; i < self->nprocs; i++) {
        struct proc *p = &self->procs[i];
        /* Its hello first: a console joining later learns the process. */
        if (p->have_hello) {
            gpu_msg_t m = {.kind = GPU_MSG_PROC,
                           .pid = p->pid,
                           .exe = p->exe,
                           .backend = p->backend,
                           .devices = p->devices,
                           .t0_ns = p->t0_ns};
            publish_gpu(self, &m, true);
        }
        for (size_t off = 0; off < p->nnames; off += GPU_LINK_MAX_NAMES) {
            size_t n = p->nnames - off < GPU_LINK_MAX_NAMES ? p->nnames - off : GPU_LINK_MAX_NAMES;
            gpu_msg_t m = {.kind = GPU_MSG_NAMES,
                           .pid = p->pid,
                           .name_ids = p->name_ids + off,
                           .name_strs = (const char *const *)(p->name_strs + off),
                           .nnames = n};
            publish_gpu(self, &m, false);
        }
        c->agent = self;
        c->pid = p->pid;
        c->n = 0;
        if (p->scope)
            gpu_scopetree_foreach(p->scope, add_scope, c);
        flush_scope(c);
    }
    free(c);
    self->replaying = false;
}

static void announce(node_agent_t *self)
{
    bus_msg_t *m = hello_msg(self, true);
    publish(self, m);
    bus_msg_destroy(&m);
    self->hello_due = false;
    if (self->has_sim) {
        clock_truth_node_t t = {.node = (uint32_t)self->id, .p = self->simp};
        json_object *o = clock_json_truth(&t);
        m = msg_from_json(BUS_K_SIM_TRUTH, o);
        json_object_put(o);
        publish(self, m);
        bus_msg_destroy(&m);
    }
    /* The simulated workload is a process of this node as a traced one is:
     * said in a proc message, so that traces of it (imported ones too) find
     * their node by its pid. */
    if (self->wl) {
        m = bus_msg_new(BUS_K_PROC);
        bus_msg_set_i64(m, "node", self->id);
        bus_msg_set_i64(m, "pid", self->wl_cfg.pid);
        bus_msg_set_str(m, "exe", "sim-workload");
        bus_msg_set_str(m, "backend", "sim");
        bus_msg_set_i64(m, "devices", 1);
        int rank = rank_of_process(self->wl_cfg.pid);
        if (rank >= 0)
            bus_msg_set_i64(m, "rank", rank);
        publish(self, m);
        bus_msg_destroy(&m);
    }
    /* After a (re-)registration the master's cache may be new. */
    if (self->announce_due)
        republish_tables(self);
    self->last_announce = base_monotonic_ns();
    self->announce_due = false;
}

/* ---- the plan ------------------------------------------------------------ */

static void apply_plan(node_agent_t *self, struct node_plan *plan)
{
    node_plan_free(&self->plan);
    self->plan = *plan;
    memset(plan, 0, sizeof *plan);
    self->have_plan = true;
    self->epoch = self->plan.epoch;
    self->ref = (int)self->plan.ref;
    if (self->id < 0)
        return;
    uint32_t me = (uint32_t)self->id;
    size_t max = self->plan.nnodes ? self->plan.nnodes : 1;
    uint32_t *ids = xcalloc(max, sizeof *ids);
    struct node_peer *peers = xcalloc(max, sizeof *peers);
    size_t n = node_graph_peers(self->plan.edges, self->plan.nedges, me, ids, max), np = 0;
    for (size_t i = 0; i < n; i++) {
        const struct node_plan_node *pn = node_plan_find(&self->plan, ids[i]);
        char err[BASE_ERRLEN];
        if (pn == NULL ||
            node_parse_addr(pn->addr, &peers[np].addr, &peers[np].addrlen, err) != BASE_OK) {
            base_log(BASE_LOG_WARN, "node", "plan: peer %u has no usable address", ids[i]);
            continue;
        }
        if (unspecified(&peers[np].addr) && self->have_hub_ip &&
            self->hub_ip.ss_family == peers[np].addr.ss_family) {
            /* "The master's address": where this node reaches the master. */
            if (peers[np].addr.ss_family == AF_INET)
                ((struct sockaddr_in *)&peers[np].addr)->sin_addr =
                    ((struct sockaddr_in *)&self->hub_ip)->sin_addr;
            else
                ((struct sockaddr_in6 *)&peers[np].addr)->sin6_addr =
                    ((struct sockaddr_in6 *)&self->hub_ip)->sin6_addr;
        }
        peers[np++].id = ids[i];
    }
    node_prober_set_peers(self->prober, peers, np);
    size_t owned = 0;
    for (size_t i = 0; i < self->plan.nedges; i++)
        if (self->plan.edges[i].src == me && owned < max)
            ids[owned++] = self->plan.edges[i].dst;
    node_windows_set_owned(self->win, ids, owned);
    base_log(BASE_LOG_INFO, "node",
             "plan epoch %" PRId64 ": node %u probes %zu peer(s), fits %zu edge(s), reference %u",
             self->plan.epoch, me, np, owned, self->plan.ref);
    free(ids);
    free(peers);
}

static void on_master_plan(void *ctx, const struct node_plan *plan)
{
    node_agent_t *self = ctx;
    struct node_plan copy = *plan;
    copy.nodes = xcalloc(plan->nnodes ? plan->nnodes : 1, sizeof *copy.nodes);
    copy.edges = xcalloc(plan->nedges ? plan->nedges : 1, sizeof *copy.edges);
    memcpy(copy.nodes, plan->nodes, plan->nnodes * sizeof *copy.nodes);
    memcpy(copy.edges, plan->edges, plan->nedges * sizeof *copy.edges);
    apply_plan(self, &copy);
    node_plan_free(&copy);
}

/* ---- windows ------------------------------------------------------------- */

static int64_t grace_for(int64_t window_ns, int64_t cadence_ns)
{
    /* Samples complete a few cadences after they were sent (follow-ups,
     * then echoes); a loaded host adds its scheduling delays. */
    int64_t g = 25 * cadence_ns;
    if (g < 100000000)
        g = 100000000;
    if (g > window_ns / 4)
        g = window_ns / 4;
    return g;
}

static void make_windows(node_agent_t *self)
{
    node_windows_destroy(&self->win);
    struct node_windows_cfg wc = {
        .self = self->id >= 0 ? (uint32_t)self->id : UINT32_MAX,
        .window_ns = self->window_ns,
        .est = self->est,
    };
    clock_purity_opts_default(&wc.purity);
    if (self->guard_ns > 0)
        wc.purity.guard_ns = self->guard_ns;
    clock_fit_opts_default(&wc.fit);
    /* Two windows in flight, both directions, room for a burst. */
    double per = 2.0 * 2.0 * (double)self->window_ns / (double)self->cadence_ns;
    wc.max_per_peer = (size_t)(4 * per) + 4096;
    if (wc.max_per_peer > (1u << 21))
        wc.max_per_peer = 1u << 21;
    self->win = node_windows_new(&wc);
    self->win_started = false;
    self->grace_ns = grace_for(self->window_ns, self->cadence_ns);
}

static void log_probe(node_agent_t *self, const struct node_probe_sample *s)
{
    if (self->probe_log == NULL || self->probe_log_failed)
        return;
    clock_probe_t p;
    node_sample_to_probe(s, &p);
    char line[512];
    size_t n = clock_json_format_probe(&p, line, sizeof line - 1);
    line[n++] = '\n';
    if (fwrite(line, 1, n, self->probe_log) != n) {
        self->probe_log_failed = true;
        alog(self, BASE_LOG_ERROR, "probe log: write failed (%s); logging stops", strerror(errno));
        return;
    }
    self->probe_log_lines++;
}

static void drain_prober(node_agent_t *self)
{
    for (;;) {
        size_t n = node_prober_drain(self->prober, self->drain, DRAIN_CHUNK);
        for (size_t i = 0; i < n; i++) {
            log_probe(self, &self->drain[i]);
            node_windows_add(self->win, &self->drain[i]);
        }
        if (n < DRAIN_CHUNK)
            return;
    }
}

static void publish_result(node_agent_t *self, const struct node_win_result *r)
{
    bus_msg_t *m = bus_msg_new(BUS_K_WIN);
    bus_msg_set_i64(m, "window", r->window);
    bus_msg_set_i64(m, "src", r->src);
    bus_msg_set_i64(m, "dst", r->dst);
    bus_msg_set_u64(m, "sent", r->fwd.sent);
    bus_msg_set_u64(m, "received", r->fwd.received);
    bus_msg_set_u64(m, "lost", r->fwd.lost);
    bus_msg_set_double(m, "pure_pct",
                       r->fwd.received ? 100.0 * (double)r->fwd.pure / (double)r->fwd.received : 0);
    bus_msg_set_u64(m, "rev_sent", r->rev.sent);
    bus_msg_set_u64(m, "rev_received", r->rev.received);
    bus_msg_set_u64(m, "rev_lost", r->rev.lost);
    bus_msg_set_double(m, "rev_pure_pct",
                       r->rev.received ? 100.0 * (double)r->rev.pure / (double)r->rev.received : 0);
    bus_msg_set_u64(m, "n_fwd", r->fwd.pure);
    bus_msg_set_u64(m, "n_rev", r->rev.pure);
    if (isfinite(r->rtt_min_ns)) {
        bus_msg_set_double(m, "rtt_min_ns", round(r->rtt_min_ns));
        bus_msg_set_double(m, "rtt_median_ns", round(r->rtt_median_ns));
        bus_msg_set_double(m, "rtt_p99_ns", round(r->rtt_p99_ns));
    }
    bus_msg_set_str(m, "estimator", self->est->name);
    bus_msg_set_i64(m, "guard_fwd_ns", r->purity.guard_ns[0]);
    bus_msg_set_i64(m, "guard_rev_ns", r->purity.guard_ns[1]);
    if (r->fitted) {
        bus_msg_set_double(m, "offset_ns", round(r->fit.offset_ns * 1000) / 1000);
        bus_msg_set_double(m, "drift_ppb", round(r->fit.drift_ppb * 1000) / 1000);
        bus_msg_set_double(m, "uncertainty_ns", round(r->fit.uncertainty_ns * 1000) / 1000);
        if (isfinite(r->fit.margin_ns))
            bus_msg_set_double(m, "margin_ns", round(r->fit.margin_ns * 1000) / 1000);
        if (r->fit.step)
            bus_msg_set_bool(m, "step", true);
    } else {
        bus_msg_set_str(m, "fit_error", r->err);
    }
    bus_msg_set_i64(m, "from_ns", r->from_ns);
    bus_msg_set_i64(m, "to_ns", r->to_ns);
    publish(self, m);
    bus_msg_destroy(&m);
    if (r->fitted) {
        json_object *o = clock_json_edge_fit(&r->fit);
        m = msg_from_json(BUS_K_EDGE_FIT, o);
        json_object_put(o);
        publish(self, m);
        bus_msg_destroy(&m);
    }
}

static void close_windows(node_agent_t *self)
{
    int64_t now = probe_now(self);
    if (!self->win_started) {
        self->next_close_k = node_window_of(now, self->window_ns);
        self->win_started = true;
    }
    /* After a long stall, close only the latest complete window. */
    int64_t last_due = node_window_of(now - self->grace_ns, self->window_ns) - 1;
    if (last_due - self->next_close_k > 4)
        self->next_close_k = last_due;
    while ((self->next_close_k + 1) * self->window_ns + self->grace_ns <= now) {
        struct node_peer_count counts[256];
        size_t nc = node_prober_peer_counts(self->prober, counts, BASE_ARRAY_LEN(counts));
        size_t n = node_windows_close(self->win, self->next_close_k, counts, nc, self->results,
                                      MAX_RESULTS);
        if (welcomed(self))
            for (size_t i = 0; i < n; i++)
                publish_result(self, &self->results[i]);
        self->next_close_k++;
    }
    if (self->probe_log && !self->probe_log_failed && fflush(self->probe_log) != 0) {
        self->probe_log_failed = true;
        alog(self, BASE_LOG_ERROR, "probe log: write failed (%s); logging stops", strerror(errno));
    }
}

static int64_t next_close_mono(node_agent_t *self)
{
    if (!self->win_started)
        return base_monotonic_ns();
    int64_t due = (self->next_close_k + 1) * self->window_ns + self->grace_ns;
    /* Probe time and monotonic time run at the same rate give or take the
     * simulated drift; a late wake-up only delays the close a little. */
    return base_monotonic_ns() + (due - probe_now(self));
}

/* ---- snapshot pairs, status ------------------------------------------------ */

/*
 * One snapshot pair: a reading of `clock` on both sides of the probe
 * clock (CLOCK_REALTIME); the pair is the probe reading and the midpoint of
 * the two others, so its error is at most half the bracket.  A preemption
 * inside the bracket on a loaded host would make that tens of
 * microseconds: keep the tightest of a few tries.
 */
static void read_pair(clockid_t clock, int64_t *mid, int64_t *real, int64_t *bracket)
{
    int64_t m1 = 0, t = 0, m2 = INT64_MAX / 2;
    for (int i = 0; i < 5 && m2 - m1 > 2000; i++) {
        int64_t a = base_time_ns(clock);
        int64_t b = base_realtime_ns();
        int64_t c = base_time_ns(clock);
        if (c - a < m2 - m1) {
            m1 = a;
            t = b;
            m2 = c;
        }
    }
    *mid = m1 + (m2 - m1) / 2;
    *real = t;
    *bracket = m2 - m1;
}

static void publish_pair(node_agent_t *self, const char *domain, int64_t a, int64_t probe,
                         int64_t bracket)
{
    bus_msg_t *m = bus_msg_new(BUS_K_SNAP);
    bus_msg_set_i64(m, "node", self->id);
    bus_msg_set_i64(m, "pid", 0);
    bus_msg_set_str(m, "a", domain);
    bus_msg_set_str(m, "b", "probe");
    json_object *pairs = json_object_new_array();
    json_object *p = json_object_new_array();
    json_object_array_add(p, json_object_new_int64(a));
    json_object_array_add(p, json_object_new_int64(probe));
    json_object_array_add(pairs, p);
    json_object_object_add(bus_msg_header(m), "pairs", pairs);
    bus_msg_set_i64(m, "read_ns", bracket);
    publish(self, m);
    bus_msg_destroy(&m);
}

static void publish_snapshot(node_agent_t *self)
{
    int64_t mono, real, bracket;
    read_pair(CLOCK_MONOTONIC, &mono, &real, &bracket);
    publish_pair(self, "trace", trace_of_mono(self, mono),
                 self->has_sim ? clock_sim_apply(self->sim, real) : real, bracket);
    /*
     * CLOCK_BOOTTIME, what rocprofv3 stamps with: CLOCK_MONOTONIC plus the
     * time suspended, so a simulated clock distorts it as it does the trace
     * clock (the same correction at the same moment).
     */
    int64_t boot;
    read_pair(CLOCK_BOOTTIME, &boot, &real, &bracket);
    int64_t corr = self->has_sim ? trace_of_mono(self, mono) - mono : 0;
    publish_pair(self, "boottime", boot + corr,
                 self->has_sim ? clock_sim_apply(self->sim, real) : real, bracket);
}

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

static void merge_dec(uint64_t *acc, const base_decstats_t *st)
{
    for (int i = 1; i < BASE_DEC_NKINDS; i++)
        acc[i] += st->n[i];
}

/*
 * Rejected input gets a line, locally and on the bus: what each decoder
 * refused since the line before (the counts the console's REJ sums; the
 * counters themselves go out in every status).  The lines back off while
 * the input keeps coming (10 s, then twice as long each time, up to about
 * 10 min) and start again at 10 s after a quiet spell as long: a host whose
 * device reads fail every period does not speak every 10 s for ever.
 */
static void report_rejects(node_agent_t *self, const uint64_t tot[REJ_SOURCES])
{
    static const char *const what[REJ_SOURCES] = {"probe datagrams",        "device readings",
                                                  "local link messages",    "registration messages",
                                                  "messages to the master", "messages to the hub"};
    int64_t now = base_monotonic_ns();
    if (self->rej_interval_ns == 0)
        self->rej_interval_ns = REJ_REPORT_NS;
    bool any = false;
    for (int i = 0; i < REJ_SOURCES; i++)
        any |= tot[i] > self->rej_reported[i];
    bool due = self->rej_reported_ns == 0 || now - self->rej_reported_ns >= self->rej_interval_ns;
    if (!any) {
        if (due)
            self->rej_interval_ns = REJ_REPORT_NS;
        return;
    }
    if (!due)
        return;
    char line[256];
    size_t off = (size_t)snprintf(line, sizeof line, "rejected input:");
    for (int i = 0; i < REJ_SOURCES && off < sizeof line; i++)
        if (tot[i] > self->rej_reported[i])
            off += (size_t)snprintf(line + off, sizeof line - off, " %llu %s",
                                    (unsigned long long)(tot[i] - self->rej_reported[i]), what[i]);
    if (tot[2] > self->rej_reported[2] && self->ingest && off < sizeof line)
        snprintf(line + off, sizeof line - off, "; the link's last: %s",
                 gpu_ingest_last_error(self->ingest));
    alog(self, BASE_LOG_WARN, "%s", line);
    memcpy(self->rej_reported, tot, sizeof self->rej_reported);
    self->rej_reported_ns = now;
    if (self->rej_interval_ns < 64 * REJ_REPORT_NS)
        self->rej_interval_ns *= 2;
}

static void publish_status(node_agent_t *self, int64_t period_ns)
{
    alerts_flush(self);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    int64_t wall = base_monotonic_ns();
    if (self->ru_wall_last != 0 && wall > self->ru_wall_last) {
        double used = tv_s(ru.ru_utime) + tv_s(ru.ru_stime) - tv_s(self->ru_last.ru_utime) -
                      tv_s(self->ru_last.ru_stime);
        self->cpu_pct = 100.0 * used / ((double)(wall - self->ru_wall_last) / 1e9);
        if (self->cpu_pct < 0)
            self->cpu_pct = 0;
    }
    self->ru_last = ru;
    self->ru_wall_last = wall;
    read_metrics(self);

    struct node_prober_stats ps;
    node_prober_stats(self->prober, &ps);
    struct node_windows_stats ws;
    node_windows_stats(self->win, &ws);
    struct bus_pub_stats bs;
    bus_pub_stats(self->pub, &bs);
    uint64_t dec[BASE_DEC_NKINDS] = {0};
    merge_dec(dec, &ps.dec);
    merge_dec(dec, &self->metrics_dec);
    if (self->ingest)
        merge_dec(dec, gpu_ingest_stats(self->ingest));
    if (self->reg)
        merge_dec(dec, bus_reg_decstats(self->reg));
    struct node_master_stats ms;
    struct bus_hub_stats hs;
    if (self->master) {
        node_master_stats(self->master, &ms);
        merge_dec(dec, &ms.dec);
        /* What the hub refused: registration junk, malformed bus messages. */
        bus_hub_stats(node_master_hub(self->master), &hs);
        merge_dec(dec, &hs.dec);
    }
    uint64_t ev_drops = self->ev_bus_drops + self->ev_unregistered;
    for (size_t i = 0; i < self->nprocs; i++)
        ev_drops += self->procs[i].dropped;
    uint64_t rej[REJ_SOURCES] = {
        base_decstats_errors(&ps.dec),
        base_decstats_errors(&self->metrics_dec),
        self->ingest ? base_decstats_errors(gpu_ingest_stats(self->ingest)) : 0,
        self->reg ? base_decstats_errors(bus_reg_decstats(self->reg)) : 0,
        self->master ? base_decstats_errors(&ms.dec) : 0,
        self->master ? base_decstats_errors(&hs.dec) : 0,
    };
    report_rejects(self, rej);

    bus_msg_t *m = bus_msg_new(BUS_K_STATUS);
    json_object *h = bus_msg_header(m);
    bus_msg_set_i64(m, "node", self->id);
    bus_msg_set_i64(m, "t_ns", probe_now(self));
    bus_msg_set_u64(m, "probes_sent", ps.pairs_sent);
    bus_msg_set_u64(m, "probes_recv", ps.samples_in);
    bus_msg_set_u64(m, "probes_garbage", ps.garbage);
    bus_msg_set_u64(m, "probes_forged", ps.forged + ps.replayed + ps.misaddressed + ps.held);
    double secs = (double)period_ns / 1e9;
    bus_msg_set_double(m, "events_per_s",
                       secs > 0 ? round((double)self->events_period / secs * 10) / 10 : 0);
    bus_msg_set_u64(m, "ev_drops", ev_drops);
    json_object *decmap = json_object_new_object();
    for (int i = 1; i < BASE_DEC_NKINDS; i++)
        json_object_object_add(decmap, base_dec_name((enum base_dec)i),
                               json_object_new_uint64(dec[i]));
    json_object_object_add(h, "dec_errors", decmap);
    bus_msg_set_double(m, "cpu_pct", round(self->cpu_pct * 1000) / 1000);
    /* Beyond the schema: the details behind the counters above. */
    bus_msg_set_u64(m, "probes_forged_mac", ps.forged);
    bus_msg_set_u64(m, "probes_replayed", ps.replayed);
    bus_msg_set_u64(m, "probes_misaddressed", ps.misaddressed);
    bus_msg_set_u64(m, "probes_held", ps.held);
    bus_msg_set_u64(m, "probes_unknown", ps.unknown);
    bus_msg_set_u64(m, "probe_packets_sent", ps.packets_sent);
    bus_msg_set_u64(m, "probe_packets_received", ps.packets_received);
    bus_msg_set_u64(m, "probe_send_errors", ps.send_errors);
    bus_msg_set_u64(m, "probe_samples_out", ps.samples_out);
    bus_msg_set_u64(m, "probe_lost_packets", ps.lost_packets);
    bus_msg_set_u64(m, "probe_lost_pairs", ps.lost_pairs);
    bus_msg_set_u64(m, "probe_queue_drops", ps.queue_drops);
    bus_msg_set_bool(m, "kernel_timestamps", node_prober_kernel_timestamps(self->prober));
    bus_msg_set_bool(m, "probe_mac", node_prober_has_key(self->prober));
    bus_msg_set_u64(m, "tx_user_ts", ps.tx_user_ts);
    bus_msg_set_u64(m, "rx_user_ts", ps.rx_user_ts);
    bus_msg_set_u64(m, "win_samples", ws.added);
    bus_msg_set_u64(m, "win_late", ws.late);
    bus_msg_set_u64(m, "win_full", ws.full);
    bus_msg_set_u64(m, "win_fits", ws.fits);
    bus_msg_set_u64(m, "win_fit_errors", ws.fit_errors);
    bus_msg_set_u64(m, "bus_sent", bs.sent);
    bus_msg_set_u64(m, "bus_drops", bs.dropped);
    bus_msg_set_u64(m, "events", self->events);
    bus_msg_set_u64(m, "ev_bus_drops", self->ev_bus_drops);
    bus_msg_set_u64(m, "ev_unregistered", self->ev_unregistered);
    bus_msg_set_u64(m, "ingest_rebinds", self->ingest_rebinds);
    bus_msg_set_u64(m, "gpu_msgs_bad", self->gpu_msgs_bad);
    bus_msg_set_i64(m, "procs", (int64_t)self->nprocs);
    bus_msg_set_u64(m, "names_dropped", self->names_dropped);
    uint64_t scope_evicted = 0;
    for (size_t i = 0; i < self->nprocs; i++)
        if (self->procs[i].scope)
            scope_evicted += gpu_scopetree_evicted(self->procs[i].scope);
    bus_msg_set_u64(m, "scope_kept_evicted", scope_evicted);
    if (self->ingest) {
        const base_decstats_t *is = gpu_ingest_stats(self->ingest);
        bus_msg_set_u64(m, "ingest_msgs", is->n[BASE_DEC_OK]);
        bus_msg_set_u64(m, "ingest_errors", base_decstats_errors(is));
    }
    if (self->wl) {
        struct gpu_source_counters c;
        self->wl_src->counters(self->wl, &c);
        bus_msg_set_u64(m, "sim_steps", c.steps);
        bus_msg_set_u64(m, "sim_skipped", c.skipped);
    }
    if (self->probe_log)
        bus_msg_set_u64(m, "probe_log_lines", self->probe_log_lines);
    bus_msg_set_double(m, "uptime_s",
                       round((double)(base_monotonic_ns() - self->start_mono) / 1e7) / 100);
    bus_msg_set_i64(m, "epoch", self->epoch);
    if (self->master) {
        size_t up, known;
        node_master_counts(self->master, &up, &known);
        bus_msg_set_i64(m, "nodes_up", (int64_t)up);
        bus_msg_set_i64(m, "nodes_known", (int64_t)known);
        bus_msg_set_u64(m, "solves", ms.solves);
        bus_msg_set_u64(m, "solve_errors", ms.solve_errors);
        bus_msg_set_u64(m, "refines", ms.refines);
        bus_msg_set_u64(m, "refine_errors", ms.refine_errors);
        bus_msg_set_u64(m, "edge_fits_in", ms.edge_fits);
        bus_msg_set_u64(m, "edge_fits_late", ms.edge_fits_late);
        bus_msg_set_u64(m, "edge_fits_bad", ms.edge_fits_bad);
        bus_msg_set_u64(m, "edge_fits_ahead", ms.edge_fits_ahead);
        bus_msg_set_u64(m, "edge_fits_dropped", ms.edge_fits_dropped);
        bus_msg_set_u64(m, "edge_fits_replaced", ms.edge_fits_replaced);
        bus_msg_set_u64(m, "edge_fits_unknown", ms.edge_fits_unknown);
        bus_msg_set_u64(m, "table_full", ms.table_full);
        bus_msg_set_u64(m, "clock_back", ms.clock_back);
        bus_msg_set_u64(m, "steps_between", ms.steps_between);
        bus_msg_set_u64(m, "history_ignored", ms.history_ignored);
        bus_msg_set_u64(m, "hub_cache_msgs", hs.cache_msgs);
        bus_msg_set_u64(m, "hub_cache_bytes", hs.cache_bytes);
        bus_msg_set_u64(m, "hub_cache_evicted", hs.cache_evicted);
        bus_msg_set_u64(m, "hub_cache_foreign", hs.cache_foreign);
        bus_msg_set_u64(m, "hub_cache_foreign_evicted", hs.cache_foreign_evicted);
        bus_msg_set_u64(m, "hub_state_reqs", hs.state_reqs);
        bus_msg_set_u64(m, "hub_auth_denied", hs.auth_denied);
    }
    json_object *gpus = json_object_new_array();
    for (size_t i = 0; i < self->ncards; i++) {
        const gpu_metrics_t *c = &self->cards[i];
        json_object *g = json_object_new_object();
        json_object_object_add(g, "index", json_object_new_int64(c->card));
        if (c->vendor)
            json_object_object_add(g, "vendor", json_object_new_string(c->vendor));
        if (c->valid & GPU_MET_BUSY)
            json_object_object_add(g, "busy_pct", json_object_new_double(c->busy_pct));
        if (c->valid & GPU_MET_VRAM_USED)
            json_object_object_add(g, "vram_used_bytes", json_object_new_uint64(c->vram_used));
        if (c->valid & GPU_MET_VRAM_TOTAL)
            json_object_object_add(g, "vram_total_bytes", json_object_new_uint64(c->vram_total));
        if (c->valid & GPU_MET_POWER)
            json_object_object_add(g, "power_w", json_object_new_double((double)c->power_uw / 1e6));
        if (c->valid & GPU_MET_TEMP)
            json_object_object_add(g, "temp_c", json_object_new_double((double)c->temp_mc / 1e3));
        json_object_array_add(gpus, g);
    }
    if (self->wl) {
        /* The simulated GPU is as busy as its work covers the period (two
         * streams can overlap, hence the cap). */
        double busy = secs > 0 ? 100.0 * self->busy_ns_period / ((double)period_ns) : 0;
        json_object *g = json_object_new_object();
        json_object_object_add(g, "index", json_object_new_int64(self->wl_cfg.device));
        json_object_object_add(g, "busy_pct",
                               json_object_new_double(round((busy > 100 ? 100 : busy) * 10) / 10));
        json_object_array_add(gpus, g);
    }
    json_object_object_add(h, "gpus", gpus);
    publish(self, m);
    bus_msg_destroy(&m);
    self->events_period = 0;
    self->busy_ns_period = 0;
}

/* ---- registration (agents) ------------------------------------------------ */

static void close_workload(node_agent_t *self)
{
    if (self->wl != NULL)
        self->wl_src->close(self->wl);
    self->wl = NULL;
}

static void set_identity(node_agent_t *self, int id)
{
    if (id == self->id)
        return;
    bool first = self->id < 0;
    self->id = id;
    bus_pub_set_node(self->pub, id);
    if (self->reg)
        bus_reg_set_node(self->reg, id);
    node_prober_set_self(self->prober, (uint32_t)id);
    make_windows(self);
    if (self->sim_workload) {
        /* The straggler is picked by node id: the workload starts now. */
        close_workload(self);
        if (self->wl_cfg.seed == 0)
            self->wl_cfg.seed = (uint64_t)id + 1;
        const struct gpu_sim_cfg *c = &self->wl_cfg;
        char opts[256], err[BASE_ERRLEN];
        snprintf(
            opts, sizeof opts,
            "step_us=%lld,layers=%u,straggler=%d,late_ns=%lld,jitter_us=%lld,seed=%llu,device=%u",
            (long long)(c->step_period_ns / 1000), c->layers, c->straggler_node,
            (long long)c->straggler_late_ns, (long long)(c->jitter_ns / 1000),
            (unsigned long long)c->seed, c->device);
        struct gpu_source_opts so = {.node = (uint16_t)id,
                                     .pid = c->pid,
                                     .options = opts,
                                     .clock = wl_clock,
                                     .clock_ctx = self};
        self->wl_src = gpu_source_find("sim");
        self->wl = self->wl_src ? self->wl_src->open(&so, err) : NULL;
        if (self->wl == NULL)
            base_log(BASE_LOG_ERROR, "node", "simulated workload: %s",
                     self->wl_src ? err : "no sim GPU source");
    }
    if (!first)
        base_log(BASE_LOG_WARN, "node", "node id changed to %d", id);
}

static void send_hello(node_agent_t *self)
{
    bus_msg_t *m = hello_msg(self, false);
    char err[BASE_ERRLEN];
    if (bus_reg_send(self->reg, m, err) == BASE_ERR)
        base_log(BASE_LOG_WARN, "node", "hello: %s", err);
    bus_msg_destroy(&m);
    self->last_hello = base_monotonic_ns();
}

static void on_welcome(node_agent_t *self, bus_msg_t *msg)
{
    json_object *h = bus_msg_header(msg);
    const char *inst = NULL;
    base_json_opt_str(h, "instance", &inst, NULL);
    if (inst && strcmp(inst, self->instance) != 0)
        return; /* for an earlier incarnation of this agent */
    int64_t id, ref, epoch, cad, spc, snap, hb, st = self->status_ns / 1000000;
    double win;
    base_json_get_i64(h, "node", &id, NULL);
    base_json_get_i64(h, "ref", &ref, NULL);
    base_json_get_i64(h, "epoch", &epoch, NULL);
    base_json_get_double(h, "window_s", &win, NULL);
    base_json_get_i64(h, "cadence_us", &cad, NULL);
    base_json_get_i64(h, "spacing_us", &spc, NULL);
    base_json_get_i64(h, "snapshot_period_ms", &snap, NULL);
    base_json_get_i64(h, "hb_period_ms", &hb, NULL);
    base_json_opt_i64(h, "status_period_ms", &st, NULL);
    /* The master's schedule is the cluster's: windows must line up. */
    int64_t wns = (int64_t)llround(win * 1e9);
    bool retime = cad * 1000 != self->cadence_ns || spc * 1000 != self->spacing_ns;
    bool rewin = wns != self->window_ns || cad * 1000 != self->cadence_ns;
    self->cadence_ns = cad * 1000;
    self->spacing_ns = spc * 1000;
    self->window_ns = wns;
    self->snapshot_ns = snap * 1000000;
    self->hb_ns = hb * 1000000;
    if (st >= 50) {
        self->status_ns = st * 1000000;
        node_devices_set_period(self->devices, self->status_ns);
    }
    char err[BASE_ERRLEN];
    if (retime &&
        node_prober_set_timing(self->prober, self->cadence_ns, self->spacing_ns, err) != BASE_OK)
        base_log(BASE_LOG_ERROR, "node", "master's probe schedule refused: %s", err);
    /* The cluster's probe key, unless this agent was given its own. */
    const char *ktext = NULL;
    uint8_t key[NODE_PROBE_KEY_SIZE];
    base_json_opt_str(h, "probe_key", &ktext, NULL);
    if (ktext && !self->key_configured) {
        if (node_parse_key(ktext, key, err) == BASE_OK) {
            if (!node_prober_has_key(self->prober))
                base_log(BASE_LOG_INFO, "node", "probes carry a MAC with the cluster's key");
            node_prober_set_key(self->prober, key);
        } else {
            alog(self, BASE_LOG_WARN, "the welcome's probe key is refused: %s", err);
        }
    }
    bool new_id = id != self->id;
    self->ref = (int)ref;
    self->epoch = epoch;
    self->rstate = REG_OK;
    self->last_ack = base_monotonic_ns();
    self->hello_since = 0;
    set_identity(self, (int)id);
    if (rewin && !new_id)
        make_windows(self);
    self->announce_due = true;
    base_log(BASE_LOG_INFO, "node",
             "welcomed as node %d (reference %d, window %g s, cadence %" PRId64
             " us, spacing %" PRId64 " us)",
             self->id, self->ref, (double)self->window_ns / 1e9, self->cadence_ns / 1000,
             self->spacing_ns / 1000);
}

static void on_reg_msg(node_agent_t *self, bus_msg_t *msg)
{
    switch (bus_msg_kind(msg)) {
    case BUS_K_WELCOME:
        on_welcome(self, msg);
        break;
    case BUS_K_PLAN: {
        if (self->id < 0)
            break;
        struct node_plan plan;
        char err[BASE_ERRLEN];
        if (node_plan_from_json(bus_msg_header(msg), &plan, err) != BASE_DEC_OK) {
            base_log(BASE_LOG_WARN, "node", "plan refused: %s", err);
            break;
        }
        apply_plan(self, &plan);
        node_plan_free(&plan);
        break;
    }
    case BUS_K_HB: {
        bool known = true;
        base_json_opt_bool(bus_msg_header(msg), "known", &known, NULL);
        if (!known && self->rstate == REG_OK) {
            base_log(BASE_LOG_WARN, "node", "the master does not know node %d: registering again",
                     self->id);
            self->rstate = REG_HELLO;
            send_hello(self);
        } else if (known) {
            self->last_ack = base_monotonic_ns();
        }
        break;
    }
    default:
        break;
    }
}

static int poll_reg(node_agent_t *self, int wait_ms, char *err)
{
    for (int i = 0; i < 64; i++) {
        bus_msg_t *msg = NULL;
        int rc = bus_reg_recv(self->reg, &msg, i == 0 ? wait_ms : 0, err);
        if (rc < 0)
            return BASE_ERR;
        if (rc == 0)
            return BASE_OK;
        on_reg_msg(self, msg);
        bus_msg_destroy(&msg);
    }
    return BASE_OK;
}

static void registration(node_agent_t *self)
{
    int64_t now = base_monotonic_ns();
    if (self->rstate == REG_HELLO) {
        int64_t every = self->hb_ns < 1000000000 ? self->hb_ns : 1000000000;
        if (now - self->last_hello >= every)
            send_hello(self);
        /* Nothing answers (a wrong --hub, a master not started): say so, less and less often. */
        if (self->hello_since == 0) {
            self->hello_since = now;
            self->hello_warn = 5000000000LL;
        } else if (now - self->hello_since >= self->hello_warn) {
            /* A master that refuses this CURVE key looks the same from here. */
            base_log(BASE_LOG_WARN, "node",
                     "no answer from a master at %s for %.0f s (is it running, and is that its "
                     "registration port?%s): still trying",
                     self->hub, (double)(now - self->hello_since) / 1e9,
                     self->client_curve ? " With CURVE, a master refusing this key looks the "
                                          "same: check its authorized_keys and hub.public"
                                        : "");
            self->hello_warn *= 2;
        }
        return;
    }
    if (now - self->last_hb >= self->hb_ns) {
        bus_msg_t *m = bus_msg_new(BUS_K_HB);
        bus_msg_set_i64(m, "node", self->id);
        bus_msg_set_i64(m, "t_ns", probe_now(self));
        bus_msg_set_i64(m, "epoch", self->epoch);
        bus_msg_set_double(m, "uptime_s", (double)(now - self->start_mono) / 1e9);
        char err[BASE_ERRLEN];
        if (bus_reg_send(self->reg, m, err) == BASE_ERR)
            base_log(BASE_LOG_WARN, "node", "heartbeat: %s", err);
        bus_msg_destroy(&m);
        self->last_hb = now;
    }
    /* No answer to three heartbeats: the master is gone or restarted. */
    if (now - self->last_ack > self->hb_ns * 7 / 2) {
        base_log(BASE_LOG_WARN, "node", "no answer from the master for %.1f s: registering again",
                 (double)(now - self->last_ack) / 1e9);
        self->rstate = REG_HELLO;
        send_hello(self);
    }
}

/* ---- life cycle ------------------------------------------------------------ */

static int open_probe_log(node_agent_t *self, const base_config_t *cfg, char *err)
{
    const char *path = base_config_str(cfg, "probe_log");
    if (*path == '\0')
        return BASE_OK;
    char full[1024];
    const char *dir = base_config_str(cfg, "output_dir");
    if (path[0] != '/' && strcmp(dir, ".") != 0) {
        if (mkdir(dir, 0755) != 0 && errno != EEXIST)
            return base_err(err, "output_dir: cannot create %s: %s", dir, strerror(errno));
        snprintf(full, sizeof full, "%s/%s", dir, path);
    } else {
        snprintf(full, sizeof full, "%s", path);
    }
    self->probe_log = fopen(full, "w");
    if (self->probe_log == NULL)
        return base_err(err, "probe_log: cannot open %s: %s", full, strerror(errno));
    base_log(BASE_LOG_INFO, "node", "probe log %s", full);
    return BASE_OK;
}

node_agent_t *node_agent_new(const base_config_t *cfg, char *err)
{
    node_agent_t *self = xcalloc(1, sizeof *self);
    self->id = -1;
    self->pid = (int)getpid();
    self->start_mono = base_monotonic_ns();
    self->is_master = base_config_bool(cfg, "master");
    self->req_id = (int)base_config_int(cfg, "node_id");
    self->cadence_ns = base_config_int(cfg, "probe_cadence_us") * 1000;
    self->spacing_ns = base_config_int(cfg, "packet_spacing_us") * 1000;
    self->window_ns = (int64_t)llround(base_config_double(cfg, "probe_window_s") * 1e9);
    self->snapshot_ns = base_config_int(cfg, "snapshot_period_ms") * 1000000;
    self->hb_ns = base_config_int(cfg, "heartbeat_ms") * 1000000;
    self->status_ns = base_config_int(cfg, "status_period_ms") * 1000000;
    self->forget_ns = base_config_int(cfg, "forget_down_s") * 1000000000;
    self->refine_lag = (int)base_config_int(cfg, "refine_windows");
    self->stamp_asym_ns = base_config_double(cfg, "stamp_asym_ns");
    self->margin_z = base_config_double(cfg, "margin_z");
    self->guard_ns = base_config_int(cfg, "guard_ns");
    self->k = (int)base_config_int(cfg, "neighbors");
    self->ref_cfg = (int)base_config_int(cfg, "ref_node");
    self->est = clock_estimator_find(base_config_str(cfg, "estimator"));
    snprintf(self->hub, sizeof self->hub, "%s", base_config_str(cfg, "hub"));
    snprintf(self->listen, sizeof self->listen, "%s", base_config_str(cfg, "listen"));
    snprintf(self->sysfs_root, sizeof self->sysfs_root, "%s", base_config_str(cfg, "sysfs_root"));
    random_instance(self->instance, sizeof self->instance);
    if (gethostname(self->host, sizeof self->host) != 0)
        snprintf(self->host, sizeof self->host, "unknown");
    self->host[sizeof self->host - 1] = '\0';
    self->drain = xcalloc(DRAIN_CHUNK, sizeof *self->drain);
    self->results = xcalloc(MAX_RESULTS, sizeof *self->results);
    if (self->est == NULL) {
        base_err(err, "invalid value for estimator");
        goto err;
    }

    /* Clocks: t0 and m0 back to back, as SPEC §4.6 and docs/DESIGN.md define them. */
    self->simp.t0_ns = base_realtime_ns();
    self->simp.m0_ns = base_monotonic_ns();
    const char *spec = base_config_str(cfg, "sim_clock");
    if (*spec) {
        if (clock_sim_parse_spec(spec, &self->simp, err) != BASE_OK)
            goto err;
        self->simp.seed = (uint64_t)base_config_int(cfg, "sim_seed");
        if (self->simp.seed == 0)
            self->simp.seed = (uint64_t)self->simp.t0_ns ^ ((uint64_t)self->pid << 20);
        self->has_sim = true;
        self->sim = clock_sim_new(&self->simp);
        self->sim_prober = clock_sim_new(&self->simp);
    }

    /* Security. */
    const char *cdir = base_config_str(cfg, "curve_dir");
    if (*cdir && node_curve_load(cdir, self->is_master, &self->client_curve, &self->server_curve,
                                 err) != BASE_OK)
        goto err;

    /*
     * The probe socket.  Without --probe-key the master draws a key for the
     * cluster and hands it out in the welcome, so that a cluster where
     * nobody set one is still safe from spoofed probes (a probe without the
     * MAC is counted as forged, never fitted).
     */
    uint8_t key[NODE_PROBE_KEY_SIZE];
    const char *keytext = base_config_str(cfg, "probe_key");
    if (*keytext && node_parse_key(keytext, key, err) != BASE_OK)
        goto err;
    self->key_configured = *keytext != '\0';
    bool have_key = self->key_configured;
    if (!have_key && self->is_master) {
        random_bytes(key, sizeof key);
        have_key = true;
    }
    if (self->is_master && have_key)
        for (size_t i = 0; i < NODE_PROBE_KEY_SIZE; i++)
            snprintf(self->probe_key_hex + 2 * i, 3, "%02x", key[i]);
    int master_id = self->req_id >= 0 ? self->req_id : 0;
    struct node_prober_cfg pc = {
        .bind_ip = base_config_str(cfg, "bind_ip"),
        .port = (uint16_t)base_config_int(cfg, "probe_port"),
        .self_id = self->is_master ? (uint32_t)master_id : UINT32_MAX,
        .spacing_ns = self->spacing_ns,
        .cadence_ns = self->cadence_ns,
        .jitter = 0.1,
        .clock = self->has_sim ? prober_clock : NULL,
        .clock_ctx = self->sim_prober,
        .user_timestamps = base_config_bool(cfg, "user_timestamps"),
        .key = have_key ? key : NULL,
    };
    if (node_parse_sim_delay(base_config_str(cfg, "sim_path_delay"), pc.sim_delay, &pc.n_sim_delay,
                             err) != BASE_OK)
        goto err;
    self->prober = node_prober_new(&pc, err);
    if (self->prober == NULL)
        goto err;
    int family = strchr(pc.bind_ip, ':') ? AF_INET6 : AF_INET;
    if (!self->is_master)
        resolve_hub(self, family);
    probe_address(self, family);
    if (node_prober_kernel_timestamps(self->prober))
        base_log(BASE_LOG_INFO, "node", "probe socket %s (kernel timestamps)", self->probe_addr);
    else
        alog(self, BASE_LOG_WARN,
             "probe socket %s: no kernel timestamps, user-space ones (µs of noise a probe)",
             self->probe_addr);
    if (open_probe_log(self, cfg, err) != BASE_OK)
        goto err;

    /* GPU side. */
    struct node_devices_cfg dc = {.sysfs_root = self->sysfs_root,
                                  .nvml_library = base_config_str(cfg, "nvml_library"),
                                  .period_ns = self->status_ns};
    self->devices = node_devices_new(&dc, err);
    if (self->devices == NULL)
        goto err;
    read_metrics(self);
    self->sim_workload = base_config_bool(cfg, "sim_workload");
    gpu_sim_defaults(&self->wl_cfg);
    self->wl_cfg.pid = (uint32_t)self->pid;
    self->wl_cfg.device = (uint16_t)self->nhello_cards;
    self->wl_cfg.step_period_ns = (int64_t)llround(base_config_double(cfg, "sim_step_ms") * 1e6);
    self->wl_cfg.layers = (uint32_t)base_config_int(cfg, "sim_layers");
    self->wl_cfg.straggler_node = (int32_t)base_config_int(cfg, "sim_straggler");
    self->wl_cfg.straggler_late_ns = llround(base_config_double(cfg, "sim_late_us") * 1000);
    self->wl_cfg.jitter_ns = base_config_int(cfg, "sim_jitter_us") * 1000;
    self->wl_cfg.seed = (uint64_t)base_config_int(cfg, "sim_seed");
    if (open_ingest(self, cfg, err) != BASE_OK)
        goto err;
    if (self->ingest)
        base_log(BASE_LOG_INFO, "node", "trace endpoint %s", self->trace_ep);

    /* The bus. */
    char pubep[300];
    if (self->is_master) {
        struct node_master_cfg mc = {
            .listen = self->listen,
            .self_id = (uint32_t)master_id,
            .ref = self->ref_cfg,
            .k = self->k,
            .window_ns = self->window_ns,
            .cadence_ns = self->cadence_ns,
            .spacing_ns = self->spacing_ns,
            .snapshot_ns = self->snapshot_ns,
            .hb_ns = self->hb_ns,
            .status_ns = self->status_ns,
            .grace_ns = grace_for(self->window_ns, self->cadence_ns),
            .forget_ns = self->forget_ns,
            .refine_lag = self->refine_lag,
            .stamp_asym_ns = self->stamp_asym_ns,
            .margin_z = self->margin_z,
            .server_curve = self->server_curve,
            .client_curve = self->client_curve,
            .probe_key = self->probe_key_hex[0] ? self->probe_key_hex : NULL,
            .host = self->host,
            .version = DP_VERSION,
            .instance = self->instance,
            .probe_addr = self->probe_addr,
            .pid = self->pid,
            .probe_now = probe_now_cb,
            .on_plan = on_master_plan,
            .ctx = self,
        };
        self->master = node_master_new(&mc, err);
        if (self->master == NULL)
            goto err;
        bus_hub_t *hub = node_master_hub(self->master);
        base_log(BASE_LOG_INFO, "node", "hub %s (publishers %s, subscribers %s)",
                 bus_hub_endpoint(hub, BUS_HUB_REG), bus_hub_endpoint(hub, BUS_HUB_PUB),
                 bus_hub_endpoint(hub, BUS_HUB_SUB));
        struct bus_pub_opts po = {
            .endpoint = bus_hub_inproc_pub(hub), .node = master_id, .zctx = bus_hub_zctx(hub)};
        self->pub = bus_pub_new(&po, err);
        if (self->pub == NULL)
            goto err;
        node_master_set_pub(self->master, self->pub);
        self->rstate = REG_OK;
        set_identity(self, master_id);
        self->ref = self->ref_cfg >= 0 ? self->ref_cfg : master_id;
        self->announce_due = true;
        base_log(BASE_LOG_INFO, "node", "master is node %d", master_id);
    } else {
        struct bus_endpoints ep;
        if (bus_endpoints_derive(self->hub, &ep, err) != BASE_OK)
            goto err;
        const char *hub_pub = base_config_str(cfg, "hub_pub");
        snprintf(pubep, sizeof pubep, "%s", *hub_pub ? hub_pub : ep.pub);
        struct bus_pub_opts po = {
            .endpoint = pubep, .node = BUS_NODE_NONE, .curve = self->client_curve};
        self->pub = bus_pub_new(&po, err);
        if (self->pub == NULL)
            goto err;
        struct bus_reg_opts ro = {
            .endpoint = ep.reg, .node = BUS_NODE_NONE, .curve = self->client_curve};
        self->reg = bus_reg_new(&ro, err);
        if (self->reg == NULL)
            goto err;
        self->rstate = REG_HELLO;
        make_windows(self);
        base_log(BASE_LOG_INFO, "node", "registering with the master at %s", ep.reg);
    }
    if (node_prober_start(self->prober, err) != BASE_OK)
        goto err;
    return self;
err:
    node_agent_destroy(&self);
    return NULL;
}

void node_agent_destroy(node_agent_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    node_agent_t *self = *self_p;
    node_prober_destroy(&self->prober);
    if (self->ingest && strncmp(self->trace_ep, "ipc://", 6) == 0) {
        /* The socket file is ours (nobody served it when we bound it). */
        gpu_ingest_destroy(&self->ingest);
        unlink(self->trace_ep + 6);
    }
    gpu_ingest_destroy(&self->ingest);
    close_workload(self);
    bus_reg_destroy(&self->reg);
    bus_pub_destroy(&self->pub);
    node_master_destroy(&self->master);
    node_windows_destroy(&self->win);
    node_plan_free(&self->plan);
    if (self->probe_log)
        fclose(self->probe_log);
    clock_sim_destroy(&self->sim);
    clock_sim_destroy(&self->sim_prober);
    node_devices_destroy(&self->devices);
    node_curve_free(self->client_curve);
    node_curve_free(self->server_curve);
    for (size_t i = 0; i < self->nprocs; i++)
        free_proc(self, &self->procs[i]);
    free(self->drain);
    free(self->results);
    free(self);
    *self_p = NULL;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static void say_bye(node_agent_t *self)
{
    if (!welcomed(self))
        return;
    bus_msg_t *m = bus_msg_new(BUS_K_BYE);
    bus_msg_set_i64(m, "node", self->id);
    bus_msg_set_str(m, "reason", "stopped");
    if (self->reg) {
        char err[BASE_ERRLEN];
        if (bus_reg_send(self->reg, m, err) == BASE_ERR)
            base_log(BASE_LOG_WARN, "node", "bye: %s", err);
        bus_msg_destroy(&m);
        m = bus_msg_new(BUS_K_BYE);
        bus_msg_set_i64(m, "node", self->id);
        bus_msg_set_str(m, "reason", "stopped");
    }
    publish(self, m);
    bus_msg_destroy(&m);
    /* The registration socket does not linger: give its I/O thread a moment. */
    if (self->reg)
        base_sleep_ns(150000000);
}

int node_agent_run(node_agent_t *self, volatile sig_atomic_t *stop, char *err)
{
    assert(self && stop);
    int64_t now = base_monotonic_ns();
    self->next_snap = now;
    self->next_status = now + self->status_ns;
    self->next_wl = now;
    int64_t last_status = now;
    int rc = BASE_OK;
    while (!*stop) {
        now = base_monotonic_ns();
        int64_t due = min64(self->next_snap, self->next_status);
        due = min64(due, next_close_mono(self));
        if (self->wl)
            due = min64(due, self->next_wl);
        if (self->rstate == REG_OK && !self->is_master)
            due = min64(due, self->last_hb + self->hb_ns);
        int cap = self->ingest ? INGEST_WAIT_MS : MAX_WAIT_MS;
        int64_t wait_ms = (due - now + 999999) / 1000000;
        if (wait_ms < 0)
            wait_ms = 0;
        if (wait_ms > cap)
            wait_ms = cap;
        if (self->master) {
            if (node_master_tick(self->master, (int)wait_ms, err) != BASE_OK) {
                rc = BASE_ERR;
                break;
            }
        } else {
            if (poll_reg(self, (int)wait_ms, err) != BASE_OK) {
                rc = BASE_ERR;
                break;
            }
            registration(self);
        }
        if (self->ingest && gpu_ingest_poll(self->ingest, 0, MAX_INGEST_TICK, err) < 0) {
            base_log(BASE_LOG_WARN, "node", "trace endpoint: %s", err);
        }
        drain_prober(self);
        close_windows(self);
        now = base_monotonic_ns();
        bool ok = welcomed(self);
        /* Subscriptions arrive one kind at a time: a sim_truth sent before
         * its own has come is lost until the next announcement, 10 s on
         * (a master's, under load: every fit looked 3 ms off its truth). */
        if (ok &&
            (self->announce_due || self->hello_due ||
             now - self->last_announce >= ANNOUNCE_EVERY) &&
            bus_pub_subscribed(self->pub, BUS_K_HELLO) &&
            (!self->has_sim || bus_pub_subscribed(self->pub, BUS_K_SIM_TRUTH)))
            announce(self);
        if (now >= self->next_snap) {
            if (ok)
                publish_snapshot(self);
            self->next_snap += self->snapshot_ns;
            if (self->next_snap <= now)
                self->next_snap = now + self->snapshot_ns;
        }
        /* The workload starts once announced and once the hub's cache listens
         * to names and scope trees: each kind's subscription reaches the
         * publisher on its own, and a name table sent before would be lost. */
        if (self->wl && now >= self->next_wl && self->last_announce != 0 &&
            bus_pub_subscribed(self->pub, BUS_K_NAMES) &&
            bus_pub_subscribed(self->pub, BUS_K_SCOPE)) {
            if (ok && self->wl_src->poll(self->wl, base_realtime_ns(), on_sim, self, err) < 0)
                base_log(BASE_LOG_WARN, "node", "simulated workload: %s", err);
            self->next_wl = now + SIM_TICK_NS;
        }
        if (now >= self->next_status) {
            check_ingest_socket(self);
            if (ok)
                publish_status(self, now - last_status);
            last_status = now;
            self->next_status += self->status_ns;
            if (self->next_status <= now)
                self->next_status = now + self->status_ns;
        }
    }
    if (rc == BASE_OK) {
        base_log(BASE_LOG_INFO, "node", "stopping");
        say_bye(self);
    }
    return rc;
}
