//! Round-trip time: the RFC 6298 EWMA (smoothed RTT, RTT variation, retransmission timeout) plus the
//! minimum RTT, all starting from a configured prior.
//!
//! PriorityBucket (\[PB\], e-Energy 2020) section 4.1: "As a starting point, we set up initial
//! values of RTT and bandwidth based on prior knowledge on creating a path [...] During the
//! transmission, we maintain smoothed values of RTT estimation of each path. The RTT estimation is
//! based on the exponential weighted moving average mechanism of TCP \[14\]." Reference \[14\] is
//! Jacobson's "Congestion avoidance and control" (SIGCOMM '88), the mechanism RFC 6298
//! standardises; this module implements RFC 6298 section 2.
//!
//! All arithmetic is done on nanoseconds in `u128` and saturates, so no sample, however large or
//! small, makes the estimator panic.

use std::time::Duration;

use crate::EstimateError;

/// RFC 6298 section 2: "K = 4".
const K: u32 = 4;

/// Configuration of an [`RttEstimator`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RttConfig {
    /// The prior: the RTT assumed for a path before its first measurement ("prior knowledge on
    /// creating a path", \[PB\] section 4.1). Must be non-zero.
    ///
    /// # Default
    /// 100 ms.
    pub initial_rtt: Duration,
    /// The lower clamp of the RTO.
    ///
    /// RFC 6298 (2.4): "Whenever RTO is computed, if it is less than 1 second, then the RTO SHOULD be
    /// rounded up to 1 second." Like Linux and QUIC implementations this crate defaults to a smaller
    /// floor; set 1 s for the RFC's value.
    ///
    /// # Default
    /// 200 ms.
    pub min_rto: Duration,
    /// The upper clamp of the RTO; must not be below `min_rto`.
    ///
    /// RFC 6298 (2.5): "A maximum value MAY be placed on RTO provided it is at least 60 seconds."
    ///
    /// # Default
    /// 60 s.
    pub max_rto: Duration,
    /// RFC 6298's G: "Suppose a clock granularity of G seconds."
    ///
    /// # Default
    /// 1 ms.
    pub clock_granularity: Duration,
}

impl Default for RttConfig {
    fn default() -> Self {
        Self {
            initial_rtt: Duration::from_millis(100),
            min_rto: Duration::from_millis(200),
            max_rto: Duration::from_secs(60),
            clock_granularity: Duration::from_millis(1),
        }
    }
}

/// The RTT estimator of one path: smoothed RTT and RTT variation after RFC 6298 (alpha = 1/8,
/// beta = 1/4), the minimum RTT, and the RTO derived from them.
///
/// Until the first sample, [`srtt`](Self::srtt) and [`min_rtt`](Self::min_rtt) report the prior
/// [`RttConfig::initial_rtt`] and [`rttvar`](Self::rttvar) half of it, as if the prior had been the
/// first measurement of RFC 6298 (2.2).
#[derive(Debug, Clone)]
pub struct RttEstimator {
    config: RttConfig,
    srtt: Duration,
    rttvar: Duration,
    min_rtt: Duration,
    samples: u64,
}

impl Default for RttEstimator {
    /// An estimator with [`RttConfig::default`].
    fn default() -> Self {
        Self::from_valid(RttConfig::default())
    }
}

impl RttEstimator {
    /// An estimator starting from the prior in `config`.
    ///
    /// # Errors
    /// [`EstimateError::InvalidPrior`] if `initial_rtt` is zero; [`EstimateError::InvalidConfig`] if
    /// `min_rto` exceeds `max_rto`.
    pub fn new(config: RttConfig) -> Result<Self, EstimateError> {
        if config.initial_rtt.is_zero() {
            return Err(EstimateError::InvalidPrior {
                field: "initial_rtt",
                reason: "the initial RTT must be non-zero",
            });
        }
        if config.min_rto > config.max_rto {
            return Err(EstimateError::InvalidConfig {
                field: "min_rto",
                reason: "min_rto must not exceed max_rto",
            });
        }
        Ok(Self::from_valid(config))
    }

    fn from_valid(config: RttConfig) -> Self {
        Self {
            config,
            srtt: config.initial_rtt,
            rttvar: config.initial_rtt / 2,
            min_rtt: config.initial_rtt,
            samples: 0,
        }
    }

