/*
 * dptop --demo [N]: the "embedded default" of SPEC §2.  Starts a master and
 * N-1 agents (dpnode) on loopback, each with its own simulated clock and the
 * simulated training workload, then opens the console on them.
 *
 * Children never outlive dptop:
 *   - each child asks the kernel for SIGTERM when dptop dies
 *     (PR_SET_PDEATHSIG, checked against a parent that died before the call)
 *     and dpnode is also told --exit-with-parent;
 *   - all children share one process group, separate from the terminal's, so
 *     a ^C reaches dptop only and dptop stops them in order;
 *   - every exit path of tui_demo_run goes through stop_children(): TERM to
 *     the group, a bounded wait, then KILL, and every child is reaped.
 *
 * The simulated clocks are fixed per node index (offsets of several ms,
 * drifts of tens of ppm, no wander), so that a test can compare what the
 * console shows with the truth; `demo_log` also records them and the
 * sim_truth announcements as JSON lines.
 */
#include "tui/tui_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_DEMO     64
#define STRAGGLER_US 5000
#define STOP_WAIT_NS 4000000000LL

struct child {
    pid_t pid;
    int node;
    bool exited;
    int status;
    char log[PATH_MAX];
    char sim[64];
    double offset_ns, drift_ppm;
};

struct demo {
    struct child ch[MAX_DEMO];
    int n;
    pid_t pgid;
    char dir[PATH_MAX];
    char hub[64];
    FILE *log;
    bool truth_logged[MAX_DEMO];
    bool failed;
};

/* The simulated clock of node i: the master keeps the true clock. */
static void sim_clock(int i, double *offset_ns, double *drift_ppm)
{
    static const double off[] = {0, 4.2e6, -6.7e6, 9.3e6, -2.9e6, 7.6e6, -8.8e6, 1.7e6};
    static const double drift[] = {0, 25, -40, 12, 33, -18, 47, -29};
    if (i < (int)BASE_ARRAY_LEN(off)) {
        *offset_ns = off[i];
        *drift_ppm = drift[i];
        return;
    }
    /* Beyond the table: spread deterministically over ±10 ms and ±50 ppm. */
    uint32_t h = (uint32_t)i * 2654435761u;
    *offset_ns = ((double)(h % 20001) - 10000.0) * 1e3;
    *drift_ppm = (double)((h >> 16) % 101) - 50.0;
}

/* Three consecutive TCP ports free on 127.0.0.1 at this moment. */
static int free_ports(int *base)
{
    for (int attempt = 0; attempt < 200; attempt++) {
        int p = 20000 +
                (int)((uint32_t)(base_monotonic_ns() / 1000 + (uint64_t)attempt * 7919) % 30000);
        int fds[3], k;
        for (k = 0; k < 3; k++) {
            fds[k] = socket(AF_INET, SOCK_STREAM, 0);
            struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)(p + k))};
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            if (fds[k] < 0 || bind(fds[k], (struct sockaddr *)&a, sizeof a) != 0) {
                if (fds[k] >= 0)
                    close(fds[k]);
                break;
            }
        }
        for (int j = 0; j < k; j++)
            close(fds[j]);
        if (k == 3) {
            *base = p;
            return BASE_OK;
        }
    }
    return BASE_ERR;
}

static int find_dpnode(const base_config_t *cfg, const char *argv0, char *out, size_t len)
{
    const char *c = base_config_str(cfg, "dpnode");
    if (c[0]) {
        snprintf(out, len, "%s", c);
        return access(out, X_OK) == 0 ? BASE_OK : BASE_ERR;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        if (argv0 == NULL)
            return BASE_ERR;
        snprintf(self, sizeof self, "%s", argv0);
    } else {
        self[n] = '\0';
    }
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(self, sizeof self, ".");
    if (snprintf(out, len, "%s/dpnode", self) >= (int)len)
        return BASE_ERR;
    return access(out, X_OK) == 0 ? BASE_OK : BASE_ERR;
}

static int spawn(struct demo *d, int i, const char *dpnode, const char *const *args)
{
    struct child *c = &d->ch[i];
    pid_t parent = getpid();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return BASE_ERR;
    if (pid == 0) {
        /* The child: its own group (the demo's), death with the parent, quiet. */
        setpgid(0, d->pgid ? d->pgid : 0);
        if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent)
            _exit(127);
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        int nul = open("/dev/null", O_RDONLY);
        int fd = open(c->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (nul >= 0)
            dup2(nul, 0);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        /*
         * DPTOP_CONFIG may be the file of a real cluster (its master,
         * node ids, probe key): the demo's agents take their settings
         * from their flags alone.
         */
        unsetenv("DPTOP_CONFIG");
        execv(dpnode, (char *const *)args);
        fprintf(stderr, "dptop --demo: cannot run %s: %s\n", dpnode, strerror(errno));
        _exit(127);
    }
    /* Both sides set the group: whichever runs first wins the race. */
    if (d->pgid == 0)
        d->pgid = pid;
    setpgid(pid, d->pgid);
    c->pid = pid;
    return BASE_OK;
}

