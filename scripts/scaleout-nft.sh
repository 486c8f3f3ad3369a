#!/usr/bin/env bash
# Scale-out of `sigkit proxy` behind a real Linux balancer: two proxies, each
# in its own network namespace, behind nftables source-hash DNAT; Kamailio and
# a UAS behind them. SigComp terminals (each its own source address) register
# and place calls through the balancer's service address. Half-way through the
# load one proxy is stopped, and the balancer's health check does what
# keepalived or a script would: it rewrites the nftables rule without the
# dead backend and deletes its conntrack entries. The stopped proxy's terminals then
# reach the other one, which holds none of their state: it NACKs their first
# messages (STATE_NOT_FOUND, RFC 4077), they send them again with their
# bytecode, and their calls go on. It fails (exit 1) if a call is lost or no
# terminal recovered through a NACK; exit 2 for a set-up error (not root,
# nft, conntrack or kamailio missing).
#
# Topology (root namespace unless named):
#   terminals 10.77.0.11-18 (on lo) --> service 10.77.0.100:5060
#      nftables (table ip sigkit_lb, output hook): dnat to jhash ip saddr mod 2
#      map { 0: 10.77.1.2, 1: 10.77.2.2 }
#   netns sk-a: sigkit proxy 10.77.1.2:5060 (veth skA0 10.77.1.1)
#   netns sk-b: sigkit proxy 10.77.2.2:5060 (veth skB0 10.77.2.1)
#   Kamailio 10.77.0.1:KPORT, UAS (sigkit load --sn uas) 10.77.0.1:UASPORT
#
# Output in OUT (default ./scaleout-out): each terminal's report, the proxies'
# metrics before the stop (A) and at the end (B), summary.json.
#
# Usage: scripts/scaleout-nft.sh [--terminals N] [--rate CPS_PER_TERMINAL]
#                                [--seconds S] [--out DIR] [--sigkit PATH]
set -euo pipefail

terminals=8
rate=10
seconds=16
out="scaleout-out"
sigkit=""
while [ $# -gt 0 ]; do
    case "$1" in
        --terminals) terminals=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        --seconds) seconds=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --sigkit) sigkit=$2; shift 2 ;;
        *) echo "scaleout-nft.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "scaleout-nft.sh: needs root (network namespaces, nftables)" >&2; exit 2; }
for tool in ip nft conntrack kamailio python3; do
    command -v "$tool" >/dev/null || { echo "scaleout-nft.sh: $tool is not installed" >&2; exit 2; }
done
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "$sigkit" ]; then
    (cd "$root" && cargo build --release -q -p sigkit-cli)
    sigkit="$root/target/release/sigkit"
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)

vip=10.77.0.100
kport=5080
uas_port=5090
pids=()
addrs=()
teardown() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    nft delete table ip sigkit_lb 2>/dev/null || true
    # A conntrack entry keeps its DNAT: a later run's terminals, on the same
    # addresses and ports, would go where the last one's went.
    conntrack -D -d "$vip" >/dev/null 2>&1 || true
    ip netns del sk-a 2>/dev/null || true
    ip netns del sk-b 2>/dev/null || true
    for a in "${addrs[@]}"; do ip addr del "$a/32" dev lo 2>/dev/null || true; done
}
trap teardown EXIT
teardown

# Links and addresses. The terminals', the service's and Kamailio's
# addresses sit on lo (a VM's kernel may lack the dummy link type).
addrs=(10.77.0.1 "$vip")
for i in $(seq 1 "$terminals"); do addrs+=("10.77.0.$((10 + i))"); done
for a in "${addrs[@]}"; do ip addr add "$a/32" dev lo; done
for n in a b; do
    net=$([ "$n" = a ] && echo 1 || echo 2)
    up=$(echo "$n" | tr a-b A-B)
    ip netns add "sk-$n"
    ip link add "sk${up}0" type veth peer name eth0 netns "sk-$n"
    ip addr add "10.77.$net.1/24" dev "sk${up}0"
    ip link set "sk${up}0" up
    ip -n "sk-$n" addr add "10.77.$net.2/24" dev eth0
    ip -n "sk-$n" link set eth0 up
    ip -n "sk-$n" link set lo up
    ip -n "sk-$n" route add default via "10.77.$net.1"
done
sysctl -qw net.ipv4.ip_forward=1

# The balancer: source hashing (the terminals here are local processes, so
# the output hook; a balancer host uses prerouting), with a fixed seed so
# that every run splits the terminals alike.
nft -f - <<EOF
table ip sigkit_lb {
    chain out {
        type nat hook output priority -100; policy accept;
        ip daddr $vip udp dport 5060 dnat to jhash ip saddr mod 2 seed 0x5349 map { 0 : 10.77.1.2, 1 : 10.77.2.2 }
    }
}
EOF

# Kamailio and the UAS on 10.77.0.1.
sed -e "s/LISTEN_PORT/$kport/g" -e "s/CHILDREN/1/g" -e "s/127\.0\.0\.1/10.77.0.1/g" -e '/xlog("L_INFO"/d' \
    "$root/crates/sigkit-proxy/tests/kamailio/kamailio.cfg" > "$out/kamailio.cfg"
