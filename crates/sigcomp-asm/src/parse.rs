//! Lexical and syntactic level of the RFC 4464 §3 assembly language.

use crate::isa::{self, InstrDef, OperandKind};
use crate::{AsmError, ErrorKind};

/// 1-based line and column (in characters) of a token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Pos {
    pub line: u32,
    pub col: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Xnor,
    Shl,
    Shr,
}

impl BinOp {
    fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::And => "&",
            BinOp::Or => "|",
            BinOp::Xor => "^",
            BinOp::Xnor => "~",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
        }
    }

    /// Binding strength when operators are not parenthesised (an extension:
    /// RFC 4464 requires full parentheses).  C-like.
    fn precedence(self) -> u8 {
        match self {
            BinOp::Or => 1,
            BinOp::Xor | BinOp::Xnor => 2,
            BinOp::And => 3,
            BinOp::Shl | BinOp::Shr => 4,
            BinOp::Add | BinOp::Sub => 5,
            BinOp::Mul | BinOp::Div | BinOp::Rem => 6,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Num(i64),
    Name(String),
    /// `.`: the address of the current instruction or directive.
    Dot,
    /// `!`: the address of the closest zero byte (DECOMPRESSION-FAILURE).
    Bang,
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub pos: Pos,
    pub node: Node,
    /// Height of the expression tree (1 for a leaf).
    pub depth: u32,
}

/// Deepest expression tree accepted (keeps evaluation recursion bounded).
pub const MAX_EXPR_DEPTH: u32 = 256;

impl Expr {
    pub fn num(n: i64, pos: Pos) -> Expr {
        Expr { pos, node: Node::Num(n), depth: 1 }
    }

    fn new(pos: Pos, node: Node) -> Expr {
        let depth = match &node {
            Node::Unary(_, a) => a.depth.saturating_add(1),
            Node::Binary(_, a, b) => a.depth.max(b.depth).saturating_add(1),
            _ => 1,
        };
        Expr { pos, node, depth }
    }
}

#[derive(Clone, Debug)]
pub struct Operand {
    pub kind: OperandKind,
    pub dollar: bool,
    pub expr: Expr,
    pub pos: Pos,
}

#[derive(Clone, Debug)]
pub struct Instr {
    pub def: &'static InstrDef,
    pub operands: Vec<Operand>,
    /// Index of an explicitly written count operand and the count implied
    /// by the number of operands that follow it (checked when assembling).
    pub count_check: Option<(usize, i64)>,
}

#[derive(Clone, Debug)]
pub enum ItemKind {
    Label(String),
    Set(String, Expr),
    Pad(Expr),
    Align(Expr),
    At(Expr),
    Readonly(Expr),
    Byte(Vec<Expr>),
    Word(Vec<Expr>),
    Instr(Instr),
}

#[derive(Clone, Debug)]
pub struct Item {
    pub pos: Pos,
    pub kind: ItemKind,
}

// ---------------------------------------------------------------- lexer

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Name(String),
    Opcode(String),
    Num(i64),
    Dot,
    Comma,
    Bang,
    Dollar,
    Colon,
    LParen,
    RParen,
    Op(BinOp),
    Eof,
}

impl Tok {
    fn describe(&self) -> String {
        match self {
            Tok::Name(n) => format!("name '{n}'"),
            Tok::Opcode(n) => format!("mnemonic '{n}'"),
            Tok::Num(n) => format!("number {n}"),
            Tok::Dot => "'.'".into(),
            Tok::Comma => "','".into(),
            Tok::Bang => "'!'".into(),
            Tok::Dollar => "'$'".into(),
            Tok::Colon => "':'".into(),
            Tok::LParen => "'('".into(),
            Tok::RParen => "')'".into(),
            Tok::Op(op) => format!("'{}'", op.symbol()),
            Tok::Eof => "end of input".into(),
        }
    }
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    pos: Pos,
}

fn err(pos: Pos, kind: ErrorKind, message: impl Into<String>) -> AsmError {
    AsmError { line: pos.line, column: pos.col, kind, message: message.into() }
}

