/*
 * XSpace (.xplane.pb) as JAX / TensorFlow write it per host, and as dptop's
 * own XSpace export writes it: the protobuf wire format read by hand, with
 * the field numbers of tsl/profiler/protobuf/xplane.proto (the ones
 * tui/xplane.c writes; docs/CONSOLE.md lists them).
 *
 *   XSpace   planes=1 hostnames=4 (errors=2, warnings=3 skipped)
 *   XPlane   id=1 name=2 lines=3 event_metadata=4 stat_metadata=5 stats=6
 *   XLine    id=1 name=2 timestamp_ns=3 events=4 duration_ps=9
 *            display_id=10 display_name=11
 *   XEvent   metadata_id=1 offset_ps=2 | num_occurrences=5 duration_ps=3 stats=4
 *   XStat    metadata_id=1 double=2 uint64=3 int64=4 str=5 bytes=6 ref=7
 *
 * A plane's lines come before its metadata on the wire (fields are written
 * in number order), so a whole plane is read into memory, its names
 * collected, then its lines walked: memory follows the largest plane (at
 * most IMP_MAX_PLANE bytes), not the file.
 *
 * Times: an event starts at its line's timestamp_ns + offset_ps / 1000 on
 * the host's CLOCK_REALTIME.  Saved profiles of TensorFlow / JAX count
 * timestamp_ns from the session's start (the profiler normalises them
 * before saving); the "Task Environment" plane's profile_start_time stat
 * gives that start.  Files whose times are absolute (dptop's own) need none.
 */
#include "tui/import_int.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define IMP_MAX_PLANE (1ull << 30)
#define MAX_STR       65536
#define ABS_MIN_NS    100000000000000000LL /* 1973: earlier times are not absolute */
#define TASK_ENV      "Task Environment"

/* ---- a bounded reader of protobuf fields ------------------------------------- */

struct pb {
    const uint8_t *p, *end, *start;
};

static int pb_varint(struct pb *b, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (b->p >= b->end)
            return BASE_ERR;
        uint8_t c = *b->p++;
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = x;
            return BASE_OK;
        }
    }
    return BASE_ERR; /* more than 10 bytes */
}

/* The next field: its number, wire type, and (LEN) its bytes or (others) value. */
struct pb_field {
    uint32_t num;
    unsigned wire;
    uint64_t v;
    struct pb sub;
};

/* 1 a field, 0 the end, BASE_ERR malformed (err says which and where). */
static int pb_next(struct pb *b, struct pb_field *f, const char *what, char *err)
{
    if (b->p >= b->end)
        return 0;
    size_t at = (size_t)(b->p - b->start);
    uint64_t tag;
    if (pb_varint(b, &tag) != BASE_OK)
        return base_err(err, "%s: a truncated varint at byte %zu", what, at);
    f->num = (uint32_t)(tag >> 3);
    f->wire = (unsigned)(tag & 7);
    if (f->num == 0)
        return base_err(err, "%s: field number 0 at byte %zu", what, at);
    switch (f->wire) {
    case 0:
        if (pb_varint(b, &f->v) != BASE_OK)
            return base_err(err, "%s: a truncated varint at byte %zu", what, at);
        return 1;
    case 1:
    case 5: {
        size_t n = f->wire == 1 ? 8 : 4;
        if ((size_t)(b->end - b->p) < n)
            return base_err(err, "%s: a fixed field cut short at byte %zu", what, at);
        f->v = 0;
        for (size_t i = 0; i < n; i++)
            f->v |= (uint64_t)b->p[i] << (8 * i);
        b->p += n;
        return 1;
    }
    case 2: {
        uint64_t len;
        if (pb_varint(b, &len) != BASE_OK)
            return base_err(err, "%s: a truncated length at byte %zu", what, at);
        if (len > (uint64_t)(b->end - b->p))
            return base_err(err, "%s: a length of %" PRIu64 " bytes at byte %zu, past the end",
                            what, len, at);
        f->sub = (struct pb){b->p, b->p + len, b->start};
        b->p += len;
        return 1;
    }
    default:
        return base_err(err, "%s: wire type %u (groups are not used by XSpace) at byte %zu", what,
                        f->wire, at);
    }
}

