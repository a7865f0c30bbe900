/*
 * A fake libcuda.so.1 for tests: cuDeviceGetCount alone, answering
 * CUDA_ERROR_NOT_INITIALIZED for its first FAKECUDA_LATE calls (the driver
 * is still inside cuInit when it loads libdptrace_cupti.so), then 2.
 */
#include <stdlib.h>

int cuDeviceGetCount(int *count);
int cuDeviceGetCount(int *count)
{
    static int calls;
    const char *late = getenv("FAKECUDA_LATE");
    if (calls++ < (late ? atoi(late) : 1))
        return 3; /* CUDA_ERROR_NOT_INITIALIZED */
    *count = 2;
    return 0;
}