/// The number starting at `chars[i]` (decimal, or `0x` hexadecimal or
/// `0b` binary, at most 2^32 − 1), and the index after it.
fn lex_number(chars: &[char], i: usize, pos: Pos) -> Result<(i64, usize), AsmError> {
    let (radix, digits_from) = match (chars[i], chars.get(i + 1)) {
        ('0', Some('x')) => (16, i + 2),
        ('0', Some('b')) => (2, i + 2),
        _ => (10, i),
    };
    let mut j = digits_from;
    while j < chars.len() && (chars[j].is_ascii_alphanumeric() || chars[j] == '_') {
        j += 1;
    }
    let text: String = chars[digits_from..j].iter().collect();
    let what = match radix {
        16 => "hexadecimal",
        2 => "binary",
        _ => "decimal",
    };
    if text.is_empty() {
        return Err(err(pos, ErrorKind::Syntax, format!("{what} number without digits")));
    }
    if let Some(bad) = text.chars().find(|ch| !ch.is_digit(radix)) {
        return Err(err(pos, ErrorKind::Syntax, format!("invalid character '{bad}' in {what} number")));
    }
    let v = u64::from_str_radix(&text, radix)
        .ok()
        .and_then(|v| i64::try_from(v).ok())
        .filter(|v| *v <= 0xFFFF_FFFF)
        .ok_or_else(|| err(pos, ErrorKind::Syntax, "number too large"))?;
    Ok((v, j))
}

fn lex(src: &str) -> Result<Vec<Token>, AsmError> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1u32, 1u32);
    // advance over chars[i..j] (no newlines inside tokens)
    while i < chars.len() {
        let c = chars[i];
        let pos = Pos { line, col };
        if c == '\n' {
            i += 1;
            line = line.saturating_add(1);
            col = 1;
            continue;
        }
        if c == ' ' || c == '\t' || c == '\r' {
            i += 1;
            col = col.saturating_add(1);
            continue;
        }
        if c == ';' {
            while i < chars.len() && chars[i] != '\n' && chars[i] != '\r' {
                i += 1;
            }
            continue;
        }
        let start = i;
        let tok = match c {
            '.' => Tok::Dot,
            ',' => Tok::Comma,
            '!' => Tok::Bang,
            '$' => Tok::Dollar,
            ':' => Tok::Colon,
            '(' => Tok::LParen,
            ')' => Tok::RParen,
            '+' => Tok::Op(BinOp::Add),
            '-' => Tok::Op(BinOp::Sub),
            '*' => Tok::Op(BinOp::Mul),
            '/' => Tok::Op(BinOp::Div),
            '%' => Tok::Op(BinOp::Rem),
            '&' => Tok::Op(BinOp::And),
            '|' => Tok::Op(BinOp::Or),
            '^' => Tok::Op(BinOp::Xor),
            '~' => Tok::Op(BinOp::Xnor),
            '<' | '>' => {
                if chars.get(i + 1) != Some(&c) {
                    return Err(err(
                        pos,
                        ErrorKind::Syntax,
                        format!("unexpected '{c}' (shifts are written '<<' and '>>')"),
                    ));
                }
                i += 1;
                Tok::Op(if c == '<' { BinOp::Shl } else { BinOp::Shr })
            }
            '0'..='9' => {
                let (v, end) = lex_number(&chars, i, pos)?;
                i = end - 1;
                Tok::Num(v)
            }
            'a'..='z' | '_' => {
                let mut j = i;
                while j < chars.len() && (chars[j].is_ascii_alphanumeric() || chars[j] == '_') {
                    j += 1;
                }
                let text: String = chars[i..j].iter().collect();
                if text.chars().any(|ch| ch.is_ascii_uppercase()) {
                    return Err(err(
                        pos,
                        ErrorKind::Syntax,
                        format!("invalid name '{text}': names are lower case (a-z, 0-9, _)"),
                    ));
                }
                i = j - 1;
                Tok::Name(text)
            }
            'A'..='Z' => {
                let mut j = i;
                while j < chars.len() && (chars[j].is_ascii_alphanumeric() || chars[j] == '-' || chars[j] == '_') {
                    j += 1;
                }
                let text: String = chars[i..j].iter().collect();
                if text.chars().any(|ch| ch.is_ascii_lowercase() || ch == '_') {
                    return Err(err(
                        pos,
                        ErrorKind::Syntax,
                        format!("invalid mnemonic '{text}': mnemonics are upper case (A-Z, 0-9, -)"),
                    ));
                }
                i = j - 1;
                Tok::Opcode(text)
            }
            other => {
                return Err(err(pos, ErrorKind::Syntax, format!("unexpected character {other:?}")));
            }
        };
        i += 1;
        col = col.saturating_add(u32::try_from(i - start).unwrap_or(u32::MAX));
        toks.push(Token { tok, pos });
    }
    toks.push(Token { tok: Tok::Eof, pos: Pos { line, col } });
    Ok(toks)
}

