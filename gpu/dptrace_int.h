/*
 * libdptrace internals shared by its core (gpu/dptrace.c: process state,
 * threads, annotations, the background thread and the link) and its
 * backends (gpu/dptrace_hip.c: HIP interception; gpu/dptrace_cupti.c:
 * CUPTI injection).  Each libdptrace*.so links the core with exactly one
 * backend, which defines `dpt_backend_impl`.
 */
#ifndef DP_GPU_DPTRACE_INT_H
#define DP_GPU_DPTRACE_INT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gpu/gpu.h"
#include "gpu/gpu_int.h"

/* Ring record types. */
enum dpt_rec_type {
    DPT_REC_OP = 1, /* an API call that enqueued GPU work (API event + GPU op) */
    DPT_REC_HOST,   /* a host-only API event (synchronisation, ...) */
    DPT_REC_OPEN,   /* a range or step opened (scope id, parent, name) */
    DPT_REC_CLOSE,  /* a range or step closed */
    DPT_REC_MARK,   /* an instant */
    DPT_REC_FUNC,   /* hipModuleGetFunction: a function handle's name */
    DPT_REC_RANGE,  /* a range or step that was never announced, whole */
    DPT_REC_PAIR,   /* another thread's open step (scope id, parent) this thread's events carry */
};

#define DPT_NAME_INLINE 72  /* bytes, NUL included */
#define DPT_OP_NO_API   0x1 /* an OP record whose API event another record carries */
#define DPT_REC_MONO    0x2 /* t0/t1 are CLOCK_MONOTONIC readings, not stamps */

/* One ring record: 128 bytes. */
struct dpt_rec {
    uint8_t type;      /* enum dpt_rec_type */
    uint8_t kind;      /* event kind: the GPU op's (OP), the event's (HOST), RANGE/STEP */
    uint8_t flags;     /* the API event's flags (GPU_EVF_ASYNC) */
    uint8_t copy_kind; /* enum gpu_copy_kind */
    uint16_t device;
    uint8_t fn_kind; /* enum gpu_hip_fn_kind */
    uint8_t timed;   /* OP: ev0 and ev1 were recorded around the work */
    uint32_t corr;
    uint32_t reserved; /* DPT_OP_NO_API, DPT_REC_MONO */
    uint64_t scope;    /* issuing thread's innermost scope; OPEN/CLOSE: the scope's own id */
    int64_t t0, t1;    /* host times: stamps (dpt_stamp) unless DPT_REC_MONO */
    union {
        struct {
            const char *api;   /* the intercepted function's name */
            const char *label; /* the GPU work's name when it is not a kernel */
            const void *fn;
            const void *stream;
            void *ev0, *ev1;
            uint64_t bytes;
            uint32_t grid[3], block[3];
        } op;
        struct {
            uint64_t parent;
            uint64_t step;
            char name[DPT_NAME_INLINE];
        } sc;
        struct {
            const void *fn;
            char name[DPT_NAME_INLINE];
        } fn;
    } u;
};

_Static_assert(sizeof(struct dpt_rec) == 128, "ring records are 128 bytes");

#define DPT_EVCACHE 32

/* Per-thread state; owned by the core, reclaimed after the thread exits. */
struct dpt_thread {
    gpu_ring_t *ring;
    bool tsc; /* stamps are TSC ticks (see dpt_stamp) */
    uint32_t tid;
    int device; /* current HIP device, as tracked by hipSetDevice */
    int busy;   /* inside an interposed call: nested calls are not recorded */
    struct gpu_scope_stack stack;
    /* Open frames [0, announced) have had their open record written; the
     * others exist only here until something needs their id (an event
     * inside them) or they close (one record with everything). */
    uint32_t announced;
    char names[GPU_SCOPE_DEPTH][DPT_NAME_INLINE];
    uint64_t id_next, id_end;     /* block of scope ids */
    uint32_t corr_next, corr_end; /* block of correlation ids */
    void *evc[DPT_EVCACHE];       /* cached pooled events of evc_device */
    int nevc;
    int evc_device;
    struct { /* hipConfigureCall, for hipLaunchByPtr */
        bool set;
        uint32_t grid[3], block[3];
        const void *stream;
    } cfg;
    bool inherit;       /* DPTOP_TRACE_INHERIT_STEP (dpt_inherit_slow) */
    bool own_steps;     /* it opened a step: it never takes another thread's */
    uint64_t inherited; /* the process's open step it announced and carries while nothing is open */
    _Atomic bool orphan; /* the thread has exited */
    struct dpt_thread *next;
};

/* The calling thread's state (initial-exec TLS: one pointer, no lookup). */
extern _Thread_local struct dpt_thread *dpt_self __attribute__((tls_model("initial-exec")));

/* Slow path: initialise the process (first use) and the calling thread.
 * NULL when tracing is disabled. */
struct dpt_thread *dpt_thread_slow(void);

static inline struct dpt_thread *dpt_thread_get(void)
{
    struct dpt_thread *t = dpt_self;
    return __builtin_expect(t != NULL, 1) ? t : dpt_thread_slow();
}

