# Test helper programs of the bus module (built only when bus is in MODULES;
# the emitter also needs gpu/ for the event record codec).
ifneq ($(filter bus,$(MODULES)),)
TOOLS += tests/tools/bus_hub tests/tools/bus_tail tests/tools/bus_schema tests/tools/rec_check
tests/tools/bus_hub_SRCS := tests/tools/bus_hub.c
tests/tools/bus_tail_SRCS := tests/tools/bus_tail.c
tests/tools/bus_schema_SRCS := tests/tools/bus_schema.c
tests/tools/rec_check_SRCS := tests/tools/rec_check.c
ifneq ($(filter gpu,$(MODULES)),)
TOOLS += tests/tools/bus_emit tests/tools/json_parse
tests/tools/json_parse_SRCS := tests/tools/json_parse.c
tests/tools/bus_emit_SRCS := tests/tools/bus_emit.c
endif
endif
