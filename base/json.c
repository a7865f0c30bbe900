/* Strict JSON field access on top of json-c. */
#include "base/base.h"

#include <errno.h>
#include <math.h>
#include <string.h>

enum base_dec base_json_parse(const char *text, size_t len, json_object **out, char *err)
{
    *out = NULL;
    if (len > INT32_MAX) {
        base_err(err, "JSON text of %zu bytes is too large", len);
        return BASE_DEC_OVERSIZED;
    }
    json_tokener *tok = json_tokener_new_ex(32);
    if (tok == NULL) {
        base_err(err, "cannot allocate JSON tokener");
        return BASE_DEC_BAD_JSON;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    json_object *obj = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t used = json_tokener_get_parse_end(tok);
    /*
     * A bare number or literal waits for what ends it: end it here, so that
     * it is "not an object" rather than cut short (which it stays when it
     * is no value even so, as "nul").
     */
    if (jerr == json_tokener_continue && obj == NULL) {
        obj = json_tokener_parse_ex(tok, " ", 1);
        if (json_tokener_get_error(tok) == json_tokener_success) {
            jerr = json_tokener_success;
            used = len;
        } else {
            json_object_put(obj);
            obj = NULL;
        }
    }
    json_tokener_free(tok);
    if (jerr == json_tokener_success && obj == NULL) {
        base_err(err, "not a JSON object: null");
        return BASE_DEC_BAD_TYPE;
    }
    if (jerr != json_tokener_success || obj == NULL) {
        json_object_put(obj);
        if (jerr == json_tokener_continue) {
            base_err(err, "JSON text ends early (%zu bytes)", len);
            return BASE_DEC_TRUNCATED;
        }
        base_err(err, "invalid JSON: %s", json_tokener_error_desc(jerr));
        return BASE_DEC_BAD_JSON;
    }
    /* Allow trailing whitespace (and a NUL some senders include), nothing else. */
    for (size_t i = used; i < len; i++) {
        char c = text[i];
        if (c != ' ' && c != '\n' && c != '\r' && c != '\t' && c != '\0') {
            json_object_put(obj);
            base_err(err, "invalid JSON: trailing data at byte %zu", i);
            return BASE_DEC_BAD_JSON;
        }
    }
    *out = obj;
    return BASE_DEC_OK;
}

static enum base_dec lookup(json_object *obj, const char *key, json_object **val, bool optional,
                            char *err)
{
    *val = NULL;
    if (obj == NULL || !json_object_is_type(obj, json_type_object)) {
        base_err(err, "expected a JSON object holding \"%s\"", key);
        return BASE_DEC_BAD_TYPE;
    }
    if (!json_object_object_get_ex(obj, key, val) || *val == NULL) {
        *val = NULL;
        if (optional)
            return BASE_DEC_OK;
        base_err(err, "missing field \"%s\"", key);
        return BASE_DEC_BAD_TYPE;
    }
    return BASE_DEC_OK;
}

/*
 * json-c clamps an integer beyond the int64 range to INT64_MAX / INT64_MIN
 * without a word (as int64; beyond uint64 to UINT64_MAX, which reads as
 * INT64_MAX); no real field holds those, so they are taken for out of range.
 */
static bool int_clamped(int64_t v)
{
    return v == INT64_MAX || v == INT64_MIN;
}

/* Digit k of the integer digits ip[0..ni) followed by the fraction's; 0 past them. */
static int digit_at(const char *ip, size_t ni, const char *fp, long nd, long k)
{
    if (k >= nd)
        return 0;
    return (k < (long)ni ? ip[k] : fp[k - (long)ni]) - '0';
}

/*
 * A decimal written out ("1765643728995645999.5", or with an exponent,
 * "1.7656437289956459995e18") exactly: through a double it would lose up
 * to 128 ns at CLOCK_REALTIME sizes.  Rounded half away from zero, as
 * llround.  false: another notation, or out of range.
 */
static bool decimal_ns(const char *s, int64_t *out)
{
    bool neg = *s == '-';
    const char *p = s + neg;
    /* The digits, integer part then fraction, as one string without the point. */
    const char *ip = p, *fp = NULL;
    size_t ni = 0, nf = 0;
    while (p[ni] >= '0' && p[ni] <= '9')
        ni++;
    if (ni == 0)
        return false;
    p += ni;
    if (*p == '.') {
        fp = ++p;
        while (p[nf] >= '0' && p[nf] <= '9')
            nf++;
        if (nf == 0)
            return false;
        p += nf;
    }
    long e = 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        bool eneg = *p == '-';
        if (*p == '+' || *p == '-')
            p++;
        if (*p < '0' || *p > '9')
            return false;
        /* Past 10^5 either way the value is 0 or out of range: no need to count on. */
        for (; *p >= '0' && *p <= '9'; p++)
            if (e < 100000)
                e = e * 10 + (*p - '0');
        e = eneg ? -e : e;
    }
    if (*p != '\0')
        return false;
    long nd = (long)(ni + nf);
    long point = (long)ni + e; /* digits before the decimal point */
    uint64_t v = 0;
    /* Past the written digits only zeros follow: a zero stays zero, anything else overflows. */
    for (long k = 0; k < point && (k < nd || v != 0); k++) {
        if (v > (UINT64_MAX - 9) / 10)
            return false;
        v = v * 10 + (uint64_t)digit_at(ip, ni, fp, nd, k);
    }
    if (point >= 0)
        v += digit_at(ip, ni, fp, nd, point) >= 5;
    if (v > (uint64_t)INT64_MAX - 1)
        return false;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return true;
}

