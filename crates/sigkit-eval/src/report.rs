//! A self-contained HTML report: sections of text, tables and line plots
//! drawn as inline SVG (no script, no external file), so the page opens
//! anywhere and every plot is in the one file.

use std::fmt::Write as _;

/// One plotted line: a name and its points.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Drawn as markers only (a published value beside our line).
    pub markers_only: bool,
}

impl Series {
    pub fn line(name: &str, points: Vec<(f64, f64)>) -> Series {
        Series { name: name.to_string(), points, markers_only: false }
    }
    pub fn markers(name: &str, points: Vec<(f64, f64)>) -> Series {
        Series { name: name.to_string(), points, markers_only: true }
    }
}

/// A line plot.
#[derive(Debug, Clone)]
pub struct Plot {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// A logarithmic x axis (bit rates).
    pub log_x: bool,
}

/// A part of the report.
#[derive(Debug, Clone, Default)]
pub struct Section {
    pub title: String,
    pub text: String,
    pub plots: Vec<Plot>,
    /// Header row, then rows.
    pub table: Option<(Vec<String>, Vec<Vec<String>>)>,
}

const COLORS: [&str; 6] = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A "nice" step for about `n` ticks over `span`.
fn tick_step(span: f64, n: f64) -> f64 {
    let raw = (span / n).max(1e-12);
    let mag = 10f64.powf(raw.log10().floor());
    let norm = raw / mag;
    let nice = if norm < 1.5 {
        1.0
    } else if norm < 3.0 {
        2.0
    } else if norm < 7.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

fn fmt_tick(v: f64) -> String {
    if v.abs() >= 1000.0 || v.fract().abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}").trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

impl Plot {
    /// The plot as an SVG element.
    pub fn svg(&self) -> String {
        let (w, h) = (640.0, 360.0);
        let (left, right, top, bottom) = (70.0, 170.0, 40.0, 50.0);
        let pts: Vec<(f64, f64)> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .filter(|p| p.0.is_finite() && p.1.is_finite())
            .collect();
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img"><title>{}</title><rect width="{w}" height="{h}" fill="white"/>"#,
            escape(&self.title)
        );
        let _ = write!(
            out,
            r#"<text x="{}" y="22" font-size="15" text-anchor="middle" font-family="sans-serif">{}</text>"#,
            (w - right + left) / 2.0,
            escape(&self.title)
        );
        if pts.is_empty() {
            let _ =
                write!(out, r#"<text x="{}" y="{}" font-family="sans-serif">no data</text></svg>"#, w / 2.0, h / 2.0);
            return out;
        }
        let tx = |x: f64| if self.log_x { x.max(1e-12).log10() } else { x };
        let (mut x0, mut x1) =
            pts.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| (a.min(tx(p.0)), b.max(tx(p.0))));
        let y1 = pts.iter().fold(f64::NEG_INFINITY, |a, p| a.max(p.1)).max(1e-9) * 1.1;
        let y0 = pts.iter().fold(0f64, |a, p| a.min(p.1));
        if x1 - x0 < 1e-12 {
            x0 -= 1.0;
            x1 += 1.0;
        }
        let (pw, ph) = (w - left - right, h - top - bottom);
        let sx = |x: f64| left + (tx(x) - x0) / (x1 - x0) * pw;
        let sy = |y: f64| top + ph - (y - y0) / (y1 - y0) * ph;
        // Axes and ticks.
        let _ = write!(
            out,
            r##"<g font-family="sans-serif" font-size="11"><line x1="{left}" y1="{}" x2="{}" y2="{}" stroke="#333"/><line x1="{left}" y1="{top}" x2="{left}" y2="{}" stroke="#333"/>"##,
            top + ph,
            left + pw,
            top + ph,
            top + ph
        );
        let ystep = tick_step(y1 - y0, 5.0);
        let mut y = (y0 / ystep).ceil() * ystep;
        while y <= y1 {
            let py = sy(y);
            let _ = write!(
                out,
                r##"<line x1="{left}" y1="{py}" x2="{}" y2="{py}" stroke="#eee"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
                left + pw,
                left - 6.0,
                py + 4.0,
                fmt_tick(y)
            );
            y += ystep;
        }
        let xs: Vec<f64> = if self.log_x {
            let mut v: Vec<f64> = pts.iter().map(|p| p.0).collect();
            v.sort_by(|a, b| a.total_cmp(b));
            v.dedup();
            v
        } else {
            let step = tick_step(x1 - x0, 6.0);
            let mut v = Vec::new();
            let mut x = (x0 / step).ceil() * step;
            while x <= x1 + 1e-9 {
                v.push(x);
                x += step;
            }
            v
        };
        for x in xs {
            let px = sx(x);
            let _ =
                write!(out, r##"<text x="{px}" y="{}" text-anchor="middle">{}</text>"##, top + ph + 16.0, fmt_tick(x));
        }
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle" font-size="12">{}</text>"#,
            left + pw / 2.0,
            h - 10.0,
            escape(&self.x_label)
        );
        let _ = write!(
            out,
            r#"<text transform="translate(16 {}) rotate(-90)" text-anchor="middle" font-size="12">{}</text>"#,
            top + ph / 2.0,
            escape(&self.y_label)
        );
        // Series and legend.
        for (i, s) in self.series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let points: Vec<(f64, f64)> =
                s.points.iter().copied().filter(|p| p.0.is_finite() && p.1.is_finite()).collect();
            if !s.markers_only && points.len() > 1 {
                let path: Vec<String> = points.iter().map(|p| format!("{:.1},{:.1}", sx(p.0), sy(p.1))).collect();
                let _ = write!(
                    out,
                    r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#,
                    path.join(" ")
                );
            }
            for p in &points {
                if s.markers_only {
                    let _ = write!(
                        out,
                        r#"<rect x="{:.1}" y="{:.1}" width="8" height="8" fill="none" stroke="{color}" stroke-width="2"/>"#,
                        sx(p.0) - 4.0,
                        sy(p.1) - 4.0
                    );
                } else {
                    let _ = write!(out, r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"/>"#, sx(p.0), sy(p.1));
                }
            }
            let ly = top + 10.0 + 18.0 * i as f64;
            let lx = left + pw + 12.0;
            let _ = write!(
                out,
                r#"<rect x="{lx}" y="{}" width="12" height="4" fill="{color}"/><text x="{}" y="{}">{}</text>"#,
                ly - 2.0,
                lx + 16.0,
                ly + 4.0,
                escape(&s.name)
            );
        }
        out.push_str("</g></svg>");
        out
    }
}

