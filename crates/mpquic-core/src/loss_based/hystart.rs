//! HyStart++ (RFC 9406) as a pure state machine: it is fed RTT samples and round ends and
//! says how much slow start may grow per ack and when slow start ends. Rounds come from
//! [`RoundTracker`], which works on packet numbers only.

use std::time::Duration;

/// RTT samples a round needs before its minimum is compared (N_RTT_SAMPLE).
const N_RTT_SAMPLE: u32 = 8;
/// Lower clamp of the RTT rise that counts as a queue building (MIN_RTT_THRESH).
const MIN_RTT_THRESH: Duration = Duration::from_millis(4);
/// Upper clamp of that rise (MAX_RTT_THRESH).
const MAX_RTT_THRESH: Duration = Duration::from_millis(16);
/// The rise is this fraction of the previous round's minimum RTT, before clamping
/// (MIN_RTT_DIVISOR).
const MIN_RTT_DIVISOR: u32 = 8;
/// Conservative Slow Start grows this many times slower than slow start (CSS_GROWTH_DIVISOR).
const CSS_GROWTH_DIVISOR: u64 = 4;
/// Rounds of Conservative Slow Start before congestion avoidance (CSS_ROUNDS).
const CSS_ROUNDS: u32 = 5;
/// L for a sender that does not pace: at most this many segments of growth per ack, so one
/// ack cannot release a long line-rate burst.
const UNPACED_GROWTH_CAP_SEGMENTS: u64 = 8;

/// Where HyStart++ is in the initial slow start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HyStartState {
    /// Standard slow start: the window grows by the bytes acknowledged.
    SlowStart,
    /// Conservative Slow Start: the round's minimum RTT rose, so the window grows a quarter as
    /// fast while HyStart++ watches whether the rise lasts.
    ConservativeSlowStart,
    /// Slow start is over (CSS ran its rounds or a loss ended it); HyStart++ has no say any
    /// more.
    CongestionAvoidance,
}

/// HyStart++'s per-round RTT bookkeeping and state, without quinn types.
///
/// The caller reports each RTT sample with [`HyStart::on_rtt_sample`], each round end with
/// [`HyStart::on_round_end`] (which says when slow start is over for good) and a loss with
/// [`HyStart::on_congestion`]; [`HyStart::slow_start_growth`] turns acknowledged bytes into
/// window growth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HyStart {
    state: HyStartState,
    /// L, in segments; `None` is infinity.
    growth_cap_segments: Option<u64>,
    /// Minimum of the first [`N_RTT_SAMPLE`] samples of the current round.
    current_round_min: Option<Duration>,
    /// Samples taken in the current round (stops counting at [`N_RTT_SAMPLE`]).
    samples_in_round: u32,
    last_round_min: Option<Duration>,
    /// The minimum RTT of the round that entered CSS; a later round below it resumes slow
    /// start.
    css_baseline: Option<Duration>,
    /// Rounds ended in CSS, the partial round that entered it included.
    css_rounds: u32,
}

impl HyStart {
    /// A fresh HyStart++ in slow start. `paced`: whether the sender paces its packets; RFC 9406
    /// (section 4.3) caps growth per ack at L = 8 segments only for a sender that does not.
    pub fn new(paced: bool) -> Self {
        Self {
            state: HyStartState::SlowStart,
            growth_cap_segments: (!paced).then_some(UNPACED_GROWTH_CAP_SEGMENTS),
            current_round_min: None,
            samples_in_round: 0,
            last_round_min: None,
            css_baseline: None,
            css_rounds: 0,
        }
    }

    /// The current state.
    #[cfg(test)]
    pub fn state(&self) -> HyStartState {
        self.state
    }

    /// Whether HyStart++ still shapes slow start (slow start or CSS).
    pub fn is_active(&self) -> bool {
        self.state != HyStartState::CongestionAvoidance
    }

    /// Window growth for an ack of `acked_bytes` new bytes with `mss`-byte segments:
    /// min(N, L * MSS), divided by 4 in Conservative Slow Start, and 0 once HyStart++ is over.
    pub fn slow_start_growth(&self, acked_bytes: u64, mss: u64) -> u64 {
        let capped = match self.growth_cap_segments {
            Some(segments) => acked_bytes.min(segments.saturating_mul(mss)),
            None => acked_bytes,
        };
        match self.state {
            HyStartState::SlowStart => capped,
            HyStartState::ConservativeSlowStart => capped / CSS_GROWTH_DIVISOR,
            HyStartState::CongestionAvoidance => 0,
        }
    }

