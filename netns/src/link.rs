//! The link model: one direction of one emulated path, pure and deterministic.
//!
//! A packet arriving at `now` passes, in order: the path's up/down state (timed events), random
//! loss (Bernoulli or Gilbert-Elliott, seeded ChaCha8), a drop-tail queue counted in bytes,
//! serialization at the link rate (or at a Mahimahi trace's delivery opportunities), then the
//! one-way propagation delay. Time is a `Duration` since the link's start, passed in by the
//! caller; nothing here reads a clock (STYLE.md habit 1), so the relay and the tests share it.

use std::collections::VecDeque;
use std::time::Duration;

use mpquic_sched::sim::{default_queue_bytes, PathSpec};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::NetnsError;
use crate::events::{check_delay, check_rate, EventAction, TimedEvent};
use crate::trace::{Trace, OPPORTUNITY_BYTES};

/// The fastest rate a link accepts: 100 Gbit/s.
pub const MAX_RATE_BPS: u64 = 100_000_000_000;

/// The longest one-way delay a link accepts: 60 s.
pub const MAX_DELAY: Duration = Duration::from_secs(60);

/// The smallest queue a link accepts: one 1500-byte packet.
const MIN_QUEUE_BYTES: u64 = 1500;

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// `ns` nanoseconds as a `Duration`, saturating at `Duration::MAX`.
pub(crate) fn duration_from_nanos(ns: u128) -> Duration {
    match u64::try_from(ns / NANOS_PER_SEC) {
        // The remainder is below 10^9, so it fits a u32.
        Ok(secs) => Duration::new(secs, u32::try_from(ns % NANOS_PER_SEC).unwrap_or(0)),
        Err(_) => Duration::MAX,
    }
}

/// Random loss, decided once per arriving packet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Loss {
    /// No random loss.
    None,
    /// Each packet is lost independently with this probability (`0..=1`).
    Bernoulli(f64),
    /// Bursty loss: a two-state (good, bad) Markov chain stepped once per packet, with a loss
    /// probability per state; the chain starts good. These are the four parameters of Linux
    /// netem's `loss gemodel p r 1-h 1-k`. The long-run loss rate is
    /// `(bad_to_good * loss_in_good + good_to_bad * loss_in_bad) / (good_to_bad + bad_to_good)`.
    GilbertElliott {
        /// Probability of moving from good to bad after a packet (netem's `p`).
        good_to_bad: f64,
        /// Probability of moving from bad to good after a packet (netem's `r`).
        bad_to_good: f64,
        /// Loss probability in the good state (netem's `1-k`).
        loss_in_good: f64,
        /// Loss probability in the bad state (netem's `1-h`).
        loss_in_bad: f64,
    },
}

/// The configuration of one direction of one path. Knob names follow the simulator's
/// (`mpquic_sched::sim::PathSpec`): rate in bit/s, one-way delay.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    /// Serialization rate in bit/s, `1..=100 Gbit/s`; ignored while `trace` drives the link.
    pub rate_bps: u64,
    /// One-way propagation delay, at most 60 s.
    pub delay: Duration,
    /// Random loss.
    pub loss: Loss,
    /// Drop-tail queue in bytes, at least 1500. `None`: one BDP (rate x 2 x delay), at least
    /// 64 kB (`mpquic_sched::sim::default_queue_bytes`; a trace counts at its mean rate).
    pub queue_bytes: Option<u64>,
    /// A Mahimahi trace that replaces `rate_bps` when set.
    pub trace: Option<Trace>,
    /// Timed events, sorted by `at` (equal times apply in list order); validated in [`Link::new`].
    pub events: Vec<TimedEvent>,
    /// Seed of the loss process.
    pub seed: u64,
}

impl LinkConfig {
    /// A link of `rate_bps` and one-way `delay`: no loss, default queue, no trace or events,
    /// seed 1.
    pub fn new(rate_bps: u64, delay: Duration) -> Self {
        Self {
            rate_bps,
            delay,
            loss: Loss::None,
            queue_bytes: None,
            trace: None,
            events: Vec::new(),
            seed: 1,
        }
    }

