/* libFuzzer target: the recording reader, on the input as a whole file. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bus/bus.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("dprec", 0);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size)
        abort();
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    struct bus_limits lim = {.max_header = 4096, .max_payload = 65536};
    char err[BASE_ERRLEN];
    bus_recreader_t *r = bus_recreader_open(path, &lim, err);
    if (r != NULL) {
        struct bus_rec_frame f;
        enum base_dec dec;
        /* Every call consumes input: the loop ends within size + 1 calls. */
        for (size_t i = 0; i <= size + 1; i++) {
            int rc = bus_recreader_next(r, &f, &dec, err);
            if (rc == 0)
                break;
            if (i == size + 1)
                abort();
        }
        bus_recreader_destroy(&r);
    }
    close(fd);
    return 0;
}
