//! One step's figures and its row of the printed table.

/// The table's header: one row per step.
pub const HEADER: &str = "| run | offered req/s | sent req/s | msgs/s (req+resp) | loss | load p50 / p99 µs | probe p50 / p99 µs (n) | proxy handling p50 / p99 µs | run-queue wait per slice µs: proxy / generator | CPU proxy | CPU generator | CPU upstream | CPU others | proxy RSS MiB | send errors / decompression failures |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|";

pub struct StepResult {
    pub offered: u64,
    pub sent_rate: f64,
    pub sent: u64,
    pub received: u64,
    pub send_errors: u64,
    pub decompression_failures: u64,
    pub p50_us: f64,
    pub p99_us: f64,
    /// The probe's round trip p50 and p99 (µs), and its sample count.
    pub probe: Option<(f64, f64, u64)>,
    pub seconds: f64,
    /// Percent of one core: proxy, generator, upstream, the rest.
    pub cpu: [f64; 4],
    pub rss_mib: f64,
    /// The proxy's handling time p50 / p99 (µs, bucket bounds).
    pub handling: Option<(f64, f64)>,
    /// Mean run-queue wait per time slice (µs): proxy, generator.
    pub waits: [f64; 2],
}

impl StepResult {
    pub fn loss(&self) -> f64 {
        1.0 - self.received as f64 / self.sent.max(1) as f64
    }

    /// Whether the step carried its offered rate: under 1 % lost, and at
    /// least 97 % of the rate sent.
    pub fn good(&self) -> bool {
        self.loss() < 0.01 && self.sent_rate >= 0.97 * self.offered as f64
    }

    /// Messages through the proxy's terminal side per second: requests
    /// in and responses out.
    pub fn messages_per_s(&self) -> f64 {
        (self.sent + self.received) as f64 / self.seconds
    }

    /// The proxy's CPU time per request and its response (µs).
    pub fn proxy_us_per_request(&self) -> f64 {
        self.cpu[0] * 10_000.0 / self.sent_rate.max(1.0)
    }

    fn probe_text(&self) -> String {
        match self.probe {
            Some((p50, p99, n)) => format!("{p50:.0} / {p99:.0} ({n})"),
            None => "—".into(),
        }
    }

    pub fn row(&self, label: &str) -> String {
        format!(
            "| {label} | {} | {:.0} | {:.0} | {:.2} % | {:.0} / {:.0} | {} | {} | {:.0} / {:.0} | {:.0} % ({:.0} µs/req) | {:.0} % | {:.0} % | {:.0} % | {:.0} | {} / {} |",
            self.offered,
            self.sent_rate,
            self.messages_per_s(),
            self.loss() * 100.0,
            self.p50_us,
            self.p99_us,
            self.probe_text(),
            self.handling.map_or("—".into(), |(a, b)| format!("≤ {a:.0} / ≤ {b:.0}")),
            self.waits[0],
            self.waits[1],
            self.cpu[0],
            self.proxy_us_per_request(),
            self.cpu[1],
            self.cpu[2],
            self.cpu[3],
            self.rss_mib,
            self.send_errors,
            self.decompression_failures,
        )
    }
}
