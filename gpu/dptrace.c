/*
 * libdptrace core: process state, application threads, annotations, the
 * background thread and the local link to dpnode.
 *
 * Process state: libdptrace is loaded into someone else's process and has
 * no main(), so its state lives in ONE static struct, `dpt` below (the
 * exception docs/DESIGN.md allows).  Thread state is one initial-exec TLS
 * pointer, `dpt_self`.
 *
 * Data path: an application thread writes fixed-size records into its own
 * SPSC ring (gpu_int.h) and never waits; a full ring drops the record and
 * counts it.  The background thread wakes every 2 ms (sooner while a ring
 * fills fast), drains every ring, turns records into events (interning
 * names, recording the scope tree), hands GPU work to the backend (which
 * resolves its device times), and sends batches over the link without
 * blocking.  What the link refuses is
 * dropped and counted; the running total travels in every batch header and
 * is printed at exit.
 */
#include "gpu/dptrace.h"
#include "gpu/dptrace_int.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ID_BLOCK      1024    /* scope ids a thread takes at a time */
#define CORR_BLOCK    256     /* correlation ids a thread takes at a time */
#define CYCLE_NS      2000000 /* background thread period */
#define CYCLE_BUSY_NS 200000  /* its period while a ring fills faster than a quarter a cycle */
#define SCOPE_RECENT  65536   /* scope pairs kept to re-send on reconnect */
#define OPEN_MAX      1048576 /* open ranges the background thread tracks */
#define FINISH_NS     300000000
#define CONNECT_GRACE 500000000 /* batches wait this long for a first connection */
/* At exit, with a receiver's socket present, wait up to this long (from
 * the exit) for the connection: a loaded machine can take well over
 * CONNECT_GRACE, and a process may exit soon after a slow start. */
#define EXIT_CONNECT_WAIT 2000000000
/* At exit, the final drop count is offered this often, this far apart. */
#define LAST_WORD_TRIES   50
#define LAST_WORD_WAIT_NS 4000000
#define JOIN_S            3

enum { ST_IDLE, ST_RUNNING, ST_DISABLED };

/* Clock domains whose latest snapshot pair is kept (the HIP backend's 64
 * devices, CUPTI's clock and a spare). */
#define SNAP_DOMAINS 66

/* The latest snapshot pair of one pair of domains, re-sent with the state. */
struct dpt_snap_last {
    char a[GPU_DOMAIN_MAX + 1], b[GPU_DOMAIN_MAX + 1];
    struct gpu_snap_pair pair;
    bool sent; /* to the receiver now connected */
};

/* The longest snapshot period; an agents' DPTOP_SNAPSHOT_PERIOD_MS above it is cut to it. */
#define DPT_SNAPSHOT_MAX_MS 60000

static const struct base_cfg_key cfg_keys[] = {
    {"trace_enable", BASE_CFG_BOOL, "true", 0, -1, "trace this process"},
    {"trace_endpoint", BASE_CFG_STRING, "", 0, -1,
     "local link endpoint (empty: $XDG_RUNTIME_DIR/dptop-trace.sock or /tmp)"},
    {"trace_ring", BASE_CFG_INT, "8192", 256, 1048576, "ring records per application thread"},
    {"trace_hwm", BASE_CFG_INT, "64", 1, 100000, "messages queued on the link at most"},
    {"trace_flush_ms", BASE_CFG_INT, "20", 1, 10000, "longest wait before a batch is sent"},
    {"trace_snapshot_ms", BASE_CFG_INT, "100", 1, DPT_SNAPSHOT_MAX_MS,
     "GPU/trace snapshot pair period"},
    {"trace_pending", BASE_CFG_INT, "65536", 64, 16777216, "GPU operations awaiting completion"},
    {"trace_events", BASE_CFG_INT, "16384", 64, 1048576, "pooled HIP events per device"},
    {"trace_hip_library", BASE_CFG_STRING, "", 0, -1, "HIP runtime to forward to (empty: next)"},
    {"trace_quiet", BASE_CFG_BOOL, "false", 0, -1, "no summary line at exit unless drops"},
    {"trace_tsc", BASE_CFG_BOOL, "true", 0, -1,
     "stamp with the TSC where it drives CLOCK_MONOTONIC"},
    {"trace_inherit_step", BASE_CFG_BOOL, "false", 0, -1,
     "a thread with no range open and no steps of its own issues its work in the step open "
     "in the process (PyTorch's autograd thread); false: in no scope"},
    {"trace_cuda_api", BASE_CFG_STRING, "work", 0, -1,
     "CUDA runtime calls recorded: work (launches, copies, memsets, synchronisations, "
     "allocations) or all"},
};

/* The one process-wide state of libdptrace. */
static struct dpt_process {
    pthread_mutex_t mu; /* state, threads, start/stop */
    int state;
    bool atfork_set;
    uint32_t pid;
    char exe[256];
    int64_t t0;
    /* configuration */
    char endpoint[512];
    char hip_library[512];
    size_t ring_size;
    int hwm;
    int64_t flush_ns;
    bool quiet;
    bool inherit_step;       /* threads take the process's open step (dpt_inherit_slow) */
    bool tsc;                /* stamps are TSC ticks */
    gpu_clockmap_t *tsc_map; /* TSC -> CLOCK_MONOTONIC (background thread) */
    struct dpt_env env;
    /* ids */
    _Atomic uint64_t next_scope_block;
    /* steps open in the process (under step_mu), the one's id while exactly one is */
    pthread_mutex_t step_mu;
    uint32_t steps_open;
    uint64_t step_parent; /* the open step's own parent */
    _Atomic uint64_t step_open_id;
    _Atomic uint32_t next_corr_block;
    /* threads */
    pthread_key_t key;
    bool key_set;
    struct dpt_thread *threads;
    /* backend */
    void *_Atomic backend;
    bool backend_retried;
    char backend_err[BASE_ERRLEN]; /* why the backend found nothing to capture */
    _Atomic uint64_t untimed;
    pthread_mutex_t real_mu;
    void *_Atomic real; /* the backend's table of forwarded functions */
    /* background thread and what only it touches */
    pthread_t bg;
    bool bg_started;
    _Atomic bool stop;
    gpu_link_t *link;
    bool link_failed;
    int64_t link_created;
    bool connected; /* a receiver has been connected at least once */
    gpu_names_t *names;
    uint32_t names_sent;
    gpu_scopetree_t *recent; /* recent scope pairs, re-sent on reconnect */
    struct gpu_u64map open;  /* open scope id -> name id */
    bool state_dirty;        /* the receiver may lack some of the state below */
    bool hello_sent;         /* the state, part by part: the hello, */
    bool tree_sent;          /* the recent scope tree (names: names_sent; snaps: their .sent) */
    uint32_t devices_sent;   /* in the last hello */
    struct dpt_snap_last snaps[SNAP_DOMAINS];
    size_t nsnaps;
    gpu_event_t *out;
    size_t nout;
    struct gpu_scope_pair *pairs;
    size_t npairs;
    int64_t last_flush;
    uint64_t captured, sent_events, batches, not_sent, lost_closes, dead_ring_drops;
    uint64_t dropped_delivered; /* the count the receiver last got */
    void *cupti_slot;
    struct dpt_thread bg_self; /* the background thread's, marked busy */
} dpt = {.mu = PTHREAD_MUTEX_INITIALIZER,
         .real_mu = PTHREAD_MUTEX_INITIALIZER,
         .step_mu = PTHREAD_MUTEX_INITIALIZER};

