#!/usr/bin/env bash
# Soak of `sigkit proxy` in front of Kamailio: SigComp calls at 80 % of the
# measured capacity for an hour (by default), the proxy's RSS sampled all
# along. It fails (exit 1) if a call is lost or the RSS grows faster than
# the bound; exit 2 for a set-up error (a peer missing, a process that
# did not start).
#
#   terminal: sigkit load --sigcomp (built-in UAC, one UDP socket, registered
#             first with Kamailio's digest through the proxy, so that the
#             proxy keeps its state, RFC 5049 §6)
#      → sigkit proxy (defaults but the per-source budgets, which one generator
#        socket standing for many terminals would exceed; OUT/proxy.toml)
#      → Kamailio (record-routing proxy and registrar, one UDP worker: with
#        several, a 180 can reach the UAC after the 200 OK)
#      → sigkit load --sn uas (plain SIP)
#
# Capacity: steps of 10 s through the same chain, 100 calls/s apart; the
# highest step whose calls all succeeded at the rate offered, none sent
# again, is the capacity, and the soak offers 80 % of it. `--rate R` skips the
# measurement.
#
# Output in OUT (default ./soak-out, relative to where it runs):
#   rss.csv        seconds since the soak began, proxy VmRSS in KiB (every 5 s)
#   capacity.csv   the capacity steps: rate, calls attempted, successful,
#                  failed, retransmissions, seconds
#   soak.json      the soak run's report (sigkit load --json)
#   summary.json   rate, calls attempted / successful / failed by cause,
#                  RSS at start and end and its slope (KiB per hour, least
#                  squares over the second half, after the warm-up), the
#                  proxy's CPU per SIP message it handled
#
# Usage: scripts/soak.sh [--duration SECONDS] [--rate CALLS_PER_S] [--out DIR]
#                        [--sigkit PATH] [--max-slope-kib-per-h N]
set -euo pipefail

duration=3600
rate=""
out="soak-out"
sigkit=""
max_slope=2048
while [ $# -gt 0 ]; do
    case "$1" in
        --duration) duration=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --sigkit) sigkit=$2; shift 2 ;;
        --max-slope-kib-per-h) max_slope=$2; shift 2 ;;
        *) echo "soak.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
for tool in kamailio python3; do
    command -v "$tool" >/dev/null || { echo "soak.sh: $tool is not installed" >&2; exit 2; }
done
if [ -z "$sigkit" ]; then
    (cd "$root" && cargo build --release -q -p sigkit-cli)
    sigkit="$root/target/release/sigkit"
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
kport=$(free_port); uas_port=$(free_port); proxy_port=$(free_port); metrics_port=$(free_port); uac_port=$(free_port)

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

sed -e "s/LISTEN_PORT/$kport/g" -e "s/CHILDREN/1/g" -e '/xlog("L_INFO"/d' \
    "$root/crates/sigkit-proxy/tests/kamailio/kamailio.cfg" > "$out/kamailio.cfg"
kamailio -f "$out/kamailio.cfg" -m 256 -DD -E -w "$out" -P "$out/kamailio.pid" > "$out/kamailio.log" 2>&1 &
pids+=($!)
"$sigkit" load --sn uas --p "$uas_port" --nostdin --quiet > "$out/uas.log" 2>&1 &
pids+=($!)
# The proxy's defaults but for the per-source budgets: the generator is one
# UDP socket standing for many terminals, and a source's default budget (200
# SigComp messages a second) is one terminal's. The overall and unknown-source
# budgets stay as they are.
cat > "$out/proxy.toml" <<EOF
listen = ["udp:127.0.0.1:$proxy_port"]
upstream = "udp:127.0.0.1:$kport"
upstream_local = "127.0.0.1:0"
metrics = "127.0.0.1:$metrics_port"
[defence]
cycles_per_source_per_s = 1000000000000
cycles_burst = 1000000000000
messages_per_source_per_s = 1000000000
messages_burst = 1000000000
EOF
"$sigkit" proxy --config "$out/proxy.toml" > "$out/proxy.log" 2>&1 &
proxy_pid=$!
pids+=($proxy_pid)
for _ in $(seq 100); do
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$kport),1); socket.create_connection(('127.0.0.1',$metrics_port),1)" 2>/dev/null; then
        break
    fi
    sleep 0.1
done
kill -0 "$proxy_pid" 2>/dev/null || { echo "soak.sh: sigkit proxy did not start:" >&2; cat "$out/proxy.log" >&2; exit 2; }

uac() { "$sigkit" load --sigcomp --p "$uac_port" --rsa "127.0.0.1:$proxy_port" --nostdin --quiet --json "$@"; }
# The terminal registers (digest, "secret") through the proxy, for longer
# than the capacity steps and the soak last together: the generator does
# not refresh its registration (RFC 3261 §10.2.4) while it makes calls, and
# when it runs out the proxy closes the terminal's compartments and treats
# it as an unknown source (RFC 5049 §6), which is not what a soak measures.
expires=$((duration + 3600))
sed "s/^\( *Expires:\) 3600/\1 $expires/" "$root/crates/sigkit-loadgen/scenarios/register.xml" > "$out/register.xml"
grep -q "Expires: $expires" "$out/register.xml" || { echo "soak.sh: could not set the registration's Expires" >&2; exit 2; }
uac --sf "$out/register.xml" --s alice --au alice --ap secret --m 1 "127.0.0.1:$kport" > "$out/register.json"
python3 - "$out/register.json" <<'EOF' || { echo "soak.sh: the terminal did not register" >&2; exit 2; }
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
sys.exit(0 if s["successful_calls"] == 1 else 1)
EOF

