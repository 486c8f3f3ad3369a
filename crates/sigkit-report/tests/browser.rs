//! The report from real data (every corpus flow compressed now with every
//! algorithm, the RAN-delay study calculated and measured over the
//! emulated link now, load steps built here), opened in headless Chromium
//! at 1400 and at 800 px: every plot must render, with no script error
//! and no horizontal overflow of the page, and the screenshot must not be
//! blank.

// Helpers outside #[test] functions unwrap too: a panic fails the test.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

use sigcomp::Params;
use sigcomp_compress::{Config, Mechanism};
use sigkit_eval::corpus::load_flow;
use sigkit_eval::ran::{measure, MeasureSettings, RanCall, THESIS_RATES_KBPS, THESIS_RTT};
use sigkit_report::{seeds, sources, write_report, Capacity, LoadStep, LoadTail, ReportInput};

mod common;
use common::{corpus, have, scratch};

/// Load steps of a system that serves up to `capacity` calls/s, its
/// set-up delay growing as the offered load nears it (an M/M/1 queue's
/// sojourn time): inputs for the load plots, built here, not measured.
fn load_steps(series: &str, capacity: f64) -> Vec<LoadStep> {
    (1..=8)
        .map(|i| {
            let offered = capacity * f64::from(i) / 6.0;
            let served = offered.min(capacity);
            let attempted = (offered * 10.0).round() as u64;
            let successful = (served * 10.0).round() as u64;
            let rho = (offered / capacity).min(0.98);
            let mean_ms = 1000.0 / capacity / (1.0 - rho);
            // Of the calls lost above capacity, a third are still without
            // a final answer when the run ends.
            let lost = attempted - successful;
            let (failed, unfinished) = (lost - lost / 3, lost / 3);
            LoadStep {
                series: series.into(),
                offered_cps: offered,
                attempted,
                successful,
                failed,
                calls_per_s: served,
                failed_pct: failed as f64 / attempted as f64 * 100.0,
                unfinished,
                unfinished_pct: unfinished as f64 / attempted as f64 * 100.0,
                // Exponential sojourn: p = -ln(1 - q) × mean.
                setup_p50_ms: mean_ms * 2f64.ln(),
                setup_p95_ms: mean_ms * 20f64.ln(),
                setup_p99_ms: mean_ms * 100f64.ln(),
                duration_s: 3.0,
                // Above capacity, requests go unanswered and are sent
                // again; the lost calls end on Timer B or in 503.
                retransmissions: Some(lost * 4),
                timeouts: Some(failed / 2),
                unexpected: Some(0),
                failed_5xx: Some(failed - failed / 2),
                tail: (i == 8).then_some(LoadTail { start_s: 24.0, end_s: 56.0, successful: 12, failed, unfinished }),
            }
        })
        .collect()
}

fn real_input() -> ReportInput {
    let params = Params { dms: 8192, sms: 131072, cpb: 32, ..Params::default() };
    let mut input = ReportInput { title: Some("sigkit report (test)".into()), ..ReportInput::default() };
    input.runs.push(sources::run_meta("cargo test -p sigkit-report --test browser"));
    // Every algorithm: each flow's table has 3 + 12 columns.
    input.compression = sources::compression(
        &corpus(),
        sigkit_eval::study::all_algorithms(),
        &Mechanism::ALL,
        Config::default(),
        params,
    )
    .unwrap();
    let mut messages = load_flow(&corpus().join("3gpp-video-call")).unwrap();
    messages.truncate(12);
    let call = RanCall::compress(&messages, params, Config::default()).unwrap();
    // Two rates over the emulated link, time running 16 times faster.
    let settings = MeasureSettings { time_scale: 16.0, ..MeasureSettings::default() };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let measured = runtime.block_on(measure(&call, &[9.6, 64.0], &settings)).unwrap();
    input.merge(sources::ran(&call, &THESIS_RATES_KBPS, THESIS_RTT, &measured));
    input.load_steps = load_steps("system A", 600.0);
    input.load_steps.extend(load_steps("system B", 900.0));
    input.capacity = Some(Capacity {
        target: "system B".into(),
        service_level: "at most 10 % failed calls, p95 set-up delay at most 250 ms".into(),
        calls_per_s: 900.0,
        ci95_calls_per_s: Some(20.0),
        searches: 3,
        max_deviation_pct: Some(2.5),
    });
    input.seed_points.extend(seeds::framework_thesis_tables());
    input
}

/// Mean and variance of the luminance of a PNG's pixels, its size, and how
/// many of its pixels are clearly coloured (a plotted line, not grey).
fn png_stats(path: &Path) -> (u32, u32, f64, f64, usize) {
    let decoder = png::Decoder::new(std::fs::File::open(path).unwrap());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(channels >= 3, "{path:?}: {:?}", info.color_type);
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(channels).collect();
    let lum: Vec<f64> =
        pixels.iter().map(|p| 0.299 * f64::from(p[0]) + 0.587 * f64::from(p[1]) + 0.114 * f64::from(p[2])).collect();
    let mean = lum.iter().sum::<f64>() / lum.len() as f64;
    let var = lum.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / lum.len() as f64;
    let coloured = pixels
        .iter()
        .filter(|p| {
            let (max, min) = (p[0].max(p[1]).max(p[2]), p[0].min(p[1]).min(p[2]));
            max - min > 80
        })
        .count();
    (info.width, info.height, mean, var, coloured)
}