_Thread_local struct dpt_thread *dpt_self __attribute__((tls_model("initial-exec")));

static void bg_send_state(void);
static void *bg_main(void *arg);

void *dpt_backend_state(void)
{
    return atomic_load_explicit(&dpt.backend, memory_order_acquire);
}

void *dpt_backend_ensure(void)
{
    void *b = dpt_backend_state();
    if (b != NULL)
        return b;
    pthread_mutex_lock(&dpt.mu);
    b = dpt.backend;
    if (b == NULL && dpt.state == ST_RUNNING && !dpt.backend_retried) {
        /* The runtime was loaded after tracing started: open it now (once). */
        dpt.backend_retried = true;
        char err[BASE_ERRLEN];
        b = dpt_backend_impl.open(&dpt.env, err);
        atomic_store_explicit(&dpt.backend, b, memory_order_release);
    }
    pthread_mutex_unlock(&dpt.mu);
    return b;
}

const void *dpt_real(void *(*resolve)(void))
{
    void *p = atomic_load_explicit(&dpt.real, memory_order_acquire);
    if (__builtin_expect(p != NULL, 1))
        return p;
    pthread_mutex_lock(&dpt.real_mu);
    p = dpt.real;
    if (p == NULL) {
        p = resolve();
        atomic_store_explicit(&dpt.real, p, memory_order_release);
    }
    pthread_mutex_unlock(&dpt.real_mu);
    return p;
}

void **dpt_cupti_slot(void)
{
    return &dpt.cupti_slot;
}

const char *dpt_backend_error(void)
{
    return dpt.backend_err;
}

void dpt_count_untimed(void)
{
    atomic_fetch_add_explicit(&dpt.untimed, 1, memory_order_relaxed);
}

/* ---- process and threads ---- */

static void step_closed(uint64_t id);

static void thread_exit(void *arg)
{
    struct dpt_thread *t = arg;
    /* Steps it left open are open no more: other threads stop taking them. */
    for (uint32_t i = 0; i < t->stack.depth && t->inherit; i++)
        if (t->stack.f[i].kind == GPU_EV_STEP && !t->stack.f[i].lost)
            step_closed(t->stack.f[i].id);
    /* The background thread drains what is left and frees it. */
    atomic_store_explicit(&t->orphan, true, memory_order_release);
}

static void atfork_child(void)
{
    /* Only the forking thread exists in the child; the parent's background
     * thread, link and rings are not ours to use.  They are abandoned (not
     * freed: another thread of the parent may have held their locks) and
     * the child starts afresh on its first event. */
    pthread_mutex_init(&dpt.mu, NULL);
    dpt.state = ST_IDLE;
    dpt.threads = NULL;
    dpt.bg_started = false;
    dpt.link = NULL;
    dpt.backend = NULL;
    dpt.names = NULL;
    dpt.recent = NULL;
    dpt.out = NULL;
    dpt.pairs = NULL;
    dpt.tsc_map = NULL;
    memset(&dpt.open, 0, sizeof dpt.open);
    dpt.link_failed = dpt.connected = dpt.backend_retried = false;
    dpt.names_sent = 0;
    dpt.nout = dpt.npairs = dpt.nsnaps = 0; /* the child's backend starts its own clocks */
    dpt.captured = dpt.sent_events = dpt.batches = dpt.not_sent = 0;
    dpt.lost_closes = dpt.dead_ring_drops = dpt.dropped_delivered = 0;
    atomic_store(&dpt.untimed, 0);
    pthread_mutex_init(&dpt.step_mu, NULL);
    dpt.steps_open = 0;
    atomic_store(&dpt.step_open_id, 0);
    /* The forking thread's state is the parent's: its exit must not close the parent's steps. */
    if (dpt.key_set)
        pthread_setspecific(dpt.key, NULL);
    atomic_store(&dpt.stop, false);
    dpt_self = NULL;
}

static void dpt_atexit(void);
static void state_reset(void);

enum cfg_result { CFG_OK, CFG_DISABLED, CFG_BAD };

