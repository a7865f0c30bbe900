/* Unit tests for gpu/: the event model and its batch wire codec. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "gpu/gpu.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_every_kind),     cmocka_unit_test(test_clamping_is_flagged),
        cmocka_unit_test(test_truncation_at_every_byte), cmocka_unit_test(test_header_faults),
        cmocka_unit_test(test_bit_flips_never_crash),    cmocka_unit_test(test_kind_names),
    };
    return cmocka_run_group_tests_name("gpu", tests, NULL, NULL);
}
