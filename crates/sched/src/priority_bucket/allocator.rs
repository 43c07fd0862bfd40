//! PriorityBucket's stream-to-path allocation (\[PB\] section 3.4, Algorithm 1), as a pure
//! function.
//!
//! \[PB\] "Assume there are n paths, we define T for the overall completion time of the stream s
//! and t_i for the estimated completion time on each path. [...] t_i = (h_i + e_i + d_i)/b_i + o_i
//! when d_i > 0 [...] (P1) min T subject to sum d_i = D, T = max t_i."
//!
//! The paper solves P1 in three steps: sort paths by r_i = (h_i + e_i)/b_i + o_i, "fill the gap"
//! from the earliest path upwards until D is used up or all r_i are level, then spread the rest in
//! proportion to b_i. That is water-filling, so the result is the common finish level T with
//! d_i = (T - r_i) b_i on every path with r_i < T; this module computes T directly in the same
//! three steps and then rounds to whole bytes with the sum kept exact.

use std::time::Duration;

use crate::paths::split_output;
use crate::{Bandwidth, SchedError, MAX_PATHS};

/// One path as the allocator sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AllocPath {
    /// o_i: estimated one-way delay towards the receiver.
    pub one_way_delay: Duration,
    /// b_i: estimated bandwidth.
    pub bandwidth: Bandwidth,
    /// h_i + e_i: bytes of higher- and equal-priority data still queued on the path.
    pub queued: u64,
}

impl AllocPath {
    /// r_i = (h_i + e_i)/b_i + o_i, in seconds: \[PB\] Step 1, "the minimum of completion time on
    /// path i" for anything new.
    pub fn ready_time(&self) -> f64 {
        self.bandwidth.seconds_for(self.queued) + self.one_way_delay.as_secs_f64()
    }

    /// When the path would finish `extra` more bytes: (h_i + e_i + d_i)/b_i + o_i, in seconds.
    pub fn finish_time(&self, extra: u64) -> f64 {
        self.bandwidth
            .seconds_for(self.queued.saturating_add(extra))
            + self.one_way_delay.as_secs_f64()
    }
}

/// What [`allocate`] found besides the per-path bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Allocation {
    /// T: the common finish time of the stream in seconds from now (0 for an empty stream).
    /// Infinite only when the inputs are (a rate so small that nothing finishes in f64 seconds).
    pub finish: f64,
}

/// Splits a stream of `size` bytes over `paths`, writing d_i into `out[i]`; `sum d_i == size`
/// exactly, and only paths with r_i below the common finish time get bytes.
///
/// O(n^2) in the worst case for the sort, O(n) otherwise; works on the stack and never allocates.
///
/// # Errors
/// [`SchedError::NoPaths`] for no path, [`SchedError::TooManyPaths`] beyond [`MAX_PATHS`], and
/// [`SchedError::AllocationOutput`] when `out` is shorter than `paths`.
pub fn allocate(paths: &[AllocPath], size: u64, out: &mut [u64]) -> Result<Allocation, SchedError> {
    let n = paths.len();
    let out = split_output(n, out)?;
    if size == 0 {
        return Ok(Allocation { finish: 0.0 });
    }

    // Step 1: "we sort paths by the ascending order of r_i" (insertion sort: n is small, and
    // it keeps ties in path order so results are deterministic).
    let mut ready = [0.0_f64; MAX_PATHS];
    let mut order = [0_usize; MAX_PATHS];
    for (i, path) in paths.iter().enumerate() {
        ready[i] = path.ready_time();
        order[i] = i;
        let mut j = i;
        while j > 0 && ready[order[j - 1]] > ready[i] {
            order[j] = order[j - 1];
            j -= 1;
        }
        order[j] = i;
    }
    let order = &order[..n];

    let level = water_level(paths, &ready, order, size as f64);
    if !level.is_finite() {
        // Only absurd estimates get here (rates near f64's smallest value): give the whole
        // stream to the path that is ready first rather than divide infinities.
        out[order[0]] = size;
        return Ok(Allocation {
            finish: paths[order[0]].finish_time(size),
        });
    }

    // d_i = (T - r_i) b_i on the paths below the level, floored to bytes.
    let mut assigned: u128 = 0;
    let mut participants = 0;
    for &i in order {
        if ready[i] >= level {
            break;
        }
        participants += 1;
        let share = (level - ready[i]) * paths[i].bandwidth.bytes_per_sec();
        // `as` saturates (and maps NaN to 0), so float error can never wrap a byte count.
        out[i] = (share.floor() as u64).min(size);
        assigned += u128::from(out[i]);
    }
    // At least the first path is below the level when size > 0; keep the guard for rounding.
    let participants = &order[..participants.max(1)];
    settle_rounding(paths, participants, size, assigned, out);
    Ok(Allocation { finish: level })
}

