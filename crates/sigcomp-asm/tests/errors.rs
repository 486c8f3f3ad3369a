//! Bad assembly gets an error of the right kind at the right line and
//! column (1-based; the column counts characters).

use sigcomp_asm::{assemble, ErrorKind};

/// (source, line, column, kind, words the message must contain)
const CASES: &[(&str, u32, u32, ErrorKind, &str)] = &[
    ("at (128)\nJUMP (nowhere)\n", 2, 7, ErrorKind::UndefinedName, "undefined name 'nowhere'"),
    ("at (128)\nLOAD (64, (lbl + 2))\n", 2, 12, ErrorKind::UndefinedName, "'lbl'"),
    // RFC 4464 §3.2: a reference ($) operand must be written with '$' ...
    ("at (128)\nADD (5, 1)\n", 2, 6, ErrorKind::OperandType, "must be written with '$'"),
    ("at (128)\nCOPY-LITERAL (1, 2, 3)\n", 2, 21, ErrorKind::OperandType, "operand 3 of COPY-LITERAL"),
    // ... and a literal (#) operand cannot be
    ("at (128)\nMULTILOAD (64, $2, 1, 2)\n", 2, 16, ErrorKind::OperandType, "literal"),
    ("at (128)\nLOAD ($64, 70000)\n", 2, 12, ErrorKind::Range, "70000"),
    ("at (128)\nbyte (1, 2,\n  256)\n", 3, 3, ErrorKind::Range, "byte value 256"),
    ("at (128)\nword (65536)\n", 2, 7, ErrorKind::Range, "word value 65536"),
    ("at (128)\nreadonly (2)\n", 2, 11, ErrorKind::Range, "0 or 1"),
    // a branch target is an address in the 64 KiB UDVM memory
    ("at (128)\nJUMP (70000)\n", 2, 7, ErrorKind::Range, "address 70000"),
    ("at (128)\nFOO (1)\n", 2, 1, ErrorKind::UnknownMnemonic, "'FOO'"),
    ("at (128)\nfoo (1)\n", 2, 1, ErrorKind::UnknownDirective, "'foo'"),
    ("at (128)\n    OUTPUT (1)\n", 2, 5, ErrorKind::OperandCount, "OUTPUT takes 2 operands, found 1"),
    ("at (128)\nMULTILOAD (64, 3, 1, 2)\n", 2, 16, ErrorKind::OperandCount, "2 operands follow"),
    ("at (128)\nINPUT-HUFFMAN (64, x, 1, 1, 2)\n", 2, 1, ErrorKind::OperandCount, "groups of 4"),
    ("at (128)\nLOAD (64, )\n", 2, 11, ErrorKind::OperandCount, "operand 2 of LOAD is missing"),
    ("at (128)\n:a\n:a\n", 3, 1, ErrorKind::Redefinition, "line 2, column 1"),
    ("at (128)\nset (x, (1 / 0))\nLOAD (64, x)\n", 2, 9, ErrorKind::BadExpression, "division by zero"),
    ("at (128)\nLOAD (64, (1 + )\n", 2, 16, ErrorKind::BadExpression, "found ')'"),
    ("at (128)\nset (a, b)\nset (b, a)\nLOAD (64, a)\n", 2, 9, ErrorKind::BadExpression, "circular"),
    ("at (128)\n  LOAD (64, 1 # 2)\n", 2, 15, ErrorKind::Syntax, "'#'"),
    ("at (128)\nLOAD (64, 0x)\n", 2, 11, ErrorKind::Syntax, "without digits"),
    ("at (128)\nLOAD (64, 0x1g)\n", 2, 11, ErrorKind::Syntax, "'g'"),
    ("at (128)\nLOAD (64, 99999999999)\n", 2, 11, ErrorKind::Syntax, "too large"),
    ("at (128)\nLOAD (64, 1 < 2)\n", 2, 13, ErrorKind::Syntax, "'<'"),
    ("at (128)\nLoad (64, 1)\n", 2, 1, ErrorKind::Syntax, "upper case"),
    ("at (200)\nat (100)\n", 2, 1, ErrorKind::Layout, "already"),
    ("at (128)\npad (-1)\n", 2, 6, ErrorKind::Layout, "negative"),
    ("at (65535)\nLOAD (64, 1)\n", 2, 1, ErrorKind::Layout, "beyond the 64 KiB"),
    // RFC 4464 §3.2.1: '!' needs a zero byte in readonly memory
    ("at (128)\nJUMP (!)\n", 2, 7, ErrorKind::NoZeroByte, "zero byte"),
];

#[test]
fn each_error_has_its_kind_line_and_column() {
    let mut failures = Vec::new();
    for &(src, line, column, kind, words) in CASES {
        match assemble(src) {
            Ok(a) => failures.push(format!("{src:?}: assembled to {:02x?}", a.bytes)),
            Err(e) => {
                if (e.line, e.column, e.kind) != (line, column, kind) || !e.message.contains(words) {
                    failures.push(format!(
                        "{src:?}: got {}:{} {:?} {:?}, want {line}:{column} {kind:?} containing {words:?}",
                        e.line, e.column, e.kind, e.message
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The first error in source order is the one reported.
#[test]
fn earliest_error_is_reported() {
    let e = assemble("at (128)\nLOAD (64, y)\nLOAD (64, x)\n").unwrap_err();
    assert_eq!((e.line, e.column, e.kind), (2, 11, ErrorKind::UndefinedName));
    assert!(e.message.contains("'y'"));
}

/// `Display` gives "line L, column C: message", which the CLI prefixes with
/// the file name.
#[test]
fn display_names_line_and_column() {
    let e = assemble("\n\n   JUMP (x)").unwrap_err();
    assert_eq!(e.to_string(), "line 3, column 10: undefined name 'x'");
}

/// Operands may only be omitted where RFC 4464 §3.2 lets the assembler infer
/// them (the count of MULTILOAD, SWITCH and INPUT-HUFFMAN).
#[test]
fn inferred_count_is_checked() {
    let a = assemble("at (128)\nSWITCH (, $64, 128, 128)\n").unwrap();
    assert_eq!(a.bytes, [0x1a, 0x02, 0x60, 0x00, 0x00]);
    let e = assemble("at (128)\nSWITCH (3, $64, 128, 128)\n").unwrap_err();
    assert_eq!((e.line, e.column, e.kind), (2, 9, ErrorKind::OperandCount));
}
