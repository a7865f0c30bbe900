node_SRCS := node/probe.c
