"""Read a dptop recording (docs/RECORDING.md) in the tests: the messages
of each frame that verifies, with arrival times.  Checksums are checked
with a small CRC32C; a damaged frame is skipped as the replayer does,
one byte at a time until a frame verifies again."""
import json
import struct

MAGIC = b"DPTOPREC"
MARKER = 0x46525044

_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _TABLE.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def frames(path, verify=False):
    """Yield (arrival_ns, [frame bytes, ...]) for every whole frame."""
    data = open(path, "rb").read()
    if data[:8] != MAGIC:
        raise ValueError("%s: not a dptop recording" % path)
    hsize = struct.unpack_from("<H", data, 10)[0]
    off = hsize
    while off + 24 <= len(data):
        marker, length, arrival, bcrc, hcrc = struct.unpack_from("<IIqII", data, off)
        if marker != MARKER or off + 24 + length > len(data) or (
                verify and crc32c(data[off:off + 20]) != hcrc):
            off += 1
            continue
        body = data[off + 24:off + 24 + length]
        if verify and crc32c(body) != bcrc:
            off += 1
            continue
        n = struct.unpack_from("<I", body, 0)[0]
        parts, p = [], 4
        for _ in range(n):
            (ln,) = struct.unpack_from("<I", body, p)
            parts.append(body[p + 4:p + 4 + ln])
            p += 4 + ln
        yield arrival, parts
        off += 24 + length


def messages(path, kinds=None):
    """Yield (arrival_ns, kind, header dict) of the bus messages, of KINDS only when given."""
    for arrival, parts in frames(path):
        if len(parts) < 2:
            continue
        topic = parts[0].decode("utf-8", "replace")
        kind = topic.split(".")[1] if topic.count(".") >= 1 else topic
        if kinds and kind not in kinds:
            continue
        try:
            yield arrival, kind, json.loads(parts[1])
        except ValueError:
            continue
