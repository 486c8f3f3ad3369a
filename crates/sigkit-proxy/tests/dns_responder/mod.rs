//! A DNS server for tests, on 127.0.0.1: it answers from a fixed zone
//! (A, AAAA, SRV, NAPTR records), NXDOMAIN for a name it does not hold
//! and an empty answer for a type the name lacks, and keeps every query
//! it was asked, so a test can tell which lookups a resolution made.
#![allow(dead_code)]
#![allow(clippy::unwrap_used)] // a test fails by panicking

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::rdata::{A, NAPTR, SRV};
pub use hickory_proto::rr::Record;
use hickory_proto::rr::{Name, RData, RecordType};

/// A record of the test zone.
pub fn a(name: &str, ip: Ipv4Addr) -> Record {
    Record::from_rdata(Name::from_ascii(name).unwrap(), 60, RData::A(A(ip)))
}

/// An SRV record (RFC 2782).
pub fn srv(name: &str, priority: u16, weight: u16, port: u16, target: &str) -> Record {
    let rdata = RData::SRV(SRV::new(priority, weight, port, Name::from_ascii(target).unwrap()));
    Record::from_rdata(Name::from_ascii(name).unwrap(), 60, rdata)
}

/// A NAPTR record (RFC 3403) with flags `s` and an empty regexp, as RFC
/// 3263 §4.1 uses them.
pub fn naptr(name: &str, order: u16, preference: u16, service: &str, replacement: &str) -> Record {
    let rdata = RData::NAPTR(NAPTR::new(
        order,
        preference,
        b"s".to_vec().into_boxed_slice(),
        service.as_bytes().to_vec().into_boxed_slice(),
        Vec::new().into_boxed_slice(),
        Name::from_ascii(replacement).unwrap(),
    ));
    Record::from_rdata(Name::from_ascii(name).unwrap(), 60, rdata)
}

/// The running server; it stops when dropped.
pub struct DnsResponder {
    /// Where it answers (UDP).
    pub addr: SocketAddr,
    queries: Arc<Mutex<Vec<(String, RecordType)>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl DnsResponder {
    /// Starts answering from `zone` on a free port of 127.0.0.1.
    pub fn start(zone: Vec<Record>) -> DnsResponder {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
        let addr = socket.local_addr().unwrap();
        let queries = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (log, stopped) = (queries.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while !stopped.load(Ordering::SeqCst) {
                let Ok((n, from)) = socket.recv_from(&mut buf) else { continue };
                let Ok(request) = Message::from_vec(&buf[..n]) else { continue };
                let answer = answer(&zone, &request, &log);
                let _ = socket.send_to(&answer, from);
            }
        });
        DnsResponder { addr, queries, stop, thread: Some(thread) }
    }

    /// The queries asked so far: (name without its final dot, type).
    pub fn queries(&self) -> Vec<(String, RecordType)> {
        self.queries.lock().unwrap().clone()
    }

    /// Whether a query of `rtype` was asked, for any name.
    pub fn asked(&self, rtype: RecordType) -> bool {
        self.queries().iter().any(|(_, t)| *t == rtype)
    }
}

impl Drop for DnsResponder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The response to `request` from `zone`.
fn answer(zone: &[Record], request: &Message, log: &Mutex<Vec<(String, RecordType)>>) -> Vec<u8> {
    let mut response = Message::new();
    response
        .set_id(request.id())
        .set_message_type(MessageType::Response)
        .set_op_code(OpCode::Query)
        .set_authoritative(true)
        .set_recursion_desired(request.recursion_desired())
        .set_recursion_available(true);
    let mut code = ResponseCode::NoError;
    for query in request.queries() {
        let name = query.name().to_ascii().trim_end_matches('.').to_ascii_lowercase();
        log.lock().unwrap().push((name.clone(), query.query_type()));
        let named: Vec<&Record> =
            zone.iter().filter(|r| r.name().to_ascii().trim_end_matches('.').eq_ignore_ascii_case(&name)).collect();
        if named.is_empty() {
            code = ResponseCode::NXDomain;
        }
        response.add_query(query.clone());
        response.add_answers(named.into_iter().filter(|r| r.record_type() == query.query_type()).cloned());
    }
    response.set_response_code(code);
    response.to_vec().unwrap()
}
