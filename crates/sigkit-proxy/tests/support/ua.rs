//! A SIP terminal for the tests: a user agent that speaks SigComp (or plain
//! SIP) to the proxy over real UDP or TCP sockets on 127.0.0.1, driven by
//! the sans-IO SigComp endpoint. It registers with digest authentication
//! (RFC 2617 as RFC 3261 §22.4 uses it), places and answers calls,
//! re-INVITEs and hangs up, retransmitting over UDP (RFC 3261 §17.1.1.2
//! Timer A, §17.1.2.2 Timer E), sends MESSAGE and OPTIONS.
//!
//! Like a SigComp terminal of RFC 5049, it sends requests outside a dialog
//! to its outbound proxy URI as a preloaded Route (RFC 3261 §8.1.2), and
//! keeps one compartment per remote application identifier (RFC 5049
//! §6.1): for a request it sends, the `sigcomp-id` of the URI it sends it
//! to, else that URI's host; for a request it receives, the top Via's
//! `sigcomp-id`, else its sent-by; a response goes with its request.

// A test fails by panicking: helpers outside #[test] functions unwrap too.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use md5::{Digest, Md5};
use sigcomp::wire::{frame_for_stream, Deframer, Frame};
use sigcomp::{CompartmentId, Params, Transport};
use sigcomp_compress::{Config, Endpoint, EndpointConfig, Mechanism, Received};
use sigkit_sip::compartment::{identifier_key, next_hop_id};
use sigkit_sip::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UdpSocket};

const T1: Duration = Duration::from_millis(500);

enum Io {
    Udp(UdpSocket),
    Tcp { stream: TcpStream, deframer: Deframer, plain: Vec<u8> },
}

pub struct Terminal {
    pub user: String,
    pub domain: String,
    pub sigcomp: bool,
    tcp: bool,
    local: SocketAddr,
    proxy: SocketAddr,
    endpoint: Endpoint,
    io: Io,
    instance: String,
    counter: u64,
    /// Received messages not yet consumed, in order.
    inbox: Vec<Vec<u8>>,
    /// SigComp messages this terminal sent, and NACKs it received.
    pub sent_sigcomp: usize,
    pub nacks: usize,
    pub resends: usize,
    /// Answer the first SigComp message from the proxy with a
    /// STATE_NOT_FOUND NACK for the SIP/SDP dictionary (RFC 4077 §3.1), as
    /// a terminal whose decompressor lacks it would, instead of
    /// decompressing it.
    pub nack_first: bool,
    /// NACKs this terminal sent.
    pub nacks_sent: usize,
    /// Answer a message from the proxy that fails to decompress with the
    /// NACK of RFC 4077, as a terminal does, instead of failing the test.
    pub nack_failures: bool,
    /// The outbound proxy URI, the preloaded Route of requests outside a
    /// dialog.
    pub outbound: String,
    /// Compartments by remote application identifier (RFC 5049 §6.1).
    compartments: HashMap<String, CompartmentId>,
    /// The identifier each request sent was filed under, by Via branch:
    /// its responses go there.
    sent_under: HashMap<String, String>,
    /// SigComp messages decompressed that uploaded bytecode, and that named
    /// a state instead.
    pub uploads_received: usize,
    pub state_references_received: usize,
    /// The ACK sent for each 2xx to INVITE, by Call-ID and CSeq: sent again
    /// for each retransmission of that 2xx (RFC 3261 §13.2.2.4), and how
    /// often that happened.
    acks: HashMap<(String, u32), Vec<u8>>,
    pub acks_resent: usize,
    /// ACKs received, by Call-ID.
    pub acks_received: Vec<String>,
    /// [`Terminal::invite`] keeps the ACK for [`Terminal::send_ack`]
    /// instead of sending it.
    pub hold_ack: bool,
}

