/* libFuzzer target: the local-link decoder dpnode runs on what applications send. */
#include <stdlib.h>

#include "gpu/gpu.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static gpu_ingest_t *ing; /* one decoder for the whole run, as in dpnode */
    if (ing == NULL)
        ing = gpu_ingest_new(NULL, NULL, NULL, NULL);
    const void *f[4];
    size_t lens[4];
    size_t n = fuzz_split(data, size, f, lens, 4);
    gpu_msg_t msg;
    char err[BASE_ERRLEN];
    if (gpu_ingest_decode(ing, f, lens, n, &msg, err) == BASE_DEC_OK && msg.kind >= GPU_MSG_NKINDS)
        abort();
    return 0;
}
