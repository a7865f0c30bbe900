/*
 * base — what every dptop module shares: error codes and messages,
 * allocation that never returns NULL, clock readings, logging, decoder error
 * accounting, strict JSON field access and the layered configuration
 * (defaults < JSON file < environment < flags).
 *
 * Conventions used throughout the project:
 *   - functions that can fail return BASE_OK / BASE_ERR (or a negative
 *     decoder code) and write a one-line reason into `char *err`, a buffer of
 *     BASE_ERRLEN bytes that may be NULL when the caller does not care;
 *   - x*alloc abort with a message instead of returning NULL;
 *   - absolute times are int64 nanoseconds; never store them in a double.
 */
#ifndef DP_BASE_H
#define DP_BASE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <time.h>

#include <json-c/json.h>

#define DP_VERSION        "0.1.0"
#define BASE_OK           0
#define BASE_ERR          (-1)
#define BASE_ERRLEN       256
#define BASE_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#define BASE_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* Write a message into err (when not NULL) and return BASE_ERR. */
int base_err(char *err, const char *fmt, ...) BASE_PRINTF(2, 3);
int base_verr(char *err, const char *fmt, va_list ap);

/* Allocation: abort with a message on failure, never return NULL. */
void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *ptr, size_t size);
void *xreallocarray(void *ptr, size_t nmemb, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
int xasprintf(char **out, const char *fmt, ...) BASE_PRINTF(2, 3);

/* Little-endian fields of the wire and file formats, at any alignment. */
static inline void base_le_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void base_le_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void base_le_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t base_le_get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}
static inline uint32_t base_le_get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}
static inline uint64_t base_le_get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* qsort comparators of plain values. */
int base_cmp_u32(const void *a, const void *b);
int base_cmp_double(const void *a, const void *b);

/*
 * A file that appears under its name only once it is whole: writes go to
 * NAME.tmp, base_afile_commit flushes, closes and renames it over NAME; any
 * write error, or base_afile_abort, removes the temporary and leaves an
 * existing NAME as it was.  Snapshots and exports are written this way so a
 * full disk never leaves a half file that looks like a result.  A NAME that
 * is a device, a FIFO or a socket is written in place (renaming over it
 * would replace it by a file); a symbolic link's target is replaced, the
 * link kept.
 */
typedef struct base_afile base_afile_t;
base_afile_t *base_afile_open(const char *path, char *err);
FILE *base_afile_stream(base_afile_t *self);
const char *base_afile_path(const base_afile_t *self);
int base_afile_commit(base_afile_t **self_p, char *err);
void base_afile_abort(base_afile_t **self_p);

/* Clock readings in integer nanoseconds. */
int64_t base_time_ns(clockid_t clock);
int64_t base_realtime_ns(void);
int64_t base_monotonic_ns(void);
void base_sleep_ns(int64_t ns);

/* Logging to stderr: "<prog>[pid] <level> <component>: message". */
enum base_log_level { BASE_LOG_DEBUG, BASE_LOG_INFO, BASE_LOG_WARN, BASE_LOG_ERROR };
void base_log(enum base_log_level level, const char *component, const char *fmt, ...)
    BASE_PRINTF(3, 4);

/*
 * Decoder outcomes.  Every decoder of outside input (bus frames, JSON,
 * recordings, configuration, UDP packets) returns one of these and a message;
 * the caller counts them in a base_decstats so that every rejection is
 * visible somewhere.
 */
enum base_dec {
    BASE_DEC_OK = 0,
    BASE_DEC_TRUNCATED,   /* input ends before the structure does */
    BASE_DEC_OVERSIZED,   /* a length or count beyond the configured limit */
    BASE_DEC_BAD_VERSION, /* magic matches, version is not one we read */
    BASE_DEC_BAD_MAGIC,   /* not our format at all */
    BASE_DEC_BAD_TYPE,    /* a field or message of the wrong type/kind */
    BASE_DEC_BAD_VALUE,   /* right type, value out of range */
    BASE_DEC_BAD_JSON,    /* not parseable JSON */
    BASE_DEC_BAD_CHECKSUM,
    BASE_DEC_NKINDS
};
typedef struct base_decstats {
    uint64_t n[BASE_DEC_NKINDS]; /* n[BASE_DEC_OK] counts accepted inputs */
} base_decstats_t;

