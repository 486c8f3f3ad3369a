//! # sigkit-eval
//!
//! What sigkit measures with: the SIP call-flow corpus format
//! ([`corpus`]) and flow runs between two in-process SigComp endpoints
//! ([`flow`]), reproducing the SigComp performance thesis's per-message tables.

#![forbid(unsafe_code)]

pub mod bench;
pub mod capacity;
pub mod corpus;
pub mod flow;
pub mod link;
pub mod pcap;
pub mod ran;
pub mod report;
pub mod study;
