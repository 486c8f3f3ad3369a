//! The building blocks every section of the page is made of: a
//! [`Section`] of [`Figure`]s, each a plot, a note and the [`Table`] of its
//! numbers; and the formatting they share.

use crate::charts::Chart;
use crate::ladder::Ladder;

pub(crate) struct Table {
    /// What the table holds, as its fold's summary.
    pub caption: String,
    pub head: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(caption: impl Into<String>, head: Vec<String>, rows: Vec<Vec<String>>) -> Table {
        Table { caption: caption.into(), head, rows }
    }
}

pub(crate) struct Figure {
    pub chart: Option<Chart>,
    /// A call's flow, drawn after the chart if there is one.
    pub ladder: Option<Ladder>,
    pub text: String,
    pub table: Option<Table>,
}

impl Figure {
    pub fn chart(chart: Chart, text: impl Into<String>) -> Figure {
        Figure { chart: Some(chart), ladder: None, text: text.into(), table: None }
    }

    pub fn table(table: Table, text: impl Into<String>) -> Figure {
        Figure { chart: None, ladder: None, text: text.into(), table: Some(table) }
    }

    pub fn ladder(ladder: Ladder, text: impl Into<String>) -> Figure {
        Figure { chart: None, ladder: Some(ladder), text: text.into(), table: None }
    }

    pub fn with_table(self, table: Table) -> Figure {
        Figure { table: Some(table), ..self }
    }
}

pub(crate) struct Section {
    pub id: &'static str,
    pub title: String,
    pub text: String,
    pub figures: Vec<Figure>,
}

pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

pub(crate) fn strings<const N: usize>(a: [&str; N]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// A number with `d` decimals, or empty for NaN.
pub(crate) fn num(v: f64, d: usize) -> String {
    if v.is_finite() {
        format!("{v:.d$}")
    } else {
        String::new()
    }
}

/// A file-name-safe id.
pub(crate) fn slug(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped_and_ids_are_file_safe() {
        assert_eq!(escape("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
        assert_eq!(slug("3gpp video/call"), "3gpp-video-call");
    }
}