// ---------------------------------------------------------------- parser

struct Parser {
    toks: Vec<Token>,
    i: usize,
    /// Current nesting of parentheses and unary operators.
    nesting: u32,
}

/// An operand as written, before its type is known.
struct RawOperand {
    dollar: bool,
    expr: Option<Expr>,
    pos: Pos,
}

impl Parser {
    fn peek(&self) -> &Token {
        // the token list always ends with Eof and the parser never moves past it
        &self.toks[self.i.min(self.toks.len() - 1)]
    }

    fn next(&mut self) -> Token {
        let t = self.peek().clone();
        if t.tok != Tok::Eof {
            self.i += 1;
        }
        t
    }

    fn expect(&mut self, want: Tok, context: &str, kind: ErrorKind) -> Result<Token, AsmError> {
        let t = self.next();
        if t.tok == want {
            Ok(t)
        } else {
            Err(err(t.pos, kind, format!("expected {} {context}, found {}", want.describe(), t.tok.describe())))
        }
    }

    fn items(&mut self) -> Result<Vec<Item>, AsmError> {
        let mut items = Vec::new();
        loop {
            let t = self.next();
            let pos = t.pos;
            let kind = match t.tok {
                Tok::Eof => return Ok(items),
                Tok::Colon => {
                    let n = self.next();
                    match n.tok {
                        Tok::Name(name) => ItemKind::Label(name),
                        other => {
                            return Err(err(
                                n.pos,
                                ErrorKind::Syntax,
                                format!("expected a label name after ':', found {}", other.describe()),
                            ))
                        }
                    }
                }
                Tok::Opcode(name) => {
                    let def = isa::by_name(&name).ok_or_else(|| {
                        err(pos, ErrorKind::UnknownMnemonic, format!("unknown instruction mnemonic '{name}'"))
                    })?;
                    let raw = if self.peek().tok == Tok::LParen {
                        self.next();
                        self.operands()?
                    } else {
                        Vec::new()
                    };
                    ItemKind::Instr(instr(def, raw, pos)?)
                }
                Tok::Name(name) => self.directive(&name, pos)?,
                other => {
                    return Err(err(
                        pos,
                        ErrorKind::Syntax,
                        format!("expected an instruction, a directive or a label, found {}", other.describe()),
                    ))
                }
            };
            items.push(Item { pos, kind });
        }
    }

    /// Operands after '(' up to and including ')'.
    fn operands(&mut self) -> Result<Vec<RawOperand>, AsmError> {
        let mut ops = Vec::new();
        loop {
            let pos = self.peek().pos;
            let dollar = if self.peek().tok == Tok::Dollar {
                self.next();
                true
            } else {
                false
            };
            let expr = match self.peek().tok {
                Tok::Comma | Tok::RParen if !dollar => None,
                _ => Some(self.expr()?),
            };
            ops.push(RawOperand { dollar, expr, pos });
            let t = self.next();
            match t.tok {
                Tok::Comma => continue,
                Tok::RParen => return Ok(ops),
                other => {
                    return Err(err(
                        t.pos,
                        ErrorKind::BadExpression,
                        format!("expected ',' or ')' after an operand, found {}", other.describe()),
                    ))
                }
            }
        }
    }

