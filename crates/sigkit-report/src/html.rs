//! The page: the sections (one module each) composed from a
//! [`ReportInput`], and written as one HTML file that reads at 1400 px and
//! at 800 px.

use std::fmt::Write as _;

use crate::glossary::Terms;
use crate::page::{escape, strings, Section, Table};
use crate::{ReportInput, SeedChart};

pub(crate) fn sections(input: &ReportInput) -> Vec<Section> {
    let mut out = Vec::new();
    if !input.load_steps.is_empty() {
        out.push(crate::load::load_section(input));
    }
    if let Some(c) = &input.capacity {
        out.push(crate::capacity::capacity_section(c));
    }
    if input.seed_points.iter().any(|p| matches!(p.chart, SeedChart::LoadThroughput | SeedChart::LoadFailed)) {
        out.push(crate::published::published_section(input));
    }
    if !input.compression.is_empty() {
        out.push(crate::compression::compression_section(input));
    }
    if !input.ran.is_empty() {
        out.push(crate::ran::ran_section(input));
    }
    if !input.sim.is_empty() {
        out.push(crate::sim::sim_section(&input.sim));
    }
    if !input.captures.is_empty() || !input.capture_calls.is_empty() {
        out.push(crate::capture::capture_section(&input.captures, &input.capture_calls));
    }
    out
}

/// Tables longer than this are folded below their plot.
const OPEN_ROWS: usize = 8;

