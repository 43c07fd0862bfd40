//! Loss-based congestion control, CUBIC (RFC 9438) or NewReno (RFC 9002), with HyStart++
//! (RFC 9406) in the initial slow start, as quinn controllers: build one from a
//! [`LossBasedConfig`].
//!
//! **Why HyStart++.** Slow start doubles the window every round trip until a packet is lost.
//! The loss is noticed about a round trip after the buffer overflowed, so by then the window is
//! near twice what the path holds, a deep buffer is full, and a whole window's worth of packets
//! may be lost at once. HyStart++ watches the minimum RTT of each round instead: when it rises
//! by an eighth of the last round's (clamped to 4-16 ms), a queue is building, so slow start
//! turns into Conservative Slow Start (a quarter of the growth) and, if the rise lasts five
//! rounds, into congestion avoidance, usually before anything is lost. An RTT that falls back
//! below the rise means it was jitter, and slow start resumes.
//!
//! **Rounds from quinn's callbacks.** RFC 9406 ends a round when a packet sent after the round
//! began is acknowledged. quinn reports each transmit's last packet number (`on_sent`) and, at
//! the end of each batch of acknowledgements, the largest packet number acknowledged
//! (`on_end_acks`). So a round notes the packet number last sent when it begins and ends when
//! the largest acknowledged number reaches it; the next round begins at once.
//!
//! **RTT samples.** quinn's `RttEstimator` exposes the smoothed and minimum RTT but not the
//! latest sample, so the controller takes one sample per ack batch itself: the shortest time
//! from sending to now over the batch's packets, which is the newest packet's (RFC 9002's
//! `latest_rtt`). It reaches HyStart++ at the end of the batch, after the round check, so the
//! ack that ends a round counts towards the next one, as in the RFC.
//!
//! **L, the growth cap per ack.** RFC 9406 caps slow start growth at L = 8 segments per ack
//! for senders that do not pace and leaves it uncapped (L = infinity) for senders that do.
//! quinn paces every connection (a token bucket refilled at 1.25 windows per smoothed RTT), so
//! a large ack does not turn into a line-rate burst, and L is infinity.

mod cubic;
mod hystart;
mod new_reno;
mod segments;
#[cfg(test)]
mod tests;

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::congestion::{Controller, ControllerFactory, ControllerMetrics};

use cubic::CubicWindow;
#[cfg(test)]
use hystart::HyStartState;
use hystart::{HyStart, RoundTracker};
use new_reno::NewRenoWindow;
use segments::{SegmentWindow, MIN_SEGMENTS};

/// quinn's default initial window: 10 packets of the 1200-byte minimum QUIC datagram.
const DEFAULT_INITIAL_WINDOW: u64 = 10 * 1200;

/// The window arithmetic a [`LossBasedConfig`] uses after slow start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossAlgorithm {
    /// CUBIC (RFC 9438): the window follows a cubic curve back to where the last loss was,
    /// then probes beyond it, and shrinks by 30% on loss.
    Cubic,
    /// NewReno (RFC 9002): one segment per round trip, and the window halves on loss.
    NewReno,
}

/// Settings of loss-based congestion control with HyStart++; a quinn [`ControllerFactory`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LossBasedConfig {
    algorithm: LossAlgorithm,
    hystart: bool,
    initial_window: Option<u64>,
}

impl Default for LossBasedConfig {
    fn default() -> Self {
        Self {
            algorithm: LossAlgorithm::Cubic,
            hystart: true,
            initial_window: None,
        }
    }
}

impl LossBasedConfig {
    /// The window arithmetic after slow start, and the loss response.
    ///
    /// # Default
    /// [`LossAlgorithm::Cubic`], as quinn's default controller.
    pub fn algorithm(&mut self, algorithm: LossAlgorithm) -> &mut Self {
        self.algorithm = algorithm;
        self
    }

