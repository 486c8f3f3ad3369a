//! HTTP digest authentication for SIP (RFC 3261 §22.4 on RFC 2617, MD5):
//! the client's answer to a 401/407 challenge, and the server's check of
//! that answer.

use md5::{Digest, Md5};

/// The parameters of a `Digest` challenge or credentials, as slices of
/// the header value.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DigestParams {
    /// `realm`: the protection space (RFC 2617 §3.2.1), quotes removed.
    pub realm: String,
    /// `nonce`: the server's nonce, quotes removed.
    pub nonce: String,
    /// `opaque`, when given: echoed unchanged in the credentials.
    pub opaque: Option<String>,
    /// `algorithm`, when given (`MD5`, the default of RFC 2617 §3.2.1).
    pub algorithm: Option<String>,
    /// `qop`: in a challenge, the offered qualities of protection (`auth`, `auth-int`); in credentials, the one chosen.
    pub qop: Option<String>,
    /// `username` (credentials, RFC 2617 §3.2.2).
    pub username: String,
    /// `uri`: the digest-uri the response was computed over (credentials).
    pub uri: String,
    /// `response`: the request digest as received (32 hex digits per RFC 2617 §3.2.2.1; credentials).
    pub response: String,
    /// `nc`: the nonce count as received (8 hex digits per RFC 2617 §3.2.2; credentials with a qop).
    pub nc: String,
    /// `cnonce`: the client's nonce (credentials with a qop).
    pub cnonce: String,
}

/// Parses `Digest k=v, k="v", ...`; None when it is not a Digest value.
pub fn parse_digest(value: &str) -> Option<DigestParams> {
    let rest = value.trim_start();
    let scheme_end = rest.find(char::is_whitespace)?;
    if !rest[..scheme_end].eq_ignore_ascii_case("digest") {
        return None;
    }
    let mut p = DigestParams::default();
    let mut s = &rest[scheme_end..];
    loop {
        s = s.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
        if s.is_empty() {
            break;
        }
        let eq = s.find('=')?;
        let key = s[..eq].trim().to_ascii_lowercase();
        s = s[eq + 1..].trim_start();
        let val;
        if let Some(q) = s.strip_prefix('"') {
            let end = q.find('"')?;
            val = q[..end].to_string();
            s = &q[end + 1..];
        } else {
            let end = s.find(',').unwrap_or(s.len());
            val = s[..end].trim().to_string();
            s = &s[end..];
        }
        match key.as_str() {
            "realm" => p.realm = val,
            "nonce" => p.nonce = val,
            "opaque" => p.opaque = Some(val),
            "algorithm" => p.algorithm = Some(val),
            "qop" => p.qop = Some(val),
            "username" => p.username = val,
            "uri" => p.uri = val,
            "response" => p.response = val,
            "nc" => p.nc = val,
            "cnonce" => p.cnonce = val,
            _ => {}
        }
    }
    Some(p)
}

fn md5_hex(parts: &[&str]) -> String {
    let mut h = Md5::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            h.update(b":");
        }
        h.update(part.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The request-digest of RFC 2617 §3.2.2.1 (MD5, qop absent or "auth").
pub fn response(user: &str, password: &str, method: &str, p: &DigestParams) -> String {
    let ha1 = md5_hex(&[user, &p.realm, password]);
    let ha2 = md5_hex(&[method, &p.uri]);
    if p.qop.as_deref().is_some_and(|q| q.split(',').any(|q| q.trim() == "auth")) && !p.nc.is_empty() {
        md5_hex(&[&ha1, &p.nonce, &p.nc, &p.cnonce, "auth", &ha2])
    } else {
        md5_hex(&[&ha1, &p.nonce, &ha2])
    }
}

/// The `Authorization` (401) or `Proxy-Authorization` (407) header line
/// answering `challenge` for a request `method uri`.
pub fn authorization(
    proxy: bool,
    challenge: &DigestParams,
    user: &str,
    password: &str,
    method: &str,
    uri: &str,
    cnonce: &str,
) -> String {
    let mut p = challenge.clone();
    p.uri = uri.to_string();
    let qop_auth = p.qop.as_deref().is_some_and(|q| q.split(',').any(|q| q.trim() == "auth"));
    if qop_auth {
        p.nc = "00000001".into();
        p.cnonce = cnonce.into();
    }
    let digest = response(user, password, method, &p);
    let mut h = format!(
        "{}: Digest username=\"{user}\", realm=\"{}\", nonce=\"{}\", uri=\"{uri}\", response=\"{digest}\", algorithm=MD5",
        if proxy { "Proxy-Authorization" } else { "Authorization" },
        p.realm,
        p.nonce
    );
    if let Some(o) = &p.opaque {
        h.push_str(&format!(", opaque=\"{o}\""));
    }
    if qop_auth {
        h.push_str(&format!(", qop=auth, nc={}, cnonce=\"{}\"", p.nc, p.cnonce));
    }
    h
}

/// Whether `credentials` (an Authorization value) answer for `password`
/// with `method` and the nonce the server gave.
pub fn verify(credentials: &str, password: &str, method: &str, nonce: Option<&str>) -> bool {
    let Some(p) = parse_digest(credentials) else { return false };
    if nonce.is_some_and(|n| n != p.nonce) {
        return false;
    }
    response(&p.username, password, method, &p) == p.response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_2617_example() {
        // RFC 2617 §3.5 (HTTP, qop=auth): the response it gives.
        let c = parse_digest(
            "Digest realm=\"testrealm@host.com\", qop=\"auth,auth-int\", \
             nonce=\"dcd98b7102dd2f0e8b11d0f600bfb0c093\", opaque=\"5ccc069c403ebaf9f0171e9517f40e41\"",
        )
        .unwrap();
        let mut p = c.clone();
        p.uri = "/dir/index.html".into();
        p.nc = "00000001".into();
        p.cnonce = "0a4f113b".into();
        assert_eq!(response("Mufasa", "Circle Of Life", "GET", &p), "6629fae49393a05397450978507c4ef1");
        let line = authorization(false, &c, "Mufasa", "Circle Of Life", "GET", "/dir/index.html", "0a4f113b");
        assert!(line.contains("response=\"6629fae49393a05397450978507c4ef1\""), "{line}");
        let value = line.split_once(": ").unwrap().1;
        assert!(verify(value, "Circle Of Life", "GET", Some("dcd98b7102dd2f0e8b11d0f600bfb0c093")));
        assert!(!verify(value, "wrong", "GET", None));
        assert!(!verify(value, "Circle Of Life", "GET", Some("other")));
    }

    #[test]
    fn not_digest_is_none() {
        assert!(parse_digest("Basic abc").is_none());
        assert!(parse_digest("Digest realm=\"unterminated").is_none());
        assert!(!verify("", "x", "REGISTER", None));
    }
}
