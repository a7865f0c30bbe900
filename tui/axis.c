/*
 * Numbers and time for the screen: durations and offsets in human units,
 * the time axis (time <-> column), tick placement and labels, lane packing.
 * Pure functions, no terminal: the unit tests check them directly.
 */
#include "tui/tui.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

__extension__ typedef __int128 i128;

/* What snprintf of n characters left in a buffer of len bytes. */
static size_t written(int n, size_t len)
{
    return n < 0 ? 0 : ((size_t)n < len ? (size_t)n : len ? len - 1 : 0);
}

size_t tui_fmt_dur(char *buf, size_t len, double ns)
{
    int n;
    double a = fabs(ns);
    if (!isfinite(ns))
        n = snprintf(buf, len, "?");
    else if (a < 0.5)
        n = snprintf(buf, len, "0ns"); /* not "-0ns" */
    else if (a < 999.5)
        n = snprintf(buf, len, "%.0fns", ns);
    else if (a < 999.5e3)
        n = snprintf(buf, len,
                     a < 9.995e3   ? "%.2fµs"
                     : a < 99.95e3 ? "%.1fµs"
                                   : "%.0fµs",
                     ns / 1e3);
    else if (a < 999.5e6)
        n = snprintf(buf, len,
                     a < 9.995e6   ? "%.2fms"
                     : a < 99.95e6 ? "%.1fms"
                                   : "%.0fms",
                     ns / 1e6);
    else if (a < 59.995e9)
        n = snprintf(buf, len, a < 9.995e9 ? "%.2fs" : "%.1fs", ns / 1e9);
    else if (a < 3600e9) {
        long s = lround(a / 1e9);
        n = snprintf(buf, len, "%s%ldm%02lds", ns < 0 ? "-" : "", s / 60, s % 60);
    } else {
        long m = lround(a / 60e9);
        n = snprintf(buf, len, "%s%ldh%02ldm", ns < 0 ? "-" : "", m / 60, m % 60);
    }
    return written(n, len);
}

size_t tui_fmt_offset(char *buf, size_t len, double ns)
{
    int n;
    double a = fabs(ns);
    if (!isfinite(ns))
        n = snprintf(buf, len, "?");
    else if (a < 999.5)
        n = snprintf(buf, len, "%+.0fns", ns);
    else if (a < 1e6)
        n = snprintf(buf, len, "%+.3fµs", ns / 1e3);
    else if (a < 1e9)
        n = snprintf(buf, len, "%+.6fms", ns / 1e6);
    else
        n = snprintf(buf, len, "%+.9fs", ns / 1e9);
    return written(n, len);
}

size_t tui_fmt_count(char *buf, size_t len, double v)
{
    int n;
    double a = fabs(v);
    if (!isfinite(v))
        n = snprintf(buf, len, "?");
    else if (a < 999.5)
        n = snprintf(buf, len, "%.0f", v);
    else if (a < 999.5e3)
        n = snprintf(buf, len, a < 9.995e3 ? "%.2fk" : a < 99.95e3 ? "%.1fk" : "%.0fk", v / 1e3);
    else if (a < 999.5e6)
        n = snprintf(buf, len, a < 9.995e6 ? "%.2fM" : a < 99.95e6 ? "%.1fM" : "%.0fM", v / 1e6);
    else
        n = snprintf(buf, len, "%.2fG", v / 1e9);
    return written(n, len);
}

int tui_axis_col(const tui_axis_t *ax, int64_t t)
{
    assert(ax && ax->span_ns > 0 && ax->cols > 0);
    i128 d = (i128)t - (i128)ax->t0;
    i128 num = d * ax->cols;
    i128 q = num / ax->span_ns;
    if (num % ax->span_ns != 0 && num < 0)
        q--; /* floor, not truncation */
    const i128 lim = (i128)1 << 30;
    if (q > lim)
        return (int)lim;
    if (q < -lim)
        return (int)-lim;
    return (int)q;
}

int64_t tui_axis_time(const tui_axis_t *ax, int c)
{
    assert(ax && ax->span_ns > 0 && ax->cols > 0);
    /* The first instant whose column is c: ceil(c·span/cols). */
    i128 num = (i128)c * ax->span_ns;
    i128 q = num / ax->cols;
    if (num % ax->cols != 0 && num > 0)
        q++;
    i128 t = (i128)ax->t0 + q;
    if (t > INT64_MAX)
        return INT64_MAX;
    if (t < INT64_MIN)
        return INT64_MIN;
    return (int64_t)t;
}

