//! `sigkit eval --quick`: the main job end to end, its results, and its
//! report as a browser renders it (headless Chromium).

use std::path::Path;
use std::process::Command;

fn have(tool: &str) -> bool {
    let found =
        Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success());
    assert!(found || std::env::var_os("CI").is_none(), "{tool} is required in CI (.ci/run installs it)");
    found
}

#[test]
fn eval_quick_measures_every_part_and_its_report_renders() {
    let out = std::env::temp_dir().join(format!("sigkit-eval-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
    let run = Command::new(env!("CARGO_BIN_EXE_sigkit"))
        .args(["eval", "--quick", "-o"])
        .arg(&out)
        .arg("--corpus")
        .arg(&corpus)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");

    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let flows = std::fs::read_dir(&corpus).unwrap().filter(|e| e.as_ref().unwrap().path().is_dir()).count();
    assert_eq!(summary["compression"].as_array().unwrap().len(), flows);
    for f in summary["compression"].as_array().unwrap() {
        assert!(f["shared"].as_f64().unwrap() < f["basic"].as_f64().unwrap(), "{f}");
    }
    let ran = summary["ran"].as_array().unwrap();
    assert_eq!(ran.len(), 7);
    let pct: Vec<f64> = ran.iter().map(|r| r["improvement_pct"].as_f64().unwrap()).collect();
    assert!(pct.windows(2).all(|w| w[0] > w[1]), "SigComp saves most on the slowest link: {pct:?}");
    let load = &summary["proxy_load"];
    assert!(load["successful_calls"].as_u64().unwrap() > 0);
    assert_eq!(load["successful_calls"], load["attempted_calls"], "every call through the proxy completes: {load}");
    assert!(summary["capacity"]["estimate"]["mean_cps"].as_f64().unwrap() > 0.0);

    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert_eq!(html.matches("<svg class=\"plot\"").count(), 4);
    assert!(!html.contains("no data"));
    assert!(!html.contains("<script"), "self-contained, no script");
    assert!(out.join("results.sqlite").exists());

    if !have("chromium") {
        return;
    }
    let url = format!("file://{}", out.join("index.html").display());
    let shot = out.join("screenshot.png");
    let status = Command::new("timeout")
        .args(["60", "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1100,3200"])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(&url)
        .output()
        .unwrap();
    assert!(shot.exists(), "{}", String::from_utf8_lossy(&status.stderr));
    let png = std::fs::read(&shot).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    // A blank page compresses to a few kilobytes; plots and tables do not.
    assert!(png.len() > 100_000, "screenshot of {} bytes", png.len());
    // The DOM the browser built holds every plot with its lines drawn.
    let dom = Command::new("timeout")
        .args(["60", "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom"])
        .arg(&url)
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dom.stdout);
    assert_eq!(dom.matches("<svg class=\"plot\"").count(), 4, "{}", &dom[..dom.len().min(400)]);
    assert!(dom.matches("<polyline").count() >= 10);
}