static enum cfg_result load_config(char *err)
{
    base_config_t *cfg = base_config_new(cfg_keys, BASE_ARRAY_LEN(cfg_keys));
    enum cfg_result res = base_config_load_env(cfg, err) == BASE_OK ? CFG_OK : CFG_BAD;
    if (res == CFG_OK && !base_config_bool(cfg, "trace_enable")) {
        base_err(err, "disabled by DPTOP_TRACE_ENABLE");
        res = CFG_DISABLED;
    }
    /*
     * SPEC 3's snapshot_period governs every snapshot pair of a host: with
     * no DPTOP_TRACE_SNAPSHOT_MS of its own, libdptrace takes the agents'
     * DPTOP_SNAPSHOT_PERIOD_MS from the environment they share (up to its
     * own longest period: an agents' setting must not turn tracing off).
     */
    const char *period = getenv("DPTOP_SNAPSHOT_PERIOD_MS");
    if (res == CFG_OK && period != NULL &&
        base_config_source(cfg, "trace_snapshot_ms") == BASE_CFG_DEFAULT) {
        char *end, text[32], perr[BASE_ERRLEN];
        errno = 0;
        long long ms = strtoll(period, &end, 10);
        snprintf(text, sizeof text, "%lld", ms > DPT_SNAPSHOT_MAX_MS ? DPT_SNAPSHOT_MAX_MS : ms);
        if (errno != 0 || end == period || *end != '\0' ||
            base_config_set(cfg, "trace_snapshot_ms", text, BASE_CFG_ENV, perr) != BASE_OK) {
            base_err(err,
                     "invalid value for DPTOP_SNAPSHOT_PERIOD_MS: '%s' (expected an integer "
                     "of at least 1)",
                     period);
            res = CFG_BAD;
        }
    }
    bool ok = res == CFG_OK;
    if (ok) {
        const char *ep = base_config_str(cfg, "trace_endpoint");
        if (*ep != '\0')
            snprintf(dpt.endpoint, sizeof dpt.endpoint, "%s", ep);
        else if (gpu_link_default_endpoint(dpt.endpoint, sizeof dpt.endpoint, err) != BASE_OK)
            res = CFG_BAD;
        snprintf(dpt.hip_library, sizeof dpt.hip_library, "%s",
                 base_config_str(cfg, "trace_hip_library"));
        dpt.ring_size = (size_t)base_config_int(cfg, "trace_ring");
        dpt.hwm = (int)base_config_int(cfg, "trace_hwm");
        dpt.flush_ns = base_config_int(cfg, "trace_flush_ms") * 1000000;
        dpt.env.flush_ns = dpt.flush_ns;
        dpt.quiet = base_config_bool(cfg, "trace_quiet");
        dpt.inherit_step = base_config_bool(cfg, "trace_inherit_step");
        dpt.tsc = base_config_bool(cfg, "trace_tsc");
        dpt.env.snapshot_ns = base_config_int(cfg, "trace_snapshot_ms") * 1000000;
        dpt.env.max_pending = (size_t)base_config_int(cfg, "trace_pending");
        dpt.env.events_per_dev = (size_t)base_config_int(cfg, "trace_events");
        const char *api = base_config_str(cfg, "trace_cuda_api");
        if (strcmp(api, "work") != 0 && strcmp(api, "all") != 0) {
            base_err(err, "invalid value for trace_cuda_api: '%s' (expected work or all)", api);
            res = CFG_BAD;
        }
        dpt.env.cuda_api_all = strcmp(api, "all") == 0;
    }
    base_config_destroy(&cfg);
    return res;
}

/* Is CLOCK_MONOTONIC driven by an invariant TSC here?  Then stamping with
 * the TSC and mapping afterwards loses nothing. */
static bool tsc_drives_monotonic(void)
{
#if defined(__x86_64__) || defined(__i386__)
    char buf[64] = "";
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (f == NULL)
        return false;
    bool tsc = fgets(buf, sizeof buf, f) != NULL && strcmp(buf, "tsc\n") == 0;
    fclose(f);
    if (!tsc || (f = fopen("/proc/cpuinfo", "r")) == NULL)
        return false;
    bool constant = false, nonstop = false;
    char line[4096];
    while (fgets(line, sizeof line, f) != NULL && !(constant && nonstop)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        constant = strstr(line, " constant_tsc") != NULL;
        nonstop = strstr(line, " nonstop_tsc") != NULL;
        break;
    }
    fclose(f);
    return constant && nonstop;
#else
    return false;
#endif
}

/* One (TSC, CLOCK_MONOTONIC) pair: the clock read between two TSC reads,
 * retried when something (an interrupt) stretched the bracket. */
static void tsc_pair(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (!dpt.tsc)
        return;
    int64_t best_w = INT64_MAX, best_t = 0, best_m = 0;
    for (int i = 0; i < 3; i++) {
        int64_t a = (int64_t)__builtin_ia32_rdtsc();
        int64_t m = dpt_now();
        int64_t b = (int64_t)__builtin_ia32_rdtsc();
        if (b - a < best_w) {
            best_w = b - a;
            best_t = a + (b - a) / 2;
            best_m = m;
        }
    }
    gpu_clockmap_add(dpt.tsc_map, best_t, best_m, NULL);
#endif
}

/* A record's time on CLOCK_MONOTONIC. */
static int64_t rec_time(const struct dpt_rec *r, int64_t t)
{
    int64_t m;
    if (!dpt.tsc || (r->reserved & DPT_REC_MONO) || gpu_clockmap_map(dpt.tsc_map, t, &m) != BASE_OK)
        return t;
    return m;
}

/* First use in this process: configuration, backend, background thread.
 * Called with dpt.mu held. */
static void process_start_locked(void)
{
    char err[BASE_ERRLEN];
    dpt.pid = (uint32_t)getpid();
    dpt.t0 = dpt_now();
    snprintf(dpt.exe, sizeof dpt.exe, "%s", program_invocation_short_name);
    if (!dpt.atfork_set) {
        pthread_atfork(NULL, NULL, atfork_child);
        dpt.atfork_set = true;
    }
    enum cfg_result res = load_config(err);
    if (res != CFG_OK) {
        /* Switched off on purpose is news, a bad setting is a warning. */
        base_log(res == CFG_DISABLED ? BASE_LOG_INFO : BASE_LOG_WARN, "dptrace", "tracing off: %s",
                 err);
        dpt.state = ST_DISABLED;
        return;
    }
    if (!dpt.key_set) {
        pthread_key_create(&dpt.key, thread_exit);
        dpt.key_set = true;
    }
    dpt.tsc = dpt.tsc && tsc_drives_monotonic();
    if (dpt.tsc) {
        /* Two pairs a little apart, so that the first records map with a
         * measured tick rate; the background thread adds one per cycle. */
        dpt.tsc_map = gpu_clockmap_new(4096);
        tsc_pair();
        base_sleep_ns(200000);
        tsc_pair();
    }
    dpt.names = gpu_names_new(65536);
    dpt.recent = gpu_scopetree_new(SCOPE_RECENT);
    gpu_u64map_init(&dpt.open, 1024);
    dpt.out = xcalloc(GPU_LINK_MAX_EVENTS, sizeof *dpt.out);
    dpt.pairs = xcalloc(GPU_LINK_MAX_SCOPE, sizeof *dpt.pairs);
    state_reset();
    dpt.env.pid = dpt.pid;
    dpt.env.names = dpt.names;
    dpt.env.hip_library = dpt.hip_library[0] ? dpt.hip_library : NULL;
    atomic_store(&dpt.stop, false);
    /* No backend (e.g. HIP not loaded): annotations still work. */
    atomic_store_explicit(&dpt.backend, dpt_backend_impl.open(&dpt.env, dpt.backend_err),
                          memory_order_release);
    /* Signals for the application's threads, not ours. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&dpt.bg, NULL, bg_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        base_log(BASE_LOG_WARN, "dptrace", "tracing off: cannot start its thread: %s",
                 strerror(rc));
        dpt.state = ST_DISABLED;
        return;
    }
    dpt.bg_started = true;
    atexit(dpt_atexit);
    dpt.state = ST_RUNNING;
}

bool dpt_process_start(void)
{
    pthread_mutex_lock(&dpt.mu);
    if (dpt.state == ST_IDLE)
        process_start_locked();
    bool running = dpt.state == ST_RUNNING;
    pthread_mutex_unlock(&dpt.mu);
    return running;
}

struct dpt_thread *dpt_thread_slow(void)
{
    if (!dpt_process_start())
        return NULL;
    struct dpt_thread *t = xcalloc(1, sizeof *t);
    t->ring = gpu_ring_new(dpt.ring_size, sizeof(struct dpt_rec));
    t->tid = (uint32_t)syscall(SYS_gettid);
    t->tsc = dpt.tsc;
    t->inherit = dpt.inherit_step;
    t->evc_device = -1;
    atomic_init(&t->orphan, false);
    t->device = -1;
    void *b = dpt_backend_state();
    if (b != NULL && dpt_backend_impl.thread_init != NULL)
        dpt_backend_impl.thread_init(b, t);
    pthread_mutex_lock(&dpt.mu);
    t->next = dpt.threads;
    dpt.threads = t;
    pthread_setspecific(dpt.key, t);
    pthread_mutex_unlock(&dpt.mu);
    dpt_self = t;
    return t;
}

uint32_t dpt_corr_refill(struct dpt_thread *t)
{
    uint32_t base = atomic_fetch_add_explicit(&dpt.next_corr_block, 1, memory_order_relaxed);
    t->corr_next = base * CORR_BLOCK + 1; /* never 0: 0 means "no correlation" */
    t->corr_end = t->corr_next + CORR_BLOCK - 1;
    return t->corr_next++;
}

