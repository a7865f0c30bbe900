/*
 * Unit tests for tui/: numbers in human units, the time axis and its ticks,
 * lane packing, the event store (budget, eviction counts, order), the model
 * fed by bus messages (node table, fits, windows, names, rejections),
 * aligned versus raw placement of an event, sorting of the node table, the
 * Chrome trace writer (parsed back with json-c), and the console itself on
 * a terminal that goes to /dev/null (resizing down to nothing, every key).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curses.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tui/tui.h"

#define T0 1790000000000000000LL /* a CLOCK_REALTIME-like instant */

/* ---- helpers ------------------------------------------------------------- */

/* A message of kind whose header holds the fields of the JSON object text. */
static bus_msg_t *msg_json(enum bus_kind kind, const char *json)
{
    bus_msg_t *m = bus_msg_new(kind);
    json_object *o = json_tokener_parse(json);
    assert_non_null(o);
    for (struct json_object_iterator it = json_object_iter_begin(o), end = json_object_iter_end(o);
         !json_object_iter_equal(&it, &end); json_object_iter_next(&it))
        json_object_object_add(bus_msg_header(m), json_object_iter_peek_name(&it),
                               json_object_get(json_object_iter_peek_value(&it)));
    json_object_put(o);
    return m;
}

static enum base_dec apply_json(tui_model_t *m, enum bus_kind kind, const char *json)
{
    bus_msg_t *msg = msg_json(kind, json);
    char err[BASE_ERRLEN];
    enum base_dec rc = tui_model_apply(m, msg, T0, err);
    bus_msg_destroy(&msg);
    return rc;
}

static void apply_ok(tui_model_t *m, enum bus_kind kind, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    bus_msg_t *msg = msg_json(kind, buf);
    char err[BASE_ERRLEN] = "";
    enum base_dec rc = tui_model_apply(m, msg, T0, err);
    if (rc != BASE_DEC_OK)
        fail_msg("%s rejected: %s", bus_kind_name(kind), err);
    bus_msg_destroy(&msg);
}

/* An ev message of (node, pid) with the given events (through the real codec). */
static void apply_events(tui_model_t *m, uint16_t node, uint32_t pid, const gpu_event_t *ev,
                         size_t n, int64_t arrival)
{
    bus_msg_t *msg = bus_msg_new(BUS_K_EV);
    bus_msg_set_i64(msg, "node", node);
    bus_msg_set_i64(msg, "pid", pid);
    bus_msg_set_i64(msg, "count", (int64_t)n);
    bus_msg_set_u64(msg, "dropped", 0);
    void *p = bus_msg_payload_alloc(msg, gpu_batch_size(n));
    gpu_batch_encode(ev, n, p);
    char err[BASE_ERRLEN] = "";
    enum base_dec rc = tui_model_apply(m, msg, arrival, err);
    if (rc != BASE_DEC_OK)
        fail_msg("ev rejected: %s", err);
    bus_msg_destroy(&msg);
}

static gpu_event_t ev_make(uint8_t kind, uint16_t node, uint32_t pid, uint32_t stream,
                           uint32_t name, int64_t start, int64_t end)
{
    gpu_event_t e;
    memset(&e, 0, sizeof e);
    e.kind = kind;
    e.node = node;
    e.pid = pid;
    e.tid = pid;
    e.stream = stream;
    e.name_id = name;
    e.start_ns = start;
    e.end_ns = end;
    return e;
}

/* ---- formatting and the axis ----------------------------------------------- */

static void test_fmt(void **state)
{
    (void)state;
    char b[64];
    tui_fmt_dur(b, sizeof b, 12);
    assert_string_equal(b, "12ns");
    tui_fmt_dur(b, sizeof b, 1250);
    assert_string_equal(b, "1.25µs");
    tui_fmt_dur(b, sizeof b, -3.4e6);
    assert_string_equal(b, "-3.40ms");
    tui_fmt_dur(b, sizeof b, 2.5e9);
    assert_string_equal(b, "2.50s");
    tui_fmt_dur(b, sizeof b, 65e9);
    assert_string_equal(b, "1m05s");
    tui_fmt_dur(b, sizeof b, NAN);
    assert_string_equal(b, "?");
    tui_fmt_offset(b, sizeof b, 4012345);
    assert_string_equal(b, "+4.012345ms");
    tui_fmt_offset(b, sizeof b, -812003);
    assert_string_equal(b, "-812.003µs");
    tui_fmt_offset(b, sizeof b, 37);
    assert_string_equal(b, "+37ns");
    tui_fmt_count(b, sizeof b, 12345);
    assert_string_equal(b, "12.3k");
    tui_fmt_count(b, sizeof b, 950);
    assert_string_equal(b, "950");
    /* Truncation never overflows. */
    tui_fmt_offset(b, 4, 4012345);
    assert_int_equal(strlen(b), 3);
}

static void test_axis_columns(void **state)
{
    (void)state;
    tui_axis_t ax = {.t0 = T0, .span_ns = 1000, .cols = 100};
    assert_int_equal(tui_axis_col(&ax, T0), 0);
    assert_int_equal(tui_axis_col(&ax, T0 + 9), 0);
    assert_int_equal(tui_axis_col(&ax, T0 + 10), 1);
    assert_int_equal(tui_axis_col(&ax, T0 + 999), 99);
    assert_int_equal(tui_axis_col(&ax, T0 + 1000), 100);
    assert_int_equal(tui_axis_col(&ax, T0 - 1), -1); /* floor, not truncation */
    assert_int_equal(tui_axis_col(&ax, T0 - 10), -1);
    assert_int_equal(tui_axis_col(&ax, T0 - 11), -2);
    /* Far away times clamp instead of overflowing. */
    assert_int_equal(tui_axis_col(&ax, INT64_MAX), 1 << 30);
    assert_int_equal(tui_axis_col(&ax, INT64_MIN), -(1 << 30));
    for (int c = -5; c < 105; c++) {
        int64_t t = tui_axis_time(&ax, c);
        assert_int_equal(tui_axis_col(&ax, t), c);
        assert_int_equal(tui_axis_col(&ax, t - 1), c - 1);
    }
    /* Spans that do not divide evenly: every column start maps back to itself. */
    tui_axis_t ax2 = {.t0 = -7, .span_ns = 200000000, .cols = 137};
    for (int c = 0; c < 137; c++)
        assert_int_equal(tui_axis_col(&ax2, tui_axis_time(&ax2, c)), c);
}

