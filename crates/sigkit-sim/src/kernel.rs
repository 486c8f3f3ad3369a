//! The event kernel: a time-ordered event list (SIP overload thesis §3.1.1,
//! §3.2.1). Time is in integer nanoseconds so that ordering is exact; events
//! at the same instant run in the order they were scheduled.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

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

/// A heap entry: the event's time and sequence number, and where the event
/// waits. The events themselves stay put in a slab, so the heap moves 24
/// bytes per sift step instead of a whole event (the heap is most of the
/// kernel's work: a collapsed run holds tens of thousands of timers).
#[derive(Clone, Copy)]
struct Entry {
    at: Nanos,
    seq: u64,
    slot: u32,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap and the earliest event comes first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// Delays that get a FIFO lane of their own, at most.
const LANES: usize = 32;

/// The event list and the simulation clock.
///
/// Most events come a fixed delay after the event that schedules them (the
/// link delay, T1 and its doublings, Timer F, J and K, the logging period):
/// events of one delay are scheduled in time order, so each such delay gets
/// a FIFO lane, and only the rest (service times, arrivals) goes through
/// the heap. `pop` takes the earliest of the heap's top and the lanes'
/// fronts, by time and then by sequence number, so the order is exactly
/// that of one heap.
pub struct EventList<E> {
    now: Nanos,
    seq: u64,
    heap: BinaryHeap<Entry>,
    /// The heap's events, by slot; a taken slot is reused.
    slab: Vec<Option<E>>,
    free: Vec<u32>,
    /// The delay of each lane, and the lanes.
    lane_delays: Vec<Nanos>,
    lanes: Vec<VecDeque<(Nanos, u64, E)>>,
    processed: u64,
}

impl<E> Default for EventList<E> {
    fn default() -> Self {
        EventList {
            now: 0,
            seq: 0,
            heap: BinaryHeap::new(),
            slab: Vec::new(),
            free: Vec::new(),
            lane_delays: Vec::new(),
            lanes: Vec::new(),
            processed: 0,
        }
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
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slab[slot as usize] = Some(event);
                slot
            }
            None => {
                let slot = u32::try_from(self.slab.len()).expect("fewer than 2^32 events waiting");
                self.slab.push(Some(event));
                slot
            }
        };
        self.heap.push(Entry { at, seq: self.seq, slot });
    }

    /// Schedules `event` `delay` after now. Meant for the fixed delays of
    /// a model (each distinct delay gets a FIFO lane, up to 32 of them);
    /// a random delay should go through [`EventList::schedule`].
    pub fn after(&mut self, delay: Nanos, event: E) {
        let lane = match self.lane_delays.iter().position(|&d| d == delay) {
            Some(lane) => lane,
            None if self.lanes.len() < LANES => {
                self.lane_delays.push(delay);
                self.lanes.push(VecDeque::new());
                self.lanes.len() - 1
            }
            None => return self.schedule(self.now.saturating_add(delay), event),
        };
        self.seq += 1;
        // The clock never goes back, so a lane stays in time order.
        self.lanes[lane].push_back((self.now.saturating_add(delay), self.seq, event));
    }

    /// Takes the earliest event and advances the clock to its time.
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        let mut best: Option<(Nanos, u64, usize)> = self.heap.peek().map(|e| (e.at, e.seq, usize::MAX));
        for (i, lane) in self.lanes.iter().enumerate() {
            if let Some(&(at, seq, _)) = lane.front() {
                if best.is_none_or(|(b_at, b_seq, _)| (at, seq) < (b_at, b_seq)) {
                    best = Some((at, seq, i));
                }
            }
        }
        let (at, _, from) = best?;
        self.now = at;
        self.processed += 1;
        if from == usize::MAX {
            let e = self.heap.pop().expect("peeked");
            let event = self.slab[e.slot as usize].take().expect("a queued slot holds its event");
            self.free.push(e.slot);
            Some((at, event))
        } else {
            let (_, _, event) = self.lanes[from].pop_front().expect("peeked");
            Some((at, event))
        }
    }

    /// Events taken so far (the kernel's work: what events/s counts).
    pub fn processed(&self) -> u64 {
        self.processed
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len() + self.lanes.iter().map(VecDeque::len).sum::<usize>()
    }

    /// No event waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
        assert_eq!(list.processed(), 3);
    }

    #[test]
    fn lanes_and_heap_merge_in_time_then_scheduling_order() {
        // Random delays through the heap, fixed ones through lanes, and more
        // fixed delays than lanes: the order must be that of one sorted list.
        let mut list = EventList::default();
        let mut expected = Vec::new();
        let mut seq = 0u64;
        let mut x = 12345u64;
        for step in 0..2000u64 {
            if step % 3 == 0 {
                if let Some(got) = list.pop() {
                    expected.sort();
                    let (at, _, id) = expected.remove(0);
                    assert_eq!(got, (at, id));
                }
                continue;
            }
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seq += 1;
            let now = list.now();
            if x >> 60 < 4 {
                let at = now + (x >> 40) % 1000;
                list.schedule(at, step);
                expected.push((at, seq, step));
            } else {
                let delay = ((x >> 33) % 40) * 10;
                list.after(delay, step);
                expected.push((now + delay, seq, step));
            }
        }
        expected.sort();
        let order: Vec<_> = std::iter::from_fn(|| list.pop()).collect();
        assert_eq!(order, expected.iter().map(|&(at, _, id)| (at, id)).collect::<Vec<_>>());
        assert!(list.is_empty());
    }

    #[test]
    fn seconds_round_trip() {
        assert_eq!(from_secs(0.0003), 300_000);
        assert_eq!(to_secs(from_secs(31.5)), 31.5);
    }
}