const char *base_dec_name(enum base_dec code);
void base_decstats_add(base_decstats_t *st, enum base_dec code);
uint64_t base_decstats_errors(const base_decstats_t *st);

/*
 * Strict JSON access.  Each getter looks up `key` in `obj`, checks its type
 * and range and writes a message naming the key on failure.  The `_opt`
 * variants leave *out untouched and succeed when the key is absent.
 */
enum base_dec base_json_parse(const char *text, size_t len, json_object **out, char *err);
enum base_dec base_json_get_i64(json_object *obj, const char *key, int64_t *out, char *err);
enum base_dec base_json_get_u64(json_object *obj, const char *key, uint64_t *out, char *err);
enum base_dec base_json_get_double(json_object *obj, const char *key, double *out, char *err);
enum base_dec base_json_get_bool(json_object *obj, const char *key, bool *out, char *err);
enum base_dec base_json_get_str(json_object *obj, const char *key, const char **out, char *err);
enum base_dec base_json_opt_i64(json_object *obj, const char *key, int64_t *out, char *err);
enum base_dec base_json_opt_double(json_object *obj, const char *key, double *out, char *err);
enum base_dec base_json_opt_bool(json_object *obj, const char *key, bool *out, char *err);
enum base_dec base_json_opt_str(json_object *obj, const char *key, const char **out, char *err);
/* A JSON number (integer or decimal) as int64 ns; decimals are rounded. */
enum base_dec base_json_value_ns(json_object *val, int64_t *out);

/*
 * Streaming JSON (base/jstream.c): a file of any size, plain or gzip (told
 * apart by content), read through a window that holds one value at a time.
 * The caller walks the outer containers with expect/next/key and takes each
 * inner value whole with base_jstream_value: a span, validated (RFC 8259,
 * plus Python's NaN / Infinity), valid until the next call.  A value larger
 * than max_value bytes is an error, so memory stays bounded.  Messages name
 * the file and the byte offset.
 */
typedef struct base_jstream base_jstream_t;
struct base_jspan {
    const char *p;
    size_t n;
    bool clean; /* false: holds bytes that are not UTF-8 in a string, or NaN / Infinity */
};
base_jstream_t *base_jstream_open(const char *path, size_t max_value, char *err);
void base_jstream_destroy(base_jstream_t **self);
bool base_jstream_gzip(const base_jstream_t *self);
uint64_t base_jstream_offset(const base_jstream_t *self);
/* The bytes ahead (at least 4 KiB unless the input is shorter), not consumed. */
int base_jstream_peek(base_jstream_t *self, const char **p, size_t *n, char *err);
/* The next character that is not whitespace, not consumed ('\0' at the end). */
int base_jstream_first(base_jstream_t *self, char *c, char *err);
/* Consume the character `what` (after whitespace), or fail naming the offset. */
int base_jstream_expect(base_jstream_t *self, char what, char *err);
/* In a container: 1 another member or element follows (its separator
 * consumed), 0 `close` was consumed, BASE_ERR bad input.  *first starts true. */
int base_jstream_next(base_jstream_t *self, char close, bool *first, char *err);
/* An object member's key (unescaped, cut to keylen) and its ':'. */
int base_jstream_key(base_jstream_t *self, char *key, size_t keylen, char *err);
int base_jstream_value(base_jstream_t *self, struct base_jspan *out, char *err);
/* Nothing but whitespace is left. */
int base_jstream_end(base_jstream_t *self, char *err);
/* Members of an object span, elements of an array span: *cursor starts NULL. */
bool base_jspan_member(const struct base_jspan *obj, const char **cursor, struct base_jspan *key,
                       struct base_jspan *val);