static int want(const struct pb_field *f, unsigned wire, const char *what, char *err)
{
    if (f->wire != wire)
        return base_err(err, "%s: field %u has wire type %u, not %u", what, f->num, f->wire, wire);
    return BASE_OK;
}

/* A line time plus an offset and a duration, all within ±2^62 ns. */
static bool time_ok(int64_t ts, uint64_t off_ps, uint64_t dur_ps)
{
    const int64_t lim = INT64_C(1) << 62;
    return ts > -lim && ts < lim && off_ps / 1000 < (uint64_t)lim &&
           dur_ps / 1000 < (uint64_t)lim &&
           ts + (int64_t)(off_ps / 1000) + (int64_t)(dur_ps / 1000) < lim;
}

/* ---- names of a plane ------------------------------------------------------------ */

struct meta {
    int64_t id;
    char *name;
};

struct plane_names {
    struct meta *ev, *st;
    size_t nev, nst;
};

static int cmp_meta(const void *a, const void *b)
{
    int64_t x = ((const struct meta *)a)->id, y = ((const struct meta *)b)->id;
    return (x > y) - (x < y);
}

static const char *meta_name(const struct meta *m, size_t n, int64_t id)
{
    struct meta key = {id, NULL};
    const struct meta *r = n ? bsearch(&key, m, n, sizeof *m, cmp_meta) : NULL;
    return r ? r->name : NULL;
}

static void names_free(struct plane_names *nm)
{
    for (size_t i = 0; i < nm->nev; i++)
        free(nm->ev[i].name);
    for (size_t i = 0; i < nm->nst; i++)
        free(nm->st[i].name);
    free(nm->ev);
    free(nm->st);
    memset(nm, 0, sizeof *nm);
}

static char *pb_strdup(const struct pb *s)
{
    size_t n = (size_t)(s->end - s->p);
    return xstrndup((const char *)s->p, n > MAX_STR ? MAX_STR : n);
}

/* map<int64, XEventMetadata | XStatMetadata> entry: key=1, value=2 {id=1, name=2, display_name=4}.
 */
static int read_meta_entry(struct pb entry, struct meta **list, size_t *n, const char *what,
                           char *err)
{
    struct pb_field f, g;
    int r;
    int64_t key = 0;
    char *name = NULL, *display = NULL;
    while ((r = pb_next(&entry, &f, what, err)) == 1) {
        if (f.num == 1 && f.wire == 0)
            key = (int64_t)f.v;
        if (f.num != 2)
            continue;
        if (want(&f, 2, what, err) != BASE_OK)
            goto bad;
        struct pb val = f.sub;
        while ((r = pb_next(&val, &g, what, err)) == 1) {
            if ((g.num == 2 || g.num == 4) && g.wire != 2) {
                want(&g, 2, what, err);
                goto bad;
            }
            if (g.num == 2) {
                free(name);
                name = pb_strdup(&g.sub);
            } else if (g.num == 4) {
                free(display);
                display = pb_strdup(&g.sub);
            }
        }
        if (r < 0)
            goto bad;
    }
    if (r < 0)
        goto bad;
    if ((*n & (*n - 1)) == 0) /* 0, 1, 2, 4, ...: grow to the next power of two */
        *list = xreallocarray(*list, *n ? 2 * *n : 1, sizeof **list);
    (*list)[(*n)++] = (struct meta){key, display && display[0] ? display
                                         : name                ? name
                                                               : xstrdup("")};
    if (display && display[0])
        free(name);
    else
        free(display);
    return BASE_OK;
bad:
    free(name);
    free(display);
    return BASE_ERR;
}

static int plane_names(struct pb plane, struct plane_names *nm, char **pname, char *err)
{
    struct pb_field f;
    int r;
    while ((r = pb_next(&plane, &f, "XPlane", err)) == 1) {
        if (f.num == 2) {
            if (want(&f, 2, "XPlane name", err) != BASE_OK)
                return BASE_ERR;
            free(*pname);
            *pname = pb_strdup(&f.sub);
        } else if (f.num == 4 || f.num == 5) {
            if (want(&f, 2, "XPlane metadata", err) != BASE_OK ||
                read_meta_entry(f.sub, f.num == 4 ? &nm->ev : &nm->st,
                                f.num == 4 ? &nm->nev : &nm->nst, "XPlane metadata",
                                err) != BASE_OK)
                return BASE_ERR;
        }
    }
    if (r < 0)
        return BASE_ERR;
    if (nm->nev > 1)
        qsort(nm->ev, nm->nev, sizeof *nm->ev, cmp_meta);
    if (nm->nst > 1)
        qsort(nm->st, nm->nst, sizeof *nm->st, cmp_meta);
    return BASE_OK;
}

