//! Parse and proxy-rewrite benchmarks (criterion):
//! `cargo bench -p sigkit-sip --bench parse`.
//!
//! * `parse/invite`: `Message::parse` of the 3GPP video call INVITE of the
//!   corpus (`corpus/3gpp-video-call/01-ue-INVITE.sip`, 1,437 bytes, 19 header lines).
//! * `parse_views/invite`: parse plus the views a proxy reads (top Via,
//!   Call-ID, CSeq, From, To, Route, Contact, SigComp identifier).
//! * `proxy_rewrite/invite`: parse, then the P-CSCF's rewrite of the
//!   request (received/rport, Max-Forwards, first Route removed, own Via with
//!   `comp=sigcomp` and Record-Route prepended) and emit into a reused buffer.

// A setup failure here is a bug to see at once: unwrap panics with it.
#![allow(clippy::unwrap_used)]

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use sigkit_sip::{compartment, Editor, Message};

const INVITE: &[u8] = include_bytes!("../../../corpus/3gpp-video-call/01-ue-INVITE.sip");

fn rewrite(bytes: &[u8], out: &mut Vec<u8>) {
    let msg = Message::parse(bytes).unwrap();
    let mut edit = Editor::new(&msg);
    edit.fill_top_via("[5555::aaa:bbb:ccc:ddd]:1357".parse().unwrap()).unwrap();
    edit.decrement_max_forwards().unwrap();
    edit.remove_first_route_if(|r| r.uri.starts_with("sip:pcscf1.visited1.net")).unwrap();
    edit.prepend_via("SIP/2.0/UDP pcscf1.visited1.net:5060;branch=z9hG4bK0123456789abcdef").unwrap();
    edit.prepend_record_route("sip:pcscf1.visited1.net:7531;lr;comp=sigcomp").unwrap();
    out.clear();
    edit.emit_into(out);
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("sip");
    g.throughput(Throughput::Elements(1));
    g.bench_function("parse/invite", |b| b.iter(|| Message::parse(black_box(INVITE)).unwrap().headers().len()));
    g.bench_function("parse_views/invite", |b| {
        b.iter(|| {
            let msg = Message::parse(black_box(INVITE)).unwrap();
            let via = msg.top_via().unwrap();
            let n = msg.call_id().unwrap().len() + msg.cseq().unwrap().number as usize;
            let n = n + msg.from().unwrap().tag().map_or(0, str::len) + msg.to().unwrap().uri.len();
            let n = n + msg.routes().unwrap().len() + usize::from(msg.contacts().is_ok());
            n + via.branch().map_or(0, str::len) + compartment::sigcomp_id(&msg).map_or(0, str::len)
        })
    });
    let mut out = Vec::with_capacity(2048);
    g.bench_function("proxy_rewrite/invite", |b| {
        b.iter(|| {
            rewrite(black_box(INVITE), &mut out);
            out.len()
        })
    });
    g.finish();
}

// criterion_group! makes `benches` a `pub fn` and takes no doc comment:
// in a private module it is not public API.
mod group {
    use super::*;
    criterion_group!(benches, bench);
}
criterion_main!(group::benches);
