//! Per-path congestion windows: NewReno (RFC 9002 section 7) and Cubic (RFC 9438), in bytes,
//! shaped like quinn's controllers so the simulator's windows grow as the real transport's do.

use std::time::Duration;

use super::Congestion;

/// RFC 9002 section 7.2: "Endpoints SHOULD use an initial congestion window of ten times the
/// maximum datagram size".
const INITIAL_WINDOW_PACKETS: u64 = 10;
/// RFC 9002 section 7.2: "The RECOMMENDED value is 2 * max_datagram_size."
const MINIMUM_WINDOW_PACKETS: u64 = 2;
/// RFC 9002 section 7.3.2: "kLossReductionFactor [...] The RECOMMENDED value is 0.5."
const RENO_REDUCTION: f64 = 0.5;
/// RFC 9438 section 4.6: "beta_cubic SHOULD be set to 0.7".
const CUBIC_BETA: f64 = 0.7;
/// RFC 9438 section 5: "C SHOULD be set to 0.4".
const CUBIC_C: f64 = 0.4;

#[derive(Debug, Clone)]
pub(super) struct Controller {
    kind: Congestion,
    mtu: u64,
    window: u64,
    ssthresh: u64,
    /// Packets sent at or before this instant belong to the current recovery period.
    recovery_start: Option<Duration>,
    /// NewReno: bytes acknowledged towards the next one-MTU increase.
    bytes_acked: u64,
    /// Cubic: start of the current avoidance epoch.
    epoch_start: Option<Duration>,
    /// Cubic: W_max in bytes.
    w_max: f64,
    /// Cubic: K in seconds.
    k: f64,
    /// Cubic: the Reno-friendly estimate W_est in bytes.
    w_est: f64,
    /// Cubic: the window just before the last reduction (RFC 9438's cwnd_prior) in bytes.
    cwnd_prior: f64,
}

impl Controller {
    pub(super) fn new(kind: Congestion, mtu: u64) -> Self {
        Self {
            kind,
            mtu,
            window: INITIAL_WINDOW_PACKETS * mtu,
            ssthresh: u64::MAX,
            recovery_start: None,
            bytes_acked: 0,
            epoch_start: None,
            w_max: 0.0,
            k: 0.0,
            w_est: 0.0,
            cwnd_prior: 0.0,
        }
    }

    /// The congestion window in bytes.
    pub(super) fn window(&self) -> u64 {
        self.window
    }

    fn in_recovery(&self, sent_at: Duration) -> bool {
        self.recovery_start.is_some_and(|start| sent_at <= start)
    }

    fn minimum_window(&self) -> u64 {
        MINIMUM_WINDOW_PACKETS * self.mtu
    }

    /// A packet sent at `sent_at` carrying `bytes` was acknowledged at `now`.
    ///
    /// RFC 9002 section 7.3.2: "The recovery period [...] the congestion window does not
    /// increase"; section 7.8: a sender that is application limited "SHOULD NOT increase the
    /// congestion window" (quinn skips growth on app-limited acks).
    pub(super) fn on_ack(
        &mut self,
        now: Duration,
        sent_at: Duration,
        bytes: u64,
        app_limited: bool,
        srtt: Duration,
    ) {
        if app_limited || self.in_recovery(sent_at) {
            return;
        }
        if self.window < self.ssthresh {
            // Slow start: "the congestion window increases by the number of bytes
            // acknowledged" (RFC 9002 section 7.3.1).
            self.window = self.window.saturating_add(bytes);
            return;
        }
        match self.kind {
            Congestion::NewReno => {
                // Congestion avoidance: "limit the increase of the congestion window to at
                // most one maximum datagram size for each congestion window that is
                // acknowledged" (RFC 9002 section 7.3.3).
                self.bytes_acked += bytes;
                if self.bytes_acked >= self.window {
                    self.bytes_acked -= self.window;
                    self.window += self.mtu;
                }
            }
            Congestion::Cubic => self.cubic_ack(now, bytes, srtt),
        }
    }

