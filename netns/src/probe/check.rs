//! The testbed's fidelity check: [`check_path`] measures a path against its configuration
//! and [`PathCheck`] says which bars it misses; plus the statistics behind the loss bar.

use std::time::Duration;

use super::{Direction, GoodputStats, LossStats, Prober, RttStats};
use crate::error::NetnsError;
use mpquic_scenario::link::IP_UDP_OVERHEAD;

/// The fidelity bars of the testbed issue: RTT median within this of configured.
pub const RTT_TOLERANCE: Duration = Duration::from_millis(1);
/// UDP goodput within this fraction of the configured rate.
pub const GOODPUT_TOLERANCE: f64 = 0.05;
/// Confidence of the binomial interval the measured loss must fall in.
pub const LOSS_CONFIDENCE: f64 = 0.99;

/// How long each goodput measurement runs in [`check_path`].
pub const CHECK_GOODPUT_TIME: Duration = Duration::from_secs(2);
/// Echo probes in [`check_path`].
pub const CHECK_RTT_PROBES: usize = 100;
/// Datagrams per direction for the loss measurement in [`check_path`].
pub const CHECK_LOSS_PACKETS: u64 = 5000;
const CHECK_PROBE_BYTES: usize = 64;
const CHECK_GOODPUT_BYTES: usize = 1500 - IP_UDP_OVERHEAD;
const CHECK_LOSS_BYTES: usize = 200;

/// Configured against measured for one path: what `testbed check` prints.
#[derive(Debug, Clone, PartialEq)]
pub struct PathCheck {
    /// What the path was configured with.
    pub spec: mpquic_scenario::PathSpec,
    /// The round trip it should show: twice the one-way delay plus the probe's serialization
    /// in each direction.
    pub expected_rtt: Duration,
    /// Measured round trips.
    pub rtt: RttStats,
    /// Measured goodput, uplink then downlink.
    pub goodput: [GoodputStats; 2],
    /// Measured loss, uplink then downlink (only for lossy paths).
    pub loss: Option<[LossStats; 2]>,
}

impl PathCheck {
    /// Every bar the path misses, in words; empty when it passes.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.rtt.median.abs_diff(self.expected_rtt) > RTT_TOLERANCE {
            out.push(format!(
                "rtt median {:?} not within {RTT_TOLERANCE:?} of {:?}",
                self.rtt.median, self.expected_rtt
            ));
        }
        let rate = self.spec.rate_bps as f64;
        for g in &self.goodput {
            if (g.goodput_bps / rate - 1.0).abs() > GOODPUT_TOLERANCE {
                out.push(format!(
                    "{:?} goodput {:.3} Mbit/s not within {}% of {:.3}",
                    g.direction,
                    g.goodput_bps / 1e6,
                    GOODPUT_TOLERANCE * 100.0,
                    rate / 1e6
                ));
            }
        }
        for l in self.loss.iter().flatten() {
            if !l.inside {
                out.push(format!(
                    "{:?} loss {:.3}% outside [{:.3}%, {:.3}%]",
                    l.direction,
                    l.loss * 100.0,
                    l.interval.0 * 100.0,
                    l.interval.1 * 100.0
                ));
            }
        }
        out
    }
}

impl std::fmt::Display for PathCheck {
    /// One line per measurement: configured, measured, verdict.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let ok = |b: bool| if b { "ok" } else { "FAIL" };
        let r = &self.rtt;
        writeln!(
            f,
            "  rtt      configured {:8.3} ms  measured median {:8.3} ms (p10 {:.3}, p90 {:.3}; up {:.3}, down {:.3}; {} probes, {} lost)  {}",
            ms(self.expected_rtt),
            ms(r.median),
            ms(r.p10),
            ms(r.p90),
            ms(r.uplink_median),
            ms(r.downlink_median),
            r.samples,
            r.lost,
            ok(r.median.abs_diff(self.expected_rtt) <= RTT_TOLERANCE)
        )?;
        let rate = self.spec.rate_bps as f64;
        for g in &self.goodput {
            let dir = if g.direction == Direction::Uplink {
                "up  "
            } else {
                "down"
            };
            writeln!(
                f,
                "  goodput {dir} configured {:8.3} Mbit/s  measured {:8.3} Mbit/s ({:+.2}%; on the wire {:.3})  {}",
                rate / 1e6,
                g.goodput_bps / 1e6,
                (g.goodput_bps / rate - 1.0) * 100.0,
                g.wire_bps / 1e6,
                ok((g.goodput_bps / rate - 1.0).abs() <= GOODPUT_TOLERANCE)
            )?;
        }
        for l in self.loss.iter().flatten() {
            let dir = if l.direction == Direction::Uplink {
                "up  "
            } else {
                "down"
            };
            writeln!(
                f,
                "  loss    {dir} configured {:7.3}%  measured {:7.3}% ({} of {}; {:.0}% interval [{:.3}%, {:.3}%])  {}",
                l.expected * 100.0,
                l.loss * 100.0,
                l.sent - l.received,
                l.sent,
                l.confidence * 100.0,
                l.interval.0 * 100.0,
                l.interval.1 * 100.0,
                ok(l.inside)
            )?;
        }
        Ok(())
    }
}

