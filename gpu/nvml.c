/*
 * Device metrics of NVIDIA GPUs through NVML (gpu.h): the same fields and
 * validity bits as amdgpu's sysfs (gpu/metrics.c), so that a field the
 * driver does not give (power on some boards) is left out and the rest
 * shows.  libnvidia-ml is opened with dlopen: nothing links it, and a host
 * without it simply has no NVIDIA metrics.  The few types used are NVML's
 * stable ABI, declared here since the library's header is not always
 * installed where the project is built.
 */
#include "gpu/gpu.h"

#include <assert.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int nvml_ret; /* nvmlReturn_t: 0 success, 3 not supported, ... */
typedef struct nvml_device *nvml_dev;
struct nvml_util {
    unsigned int gpu, memory; /* % of the last sample period */
};
struct nvml_mem {
    unsigned long long total, free, used; /* bytes; used counts what the driver reserves */
};
struct nvml_mem_v2 {
    unsigned int version;
    unsigned long long total, reserved, free, used; /* bytes */
};

#define NVML_OK            0
#define NVML_NOT_SUPPORTED 3
#define NVML_TEMP_GPU      0
#define NVML_NAME_LEN      96 /* NVML_DEVICE_NAME_V2_BUFFER_SIZE: a shorter buffer is refused */
/* NVML_STRUCT_VERSION(Memory, 2): the struct's size and its version in the top byte. */
#define NVML_MEM_V2 ((unsigned int)sizeof(struct nvml_mem_v2) | (2u << 24))

/* Every entry point used: its name and its parameters (all return nvml_ret). */
#define NVML_FNS(X)                                                                                \
    X(nvmlInit_v2, (void))                                                                         \
    X(nvmlShutdown, (void))                                                                        \
    X(nvmlDeviceGetCount_v2, (unsigned int *))                                                     \
    X(nvmlDeviceGetHandleByIndex_v2, (unsigned int, nvml_dev *))                                   \
    X(nvmlDeviceGetName, (nvml_dev, char *, unsigned int))                                         \
    X(nvmlDeviceGetUtilizationRates, (nvml_dev, struct nvml_util *))                               \
    X(nvmlDeviceGetMemoryInfo, (nvml_dev, struct nvml_mem *))                                      \
    X(nvmlDeviceGetPowerUsage, (nvml_dev, unsigned int *))                                         \
    X(nvmlDeviceGetTemperature, (nvml_dev, int, unsigned int *))

struct gpu_nvml {
    void *lib;
#define FN_PTR(f, args) nvml_ret(*f) args;
    NVML_FNS(FN_PTR)
#undef FN_PTR
    /* Drivers since 510: memory in use without what the driver reserves
     * for itself (about 0.6 GiB on an H200), as nvidia-smi shows it.
     * Optional: older drivers lack it, and the first version's "used"
     * counts the reserve too. */
    nvml_ret (*mem_v2)(nvml_dev, struct nvml_mem_v2 *);
};

