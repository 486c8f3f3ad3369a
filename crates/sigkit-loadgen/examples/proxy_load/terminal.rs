//! The simulated terminals: a UDP socket each with its own SigComp
//! endpoint (dynamic mechanism, LZSS; one compartment, the proxy: RFC 5049
//! §6.1), the OPTIONS and REGISTER they send, and their registration with
//! digest credentials when challenged.

use std::cell::RefCell;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use sigcomp::{CompartmentId, Params, Transport};
use sigcomp_compress::{Algorithm, Config, Endpoint, EndpointConfig, Mechanism, Received};
use sigkit_loadgen::auth;
use sigkit_sip::Message;
use tokio::net::UdpSocket;

/// A terminal's one compartment: the proxy (RFC 5049 §6.1).
const PROXY: CompartmentId = CompartmentId(1);

/// The password Kamailio's test configuration expects of every user.
const PASSWORD: &str = "secret";

/// A terminal shared between the sending loop and its receiving task.
pub type SharedTerminal = Rc<RefCell<Terminal>>;

fn terminal_endpoint() -> Result<Endpoint, String> {
    let params = Params { dms: 8192, sms: 8192, cpb: 16, version: 2 };
    let config = Config {
        algorithm: Algorithm::Lzss,
        mechanism: Mechanism::Dynamic,
        transport: Transport::Message,
        ..Config::default()
    };
    Endpoint::new(EndpointConfig::new(params, params, config))
        .map_err(|e| format!("a terminal's SigComp endpoint: {e}"))
}

pub struct Terminal {
    pub index: usize,
    pub socket: Rc<UdpSocket>,
    pub port: u16,
    pub target: SocketAddr,
    pub endpoint: Option<Endpoint>,
    pub instance: String,
    pub cseq: u32,
    /// Requests sent and not answered yet, by CSeq number.
    pub pending: HashMap<u32, Instant>,
    /// Received SigComp messages that did not decompress.
    pub failures: u64,
    /// Every datagram sent, in order, while recording for a replay.
    pub log: Option<Vec<Vec<u8>>>,
}

impl Terminal {
    /// A terminal on `socket` sending to `target`; `instance` (its
    /// `sigcomp-id`) names its compartment at the proxy.
    fn new(
        index: usize,
        socket: Rc<UdpSocket>,
        target: SocketAddr,
        endpoint: Option<Endpoint>,
        instance: String,
    ) -> Result<Terminal, String> {
        let port = local_port(&socket)?;
        Ok(Terminal {
            index,
            socket,
            port,
            target,
            endpoint,
            instance,
            cseq: 0,
            pending: HashMap::new(),
            failures: 0,
            log: None,
        })
    }

    /// A SigComp terminal of the idle population, one of many on a shared
    /// socket: its own `sigcomp-id` (by `index`), so its own compartment.
    pub fn idle(index: usize, socket: Rc<UdpSocket>, target: SocketAddr) -> Result<Terminal, String> {
        let instance = format!("urn:uuid:00000000-0000-4000-8000-{index:012x}");
        Terminal::new(index, socket, target, Some(terminal_endpoint()?), instance)
    }

    fn via(&self, branch: u32) -> String {
        let mut v = format!("SIP/2.0/UDP 127.0.0.1:{};branch=z9hG4bK{}x{branch};rport", self.port, self.port);
        if self.endpoint.is_some() {
            v.push_str(&format!(";comp=sigcomp;sigcomp-id=\"<{}>\"", self.instance));
        }
        v
    }

    fn contact(&self) -> String {
        let comp = if self.endpoint.is_some() { ";comp=sigcomp" } else { "" };
        format!("<sip:user{}@127.0.0.1:{}{comp}>;+sip.instance=\"<{}>\"", self.index, self.port, self.instance)
    }