/// The whole page.
pub fn html(title: &str, intro: &str, sections: &[Section]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title><style>\
         body{{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}}\
         table{{border-collapse:collapse;margin:1em 0;font-size:13px}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}\
         th{{background:#f4f4f4}}.plot{{border:1px solid #ddd;margin:0.5em 0}}</style></head><body><h1>{t}</h1><p>{i}</p>",
        t = escape(title),
        i = escape(intro)
    );
    for s in sections {
        let _ = write!(out, "<h2>{}</h2><p>{}</p>", escape(&s.title), escape(&s.text));
        for p in &s.plots {
            out.push_str("<div>");
            out.push_str(&p.svg());
            out.push_str("</div>");
        }
        if let Some((head, rows)) = &s.table {
            out.push_str("<table><tr>");
            for h in head {
                let _ = write!(out, "<th>{}</th>", escape(h));
            }
            out.push_str("</tr>");
            for r in rows {
                out.push_str("<tr>");
                for c in r {
                    let _ = write!(out, "<td>{}</td>", escape(c));
                }
                out.push_str("</tr>");
            }
            out.push_str("</table>");
        }
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plot_draws_each_series_and_escapes_names() {
        let p = Plot {
            title: "a < b".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![Series::line("ours", vec![(1.0, 2.0), (2.0, 3.0)]), Series::markers("seed", vec![(1.5, 2.5)])],
            log_x: false,
        };
        let svg = p.svg();
        assert!(svg.contains("a &lt; b"));
        assert_eq!(svg.matches("<polyline").count(), 1);
        assert_eq!(svg.matches("<circle").count(), 2);
        assert!(svg.contains("seed"));
        let page = html("t", "i", &[Section { title: "s".into(), plots: vec![p], ..Section::default() }]);
        assert!(page.starts_with("<!DOCTYPE html>") && page.contains("<svg"));
    }

    #[test]
    fn an_empty_plot_says_so() {
        let p = Plot { title: "t".into(), x_label: "x".into(), y_label: "y".into(), series: vec![], log_x: true };
        assert!(p.svg().contains("no data"));
    }
}