/* ---- the file's planes ------------------------------------------------------------ */

struct xs_state {
    int64_t start_ns; /* Task Environment's profile_start_time, 0: none */
    bool relative;    /* the lines' times count from it */
};

typedef int (*plane_fn)(struct imp_file *f, struct imp_ctx *ctx, struct pb plane, char *err);

static int gz_varint(gzFile gz, uint64_t *v, bool *eof)
{
    uint64_t x = 0;
    *eof = false;
    for (int shift = 0; shift < 64; shift += 7) {
        int c = gzgetc(gz);
        if (c < 0) {
            /* The end of the data, or damaged gzip data: only the first is an end. */
            int code;
            gzerror(gz, &code);
            *eof = shift == 0 && (code == Z_OK || code == Z_STREAM_END);
            return BASE_ERR;
        }
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = x;
            return BASE_OK;
        }
    }
    return BASE_ERR;
}

/* Every top-level field of the XSpace: planes to fn, one in memory at a time. */
static int walk(struct imp_file *f, struct imp_ctx *ctx, plane_fn fn, char *err)
{
    gzFile gz = gzopen(f->path, "rb");
    if (gz == NULL)
        return base_err(err, "%s: cannot open", f->path);
    gzbuffer(gz, 1u << 20);
    uint8_t *buf = NULL;
    int rc = BASE_ERR;
    uint64_t off = 0;
    for (;;) {
        uint64_t tag, len;
        bool eof;
        off = (uint64_t)gztell(gz);
        if (gz_varint(gz, &tag, &eof) != BASE_OK) {
            if (eof) {
                rc = BASE_OK;
                break;
            }
            int code;
            const char *msg = gzerror(gz, &code);
            base_err(err, "%s: %s at byte %" PRIu64, f->path,
                     code != Z_OK && code != Z_STREAM_END ? msg : "a truncated XSpace field tag",
                     off);
            break;
        }
        if ((tag & 7) != 2) {
            base_err(err,
                     "%s: XSpace field %" PRIu64 " with wire type %u at byte %" PRIu64
                     " (all its fields are length-delimited)",
                     f->path, tag >> 3, (unsigned)(tag & 7), off);
            break;
        }
        if (gz_varint(gz, &len, &eof) != BASE_OK) {
            base_err(err, "%s: a truncated length at byte %" PRIu64, f->path, off);
            break;
        }
        uint64_t limit = (tag >> 3) == 1 ? IMP_MAX_PLANE : MAX_STR;
        if (len > limit) {
            base_err(err,
                     "%s: a field of %" PRIu64 " bytes at byte %" PRIu64 " (more than the %" PRIu64
                     " read)",
                     f->path, len, off, limit);
            break;
        }
        /* Grown as the bytes come, so a length that lies costs no more
         * memory than the file holds. */
        free(buf);
        size_t cap = len < (16u << 20) ? (size_t)len + 1 : 16u << 20;
        buf = xmalloc(cap);
        uint64_t got = 0;
        int n = 1;
        while (got < len && n > 0) {
            if (got == cap) {
                cap = cap * 2 > len ? (size_t)len : cap * 2;
                buf = xrealloc(buf, cap);
            }
            size_t want = cap - (size_t)got;
            if (want > len - got)
                want = (size_t)(len - got); /* not a byte of the next field */
            n = gzread(gz, buf + got, (unsigned)(want > (1u << 30) ? 1u << 30 : want));
            if (n > 0)
                got += (uint64_t)n;
        }
        if (n < 0 || got != len) {
            int code;
            const char *msg = gzerror(gz, &code);
            base_err(err, "%s: %s at byte %" PRIu64 " (a field of %" PRIu64 " bytes)", f->path,
                     n < 0 ? msg : "the file ends early", off, len);
            break;
        }
        struct pb sub = {buf, buf + len, buf};
        if ((tag >> 3) == 4 && ctx == NULL && f->host[0] == '\0')
            snprintf(f->host, sizeof f->host, "%.*s", (int)len, (const char *)buf);
        char inner[BASE_ERRLEN];
        if ((tag >> 3) == 1 && fn(f, ctx, sub, inner) != BASE_OK) {
            /* Offsets inside a plane count from its first byte. */
            base_err(err, "%s: %s (in the plane at byte %" PRIu64 ")", f->path, inner, off);
            break;
        }
    }
    free(buf);
    gzclose(gz);
    return rc;
}

