//! FLD, flow-length dependent congestion control, after "Utilizing Connection Usage
//! Characteristics for Faster Web Data Transport" (Moktan et al., 2018): short flows get a
//! faster start and a gentler loss response, long flows behave like NewReno.
//!
//! - Initial window: 10 segments.
//! - Slow start triples the window each round trip (the window grows by twice the bytes each
//!   ack acknowledges) while the flow has sent less than the threshold (default 2 MB); after it,
//!   slow start doubles, as NewReno's.
//! - On loss while below the threshold: Relentless behaviour, the window shrinks by the lost
//!   bytes only. After the threshold: NewReno, the window halves.
//! - Congestion avoidance (after the first loss) adds one segment per window acknowledged.
//!
//! **What a "flow" is on a QUIC path.** A path carries many streams, so FLD counts the bytes the
//! path has sent since it started or since it was last idle for more than
//! [`FldConfig::idle_restart`] (like TCP's restart after idle, RFC 5681 section 4.1): a page
//! load that follows a pause is a new short flow and gets the fast start again, while a long
//! download on the path crosses the threshold and turns into NewReno. Counting per stream
//! instead would hand every small object of a page a tripling window on the same bottleneck.

use std::any::Any;
use std::sync::Arc;
use std::time::{Duration, Instant};

use quinn::congestion::{Controller, ControllerFactory};

/// Segments in the initial window.
const INITIAL_SEGMENTS: u64 = 10;
/// The window never falls below this many segments.
const MIN_SEGMENTS: u64 = 2;

/// Settings of FLD; a quinn [`ControllerFactory`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FldConfig {
    threshold: u64,
    idle_restart: Duration,
}

impl Default for FldConfig {
    fn default() -> Self {
        Self {
            threshold: 2_000_000,
            idle_restart: Duration::from_secs(1),
        }
    }
}

impl FldConfig {
    /// Bytes a flow sends before FLD turns into NewReno.
    ///
    /// # Default
    /// 2,000,000 (the paper's 2 MB).
    pub fn threshold(&mut self, bytes: u64) -> &mut Self {
        self.threshold = bytes;
        self
    }

    /// A pause in sending longer than this starts a new flow.
    ///
    /// # Default
    /// 1 s.
    pub fn idle_restart(&mut self, pause: Duration) -> &mut Self {
        self.idle_restart = pause;
        self
    }
}

impl ControllerFactory for FldConfig {
    fn build(self: Arc<Self>, _now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(Fld {
            window: FldWindow::new(u64::from(current_mtu), self.threshold),
            config: *self,
            recovery_start: None,
            last_sent: None,
        })
    }
}

/// FLD's window arithmetic, apart from quinn so it can be driven by a synthetic ack clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FldWindow {
    window: u64,
    ssthresh: u64,
    mss: u64,
    threshold: u64,
    /// Bytes sent since the flow started.
    sent: u64,
    /// Bytes acknowledged in congestion avoidance towards the next segment of growth.
    avoidance_acked: u64,
}

impl FldWindow {
    /// A fresh flow with `mss`-byte segments; `threshold` bytes before it turns into NewReno
    /// (0: NewReno from the start).
    pub fn new(mss: u64, threshold: u64) -> Self {
        let mss = mss.max(1);
        Self {
            window: INITIAL_SEGMENTS * mss,
            ssthresh: u64::MAX,
            mss,
            threshold,
            sent: 0,
            avoidance_acked: 0,
        }
    }

    /// The congestion window in bytes.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// Whether the flow is still short (below the threshold).
    pub fn is_short(&self) -> bool {
        self.sent < self.threshold
    }

    /// `bytes` left.
    pub fn on_sent(&mut self, bytes: u64) {
        self.sent = self.sent.saturating_add(bytes);
    }

    /// `bytes` were acknowledged.
    pub fn on_ack(&mut self, bytes: u64) {
        if self.window < self.ssthresh {
            // Slow start: a round trip acknowledges a window, so adding twice each ack's bytes
            // triples the window per round trip, adding them once doubles it.
            let growth = if self.is_short() {
                bytes.saturating_mul(2)
            } else {
                bytes
            };
            self.window = self.window.saturating_add(growth);
            return;
        }
        // Congestion avoidance: one segment per window acknowledged.
        self.avoidance_acked = self.avoidance_acked.saturating_add(bytes);
        if self.avoidance_acked >= self.window {
            self.avoidance_acked -= self.window;
            self.window = self.window.saturating_add(self.mss);
        }
    }

    /// A congestion event that lost `lost_bytes`.
    pub fn on_loss(&mut self, lost_bytes: u64) {
        let reduced = if self.is_short() {
            // Relentless: take away exactly what was lost.
            self.window.saturating_sub(lost_bytes)
        } else {
            self.window / 2
        };
        self.window = reduced.max(MIN_SEGMENTS * self.mss);
        self.ssthresh = self.window;
        self.avoidance_acked = 0;
    }

