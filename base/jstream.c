/*
 * Streaming JSON for traces of hundreds of megabytes: the file (plain or
 * gzip, told apart by content) is read through a window that holds one
 * value at a time, and each value handed out has been validated (RFC 8259,
 * plus the NaN / Infinity tokens Python writes) before the caller sees it.
 * Nothing is built: the caller walks a value's members in place and copies
 * what it keeps.
 *
 * Why not json-c's incremental tokener: it still builds the document, and a
 * 200 MB trace would become gigabytes of json_objects.  Why validate here:
 * the importers copy values they do not understand verbatim into their
 * output, so what they copy must already be known to be JSON.
 */
#include "base/base.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <string.h>
#include <zlib.h>

#define CHUNK     (4u << 20)
#define MAX_DEPTH 512

struct base_jstream {
    gzFile gz;
    char *buf;
    size_t cap, pos, len, limit;
    uint64_t base; /* stream offset of buf[0] */
    bool eof, gzip;
    char path[200];
};

enum scan { SCAN_OK, SCAN_MORE, SCAN_BAD };

base_jstream_t *base_jstream_open(const char *path, size_t max_value, char *err)
{
    assert(path);
    gzFile gz = gzopen(path, "rb");
    if (gz == NULL)
        return base_err(err, "%s: %s", path, errno ? strerror(errno) : "cannot open"), NULL;
    gzbuffer(gz, 1u << 20);
    base_jstream_t *self = xcalloc(1, sizeof *self);
    self->gz = gz;
    self->limit = max_value < 1024 ? 1024 : max_value;
    self->cap = CHUNK;
    self->buf = xmalloc(self->cap + 1);
    snprintf(self->path, sizeof self->path, "%s", path);
    /* gzread reads a file without the gzip header as it is: say which it was. */
    if (base_jstream_peek(self, NULL, NULL, err) != BASE_OK) {
        base_jstream_destroy(&self);
        return NULL;
    }
    self->gzip = gzdirect(gz) == 0;
    return self;
}

void base_jstream_destroy(base_jstream_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    base_jstream_t *self = *self_p;
    if (self->gz)
        gzclose(self->gz);
    free(self->buf);
    free(self);
    *self_p = NULL;
}

bool base_jstream_gzip(const base_jstream_t *self)
{
    assert(self);
    return self->gzip;
}

uint64_t base_jstream_offset(const base_jstream_t *self)
{
    assert(self);
    return self->base + self->pos;
}

/* zlib's message, without the file name gzerror puts in front of it. */
static const char *gz_msg(base_jstream_t *self, int *code)
{
    const char *msg = gzerror(self->gz, code);
    size_t l = strlen(self->path);
    if (msg && strncmp(msg, self->path, l) == 0 && msg[l] == ':' && msg[l + 1] == ' ')
        msg += l + 2;
    return msg ? msg : "?";
}

/* More bytes after len: keep buf[pos..len), grow when one value needs it. */
static int fill(base_jstream_t *self, char *err)
{
    if (self->eof)
        return BASE_OK;
    if (self->pos > 0 && (self->pos >= self->cap / 2 || self->len == self->cap)) {
        memmove(self->buf, self->buf + self->pos, self->len - self->pos);
        self->base += self->pos;
        self->len -= self->pos;
        self->pos = 0;
    }
    if (self->len == self->cap) {
        if (self->cap >= self->limit + CHUNK)
            return base_err(err, "%s: a value at byte %llu is larger than %zu bytes", self->path,
                            (unsigned long long)self->base, self->limit);
        self->cap *= 2;
        self->buf = xrealloc(self->buf, self->cap + 1);
    }
    size_t want = self->cap - self->len;
    if (want > INT32_MAX / 2)
        want = INT32_MAX / 2;
    int n = gzread(self->gz, self->buf + self->len, (unsigned)want);
    if (n < 0) {
        int code;
        const char *msg = gz_msg(self, &code);
        return base_err(err, "%s: %s%s (reading at byte %llu of its %s)", self->path,
                        code == Z_ERRNO ? strerror(errno) : msg,
                        code == Z_ERRNO ? "" : ": damaged gzip data",
                        (unsigned long long)(self->base + self->len),
                        gzdirect(self->gz) ? "bytes" : "decompressed bytes");
    }
    if (n == 0) {
        /* A gzip stream cut short reads as a short file with no error from
         * gzread in some zlib versions; gzerror says Z_BUF_ERROR then. */
        int code;
        const char *msg = gz_msg(self, &code);
        if (code != Z_OK && code != Z_STREAM_END)
            return base_err(err, "%s: %s (gzip data cut short or damaged)", self->path, msg);
        self->eof = true;
    }
    self->len += (size_t)n;
    self->buf[self->len] = '\0'; /* the window is a string too, for callers that peek */
    return BASE_OK;
}