/* Pass 1 of a plane: the Task Environment's start, the span of the events. */
static int scan_plane(struct imp_file *f, struct imp_ctx *ctx, struct pb plane, char *err)
{
    (void)ctx;
    struct xs_state *xs = f->priv;
    struct plane_names nm = {0};
    char *pname = NULL;
    int rc = plane_names(plane, &nm, &pname, err);
    struct pb_field fl, fe, fx;
    struct pb p = plane;
    int r = 0;
    bool env = pname && strcmp(pname, TASK_ENV) == 0;
    /* Planes emit_plane leaves out do not count either. */
    bool skip_plane = pname == NULL || env || strstr(pname, "__ScopeRangeCallStack__");
    while (rc == BASE_OK && (r = pb_next(&p, &fl, "XPlane", err)) == 1) {
        if (env && fl.num == 6 && fl.wire == 2) { /* XStat: profile_start_time */
            struct pb s = fl.sub;
            int64_t id = -1;
            uint64_t val = 0;
            while ((r = pb_next(&s, &fx, "XStat", err)) == 1)
                if (fx.num == 1 && fx.wire == 0)
                    id = (int64_t)fx.v;
                else if ((fx.num == 3 || fx.num == 4) && fx.wire == 0)
                    val = fx.v;
            const char *sn = meta_name(nm.st, nm.nst, id);
            if (sn && strcmp(sn, "profile_start_time") == 0)
                xs->start_ns = (int64_t)val;
        }
        if (fl.num != 3)
            continue;
        if (want(&fl, 2, "XPlane lines", err) != BASE_OK) {
            rc = BASE_ERR;
            break;
        }
        struct pb line = fl.sub;
        int64_t ts = 0;
        while ((r = pb_next(&line, &fe, "XLine", err)) == 1)
            if (fe.num == 3 && fe.wire == 0)
                ts = (int64_t)fe.v;
        if (r < 0) {
            rc = BASE_ERR;
            break;
        }
        line = fl.sub;
        while ((r = pb_next(&line, &fe, "XLine", err)) == 1) {
            if (fe.num != 4)
                continue;
            if (want(&fe, 2, "XLine events", err) != BASE_OK) {
                r = BASE_ERR;
                break;
            }
            struct pb ev = fe.sub;
            uint64_t off_ps = 0, dur_ps = 0;
            bool aggregate = false;
            while ((r = pb_next(&ev, &fx, "XEvent", err)) == 1)
                if (fx.num == 2 && fx.wire == 0)
                    off_ps = fx.v;
                else if (fx.num == 3 && fx.wire == 0)
                    dur_ps = fx.v;
                else if (fx.num == 5)
                    aggregate = true; /* num_occurrences: no time of its own */
            if (r < 0)
                break;
            if (aggregate || skip_plane)
                continue;
            if (!time_ok(ts, off_ps, dur_ps)) {
                r = base_err(err,
                             "XEvent: a time out of range (line at %" PRId64 " ns, offset %" PRIu64
                             " ps)",
                             ts, off_ps);
                break;
            }
            int64_t t0 = ts + (int64_t)(off_ps / 1000), t1 = t0 + (int64_t)(dur_ps / 1000);
            if (t0 < f->raw_min)
                f->raw_min = t0;
            if (t1 > f->raw_max)
                f->raw_max = t1;
            f->events++;
        }
        if (r < 0)
            rc = BASE_ERR;
    }
    if (r < 0)
        rc = BASE_ERR;
    free(pname);
    names_free(&nm);
    return rc;
}

/* One stat as a JSON member appended to args ("name":value), or nothing
 * when it does not fit whole: escaped text is never cut. */