    /// Whether HyStart++ may end the initial slow start on a rising RTT; without it, slow start
    /// runs until the first loss.
    ///
    /// # Default
    /// `true`.
    pub fn hystart(&mut self, enabled: bool) -> &mut Self {
        self.hystart = enabled;
        self
    }

    /// The initial window in bytes (`None`: the default). A window below two packets is raised
    /// to two.
    ///
    /// # Default
    /// `None`: 10 * 1200 bytes, as quinn's controllers.
    pub fn initial_window(&mut self, bytes: impl Into<Option<u64>>) -> &mut Self {
        self.initial_window = bytes.into();
        self
    }
}

impl LossBasedConfig {
    /// The name [`CongestionControl`](crate::CongestionControl) parses for these settings
    /// (`cubic-hystart`, `newreno-hystart`; without HyStart++, `-slow-start` instead).
    pub fn name(&self) -> &'static str {
        match (self.algorithm, self.hystart) {
            (LossAlgorithm::Cubic, true) => "cubic-hystart",
            (LossAlgorithm::NewReno, true) => "newreno-hystart",
            (LossAlgorithm::Cubic, false) => "cubic-slow-start",
            (LossAlgorithm::NewReno, false) => "newreno-slow-start",
        }
    }
}

impl ControllerFactory for LossBasedConfig {
    fn build(self: Arc<Self>, _now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(LossBased::new(*self, current_mtu))
    }
}

/// The window arithmetic of the chosen algorithm.
#[derive(Debug, Clone)]
enum Window {
    Cubic(CubicWindow),
    NewReno(NewRenoWindow),
}

impl Window {
    fn segments(&self) -> &SegmentWindow {
        match self {
            Self::Cubic(cubic) => cubic.segments(),
            Self::NewReno(reno) => reno.segments(),
        }
    }

    fn on_ack(&mut self, now: Instant, acked_bytes: u64, smoothed_rtt: Duration) {
        match self {
            Self::Cubic(cubic) => cubic.on_ack(now, acked_bytes, smoothed_rtt),
            Self::NewReno(reno) => reno.on_ack(acked_bytes),
        }
    }

    fn grow_in_slow_start(&mut self, growth: u64) {
        match self {
            Self::Cubic(cubic) => cubic.grow_in_slow_start(growth),
            Self::NewReno(reno) => reno.grow_in_slow_start(growth),
        }
    }

    fn on_congestion_event(&mut self, persistent: bool) {
        match (self, persistent) {
            (Self::Cubic(cubic), false) => cubic.on_congestion_event(),
            (Self::Cubic(cubic), true) => cubic.on_persistent_congestion(),
            (Self::NewReno(reno), false) => reno.on_congestion_event(),
            (Self::NewReno(reno), true) => reno.on_persistent_congestion(),
        }
    }

    fn end_slow_start(&mut self) {
        match self {
            Self::Cubic(cubic) => cubic.end_slow_start(),
            Self::NewReno(reno) => reno.end_slow_start(),
        }
    }

    fn set_mss(&mut self, mss: u64) {
        match self {
            Self::Cubic(cubic) => cubic.set_mss(mss),
            Self::NewReno(reno) => reno.set_mss(mss),
        }
    }
}

/// Loss-based congestion control with HyStart++ as a quinn controller.
#[derive(Debug, Clone)]
struct LossBased {
    window: Window,
    /// `None` when the configuration turned HyStart++ off.
    hystart: Option<HyStart>,
    rounds: RoundTracker,
    /// The shortest RTT sample of the ack batch under way.
    batch_rtt: Option<Duration>,
    /// Losses of packets sent before this belong to the congestion event already answered,
    /// and their acks do not grow the window.
    recovery_start: Option<Instant>,
    mss: u64,
    initial_window: u64,
}

