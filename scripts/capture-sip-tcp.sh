#!/usr/bin/env bash
# Real SIP over TCP between SIPp and Kamailio on loopback, captured with
# dumpcap: the test captures of crates/taroc/tests/data (sip-kamailio-*.pcapng)
# and the capture of tests/rohc_sipp_kamailio.rs.
#
#   SIPp built-in UAC (-sn uac, -rsa to Kamailio)
#     → Kamailio 5.x, stateful record-routing proxy, TCP listener only
#     → SIPp built-in UAS (-sn uas)
#
# Kamailio relays each request to its Request-URI (the UAS) over TCP: SIPp's
# built-in scenarios name their peer without a transport parameter, so the
# configuration sets the destination URI to the same host and port with
# ;transport=tcp (the Request-URI itself is left as SIPp wrote it).
#
# The run is in a network namespace of its own (unshare -n; unshare -rn when
# not root), so the ports are free and nothing else is on its loopback. The
# namespace's loopback keeps the kernel's defaults, as a host's loopback has
# them: MTU 65536, GSO on (SIP messages are far below any segment size, so
# every segment is captured as TCP sent it), and the per-namespace TCP
# sysctls at their defaults (timestamps, window scaling and SACK on, delayed
# ACKs). Nothing is tuned. NO_NETNS=1 runs on the host's loopback instead
# (the ports must be free there).
#
# Usage: scripts/capture-sip-tcp.sh OUT_DIR [long|short|ipv6 ...]
#   long   OUT_DIR/sip-kamailio-long.pcapng: one TCP connection per leg
#          (SIPp -t t1 on both sides), CALLS calls (default 20).
#   short  OUT_DIR/sip-kamailio-short.pcapng: SIPp's UAC opens a TCP
#          connection per call (-t tn) and closes it after the call's BYE
#          (the UAS is -t tn too, but Kamailio keeps the one connection it
#          opened to it, as it reuses a connection to the same address).
#          CALLS calls (default 20).
#   ipv6   OUT_DIR/sip-kamailio-ipv6.pcapng: "long" over ::1.
# With no case named, all three are made.
#
# Environment: CALLS (calls per case), RATE (calls/s, default 5),
# NO_NETNS=1. The logs of each run (kamailio.log, sipp-*.log, the
# configuration) are kept in OUT_DIR/CASE-logs. Exit 0 when every call of
# every case succeeded, 1 when one failed, 2 for a set-up error (a program
# missing, a peer that did not start).
set -euo pipefail

# usage STATUS: the usage (this header from "Usage:") and exit STATUS.
usage() {
    sed -n '/^# Usage:/,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit "$1"
}

[ $# -ge 1 ] || usage 2
case "$1" in -h | --help) usage 0 ;; esac
for c in "${@:2}"; do
    case "$c" in long | short | ipv6) ;; *) usage 2 ;; esac
done

for tool in kamailio sipp dumpcap ip ss; do
    if ! command -v "$tool" >/dev/null && [ ! -x "/usr/sbin/$tool" ]; then
        echo "capture-sip-tcp: $tool is not installed" >&2
        exit 2
    fi
done
export PATH="$PATH:/usr/sbin:/sbin"

# Into a network namespace of our own, once.
if [ -z "${NO_NETNS:-}" ] && [ -z "${CAPTURE_SIP_TCP_NS:-}" ]; then
    ns_flags=-n
    [ "$(id -u)" = 0 ] || ns_flags=-rn
    export CAPTURE_SIP_TCP_NS=1
    exec unshare "$ns_flags" "$0" "$@"
fi
if [ -n "${CAPTURE_SIP_TCP_NS:-}" ]; then
    ip link set lo up
fi

out=$1
shift
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(long short ipv6)
rate=${RATE:-5}

