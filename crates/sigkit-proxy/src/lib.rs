//! # sigkit-proxy
//!
//! The SigComp edge proxy, the P-CSCF compression function of IMS and 3G
//! networks: SigComp (RFC 3320, RFC 3486, RFC 5049) toward terminals on
//! slow links, plain SIP toward the SIP server behind it (Kamailio,
//! OpenSIPS, a vendor P-CSCF), which need not know SigComp at all.
//!
//! [`core::Proxy`] is the behaviour, sans-IO; [`runtime`] runs it on tokio.

#![forbid(unsafe_code)]

pub mod admin;
pub mod compartments;
pub mod config;
pub mod connections;
pub mod core;
pub mod defence;
pub mod exposition;
pub mod hep;
pub mod locate;
pub mod metrics;
pub mod overload;
pub mod pcap;
pub mod pending;
pub mod runtime;

pub use config::{ConfigError, ProxyConfig, SipTransport};
pub use core::{Peer, Proxy, Side, Transmit};
pub use metrics::ProxyMetrics;
