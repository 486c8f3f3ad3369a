//! Hex text input: what `--hex` files and JSONL `message_hex` fields hold.

/// Decodes hex text. Whitespace and commas separate nothing and are
/// ignored, and each token may carry a `0x`/`0X` prefix, so both plain hex
/// and the dumps of RFC 4465 (`0xf80a 7116 …`) and RFC 4896
/// (`0xf8, 0x00, …`) decode as they are.
pub fn decode(text: &str) -> Result<Vec<u8>, String> {
    let mut digits = Vec::with_capacity(text.len());
    for token in text.split(|c: char| c.is_whitespace() || c == ',') {
        let token = token.strip_prefix("0x").or_else(|| token.strip_prefix("0X")).unwrap_or(token);
        for c in token.chars() {
            let Some(d) = c.to_digit(16) else {
                let shown: String = token.chars().take(20).collect();
                return Err(format!("not a hex digit: {c:?} in {shown:?}"));
            };
            digits.push(d as u8);
        }
    }
    if digits.len() % 2 != 0 {
        return Err(format!("odd number of hex digits ({})", digits.len()));
    }
    Ok(digits.chunks_exact(2).map(|p| (p[0] << 4) | p[1]).collect())
}

/// Lower-case hex of `bytes`.
pub fn encode(bytes: &[u8]) -> String {
    hex::encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_rfc_dump_forms() {
        assert_eq!(decode("f800a1").unwrap(), vec![0xf8, 0x00, 0xa1]);
        assert_eq!(decode(" F8 00\n\ta1 ").unwrap(), vec![0xf8, 0x00, 0xa1]);
        assert_eq!(decode("0xf80a 7116\n0xa07f").unwrap(), vec![0xf8, 0x0a, 0x71, 0x16, 0xa0, 0x7f]);
        assert_eq!(decode("0xf8, 0x00, 0XA1").unwrap(), vec![0xf8, 0x00, 0xa1]);
        assert_eq!(decode("").unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn bad_hex_is_an_error() {
        assert!(decode("f").unwrap_err().contains("odd"));
        assert!(decode("zz").unwrap_err().contains("not a hex digit"));
        assert!(decode("0x0x12").is_err());
        assert!(decode("é1").is_err());
        assert!(decode(&"é".repeat(40)).is_err());
    }
}
