/*
 * libFuzzer target: the recording reader, on the input as a whole file,
 * and the bus decoder on every frame it returns (as a replay does).
 *
 * Both checksums of every frame guard the rest: a mutated byte almost
 * always fails one, and the fuzzer never got past them (82 edges in 60 s).
 * So the first input byte is a mode: bit 0 set, the file's header CRC and
 * every frame's CRCs that the lengths let it find are made right before
 * the reader sees the file, and mutations reach the frame lists and the
 * messages inside; clear, the file is read as it is (damage, resync).
 * Seeds (tests/fuzz/seeds/fuzz_bus_record/, made by
 * scripts/fuzz_record_seeds.py from a real recording) hold frames of every
 * kind, in both modes, whole and damaged.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/base.h"
#include "bus/bus.h"

/* Make the header CRC and each frame's CRCs right, frame by frame from 32. */
static void fix_crcs(uint8_t *d, size_t size)
{
    if (size < BUS_REC_FILE_HDR)
        return;
    base_le_put32(d + 28, bus_crc32c(0, d, 28));
    size_t pos = BUS_REC_FILE_HDR;
    while (pos + BUS_REC_FRAME_HDR <= size) {
        uint32_t len = base_le_get32(d + pos + 4);
        if (len > size - pos - BUS_REC_FRAME_HDR)
            break;
        base_le_put32(d + pos + 16, bus_crc32c(0, d + pos + BUS_REC_FRAME_HDR, len));
        base_le_put32(d + pos + 20, bus_crc32c(0, d + pos, 20));
        pos += BUS_REC_FRAME_HDR + len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t *file = malloc(size);
    if (file == NULL)
        abort();
    memcpy(file, data + 1, size - 1);
    size_t fsize = size - 1;
    if (data[0] & 1)
        fix_crcs(file, fsize);
    int fd = memfd_create("dprec", 0);
    if (fd < 0 || write(fd, file, fsize) != (ssize_t)fsize)
        abort();
    free(file);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    struct bus_limits lim = {.max_header = 4096, .max_payload = 65536};
    char err[BASE_ERRLEN];
    bus_recreader_t *r = bus_recreader_open(path, &lim, err);
    if (r != NULL) {
        struct bus_rec_frame f;
        enum base_dec dec;
        /* Every call consumes input: the loop ends within size + 1 calls. */
        for (size_t i = 0; i <= fsize + 1; i++) {
            int rc = bus_recreader_next(r, &f, &dec, err);
            if (rc == 0)
                break;
            if (i == fsize + 1)
                abort();
            if (rc != 1)
                continue;
            bus_msg_t *m = NULL;
            if (bus_msg_decode(f.frames, f.nframes, &lim, &m, err) == BASE_DEC_OK) {
                if (m == NULL)
                    abort();
                bus_msg_destroy(&m);
            } else if (m != NULL) {
                abort(); /* a refusal hands nothing over */
            }
        }
        bus_recreader_destroy(&r);
    }
    close(fd);
    return 0;
}
