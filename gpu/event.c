/*
 * Event batch wire codec (protocol v1).  Record layout, little-endian:
 *
 *   0 u8 kind    1 u8 flags   2 u16 device   4 u32 pid    8 u32 tid
 *  12 u32 stream 16 u32 name_id 20 u32 corr_id 24 u64 scope_id
 *  32 i64 start_ns  40 i64 end_ns
 *  48 kernel:  u32 grid_x, u32 grid_y, u16 grid_z, u16 block_x, u16 block_y, u16 block_z
 *  48 others:  u64 bytes, u64 aux (step number for steps, copy kind for memcpy)
 */
#include "gpu/gpu.h"

#include <endian.h>
#include <inttypes.h>
#include <string.h>

size_t gpu_batch_size(size_t n)
{
    return GPU_BATCH_HDR + n * GPU_RECORD_SIZE;
}

static void encode_one(const gpu_event_t *e, uint8_t *r)
{
    uint8_t flags = e->flags;
    r[0] = e->kind;
    base_le_put16(r + 2, e->device);
    base_le_put32(r + 4, e->pid);
    base_le_put32(r + 8, e->tid);
    base_le_put32(r + 12, e->stream);
    base_le_put32(r + 16, e->name_id);
    base_le_put32(r + 20, e->corr_id);
    base_le_put64(r + 24, e->scope_id);
    base_le_put64(r + 32, (uint64_t)e->start_ns);
    base_le_put64(r + 40, (uint64_t)e->end_ns);
    if (e->kind == GPU_EV_KERNEL) {
        uint32_t small[4] = {e->grid[2], e->block[0], e->block[1], e->block[2]};
        base_le_put32(r + 48, e->grid[0]);
        base_le_put32(r + 52, e->grid[1]);
        for (int i = 0; i < 4; i++) {
            if (small[i] > UINT16_MAX) {
                small[i] = UINT16_MAX;
                flags |= GPU_EVF_CLAMPED;
            }
            base_le_put16(r + 56 + 2 * i, (uint16_t)small[i]);
        }
    } else {
        uint64_t aux = e->kind == GPU_EV_STEP     ? e->step
                       : e->kind == GPU_EV_MEMCPY ? e->copy_kind
                                                  : 0;
        base_le_put64(r + 48, e->bytes);
        base_le_put64(r + 56, aux);
    }
    r[1] = flags;
}

size_t gpu_batch_encode(const gpu_event_t *ev, size_t n, void *buf)
{
    uint8_t *p = buf;
    base_le_put32(p, GPU_BATCH_MAGIC);
    base_le_put16(p + 4, GPU_BATCH_VERSION);
    base_le_put16(p + 6, GPU_RECORD_SIZE);
    base_le_put32(p + 8, (uint32_t)n);
    base_le_put32(p + 12, 0);
    p += GPU_BATCH_HDR;
    for (size_t i = 0; i < n; i++, p += GPU_RECORD_SIZE)
        encode_one(&ev[i], p);
    return gpu_batch_size(n);
}

enum base_dec gpu_batch_count(const void *buf, size_t len, size_t *n, char *err)
{
    const uint8_t *p = buf;
    *n = 0;
    if (len < GPU_BATCH_HDR) {
        base_err(err, "event batch of %zu bytes is shorter than its %d-byte header", len,
                 GPU_BATCH_HDR);
        return BASE_DEC_TRUNCATED;
    }
    if (base_le_get32(p) != GPU_BATCH_MAGIC) {
        base_err(err, "event batch has bad magic 0x%08x", base_le_get32(p));
        return BASE_DEC_BAD_MAGIC;
    }
    if (base_le_get16(p + 4) != GPU_BATCH_VERSION) {
        base_err(err, "event batch version %u is not %d", base_le_get16(p + 4), GPU_BATCH_VERSION);
        return BASE_DEC_BAD_VERSION;
    }
    if (base_le_get16(p + 6) != GPU_RECORD_SIZE) {
        base_err(err, "event record size %u is not %d", base_le_get16(p + 6), GPU_RECORD_SIZE);
        return BASE_DEC_BAD_VALUE;
    }
    uint64_t count = base_le_get32(p + 8);
    uint64_t need = GPU_BATCH_HDR + count * GPU_RECORD_SIZE;
    if (len < need) {
        base_err(err, "event batch holds %zu bytes, its %" PRIu64 " records need %" PRIu64, len,
                 count, need);
        return BASE_DEC_TRUNCATED;
    }
    if (len > need) {
        base_err(err, "event batch has %zu bytes after its %" PRIu64 " records", len - need, count);
        return BASE_DEC_BAD_VALUE;
    }
    *n = (size_t)count;
    return BASE_DEC_OK;
}

