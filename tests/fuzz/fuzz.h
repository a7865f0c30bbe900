/*
 * Shared by the libFuzzer targets and their replay main.
 *
 * fuzz_rand: xorshift64, the replay's mutations and a target's draws (deterministic).
 *
 * fuzz_split: split one fuzzer input into up to
 * `max` frames (byte 0: frame count; then per frame a 16-bit little-endian
 * length, clamped to what is left, and the bytes).
 */
#ifndef DP_FUZZ_H
#define DP_FUZZ_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t fuzz_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static inline size_t fuzz_split(const uint8_t *data, size_t size, const void **frames, size_t *lens,
                                size_t max)
{
    if (size == 0)
        return 0;
    size_t n = data[0] % (max + 1), pos = 1, i;
    for (i = 0; i < n; i++) {
        size_t len = 0;
        if (pos + 2 <= size) {
            len = (size_t)data[pos] | (size_t)data[pos + 1] << 8;
            pos += 2;
        }
        if (len > size - pos)
            len = size - pos;
        frames[i] = data + pos;
        lens[i] = len;
        pos += len;
    }
    return n;
}

#endif