#[test]
fn the_report_of_real_data_renders_every_plot_in_chromium() {
    let dir = scratch("browser");
    let input = real_input();
    let files = write_report(&input, &dir).unwrap();

    // Every plot the data calls for, each as a PNG beside the page.
    let flows = sigkit_eval::study::flow_dirs(&corpus()).unwrap();
    let mut expected: Vec<String> = ["load-throughput", "load-failed", "load-setup"].map(String::from).to_vec();
    expected.extend(["published-throughput", "published-failed", "published-setup"].map(String::from));
    expected.extend(flows.iter().map(|f| format!("compression-{}", f.file_name().unwrap().to_string_lossy())));
    expected
        .extend(["compression-overview", "compression-algorithms", "load-causes-1", "load-causes-2"].map(String::from));
    expected.extend(["ran-delay", "ran-saved", "ran-reduction"].map(String::from));
    for id in &expected {
        assert!(files.plots.contains(id), "plot {id} missing from {:?}", files.plots);
    }
    assert_eq!(files.pngs.len(), files.plots.len());
    for png in &files.pngs {
        let (w, h, mean, var, coloured) = png_stats(png);
        // The legend below the plotting area: as tall as it needs.
        assert!(w == 960 && h >= 500 + 22, "{png:?}: {w}×{h}");
        // White background, dark text and grid: far from uniform.
        assert!(mean > 150.0 && var > 500.0, "{png:?}: mean {mean}, variance {var}");
        assert!(coloured > 500, "{png:?}: {coloured} coloured pixels (the series)");
    }

    // Self-contained: nothing loaded from elsewhere.
    let html = std::fs::read_to_string(&files.index).unwrap();
    for outside in ["src=\"http", "href=\"http", "<link", "<img", "@import", "url("] {
        assert!(!html.contains(outside), "the page refers to {outside}");
    }
    assert_eq!(html.matches("<figure class=\"plot\"").count(), files.plots.len());
    // The tables carry the numbers: the thesis's values beside ours.
    for text in ["thesis: saved", "≈ 6.90", "≈ 70", "Machine A", "Table 5-2", "system B", "<details>", "<abbr title="]
    {
        assert!(html.contains(text), "{text} missing from the page");
    }

    if !have("chromium") {
        return;
    }
    let url = format!("file://{}", files.index.display());
    let chromium = |extra: &[&str], profile: &str| {
        let out = Command::new("timeout")
            .args(["120", "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"])
            .arg(format!("--user-data-dir={}", dir.join(profile).display()))
            .args(["--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000"])
            .args(extra)
            .arg(&url)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        for error in ["Uncaught", "SyntaxError", "ReferenceError", "TypeError"] {
            assert!(!stderr.contains(error), "script error in the page: {stderr}");
        }
        (String::from_utf8_lossy(&out.stdout).to_string(), stderr)
    };

    // The page's own check, after load, at a wide and a narrow window:
    // every plot laid out, its lines drawn and its text measured in a
    // font, no script error, and the page no wider than the window (wide
    // tables scroll in their own box).
    for width in [1400, 800] {
        let size = format!("--window-size={width},2000");
        let (dom, stderr) = chromium(&["--dump-dom", &size], &format!("profile-dom-{width}"));
        let check = dom.split("id=\"render-check\"").nth(1).unwrap_or_else(|| panic!("no render check: {stderr}"));
        let check = &check[..check.find("</p>").unwrap()];
        assert!(check.contains("data-status=\"ok\""), "at {width} px: {check}");
        assert!(check.contains("data-overflow=\"0\"") || check.contains("data-overflow=\"-"), "at {width} px: {check}");
        assert!(check.contains(&format!("\"plots\":{}", files.plots.len())), "{check}");
        assert!(check.contains("\"bad\":[]") && check.contains("\"errors\":[]"), "{check}");
        // The window's width is the page's (less a scroll bar).
        let inner: u32 =
            check.split("\"width\":").nth(1).and_then(|w| w.split([',', '}']).next()).unwrap().parse().unwrap();
        assert!(inner <= width && inner + 30 >= width, "at {width} px the page is {inner} px wide: {check}");
        for error in ["Uncaught", "Error", "Failed to load"] {
            let console: Vec<&str> = stderr.lines().filter(|l| l.contains("CONSOLE") && l.contains(error)).collect();
            assert!(console.is_empty(), "console errors at {width} px: {console:?}");
        }
    }

    // The screenshot: the top of the page, plots and tables, not blank.
    let shot = dir.join("screenshot.png");
    let shot_arg = format!("--screenshot={}", shot.display());
    let (_, stderr) = chromium(&[&shot_arg, "--window-size=1100,2400"], "profile-shot");
    assert!(shot.exists(), "no screenshot: {stderr}");
    let (w, h, mean, var, coloured) = png_stats(&shot);
    assert_eq!((w, h), (1100, 2400));
    assert!(var > 300.0 && mean < 254.0, "blank screenshot: mean {mean}, variance {var}");
    assert!(coloured > 2000, "{coloured} coloured pixels: no plotted lines on screen");
    if std::env::var_os("SIGKIT_KEEP_REPORT").is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        eprintln!("report kept in {}", dir.display());
    }
}
