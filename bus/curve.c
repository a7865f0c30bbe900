/* CURVE: options of the client sockets, and the server side that the hub and
 * relays share (server options, admitted keys, the ZAP handler). */
#include "bus/bus_int.h"

#include <errno.h>
#include <stdio.h>
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

int bus_curve_server(void *sock, const struct bus_curve *curve, const char *who, char *err)
{
    if (curve == NULL)
        return BASE_OK;
    int one = 1;
    if (zmq_setsockopt(sock, ZMQ_CURVE_SERVER, &one, sizeof one) != 0 ||
        zmq_setsockopt(sock, ZMQ_CURVE_SECRETKEY, curve->secret_key, 40) != 0 ||
        zmq_setsockopt(sock, ZMQ_ZAP_DOMAIN, "dptop", 5) != 0)
        return base_err(err, "%s: CURVE server options: %s", who, zmq_strerror(errno));
    return BASE_OK;
}

int bus_zap_open(struct bus_zap *zap, void *ctx, const struct bus_curve *curve, const char *who,
                 char *err)
{
    memset(zap, 0, sizeof *zap);
    if (curve == NULL)
        return BASE_OK;
    if (!bus_curve_available())
        return base_err(err, "%s: this libzmq was built without CURVE support", who);
    if (curve->secret_key == NULL || strlen(curve->secret_key) != 40)
        return base_err(err, "%s: the CURVE secret key must be 40 characters of Z85", who);
    if (curve->allowed) {
        size_t n = 0;
        while (curve->allowed[n])
            n++;
        zap->allowed = xcalloc(n ? n : 1, 32);
        for (size_t i = 0; i < n; i++) {
            if (strlen(curve->allowed[i]) != 40 ||
                zmq_z85_decode(zap->allowed[i], curve->allowed[i]) == NULL)
                return base_err(err, "%s: admitted client key %zu is not 40 characters of Z85", who,
                                i + 1);
        }
        zap->nallowed = n;
    }
    zap->sock = bus_zmq_socket(ctx, ZMQ_REP, 0, 0, who, err);
    if (zap->sock == NULL)
        return BASE_ERR;
    if (zmq_bind(zap->sock, "inproc://zeromq.zap.01") != 0)
        return base_err(err, "%s: cannot bind the ZAP handler: %s", who, zmq_strerror(errno));
    return BASE_OK;
}

void bus_zap_answer(struct bus_zap *zap, const char *who, uint64_t *allowed, uint64_t *denied)
{
    for (;;) {
        zmq_msg_t f[8];
        size_t n;
        if (bus_zmq_recv_multi(zap->sock, f, BASE_ARRAY_LEN(f), &n, ZMQ_DONTWAIT, NULL) <= 0)
            return;
        size_t kept = n < BASE_ARRAY_LEN(f) ? n : BASE_ARRAY_LEN(f);
        bool ok = false;
        if (n == 7 && zmq_msg_size(&f[5]) == 5 && memcmp(zmq_msg_data(&f[5]), "CURVE", 5) == 0 &&
            zmq_msg_size(&f[6]) == 32) {
            ok = zap->allowed == NULL;
            for (size_t i = 0; i < zap->nallowed && !ok; i++)
                ok = memcmp(zap->allowed[i], zmq_msg_data(&f[6]), 32) == 0;
        }
        *(ok ? allowed : denied) += 1;
        zmq_send(zap->sock, "1.0", 3, ZMQ_SNDMORE);
        if (kept >= 2)
            zmq_send(zap->sock, zmq_msg_data(&f[1]), zmq_msg_size(&f[1]), ZMQ_SNDMORE);
        else
            zmq_send(zap->sock, "", 0, ZMQ_SNDMORE);
        zmq_send(zap->sock, ok ? "200" : "400", 3, ZMQ_SNDMORE);
        const char *why = ok ? "OK" : "client key not admitted";
        zmq_send(zap->sock, why, strlen(why), ZMQ_SNDMORE);
        zmq_send(zap->sock, "", 0, ZMQ_SNDMORE); /* user id */
        zmq_send(zap->sock, "", 0, 0);           /* metadata */
        if (!ok)
            base_log(BASE_LOG_WARN, who, "refused a peer whose CURVE key is not admitted");
        bus_zmq_close_frames(f, kept);
    }
}

void bus_zap_close(struct bus_zap *zap)
{
    if (zap->sock)
        zmq_close(zap->sock);
    free(zap->allowed);
    memset(zap, 0, sizeof *zap);
}

int bus_curve_key_file(const char *dir, const char *name, char out[41], char *err)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return base_err(err, "curve_dir: cannot open %s: %s", path, strerror(errno));
    char buf[128];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    if (n != 40)
        return base_err(err, "curve_dir: %s is not a 40-character Z85 key", path);
    memcpy(out, buf, 41);
    return BASE_OK;
}
