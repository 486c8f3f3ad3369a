//! Operand encodings of RFC 3320 §8.5 (Figures 8, 9 and 10), both ways.

/// How an operand's integer is put into bytecode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Form {
    /// Literal `#` (Figure 8): the value itself.
    Literal,
    /// Reference `$` (Figure 9): an address of a 2-byte value.
    Reference,
    /// Multitype `%` (Figure 10) holding a value (also used for address
    /// operands, holding the offset from the instruction).
    MultiValue,
    /// Multitype `%` (Figure 10) holding `memory[address]`.
    MultiMemory,
}

/// The encoding of `v` in `form` that is exactly `len` (1..=3) bytes long,
/// if there is one.  For every form and length there is at most one.
pub fn encode_len(form: Form, v: u16, len: usize) -> Option<Vec<u8>> {
    let [hi, lo] = v.to_be_bytes();
    match (form, len) {
        (Form::Literal, 1) if v < 0x80 => Some(vec![lo]),
        (Form::Literal, 2) if v < 0x4000 => Some(vec![0x80 | hi, lo]),
        (Form::Reference, 1) if v.is_multiple_of(2) && v < 0x100 => Some(vec![(v / 2) as u8]),
        (Form::Reference, 2) if v.is_multiple_of(2) && v < 0x8000 => {
            let [h, l] = (v / 2).to_be_bytes();
            Some(vec![0x80 | h, l])
        }
        (Form::Literal | Form::Reference, 3) => Some(vec![0xC0, hi, lo]),
        (Form::MultiValue, 1) => match v {
            0..=63 => Some(vec![lo]),
            64 => Some(vec![0x86]),
            128 => Some(vec![0x87]),
            0x100 | 0x200 | 0x400 | 0x800 | 0x1000 | 0x2000 | 0x4000 | 0x8000 => {
                Some(vec![0x88 | (v.trailing_zeros() as u8 - 8)])
            }
            65504..=65535 => Some(vec![0xE0 | (v - 65504) as u8]),
            _ => None,
        },
        (Form::MultiValue, 2) => match v {
            0..=8191 => Some(vec![0xA0 | hi, lo]),
            61440..=65535 => {
                let [h, l] = (v - 61440).to_be_bytes();
                Some(vec![0x90 | h, l])
            }
            _ => None,
        },
        (Form::MultiValue, 3) => Some(vec![0x80, hi, lo]),
        (Form::MultiMemory, 1) if v.is_multiple_of(2) && v < 128 => Some(vec![0x40 | (v / 2) as u8]),
        (Form::MultiMemory, 2) if v < 8192 => Some(vec![0xC0 | hi, lo]),
        (Form::MultiMemory, 3) => Some(vec![0x81, hi, lo]),
        _ => None,
    }
}

/// The shortest encoding of `v` in `form` that is at least `min_len` bytes
/// long (a 3-byte encoding always exists).
pub fn encode_min(form: Form, v: u16, min_len: usize) -> Vec<u8> {
    (min_len.max(1)..=3)
        .find_map(|len| encode_len(form, v, len))
        .unwrap_or_else(|| encode_len(form, v, 3).unwrap_or_default())
}

/// The shortest encoding of `v` in `form`.
pub fn encode(form: Form, v: u16) -> Vec<u8> {
    encode_min(form, v, 1)
}

/// A decoded operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// The integer in the bytecode: a value, or an address when `memory`.
    pub value: u16,
    /// True for references and for multitypes of the `memory[N]` kinds.
    pub memory: bool,
    /// Bytes used.
    pub len: usize,
}

fn word(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?]))
}

/// Decodes a literal (`reference == false`) or reference operand at the
/// start of `b`.
pub fn decode_literal(b: &[u8], reference: bool) -> Option<Decoded> {
    let b0 = *b.first()?;
    let (n, len, scaled) = if b0 & 0x80 == 0 {
        (u16::from(b0), 1, true)
    } else if b0 & 0xC0 == 0x80 {
        ((u16::from(b0 & 0x3F) << 8) | u16::from(*b.get(1)?), 2, true)
    } else if b0 == 0xC0 {
        (word(b, 1)?, 3, false)
    } else {
        return None;
    };
    let value = if reference && scaled { n.wrapping_mul(2) } else { n };
    Some(Decoded { value, memory: reference, len })
}

/// Decodes a multitype operand at the start of `b`.
pub fn decode_multitype(b: &[u8]) -> Option<Decoded> {
    let b0 = *b.first()?;
    let d = |value: u16, memory: bool, len: usize| Some(Decoded { value, memory, len });
    match b0 {
        0x00..=0x3F => d(u16::from(b0), false, 1),
        0x40..=0x7F => d(u16::from(b0 & 0x3F) * 2, true, 1),
        0x86 | 0x87 => d(1 << ((b0 & 1) + 6), false, 1),
        0x88..=0x8F => d(1 << ((b0 & 7) + 8), false, 1),
        0xE0..=0xFF => d(u16::from(b0 & 0x1F) + 65504, false, 1),
        0x90..=0x9F => d(((u16::from(b0 & 0x0F) << 8) | u16::from(*b.get(1)?)) + 61440, false, 2),
        0xA0..=0xBF => d((u16::from(b0 & 0x1F) << 8) | u16::from(*b.get(1)?), false, 2),
        0xC0..=0xDF => d((u16::from(b0 & 0x1F) << 8) | u16::from(*b.get(1)?), true, 2),
        0x80 => d(word(b, 1)?, false, 3),
        0x81 => d(word(b, 1)?, true, 3),
        _ => None, // 0x82..=0x85 are unassigned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_round_trips_in_every_form_and_length() {
        for v in 0..=u16::MAX {
            for form in [Form::Literal, Form::Reference, Form::MultiValue, Form::MultiMemory] {
                let mut any = false;
                for len in 1..=3 {
                    let Some(bytes) = encode_len(form, v, len) else { continue };
                    any = true;
                    assert_eq!(bytes.len(), len);
                    let d = match form {
                        Form::Literal => decode_literal(&bytes, false),
                        Form::Reference => decode_literal(&bytes, true),
                        _ => decode_multitype(&bytes),
                    }
                    .unwrap();
                    assert_eq!((d.value, d.len), (v, len), "{form:?} {v}");
                    assert_eq!(d.memory, matches!(form, Form::Reference | Form::MultiMemory));
                }
                assert!(any);
            }
        }
    }

    #[test]
    fn shortest_encodings() {
        assert_eq!(encode(Form::MultiValue, 64), [0x86]);
        assert_eq!(encode(Form::MultiValue, 8192), [0x8d]);
        assert_eq!(encode(Form::MultiValue, 65525), [0xf5]);
        assert_eq!(encode(Form::MultiValue, 63809), [0x99, 0x41]);
        assert_eq!(encode(Form::MultiValue, 21845), [0x80, 0x55, 0x55]);
        assert_eq!(encode(Form::MultiMemory, 64), [0x60]);
        assert_eq!(encode(Form::MultiMemory, 255), [0xc0, 0xff]);
        assert_eq!(encode(Form::Reference, 255), [0xc0, 0x00, 0xff]);
        assert_eq!(encode(Form::Reference, 68), [0x22]);
        // 16384 has a 1- and a 3-byte multitype encoding but no 2-byte one
        assert_eq!(encode_min(Form::MultiValue, 16384, 2), [0x80, 0x40, 0x00]);
    }
}
