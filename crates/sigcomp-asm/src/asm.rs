//! Layout and encoding: turns parsed items into a UDVM memory image,
//! iterating until every operand encoding, label address and `!` target is
//! consistent with the layout it produces.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use crate::encode::{encode_min, Form};
use crate::isa::OperandKind;
use crate::parse::{BinOp, Expr, Item, ItemKind, Node, Pos, UnOp};
use crate::{AsmError, Assembly, ErrorKind};

/// UDVM memory size: addresses are 0..=65535.
const MEMORY: i64 = 65536;
/// Passes that re-encode every operand with its shortest encoding.
const EXACT_PASSES: usize = 48;
/// Further passes in which operand encodings may only grow (guarantees
/// termination when shortest encodings oscillate).
const GROW_PASSES: usize = 48;
/// Deepest chain of `set` definitions referring to each other.
const MAX_DEFINITION_DEPTH: u32 = 200;

fn err(pos: Pos, kind: ErrorKind, message: impl Into<String>) -> AsmError {
    AsmError { line: pos.line, column: pos.col, kind, message: message.into() }
}

/// Everything one pass computes.
#[derive(Clone, PartialEq)]
struct Pass {
    /// Address of every item.
    addr: Vec<i64>,
    /// Encoded length of every operand of every instruction item.
    sizes: Vec<Vec<u8>>,
    /// Addresses of zero bytes in readonly (1) memory, ascending: the
    /// candidates for `!`.
    zeros: Vec<u32>,
}

/// Evaluation context: the symbol definitions of the program and the layout
/// (item addresses, zero bytes) values are taken from.
struct Env<'a> {
    items: &'a [Item],
    defs: &'a HashMap<String, usize>,
    addr: &'a [i64],
    zeros: &'a [u32],
    /// Values of `set` items already evaluated (by item index).
    memo: RefCell<HashMap<usize, Result<i64, AsmError>>>,
    /// `set` items being evaluated (cycle detection).
    active: RefCell<Vec<usize>>,
}

impl<'a> Env<'a> {
    fn new(items: &'a [Item], defs: &'a HashMap<String, usize>, addr: &'a [i64], zeros: &'a [u32]) -> Self {
        Env { items, defs, addr, zeros, memo: RefCell::new(HashMap::new()), active: RefCell::new(Vec::new()) }
    }

    fn addr_of(&self, i: usize) -> i64 {
        self.addr.get(i).copied().unwrap_or(0)
    }

    /// The address of the zero byte closest to `dot` (RFC 4464 §3.2.1 `!`).
    ///
    /// "Closest" is resolved the way the RFC 4464 Appendix A bytecode shows
    /// (see README.md): the nearest zero byte at or before `dot`; only if
    /// there is none, the nearest one after it.
    fn bang(&self, dot: i64) -> Option<i64> {
        let z = self.zeros;
        let after = z.partition_point(|&a| i64::from(a) <= dot);
        if after > 0 {
            return Some(i64::from(z[after - 1]));
        }
        z.get(after).map(|&a| i64::from(a))
    }

    fn name(&self, name: &str, pos: Pos) -> Result<i64, AsmError> {
        let Some(&i) = self.defs.get(name) else {
            return Err(err(pos, ErrorKind::UndefinedName, format!("undefined name '{name}'")));
        };
        match &self.items[i].kind {
            ItemKind::Label(_) => Ok(self.addr_of(i)),
            ItemKind::Set(_, e) => {
                if let Some(r) = self.memo.borrow().get(&i) {
                    return r.clone();
                }
                if self.active.borrow().contains(&i) {
                    return Err(err(pos, ErrorKind::BadExpression, format!("circular definition of '{name}'")));
                }
                if self.active.borrow().len() as u32 >= MAX_DEFINITION_DEPTH {
                    return Err(err(pos, ErrorKind::BadExpression, "definitions refer to each other too deeply"));
                }
                self.active.borrow_mut().push(i);
                let r = self.eval(e, self.addr_of(i));
                self.active.borrow_mut().pop();
                self.memo.borrow_mut().insert(i, r.clone());
                r
            }
            _ => Err(err(pos, ErrorKind::UndefinedName, format!("undefined name '{name}'"))),
        }
    }