static void reap(struct demo *d)
{
    for (int i = 0; i < d->n; i++) {
        struct child *c = &d->ch[i];
        if (c->pid > 0 && !c->exited && waitpid(c->pid, &c->status, WNOHANG) == c->pid)
            c->exited = true;
    }
}

static bool all_exited(const struct demo *d)
{
    for (int i = 0; i < d->n; i++)
        if (d->ch[i].pid > 0 && !d->ch[i].exited)
            return false;
    return true;
}

static void stop_children(struct demo *d)
{
    if (d->pgid > 0)
        kill(-d->pgid, SIGTERM);
    for (int i = 0; i < d->n; i++) /* in case one has not joined the group yet */
        if (d->ch[i].pid > 0 && !d->ch[i].exited)
            kill(d->ch[i].pid, SIGTERM);
    int64_t deadline = base_monotonic_ns() + STOP_WAIT_NS;
    for (;;) {
        reap(d);
        if (all_exited(d) || base_monotonic_ns() > deadline)
            break;
        base_sleep_ns(20000000);
    }
    if (!all_exited(d)) {
        if (d->pgid > 0)
            kill(-d->pgid, SIGKILL);
        for (int i = 0; i < d->n; i++)
            if (d->ch[i].pid > 0 && !d->ch[i].exited) {
                kill(d->ch[i].pid, SIGKILL);
                if (waitpid(d->ch[i].pid, &d->ch[i].status, 0) == d->ch[i].pid)
                    d->ch[i].exited = true;
            }
    }
}

