//! The circular buffer that byte copying wraps around (RFC 3320 §8.4,
//! RFC 4896 §4), as functions of the memory alone.

use std::sync::Arc;

use super::stop::{fail, Res};
use crate::error::Reason;

/// The `len` bytes of `mem` from `start` as one slice, when the whole run
/// lies in memory and does not cross bcr (no byte copying rule applies).
#[inline(always)]
pub(super) fn contiguous_run(mem: &[u8], start: u16, len: u16, bcr: u16) -> Option<&[u8]> {
    let (s, n, r) = (usize::from(start), usize::from(len), usize::from(bcr));
    (s + n <= mem.len() && !(s < r && r < s + n)).then(|| &mem[s..s + n])
}

/// Appends `len` bytes of `mem` from `start` to `out` under byte copying
/// rules (RFC 3320 §8.4).
#[inline(always)]
pub(super) fn read_string(mem: &[u8], start: u16, len: u16, bcl: u16, bcr: u16, out: &mut Vec<u8>) -> Res<()> {
    match contiguous_run(mem, start, len, bcr) {
        Some(&[b]) => out.push(b),
        Some(run) => out.extend_from_slice(run),
        None => return read_string_wrapping(mem, start, len, bcl, bcr, out),
    }
    Ok(())
}

/// [`read_string`] into a buffer of its own, the bytes copied once.
pub(super) fn read_shared(mem: &[u8], start: u16, len: u16, bcl: u16, bcr: u16) -> Res<Arc<[u8]>> {
    if let Some(run) = contiguous_run(mem, start, len, bcr) {
        return Ok(Arc::from(run));
    }
    let mut value = Vec::with_capacity(usize::from(len));
    read_string_wrapping(mem, start, len, bcl, bcr, &mut value)?;
    Ok(value.into())
}

/// [`read_string`] a byte at a time, wrapping at bcr (or failing outside
/// memory).
#[inline(never)]
pub(super) fn read_string_wrapping(mem: &[u8], start: u16, len: u16, bcl: u16, bcr: u16, out: &mut Vec<u8>) -> Res<()> {
    let mut a = start;
    for _ in 0..len {
        match mem.get(usize::from(a)) {
            Some(&b) => out.push(b),
            None => return fail(Reason::Segfault),
        }
        a = next(a, bcl, bcr);
    }
    Ok(())
}

/// COPY-OFFSET's position: `offset` steps back from `dest`, wrapping from
/// byte_copy_left to byte_copy_right − 1 (RFC 3320 §9.2.6, RFC 4896 §4),
/// computed in constant time.
pub fn offset_back(dest: u16, offset: u16, bcl: u16, bcr: u16) -> u16 {
    let to_left = u32::from(dest.wrapping_sub(bcl));
    let offset = u32::from(offset);
    if offset <= to_left {
        return dest.wrapping_sub(offset as u16);
    }
    // At bcl after `to_left` steps; one more lands on bcr − 1, and from there
    // the walk cycles through [bcl, bcr) of `cycle` addresses.
    let r = offset - to_left - 1;
    let cycle = u32::from(bcr.wrapping_sub(1).wrapping_sub(bcl)) + 1;
    let idx = (cycle - 1 + cycle - (r % cycle)) % cycle;
    bcl.wrapping_add(idx as u16)
}

/// The address after `m` in the circular buffer [`bcl`, `bcr`) (RFC 3320
/// §8.4): from the byte before `bcr` on to `bcl`.
#[inline(always)]
pub(super) fn next(m: u16, bcl: u16, bcr: u16) -> u16 {
    let k = m.wrapping_add(1);
    if k == bcr {
        bcl
    } else {
        k
    }
}
