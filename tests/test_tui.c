/*
 * Unit tests for tui/: numbers in human units, the time axis and its ticks,
 * lane packing, the event store (budget, eviction counts, order), the model
 * fed by bus messages (node table, fits, windows, names, rejections),
 * aligned versus raw placement of an event, sorting of the node table, the
 * Chrome trace writer (parsed back with json-c), the console itself on a
 * terminal that goes to /dev/null (resizing down to nothing, every key),
 * the protobuf writer (against hand-computed bytes), the scope pair
 * collector, the XSpace export (read back by a tiny decoder below) and the
 * window statistics export.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tui/tui.h"
#include "tui/xplane_int.h"

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
    tui_fmt_dur(b, sizeof b, -0.3); /* a loop residual of nothing, not "-0ns" */
    assert_string_equal(b, "0ns");
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
    assert_int_equal(n->fits_lost, 0);
    /* A master's status: the edge fits it could not use, summed for the header. */
    apply_ok(m, BUS_K_STATUS,
             "{\"node\":5,\"t_ns\":%lld,\"probes_sent\":300,\"probes_recv\":290,"
             "\"probes_garbage\":0,\"probes_forged\":0,\"events_per_s\":10,\"ev_drops\":6,"
             "\"dec_errors\":{},\"cpu_pct\":1.5,\"edge_fits_late\":2,\"edge_fits_ahead\":30,"
             "\"edge_fits_bad\":1,\"edge_fits_dropped\":0,\"edge_fits_replaced\":7}",
             T0 + 4000000000LL);
    assert_int_equal(tui_model_find(m, 5)->fits_lost, 33);
    tui_model_summary(m, &s);
    assert_int_equal(s.fits_lost, 33);
    /* Devices: VRAM and power summed over the GPUs that report them, the hottest
     * temperature; inputs the agent refused; stamps that fell back to user space. */
    n = tui_model_find(m, 5);
    assert_true(isnan(n->vram_used_b) && isnan(n->power_w) && isnan(n->temp_c));
    assert_int_equal(n->user_ts, -1);
    apply_ok(m, BUS_K_STATUS,
             "{\"node\":5,\"t_ns\":%lld,\"probes_sent\":400,\"probes_recv\":390,"
             "\"probes_garbage\":3,\"probes_forged\":0,\"events_per_s\":10,\"ev_drops\":6,"
             "\"dec_errors\":{\"malformed\":3,\"bad_checksum\":2},\"cpu_pct\":1.5,"
             "\"kernel_timestamps\":true,\"tx_user_ts\":0,\"rx_user_ts\":0,"
             "\"gpus\":[{\"index\":0,\"busy_pct\":10,\"vram_used_bytes\":1073741824,"
             "\"vram_total_bytes\":68719476736,\"power_w\":300.5,\"temp_c\":61},"
             "{\"index\":1,\"busy_pct\":20,\"vram_used_bytes\":3221225472,"
             "\"vram_total_bytes\":68719476736,\"temp_c\":70}]}",
             T0 + 6000000000LL);
    n = tui_model_find(m, 5);
    assert_true(fabs(n->vram_used_b - 4294967296.0) < 1 &&
                fabs(n->vram_total_b - 137438953472.0) < 1);
    assert_true(fabs(n->power_w - 300.5) < 1e-9 && fabs(n->temp_c - 70) < 1e-9);
    assert_int_equal(n->rejects, 5);
    assert_int_equal(n->user_ts, 0);
    tui_model_summary(m, &s);
    assert_int_equal(s.node_rejects, 5);
    apply_ok(m, BUS_K_STATUS,
             "{\"node\":5,\"t_ns\":%lld,\"probes_sent\":500,\"probes_recv\":490,"
             "\"probes_garbage\":3,\"probes_forged\":0,\"events_per_s\":10,\"ev_drops\":6,"
             "\"dec_errors\":{},\"cpu_pct\":1.5,\"kernel_timestamps\":true,\"tx_user_ts\":0,"
             "\"rx_user_ts\":4}",
             T0 + 8000000000LL);
    n = tui_model_find(m, 5);
    assert_int_equal(n->user_ts, 1); /* four receive stamps from user space this period */
    assert_true(isnan(n->vram_used_b) && isnan(n->gpu_busy_pct));
    apply_ok(m, BUS_K_STATUS,
             "{\"node\":5,\"t_ns\":%lld,\"probes_sent\":600,\"probes_recv\":590,"
             "\"probes_garbage\":3,\"probes_forged\":0,\"events_per_s\":10,\"ev_drops\":6,"
             "\"dec_errors\":{},\"cpu_pct\":1.5,\"kernel_timestamps\":true,\"tx_user_ts\":0,"
             "\"rx_user_ts\":4}",
             T0 + 10000000000LL);
    assert_int_equal(tui_model_find(m, 5)->user_ts, 0); /* none since */
    /* bye marks a node down. */
    apply_ok(m, BUS_K_BYE, "{\"node\":0}");
    assert_int_equal(tui_model_find(m, 0)->state, TUI_NODE_DOWN);
    /* A log line reaches the status bar, without control characters. */
    apply_ok(m, BUS_K_LOG, "{\"node\":5,\"level\":\"warn\",\"msg\":\"clock\\nstep\"}");
    assert_string_equal(tui_model_last_log(m, NULL), "n5 warn: clock step");
    /* The log keeps every line and alert, newest first, up to its size. */
    apply_ok(m, BUS_K_LOG, "{\"level\":\"debug\",\"msg\":\"chatter\"}");
    apply_ok(m, BUS_K_LOG,
             "{\"node\":2,\"level\":\"error\",\"component\":\"master\",\"msg\":\"x\"}");
    struct tui_log_stats ls;
    tui_model_log_stats(m, &ls);
    assert_int_equal(ls.lines, 2);
    assert_int_equal(ls.warnings, 1);
    assert_int_equal(ls.errors, 1);
    const struct tui_log_line *l0 = tui_model_log_line(m, 0), *l1 = tui_model_log_line(m, 1);
    assert_non_null(l0);
    assert_int_equal(l0->node, 2);
    assert_int_equal(l0->level, 'E');
    assert_string_equal(l0->text, "master: x");
    assert_int_equal(l1->level, 'W');
    assert_string_equal(l1->text, "clock step");
    assert_null(tui_model_log_line(m, 2));
    for (int i = 0; i < TUI_LOG_LINES + 10; i++)
        apply_ok(m, BUS_K_LOG, "{\"node\":1,\"level\":\"info\",\"msg\":\"line %d\"}", i);
    tui_model_log_stats(m, &ls);
    assert_int_equal(ls.lines, TUI_LOG_LINES);
    assert_int_equal(ls.total, TUI_LOG_LINES + 12);
    assert_int_equal(ls.dropped, 12);
    assert_string_equal(tui_model_log_line(m, 0)->text, "line 265");
    assert_string_equal(tui_model_log_line(m, TUI_LOG_LINES - 1)->text, "line 10");
    assert_null(tui_model_log_line(m, TUI_LOG_LINES));
    /* The master's relay table: how many relays, how many report, what
     * they lost on the way up. */
    struct tui_summary rsum;
    tui_model_summary(m, &rsum);
    assert_int_equal(rsum.relays, 0);
    apply_ok(m, BUS_K_RELAYS,
             "{\"relays\":[{\"name\":\"tcp://a:7420\",\"upstream\":\"tcp://m:7410\","
             "\"state\":\"up\",\"silent_s\":0.2,\"up_msgs\":10,\"up_dropped\":3,"
             "\"down_msgs\":5},{\"name\":\"tcp://b:7420\",\"upstream\":\"tcp://a:7420\","
             "\"state\":\"down\",\"silent_s\":9,\"up_msgs\":1,\"up_dropped\":4,"
             "\"down_msgs\":1}]}");
    tui_model_summary(m, &rsum);
    assert_int_equal(rsum.relays, 2);
    assert_int_equal(rsum.relays_up, 1);
    assert_int_equal(rsum.relays_lost, 7);
    /* The console's own warnings go in beside the nodes' (node -1), and do
     * not become the last bus line. */
    tui_model_log_add(m, 42, -1, 'W', "dptop", "the master\trestarted");
    assert_int_equal(tui_model_log_line(m, 0)->node, -1);
    assert_int_equal(tui_model_log_line(m, 0)->level, 'W');
    assert_int_equal(tui_model_log_line(m, 0)->arrival_ns, 42);
    assert_string_equal(tui_model_log_line(m, 0)->text, "dptop: the master restarted");
    assert_string_equal(tui_model_last_log(m, NULL), "n1 info: line 265");
    tui_model_log_stats(m, &ls);
    assert_int_equal(ls.warnings, 2);
    assert_int_equal(ls.dropped, 13);
    tui_model_destroy(&m);
    assert_null(m);
}

/*
 * The solve's loops: path asymmetry shows only in loops, so a probe graph
 * without any (two nodes, a tree) leaves it out of every ±, and the console
 * says so.  Late refinements of older windows do not override the newest.
 */
