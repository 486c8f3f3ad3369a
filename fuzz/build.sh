#!/usr/bin/env bash
# Builds the fuzz targets (decompress, stream, nack, emit, lines) with libFuzzer on the
# STABLE toolchain, without cargo-fuzz.
#
# cargo-fuzz would pass `-Zsanitizer=...` and so needs nightly. The coverage
# instrumentation libFuzzer needs for its feedback is reachable on stable
# through LLVM's SanitizerCoverage pass: `-Cpasses=sancov-module` plus the
# `-sanitizer-coverage-*` LLVM options below (the same ones cargo-fuzz uses).
# `--cfg fuzzing` is what libfuzzer-sys and cargo-fuzz set; debug assertions
# and overflow checks turn silent arithmetic wrap-arounds into crashes.
#
# `--target <host>` matters: with an explicit target, RUSTFLAGS only reach
# the crates of the targets, not build scripts and proc macros (which would
# otherwise fail to link against the missing __sanitizer_cov_* symbols).
#
# Output: fuzz/target/<host>/release/{decompress,stream,nack,emit,lines}. The target
# dir is fuzz/target (gitignored), separate from the workspace's target/.
# Needs a C++ compiler (libfuzzer-sys compiles libFuzzer itself).
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$HOME/.cargo/bin:$PATH"

HOST=$(rustc -vV | sed -n 's/^host: //p')
export RUSTFLAGS="-Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares \
--cfg fuzzing -Cdebug-assertions -Coverflow-checks"
# Not the workspace's target dir: other flags, so it would rebuild everything.
unset CARGO_TARGET_DIR CARGO_BUILD_TARGET_DIR

cargo build --release --target "$HOST" --target-dir target --bins >&2
echo "target/$HOST/release"
