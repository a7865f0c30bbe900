/*
 * bench_dptrace — host time libdptrace adds to intercepted HIP calls (a
 * launch, an async copy, an async memset) and to annotations (a range
 * push/pop, a step begin/end, a mark), against the same calls without it,
 * in the same run.
 *
 * The fake HIP runtime (BUILD/tests/fake_hip/libamdhip64.so.5) is loaded
 * and called directly for the baseline; libdptrace.so is loaded beside it
 * and its interposed hipLaunchKernel called for the traced figure (it
 * forwards to the same fake).  A 20 ms kernel is queued first in every
 * round so that the timed launches only enqueue (no worker wake-ups in the
 * measurement).  Rounds alternate direct / traced / event record, then
 * push/pop pairs; the median round is reported.  Rounds are small enough
 * for libdptrace's default ring (8192 records per thread) and are spaced
 * so that its background thread drains them: the figures are the steady
 * cost with nothing dropped (the drop count is printed).  An in-process
 * receiver (a plain ZeroMQ PULL socket, so that this program needs only
 * libzmq and the base module) takes the events, as dpnode would.
 *
 * The traced launch records two pooled HIP events (hipEventRecord before
 * and after, on the same stream); with the fake runtime each is an enqueue
 * like the launch itself.  Their direct cost is measured too, so the table
 * shows libdptrace's own bookkeeping apart from them.
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zmq.h>

#include "base/base.h"

#define ROUNDS   31
#define LAUNCHES 2000 /* per round: well inside the default ring of 8192 */
#define PAIRS    4000
#define BLOCK_NS 20000000

struct dim3x {
    uint32_t x, y, z;
};
typedef int (*launch_fn)(const void *, struct dim3x, struct dim3x, void **, size_t, void *);
typedef int (*record_fn)(void *, void *);
typedef int (*sync_fn)(void *);
typedef int (*create_fn)(void **, unsigned int);
typedef int (*ecreate_fn)(void **);
typedef void (*push_fn)(const char *);
typedef void (*pop_fn)(void);
typedef int (*copy_fn)(void *, const void *, size_t, int, void *);
typedef int (*set_fn)(void *, int, size_t, void *);
typedef int (*malloc_fn)(void **, size_t);
typedef void (*step_fn)(uint64_t);
typedef void (*mark_fn)(const char *);

struct receiver {
    void *ctx, *pull;
    _Atomic bool stop;
    _Atomic uint64_t events, dropped;
};

/* Count the events of "ev" messages from their JSON header. */
static void *receive(void *arg)
{
    struct receiver *r = arg;
    zmq_pollitem_t it = {r->pull, 0, ZMQ_POLLIN, 0};
    while (!atomic_load(&r->stop)) {
        if (zmq_poll(&it, 1, 20) <= 0)
            continue;
        zmq_msg_t part[3];
        int n = 0, more = 1;
        while (more) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            if (zmq_msg_recv(&m, r->pull, 0) < 0) {
                zmq_msg_close(&m);
                break;
            }
            more = zmq_msg_more(&m);
            if (n < 3)
                part[n++] = m;
            else
                zmq_msg_close(&m);
        }
        if (n == 3) {
            json_object *h = NULL;
            int64_t count = 0, dropped = 0;
            if (base_json_parse(zmq_msg_data(&part[1]), zmq_msg_size(&part[1]), &h, NULL) ==
                    BASE_DEC_OK &&
                base_json_get_i64(h, "count", &count, NULL) == BASE_DEC_OK &&
                base_json_get_i64(h, "dropped", &dropped, NULL) == BASE_DEC_OK) {
                atomic_fetch_add(&r->events, (uint64_t)count);
                atomic_store(&r->dropped, (uint64_t)dropped);
            }
            json_object_put(h);
        }
        for (int i = 0; i < n; i++)
            zmq_msg_close(&part[i]);
    }
    return NULL;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, base_cmp_double);
    return v[n / 2];
}

static void bench_kernel(void)
{
}

/*
 * Sustained delivery: one thread marks at an offered rate for SUSTAIN_NS
 * (paced against the clock; 0: as fast as it can), then the background
 * thread is given time to drain and send.  What reached the receiver and
 * what the library counted dropped are the deltas over the run.  The
 * per-thread ring (8192 records by default) absorbs a background cycle of
 * about 2 ms; beyond what one background thread turns into batches, the
 * rest is dropped and counted, never waited for.
 */
#define SUSTAIN_NS 1000000000LL
#define SETTLE_NS  300000000LL

struct sustained {
    double offered, made, delivered, dropped; /* events per second */
    double ratio;                             /* delivered / made */
};

