#!/usr/bin/env bash
# CI smoke run of the fuzz targets (called by .ci/run): builds them on
# stable Rust (build.sh) and runs each for FUZZ_SECONDS (default 30) from
# the checked-in seeds, with a throw-away corpus. Any crash, timeout or
# out-of-memory input fails CI; the input is kept in fuzz/artifacts/ and
# printed in hex here so it can be turned into a regression test.
set -euo pipefail
cd "$(dirname "$0")"
export PATH="$HOME/.cargo/bin:$PATH"
seconds=${FUZZ_SECONDS:-30}

# libfuzzer-sys compiles libFuzzer (C++) with the cc crate.
if ! command -v c++ >/dev/null 2>&1 && ! command -v g++ >/dev/null 2>&1; then
    echo "fuzz: no C++ compiler; installing g++" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends g++
fi

start=$(date +%s)
bindir=$(./build.sh)
echo "fuzz: targets built in $(($(date +%s) - start)) s" >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for target in decompress stream nack emit lines sip scenario inject taroc iphc capture analyze compress proxy native hep; do
    mkdir -p "$work/$target" "artifacts/$target"
    echo "fuzz: $target for ${seconds} s" >&2
    log="$work/$target.log"
    if "$bindir/$target" \
        -max_total_time="$seconds" \
        -timeout=10 \
        -print_final_stats=1 \
        -artifact_prefix="artifacts/$target/" \
        "$work/$target" "seeds/$target" >"$log" 2>&1; then
        # The last status line and the final statistics.
        grep -E '^#[0-9]+' "$log" | tail -n 1 >&2 || true
        grep -E '^stat::(number_of_executed_units|average_exec_per_sec|new_units_added)' "$log" >&2 || true
    else
        status=1
        echo "fuzz: $target FAILED; libFuzzer's report:" >&2
        tail -n 60 "$log" >&2
        for a in "artifacts/$target"/*; do
            [ -f "$a" ] || continue
            echo "fuzz: input $a (hex): $(od -An -v -tx1 "$a" | tr -d ' \n')" >&2
        done
    fi
done
echo "fuzz: smoke run done in $(($(date +%s) - start)) s" >&2
exit $status