    /// An OPTIONS of about 700 bytes, as an IMS terminal sends it.
    pub fn options(&mut self, ruri: &str) -> (u32, Vec<u8>) {
        self.cseq += 1;
        let n = self.cseq;
        let text = format!(
            "OPTIONS {ruri} SIP/2.0\r\nVia: {via}\r\nMax-Forwards: 70\r\n\
             From: \"User {i}\" <sip:user{i}@127.0.0.1>;tag={port}a{i}\r\nTo: <{ruri}>\r\n\
             Call-ID: {port}-{n}-load@127.0.0.1\r\nCSeq: {n} OPTIONS\r\nContact: {contact}\r\n\
             Accept: application/sdp, application/pidf+xml, message/sipfrag\r\nAccept-Encoding: identity\r\n\
             Accept-Language: en\r\nAllow: INVITE, ACK, CANCEL, BYE, OPTIONS, MESSAGE, NOTIFY, UPDATE, PRACK, REFER, INFO\r\n\
             Supported: path, gruu, outbound, 100rel, timer, replaces, sec-agree\r\n\
             User-Agent: sigkit-proxy-load/1.0 (IMS terminal simulation)\r\n\
             P-Preferred-Identity: <sip:user{i}@ims.example.net>\r\n\
             P-Access-Network-Info: 3GPP-UTRAN-TDD; utran-cell-id-3gpp=23456789ABCDE\r\nContent-Length: 0\r\n\r\n",
            via = self.via(n),
            i = self.index,
            port = self.port,
            contact = self.contact(),
        );
        (n, text.into_bytes())
    }

    /// A REGISTER; `authorization` is a whole `Authorization: ...` header
    /// line (without its CRLF) answering a challenge.
    pub fn register(&mut self, domain: &str, authorization: Option<&str>) -> Vec<u8> {
        self.cseq += 1;
        let n = self.cseq;
        let auth = authorization.map(|a| format!("{a}\r\n")).unwrap_or_default();
        format!(
            "REGISTER sip:{domain} SIP/2.0\r\nVia: {via}\r\nMax-Forwards: 70\r\n\
             From: <sip:user{i}@127.0.0.1>;tag={port}r\r\nTo: <sip:user{i}@127.0.0.1>\r\n\
             Call-ID: {port}-reg@127.0.0.1\r\nCSeq: {n} REGISTER\r\nContact: {contact}\r\n{auth}Expires: 3600\r\n\
             Supported: path, gruu, outbound\r\nUser-Agent: sigkit-proxy-load/1.0\r\nContent-Length: 0\r\n\r\n",
            via = self.via(n),
            i = self.index,
            port = self.port,
            contact = self.contact(),
        )
        .into_bytes()
    }

    /// The bytes on the wire: compressed in the proxy's compartment where
    /// the terminal speaks SigComp.
    pub fn wire(&mut self, sip: &[u8]) -> Vec<u8> {
        let bytes = match &mut self.endpoint {
            Some(e) => e.compress(Instant::now(), PROXY, sip).expect("compress").message,
            None => sip.to_vec(),
        };
        if let Some(log) = &mut self.log {
            log.push(bytes.clone());
        }
        bytes
    }

    /// A received datagram as SIP (decompressed, its state accepted).
    pub fn unwrap(&mut self, bytes: &[u8]) -> Option<Vec<u8>> {
        if bytes.first().is_some_and(|b| b & 0xF8 == 0xF8) {
            let e = self.endpoint.as_mut()?;
            match e.receive(bytes, Transport::Message) {
                Ok(Received::Message(incoming)) => Some(e.accept(Instant::now(), incoming, PROXY).message),
                _ => {
                    self.failures += 1;
                    None
                }
            }
        } else {
            Some(bytes.to_vec())
        }
    }
}

/// `n` terminals, each on a socket of its own; SigComp ones name their
/// compartment by their port.
pub async fn make_terminals(n: usize, target: SocketAddr, sigcomp: bool) -> Result<Vec<SharedTerminal>, String> {
    let mut out = Vec::with_capacity(n);
    for index in 0..n {
        let socket = Rc::new(bind_loopback().await?);
        let port = local_port(&socket)?;
        let instance = format!("urn:uuid:00000000-0000-4000-8000-{port:012x}");
        let endpoint = if sigcomp { Some(terminal_endpoint()?) } else { None };
        out.push(Rc::new(RefCell::new(Terminal::new(index, socket, target, endpoint, instance)?)));
    }
    Ok(out)
}

/// A UDP socket on a free port of 127.0.0.1.
pub async fn bind_loopback() -> Result<UdpSocket, String> {
    UdpSocket::bind("127.0.0.1:0").await.map_err(|e| format!("binding a UDP socket on 127.0.0.1: {e}"))
}

/// The port `socket` is bound to.
fn local_port(socket: &UdpSocket) -> Result<u16, String> {
    socket.local_addr().map(|a| a.port()).map_err(|e| format!("a UDP socket's local address: {e}"))
}

