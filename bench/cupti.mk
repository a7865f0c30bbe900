# CUPTI's floor (bench/cupti_floor.c): an injection library that asks CUPTI
# what libdptrace_cupti.so asks and does nothing with it, for the CUPTI
# benches.  A helper, built with the tools.
ifeq ($(GPU_HAVE_CUPTI),1)
CUPTI_FLOOR := bench/libcupti_floor.so
TOOLS += $(CUPTI_FLOOR)
$(CUPTI_FLOOR)_SRCS := bench/cupti_floor.c
$(CUPTI_FLOOR)_LDFLAGS := -shared -Wl,-soname,libcupti_floor.so
$(CUPTI_FLOOR)_LDLIBS := -ldl -lpthread
cupti_floor_CFLAGS := $(CUPTI_CFLAGS)
endif