static void test_ticks(void **state)
{
    (void)state;
    char b[32];
    tui_tick_label(b, sizeof b, 0, 250000000);
    assert_string_equal(b, "0");
    tui_tick_label(b, sizeof b, 250000000, 250000000);
    assert_string_equal(b, "250ms");
    tui_tick_label(b, sizeof b, 1250000000, 250000000);
    assert_string_equal(b, "1.25s");
    tui_tick_label(b, sizeof b, 1500000000, 500000000);
    assert_string_equal(b, "1.5s");
    tui_tick_label(b, sizeof b, 40000, 20000);
    assert_string_equal(b, "40µs");
    tui_tick_label(b, sizeof b, 1000002000, 2000);
    assert_string_equal(b, "1.000002s");
    tui_tick_label(b, sizeof b, 150000000000LL, 10000000000LL);
    assert_string_equal(b, "2m30s");
    tui_tick_label(b, sizeof b, 12, 2);
    assert_string_equal(b, "12ns");
    tui_tick_label(b, sizeof b, -500000, 500000);
    assert_string_equal(b, "-500µs");
    tui_tick_label(b, sizeof b, 3723000000000LL, 1000000000);
    assert_string_equal(b, "1h02m03s");

    assert_int_equal(tui_tick_step(1000000000, 100, 10), 100000000);
    assert_int_equal(tui_tick_step(1000000000, 100, 12), 200000000);
    assert_int_equal(tui_tick_step(1000000000, 100, 30), 500000000);
    assert_int_equal(tui_tick_step(100, 100, 1), 1);

    /* A 200 ms view at origin + 10.25 s over 140 columns: ticks every 20 ms. */
    int64_t origin = T0;
    tui_axis_t ax = {.t0 = origin + 10250000000LL, .span_ns = 200000000, .cols = 140};
    struct tui_tick t[32];
    size_t n = tui_axis_ticks(&ax, origin, 14, t, 32);
    assert_int_equal(n, 10);
    assert_int_equal(t[0].t, origin + 10260000000LL);
    assert_string_equal(t[0].label, "10.26s");
    assert_int_equal(t[0].col, 7);
    assert_string_equal(t[9].label, "10.44s");
    for (size_t i = 1; i < n; i++)
        assert_true(t[i].col - t[i - 1].col >= 14);
}

static void test_pack(void **state)
{
    (void)state;
    /* step > forward > layer_0, layer_1; then backward beside forward. */
    struct tui_span s[] = {{0, 100}, {5, 35}, {5, 12}, {12, 20}, {35, 65}, {40, 50}, {66, 70}};
    uint8_t row[7];
    size_t used = tui_pack(s, 7, row, 3);
    assert_int_equal(used, 3);
    assert_int_equal(row[0], 0);
    assert_int_equal(row[1], 1);
    assert_int_equal(row[2], 2);
    assert_int_equal(row[3], 2);
    assert_int_equal(row[4], 1);
    assert_int_equal(row[5], 2);
    assert_int_equal(row[6], 1);
    /* Deeper nesting than rows: the rest is not placed. */
    struct tui_span d[] = {{0, 10}, {1, 9}, {2, 8}, {3, 7}};
    used = tui_pack(d, 4, row, 2);
    assert_int_equal(used, 2);
    assert_int_equal(row[2], TUI_PACK_NONE);
    assert_int_equal(row[3], TUI_PACK_NONE);
    /* Disjoint spans all share row 0. */
    struct tui_span f[] = {{0, 1}, {1, 2}, {2, 3}};
    assert_int_equal(tui_pack(f, 3, row, 4), 1);
}

/* ---- the store ---------------------------------------------------------------- */

static void test_store_budget(void **state)
{
    (void)state;
    tui_store_t *st = tui_store_new(100, 16);
    char err[BASE_ERRLEN];
    /* Node 1 sends 80 events, then node 2 sends 80: the oldest arrivals go. */
    for (int i = 0; i < 80; i++) {
        gpu_event_t e = ev_make(GPU_EV_KERNEL, 1, 10, 1, 1, 1000 * i, 1000 * i + 500);
        assert_int_equal(tui_store_add(st, &e, err), BASE_OK);
    }
    for (int i = 0; i < 80; i++) {
        gpu_event_t e = ev_make(GPU_EV_KERNEL, 2, 20, 1, 1, 1000 * i, 1000 * i + 500);
        assert_int_equal(tui_store_add(st, &e, err), BASE_OK);
    }
    assert_int_equal(tui_store_count(st), 100);
    assert_int_equal(tui_store_added(st), 160);
    assert_int_equal(tui_store_evicted(st), 60);
    assert_int_equal(tui_store_node_evicted(st, 1), 60);
    assert_int_equal(tui_store_node_evicted(st, 2), 0);
    assert_int_equal(tui_store_ntracks(st), 2);
    const struct tui_track_info *t0 = tui_store_track(st, 0);
    assert_int_equal(t0->count, 20);
    assert_int_equal(tui_store_ev(st, 0, 0)->start, 60000); /* the oldest 60 are gone */
    /* Malformed events are refused and counted, not stored. */
    gpu_event_t bad = ev_make(GPU_EV_KERNEL, 1, 10, 1, 1, 10, 5);
    assert_int_equal(tui_store_add(st, &bad, err), BASE_ERR);
    bad = ev_make(0, 1, 10, 1, 1, 10, 50);
    assert_int_equal(tui_store_add(st, &bad, err), BASE_ERR);
    assert_int_equal(tui_store_refused(st), 2);
    /* The track table is bounded too. */
    for (uint32_t s = 2; s < 40; s++) {
        gpu_event_t e = ev_make(GPU_EV_KERNEL, 3, 30, s, 1, 1, 2);
        tui_store_add(st, &e, err);
    }
    assert_int_equal(tui_store_ntracks(st), 16);
    assert_true(tui_store_refused(st) > 2);
    assert_int_equal(tui_store_count(st), 100);
    tui_store_clear(st);
    assert_int_equal(tui_store_count(st), 0);
    assert_int_equal(tui_store_evicted(st), 0);
    tui_store_destroy(&st);
    assert_null(st);
}

