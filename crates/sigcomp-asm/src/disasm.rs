//! Bytecode to RFC 4464 assembly, such that the text assembles back to the
//! same bytes.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use sigcomp::udvm::op;

use crate::encode::{decode_literal, decode_multitype, encode, Decoded, Form};
use crate::isa::{self, InstrDef, OperandKind};

/// A decoded instruction.
struct Insn {
    def: &'static InstrDef,
    ops: Vec<(OperandKind, Decoded)>,
    len: usize,
}

fn decode_operand(b: &[u8], kind: OperandKind) -> Option<Decoded> {
    match kind {
        OperandKind::Literal => decode_literal(b, false),
        OperandKind::Reference => decode_literal(b, true),
        OperandKind::Multitype | OperandKind::Address => decode_multitype(b),
    }
}

/// Decodes the instruction at the start of `b`.
fn decode(b: &[u8]) -> Option<Insn> {
    let def = isa::by_opcode(*b.first()?)?;
    let mut ops = Vec::new();
    let mut at = 1usize;
    let mut read = |kind: OperandKind, ops: &mut Vec<(OperandKind, Decoded)>| -> Option<Decoded> {
        let d = decode_operand(b.get(at..)?, kind)?;
        at += d.len;
        ops.push((kind, d));
        Some(d)
    };
    let mut count = 0usize;
    for (i, &k) in def.fixed.iter().enumerate() {
        let d = read(k, &mut ops)?;
        if def.count_at == Some(i) {
            count = usize::from(d.value);
        }
    }
    if def.is_variadic() {
        // every operand takes at least one byte: reject impossible counts early
        if count.checked_mul(def.group.len())? > b.len() {
            return None;
        }
        for _ in 0..count {
            for &k in def.group {
                read(k, &mut ops)?;
            }
        }
    }
    Some(Insn { def, ops, len: at })
}

fn form_of(kind: OperandKind, d: &Decoded) -> Form {
    match (kind, d.memory) {
        (OperandKind::Literal, _) => Form::Literal,
        (OperandKind::Reference, _) => Form::Reference,
        (_, true) => Form::MultiMemory,
        (_, false) => Form::MultiValue,
    }
}

/// True if the assembler would encode this instruction with exactly these
/// bytes (every operand in its shortest encoding).
fn canonical(insn: &Insn, bytes: &[u8]) -> bool {
    let mut out = vec![insn.def.opcode];
    for (k, d) in &insn.ops {
        out.extend(encode(form_of(*k, d), d.value));
    }
    out == bytes
}

fn ends_flow(opcode: u8) -> bool {
    matches!(opcode, op::DECOMPRESSION_FAILURE | op::JUMP | op::RETURN | op::END_MESSAGE | op::COMPARE | op::SWITCH)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    /// Labels for branch targets, pinned with `at`.
    Labels,
    /// Branch targets as `(. + offset)`.
    Relative,
    /// Everything as `byte (...)`.
    Bytes,
}

/// How many zero bytes past the end of the bytecode an instruction may read:
/// the UDVM memory there is 0 (RFC 3320 §7, memory is initialised to 0),
/// and bytecode often leaves out the trailing zero operands of its last
/// END-MESSAGE (RFC 4464 Appendix A does).
const ZERO_TAIL: usize = 32;

struct Listing<'a> {
    code: &'a [u8],
    /// `code` followed by [`ZERO_TAIL`] zero bytes (what UDVM memory holds).
    mem: Vec<u8>,
    load: u16,
    /// Offsets where an instruction starts (reachable, or found by the
    /// linear sweep of unreached bytes).
    start: Vec<bool>,
    /// Offsets that branches of those instructions point to.
    targets: BTreeSet<usize>,
}

