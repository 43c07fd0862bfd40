//! Errors of the estimators: the only thing that can go wrong is a configuration (a prior or a limit)
//! that makes no sense. Feeding samples never fails.

/// A configuration refused by [`RttEstimator::new`](crate::RttEstimator::new) or
/// [`BandwidthEstimator::new`](crate::BandwidthEstimator::new).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum EstimateError {
    /// A prior ("prior knowledge on creating a path", \[PB\] section 4.1) the estimator cannot start
    /// from: a zero initial RTT, or an initial bandwidth that is NaN, infinite, zero or negative.
    #[error("invalid prior `{field}`: {reason}")]
    InvalidPrior {
        /// The configuration field holding the prior, e.g. `initial_rtt`.
        field: &'static str,
        /// Why it was refused.
        reason: &'static str,
    },
    /// A limit or window that makes no sense: `min_rto` above `max_rto`, or a zero-round window.
    #[error("invalid configuration `{field}`: {reason}")]
    InvalidConfig {
        /// The configuration field refused, e.g. `window_rounds`.
        field: &'static str,
        /// Why it was refused.
        reason: &'static str,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_the_field() {
        let e = EstimateError::InvalidPrior {
            field: "initial_rtt",
            reason: "must be non-zero",
        };
        assert_eq!(
            e.to_string(),
            "invalid prior `initial_rtt`: must be non-zero"
        );
        let e = EstimateError::InvalidConfig {
            field: "window_rounds",
            reason: "must be at least 1",
        };
        assert!(e.to_string().contains("window_rounds"));
    }
}
