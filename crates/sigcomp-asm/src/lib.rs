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

use sigcomp::wire::{self, EmitError};

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
    /// Line of the source the error is on, from 1.
    pub line: u32,
    /// Column on that line, in characters, from 1.
    pub column: u32,
    /// What kind of mistake it is.
    pub kind: ErrorKind,
    /// The mistake in words, as [`Display`](fmt::Display) shows it after
    /// the position.
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
    /// memory to zero. At least one byte is kept: a code_len of 0 would mark
    /// a NACK (RFC 4077 §3.1).
    pub fn upload(&self) -> Result<Upload, UploadError> {
        let Some(entry) = self.entry else {
            return Err(UploadError::NoInstruction);
        };
        for address in self.start..entry {
            if let Some(value) = self.byte_at(address) {
                if address < 32 {
                    return Err(UploadError::UsefulValuesWritten { address });
                }
                if value != 0 {
                    return Err(UploadError::NonZeroBelowEntry { address, value, entry });
                }
            }
        }
        let from = usize::from(entry.saturating_sub(self.start));
        let mut code = self.bytes.get(from..).unwrap_or_default().to_vec();
        while code.len() > 1 && code.last() == Some(&0) {
            code.pop();
        }
        let upload = Upload { destination: entry, code };
        // The header writer of `sigcomp::wire` decides what the header can
        // carry: the destination field and the 12-bit code_len.
        upload.message(&[]).map_err(UploadError::Header)?;
        Ok(upload)
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
    /// A complete SigComp message (RFC 3320 §7.3, without returned
    /// feedback): the header that uploads the bytecode, then the
    /// compressed data. Fails only for an `Upload` not made by
    /// [`Assembly::upload`] whose destination or length the header cannot
    /// carry.
    pub fn message(&self, compressed: &[u8]) -> Result<Vec<u8>, EmitError> {
        wire::emit_bytecode_message(None, &self.code, self.destination, compressed)
    }
}

/// Why an [`Assembly`] cannot be uploaded with the standard header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UploadError {
    /// The source has no instruction to start at.
    NoInstruction,
    /// An address below 32 is written, but the UDVM sets addresses 0-31
    /// itself (the useful values, RFC 3320 §7.2).
    UsefulValuesWritten {
        /// The lowest such address written.
        address: u16,
    },
    /// A non-zero byte below the first instruction: the upload starts at
    /// the instruction, and the UDVM initialises the memory below to zero
    /// (RFC 3320 §7.3).
    NonZeroBelowEntry {
        /// The lowest address below `entry` holding a non-zero byte.
        address: u16,
        /// The byte there.
        value: u8,
        /// The address of the first instruction.
        entry: u16,
    },
    /// The SigComp header cannot carry the bytecode: the first instruction
    /// is not at a multiple of 64 from 128 to 1024, or the bytecode is over
    /// 4095 bytes (RFC 3320 §7.3).
    Header(EmitError),
}

impl fmt::Display for UploadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UploadError::NoInstruction => f.write_str("there is no instruction to start at"),
            UploadError::UsefulValuesWritten { address } => {
                write!(f, "address {address} is written, but addresses 0-31 hold the UDVM useful values")
            }
            UploadError::NonZeroBelowEntry { address, value, entry } => write!(
                f,
                "address {address} (below the first instruction at {entry}) holds {value:#04x}; the UDVM initialises it to 0"
            ),
            UploadError::Header(EmitError::BadDestination { destination }) => write!(
                f,
                "the first instruction is at {destination}; the SigComp header can only start bytecode at a multiple of 64 from 128 to 1024"
            ),
            UploadError::Header(e) => write!(f, "the SigComp header cannot carry the bytecode: {e}"),
        }
    }
}

impl std::error::Error for UploadError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            UploadError::Header(e) => Some(e),
            _ => None,
        }
    }
}

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
