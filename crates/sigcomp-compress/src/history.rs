//! What the two match finders (`lzss`, `chains`) share about their
//! history of bytes and chain links.

/// A copy of a finder's history (`history_len` bytes) or of its chain
/// links, with room to grow to the bound the finders slide them back from
/// (twice the window) plus a message: a new compartment's finder, cloned
/// from a template over its fresh window, then does not reallocate (and
/// copy) them during its first messages.
pub(crate) fn with_room_to_grow<T: Copy>(items: &[T], history_len: usize) -> Vec<T> {
    /// Room for a message beyond twice the window.
    const SLACK: usize = 2048;
    let mut v = Vec::with_capacity(2 * history_len.max(1024) + SLACK);
    v.extend_from_slice(items);
    v
}
