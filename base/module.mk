base_SRCS := base/alloc.c base/log.c base/json.c base/config.c base/afile.c base/jstream.c
