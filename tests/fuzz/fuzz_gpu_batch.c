/* libFuzzer target: the GPU event batch decoder. */
#include <stdlib.h>

#include "gpu/gpu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gpu_event_t ev[64];
    size_t n = 0;
    char err[BASE_ERRLEN];
    if (gpu_batch_decode(data, size, 3, ev, 64, &n, err) == BASE_DEC_OK) {
        for (size_t i = 0; i < n; i++)
            if (ev[i].end_ns < ev[i].start_ns || ev[i].node != 3)
                abort();
    } else if (n != 0) {
        abort();
    }
    return 0;
}
