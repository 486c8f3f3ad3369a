//! The decompressor bytecode (assembled from `asm/*.asm` at build time by
//! `sigcomp-asm`) and the memory layout the compressor gives it.

use sigcomp::{Params, State, StateId, Transport};

use crate::dictionary::Priorities;
use crate::lzss::LzssFormat;

/// Label addresses of `asm/lzss.asm`.
#[allow(dead_code)]
pub mod lzss_labels {
    include!(concat!(env!("OUT_DIR"), "/lzss_labels.rs"));
}

/// `asm/lzss.asm` assembled: memory from address 128 to the circular buffer.
static LZSS_IMAGE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/lzss.bin"));

/// Where the circular buffer lies in the peer's UDVM memory and the token
/// format that follows from its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub circular_buffer: u16,
    pub buffer_end: u16,
    pub buffer_size: u16,
    pub format: LzssFormat,
}

impl Layout {
    /// Plans the buffer for a peer offering `peer`.
    ///
    /// * Memory: a stream transport gives DMS/2 (RFC 3320 §7); a message
    ///   transport gives DMS − message size, so room is kept for a
    ///   message of up to min(DMS/2, 1536) bytes.
    /// * State memory: a snapshot costs (buffer_end − 64) + 64 bytes; two
    ///   must fit (the one in use and the next) beside the peer's own
    ///   shared state.
    pub fn plan(peer: &Params, transport: Transport, snapshots: bool, shared_reserve: u32, length_bits: u8) -> Option<Layout> {
        let cb = u32::from(lzss_labels::CIRCULAR_BUFFER);
        let dms = peer.dms;
        let memory = match transport {
            Transport::Stream => dms / 2,
            Transport::Message => dms - (dms / 2).min(1536),
        };
        let mut end = memory.min(32768);
        if snapshots {
            let per_snapshot = peer.sms.saturating_sub(3 * 64 + shared_reserve) / 2;
            end = end.min(per_snapshot + 64);
        }
        let size = end.checked_sub(cb)?;
        if size < 512 {
            return None;
        }
        let offset_bits = (32 - (size - 1).leading_zeros()).clamp(9, 15) as u8;
        Some(Layout {
            circular_buffer: cb as u16,
            buffer_end: end as u16,
            buffer_size: size as u16,
            format: LzssFormat { offset_bits, length_bits },
        })
    }

    /// The circular buffer of a snapshot (UDVM memory from address 64) in
    /// chronological order, oldest byte first.
    pub fn window_of(&self, memory: &[u8]) -> Vec<u8> {
        let cb = usize::from(self.circular_buffer) - 64;
        let buf = &memory[cb..cb + usize::from(self.buffer_size)];
        let ptr = usize::from(u16::from_be_bytes([memory[6], memory[7]]));
        let split = ptr - usize::from(self.circular_buffer);
        let mut w = Vec::with_capacity(buf.len());
        w.extend_from_slice(&buf[split..]);
        w.extend_from_slice(&buf[..split]);
        w
    }
}

/// Bytecode with its parameters filled in for one peer.
#[derive(Debug, Clone)]
pub struct Bytecode {
    /// Memory image from address 128 up to the circular buffer.
    pub code: Vec<u8>,
    /// Identifier of the bytecode saved as state (static mechanism).
    pub state_id: StateId,
    /// Dictionary bytes placed at the start of the buffer.
    pub dictionary: &'static [u8],
}

impl Bytecode {
    /// The buffer after initialisation, in chronological order: zeros,
    /// then the dictionary part.
    pub fn fresh_window(&self, layout: &Layout) -> Vec<u8> {
        let mut w = vec![0u8; usize::from(layout.buffer_size) - self.dictionary.len()];
        w.extend_from_slice(self.dictionary);
        w
    }
}

fn put_word(code: &mut [u8], label: u16, v: u16) {
    let i = usize::from(label - 128);
    code[i..i + 2].copy_from_slice(&v.to_be_bytes());
}

/// The LZSS bytecode for `layout`.
pub fn lzss(layout: &Layout, length_bits: u8, dictionary: Option<Priorities>, local: &Params) -> Bytecode {
    use lzss_labels as l;
    let mut code = LZSS_IMAGE.to_vec();
    let (mut begin, mut len) = dictionary.map(|p| p.string_range()).unwrap_or((0, 0));
    // The dictionary must leave room in the buffer; keep its most common end.
    let room = layout.buffer_size.saturating_sub(64);
    if len > room {
        begin += len - room;
        len = room;
    }
    let ob = layout.format.offset_bits;
    put_word(&mut code, l::BUFFER_END, layout.buffer_end);
    put_word(&mut code, l::BUFFER_SIZE, layout.buffer_size);
    put_word(&mut code, l::DICT_BEGIN, begin);
    put_word(&mut code, l::DICT_LENGTH, len);
    put_word(&mut code, l::OFFSET_EXTRA_BITS, u16::from(ob - 8));
    put_word(&mut code, l::OFFSET_LOWER, 1 << ob);
    put_word(&mut code, l::OFFSET_UPPER, ((1u32 << (ob + 1)) - 1) as u16);
    put_word(&mut code, l::LENGTH_BITS, u16::from(length_bits));
    let code_len = code.len() as u16;
    put_word(&mut code, l::CODE_LENGTH, code_len);
    put_word(&mut code, l::ANNOUNCE_PARAMS, u16::from(local.encode_byte()) << 8 | u16::from(local.version));
    put_word(&mut code, l::SNAPSHOT_LENGTH, layout.buffer_end - 64);
    let state_id = State::new(128, 128, 6, &code).id;
    let dict = &sigcomp::dict::SIP_SDP[usize::from(begin)..usize::from(begin + len)];
    Bytecode { code, state_id, dictionary: dict }
}
