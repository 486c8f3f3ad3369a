//! Where a capture's compressed header bytes go, by kind of TCP segment:
//! for TAROC in modes U, O, R and O with cross-direction inference, the
//! count and mean compressed header of SYNs, SYN-ACKs, the handshake's
//! ACK, SIP requests, SIP responses, pure ACKs, FINs and the ACK after a
//! FIN; then by what changed from the previous packet of the same
//! direction (the advertised window, TSval's step in clock ticks).
//!
//! `cargo run --release -p taroc --example segment_sizes -- CAPTURE...`
//! (`PORT=N` keeps only the packets to or from TCP port N).
//!
//! Each packet's compressed size is the growth of the replay's header
//! bytes when the capture's prefix grows by that packet: a packet's
//! compression depends only on the packets (and feedback) before it, so
//! the replay of a prefix compresses it as the whole replay does. That is
//! a replay per packet, fine for captures of a few hundred packets.

use std::collections::BTreeMap;

use taroc::packet::{FLAG_ACK, FLAG_FIN, FLAG_SYN};
use taroc::replay::{replay, LinkConfig};
use taroc::{Mode, Packet, Scheme, TcpOption};

/// The schemes of the table, in its column order.
const SCHEMES: [(&str, Scheme); 4] = [
    ("u", Scheme::Taroc(Mode::U)),
    ("o", Scheme::Taroc(Mode::O)),
    ("r", Scheme::Taroc(Mode::R)),
    ("o+infer", Scheme::TarocInfer),
];

/// What a packet is, and what changed from the previous packet of its
/// direction.
struct Class {
    kind: &'static str,
    change: String,
}

fn tsval(p: &Packet<'_>) -> Option<u32> {
    p.header.options.parse()?.into_iter().find_map(|o| match o {
        TcpOption::Timestamp { val, .. } => Some(val),
        _ => None,
    })
}

/// The packets' classes, each against the previous packet of its
/// direction (its source address and port).
fn classes(packets: &[Vec<u8>]) -> Vec<Class> {
    let mut prev: BTreeMap<(Vec<u8>, u16), (u16, Option<u32>)> = BTreeMap::new();
    let mut fin_seen: BTreeMap<(Vec<u8>, u16, Vec<u8>, u16), bool> = BTreeMap::new();
    // Directions that have sent more than a SYN.
    let mut started: std::collections::BTreeSet<(Vec<u8>, u16)> = std::collections::BTreeSet::new();
    packets
        .iter()
        .map(|bytes| {
            let p = Packet::parse(bytes).expect("a TCP/IP packet");
            let h = &p.header;
            let (src, dst) = match &h.ipv6 {
                Some(v6) => (v6.src.to_vec(), v6.dst.to_vec()),
                None => (h.src.to_vec(), h.dst.to_vec()),
            };
            let conn = if (src.clone(), h.src_port) < (dst.clone(), h.dst_port) {
                (src.clone(), h.src_port, dst.clone(), h.dst_port)
            } else {
                (dst.clone(), h.dst_port, src.clone(), h.src_port)
            };
            let ack_only = p.payload.is_empty() && h.tcp_flags & (FLAG_SYN | FLAG_FIN) == 0;
            let after_fin = *fin_seen.get(&conn).unwrap_or(&false);
            let kind = if h.tcp_flags & FLAG_SYN != 0 {
                if h.tcp_flags & FLAG_ACK == 0 {
                    "syn"
                } else {
                    "syn-ack"
                }
            } else if h.tcp_flags & FLAG_FIN != 0 {
                fin_seen.insert(conn, true);
                "fin"
            } else if ack_only && after_fin {
                "ack-after-fin"
            } else if ack_only && !started.contains(&(src.clone(), h.src_port)) {
                "handshake-ack"
            } else if ack_only {
                "pure-ack"
            } else if p.payload.starts_with(b"SIP/2.0 ") {
                "sip-response"
            } else {
                "sip-request"
            };
            if h.tcp_flags & FLAG_SYN == 0 {
                started.insert((src.clone(), h.src_port));
            }
            let ts = tsval(&p);
            let change = match prev.insert((src, h.src_port), (h.window, ts)) {
                None => "first of its direction".to_string(),
                Some((window, last_ts)) => {
                    let step = match (last_ts, ts) {
                        (Some(a), Some(b)) => match b.wrapping_sub(a) {
                            0 => "TSval +0".to_string(),
                            1..=15 => "TSval +1..15".to_string(),
                            16..=255 => "TSval +16..255".to_string(),
                            _ => "TSval +256..".to_string(),
                        },
                        _ => "no TSval".to_string(),
                    };
                    let w = if window == h.window { "window same" } else { "window changed" };
                    format!("{w}, {step}")
                }
            };
            Class { kind, change }
        })
        .collect()
}

