//! Line plots drawn by plotters, the same chart on its bitmap backend
//! (the PNG files) and its SVG backend (the page).

use std::path::Path;
use std::sync::Once;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;

/// The font family the plots' text is drawn in (the embedded DejaVu Sans
/// subset, registered for plotters' ab_glyph text on first use).
pub const FONT_FAMILY: &str = "sans-serif";

static FONT: &[u8] = include_bytes!("../fonts/DejaVuSans-subset.ttf");

fn register_font() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // The font is part of the crate; a failure here is a broken build.
        if plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, FONT).is_err() {
            panic!("the embedded font does not parse");
        }
    });
}

/// Pixel size of every plot.
pub const SIZE: (u32, u32) = (960, 500);

/// How a line is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// Our calculated or measured values: a line through filled circles.
    Line,
    /// Our measured values beside a calculated line: triangles, no line.
    Measured,
    /// A source document's published values: hollow squares, no line.
    Published,
    /// A guide (offered = served): a thin grey line.
    Reference,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub style: Style,
    /// A fixed palette colour (index), to pair a published series with
    /// ours; by default each series takes the next colour.
    pub color: Option<usize>,
}

impl Series {
    pub fn new(name: impl Into<String>, style: Style, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points: points.into_iter().filter(|p| p.0.is_finite() && p.1.is_finite()).collect(),
            style,
            color: None,
        }
    }

    /// The same series in palette colour `index`.
    pub fn colored(self, index: usize) -> Series {
        Series { color: Some(index), ..self }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Chart {
    /// File stem of the PNG and id of the page's figure.
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// A logarithmic x axis (bit rates).
    pub log_x: bool,
    /// x is a count (message number): ticks at whole numbers.
    pub integer_x: bool,
    /// The legend in the upper left corner (where rising lines leave
    /// room) rather than the upper right.
    pub legend_left: bool,
    pub series: Vec<Series>,
}

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

pub(crate) fn write_png(chart: &Chart, path: &Path) -> Result<(), String> {
    register_font();
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    draw(&root, chart)?;
    root.present().map_err(|e| e.to_string())
}

pub(crate) fn svg(chart: &Chart) -> Result<String, String> {
    register_font();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        draw(&root, chart)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &Chart) -> Result<(), String> {
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let points = || chart.series.iter().flat_map(|s| s.points.iter().copied());
    let (mut x0, mut x1) = points().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let y1 = points().fold(0f64, |a, p| a.max(p.1));
    let y0 = points().fold(0f64, |a, p| a.min(p.1));
    if !x0.is_finite() {
        // No data: an empty frame that says so.
        root.draw(&Text::new(format!("{}: no data", chart.title), (40, 40), (FONT_FAMILY, 20).into_font()))
            .map_err(|e| e.to_string())?;
        return Ok(());
    }
    let y1 = if y1 > y0 { y1 * 1.08 } else { y0 + 1.0 };
    if chart.log_x {
        let (lo, hi) = (x0.max(1e-9) / 1.25, x1.max(1e-9) * 1.25);
        let x_ticks = {
            let mut v: Vec<f64> = points().map(|p| p.0).collect();
            v.sort_by(f64::total_cmp);
            v.dedup();
            v
        };
        // Ticks at the bit rates plotted (and nowhere else).
        plot_on(root, chart, (lo..hi).log_scale().with_key_points(x_ticks), y0..y1, &|v: &f64| trim(*v))
    } else {
        if chart.integer_x {
            x0 -= 0.5;
            x1 += 0.5;
        } else if x1 - x0 < 1e-9 {
            x0 -= 1.0;
            x1 += 1.0;
        } else {
            x0 = x0.min(0.0);
            x1 += (x1 - x0) * 0.03;
        }
        let integer = chart.integer_x;
        plot_on(root, chart, x0..x1, y0..y1, &move |v: &f64| {
            if integer {
                if (v - v.round()).abs() < 1e-6 {
                    format!("{v:.0}")
                } else {
                    String::new()
                }
            } else {
                trim(*v)
            }
        })
    }
}

/// A tick label: no trailing zeros, thousands without decimals.
fn trim(v: f64) -> String {
    if v.abs() >= 1000.0 || (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn plot_on<DB, X>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
    x: X,
    y: std::ops::Range<f64>,
    x_format: &dyn Fn(&f64) -> String,
) -> Result<(), String>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let mut ctx = ChartBuilder::on(root)
        .caption(&chart.title, (FONT_FAMILY, 22))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(x, y)
        .map_err(e)?;
    let n_x = if chart.integer_x { 30 } else { 12 };
    ctx.configure_mesh()
        .x_desc(&chart.x_label)
        .y_desc(&chart.y_label)
        .x_labels(n_x)
        .y_labels(10)
        .x_label_formatter(x_format)
        .y_label_formatter(&|v| trim(*v))
        .label_style((FONT_FAMILY, 14))
        .axis_desc_style((FONT_FAMILY, 16))
        .light_line_style(RGBColor(238, 238, 238))
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()
        .map_err(e)?;
    // Guides take no colour, so that a run keeps its colour across plots.
    let mut colors = PALETTE.iter().cycle();
    for s in &chart.series {
        let color = match (s.style, s.color) {
            (Style::Reference, _) => RGBColor(150, 150, 150),
            (_, Some(i)) => PALETTE[i % PALETTE.len()],
            (_, None) => *colors.next().expect("cycle"),
        };
        let name = s.name.clone();
        match s.style {
            Style::Line => {
                ctx.draw_series(LineSeries::new(s.points.iter().copied(), color.stroke_width(2)))
                    .map_err(e)?
                    .label(name)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
                ctx.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(e)?;
            }
            Style::Measured => {
                ctx.draw_series(s.points.iter().map(|&p| TriangleMarker::new(p, 7, color.stroke_width(2))))
                    .map_err(e)?
                    .label(name)
                    .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 7, color.stroke_width(2)));
            }
            Style::Published => {
                // A published series of many steps (a table) reads better
                // joined; a few values read off a figure are not a curve.
                if s.points.len() > 4 {
                    ctx.draw_series(LineSeries::new(s.points.iter().copied(), color.mix(0.5).stroke_width(1)))
                        .map_err(e)?;
                }
                let square =
                    move |(x, y): (i32, i32)| Rectangle::new([(x - 6, y - 6), (x + 6, y + 6)], color.stroke_width(2));
                ctx.draw_series(
                    s.points
                        .iter()
                        .map(|&p| EmptyElement::at(p) + Rectangle::new([(-6, -6), (6, 6)], color.stroke_width(2))),
                )
                .map_err(e)?
                .label(name)
                .legend(move |(x, y)| square((x + 10, y)));
            }
            Style::Reference => {
                let grey = RGBColor(150, 150, 150);
                ctx.draw_series(LineSeries::new(s.points.iter().copied(), grey.stroke_width(1)))
                    .map_err(e)?
                    .label(name)
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey.stroke_width(1)));
            }
        }
    }
    ctx.configure_series_labels()
        .position(if chart.legend_left { SeriesLabelPosition::UpperLeft } else { SeriesLabelPosition::UpperRight })
        .label_font((FONT_FAMILY, 14))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(180, 180, 180))
        .draw()
        .map_err(e)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(log_x: bool) -> Chart {
        Chart {
            id: "t".into(),
            title: "RAN delay".into(),
            x_label: "kbps".into(),
            y_label: "s".into(),
            log_x,
            integer_x: false,
            legend_left: false,
            series: vec![
                Series::new("ours", Style::Line, vec![(9.6, 9.0), (64.0, 2.0), (256.0, 0.7)]),
                Series::new("measured", Style::Measured, vec![(9.6, 9.1)]),
                Series::new("thesis", Style::Published, vec![(9.6, 9.7)]),
            ],
        }
    }

    #[test]
    fn the_svg_has_each_series_its_legend_and_labels() {
        for log_x in [false, true] {
            let svg = svg(&chart(log_x)).unwrap();
            assert!(svg.starts_with("<svg"), "{}", &svg[..80]);
            assert!(svg.contains("<polyline"), "a line");
            for text in ["ours", "measured", "thesis", "RAN delay", "kbps"] {
                assert!(svg.contains(&format!("\n{text}\n</text>")), "{text} missing");
            }
            // On the log axis each bit rate is a tick.
            if log_x {
                for tick in ["9.6", "64", "256"] {
                    assert!(svg.contains(&format!("\n{tick}\n</text>")), "tick {tick} missing");
                }
            }
        }
    }

    #[test]
    fn an_empty_chart_says_so() {
        let c = Chart { series: vec![], ..chart(false) };
        assert!(svg(&c).unwrap().contains("no data"));
    }
}
