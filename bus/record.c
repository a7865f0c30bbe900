/*
 * Recording files (docs/RECORDING.md).  All integers little-endian.
 *
 *   file header (32 bytes)
 *     0  8  magic "DPTOPREC"        8 u16 version (1)     10 u16 header size (32)
 *    12 u32 flags (0)              16 i64 created, CLOCK_REALTIME ns
 *    24 u32 reserved (0)           28 u32 CRC32C of bytes 0..27
 *   frames, each:
 *     0 u32 marker "DPRF"           4 u32 body length L
 *     8 i64 arrival, CLOCK_REALTIME ns
 *    16 u32 CRC32C of the body     20 u32 CRC32C of bytes 0..19 of this header
 *    24 body: u32 frame count N, then N times (u32 length, bytes)
 *
 * The header checksum makes a frame's length trustworthy before the body is
 * read, so resynchronisation never believes a corrupt length; the body
 * checksum covers the message.  The writer buffers whole frames and writes
 * them with write(2), so a killed recorder leaves whole frames followed by
 * at most one partial frame, which the reader reports as a truncated tail.
 */
#include "bus/bus_int.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define WRITE_CHUNK (1u << 20) /* flush when this much is buffered */

/* ---- writer ---- */

struct bus_recwriter {
    int fd;
    char *path;
    uint8_t *buf;
    size_t len, cap;
    int64_t flush_ns;
    int64_t pending_since; /* monotonic time of the oldest unflushed frame; 0: none */
    size_t *ends;          /* end offset in buf of each pending frame */
    size_t pending, ends_cap;
    bool failed;
    char failure[BASE_ERRLEN];
    struct bus_recwriter_stats st;
};

/* Write p[0..n); *done is what reached the file, even on failure. */
static int write_all(bus_recwriter_t *self, const uint8_t *p, size_t n, size_t *done, char *err)
{
    *done = 0;
    while (n > 0) {
        ssize_t w = write(self->fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : ENOSPC;
            self->failed = true;
            snprintf(self->failure, sizeof self->failure, "recording %s: write failed: %s",
                     self->path, strerror(e));
            return base_err(err, "%s", self->failure);
        }
        p += w;
        n -= (size_t)w;
        *done += (size_t)w;
        self->st.bytes += (uint64_t)w;
    }
    return BASE_OK;
}

bus_recwriter_t *bus_recwriter_new(const char *path, int flush_ms, char *err)
{
    bus_recwriter_t *self = xcalloc(1, sizeof *self);
    self->path = xstrdup(path);
    self->flush_ns = (int64_t)(flush_ms > 0 ? flush_ms : 250) * 1000000;
    self->cap = WRITE_CHUNK + 4096;
    self->buf = xmalloc(self->cap);
    self->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (self->fd < 0) {
        base_err(err, "cannot create recording %s: %s", path, strerror(errno));
        goto err;
    }
    uint8_t h[BUS_REC_FILE_HDR] = {0};
    memcpy(h, BUS_REC_MAGIC, 8);
    base_le_put16(h + 8, BUS_REC_VERSION);
    base_le_put16(h + 10, BUS_REC_FILE_HDR);
    base_le_put32(h + 12, 0);
    base_le_put64(h + 16, (uint64_t)base_realtime_ns());
    base_le_put32(h + 24, 0);
    base_le_put32(h + 28, bus_crc32c(0, h, 28));
    size_t done;
    if (write_all(self, h, sizeof h, &done, err) != BASE_OK)
        goto err;
    return self;
err:
    if (self->fd >= 0)
        close(self->fd);
    free(self->buf);
    free(self->path);
    free(self);
    return NULL;
}

int bus_recwriter_flush(bus_recwriter_t *self, char *err)
{
    assert(self);
    if (self->failed)
        return base_err(err, "%s", self->failure);
    if (self->len == 0)
        return BASE_OK;
    size_t done;
    int rc = write_all(self, self->buf, self->len, &done, err);
    /* After a partial write, the frames that reached the file whole count. */
    for (size_t i = 0; i < self->pending && self->ends[i] <= done; i++)
        self->st.written++;
    self->pending = 0;
    self->len = 0;
    self->pending_since = 0;
    self->st.flushes++;
    return rc;
}

