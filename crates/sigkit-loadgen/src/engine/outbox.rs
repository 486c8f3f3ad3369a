//! The datagrams the engine has to send, in one buffer reused from turn
//! to turn.

use std::net::SocketAddr;
use std::ops::Range;

/// Datagrams to send, in one buffer.
#[derive(Debug, Default)]
pub struct Outbox {
    buf: Vec<u8>,
    items: Vec<(SocketAddr, Range<usize>)>,
}

impl Outbox {
    /// Adds `bytes` for `to` (copied into the box's buffer).
    pub fn push(&mut self, to: SocketAddr, bytes: &[u8]) {
        let start = self.buf.len();
        self.buf.extend_from_slice(bytes);
        self.items.push((to, start..self.buf.len()));
    }
    /// Each datagram and its destination, in the order pushed.
    pub fn iter(&self) -> impl Iterator<Item = (SocketAddr, &[u8])> + '_ {
        self.items.iter().map(|(to, r)| (*to, &self.buf[r.clone()]))
    }
    /// Datagrams in the box.
    pub fn len(&self) -> usize {
        self.items.len()
    }
    /// Whether the box holds no datagram.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    /// Empties the box, keeping its memory.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.items.clear();
    }
}
