/* Files written whole or not at all (see base.h). */
#include "base/base.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct base_afile {
    FILE *f;
    char *path;
    char *tmp; /* NULL: written in place (a device, a FIFO: nothing to rename over) */
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
    /*
     * Renaming over a device or a FIFO would replace it with a file (as
     * root, /dev/full or /dev/stdout): those are written in place.  A
     * symbolic link keeps its link: its target is replaced (or created).
     */
    struct stat st, lst;
    if (stat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) ||
                                 S_ISSOCK(st.st_mode) || S_ISBLK(st.st_mode))) {
        self->f = fopen(path, "w");
        if (self->f == NULL) {
            base_err(err, "%s: %s", path, strerror(errno));
            afile_free(&self);
            return NULL;
        }
        return self;
    }
    char real[PATH_MAX], dest[PATH_MAX];
    char *at = NULL; /* where the file goes: path, or a link's target */
    if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
        ssize_t n;
        if (realpath(path, real) != NULL) {
            at = xstrdup(real);
        } else if ((n = readlink(path, dest, sizeof dest - 1)) > 0) {
            /* A link to a file not there yet: create it where the link points. */
            dest[n] = '\0';
            const char *slash = strrchr(path, '/');
            if (dest[0] == '/' || slash == NULL)
                at = xstrdup(dest);
            else
                xasprintf(&at, "%.*s/%s", (int)(slash - path), path, dest);
        }
    }
    if (at != NULL) {
        free(self->path);
        self->path = at;
    }
    xasprintf(&self->tmp, "%s.tmp", self->path);
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
        if (self->tmp)
            unlink(self->tmp);
        rc = base_err(err, "%s: write failed: %s", self->path, strerror(e));
    } else if (self->tmp && rename(self->tmp, self->path) != 0) {
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
    if ((*self_p)->tmp)
        unlink((*self_p)->tmp);
    afile_free(self_p);
}
