//! What CUBIC's and NewReno's windows share: the window, the slow start threshold and the
//! segment size, with RFC 9002's two-segment floor.

/// The window never falls below this many segments (RFC 9002's minimum window).
pub(super) const MIN_SEGMENTS: u64 = 2;

/// A congestion window in bytes, its slow start threshold and its segment size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct SegmentWindow {
    pub(super) window: u64,
    pub(super) ssthresh: u64,
    pub(super) mss: u64,
}

impl SegmentWindow {
    /// A window of `initial_window` bytes (at least two segments) with `mss`-byte segments,
    /// in slow start.
    pub(super) fn new(initial_window: u64, mss: u64) -> Self {
        let mss = mss.max(1);
        Self {
            window: initial_window.max(MIN_SEGMENTS.saturating_mul(mss)),
            ssthresh: u64::MAX,
            mss,
        }
    }

    /// The congestion window in bytes.
    pub(super) fn window(&self) -> u64 {
        self.window
    }

    /// The slow start threshold in bytes (`u64::MAX` until slow start ends).
    pub(super) fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    /// Whether the window is below ssthresh.
    pub(super) fn in_slow_start(&self) -> bool {
        self.window < self.ssthresh
    }

    /// Two segments.
    pub(super) fn minimum_window(&self) -> u64 {
        MIN_SEGMENTS.saturating_mul(self.mss)
    }

    /// The segment size changed; the window keeps at least two of the new segments.
    pub(super) fn set_mss(&mut self, mss: u64) {
        self.mss = mss.max(1);
        self.window = self.window.max(self.minimum_window());
    }
}
