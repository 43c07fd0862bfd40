//! One-way delay of a path: a measurement when the caller has one (synchronised clocks, or a
//! timestamp extension), otherwise half the minimum RTT.
//!
//! The schedulers need the time a byte takes to reach the receiver on each path (\[PB\] section 4.1
//! computes completion times from "bandwidth and RTT estimation of all the paths"). Without a
//! measurement the path is assumed symmetric, and the minimum RTT rather than the smoothed one is
//! halved so that queueing delay does not count as propagation.

use std::time::Duration;

use crate::RttEstimator;

/// The one-way delay of a path.
///
/// # Default
/// No measurement: [`estimate`](Self::estimate) returns min RTT / 2.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OneWayDelay {
    measured: Option<Duration>,
}

impl OneWayDelay {
    /// Sets (`Some`) or clears (`None`) a measured one-way delay, which then takes precedence over
    /// the RTT-derived estimate.
    pub fn set_measured(&mut self, delay: Option<Duration>) {
        self.measured = delay;
    }

    /// The measured one-way delay, if one was set.
    pub fn measured(&self) -> Option<Duration> {
        self.measured
    }

    /// The measured delay if one was set, else `rtt.min_rtt() / 2` (which is half the prior
    /// `initial_rtt` until the path's first RTT sample).
    pub fn estimate(&self, rtt: &RttEstimator) -> Duration {
        self.measured.unwrap_or_else(|| rtt.min_rtt() / 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RttConfig;

    #[test]
    fn default_is_half_the_min_rtt() {
        let owd = OneWayDelay::default();
        let mut rtt = RttEstimator::new(RttConfig {
            initial_rtt: Duration::from_millis(80),
            ..RttConfig::default()
        })
        .unwrap();
        // Before any sample: half the prior.
        assert_eq!(owd.estimate(&rtt), Duration::from_millis(40));
        rtt.on_sample(Duration::from_millis(30));
        rtt.on_sample(Duration::from_millis(90));
        // Half the min RTT, not of the smoothed RTT.
        assert_eq!(owd.estimate(&rtt), Duration::from_millis(15));
        assert_eq!(owd.measured(), None);
    }

    #[test]
    fn measured_takes_precedence_and_can_be_cleared() {
        let mut owd = OneWayDelay::default();
        let mut rtt = RttEstimator::default();
        rtt.on_sample(Duration::from_millis(20));
        owd.set_measured(Some(Duration::from_millis(3)));
        assert_eq!(owd.estimate(&rtt), Duration::from_millis(3));
        owd.set_measured(Some(Duration::ZERO));
        assert_eq!(owd.estimate(&rtt), Duration::ZERO);
        owd.set_measured(None);
        assert_eq!(owd.estimate(&rtt), Duration::from_millis(10));
    }
}
