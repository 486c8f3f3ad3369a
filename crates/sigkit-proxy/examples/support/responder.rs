//! The upstream of the proxy examples: a thread that answers every request
//! at once, REGISTER with 200 OK and its Contact for an hour, anything else
//! with 200 OK (ACKs and responses get nothing).

// The examples' upstream on 127.0.0.1: a socket that fails to bind or
// send leaves the example nothing to measure, and the panic names it.
#![allow(clippy::unwrap_used)]

use std::net::{SocketAddr, UdpSocket};

use sigkit_sip::Message;

/// Starts the responder on 127.0.0.1 (a thread named `responder`); its
/// address.
pub fn start_responder() -> SocketAddr {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap();
    std::thread::Builder::new()
        .name("responder".into())
        .spawn(move || {
            let mut buf = vec![0u8; 65536];
            loop {
                let Ok((n, from)) = socket.recv_from(&mut buf) else { continue };
                if let Some(reply) = answer(&buf[..n]) {
                    let _ = socket.send_to(&reply, from);
                }
            }
        })
        .unwrap();
    addr
}

/// The answer to one datagram: 200 OK to a request, with a REGISTER's
/// Contact for an hour; None for an ACK, a response or what is not SIP.
pub fn answer(datagram: &[u8]) -> Option<Vec<u8>> {
    let msg = Message::parse(datagram).ok()?;
    if !msg.is_request() || msg.method() == Some("ACK") {
        return None;
    }
    let contact = msg
        .headers()
        .iter()
        .find(|h| h.kind == sigkit_sip::HeaderName::Contact)
        .and_then(|h| h.value_str().ok())
        .map(|c| format!("{c};expires=3600"));
    let extra: Vec<(&str, &str)> = match (msg.method(), &contact) {
        (Some("REGISTER"), Some(c)) => vec![("Contact", c.as_str())],
        _ => Vec::new(),
    };
    sigkit_sip::proxy::build_response(&msg, 200, "OK", Some("resp1"), &extra).ok()
}
