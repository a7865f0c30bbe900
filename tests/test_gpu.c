/*
 * Unit tests for gpu/: the event model and its batch wire codec, names and
 * the scope tree, the per-thread ring and scope stack, clock maps, the
 * local link (message headers, the ingest decoder's malformed-input table,
 * a real ZeroMQ round trip), the simulated workload, CUPTI record
 * translation (when built), amdgpu sysfs metrics against a fake tree, the
 * source table, and the HIP resolver against the fake HIP runtime.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zmq.h>

#include "gpu/gpu.h"
#include "gpu/gpu_int.h"
#include "gpu/hip_int.h"

#include <dlfcn.h>

#ifdef DP_HAVE_CUPTI
#include <cupti.h>
#endif

static gpu_event_t sample(int i)
{
    gpu_event_t e = {0};
    e.kind = (uint8_t)(1 + i % (GPU_EV_NKINDS - 1));
    e.flags = GPU_EVF_DEVICE_TIME;
    e.device = (uint16_t)(i % 8);
    e.pid = 4242;
    e.tid = 4243 + (uint32_t)i;
    e.stream = (uint32_t)i % 3;
    e.name_id = (uint32_t)i + 1;
    e.corr_id = (uint32_t)i * 7;
    e.scope_id = 0x1122334455667788ULL + (uint64_t)i;
    e.start_ns = 1790000000000000000LL + i * 1000;
    e.end_ns = e.start_ns + 500 + i;
    if (e.kind == GPU_EV_KERNEL) {
        e.grid[0] = 100000 + (uint32_t)i;
        e.grid[1] = 3;
        e.grid[2] = 2;
        e.block[0] = 256;
        e.block[1] = 1;
        e.block[2] = 1;
    } else {
        e.bytes = 1ULL << 33;
        if (e.kind == GPU_EV_MEMCPY)
            e.copy_kind = GPU_COPY_D2H;
        if (e.kind == GPU_EV_STEP)
            e.step = 123456789012ULL;
    }
    return e;
}

static void assert_event_equal(const gpu_event_t *a, const gpu_event_t *b)
{
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->flags, b->flags);
    assert_int_equal(a->device, b->device);
    assert_int_equal(a->node, b->node);
    assert_int_equal(a->copy_kind, b->copy_kind);
    assert_int_equal(a->pid, b->pid);
    assert_int_equal(a->tid, b->tid);
    assert_int_equal(a->stream, b->stream);
    assert_int_equal(a->name_id, b->name_id);
    assert_int_equal(a->corr_id, b->corr_id);
    assert_true(a->scope_id == b->scope_id);
    assert_true(a->start_ns == b->start_ns);
    assert_true(a->end_ns == b->end_ns);
    assert_true(a->bytes == b->bytes);
    assert_true(a->step == b->step);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(a->grid[i], b->grid[i]);
        assert_int_equal(a->block[i], b->block[i]);
    }
}

static void test_roundtrip_every_kind(void **state)
{
    enum { N = 32 };
    gpu_event_t in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = sample(i);
    size_t sz = gpu_batch_size(N);
    assert_int_equal(sz, 16 + 64 * N);
    uint8_t *buf = malloc(sz);
    assert_int_equal(gpu_batch_encode(in, N, buf), sz);
    size_t n = 0;
    char err[BASE_ERRLEN];
    assert_int_equal(gpu_batch_decode(buf, sz, 9, out, N, &n, err), BASE_DEC_OK);
    assert_int_equal(n, N);
    for (int i = 0; i < N; i++) {
        in[i].node = 9;
        assert_event_equal(&in[i], &out[i]);
    }
    free(buf);
}

static void test_clamping_is_flagged(void **state)
{
    gpu_event_t e = sample(0), out;
    e.kind = GPU_EV_KERNEL;
    e.grid[2] = 70000;
    uint8_t buf[16 + 64];
    gpu_batch_encode(&e, 1, buf);
    size_t n;
    assert_int_equal(gpu_batch_decode(buf, sizeof buf, 0, &out, 1, &n, NULL), BASE_DEC_OK);
    assert_int_equal(out.grid[2], 65535);
    assert_true(out.flags & GPU_EVF_CLAMPED);
}

static void test_truncation_at_every_byte(void **state)
{
    enum { N = 3 };
    gpu_event_t in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = sample(i);
    uint8_t buf[16 + 64 * N];
    gpu_batch_encode(in, N, buf);
    char err[BASE_ERRLEN];
    for (size_t len = 0; len < sizeof buf; len++) {
        size_t n = 99;
        enum base_dec rc = gpu_batch_decode(buf, len, 0, out, N, &n, err);
        assert_int_equal(rc, BASE_DEC_TRUNCATED);
        assert_int_equal(n, 0);
        assert_true(strlen(err) > 0);
    }
}

static void test_header_faults(void **state)
{
    gpu_event_t in = sample(1), out[4];
    uint8_t buf[16 + 64 + 1];
    gpu_batch_encode(&in, 1, buf);
    size_t n;
    char err[BASE_ERRLEN];
    uint8_t bad[sizeof buf];

    memcpy(bad, buf, sizeof bad);
    bad[0] ^= 0xff;
    assert_int_equal(gpu_batch_decode(bad, 80, 0, out, 4, &n, err), BASE_DEC_BAD_MAGIC);
    memcpy(bad, buf, sizeof bad);
    bad[4] = 2;
    assert_int_equal(gpu_batch_decode(bad, 80, 0, out, 4, &n, err), BASE_DEC_BAD_VERSION);
    memcpy(bad, buf, sizeof bad);
    bad[6] = 63;
    assert_int_equal(gpu_batch_decode(bad, 80, 0, out, 4, &n, err), BASE_DEC_BAD_VALUE);
    /* A huge count must not be believed: it is truncation, not an allocation. */
    memcpy(bad, buf, sizeof bad);
    bad[8] = bad[9] = bad[10] = bad[11] = 0xff;
    assert_int_equal(gpu_batch_decode(bad, 80, 0, out, 4, &n, err), BASE_DEC_TRUNCATED);
    /* Trailing garbage after the records. */
    assert_int_equal(gpu_batch_decode(buf, 81, 0, out, 4, &n, err), BASE_DEC_BAD_VALUE);
    /* More records than the caller accepts. */
    assert_int_equal(gpu_batch_decode(buf, 80, 0, out, 0, &n, err), BASE_DEC_OVERSIZED);
    /* Unknown kind, and an event that ends before it starts. */
    memcpy(bad, buf, sizeof bad);
    bad[16] = 0;
    assert_int_equal(gpu_batch_decode(bad, 80, 0, out, 4, &n, err), BASE_DEC_BAD_VALUE);
    memcpy(bad, buf, sizeof bad);
    bad[16] = 200;
    assert_int_equal(gpu_batch_decode(bad, 80, 0, out, 4, &n, err), BASE_DEC_BAD_VALUE);
    memcpy(bad, buf, sizeof bad);
    bad[16 + 47] = 0x80; /* end_ns becomes very negative */
    assert_int_equal(gpu_batch_decode(bad, 80, 0, out, 4, &n, err), BASE_DEC_BAD_VALUE);
}

static void test_bit_flips_never_crash(void **state)
{
    enum { N = 4 };
    gpu_event_t in[N], out[N];
    for (int i = 0; i < N; i++)
        in[i] = sample(i);
    uint8_t buf[16 + 64 * N], bad[sizeof buf];
    gpu_batch_encode(in, N, buf);
    size_t accepted = 0;
    for (size_t bit = 0; bit < sizeof buf * 8; bit++) {
        memcpy(bad, buf, sizeof buf);
        bad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        size_t n;
        enum base_dec rc = gpu_batch_decode(bad, sizeof bad, 0, out, N, &n, NULL);
        if (rc == BASE_DEC_OK) {
            assert_int_equal(n, N);
            accepted++;
        } else {
            assert_int_equal(n, 0);
        }
    }
    /* Flips in payload fields decode (the codec has no checksum; frames do). */
    assert_true(accepted > 0);
}

static void test_kind_names(void **state)
{
    assert_string_equal(gpu_event_kind_name(GPU_EV_KERNEL), "kernel");
    assert_string_equal(gpu_event_kind_name(GPU_EV_INSTANT), "instant");
    assert_string_equal(gpu_event_kind_name((enum gpu_event_kind)0), "unknown");
    assert_string_equal(gpu_event_kind_name((enum gpu_event_kind)77), "unknown");
}

/* ------------------------------------------------------------------ names */

/* The u64 map against a plain array over random puts, gets and deletes
 * of 2000 keys: growth, probe chains and backward-shift deletion. */
static void test_u64map(void **state)
{
    enum { KEYS = 2000 };
    static uint64_t ref[KEYS + 1]; /* 0: absent */
    memset(ref, 0, sizeof ref);
    struct gpu_u64map m;
    gpu_u64map_init(&m, 8);
    uint64_t x = 88172645463325252ULL;
    size_t n = 0;
    for (int op = 0; op < 200000; op++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        uint64_t key = 1 + x % KEYS, val = x >> 20 | 1;
        switch ((x >> 40) % 3) {
        case 0:
            n += ref[key] == 0;
            gpu_u64map_put(&m, key, val);
            ref[key] = val;
            break;
        case 1:
            assert_int_equal(gpu_u64map_del(&m, key), ref[key] != 0);
            n -= ref[key] != 0;
            ref[key] = 0;
            break;
        default: {
            uint64_t *v = gpu_u64map_get(&m, key);
            assert_true(ref[key] == 0 ? v == NULL : v != NULL && *v == ref[key]);
        }
        }
        assert_int_equal(m.n, n);
    }
    for (uint64_t k = 1; k <= KEYS; k++) {
        uint64_t *v = gpu_u64map_get(&m, k);
        assert_true(ref[k] == 0 ? v == NULL : v != NULL && *v == ref[k]);
    }
    assert_null(gpu_u64map_get(&m, 0)); /* 0 is never a key */
    gpu_u64map_put(&m, 0, 5);
    assert_int_equal(m.n, n);
    gpu_u64map_fini(&m);
}

static void test_names_intern(void **state)
{
    gpu_names_t *n = gpu_names_new(4);
    assert_int_equal(gpu_names_intern(n, "fwd_gemm"), 1);
    assert_int_equal(gpu_names_intern(n, "bwd_gemm"), 2);
    assert_int_equal(gpu_names_intern(n, "fwd_gemm"), 1);
    assert_string_equal(gpu_names_get(n, 2), "bwd_gemm");
    assert_null(gpu_names_get(n, 0));
    assert_null(gpu_names_get(n, 3));
    assert_int_equal(gpu_names_intern(n, NULL), 0);
    /* A long name is cut to GPU_NAME_MAX bytes without splitting UTF-8. */
    char long_name[400];
    memset(long_name, 'a', sizeof long_name);
    memcpy(long_name + GPU_NAME_MAX - 1, "\xc3\xa9", 2); /* 'é' across the limit */
    long_name[sizeof long_name - 1] = '\0';
    uint32_t id = gpu_names_intern(n, long_name);
    assert_int_equal(id, 3);
    assert_int_equal(strlen(gpu_names_get(n, id)), GPU_NAME_MAX - 1);
    assert_int_equal(gpu_names_intern(n, "x"), 4);
    /* Full: 0, counted. */
    assert_int_equal(gpu_names_intern(n, "y"), 0);
    assert_int_equal(gpu_names_full_drops(n), 1);
    assert_int_equal(gpu_names_count(n), 4);
    gpu_names_destroy(&n);
    assert_null(n);
}