int base_jstream_peek(base_jstream_t *self, const char **p, size_t *n, char *err)
{
    assert(self);
    while (self->len - self->pos < 4096 && !self->eof)
        if (fill(self, err) != BASE_OK)
            return BASE_ERR;
    if (p)
        *p = self->buf + self->pos;
    if (n)
        *n = self->len - self->pos;
    return BASE_OK;
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* Skip whitespace, reading on; the next byte, or -1 at the end of input. */
static int next_byte(base_jstream_t *self, char *err)
{
    for (;;) {
        while (self->pos < self->len && is_ws(self->buf[self->pos]))
            self->pos++;
        if (self->pos < self->len)
            return (unsigned char)self->buf[self->pos];
        if (self->eof)
            return -1;
        if (fill(self, err) != BASE_OK)
            return -2;
    }
}

size_t base_utf8_len(const unsigned char *p, const unsigned char *end)
{
    if (p >= end)
        return 0;
    unsigned char c = p[0];
    if (c < 0x80)
        return 1;
    size_t len = c >= 0xf0 && c <= 0xf4  ? 4
                 : c >= 0xe0 && c < 0xf0 ? 3
                 : c >= 0xc2 && c < 0xe0 ? 2
                                         : 0;
    if (len == 0 || (size_t)(end - p) < len)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if (len == 3 && ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0)))
        return 0;
    if (len == 4 && ((c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] >= 0x90)))
        return 0;
    return len;
}

static bool hex4(const unsigned char *p)
{
    for (int i = 0; i < 4; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || ((p[i] | 0x20) >= 'a' && (p[i] | 0x20) <= 'f')))
            return false;
    return true;
}

/*
 * Validate one value at s[i..n).  SCAN_MORE: the input ends inside it (or
 * right after a number, which the next byte could still extend).  Sets
 * *clean false when the value holds bytes that are not valid UTF-8 inside
 * a string or a NaN / Infinity token: a copy must then be sanitised.
 */
