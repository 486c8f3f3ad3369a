#!/usr/bin/env bash
# Round trips per second of sigkit (LZSS, Deflate, LZ77) beside Open SigComp (reSIProcate contrib/opensigcomp),
# measured side by side on this machine: ROUNDS rounds, each running Open SigComp's speed test and then
# `sigkit bench` once per algorithm, so that the host's drift hits every program alike. The table gives each
# program's median over the rounds and each sigkit algorithm's median divided by Open SigComp's median.
#
# Usage: scripts/bench-vs-opensigcomp.sh OPENSIGCOMP_OUT_DIR [ROUNDS] [--json] [--messages N] [--mechanism M]
#                                       [--levels "L ..."] [--algos "A ..."]
#   OPENSIGCOMP_OUT_DIR  an Open SigComp build holding speed/src/test/speed-test: reSIProcate's contrib/opensigcomp
#                        copied to OPENSIGCOMP_OUT_DIR/speed, `./configure -y`, then `make BUILD=speed libopensigcomp.a`
#                        in src and `make BUILD=speed speed-test` in src/test (today's g++ needs CXXFLAGS="-std=gnu++98
#                        -fpermissive -include stdio.h -include string.h" TARGET_ARCH=-Wno-error, and LDFLAGS=
#                        "-Wl,--no-as-needed -lpthread -lcrypto" gives it OpenSSL's SHA-1 as in its published figures).
#                        This script builds and downloads nothing of Open SigComp's.
#   ROUNDS               interleaved rounds (default 5).
#   --json               print one JSON object instead of the table.
#   --messages N         round trips per run, the same N for every program (default 20000).
#   --mechanism M        sigkit's mechanism (default dynamic, the one Open SigComp's Deflate compressor uses).
#   --levels "L ..."     sigkit's compression levels, each run in every round (default "6", the default level;
#                        a program other than level 6 is named sigkit-ALGO-lL).
#   --algos "A ..."      sigkit's algorithms (default "lzss deflate lz77").
#
# The workload. Open SigComp's speed test (its src/test/speed_test.cpp) compresses N messages, alternately a
# REGISTER (~812 B) from Alice and a 200 OK (~408 B) from Bob, each decompressed by the other stack at once: Deflate,
# DMS 8192, SMS 8192, CPB 64, UDP, a new compartment every 10 messages, no SIP/SDP dictionary (it never calls
# useSipDictionary). sigkit runs
#   sigkit bench --flow corpus/open-sigcomp-startup --first 2 --compartment-every 10 --dms 8192 --sms 8192 --cpb 64
#                --transport udp --dict-priority none --mechanism dynamic --algo lzss|deflate|lz77 --messages N --json
# and both count one message compressed and decompressed as one round trip. What differs:
# - Messages: sigkit repeats the corpus's REGISTER (850 B) and 200 OK (468 B) byte for byte; Open SigComp fills its
#   templates with fresh random branch, Call-ID, CSeq, nonce and response values in every message, so its messages
#   share less with the history.
# - Mechanism: Open SigComp's Deflate compressor keeps its own acknowledged history (sigkit's `dynamic`); sigkit's
#   `shared` (its default elsewhere) also uses the peer's messages (--mechanism shared to measure that).
# - Compartments: sigkit closes the old compartment pair when it opens a new one; Open SigComp keeps old
#   compartments in its state handler.
# - Checking: sigkit compares every decompressed message with the original; Open SigComp's speed build (-O2
#   -DNDEBUG) compiles its NACK assertion out and compares nothing.
# - Timing: sigkit's figure is its JSON `round_trips_per_s` (the messages only, endpoints' set-up excluded); Open
#   SigComp's is N over the wall-clock time of the whole process (start-up included: about 5 ms, 0.25 % of a
#   20,000-message run at 10,000/s).
set -euo pipefail

usage() {
  echo "usage: $0 OPENSIGCOMP_OUT_DIR [ROUNDS] [--json] [--messages N] [--mechanism M] [--levels \"L ...\"] [--algos \"A ...\"]" >&2
  exit 2
}

