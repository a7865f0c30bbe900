# Test-only build rules of the gpu module: the fake HIP runtime, the test
# applications, and the local link dump tool.  Only when the gpu module is
# built (MODULES may leave it out).
ifneq ($(filter gpu,$(MODULES)),)

FAKE_HIP_DIR := tests/fake_hip
FAKE_HIP := $(FAKE_HIP_DIR)/libamdhip64.so.5

# The fake libamdhip64: a shared library built through the tool rules.
# -Bsymbolic keeps its internal calls away from any interposing library.
TOOLS += $(FAKE_HIP)
$(FAKE_HIP)_SRCS := $(FAKE_HIP_DIR)/fake_hip.c
$(FAKE_HIP)_LDFLAGS := -shared -Wl,-soname,libamdhip64.so.5 -Wl,-Bsymbolic
$(FAKE_HIP)_LDLIBS := -lpthread
fake_hip_CFLAGS := -D__HIP_PLATFORM_AMD__

# hip_app finds the fake next to itself ($ORIGIN); -rdynamic lets dladdr
# name a kernel that was never registered.
TOOLS += $(FAKE_HIP_DIR)/hip_app
$(FAKE_HIP_DIR)/hip_app_SRCS := $(FAKE_HIP_DIR)/hip_app.c
$(FAKE_HIP_DIR)/hip_app_LDFLAGS := -rdynamic -Wl,-rpath,'$$ORIGIN'
$(FAKE_HIP_DIR)/hip_app_LDLIBS := $(BUILD)/$(FAKE_HIP) -lpthread -ldl
hip_app_CFLAGS := -D__HIP_PLATFORM_AMD__
$(BUILD)/$(FAKE_HIP_DIR)/hip_app: $(BUILD)/$(FAKE_HIP)

TOOLS += tests/tools/gpu_ingest_dump
tests/tools/gpu_ingest_dump_SRCS := tests/tools/gpu_ingest_dump.c

# gpu_inject: loads libdptrace_cupti.so the way the CUDA driver does.
TOOLS += tests/tools/gpu_inject
tests/tools/gpu_inject_SRCS := tests/tools/gpu_inject.c

# The unit tests construct CUPTI activity records when the headers exist,
# and load the fake HIP runtime for the resolver test.
test_gpu_CFLAGS := $(CUPTI_CFLAGS)
$(BUILD)/tests/test_gpu: | $(BUILD)/$(FAKE_HIP)

# cpu_app: annotations only, linked against libdptrace.so (no HIP at all).
TOOLS += $(FAKE_HIP_DIR)/cpu_app
$(FAKE_HIP_DIR)/cpu_app_SRCS := $(FAKE_HIP_DIR)/cpu_app.c
$(FAKE_HIP_DIR)/cpu_app_LDFLAGS := -Wl,-rpath,'$$ORIGIN/../..'
$(FAKE_HIP_DIR)/cpu_app_LDLIBS := $(BUILD)/libdptrace.so -lpthread
$(BUILD)/$(FAKE_HIP_DIR)/cpu_app: $(BUILD)/libdptrace.so
endif

# A fake libnvidia-ml.so.1 (NVML) with two boards, for dpnode's metrics.
FAKE_NVML := tests/fake_nvml/libnvidia-ml.so.1
TOOLS += $(FAKE_NVML)
$(FAKE_NVML)_SRCS := tests/fake_nvml/fake_nvml.c
$(FAKE_NVML)_LDFLAGS := -shared -Wl,-soname,libnvidia-ml.so.1
$(FAKE_NVML)_LDLIBS := -lc
$(BUILD)/tests/test_gpu: | $(BUILD)/$(FAKE_NVML)

# The fake libcupti (no GPU, no driver) and the program that plays a CUDA
# program's calls through it into libdptrace_cupti.so.
ifeq ($(GPU_HAVE_CUPTI),1)
FAKE_CUPTI := tests/fake_cupti/libcupti.so
TOOLS += $(FAKE_CUPTI)
$(FAKE_CUPTI)_SRCS := tests/fake_cupti/fake_cupti.c
$(FAKE_CUPTI)_LDFLAGS := -shared -Wl,-soname,libcupti.so -Wl,-Bsymbolic
$(FAKE_CUPTI)_LDLIBS := -lpthread
fake_cupti_CFLAGS := $(CUPTI_CFLAGS)
FAKE_CUDA := tests/fake_cupti/libcuda.so.1
TOOLS += $(FAKE_CUDA)
$(FAKE_CUDA)_SRCS := tests/fake_cupti/fake_cuda.c
$(FAKE_CUDA)_LDFLAGS := -shared -Wl,-soname,libcuda.so.1
$(FAKE_CUDA)_LDLIBS := -lc
TOOLS += tests/fake_cupti/cupti_app
tests/fake_cupti/cupti_app_SRCS := tests/fake_cupti/cupti_app.c
tests/fake_cupti/cupti_app_LDLIBS := -ldl
cupti_app_CFLAGS := $(CUPTI_CFLAGS)
endif

# cuda_app: a CUDA program for libdptrace_cupti on a real GPU
# (test_dptrace_cuda_gpu.sh), built when nvcc is there.  Its own annotations
# link libdptrace_cupti.so, the library the driver then loads through
# CUDA_INJECTION64_PATH.  PTX for every GPU from Turing on, Hopper's code
# compiled ahead.  Not in the sanitizer build: nvcc links no sanitizer runtime.
NVCC ?= $(CUDA_HOME)/bin/nvcc
ifeq ($(GPU_HAVE_CUPTI)$(SANITIZE),10)
ifneq ($(wildcard $(NVCC)),)
CUDA_APP := $(BUILD)/tests/cuda/cuda_app
NVCCFLAGS := -O2 -gencode arch=compute_75,code=compute_75 -gencode arch=compute_90,code=sm_90
tests-build: $(CUDA_APP)
# Best effort: an nvcc that cannot build it here (a host compiler too new
# for it, a toolkit without these targets) leaves the GPU tests skipping.
$(CUDA_APP): tests/cuda/cuda_app.cu gpu/dptrace.h $(BUILD)/libdptrace_cupti.so
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -I. -o $@ $< -L$(BUILD) -ldptrace_cupti -Xlinker -rpath -Xlinker '$$ORIGIN/../..' || \
	    { rm -f $@; echo "warning: cuda_app not built (nvcc failed): the CUDA GPU tests will skip"; }
endif
endif