/* Kernel symbols: C++ ones demangled once (this process has libstdc++:
 * libzmq needs it), others as they are, overlong ones cut with a hash. */
static void test_names_symbol(void **state)
{
    gpu_names_t *n = gpu_names_new(16);
    uint32_t a = gpu_names_intern_symbol(n, "_Z12scale_kernelIfEvPT_S0_i");
    assert_string_equal(gpu_names_get(n, a), "void scale_kernel<float>(float*, float, int)");
    assert_int_equal(gpu_names_intern_symbol(n, "_Z12scale_kernelIfEvPT_S0_i"), a);
    assert_int_equal(gpu_names_intern(n, "void scale_kernel<float>(float*, float, int)"), a);
    assert_int_equal(gpu_names_count(n), 1);
    uint32_t b = gpu_names_intern_symbol(n, "spin_kernel");
    assert_string_equal(gpu_names_get(n, b), "spin_kernel");
    /* Not a valid mangling: kept as it is. */
    uint32_t c = gpu_names_intern_symbol(n, "_Zgarbage(");
    assert_string_equal(gpu_names_get(n, c), "_Zgarbage(");
    assert_int_equal(gpu_names_intern_symbol(n, NULL), 0);
    /* Two templates alike in their first GPU_NAME_MAX bytes keep two names. */
    char s1[600], s2[600];
    memset(s1, 'x', sizeof s1);
    s1[sizeof s1 - 1] = '\0';
    memcpy(s2, s1, sizeof s2);
    s2[sizeof s2 - 2] = 'y';
    uint32_t d = gpu_names_intern_symbol(n, s1), e = gpu_names_intern_symbol(n, s2);
    assert_int_not_equal(d, e);
    assert_int_equal(strlen(gpu_names_get(n, d)), GPU_NAME_MAX);
    assert_memory_equal(gpu_names_get(n, d), s1, GPU_NAME_MAX - 16);
    assert_memory_equal(gpu_names_get(n, d) + GPU_NAME_MAX - 16, "\xe2\x80\xa6#", 4);
    assert_int_equal(gpu_names_intern_symbol(n, s2), e);
    gpu_names_destroy(&n);
}

/* NCCL's and RCCL's kernels are known as collectives, demangled or not. */
static void test_names_collective(void **state)
{
    gpu_names_t *n = gpu_names_new(16);
    static const char *const yes[] = {
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        "ncclKernel_AllGather_RING_LL_Sum_int8_t", "void ncclDevKernel_Generic(int)",
        "rcclKernel_ReduceScatter"};
    static const char *const no[] = {"fwd_gemm",
                                     "void at::native::vectorized_elementwise_kernel<4>",
                                     "ncclMemsetHelper", "my_ncclKernel"};
    for (size_t i = 0; i < BASE_ARRAY_LEN(yes); i++)
        assert_true(gpu_names_collective(n, gpu_names_intern(n, yes[i])));
    for (size_t i = 0; i < BASE_ARRAY_LEN(no); i++)
        assert_false(gpu_names_collective(n, gpu_names_intern(n, no[i])));
    assert_false(gpu_names_collective(n, 0));
    assert_false(gpu_names_collective(n, 999));
    gpu_names_destroy(&n);
}

static void test_names_many(void **state)
{
    gpu_names_t *n = gpu_names_new(20000);
    char buf[32];
    for (int i = 0; i < 20000; i++) {
        snprintf(buf, sizeof buf, "k%d", i);
        assert_int_equal(gpu_names_intern(n, buf), (uint32_t)i + 1);
    }
    for (int i = 0; i < 20000; i += 997) {
        snprintf(buf, sizeof buf, "k%d", i);
        assert_int_equal(gpu_names_intern(n, buf), (uint32_t)i + 1);
        assert_string_equal(gpu_names_get(n, (uint32_t)i + 1), buf);
    }
    gpu_names_destroy(&n);
}

/* ------------------------------------------------------------- scope tree */

static void test_scopetree(void **state)
{
    gpu_scopetree_t *t = gpu_scopetree_new(100);
    char err[BASE_ERRLEN];
    assert_int_equal(gpu_scopetree_add(t, 1, 0, err), 1);
    assert_int_equal(gpu_scopetree_add(t, 2, 1, err), 1);
    assert_int_equal(gpu_scopetree_add(t, 3, 2, err), 1);
    assert_int_equal(gpu_scopetree_add(t, 3, 2, err), 0); /* recorded once */
    assert_int_equal(gpu_scopetree_add(t, 3, 1, err), BASE_ERR);
    assert_non_null(strstr(err, "already has parent"));
    assert_int_equal(gpu_scopetree_add(t, 0, 1, err), BASE_ERR);
    assert_int_equal(gpu_scopetree_add(t, 5, 5, err), BASE_ERR);
    uint64_t path[8], parent;
    assert_int_equal(gpu_scopetree_path(t, 3, path, 8), 3);
    assert_true(path[0] == 1 && path[1] == 2 && path[2] == 3);
    assert_int_equal(gpu_scopetree_parent(t, 2, &parent), BASE_OK);
    assert_true(parent == 1);
    assert_int_equal(gpu_scopetree_parent(t, 77, &parent), BASE_ERR);
    /* Seed 004: a root-to-leaf sequence adds pairs from the leaf up and
     * stops at the first id already known. */
    uint64_t seq[] = {1, 2, 10, 11};
    assert_int_equal(gpu_scopetree_add_path(t, seq, 4), 2);
    assert_int_equal(gpu_scopetree_parent(t, 10, &parent), BASE_OK);
    assert_true(parent == 2);
    assert_int_equal(gpu_scopetree_add_path(t, seq, 4), 0);
    assert_int_equal(gpu_scopetree_size(t), 5);
    gpu_scopetree_destroy(&t);
}

static void count_pair(void *ctx, const struct gpu_scope_pair *p)
{
    uint64_t *last = ctx;
    assert_true(p->child > *last); /* oldest first */
    *last = p->child;
}

static void test_scopetree_bounded(void **state)
{
    gpu_scopetree_t *t = gpu_scopetree_new(64);
    for (uint64_t i = 1; i <= 1000; i++)
        assert_int_equal(gpu_scopetree_add(t, i, i - 1, NULL), 1);
    assert_int_equal(gpu_scopetree_size(t), 64);
    assert_int_equal(gpu_scopetree_evicted(t), 1000 - 64);
    uint64_t parent, last = 0;
    assert_int_equal(gpu_scopetree_parent(t, 1000, &parent), BASE_OK);
    assert_true(parent == 999);
    assert_int_equal(gpu_scopetree_parent(t, 5, &parent), BASE_ERR);
    gpu_scopetree_foreach(t, count_pair, &last);
    assert_true(last == 1000);
    /* A path stops at the oldest ancestor still known. */
    uint64_t path[128];
    assert_int_equal(gpu_scopetree_path(t, 1000, path, 128), 64);
    gpu_scopetree_destroy(&t);
}

/* ------------------------------------------------------------ scope stack */

static void test_scope_stack(void **state)
{
    struct gpu_scope_stack *s = calloc(1, sizeof *s);
    uint64_t parent = 99;
    struct gpu_scope_frame f;
    assert_true(gpu_scope_current(s) == 0);
    assert_non_null(gpu_scope_push(s, 10, GPU_EV_STEP, 100, 7, &parent));
    assert_true(parent == 0);
    assert_non_null(gpu_scope_push(s, 11, GPU_EV_RANGE, 110, 0, &parent));
    assert_true(parent == 10);
    assert_non_null(gpu_scope_push(s, 12, GPU_EV_RANGE, 120, 0, &parent));
    assert_true(parent == 11);
    assert_true(gpu_scope_current(s) == 12);
    assert_int_equal(gpu_scope_step_depth(s), 3);
    assert_int_equal(gpu_scope_pop(s, &f), 1);
    assert_true(f.id == 12 && f.start_ns == 120);
    assert_int_equal(gpu_scope_step_depth(s), 2);
    assert_int_equal(gpu_scope_pop(s, &f), 1);
    assert_int_equal(gpu_scope_pop(s, &f), 1);
    assert_true(f.id == 10 && f.kind == GPU_EV_STEP && f.step == 7);
    assert_int_equal(gpu_scope_step_depth(s), 0);
    /* A pop with nothing open is counted. */
    assert_int_equal(gpu_scope_pop(s, &f), -1);
    assert_int_equal(s->unbalanced, 1);
    /* Too deep: refused pushes are counted and their pops matched. */
    for (uint64_t i = 1; i <= GPU_SCOPE_DEPTH + 5; i++) {
        struct gpu_scope_frame *fr = gpu_scope_push(s, i, GPU_EV_RANGE, 0, 0, &parent);
        if (i <= GPU_SCOPE_DEPTH)
            assert_non_null(fr);
        else
            assert_null(fr);
    }
    assert_int_equal(s->too_deep, 5);
    assert_true(gpu_scope_current(s) == GPU_SCOPE_DEPTH);
    for (int i = 0; i < 5; i++)
        assert_int_equal(gpu_scope_pop(s, &f), 0);
    assert_int_equal(gpu_scope_pop(s, &f), 1);
    assert_true(f.id == GPU_SCOPE_DEPTH);
    free(s);
}

/* ------------------------------------------------------------------- ring */

struct rec16 {
    uint64_t seq;
    uint64_t check;
};

static void collect16(void *ctx, const void *rec)
{
    uint64_t *next = ctx;
    const struct rec16 *r = rec;
    assert_true(r->seq == *next);
    assert_true(r->check == ~r->seq);
    (*next)++;
}

static void test_ring_full_drops(void **state)
{
    gpu_ring_t *r = gpu_ring_new(100, sizeof(struct rec16)); /* rounded up to 128 */
    assert_int_equal(gpu_ring_space(r), 128);
    struct rec16 x;
    for (uint64_t i = 0; i < 128; i++) {
        x = (struct rec16){i, ~i};
        assert_true(gpu_ring_push(r, &x));
    }
    assert_int_equal(gpu_ring_space(r), 0);
    x = (struct rec16){999, ~999ULL};
    assert_false(gpu_ring_push(r, &x));
    assert_null(gpu_ring_reserve(r));
    assert_int_equal(gpu_ring_dropped(r), 2);
    gpu_ring_count_drop(r, 3);
    assert_int_equal(gpu_ring_dropped(r), 5);
    uint64_t next = 0;
    assert_int_equal(gpu_ring_drain(r, collect16, &next, 50), 50);
    assert_int_equal(gpu_ring_used(r), 78);
    /* Room again, and FIFO order across the wrap. */
    for (uint64_t i = 128; i < 178; i++) {
        x = (struct rec16){i, ~i};
        assert_true(gpu_ring_push(r, &x));
    }
    assert_int_equal(gpu_ring_drain(r, collect16, &next, 1000), 128);
    assert_true(next == 178);
    assert_int_equal(gpu_ring_used(r), 0);
    gpu_ring_destroy(&r);
    assert_null(r);
}

