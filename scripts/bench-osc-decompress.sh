#!/usr/bin/env bash
# Messages per second decompressing the SigComp messages Open SigComp's own Deflate compressor sends: Open SigComp's
# decompressor beside sigkit's, with its native decoders (`native`) and with every instruction in the UDVM (`udvm`),
# measured side by side on this machine: ROUNDS rounds, each running the three once, so that the host's drift hits
# every program alike. Two tables, by wall-clock time (the decompressing and accepting only) and by the thread's
# CPU time (/proc/thread-self/schedstat over the timed passes, the fresh receivers' creation included: what other
# processes on a busy host take does not count), give each program's median over the rounds, its ratio to Open
# SigComp's median, and the median of its per-round ratios to Open SigComp's.
#
# Usage: scripts/bench-osc-decompress.sh OPENSIGCOMP_OUT_DIR [ROUNDS] [--flow DIR] [--repeat R] [--passes K]
#                                        [--compartment-every N] [--sip-dict] [--keep DIR]
#   OPENSIGCOMP_OUT_DIR  an Open SigComp build holding speed/src/libopensigcomp.a and its headers in speed/src
#                        (built as scripts/bench-vs-opensigcomp.sh's header says; ../shared/anchors/
#                        build-opensigcomp.sh does it). This script builds scripts/anchors/opensigcomp_messages.cpp
#                        against it with the flags of that speed build, in a temporary directory; it downloads
#                        nothing and copies nothing of Open SigComp's into the repository.
#   ROUNDS               interleaved rounds (default 5).
#   --flow DIR           the SIP messages (corpus/README.md's format; default corpus/open-sigcomp-startup).
#   --repeat R           send the flow R times in a row (default 1).
#   --passes K           passes over the messages per timed run (default 2000).
#   --compartment-every N, --sip-dict   passed to the generator (a new compartment every N messages; the SIP/SDP
#                        dictionary of RFC 3485 at both ends).
#   --keep DIR           write the messages to DIR (created; kept) instead of a temporary directory.
#
# The messages are generated once: Open SigComp's two stacks (the UE's and the P-CSCF's, each as its speed test
# configures them: Deflate, DMS 8192, SMS 8192, CPB 64, SigComp version 2, UDP) send each other the flow's messages,
# each compressed by its sender's stack and decompressed and accepted at once by the other's, so that feedback and
# states flow as in its speed test. Each timed run then decompresses them K times, every pass with fresh receiving
# endpoints that accept each message under its compartment (rebuilding the states the first pass built), timing only
# the decompressing and accepting. Both sigkit runs first check every output against the SIP message it carries and
# count the tokens the native decoders took; the script fails unless `native` took tokens natively in every message
# (the recognised path ran on Open SigComp's own bytecode) and `udvm` took none.
#
# Exit codes: 0 done; 1 a program failed or a check did not hold; 2 bad usage.
set -euo pipefail

usage() {
  echo "usage: $0 OPENSIGCOMP_OUT_DIR [ROUNDS] [--flow DIR] [--repeat R] [--passes K] [--compartment-every N] [--sip-dict] [--keep DIR]" >&2
  exit 2
}

anchor_dir=""
rounds=""
flow=corpus/open-sigcomp-startup
passes=2000
keep=""
generate_options=()
while [ $# -gt 0 ]; do
  case "$1" in
    --flow) [ $# -ge 2 ] || usage; flow=$2; shift ;;
    --repeat | --compartment-every) [ $# -ge 2 ] || usage; generate_options+=("$1" "$2"); shift ;;
    --passes) [ $# -ge 2 ] || usage; passes=$2; shift ;;
    --sip-dict) generate_options+=(--sip-dict) ;;
    --keep) [ $# -ge 2 ] || usage; keep=$2; shift ;;
    -h | --help) usage ;;
    -*) usage ;;
    *)
      if [ -z "$anchor_dir" ]; then anchor_dir=$1
      elif [ -z "$rounds" ]; then rounds=$1
      else usage
      fi
      ;;
  esac
  shift
done
[ -n "$anchor_dir" ] || usage
rounds=${rounds:-5}
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "ROUNDS must be a positive integer, not '$rounds'" >&2; exit 2; }
[[ "$passes" =~ ^[1-9][0-9]*$ ]] || { echo "--passes must be a positive integer, not '$passes'" >&2; exit 2; }

[ -d "$anchor_dir" ] || { echo "no directory $anchor_dir" >&2; exit 2; }
osc_src=$(cd "$anchor_dir" && pwd)/speed/src
[ -f "$osc_src/libopensigcomp.a" ] && [ -f "$osc_src/Stack.h" ] || {
  echo "no $osc_src/libopensigcomp.a with its headers: build Open SigComp's speed tree first (see this script's header)" >&2
  exit 2
}

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
[ -d "$flow" ] || { echo "no flow directory $flow" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ -n "$keep" ]; then
  mkdir -p "$keep"
  messages=$keep
