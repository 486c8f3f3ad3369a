//! The decompressor bytecode (asm/mechanism.asm with one algorithm's
//! fragment spliced in, assembled at build time by `sigcomp-asm`) and the
//! memory layout the compressor gives it for one peer.

use sigcomp::{Params, State, StateId, Transport};

/// One assembled program: its memory image and the addresses of the words
/// the compressor patches (labels of asm/mechanism.asm).
#[derive(Debug, Clone, Copy)]
pub struct Image {
    /// Memory from `init` (the code destination) up to the circular buffer.
    pub code: &'static [u8],
    /// UDVM address of `:init`, the code destination the bytecode is
    /// uploaded to: a multiple of 64 in 128..=1024 (RFC 3320 §7.3,
    /// checked by build.rs).
    pub init: u16,
    /// UDVM address of `:circular_buffer`, where the circular buffer
    /// (RFC 3320 §8.4) begins, right after the code; `code` ends here.
    pub circular_buffer: u16,
    /// Address of the word `:buffer_end`, which the compressor sets to the
    /// first address past the circular buffer ([`Layout::buffer_end`]).
    pub buffer_end: u16,
    /// Address of the word `:buffer_size`: the circular buffer's length in
    /// bytes ([`Layout::buffer_size`]), subtracted when a shared state
    /// appended to the buffer runs past its end.
    pub buffer_size: u16,
    /// Address of the word `:dict_begin`: the offset into the dictionary
    /// state of the part STATE-ACCESS loads (RFC 3320 §9.4.5).
    pub dict_begin: u16,
    /// Address of the word `:dict_length`: how many dictionary bytes are
    /// loaded into the buffer (0: none, STATE-ACCESS skipped).
    pub dict_length: u16,
    /// Address of the word `:dict_end`: `circular_buffer` + the loaded
    /// dictionary length, the initial `decompressed_pointer` (programs
    /// with whole snapshots).
    pub dict_end: Option<u16>,
    /// Address of the word `:dict_at`: where the dictionary part lies, at
    /// the buffer's end (`buffer_end` − its length), so that it precedes
    /// the history, which starts at `circular_buffer` (programs with short
    /// snapshots).
    pub dict_at: Option<u16>,
    /// Address of the word `:code_length`: the length in bytes of the code
    /// saved as state by the static mechanism's STATE-CREATE.
    pub code_length: u16,
    /// Address of the word `:announce_params`: the local endpoint's
    /// cycles_per_bit/DMS/SMS byte and SigComp version, returned to the
    /// peer with every message (RFC 3320 §9.4.9).
    pub announce_params: u16,
    /// Address of the word `:snapshot_length`: bytes of UDVM memory from
    /// address 64 that END-MESSAGE saves as a whole snapshot
    /// (`buffer_end` − 64; dynamic and shared mechanisms). A short one
    /// ends at `decompressed_pointer` (flag_short_snapshot).
    pub snapshot_length: u16,
    /// Address of `:dictionary_id`, the 6-byte partial state identifier of
    /// the dictionary STATE-ACCESS loads (assembled as RFC 3485's,
    /// replaced by a user dictionary's).
    pub dictionary_id: u16,
    /// Where a message that continues from a snapshot starts (the
    /// snapshot state's instruction).
    pub decompress: u16,
    /// The fragment's own labels (named `<algo>_…`) and their addresses.
    pub labels: &'static [(&'static str, u16)],
}

impl Image {
    /// Address of the fragment label `name` (as written in the fragment).
    pub fn label(&self, name: &str) -> Option<u16> {
        self.labels.iter().find(|(l, _)| *l == name).map(|(_, a)| *a)
    }
}

/// The assembled images, one per algorithm built (see build.rs).
pub mod images {
    use super::Image;
    include!(concat!(env!("OUT_DIR"), "/images.rs"));
}

/// asm/literal.asm: uploaded at 128, outputs the compressed data as it is.
pub static LITERAL: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/literal.bin"));

/// Labels and `set` names of the full LZSS program (shared mechanism):
/// the mechanism's variables and flag bits, the fragment's costs.
pub mod lzss_symbols {
    include!(concat!(env!("OUT_DIR"), "/lzss_symbols.rs"));
}

