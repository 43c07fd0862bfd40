//! CUBIC window arithmetic (RFC 9438), without quinn types: driven by the time, the bytes
//! acknowledged and the smoothed RTT.
//!
//! Windows are kept in bytes; the cubic function works in segments, as the RFC's C = 0.4 is
//! in segments per second cubed.

use std::time::{Duration, Instant};

use super::segments::SegmentWindow;

/// Aggressiveness of the cubic function, in segments / s^3.
const C: f64 = 0.4;
/// Multiplicative decrease on a congestion event.
const BETA: f64 = 0.7;
/// Additive increase (segments per RTT) of the Reno-friendly estimate that makes it as fast as
/// Reno with beta 0.5 on average: 3 (1 - beta) / (1 + beta).
const RENO_FRIENDLY_ALPHA: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);
/// The target of one RTT's growth is capped at this multiple of the window.
const MAX_TARGET_RATIO: f64 = 1.5;

/// CUBIC's window and the state of its current congestion avoidance epoch.
#[derive(Debug, Clone, PartialEq)]
pub struct CubicWindow {
    segments: SegmentWindow,
    /// W_max in bytes: the window before the last reduction, lowered by fast convergence.
    /// `None` before any loss and after persistent congestion, when the epoch starts from the
    /// window it begins with (K = 0).
    w_max: Option<f64>,
    /// The window before the last reduction (cwnd_prior); once the Reno-friendly estimate
    /// reaches it, that estimate grows like Reno's, one segment per RTT.
    cwnd_prior: f64,
    /// `None` until the first acknowledgement in congestion avoidance: the epoch starts when
    /// congestion avoidance does, after recovery.
    epoch: Option<Epoch>,
}

/// One congestion avoidance stage (epoch).
#[derive(Debug, Clone, PartialEq)]
struct Epoch {
    start: Instant,
    /// Seconds after `start` when W_cubic reaches W_max.
    k: f64,
    /// W_max, segments.
    w_max: f64,
    /// The Reno-friendly estimate W_est, bytes.
    reno_estimate: f64,
    /// Growth below one byte, kept so many small acks still add up.
    growth_carry: f64,
}

impl Epoch {
    /// W_cubic(t) = C (t - K)^3 + W_max, in bytes, `t` seconds after the epoch began.
    fn w_cubic(&self, t: f64, mss: f64) -> f64 {
        (C * (t - self.k).powi(3) + self.w_max) * mss
    }
}

impl CubicWindow {
    /// A window of `initial_window` bytes (at least two segments) with `mss`-byte segments,
    /// in slow start.
    pub fn new(initial_window: u64, mss: u64) -> Self {
        Self {
            segments: SegmentWindow::new(initial_window, mss),
            w_max: None,
            cwnd_prior: 0.0,
            epoch: None,
        }
    }

    /// The window, its slow start threshold and its segment size.
    pub(super) fn segments(&self) -> &SegmentWindow {
        &self.segments
    }

    /// The segment size changed.
    pub(super) fn set_mss(&mut self, mss: u64) {
        self.segments.set_mss(mss);
    }

    /// K of the current congestion avoidance epoch: how long after it began the window gets
    /// back to W_max. `None` outside congestion avoidance.
    #[cfg(test)]
    pub fn k(&self) -> Option<Duration> {
        let k = self.epoch.as_ref()?.k;
        Duration::try_from_secs_f64(k).ok()
    }

    /// `acked_bytes` newly acknowledged at `now`, with smoothed RTT `rtt`: slow start or
    /// congestion avoidance growth.
    pub fn on_ack(&mut self, now: Instant, acked_bytes: u64, rtt: Duration) {
        if self.segments.in_slow_start() {
            self.grow_in_slow_start(acked_bytes);
            return;
        }
        let mss = self.segments.mss as f64;
        let window = self.segments.window as f64;
        if self.epoch.is_none() {
            self.epoch = Some(self.start_epoch(now));
        }
        let Some(epoch) = self.epoch.as_mut() else {
            return;
        };
        let acked = acked_bytes as f64;
        let alpha = if epoch.reno_estimate >= self.cwnd_prior {
            1.0
        } else {
            RENO_FRIENDLY_ALPHA
        };
        epoch.reno_estimate += alpha * acked * mss / window;

        let t = now.saturating_duration_since(epoch.start).as_secs_f64();
        if epoch.w_cubic(t, mss) < epoch.reno_estimate {
            // Reno-friendly region: grow at least as fast as Reno would.
            self.segments.window = self.segments.window.max(to_bytes(epoch.reno_estimate));
            return;
        }
        // Concave or convex region: close the gap to where the curve will be one RTT from now,
        // spread over the acks of a window, and at most by half a window per RTT.
        let target = epoch
            .w_cubic(t + rtt.as_secs_f64(), mss)
            .clamp(window, MAX_TARGET_RATIO * window);
        epoch.growth_carry += (target - window) * acked / window;
        if epoch.growth_carry.is_nan() {
            epoch.growth_carry = 0.0;
        }
        let whole = epoch.growth_carry.floor();
        epoch.growth_carry -= whole;
        self.segments.window = self.segments.window.saturating_add(to_bytes(whole));
    }