    /// The config of one direction of a scenario path (mpquic_sched::sim::PathSpec): rate,
    /// one-way delay, Bernoulli drop rate.
    pub fn from_spec(spec: &PathSpec, seed: u64) -> Self {
        // Only an exact 0 means lossless, so that a NaN drop rate reaches Link::new's check.
        let loss = if spec.drop_rate == 0.0 {
            Loss::None
        } else {
            Loss::Bernoulli(spec.drop_rate)
        };
        Self {
            loss,
            seed,
            ..Self::new(spec.rate_bps, spec.one_way_delay)
        }
    }

    /// Every problem [`Link::new`] rejects, and the queue size to use.
    fn validate(&self) -> Result<u64, NetnsError> {
        if self.trace.is_none() {
            check_rate(self.rate_bps).map_err(NetnsError::link)?;
        }
        check_delay(self.delay).map_err(NetnsError::link)?;
        let probabilities: &[(&str, f64)] = match self.loss {
            Loss::None => &[],
            Loss::Bernoulli(p) => &[("Bernoulli loss", p)],
            Loss::GilbertElliott {
                good_to_bad,
                bad_to_good,
                loss_in_good,
                loss_in_bad,
            } => &[
                ("Gilbert-Elliott good_to_bad", good_to_bad),
                ("Gilbert-Elliott bad_to_good", bad_to_good),
                ("Gilbert-Elliott loss_in_good", loss_in_good),
                ("Gilbert-Elliott loss_in_bad", loss_in_bad),
            ],
        };
        for &(name, p) in probabilities {
            if !(0.0..=1.0).contains(&p) {
                return Err(NetnsError::link(format!(
                    "{name} probability {p} is not in 0..=1"
                )));
            }
        }
        let mut previous = Duration::ZERO;
        for (index, event) in self.events.iter().enumerate() {
            if event.at < previous {
                return Err(NetnsError::event(
                    index,
                    format!(
                        "at {:?} is before the previous event's {previous:?} (events must be sorted by time)",
                        event.at
                    ),
                ));
            }
            previous = event.at;
            match event.action {
                EventAction::Rate(bps) => check_rate(bps),
                EventAction::Delay(delay) => check_delay(delay),
                EventAction::Down | EventAction::Up => Ok(()),
            }
            .map_err(|reason| NetnsError::event(index, reason))?;
        }
        match self.queue_bytes {
            Some(q) if q < MIN_QUEUE_BYTES => Err(NetnsError::link(format!(
                "queue of {q} bytes is smaller than one {MIN_QUEUE_BYTES}-byte packet"
            ))),
            Some(q) => Ok(q),
            None => {
                let rate = match &self.trace {
                    // `as` saturates; a parsed trace's mean rate is finite and positive.
                    Some(trace) => trace.mean_rate_bps() as u64,
                    None => self.rate_bps,
                };
                Ok(default_queue_bytes(rate, self.delay))
            }
        }
    }
}

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The drop-tail queue had no room for it.
    Queue,
    /// Random loss.
    Loss,
    /// The path was down (a timed event).
    Down,
}

/// What becomes of an offered packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It reaches the far end at this time (since the link's start).
    Deliver(Duration),
    /// It is dropped.
    Dropped(DropReason),
}

/// One direction of one emulated path.
///
/// Calling contract: build it with [`Link::new`], then call [`Link::offer`] for every packet in
/// arrival order with the time since the link's start; hold each delivered packet until the
/// returned time. The link never reads a clock and is deterministic for a given config.
#[derive(Debug, Clone)]
pub struct Link {
    /// As validated, with `queue_bytes` resolved.
    config: LinkConfig,
    /// The resolved drop-tail limit.
    queue_bytes: u64,
    /// Current rate (events may change it).
    rate_bps: u64,
    /// Whether the trace still drives serialization (a rate event ends it).
    use_trace: bool,
    /// Current one-way delay.
    delay: Duration,
    /// Whether the path is down.
    down: bool,
    /// The first event not yet applied.
    next_event: usize,
    /// The latest `now` seen.
    latest: Duration,
    /// When the last admitted packet's transmission ends.
    busy_until: Duration,
    /// The first trace opportunity not yet used (see `Trace::time_of`).
    next_opportunity: u128,
    /// (transmission end, bytes) of admitted packets whose transmission had not ended at
    /// `latest`, in order.
    in_flight: VecDeque<(Duration, u64)>,
    /// Sum of the bytes in `in_flight`.
    queued: u64,
    rng: ChaCha8Rng,
    /// The Gilbert-Elliott state.
    bad: bool,
}