    /// An RTT sample (one per ack). Only the first eight (N_RTT_SAMPLE) of a round count: the
    /// exit test can only newly pass at the eighth sample anyway (the round's minimum only
    /// falls after it), and freezing the minimum there keeps a later, lower sample of the
    /// same round from undoing the CSS entry it has just caused.
    pub fn on_rtt_sample(&mut self, rtt: Duration) {
        if !self.is_active() || self.samples_in_round >= N_RTT_SAMPLE {
            return;
        }
        self.samples_in_round += 1;
        let current = self.current_round_min.map_or(rtt, |min| min.min(rtt));
        self.current_round_min = Some(current);
        if self.samples_in_round < N_RTT_SAMPLE {
            return;
        }
        match self.state {
            HyStartState::SlowStart => {
                let Some(last) = self.last_round_min else {
                    return;
                };
                let threshold = (last / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH);
                // An overflowing bar cannot be reached.
                if last
                    .checked_add(threshold)
                    .is_some_and(|bar| current >= bar)
                {
                    self.state = HyStartState::ConservativeSlowStart;
                    self.css_baseline = Some(current);
                    self.css_rounds = 0;
                }
            }
            HyStartState::ConservativeSlowStart => {
                // The rise was jitter, not a queue: back to full slow start.
                if self.css_baseline.is_some_and(|baseline| current < baseline) {
                    self.state = HyStartState::SlowStart;
                    self.css_baseline = None;
                    self.css_rounds = 0;
                }
            }
            HyStartState::CongestionAvoidance => {}
        }
    }

    /// A round ended and the next began. Returns `true` when this ends slow start for good
    /// (CSS has run its five rounds, CSS_ROUNDS): the caller then sets ssthresh to the window.
    pub fn on_round_end(&mut self) -> bool {
        if !self.is_active() {
            return false;
        }
        self.last_round_min = self.current_round_min.take();
        self.samples_in_round = 0;
        if self.state == HyStartState::ConservativeSlowStart {
            self.css_rounds = self.css_rounds.saturating_add(1);
            if self.css_rounds >= CSS_ROUNDS {
                self.state = HyStartState::CongestionAvoidance;
                return true;
            }
        }
        false
    }

    /// A loss (or ECN mark) in slow start or CSS: the congestion controller's own loss response
    /// applies, and HyStart++ is done (RFC 9406 uses it for the initial slow start only; later
    /// slow starts end at the ssthresh a loss has set).
    pub fn on_congestion(&mut self) {
        self.state = HyStartState::CongestionAvoidance;
    }
}

/// Rounds of a QUIC sender from packet numbers: a round starts by noting the packet number
/// last sent, and ends when an ack's largest acknowledged packet number reaches it, the next
/// round starting at once.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoundTracker {
    last_sent: Option<u64>,
    round_end: Option<u64>,
}

impl RoundTracker {
    /// A tracker before anything was sent.
    pub fn new() -> Self {
        Self::default()
    }

    /// A transmit whose last packet number is `last_packet_number`.
    pub fn on_sent(&mut self, last_packet_number: u64) {
        self.last_sent = Some(last_packet_number);
    }