static void test_store_order(void **state)
{
    (void)state;
    tui_store_t *st = tui_store_new(1000, 16);
    /* Events that arrive out of start order (end-ordered batches) are kept sorted. */
    int64_t starts[] = {50, 10, 30, 20, 40, 5, 60, 55};
    for (size_t i = 0; i < BASE_ARRAY_LEN(starts); i++) {
        gpu_event_t e = ev_make(GPU_EV_API, 1, 10, 0, 1, starts[i], starts[i] + 3);
        assert_int_equal(tui_store_add(st, &e, NULL), BASE_OK);
    }
    /* Host events go to a host-thread track, device work to a queue track. */
    gpu_event_t k = ev_make(GPU_EV_KERNEL, 1, 10, 7, 1, 100, 400);
    tui_store_add(st, &k, NULL);
    assert_int_equal(tui_store_ntracks(st), 2);
    assert_true(tui_store_track(st, 0)->key.host);
    assert_false(tui_store_track(st, 1)->key.host);
    assert_int_equal(tui_store_track(st, 1)->key.id, 7);
    assert_int_equal(tui_store_track(st, 1)->max_dur, 300);
    const struct tui_track_info *t = tui_store_track(st, 0);
    for (size_t i = 1; i < t->count; i++)
        assert_true(tui_store_ev(st, 0, i - 1)->start <= tui_store_ev(st, 0, i)->start);
    assert_int_equal(tui_store_lower_bound(st, 0, 0), 0);
    assert_int_equal(tui_store_lower_bound(st, 0, 21), 3); /* 5, 10, 20 before */
    assert_int_equal(tui_store_lower_bound(st, 0, 1000), t->count);
    assert_int_equal(t->last_end, 63);
    /* Of events that start together, the enclosing (longer) one comes first. */
    gpu_event_t inner = ev_make(GPU_EV_RANGE, 5, 10, 0, 1, 1000, 1100);
    gpu_event_t outer = ev_make(GPU_EV_RANGE, 5, 10, 0, 2, 1000, 5000);
    tui_store_add(st, &inner, NULL);
    tui_store_add(st, &outer, NULL);
    assert_int_equal(tui_store_ev(st, 2, 0)->name_id, 2);
    assert_int_equal(tui_store_ev(st, 2, 1)->name_id, 1);
    /* A full budget keeps its order while evicting. */
    tui_store_t *small = tui_store_new(4, 4);
    for (int i = 0; i < 10; i++) {
        gpu_event_t e = ev_make(GPU_EV_KERNEL, 1, 10, 1, 1, 100 - i, 101 - i);
        tui_store_add(small, &e, NULL);
    }
    assert_int_equal(tui_store_count(small), 4);
    assert_int_equal(tui_store_evicted(small), 6);
    for (size_t i = 1; i < 4; i++)
        assert_true(tui_store_ev(small, 0, i - 1)->start <= tui_store_ev(small, 0, i)->start);
    tui_store_destroy(&small);
    tui_store_destroy(&st);
}

/* ---- the model ------------------------------------------------------------------- */

static void test_model_nodes(void **state)
{
    (void)state;
    tui_model_t *m = tui_model_new(NULL);
    apply_ok(m, BUS_K_HELLO,
             "{\"node\":2,\"host\":\"gpu-b\",\"pid\":77,\"version\":\"0.1.0\",\"probe_addr\":"
             "\"10.0.0.2:5000\",\"clocks\":[\"probe\",\"trace\"],\"gpus\":[{\"index\":0,"
             "\"name\":\"MI250X\"}]}");
    const struct tui_node *n = tui_model_find(m, 2);
    assert_non_null(n);
    assert_string_equal(n->host, "gpu-b");
    assert_int_equal(n->state, TUI_NODE_UP);
    assert_int_equal(n->ngpus, 1);
    assert_string_equal(n->gpu_name, "MI250X");
    /* The master's table is the authority on state and the reference. */
    apply_ok(m, BUS_K_NODES,
             "{\"epoch\":3,\"ref\":0,\"nodes\":[{\"node\":0,\"host\":\"gpu-a\",\"state\":\"up\","
             "\"last_seen_ns\":%lld},{\"node\":2,\"host\":\"gpu-b\",\"state\":\"down\","
             "\"last_seen_ns\":%lld},{\"node\":5,\"host\":\"gpu-c\",\"state\":\"unaligned\","
             "\"last_seen_ns\":%lld,\"pid\":99}]}",
             T0, T0, T0);
    assert_int_equal(tui_model_nnodes(m), 3);
    assert_int_equal(tui_model_ref(m), 0);
    assert_true(tui_model_find(m, 0)->is_ref);
    assert_int_equal(tui_model_find(m, 2)->state, TUI_NODE_DOWN);
    assert_int_equal(tui_model_find(m, 5)->state, TUI_NODE_UNALIGNED);
    assert_int_equal(tui_model_find(m, 5)->pid, 99);
    assert_int_equal(tui_model_node(m, 1)->id, 2); /* id order */
    struct tui_summary s;
    tui_model_summary(m, &s);
    assert_int_equal(s.nodes_total, 3);
    assert_int_equal(s.nodes_up, 1);
    assert_int_equal(s.nodes_down, 1);
    assert_int_equal(s.nodes_unaligned, 1);
    /* Status: probes/s from consecutive messages, GPU busy as the mean. */
    apply_ok(m, BUS_K_STATUS,
             "{\"node\":5,\"t_ns\":%lld,\"probes_sent\":100,\"probes_recv\":90,"
             "\"probes_garbage\":0,\"probes_forged\":0,\"events_per_s\":10,\"ev_drops\":4,"
             "\"dec_errors\":{},\"cpu_pct\":1.5}",
             T0);
    apply_ok(m, BUS_K_STATUS,
             "{\"node\":5,\"t_ns\":%lld,\"probes_sent\":300,\"probes_recv\":290,"
             "\"probes_garbage\":0,\"probes_forged\":0,\"events_per_s\":10,\"ev_drops\":6,"
             "\"dec_errors\":{},\"cpu_pct\":1.5,\"gpus\":[{\"index\":0,\"busy_pct\":40},"
             "{\"index\":1,\"busy_pct\":60}]}",
             T0 + 2000000000LL);
    n = tui_model_find(m, 5);
    assert_true(fabs(n->probes_per_s - 100.0) < 1e-9);
    assert_true(fabs(n->gpu_busy_pct - 50.0) < 1e-9);
    assert_int_equal(n->ev_drops, 6);
    /* bye marks a node down. */
    apply_ok(m, BUS_K_BYE, "{\"node\":0}");
    assert_int_equal(tui_model_find(m, 0)->state, TUI_NODE_DOWN);
    /* A log line reaches the status bar, without control characters. */
    apply_ok(m, BUS_K_LOG, "{\"node\":5,\"level\":\"warn\",\"msg\":\"clock\\nstep\"}");
    assert_string_equal(tui_model_last_log(m, NULL), "n5 warn: clock step");
    tui_model_destroy(&m);
    assert_null(m);
}

