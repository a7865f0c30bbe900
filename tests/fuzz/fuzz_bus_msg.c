/* libFuzzer target: the bus's generic message decoder. */
#include <stdlib.h>

#include "bus/bus.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const void *f[4];
    size_t lens[4];
    size_t n = fuzz_split(data, size, f, lens, 4);
    struct bus_frame frames[4];
    for (size_t i = 0; i < n; i++)
        frames[i] = (struct bus_frame){f[i], lens[i]};
    struct bus_limits lim = {.max_header = 4096, .max_payload = 65536};
    bus_msg_t *msg = NULL;
    char err[BASE_ERRLEN];
    if (bus_msg_decode(frames, n, &lim, &msg, err) == BASE_DEC_OK) {
        /* An accepted message re-encodes as the same kind. */
        struct bus_frame out[BUS_MAX_FRAMES];
        if (bus_msg_frames(msg, out) < 2)
            abort();
        bus_msg_destroy(&msg);
    } else if (msg != NULL) {
        abort();
    }
    return 0;
}
