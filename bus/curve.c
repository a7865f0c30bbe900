/* CURVE options shared by the client sockets (the server side is in hub.c). */
#include "bus/bus_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool bus_curve_available(void)
{
    return zmq_has("curve") != 0;
}

static int set_key(void *sock, int opt, const char *what, const char *key, char *err)
{
    if (key == NULL || strlen(key) != 40)
        return base_err(err, "CURVE %s must be 40 characters of Z85", what);
    if (zmq_setsockopt(sock, opt, key, 40) != 0)
        return base_err(err, "CURVE %s rejected: %s", what, zmq_strerror(errno));
    return BASE_OK;
}

int bus_curve_client(void *sock, const struct bus_curve *curve, char *err)
{
    if (curve == NULL)
        return BASE_OK;
    if (!bus_curve_available())
        return base_err(err, "this libzmq was built without CURVE support");
    if (set_key(sock, ZMQ_CURVE_SERVERKEY, "server key", curve->server_key, err) != BASE_OK ||
        set_key(sock, ZMQ_CURVE_PUBLICKEY, "public key", curve->public_key, err) != BASE_OK ||
        set_key(sock, ZMQ_CURVE_SECRETKEY, "secret key", curve->secret_key, err) != BASE_OK)
        return BASE_ERR;
    return BASE_OK;
}

struct bus_curve *bus_curve_copy(const struct bus_curve *curve)
{
    if (curve == NULL)
        return NULL;
    struct bus_curve *c = xcalloc(1, sizeof *c);
    c->public_key = curve->public_key ? xstrdup(curve->public_key) : NULL;
    c->secret_key = curve->secret_key ? xstrdup(curve->secret_key) : NULL;
    c->server_key = curve->server_key ? xstrdup(curve->server_key) : NULL;
    if (curve->allowed) {
        size_t n = 0;
        while (curve->allowed[n])
            n++;
        char **list = xcalloc(n + 1, sizeof *list);
        for (size_t i = 0; i < n; i++)
            list[i] = xstrdup(curve->allowed[i]);
        c->allowed = (const char *const *)list;
    }
    return c;
}

void bus_curve_free(struct bus_curve *curve)
{
    if (curve == NULL)
        return;
    free((char *)curve->public_key);
    free((char *)curve->secret_key);
    free((char *)curve->server_key);
    if (curve->allowed) {
        for (size_t i = 0; curve->allowed[i]; i++)
            free((char *)curve->allowed[i]);
        free((char **)curve->allowed);
    }
    free(curve);
}