static void test_model_solve_loops(void **state)
{
    (void)state;
    tui_model_t *m = tui_model_new(NULL);
    struct tui_summary s;
    tui_model_summary(m, &s);
    assert_true(s.loops == -1 && !s.asym_unseen);
    /* A master that does not say: unknown, no warning. */
    apply_ok(m, BUS_K_SOLVE, "{\"window\":3,\"ref\":0,\"residuals\":[],\"unaligned\":[]}");
    tui_model_summary(m, &s);
    assert_true(s.loops == -1 && !s.asym_unseen);
    apply_ok(m, BUS_K_SOLVE,
             "{\"window\":4,\"ref\":0,\"residuals\":[],\"unaligned\":[],\"dof\":3,"
             "\"edges_used\":6}");
    tui_model_summary(m, &s);
    assert_true(s.loops == 3 && !s.asym_unseen);
    apply_ok(m, BUS_K_SOLVE,
             "{\"window\":5,\"ref\":0,\"residuals\":[],\"unaligned\":[],\"dof\":0,"
             "\"edges_used\":1}");
    tui_model_summary(m, &s);
    assert_true(s.loops == 0 && s.asym_unseen);
    /* The refinement of window 4 arrives after window 5. */
    apply_ok(m, BUS_K_SOLVE,
             "{\"window\":4,\"ref\":0,\"residuals\":[],\"unaligned\":[],\"dof\":3,"
             "\"edges_used\":6}");
    tui_model_summary(m, &s);
    assert_true(s.loops == 0 && s.asym_unseen);
    /* No edges at all (only the reference): nothing to warn about. */
    apply_ok(m, BUS_K_SOLVE,
             "{\"window\":6,\"ref\":0,\"residuals\":[],\"unaligned\":[],\"dof\":0,"
             "\"edges_used\":0}");
    tui_model_summary(m, &s);
    assert_true(s.loops == 0 && !s.asym_unseen);
    /* The host stamp asymmetry the master's ± assume, when it says. */
    assert_true(isnan(s.stamp_asym_ns) && isnan(s.delay_ns));
    apply_ok(m, BUS_K_SOLVE,
             "{\"window\":6,\"ref\":0,\"residuals\":[],\"unaligned\":[],\"dof\":0,"
             "\"edges_used\":0,\"stamp_asym_ns\":3,\"delay_ns\":212.5}");
    tui_model_summary(m, &s);
    assert_true(s.stamp_asym_ns == 3 && s.delay_ns == 212.5);
    /* Malformed counts and assumptions: rejected, counted, nothing changed. */
    uint64_t errs = base_decstats_errors(tui_model_decstats(m));
    static const struct {
        const char *field;
        enum base_dec rc;
    } bad[] = {{"\"stamp_asym_ns\":-1", BASE_DEC_BAD_VALUE},
               {"\"stamp_asym_ns\":\"wide\"", BASE_DEC_BAD_TYPE},
               /* With a good count beside: a message partly applied would show in the loops. */
               {"\"dof\":4,\"edges_used\":6,\"delay_ns\":-2", BASE_DEC_BAD_VALUE},
               {"\"dof\":4,\"edges_used\":6,\"delay_ns\":1e13", BASE_DEC_BAD_VALUE},
               {"\"dof\":4,\"edges_used\":6,\"delay_ns\":[1]", BASE_DEC_BAD_TYPE},
               {"\"dof\":-5", BASE_DEC_BAD_VALUE},
               {"\"dof\":\"many\"", BASE_DEC_BAD_TYPE}};
    for (size_t i = 0; i < BASE_ARRAY_LEN(bad); i++) {
        char json[256];
        snprintf(json, sizeof json, "{\"window\":7,\"ref\":0,\"residuals\":[],\"unaligned\":[],%s}",
                 bad[i].field);
        assert_int_equal(apply_json(m, BUS_K_SOLVE, json), bad[i].rc);
        tui_model_summary(m, &s);
        assert_true(s.stamp_asym_ns == 3 && s.delay_ns == 212.5 && s.loops == 0);
    }
    /* A good count with a bad residual after a good one: nothing applied. */
    size_t edges = tui_model_nedges(m);
    assert_int_equal(apply_json(m, BUS_K_SOLVE,
                                "{\"window\":8,\"ref\":5,\"residuals\":[{\"src\":1,\"dst\":2,"
                                "\"residual_ns\":4},{\"src\":1,\"residual_ns\":4}],"
                                "\"unaligned\":[],\"dof\":9,\"edges_used\":12}"),
                     BASE_DEC_BAD_TYPE);
    assert_int_equal(base_decstats_errors(tui_model_decstats(m)), errs + BASE_ARRAY_LEN(bad) + 1);
    tui_model_summary(m, &s);
    assert_true(s.loops == 0 && !s.asym_unseen && s.ref == 0);
    assert_int_equal(tui_model_nedges(m), edges);
    tui_model_destroy(&m);
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
             "{\"window\":7,\"ref\":1,\"residuals\":[{\"src\":3,\"dst\":1,\"residual_ns\":3.5},"
             "{\"src\":3,\"dst\":2,\"residual_ns\":-1800,\"suspect\":true}],\"unaligned\":[]}");
    assert_int_equal(tui_model_nedges(m), 2);
    const struct tui_edge *e = tui_model_edge(m, 0);
    assert_int_equal(e->src, 3);
    assert_int_equal(e->dst, 1);
    assert_int_equal(e->nwin, 1);
    assert_true(e->win[0].have_fit && e->win[0].have_stats);
    assert_int_equal(e->win[0].n_fwd, 180);
    assert_true(fabs(e->win[0].offset_ns + 1234.25) < 1e-9);
    assert_true(fabs(e->win[0].margin_ns - 80) < 1e-9);
    assert_true(fabs(e->win[0].residual_ns - 3.5) < 1e-9 && !e->win[0].suspect);
    assert_string_equal(e->win[0].estimator, "svm");
    assert_false(e->win[0].step);
    /* A fit that found a clock step inside its window. */
    apply_ok(m, BUS_K_EDGE_FIT,
             "{\"window\":8,\"src\":3,\"dst\":1,\"estimator\":\"svm\",\"anchor_ns\":%lld,"
             "\"offset_ns\":-1234.25,\"drift_ppb\":12.5,\"uncertainty_ns\":40.5,\"n_fwd\":180,"
             "\"n_rev\":175,\"from_ns\":%lld,\"to_ns\":%lld,\"step\":true,\"step_at_ns\":%lld,"
             "\"step_ns\":-1000000}",
             T0, T0, T0 + 2000000000LL, T0 + 1000000000LL);
    e = tui_model_edge(m, 0);
    assert_int_equal(e->nwin, 2);
    assert_true(e->win[0].window == 8 && e->win[0].step && e->win[0].step_ns == -1e6);
    assert_true(e->win[1].window == 7 && !e->win[1].step);
    /* The solve left 3→2 out of the offsets: its path detours one way. */
    const struct tui_edge *e32 = tui_model_edge(m, 1);
    assert_true(e32->dst == 2 && e32->win[0].suspect && e32->win[0].residual_ns == -1800);
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
    /* GPU busy, probes/s and temperature sort by their values (they once sorted by id). */
    static const struct {
        uint16_t node;
        int busy, temp;
    } st[] = {{1, 70, 50}, {2, 10, 80}, {3, 40, 65}};
    for (int i = 0; i < 3; i++)
        apply_ok(m, BUS_K_STATUS,
                 "{\"node\":%d,\"t_ns\":%lld,\"probes_sent\":0,\"probes_recv\":0,"
                 "\"probes_garbage\":0,\"probes_forged\":0,\"events_per_s\":0,\"ev_drops\":0,"
                 "\"dec_errors\":{},\"cpu_pct\":1,\"gpus\":[{\"index\":0,\"busy_pct\":%d,"
                 "\"temp_c\":%d}]}",
                 st[i].node, T0, st[i].busy, st[i].temp);
    tui_sort_nodes(m, TUI_SORT_GPU, false, order);
    const uint16_t by_busy[] = {2, 3, 1};
    for (int i = 0; i < 3; i++)
        assert_int_equal(tui_model_node(m, order[i])->id, by_busy[i]);
    tui_sort_nodes(m, TUI_SORT_TEMP, true, order);
    const uint16_t by_temp[] = {2, 3, 1};
    for (int i = 0; i < 3; i++)
        assert_int_equal(tui_model_node(m, order[i])->id, by_temp[i]);
    /* Probes/s from two statuses a second apart. */
    static const struct {
        uint16_t node;
        int sent;
    } pr[] = {{1, 100}, {3, 300}};
    for (int i = 0; i < 2; i++)
        apply_ok(m, BUS_K_STATUS,
                 "{\"node\":%d,\"t_ns\":%lld,\"probes_sent\":%d,\"probes_recv\":0,"
                 "\"probes_garbage\":0,\"probes_forged\":0,\"events_per_s\":0,\"ev_drops\":0,"
                 "\"dec_errors\":{},\"cpu_pct\":1,\"gpus\":[{\"index\":0,\"busy_pct\":%d}]}",
                 pr[i].node, T0 + 1000000000LL, pr[i].sent, pr[i].node == 1 ? 70 : 40);
    tui_sort_nodes(m, TUI_SORT_PROBES, true, order);
    assert_int_equal(tui_model_node(m, order[0])->id, 3);
    assert_int_equal(tui_model_node(m, order[1])->id, 1);
    /* A node that is down sorts by none of its last status: after every known value. */
    apply_ok(m, BUS_K_BYE, "{\"node\":3}");
    tui_sort_nodes(m, TUI_SORT_GPU, false, order);
    assert_int_equal(tui_model_node(m, order[0])->id, 2); /* 10 % */
    assert_int_equal(tui_model_node(m, order[1])->id, 1); /* 70 % */
    assert_true(isnan(tui_model_node(m, order[2])->gpu_busy_pct) ||
                tui_model_node(m, order[2])->state == TUI_NODE_DOWN);
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
    /* A second file in the same second gets a name of its own. */
    char second[512];
    assert_int_equal(tui_snapshot_path(second, sizeof second, dir, 1790000000, "json", err),
                     BASE_OK);
    assert_string_not_equal(second, path);
    assert_non_null(strstr(second, "-2.json"));
    assert_int_equal(tui_snapshot_path(second, sizeof second, dir, 1790000000, "dprec", err),
                     BASE_OK);
    assert_null(strstr(second, "-2."));
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

static struct tui_app_opts console_opts(FILE *in, FILE *out, const char *dir, bool color)
{
    return (struct tui_app_opts){.hub = "tcp://test:1",
                                 .outdir = dir,
                                 .fps = 10,
                                 .color = color,
                                 .in = in,
                                 .out = out,
                                 .term = "xterm-256color",
                                 .rows = 40,
                                 .cols = 120};
}

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
    struct tui_app_opts o = console_opts(in, out, dir, true);
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

/*
 * What the Windows title says of hosts slow to stamp: while some have no
 * margin level yet, that they are warming up; then the largest bound.
 * Each state on a fresh screen, so the whole title is written out.
 */
static bool console_shows(tui_model_t *m, const char *text)
{
    FILE *in = fopen("/dev/null", "r"), *out = tmpfile();
    assert_non_null(in);
    assert_non_null(out);
    struct tui_app_opts o = console_opts(in, out, "/tmp", false);
    char err[BASE_ERRLEN];
    tui_app_t *app = tui_app_new(m, &o, err);
    assert_non_null(app);
    tui_app_frame(app, base_monotonic_ns());
    tui_app_destroy(&app);
    fflush(out);
    rewind(out);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, out);
    buf[n] = '\0';
    fclose(out);
    fclose(in);
    return strstr(buf, text) != NULL;
}

/* An edge fit of a 2 s window, as it arrives at `arrival` (realtime ns). */
static void edge_fit_at(tui_model_t *m, int src, int dst, int64_t window, int64_t arrival)
{
    char buf[512], err[BASE_ERRLEN] = "";
    snprintf(buf, sizeof buf,
             "{\"window\":%lld,\"src\":%d,\"dst\":%d,\"estimator\":\"svm\",\"anchor_ns\":%lld,"
             "\"offset_ns\":1,\"drift_ppb\":0,\"uncertainty_ns\":4,\"n_fwd\":90,\"n_rev\":90,"
             "\"from_ns\":%lld,\"to_ns\":%lld}",
             (long long)window, src, dst, (long long)T0, (long long)T0,
             (long long)(T0 + 2000000000LL));
    bus_msg_t *msg = msg_json(BUS_K_EDGE_FIT, buf);
    if (tui_model_apply(m, msg, arrival, err) != BASE_DEC_OK)
        fail_msg("edge_fit rejected: %s", err);
    bus_msg_destroy(&msg);
}

