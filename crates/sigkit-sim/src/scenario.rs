//! Scenario files (TOML): topology, service model, timers, traffic,
//! detectors and the handler. Defaults are the SIP overload thesis's
//! (chapter 4); see docs/overload.md for each value's source.

use std::path::Path;

use serde::{Deserialize, Serialize};

pub use sigkit_overload::config::{D1Config, D2Config, D2MeanConfig};

/// Why a scenario could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The scenario file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file as given.
        path: String,
        /// What reading it reported.
        source: std::io::Error,
    },
    /// The text is not TOML, or not the scenario's schema (an unknown key,
    /// a value of the wrong type, a required key missing).
    #[error("bad scenario TOML: {0}")]
    Toml(#[from] toml::de::Error),
    /// A value is out of range or inconsistent with another
    /// ([`Scenario::validate`]), or an override could not be applied.
    #[error("bad scenario: {field}: {reason}")]
    Invalid {
        /// The key at fault, dotted with array indices
        /// (`proxies[1].parse_share`, `handler.trigger`).
        field: String,
        /// The range or rule it breaks, with the value found.
        reason: String,
    },
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> ScenarioError {
    ScenarioError::Invalid { field: field.into(), reason: reason.into() }
}

/// One simulated experiment.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name, used in tables.
    #[serde(default)]
    pub name: String,
    /// What the scenario reproduces.
    #[serde(default)]
    pub description: String,
    /// Seconds during which the sources send (thesis §4.3.2: 700 s).
    #[serde(default = "defaults::duration")]
    pub duration: f64,
    /// Seconds simulated after `duration`, the sources still sending, so
    /// that every transaction started before `duration` ends (Timer F is
    /// 64·T1); nothing after `duration` is recorded.
    #[serde(default = "defaults::drain")]
    pub drain: f64,
    /// The steady-state window [from, to) whose transactions decide
    /// collapse (thesis §4.1.1 and §4.3.2: 600–700 s).
    #[serde(default = "defaults::collapse_window")]
    pub collapse_window: [f64; 2],
    /// A run has collapsed when fewer than this share of the window's
    /// transactions got a 200 (the thesis's collapsed runs end at a success
    /// rate of 0 to 0.35, the others at 1; Figure 4.36).
    #[serde(default = "defaults::collapse_threshold")]
    pub collapse_threshold: f64,
    /// The RFC 3261 timers every UAC and proxy client transaction uses.
    #[serde(default)]
    pub timers: Timers,
    /// The proxies from the UAC side to the UAS side; the last is the one
    /// that overloads, the one before it detects and handles.
    pub proxies: Vec<ProxyConfig>,
    /// Delay and loss of every link (all alike).
    #[serde(default)]
    pub links: LinkConfig,
    /// Poisson sources of new non-INVITE transactions at the UAC; they add up.
    pub sources: Vec<Source>,
    /// The congestion detectors at the upstream proxy (thesis §4.2).
    #[serde(default)]
    pub detectors: Detectors,
    /// What the upstream proxy does when its trigger fires (default:
    /// nothing, plain RFC 3261).
    #[serde(default)]
    pub handler: Handler,
    /// A registration workload beside the sources (thesis §4.5.2).
    #[serde(default)]
    pub registration: Option<Registration>,
    /// A presence re-subscription burst beside the sources (thesis §4.5.1).
    #[serde(default)]
    pub presence: Option<Presence>,
}

