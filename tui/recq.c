/*
 * Recordings (the console's `r`, dptop --record) are written by a thread of
 * their own.  The receiver copies each message into a bounded queue and
 * goes on, so a slow or stuck file system never stops it drawing or
 * receiving; a full queue
 * drops the message, counted (the header shows it).  The writer thread
 * owns the bus_recwriter_t and ticks it, so a quiet bus still reaches the
 * file within the flush period.
 */
#include "tui/tui.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct recq_item {
    struct recq_item *next;
    int64_t arrival_ns;
    size_t n, bytes;
    struct bus_frame f[BUS_MAX_FRAMES];
    uint8_t data[]; /* the frames' bytes, one after the other */
};

struct tui_recq {
    bus_recwriter_t *w; /* the writer thread's */
    pthread_t thread;
    pthread_mutex_t mu; /* everything below */
    pthread_cond_t cv;
    struct recq_item *head, *tail;
    size_t queued_bytes, max_bytes;
    bool quit;
    struct tui_recq_stats st;
    char failure[BASE_ERRLEN];
};

static void *recq_main(void *arg)
{
    tui_recq_t *self = arg;
    pthread_setname_np(pthread_self(), "dp-recorder");
    for (;;) {
        pthread_mutex_lock(&self->mu);
        if (self->head == NULL && !self->quit) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_nsec += 50000000;
            if (until.tv_nsec >= 1000000000) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&self->cv, &self->mu, &until);
        }
        struct recq_item *it = self->head;
        if (it) {
            self->head = it->next;
            if (self->head == NULL)
                self->tail = NULL;
        }
        bool done = it == NULL && self->quit;
        bool failed = self->st.failed;
        pthread_mutex_unlock(&self->mu);
        if (done)
            break;
        char err[BASE_ERRLEN];
        int rc = BASE_OK;
        if (!failed)
            rc = it ? bus_recwriter_add(self->w, it->arrival_ns, it->f, it->n, err)
                    : bus_recwriter_tick(self->w, err);
        struct bus_recwriter_stats ws;
        bus_recwriter_stats(self->w, &ws);
        pthread_mutex_lock(&self->mu);
        if (it)
            self->queued_bytes -= it->bytes;
        self->st.written = ws.written;
        self->st.bytes = ws.bytes;
        if (rc != BASE_OK && !self->st.failed) {
            self->st.failed = true;
            snprintf(self->failure, sizeof self->failure, "%s", err);
        }
        pthread_mutex_unlock(&self->mu);
        free(it);
    }
    return NULL;
}

tui_recq_t *tui_recq_open(const char *path, int flush_ms, size_t max_bytes, char *err)
{
    bus_recwriter_t *w = bus_recwriter_new(path, flush_ms, err);
    if (w == NULL)
        return NULL;
    tui_recq_t *self = xcalloc(1, sizeof *self);
    self->w = w;
    self->max_bytes = max_bytes ? max_bytes : TUI_RECQ_MAX_BYTES;
    pthread_mutex_init(&self->mu, NULL);
    pthread_cond_init(&self->cv, NULL);
    if (pthread_create(&self->thread, NULL, recq_main, self) != 0) {
        bus_recwriter_close(&self->w, NULL);
        pthread_cond_destroy(&self->cv);
        pthread_mutex_destroy(&self->mu);
        free(self);
        base_err(err, "recording %s: cannot start its writer thread", path);
        return NULL;
    }
    return self;
}

int tui_recq_add(tui_recq_t *self, const bus_msg_t *m, char *err)
{
    assert(self && m);
    struct bus_frame f[BUS_MAX_FRAMES];
    size_t n = bus_msg_frames(m, f), bytes = sizeof(struct recq_item);
    for (size_t i = 0; i < n; i++)
        bytes += f[i].len;
    pthread_mutex_lock(&self->mu);
    if (self->st.failed) {
        base_err(err, "%s", self->failure);
        pthread_mutex_unlock(&self->mu);
        return BASE_ERR;
    }
    if (self->queued_bytes + bytes > self->max_bytes) {
        self->st.dropped++;
        pthread_mutex_unlock(&self->mu);
        return BUS_DROPPED;
    }
    self->queued_bytes += bytes;
    self->st.queued++;
    pthread_mutex_unlock(&self->mu);
    /* The copy is made outside the lock: the writer thread waits for nothing. */
    struct recq_item *it = xmalloc(bytes);
    it->next = NULL;
    it->arrival_ns = bus_msg_arrival_ns(m);
    it->n = n;
    it->bytes = bytes;
    uint8_t *p = it->data;
    for (size_t i = 0; i < n; i++) {
        memcpy(p, f[i].data, f[i].len);
        it->f[i] = (struct bus_frame){.data = p, .len = f[i].len};
        p += f[i].len;
    }
    pthread_mutex_lock(&self->mu);
    if (self->tail)
        self->tail->next = it;
    else
        self->head = it;
    self->tail = it;
    pthread_cond_signal(&self->cv);
    pthread_mutex_unlock(&self->mu);
    return BASE_OK;
}

void tui_recq_stats(tui_recq_t *self, struct tui_recq_stats *out, char *failure)
{
    assert(self && out);
    pthread_mutex_lock(&self->mu);
    *out = self->st;
    if (failure)
        snprintf(failure, BASE_ERRLEN, "%s", self->failure);
    pthread_mutex_unlock(&self->mu);
}

int tui_recq_close(tui_recq_t **self_p, struct tui_recq_stats *out, char *err)
{
    if (self_p == NULL || *self_p == NULL)
        return BASE_OK;
    tui_recq_t *self = *self_p;
    pthread_mutex_lock(&self->mu);
    self->quit = true;
    pthread_cond_signal(&self->cv);
    pthread_mutex_unlock(&self->mu);
    pthread_join(self->thread, NULL);
    /* The thread wrote everything queued (or failed); flush, sync, close. */
    char cerr[BASE_ERRLEN];
    bus_recwriter_flush(self->w, NULL);
    struct bus_recwriter_stats ws;
    bus_recwriter_stats(self->w, &ws);
    self->st.written = ws.written;
    self->st.bytes = ws.bytes;
    int rc = bus_recwriter_close(&self->w, cerr);
    if (self->st.failed)
        rc = base_err(err, "%s", self->failure);
    else if (rc != BASE_OK)
        base_err(err, "%s", cerr);
    if (out)
        *out = self->st;
    pthread_cond_destroy(&self->cv);
    pthread_mutex_destroy(&self->mu);
    free(self);
    *self_p = NULL;
    return rc;
}
