//! NewReno window arithmetic (RFC 9002 section 7), without quinn types.

use super::segments::SegmentWindow;

/// NewReno's window: slow start adds the bytes acknowledged, congestion avoidance one segment
/// per window acknowledged, and a loss halves the window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRenoWindow {
    segments: SegmentWindow,
    /// Bytes acknowledged in congestion avoidance towards the next segment of growth.
    avoidance_acked: u64,
}

impl NewRenoWindow {
    /// A window of `initial_window` bytes (at least two segments) with `mss`-byte segments,
    /// in slow start.
    pub fn new(initial_window: u64, mss: u64) -> Self {
        Self {
            segments: SegmentWindow::new(initial_window, mss),
            avoidance_acked: 0,
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

    /// `acked_bytes` newly acknowledged: slow start or congestion avoidance growth.
    pub fn on_ack(&mut self, acked_bytes: u64) {
        if self.segments.in_slow_start() {
            self.grow_in_slow_start(acked_bytes);
            return;
        }
        // Appropriate byte counting: one segment each time a window's worth is acknowledged.
        self.avoidance_acked = self.avoidance_acked.saturating_add(acked_bytes);
        if self.avoidance_acked >= self.segments.window {
            self.avoidance_acked -= self.segments.window;
            self.segments.window = self.segments.window.saturating_add(self.segments.mss);
        }
    }

    /// Adds `growth` bytes in slow start (the bytes acknowledged, or less under HyStart++).
    /// Whatever carries the window past ssthresh already counts towards congestion avoidance.
    pub fn grow_in_slow_start(&mut self, growth: u64) {
        self.segments.window = self.segments.window.saturating_add(growth);
        if self.segments.window >= self.segments.ssthresh {
            self.avoidance_acked = self.segments.window - self.segments.ssthresh;
        }
    }

    /// A congestion event: halve the window (not below two segments) and leave slow start.
    pub fn on_congestion_event(&mut self) {
        self.segments.window = (self.segments.window / 2).max(self.segments.minimum_window());
        self.segments.ssthresh = self.segments.window;
        self.avoidance_acked = 0;
    }

    /// Persistent congestion: the halving of a congestion event, then the window collapses to
    /// the minimum while ssthresh keeps the halved value.
    pub fn on_persistent_congestion(&mut self) {
        self.on_congestion_event();
        self.segments.window = self.segments.minimum_window();
    }

    /// Leave slow start at the current window (HyStart++ found the queue building).
    pub fn end_slow_start(&mut self) {
        self.segments.ssthresh = self.segments.window;
        self.avoidance_acked = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1200;

    /// Acknowledges `bytes` one segment at a time.
    fn ack_segments(window: &mut NewRenoWindow, bytes: u64) {
        let mut acked = 0;
        while acked < bytes {
            let segment = MSS.min(bytes - acked);
            window.on_ack(segment);
            acked += segment;
        }
    }

    #[test]
    fn slow_start_doubles_the_window_per_window_acknowledged() {
        let mut window = NewRenoWindow::new(10 * MSS, MSS);
        for round in 1..=5 {
            let before = window.segments.window();
            ack_segments(&mut window, before);
            assert_eq!(window.segments.window(), (10 * MSS) << round);
        }
    }

    #[test]
    fn a_loss_halves_the_window_and_sets_ssthresh_to_it() {
        let mut window = NewRenoWindow::new(100 * MSS, MSS);
        window.on_congestion_event();
        assert_eq!(window.segments.window(), 50 * MSS);
        assert_eq!(window.segments.ssthresh(), 50 * MSS);
        assert!(!window.segments.in_slow_start());
    }

    #[test]
    fn congestion_avoidance_grows_one_mss_per_window_acknowledged() {
        let mut window = NewRenoWindow::new(100 * MSS, MSS);
        window.on_congestion_event();
        for round in 1..=3 {
            let before = window.segments.window();
            ack_segments(&mut window, before - MSS);
            assert_eq!(
                window.segments.window(),
                before,
                "grew before a full window in round {round}"
            );
            ack_segments(&mut window, MSS);
            assert_eq!(window.segments.window(), before + MSS);
        }
    }

    #[test]
    fn slow_start_past_ssthresh_counts_the_excess_towards_avoidance() {
        let mut window = NewRenoWindow::new(100 * MSS, MSS);
        window.on_congestion_event();
        window.on_persistent_congestion();
        // ssthresh 25 segments, window 2 segments.
        window.segments.window = 24 * MSS;
        window.on_ack(3 * MSS);
        assert_eq!(window.segments.window(), 27 * MSS);
        assert_eq!(window.avoidance_acked, 2 * MSS);
    }

    #[test]
    fn the_window_never_falls_below_two_segments() {
        let mut window = NewRenoWindow::new(0, MSS);
        assert_eq!(window.segments.window(), 2 * MSS);
        window.on_congestion_event();
        assert_eq!(window.segments.window(), 2 * MSS);
        window.on_persistent_congestion();
        assert_eq!(window.segments.window(), 2 * MSS);
    }

    #[test]
    fn absurd_inputs_saturate_without_panicking() {
        let mut window = NewRenoWindow::new(u64::MAX, u64::MAX);
        window.on_ack(u64::MAX);
        assert_eq!(window.segments.window(), u64::MAX);
        window.end_slow_start();
        window.on_ack(u64::MAX);
        window.on_ack(u64::MAX);
        assert_eq!(window.segments.window(), u64::MAX);
        window.on_congestion_event();
        window.set_mss(0);
        window.on_ack(u64::MAX);
        assert!(window.segments.window() >= 2);
    }
}