    /// Feeds one RTT measurement.
    ///
    /// The first one follows RFC 6298 (2.2): "When the first RTT measurement R is made, the host MUST
    /// set SRTT <- R, RTTVAR <- R/2". It replaces the prior entirely.
    ///
    /// Later ones follow (2.3): "When a subsequent RTT measurement R' is made, a host MUST set
    /// RTTVAR <- (1 - beta) * RTTVAR + beta * |SRTT - R'|, SRTT <- (1 - alpha) * SRTT + alpha * R'.
    /// The value of SRTT used in the update to RTTVAR is its value before updating SRTT itself using
    /// the second assignment." and "The above SHOULD be computed using alpha=1/8 and beta=1/4".
    ///
    /// A zero sample is accepted as it is (a clock coarser than the path; G in [`rto`](Self::rto)
    /// covers it). Arithmetic saturates, so any `Duration` is accepted.
    pub fn on_sample(&mut self, rtt: Duration) {
        if self.samples == 0 {
            // (2.2): SRTT <- R, RTTVAR <- R/2.
            self.srtt = rtt;
            self.rttvar = rtt / 2;
            self.min_rtt = rtt;
        } else {
            let srtt = nanos(self.srtt);
            let r = nanos(rtt);
            // (2.3), in this order: RTTVAR first, with the old SRTT.
            // RTTVAR <- (1 - 1/4) * RTTVAR + 1/4 * |SRTT - R'|
            self.rttvar = from_nanos((3 * nanos(self.rttvar) + srtt.abs_diff(r)) / 4);
            // SRTT <- (1 - 1/8) * SRTT + 1/8 * R'
            self.srtt = from_nanos((7 * srtt + r) / 8);
            self.min_rtt = self.min_rtt.min(rtt);
        }
        self.samples = self.samples.saturating_add(1);
    }

    /// The smoothed RTT (RFC 6298 SRTT); the prior until the first sample.
    pub fn srtt(&self) -> Duration {
        self.srtt
    }

    /// The RTT variation (RFC 6298 RTTVAR); half the prior until the first sample.
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// The smallest RTT sample seen; the prior until the first sample.
    pub fn min_rtt(&self) -> Duration {
        self.min_rtt
    }

    /// The retransmission timeout: RFC 6298 "RTO <- SRTT + max (G, K*RTTVAR) where K = 4", clamped
    /// to [`min_rto`, `max_rto`] ((2.4) and (2.5), see [`RttConfig`]).
    ///
    /// Before the first sample the same formula is applied to the prior (3 x `initial_rtt` with the
    /// default G) instead of (2.1)'s fixed "the sender SHOULD set RTO <- 1 second": the prior is
    /// this crate's knowledge of the path.
    pub fn rto(&self) -> Duration {
        let var = self
            .config
            .clock_granularity
            .max(self.rttvar.saturating_mul(K));
        self.srtt
            .saturating_add(var)
            .max(self.config.min_rto)
            .min(self.config.max_rto)
    }

    /// How many samples have been fed.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The configuration this estimator was built with.
    pub fn config(&self) -> &RttConfig {
        &self.config
    }
}

fn nanos(d: Duration) -> u128 {
    d.as_nanos()
}