    /// Evaluates `e` for an instruction or directive at address `dot`.
    fn eval(&self, e: &Expr, dot: i64) -> Result<i64, AsmError> {
        Ok(match &e.node {
            Node::Num(n) => *n,
            Node::Name(n) => self.name(n, e.pos)?,
            Node::Dot => dot,
            Node::Bang => self.bang(dot).ok_or_else(|| {
                err(
                    e.pos,
                    ErrorKind::NoZeroByte,
                    "'!' needs a zero byte (DECOMPRESSION-FAILURE) in readonly memory, and there is none",
                )
            })?,
            Node::Unary(op, a) => {
                let a = self.eval(a, dot)?;
                match op {
                    UnOp::Neg => a.wrapping_neg(),
                    UnOp::Not => !a & 0xFFFF,
                }
            }
            Node::Binary(op, a, b) => {
                let x = self.eval(a, dot)?;
                let y = self.eval(b, dot)?;
                match op {
                    BinOp::Add => x.wrapping_add(y),
                    BinOp::Sub => x.wrapping_sub(y),
                    BinOp::Mul => x.wrapping_mul(y),
                    BinOp::Div | BinOp::Rem => {
                        if y == 0 {
                            return Err(err(e.pos, ErrorKind::BadExpression, "division by zero"));
                        }
                        if *op == BinOp::Div {
                            x.wrapping_div(y)
                        } else {
                            x.wrapping_rem_euclid(y)
                        }
                    }
                    BinOp::And => x & y,
                    BinOp::Or => x | y,
                    BinOp::Xor => x ^ y,
                    // RFC 4464 §3.2.1: "~" is binary XNOR (of 16-bit values)
                    BinOp::Xnor => !(x ^ y) & 0xFFFF,
                    BinOp::Shl | BinOp::Shr => {
                        if y < 0 {
                            return Err(err(e.pos, ErrorKind::BadExpression, "negative shift amount"));
                        }
                        match (op, u32::try_from(y).ok().filter(|s| *s < 63)) {
                            (BinOp::Shl, Some(s)) => x.checked_shl(s).filter(|r| r >> s == x).unwrap_or(0),
                            (BinOp::Shl, None) => 0,
                            (_, Some(s)) => x >> s,
                            (_, None) => {
                                if x < 0 {
                                    -1
                                } else {
                                    0
                                }
                            }
                        }
                    }
                }
            }
        })
    }
}

/// Reduces `v` modulo 2^bits if it lies in (-2^bits, 2^bits - 1].
fn fit(v: i64, bits: u32, what: &str, pos: Pos) -> Result<u16, AsmError> {
    let m = 1i64 << bits;
    if v <= -m || v >= m {
        return Err(err(
            pos,
            ErrorKind::Range,
            format!("{what} {v} does not fit in {bits} bits (0..={}; negative values down to -{} wrap)", m - 1, m - 1),
        ));
    }
    Ok(v.rem_euclid(m) as u16)
}

/// Collects errors; `first` is the one earliest in the source.
#[derive(Default)]
struct Errors(Vec<AsmError>);

impl Errors {
    fn push(&mut self, e: AsmError) {
        self.0.push(e);
    }

    /// `r`'s value, or `fallback` after recording its error.
    fn take(&mut self, r: Result<i64, AsmError>, fallback: i64) -> i64 {
        r.unwrap_or_else(|e| {
            self.push(e);
            fallback
        })
    }

    fn first(self) -> Option<AsmError> {
        self.0.into_iter().min_by_key(|e| (e.line, e.column))
    }
}

/// The memory image of one pass.
struct Image {
    bytes: Vec<u8>,
    written: Vec<bool>,
}

impl Image {
    fn new() -> Self {
        Image { bytes: vec![0; MEMORY as usize], written: vec![false; MEMORY as usize] }
    }

    fn put(&mut self, a: i64, b: u8) {
        if (0..MEMORY).contains(&a) {
            self.bytes[a as usize] = b;
            self.written[a as usize] = true;
        }
    }
}

struct Program {
    items: Vec<Item>,
    defs: HashMap<String, usize>,
}

impl Program {
    fn new(items: Vec<Item>) -> Result<Self, AsmError> {
        let mut defs = HashMap::new();
        for (i, item) in items.iter().enumerate() {
            if let ItemKind::Label(n) | ItemKind::Set(n, _) = &item.kind {
                if let Some(&j) = defs.get(n) {
                    let first: &Item = &items[j];
                    return Err(err(
                        item.pos,
                        ErrorKind::Redefinition,
                        format!("'{n}' is already defined at line {}, column {}", first.pos.line, first.pos.col),
                    ));
                }
                defs.insert(n.clone(), i);
            }
        }
        Ok(Program { items, defs })
    }

    fn initial(&self) -> Pass {
        let sizes = self
            .items
            .iter()
            .map(|it| match &it.kind {
                ItemKind::Instr(ins) => vec![1; ins.operands.len()],
                _ => Vec::new(),
            })
            .collect();
        Pass { addr: vec![0; self.items.len()], sizes, zeros: Vec::new() }
    }

    /// One pass: lay the items out using `prev` (its operand sizes, and its
    /// symbol values for directive arguments), then encode everything with
    /// the symbol values of the new layout.  With `grow`, operands never get
    /// shorter than in `prev`.
    fn pass(&self, prev: &Pass, grow: bool) -> (Pass, Image, Errors) {
        let mut errors = Errors::default();
        let addr = self.layout(prev, &mut errors);
        let (pass, image) = self.encode(prev, addr, grow, &mut errors);
        (pass, image, errors)
    }