static void log_line(struct demo *d, const char *fmt, ...) BASE_PRINTF(2, 3);
static void log_line(struct demo *d, const char *fmt, ...)
{
    if (d->log == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(d->log, fmt, ap);
    va_end(ap);
    fputc('\n', d->log);
    fflush(d->log);
}

/* Once per loop iteration of the console: watch the children, log the truth. */
static void demo_hook(struct tui_app *app, void *ctx)
{
    struct demo *d = ctx;
    for (int i = 0; i < d->n; i++) {
        struct child *c = &d->ch[i];
        if (c->exited || c->pid <= 0 || waitpid(c->pid, &c->status, WNOHANG) != c->pid)
            continue;
        c->exited = true;
        d->failed = true;
        char how[48];
        if (WIFEXITED(c->status))
            snprintf(how, sizeof how, "exited with status %d", WEXITSTATUS(c->status));
        else
            snprintf(how, sizeof how, "was killed by signal %d",
                     WIFSIGNALED(c->status) ? WTERMSIG(c->status) : 0);
        tui_app_status(app, TUI_MSG_ERROR, "demo: node %d (pid %d) %s; see %s", c->node,
                       (int)c->pid, how, c->log);
        log_line(d, "{\"type\":\"exit\",\"node\":%d,\"pid\":%d,\"status\":%d}", c->node,
                 (int)c->pid, c->status);
    }
    if (d->log == NULL)
        return;
    for (int i = 0; i < d->n; i++) {
        const struct tui_node *n = tui_model_find(app->model, (uint16_t)d->ch[i].node);
        if (d->truth_logged[i] || n == NULL || !n->have_truth)
            continue;
        d->truth_logged[i] = true;
        log_line(d,
                 "{\"type\":\"sim_truth\",\"node\":%u,\"t0_ns\":%" PRId64 ",\"m0_ns\":%" PRId64
                 ",\"offset_ns\":%.3f,\"drift_ppm\":%.6f,\"wander_ppb\":%.3f,\"seed\":%" PRIu64 "}",
                 n->id, n->truth.t0_ns, n->truth.m0_ns, n->truth.offset_ns, n->truth.drift_ppm,
                 n->truth.wander_ppb, n->truth.seed);
    }
}

static void remove_dir(struct demo *d)
{
    if (d->dir[0] == '\0')
        return;
    for (int i = 0; i < d->n; i++)
        unlink(d->ch[i].log);
    rmdir(d->dir);
}

int tui_demo_run(const base_config_t *cfg, int nodes, const char *argv0,
                 volatile sig_atomic_t *stop)
{
    char dpnode[PATH_MAX], err[BASE_ERRLEN];
    if (nodes < 2 || nodes > MAX_DEMO) {
        fprintf(stderr, "dptop: invalid value for demo_nodes: %d (2..%d)\n", nodes, MAX_DEMO);
        return 2;
    }
    int straggler = (int)base_config_int(cfg, "demo_straggler");
    if (straggler >= nodes) {
        fprintf(stderr, "dptop: invalid value for demo_straggler: %d (the demo has %d nodes)\n",
                straggler, nodes);
        return 2;
    }
    if (!tui_have_terminal(err)) {
        fprintf(stderr, "dptop: %s\n", err);
        return 2;
    }
    if (find_dpnode(cfg, argv0, dpnode, sizeof dpnode) != BASE_OK) {
        fprintf(stderr, "dptop: --demo needs dpnode next to dptop or --dpnode PATH (%s)\n", dpnode);
        return 1;
    }
    struct demo *d = xcalloc(1, sizeof *d);
    const char *tmp = getenv("TMPDIR");
    snprintf(d->dir, sizeof d->dir, "%s/dptop-demo-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(d->dir) == NULL) {
        fprintf(stderr, "dptop: cannot create a directory for the demo's logs: %s\n",
                strerror(errno));
        free(d);
        return 1;
    }
    const char *logpath = base_config_str(cfg, "demo_log");
    if (logpath[0] && (d->log = fopen(logpath, "w")) == NULL) {
        fprintf(stderr, "dptop: demo_log %s: %s\n", logpath, strerror(errno));
        rmdir(d->dir);
        free(d);
        return 1;
    }
    int port = 0, rc = 1;
    if (free_ports(&port) != BASE_OK) {
        fprintf(stderr, "dptop: no three free consecutive TCP ports on 127.0.0.1\n");
        goto out;
    }
    snprintf(d->hub, sizeof d->hub, "tcp://127.0.0.1:%d", port);
    log_line(d, "{\"type\":\"demo\",\"hub\":\"%s\",\"nodes\":%d,\"dptop_pid\":%d,\"dir\":\"%s\"}",
             d->hub, nodes, (int)getpid(), d->dir);
    for (int i = 0; i < nodes; i++) {
        struct child *c = &d->ch[i];
        c->node = i;
        sim_clock(i, &c->offset_ns, &c->drift_ppm);
        snprintf(c->sim, sizeof c->sim, "%.0f,%g", c->offset_ns, c->drift_ppm);
        snprintf(c->log, sizeof c->log, "%.4000s/node%d.log", d->dir, i);
        /* Every value as --key=value: a negative offset must not look like a flag. */
        char a_hub[96], a_listen[96], a_id[32], a_sim[96], a_seed[32], a_strag[48], a_late[48];
        snprintf(a_hub, sizeof a_hub, "--hub=%s", d->hub);
        snprintf(a_listen, sizeof a_listen, "--listen=%s", d->hub);
        snprintf(a_id, sizeof a_id, "--node-id=%d", i);
        snprintf(a_sim, sizeof a_sim, "--sim-clock=%s", c->sim);
        snprintf(a_seed, sizeof a_seed, "--sim-seed=%d", 1000 + i);
        snprintf(a_strag, sizeof a_strag, "--sim-straggler=%d", straggler);
        snprintf(a_late, sizeof a_late, "--sim-late-us=%d", straggler >= 0 ? STRAGGLER_US : 0);
        const char *args[24];
        int a = 0;
        args[a++] = dpnode;
        if (i == 0) {
            args[a++] = "--master";
            args[a++] = a_listen;
        }
        const char *common[] = {a_hub,
                                a_id,
                                "--bind-ip=127.0.0.1",
                                a_sim,
                                a_seed,
                                "--sim-workload",
                                a_strag,
                                a_late,
                                "--trace-endpoint=none",
                                "--exit-with-parent"};
        for (size_t k = 0; k < BASE_ARRAY_LEN(common); k++)
            args[a++] = common[k];
        args[a] = NULL;
        if (spawn(d, i, dpnode, args) != BASE_OK) {
            fprintf(stderr, "dptop: cannot start %s: %s\n", dpnode, strerror(errno));
            goto out;
        }
        d->n = i + 1;
        log_line(d,
                 "{\"type\":\"child\",\"node\":%d,\"pid\":%d,\"role\":\"%s\",\"sim_clock\":\"%s\","
                 "\"offset_ns\":%.0f,\"drift_ppm\":%g,\"log\":\"%s\"}",
                 i, (int)c->pid, i == 0 ? "master" : "agent", c->sim, c->offset_ns, c->drift_ppm,
                 c->log);
        if (i == 0) {
            /* Give the master a moment to bind, so the agents' first hellos land. */
            for (int k = 0; k < 20 && !d->ch[0].exited; k++) {
                base_sleep_ns(25000000);
                reap(d);
            }
            if (d->ch[0].exited) {
                fprintf(stderr, "dptop: the demo's master exited at once; its log:\n");
                FILE *f = fopen(c->log, "r");
                char line[512];
                while (f && fgets(line, sizeof line, f))
                    fputs(line, stderr);
                if (f)
                    fclose(f);
                goto out;
            }
        }
    }
    if (!*stop)
        rc = tui_console_live(cfg, d->hub, stop, demo_hook, d);
out:
    stop_children(d);
    log_line(d, "{\"type\":\"stopped\",\"all_reaped\":%s}", all_exited(d) ? "true" : "false");
    if (d->failed || rc != 0)
        fprintf(stderr, "dptop: the demo's logs are kept in %s\n", d->dir);
    else
        remove_dir(d);
    if (d->log)
        fclose(d->log);
    free(d);
    return rc;
}
