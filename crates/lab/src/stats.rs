//! Statistics over repeated runs: mean and sample standard deviation (`mpquic_replay::Spread`,
//! with the count), quantiles, and the reduction against a baseline ((baseline - x) / baseline
//! of the means), as the experiment reports print them. A set with a value that is not finite
//! has no statistics (`None`): a NaN is a failed measurement, not a number to average.

use mpquic_replay::Spread;

/// The mean and sample standard deviation of a set of measurements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// The arithmetic mean.
    pub mean: f64,
    /// The sample standard deviation (divisor `n - 1`); 0 for a single measurement.
    pub sd: f64,
    /// How many measurements.
    pub n: usize,
}

impl Summary {
    /// Summarizes `values`; `None` when there are none (or any is not finite).
    pub fn of(values: &[f64]) -> Option<Self> {
        let Spread { mean, sd } = Spread::of(values)?;
        Some(Self {
            mean,
            sd,
            n: values.len(),
        })
    }
}

/// The mean of `values`; `None` when there are none (or any is not finite).
pub fn mean(values: &[f64]) -> Option<f64> {
    Summary::of(values).map(|s| s.mean)
}

/// The `q` quantile (0 to 1) of `values`, interpolated linearly between the nearest ranks (the
/// usual "type 7"); `None` when there are none or any is not finite.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (low, high) = (rank.floor() as usize, rank.ceil() as usize);
    Some(sorted[low] + (sorted[high] - sorted[low]) * (rank - low as f64))
}

/// `(baseline - value) / baseline` in percent: positive is faster than the baseline. `None`
/// when the baseline is not positive.
pub fn reduction_percent(value: f64, baseline: f64) -> Option<f64> {
    (baseline > 0.0).then(|| (baseline - value) / baseline * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn known_values() {
        // The textbook example: mean 5, population sd 2, sample sd sqrt(32 / 7).
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(s.n, 8);
        assert!(close(s.mean, 5.0));
        assert!(close(s.sd, (32.0_f64 / 7.0).sqrt()));

        let s = Summary::of(&[1.0, 2.0, 3.0]).unwrap();
        assert!(close(s.mean, 2.0));
        assert!(close(s.sd, 1.0));
    }

    #[test]
    fn quantiles_interpolate_between_ranks() {
        let values = [5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(quantile(&values, 0.5), Some(3.0));
        assert_eq!(quantile(&values, 0.0), Some(1.0));
        assert_eq!(quantile(&values, 1.0), Some(5.0));
        assert!(close(quantile(&values, 0.9).unwrap(), 4.6));
        assert_eq!(quantile(&[], 0.5), None);
    }

    #[test]
    fn one_run_has_no_spread() {
        let s = Summary::of(&[123.4]).unwrap();
        assert_eq!(
            s,
            Summary {
                mean: 123.4,
                sd: 0.0,
                n: 1
            }
        );
    }

    #[test]
    fn identical_runs_have_no_spread() {
        let s = Summary::of(&[224.9; 10]).unwrap();
        assert!(close(s.mean, 224.9));
        assert!(s.sd.abs() < 1e-12);
    }

    #[test]
    fn large_offsets_do_not_cancel() {
        let s = Summary::of(&[1e9 + 1.0, 1e9 + 2.0, 1e9 + 3.0]).unwrap();
        assert!(close(s.sd, 1.0));
    }

    #[test]
    fn nothing_or_not_finite_has_no_summary() {
        assert_eq!(Summary::of(&[]), None);
        assert_eq!(Summary::of(&[1.0, f64::NAN]), None);
        assert_eq!(Summary::of(&[f64::INFINITY]), None);
    }

    #[test]
    fn reductions() {
        assert_eq!(reduction_percent(75.0, 100.0), Some(25.0));
        assert_eq!(reduction_percent(150.0, 100.0), Some(-50.0));
        assert_eq!(reduction_percent(100.0, 100.0), Some(0.0));
        assert_eq!(reduction_percent(1.0, 0.0), None);
    }
}
