//! The transport a run uses.

/// The transport a run uses (SIPp's `-t u1` and `-t t1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Transport {
    /// UDP: one socket, RFC 3261 §17 retransmissions on.
    Udp,
    /// TCP: reliable, so no retransmissions (RFC 3261 §17.1.1.2); messages framed by Content-Length (§18.3).
    Tcp,
}

impl Transport {
    /// As `[transport]` and Via write it.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Udp => "UDP",
            Transport::Tcp => "TCP",
        }
    }
}