    /// Congestion avoidance begins at `now` with the current window (cwnd_epoch).
    fn start_epoch(&mut self, now: Instant) -> Epoch {
        let mss = self.segments.mss as f64;
        let window = self.segments.window as f64;
        let (w_max, k) = match self.w_max {
            Some(w_max) if w_max > window => (w_max, ((w_max - window) / mss / C).cbrt()),
            Some(w_max) => (w_max, 0.0),
            None => {
                // No loss to remember (HyStart++ ended slow start, or persistent congestion
                // reset W_max): the curve starts on its plateau.
                self.cwnd_prior = window;
                (window, 0.0)
            }
        };
        Epoch {
            start: now,
            k,
            w_max: w_max / mss,
            reno_estimate: window,
            growth_carry: 0.0,
        }
    }

    /// Adds `growth` bytes in slow start (the bytes acknowledged, or less under HyStart++).
    pub fn grow_in_slow_start(&mut self, growth: u64) {
        self.segments.window = self.segments.window.saturating_add(growth);
    }

    /// A congestion event: remember W_max (lowered by fast convergence when the window did
    /// not get back to the last one, to leave room to newer flows), multiply the window by
    /// beta and start a new epoch when congestion avoidance resumes.
    pub fn on_congestion_event(&mut self) {
        let window = self.segments.window as f64;
        let w_max = match self.w_max {
            Some(last) if window < last => window * (1.0 + BETA) / 2.0,
            _ => window,
        };
        self.w_max = Some(w_max);
        self.cwnd_prior = window;
        self.segments.ssthresh = to_bytes(window * BETA).max(self.segments.minimum_window());
        self.segments.window = self.segments.ssthresh;
        self.epoch = None;
    }

    /// Persistent congestion: ssthresh as on a congestion event, the window collapses to the
    /// minimum, and the next epoch starts from the window it begins with (W_max = that
    /// window, K = 0), as RFC 9438 does after a retransmission timeout.
    pub fn on_persistent_congestion(&mut self) {
        self.on_congestion_event();
        self.segments.window = self.segments.minimum_window();
        self.w_max = None;
    }

    /// Leave slow start at the current window (HyStart++ found the queue building); the first
    /// epoch starts on the curve's plateau at this window.
    pub fn end_slow_start(&mut self) {
        self.segments.ssthresh = self.segments.window;
        self.epoch = None;
    }
}