    fn cubic_ack(&mut self, now: Duration, bytes: u64, srtt: Duration) {
        let mtu = self.mtu as f64;
        let cwnd = self.window as f64;
        let epoch = *self.epoch_start.get_or_insert_with(|| {
            // RFC 9438 section 4.2, equation 2: K = cubic_root((W_max - cwnd_epoch) / C),
            // in segments; an epoch that starts above W_max starts at the plateau.
            if cwnd < self.w_max {
                self.k = ((self.w_max - cwnd) / mtu / CUBIC_C).cbrt();
            } else {
                self.k = 0.0;
                self.w_max = cwnd;
            }
            self.w_est = cwnd;
            now
        });
        let w_cubic = |t: f64| CUBIC_C * (t - self.k).powi(3) * mtu + self.w_max;
        let t = now.saturating_sub(epoch).as_secs_f64();
        // Section 4.2: the target is W_cubic one RTT ahead, clamped to [cwnd, 1.5 cwnd].
        let target = w_cubic(t + srtt.as_secs_f64()).clamp(cwnd, 1.5 * cwnd);
        // Section 4.3, Reno-friendly region: alpha_cubic = 3 (1 - beta) / (1 + beta) segments per
        // window acknowledged, and "Once W_est has grown to reach the cwnd at the time of most
        // recently setting ssthresh [...] the sender SHOULD set alpha_cubic to 1".
        let alpha = if self.w_est >= self.cwnd_prior {
            1.0
        } else {
            3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA)
        };
        self.w_est += alpha * mtu * bytes as f64 / cwnd;
        let next = if w_cubic(t) < self.w_est {
            self.w_est
        } else {
            // Section 4.4: "cwnd MUST be incremented by (target - cwnd)/cwnd" per segment.
            cwnd + (target - cwnd) * bytes as f64 / cwnd
        };
        if next.is_finite() && next > cwnd {
            self.window = (next as u64).max(self.window);
        }
    }

    /// Packets were declared lost at `now`; `sent_at` is when the newest of them was sent.
    ///
    /// RFC 9002 section 7.3.2: "the sender [...] enters a recovery period [...] A recovery
    /// period ends [...] when a packet sent during the recovery period is acknowledged", and
    /// only losses of packets sent after its start reduce the window again: one reduction
    /// per round trip.
    pub(super) fn on_congestion_event(&mut self, now: Duration, sent_at: Duration) {
        if self.in_recovery(sent_at) {
            return;
        }
        self.recovery_start = Some(now);
        let cwnd = self.window as f64;
        let reduced = match self.kind {
            Congestion::NewReno => cwnd * RENO_REDUCTION,
            Congestion::Cubic => {
                self.cwnd_prior = cwnd;
                // RFC 9438 section 4.7, fast convergence.
                self.w_max = if cwnd < self.w_max {
                    cwnd * (1.0 + CUBIC_BETA) / 2.0
                } else {
                    cwnd
                };
                self.epoch_start = None;
                cwnd * CUBIC_BETA
            }
        };
        self.window = (reduced as u64).max(self.minimum_window());
        self.ssthresh = self.window;
        self.bytes_acked = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MTU: u64 = 1200;
    const RTT: Duration = Duration::from_millis(20);

    #[test]
    fn slow_start_doubles_per_round_and_loss_halves_once_per_round() {
        for kind in [Congestion::NewReno, Congestion::Cubic] {
            let mut cc = Controller::new(kind, MTU);
            assert_eq!(cc.window(), 12_000);
            let t = Duration::from_millis;
            cc.on_ack(t(20), t(0), 12_000, false, RTT);
            assert_eq!(cc.window(), 24_000);
            cc.on_congestion_event(t(40), t(30));
            let after = cc.window();
            assert!((12_000..24_000).contains(&after), "{kind:?}: {after}");
            // A second loss from the same flight does not reduce again.
            cc.on_congestion_event(t(41), t(35));
            assert_eq!(cc.window(), after);
            // Nor does an ack of a packet sent before recovery started grow it.
            cc.on_ack(t(42), t(39), 1200, false, RTT);
            assert_eq!(cc.window(), after);
            // A loss of a packet sent after recovery started does.
            cc.on_congestion_event(t(80), t(50));
            assert!(cc.window() < after);
        }
    }

    #[test]
    fn newreno_grows_one_mtu_per_window_in_avoidance() {
        let mut cc = Controller::new(Congestion::NewReno, MTU);
        let t = Duration::from_millis;
        cc.on_congestion_event(t(1), t(0));
        let w = cc.window();
        assert_eq!(w, 6_000);
        cc.on_ack(t(10), t(5), w, false, RTT);
        assert_eq!(cc.window(), w + MTU);
    }

    #[test]
    fn app_limited_acks_do_not_grow_the_window() {
        let mut cc = Controller::new(Congestion::NewReno, MTU);
        cc.on_ack(Duration::from_millis(20), Duration::ZERO, 12_000, true, RTT);
        assert_eq!(cc.window(), 12_000);
    }

    #[test]
    fn cubic_reno_friendly_growth_becomes_renos_once_past_the_prior_window() {
        // A 1 ms round trip keeps Cubic in the Reno-friendly region (W_cubic is seconds from
        // W_max). RFC 9438 section 4.3: alpha_cubic = 3 (1 - beta) / (1 + beta), about 0.53
        // segment per window, until "W_est >= cwnd_prior", then "the sender SHOULD set
        // alpha_cubic to 1".
        let rtt = Duration::from_millis(1);
        let mut cc = Controller::new(Congestion::Cubic, MTU);
        let t = Duration::from_micros;
        cc.on_ack(t(1000), t(0), 12_000, false, rtt); // 24 kB
        cc.on_congestion_event(t(1001), t(1000));
        assert_eq!(cc.window(), 16_800);
        let mut now = t(2000);
        let mut per_window = Vec::new();
        for _ in 0..40 {
            now += rtt;
            let w = cc.window();
            cc.on_ack(now, now - rtt, w, false, rtt);
            per_window.push(cc.window() - w);
        }
        // First rounds: about 0.53 MTU per window; past 24 kB: one MTU per window.
        assert!((600..=700).contains(&per_window[0]), "{per_window:?}");
        assert!(cc.window() > 30_000, "{}", cc.window());
        assert!(
            per_window[30..].iter().all(|g| (1150..=1250).contains(g)),
            "{per_window:?}"
        );
    }

    #[test]
    fn cubic_recovers_towards_w_max() {
        let mut cc = Controller::new(Congestion::Cubic, MTU);
        let t = Duration::from_millis;
        cc.on_ack(t(20), t(0), 108_000, false, RTT); // 120 kB
        cc.on_congestion_event(t(21), t(20));
        let low = cc.window();
        assert_eq!(low, 84_000);
        let mut now = t(30);
        for _ in 0..200 {
            now += Duration::from_millis(20);
            let w = cc.window();
            cc.on_ack(now, now - RTT, w, false, RTT);
        }
        assert!(cc.window() > 120_000, "{}", cc.window());
    }
}
