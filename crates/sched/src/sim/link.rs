//! One direction of an emulated path: random loss, a drop-tail queue in bytes, serialization at
//! the bottleneck rate, then the propagation delay.
//!
//! The queue is not a list of packets: a FIFO serializer is fully described by the instant it
//! finishes what it has accepted (`busy_until`), and the backlog at any instant is what is left
//! of that work at the link rate. Times are whole nanoseconds, serialization rounded up, so a
//! run never depends on floating-point rounding.

use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::PathConfig;

/// What became of a packet handed to the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fate {
    /// It reaches the far end at this time.
    Arrives(Duration),
    /// Lost at random (the path's drop rate).
    Lost,
    /// Dropped because the queue was full.
    Dropped,
}

#[derive(Debug, Clone)]
pub(super) struct Link {
    rate_bps: u64,
    delay: Duration,
    drop_rate: f64,
    queue_bytes: u64,
    busy_until: Duration,
    rng: ChaCha8Rng,
}

impl Link {
    /// A link with its own random stream: `stream` selects an independent ChaCha stream of the
    /// run's seed, so one path's traffic never shifts another path's loss pattern.
    pub(super) fn new(config: &PathConfig, seed: u64, stream: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        Self {
            rate_bps: config.rate_bps().max(1),
            delay: config.delay(),
            drop_rate: config.drop_rate(),
            queue_bytes: config.queue_bytes(),
            busy_until: Duration::ZERO,
            rng,
        }
    }

    fn serialization(&self, bytes: u64) -> Duration {
        let bits = u128::from(bytes) * 8 * 1_000_000_000;
        let nanos = bits.div_ceil(u128::from(self.rate_bps));
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// Bytes waiting or in service at `now`.
    pub(super) fn backlog(&self, now: Duration) -> u64 {
        let left = self.busy_until.saturating_sub(now).as_nanos();
        let bytes = left * u128::from(self.rate_bps) / 8 / 1_000_000_000;
        u64::try_from(bytes).unwrap_or(u64::MAX)
    }

    /// Offers a packet of `bytes` at `now`.
    pub(super) fn send(&mut self, now: Duration, bytes: u64) -> Fate {
        // Drawn for every packet, so the loss pattern depends only on the seed and the
        // packet's rank on this path, not on the queue.
        let lost = self.rng.random::<f64>() < self.drop_rate;
        if lost {
            return Fate::Lost;
        }
        if self.backlog(now).saturating_add(bytes) > self.queue_bytes {
            return Fate::Dropped;
        }
        let done = self.busy_until.max(now) + self.serialization(bytes);
        self.busy_until = done;
        Fate::Arrives(done + self.delay)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(rate_bps: u64, delay_ms: u64, queue: u64) -> Link {
        let mut config = PathConfig::new(rate_bps, Duration::from_millis(delay_ms));
        config.set_queue(queue);
        Link::new(&config, 7, 0)
    }

    #[test]
    fn packets_serialize_back_to_back_then_propagate() {
        // 1200 bytes at 9.6 Mbit/s take exactly 1 ms.
        let mut l = link(9_600_000, 10, 100_000);
        let ms = Duration::from_millis;
        assert_eq!(l.send(ms(0), 1200), Fate::Arrives(ms(11)));
        assert_eq!(l.send(ms(0), 1200), Fate::Arrives(ms(12)));
        assert_eq!(l.backlog(ms(0)), 2400);
        assert_eq!(l.backlog(ms(1)), 1200);
        // An idle link starts at once.
        assert_eq!(l.send(ms(5), 1200), Fate::Arrives(ms(16)));
    }

    #[test]
    fn a_full_queue_drops_the_tail() {
        let mut l = link(9_600_000, 1, 3600);
        let now = Duration::ZERO;
        for _ in 0..3 {
            assert!(matches!(l.send(now, 1200), Fate::Arrives(_)));
        }
        assert_eq!(l.send(now, 1200), Fate::Dropped);
        // Once one packet has left, one more fits.
        assert!(matches!(
            l.send(Duration::from_millis(1), 1200),
            Fate::Arrives(_)
        ));
    }

    #[test]
    fn random_loss_is_near_the_rate_and_seeded() {
        let mut config = PathConfig::new(1_000_000_000, Duration::ZERO);
        config.set_drop_rate(0.02).set_queue(u64::MAX);
        let run = |seed| {
            let mut l = Link::new(&config, seed, 0);
            (0..20_000)
                .map(|i| l.send(Duration::from_secs(i), 1200) == Fate::Lost)
                .collect::<Vec<_>>()
        };
        let a = run(3);
        assert_eq!(a, run(3));
        assert_ne!(a, run(4));
        let lost = a.iter().filter(|l| **l).count();
        assert!((300..500).contains(&lost), "{lost} of 20000");
    }
}
