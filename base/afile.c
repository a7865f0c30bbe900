/* Files written whole or not at all (see base.h). */
#include "base/base.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct base_afile {
    FILE *f;
    char *path;
    char *tmp;
};

static void afile_free(base_afile_t **self_p)
{
    base_afile_t *self = *self_p;
    free(self->path);
    free(self->tmp);
    free(self);
    *self_p = NULL;
}

base_afile_t *base_afile_open(const char *path, char *err)
{
    assert(path);
    base_afile_t *self = xcalloc(1, sizeof *self);
    self->path = xstrdup(path);
    xasprintf(&self->tmp, "%s.tmp", path);
    self->f = fopen(self->tmp, "w");
    if (self->f == NULL) {
        base_err(err, "%s: %s", self->tmp, strerror(errno));
        afile_free(&self);
        return NULL;
    }
    return self;
}

FILE *base_afile_stream(base_afile_t *self)
{
    assert(self);
    return self->f;
}

const char *base_afile_path(const base_afile_t *self)
{
    assert(self);
    return self->path;
}

int base_afile_commit(base_afile_t **self_p, char *err)
{
    assert(self_p && *self_p);
    base_afile_t *self = *self_p;
    errno = 0;
    bool bad = fflush(self->f) != 0 || ferror(self->f);
    int e = errno ? errno : EIO;
    if (fclose(self->f) != 0 && !bad) {
        bad = true;
        e = errno ? errno : EIO;
    }
    int rc = BASE_OK;
    if (bad) {
        unlink(self->tmp);
        rc = base_err(err, "%s: write failed: %s", self->path, strerror(e));
    } else if (rename(self->tmp, self->path) != 0) {
        e = errno;
        unlink(self->tmp);
        rc = base_err(err, "%s: %s", self->path, strerror(e));
    }
    afile_free(self_p);
    return rc;
}

void base_afile_abort(base_afile_t **self_p)
{
    if (self_p == NULL || *self_p == NULL)
        return;
    fclose((*self_p)->f);
    unlink((*self_p)->tmp);
    afile_free(self_p);
}
