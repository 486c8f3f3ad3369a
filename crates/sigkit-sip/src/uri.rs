//! SIP and SIPS URIs (RFC 3261 §19.1.1, grammar §25.1), zero-copy.

use crate::syntax::{parse_port, scan_host};
use crate::ParseError;

/// The URI scheme of a [`Uri`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `sip:`
    Sip,
    /// `sips:` (TLS on every hop, RFC 3261 §19.1.2).
    Sips,
}

/// A parsed `sip:` / `sips:` URI; every field borrows from the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Uri<'a> {
    /// The whole URI text.
    pub text: &'a str,
    /// `sip` or `sips`.
    pub scheme: Scheme,
    /// The user part (escaped as on the wire), e.g. `alice` or `+1-212-555;phone-context=x`.
    pub user: Option<&'a str>,
    /// The password after `user:` (RFC 3261 §19.1.1 discourages it).
    pub password: Option<&'a str>,
    /// The host: hostname, IPv4 address or IPv6 reference with its brackets.
    pub host: &'a str,
    /// The port, if given.
    pub port: Option<u16>,
    /// The uri-parameters, each starting with `;` (empty if none).
    pub params: &'a str,
    /// The headers after `?`, without the `?`.
    pub headers: Option<&'a str>,
}

/// `paramchar`, `user`, `password` and `hvalue` characters of RFC 3261 §25.1,
/// taken together (unreserved, escaped `%`, and the sub-delimiters
/// `[]/:&+$=,;?`); the grammar per part is stricter than this union.
fn is_uri_part_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'-' | b'_'
                | b'.'
                | b'!'
                | b'~'
                | b'*'
                | b'\''
                | b'('
                | b')'
                | b'%'
                | b'['
                | b']'
                | b'/'
                | b':'
                | b'&'
                | b'+'
                | b'$'
                | b'='
                | b','
                | b';'
                | b'?'
        )
}

impl<'a> Uri<'a> {
    /// Parses a SIP or SIPS URI. Other schemes (`tel:`, `urn:`) give
    /// [`ParseError::UnsupportedScheme`]; their text stays available where the URI
    /// was found (Request-URI, name-addr).
    pub fn parse(text: &'a str) -> Result<Uri<'a>, ParseError> {
        let colon = text.find(':').ok_or(ParseError::Uri)?;
        let scheme = &text[..colon];
        let scheme = if scheme.eq_ignore_ascii_case("sip") {
            Scheme::Sip
        } else if scheme.eq_ignore_ascii_case("sips") {
            Scheme::Sips
        } else if !scheme.is_empty() && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b)) {
            return Err(ParseError::UnsupportedScheme);
        } else {
            return Err(ParseError::Uri);
        };
        let rest = &text[colon + 1..];
        // `@` is allowed only as the userinfo delimiter, checked below.
        if !rest.bytes().all(|b| is_uri_part_byte(b) || b == b'@') {
            return Err(ParseError::Uri);
        }
        let (user, password, hostport) = match rest.find('@') {
            Some(at) => {
                let userinfo = &rest[..at];
                let (user, password) = match userinfo.find(':') {
                    Some(c) => (&userinfo[..c], Some(&userinfo[c + 1..])),
                    None => (userinfo, None),
                };
                if user.is_empty() {
                    return Err(ParseError::Uri);
                }
                (Some(user), password, &rest[at + 1..])
            }
            None => (None, None, rest),
        };
        if hostport.contains('@') {
            return Err(ParseError::Uri);
        }
        let hb = hostport.as_bytes();
        let host_len = scan_host(hb)?;
        let host = &hostport[..host_len];
        let mut i = host_len;
        let port = if hb.get(i) == Some(&b':') {
            let start = i + 1;
            i = start;
            while i < hb.len() && hb[i].is_ascii_digit() {
                i += 1;
            }
            Some(parse_port(&hb[start..i])?)
        } else {
            None
        };
        let tail = &hostport[i..];
        let (params, headers) = match tail.find('?') {
            Some(q) => (&tail[..q], Some(&tail[q + 1..])),
            None => (tail, None),
        };
        if !params.is_empty() && !params.starts_with(';') {
            return Err(ParseError::Uri);
        }
        for p in params.split(';').skip(1) {
            let name = p.split('=').next().unwrap_or("");
            if name.is_empty() || p.matches('=').count() > 1 {
                return Err(ParseError::Uri);
            }
        }
        Ok(Uri { text, scheme, user, password, host, port, params, headers })
    }

    /// The host without the brackets of an IPv6 reference.
    pub fn host_addr(&self) -> &'a str {
        self.host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(self.host)
    }

    /// The uri-parameters as (name, value) pairs.
    pub fn params(&self) -> impl Iterator<Item = (&'a str, Option<&'a str>)> {
        self.params.split(';').skip(1).map(|p| match p.find('=') {
            Some(e) => (&p[..e], Some(&p[e + 1..])),
            None => (p, None),
        })
    }

    /// The first uri-parameter named `name` (case-insensitive); `Some(None)` for a flag.
    pub fn param(&self, name: &str) -> Option<Option<&'a str>> {
        self.params().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v)
    }

    /// `transport=` (RFC 3261 §19.1.1).
    pub fn transport(&self) -> Option<&'a str> {
        self.param("transport").flatten()
    }

    /// `comp=` (RFC 3486 §4: `comp=sigcomp` asks for SigComp towards this URI).
    pub fn comp(&self) -> Option<&'a str> {
        self.param("comp").flatten()
    }

    /// Whether `comp=sigcomp` is present (RFC 3486 §4).
    pub fn is_sigcomp(&self) -> bool {
        self.comp().is_some_and(|c| c.eq_ignore_ascii_case("sigcomp"))
    }

    /// `lr`: the element is a loose router (RFC 3261 §16.4, §19.1.1).
    pub fn lr(&self) -> bool {
        self.param("lr").is_some()
    }

    /// `maddr=` (RFC 3261 §19.1.1).
    pub fn maddr(&self) -> Option<&'a str> {
        self.param("maddr").flatten()
    }

    /// `sigcomp-id=`, escaped as on the wire (RFC 5049 §6.1: it is a uri-parameter).
    pub fn sigcomp_id(&self) -> Option<&'a str> {
        self.param("sigcomp-id").flatten()
    }
}
