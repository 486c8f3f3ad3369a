//! Property tests: disassembly round trips for random instruction
//! sequences, and no panics on arbitrary input.

use proptest::prelude::*;
use sigcomp_asm::encode::{encode_len, Form};
use sigcomp_asm::isa::{OperandKind, INSTRUCTIONS};

/// One operand: its encoding form and value.
#[derive(Clone, Debug)]
struct Op {
    form: Form,
    value: u16,
    /// Encoded length to use (1..=3); the shortest one if that length has
    /// no encoding of `value`.
    len: usize,
}

fn operand(kind: OperandKind) -> BoxedStrategy<Op> {
    let forms: Vec<Form> = match kind {
        OperandKind::Literal => vec![Form::Literal],
        OperandKind::Reference => vec![Form::Reference],
        OperandKind::Multitype | OperandKind::Address => vec![Form::MultiValue, Form::MultiMemory],
    };
    // small values (and even ones, for references) are the common case
    let value = prop_oneof![0u16..64, (0u16..200).prop_map(|v| v * 2), any::<u16>()];
    (proptest::sample::select(forms), value, 1usize..=3)
        .prop_map(move |(form, mut value, len)| {
            if form == Form::Reference {
                value &= !1;
            }
            Op { form, value, len }
        })
        .boxed()
}

fn encode_op(op: &Op) -> Vec<u8> {
    encode_len(op.form, op.value, op.len)
        .or_else(|| (1..=3).find_map(|l| encode_len(op.form, op.value, l)))
        .expect("every value has a 3-byte encoding")
}

/// A random instruction as bytecode, operands in any valid encoding.
fn instruction() -> impl Strategy<Value = Vec<u8>> {
    (0usize..INSTRUCTIONS.len(), 0usize..4).prop_flat_map(|(i, count)| {
        let def = &INSTRUCTIONS[i];
        let mut kinds: Vec<OperandKind> = def.fixed.to_vec();
        if def.is_variadic() {
            for _ in 0..count {
                kinds.extend_from_slice(def.group);
            }
        }
        let ops: Vec<BoxedStrategy<Op>> = kinds.iter().map(|&k| operand(k)).collect();
        ops.prop_map(move |mut ops| {
            if let Some(c) = def.count_at {
                ops[c] = Op { form: Form::Literal, value: count as u16, len: 1 };
            }
            let mut b = vec![def.opcode];
            for op in &ops {
                b.extend(encode_op(op));
            }
            b
        })
    })
}

/// Where a disassembly must put bytes back: exactly `code`, followed at most
/// by zeros (an incomplete last instruction is completed with the zeros
/// UDVM memory holds past the bytecode).
fn assert_round_trip(code: &[u8], load: u16) -> Result<(), TestCaseError> {
    let text = sigcomp_asm::disassemble(code, load);
    let a = sigcomp_asm::assemble(&text)
        .map_err(|e| TestCaseError::fail(format!("disassembly does not assemble: {e}\n{text}")))?;
    let room = 65536 - usize::from(load);
    let code = &code[..code.len().min(room)];
    prop_assert!(a.bytes.len() >= code.len(), "{text}");
    prop_assert_eq!(&a.bytes[..code.len()], code, "{}", text);
    prop_assert!(a.bytes[code.len()..].iter().all(|&b| b == 0), "{}", text);
    if !code.is_empty() {
        prop_assert_eq!(a.start, load);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Random valid instruction sequences (any operand encodings, also
    /// non-shortest ones, and branches anywhere) disassemble to text that
    /// assembles to the same bytes.
    #[test]
    fn instruction_sequences_round_trip(
        insns in proptest::collection::vec(instruction(), 1..24),
        load in prop_oneof![Just(128u16), (2u16..17).prop_map(|k| k * 64), 0u16..0xFFC0],
    ) {
        let code: Vec<u8> = insns.concat();
        assert_round_trip(&code, load)?;
    }

    /// With shortest encodings every instruction is shown as an instruction
    /// (never as `byte` lines), since the sequence is straight-line code
    /// without branches.
    #[test]
    fn straight_line_code_is_shown_as_instructions(
        insns in proptest::collection::vec(instruction(), 1..16),
    ) {
        // keep only instructions without address operands that do not end
        // the flow, re-encoded by the assembler (shortest encodings)
        let mut src = String::from("at (128)\n");
        let mut n = 0;
        for b in &insns {
            let text = sigcomp_asm::disassemble(b, 128);
            let line = text.lines().find(|l| !l.starts_with(';') && !l.starts_with("at ")).unwrap_or("").to_string();
            let def = sigcomp_asm::isa::by_opcode(b[0]).unwrap();
            let branches = def.fixed.iter().chain(def.group).any(|k| *k == OperandKind::Address);
            if branches || line.starts_with("byte") || matches!(def.name, "RETURN" | "END-MESSAGE" | "DECOMPRESSION-FAILURE") {
                continue;
            }
            src.push_str(line.split(';').next().unwrap());
            src.push('\n');
            n += 1;
        }
        src.push_str("END-MESSAGE (0, 0, 0, 0, 0, 0, 0)\n");
        let a = sigcomp_asm::assemble(&src).map_err(|e| TestCaseError::fail(format!("{e}\n{src}")))?;
        let text = sigcomp_asm::disassemble(&a.bytes, a.start);
        prop_assert!(!text.contains("byte ("), "{}", text);
        let shown = text.lines().filter(|l| !l.starts_with(';') && !l.starts_with("at ") && !l.starts_with(':')).count();
        prop_assert_eq!(shown, n + 1, "{}", text);
        prop_assert_eq!(sigcomp_asm::assemble(&text).unwrap().bytes, a.bytes);
    }

    /// Arbitrary bytes: the disassembler does not panic and round trips.
    #[test]
    fn arbitrary_bytes_round_trip(
        code in proptest::collection::vec(any::<u8>(), 0..200),
        load in prop_oneof![Just(128u16), any::<u16>()],
    ) {
        assert_round_trip(&code, load)?;
    }

    /// Arbitrary text: the assembler returns a value or an error, never
    /// panics.
    #[test]
    fn arbitrary_text_never_panics(src in "\\PC{0,200}") {
        let _ = sigcomp_asm::assemble(&src);
    }

    /// Random token soup from the language's own vocabulary gets much further
    /// into the parser and the layout than random characters.
    #[test]
    fn random_tokens_never_panic(tokens in proptest::collection::vec(proptest::sample::select(vec![
        "JUMP", "MULTILOAD", "SWITCH", "INPUT-HUFFMAN", "END-MESSAGE", "LOAD", "RETURN", "COPY-LITERAL",
        "at", "pad", "align", "byte", "word", "set", "readonly", ":", "a", "b", "c", "(", ")", ",", "$",
        ".", "!", "+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "~", "0", "1", "64", "128",
        "65535", "65536", "0xFFFF", "4294967295", "-1", "\n", " ",
    ]), 0..60)) {
        let src = tokens.join(" ");
        let _ = sigcomp_asm::assemble(&src);
    }

    /// Values of every size in every operand slot assemble, and the
    /// disassembly reproduces them.
    #[test]
    fn assembled_operands_round_trip(v in any::<u16>(), w in any::<u16>()) {
        let src = format!("at (256)\nLOAD ({}, {v})\nCOMPARE (${}, {w}, 256, 300, 65535)\n", v & 0xFFFE, w & 0x1FFF);
        let a = sigcomp_asm::assemble(&src).unwrap();
        assert_round_trip(&a.bytes, a.start)?;
    }
}
