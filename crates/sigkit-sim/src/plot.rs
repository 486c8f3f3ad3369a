//! A self-contained SVG of one seed's per-second metrics, in the manner of
//! the SIP overload thesis's Figures 4.3 to 4.6: success rate, request
//! transmissions, the overloaded proxy's utilisation and pending
//! transactions over simulated time.

use std::fmt::Write;

use crate::metrics::SecondRow;

struct Panel {
    title: &'static str,
    y_max: f64,
    values: Vec<Option<f64>>,
}

const WIDTH: f64 = 760.0;
const PANEL_HEIGHT: f64 = 120.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 20.0;
const GAP: f64 = 38.0;

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The SVG of `rows` (one seed, one row per second) titled `title`.
pub fn seconds_svg(title: &str, rows: &[SecondRow]) -> String {
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
    let registered = rows.iter().filter_map(|r| r.registrations_active).max();
    if let Some(max) = registered {
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
    let n = rows.len().max(1) as f64;
    let height = 30.0 + panels.len() as f64 * (PANEL_HEIGHT + GAP) + 10.0;
    let plot_width = WIDTH - LEFT - RIGHT;
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = write!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = write!(svg, r#"<text x="{LEFT}" y="18" font-size="13" font-weight="bold">{}</text>"#, escape(title));
    for (i, panel) in panels.iter().enumerate() {
        let top = 30.0 + i as f64 * (PANEL_HEIGHT + GAP) + 14.0;
        let bottom = top + PANEL_HEIGHT;
        let _ = write!(svg, r#"<text x="{LEFT}" y="{}">{}</text>"#, top - 4.0, panel.title);
        let _ = write!(
            svg,
            r##"<rect x="{LEFT}" y="{top}" width="{plot_width}" height="{PANEL_HEIGHT}" fill="none" stroke="#999"/>"##
        );
        for frac in [0.0, 0.5, 1.0] {
            let y = bottom - frac * PANEL_HEIGHT;
            let label = frac * panel.y_max;
            let label = if panel.y_max > 20.0 { format!("{label:.0}") } else { format!("{label:.1}") };
            let _ = write!(svg, r#"<text x="{}" y="{}" text-anchor="end">{label}</text>"#, LEFT - 4.0, y + 4.0);
        }
        for step in 0..=4 {
            let t = (n * f64::from(step) / 4.0).round();
            let x = LEFT + plot_width * t / n;
            let _ = write!(svg, r#"<text x="{x}" y="{}" text-anchor="middle">{t} s</text>"#, bottom + 13.0);
        }
        let mut path = String::new();
        let mut pen_down = false;
        for (t, v) in panel.values.iter().enumerate() {
            match v {
                Some(v) => {
                    let x = LEFT + plot_width * (t as f64 + 0.5) / n;
                    let y = bottom - (v / panel.y_max).clamp(0.0, 1.0) * PANEL_HEIGHT;
                    let _ = write!(path, "{}{x:.1},{y:.1} ", if pen_down { "L" } else { "M" });
                    pen_down = true;
                }
                None => pen_down = false,
            }
        }
        let _ = write!(svg, r##"<path d="{path}" fill="none" stroke="#c0392b" stroke-width="1.2"/>"##);
    }
    svg.push_str("</svg>\n");
    svg
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

    #[test]
    fn registrations_get_a_fifth_panel() {
        let mut rows: Vec<SecondRow> = (0..10).map(|t| row(t, Some(1.0))).collect();
        assert_eq!(seconds_svg("t", &rows).matches("<path").count(), 4);
        rows[3].registrations_active = Some(7);
        let svg = seconds_svg("t", &rows);
        assert_eq!(svg.matches("<path").count(), 5);
        assert!(svg.contains("active registrations"));
    }

    #[test]
    fn the_svg_has_four_panels_and_breaks_lines_at_gaps() {
        let rows: Vec<SecondRow> = (0..10).map(|t| row(t, (t != 5).then_some(1.0))).collect();
        let svg = seconds_svg("a <title>", &rows);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<path").count(), 4);
        assert!(svg.contains("a &lt;title&gt;"));
        let first_path = svg.split("<path d=\"").nth(1).unwrap();
        let first_path = &first_path[..first_path.find('"').unwrap()];
        assert_eq!(first_path.matches('M').count(), 2, "the gap at t = 5 splits the line: {first_path}");
    }
}