impl Link {
    /// Validates `config` (rate `1..=100 Gbit/s` unless a trace drives the link, delay at most
    /// 60 s, loss probabilities in `0..=1`, queue at least 1500 bytes, events sorted with valid
    /// rates and delays) and builds the link. [`Link::config`] then returns the config with
    /// `queue_bytes` filled in.
    pub fn new(mut config: LinkConfig) -> Result<Link, NetnsError> {
        let queue_bytes = config.validate()?;
        config.queue_bytes = Some(queue_bytes);
        Ok(Link {
            queue_bytes,
            rate_bps: config.rate_bps,
            use_trace: config.trace.is_some(),
            delay: config.delay,
            down: false,
            next_event: 0,
            latest: Duration::ZERO,
            busy_until: Duration::ZERO,
            next_opportunity: 0,
            in_flight: VecDeque::new(),
            queued: 0,
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            bad: false,
            config,
        })
    }

    /// A packet of `len` bytes (IP/UDP payload as sent) arrives at the link at `now`: drop-tail queue in bytes,
    /// serialization at the current rate (or the trace's delivery opportunities), then the propagation delay;
    /// random loss applied on arrival (seeded ChaCha8); while Down, every arrival is dropped. Events take effect
    /// at their time as `now` passes them. `now` may not go backwards (earlier values count as the latest).
    ///
    /// Precisely: events with `at <= now` apply first. The queue holds the bytes admitted whose
    /// transmission has not ended by `now`; the packet is dropped if they plus `len` exceed the
    /// queue. At a fixed rate its transmission ends at `max(now, end of the previous one) +
    /// len * 8 / rate` (whole nanoseconds, rounded up); on a trace it ends at the next unused
    /// delivery opportunity at or after `now`, spending one opportunity per 1500 bytes or part
    /// thereof (at least one). It is delivered its one-way delay after that. A verdict is final:
    /// packets admitted before a Down event are still delivered.
    pub fn offer(&mut self, now: Duration, len: usize) -> Verdict {
        let now = now.max(self.latest);
        self.latest = now;
        self.apply_events(now);
        while let Some(&(end, bytes)) = self.in_flight.front() {
            if end > now {
                break;
            }
            self.in_flight.pop_front();
            self.queued = self.queued.saturating_sub(bytes);
        }
        if self.down {
            return Verdict::Dropped(DropReason::Down);
        }
        if self.lose() {
            return Verdict::Dropped(DropReason::Loss);
        }
        let len = u64::try_from(len).unwrap_or(u64::MAX);
        if self.queued.saturating_add(len) > self.queue_bytes {
            return Verdict::Dropped(DropReason::Queue);
        }
        let end = match (&self.config.trace, self.use_trace) {
            (Some(trace), true) => {
                let first = trace
                    .first_index_at_or_after(now)
                    .max(self.next_opportunity);
                let needed = u128::from(len.div_ceil(OPPORTUNITY_BYTES).max(1));
                let last = first.saturating_add(needed - 1);
                self.next_opportunity = last.saturating_add(1);
                trace.time_of(last)
            }
            _ => {
                let bits = u128::from(len) * 8;
                // rate_bps is validated > 0 (here and in events); max(1) keeps this panic-free.
                let rate = u128::from(self.rate_bps.max(1));
                let ns = (bits * NANOS_PER_SEC).div_ceil(rate);
                let start = now.max(self.busy_until);
                start.saturating_add(duration_from_nanos(ns))
            }
        };
        self.busy_until = self.busy_until.max(end);
        if len > 0 && end > now {
            self.in_flight.push_back((end, len));
            self.queued = self.queued.saturating_add(len);
        }
        Verdict::Deliver(end.saturating_add(self.delay))
    }

    /// The config, as validated, with `queue_bytes` resolved to the queue in use.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// Applies every event due by `now`.
    fn apply_events(&mut self, now: Duration) {
        while let Some(event) = self.config.events.get(self.next_event) {
            if event.at > now {
                break;
            }
            match event.action {
                EventAction::Down => self.down = true,
                EventAction::Up => self.down = false,
                EventAction::Rate(bps) => {
                    self.rate_bps = bps;
                    self.use_trace = false;
                }
                EventAction::Delay(delay) => self.delay = delay,
            }
            self.next_event += 1;
        }
    }

