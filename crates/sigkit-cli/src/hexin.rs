//! Hex text input: what `--hex` files and JSONL `message_hex` fields hold.

/// Decodes hex text. Whitespace and commas separate nothing and are
/// ignored, and each token may carry a `0x`/`0X` prefix, so both plain hex
/// and the dumps of RFC 4465 (`0xf80a 7116 …`) and RFC 4896
/// (`0xf8, 0x00, …`) decode as they are.
pub fn decode(text: &str) -> Result<Vec<u8>, String> {
    let mut decoder = HexDecoder::default();
    let mut out = Vec::with_capacity(text.len() / 2);
    decoder.push_str(text, &mut out)?;
    decoder.finish(&mut out)?;
    Ok(out)
}

/// Where the decoder is within a token (a run between whitespace and
/// commas).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Token {
    /// Between tokens.
    #[default]
    Between,
    /// After a token's first character, `0`: a digit, or the start of a
    /// `0x` prefix.
    Zero,
    /// Inside a token, after its prefix if it has one.
    Digits,
}

/// Hex text decoded piece by piece, as [`decode`] decodes it whole: the
/// text may be cut anywhere, even inside a UTF-8 character or a `0x`
/// prefix, so a stream is decoded as it is read.
#[derive(Debug, Default)]
pub struct HexDecoder {
    /// The start of a UTF-8 character cut by the end of the last piece.
    cut_char: Vec<u8>,
    token: Token,
    /// The first digit of a byte whose second digit has not come yet.
    high: Option<u8>,
    digits: u64,
}

impl HexDecoder {
    /// Decodes the next piece of the text (bytes that should be UTF-8),
    /// appending the bytes completed to `out`.
    pub fn push(&mut self, piece: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        let joined;
        let bytes = if self.cut_char.is_empty() {
            piece
        } else {
            let mut j = std::mem::take(&mut self.cut_char);
            j.extend_from_slice(piece);
            joined = j;
            &joined[..]
        };
        let (text, not_utf8) = match std::str::from_utf8(bytes) {
            Ok(text) => (text, false),
            Err(e) => {
                // A character cut at the end: kept for the next piece.
                let cut = e.error_len().is_none();
                if cut {
                    self.cut_char = bytes[e.valid_up_to()..].to_vec();
                }
                (std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default(), !cut)
            }
        };
        self.push_str(text, out)?;
        if not_utf8 {
            return Err("hex input is not UTF-8 text".into());
        }
        Ok(())
    }

    /// Decodes the next piece of the text.
    pub fn push_str(&mut self, text: &str, out: &mut Vec<u8>) -> Result<(), String> {
        for c in text.chars() {
            if c.is_whitespace() || c == ',' {
                if self.token == Token::Zero {
                    self.digit(0, out);
                }
                self.token = Token::Between;
                continue;
            }
            match (self.token, c) {
                (Token::Between, '0') => self.token = Token::Zero,
                (Token::Zero, 'x' | 'X') => self.token = Token::Digits,
                (token, c) => {
                    let Some(d) = c.to_digit(16) else {
                        return Err(format!("not a hex digit: {c:?}"));
                    };
                    if token == Token::Zero {
                        self.digit(0, out);
                    }
                    self.digit(d as u8, out);
                    self.token = Token::Digits;
                }
            }
        }
        Ok(())
    }

    fn digit(&mut self, d: u8, out: &mut Vec<u8>) {
        self.digits += 1;
        match self.high.take() {
            Some(high) => out.push((high << 4) | d),
            None => self.high = Some(d),
        }
    }

    /// Ends the text: a lone `0` token is a digit, and the digits must
    /// pair up.
    pub fn finish(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
        if !self.cut_char.is_empty() {
            return Err("hex input is not UTF-8 text".into());
        }
        if self.token == Token::Zero {
            self.digit(0, out);
            self.token = Token::Between;
        }
        if self.high.is_some() {
            return Err(format!("odd number of hex digits ({})", self.digits));
        }
        Ok(())
    }
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
    fn pieces_decode_as_the_whole() {
        let texts = [
            "0xf80a 7116\n0xa07f",
            "0xf8, 0x00, 0XA1 0 0 00 0x0 0x",
            "\u{a0}f8\u{2003}0\u{3000}a",
            "f 8 0 0",
            "0",
            "0x0x12",
            "f8 zz",
            "abc",
            "é1",
        ];
        for text in texts {
            let whole = decode(text);
            for cut in 1..=text.len() {
                let mut decoder = HexDecoder::default();
                let mut out = Vec::new();
                let pieced = text
                    .as_bytes()
                    .chunks(cut)
                    .try_for_each(|piece| decoder.push(piece, &mut out))
                    .and_then(|()| decoder.finish(&mut out))
                    .map(|()| out);
                assert_eq!(pieced.is_ok(), whole.is_ok(), "{text:?} in pieces of {cut}: {pieced:?}");
                if let Ok(bytes) = &whole {
                    assert_eq!(pieced.as_ref().unwrap(), bytes, "{text:?} in pieces of {cut}");
                }
            }
        }
        let mut decoder = HexDecoder::default();
        let mut out = Vec::new();
        assert!(decoder.push(&[0x66, 0xC3], &mut out).is_ok());
        assert!(decoder.finish(&mut out).unwrap_err().contains("UTF-8"), "a cut character at the end");
        assert!(HexDecoder::default().push(&[0xFF, 0x66], &mut out).unwrap_err().contains("UTF-8"));
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