/* CLOCK_MONOTONIC in ns. */
static inline int64_t dpt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * A time stamp for a ring record.  Where the kernel's clocksource is an
 * invariant TSC, CLOCK_MONOTONIC is itself a linear function of the TSC:
 * the hot path then reads the TSC (a third of the cost of clock_gettime)
 * and the background thread maps ticks to CLOCK_MONOTONIC with pairs it
 * takes every cycle.  Elsewhere stamps are CLOCK_MONOTONIC readings.
 */
static inline int64_t dpt_stamp(const struct dpt_thread *t)
{
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_expect(t->tsc, 1))
        return (int64_t)__builtin_ia32_rdtsc();
#endif
    return dpt_now();
}

/*
 * With DPTOP_TRACE_INHERIT_STEP, a thread that never opens steps of its
 * own and has nothing open carries the step open in the process while
 * exactly one is: PyTorch runs the backward pass on autograd's thread,
 * whose kernels belong to the step the training loop opened on its own.
 * Off by default: SPEC §6 gives an event its own thread's innermost range.
 * dpt_inherit_slow takes the process's open step (0: none, or several)
 * into t->inherited, first writing its pair into the thread's own ring
 * when it is new to the thread, so that the pair reaches a receiver before
 * any event of this thread that carries it (the stepping thread's ring is
 * drained on its own schedule).
 */
void dpt_inherit_slow(struct dpt_thread *t);

/* The scope an event of the thread is issued in: its innermost open one,
 * else (nothing open, no steps of its own) the step it inherited. */
static inline uint64_t dpt_scope_of(const struct dpt_thread *t)
{
    uint64_t id = gpu_scope_current(&t->stack);
    return id != 0 || t->own_steps ? id : t->inherited;
}

/* Write the open records of the frames not yet announced, or take the
 * process's open step (something is about to carry the scope id). */
void dpt_announce_slow(struct dpt_thread *t);
static inline void dpt_announce(struct dpt_thread *t)
{
    if (__builtin_expect(t->announced < t->stack.depth, 0))
        dpt_announce_slow(t);
    else if (__builtin_expect(t->inherit, 0) && t->stack.depth == 0 && !t->own_steps)
        dpt_inherit_slow(t);
}

/* A new correlation id of the calling thread (blocks of ids from a shared
 * counter, so no shared write per call). */
uint32_t dpt_corr_refill(struct dpt_thread *t);
static inline uint32_t dpt_corr_next(struct dpt_thread *t)
{
    return t->corr_next < t->corr_end ? t->corr_next++ : dpt_corr_refill(t);
}

/* Configuration values the backends read. */
struct dpt_env {
    uint32_t pid;
    gpu_names_t *names; /* background thread only */
    const char *hip_library;
    int64_t snapshot_ns;
    int64_t flush_ns; /* longest wait of a batch: CUPTI's records are asked for as often */
    size_t max_pending;
    size_t events_per_dev;
    bool cuda_api_all; /* CUPTI: every runtime call, not only the work */
};

/* A capture backend. */
struct dpt_backend {
    const char *name; /* "hip", "cupti": the proc message's backend */
    /* Process start (first use, any thread, once). NULL: no backend here. */
    void *(*open)(const struct dpt_env *env, char *err);
    /* A new application thread (its own thread). */
    void (*thread_init)(void *st, struct dpt_thread *t);
    /* An exited thread's leftovers (cached events), on the background thread. */
    void (*thread_fini)(void *st, struct dpt_thread *t);
    /* Background thread: the GPU part of a DPT_REC_OP record.  false: dropped. */
    bool (*submit)(void *st, const struct dpt_rec *r, uint32_t tid);
    /* Background thread: a DPT_REC_FUNC record. */
    void (*note_function)(void *st, const void *fn, const char *name);
    uint32_t (*stream_id)(void *st, const void *stream, int device);
    int (*poll)(void *st, int64_t now, gpu_msg_fn fn, void *ctx);
    void (*finish)(void *st, int64_t timeout_ns, gpu_msg_fn fn, void *ctx);
    uint32_t (*devices)(void *st);
    uint64_t (*dropped)(void *st);
};

extern const struct dpt_backend dpt_backend_impl;

/* The backend's state (NULL before the process is initialised or when the
 * backend found nothing to capture). */
void *dpt_backend_state(void);
/* The same, opening the backend now if it found nothing at process start
 * (a runtime loaded later). */
void *dpt_backend_ensure(void);
/* The backend's table of forwarded functions, resolved once by `resolve`
 * (whether tracing is on or not: forwarding must always work). */
const void *dpt_real(void *(*resolve)(void));
/* Count GPU work that could not be bracketed (no events, record failed). */
void dpt_count_untimed(void);
/* For gpu_source_opts.scope_now: the calling thread's scope and tid. */
uint64_t dpt_scope_now(void *app, uint32_t *tid);
/* For gpu_source_opts.host_event: queue a host event of the calling thread. */
void dpt_host_event(void *app, const gpu_event_t *ev, const char *name);
/* Why the backend found nothing to capture at process start ("" if it did). */
const char *dpt_backend_error(void);
/* Initialise the process now (CUPTI's InitializeInjection). */
bool dpt_process_start(void);
/* The slot the CUPTI backend keeps its one instance in (CUPTI's buffer
 * callbacks carry no user pointer). */
void **dpt_cupti_slot(void);

#endif /* DP_GPU_DPTRACE_INT_H */
