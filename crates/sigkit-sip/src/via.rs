//! The Via header value (RFC 3261 §20.42, §18.2.1; RFC 3581 §4 `rport`;
//! RFC 3486 §5 `comp`; RFC 5049 §6.1 `sigcomp-id`).

use crate::syntax::{is_token_byte, parse_decimal, parse_port, scan_host, skip_lws, unquote, validate_params, Params};
use crate::ParseError;

/// One via-parm: `SIP/2.0/UDP host:port;branch=...;...`. Parameters are checked
/// when the Via is parsed, so the accessors cannot fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Via<'a> {
    /// The whole via-parm text.
    pub text: &'a str,
    /// protocol-name, `SIP`.
    pub protocol_name: &'a str,
    /// protocol-version, `2.0`.
    pub protocol_version: &'a str,
    /// transport: `UDP`, `TCP`, `TLS`, `SCTP` or another token.
    pub transport: &'a str,
    /// sent-by host: hostname, IPv4 address, or IPv6 reference with brackets.
    pub host: &'a str,
    /// sent-by port.
    pub port: Option<u16>,
    /// The via-params, each starting with `;` (empty if none).
    pub params: &'a str,
    /// Offset of `params` in `text`.
    pub(crate) params_offset: usize,
}

fn token_at(b: &[u8], i: usize) -> usize {
    let mut e = i;
    while e < b.len() && is_token_byte(b[e]) {
        e += 1;
    }
    e
}

impl<'a> Via<'a> {
    /// Parses one via-parm (one element of a comma-separated Via header value).
    pub fn parse(text: &'a str) -> Result<Via<'a>, ParseError> {
        let b = text.as_bytes();
        let mut i = skip_lws(b, 0);
        let mut parts = [""; 3];
        for (n, part) in parts.iter_mut().enumerate() {
            if n > 0 {
                i = skip_lws(b, i);
                if b.get(i) != Some(&b'/') {
                    return Err(ParseError::Via);
                }
                i = skip_lws(b, i + 1);
            }
            let e = token_at(b, i);
            if e == i {
                return Err(ParseError::Via);
            }
            *part = &text[i..e];
            i = e;
        }
        let host_start = skip_lws(b, i);
        if host_start == i {
            return Err(ParseError::Via);
        }
        let host_len = scan_host(&b[host_start..]).map_err(|_| ParseError::Via)?;
        let host = &text[host_start..host_start + host_len];
        i = host_start + host_len;
        let after_host = skip_lws(b, i);
        let port = if b.get(after_host) == Some(&b':') {
            let start = skip_lws(b, after_host + 1);
            let mut e = start;
            while e < b.len() && b[e].is_ascii_digit() {
                e += 1;
            }
            i = e;
            Some(parse_port(&b[start..e])?)
        } else {
            None
        };
        let params = &text[i..];
        validate_params(params).map_err(|_| ParseError::Via)?;
        let via = Via {
            text,
            protocol_name: parts[0],
            protocol_version: parts[1],
            transport: parts[2],
            host,
            port,
            params,
            params_offset: i,
        };
        // Numeric parameters are checked here so that their accessors cannot fail.
        if let Some(Some(p)) = via.param("rport") {
            parse_port(p.as_bytes())?;
        }
        if let Some(v) = via.param("ttl") {
            v.and_then(|t| parse_decimal(t.as_bytes(), 3)).filter(|&t| t <= 255).ok_or(ParseError::Via)?;
        }
        Ok(via)
    }

    /// The via-params in order.
    pub fn params(&self) -> Params<'a> {
        Params::new(self.params)
    }

    /// The first parameter named `name` (case-insensitive): `Some(None)` for a flag.
    pub fn param(&self, name: &str) -> Option<Option<&'a str>> {
        self.params().get(name)
    }

    /// The host without the brackets of an IPv6 reference.
    pub fn host_addr(&self) -> &'a str {
        self.host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(self.host)
    }

    /// `branch=` (RFC 3261 §8.1.1.7).
    pub fn branch(&self) -> Option<&'a str> {
        self.param("branch").flatten()
    }

    /// `received=` (RFC 3261 §18.2.1).
    pub fn received(&self) -> Option<&'a str> {
        self.param("received").flatten()
    }

    /// `rport` (RFC 3581 §4): `Some(None)` when the client asks for it, `Some(Some(port))` once a server filled it.
    pub fn rport(&self) -> Option<Option<u16>> {
        self.param("rport").map(|v| v.and_then(|p| parse_port(p.as_bytes()).ok()))
    }

    /// `comp=` (RFC 3486 §5: `comp=sigcomp` in a Via asks for compressed responses).
    pub fn comp(&self) -> Option<&'a str> {
        self.param("comp").flatten()
    }

    /// Whether `comp=sigcomp` is present (RFC 3486 §5).
    pub fn is_sigcomp(&self) -> bool {
        self.comp().is_some_and(|c| c.eq_ignore_ascii_case("sigcomp"))
    }

    /// `maddr=` (RFC 3261 §18.2.2).
    pub fn maddr(&self) -> Option<&'a str> {
        self.param("maddr").flatten()
    }

    /// `ttl=` (0-255, RFC 3261 §20.42).
    pub fn ttl(&self) -> Option<u8> {
        self.param("ttl").flatten().and_then(|t| parse_decimal(t.as_bytes(), 3)).and_then(|t| u8::try_from(t).ok())
    }

    /// `sigcomp-id=` without its quotes and angle brackets
    /// (RFC 5049 §6.1: `sigcomp-id = LDQUOT "<" instance-val ">" RDQUOT`), e.g.
    /// `urn:uuid:0C67446E-F1A1-11D9-94D3-000A95A0E128`.
    pub fn sigcomp_id(&self) -> Option<&'a str> {
        let v = unquote(self.param("sigcomp-id").flatten()?);
        let v = v.strip_prefix('<').and_then(|v| v.strip_suffix('>')).unwrap_or(v);
        (!v.is_empty()).then_some(v)
    }

    /// Where the response goes (RFC 3261 §18.2.2 with RFC 3581 §4): `maddr`, else
    /// `received`, else the sent-by host; the port is `rport`'s value, else the
    /// sent-by port (`None`: the transport's default, 5060 or 5061 for TLS).
    pub fn response_target(&self) -> (&'a str, Option<u16>) {
        let host = self.maddr().or(self.received()).unwrap_or_else(|| self.host_addr());
        let port = self.rport().flatten().or(self.port);
        (host, port)
    }
}
