//! Bottleneck bandwidth, BBR style: a delivery-rate sample per acknowledged packet after
//! draft-cheng-iccrg-delivery-rate-estimation, and a windowed maximum of those samples over
//! `window_rounds` round trips, where app-limited samples may raise the maximum but never lower it.
//!
//! PriorityBucket (\[PB\], e-Energy 2020) section 4.1: "As a starting point, we set up initial
//! values of RTT and bandwidth based on prior knowledge on creating a path"; "the bandwidth
//! estimation is based on \[16\]" (Cardwell et al., BBR). The prior is
//! [`BandwidthConfig::initial_bandwidth`].
//!
//! # How a sample is made
//! Every packet remembers, when sent, how much had been delivered (`P.delivered`), when the latest of
//! that was acknowledged (`P.delivered_time`), and when the packet acknowledged then had been sent
//! (`P.first_sent_time`). When the packet is acknowledged, the bytes delivered since it was sent are
//! divided by the longer of the send interval (`P.sent_time - P.first_sent_time`) and the ack
//! interval (`now - P.delivered_time`), the draft's `rs.interval = max(rs.send_elapsed,
//! rs.ack_elapsed)`: taking the longer one keeps ACK compression and stretched ACKs from inflating
//! the rate.
//!
//! # Rounds and the window
//! A round trip ends when a packet sent after the round began is acknowledged (BBR's
//! `packet.delivered >= BBR.next_round_delivered`). The bandwidth is the maximum of the samples of
//! the last `window_rounds` rounds, kept by a three-sample windowed-max filter (constant memory).
//!
//! # Flights that leave an idle path
//! The draft's interval of a flight that leaves an idle path includes the round trip, so a
//! flight of `n` bytes reads at most `n / RTT`: a sender whose flights stay below the
//! bandwidth-delay product, as a page load's bursts do, never measures its path and keeps the
//! prior. With [`BandwidthConfig::idle_flight_samples`] such a flight also gives a lower bound
//! of the bottleneck rate. Every byte acknowledged after the flight's first acknowledgement was
//! sent at or after the flight began, and crossed the bottleneck after that first packet; its
//! acknowledgement cannot come before the flight's start plus the smallest RTT (the first
//! packet's own time) plus those bytes' time at the bottleneck. So
//! `bytes / (now - start - min_rtt) <= bottleneck rate` whatever the path did: queueing, pacing,
//! delayed or bunched acknowledgements only lengthen the interval. Only a smallest RTT that
//! overstates the path's shortens it, so the interval must be at least a twelfth of it (and
//! a millisecond), over at least four packets. Like an app-limited sample, such a sample may
//! raise the estimate, never lower it.
//!
//! A flight begins at a packet of at least 1000 bytes: an acknowledgement or control frame that
//! leaves just ahead of the application's burst would date the flight from before the burst,
//! and the sample would count the wait for it as the path's time. On the testbed, pb-low's
//! document halves read 11-14 Mbit/s of 25 on the path where a small packet led, 16-24 where
//! none did, and PriorityBucket then split the next object up to 71/29 over identical paths.
//!
//! Dated from its first full packet, a 10 kB flight at 25 Mbit/s spans 3.2 ms, under an eighth
//! of lte's 26 ms smallest RTT: with an eighth, lte's documents gave no sample (simulated
//! bing-2013 PLT +16%). With a sixteenth, short flights on pb-high's 50 ms path raised its
//! estimate and google.ru-search-2018 painted 4.5 ms later in the simulation
//! (`docs/results/2026-12-05-flight-start/`). A twelfth keeps both.

use std::time::{Duration, Instant};

use crate::max_filter::WindowedMax;
use crate::EstimateError;

/// Configuration of a [`BandwidthEstimator`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BandwidthConfig {
    /// The prior, in bytes per second: the bandwidth assumed before the first sample ("prior
    /// knowledge on creating a path", \[PB\] section 4.1). Must be finite and positive.
    ///
    /// # Default
    /// 1,250,000 bytes/s (10 Mbit/s).
    pub initial_bandwidth: f64,
    /// The length of the windowed maximum, in round trips (BBR's bottleneck-bandwidth filter
    /// window); the window covers the current round and the `window_rounds - 1` before it. Must be
    /// at least 1.
    ///
    /// # Default
    /// 10.
    pub window_rounds: u64,
    /// Whether a flight that leaves an idle path may raise the estimate by the spacing of its
    /// acknowledgements (the module's "Flights that leave an idle path").
    ///
    /// # Default
    /// `false`: the draft's samples alone, as BBR's model takes them; a scheduler that feeds
    /// paths in bursts turns it on.
    pub idle_flight_samples: bool,
}