    /// The address of every item, laid out with `prev`'s operand sizes
    /// and symbol values.
    fn layout(&self, prev: &Pass, errors: &mut Errors) -> Vec<i64> {
        let n = self.items.len();
        let env = Env::new(&self.items, &self.defs, &prev.addr, &prev.zeros);
        let mut addr = vec![0i64; n];
        let mut pc: i64 = 0;
        let mut overflow_reported = false;
        for (i, item) in self.items.iter().enumerate() {
            addr[i] = pc;
            match &item.kind {
                ItemKind::Pad(e) => {
                    let v = errors.take(env.eval(e, pc), 0);
                    if v < 0 {
                        errors.push(err(e.pos, ErrorKind::Layout, format!("pad ({v}): negative padding")));
                    } else {
                        pc = pc.saturating_add(v);
                    }
                }
                ItemKind::Align(e) => {
                    let v = errors.take(env.eval(e, pc), 1);
                    if v <= 0 {
                        errors.push(err(e.pos, ErrorKind::Layout, format!("align ({v}): alignment must be positive")));
                    } else {
                        let r = pc.rem_euclid(v);
                        if r != 0 {
                            pc = pc.saturating_add(v - r);
                        }
                    }
                }
                ItemKind::At(e) => {
                    let v = errors.take(env.eval(e, pc), pc);
                    if v < pc {
                        errors.push(err(
                            item.pos,
                            ErrorKind::Layout,
                            format!("at ({v}): {pc} bytes of bytecode have already been generated"),
                        ));
                    } else {
                        pc = v;
                    }
                }
                ItemKind::Byte(es) => pc = pc.saturating_add(es.len() as i64),
                ItemKind::Word(es) => pc = pc.saturating_add(2 * es.len() as i64),
                ItemKind::Instr(_) => {
                    let s: i64 = prev.sizes[i].iter().map(|&s| i64::from(s)).sum();
                    pc = pc.saturating_add(1 + s);
                }
                ItemKind::Label(_) | ItemKind::Set(..) | ItemKind::Readonly(_) => {}
            }
            if pc > MEMORY && !overflow_reported {
                overflow_reported = true;
                errors.push(err(
                    item.pos,
                    ErrorKind::Layout,
                    format!("the bytecode extends to address {}, beyond the 64 KiB UDVM memory", pc - 1),
                ));
            }
            // keep every address within a sane range even for absurd input
            pc = pc.min(MEMORY * 2);
        }
        addr
    }

