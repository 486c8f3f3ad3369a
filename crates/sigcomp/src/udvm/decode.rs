//! Operands (RFC 3320 §8.5) and the decode cache: instructions a decoder
//! loop repeats are decoded once per run and then run from their
//! decoded form.

use super::operand::{Kind, UNKEPT};
use super::*;

impl Machine<'_> {
    /// Decodes the operands of the instruction at `pc`. A failure is the
    /// one decoding and running the operands in turn meets first (RFC 3320
    /// §8.5): the memory the operands before the failing one name is read
    /// first.
    #[inline(always)]
    pub(super) fn decode(&self, pc: u16, opcode: u8, kinds: &[Kind]) -> Res<Decoded> {
        let mut d = Decoded { key: cache_key(self.key_epoch, pc), next: 0, opcode, ops: [Operand::Value(0); 5] };
        let mut c = pc.wrapping_add(1);
        for (i, kind) in kinds.iter().enumerate() {
            let o = match kind {
                Kind::Multi => self.multi_operand(&mut c),
                Kind::Reference => self.reference(&mut c).map(Operand::Memory),
            };
            match o {
                Ok(o) => d.ops[i] = o,
                Err(e) => {
                    for &o in &d.ops[..i] {
                        self.value(o)?;
                    }
                    return Err(e);
                }
            }
        }
        d.next = c;
        Ok(d)
    }

    /// Keeps `d` for the next runs of its instruction, unless its bytes
    /// wrap around the end of memory; returns the entry now holding it.
    pub(super) fn keep_decoded(&mut self, d: Decoded) -> usize {
        let pc = d.pc();
        if d.next <= pc {
            self.decoded[UNKEPT] = Decoded { key: 0, ..d };
            return UNKEPT;
        }
        let i = usize::from(pc) & (DECODED - 1);
        self.decoded[i] = d;
        self.note_code(usize::from(pc), usize::from(d.next - pc));
        i
    }

    /// Widens the span of cached instructions to cover [at, at + len).
    pub(super) fn note_code(&mut self, at: usize, len: usize) {
        let end = (self.code_lo + self.code_len).max(at + len);
        self.code_lo = if self.code_len == 0 { at } else { self.code_lo.min(at) };
        self.code_len = end - self.code_lo;
    }

    /// Literal (#), Figure 8.
    #[inline(always)]
    pub(super) fn lit(&self, c: &mut u16) -> Res<u16> {
        let b0 = self.byte(*c)?;
        *c = c.wrapping_add(1);
        if b0 & 0x80 == 0 {
            Ok(u16::from(b0))
        } else if b0 & 0xC0 == 0x80 {
            let b1 = self.byte(*c)?;
            *c = c.wrapping_add(1);
            Ok((u16::from(b0 & 0x3F) << 8) | u16::from(b1))
        } else if b0 == 0xC0 {
            let v = self.word(*c)?;
            *c = c.wrapping_add(2);
            Ok(v)
        } else {
            fail(Reason::InvalidOperand)
        }
    }

    /// Reference ($), Figure 9: returns the address of the 2-byte value.
    #[inline(always)]
    pub(super) fn reference(&self, c: &mut u16) -> Res<u16> {
        let b0 = self.byte(*c)?;
        *c = c.wrapping_add(1);
        if b0 & 0x80 == 0 {
            Ok(u16::from(b0) * 2)
        } else if b0 & 0xC0 == 0x80 {
            let b1 = self.byte(*c)?;
            *c = c.wrapping_add(1);
            Ok(((u16::from(b0 & 0x3F) << 8) | u16::from(b1)).wrapping_mul(2))
        } else if b0 == 0xC0 {
            let v = self.word(*c)?;
            *c = c.wrapping_add(2);
            Ok(v)
        } else {
            fail(Reason::InvalidOperand)
        }
    }

    /// Multitype (%), Figure 10.
    #[inline(always)]
    pub(super) fn multi(&self, c: &mut u16) -> Res<u16> {
        let o = self.multi_operand(c)?;
        self.value(o)
    }

    /// Decodes a multitype operand without reading the memory it names.
    #[inline(always)]
    pub(super) fn multi_operand(&self, c: &mut u16) -> Res<Operand> {
        let b0 = self.byte(*c)?;
        *c = c.wrapping_add(1);
        match b0 {
            0x00..=0x3F => Ok(Operand::Value(u16::from(b0))),
            0x40..=0x7F => Ok(Operand::Memory(u16::from(b0 & 0x3F) * 2)),
            0x86 | 0x87 => Ok(Operand::Value(1 << ((b0 & 1) + 6))),
            0x88..=0x8F => Ok(Operand::Value(1 << ((b0 & 7) + 8))),
            0xE0..=0xFF => Ok(Operand::Value(u16::from(b0 & 0x1F) + 65504)),
            0x90..=0xDF => {
                let b1 = self.byte(*c)?;
                *c = c.wrapping_add(1);
                match b0 {
                    0x90..=0x9F => Ok(Operand::Value(((u16::from(b0 & 0x0F) << 8) | u16::from(b1)) + 61440)),
                    0xA0..=0xBF => Ok(Operand::Value((u16::from(b0 & 0x1F) << 8) | u16::from(b1))),
                    _ => Ok(Operand::Memory((u16::from(b0 & 0x1F) << 8) | u16::from(b1))),
                }
            }
            0x80 | 0x81 => {
                let n = self.word(*c)?;
                *c = c.wrapping_add(2);
                if b0 == 0x80 {
                    Ok(Operand::Value(n))
                } else {
                    Ok(Operand::Memory(n))
                }
            }
            _ => fail(Reason::InvalidOperand), // 0x82..=0x85 are unassigned
        }
    }

    /// The value of a decoded operand now.
    #[inline(always)]
    pub(super) fn value(&self, o: Operand) -> Res<u16> {
        match o {
            Operand::Value(v) => Ok(v),
            Operand::Memory(a) => self.word(a),
        }
    }

    /// Address (@): multitype plus the instruction's own address.
    #[inline(always)]
    pub(super) fn address(&self, c: &mut u16, pc: u16) -> Res<u16> {
        Ok(pc.wrapping_add(self.multi(c)?))
    }

    /// Skips one operand's encoding without resolving it (for MULTILOAD's
    /// overlap check, RFC 4896 §3.2).
    pub(super) fn skip_multi(&self, c: &mut u16) -> Res<()> {
        let b0 = self.byte(*c)?;
        let len: u16 = match b0 {
            0x00..=0x7F | 0x86..=0x8F | 0xE0..=0xFF => 1,
            0x90..=0xDF => 2,
            0x80 | 0x81 => 3,
            _ => return fail(Reason::InvalidOperand),
        };
        *c = c.wrapping_add(len);
        Ok(())
    }
}
