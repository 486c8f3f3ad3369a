//! `sigkit asm` and `sigkit disasm`: the UDVM assembly language of RFC 4464
//! §3 to bytecode and back, through the `sigcomp-asm` crate.
//!
//! Exit codes (docs/cli.md): 0 success; 1 the output could not be written;
//! 2 bad arguments; 3 the input is wrong for the job (an unreadable file,
//! bad hex, an assembly error, bytecode that the SigComp header cannot
//! upload, a message without bytecode).

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use sigcomp::wire::{destination_address, Body, Header};
use sigcomp_asm::Assembly;

use crate::exit::Failure;
use crate::hexin;

#[derive(Args)]
pub struct AsmArgs {
    /// Assembly source (RFC 4464 §3), or - for standard input.
    file: PathBuf,
    /// Write to OUT instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: Option<PathBuf>,
    /// Write a complete SigComp message: the standard header (RFC 3320 §7,
    /// destination = the first instruction), the bytecode, then the
    /// compressed data of --input, ready for `sigkit decompress`.
    #[arg(long)]
    message: bool,
    /// With --message: a file whose bytes follow the bytecode as the
    /// message's compressed data.
    #[arg(long, value_name = "DATA", requires = "message")]
    input: Option<PathBuf>,
    /// Write hex text (one line) instead of binary.
    #[arg(long)]
    hex: bool,
}

#[derive(Args)]
pub struct DisasmArgs {
    /// Bytecode (or, with --message, a SigComp message), or - for standard
    /// input.
    file: PathBuf,
    /// FILE is hex text (whitespace, commas and 0x prefixes ignored).
    #[arg(long)]
    hex: bool,
    /// Address the bytecode is loaded at (RFC 3320 §7.3: uploaded bytecode
    /// starts at a multiple of 64 from 128 to 1024; 128 is the usual one).
    #[arg(long, value_name = "N", default_value_t = 128, conflicts_with = "message")]
    address: u16,
    /// FILE is a SigComp message: disassemble the bytecode it uploads, at
    /// the destination its header gives.
    #[arg(long)]
    message: bool,
    /// Write to OUT instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    output: Option<PathBuf>,
}

/// How a file is named in messages (`-` is standard input).
fn shown(file: &Path) -> String {
    if file.as_os_str() == "-" {
        "<stdin>".to_string()
    } else {
        file.display().to_string()
    }
}

fn read_file(file: &Path) -> io::Result<Vec<u8>> {
    if file.as_os_str() == "-" {
        let mut buf = Vec::new();
        io::stdin().read_to_end(&mut buf)?;
        Ok(buf)
    } else {
        std::fs::read(file)
    }
}

