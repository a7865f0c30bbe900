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
#include <unistd.h>

#define CONFIG_FILE_MAX    (1 << 20)
#define CONFIG_FOREIGN_MAX 16

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
    /* Names another program reads, met in a file or the environment: shown
     * by base_config_print so that a value set for dptop is not taken for
     * one dpnode applied. */
    char *foreign[CONFIG_FOREIGN_MAX];
    enum base_cfg_source foreign_source[CONFIG_FOREIGN_MAX];
    size_t nforeign, foreign_more;
    /* libdptrace owns the names trace_*, dpnode and dptop the others: an
     * unknown name in the other's space may be a newer release's, and is
     * passed over rather than refused (the traced application's library
     * is often older or newer than the agents). */
    bool trace_space;
};

/*
 * Every configuration name the product reads, and the programs that read it.
 * One DPTOP_CONFIG file and one environment serve all of them (a host runs
 * dpnode, dptop and traced applications side by side), so a name another
 * program reads is passed over, while a name that no program reads is a
 * misspelling and is refused with the nearest real name.  A program's key
 * table may only hold names listed here (base_config_new checks).
 */
static const struct {
    const char *name, *programs;
} product_names[] = {
    {"bind_ip", "dpnode"},
    {"color", "dptop"},
    {"curve_dir", "dpnode dptop"},
    {"curve_public_key", "dptop"},
    {"curve_secret_key", "dptop"},
    {"curve_server_key", "dptop"},
    {"demo_log", "dptop"},
    {"demo_nodes", "dptop"},
    {"demo_straggler", "dptop"},
    {"dpnode", "dptop"},
    {"estimator", "dpnode"},
    {"event_budget", "dptop"},
    {"exit_with_parent", "dpnode"},
    {"export", "dptop"},
    {"export_windows", "dptop"},
    {"export_collectives", "dptop"},
    {"snapshot_format", "dptop"},
    {"check_unc_ns", "dptop"},
    {"check_timeout_s", "dptop"},
    {"forget_down_s", "dpnode"},
    {"format", "dptop"},
    {"fps", "dptop"},
    {"guard_ns", "dpnode"},
    {"heartbeat_ms", "dpnode"},
    {"hub", "dpnode dptop"},
    {"hub_pub", "dpnode"},
    {"hub_sub", "dptop"},
    {"listen", "dpnode"},
    {"map", "dptop"},
    {"margin_z", "dpnode"},
    {"master", "dpnode"},
    {"max_header_bytes", "dptop"},
    {"max_payload_bytes", "dptop"},
    {"neighbors", "dpnode"},
    {"node_id", "dpnode"},
    {"nvml_library", "dpnode"},
    {"output_dir", "dpnode dptop"},
    {"packet_spacing_us", "dpnode"},
    {"probe_cadence_us", "dpnode"},
    {"probe_key", "dpnode"},
    {"probe_log", "dpnode"},
    {"probe_port", "dpnode"},
    {"probe_window_s", "dpnode"},
    {"record_flush_ms", "dptop"},
    {"ref_node", "dpnode"},
    {"refine_windows", "dpnode"},
    {"relay", "dpnode"},
    {"relay_hwm", "dpnode"},
    {"relay_master", "dpnode"},
    {"sim_clock", "dpnode"},
    {"sim_late_us", "dpnode"},
    {"sim_jitter_us", "dpnode"},
    {"sim_layers", "dpnode"},
    {"sim_path_delay", "dpnode"},
    {"sim_seed", "dpnode"},
    {"sim_step_ms", "dpnode"},
    {"sim_straggler", "dpnode"},
    {"sim_workload", "dpnode"},
    {"snapshot_period_ms", "dpnode"},
    {"speed", "dptop"},
    {"stamp_asym_ns", "dpnode"},
    {"state_timeout_ms", "dptop"},
    {"status_period_ms", "dpnode"},
    {"sub_hwm", "dptop"},
    {"sysfs_root", "dpnode"},
    {"trace_cuda_api", "libdptrace"},
    {"trace_enable", "libdptrace"},
    {"trace_endpoint", "dpnode libdptrace"},
    {"trace_events", "libdptrace"},
    {"trace_flush_ms", "libdptrace"},
    {"trace_hip_library", "libdptrace"},
    {"trace_hwm", "libdptrace"},
    {"trace_inherit_step", "libdptrace"},
    {"trace_pending", "libdptrace"},
    {"trace_quiet", "libdptrace"},
    {"trace_ring", "libdptrace"},
    {"trace_snapshot_ms", "libdptrace"},
    {"trace_tsc", "libdptrace"},
    {"user_timestamps", "dpnode"},
};