/// Point-to-point presence after a partial outage (thesis §4.5.1, Figure
/// 4.48): `watchers` each re-subscribe to `presentities` presentities within
/// `spread` seconds from `start`; each SUBSCRIBE that reaches its
/// presentity is answered 200 and followed by a NOTIFY, and by another
/// NOTIFY `state_change` seconds later (the presentity changes its state);
/// a watcher that got no NOTIFY `notify_timeout` seconds after sending a
/// SUBSCRIBE sends it again. A subscription is active once its watcher got
/// a NOTIFY.
///
/// The NOTIFY goes from the presentity to the watcher, the other way
/// through the chain; the model sends it the same way as the SUBSCRIBE, so
/// it costs proxy 2 one transaction as it would, but it also passes proxy
/// 1's handler (see docs/overload.md).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Presence {
    /// Watchers that re-subscribe (thesis: 50).
    pub watchers: u32,
    /// Presentities in each watcher's list (thesis: 4).
    #[serde(default = "defaults::presentities")]
    pub presentities: u32,
    /// When the SUBSCRIBEs start, seconds (thesis: 30).
    #[serde(default = "defaults::registration_start")]
    pub start: f64,
    /// They fall uniformly within this many seconds (thesis: 10).
    #[serde(default = "defaults::registration_spread")]
    pub spread: f64,
    /// Seconds after its SUBSCRIBE without a NOTIFY before a watcher
    /// subscribes again (thesis: 90).
    #[serde(default = "defaults::notify_timeout")]
    pub notify_timeout: f64,
    /// Seconds after a presentity got a subscription until it changes its
    /// state and notifies again (thesis: 250).
    #[serde(default = "defaults::state_change")]
    pub state_change: f64,
}

/// Registration clients (thesis §4.5.2, Figure 4.61): each registers with a
/// REGISTER, challenged by 401, and a REGISTER with credentials, answered
/// 200 with an Expires; it registers again when that expires, and retries
/// `retry` seconds after any failure.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Registration {
    /// Clients (thesis: 200).
    pub clients: u32,
    /// When the first attempts start, seconds (thesis: 30).
    #[serde(default = "defaults::registration_start")]
    pub start: f64,
    /// The first attempts fall uniformly within this many seconds (thesis:
    /// 10, so 20 REGISTER pairs per second).
    #[serde(default = "defaults::registration_spread")]
    pub spread: f64,
    /// The registrar's Expires, seconds (thesis: 300).
    #[serde(default = "defaults::registration_expires")]
    pub expires: f64,
    /// The registrar draws Expires uniformly from [min_expires, expires].
    #[serde(default)]
    pub random_expiry: bool,
    /// The least Expires when randomised (thesis: 5 s, Timer K).
    #[serde(default = "defaults::registration_min_expires")]
    pub min_expires: f64,
    /// Seconds to wait after a failed attempt (thesis: 10).
    #[serde(default = "defaults::registration_retry")]
    pub retry: f64,
}

/// RFC 3261 §17.1.2 timers, in seconds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timers {
    /// RTT estimate; Timer E starts at T1, Timer F is 64·T1, Timer J 64·T1.
    #[serde(default = "defaults::t1")]
    pub t1: f64,
    /// Cap of Timer E's doubling.
    #[serde(default = "defaults::t2")]
    pub t2: f64,
    /// Timer K (UDP).
    #[serde(default = "defaults::t4")]
    pub t4: f64,
    /// Transmissions of a request at most, the first included (11 with the
    /// default timers, thesis §2.1.2).
    #[serde(default = "defaults::max_transmissions")]
    pub max_transmissions: u32,
}

impl Default for Timers {
    fn default() -> Self {
        Timers {
            t1: defaults::t1(),
            t2: defaults::t2(),
            t4: defaults::t4(),
            max_transmissions: defaults::max_transmissions(),
        }
    }
}