static void test_model_fits_windows(void **state)
{
    (void)state;
    tui_model_t *m = tui_model_new(NULL);
    uint64_t g0 = tui_model_generation(m);
    apply_ok(m, BUS_K_NODE_FIT,
             "{\"window\":7,\"node\":3,\"ref\":1,\"anchor_ns\":%lld,\"offset_ns\":5000.5,"
             "\"drift_ppb\":-20,\"uncertainty_ns\":55,\"from_ns\":%lld,\"to_ns\":%lld,"
             "\"aligned\":true}",
             T0, T0 - 1000000000LL, T0 + 1000000000LL);
    assert_true(tui_model_generation(m) > g0);
    const struct tui_node *n = tui_model_find(m, 3);
    assert_non_null(n);
    assert_true(n->have_fit);
    assert_int_equal(n->fit.window, 7);
    assert_true(fabs(n->fit.offset_ns - 5000.5) < 1e-9);
    assert_int_equal(tui_model_ref(m), 1);
    /* An older window does not replace the newest one in the table. */
    apply_ok(m, BUS_K_NODE_FIT,
             "{\"window\":6,\"node\":3,\"ref\":1,\"anchor_ns\":%lld,\"offset_ns\":4000,"
             "\"drift_ppb\":-20,\"uncertainty_ns\":55,\"from_ns\":%lld,\"to_ns\":%lld,"
             "\"aligned\":true}",
             T0 - 2000000000LL, T0 - 3000000000LL, T0 - 1000000000LL);
    assert_int_equal(tui_model_find(m, 3)->fit.window, 7);
    /* Offset now = offset at the anchor plus the drift since. */
    double off = tui_model_offset_at(m, 3, T0 + 1000000000LL);
    assert_true(fabs(off - (5000.5 - 20.0)) < 2.0);
    assert_true(isnan(tui_model_offset_at(m, 9, T0)));
    /* Window statistics, then the fit and the loop residual of the same window. */
    apply_ok(m, BUS_K_WIN,
             "{\"window\":7,\"src\":3,\"dst\":1,\"sent\":200,\"received\":190,\"lost\":10,"
             "\"pure_pct\":90,\"rtt_min_ns\":20000,\"rtt_median_ns\":23000,\"estimator\":\"svm\"}");
    apply_ok(
        m, BUS_K_WIN,
        "{\"window\":7,\"src\":3,\"dst\":2,\"sent\":200,\"received\":200,\"lost\":0,"
        "\"pure_pct\":100,\"rtt_min_ns\":30000,\"rtt_median_ns\":33000,\"estimator\":\"svm\"}");
    apply_ok(m, BUS_K_EDGE_FIT,
             "{\"window\":7,\"src\":3,\"dst\":1,\"estimator\":\"svm\",\"anchor_ns\":%lld,"
             "\"offset_ns\":-1234.25,\"drift_ppb\":12.5,\"uncertainty_ns\":40.5,\"n_fwd\":180,"
             "\"n_rev\":175,\"from_ns\":%lld,\"to_ns\":%lld,\"margin_ns\":80}",
             T0, T0, T0 + 2000000000LL);
    apply_ok(m, BUS_K_SOLVE,
             "{\"window\":7,\"ref\":1,\"residuals\":[{\"src\":3,\"dst\":1,\"residual_ns\":3.5}],"
             "\"unaligned\":[]}");
    assert_int_equal(tui_model_nedges(m), 2);
    const struct tui_edge *e = tui_model_edge(m, 0);
    assert_int_equal(e->src, 3);
    assert_int_equal(e->dst, 1);
    assert_int_equal(e->nwin, 1);
    assert_true(e->win[0].have_fit && e->win[0].have_stats);
    assert_int_equal(e->win[0].n_fwd, 180);
    assert_true(fabs(e->win[0].offset_ns + 1234.25) < 1e-9);
    assert_true(fabs(e->win[0].margin_ns - 80) < 1e-9);
    assert_true(fabs(e->win[0].residual_ns - 3.5) < 1e-9);
    assert_string_equal(e->win[0].estimator, "svm");
    /* Node-level probe statistics over the outgoing edges. */
    n = tui_model_find(m, 3);
    assert_true(fabs(n->rtt_min_ns - 20000) < 1e-9);
    assert_true(fabs(n->rtt_med_ns - 28000) < 1e-9);
    assert_true(fabs(n->loss_pct - 2.5) < 1e-9);
    assert_true(fabs(n->pure_pct - (90 * 190 + 100 * 200) / 390.0) < 1e-9);
    /* History: newest first, bounded. */
    for (int w = 8; w < 8 + TUI_WIN_HIST + 3; w++)
        apply_ok(m, BUS_K_WIN,
                 "{\"window\":%d,\"src\":3,\"dst\":1,\"sent\":1,\"received\":1,\"lost\":0,"
                 "\"pure_pct\":100,\"estimator\":\"svm\"}",
                 w);
    e = tui_model_edge(m, 0);
    assert_int_equal(e->nwin, TUI_WIN_HIST);
    assert_int_equal(e->win[0].window, 8 + TUI_WIN_HIST + 2);
    assert_true(e->win[0].window > e->win[1].window);
    /* sim_truth is kept for the demo's truth log. */
    apply_ok(m, BUS_K_SIM_TRUTH,
             "{\"node\":3,\"t0_ns\":%lld,\"offset_ns\":4200000,\"drift_ppm\":25,"
             "\"wander_ppb\":0,\"seed\":9}",
             T0);
    n = tui_model_find(m, 3);
    assert_true(n->have_truth);
    assert_true(fabs(n->truth.drift_ppm - 25) < 1e-12);
    assert_int_equal(n->truth.seed, 9);
    tui_model_destroy(&m);
}

