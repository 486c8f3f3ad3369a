//! Where a compartment's round trips go, by message position: the Open
//! SigComp speed-test workload (the flow's first two messages alternating,
//! DMS 8192, SMS 8192, CPB 64, LZSS shared over UDP) with a fresh
//! compartment pair every `PER` messages, timed per position in the pair's
//! life (the first message uploads bytecode and builds compressors, later
//! ones reference state).
//!
//! `cargo run --release -p sigcomp-compress --example by_position -- corpus/open-sigcomp-startup [PAIRS] [PER]`
//! (defaults 2000 pairs, 10 messages each). Mean µs per position.

use std::time::Instant;

use sigcomp::{CompartmentId, Params};
use sigcomp_compress::{Config, Endpoint, EndpointConfig, Received};

mod common;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: by_position FLOW_DIR [PAIRS] [PER]");
    let pairs: u64 = args.next().map_or(2000, |v| v.parse().expect("PAIRS"));
    let per: usize = args.next().map_or(10, |v| v.parse().expect("PER"));
    let messages = common::first_messages(&dir, 2);
    let params = Params { dms: 8192, sms: 8192, cpb: 64, version: 2 };
    let config = EndpointConfig::new(params, params, Config::default());
    let mut ue = Endpoint::new(config).expect("endpoint");
    let mut pcscf = Endpoint::new(config).expect("endpoint");
    let (mut compress, mut receive) = (vec![0f64; per], vec![0f64; per]);
    for k in 0..pairs {
        let c = CompartmentId(k);
        for i in 0..per {
            let (from_ue, m) = &messages[i % messages.len()];
            let (a, b) = if *from_ue { (&mut ue, &mut pcscf) } else { (&mut pcscf, &mut ue) };
            let t0 = Instant::now();
            let out = a.compress(t0, c, m).expect("compress");
            let t1 = Instant::now();
            match b.receive(&out.message, sigcomp::Transport::Message) {
                Ok(Received::Message(incoming)) => assert_eq!(&b.accept(t1, incoming, c).message, m),
                other => panic!("{other:?}"),
            }
            compress[i] += (t1 - t0).as_secs_f64();
            receive[i] += t1.elapsed().as_secs_f64();
        }
        ue.close_compartment(c);
        pcscf.close_compartment(c);
    }
    let us = |t: f64| t * 1e6 / pairs as f64;
    println!("position  compress µs  receive µs");
    for i in 0..per {
        println!("{i:>8}  {:>11.1}  {:>10.1}", us(compress[i]), us(receive[i]));
    }
    let total: f64 = compress.iter().chain(&receive).sum();
    println!("mean round trip {:.1} µs", us(total) / per as f64);
}