impl Default for BandwidthConfig {
    fn default() -> Self {
        Self {
            initial_bandwidth: 1_250_000.0,
            window_rounds: 10,
            idle_flight_samples: false,
        }
    }
}

/// What the estimator needs to remember about a sent packet; returned by
/// [`BandwidthEstimator::on_packet_sent`], stored by the caller with the packet and handed back to
/// [`BandwidthEstimator::on_packet_acked`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentPacketState {
    /// When the packet was sent.
    sent_time: Instant,
    /// The draft's `P.first_sent_time`: send time of the packet most recently acknowledged when
    /// this one was sent.
    first_sent_time: Instant,
    /// The draft's `P.delivered_time`: when `delivered` was reached.
    delivered_time: Instant,
    /// The draft's `P.delivered`: bytes delivered on the path when this packet was sent.
    delivered: u64,
    /// The draft's `P.is_app_limited`.
    app_limited: bool,
}

impl SentPacketState {
    /// When the packet was sent.
    pub fn sent_time(&self) -> Instant {
        self.sent_time
    }

    /// Whether the packet was sent in an application-limited period, so that its sample may raise
    /// the estimate but not lower it.
    pub fn is_app_limited(&self) -> bool {
        self.app_limited
    }
}

/// One delivery-rate sample, produced by an acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateSample {
    /// `delivered / interval`, bytes per second; finite and positive.
    pub delivery_rate: f64,
    /// The sampling interval: the longer of the send and ack intervals. Never zero.
    pub interval: Duration,
    /// Bytes delivered during `interval`, this packet included.
    pub delivered: u64,
    /// Whether the sample comes from an application-limited period (and so could only raise the
    /// estimate).
    pub app_limited: bool,
}

/// The bandwidth estimator of one path.
///
/// Call [`on_packet_sent`](Self::on_packet_sent) for every packet that leaves and
/// [`on_packet_acked`](Self::on_packet_acked) with its [`SentPacketState`] when it is acknowledged
/// (lost packets need no call); read [`bandwidth`](Self::bandwidth) at any time. Every call takes
/// the current time; the estimator never reads a clock, never panics, and holds a fixed amount of
/// memory.
#[derive(Debug, Clone)]
pub struct BandwidthEstimator {
    config: BandwidthConfig,
    /// The draft's `C.delivered`: bytes acknowledged on the path.
    delivered: u64,
    /// The draft's `C.delivered_time`; `None` before the first packet.
    delivered_time: Option<Instant>,
    /// The draft's `C.first_sent_time`; `None` before the first packet.
    first_sent_time: Option<Instant>,
    /// The draft's `C.app_limited`: the `delivered` value that marks the end of the current
    /// app-limited bubble, or 0 when not app-limited.
    app_limited_until: u64,
    /// BBR's `next_round_delivered`.
    next_round_delivered: u64,
    /// BBR's `round_count`.
    round_count: u64,
    /// The smallest ack time of any packet; samples with a shorter interval are unreliable (the draft
    /// discards `rs.interval < C.min_rtt`).
    min_rtt: Option<Duration>,
    /// BBR's `BtlBw` filter.
    max_filter: WindowedMax,
    /// The latest flight that left an idle path, with [`BandwidthConfig::idle_flight_samples`].
    idle_flight: Option<IdleFlight>,
    /// When the last packet that may begin a flight left.
    last_sent: Option<Instant>,
    /// When the last acknowledgement came.
    last_acked: Option<Instant>,
}

/// Bytes in flight that still count as an idle path: a lone control or ACK-only packet,
/// which quinn counts in flight, must not hide that the path is empty.
const IDLE_SLACK: u64 = 1500;

/// The smallest packet that begins a flight (the module's "Flights that leave an idle path").
const FLIGHT_PACKET_MIN: u64 = 1000;

/// The fewest bytes a flight's sample spans (after its first acknowledgement).
const IDLE_FLIGHT_MIN_BYTES: u64 = 4 * 1200;

/// The shortest interval a flight's sample spans, besides a twelfth of the smallest RTT.
const IDLE_FLIGHT_MIN_INTERVAL: Duration = Duration::from_millis(1);

/// A flight that left an idle path: every byte acknowledged since it began was sent at or
/// after `start`.
#[derive(Debug, Clone, Copy)]
struct IdleFlight {
    start: Instant,
    /// `delivered` once its first acknowledgement was counted; those first bytes arrived
    /// within the smallest RTT itself.
    first_acked: Option<u64>,
}

impl Default for BandwidthEstimator {
    /// An estimator with [`BandwidthConfig::default`].
    fn default() -> Self {
        Self::from_valid(BandwidthConfig::default())
    }
}

