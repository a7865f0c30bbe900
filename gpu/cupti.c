/*
 * CUPTI activity record translation: kernels, memcpy and memset records of
 * the CUDA 13 headers into gpu_event_t, times mapped onto the trace clock,
 * scope ids looked up by correlation id.  Built with the CUPTI headers
 * when the CUDA toolkit is present (DP_HAVE_CUPTI, gpu/module.mk); it uses
 * only the headers' structures, so nothing that links libdpgpu.a depends on
 * libcupti.  The source itself (callbacks, buffers) is gpu/dptrace_cupti.c.
 */
#include "gpu/gpu.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#ifdef DP_HAVE_CUPTI

#include <cupti.h>

bool gpu_cupti_built(void)
{
    return true;
}

static uint8_t copy_kind(uint8_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
        return GPU_COPY_H2D;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
        return GPU_COPY_D2H;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
        return GPU_COPY_D2D;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
        return GPU_COPY_H2H;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
        return GPU_COPY_P2P;
    default:
        return GPU_COPY_UNKNOWN;
    }
}

static uint32_t dim(int32_t v)
{
    return v < 0 ? 0 : (uint32_t)v;
}

/* Common part: times (mapped), device, stream, correlation and its scope. */
static enum base_dec fill(const struct gpu_cupti_xlat *x, uint8_t kind, uint64_t start,
                          uint64_t end, uint32_t device, uint32_t stream, uint32_t corr,
                          gpu_event_t *ev, char *err)
{
    if (start == 0 || end < start || start > (uint64_t)INT64_MAX || end > (uint64_t)INT64_MAX) {
        base_err(err, "cupti %s record has bad times [%" PRIu64 ", %" PRIu64 "]",
                 gpu_event_kind_name(kind), start, end);
        return BASE_DEC_BAD_VALUE;
    }
    if (device > UINT16_MAX) {
        base_err(err, "cupti record has device %" PRIu32, device);
        return BASE_DEC_BAD_VALUE;
    }
    memset(ev, 0, sizeof *ev);
    ev->kind = kind;
    ev->flags = GPU_EVF_DEVICE_TIME;
    ev->device = (uint16_t)device;
    ev->stream = stream;
    ev->pid = x->pid;
    ev->corr_id = corr;
    int64_t s = (int64_t)start, e = (int64_t)end;
    if (x->map != NULL && (gpu_clockmap_map(x->map, s, &s) != BASE_OK ||
                           gpu_clockmap_map(x->map, (int64_t)end, &e) != BASE_OK)) {
        base_err(err, "cupti record before any snapshot pair");
        return BASE_DEC_BAD_VALUE;
    }
    ev->start_ns = s;
    ev->end_ns = e < s ? s : e;
    if (x->scope_of != NULL)
        ev->scope_id = x->scope_of(x->ctx, corr, &ev->tid);
    return BASE_DEC_OK;
}

enum base_dec gpu_cupti_translate(const void *record, const struct gpu_cupti_xlat *x,
                                  gpu_event_t *ev, char *err)
{
    const CUpti_Activity *r = record;
    enum base_dec rc;
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel10 *k = record;
        rc = fill(x, GPU_EV_KERNEL, k->start, k->end, k->deviceId, k->streamId, k->correlationId,
                  ev, err);
        if (rc != BASE_DEC_OK)
            return rc;
        ev->grid[0] = dim(k->gridX);
        ev->grid[1] = dim(k->gridY);
        ev->grid[2] = dim(k->gridZ);
        ev->block[0] = dim(k->blockX);
        ev->block[1] = dim(k->blockY);
        ev->block[2] = dim(k->blockZ);
        if (x->names != NULL && k->name != NULL) {
            ev->name_id = gpu_names_intern_symbol(x->names, k->name);
            if (gpu_names_collective(x->names, ev->name_id))
                ev->flags |= GPU_EVF_COLLECTIVE;
        }
        return BASE_DEC_OK;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = record;
        rc = fill(x, GPU_EV_MEMCPY, m->start, m->end, m->deviceId, m->streamId, m->correlationId,
                  ev, err);
        if (rc != BASE_DEC_OK)
            return rc;
        ev->bytes = m->bytes;
        ev->copy_kind = copy_kind(m->copyKind);
        if (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC)
            ev->flags |= GPU_EVF_ASYNC;
        if (x->names != NULL) {
            char nm[32];
            snprintf(nm, sizeof nm, "memcpy_%s", gpu_copy_kind_name(ev->copy_kind));
            ev->name_id = gpu_names_intern(x->names, nm);
        }
        return BASE_DEC_OK;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = record;
        rc = fill(x, GPU_EV_MEMSET, m->start, m->end, m->deviceId, m->streamId, m->correlationId,
                  ev, err);
        if (rc != BASE_DEC_OK)
            return rc;
        ev->bytes = m->bytes;
        if (m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC)
            ev->flags |= GPU_EVF_ASYNC;
        if (x->names != NULL)
            ev->name_id = gpu_names_intern(x->names, "memset");
        return BASE_DEC_OK;
    }
    default:
        base_err(err, "cupti activity kind %d is not translated", (int)r->kind);
        return BASE_DEC_BAD_TYPE;
    }
}

#else /* !DP_HAVE_CUPTI */

bool gpu_cupti_built(void)
{
    return false;
}

enum base_dec gpu_cupti_translate(const void *record, const struct gpu_cupti_xlat *x,
                                  gpu_event_t *ev, char *err)
{
    base_err(err, "built without the CUPTI headers");
    return BASE_DEC_BAD_TYPE;
}

#endif /* DP_HAVE_CUPTI */
