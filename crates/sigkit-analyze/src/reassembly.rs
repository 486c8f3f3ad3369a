//! One direction of a TCP connection put back into its byte stream, from
//! the segments in capture order: out-of-order segments wait for the gap
//! before them to fill, and bytes already delivered (retransmissions,
//! overlapping repackets) are dropped, the first copy winning as the
//! receiving TCP keeps it (RFC 9293 §3.10.7.4 trims a segment to the
//! receive window's left edge).
//!
//! Stream offsets count from the byte after the SYN (its sequence number
//! is the initial sequence number, RFC 9293 §3.4), or from the first
//! segment seen when the capture began mid-connection. Sequence numbers
//! wrap at 2^32; they are unwrapped against the next expected offset, so a
//! segment within 2 GB either side of it is placed right.

use std::collections::BTreeMap;

/// A segment's contribution to the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    /// Stream offset just past the bytes it delivered (with any waiting
    /// segments it released).
    pub end: u64,
    /// Index of the segment (in the caller's numbering) that delivered them.
    pub segment: usize,
}

/// Counts of what reassembly met.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReassemblyCounts {
    /// Segments with payload.
    pub data_segments: usize,
    /// Segments whose bytes had all been delivered already.
    pub retransmitted: usize,
    /// Segments that arrived before a gap in front of them was filled.
    pub out_of_order: usize,
    /// Bytes never delivered: a gap the capture never filled (a segment
    /// it missed), and everything after it.
    pub missing_bytes: u64,
}

/// One direction's reassembler: segments in, the in-order stream out.
#[derive(Debug, Clone, Default)]
pub struct Reassembler {
    /// Sequence number of stream offset 0.
    base: Option<u32>,
    /// The stream so far, in order.
    pub data: Vec<u8>,
    /// Which segment brought each in-order run of bytes.
    pub deliveries: Vec<Delivery>,
    /// Segments ahead of the stream, by offset: (bytes, segment index).
    waiting: BTreeMap<u64, (Vec<u8>, usize)>,
    /// What reassembly met so far.
    pub counts: ReassemblyCounts,
}

impl Reassembler {
    /// A reassembler that has seen no segment.
    pub fn new() -> Reassembler {
        Reassembler::default()
    }

    /// The stream offset of sequence number `seq`, unwrapped against the
    /// next expected offset; `None` before the base is known.
    fn offset_of(&self, seq: u32) -> Option<i64> {
        let base = self.base?;
        let next = self.data.len() as u64;
        let expected_seq = base.wrapping_add(next as u32);
        let delta = seq.wrapping_sub(expected_seq) as i32;
        Some(next as i64 + i64::from(delta))
    }

    /// Feeds one segment: its sequence number, SYN flag and payload.
    pub fn push(&mut self, segment: usize, seq: u32, syn: bool, payload: &[u8]) {
        // The SYN occupies one sequence number before the first data byte.
        let data_seq = if syn { seq.wrapping_add(1) } else { seq };
        if syn && self.base.is_none() {
            self.base = Some(data_seq);
        }
        if payload.is_empty() {
            return;
        }
        self.counts.data_segments += 1;
        if self.base.is_none() {
            self.base = Some(data_seq);
        }
        let Some(start) = self.offset_of(data_seq) else { return };
        let next = self.data.len() as i64;
        let end = start + payload.len() as i64;
        if end <= next {
            self.counts.retransmitted += 1;
            return;
        }
        if start > next {
            self.counts.out_of_order += 1;
            // Keep the longer copy of a segment seen twice while waiting.
            let slot = self.waiting.entry(start as u64).or_insert_with(|| (Vec::new(), segment));
            if payload.len() > slot.0.len() {
                *slot = (payload.to_vec(), segment);
            }
            return;
        }
        // start <= next < end: the new part begins at `next`.
        let skip = (next - start) as usize;
        self.data.extend_from_slice(&payload[skip..]);
        self.release_waiting();
        self.deliveries.push(Delivery { end: self.data.len() as u64, segment });
    }

    /// Appends the waiting segments the stream has reached.
    fn release_waiting(&mut self) {
        while let Some(entry) = self.waiting.first_entry() {
            let start = *entry.key();
            let next = self.data.len() as u64;
            if start > next {
                break;
            }
            let (bytes, segment) = entry.remove();
            let end = start + bytes.len() as u64;
            if end > next {
                self.data.extend_from_slice(&bytes[(next - start) as usize..]);
                self.deliveries.push(Delivery { end: self.data.len() as u64, segment });
            }
        }
    }

    /// Ends the stream: what still waits behind a gap is counted missing.
    pub fn finish(&mut self) {
        let next = self.data.len() as u64;
        if let Some((&last_start, (bytes, _))) = self.waiting.last_key_value() {
            self.counts.missing_bytes = last_start + bytes.len() as u64 - next;
        }
        self.waiting.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_order_and_retransmitted_segments_give_the_stream_once() {
        let mut r = Reassembler::new();
        r.push(0, 999, true, b"");
        r.push(1, 1005, false, b"world");
        r.push(2, 1000, false, b"hello");
        r.push(3, 1000, false, b"hello");
        r.push(4, 1008, false, b"ld!!");
        r.finish();
        assert_eq!(r.data, b"helloworld!!");
        assert_eq!(r.counts.retransmitted, 1);
        assert_eq!(r.counts.out_of_order, 1);
        assert_eq!(r.counts.missing_bytes, 0);
    }

    #[test]
    fn sequence_numbers_wrap() {
        let mut r = Reassembler::new();
        r.push(0, u32::MAX - 2, true, b"");
        r.push(1, u32::MAX - 1, false, b"ab");
        r.push(2, 0, false, b"cd");
        r.finish();
        assert_eq!(r.data, b"abcd");
    }
}
