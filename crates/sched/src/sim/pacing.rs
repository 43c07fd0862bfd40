//! Pacing: the token bucket quinn spreads a congestion window over a round trip with.
//!
//! Modelled on quinn-proto 0.11's `Pacer` (`quinn-proto/src/connection/pacing.rs` as of the
//! quinn-proto-0.11.16 tag; 0.11 is the line DESIGN.md builds on), itself after RFC 9002
//! section 7.7 (`rate = N * congestion_window / smoothed_rtt`, "Using a value for N that is
//! small, but at least 1 (for example, 1.25)"):
//!
//! - **Rate.** The bucket refills at 5/4 of the congestion window per smoothed RTT. quinn:
//!   `new_tokens = window as f64 * 1.25 * elapsed_rtts`.
//! - **Capacity.** `clamp(window * 2 ms / srtt, 10 MTU, 256 MTU)`: 2 ms worth of one window
//!   per smoothed RTT, never below ten datagrams ("Allows some usage of GSO, and doesn't
//!   slow down the handshake") nor above 256. quinn: `optimal_capacity`, with
//!   `BURST_INTERVAL_NANOS = 2_000_000`, `MIN_BURST_SIZE = 10`, `MAX_BURST_SIZE = 256`. The
//!   bucket starts full, and its tokens are clamped to a new capacity whenever the window (or
//!   MTU) changes.
//! - **Refill is lazy.** Tokens are only added when they fall short of a full-sized packet, by
//!   the time elapsed since the last refill, at most up to the capacity.
//! - **Sending.** A packet leaves only if the bucket holds a full MTU of tokens, and takes its
//!   size in tokens (saturating). Probes after a timeout are neither congestion controlled nor
//!   paced (quinn skips both checks while `loss_probes > 0`) but do take tokens.
//! - **Waiting.** When a packet is held back, the sender wakes when the bucket is *full* again,
//!   not when one packet's tokens are back: quinn's delay is
//!   `srtt * (max(bytes_to_send, capacity) - tokens) / window * 4 / 5`. So a paced window
//!   leaves in bursts of the capacity, one every `capacity / (1.25 window / srtt)`.
//! - **Off switch.** Windows above `u32::MAX` bytes, or a zero smoothed RTT, are not paced.
//!
//! Differences, all deterministic: the arithmetic is on integer nanoseconds and bytes (tokens
//! rounded to the nearest byte, the wake-up rounded up to the next nanosecond, so the bucket
//! really is full when the sender wakes); and the refill instant only moves when tokens were
//! added, as quinn's main branch does since "Improve numerical stability of Pacer::delay"
//! (0.11 truncates and moves it always, so frequent polls could lose time). Newer quinn (main,
//! not yet released) also caps the capacity at `max(window * 10 ms / srtt, MTU)`; 0.11 does not.

use std::time::Duration;

/// quinn 0.11 `BURST_INTERVAL_NANOS`: a full bucket holds this long's worth of window / srtt.
const BURST_INTERVAL: Duration = Duration::from_millis(2);
/// quinn 0.11 `MIN_BURST_SIZE`, in datagrams.
const MIN_BURST_PACKETS: u64 = 10;
/// quinn 0.11 `MAX_BURST_SIZE`, in datagrams.
const MAX_BURST_PACKETS: u64 = 256;
/// The pacing rate is `RATE.0 / RATE.1` congestion windows per smoothed RTT.
const RATE: (u128, u128) = (5, 4);

/// quinn 0.11 `optimal_capacity`: the burst a full bucket lets out.
pub(super) fn capacity(srtt: Duration, window: u64, mtu: u64) -> u64 {
    let rtt = srtt.as_nanos().max(1);
    let target = u128::from(window) * BURST_INTERVAL.as_nanos() / rtt;
    let target = u64::try_from(target).unwrap_or(u64::MAX);
    target.clamp(
        MIN_BURST_PACKETS.saturating_mul(mtu),
        MAX_BURST_PACKETS.saturating_mul(mtu),
    )
}

/// One path's token bucket.
#[derive(Debug, Clone)]
pub(super) struct Pacer {
    capacity: u64,
    last_window: u64,
    last_mtu: u64,
    tokens: u64,
    /// The last refill: tokens accrue from here.
    prev: Duration,
}

impl Pacer {
    /// A full bucket for the initial window, at virtual time zero.
    pub(super) fn new(srtt: Duration, window: u64, mtu: u64) -> Self {
        let capacity = capacity(srtt, window, mtu);
        Self {
            capacity,
            last_window: window,
            last_mtu: mtu,
            tokens: capacity,
            prev: Duration::ZERO,
        }
    }

    /// The bytes pacing lets leave at `now`: the tokens, refilled if they are short of an MTU,
    /// or `u64::MAX` when the window or RTT is outside what is paced. A new packet needs an
    /// MTU of them.
    pub(super) fn budget(&mut self, now: Duration, srtt: Duration, window: u64, mtu: u64) -> u64 {
        if window != self.last_window || mtu != self.last_mtu {
            self.capacity = capacity(srtt, window, mtu);
            self.tokens = self.tokens.min(self.capacity);
            self.last_window = window;
            self.last_mtu = mtu;
        }
        if self.tokens >= mtu {
            return self.tokens;
        }
        if window > u64::from(u32::MAX) || srtt.is_zero() || window == 0 {
            return u64::MAX;
        }
        // tokens = window * 5/4 * elapsed / srtt, to the nearest byte.
        let elapsed = now.saturating_sub(self.prev).as_nanos();
        let numerator = u128::from(window) * RATE.0 * elapsed;
        let denominator = RATE.1 * srtt.as_nanos();
        let added = (2 * numerator + denominator) / (2 * denominator);
        let added = u64::try_from(added).unwrap_or(u64::MAX);
        if added > 0 {
            self.tokens = self.tokens.saturating_add(added).min(self.capacity);
            self.prev = now;
        }
        self.tokens
    }