/// As [`lzss_symbols`], of the Deflate program.
#[cfg(feature = "deflate")]
pub mod deflate_symbols {
    include!(concat!(env!("OUT_DIR"), "/deflate_symbols.rs"));
}

/// As [`lzss_symbols`], of the LZ77 program.
#[cfg(feature = "lz77")]
pub mod lz77_symbols {
    include!(concat!(env!("OUT_DIR"), "/lz77_symbols.rs"));
}

/// Where the circular buffer lies in the peer's UDVM memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// First address of the buffer ([`Image::circular_buffer`]).
    pub circular_buffer: u16,
    /// First address past the buffer: at most the UDVM memory the plan
    /// allows and at most 65535.
    pub buffer_end: u16,
    /// `buffer_end` − `circular_buffer`, in bytes; at least the plan's
    /// minimum (256 for [`Layout::plan`]).
    pub buffer_size: u16,
}

/// Smallest circular buffer worth compressing with.
const MIN_BUFFER: u32 = 256;

impl Layout {
    /// Plans the buffer of `image` for a peer offering `peer`.
    ///
    /// * Memory (RFC 3320 §7): a stream transport gives DMS/2; a message
    ///   transport gives DMS − message size, so room is kept for a message
    ///   of up to min(DMS/4, 1536) bytes (bytecode included when uploaded;
    ///   a larger one is sent by the compressor's fallback). DMS/4 rather
    ///   than DMS/2 gave 4–10 % smaller flows at DMS 4096 over the corpus.
    /// * State memory: a snapshot costs (buffer_end − 64) + 64 bytes
    ///   (RFC 3320 §6.2 step 4). Two should fit (the one in use and the
    ///   next) beside `reserve` bytes (bytecode state, the peer's own
    ///   shared state); if only one fits, one is used.
    pub fn plan(image: &Image, peer: &Params, transport: Transport, snapshots: bool, reserve: u32) -> Option<Layout> {
        let dms = peer.dms;
        let memory = match transport {
            Transport::Stream => dms / 2,
            Transport::Message => dms - (dms / 4).min(1536),
        };
        Layout::plan_memory(image, peer, memory, snapshots, reserve, MIN_BUFFER)
    }

    /// As [`Layout::plan`] for a UDVM memory of `memory` bytes and a
    /// circular buffer of at least `min_buffer` bytes.
    pub fn plan_memory(
        image: &Image,
        peer: &Params,
        memory: u32,
        snapshots: bool,
        reserve: u32,
        min_buffer: u32,
    ) -> Option<Layout> {
        let cb = u32::from(image.circular_buffer);
        let mut end = memory.min(65535);
        if snapshots {
            let room = peer.sms.saturating_sub(reserve);
            let two = (room / 2).saturating_sub(64) + 64;
            let one = room.saturating_sub(64) + 64;
            let per = if two >= cb + min_buffer { two } else { one };
            end = end.min(per);
        }
        let size = end.checked_sub(cb)?;
        if size < min_buffer {
            return None;
        }
        Some(Layout { circular_buffer: cb as u16, buffer_end: end as u16, buffer_size: size as u16 })
    }

    /// The circular buffer of a snapshot (UDVM memory from address 64) in
    /// chronological order, oldest byte first, into `w` (its bytes
    /// replaced): the oldest byte is the one at `decompressed_pointer`, the
    /// program's next write (RFC 3320 §8.4: a circular buffer wraps from
    /// byte_copy_right to byte_copy_left).
    pub fn window_into(&self, memory: &[u8], decompressed_pointer: usize, w: &mut Vec<u8>) {
        let cb = usize::from(self.circular_buffer) - 64;
        let buf = &memory[cb..cb + usize::from(self.buffer_size)];
        let split = decompressed_pointer - usize::from(self.circular_buffer);
        w.clear();
        w.extend_from_slice(&buf[split..]);
        w.extend_from_slice(&buf[..split]);
    }
}

/// The dictionary the bytecode loads into the circular buffer with
/// STATE-ACCESS when it starts fresh.
#[derive(Debug, Clone)]
pub struct DictionarySource {
    /// Identifier of the state holding it (RFC 3485's, or a user
    /// dictionary's, RFC 3321 §3.3).
    pub id: StateId,
    /// The whole state value.
    pub value: std::sync::Arc<[u8]>,
    /// (offset, length) of the part to load.
    pub range: (u16, u16),
}