if [ -z "$rate" ]; then
    # Steps of 10 s, 100 calls/s apart, each starting once the last one's
    # calls are over; the first step that loses a call, falls behind the
    # rate it was offered or sends more than 0.5 % of its calls' requests
    # again (responses later than T1: a queue building up), ends the search. (One stepped run would go on
    # offering past the capacity, and Kamailio runs out of shared memory
    # holding the transactions.)
    echo "rate,attempted,successful,failed,retransmissions,elapsed_s" > "$out/capacity.csv"
    best=0
    for step in $(seq 100 100 5000); do
        uac --sn uac --r "$step" --m $((step * 10)) "127.0.0.1:$uas_port" > "$out/capacity-step.json" || true
        verdict=$(python3 - "$out/capacity-step.json" "$step" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
step = int(sys.argv[2])
good = (s["successful_calls"] == 10 * step and s["failed_calls"] == 0 and s["elapsed_s"] <= 10.5
        and s["retransmissions"] <= 10 * step // 200)
print(f'{step},{s["attempted_calls"]},{s["successful_calls"]},{s["failed_calls"]},{s["retransmissions"]},{s["elapsed_s"]:.2f} {"good" if good else "bad"}')
EOF
)
        echo "${verdict% *}" >> "$out/capacity.csv"
        [ "${verdict##* }" = good ] || break
        best=$step
    done
    [ "$best" -gt 0 ] || { echo "soak.sh: no step of 100 calls/s went through" >&2; exit 1; }
    rate=$((best * 8 / 10))
    echo "soak.sh: capacity $best calls/s; soaking at $rate calls/s (80 %)" >&2
fi

calls=$((rate * duration))
start=$(date +%s.%N)
( while kill -0 "$proxy_pid" 2>/dev/null; do
      now=$(date +%s.%N)
      rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$proxy_pid/status" 2>/dev/null || true)
      [ -n "$rss" ] && echo "$(python3 -c "print(round($now - $start, 1))"),$rss"
      sleep 5
  done ) > "$out/rss.csv" &
sampler=$!
pids+=($sampler)
ticks_before=$(awk '{print $14 + $15}' "/proc/$proxy_pid/stat")
uac --sn uac --r "$rate" --m "$calls" --sut-pid "$proxy_pid" --fd 10 "127.0.0.1:$uas_port" > "$out/soak.json" || true
ticks_after=$(awk '{print $14 + $15}' "/proc/$proxy_pid/stat")
kill "$sampler" 2>/dev/null || true
curl -s "http://127.0.0.1:$metrics_port/metrics" > "$out/metrics.txt" 2>/dev/null \
    || python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:$metrics_port/metrics').read().decode())" > "$out/metrics.txt"

python3 - "$out" "$rate" "$duration" "$((ticks_after - ticks_before))" "$max_slope" <<'EOF'
import json, sys
out, rate, duration, ticks, max_slope = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
s = json.load(open(f"{out}/soak.json"))["summary"]
rows = [tuple(map(float, l.split(","))) for l in open(f"{out}/rss.csv") if l.strip()]
half = [r for r in rows if r[0] >= rows[-1][0] / 2] if rows else []
slope = 0.0
if len(half) >= 2:
    n = len(half)
    mx = sum(t for t, _ in half) / n
    my = sum(v for _, v in half) / n
    var = sum((t - mx) ** 2 for t, _ in half)
    slope = sum((t - mx) * (v - my) for t, v in half) / var * 3600 if var else 0.0
messages = 0.0
for line in open(f"{out}/metrics.txt"):
    if line.startswith('sigkit_proxy_messages_received_total{'):
        messages += float(line.split()[-1])
summary = {
    "rate_cps": rate,
    "duration_s": duration,
    "attempted_calls": s["attempted_calls"],
    "successful_calls": s["successful_calls"],
    "failed_calls": s["failed_calls"],
    "failures_by_cause": s["failures"],
    "retransmissions": s["retransmissions"],
    "elapsed_s": s["elapsed_s"],
    "rss_kib_start": rows[0][1] if rows else None,
    "rss_kib_end": rows[-1][1] if rows else None,
    "rss_slope_kib_per_h": round(slope, 1),
    "max_slope_kib_per_h": max_slope,
    "proxy_cpu_s": ticks / 100,
    "proxy_cpu_us_per_message": round(ticks / 100 / messages * 1e6, 2) if messages else None,
    "proxy_messages": messages,
}
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
print(json.dumps(summary, indent=1))
lost = s["failed_calls"] + (s["attempted_calls"] - s["successful_calls"] - s["failed_calls"])
if lost or s["attempted_calls"] < rate * duration:
    print(f"soak.sh: {lost} calls lost", file=sys.stderr)
    sys.exit(1)
# The slope is judged over a second half of 10 minutes or more; a shorter
# run's is mostly its warm-up, and is only reported.
judged = len(half) >= 2 and half[-1][0] - half[0][0] >= 600
summary["rss_slope_judged"] = judged
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
if judged and slope > max_slope:
    print(f"soak.sh: RSS grows {slope:.0f} KiB/h (bound {max_slope:.0f})", file=sys.stderr)
    sys.exit(1)
EOF
