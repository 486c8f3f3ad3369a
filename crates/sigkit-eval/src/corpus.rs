//! Call flows: a directory of `NN-<sender>-<name>.sip` files, one SIP
//! message each, in order; sender `ue` or `pcscf`. The repository's
//! `corpus/` is built into the library ([`FlowSource::Embedded`]), so the
//! commands' defaults work from any folder and from an installed binary;
//! a directory on disk ([`FlowSource::Dir`]) overrides it.

use std::fmt;
use std::path::{Path, PathBuf};

use include_dir::{include_dir, Dir};

/// The repository's `corpus/`, built in.
static EMBEDDED: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../../corpus");

/// Where a call flow's messages come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlowSource {
    /// A flow of the corpus built into sigkit, by its directory name.
    Embedded(String),
    /// A flow directory on disk.
    Dir(PathBuf),
}

impl FlowSource {
    /// The built-in flow `name` (`3gpp-video-call`, ...), if there is one.
    pub fn builtin(name: &str) -> Option<FlowSource> {
        EMBEDDED.get_dir(name).map(|_| FlowSource::Embedded(name.to_string()))
    }

    /// The flow's name: its directory's.
    pub fn name(&self) -> String {
        match self {
            FlowSource::Embedded(name) => name.clone(),
            FlowSource::Dir(dir) => {
                dir.file_name().map_or_else(|| dir.display().to_string(), |n| n.to_string_lossy().into_owned())
            }
        }
    }

    /// Its messages in order, each checked with [`check_sip`].
    pub fn load(&self) -> Result<Vec<FlowMessage>, CorpusError> {
        match self {
            FlowSource::Dir(dir) => load_flow(dir),
            FlowSource::Embedded(name) => {
                let label = PathBuf::from(format!("corpus/{name} (built in)"));
                let dir = EMBEDDED.get_dir(name.as_str()).ok_or_else(|| {
                    CorpusError::Io(label.clone(), std::io::Error::from(std::io::ErrorKind::NotFound))
                })?;
                let files = dir.files().map(|f| (Path::new("corpus").join(f.path()), f.contents().to_vec()));
                parse_flow(&label, files)
            }
        }
    }
}

impl fmt::Display for FlowSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlowSource::Embedded(name) => write!(f, "corpus/{name} (built in)"),
            FlowSource::Dir(dir) => write!(f, "{}", dir.display()),
        }
    }
}

/// Every flow of the built-in corpus, in name order.
pub fn builtin_flows() -> Vec<FlowSource> {
    let mut names: Vec<String> = EMBEDDED
        .dirs()
        .filter(|d| d.files().any(|f| f.path().extension().is_some_and(|x| x == "sip")))
        .filter_map(|d| d.path().file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    names.sort();
    names.into_iter().map(FlowSource::Embedded).collect()
}

/// Every flow directory of `corpus` (a directory holding `.sip` files), in
/// name order.
pub fn flows_in(corpus: &Path) -> Result<Vec<FlowSource>, CorpusError> {
    let rd = std::fs::read_dir(corpus).map_err(|e| CorpusError::Io(corpus.to_path_buf(), e))?;
    let mut dirs: Vec<PathBuf> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && std::fs::read_dir(p)
                    .is_ok_and(|r| r.flatten().any(|e| e.path().extension().is_some_and(|x| x == "sip")))
        })
        .collect();
    if dirs.is_empty() {
        return Err(CorpusError::Empty(corpus.to_path_buf()));
    }
    dirs.sort();
    Ok(dirs.into_iter().map(FlowSource::Dir).collect())
}

/// The flow `name` of `corpus`, or of the built-in corpus.
pub fn flow_named(corpus: Option<&Path>, name: &str) -> FlowSource {
    match corpus {
        Some(dir) => FlowSource::Dir(dir.join(name)),
        None => FlowSource::Embedded(name.to_string()),
    }
}

/// The flows of `corpus`, or of the built-in corpus.
pub fn flows(corpus: Option<&Path>) -> Result<Vec<FlowSource>, CorpusError> {
    match corpus {
        Some(dir) => flows_in(dir),
        None => Ok(builtin_flows()),
    }
}

/// Which end sends a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The user's terminal (`ue` in a file name).
    Ue,
    /// The P-CSCF, the IMS proxy the terminal signals through (`pcscf` in a file
    /// name; 3GPP TS 24.228).
    Pcscf,
}

impl Side {
    /// The sender as a file name spells it: "ue" or "pcscf".
    pub fn name(self) -> &'static str {
        match self {
            Side::Ue => "ue",
            Side::Pcscf => "pcscf",
        }
    }

    /// The direction it sends in, as tables label it: "ue->pcscf" or
    /// "pcscf->ue".
    pub fn direction(self) -> &'static str {
        match self {
            Side::Ue => "ue->pcscf",
            Side::Pcscf => "pcscf->ue",
        }
    }
}