impl<'a> Listing<'a> {
    fn new(code: &'a [u8], load: u16) -> Self {
        let n = code.len();
        let mut mem = code.to_vec();
        // memory ends at 65535: no zero tail beyond it
        let room = 65536 - (usize::from(load) + n).min(65536);
        mem.resize(n + ZERO_TAIL.min(room), 0);
        let mut start = vec![false; n];
        let mut seen = vec![false; n];
        let mut covered = vec![false; n];
        let mut targets = BTreeSet::new();
        // branch targets of the instruction at `off` that lie in the code
        let branch_targets = |off: usize, insn: &Insn| -> Vec<usize> {
            let pc = load.wrapping_add(off as u16);
            insn.ops
                .iter()
                .filter(|(k, d)| *k == OperandKind::Address && !d.memory)
                .filter_map(|(_, d)| {
                    let t = usize::from(pc.wrapping_add(d.value));
                    t.checked_sub(usize::from(load)).filter(|t| *t < n)
                })
                .collect()
        };
        // 1. recursive descent from the first byte (the entry point)
        let mut work = if n > 0 { vec![0usize] } else { Vec::new() };
        while let Some(off) = work.pop() {
            if off >= n || seen[off] {
                continue;
            }
            seen[off] = true;
            let Some(insn) = decode(&mem[off..]) else { continue };
            start[off] = true;
            for c in covered.iter_mut().skip(off).take(insn.len) {
                *c = true;
            }
            for t in branch_targets(off, &insn) {
                targets.insert(t);
                work.push(t);
            }
            if !ends_flow(insn.def.opcode) {
                work.push(off + insn.len);
            }
        }
        // 2. linear sweep of the bytes no reachable instruction covers:
        // code reached only through indirect jumps (JUMP ($64), RETURN,
        // SWITCH on computed values) is shown as instructions too.  Zero
        // bytes are left as data unless something branches to them, and a
        // swept instruction never swallows a branch target or reached code.
        let mut off = 0;
        while off < n {
            if covered[off] || code[off] == 0 {
                off += 1;
                continue;
            }
            let fits = |insn: &Insn| {
                (off + 1..off + insn.len).all(|i| i >= n || (!covered[i] && !targets.contains(&i)))
                    && canonical(insn, &mem[off..off + insn.len])
            };
            match decode(&mem[off..]).filter(|i| fits(i)) {
                Some(insn) => {
                    start[off] = true;
                    for t in branch_targets(off, &insn) {
                        targets.insert(t);
                    }
                    off += insn.len;
                }
                None => off += 1,
            }
        }
        Listing { code, mem, load, start, targets }
    }

    fn addr(&self, off: usize) -> u32 {
        u32::from(self.load) + off as u32
    }

    fn label(&self, off: usize) -> String {
        format!("l_{}", self.addr(off))
    }

    /// The items of the listing: (offset, length, instruction if shown as one).
    fn items(&self, style: Style) -> Vec<(usize, usize, Option<Insn>)> {
        let n = self.code.len();
        let mut items = Vec::new();
        let mut off = 0;
        while off < n {
            if style != Style::Bytes && self.start[off] {
                if let Some(insn) = decode(&self.mem[off..]) {
                    let len = insn.len;
                    if canonical(&insn, &self.mem[off..off + len]) {
                        items.push((off, len, Some(insn)));
                    } else {
                        // the assembler would choose shorter encodings:
                        // show the bytes (those of the bytecode only)
                        items.push((off, len.min(n - off), None));
                    }
                    off += len;
                    continue;
                }
            }
            // data up to the next instruction start or branch target, at
            // most 16 bytes per line
            let limit = (off + 16).min(n);
            let mut end = off + 1;
            while end < limit && (style == Style::Bytes || (!self.start[end] && !self.targets.contains(&end))) {
                end += 1;
            }
            items.push((off, end - off, None));
            off = end;
        }
        items
    }

