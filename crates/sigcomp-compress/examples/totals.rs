//! Prints the SigComp totals of the corpus flows beside the figures of the 2005 SigComp performance thesis
//! (settings as the thesis: SMS 131072, 32 cycles per bit). Bytes are
//! what the transport carries: SigComp messages, over TCP with record
//! marking.
//!
//! cargo run --release -p sigcomp-compress --example totals [ALGO]
//! Environment: MATRIX=1 (every flow × mechanism, DMS=4096,8192 by
//! default), ROW=<part of a row name>, VERBOSE=1 (per message),
//! LOOKAHEAD=18|66|258, DICT=A-B (thesis rows).

#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use sigcomp::{Params, Transport};
use sigcomp_compress::{Algorithm, Config, Mechanism, Priorities};

struct Row {
    name: &'static str,
    flow: &'static str,
    first: usize,
    mechanism: Mechanism,
    dms: u32,
    dict: &'static str,
    transport: Transport,
    thesis: usize,
}

fn total(flow: &[FlowMessage], params: Params, config: Config) -> (usize, usize) {
    let mut pair = Pair::new(params, config);
    let (mut raw, mut sent) = (0, 0);
    let verbose = std::env::var_os("VERBOSE").is_some();
    for m in flow {
        let n = pair.send(m.from, &m.bytes);
        if verbose {
            println!("  {:40} {:5} -> {:5}", m.name, m.bytes.len(), n);
        }
        raw += m.bytes.len();
        // Over a stream, record marking (RFC 3320 §4.2.2) counts as sent.
        sent += pair.last_wire_len;
    }
    (raw, sent)
}

