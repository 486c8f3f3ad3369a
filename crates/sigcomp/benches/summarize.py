#!/usr/bin/env python3
"""Turns a `cargo bench -p sigcomp --bench decompress` run into the
Markdown table of BENCHMARKS.md.

    cargo bench -p sigcomp --bench decompress 2>&1 | tee bench.log
    python3 crates/sigcomp/benches/summarize.py bench.log

Times come from criterion's estimates (target/criterion/**/new/), message
sizes and cycle counts from the bench's "info:" lines in the log.
"""

import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))
CRITERION = os.path.join(ROOT, "..", "..", "..", "target", "criterion")


def estimates():
    out = {}
    for dirpath, _dirs, files in os.walk(CRITERION):
        if os.path.basename(dirpath) != "new" or "estimates.json" not in files:
            continue
        with open(os.path.join(dirpath, "benchmark.json")) as f:
            full_id = json.load(f)["full_id"]
        with open(os.path.join(dirpath, "estimates.json")) as f:
            e = json.load(f)
        out[full_id] = e
    return out


def infos(log):
    """info: <bench>: <text> lines, keyed by bench name."""
    got = {}
    if not log:
        return got
    with open(log, errors="replace") as f:
        for line in f:
            m = re.match(r"info: (\S+): (.*)", line)
            if m:
                got[m.group(1)] = m.group(2).strip()
    return got


def main():
    log = sys.argv[1] if len(sys.argv) > 1 else None
    est = estimates()
    info = infos(log)
    print("| bench | median µs | 95% CI of mean µs | messages/s per core | notes |")
    print("|---|---:|---:|---:|---|")

    def key(name):
        # lz77 first, then torture tests in RFC section order.
        group, _, rest = name.partition("/")
        nums = [int(x) for x in re.findall(r"\d+", rest.split("-")[0])]
        step = int(re.search(r"step(\d+)$", name).group(1)) if "step" in name else 0
        return (group != "lz77_invite", nums, rest.split("/")[0], step)

    for name in sorted(est, key=key):
        e = est[name]
        med = e["median"]["point_estimate"] / 1000.0
        lo = e["mean"]["confidence_interval"]["lower_bound"] / 1000.0
        hi = e["mean"]["confidence_interval"]["upper_bound"] / 1000.0
        rate = 1e6 / med
        note = info.get(name, "")
        if not note and name.startswith("lz77_invite/"):
            variant = name.split("/")[1]
            note = info.get("lz77_invite/" + variant, "")
        print(f"| {name} | {med:.2f} | {lo:.2f}–{hi:.2f} | {rate:,.0f} | {note} |")


if __name__ == "__main__":
    main()
