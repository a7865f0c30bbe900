# bench_agent.sh's sender on the local link (bench/agent_feed.c).
TOOLS += bench/agent_feed
bench/agent_feed_SRCS := bench/agent_feed.c
