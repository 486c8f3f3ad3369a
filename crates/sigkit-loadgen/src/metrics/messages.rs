//! What each step of the scenario saw, over the whole run: SIPp's
//! scenario screen columns (`Messages`, `Retrans`, `Timeout`,
//! `Unexpected-Msg`), and for a pause the calls that entered it.

use serde::Serialize;

/// The counts of one scenario step (an entry of the scenario's `steps`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct StepMessages {
    /// A `send`: messages sent, first copies only.
    pub sent: u64,
    /// A `send`: the step's message sent again (a retransmission timer,
    /// or a retransmitted request answered again).
    pub sent_retrans: u64,
    /// A `recv`: messages that matched the step.
    pub recv: u64,
    /// A `recv`: copies of the step's message received again (the peer's
    /// retransmissions).
    pub recv_retrans: u64,
    /// A `send`: calls failed when its retransmissions ran out (Timer B,
    /// F, or a 2xx never acknowledged); a `recv`: calls whose wait for it
    /// timed out.
    pub timeouts: u64,
    /// Messages that arrived while a call was at the step and matched
    /// nothing the call expected (the call fails).
    pub unexpected: u64,
    /// A pause (or `timewait`): calls that entered it.
    pub sessions: u64,
}
