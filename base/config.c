/*
 * Layered configuration.  Values are parsed from text whatever layer they
 * come from, so a value means the same in a file, the environment or a flag,
 * and every refusal names the key and the layer.
 */
#include "base/base.h"

#include <ctype.h>
#include <inttypes.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CONFIG_FILE_MAX (1 << 20)

struct cfg_value {
    enum base_cfg_source source;
    int64_t i;
    double d;
    bool b;
    char *s;
};

struct base_config {
    const struct base_cfg_key *keys;
    size_t nkeys;
    struct cfg_value *values;
};

static const char *source_names[] = {"default", "file", "env", "flag"};

const char *base_config_source_name(enum base_cfg_source source)
{
    return (unsigned)source < BASE_ARRAY_LEN(source_names) ? source_names[source] : "?";
}

static long find_key(const base_config_t *self, const char *name)
{
    char norm[128];
    size_t len = strlen(name);
    if (len >= sizeof norm)
        return -1;
    for (size_t i = 0; i <= len; i++)
        norm[i] = name[i] == '-' ? '_' : name[i];
    for (size_t i = 0; i < self->nkeys; i++)
        if (strcmp(self->keys[i].name, norm) == 0)
            return (long)i;
    return -1;
}

static bool in_range(const struct base_cfg_key *k, double v)
{
    return k->min > k->max || (v >= k->min && v <= k->max);
}

static int range_err(const struct base_cfg_key *k, const char *what, const char *text,
                     const char *layer, char *err)
{
    if (k->min <= k->max)
        return base_err(err, "invalid %s for %s: '%s' (expected %s in [%g, %g]) [%s]", "value",
                        k->name, text, what, k->min, k->max, layer);
    return base_err(err, "invalid value for %s: '%s' (expected %s) [%s]", k->name, text, what,
                    layer);
}

/* Parse text into v according to the key's type. */
static int parse_value(const struct base_cfg_key *k, const char *text, struct cfg_value *v,
                       const char *layer, char *err)
{
    char *end;
    switch (k->type) {
    case BASE_CFG_INT: {
        errno = 0;
        long long x = strtoll(text, &end, 10);
        if (errno != 0 || end == text || *end != '\0' || !in_range(k, (double)x))
            return range_err(k, "an integer", text, layer, err);
        v->i = x;
        v->d = (double)x;
        return BASE_OK;
    }
    case BASE_CFG_DOUBLE: {
        errno = 0;
        double x = strtod(text, &end);
        if (errno != 0 || end == text || *end != '\0' || !isfinite(x) || !in_range(k, x))
            return range_err(k, "a number", text, layer, err);
        v->d = x;
        v->i = (int64_t)x;
        return BASE_OK;
    }
    case BASE_CFG_BOOL:
        if (!strcmp(text, "1") || !strcasecmp(text, "true") || !strcasecmp(text, "yes") ||
            !strcasecmp(text, "on"))
            v->b = true;
        else if (!strcmp(text, "0") || !strcasecmp(text, "false") || !strcasecmp(text, "no") ||
                 !strcasecmp(text, "off"))
            v->b = false;
        else
            return base_err(err, "invalid value for %s: '%s' (expected true or false) [%s]",
                            k->name, text, layer);
        return BASE_OK;
    case BASE_CFG_STRING:
        free(v->s);
        v->s = xstrdup(text);
        return BASE_OK;
    }
    return base_err(err, "key %s has an unknown type", k->name);
}

base_config_t *base_config_new(const struct base_cfg_key *keys, size_t nkeys)
{
    base_config_t *self = xcalloc(1, sizeof *self);
    self->keys = keys;
    self->nkeys = nkeys;
    self->values = xcalloc(nkeys, sizeof *self->values);
    for (size_t i = 0; i < nkeys; i++) {
        char err[BASE_ERRLEN];
        if (parse_value(&keys[i], keys[i].def, &self->values[i], "default", err) != BASE_OK) {
            /* A bad built-in default is a programming error, not user input. */
            fprintf(stderr, "fatal: %s\n", err);
            abort();
        }
        self->values[i].source = BASE_CFG_DEFAULT;
    }
    return self;
}

void base_config_destroy(base_config_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    base_config_t *self = *self_p;
    for (size_t i = 0; i < self->nkeys; i++)
        free(self->values[i].s);
    free(self->values);
    free(self);
    *self_p = NULL;
}

int base_config_set(base_config_t *self, const char *name, const char *value,
                    enum base_cfg_source source, char *err)
{
    long idx = find_key(self, name);
    if (idx < 0)
        return base_err(err, "unknown configuration key '%s' [%s]", name,
                        base_config_source_name(source));
    struct cfg_value v = self->values[idx];
    v.s = NULL;
    if (parse_value(&self->keys[idx], value, &v, base_config_source_name(source), err) != BASE_OK)
        return BASE_ERR;
    if (self->keys[idx].type == BASE_CFG_STRING)
        free(self->values[idx].s);
    else
        v.s = self->values[idx].s;
    v.source = source;
    self->values[idx] = v;
    return BASE_OK;
}