static uint64_t scope_next(struct dpt_thread *t)
{
    if (t->id_next == t->id_end) {
        uint64_t base = atomic_fetch_add_explicit(&dpt.next_scope_block, 1, memory_order_relaxed);
        t->id_next = base * ID_BLOCK + 1;
        t->id_end = t->id_next + ID_BLOCK - 1;
    }
    return t->id_next++;
}

/* ---- annotations ---- */

/* Copy name into dst (DPT_NAME_INLINE bytes), cut on a UTF-8 boundary. */
static void copy_name(char *dst, const char *name)
{
    if (name == NULL)
        name = "(null)";
    size_t n = strnlen(name, DPT_NAME_INLINE);
    if (n == DPT_NAME_INLINE) {
        n = DPT_NAME_INLINE - 1;
        while (n > 0 && ((unsigned char)name[n] & 0xc0) == 0x80)
            n--;
    }
    memcpy(dst, name, n);
    dst[n] = '\0';
}

/* Push a frame (its id; 0: too deep); nothing reaches the ring until the
 * frame is announced (an event needs its id) or closes.  A range opened
 * with nothing else open nests in the step the thread takes from the
 * process (dpt_inherit_slow: with DPTOP_TRACE_INHERIT_STEP, else none). */
static uint64_t open_scope(struct dpt_thread *t, uint8_t kind, const char *name, uint64_t step)
{
    if (t->inherit && t->stack.depth == 0 && !t->own_steps && kind == GPU_EV_RANGE)
        dpt_inherit_slow(t);
    uint64_t id = scope_next(t), parent;
    int64_t now = dpt_stamp(t);
    struct gpu_scope_frame *f = gpu_scope_push(&t->stack, id, kind, now, step, &parent);
    if (f == NULL) {
        gpu_ring_count_drop(t->ring, 1); /* too deep: the range is lost */
        return 0;
    }
    if (parent == 0 && kind == GPU_EV_RANGE && !t->own_steps)
        f->parent = t->inherited; /* taken, its pair written, just before */
    copy_name(t->names[t->stack.depth - 1], name);
    return id;
}

/*
 * Steps open and close under step_mu (a few times a second); threads read
 * the open one's id without it, and only when it changed take its parent
 * under it.  Which step stays open when one of two closes is not known, so
 * none is taken until the next opens alone.
 */
static void step_opened(uint64_t id, uint64_t parent)
{
    pthread_mutex_lock(&dpt.step_mu);
    dpt.steps_open++;
    dpt.step_parent = parent;
    atomic_store_explicit(&dpt.step_open_id, dpt.steps_open == 1 ? id : 0, memory_order_release);
    pthread_mutex_unlock(&dpt.step_mu);
}

static void step_closed(uint64_t id)
{
    pthread_mutex_lock(&dpt.step_mu);
    if (dpt.steps_open > 0)
        dpt.steps_open--;
    if (atomic_load_explicit(&dpt.step_open_id, memory_order_relaxed) == id || dpt.steps_open == 0)
        atomic_store_explicit(&dpt.step_open_id, 0, memory_order_release);
    pthread_mutex_unlock(&dpt.step_mu);
}

/*
 * A step taken from another thread can close just after: work issued in
 * that instant still carries it (as an event can be stamped just after
 * its own thread's range closed).  Where the pair cannot be written (the
 * ring is full: counted), the thread takes no step until it can.
 */
void dpt_inherit_slow(struct dpt_thread *t)
{
    uint64_t id = atomic_load_explicit(&dpt.step_open_id, memory_order_acquire);
    if (id == t->inherited || id == 0) {
        t->inherited = id;
        return;
    }
    pthread_mutex_lock(&dpt.step_mu);
    id = atomic_load_explicit(&dpt.step_open_id, memory_order_relaxed);
    uint64_t parent = dpt.step_parent;
    pthread_mutex_unlock(&dpt.step_mu);
    t->inherited = 0;
    if (id == 0)
        return;
    struct dpt_rec *r = gpu_ring_reserve(t->ring);
    if (r == NULL)
        return;
    r->type = DPT_REC_PAIR;
    r->kind = GPU_EV_STEP;
    r->reserved = 0;
    r->scope = id;
    r->u.sc.parent = parent;
    gpu_ring_commit(t->ring);
    t->inherited = id;
}

void dpt_announce_slow(struct dpt_thread *t)
{
    for (uint32_t i = t->announced; i < t->stack.depth; i++) {
        struct gpu_scope_frame *f = &t->stack.f[i];
        struct dpt_rec *r = gpu_ring_reserve(t->ring);
        if (r == NULL) {
            f->lost = true; /* counted by the ring; its close is dropped too */
            continue;
        }
        r->type = DPT_REC_OPEN;
        r->kind = f->kind;
        r->reserved = 0;
        r->scope = f->id;
        r->t0 = f->start_ns;
        r->u.sc.parent = f->parent;
        r->u.sc.step = f->step;
        memcpy(r->u.sc.name, t->names[i], DPT_NAME_INLINE);
        gpu_ring_commit(t->ring);
    }
    t->announced = t->stack.depth;
}

