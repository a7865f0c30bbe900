/*
 * rec_check — read a recording the way a replayer would and report.
 *
 *   rec_check FILE [--dump]
 *
 * Every frame is verified (checksums) and decoded as a bus message; event
 * batch seqs are checked for continuity per topic.  Prints one PROBLEM line
 * per truncation/corruption (with its offset), --dump one FRAME line per
 * frame, and a final summary:
 *   REC frames=N corrupt=C skipped=B truncated=T undecodable=U ev=E ev_seq_gaps=G
 *       last_end=OFFSET size=BYTES
 * Exit 0 when the file could be read (problems included), 2 when not.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bus/bus.h"

struct seq {
    char topic[BUS_MAX_TOPIC + 1];
    uint64_t last;
};

int main(int argc, char **argv)
{
    if (argc < 2 || (argc == 3 && strcmp(argv[2], "--dump") != 0) || argc > 3) {
        fprintf(stderr, "usage: rec_check FILE [--dump]\n");
        return 2;
    }
    bool dump = argc == 3;
    char err[BASE_ERRLEN];
    bus_recreader_t *r = bus_recreader_open(argv[1], NULL, err);
    if (r == NULL) {
        printf("OPEN-FAILED %s\n", err);
        return 2;
    }
    static struct seq seqs[256];
    size_t nseqs = 0;
    uint64_t undecodable = 0, ev = 0, gaps = 0, last_end = BUS_REC_FILE_HDR;
    for (;;) {
        struct bus_rec_frame f;
        enum base_dec dec;
        int rc = bus_recreader_next(r, &f, &dec, err);
        if (rc == 0)
            break;
        if (rc < 0) {
            printf("PROBLEM %s %s\n", base_dec_name(dec), err);
            continue;
        }
        last_end = f.offset + BUS_REC_FRAME_HDR;
        for (size_t i = 0; i < f.nframes; i++)
            last_end += 4 + f.frames[i].len;
        last_end += 4;
        bus_msg_t *m = NULL;
        if (bus_msg_decode(f.frames, f.nframes, NULL, &m, err) != BASE_DEC_OK) {
            undecodable++;
            printf("UNDECODABLE offset=%" PRIu64 " %s\n", f.offset, err);
            continue;
        }
        if (bus_msg_kind(m) == BUS_K_EV) {
            ev++;
            size_t i = 0;
            while (i < nseqs && strcmp(seqs[i].topic, bus_msg_topic(m)) != 0)
                i++;
            if (i == nseqs && nseqs < 256) {
                snprintf(seqs[i].topic, sizeof seqs[i].topic, "%s", bus_msg_topic(m));
                seqs[i].last = bus_msg_seq(m) - 1;
                nseqs++;
            }
            if (i < nseqs) {
                if (bus_msg_seq(m) > seqs[i].last + 1)
                    gaps += bus_msg_seq(m) - seqs[i].last - 1;
                seqs[i].last = bus_msg_seq(m);
            }
        }
        if (dump)
            printf("FRAME offset=%" PRIu64 " arrival=%" PRId64 " topic=%s seq=%" PRIu64 "\n",
                   f.offset, f.arrival_ns, bus_msg_topic(m), bus_msg_seq(m));
        bus_msg_destroy(&m);
    }
    struct bus_recreader_stats st;
    bus_recreader_stats(r, &st);
    printf("REC frames=%" PRIu64 " corrupt=%" PRIu64 " skipped=%" PRIu64 " truncated=%" PRIu64
           " undecodable=%" PRIu64 " ev=%" PRIu64 " ev_seq_gaps=%" PRIu64 " last_end=%" PRIu64
           " size=%" PRIu64 "\n",
           st.frames, st.corrupt, st.skipped_bytes, st.truncated_bytes, undecodable, ev, gaps,
           last_end, bus_recreader_size(r));
    bus_recreader_destroy(&r);
    return 0;
}
