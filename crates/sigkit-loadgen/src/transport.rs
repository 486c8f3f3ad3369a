//! The transport a run uses.

/// The transport a run uses (SIPp's `-t u1` and `-t t1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Transport {
    Udp,
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
