//! The UDVM instruction set (RFC 3320 §9, Figure 11) as the assembler and
//! the disassembler see it: mnemonic, opcode and operand types.

use sigcomp::udvm::op;

/// Operand types of RFC 3320 §8.5.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OperandKind {
    /// `#` literal (Figure 8).
    Literal,
    /// `$` reference (Figure 9): always a memory address, written `$expr`.
    Reference,
    /// `%` multitype (Figure 10): a value, or `$expr` for `memory[expr]`.
    Multitype,
    /// `@` address: a multitype holding the target minus the address of the
    /// instruction, or `$expr` for an indirect target `memory[expr]`.
    Address,
}

use OperandKind::{Address as A, Literal as L, Multitype as M, Reference as R};

/// One UDVM instruction.
///
/// Variadic instructions (MULTILOAD, SWITCH, INPUT-HUFFMAN) have a literal
/// count operand at `fixed[count_at]` followed by `count` repetitions of
/// `group` after the fixed operands.
#[derive(Debug)]
pub struct InstrDef {
    /// The mnemonic, upper case with hyphens (RFC 3320 §9).
    pub name: &'static str,
    /// The opcode byte, 0..=35 (RFC 3320 §9, Figure 11).
    pub opcode: u8,
    /// The operands every occurrence has, in order.
    pub fixed: &'static [OperandKind],
    /// For a variadic instruction, the index in `fixed` of its literal
    /// count operand; None otherwise.
    pub count_at: Option<usize>,
    /// The operands repeated `count` times after `fixed`; empty unless
    /// variadic.
    pub group: &'static [OperandKind],
}

impl InstrDef {
    /// Whether the instruction ends with a counted repetition of `group`
    /// (MULTILOAD, SWITCH, INPUT-HUFFMAN).
    pub fn is_variadic(&self) -> bool {
        !self.group.is_empty()
    }
}

const fn def(name: &'static str, opcode: u8, fixed: &'static [OperandKind]) -> InstrDef {
    InstrDef { name, opcode, fixed, count_at: None, group: &[] }
}

/// All 36 instructions, indexed by opcode.
pub static INSTRUCTIONS: [InstrDef; 36] = [
    def("DECOMPRESSION-FAILURE", op::DECOMPRESSION_FAILURE, &[]),
    def("AND", op::AND, &[R, M]),
    def("OR", op::OR, &[R, M]),
    def("NOT", op::NOT, &[R]),
    def("LSHIFT", op::LSHIFT, &[R, M]),
    def("RSHIFT", op::RSHIFT, &[R, M]),
    def("ADD", op::ADD, &[R, M]),
    def("SUBTRACT", op::SUBTRACT, &[R, M]),
    def("MULTIPLY", op::MULTIPLY, &[R, M]),
    def("DIVIDE", op::DIVIDE, &[R, M]),
    def("REMAINDER", op::REMAINDER, &[R, M]),
    def("SORT-ASCENDING", op::SORT_ASCENDING, &[M, M, M]),
    def("SORT-DESCENDING", op::SORT_DESCENDING, &[M, M, M]),
    def("SHA-1", op::SHA_1, &[M, M, M]),
    def("LOAD", op::LOAD, &[M, M]),
    InstrDef { name: "MULTILOAD", opcode: op::MULTILOAD, fixed: &[M, L], count_at: Some(1), group: &[M] },
    def("PUSH", op::PUSH, &[M]),
    def("POP", op::POP, &[M]),
    def("COPY", op::COPY, &[M, M, M]),
    def("COPY-LITERAL", op::COPY_LITERAL, &[M, M, R]),
    def("COPY-OFFSET", op::COPY_OFFSET, &[M, M, R]),
    def("MEMSET", op::MEMSET, &[M, M, M, M]),
    def("JUMP", op::JUMP, &[A]),
    def("COMPARE", op::COMPARE, &[M, M, A, A, A]),
    def("CALL", op::CALL, &[A]),
    def("RETURN", op::RETURN, &[]),
    InstrDef { name: "SWITCH", opcode: op::SWITCH, fixed: &[L, M], count_at: Some(0), group: &[A] },
    def("CRC", op::CRC, &[M, M, M, A]),
    def("INPUT-BYTES", op::INPUT_BYTES, &[M, M, A]),
    def("INPUT-BITS", op::INPUT_BITS, &[M, M, A]),
    InstrDef {
        name: "INPUT-HUFFMAN",
        opcode: op::INPUT_HUFFMAN,
        fixed: &[M, A, L],
        count_at: Some(2),
        group: &[M, M, M, M],
    },
    def("STATE-ACCESS", op::STATE_ACCESS, &[M, M, M, M, M, M]),
    def("STATE-CREATE", op::STATE_CREATE, &[M, M, M, M, M]),
    def("STATE-FREE", op::STATE_FREE, &[M, M]),
    def("OUTPUT", op::OUTPUT, &[M, M]),
    def("END-MESSAGE", op::END_MESSAGE, &[M, M, M, M, M, M, M]),
];

/// The instruction with this mnemonic (exact, upper case).
pub fn by_name(name: &str) -> Option<&'static InstrDef> {
    INSTRUCTIONS.iter().find(|d| d.name == name)
}

/// The instruction with this opcode.
pub fn by_opcode(opcode: u8) -> Option<&'static InstrDef> {
    INSTRUCTIONS.get(usize::from(opcode))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_indexed_by_opcode() {
        for (i, d) in INSTRUCTIONS.iter().enumerate() {
            assert_eq!(usize::from(d.opcode), i, "{}", d.name);
            assert_eq!(by_name(d.name).map(|x| x.opcode), Some(d.opcode));
            if let Some(c) = d.count_at {
                assert_eq!(d.fixed[c], OperandKind::Literal);
            }
        }
        assert!(by_opcode(36).is_none());
    }
}
