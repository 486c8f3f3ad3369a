#!/usr/bin/env bash
# Throughput, added latency and memory of `sigkit proxy` (the SigComp edge proxy), all on 127.0.0.1, printed as
# one table. It builds `sigkit` and the load generator (crates/sigkit-loadgen/examples/proxy_load/), then runs it:
#   1. 1000 terminals (UDP sockets, each its own SigComp endpoint: dynamic mechanism, LZSS) register through a
#      `sigkit proxy` process to a responder thread of the generator, then send OPTIONS (~700 B) open loop at
#      stepped offered rates until 1 % or more go unanswered; at 50 % and 90 % of the highest good rate a probe
#      terminal on its own thread measures round trips, and again straight to the responder in plain SIP (the
#      difference is the proxy's added latency); the 90 % rate again from 48 terminals (all compartments among
#      the endpoint's hot ones);
#   2. the same with Kamailio (tests/kamailio/kamailio.cfg, 2 UDP workers) as the upstream (digest REGISTER, then
#      OPTIONS that Kamailio answers 404), and the same terminals in plain SIP straight to Kamailio (reference);
#   2b. (replay) the terminals' SigComp datagrams recorded in a live run through one proxy, then sent again from
#      the same sockets to a fresh proxy while only the answers are counted: the proxy's own limit with a
#      generator that costs little (a fresh proxy's compartments go through the same messages, so every recorded
#      message decompresses as it did; NACKs are reported);
#   3. 100,000 idle terminals register (each its own sigcomp-id, so its own compartment): the proxy's RSS growth
#      divided by them.
# Every row names the CPU of the proxy, the generator (with its probe), the upstream, and the rest of the machine
# (other users of the two cores), in percent of one core. A few minutes at most.
#
# Usage: scripts/bench-proxy.sh [--terminals N] [--rates R1,R2,...] [--step-ms MS] [--idle N] [--no-kamailio]
#                               [--only proxy|replay|kamailio|memory] [--proxy-threads N] [--proxy-shards N] [--pin]
#                               [--record-rate R] [--replay-rates R1,R2,...] [--proxy-level L]
# --pin puts the proxy on the last CPU and the generator on the others (taskset), so that neither waits for the
# other's CPU; each row also gives the proxy's own handling time (its sigkit_proxy_handling_seconds histogram)
# and the run-queue wait per time slice of the proxy's and the generator's threads (schedstat).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v kamailio >/dev/null || { echo "kamailio not installed: pass --no-kamailio" >&2; }
cargo build --release -q -p sigkit-cli
cargo build --release -q -p sigkit-loadgen --example proxy_load
exec timeout 600 target/release/examples/proxy_load --sigkit target/release/sigkit \
  --rates 1000,2000,3000,4000,5000,6000,7000,8000,10000,12000,15000,20000,25000,30000,40000,50000 "$@"
