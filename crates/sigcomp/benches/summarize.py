#!/usr/bin/env python3
"""Turns a `cargo bench -p sigcomp --bench decompress` run into the
Markdown tables of BENCHMARKS.md.

    cargo bench -p sigcomp --bench decompress 2>&1 | tee bench.log
    python3 crates/sigcomp/benches/summarize.py bench.log

Times come from criterion's estimates (target/criterion/**/new/, or
$CARGO_TARGET_DIR/criterion), message sizes, cycle counts and outcomes from
the bench's "info:" lines in the log. Prints one table per torture test
(mean over its messages) and one row per bench.
"""

import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "..", "..", "..", "target")
CRITERION = os.path.join(TARGET, "criterion")


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


def key(name):
    """lz77 first, then torture tests in RFC section order, steps in order."""
    group, _, rest = name.partition("/")
    test = rest.split("/")[0]
    nums = [int(x) for x in re.findall(r"\d+", test.split("-")[0])]
    m = re.search(r"step([\d.]+)$", name)
    step = [int(x) for x in m.group(1).split(".")] if m else [0]
    return (group != "lz77_invite", nums, test, step, name)


def median_us(e):
    return e["median"]["point_estimate"] / 1000.0


def main():
    log = sys.argv[1] if len(sys.argv) > 1 else None
    est = estimates()
    info = infos(log)
    # Only this bench's groups (target/criterion is shared by every bench).
    names = sorted((n for n in est if n.split("/")[0] in ("lz77_invite", "rfc4465")), key=key)

    # Per torture test: every message of the test, benched on its own.
    tests = {}
    for name in names:
        if name.startswith("rfc4465/"):
            tests.setdefault(name.split("/")[1], []).append(name)
    print("| torture test | messages | mean of medians, µs per message | fastest–slowest µs | messages/s per core (from the mean) |")
    print("|---|---:|---:|---:|---:|")
    for test, benches in tests.items():
        meds = [median_us(est[b]) for b in benches]
        mean = sum(meds) / len(meds)
        print(f"| {test} | {len(meds)} | {mean:.2f} | {min(meds):.2f}–{max(meds):.2f} | {1e6 / mean:,.0f} |")
    print()

    print("| bench | median µs | criterion estimate µs | 95% CI of mean µs | messages/s per core (median) | notes |")
    print("|---|---:|---:|---:|---:|---|")
    for name in names:
        e = est[name]
        med = median_us(e)
        lo = e["mean"]["confidence_interval"]["lower_bound"] / 1000.0
        hi = e["mean"]["confidence_interval"]["upper_bound"] / 1000.0
        rate = 1e6 / med
        # What criterion prints: the slope of time over iterations where it
        # has one, else the mean.
        head = (e.get("slope") or e["mean"])["point_estimate"] / 1000.0
        note = info.get(name, "")
        if not note and name.startswith("lz77_invite/"):
            variant = name.split("/")[1]
            note = info.get("lz77_invite/" + variant, "")
        print(f"| {name} | {med:.2f} | {head:.2f} | {lo:.2f}–{hi:.2f} | {rate:,.0f} | {note} |")


if __name__ == "__main__":
    main()
