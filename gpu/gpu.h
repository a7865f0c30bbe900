/*
 * gpu — the one event model every GPU source fills (HIP interception,
 * CUPTI, the simulated workload) and its wire encoding.
 *
 * Events travel in batches: a 16-byte batch header followed by `count`
 * fixed-size 64-byte little-endian records (docs/PROTOCOL.md has the byte
 * layout).  Names are not in the records: a record carries a name id that a
 * name-table message of the same (node, pid) resolves.
 */
#ifndef DP_GPU_H
#define DP_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

enum gpu_event_kind {
    GPU_EV_KERNEL = 1,
    GPU_EV_MEMCPY = 2,
    GPU_EV_MEMSET = 3,
    GPU_EV_API = 4,     /* a host-side runtime call (launch, copy, ...) */
    GPU_EV_SYNC = 5,    /* a host thread waiting on a stream/device/event */
    GPU_EV_RANGE = 6,   /* a user annotation range (dpt_range_push/pop) */
    GPU_EV_STEP = 7,    /* a training step (dpt_step_begin/end) */
    GPU_EV_INSTANT = 8, /* a point mark (dpt_mark); end == start */
    GPU_EV_NKINDS
};

/* Record flags. */
#define GPU_EVF_DEVICE_TIME 0x01 /* start/end were measured on the GPU, then mapped */
#define GPU_EVF_ASYNC       0x02 /* the API call returned before the work finished */
#define GPU_EVF_CLAMPED     0x04 /* a size field did not fit the record and was clamped */
#define GPU_EVF_COLLECTIVE  0x08 /* the work is a cross-node collective */

enum gpu_copy_kind {
    GPU_COPY_UNKNOWN = 0,
    GPU_COPY_H2D = 1,
    GPU_COPY_D2H = 2,
    GPU_COPY_D2D = 3,
    GPU_COPY_H2H = 4,
    GPU_COPY_P2P = 5,
};

/*
 * One event.  Times are in the node's trace clock (CLOCK_MONOTONIC, through
 * the agent's simulated clock when it has one) in ns.  `node` is not on the
 * wire: the batch's sender fills it.
 */
typedef struct gpu_event {
    uint8_t kind;  /* enum gpu_event_kind */
    uint8_t flags; /* GPU_EVF_* */
    uint16_t device;
    uint16_t node;
    uint8_t copy_kind; /* enum gpu_copy_kind, memcpy only */
    uint32_t pid;
    uint32_t tid;
    uint32_t stream;   /* stream/queue id, unique within (node, pid, device) */
    uint32_t name_id;  /* 0: no name */
    uint32_t corr_id;  /* links an API call to its GPU work; 0: none */
    uint64_t scope_id; /* innermost open range of the issuing thread; 0: none */
    int64_t start_ns;
    int64_t end_ns;
    uint64_t bytes;    /* memcpy/memset */
    uint64_t step;     /* step number (GPU_EV_STEP) */
    uint32_t grid[3];  /* kernel grid, in workgroups */
    uint32_t block[3]; /* kernel workgroup size, in work items */
} gpu_event_t;

#define GPU_RECORD_SIZE   64
#define GPU_BATCH_HDR     16
#define GPU_BATCH_MAGIC   0x56455044u /* "DPEV" little-endian */
#define GPU_BATCH_VERSION 1

/* Size in bytes of a batch of n events. */
size_t gpu_batch_size(size_t n);
/* Encode n events into buf (at least gpu_batch_size(n) bytes); returns bytes written. */
size_t gpu_batch_encode(const gpu_event_t *ev, size_t n, void *buf);
/*
 * Decode a batch.  At most `max` events are accepted (a larger count is
 * BASE_DEC_OVERSIZED, nothing is allocated from input sizes).  On success
 * *n holds the number written to out and every record's node is set to `node`.
 */
enum base_dec gpu_batch_decode(const void *buf, size_t len, uint16_t node, gpu_event_t *out,
                               size_t max, size_t *n, char *err);
/* Count the events of a batch without decoding them (validates the header). */
enum base_dec gpu_batch_count(const void *buf, size_t len, size_t *n, char *err);

const char *gpu_event_kind_name(enum gpu_event_kind kind);

#endif /* DP_GPU_H */