    /// The path was idle: start a new flow.
    fn restart(&mut self) {
        *self = Self::new(self.mss, self.threshold);
    }

    fn set_mss(&mut self, mss: u64) {
        self.mss = mss.max(1);
        self.window = self.window.max(MIN_SEGMENTS * self.mss);
    }
}

/// FLD as a quinn congestion controller.
#[derive(Debug, Clone)]
struct Fld {
    window: FldWindow,
    config: FldConfig,
    /// Losses of packets sent before this belong to the event already answered.
    recovery_start: Option<Instant>,
    last_sent: Option<Instant>,
}

impl Controller for Fld {
    fn on_sent(&mut self, now: Instant, bytes: u64, _last_packet_number: u64) {
        if self
            .last_sent
            .is_some_and(|t| now.saturating_duration_since(t) > self.config.idle_restart)
        {
            self.window.restart();
            self.recovery_start = None;
        }
        self.last_sent = Some(now);
        self.window.on_sent(bytes);
    }

    fn on_ack(
        &mut self,
        _now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        _rtt: &quinn_proto::RttEstimator,
    ) {
        // Neither growth from an app-limited window nor growth during recovery.
        if app_limited || self.recovery_start.is_some_and(|start| sent <= start) {
            return;
        }
        self.window.on_ack(bytes);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        if self.recovery_start.is_some_and(|start| sent <= start) {
            return;
        }
        self.recovery_start = Some(now);
        if is_persistent_congestion {
            self.window.window = MIN_SEGMENTS * self.window.mss;
            self.window.ssthresh = self.window.window;
        } else {
            self.window.on_loss(lost_bytes);
        }
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.window.set_mss(u64::from(new_mtu));
    }

    fn window(&self) -> u64 {
        self.window.window()
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        INITIAL_SEGMENTS * self.window.mss
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1500;

    /// Cumulative bytes sent after each round trip of an ack clock that sends a window per
    /// round trip and has it acknowledged segment by segment, until `flow` bytes are sent.
    fn ack_clock(mut window: FldWindow, flow: u64) -> Vec<u64> {
        let mut sent = 0;
        let mut rounds = Vec::new();
        while sent < flow {
            let burst = window.window().min(flow - sent);
            window.on_sent(burst);
            sent += burst;
            rounds.push(sent);
            let mut acked = 0;
            while acked < burst {
                let segment = MSS.min(burst - acked);
                window.on_ack(segment);
                acked += segment;
            }
        }
        rounds
    }

    #[test]
    fn figure_one_arithmetic_fld_triples_newreno_doubles() {
        let fld = ack_clock(FldWindow::new(MSS, 2_000_000), 195_000);
        assert_eq!(fld, [15_000, 60_000, 195_000]);
        let newreno = ack_clock(FldWindow::new(MSS, 0), 105_000);
        assert_eq!(newreno, [15_000, 45_000, 105_000]);
    }

    #[test]
    fn a_500_kb_flow_takes_four_round_trips_instead_of_six() {
        assert_eq!(ack_clock(FldWindow::new(MSS, 2_000_000), 500_000).len(), 4);
        assert_eq!(ack_clock(FldWindow::new(MSS, 0), 500_000).len(), 6);
    }

    #[test]
    fn below_the_threshold_a_loss_costs_only_the_lost_segments() {
        let mut short = FldWindow::new(MSS, 2_000_000);
        short.on_sent(100_000);
        short.window = 90_000;
        short.on_loss(3 * MSS);
        assert_eq!(short.window(), 90_000 - 3 * MSS);
    }

    #[test]
    fn above_the_threshold_a_loss_halves_the_window() {
        let mut long = FldWindow::new(MSS, 2_000_000);
        long.on_sent(2_500_000);
        long.window = 90_000;
        long.on_loss(3 * MSS);
        assert_eq!(long.window(), 45_000);
    }

    #[test]
    fn after_the_threshold_slow_start_doubles() {
        let mut window = FldWindow::new(MSS, 30_000);
        window.on_sent(30_000);
        let before = window.window();
        window.on_ack(before);
        assert_eq!(window.window(), 2 * before);
    }

    #[test]
    fn after_a_loss_growth_is_one_segment_per_window() {
        let mut window = FldWindow::new(MSS, 2_000_000);
        window.window = 60_000;
        window.on_loss(0);
        let before = window.window();
        for _ in 0..before / MSS {
            window.on_ack(MSS);
        }
        assert_eq!(window.window(), before + MSS);
    }

    #[test]
    fn the_window_never_falls_below_two_segments() {
        let mut window = FldWindow::new(MSS, 2_000_000);
        window.on_loss(u64::MAX);
        assert_eq!(window.window(), 2 * MSS);
    }
}