fn table_html(out: &mut String, t: &Table, terms: &mut Terms) {
    let fold = t.rows.len() > OPEN_ROWS;
    if fold {
        let _ = write!(
            out,
            "<details><summary>{} ({} rows)</summary>",
            terms.mark(&escape(if t.caption.is_empty() { "Table" } else { &t.caption })),
            t.rows.len()
        );
    } else if !t.caption.is_empty() {
        let _ = write!(out, "<p class=\"caption\">{}</p>", terms.mark(&escape(&t.caption)));
    }
    // A wide table scrolls inside its own box, never the page.
    out.push_str("<div class=\"table-wrap\"><table><thead><tr>");
    for h in &t.head {
        let _ = write!(out, "<th>{}</th>", terms.mark(&escape(h)));
    }
    out.push_str("</tr></thead><tbody>");
    for r in &t.rows {
        out.push_str("<tr>");
        for c in r {
            // Numbers (with a sign, unit or ratio after them) align right,
            // names left.
            let numeric = c.trim_start_matches(['±', '≈', '+', '-', ' ']).starts_with(|ch: char| ch.is_ascii_digit())
                && !c.chars().any(char::is_alphabetic);
            if numeric || c.is_empty() {
                let _ = write!(out, "<td>{}</td>", escape(c));
            } else {
                let _ = write!(out, "<td class=\"text\">{}</td>", terms.mark(&escape(c)));
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
    if fold {
        out.push_str("</details>");
    }
}

const STYLE: &str = "*{box-sizing:border-box}\
    body{font-family:'DejaVu Sans',sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222;line-height:1.4}\
    h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ccc}p{overflow-wrap:anywhere}\
    figure{margin:1em 0}figure svg{display:block;width:100%;max-width:100%;height:auto;border:1px solid #ddd}\
    .table-wrap{max-width:100%;overflow-x:auto;margin:0.5em 0 1.5em}\
    table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\
    td.text{text-align:left;overflow-wrap:anywhere;min-width:8em}th{text-align:center;background:#f4f4f4}\
    .note,.caption{font-size:13px;color:#555}\
    .warning{border:2px solid #d55e00;background:#fff4ec;padding:0.4em 1em;margin:1em 0}.context{border-left:4px solid #bbb;padding-left:0.8em}\
    details{margin:0.5em 0 1.5em}summary{cursor:pointer;font-size:13px;color:#333}\
    abbr[title]{text-decoration:underline dotted;cursor:help}dl.glossary dt{font-weight:bold}dl.glossary dd{margin:0 0 0.5em 1.5em}\
    #render-check{font-size:12px;color:#777}";

/// After load: every plot's SVG laid out with its lines and its text
/// measured (the browser found a font), no script error, and the page no
/// wider than the window (a wide table scrolls in its own box); the
/// result goes into #render-check for a headless browser's DOM dump.
const CHECK: &str = r#"<script>
(function () {
  var errors = [];
  window.addEventListener('error', function (e) { errors.push(String(e.message)); });
  window.addEventListener('load', function () {
    var figures = document.querySelectorAll('figure.plot');
    var bad = [];
    for (var i = 0; i < figures.length; i++) {
      var svg = figures[i].querySelector('svg');
      var box = svg ? svg.getBoundingClientRect() : null;
      var marks = svg ? svg.querySelectorAll('polyline,circle,rect,path,line').length : 0;
      var texts = svg ? svg.querySelectorAll('text') : [];
      var drawn = 0;
      for (var j = 0; j < texts.length; j++) { if (texts[j].getComputedTextLength() > 0) drawn++; }
      if (!box || box.width < 100 || box.height < 50 || marks < 5 || drawn < 3) bad.push(figures[i].id);
    }
    var root = document.documentElement;
    var overflow = root.scrollWidth - root.clientWidth;
    var out = document.getElementById('render-check');
    var ok = bad.length === 0 && errors.length === 0 && overflow <= 0;
    out.setAttribute('data-status', ok ? 'ok' : 'failed');
    out.setAttribute('data-overflow', String(overflow));
    out.textContent = 'render check: ' + JSON.stringify({plots: figures.length, bad: bad, errors: errors,
      width: root.clientWidth, overflow: overflow});
  });
})();
</script>"#;

/// The runs the numbers come from, one row each: where, when, what it
/// ran and with which configuration.
fn runs_table(input: &ReportInput) -> Table {
    Table::new(
        "The runs",
        strings(["run", "machine", "date", "command", "configuration", "notes"]),
        input
            .runs
            .iter()
            .map(|r| {
                vec![
                    r.kind.clone(),
                    r.machine.clone(),
                    r.date.clone(),
                    r.command.clone(),
                    r.config.clone(),
                    r.notes.clone(),
                ]
            })
            .collect(),
    )
}

pub(crate) fn page(input: &ReportInput, sections: &[Section], svgs: &[String]) -> String {
    let title = input.title.clone().unwrap_or_else(|| "sigkit report".into());
    let mut terms = Terms::default();
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{t}</title>\
         <style>{STYLE}</style>{CHECK}</head><body><h1>{t}</h1>",
        t = escape(&title)
    );
    let warnings: Vec<&String> = input.runs.iter().flat_map(|r| &r.warnings).collect();
    if !warnings.is_empty() {
        out.push_str("<div class=\"warning\" role=\"alert\"><strong>Read this first.</strong><ul>");
        for w in warnings {
            let _ = write!(out, "<li>{}</li>", escape(w));
        }
        out.push_str("</ul></div>");
    }
    out.push_str(&crate::findings::html(input));
    if sections.is_empty() {
        out.push_str("<p>No section has data.</p>");
    } else {
        out.push_str("<nav class=\"note\">Sections: <a href=\"#summary\">Summary</a> · ");
        let links: Vec<String> =
            sections.iter().map(|s| format!("<a href=\"#{}\">{}</a>", s.id, escape(&s.title))).collect();
        out.push_str(&links.join(" · "));
        out.push_str(
            " · <a href=\"#reproduction\">Reproduction</a> · <a href=\"#runs\">Runs</a> · \
             <a href=\"#glossary\">Terms</a></nav>",
        );
    }
    let mut svg = svgs.iter();
    for s in sections {
        let _ = write!(out, "<h2 id=\"{}\">{}</h2><p>{}</p>", s.id, escape(&s.title), terms.mark(&escape(&s.text)));
        for f in &s.figures {
            let drawn = [f.chart.as_ref().map(|c| (&c.id, "plot")), f.ladder.as_ref().map(|l| (&l.id, "plot ladder"))];
            for (id, class) in drawn.into_iter().flatten() {
                let _ = write!(out, "<figure class=\"{class}\" id=\"{}\">", escape(id));
                out.push_str(svg.next().map_or("", String::as_str));
                let _ = write!(
                    out,
                    "<figcaption class=\"note\"><a href=\"{0}.png\">{0}.png</a></figcaption></figure>",
                    escape(id)
                );
            }
            if !f.text.is_empty() {
                let _ = write!(out, "<p class=\"note\">{}</p>", terms.mark(&escape(&f.text)));
            }
            if let Some(t) = &f.table {
                table_html(&mut out, t, &mut terms);
            }
        }
    }
    out.push_str(&crate::reproduction::html(input));
    if !input.runs.is_empty() {
        out.push_str("<h2 id=\"runs\">Runs</h2>");
        table_html(&mut out, &runs_table(input), &mut terms);
    }
    out.push_str(&terms.glossary());
    out.push_str("<p id=\"render-check\" data-status=\"pending\">render check: pending</p></body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_tables_fold_and_every_table_scrolls_in_its_own_box() {
        let short = Table::new("a few", strings(["a"]), vec![vec!["1".into()]; 3]);
        let long = Table::new("many", strings(["a"]), vec![vec!["1".into()]; OPEN_ROWS + 1]);
        let (mut a, mut b) = (String::new(), String::new());
        table_html(&mut a, &short, &mut Terms::default());
        table_html(&mut b, &long, &mut Terms::default());
        assert!(!a.contains("<details>") && a.contains("class=\"table-wrap\""), "{a}");
        assert!(b.starts_with("<details><summary>many (9 rows)</summary><div class=\"table-wrap\">"), "{b}");
    }
}