/// A transaction-stateful proxy: one processor serving four strict-priority
/// FCFS queues, each message served twice (parse, then route; thesis
/// §3.3.2, Figures 3.7 and 3.8).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyConfig {
    /// A label for the reader of the scenario file (`proxy1`); the
    /// simulation numbers proxies by position and does not use it.
    #[serde(default)]
    pub name: String,
    /// Transactions per second the processor serves at parse share 0.2: the
    /// work W = 1/capacity of one transaction (request and response, both
    /// passes; thesis §4.1.1: 100 tps, 10 ms).
    pub capacity_tps: f64,
    /// Share of W spent parsing the two messages (thesis §4.4.1: 20 %; SIP
    /// offload: 12.8 % and 7.2 %). Routing keeps its share, so offload
    /// shortens the total.
    #[serde(default = "defaults::parse_share")]
    pub parse_share: f64,
    /// Share of W spent routing the two messages.
    #[serde(default = "defaults::route_share")]
    pub route_share: f64,
    /// Share of W spent matching the two messages to their transactions,
    /// in the first pass (the transaction manager of Figure 3.8), out of
    /// the routing share: a repeated message costs parse and match only.
    #[serde(default = "defaults::match_share")]
    pub match_share: f64,
    /// Part of the rest of the routing share that the request takes; the response takes
    /// the rest (a response costs less than a request, thesis §3.3.2).
    #[serde(default = "defaults::request_route_part")]
    pub request_route_part: f64,
    /// Share of W that sending one of the proxy's own retransmissions takes
    /// (queue 2 of Figure 3.7).
    #[serde(default = "defaults::retransmit_share")]
    pub retransmit_share: f64,
    /// Capacities of the four queues (thesis Figure 3.7).
    #[serde(default)]
    pub buffers: Buffers,
}

/// Capacities of the four queues, in messages; a message that finds its
/// queue full is lost.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Buffers {
    /// Queue 1, highest priority: messages from the network not parsed yet
    /// (default 200; at least 1).
    #[serde(default = "defaults::buffer")]
    pub unparsed: usize,
    /// Queue 2: the proxy's own retransmissions of requests (Timer E) and
    /// of stored responses (default 200; at least 1).
    #[serde(default = "defaults::buffer")]
    pub retransmissions: usize,
    /// Queue 3: parsed responses waiting to be routed (default 200; at
    /// least 1).
    #[serde(default = "defaults::buffer")]
    pub responses: usize,
    /// Queue 4, lowest priority: parsed requests waiting to be routed
    /// (default 200; at least 1).
    #[serde(default = "defaults::buffer")]
    pub requests: usize,
}

impl Default for Buffers {
    fn default() -> Self {
        Buffers {
            unparsed: defaults::buffer(),
            retransmissions: defaults::buffer(),
            responses: defaults::buffer(),
            requests: defaults::buffer(),
        }
    }
}

/// Every link: constant delay and Bernoulli loss (thesis §3.3.3).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// One-way delay in seconds (thesis §4.1.1: 0.3 ms).
    #[serde(default = "defaults::link_delay")]
    pub delay: f64,
    /// Probability that a message is lost (thesis: 0).
    #[serde(default)]
    pub loss: f64,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig { delay: defaults::link_delay(), loss: 0.0 }
    }
}

/// A Poisson source of new transactions at `rate` per second in
/// [start, end) (end defaults to the end of the run, drain included).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// Mean new transactions per second (exponential gaps); positive, at
    /// most 100,000.
    pub rate: f64,
    /// Seconds from the start of the run at which the source begins
    /// (default 0).
    #[serde(default)]
    pub start: f64,
    /// Seconds from the start of the run at which it stops, after `start`;
    /// `None`, or a later time, stops it at the end of the drain.
    #[serde(default)]
    pub end: Option<f64>,
}

/// The detectors at the upstream proxy; all run and are recorded every
/// second, whichever one triggers the handler.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Detectors {
    /// D1, delay-based: the 95th percentile of fRpD against a threshold
    /// (thesis §4.2.2).
    #[serde(default)]
    pub d1: D1Config,
    /// D2, pending-transaction-based: Wald's sequential test of the
    /// standard deviation of κ = ΔPT/Δλ (thesis §4.2.3).
    #[serde(default)]
    pub d2: D2Config,
    /// D2's variant testing κ's mean with known σ (thesis §5.2.3).
    #[serde(default)]
    pub d2_mean: D2MeanConfig,
}