/// Nanoseconds back to a `Duration`, saturating at `Duration::MAX`.
fn from_nanos(n: u128) -> Duration {
    const NANOS_PER_SEC: u128 = 1_000_000_000;
    match u64::try_from(n / NANOS_PER_SEC) {
        // The remainder is below 10^9 and fits a u32.
        Ok(secs) => Duration::new(secs, (n % NANOS_PER_SEC) as u32),
        Err(_) => Duration::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn us(v: u64) -> Duration {
        Duration::from_micros(v)
    }

    #[test]
    fn prior_before_first_sample() {
        let rtt = RttEstimator::new(RttConfig::default()).unwrap();
        assert_eq!(rtt.samples(), 0);
        assert_eq!(rtt.srtt(), ms(100));
        assert_eq!(rtt.rttvar(), ms(50));
        assert_eq!(rtt.min_rtt(), ms(100));
        // 100 + max(1, 4 * 50) = 300 ms.
        assert_eq!(rtt.rto(), ms(300));
        assert_eq!(RttEstimator::default().srtt(), ms(100));
    }

    #[test]
    fn rfc6298_worked_sequence() {
        let mut rtt = RttEstimator::new(RttConfig::default()).unwrap();

        // (2.2): SRTT = 100, RTTVAR = 50, RTO = 100 + 4 * 50 = 300.
        rtt.on_sample(ms(100));
        assert_eq!(
            (rtt.srtt(), rtt.rttvar(), rtt.rto()),
            (ms(100), ms(50), ms(300))
        );

        // (2.3) with R' = 200:
        // RTTVAR = 3/4 * 50 + 1/4 * |100 - 200| = 37.5 + 25 = 62.5
        // SRTT   = 7/8 * 100 + 1/8 * 200       = 87.5 + 25 = 112.5
        // RTO    = 112.5 + 4 * 62.5 = 362.5
        rtt.on_sample(ms(200));
        assert_eq!(rtt.rttvar(), us(62_500));
        assert_eq!(rtt.srtt(), us(112_500));
        assert_eq!(rtt.rto(), us(362_500));

        // R' = 50:
        // RTTVAR = 3/4 * 62.5 + 1/4 * |112.5 - 50| = 46.875 + 15.625 = 62.5
        // SRTT   = 7/8 * 112.5 + 1/8 * 50          = 98.4375 + 6.25  = 104.6875
        // RTO    = 104.6875 + 250 = 354.6875
        rtt.on_sample(ms(50));
        assert_eq!(rtt.rttvar(), us(62_500));
        assert_eq!(rtt.srtt(), Duration::from_nanos(104_687_500));
        assert_eq!(rtt.rto(), Duration::from_nanos(354_687_500));

        // R' = 104.6875 (equal to SRTT): SRTT unchanged, RTTVAR = 3/4 * 62.5 = 46.875.
        rtt.on_sample(Duration::from_nanos(104_687_500));
        assert_eq!(rtt.srtt(), Duration::from_nanos(104_687_500));
        assert_eq!(rtt.rttvar(), Duration::from_nanos(46_875_000));
        assert_eq!(rtt.rto(), Duration::from_nanos(104_687_500 + 187_500_000));

        assert_eq!(rtt.samples(), 4);
        assert_eq!(rtt.min_rtt(), ms(50));
    }

    #[test]
    fn first_sample_replaces_the_prior() {
        let mut rtt = RttEstimator::new(RttConfig {
            initial_rtt: ms(500),
            ..RttConfig::default()
        })
        .unwrap();
        rtt.on_sample(ms(20));
        assert_eq!(rtt.srtt(), ms(20));
        assert_eq!(rtt.rttvar(), ms(10));
        assert_eq!(rtt.min_rtt(), ms(20));
    }

    #[test]
    fn min_rtt_tracks_the_smallest_sample() {
        let mut rtt = RttEstimator::default();
        for v in [80, 40, 90, 45, 41, 300] {
            rtt.on_sample(ms(v));
        }
        assert_eq!(rtt.min_rtt(), ms(40));
        // Larger than the prior: min RTT follows the samples, not the prior.
        let mut rtt = RttEstimator::default();
        rtt.on_sample(ms(250));
        rtt.on_sample(ms(400));
        assert_eq!(rtt.min_rtt(), ms(250));
    }

    #[test]
    fn rto_is_clamped() {
        let config = RttConfig {
            min_rto: ms(200),
            max_rto: ms(1_000),
            ..RttConfig::default()
        };
        // Tiny RTTs: 1 + max(1, 4 * 0.5) = 3 ms, raised to 200.
        let mut rtt = RttEstimator::new(config).unwrap();
        rtt.on_sample(ms(1));
        assert_eq!(rtt.rto(), ms(200));
        // Huge RTTs: capped at 1 s.
        let mut rtt = RttEstimator::new(config).unwrap();
        rtt.on_sample(ms(900));
        assert_eq!(rtt.rto(), ms(1_000));
    }

    #[test]
    fn clock_granularity_bounds_the_variance_term() {
        let config = RttConfig {
            min_rto: Duration::ZERO,
            clock_granularity: ms(10),
            ..RttConfig::default()
        };
        let mut rtt = RttEstimator::new(config).unwrap();
        // Identical samples drive RTTVAR towards zero; RTO stays at SRTT + G.
        for _ in 0..200 {
            rtt.on_sample(ms(30));
        }
        assert_eq!(rtt.srtt(), ms(30));
        assert!(rtt.rttvar() < Duration::from_micros(1));
        assert_eq!(rtt.rto(), ms(40));
    }

    #[test]
    fn invalid_configs_are_refused() {
        let zero_prior = RttConfig {
            initial_rtt: Duration::ZERO,
            ..RttConfig::default()
        };
        assert!(matches!(
            RttEstimator::new(zero_prior),
            Err(EstimateError::InvalidPrior {
                field: "initial_rtt",
                ..
            })
        ));
        let inverted = RttConfig {
            min_rto: ms(2_000),
            max_rto: ms(1_000),
            ..RttConfig::default()
        };
        assert!(matches!(
            RttEstimator::new(inverted),
            Err(EstimateError::InvalidConfig {
                field: "min_rto",
                ..
            })
        ));
        // Equal bounds are fine: the RTO is then fixed.
        let fixed = RttConfig {
            min_rto: ms(500),
            max_rto: ms(500),
            ..RttConfig::default()
        };
        assert_eq!(RttEstimator::new(fixed).unwrap().rto(), ms(500));
    }

    #[test]
    fn extreme_samples_do_not_panic() {
        let mut rtt = RttEstimator::default();
        rtt.on_sample(Duration::ZERO);
        assert_eq!(rtt.srtt(), Duration::ZERO);
        assert_eq!(rtt.rto(), ms(200));
        rtt.on_sample(Duration::MAX);
        rtt.on_sample(Duration::MAX);
        rtt.on_sample(Duration::ZERO);
        // 0, then MAX/8, then 15/64 MAX, then 105/512 MAX.
        assert!(rtt.srtt() > Duration::MAX / 5);
        assert_eq!(rtt.rto(), ms(60_000));
        assert_eq!(rtt.min_rtt(), Duration::ZERO);

        let mut rtt = RttEstimator::default();
        rtt.on_sample(Duration::MAX);
        assert_eq!(rtt.srtt(), Duration::MAX);
        assert_eq!(rtt.rto(), ms(60_000));
    }

    #[test]
    fn from_nanos_saturates() {
        assert_eq!(from_nanos(u128::MAX), Duration::MAX);
        assert_eq!(from_nanos(Duration::MAX.as_nanos()), Duration::MAX);
        assert_eq!(from_nanos(1_500_000_001), Duration::new(1, 500_000_001));
    }
}
