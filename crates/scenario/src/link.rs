//! The link model: one direction of one emulated path, pure and deterministic.
//!
//! A packet arriving at `now` passes, in order: the path's up/down state (timed events), random
//! loss (Bernoulli or Gilbert-Elliott, seeded ChaCha8), a drop-tail queue counted in bytes,
//! serialization at the link rate (or at a Mahimahi trace's delivery opportunities), then the
//! one-way propagation delay. Time is a `Duration` since the link's start, passed in by the
//! caller; nothing here reads a clock, so the relay, the simulator and the tests share it.

use std::collections::VecDeque;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::LinkError;
use crate::events::{check_delay, check_rate, EventAction, TimedEvent};
use crate::preset::{default_queue_bytes, PathSpec};
use crate::trace::{duration_from_nanos, Trace, NANOS_PER_SEC, OPPORTUNITY_BYTES};

/// The smallest queue a link accepts: one 1500-byte packet.
const ONE_PACKET_QUEUE_BYTES: u64 = 1500;

/// Bytes of IPv4 (20) and UDP (8) headers: what a link carries on top of each UDP payload.
/// The testbed's links see whole IP packets, so a simulation that offers datagrams charges
/// their payload plus this.
pub const IP_UDP_OVERHEAD: usize = 28;

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

/// The configuration of one direction of one path. Knob names follow the presets'
/// ([`PathSpec`]): rate in bit/s, one-way delay.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    /// Serialization rate in bit/s, `1..=100 Gbit/s`; ignored while `trace` drives the link.
    pub rate_bps: u64,
    /// One-way propagation delay, at most 60 s.
    pub delay: Duration,
    /// Random loss.
    pub loss: Loss,
    /// Drop-tail queue in bytes, at least 1500. `None`: one BDP (rate x 2 x delay), at least
    /// 64 kB ([`default_queue_bytes`]; a trace counts at its mean rate).
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

    /// The config of one direction of a scenario path ([`PathSpec`]): rate, one-way delay,
    /// Bernoulli drop rate.
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

    /// Path `k`'s two links, uplink then downlink, with the loss seeds of run `run_seed`.
    ///
    /// Every emulator and simulator seeds its links by this rule, so one run seed means the
    /// same loss sequences everywhere. Run 0 seeds path 0's directions with 1 and 2, path 1's
    /// with 3 and 4, and so on; each further run seed draws from a block of its own, so loads
    /// with different run seeds see independent losses and loads with the same one the same.
    pub fn of_path(spec: &PathSpec, run_seed: u64, k: usize) -> (Self, Self) {
        // 2k + 2 < 2^16 for any path index the testbed accepts (at most 254 paths).
        let seed = |direction: u64| (run_seed << 16) | (2 * k as u64 + direction);
        (
            Self::from_spec(spec, seed(1)),
            Self::from_spec(spec, seed(2)),
        )
    }

    /// Every problem [`Link::new`] rejects, and the queue size to use.
    fn validate(&self) -> Result<u64, LinkError> {
        if self.trace.is_none() {
            check_rate(self.rate_bps).map_err(LinkError::invalid)?;
        }
        check_delay(self.delay).map_err(LinkError::invalid)?;
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
                return Err(LinkError::invalid(format!(
                    "{name} probability {p} is not in 0..=1"
                )));
            }
        }
        let mut previous = Duration::ZERO;
        for (index, event) in self.events.iter().enumerate() {
            if event.at < previous {
                return Err(LinkError::event(
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
            .map_err(|reason| LinkError::event(index, reason))?;
        }
        match self.queue_bytes {
            Some(q) if q < ONE_PACKET_QUEUE_BYTES => Err(LinkError::invalid(format!(
                "queue of {q} bytes is smaller than one {ONE_PACKET_QUEUE_BYTES}-byte packet"
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

impl Verdict {
    /// When the packet arrives, or `None` if it is dropped.
    pub fn arrival(self) -> Option<Duration> {
        match self {
            Verdict::Deliver(at) => Some(at),
            Verdict::Dropped(_) => None,
        }
    }
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
    pub fn new(mut config: LinkConfig) -> Result<Link, LinkError> {
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
mod tests;