int bus_recwriter_add(bus_recwriter_t *self, int64_t arrival_ns, const struct bus_frame *frames,
                      size_t nframes, char *err)
{
    assert(self);
    if (self->failed)
        return base_err(err, "%s", self->failure);
    if (nframes == 0 || nframes > BUS_REC_MAX_FRAMES)
        return base_err(err, "recording: a message of %zu frames cannot be recorded", nframes);
    uint64_t body = 4;
    for (size_t i = 0; i < nframes; i++)
        body += 4 + (uint64_t)frames[i].len;
    if (body > UINT32_MAX)
        return base_err(err, "recording: a message of %" PRIu64 " bytes is too large", body);
    size_t need = BUS_REC_FRAME_HDR + (size_t)body;
    if (self->len + need > self->cap && bus_recwriter_flush(self, err) != BASE_OK)
        return BASE_ERR;
    if (need > self->cap) {
        self->cap = need;
        self->buf = xrealloc(self->buf, self->cap);
    }
    uint8_t *h = self->buf + self->len, *p = h + BUS_REC_FRAME_HDR;
    base_le_put32(p, (uint32_t)nframes);
    p += 4;
    for (size_t i = 0; i < nframes; i++) {
        base_le_put32(p, (uint32_t)frames[i].len);
        if (frames[i].len)
            memcpy(p + 4, frames[i].data, frames[i].len);
        p += 4 + frames[i].len;
    }
    base_le_put32(h, BUS_REC_MARKER);
    base_le_put32(h + 4, (uint32_t)body);
    base_le_put64(h + 8, (uint64_t)arrival_ns);
    base_le_put32(h + 16, bus_crc32c(0, h + BUS_REC_FRAME_HDR, (size_t)body));
    base_le_put32(h + 20, bus_crc32c(0, h, 20));
    self->len += need;
    self->st.frames++;
    if (self->pending == self->ends_cap) {
        self->ends_cap = self->ends_cap ? self->ends_cap * 2 : 256;
        self->ends = xreallocarray(self->ends, self->ends_cap, sizeof *self->ends);
    }
    self->ends[self->pending++] = self->len;
    if (self->pending_since == 0)
        self->pending_since = base_monotonic_ns();
    if (self->len >= WRITE_CHUNK)
        return bus_recwriter_flush(self, err);
    return bus_recwriter_tick(self, err);
}

int bus_recwriter_tick(bus_recwriter_t *self, char *err)
{
    assert(self);
    if (self->failed)
        return base_err(err, "%s", self->failure);
    if (self->pending_since && base_monotonic_ns() - self->pending_since >= self->flush_ns)
        return bus_recwriter_flush(self, err);
    return BASE_OK;
}

int bus_recwriter_close(bus_recwriter_t **self_p, char *err)
{
    if (self_p == NULL || *self_p == NULL)
        return BASE_OK;
    bus_recwriter_t *self = *self_p;
    int rc = bus_recwriter_flush(self, err);
    /* Character devices (and some pipes) cannot sync; that is not an error. */
    if (rc == BASE_OK && fdatasync(self->fd) != 0 && errno != EINVAL && errno != EROFS)
        rc = base_err(err, "recording %s: sync failed: %s", self->path, strerror(errno));
    if (close(self->fd) != 0 && rc == BASE_OK)
        rc = base_err(err, "recording %s: close failed: %s", self->path, strerror(errno));
    free(self->ends);
    free(self->buf);
    free(self->path);
    free(self);
    *self_p = NULL;
    return rc;
}

void bus_recwriter_stats(const bus_recwriter_t *self, struct bus_recwriter_stats *out)
{
    assert(self);
    *out = self->st;
}

/* ---- reader ---- */

struct bus_recreader {
    int fd;
    const uint8_t *map;
    size_t size, off;
    size_t max_body;
    int64_t created_ns;
    bool resync;        /* the frame at off is corrupt: scan before reading */
    size_t resync_from; /* where the corrupt region starts */
    struct bus_recreader_stats st;
};