static void put_stat(char *args, size_t cap, const struct plane_names *nm, struct pb s, char *err)
{
    struct pb_field f;
    int64_t id = -1;
    char *val = NULL;
    size_t vlen = 0;
    FILE *vf = open_memstream(&val, &vlen);
    if (vf == NULL)
        return;
    bool have = false;
    int r;
    while ((r = pb_next(&s, &f, "XStat", err)) == 1) {
        if (f.num == 1 && f.wire == 0) {
            id = (int64_t)f.v;
            continue;
        }
        bool str = f.num == 5 && f.wire == 2, ref = f.num == 7 && f.wire == 0;
        if (!(f.num == 2 && f.wire == 1) && !(f.num == 3 && f.wire == 0) &&
            !(f.num == 4 && f.wire == 0) && !str && !ref)
            continue; /* bytes, or a value of a wire type its field does not have */
        rewind(vf);
        if (f.num == 2) {
            double d;
            memcpy(&d, &f.v, sizeof d);
            fprintf(vf, isfinite(d) ? "%.17g" : "null", d);
        } else if (f.num == 3) {
            fprintf(vf, "%" PRIu64, f.v);
        } else if (f.num == 4) {
            fprintf(vf, "%" PRId64, (int64_t)f.v);
        } else {
            /* A reference's value is the name of the stat metadata it names. */
            char text[512];
            const char *rn = ref ? meta_name(nm->st, nm->nst, (int64_t)f.v) : NULL;
            snprintf(text, sizeof text, "%.*s", ref ? 511 : (int)(f.sub.end - f.sub.p),
                     ref ? (rn ? rn : "") : (const char *)f.sub.p);
            tui_json_str(vf, text);
        }
        fputc('\0', vf);
        have = true;
    }
    fclose(vf);
    const char *name = meta_name(nm->st, nm->nst, id);
    if (r >= 0 && have && name) {
        char *m = NULL;
        size_t ml = 0;
        FILE *mf = open_memstream(&m, &ml);
        if (mf) {
            tui_json_str(mf, name);
            fclose(mf);
            size_t used = strlen(args);
            if (used + ml + strlen(val) + 3 < cap)
                snprintf(args + used, cap - used, "%s%s:%s", used ? "," : "", m, val);
            free(m);
        }
    }
    free(val);
}

/* Pass 2 of a plane: every event, on a lane of its own per plane. */
static int emit_plane(struct imp_file *f, struct imp_ctx *ctx, struct pb plane, char *err)
{
    struct xs_state *xs = f->priv;
    struct plane_names nm = {0};
    char *pname = NULL;
    int rc = plane_names(plane, &nm, &pname, err);
    if (rc != BASE_OK || pname == NULL || strcmp(pname, TASK_ENV) == 0 ||
        strstr(pname, "__ScopeRangeCallStack__")) {
        free(pname);
        names_free(&nm);
        return rc;
    }
    struct imp_pid *lane = imp_pid(f, pname, strlen(pname));
    lane->device = strncmp(pname, "/device:", 8) == 0;
    bool device = lane->device;
    struct pb p = plane;
    struct pb_field fl, fe, fx;
    int r;
    char args[2048], tid[32], fallback[40];
    while (rc == BASE_OK && (r = pb_next(&p, &fl, "XPlane", err)) == 1) {
        if (fl.num != 3 || fl.wire != 2)
            continue;
        struct pb line = fl.sub;
        int64_t ts = 0, lid = 0;
        char lname[128] = "";
        while ((r = pb_next(&line, &fe, "XLine", err)) == 1)
            if (fe.num == 3 && fe.wire == 0)
                ts = (int64_t)fe.v;
            else if (fe.num == 1 && fe.wire == 0)
                lid = (int64_t)fe.v;
            else if ((fe.num == 2 || (fe.num == 11 && lname[0] == '\0')) && fe.wire == 2)
                snprintf(lname, sizeof lname, "%.*s", (int)(fe.sub.end - fe.sub.p),
                         (const char *)fe.sub.p);
        if (xs->relative)
            ts += xs->start_ns;
        snprintf(tid, sizeof tid, "%" PRId64, lid);
        if (lname[0])
            imp_emit_thread_name(ctx, lane, tid, lname);
        line = fl.sub;
        while ((r = pb_next(&line, &fe, "XLine", err)) == 1) {
            if (fe.num != 4 || fe.wire != 2)
                continue;
            struct pb ev = fe.sub;
            uint64_t off_ps = 0, dur_ps = 0;
            int64_t mid = 0;
            bool aggregate = false;
            args[0] = '\0';
            while ((r = pb_next(&ev, &fx, "XEvent", err)) == 1) {
                if (fx.num == 1 && fx.wire == 0)
                    mid = (int64_t)fx.v;
                else if (fx.num == 2 && fx.wire == 0)
                    off_ps = fx.v;
                else if (fx.num == 3 && fx.wire == 0)
                    dur_ps = fx.v;
                else if (fx.num == 4 && fx.wire == 2)
                    put_stat(args, sizeof args, &nm, fx.sub, err);
                else if (fx.num == 5)
                    aggregate = true;
            }
            if (aggregate || !time_ok(ts, off_ps, dur_ps))
                continue; /* pass 1 refused a time out of range */
            const char *name = meta_name(nm.ev, nm.nev, mid);
            snprintf(fallback, sizeof fallback, "event#%" PRId64, mid);
            int64_t t0 = ts + (int64_t)(off_ps / 1000);
            imp_emit_x(ctx, f, lane, tid, device ? "device" : "host", name ? name : fallback, t0,
                       t0 + (int64_t)(dur_ps / 1000), args);
        }
    }
    free(pname);
    names_free(&nm);
    return rc;
}