else
  messages=$work/messages
  mkdir -p "$messages"
fi

# The speed build's flags (its build/Makefile.common with BUILD=speed and configure's USE_POSIX_LOCKING,
# HAVE_REALLOC, USE_OPENSSL_SHA1: they change its classes' layout, so the driver must see the same), and the
# options today's g++ needs for its 2000s C++.
driver=$work/opensigcomp_messages
g++ -std=gnu++98 -fpermissive -include stdio.h -include string.h -Wall -fno-rtti -DUSE_POSIX_LOCKING -DHAVE_REALLOC \
  -DUSE_OPENSSL_SHA1 -O2 -DNDEBUG -finline-functions -I"$osc_src" -o "$driver" scripts/anchors/opensigcomp_messages.cpp \
  "$osc_src/libopensigcomp.a" -Wl,--no-as-needed -lpthread -lcrypto
cargo build --release -p sigcomp --example decompress_dir >&2
target_dir=${CARGO_TARGET_DIR:-$repo/target}
sigkit=$target_dir/release/examples/decompress_dir

"$driver" generate "$flow" "$messages" "${generate_options[@]}" >&2

cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
# One line per run, as the programs print it: "<program> messages=… messages_per_s=… …".
runs=$work/runs
for round in $(seq 1 "$rounds"); do
  line=$("$driver" time "$messages" "$passes")
  echo "$line" >>"$runs"
  echo "round $round/$rounds: $line" >&2
  for mode in native udvm; do
    line=$("$sigkit" "$messages" "$passes" "$mode")
    echo "$line" >>"$runs"
    echo "round $round/$rounds: $line" >&2
  done
done

python3 - "$runs" "$cpu" "$rounds" "$passes" "$flow" "$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)" <<'EOF'
import statistics
import sys

runs_file, cpu, rounds, passes, flow, commit = sys.argv[1:]
programs = {}
for line in open(runs_file):
    program, *fields = line.split()
    programs.setdefault(program, []).append(dict(f.split("=", 1) for f in fields))

failed = []
for run in programs["sigkit-native"]:
    if int(run["native_tokens"]) <= 0:
        failed.append("sigkit native took no token natively: the recognised path did not run on Open SigComp's bytecode")
    elif int(run["native_tokens_fewest_in_a_message"]) <= 0:
        failed.append("sigkit native took no token natively in some message")
for run in programs["sigkit-udvm"]:
    if int(run["native_tokens"]) != 0:
        failed.append("sigkit udvm took tokens natively")

messages = programs["opensigcomp"][0]["messages"]
names = {
    "opensigcomp": "Open SigComp (Stack::uncompressMessage + provideCompartmentId)",
    "sigkit-native": "sigkit, native decoders (decompress + accept)",
    "sigkit-udvm": "sigkit, UDVM only (decompress + accept)",
}
print(f"CPU: {cpu}; sigkit {commit}")
print(f"{flow}: {messages} messages from Open SigComp's Deflate compressor; {rounds} interleaved rounds of "
      f"{passes} passes each (fresh receivers per pass)")
native = programs["sigkit-native"][0]
print(f"tokens decoded natively by sigkit native: {float(native['native_tokens_per_message']):.1f} per message, "
      f"{native['native_tokens_fewest_in_a_message']} in the message with the fewest")
for key, title in (("messages_per_s", "wall-clock time of the decompressing and accepting"),
                   ("messages_per_cpu_s", "the thread's CPU time over the passes, receivers' creation included")):
    anchor_rates = [float(r[key]) for r in programs["opensigcomp"]]
    anchor = statistics.median(anchor_rates)
    print()
    print(f"Messages/s by {title}:")
    print()
    print("| program | median messages/s | runs (messages/s) | median / Open SigComp's | median of the rounds' ratios |")
    print("|---|---:|---|---:|---:|")
    for program, entries in programs.items():
        rates = [float(r[key]) for r in entries]
        median = statistics.median(rates)
        runs = ", ".join(f"{r:,.0f}" for r in rates)
        # Each round's ratio compares runs made seconds apart, so the host's drift mostly cancels within a round.
        paired = statistics.median(r / a for r, a in zip(rates, anchor_rates))
        print(f"| {names.get(program, program)} | {median:,.0f} | {runs} | {median / anchor:.2f} | {paired:.2f} |")
if failed:
    for f in sorted(set(failed)):
        print(f"FAILED: {f}", file=sys.stderr)
    sys.exit(1)
EOF