struct ring_race {
    gpu_ring_t *r;
    uint64_t n;
    uint64_t pushed;
};

static void *producer(void *arg)
{
    struct ring_race *rr = arg;
    for (uint64_t i = 0; i < rr->n; i++) {
        struct rec16 *slot = gpu_ring_reserve(rr->r);
        if (slot == NULL)
            continue; /* dropped, counted by the ring */
        slot->seq = rr->pushed;
        slot->check = ~rr->pushed;
        rr->pushed++;
        gpu_ring_commit(rr->r);
    }
    return NULL;
}

static void test_ring_concurrent(void **state)
{
    /* One producer, one consumer, a small ring: every record arrives in
     * order or is counted as dropped, none is torn. */
    struct ring_race rr = {gpu_ring_new(256, sizeof(struct rec16)), 2000000, 0};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, producer, &rr), 0);
    uint64_t next = 0;
    for (;;) {
        size_t got = gpu_ring_drain(rr.r, collect16, &next, 64);
        if (got == 0) {
            if (pthread_tryjoin_np(th, NULL) == 0)
                break;
            sched_yield();
        }
    }
    gpu_ring_drain(rr.r, collect16, &next, SIZE_MAX);
    assert_true(next == rr.pushed);
    assert_true(rr.pushed + gpu_ring_dropped(rr.r) == rr.n);
    gpu_ring_destroy(&rr.r);
}

/* -------------------------------------------------------------- clock map */

static void test_clockmap(void **state)
{
    gpu_clockmap_t *m = gpu_clockmap_new(8);
    int64_t b;
    char err[BASE_ERRLEN];
    assert_int_equal(gpu_clockmap_map(m, 5, &b), BASE_ERR);
    /* One pair: offset only. */
    assert_int_equal(gpu_clockmap_add(m, 1000, 5000, err), BASE_OK);
    assert_int_equal(gpu_clockmap_map(m, 1500, &b), BASE_OK);
    assert_true(b == 5500);
    /* Later pairs must advance in both domains. */
    assert_int_equal(gpu_clockmap_add(m, 1000, 6000, err), BASE_ERR);
    assert_int_equal(gpu_clockmap_add(m, 2000, 5000, err), BASE_ERR);
    gpu_clockmap_destroy(&m);

    /* A GPU clock at 1.7e18 ns running 20 ppm fast, 3.25 ms ahead: the map
     * recovers trace time to the ns between pairs and close outside. */
    m = gpu_clockmap_new(16);
    const int64_t t0 = 1700000000000000000LL, period = 100000000;
    for (int k = 0; k < 20; k++) {
        int64_t trace = t0 + k * period;
        int64_t gpu = trace + 3250000 + (int64_t)((long double)(k * period) * 20e-6L);
        assert_int_equal(gpu_clockmap_add(m, gpu, trace, err), BASE_OK);
    }
    assert_int_equal(gpu_clockmap_count(m), 16); /* oldest evicted */
    for (int64_t dt = 4 * period + 12345; dt < 19 * period; dt += 77777777) {
        int64_t gpu = t0 + dt + 3250000 + (int64_t)((long double)dt * 20e-6L);
        assert_int_equal(gpu_clockmap_map(m, gpu, &b), BASE_OK);
        assert_true(llabs(b - (t0 + dt)) <= 2);
    }
    /* Extrapolation past the last pair and before the first kept one. */
    int64_t dt = 25 * period, gpu = t0 + dt + 3250000 + (int64_t)((long double)dt * 20e-6L);
    assert_int_equal(gpu_clockmap_map(m, gpu, &b), BASE_OK);
    assert_true(llabs(b - (t0 + dt)) <= 2);
    dt = 1 * period;
    gpu = t0 + dt + 3250000 + (int64_t)((long double)dt * 20e-6L);
    assert_int_equal(gpu_clockmap_map(m, gpu, &b), BASE_OK);
    assert_true(llabs(b - (t0 + dt)) <= 2);
    gpu_clockmap_destroy(&m);
    assert_null(m);

    /* Segments of different slopes, the ring wrapped (13 pairs in 8): a
     * time maps on its own segment, whether it is the last one, the one
     * before (tried first) or older (searched), and on the pairs exactly. */
    m = gpu_clockmap_new(8);
    int64_t pa[13], pb[13], prev = t0 - 1000000LL;
    for (int k = 0; k < 13; k++) {
        pa[k] = t0 + k * 1000000LL;
        pb[k] = prev + 1000000LL + (k % 2 ? 300 : -200) * (k % 5);
        prev = pb[k];
        assert_int_equal(gpu_clockmap_add(m, pa[k], pb[k], err), BASE_OK);
    }
    for (int k = 5; k < 13; k++) {
        assert_int_equal(gpu_clockmap_map(m, pa[k], &b), BASE_OK);
        assert_true(b == pb[k]);
        if (k == 12)
            break;
        int64_t a = pa[k] + 250000; /* a quarter into segment k */
        int64_t want = pb[k] + (pb[k + 1] - pb[k]) / 4;
        assert_int_equal(gpu_clockmap_map(m, a, &b), BASE_OK);
        assert_true(llabs(b - want) <= 1);
    }
    gpu_clockmap_destroy(&m);
}

/* ------------------------------------------------------ link and ingest */

/* Decode a message given as (topic, header, optional payload). */
static enum base_dec decode3(gpu_ingest_t *in, const char *topic, const char *hdr,
                             const void *payload, size_t plen, bool with_payload, gpu_msg_t *m,
                             char *err)
{
    const void *frames[3] = {topic, hdr, payload};
    size_t lens[3] = {strlen(topic), strlen(hdr), plen};
    return gpu_ingest_decode(in, frames, lens, with_payload ? 3 : 2, m, err);
}

/* Encode msg the way gpu_link_send does and decode it. */
static enum base_dec roundtrip(gpu_ingest_t *in, const gpu_msg_t *msg, gpu_msg_t *out)
{
    char topic[GPU_LINK_MAX_TOPIC], err[BASE_ERRLEN];
    gpu_msg_topic(msg->kind, topic, sizeof topic);
    char *hdr = gpu_msg_header(msg, err);
    assert_non_null(hdr);
    void *payload = NULL;
    size_t plen = 0;
    if (msg->kind == GPU_MSG_EV) {
        plen = gpu_batch_size(msg->nev);
        payload = malloc(plen);
        gpu_batch_encode(msg->ev, msg->nev, payload);
    }
    enum base_dec rc = decode3(in, topic, hdr, payload, plen, msg->kind == GPU_MSG_EV, out, err);
    free(hdr);
    free(payload);
    return rc;
}

static void test_msg_roundtrip(void **state)
{
    gpu_ingest_t *in = gpu_ingest_new(NULL, NULL, NULL, NULL);
    gpu_msg_t m = {.kind = GPU_MSG_PROC,
                   .pid = 77,
                   .seq = 3,
                   .exe = "train",
                   .backend = "hip",
                   .devices = 8,
                   .t0_ns = 123456789};
    gpu_msg_t out;
    assert_int_equal(roundtrip(in, &m, &out), BASE_DEC_OK);
    assert_int_equal(out.kind, GPU_MSG_PROC);
    assert_int_equal(out.pid, 77);
    assert_true(out.seq == 3);
    assert_string_equal(out.exe, "train");
    assert_string_equal(out.backend, "hip");
    assert_int_equal(out.devices, 8);
    assert_true(out.t0_ns == 123456789);

    uint32_t ids[] = {1, 2};
    const char *strs[] = {"fwd_gemm", "allreduce \xe2\x86\x92 ring"};
    m = (gpu_msg_t){
        .kind = GPU_MSG_NAMES, .pid = 77, .name_ids = ids, .name_strs = strs, .nnames = 2};
    assert_int_equal(roundtrip(in, &m, &out), BASE_DEC_OK);
    assert_int_equal(out.nnames, 2);
    assert_int_equal(out.name_ids[1], 2);
    assert_string_equal(out.name_strs[1], strs[1]);

    struct gpu_scope_pair pairs[] = {{1, 0}, {2, 1}, {UINT64_MAX - 1, 2}};
    m = (gpu_msg_t){.kind = GPU_MSG_SCOPE, .pid = 77, .scope = pairs, .nscope = 3};
    assert_int_equal(roundtrip(in, &m, &out), BASE_DEC_OK);
    assert_int_equal(out.nscope, 3);
    assert_true(out.scope[2].child == UINT64_MAX - 1 && out.scope[2].parent == 2);

    struct gpu_snap_pair sp[] = {{1000, 5000}, {2000, 6001}};
    m = (gpu_msg_t){.kind = GPU_MSG_SNAP,
                    .pid = 77,
                    .domain_a = "gpu0",
                    .domain_b = "trace",
                    .snap = sp,
                    .nsnap = 2};
    assert_int_equal(roundtrip(in, &m, &out), BASE_DEC_OK);
    assert_string_equal(out.domain_a, "gpu0");
    assert_true(out.snap[1].b_ns == 6001);

    gpu_event_t ev[3];
    for (int i = 0; i < 3; i++) {
        ev[i] = sample(i);
        ev[i].pid = 77;
    }
    m = (gpu_msg_t){.kind = GPU_MSG_EV, .pid = 77, .ev = ev, .nev = 3, .dropped_total = 42};
    assert_int_equal(roundtrip(in, &m, &out), BASE_DEC_OK);
    assert_int_equal(out.nev, 3);
    assert_true(out.dropped_total == 42);
    assert_true(out.ev[2].scope_id == ev[2].scope_id);
    assert_int_equal(gpu_ingest_count(in, GPU_MSG_EV), 1);
    assert_int_equal(gpu_ingest_stats(in)->n[BASE_DEC_OK], 5);

    /* The sender refuses what the receiver would refuse. */
    char err[BASE_ERRLEN];
    m = (gpu_msg_t){.kind = GPU_MSG_EV, .pid = 1, .ev = ev, .nev = GPU_LINK_MAX_EVENTS + 1};
    assert_null(gpu_msg_header(&m, err));
    m = (gpu_msg_t){.kind = GPU_MSG_SNAP, .pid = 1, .domain_a = "", .domain_b = "trace"};
    assert_null(gpu_msg_header(&m, err));
    gpu_ingest_destroy(&in);
}

struct bad_case {
    const char *topic;
    const char *hdr; /* NULL: a 1-frame message */
    enum base_dec want;
};