static enum scan scan_value(const char *s, size_t n, size_t i, size_t *end, bool *clean, bool final,
                            size_t *bad_at)
{
    const unsigned char *u = (const unsigned char *)s;
    uint8_t stack[MAX_DEPTH]; /* '{' or '[' */
    size_t depth = 0;
    /* state: 0 expect value, 1 after value (expect , or close), 2 expect key (or } when empty) */
    int state = 0;
    bool empty = false; /* just after an opening bracket */
    for (;;) {
        while (i < n && is_ws(s[i]))
            i++;
        if (i >= n)
            return SCAN_MORE;
        unsigned char c = u[i];
        if (state == 1) {
            if (depth == 0) {
                *end = i;
                return SCAN_OK;
            }
            if (c == ',') {
                i++;
                state = stack[depth - 1] == '{' ? 2 : 0;
                empty = false;
                continue;
            }
            if ((c == '}' && stack[depth - 1] == '{') || (c == ']' && stack[depth - 1] == '[')) {
                i++;
                depth--;
                state = 1;
                if (depth == 0) {
                    *end = i;
                    return SCAN_OK;
                }
                continue;
            }
            *bad_at = i;
            return SCAN_BAD;
        }
        if (state == 2 || (state == 0 && empty && c == ']')) {
            if (empty &&
                ((c == '}' && stack[depth - 1] == '{') || (c == ']' && stack[depth - 1] == '['))) {
                i++;
                depth--;
                state = 1;
                empty = false;
                if (depth == 0) {
                    *end = i;
                    return SCAN_OK;
                }
                continue;
            }
            if (state == 2 && c != '"') {
                *bad_at = i;
                return SCAN_BAD;
            }
        }
        empty = false;
        bool key = state == 2;
        if (c == '"') {
            i++;
            for (;;) {
                if (i >= n)
                    return SCAN_MORE;
                unsigned char d = u[i];
                if (d == '"')
                    break;
                if (d < 0x20) {
                    *bad_at = i;
                    return SCAN_BAD;
                }
                if (d == '\\') {
                    if (i + 1 >= n)
                        return SCAN_MORE;
                    unsigned char e = u[i + 1];
                    if (e == 'u') {
                        if (i + 6 > n)
                            return SCAN_MORE;
                        if (!hex4(u + i + 2)) {
                            *bad_at = i;
                            return SCAN_BAD;
                        }
                        i += 6;
                        continue;
                    }
                    if (!strchr("\"\\/bfnrt", e) || e == 0) {
                        *bad_at = i;
                        return SCAN_BAD;
                    }
                    i += 2;
                    continue;
                }
                if (d >= 0x80) {
                    size_t l = base_utf8_len(u + i, u + n);
                    if (l == 0) {
                        if (n - i < 4 && !final)
                            return SCAN_MORE; /* a sequence the next read completes */
                        *clean = false;
                        l = 1;
                    }
                    i += l;
                    continue;
                }
                i++;
            }
            i++; /* the closing quote */
            if (!key && depth == 0) {
                *end = i;
                return SCAN_OK;
            }
            if (key) {
                while (i < n && is_ws(s[i]))
                    i++;
                if (i >= n)
                    return SCAN_MORE;
                if (s[i] != ':') {
                    *bad_at = i;
                    return SCAN_BAD;
                }
                i++;
                state = 0;
                continue;
            }
            state = 1;
            continue;
        }
        if (c == '{' || c == '[') {
            if (depth == MAX_DEPTH) {
                *bad_at = i;
                return SCAN_BAD;
            }
            stack[depth++] = c;
            i++;
            state = c == '{' ? 2 : 0;
            empty = true;
            continue;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            size_t j = i;
            if (u[j] == '-')
                j++;
            if (j < n && (s[j] == 'I')) { /* -Infinity */
                i = j;
                c = 'I';
                goto literal;
            }
            if (j >= n)
                return final ? (*bad_at = i, SCAN_BAD) : SCAN_MORE;
            if (s[j] == '0')
                j++;
            else if (s[j] >= '1' && s[j] <= '9')
                while (j < n && s[j] >= '0' && s[j] <= '9')
                    j++;
            else {
                *bad_at = j;
                return SCAN_BAD;
            }
            if (j < n && s[j] == '.') {
                size_t k = ++j;
                while (j < n && s[j] >= '0' && s[j] <= '9')
                    j++;
                if (j == k) {
                    if (j >= n && !final)
                        return SCAN_MORE;
                    *bad_at = j;
                    return SCAN_BAD;
                }
            }
            if (j < n && (s[j] == 'e' || s[j] == 'E')) {
                j++;
                if (j < n && (s[j] == '+' || s[j] == '-'))
                    j++;
                size_t k = j;
                while (j < n && s[j] >= '0' && s[j] <= '9')
                    j++;
                if (j == k) {
                    if (j >= n && !final)
                        return SCAN_MORE;
                    *bad_at = j;
                    return SCAN_BAD;
                }
            }
            if (j >= n && !final)
                return SCAN_MORE; /* more digits may follow */
            i = j;
            state = 1;
            if (depth == 0) {
                *end = i;
                return SCAN_OK;
            }
            continue;
        }
    literal:;
        static const char *const lits[] = {"true", "false", "null", "NaN", "Infinity"};
        bool found = false;
        for (size_t k = 0; k < BASE_ARRAY_LEN(lits) && !found; k++) {
            size_t l = strlen(lits[k]);
            if (lits[k][0] != (char)c)
                continue;
            if (n - i < l) {
                if (memcmp(s + i, lits[k], n - i) == 0 && !final)
                    return SCAN_MORE;
                break;
            }
            if (memcmp(s + i, lits[k], l) == 0) {
                if (k >= 3)
                    *clean = false;
                i += l;
                found = true;
            }
        }
        if (!found) {
            *bad_at = i;
            return SCAN_BAD;
        }
        state = 1;
        if (depth == 0) {
            *end = i;
            return SCAN_OK;
        }
    }
}