static void test_console_windows_title(void **state)
{
    (void)state;
    tui_model_t *m = tui_model_new(NULL);
    feed_two_nodes(m, true);
    apply_ok(m, BUS_K_SOLVE,
             "{\"window\":2,\"ref\":1,\"residuals\":[],\"unaligned\":[],\"dof\":2,"
             "\"edges_used\":2,\"stamp_asym_ns\":3,\"delay_ns\":19000,\"hosts_warming\":2}");
    assert_true(console_shows(m, "loops, stamps ±3ns, hosts warming up"));
    assert_false(console_shows(m, "slow hosts"));
    apply_ok(m, BUS_K_SOLVE,
             "{\"window\":3,\"ref\":1,\"residuals\":[],\"unaligned\":[],\"dof\":1,"
             "\"edges_used\":2,\"stamp_asym_ns\":3,\"delay_ns\":212.5,\"hosts_warming\":0}");
    assert_true(console_shows(m, "stamps ±3ns, slow hosts ±212ns"));
    assert_false(console_shows(m, "warming"));
    /* A count out of range is rejected and changes nothing. */
    assert_int_equal(apply_json(m, BUS_K_SOLVE,
                                "{\"window\":4,\"ref\":1,\"residuals\":[],\"unaligned\":[],"
                                "\"dof\":1,\"hosts_warming\":-1}"),
                     BASE_DEC_BAD_VALUE);
    struct tui_summary s;
    tui_model_summary(m, &s);
    assert_true(s.hosts_warming == 0 && s.delay_ns == 212.5);
    /* An edge nothing came for in two and a half window lengths (2 s
     * here) while others were heard from is no longer probed: counted in
     * the title (its rows go last, dimmed).  Told by arrival, not by
     * window number: an agent whose clock is far ahead numbers its
     * windows far ahead, and the others are not stale for that. */
    edge_fit_at(m, 1, 2, 7, T0 + 10000000000LL);
    edge_fit_at(m, 2, 1, 5, T0);
    assert_true(console_shows(m, "2 edges (1 not probed now)"));
    edge_fit_at(m, 2, 1, 6, T0 + 9000000000LL);
    assert_false(console_shows(m, "not probed now"));
    edge_fit_at(m, 2, 1, 1000000, T0 + 11000000000LL); /* a clock far ahead */
    assert_false(console_shows(m, "not probed now"));
    tui_model_destroy(&m);
}

/* ---- protobuf writer --------------------------------------------------------------- */

static void assert_pb(const struct tui_pb *pb, const uint8_t *want, size_t n)
{
    assert_int_equal(pb->depth, 0);
    assert_int_equal(pb->len, n);
    assert_memory_equal(pb->buf, want, n);
}