/// Writes `data` to `output` (a file) or standard output.
fn write_output(output: Option<&Path>, data: &[u8]) -> ExitCode {
    let result = match output {
        Some(path) => std::fs::write(path, data).map_err(|e| (shown(path), e)),
        None => {
            let mut out = io::stdout().lock();
            out.write_all(data).and_then(|()| out.flush()).map_err(|e| ("standard output".to_string(), e))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err((_, e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err((what, e)) => {
            eprintln!("sigkit: writing {what}: {e}");
            Failure::Run.exit()
        }
    }
}

/// The input (the source, the data, the message) is not what the job
/// takes.
fn bad_input(message: String) -> ExitCode {
    eprintln!("sigkit: {message}");
    Failure::Input.exit()
}

/// The raw bytecode from the first instruction on, as it is loaded at that
/// instruction's address: bytes below it would be lost, so they must be
/// zero (or unwritten); trailing zeros are dropped since UDVM memory is
/// initialised to 0 (RFC 3320 §7).
fn raw_bytecode(a: &Assembly) -> Result<Vec<u8>, String> {
    let Some(entry) = a.entry else {
        return Err("there is no instruction: the bytecode starts at the first instruction".into());
    };
    if let Some(addr) = (a.start..entry).find(|&x| a.byte_at(x).is_some_and(|b| b != 0)) {
        return Err(format!(
            "address {addr} holds a non-zero byte below the first instruction (at {entry}), which the bytecode would not carry"
        ));
    }
    let from = usize::from(entry - a.start);
    let mut code = a.bytes.get(from..).unwrap_or_default().to_vec();
    while code.last() == Some(&0) {
        code.pop();
    }
    Ok(code)
}

/// Lower-case hex text, one line.
fn hex_line(bytes: &[u8]) -> Vec<u8> {
    let mut s = hexin::encode(bytes);
    s.push('\n');
    s.into_bytes()
}

pub fn asm(args: AsmArgs) -> ExitCode {
    let name = shown(&args.file);
    let source = match read_file(&args.file) {
        Ok(bytes) => bytes,
        Err(e) => return bad_input(format!("{name}: {e}")),
    };
    let Ok(source) = String::from_utf8(source) else {
        return bad_input(format!("{name}: the source is not UTF-8 text"));
    };
    let assembly = match sigcomp_asm::assemble(&source) {
        Ok(a) => a,
        Err(e) => {
            // the conventional FILE:LINE:COLUMN form, which editors follow
            eprintln!("{name}:{}:{}: {}", e.line, e.column, e.message);
            return Failure::Input.exit();
        }
    };
    let bytes = if args.message {
        let upload = match assembly.upload() {
            Ok(u) => u,
            Err(e) => return bad_input(format!("{name}: cannot make a SigComp message: {e}")),
        };
        let data = match &args.input {
            Some(path) => match read_file(path) {
                Ok(d) => d,
                Err(e) => return bad_input(format!("{}: {e}", shown(path))),
            },
            None => Vec::new(),
        };
        match upload.message(&data) {
            Ok(message) => message,
            Err(e) => return bad_input(format!("{name}: cannot make a SigComp message: {e}")),
        }
    } else {
        match raw_bytecode(&assembly) {
            Ok(code) => code,
            Err(e) => return bad_input(format!("{name}: {e}")),
        }
    };
    let bytes = if args.hex { hex_line(&bytes) } else { bytes };
    write_output(args.output.as_deref(), &bytes)
}

pub fn disasm(args: DisasmArgs) -> ExitCode {
    let name = shown(&args.file);
    let raw = match read_file(&args.file) {
        Ok(bytes) => bytes,
        Err(e) => return bad_input(format!("{name}: {e}")),
    };
    let input = if args.hex {
        let Ok(text) = String::from_utf8(raw) else {
            return bad_input(format!("{name}: hex input is not UTF-8 text"));
        };
        match hexin::decode(&text) {
            Ok(b) => b,
            Err(e) => return bad_input(format!("{name}: bad hex: {e}")),
        }
    } else {
        raw
    };
    let text = if args.message {
        let header = match Header::parse(&input) {
            Ok(h) => h,
            Err(f) => return bad_input(format!("{name}: not a valid SigComp message ({})", f.reason.name())),
        };
        let (code, destination_bits) = match header.body {
            Body::Bytecode { code, destination_bits } if !code.is_empty() => (code, destination_bits),
            Body::Bytecode { .. } => {
                return bad_input(format!(
                    "{name}: the message is a NACK (code_len 0, RFC 4077), it carries no bytecode"
                ))
            }
            Body::StateId(id) => {
                return bad_input(format!(
                    "{name}: the message carries no bytecode; it accesses state with the partial identifier {}",
                    hexin::encode(id)
                ))
            }
        };
        let destination = destination_address(destination_bits);
        let bytes = |n: usize| if n == 1 { "1 byte".to_string() } else { format!("{n} bytes") };
        let mut text = format!(
            "; SigComp message of {}: {}-byte header, {} of bytecode for address {destination}, {} of compressed data\n",
            bytes(input.len()),
            header.header_len - code.len(),
            bytes(code.len()),
            bytes(header.remaining.len())
        );
        if let Some(fb) = header.returned_feedback {
            text.push_str(&format!("; returned feedback item: {}\n", hexin::encode(fb)));
        }
        text.push_str(&sigcomp_asm::disassemble(code, destination));
        text
    } else {
        // 0xf8..0xff is never an opcode but starts every SigComp message
        // (RFC 3320 §7): point at --message rather than only print bytes
        let looks_like_message = input.first().is_some_and(|&b| b >= 0xf8)
            && matches!(Header::parse(&input), Ok(Header { body: Body::Bytecode { code, .. }, .. }) if !code.is_empty());
        if looks_like_message {
            eprintln!(
                "sigkit: note: {name} looks like a SigComp message; --message disassembles the bytecode it uploads"
            );
        }
        sigcomp_asm::disassemble(&input, args.address)
    };
    write_output(args.output.as_deref(), text.as_bytes())
}