static void bad(base_jstream_t *self, size_t at, char *err)
{
    size_t lo = at > 20 ? at - 20 : 0;
    char ctx[48];
    size_t k = 0;
    for (size_t i = lo; i < self->len && i < at + 20 && k + 1 < sizeof ctx; i++) {
        unsigned char c = (unsigned char)self->buf[i];
        ctx[k++] = c >= 0x20 && c < 0x7f ? (char)c : '.';
    }
    ctx[k] = '\0';
    base_err(err, "%s: invalid JSON at byte %llu (near \"%s\")", self->path,
             (unsigned long long)(self->base + at), ctx);
}

int base_jstream_value(base_jstream_t *self, struct base_jspan *out, char *err)
{
    assert(self && out);
    int c = next_byte(self, err);
    if (c == -2)
        return BASE_ERR;
    if (c == -1)
        return base_err(err, "%s: the JSON text ends early (at byte %llu)", self->path,
                        (unsigned long long)base_jstream_offset(self));
    for (;;) {
        size_t end = 0, bad_at = 0;
        bool clean = true;
        enum scan r = scan_value(self->buf, self->len, self->pos, &end, &clean, self->eof, &bad_at);
        if (r == SCAN_BAD) {
            bad(self, bad_at, err);
            return BASE_ERR;
        }
        if (r == SCAN_OK) {
            out->p = self->buf + self->pos;
            out->n = end - self->pos;
            out->clean = clean;
            self->pos = end;
            return BASE_OK;
        }
        if (self->eof)
            return base_err(err,
                            "%s: the JSON text ends early (at byte %llu, inside a value "
                            "that starts at byte %llu)",
                            self->path, (unsigned long long)(self->base + self->len),
                            (unsigned long long)base_jstream_offset(self));
        if (self->len - self->pos > self->limit)
            return base_err(err, "%s: a value at byte %llu is larger than %zu bytes", self->path,
                            (unsigned long long)base_jstream_offset(self), self->limit);
        if (fill(self, err) != BASE_OK)
            return BASE_ERR;
    }
}

int base_jstream_first(base_jstream_t *self, char *c, char *err)
{
    assert(self && c);
    int b = next_byte(self, err);
    if (b == -2)
        return BASE_ERR;
    *c = b < 0 ? '\0' : (char)b;
    return BASE_OK;
}

int base_jstream_expect(base_jstream_t *self, char what, char *err)
{
    assert(self);
    int c = next_byte(self, err);
    if (c == -2)
        return BASE_ERR;
    if (c != (unsigned char)what) {
        if (c == -1)
            return base_err(err, "%s: the JSON text ends early (at byte %llu, '%c' expected)",
                            self->path, (unsigned long long)base_jstream_offset(self), what);
        bad(self, self->pos, err);
        return BASE_ERR;
    }
    self->pos++;
    return BASE_OK;
}

int base_jstream_next(base_jstream_t *self, char close, bool *first, char *err)
{
    assert(self && first);
    int c = next_byte(self, err);
    if (c == -2)
        return BASE_ERR;
    if (c == (unsigned char)close) {
        self->pos++;
        return 0;
    }
    if (!*first) {
        if (c != ',') {
            if (c == -1)
                return base_err(err, "%s: the JSON text ends early (at byte %llu)", self->path,
                                (unsigned long long)base_jstream_offset(self));
            bad(self, self->pos, err);
            return BASE_ERR;
        }
        self->pos++;
    }
    *first = false;
    return 1;
}

int base_jstream_key(base_jstream_t *self, char *key, size_t keylen, char *err)
{
    struct base_jspan s;
    int c = next_byte(self, err);
    if (c == -2)
        return BASE_ERR;
    if (c != '"') {
        if (c == -1)
            return base_err(err, "%s: the JSON text ends early (at byte %llu)", self->path,
                            (unsigned long long)base_jstream_offset(self));
        bad(self, self->pos, err);
        return BASE_ERR;
    }
    if (base_jstream_value(self, &s, err) != BASE_OK)
        return BASE_ERR;
    base_jspan_str(&s, key, keylen);
    return base_jstream_expect(self, ':', err);
}

int base_jstream_end(base_jstream_t *self, char *err)
{
    assert(self);
    int c = next_byte(self, err);
    if (c == -2)
        return BASE_ERR;
    if (c != -1) {
        bad(self, self->pos, err);
        return BASE_ERR;
    }
    return BASE_OK;
}

