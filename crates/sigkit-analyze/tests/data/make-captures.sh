#!/bin/sh
# Makes the real test captures of crates/sigkit-analyze/tests/data: a
# `sigkit load` UAS and UAC as two processes on 127.0.0.1 replaying the
# corpus's 3GPP video call (corpus/3gpp-video-call, 14 messages), captured
# on the loopback interface with tshark (pcapng). Needs root (capture on
# lo). Usage, from the repository root:
#   crates/sigkit-analyze/tests/data/make-captures.sh path/to/sigkit
set -eu
SIGKIT=${1:?path to the sigkit binary}
OUT=crates/sigkit-analyze/tests/data
FLOW=corpus/3gpp-video-call
CALLS=3

# capture NAME PORT TRANSPORT [--sigcomp]
capture() {
    name=$1 port=$2 transport=$3
    shift 3
    tshark -q -i lo -f "port $port" -w "$OUT/$name.pcapng" >/dev/null 2>&1 &
    tshark_pid=$!
    sleep 2
    "$SIGKIT" load -sn uas --flow "$FLOW" -i 127.0.0.1 -p "$port" -t "$transport" -m "$CALLS" \
        --quiet --nostdin --timeout 20s "$@" >/dev/null 2>&1 &
    uas_pid=$!
    sleep 1
    "$SIGKIT" load -sn uac --flow "$FLOW" -i 127.0.0.1 -t "$transport" -r 2 -m "$CALLS" \
        --quiet --nostdin --timeout 20s "$@" "127.0.0.1:$port" >/dev/null 2>&1
    wait "$uas_pid" || true
    sleep 1
    kill "$tshark_pid"
    wait "$tshark_pid" || true
}

capture sip-tcp 5391 t1
capture sip-udp 5392 u1
capture sigcomp-udp 5393 u1 --sigcomp
capture sigcomp-tcp 5394 t1 --sigcomp
ls -l "$OUT"/*.pcapng
