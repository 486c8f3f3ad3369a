#!/usr/bin/env bash
# The SIP overload thesis's lab experiment (C. Egger, SIP overload control thesis, TU Wien 2012, chapter 5) on one
# machine, over UDP on 127.0.0.1: `sigkit load` offers MESSAGE transactions (non-INVITE) through a transaction-
# stateful `sigkit proxy` (the thesis's proxy 1, which detects and handles) to a `sigkit load` UAS behind a server of
# limited capacity (its proxy 2, the bottleneck: --capacity TPS new transactions/s, one at a time, a finite queue
# that drops what overflows, retransmissions of known transactions at --repeat-cost of a new one; docs/overload.md,
# "Lab experiment"). Each strategy runs in turn:
#   none     stateful proxy, no handler;
#   d1-h1    D1 (95th percentile of the final response delay over 5 s > 0.5 s) raises T1 to 1 s (H1);
#   d2-h2    while D2 (Wald's test on the pending-transaction anomaly kappa) fires, new requests beyond a cap of
#            pending ones are answered 503 (H2);
#   h2       the same cap all the time, no detector;
#   rfc7339  RFC 7339 loss-based: the UAS's server sends oc (occupancy algorithm, target 0.9), the proxy sheds.
# Two experiments:
#   sweep    goodput (200 OK per second at the UAC) against offered load, each load for SWEEP_S seconds, the first
#            SKIP_S left out (the thesis's Figures 5.5, 5.11, 5.17);
#   surge    BASE of capacity, PEAK from 30 s for SURGE_S, then BASE for TAIL_S (the thesis's 700 -> 900 tps peak,
#            Figures 5.6-5.8): goodput during and after, and the recovery time, from the peak's end until every
#            later second has a 95th-percentile final response delay under 0.5 s and no failed transaction (408 or 503).
# Prints one table per experiment and writes CSV (one row per run, and the surge's per-second rows) and each run's
# JSON reports and proxy metrics to OUT (default target/overload-lab).
#
# Usage: scripts/overload-lab.sh [--capacity TPS] [--out DIR] [--only sweep|surge] [--strategies a,b,...]
#        [--loads 0.6,0.9,...] [--base 0.7] [--peak 1.2] [--surge-s 60] [--tail-s 60] [--sweep-s 25]
#        [--queue 1000] [--repeat-cost 0.2]
# All defaults: about 25 minutes.
# Environment: CARGO_TARGET_DIR is honoured; SIGKIT=path uses that binary instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."

capacity=500
out="${CARGO_TARGET_DIR:-target}/overload-lab"
only=""
strategies="none,d1-h1,d2-h2,h2,rfc7339"
loads="0.6,0.9,1.0,1.2,1.5"
base=0.7
peak=1.2
surge_s=60
tail_s=60
sweep_s=25
skip_s=8
queue=1000
repeat_cost=0.2
while [ $# -gt 0 ]; do
    case "$1" in
        --capacity) capacity=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        --strategies) strategies=$2; shift 2 ;;
        --loads) loads=$2; shift 2 ;;
        --base) base=$2; shift 2 ;;
        --peak) peak=$2; shift 2 ;;
        --surge-s) surge_s=$2; shift 2 ;;
        --tail-s) tail_s=$2; shift 2 ;;
        --sweep-s) sweep_s=$2; shift 2 ;;
        --queue) queue=$2; shift 2 ;;
        --repeat-cost) repeat_cost=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done

if [ -z "${SIGKIT:-}" ]; then
    cargo build --release -q -p sigkit-cli
    SIGKIT="${CARGO_TARGET_DIR:-target}/release/sigkit"
fi
mkdir -p "$out"
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The proxy's [overload] section for a strategy. H2's cap is what the upstream completes in a quarter of a second
# (capacity x 0.25 s): a request admitted under it waits at most that long, well under T1, so it is answered before
# its first retransmission (sigkit-sim's cap is the capacity x T1, thesis §4.3.3; here, with uniform arrivals and a
# constant service time, a cap of a whole T1 leaves the oldest admitted requests waiting about T1 and a share of
# them retransmitted). d2-h2 sheds beyond the cap only while D2 fires; h2 always.
proxy_config() {
    local cap
    cap=$(python3 -c "print(int($capacity * 0.25))")
    echo "stateful = true"
    echo "threads = 1"
    echo "[overload]"
    case "$1" in
        none) echo 'handler = "none"' ;;
        d1-h1) printf 'handler = "t1"\ndetector = "d1"\n' ;;
        d2-h2) printf 'handler = "pending_cap"\ndetector = "d2"\ndelay_detector = true\nmax_pending = 1000000\ndetector_cap = %s\n' "$cap" ;;
        h2) printf 'handler = "pending_cap"\ndelay_detector = false\nmax_pending = %s\n' "$cap" ;;
        rfc7339) echo 'handler = "oc_loss"' ;;
        *) echo "unknown strategy $1" >&2; exit 2 ;;
    esac
}