/// What the upstream proxy does about its congested next hop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum HandlerKind {
    /// Nothing: plain RFC 3261.
    #[default]
    None,
    /// H1: raise T1 toward the next hop (thesis §4.3.2).
    T1,
    /// H2: cap pending outgoing transactions, 503 above it (thesis §4.3.3).
    Cap503,
    /// RFC 7339 loss-based overload control: the next hop sets `oc` in its
    /// Via, the upstream proxy rejects that share of new requests with 503.
    OcLoss,
}

/// When the handler acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// All the time (a static setting, as T1 = 1 s in thesis §4.3.2).
    #[default]
    Always,
    /// While D1 finds the next hop congested.
    D1,
    /// While D2 (variance test) finds it congested.
    D2,
    /// While D2's mean-shift variant finds it congested.
    D2Mean,
    /// When the next hop says so in its Via (`oc_t1`, thesis Listing 4.2).
    Via,
    /// From `handler.at` seconds on, for the rest of the run (thesis §4.3.2,
    /// Figures 4.38 and 4.39: T1 raised at 50 s or at 100 s).
    At,
}

/// The handler at the upstream proxy.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Handler {
    /// Which handler acts (default none); any but `none` needs at least
    /// two proxies.
    #[serde(default)]
    pub kind: HandlerKind,
    /// When it acts (default always); `via` only with `kind = "t1"`.
    #[serde(default)]
    pub trigger: Trigger,
    /// H1: the raised T1 in seconds (thesis: 1 s).
    #[serde(default = "defaults::one")]
    pub t1: f64,
    /// With trigger `at`: when the handler starts acting, seconds.
    #[serde(default)]
    pub at: f64,
    /// H1: seconds a raise lasts after the last trigger (`oc_t1_validity`,
    /// thesis Listing 4.3: 60 s).
    #[serde(default = "defaults::t1_validity")]
    pub validity: f64,
    /// H1 with trigger `via`: the next hop signals `oc_t1` while its
    /// processor was busy at least this share of the last five seconds.
    #[serde(default = "defaults::signal_utilisation")]
    pub signal_utilisation: f64,
    /// H2: pending outgoing transactions at most while congested.
    #[serde(default = "defaults::cap")]
    pub cap: usize,
    /// RFC 7339: the next hop's target utilisation of its occupancy
    /// algorithm.
    #[serde(default = "defaults::oc_target")]
    pub oc_target: f64,
    /// RFC 7339: seconds between the next hop's `oc` updates; `oc-validity`
    /// is twice that.
    #[serde(default = "defaults::one")]
    pub oc_interval: f64,
    /// RFC 7339: the least share of new requests the next hop admits.
    #[serde(default = "defaults::oc_min_admit")]
    pub oc_min_admit: f64,
}

impl Default for Handler {
    fn default() -> Self {
        toml::from_str("").expect("handler defaults")
    }
}

mod defaults {
    pub fn presentities() -> u32 {
        4
    }
    pub fn notify_timeout() -> f64 {
        90.0
    }
    pub fn state_change() -> f64 {
        250.0
    }
    pub fn registration_start() -> f64 {
        30.0
    }
    pub fn registration_spread() -> f64 {
        10.0
    }
    pub fn registration_expires() -> f64 {
        300.0
    }
    pub fn registration_min_expires() -> f64 {
        5.0
    }
    pub fn registration_retry() -> f64 {
        10.0
    }
    pub fn duration() -> f64 {
        700.0
    }
    pub fn drain() -> f64 {
        70.0
    }
    pub fn collapse_window() -> [f64; 2] {
        [600.0, 700.0]
    }
    pub fn collapse_threshold() -> f64 {
        0.9
    }
    pub fn t1() -> f64 {
        0.5
    }
    pub fn t2() -> f64 {
        4.0
    }
    pub fn t4() -> f64 {
        5.0
    }
    pub fn max_transmissions() -> u32 {
        11
    }
    pub fn parse_share() -> f64 {
        0.2
    }
    pub fn route_share() -> f64 {
        0.8
    }
    pub fn match_share() -> f64 {
        0.03
    }
    pub fn request_route_part() -> f64 {
        0.625
    }
    pub fn retransmit_share() -> f64 {
        0.1
    }
    pub fn buffer() -> usize {
        200
    }
    pub fn link_delay() -> f64 {
        0.0003
    }
    pub fn one() -> f64 {
        1.0
    }
    pub fn t1_validity() -> f64 {
        60.0
    }
    pub fn signal_utilisation() -> f64 {
        0.95
    }
    pub fn cap() -> usize {
        50
    }
    pub fn oc_target() -> f64 {
        0.9
    }
    pub fn oc_min_admit() -> f64 {
        0.05
    }
}