    fn directive(&mut self, name: &str, pos: Pos) -> Result<ItemKind, AsmError> {
        let known = ["pad", "align", "at", "readonly", "byte", "word", "set"];
        if !known.contains(&name) {
            return Err(err(
                pos,
                ErrorKind::UnknownDirective,
                format!("unknown directive '{name}' (known: pad, align, at, readonly, byte, word, set; instructions are upper case)"),
            ));
        }
        self.expect(Tok::LParen, &format!("after '{name}'"), ErrorKind::Syntax)?;
        if name == "set" {
            let n = self.next();
            let Tok::Name(var) = n.tok else {
                return Err(err(
                    n.pos,
                    ErrorKind::Syntax,
                    format!("expected a name as the first argument of 'set', found {}", n.tok.describe()),
                ));
            };
            self.expect(Tok::Comma, "after the name in 'set'", ErrorKind::Syntax)?;
            let e = self.expr()?;
            self.expect(Tok::RParen, "to close 'set'", ErrorKind::BadExpression)?;
            return Ok(ItemKind::Set(var, e));
        }
        let mut args = Vec::new();
        loop {
            args.push(self.expr()?);
            let t = self.next();
            match t.tok {
                Tok::Comma => continue,
                Tok::RParen => break,
                other => {
                    return Err(err(
                        t.pos,
                        ErrorKind::BadExpression,
                        format!("expected ',' or ')' in '{name}', found {}", other.describe()),
                    ))
                }
            }
        }
        let single = |mut args: Vec<Expr>| -> Result<Expr, AsmError> {
            if args.len() != 1 {
                return Err(err(
                    pos,
                    ErrorKind::OperandCount,
                    format!("'{name}' takes exactly 1 argument, found {}", args.len()),
                ));
            }
            Ok(args.remove(0))
        };
        Ok(match name {
            "pad" => ItemKind::Pad(single(args)?),
            "align" => ItemKind::Align(single(args)?),
            "at" => ItemKind::At(single(args)?),
            "readonly" => ItemKind::Readonly(single(args)?),
            "byte" => ItemKind::Byte(args),
            _ => ItemKind::Word(args),
        })
    }

    fn expr(&mut self) -> Result<Expr, AsmError> {
        self.binary(1)
    }

    fn binary(&mut self, min_prec: u8) -> Result<Expr, AsmError> {
        let mut lhs = self.unary()?;
        loop {
            let Tok::Op(op) = self.peek().tok else { return Ok(lhs) };
            let prec = op.precedence();
            if prec < min_prec {
                return Ok(lhs);
            }
            let op_pos = self.next().pos;
            let rhs = self.binary(prec + 1)?;
            let pos = lhs.pos;
            lhs = Expr::new(pos, Node::Binary(op, Box::new(lhs), Box::new(rhs)));
            self.check_depth(&lhs, op_pos)?;
        }
    }

    fn check_depth(&self, e: &Expr, pos: Pos) -> Result<(), AsmError> {
        if self.nesting > MAX_EXPR_DEPTH || e.depth > MAX_EXPR_DEPTH {
            return Err(err(pos, ErrorKind::BadExpression, "expression nested too deeply"));
        }
        Ok(())
    }

    fn unary(&mut self) -> Result<Expr, AsmError> {
        let t = self.next();
        let pos = t.pos;
        self.nesting += 1;
        let r = self.unary_inner(t);
        self.nesting -= 1;
        let e = r?;
        self.check_depth(&e, pos)?;
        Ok(e)
    }

    fn unary_inner(&mut self, t: Token) -> Result<Expr, AsmError> {
        let pos = t.pos;
        if self.nesting > MAX_EXPR_DEPTH {
            return Err(err(pos, ErrorKind::BadExpression, "expression nested too deeply"));
        }
        let node = match t.tok {
            Tok::Num(n) => Node::Num(n),
            Tok::Name(n) => Node::Name(n),
            Tok::Dot => Node::Dot,
            Tok::Bang => Node::Bang,
            Tok::LParen => {
                let e = self.expr()?;
                self.expect(Tok::RParen, "to close '('", ErrorKind::BadExpression)?;
                return Ok(Expr { pos, ..e });
            }
            Tok::Op(BinOp::Sub) => Node::Unary(UnOp::Neg, Box::new(self.unary()?)),
            Tok::Op(BinOp::Xnor) => Node::Unary(UnOp::Not, Box::new(self.unary()?)),
            Tok::Op(BinOp::Add) => return self.unary(),
            other => {
                return Err(err(
                    pos,
                    ErrorKind::BadExpression,
                    format!("expected a number, a name, '.', '!' or '(' in an expression, found {}", other.describe()),
                ))
            }
        };
        Ok(Expr::new(pos, node))
    }
}