    /// An ack batch whose largest acknowledged packet number is `largest_acked`. Returns `true`
    /// when a new round starts here. The first ack starts the first round: before it, nothing
    /// has come back to measure.
    pub fn on_acked(&mut self, largest_acked: u64) -> bool {
        let round_over = self.round_end.is_none_or(|end| largest_acked >= end);
        if round_over && self.last_sent.is_some() {
            self.round_end = self.last_sent;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1200;

    fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    /// Feeds one round of `count` samples of `rtt`, then ends the round; returns what
    /// `on_round_end` said.
    fn round(hystart: &mut HyStart, rtt: Duration, count: u32) -> bool {
        for _ in 0..count {
            hystart.on_rtt_sample(rtt);
        }
        hystart.on_round_end()
    }

    #[test]
    fn paced_growth_is_uncapped_and_unpaced_growth_is_capped_at_eight_segments() {
        assert_eq!(
            HyStart::new(true).slow_start_growth(100 * MSS, MSS),
            100 * MSS
        );
        assert_eq!(
            HyStart::new(false).slow_start_growth(100 * MSS, MSS),
            8 * MSS
        );
        assert_eq!(HyStart::new(false).slow_start_growth(3 * MSS, MSS), 3 * MSS);
    }

    #[test]
    fn a_round_whose_min_rtt_rises_past_an_eighth_enters_css() {
        // 80 ms / 8 = 10 ms: 89 ms is not enough, 90 ms is.
        let mut below = HyStart::new(true);
        round(&mut below, ms(80), 8);
        round(&mut below, ms(89), 8);
        assert_eq!(below.state(), HyStartState::SlowStart);
        let mut above = HyStart::new(true);
        round(&mut above, ms(80), 8);
        for _ in 0..8 {
            above.on_rtt_sample(ms(90));
        }
        assert_eq!(above.state(), HyStartState::ConservativeSlowStart);
    }

    #[test]
    fn the_rtt_threshold_is_clamped_to_between_4_and_16_ms() {
        // 10 ms / 8 would be 1.25 ms; the clamp asks for 4 ms.
        let mut short = HyStart::new(true);
        round(&mut short, ms(10), 8);
        round(&mut short, ms(13), 8);
        assert_eq!(short.state(), HyStartState::SlowStart);
        round(&mut short, ms(17), 8);
        assert_eq!(short.state(), HyStartState::ConservativeSlowStart);
        // 400 ms / 8 would be 50 ms; the clamp asks for 16 ms.
        let mut long = HyStart::new(true);
        round(&mut long, ms(400), 8);
        round(&mut long, ms(415), 8);
        assert_eq!(long.state(), HyStartState::SlowStart);
        round(&mut long, ms(431), 8);
        assert_eq!(long.state(), HyStartState::ConservativeSlowStart);
    }

    #[test]
    fn fewer_than_eight_samples_never_end_slow_start() {
        let mut hystart = HyStart::new(true);
        round(&mut hystart, ms(50), 8);
        round(&mut hystart, ms(500), 7);
        assert_eq!(hystart.state(), HyStartState::SlowStart);
    }

    #[test]
    fn only_the_first_eight_samples_of_a_round_count() {
        let mut hystart = HyStart::new(true);
        round(&mut hystart, ms(50), 8);
        for _ in 0..8 {
            hystart.on_rtt_sample(ms(70));
        }
        assert_eq!(hystart.state(), HyStartState::ConservativeSlowStart);
        // A low ninth sample in the round that entered CSS does not undo it.
        hystart.on_rtt_sample(ms(50));
        assert_eq!(hystart.state(), HyStartState::ConservativeSlowStart);
    }

    #[test]
    fn css_grows_a_quarter_as_fast_as_slow_start() {
        let mut hystart = HyStart::new(true);
        round(&mut hystart, ms(50), 8);
        round(&mut hystart, ms(70), 8);
        assert_eq!(hystart.state(), HyStartState::ConservativeSlowStart);
        assert_eq!(hystart.slow_start_growth(4 * MSS, MSS), MSS);
    }

    #[test]
    fn an_rtt_that_falls_back_during_css_returns_to_slow_start() {
        let mut hystart = HyStart::new(true);
        round(&mut hystart, ms(50), 8);
        round(&mut hystart, ms(70), 8);
        assert_eq!(hystart.state(), HyStartState::ConservativeSlowStart);
        // Still at the baseline: CSS goes on.
        round(&mut hystart, ms(70), 8);
        assert_eq!(hystart.state(), HyStartState::ConservativeSlowStart);
        // Below the baseline: the rise was jitter.
        round(&mut hystart, ms(55), 8);
        assert_eq!(hystart.state(), HyStartState::SlowStart);
        assert_eq!(hystart.slow_start_growth(4 * MSS, MSS), 4 * MSS);
    }

    #[test]
    fn css_ends_in_congestion_avoidance_after_five_rounds() {
        let mut hystart = HyStart::new(true);
        round(&mut hystart, ms(50), 8);
        // This round enters CSS and counts as the first of the five.
        let mut ended = round(&mut hystart, ms(70), 8);
        let mut rounds_in_css = 1;
        while !ended {
            assert_eq!(hystart.state(), HyStartState::ConservativeSlowStart);
            ended = round(&mut hystart, ms(75), 8);
            rounds_in_css += 1;
        }
        assert_eq!(rounds_in_css, 5);
        assert_eq!(hystart.state(), HyStartState::CongestionAvoidance);
        assert_eq!(hystart.slow_start_growth(MSS, MSS), 0);
        // Done for good: neither samples nor rounds wake it.
        assert!(!round(&mut hystart, ms(10), 8));
        assert_eq!(hystart.state(), HyStartState::CongestionAvoidance);
    }

    #[test]
    fn a_loss_ends_hystart() {
        let mut hystart = HyStart::new(true);
        round(&mut hystart, ms(50), 8);
        hystart.on_congestion();
        assert_eq!(hystart.state(), HyStartState::CongestionAvoidance);
        assert!(!hystart.is_active());
    }

    #[test]
    fn absurd_rtts_neither_panic_nor_overflow() {
        let mut hystart = HyStart::new(true);
        round(&mut hystart, Duration::MAX, 8);
        round(&mut hystart, Duration::MAX, 8);
        assert_eq!(hystart.state(), HyStartState::SlowStart);
        let mut zero = HyStart::new(false);
        round(&mut zero, Duration::ZERO, 8);
        round(&mut zero, Duration::ZERO, 8);
        assert_eq!(zero.state(), HyStartState::SlowStart);
        round(&mut zero, ms(4), 8);
        assert_eq!(zero.state(), HyStartState::ConservativeSlowStart);
        assert_eq!(zero.slow_start_growth(u64::MAX, u64::MAX), u64::MAX / 4);
    }

    #[test]
    fn a_round_ends_when_the_packet_last_sent_at_its_start_is_acked() {
        let mut rounds = RoundTracker::new();
        // Nothing sent: an ack cannot start a round.
        assert!(!rounds.on_acked(0));
        for pn in 0..10 {
            rounds.on_sent(pn);
        }
        // The first ack starts round 1, which ends with packet 9.
        assert!(rounds.on_acked(0));
        rounds.on_sent(10);
        rounds.on_sent(11);
        assert!(!rounds.on_acked(5));
        assert!(!rounds.on_acked(8));
        assert!(rounds.on_acked(9));
        // Round 2 ends with packet 11, the last sent when it began.
        rounds.on_sent(12);
        assert!(!rounds.on_acked(10));
        assert!(rounds.on_acked(12));
    }
}