enum base_dec gpu_batch_decode(const void *buf, size_t len, uint16_t node, gpu_event_t *out,
                               size_t max, size_t *n, char *err)
{
    size_t count;
    enum base_dec rc = gpu_batch_count(buf, len, &count, err);
    *n = 0;
    if (rc != BASE_DEC_OK)
        return rc;
    if (count > max) {
        base_err(err, "event batch of %zu records exceeds the limit of %zu", count, max);
        return BASE_DEC_OVERSIZED;
    }
    const uint8_t *r = (const uint8_t *)buf + GPU_BATCH_HDR;
    for (size_t i = 0; i < count; i++, r += GPU_RECORD_SIZE) {
        gpu_event_t *e = &out[i];
        memset(e, 0, sizeof *e);
        e->kind = r[0];
        e->flags = r[1];
        if (e->kind == 0 || e->kind >= GPU_EV_NKINDS) {
            base_err(err, "event record %zu has unknown kind %u", i, e->kind);
            return BASE_DEC_BAD_VALUE;
        }
        e->device = base_le_get16(r + 2);
        e->node = node;
        e->pid = base_le_get32(r + 4);
        e->tid = base_le_get32(r + 8);
        e->stream = base_le_get32(r + 12);
        e->name_id = base_le_get32(r + 16);
        e->corr_id = base_le_get32(r + 20);
        e->scope_id = base_le_get64(r + 24);
        e->start_ns = (int64_t)base_le_get64(r + 32);
        e->end_ns = (int64_t)base_le_get64(r + 40);
        if (e->end_ns < e->start_ns) {
            base_err(err, "event record %zu ends before it starts", i);
            return BASE_DEC_BAD_VALUE;
        }
        if (e->kind == GPU_EV_KERNEL) {
            e->grid[0] = base_le_get32(r + 48);
            e->grid[1] = base_le_get32(r + 52);
            e->grid[2] = base_le_get16(r + 56);
            e->block[0] = base_le_get16(r + 58);
            e->block[1] = base_le_get16(r + 60);
            e->block[2] = base_le_get16(r + 62);
        } else {
            uint64_t aux = base_le_get64(r + 56);
            e->bytes = base_le_get64(r + 48);
            if (e->kind == GPU_EV_STEP) {
                e->step = aux;
            } else if (e->kind == GPU_EV_MEMCPY) {
                if (aux > GPU_COPY_P2P) {
                    base_err(err, "event record %zu has unknown copy kind %" PRIu64, i, aux);
                    return BASE_DEC_BAD_VALUE;
                }
                e->copy_kind = (uint8_t)aux;
            }
        }
    }
    *n = count;
    return BASE_DEC_OK;
}

const char *gpu_event_kind_name(enum gpu_event_kind kind)
{
    static const char *names[GPU_EV_NKINDS] = {
        [GPU_EV_KERNEL] = "kernel", [GPU_EV_MEMCPY] = "memcpy",   [GPU_EV_MEMSET] = "memset",
        [GPU_EV_API] = "api",       [GPU_EV_SYNC] = "sync",       [GPU_EV_RANGE] = "range",
        [GPU_EV_STEP] = "step",     [GPU_EV_INSTANT] = "instant",
    };
    if ((unsigned)kind >= GPU_EV_NKINDS || names[kind] == NULL)
        return "unknown";
    return names[kind];
}
