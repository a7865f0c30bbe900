/* libFuzzer target: the configuration file reader and strict JSON parsing. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/base.h"

static const struct base_cfg_key keys[] = {
    {"probe_cadence_us", BASE_CFG_INT, "800", 50, 1e6, ""},
    {"guard_ns", BASE_CFG_DOUBLE, "2.5", 0, 1e6, ""},
    {"color", BASE_CFG_BOOL, "false", 1, 0, ""},
    {"output_dir", BASE_CFG_STRING, "/tmp", 1, 0, ""},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_object *obj = NULL;
    char err[BASE_ERRLEN];
    if (base_json_parse((const char *)data, size, &obj, err) == BASE_DEC_OK) {
        int64_t i;
        base_json_get_i64(obj, "probe_cadence_us", &i, err);
        json_object_put(obj);
    }
    int fd = memfd_create("cfg", 0);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size)
        abort();
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    base_config_t *c = base_config_new(keys, BASE_ARRAY_LEN(keys));
    if (base_config_load_file(c, path, err) == BASE_OK) {
        int64_t v = base_config_int(c, "probe_cadence_us");
        if (v < 50 || v > 1000000)
            abort();
    }
    base_config_destroy(&c);
    close(fd);
    return 0;
}
