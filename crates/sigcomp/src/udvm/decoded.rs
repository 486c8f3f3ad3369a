//! The instructions a decoder loop repeats, run from their decoded form
//! ([`Decoded`]): one function per instruction (or family), each inlined
//! into [`Machine::exec`]'s single dispatch. Semantics per RFC 3320 §9.1–9.4
//! as corrected by RFC 4896 §3; every instruction is charged before it acts.

use super::*;

impl Machine<'_> {
    /// AND, OR, LSHIFT, RSHIFT, ADD, SUBTRACT, MULTIPLY, DIVIDE and
    /// REMAINDER (RFC 3320 §9.1.1–9.1.2): `$operand_1 := $operand_1 op
    /// operand_2`, modulo 2^16.
    #[inline(always)]
    pub(super) fn exec_arithmetic(&mut self, opcode: u8, i: usize, next: u16) -> Res<u16> {
        let o = self.decoded[i].ops;
        let a = o[0].address();
        let m = self.word(a)?;
        let n = self.value(o[1])?;
        self.charge(1)?;
        let r = match opcode {
            op::AND => m & n,
            op::OR => m | n,
            op::LSHIFT => m.checked_shl(u32::from(n)).unwrap_or(0),
            op::RSHIFT => m.checked_shr(u32::from(n)).unwrap_or(0),
            op::ADD => m.wrapping_add(n),
            op::SUBTRACT => m.wrapping_sub(n),
            op::MULTIPLY => m.wrapping_mul(n),
            op::DIVIDE => match m.checked_div(n) {
                Some(v) => v,
                None => return fail(Reason::DivByZero),
            },
            _ => match m.checked_rem(n) {
                Some(v) => v,
                None => return fail(Reason::DivByZero),
            },
        };
        self.set_word(a, r)?;
        Ok(next)
    }

    /// NOT (RFC 3320 §9.1.1).
    #[inline(always)]
    pub(super) fn exec_not(&mut self, i: usize, next: u16) -> Res<u16> {
        let o = self.decoded[i].ops;
        let a = o[0].address();
        let m = self.word(a)?;
        self.charge(1)?;
        self.set_word(a, !m)?;
        Ok(next)
    }

    /// LOAD (RFC 3320 §9.2.1).
    #[inline(always)]
    pub(super) fn exec_load(&mut self, i: usize, next: u16) -> Res<u16> {
        let o = self.decoded[i].ops;
        let address = self.value(o[0])?;
        let value = self.value(o[1])?;
        self.charge(1)?;
        self.set_word(address, value)?;
        Ok(next)
    }

    /// PUSH (RFC 3320 §9.2.3).
    #[inline(always)]
    pub(super) fn exec_push(&mut self, i: usize, next: u16) -> Res<u16> {
        let o = self.decoded[i].ops;
        let v = self.value(o[0])?;
        self.charge(1)?;
        self.push(v)?;
        Ok(next)
    }

    /// POP (RFC 3320 §9.2.3).
    #[inline(always)]
    pub(super) fn exec_pop(&mut self, i: usize, next: u16) -> Res<u16> {
        let o = self.decoded[i].ops;
        let address = self.value(o[0])?;
        self.charge(1)?;
        let v = self.pop()?;
        self.set_word(address, v)?;
        Ok(next)
    }

    /// COPY (RFC 3320 §9.2.4), under byte copying rules (§8.4).
    #[inline(always)]
    pub(super) fn exec_copy(&mut self, i: usize, next: u16) -> Res<u16> {
        let o = self.decoded[i].ops;
        let position = self.value(o[0])?;
        let length = self.value(o[1])?;
        let destination = self.value(o[2])?;
        self.charge(1 + u64::from(length))?;
        let (bcl, bcr) = self.bounds()?;
        self.copy(position, length, destination, bcl, bcr)?;
        Ok(next)
    }

    /// COPY-LITERAL and COPY-OFFSET (RFC 3320 §9.2.5–9.2.6): the
    /// destination operand is a reference, advanced past the bytes copied.
    #[inline(always)]
    pub(super) fn exec_copy_literal_or_offset(&mut self, opcode: u8, i: usize, next: u16) -> Res<u16> {
        let o = self.decoded[i].ops;
        let first = self.value(o[0])?;
        let length = self.value(o[1])?;
        let dref = o[2].address();
        let destination = self.word(dref)?;
        self.charge(1 + u64::from(length))?;
        let (bcl, bcr) = self.bounds()?;
        let position = if opcode == op::COPY_LITERAL { first } else { offset_back(destination, first, bcl, bcr) };
        let after = self.copy(position, length, destination, bcl, bcr)?;
        if length > 0 {
            self.set_word(dref, after)?;
        }
        Ok(next)
    }

    /// JUMP (RFC 3320 §9.3.1).
    #[inline(always)]
    pub(super) fn exec_jump(&mut self, pc: u16, i: usize) -> Res<u16> {
        let o = self.decoded[i].ops;
        let a = pc.wrapping_add(self.value(o[0])?);
        self.charge(1)?;
        self.jump_target(a)
    }

    /// COMPARE (RFC 3320 §9.3.2): every address operand is read, then one
    /// taken.
    #[inline(always)]
    pub(super) fn exec_compare(&mut self, pc: u16, i: usize) -> Res<u16> {
        let o = self.decoded[i].ops;
        let v1 = self.value(o[0])?;
        let v2 = self.value(o[1])?;
        let a1 = pc.wrapping_add(self.value(o[2])?);
        let a2 = pc.wrapping_add(self.value(o[3])?);
        let a3 = pc.wrapping_add(self.value(o[4])?);
        self.charge(1)?;
        let t = match v1.cmp(&v2) {
            std::cmp::Ordering::Less => a1,
            std::cmp::Ordering::Equal => a2,
            std::cmp::Ordering::Greater => a3,
        };
        self.jump_target(t)
    }

    /// CALL (RFC 3320 §9.3.3): the next instruction's address is pushed.
    #[inline(always)]
    pub(super) fn exec_call(&mut self, pc: u16, i: usize, next: u16) -> Res<u16> {
        let o = self.decoded[i].ops;
        let a = pc.wrapping_add(self.value(o[0])?);
        self.charge(1)?;
        self.push(next)?;
        self.jump_target(a)
    }

    /// INPUT-BITS (RFC 3320 §9.4.3, RFC 4896 §3.1): jumps to its address
    /// when the input runs short; the bits read earn cycles (§8.6).
    #[inline(always)]
    pub(super) fn exec_input_bits(&mut self, pc: u16, i: usize, next: u16) -> Res<u16> {
        let o = self.decoded[i].ops;
        let length = self.value(o[0])?;
        let destination = self.value(o[1])?;
        let a = pc.wrapping_add(self.value(o[2])?);
        self.charge(1)?;
        let order = self.bit_order()?;
        if length > 16 {
            return fail(Reason::TooManyBitsRequested);
        }
        let p = order & 1 != 0;
        self.check_p(p);
        if self.bits_available() < usize::from(length) {
            return self.jump_target(a);
        }
        let v = self.take_bits(u32::from(length), p, order & 4 != 0);
        self.set_word(destination, v)?;
        self.credit_bits(u64::from(length));
        Ok(next)
    }

    /// OUTPUT (RFC 3320 §9.4.8): at most [`MAX_OUTPUT`] bytes per message.
    #[inline(always)]
    pub(super) fn exec_output(&mut self, i: usize, next: u16) -> Res<u16> {
        let o = self.decoded[i].ops;
        let start = self.value(o[0])?;
        let length = self.value(o[1])?;
        self.charge(1 + u64::from(length))?;
        if self.output.len() + usize::from(length) > MAX_OUTPUT {
            return fail(Reason::OutputOverflow);
        }
        let (bcl, bcr) = self.bounds()?;
        read_string(self.mem, start, length, bcl, bcr, self.output)?;
        self.output_seen = true;
        Ok(next)
    }
}