static void test_pb_writer(void **state)
{
    (void)state;
    struct tui_pb pb;
    tui_pb_init(&pb);
    /* Varints: 7 bits a byte, little end first, the shortest form. */
    const struct {
        uint64_t v;
        uint8_t b[10];
        size_t n;
    } vs[] = {
        {0, {0x00}, 1},
        {1, {0x01}, 1},
        {127, {0x7f}, 1},
        {128, {0x80, 0x01}, 2},
        {300, {0xac, 0x02}, 2},
        {16383, {0xff, 0x7f}, 2},
        {16384, {0x80, 0x80, 0x01}, 3},
        {1ULL << 63, {0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, 10},
        {UINT64_MAX, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 10},
    };
    for (size_t i = 0; i < BASE_ARRAY_LEN(vs); i++) {
        tui_pb_reset(&pb);
        tui_pb_varint(&pb, vs[i].v);
        assert_pb(&pb, vs[i].b, vs[i].n);
        assert_int_equal(tui_pb_varint_len(vs[i].v), vs[i].n);
    }
    /* The protobuf encoding guide's examples: field 1 = 150, field 2 = "testing",
     * field 3 = a message holding field 1 = 150. */
    tui_pb_reset(&pb);
    tui_pb_int(&pb, 1, 150);
    assert_pb(&pb, (const uint8_t[]){0x08, 0x96, 0x01}, 3);
    tui_pb_reset(&pb);
    tui_pb_str(&pb, 2, "testing");
    assert_pb(&pb, (const uint8_t[]){0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g'}, 9);
    tui_pb_reset(&pb);
    tui_pb_begin(&pb, 3);
    tui_pb_int(&pb, 1, 150);
    tui_pb_end(&pb);
    assert_pb(&pb, (const uint8_t[]){0x1a, 0x03, 0x08, 0x96, 0x01}, 5);
    /* int64 is not zigzag: -1 is the 10-byte two's complement; -2 likewise. */
    tui_pb_reset(&pb);
    tui_pb_int(&pb, 4, -1);
    tui_pb_int(&pb, 4, -2);
    assert_pb(&pb,
              (const uint8_t[]){0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
                                0x20, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
              22);
    /* uint64 and double (fixed64, little-endian IEEE 754); a field number past 15. */
    tui_pb_reset(&pb);
    tui_pb_uint(&pb, 3, 4096);
    tui_pb_double(&pb, 2, 1.0);
    tui_pb_uint(&pb, 16, 1);
    assert_pb(
        &pb,
        (const uint8_t[]){0x18, 0x80, 0x20, 0x11, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x80, 0x01, 0x01},
        15);
    /* Empty string and an empty nested message still take their tag and length. */
    tui_pb_reset(&pb);
    tui_pb_str(&pb, 2, NULL);
    tui_pb_begin(&pb, 6);
    tui_pb_end(&pb);
    assert_pb(&pb, (const uint8_t[]){0x12, 0x00, 0x32, 0x00}, 4);
    /* Invalid UTF-8 becomes U+FFFD (protobuf strings must be UTF-8). */
    tui_pb_reset(&pb);
    tui_pb_str(&pb, 5,
               "a\xff"
               "b");
    assert_pb(&pb, (const uint8_t[]){0x2a, 0x05, 'a', 0xef, 0xbf, 0xbd, 'b'}, 7);
    /* Nested lengths past one byte: the content moves to make room, at
     * every level.  Outer { inner { 200 bytes }, 4: 1 }: inner content 203
     * bytes (tag, 2-byte length, 200), outer content 3 + 203 + 2 = 208. */
    tui_pb_reset(&pb);
    char big[201];
    memset(big, 'x', 200);
    big[200] = '\0';
    tui_pb_begin(&pb, 1);
    tui_pb_begin(&pb, 2);
    tui_pb_str(&pb, 3, big);
    tui_pb_end(&pb);
    tui_pb_int(&pb, 4, 1);
    tui_pb_end(&pb);
    uint8_t want[3 + 3 + 3 + 200 + 2];
    size_t n = 0;
    const uint8_t head[] = {0x0a, 0xd0, 0x01, 0x12, 0xcb, 0x01, 0x1a, 0xc8, 0x01};
    memcpy(want, head, sizeof head);
    n = sizeof head;
    memset(want + n, 'x', 200);
    n += 200;
    want[n++] = 0x20;
    want[n++] = 0x01;
    assert_pb(&pb, want, n);
    tui_pb_free(&pb);
}

/* ---- scope pairs -------------------------------------------------------------------- */

struct pairs_seen {
    struct tui_scope_rec r[16];
    size_t n;
};

static void collect_pair(void *ctx, const struct tui_scope_rec *rec)
{
    struct pairs_seen *p = ctx;
    if (p->n < 16)
        p->r[p->n] = *rec;
    p->n++;
}

static void test_scopes(void **state)
{
    (void)state;
    char err[BASE_ERRLEN];
    tui_scopes_t *s = tui_scopes_new(4);
    assert_int_equal(tui_scopes_add(s, 1, 10, 2, 1, err), 1);
    assert_int_equal(tui_scopes_add(s, 1, 10, 1, 0, err), 1);
    assert_int_equal(tui_scopes_add(s, 1, 10, 2, 1, err), 0); /* known */
    assert_int_equal(tui_scopes_add(s, 2, 10, 2, 7, err), 1); /* another node: another tree */
    assert_int_equal(tui_scopes_add(s, 1, 11, 2, 7, err), 1); /* another pid too */
    assert_int_equal(tui_scopes_add(s, 1, 10, 0, 1, err), BASE_ERR);
    assert_int_equal(tui_scopes_add(s, 1, 10, 3, 3, err), BASE_ERR);
    assert_non_null(strstr(err, "child-parent"));
    uint64_t par;
    assert_int_equal(tui_scopes_parent(s, 2, 10, 2, &par), BASE_OK);
    assert_int_equal(par, 7);
    assert_int_equal(tui_scopes_parent(s, 1, 10, 2, &par), BASE_OK);
    assert_int_equal(par, 1);
    /* A different parent replaces the old one, counted. */
    assert_int_equal(tui_scopes_add(s, 1, 10, 2, 9, err), 0);
    assert_int_equal(tui_scopes_conflicts(s), 1);
    assert_int_equal(tui_scopes_parent(s, 1, 10, 2, &par), BASE_OK);
    assert_int_equal(par, 9);
    /* Full (4): the oldest goes, counted, and is no longer found. */
    assert_int_equal(tui_scopes_count(s), 4);
    assert_int_equal(tui_scopes_add(s, 3, 1, 5, 4, err), 1);
    assert_int_equal(tui_scopes_count(s), 4);
    assert_int_equal(tui_scopes_evicted(s), 1);
    assert_int_equal(tui_scopes_parent(s, 1, 10, 2, &par), BASE_ERR);
    struct pairs_seen seen = {.n = 0};
    tui_scopes_foreach(s, collect_pair, &seen);
    assert_int_equal(seen.n, 4); /* oldest first */
    assert_true(seen.r[0].node == 1 && seen.r[0].child == 1 && seen.r[0].parent == 0);
    assert_true(seen.r[3].node == 3 && seen.r[3].child == 5 && seen.r[3].parent == 4);
    /* The evicted one comes back as new. */
    assert_int_equal(tui_scopes_add(s, 1, 10, 2, 1, err), 1);
    tui_scopes_destroy(&s);
    assert_null(s);

    /* Many pairs through a small budget: stale index slots are reused or
     * rebuilt away; the most recent pairs are always found. */
    s = tui_scopes_new(1000);
    for (uint64_t i = 1; i <= 200000; i++)
        assert_int_equal(tui_scopes_add(s, (uint16_t)(i % 3), 1, i, i / 2, err), 1);
    assert_int_equal(tui_scopes_count(s), 1000);
    assert_int_equal(tui_scopes_evicted(s), 199000);
    for (uint64_t i = 199001; i <= 200000; i++) {
        assert_int_equal(tui_scopes_parent(s, (uint16_t)(i % 3), 1, i, &par), BASE_OK);
        assert_int_equal(par, i / 2);
    }
    assert_int_equal(tui_scopes_parent(s, 0, 1, 199000 - 1, &par), BASE_ERR);
    tui_scopes_destroy(&s);

    /* Scope messages: valid ones are taken, malformed ones refused whole. */
    s = tui_scopes_new(0);
    bus_msg_t *m = msg_json(BUS_K_SCOPE, "{\"node\":4,\"pid\":99,\"tree\":[[1,0],[2,1],[3,1]]}");
    assert_int_equal(tui_scopes_apply(s, m, err), BASE_DEC_OK);
    bus_msg_destroy(&m);
    assert_int_equal(tui_scopes_count(s), 3);
    assert_int_equal(tui_scopes_parent(s, 4, 99, 3, &par), BASE_OK);
    assert_int_equal(par, 1);
    const char *bad[] = {
        "{\"node\":4,\"pid\":99,\"tree\":[[5,1],[6]]}",
        "{\"node\":4,\"pid\":99,\"tree\":[[5,1],[0,1]]}",
        "{\"node\":4,\"pid\":99,\"tree\":[[5,1],[-6,1]]}",
        "{\"node\":4,\"pid\":99,\"tree\":[[5,1],[6,\"x\"]]}",
        "{\"node\":4,\"pid\":99,\"tree\":[[7,7]]}",
        "{\"node\":4,\"pid\":99,\"tree\":{}}",
        "{\"node\":4,\"tree\":[]}",
        "{\"node\":70000,\"pid\":1,\"tree\":[]}",
        "{\"node\":4,\"pid\":-1,\"tree\":[]}",
    };
    for (size_t i = 0; i < BASE_ARRAY_LEN(bad); i++) {
        m = msg_json(BUS_K_SCOPE, bad[i]);
        err[0] = '\0';
        assert_int_not_equal(tui_scopes_apply(s, m, err), BASE_DEC_OK);
        assert_true(strlen(err) > 0);
        bus_msg_destroy(&m);
    }
    assert_int_equal(tui_scopes_count(s), 3); /* nothing of the bad ones */
    assert_int_equal(base_decstats_errors(tui_scopes_decstats(s)), BASE_ARRAY_LEN(bad));
    assert_int_equal(tui_scopes_decstats(s)->n[BASE_DEC_OK], 1);
    /* Other kinds are not its business. */
    m = msg_json(BUS_K_LOG, "{\"level\":\"info\",\"msg\":\"x\"}");
    assert_int_equal(tui_scopes_apply(s, m, err), BASE_DEC_OK);
    bus_msg_destroy(&m);
    assert_int_equal(tui_scopes_decstats(s)->n[BASE_DEC_OK], 1);
    tui_scopes_destroy(&s);
}

/* ---- XSpace round trip through a tiny decoder ------------------------------------------ */

struct pbf {
    uint32_t field;
    unsigned wire;
    uint64_t v;
    const uint8_t *data;
    size_t len;
};

static uint64_t pbd_varint(const uint8_t **p, const uint8_t *end)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        assert_true(*p < end);
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (b < 0x80)
            return v;
    }
    fail_msg("varint longer than 10 bytes");
    return 0;
}

static bool pbd_next(const uint8_t **p, const uint8_t *end, struct pbf *f)
{
    if (*p >= end)
        return false;
    uint64_t key = pbd_varint(p, end);
    f->field = (uint32_t)(key >> 3);
    f->wire = key & 7;
    assert_true(f->field > 0);
    switch (f->wire) {
    case 0:
        f->v = pbd_varint(p, end);
        break;
    case 1:
        assert_true(end - *p >= 8);
        f->v = 0;
        for (int i = 0; i < 8; i++)
            f->v |= (uint64_t)(*p)[i] << (8 * i);
        *p += 8;
        break;
    case 2:
        f->len = (size_t)pbd_varint(p, end);
        assert_true(f->len <= (size_t)(end - *p));
        f->data = *p;
        *p += f->len;
        break;
    default:
        fail_msg("wire type %u", f->wire);
    }
    return true;
}

struct t_stat {
    int64_t md;
    int kind; /* the XStat value field: 2 double, 3 uint64, 4 int64, 5 string */
    uint64_t u;
    double d;
    char s[96];
};
struct t_event {
    int64_t md, off_ps, dur_ps;
    int nst;
    struct t_stat st[12];
};
struct t_line {
    int64_t id, ts, dur_ps;
    char name[64];
    int nev;
    struct t_event ev[8];
};
struct t_plane {
    int64_t id;
    char name[96];
    int nlines, nmd, nsmd, nstats, nstats_all;
    struct t_line lines[6];
    int64_t mdid[16], smdid[40];
    char mdname[16][64], smdname[40][32];
    struct t_stat stats[40];
};
struct t_space {
    int nplanes, nhosts, nwarn;
    struct t_plane planes[8];
    char hosts[4][64];
};

static void pbd_str(const struct pbf *f, char *out, size_t cap)
{
    assert_int_equal(f->wire, 2);
    assert_true(f->len < cap);
    memcpy(out, f->data, f->len);
    out[f->len] = '\0';
}

static void pbd_stat(const struct pbf *outer, struct t_stat *st)
{
    const uint8_t *p = outer->data, *end = p + outer->len;
    struct pbf f;
    memset(st, 0, sizeof *st);
    while (pbd_next(&p, end, &f)) {
        if (f.field == 1)
            st->md = (int64_t)f.v;
        else if (f.field == 5)
            pbd_str(&f, st->s, sizeof st->s);
        else if (f.field == 2)
            memcpy(&st->d, &f.v, sizeof st->d);
        else
            st->u = f.v;
        if (f.field >= 2) {
            assert_int_equal(st->kind, 0); /* a oneof: one value */
            st->kind = (int)f.field;
        }
    }
}

/* Name and id of a metadata map entry {1: key, 2: {1: id, 2: name}}. */
static void pbd_entry(const struct pbf *outer, int64_t *id, char *name, size_t cap)
{
    const uint8_t *p = outer->data, *end = p + outer->len;
    struct pbf f, g;
    int64_t key = -1;
    while (pbd_next(&p, end, &f)) {
        if (f.field == 1) {
            key = (int64_t)f.v;
            continue;
        }
        assert_int_equal(f.field, 2);
        const uint8_t *q = f.data, *qe = q + f.len;
        while (pbd_next(&q, qe, &g)) {
            if (g.field == 1)
                *id = (int64_t)g.v;
            else if (g.field == 2)
                pbd_str(&g, name, cap);
        }
    }
    assert_int_equal(key, *id);
}

static void pbd_plane(const struct pbf *outer, struct t_plane *pl)
{
    const uint8_t *p = outer->data, *end = p + outer->len;
    struct pbf f, g, h;
    while (pbd_next(&p, end, &f)) {
        switch (f.field) {
        case 1:
            pl->id = (int64_t)f.v;
            break;
        case 2:
            pbd_str(&f, pl->name, sizeof pl->name);
            break;
        case 3: {
            assert_true(pl->nlines < 6);
            struct t_line *ln = &pl->lines[pl->nlines++];
            const uint8_t *q = f.data, *qe = q + f.len;
            while (pbd_next(&q, qe, &g)) {
                if (g.field == 1)
                    ln->id = (int64_t)g.v;
                else if (g.field == 2)
                    pbd_str(&g, ln->name, sizeof ln->name);
                else if (g.field == 3)
                    ln->ts = (int64_t)g.v;
                else if (g.field == 9)
                    ln->dur_ps = (int64_t)g.v;
                else if (g.field == 4) {
                    assert_true(ln->nev < 8);
                    struct t_event *ev = &ln->ev[ln->nev++];
                    ev->off_ps = -1;
                    const uint8_t *r = g.data, *re = r + g.len;
                    while (pbd_next(&r, re, &h)) {
                        if (h.field == 1)
                            ev->md = (int64_t)h.v;
                        else if (h.field == 2)
                            ev->off_ps = (int64_t)h.v;
                        else if (h.field == 3)
                            ev->dur_ps = (int64_t)h.v;
                        else if (h.field == 4) {
                            assert_true(ev->nst < 12);
                            pbd_stat(&h, &ev->st[ev->nst++]);
                        } else
                            fail_msg("XEvent field %u", h.field);
                    }
                    assert_true(ev->off_ps >= 0); /* always written */
                } else
                    fail_msg("XLine field %u", g.field);
            }
            break;
        }
        case 4:
            assert_true(pl->nmd < 16);
            pbd_entry(&f, &pl->mdid[pl->nmd], pl->mdname[pl->nmd], sizeof pl->mdname[0]);
            pl->nmd++;
            break;
        case 5:
            assert_true(pl->nsmd < 40);
            pbd_entry(&f, &pl->smdid[pl->nsmd], pl->smdname[pl->nsmd], sizeof pl->smdname[0]);
            pl->nsmd++;
            break;
        case 6: /* the tree plane has many: the first 40 are kept */
            if (pl->nstats < 40)
                pbd_stat(&f, &pl->stats[pl->nstats++]);
            pl->nstats_all++;
            break;
        default:
            fail_msg("XPlane field %u", f.field);
        }
    }
}

static void pbd_space(const uint8_t *buf, size_t len, struct t_space *sp)
{
    const uint8_t *p = buf, *end = buf + len;
    struct pbf f;
    memset(sp, 0, sizeof *sp);
    while (pbd_next(&p, end, &f)) {
        if (f.field == 1) {
            assert_true(sp->nplanes < 8);
            pbd_plane(&f, &sp->planes[sp->nplanes++]);
        } else if (f.field == 4) {
            assert_true(sp->nhosts < 4);
            pbd_str(&f, sp->hosts[sp->nhosts++], sizeof sp->hosts[0]);
        } else if (f.field == 3) {
            sp->nwarn++;
        } else {
            fail_msg("XSpace field %u", f.field);
        }
    }
}

static const struct t_plane *t_find_plane(const struct t_space *sp, const char *name)
{
    for (int i = 0; i < sp->nplanes; i++)
        if (strcmp(sp->planes[i].name, name) == 0)
            return &sp->planes[i];
    return NULL;
}

/* A stat by its metadata name, among n stats of plane pl. */
static const struct t_stat *t_stat(const struct t_plane *pl, const struct t_stat *st, int n,
                                   const char *name)
{
    int64_t id = -1;
    for (int i = 0; i < pl->nsmd; i++)
        if (strcmp(pl->smdname[i], name) == 0)
            id = pl->smdid[i];
    for (int i = 0; i < n; i++)
        if (st[i].md == id)
            return &st[i];
    return NULL;
}

/* The first event named name in the plane; its absolute start (ns: in ps it
 * would not fit an int64) in *start. */
static const struct t_event *t_event(const struct t_plane *pl, const char *name, int64_t *start)
{
    for (int i = 0; i < pl->nmd; i++) {
        if (strcmp(pl->mdname[i], name) != 0)
            continue;
        for (int l = 0; l < pl->nlines; l++)
            for (int e = 0; e < pl->lines[l].nev; e++)
                if (pl->lines[l].ev[e].md == pl->mdid[i]) {
                    assert_int_equal(pl->lines[l].ev[e].off_ps % 1000, 0);
                    if (start)
                        *start = pl->lines[l].ts + pl->lines[l].ev[e].off_ps / 1000;
                    return &pl->lines[l].ev[e];
                }
    }
    return NULL;
}

static void test_xplane(void **state)
{
    (void)state;
    tui_model_t *m = tui_model_new(NULL);
    feed_two_nodes(m, true);
    apply_ok(m, BUS_K_HELLO,
             "{\"node\":1,\"host\":\"alpha\",\"pid\":1,\"version\":\"x\",\"gpus\":[]}");
    apply_ok(m, BUS_K_HELLO,
             "{\"node\":2,\"host\":\"beta\",\"pid\":2,\"version\":\"x\",\"gpus\":[]}");
    apply_ok(m, BUS_K_NAMES, "{\"node\":1,\"pid\":10,\"names\":[[4,\"forward\"]]}");
    /* Node 1 also has a step, a range in it and a kernel in the range. */
    int64_t s1 = 1001500000000LL;
    gpu_event_t ev[3];
    ev[0] = ev_make(GPU_EV_STEP, 1, 10, 0, 0, s1 - 1000000, s1 + 20000000);
    ev[0].step = 7;
    ev[0].scope_id = 1;
    ev[1] = ev_make(GPU_EV_RANGE, 1, 10, 0, 4, s1 - 500000, s1 + 15000000);
    ev[1].scope_id = 2;
    ev[2] = ev_make(GPU_EV_KERNEL, 1, 10, 4, 1, s1 + 12000000, s1 + 14000000);
    ev[2].scope_id = 2;
    apply_events(m, 1, 10, ev, 3, T0);
    tui_scopes_t *sc = tui_scopes_new(0);
    char err[BASE_ERRLEN];
    assert_int_equal(tui_scopes_add(sc, 1, 10, 1, 0, err), 1); /* a root: not listed */
    assert_int_equal(tui_scopes_add(sc, 1, 10, 2, 1, err), 1);
    assert_int_equal(tui_scopes_add(sc, 2, 20, 5, 4, err), 1);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    const char *warn[] = {"a test warning", NULL};
    struct tui_xplane_opts o = {.node = -1, .source = "unit", .warnings = warn};
    struct tui_xplane_stats st;
    assert_int_equal(tui_xplane_write(m, sc, f, &o, &st, err), BASE_OK);
    fclose(f);
    assert_int_equal(st.bytes, len);
    assert_int_equal(st.events, 9);
    assert_int_equal(st.planes, 6);
    assert_int_equal(st.scope_pairs, 2);
    assert_int_equal(st.raw_events, 0);
    struct t_space *sp = calloc(1, sizeof *sp);
    assert_non_null(sp);
    pbd_space((const uint8_t *)buf, len, sp);
    assert_int_equal(sp->nplanes, 6);
    assert_int_equal(sp->nhosts, 2);
    assert_string_equal(sp->hosts[0], "alpha");
    assert_string_equal(sp->hosts[1], "beta");
    assert_int_equal(sp->nwarn, 1);

    const struct t_plane *h1 = t_find_plane(sp, "/host:CPU:n1 alpha");
    const struct t_plane *h2 = t_find_plane(sp, "/host:CPU:n2 beta");
    const struct t_plane *g0 = t_find_plane(sp, "/device:GPU:0");
    const struct t_plane *g1 = t_find_plane(sp, "/device:GPU:1");
    const struct t_plane *tree = t_find_plane(sp, "/host:__ScopeRangeCallStack__");
    const struct t_plane *env = t_find_plane(sp, "Task Environment");
    assert_true(h1 && h2 && g0 && g1 && tree && env);
    assert_int_equal(g0->id, 0);
    assert_int_equal(g1->id, 1);
    /* Planes say whose they are and the alignment used. */
    assert_int_equal(t_stat(g0, g0->stats, g0->nstats, "node")->u, 1);
    assert_int_equal(t_stat(g1, g1->stats, g1->nstats, "node")->u, 2);
    const struct t_stat *x = t_stat(h2, h2->stats, h2->nstats, "offset_ns");
    assert_true(x && x->kind == 2 && fabs(x->d - 3000000) < 1e-6);
    x = t_stat(h2, h2->stats, h2->nstats, "uncertainty_ns");
    assert_true(x && fabs(x->d - 120) < 1e-6);
    assert_int_equal(t_stat(h2, h2->stats, h2->nstats, "aligned")->u, 1);
    assert_int_equal(t_stat(h1, h1->stats, h1->nstats, "reference")->u, 1);
    assert_string_equal(t_stat(h2, h2->stats, h2->nstats, "hostname")->s, "beta");

    /* The two collectives: one instant on the global time base. */
    int64_t a1, a2;
    const struct t_event *k1 = t_event(g0, "allreduce", &a1);
    const struct t_event *k2 = t_event(g1, "allreduce", &a2);
    assert_true(k1 && k2);
    assert_true(llabs(a1 - a2) <= 1);
    assert_int_equal(a1, s1 + P1);
    assert_int_equal(k1->dur_ps, 10000000LL * 1000);
    const struct t_stat *ks = t_stat(g0, k1->st, k1->nst, "kernel_details");
    assert_non_null(ks);
    assert_string_equal(ks->s, "grid:1024,0,0 block:256,0,0");
    assert_int_equal(t_stat(g0, k1->st, k1->nst, "correlation_id")->u, 5);
    assert_int_equal(t_stat(g0, k1->st, k1->nst, "collective")->u, 1);
    assert_int_equal(t_stat(g0, k1->st, k1->nst, "trace_ns")->u, s1);
    assert_null(t_stat(g0, k1->st, k1->nst, "time_flags")); /* placed cleanly */
    /* Two streams on GPU 0 (2: allreduce, 3: the copy; 4: the scoped kernel). */
    assert_int_equal(g0->nlines, 3);
    assert_string_equal(g0->lines[0].name, "Stream #2");
    assert_int_equal(g0->lines[0].id, 2);
    int64_t c0;
    const struct t_event *cp = t_event(g1, "na\"me\x01", &c0);
    assert_non_null(cp);
    assert_int_equal(t_stat(g1, cp->st, cp->nst, "bytes_transferred")->u, 4096);
    assert_non_null(strstr(t_stat(g1, cp->st, cp->nst, "memcpy_details")->s, "size:4096"));
    /* Node 1's copy had no name: a generated one. */
    assert_non_null(t_event(g0, "memcpy#0", NULL));

    /* Host side: the API call links to its GPU's plane; the step marker. */
    int64_t api;
    const struct t_event *ap = t_event(h1, "hipLaunchKernel", &api);
    assert_non_null(ap);
    assert_int_equal(t_stat(h1, ap->st, ap->nst, "device_id")->u, 0);
    assert_int_equal(t_stat(h1, ap->st, ap->nst, "correlation_id")->u, 5);
    assert_int_equal(t_stat(h1, ap->st, ap->nst, "correlation_id")->kind, 4); /* int64 */
    /* The launch arrow as xprof reads it: category 9, out of the call, into its kernel. */
    uint64_t fo = t_stat(h1, ap->st, ap->nst, "flow")->u;
    uint64_t fi = t_stat(g0, k1->st, k1->nst, "flow")->u;
    assert_int_equal(fo >> 58, 9);
    assert_int_equal(fo & 3, 2);
    assert_int_equal(fi & 3, 1);
    assert_int_equal(fo >> 2, fi >> 2);
    assert_int_equal(api, s1 - 20000 + P1);
    ap = t_event(h2, "hipLaunchKernel", NULL);
    assert_int_equal(t_stat(h2, ap->st, ap->nst, "device_id")->u, 1);
    int64_t step0;
    const struct t_event *stp = t_event(h1, "train", &step0);
    assert_non_null(stp);
    assert_int_equal(t_stat(h1, stp->st, stp->nst, "step_num")->u, 7);
    assert_int_equal(t_stat(h1, stp->st, stp->nst, "_r")->u, 1);
    assert_int_equal(stp->dur_ps, 21000000LL * 1000);
    /* Scope ids: (ordinal << 40) | id, node 1 pid 10 is ordinal 1, node 2 pid 20 is 2. */
    const int64_t base1 = 1LL << 40, base2 = 2LL << 40;
    assert_int_equal(t_stat(h1, stp->st, stp->nst, "scope_range_id")->u, base1 | 1);
    const struct t_event *fw = t_event(h1, "forward", NULL);
    assert_int_equal(t_stat(h1, fw->st, fw->nst, "scope_range_id")->u, base1 | 2);
    /* The tree plane: metadata id = child, int64 value = parent, no metadata. */
    assert_int_equal(tree->nstats, 2);
    assert_int_equal(tree->nsmd, 0);
    assert_int_equal(tree->stats[0].md, base1 | 2);
    assert_int_equal(tree->stats[0].kind, 4);
    assert_int_equal(tree->stats[0].u, base1 | 1);
    assert_int_equal(tree->stats[1].md, base2 | 5);
    assert_int_equal(tree->stats[1].u, base2 | 4);
    /* Task environment: start < stop, the extent of the events. */
    const struct t_stat *t0 = t_stat(env, env->stats, env->nstats, "profile_start_time");
    const struct t_stat *t1 = t_stat(env, env->stats, env->nstats, "profile_stop_time");
    assert_true(t0 && t1 && t0->kind == 3 && t1->kind == 3);
    assert_int_equal(t0->u, (uint64_t)st.start_ns);
    assert_int_equal(t1->u, (uint64_t)st.stop_ns);
    assert_int_equal(t0->u, (uint64_t)(s1 - 1000000 + P1));
    assert_true(t0->u < t1->u);
    assert_string_equal(t_stat(env, env->stats, env->nstats, "scope_id_processes")->s,
                        "1=n1/pid10 2=n2/pid20");
    free(buf);

    /* One node alone: xprof's single-host names, device planes by device id. */
    f = open_memstream(&buf, &len);
    o.node = 2;
    assert_int_equal(tui_xplane_write(m, sc, f, &o, &st, err), BASE_OK);
    fclose(f);
    pbd_space((const uint8_t *)buf, len, sp);
    assert_int_equal(sp->nplanes, 4);
    assert_non_null(t_find_plane(sp, "/host:CPU"));
    assert_non_null(t_find_plane(sp, "/device:GPU:0"));
    assert_int_equal(sp->nhosts, 1);
    assert_string_equal(sp->hosts[0], "beta");
    tree = t_find_plane(sp, "/host:__ScopeRangeCallStack__");
    assert_int_equal(tree->nstats, 1);
    assert_int_equal(tree->stats[0].md, base1 | 5); /* node 2's process is ordinal 1 here */
    free(buf);

    /* Files: through .tmp and rename; unwritable places fail and leave nothing. */
    char dir[] = "/tmp/test_tui_xp.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[600], tmp[700];
    snprintf(path, sizeof path, "%s/out.xplane.pb", dir);
    o.node = -1;
    assert_int_equal(tui_xplane_write_file(m, sc, path, &o, &st, err), BASE_OK);
    assert_int_equal(access(path, R_OK), 0);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    assert_int_not_equal(access(tmp, F_OK), 0);
    unlink(path);
    assert_int_equal(tui_xplane_write_dir(m, sc, dir, &o, &st, err), BASE_OK);
    snprintf(path, sizeof path, "%s/alpha-n1.xplane.pb", dir);
    assert_int_equal(access(path, R_OK), 0);
    unlink(path);
    snprintf(path, sizeof path, "%s/beta-n2.xplane.pb", dir);
    assert_int_equal(access(path, R_OK), 0);
    unlink(path);
    assert_int_equal(st.events, 9);
    assert_int_equal(tui_xplane_write_file(m, sc, "/nonexistent-dir/x.xplane.pb", &o, &st, err),
                     BASE_ERR);
    assert_non_null(strstr(err, "nonexistent"));
    assert_int_equal(tui_xplane_write_dir(m, sc, "/nonexistent-dir", &o, &st, err), BASE_ERR);
    if (access("/dev/full", W_OK) == 0) {
        FILE *full = fopen("/dev/full", "w");
        assert_int_equal(tui_xplane_write(m, sc, full, &o, &st, err), BASE_ERR);
        assert_non_null(strstr(err, "write failed"));
        fclose(full);
    }
    rmdir(dir);

    /* Pairs of processes interleaved (as their messages arrive): each
     * process gets one ordinal, every pair is listed. */
    tui_scopes_t *many = tui_scopes_new(0);
    for (uint64_t i = 1; i <= 300; i++) {
        assert_int_equal(tui_scopes_add(many, 1, 10, i + 1, i, err), 1);
        assert_int_equal(tui_scopes_add(many, 2, 30, i + 1, i, err), 1);
        assert_int_equal(tui_scopes_add(many, 2, 20, i + 1, i, err), 1);
    }
    f = open_memstream(&buf, &len);
    assert_int_equal(tui_xplane_write(m, many, f, &o, &st, err), BASE_OK);
    fclose(f);
    assert_int_equal(st.scope_pairs, 900);
    pbd_space((const uint8_t *)buf, len, sp);
    assert_int_equal(t_find_plane(sp, "/host:__ScopeRangeCallStack__")->nstats_all, 900);
    env = t_find_plane(sp, "Task Environment");
    assert_string_equal(t_stat(env, env->stats, env->nstats, "scope_id_processes")->s,
                        "1=n1/pid10 2=n2/pid20 3=n2/pid30");
    free(buf);
    tui_scopes_destroy(&many);

    /* An unaligned node: still written, on its raw clock, and flagged. */
    tui_model_t *m2 = tui_model_new(NULL);
    feed_two_nodes(m2, false);
    f = open_memstream(&buf, &len);
    assert_int_equal(tui_xplane_write(m2, NULL, f, NULL, &st, err), BASE_OK);
    fclose(f);
    assert_int_equal(st.raw_events, 3);
    pbd_space((const uint8_t *)buf, len, sp);
    h2 = t_find_plane(sp, "/host:CPU:n2 ?");
    assert_non_null(h2);
    assert_int_equal(t_stat(h2, h2->stats, h2->nstats, "aligned")->u, 0);
    assert_string_equal(t_stat(h2, h2->stats, h2->nstats, "time_base")->s, "raw");
    g1 = t_find_plane(sp, "/device:GPU:1");
    k2 = t_event(g1, "allreduce", NULL);
    assert_true(t_stat(g1, k2->st, k2->nst, "time_flags")->u & TUI_T_RAW);
    assert_int_equal(sp->nwarn, 1); /* says so */
    free(buf);
    free(sp);
    tui_model_destroy(&m2);
    tui_scopes_destroy(&sc);
    tui_model_destroy(&m);
}

/* ---- window statistics ----------------------------------------------------------------- */

static bus_msg_t *msg_wire(enum bus_kind kind, int node, uint64_t seq, const char *json)
{
    bus_msg_t *m = msg_json(kind, json);
    char err[BASE_ERRLEN];
    if (bus_msg_encode(m, node, seq, NULL, err) != BASE_OK)
        fail_msg("encode: %s", err);
    return m;
}

static void test_winlog(void **state)
{
    (void)state;
    char dir[] = "/tmp/test_tui_win.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[600], tmp[700];
    snprintf(path, sizeof path, "%s/w.jsonl", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    char err[BASE_ERRLEN];
    assert_true(tui_winlog_wants(BUS_K_WIN) && tui_winlog_wants(BUS_K_EDGE_FIT) &&
                tui_winlog_wants(BUS_K_NODE_FIT) && tui_winlog_wants(BUS_K_SOLVE));
    assert_false(tui_winlog_wants(BUS_K_EV) || tui_winlog_wants(BUS_K_SNAP));
    tui_winlog_t *w = tui_winlog_open(path, err);
    assert_non_null(w);
    assert_int_equal(access(tmp, F_OK), 0);
    bus_msg_t *win = msg_wire(BUS_K_WIN, 1, 3,
                              "{\"window\":5,\"src\":1,\"dst\":2,\"sent\":100,\"received\":99,"
                              "\"lost\":1,\"pure_pct\":90.5,\"estimator\":\"svm\"}");
    bus_msg_t *fit = msg_wire(BUS_K_EDGE_FIT, 1, 4,
                              "{\"window\":5,\"src\":1,\"dst\":2,\"estimator\":\"svm\","
                              "\"anchor_ns\":1000,\"offset_ns\":12.5,\"drift_ppb\":3,"
                              "\"uncertainty_ns\":40,\"n_fwd\":50,\"n_rev\":49,\"from_ns\":0,"
                              "\"to_ns\":2000}");
    bus_msg_t *nf = msg_wire(BUS_K_NODE_FIT, 0, 9,
                             "{\"window\":5,\"node\":2,\"ref\":0,\"anchor_ns\":1000,"
                             "\"offset_ns\":-7,\"drift_ppb\":1,\"uncertainty_ns\":50,"
                             "\"from_ns\":0,\"to_ns\":2000,\"aligned\":true}");
    bus_msg_t *sv =
        msg_wire(BUS_K_SOLVE, 0, 2, "{\"window\":5,\"ref\":0,\"residuals\":[],\"unaligned\":[]}");
    bus_msg_t *lg = msg_wire(BUS_K_LOG, 0, 1, "{\"level\":\"info\",\"msg\":\"x\"}");
    bus_msg_t *again = msg_wire(BUS_K_WIN, 1, 5,
                                "{\"window\":5,\"src\":1,\"dst\":2,\"sent\":100,\"received\":99,"
                                "\"lost\":1,\"pure_pct\":90.5,\"estimator\":\"svm\"}");
    assert_int_equal(tui_winlog_add(w, win, T0 + 1, err), 1);
    assert_int_equal(tui_winlog_add(w, fit, T0 + 2, err), 1);
    assert_int_equal(tui_winlog_add(w, win, T0 + 3, err), 0);   /* the same message again */
    assert_int_equal(tui_winlog_add(w, again, T0 + 4, err), 1); /* another seq: another message */
    assert_int_equal(tui_winlog_add(w, nf, T0 + 5, err), 1);
    assert_int_equal(tui_winlog_add(w, sv, T0 + 6, err), 1);
    assert_int_equal(tui_winlog_add(w, lg, T0 + 7, err), 0); /* not a window message */
    struct tui_winlog_stats ws;
    tui_winlog_stats(w, &ws);
    assert_int_equal(ws.win, 2);
    assert_int_equal(ws.edge_fit, 1);
    assert_int_equal(ws.node_fit, 1);
    assert_int_equal(ws.solve, 1);
    assert_int_equal(ws.duplicates, 1);
    assert_int_not_equal(access(path, F_OK), 0); /* nothing under the final name yet */
    assert_int_equal(tui_winlog_commit(&w, err), BASE_OK);
    assert_null(w);
    assert_int_not_equal(access(tmp, F_OK), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1024];
    const char *types[] = {"win", "edge_fit", "win", "node_fit", "solve"};
    const int64_t arrivals[] = {T0 + 1, T0 + 2, T0 + 4, T0 + 5, T0 + 6};
    const int senders[] = {1, 1, 1, 0, 0};
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        assert_true(n < 5);
        json_object *o = NULL;
        assert_int_equal(base_json_parse(line, strlen(line), &o, err), BASE_DEC_OK);
        const char *t;
        int64_t v;
        assert_int_equal(base_json_get_str(o, "type", &t, err), BASE_DEC_OK);
        assert_string_equal(t, types[n]);
        assert_int_equal(base_json_get_i64(o, "arrival_ns", &v, err), BASE_DEC_OK);
        assert_int_equal(v, arrivals[n]);
        assert_int_equal(base_json_get_i64(o, "sender", &v, err), BASE_DEC_OK);
        assert_int_equal(v, senders[n]);
        assert_int_equal(base_json_get_i64(o, "window", &v, err), BASE_DEC_OK);
        assert_int_equal(v, 5);
        if (n == 1) { /* the SPEC.md §4.5 object, fields intact */
            double d;
            assert_int_equal(base_json_get_double(o, "offset_ns", &d, err), BASE_DEC_OK);
            assert_true(fabs(d - 12.5) < 1e-9);
            assert_int_equal(base_json_get_i64(o, "n_rev", &v, err), BASE_DEC_OK);
            assert_int_equal(v, 49);
        }
        json_object_put(o);
        n++;
    }
    assert_int_equal(n, 5);
    fclose(f);
    unlink(path);

    /* Abort: nothing is left; an unwritable place is refused at open. */
    w = tui_winlog_open(path, err);
    assert_non_null(w);
    assert_int_equal(tui_winlog_add(w, win, T0, err), 1);
    tui_winlog_abort(&w);
    assert_null(w);
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_not_equal(access(tmp, F_OK), 0);
    assert_null(tui_winlog_open("/nonexistent-dir/w.jsonl", err));
    assert_non_null(strstr(err, "nonexistent"));
    rmdir(dir);
    bus_msg_t *all[] = {win, fit, nf, sv, lg, again};
    for (size_t i = 0; i < BASE_ARRAY_LEN(all); i++)
        bus_msg_destroy(&all[i]);
}

static void test_export_format(void **state)
{
    (void)state;
    enum tui_export_format f;
    assert_int_equal(tui_export_format_parse("xplane", &f), BASE_OK);
    assert_int_equal(f, TUI_EXPORT_XPLANE);
    assert_int_equal(tui_export_format_parse("chrome", &f), BASE_OK);
    assert_int_equal(f, TUI_EXPORT_CHROME);
    assert_int_equal(tui_export_format_parse("auto", &f), BASE_OK);
    assert_int_equal(f, TUI_EXPORT_AUTO);
    assert_int_equal(tui_export_format_parse("pb", &f), BASE_ERR);
    assert_int_equal(tui_export_format_of("a/b.xplane.pb", TUI_EXPORT_AUTO), TUI_EXPORT_XPLANE);
    assert_int_equal(tui_export_format_of("b.pb", TUI_EXPORT_AUTO), TUI_EXPORT_XPLANE);
    assert_int_equal(tui_export_format_of("trace.json", TUI_EXPORT_AUTO), TUI_EXPORT_CHROME);
    assert_int_equal(tui_export_format_of("pb", TUI_EXPORT_AUTO), TUI_EXPORT_CHROME);
    assert_int_equal(tui_export_format_of("trace.json", TUI_EXPORT_XPLANE), TUI_EXPORT_XPLANE);
}

/* The timeline's `/` filter: a substring, either case. */
static void test_name_filter(void **state)
{
    assert_true(tui_name_matches("", NULL));
    assert_true(tui_name_matches("", "gemm"));
    assert_true(tui_name_matches("gemm", "ampere_sgemm_128x64"));
    assert_true(tui_name_matches("GEMM", "ampere_sgemm_128x64"));
    assert_true(tui_name_matches("AllReduce", "ncclKernel_allreduce_RING"));
    assert_false(tui_name_matches("gemv", "ampere_sgemm_128x64"));
    assert_false(tui_name_matches("gemm", NULL));
    assert_true(tui_name_matches("é", "layer_é"));
}

/* An encoded ev message of n records, as the console receives them. */
static bus_msg_t *rec_msg(size_t n, uint64_t seq)
{
    bus_msg_t *m = bus_msg_new(BUS_K_EV);
    bus_msg_set_i64(m, "node", 3);
    bus_msg_set_i64(m, "pid", 1);
    bus_msg_set_i64(m, "count", (int64_t)n);
    bus_msg_set_u64(m, "dropped", 0);
    gpu_event_t *ev = calloc(n, sizeof *ev);
    assert_non_null(ev);
    gpu_batch_encode(ev, n, bus_msg_payload_alloc(m, gpu_batch_size(n)));
    free(ev);
    char err[BASE_ERRLEN];
    struct bus_limits lim = {0};
    if (bus_msg_encode(m, 3, seq, &lim, err) != BASE_OK)
        fail_msg("encode: %s", err);
    return m;
}

static void *drain_fifo(void *arg)
{
    int fd = *(int *)arg;
    char buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n == 0)
            break;
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            break;
        if (n < 0)
            base_sleep_ns(1000000);
    }
    return NULL;
}

