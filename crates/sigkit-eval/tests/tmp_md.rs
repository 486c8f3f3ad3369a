use sigkit_eval::published::*;
#[test]
fn md() {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../corpus");
    let m = measure(&corpus).unwrap();
    for (p, m) in published_compression().iter().zip(&m) {
        let ours_b = match p.measure { Measure::PayloadRatio => m.payload, _ => m.sigcomp };
        let r = m.ratio(p.measure); let t = p.their_ratio();
        let d = (r / t - 1.0) * 100.0;
        let v = if d.abs() <= 10.0 { "matches" } else if d > 0.0 { "differs (higher)" } else { "differs (lower)" };
        println!("MD| {} | {} | {:.3} ({} of {}) | {:.3} ({} of {}) | {:+.0} %, {} | {} | `{}` |", p.source, p.settings(), t, p.their_bytes, p.their_uncompressed, r, ours_b, m.uncompressed, d, v, p.why, p.command());
    }
}