/// One side's view of a dialog (RFC 3261 §12).
#[derive(Debug, Clone)]
pub struct Dialog {
    pub call_id: String,
    pub local_tag: String,
    pub remote_tag: String,
    pub local_uri: String,
    pub remote_uri: String,
    pub remote_target: String,
    pub route_set: Vec<String>,
    pub cseq: u32,
}

fn md5_hex(s: &str) -> String {
    Md5::digest(s.as_bytes()).iter().map(|b| format!("{b:02x}")).collect()
}

/// A quoted parameter of a challenge: `name="value"`.
fn challenge_param<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    let at = header.find(&format!("{name}=\""))? + name.len() + 2;
    let end = header[at..].find('"')?;
    Some(&header[at..at + end])
}

impl Terminal {
    /// A terminal at a fresh local port, reaching the proxy at `proxy`.
    pub async fn new(user: &str, proxy: SocketAddr, tcp: bool, sigcomp: bool) -> Terminal {
        let (io, local) = if tcp {
            let stream = TcpStream::connect(proxy).await.expect("connect to the proxy");
            stream.set_nodelay(true).unwrap();
            let local = stream.local_addr().unwrap();
            (Io::Tcp { stream, deframer: Deframer::new(1 << 20), plain: Vec::new() }, local)
        } else {
            let s = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let local = s.local_addr().unwrap();
            (Io::Udp(s), local)
        };
        let endpoint = new_endpoint(tcp);
        Terminal {
            user: user.to_string(),
            domain: "127.0.0.1".into(),
            sigcomp,
            tcp,
            local,
            proxy,
            endpoint,
            io,
            instance: format!("urn:uuid:00000000-0000-4000-8000-{:012x}", local.port()),
            counter: 0,
            inbox: Vec::new(),
            sent_sigcomp: 0,
            nacks: 0,
            resends: 0,
            nack_first: false,
            nacks_sent: 0,
            nack_failures: false,
            outbound: outbound_uri(proxy, tcp, sigcomp, None),
            compartments: HashMap::new(),
            sent_under: HashMap::new(),
            uploads_received: 0,
            state_references_received: 0,
            acks: HashMap::new(),
            acks_resent: 0,
            acks_received: Vec::new(),
            hold_ack: false,
        }
    }

    /// Forgets every SigComp state and compartment, as a terminal that
    /// restarted with the same identity and address does.
    pub fn lose_sigcomp_state(&mut self) {
        self.endpoint = new_endpoint(self.tcp);
        self.compartments.clear();
        self.sent_under.clear();
    }

    /// Puts the proxy's `sigcomp-id` in the outbound proxy URI, as for a
    /// terminal configured with it (RFC 5049 §6.1).
    pub fn outbound_with_id(&mut self, proxy_sigcomp_id: &str) {
        self.outbound = outbound_uri(self.proxy, self.tcp, self.sigcomp, Some(proxy_sigcomp_id));
    }