static const char *source_names[] = {"default", "file", "env", "flag"};

const char *base_config_source_name(enum base_cfg_source source)
{
    return (unsigned)source < BASE_ARRAY_LEN(source_names) ? source_names[source] : "?";
}

static bool norm_name(const char *name, char *norm, size_t size);

static long find_key(const base_config_t *self, const char *name)
{
    char norm[128];
    if (!norm_name(name, norm, sizeof norm))
        return -1;
    for (size_t i = 0; i < self->nkeys; i++)
        if (strcmp(self->keys[i].name, norm) == 0)
            return (long)i;
    return -1;
}

/* The name with dashes as underscores, or false when it does not fit. */
static bool norm_name(const char *name, char *norm, size_t size)
{
    size_t len = strlen(name);
    if (len >= size)
        return false;
    for (size_t i = 0; i <= len; i++)
        norm[i] = name[i] == '-' ? '_' : name[i];
    return true;
}

const char *base_config_readers(const char *name)
{
    char norm[128];
    if (!norm_name(name, norm, sizeof norm))
        return NULL;
    for (size_t i = 0; i < BASE_ARRAY_LEN(product_names); i++)
        if (strcmp(product_names[i].name, norm) == 0)
            return product_names[i].programs;
    return NULL;
}

/* Edit distance of two short names (longer ones are never near anything). */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return SIZE_MAX;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The product's name nearest a misspelt one, or NULL when none is near. */
static const char *nearest_name(const char *name)
{
    char norm[128];
    if (!norm_name(name, norm, sizeof norm))
        return NULL;
    for (char *p = norm; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    size_t len = strlen(norm), limit = len / 4 > 2 ? len / 4 : 2, best = SIZE_MAX, begun = 0;
    const char *found = NULL, *begins = NULL;
    for (size_t i = 0; i < BASE_ARRAY_LEN(product_names); i++) {
        if (len >= 4 && strncmp(product_names[i].name, norm, len) == 0) {
            begins = product_names[i].name;
            begun++;
        }
    }
    for (size_t i = 0; i < BASE_ARRAY_LEN(product_names); i++) {
        size_t d = edit_distance(norm, product_names[i].name);
        /* A name cut short ("trace_inherit") means the one it begins, if one. */
        if (begun == 1 && product_names[i].name == begins)
            d = 1;
        if (d <= limit && d < best) {
            best = d;
            found = product_names[i].name;
        }
    }
    return found;
}

static bool in_trace_space(const char *name)
{
    return strncmp(name, "trace_", 6) == 0;
}

static void note_foreign(base_config_t *self, const char *name, enum base_cfg_source source)
{
    if (self->nforeign == CONFIG_FOREIGN_MAX) {
        self->foreign_more++;
        return;
    }
    self->foreign[self->nforeign] = xstrdup(name);
    self->foreign_source[self->nforeign++] = source;
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
    self->trace_space = nkeys > 0;
    for (size_t i = 0; i < nkeys; i++) {
        char err[BASE_ERRLEN];
        if (base_config_readers(keys[i].name) == NULL) {
            /* Other programs would refuse it in a shared file or environment. */
            fprintf(stderr, "fatal: configuration key '%s' is missing from product_names\n",
                    keys[i].name);
            abort();
        }
        self->trace_space = self->trace_space && in_trace_space(keys[i].name);
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
    for (size_t i = 0; i < self->nforeign; i++)
        free(self->foreign[i]);
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
/*
 * json-c keeps the last of two equal keys of an object, so a file that sets
 * a key twice would lose one value without a word.  The text is walked for
 * the top-level object's keys (strings at depth 1 followed by ':'); it has
 * parsed already, so it is well formed.
 */
static bool top_level_duplicate(const char *text, size_t len, char *out, size_t outlen)
{
    enum { MAXK = 512 };
    const char *kp[MAXK];
    size_t kl[MAXK], nk = 0;
    int depth = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            depth--;
        } else if (c == '"') {
            size_t s = ++i;
            while (i < len && text[i] != '"')
                i += text[i] == '\\' ? 2 : 1;
            size_t e = i < len ? i : len;
            size_t j = e + 1;
            while (j < len &&
                   (text[j] == ' ' || text[j] == '\t' || text[j] == '\n' || text[j] == '\r'))
                j++;
            if (depth != 1 || j >= len || text[j] != ':')
                continue;
            for (size_t k = 0; k < nk; k++)
                if (kl[k] == e - s && memcmp(kp[k], text + s, e - s) == 0) {
                    snprintf(out, outlen, "%.*s", (int)(e - s), text + s);
                    return true;
                }
            if (nk < MAXK) {
                kp[nk] = text + s;
                kl[nk++] = e - s;
            }
        }
    }
    return false;
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
    char dup[128];
    if (top_level_duplicate(text, len, dup, sizeof dup)) {
        base_err(err, "configuration file %s: key '%s' given twice", path, dup);
        goto out;
    }
    json_object_object_foreach(root, key, val)
    {
        long idx = find_key(self, key);
        const char *readers = idx < 0 ? base_config_readers(key) : NULL;
        /* libdptrace reads the environment alone: its keys in a file would
         * look set and do nothing. */
        if (readers && !strstr(readers, "dpnode") && !strstr(readers, "dptop")) {
            char var[128];
            size_t n = 0;
            for (; n < sizeof var - 1 && key[n]; n++)
                var[n] = (char)toupper((unsigned char)(key[n] == '-' ? '_' : key[n]));
            var[n] = '\0';
            base_err(err,
                     "configuration key '%s' [file %s] is read by %s from the environment "
                     "only: set DPTOP_%s",
                     key, path, readers, var);
            goto out;
        }
        if (readers) {
            note_foreign(self, key, BASE_CFG_FILE);
            continue;
        }
        if (idx < 0) {
            const char *near = nearest_name(key);
            base_err(err, "unknown configuration key '%s' [file %s]%s%s%s", key, path,
                     near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
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
    static const char prefix[] = "DPTOP_";
    const size_t plen = sizeof prefix - 1;
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        const char *eq = strchr(*e, '=');
        if (eq == NULL || strncmp(*e, prefix, plen) != 0)
            continue;
        char name[128];
        size_t len = (size_t)(eq - *e) - plen;
        if (len >= sizeof name)
            len = sizeof name - 1;
        bool upper = len > 0;
        for (size_t i = 0; i < len; i++) {
            char c = (*e)[plen + i];
            upper = upper && (isupper((unsigned char)c) || isdigit((unsigned char)c) || c == '_');
            name[i] = (char)tolower((unsigned char)c);
        }
        name[len] = '\0';
        if (upper && strcmp(name, "config") == 0)
            continue;
        long idx = upper ? find_key(self, name) : -1;
        if (idx >= 0) {
            if (base_config_set(self, name, eq + 1, BASE_CFG_ENV, err) != BASE_OK)
                return BASE_ERR;
            continue;
        }
        if (upper &&
            (base_config_readers(name) != NULL || in_trace_space(name) != self->trace_space)) {
            note_foreign(self, name, BASE_CFG_ENV);
            continue;
        }
        const char *near = nearest_name(name);
        char hint[160] = "";
        if (near != NULL) {
            char up[128];
            size_t n = 0;
            for (; n < sizeof up - 1 && near[n]; n++)
                up[n] = (char)toupper((unsigned char)near[n]);
            up[n] = '\0';
            snprintf(hint, sizeof hint, " (did you mean %s%s?)", prefix, up);
        }
        return base_err(err, "unknown environment variable %.*s: no program of dptop reads it%s",
                        (int)(eq - *e), *e, hint);
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
    for (size_t i = 0; i < self->nforeign; i++) {
        const char *readers = base_config_readers(self->foreign[i]);
        fprintf(out, "# %s (%s): %s%s, not here\n", self->foreign[i],
                base_config_source_name(self->foreign_source[i]),
                readers ? "read by " : "unknown to this release, in another program's names",
                readers ? readers : "");
    }
    if (self->foreign_more > 0)
        fprintf(out, "# and %zu more names read by other programs\n", self->foreign_more);
}
