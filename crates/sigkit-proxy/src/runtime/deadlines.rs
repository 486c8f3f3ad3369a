//! When the timer task next runs the shards' timers: each shard's next
//! deadline ([`crate::Proxy::poll_timeout`]), kept where the timer task
//! reads it without taking the shard's lock, and a wake-up when a message
//! brings a deadline earlier than the one the task sleeps until.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// No deadline.
const NONE: u64 = u64::MAX;

/// The shards' next deadlines, as nanoseconds since `origin`.
pub(super) struct Deadlines {
    origin: Instant,
    by_shard: Vec<AtomicU64>,
    /// Woken when a shard's deadline moves earlier.
    earlier: Notify,
    /// Times the timer task ran due timers ([`crate::runtime::Running::timer_wakeups`]).
    pub(super) wakeups: AtomicU64,
}

impl Deadlines {
    pub(super) fn new(shards: usize) -> Deadlines {
        Deadlines {
            origin: Instant::now(),
            by_shard: (0..shards).map(|_| AtomicU64::new(NONE)).collect(),
            earlier: Notify::new(),
            wakeups: AtomicU64::new(0),
        }
    }

    fn nanos(&self, at: Instant) -> u64 {
        u64::try_from(at.saturating_duration_since(self.origin).as_nanos()).unwrap_or(NONE - 1)
    }

    fn instant(&self, nanos: u64) -> Option<Instant> {
        (nanos != NONE).then(|| self.origin + Duration::from_nanos(nanos))
    }

    /// Shard `index` needs its timers run at `next` (its `poll_timeout`
    /// after a message): the timer task is woken if that is earlier than
    /// what the shard had. Called with the shard's lock held, so a shard's
    /// deadlines are set in the order its core produced them.
    pub(super) fn set(&self, index: usize, next: Option<Instant>) {
        let Some(slot) = self.by_shard.get(index) else { return };
        let n = next.map_or(NONE, |t| self.nanos(t));
        if n < slot.swap(n, Ordering::AcqRel) {
            self.earlier.notify_one();
        }
    }

    /// The shards whose deadline has come at `now`.
    pub(super) fn due(&self, now: Instant) -> impl Iterator<Item = usize> + '_ {
        let now = self.nanos(now);
        self.by_shard.iter().enumerate().filter(move |(_, d)| d.load(Ordering::Acquire) <= now).map(|(i, _)| i)
    }

    /// The earliest deadline of any shard.
    pub(super) fn earliest(&self) -> Option<Instant> {
        self.instant(self.by_shard.iter().map(|d| d.load(Ordering::Acquire)).min().unwrap_or(NONE))
    }

    /// Resolves when a shard's deadline moved earlier since the last call
    /// resolved (a permit is kept if none waits).
    pub(super) async fn moved_earlier(&self) {
        self.earlier.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A deadline earlier than the shard's wakes the timer; a later one
    /// does not; a shard is due once its deadline has come.
    #[tokio::test]
    async fn an_earlier_deadline_wakes_the_timer_and_due_shards_are_found() {
        let d = Deadlines::new(2);
        let now = Instant::now();
        assert_eq!(d.earliest(), None);
        d.set(1, Some(now + Duration::from_secs(5)));
        // The permit set by the first deadline is there.
        tokio::time::timeout(Duration::from_millis(100), d.moved_earlier()).await.expect("woken");
        d.set(1, Some(now + Duration::from_secs(6)));
        assert!(
            tokio::time::timeout(Duration::from_millis(50), d.moved_earlier()).await.is_err(),
            "a later one does not wake"
        );
        d.set(0, Some(now + Duration::from_secs(1)));
        tokio::time::timeout(Duration::from_millis(100), d.moved_earlier()).await.expect("woken");
        assert_eq!(d.earliest(), Some(d.instant(d.nanos(now + Duration::from_secs(1))).unwrap()));
        assert_eq!(d.due(now + Duration::from_secs(2)).collect::<Vec<_>>(), vec![0]);
        assert_eq!(d.due(now + Duration::from_secs(7)).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(d.due(now).count(), 0);
    }
}