    fn render(&self, style: Style, dropped: usize) -> String {
        // `Bytes` shows only the bytecode itself
        debug_assert!(style != Style::Bytes || self.items(style).iter().all(|(o, l, _)| o + l <= self.code.len()));
        let items = self.items(style);
        let boundaries: BTreeSet<usize> = items.iter().map(|(o, _, _)| *o).collect();
        let labelled = |t: usize| style == Style::Labels && self.targets.contains(&t) && boundaries.contains(&t);
        let mut s = String::new();
        let _ = writeln!(
            s,
            "; {} bytes of UDVM bytecode loaded at {} (disassembled by sigcomp-asm)",
            self.code.len(),
            self.load
        );
        if dropped > 0 {
            let _ = writeln!(s, "; {dropped} further bytes would lie beyond address 65535 and were dropped");
        }
        let _ = writeln!(s, "at ({})", self.load);
        for (off, len, insn) in &items {
            let (off, len) = (*off, *len);
            let here = self.addr(off);
            if labelled(off) {
                if off > 0 {
                    let _ = writeln!(s, "at ({here})");
                }
                let _ = writeln!(s, ":{}", self.label(off));
            }
            // an instruction may end in the zeros past the bytecode
            let bytes = &self.mem[off..off + len];
            let line = match insn {
                Some(insn) => self.instruction(insn, off, style, &labelled),
                None => {
                    let list: Vec<String> = bytes.iter().map(|b| format!("0x{b:02x}")).collect();
                    format!("byte ({})", list.join(", "))
                }
            };
            let mut comment = format!("; {here}");
            let past_end = (off + len).saturating_sub(self.code.len());
            if past_end > 0 {
                let _ = write!(
                    comment,
                    ": {past_end} byte{} past the end of the bytecode (UDVM memory there is 0)",
                    if past_end == 1 { "" } else { "s" }
                );
            }
            if insn.is_none() && style != Style::Bytes && self.start[off] {
                match decode(bytes) {
                    Some(i) => {
                        let _ = write!(
                            comment,
                            ": {} (operands not in their shortest encoding)",
                            self.instruction(&i, off, Style::Relative, &|_| false)
                        );
                    }
                    None => {
                        let _ = write!(comment, ": not a valid instruction");
                    }
                }
            }
            let _ = writeln!(s, "{line:<48}{comment}");
        }
        s
    }

    fn instruction(&self, insn: &Insn, off: usize, style: Style, labelled: &dyn Fn(usize) -> bool) -> String {
        let pc = u32::from(self.load.wrapping_add(off as u16));
        let mut ops = Vec::new();
        for (k, d) in &insn.ops {
            let v = u32::from(d.value);
            ops.push(match (k, d.memory) {
                (_, true) => format!("${v}"),
                (OperandKind::Address, false) => {
                    let target = (pc + v) % 65536;
                    let t_off = (target as usize).checked_sub(usize::from(self.load)).filter(|t| *t < self.code.len());
                    match (style, t_off) {
                        (Style::Labels, Some(t)) if labelled(t) => self.label(t),
                        (Style::Labels, _) => target.to_string(),
                        _ if pc + v <= 65535 => format!("(. + {v})"),
                        _ => format!("(. - {})", 65536 - v),
                    }
                }
                _ => v.to_string(),
            });
        }
        if ops.is_empty() {
            insn.def.name.to_string()
        } else {
            format!("{} ({})", insn.def.name, ops.join(", "))
        }
    }
}

pub fn disassemble(code: &[u8], load_address: u16) -> String {
    let room = 65536 - usize::from(load_address);
    let dropped = code.len().saturating_sub(room);
    let code = &code[..code.len().min(room)];
    let listing = Listing::new(code, load_address);
    // the same bytes, followed at most by zeros the UDVM memory holds anyway
    let reproduces = |text: &str| match crate::assemble(text) {
        Ok(a) => {
            a.bytes.len() >= code.len()
                && a.bytes[..code.len()] == *code
                && a.bytes[code.len()..].iter().all(|&b| b == 0)
                && (code.is_empty() || a.start == load_address)
        }
        Err(_) => false,
    };
    for style in [Style::Labels, Style::Relative] {
        let text = listing.render(style, dropped);
        if reproduces(&text) {
            return text;
        }
    }
    listing.render(Style::Bytes, dropped)
}
