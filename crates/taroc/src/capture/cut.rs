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
//! first is a cut: [`pcap_end`] and [`pcapng_end`] read the record's own
//! length to tell them apart, so a damaged block stays an error. A length
//! past the end of the file that no record may have (more than
//! [`PCAP_MAX_CAPTURED`] or [`PCAPNG_MAX_BLOCK`]) is damage too, as tshark
//! judges it, not a cut.

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
            Some(len) => {
                write!(f, "the {unit} at byte offset {} has {} of its {len} bytes", self.offset, self.present)?
            }
            None => write!(
                f,
                "the file ends {} bytes into the header of the {unit} at byte offset {}",
                self.present, self.offset
            )?,
        }
        write!(
            f,
            "; the {} packets before it were read and the partial {unit} was dropped (as tshark does)",
            self.records
        )
    }
}

fn u32_at(b: &[u8], at: usize, big: bool) -> Option<u32> {
    let s: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    Some(if big { u32::from_be_bytes(s) } else { u32::from_le_bytes(s) })
}

/// How a record `pcap-file` found incomplete ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RecordEnd {
    /// It fits in the file: what is incomplete is inside it (damage).
    Fits,
    /// It runs past the end of the file, a cut: its whole length as its
    /// header declares it, `None` when the file ends inside that header.
    Cut(Option<usize>),
    /// Its header declares more than a capture record may hold (the
    /// second field): a damaged length, not a cut, as tshark judges it.
    TooLong(usize),
}

/// The most a pcap record may capture: Wireshark's
/// `WTAP_MAX_PACKET_SIZE_STANDARD`, the bound of every link type read
/// here. tshark refuses a longer record ("File has N-byte packet, bigger
/// than maximum of 262144") rather than reading it as cut short.
pub const PCAP_MAX_CAPTURED: usize = 262_144;

/// The longest pcapng block tshark reads (Wireshark's pcapng
/// `MAX_BLOCK_SIZE`: a 32-octet Enhanced Packet Block header, a 128 MiB
/// D-Bus packet and 128 KiB of options); a longer one is "too large".
pub const PCAPNG_MAX_BLOCK: usize = 32 + 128 * 1024 * 1024 + 131_072;

/// How the pcap record at the start of `rest` ends: its 16-octet header
/// holds the captured length third.
pub(super) fn pcap_end(rest: &[u8], endianness: Endianness) -> RecordEnd {
    let Some(captured) = u32_at(rest, 8, endianness == Endianness::Big) else {
        return RecordEnd::Cut(None);
    };
    let captured = captured as usize;
    if captured > PCAP_MAX_CAPTURED {
        RecordEnd::TooLong(captured)
    } else if rest.len() < 16 {
        RecordEnd::Cut(None)
    } else if rest.len() < 16 + captured {
        RecordEnd::Cut(Some(16 + captured))
    } else {
        RecordEnd::Fits
    }
}

/// The pcapng Section Header Block's type; its own byte-order magic, not
/// the current section's, says how its length is written.
const SECTION_HEADER: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];

