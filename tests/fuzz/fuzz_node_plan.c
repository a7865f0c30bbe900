/* libFuzzer target: a `plan` header as an agent reads it (schema, then plan). */
#include <stdlib.h>

#include "bus/bus.h"
#include "node/node_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_object *obj = NULL;
    char err[BASE_ERRLEN];
    if (base_json_parse((const char *)data, size, &obj, err) != BASE_DEC_OK)
        return 0;
    if (bus_schema_validate(BUS_K_PLAN, obj, err) == BASE_DEC_OK) {
        struct node_plan plan = {0};
        if (node_plan_from_json(obj, &plan, err) == BASE_DEC_OK &&
            (plan.nnodes > NODE_MAX_NODES || (plan.nedges > 0 && plan.edges == NULL)))
            abort();
        node_plan_free(&plan);
    }
    json_object_put(obj);
    return 0;
}
