#!/usr/bin/env python3
"""Reads the half GEMV's TIMELINE diagnostic (shaders/q4_linear_gemv_half.comp, TIMELINE = 1
or 2) from a bench dump's PREFIX.out.f32 and prints when the workgroups started, made their
limbs, used block 0's batches (TIMELINE = 2), finished each block and ended, in us from the
first start (device clock, ns on NVIDIA). crates/cli/tests/shader_switches.rs checks the
record layout on the test device.
Usage: timeline.py PREFIX.out.f32 [WORKGROUPS]"""
import struct
import sys


def pct(v, q):
    s = sorted(v)
    return s[min(len(s) - 1, int(q * (len(s) - 1) + 0.5))]


def row(name, v):
    print(f"{name:28s} min {min(v):7.2f}  p10 {pct(v, .1):7.2f}  p50 {pct(v, .5):7.2f}  "
          f"p90 {pct(v, .9):7.2f}  max {max(v):7.2f}")


def main():
    raw = open(sys.argv[1], "rb").read()
    words = struct.unpack(f"<{len(raw) // 4}I", raw)
    wgs = int(sys.argv[2]) if len(sys.argv) > 2 else len(words) // 16
    recs = [words[16 * w:16 * w + 16] for w in range(wgs)]
    # [0]: blocks, plus 0x10000 where TIMELINE = 2 wrote block 0's batch times to [11], [12].
    mode2 = any(r[0] >> 16 == 1 for r in recs)
    recs = [(r[0] & 0xFFFF,) + tuple(r[1:]) for r in recs if 0 < r[0] & 0xFFFF < 1 << 12]
    t0 = min(r[1] for r in recs)
    us = lambda v: ((v - t0) & 0xFFFFFFFF) / 1000.0
    print(f"{len(recs)} workgroups, {sum(r[0] for r in recs)} blocks")
    row("start", [us(r[1]) for r in recs])
    row("limbs made", [us(r[2]) for r in recs])
    pairs = 4 if mode2 else 6
    if mode2:
        row("block 0 batch 0 used", [us(r[11]) for r in recs])
        row("block 0 batch 1 used", [us(r[12]) for r in recs])
    for i in range(pairs):
        ends = [us(r[4 + 2 * i]) for r in recs if r[0] > i]
        if ends:
            row(f"block {i} summed", ends)
    row("end", [us(r[15]) for r in recs])
    durs = []
    for r in recs:
        prev = us(r[2])
        for i in range(min(r[0], pairs)):
            durs.append(us(r[4 + 2 * i]) - prev)
            prev = us(r[4 + 2 * i])
    row("block duration", durs)
    counts = {}
    for r in recs:
        counts[r[0]] = counts.get(r[0], 0) + 1
    print("blocks per workgroup:", dict(sorted(counts.items())))
    ends = sorted(us(r[15]) for r in recs)
    print(f"last end {ends[-1]:.2f} us; workgroups ending in its last 1 us: "
          f"{sum(1 for e in ends if e > ends[-1] - 1.0)}")


if __name__ == "__main__":
    main()
