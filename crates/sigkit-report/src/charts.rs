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

pub(crate) fn register_font() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // The font is part of the crate; a failure here is a broken build.
        if plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, FONT).is_err() {
            panic!("the embedded font does not parse");
        }
    });
}

/// Width of every plot, and height of its plotting area; the legend goes
/// below it, so a plot is as tall as its legend needs.
pub const SIZE: (u32, u32) = (960, 500);

/// Data series one chart shows at most: past about six, colours and
/// markers can no longer be told apart, so sections split or group them.
pub(crate) const MAX_SERIES: usize = 6;

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
    /// A bar per category (a chart with [`Chart::categories`]).
    Bar,
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
    /// A logarithmic y axis (delays whose percentiles lie orders of
    /// magnitude apart).
    pub log_y: bool,
    /// x is a count (message number): ticks at whole numbers.
    pub integer_x: bool,
    /// x is a category (a message, a flow): series `i`'s value for
    /// category `k` is its point at x = k, drawn as grouped bars.
    pub categories: Option<Vec<String>>,
    pub series: Vec<Series>,
}

impl Chart {
    /// A line chart on linear axes.
    pub fn new(id: impl Into<String>, title: impl Into<String>, x: &str, y: &str, series: Vec<Series>) -> Chart {
        Chart {
            id: id.into(),
            title: title.into(),
            x_label: x.to_string(),
            y_label: y.to_string(),
            log_x: false,
            log_y: false,
            integer_x: false,
            categories: None,
            series,
        }
    }

    /// Grouped bars: one group per category, one bar per series.
    pub fn bars(
        id: impl Into<String>,
        title: impl Into<String>,
        categories: Vec<String>,
        x: &str,
        y: &str,
        series: Vec<Series>,
    ) -> Chart {
        Chart { categories: Some(categories), ..Chart::new(id, title, x, y, series) }
    }

    /// Series that carry data (guides left out).
    #[cfg(test)]
    pub fn data_series(&self) -> usize {
        self.series.iter().filter(|s| s.style != Style::Reference).count()
    }
}

/// Whether values spread over orders of magnitude (the largest over
/// 50 times the smallest positive one): then a log axis shows them all.
pub(crate) fn wide_spread(values: impl IntoIterator<Item = f64>) -> bool {
    let (lo, hi) = values
        .into_iter()
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    hi > 0.0 && hi / lo > 50.0
}

/// The Okabe–Ito palette (M. Okabe and K. Ito, "Color Universal Design",
/// 2008), told apart with each of the common colour-vision deficiencies;
/// its yellow, faint on white, last.
pub(crate) const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(230, 159, 0),   // orange
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(0, 0, 0),       // black
    RGBColor(240, 228, 66),  // yellow
];

const GREY: RGBColor = RGBColor(150, 150, 150);

/// Each series' colour: guides grey, fixed ones their own, the others
/// the palette's next (guides take none, so a run keeps its colour
/// across plots).
pub(crate) fn colors(chart: &Chart) -> Vec<RGBColor> {
    let mut next = 0;
    chart
        .series
        .iter()
        .map(|s| match (s.style, s.color) {
            (Style::Reference, _) => GREY,
            (_, Some(i)) => PALETTE[i % PALETTE.len()],
            (_, None) => {
                next += 1;
                PALETTE[(next - 1) % PALETTE.len()]
            }
        })
        .collect()
}

const LEGEND_FONT: u32 = 14;
const LEGEND_ROW: u32 = 22;

/// The legend's entries laid out in rows below the plot: (row, x) of
/// each, and the rows needed. Text width is estimated from the font size
/// (DejaVu Sans averages about 0.55 em a character).
fn legend_layout(chart: &Chart) -> (Vec<(u32, u32)>, u32) {
    let (width, left, gap) = (SIZE.0 - 20, 80u32, 24u32);
    let mut out = Vec::new();
    let (mut row, mut x) = (0u32, left);
    for s in &chart.series {
        let w = 34 + (s.name.chars().count() as f64 * f64::from(LEGEND_FONT) * 0.56).ceil() as u32;
        if x > left && x + w > width {
            row += 1;
            x = left;
        }
        out.push((row, x));
        x += w + gap;
    }
    (out, if chart.series.is_empty() { 0 } else { row + 1 })
}

