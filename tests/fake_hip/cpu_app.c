/*
 * cpu_app — a CPU-only program linked against libdptrace.so: annotations
 * without any GPU runtime.  Each of --threads threads runs --steps steps of
 * nested ranges ("outer" > "inner_<k>" > "leaf") with a mark in each, and
 * checks that dpt_scope_current follows the pushes and pops.  It also
 * exercises the edge cases: an unbalanced pop, a step ended with ranges
 * still open inside it, a name longer than the inline limit and a NULL
 * name.  With --fork, a child process then runs one more thread's worth
 * (it must be traced under its own pid).  With --helper, one thread runs
 * the steps and another, which never opens one, works inside each (as
 * PyTorch's autograd thread runs the backward pass): with
 * DPTOP_TRACE_INHERIT_STEP=true its scope is the open step and its ranges
 * nest in it, else it is in no scope (its own thread's innermost range,
 * SPEC §6); between steps it is in none either way.  The helper comes to
 * the library last (its ring is drained first) and marks 6000 times a
 * step, so that a batch goes out before the stepping thread's ring, where
 * the step's open record is, has been drained.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/dptrace.h"

static int steps = 3;

static _Noreturn void fail(const char *what)
{
    fprintf(stderr, "cpu_app: %s\n", what);
    exit(1);
}

static void *run(void *arg)
{
    (void)arg;
    dpt_range_pop(); /* nothing open: counted, ignored */
    for (int s = 0; s < steps; s++) {
        dpt_step_begin((uint64_t)s);
        uint64_t step_id = dpt_scope_current();
        if (step_id == 0)
            fail("no scope after dpt_step_begin");
        dpt_range_push("outer");
        uint64_t outer = dpt_scope_current();
        for (int k = 0; k < 3; k++) {
            char name[32];
            snprintf(name, sizeof name, "inner_%d", k);
            dpt_range_push(name);
            memset(name, 'x', sizeof name - 1); /* the library copied it */
            dpt_range_push("leaf");
            dpt_mark("tick");
            dpt_range_pop();
            dpt_range_pop();
            if (dpt_scope_current() != outer)
                fail("scope not restored after pops");
        }
        /* Left open on purpose: dpt_step_end closes it. */
        dpt_range_push("left_open_"
                       "with_a_name_much_longer_than_the_seventy_one_bytes_kept_by_the_library");
        dpt_range_push(NULL);
        dpt_step_end();
        if (dpt_scope_current() != 0)
            fail("dpt_step_end left ranges open");
    }
    return NULL;
}

static pthread_barrier_t helper_bar;
static _Atomic uint64_t helper_step; /* the scope the helper expects: the open step, or 0 */

static void *stepper(void *arg)
{
    (void)arg;
    dpt_mark("ready");
    pthread_barrier_wait(&helper_bar); /* known to the library before the helper */
    for (int s = 0; s < steps; s++) {
        dpt_step_begin((uint64_t)s);
        const char *inherit = getenv("DPTOP_TRACE_INHERIT_STEP");
        bool on = inherit != NULL && strcmp(inherit, "true") == 0;
        atomic_store(&helper_step, on ? dpt_scope_current() : 0);
        pthread_barrier_wait(&helper_bar); /* the step is open */
        pthread_barrier_wait(&helper_bar); /* the helper worked inside it */
        dpt_step_end();
        pthread_barrier_wait(&helper_bar); /* the step is over */
        pthread_barrier_wait(&helper_bar); /* the helper saw that */
    }
    return NULL;
}

static void *helper(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&helper_bar);
    for (int s = 0; s < steps; s++) {
        pthread_barrier_wait(&helper_bar);
        uint64_t step = atomic_load(&helper_step);
        /* Enough to fill a batch or two while the stepping thread's ring waits its turn. */
        for (int i = 0; i < 6000; i++)
            dpt_mark("burst");
        if (dpt_scope_current() != step)
            fail("the helper's scope is not the one expected inside the step");
        dpt_range_push("backward");
        if (dpt_enabled() && (dpt_scope_current() == step || dpt_scope_current() == 0))
            fail("the helper's range is not its scope");
        dpt_mark("grad");
        dpt_range_pop();
        if (dpt_scope_current() != step)
            fail("the helper left the step with its range");
        dpt_mark("in_step");
        pthread_barrier_wait(&helper_bar);
        pthread_barrier_wait(&helper_bar);
        if (dpt_scope_current() != 0)
            fail("the helper is still in a step that is over");
        dpt_mark("between");
        pthread_barrier_wait(&helper_bar);
    }
    return NULL;
}

static void run_helper(void)
{
    pthread_t a, b;
    pthread_barrier_init(&helper_bar, NULL, 2);
    if (pthread_create(&a, NULL, stepper, NULL) != 0 || pthread_create(&b, NULL, helper, NULL) != 0)
        fail("cannot start a thread");
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_barrier_destroy(&helper_bar);
}

int main(int argc, char **argv)
{
    int threads = 2;
    bool do_fork = false, do_helper = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--fork"))
            do_fork = true;
        else if (!strcmp(argv[i], "--helper"))
            do_helper = true;
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: cpu_app [--threads N] [--steps N] [--fork] [--helper]\n");
            return 2;
        }
    }
    if (threads < 1 || threads > 64 || steps < 0) {
        fprintf(stderr, "cpu_app: bad arguments\n");
        return 2;
    }
    printf("cpu_app: tracing %s\n", dpt_enabled() ? "on" : "off");
    if (do_helper) {
        run_helper();
        printf("cpu_app: ok helper steps=%d\n", steps);
        return 0;
    }
    pthread_t th[64];
    for (int i = 0; i < threads; i++)
        if (pthread_create(&th[i], NULL, run, NULL) != 0)
            fail("cannot start a thread");
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    if (do_fork) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
            fail("fork failed");
        if (pid == 0) {
            run(NULL);
            printf("cpu_app: child ok pid=%d\n", (int)getpid());
            exit(0);
        }
        int status;
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fail("the child failed");
    }
    printf("cpu_app: ok threads=%d steps=%d\n", threads, steps);
    return 0;
}