    /// Every item encoded at `addr` with the symbol values of that layout;
    /// with `grow`, no operand shorter than in `prev`.
    fn encode(&self, prev: &Pass, addr: Vec<i64>, grow: bool, errors: &mut Errors) -> (Pass, Image) {
        let n = self.items.len();
        let env = Env::new(&self.items, &self.defs, &addr, &prev.zeros);
        let mut image = Image::new();
        let mut sizes = Vec::with_capacity(n);
        let mut zeros = Vec::new();
        let mut readonly = true;
        let emit = |image: &mut Image, zeros: &mut Vec<u32>, readonly: bool, a: i64, b: u8| {
            image.put(a, b);
            if b == 0 && readonly && (0..MEMORY).contains(&a) {
                zeros.push(a as u32);
            }
        };
        for (i, item) in self.items.iter().enumerate() {
            let at = addr[i];
            let mut item_sizes = Vec::new();
            match &item.kind {
                ItemKind::Readonly(e) => match errors.take(env.eval(e, at), 1) {
                    0 => readonly = false,
                    1 => readonly = true,
                    v => errors.push(err(
                        e.pos,
                        ErrorKind::Range,
                        format!("readonly ({v}): the argument must be 0 or 1"),
                    )),
                },
                ItemKind::Set(_, e) => {
                    // evaluate even if unused, to report errors in it
                    let _ = errors.take(env.eval(e, at), 0);
                }
                ItemKind::Byte(es) => {
                    for (k, e) in es.iter().enumerate() {
                        let v = errors.take(env.eval(e, at), 0);
                        let b = fit(v, 8, "byte value", e.pos).unwrap_or_else(|x| {
                            errors.push(x);
                            0
                        });
                        emit(&mut image, &mut zeros, readonly, at + k as i64, b as u8);
                    }
                }
                ItemKind::Word(es) => {
                    for (k, e) in es.iter().enumerate() {
                        let v = errors.take(env.eval(e, at), 0);
                        let w = fit(v, 16, "word value", e.pos).unwrap_or_else(|x| {
                            errors.push(x);
                            0
                        });
                        let [hi, lo] = w.to_be_bytes();
                        emit(&mut image, &mut zeros, readonly, at + 2 * k as i64, hi);
                        emit(&mut image, &mut zeros, readonly, at + 2 * k as i64 + 1, lo);
                    }
                }
                ItemKind::Instr(ins) => {
                    let mut p = at;
                    emit(&mut image, &mut zeros, readonly, p, ins.def.opcode);
                    p += 1;
                    if let Some((c, implied)) = ins.count_check {
                        let op = &ins.operands[c];
                        if let Ok(v) = env.eval(&op.expr, at) {
                            if v != implied {
                                errors.push(err(
                                    op.pos,
                                    ErrorKind::OperandCount,
                                    format!(
                                        "operand {} of {} is {v}, but {implied} {} follow",
                                        c + 1,
                                        ins.def.name,
                                        if ins.def.group.len() == 1 { "operands" } else { "operand groups" }
                                    ),
                                ));
                            }
                        }
                    }
                    for (j, op) in ins.operands.iter().enumerate() {
                        let v = errors.take(env.eval(&op.expr, at), 0);
                        let (form, v) = match (op.kind, op.dollar) {
                            (OperandKind::Literal, _) => (Form::Literal, v),
                            (OperandKind::Reference, _) => (Form::Reference, v),
                            (OperandKind::Multitype | OperandKind::Address, true) => (Form::MultiMemory, v),
                            (OperandKind::Multitype, false) => (Form::MultiValue, v),
                            (OperandKind::Address, false) => {
                                // the target must be a 16-bit address; the
                                // offset from the opcode is taken mod 2^16
                                if let Err(x) = fit(v, 16, "address", op.pos) {
                                    errors.push(x);
                                }
                                (Form::MultiValue, v.wrapping_sub(at).rem_euclid(MEMORY))
                            }
                        };
                        let v16 = fit(v, 16, "operand value", op.pos).unwrap_or_else(|x| {
                            errors.push(x);
                            0
                        });
                        let min = if grow { usize::from(prev.sizes[i].get(j).copied().unwrap_or(1)) } else { 1 };
                        let bytes = encode_min(form, v16, min);
                        item_sizes.push(bytes.len() as u8);
                        for b in bytes {
                            emit(&mut image, &mut zeros, readonly, p, b);
                            p += 1;
                        }
                    }
                }
                ItemKind::Label(_) | ItemKind::Pad(_) | ItemKind::Align(_) | ItemKind::At(_) => {}
            }
            sizes.push(item_sizes);
        }
        zeros.sort_unstable();
        zeros.dedup();
        (Pass { addr, sizes, zeros }, image)
    }

    fn finish(&self, pass: &Pass, image: Image) -> Assembly {
        let first = image.written.iter().position(|&w| w);
        let last = image.written.iter().rposition(|&w| w);
        let (start, bytes, written) = match (first, last) {
            (Some(f), Some(l)) => (f as u16, image.bytes[f..=l].to_vec(), image.written[f..=l].to_vec()),
            _ => (0, Vec::new(), Vec::new()),
        };
        let env = Env::new(&self.items, &self.defs, &pass.addr, &pass.zeros);
        let mut labels = BTreeMap::new();
        let mut constants = BTreeMap::new();
        let mut entry = None;
        for (i, item) in self.items.iter().enumerate() {
            match &item.kind {
                ItemKind::Label(n) => {
                    labels.insert(n.clone(), pass.addr[i].clamp(0, MEMORY) as u32);
                }
                ItemKind::Set(n, _) => {
                    if let Ok(v) = env.name(n, item.pos) {
                        constants.insert(n.clone(), v);
                    }
                }
                ItemKind::Instr(_) if entry.is_none() => entry = Some(pass.addr[i].clamp(0, MEMORY - 1) as u16),
                _ => {}
            }
        }
        Assembly { start, bytes, entry, labels, constants, written }
    }
}

pub fn assemble_items(items: Vec<Item>) -> Result<Assembly, AsmError> {
    let prog = Program::new(items)?;
    let mut prev = prog.initial();
    let mut last_errors = None;
    for k in 0..EXACT_PASSES + GROW_PASSES {
        let (cur, image, errors) = prog.pass(&prev, k >= EXACT_PASSES);
        if cur == prev {
            return match errors.first() {
                Some(e) => Err(e),
                None => Ok(prog.finish(&cur, image)),
            };
        }
        last_errors = Some(errors);
        prev = cur;
    }
    if let Some(e) = last_errors.and_then(Errors::first) {
        return Err(e);
    }
    let pos = prog.items.first().map(|i| i.pos).unwrap_or_default();
    Err(err(pos, ErrorKind::Layout, format!("the layout did not settle after {} passes", EXACT_PASSES + GROW_PASSES)))
}
