//! SIP overload control shared by `sigkit proxy` and the simulator
//! (`sigkit-sim`): the implicit congestion detectors of the SIP overload
//! thesis (§4.2: D1 on the final response delay, D2 on pending
//! transactions, and the sequential test of κ's mean), their parameters,
//! and the overload-control parameters a response's topmost Via carries
//! (the thesis's `oc_t1`, RFC 7339's `oc`). The proxy runs them on real
//! traffic; the simulator on its model; neither depends on the other.

pub mod config;
pub mod detect;
pub mod via;
