//! name-addr / addr-spec values (From, To, Contact, Route, Record-Route, Path:
//! RFC 3261 §20.10, §20.20, §20.30, §20.34, §20.39; RFC 3327 §4) and CSeq (§20.16).

use crate::syntax::{
    is_lws, is_token_byte, parse_decimal, quoted_end, skip_lws, trim_lws, unquote, validate_params, Params,
};
use crate::uri::Uri;
use crate::ParseError;

/// `[display-name] <uri> *(;param)` or `addr-spec *(;param)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NameAddr<'a> {
    /// The whole value text.
    pub text: &'a str,
    /// The display name as written: a quoted-string keeps its quotes (see [`NameAddr::display_name`]).
    pub display: Option<&'a str>,
    /// The URI text, without angle brackets. Any scheme (`sip:`, `tel:`, `urn:`);
    /// [`NameAddr::sip_uri`] gives the typed view of SIP URIs.
    pub uri: &'a str,
    /// Whether the URI is in angle brackets (then `;` after it starts header parameters,
    /// RFC 3261 §20.10).
    pub bracketed: bool,
    /// The header parameters, each starting with `;` (empty if none).
    pub params: &'a str,
}

impl<'a> NameAddr<'a> {
    /// Parses one value (one element of a comma-separated list).
    pub fn parse(text: &'a str) -> Result<NameAddr<'a>, ParseError> {
        let b = text.as_bytes();
        let start = skip_lws(b, 0);
        // The `<` of a name-addr, outside a quoted display name.
        let mut i = start;
        let mut quoted = None;
        if b.get(i) == Some(&b'"') {
            let end = quoted_end(b, i).ok_or(ParseError::NameAddr)?;
            quoted = Some(&text[i..end]);
            i = skip_lws(b, end);
            if b.get(i) != Some(&b'<') {
                return Err(ParseError::NameAddr);
            }
        }
        let lt = b[i..].iter().position(|&c| c == b'<').map(|p| p + i);
        let (display, uri, params_start, bracketed) = match lt {
            Some(lt) => {
                let display = match quoted {
                    Some(q) => Some(q),
                    None => {
                        let d = trim_lws(&text[start..lt]);
                        // display-name = *(token LWS) when not quoted.
                        if !d.bytes().all(|c| is_token_byte(c) || is_lws(c)) {
                            return Err(ParseError::NameAddr);
                        }
                        (!d.is_empty()).then_some(d)
                    }
                };
                let gt = b[lt..].iter().position(|&c| c == b'>').ok_or(ParseError::NameAddr)? + lt;
                let uri = &text[lt + 1..gt];
                if uri.is_empty() || uri.bytes().any(|c| is_lws(c) || c == b'<' || c == b'"') {
                    return Err(ParseError::NameAddr);
                }
                (display, uri, gt + 1, true)
            }
            None => {
                // addr-spec: the URI ends at the first `;` (header parameters follow) or LWS.
                let end = b[start..].iter().position(|&c| c == b';' || is_lws(c)).map_or(b.len(), |p| p + start);
                let uri = &text[start..end];
                if uri.is_empty() || !uri.contains(':') || uri.bytes().any(|c| c == b'"' || c == b'>') {
                    return Err(ParseError::NameAddr);
                }
                (None, uri, end, false)
            }
        };
        let params = &text[params_start..];
        validate_params(params).map_err(|_| ParseError::NameAddr)?;
        Ok(NameAddr { text, display, uri, bracketed, params })
    }

    /// The display name without quotes (quoted-pairs kept as written).
    pub fn display_name(&self) -> Option<&'a str> {
        self.display.map(unquote)
    }

    /// The URI's typed view, for `sip:` and `sips:` URIs.
    pub fn sip_uri(&self) -> Result<Uri<'a>, ParseError> {
        Uri::parse(self.uri)
    }

    /// The header parameters in order.
    pub fn params(&self) -> Params<'a> {
        Params::new(self.params)
    }

    /// The first header parameter named `name` (case-insensitive); `Some(None)` for a flag.
    pub fn param(&self, name: &str) -> Option<Option<&'a str>> {
        self.params().get(name)
    }

    /// `tag=` (From/To, RFC 3261 §19.3).
    pub fn tag(&self) -> Option<&'a str> {
        self.param("tag").flatten()
    }

    /// `expires=` (Contact, RFC 3261 §20.10); values over 2**32-1 read as 2**32-1 (§20.19).
    pub fn expires(&self) -> Option<u32> {
        let v = self.param("expires").flatten()?;
        parse_delta_seconds(v.as_bytes())
    }

    /// `q=` as written (Contact, RFC 3261 §20.10).
    pub fn q(&self) -> Option<&'a str> {
        self.param("q").flatten()
    }

    /// `+sip.instance=` without quotes and angle brackets (the instance identifier of
    /// the outbound draft, which RFC 5049 §6.1 takes as SigComp identifier), e.g.
    /// `urn:uuid:f81d4fae-7dec-11d0-a765-00a0c91e6bf6`.
    pub fn instance(&self) -> Option<&'a str> {
        let v = unquote(self.param("+sip.instance").flatten()?);
        let v = v.strip_prefix('<').and_then(|v| v.strip_suffix('>')).unwrap_or(v);
        (!v.is_empty()).then_some(v)
    }
}

/// delta-seconds: digits, saturating at 2**32-1 (RFC 3261 §20.19).
pub(crate) fn parse_delta_seconds(b: &[u8]) -> Option<u32> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let significant = &b[b.iter().take_while(|&&d| d == b'0').count()..];
    if significant.len() > 10 {
        return Some(u32::MAX);
    }
    let n = significant.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
    Some(u32::try_from(n).unwrap_or(u32::MAX))
}

/// The Contact header's values: `*` (only in REGISTER, RFC 3261 §10.2.2) or a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Contacts<'a> {
    /// `Contact: *`
    Star,
    /// The contacts in order (empty if there is no Contact).
    List(Vec<NameAddr<'a>>),
}

/// `CSeq: number method` (RFC 3261 §20.16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CSeq<'a> {
    /// The sequence number, below 2**31 (§8.1.1.5).
    pub number: u32,
    /// The method, matching the request's.
    pub method: &'a str,
}

impl<'a> CSeq<'a> {
    /// Parses a CSeq value.
    pub fn parse(text: &'a str) -> Result<CSeq<'a>, ParseError> {
        let t = trim_lws(text);
        let split = t.find(|c: char| c.is_ascii() && is_lws(c as u8)).ok_or(ParseError::CSeq)?;
        let number = parse_decimal(&t.as_bytes()[..split], 10).filter(|&n| n < 1 << 31).ok_or(ParseError::CSeq)?;
        let method = trim_lws(&t[split..]);
        if method.is_empty() || !method.bytes().all(is_token_byte) {
            return Err(ParseError::CSeq);
        }
        Ok(CSeq { number: number as u32, method })
    }
}
