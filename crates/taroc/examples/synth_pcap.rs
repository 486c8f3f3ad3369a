//! Writes a synthesised flow as a pcap (raw IP) for `sigkit rohc`:
//! `cargo run --release -p taroc --example synth_pcap -- KIND OUT.pcap [SEGMENTS|DIALOGS] [SEED]`.
//! KIND bulk: a transfer of full 1460-byte segments with timestamps and
//! SACK, a segment lost upstream every 61 (retransmissions, duplicate
//! ACKs); bulk-nots: the same without timestamps; sip: SIP dialogs over one
//! TCP connection; sip-nots: the same without timestamps; bulk6, bulk6-nots, sip6: the same over IPv6 (1440-byte
//! segments, the IPv6 MSS on a 1500-octet MTU). Packets are 1 ms apart.

use std::time::Duration;

use taroc::capture::write_pcap;
use taroc::synth::{bulk_transfer, sip_over_tcp, FlowOptions};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(kind), Some(out)) = (args.get(1), args.get(2)) else {
        eprintln!(
            "usage: synth_pcap bulk|bulk-nots|sip|sip-nots|bulk6|bulk6-nots|sip6 OUT.pcap [SEGMENTS|DIALOGS] [SEED]"
        );
        std::process::exit(2);
    };
    let n: Option<usize> = args.get(3).and_then(|s| s.parse().ok());
    let seed: u64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(1);
    let (base, ipv6) = match kind.as_str() {
        "bulk6" => ("bulk", true),
        "bulk6-nots" => ("bulk-nots", true),
        "sip6" => ("sip", true),
        k => (k, false),
    };
    let opts = FlowOptions { seed, ipv6, ..FlowOptions::default() };
    let mss = if ipv6 { 1440 } else { 1460 };
    let flow = match base {
        "bulk" => bulk_transfer(n.unwrap_or(5000), mss, 61, opts),
        "bulk-nots" => bulk_transfer(n.unwrap_or(5000), mss, 61, FlowOptions { timestamps: false, ..opts }),
        "sip" => sip_over_tcp(n.unwrap_or(200), opts),
        "sip-nots" => sip_over_tcp(n.unwrap_or(200), FlowOptions { timestamps: false, ..opts }),
        other => {
            eprintln!("unknown flow {other}");
            std::process::exit(2);
        }
    };
    let file = std::fs::File::create(out).expect("creates the output");
    let packets = flow.iter().enumerate().map(|(i, (_, p))| (Duration::from_millis(i as u64), p.as_slice()));
    write_pcap(std::io::BufWriter::new(file), packets).expect("writes the pcap");
}