/// One message of a call flow, as its file holds it.
#[derive(Debug, Clone)]
pub struct FlowMessage {
    /// Its number `NN` in the file name; messages run in this order.
    pub index: u32,
    /// The end that sends it.
    pub sender: Side,
    /// Its name: the file name after `NN-<sender>-`, without `.sip` ("INVITE",
    /// "200-OK").
    pub name: String,
    /// The file it was read from (under `corpus/` for the built-in corpus).
    pub file: PathBuf,
    /// The SIP message, byte for byte as the file holds it.
    pub bytes: Vec<u8>,
}

/// Why a flow or a corpus could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// A file or directory could not be read.
    #[error("{path}: {1}", path = .0.display())]
    Io(PathBuf, std::io::Error),
    /// A `.sip` file whose name does not give its number, sender and name.
    #[error("{}: file name is not NN-<ue|pcscf>-<name>.sip", .0.display())]
    BadName(PathBuf),
    /// A file that is not one SIP message.
    #[error("{} (message {message}): {why}", .file.display())]
    Malformed {
        /// The file.
        file: PathBuf,
        /// The message's name, from the file name.
        message: String,
        /// What is wrong with it.
        #[source]
        why: SipCheckError,
    },
    /// Two files of a flow with one number, which would leave their order
    /// to chance.
    #[error("{} (message {message}): its number {index:02} is also used by {}", .file.display(), .other.display())]
    DuplicateNumber {
        /// The later file in name order.
        file: PathBuf,
        /// Its message's name.
        message: String,
        /// The number both files carry.
        index: u32,
        /// The file that has the number too.
        other: PathBuf,
    },
    /// A flow directory without `.sip` files, or a corpus without flow
    /// directories.
    #[error("{}: no .sip messages in the flow", .0.display())]
    Empty(PathBuf),
}

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

/// Why a corpus file is not one SIP message ([`check_sip`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SipCheckError {
    /// SIP messages are UTF-8 text (RFC 3261 §7.3.1).
    #[error("not UTF-8 text: {0}")]
    NotUtf8(#[from] std::str::Utf8Error),
    /// The header section ends with an empty line (RFC 3261 §7).
    #[error("no empty line (CRLF CRLF) after the headers")]
    NoEmptyLine,
    /// The first line is neither a Request-Line (RFC 3261 §7.1) nor a
    /// Status-Line (§7.2).
    #[error("start line {0:?} is neither a request nor a status line")]
    StartLine(String),
    /// Lines end in CRLF (RFC 3261 §7).
    #[error("a header line ends in a bare LF or CR")]
    BareLineEnd,
    /// A header line is `name: value` (RFC 3261 §7.3).
    #[error("header line {0:?} has no colon")]
    NoColon(String),
    /// Content-Length is a decimal number (RFC 3261 §20.14).
    #[error("Content-Length {0:?} is not a number")]
    ContentLengthNotNumber(String),
    /// Content-Length is the body's size in bytes (RFC 3261 §20.14).
    #[error("Content-Length says {declared} but the body has {body} bytes")]
    ContentLengthMismatch {
        /// The header's value.
        declared: usize,
        /// The bytes after the empty line.
        body: usize,
    },
}

/// Checks that `bytes` is one SIP message (RFC 3261 §7): a start line,
/// header lines ending in CRLF, an empty line, and a body whose length
/// matches Content-Length when the header is present.
pub fn check_sip(bytes: &[u8]) -> Result<(), SipCheckError> {
    let text = std::str::from_utf8(bytes)?;
    let Some(head_end) = text.find("\r\n\r\n") else {
        return Err(SipCheckError::NoEmptyLine);
    };
    let head = &text[..head_end];
    let body = &bytes[head_end + 4..];
    let mut lines = head.split("\r\n");
    let start = lines.next().unwrap_or("");
    let is_request = start.ends_with("SIP/2.0") && start.split(' ').count() == 3;
    let is_response =
        start.starts_with("SIP/2.0 ") && start.get(8..11).is_some_and(|c| c.bytes().all(|b| b.is_ascii_digit()));
    if !is_request && !is_response {
        return Err(SipCheckError::StartLine(start.to_string()));
    }
    if head.contains('\n') && head.split("\r\n").any(|l| l.contains('\n') || l.contains('\r')) {
        return Err(SipCheckError::BareLineEnd);
    }
    for l in head.split("\r\n").skip(1) {
        if l.starts_with(' ') || l.starts_with('\t') {
            continue; // folded continuation
        }
        let Some((name, value)) = l.split_once(':') else {
            return Err(SipCheckError::NoColon(l.to_string()));
        };
        let name = name.trim();
        if name.eq_ignore_ascii_case("content-length") || name == "l" {
            let declared: usize =
                value.trim().parse().map_err(|_| SipCheckError::ContentLengthNotNumber(value.to_string()))?;
            if declared != body.len() {
                return Err(SipCheckError::ContentLengthMismatch { declared, body: body.len() });
            }
        }
    }
    Ok(())
}