/// Each packet's compressed header under `scheme`, from the replays of
/// growing prefixes.
fn per_packet(scheme: Scheme, packets: &[Vec<u8>]) -> Vec<u64> {
    let link = LinkConfig::default();
    let mut last = 0;
    (1..=packets.len())
        .map(|n| {
            let (r, _) = replay(scheme, &packets[..n], &link, false);
            assert_eq!(r.delivered, n, "not every packet delivered");
            assert_eq!(r.undetected, 0);
            let grew = r.header_bytes_after - last;
            last = r.header_bytes_after;
            grew
        })
        .collect()
}

/// One table: a row per key, count and mean bytes per scheme.
fn table(title: &str, keys: &[String], sizes: &[Vec<u64>]) {
    let mut rows: BTreeMap<&str, (usize, Vec<u64>)> = BTreeMap::new();
    for (i, k) in keys.iter().enumerate() {
        let e = rows.entry(k).or_insert_with(|| (0, vec![0; SCHEMES.len()]));
        e.0 += 1;
        for (s, sz) in sizes.iter().enumerate() {
            e.1[s] += sz[i];
        }
    }
    let names: Vec<String> = SCHEMES.iter().map(|(n, _)| format!("{n:>8}")).collect();
    println!("  {title:38} {:>6} {}", "count", names.join(""));
    let total = keys.len().max(1) as f64;
    for (k, (n, sums)) in &rows {
        let means: Vec<String> = sums.iter().map(|b| format!("{:8.2}", *b as f64 / *n as f64)).collect();
        println!("  {k:38} {n:6} {}", means.join(""));
    }
    let all: Vec<String> = sizes.iter().map(|sz| format!("{:8.2}", sz.iter().sum::<u64>() as f64 / total)).collect();
    println!("  {:38} {:6} {}", "all", keys.len(), all.join(""));
}

fn main() {
    let port: Option<u16> = std::env::var("PORT").ok().and_then(|p| p.parse().ok());
    for path in std::env::args().skip(1) {
        let cap = taroc::capture::read_capture(&std::fs::read(&path).expect("reads")).expect("a capture");
        let packets: Vec<Vec<u8>> = cap
            .packets
            .into_iter()
            .map(|p| p.ip)
            .filter(|ip| {
                let Some(port) = port else { return true };
                Packet::parse(ip).is_ok_and(|p| p.header.src_port == port || p.header.dst_port == port)
            })
            .collect();
        let filter = port.map(|p| format!(", port {p}")).unwrap_or_default();
        println!("{path}{filter}: {} packets", packets.len());
        let sizes: Vec<Vec<u64>> = SCHEMES.iter().map(|(_, s)| per_packet(*s, &packets)).collect();
        let classes = classes(&packets);
        let kinds: Vec<String> = classes.iter().map(|c| c.kind.to_string()).collect();
        table("segment", &kinds, &sizes);
        let changes: Vec<String> = classes
            .iter()
            .filter(|c| c.kind == "sip-request" || c.kind == "sip-response" || c.kind == "pure-ack")
            .map(|c| format!("{}: {}", if c.kind == "pure-ack" { "ack" } else { "data" }, c.change))
            .collect();
        let picked: Vec<Vec<u64>> = sizes
            .iter()
            .map(|sz| {
                sz.iter()
                    .zip(&classes)
                    .filter(|(_, c)| c.kind == "sip-request" || c.kind == "sip-response" || c.kind == "pure-ack")
                    .map(|(b, _)| *b)
                    .collect()
            })
            .collect();
        table("data and pure ACKs by change", &changes, &picked);
    }
}