static void test_model_names_and_rejects(void **state)
{
    (void)state;
    tui_model_t *m = tui_model_new(NULL);
    apply_ok(m, BUS_K_NAMES, "{\"node\":1,\"pid\":42,\"names\":[[1,\"fwd_gemm_0\"],[2,\"nccl\"]]}");
    apply_ok(m, BUS_K_NAMES, "{\"node\":2,\"pid\":42,\"names\":[[1,\"other\"]]}");
    assert_string_equal(tui_model_name(m, 1, 42, 1), "fwd_gemm_0");
    assert_string_equal(tui_model_name(m, 1, 42, 2), "nccl");
    assert_string_equal(tui_model_name(m, 2, 42, 1), "other"); /* per (node, pid) */
    assert_null(tui_model_name(m, 1, 43, 1));
    assert_null(tui_model_name(m, 1, 42, 0));
    /* Many names: the table grows and keeps every one. */
    char buf[65536];
    size_t off = (size_t)snprintf(buf, sizeof buf, "{\"node\":1,\"pid\":7,\"names\":[");
    for (int i = 1; i <= 2000; i++)
        off +=
            (size_t)snprintf(buf + off, sizeof buf - off, "%s[%d,\"k%d\"]", i > 1 ? "," : "", i, i);
    snprintf(buf + off, sizeof buf - off, "]}");
    assert_int_equal(apply_json(m, BUS_K_NAMES, buf), BASE_DEC_OK);
    assert_string_equal(tui_model_name(m, 1, 7, 1999), "k1999");
    assert_string_equal(tui_model_name(m, 1, 42, 2), "nccl");
    apply_ok(m, BUS_K_SCOPE, "{\"node\":1,\"pid\":42,\"tree\":[[5,0],[6,5],[7,6]]}");
    uint64_t parent = 0;
    assert_int_equal(tui_model_scope_parent(m, 1, 42, 7, &parent), BASE_OK);
    assert_int_equal(parent, 6);
    assert_int_equal(tui_model_scope_parent(m, 1, 42, 99, &parent), BASE_ERR);

    /* Malformed input: rejected with a message and counted by outcome. */
    const base_decstats_t *d = tui_model_decstats(m);
    uint64_t ok = d->n[BASE_DEC_OK];
    assert_int_equal(apply_json(m, BUS_K_NAMES, "{\"node\":1,\"pid\":42,\"names\":[[1]]}"),
                     BASE_DEC_BAD_TYPE);
    assert_int_equal(apply_json(m, BUS_K_NAMES, "{\"node\":1,\"pid\":42,\"names\":[[0,\"x\"]]}"),
                     BASE_DEC_BAD_VALUE);
    assert_int_equal(apply_json(m, BUS_K_NODES,
                                "{\"ref\":0,\"nodes\":[{\"node\":1,"
                                "\"host\":\"a\",\"state\":\"sideways\"}]}"),
                     BASE_DEC_BAD_VALUE);
    assert_int_equal(apply_json(m, BUS_K_STATUS, "{\"node\":1,\"t_ns\":\"soon\"}"),
                     BASE_DEC_BAD_TYPE);
    assert_int_equal(apply_json(m, BUS_K_NODE_FIT, "{\"window\":1,\"node\":1}"), BASE_DEC_BAD_TYPE);
    assert_int_equal(apply_json(m, BUS_K_SNAP,
                                "{\"node\":1,\"pid\":0,\"a\":\"trace\",\"b\":\"probe\","
                                "\"pairs\":[[1,\"x\"]]}"),
                     BASE_DEC_BAD_TYPE);
    assert_int_equal(apply_json(m, BUS_K_WIN, "{\"window\":1,\"src\":70000,\"dst\":1}"),
                     BASE_DEC_BAD_VALUE);
    d = tui_model_decstats(m);
    assert_int_equal(d->n[BASE_DEC_OK], ok);
    assert_int_equal(base_decstats_errors(d), 7);
    assert_true(strlen(tui_model_last_error(m)) > 0);
    /* An ev whose payload disagrees with its count. */
    bus_msg_t *ev = bus_msg_new(BUS_K_EV);
    bus_msg_set_i64(ev, "node", 1);
    bus_msg_set_i64(ev, "pid", 42);
    bus_msg_set_i64(ev, "count", 5);
    bus_msg_set_u64(ev, "dropped", 0);
    gpu_event_t one = ev_make(GPU_EV_KERNEL, 1, 42, 1, 1, 10, 20);
    gpu_batch_encode(&one, 1, bus_msg_payload_alloc(ev, gpu_batch_size(1)));
    assert_int_equal(tui_model_apply(m, ev, T0, NULL), BASE_DEC_BAD_VALUE);
    /* A truncated payload. */
    bus_msg_set_i64(ev, "count", 1);
    bus_msg_set_payload(ev, "DPEV", 4);
    assert_int_not_equal(tui_model_apply(m, ev, T0, NULL), BASE_DEC_OK);
    bus_msg_destroy(&ev);
    assert_int_equal(tui_store_count(tui_model_store(m)), 0);
    /* Wire frames that are not a bus message at all. */
    struct bus_frame fr[2] = {{"dp9.ev.1", 8}, {"{}", 2}};
    struct bus_limits lim = bus_limits_default();
    assert_int_equal(tui_model_apply_frames(m, fr, 2, &lim, T0, NULL), BASE_DEC_BAD_VERSION);
    tui_model_destroy(&m);
}

/* ---- time: aligned versus raw ---------------------------------------------------- */

/*
 * Node 1 (reference) and node 2.  Trace clocks are monotonic-like (small);
 * snapshot pairs say probe = trace + P_n; node 2's fit says global = its
 * probe + 3 ms.  An event at trace time t on node 2 is at t + P_2 on its raw
 * (probe) clock and t + P_2 + 3 ms on the global time base.
 */
#define P1 (T0 - 1000000000000LL)
#define P2 (T0 - 2000000000000LL + 7000000LL)