/// One SIP message from `t` within `wait`, decompressed.
pub async fn receive_one(t: &SharedTerminal, wait: Duration) -> Option<Vec<u8>> {
    let socket = t.borrow().socket.clone();
    let mut buf = vec![0u8; 65536];
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let (n, _) = tokio::time::timeout_at(deadline, socket.recv_from(&mut buf)).await.ok()?.ok()?;
        if let Some(sip) = t.borrow_mut().unwrap(&buf[..n]) {
            return Some(sip);
        }
    }
}

pub fn status_of(sip: &[u8]) -> Option<u16> {
    Message::parse(sip).ok()?.status_code()
}

/// The `Authorization` line answering the `WWW-Authenticate` challenge of
/// a 401 to terminal `index`'s REGISTER (RFC 3261 §22.4, sigkit-loadgen's
/// digest); the realm is `domain` when the challenge names none.
fn answer_challenge(response: &[u8], domain: &str, index: usize) -> String {
    let header = Message::parse(response)
        .ok()
        .and_then(|m| {
            m.headers()
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("WWW-Authenticate"))
                .and_then(|h| h.value_str().ok())
                .map(str::to_string)
        })
        .unwrap_or_default();
    let mut challenge = auth::parse_digest(&header).unwrap_or_default();
    if challenge.realm.is_empty() {
        challenge.realm = domain.to_string();
    }
    let user = format!("user{index}");
    auth::authorization(
        false,
        &challenge,
        &user,
        PASSWORD,
        "REGISTER",
        &format!("sip:{domain}"),
        &format!("{index:08x}"),
    )
}

/// Registers every terminal (digest credentials when challenged, as
/// Kamailio does), in batches so the sockets' buffers hold the burst.
pub async fn register_all(terms: &[SharedTerminal], domain: &str) -> usize {
    let mut ok = 0;
    for batch in terms.chunks(100) {
        let mut todo: Vec<(SharedTerminal, Option<String>)> = batch.iter().map(|t| (t.clone(), None)).collect();
        for _round in 0..4 {
            for (t, credentials) in &todo {
                let (bytes, target, socket) = {
                    let mut tm = t.borrow_mut();
                    let sip = tm.register(domain, credentials.as_deref());
                    (tm.wire(&sip), tm.target, tm.socket.clone())
                };
                let _ = socket.send_to(&bytes, target).await;
            }
            let mut next = Vec::new();
            for (t, _) in todo {
                let Some(sip) = receive_one(&t, Duration::from_millis(1000)).await else {
                    next.push((t, None));
                    continue;
                };
                match status_of(&sip) {
                    Some(200..=299) => ok += 1,
                    Some(401) => {
                        let index = t.borrow().index;
                        next.push((t, Some(answer_challenge(&sip, domain, index))));
                    }
                    _ => next.push((t, None)),
                }
            }
            todo = next;
            if todo.is_empty() {
                break;
            }
        }
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 401 as Kamailio's `www_challenge` sends it.
    fn challenge(header: &str) -> Vec<u8> {
        format!(
            "SIP/2.0 401 Unauthorized\r\nVia: SIP/2.0/UDP 127.0.0.1:5062;branch=z9hG4bK1\r\n\
             From: <sip:user7@127.0.0.1>;tag=a\r\nTo: <sip:user7@127.0.0.1>;tag=b\r\nCall-ID: c\r\nCSeq: 1 REGISTER\r\n\
             WWW-Authenticate: {header}\r\nContent-Length: 0\r\n\r\n"
        )
        .into_bytes()
    }

    #[test]
    fn a_challenge_is_answered_with_the_users_digest() {
        let line = answer_challenge(&challenge("Digest realm=\"127.0.0.1\", nonce=\"abc123\""), "127.0.0.1", 7);
        let value = line.strip_prefix("Authorization: ").expect(&line);
        assert!(value.contains("username=\"user7\"") && value.contains("uri=\"sip:127.0.0.1\""), "{value}");
        assert!(auth::verify(value, PASSWORD, "REGISTER", Some("abc123")), "{value}");
        assert!(!auth::verify(value, "other", "REGISTER", Some("abc123")));
    }

    #[test]
    fn a_challenge_without_a_realm_takes_the_domain() {
        let line = answer_challenge(&challenge("Digest nonce=\"n1\""), "example.net", 3);
        let value = line.strip_prefix("Authorization: ").expect(&line);
        assert_eq!(auth::parse_digest(value).unwrap().realm, "example.net");
        assert!(auth::verify(value, PASSWORD, "REGISTER", Some("n1")));
    }
}