gpu_nvml_t *gpu_nvml_new(const char *library, char *err)
{
    if (library == NULL || *library == '\0') {
        base_err(err, "nvml: no library");
        return NULL;
    }
    gpu_nvml_t *self = xcalloc(1, sizeof *self);
    self->lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (self->lib == NULL) {
        base_err(err, "nvml: cannot load: %s", dlerror());
        free(self);
        return NULL;
    }
#define FN_LOAD(f, args)                                                                           \
    *(void **)&self->f = dlsym(self->lib, #f);                                                     \
    if (self->f == NULL) {                                                                         \
        base_err(err, "nvml: %s lacks %s", library, #f);                                           \
        goto err;                                                                                  \
    }
    NVML_FNS(FN_LOAD)
#undef FN_LOAD
    *(void **)&self->mem_v2 = dlsym(self->lib, "nvmlDeviceGetMemoryInfo_v2");
    nvml_ret rc = self->nvmlInit_v2();
    if (rc != NVML_OK) {
        base_err(err, "nvml: nvmlInit failed (NVML error %d: no NVIDIA driver or GPU)", rc);
        goto err;
    }
    return self;
err:
    dlclose(self->lib);
    free(self);
    return NULL;
}

void gpu_nvml_destroy(gpu_nvml_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    gpu_nvml_t *self = *self_p;
    self->nvmlShutdown();
    dlclose(self->lib);
    free(self);
    *self_p = NULL;
}

/* One answer counted: fine, not given by this board (not counted), or an error. */
static bool took(base_decstats_t *st, nvml_ret rc)
{
    if (st != NULL && rc != NVML_NOT_SUPPORTED)
        base_decstats_add(st, rc == NVML_OK ? BASE_DEC_OK : BASE_DEC_BAD_VALUE);
    return rc == NVML_OK;
}

/* Memory in use and its size: the second version where the driver has it,
 * else the first (a driver that has the entry point but refuses the
 * version falls back too, uncounted). */
static void read_memory(gpu_nvml_t *self, nvml_dev dev, gpu_metrics_t *m, base_decstats_t *st)
{
    unsigned long long total, used;
    struct nvml_mem_v2 v2 = {.version = NVML_MEM_V2};
    struct nvml_mem v1;
    if (self->mem_v2 != NULL && self->mem_v2(dev, &v2) == NVML_OK) {
        took(st, NVML_OK);
        total = v2.total;
        used = v2.used;
    } else if (took(st, self->nvmlDeviceGetMemoryInfo(dev, &v1))) {
        total = v1.total;
        used = v1.used;
    } else {
        return;
    }
    if (total > 0 && used <= total) {
        m->vram_used = used;
        m->vram_total = total;
        m->valid |= GPU_MET_VRAM_USED | GPU_MET_VRAM_TOTAL;
    }
}

int gpu_nvml_read(gpu_nvml_t *self, gpu_metrics_t *out, size_t max, size_t *n, base_decstats_t *st,
                  char *err)
{
    assert(self);
    *n = 0;
    unsigned int count = 0;
    nvml_ret rc = self->nvmlDeviceGetCount_v2(&count);
    if (rc != NVML_OK)
        return base_err(err, "nvml: nvmlDeviceGetCount failed (NVML error %d)", rc);
    for (unsigned int i = 0; i < count && *n < max; i++) {
        nvml_dev dev;
        if (!took(st, self->nvmlDeviceGetHandleByIndex_v2(i, &dev)))
            continue;
        gpu_metrics_t *m = &out[(*n)++];
        memset(m, 0, sizeof *m);
        m->card = i;
        m->vendor = "nvidia";
        char name[NVML_NAME_LEN] = "";
        if (self->nvmlDeviceGetName(dev, name, sizeof name) != NVML_OK || name[0] == '\0')
            snprintf(name, sizeof name, "NVIDIA GPU %u", i);
        size_t len = strnlen(name, sizeof m->name - 1); /* the record's name is shorter */
        memcpy(m->name, name, len);
        m->name[len] = '\0';
        struct nvml_util u;
        if (took(st, self->nvmlDeviceGetUtilizationRates(dev, &u)) && u.gpu <= 100) {
            m->busy_pct = u.gpu;
            m->valid |= GPU_MET_BUSY;
        }
        read_memory(self, dev, m, st);
        unsigned int v;
        /* Milliwatts; beyond 10 kW is no GPU. */
        if (took(st, self->nvmlDeviceGetPowerUsage(dev, &v)) && v <= 10000000u) {
            m->power_uw = (uint64_t)v * 1000;
            m->valid |= GPU_MET_POWER;
        }
        if (took(st, self->nvmlDeviceGetTemperature(dev, NVML_TEMP_GPU, &v)) && v <= 250) {
            m->temp_mc = (int64_t)v * 1000;
            m->valid |= GPU_MET_TEMP;
        }
    }
    return BASE_OK;
}