kamailio -f "$out/kamailio.cfg" -DD -E -w "$out" -P "$out/kamailio.pid" > "$out/kamailio.log" 2>&1 &
pids+=($!)
"$sigkit" load --sn uas --i 10.77.0.1 --p "$uas_port" --nostdin --quiet > "$out/uas.log" 2>&1 &
pids+=($!)

# The farm: the same sigcomp-id (the default) and the service address in
# Record-Route on both.
for n in a b; do
    net=$([ "$n" = a ] && echo 1 || echo 2)
    cat > "$out/proxy-$n.toml" <<EOF
listen = ["udp:10.77.$net.2:5060"]
upstream = "udp:10.77.0.1:$kport"
upstream_local = "10.77.$net.2:5070"
route_terminal = "$vip:5060"
metrics = "10.77.$net.2:9090"
EOF
    ip netns exec "sk-$n" "$sigkit" proxy --config "$out/proxy-$n.toml" > "$out/proxy-$n.log" 2>&1 &
    pids+=($!)
    eval "proxy_$n=$!"
done
metrics() { ip netns exec "sk-$1" python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://10.77.$2.2:9090/metrics', timeout=5).read().decode())"; }
for _ in $(seq 100); do
    if metrics a 1 >/dev/null 2>&1 && metrics b 2 >/dev/null 2>&1; then break; fi
    sleep 0.1
done
metrics a 1 >/dev/null && metrics b 2 >/dev/null || { echo "scaleout-nft.sh: a proxy did not start" >&2; exit 2; }

# Each terminal: its own address and port; it registers, then calls.
calls=$((rate * seconds))
for i in $(seq 1 "$terminals"); do
    (
        ip=10.77.0.$((10 + i))
        run() { "$sigkit" load --sigcomp --i "$ip" --p 5062 --rsa "$vip:5060" --nostdin --quiet --json "$@"; }
        run --sn register --s "user$i" --au "user$i" --ap secret --m 1 "10.77.0.1:$kport" > "$out/register-$i.json" || true
        run --sn uac --r "$rate" --m "$calls" "10.77.0.1:$uas_port" > "$out/calls-$i.json" || true
    ) &
    pids+=($!)
    loaders+=($!)
done

# Half-way: proxy A stops; the health check takes it out of the map and
# deletes its conntrack entries (an entry keeps its DNAT until it times out).
sleep $((seconds / 2 + 1))
metrics a 1 > "$out/metrics-a.txt"
kill "$proxy_a"
# The rule is replaced in one transaction: every source to the live backend.
nft -f - <<EOF
flush chain ip sigkit_lb out
add rule ip sigkit_lb out ip daddr $vip udp dport 5060 dnat to 10.77.2.2
EOF
conntrack -D -d "$vip" --reply-src 10.77.1.2 >/dev/null 2>&1 || true
echo "scaleout-nft.sh: proxy A stopped at $((seconds / 2 + 1)) s; the balancer now: $(nft list chain ip sigkit_lb out | grep dnat | tr -s ' ')" >&2
for p in "${loaders[@]}"; do wait "$p" || true; done
metrics b 2 > "$out/metrics-b.txt"

python3 - "$out" "$terminals" "$calls" <<'EOF'
import json, sys
out, terminals, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def series(path, name):
    total = 0.0
    for line in open(path):
        if line.startswith(name):
            total += float(line.split()[-1])
    return total
rows, nacked_terminals = [], 0
for i in range(1, terminals + 1):
    reg = json.load(open(f"{out}/register-{i}.json"))["summary"]
    s = json.load(open(f"{out}/calls-{i}.json"))["summary"]
    c = s.get("sigcomp") or {}
    rows.append({"terminal": i, "registered": reg["successful_calls"] == 1, "attempted": s["attempted_calls"],
                 "successful": s["successful_calls"], "failed": s["failed_calls"], "failures": s["failures"],
                 "retransmissions": s["retransmissions"], "nacks_received": c.get("nacks_received", 0),
                 "resent": c.get("resent", 0)})
    nacked_terminals += c.get("nacks_received", 0) > 0
a_terminals = series(f"{out}/metrics-a.txt", "sigkit_proxy_registered_terminals")
summary = {
    "terminals": terminals,
    "calls_offered": terminals * calls,
    "calls_successful": sum(r["successful"] for r in rows),
    "calls_failed": sum(r["failed"] for r in rows),
    "terminals_on_a_before_the_stop": a_terminals,
    "terminals_nacked_by_b": nacked_terminals,
    "b_nacks_state_not_found": series(f"{out}/metrics-b.txt", 'sigkit_proxy_nacks_sent_total{reason="STATE_NOT_FOUND"}'),
    "per_terminal": rows,
}
json.dump(summary, open(f"{out}/summary.json", "w"), indent=1)
print(json.dumps({k: v for k, v in summary.items() if k != "per_terminal"}, indent=1))
ok = (all(r["registered"] for r in rows) and summary["calls_successful"] == terminals * calls
      and summary["calls_failed"] == 0 and a_terminals > 0 and nacked_terminals > 0
      and summary["b_nacks_state_not_found"] > 0)
if not ok:
    for r in rows:
        print(r, file=sys.stderr)
    sys.exit(1)
EOF