/// Applies `overrides` (dotted key, TOML value) to a scenario's text.
pub fn apply_overrides(text: &str, overrides: &[(String, String)]) -> Result<String, ScenarioError> {
    let mut doc: toml::Value = toml::from_str(text)?;
    for (key, value) in overrides {
        let parsed: toml::Value = match toml::from_str::<toml::Table>(&format!("v = {value}")) {
            Ok(mut t) => t.remove("v").expect("the key just written"),
            Err(_) => toml::Value::String(value.clone()),
        };
        let parts: Vec<&str> = key.split('.').collect();
        let mut at = &mut doc;
        for (i, part) in parts.iter().enumerate() {
            let last = i + 1 == parts.len();
            at = match at {
                toml::Value::Table(t) => {
                    if last {
                        t.insert(part.to_string(), parsed.clone());
                        break;
                    }
                    t.entry(part.to_string()).or_insert_with(|| toml::Value::Table(Default::default()))
                }
                toml::Value::Array(a) => {
                    let n: usize = part.parse().map_err(|_| invalid(key, format!("`{part}` is not an array index")))?;
                    let len = a.len();
                    let slot = a.get_mut(n).ok_or_else(|| invalid(key, format!("index {n} beyond {len} elements")))?;
                    if last {
                        *slot = parsed.clone();
                        break;
                    }
                    slot
                }
                _ => return Err(invalid(key, format!("`{part}` is inside a value, not a table"))),
            };
        }
    }
    Ok(toml::to_string(&doc).expect("a TOML value serialises"))
}

impl Scenario {
    /// Parses and checks a scenario.
    pub fn from_toml_str(text: &str) -> Result<Scenario, ScenarioError> {
        let scenario: Scenario = toml::from_str(text)?;
        scenario.validate()?;
        Ok(scenario)
    }