/// Steps 2 and 3 of \[PB\]: the common finish level T for `size` bytes.
fn water_level(paths: &[AllocPath], ready: &[f64], order: &[usize], size: f64) -> f64 {
    let mut left = size;
    let mut rate_below = 0.0;
    for (k, &i) in order.iter().enumerate() {
        rate_below += paths[i].bandwidth.bytes_per_sec();
        let Some(&next) = order.get(k + 1) else { break };
        // Step 2, "fillgap": raising paths 1..=k from r_k to r_{k+1} takes gap * sum b_j bytes.
        let gap = ready[next] - ready[i];
        let fill = gap * rate_below;
        if left <= fill {
            return ready[i] + left / rate_below;
        }
        left -= fill;
    }
    // Step 3: "the remaining data are allocated proportionally to the bandwidth of paths".
    ready[order[order.len() - 1]] + left / rate_below
}

/// Makes the floored shares sum to exactly `size`, changing only participating paths: a
/// shortfall goes to the paths in order of readiness in proportion to their rate (rounded up),
/// an excess from float error is taken back from the latest ones.
fn settle_rounding(
    paths: &[AllocPath],
    participants: &[usize],
    size: u64,
    assigned: u128,
    out: &mut [u64],
) {
    let target = u128::from(size);
    if assigned < target {
        let mut short = target - assigned;
        let mut rate_left: f64 = participants
            .iter()
            .map(|&i| paths[i].bandwidth.bytes_per_sec())
            .sum();
        for (k, &i) in participants.iter().enumerate() {
            if short == 0 {
                break;
            }
            // A share of what is left; the last path takes the rest so the sum is exact.
            let rate = paths[i].bandwidth.bytes_per_sec();
            let give = if k + 1 == participants.len() {
                short
            } else {
                ((short as f64 * rate / rate_left).ceil() as u128).clamp(1, short)
            };
            rate_left -= rate;
            // `give <= short <= size`, so this fits in u64 and never exceeds `size`.
            out[i] += give as u64;
            short -= give;
        }
    } else {
        let mut excess = assigned - target;
        for &i in participants.iter().rev() {
            let take = excess.min(u128::from(out[i]));
            out[i] -= take as u64;
            excess -= take;
        }
    }
}