/* Pop one frame and write what closes it: a close record when it was
 * announced, else the whole range in one record. */
static void close_scope(struct dpt_thread *t, int64_t now)
{
    struct gpu_scope_frame f;
    if (gpu_scope_pop(&t->stack, &f) <= 0)
        return;
    if (f.kind == GPU_EV_STEP && t->inherit && !f.lost)
        step_closed(f.id);
    uint32_t idx = t->stack.depth; /* the popped frame's index */
    bool announced = idx < t->announced;
    if (announced)
        t->announced = idx;
    if (f.lost)
        return;
    struct dpt_rec *r = gpu_ring_reserve(t->ring);
    if (r == NULL)
        return;
    r->type = announced ? DPT_REC_CLOSE : DPT_REC_RANGE;
    r->kind = f.kind;
    r->reserved = 0;
    r->scope = f.id;
    r->t0 = f.start_ns;
    r->t1 = now;
    r->u.sc.step = f.step;
    if (!announced) {
        r->u.sc.parent = f.parent;
        memcpy(r->u.sc.name, t->names[idx], DPT_NAME_INLINE);
    }
    gpu_ring_commit(t->ring);
}

void dpt_range_push(const char *name)
{
    struct dpt_thread *t = dpt_thread_get();
    if (t != NULL)
        open_scope(t, GPU_EV_RANGE, name, 0);
}

void dpt_range_pop(void)
{
    struct dpt_thread *t = dpt_thread_get();
    if (t != NULL)
        close_scope(t, dpt_stamp(t));
}

/* Announced at once where other threads may take it (dpt_inherit_slow). */
void dpt_step_begin(uint64_t n)
{
    struct dpt_thread *t = dpt_thread_get();
    if (t == NULL)
        return;
    t->own_steps = true;
    t->inherited = 0;
    uint64_t id = open_scope(t, GPU_EV_STEP, "step", n);
    if (id == 0 || !t->inherit)
        return;
    dpt_announce(t);
    const struct gpu_scope_frame *f = &t->stack.f[t->stack.depth - 1];
    if (!f->lost) /* its open record is not in the ring: nobody could resolve it */
        step_opened(id, f->parent);
}

void dpt_step_end(void)
{
    struct dpt_thread *t = dpt_thread_get();
    if (t == NULL)
        return;
    uint32_t depth = gpu_scope_step_depth(&t->stack);
    if (depth == 0) {
        t->stack.unbalanced++;
        return;
    }
    int64_t now = dpt_stamp(t);
    while (depth-- > 0)
        close_scope(t, now);
}

void dpt_mark(const char *name)
{
    struct dpt_thread *t = dpt_thread_get();
    if (t == NULL)
        return;
    dpt_announce(t);
    struct dpt_rec *r = gpu_ring_reserve(t->ring);
    if (r == NULL)
        return;
    r->type = DPT_REC_MARK;
    r->kind = GPU_EV_INSTANT;
    r->reserved = 0;
    r->scope = dpt_scope_of(t);
    r->t0 = r->t1 = dpt_stamp(t);
    copy_name(r->u.sc.name, name);
    gpu_ring_commit(t->ring);
}

uint64_t dpt_scope_current(void)
{
    struct dpt_thread *t = dpt_thread_get();
    if (t == NULL)
        return 0;
    if (t->inherit && t->stack.depth == 0 && !t->own_steps)
        dpt_inherit_slow(t);
    return dpt_scope_of(t);
}

int dpt_enabled(void)
{
    return dpt_thread_get() != NULL;
}

uint64_t dpt_scope_now(void *app, uint32_t *tid)
{
    struct dpt_thread *t = dpt_thread_get();
    if (t == NULL)
        return 0;
    *tid = t->tid;
    dpt_announce(t); /* the caller hands the id on */
    return dpt_scope_of(t);
}

void dpt_host_event(void *app, const gpu_event_t *ev, const char *name)
{
    struct dpt_thread *t = dpt_thread_get();
    if (t == NULL)
        return;
    dpt_announce(t);
    struct dpt_rec *r = gpu_ring_reserve(t->ring);
    if (r == NULL)
        return;
    memset(r, 0, sizeof *r);
    r->reserved = DPT_REC_MONO;
    r->type = DPT_REC_HOST;
    r->kind = ev->kind;
    r->flags = ev->flags;
    r->device = ev->device;
    r->corr = ev->corr_id;
    r->scope = ev->scope_id;
    r->t0 = ev->start_ns;
    r->t1 = ev->end_ns;
    r->u.op.api = name;
    gpu_ring_commit(t->ring);
}

/* ---- background thread ---- */

static void out_event(const gpu_event_t *e);

static uint64_t dropped_total(void)
{
    uint64_t d = dpt.not_sent + dpt.lost_closes + dpt.dead_ring_drops +
                 atomic_load_explicit(&dpt.untimed, memory_order_relaxed) +
                 gpu_names_full_drops(dpt.names);
    pthread_mutex_lock(&dpt.mu);
    for (struct dpt_thread *t = dpt.threads; t != NULL; t = t->next)
        d += gpu_ring_dropped(t->ring);
    pthread_mutex_unlock(&dpt.mu);
    void *b = dpt_backend_state();
    if (b != NULL && dpt_backend_impl.dropped != NULL)
        d += dpt_backend_impl.dropped(b);
    return d;
}

static bool link_ready(void)
{
    char err[BASE_ERRLEN];
    if (dpt.link != NULL)
        return true;
    if (dpt.link_failed)
        return false;
    dpt.link = gpu_link_new(dpt.endpoint, dpt.hwm, err);
    dpt.link_created = dpt_now();
    if (dpt.link == NULL) {
        base_log(BASE_LOG_WARN, "dptrace", "events will be dropped: %s", err);
        dpt.link_failed = true;
        return false;
    }
    return true;
}

static bool send_msg(gpu_msg_t *m)
{
    m->pid = dpt.pid;
    return link_ready() && gpu_link_send(dpt.link, m, NULL) == BASE_OK;
}

/* Names from id `from` on, in messages of at most GPU_LINK_MAX_NAMES. */
/* The names the receiver lacks, from names_sent on; each message that
 * goes through counts, so a full queue does not get them twice. */