/// Loads a flow directory in message order. Every message is checked with
/// [`check_sip`]; the first bad one is an error naming its file.
pub fn load_flow(dir: &Path) -> Result<Vec<FlowMessage>, CorpusError> {
    let rd = std::fs::read_dir(dir).map_err(|e| CorpusError::Io(dir.to_path_buf(), e))?;
    let mut files = Vec::new();
    for entry in rd {
        let path = entry.map_err(|e| CorpusError::Io(dir.to_path_buf(), e))?.path();
        if path.extension().and_then(|e| e.to_str()) == Some("sip") {
            let bytes = std::fs::read(&path).map_err(|e| CorpusError::Io(path.clone(), e))?;
            files.push((path, bytes));
        }
    }
    parse_flow(dir, files)
}

/// The flow `dir` of `files` (path, bytes), `.sip` files only, in message
/// order.
fn parse_flow(
    dir: &Path,
    files: impl IntoIterator<Item = (PathBuf, Vec<u8>)>,
) -> Result<Vec<FlowMessage>, CorpusError> {
    let mut msgs = Vec::new();
    for (path, bytes) in files {
        if path.extension().and_then(|e| e.to_str()) != Some("sip") {
            continue;
        }
        let (index, sender, name) = parse_name(&path).ok_or_else(|| CorpusError::BadName(path.clone()))?;
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
        return Err(CorpusError::DuplicateNumber {
            file: w[1].file.clone(),
            message: w[1].name.clone(),
            index: w[1].index,
            other: w[0].file.clone(),
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
        assert_eq!(
            check_sip(b"OPTIONS sip:a@b SIP/2.0\r\nContent-Length: 3\r\n\r\nhi"),
            Err(SipCheckError::ContentLengthMismatch { declared: 3, body: 2 })
        );
        assert_eq!(check_sip(b"OPTIONS sip:a@b SIP/2.0\nVia: x\n\n"), Err(SipCheckError::NoEmptyLine));
        assert_eq!(check_sip(b"hello\r\n\r\n"), Err(SipCheckError::StartLine("hello".into())));
        assert_eq!(check_sip(b"OPTIONS sip:a@b SIP/2.0\r\nVia\r\n\r\n"), Err(SipCheckError::NoColon("Via".into())));
        assert!(matches!(
            check_sip(b"OPTIONS sip:a@b SIP/2.0\r\nl: x\r\n\r\n"),
            Err(SipCheckError::ContentLengthNotNumber(_))
        ));
        assert!(matches!(check_sip(b"OPTIONS \xff SIP/2.0\r\n\r\n"), Err(SipCheckError::NotUtf8(_))));
        assert_eq!(check_sip(b"OPTIONS sip:a@b SIP/2.0\r\nVia: x\nTo: y\r\n\r\n"), Err(SipCheckError::BareLineEnd));
        assert!(check_sip(b"SIP/2.0 200 OK\r\nVia: x\r\n\r\n").is_ok());
        // The message says what is wrong and by how much.
        let e = check_sip(b"OPTIONS sip:a@b SIP/2.0\r\nContent-Length: 3\r\n\r\nhi").unwrap_err();
        assert_eq!(e.to_string(), "Content-Length says 3 but the body has 2 bytes");
    }

    #[test]
    fn the_built_in_corpus_is_the_repository_corpus() {
        let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
        let on_disk = flows_in(&corpus).unwrap();
        let built_in = builtin_flows();
        assert!(built_in.len() >= 8, "{built_in:?}");
        assert_eq!(
            on_disk.iter().map(FlowSource::name).collect::<Vec<_>>(),
            built_in.iter().map(FlowSource::name).collect::<Vec<_>>()
        );
        for (disk, embedded) in on_disk.iter().zip(&built_in) {
            let (a, b) = (disk.load().unwrap(), embedded.load().unwrap());
            assert_eq!(a.len(), b.len(), "{embedded}");
            for (x, y) in a.iter().zip(&b) {
                assert_eq!((x.index, x.sender, &x.name, &x.bytes), (y.index, y.sender, &y.name, &y.bytes));
            }
        }
        assert_eq!(FlowSource::builtin("3gpp-video-call"), Some(FlowSource::Embedded("3gpp-video-call".into())));
        assert_eq!(FlowSource::builtin("no-such-flow"), None);
    }

    #[test]
    fn a_folder_without_flows_is_an_error_naming_it() {
        let e = flows_in(Path::new("/nonexistent/corpus")).unwrap_err();
        assert!(e.to_string().contains("/nonexistent/corpus"), "{e}");
        let empty = std::env::temp_dir().join(format!("sigkit-empty-corpus-{}", std::process::id()));
        std::fs::create_dir_all(&empty).unwrap();
        assert!(matches!(flows_in(&empty), Err(CorpusError::Empty(_))));
    }
}
