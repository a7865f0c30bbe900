#!/usr/bin/python3
"""Seeds for the recording reader's fuzz target, cut from a real recording.

usage: fuzz_record_seeds.py RECORDING OUTDIR

A seed is one mode byte (bit 0: the target makes every CRC right before
reading, see tests/fuzz/fuzz_bus_record.c) and a small recording: the
file header and a few frames of RECORDING.  Written:

  kind_<kind>.bin   the first frame of each kind (at most 8 KiB), CRCs fixed
  run_<n>.bin       runs of consecutive frames, about 4 KiB each, CRCs fixed
  as_is_<kind>.bin  the same frames read as they are (their CRCs are real)
  damaged_*.bin     a cut tail, a flipped body byte, garbage between frames,
                    a length past the limit, a wrong magic, version or
                    header CRC: the reader's error and resync paths

Record one with a master, an agent and --sim-workload for a few seconds
(`dptop --record`): its frames are what agents really publish.
"""
import os
import struct
import sys

HDR, FRAME_HDR, MARKER = 32, 24, 0x46525044


def frames(data):
    """(offset, end, kind) of every frame, read the way the reader walks them."""
    pos, out = HDR, []
    while pos + FRAME_HDR <= len(data):
        marker, length = struct.unpack_from("<II", data, pos)
        if marker != MARKER or pos + FRAME_HDR + length > len(data):
            break
        body = data[pos + FRAME_HDR:pos + FRAME_HDR + length]
        n, = struct.unpack_from("<I", body, 0)
        tlen, = struct.unpack_from("<I", body, 4)
        topic = body[8:8 + tlen].decode(errors="replace")
        kind = topic.split(".")[1] if topic.count(".") >= 2 else "unknown"
        out.append((pos, pos + FRAME_HDR + length, kind))
        pos += FRAME_HDR + length
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data = open(sys.argv[1], "rb").read()
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)
    header = data[:HDR]
    fr = frames(data)
    if not fr:
        sys.exit("no frames in " + sys.argv[1])

    def write(name, mode, body):
        with open(os.path.join(out, name), "wb") as f:
            f.write(bytes([mode]) + body)

    seen = {}
    for start, end, kind in fr:
        if kind not in seen and end - start <= 8192:
            seen[kind] = data[start:end]
    for kind, frame in sorted(seen.items()):
        write(f"kind_{kind}.bin", 1, header + frame)
        write(f"as_is_{kind}.bin", 0, header + frame)
    runs, cur = 0, b""
    for start, end, _ in fr:
        if end - start > 4096:
            continue
        cur += data[start:end]
        if len(cur) >= 4096:
            write(f"run_{runs}.bin", 1, header + cur)
            runs += 1
            cur = b""
            if runs == 6:
                break
    small = [data[s:e] for s, e, _ in fr if e - s <= 1024][:4]
    whole = header + b"".join(small)
    write("damaged_cut_tail.bin", 0, whole[:-7])
    flipped = bytearray(whole)
    flipped[HDR + FRAME_HDR + 10] ^= 0x40
    write("damaged_flipped_body.bin", 0, bytes(flipped))
    garbage = header + small[0] + b"DPRF garbage, not a frame" + b"".join(small[1:])
    write("damaged_garbage_between.bin", 0, garbage)
    huge = bytearray(header + small[0])
    struct.pack_into("<I", huge, HDR + 4, 1 << 30)
    write("damaged_huge_length.bin", 1, bytes(huge))
    write("damaged_magic.bin", 0, b"DPTOPRECX" + whole[9:])
    version = bytearray(whole)
    struct.pack_into("<H", version, 8, 9)
    write("damaged_version.bin", 1, bytes(version))
    crc = bytearray(whole)
    crc[28] ^= 0xFF
    write("damaged_header_crc.bin", 0, bytes(crc))
    write("header_only.bin", 0, header)
    print(f"{len(seen)} kinds, {runs} runs, 8 damaged files in {out}")


main()