/// How the pcapng block at the start of `rest` ends: its Block Total
/// Length is the second 32-bit field; `pcap-file` needs 12 octets (type,
/// length and a Section Header's byte-order magic) before it reads any
/// block, so fewer is a cut inside the header.
pub(super) fn pcapng_end(rest: &[u8], section: Endianness) -> RecordEnd {
    if rest.len() < 12 {
        return RecordEnd::Cut(None);
    }
    let big = if rest[..4] == SECTION_HEADER {
        // The byte-order magic 0x1A2B3C4D, as written.
        rest[8..12] == [0x1a, 0x2b, 0x3c, 0x4d]
    } else {
        section == Endianness::Big
    };
    let total = u32_at(rest, 4, big).map_or(0, |n| n as usize);
    if total > PCAPNG_MAX_BLOCK {
        RecordEnd::TooLong(total)
    } else if rest.len() < total {
        RecordEnd::Cut(Some(total))
    } else {
        RecordEnd::Fits
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::time::Duration;

    use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
    use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
    use pcap_file::pcapng::PcapNgWriter;
    use pcap_file::DataLink;

    use super::*;
    use crate::capture::{read_capture, write_pcap, CaptureError};
    use crate::synth::{bulk_transfer, FlowOptions};

    fn flow() -> Vec<Vec<u8>> {
        bulk_transfer(4, 100, 0, FlowOptions::default()).into_iter().map(|(_, p)| p).collect()
    }

    fn pcapng_of(packets: &[Vec<u8>]) -> Vec<u8> {
        let mut w = PcapNgWriter::new(Vec::new()).unwrap();
        let idb = InterfaceDescriptionBlock { linktype: DataLink::RAW, snaplen: 0, options: vec![] };
        w.write_pcapng_block(idb).unwrap();
        for p in packets {
            let epb = EnhancedPacketBlock {
                interface_id: 0,
                timestamp: Duration::from_micros(3),
                original_len: p.len() as u32,
                data: Cow::Borrowed(p),
                options: vec![],
            };
            w.write_pcapng_block(epb).unwrap();
        }
        w.into_inner()
    }

    /// Cuts the file at every offset from the start of its last record to
    /// its end: the records before are all read, the partial one dropped,
    /// and the truncation says where; at the boundary there is no cut.
    fn every_cut_of_the_last_record(file: &[u8], last: usize, header: usize, format: CaptureFormat, n: usize) {
        for cut in last..file.len() {
            let cap = read_capture(&file[..cut]).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
            assert_eq!((cap.frames, cap.packets.len()), (n - 1, n - 1), "cut at {cut}");
            let want = (cut > last).then_some(Truncation {
                format,
                records: n - 1,
                offset: last,
                present: cut - last,
                declared: (cut - last >= header).then_some(file.len() - last),
            });
            assert_eq!(cap.truncated, want, "cut at {cut}");
        }
        assert_eq!(read_capture(file).unwrap().truncated, None);
    }

    #[test]
    fn a_pcap_cut_in_its_last_record_keeps_the_records_before() {
        let flow = flow();
        let file = write_pcap(Vec::new(), flow.iter().map(|p| (Duration::ZERO, p.as_slice()))).unwrap();
        let last = file.len() - 16 - flow.last().unwrap().len();
        every_cut_of_the_last_record(&file, last, 16, CaptureFormat::Pcap, flow.len());
        let t = read_capture(&file[..last + 20]).unwrap().truncated.unwrap().to_string();
        assert!(t.contains("cut short") && t.contains(&format!("byte offset {last}")) && t.contains("dropped"), "{t}");
    }

    #[test]
    fn a_pcapng_cut_in_its_last_block_keeps_the_blocks_before() {
        let flow = flow();
        let file = pcapng_of(&flow);
        let last = file.len() - 32 - flow.last().unwrap().len().next_multiple_of(4);
        every_cut_of_the_last_record(&file, last, 12, CaptureFormat::PcapNg, flow.len());
    }

    #[test]
    fn a_file_header_cut_short_is_still_an_error() {
        let flow = flow();
        let pcap = write_pcap(Vec::new(), flow.iter().map(|p| (Duration::ZERO, p.as_slice()))).unwrap();
        let ng = pcapng_of(&flow);
        for file in [&pcap[..23], &ng[..27]] {
            assert!(matches!(read_capture(file), Err(CaptureError::Truncated { .. })));
        }
    }

    /// An option running past the end of a whole block: `pcap-file` says
    /// `IncompleteBuffer`, but the file is damaged, not cut short.
    #[test]
    fn a_damaged_whole_block_stays_an_error() {
        let flow = flow();
        let mut file = pcapng_of(&flow[..1]);
        // The last block is the Enhanced Packet Block; give it a Custom
        // Option (code 2989) of 2 octets, too short for the Private
        // Enterprise Number it starts with, and fix the block's lengths.
        let epb = file.len() - 32 - flow[0].len().next_multiple_of(4);
        file.truncate(file.len() - 4);
        file.extend_from_slice(&[0xad, 0x0b, 2, 0, 0, 0, 0, 0]);
        let len = (file.len() + 4 - epb) as u32;
        file.extend_from_slice(&len.to_le_bytes());
        file[epb + 4..epb + 8].copy_from_slice(&len.to_le_bytes());
        match read_capture(&file) {
            Err(CaptureError::Malformed { source: pcap_file::PcapError::IncompleteBuffer, .. }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn lengths_of_records_that_fit_are_no_cut() {
        let mut rec = vec![0u8; 16 + 5];
        rec[8] = 5;
        let le = Endianness::Little;
        assert_eq!(pcap_end(&rec, le), RecordEnd::Fits);
        assert_eq!(pcap_end(&rec[..20], le), RecordEnd::Cut(Some(21)));
        assert_eq!(pcap_end(&rec[..15], le), RecordEnd::Cut(None));
        assert_eq!(pcap_end(&rec[..5], le), RecordEnd::Cut(None));
        rec[8..12].copy_from_slice(&(PCAP_MAX_CAPTURED as u32).to_le_bytes());
        assert_eq!(pcap_end(&rec, le), RecordEnd::Cut(Some(16 + PCAP_MAX_CAPTURED)));
        rec[8..12].copy_from_slice(&(PCAP_MAX_CAPTURED as u32 + 1).to_le_bytes());
        assert_eq!(pcap_end(&rec, le), RecordEnd::TooLong(PCAP_MAX_CAPTURED + 1));
        let mut block = vec![0u8; 16];
        block[0] = 6;
        block[4] = 16;
        assert_eq!(pcapng_end(&block, le), RecordEnd::Fits);
        assert_eq!(pcapng_end(&block[..13], le), RecordEnd::Cut(Some(16)));
        assert_eq!(pcapng_end(&block[..11], le), RecordEnd::Cut(None));
        block[4..8].copy_from_slice(&(PCAPNG_MAX_BLOCK as u32 + 4).to_le_bytes());
        assert_eq!(pcapng_end(&block, le), RecordEnd::TooLong(PCAPNG_MAX_BLOCK + 4));
    }

    #[test]
    fn a_damaged_length_past_the_end_is_an_error_not_a_cut() {
        let flow = flow();
        let mut file = write_pcap(Vec::new(), flow.iter().map(|p| (Duration::ZERO, p.as_slice()))).unwrap();
        file[24 + 8..24 + 12].copy_from_slice(&u32::MAX.to_le_bytes());
        match read_capture(&file) {
            Err(e @ CaptureError::RecordTooLong { offset: 24, length: 0xffff_ffff, .. }) => {
                assert!(e.to_string().contains("262144"), "{e}");
            }
            other => panic!("{other:?}"),
        }
        let mut ng = pcapng_of(&flow);
        let last = ng.len() - 32 - flow.last().unwrap().len().next_multiple_of(4);
        ng[last + 4..last + 8].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
        assert!(matches!(read_capture(&ng), Err(CaptureError::RecordTooLong { .. })));
    }
}
