/* Unit tests for base/: configuration layers, strict JSON access, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base.h"

static const struct base_cfg_key keys[] = {
    {"probe_cadence_us", BASE_CFG_INT, "800", 50, 1e6, "probe pair cadence"},
    {"guard_ns", BASE_CFG_DOUBLE, "2.5", 0, 1e6, "guard band"},
    {"color", BASE_CFG_BOOL, "false", 1, 0, "colours"},
    {"output_dir", BASE_CFG_STRING, "/tmp/x", 1, 0, "where"},
};

static char *write_tmp(const char *text)
{
    char *path = xstrdup("/tmp/dptest-cfg-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

/* What base_config_print writes, in a string to free. */
static char *printed(const base_config_t *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    base_config_print(c, mem);
    fclose(mem);
    return buf;
}

static void test_config_defaults(void **state)
{
    base_config_t *c = base_config_new(keys, BASE_ARRAY_LEN(keys));
    assert_int_equal(base_config_int(c, "probe_cadence_us"), 800);
    assert_true(base_config_double(c, "guard_ns") == 2.5);
    assert_false(base_config_bool(c, "color"));
    assert_string_equal(base_config_str(c, "output_dir"), "/tmp/x");
    assert_int_equal(base_config_source(c, "guard_ns"), BASE_CFG_DEFAULT);
    base_config_destroy(&c);
    assert_null(c);
}

static void test_config_layers(void **state)
{
    char err[BASE_ERRLEN];
    base_config_t *c = base_config_new(keys, BASE_ARRAY_LEN(keys));
    char *path = write_tmp("{\"probe_cadence_us\": 1000, \"output_dir\": \"/f\", \"color\": true}");
    setenv("DPTOP_PROBE_CADENCE_US", "1200", 1);
    unsetenv("DPTOP_CONFIG");
    assert_int_equal(base_config_load_layers(c, path, err), BASE_OK);
    assert_int_equal(base_config_int(c, "probe_cadence_us"), 1200);
    assert_int_equal(base_config_source(c, "probe_cadence_us"), BASE_CFG_ENV);
    assert_string_equal(base_config_str(c, "output_dir"), "/f");
    assert_int_equal(base_config_source(c, "output_dir"), BASE_CFG_FILE);
    assert_true(base_config_bool(c, "color"));
    assert_int_equal(base_config_set(c, "probe-cadence-us", "900", BASE_CFG_FLAG, err), BASE_OK);
    assert_int_equal(base_config_int(c, "probe_cadence_us"), 900);
    assert_int_equal(base_config_source(c, "probe_cadence_us"), BASE_CFG_FLAG);
    unsetenv("DPTOP_PROBE_CADENCE_US");

    char *buf = printed(c);
    assert_non_null(strstr(buf, "probe_cadence_us"));
    assert_non_null(strstr(buf, "(flag)"));
    assert_non_null(strstr(buf, "(file)"));
    free(buf);
    unlink(path);
    free(path);
    base_config_destroy(&c);
}