/// Bytecode with its parameters filled in for one peer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bytecode {
    /// Memory image from `destination` up to the circular buffer.
    pub code: Vec<u8>,
    /// Where the code is uploaded (RFC 3320 §7.3).
    pub destination: u16,
    /// Identifier of the bytecode saved as state (static mechanism).
    pub state_id: StateId,
    /// That state (address and instruction = destination, minimum access
    /// length 6), hashed once.
    pub state: State,
    /// Dictionary bytes placed in the buffer: at its start, or at its end
    /// with short snapshots.
    pub dictionary: Vec<u8>,
    /// The dictionary state the bytecode accesses, if any.
    pub dictionary_id: Option<StateId>,
}

impl Bytecode {
    /// The buffer after initialisation, in chronological order: zeros,
    /// then the dictionary part.
    pub fn fresh_window(&self, layout: &Layout) -> Vec<u8> {
        let mut w = Vec::with_capacity(usize::from(layout.buffer_size));
        self.fresh_window_into(layout, &mut w);
        w
    }

    /// [`Bytecode::fresh_window`] into `w` (its bytes replaced).
    pub fn fresh_window_into(&self, layout: &Layout, w: &mut Vec<u8>) {
        w.clear();
        w.resize(usize::from(layout.buffer_size) - self.dictionary.len(), 0);
        w.extend_from_slice(&self.dictionary);
    }
}

/// The word at the address of label `label` in an image that starts at
/// `base`.
pub fn word(code: &[u8], base: u16, label: u16) -> u16 {
    let i = usize::from(label - base);
    u16::from_be_bytes([code[i], code[i + 1]])
}

/// Writes `v` into the image at the address of label `label`.
pub fn put_word(code: &mut [u8], base: u16, label: u16, v: u16) {
    let i = usize::from(label - base);
    code[i..i + 2].copy_from_slice(&v.to_be_bytes());
}

/// Fills in the mechanism words of `image` for `layout`. `patch` then sets
/// the algorithm's own words (it gets the image and its base address).
pub fn build(
    image: &Image,
    layout: &Layout,
    dictionary: Option<&DictionarySource>,
    local: &Params,
    patch: impl FnOnce(&mut [u8], u16),
) -> Bytecode {
    let base = image.init;
    let mut code = image.code.to_vec();
    let (mut begin, mut len) = dictionary.map(|d| d.range).unwrap_or((0, 0));
    // The dictionary must leave room in the buffer; keep its most common
    // end (the highest priorities are last, nearest to the message).
    let room = layout.buffer_size.saturating_sub(256);
    if len > room {
        begin += len - room;
        len = room;
    }
    put_word(&mut code, base, image.buffer_end, layout.buffer_end);
    put_word(&mut code, base, image.buffer_size, layout.buffer_size);
    put_word(&mut code, base, image.dict_begin, begin);
    put_word(&mut code, base, image.dict_length, len);
    if let Some(at) = image.dict_end {
        put_word(&mut code, base, at, layout.circular_buffer + len);
    }
    if let Some(at) = image.dict_at {
        put_word(&mut code, base, at, layout.buffer_end - len);
    }
    let code_len = code.len() as u16;
    put_word(&mut code, base, image.code_length, code_len);
    put_word(&mut code, base, image.announce_params, u16::from(local.encode_byte()) << 8 | u16::from(local.version));
    put_word(&mut code, base, image.snapshot_length, layout.buffer_end - 64);
    if let Some(d) = dictionary {
        let i = usize::from(image.dictionary_id - base);
        code[i..i + 6].copy_from_slice(&d.id.0[..6]);
    }
    patch(&mut code, base);
    let state = State::new(base, base, 6, &code);
    let state_id = state.id;
    let dict = dictionary.map(|d| d.value[usize::from(begin)..usize::from(begin + len)].to_vec()).unwrap_or_default();
    Bytecode { code, destination: base, state_id, state, dictionary: dict, dictionary_id: dictionary.map(|d| d.id) }
}
