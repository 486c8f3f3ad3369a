//! # sigkit-loadgen
//!
//! A SIP load generator: the simple call of the SIP performance-evaluation
//! framework thesis (Sangvanphant 2009: INVITE, 100/180, 200, ACK, hold, BYE, 200) placed
//! by a UAC and answered by a UAS, over UDP, with RFC 3261 retransmission
//! and call set-up delays as HdrHistogram percentiles. It interoperates
//! with SIPp's built-in `uac` and `uas` scenarios in both directions.
//!
//! [`call`] is the behaviour, sans-IO; [`runtime`] runs it on tokio.

#![forbid(unsafe_code)]

pub mod call;
pub mod metrics;
pub mod runtime;

pub use metrics::{Failure, Interval, Percentiles, Recorder, Summary};
pub use runtime::{run, LoadConfig, LoadError, Prepared, Role, RunReport};
