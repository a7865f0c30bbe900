/*
 * The baseline of the import benchmark: parse whole JSON files (plain or
 * gzip) with json-c into one document each, the way a tool without a
 * streaming reader would, and count their traceEvents.  Prints, per file,
 * the bytes, the events and the seconds spent in json-c alone (reading and
 * decompressing not counted), then the totals.
 *
 * Usage: json_parse FILE...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "base/base.h"

int main(int argc, char **argv)
{
    double total_s = 0;
    uint64_t total_ev = 0, total_b = 0;
    for (int i = 1; i < argc; i++) {
        gzFile gz = gzopen(argv[i], "rb");
        if (gz == NULL) {
            fprintf(stderr, "json_parse: cannot open %s\n", argv[i]);
            return 2;
        }
        size_t cap = 1 << 24, len = 0;
        char *buf = xmalloc(cap);
        int n;
        while ((n = gzread(gz, buf + len, (unsigned)(cap - len))) > 0) {
            len += (size_t)n;
            if (len == cap)
                buf = xrealloc(buf, cap *= 2);
        }
        gzclose(gz);
        int64_t t0 = base_monotonic_ns();
        json_tokener *tok = json_tokener_new();
        json_object *o = json_tokener_parse_ex(tok, buf, (int)len);
        json_tokener_free(tok);
        double s = (double)(base_monotonic_ns() - t0) / 1e9;
        json_object *ev = NULL;
        size_t count = 0;
        if (o && json_object_object_get_ex(o, "traceEvents", &ev))
            count = json_object_array_length(ev);
        if (o == NULL) {
            fprintf(stderr, "json_parse: %s: not JSON\n", argv[i]);
            return 1;
        }
        t0 = base_monotonic_ns();
        json_object_put(o);
        s += (double)(base_monotonic_ns() - t0) / 1e9;
        printf("%s: %zu bytes, %zu events, %.2f s\n", argv[i], len, count, s);
        total_s += s;
        total_ev += count;
        total_b += len;
        free(buf);
    }
    printf("total: %llu bytes, %llu events, %.2f s\n", (unsigned long long)total_b,
           (unsigned long long)total_ev, total_s);
    return 0;
}
