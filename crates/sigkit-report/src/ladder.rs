//! A call's flow as a sequence diagram (a "ladder"), as sngrep's call flow
//! window draws it: a box and a lifeline per address, and per message an
//! arrow from sender to receiver with the method or status above it, the
//! time since the call's first message on the left and the bytes as SIP
//! and as SigComp on the right. Drawn by plotters on its SVG backend (the
//! page) and its bitmap backend (the PNG beside it), like the plots, with
//! the same embedded font.

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::charts::{register_font, DrawError, FONT_FAMILY, PALETTE};

/// Width of every ladder, as of the plots.
const WIDTH: u32 = crate::charts::SIZE.0;
/// The time column on the left and the bytes column on the right, px.
const TIME_COLUMN: i32 = 110;
const BYTES_COLUMN: i32 = 190;
/// Room beside the outer lifelines for their addresses, px.
const MARGIN: i32 = 80;
/// Where the first message's arrow is drawn, and the space between two.
const FIRST_ROW: i32 = 112;
const ROW: i32 = 38;
/// Length and half-width of an arrowhead, px.
const HEAD: i32 = 10;
const HEAD_HALF: i32 = 5;

/// Requests are drawn in the palette's first colour, responses in its
/// second.
const REQUEST: RGBColor = PALETTE[0];
const RESPONSE: RGBColor = PALETTE[1];
const LIFELINE: RGBColor = RGBColor(150, 150, 150);
const BOX: RGBColor = RGBColor(240, 240, 240);

/// One message of a ladder.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// Seconds since the call's first message.
    pub time_s: f64,
    /// Sender's and receiver's columns.
    pub from: usize,
    pub to: usize,
    /// Method or status ("INVITE", "200 INVITE").
    pub label: String,
    /// Bytes as SIP and as SigComp ("912 → 301").
    pub bytes: String,
}

impl Row {
    /// A response's label starts with its status code.
    fn is_response(&self) -> bool {
        self.label.starts_with(|c: char| c.is_ascii_digit())
    }
}

/// A call's ladder.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ladder {
    /// File stem of the PNG and id of the page's figure.
    pub id: String,
    pub title: String,
    /// The columns' addresses.
    pub endpoints: Vec<String>,
    pub rows: Vec<Row>,
}

/// The ladder's pixel size: as wide as a plot, as tall as its rows need.
pub(crate) fn size(ladder: &Ladder) -> (u32, u32) {
    (WIDTH, (FIRST_ROW + ladder.rows.len() as i32 * ROW) as u32)
}

/// The x of each column's lifeline: spread evenly between the time and
/// the bytes columns.
pub(crate) fn lifelines(columns: usize) -> Vec<i32> {
    let (left, right) = (TIME_COLUMN + MARGIN, WIDTH as i32 - BYTES_COLUMN - MARGIN);
    match columns {
        0 => Vec::new(),
        1 => vec![(left + right) / 2],
        n => (0..n).map(|k| left + (right - left) * k as i32 / (n as i32 - 1)).collect(),
    }
}

pub(crate) fn write_png(ladder: &Ladder, path: &Path) -> Result<(), DrawError> {
    register_font();
    let root = BitMapBackend::new(path, size(ladder)).into_drawing_area();
    draw(&root, ladder)?;
    Ok(root.present()?)
}

pub(crate) fn svg(ladder: &Ladder) -> Result<String, DrawError> {
    register_font();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size(ladder)).into_drawing_area();
        draw(&root, ladder)?;
        root.present()?;
    }
    Ok(out)
}