/// Types the written operands of `def`, infers blank count operands and
/// checks the operand count.
fn instr(def: &'static InstrDef, mut raw: Vec<RawOperand>, pos: Pos) -> Result<Instr, AsmError> {
    let name = def.name;
    // "RETURN ()" is a single blank operand: treat it as no operands
    if def.fixed.is_empty() && raw.len() == 1 && raw[0].expr.is_none() && !raw[0].dollar {
        raw.clear();
    }
    let m = raw.len();
    let f = def.fixed.len();
    let mut kinds: Vec<OperandKind> = def.fixed.to_vec();
    let mut count_check = None;
    let mut inferred = None;
    if !def.is_variadic() {
        if m != f {
            return Err(err(
                pos,
                ErrorKind::OperandCount,
                format!("{name} takes {f} operand{}, found {m}", if f == 1 { "" } else { "s" }),
            ));
        }
    } else {
        let g = def.group.len();
        if m < f || !(m - f).is_multiple_of(g) {
            let what = if g == 1 {
                format!("{f} operands followed by the counted ones")
            } else {
                format!("{f} operands followed by groups of {g}")
            };
            return Err(err(pos, ErrorKind::OperandCount, format!("{name} takes {what}, found {m} operands")));
        }
        let n = (m - f) / g;
        for _ in 0..n {
            kinds.extend_from_slice(def.group);
        }
        if let Some(c) = def.count_at {
            match &raw[c].expr {
                None if !raw[c].dollar => inferred = Some((c, n)),
                _ => count_check = Some((c, n as i64)),
            }
        }
    }
    let mut operands = Vec::with_capacity(m);
    for (idx, (r, kind)) in raw.into_iter().zip(kinds).enumerate() {
        let nth = idx + 1;
        let expr = match (r.expr, inferred) {
            (Some(e), _) => e,
            (None, Some((c, n))) if c == idx => Expr::num(n as i64, r.pos),
            (None, _) => {
                return Err(err(r.pos, ErrorKind::OperandCount, format!("operand {nth} of {name} is missing")));
            }
        };
        match (kind, r.dollar) {
            (OperandKind::Literal, true) => {
                return Err(err(
                    r.pos,
                    ErrorKind::OperandType,
                    format!("operand {nth} of {name} is a literal and cannot be written with '$'"),
                ))
            }
            (OperandKind::Reference, false) => {
                return Err(err(
                    r.pos,
                    ErrorKind::OperandType,
                    format!("operand {nth} of {name} is a reference and must be written with '$'"),
                ))
            }
            _ => {}
        }
        operands.push(Operand { kind, dollar: r.dollar, expr, pos: r.pos });
    }
    Ok(Instr { def, operands, count_check })
}

/// Parses a whole source text.
pub fn parse(src: &str) -> Result<Vec<Item>, AsmError> {
    let toks = lex(src)?;
    Parser { toks, i: 0, nesting: 0 }.items()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexes_the_rfc_token_classes() {
        let t = lex("SHA-1 (0x1F, 0b101, 12) :a_1 ; comment\n<< >> ~").unwrap();
        let toks: Vec<Tok> = t.into_iter().map(|t| t.tok).collect();
        assert_eq!(
            toks,
            vec![
                Tok::Opcode("SHA-1".into()),
                Tok::LParen,
                Tok::Num(31),
                Tok::Comma,
                Tok::Num(5),
                Tok::Comma,
                Tok::Num(12),
                Tok::RParen,
                Tok::Colon,
                Tok::Name("a_1".into()),
                Tok::Op(BinOp::Shl),
                Tok::Op(BinOp::Shr),
                Tok::Op(BinOp::Xnor),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn positions_are_one_based() {
        let t = lex("  a\n\tb").unwrap();
        assert_eq!(t[0].pos, Pos { line: 1, col: 3 });
        assert_eq!(t[1].pos, Pos { line: 2, col: 2 });
    }

    #[test]
    fn blank_count_is_inferred() {
        let items = parse("MULTILOAD (64, , 1, 2, 3, 4)").unwrap();
        let ItemKind::Instr(i) = &items[0].kind else { panic!() };
        assert_eq!(i.operands[1].expr.node, Node::Num(4));
        assert!(i.count_check.is_none());
    }
}
