#!/usr/bin/env bash
# A longer fuzzing run of one target, on stable Rust (see build.sh):
#
#     fuzz/run.sh TARGET SECONDS [libFuzzer options...]
#
# TARGET is one of fuzz_targets/ (without .rs). The corpus grows in
# fuzz/corpus/TARGET (gitignored; kept between runs), started from the
# checked-in seeds in fuzz/seeds/TARGET. A crash, timeout or out-of-memory
# input is written to fuzz/artifacts/TARGET/ and the script exits non-zero.
# Reproduce one with: fuzz/target/<host>/release/TARGET ARTIFACT_FILE
# libFuzzer's final statistics (executions, exec/s, ...) are printed at the
# end. Run one fuzzer at a time on a small machine: each uses a full core.
set -euo pipefail
cd "$(dirname "$0")"

targets=$(cd fuzz_targets && ls *.rs | sed 's/\.rs$//' | tr '\n' ' ' | sed 's/ $//')
if [ $# -lt 2 ]; then
    echo "usage: $0 TARGET SECONDS [libFuzzer options...]  (TARGET: $targets)" >&2
    exit 2
fi
target=$1 seconds=$2
shift 2
if [ ! -f "fuzz_targets/$target.rs" ]; then
    echo "$0: unknown target '$target' ($targets)" >&2
    exit 2
fi

bindir=$(./build.sh)
mkdir -p "corpus/$target" "artifacts/$target"
# -timeout: one input running over 10 s is a finding (the UDVM's cycle
# budget, RFC 3320 §8.6, should stop any message far sooner).
exec "$bindir/$target" \
    -max_total_time="$seconds" \
    -timeout=10 \
    -print_final_stats=1 \
    -artifact_prefix="artifacts/$target/" \
    "$@" \
    "corpus/$target" "seeds/$target"
