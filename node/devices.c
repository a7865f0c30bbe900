/*
 * Device metrics (amdgpu sysfs, NVML) read on a thread of their own.
 *
 * A driver call can block for seconds or for good: NVML while a board
 * resets or falls off the bus, an amdgpu sysfs file while the GPU hangs.
 * Read on the agent's loop, that would stop the bus, the master's solve and
 * the intake of traced events, whose senders then drop.  So a reader
 * thread reads every period and leaves its latest reading under a lock; the
 * loop takes a copy and never waits on a driver.  A reading older than a
 * few periods is stale: the agent then shows no cards rather than old
 * figures as if they were current, and says so once.
 *
 * The state is shared by the loop and the thread and freed by whichever
 * lets go of it last: a thread stuck in a driver call at shutdown is left
 * behind (the process's exit ends it) and must still find its state.
 */
#include "node/node_int.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEVICES_MAX 16

struct node_devices {
    char sysfs_root[512];
    char nvml_library[256];
    int64_t period_ns;
    int64_t stale_ns;

    pthread_t thread;
    pthread_mutex_t lock; /* protects everything below */
    pthread_cond_t cond;  /* a reading came; stop asked */
    int refs;             /* the loop's and the thread's */
    bool stop;
    bool abandoned; /* stopped while a driver call hung: the thread leaves NVML open */
    bool have;      /* a reading came */
    int64_t read_at_ns;
    gpu_metrics_t cards[DEVICES_MAX];
    size_t ncards;
    base_decstats_t dec;
    bool stale_said;
};

/* An absolute CLOCK_MONOTONIC time for the condition variable (set to that clock). */
static struct timespec mono_at(int64_t ns)
{
    return (struct timespec){(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
}

static void release(struct node_devices *self)
{
    pthread_mutex_lock(&self->lock);
    bool last = --self->refs == 0;
    pthread_mutex_unlock(&self->lock);
    if (!last)
        return;
    pthread_cond_destroy(&self->cond);
    pthread_mutex_destroy(&self->lock);
    free(self);
}

/* The thread's own reading of every card: amdgpu's, then NVIDIA's (a host
 * has one kind or the other as a rule).  Failures are said when they begin. */
struct reader {
    gpu_nvml_t *nvml;
    bool amd_ok, nvml_ok;
    base_decstats_t dec;
};

static size_t read_all(struct node_devices *self, struct reader *r, gpu_metrics_t *cards)
{
    char err[BASE_ERRLEN];
    size_t n = 0, k = 0;
    bool ok = gpu_metrics_read(self->sysfs_root, cards, DEVICES_MAX, &n, &r->dec, err) == BASE_OK;
    if (!ok) {
        if (r->amd_ok)
            base_log(BASE_LOG_WARN, "node", "device metrics: %s", err);
        n = 0;
    }
    r->amd_ok = ok;
    if (r->nvml != NULL) {
        bool was = r->nvml_ok;
        r->nvml_ok =
            gpu_nvml_read(r->nvml, cards + n, DEVICES_MAX - n, &k, &r->dec, err) == BASE_OK;
        if (!r->nvml_ok) {
            k = 0;
            if (was)
                base_log(BASE_LOG_WARN, "node", "NVIDIA device metrics: %s", err);
        }
    }
    return n + k;
}

static void *devices_main(void *arg)
{
    struct node_devices *self = arg;
    /* No drm directory at all is the rule in containers: not said at start. */
    struct reader r = {.amd_ok = false, .nvml_ok = true};
    if (self->nvml_library[0] != '\0') {
        char err[BASE_ERRLEN];
        r.nvml = gpu_nvml_new(self->nvml_library, err);
        /* No NVML at all is the rule on hosts without NVIDIA: not news. */
        if (r.nvml != NULL)
            base_log(BASE_LOG_INFO, "node", "NVIDIA device metrics through %s", self->nvml_library);
        else if (strstr(err, "cannot load") == NULL)
            base_log(BASE_LOG_INFO, "node", "no NVIDIA device metrics: %s", err);
    }
    gpu_metrics_t cards[DEVICES_MAX];
    pthread_mutex_lock(&self->lock);
    while (!self->stop) {
        pthread_mutex_unlock(&self->lock);
        size_t n = read_all(self, &r, cards);
        int64_t at = base_monotonic_ns();
        pthread_mutex_lock(&self->lock);
        memcpy(self->cards, cards, n * sizeof *cards);
        self->ncards = n;
        self->dec = r.dec;
        self->read_at_ns = at;
        self->have = true;
        pthread_cond_broadcast(&self->cond);
        /* Until the next reading is due; a new period counts at once. */
        while (!self->stop) {
            int64_t due = at + self->period_ns;
            if (base_monotonic_ns() >= due)
                break;
            struct timespec until = mono_at(due);
            pthread_cond_timedwait(&self->cond, &self->lock, &until);
        }
    }
    /* Left behind at exit, the process's destructors run beside this
     * thread: NVML is not shut down nor unloaded under them. */
    bool abandoned = self->abandoned;
    pthread_mutex_unlock(&self->lock);
    if (!abandoned)
        gpu_nvml_destroy(&r.nvml);
    release(self);
    return NULL;
}

/* Three periods and at least 3 s: one slow read is not a hang. */
static void set_period(struct node_devices *self, int64_t period_ns)
{
    self->period_ns = period_ns > 0 ? period_ns : 1000000000LL;
    self->stale_ns = 3 * self->period_ns > 3000000000LL ? 3 * self->period_ns : 3000000000LL;
}

void node_devices_set_period(node_devices_t *self, int64_t period_ns)
{
    assert(self);
    pthread_mutex_lock(&self->lock);
    set_period(self, period_ns);
    pthread_cond_broadcast(&self->cond);
    pthread_mutex_unlock(&self->lock);
}

node_devices_t *node_devices_new(const struct node_devices_cfg *cfg, char *err)
{
    assert(cfg);
    struct node_devices *self = xcalloc(1, sizeof *self);
    snprintf(self->sysfs_root, sizeof self->sysfs_root, "%s",
             cfg->sysfs_root ? cfg->sysfs_root : GPU_METRICS_ROOT);
    snprintf(self->nvml_library, sizeof self->nvml_library, "%s",
             cfg->nvml_library ? cfg->nvml_library : "");
    set_period(self, cfg->period_ns);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&self->cond, &ca);
    pthread_condattr_destroy(&ca);
    pthread_mutex_init(&self->lock, NULL);
    self->refs = 2;
    /* Signals are the loop's: one taken here would cut a driver call short. */
    sigset_t all, old;
    sigfillset(&all);
    /* A fault in the reader is still the process's to report. */
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    sigdelset(&all, SIGABRT);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&self->thread, NULL, devices_main, self);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, BASE_ERRLEN, "device metrics: cannot start a thread: %s", strerror(rc));
        self->refs = 1;
        release(self);
        return NULL;
    }
    /* The first reading, for the hello's card count; a driver that does
     * not answer in time is not waited for (the cards come when it does). */
    int64_t wait = cfg->first_wait_ns > 0 ? cfg->first_wait_ns : 2000000000LL;
    struct timespec until = mono_at(base_monotonic_ns() + wait);
    pthread_mutex_lock(&self->lock);
    while (!self->have && pthread_cond_timedwait(&self->cond, &self->lock, &until) != ETIMEDOUT)
        ;
    bool have = self->have;
    pthread_mutex_unlock(&self->lock);
    if (!have)
        base_log(BASE_LOG_WARN, "node",
                 "device metrics: no reading after %.1f s (a driver call does not return); "
                 "going on without them",
                 (double)wait / 1e9);
    return self;
}