static void feed_two_nodes(tui_model_t *m, bool node2_aligned)
{
    for (int n = 1; n <= 2; n++) {
        int64_t p = n == 1 ? P1 : P2;
        apply_ok(m, BUS_K_SNAP,
                 "{\"node\":%d,\"pid\":0,\"a\":\"trace\",\"b\":\"probe\",\"pairs\":[[%lld,%lld],"
                 "[%lld,%lld],[%lld,%lld]]}",
                 n, 1000000000000LL, 1000000000000LL + p, 1001000000000LL, 1001000000000LL + p,
                 1002000000000LL, 1002000000000LL + p);
    }
    int64_t a2 = 1001000000000LL + P2;
    apply_ok(m, BUS_K_NODE_FIT,
             "{\"window\":1,\"node\":1,\"ref\":1,\"anchor_ns\":%lld,\"offset_ns\":0,"
             "\"drift_ppb\":0,\"uncertainty_ns\":0,\"from_ns\":%lld,\"to_ns\":%lld,"
             "\"aligned\":true}",
             1001000000000LL + P1, 1000000000000LL + P1, 1002000000000LL + P1);
    apply_ok(m, BUS_K_NODE_FIT,
             "{\"window\":1,\"node\":2,\"ref\":1,\"anchor_ns\":%lld,\"offset_ns\":3000000,"
             "\"drift_ppb\":0,\"uncertainty_ns\":120,\"from_ns\":%lld,\"to_ns\":%lld,"
             "\"aligned\":%s}",
             a2, a2 - 1000000000LL, a2 + 1000000000LL, node2_aligned ? "true" : "false");
    apply_ok(m, BUS_K_NAMES,
             "{\"node\":1,\"pid\":10,\"names\":[[1,\"allreduce\"],[2,"
             "\"hipLaunchKernel\"]]}");
    apply_ok(m, BUS_K_NAMES,
             "{\"node\":2,\"pid\":20,\"names\":[[1,\"allreduce\"],[2,"
             "\"hipLaunchKernel\"],[3,\"na\\\"me\\u0001\"]]}");
    /* The same collective at true time X: each node stamps it on its trace clock. */
    for (int n = 1; n <= 2; n++) {
        uint32_t pid = n == 1 ? 10 : 20;
        /* Node 2's trace time of the same instant: its probe clock is 3 ms behind. */
        int64_t start = 1001500000000LL + (n == 1 ? 0 : (P1 - P2) - 3000000);
        gpu_event_t ev[3];
        ev[0] = ev_make(GPU_EV_API, (uint16_t)n, pid, 2, 2, start - 20000, start - 12000);
        ev[0].corr_id = 5;
        ev[1] = ev_make(GPU_EV_KERNEL, (uint16_t)n, pid, 2, 1, start, start + 10000000);
        ev[1].corr_id = 5;
        ev[1].flags = GPU_EVF_COLLECTIVE;
        ev[1].grid[0] = 1024;
        ev[1].block[0] = 256;
        ev[2] = ev_make(GPU_EV_MEMCPY, (uint16_t)n, pid, 3, n == 2 ? 3 : 0, start + 10000000,
                        start + 11000000);
        ev[2].bytes = 4096;
        ev[2].copy_kind = GPU_COPY_D2H;
        apply_events(m, (uint16_t)n, pid, ev, 3, T0);
    }
}

static void test_aligned_vs_raw(void **state)
{
    (void)state;
    tui_model_t *m = tui_model_new(NULL);
    feed_two_nodes(m, true);
    int64_t g1, g2, r1, r2;
    unsigned f;
    int64_t s1 = 1001500000000LL, s2 = 1001500000000LL + (P1 - P2) - 3000000;
    assert_true(tui_model_aligned(m, 1));
    assert_true(tui_model_aligned(m, 2));
    assert_int_equal(tui_model_to_axis(m, 1, s1, TUI_CLOCK_ALIGNED, &g1, &f), BASE_OK);
    assert_int_equal(f & TUI_T_RAW, 0);
    assert_int_equal(tui_model_to_axis(m, 2, s2, TUI_CLOCK_ALIGNED, &g2, &f), BASE_OK);
    assert_int_equal(f & TUI_T_RAW, 0);
    /* Aligned, the two starts are the same instant. */
    assert_true(llabs(g1 - g2) <= 1);
    assert_int_equal(g1, s1 + P1);
    /* Raw, node 2 is off by its clock error: −3 ms. */
    assert_int_equal(tui_model_to_axis(m, 1, s1, TUI_CLOCK_RAW, &r1, &f), BASE_OK);
    assert_int_equal(tui_model_to_axis(m, 2, s2, TUI_CLOCK_RAW, &r2, &f), BASE_OK);
    assert_int_equal(r1, g1);
    assert_true(llabs((r2 - r1) + 3000000) <= 1);
    /* Offsets in the table: node 2 is 3 ms behind the reference. */
    assert_true(fabs(tui_model_offset_at(m, 2, g1) - 3000000) < 2);
    assert_true(fabs(tui_model_offset_at(m, 1, g1)) < 1e-9);
    struct tui_summary s;
    tui_model_summary(m, &s);
    assert_true(llabs(s.latest_global - (g1 + 11000000)) <= 1);
    assert_true(fabs(s.worst_unc_ns - 120) < 1e-9);
    assert_int_equal(s.worst_unc_node, 2);
    tui_model_destroy(&m);

    /* Unaligned: the aligned axis falls back to the raw clock, flagged. */
    m = tui_model_new(NULL);
    feed_two_nodes(m, false);
    assert_false(tui_model_aligned(m, 2));
    assert_int_equal(tui_model_to_axis(m, 2, s2, TUI_CLOCK_ALIGNED, &g2, &f), BASE_OK);
    assert_true(f & TUI_T_RAW);
    assert_int_equal(tui_model_to_axis(m, 2, s2, TUI_CLOCK_RAW, &r2, &f), BASE_OK);
    assert_int_equal(g2, r2);
    assert_true(isnan(tui_model_offset_at(m, 2, g1)));
    /* Unknown nodes cannot be placed at all. */
    assert_int_equal(tui_model_to_axis(m, 9, s2, TUI_CLOCK_RAW, &r2, &f), BASE_ERR);
    tui_model_destroy(&m);

    /* A node without snapshot pairs: placed by arrival time, flagged. */
    m = tui_model_new(NULL);
    gpu_event_t e = ev_make(GPU_EV_KERNEL, 4, 1, 1, 0, 5000, 6000);
    apply_events(m, 4, 1, &e, 1, T0);
    assert_int_equal(tui_model_to_axis(m, 4, 6000, TUI_CLOCK_RAW, &r2, &f), BASE_OK);
    assert_true(f & TUI_T_NOSNAP);
    assert_int_equal(r2, T0);
    tui_model_destroy(&m);
}

/* ---- sorting --------------------------------------------------------------------- */

static void test_sort(void **state)
{
    (void)state;
    tui_model_t *m = tui_model_new(NULL);
    const double offs[] = {500, -200, 0, 900};
    for (int i = 0; i < 4; i++)
        apply_ok(m, BUS_K_NODE_FIT,
                 "{\"window\":1,\"node\":%d,\"ref\":0,\"anchor_ns\":%lld,\"offset_ns\":%g,"
                 "\"drift_ppb\":%d,\"uncertainty_ns\":%d,\"from_ns\":%lld,\"to_ns\":%lld,"
                 "\"aligned\":true}",
                 i + 1, T0, offs[i], 10 * (4 - i), 100 + i, T0 - 1000, T0 + 1000);
    apply_ok(m, BUS_K_HELLO,
             "{\"node\":9,\"host\":\"aaa\",\"pid\":1,\"version\":\"x\",\"probe_addr\":\"a:1\","
             "\"clocks\":[],\"gpus\":[]}");
    size_t order[8];
    tui_sort_nodes(m, TUI_SORT_OFFSET, false, order);
    /* ids 2 (-200), 3 (0), 1 (500), 4 (900), then 9 without a fit. */
    const uint16_t want[] = {2, 3, 1, 4, 9};
    for (int i = 0; i < 5; i++)
        assert_int_equal(tui_model_node(m, order[i])->id, want[i]);
    tui_sort_nodes(m, TUI_SORT_OFFSET, true, order);
    const uint16_t want_desc[] = {4, 1, 3, 2, 9}; /* unknown values stay last */
    for (int i = 0; i < 5; i++)
        assert_int_equal(tui_model_node(m, order[i])->id, want_desc[i]);
    tui_sort_nodes(m, TUI_SORT_DRIFT, false, order);
    assert_int_equal(tui_model_node(m, order[0])->id, 4);
    tui_sort_nodes(m, TUI_SORT_HOST, false, order);
    assert_int_equal(tui_model_node(m, order[0])->id, 1); /* "" < "aaa" */
    assert_int_equal(tui_model_node(m, order[4])->id, 9);
    tui_sort_nodes(m, TUI_SORT_ID, true, order);
    assert_int_equal(tui_model_node(m, order[0])->id, 9);
    for (int k = 0; k < TUI_SORT_NKEYS; k++)
        assert_string_not_equal(tui_sort_name((enum tui_sort)k), "?");
    tui_model_destroy(&m);
}