enum base_dec base_json_value_ns(json_object *val, int64_t *out)
{
    if (json_object_is_type(val, json_type_int)) {
        errno = 0;
        int64_t v = json_object_get_int64(val);
        if (errno != 0 || int_clamped(v))
            return BASE_DEC_BAD_VALUE;
        *out = v;
        return BASE_DEC_OK;
    }
    if (json_object_is_type(val, json_type_double)) {
        double d = json_object_get_double(val);
        if (!isfinite(d) || d >= 9.2e18 || d <= -9.2e18)
            return BASE_DEC_BAD_VALUE;
        /* json-c keeps a parsed number's text. */
        const char *text = json_object_get_string(val);
        if (text == NULL || !decimal_ns(text, out))
            *out = llround(d);
        return BASE_DEC_OK;
    }
    return BASE_DEC_BAD_TYPE;
}

static enum base_dec get_i64(json_object *obj, const char *key, int64_t *out, bool opt, char *err)
{
    json_object *val;
    enum base_dec rc = lookup(obj, key, &val, opt, err);
    if (rc != BASE_DEC_OK || val == NULL)
        return rc;
    if (!json_object_is_type(val, json_type_int)) {
        base_err(err, "field \"%s\" must be an integer", key);
        return BASE_DEC_BAD_TYPE;
    }
    errno = 0;
    int64_t v = json_object_get_int64(val);
    if (errno != 0 || int_clamped(v)) {
        base_err(err, "field \"%s\" is out of the int64 range", key);
        return BASE_DEC_BAD_VALUE;
    }
    *out = v;
    return BASE_DEC_OK;
}

enum base_dec base_json_get_i64(json_object *obj, const char *key, int64_t *out, char *err)
{
    return get_i64(obj, key, out, false, err);
}

enum base_dec base_json_opt_i64(json_object *obj, const char *key, int64_t *out, char *err)
{
    return get_i64(obj, key, out, true, err);
}

enum base_dec base_json_get_u64(json_object *obj, const char *key, uint64_t *out, char *err)
{
    json_object *val;
    enum base_dec rc = lookup(obj, key, &val, false, err);
    if (rc != BASE_DEC_OK)
        return rc;
    if (!json_object_is_type(val, json_type_int)) {
        base_err(err, "field \"%s\" must be an integer", key);
        return BASE_DEC_BAD_TYPE;
    }
    /* json-c keeps large positives as uint64; negatives are refused. */
    errno = 0;
    int64_t s = json_object_get_int64(val);
    if (errno == 0 && s < 0) {
        base_err(err, "field \"%s\" must not be negative", key);
        return BASE_DEC_BAD_VALUE;
    }
    errno = 0;
    uint64_t v = json_object_get_uint64(val);
    if (errno != 0 || v == UINT64_MAX) {
        base_err(err, "field \"%s\" is out of the uint64 range", key);
        return BASE_DEC_BAD_VALUE;
    }
    *out = v;
    return BASE_DEC_OK;
}

static enum base_dec get_double(json_object *obj, const char *key, double *out, bool opt, char *err)
{
    json_object *val;
    enum base_dec rc = lookup(obj, key, &val, opt, err);
    if (rc != BASE_DEC_OK || val == NULL)
        return rc;
    if (!json_object_is_type(val, json_type_double) && !json_object_is_type(val, json_type_int)) {
        base_err(err, "field \"%s\" must be a number", key);
        return BASE_DEC_BAD_TYPE;
    }
    double d = json_object_get_double(val);
    if (!isfinite(d)) {
        base_err(err, "field \"%s\" is not finite", key);
        return BASE_DEC_BAD_VALUE;
    }
    *out = d;
    return BASE_DEC_OK;
}

enum base_dec base_json_get_double(json_object *obj, const char *key, double *out, char *err)
{
    return get_double(obj, key, out, false, err);
}

enum base_dec base_json_opt_double(json_object *obj, const char *key, double *out, char *err)
{
    return get_double(obj, key, out, true, err);
}

static enum base_dec get_bool(json_object *obj, const char *key, bool *out, bool opt, char *err)
{
    json_object *val;
    enum base_dec rc = lookup(obj, key, &val, opt, err);
    if (rc != BASE_DEC_OK || val == NULL)
        return rc;
    if (!json_object_is_type(val, json_type_boolean)) {
        base_err(err, "field \"%s\" must be true or false", key);
        return BASE_DEC_BAD_TYPE;
    }
    *out = json_object_get_boolean(val);
    return BASE_DEC_OK;
}

enum base_dec base_json_get_bool(json_object *obj, const char *key, bool *out, char *err)
{
    return get_bool(obj, key, out, false, err);
}

enum base_dec base_json_opt_bool(json_object *obj, const char *key, bool *out, char *err)
{
    return get_bool(obj, key, out, true, err);
}

static enum base_dec get_str(json_object *obj, const char *key, const char **out, bool opt,
                             char *err)
{
    json_object *val;
    enum base_dec rc = lookup(obj, key, &val, opt, err);
    if (rc != BASE_DEC_OK || val == NULL)
        return rc;
    if (!json_object_is_type(val, json_type_string)) {
        base_err(err, "field \"%s\" must be a string", key);
        return BASE_DEC_BAD_TYPE;
    }
    *out = json_object_get_string(val);
    return BASE_DEC_OK;
}

enum base_dec base_json_get_str(json_object *obj, const char *key, const char **out, char *err)
{
    return get_str(obj, key, out, false, err);
}

enum base_dec base_json_opt_str(json_object *obj, const char *key, const char **out, char *err)
{
    return get_str(obj, key, out, true, err);
}
