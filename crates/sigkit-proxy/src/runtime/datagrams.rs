//! UDP datagrams in batches: one system call reads several (`recvmmsg`
//! on Linux, with UDP GRO, through quinn-udp, which falls back to one
//! datagram a call where the system has neither) and one sends several
//! (`sendmmsg` on Linux, through rustix; elsewhere one `sendto` each).
//! Datagrams keep their order both ways: a batch is read and handed on in
//! the order the kernel queued it, and written in the order given.

use std::io::{self, IoSliceMut};
use std::net::SocketAddr;

use quinn_udp::{RecvMeta, UdpSocketState};
use tokio::io::Interest;
use tokio::net::UdpSocket;

/// Datagrams one read takes at most (quinn-udp's batch: 32 where
/// `recvmmsg` exists, else 1).
pub(super) const RECV_BATCH: usize = quinn_udp::BATCH_SIZE;

/// Datagrams one `sendmmsg` takes at most.
pub(super) const SEND_BATCH: usize = 32;

/// A socket's receiving side, with its buffers: [`RECV_BATCH`] of
/// `max_message` bytes each (with GRO, one buffer may hold several
/// datagrams of one source, cut at [`RecvMeta::stride`]).
pub(super) struct BatchReceiver {
    state: UdpSocketState,
    buffers: Vec<Vec<u8>>,
    meta: Vec<RecvMeta>,
}

impl BatchReceiver {
    /// Prepares `socket` for batched reads. quinn-udp turns on the ancillary
    /// data it reads and forbids IP fragmentation, which a QUIC stack wants
    /// and SIP does not: a SIP message over UDP may be larger than the path
    /// MTU (RFC 3261 §18.1.1), so the socket's setting is put back.
    pub(super) fn new(socket: &UdpSocket, max_message: usize) -> io::Result<BatchReceiver> {
        let fragmentation = Fragmentation::of(socket);
        let state = UdpSocketState::new(socket.into())?;
        fragmentation.restore(socket);
        Ok(BatchReceiver {
            state,
            buffers: (0..RECV_BATCH).map(|_| vec![0u8; max_message]).collect(),
            meta: vec![RecvMeta::default(); RECV_BATCH],
        })
    }

    /// Waits for datagrams and reads as many as are queued, up to a batch:
    /// each datagram's bytes and source, in the order they arrived.
    pub(super) async fn recv<'a>(
        &'a mut self,
        socket: &UdpSocket,
    ) -> io::Result<impl Iterator<Item = (&'a [u8], SocketAddr)> + 'a> {
        let count = loop {
            socket.readable().await?;
            let mut slices: Vec<IoSliceMut<'_>> = self.buffers.iter_mut().map(|b| IoSliceMut::new(b)).collect();
            match socket.try_io(Interest::READABLE, || self.state.recv(socket.into(), &mut slices, &mut self.meta)) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Err(e),
            }
        };
        Ok(self.buffers.iter().zip(&self.meta).take(count).flat_map(|(buf, meta)| {
            let stride = meta.stride.max(1);
            buf[..meta.len.min(buf.len())].chunks(stride).map(move |d| (d, meta.addr))
        }))
    }
}

/// A socket's path MTU discovery setting, as the system left it.
struct Fragmentation {
    #[cfg(target_os = "linux")]
    v4: Option<rustix::net::sockopt::Ipv4PathMtuDiscovery>,
    #[cfg(target_os = "linux")]
    v6: Option<rustix::net::sockopt::Ipv6PathMtuDiscovery>,
}

impl Fragmentation {
    fn of(socket: &UdpSocket) -> Fragmentation {
        #[cfg(target_os = "linux")]
        {
            use rustix::net::sockopt::{ip_mtu_discover, ipv6_mtu_discover};
            Fragmentation { v4: ip_mtu_discover(socket).ok(), v6: ipv6_mtu_discover(socket).ok() }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = socket;
            Fragmentation {}
        }
    }

