/*
 * A fake libnvidia-ml.so.1 for tests: the NVML entry points dpnode's
 * metrics use, answering for two boards:
 *
 *   0  "Fake NVIDIA A100": busy 37 %, 1 GiB of 40 GiB used, 123.45 W, 54 °C
 *   1  "Fake NVIDIA T4":   busy 5 %, 0 of 16 GiB used, no power reading
 *      (NVML_ERROR_NOT_SUPPORTED, as on some boards), 40 °C
 *
 * Each board's driver reserves 512 MiB, which the first version of
 * nvmlDeviceGetMemoryInfo counts as used, as the real driver does, and
 * the second does not.  FAKENVML_NO_MEMINFO_V2 makes the second answer
 * NVML_ERROR_FUNCTION_NOT_FOUND, as a driver older than 510 would have it.
 *
 * FAKENVML_INIT=N makes nvmlInit_v2 answer N (9: NVML_ERROR_DRIVER_NOT_LOADED,
 * as on a host with the library but no driver).  While the file named by
 * FAKENVML_HANG_FILE exists, nvmlDeviceGetUtilizationRates blocks, as NVML
 * does while a board resets or falls off the bus; it says on stderr when
 * it begins and ends, with the time (CLOCK_REALTIME, s).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct nvml_device *nvml_dev;
struct nvml_util {
    unsigned int gpu, memory;
};
struct nvml_mem {
    unsigned long long total, free, used;
};
struct nvml_mem_v2 {
    unsigned int version;
    unsigned long long total, reserved, free, used;
};
#define RESERVED (512ULL << 20)

static struct nvml_device {
    const char *name;
    unsigned int busy, power_mw, temp_c;
    unsigned long long total, used;
} boards[2] = {
    {"Fake NVIDIA A100", 37, 123450, 54, 40ULL << 30, 1ULL << 30},
    {"Fake NVIDIA T4", 5, 0, 40, 16ULL << 30, 0},
};

int nvmlInit_v2(void);
int nvmlInit_v2(void)
{
    const char *e = getenv("FAKENVML_INIT");
    return e ? atoi(e) : 0;
}

int nvmlShutdown(void);
int nvmlShutdown(void)
{
    return 0;
}

int nvmlDeviceGetCount_v2(unsigned int *n);
int nvmlDeviceGetCount_v2(unsigned int *n)
{
    *n = 2;
    return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvml_dev *dev);
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvml_dev *dev)
{
    if (i >= 2)
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    *dev = &boards[i];
    return 0;
}

int nvmlDeviceGetName(nvml_dev dev, char *name, unsigned int len);
int nvmlDeviceGetName(nvml_dev dev, char *name, unsigned int len)
{
    snprintf(name, len, "%s", dev->name);
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int nvmlDeviceGetUtilizationRates(nvml_dev dev, struct nvml_util *u);
int nvmlDeviceGetUtilizationRates(nvml_dev dev, struct nvml_util *u)
{
    const char *hang = getenv("FAKENVML_HANG_FILE");
    if (hang && access(hang, F_OK) == 0) {
        fprintf(stderr, "fake nvml: hanging at %.3f\n", now_s());
        while (access(hang, F_OK) == 0)
            usleep(20000);
        fprintf(stderr, "fake nvml: answering again at %.3f\n", now_s());
    }
    u->gpu = dev->busy;
    u->memory = 0;
    return 0;
}

int nvmlDeviceGetMemoryInfo(nvml_dev dev, struct nvml_mem *m);
int nvmlDeviceGetMemoryInfo(nvml_dev dev, struct nvml_mem *m)
{
    m->total = dev->total;
    m->used = dev->used + RESERVED;
    m->free = dev->total - m->used;
    return 0;
}

int nvmlDeviceGetMemoryInfo_v2(nvml_dev dev, struct nvml_mem_v2 *m);
int nvmlDeviceGetMemoryInfo_v2(nvml_dev dev, struct nvml_mem_v2 *m)
{
    const char *old = getenv("FAKENVML_NO_MEMINFO_V2");
    if (old != NULL && *old != '\0')
        return 13; /* NVML_ERROR_FUNCTION_NOT_FOUND */
    /* nvml.h's nvmlMemory_v2: 40 bytes, version 2 in the top byte. */
    if (m->version != 0x02000028u)
        return 25; /* NVML_ERROR_ARGUMENT_VERSION_MISMATCH */
    m->total = dev->total;
    m->reserved = RESERVED;
    m->used = dev->used;
    m->free = dev->total - RESERVED - dev->used;
    return 0;
}

int nvmlDeviceGetPowerUsage(nvml_dev dev, unsigned int *mw);
int nvmlDeviceGetPowerUsage(nvml_dev dev, unsigned int *mw)
{
    if (dev->power_mw == 0)
        return 3; /* NVML_ERROR_NOT_SUPPORTED */
    *mw = dev->power_mw;
    return 0;
}

int nvmlDeviceGetTemperature(nvml_dev dev, int sensor, unsigned int *c);
int nvmlDeviceGetTemperature(nvml_dev dev, int sensor, unsigned int *c)
{
    if (sensor != 0)
        return 2;
    *c = dev->temp_c;
    return 0;
}
