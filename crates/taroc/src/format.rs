//! The compressed packet formats (parse/emit pairs); the layout is
//! documented in the crate's top-level docs.

mod co;
mod common;
mod feedback;
mod fields;
mod ir;
#[cfg(test)]
mod tests;

pub use crate::crc::{crc3, crc7, crc8, fold_checksum};
pub use co::*;
pub use common::*;
pub use feedback::*;
pub use fields::*;
pub use ir::*;