/* ---- Chrome trace ------------------------------------------------------------------ */

static json_object *find_event(json_object *evs, const char *ph, int pid, const char *name)
{
    for (size_t i = 0; i < json_object_array_length(evs); i++) {
        json_object *e = json_object_array_get_idx(evs, i), *v;
        if (json_object_object_get_ex(e, "ph", &v) && strcmp(json_object_get_string(v), ph) == 0 &&
            json_object_object_get_ex(e, "pid", &v) && json_object_get_int(v) == pid &&
            (name == NULL || (json_object_object_get_ex(e, "name", &v) &&
                              strcmp(json_object_get_string(v), name) == 0)))
            return e;
    }
    return NULL;
}

static double num(json_object *o, const char *key)
{
    json_object *v;
    assert_true(json_object_object_get_ex(o, key, &v));
    return json_object_get_double(v);
}

static void test_chrome(void **state)
{
    (void)state;
    tui_model_t *m = tui_model_new(NULL);
    feed_two_nodes(m, true);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct tui_chrome_stats st;
    struct tui_chrome_opts o = {.flows = true, .source = "test"};
    char err[BASE_ERRLEN];
    assert_int_equal(tui_chrome_write(m, f, &o, &st, err), BASE_OK);
    fclose(f);
    json_object *root = NULL;
    assert_int_equal(base_json_parse(buf, len, &root, err), BASE_DEC_OK);
    json_object *evs, *meta;
    assert_true(json_object_object_get_ex(root, "traceEvents", &evs));
    assert_true(json_object_object_get_ex(root, "metadata", &meta));
    assert_int_equal(st.events, 6);
    assert_int_equal(st.flows, 2);
    assert_int_equal(st.raw_events, 0);
    /* The two collectives start at the same ts, on the global time base. */
    json_object *c1 = find_event(evs, "X", 1, "allreduce");
    json_object *c2 = find_event(evs, "X", 2, "allreduce");
    assert_non_null(c1);
    assert_non_null(c2);
    assert_true(fabs(num(c1, "ts") - num(c2, "ts")) <= 0.002);
    assert_true(fabs(num(c1, "dur") - 10000.0) < 0.002);
    int64_t origin = json_object_get_int64(json_object_object_get(meta, "origin_ns"));
    assert_int_equal(origin, st.origin_ns);
    assert_int_equal(origin % 1000000, 0);
    int64_t g1 = 1001500000000LL + P1;
    assert_true(fabs(num(c1, "ts") - (double)(g1 - origin) / 1e3) < 0.002);
    json_object *args, *v;
    assert_true(json_object_object_get_ex(c1, "args", &args));
    assert_true(json_object_object_get_ex(args, "collective", &v) && json_object_get_boolean(v));
    assert_true(json_object_object_get_ex(args, "grid", &v) &&
                json_object_get_int(json_object_array_get_idx(v, 0)) == 1024);
    assert_int_equal((int64_t)num(args, "trace_ns"), 1001500000000LL);
    /* Names from outside are escaped: the odd one reads back exactly. */
    assert_non_null(find_event(evs, "X", 2, "na\"me\x01"));
    /* Processes and threads are named. */
    json_object *pn = find_event(evs, "M", 2, "process_name");
    assert_non_null(pn);
    assert_true(json_object_object_get_ex(pn, "args", &args));
    assert_non_null(strstr(json_object_get_string(json_object_object_get(args, "name")), "n2"));
    assert_non_null(find_event(evs, "M", 2, "thread_name"));
    /* A flow from each API call to its kernel: same id, s then f. */
    json_object *fs = find_event(evs, "s", 2, NULL), *ff = find_event(evs, "f", 2, NULL);
    assert_non_null(fs);
    assert_non_null(ff);
    assert_int_equal((int)num(fs, "id"), (int)num(ff, "id"));
    assert_true(num(fs, "ts") < num(ff, "ts"));
    assert_true(fabs(num(ff, "ts") - num(c2, "ts")) < 0.002);
    /* The alignment used, per node. */
    json_object *al;
    assert_true(json_object_object_get_ex(meta, "alignment", &al));
    assert_int_equal(json_object_array_length(al), 2);
    json_object *a2 = json_object_array_get_idx(al, 1);
    assert_int_equal((int)num(a2, "node"), 2);
    assert_true(fabs(num(a2, "offset_ns") - 3000000) < 1e-6);
    assert_true(fabs(num(a2, "uncertainty_ns") - 120) < 1e-6);
    assert_true(json_object_get_boolean(json_object_object_get(a2, "aligned")));
    json_object_put(root);
    free(buf);

    /* Unaligned node 2: still written, on its raw clock, and said so. */
    tui_model_t *m2 = tui_model_new(NULL);
    feed_two_nodes(m2, false);
    f = open_memstream(&buf, &len);
    assert_int_equal(tui_chrome_write(m2, f, &o, &st, err), BASE_OK);
    fclose(f);
    assert_int_equal(base_json_parse(buf, len, &root, err), BASE_DEC_OK);
    assert_int_equal(st.raw_events, 3);
    json_object_object_get_ex(root, "traceEvents", &evs);
    pn = find_event(evs, "M", 2, "process_name");
    json_object_object_get_ex(pn, "args", &args);
    assert_non_null(
        strstr(json_object_get_string(json_object_object_get(args, "name")), "UNALIGNED"));
    json_object_put(root);
    free(buf);
    tui_model_destroy(&m2);

    /* Files: a snapshot path, a written file, and an unwritable one reported. */
    char dir[] = "/tmp/test_tui.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[512];
    assert_int_equal(tui_snapshot_path(path, sizeof path, dir, 1790000000, "json", err), BASE_OK);
    assert_non_null(strstr(path, "/dptop-"));
    assert_int_equal(strlen(strrchr(path, '/') + 1), strlen("dptop-YYYYmmdd-HHMMSS.json"));
    assert_int_equal(tui_chrome_write_file(m, path, &o, &st, err), BASE_OK);
    assert_int_equal(access(path, R_OK), 0);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    assert_int_not_equal(access(tmp, F_OK), 0);
    unlink(path);
    assert_int_equal(tui_chrome_write_file(m, "/nonexistent-dir/x.json", &o, &st, err), BASE_ERR);
    assert_non_null(strstr(err, "nonexistent"));
    if (access("/dev/full", W_OK) == 0) {
        FILE *full = fopen("/dev/full", "w");
        assert_int_equal(tui_chrome_write(m, full, &o, &st, err), BASE_ERR);
        fclose(full);
    }
    rmdir(dir);
    tui_model_destroy(&m);
}

