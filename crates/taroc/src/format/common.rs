//! What every packet format shares: its errors, the packet types and
//! the Add-CID octet.

use crate::bits::Truncated;

/// Why bytes are not a well-formed compressed or feedback packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// The packet ends inside a field.
    #[error("packet truncated")]
    Truncated,
    /// No bytes at all.
    #[error("empty packet")]
    Empty,
    /// A first octet that begins no packet type here; holds it.
    #[error("unknown packet type {0:#04x}")]
    UnknownType(u8),
    /// A field holds a value the format reserves (or cannot carry); names
    /// the field.
    #[error("reserved value in field {0}")]
    Reserved(&'static str),
    /// An options length over 40 bytes or not a multiple of 4; holds it.
    #[error("TCP options of {0} bytes (at most 40, a multiple of 4)")]
    OptionsLength(usize),
}

impl From<Truncated> for FormatError {
    fn from(_: Truncated) -> Self {
        FormatError::Truncated
    }
}

/// IR: static and dynamic chains (RFC 3095's IR type with D = 1).
pub const TYPE_IR: u8 = 0xfd;

/// IR with an IPv6 static chain. RFC 3095 §5.2 leaves 0xF9–0xFB unused;
/// the IPv4 IR keeps 0xFD and its chain without a version field.
pub const TYPE_IR_V6: u8 = 0xf9;

/// IR-CR: an IR that replicates another context's static chain; 0xFC is
/// RFC 6846's IR-CR type (RFC 3095's IR without a dynamic chain, which
/// TAROC does not send).
pub const TYPE_IR_CR: u8 = 0xfc;

/// IR-REV: an IR whose addresses are the other direction's flow's, with
/// cross-direction inference. RFC 3095 §5.2 leaves 0xF9–0xFB unused; the
/// IPv6 IR takes 0xF9.
pub const TYPE_IR_REV: u8 = 0xfa;

/// IR-DYN: dynamic chain only (RFC 3095's IR-DYN type).
pub const TYPE_IR_DYN: u8 = 0xf8;

/// Feedback: 11110KKR.
pub const TYPE_FEEDBACK: u8 = 0xf0;

/// Add-CID octet: 1110CCCC, CID 1–15 (RFC 3095 §5.2.3 small CIDs).
pub const ADD_CID: u8 = 0xe0;

/// Contexts a link carries (small CIDs 0–15).
pub const MAX_CONTEXTS: usize = 16;

pub(crate) fn emit_cid(cid: u8, out: &mut Vec<u8>) {
    debug_assert!((cid as usize) < MAX_CONTEXTS);
    if cid != 0 {
        out.push(ADD_CID | cid);
    }
}

/// Splits the Add-CID octet off a packet.
pub fn split_cid(data: &[u8]) -> Result<(u8, &[u8]), FormatError> {
    match data.first() {
        None => Err(FormatError::Empty),
        Some(&b) if b & 0xf0 == ADD_CID => {
            if b == ADD_CID {
                return Err(FormatError::Reserved("Add-CID 0"));
            }
            Ok((b & 0x0f, &data[1..]))
        }
        Some(_) => Ok((0, data)),
    }
}
