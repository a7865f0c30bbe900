/*
 * The window statistics of a recording as JSON Lines (seed "window
 * manager" export): every win, edge_fit, node_fit and solve message, one
 * object per line, in recording order.  Each line is the message's header
 * object as it travelled (edge_fit and node_fit are then exactly the lines
 * of SPEC.md §4.5, so `dpclock`-style consumers read the file as a fit
 * log) plus two fields: "arrival_ns", when the recorder received it, and
 * "sender", the node of its topic.
 *
 * A recording starts with the hub's late-joiner state, which repeats
 * messages the recorder may also get live: a message identical byte for
 * byte (topic and header, seq included) to one already written is skipped
 * and counted.  The set of seen messages holds 64-bit hashes, bounded;
 * beyond the bound nothing more is deduplicated (counted too).
 */
#include "tui/tui.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SEEN_MAX (1u << 22) /* hashes kept: 32 MiB at most */

struct tui_winlog {
    base_afile_t *out;
    FILE *f;        /* its stream */
    uint64_t *seen; /* open addressing; 0: empty */
    size_t nseen, capseen;
    struct tui_winlog_stats st;
};

bool tui_winlog_wants(enum bus_kind kind)
{
    return kind == BUS_K_WIN || kind == BUS_K_EDGE_FIT || kind == BUS_K_NODE_FIT ||
           kind == BUS_K_SOLVE;
}

tui_winlog_t *tui_winlog_open(const char *path, char *err)
{
    assert(path);
    tui_winlog_t *self = xcalloc(1, sizeof *self);
    self->out = base_afile_open(path, err);
    if (self->out == NULL) {
        free(self);
        return NULL;
    }
    self->f = base_afile_stream(self->out);
    return self;
}

static uint64_t fnv(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

/* True when h was seen before; remembers it otherwise. */
static bool seen_before(tui_winlog_t *self, uint64_t h)
{
    if (h == 0)
        h = 1; /* 0 marks an empty slot */
    if (2 * (self->nseen + 1) > self->capseen) {
        if (self->capseen >= 2 * (size_t)SEEN_MAX) {
            self->st.undeduped++;
            return false;
        }
        size_t oldcap = self->capseen;
        uint64_t *old = self->seen;
        self->capseen = oldcap ? 2 * oldcap : 1024;
        self->seen = xcalloc(self->capseen, sizeof *self->seen);
        for (size_t i = 0; i < oldcap; i++) {
            if (old[i] == 0)
                continue;
            size_t s = (size_t)old[i] & (self->capseen - 1);
            while (self->seen[s])
                s = (s + 1) & (self->capseen - 1);
            self->seen[s] = old[i];
        }
        free(old);
    }
    size_t s = (size_t)h & (self->capseen - 1);
    while (self->seen[s]) {
        if (self->seen[s] == h)
            return true;
        s = (s + 1) & (self->capseen - 1);
    }
    self->seen[s] = h;
    self->nseen++;
    return false;
}

int tui_winlog_add(tui_winlog_t *self, const bus_msg_t *msg, int64_t arrival_ns, char *err)
{
    assert(self && msg);
    enum bus_kind kind = bus_msg_kind(msg);
    json_object *h = bus_msg_header(msg);
    if (!tui_winlog_wants(kind) || h == NULL || !json_object_is_type(h, json_type_object))
        return 0;
    struct bus_frame fr[BUS_MAX_FRAMES];
    size_t nf = bus_msg_frames(msg, fr);
    if (nf >= 2) {
        uint64_t x = fnv(1469598103934665603ULL, fr[0].data, fr[0].len);
        if (seen_before(self, fnv(x, fr[1].data, fr[1].len))) {
            self->st.duplicates++;
            return 0;
        }
    }
    size_t len = 0;
    const char *text = json_object_to_json_string_length(
        h, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    if (text == NULL || len < 2 || text[len - 1] != '}')
        return 0; /* cannot happen for an object */
    /* The object without its closing brace, then our two fields. */
    fwrite(text, 1, len - 1, self->f);
    bool empty = len == 2;
    if (!json_object_object_get_ex(h, "arrival_ns", NULL)) {
        fprintf(self->f, "%s\"arrival_ns\":%" PRId64, empty ? "" : ",", arrival_ns);
        empty = false;
    }
    int node = bus_msg_node(msg);
    if (node >= 0 && !json_object_object_get_ex(h, "sender", NULL))
        fprintf(self->f, "%s\"sender\":%d", empty ? "" : ",", node);
    fputs("}\n", self->f);
    if (ferror(self->f))
        return base_err(err, "%s: write failed: %s", base_afile_path(self->out),
                        strerror(errno ? errno : EIO));
    switch (kind) {
    case BUS_K_WIN:
        self->st.win++;
        break;
    case BUS_K_EDGE_FIT:
        self->st.edge_fit++;
        break;
    case BUS_K_NODE_FIT:
        self->st.node_fit++;
        break;
    default:
        self->st.solve++;
        break;
    }
    return 1;
}

void tui_winlog_stats(const tui_winlog_t *self, struct tui_winlog_stats *out)
{
    assert(self && out);
    *out = self->st;
}

static void winlog_free(tui_winlog_t **self)
{
    free((*self)->seen);
    free(*self);
    *self = NULL;
}

int tui_winlog_commit(tui_winlog_t **self, char *err)
{
    assert(self && *self);
    int rc = base_afile_commit(&(*self)->out, err);
    winlog_free(self);
    return rc;
}

void tui_winlog_abort(tui_winlog_t **self)
{
    if (self == NULL || *self == NULL)
        return;
    base_afile_abort(&(*self)->out);
    winlog_free(self);
}