static void xs_release(struct imp_file *f)
{
    free(f->priv);
    f->priv = NULL;
}

static bool xs_detect(const char *head, size_t n)
{
    /* A plane (field 1) or a host name (field 4), length-delimited, whose
     * length fits; a plane's first field is its id, name or a line. */
    if (n < 3 || ((uint8_t)head[0] != 0x0a && (uint8_t)head[0] != 0x22))
        return false;
    struct pb b = {(const uint8_t *)head + 1, (const uint8_t *)head + n, (const uint8_t *)head};
    uint64_t len;
    if (pb_varint(&b, &len) != BASE_OK || len == 0 || b.p >= b.end)
        return false;
    uint8_t first = *b.p;
    if ((uint8_t)head[0] == 0x22)
        return first >= 0x20 && first < 0x7f;
    return first == 0x08 || first == 0x12 || first == 0x1a || first == 0x22 || first == 0x2a ||
           first == 0x32;
}

static int xs_scan(struct imp_file *f, char *err)
{
    xs_release(f);
    struct xs_state *xs = xcalloc(1, sizeof *xs);
    f->priv = xs;
    if (walk(f, NULL, scan_plane, err) != BASE_OK)
        return BASE_ERR;
    f->domain = CLOCK_DOMAIN_PROBE;
    f->domain_name = "realtime";
    if (f->events && f->raw_min < ABS_MIN_NS) {
        /* Times from the session's start: add it, from the file or the user. */
        int64_t start = xs->start_ns ? xs->start_ns : f->start_given ? f->start_ns : 0;
        if (start == 0) {
            const char *bn = strrchr(f->path, '/');
            return base_err(err,
                            "%s: times count from the profile's start and the file has no "
                            "Task Environment profile_start_time; give it: --import FILE@NS",
                            bn ? bn + 1 : f->path);
        }
        if (start < 0 || start > (INT64_C(1) << 62))
            return base_err(err, "%s: a profile start of %" PRId64 " ns is out of range", f->path,
                            start);
        xs->relative = true;
        xs->start_ns = start;
        f->base_ns = start;
        f->raw_min += start;
        f->raw_max += start;
    }
    snprintf(f->variant, sizeof f->variant, "XSpace%s%.40s, times %s", f->host[0] ? " of " : "",
             f->host, xs->relative ? "from profile_start_time" : "absolute");
    return BASE_OK;
}

static int xs_emit(struct imp_file *f, struct imp_ctx *ctx, char *err)
{
    return walk(f, ctx, emit_plane, err);
}

const struct imp_format imp_xplane = {
    .name = "xspace",
    .what = "XSpace .xplane.pb (JAX, TensorFlow, dptop's own export)",
    .detect = xs_detect,
    .scan = xs_scan,
    .emit = xs_emit,
    .release = xs_release,
};
