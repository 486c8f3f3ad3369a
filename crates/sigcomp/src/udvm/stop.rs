//! How a run stops: a failure, or END-MESSAGE.

use crate::error::Reason;

/// Why a run stops before its next instruction: a failure, or END-MESSAGE
/// (whose [`Outcome`] the machine then holds). It is two bytes, so operand
/// decoding and memory reads return their results in registers; the
/// [`Failure`] with its pc, opcode, cycles and details is built once, when
/// the run stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stop {
    Fail(Reason),
    End,
}

pub(super) type Res<T> = Result<T, Stop>;

#[inline]
pub(super) fn fail<T>(reason: Reason) -> Res<T> {
    Err(Stop::Fail(reason))
}