    /// The remote application identifiers this terminal has compartments
    /// for.
    pub fn compartment_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.compartments.keys().cloned().collect();
        names.sort();
        names
    }

    /// The compartment of remote application identifier `key`.
    fn compartment(&mut self, key: &str) -> CompartmentId {
        let next = CompartmentId(self.compartments.len() as u64 + 1);
        *self.compartments.entry(key.to_string()).or_insert(next)
    }

    /// Moves the terminal to another proxy (failover): a new connection
    /// for TCP; the SigComp state it holds for "the proxy" stays.
    pub async fn switch_proxy(&mut self, proxy: SocketAddr) {
        self.proxy = proxy;
        let id = self.outbound.split_once("sigcomp-id=").map(|(_, id)| identifier_key(id.trim_end_matches('>')));
        self.outbound = outbound_uri(proxy, self.tcp, self.sigcomp, id.as_deref());
        if self.tcp {
            let stream = TcpStream::connect(proxy).await.expect("connect to the proxy");
            stream.set_nodelay(true).unwrap();
            self.local = stream.local_addr().unwrap();
            self.io = Io::Tcp { stream, deframer: Deframer::new(1 << 20), plain: Vec::new() };
        }
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn transport_token(&self) -> &'static str {
        if self.tcp {
            "TCP"
        } else {
            "UDP"
        }
    }

    fn next(&mut self) -> u64 {
        self.counter += 1;
        self.counter
    }

    fn via(&mut self) -> String {
        let n = self.next();
        let mut v = format!(
            "SIP/2.0/{} 127.0.0.1:{};branch=z9hG4bK{}x{n};rport",
            self.transport_token(),
            self.local.port(),
            self.local.port()
        );
        if self.sigcomp {
            v.push_str(&format!(";comp=sigcomp;sigcomp-id=\"<{}>\"", self.instance));
        }
        v
    }

    pub fn contact(&self) -> String {
        let mut c = format!("<sip:{}@127.0.0.1:{}", self.user, self.local.port());
        if self.tcp {
            c.push_str(";transport=tcp");
        }
        if self.sigcomp {
            c.push_str(";comp=sigcomp");
        }
        c.push_str(&format!(">;+sip.instance=\"<{}>\"", self.instance));
        c
    }

    async fn write(&mut self, bytes: &[u8]) {
        match &mut self.io {
            Io::Udp(s) => {
                s.send_to(bytes, self.proxy).await.unwrap();
            }
            Io::Tcp { stream, .. } => {
                stream.write_all(bytes).await.unwrap();
            }
        }
    }

    /// Sends one SIP message to the proxy, compressed if SigComp is on, in
    /// the compartment of its remote application (RFC 5049 §6.1).
    pub async fn send(&mut self, sip: &[u8]) {
        if !self.sigcomp {
            return self.write(sip).await;
        }
        let msg = Message::parse(sip).expect("the terminal sends SIP");
        let key = if msg.is_request() {
            // "Outgoing requests": the URI the request is sent to.
            let key = next_hop_id(&msg).expect("a SIP URI to send to").key();
            let branch = msg.top_via().ok().and_then(|v| v.branch()).unwrap_or("").to_string();
            self.sent_under.insert(branch, key.clone());
            key
        } else {
            // "Outgoing responses": the request's identifier, its Via's.
            incoming_request_key(&msg)
        };
        let compartment = self.compartment(&key);
        let out = self.endpoint.compress(Instant::now(), compartment, sip).expect("compress");
        self.sent_sigcomp += 1;
        self.write_sigcomp(&out.message).await;
    }

    /// Reads what arrives within `wait` into the inbox (SigComp
    /// decompressed and accepted; NACKs acted on).
    async fn pump(&mut self, wait: Duration) -> bool {
        let mut buf = vec![0u8; 65536];
        let mut got = Vec::new();
        match &mut self.io {
            Io::Udp(s) => match tokio::time::timeout(wait, s.recv_from(&mut buf)).await {
                Ok(Ok((n, _))) => got.push(buf[..n].to_vec()),
                _ => return false,
            },
            Io::Tcp { stream, deframer, plain } => {
                let n = match tokio::time::timeout(wait, stream.read(&mut buf)).await {
                    Ok(Ok(n)) if n > 0 => n,
                    _ => return false,
                };
                if self.sigcomp {
                    let mut frames = Vec::new();
                    deframer.push(&buf[..n], &mut frames);
                    for f in frames {
                        if let Frame::Message(m) = f {
                            got.push(m);
                        }
                    }
                } else {
                    plain.extend_from_slice(&buf[..n]);
                    while let Ok(Some(len)) = Message::parse_stream_frame(plain) {
                        got.push(plain.drain(..len).collect());
                    }
                }
            }
        }
        let transport = if self.tcp { Transport::Stream } else { Transport::Message };
        for bytes in got {
            let sigcomp = bytes.first().is_some_and(|b| b & 0xF8 == 0xF8);
            if sigcomp && self.nack_first && self.nacks_sent == 0 && sigcomp::Nack::parse(&bytes).is_err() {
                use sha1::Digest as _;
                let nack = sigcomp::Nack {
                    reason: sigcomp::Reason::StateNotFound,
                    opcode: 0,
                    pc: 0,
                    message_sha1: sha1::Sha1::digest(&bytes).into(),
                    details: sigcomp::dict::SIP_SDP_ID[..6].to_vec(),
                    returned_feedback: None,
                };
                self.nacks_sent += 1;
                self.write_sigcomp(&nack.emit()).await;
                continue;
            }
            let sip = if sigcomp {
                match self.endpoint.receive(&bytes, transport) {
                    Ok(Received::Message(incoming)) => {
                        if incoming.uploaded_bytecode() {
                            self.uploads_received += 1;
                        } else {
                            self.state_references_received += 1;
                        }
                        let Ok(msg) = Message::parse(incoming.message()) else {
                            let _ = self.endpoint.discard(incoming);
                            continue;
                        };
                        let key = if msg.is_request() {
                            incoming_request_key(&msg)
                        } else {
                            // "Incoming responses": the request's identifier.
                            let branch = msg.top_via().ok().and_then(|v| v.branch()).unwrap_or("");
                            self.sent_under.get(branch).cloned().unwrap_or_else(|| incoming_request_key(&msg))
                        };
                        let compartment = self.compartment(&key);
                        self.endpoint.accept(Instant::now(), incoming, compartment).message
                    }
                    Ok(Received::Nack(_)) => {
                        self.nacks += 1;
                        continue;
                    }
                    Err(e) if self.nack_failures => {
                        if let Some(nack) = e.nack {
                            self.nacks_sent += 1;
                            self.write_sigcomp(&nack).await;
                        }
                        continue;
                    }
                    Err(e) => panic!("{}: the proxy's message failed to decompress: {e}", self.user),
                }
            } else {
                bytes
            };
            if let Ok(msg) = Message::parse(&sip) {
                if msg.method() == Some("ACK") {
                    self.acks_received.push(msg.call_id().unwrap_or("").to_string());
                }
                // A 2xx to INVITE again: its ACK again (RFC 3261
                // §13.2.2.4), compressed anew.
                let again = msg
                    .status_code()
                    .filter(|c| (200..300).contains(c))
                    .and_then(|_| msg.cseq().ok().filter(|c| c.method == "INVITE"))
                    .and_then(|c| self.acks.get(&(msg.call_id().unwrap_or("").to_string(), c.number)).cloned());
                if let Some(ack) = again {
                    self.acks_resent += 1;
                    self.send(&ack).await;
                    continue;
                }
            }
            self.inbox.push(sip);
        }
        true
    }

    /// Writes a SigComp message (framed over TCP).
    async fn write_sigcomp(&mut self, message: &[u8]) {
        if self.tcp {
            let mut framed = Vec::new();
            frame_for_stream(message, &mut framed);
            self.write(&framed).await;
        } else {
            self.write(message).await;
        }
    }

    /// Forgets every received message not yet consumed.
    pub fn clear_inbox(&mut self) {
        self.inbox.clear();
    }

    /// Reads for `wait` and returns how many received messages match
    /// `want` (they stay unconsumed).
    pub async fn count_for(&mut self, wait: Duration, want: impl Fn(&Message<'_>) -> bool) -> usize {
        let end = Instant::now() + wait;
        while let Some(left) = end.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()) {
            self.pump(left).await;
        }
        self.inbox.iter().filter(|m| Message::parse(m).is_ok_and(|m| want(&m))).count()
    }

    /// The next received message matching `want`, retransmitting
    /// `resend` every T1 (doubling) while none comes (UDP only; a NACK
    /// also triggers a resend, compressed anew).
    pub async fn expect(
        &mut self,
        what: &str,
        resend: Option<&[u8]>,
        want: impl Fn(&Message<'_>) -> bool,
    ) -> Result<Vec<u8>, String> {
        self.expect_resending(what, resend, false, want).await
    }

    /// [`Terminal::expect`], resending over TCP too if `over_tcp`.
    async fn expect_resending(
        &mut self,
        what: &str,
        resend: Option<&[u8]>,
        over_tcp: bool,
        want: impl Fn(&Message<'_>) -> bool,
    ) -> Result<Vec<u8>, String> {
        let deadline = Instant::now() + Duration::from_secs(16);
        let mut interval = T1;
        let mut next_resend = Instant::now() + interval;
        loop {
            if let Some(i) = self.inbox.iter().position(|m| Message::parse(m).is_ok_and(|m| want(&m))) {
                return Ok(self.inbox.remove(i));
            }
            let nacks = self.nacks;
            let now = Instant::now();
            if now >= deadline {
                let seen: Vec<String> = self
                    .inbox
                    .iter()
                    .map(|m| String::from_utf8_lossy(&m[..m.len().min(60)]).lines().next().unwrap_or("").to_string())
                    .collect();
                return Err(format!("{}: no {what} (unconsumed: {seen:?})", self.user));
            }
            self.pump(next_resend.saturating_duration_since(now).min(Duration::from_millis(100))).await;
            if let Some(r) = resend {
                if self.nacks > nacks || ((over_tcp || !self.tcp) && Instant::now() >= next_resend) {
                    self.resends += 1;
                    self.send(r).await;
                    interval = (interval * 2).min(Duration::from_secs(4));
                    next_resend = Instant::now() + interval;
                }
            }
        }
    }

    /// A request outside a dialog, routed through the outbound proxy: `to`
    /// is the To header value, `ids` the Call-ID and From tag.
    pub fn request(&mut self, method: &str, uri: &str, to: &str, ids: (&str, &str), cseq: u32, extra: &str) -> Vec<u8> {
        self.request_with_body(method, uri, to, ids, cseq, extra, "")
    }

    #[allow(clippy::too_many_arguments)]
    fn request_with_body(
        &mut self,
        method: &str,
        uri: &str,
        to: &str,
        ids: (&str, &str),
        cseq: u32,
        extra: &str,
        body: &str,
    ) -> Vec<u8> {
        let (call_id, from_tag) = ids;
        let via = self.via();
        let content_type = if body.is_empty() { "" } else { "Content-Type: text/plain\r\n" };
        format!(
            "{method} {uri} SIP/2.0\r\nVia: {via}\r\nMax-Forwards: 70\r\nRoute: <{}>\r\nFrom: <sip:{}@{}>;tag={from_tag}\r\n\
             To: {to}\r\nCall-ID: {call_id}\r\nCSeq: {cseq} {method}\r\nContact: {}\r\n{extra}{content_type}\
             Content-Length: {}\r\n\r\n{body}",
            self.outbound,
            self.user,
            self.domain,
            self.contact(),
            body.len()
        )
        .into_bytes()
    }

    /// REGISTER with digest authentication (challenge, then credentials).
    pub async fn register(&mut self, password: &str, expires: u32) -> Result<(), String> {
        let n = self.next();
        let call_id = format!("reg-{}-{n}@127.0.0.1", self.local.port());
        let tag = format!("r{n}");
        let uri = format!("sip:{}", self.domain);
        let to = format!("<sip:{}@{}>", self.user, self.domain);
        let extra = format!("Expires: {expires}\r\nSupported: path\r\n");
        let first = self.request("REGISTER", &uri, &to, (&call_id, &tag), 1, &extra);
        self.send(&first).await;
        let challenge =
            self.expect("401 to REGISTER", Some(&first), |m| m.status_code().is_some_and(|c| c >= 200)).await?;
        let challenge = String::from_utf8_lossy(&challenge).to_string();
        let code = Message::parse(challenge.as_bytes()).map_err(|e| e.to_string())?.status_code();
        if code == Some(200) {
            return Ok(());
        }
        let header = challenge
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("www-authenticate:"))
            .ok_or_else(|| format!("{}: REGISTER answered {code:?} without a challenge", self.user))?;
        let realm = challenge_param(header, "realm").unwrap_or(&self.domain).to_string();
        let nonce = challenge_param(header, "nonce").ok_or("no nonce")?.to_string();
        let ha1 = md5_hex(&format!("{}:{realm}:{password}", self.user));
        let ha2 = md5_hex(&format!("REGISTER:{uri}"));
        let response = md5_hex(&format!("{ha1}:{nonce}:{ha2}"));
        let auth = format!(
            "Authorization: Digest username=\"{}\", realm=\"{realm}\", nonce=\"{nonce}\", uri=\"{uri}\", response=\"{response}\", algorithm=MD5\r\n",
            self.user
        );
        let second = self.request("REGISTER", &uri, &to, (&call_id, &tag), 2, &format!("{extra}{auth}"));
        self.send(&second).await;
        let answer = self
            .expect("final response to the authenticated REGISTER", Some(&second), |m| {
                m.status_code().is_some_and(|c| c >= 200) && m.cseq().is_ok_and(|c| c.number == 2)
            })
            .await?;
        let code = Message::parse(&answer).map_err(|e| e.to_string())?.status_code();
        if code == Some(200) {
            Ok(())
        } else {
            Err(format!("{}: REGISTER with credentials answered {code:?}", self.user))
        }
    }

    /// INVITE `target` (a SIP URI): waits for the 2xx, sends the ACK.
    pub async fn invite(&mut self, target: &str) -> Result<Dialog, String> {
        let n = self.next();
        let call_id = format!("call-{}-{n}@127.0.0.1", self.local.port());
        let tag = format!("c{n}");
        let to = format!("<{target}>");
        let invite = self.request("INVITE", target, &to, (&call_id, &tag), 1, "");
        self.send(&invite).await;
        let ok = self
            .expect("2xx to INVITE", Some(&invite), |m| {
                m.status_code().is_some_and(|c| c >= 200) && m.cseq().is_ok_and(|c| c.method == "INVITE")
            })
            .await?;
        let msg = Message::parse(&ok).map_err(|e| e.to_string())?;
        if !msg.status_code().is_some_and(|c| (200..300).contains(&c)) {
            return Err(format!("{}: INVITE answered {:?}", self.user, msg.status_code()));
        }
        let mut route_set: Vec<String> =
            msg.record_routes().map_err(|e| e.to_string())?.iter().map(|r| r.text.to_string()).collect();
        route_set.reverse();
        let remote_target = contact_uri(&msg).unwrap_or_else(|| target.to_string());
        let dialog = Dialog {
            call_id,
            local_tag: tag,
            remote_tag: msg.to().ok().and_then(|t| t.tag()).unwrap_or("").to_string(),
            local_uri: format!("sip:{}@{}", self.user, self.domain),
            remote_uri: target.to_string(),
            remote_target,
            route_set,
            cseq: 1,
        };
        let ack = self.in_dialog(&dialog, "ACK", 1);
        self.acks.insert((dialog.call_id.clone(), 1), ack.clone());
        if !self.hold_ack {
            self.send(&ack).await;
        }
        Ok(dialog)
    }

    /// Sends the ACK [`Terminal::invite`] held.
    pub async fn send_ack(&mut self, d: &Dialog) {
        let ack = self.acks.get(&(d.call_id.clone(), 1)).cloned().expect("an ACK held for the dialog");
        self.send(&ack).await;
    }

    fn in_dialog(&mut self, d: &Dialog, method: &str, cseq: u32) -> Vec<u8> {
        let via = self.via();
        let routes: String = d.route_set.iter().map(|r| format!("Route: {r}\r\n")).collect();
        format!(
            "{method} {} SIP/2.0\r\nVia: {via}\r\nMax-Forwards: 70\r\n{routes}From: <{}>;tag={}\r\nTo: <{}>;tag={}\r\n\
             Call-ID: {}\r\nCSeq: {cseq} {method}\r\nContact: {}\r\nContent-Length: 0\r\n\r\n",
            d.remote_target,
            d.local_uri,
            d.local_tag,
            d.remote_uri,
            d.remote_tag,
            d.call_id,
            self.contact()
        )
        .into_bytes()
    }

    /// A request within the dialog, waiting for its final response (and
    /// acknowledging it for a re-INVITE).
    pub async fn in_dialog_request(&mut self, d: &mut Dialog, method: &str) -> Result<u16, String> {
        d.cseq += 1;
        let cseq = d.cseq;
        let req = self.in_dialog(d, method, cseq);
        self.send(&req).await;
        let answer = self
            .expect(&format!("final response to {method}"), Some(&req), |m| {
                m.status_code().is_some_and(|c| c >= 200) && m.cseq().is_ok_and(|c| c.number == cseq)
            })
            .await?;
        let code = Message::parse(&answer).map_err(|e| e.to_string())?.status_code().unwrap_or(0);
        if method == "INVITE" {
            let ack = self.in_dialog(d, "ACK", cseq);
            self.acks.insert((d.call_id.clone(), cseq), ack.clone());
            self.send(&ack).await;
        }
        Ok(code)
    }

    /// MESSAGE with `text` to `uri` outside any dialog (RFC 3428); the
    /// final response's code.
    pub async fn message(&mut self, uri: &str, text: &str) -> Result<u16, String> {
        self.outside_dialog("MESSAGE", uri, text).await
    }

    /// A `method` request with `body` to `uri` outside any dialog, sent
    /// again until its final response comes; that response's code.
    async fn outside_dialog(&mut self, method: &str, uri: &str, body: &str) -> Result<u16, String> {
        let n = self.next();
        let call_id = format!("{}-{}-{n}@127.0.0.1", method.to_ascii_lowercase(), self.local.port());
        let tag = format!("{}{n}", method.to_ascii_lowercase());
        let req = self.request_with_body(method, uri, &format!("<{uri}>"), (&call_id, &tag), 1, "", body);
        self.send(&req).await;
        let answer = self
            .expect(&format!("final response to {method}"), Some(&req), |m| {
                m.status_code().is_some_and(|c| c >= 200) && m.call_id().is_ok_and(|c| c == call_id)
            })
            .await?;
        Ok(Message::parse(&answer).map_err(|e| e.to_string())?.status_code().unwrap_or(0))
    }

    /// Waits for a request of `method` outside a dialog and answers 200.
    pub async fn answer_request(&mut self, method: &str) -> Result<(), String> {
        let req = self
            .expect(method, None, |m| m.method() == Some(method) && !m.to().is_ok_and(|t| t.tag().is_some()))
            .await?;
        let msg = Message::parse(&req).map_err(|e| e.to_string())?;
        let tag = format!("q{}", self.next());
        let ok = sigkit_sip::proxy::build_response(&msg, 200, "OK", Some(&tag), &[]).map_err(|e| e.to_string())?;
        self.send(&ok).await;
        Ok(())
    }

    /// OPTIONS to `uri` outside any dialog; the final response's code.
    pub async fn options(&mut self, uri: &str) -> Result<u16, String> {
        self.outside_dialog("OPTIONS", uri, "").await
    }

    /// Waits for an INVITE, answers 180 and 200, waits for the ACK.
    pub async fn answer(&mut self) -> Result<Dialog, String> {
        let invite = self.expect("INVITE", None, |m| m.method() == Some("INVITE")).await?;
        let msg = Message::parse(&invite).map_err(|e| e.to_string())?;
        let tag = format!("a{}", self.next());
        let contact = self.contact();
        let rr: Vec<String> =
            msg.record_routes().map_err(|e| e.to_string())?.iter().map(|r| r.text.to_string()).collect();
        let mut extra: Vec<(&str, &str)> = vec![("Contact", &contact)];
        for r in &rr {
            extra.push(("Record-Route", r));
        }
        let ringing =
            sigkit_sip::proxy::build_response(&msg, 180, "Ringing", Some(&tag), &extra).map_err(|e| e.to_string())?;
        self.send(&ringing).await;
        let ok = sigkit_sip::proxy::build_response(&msg, 200, "OK", Some(&tag), &extra).map_err(|e| e.to_string())?;
        self.send(&ok).await;
        let dialog = Dialog {
            call_id: msg.call_id().map_err(|e| e.to_string())?.to_string(),
            local_tag: tag,
            remote_tag: msg.from().ok().and_then(|f| f.tag()).unwrap_or("").to_string(),
            local_uri: msg.to().ok().and_then(|t| t.sip_uri().ok()).map(|u| u.text.to_string()).unwrap_or_default(),
            remote_uri: msg.from().ok().and_then(|f| f.sip_uri().ok()).map(|u| u.text.to_string()).unwrap_or_default(),
            remote_target: contact_uri(&msg).unwrap_or_default(),
            route_set: rr,
            cseq: 0,
        };
        let call_id = dialog.call_id.clone();
        // RFC 3261 §13.3.1.4: the 2xx is sent again until the ACK comes,
        // over a reliable transport too (there may be UDP hops between).
        let ack = |m: &Message<'_>| m.method() == Some("ACK") && m.call_id().is_ok_and(|c| c == call_id);
        self.expect_resending("ACK", Some(&ok), true, ack).await?;
        Ok(dialog)
    }

    /// Waits for a request of `method` in `d` and answers 200.
    pub async fn answer_in_dialog(&mut self, d: &Dialog, method: &str) -> Result<(), String> {
        let call_id = d.call_id.clone();
        let req = self
            .expect(method, None, |m| m.method() == Some(method) && m.call_id().is_ok_and(|c| c == call_id))
            .await?;
        let msg = Message::parse(&req).map_err(|e| e.to_string())?;
        let ok = sigkit_sip::proxy::build_response(&msg, 200, "OK", None, &[]).map_err(|e| e.to_string())?;
        self.send(&ok).await;
        Ok(())
    }
}

