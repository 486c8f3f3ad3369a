//! A self-contained SVG of one seed's per-second metrics, in the manner of
//! the SIP overload thesis's Figures 4.3 to 4.6: success rate, request
//! transmissions, the overloaded proxy's utilisation and pending
//! transactions over simulated time, one panel each, drawn by plotters
//! on its SVG backend as the report's plots are.

use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::metrics::SecondRow;

/// The family the plot's text is laid out in: the DejaVu Sans subset the
/// report embeds (plotters measures text with it; an SVG viewer draws the
/// text in its own sans-serif).
const FONT_FAMILY: &str = "sans-serif";

static FONT: &[u8] = include_bytes!("../../sigkit-report/fonts/DejaVuSans-subset.ttf");

/// Registers [`FONT`] for plotters once; false if it does not parse.
fn font_registered() -> bool {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    *REGISTERED.get_or_init(|| plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, FONT).is_ok())
}

/// Why the plot could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The font built into the crate does not parse: a broken build.
    #[error("the embedded font does not parse")]
    Font,
    /// plotters could not lay out or draw the plot.
    #[error("drawing the plot: {0}")]
    Draw(Box<dyn std::error::Error + Send + Sync>),
}

impl<E: std::error::Error + Send + Sync + 'static> From<DrawingAreaErrorKind<E>> for PlotError {
    fn from(e: DrawingAreaErrorKind<E>) -> PlotError {
        PlotError::Draw(Box::new(e))
    }
}

struct Panel {
    title: &'static str,
    y_max: f64,
    values: Vec<Option<f64>>,
}

const WIDTH: u32 = 760;
/// A panel: its title, its plotting area and its time axis.
const PANEL_HEIGHT: u32 = 170;
const TITLE_HEIGHT: u32 = 30;
/// The lines' colour.
const LINE: RGBColor = RGBColor(0xc0, 0x39, 0x2b);

/// The panels of `rows`: the thesis's four, then active registrations and
/// subscriptions where the scenario has them.
fn panels(rows: &[SecondRow]) -> Vec<Panel> {
    let pending_max = rows.iter().map(|r| r.uac_pending).max().unwrap_or(0).max(10) as f64;
    let mut panels = vec![
        Panel {
            title: "success rate (by transaction start)",
            y_max: 1.0,
            values: rows.iter().map(|r| r.success_ratio).collect(),
        },
        Panel {
            title: "request transmissions per transaction",
            y_max: 11.0,
            values: rows.iter().map(|r| r.transmissions_mean).collect(),
        },
        Panel {
            title: "utilisation of the overloaded proxy",
            y_max: 1.0,
            values: rows.iter().map(|r| Some(r.utilisation)).collect(),
        },
        Panel {
            title: "pending transactions at the UAC",
            y_max: pending_max,
            values: rows.iter().map(|r| Some(r.uac_pending as f64)).collect(),
        },
    ];
    if let Some(max) = rows.iter().filter_map(|r| r.registrations_active).max() {
        panels.push(Panel {
            title: "active registrations",
            y_max: max.max(1) as f64,
            values: rows.iter().map(|r| r.registrations_active.map(|v| v as f64)).collect(),
        });
    }
    if let Some(max) = rows.iter().filter_map(|r| r.subscriptions_active).max() {
        panels.push(Panel {
            title: "active subscriptions",
            y_max: max.max(1) as f64,
            values: rows.iter().map(|r| r.subscriptions_active.map(|v| v as f64)).collect(),
        });
    }
    panels
}

/// The SVG of `rows` (one seed, one row per second) titled `title`.
pub fn seconds_svg(title: &str, rows: &[SecondRow]) -> Result<String, PlotError> {
    if !font_registered() {
        return Err(PlotError::Font);
    }
    let panels = panels(rows);
    let seconds = rows.len().max(1) as f64;
    let height = TITLE_HEIGHT + panels.len() as u32 * PANEL_HEIGHT;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE)?;
        let (head, body) = root.split_vertically(TITLE_HEIGHT);
        head.draw(&Text::new(title.to_string(), (60, 8), (FONT_FAMILY, 16).into_font().style(FontStyle::Bold)))?;
        for (area, panel) in body.split_evenly((panels.len(), 1)).iter().zip(&panels) {
            draw_panel(area, panel, seconds)?;
        }
        root.present()?;
    }
    Ok(out)
}

