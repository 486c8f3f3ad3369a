#!/usr/bin/env bash
# Calls/s of SIP load generator pairs on this machine, side by side and
# interleaved: SIPp UAC -> SIPp UAS, `sigkit load` UAC -> `sigkit load` UAS,
# and `sigkit load` UAC -> SIPp UAS. Each pair runs the framework thesis's simple call
# (INVITE, 180, 200, ACK, BYE, 200; no hold) over UDP on 127.0.0.1 at each
# offered rate (-r) for SECONDS; a run's result is the UAC's successful
# calls / elapsed time and its failed calls. A pair's maximum is the highest
# rate it sustains: under 1 % failed calls, and at least 95 % of the offered
# rate done (past the first rate it does not sustain, higher ones are not
# tried). Both processes of a pair share
# the machine's cores.
#
# Usage: scripts/bench-load.sh [ROUNDS] [SECONDS] [RATES]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
seconds=${2:-5}
rates=${3:-1000,2000,4000,8000,16000,32000,64000}
cargo build --release -q -p sigkit-cli
sk=target/release/sigkit
work=$(mktemp -d)
trap 'rm -rf "$work"; pkill -f "sipp -sn uas -i 127.0.0.1 -p 1590" || true' EXIT

sipp_result() { # "rate failed" from the UAC's final screen: successful calls / (current - start time)
    awk -F'|' '/Start Time/ {n=split($2, a, " "); st=a[n]} /Current Time/ {n=split($2, a, " "); ct=a[n]}
        /Successful call/ {s=$3} /Failed call/ {f=$3} END {
        gsub(/ /, "", s); gsub(/ /, "", f); secs = ct - st;
        printf "%.0f %d", (secs > 0 ? s / secs : 0), f }' "$1"
}

sigkit_result() { # "rate failed" from the UAC's JSON summary
    python3 -c 'import json,sys; s=json.load(sys.stdin)["summary"]; print("%.0f %d" % (s["calls_per_s"], s["failed_calls"]))'
}

run_pair() {
    local pair=$1 port=$2 rate=$3 calls=$(($3 * seconds))
    case $pair in
    sipp-sipp)
        sipp -sn uas -i 127.0.0.1 -p "$port" -bg -nostdin >/dev/null 2>&1 || true; sleep 0.5
        timeout 120 sipp -sn uac -i 127.0.0.1 -p $((port + 1)) "127.0.0.1:$port" -r "$rate" -m "$calls" \
            -nostdin >"$work/uac.txt" 2>&1 || true
        pkill -f "sipp -sn uas -i 127.0.0.1 -p $port" || true
        sipp_result "$work/uac.txt" ;;
    sigkit-sigkit)
        $sk load -sn uas -i 127.0.0.1 -p "$port" -m "$calls" -timeout 120 >/dev/null 2>&1 & local uas=$!; sleep 0.3
        $sk load -sn uac -r "$rate" -m "$calls" -timeout 120 --json "127.0.0.1:$port" 2>/dev/null | sigkit_result
        kill $uas 2>/dev/null || true; wait $uas 2>/dev/null || true ;;
    sigkit-sipp)
        sipp -sn uas -i 127.0.0.1 -p "$port" -bg -nostdin >/dev/null 2>&1 || true; sleep 0.5
        $sk load -sn uac -r "$rate" -m "$calls" -timeout 120 --json "127.0.0.1:$port" 2>/dev/null | sigkit_result
        pkill -f "sipp -sn uas -i 127.0.0.1 -p $port" || true ;;
    esac
}

declare -A best over
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores"
for r in $(seq 1 "$rounds"); do
    for rate in ${rates//,/ }; do
        for pair in sipp-sipp sigkit-sigkit sigkit-sipp; do
            # Past a pair's first failing rate, higher ones are not tried.
            [ -n "${over[$pair,$r]:-}" ] && continue
            port=$((15900 + 10 * r))
            read -r got failed < <(run_pair "$pair" "$port" "$rate") || true
            got=${got:-0}; failed=${failed:-0}
            echo "round $r offered $rate: $pair $got calls/s, $failed failed"
            # Sustained: under 1 % failed, and the calls done at 95 % of the
            # offered rate or better (not caught up by retransmissions).
            if [ "$failed" -le $((rate * seconds / 100)) ] && [ "$got" -ge $((rate * 95 / 100)) ]; then
                [ "$got" -gt "${best[$pair,$r]:-0}" ] && best[$pair,$r]=$got
            else
                over[$pair,$r]=1
            fi
            sleep 0.5
        done
    done
done
echo "highest sustained calls/s, median over $rounds rounds:"
for pair in sipp-sipp sigkit-sigkit sigkit-sipp; do
    vals=""; for r in $(seq 1 "$rounds"); do vals="$vals ${best[$pair,$r]:-0}"; done
    m=$(echo $vals | tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo "  $pair: $m"
done