bool base_jspan_element(const struct base_jspan *arr, const char **cursor, struct base_jspan *val);
/* A key span equals lit (keys compared as written, without unescaping). */
bool base_jspan_is(const struct base_jspan *key, const char *lit);
/* A string span unescaped into buf (cut to len - 1 bytes); its length. */
size_t base_jspan_str(const struct base_jspan *s, char *buf, size_t len);
/* A number span (or a string holding one) times 10^scale_exp, rounded to an
 * int64, exactly (no double): "1700000000123.4567" µs, scale 3 -> ns. */
int base_jspan_ns(const struct base_jspan *s, int scale_exp, int64_t *out);
/* Length of the whole UTF-8 sequence at p (shortest form, no surrogates;
 * 1 for ASCII), 0 when the bytes before end are not one. */
size_t base_utf8_len(const unsigned char *p, const unsigned char *end);
/* Write a span as JSON: as it is when clean, else with U+FFFD and nulls. */
void base_jspan_write(const struct base_jspan *s, FILE *out);

/*
 * Layered configuration (SPEC §3): built-in defaults < JSON file (--config
 * FILE or DPTOP_CONFIG) < environment (DPTOP_<KEY upper-cased>) < flags.
 * A program describes its keys in a const table; base_config_t holds the
 * effective values and where each came from.  Unknown keys (a DPTOP_*
 * variable or file key that no program of the product reads), wrong types
 * and out-of-range values are refused with a message naming the key.
 */
enum base_cfg_type { BASE_CFG_INT, BASE_CFG_DOUBLE, BASE_CFG_BOOL, BASE_CFG_STRING };
enum base_cfg_source { BASE_CFG_DEFAULT, BASE_CFG_FILE, BASE_CFG_ENV, BASE_CFG_FLAG };

struct base_cfg_key {
    const char *name; /* snake_case; env is DPTOP_<NAME>, flag is --<name with dashes> */
    enum base_cfg_type type;
    const char *def; /* default, as text */
    double min, max; /* inclusive range for numbers (ignored when min > max) */
    const char *help;
};

typedef struct base_config base_config_t;

base_config_t *base_config_new(const struct base_cfg_key *keys, size_t nkeys);
void base_config_destroy(base_config_t **self);
/* Apply one layer; each returns BASE_OK or BASE_ERR with a message.  Names
 * may be given with dashes (flag form) or underscores. */
int base_config_load_file(base_config_t *self, const char *path, char *err);
int base_config_load_env(base_config_t *self, char *err);
/* File (file_flag, else $DPTOP_CONFIG, else none), then environment. */
int base_config_load_layers(base_config_t *self, const char *file_flag, char *err);
int base_config_set(base_config_t *self, const char *name, const char *value,
                    enum base_cfg_source source, char *err);
bool base_config_has(const base_config_t *self, const char *name);
int64_t base_config_int(const base_config_t *self, const char *name);
double base_config_double(const base_config_t *self, const char *name);
bool base_config_bool(const base_config_t *self, const char *name);
const char *base_config_str(const base_config_t *self, const char *name);
enum base_cfg_source base_config_source(const base_config_t *self, const char *name);
const char *base_config_source_name(enum base_cfg_source source);
/* Print "key = value  (source)" lines, one per key, then a "# " line for
 * each name of another program met in the file or the environment. */
void base_config_print(const base_config_t *self, FILE *out);
/* The programs that read a configuration name ("dpnode dptop"), or NULL for
 * a name no program of the product reads.  The file and environment layers
 * pass over names other programs read and refuse the rest, naming the
 * nearest real one. */
const char *base_config_readers(const char *name);

#endif /* DP_BASE_H */
