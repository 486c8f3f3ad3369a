//! Which part of the RFC 3485 SIP/SDP dictionary goes into the window.

/// Start of the string subset holding priorities 1..=k (RFC 3485 §5,
/// Table 2); index 0 is the end of the string subset. Priority 1 strings
/// sit at the end, so they land nearest to the message in the window.
const STRING_START: [u16; 6] = [0x0D8C, 0x0CB2, 0x0920, 0x07B8, 0x0085, 0x0000];

/// A range of dictionary priorities `first..=last` (1..=5), as the 2005 SigComp performance thesis
/// §9.4 measured them ("1-2", "1-3", …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Priorities {
    /// The highest priority included (1 is the highest), 1..=`last`.
    pub first: u8,
    /// The lowest priority included, `first`..=5.
    pub last: u8,
}

impl Priorities {
    /// The priorities `first..=last`; `None` unless 1 ≤ first ≤ last ≤ 5.
    pub fn new(first: u8, last: u8) -> Option<Priorities> {
        (1 <= first && first <= last && last <= 5).then_some(Priorities { first, last })
    }

    /// Parses "A-B" or "A".
    pub fn parse(s: &str) -> Option<Priorities> {
        let (a, b) = s.split_once('-').unwrap_or((s, s));
        Priorities::new(a.trim().parse().ok()?, b.trim().parse().ok()?)
    }

    /// (offset, length) of the strings of these priorities in the state value.
    pub fn string_range(&self) -> (u16, u16) {
        let start = STRING_START[usize::from(self.last)];
        let end = STRING_START[usize::from(self.first) - 1];
        (start, end - start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_match_rfc3485_table() {
        assert_eq!(Priorities::parse("1").unwrap().string_range(), (0x0CB2, 0x00DA));
        assert_eq!(Priorities::parse("1-2").unwrap().string_range(), (0x0920, 0x046C));
        assert_eq!(Priorities::parse("1-3").unwrap().string_range(), (0x07B8, 0x05D4));
        assert_eq!(Priorities::parse("1-4").unwrap().string_range(), (0x0085, 0x0D07));
        assert_eq!(Priorities::parse("1-5").unwrap().string_range(), (0x0000, 0x0D8C));
        assert_eq!(Priorities::parse("2-3").unwrap().string_range(), (0x07B8, 0x0CB2 - 0x07B8));
        assert!(Priorities::parse("0-2").is_none());
        assert!(Priorities::parse("3-2").is_none());
    }
}
