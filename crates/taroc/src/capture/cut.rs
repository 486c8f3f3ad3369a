//! A capture cut short: the file ends inside a record, as it does when
//! tcpdump is killed or a file is copied while it is being written.
//!
//! tshark reads such a file as far as it goes: every record before the cut
//! is shown, the partial one is not (its packet data is read short and
//! dropped), and it warns that "the file appears to have been cut short in
//! the middle of a packet". The readers here do the same and return the
//! warning as a [`Truncation`] for the caller to show.
//!
//! `pcap-file`'s slice parsers say [`pcap_file::PcapError::IncompleteBuffer`]
//! both when a record runs past the end of the bytes and when a field
//! inside a whole pcapng block runs past the end of that block. Only the
//! first is a cut: [`pcap_cut`] and [`pcapng_cut`] read the record's own
//! length to tell them apart, so a damaged block stays an error.

use std::fmt;

use pcap_file::Endianness;

use super::CaptureFormat;

/// Where a capture cut short ends, and what was done with the partial
/// record (dropped, as tshark drops it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncation {
    /// Whether the file is pcap or pcapng.
    pub format: CaptureFormat,
    /// Packet records read whole before the cut (pcap records; pcapng
    /// Enhanced, Simple and obsolete Packet Blocks).
    pub records: usize,
    /// The byte offset in the file where the partial record (pcapng: block)
    /// starts.
    pub offset: usize,
    /// Bytes of it present, from `offset` to the end of the file.
    pub present: usize,
    /// Its whole length, header included, as its header says; `None` when
    /// the file ends inside the header that says it.
    pub declared: Option<usize>,
}

impl fmt::Display for Truncation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (format, unit) = match self.format {
            CaptureFormat::Pcap => ("pcap", "record"),
            CaptureFormat::PcapNg => ("pcapng", "block"),
        };
        write!(f, "the {format} file appears to have been cut short in the middle of a {unit}: ")?;
        match self.declared {
            Some(len) => write!(f, "the {unit} at byte offset {} has {} of its {len} bytes", self.offset, self.present)?,
            None => write!(f, "the file ends {} bytes into the header of the {unit} at byte offset {}", self.present, self.offset)?,
        }
        write!(f, "; the {} packets before it were read and the partial {unit} was dropped (as tshark does)", self.records)
    }
}

fn u32_at(b: &[u8], at: usize, big: bool) -> Option<u32> {
    let s: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    Some(if big { u32::from_be_bytes(s) } else { u32::from_le_bytes(s) })
}

/// `Some` if the pcap record at the start of `rest` runs past the end of
/// the file (a cut), holding its declared length (the 16-octet record
/// header plus the captured length), or `None` when the file ends inside
/// that header; `None` for a record that fits, which is no cut.
pub(super) fn pcap_cut(rest: &[u8], endianness: Endianness) -> Option<Option<usize>> {
    if rest.len() < 16 {
        return Some(None);
    }
    let declared = 16 + u32_at(rest, 8, endianness == Endianness::Big)? as usize;
    (rest.len() < declared).then_some(Some(declared))
}

/// The pcapng Section Header Block's type; its own byte-order magic, not
/// the current section's, says how its length is written.
const SECTION_HEADER: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

/// As [`pcap_cut`], for the pcapng block starting `rest` (its Block Total
/// Length is the second 32-bit field; `pcap-file` needs the 12 octets of
/// the block's type, length and the Section Header's byte-order magic
/// before it reads any block).
pub(super) fn pcapng_cut(rest: &[u8], section: Endianness) -> Option<Option<usize>> {
    if rest.len() < 12 {
        return Some(None);
    }
    let big = if rest[..4] == SECTION_HEADER {
        // The byte-order magic 0x1A2B3C4D, as written.
        rest[8..12] == [0x1a, 0x2b, 0x3c, 0x4d]
    } else {
        section == Endianness::Big
    };
    let declared = u32_at(rest, 4, big)? as usize;
    (rest.len() < declared).then_some(Some(declared))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_that_fits_is_not_a_cut() {
        let mut rec = vec![0u8; 16 + 5];
        rec[8] = 5;
        assert_eq!(pcap_cut(&rec, Endianness::Little), None);
        assert_eq!(pcap_cut(&rec[..20], Endianness::Little), Some(Some(21)));
        assert_eq!(pcap_cut(&rec[..15], Endianness::Little), Some(None));
        let mut block = vec![0u8; 16];
        block[0] = 6;
        block[4] = 16;
        assert_eq!(pcapng_cut(&block, Endianness::Little), None);
        assert_eq!(pcapng_cut(&block[..13], Endianness::Little), Some(Some(16)));
        assert_eq!(pcapng_cut(&block[..11], Endianness::Little), Some(None));
    }
}