static bool send_names(void)
{
    uint32_t ids[GPU_LINK_MAX_NAMES];
    const char *strs[GPU_LINK_MAX_NAMES];
    uint32_t count = gpu_names_count(dpt.names);
    while (dpt.names_sent < count) {
        size_t k = 0;
        for (; k < GPU_LINK_MAX_NAMES && dpt.names_sent + k < count; k++) {
            ids[k] = dpt.names_sent + (uint32_t)k + 1;
            strs[k] = gpu_names_get(dpt.names, ids[k]);
        }
        gpu_msg_t m = {.kind = GPU_MSG_NAMES, .name_ids = ids, .name_strs = strs, .nnames = k};
        if (!send_msg(&m))
            return false;
        dpt.names_sent += (uint32_t)k;
    }
    return true;
}

static bool send_pairs(const struct gpu_scope_pair *p, size_t n)
{
    for (size_t off = 0; off < n; off += GPU_LINK_MAX_SCOPE) {
        gpu_msg_t m = {.kind = GPU_MSG_SCOPE, .scope = p + off};
        m.nscope = n - off < GPU_LINK_MAX_SCOPE ? n - off : GPU_LINK_MAX_SCOPE;
        if (!send_msg(&m))
            return false;
    }
    return true;
}

struct pair_buf {
    struct gpu_scope_pair *p;
    size_t n;
    bool ok;
};

static void collect_pair(void *ctx, const struct gpu_scope_pair *pair)
{
    struct pair_buf *b = ctx;
    b->p[b->n++] = *pair;
    if (b->n == GPU_LINK_MAX_SCOPE) {
        b->ok = b->ok && send_pairs(b->p, b->n);
        b->n = 0;
    }
}

/* The latest snapshot pair of every domain the receiver lacks, one message each. */
static bool send_snaps(void)
{
    for (size_t i = 0; i < dpt.nsnaps; i++) {
        if (dpt.snaps[i].sent)
            continue;
        gpu_msg_t m = {.kind = GPU_MSG_SNAP,
                       .domain_a = dpt.snaps[i].a,
                       .domain_b = dpt.snaps[i].b,
                       .snap = &dpt.snaps[i].pair,
                       .nsnap = 1};
        if (!send_msg(&m))
            return false;
        dpt.snaps[i].sent = true;
    }
    return true;
}

/* No receiver is connected now: a refused send was not its queue being full. */
static bool receiver_gone(void)
{
    return dpt.link == NULL || !gpu_link_up(dpt.link);
}

/* Everything a receiver needs goes again: a new one came, or none is there. */
static void state_reset(void)
{
    dpt.state_dirty = true;
    dpt.hello_sent = dpt.tree_sent = false;
    dpt.names_sent = 0;
    for (size_t i = 0; i < dpt.nsnaps; i++)
        dpt.snaps[i].sent = false;
}

/* Hello, every name, the recent scope tree, the latest snapshot pairs:
 * what a (re)connected receiver needs before the next batch.  Sent part by
 * part, each once: a receiver whose queue is full takes the rest later,
 * and does not get the hello again before every batch. */
static void bg_send_state(void)
{
    bool ok = true;
    if (!dpt.hello_sent) {
        void *b = dpt_backend_state();
        /* "none": annotations only (no runtime found to capture). */
        gpu_msg_t m = {.kind = GPU_MSG_PROC,
                       .exe = dpt.exe,
                       .backend = b != NULL ? dpt_backend_impl.name : "none",
                       .t0_ns = dpt.t0};
        if (b != NULL && dpt_backend_impl.devices != NULL)
            m.devices = dpt_backend_impl.devices(b);
        if ((ok = send_msg(&m))) {
            dpt.hello_sent = true;
            dpt.devices_sent = m.devices;
        }
    }
    ok = ok && send_names();
    if (ok && !dpt.tree_sent) {
        struct pair_buf pb = {xcalloc(GPU_LINK_MAX_SCOPE, sizeof *pb.p), 0, true};
        gpu_scopetree_foreach(dpt.recent, collect_pair, &pb);
        ok = pb.ok && send_pairs(pb.p, pb.n);
        free(pb.p);
        if (ok) {
            dpt.tree_sent = true;
            dpt.npairs = 0; /* they were in the tree just sent */
        }
    }
    ok = ok && send_snaps();
    dpt.state_dirty = !ok;
}

/* Send what has accumulated.  The names and scope pairs an event batch
 * uses go first; if they cannot, the batch is not sent either (a receiver
 * must never see ids it cannot resolve), and they go first next time. */
static void wait_connected(void);

static void bg_flush(bool force)
{
    int64_t now = dpt_now();
    if (dpt.link != NULL && gpu_link_take_reconnect(dpt.link)) {
        state_reset();
        /* A change of receiver is also one lost: connected only if one is there. */
        if (gpu_link_up(dpt.link))
            dpt.connected = true;
    }
    /*
     * Right after start the connection to a receiver may still be under
     * way: keep accumulating for a moment rather than drop the first
     * batch, and where the batch is full (a process that makes thousands
     * of events in its first milliseconds, or a short one whose whole run
     * is drained at exit), wait for the connection, bounded: such batches
     * were refused and dropped, in about one short process of six.
     */
    if (!dpt.connected && dpt.link != NULL && now - dpt.link_created < CONNECT_GRACE) {
        if (!force && dpt.nout < GPU_LINK_MAX_EVENTS / 2)
            return;
        wait_connected();
    }
    if (!force && dpt.nout < GPU_LINK_MAX_EVENTS / 2 && now - dpt.last_flush < dpt.flush_ns)
        return;
    dpt.last_flush = now;
    /* Idle: nothing new to say (a drop count the receiver lacks is news: it
     * goes out in an empty batch, until one gets through). */
    uint64_t dropped = dropped_total();
    if (dpt.nout == 0 && dpt.npairs == 0 && dropped == dpt.dropped_delivered)
        return;
    /* A backend that learns its devices late (CUPTI) says hello again. */
    void *b = dpt_backend_state();
    if (dpt.devices_sent == 0 && b != NULL && dpt_backend_impl.devices != NULL &&
        dpt_backend_impl.devices(b) != 0) {
        dpt.hello_sent = false;
        dpt.state_dirty = true;
    }
    if (dpt.state_dirty)
        bg_send_state();
    bool ok = !dpt.state_dirty && send_names();
    if (ok && dpt.npairs > 0 && (ok = send_pairs(dpt.pairs, dpt.npairs)))
        dpt.npairs = 0;
    /* Names and pairs that a receiver's full queue refused go again next
     * time, as they are; with no receiver, the whole state goes to the
     * next one (the recent tree holds the pairs). */
    if (!ok && receiver_gone()) {
        state_reset();
        dpt.npairs = 0;
    }
    gpu_msg_t m = {.kind = GPU_MSG_EV, .ev = dpt.out, .nev = dpt.nout};
    if (ok) {
        m.dropped_total = dropped;
        ok = send_msg(&m);
    }
    if (ok) {
        dpt.sent_events += dpt.nout;
        dpt.batches++;
        dpt.dropped_delivered = dropped;
    } else {
        dpt.not_sent += dpt.nout;
        /*
         * Nobody took it (no receiver now): whoever connects next gets the
         * state before any batch, even if the batch goes out before the
         * monitor has said that a receiver came (the monitor's event and
         * the new pipe race; the receiver must never see events first).
         * A receiver that is there but slow (its queue full) has the state:
         * sending it again before every batch would only crowd the queue.
         */
        if (receiver_gone())
            state_reset();
    }
    dpt.nout = 0;
}