impl LossBased {
    fn new(config: LossBasedConfig, current_mtu: u16) -> Self {
        let mss = u64::from(current_mtu).max(1);
        let initial_window = config
            .initial_window
            .unwrap_or(DEFAULT_INITIAL_WINDOW)
            .max(MIN_SEGMENTS.saturating_mul(mss));
        let window = match config.algorithm {
            LossAlgorithm::Cubic => Window::Cubic(CubicWindow::new(initial_window, mss)),
            LossAlgorithm::NewReno => Window::NewReno(NewRenoWindow::new(initial_window, mss)),
        };
        Self {
            window,
            hystart: config.hystart.then(|| HyStart::new(true)),
            rounds: RoundTracker::new(),
            batch_rtt: None,
            recovery_start: None,
            mss,
            initial_window,
        }
    }

    /// HyStart++ while it still shapes slow start.
    fn active_hystart(&mut self) -> Option<&mut HyStart> {
        self.hystart.as_mut().filter(|hystart| hystart.is_active())
    }

    fn in_recovery_for(&self, sent: Instant) -> bool {
        self.recovery_start.is_some_and(|start| sent <= start)
    }

    /// `Controller::on_ack` with the smoothed RTT instead of quinn's estimator, which only
    /// quinn can build.
    fn ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        smoothed_rtt: Duration,
    ) {
        let sample = now.saturating_duration_since(sent);
        self.batch_rtt = Some(self.batch_rtt.map_or(sample, |rtt| rtt.min(sample)));
        // Neither growth from a window the application did not fill nor during recovery.
        if app_limited || self.in_recovery_for(sent) {
            return;
        }
        let mss = self.mss;
        if self.window.segments().in_slow_start() {
            if let Some(hystart) = self.active_hystart() {
                let growth = hystart.slow_start_growth(bytes, mss);
                self.window.grow_in_slow_start(growth);
                return;
            }
        }
        self.window.on_ack(now, bytes, smoothed_rtt);
    }

    /// `Controller::on_end_acks`, for the HyStart++ round and RTT bookkeeping.
    fn end_acks(&mut self, largest_packet_num_acked: Option<u64>) {
        let sample = self.batch_rtt.take();
        if !self.window.segments().in_slow_start() || self.active_hystart().is_none() {
            return;
        }
        if let Some(largest) = largest_packet_num_acked {
            if self.rounds.on_acked(largest)
                && self
                    .active_hystart()
                    .is_some_and(|hystart| hystart.on_round_end())
            {
                self.window.end_slow_start();
                return;
            }
        }
        if let (Some(hystart), Some(rtt)) = (self.active_hystart(), sample) {
            hystart.on_rtt_sample(rtt);
        }
    }

    /// The state of HyStart++, `None` when it is off.
    #[cfg(test)]
    fn hystart_state(&self) -> Option<HyStartState> {
        self.hystart.as_ref().map(HyStart::state)
    }
}

impl Controller for LossBased {
    fn on_sent(&mut self, _now: Instant, _bytes: u64, last_packet_number: u64) {
        self.rounds.on_sent(last_packet_number);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &quinn_proto::RttEstimator,
    ) {
        self.ack(now, sent, bytes, app_limited, rtt.get());
    }

    fn on_end_acks(
        &mut self,
        _now: Instant,
        _in_flight: u64,
        _app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        self.end_acks(largest_packet_num_acked);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        _lost_bytes: u64,
    ) {
        if self.in_recovery_for(sent) {
            return;
        }
        self.recovery_start = Some(now);
        // A loss ends HyStart++; the algorithm's own reduction sets ssthresh.
        if let Some(hystart) = self.hystart.as_mut() {
            hystart.on_congestion();
        }
        self.window.on_congestion_event(is_persistent_congestion);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.mss = u64::from(new_mtu).max(1);
        self.window.set_mss(self.mss);
    }

    fn window(&self) -> u64 {
        self.window.segments().window()
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut metrics = ControllerMetrics::default();
        metrics.congestion_window = self.window.segments().window();
        metrics.ssthresh = Some(self.window.segments().ssthresh());
        metrics
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        self.initial_window
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}
