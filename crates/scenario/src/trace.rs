//! Mahimahi packet-delivery traces: a link whose rate varies over time.
//!
//! mm-link(1): "Each line in the trace represents a packet delivery opportunity: the time at
//! which an MTU-sized packet can be delivered in the emulation." and "When mm-link reaches the
//! end of an input trace file, it wraps around to the beginning of the trace file." The period of
//! the repetition is the last line's value, as in mahimahi's traces README: a file containing
//! just `1` is a 12 Mbit/s link (one 1500-byte packet per millisecond).
//!
//! Unlike mm-link, which accounts in bytes so that one opportunity can carry several small
//! packets, a [`crate::link::Link`] spends one whole opportunity per packet of up to 1500 bytes
//! (and `ceil(len / 1500)` for a larger one); see [`crate::link::Link::offer`].

use std::time::Duration;

use crate::error::LinkError;

pub(crate) const NANOS_PER_SEC: u128 = 1_000_000_000;

/// `ns` nanoseconds as a `Duration`, saturating at `Duration::MAX`.
pub(crate) fn duration_from_nanos(ns: u128) -> Duration {
    match u64::try_from(ns / NANOS_PER_SEC) {
        // The remainder is below 10^9, so it fits a u32.
        Ok(secs) => Duration::new(secs, u32::try_from(ns % NANOS_PER_SEC).unwrap_or(0)),
        Err(_) => Duration::MAX,
    }
}

/// Bytes one delivery opportunity carries.
pub(crate) const OPPORTUNITY_BYTES: u64 = 1500;

const NANOS_PER_MS: u128 = 1_000_000;

/// A parsed Mahimahi trace: delivery opportunities (ms offsets since the link's start, one
/// 1500-byte packet each) that repeat with the period of the last offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    /// Non-decreasing, non-empty, the last one equal to `period_ms`.
    offsets_ms: Vec<u64>,
    /// The last offset, > 0.
    period_ms: u64,
}