static void out_event(const gpu_event_t *e)
{
    if (dpt.nout == GPU_LINK_MAX_EVENTS)
        bg_flush(true);
    dpt.out[dpt.nout++] = *e;
    dpt.captured++;
}

static void out_pair(uint64_t child, uint64_t parent)
{
    if (gpu_scopetree_add(dpt.recent, child, parent, NULL) != 1)
        return;
    if (dpt.npairs == GPU_LINK_MAX_SCOPE)
        bg_flush(true);
    if (dpt.npairs == GPU_LINK_MAX_SCOPE) { /* could not send: they stay in the tree */
        dpt.tree_sent = false;
        dpt.state_dirty = true;
        dpt.npairs = 0;
    }
    dpt.pairs[dpt.npairs++] = (struct gpu_scope_pair){child, parent};
}

static struct dpt_snap_last *snap_remember(const gpu_msg_t *msg)
{
    if (msg->nsnap == 0 || msg->domain_a == NULL || msg->domain_b == NULL)
        return NULL;
    size_t i = 0;
    while (i < dpt.nsnaps && (strcmp(dpt.snaps[i].a, msg->domain_a) != 0 ||
                              strcmp(dpt.snaps[i].b, msg->domain_b) != 0))
        i++;
    if (i == dpt.nsnaps) {
        if (dpt.nsnaps == SNAP_DOMAINS)
            return NULL;
        snprintf(dpt.snaps[i].a, sizeof dpt.snaps[i].a, "%s", msg->domain_a);
        snprintf(dpt.snaps[i].b, sizeof dpt.snaps[i].b, "%s", msg->domain_b);
        dpt.nsnaps++;
    }
    dpt.snaps[i].pair = msg->snap[msg->nsnap - 1];
    return &dpt.snaps[i];
}

/* Messages from the backend: events and snapshot pairs. */
static void backend_msg(void *ctx, const gpu_msg_t *msg)
{
    if (msg->kind == GPU_MSG_EV) {
        for (size_t i = 0; i < msg->nev; i++)
            out_event(&msg->ev[i]);
    } else if (msg->kind == GPU_MSG_SNAP) {
        /*
         * Pairs are sent at once: they are small and consumers want them
         * before the events mapped with them.  The latest of each domain is
         * kept and goes out with the state, so a receiver that was not
         * there yet (the first pairs of a run usually precede the
         * connection) or comes later still gets one.
         */
        struct dpt_snap_last *last = snap_remember(msg);
        gpu_msg_t m = *msg;
        bool ok = send_msg(&m);
        if (last != NULL)
            last->sent = ok;
        if (!ok && receiver_gone())
            state_reset();
        else if (!ok)
            dpt.state_dirty = true;
    }
}

static void on_record(void *ctx, const void *p)
{
    const struct dpt_thread *t = ctx;
    const struct dpt_rec *r = p;
    void *b = dpt_backend_state();
    gpu_event_t e = {0};
    e.pid = dpt.pid;
    e.tid = t->tid;
    e.device = r->device;
    e.corr_id = r->corr;
    e.scope_id = r->scope;
    e.start_ns = rec_time(r, r->t0);
    e.end_ns = r->type == DPT_REC_OPEN || r->type == DPT_REC_MARK ? e.start_ns : rec_time(r, r->t1);
    if (e.end_ns < e.start_ns)
        e.end_ns = e.start_ns;
    switch (r->type) {
    case DPT_REC_OP:
    case DPT_REC_HOST:
        e.kind = r->type == DPT_REC_OP ? GPU_EV_API : r->kind;
        e.flags = r->flags;
        e.name_id = gpu_names_intern(dpt.names, r->u.op.api);
        if (b != NULL && dpt_backend_impl.stream_id != NULL &&
            (r->type == DPT_REC_OP || r->u.op.stream != NULL))
            e.stream = dpt_backend_impl.stream_id(b, r->u.op.stream, r->device);
        if (r->type != DPT_REC_OP || !(r->reserved & DPT_OP_NO_API))
            out_event(&e);
        if (r->type == DPT_REC_OP) {
            if (!r->timed || b == NULL || dpt_backend_impl.submit == NULL)
                break; /* counted as untimed when it was recorded */
            dpt_backend_impl.submit(b, r, t->tid);
        }
        break;
    case DPT_REC_OPEN: {
        uint32_t name = gpu_names_intern(dpt.names, r->u.sc.name);
        out_pair(r->scope, r->u.sc.parent);
        if (dpt.open.n < OPEN_MAX)
            gpu_u64map_put(&dpt.open, r->scope, name);
        break;
    }
    case DPT_REC_CLOSE: {
        uint64_t *name = gpu_u64map_get(&dpt.open, r->scope);
        if (name == NULL) {
            dpt.lost_closes++;
            break;
        }
        e.kind = r->kind;
        e.name_id = (uint32_t)*name;
        e.step = r->u.sc.step;
        gpu_u64map_del(&dpt.open, r->scope);
        out_event(&e);
        break;
    }
    case DPT_REC_PAIR:
        out_pair(r->scope, r->u.sc.parent);
        break;
    case DPT_REC_RANGE:
        out_pair(r->scope, r->u.sc.parent);
        e.kind = r->kind;
        e.name_id = gpu_names_intern(dpt.names, r->u.sc.name);
        e.step = r->u.sc.step;
        out_event(&e);
        break;
    case DPT_REC_MARK:
        e.kind = GPU_EV_INSTANT;
        e.name_id = gpu_names_intern(dpt.names, r->u.sc.name);
        out_event(&e);
        break;
    case DPT_REC_FUNC:
        if (b != NULL && dpt_backend_impl.note_function != NULL)
            dpt_backend_impl.note_function(b, r->u.fn.fn, r->u.fn.name);
        break;
    default:
        break;
    }
}

/* Drain every ring; free the state of threads that have exited.  Returns
 * the most records one ring held in this pass. */
