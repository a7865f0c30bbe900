/*
 * Device metrics from amdgpu sysfs (gpu.h).  Each field has its own
 * validity bit: a card whose driver exposes only some files (or a file
 * holding garbage) still shows what it has, like nvtop does.
 */
#include "gpu/gpu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FILE_MAX 64 /* sysfs numbers are short; a longer file is garbage */

enum rd { RD_ABSENT, RD_OK, RD_BAD };

/* Read a file holding one decimal integer (sysfs style, trailing newline);
 * a minus sign only where sign_ok (temperatures can be below zero). */
static enum rd read_num(const char *path, bool sign_ok, int64_t *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR ? RD_ABSENT : RD_BAD;
    char buf[FILE_MAX + 1];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    if (n <= 0 || n > FILE_MAX)
        return RD_BAD;
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    bool neg = sign_ok && buf[0] == '-';
    const char *digits = buf + (neg ? 1 : 0);
    if (*digits < '0' || *digits > '9')
        return RD_BAD;
    char *end;
    errno = 0;
    unsigned long long u = strtoull(digits, &end, 10);
    if (errno != 0 || *end != '\0' || u > (unsigned long long)INT64_MAX)
        return RD_BAD;
    *out = neg ? -(int64_t)u : (int64_t)u;
    return RD_OK;
}

static enum rd read_u64(const char *path, uint64_t *out)
{
    int64_t v;
    enum rd r = read_num(path, false, &v);
    if (r == RD_OK)
        *out = (uint64_t)v;
    return r;
}

static void note(base_decstats_t *st, enum rd r, bool in_range)
{
    if (st == NULL || r == RD_ABSENT)
        return;
    base_decstats_add(st, r == RD_OK && in_range ? BASE_DEC_OK : BASE_DEC_BAD_VALUE);
}

/* out = a/b; false when it does not fit. */
static bool join(char *out, size_t len, const char *a, const char *b)
{
    int n = snprintf(out, len, "%s/%s", a, b);
    return n > 0 && (size_t)n < len;
}

/* The first hwmon directory of a card, into buf; false when none. */
static bool first_hwmon(const char *dev, char *buf, size_t len)
{
    char path[1024];
    if (!join(path, sizeof path, dev, "hwmon"))
        return false;
    DIR *d = opendir(path);
    if (d == NULL)
        return false;
    long best = -1;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        if (strncmp(e->d_name, "hwmon", 5) != 0)
            continue;
        long n = strtol(e->d_name + 5, &end, 10);
        if (end == e->d_name + 5 || *end != '\0' || n < 0)
            continue;
        if (best < 0 || n < best)
            best = n;
    }
    closedir(d);
    char name[32];
    snprintf(name, sizeof name, "hwmon%ld", best);
    return best >= 0 && join(buf, len, path, name);
}

static int by_card(const void *a, const void *b)
{
    const gpu_metrics_t *x = a, *y = b;
    return x->card < y->card ? -1 : x->card > y->card;
}

static bool read_card(const char *root, uint32_t card, gpu_metrics_t *m, base_decstats_t *st)
{
    char card_dir[1024], dev[1024], path[1024], hw[1024];
    uint64_t u = 0;
    int64_t s = 0;
    enum rd r;
    bool any = false;
    memset(m, 0, sizeof *m);
    m->card = card;
    snprintf(m->name, sizeof m->name, "amdgpu card%" PRIu32, card);
    m->vendor = "amd";
    char name[32];
    snprintf(name, sizeof name, "card%" PRIu32, card);
    if (!join(card_dir, sizeof card_dir, root, name) || !join(dev, sizeof dev, card_dir, "device"))
        return false;

    r = join(path, sizeof path, dev, "gpu_busy_percent") ? read_u64(path, &u) : RD_ABSENT;
    any |= r != RD_ABSENT;
    note(st, r, u <= 100);
    if (r == RD_OK && u <= 100) {
        m->busy_pct = (uint32_t)u;
        m->valid |= GPU_MET_BUSY;
    }
    r = join(path, sizeof path, dev, "mem_info_vram_used") ? read_u64(path, &u) : RD_ABSENT;
    any |= r != RD_ABSENT;
    note(st, r, true);
    if (r == RD_OK) {
        m->vram_used = u;
        m->valid |= GPU_MET_VRAM_USED;
    }
    r = join(path, sizeof path, dev, "mem_info_vram_total") ? read_u64(path, &u) : RD_ABSENT;
    any |= r != RD_ABSENT;
    note(st, r, u > 0);
    if (r == RD_OK && u > 0) {
        m->vram_total = u;
        m->valid |= GPU_MET_VRAM_TOTAL;
    }
    /* A used figure above the total is garbage in one of them: trust neither. */
    if ((m->valid & GPU_MET_VRAM_USED) && (m->valid & GPU_MET_VRAM_TOTAL) &&
        m->vram_used > m->vram_total)
        m->valid &= ~(uint32_t)(GPU_MET_VRAM_USED | GPU_MET_VRAM_TOTAL);
    if (first_hwmon(dev, hw, sizeof hw)) {
        r = join(path, sizeof path, hw, "power1_average") ? read_u64(path, &u) : RD_ABSENT;
        any |= r != RD_ABSENT;
        /* Beyond 10 kW is no GPU. */
        note(st, r, u <= 10000000000ULL);
        if (r == RD_OK && u <= 10000000000ULL) {
            m->power_uw = u;
            m->valid |= GPU_MET_POWER;
        }
        r = join(path, sizeof path, hw, "temp1_input") ? read_num(path, true, &s) : RD_ABSENT;
        any |= r != RD_ABSENT;
        note(st, r, s >= -100000 && s <= 250000);
        if (r == RD_OK && s >= -100000 && s <= 250000) {
            m->temp_mc = s;
            m->valid |= GPU_MET_TEMP;
        }
    }
    return any;
}

int gpu_metrics_read(const char *root, gpu_metrics_t *out, size_t max, size_t *n,
                     base_decstats_t *st, char *err)
{
    *n = 0;
    if (root == NULL)
        root = GPU_METRICS_ROOT;
    DIR *d = opendir(root);
    if (d == NULL)
        return base_err(err, "cannot list %s: %s", root, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d)) != NULL && *n < max) {
        /* cardN only: connectors (card0-DP-1) and render nodes are not cards. */
        if (strncmp(e->d_name, "card", 4) != 0)
            continue;
        char *end;
        errno = 0;
        unsigned long card = strtoul(e->d_name + 4, &end, 10);
        if (end == e->d_name + 4 || *end != '\0' || errno != 0 || card > UINT32_MAX)
            continue;
        /* Only cards that expose at least one amdgpu metric file count. */
        if (read_card(root, (uint32_t)card, &out[*n], st))
            (*n)++;
    }
    closedir(d);
    qsort(out, *n, sizeof *out, by_card);
    return BASE_OK;
}
