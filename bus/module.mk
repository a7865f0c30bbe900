bus_SRCS := bus/schema.c bus/msg.c bus/map.c bus/crc32c.c bus/endpoint.c bus/pub.c bus/sub.c \
            bus/reg.c bus/cache.c bus/hub.c bus/record.c bus/curve.c \
            bus/relay.c
