//! The event kernel: a time-ordered event list (SIP overload thesis §3.1.1,
//! §3.2.1). Time is in integer nanoseconds so that ordering is exact; events
//! at the same instant run in the order they were scheduled.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Simulated time in nanoseconds.
pub type Nanos = u64;

/// Nanoseconds in one second.
pub const SECOND: Nanos = 1_000_000_000;

/// `seconds` as simulated time, rounded to the nanosecond.
pub fn from_secs(seconds: f64) -> Nanos {
    (seconds * SECOND as f64).round() as Nanos
}

/// Simulated time `t` in seconds.
pub fn to_secs(t: Nanos) -> f64 {
    t as f64 / SECOND as f64
}

struct Entry<E> {
    at: Nanos,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // Reversed: BinaryHeap is a max-heap and the earliest event comes first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// The event list and the simulation clock.
pub struct EventList<E> {
    now: Nanos,
    seq: u64,
    heap: BinaryHeap<Entry<E>>,
}

impl<E> Default for EventList<E> {
    fn default() -> Self {
        EventList { now: 0, seq: 0, heap: BinaryHeap::new() }
    }
}

impl<E> EventList<E> {
    /// The current simulated time: that of the event last taken.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Schedules `event` at `at`; a time in the past runs at once (now).
    pub fn schedule(&mut self, at: Nanos, event: E) {
        let at = at.max(self.now);
        self.seq += 1;
        self.heap.push(Entry { at, seq: self.seq, event });
    }

    /// Schedules `event` `delay` after now.
    pub fn after(&mut self, delay: Nanos, event: E) {
        self.schedule(self.now.saturating_add(delay), event);
    }

    /// Takes the earliest event and advances the clock to its time.
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        let e = self.heap.pop()?;
        self.now = e.at;
        Some((e.at, e.event))
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// No event waiting.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_in_time_order_and_fifo_at_equal_times() {
        let mut list = EventList::default();
        for (at, name) in [(30, "c"), (10, "a1"), (20, "b"), (10, "a2"), (10, "a3")] {
            list.schedule(at, name);
        }
        let order: Vec<_> = std::iter::from_fn(|| list.pop()).collect();
        assert_eq!(order, [(10, "a1"), (10, "a2"), (10, "a3"), (20, "b"), (30, "c")]);
    }

    #[test]
    fn the_clock_follows_the_events_and_never_goes_back() {
        let mut list = EventList::default();
        list.schedule(100, 1);
        assert_eq!(list.pop(), Some((100, 1)));
        assert_eq!(list.now(), 100);
        list.schedule(50, 2); // in the past: runs now
        list.after(5, 3);
        assert_eq!(list.pop(), Some((100, 2)));
        assert_eq!(list.pop(), Some((105, 3)));
        assert!(list.is_empty());
    }

    #[test]
    fn seconds_round_trip() {
        assert_eq!(from_secs(0.0003), 300_000);
        assert_eq!(to_secs(from_secs(31.5)), 31.5);
    }
}