static void test_ingest_malformed(void **state)
{
    static const struct bad_case cases[] = {
        {"dp1.proc.-", NULL, BASE_DEC_TRUNCATED},
        {"xx1.proc.-", "{}", BASE_DEC_BAD_MAGIC},
        {"dp2.proc.-", "{}", BASE_DEC_BAD_VERSION},
        {"dp1.bogus.-", "{}", BASE_DEC_BAD_TYPE},
        {"dp1.proc.3", "{}", BASE_DEC_BAD_VALUE},
        {"dp1.proc", "{}", BASE_DEC_BAD_VALUE},
        {"dp1.names.-.this.topic.is.much.longer.than.sixty.four.bytes.allowed", "{}",
         BASE_DEC_OVERSIZED},
        {"dp1.proc.-", "not json", BASE_DEC_BAD_JSON},
        {"dp1.proc.-", "{\"type\":\"proc\"", BASE_DEC_TRUNCATED},
        {"dp1.proc.-", "[1,2]", BASE_DEC_BAD_TYPE},
        {"dp1.proc.-", "{\"type\":\"names\",\"pid\":1,\"seq\":1}", BASE_DEC_BAD_TYPE},
        {"dp1.proc.-", "{\"type\":\"proc\",\"seq\":1}", BASE_DEC_BAD_TYPE},
        {"dp1.proc.-", "{\"type\":\"proc\",\"pid\":0,\"seq\":1}", BASE_DEC_BAD_VALUE},
        {"dp1.proc.-", "{\"type\":\"proc\",\"pid\":-4,\"seq\":1}", BASE_DEC_BAD_VALUE},
        {"dp1.proc.-", "{\"type\":\"proc\",\"pid\":\"1\",\"seq\":1}", BASE_DEC_BAD_TYPE},
        {"dp1.proc.-",
         "{\"type\":\"proc\",\"pid\":1,\"seq\":1,\"exe\":\"a\",\"backend\":\"opencl\","
         "\"devices\":1,\"t0_ns\":0}",
         BASE_DEC_BAD_VALUE},
        {"dp1.proc.-",
         "{\"type\":\"proc\",\"pid\":1,\"seq\":1,\"exe\":\"a\\u0000b\",\"backend\":\"hip\","
         "\"devices\":1,\"t0_ns\":0}",
         BASE_DEC_BAD_VALUE},
        {"dp1.proc.-",
         "{\"type\":\"proc\",\"pid\":1,\"seq\":1,\"exe\":\"a\",\"backend\":\"hip\","
         "\"devices\":100000,\"t0_ns\":0}",
         BASE_DEC_BAD_VALUE},
        {"dp1.names.-", "{\"type\":\"names\",\"pid\":1,\"seq\":1}", BASE_DEC_BAD_TYPE},
        {"dp1.names.-", "{\"type\":\"names\",\"pid\":1,\"seq\":1,\"names\":{}}", BASE_DEC_BAD_TYPE},
        {"dp1.names.-", "{\"type\":\"names\",\"pid\":1,\"seq\":1,\"names\":[[0,\"x\"]]}",
         BASE_DEC_BAD_VALUE},
        {"dp1.names.-", "{\"type\":\"names\",\"pid\":1,\"seq\":1,\"names\":[[4294967296,\"x\"]]}",
         BASE_DEC_BAD_VALUE},
        {"dp1.names.-", "{\"type\":\"names\",\"pid\":1,\"seq\":1,\"names\":[[1,2]]}",
         BASE_DEC_BAD_TYPE},
        {"dp1.names.-", "{\"type\":\"names\",\"pid\":1,\"seq\":1,\"names\":[[1]]}",
         BASE_DEC_BAD_TYPE},
        {"dp1.names.-", "{\"type\":\"names\",\"pid\":1,\"seq\":1,\"names\":[[1,\"\xff\xfe\"]]}",
         BASE_DEC_BAD_VALUE},
        {"dp1.scope.-", "{\"type\":\"scope\",\"pid\":1,\"seq\":1,\"tree\":[[0,1]]}",
         BASE_DEC_BAD_VALUE},
        {"dp1.scope.-", "{\"type\":\"scope\",\"pid\":1,\"seq\":1,\"tree\":[[3,3]]}",
         BASE_DEC_BAD_VALUE},
        {"dp1.scope.-", "{\"type\":\"scope\",\"pid\":1,\"seq\":1,\"tree\":[[3,-1]]}",
         BASE_DEC_BAD_VALUE},
        {"dp1.scope.-", "{\"type\":\"scope\",\"pid\":1,\"seq\":1,\"tree\":[[3,1.5]]}",
         BASE_DEC_BAD_TYPE},
        {"dp1.snap.-", "{\"type\":\"snap\",\"pid\":1,\"seq\":1,\"a\":\"gpu0\",\"pairs\":[]}",
         BASE_DEC_BAD_TYPE},
        {"dp1.snap.-",
         "{\"type\":\"snap\",\"pid\":1,\"seq\":1,\"a\":\"gpu 0\",\"b\":\"trace\",\"pairs\":[]}",
         BASE_DEC_BAD_VALUE},
        {"dp1.snap.-",
         "{\"type\":\"snap\",\"pid\":1,\"seq\":1,\"a\":\"trace\",\"b\":\"trace\",\"pairs\":[]}",
         BASE_DEC_BAD_VALUE},
        {"dp1.snap.-",
         "{\"type\":\"snap\",\"pid\":1,\"seq\":1,\"a\":\"gpu0\",\"b\":\"trace\","
         "\"pairs\":[[10,20],[10,30]]}",
         BASE_DEC_BAD_VALUE},
        {"dp1.snap.-",
         "{\"type\":\"snap\",\"pid\":1,\"seq\":1,\"a\":\"gpu0\",\"b\":5,"
         "\"pairs\":[]}",
         BASE_DEC_BAD_TYPE},
        /* an ev message needs its payload frame */
        {"dp1.ev.-", "{\"type\":\"ev\",\"pid\":1,\"seq\":1,\"count\":0,\"dropped\":0}",
         BASE_DEC_TRUNCATED},
    };
    gpu_ingest_t *in = gpu_ingest_new(NULL, NULL, NULL, NULL);
    char err[BASE_ERRLEN];
    gpu_msg_t m;
    for (size_t i = 0; i < BASE_ARRAY_LEN(cases); i++) {
        const struct bad_case *c = &cases[i];
        enum base_dec rc;
        if (c->hdr == NULL) {
            const void *frames[1] = {c->topic};
            size_t lens[1] = {strlen(c->topic)};
            rc = gpu_ingest_decode(in, frames, lens, 1, &m, err);
        } else {
            rc = decode3(in, c->topic, c->hdr, NULL, 0, false, &m, err);
        }
        if (rc != c->want)
            fail_msg("case %zu (%s %s): got %s, want %s (%s)", i, c->topic, c->hdr ? c->hdr : "-",
                     base_dec_name(rc), base_dec_name(c->want), err);
        assert_true(strlen(err) > 0);
    }
    assert_int_equal(base_decstats_errors(gpu_ingest_stats(in)), BASE_ARRAY_LEN(cases));
    assert_int_equal(gpu_ingest_stats(in)->n[BASE_DEC_OK], 0);
    assert_true(strlen(gpu_ingest_last_error(in)) > 0);

    /* Event batches: count mismatch, foreign pid, bad payload, too many. */
    gpu_event_t ev[2] = {sample(0), sample(1)};
    ev[0].pid = ev[1].pid = 5;
    uint8_t payload[16 + 2 * 64];
    gpu_batch_encode(ev, 2, payload);
    const char *h2 = "{\"type\":\"ev\",\"pid\":5,\"seq\":1,\"count\":2,\"dropped\":0}";
    assert_int_equal(decode3(in, "dp1.ev.-", h2, payload, sizeof payload, true, &m, err),
                     BASE_DEC_OK);
    const char *h3 = "{\"type\":\"ev\",\"pid\":5,\"seq\":1,\"count\":3,\"dropped\":0}";
    assert_int_equal(decode3(in, "dp1.ev.-", h3, payload, sizeof payload, true, &m, err),
                     BASE_DEC_BAD_VALUE);
    const char *h6 = "{\"type\":\"ev\",\"pid\":6,\"seq\":1,\"count\":2,\"dropped\":0}";
    assert_int_equal(decode3(in, "dp1.ev.-", h6, payload, sizeof payload, true, &m, err),
                     BASE_DEC_BAD_VALUE);
    assert_non_null(strstr(err, "pid"));
    assert_int_equal(decode3(in, "dp1.ev.-", h2, payload, sizeof payload - 1, true, &m, err),
                     BASE_DEC_TRUNCATED);
    const char *hbig = "{\"type\":\"ev\",\"pid\":5,\"seq\":1,\"count\":5000,\"dropped\":0}";
    assert_int_equal(decode3(in, "dp1.ev.-", hbig, payload, sizeof payload, true, &m, err),
                     BASE_DEC_OVERSIZED);
    payload[0] ^= 0xff;
    assert_int_equal(decode3(in, "dp1.ev.-", h2, payload, sizeof payload, true, &m, err),
                     BASE_DEC_BAD_MAGIC);
    /* A header larger than the limit is refused before it is parsed. */
    char *huge = malloc(GPU_LINK_MAX_HDR + 2);
    memset(huge, ' ', GPU_LINK_MAX_HDR + 1);
    huge[GPU_LINK_MAX_HDR + 1] = '\0';
    assert_int_equal(decode3(in, "dp1.proc.-", huge, NULL, 0, false, &m, err), BASE_DEC_OVERSIZED);
    free(huge);
    gpu_ingest_destroy(&in);
}

/* Every prefix and every single-bit flip of a valid names message decodes
 * to a result, never a crash. */
static void test_ingest_fuzzish(void **state)
{
    gpu_ingest_t *in = gpu_ingest_new(NULL, NULL, NULL, NULL);
    const char *hdr = "{\"type\":\"names\",\"pid\":9,\"seq\":4,\"names\":[[1,\"a\"],[2,\"bb\"]]}";
    size_t n = strlen(hdr);
    char *buf = malloc(n + 1);
    gpu_msg_t m;
    size_t ok = 0;
    for (size_t len = 0; len <= n; len++) {
        memcpy(buf, hdr, len);
        buf[len] = '\0';
        if (decode3(in, "dp1.names.-", buf, NULL, 0, false, &m, NULL) == BASE_DEC_OK)
            ok++;
    }
    assert_int_equal(ok, 1);
    for (size_t bit = 0; bit < n * 8; bit++) {
        memcpy(buf, hdr, n + 1);
        buf[bit / 8] ^= (char)(1u << (bit % 8));
        const void *frames[2] = {"dp1.names.-", buf};
        size_t lens[2] = {11, n};
        gpu_ingest_decode(in, frames, lens, 2, &m, NULL);
    }
    free(buf);
    gpu_ingest_destroy(&in);
}

