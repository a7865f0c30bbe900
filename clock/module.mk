clock_SRCS := clock/util.c clock/envelope.c clock/purity.c clock/estimate.c clock/solve.c clock/history.c clock/conv.c \
              clock/simclock.c clock/simnet.c clock/jsonl.c clock/logfit.c clock/eval.c clock/mapio.c
PROGRAMS += dpclock
dpclock_SRCS := clock/dpclock.c
