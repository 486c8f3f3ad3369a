//! What a recognised token loop is: its place in memory, which decoder
//! runs it and the values its bytes named, and the loops kept from earlier
//! messages. The machine holds these between a loop's recognition and its
//! runs; the decoders that recognise and run them are `native.rs`'s, which
//! build on the machine, so these types live apart from them.

use super::op;
use super::operand::Operand;

/// The opcode a recognised loop's first instruction is kept under in the
/// decode cache: not an RFC 3320 opcode (those end at 35), so no byte of
/// bytecode decodes to it.
pub(super) const NATIVE: u8 = 0xF0;

/// Loops recognised per run, at most (a message runs one; a hostile one
/// that keeps rewriting its bytecode reuses the slots).
pub(super) const NATIVE_SLOTS: usize = 2;

/// Which decoder a recognised loop runs, with what its bytes named.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    Lzss(Lzss),
    Lz77,
    Deflate,
    OscDeflate(OscDeflate),
}

/// A token loop recognised in memory [head, end).
#[derive(Debug, Clone, Copy)]
pub(super) struct Recognised {
    pub(super) head: u16,
    pub(super) end: u16,
    pub(super) kind: Kind,
}

impl Recognised {
    /// The opcode at `head`, which the UDVM runs when the native decoder
    /// stops: LZ77's loop starts with INPUT-BITS, the others with
    /// INPUT-HUFFMAN.
    pub(super) fn head_opcode(&self) -> u8 {
        match self.kind {
            Kind::Lz77 => op::INPUT_BITS,
            Kind::Lzss(_) | Kind::Deflate | Kind::OscDeflate(_) => op::INPUT_HUFFMAN,
        }
    }
}

/// Loops recognised in earlier messages, with their bytes, kept by the
/// decompressor between messages: a loop whose bytes are the same at the
/// same address is the same loop, found again by comparing its bytes
/// rather than matching its instructions.
#[derive(Debug, Default)]
pub struct NativeMemo {
    loops: [Option<(Recognised, Vec<u8>)>; NATIVE_SLOTS],
    next: usize,
}

impl NativeMemo {
    pub(super) fn find(&self, mem: &[u8], pc: u16) -> Option<Recognised> {
        self.loops.iter().flatten().find_map(|(r, bytes)| {
            let span = usize::from(r.head)..usize::from(r.end);
            (r.head == pc && mem.get(span) == Some(&bytes[..])).then_some(*r)
        })
    }

    pub(super) fn keep(&mut self, mem: &[u8], r: Recognised) {
        if let Some(bytes) = mem.get(usize::from(r.head)..usize::from(r.end)) {
            self.loops[self.next] = Some((r, bytes.to_vec()));
            self.next = (self.next + 1) % NATIVE_SLOTS;
        }
    }
}

/// An LZSS loop's offset interval: bits, lower and upper bound, each a
/// value or a word the compressor patched.
#[derive(Debug, Clone, Copy)]
pub(super) struct Lzss {
    pub(super) offset_set: [Operand; 3],
}

/// The values an Open SigComp Deflate loop's bytes give its tables' places.
#[derive(Debug, Clone, Copy)]
pub(super) struct OscDeflate {
    /// The symbol of code 256 (end of block); codes 257.. follow it, so
    /// that 4 × symbol is the address of their (extra bits, base) entry.
    pub(super) length_start: u16,
    /// The symbol of code 280.
    pub(super) length_mid: u16,
    /// Added to a distance code before 4 × it addresses its entry.
    pub(super) distance_start: u16,
    /// How the 5-bit distance code is read.
    pub(super) distance_code: DistanceCode,
}

/// The two forms of the distance code's reading: Open SigComp's, and the
/// example's of RFC 4464 §4.1.4 that it follows otherwise.
#[derive(Debug, Clone, Copy)]
pub(super) enum DistanceCode {
    /// INPUT-BITS (5, index, !), ADD ($index, distance_start): the F-bit's
    /// order (Open SigComp).
    Bits,
    /// INPUT-HUFFMAN (index, !, 1, 5, 0, 31, distance_start): the H-bit's
    /// order (RFC 4464 §4.1.4).
    Huffman,
}