static void test_json_escape(void **state)
{
    (void)state;
    const char *in[] = {"plain",
                        "q\"b\\s",
                        "ctl\n\t\x01",
                        "utf8 µs ⚠",
                        "bad \xff\xfe end",
                        "overlong \xc0\xaf",
                        "surrogate \xed\xa0\x80",
                        "cut \xe2\x82"};
    for (size_t i = 0; i < BASE_ARRAY_LEN(in); i++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        tui_json_str(f, in[i]);
        fclose(f);
        json_object *o = NULL;
        char err[BASE_ERRLEN];
        assert_int_equal(base_json_parse(buf, len, &o, err), BASE_DEC_OK);
        assert_true(json_object_is_type(o, json_type_string));
        if (i < 4)
            assert_string_equal(json_object_get_string(o), in[i]);
        else
            assert_non_null(strstr(json_object_get_string(o), "\xef\xbf\xbd")); /* U+FFFD */
        json_object_put(o);
        free(buf);
    }
}

/* ---- the console on a dummy terminal --------------------------------------------- */

static void test_console_resize_and_keys(void **state)
{
    (void)state;
    tui_model_t *m = tui_model_new(NULL);
    feed_two_nodes(m, true);
    apply_ok(m, BUS_K_NODES,
             "{\"epoch\":1,\"ref\":1,\"nodes\":[{\"node\":1,\"host\":\"a\",\"state\":\"up\","
             "\"last_seen_ns\":%lld},{\"node\":2,\"host\":\"b\",\"state\":\"up\","
             "\"last_seen_ns\":%lld}]}",
             T0, T0);
    FILE *in = fopen("/dev/null", "r"), *out = fopen("/dev/null", "w");
    assert_non_null(in);
    assert_non_null(out);
    char dir[] = "/tmp/test_tui_app.XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct tui_app_opts o = {.hub = "tcp://test:1",
                             .outdir = dir,
                             .fps = 10,
                             .color = true,
                             .in = in,
                             .out = out,
                             .term = "xterm-256color",
                             .rows = 40,
                             .cols = 120};
    char err[BASE_ERRLEN];
    tui_app_t *app = tui_app_new(m, &o, err);
    assert_non_null(app);
    int64_t now = base_monotonic_ns();
    tui_app_frame(app, now);
    /* Every size from big to nothing and back never crashes. */
    const int sizes[][2] = {{40, 120}, {24, 80}, {10, 40}, {8, 30},   {7, 29},  {3, 10},
                            {1, 1},    {2, 200}, {200, 2}, {60, 250}, {12, 31}, {50, 160}};
    for (size_t i = 0; i < BASE_ARRAY_LEN(sizes); i++) {
        tui_app_resize(app, sizes[i][0], sizes[i][1]);
        tui_app_frame(app, now += 100000000);
    }
    /* Every key, in every focus. */
    const int keys[] = {'?',      'x',       ' ',       ' ',        '+',       '+',       '-',
                        KEY_LEFT, KEY_RIGHT, KEY_RIGHT, KEY_RIGHT,  KEY_RIGHT, KEY_RIGHT, 'a',
                        'a',      'e',       'e',       '\t',       KEY_DOWN,  KEY_UP,    '>',
                        '>',      '<',       'I',       '\t',       KEY_DOWN,  KEY_NPAGE, '\t',
                        KEY_DOWN, KEY_END,   '/',       'a',        'l',       'l',       '\r',
                        27,       '/',       'x',       27,         '[',       ']',       12,
                        KEY_BTAB, KEY_HOME,  'r',       KEY_RESIZE, 's'};
    for (size_t i = 0; i < BASE_ARRAY_LEN(keys); i++) {
        tui_app_key(app, keys[i]);
        tui_app_frame(app, now += 50000000);
    }
    for (int s = 0; s < 40; s++) { /* zoom to the limits */
        tui_app_key(app, '+');
        tui_app_frame(app, now += 1000000);
    }
    for (int s = 0; s < 80; s++)
        tui_app_key(app, '-');
    tui_app_frame(app, now += 1000000);
    tui_app_destroy(&app);
    assert_null(app);
    /* NO_COLOR: the monochrome palette, same drawing. */
    setenv("NO_COLOR", "1", 1);
    o.rows = 30;
    o.cols = 100;
    app = tui_app_new(m, &o, err);
    assert_non_null(app);
    for (int i = 0; i < 5; i++) {
        tui_app_key(app, "a?xe "[i]);
        tui_app_redraw(app);
        tui_app_frame(app, now += 100000000);
    }
    tui_app_destroy(&app);
    unsetenv("NO_COLOR");
    /* The `s` above wrote one snapshot into the output directory. */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls %s/dptop-*.json >/dev/null 2>&1", dir);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    fclose(in);
    fclose(out);
    tui_model_destroy(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fmt),
        cmocka_unit_test(test_axis_columns),
        cmocka_unit_test(test_ticks),
        cmocka_unit_test(test_pack),
        cmocka_unit_test(test_store_budget),
        cmocka_unit_test(test_store_order),
        cmocka_unit_test(test_model_nodes),
        cmocka_unit_test(test_model_fits_windows),
        cmocka_unit_test(test_model_names_and_rejects),
        cmocka_unit_test(test_aligned_vs_raw),
        cmocka_unit_test(test_sort),
        cmocka_unit_test(test_chrome),
        cmocka_unit_test(test_json_escape),
        cmocka_unit_test(test_console_resize_and_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
