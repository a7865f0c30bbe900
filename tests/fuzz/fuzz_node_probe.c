/* libFuzzer target: the UDP probe packet decoder, keyed and not. */
#include <stdlib.h>
#include <string.h>

#include "node/node_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const uint8_t key[NODE_PROBE_KEY_SIZE] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14};
    struct node_probe_pkt pkt;
    char err[BASE_ERRLEN];
    if (node_probe_decode(data, size, NULL, &pkt, err) == BASE_DEC_OK) {
        /* What decodes re-encodes to a packet that decodes and re-encodes identically. */
        uint8_t a[NODE_PROBE_MAX_SIZE], b[NODE_PROBE_MAX_SIZE];
        struct node_probe_pkt again;
        size_t la = node_probe_encode(&pkt, NULL, a);
        if (node_probe_decode(a, la, NULL, &again, err) != BASE_DEC_OK)
            abort();
        size_t lb = node_probe_encode(&again, NULL, b);
        if (la != lb || memcmp(a, b, la) != 0)
            abort();
    }
    node_probe_decode(data, size, key, &pkt, err);
    return 0;
}
