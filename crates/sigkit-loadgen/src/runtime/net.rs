//! The run's transport: one UDP socket, or TCP connections whose streams
//! are cut into messages (plain SIP by Content-Length, SigComp by its
//! record marking).

use std::collections::HashMap;
use std::net::SocketAddr;

use sigcomp::wire::{Deframer, Frame};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

use crate::engine::Outbox;
use crate::sigcomp_layer::is_sigcomp_first_byte;

pub(super) enum Net {
    Udp(UdpSocket),
    Tcp(TcpNet),
}

pub(super) enum TcpEvent {
    Frame(SocketAddr, Vec<u8>),
    Connected(SocketAddr, OwnedWriteHalf),
    Closed(SocketAddr),
}

pub(super) struct TcpNet {
    pub(super) rx: mpsc::Receiver<TcpEvent>,
    pub(super) writers: HashMap<SocketAddr, OwnedWriteHalf>,
    /// A UAC's one connection (every message goes over it).
    pub(super) only: Option<SocketAddr>,
    pub(super) closed: u64,
}

/// Longest SIP message read from a TCP stream.
const MAX_TCP_MESSAGE: usize = 1 << 20;

/// Reads one TCP connection into frames. Its first byte tells SigComp
/// from plain SIP for the whole connection (RFC 5049 §4): SigComp
/// messages are taken apart by their record marking (RFC 3320 §4.2.2),
/// plain SIP messages by their Content-Length (RFC 3261 §18.3).
pub(super) async fn tcp_reader(peer: SocketAddr, mut read: tokio::net::tcp::OwnedReadHalf, tx: mpsc::Sender<TcpEvent>) {
    let mut buf: Vec<u8> = Vec::with_capacity(65536);
    let mut chunk = vec![0u8; 65536];
    let mut sigcomp: Option<Deframer> = None;
    let mut frames = Vec::new();
    let mut first = true;
    loop {
        let n = match read.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut data = &chunk[..n];
        if first {
            // CRLF keep-alives (RFC 5626 §3.5.1) may come before either.
            let Some(at) = data.iter().position(|b| !matches!(b, b'\r' | b'\n')) else { continue };
            data = &data[at..];
            first = false;
            if is_sigcomp_first_byte(data[0]) {
                sigcomp = Some(Deframer::new(MAX_TCP_MESSAGE));
            }
        }
        if let Some(deframer) = &mut sigcomp {
            deframer.push(data, &mut frames);
            for f in frames.drain(..) {
                let event = match f {
                    Frame::Message(m) => TcpEvent::Frame(peer, m),
                    // The stream is unusable (RFC 3320 §4.2.2).
                    Frame::FramingError => TcpEvent::Closed(peer),
                };
                let closed = matches!(event, TcpEvent::Closed(_));
                if tx.send(event).await.is_err() || closed {
                    return;
                }
            }
            continue;
        }
        buf.extend_from_slice(data);
        loop {
            // CRLF keep-alives (RFC 5626 §3.5.1) between messages.
            let lead = buf.iter().take_while(|b| **b == b'\r' || **b == b'\n').count();
            if lead > 0 {
                buf.drain(..lead);
            }
            match sigkit_sip::Message::parse_stream_frame(&buf) {
                Ok(Some(len)) => {
                    let frame: Vec<u8> = buf.drain(..len).collect();
                    if tx.send(TcpEvent::Frame(peer, frame)).await.is_err() {
                        return;
                    }
                }
                Ok(None) if buf.len() <= MAX_TCP_MESSAGE => break,
                // Unframeable: the stream is unusable (RFC 3261 §18.3).
                _ => {
                    let _ = tx.send(TcpEvent::Closed(peer)).await;
                    return;
                }
            }
        }
    }
    let _ = tx.send(TcpEvent::Closed(peer)).await;
}

impl Net {
    /// The next message into `buf` (65536 bytes, grown for a larger TCP
    /// frame): its length and sender.
    pub(super) async fn recv(&mut self, buf: &mut Vec<u8>) -> Option<(usize, SocketAddr)> {
        match self {
            Net::Udp(s) => s.recv_from(buf).await.ok(),
            Net::Tcp(t) => loop {
                match t.rx.recv().await {
                    Some(TcpEvent::Frame(from, data)) => return Some((copy_frame(buf, &data), from)),
                    Some(ev) => t.event(ev),
                    None => return std::future::pending().await,
                }
            },
        }
    }

    pub(super) fn try_recv(&mut self, buf: &mut Vec<u8>) -> Option<(usize, SocketAddr)> {
        match self {
            Net::Udp(s) => s.try_recv_from(buf).ok(),
            Net::Tcp(t) => loop {
                match t.rx.try_recv() {
                    Ok(TcpEvent::Frame(from, data)) => return Some((copy_frame(buf, &data), from)),
                    Ok(ev) => t.event(ev),
                    Err(_) => return None,
                }
            },
        }
    }

    pub(super) async fn send_all(&mut self, out: &Outbox) {
        match self {
            Net::Udp(s) => {
                for (to, bytes) in out.iter() {
                    // A full send buffer waits for room rather than
                    // dropping: losses are the system under test's, not
                    // the generator's.
                    match s.try_send_to(bytes, to) {
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            let _ = s.send_to(bytes, to).await;
                        }
                        _ => {}
                    }
                }
            }
            Net::Tcp(t) => {
                for (to, bytes) in out.iter() {
                    let key = t.only.unwrap_or(to);
                    if let Some(w) = t.writers.get_mut(&key) {
                        if w.write_all(bytes).await.is_err() {
                            t.writers.remove(&key);
                        }
                    }
                }
            }
        }
    }
}

fn copy_frame(buf: &mut Vec<u8>, data: &[u8]) -> usize {
    if data.len() > buf.len() {
        buf.resize(data.len(), 0);
    }
    buf[..data.len()].copy_from_slice(data);
    data.len()
}

impl TcpNet {
    pub(super) fn event(&mut self, ev: TcpEvent) {
        match ev {
            TcpEvent::Connected(a, w) => {
                let _ = w.as_ref().set_nodelay(true);
                self.writers.insert(a, w);
            }
            TcpEvent::Closed(a) => {
                self.writers.remove(&a);
                self.closed += 1;
            }
            TcpEvent::Frame(..) => {}
        }
    }
}

/// Socket buffers asked for (the kernel caps them at net.core.rmem_max
/// and wmem_max): bursts of a high call rate overflow the default 208 KiB,
/// and every message lost there costs a retransmission that the system
/// under test did not cause.
const SOCKET_BUFFER: usize = 4 << 20;

pub(super) fn bind_udp(addr: SocketAddr) -> std::io::Result<UdpSocket> {
    let domain = if addr.is_ipv4() { socket2::Domain::IPV4 } else { socket2::Domain::IPV6 };
    let s = socket2::Socket::new(domain, socket2::Type::DGRAM, Some(socket2::Protocol::UDP))?;
    let _ = s.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = s.set_send_buffer_size(SOCKET_BUFFER);
    s.bind(&addr.into())?;
    s.set_nonblocking(true)?;
    UdpSocket::from_std(s.into())
}
