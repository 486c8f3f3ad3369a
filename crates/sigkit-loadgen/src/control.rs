//! Changing a run while it goes: SIPp's keys (`+`/`-` change the rate by
//! 1, `*`/`/` by 10, `p` pauses and resumes, `q` stops starting calls and
//! ends when those in progress are over, `Q` ends at once) and its remote
//! control commands, which arrive as UDP datagrams on the control port
//! (`-cp`): a datagram starting with `c` is a command (`cset rate 50`,
//! `cset limit 100`, `cq`), any other is a sequence of keys.

/// One change to a running load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ControlCommand {
    /// Calls per rate period (SIPp's `-r` unit).
    SetRate(f64),
    /// Add this many calls per rate period (negative to lower).
    AddRate(f64),
    /// Concurrent calls at most (SIPp's `-l`).
    SetLimit(usize),
    /// Stop or resume starting calls.
    TogglePause,
    /// Stop starting calls; end when the calls in progress are over.
    Quit,
    /// End now.
    QuitNow,
}

/// The commands in a control datagram or a key press, and what was not
/// understood.
pub fn parse(text: &str) -> (Vec<ControlCommand>, Vec<String>) {
    let mut cmds = Vec::new();
    let mut bad = Vec::new();
    let t = text.trim_end_matches(['\r', '\n']);
    if let Some(cmd) = t.strip_prefix('c') {
        let words: Vec<&str> = cmd.split_whitespace().collect();
        match words.as_slice() {
            ["set", "rate", n] => match n.parse::<f64>() {
                Ok(r) if r.is_finite() && r >= 0.0 => cmds.push(ControlCommand::SetRate(r)),
                _ => bad.push(t.to_string()),
            },
            ["set", "limit", n] => match n.parse::<usize>() {
                Ok(l) => cmds.push(ControlCommand::SetLimit(l)),
                Err(_) => bad.push(t.to_string()),
            },
            ["q"] | ["quit"] => cmds.push(ControlCommand::Quit),
            ["Q"] => cmds.push(ControlCommand::QuitNow),
            _ => bad.push(t.to_string()),
        }
        return (cmds, bad);
    }
    for ch in t.chars() {
        match key(ch) {
            Some(c) => cmds.push(c),
            None if ch.is_whitespace() => {}
            None => bad.push(ch.to_string()),
        }
    }
    (cmds, bad)
}

/// What one key does.
pub fn key(ch: char) -> Option<ControlCommand> {
    Some(match ch {
        '+' => ControlCommand::AddRate(1.0),
        '-' => ControlCommand::AddRate(-1.0),
        '*' => ControlCommand::AddRate(10.0),
        '/' => ControlCommand::AddRate(-10.0),
        'p' => ControlCommand::TogglePause,
        'q' => ControlCommand::Quit,
        'Q' => ControlCommand::QuitNow,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_keys() {
        assert_eq!(parse("cset rate 50\n").0, vec![ControlCommand::SetRate(50.0)]);
        assert_eq!(parse("cset limit 7").0, vec![ControlCommand::SetLimit(7)]);
        assert_eq!(parse("cq").0, vec![ControlCommand::Quit]);
        assert_eq!(
            parse("+*/-pq").0,
            vec![
                ControlCommand::AddRate(1.0),
                ControlCommand::AddRate(10.0),
                ControlCommand::AddRate(-10.0),
                ControlCommand::AddRate(-1.0),
                ControlCommand::TogglePause,
                ControlCommand::Quit
            ]
        );
        let (ok, bad) = parse("cset rate fast");
        assert!(ok.is_empty() && bad == vec!["cset rate fast".to_string()]);
        assert_eq!(parse("x+").1, vec!["x".to_string()]);
    }
}
