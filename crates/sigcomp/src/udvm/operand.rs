//! Operands as decoded (RFC 3320 §8.5), and the cache of decoded
//! instructions a decoder loop repeats.

use super::op;

/// A decoded multitype operand (RFC 3320 §8.5, Figure 10): a value held in
/// the instruction's own bytes, or the word at a memory address, read each
/// time the instruction runs.
#[derive(Debug, Clone, Copy)]
pub(super) enum Operand {
    Value(u16),
    Memory(u16),
}

impl Operand {
    /// The address a reference operand names (decoded as
    /// [`Operand::Memory`]), or a slot number kept as a value.
    #[inline(always)]
    pub(super) fn address(self) -> u16 {
        match self {
            Operand::Value(a) | Operand::Memory(a) => a,
        }
    }
}

/// How an operand is encoded (RFC 3320 §8.5): multitype (%, and address @,
/// which is multitype plus the pc), or reference ($, decoded as the
/// [`Operand::Memory`] it names).
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    Multi,
    Reference,
}

/// The operands of the instructions [`DecodeCache`] keeps: those a decoder
/// loop repeats. INPUT-HUFFMAN, of any length, has [`HuffmanEntry`].
pub(super) fn operand_kinds(opcode: u8) -> Option<&'static [Kind]> {
    use Kind::{Multi, Reference};
    Some(match opcode {
        op::AND
        | op::OR
        | op::LSHIFT
        | op::RSHIFT
        | op::ADD
        | op::SUBTRACT
        | op::MULTIPLY
        | op::DIVIDE
        | op::REMAINDER => &[Reference, Multi],
        op::NOT => &[Reference],
        op::LOAD | op::OUTPUT => &[Multi, Multi],
        op::PUSH | op::POP | op::JUMP | op::CALL => &[Multi],
        op::RETURN => &[],
        op::COPY | op::INPUT_BITS => &[Multi, Multi, Multi],
        op::COPY_LITERAL | op::COPY_OFFSET => &[Multi, Multi, Reference],
        op::COMPARE => &[Multi; 5],
        _ => return None,
    })
}

/// An instruction with its operands decoded: the next instruction's
/// address, and up to five operands (COMPARE's), read when it runs.
#[derive(Debug, Clone, Copy)]
pub(super) struct Decoded {
    /// [`cache_key`] of the [`DecodeCache`] epoch it was decoded in and
    /// its pc: one comparison finds whether it is the instruction wanted.
    pub(super) key: u64,
    pub(super) next: u16,
    pub(super) opcode: u8,
    pub(super) ops: [Operand; 5],
}

impl Decoded {
    pub(super) const EMPTY: Decoded = Decoded { key: 0, next: 0, opcode: 0, ops: [Operand::Value(0); 5] };

    pub(super) fn pc(&self) -> u16 {
        self.key as u16
    }
}

/// The key of the instruction at `pc` decoded in `epoch` (never 0, so no
/// key matches an unused entry's 0).
#[inline(always)]
pub(super) fn cache_key(epoch: u32, pc: u16) -> u64 {
    (u64::from(epoch) << 16) | u64::from(pc)
}

/// [`DecodeCache`] entries: a power of two, indexed by the pc's low bits.
pub(super) const DECODED: usize = 256;

/// The entry after them holds an instruction decoded but not kept (its
/// key is 0, which no lookup matches), so that every decoded instruction
/// runs from the table.
pub(super) const UNKEPT: usize = DECODED;

/// Instructions decoded once and then run from their decoded form. The
/// decompressor keeps the cache between messages, so that no message
/// pays for clearing it: an entry is used only in the epoch it was made
/// in, and every run, and every write into cached instructions (bytecode
/// may rewrite itself), starts a new epoch.
#[derive(Debug, Default)]
pub struct DecodeCache {
    /// Allocated by the first run.
    pub(super) entries: Option<Box<[Decoded; DECODED + 1]>>,
    pub(super) epoch: u32,
}

/// Moves to the next epoch, making every entry stale; when the epoch
/// counter wraps, the entries are cleared so no old key can match again.
pub(super) fn next_epoch(epoch: &mut u32, entries: &mut [Decoded]) {
    *epoch = epoch.wrapping_add(1);
    if *epoch == 0 {
        for e in entries {
            e.key = 0;
        }
        *epoch = 1;
    }
}
