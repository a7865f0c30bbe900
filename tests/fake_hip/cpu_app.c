/*
 * cpu_app — a CPU-only program linked against libdptrace.so: annotations
 * without any GPU runtime.  Each of --threads threads runs --steps steps of
 * nested ranges ("outer" > "inner_<k>" > "leaf") with a mark in each, and
 * checks that dpt_scope_current follows the pushes and pops.  It also
 * exercises the edge cases: an unbalanced pop, a step ended with ranges
 * still open inside it, a name longer than the inline limit and a NULL
 * name.  With --fork, a child process then runs one more thread's worth
 * (it must be traced under its own pid).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/dptrace.h"

static int steps = 3;

static void fail(const char *what)
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

int main(int argc, char **argv)
{
    int threads = 2;
    bool do_fork = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--fork"))
            do_fork = true;
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: cpu_app [--threads N] [--steps N] [--fork]\n");
            return 2;
        }
    }
    if (threads < 1 || threads > 64 || steps < 0) {
        fprintf(stderr, "cpu_app: bad arguments\n");
        return 2;
    }
    printf("cpu_app: tracing %s\n", dpt_enabled() ? "on" : "off");
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