/// One panel: the value of each second at its middle, the line broken
/// where a second has none.
fn draw_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, panel: &Panel, seconds: f64) -> Result<(), PlotError>
where
    DB::ErrorType: 'static,
{
    let mut ctx = ChartBuilder::on(area)
        .caption(panel.title, (FONT_FAMILY, 14))
        .margin_left(8)
        .margin_right(20)
        .margin_bottom(4)
        .x_label_area_size(34)
        .y_label_area_size(52)
        .build_cartesian_2d(0.0..seconds, 0.0..panel.y_max)?;
    let wide = panel.y_max > 20.0;
    ctx.configure_mesh()
        .x_desc("simulated time, s")
        .x_labels(5)
        .y_labels(3)
        .x_label_formatter(&|t| format!("{t:.0}"))
        .y_label_formatter(&|v| if wide { format!("{v:.0}") } else { format!("{v:.1}") })
        .label_style((FONT_FAMILY, 11))
        .axis_desc_style((FONT_FAMILY, 11))
        .light_line_style(RGBColor(238, 238, 238))
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()?;
    let mut run: Vec<(f64, f64)> = Vec::new();
    for (t, v) in panel.values.iter().enumerate() {
        match v {
            Some(v) => run.push((t as f64 + 0.5, v.clamp(0.0, panel.y_max))),
            None if run.is_empty() => {}
            None => {
                ctx.draw_series(LineSeries::new(std::mem::take(&mut run), LINE.stroke_width(1)))?;
            }
        }
    }
    if !run.is_empty() {
        ctx.draw_series(LineSeries::new(run, LINE.stroke_width(1)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: u64, sr: Option<f64>) -> SecondRow {
        SecondRow {
            seed: 1,
            t,
            started: 1,
            answered: 1,
            ok: 1,
            rejected: 0,
            timed_out: 0,
            success_ratio: sr,
            frpd_mean: None,
            frpd_p95: None,
            transmissions_mean: Some(1.0),
            goodput: 1,
            uac_retransmissions: 0,
            proxy_retransmissions: 0,
            drops: 0,
            utilisation_upstream: None,
            utilisation: 0.5,
            uac_pending: 3,
            upstream_pending: None,
            d1_p95: None,
            d1_congested: false,
            kappa: None,
            d2_congested: false,
            d2_mean_congested: false,
            t1_next: None,
            oc: None,
            rejections: 0,
            registrations_active: None,
            subscriptions_active: None,
        }
    }

    /// The series' lines: polylines in the line colour (axes are black,
    /// grid lines are `<line>`s).
    fn lines(svg: &str) -> Vec<&str> {
        svg.lines().filter(|l| l.starts_with("<polyline") && l.contains("stroke=\"#C0392B\"")).collect()
    }

    /// Whether `text` is the content of one of the SVG's `<text>`s.
    fn has_text(svg: &str, text: &str) -> bool {
        svg.contains(&format!(">\n{text}\n</text>"))
    }

    #[test]
    fn registrations_get_a_fifth_panel() {
        let mut rows: Vec<SecondRow> = (0..10).map(|t| row(t, Some(1.0))).collect();
        let svg = seconds_svg("t", &rows).unwrap();
        assert_eq!(lines(&svg).len(), 4);
        assert!(!has_text(&svg, "active registrations"));
        rows[3].registrations_active = Some(7);
        let svg = seconds_svg("t", &rows).unwrap();
        assert_eq!(lines(&svg).len(), 5);
        assert!(has_text(&svg, "active registrations"));
    }

    #[test]
    fn the_svg_has_four_panels_and_breaks_lines_at_gaps() {
        let rows: Vec<SecondRow> = (0..10).map(|t| row(t, (t != 5).then_some(1.0))).collect();
        let svg = seconds_svg("a <title>", &rows).unwrap();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"), "{svg}");
        assert!(svg.contains("a &lt;title&gt;"));
        for text in [
            "success rate (by transaction start)",
            "request transmissions per transaction",
            "utilisation of the overloaded proxy",
            "pending transactions at the UAC",
            "simulated time, s",
        ] {
            assert!(has_text(&svg, text), "{text} missing");
        }
        // Four panels, the first one's line split in two by the gap at
        // t = 5: 0 to 4 and 6 to 9.
        let lines = lines(&svg);
        assert_eq!(lines.len(), 5, "{lines:#?}");
        let points =
            |l: &str| l.split("points=\"").nth(1).unwrap().split_whitespace().take_while(|p| p.contains(',')).count();
        assert_eq!((points(lines[0]), points(lines[1])), (5, 4), "{lines:#?}");
    }
}
