//! Call flows on disk: a directory of `NN-<sender>-<name>.sip` files, one
//! SIP message each, in order; sender `ue` or `pcscf`.

use std::fmt;
use std::path::{Path, PathBuf};

/// Which end sends a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Ue,
    Pcscf,
}

impl Side {
    pub fn name(self) -> &'static str {
        match self {
            Side::Ue => "ue",
            Side::Pcscf => "pcscf",
        }
    }

    /// Direction label as a user reads it: "UE→P-CSCF".
    pub fn direction(self) -> &'static str {
        match self {
            Side::Ue => "ue->pcscf",
            Side::Pcscf => "pcscf->ue",
        }
    }
}

#[derive(Debug, Clone)]
pub struct FlowMessage {
    pub index: u32,
    pub sender: Side,
    pub name: String,
    pub file: PathBuf,
    pub bytes: Vec<u8>,
}

#[derive(Debug)]
pub enum CorpusError {
    Io(PathBuf, std::io::Error),
    BadName(PathBuf),
    Malformed { file: PathBuf, message: String, why: String },
    Empty(PathBuf),
}

impl fmt::Display for CorpusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CorpusError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            CorpusError::BadName(p) => write!(f, "{}: file name is not NN-<ue|pcscf>-<name>.sip", p.display()),
            CorpusError::Malformed { file, message, why } => {
                write!(f, "{} (message {message}): {why}", file.display())
            }
            CorpusError::Empty(p) => write!(f, "{}: no .sip messages in the flow", p.display()),
        }
    }
}

impl std::error::Error for CorpusError {}

fn parse_name(path: &Path) -> Option<(u32, Side, String)> {
    let stem = path.file_name()?.to_str()?.strip_suffix(".sip")?;
    let mut parts = stem.splitn(3, '-');
    let n: u32 = parts.next()?.parse().ok()?;
    let side = match parts.next()? {
        "ue" => Side::Ue,
        "pcscf" => Side::Pcscf,
        _ => return None,
    };
    let name = parts.next()?.to_string();
    (!name.is_empty()).then_some((n, side, name))
}

/// Checks that `bytes` is one SIP message (RFC 3261 §7): a start line,
/// header lines ending in CRLF, an empty line, and a body whose length
/// matches Content-Length when the header is present.
pub fn check_sip(bytes: &[u8]) -> Result<(), String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8 text: {e}"))?;
    let Some(head_end) = text.find("\r\n\r\n") else {
        return Err("no empty line (CRLF CRLF) after the headers".into());
    };
    let head = &text[..head_end];
    let body = &bytes[head_end + 4..];
    let mut lines = head.split("\r\n");
    let start = lines.next().unwrap_or("");
    let is_request = start.ends_with("SIP/2.0") && start.split(' ').count() == 3;
    let is_response =
        start.starts_with("SIP/2.0 ") && start.get(8..11).is_some_and(|c| c.bytes().all(|b| b.is_ascii_digit()));
    if !is_request && !is_response {
        return Err(format!("start line {start:?} is neither a request nor a status line"));
    }
    if head.contains('\n') && head.split("\r\n").any(|l| l.contains('\n') || l.contains('\r')) {
        return Err("a header line ends in a bare LF or CR".into());
    }
    for l in head.split("\r\n").skip(1) {
        if l.starts_with(' ') || l.starts_with('\t') {
            continue; // folded continuation
        }
        if !l.contains(':') {
            return Err(format!("header line {l:?} has no colon"));
        }
        let (name, value) = l.split_once(':').unwrap_or_default();
        let name = name.trim();
        if name.eq_ignore_ascii_case("content-length") || name == "l" {
            let n: usize = value.trim().parse().map_err(|_| format!("Content-Length {value:?} is not a number"))?;
            if n != body.len() {
                return Err(format!("Content-Length says {n} but the body has {} bytes", body.len()));
            }
        }
    }
    Ok(())
}

/// Loads a flow directory in message order. Every message is checked with
/// [`check_sip`]; the first bad one is an error naming its file.
pub fn load_flow(dir: &Path) -> Result<Vec<FlowMessage>, CorpusError> {
    let rd = std::fs::read_dir(dir).map_err(|e| CorpusError::Io(dir.to_path_buf(), e))?;
    let mut msgs = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| CorpusError::Io(dir.to_path_buf(), e))?;
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("sip") {
            continue;
        }
        let (index, sender, name) = parse_name(&path).ok_or_else(|| CorpusError::BadName(path.clone()))?;
        let bytes = std::fs::read(&path).map_err(|e| CorpusError::Io(path.clone(), e))?;
        if let Err(why) = check_sip(&bytes) {
            return Err(CorpusError::Malformed { file: path, message: name, why });
        }
        msgs.push(FlowMessage { index, sender, name, file: path, bytes });
    }
    if msgs.is_empty() {
        return Err(CorpusError::Empty(dir.to_path_buf()));
    }
    msgs.sort_by_key(|m| m.index);
    // Two files with one number would leave the order to chance.
    if let Some(w) = msgs.windows(2).find(|w| w[0].index == w[1].index) {
        return Err(CorpusError::Malformed {
            file: w[1].file.clone(),
            message: w[1].name.clone(),
            why: format!("its number {:02} is also used by {}", w[1].index, w[0].file.display()),
        });
    }
    Ok(msgs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(parse_name(Path::new("01-ue-INVITE.sip")), Some((1, Side::Ue, "INVITE".to_string())));
        assert_eq!(parse_name(Path::new("12-pcscf-200-OK.sip")), Some((12, Side::Pcscf, "200-OK".to_string())));
        assert_eq!(parse_name(Path::new("1-x-INVITE.sip")), None);
        assert_eq!(parse_name(Path::new("01-ue-.sip")), None);
    }

    #[test]
    fn sip_checks() {
        let ok = b"OPTIONS sip:a@b SIP/2.0\r\nContent-Length: 2\r\n\r\nhi";
        assert!(check_sip(ok).is_ok());
        assert!(check_sip(b"OPTIONS sip:a@b SIP/2.0\r\nContent-Length: 3\r\n\r\nhi").is_err());
        assert!(check_sip(b"OPTIONS sip:a@b SIP/2.0\nVia: x\n\n").is_err());
        assert!(check_sip(b"hello\r\n\r\n").is_err());
        assert!(check_sip(b"SIP/2.0 200 OK\r\nVia: x\r\n\r\n").is_ok());
    }
}