    /// Reads, parses and checks a scenario file; its name defaults to the
    /// file's stem.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        Scenario::load_with(path, &[])
    }

    /// As [`Scenario::load`], with `overrides` applied first: each is a
    /// dotted key (array elements by index, `proxies.1.buffers.requests`)
    /// and a TOML value (`50`, `0.66`, `"d1"`, `[30.0, 600.0]`); a bare word
    /// is taken as a string. A key may create a table entry but not an
    /// array element.
    pub fn load_with(path: &Path, overrides: &[(String, String)]) -> Result<Scenario, ScenarioError> {
        let text = std::fs::read_to_string(path)
            .map_err(|source| ScenarioError::Read { path: path.display().to_string(), source })?;
        let text = if overrides.is_empty() { text } else { apply_overrides(&text, overrides)? };
        let mut scenario = Scenario::from_toml_str(&text)?;
        if scenario.name.is_empty() {
            scenario.name = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        }
        Ok(scenario)
    }

    /// Checks ranges and consistency: the first field out of range is the
    /// error.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        self.validate_run()?;
        self.validate_proxies()?;
        self.validate_links_and_sources()?;
        self.validate_detectors()?;
        self.validate_handler()?;
        self.validate_workloads()
    }

    /// The run's length, its collapse window and the SIP timers.
    fn validate_run(&self) -> Result<(), ScenarioError> {
        positive("duration", self.duration)?;
        if !(self.drain.is_finite() && self.drain >= 0.0) {
            return Err(invalid("drain", format!("must be 0 or more, not {}", self.drain)));
        }
        if self.duration > 1.0e6 {
            return Err(invalid("duration", "at most 1,000,000 s"));
        }
        let [from, to] = self.collapse_window;
        if !(from.is_finite() && to.is_finite() && 0.0 <= from && from < to && to <= self.duration) {
            return Err(invalid(
                "collapse_window",
                format!("must be [from, to] with 0 <= from < to <= duration ({}), not [{from}, {to}]", self.duration),
            ));
        }
        share("collapse_threshold", self.collapse_threshold)?;
        let t = &self.timers;
        positive("timers.t1", t.t1)?;
        positive("timers.t2", t.t2)?;
        positive("timers.t4", t.t4)?;
        if !(1..=64).contains(&t.max_transmissions) {
            return Err(invalid("timers.max_transmissions", "must lie in 1..=64"));
        }
        Ok(())
    }

    /// The proxies and their buffers.
    fn validate_proxies(&self) -> Result<(), ScenarioError> {
        if self.proxies.is_empty() {
            return Err(invalid("proxies", "at least one proxy is needed"));
        }
        if self.proxies.len() > 8 {
            return Err(invalid("proxies", "at most 8 proxies"));
        }
        for (i, p) in self.proxies.iter().enumerate() {
            let f = |name: &str| format!("proxies[{i}].{name}");
            positive(&f("capacity_tps"), p.capacity_tps)?;
            share(&f("parse_share"), p.parse_share)?;
            share(&f("route_share"), p.route_share)?;
            share(&f("request_route_part"), p.request_route_part)?;
            share(&f("match_share"), p.match_share)?;
            if p.match_share > p.route_share {
                return Err(invalid(f("match_share"), "is part of route_share and cannot exceed it"));
            }
            share(&f("retransmit_share"), p.retransmit_share)?;
            if p.parse_share + p.route_share <= 0.0 {
                return Err(invalid(f("parse_share"), "parse and route shares cannot both be 0"));
            }
            let b = &p.buffers;
            for (name, cap) in [
                ("unparsed", b.unparsed),
                ("retransmissions", b.retransmissions),
                ("responses", b.responses),
                ("requests", b.requests),
            ] {
                if cap == 0 {
                    return Err(invalid(f(&format!("buffers.{name}")), "must hold at least one message"));
                }
            }
        }
        Ok(())
    }

    /// The links and the call sources.
    fn validate_links_and_sources(&self) -> Result<(), ScenarioError> {
        if !(self.links.delay.is_finite() && self.links.delay >= 0.0) {
            return Err(invalid("links.delay", format!("must be 0 or more seconds, not {}", self.links.delay)));
        }
        share("links.loss", self.links.loss)?;
        if self.sources.is_empty() {
            return Err(invalid("sources", "at least one source is needed"));
        }
        for (i, s) in self.sources.iter().enumerate() {
            positive(&format!("sources[{i}].rate"), s.rate)?;
            if s.rate > 100_000.0 {
                return Err(invalid(format!("sources[{i}].rate"), "at most 100,000 per second"));
            }
            if !(s.start.is_finite() && s.start >= 0.0) {
                return Err(invalid(format!("sources[{i}].start"), "must be 0 or more seconds"));
            }
            if let Some(end) = s.end {
                if !(end.is_finite() && end > s.start) {
                    return Err(invalid(format!("sources[{i}].end"), format!("must be after start ({})", s.start)));
                }
            }
        }
        Ok(())
    }

    /// The overload detectors (the SIP overload thesis §4.3).
    fn validate_detectors(&self) -> Result<(), ScenarioError> {
        let d = &self.detectors;
        positive("detectors.d1.window", d.d1.window)?;
        positive("detectors.d1.interval", d.d1.interval)?;
        positive("detectors.d1.threshold", d.d1.threshold)?;
        share("detectors.d1.percentile", d.d1.percentile)?;
        positive("detectors.d2.interval", d.d2.interval)?;
        positive("detectors.d2.sigma0", d.d2.sigma0)?;
        positive("detectors.d2.sigma1", d.d2.sigma1)?;
        if d.d2.sigma1 <= d.d2.sigma0 {
            return Err(invalid("detectors.d2.sigma1", "must exceed sigma0"));
        }
        if !d.d2.mu.is_finite() {
            return Err(invalid("detectors.d2.mu", "must be a number"));
        }
        for (field, v) in [
            ("detectors.d2.alpha", d.d2.alpha),
            ("detectors.d2.beta", d.d2.beta),
            ("detectors.d2_mean.alpha", d.d2_mean.alpha),
            ("detectors.d2_mean.beta", d.d2_mean.beta),
        ] {
            if !(v > 0.0 && v < 0.5) {
                return Err(invalid(field, format!("must lie in (0, 0.5), not {v}")));
            }
        }
        positive("detectors.d2_mean.sigma", d.d2_mean.sigma)?;
        if d.d2_mean.mu1.partial_cmp(&d.d2_mean.mu0) != Some(std::cmp::Ordering::Greater) {
            return Err(invalid("detectors.d2_mean.mu1", "must exceed mu0"));
        }
        Ok(())
    }

    /// The overload handler.
    fn validate_handler(&self) -> Result<(), ScenarioError> {
        let h = &self.handler;
        if h.kind != HandlerKind::None && self.proxies.len() < 2 {
            return Err(invalid("handler.kind", "a handler needs two proxies: one upstream of the overloaded one"));
        }
        if h.trigger == Trigger::Via && h.kind != HandlerKind::T1 {
            return Err(invalid("handler.trigger", "`via` triggers only the `t1` handler (oc_t1 in the Via)"));
        }
        positive("handler.t1", h.t1)?;
        if !(h.at.is_finite() && h.at >= 0.0) {
            return Err(invalid("handler.at", "must be 0 or more seconds"));
        }
        positive("handler.validity", h.validity)?;
        share("handler.signal_utilisation", h.signal_utilisation)?;
        if h.cap == 0 {
            return Err(invalid("handler.cap", "must be at least 1"));
        }
        share("handler.oc_target", h.oc_target)?;
        positive("handler.oc_target", h.oc_target)?;
        positive("handler.oc_interval", h.oc_interval)?;
        share("handler.oc_min_admit", h.oc_min_admit)?;
        Ok(())
    }

    /// The presence and registration workloads.
    fn validate_workloads(&self) -> Result<(), ScenarioError> {
        if let Some(p) = &self.presence {
            if p.watchers == 0 || p.presentities == 0 || u64::from(p.watchers) * u64::from(p.presentities) > 1_000_000 {
                return Err(invalid("presence.watchers", "watchers × presentities must lie in 1..=1000000"));
            }
            if !(p.start.is_finite() && p.start >= 0.0 && p.spread.is_finite() && p.spread >= 0.0) {
                return Err(invalid("presence.start", "start and spread must be 0 or more seconds"));
            }
            positive("presence.notify_timeout", p.notify_timeout)?;
            positive("presence.state_change", p.state_change)?;
        }
        if let Some(r) = &self.registration {
            if r.clients == 0 || r.clients > 1_000_000 {
                return Err(invalid("registration.clients", "must lie in 1..=1000000"));
            }
            if !(r.start.is_finite() && r.start >= 0.0) {
                return Err(invalid("registration.start", "must be 0 or more seconds"));
            }
            if !(r.spread.is_finite() && r.spread >= 0.0) {
                return Err(invalid("registration.spread", "must be 0 or more seconds"));
            }
            positive("registration.expires", r.expires)?;
            positive("registration.min_expires", r.min_expires)?;
            positive("registration.retry", r.retry)?;
            if r.min_expires > r.expires {
                return Err(invalid("registration.min_expires", "cannot exceed expires"));
            }
        }
        Ok(())
    }
}