/// The plot's pixel size: the plotting area and the legend below it.
pub(crate) fn size(chart: &Chart) -> (u32, u32) {
    let (_, rows) = legend_layout(chart);
    (SIZE.0, SIZE.1 + if rows > 0 { rows * LEGEND_ROW + 12 } else { 0 })
}

/// Why plotters could not draw a chart: its backend failed (the PNG file
/// could not be written or encoded) or it could not lay out the text or
/// the plotting area.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DrawError(Box<dyn std::error::Error + Send + Sync>);

impl<E: std::error::Error + Send + Sync + 'static> From<DrawingAreaErrorKind<E>> for DrawError {
    fn from(e: DrawingAreaErrorKind<E>) -> DrawError {
        DrawError(Box::new(e))
    }
}

pub(crate) fn write_png(chart: &Chart, path: &Path) -> Result<(), DrawError> {
    register_font();
    let root = BitMapBackend::new(path, size(chart)).into_drawing_area();
    draw(&root, chart)?;
    Ok(root.present()?)
}

pub(crate) fn svg(chart: &Chart) -> Result<String, DrawError> {
    register_font();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size(chart)).into_drawing_area();
        draw(&root, chart)?;
        root.present()?;
    }
    Ok(out)
}

/// The largest magnitude drawn. Report input is read from files, which
/// may hold any number JSON does; an axis spanning 1e308 overflows to
/// infinity as it is padded, and plotters then never finishes placing its
/// ticks. No measurement of the report comes near 1e15.
const MAX_PLOTTED: f64 = 1e15;

