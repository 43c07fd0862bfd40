//! A windowed maximum over round trips in constant memory: Kathleen Nichols' algorithm as in Linux
//! `lib/minmax.c` (used by BBR for its bottleneck-bandwidth filter).
//!
//! It keeps the best, second-best and third-best values of different sub-windows, so memory is three
//! samples whatever the window length. A sample taken in round `r` belongs to the window while the
//! current round is below `r + window`: the window covers the current round and the `window - 1`
//! before it. The result is an estimate: after the best sample expires, the next one is the best of a
//! later sub-window, not necessarily the exact maximum of what remains.

/// One value and the round it was taken in.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample {
    round: u64,
    value: f64,
}

/// The running maximum of the values fed in the last `window` rounds.
#[derive(Debug, Clone)]
pub(crate) struct WindowedMax {
    window: u64,
    /// Best, second-best (from a later sub-window), third-best (from a later one still); `None`
    /// before the first value.
    samples: Option<[Sample; 3]>,
}

impl WindowedMax {
    /// An empty filter over `window` rounds (at least 1; 0 is treated as 1).
    pub(crate) fn new(window: u64) -> Self {
        Self {
            window: window.max(1),
            samples: None,
        }
    }

    /// The current maximum, `None` before the first value.
    pub(crate) fn get(&self) -> Option<f64> {
        self.samples.map(|s| s[0].value)
    }

    /// Feeds `value` taken in `round` (rounds must not decrease; an earlier one counts as the
    /// latest) and returns the new maximum.
    pub(crate) fn update(&mut self, round: u64, value: f64) -> f64 {
        let window = self.window;
        let new = Sample { round, value };
        let Some(s) = self.samples.as_mut() else {
            self.samples = Some([new; 3]);
            return value;
        };
        let age = |sample: &Sample| round.saturating_sub(sample.round);

        // A new maximum, or nothing left in the window: forget everything else.
        if value >= s[0].value || age(&s[2]) >= window {
            *s = [new; 3];
            return value;
        }
        if value >= s[1].value {
            s[1] = new;
            s[2] = new;
        } else if value >= s[2].value {
            s[2] = new;
        }

        // Sub-window bookkeeping.
        let dt = age(&s[0]);
        if dt >= window {
            // The best expired: promote the second and third choices. The second may have expired
            // too (the third was checked above), so this may happen twice.
            *s = [s[1], s[2], new];
            if age(&s[0]) >= window {
                *s = [s[1], s[2], new];
            }
        } else if s[1].round == s[0].round && dt > window / 4 {
            // A quarter of the window passed without a new second choice: take one from the second
            // quarter.
            s[1] = new;
            s[2] = new;
        } else if s[2].round == s[1].round && dt > window / 2 {
            // Half the window passed without a new third choice: take one from the last half.
            s[2] = new;
        }
        s[0].value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_then_first_value() {
        let mut f = WindowedMax::new(10);
        assert_eq!(f.get(), None);
        assert_eq!(f.update(0, 5.0), 5.0);
        assert_eq!(f.get(), Some(5.0));
    }

    #[test]
    fn keeps_the_max_within_the_window() {
        let mut f = WindowedMax::new(10);
        f.update(1, 100.0);
        for round in 2..=10 {
            assert_eq!(f.update(round, 10.0), 100.0);
        }
        // Round 11 is 10 rounds after round 1: the 100 expires.
        assert_eq!(f.update(11, 10.0), 10.0);
    }

    #[test]
    fn falls_back_to_a_later_second_choice() {
        let mut f = WindowedMax::new(4);
        f.update(0, 100.0);
        f.update(2, 50.0);
        f.update(3, 20.0);
        // Round 4: the 100 of round 0 expires; the 50 of round 2 is the best left.
        assert_eq!(f.update(4, 10.0), 50.0);
        // Round 6: the 50 expires too.
        assert!(f.update(6, 10.0) <= 20.0);
    }

    #[test]
    fn a_window_of_one_round_only_sees_the_current_round() {
        let mut f = WindowedMax::new(1);
        f.update(1, 100.0);
        assert_eq!(f.update(1, 10.0), 100.0);
        assert_eq!(f.update(2, 10.0), 10.0);
        let mut f = WindowedMax::new(0);
        f.update(1, 100.0);
        assert_eq!(f.update(2, 10.0), 10.0);
    }

    #[test]
    fn long_gap_resets() {
        let mut f = WindowedMax::new(10);
        f.update(0, 100.0);
        f.update(1, 90.0);
        f.update(5, 80.0);
        assert_eq!(f.update(u64::MAX, 1.0), 1.0);
        // A round going backwards is treated as the latest one and does not panic.
        assert_eq!(f.update(3, 0.5), 1.0);
    }
}