# run NAME STRATEGY RATE SECONDS [SURGE]: one run; leaves NAME.uac.json, NAME.uas.json, NAME.metrics.
run() {
    local name=$1 strategy=$2 rate=$3 secs=$4 surge=${5:-}
    local uas_port proxy_port metrics_port oc=()
    uas_port=$(free_port)
    proxy_port=$(free_port)
    metrics_port=$(free_port)
    proxy_config "$strategy" > "$work/$name.toml"
    [ "$strategy" = rfc7339 ] && oc=(--oc-target 0.9)
    "$SIGKIT" load --sn message-uas -i 127.0.0.1 -p "$uas_port" --capacity "$capacity" --queue "$queue" \
        --repeat-cost "$repeat_cost" "${oc[@]}" --timeout "$((secs + 45))" --json --quiet --nostdin \
        > "$work/$name.uas.json" 2> "$work/$name.uas.err" &
    local uas=$!
    pids+=("$uas")
    "$SIGKIT" proxy --config "$work/$name.toml" --listen "udp:127.0.0.1:$proxy_port" \
        --upstream "udp:127.0.0.1:$uas_port" --metrics "127.0.0.1:$metrics_port" > "$work/$name.proxy.log" 2>&1 &
    local proxy=$!
    pids+=("$proxy")
    sleep 1
    local pattern=()
    [ -n "$surge" ] && pattern=(--surge "$surge")
    # A UAC run ends at its timeout with calls in progress: they count as
    # failed, so its exit code is not the experiment's.
    "$SIGKIT" load "127.0.0.1:$uas_port" --sn message --rsa "127.0.0.1:$proxy_port" --r "$rate" "${pattern[@]}" \
        --timeout "$secs" --json --quiet --nostdin > "$out/$name.uac.json" 2> "$work/$name.uac.err" || true
    curl -s "http://127.0.0.1:$metrics_port/metrics" > "$out/$name.metrics" || true
    kill "$proxy" "$uas" 2>/dev/null || true
    wait "$proxy" "$uas" 2>/dev/null || true
    cp "$work/$name.uas.json" "$out/$name.uas.json" 2>/dev/null || true
}

IFS=, read -r -a strategy_list <<< "$strategies"
IFS=, read -r -a load_list <<< "$loads"

if [ "$only" != surge ]; then
    for s in "${strategy_list[@]}"; do
        for l in "${load_list[@]}"; do
            rate=$(python3 -c "print(round($capacity * $l))")
            echo "sweep: $s at $rate tps ($l of capacity)" >&2
            run "sweep-$s-$rate" "$s" "$rate" "$sweep_s"
        done
    done
fi
if [ "$only" != sweep ]; then
    for s in "${strategy_list[@]}"; do
        b=$(python3 -c "print(round($capacity * $base))")
        p=$(python3 -c "print(round($capacity * $peak))")
        echo "surge: $s, $b -> $p tps for $surge_s s" >&2
        run "surge-$s" "$s" "$b" "$((30 + surge_s + tail_s))" "$p:30s:${surge_s}s"
    done
fi

python3 - "$out" "$capacity" "$strategies" "$loads" "$sweep_s" "$skip_s" "$surge_s" "$only" <<'EOF'
import csv, json, os, sys

out, capacity, strategies, loads, sweep_s, skip_s, surge_s, only = sys.argv[1:]
capacity, sweep_s, skip_s, surge_s = float(capacity), float(sweep_s), float(skip_s), float(surge_s)
strategies = strategies.split(",")
loads = [float(x) for x in loads.split(",")]

def metric(name, series):
    try:
        for line in open(os.path.join(out, name + ".metrics")):
            if line.startswith(series + " "):
                return float(line.split()[1])
    except OSError:
        pass
    return 0.0

def final_p95(i):
    return i["transactions_ms"].get("MESSAGE", {}).get("final", {}).get("p95", 0.0)

