#!/usr/bin/env python3
"""An optimistic bound on the mean compressed TCP/IP header of a capture, for a
scheme that infers fields from the previous packet of the same direction and
from the packets of the reverse direction, which TAROC (per-direction
contexts, W-LSB over a window of references) does not do.

Usage: scripts/taroc-inference-bound.py CAPTURE [CAPTURE ...]   (needs tshark)

Per packet, in order, with the previous packet of its direction as the
reference (the first packet of a direction costs 50 bytes, an IR):
  - 1 byte of type, MSN and CRC, and the 2-byte TCP checksum, always;
  - SEQ: free where it is the reference's SEQ plus its payload (plus one
    for SYN or FIN), else 4 bytes;
  - ACK: free where unchanged or where it acknowledges the reverse
    direction's latest packet in full, else 2 bytes;
  - TSval: the bytes of its change from the reference (with a sign bit);
  - TSecr: free where unchanged or where it echoes the reverse direction's
    latest TSval, else 2 bytes;
  - window: free where unchanged, else 2 bytes.
Nothing is charged for robustness against loss (naming which reverse packet
is meant, or a reference that was lost), nor for IP-ID, flags or options
other than timestamps: the figure is a floor for such a scheme, not a
design.
"""

import math
import subprocess
import sys

FIELDS = [
    "ip.src",
    "tcp.srcport",
    "ip.dst",
    "tcp.dstport",
    "tcp.seq_raw",
    "tcp.ack_raw",
    "tcp.len",
    "tcp.options.timestamp.tsval",
    "tcp.options.timestamp.tsecr",
    "tcp.flags",
    "tcp.window_size_value",
]
IR_BYTES = 50


def packets(capture):
    args = ["tshark", "-r", capture, "-Y", "tcp && !icmp", "-T", "fields", "-E", "occurrence=f"]
    for f in FIELDS:
        args += ["-e", f]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        src, sport, dst, dport, seq, ack, length, tsval, tsecr, flags, window = line.split("\t")
        yield {
            "dir": (src, sport, dst, dport),
            "seq": int(seq),
            "ack": int(ack),
            "len": int(length),
            "tsval": int(tsval) if tsval else None,
            "tsecr": int(tsecr) if tsecr else None,
            "flags": int(flags, 16),
            "window": window,
        }


def next_seq(p):
    # SYN and FIN take one sequence number each.
    return (p["seq"] + p["len"] + (1 if p["flags"] & 0x3 else 0)) % 2**32


def bound(capture):
    latest = {}
    sizes = []
    for p in packets(capture):
        d = p["dir"]
        reverse = (d[2], d[3], d[0], d[1])
        ref, back = latest.get(d), latest.get(reverse)
        if ref is None:
            size = IR_BYTES
        else:
            size = 1 + 2
            if p["seq"] != next_seq(ref):
                size += 4
            if p["ack"] != ref["ack"] and not (back is not None and p["ack"] == next_seq(back)):
                size += 2
            if p["tsval"] is not None and ref["tsval"] is not None:
                change = (p["tsval"] - ref["tsval"]) % 2**32
                change = min(change, 2**32 - change)
                size += math.ceil((change.bit_length() + 1) / 8) if change else 0
                echoed = back is not None and p["tsecr"] == back["tsval"]
                if p["tsecr"] != ref["tsecr"] and not echoed:
                    size += 2
            if p["window"] != ref["window"]:
                size += 2
        sizes.append(size)
        latest[d] = p
    return sizes


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for capture in sys.argv[1:]:
        sizes = bound(capture)
        mean = sum(sizes) / max(len(sizes), 1)
        print(f"{capture}: {len(sizes)} packets, at least {mean:.2f} B a header")


if __name__ == "__main__":
    main()