struct got_msgs {
    uint64_t per_kind[GPU_MSG_NKINDS];
    uint64_t events;
    uint32_t pid;
};

static void on_got(void *ctx, const gpu_msg_t *m)
{
    struct got_msgs *g = ctx;
    g->per_kind[m->kind]++;
    g->events += m->nev;
    g->pid = m->pid;
}

static void test_link_over_zmq(void **state)
{
    char dir[] = "/tmp/dptop-gpu-test.XXXXXX", ep[128], err[BASE_ERRLEN];
    assert_non_null(mkdtemp(dir));
    snprintf(ep, sizeof ep, "ipc://%s/trace.sock", dir);
    /* No receiver: every send is refused at once and counted. */
    gpu_link_t *l = gpu_link_new(ep, 8, err);
    assert_non_null(l);
    gpu_msg_t m = {.kind = GPU_MSG_PROC, .pid = 1234, .exe = "t", .backend = "none"};
    int64_t t0 = base_monotonic_ns();
    assert_int_equal(gpu_link_send(l, &m, err), BASE_ERR);
    assert_true(base_monotonic_ns() - t0 < 1000000000); /* it did not wait */
    assert_int_equal(gpu_link_refused(l), 1);

    struct got_msgs g;
    memset(&g, 0, sizeof g);
    gpu_ingest_t *in = gpu_ingest_new(ep, on_got, &g, err);
    assert_non_null(in);
    assert_non_null(gpu_ingest_socket(in));
    /* The monitor reports the connection; then messages flow. */
    bool connected = false;
    for (int i = 0; i < 500 && !connected; i++) {
        connected = gpu_link_take_reconnect(l);
        if (!connected)
            base_sleep_ns(10000000);
    }
    assert_true(connected);
    gpu_event_t ev[4];
    for (int i = 0; i < 4; i++) {
        ev[i] = sample(i);
        ev[i].pid = 1234;
    }
    gpu_msg_t e = {.kind = GPU_MSG_EV, .pid = 1234, .ev = ev, .nev = 4};
    bool sent = false;
    for (int i = 0; i < 500 && !sent; i++) {
        sent = gpu_link_send(l, &m, err) == BASE_OK;
        if (!sent)
            base_sleep_ns(10000000);
    }
    assert_true(sent);
    assert_int_equal(gpu_link_send(l, &e, err), BASE_OK);
    for (int i = 0; i < 200 && g.per_kind[GPU_MSG_EV] == 0; i++)
        assert_true(gpu_ingest_poll(in, 20, 100, err) >= 0);
    assert_int_equal(g.per_kind[GPU_MSG_PROC], 1);
    assert_int_equal(g.per_kind[GPU_MSG_EV], 1);
    assert_true(g.events == 4);
    assert_int_equal(g.pid, 1234);
    assert_true(gpu_link_sent(l) >= 2);

    /* Garbage from a raw peer is counted, not passed on. */
    void *ctx = zmq_ctx_new();
    void *push = zmq_socket(ctx, ZMQ_PUSH);
    assert_int_equal(zmq_connect(push, ep), 0);
    zmq_send(push, "dp1.ev.-", 8, ZMQ_SNDMORE);
    zmq_send(push, "{]", 2, 0);
    zmq_send(push, "a", 1, ZMQ_SNDMORE);
    zmq_send(push, "b", 1, ZMQ_SNDMORE);
    zmq_send(push, "c", 1, ZMQ_SNDMORE);
    zmq_send(push, "d", 1, 0);
    for (int i = 0; i < 200 && base_decstats_errors(gpu_ingest_stats(in)) < 2; i++)
        gpu_ingest_poll(in, 20, 100, err);
    assert_int_equal(base_decstats_errors(gpu_ingest_stats(in)), 2);
    assert_int_equal(g.per_kind[GPU_MSG_EV], 1);
    int linger = 0;
    zmq_setsockopt(push, ZMQ_LINGER, &linger, sizeof linger);
    zmq_close(push);
    zmq_ctx_term(ctx);

    gpu_link_destroy(&l);
    gpu_ingest_destroy(&in);
    char path[160];
    snprintf(path, sizeof path, "%s/trace.sock", dir);
    unlink(path);
    rmdir(dir);
}

static void test_default_endpoint(void **state)
{
    char buf[256], err[BASE_ERRLEN];
    setenv("DPTOP_TRACE_ENDPOINT", "ipc:///x/y.sock", 1);
    assert_int_equal(gpu_link_default_endpoint(buf, sizeof buf, err), BASE_OK);
    assert_string_equal(buf, "ipc:///x/y.sock");
    unsetenv("DPTOP_TRACE_ENDPOINT");
    setenv("XDG_RUNTIME_DIR", "/run/user/1000", 1);
    assert_int_equal(gpu_link_default_endpoint(buf, sizeof buf, err), BASE_OK);
    assert_string_equal(buf, "ipc:///run/user/1000/dptop-trace.sock");
    unsetenv("XDG_RUNTIME_DIR");
    assert_int_equal(gpu_link_default_endpoint(buf, sizeof buf, err), BASE_OK);
    assert_non_null(strstr(buf, "ipc:///tmp/dptop-trace-"));
    assert_int_equal(gpu_link_default_endpoint(buf, 8, err), BASE_ERR);
}

/* ------------------------------------------------------- simulated workload */

struct sim_clock {
    int64_t offset;
    double drift_ppm;
    int64_t t0;
};

static int64_t sim_clock_fn(void *ctx, int64_t t)
{
    const struct sim_clock *c = ctx;
    return t + c->offset + (int64_t)(c->drift_ppm * 1e-6 * (double)(t - c->t0));
}

#define SIM_MAX_EV 20000

struct sim_sink {
    gpu_event_t *ev;
    size_t nev;
    bool names_first;
    size_t msgs;
    gpu_scopetree_t *tree;
    uint64_t events_before_scope; /* events whose scope id was not known yet */
    int64_t horizon;              /* local time of the poll: nothing may end later */
    uint64_t late_events;
};

static void sim_collect(void *ctx, const gpu_msg_t *m)
{
    struct sim_sink *s = ctx;
    if (s->msgs++ == 0)
        s->names_first = m->kind == GPU_MSG_NAMES && m->nnames > 0;
    if (m->kind == GPU_MSG_SCOPE)
        for (size_t i = 0; i < m->nscope; i++)
            assert_int_equal(
                gpu_scopetree_add(s->tree, m->scope[i].child, m->scope[i].parent, NULL), 1);
    if (m->kind != GPU_MSG_EV)
        return;
    for (size_t i = 0; i < m->nev; i++) {
        uint64_t parent;
        if (m->ev[i].scope_id != 0 &&
            gpu_scopetree_parent(s->tree, m->ev[i].scope_id, &parent) != BASE_OK)
            s->events_before_scope++;
        if (m->ev[i].end_ns > s->horizon)
            s->late_events++;
        assert_true(s->nev < SIM_MAX_EV);
        s->ev[s->nev++] = m->ev[i];
    }
}

/* The collective kernels of a run, in order. */
static size_t collectives(const struct sim_sink *s, const gpu_event_t **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nev && n < max; i++)
        if (s->ev[i].kind == GPU_EV_KERNEL && (s->ev[i].flags & GPU_EVF_COLLECTIVE))
            out[n++] = &s->ev[i];
    return n;
}

static void test_sim_workload(void **state)
{
    const int64_t t0 = 1700000000000000000LL, period = 100000000, late = 5000000;
    struct sim_clock clocks[3] = {{0, 0, t0}, {7000000, 50, t0}, {-4000000, -20, t0}};
    struct sim_sink sinks[3];
    gpu_sim_t *sims[3];
    char err[BASE_ERRLEN];
    for (int n = 0; n < 3; n++) {
        struct gpu_sim_cfg cfg;
        gpu_sim_defaults(&cfg);
        cfg.node = (uint16_t)n;
        cfg.pid = 1000 + (uint32_t)n;
        cfg.step_period_ns = period;
        cfg.layers = 3;
        cfg.straggler_node = 2;
        cfg.straggler_late_ns = late;
        sims[n] = gpu_sim_new(&cfg, sim_clock_fn, &clocks[n], err);
        assert_non_null(sims[n]);
        memset(&sinks[n], 0, sizeof sinks[n]);
        sinks[n].ev = calloc(SIM_MAX_EV, sizeof(gpu_event_t));
        sinks[n].tree = gpu_scopetree_new(100000);
    }
    /* Real time passes: poll every 7 ms of true time for 0.65 s. */
    int64_t last_t = 0;
    for (int64_t t = t0 + 3000000; t < t0 + 650000000; t += 7000000) {
        last_t = t;
        for (int n = 0; n < 3; n++) {
            sinks[n].horizon = sim_clock_fn(&clocks[n], t);
            assert_true(gpu_sim_poll(sims[n], t, sim_collect, &sinks[n], err) >= 0);
        }
    }
    for (int n = 0; n < 3; n++) {
        assert_true(sinks[n].names_first);
        assert_int_equal(sinks[n].events_before_scope, 0);
        assert_int_equal(sinks[n].late_events, 0);
        assert_true(gpu_sim_steps(sims[n]) >= 5);
    }
    const gpu_event_t *c[3][16];
    size_t nc[3];
    for (int n = 0; n < 3; n++)
        nc[n] = collectives(&sinks[n], c[n], 16);
    assert_true(nc[0] >= 4);
    assert_int_equal(nc[0], nc[1]);
    assert_int_equal(nc[0], nc[2]);
    for (size_t k = 0; k < nc[0]; k++) {
        /* Node 0 runs on true time: its collective starts at 0.7 of a step. */
        assert_true((c[0][k]->start_ns - t0) % period == period * 7 / 10);
        int64_t ts, te;
        uint64_t step = (uint64_t)(c[0][k]->start_ns / period);
        gpu_sim_collective_true(sims[1], step, &ts, &te);
        assert_true(ts == c[0][k]->start_ns);
        /* Raw clocks: node 1's collective looks 7 ms (plus drift) late. */
        int64_t raw = c[1][k]->start_ns - c[0][k]->start_ns;
        assert_true(raw >= 7000000 && raw < 7000000 + 100000);
        assert_true(raw == sim_clock_fn(&clocks[1], ts) - ts);
        /* Aligned (clock removed): nodes 0 and 1 start together... */
        assert_true(c[1][k]->start_ns - (sim_clock_fn(&clocks[1], ts) - ts) == ts);
        /* ...the straggler is late by exactly its lateness... */
        int64_t ts2, te2;
        gpu_sim_collective_true(sims[2], step, &ts2, &te2);
        assert_true(ts2 == ts + late);
        assert_true(llabs(c[2][k]->start_ns - sim_clock_fn(&clocks[2], ts2)) <= 1);
        /* ...and everyone ends together. */
        assert_true(te2 == te && te == c[0][k]->end_ns);
    }
    /* Correlation: each API call has exactly one GPU operation, which it
     * precedes (the work of the last calls may not have ended yet). */
    struct sim_sink *s0 = &sinks[0];
    size_t apis = 0;
    for (size_t i = 0; i < s0->nev; i++) {
        const gpu_event_t *a = &s0->ev[i];
        if (a->kind != GPU_EV_API)
            continue;
        apis++;
        assert_true(a->corr_id != 0);
        int found = 0;
        for (size_t j = 0; j < s0->nev; j++) {
            const gpu_event_t *g = &s0->ev[j];
            if (g->corr_id == a->corr_id && g->kind != GPU_EV_API) {
                found++;
                assert_true(g->start_ns >= a->start_ns);
                assert_true(g->scope_id == a->scope_id);
                assert_true(g->flags & GPU_EVF_DEVICE_TIME);
            }
        }
        if (a->start_ns < last_t - period)
            assert_int_equal(found, 1);
        else
            assert_true(found <= 1);
    }
    assert_true(apis > 20);
    /* Every kernel's scope chain reaches a step scope at its root (the
     * last step has not ended yet). */
    for (size_t i = 0; i < s0->nev; i++) {
        if (s0->ev[i].kind != GPU_EV_KERNEL || s0->ev[i].start_ns >= last_t - period)
            continue;
        uint64_t path[8];
        size_t depth = gpu_scopetree_path(s0->tree, s0->ev[i].scope_id, path, 8);
        assert_true(depth >= 2);
        bool root_is_step = false;
        for (size_t j = 0; j < s0->nev; j++)
            if (s0->ev[j].kind == GPU_EV_STEP && s0->ev[j].scope_id == path[0])
                root_is_step = true;
        assert_true(root_is_step);
    }
    /* A long pause skips old steps instead of replaying them. */
    sinks[0].horizon = INT64_MAX;
    assert_true(gpu_sim_poll(sims[0], t0 + 10 * 1000000000LL, sim_collect, &sinks[0], err) >= 0);
    assert_true(gpu_sim_skipped(sims[0]) > 80);
    for (int n = 0; n < 3; n++) {
        gpu_sim_destroy(&sims[n]);
        free(sinks[n].ev);
        gpu_scopetree_destroy(&sinks[n].tree);
    }
}

