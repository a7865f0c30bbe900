/*
 * libFuzzer target: the console's model, fed a few bus messages in a row.
 * Each frame of the input (tests/fuzz/fuzz.h) is one message: a kind byte,
 * a topic node byte, JSON header text, then after a NUL the payload.
 * Messages the schema refuses still reach the model (it must hold up on
 * its own), and every verdict is checked against the decode counters.
 */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "bus/bus.h"
#include "tests/fuzz/fuzz.h"
#include "tui/tui.h"

#define T0 1790000000000000000LL

static bus_msg_t *message(const uint8_t *f, size_t len)
{
    if (len < 2)
        return NULL;
    bus_msg_t *m = bus_msg_new((enum bus_kind)(f[0] % BUS_K_NKINDS));
    const uint8_t *text = f + 2, *nul = memchr(text, 0, len - 2);
    size_t tlen = nul ? (size_t)(nul - text) : len - 2;
    json_tokener *tok = json_tokener_new();
    json_object *o = json_tokener_parse_ex(tok, (const char *)text, (int)tlen);
    json_tokener_free(tok);
    if (o && json_object_is_type(o, json_type_object)) {
        for (struct json_object_iterator it = json_object_iter_begin(o),
                                         end = json_object_iter_end(o);
             !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
            json_object_object_add(bus_msg_header(m), json_object_iter_peek_name(&it),
                                   json_object_get(json_object_iter_peek_value(&it)));
    }
    json_object_put(o);
    if (nul)
        bus_msg_set_payload(m, nul + 1, len - 2 - tlen - 1);
    /* Through the encoder when the schema takes it: the topic carries the node. */
    struct bus_limits lim = bus_limits_default();
    char err[BASE_ERRLEN];
    (void)bus_msg_encode(m, f[1] == 255 ? BUS_NODE_NONE : f[1], 1, &lim, err);
    return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const void *f[8];
    size_t lens[8];
    size_t n = fuzz_split(data, size, f, lens, 8);
    struct tui_model_opts o = {.event_budget = 4096,
                               .max_nodes = 64,
                               .max_names = 256,
                               .max_edges = 64,
                               .max_batch = 1024};
    tui_model_t *model = tui_model_new(&o);
    for (size_t i = 0; i < n; i++) {
        bus_msg_t *m = message(f[i], lens[i]);
        if (m == NULL)
            continue;
        uint64_t errs = base_decstats_errors(tui_model_decstats(model));
        char err[BASE_ERRLEN];
        enum base_dec rc = tui_model_apply(model, m, T0 + (int64_t)i * 1000000, err);
        uint64_t now = base_decstats_errors(tui_model_decstats(model));
        /* A rejection is counted once and says why; an acceptance is not counted. */
        if (rc != BASE_DEC_OK ? now != errs + 1 || err[0] == '\0' : now != errs)
            abort();
        bus_msg_destroy(&m);
    }
    /* What the panels read back. */
    struct tui_summary s;
    tui_model_summary(model, &s);
    if (s.nodes_total != tui_model_nnodes(model) || s.loops < -1 || (s.asym_unseen && s.loops != 0))
        abort();
    for (size_t i = 0; i < tui_model_nnodes(model); i++) {
        const struct tui_node *nd = tui_model_node(model, i);
        int64_t g;
        unsigned flags;
        (void)tui_model_to_axis(model, nd->id, T0, TUI_CLOCK_ALIGNED, &g, &flags);
        (void)tui_model_to_axis(model, nd->id, T0, TUI_CLOCK_RAW, &g, &flags);
        (void)tui_model_offset_at(model, nd->id, T0);
        (void)tui_model_aligned(model, nd->id);
    }
    for (size_t i = 0; i < tui_model_nedges(model); i++)
        if (tui_model_edge(model, i)->nwin > TUI_WIN_HIST)
            abort();
    tui_model_destroy(&model);
    return 0;
}