/// Checks that `field`, `v`, is a positive number.
fn positive(field: &str, v: f64) -> Result<(), ScenarioError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(invalid(field, format!("must be a positive number, not {v}")))
    }
}

/// Checks that `field`, `v`, is a share: a number in [0, 1].
fn share(field: &str, v: f64) -> Result<(), ScenarioError> {
    if v.is_finite() && (0.0..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(invalid(field, format!("must lie in [0, 1], not {v}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"
        [[proxies]]
        capacity_tps = 100
        [[sources]]
        rate = 80
    "#;

    #[test]
    fn defaults_are_the_thesis_values() {
        let s = Scenario::from_toml_str(MINIMAL).unwrap();
        assert_eq!((s.timers.t1, s.timers.t2, s.timers.max_transmissions), (0.5, 4.0, 11));
        assert_eq!(s.proxies[0].parse_share, 0.2);
        assert_eq!(s.links.delay, 0.0003);
        assert_eq!((s.detectors.d1.window, s.detectors.d1.interval, s.detectors.d1.threshold), (5.0, 1.0, 0.5));
        let d2 = &s.detectors.d2;
        assert_eq!((d2.sigma0, d2.sigma1, d2.alpha, d2.beta), (0.962, 20.392, 0.1, 0.05));
        assert_eq!(s.handler.kind, HandlerKind::None);
    }

    #[test]
    fn overrides_set_nested_keys_and_array_elements() {
        let text = format!("{MINIMAL}\n[[proxies]]\ncapacity_tps = 100\n");
        let set = |k: &str, v: &str| (k.to_string(), v.to_string());
        let out = apply_overrides(
            &text,
            &[
                set("sources.0.rate", "95"),
                set("proxies.1.buffers.requests", "50"),
                set("handler.kind", "cap503"),
                set("handler.trigger", "\"d1\""),
                set("collapse_window", "[30.0, 700.0]"),
            ],
        )
        .unwrap();
        let s = Scenario::from_toml_str(&out).unwrap();
        assert_eq!(s.sources[0].rate, 95.0);
        assert_eq!(s.proxies[1].buffers.requests, 50);
        assert_eq!(s.proxies[1].buffers.unparsed, 200);
        assert_eq!((s.handler.kind, s.handler.trigger), (HandlerKind::Cap503, Trigger::D1));
        assert_eq!(s.collapse_window, [30.0, 700.0]);
        let err = apply_overrides(&text, &[set("sources.3.rate", "1")]).unwrap_err().to_string();
        assert!(err.contains("sources.3.rate"), "{err}");
    }

    #[test]
    fn bad_input_names_the_field_and_reason() {
        let cases = [
            ("[[proxies]]\ncapacity_tps = -1\n[[sources]]\nrate = 1", "proxies[0].capacity_tps"),
            ("[[proxies]]\ncapacity_tps = 100\n[[sources]]\nrate = 0", "sources[0].rate"),
            ("proxies = []\n[[sources]]\nrate = 1", "proxies"),
            ("collapse_window = [50, 10]\n[[proxies]]\ncapacity_tps = 1\n[[sources]]\nrate = 1", "collapse_window"),
            ("[[proxies]]\ncapacity_tps = 100\n[[sources]]\nrate = 1\n[handler]\nkind = \"t1\"", "handler.kind"),
        ];
        for (text, field) in cases {
            let err = Scenario::from_toml_str(text).unwrap_err().to_string();
            assert!(err.contains(field), "{err} should name {field}");
        }
        let typo = Scenario::from_toml_str("[[proxies]]\ncapacity = 100\n[[sources]]\nrate = 1").unwrap_err();
        assert!(typo.to_string().contains("capacity"), "{typo}");
        let kind = Scenario::from_toml_str(&format!("{MINIMAL}\n[handler]\nkind = \"magic\"")).unwrap_err();
        assert!(kind.to_string().contains("magic"), "{kind}");
    }
}
