/*
 * A main for the libFuzzer targets without libFuzzer, so that the normal
 * and ASan+UBSan builds compile and run every target (make fuzz explores
 * with libFuzzer, which needs clang).  It replays each file named (every
 * file of a directory), then, with --mutate N, N variants of each (cut at
 * a random length, bits flipped, bytes overwritten), then --random N
 * inputs of random bytes.  A crash is the sanitizers' or a signal's; the
 * exit status is 0 when every input ran.  --keep FILE writes each input
 * to FILE before running it: after a crash FILE holds the one that crashed.
 * Options hold for the PATHs after them (and the random inputs, run last).
 *
 *   fuzz_X [--seed S] [--mutate N] [--random N] [--keep FILE] [PATH...]
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"

#define REPLAY_MAX_INPUT 8192

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What every run shares: the count, and where each input is kept (NULL: nowhere). */
typedef struct replay {
    unsigned long runs;
    const char *keep;
} replay_t;

/* The input as the target sees it, in a buffer of its exact size so that
 * ASan sees any read past its end. */
static void run_one(const uint8_t *data, size_t size, replay_t *r)
{
    if (r->keep != NULL) {
        FILE *k = fopen(r->keep, "wb");
        bool ok = k != NULL && fwrite(data, 1, size, k) == size;
        if (k != NULL && fclose(k) != 0)
            ok = false;
        if (!ok) { /* not the target's crash: say so */
            fprintf(stderr, "replay: cannot write the input to %s\n", r->keep);
            exit(2);
        }
    }
    uint8_t *copy = malloc(size ? size : 1);
    if (copy == NULL)
        abort();
    memcpy(copy, data, size);
    LLVMFuzzerTestOneInput(copy, size);
    free(copy);
    r->runs++;
}

static void run_variants(const uint8_t *data, size_t size, unsigned long n, uint64_t *rng,
                         replay_t *r)
{
    uint8_t buf[REPLAY_MAX_INPUT];
    run_one(data, size, r);
    for (unsigned long i = 0; i < n && size > 0; i++) {
        size_t len = size;
        memcpy(buf, data, len);
        switch (fuzz_rand(rng) % 3) {
        case 0:
            len = (size_t)(fuzz_rand(rng) % size);
            break;
        case 1:
            for (int k = 1 + (int)(fuzz_rand(rng) % 4); k > 0; k--) {
                size_t at = (size_t)(fuzz_rand(rng) % len);
                buf[at] ^= (uint8_t)(1u << (fuzz_rand(rng) % 8));
            }
            break;
        default:
            for (int k = 1 + (int)(fuzz_rand(rng) % 8); k > 0; k--)
                buf[fuzz_rand(rng) % len] = (uint8_t)fuzz_rand(rng);
            break;
        }
        run_one(buf, len, r);
    }
}

static int replay_file(const char *path, unsigned long mutate, uint64_t *rng, replay_t *r)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return 1;
    }
    uint8_t buf[REPLAY_MAX_INPUT];
    size_t size = fread(buf, 1, sizeof buf, f);
    fclose(f);
    run_variants(buf, size, mutate, rng, r);
    return 0;
}

int main(int argc, char **argv)
{
    uint64_t rng = 0x9e3779b97f4a7c15ULL;
    unsigned long mutate = 0, random_n = 0;
    replay_t r = {0, NULL};
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
            rng = strtoull(argv[++i], NULL, 10) | 1;
        } else if (!strcmp(argv[i], "--mutate") && i + 1 < argc) {
            mutate = strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--random") && i + 1 < argc) {
            random_n = strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--keep") && i + 1 < argc) {
            r.keep = argv[++i];
        } else {
            struct stat sb;
            if (stat(argv[i], &sb) != 0) {
                fprintf(stderr, "replay: no such file or directory: %s\n", argv[i]);
                rc = 1;
            } else if (S_ISDIR(sb.st_mode)) {
                DIR *d = opendir(argv[i]);
                struct dirent *de;
                while (d && (de = readdir(d)) != NULL) {
                    if (de->d_name[0] == '.')
                        continue;
                    char path[4096];
                    snprintf(path, sizeof path, "%s/%s", argv[i], de->d_name);
                    rc |= replay_file(path, mutate, &rng, &r);
                }
                if (d)
                    closedir(d);
            } else {
                rc |= replay_file(argv[i], mutate, &rng, &r);
            }
        }
    }
    uint8_t buf[REPLAY_MAX_INPUT];
    for (unsigned long i = 0; i < random_n; i++) {
        size_t len = (size_t)(fuzz_rand(&rng) % 1024);
        for (size_t k = 0; k < len; k++)
            buf[k] = (uint8_t)fuzz_rand(&rng);
        run_one(buf, len, &r);
    }
    printf("%s: %lu inputs, no crash\n", argv[0], r.runs);
    return rc;
}
