//! # sigkit-eval
//!
//! What sigkit measures with: the SIP call-flow corpus format
//! ([`corpus`]) and flow runs between two in-process SigComp endpoints
//! ([`flow`]), reproducing the SigComp performance thesis's per-message tables;
//! the studies `sigkit eval` runs ([`study`], [`ran`], [`capacity`]) and the
//! real peers it uses where installed ([`peers`]). Its report is drawn by
//! sigkit-report.

#![forbid(unsafe_code)]

pub mod bench;
pub mod capacity;
pub mod corpus;
pub mod flow;
pub mod link;
pub mod pcap;
pub mod peers;
pub mod published;
pub mod ran;
pub mod study;