int64_t tui_tick_step(int64_t span_ns, int cols, int min_gap_cols)
{
    if (span_ns <= 0 || cols <= 0)
        return 1;
    if (min_gap_cols < 1)
        min_gap_cols = 1;
    double want = (double)span_ns * min_gap_cols / cols;
    static const int64_t mant[] = {1, 2, 5};
    for (int64_t p = 1; p <= 1000000000000LL; p *= 10)
        for (size_t i = 0; i < BASE_ARRAY_LEN(mant); i++)
            if ((double)(mant[i] * p) >= want)
                return mant[i] * p;
    return 1000000000000LL;
}

/* Decimals needed to write multiples of step in `unit` exactly. */
static int decimals_for(int64_t step, int64_t unit)
{
    int d = 0;
    i128 s = step;
    while (d < 9 && s % unit != 0) {
        s *= 10;
        d++;
    }
    return d;
}

size_t tui_tick_label(char *buf, size_t len, int64_t t_ns, int64_t step_ns)
{
    if (step_ns <= 0)
        step_ns = 1;
    int n;
    const char *sign = t_ns < 0 ? "-" : "";
    uint64_t a = t_ns < 0 ? (uint64_t)0 - (uint64_t)t_ns : (uint64_t)t_ns;
    if (a == 0) {
        n = snprintf(buf, len, "0");
    } else if (a >= 60000000000ULL) {
        uint64_t s = a / 1000000000ULL, frac = a % 1000000000ULL;
        int d = decimals_for(step_ns, 1000000000LL);
        char fr[32] = "";
        if (d > 9)
            d = 9;
        if (d > 0) {
            uint64_t div = 1;
            for (int i = d; i < 9; i++)
                div *= 10;
            snprintf(fr, sizeof fr, ".%0*llu", d, (unsigned long long)(frac / div));
        }
        if (s >= 3600)
            n = snprintf(buf, len, "%s%lluh%02llum%02llu%ss", sign, (unsigned long long)(s / 3600),
                         (unsigned long long)(s / 60 % 60), (unsigned long long)(s % 60), fr);
        else
            n = snprintf(buf, len, "%s%llum%02llu%ss", sign, (unsigned long long)(s / 60),
                         (unsigned long long)(s % 60), fr);
    } else {
        static const struct {
            uint64_t unit;
            const char *name;
        } units[] = {{1000000000ULL, "s"}, {1000000ULL, "ms"}, {1000ULL, "µs"}, {1ULL, "ns"}};
        size_t u = 0;
        while (u + 1 < BASE_ARRAY_LEN(units) && a < units[u].unit)
            u++;
        uint64_t unit = units[u].unit;
        int d = decimals_for(step_ns, (int64_t)unit);
        uint64_t whole = a / unit, frac = a % unit;
        if (d == 0) {
            n = snprintf(buf, len, "%s%llu%s", sign, (unsigned long long)whole, units[u].name);
        } else {
            /* frac has log10(unit) digits; keep the first d. */
            int digits = 0;
            for (uint64_t x = unit; x > 1; x /= 10)
                digits++;
            if (d > digits)
                d = digits;
            uint64_t div = 1;
            for (int i = d; i < digits; i++)
                div *= 10;
            n = snprintf(buf, len, "%s%llu.%0*llu%s", sign, (unsigned long long)whole, d,
                         (unsigned long long)(frac / div), units[u].name);
        }
    }
    return written(n, len);
}

size_t tui_axis_ticks(const tui_axis_t *ax, int64_t origin, int min_gap_cols, struct tui_tick *out,
                      size_t max)
{
    assert(ax && out);
    int64_t step = tui_tick_step(ax->span_ns, ax->cols, min_gap_cols);
    i128 rel0 = (i128)ax->t0 - origin;
    i128 k = rel0 / step;
    if (k * step < rel0)
        k++;
    size_t n = 0;
    for (; n < max; k++) {
        i128 t = (i128)origin + k * step;
        if (t >= (i128)ax->t0 + ax->span_ns || t > INT64_MAX)
            break;
        out[n].t = (int64_t)t;
        out[n].col = tui_axis_col(ax, (int64_t)t);
        tui_tick_label(out[n].label, sizeof out[n].label, (int64_t)(k * step), step);
        n++;
    }
    return n;
}

size_t tui_pack(const struct tui_span *spans, size_t n, uint8_t *row, size_t max_rows)
{
    int64_t ends[TUI_PACK_MAX] = {0};
    size_t used = 0;
    if (max_rows > TUI_PACK_MAX)
        max_rows = TUI_PACK_MAX;
    for (size_t i = 0; i < n; i++) {
        size_t r = 0;
        while (r < used && ends[r] > spans[i].start)
            r++;
        if (r == used) {
            if (used == max_rows) {
                row[i] = TUI_PACK_NONE;
                continue;
            }
            used++;
        }
        ends[r] = spans[i].end;
        row[i] = (uint8_t)r;
    }
    return used;
}