/* The console's recording queue: everything reaches the file in order; a
 * file system that stops taking data stops nothing but the writer thread
 * (the queue fills and drops, counted), and what was queued is written
 * once it moves again. */
static void test_record_queue(void **state)
{
    char dir[] = "/tmp/test_tui_recq.XXXXXX", path[128], err[BASE_ERRLEN];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/a.dprec", dir);
    tui_recq_t *q = tui_recq_open(path, 10, 0, err);
    assert_non_null(q);
    for (uint64_t i = 1; i <= 500; i++) {
        bus_msg_t *m = rec_msg(10, i);
        assert_int_equal(tui_recq_add(q, m, err), BASE_OK);
        bus_msg_destroy(&m);
    }
    struct tui_recq_stats rs;
    assert_int_equal(tui_recq_close(&q, &rs, err), BASE_OK);
    assert_null(q);
    assert_int_equal(rs.queued, 500);
    assert_int_equal(rs.written, 500);
    assert_int_equal(rs.dropped, 0);
    bus_recreader_t *r = bus_recreader_open(path, NULL, err);
    assert_non_null(r);
    struct bus_rec_frame f;
    enum base_dec dec;
    struct bus_limits lim = {0};
    uint64_t n = 0;
    while (bus_recreader_next(r, &f, &dec, err) == 1) {
        bus_msg_t *m = NULL;
        assert_int_equal(bus_msg_decode(f.frames, f.nframes, &lim, &m, err), BASE_DEC_OK);
        assert_int_equal(bus_msg_seq(m), ++n);
        bus_msg_destroy(&m);
    }
    assert_int_equal(n, 500);
    bus_recreader_destroy(&r);
    unlink(path);

    /* A FIFO nobody reads: the writer thread blocks, the console does not. */
    snprintf(path, sizeof path, "%s/stuck", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    int rd = open(path, O_RDONLY | O_NONBLOCK);
    assert_true(rd >= 0);
    q = tui_recq_open(path, 10, 1u << 20, err);
    assert_non_null(q);
    int64_t t0 = base_monotonic_ns();
    uint64_t ok = 0, dropped = 0;
    for (uint64_t i = 1; i <= 200; i++) {
        bus_msg_t *m = rec_msg(1024, i);
        int rc = tui_recq_add(q, m, err);
        assert_true(rc == BASE_OK || rc == BUS_DROPPED);
        ok += rc == BASE_OK;
        dropped += rc == BUS_DROPPED;
        bus_msg_destroy(&m);
    }
    /* 13 MB offered against a 64 KiB pipe and a 1 MiB queue, in well under
     * the time a blocked write would take to give up (none does). */
    assert_true(base_monotonic_ns() - t0 < 5000000000LL);
    assert_true(dropped > 100);
    tui_recq_stats(q, &rs, NULL);
    assert_int_equal(rs.dropped, dropped);
    assert_false(rs.failed);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, drain_fifo, &rd), 0);
    assert_int_equal(tui_recq_close(&q, &rs, err), BASE_OK);
    pthread_join(th, NULL);
    assert_int_equal(rs.written, ok);
    close(rd);
    unlink(path);

    /* A write that fails (a 64 KiB file size limit stands in for a full
     * disk): the console hears of it at its next message, with the reason. */
    snprintf(path, sizeof path, "%s/full.dprec", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {.rlim_cur = 64 * 1024, .rlim_max = 64 * 1024};
        setrlimit(RLIMIT_FSIZE, &rl);
        tui_recq_t *fq = tui_recq_open(path, 10, 0, err);
        int rc = BASE_OK;
        for (uint64_t i = 1; i <= 2000 && rc != BASE_ERR; i++) {
            bus_msg_t *m = rec_msg(64, i);
            rc = fq ? tui_recq_add(fq, m, err) : BASE_ERR;
            bus_msg_destroy(&m);
            if (rc != BASE_ERR)
                base_sleep_ns(1000000);
        }
        bool told = rc == BASE_ERR && strstr(err, "File too large") != NULL;
        struct tui_recq_stats fs = {0};
        int closed = tui_recq_close(&fq, &fs, err);
        _exit(told && closed == BASE_ERR && fs.failed && fs.written > 0 ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    unlink(path);
    rmdir(dir);
}

/* ---- collectives ---------------------------------------------------------------- */

static void test_coll_names(void **state)
{
    (void)state;
    char op[TUI_COLL_OP_LEN];
    struct {
        const char *name;
        bool device;
        const char *op;
    } cases[] = {
        {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", true, "allreduce"},
        {"ncclKernel_ReduceScatter_RING_LL_Sum_bf16", true, "reducescatter"},
        {"ncclDevKernel_AllGather_RING_LL", true, "allgather"},
        {"ncclDevKernel_Generic", true, "nccldevkernelgeneric"},
        {"allreduce", true, "allreduce"},
        {"allreduce", false, "allreduce"},
        {"nccl:all_reduce", false, "allreduce"},
        {"gloo:broadcast", false, "broadcast"},
        {"c10d::allreduce_", false, "allreduce"},
        {"nccl:_all_gather_base", false, "allgather"},
        {"ncclAllReduce", false, "allreduce"},
        {"record_param_comms", false, NULL},
        {"hipLaunchKernel", false, NULL},
        {"allreduce_grads_bucket", false, NULL}, /* a user's range that only mentions one */
        {"", true, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        int rc = tui_coll_op_of(cases[i].name, cases[i].device, op, sizeof op);
        if (cases[i].op == NULL) {
            assert_int_equal(rc, BASE_ERR);
        } else {
            assert_int_equal(rc, BASE_OK);
            assert_string_equal(op, cases[i].op);
        }
    }
}

/*
 * A model of nodes 1..n (reference 1) whose probe clocks are true time
 * minus off[n] (the node fits say so, ± unc) and whose trace clocks are
 * their probe clocks; each runs the simulated workload, fed in step by step.
 */
#define CN_MAX 8
struct coll_rig {
    tui_model_t *m;
    gpu_sim_t *sim[CN_MAX + 1];
    int64_t off[CN_MAX + 1];
    int n;
    int drop_node; /* events of this node's step drop_step are lost */
    uint64_t drop_step;
};

static int64_t rig_clock(void *ctx, int64_t t)
{
    return t - *(const int64_t *)ctx;
}

struct rig_fn {
    struct coll_rig *r;
    int node;
};

static void rig_msg(void *ctx, const gpu_msg_t *msg)
{
    struct rig_fn *f = ctx;
    if (msg->kind == GPU_MSG_NAMES)
        for (size_t i = 0; i < msg->nnames; i++)
            tui_model_add_name(f->r->m, (uint16_t)f->node, msg->pid, msg->name_ids[i],
                               msg->name_strs[i]);
    if (msg->kind != GPU_MSG_EV || msg->nev == 0)
        return;
    gpu_event_t *ev = xcalloc(msg->nev, sizeof *ev);
    size_t k = 0;
    int64_t p = 10000000, base = T0 - T0 % p;
    for (size_t i = 0; i < msg->nev; i++) {
        int64_t t = msg->ev[i].start_ns + f->r->off[f->node];
        bool drop = f->node == f->r->drop_node && (uint64_t)((t - base) / p) == f->r->drop_step;
        if (!drop)
            ev[k++] = msg->ev[i];
    }
    if (k)
        apply_events(f->r->m, (uint16_t)f->node, msg->pid, ev, k, T0);
    free(ev);
}

static void rig_init(struct coll_rig *r, int n, double unc, int straggler, int64_t late_ns,
                     int64_t jitter_ns)
{
    memset(r, 0, sizeof *r);
    r->m = tui_model_new(NULL);
    r->n = n;
    r->drop_node = -1;
    for (int i = 1; i <= n; i++) {
        r->off[i] = (i == 1) ? 0 : (int64_t)i * 1700000 - 4000000; /* ms apart */
        int64_t lo = T0 - 10000000000LL, hi = T0 + 10000000000LL;
        apply_ok(r->m, BUS_K_SNAP,
                 "{\"node\":%d,\"pid\":0,\"a\":\"trace\",\"b\":\"probe\",\"pairs\":[[%lld,%lld],"
                 "[%lld,%lld]]}",
                 i, (long long)lo, (long long)lo, (long long)hi, (long long)hi);
        apply_ok(r->m, BUS_K_NODE_FIT,
                 "{\"window\":1,\"node\":%d,\"ref\":1,\"anchor_ns\":%lld,\"offset_ns\":%lld,"
                 "\"drift_ppb\":0,\"uncertainty_ns\":%g,\"from_ns\":%lld,\"to_ns\":%lld,"
                 "\"aligned\":true}",
                 i, (long long)T0, (long long)r->off[i], i == 1 ? 0.0 : unc, (long long)lo,
                 (long long)hi);
        struct gpu_sim_cfg c;
        gpu_sim_defaults(&c);
        c.node = (uint16_t)i;
        c.pid = 100 + (uint32_t)i;
        c.step_period_ns = 10000000;
        c.straggler_node = straggler;
        c.straggler_late_ns = late_ns;
        c.jitter_ns = jitter_ns;
        char err[BASE_ERRLEN];
        r->sim[i] = gpu_sim_new(&c, rig_clock, &r->off[i], err);
        assert_non_null(r->sim[i]);
    }
}

static void rig_run(struct coll_rig *r, int steps)
{
    char err[BASE_ERRLEN];
    for (int s = 0; s <= steps; s++)
        for (int i = 1; i <= r->n; i++) {
            struct rig_fn f = {r, i};
            assert_true(gpu_sim_poll(r->sim[i], T0 + (int64_t)s * 10000000, rig_msg, &f, err) >= 0);
        }
}

static void rig_free(struct coll_rig *r)
{
    for (int i = 1; i <= r->n; i++)
        gpu_sim_destroy(&r->sim[i]);
    tui_model_destroy(&r->m);
}

static int part_node(const tui_coll_t *c, uint32_t part)
{
    struct tui_coll_part p;
    tui_coll_part(c, part, &p);
    return p.key.node;
}

/* The straggler named last in every instance, exactly as late as it is;
 * below the clocks' uncertainty, not called significant. */
static void test_coll_straggler(void **state)
{
    (void)state;
    const int64_t lates[] = {3000, 250000, 300};
    for (size_t li = 0; li < sizeof lates / sizeof *lates; li++) {
        struct coll_rig r;
        rig_init(&r, 4, 500, 3, lates[li], 0);
        rig_run(&r, 40);
        tui_coll_t *c = tui_coll_new(0);
        int got = tui_coll_update(c, r.m, true);
        assert_true(got >= 35);
        struct tui_coll_stats st;
        tui_coll_stats(c, &st);
        assert_int_equal(st.participants, 4); /* the kernels; host ranges left to them */
        assert_int_equal(st.partial + st.mismatch + st.unaligned, 0);
        /* the ± are 500 ns on both: together sqrt(2)·500 = 707 ns */
        bool significant = lates[li] > 707;
        for (size_t i = 0; i < tui_coll_nrecent(c); i++) {
            const struct tui_coll_inst *in = tui_coll_recent(c, i);
            assert_string_equal(in->op, "allreduce");
            assert_int_equal(in->n, 4);
            assert_int_equal(part_node(c, in->last_part), 3);
            assert_true(llabs(in->lateness_ns - lates[li]) <= 2);
            assert_true(llabs(in->skew_ns - lates[li]) <= 2);
            assert_true(fabs(in->unc_ns - 707.1) < 1);
            assert_int_equal(in->verdict, significant ? TUI_COLL_LATE : TUI_COLL_WITHIN);
            /* everyone ends together: the transfer is the last one's whole collective */
            assert_true(in->end_spread_ns <= 2);
            assert_true(llabs(in->transfer_ns - (in->arr[3].end - in->arr[3].start)) <= 0);
        }
        for (size_t p = 0; p < tui_coll_nparts(c); p++) {
            struct tui_coll_part pp;
            tui_coll_part(c, p, &pp);
            assert_int_equal(pp.instances, (uint64_t)got);
            if (pp.key.node == 3) {
                assert_int_equal(pp.last, (uint64_t)got);
                assert_int_equal(pp.late, significant ? (uint64_t)got : 0);
                assert_true(fabs(pp.ewma_late_ns - (double)lates[li]) < 3);
                assert_true(fabs(pp.p95_late_ns - (double)lates[li]) < 3);
            } else {
                assert_int_equal(pp.last, 0);
                assert_true(pp.mean_late_ns < 3);
            }
        }
        assert_true(fabs(tui_coll_node_score(c, 3) - (double)lates[li]) < 3);
        assert_true(tui_coll_node_score(c, 2) < 3);
        assert_true(isnan(tui_coll_node_score(c, 9)));
        /* Committed once: a second update finds nothing new. */
        assert_int_equal(tui_coll_update(c, r.m, true), 0);
        tui_coll_destroy(&c);
        assert_null(c);
        rig_free(&r);
    }
}

/* Random arrival jitter on every node: the last one named as the simulation
 * had it whenever its margin is beyond the clocks' uncertainty. */
static void test_coll_jitter(void **state)
{
    (void)state;
    struct coll_rig r;
    rig_init(&r, 6, 2000, -1, 0, 400000);
    rig_run(&r, 300);
    tui_coll_t *c = tui_coll_new(1024);
    int got = tui_coll_update(c, r.m, true);
    assert_true(got >= 290);
    size_t right = 0, called = 0, within = 0;
    for (size_t i = 0; i < tui_coll_nrecent(c); i++) {
        const struct tui_coll_inst *in = tui_coll_recent(c, i);
        assert_int_equal(in->n, 6);
        int truth = -1;
        int64_t best = INT64_MIN, second = INT64_MIN;
        for (int n = 1; n <= 6; n++) {
            int64_t ts, te;
            gpu_sim_collective_true(r.sim[n], in->step, &ts, &te);
            if (ts > best) {
                second = best;
                best = ts;
                truth = n;
            } else if (ts > second) {
                second = ts;
            }
        }
        assert_true(llabs(in->lateness_ns - (best - second)) <= 2);
        if (in->verdict == TUI_COLL_WITHIN) {
            within++;
            continue;
        }
        assert_int_equal(in->verdict, TUI_COLL_LATE);
        called++;
        right += part_node(c, in->last_part) == truth;
    }
    print_message("jitter: %zu of %zu significant calls right, %zu within uncertainty\n", right,
                  called, within);
    assert_true(called >= 250);
    assert_int_equal(right, called);
    tui_coll_destroy(&c);
    rig_free(&r);
}

static size_t count_lines(const char *buf, const char *needle)
{
    size_t n = 0;
    for (const char *p = buf; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

static void coll_to_file(void *ctx, const tui_coll_t *c, const struct tui_coll_inst *in)
{
    tui_coll_write_line(ctx, false, c, in);
}

/* A node missing from one instance: reported partial, with its name; one
 * step number said twice: its collectives left out, counted. */
static void test_coll_partial(void **state)
{
    (void)state;
    struct coll_rig r;
    rig_init(&r, 3, 500, 2, 5000, 0);
    r.drop_node = 3;
    r.drop_step = 10;
    rig_run(&r, 20);
    /* A second step 12 on node 1, begun just before step 18's collective. */
    gpu_event_t st = ev_make(GPU_EV_STEP, 1, 101, 0, 0, T0 + 186500000, T0 + 186600000);
    st.step = (uint64_t)(T0 / 10000000) + 12;
    apply_events(r.m, 1, 101, &st, 1, T0);
    tui_coll_t *c = tui_coll_new(0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tui_coll_set_sink(c, coll_to_file, f);
    int got = tui_coll_update(c, r.m, true);
    fclose(f);
    struct tui_coll_stats st2;
    tui_coll_stats(c, &st2);
    assert_true(got >= 15);
    assert_int_equal(st2.partial, 2);
    assert_int_equal(st2.dup_step_events, 1);
    assert_int_equal(count_lines(buf, "\"verdict\":\"partial\""), 2);
    assert_int_equal(count_lines(buf, "\"missing\":[\"n3\"]"), 1);
    assert_int_equal(count_lines(buf, "\"missing\":[\"n1\"]"), 1);
    assert_int_equal(count_lines(buf, "\"seq\":"), (size_t)got);
    /* every line is JSON */
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        json_object *o = json_tokener_parse(line);
        assert_non_null(o);
        json_object_put(o);
    }
    free(buf);
    tui_coll_destroy(&c);
    rig_free(&r);
}

/* Perfetto's format: a slice partly overlapping an open one on its track
 * goes to an overlap track (counted), nested ones stay; nothing is lost. */
static void test_pftrace_overlaps(void **state)
{
    (void)state;
    tui_model_t *m = tui_model_new(NULL);
    feed_two_nodes(m, true);
    int64_t s0 = 1001600000000LL;
    gpu_event_t ev[4];
    ev[0] = ev_make(GPU_EV_RANGE, 1, 10, 0, 1, s0, s0 + 100000);          /* A */
    ev[1] = ev_make(GPU_EV_RANGE, 1, 10, 0, 1, s0 + 50000, s0 + 150000);  /* B: overlaps A */
    ev[2] = ev_make(GPU_EV_RANGE, 1, 10, 0, 1, s0 + 60000, s0 + 70000);   /* C: inside A */
    ev[3] = ev_make(GPU_EV_INSTANT, 1, 10, 0, 1, s0 + 65000, s0 + 65000); /* a mark */
    apply_events(m, 1, 10, ev, 4, T0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    struct tui_pftrace_stats st;
    char err[BASE_ERRLEN];
    assert_int_equal(tui_pftrace_write(m, f, NULL, &st, err), BASE_OK);
    fclose(f);
    assert_int_equal(st.overlaps_split, 1);
    assert_int_equal(st.overlaps_dropped, 0);
    /* feed_two_nodes' 6 events, A, B and C */
    assert_int_equal(st.slices, 6 + 3);
    assert_int_equal(st.instants, 1);
    assert_int_equal(st.flows, 2); /* each node's launch -> kernel */
    assert_int_equal(st.bytes, len);
    /* The file is a Trace: packets (field 1, length-delimited) end to end. */
    size_t pos = 0, packets = 0;
    while (pos < len) {
        assert_int_equal(buf[pos], 0x0a);
        pos++;
        uint64_t n = 0;
        int shift = 0;
        while (buf[pos] & 0x80) {
            n |= (uint64_t)(buf[pos++] & 0x7f) << shift;
            shift += 7;
        }
        n |= (uint64_t)buf[pos++] << shift;
        pos += n;
        packets++;
    }
    assert_int_equal(pos, len);
    assert_int_equal(packets, st.packets);
    free(buf);

    /* The Chrome trace puts B on an overlap thread beside its own. */
    buf = NULL;
    len = 0;
    f = open_memstream(&buf, &len);
    struct tui_chrome_stats cs;
    struct tui_chrome_opts co = {.flows = true};
    assert_int_equal(tui_chrome_write(m, f, &co, &cs, err), BASE_OK);
    fclose(f);
    assert_int_equal(cs.overlaps_split, 1);
    assert_int_equal(cs.overlaps_dropped, 0);
    json_object *o = json_tokener_parse(buf);
    assert_non_null(o);
    json_object *evs = json_object_object_get(o, "traceEvents");
    int64_t over_tid = -1, b_tid = -2;
    for (size_t i = 0; i < json_object_array_length(evs); i++) {
        json_object *e = json_object_array_get_idx(evs, i);
        const char *ph = json_object_get_string(json_object_object_get(e, "ph"));
        int64_t tid = json_object_get_int64(json_object_object_get(e, "tid"));
        json_object *args = json_object_object_get(e, "args");
        if (strcmp(ph, "M") == 0 && args && json_object_object_get(args, "name") &&
            strstr(json_object_get_string(json_object_object_get(args, "name")), "(overlaps 1)"))
            over_tid = tid;
        if (strcmp(ph, "X") == 0 &&
            json_object_get_int64(json_object_object_get(args, "trace_ns")) == s0 + 50000)
            b_tid = tid;
    }
    assert_int_equal(over_tid, b_tid);
    json_object_put(o);
    free(buf);

    /* The XSpace too: B on an overlap line, counted. */
    buf = NULL;
    len = 0;
    f = open_memstream(&buf, &len);
    struct tui_xplane_opts xo = {.node = -1};
    struct tui_xplane_stats xs = {0};
    assert_int_equal(tui_xplane_write(m, NULL, f, &xo, &xs, err), BASE_OK);
    fclose(f);
    assert_int_equal(xs.overlaps_split, 1);
    assert_int_equal(xs.overlaps_dropped, 0);
    assert_non_null(memmem(buf, len, "(overlaps 1)", 12));
    free(buf);
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
        cmocka_unit_test(test_model_solve_loops),
        cmocka_unit_test(test_model_names_and_rejects),
        cmocka_unit_test(test_aligned_vs_raw),
        cmocka_unit_test(test_sort),
        cmocka_unit_test(test_chrome),
        cmocka_unit_test(test_json_escape),
        cmocka_unit_test(test_console_resize_and_keys),
        cmocka_unit_test(test_console_windows_title),
        cmocka_unit_test(test_pb_writer),
        cmocka_unit_test(test_scopes),
        cmocka_unit_test(test_xplane),
        cmocka_unit_test(test_winlog),
        cmocka_unit_test(test_export_format),
        cmocka_unit_test(test_name_filter),
        cmocka_unit_test(test_record_queue),
        cmocka_unit_test(test_coll_names),
        cmocka_unit_test(test_coll_straggler),
        cmocka_unit_test(test_coll_jitter),
        cmocka_unit_test(test_coll_partial),
        cmocka_unit_test(test_pftrace_overlaps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