static void test_config_refusals(void **state)
{
    char err[BASE_ERRLEN];
    base_config_t *c = base_config_new(keys, BASE_ARRAY_LEN(keys));
    assert_int_equal(base_config_set(c, "probe_cadence_us", "abc", BASE_CFG_FLAG, err), BASE_ERR);
    assert_non_null(strstr(err, "probe_cadence_us"));
    assert_int_equal(base_config_set(c, "probe_cadence_us", "10", BASE_CFG_FLAG, err), BASE_ERR);
    assert_non_null(strstr(err, "probe_cadence_us"));
    assert_int_equal(base_config_set(c, "probe_cadence_us", "12x", BASE_CFG_FLAG, err), BASE_ERR);
    assert_int_equal(base_config_set(c, "nope", "1", BASE_CFG_FLAG, err), BASE_ERR);
    assert_non_null(strstr(err, "nope"));
    assert_int_equal(base_config_set(c, "color", "maybe", BASE_CFG_ENV, err), BASE_ERR);
    assert_non_null(strstr(err, "color"));
    /* A refused value leaves the previous one in place. */
    assert_int_equal(base_config_int(c, "probe_cadence_us"), 800);

    const char *bad_files[] = {
        "{\"bogus\": 1}",
        "{\"probe_cadence_us\": \"800\"}",
        "{\"guard_ns\": true}",
        "[1,2]",
        "{\"probe_cadence_us\":",
        "{\"probe_cadence_us\": 2000000}",
        /* json-c would keep the second value silently. */
        "{\"probe_cadence_us\": 800, \"guard_ns\": 5, \"probe_cadence_us\" : 900}",
    };
    const char *named[] = {"bogus", "probe_cadence_us", "guard_ns",        NULL,
                           NULL,    "probe_cadence_us", "probe_cadence_us"};
    for (size_t i = 0; i < BASE_ARRAY_LEN(bad_files); i++) {
        char *path = write_tmp(bad_files[i]);
        assert_int_equal(base_config_load_file(c, path, err), BASE_ERR);
        if (named[i])
            assert_non_null(strstr(err, named[i]));
        unlink(path);
        free(path);
    }
    assert_int_equal(base_config_load_file(c, "/nonexistent/dptop.json", err), BASE_ERR);
    assert_non_null(strstr(err, "/nonexistent/dptop.json"));
    base_config_destroy(&c);
}

/* One file and one environment serve every program: names another program
 * reads are passed over (and shown), names none reads are refused. */