/// The same problem solved in closed form for exactly two paths: the straight-line floor that
/// [`allocate`] is benchmarked against. Returns `(d_1, d_2)` with `d_1 + d_2 == size`.
pub fn allocate_two(first: &AllocPath, second: &AllocPath, size: u64) -> (u64, u64) {
    let (r1, r2) = (first.ready_time(), second.ready_time());
    let (b1, b2) = (
        first.bandwidth.bytes_per_sec(),
        second.bandwidth.bytes_per_sec(),
    );
    let d = size as f64;
    // The earlier path alone covers the gap; past it both share T = (D + r1 b1 + r2 b2)/(b1 + b2).
    let d1 = if r1 <= r2 {
        if d <= (r2 - r1) * b1 {
            d
        } else {
            ((d + r1 * b1 + r2 * b2) / (b1 + b2) - r1) * b1
        }
    } else if d <= (r1 - r2) * b2 {
        0.0
    } else {
        d - ((d + r1 * b1 + r2 * b2) / (b1 + b2) - r2) * b2
    };
    let d1 = (d1.round() as u64).min(size);
    (d1, size - d1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(owd_ms: u64, mbit: f64, queued: u64) -> AllocPath {
        AllocPath {
            one_way_delay: Duration::from_millis(owd_ms),
            bandwidth: Bandwidth::from_bits_per_sec(mbit * 1e6).unwrap(),
            queued,
        }
    }

    /// \[PB\] Step 2 by hand on the pb-high paths: path 1 is 10 Mbit/s (1.25 MB/s) with 5 ms
    /// one-way delay, path 2 is 40 Mbit/s (5 MB/s) with 25 ms. r_1 = 5 ms, r_2 = 25 ms, so
    /// filling the gap takes (25 - 5) ms x 1.25 MB/s = 25,000 bytes on path 1 alone.
    #[test]
    fn step_two_fills_the_gap_on_the_early_path_first() {
        let paths = [path(5, 10.0, 0), path(25, 40.0, 0)];
        let mut out = [0; 2];

        // A 10 kB object (the Bing HTML) fits in the gap: all on path 1, done at
        // 5 ms + 10,000 / 1.25e6 s = 13 ms.
        let a = allocate(&paths, 10_000, &mut out).unwrap();
        assert_eq!(out, [10_000, 0]);
        assert!((a.finish - 0.013).abs() < 1e-9);

        // 100 kB: 25,000 fill the gap, the other 75,000 split 1.25 : 5, so path 1 gets
        // 25,000 + 15,000 = 40,000 and path 2 gets 60,000; both finish at
        // 25 ms + 75,000 / 6.25e6 s = 37 ms.
        let a = allocate(&paths, 100_000, &mut out).unwrap();
        assert_eq!(out, [40_000, 60_000]);
        assert!((a.finish - 0.037).abs() < 1e-9);
        assert_eq!(
            allocate_two(&paths[0], &paths[1], 100_000),
            (40_000, 60_000)
        );
    }

    /// Queued higher- and equal-priority data moves r_i: with 50 kB already on path 1,
    /// r_1 = 5 ms + 40 ms = 45 ms > r_2 = 25 ms, so a small stream goes to path 2 instead.
    #[test]
    fn queued_data_delays_a_path() {
        let paths = [path(5, 10.0, 50_000), path(25, 40.0, 0)];
        let mut out = [0; 2];
        allocate(&paths, 20_000, &mut out).unwrap();
        assert_eq!(out, [0, 20_000]);
    }

    #[test]
    fn degenerate_inputs_give_errors_or_defined_results() {
        let mut out = [7; 40];
        assert_eq!(allocate(&[], 10, &mut out), Err(SchedError::NoPaths));
        let many = [path(5, 10.0, 0); MAX_PATHS + 1];
        assert_eq!(
            allocate(&many, 10, &mut out),
            Err(SchedError::TooManyPaths { max: MAX_PATHS })
        );
        let two = [path(5, 10.0, 0); 2];
        assert_eq!(
            allocate(&two, 10, &mut out[..1]),
            Err(SchedError::AllocationOutput { paths: 2, out: 1 })
        );

        let a = allocate(&two, 0, &mut out).unwrap();
        assert_eq!((a.finish, &out[..2]), (0.0, &[0, 0][..]));

        for size in [1, u64::MAX / 3, u64::MAX] {
            let paths = [path(5, 10.0, u64::MAX), path(0, 1e-6, 0), path(25, 1e5, 1)];
            allocate(&paths, size, &mut out).unwrap();
            assert_eq!(
                out[..3].iter().map(|&d| u128::from(d)).sum::<u128>(),
                u128::from(size)
            );
        }

        // A rate so small that finishing takes longer than f64 seconds can say.
        let tiny = Bandwidth::from_bytes_per_sec(f64::MIN_POSITIVE / 4.0).unwrap();
        let paths = [AllocPath {
            bandwidth: tiny,
            ..path(5, 1.0, u64::MAX)
        }; 2];
        let a = allocate(&paths, u64::MAX, &mut out).unwrap();
        assert!(a.finish.is_infinite());
        assert_eq!(out[..2], [u64::MAX, 0]);
    }
}
