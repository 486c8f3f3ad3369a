//! # sigkit-loadgen
//!
//! A SIP load generator. Calls follow a scenario in SIPp's XML format (the
//! common subset: send, recv, pause, nop, label, timewait, response-time
//! measurements, SIPp's keywords and CSV injection), or a built-in one:
//! `uac` and `uas`, the simple call of the SIP performance-evaluation
//! framework thesis (Sangvanphant 2009: INVITE, 100/180, 200, ACK, hold,
//! BYE, 200) with the messages of SIPp's built-ins, and `register` /
//! `registrar` (REGISTER with digest authentication). Over UDP (one
//! socket) or TCP (one connection), with RFC 3261 retransmission, SigComp
//! on demand, load patterns (constant, stepped, ramp, Poisson, bursts)
//! that can change while running, and metrics per interval and per step
//! with HdrHistogram percentiles.
//!
//! [`engine`] runs the calls, sans-IO; [`runtime`] runs it on tokio. A
//! UAS can sit behind a server of limited capacity ([`service`]), the
//! bottleneck of an overload experiment. [`screen`] makes SIPp's
//! scenario screen (a row per scenario step with its messages,
//! retransmissions, timeouts and unexpected messages) from the run's
//! [`Progress`] snapshots, and [`trace`] writes SIPp's trace files.
//!
//! ```no_run
//! # async fn f() -> Result<(), sigkit_loadgen::LoadError> {
//! use sigkit_loadgen::{LoadConfig, Role};
//! let mut config = LoadConfig { role: Role::Uac, rate: 100.0, max_calls: Some(1000), ..LoadConfig::default() };
//! config.engine.remote = Some("127.0.0.1:5060".parse().unwrap());
//! let report = sigkit_loadgen::run(config, None).await?;
//! println!("{} calls/s", report.summary.calls_per_s);
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

pub mod auth;
pub mod control;
pub mod corpus;
pub mod engine;
pub mod inject;
pub mod metrics;
pub mod pattern;
pub mod runtime;
pub mod scenario;
pub mod screen;
pub mod service;
pub mod sigcomp_layer;
pub mod sut;
pub mod trace;
pub mod transport;
mod xml_limits;

pub use control::ControlCommand;
pub use engine::{Engine, EngineConfig, Transport};
pub use inject::Injection;
pub use metrics::{
    Interval, Moments, Percentiles, Recorder, SippTotals, StepMessages, StepReport, Summary, SutUsage, Tail,
    TransactionTimes,
};
pub use pattern::{Arrivals, Pattern, RateController};
pub use runtime::{run, Control, EndReason, LoadConfig, LoadError, Prepared, Progress, Role, RunReport};
pub use scenario::{Scenario, ScenarioError};
pub use service::{ServiceCounts, ServiceModel, ServiceModelError};
pub use sigkit_sip::transaction::Timers;
pub use trace::{TraceConfig, TraceError};
