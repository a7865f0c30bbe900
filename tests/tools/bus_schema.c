/*
 * bus_schema — print the message schema table of bus/ as Markdown.  The
 * block between the schema markers of docs/PROTOCOL.md is exactly this
 * output; tests/integration/test_bus_schema_doc.sh keeps them equal.
 */
#include <stdio.h>
#include <string.h>

#include "bus/bus.h"

static void type_text(const struct bus_field *f, enum bus_type t, char *out, size_t len)
{
    char inner[128];
    switch (t) {
    case BUS_T_ARR:
    case BUS_T_MAP:
        type_text(f, f->item, inner, sizeof inner);
        snprintf(out, len, "%s of %s", t == BUS_T_ARR ? "array" : "map", inner);
        return;
    case BUS_T_PAIR:
        snprintf(out, len, "[%s, %s]", bus_type_name(f->pair[0]), bus_type_name(f->pair[1]));
        return;
    case BUS_T_INT:
    case BUS_T_NUM:
        if (f->ranged && f->max >= 9e18) {
            snprintf(out, len, "%s >= %.15g", bus_type_name(t), f->min);
            return;
        }
        if (f->ranged) {
            snprintf(out, len, "%s %.15g..%.15g", bus_type_name(t), f->min, f->max);
            return;
        }
        break;
    case BUS_T_STR:
        if (f->enums) {
            size_t o = (size_t)snprintf(out, len, "string:");
            for (const char *const *e = f->enums; *e && o < len; e++)
                o += (size_t)snprintf(out + o, len - o, "%s%s", e == f->enums ? " " : " \\| ", *e);
            return;
        }
        break;
    default:
        break;
    }
    snprintf(out, len, "%s", bus_type_name(t));
}

static void print_fields(const struct bus_field *fields, size_t n, const char *prefix)
{
    for (size_t i = 0; i < n; i++) {
        const struct bus_field *f = &fields[i];
        char type[256], name[128];
        type_text(f, f->type, type, sizeof type);
        snprintf(name, sizeof name, "%s%s", prefix, f->name);
        printf("| `%s` | %s | %s | %s | %s |\n", name, type,
               f->required ? (f->key ? "yes, key" : "yes") : (f->key ? "key" : ""),
               f->unit ? f->unit : "", f->doc ? f->doc : "");
        if (f->sub != NULL) {
            char sub[160];
            snprintf(sub, sizeof sub, "%s%s%s.", prefix, f->name, f->type == BUS_T_ARR ? "[]" : "");
            print_fields(f->sub, f->nsub, sub);
        }
    }
}

int main(void)
{
    static const char *const cache_names[] = {"never", "latest per key", "every message per key"};
    for (int k = 0; k < BUS_K_NKINDS; k++) {
        const struct bus_kind_def *d = bus_kind_def((enum bus_kind)k);
        printf("### `%s` — %s\n\n", d->name, d->doc);
        printf("Route: %s. Cached for late joiners: %s.", d->route, cache_names[d->cache]);
        if (d->flags & BUS_KF_PAYLOAD)
            printf(" Payload frame: required, %zu + `%s` x %zu bytes.", d->payload_hdr,
                   d->count_field, d->payload_unit);
        else
            printf(" Payload frame: none.");
        if (d->flags & BUS_KF_SENDER_NODE)
            printf(" `node` (when present) equals the topic's node.");
        if (d->flags & BUS_KF_SIM)
            printf(" **Simulation only.**");
        printf("\n\n| field | type | required | unit | meaning |\n|---|---|---|---|---|\n");
        printf("| `type` | string | yes | | `\"%s\"` |\n", d->name);
        printf("| `seq` | uint64 | yes | | per (sender, topic) counter, from 1 |\n");
        print_fields(d->fields, d->nfields, "");
        printf("\n");
    }
    return 0;
}