    /// When the bucket holds its capacity again, if it holds less than an MTU now (after
    /// [`budget`](Self::budget) at `now`): quinn's wake-up,
    /// `srtt * (capacity - tokens) / window * 4/5`, rounded up to the nanosecond.
    pub(super) fn wake(
        &mut self,
        now: Duration,
        srtt: Duration,
        window: u64,
        mtu: u64,
    ) -> Option<Duration> {
        let tokens = self.budget(now, srtt, window, mtu);
        if tokens >= mtu {
            return None;
        }
        let missing = u128::from(self.capacity.max(mtu) - tokens);
        let numerator = srtt.as_nanos() * missing * RATE.1;
        let denominator = u128::from(window) * RATE.0;
        let nanos = numerator.div_ceil(denominator).max(1);
        let delay = Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX));
        Some(now.saturating_add(delay))
    }

    /// A packet of `bytes` left.
    pub(super) fn on_sent(&mut self, bytes: u64) {
        self.tokens = self.tokens.saturating_sub(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MTU: u64 = 1200;

    fn ms(value: u64) -> Duration {
        Duration::from_millis(value)
    }

    #[test]
    fn capacity_is_two_milliseconds_of_window_within_10_and_256_packets() {
        // quinn 0.11's derives_initial_capacity, in this simulator's units.
        let window = 2_000_000;
        assert_eq!(capacity(ms(50), window, MTU), window * 2 / 50);
        assert_eq!(capacity(Duration::ZERO, window, MTU), 256 * MTU);
        assert_eq!(capacity(ms(50), 1, MTU), 10 * MTU);
        // The initial window of ten packets is one burst, whatever the RTT.
        assert_eq!(capacity(ms(10), 10 * MTU, MTU), 10 * MTU);
        assert_eq!(capacity(ms(50), 10 * MTU, MTU), 10 * MTU);
    }

    #[test]
    fn a_burst_of_the_capacity_then_a_wait_until_the_bucket_is_full() {
        // quinn 0.11's computes_pause_correctly: a window of 2 MB over 50 ms gives an 80 kB
        // bucket; emptied, it is full again after 4/5 of the 2 ms burst interval.
        let window = 2_000_000;
        let srtt = ms(50);
        let mut pacer = Pacer::new(srtt, window, 1000);
        let now = Duration::ZERO;
        assert_eq!(pacer.budget(now, srtt, window, 1000), 80_000);
        for _ in 0..80 {
            assert!(pacer.budget(now, srtt, window, 1000) >= 1000);
            pacer.on_sent(1000);
        }
        assert_eq!(pacer.budget(now, srtt, window, 1000), 0);
        let wake = pacer.wake(now, srtt, window, 1000).unwrap();
        assert_eq!(wake - now, Duration::from_micros(1600));
        // Half-way there, half the bucket.
        assert_eq!(
            pacer.budget(now + ms(1) - Duration::from_micros(200), srtt, window, 1000),
            40_000
        );
        // More than the whole way: full, not beyond.
        for _ in 0..40 {
            pacer.on_sent(1000);
        }
        assert_eq!(pacer.budget(now + ms(10), srtt, window, 1000), 80_000);
        assert_eq!(pacer.wake(now + ms(10), srtt, window, 1000), None);
    }

    #[test]
    fn tokens_are_clamped_when_the_window_shrinks_and_kept_when_it_grows() {
        let srtt = ms(10);
        let mut pacer = Pacer::new(srtt, 120_000, MTU);
        assert_eq!(pacer.budget(Duration::ZERO, srtt, 120_000, MTU), 24_000);
        assert_eq!(pacer.budget(Duration::ZERO, srtt, 240_000, MTU), 24_000);
        assert_eq!(pacer.budget(Duration::ZERO, srtt, 60_000, MTU), 12_000);
    }

    #[test]
    fn polls_faster_than_tokens_accrue_still_make_progress() {
        // 1.25 * 12 kB per 10 s is 1.5 bytes per millisecond: polled every 100 us, each poll
        // alone rounds to nothing, but the time since the last refill keeps counting.
        let srtt = Duration::from_secs(10);
        let mut pacer = Pacer::new(srtt, 12_000, MTU);
        pacer.on_sent(12_000);
        let mut now = Duration::ZERO;
        while pacer.budget(now, srtt, 12_000, MTU) < MTU {
            now += Duration::from_micros(100);
            assert!(now < Duration::from_secs(1), "no progress");
        }
        assert!(now <= ms(801), "{now:?}");
    }

    #[test]
    fn huge_windows_and_zero_rtts_are_not_paced() {
        let mut pacer = Pacer::new(ms(10), 12_000, MTU);
        pacer.on_sent(12_000);
        let huge = u64::from(u32::MAX) + 1;
        assert_eq!(pacer.budget(Duration::ZERO, ms(10), huge, MTU), u64::MAX);
        assert_eq!(
            pacer.budget(Duration::ZERO, Duration::ZERO, 12_000, MTU),
            u64::MAX
        );
        assert_eq!(
            pacer.wake(Duration::ZERO, Duration::ZERO, 12_000, MTU),
            None
        );
    }
}
