//! Prints, per packet of a synthesised flow, what TAROC sent: direction,
//! packet kind, compressor state, header bytes, and the first octets.
//! `cargo run --release -p taroc --example trace -- bulk|bulk-nots|sip|CAPTURE [u|o|r|infer]`
//! (`infer`: O-mode with cross-direction inference)
//! (a capture's packets are split in two directions: from the end that
//! opened their connection, and to it).

// A development aid: bad input panics with the error rather than exiting.
#![allow(clippy::unwrap_used)]

use taroc::synth::{bulk_transfer, sip_over_tcp, Dir, FlowOptions};
use taroc::{Compressor, CompressorConfig, Decompressor, DecompressorConfig, Mode, Packet};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let flow = match args.get(1).map(String::as_str) {
        Some("sip") => sip_over_tcp(20, FlowOptions::default()),
        Some("bulk-nots") => bulk_transfer(1500, 1460, 61, FlowOptions { timestamps: false, ..Default::default() }),
        Some(path) if path != "bulk" && path != "bulk-nots" => {
            let cap = taroc::capture::read_capture(&std::fs::read(path).expect("reads")).expect("a capture");
            if let Some(t) = &cap.truncated {
                eprintln!("warning: {path}: {t}");
            }
            // Forward: from the end that opened the packet's connection
            // (sent its SYN), else from the first packet's source port.
            let ends = |ip: &[u8]| {
                let h = Packet::parse(ip).expect("a TCP/IP packet").header;
                let (src, dst) =
                    h.ipv6.map_or((h.src.to_vec(), h.dst.to_vec()), |v6| (v6.src.to_vec(), v6.dst.to_vec()));
                (
                    (src, h.src_port),
                    (dst, h.dst_port),
                    h.tcp_flags & taroc::packet::FLAG_SYN != 0 && h.tcp_flags & taroc::packet::FLAG_ACK == 0,
                )
            };
            let first_port = cap.packets.first().map(|p| ends(&p.ip).0 .1);
            let mut opened_by = std::collections::HashMap::new();
            cap.packets
                .into_iter()
                .map(|p| {
                    let (src, dst, syn) = ends(&p.ip);
                    let conn = if src < dst { (src.clone(), dst) } else { (dst, src.clone()) };
                    if syn {
                        opened_by.insert(conn.clone(), src.clone());
                    }
                    let forward = opened_by.get(&conn).map_or(Some(src.1) == first_port, |o| *o == src);
                    (if forward { Dir::Forward } else { Dir::Backward }, p.ip)
                })
                .collect()
        }
        _ => bulk_transfer(1500, 1460, 61, FlowOptions::default()),
    };
    let (mode, infer) = match args.get(2).map(String::as_str) {
        Some("o") => (Mode::O, false),
        Some("infer") => (Mode::O, true),
        Some("r") => (Mode::R, false),
        _ => (Mode::U, false),
    };
    // Per direction, its compressor and decompressor.
    let mut ends = [0, 1].map(|_| {
        (
            Compressor::new(CompressorConfig { infer, ..CompressorConfig::with_mode(mode) }),
            Decompressor::new(DecompressorConfig { infer, ..DecompressorConfig::with_mode(mode) }),
        )
    });
    let mut totals = [(0usize, 0usize); 2];
    for (dir, p) in &flow {
        let (c, d) = &mut ends[*dir as usize];
        let mut wire = Vec::new();
        let r = c.compress(p, &mut wire).unwrap();
        let mut back = Vec::new();
        let res = d.decompress(&wire, &mut back);
        if let Err(e) = &res {
            eprintln!("error: {e}");
        }
        let ok = res.is_ok() && back == *p;
        // Each end's compressor and decompressor tell each other what
        // crossed the link.
        let (sent, delivered) = (c.poll_crossed(), d.poll_crossed());
        let other = &mut ends[1 - *dir as usize];
        if let Some(x) = sent {
            other.1.note_reverse(&x);
        }
        if let Some(x) = delivered {
            other.0.note_reverse(&x);
        }
        let (c, d) = &mut ends[*dir as usize];
        while let Some(f) = d.poll_feedback() {
            let mut b = Vec::new();
            f.emit(&mut b);
            c.handle_feedback(&b).unwrap();
        }
        let h = Packet::parse(p).unwrap();
        totals[*dir as usize].0 += 1;
        totals[*dir as usize].1 += r.header_len;
        println!(
            "{:?} {:?} {:?} seq={} ack={} len={} vsw={} hdr={} ok={} {:02x?}",
            dir,
            r.kind,
            r.state,
            h.header.seq,
            h.header.ack,
            h.payload.len(),
            c.vsw_len(r.cid),
            r.header_len,
            ok,
            &wire[..r.header_len.min(12)]
        );
    }
    for (d, (n, b)) in [Dir::Forward, Dir::Backward].iter().zip(totals) {
        println!("{d:?}: {n} packets, mean header {:.2}", b as f64 / n.max(1) as f64);
    }
}