/// Bytes from a float: saturating at both ends, NaN as 0.
fn to_bytes(bytes: f64) -> u64 {
    // `as` saturates and maps NaN to 0.
    bytes as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1200;

    /// A synthetic ack clock: every `rtt` the whole window is acknowledged, one segment at a
    /// time spread evenly over the round trip. Returns the time reached.
    fn run(window: &mut CubicWindow, mut now: Instant, rtt: Duration, until: Instant) -> Instant {
        while now < until {
            let segments = (window.segments.window() / MSS).max(1);
            let gap = rtt / u32::try_from(segments).unwrap_or(u32::MAX);
            for _ in 0..segments {
                now += gap;
                window.on_ack(now, MSS, rtt);
            }
        }
        now
    }

    /// W_cubic(t) in segments for W_max and K in segments and seconds.
    fn w_cubic(t: f64, k: f64, w_max: f64) -> f64 {
        C * (t - k).powi(3) + w_max
    }

    /// A window of `segments` in congestion avoidance that just took a loss.
    fn after_a_loss_at(segments: u64) -> CubicWindow {
        let mut window = CubicWindow::new(segments * MSS, MSS);
        window.on_congestion_event();
        window
    }

    #[test]
    fn a_loss_multiplies_the_window_by_beta() {
        let window = after_a_loss_at(100);
        assert_eq!(window.segments.window(), 84_000);
        assert_eq!(window.segments.ssthresh(), 84_000);
        assert!(!window.segments.in_slow_start());
    }

    #[test]
    fn k_is_the_cube_root_of_the_window_reduction_over_c() {
        let mut window = after_a_loss_at(100);
        window.on_ack(Instant::now(), MSS, Duration::from_millis(100));
        // K = cbrt((W_max - cwnd_epoch) / C) = cbrt(30 / 0.4).
        let k = window.k().map(|k| k.as_secs_f64());
        assert!(k.is_some_and(|k| (k - 75f64.cbrt()).abs() < 1e-9), "{k:?}");
    }

    #[test]
    fn after_a_loss_the_window_follows_w_cubic() {
        // W_max 1000 segments: K is 9 s, and the Reno-friendly estimate (0.53 segments per
        // RTT) stays far below the curve, concave before K and convex after.
        let rtt = Duration::from_millis(100);
        let mut window = after_a_loss_at(1000);
        let start = Instant::now();
        window.on_ack(start, MSS, rtt);
        let k = 750f64.cbrt();
        let mut now = start;
        for t in [0.5, 1.0, 3.0, 6.0, k, 11.0, 13.0, 15.0] {
            now = run(&mut window, now, rtt, start + Duration::from_secs_f64(t));
            let elapsed = (now - start).as_secs_f64();
            let expected = w_cubic(elapsed, k, 1000.0);
            let actual = window.segments.window() as f64 / MSS as f64;
            // The window aims one RTT ahead and closes the gap over the round, so it stays
            // within a fraction of a percent of the curve.
            assert!(
                (actual - expected).abs() / expected < 0.002,
                "at {elapsed:.2} s: {actual:.1} segments, W_cubic {expected:.1}"
            );
        }
    }

    #[test]
    fn in_the_reno_friendly_region_the_window_follows_w_est() {
        // A short RTT and a small W_max: Reno's one segment per RTT outruns the cubic curve.
        let rtt = Duration::from_millis(10);
        let mut window = after_a_loss_at(20);
        let start = Instant::now();
        window.on_ack(start, MSS, rtt);
        let k = (6.0f64 / C).cbrt();
        let now = run(&mut window, start, rtt, start + Duration::from_millis(500));
        let t = (now - start).as_secs_f64();
        let segments = window.segments.window() as f64 / MSS as f64;
        assert!(
            segments > w_cubic(t, k, 20.0) + 5.0,
            "{segments} segments at {t} s"
        );
        let estimate = window.epoch.as_ref().map_or(0.0, |e| e.reno_estimate);
        assert_eq!(window.segments.window(), to_bytes(estimate));
        // W_est: 0.53 segments per RTT from 14 segments to cwnd_prior (20), then one per RTT:
        // about 11 rounds, then 39 more by 500 ms.
        let rounds = t / rtt.as_secs_f64();
        let to_prior = 6.0 / RENO_FRIENDLY_ALPHA;
        let expected = 20.0 + (rounds - to_prior);
        assert!(
            (segments - expected).abs() < 2.0,
            "{segments} vs {expected}"
        );
    }

    #[test]
    fn fast_convergence_lowers_w_max_when_the_window_did_not_recover() {
        let mut window = after_a_loss_at(100);
        // Lost again at 70 segments, below the last W_max of 100.
        window.on_congestion_event();
        assert_eq!(window.w_max, Some(84_000.0 * (1.0 + BETA) / 2.0));
        assert_eq!(window.segments.window(), to_bytes(84_000.0 * BETA));
    }

    #[test]
    fn exiting_slow_start_without_a_loss_starts_on_the_plateau() {
        let mut window = CubicWindow::new(50 * MSS, MSS);
        window.end_slow_start();
        window.on_ack(Instant::now(), MSS, Duration::from_millis(50));
        assert_eq!(window.k(), Some(Duration::ZERO));
        assert_eq!(window.segments.ssthresh(), 50 * MSS);
    }

    #[test]
    fn persistent_congestion_collapses_the_window_and_restarts_the_curve() {
        let mut window = after_a_loss_at(100);
        window.on_persistent_congestion();
        assert_eq!(window.segments.window(), 2 * MSS);
        assert_eq!(window.segments.ssthresh(), to_bytes(84_000.0 * BETA));
        assert!(window.segments.in_slow_start());
    }

    #[test]
    fn absurd_inputs_saturate_without_panicking() {
        let start = Instant::now();
        let mut window = CubicWindow::new(u64::MAX, u64::MAX);
        window.on_ack(start, u64::MAX, Duration::MAX);
        window.on_congestion_event();
        window.on_ack(start, u64::MAX, Duration::MAX);
        window.on_ack(start, u64::MAX, Duration::ZERO);
        assert!(window.segments.window() > 0);

        let mut window = after_a_loss_at(100);
        window.on_ack(start + Duration::from_secs(3600), MSS, Duration::ZERO);
        // Time going backwards counts as no time at all.
        window.on_ack(start, u64::MAX, Duration::ZERO);
        // Ten days without a loss: W_cubic is far beyond u64::MAX bytes.
        let later = start + Duration::from_secs(10 * 24 * 3600);
        for _ in 0..200 {
            window.on_ack(later, u64::MAX, Duration::from_secs(1));
        }
        assert_eq!(window.segments.window(), u64::MAX);
        window.set_mss(0);
        window.on_congestion_event();
        window.on_persistent_congestion();
        assert_eq!(window.segments.window(), 2);
    }
}