fn contact_uri(msg: &Message<'_>) -> Option<String> {
    match msg.contacts().ok()? {
        sigkit_sip::Contacts::List(l) => l.first().and_then(|c| c.sip_uri().ok()).map(|u| u.text.to_string()),
        sigkit_sip::Contacts::Star => None,
    }
}

/// The outbound proxy URI of a terminal of `proxy` (with `comp=sigcomp` for
/// a SigComp terminal, RFC 3486 §5; with the proxy's `sigcomp-id` if
/// given).
fn outbound_uri(proxy: SocketAddr, tcp: bool, sigcomp: bool, sigcomp_id: Option<&str>) -> String {
    let mut uri = format!("sip:{proxy};lr");
    if tcp {
        uri.push_str(";transport=tcp");
    }
    if sigcomp {
        uri.push_str(";comp=sigcomp");
    }
    if let Some(id) = sigcomp_id {
        uri.push_str(";sigcomp-id=");
        uri.push_str(&identifier_key(id).replace(':', "%3a"));
    }
    uri
}

/// The remote application identifier of an incoming request, and of the
/// response to it (RFC 5049 §6.1): the top Via's `sigcomp-id`, else its
/// sent-by.
fn incoming_request_key(msg: &Message<'_>) -> String {
    let Ok(via) = msg.top_via() else { return String::new() };
    match via.sigcomp_id() {
        Some(id) => format!("id:{}", identifier_key(id)),
        None => format!("sent-by:{}:{:?}", via.host, via.port),
    }
}

/// The terminal's SigComp endpoint: DMS 8192, SMS 8192, 16 cycles per
/// bit, the dynamic mechanism, every message checked by a model run.
fn new_endpoint(tcp: bool) -> Endpoint {
    let params = Params { dms: 8192, sms: 8192, cpb: 16, version: 2 };
    let transport = if tcp { Transport::Stream } else { Transport::Message };
    let config = Config { mechanism: Mechanism::Dynamic, transport, verify: true, ..Config::default() };
    Endpoint::new(EndpointConfig::new(params, params, config)).unwrap()
}