fn text_style(size: u32, color: &RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    (FONT_FAMILY, size).into_font().color(color).pos(Pos::new(h, v))
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, ladder: &Ladder) -> Result<(), DrawError>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    let (_, height) = size(ladder);
    let bottom = height as i32 - 8;
    let xs = lifelines(ladder.endpoints.len());
    root.draw(&Text::new(ladder.title.clone(), (10, 8), text_style(16, &BLACK, HPos::Left, VPos::Top)))?;
    for (x, name) in xs.iter().zip(&ladder.endpoints) {
        let half = (name.chars().count() as i32 * 4 + 10).min(MARGIN + 30);
        root.draw(&Rectangle::new([(x - half, 34), (x + half, 60)], BOX.filled()))?;
        root.draw(&Rectangle::new([(x - half, 34), (x + half, 60)], BLACK.stroke_width(1)))?;
        root.draw(&Text::new(name.clone(), (*x, 47), text_style(13, &BLACK, HPos::Center, VPos::Center)))?;
        root.draw(&PathElement::new(vec![(*x, 60), (*x, bottom)], LIFELINE.stroke_width(1)))?;
    }
    let head = FIRST_ROW - ROW + 8;
    root.draw(&Text::new("time, s", (10, head), text_style(13, &BLACK, HPos::Left, VPos::Center)))?;
    let bytes_x = WIDTH as i32 - BYTES_COLUMN + 20;
    root.draw(&Text::new("SIP → SigComp, B", (bytes_x, head), text_style(13, &BLACK, HPos::Left, VPos::Center)))?;
    for (i, row) in ladder.rows.iter().enumerate() {
        let (Some(&a), Some(&b)) = (xs.get(row.from), xs.get(row.to)) else { continue };
        let y = FIRST_ROW + i as i32 * ROW;
        let color = if row.is_response() { &RESPONSE } else { &REQUEST };
        let label = text_style(13, color, HPos::Center, VPos::Bottom);
        if a == b {
            // An address sending to itself: a loop out to the right and back.
            root.draw(&Text::new(row.label.clone(), (a + 40, y - 12), label))?;
            let path = vec![(a, y - 10), (a + 28, y - 10), (a + 28, y), (a + HEAD, y)];
            root.draw(&PathElement::new(path, color.stroke_width(2)))?;
            root.draw(&Polygon::new(
                vec![(a, y), (a + HEAD, y - HEAD_HALF), (a + HEAD, y + HEAD_HALF)],
                color.filled(),
            ))?;
        } else {
            let dir = if b > a { 1 } else { -1 };
            root.draw(&Text::new(row.label.clone(), ((a + b) / 2, y - 4), label))?;
            root.draw(&PathElement::new(vec![(a, y), (b - dir * HEAD, y)], color.stroke_width(2)))?;
            let base = b - dir * HEAD;
            root.draw(&Polygon::new(vec![(b, y), (base, y - HEAD_HALF), (base, y + HEAD_HALF)], color.filled()))?;
        }
        let time = format!("{:.6}", row.time_s);
        root.draw(&Text::new(time, (10, y), text_style(13, &BLACK, HPos::Left, VPos::Center)))?;
        root.draw(&Text::new(row.bytes.clone(), (bytes_x, y), text_style(13, &BLACK, HPos::Left, VPos::Center)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ladder() -> Ladder {
        let row =
            |from, to, label: &str| Row { time_s: 0.5, from, to, label: label.into(), bytes: "900 → 300".into() };
        Ladder {
            id: "ladder-test".into(),
            title: "call c@h".into(),
            endpoints: vec!["10.0.0.1:5060".into(), "10.0.0.2:5060".into(), "10.0.0.3:5060".into()],
            rows: vec![row(0, 2, "INVITE"), row(2, 1, "200 INVITE"), row(1, 1, "MESSAGE"), row(0, 9, "lost")],
        }
    }

    /// The points of each `<polygon>` (the arrowheads), in drawing order.
    fn polygons(svg: &str) -> Vec<Vec<(i32, i32)>> {
        svg.split("<polygon")
            .skip(1)
            .map(|p| {
                let points = p.split("points=\"").nth(1).unwrap_or_default();
                points[..points.find('"').unwrap_or(0)]
                    .split_whitespace()
                    .filter_map(|xy| xy.split_once(','))
                    .filter_map(|(x, y)| Some((x.parse().ok()?, y.parse().ok()?)))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn each_arrowhead_points_at_its_receivers_lifeline() {
        let l = ladder();
        let svg = svg(&l).unwrap();
        let xs = lifelines(3);
        let heads = polygons(&svg);
        // A row whose column is not in the ladder is not drawn.
        assert_eq!(heads.len(), 3, "{svg}");
        let (tip, base) = (heads[0][0], heads[0][1]);
        assert_eq!((tip.0, tip.1), (xs[2], FIRST_ROW));
        assert!(base.0 < tip.0, "INVITE goes right");
        let (tip, base) = (heads[1][0], heads[1][1]);
        assert_eq!((tip.0, tip.1), (xs[1], FIRST_ROW + ROW));
        assert!(base.0 > tip.0, "the 200 goes left");
        assert_eq!(heads[2][0], (xs[1], FIRST_ROW + 2 * ROW), "a message to itself comes back to its lifeline");
        for text in ["INVITE", "200 INVITE", "10.0.0.3:5060", "0.500000", "900 → 300", "call c@h"] {
            assert!(svg.contains(&format!("\n{text}\n</text>")), "{text} missing");
        }
        assert_eq!(size(&l), (WIDTH, (FIRST_ROW + 4 * ROW) as u32));
    }
}