/* A JSON value as the text the key's parser reads, type-checked first. */
static int json_value_text(const struct base_cfg_key *k, json_object *val, char *buf, size_t len,
                           char *err)
{
    enum json_type t = json_object_get_type(val);
    switch (k->type) {
    case BASE_CFG_INT:
        if (t != json_type_int)
            return base_err(err, "invalid value for %s: expected an integer [file]", k->name);
        snprintf(buf, len, "%" PRId64, json_object_get_int64(val));
        return BASE_OK;
    case BASE_CFG_DOUBLE:
        if (t != json_type_int && t != json_type_double)
            return base_err(err, "invalid value for %s: expected a number [file]", k->name);
        snprintf(buf, len, "%.17g", json_object_get_double(val));
        return BASE_OK;
    case BASE_CFG_BOOL:
        if (t != json_type_boolean)
            return base_err(err, "invalid value for %s: expected true or false [file]", k->name);
        snprintf(buf, len, "%s", json_object_get_boolean(val) ? "true" : "false");
        return BASE_OK;
    case BASE_CFG_STRING:
        if (t != json_type_string)
            return base_err(err, "invalid value for %s: expected a string [file]", k->name);
        snprintf(buf, len, "%s", json_object_get_string(val));
        return BASE_OK;
    }
    return BASE_ERR;
}

int base_config_load_file(base_config_t *self, const char *path, char *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return base_err(err, "cannot open configuration file %s: %s", path, strerror(errno));
    char *text = xmalloc(CONFIG_FILE_MAX + 1);
    size_t len = fread(text, 1, CONFIG_FILE_MAX + 1, f);
    int rerr = ferror(f);
    fclose(f);
    int rc = BASE_ERR;
    json_object *root = NULL;
    if (rerr) {
        base_err(err, "cannot read configuration file %s", path);
        goto out;
    }
    if (len > CONFIG_FILE_MAX) {
        base_err(err, "configuration file %s is larger than %d bytes", path, CONFIG_FILE_MAX);
        goto out;
    }
    char jerr[BASE_ERRLEN];
    if (base_json_parse(text, len, &root, jerr) != BASE_DEC_OK) {
        base_err(err, "configuration file %s: %s", path, jerr);
        goto out;
    }
    if (!json_object_is_type(root, json_type_object)) {
        base_err(err, "configuration file %s: expected a JSON object", path);
        goto out;
    }
    json_object_object_foreach(root, key, val)
    {
        long idx = find_key(self, key);
        if (idx < 0) {
            base_err(err, "unknown configuration key '%s' [file %s]", key, path);
            goto out;
        }
        char buf[4096];
        if (val == NULL) {
            base_err(err, "invalid value for %s: null [file]", key);
            goto out;
        }
        if (json_value_text(&self->keys[idx], val, buf, sizeof buf, err) != BASE_OK)
            goto out;
        if (base_config_set(self, key, buf, BASE_CFG_FILE, err) != BASE_OK)
            goto out;
    }
    rc = BASE_OK;
out:
    json_object_put(root);
    free(text);
    return rc;
}

int base_config_load_env(base_config_t *self, char *err)
{
    for (size_t i = 0; i < self->nkeys; i++) {
        char var[160] = "DPTOP_";
        size_t off = strlen(var);
        for (const char *p = self->keys[i].name; *p && off < sizeof var - 1; p++)
            var[off++] = (char)toupper((unsigned char)*p);
        var[off] = '\0';
        const char *val = getenv(var);
        if (val == NULL)
            continue;
        if (base_config_set(self, self->keys[i].name, val, BASE_CFG_ENV, err) != BASE_OK)
            return BASE_ERR;
    }
    return BASE_OK;
}

int base_config_load_layers(base_config_t *self, const char *file_flag, char *err)
{
    const char *path = file_flag ? file_flag : getenv("DPTOP_CONFIG");
    if (path != NULL && *path != '\0' && base_config_load_file(self, path, err) != BASE_OK)
        return BASE_ERR;
    return base_config_load_env(self, err);
}

static const struct cfg_value *value_of(const base_config_t *self, const char *name,
                                        enum base_cfg_type type)
{
    long idx = find_key(self, name);
    if (idx < 0 || self->keys[idx].type != type) {
        /* Asking for a key the program never declared is a programming error. */
        fprintf(stderr, "fatal: configuration key '%s' not declared with that type\n", name);
        abort();
    }
    return &self->values[idx];
}

bool base_config_has(const base_config_t *self, const char *name)
{
    return find_key(self, name) >= 0;
}

int64_t base_config_int(const base_config_t *self, const char *name)
{
    return value_of(self, name, BASE_CFG_INT)->i;
}

double base_config_double(const base_config_t *self, const char *name)
{
    return value_of(self, name, BASE_CFG_DOUBLE)->d;
}

bool base_config_bool(const base_config_t *self, const char *name)
{
    return value_of(self, name, BASE_CFG_BOOL)->b;
}

const char *base_config_str(const base_config_t *self, const char *name)
{
    return value_of(self, name, BASE_CFG_STRING)->s;
}

enum base_cfg_source base_config_source(const base_config_t *self, const char *name)
{
    long idx = find_key(self, name);
    return idx < 0 ? BASE_CFG_DEFAULT : self->values[idx].source;
}

void base_config_print(const base_config_t *self, FILE *out)
{
    for (size_t i = 0; i < self->nkeys; i++) {
        const struct base_cfg_key *k = &self->keys[i];
        const struct cfg_value *v = &self->values[i];
        char buf[64];
        const char *text = buf;
        switch (k->type) {
        case BASE_CFG_INT:
            snprintf(buf, sizeof buf, "%" PRId64, v->i);
            break;
        case BASE_CFG_DOUBLE:
            snprintf(buf, sizeof buf, "%g", v->d);
            break;
        case BASE_CFG_BOOL:
            text = v->b ? "true" : "false";
            break;
        case BASE_CFG_STRING:
            text = v->s;
            break;
        }
        fprintf(out, "%-24s = %-24s (%s)\n", k->name, text, base_config_source_name(v->source));
    }
}
