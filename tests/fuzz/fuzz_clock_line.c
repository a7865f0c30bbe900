/* libFuzzer target: the SPEC §4.5 JSON-lines decoder (probe log and fits). */
#include <stdlib.h>

#include "clock/clock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    clock_record_t rec;
    char err[BASE_ERRLEN];
    enum base_dec rc = clock_json_decode_line((const char *)data, size, &rec, err);
    if ((unsigned)rc >= BASE_DEC_NKINDS)
        abort();
    return 0;
}