static void test_sim_config(void **state)
{
    struct gpu_sim_cfg cfg;
    char err[BASE_ERRLEN];
    gpu_sim_defaults(&cfg);
    cfg.pid = 1;
    cfg.layers = 0;
    assert_null(gpu_sim_new(&cfg, NULL, NULL, err));
    assert_non_null(strstr(err, "layers"));
    gpu_sim_defaults(&cfg);
    cfg.pid = 1;
    cfg.straggler_node = 0;
    cfg.straggler_late_ns = cfg.step_period_ns / 5;
    assert_null(gpu_sim_new(&cfg, NULL, NULL, err));
    assert_non_null(strstr(err, "straggler"));
    gpu_sim_defaults(&cfg);
    cfg.pid = 1;
    cfg.step_period_ns = 10;
    assert_null(gpu_sim_new(&cfg, NULL, NULL, err));
    gpu_sim_defaults(&cfg);
    assert_null(gpu_sim_new(&cfg, NULL, NULL, err)); /* pid 0 */
}

/* ----------------------------------------------------------- source table */

static void count_msgs(void *ctx, const gpu_msg_t *m)
{
    (*(size_t *)ctx) += m->kind == GPU_MSG_EV ? m->nev : 0;
}

/* Integer source options: absent leaves the value, a bad one is refused
 * naming the source, the key and the range; the hip source refuses its
 * own before it looks for a runtime. */
static void test_opts_int(void **state)
{
    char err[BASE_ERRLEN];
    int64_t v = 7;
    assert_int_equal(gpu_opts_int(NULL, "x", "k", 1, 10, &v, err), BASE_OK);
    assert_int_equal(gpu_opts_int("other=3", "x", "k", 1, 10, &v, err), BASE_OK);
    assert_int_equal(v, 7);
    assert_int_equal(gpu_opts_int("k=1,k=10", "x", "k", 1, 10, &v, err), BASE_OK);
    assert_int_equal(v, 10); /* the last one wins */
    static const char *const bad[] = {
        "k=0", "k=11", "k=", "k=3x", "k=-1", "k=99999999999999999999"};
    for (size_t i = 0; i < BASE_ARRAY_LEN(bad); i++) {
        err[0] = '\0';
        assert_int_equal(gpu_opts_int(bad[i], "x", "k", 1, 10, &v, err), BASE_ERR);
        assert_non_null(strstr(err, "x: option k '"));
        assert_non_null(strstr(err, "is not an integer in [1, 10]"));
        assert_int_equal(v, 10);
    }
    const struct gpu_source *hip = gpu_source_find("hip");
    static const char *const hip_bad[] = {"snapshot_ms=0", "max_pending=abc",
                                          "events_per_dev=10000001"};
    for (size_t i = 0; i < BASE_ARRAY_LEN(hip_bad); i++) {
        struct gpu_source_opts o = {.pid = 1, .options = hip_bad[i]};
        err[0] = '\0';
        assert_null(hip->open(&o, err));
        assert_non_null(strstr(err, "hip: option "));
    }
}

static void test_sources(void **state)
{
    char err[BASE_ERRLEN];
    const struct gpu_source *sim = gpu_source_find("sim");
    assert_non_null(sim);
    assert_true(sim->flags & GPU_SRC_IN_AGENT);
    assert_non_null(gpu_source_find("hip"));
    assert_null(gpu_source_find("nope"));
    /* cupti lives in libdptrace_cupti.so only. */
    assert_null(gpu_source_find("cupti"));
    size_t n = 0;
    for (const struct gpu_source *const *s = gpu_sources(); *s != NULL; s++) {
        /* Every hook is there: callers use them without checking. */
        assert_non_null((*s)->probe);
        assert_non_null((*s)->open);
        assert_non_null((*s)->poll);
        assert_non_null((*s)->counters);
        assert_non_null((*s)->close);
        n++;
    }
    assert_int_equal(n, 2);
    /* No HIP runtime in this process. */
    assert_int_equal(gpu_source_find("hip")->probe(err), BASE_ERR);
    assert_non_null(strstr(err, "HIP"));
    assert_int_equal(sim->probe(err), BASE_OK);

    struct gpu_source_opts o = {.node = 1, .pid = 99, .options = "step_ms=20,layers=2,seed=5"};
    void *st = sim->open(&o, err);
    assert_non_null(st);
    size_t events = 0;
    int64_t t = 1700000000000000000LL;
    for (int i = 0; i < 20; i++, t += 5000000)
        assert_true(sim->poll(st, t, count_msgs, &events, err) >= 0);
    assert_true(events > 0);
    struct gpu_source_counters c;
    sim->counters(st, &c);
    assert_true(c.steps > 0);
    assert_int_equal(c.dropped, 0);
    sim->close(st);
    /* step_us overrides step_ms: sub-millisecond periods. */
    o.options = "step_us=2500,step_ms=20,layers=1";
    st = sim->open(&o, err);
    assert_non_null(st);
    events = 0;
    for (int i = 0; i < 20; i++, t += 5000000)
        assert_true(sim->poll(st, t, count_msgs, &events, err) >= 0);
    struct gpu_source_counters c2;
    sim->counters(st, &c2);
    /* 100 ms of polls at 2.5 ms steps: about 40 steps, far more than at 20 ms. */
    assert_true(c2.steps >= 20);
    sim->close(st);
    static const char *const bad[] = {"step_ms=abc", "foo=1",
                                      "layers",      "layers=65",
                                      "late_us=-1",  "straggler=1,late_us=5000,step_ms=20"};
    for (size_t i = 0; i < BASE_ARRAY_LEN(bad); i++) {
        o.options = bad[i];
        err[0] = '\0';
        assert_null(sim->open(&o, err));
        assert_true(strlen(err) > 0);
    }
}

/* ------------------------------------------------------------------ CUPTI */

#ifdef DP_HAVE_CUPTI
static uint64_t scope_of_corr(void *ctx, uint32_t corr, uint32_t *tid)
{
    if (corr != 9)
        return 0;
    *tid = 4321;
    return 77;
}