    /// Whether the loss process loses this packet; steps it once.
    fn lose(&mut self) -> bool {
        match self.config.loss {
            Loss::None => false,
            Loss::Bernoulli(p) => self.rng.random::<f64>() < p,
            Loss::GilbertElliott {
                good_to_bad,
                bad_to_good,
                loss_in_good,
                loss_in_bad,
            } => {
                let (loss, leave) = if self.bad {
                    (loss_in_bad, bad_to_good)
                } else {
                    (loss_in_good, good_to_bad)
                };
                let lost = self.rng.random::<f64>() < loss;
                if self.rng.random::<f64>() < leave {
                    self.bad = !self.bad;
                }
                lost
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpquic_sched::sim::Scenario;
    use proptest::prelude::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn link(config: LinkConfig) -> Link {
        Link::new(config).unwrap()
    }

    fn delivered(v: Verdict) -> Duration {
        match v {
            Verdict::Deliver(t) => t,
            other => panic!("expected a delivery, got {other:?}"),
        }
    }

    #[test]
    fn serialization_is_exact() {
        // 1500 B = 12 000 bit at 12 Mbit/s: 1 ms on the wire, then 10 ms of delay.
        let mut l = link(LinkConfig::new(12_000_000, ms(10)));
        assert_eq!(l.offer(ms(5), 1500), Verdict::Deliver(ms(16)));
        // 1 byte at 3 bit/s: 8/3 s, rounded up to whole nanoseconds.
        let mut l = link(LinkConfig::new(3, Duration::ZERO));
        assert_eq!(
            l.offer(Duration::ZERO, 1),
            Verdict::Deliver(Duration::from_nanos(2_666_666_667))
        );
        // An empty datagram takes no time on the wire.
        let mut l = link(LinkConfig::new(1_000_000, ms(3)));
        assert_eq!(l.offer(ms(1), 0), Verdict::Deliver(ms(4)));
    }

    #[test]
    fn back_to_back_packets_queue_and_leave_one_transmission_apart() {
        let mut l = link(LinkConfig::new(12_000_000, ms(10)));
        let times: Vec<Duration> = (0..5).map(|_| delivered(l.offer(ms(0), 1500))).collect();
        assert_eq!(times, vec![ms(11), ms(12), ms(13), ms(14), ms(15)]);
        // A packet arriving after the queue drained starts at once.
        assert_eq!(l.offer(ms(100), 1500), Verdict::Deliver(ms(111)));
        // Mixed sizes: 750 B takes 0.5 ms.
        assert_eq!(
            l.offer(ms(100), 750),
            Verdict::Deliver(Duration::from_micros(111_500))
        );
    }

    #[test]
    fn drop_tail_at_the_configured_bytes() {
        let mut l = link(LinkConfig {
            queue_bytes: Some(4500),
            ..LinkConfig::new(12_000_000, ms(10))
        });
        for _ in 0..3 {
            assert!(matches!(l.offer(ms(0), 1500), Verdict::Deliver(_)));
        }
        assert_eq!(l.offer(ms(0), 1500), Verdict::Dropped(DropReason::Queue));
        assert_eq!(l.offer(ms(0), 1), Verdict::Dropped(DropReason::Queue));
        // At 1 ms the first packet's transmission has ended: room for exactly one more.
        assert_eq!(l.offer(ms(1), 1500), Verdict::Deliver(ms(14)));
        assert_eq!(l.offer(ms(1), 1500), Verdict::Dropped(DropReason::Queue));
        // A queue of 4000 bytes takes two 1500-byte packets and a 1000-byte one, not a third.
        let mut l = link(LinkConfig {
            queue_bytes: Some(4000),
            ..LinkConfig::new(12_000_000, ms(10))
        });
        assert!(matches!(l.offer(ms(0), 1500), Verdict::Deliver(_)));
        assert!(matches!(l.offer(ms(0), 1500), Verdict::Deliver(_)));
        assert_eq!(l.offer(ms(0), 1500), Verdict::Dropped(DropReason::Queue));
        assert!(matches!(l.offer(ms(0), 1000), Verdict::Deliver(_)));
        assert_eq!(l.config().queue_bytes, Some(4000));
    }

    #[test]
    fn default_queue_is_the_simulators() {
        let l = link(LinkConfig::new(40_000_000, ms(25)));
        // 40 Mbit/s x 50 ms = 250 000 bytes.
        assert_eq!(l.config().queue_bytes, Some(250_000));
        let l = link(LinkConfig::new(1_000_000, ms(1)));
        assert_eq!(l.config().queue_bytes, Some(64 * 1024));
    }

    /// Losses among `n` packets spaced far enough apart that the queue never fills.
    fn count_losses(loss: Loss, n: u64, seed: u64) -> (u64, Vec<bool>) {
        let mut l = link(LinkConfig {
            loss,
            seed,
            ..LinkConfig::new(MAX_RATE_BPS, ms(1))
        });
        let lost: Vec<bool> = (0..n)
            .map(|i| match l.offer(Duration::from_micros(i), 1200) {
                Verdict::Deliver(_) => false,
                Verdict::Dropped(DropReason::Loss) => true,
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        (lost.iter().filter(|&&x| x).count() as u64, lost)
    }

    #[test]
    fn bernoulli_two_percent_is_within_the_binomial_interval() {
        let n = 100_000;
        let p = 0.02;
        let mean = n as f64 * p;
        let half = 2.576 * (n as f64 * p * (1.0 - p)).sqrt();
        for seed in [1, 2, 3] {
            let (lost, _) = count_losses(Loss::Bernoulli(p), n, seed);
            assert!(
                (lost as f64 - mean).abs() <= half,
                "seed {seed}: {lost} lost, 99% interval {mean} +- {half}"
            );
        }
        assert_eq!(count_losses(Loss::Bernoulli(0.0), 1000, 1).0, 0);
        assert_eq!(count_losses(Loss::Bernoulli(1.0), 1000, 1).0, 1000);
    }

    #[test]
    fn gilbert_elliott_matches_its_stationary_loss_and_is_bursty() {
        let (g2b, b2g, lg, lb) = (0.01, 0.1, 0.001, 0.5);
        let loss = Loss::GilbertElliott {
            good_to_bad: g2b,
            bad_to_good: b2g,
            loss_in_good: lg,
            loss_in_bad: lb,
        };
        let n = 400_000;
        let (lost, pattern) = count_losses(loss, n, 7);
        let stationary = (b2g * lg + g2b * lb) / (g2b + b2g);
        let measured = lost as f64 / n as f64;
        assert!(
            (measured - stationary).abs() <= 0.1 * stationary,
            "measured {measured}, stationary {stationary}"
        );
        // Bursts: a loss is far more likely right after a loss than on average.
        let after_loss = pattern.windows(2).filter(|w| w[0]).count() as f64;
        let both = pattern.windows(2).filter(|w| w[0] && w[1]).count() as f64;
        assert!(
            both / after_loss > 3.0 * measured,
            "{} vs {measured}",
            both / after_loss
        );
    }

    #[test]
    fn seeded_runs_repeat() {
        let run = |seed| count_losses(Loss::Bernoulli(0.3), 2000, seed).1;
        assert_eq!(run(5), run(5));
        assert_ne!(run(5), run(6));
        let ge = Loss::GilbertElliott {
            good_to_bad: 0.2,
            bad_to_good: 0.2,
            loss_in_good: 0.1,
            loss_in_bad: 0.9,
        };
        assert_eq!(count_losses(ge, 2000, 9).1, count_losses(ge, 2000, 9).1);
    }

    #[test]
    fn trace_delivers_at_its_opportunities() {
        // One opportunity per millisecond: 12 Mbit/s.
        let mut l = link(LinkConfig {
            trace: Some(Trace::parse("1\n").unwrap()),
            ..LinkConfig::new(0, ms(10))
        });
        let times: Vec<Duration> = (0..4).map(|_| delivered(l.offer(ms(0), 1500))).collect();
        assert_eq!(times, vec![ms(11), ms(12), ms(13), ms(14)]);
        // Small packets still take a whole opportunity; a 3000-byte one takes two.
        assert_eq!(l.offer(ms(0), 100), Verdict::Deliver(ms(15)));
        assert_eq!(l.offer(ms(0), 3000), Verdict::Deliver(ms(17)));
        // Unused opportunities are wasted: an idle link serves the next arrival at once.
        assert_eq!(l.offer(ms(50), 1500), Verdict::Deliver(ms(60)));
        assert_eq!(
            l.offer(Duration::from_micros(50_500), 1500),
            Verdict::Deliver(ms(61))
        );
    }

    #[test]
    fn trace_queue_counts_bytes() {
        let mut l = link(LinkConfig {
            trace: Some(Trace::parse("10\n").unwrap()),
            queue_bytes: Some(3000),
            ..LinkConfig::new(0, ms(1))
        });
        assert_eq!(l.offer(ms(0), 1500), Verdict::Deliver(ms(11)));
        assert_eq!(l.offer(ms(0), 1500), Verdict::Deliver(ms(21)));
        assert_eq!(l.offer(ms(0), 1), Verdict::Dropped(DropReason::Queue));
        assert_eq!(l.offer(ms(10), 1500), Verdict::Deliver(ms(31)));
    }

    #[test]
    fn trace_goodput_is_its_mean_rate() {
        // Bursts of 3 opportunities, a gap, 1 more: period 10 ms, 4 x 1500 B / 10 ms = 4.8 Mbit/s.
        let trace = Trace::parse("2\n2\n2\n10\n").unwrap();
        let mean = trace.mean_rate_bps();
        assert_eq!(mean, 4_800_000.0);
        let mut l = link(LinkConfig {
            trace: Some(trace),
            ..LinkConfig::new(0, ms(20))
        });
        // Offer 12 Mbit/s for 10 s; count what arrives between 1 s and 9 s.
        let mut bytes = 0u64;
        for i in 0..10_000 {
            if let Verdict::Deliver(t) = l.offer(ms(i), 1500) {
                if t > Duration::from_secs(1) && t <= Duration::from_secs(9) {
                    bytes += 1500;
                }
            }
        }
        let rate = bytes as f64 * 8.0 / 8.0;
        assert!((rate - mean).abs() <= 0.01 * mean, "{rate} vs {mean}");
    }

    fn events(texts: &[&str]) -> Vec<TimedEvent> {
        texts
            .iter()
            .map(|t| TimedEvent::parse(t).unwrap())
            .collect()
    }

    #[test]
    fn a_path_down_at_two_seconds_drops_everything_after() {
        let mut l = link(LinkConfig {
            events: events(&["2s down", "3.5s up"]),
            ..LinkConfig::new(10_000_000, ms(5))
        });
        // 1000 B every millisecond: 8 Mbit/s, below the rate, so only events drop.
        let verdicts: Vec<(u64, Verdict)> = (0..5000).map(|i| (i, l.offer(ms(i), 1000))).collect();
        for (i, v) in verdicts {
            let down = (2000..3500).contains(&i);
            match v {
                Verdict::Dropped(DropReason::Down) => assert!(down, "{i} ms dropped"),
                Verdict::Deliver(t) => {
                    assert!(!down, "{i} ms delivered");
                    assert_eq!(t, ms(i) + Duration::from_micros(800) + ms(5));
                }
                other => panic!("{i} ms: {other:?}"),
            }
        }
    }

    #[test]
    fn rate_and_delay_events_apply_to_later_arrivals() {
        let mut l = link(LinkConfig {
            events: events(&["1s rate 6mbit", "2s delay 30ms"]),
            ..LinkConfig::new(12_000_000, ms(10))
        });
        assert_eq!(l.offer(ms(999), 1500), Verdict::Deliver(ms(1010)));
        assert_eq!(l.offer(ms(1000), 1500), Verdict::Deliver(ms(1012)));
        assert_eq!(l.offer(ms(2000), 1500), Verdict::Deliver(ms(2032)));
        // A rate event ends a trace.
        let mut l = link(LinkConfig {
            trace: Some(Trace::parse("100\n").unwrap()),
            events: events(&["1s rate 12mbit"]),
            ..LinkConfig::new(0, ms(0))
        });
        assert_eq!(l.offer(ms(0), 1500), Verdict::Deliver(ms(100)));
        assert_eq!(l.offer(ms(1000), 1500), Verdict::Deliver(ms(1001)));
    }

    #[test]
    fn time_never_goes_backwards() {
        let mut l = link(LinkConfig {
            events: events(&["2s down"]),
            ..LinkConfig::new(12_000_000, ms(0))
        });
        assert_eq!(l.offer(ms(2000), 10), Verdict::Dropped(DropReason::Down));
        assert_eq!(l.offer(ms(0), 10), Verdict::Dropped(DropReason::Down));
    }

    #[test]
    fn bad_configs_name_the_problem() {
        let base = || LinkConfig::new(10_000_000, ms(5));
        let cases: Vec<(LinkConfig, &str)> = vec![
            (LinkConfig::new(0, ms(5)), "rate is 0"),
            (LinkConfig::new(MAX_RATE_BPS + 1, ms(5)), "100 Gbit/s"),
            (LinkConfig::new(1000, Duration::from_secs(61)), "delay"),
            (
                LinkConfig {
                    loss: Loss::Bernoulli(1.5),
                    ..base()
                },
                "Bernoulli loss probability 1.5",
            ),
            (
                LinkConfig {
                    loss: Loss::Bernoulli(-0.1),
                    ..base()
                },
                "not in 0..=1",
            ),
            (
                LinkConfig {
                    loss: Loss::Bernoulli(f64::NAN),
                    ..base()
                },
                "NaN",
            ),
            (
                LinkConfig {
                    loss: Loss::GilbertElliott {
                        good_to_bad: 0.1,
                        bad_to_good: f64::INFINITY,
                        loss_in_good: 0.0,
                        loss_in_bad: 1.0,
                    },
                    ..base()
                },
                "bad_to_good",
            ),
            (
                LinkConfig {
                    queue_bytes: Some(1499),
                    ..base()
                },
                "1500-byte",
            ),
        ];
        for (config, needle) in cases {
            match Link::new(config.clone()) {
                Err(e @ NetnsError::InvalidLink { .. }) => {
                    assert!(e.to_string().contains(needle), "{config:?}: {e}")
                }
                other => panic!("{config:?}: expected InvalidLink, got {other:?}"),
            }
        }
        let bad_events: Vec<(Vec<TimedEvent>, usize, &str)> = vec![
            (events(&["2s down", "1s up"]), 1, "sorted"),
            (
                vec![TimedEvent {
                    at: ms(1),
                    action: EventAction::Rate(0),
                }],
                0,
                "rate is 0",
            ),
            (
                events(&["1s up", "2s down"])
                    .into_iter()
                    .chain([TimedEvent {
                        at: ms(3000),
                        action: EventAction::Delay(Duration::from_secs(90)),
                    }])
                    .collect(),
                2,
                "delay",
            ),
        ];
        for (evs, at, needle) in bad_events {
            match Link::new(LinkConfig {
                events: evs,
                ..base()
            }) {
                Err(NetnsError::Event { index, reason }) => {
                    assert_eq!(index, at, "{reason}");
                    assert!(reason.contains(needle), "{reason}");
                }
                other => panic!("expected an event error, got {other:?}"),
            }
        }
        // Equal times are in order; a trace-driven link needs no rate.
        assert!(Link::new(LinkConfig {
            events: events(&["1s down", "1s up"]),
            ..base()
        })
        .is_ok());
        assert!(Link::new(LinkConfig {
            trace: Some(Trace::parse("1\n").unwrap()),
            ..LinkConfig::new(0, ms(5))
        })
        .is_ok());
    }

    #[test]
    fn from_spec_builds_the_pb_high_rows() {
        let high = Scenario::by_name("pb-high").unwrap();
        let lossy = Scenario::by_name("pb-high-lossy").unwrap();
        let expect = [(10_000_000, ms(5)), (40_000_000, ms(25))];
        for (i, &(rate, delay)) in expect.iter().enumerate() {
            let spec = &high.paths[i];
            let config = LinkConfig::from_spec(spec, 42);
            assert_eq!(config.rate_bps, rate);
            assert_eq!(config.delay, delay);
            assert_eq!(config.loss, Loss::None);
            assert_eq!(config.seed, 42);
            let mut l = link(config);
            assert_eq!(l.config().queue_bytes, Some(spec.default_queue_bytes()));
            // A 1250-byte packet: 10 000 bit on the wire, then the one-way delay.
            let wire = Duration::from_nanos(10_000 * 1_000_000_000 / rate);
            assert_eq!(l.offer(ms(0), 1250), Verdict::Deliver(wire + delay));
            let config = LinkConfig::from_spec(&lossy.paths[i], 1);
            assert_eq!(config.loss, Loss::Bernoulli(0.02));
            assert!(Link::new(config).is_ok());
        }
    }

    fn arb_loss() -> impl Strategy<Value = Loss> {
        prop_oneof![
            Just(Loss::None),
            (0.0..=1.0f64).prop_map(Loss::Bernoulli),
            (0.0..=1.0f64, 0.0..=1.0f64, 0.0..=1.0f64, 0.0..=1.0f64).prop_map(|(a, b, c, d)| {
                Loss::GilbertElliott {
                    good_to_bad: a,
                    bad_to_good: b,
                    loss_in_good: c,
                    loss_in_bad: d,
                }
            }),
        ]
    }

    fn arb_action() -> impl Strategy<Value = EventAction> {
        prop_oneof![
            Just(EventAction::Down),
            Just(EventAction::Up),
            any::<u64>().prop_map(EventAction::Rate),
            any::<u64>().prop_map(|ns| EventAction::Delay(Duration::from_nanos(ns))),
        ]
    }

    fn arb_config() -> impl Strategy<Value = LinkConfig> {
        (
            any::<u64>(),
            any::<u64>(),
            arb_loss(),
            proptest::option::of(any::<u64>()),
            proptest::option::of(proptest::collection::vec(0u64..5000, 1..8)),
            proptest::collection::vec((any::<u64>(), arb_action()), 0..6),
            any::<u64>(),
        )
            .prop_map(|(rate, delay_ns, loss, queue, trace, evs, seed)| {
                let trace = trace.and_then(|mut v| {
                    v.sort_unstable();
                    Trace::parse(&v.iter().map(|x| format!("{x}\n")).collect::<String>()).ok()
                });
                LinkConfig {
                    rate_bps: rate % (2 * MAX_RATE_BPS),
                    delay: Duration::from_nanos(delay_ns % 90_000_000_000),
                    loss,
                    queue_bytes: queue,
                    trace,
                    events: evs
                        .into_iter()
                        .map(|(at, action)| TimedEvent {
                            at: Duration::from_nanos(at),
                            action,
                        })
                        .collect(),
                    seed,
                }
            })
    }

    proptest! {
        #[test]
        fn offer_never_panics(
            config in arb_config(),
            ops in proptest::collection::vec((any::<u64>(), any::<usize>()), 0..40),
        ) {
            if let Ok(mut l) = Link::new(config) {
                for (at, len) in ops {
                    let v = l.offer(Duration::from_nanos(at), len);
                    if let Verdict::Deliver(t) = v {
                        prop_assert!(t >= l.latest, "{t:?} before now {:?}", l.latest);
                    }
                }
                let _ = l.offer(Duration::MAX, usize::MAX);
                let _ = l.offer(Duration::MAX, 1);
            }
        }

        #[test]
        fn lossless_deliveries_respect_delay_and_order(
            rate in 1_000u64..=MAX_RATE_BPS,
            delay_us in 0u64..1_000_000,
            trace in proptest::option::of(proptest::collection::vec(0u64..200, 1..10)),
            len in 1usize..3000,
            gaps in proptest::collection::vec(0u64..5_000_000, 1..100),
        ) {
            let delay = Duration::from_micros(delay_us);
            let trace = trace.and_then(|mut v| {
                v.sort_unstable();
                Trace::parse(&v.iter().map(|x| format!("{x}\n")).collect::<String>()).ok()
            });
            let mut l = Link::new(LinkConfig {
                trace,
                queue_bytes: Some(u64::MAX),
                ..LinkConfig::new(rate, delay)
            })
            .unwrap();
            let mut now = Duration::ZERO;
            let mut last = Duration::ZERO;
            for gap in gaps {
                now += Duration::from_nanos(gap);
                match l.offer(now, len) {
                    Verdict::Deliver(t) => {
                        prop_assert!(t >= now + delay, "{t:?} < {now:?} + {delay:?}");
                        prop_assert!(t >= last, "{t:?} before {last:?}");
                        last = t;
                    }
                    other => prop_assert!(false, "lossless link gave {other:?}"),
                }
            }
        }
    }
}
