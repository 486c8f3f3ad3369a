#!/usr/bin/env bash
# TAROC (`sigkit rohc`) beside the ROHC library's TCP profile (RFC 6846; github.com/didier-barvaux/rohc, LGPL-2.1)
# on the same captures, on this machine: the mean compressed TCP/IP header of each, and compress + decompress
# headers/s. A few minutes once the library is built (its first build takes a few more).
#
# Usage: scripts/bench-vs-rohc.sh [ROHC_GIT_DIR] [--ref REF] [--cache DIR] [--rounds N] [--seconds S]
#                                 [--no-speed] [CAPTURE ...]
#   ROHC_GIT_DIR  a git directory (bare or .git) holding the ROHC library. Without it the script clones
#                 https://github.com/didier-barvaux/rohc.git (bare) into the cache once.
#   --ref REF     the library's commit to build (default: the commit below, where configure.ac names version 2.4.0;
#                 the project has tagged no rohc-2.4.0 release, its last tag is rohc-2.3.0).
#   --cache DIR   where the library's source, build and install go (default $CARGO_TARGET_DIR or target/, then
#                 bench-vs-rohc/rohc-<first 12 hex digits of REF>). A finished build is kept and reused; a build
#                 that failed or was interrupted is started over on the next run.
#   --rounds N    interleaved rounds of the speed table (default 5); --seconds S: CPU seconds per timed run
#                 (default 0.5); --no-speed: the header table alone.
#   CAPTURE ...   captures to add to those of crates/taroc/tests/data and crates/sigkit-analyze/tests/data.
#
# What runs, per capture (every TCP/IPv4 and TCP/IPv6 packet sigkit's capture reader takes; loopback captures'
# offloaded checksums repaired on both sides, so both compress the same bytes):
#   - scripts/anchors/rohc_capture.c, built here against the library: one TCP-profile compressor and decompressor
#     per connection direction, MAX_CID 0; with feedback (decompressor in O-mode, each feedback packet handed to
#     its compressor at once) and without (U-mode, none delivered). Every packet must come back byte for byte.
#   - `sigkit rohc CAPTURE --json` in modes u, o, r and o --infer, on a link without loss; TAROC's mean header is
#     its scheme's mean_header_after, and every packet must be delivered.
# Both count every packet sent, IR included; feedback octets are counted apart, in neither mean.
# The speed table times, in ROUNDS interleaved rounds, rohc_capture --bench S (with feedback) and
# crates/taroc/examples/capture_rate.rs (TAROC O-mode), which both compress and decompress the whole capture over and
# over with fresh contexts each pass, comparing every output with its input, for S seconds of the thread's CPU time,
# and prints headers/s medians and the median of the per-round ratios.
#
# The library is built as a library user would: autotools, `./configure --disable-static CFLAGS="-O2 -g"` (its
# asserts kept, as its own builds keep them), no debug traces. Needs gcc, make, autoconf, automake, libtool and
# libpcap's headers (Debian: apt-get install gcc make autoconf automake libtool libpcap-dev).
#
# Exit codes: 0 done; 1 a program failed, a packet did not round-trip, or the two sides saw different packets;
# 2 bad usage; 3 the library could not be fetched or built (the build log is named).
set -euo pipefail

# configure.ac at this commit names version 2.4.0 ("Prepare for next 2.4.0 release" and the work after it).
default_ref=70589cc2b8650f82453815c84ba41b0ab80a52a0

usage() {
  echo "usage: $0 [ROHC_GIT_DIR] [--ref REF] [--cache DIR] [--rounds N] [--seconds S] [--no-speed] [CAPTURE ...]" >&2
  exit 2
}
die() {
  echo "bench-vs-rohc: $2" >&2
  exit "$1"
}