static void test_config_shared(void **state)
{
    char err[BASE_ERRLEN];
    assert_string_equal(base_config_readers("hub"), "dpnode dptop");
    assert_string_equal(base_config_readers("trace-inherit-step"), "libdptrace");
    assert_null(base_config_readers("nope"));
    assert_null(base_config_readers("config"));

    base_config_t *c = base_config_new(keys, BASE_ARRAY_LEN(keys));
    char *path = write_tmp("{\"fps\": 30, \"guard_ns\": 4, \"probe_key\": \"not checked\"}");
    setenv("DPTOP_CONFIG", path, 1);
    setenv("DPTOP_SUB_HWM", "5", 1);
    assert_int_equal(base_config_load_layers(c, NULL, err), BASE_OK);
    assert_true(base_config_double(c, "guard_ns") == 4.0);
    char *buf = printed(c);
    assert_non_null(strstr(buf, "# fps (file): read by dptop, not here"));
    assert_non_null(strstr(buf, "# probe_key (file): read by dpnode"));
    assert_non_null(strstr(buf, "# sub_hwm (env): read by dptop"));
    free(buf);
    unsetenv("DPTOP_SUB_HWM");

    /* A misspelt variable is refused with the name meant; so is one written
     * in lower case, which no program would read. */
    const char *bad_env[][3] = {
        {"DPTOP_PROBE_CADENSE_US", "DPTOP_PROBE_CADENSE_US", "DPTOP_PROBE_CADENCE_US?"},
        {"DPTOP_probe_cadence_us", "DPTOP_probe_cadence_us", "DPTOP_PROBE_CADENCE_US?"},
        {"DPTOP_ZZZZZZZZZZZZ", "DPTOP_ZZZZZZZZZZZZ", "reads it"},
        {"DPTOP_", "DPTOP_", "reads it"},
    };
    for (size_t i = 0; i < BASE_ARRAY_LEN(bad_env); i++) {
        setenv(bad_env[i][0], "1", 1);
        assert_int_equal(base_config_load_env(c, err), BASE_ERR);
        assert_non_null(strstr(err, bad_env[i][1]));
        assert_non_null(strstr(err, bad_env[i][2]));
        unsetenv(bad_env[i][0]);
    }
    /* libdptrace's names (trace_*) that this release does not know may be a
     * newer library's: passed over here, refused by libdptrace itself. */
    setenv("DPTOP_TRACE_SOMETHING_NEW", "1", 1);
    assert_int_equal(base_config_load_env(c, err), BASE_OK);
    buf = printed(c);
    assert_non_null(strstr(buf, "# trace_something_new (env): unknown to this release"));
    free(buf);
    static const struct base_cfg_key trace_keys[] = {
        {"trace_ring", BASE_CFG_INT, "8192", 256, 1048576, "ring"},
    };
    base_config_t *t = base_config_new(trace_keys, BASE_ARRAY_LEN(trace_keys));
    assert_int_equal(base_config_load_env(t, err), BASE_ERR);
    assert_non_null(strstr(err, "DPTOP_TRACE_SOMETHING_NEW"));
    unsetenv("DPTOP_TRACE_SOMETHING_NEW");
    setenv("DPTOP_TRACE_INHERIT", "1", 1);
    setenv("DPTOP_NEW_AGENT_KEY", "1", 1);
    assert_int_equal(base_config_load_env(t, err), BASE_ERR);
    assert_non_null(strstr(err, "did you mean DPTOP_TRACE_INHERIT_STEP?"));
    unsetenv("DPTOP_TRACE_INHERIT");
    assert_int_equal(base_config_load_env(t, err), BASE_OK); /* NEW_AGENT_KEY: not its space */
    unsetenv("DPTOP_NEW_AGENT_KEY");
    base_config_destroy(&t);
    assert_int_equal(base_config_load_env(c, err), BASE_OK);
    unsetenv("DPTOP_CONFIG");
    unlink(path);
    free(path);

    path = write_tmp("{\"guard_nss\": 4}");
    assert_int_equal(base_config_load_file(c, path, err), BASE_ERR);
    assert_non_null(strstr(err, "'guard_nss'"));
    assert_non_null(strstr(err, "did you mean 'guard_ns'?"));
    unlink(path);
    free(path);
    /* libdptrace reads no file: its keys there would do nothing. */
    path = write_tmp("{\"trace_ring\": 1024}");
    assert_int_equal(base_config_load_file(c, path, err), BASE_ERR);
    assert_non_null(strstr(err, "environment only: set DPTOP_TRACE_RING"));
    unlink(path);
    free(path);
    path = write_tmp("{\"config\": \"/x\"}");
    assert_int_equal(base_config_load_file(c, path, err), BASE_ERR);
    assert_non_null(strstr(err, "'config'"));
    unlink(path);
    free(path);
    base_config_destroy(&c);
}

static void test_json_strict(void **state)
{
    char err[BASE_ERRLEN];
    json_object *o;
    const char *text = "{\"a\": 5, \"b\": \"s\", \"c\": 1.5, \"d\": true, \"n\": -3}";
    assert_int_equal(base_json_parse(text, strlen(text), &o, err), BASE_DEC_OK);
    int64_t i = 0;
    uint64_t u = 0;
    const char *s = NULL;
    double d = 0;
    bool b = false;
    assert_int_equal(base_json_get_i64(o, "a", &i, err), BASE_DEC_OK);
    assert_int_equal(i, 5);
    assert_int_equal(base_json_get_u64(o, "a", &u, err), BASE_DEC_OK);
    assert_int_equal(u, 5);
    assert_int_equal(base_json_get_u64(o, "n", &u, err), BASE_DEC_BAD_VALUE);
    assert_int_equal(base_json_get_str(o, "b", &s, err), BASE_DEC_OK);
    assert_string_equal(s, "s");
    assert_int_equal(base_json_get_double(o, "c", &d, err), BASE_DEC_OK);
    assert_true(d == 1.5);
    assert_int_equal(base_json_get_double(o, "a", &d, err), BASE_DEC_OK);
    assert_int_equal(base_json_get_bool(o, "d", &b, err), BASE_DEC_OK);
    assert_true(b);
    assert_int_equal(base_json_get_i64(o, "b", &i, err), BASE_DEC_BAD_TYPE);
    assert_non_null(strstr(err, "\"b\""));
    assert_int_equal(base_json_get_i64(o, "zz", &i, err), BASE_DEC_BAD_TYPE);
    assert_non_null(strstr(err, "zz"));
    i = 77;
    assert_int_equal(base_json_opt_i64(o, "zz", &i, err), BASE_DEC_OK);
    assert_int_equal(i, 77);
    assert_int_equal(base_json_get_i64(o, "c", &i, err), BASE_DEC_BAD_TYPE);
    json_object_put(o);

    assert_int_equal(base_json_parse("{\"a\":", 5, &o, err), BASE_DEC_TRUNCATED);
    assert_null(o);
    assert_int_equal(base_json_parse("{a:1}", 5, &o, err), BASE_DEC_BAD_JSON);
    assert_int_equal(base_json_parse("{} x", 4, &o, err), BASE_DEC_BAD_JSON);
    assert_int_equal(base_json_parse("{} \n", 4, &o, err), BASE_DEC_OK);
    json_object_put(o);
}

