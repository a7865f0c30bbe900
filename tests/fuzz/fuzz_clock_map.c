/*
 * libFuzzer target: the map filter's line decoder (clock/mapio.c, behind
 * `dpclock map` and `dptop --map`): the input is its stdin.  Every line
 * must get exactly one answer line (an empty or comment line is copied),
 * and the counts must add up.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock/clock.h"

static int fake(void *ctx, uint32_t node, uint32_t domain, int64_t local, clock_conv_result_t *out,
                char *err)
{
    (void)ctx;
    if (node == 7)
        return base_err(err, "node 7 is not known");
    out->t = local / 2 + (int64_t)domain;
    out->uncertainty_ns = node == 1 ? 3.5 : NAN;
    out->flags = domain == CLOCK_DOMAIN_BOOT ? CLOCK_CONV_EXTRAPOLATED : 0;
    return BASE_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    FILE *in = fmemopen((void *)data, size, "r");
    if (in == NULL)
        return 0;
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    struct clock_map_opts o = {
        .map = fake, .have_node = data[0] & 1, .node = 1, .domain = CLOCK_DOMAIN_PROBE};
    struct clock_map_stats st;
    char err[BASE_ERRLEN];
    int rc = clock_map_lines(in, out, &o, &st, err);
    fclose(in);
    fclose(out);
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += buf[i] == '\n';
    /* One answer a line read (an over-long line is refused as one). */
    if (rc == BASE_OK && (lines != st.lines || st.mapped + st.errors > st.lines)) {
        fprintf(stderr, "%zu answer lines for %llu lines read (%llu mapped, %llu refused)\n", lines,
                (unsigned long long)st.lines, (unsigned long long)st.mapped,
                (unsigned long long)st.errors);
        abort();
    }
    free(buf);
    return 0;
}