static void test_cupti_translate(void **state)
{
    assert_true(gpu_cupti_built());
    gpu_names_t *names = gpu_names_new(16);
    gpu_clockmap_t *map = gpu_clockmap_new(4);
    /* CUPTI time 1e15 is trace time 5e12 (and both run at the same rate). */
    assert_int_equal(gpu_clockmap_add(map, 1000000000000000LL, 5000000000000LL, NULL), BASE_OK);
    assert_int_equal(gpu_clockmap_add(map, 1000000100000000LL, 5000100000000LL, NULL), BASE_OK);
    struct gpu_cupti_xlat x = {.pid = 555, .map = map, .names = names, .scope_of = scope_of_corr};
    gpu_event_t ev;
    char err[BASE_ERRLEN];

    CUpti_ActivityKernel10 k;
    memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.start = 1000000000050000ULL;
    k.end = 1000000000080000ULL;
    k.deviceId = 3;
    k.streamId = 14;
    k.gridX = 128;
    k.gridY = 2;
    k.gridZ = 1;
    k.blockX = 256;
    k.blockY = 1;
    k.blockZ = 1;
    k.correlationId = 9;
    k.name = "volta_sgemm_128x64_nn";
    assert_int_equal(gpu_cupti_translate(&k, &x, &ev, err), BASE_DEC_OK);
    assert_int_equal(ev.kind, GPU_EV_KERNEL);
    assert_true(ev.flags & GPU_EVF_DEVICE_TIME);
    assert_int_equal(ev.device, 3);
    assert_int_equal(ev.stream, 14);
    assert_int_equal(ev.pid, 555);
    assert_int_equal(ev.tid, 4321);
    assert_int_equal(ev.corr_id, 9);
    assert_true(ev.scope_id == 77);
    assert_true(ev.start_ns == 5000000050000LL);
    assert_true(ev.end_ns == 5000000080000LL);
    assert_int_equal(ev.grid[0], 128);
    assert_int_equal(ev.grid[1], 2);
    assert_int_equal(ev.block[0], 256);
    assert_string_equal(gpu_names_get(names, ev.name_id), "volta_sgemm_128x64_nn");
    /* C++ kernels are named as the source names them. */
    k.name = "_ZN7cutlass6KernelINS_4gemm6kernel4GemmIfEEEEvNT_6ParamsE";
    assert_int_equal(gpu_cupti_translate(&k, &x, &ev, err), BASE_DEC_OK);
    assert_string_equal(gpu_names_get(names, ev.name_id),
                        "void cutlass::Kernel<cutlass::gemm::kernel::Gemm<float> >"
                        "(cutlass::gemm::kernel::Gemm<float>::Params)");
    assert_false(ev.flags & GPU_EVF_COLLECTIVE);
    /* NCCL's kernels are collectives. */
    k.name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
    assert_int_equal(gpu_cupti_translate(&k, &x, &ev, err), BASE_DEC_OK);
    assert_true(ev.flags & GPU_EVF_COLLECTIVE);
    assert_true(ev.flags & GPU_EVF_DEVICE_TIME);
    k.name = "volta_sgemm_128x64_nn";
    k.kind = CUPTI_ACTIVITY_KIND_KERNEL;
    k.gridX = -5; /* nonsense from the driver becomes 0, not 4 billion */
    assert_int_equal(gpu_cupti_translate(&k, &x, &ev, err), BASE_DEC_OK);
    assert_int_equal(ev.grid[0], 0);

    CUpti_ActivityMemcpy6 mc;
    memset(&mc, 0, sizeof mc);
    mc.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    mc.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
    mc.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
    mc.bytes = 1 << 20;
    mc.start = 1000000000100000ULL;
    mc.end = 1000000000200000ULL;
    mc.deviceId = 1;
    mc.streamId = 7;
    mc.correlationId = 10;
    assert_int_equal(gpu_cupti_translate(&mc, &x, &ev, err), BASE_DEC_OK);
    assert_int_equal(ev.kind, GPU_EV_MEMCPY);
    assert_int_equal(ev.copy_kind, GPU_COPY_D2H);
    assert_true(ev.bytes == 1 << 20);
    assert_true(ev.flags & GPU_EVF_ASYNC);
    assert_true(ev.scope_id == 0); /* corr 10 has no scope */
    assert_true(ev.start_ns == 5000000100000LL);
    assert_string_equal(gpu_names_get(names, ev.name_id), "memcpy_d2h");
    mc.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    assert_int_equal(gpu_cupti_translate(&mc, &x, &ev, err), BASE_DEC_OK);
    assert_int_equal(ev.copy_kind, GPU_COPY_P2P);

    CUpti_ActivityMemset4 ms;
    memset(&ms, 0, sizeof ms);
    ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    ms.bytes = 4096;
    ms.start = 1000000000300000ULL;
    ms.end = 1000000000300500ULL;
    ms.correlationId = 9;
    assert_int_equal(gpu_cupti_translate(&ms, &x, &ev, err), BASE_DEC_OK);
    assert_int_equal(ev.kind, GPU_EV_MEMSET);
    assert_true(ev.bytes == 4096);
    assert_true(ev.end_ns - ev.start_ns == 500);
    assert_true(ev.scope_id == 77);

    /* Malformed and untranslated records. */
    ms.end = ms.start - 1;
    assert_int_equal(gpu_cupti_translate(&ms, &x, &ev, err), BASE_DEC_BAD_VALUE);
    ms.end = ms.start + 1;
    ms.deviceId = 70000;
    assert_int_equal(gpu_cupti_translate(&ms, &x, &ev, err), BASE_DEC_BAD_VALUE);
    CUpti_ActivityAPI api;
    memset(&api, 0, sizeof api);
    api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    assert_int_equal(gpu_cupti_translate(&api, &x, &ev, err), BASE_DEC_BAD_TYPE);
    /* Without a map, CUPTI times are used as they are. */
    x.map = NULL;
    k.start = 123;
    k.end = 456;
    assert_int_equal(gpu_cupti_translate(&k, &x, &ev, err), BASE_DEC_OK);
    assert_true(ev.start_ns == 123 && ev.end_ns == 456);
    gpu_clockmap_destroy(&map);
    gpu_names_destroy(&names);
}
#else
static void test_cupti_translate(void **state)
{
    assert_false(gpu_cupti_built());
    skip();
}
#endif

/* ---------------------------------------------------------------- metrics */

static void put_file(const char *dir, const char *rel, const char *text)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    /* mkdir -p of the parent */
    for (char *p = path + strlen(dir) + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(path, 0755);
            *p = '/';
        }
    }
    if (text == NULL) {
        mkdir(path, 0755);
        return;
    }
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void rm_rf(const char *path)
{
    DIR *d = opendir(path);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            char sub[PATH_MAX];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            rm_rf(sub);
        }
        closedir(d);
        rmdir(path);
    } else {
        unlink(path);
    }
}

static void test_metrics_sysfs(void **state)
{
    char root[] = "/tmp/dptop-sysfs.XXXXXX";
    assert_non_null(mkdtemp(root));
    /* card0: everything. */
    put_file(root, "card0/device/gpu_busy_percent", "37\n");
    put_file(root, "card0/device/mem_info_vram_used", "1073741824\n");
    put_file(root, "card0/device/mem_info_vram_total", "17163091968\n");
    put_file(root, "card0/device/hwmon/hwmon3/power1_average", "145000000\n");
    put_file(root, "card0/device/hwmon/hwmon3/temp1_input", "61000\n");
    put_file(root, "card0/device/hwmon/hwmon7/temp1_input", "99000\n"); /* not the first */
    /* card2: partial data and garbage. */
    put_file(root, "card2/device/gpu_busy_percent", "250\n");           /* out of range */
    put_file(root, "card2/device/mem_info_vram_used", "lots\n");        /* garbage */
    put_file(root, "card2/device/mem_info_vram_total", "8589934592\n"); /* fine */
    put_file(root, "card2/device/hwmon/hwmon0/temp1_input", "-5000\n");
    put_file(root, "card2/device/hwmon/hwmon0/power1_average", "");
    /* card1: a card with none of the files (not amdgpu): not listed. */
    put_file(root, "card1/device/vendor", "0x8086\n");
    /* Connectors and render nodes are not cards. */
    put_file(root, "card0-DP-1/status", "connected\n");
    put_file(root, "renderD128/dev", "226:128\n");
    /* card10: VRAM used above total is garbage in one of them. */
    put_file(root, "card10/device/mem_info_vram_used", "900\n");
    put_file(root, "card10/device/mem_info_vram_total", "800\n");
    put_file(root, "card10/device/gpu_busy_percent", "0");

    gpu_metrics_t m[8];
    size_t n;
    base_decstats_t st = {0};
    char err[BASE_ERRLEN];
    assert_int_equal(gpu_metrics_read(root, m, 8, &n, &st, err), BASE_OK);
    assert_int_equal(n, 3);
    assert_int_equal(m[0].card, 0);
    assert_string_equal(m[0].vendor, "amd");
    assert_int_equal(m[0].valid, GPU_MET_BUSY | GPU_MET_VRAM_USED | GPU_MET_VRAM_TOTAL |
                                     GPU_MET_POWER | GPU_MET_TEMP);
    assert_int_equal(m[0].busy_pct, 37);
    assert_true(m[0].vram_used == 1073741824ULL);
    assert_true(m[0].vram_total == 17163091968ULL);
    assert_true(m[0].power_uw == 145000000ULL);
    assert_true(m[0].temp_mc == 61000);
    assert_int_equal(m[1].card, 2);
    assert_int_equal(m[1].valid, GPU_MET_VRAM_TOTAL | GPU_MET_TEMP);
    assert_true(m[1].temp_mc == -5000);
    assert_int_equal(m[2].card, 10);
    assert_int_equal(m[2].valid, GPU_MET_BUSY);
    assert_int_equal(m[2].busy_pct, 0);
    /* Rejections counted: busy 250, "lots", empty power file. */
    assert_int_equal(st.n[BASE_DEC_BAD_VALUE], 3);
    assert_true(st.n[BASE_DEC_OK] >= 8);
    /* max bounds the output. */
    assert_int_equal(gpu_metrics_read(root, m, 1, &n, NULL, err), BASE_OK);
    assert_int_equal(n, 1);
    rm_rf(root);
    assert_int_equal(gpu_metrics_read(root, m, 8, &n, NULL, err), BASE_ERR);
    assert_non_null(strstr(err, root));
}

/* --------------------------------------------------- HIP resolver (fake) */

/* A library the tests build, BUILD/tests/REL. */
static bool fake_lib_path(const char *rel, char *buf, size_t len)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return false;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash == NULL)
        return false;
    *slash = '\0'; /* BUILD/tests */
    int w = snprintf(buf, len, "%s/%s", exe, rel);
    return w > 0 && (size_t)w < len && access(buf, R_OK) == 0;
}

static bool fake_hip_path(char *buf, size_t len)
{
    return fake_lib_path("fake_hip/libamdhip64.so.5", buf, len);
}

/* NVIDIA metrics through the fake NVML (two boards, one without a power
 * reading), a library that is not there, and one whose driver is not. */
static void test_nvml_metrics(void **state)
{
    char lib[PATH_MAX], err[BASE_ERRLEN];
    if (!fake_lib_path("fake_nvml/libnvidia-ml.so.1", lib, sizeof lib)) {
        print_message("fake NVML not built next to this test; skipped\n");
        skip();
    }
    gpu_nvml_t *nv = gpu_nvml_new(lib, err);
    assert_non_null(nv);
    gpu_metrics_t m[4];
    size_t n = 0;
    base_decstats_t st;
    memset(&st, 0, sizeof st);
    assert_int_equal(gpu_nvml_read(nv, m, 4, &n, &st, err), BASE_OK);
    assert_int_equal(n, 2);
    assert_string_equal(m[0].name, "Fake NVIDIA A100");
    assert_int_equal(m[0].card, 0);
    assert_string_equal(m[0].vendor, "nvidia");
    assert_int_equal(m[0].valid, GPU_MET_BUSY | GPU_MET_VRAM_USED | GPU_MET_VRAM_TOTAL |
                                     GPU_MET_POWER | GPU_MET_TEMP);
    assert_int_equal(m[0].busy_pct, 37);
    assert_true(m[0].vram_used == 1ULL << 30 && m[0].vram_total == 40ULL << 30);
    assert_true(m[0].power_uw == 123450000ULL);
    assert_true(m[0].temp_mc == 54000);
    /* No power reading on this board: the rest shows, nothing counted bad. */
    assert_string_equal(m[1].name, "Fake NVIDIA T4");
    assert_int_equal(m[1].valid,
                     GPU_MET_BUSY | GPU_MET_VRAM_USED | GPU_MET_VRAM_TOTAL | GPU_MET_TEMP);
    assert_true(base_decstats_errors(&st) == 0);
    /* At most max boards. */
    assert_int_equal(gpu_nvml_read(nv, m, 1, &n, NULL, err), BASE_OK);
    assert_int_equal(n, 1);
    /* A driver without the second memory version: the first, whose "used"
     * counts the driver's 512 MiB reserve. */
    setenv("FAKENVML_NO_MEMINFO_V2", "1", 1);
    assert_int_equal(gpu_nvml_read(nv, m, 4, &n, &st, err), BASE_OK);
    unsetenv("FAKENVML_NO_MEMINFO_V2");
    assert_true(m[0].vram_used == (1ULL << 30) + (512ULL << 20) && m[0].vram_total == 40ULL << 30);
    assert_true(base_decstats_errors(&st) == 0);
    gpu_nvml_destroy(&nv);
    assert_null(nv);
    assert_null(gpu_nvml_new("/nonexistent/libnvidia-ml.so.1", err));
    assert_non_null(strstr(err, "nvml: cannot load: "));
    assert_null(gpu_nvml_new("", err));
    setenv("FAKENVML_INIT", "9", 1); /* NVML_ERROR_DRIVER_NOT_LOADED */
    assert_null(gpu_nvml_new(lib, err));
    assert_non_null(strstr(err, "nvmlInit failed (NVML error 9"));
    unsetenv("FAKENVML_INIT");
}

