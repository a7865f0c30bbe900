/* Errors, allocation and clocks: the smallest shared pieces. */
#include "base/base.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int base_verr(char *err, const char *fmt, va_list ap)
{
    if (err != NULL)
        vsnprintf(err, BASE_ERRLEN, fmt, ap);
    return BASE_ERR;
}

int base_err(char *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    base_verr(err, fmt, ap);
    va_end(ap);
    return BASE_ERR;
}

static void alloc_fail(size_t size)
{
    fprintf(stderr, "fatal: out of memory allocating %zu bytes\n", size);
    abort();
}

void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (p == NULL)
        alloc_fail(size);
    return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
    void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
    if (p == NULL)
        alloc_fail(nmemb * size);
    return p;
}

void *xrealloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size ? size : 1);
    if (p == NULL)
        alloc_fail(size);
    return p;
}

void *xreallocarray(void *ptr, size_t nmemb, size_t size)
{
    if (size != 0 && nmemb > SIZE_MAX / size) {
        fprintf(stderr, "fatal: allocation of %zu x %zu bytes overflows\n", nmemb, size);
        abort();
    }
    return xrealloc(ptr, nmemb * size);
}

char *xstrdup(const char *s)
{
    return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
    size_t len = strnlen(s, n);
    char *p = xmalloc(len + 1);
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

int xasprintf(char **out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(out, fmt, ap);
    va_end(ap);
    if (n < 0)
        alloc_fail(strlen(fmt));
    return n;
}

int base_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

int base_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int64_t base_time_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t base_realtime_ns(void)
{
    return base_time_ns(CLOCK_REALTIME);
}

int64_t base_monotonic_ns(void)
{
    return base_time_ns(CLOCK_MONOTONIC);
}

void base_sleep_ns(int64_t ns)
{
    if (ns <= 0)
        return;
    struct timespec ts = {.tv_sec = ns / 1000000000LL, .tv_nsec = ns % 1000000000LL};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}
