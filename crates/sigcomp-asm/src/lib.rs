//! Assembler and disassembler for the UDVM assembly language of RFC 4464 §3
//! (the bytecode of SigComp, RFC 3320).
//!
//! ```
//! let asm = sigcomp_asm::assemble(
//!     "at (128)\n\
//!      OUTPUT (text, 2)\n\
//!      END-MESSAGE (0, 0, 0, 0, 0, 0, 0)\n\
//!      :text byte (0x68, 0x69)",
//! )
//! .unwrap();
//! assert_eq!(asm.start, 128);
//! assert_eq!(asm.bytes, [0x22, 0xa0, 0x8c, 0x02, 0x23, 0, 0, 0, 0, 0, 0, 0, 0x68, 0x69]);
//! assert_eq!(asm.labels["text"], 140);
//!
//! let text = sigcomp_asm::disassemble(&asm.bytes, asm.start);
//! assert_eq!(sigcomp_asm::assemble(&text).unwrap().bytes, asm.bytes);
//! ```
//!
//! See README.md (beside Cargo.toml) for the language accepted, its
//! extensions, and where the RFC examples' printed sources and bytes
//! disagree.

#![forbid(unsafe_code)]

mod asm;
mod disasm;
pub mod encode;
pub mod isa;
mod parse;

use std::collections::BTreeMap;
use std::fmt;

/// What kind of mistake an [`AsmError`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Lexical or grammatical error outside expressions.
    Syntax,
    /// An upper-case word that is not a UDVM instruction.
    UnknownMnemonic,
    /// A lower-case word in statement position that is not a directive.
    UnknownDirective,
    /// A name that is neither a label nor set with `set`.
    UndefinedName,
    /// A malformed expression, division by zero, circular definition, ...
    BadExpression,
    /// Wrong number of operands (or directive arguments), a missing
    /// operand, or a count operand that does not match.
    OperandCount,
    /// `$` on a literal operand, or missing on a reference operand.
    OperandType,
    /// A value that does not fit (byte, word, operand, readonly flag).
    Range,
    /// `at` going backwards, negative padding, bytecode beyond 64 KiB, or a
    /// layout that does not settle.
    Layout,
    /// A label or `set` name defined twice.
    Redefinition,
    /// `!` used with no zero byte in readonly memory.
    NoZeroByte,
}

/// An assembly error, located at a 1-based line and column (in characters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AsmError {
    pub line: u32,
    pub column: u32,
    pub kind: ErrorKind,
    pub message: String,
}

impl fmt::Display for AsmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}: {}", self.line, self.column, self.message)
    }
}

impl std::error::Error for AsmError {}

/// The result of assembling: a UDVM memory image and the symbols.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assembly {
    /// Lowest address written by an instruction, `byte` or `word` (0 when
    /// nothing was written).
    pub start: u16,
    /// Memory from `start` up to the highest address written.  Padding
    /// (`pad`, `align`, `at`) inside this range reads as 0.
    pub bytes: Vec<u8>,
    /// Address of the first instruction in the source, if any.
    pub entry: Option<u16>,
    /// Labels (`:name`) and their addresses (65536 for a label at the very
    /// end of memory).
    pub labels: BTreeMap<String, u32>,
    /// Names given values with `set`.
    pub constants: BTreeMap<String, i64>,
    /// Per byte of `bytes`: written (true) or padding (false).
    written: Vec<bool>,
}

impl Assembly {
    /// One past the highest address written.
    pub fn end(&self) -> u32 {
        u32::from(self.start) + self.bytes.len() as u32
    }

    /// The byte at `address` if an instruction or data directive wrote it
    /// (`None` for padding and addresses outside the image).
    pub fn byte_at(&self, address: u16) -> Option<u8> {
        let i = usize::from(address.checked_sub(self.start)?);
        if *self.written.get(i)? {
            self.bytes.get(i).copied()
        } else {
            None
        }
    }

    /// The bytecode to upload with the standard SigComp header (RFC 4464
    /// §3.3): from the first instruction (which becomes the destination) up
    /// to the last non-zero byte, since the UDVM initialises the rest of its
    /// memory to zero.
    pub fn upload(&self) -> Result<Upload, UploadError> {
        let e = |m: String| Err(UploadError(m));
        let Some(dest) = self.entry else {
            return e("there is no instruction to start at".into());
        };
        if dest % 64 != 0 || !(128..=1024).contains(&dest) {
            return e(format!(
                "the first instruction is at {dest}; the SigComp header can only start bytecode at a multiple of 64 from 128 to 1024"
            ));
        }
        for a in self.start..dest {
            if let Some(b) = self.byte_at(a) {
                if a < 32 {
                    return e(format!("address {a} is written, but addresses 0-31 hold the UDVM useful values"));
                }
                if b != 0 {
                    return e(format!(
                        "address {a} (below the first instruction at {dest}) holds {b:#04x}; the UDVM initialises it to 0"
                    ));
                }
            }
        }
        let from = usize::from(dest - self.start);
        let mut code = self.bytes.get(from..).unwrap_or_default().to_vec();
        while code.last() == Some(&0) {
            code.pop();
        }
        if code.len() > 4095 {
            return e(format!("{} bytes of bytecode do not fit the 12-bit code_len field", code.len()));
        }
        Ok(Upload { destination: dest, code })
    }
}

/// Bytecode ready for the SigComp header (RFC 3320 §7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upload {
    /// Where the bytecode is loaded and starts executing.
    pub destination: u16,
    /// The bytes from `destination` on.
    pub code: Vec<u8>,
}

impl Upload {
    /// `0xf8`, 12-bit code_len, 4-bit destination (without returned
    /// feedback).
    pub fn header(&self) -> [u8; 3] {
        let len = self.code.len() as u16;
        let d = (self.destination / 64).saturating_sub(1) as u8 & 0x0F;
        [0xF8, (len >> 4) as u8, ((len & 0x0F) as u8) << 4 | d]
    }

    /// A complete SigComp message: header, bytecode, compressed data.
    pub fn message(&self, compressed: &[u8]) -> Vec<u8> {
        let mut m = self.header().to_vec();
        m.extend_from_slice(&self.code);
        m.extend_from_slice(compressed);
        m
    }
}

/// Why an [`Assembly`] cannot be uploaded with the standard header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UploadError(pub String);

impl fmt::Display for UploadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UploadError {}

/// Assembles RFC 4464 UDVM assembly into a memory image.
///
/// Operands get their shortest encoding; forward references are resolved by
/// repeating the layout until every encoding, label and `!` target agrees
/// with the layout it produces.
pub fn assemble(src: &str) -> Result<Assembly, AsmError> {
    asm::assemble_items(parse::parse(src)?)
}

/// Disassembles `code` loaded at `load_address` into assembly that
/// [`assemble`]s back to the same bytes at the same address.
///
/// Instructions reachable from `load_address` are shown as instructions
/// (with labels for branch targets), and so are valid instructions found by
/// a linear sweep of the bytes left over (code reached by indirect jumps);
/// everything else, and instructions whose operands are not in their
/// shortest encoding, become `byte (...)` lines.  Bytes that would lie
/// beyond address 65535 are dropped.
///
/// UDVM memory past the bytecode is zero (RFC 3320 §7), and bytecode often
/// leaves out the zero operands at its very end (RFC 4464 Appendix A does):
/// such a last instruction is shown complete, so the text then assembles to
/// `code` followed by those zero bytes.
pub fn disassemble(code: &[u8], load_address: u16) -> String {
    disasm::disassemble(code, load_address)
}