git_dir=""
ref=$default_ref
cache=""
rounds=5
seconds=0.5
speed=1
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --ref) [ $# -ge 2 ] || usage; ref=$2; shift ;;
    --cache) [ $# -ge 2 ] || usage; cache=$2; shift ;;
    --rounds) [ $# -ge 2 ] || usage; rounds=$2; shift ;;
    --seconds) [ $# -ge 2 ] || usage; seconds=$2; shift ;;
    --no-speed) speed=0 ;;
    -h | --help) usage ;;
    -*) usage ;;
    *)
      if [ -z "$git_dir" ] && [ ${#extra[@]} -eq 0 ] && [ -d "$1" ]; then git_dir=$(cd "$1" && pwd)
      elif [ -f "$1" ]; then extra+=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")")
      else die 2 "no capture file or git directory $1"
      fi
      ;;
  esac
  shift
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die 2 "--rounds must be a positive integer, not '$rounds'"
[[ "$seconds" =~ ^([0-9]+\.?[0-9]*|\.[0-9]+)$ ]] && python3 -c "import sys; sys.exit(not 0 < float('$seconds') <= 60)" ||
  die 2 "--seconds must be a number of seconds in (0, 60], not '$seconds'"
[[ "$ref" =~ ^[0-9A-Za-z._/-]+$ ]] || die 2 "--ref must name a commit or tag, not '$ref'"

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
target_dir=${CARGO_TARGET_DIR:-$repo/target}
[ -n "$cache" ] || cache=$target_dir/bench-vs-rohc/rohc-${ref:0:12}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

for tool in git gcc make autoconf automake aclocal autoheader libtoolize python3 cargo; do
  command -v "$tool" >/dev/null || die 3 "$tool is not installed (the library's build needs gcc, make, autoconf, automake, libtool; Debian: apt-get install gcc make autoconf automake libtool libpcap-dev)"
done
echo '#include <pcap/pcap.h>' | gcc -E -x c - >/dev/null 2>&1 ||
  die 3 "libpcap's headers are not installed (Debian: apt-get install libpcap-dev)"

# --- The library: source at REF, built and installed into the cache once. ---------------------------------------
if [ -z "$git_dir" ]; then
  git_dir=$cache/rohc.git
  if ! git --git-dir="$git_dir" rev-parse --verify -q "$ref^{commit}" >/dev/null 2>&1; then
    echo "cloning https://github.com/didier-barvaux/rohc.git into $git_dir" >&2
    rm -rf "$git_dir"
    git clone -q --bare https://github.com/didier-barvaux/rohc.git "$git_dir" ||
      die 3 "cannot clone the ROHC library; give a git directory holding it as the first argument"
  fi
fi
git --git-dir="$git_dir" rev-parse --git-dir >/dev/null 2>&1 || die 2 "$git_dir is not a git directory"
commit=$(git --git-dir="$git_dir" rev-parse --verify -q "$ref^{commit}") ||
  die 3 "$git_dir has no commit $ref (fetch it, or pass --ref)"
install=$cache/install
stamp=$cache/built-$commit
if [ ! -f "$stamp" ] || [ ! -f "$install/lib/librohc.so" ]; then
  echo "building the ROHC library at $commit in $cache (a few minutes; log: $cache/build.log)" >&2
  rm -rf "$cache/src" "$install" "$cache"/built-*
  mkdir -p "$cache/src"
  # Checked out through a private index, leaving out the test captures: some snapshots of the repository lack a
  # few of them, and the library's build needs none.
  index=$cache/index
  rm -f "$index"
  (
    export GIT_INDEX_FILE=$index
    git --git-dir="$git_dir" --work-tree="$cache/src" read-tree "$commit" &&
      git --git-dir="$git_dir" --work-tree="$cache/src" ls-files | grep -v '^test/.*\.pcap$' |
      git --git-dir="$git_dir" --work-tree="$cache/src" checkout-index --stdin
  ) >"$cache/build.log" 2>&1 || die 3 "cannot check out $commit of $git_dir; see $cache/build.log"
  rm -f "$index"
  # The steps of the library's autogen.sh, without the configure call it ends with (that one enables debug traces).
  (
    cd "$cache/src" &&
      aclocal && libtoolize --force && autoconf && autoheader && automake --add-missing --force-missing &&
      ./configure --prefix="$install" --disable-static CFLAGS="-O2 -g" &&
      make -j"$(nproc)" && make install
  ) >>"$cache/build.log" 2>&1 || die 3 "the ROHC library did not build; see $cache/build.log"
  [ -f "$install/lib/librohc.so" ] || die 3 "the ROHC library's build made no $install/lib/librohc.so; see $cache/build.log"
  touch "$stamp"
fi

# --- The two programs. --------------------------------------------------------------------------------------------
driver=$cache/rohc_capture
gcc -O2 -g -Wall -Wextra -o "$driver" scripts/anchors/rohc_capture.c -I"$install/include" -L"$install/lib" \
  -Wl,-rpath,"$install/lib" -lrohc -lpcap || die 1 "scripts/anchors/rohc_capture.c did not build"
# Two builds: with --example, cargo would build that example alone in every package named.
cargo build --release -q -p sigkit-cli >&2 || die 1 "cargo build -p sigkit-cli failed"
cargo build --release -q -p taroc --example capture_rate >&2 || die 1 "cargo build of taroc's capture_rate failed"
sigkit=$target_dir/release/sigkit
rate=$target_dir/release/examples/capture_rate

captures=()
for f in crates/taroc/tests/data/*.pcap crates/taroc/tests/data/*.pcapng \
  crates/sigkit-analyze/tests/data/*.pcap crates/sigkit-analyze/tests/data/*.pcapng; do
  [ -f "$f" ] && captures+=("$f")
done
captures+=("${extra[@]}")
[ ${#captures[@]} -gt 0 ] || die 1 "no captures found"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- Header sizes: one line of JSON per run, named by capture index and column. -----------------------------------
i=0
for cap in "${captures[@]}"; do
  echo "headers: $cap" >&2
  for fb in on off; do
    # Exit 1 is a packet that did not round-trip: the JSON says so and the checks below report it.
    rc=0
    "$driver" --feedback "$fb" "$cap" >"$work/$i.lib-$fb.json" || rc=$?
    [ "$rc" -ne 2 ] || die 2 "$cap: not a capture rohc_capture can read"
    [ "$rc" -le 1 ] || die 1 "rohc_capture failed on $cap (exit $rc)"
  done
  for mode in u o r; do
    "$sigkit" rohc "$cap" --mode "$mode" --json >"$work/$i.taroc-$mode.json" || die 1 "sigkit rohc failed on $cap"
  done
  "$sigkit" rohc "$cap" --mode o --infer --json >"$work/$i.taroc-infer.json" || die 1 "sigkit rohc --infer failed on $cap"
  i=$((i + 1))
done

# --- Speed: interleaved rounds on every capture with TCP packets. -------------------------------------------------
if [ "$speed" = 1 ]; then
  for round in $(seq 1 "$rounds"); do
    i=0
    for cap in "${captures[@]}"; do
      if python3 -c "import json,sys; sys.exit(json.load(open('$work/$i.lib-on.json'))['packets'] == 0)"; then
        echo "speed: round $round/$rounds, $cap" >&2
        # Exit 1 (a packet that did not round-trip) is in the JSON line, and reported with the tables.
        rc=0
        "$driver" --feedback on --bench "$seconds" "$cap" >>"$work/$i.speed-lib.jsonl" || rc=$?
        [ "$rc" -le 1 ] || die 1 "rohc_capture --bench failed on $cap (exit $rc)"
        rc=0
        "$rate" "$cap" "$seconds" o >>"$work/$i.speed-taroc.jsonl" || rc=$?
        [ "$rc" -le 1 ] || die 1 "capture_rate failed on $cap (exit $rc)"
      fi
      i=$((i + 1))
    done
  done
fi

cpu=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)
version=$(python3 -c "import json; print(json.load(open('$work/0.lib-on.json'))['library'])")
python3 - "$work" "$cpu" "$version" "$commit" "$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)" \
  "$rounds" "$seconds" "$speed" "${captures[@]}" <<'EOF'
import json
import os
import statistics
import sys

work, cpu, version, commit, sigkit_commit, rounds, seconds, speed, *captures = sys.argv[1:]
failed = []


def load(i, name):
    return json.load(open(os.path.join(work, f"{i}.{name}.json")))


def taroc(i, name, scheme):
    report = load(i, name)
    s = next(x for x in report["schemes"] if x["scheme"] == scheme)
    if s["delivered"] != s["packets"] or s["compress_errors"] or s["undetected"]:
        failed.append(f"{captures[i]}: {scheme}: {s['delivered']} of {s['packets']} packets delivered, "
                      f"{s['compress_errors']} compress errors, {s['undetected']} undetected")
    return report, s


print(f"CPU: {cpu or 'unknown'}; {version} (commit {commit[:12]}); sigkit {sigkit_commit}")
print()
print("Mean compressed TCP/IP header in octets per packet (IR included, feedback apart); lib = the ROHC library's "
      "TCP profile, fb = with feedback (O-mode), no fb = without (U-mode):")
print()
print("| capture | packets | uncompressed | lib, fb | lib, no fb | TAROC U | TAROC O | TAROC R | TAROC O + infer "
      "| O ÷ lib fb | O + infer ÷ lib fb |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
losses = []
for i, cap in enumerate(captures):
    lib_fb, lib_nofb = load(i, "lib-on"), load(i, "lib-off")
    for lib in (lib_fb, lib_nofb):
        if lib["round_trip_failures"]:
            failed.append(f"{cap}: the library (feedback {lib['feedback']}): {lib['round_trip_failures']} packets "
                          "did not round-trip")
    cols = {}
    for mode in ("u", "o", "r"):
        report, s = taroc(i, f"taroc-{mode}", f"taroc-{mode}")
        cols[mode] = s["mean_header_after"]
    report, s = taroc(i, "taroc-infer", "taroc-o-infer")
    cols["infer"] = s["mean_header_after"]
    c = report["capture"]
    packets = c["tcp_ipv4_packets"] + c["tcp_ipv6_packets"]
    if packets != lib_fb["packets"] or packets != lib_nofb["packets"]:
        failed.append(f"{cap}: sigkit took {packets} TCP/IP packets, the library's driver {lib_fb['packets']}")
    name = os.path.basename(cap)
    if packets == 0:
        print(f"| {name} | 0 | | | | | | | | | |")
        continue
    a, b = lib_fb["mean_header_after"], lib_nofb["mean_header_after"]
    for label, mine, theirs in (("U", cols["u"], b), ("O", cols["o"], a), ("R", cols["r"], a),
                                ("O + infer", cols["infer"], a)):
        if mine >= theirs:
            losses.append(f"{name} {label} {mine:.2f} ≥ {theirs:.2f}")
    print(f"| {name} | {packets} | {lib_fb['mean_header_before']:.2f} | {a:.2f} | {b:.2f} | {cols['u']:.2f} | "
          f"{cols['o']:.2f} | {cols['r']:.2f} | {cols['infer']:.2f} | {cols['o'] / a:.2f} | {cols['infer'] / a:.2f} |")
print()
print("TAROC U is set against the library without feedback, O, R and O + infer against it with feedback.")
if losses:
    print("Where TAROC's mean is not below the library's: " + "; ".join(losses) + ".")
else:
    print("TAROC's mean is below the library's in every mode on every capture.")

if speed == "1":
    print()
    print(f"Compress + decompress, headers/s of the thread's CPU time ({rounds} interleaved rounds of {seconds} s per "
          "program and capture; fresh contexts every pass over the capture; every output compared with its input):")
    print()
    print("| capture | packets | lib, fb: median | runs | TAROC O: median | runs | TAROC O ÷ lib | median of the "
          "rounds' ratios |")
    print("|---|---:|---:|---|---:|---|---:|---:|")
    for i, cap in enumerate(captures):
        path = os.path.join(work, f"{i}.speed-lib.jsonl")
        if not os.path.exists(path):
            continue
        lib = [json.loads(line) for line in open(path)]
        mine = [json.loads(line) for line in open(os.path.join(work, f"{i}.speed-taroc.jsonl"))]
        for r in lib + mine:
            if r.get("round_trip_failures") or r.get("bench_all_ok") is False:
                failed.append(f"{cap}: a timed pass did not round-trip")
        lr = [r["headers_per_s"] for r in lib]
        tr = [r["headers_per_s"] for r in mine]
        lm, tm = statistics.median(lr), statistics.median(tr)
        paired = statistics.median(t / l for t, l in zip(tr, lr))
        print(f"| {os.path.basename(cap)} | {lib[0]['bench_headers'] // lib[0]['bench_passes']} | {lm:,.0f} | "
              f"{', '.join(f'{x / 1e6:.2f} M' for x in lr)} | {tm:,.0f} | {', '.join(f'{x / 1e6:.2f} M' for x in tr)} "
              f"| {tm / lm:.2f} | {paired:.2f} |")
if failed:
    for f in failed:
        print(f"FAILED: {f}", file=sys.stderr)
    sys.exit(1)
EOF