/* ---- validated spans ------------------------------------------------------ */

/* The end of the (valid) value at p: strings skipped whole, brackets counted. */
static const char *span_skip(const char *p, const char *end)
{
    int depth = 0;
    while (p < end) {
        char c = *p;
        if (c == '"') {
            p++;
            while (p < end && *p != '"')
                p += *p == '\\' ? 2 : 1;
            p++;
            if (depth == 0)
                return p;
            continue;
        }
        if (c == '{' || c == '[') {
            depth++;
            p++;
            continue;
        }
        if (c == '}' || c == ']') {
            if (depth == 0)
                return p; /* the end of the container that holds a scalar */
            depth--;
            p++;
            if (depth == 0)
                return p;
            continue;
        }
        if (depth == 0 && (c == ',' || is_ws(c)))
            return p;
        p++;
    }
    return p;
}

static const char *span_ws(const char *p, const char *end)
{
    while (p < end && is_ws(*p))
        p++;
    return p;
}

bool base_jspan_member(const struct base_jspan *obj, const char **cursor, struct base_jspan *key,
                       struct base_jspan *val)
{
    assert(obj && cursor && key && val);
    const char *end = obj->p + obj->n;
    const char *p = *cursor ? *cursor : obj->p + 1; /* past '{' */
    p = span_ws(p, end);
    if (p < end && *p == ',')
        p = span_ws(p + 1, end);
    if (p >= end || *p != '"')
        return false;
    key->p = p + 1;
    const char *q = span_skip(p, end);
    key->n = (size_t)(q - 1 - key->p); /* without the quotes */
    key->clean = obj->clean;
    p = span_ws(q, end);
    p = span_ws(p + 1, end); /* past ':' */
    val->p = p;
    q = span_skip(p, end);
    val->n = (size_t)(q - p);
    val->clean = obj->clean;
    *cursor = q;
    return true;
}

bool base_jspan_element(const struct base_jspan *arr, const char **cursor, struct base_jspan *val)
{
    assert(arr && cursor && val);
    const char *end = arr->p + arr->n;
    const char *p = *cursor ? *cursor : arr->p + 1; /* past '[' */
    p = span_ws(p, end);
    if (p < end && *p == ',')
        p = span_ws(p + 1, end);
    if (p >= end || *p == ']')
        return false;
    val->p = p;
    const char *q = span_skip(p, end);
    val->n = (size_t)(q - p);
    val->clean = arr->clean;
    *cursor = q;
    return true;
}

bool base_jspan_is(const struct base_jspan *key, const char *lit)
{
    size_t l = strlen(lit);
    return key->n == l && memcmp(key->p, lit, l) == 0;
}

