//! Random numbers: one Mersenne Twister per process, and exponential
//! variates by inverse transformation (SIP overload thesis §3.1.2, eq. 3.4
//! and §3.3.1, eq. 3.15).

use rand_mt::Mt;

/// Identifies a random stream inside one run: each process (a Poisson
/// source, a proxy's processor, a link, a dropper) draws from its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamId {
    /// Arrivals of traffic source `n`.
    Source(u32),
    /// Service times of proxy `n`.
    Service(u32),
    /// Losses of link `n` (requests go down on `2n`, responses up on `2n + 1`).
    Link(u32),
    /// The RFC 7339 loss-based dropper of proxy `n`.
    Dropper(u32),
    /// The registrar's randomised Expires.
    Registrar,
    /// The registration clients' first attempts.
    Registration,
    /// The watchers' first SUBSCRIBEs.
    Presence,
}

impl StreamId {
    fn key(self) -> [u32; 2] {
        match self {
            StreamId::Source(n) => [1, n],
            StreamId::Service(n) => [2, n],
            StreamId::Link(n) => [3, n],
            StreamId::Dropper(n) => [4, n],
            StreamId::Registrar => [5, 0],
            StreamId::Registration => [6, 0],
            StreamId::Presence => [7, 0],
        }
    }
}

/// A 32-bit Mersenne Twister (MT19937, the generator of the thesis's
/// simulator, §3.2.3) for one process of one run.
///
/// Each stream is initialised by MT19937's `init_by_array` with the run's
/// seed and the stream's identity, so streams of one run are distinct and a
/// process draws the same numbers whatever the other processes do.
pub struct Stream {
    mt: Mt,
}

impl Stream {
    /// The stream `id` of the run seeded with `seed`.
    pub fn new(seed: u64, id: StreamId) -> Stream {
        let [kind, n] = id.key();
        let key = [seed as u32, (seed >> 32) as u32, kind, n];
        Stream { mt: Mt::new_with_key(key) }
    }

    /// A uniform number in (0, 1] with 53 bits of resolution; never 0, so
    /// that its logarithm is finite (eq. 3.15 takes u in (0..1]).
    pub fn uniform(&mut self) -> f64 {
        let a = u64::from(self.mt.next_u32() >> 5);
        let b = u64::from(self.mt.next_u32() >> 6);
        ((a << 26) + b + 1) as f64 / (1u64 << 53) as f64
    }

    /// An exponential variate of mean `mean` by inverse transformation:
    /// `-mean · ln(u)` (eq. 3.4 with λ = 1/mean).
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * self.uniform().ln()
    }

    /// True with probability `p` (a Bernoulli trial, eq. 3.16).
    pub fn bernoulli(&mut self, p: f64) -> bool {
        p > 0.0 && self.uniform() <= p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_and_stream_give_the_same_numbers() {
        let mut a = Stream::new(7, StreamId::Source(0));
        let mut b = Stream::new(7, StreamId::Source(0));
        for _ in 0..1000 {
            assert_eq!(a.uniform().to_bits(), b.uniform().to_bits());
        }
    }

    #[test]
    fn streams_differ_by_process_and_by_seed() {
        let first = |seed, id| Stream::new(seed, id).uniform();
        let base = first(7, StreamId::Source(0));
        assert_ne!(base, first(7, StreamId::Source(1)));
        assert_ne!(base, first(7, StreamId::Service(0)));
        assert_ne!(base, first(8, StreamId::Source(0)));
    }

    #[test]
    fn uniform_stays_in_the_half_open_unit_interval() {
        let mut s = Stream::new(1, StreamId::Link(0));
        for _ in 0..100_000 {
            let u = s.uniform();
            assert!(u > 0.0 && u <= 1.0, "{u}");
        }
    }

    #[test]
    fn exponential_mean_and_variance_match() {
        let mut s = Stream::new(3, StreamId::Service(1));
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| s.exponential(0.01)).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        // Standard error of the mean is 0.01/sqrt(n) ≈ 2.2e-5; allow 5 of them.
        assert!((mean - 0.01).abs() < 1.2e-4, "mean {mean}");
        // An exponential's variance is its mean squared.
        assert!((var / 1e-4 - 1.0).abs() < 0.03, "variance {var}");
    }

    #[test]
    fn bernoulli_rate_matches() {
        let mut s = Stream::new(5, StreamId::Link(3));
        let hits = (0..100_000).filter(|_| s.bernoulli(0.1)).count();
        assert!((9_500..10_500).contains(&hits), "{hits}");
        assert!(!(0..1000).any(|_| s.bernoulli(0.0)));
    }
}