impl Trace {
    /// Parses a trace: one non-negative integer (milliseconds) per line, non-decreasing, the last
    /// one > 0. Blank lines and surrounding whitespace are ignored. Errors name the 1-based line
    /// (0 for an empty trace).
    pub fn parse(text: &str) -> Result<Trace, LinkError> {
        let mut offsets_ms = Vec::new();
        let mut last_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let line = i.saturating_add(1);
            let field = raw.trim();
            if field.is_empty() {
                continue;
            }
            let value: u64 = field.parse().map_err(|_| {
                LinkError::trace(
                    line,
                    format!("{field:?} is not a non-negative integer of milliseconds"),
                )
            })?;
            if let Some(&previous) = offsets_ms.last() {
                if value < previous {
                    return Err(LinkError::trace(
                        line,
                        format!("{value} ms is before the previous line's {previous} ms (a trace must not decrease)"),
                    ));
                }
            }
            offsets_ms.push(value);
            last_line = line;
        }
        let Some(&period_ms) = offsets_ms.last() else {
            return Err(LinkError::trace(
                0,
                "the trace has no delivery opportunities",
            ));
        };
        if period_ms == 0 {
            return Err(LinkError::trace(
                last_line,
                "the last line (the period the trace repeats with) is 0 ms; it must be > 0",
            ));
        }
        Ok(Trace {
            offsets_ms,
            period_ms,
        })
    }

    /// The period the trace repeats with (its last offset).
    pub fn period(&self) -> Duration {
        Duration::from_millis(self.period_ms)
    }

    /// The first delivery opportunity at or after `t` (since the link's start).
    pub fn next_opportunity(&self, t: Duration) -> Duration {
        self.time_of(self.first_index_at_or_after(t))
    }

    /// Mean rate in bits/s (opportunities * 1500 * 8 / period).
    pub fn mean_rate_bps(&self) -> f64 {
        let bits = self.offsets_ms.len() as f64 * (OPPORTUNITY_BYTES * 8) as f64;
        bits / self.period().as_secs_f64()
    }

    /// Opportunities per period (at least 1).
    fn len(&self) -> u128 {
        self.offsets_ms.len() as u128
    }

    fn period_ns(&self) -> u128 {
        u128::from(self.period_ms) * NANOS_PER_MS
    }

    /// The time of opportunity `k`, counting every opportunity of every repetition from 0.
    /// Non-decreasing in `k`; saturates at `Duration::MAX`.
    pub(crate) fn time_of(&self, k: u128) -> Duration {
        let n = self.len();
        let repetition = k / n;
        let index = usize::try_from(k % n).unwrap_or(0);
        let offset = self
            .offsets_ms
            .get(index)
            .copied()
            .unwrap_or(self.period_ms);
        let ns = repetition
            .saturating_mul(self.period_ns())
            .saturating_add(u128::from(offset) * NANOS_PER_MS);
        duration_from_nanos(ns)
    }

    /// The index (as in [`Trace::time_of`]) of the first opportunity at or after `t`.
    pub(crate) fn first_index_at_or_after(&self, t: Duration) -> u128 {
        let t_ns = t.as_nanos();
        let period_ns = self.period_ns();
        let repetition = t_ns / period_ns;
        let rem = t_ns % period_ns;
        // The last offset equals the period, so the tail of the previous repetition reaches
        // into this one: look there first.
        if repetition > 0 {
            let i = self
                .offsets_ms
                .partition_point(|&o| u128::from(o) * NANOS_PER_MS < rem + period_ns);
            if (i as u128) < self.len() {
                return (repetition - 1).saturating_mul(self.len()) + i as u128;
            }
        }
        let i = self
            .offsets_ms
            .partition_point(|&o| u128::from(o) * NANOS_PER_MS < rem);
        repetition
            .saturating_mul(self.len())
            .saturating_add(i as u128)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn parse_errors_name_the_line() {
        let err = |text: &str| match Trace::parse(text) {
            Err(LinkError::Trace { line, reason }) => (line, reason),
            other => panic!("{text:?}: expected a trace error, got {other:?}"),
        };
        assert_eq!(err("").0, 0);
        assert_eq!(err("\n  \n").0, 0);
        let (line, reason) = err("1\n2\nthree\n");
        assert_eq!(line, 3);
        assert!(reason.contains("three"), "{reason}");
        assert_eq!(err("1\n-2\n").0, 2);
        assert_eq!(err("1\n2.5\n").0, 2);
        let (line, reason) = err("5\n6\n\n4\n");
        assert_eq!(line, 4);
        assert!(reason.contains("decrease"), "{reason}");
        let (line, reason) = err("0\n0\n");
        assert_eq!(line, 2);
        assert!(reason.contains("period"), "{reason}");
        assert_eq!(err("99999999999999999999999").0, 1);
    }

    #[test]
    fn parse_accepts_blank_lines_and_whitespace() {
        let t = Trace::parse(" 0\n\n1 \r\n2\n").unwrap();
        assert_eq!(t.period(), ms(2));
        assert_eq!(t.offsets_ms, vec![0, 1, 2]);
    }

    #[test]
    fn one_per_millisecond_is_12_mbit() {
        let t = Trace::parse("1\n").unwrap();
        assert_eq!(t.mean_rate_bps(), 12_000_000.0);
        assert_eq!(t.next_opportunity(Duration::ZERO), ms(1));
        assert_eq!(t.next_opportunity(ms(1)), ms(1));
        assert_eq!(t.next_opportunity(ms(1) + Duration::from_nanos(1)), ms(2));
        assert_eq!(t.next_opportunity(ms(7)), ms(7));
        // Consecutive opportunities are 1 ms apart, across repetitions.
        let k = t.first_index_at_or_after(ms(1));
        assert_eq!(t.time_of(k + 1), ms(2));
        assert_eq!(t.time_of(k + 5), ms(6));
    }

    #[test]
    fn opportunities_repeat_with_the_period() {
        // Two opportunities at 3 ms, one at 10 ms; period 10 ms.
        let t = Trace::parse("3\n3\n10\n").unwrap();
        assert_eq!(t.period(), ms(10));
        assert_eq!(t.mean_rate_bps(), 3.0 * 12_000.0 / 0.010);
        let times: Vec<Duration> = (0..7).map(|k| t.time_of(k)).collect();
        assert_eq!(
            times,
            vec![ms(3), ms(3), ms(10), ms(13), ms(13), ms(20), ms(23)]
        );
        assert_eq!(t.next_opportunity(ms(4)), ms(10));
        assert_eq!(t.next_opportunity(ms(10)), ms(10));
        assert_eq!(t.next_opportunity(ms(11)), ms(13));
        assert_eq!(t.next_opportunity(ms(20)), ms(20));
        assert_eq!(t.first_index_at_or_after(ms(11)), 3);
    }

    #[test]
    fn far_future_saturates_without_panicking() {
        let t = Trace::parse("1\n5\n").unwrap();
        assert_eq!(t.next_opportunity(Duration::MAX), Duration::MAX);
        let k = t.first_index_at_or_after(Duration::MAX);
        assert_eq!(t.time_of(k.saturating_add(10)), Duration::MAX);
        assert_eq!(t.time_of(u128::MAX), Duration::MAX);
    }
}
