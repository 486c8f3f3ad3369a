//! The state store's limit counts real memory ([`STATE_OVERHEAD_BYTES`]
//! per entry besides the value), and the resident figure follows it.
//!
//! `measured_overhead_per_state_is_within_the_constant` reads this
//! process's resident set (Linux `/proc/self/statm`), so it is the only
//! test in this file that stores many states (tests of one file run in one
//! process). `STATES=1048576` measures it at the scale the constant was
//! measured at (prints with `--nocapture`).

use sigcomp::state::{CreateOutcome, STATE_OVERHEAD_BYTES};
use sigcomp::{CompartmentId, Decompressor, Limits, Params, StateHandler};

fn params() -> Params {
    Params { dms: 131072, sms: 131072, cpb: 128, version: 2 }
}

/// Resident bytes of this process.
fn rss() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("Linux /proc");
    let pages: usize = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).expect("statm's second field");
    pages * 4096
}

/// Creates zero-length items `first..first + n`, 2048 per compartment
/// (the most an SMS of 131072 holds at 64 accounted bytes each).
fn create_empty(states: &mut StateHandler, first: u32, n: u32) -> usize {
    let mut created = 0;
    for i in first..first + n {
        let (address, instruction) = (i as u16, (i >> 16) as u16);
        if let CreateOutcome::Created(_) =
            states.create(CompartmentId(u64::from(i / 2048)), address, instruction, 6, &[], 1)
        {
            created += 1;
        }
    }
    created
}

#[test]
fn measured_overhead_per_state_is_within_the_constant() {
    let n: u32 = std::env::var("STATES").ok().and_then(|s| s.parse().ok()).unwrap_or(262_144);
    let mut d = Decompressor::new(params()).unwrap();
    d.set_limits(Limits::unlimited());
    let before = rss();
    let created = create_empty(d.states_mut(), 0, n);
    assert_eq!(created, n as usize);
    let per_state = (rss() - before) as f64 / f64::from(n);
    println!("{n} zero-length states: {per_state:.0} resident bytes each (constant {STATE_OVERHEAD_BYTES})");
    assert!(per_state <= STATE_OVERHEAD_BYTES as f64, "{per_state:.0} bytes a state");
    // The constant is a measure, not a guess far above it.
    assert!(per_state >= 0.6 * STATE_OVERHEAD_BYTES as f64, "{per_state:.0} bytes a state");
    // What the store reports of itself moves with what it holds.
    let m = d.metrics();
    assert!(m.resident_bytes >= n as usize * STATE_OVERHEAD_BYTES, "{m:?}");
    assert_eq!(d.states().real_state_bytes(), n as usize * STATE_OVERHEAD_BYTES);
}