static size_t bg_drain(void)
{
    size_t most = 0;
    pthread_mutex_lock(&dpt.mu);
    struct dpt_thread *list = dpt.threads;
    pthread_mutex_unlock(&dpt.mu);
    /* New threads are pushed at the head, so `list` stays a valid suffix;
     * only this thread unlinks. */
    for (struct dpt_thread *t = list; t != NULL; t = t->next) {
        size_t n, sum = 0;
        while ((n = gpu_ring_drain(t->ring, on_record, t, 4096)) == 4096)
            sum += n;
        sum += n;
        most = sum > most ? sum : most;
    }
    pthread_mutex_lock(&dpt.mu);
    struct dpt_thread **pp = &dpt.threads;
    while (*pp != NULL) {
        struct dpt_thread *t = *pp;
        if (atomic_load_explicit(&t->orphan, memory_order_acquire) && gpu_ring_used(t->ring) == 0) {
            *pp = t->next;
            dpt.dead_ring_drops += gpu_ring_dropped(t->ring);
            void *b = dpt_backend_state();
            if (b != NULL && dpt_backend_impl.thread_fini != NULL)
                dpt_backend_impl.thread_fini(b, t);
            gpu_ring_destroy(&t->ring);
            free(t);
        } else {
            pp = &t->next;
        }
    }
    pthread_mutex_unlock(&dpt.mu);
    return most;
}

/* Could a receiver be listening?  An ipc endpoint without its socket file
 * certainly has none; anything else might. */
static bool receiver_possible(void)
{
    struct stat st;
    if (strncmp(dpt.endpoint, "ipc://", 6) != 0)
        return true;
    return stat(dpt.endpoint + 6, &st) == 0 && S_ISSOCK(st.st_mode);
}

/* At exit, a process that ran for less than the connection takes still
 * gets its events to a receiver that is there: wait (bounded) for the
 * connection before the last flush. */
static void wait_connected(void)
{
    if (dpt.link == NULL || dpt.connected || (dpt.nout == 0 && dpt.npairs == 0) ||
        !receiver_possible())
        return;
    int64_t end = dpt_now() + EXIT_CONNECT_WAIT;
    bool connected = gpu_link_take_reconnect(dpt.link) && gpu_link_up(dpt.link);
    uint64_t retries = gpu_link_retries(dpt.link);
    /* A refused attempt during the wait means a stale socket with nobody
     * listening: do not hold the exit for it. */
    while (!connected && dpt_now() < end && gpu_link_retries(dpt.link) == retries) {
        base_sleep_ns(2000000);
        connected = gpu_link_take_reconnect(dpt.link) && gpu_link_up(dpt.link);
    }
    if (connected) {
        dpt.connected = true;
        state_reset();
    }
}

/*
 * The receiver learns of drops from the count every batch carries, so the
 * final count must reach it even when the last batch found the queue full
 * (its events are dropped, the count of them is not).  Bounded, and only
 * with a receiver known: the process is exiting.
 */
static void bg_last_word(void)
{
    for (int i = 0; i < LAST_WORD_TRIES && dpt.connected && dpt.link != NULL; i++) {
        if (dropped_total() == dpt.dropped_delivered)
            return;
        base_sleep_ns(LAST_WORD_WAIT_NS);
        bg_flush(true);
    }
}

static void *bg_main(void *arg)
{
    /* This thread is never traced: the interposed functions see it busy. */
    dpt.bg_self.busy = 1;
    pthread_setname_np(pthread_self(), "dptrace");
    dpt_self = &dpt.bg_self;
    dpt.last_flush = dpt_now();
    /* Connect now: the first batch, a flush period away, then finds the
     * connection made instead of being refused while it is made. */
    link_ready();
    int64_t period = CYCLE_NS, last = dpt_now();
    while (!atomic_load_explicit(&dpt.stop, memory_order_acquire)) {
        /*
         * A fixed period caps one thread's rate at its ring per period
         * (8192 records per 2 ms), below what this thread can turn into
         * batches.  The period is set so that the busiest ring would be a
         * quarter full at the next visit, between 0.2 and 2 ms: an idle
         * process still wakes only every 2 ms.
         */
        base_sleep_ns(period);
        tsc_pair(); /* after every stamp of the records about to be drained */
        size_t busiest = bg_drain();
        int64_t now = dpt_now(), took = now - last;
        last = now;
        period = CYCLE_NS;
        if (busiest > 0 && took > 0) {
            double fill_ns = (double)took * (double)(dpt.ring_size / 4) / (double)busiest;
            period = fill_ns < CYCLE_BUSY_NS ? CYCLE_BUSY_NS
                     : fill_ns < CYCLE_NS    ? (int64_t)fill_ns
                                             : CYCLE_NS;
        }
        void *b = dpt_backend_state();
        if (b != NULL && dpt_backend_impl.poll != NULL)
            dpt_backend_impl.poll(b, dpt_now(), backend_msg, NULL);
        bg_flush(false);
    }
    /* Exit: everything recorded so far, GPU work given a little time. */
    tsc_pair();
    bg_drain();
    void *b = dpt_backend_state();
    if (b != NULL && dpt_backend_impl.finish != NULL)
        dpt_backend_impl.finish(b, FINISH_NS, backend_msg, NULL);
    tsc_pair();
    bg_drain();
    wait_connected();
    bg_flush(true);
    bg_last_word();
    gpu_link_destroy(&dpt.link);
    return NULL;
}

static void dpt_atexit(void)
{
    pthread_mutex_lock(&dpt.mu);
    bool started = dpt.bg_started && dpt.state == ST_RUNNING;
    uint32_t pid = dpt.pid;
    pthread_mutex_unlock(&dpt.mu);
    if (!started || pid != (uint32_t)getpid())
        return;
    atomic_store_explicit(&dpt.stop, true, memory_order_release);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += JOIN_S;
    if (pthread_timedjoin_np(dpt.bg, NULL, &dl) != 0) {
        base_log(BASE_LOG_WARN, "dptrace", "background thread did not finish in %d s", JOIN_S);
        return;
    }
    pthread_mutex_lock(&dpt.mu);
    dpt.bg_started = false;
    dpt.state = ST_DISABLED; /* late events (other atexit handlers) are ignored */
    pthread_mutex_unlock(&dpt.mu);
    uint64_t dropped = dropped_total();
    if (!dpt.quiet || dropped > 0)
        base_log(BASE_LOG_INFO, "dptrace",
                 "%" PRIu64 " events captured, %" PRIu64 " sent in %" PRIu64
                 " batches to %s, %" PRIu64 " dropped",
                 dpt.captured, dpt.sent_events, dpt.batches, dpt.endpoint, dropped);
}