    fn restore(&self, socket: &UdpSocket) {
        #[cfg(target_os = "linux")]
        {
            use rustix::net::sockopt::{set_ip_mtu_discover, set_ipv6_mtu_discover};
            if let Some(v) = self.v4 {
                if let Err(e) = set_ip_mtu_discover(socket, v) {
                    tracing::debug!(error = %e, "IP_MTU_DISCOVER not restored");
                }
            }
            if let Some(v) = self.v6 {
                if let Err(e) = set_ipv6_mtu_discover(socket, v) {
                    tracing::debug!(error = %e, "IPV6_MTU_DISCOVER not restored");
                }
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = socket;
    }
}

/// Sends `datagrams` (destination, bytes) on `socket` in order, as few
/// system calls as the batch size allows. A datagram the system refuses
/// (the destination unreachable, too large) is logged and skipped; the
/// rest still go.
pub(super) async fn send_all(socket: &UdpSocket, datagrams: &[(SocketAddr, &[u8])]) {
    let mut rest = datagrams;
    while let Some(&(to, _)) = rest.first() {
        let chunk = &rest[..rest.len().min(SEND_BATCH)];
        let sent = loop {
            if let Err(e) = socket.writable().await {
                break Err(e);
            }
            match socket.try_io(Interest::WRITABLE, || send_some(socket, chunk)) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                r => break r,
            }
        };
        match sent {
            Ok(n) => rest = &rest[n.max(1)..],
            Err(e) => {
                tracing::warn!(%to, error = %e, "send failed");
                rest = &rest[1..];
            }
        }
    }
}

/// One `sendmmsg`: how many of `chunk`'s first datagrams went (at least
/// one, or the first one's error).
#[cfg(target_os = "linux")]
fn send_some(socket: &UdpSocket, chunk: &[(SocketAddr, &[u8])]) -> io::Result<usize> {
    use rustix::net::addr::SocketAddrArg;
    use rustix::net::{sendmmsg, MMsgHdr, SendAncillaryBuffer, SendFlags};
    let addrs: Vec<_> = chunk.iter().map(|(to, _)| to.as_any()).collect();
    let iovs: Vec<[io::IoSlice<'_>; 1]> = chunk.iter().map(|(_, bytes)| [io::IoSlice::new(bytes)]).collect();
    let mut controls: Vec<SendAncillaryBuffer<'_, '_, '_>> = chunk.iter().map(|_| Default::default()).collect();
    let mut msgs: Vec<MMsgHdr<'_>> = addrs
        .iter()
        .zip(&iovs)
        .zip(controls.iter_mut())
        .map(|((to, iov), control)| MMsgHdr::new_with_addr(to, iov, control))
        .collect();
    Ok(sendmmsg(socket, &mut msgs, SendFlags::empty())?)
}

/// One `sendto` where there is no `sendmmsg`.
#[cfg(not(target_os = "linux"))]
fn send_some(socket: &UdpSocket, chunk: &[(SocketAddr, &[u8])]) -> io::Result<usize> {
    let (to, bytes) = chunk[0];
    socket.try_send_to(bytes, to).map(|_| 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn bound() -> UdpSocket {
        UdpSocket::bind("127.0.0.1:0").await.unwrap()
    }

    /// Datagrams from two sources, interleaved, more than one batch: read
    /// back in the order sent, each with its source; and sent in batches,
    /// each arrives in order.
    #[tokio::test]
    async fn batches_keep_the_order_and_the_sources() {
        let socket = bound().await;
        let to = socket.local_addr().unwrap();
        let mut receiver = BatchReceiver::new(&socket, 2048).unwrap();
        let (a, b) = (bound().await, bound().await);
        let messages: Vec<(SocketAddr, Vec<u8>)> = (0..RECV_BATCH * 2 + 3)
            .map(|i| {
                let from = if i % 2 == 0 { a.local_addr().unwrap() } else { b.local_addr().unwrap() };
                // Sizes differ, so GRO cannot merge them.
                (from, format!("datagram {i} {}", "x".repeat(i)).into_bytes())
            })
            .collect();
        for (from, bytes) in &messages {
            let s = if *from == a.local_addr().unwrap() { &a } else { &b };
            send_all(s, &[(to, bytes.as_slice())]).await;
        }
        let mut got = Vec::new();
        while got.len() < messages.len() {
            let batch = tokio::time::timeout(std::time::Duration::from_secs(2), receiver.recv(&socket)).await;
            got.extend(batch.unwrap().unwrap().map(|(d, from)| (from, d.to_vec())));
        }
        assert_eq!(got, messages);
        // Sent in one call of several datagrams from one socket.
        let bytes: Vec<Vec<u8>> = (0..SEND_BATCH + 5).map(|i| format!("batched {i}").into_bytes()).collect();
        let out: Vec<(SocketAddr, &[u8])> = bytes.iter().map(|b| (to, b.as_slice())).collect();
        send_all(&a, &out).await;
        let mut got = Vec::new();
        while got.len() < bytes.len() {
            let batch = tokio::time::timeout(std::time::Duration::from_secs(2), receiver.recv(&socket)).await;
            got.extend(batch.unwrap().unwrap().map(|(d, _)| d.to_vec()));
        }
        assert_eq!(got, bytes);
    }

    /// A datagram the system refuses does not stop the ones after it.
    #[tokio::test]
    async fn a_refused_datagram_is_skipped() {
        let socket = bound().await;
        let to = socket.local_addr().unwrap();
        let mut receiver = BatchReceiver::new(&socket, 2048).unwrap();
        let sender = bound().await;
        let too_large = vec![0u8; 70_000];
        send_all(&sender, &[(to, b"first"), (to, &too_large), (to, b"third")]).await;
        let mut got = Vec::new();
        while got.len() < 2 {
            let batch = tokio::time::timeout(std::time::Duration::from_secs(2), receiver.recv(&socket)).await;
            got.extend(batch.unwrap().unwrap().map(|(d, _)| d.to_vec()));
        }
        assert_eq!(got, vec![b"first".to_vec(), b"third".to_vec()]);
    }

    /// quinn-udp forbids fragmentation; the socket gets the system's
    /// setting back, so a SIP message over the path MTU still goes.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn the_fragmentation_setting_is_the_systems() {
        use rustix::net::sockopt::ip_mtu_discover;
        let socket = bound().await;
        let before = ip_mtu_discover(&socket).unwrap();
        let _receiver = BatchReceiver::new(&socket, 2048).unwrap();
        assert_eq!(ip_mtu_discover(&socket).unwrap(), before);
    }
}
