/* The master is named by one endpoint; the other two are derived from it. */
#include "bus/bus.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int bus_endpoints_derive(const char *hub, struct bus_endpoints *out, char *err)
{
    memset(out, 0, sizeof *out);
    size_t len = strlen(hub);
    if (len == 0 || len >= sizeof out->reg - 8)
        return base_err(err, "hub endpoint '%s' is empty or too long", hub);
    if (strncmp(hub, "ipc://", 6) == 0 || strncmp(hub, "inproc://", 9) == 0) {
        snprintf(out->reg, sizeof out->reg, "%s", hub);
        snprintf(out->pub, sizeof out->pub, "%s.pub", hub);
        snprintf(out->sub, sizeof out->sub, "%s.sub", hub);
        return BASE_OK;
    }
    if (strncmp(hub, "tcp://", 6) != 0)
        return base_err(
            err, "hub endpoint '%s' must be tcp://HOST:PORT, ipc://PATH or inproc://NAME", hub);
    const char *colon = strrchr(hub + 6, ':');
    if (colon == NULL || colon[1] == '\0')
        return base_err(err, "hub endpoint '%s' has no port (tcp://HOST:PORT)", hub);
    const char *p = colon + 1;
    for (const char *q = p; *q; q++)
        if (!isdigit((unsigned char)*q))
            return base_err(err, "hub endpoint '%s': port '%s' is not a number", hub, p);
    long port = strtol(p, NULL, 10);
    if (port < 1 || port > 65533)
        return base_err(err, "hub endpoint '%s': port must be in 1..65533 (it and the next two)",
                        hub);
    if (colon == hub + 6)
        return base_err(err, "hub endpoint '%s' has no host", hub);
    int hostlen = (int)(colon - hub);
    snprintf(out->reg, sizeof out->reg, "%.*s:%ld", hostlen, hub, port);
    snprintf(out->pub, sizeof out->pub, "%.*s:%ld", hostlen, hub, port + 1);
    snprintf(out->sub, sizeof out->sub, "%.*s:%ld", hostlen, hub, port + 2);
    return BASE_OK;
}
