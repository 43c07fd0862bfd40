//! When a plan built on path estimates is stale: the rule PriorityBucket and SEC share.

use std::time::Duration;

use crate::Bandwidth;

/// Delays below this count as this much, so that near-zero loopback delays moving by
/// microseconds do not count as drift.
const DELAY_FLOOR: Duration = Duration::from_millis(1);

/// Whether a path's rate or delay moved from the values a plan used by more than `threshold`,
/// relative to the planned value. A threshold of 0 reacts to any change (NaN and negatives count
/// as 0); infinity never does.
pub(crate) fn drifted(
    planned: (Duration, Bandwidth),
    now: (Duration, Bandwidth),
    threshold: f64,
) -> bool {
    let threshold = threshold.max(0.0);
    let moved = |now: f64, then: f64| (now - then).abs() > threshold * then;
    moved(now.1.bytes_per_sec(), planned.1.bytes_per_sec())
        || moved(
            now.0.max(DELAY_FLOOR).as_secs_f64(),
            planned.0.max(DELAY_FLOOR).as_secs_f64(),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_moves_beyond_the_threshold_are_drift() {
        let rate = |r| Bandwidth::from_bytes_per_sec(r).unwrap();
        let ms = Duration::from_millis;
        let plan = (ms(20), rate(1e6));
        assert!(!drifted(plan, (ms(24), rate(1.2e6)), 0.25));
        assert!(drifted(plan, (ms(26), rate(1e6)), 0.25));
        assert!(drifted(plan, (ms(20), rate(0.7e6)), 0.25));
        assert!(drifted(plan, (ms(20), rate(1.000_001e6)), 0.0));
        assert!(!drifted(plan, (ms(2_000), rate(1.0)), f64::INFINITY));
        assert!(drifted(plan, (ms(20), rate(1.000_001e6)), f64::NAN));
        // Sub-millisecond delays are floored: 10 us to 300 us is no drift.
        let micro = Duration::from_micros;
        assert!(!drifted(
            (micro(10), rate(1e6)),
            (micro(300), rate(1e6)),
            0.25
        ));
    }
}