# Kamailio's configuration: sigkit's own (crates/sigkit-eval/src/kamailio.cfg,
# the one `sigkit eval` runs), its listener on TCP at ADDR:PORT (ADDR
# 127.0.0.1 or [::1]).
kamailio_cfg() {
    sed -e "s/^listen=udp:127\.0\.0\.1:LISTEN_PORT\$/listen=tcp:$1:$2/" \
        -e "s/^alias=\"127\.0\.0\.1:LISTEN_PORT\"\$/alias=\"$1:$2\"/" \
        "$repo/crates/sigkit-eval/src/kamailio.cfg"
}

# wait_listen PORT: until something listens on TCP PORT (10 s).
wait_listen() {
    for _ in $(seq 100); do
        if [ -n "$(ss -Htln "sport = :$1")" ]; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
}
trap cleanup EXIT

failed=0

# run CASE FILE IP BRACKETED TRANSPORT CALLS
run() {
    local name=$1 file=$2 ip=$3 host=$4 transport=$5 calls=$6
    local logs="$out/$name-logs"
    local kport=5060 uport=5070 cport=5061
    rm -rf "$logs"
    mkdir -p "$logs"
    kamailio_cfg "$host" "$kport" >"$logs/kamailio.cfg"
    rm -f "$out/$file"
    dumpcap -q -i lo -f "tcp port $kport or tcp port $uport" -w "$out/$file" >"$logs/dumpcap.log" 2>&1 &
    local cap=$!
    pids=("$cap")
    # dumpcap says nothing when it is ready: wait for its file.
    for _ in $(seq 50); do
        [ -s "$out/$file" ] && break
        sleep 0.1
    done
    sleep 0.5
    kamailio -f "$logs/kamailio.cfg" -DD -E -w "$logs" -P "$logs/kamailio.pid" >"$logs/kamailio.log" 2>&1 &
    local kam=$!
    pids+=("$kam")
    (cd "$logs" && exec sipp -sn uas -t "$transport" -i "$ip" -p "$uport" -m "$calls" -max_socket 1000 -nostdin -trace_err \
        >"$logs/sipp-uas.log" 2>&1) &
    local uas=$!
    pids+=("$uas")
    if ! wait_listen "$kport" || ! wait_listen "$uport"; then
        echo "capture-sip-tcp: $name: Kamailio or SIPp's UAS did not start; logs in $logs" >&2
        exit 2
    fi
    local status=0
    (cd "$logs" && exec sipp -sn uac -t "$transport" -i "$ip" -p "$cport" -r "$rate" -m "$calls" -d 0 \
        -rsa "$host:$kport" -max_socket 1000 -nostdin -trace_err -timeout 60s "$host:$uport" >"$logs/sipp-uac.log" 2>&1) ||
        status=$?
    # Every call has ended when the UAC exits; the last delayed ACKs (40 ms
    # on Linux) follow. The UAS would linger 4 s more (its scenario's final
    # pause, for a BYE sent again) before its -m ended it: it is stopped
    # instead, which closes its connection with Kamailio.
    sleep 0.5
    kill "$kam" "$uas" 2>/dev/null || true
    wait "$kam" "$uas" 2>/dev/null || true
    sleep 0.5
    kill "$cap"
    wait "$cap" 2>/dev/null || true
    pids=()
    local ok
    ok=$(awk -F'|' '/Successful call/ {n = $3} END {gsub(/ /, "", n); print n + 0}' "$logs/sipp-uac.log")
    echo "$name: $out/$file, $ok of $calls calls successful (SIPp's UAC exit $status)"
    if [ "$status" != 0 ] || [ "$ok" != "$calls" ]; then
        echo "capture-sip-tcp: $name: calls failed; logs in $logs" >&2
        failed=1
    fi
}

for c in "${cases[@]}"; do
    case "$c" in
    long) run long sip-kamailio-long.pcapng 127.0.0.1 127.0.0.1 t1 "${CALLS:-20}" ;;
    short) run short sip-kamailio-short.pcapng 127.0.0.1 127.0.0.1 tn "${CALLS:-20}" ;;
    ipv6) run ipv6 sip-kamailio-ipv6.pcapng ::1 "[::1]" t1 "${CALLS:-20}" ;;
    esac
done
exit "$failed"
