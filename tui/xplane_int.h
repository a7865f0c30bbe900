/*
 * tui internals: the protobuf wire-format writer behind the XSpace export
 * (tui/xplane.c).  Not a public interface; the unit tests use it to check
 * the bytes against hand-computed ones.
 *
 * A message is written into one growable buffer.  Nested messages are
 * length-delimited, and their length is only known at their end, so
 * tui_pb_begin() leaves one byte for it and tui_pb_end() writes the varint
 * there, moving the content along when the length needs more than one byte
 * (small messages, the common case, are never moved).  Every varint is the
 * shortest one, as protobuf writes them.
 */
#ifndef DP_TUI_XPLANE_INT_H
#define DP_TUI_XPLANE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Wire types. */
#define TUI_PB_VARINT    0
#define TUI_PB_FIXED64   1
#define TUI_PB_LEN       2
#define TUI_PB_MAX_DEPTH 8 /* XSpace > XPlane > map entry > XEventMetadata > XStat needs 4 */

struct tui_pb {
    uint8_t *buf;
    size_t len, cap;
    size_t open[TUI_PB_MAX_DEPTH]; /* where the length byte of each open message is */
    int depth;
};

void tui_pb_init(struct tui_pb *pb);
void tui_pb_free(struct tui_pb *pb);
/* Forget the content (keep the buffer); no message may be open. */
void tui_pb_reset(struct tui_pb *pb);
/* Bytes of the shortest varint of v (1..10). */
size_t tui_pb_varint_len(uint64_t v);
void tui_pb_varint(struct tui_pb *pb, uint64_t v);
void tui_pb_tag(struct tui_pb *pb, uint32_t field, unsigned wire);
/* Fields.  int64 fields are varints of the two's complement (a negative
 * value takes 10 bytes; protobuf's int64, not sint64 zigzag). */
void tui_pb_uint(struct tui_pb *pb, uint32_t field, uint64_t v);
void tui_pb_int(struct tui_pb *pb, uint32_t field, int64_t v);
void tui_pb_fixed64(struct tui_pb *pb, uint32_t field, uint64_t v);
void tui_pb_double(struct tui_pb *pb, uint32_t field, double v);
void tui_pb_bytes(struct tui_pb *pb, uint32_t field, const void *data, size_t len);
/* A string field: protobuf strings must be UTF-8, so an invalid sequence
 * becomes U+FFFD (as in the Chrome trace).  NULL is "". */
void tui_pb_str(struct tui_pb *pb, uint32_t field, const char *s);
/* A nested message as field `field`: begin, its fields, end. */
void tui_pb_begin(struct tui_pb *pb, uint32_t field);
void tui_pb_end(struct tui_pb *pb);

#endif /* DP_TUI_XPLANE_INT_H */
