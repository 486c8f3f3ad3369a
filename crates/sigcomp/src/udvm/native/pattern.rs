//! Matching the bytes of a token loop against the instructions a native
//! decoder implements.
//!
//! A pattern is read with the UDVM's own operand decoders (RFC 3320 §8.5),
//! so an instruction matches exactly when the UDVM would decode it as the
//! pattern says: same opcode, each operand of the same kind (a value held
//! in the instruction, or the word at a named address) and the same value.
//! Addresses (@) are kept absolute, as the UDVM computes them from the
//! instruction's own address.

use super::super::operand::Operand;
use super::super::Machine;

/// A cursor over the instructions from one address.
pub(in crate::udvm) struct Pattern<'m, 'a> {
    m: &'m Machine<'a>,
    /// Where the next operand or opcode is read.
    at: u16,
    /// The address of the instruction being read: `@` operands are
    /// relative to it.
    instruction: u16,
}

impl<'m, 'a> Pattern<'m, 'a> {
    /// Reading from `pc`.
    pub(in crate::udvm) fn at(m: &'m Machine<'a>, pc: u16) -> Self {
        Pattern { m, at: pc, instruction: pc }
    }

    /// The same memory read again from `at` (an alternative form of the
    /// instructions there).
    pub(in crate::udvm) fn at_resumed(other: &Pattern<'m, 'a>, at: u16) -> Self {
        Pattern { m: other.m, at, instruction: at }
    }

    /// The address of the next byte to be read: the next instruction's,
    /// after the operands of one.
    pub(in crate::udvm) fn here(&self) -> u16 {
        self.at
    }

    /// The next instruction has opcode `opcode`.
    pub(in crate::udvm) fn op(&mut self, opcode: u8) -> Option<()> {
        self.instruction = self.at;
        let b = self.m.byte(self.at).ok()?;
        self.at = self.at.checked_add(1)?;
        (b == opcode).then_some(())
    }

    /// The next multitype operand, decoded (%).
    pub(in crate::udvm) fn multi(&mut self) -> Option<Operand> {
        let mut c = self.at;
        let o = self.m.multi_operand(&mut c).ok()?;
        self.advance(c)?;
        Some(o)
    }

    /// The next multitype operand is the value `v`, held in the
    /// instruction.
    pub(in crate::udvm) fn value(&mut self, v: u16) -> Option<()> {
        match self.multi()? {
            Operand::Value(x) if x == v => Some(()),
            _ => None,
        }
    }

    /// The next multitype operand is the word at `address` ($address
    /// written as a multitype operand).
    pub(in crate::udvm) fn memory(&mut self, address: u16) -> Option<()> {
        match self.multi()? {
            Operand::Memory(a) if a == address => Some(()),
            _ => None,
        }
    }

    /// The next reference operand ($) names `address`.
    pub(in crate::udvm) fn reference(&mut self, address: u16) -> Option<()> {
        let mut c = self.at;
        let a = self.m.reference(&mut c).ok()?;
        self.advance(c)?;
        (a == address).then_some(())
    }

    /// The next literal operand (#) is `v`.
    pub(in crate::udvm) fn literal(&mut self, v: u16) -> Option<()> {
        let mut c = self.at;
        let x = self.m.lit(&mut c).ok()?;
        self.advance(c)?;
        (x == v).then_some(())
    }

    /// The next address operand (@), held in the instruction: the absolute
    /// address it names.
    pub(in crate::udvm) fn target(&mut self) -> Option<u16> {
        match self.multi()? {
            Operand::Value(rel) => Some(self.instruction.wrapping_add(rel)),
            Operand::Memory(_) => None,
        }
    }

    /// The next address operand names `address`.
    pub(in crate::udvm) fn target_is(&mut self, address: u16) -> Option<()> {
        (self.target()? == address).then_some(())
    }

    /// The next instruction starts here (the branch a COMPARE took lands
    /// on it).
    pub(in crate::udvm) fn lands(&self, address: u16) -> Option<()> {
        (self.at == address).then_some(())
    }

    /// Moves on to `c`; a loop whose bytes wrap around the end of memory
    /// is not matched.
    fn advance(&mut self, c: u16) -> Option<()> {
        if c <= self.at {
            return None;
        }
        self.at = c;
        Some(())
    }
}
