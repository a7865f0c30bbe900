/*
 * libFuzzer target: an imported trace file (tui/import.c and the format
 * readers), the whole way from the bytes to the merged trace's events and
 * metadata.  The input is the file (gzip or not); it is placed on node 0 of
 * a model that knows that node.  When the import succeeds, what it wrote
 * must be JSON that json-c reads back: the readers copy values they do not
 * understand verbatim, so a gap in their validation would show here; and
 * the second pass must take whatever the first one did, in both of its
 * modes (the merged Chrome trace, and the events loaded as the node's own).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "bus/bus.h"
#include "tests/fuzz/fuzz.h"
#include "tui/tui.h"

static void must_parse(const char *what, char *buf, size_t len)
{
    json_tokener *tok = json_tokener_new();
    json_object *o = json_tokener_parse_ex(tok, buf, (int)len);
    enum json_tokener_error e = json_tokener_get_error(tok);
    json_tokener_free(tok);
    if (o == NULL || e != json_tokener_success) {
        fprintf(stderr, "the import wrote %s that is not JSON: %.*s\n", what,
                (int)(len > 2000 ? 2000 : len), buf);
        abort();
    }
    json_object_put(o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[] = "/tmp/dptop-fuzz-import-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        unlink(path);
        return 0;
    }
    close(fd);

    struct tui_model_opts o = {
        .event_budget = 1024, .max_nodes = 8, .max_names = 64, .max_edges = 8, .max_batch = 64};
    tui_model_t *model = tui_model_new(&o);
    bus_msg_t *hello = bus_msg_new(BUS_K_HELLO);
    bus_msg_set_i64(hello, "node", 0);
    bus_msg_set_str(hello, "host", "h0");
    bus_msg_set_str(hello, "version", "0");
    bus_msg_set_i64(hello, "pid", 1);
    tui_model_apply(model, hello, 1, NULL);
    bus_msg_destroy(&hello);
    /* Snapshot pairs of both clocks the readers map through (trace for the
     * console's own events, boottime for rocprofv3). */
    static const char *const domains[] = {"trace", "boottime"};
    for (size_t d = 0; d < 2; d++) {
        bus_msg_t *snap = bus_msg_new(BUS_K_SNAP);
        bus_msg_set_i64(snap, "node", 0);
        bus_msg_set_i64(snap, "pid", 0);
        bus_msg_set_str(snap, "a", domains[d]);
        bus_msg_set_str(snap, "b", "probe");
        json_object *pairs = json_object_new_array();
        for (int i = 0; i < 2; i++) {
            json_object *pr = json_object_new_array();
            json_object_array_add(pr, json_object_new_int64(1000000000LL * (i + 1)));
            json_object_array_add(pr,
                                  json_object_new_int64(1790000000000000000LL + 1000000000LL * i));
            json_object_array_add(pairs, pr);
        }
        json_object_object_add(bus_msg_header(snap), "pairs", pairs);
        tui_model_apply(model, snap, 2, NULL);
        bus_msg_destroy(&snap);
    }

    char arg[64], err[BASE_ERRLEN];
    snprintf(arg, sizeof arg, "0=%s", path);
    tui_import_t *imp = tui_import_new(size > 0 && (data[0] & 1));
    if (tui_import_add(imp, arg, err) == BASE_OK &&
        tui_import_prepare(imp, model, 0, 0, err) == BASE_OK) {
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        bool first = true;
        fputs("[", m);
        int rc = tui_import_write_events(imp, model, m, 0, &first, err);
        fputs("]", m);
        fclose(m);
        /* Pass 1 read the whole file and found nothing wrong: pass 2 must
         * not fail on the same bytes (a difference between the passes). */
        if (rc != BASE_OK) {
            fprintf(stderr, "pass 1 took the file, pass 2 failed: %s\n", err);
            abort();
        }
        must_parse("events", buf, len);
        free(buf);
        buf = NULL;
        m = open_memstream(&buf, &len);
        fputs("{", m);
        tui_import_write_meta(imp, m);
        fputs("}", m);
        fclose(m);
        must_parse("metadata", buf, len);
        free(buf);
        /* The same events as the node's own (the console, the XSpace export):
         * into the model, twice (as after a seek back). */
        if (tui_import_load(imp, model, 4096, err) != BASE_OK) {
            fprintf(stderr, "the passes took the file, loading it failed: %s\n", err);
            abort();
        }
        tui_import_apply(imp, model);
        tui_import_apply(imp, model);
    }
    tui_import_destroy(&imp);
    tui_model_destroy(&model);
    unlink(path);
    return 0;
}