impl BandwidthEstimator {
    /// An estimator starting from the prior in `config`.
    ///
    /// # Errors
    /// [`EstimateError::InvalidPrior`] if `initial_bandwidth` is NaN, infinite, zero or negative;
    /// [`EstimateError::InvalidConfig`] if `window_rounds` is 0.
    pub fn new(config: BandwidthConfig) -> Result<Self, EstimateError> {
        if !(config.initial_bandwidth.is_finite() && config.initial_bandwidth > 0.0) {
            return Err(EstimateError::InvalidPrior {
                field: "initial_bandwidth",
                reason: "the initial bandwidth must be finite and positive",
            });
        }
        if config.window_rounds == 0 {
            return Err(EstimateError::InvalidConfig {
                field: "window_rounds",
                reason: "the bandwidth window must span at least one round",
            });
        }
        Ok(Self::from_valid(config))
    }

    fn from_valid(config: BandwidthConfig) -> Self {
        // The prior enters the window as a sample of round 0, so it ages out after
        // `window_rounds` round trips like any other: the window-limited samples of slow start
        // (a few packets per RTT) cannot drag a new path's estimate far below what was known of
        // it before the path reached its bottleneck.
        let mut max_filter = WindowedMax::new(config.window_rounds);
        max_filter.update(0, config.initial_bandwidth);
        Self {
            config,
            delivered: 0,
            delivered_time: None,
            first_sent_time: None,
            app_limited_until: 0,
            next_round_delivered: 0,
            round_count: 0,
            min_rtt: None,
            max_filter,
            idle_flight: None,
            last_sent: None,
            last_acked: None,
        }
    }

    /// Call when a packet of `bytes` leaves; `bytes_in_flight` is the amount in flight before it;
    /// `app_limited`: the sender had nothing more to send (BBR marks such samples).
    ///
    /// Returns the state to hand back to [`on_packet_acked`](Self::on_packet_acked).
    ///
    /// With nothing in flight the sampling clocks restart, as in the draft: "if (SND.NXT == SND.UNA)
    /// /* no packets in flight yet? */ C.first_sent_time = C.delivered_time = Now()". An app-limited
    /// send marks the bubble, like the draft's `C.app_limited = (C.delivered + C.pipe) ? : 1`: every
    /// packet sent until that much (this packet included) is delivered is app-limited.
    pub fn on_packet_sent(
        &mut self,
        now: Instant,
        bytes: u64,
        bytes_in_flight: u64,
        app_limited: bool,
    ) -> SentPacketState {
        if bytes >= FLIGHT_PACKET_MIN {
            if self.config.idle_flight_samples
                && bytes_in_flight <= IDLE_SLACK
                && self.flight_begins(now)
            {
                self.idle_flight = Some(IdleFlight {
                    start: now,
                    first_acked: None,
                });
            }
            self.last_sent = Some(now);
        }
        let (first_sent_time, delivered_time) =
            match (bytes_in_flight, self.first_sent_time, self.delivered_time) {
                (0, _, _) | (_, None, _) | (_, _, None) => {
                    self.first_sent_time = Some(now);
                    self.delivered_time = Some(now);
                    (now, now)
                }
                (_, Some(first), Some(delivered)) => (first, delivered),
            };
        if app_limited {
            self.app_limited_until = self
                .delivered
                .saturating_add(bytes_in_flight)
                .saturating_add(bytes)
                .max(1);
        }
        SentPacketState {
            sent_time: now,
            first_sent_time,
            delivered_time,
            delivered: self.delivered,
            app_limited: self.app_limited_until != 0,
        }
    }

    /// Call when that packet is acknowledged; returns the delivery-rate sample it produced.
    ///
    /// Returns `None` when the acknowledgement gives no reliable sample: nothing delivered, a zero
    /// interval, or an interval shorter than the smallest RTT seen (the draft discards those as
    /// unreliable, since a flight cannot be delivered faster than a round trip).
    ///
    /// A sample enters the windowed maximum unless it is app-limited and below the current
    /// estimate, as in BBR's `if (rs.delivery_rate >= BBR.max_bw || !rs.is_app_limited)`: an
    /// app-limited sender measures its own pace, not the path's, so such samples may raise the
    /// maximum but never lower it. Acks may come in any order and `now` may be earlier than the
    /// send time or a previous ack; such times are treated as no time elapsed.
    pub fn on_packet_acked(
        &mut self,
        now: Instant,
        sent: &SentPacketState,
        bytes: u64,
    ) -> Option<RateSample> {
        let rtt = now.saturating_duration_since(sent.sent_time);
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        self.last_acked = Some(self.last_acked.map_or(now, |t| t.max(now)));

        // The draft's UpdateRateSample: C.delivered += P.data_length; C.delivered_time = Now().
        // Kept monotone so that an ack reported late does not move the clock back.
        self.delivered = self.delivered.saturating_add(bytes);
        let delivered_time = self.delivered_time.map_or(now, |t| t.max(now));
        self.delivered_time = Some(delivered_time);

        self.idle_flight_sample(now, sent, bytes);

        // BBR's round counting: a round ends when a packet sent after the round started is acked.
        if sent.delivered >= self.next_round_delivered {
            self.next_round_delivered = self.delivered;
            self.round_count = self.round_count.saturating_add(1);
        }

        // "Clear app-limited field if bubble is ACKed and gone."
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }

        // "rs.send_elapsed = P.sent_time - P.first_sent_time;
        //  rs.ack_elapsed = C.delivered_time - P.delivered_time; C.first_sent_time = P.sent_time"
        let send_elapsed = sent
            .sent_time
            .saturating_duration_since(sent.first_sent_time);
        let ack_elapsed = delivered_time.saturating_duration_since(sent.delivered_time);
        self.first_sent_time = Some(
            self.first_sent_time
                .map_or(sent.sent_time, |t| t.max(sent.sent_time)),
        );

        // "rs.interval = max(rs.send_elapsed, rs.ack_elapsed);
        //  rs.delivered = C.delivered - rs.prior_delivered"
        let interval = send_elapsed.max(ack_elapsed);
        let delivered = self.delivered.saturating_sub(sent.delivered);
        if interval.is_zero() || delivered == 0 || self.min_rtt.is_some_and(|m| interval < m) {
            return None;
        }
        let delivery_rate = delivered as f64 / interval.as_secs_f64();
        if !(delivery_rate.is_finite() && delivery_rate > 0.0) {
            return None;
        }
        let sample = RateSample {
            delivery_rate,
            interval,
            delivered,
            app_limited: sent.app_limited,
        };
        if !sample.app_limited || delivery_rate >= self.bandwidth() {
            self.max_filter.update(self.round_count, delivery_rate);
        }
        Some(sample)
    }

    /// Whether a packet sent at `now` on an idle path begins a flight: the path's last packet
    /// left before its last acknowledgement came, or half a smallest RTT ago (the packets of
    /// one burst, sent before any of them is acknowledged, are one flight).
    fn flight_begins(&self, now: Instant) -> bool {
        match (self.last_sent, self.last_acked) {
            (None, _) => true,
            (Some(sent), Some(acked)) if sent <= acked => true,
            (Some(sent), _) => self
                .min_rtt
                .is_some_and(|m| now.saturating_duration_since(sent) >= m / 2),
        }
    }

    /// Raises the estimate to the rate an acknowledgement of an idle flight's packet proves
    /// (the module's "Flights that leave an idle path"), if that is higher.
    fn idle_flight_sample(&mut self, now: Instant, sent: &SentPacketState, bytes: u64) {
        let (Some(flight), Some(min_rtt)) = (self.idle_flight.as_mut(), self.min_rtt) else {
            return;
        };
        if sent.sent_time < flight.start {
            // A packet from before the flight, acknowledged late: not the flight's bytes.
            if let Some(first_acked) = flight.first_acked.as_mut() {
                *first_acked = first_acked.saturating_add(bytes);
            }
            return;
        }
        let Some(first_acked) = flight.first_acked else {
            flight.first_acked = Some(self.delivered);
            return;
        };
        let flight_bytes = self.delivered.saturating_sub(first_acked);
        let interval = now
            .saturating_duration_since(flight.start)
            .saturating_sub(min_rtt);
        if flight_bytes < IDLE_FLIGHT_MIN_BYTES
            || interval < IDLE_FLIGHT_MIN_INTERVAL.max(min_rtt / 12)
        {
            return;
        }
        let rate = flight_bytes as f64 / interval.as_secs_f64();
        if rate.is_finite() && rate > self.bandwidth() {
            self.max_filter.update(self.round_count, rate);
        }
    }

    /// The estimated bottleneck bandwidth in bytes per second: the windowed maximum of the samples
    /// over the last `window_rounds` rounds, where the prior counts as a sample of round 0.
    /// Always finite and positive.
    pub fn bandwidth(&self) -> f64 {
        self.max_filter
            .get()
            .unwrap_or(self.config.initial_bandwidth)
    }

    /// Round trips counted so far (BBR's `round_count`): 0 before the first ack, then one more
    /// each time a packet sent after the current round began is acknowledged.
    pub fn round_count(&self) -> u64 {
        self.round_count
    }

    /// Bytes acknowledged so far (the draft's `C.delivered`).
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Whether the path is in an application-limited period: packets sent now are marked so.
    pub fn is_app_limited(&self) -> bool {
        self.app_limited_until != 0
    }

    /// The configuration this estimator was built with.
    pub fn config(&self) -> &BandwidthConfig {
        &self.config
    }
}

#[cfg(test)]
mod tests;
