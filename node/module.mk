node_SRCS := node/probe.c node/graph.c
