gpu_SRCS := gpu/event.c
