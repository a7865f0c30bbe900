# node: dpnode — the agent (prober, windows, registration, snapshot pairs,
# simulated clock and workload, libdptrace ingest) and the master (hub,
# node table, probe graph, time-base solve).
node_SRCS := node/probe.c node/graph.c node/window.c node/plan.c node/config.c node/master.c \
             node/agent.c node/devices.c node/relay.c
PROGRAMS += dpnode
dpnode_SRCS := node/main.c