bus_recreader_t *bus_recreader_open(const char *path, const struct bus_limits *lim, char *err)
{
    struct bus_limits l = bus_limits_fill(lim);
    bus_recreader_t *self = xcalloc(1, sizeof *self);
    self->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (self->fd < 0) {
        base_err(err, "cannot open recording %s: %s", path, strerror(errno));
        goto err;
    }
    struct stat sb;
    if (fstat(self->fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        base_err(err, "recording %s is not a regular file", path);
        goto err;
    }
    self->size = (size_t)sb.st_size;
    self->max_body = 4 + BUS_REC_MAX_FRAMES * 4 + BUS_MAX_TOPIC + l.max_header + l.max_payload;
    if (self->size < BUS_REC_FILE_HDR) {
        base_err(err, "recording %s: %zu bytes is shorter than the %d-byte file header (truncated)",
                 path, self->size, BUS_REC_FILE_HDR);
        goto err;
    }
    void *m = mmap(NULL, self->size, PROT_READ, MAP_PRIVATE, self->fd, 0);
    if (m == MAP_FAILED) {
        base_err(err, "cannot map recording %s: %s", path, strerror(errno));
        goto err;
    }
    self->map = m;
    const uint8_t *h = self->map;
    if (memcmp(h, BUS_REC_MAGIC, 8) != 0) {
        base_err(err, "%s is not a dptop recording (bad magic)", path);
        goto err;
    }
    if (bus_crc32c(0, h, 28) != base_le_get32(h + 28)) {
        base_err(err, "recording %s: file header checksum mismatch at offset 0", path);
        goto err;
    }
    if (base_le_get16(h + 8) != BUS_REC_VERSION) {
        base_err(err, "recording %s has format version %u, this reader reads %d", path,
                 base_le_get16(h + 8), BUS_REC_VERSION);
        goto err;
    }
    if (base_le_get16(h + 10) < BUS_REC_FILE_HDR || base_le_get16(h + 10) > self->size) {
        base_err(err, "recording %s: file header size %u is invalid", path, base_le_get16(h + 10));
        goto err;
    }
    self->created_ns = (int64_t)base_le_get64(h + 16);
    self->off = base_le_get16(h + 10);
    return self;
err:
    bus_recreader_destroy(&self);
    return NULL;
}

void bus_recreader_destroy(bus_recreader_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    bus_recreader_t *self = *self_p;
    if (self->map)
        munmap((void *)self->map, self->size);
    if (self->fd >= 0)
        close(self->fd);
    free(self);
    *self_p = NULL;
}

/* Check the frame at off.  BASE_DEC_OK fills f (when not NULL) and *next. */
static enum base_dec check_frame(const bus_recreader_t *self, size_t off, struct bus_rec_frame *f,
                                 size_t *next, char *err)
{
    const uint8_t *h = self->map + off;
    size_t left = self->size - off;
    static const uint8_t marker[4] = {'D', 'P', 'R', 'F'};
    if (left < BUS_REC_FRAME_HDR) {
        if (memcmp(h, marker, left < 4 ? left : 4) != 0) {
            base_err(err, "garbage at offset %zu (no frame marker)", off);
            return BASE_DEC_BAD_MAGIC;
        }
        base_err(err, "frame at offset %zu is truncated: %zu of its %d header bytes", off, left,
                 BUS_REC_FRAME_HDR);
        return BASE_DEC_TRUNCATED;
    }
    if (base_le_get32(h) != BUS_REC_MARKER) {
        base_err(err, "no frame marker at offset %zu", off);
        return BASE_DEC_BAD_MAGIC;
    }
    if (bus_crc32c(0, h, 20) != base_le_get32(h + 20)) {
        base_err(err, "frame header checksum mismatch at offset %zu", off);
        return BASE_DEC_BAD_CHECKSUM;
    }
    uint32_t body = base_le_get32(h + 4);
    if (body > self->max_body) {
        base_err(err, "frame at offset %zu claims %" PRIu32 " bytes, beyond the limit of %zu", off,
                 body, self->max_body);
        return BASE_DEC_OVERSIZED;
    }
    if (left - BUS_REC_FRAME_HDR < body) {
        base_err(err, "frame at offset %zu is truncated: %zu of its %" PRIu32 " body bytes", off,
                 left - BUS_REC_FRAME_HDR, body);
        return BASE_DEC_TRUNCATED;
    }
    const uint8_t *b = h + BUS_REC_FRAME_HDR;
    if (bus_crc32c(0, b, body) != base_le_get32(h + 16)) {
        base_err(err, "frame body checksum mismatch at offset %zu", off);
        return BASE_DEC_BAD_CHECKSUM;
    }
    if (body < 4 || base_le_get32(b) == 0 || base_le_get32(b) > BUS_REC_MAX_FRAMES) {
        base_err(err, "frame at offset %zu has an invalid frame count", off);
        return BASE_DEC_BAD_VALUE;
    }
    size_t n = base_le_get32(b), pos = 4;
    for (size_t i = 0; i < n; i++) {
        if (body - pos < 4 || body - pos - 4 < base_le_get32(b + pos)) {
            base_err(err, "frame at offset %zu: message frame %zu overruns the body", off, i);
            return BASE_DEC_BAD_VALUE;
        }
        size_t len = base_le_get32(b + pos);
        if (f) {
            f->frames[i].data = b + pos + 4;
            f->frames[i].len = len;
        }
        pos += 4 + len;
    }
    if (pos != body) {
        base_err(err, "frame at offset %zu has %zu bytes after its message", off,
                 (size_t)body - pos);
        return BASE_DEC_BAD_VALUE;
    }
    if (f) {
        f->offset = off;
        f->arrival_ns = (int64_t)base_le_get64(h + 8);
        f->nframes = n;
    }
    *next = off + BUS_REC_FRAME_HDR + body;
    return BASE_DEC_OK;
}

/* Find the next offset after the corrupt frame where a frame verifies or
 * where a verified header announces a truncated last frame. */
static void resync(bus_recreader_t *self)
{
    size_t from = self->resync_from, pos = from + 1;
    static const uint8_t marker[4] = {'D', 'P', 'R', 'F'};
    while (pos < self->size) {
        const uint8_t *hit = memmem(self->map + pos, self->size - pos, marker, sizeof marker);
        if (hit == NULL)
            break;
        size_t cand = (size_t)(hit - self->map), next;
        enum base_dec rc = check_frame(self, cand, NULL, &next, NULL);
        if (rc == BASE_DEC_OK || rc == BASE_DEC_TRUNCATED) {
            self->st.skipped_bytes += cand - from;
            self->off = cand;
            self->resync = false;
            return;
        }
        pos = cand + 1;
    }
    self->st.skipped_bytes += self->size - from;
    self->off = self->size;
    self->resync = false;
}

int bus_recreader_next(bus_recreader_t *self, struct bus_rec_frame *f, enum base_dec *dec,
                       char *err)
{
    assert(self && f);
    enum base_dec unused;
    if (dec == NULL)
        dec = &unused;
    *dec = BASE_DEC_OK;
    if (self->resync)
        resync(self);
    if (self->off >= self->size)
        return 0;
    size_t next;
    enum base_dec rc = check_frame(self, self->off, f, &next, err);
    base_decstats_add(&self->st.dec, rc);
    *dec = rc;
    if (rc == BASE_DEC_OK) {
        self->off = next;
        self->st.frames++;
        return 1;
    }
    if (rc == BASE_DEC_TRUNCATED) {
        self->st.truncated_bytes += self->size - self->off;
        self->off = self->size;
        return BASE_ERR;
    }
    self->st.corrupt++;
    self->resync = true;
    self->resync_from = self->off;
    return BASE_ERR;
}

int64_t bus_recreader_created_ns(const bus_recreader_t *self)
{
    assert(self);
    return self->created_ns;
}

uint64_t bus_recreader_size(const bus_recreader_t *self)
{
    assert(self);
    return self->size;
}

void bus_recreader_stats(const bus_recreader_t *self, struct bus_recreader_stats *out)
{
    assert(self);
    *out = self->st;
}
