# gpu: the event model and wire codec, names and the scope tree, clock maps,
# the local link (sender and receiver), the HIP resolver, the simulated
# workload, CUPTI record translation, device metrics, the source table.
gpu_SRCS := gpu/event.c gpu/ring.c gpu/names.c gpu/clockmap.c gpu/link.c gpu/ingest.c \
            gpu/sim.c gpu/metrics.c gpu/nvml.c gpu/cupti.c gpu/hip.c gpu/source.c

# HIP host code in C: the headers need the platform chosen.
HIP_CFLAGS := -D__HIP_PLATFORM_AMD__
hip_CFLAGS := $(HIP_CFLAGS)
dptrace_hip_CFLAGS := $(HIP_CFLAGS)

# CUPTI: built when the CUDA toolkit is there; the build works without it.
CUDA_HOME ?= /usr/local/cuda
ifneq ($(wildcard $(CUDA_HOME)/include/cupti.h),)
GPU_HAVE_CUPTI := 1
CUPTI_CFLAGS := -DDP_HAVE_CUPTI -I$(CUDA_HOME)/include
cupti_CFLAGS := $(CUPTI_CFLAGS)
dptrace_cupti_CFLAGS := $(CUPTI_CFLAGS)
endif

# libdptrace.so: HIP interception and annotations, loaded into applications.
# Only the HIP entry points and the dpt_* API are exported (gpu/dptrace.map);
# everything else, the static module libraries included, stays inside.
SHLIBS += libdptrace
libdptrace_SRCS := gpu/dptrace.c gpu/dptrace_hip.c
libdptrace_LDLIBS := -Wl,--version-script=gpu/dptrace.map -lzmq -ljson-c -ldl -lm -lrt

ifeq ($(GPU_HAVE_CUPTI),1)
# libdptrace_cupti.so: the same core driven by CUPTI (CUDA_INJECTION64_PATH).
SHLIBS += libdptrace_cupti
libdptrace_cupti_SRCS := gpu/dptrace.c gpu/dptrace_cupti.c
libdptrace_cupti_LDLIBS := -Wl,--version-script=gpu/dptrace_cupti.map -lzmq -ljson-c -ldl -lm -lrt
endif
