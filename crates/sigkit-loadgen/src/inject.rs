//! SIPp's CSV injection files (`-inf`): a first line naming the order in
//! which calls take lines (SEQUENTIAL, RANDOM or USER), then one line per
//! call's values, `;`-separated, read by `[field0]`, `[field1]`, ...

use crate::scenario::ScenarioError;

/// Which line a call takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Call n takes line n (modulo the line count).
    Sequential,
    /// Each call takes a line at random.
    Random,
    /// As SIPp's user-based order; sigkit load has no users, so as
    /// sequential.
    User,
}

/// A parsed injection file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Injection {
    /// The order calls take lines in, from the first line.
    pub order: Order,
    /// The data lines, each split at `;` into its fields (`[field0]` is index 0).
    pub lines: Vec<Vec<String>>,
}

/// Longest injection file read, so a wrong path (a device, a huge log)
/// gives an error rather than exhausting memory.
pub const MAX_INJECTION_BYTES: usize = 64 << 20;

fn error(line: usize, why: &str) -> ScenarioError {
    ScenarioError::Injection(format!("injection file line {line}: {why}"))
}

impl Injection {
    /// Parses the text of an injection file.
    pub fn parse(text: &str) -> Result<Injection, ScenarioError> {
        if text.len() > MAX_INJECTION_BYTES {
            return Err(ScenarioError::Injection(format!("the injection file is over {MAX_INJECTION_BYTES} bytes")));
        }
        let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim_end_matches('\r')));
        let (n, first) = lines
            .by_ref()
            .find(|(_, l)| !l.trim().is_empty())
            .ok_or_else(|| ScenarioError::Injection("the injection file is empty".into()))?;
        // "SEQUENTIAL", or with options: "RANDOM,PRINTF=10" (options are
        // not supported and are ignored).
        let order = match first.split(',').next().unwrap_or("").trim().to_ascii_uppercase().as_str() {
            "SEQUENTIAL" => Order::Sequential,
            "RANDOM" => Order::Random,
            "USER" => Order::User,
            other => {
                return Err(error(
                    n,
                    &format!("the first line must be SEQUENTIAL, RANDOM or USER, not \"{}\"", other.escape_debug()),
                ))
            }
        };
        let mut out = Vec::new();
        for (_, l) in lines {
            let t = l.trim();
            if t.is_empty() || t.starts_with('#') || t.starts_with("//") {
                continue;
            }
            out.push(l.split(';').map(|f| f.to_string()).collect());
        }
        if out.is_empty() {
            return Err(ScenarioError::Injection("the injection file has no data lines after its first line".into()));
        }
        Ok(Injection { order, lines: out })
    }

    /// The line call number `call` (from 1) takes; `random` is a fresh
    /// random number for the random order.
    pub fn line_index(&self, call: u64, random: u64) -> usize {
        let n = self.lines.len() as u64;
        match self.order {
            Order::Sequential | Order::User => (call.saturating_sub(1) % n) as usize,
            Order::Random => (random % n) as usize,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequential_lines_and_fields() {
        let inj = Injection::parse("SEQUENTIAL\n# users\nalice;secret;\r\nbob;pw\n\n").unwrap();
        assert_eq!(inj.order, Order::Sequential);
        assert_eq!(inj.lines, vec![vec!["alice", "secret", ""], vec!["bob", "pw"]]);
        assert_eq!([1, 2, 3].map(|c| inj.line_index(c, 0)), [0, 1, 0]);
    }

    #[test]
    fn random_order_and_errors() {
        let inj = Injection::parse("RANDOM,PRINTF=3\na\nb\nc").unwrap();
        assert_eq!(inj.line_index(1, 5), 2);
        assert!(Injection::parse("").unwrap_err().to_string().contains("empty"));
        assert!(Injection::parse("SEQUENTIAL\n").unwrap_err().to_string().contains("no data lines"));
        assert!(Injection::parse("ORDERED\na").unwrap_err().to_string().contains("line 1"));
    }
}