anchor_dir=""
rounds=""
json=0
messages=20000
mechanism=dynamic
levels="6"
algo_list="lzss deflate lz77"
while [ $# -gt 0 ]; do
  case "$1" in
    --json) json=1 ;;
    --messages) [ $# -ge 2 ] || usage; messages=$2; shift ;;
    --mechanism) [ $# -ge 2 ] || usage; mechanism=$2; shift ;;
    --levels) [ $# -ge 2 ] || usage; levels=$2; shift ;;
    --algos) [ $# -ge 2 ] || usage; algo_list=$2; shift ;;
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
[[ "$messages" =~ ^[1-9][0-9]*$ ]] || { echo "--messages must be a positive integer, not '$messages'" >&2; exit 2; }

speed_test=$anchor_dir/speed/src/test/speed-test
[ -x "$speed_test" ] || { echo "no $speed_test: build Open SigComp's speed test first (see this script's header)" >&2; exit 2; }

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
cargo build --release -p sigkit-cli >&2
sigkit=$repo/target/release/sigkit

read -r -a algos <<<"$algo_list"
read -r -a level_list <<<"$levels"
workload=(--flow corpus/open-sigcomp-startup --first 2 --compartment-every 10 --dms 8192 --sms 8192 --cpb 64
  --transport udp --dict-priority none --mechanism "$mechanism")

cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
cpus=$(grep -c '^processor' /proc/cpuinfo)

# One line per run: round, program, round trips/s, compression ratio (SigComp bytes / SIP bytes, "-" if unknown).
runs=$(mktemp)
trap 'rm -f "$runs"' EXIT

for round in $(seq 1 "$rounds"); do
  t0=$(date +%s.%N)
  "$speed_test" "$messages" >/dev/null
  t1=$(date +%s.%N)
  rate=$(python3 -c "print($messages / ($t1 - $t0))")
  echo "$round opensigcomp $rate -" >>"$runs"
  echo "round $round/$rounds: opensigcomp $(printf '%.0f' "$rate")/s" >&2
  for algo in "${algos[@]}"; do
    for level in "${level_list[@]}"; do
      name=sigkit-$algo
      [ "$level" = 6 ] || name=$name-l$level
      report=$("$sigkit" bench "${workload[@]}" --algo "$algo" --level "$level" --messages "$messages" --json)
      fields=$(python3 -c 'import json, sys
d = json.loads(sys.argv[1])
print(d["round_trips_per_s"], d["ratio"])' "$report")
      read -r rate ratio <<<"$fields"
      echo "$round $name $rate $ratio" >>"$runs"
      echo "round $round/$rounds: $name $(printf '%.0f' "$rate")/s" >&2
    done
  done
done

python3 - "$runs" "$json" "$cpu" "$cpus" "$rounds" "$messages" "$mechanism" "$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)" <<'EOF'
import json
import statistics
import sys

runs_file, as_json, cpu, cpus, rounds, messages, mechanism, commit = sys.argv[1:]
programs = {}
for line in open(runs_file):
    _round, program, rate, ratio = line.split()
    entry = programs.setdefault(program, {"runs": [], "ratio": None})
    entry["runs"].append(float(rate))
    if ratio != "-":
        entry["ratio"] = float(ratio)

anchor = statistics.median(programs["opensigcomp"]["runs"])
result = {
    "cpu": cpu,
    "logical_cpus": int(cpus),
    "commit": commit,
    "rounds": int(rounds),
    "round_trips_per_run": int(messages),
    "sigkit_settings": "--flow corpus/open-sigcomp-startup --first 2 --compartment-every 10 --dms 8192 "
    f"--sms 8192 --cpb 64 --transport udp --dict-priority none --mechanism {mechanism}",
    "programs": {},
}
for program, entry in programs.items():
    median = statistics.median(entry["runs"])
    result["programs"][program] = {
        "median_round_trips_per_s": round(median, 1),
        "runs_round_trips_per_s": [round(r, 1) for r in entry["runs"]],
        "vs_opensigcomp": round(median / anchor, 3),
        "compression_ratio": None if entry["ratio"] is None else round(entry["ratio"], 4),
    }

if as_json == "1":
    print(json.dumps(result, indent=2))
    sys.exit(0)

names = {"opensigcomp": "Open SigComp speed-test (Deflate)"}
print(f"CPU: {cpu} ({cpus} logical CPUs); sigkit {commit}")
print(f"{rounds} interleaved rounds of {messages} round trips per program; sigkit {result['sigkit_settings']}")
print()
print("| program | median round trips/s | runs (round trips/s) | median / Open SigComp's | SigComp / SIP bytes |")
print("|---|---:|---|---:|---:|")
for program, entry in result["programs"].items():
    runs = ", ".join(f"{r:,.0f}" for r in entry["runs_round_trips_per_s"])
    ratio = "-" if entry["compression_ratio"] is None else f"{entry['compression_ratio']:.3f}"
    name = names.get(program, program.replace("sigkit-", "sigkit ", 1))
    print(f"| {name} | {entry['median_round_trips_per_s']:,.0f} | {runs} | {entry['vs_opensigcomp']:.2f} | {ratio} |")
EOF