struct hip_sink {
    gpu_event_t ev[256];
    size_t nev;
    size_t snaps;
    char domain[32];
};

static void hip_collect(void *ctx, const gpu_msg_t *m)
{
    struct hip_sink *s = ctx;
    if (m->kind == GPU_MSG_SNAP) {
        s->snaps += m->nsnap;
        snprintf(s->domain, sizeof s->domain, "%s", m->domain_a);
    }
    if (m->kind == GPU_MSG_EV)
        for (size_t i = 0; i < m->nev && s->nev < 256; i++)
            s->ev[s->nev++] = m->ev[i];
}

/* The fake runtime's entry points, called directly: this file cannot
 * include the HIP headers next to the CUDA ones, so the few types needed
 * are spelled out (they match hip_runtime_api.h). */
struct fake_dim3 {
    uint32_t x, y, z;
};
struct fake_hip {
    void *lib;
    int (*stream_create)(void **s, unsigned int flags);
    int (*stream_sync)(void *s);
    int (*stream_destroy)(void *s);
    int (*event_record)(void *e, void *s);
    int (*launch)(const void *f, struct fake_dim3 g, struct fake_dim3 b, void **args, size_t shm,
                  void *s);
};

static bool fake_hip_open(const char *path, struct fake_hip *f)
{
    f->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (f->lib == NULL)
        return false;
    *(void **)&f->stream_create = dlsym(f->lib, "hipStreamCreateWithFlags");
    *(void **)&f->stream_sync = dlsym(f->lib, "hipStreamSynchronize");
    *(void **)&f->stream_destroy = dlsym(f->lib, "hipStreamDestroy");
    *(void **)&f->event_record = dlsym(f->lib, "hipEventRecord");
    *(void **)&f->launch = dlsym(f->lib, "hipLaunchKernel");
    return f->stream_create && f->stream_sync && f->stream_destroy && f->event_record && f->launch;
}

/* Launch a kernel of `ns` bracketed by two pooled events and submit it. */
static void bracketed_named(gpu_hip_t *hip, const struct fake_hip *f, void *s, int64_t ns,
                            uint32_t corr, const char *name)
{
    void *ev[2];
    assert_int_equal(gpu_hip_events_take(hip, 0, ev, 2, true), 2);
    int64_t dur = ns;
    void *args[] = {&dur};
    struct fake_dim3 g = {1, 1, 1};
    assert_int_equal(f->event_record(ev[0], s), 0);
    assert_int_equal(f->launch((const void *)bracketed_named, g, g, args, 0, s), 0);
    assert_int_equal(f->event_record(ev[1], s), 0);
    struct gpu_hip_op op;
    memset(&op, 0, sizeof op);
    op.ev.kind = GPU_EV_KERNEL;
    op.ev.corr_id = corr;
    op.fn_kind = GPU_HIP_FN_LABEL;
    op.label = name;
    op.stream = s;
    op.ev0 = ev[0];
    op.ev1 = ev[1];
    assert_int_equal(gpu_hip_submit(hip, &op), BASE_OK);
}

static void bracketed(gpu_hip_t *hip, const struct fake_hip *f, void *s, int64_t ns, uint32_t corr)
{
    bracketed_named(hip, f, s, ns, corr, "k");
}

static void test_hip_resolver(void **state)
{
    char lib[PATH_MAX], err[BASE_ERRLEN];
    struct fake_hip f;
    if (!fake_hip_path(lib, sizeof lib) || !fake_hip_open(lib, &f)) {
        print_message("fake libamdhip64 not built next to this test; skipped\n");
        skip();
    }
    struct gpu_hip_opts o = {
        .pid = (uint32_t)getpid(), .library = lib, .snapshot_ns = 20000000, .max_pending = 64};
    gpu_hip_t *hip = gpu_hip_new(&o, err);
    assert_non_null(hip);
    assert_int_equal(gpu_hip_devices(hip), 2);
    void *s1, *s2;
    assert_int_equal(f.stream_create(&s1, 0), 0);
    assert_int_equal(f.stream_create(&s2, 0), 0);
    assert_int_equal(gpu_hip_stream_id(hip, NULL, 0), 0);
    uint32_t id1 = gpu_hip_stream_id(hip, s1, 0), id2 = gpu_hip_stream_id(hip, s2, 0);
    assert_true(id1 != 0 && id2 != 0 && id1 != id2);
    assert_int_equal(gpu_hip_stream_id(hip, s1, 0), id1);

    /* One 3 ms kernel: its device times land on the trace clock around
     * the host times of the launch.  It is RCCL's: a collective. */
    struct hip_sink sink;
    memset(&sink, 0, sizeof sink);
    int64_t h0 = base_monotonic_ns();
    bracketed_named(hip, &f, s1, 3000000, 1, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    int64_t h1 = base_monotonic_ns();
    int64_t deadline = base_monotonic_ns() + 10000000000LL;
    while (sink.nev < 1 && base_monotonic_ns() < deadline) {
        gpu_hip_poll(hip, base_monotonic_ns(), hip_collect, &sink, err);
        base_sleep_ns(1000000);
    }
    assert_int_equal(sink.nev, 1);
    gpu_event_t *e = &sink.ev[0];
    assert_true(e->flags & GPU_EVF_DEVICE_TIME);
    assert_true(e->flags & GPU_EVF_COLLECTIVE);
    assert_int_equal(e->pid, getpid());
    assert_int_equal(e->stream, id1);
    assert_int_equal(e->corr_id, 1);
    int64_t dur = e->end_ns - e->start_ns;
    assert_true(dur >= 2800000 && dur < 3000000 + 500000000);
    /* Generous: the snapshot midpoint and thread wake-ups blur by µs–ms. */
    assert_true(e->start_ns > h0 - 50000000 && e->start_ns < h1 + 500000000);
    assert_true(sink.snaps >= 1);
    assert_string_equal(sink.domain, "gpu0");
    assert_int_equal(gpu_hip_pending(hip), 0);

    /* Many short kernels on two streams: each resolves once, in stream
     * order, without overlap on its stream. */
    sink.nev = 0;
    for (uint32_t i = 0; i < 40; i++)
        bracketed(hip, &f, i % 2 ? s2 : s1, 100000, 100 + i);
    deadline = base_monotonic_ns() + 10000000000LL;
    while (sink.nev < 40 && base_monotonic_ns() < deadline) {
        gpu_hip_poll(hip, base_monotonic_ns(), hip_collect, &sink, err);
        base_sleep_ns(1000000);
    }
    assert_int_equal(sink.nev, 40);
    int64_t last_end[2] = {0, 0};
    uint32_t last_corr[2] = {0, 0};
    for (size_t i = 0; i < sink.nev; i++) {
        int k = sink.ev[i].stream == id2;
        assert_true(sink.ev[i].corr_id > last_corr[k]);
        assert_false(sink.ev[i].flags & GPU_EVF_COLLECTIVE);
        assert_true(sink.ev[i].start_ns >= last_end[k] - 1000);
        last_corr[k] = sink.ev[i].corr_id;
        last_end[k] = sink.ev[i].end_ns;
    }
    /* Snapshot pairs keep coming every 20 ms. */
    size_t snaps = sink.snaps;
    deadline = base_monotonic_ns() + 100000000;
    while (base_monotonic_ns() < deadline) {
        gpu_hip_poll(hip, base_monotonic_ns(), hip_collect, &sink, err);
        base_sleep_ns(2000000);
    }
    assert_true(sink.snaps >= snaps + 2);

    /* A full pending queue drops (and releases) the operation. */
    for (int i = 0; i < 64; i++)
        bracketed(hip, &f, s1, 1000000, 1000 + (uint32_t)i);
    void *ev[2];
    assert_int_equal(gpu_hip_events_take(hip, 0, ev, 2, true), 2);
    struct gpu_hip_op op;
    memset(&op, 0, sizeof op);
    op.ev.kind = GPU_EV_KERNEL;
    op.stream = s1;
    op.ev0 = ev[0];
    op.ev1 = ev[1];
    uint64_t dropped = gpu_hip_dropped(hip);
    assert_int_equal(gpu_hip_submit(hip, &op), BASE_ERR);
    assert_true(gpu_hip_dropped(hip) == dropped + 1);
    /* finish: what does not complete in time is dropped and counted. */
    gpu_hip_finish(hip, 5000000, hip_collect, &sink);
    assert_int_equal(gpu_hip_pending(hip), 0);
    assert_true(gpu_hip_dropped(hip) > dropped + 1);
    assert_int_equal(f.stream_sync(s1), 0);
    assert_int_equal(f.stream_destroy(s1), 0);
    assert_int_equal(f.stream_destroy(s2), 0);
    gpu_hip_destroy(&hip);
    assert_null(hip);

    /* A library without HIP in it is refused with a message. */
    o.library = "libc.so.6";
    assert_null(gpu_hip_new(&o, err));
    assert_non_null(strstr(err, "HIP"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_kind),
        cmocka_unit_test(test_clamping_is_flagged),
        cmocka_unit_test(test_truncation_at_every_byte),
        cmocka_unit_test(test_header_faults),
        cmocka_unit_test(test_bit_flips_never_crash),
        cmocka_unit_test(test_kind_names),
        cmocka_unit_test(test_u64map),
        cmocka_unit_test(test_names_intern),
        cmocka_unit_test(test_names_symbol),
        cmocka_unit_test(test_names_collective),
        cmocka_unit_test(test_names_many),
        cmocka_unit_test(test_scopetree),
        cmocka_unit_test(test_scopetree_bounded),
        cmocka_unit_test(test_scope_stack),
        cmocka_unit_test(test_ring_full_drops),
        cmocka_unit_test(test_ring_concurrent),
        cmocka_unit_test(test_clockmap),
        cmocka_unit_test(test_msg_roundtrip),
        cmocka_unit_test(test_ingest_malformed),
        cmocka_unit_test(test_ingest_fuzzish),
        cmocka_unit_test(test_link_over_zmq),
        cmocka_unit_test(test_default_endpoint),
        cmocka_unit_test(test_sim_workload),
        cmocka_unit_test(test_sim_config),
        cmocka_unit_test(test_opts_int),
        cmocka_unit_test(test_sources),
        cmocka_unit_test(test_cupti_translate),
        cmocka_unit_test(test_metrics_sysfs),
        cmocka_unit_test(test_hip_resolver),
        cmocka_unit_test(test_nvml_metrics),
    };
    return cmocka_run_group_tests_name("gpu", tests, NULL, NULL);
}