static int hexval(char c)
{
    return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

size_t base_jspan_str(const struct base_jspan *s, char *buf, size_t len)
{
    assert(s && buf && len > 0);
    buf[0] = '\0';
    if (s->p == NULL) /* an absent member */
        return 0;
    const char *p = s->p, *end = s->p + s->n;
    if (p < end && *p == '"') {
        p++;
        end--;
    }
    size_t k = 0;
    while (p < end && k + 1 < len) {
        char c = *p++;
        if (c != '\\') {
            buf[k++] = c;
            continue;
        }
        char e = *p++;
        switch (e) {
        case 'b':
            buf[k++] = '\b';
            break;
        case 'f':
            buf[k++] = '\f';
            break;
        case 'n':
            buf[k++] = '\n';
            break;
        case 'r':
            buf[k++] = '\r';
            break;
        case 't':
            buf[k++] = '\t';
            break;
        case 'u': {
            unsigned v = 0;
            for (int i = 0; i < 4 && p < end; i++)
                v = v << 4 | (unsigned)hexval(*p++);
            /* Enough for names: BMP code points as UTF-8; surrogates as '?'. */
            if (v < 0x80) {
                buf[k++] = (char)(v ? v : '?');
            } else if (v < 0x800 && k + 2 < len) {
                buf[k++] = (char)(0xc0 | v >> 6);
                buf[k++] = (char)(0x80 | (v & 0x3f));
            } else if ((v < 0xd800 || v > 0xdfff) && k + 3 < len) {
                buf[k++] = (char)(0xe0 | v >> 12);
                buf[k++] = (char)(0x80 | ((v >> 6) & 0x3f));
                buf[k++] = (char)(0x80 | (v & 0x3f));
            } else {
                buf[k++] = '?';
            }
            break;
        }
        default:
            buf[k++] = e;
            break;
        }
    }
    buf[k] = '\0';
    return k;
}

int base_jspan_ns(const struct base_jspan *s, int scale_exp, int64_t *out)
{
    assert(s && out);
    if (s->p == NULL)
        return BASE_ERR;
    const char *p = s->p, *end = s->p + s->n;
    /* Numbers written as strings ("ts": "123.5") are common enough to read. */
    if (p < end && *p == '"') {
        p++;
        end--;
    }
    bool neg = false;
    if (p < end && (*p == '-' || *p == '+'))
        neg = *p++ == '-';
    unsigned __int128 mant = 0;
    int exp10 = 0, digits = 0;
    bool any = false;
    for (; p < end && *p >= '0' && *p <= '9'; p++, any = true)
        if (digits < 36) {
            mant = mant * 10 + (unsigned)(*p - '0');
            if (mant)
                digits++;
        } else {
            exp10++;
        }
    if (p < end && *p == '.')
        for (p++; p < end && *p >= '0' && *p <= '9'; p++, any = true)
            if (digits < 36) {
                mant = mant * 10 + (unsigned)(*p - '0');
                if (mant)
                    digits++;
                exp10--;
            }
    if (!any)
        return BASE_ERR;
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        bool eneg = false;
        if (p < end && (*p == '-' || *p == '+'))
            eneg = *p++ == '-';
        int e = 0;
        if (p >= end || *p < '0' || *p > '9')
            return BASE_ERR;
        for (; p < end && *p >= '0' && *p <= '9'; p++)
            if (e < 10000)
                e = e * 10 + (*p - '0');
        exp10 += eneg ? -e : e;
    }
    if (p != end)
        return BASE_ERR;
    exp10 += scale_exp;
    if (mant == 0) {
        *out = 0;
        return BASE_OK;
    }
    if (exp10 > 0) {
        for (int i = 0; i < exp10; i++) {
            if (mant > (unsigned __int128)INT64_MAX)
                return BASE_ERR;
            mant *= 10;
        }
    } else if (exp10 < 0) {
        if (exp10 < -38) {
            *out = 0;
            return BASE_OK;
        }
        unsigned __int128 div = 1;
        for (int i = 0; i < -exp10; i++)
            div *= 10;
        mant = (mant + div / 2) / div; /* round half up */
    }
    if (mant > (unsigned __int128)INT64_MAX)
        return BASE_ERR;
    *out = neg ? -(int64_t)mant : (int64_t)mant;
    return BASE_OK;
}

void base_jspan_write(const struct base_jspan *s, FILE *out)
{
    assert(s && out);
    if (s->p == NULL)
        return;
    if (s->clean) {
        fwrite(s->p, 1, s->n, out);
        return;
    }
    /* Bytes that are not UTF-8 become U+FFFD; NaN and the infinities null. */
    const unsigned char *p = (const unsigned char *)s->p, *end = p + s->n;
    bool in_str = false;
    while (p < end) {
        unsigned char c = *p;
        if (in_str) {
            if (c == '\\') {
                fwrite(p, 1, 2, out);
                p += 2;
                continue;
            }
            if (c == '"')
                in_str = false;
            if (c >= 0x80) {
                size_t l = base_utf8_len(p, end);
                if (l == 0) {
                    fputs("\\ufffd", out);
                    p++;
                } else {
                    fwrite(p, 1, l, out);
                    p += l;
                }
                continue;
            }
            putc(c, out);
            p++;
            continue;
        }
        if (c == '"')
            in_str = true;
        if (c == 'N' && end - p >= 3 && memcmp(p, "NaN", 3) == 0) {
            fputs("null", out);
            p += 3;
            continue;
        }
        if ((c == 'I' || c == '-') && end - p >= 8 && memcmp(p + (c == '-'), "Infinity", 8) == 0) {
            fputs("null", out);
            p += c == '-' ? 9 : 8;
            continue;
        }
        putc(c, out);
        p++;
    }
}