static void test_json_ns_precision(void **state)
{
    /* Realtime-sized integers must come through exactly. */
    char err[BASE_ERRLEN];
    json_object *o;
    const char *text = "{\"t\": 1790000000123456789, \"d\": 12.6}";
    assert_int_equal(base_json_parse(text, strlen(text), &o, err), BASE_DEC_OK);
    int64_t t;
    assert_int_equal(base_json_value_ns(json_object_object_get(o, "t"), &t), BASE_DEC_OK);
    assert_true(t == 1790000000123456789LL);
    assert_int_equal(base_json_value_ns(json_object_object_get(o, "d"), &t), BASE_DEC_OK);
    assert_int_equal(t, 13);
    json_object_put(o);
    /* So must decimals with an exponent (through a double: 256 ns steps). */
    static const struct {
        const char *text;
        int64_t ns;
    } exp[] = {
        {"1.790000000123456789e18", 1790000000123456789LL},
        {"1.7900000001234567885E+18", 1790000000123456789LL},
        {"-1.7900000001234567885e18", -1790000000123456789LL},
        {"17900000001234567891e-1", 1790000000123456789LL},
        {"179000000012345678.9e1", 1790000000123456789LL},
        {"1.5e0", 2},
        {"-2.5", -3},
        {"4e-1", 0},
        {"5e-1", 1},
        {"0.00005e4", 1},
        {"0e99999999", 0},
        {"12e2", 1200},
    };
    for (size_t i = 0; i < sizeof exp / sizeof exp[0]; i++) {
        char line[128];
        snprintf(line, sizeof line, "{\"t\": %s}", exp[i].text);
        assert_int_equal(base_json_parse(line, strlen(line), &o, err), BASE_DEC_OK);
        t = 0;
        assert_int_equal(base_json_value_ns(json_object_object_get(o, "t"), &t), BASE_DEC_OK);
        if (t != exp[i].ns)
            fail_msg("%s read as %lld, not %lld", exp[i].text, (long long)t, (long long)exp[i].ns);
        json_object_put(o);
    }
    /* Beyond ±9.2e18 ns is out of range, in any notation. */
    const char *big = "{\"t\": 9.3e18}";
    assert_int_equal(base_json_parse(big, strlen(big), &o, err), BASE_DEC_OK);
    assert_int_equal(base_json_value_ns(json_object_object_get(o, "t"), &t), BASE_DEC_BAD_VALUE);
    json_object_put(o);
}

static void test_decstats(void **state)
{
    base_decstats_t st = {0};
    base_decstats_add(&st, BASE_DEC_OK);
    base_decstats_add(&st, BASE_DEC_TRUNCATED);
    base_decstats_add(&st, BASE_DEC_TRUNCATED);
    base_decstats_add(&st, BASE_DEC_BAD_JSON);
    assert_int_equal(st.n[BASE_DEC_OK], 1);
    assert_int_equal(base_decstats_errors(&st), 3);
    assert_string_equal(base_dec_name(BASE_DEC_TRUNCATED), "truncated");
    assert_string_equal(base_dec_name((enum base_dec)99), "unknown");
}