def load(name):
    with open(os.path.join(out, name + ".uac.json")) as f:
        return json.load(f)

def upstream(name):
    return {
        "upstream_retransmissions": int(metric(name, "sigkit_proxy_upstream_retransmissions_total")),
        "rejected_503": int(metric(name, "sigkit_proxy_overload_rejected_total")),
        "timeouts_408": int(metric(name, "sigkit_proxy_transaction_timeouts_total")),
    }

if only != "surge":
    rows = []
    for s in strategies:
        for l in loads:
            rate = round(capacity * l)
            name = f"sweep-{s}-{rate}"
            r = load(name)
            win = [i for i in r["intervals"] if skip_s < i["t_s"] <= sweep_s - 0.5]
            secs = sum(i["span_s"] for i in win) or 1.0
            ok = sum(i["successful"] for i in win)
            failed = sum(i["failed"] for i in win)
            rows.append({
                "strategy": s, "offered_tps": rate, "load": l, "goodput_tps": round(ok / secs, 1),
                "failed_per_s": round(failed / secs, 1),
                "fRpD_p95_ms": round(max((final_p95(i) for i in win), default=0.0), 1),
                **upstream(name),
            })
    with open(os.path.join(out, "sweep.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"Goodput (200 OK/s at the UAC, {skip_s:.0f}-{sweep_s:.0f} s of each run) against offered load; capacity {capacity:.0f} tps")
    print("| offered tps | " + " | ".join(strategies) + " |")
    print("|---:|" + "---:|" * len(strategies))
    for l in loads:
        rate = round(capacity * l)
        cells = [next(r for r in rows if r["strategy"] == s and r["offered_tps"] == rate) for s in strategies]
        print(f"| {rate} ({l:.0%}) | " + " | ".join(f"{c['goodput_tps']:.0f}" for c in cells) + " |")
    print()

if only != "sweep":
    rows, seconds = [], []
    for s in strategies:
        name = f"surge-{s}"
        r = load(name)
        iv = r["intervals"]
        start, end = 30.0, 30.0 + surge_s
        for i in iv:
            seconds.append({"strategy": s, "t_s": round(i["t_s"], 2), "offered_tps": i["offered_cps"],
                            "successful": i["successful"], "failed": i["failed"],
                            "fRpD_p95_ms": final_p95(i), "uac_retransmissions": i["retransmissions"]})
        def good(i):
            return final_p95(i) < 500.0 and i["failed"] == 0
        # Recovered: from the peak's end, the first second after which every
        # second (but the run's last, cut short) is good.
        last = [i for i in iv if i["t_s"] > end][:-1]
        rec = None
        for k in range(len(last)):
            if all(good(i) for i in last[k:]):
                rec = max(0.0, last[k]["t_s"] - 1.0 - end)
                break
        during = [i for i in iv if start < i["t_s"] <= end]
        after = [i for i in iv if end < i["t_s"] <= end + 30.0]
        span = lambda xs: sum(i["span_s"] for i in xs) or 1.0
        rows.append({
            "strategy": s,
            "goodput_during_tps": round(sum(i["successful"] for i in during) / span(during), 1),
            "goodput_30s_after_tps": round(sum(i["successful"] for i in after) / span(after), 1),
            "recovery_s": "never" if rec is None else round(rec, 1),
            "failed": r["summary"]["failed_calls"],
            "fRpD_p95_max_ms": round(max((final_p95(i) for i in iv), default=0.0), 1),
            **upstream(name),
        })
    with open(os.path.join(out, "surge.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(out, "surge-seconds.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(seconds[0]))
        w.writeheader()
        w.writerows(seconds)
    print(f"Surge: {surge_s:.0f} s peak from 30 s; capacity {capacity:.0f} tps")
    print("| strategy | goodput during | goodput 30 s after | recovery | failed | fRpD p95 max | upstream retransmissions | 503 | 408 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        rec = r["recovery_s"] if r["recovery_s"] == "never" else f"{r['recovery_s']} s"
        print(f"| {r['strategy']} | {r['goodput_during_tps']:.0f} | {r['goodput_30s_after_tps']:.0f} | {rec} | {r['failed']} "
              f"| {r['fRpD_p95_max_ms']/1000:.1f} s | {r['upstream_retransmissions']} | {r['rejected_503']} | {r['timeouts_408']} |")
EOF