void node_devices_destroy(node_devices_t **self_p)
{
    assert(self_p);
    struct node_devices *self = *self_p;
    if (self == NULL)
        return;
    *self_p = NULL;
    pthread_mutex_lock(&self->lock);
    self->stop = true;
    pthread_cond_broadcast(&self->cond);
    pthread_mutex_unlock(&self->lock);
    /* A thread inside a driver call that does not return is not joined:
     * it lets go of the state itself, or the process's exit ends it. */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    if (pthread_timedjoin_np(self->thread, NULL, &until) != 0) {
        pthread_mutex_lock(&self->lock);
        self->abandoned = true;
        pthread_mutex_unlock(&self->lock);
        pthread_detach(self->thread);
        base_log(BASE_LOG_WARN, "node", "device metrics: a driver call still has not returned");
    }
    release(self);
}

size_t node_devices_get(node_devices_t *self, gpu_metrics_t *out, size_t max, base_decstats_t *dec,
                        bool *fresh)
{
    assert(self && out);
    pthread_mutex_lock(&self->lock);
    int64_t age = self->have ? base_monotonic_ns() - self->read_at_ns : INT64_MAX;
    bool old = !self->have || age > self->stale_ns;
    size_t n = old ? 0 : self->ncards < max ? self->ncards : max;
    memcpy(out, self->cards, n * sizeof *out);
    if (dec)
        *dec = self->dec;
    /* Said when it begins and when it ends; only a reading that came and
     * then stopped coming counts (none at the start was said then). */
    bool hung = self->have && age > self->stale_ns;
    if (hung && !self->stale_said)
        base_log(BASE_LOG_WARN, "node",
                 "device metrics: no reading for %.1f s (a driver call does not return); "
                 "no cards shown until one comes",
                 (double)age / 1e9);
    else if (!hung && self->stale_said)
        base_log(BASE_LOG_INFO, "node", "device metrics: readings come again");
    self->stale_said = hung;
    pthread_mutex_unlock(&self->lock);
    if (fresh)
        *fresh = !old;
    return n;
}