static void test_errors_and_time(void **state)
{
    char err[BASE_ERRLEN];
    assert_int_equal(base_err(err, "bad %s %d", "thing", 3), BASE_ERR);
    assert_string_equal(err, "bad thing 3");
    assert_int_equal(base_err(NULL, "ignored"), BASE_ERR);
    int64_t a = base_monotonic_ns();
    base_sleep_ns(1000000);
    int64_t b = base_monotonic_ns();
    assert_true(b - a >= 1000000);
    assert_true(base_realtime_ns() > 1600000000LL * 1000000000LL);
    char *s = NULL;
    assert_int_equal(xasprintf(&s, "%d-%s", 4, "x"), 3);
    assert_string_equal(s, "4-x");
    free(s);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return NULL;
    char *buf = xcalloc(1, 65536);
    size_t n = fread(buf, 1, 65535, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

static void test_afile(void **state)
{
    (void)state;
    char err[BASE_ERRLEN], dir[] = "/tmp/test_base_af.XXXXXX", path[200], tmp[220];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/out.json", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);

    /* Whole: the name appears at commit, the temporary is gone. */
    base_afile_t *af = base_afile_open(path, err);
    assert_non_null(af);
    assert_string_equal(base_afile_path(af), path);
    fputs("first\n", base_afile_stream(af));
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_equal(access(tmp, F_OK), 0);
    assert_int_equal(base_afile_commit(&af, err), BASE_OK);
    assert_null(af);
    assert_int_not_equal(access(tmp, F_OK), 0);
    char *got = slurp(path);
    assert_string_equal(got, "first\n");
    free(got);

    /* Abandoned: the old file stays as it was. */
    af = base_afile_open(path, err);
    fputs("second\n", base_afile_stream(af));
    base_afile_abort(&af);
    assert_null(af);
    base_afile_abort(&af);
    assert_int_not_equal(access(tmp, F_OK), 0);
    got = slurp(path);
    assert_string_equal(got, "first\n");
    free(got);

    /* A write error (file size limit) fails the commit and keeps the old file. */
    struct rlimit old, small = {.rlim_cur = 4096, .rlim_max = RLIM_INFINITY};
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    small.rlim_max = old.rlim_max;
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
    af = base_afile_open(path, err);
    for (int i = 0; i < 2000; i++)
        fputs("0123456789", base_afile_stream(af));
    int rc = base_afile_commit(&af, err);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    signal(SIGXFSZ, prev);
    assert_int_equal(rc, BASE_ERR);
    assert_non_null(strstr(err, "write failed"));
    assert_non_null(strstr(err, path));
    assert_int_not_equal(access(tmp, F_OK), 0);
    got = slurp(path);
    assert_string_equal(got, "first\n");
    free(got);

    /* A symbolic link keeps its link; its target gets the new content. */
    char link[220];
    snprintf(link, sizeof link, "%s/link.json", dir);
    assert_int_equal(symlink(path, link), 0);
    af = base_afile_open(link, err);
    assert_non_null(af);
    fputs("through\n", base_afile_stream(af));
    assert_int_equal(base_afile_commit(&af, err), BASE_OK);
    struct stat lst;
    assert_int_equal(lstat(link, &lst), 0);
    assert_true(S_ISLNK(lst.st_mode));
    got = slurp(path);
    assert_string_equal(got, "through\n");
    free(got);
    unlink(link);
    /* A link to a file not there yet: the file appears where it points. */
    char target[220];
    snprintf(target, sizeof target, "%s/new.json", dir);
    assert_int_equal(symlink("new.json", link), 0);
    af = base_afile_open(link, err);
    assert_non_null(af);
    fputs("made\n", base_afile_stream(af));
    assert_int_equal(base_afile_commit(&af, err), BASE_OK);
    assert_int_equal(lstat(link, &lst), 0);
    assert_true(S_ISLNK(lst.st_mode));
    got = slurp(target);
    assert_string_equal(got, "made\n");
    free(got);
    unlink(link);
    unlink(target);

    /* A device is written in place, not replaced by a file. */
    af = base_afile_open("/dev/null", err);
    assert_non_null(af);
    fputs("gone\n", base_afile_stream(af));
    assert_int_equal(base_afile_commit(&af, err), BASE_OK);
    struct stat dst;
    assert_int_equal(stat("/dev/null", &dst), 0);
    assert_true(S_ISCHR(dst.st_mode));
    assert_int_not_equal(access("/dev/null.tmp", F_OK), 0);

    /* The name is a directory: rename fails, nothing is left behind. */
    unlink(path);
    assert_int_equal(mkdir(path, 0700), 0);
    af = base_afile_open(path, err);
    fputs("x", base_afile_stream(af));
    assert_int_equal(base_afile_commit(&af, err), BASE_ERR);
    assert_non_null(strstr(err, path));
    assert_int_not_equal(access(tmp, F_OK), 0);
    rmdir(path);

    /* No such directory: refused at open with the temporary's name. */
    snprintf(path, sizeof path, "%s/missing/out.json", dir);
    assert_null(base_afile_open(path, err));
    assert_non_null(strstr(err, "missing/out.json.tmp"));
    assert_int_equal(rmdir(dir), 0);
}

/* ---- streaming JSON ------------------------------------------------------- */

/* Every element of the array in TEXT (a file), each validated; BASE_ERR and the message on bad
 * input. */
static int walk_array(const char *text, size_t max_value, size_t *count, char *err)
{
    char *path = write_tmp(text);
    base_jstream_t *js = base_jstream_open(path, max_value, err);
    int rc = BASE_ERR;
    *count = 0;
    if (js == NULL)
        goto out;
    if (base_jstream_expect(js, '[', err) != BASE_OK)
        goto out;
    bool first = true;
    for (;;) {
        int r = base_jstream_next(js, ']', &first, err);
        if (r < 0)
            goto out;
        if (r == 0)
            break;
        struct base_jspan v;
        if (base_jstream_value(js, &v, err) != BASE_OK)
            goto out;
        (*count)++;
    }
    rc = base_jstream_end(js, err);
out:
    base_jstream_destroy(&js);
    unlink(path);
    free(path);
    return rc;
}

static void test_jstream_validates(void **state)
{
    (void)state;
    char err[BASE_ERRLEN];
    size_t n;
    static const char *const good[] = {
        "[]",
        " [ ] ",
        "[1,-2.5e3,0,true,false,null,\"a\\u00e9\\n\"]",
        "[{\"a\":[{},[]],\"b\":{\"c\":\"}\"}}]",
        "[NaN,-Infinity,Infinity]",
        "[\"\xc3\xa9\xe2\x82\xac\"]",
    };
    static const size_t counts[] = {0, 0, 7, 1, 3, 1};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        assert_int_equal(walk_array(good[i], 1 << 20, &n, err), BASE_OK);
        assert_int_equal(n, counts[i]);
    }
    static const char *const bad[] = {
        "[1,]",        "[01]",      "[1.]",
        "[.5]",        "[+1]",      "[1e]",
        "[\"a\x01\"]", "[\"\\x\"]", "[\"\\u12g4\"]",
        "[{\"a\" 1}]", "[{1:2}]",   "[{\"a\":1,}]",
        "[tru]",       "[nul]",     "[1 2]",
        "[{\"a\":1}}", "[1] x",     "[\"abc",
        "[{\"a\":",    "[[[",       "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(walk_array(bad[i], 1 << 20, &n, err), BASE_ERR);
        assert_non_null(strstr(err, "/tmp/dptest-cfg-")); /* the message names the file */
    }
    /* Cut short: said as such, with the offset. */
    assert_int_equal(walk_array("[{\"a\":[1,2", 1 << 20, &n, err), BASE_ERR);
    assert_non_null(strstr(err, "ends early"));
    /* Deeper than the scanner's stack: refused, not a crash. */
    char deep[2100];
    memset(deep, '[', 1050);
    memset(deep + 1050, ']', 1050);
    deep[2099] = '\0';
    assert_int_equal(walk_array(deep, 1 << 20, &n, err), BASE_ERR);
}

static void test_jstream_large_values(void **state)
{
    (void)state;
    char err[BASE_ERRLEN];
    size_t n;
    /* Values that cross the reader's 4 MiB chunks, and one string of 9 MiB. */
    size_t big = 9u << 20;
    char *text = xmalloc(big + 4096 * 100 + 64);
    size_t k = 0;
    text[k++] = '[';
    for (int i = 0; i < 3000; i++)
        k += (size_t)sprintf(text + k, "%s{\"ts\":%d.125,\"name\":\"op%d\"}", i ? "," : "", i, i);
    text[k++] = ',';
    text[k++] = '"';
    memset(text + k, 'x', big);
    k += big;
    text[k++] = '"';
    text[k++] = ']';
    text[k] = '\0';
    assert_int_equal(walk_array(text, 16u << 20, &n, err), BASE_OK);
    assert_int_equal(n, 3001);
    /* The same with a limit below the big value: refused with its size. */
    assert_int_equal(walk_array(text, 1u << 20, &n, err), BASE_ERR);
    assert_non_null(strstr(err, "larger than"));
    free(text);
}

static void test_jspan_access(void **state)
{
    (void)state;
    char err[BASE_ERRLEN];
    char *path =
        write_tmp("{\"ts\": 1700000000123.4567, \"pid\":\"Spans\", \"args\":{\"n\":[1,{\"x\":2}]},"
                  "\"dur\":12,\"name\":\"a\\\"b\\u00e9\"}");
    base_jstream_t *js = base_jstream_open(path, 1 << 20, err);
    assert_non_null(js);
    assert_false(base_jstream_gzip(js));
    struct base_jspan obj, k, v;
    assert_int_equal(base_jstream_value(js, &obj, err), BASE_OK);
    const char *cur = NULL;
    int seen = 0;
    while (base_jspan_member(&obj, &cur, &k, &v)) {
        int64_t ns;
        char buf[32];
        if (base_jspan_is(&k, "ts")) {
            assert_int_equal(base_jspan_ns(&v, 3, &ns), BASE_OK);
            assert_true(ns == 1700000000123457LL); /* µs → ns, rounded, exactly */
        } else if (base_jspan_is(&k, "pid")) {
            base_jspan_str(&v, buf, sizeof buf);
            assert_string_equal(buf, "Spans");
        } else if (base_jspan_is(&k, "args")) {
            assert_int_equal((int)v.n, (int)strlen("{\"n\":[1,{\"x\":2}]}"));
        } else if (base_jspan_is(&k, "dur")) {
            assert_int_equal(base_jspan_ns(&v, 3, &ns), BASE_OK);
            assert_true(ns == 12000);
        } else if (base_jspan_is(&k, "name")) {
            base_jspan_str(&v, buf, sizeof buf);
            assert_string_equal(buf, "a\"b\xc3\xa9");
        }
        seen++;
    }
    assert_int_equal(seen, 5);
    assert_int_equal(base_jstream_end(js, err), BASE_OK);
    base_jstream_destroy(&js);
    assert_null(js);
    unlink(path);
    free(path);

    /* Numbers: exponents, strings holding numbers, what does not fit. */
    struct {
        const char *text;
        int scale, rc;
        int64_t want;
    } nums[] = {
        {"1.5e3", 3, BASE_OK, 1500000}, {"\"42.001\"", 3, BASE_OK, 42001},
        {"-0.0004", 3, BASE_OK, 0},     {"-2.0005", 3, BASE_OK, -2001},
        {"9e30", 0, BASE_ERR, 0},       {"abc", 0, BASE_ERR, 0},
        {"1e-50", 3, BASE_OK, 0},       {"1712345678901234", 3, BASE_OK, 1712345678901234000LL},
    };
    for (size_t i = 0; i < sizeof nums / sizeof *nums; i++) {
        struct base_jspan s = {nums[i].text, strlen(nums[i].text), true};
        int64_t out = -1;
        assert_int_equal(base_jspan_ns(&s, nums[i].scale, &out), nums[i].rc);
        if (nums[i].rc == BASE_OK)
            assert_true(out == nums[i].want);
    }

    /* A copy of a value that is not clean JSON: U+FFFD for bad bytes, null for NaN. */
    const char raw[] = "{\"a\":\"x\xff\",\"b\":NaN,\"c\":[-Infinity],\"d\":\"NaN\"}";
    struct base_jspan s = {raw, strlen(raw), false};
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    base_jspan_write(&s, m);
    fclose(m);
    assert_string_equal(buf, "{\"a\":\"x\\ufffd\",\"b\":null,\"c\":[null],\"d\":\"NaN\"}");
    free(buf);
}

static void test_jstream_gzip(void **state)
{
    (void)state;
    char err[BASE_ERRLEN];
    char *path = write_tmp("[1, 2, 3]");
    char cmd[600];
    snprintf(cmd, sizeof cmd, "gzip -c %s > %s.gz", path, path);
    if (system(cmd) != 0)
        skip();
    char gz[100];
    snprintf(gz, sizeof gz, "%s.gz", path);
    size_t n = 0;
    base_jstream_t *js = base_jstream_open(gz, 1 << 20, err);
    assert_non_null(js);
    assert_true(base_jstream_gzip(js));
    assert_int_equal(base_jstream_expect(js, '[', err), BASE_OK);
    bool first = true;
    struct base_jspan v;
    while (base_jstream_next(js, ']', &first, err) == 1 &&
           base_jstream_value(js, &v, err) == BASE_OK)
        n++;
    assert_int_equal(n, 3);
    base_jstream_destroy(&js);
    /* Cut short inside the deflate stream: an error, not a short file. */
    snprintf(cmd, sizeof cmd, "head -c 20 %s > %s.cut", gz, gz);
    assert_int_equal(system(cmd), 0);
    snprintf(cmd, sizeof cmd, "%s.cut", gz);
    js = base_jstream_open(cmd, 1 << 20, err);
    if (js) {
        assert_int_equal(base_jstream_expect(js, '[', err), BASE_OK);
        first = true;
        int r = 0;
        while ((r = base_jstream_next(js, ']', &first, err)) == 1 &&
               base_jstream_value(js, &v, err) == BASE_OK)
            ;
        assert_int_equal(r, BASE_ERR);
        base_jstream_destroy(&js);
    }
    assert_non_null(strstr(err, ".cut"));
    unlink(cmd);
    unlink(gz);
    unlink(path);
    free(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_defaults),
        cmocka_unit_test(test_config_layers),
        cmocka_unit_test(test_config_refusals),
        cmocka_unit_test(test_config_shared),
        cmocka_unit_test(test_json_strict),
        cmocka_unit_test(test_json_ns_precision),
        cmocka_unit_test(test_decstats),
        cmocka_unit_test(test_errors_and_time),
        cmocka_unit_test(test_afile),
        cmocka_unit_test(test_jstream_validates),
        cmocka_unit_test(test_jstream_large_values),
        cmocka_unit_test(test_jspan_access),
        cmocka_unit_test(test_jstream_gzip),
    };
    return cmocka_run_group_tests_name("base", tests, NULL, NULL);
}