static struct sustained sustain(mark_fn mark, struct receiver *rx, double rate)
{
    uint64_t ev0 = atomic_load(&rx->events), dr0 = atomic_load(&rx->dropped);
    int64_t t0 = base_monotonic_ns(), end = t0 + SUSTAIN_NS, now = t0;
    uint64_t made = 0;
    while ((now = base_monotonic_ns()) < end) {
        uint64_t want = rate > 0 ? (uint64_t)((double)(now - t0) * rate / 1e9) : made + 256;
        while (made < want) {
            mark("flood");
            made++;
        }
    }
    double secs = (double)(now - t0) / 1e9;
    base_sleep_ns(SETTLE_NS);
    struct sustained s = {
        .offered = rate,
        .made = (double)made / secs,
        .delivered = (double)(atomic_load(&rx->events) - ev0) / secs,
        .dropped = (double)(atomic_load(&rx->dropped) - dr0) / secs,
    };
    s.ratio = s.made > 0 ? s.delivered / s.made : 0;
    return s;
}

int main(void)
{
    char exe[PATH_MAX], build[PATH_MAX], fake[PATH_MAX + 64], lib[PATH_MAX + 64], ep[PATH_MAX + 64],
        dir[] = "/tmp/dptop-bench.XXXXXX";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "bench_dptrace: cannot find myself\n");
        return 1;
    }
    exe[n] = '\0';
    snprintf(build, sizeof build, "%s", exe);
    for (int i = 0; i < 2; i++) /* BUILD/bench/bench_dptrace -> BUILD */
        *strrchr(build, '/') = '\0';
    snprintf(fake, sizeof fake, "%s/tests/fake_hip/libamdhip64.so.5", build);
    snprintf(lib, sizeof lib, "%s/libdptrace.so", build);
    if (access(fake, R_OK) != 0 || access(lib, R_OK) != 0) {
        printf("bench_dptrace: %s or %s not built (make all); skipped\n", fake, lib);
        return 0;
    }
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(ep, sizeof ep, "ipc://%s/trace.sock", dir);
    setenv("DPTOP_TRACE_ENDPOINT", ep, 1);
    setenv("DPTOP_TRACE_QUIET", "1", 1);

    struct receiver rx = {0};
    int linger = 0;
    rx.ctx = zmq_ctx_new();
    rx.pull = zmq_socket(rx.ctx, ZMQ_PULL);
    zmq_setsockopt(rx.pull, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_bind(rx.pull, ep) != 0) {
        fprintf(stderr, "bench_dptrace: cannot bind %s: %s\n", ep, zmq_strerror(errno));
        return 1;
    }
    pthread_t rth;
    pthread_create(&rth, NULL, receive, &rx);

    void *hf = dlopen(fake, RTLD_NOW | RTLD_GLOBAL);
    void *hl = hf ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (hf == NULL || hl == NULL) {
        fprintf(stderr, "bench_dptrace: %s\n", dlerror());
        return 1;
    }
    launch_fn direct = (launch_fn)dlsym(hf, "hipLaunchKernel");
    launch_fn traced = (launch_fn)dlsym(hl, "hipLaunchKernel");
    record_fn record = (record_fn)dlsym(hf, "hipEventRecord");
    sync_fn ssync = (sync_fn)dlsym(hf, "hipStreamSynchronize");
    create_fn screate = (create_fn)dlsym(hf, "hipStreamCreateWithFlags");
    ecreate_fn ecreate = (ecreate_fn)dlsym(hf, "hipEventCreate");
    push_fn push = (push_fn)dlsym(hl, "dpt_range_push");
    pop_fn pop = (pop_fn)dlsym(hl, "dpt_range_pop");
    copy_fn copy_d = (copy_fn)dlsym(hf, "hipMemcpyAsync"),
            copy_t = (copy_fn)dlsym(hl, "hipMemcpyAsync");
    set_fn set_d = (set_fn)dlsym(hf, "hipMemsetAsync"), set_t = (set_fn)dlsym(hl, "hipMemsetAsync");
    malloc_fn dmalloc = (malloc_fn)dlsym(hf, "hipMalloc");
    step_fn step_begin = (step_fn)dlsym(hl, "dpt_step_begin");
    pop_fn step_end = (pop_fn)dlsym(hl, "dpt_step_end");
    mark_fn mark = (mark_fn)dlsym(hl, "dpt_mark");
    if (!direct || !traced || !record || !ssync || !screate || !ecreate || !push || !pop ||
        direct == traced || !copy_d || !copy_t || copy_d == copy_t || !set_d || !set_t ||
        set_d == set_t || !dmalloc || !step_begin || !step_end || !mark) {
        fprintf(stderr, "bench_dptrace: missing entry points\n");
        return 1;
    }
    void *stream, *ev, *buf_a, *buf_b;
    screate(&stream, 0);
    ecreate(&ev);
    dmalloc(&buf_a, 64);
    dmalloc(&buf_b, 64);
    struct dim3x g = {1, 1, 1};
    int64_t zero = 0, block = BLOCK_NS;
    void *args0[] = {&zero}, *argsb[] = {&block};

    /* Warm up: resolution, thread state, event pool, background thread. */
    for (int i = 0; i < LAUNCHES; i++)
        traced((const void *)bench_kernel, g, g, args0, 0, stream);
    ssync(stream);

    /* Modes of a round: launch direct / traced, event record, copy direct /
     * traced, memset direct / traced (one queued 20 ms kernel ahead of each). */
    enum { M_LAUNCH_D, M_LAUNCH_T, M_RECORD, M_COPY_D, M_COPY_T, M_SET_D, M_SET_T, M_N };
    double t_mode[M_N][ROUNDS] = {{0}}, t_pair[ROUNDS] = {0}, t_step[ROUNDS] = {0},
           t_mark[ROUNDS] = {0};
    for (int r = 0; r < ROUNDS; r++) {
        for (int mode = 0; mode < M_N; mode++) {
            direct((const void *)bench_kernel, g, g, argsb, 0, stream);
            int64_t t0 = base_monotonic_ns();
            for (int i = 0; i < LAUNCHES; i++) {
                switch (mode) {
                case M_LAUNCH_D:
                    direct((const void *)bench_kernel, g, g, args0, 0, stream);
                    break;
                case M_LAUNCH_T:
                    traced((const void *)bench_kernel, g, g, args0, 0, stream);
                    break;
                case M_RECORD:
                    record(ev, stream);
                    break;
                case M_COPY_D:
                case M_COPY_T:
                    (mode == M_COPY_D ? copy_d : copy_t)(buf_b, buf_a, 64, 3, stream);
                    break;
                default:
                    (mode == M_SET_D ? set_d : set_t)(buf_a, i & 0xff, 64, stream);
                    break;
                }
            }
            t_mode[mode][r] = (double)(base_monotonic_ns() - t0) / LAUNCHES;
            ssync(stream);
            if (mode == M_LAUNCH_T || mode == M_COPY_T || mode == M_SET_T)
                base_sleep_ns(5000000); /* let the background thread drain */
        }
        int64_t t0 = base_monotonic_ns();
        for (int i = 0; i < PAIRS; i++) {
            push("layer");
            pop();
        }
        t_pair[r] = (double)(base_monotonic_ns() - t0) / PAIRS;
        base_sleep_ns(10000000);
        t0 = base_monotonic_ns();
        for (int i = 0; i < PAIRS / 2; i++) {
            step_begin((uint64_t)(r * PAIRS + i));
            step_end();
        }
        t_step[r] = (double)(base_monotonic_ns() - t0) / (PAIRS / 2);
        base_sleep_ns(10000000);
        t0 = base_monotonic_ns();
        for (int i = 0; i < PAIRS; i++)
            mark("tick");
        t_mark[r] = (double)(base_monotonic_ns() - t0) / PAIRS;
        base_sleep_ns(10000000);
    }
    double d = median(t_mode[M_LAUNCH_D], ROUNDS), t = median(t_mode[M_LAUNCH_T], ROUNDS);
    double rec = median(t_mode[M_RECORD], ROUNDS), pair = median(t_pair, ROUNDS);
    double added = t - d, own = added - 2 * rec;
    double cd = median(t_mode[M_COPY_D], ROUNDS), ct = median(t_mode[M_COPY_T], ROUNDS);
    double sd = median(t_mode[M_SET_D], ROUNDS), st = median(t_mode[M_SET_T], ROUNDS);
    double step = median(t_step, ROUNDS), mk = median(t_mark, ROUNDS);

    /* Let the last batches arrive before reporting what was received. */
    base_sleep_ns(SETTLE_NS);
    uint64_t round_events = atomic_load(&rx.events), round_dropped = atomic_load(&rx.dropped);
    static const double rates[] = {250e3, 500e3, 1e6, 2e6, 4e6, 8e6, 0};
    enum { NRATES = sizeof rates / sizeof rates[0] };
    struct sustained sus[NRATES];
    for (int i = 0; i < NRATES; i++)
        sus[i] = sustain(mark, &rx, rates[i]);
    atomic_store(&rx.stop, true);
    pthread_join(rth, NULL);

    printf("libdptrace host overhead (fake HIP runtime, median of %d rounds)\n", ROUNDS);
    printf("  %-34s %10s %10s %10s %8s\n", "call", "direct ns", "traced ns", "added ns", "goal");
    printf("  %-34s %10.1f %10.1f %10.1f %8s\n", "hipLaunchKernel", d, t, added, "<= 300");
    printf("  %-34s %10.1f %10s %10s %8s\n", "  of which 2 x hipEventRecord", 2 * rec, "", "", "");
    printf("  %-34s %10s %10s %10.1f %8s\n", "  libdptrace bookkeeping", "", "", own, "");
    printf("  %-34s %10.1f %10.1f %10.1f %8s\n", "hipMemcpyAsync (64 B)", cd, ct, ct - cd,
           "<= 300");
    printf("  %-34s %10.1f %10.1f %10.1f %8s\n", "hipMemsetAsync (64 B)", sd, st, st - sd,
           "<= 300");
    printf("  %-34s %10s %10.1f %10.1f %8s\n", "dpt_range_push + dpt_range_pop", "0", pair, pair,
           "<= 100");
    printf("  %-34s %10s %10.1f %10.1f %8s\n", "  per annotation call", "0", pair / 2, pair / 2,
           "<= 50");
    printf("  %-34s %10s %10.1f %10.1f %8s\n", "dpt_step_begin + dpt_step_end", "0", step, step,
           "<= 100");
    printf("  %-34s %10s %10.1f %10.1f %8s\n", "dpt_mark", "0", mk, mk, "<= 50");
    printf("  receiver: %" PRIu64 " events, sender dropped %" PRIu64 "\n", round_events,
           round_dropped);
    printf("\nsustained marks from one thread, %.0f s each (M events/s)\n",
           (double)SUSTAIN_NS / 1e9);
    printf("  %-14s %10s %10s %10s %10s\n", "offered", "made", "delivered", "dropped",
           "delivered/made");
    for (int i = 0; i < NRATES; i++) {
        char off[32];
        if (sus[i].offered > 0)
            snprintf(off, sizeof off, "%.2f", sus[i].offered / 1e6);
        else
            snprintf(off, sizeof off, "flat out");
        printf("  %-14s %10.2f %10.2f %10.2f %10.3f\n", off, sus[i].made / 1e6,
               sus[i].delivered / 1e6, sus[i].dropped / 1e6, sus[i].ratio);
    }
    printf("BENCH dptrace_launch_direct_ns %.1f ns\n", d);
    printf("BENCH dptrace_launch_traced_ns %.1f ns\n", t);
    printf("BENCH dptrace_launch_overhead_ns %.1f ns\n", added);
    printf("BENCH dptrace_launch_bookkeeping_ns %.1f ns\n", own);
    printf("BENCH dptrace_launch_traced_ratio %.2f x\n", t / d);
    printf("BENCH dptrace_push_pop_ns %.1f ns\n", pair);
    printf("BENCH dptrace_annotation_call_ns %.1f ns\n", pair / 2);
    printf("BENCH dptrace_memcpy_async_overhead_ns %.1f ns\n", ct - cd);
    printf("BENCH dptrace_memcpy_async_traced_ratio %.2f x\n", ct / cd);
    printf("BENCH dptrace_memset_async_overhead_ns %.1f ns\n", st - sd);
    printf("BENCH dptrace_memset_async_traced_ratio %.2f x\n", st / sd);
    printf("BENCH dptrace_step_pair_ns %.1f ns\n", step);
    printf("BENCH dptrace_mark_ns %.1f ns\n", mk);
    printf("BENCH dptrace_bench_dropped %" PRIu64 " events\n", round_dropped);
    for (int i = 0; i < NRATES; i++) {
        char name[32];
        if (sus[i].offered > 0)
            snprintf(name, sizeof name, "%.0fk", sus[i].offered / 1e3);
        else
            snprintf(name, sizeof name, "flat");
        printf("BENCH dptrace_sustained_%s_delivered %.3f M/s\n", name, sus[i].delivered / 1e6);
        printf("BENCH dptrace_sustained_%s_delivered_ratio %.3f x\n", name, sus[i].ratio);
    }
    zmq_close(rx.pull);
    zmq_ctx_term(rx.ctx);
    char sock[PATH_MAX + 64];
    snprintf(sock, sizeof sock, "%s/trace.sock", dir);
    unlink(sock);
    rmdir(dir);
    fflush(stdout); /* ahead of libdptrace's exit line on stderr */
    /* libdptrace's exit handler finishes its background thread. */
    return 0;
}
