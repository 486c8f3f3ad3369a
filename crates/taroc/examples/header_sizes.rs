//! Mean compressed header per capture and mode (what `sigkit rohc` reports
//! at BER 0), and where the bytes go: per direction, the count and mean
//! size of IR, IR-DYN, short-format and general-format packets, and of
//! data segments and pure ACKs among the short ones.
//! `cargo run --release -p taroc --example header_sizes -- CAPTURE...`
//! (`BREAKDOWN=1` for the breakdown, `BER_SEEDS=N` for N runs per mode at
//! BER 1e-3 counting damaged headers let through).

use std::collections::BTreeMap;

use taroc::replay::{replay, LinkConfig};
use taroc::{Compressor, CompressorConfig, Mode, Packet, PacketKind, Scheme};

fn main() {
    for path in std::env::args().skip(1) {
        let cap = taroc::capture::read_capture(&std::fs::read(&path).expect("reads")).expect("a capture");
        if let Some(t) = &cap.truncated {
            eprintln!("warning: {path}: {t}");
        }
        let packets: Vec<Vec<u8>> = cap.packets.into_iter().map(|p| p.ip).collect();
        let name = path.rsplit('/').next().unwrap_or(&path).to_string();
        let means: Vec<String> = [
            ("o", Scheme::Taroc(Mode::O)),
            ("r", Scheme::Taroc(Mode::R)),
            ("u", Scheme::Taroc(Mode::U)),
            ("o+infer", Scheme::TarocInfer),
        ]
        .iter()
        .map(|(label, scheme)| {
            let (r, _) = replay(*scheme, &packets, &LinkConfig::default(), false);
            assert_eq!(r.delivered, r.packets, "{name} {label}: not every packet delivered");
            assert_eq!(r.undetected, 0);
            format!("{label}={:.2}", r.mean_header_after())
        })
        .collect();
        println!("{name}: {}", means.join(" "));
        // BER_SEEDS=N: N runs at BER 1e-3 per mode; no damaged header may
        // come out.
        let seeds: u64 = std::env::var("BER_SEEDS").ok().and_then(|n| n.parse().ok()).unwrap_or(0);
        for mode in [Mode::U, Mode::O, Mode::R] {
            let (mut undetected, mut damaged, mut sent) = (0, 0, 0);
            for seed in 1..=seeds {
                let link = LinkConfig { ber: 1e-3, seed, ..LinkConfig::default() };
                let (r, _) = replay(Scheme::Taroc(mode), &packets, &link, false);
                undetected += r.undetected;
                damaged += r.link_damaged;
                sent += r.packets;
            }
            if seeds > 0 {
                println!("  BER 1e-3 {mode:?}: {sent} packets, {damaged} damaged, {undetected} undetected");
            }
        }
        if std::env::var_os("BREAKDOWN").is_none() {
            continue;
        }
        // Without feedback (U-mode compressors), one per flow direction.
        let mut comps: BTreeMap<Vec<u8>, Compressor> = BTreeMap::new();
        let mut kinds: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for p in &packets {
            let Ok(parsed) = Packet::parse(p) else { continue };
            let h = parsed.header;
            let key = [&p[12..20], &h.src_port.to_be_bytes()[..]].concat();
            let c = comps.entry(key).or_insert_with(|| Compressor::new(CompressorConfig::with_mode(Mode::U)));
            let mut wire = Vec::new();
            let r = c.compress(p, &mut wire).expect("compresses");
            let what = match r.kind {
                PacketKind::Ir => "ir".to_string(),
                PacketKind::IrDyn => "ir-dyn".to_string(),
                PacketKind::Co => {
                    let format = if wire[0] & 0x80 == 0 { "short" } else { "general" };
                    let seg = if parsed.payload.is_empty() { "ack" } else { "data" };
                    format!("{format}-{seg}-{}B", r.header_len)
                }
            };
            let e = kinds.entry(what).or_default();
            e.0 += 1;
            e.1 += r.header_len;
        }
        let total: usize = kinds.values().map(|v| v.1).sum();
        for (k, (n, b)) in kinds {
            println!("  {k:24} {n:6} packets {b:7} B ({:.1} %)", 100.0 * b as f64 / total.max(1) as f64);
        }
    }
}
