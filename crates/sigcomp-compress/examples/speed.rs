//! The Open SigComp speed-test workload of `sigkit bench` (the flow's first
//! two messages alternating, DMS 8192, SMS 8192, CPB 64, UDP, no
//! dictionary, a fresh compartment pair every 10 messages) on this crate
//! alone, for profiling and A/B runs of the encoders without building the
//! CLI: round trips/s, the SigComp bytes sent and a hash of them (equal
//! hashes: the same messages on the wire).
//!
//! `cargo run --release -p sigcomp-compress --example speed -- corpus/open-sigcomp-startup [ALGO] [MECHANISM] [MESSAGES] [PER] [native|udvm]`
//! (defaults lzss, dynamic, 20000, a fresh pair every 10 messages; `PER` 0:
//! one pair for the whole run, the steady state; `udvm` runs every
//! instruction in the UDVM, without the native decoders), e.g. under
//! `valgrind --tool=callgrind target/release/examples/speed corpus/open-sigcomp-startup deflate dynamic 2000`.

use std::time::Instant;

use sigcomp::{CompartmentId, Params, Transport};
use sigcomp_compress::{Algorithm, Config, Endpoint, EndpointConfig, Mechanism, Received};

mod common;

fn main() {
    let mut args = std::env::args().skip(1);
    let usage =
        "usage: speed FLOW_DIR [lzss|deflate|lz77] [basic|static|dynamic|shared] [MESSAGES] [PER] [native|udvm]";
    let dir = args.next().expect(usage);
    let algorithm = Algorithm::parse(&args.next().unwrap_or_else(|| "lzss".into())).expect(usage);
    let mechanism = Mechanism::parse(&args.next().unwrap_or_else(|| "dynamic".into())).expect(usage);
    let messages: u64 = args.next().map_or(20_000, |v| v.parse().expect(usage));
    let per: u64 = args.next().map_or(10, |v| v.parse().expect(usage));
    let native = match args.next().as_deref() {
        None | Some("native") => true,
        Some("udvm") => false,
        Some(_) => panic!("{usage}"),
    };
    let flow = common::first_messages(&dir, 2);
    let params = Params { dms: 8192, sms: 8192, cpb: 64, ..Params::default() };
    let config = Config { algorithm, mechanism, transport: Transport::Message, dictionary: None, ..Config::default() };
    let config = EndpointConfig::new(params, params, config);
    let mut ue = Endpoint::new(config).expect("endpoint");
    let mut pcscf = Endpoint::new(config).expect("endpoint");
    ue.decompressor_mut().set_native_decoders(native);
    pcscf.decompressor_mut().set_native_decoders(native);
    let (mut sip, mut sent, mut hash) = (0u64, 0u64, 0xcbf2_9ce4_8422_2325u64);
    let mut c = CompartmentId(1);
    let start = Instant::now();
    for k in 0..messages {
        if per > 0 && k > 0 && k % per == 0 {
            ue.close_compartment(c);
            pcscf.close_compartment(c);
            c = CompartmentId(c.0 + 1);
        }
        let (from_ue, m) = &flow[k as usize % flow.len()];
        let (a, b) = if *from_ue { (&mut ue, &mut pcscf) } else { (&mut pcscf, &mut ue) };
        let now = Instant::now();
        let out = a.compress(now, c, m).expect("compress");
        for &byte in &out.message {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
        }
        sip += m.len() as u64;
        sent += out.message.len() as u64;
        match b.receive(&out.message, Transport::Message) {
            Ok(Received::Message(incoming)) => assert_eq!(&b.accept(now, incoming, c).message, m),
            other => panic!("{other:?}"),
        }
    }
    let s = start.elapsed().as_secs_f64();
    println!(
        "{} {}: {messages} round trips, {:.0}/s; {sent} SigComp bytes of {sip} (ratio {:.4}), hash {hash:016x}",
        algorithm.name(),
        mechanism.name(),
        messages as f64 / s,
        sent as f64 / sip as f64
    );
}