/// Measures one path through `prober` against `spec` (RTT, goodput both ways, and loss both
/// ways when the path is lossy): the testbed issue's fidelity check. Takes about
/// `100 * RTT + 4 * 2 s` plus, for a lossy path, two 5000-datagram runs at half the rate.
pub fn check_path(
    prober: &Prober,
    spec: &mpquic_scenario::PathSpec,
) -> Result<PathCheck, NetnsError> {
    let serialization = Duration::from_secs_f64(
        ((CHECK_PROBE_BYTES + IP_UDP_OVERHEAD) * 8) as f64 / spec.rate_bps.max(1) as f64,
    );
    let expected_rtt = (spec.one_way_delay + serialization) * 2;
    let rtt = prober.rtt(CHECK_RTT_PROBES, CHECK_PROBE_BYTES)?;
    let goodput = [Direction::Uplink, Direction::Downlink]
        .map(|d| prober.goodput(d, spec.rate_bps, CHECK_GOODPUT_TIME, CHECK_GOODPUT_BYTES));
    let [up, down] = goodput;
    let goodput = [up?, down?];
    let loss = if spec.drop_rate > 0.0 {
        let run = |d| {
            prober.loss(
                d,
                CHECK_LOSS_PACKETS,
                CHECK_LOSS_BYTES,
                spec.rate_bps / 2,
                spec.drop_rate,
                LOSS_CONFIDENCE,
            )
        };
        Some([run(Direction::Uplink)?, run(Direction::Downlink)?])
    } else {
        None
    };
    Ok(PathCheck {
        spec: *spec,
        expected_rtt,
        rtt,
        goodput,
        loss,
    })
}

/// The `q` quantile of sorted, non-empty `v` (nearest rank).
pub(super) fn quantile(v: &[Duration], q: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    v[i.min(v.len() - 1)]
}

/// Two-sided standard normal quantile for `confidence` (e.g. 0.99 -> 2.576), by bisection on
/// the complementary error function's series-free approximation (Abramowitz-Stegun 7.1.26).
fn z_for(confidence: f64) -> f64 {
    let tail = (1.0 - confidence.clamp(0.0, 1.0 - 1e-12)) / 2.0;
    let upper_tail = |z: f64| {
        // P(Z > z) for z >= 0.
        let x = z / std::f64::consts::SQRT_2;
        let t = 1.0 / (1.0 + 0.327_591_1 * x);
        let poly = t
            * (0.254_829_592
                + t * (-0.284_496_736
                    + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
        0.5 * poly * (-x * x).exp()
    };
    let (mut lo, mut hi) = (0.0, 40.0);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if upper_tail(mid) > tail {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// Wilson score interval for `k` successes in `n` trials at `confidence`.
pub fn wilson_interval(k: u64, n: u64, confidence: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = z_for(confidence);
    let n = n as f64;
    let p = k as f64 / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// The exact two-sided binomial acceptance region: the counts `lo..=hi` of `n` trials with
/// success probability `p` outside which each tail holds at most `(1 - confidence) / 2`.
/// Computed by summing the pmf in log space (no underflow for large `n`); `O(n)`.
pub fn binomial_acceptance(n: u64, p: f64, confidence: f64) -> (u64, u64) {
    if n == 0 || p.is_nan() || p <= 0.0 {
        return (0, 0);
    }
    if p >= 1.0 {
        return (n, n);
    }
    let tail = (1.0 - confidence.clamp(0.0, 1.0)) / 2.0;
    let (ln_p, ln_q) = (p.ln(), (1.0 - p).ln());
    let mut ln_pmf = n as f64 * ln_q;
    let mut cdf = 0.0;
    let mut lo = None;
    for k in 0..=n {
        if k > 0 {
            ln_pmf += ((n - k + 1) as f64 / k as f64).ln() + ln_p - ln_q;
        }
        cdf += ln_pmf.exp();
        if lo.is_none() && cdf > tail {
            lo = Some(k);
        }
        if cdf >= 1.0 - tail {
            return (lo.unwrap_or(k), k);
        }
    }
    (lo.unwrap_or(0), n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn z_matches_the_normal_table() {
        assert!((z_for(0.99) - 2.5758).abs() < 1e-3);
        assert!((z_for(0.95) - 1.9600).abs() < 1e-3);
    }

    #[test]
    fn binomial_acceptance_brackets_the_mean() {
        // n = 5000, p = 0.02: mean 100, sd 9.9; the 99% region is about 100 +- 26.
        let (lo, hi) = binomial_acceptance(5000, 0.02, 0.99);
        assert!((73..=77).contains(&lo), "{lo}");
        assert!((124..=128).contains(&hi), "{hi}");
        assert_eq!(binomial_acceptance(100, 0.0, 0.99), (0, 0));
        assert_eq!(binomial_acceptance(100, 1.0, 0.99), (100, 100));
        let (lo, hi) = wilson_interval(100, 5000, 0.99);
        assert!(lo < 0.02 && 0.02 < hi);
    }
}
