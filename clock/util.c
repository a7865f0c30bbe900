/* Small numeric helpers of clock/: selection, quantiles, Gaussian draws, Cholesky. */
#include "clock/clock_int.h"

#include <stdlib.h>
#include <string.h>

double clk_rng_gauss(clk_rng_t *r)
{
    /* Box–Muller; one of the pair is thrown away to keep the state simple. */
    double u1 = clk_rng_unit(r);
    double u2 = clk_rng_unit(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double clk_hash_gauss(uint64_t seed, uint64_t k)
{
    clk_rng_t r = {clk_mix64(seed ^ clk_mix64(k + 0x632be59bd9b4e019ULL))};
    return clk_rng_gauss(&r);
}

double clk_select(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        /* Median of three keeps sorted input from going quadratic. */
        size_t mid = lo + (hi - lo) / 2;
        double a = v[lo], b = v[mid], c = v[hi];
        double pivot = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i <= j) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                if (j == 0)
                    break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    return v[k];
}

double clk_median(double *v, size_t n)
{
    if (n == 0)
        return NAN;
    double hi = clk_select(v, n, n / 2);
    if (n % 2)
        return hi;
    double lo = v[0];
    for (size_t i = 1; i < n / 2; i++)
        if (v[i] > lo)
            lo = v[i];
    return 0.5 * (lo + hi);
}

double clk_quantile_sorted(const double *v, size_t n, double q)
{
    if (n == 0)
        return NAN;
    if (q <= 0)
        return v[0];
    if (q >= 1)
        return v[n - 1];
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    double f = pos - (double)i;
    if (i + 1 >= n)
        return v[n - 1];
    return v[i] + f * (v[i + 1] - v[i]);
}

int clk_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int clk_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

bool clk_chol(double *A, size_t m)
{
    for (size_t j = 0; j < m; j++) {
        double d = A[j * m + j];
        for (size_t k = 0; k < j; k++)
            d -= A[j * m + k] * A[j * m + k];
        if (!(d > 0) || !isfinite(d))
            return false;
        d = sqrt(d);
        A[j * m + j] = d;
        for (size_t i = j + 1; i < m; i++) {
            double s = A[i * m + j];
            for (size_t k = 0; k < j; k++)
                s -= A[i * m + k] * A[j * m + k];
            A[i * m + j] = s / d;
        }
    }
    return true;
}

/*
 * inv = L⁻ᵀ L⁻¹ as W = L⁻¹ (into inv's lower triangle), then WᵀW summed row
 * by row of W into the upper triangle (the diagonal in col): m³/3
 * multiply-adds with every inner loop along a row.
 */
void clk_chol_inverse(const double *L, size_t m, double *inv, double *col)
{
    memset(inv, 0, m * m * sizeof *inv);
    for (size_t i = 0; i < m; i++) {
        double *wi = &inv[i * m];
        for (size_t k = 0; k < i; k++) {
            double a = L[i * m + k];
            const double *wk = &inv[k * m];
            for (size_t j = 0; j <= k; j++)
                wi[j] += a * wk[j];
        }
        double d = L[i * m + i];
        for (size_t j = 0; j < i; j++)
            wi[j] = -wi[j] / d;
        wi[i] = 1.0 / d;
    }
    memset(col, 0, m * sizeof *col);
    for (size_t i = 0; i < m; i++) {
        const double *wi = &inv[i * m];
        for (size_t b = 0; b <= i; b++) {
            double wb = wi[b];
            col[b] += wb * wb;
            double *up = &inv[b * m];
            for (size_t a = b + 1; a <= i; a++)
                up[a] += wb * wi[a];
        }
    }
    for (size_t a = 0; a < m; a++) {
        inv[a * m + a] = col[a];
        for (size_t b = 0; b < a; b++)
            inv[a * m + b] = inv[b * m + a];
    }
}

size_t clk_lower_bound(const void *base, size_t n, size_t size, const void *key,
                       bool (*before)(const void *elem, const void *key))
{
    const char *b = base;
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (before(b + mid * size, key))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void *clk_array_reserve(void *base, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return base;
    *cap = *cap ? 2 * *cap : 16;
    return xreallocarray(base, *cap, size);
}

void clk_array_open(void *base, size_t n, size_t size, size_t at)
{
    assert(at <= n);
    char *b = base;
    memmove(b + (at + 1) * size, b + at * size, (n - at) * size);
}

void clk_array_close(void *base, size_t n, size_t size, size_t at)
{
    assert(at < n);
    char *b = base;
    memmove(b + at * size, b + (at + 1) * size, (n - at - 1) * size);
}

size_t clk_array_far_end(size_t n, size_t at)
{
    assert(at < n);
    return at >= n - 1 - at ? 0 : n - 1;
}