fn main() {
    let algorithm =
        std::env::args().nth(1).map(|a| Algorithm::parse(&a).expect("algorithm")).unwrap_or(Algorithm::Lzss);
    use Mechanism::*;
    use Transport::*;
    let v = "3gpp-video-call";
    let rows = [
        Row {
            name: "H video static 4096",
            flow: v,
            first: 12,
            mechanism: Static,
            dms: 4096,
            dict: "1-5",
            transport: Message,
            thesis: 6286,
        },
        Row {
            name: "H video dynamic 4096",
            flow: v,
            first: 12,
            mechanism: Dynamic,
            dms: 4096,
            dict: "1-5",
            transport: Message,
            thesis: 3155,
        },
        Row {
            name: "H video dynamic 8192",
            flow: v,
            first: 12,
            mechanism: Dynamic,
            dms: 8192,
            dict: "1-5",
            transport: Message,
            thesis: 3145,
        },
        Row {
            name: "H video shared 4096",
            flow: v,
            first: 12,
            mechanism: Shared,
            dms: 4096,
            dict: "1-5",
            transport: Message,
            thesis: 3005,
        },
        Row {
            name: "H video shared 8192",
            flow: v,
            first: 12,
            mechanism: Shared,
            dms: 8192,
            dict: "1-5",
            transport: Message,
            thesis: 2917,
        },
        Row {
            name: "H video shared 16384",
            flow: v,
            first: 12,
            mechanism: Shared,
            dms: 16384,
            dict: "1-5",
            transport: Message,
            thesis: 2929,
        },
        Row {
            name: "I voice dynamic 4096",
            flow: "basic-voice-call",
            first: 5,
            mechanism: Dynamic,
            dms: 4096,
            dict: "1-3",
            transport: Message,
            thesis: 2074,
        },
        Row {
            name: "I voice shared 4096",
            flow: "basic-voice-call",
            first: 5,
            mechanism: Shared,
            dms: 4096,
            dict: "1-3",
            transport: Message,
            thesis: 1715,
        },
        Row {
            name: "J video dynamic TCP 8192",
            flow: v,
            first: 12,
            mechanism: Dynamic,
            dms: 8192,
            dict: "1-3",
            transport: Stream,
            thesis: 2613,
        },
        Row {
            name: "J video shared TCP 8192",
            flow: v,
            first: 12,
            mechanism: Shared,
            dms: 8192,
            dict: "1-3",
            transport: Stream,
            thesis: 2372,
        },
        Row {
            name: "L voice shared TCP 4096",
            flow: "basic-voice-call",
            first: 5,
            mechanism: Shared,
            dms: 4096,
            dict: "1-3",
            transport: Stream,
            thesis: 1046,
        },
        Row {
            name: "L bvideo shared TCP 4096",
            flow: "basic-video-call",
            first: 5,
            mechanism: Shared,
            dms: 4096,
            dict: "1-3",
            transport: Stream,
            thesis: 1345,
        },
        Row {
            name: "L poc shared TCP 4096",
            flow: "poc-session-establishment",
            first: 6,
            mechanism: Shared,
            dms: 4096,
            dict: "1-3",
            transport: Stream,
            thesis: 1569,
        },
        Row {
            name: "L reg shared TCP 4096",
            flow: "3gpp-registration",
            first: 4,
            mechanism: Shared,
            dms: 4096,
            dict: "1-3",
            transport: Stream,
            thesis: 2480,
        },
        Row {
            name: "L video shared TCP 4096",
            flow: v,
            first: 12,
            mechanism: Shared,
            dms: 4096,
            dict: "1-3",
            transport: Stream,
            thesis: 3017,
        },
        Row {
            name: "L reinv-unrel shared TCP 4096",
            flow: "3gpp-video-call-reinvite-unreliable",
            first: 8,
            mechanism: Shared,
            dms: 4096,
            dict: "1-3",
            transport: Stream,
            thesis: 2030,
        },
        Row {
            name: "L reinv-rel shared TCP 4096",
            flow: "3gpp-video-call-reinvite-reliable",
            first: 10,
            mechanism: Shared,
            dms: 4096,
            dict: "1-3",
            transport: Stream,
            thesis: 2504,
        },
    ];
    if std::env::var_os("MATRIX").is_some() {
        matrix(algorithm);
        return;
    }
    println!("| run | uncompressed | SigComp thesis | ours | ours/thesis | ratio |");
    println!("|---|---|---|---|---|---|");
    let only = std::env::var("ROW").ok();
    for r in rows {
        if only.as_deref().is_some_and(|o| !r.name.contains(o)) {
            continue;
        }
        let mut flow = read_flow(r.flow);
        flow.truncate(r.first);
        let params = Params { dms: r.dms, sms: 131072, cpb: 32, version: 2 };
        let config = Config {
            algorithm,
            mechanism: r.mechanism,
            transport: r.transport,
            dictionary: Priorities::parse(std::env::var("DICT").as_deref().unwrap_or(r.dict)),
            lookahead: std::env::var("LOOKAHEAD").ok().and_then(|v| v.parse().ok()).unwrap_or(258),
            ..Config::default()
        };
        let (raw, sent) = total(&flow, params, config);
        println!(
            "| {} | {raw} | {} | {sent} | {:.2} | {:.3} |",
            r.name,
            r.thesis,
            sent as f64 / r.thesis as f64,
            sent as f64 / raw as f64
        );
    }
}

/// Every corpus flow (all its messages) × mechanism, for DMS 4096 and 8192
/// over UDP and TCP: SigComp bytes (ratio).
fn matrix(algorithm: Algorithm) {
    println!("| flow (uncompressed) | DMS | transport | basic | static | dynamic | shared |");
    println!("|---|---|---|---|---|---|---|");
    for name in flows() {
        let flow = read_flow(&name);
        let raw: usize = flow.iter().map(|m| m.bytes.len()).sum();
        for dms in std::env::var("DMS")
            .map(|d| d.split(',').map(|x| x.parse().expect("DMS")).collect())
            .unwrap_or(vec![4096u32, 8192])
        {
            for transport in [Transport::Message, Transport::Stream] {
                let mut cells = Vec::new();
                for mechanism in Mechanism::ALL {
                    let params = Params { dms, sms: 131072, cpb: 32, version: 2 };
                    let config = Config { algorithm, mechanism, transport, ..Config::default() };
                    let (_, sent) = total(&flow, params, config);
                    cells.push(format!("{sent} ({:.3})", sent as f64 / raw as f64));
                }
                let t = if transport == Transport::Message { "UDP" } else { "TCP" };
                println!("| {name} ({raw}) | {dms} | {t} | {} |", cells.join(" | "));
            }
        }
    }
}
