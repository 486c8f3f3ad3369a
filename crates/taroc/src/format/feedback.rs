//! Feedback packets from the decompressor.

use super::common::*;

/// What a feedback packet says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeedbackKind {
    /// The packet `msn` decompressed and is the decompressor's reference.
    Ack,
    /// A packet failed verification.
    Nack,
    /// A packet arrived for a context without its static part: send IR.
    StaticNack,
}

/// A feedback packet (decompressor to compressor): `[Add-CID] 11110KKR MSN(16) CHECKSUM(16)`.
/// R is 1 for R-mode's ACK(R)/NACK(R), 0 for O-mode's. CHECKSUM is the TCP
/// checksum of the packet `msn` names, so the compressor can tell an ACK of
/// a packet it sent (§5.5.2.1: "an ACK(O) can only be valid if it refers to
/// a packet sent earlier") from one whose MSN was corrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Feedback {
    /// The context's CID, 0..=15.
    pub cid: u8,
    /// ACK, NACK or STATIC-NACK (the KK bits).
    pub kind: FeedbackKind,
    /// R: R-mode's ACK(R)/NACK(R) rather than O-mode's.
    pub reliable: bool,
    /// The MSN of the packet it refers to.
    pub msn: u16,
    /// The TCP checksum of that packet.
    pub checksum: u16,
}

impl Feedback {
    /// Octets of a feedback packet without the Add-CID octet.
    pub const LEN: usize = 5;

    /// Appends the packet, with its Add-CID octet unless CID 0, to `out`.
    pub fn emit(&self, out: &mut Vec<u8>) {
        emit_cid(self.cid, out);
        let k = match self.kind {
            FeedbackKind::Ack => 0,
            FeedbackKind::Nack => 1,
            FeedbackKind::StaticNack => 2,
        };
        out.push(TYPE_FEEDBACK | k << 1 | self.reliable as u8);
        out.extend_from_slice(&self.msn.to_be_bytes());
        out.extend_from_slice(&self.checksum.to_be_bytes());
    }

    /// Reads a feedback packet (with its Add-CID octet, if any); bytes
    /// after its five octets are ignored.
    pub fn parse(data: &[u8]) -> Result<Feedback, FormatError> {
        let (cid, data) = split_cid(data)?;
        let b = data.get(..5).ok_or(FormatError::Truncated)?;
        if b[0] & 0xf8 != TYPE_FEEDBACK {
            return Err(FormatError::UnknownType(b[0]));
        }
        let kind = match (b[0] >> 1) & 3 {
            0 => FeedbackKind::Ack,
            1 => FeedbackKind::Nack,
            2 => FeedbackKind::StaticNack,
            _ => return Err(FormatError::Reserved("feedback kind")),
        };
        Ok(Feedback {
            cid,
            kind,
            reliable: b[0] & 1 == 1,
            msn: u16::from_be_bytes([b[1], b[2]]),
            checksum: u16::from_be_bytes([b[3], b[4]]),
        })
    }
}