/// `chart` without the points it cannot draw: not finite, or beyond
/// [`MAX_PLOTTED`].
fn plottable(chart: &Chart) -> Chart {
    let drawable = |v: f64| v.is_finite() && v.abs() <= MAX_PLOTTED;
    let mut chart = chart.clone();
    for s in &mut chart.series {
        s.points.retain(|&(x, y)| drawable(x) && drawable(y));
    }
    chart
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &Chart) -> Result<(), DrawError>
where
    DB::ErrorType: 'static,
{
    let chart = &plottable(chart);
    root.fill(&WHITE)?;
    let points = || chart.series.iter().flat_map(|s| s.points.iter().copied()).filter(|p| !chart.log_y || p.1 > 0.0);
    let (mut x0, mut x1) = points().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(p.0), b.max(p.0)));
    if !x0.is_finite() {
        // No data: an empty frame that says so.
        root.draw(&Text::new(format!("{}: no data", chart.title), (40, 40), (FONT_FAMILY, 20).into_font()))?;
        return Ok(());
    }
    let (plot, legend) = root.split_vertically(SIZE.1);
    draw_legend(&legend, chart)?;
    let y_max = points().fold(0f64, |a, p| a.max(p.1));
    let y_min = points().fold(if chart.log_y { f64::INFINITY } else { 0.0 }, |a, p| a.min(p.1));
    let y = if chart.log_y {
        (y_min / 1.5)..(y_max * 1.5)
    } else {
        y_min..if y_max > y_min { y_max * 1.08 } else { y_min + 1.0 }
    };
    if let Some(categories) = &chart.categories {
        let n = categories.len().max(1);
        let x = -0.5..n as f64 - 0.5;
        // A label at each whole number (plotters puts one tick a category
        // when asked for as many labels as there are).
        let label = |v: &f64| {
            if (v - v.round()).abs() < 1e-6 && *v >= 0.0 {
                categories.get(v.round() as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        };
        return if chart.log_y {
            plot_on(&plot, chart, x, y.log_scale(), &label)
        } else {
            plot_on(&plot, chart, x, y, &label)
        };
    }
    if chart.log_x {
        let (lo, hi) = (x0.max(1e-9) / 1.25, x1.max(1e-9) * 1.25);
        let x_ticks = {
            let mut v: Vec<f64> = points().map(|p| p.0).collect();
            v.sort_by(f64::total_cmp);
            v.dedup();
            v
        };
        // Ticks at the bit rates plotted (and nowhere else).
        let x = (lo..hi).log_scale().with_key_points(x_ticks);
        let label = |v: &f64| trim(*v);
        return if chart.log_y {
            plot_on(&plot, chart, x, y.log_scale(), &label)
        } else {
            plot_on(&plot, chart, x, y, &label)
        };
    }
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
    let label = move |v: &f64| {
        if !integer {
            trim(*v)
        } else if (v - v.round()).abs() < 1e-6 {
            format!("{v:.0}")
        } else {
            String::new()
        }
    };
    if chart.log_y {
        plot_on(&plot, chart, x0..x1, y.log_scale(), &label)
    } else {
        plot_on(&plot, chart, x0..x1, y, &label)
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

/// The legend, below the plotting area, where it covers no data.
fn draw_legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, chart: &Chart) -> Result<(), DrawError>
where
    DB::ErrorType: 'static,
{
    let (layout, _) = legend_layout(chart);
    let font = (FONT_FAMILY, LEGEND_FONT).into_font().color(&BLACK);
    for ((s, color), (row, x)) in chart.series.iter().zip(colors(chart)).zip(layout) {
        let (x, y) = (x as i32, (4 + row * LEGEND_ROW + LEGEND_ROW / 2) as i32);
        match s.style {
            Style::Line => {
                area.draw(&PathElement::new(vec![(x, y), (x + 24, y)], color.stroke_width(2)))?;
                area.draw(&Circle::new((x + 12, y), 3, color.filled()))?;
            }
            Style::Measured => area.draw(&TriangleMarker::new((x + 12, y), 7, color.stroke_width(2)))?,
            Style::Published => area.draw(&Rectangle::new([(x + 6, y - 6), (x + 18, y + 6)], color.stroke_width(2)))?,
            Style::Reference => area.draw(&PathElement::new(vec![(x, y), (x + 24, y)], GREY.stroke_width(1)))?,
            Style::Bar => area.draw(&Rectangle::new([(x + 4, y - 7), (x + 20, y + 7)], color.filled()))?,
        }
        area.draw(&Text::new(s.name.clone(), (x + 32, y - 8), font.clone()))?;
    }
    Ok(())
}

fn plot_on<DB, X, Y>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
    x: X,
    y: Y,
    x_format: &dyn Fn(&f64) -> String,
) -> Result<(), DrawError>
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut ctx = ChartBuilder::on(root)
        .caption(&chart.title, (FONT_FAMILY, 22))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(x, y)?;
    let n_x = match &chart.categories {
        Some(c) => c.len().max(1),
        None if chart.integer_x => 30,
        None => 12,
    };
    let y_desc = if chart.log_y { format!("{} (log scale)", chart.y_label) } else { chart.y_label.clone() };
    ctx.configure_mesh()
        .x_desc(&chart.x_label)
        .y_desc(&y_desc)
        .x_labels(n_x)
        .y_labels(10)
        .x_label_formatter(x_format)
        .y_label_formatter(&|v| trim(*v))
        .label_style((FONT_FAMILY, 14))
        .axis_desc_style((FONT_FAMILY, 16))
        .light_line_style(RGBColor(238, 238, 238))
        .bold_line_style(RGBColor(210, 210, 210))
        .draw()?;
    let colors = colors(chart);
    let bars = chart.series.iter().filter(|s| s.style == Style::Bar).count().max(1);
    let mut bar = 0;
    // Bars rise from the axis: the bottom of a log axis, else 0.
    let base = if chart.log_y { ctx.y_range().start } else { 0.0 };
    for (s, &color) in chart.series.iter().zip(&colors) {
        let points = s.points.iter().copied().filter(|p| !chart.log_y || p.1 > 0.0);
        match s.style {
            Style::Line => {
                ctx.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?;
                // A dot per value where values are few (steps, bit rates);
                // a time series of hundreds is a line.
                if s.points.len() <= 60 {
                    ctx.draw_series(points.map(|p| Circle::new(p, 3, color.filled())))?;
                }
            }
            Style::Measured => {
                ctx.draw_series(points.map(|p| TriangleMarker::new(p, 7, color.stroke_width(2))))?;
            }
            Style::Published => {
                // A published series of many steps (a table) reads better
                // joined; a few values read off a figure are not a curve.
                if s.points.len() > 4 {
                    ctx.draw_series(LineSeries::new(points.clone(), color.mix(0.5).stroke_width(1)))?;
                }
                ctx.draw_series(
                    points.map(|p| EmptyElement::at(p) + Rectangle::new([(-6, -6), (6, 6)], color.stroke_width(2))),
                )?;
            }
            Style::Reference => {
                ctx.draw_series(LineSeries::new(points, GREY.stroke_width(1)))?;
            }
            Style::Bar => {
                // The group of category k spans k ± 0.4; bar `bar` of
                // `bars` takes its share of it.
                let w = 0.8 / bars as f64;
                let left = -0.4 + w * bar as f64;
                ctx.draw_series(points.map(|(k, v)| {
                    Rectangle::new([(k + left + w * 0.06, base), (k + left + w * 0.94, v)], color.filled())
                }))?;
                bar += 1;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(log_x: bool) -> Chart {
        Chart {
            log_x,
            ..Chart::new(
                "t",
                "RAN delay",
                "kbps",
                "s",
                vec![
                    Series::new("ours", Style::Line, vec![(9.6, 9.0), (64.0, 2.0), (256.0, 0.7)]),
                    Series::new("measured", Style::Measured, vec![(9.6, 9.1)]),
                    Series::new("thesis", Style::Published, vec![(9.6, 9.7)]),
                ],
            )
        }
    }

    /// The y coordinate of each `<text>` whose content is `text`.
    fn text_y(svg: &str, text: &str) -> Vec<f64> {
        let needle = format!("\n{text}\n</text>");
        svg.match_indices(&needle)
            .filter_map(|(i, _)| {
                let tag = &svg[svg[..i].rfind("<text").unwrap()..i];
                let y = tag.split(" y=\"").nth(1)?;
                y[..y.find('"')?].parse().ok()
            })
            .collect()
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
            // The legend lies below the plotting area: it covers no data.
            for name in ["ours", "measured", "thesis"] {
                let y = text_y(&svg, name);
                assert!(!y.is_empty() && y.iter().all(|&y| y > f64::from(SIZE.1)), "{name} at {y:?}");
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
    fn a_long_legend_takes_more_rows_and_the_plot_grows_to_hold_it() {
        let few = chart(false);
        let many = Chart {
            series: (0..6)
                .map(|i| Series::new(format!("a rather long series name number {i}"), Style::Line, vec![(1.0, 1.0)]))
                .collect(),
            ..chart(false)
        };
        assert_eq!(size(&few), (SIZE.0, SIZE.1 + LEGEND_ROW + 12));
        assert!(size(&many).1 >= SIZE.1 + 3 * LEGEND_ROW, "{:?}", size(&many));
        let (layout, rows) = legend_layout(&many);
        assert!(layout.iter().all(|&(r, x)| r < rows && x < SIZE.0), "{layout:?}");
    }

    #[test]
    fn grouped_bars_draw_one_bar_per_series_and_category_on_a_log_axis() {
        let c = Chart {
            log_y: true,
            ..Chart::bars(
                "b",
                "bytes",
                vec!["INVITE".into(), "100".into(), "200".into()],
                "message",
                "bytes",
                vec![
                    Series::new("original", Style::Bar, vec![(0.0, 1400.0), (1.0, 250.0), (2.0, 900.0)]),
                    Series::new("shared", Style::Bar, vec![(0.0, 900.0), (1.0, 50.0), (2.0, 30.0)]),
                ],
            )
        };
        let svg = svg(&c).unwrap();
        for tick in ["INVITE", "100", "200"] {
            assert!(svg.contains(&format!("\n{tick}\n</text>")), "category {tick} missing");
        }
        // Six bars (filled rectangles in the series' colours).
        let fill = |c: RGBColor| format!("fill=\"#{:02X}{:02X}{:02X}\"", c.0, c.1, c.2);
        let bars = svg
            .lines()
            .filter(|l| l.starts_with("<rect") && (l.contains(&fill(PALETTE[0])) || l.contains(&fill(PALETTE[1]))))
            .count();
        // Two of them are the legend's.
        assert_eq!(bars, 6 + 2, "{svg}");
        assert!(svg.contains("(log scale)"));
    }

    #[test]
    fn percentiles_orders_of_magnitude_apart_want_a_log_axis() {
        assert!(wide_spread([0.4, 3.0, 1522.0]));
        assert!(!wide_spread([2.1, 3.4, 6.3, f64::NAN, 0.0]));
    }

    /// sRGB to linear light.
    fn linear(c: u8) -> f64 {
        let c = f64::from(c) / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    }

    /// How a colour looks with deuteranopia or protanopia (G. Machado et
    /// al., "A Physiologically-based Model for Simulation of Color Vision
    /// Deficiency", 2009, severity 1), in linear RGB.
    fn simulate(c: RGBColor, m: [[f64; 3]; 3]) -> [f64; 3] {
        let v = [linear(c.0), linear(c.1), linear(c.2)];
        m.map(|row| (row[0] * v[0] + row[1] * v[1] + row[2] * v[2]).clamp(0.0, 1.0))
    }

    const DEUTERANOPIA: [[f64; 3]; 3] =
        [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]];
    const PROTANOPIA: [[f64; 3]; 3] =
        [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]];

    /// The smallest distance between two of `colors` as seen through `m`.
    fn closest(colors: &[RGBColor], m: [[f64; 3]; 3]) -> f64 {
        let mut min = f64::INFINITY;
        for (i, a) in colors.iter().enumerate() {
            for b in &colors[i + 1..] {
                let (a, b) = (simulate(*a, m), simulate(*b, m));
                min = min.min(((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt());
            }
        }
        min
    }

    #[test]
    fn the_palettes_first_colours_stay_apart_for_colour_blind_readers() {
        let first = &PALETTE[..MAX_SERIES];
        // The matplotlib default palette this replaced: its red, green
        // and orange merge for a deuteranope.
        let tab10 = [
            RGBColor(31, 119, 180),
            RGBColor(214, 39, 40),
            RGBColor(44, 160, 44),
            RGBColor(255, 127, 14),
            RGBColor(148, 103, 189),
            RGBColor(140, 86, 75),
        ];
        for m in [DEUTERANOPIA, PROTANOPIA] {
            let (ours, theirs) = (closest(first, m), closest(&tab10, m));
            assert!(ours > 0.05 && ours > 2.0 * theirs, "closest pair {ours:.3} (tab10 {theirs:.3})");
        }
        // A chart of as many series as allowed gives each its own colour.
        let c = Chart {
            series: (0..MAX_SERIES).map(|i| Series::new(i.to_string(), Style::Line, vec![(1.0, 1.0)])).collect(),
            ..chart(false)
        };
        let colors = colors(&c);
        for (i, a) in colors.iter().enumerate() {
            assert!(colors[i + 1..].iter().all(|b| b != a), "colour {i} repeats");
        }
    }

    #[test]
    fn a_png_that_cannot_be_written_is_an_error() {
        let e = write_png(&chart(false), Path::new("/nonexistent/sigkit-report/t.png")).unwrap_err();
        assert!(e.to_string().contains("No such file or directory"), "{e}");
    }

    #[test]
    fn an_empty_chart_says_so() {
        let c = Chart { series: vec![], ..chart(false) };
        assert!(svg(&c).unwrap().contains("no data"));
    }
}
