//! Stream earliest completion, the downlink scheduler of \[SEC\] (Wang, Gao, Xu, "A Multipath
//! QUIC Scheduler for Mobile HTTP/2", APNet 2019, section 3.1): send streams one at a time in
//! the order weighted round robin would complete them, each split over the paths so that its
//! parts arrive together.
//!
//! "It can benefit more if we keep fairness and use exclusive transmission" (section 3.1.1):
//! the order is WRR's, so no stream finishes later than under WRR relative to the others, but
//! each one finishes sooner because it does not share the paths while it is sent.

use std::time::{Duration, Instant};

use crate::baseline::Tables;
use crate::drift::drifted;
use crate::paths::split_output;
use crate::{
    Bandwidth, Grant, PathId, PathSnapshot, SchedError, Scheduler, StreamId, StreamMeta,
    StreamState, Urgency, MAX_PATHS,
};

/// A stream as the fluid WRR model sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FluidStream {
    /// Bytes left to send.
    pub size: u64,
    /// Its WRR weight (HTTP/2: 1..=256); 0 is taken as 1.
    pub weight: u32,
}

/// When each stream of a fluid WRR finishes, and in which order.
#[derive(Debug, Clone, PartialEq)]
pub struct FluidCompletion {
    /// Completion time of each stream, in seconds from now, indexed like the input.
    pub seconds: Vec<f64>,
    /// Input indices in completion order (ties: lower index first).
    pub order: Vec<usize>,
}

/// Completion times of streams sharing `rate` by weighted round robin, modelled as a fluid
/// (generalised processor sharing): while a set of streams is active, each gets
/// `weight / sum(active weights)` of the rate.
///
/// \[SEC\] section 3.1.1: "our scheduler first calculates the stream completion sequence in WRR
/// based algorithm using the information of stream length and dependency tree". Since every
/// active stream drains `size / weight` at the same pace, streams finish in increasing
/// `size / weight` (compared exactly, in integers), and each finish shrinks the active weight.
pub fn wrr_completion(streams: &[FluidStream], rate: Bandwidth) -> FluidCompletion {
    let weight = |i: usize| streams[i].weight.max(1);
    let mut order: Vec<usize> = (0..streams.len()).collect();
    // Stable, so equal size/weight keep input order.
    order.sort_by(|&a, &b| {
        let left = u128::from(streams[a].size) * u128::from(weight(b));
        let right = u128::from(streams[b].size) * u128::from(weight(a));
        left.cmp(&right)
    });
    let mut active: f64 = (0..streams.len()).map(|i| f64::from(weight(i))).sum();
    let mut seconds = vec![0.0; streams.len()];
    let (mut now, mut level) = (0.0_f64, 0.0_f64);
    for &i in &order {
        let w = f64::from(weight(i));
        let drained = streams[i].size as f64 / w;
        now += (drained - level).max(0.0) * active / rate.bytes_per_sec();
        level = level.max(drained);
        seconds[i] = now;
        active -= w;
    }
    FluidCompletion { seconds, order }
}

/// One path as [`split_stream`] sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SplitPath {
    /// RTT_j: the path's delay (the scheduler passes SRTT or one-way delay, see [`SecDelay`]).
    pub delay: Duration,
    /// Q_ij: how long the path is still busy with the streams sent before this one.
    pub queue: Duration,
    /// BW_j.
    pub bandwidth: Bandwidth,
}

/// Splits `size` bytes of one stream over `paths` so that every path used finishes at the
/// same time, writing the bytes per path into `out[..paths.len()]` and returning that time
/// `T` in seconds.
///
/// \[SEC\] section 3.1.2 states the goal as its equation (1), with
/// `T_ij = RTT_j + S_ij/BW_j`:
///
/// > T_i1 + Q_i1 = T_i2 + Q_i2 = ... = T_iN + Q_iN,  sum_j S_ij = SIZE_i  (1)
///
/// and prints the solution as
/// `S_ij = BW_j ((SIZE_i - sum_k BW_k (RTT_j + Q_ik)) / sum_k BW_k - RTT_j - Q_ij)`, which has
/// a sign slip (the sum is added to SIZE_i) and an index slip (RTT_k inside the sum). Solving
/// (1) directly gives what is computed here:
///
/// `T = (SIZE_i + sum_k BW_k (RTT_k + Q_ik)) / sum_k BW_k`, `S_ij = BW_j (T - RTT_j - Q_ij)`.
///
/// A path whose `RTT_j + Q_ij` is past `T` would get a negative share: it is given zero and
/// `T` is recomputed over the others until no share is negative. Shares are then rounded down
/// and the bytes lost to rounding handed out one at a time by largest fraction, so the sum
/// is exactly `size` (the paper rounds down and adjusts one randomly picked share; this is the
/// deterministic version). No heap allocation.
///
/// # Errors
///
/// [`SchedError::NoPaths`] for no paths; [`SchedError::TooManyPaths`] for more than
/// [`MAX_PATHS`] paths; [`SchedError::AllocationOutput`] for an `out` shorter than `paths`.
pub fn split_stream(size: u64, paths: &[SplitPath], out: &mut [u64]) -> Result<f64, SchedError> {
    let n = paths.len();
    let out = split_output(n, out)?;

    let mut start = [0.0_f64; MAX_PATHS];
    let mut rate = [0.0_f64; MAX_PATHS];
    let mut used = [false; MAX_PATHS];
    for (j, path) in paths.iter().enumerate() {
        start[j] = path.delay.as_secs_f64() + path.queue.as_secs_f64();
        rate[j] = path.bandwidth.bytes_per_sec();
        used[j] = true;
    }
    // The path that can start first always takes part: T is never before its start.
    let earliest = (0..n).fold(0, |best, j| if start[j] < start[best] { j } else { best });
    if size == 0 {
        return Ok(start[earliest]);
    }
    let mut finish;
    loop {
        // Rates are normalised by the largest in use, so sums neither overflow to infinity
        // nor underflow to zero.
        let top = (0..n)
            .filter(|&j| used[j])
            .map(|j| rate[j])
            .fold(0.0, f64::max);
        let (mut weights, mut weighted_start) = (0.0, 0.0);
        for j in (0..n).filter(|&j| used[j]) {
            weights += rate[j] / top;
            weighted_start += rate[j] / top * start[j];
        }
        finish = size as f64 / (weights * top) + weighted_start / weights;
        let mut dropped = false;
        for j in 0..n {
            if used[j] && j != earliest && start[j] > finish {
                used[j] = false;
                dropped = true;
            }
        }
        if !dropped {
            break;
        }
    }

    let mut fraction = [0.0_f64; MAX_PATHS];
    let mut assigned: u128 = 0;
    for j in (0..n).filter(|&j| used[j]) {
        let share = (rate[j] * (finish - start[j])).max(0.0);
        // `as` saturates: a share beyond u64 (rounding at huge sizes) is clamped, then fixed below.
        out[j] = share.floor() as u64;
        fraction[j] = share - share.floor();
        assigned += u128::from(out[j]);
    }
    settle(size, &used[..n], &fraction[..n], out, assigned);
    Ok(finish)
}

/// Makes the rounded shares sum to exactly `size`: missing bytes go to the used paths by
/// largest fraction (evenly first if float error left more than one per path), surplus bytes
/// come off the largest shares.
fn settle(size: u64, used: &[bool], fraction: &[f64], out: &mut [u64], assigned: u128) {
    let size = u128::from(size);
    if assigned < size {
        let mut missing = size - assigned;
        let mut by_fraction = [0usize; MAX_PATHS];
        let mut count = 0;
        for j in (0..out.len()).filter(|&j| used[j]) {
            by_fraction[count] = j;
            count += 1;
        }
        let by_fraction = &mut by_fraction[..count];
        by_fraction.sort_by(|&a, &b| fraction[b].total_cmp(&fraction[a]).then(a.cmp(&b)));
        let each = missing / count as u128;
        for &j in by_fraction.iter() {
            // Cannot exceed u64: the shares sum to at most `size`.
            out[j] = out[j].saturating_add(u64::try_from(each).unwrap_or(u64::MAX));
            missing -= each;
        }
        for &j in by_fraction
            .iter()
            .take(usize::try_from(missing).unwrap_or(0))
        {
            out[j] = out[j].saturating_add(1);
        }
    } else {
        let mut surplus = assigned - size;
        while surplus > 0 {
            let Some(j) = (0..out.len()).max_by_key(|&j| out[j]) else {
                return;
            };
            let cut = u64::try_from(surplus).unwrap_or(u64::MAX).min(out[j]);
            if cut == 0 {
                return;
            }
            out[j] -= cut;
            surplus -= u128::from(cut);
        }
    }
}

/// Which delay estimate SEC takes as `RTT_j`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SecDelay {
    /// The path's smoothed RTT, as the paper does ("We use the smoothed RTT and the
    /// congestion window size provided by QUIC to estimate path RTT and bandwidth").
    #[default]
    SmoothedRtt,
    /// The path's one-way delay: when the last byte reaches the receiver, which is what the
    /// stream's completion is; it stops a long return path from counting against a path.
    OneWayDelay,
}

/// Configuration of [`StreamEarliestCompletion`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SecConfig {
    delay: SecDelay,
    drift: f64,
    weights: [u32; Urgency::LEVELS],
}

impl SecConfig {
    /// The delay taken as `RTT_j` in the split.
    ///
    /// # Default
    ///
    /// [`SecDelay::SmoothedRtt`], the paper's choice, so the baseline is the paper's scheduler.
    pub fn delay(&mut self, delay: SecDelay) -> &mut Self {
        self.delay = delay;
        self
    }

    /// How far (relative) a path's bandwidth or delay estimate may move from the value the
    /// current plan used before the plan is recomputed; NaN and negatives are taken as 0.
    ///
    /// # Default
    ///
    /// 0.25: re-splitting on every ack would let whichever path asks first take a stream's
    /// bytes, so only a real change in the path moves the limits.
    pub fn drift(&mut self, drift: f64) -> &mut Self {
        self.drift = if drift >= 0.0 { drift } else { 0.0 };
        self
    }
}

impl SecConfig {
    /// The WRR weight of each urgency level (index 0 is urgency 0), for the completion order.
    /// HTTP/2 clients such as Firefox used weights that are not powers of two (the paper's
    /// Figure 1 has 32, 42 and 22); this table maps urgencies onto them.
    ///
    /// # Default
    ///
    /// [`Urgency::weight`]: 256 for urgency 0, halving per level.
    pub fn weights(&mut self, weights: [u32; Urgency::LEVELS]) -> &mut Self {
        self.weights = weights;
        self
    }
}

impl Default for SecConfig {
    fn default() -> Self {
        Self {
            delay: SecDelay::SmoothedRtt,
            drift: 0.25,
            weights: std::array::from_fn(|u| Urgency::new(u as u8).map_or(1, Urgency::weight)),
        }
    }
}

/// Stream earliest completion \[SEC\]: streams go one at a time in the order a fluid WRR (with
/// weights per urgency from [`SecConfig::weights`]) would complete them, each split over
/// the usable paths by [`split_stream`].
///
/// The plan is the paper's Algorithm 1: for each stream, in order, the split gives per-path
/// sending limits ("For each stream, we apply a sending limit according to the allocation");
/// a path asking for data sends the first stream in order that still has both limit on that
/// path and queued bytes ("When no bytes can be sent, we switch to the next stream"), and
/// `None` when there is none, which makes a stream wait for a faster path the way ECF does.
/// `Q_ij` is the bytes planned on path `j` for the streams ahead of `i`, over `BW_j`.
/// `RTT_j` is SRTT by default ([`SecConfig::delay`]), `BW_j` the bandwidth estimate. A stream
/// of unknown size counts with its queued bytes.
///
/// The plan is recomputed ("rearrange stream order and allocation") when a stream opens,
/// changes, gets data, finishes or closes, when a path comes, goes or changes status, and
/// when a path's estimates drift beyond [`SecConfig::drift`]; grants only use it up.
#[derive(Debug, Clone, Default)]
pub struct StreamEarliestCompletion {
    config: SecConfig,
    tables: Tables,
    /// Streams in completion order with their limits per planned path.
    plan: Vec<Planned>,
    /// The usable paths the plan was made over, with the estimates it used.
    plan_paths: Vec<PlannedPath>,
    /// Something changed since the plan was made.
    stale: bool,
}

#[derive(Debug, Clone)]
struct Planned {
    stream: StreamId,
    /// Bytes the stream may still send on each of `plan_paths`.
    limit: [u64; MAX_PATHS],
}

#[derive(Debug, Clone, Copy)]
struct PlannedPath {
    id: PathId,
    delay: Duration,
    bandwidth: Bandwidth,
}

impl StreamEarliestCompletion {
    /// A SEC scheduler with `config`.
    pub fn new(config: SecConfig) -> Self {
        Self {
            config,
            ..Self::default()
        }
    }

    fn delay_of(&self, path: &PathSnapshot) -> Duration {
        match self.config.delay {
            SecDelay::SmoothedRtt => path.srtt,
            SecDelay::OneWayDelay => path.one_way_delay,
        }
    }

    /// Whether `path`'s estimates moved too far from what the plan used.
    fn drifted(&self, path: &PathSnapshot) -> bool {
        let Some(planned) = self.plan_paths.iter().find(|p| p.id == path.id) else {
            return false;
        };
        drifted(
            (planned.delay, planned.bandwidth),
            (self.delay_of(path), path.bandwidth),
            self.config.drift,
        )
    }

    /// Orders the streams with bytes left and splits each over the usable paths.
    fn replan(&mut self) {
        self.stale = false;
        self.plan.clear();
        self.plan_paths.clear();
        for path in self.tables.paths.usable().take(MAX_PATHS) {
            self.plan_paths.push(PlannedPath {
                id: path.id,
                delay: self.delay_of(path),
                bandwidth: path.bandwidth,
            });
        }
        if self.plan_paths.is_empty() {
            return;
        }
        let mut streams: Vec<&StreamState> = self
            .tables
            .streams
            .iter()
            .filter(|s| s.left() > 0)
            .collect();
        streams.sort_by_key(|s| s.seq);
        let fluid: Vec<FluidStream> = streams
            .iter()
            .map(|s| FluidStream {
                size: s.left(),
                weight: self.config.weights[usize::from(s.meta.effective_urgency().get())],
            })
            .collect();
        // The order does not depend on the rate.
        let order = wrr_completion(&fluid, Bandwidth::UNIT).order;

        let mut ahead = [0u64; MAX_PATHS];
        let mut split = Vec::with_capacity(self.plan_paths.len());
        let mut columns = Vec::with_capacity(self.plan_paths.len());
        for index in order {
            // The stream is split over the paths it may use; the others get nothing of it.
            let meta = &streams[index].meta;
            split.clear();
            columns.clear();
            for (j, p) in self.plan_paths.iter().enumerate() {
                if meta.allows(p.id) {
                    columns.push(j);
                    split.push(SplitPath {
                        delay: p.delay,
                        queue: Duration::try_from_secs_f64(p.bandwidth.seconds_for(ahead[j]))
                            .unwrap_or(Duration::MAX),
                        bandwidth: p.bandwidth,
                    });
                }
            }
            let mut shares = [0u64; MAX_PATHS];
            let mut limit = [0u64; MAX_PATHS];
            if split_stream(fluid[index].size, &split, &mut shares).is_ok() {
                for (&j, &bytes) in columns.iter().zip(&shares) {
                    limit[j] = bytes;
                    ahead[j] = ahead[j].saturating_add(bytes);
                }
            }
            self.plan.push(Planned {
                stream: streams[index].meta.id,
                limit,
            });
        }
    }
}

impl Scheduler for StreamEarliestCompletion {
    fn name(&self) -> &str {
        "sec"
    }

    fn on_path_added(&mut self, _: Instant, path: &PathSnapshot) -> Result<(), SchedError> {
        self.tables.add_path(path)?;
        self.stale = true;
        Ok(())
    }

    fn on_path_updated(&mut self, _: Instant, path: &PathSnapshot) -> Result<(), SchedError> {
        let before = self.tables.paths.update(*path)?;
        if before.status != path.status || self.drifted(path) {
            self.stale = true;
        }
        Ok(())
    }

    fn on_path_removed(&mut self, _: Instant, path: PathId) {
        self.tables.remove_path(path);
        self.stale = true;
    }

    fn on_stream_opened(&mut self, _: Instant, meta: &StreamMeta) -> Result<(), SchedError> {
        self.tables.open_stream(meta)?;
        self.stale = true;
        Ok(())
    }

    fn on_stream_updated(&mut self, _: Instant, meta: &StreamMeta) -> Result<(), SchedError> {
        self.tables.update_stream(meta)?;
        self.stale = true;
        Ok(())
    }

    fn on_data_queued(
        &mut self,
        _: Instant,
        stream: StreamId,
        bytes: u64,
    ) -> Result<(), SchedError> {
        self.tables.queue(stream, bytes)?;
        self.stale = true;
        Ok(())
    }

    fn on_stream_finished(&mut self, _: Instant, stream: StreamId) -> Result<(), SchedError> {
        self.tables.finish(stream)?;
        self.stale = true;
        Ok(())
    }

    fn on_stream_closed(&mut self, _: Instant, stream: StreamId) {
        self.tables.close(stream);
        self.plan.retain(|p| p.stream != stream);
        self.stale = true;
    }

    fn poll_send(&mut self, _: Instant, path: PathId, room: u64) -> Option<Grant> {
        if !self.tables.may_send(path, room) {
            return None;
        }
        if self.stale || !self.plan_paths.iter().any(|p| p.id == path) {
            self.replan();
        }
        let j = self.plan_paths.iter().position(|p| p.id == path)?;
        let streams = &self.tables.streams;
        let planned = self
            .plan
            .iter_mut()
            .find(|p| p.limit[j] > 0 && streams.get(p.stream).is_some_and(|s| s.queued > 0))?;
        let grant = self
            .tables
            .grant(path, planned.stream, room.min(planned.limit[j]))?;
        planned.limit[j] -= grant.bytes;
        Some(grant)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn rate(bytes_per_sec: f64) -> Bandwidth {
        Bandwidth::from_bytes_per_sec(bytes_per_sec).unwrap()
    }

    fn split_path(delay_ms: u64, queue_ms: u64, bytes_per_sec: f64) -> SplitPath {
        SplitPath {
            delay: Duration::from_millis(delay_ms),
            queue: Duration::from_millis(queue_ms),
            bandwidth: rate(bytes_per_sec),
        }
    }

    /// \[SEC\] Figure 1 and section 3.1.1: "Assuming the bandwidth is 1 MBps, streams 2, 1, 3
    /// would complete transmitting at 2.3, 4.4 and 5s respectively with WRR algorithm."
    #[test]
    fn fluid_wrr_matches_the_papers_figure_1() {
        let streams = [
            FluidStream {
                size: 2_000_000,
                weight: 32,
            },
            FluidStream {
                size: 1_000_000,
                weight: 42,
            },
            FluidStream {
                size: 2_000_000,
                weight: 22,
            },
        ];
        let done = wrr_completion(&streams, rate(1e6));
        assert_eq!(done.order, [1, 0, 2]);
        for (got, paper) in done.seconds.iter().zip([4.4, 2.3, 5.0]) {
            assert!((got - paper).abs() < 0.05, "{got} vs {paper}");
        }
    }

    #[test]
    fn fluid_wrr_handles_empty_equal_and_zero_weight_streams() {
        assert!(wrr_completion(&[], rate(1.0)).order.is_empty());
        let same = FluidStream {
            size: 10,
            weight: 0,
        };
        let done = wrr_completion(&[same, same], rate(1.0));
        assert_eq!(done.order, [0, 1]);
        assert_eq!(done.seconds, [20.0, 20.0]);
    }

    /// \[SEC\] section 3.1.1: "if we transmit the streams 2, 1, 3 exclusively, they can complete
    /// at 1, 3, and 5s respectively", with the paper's Firefox weights 32, 42 and 22 given to
    /// urgencies 1, 0 and 2 through the weight table.
    #[test]
    fn sec_sends_figure_1_exclusively_in_wrr_completion_order() {
        let now = Instant::now();
        let mut config = SecConfig::default();
        config.weights([42, 32, 22, 16, 8, 4, 2, 1]);
        let mut sec = StreamEarliestCompletion::new(config);
        let path = PathSnapshot::new(PathId(0), Duration::from_millis(20), rate(1e6), 1 << 40);
        sec.on_path_added(now, &path).unwrap();
        for (id, size, urgency) in [(1, 2_000_000, 1), (2, 1_000_000, 0), (3, 2_000_000, 2)] {
            let meta = StreamMeta::new(StreamId(id))
                .with_size(size)
                .with_urgency(Urgency::new(urgency).unwrap());
            sec.on_stream_opened(now, &meta).unwrap();
            sec.on_data_queued(now, StreamId(id), size).unwrap();
            sec.on_stream_finished(now, StreamId(id)).unwrap();
        }
        let mut runs: Vec<(u64, u64)> = Vec::new(); // (stream, cumulative bytes at its end)
        let mut total = 0;
        while let Some(grant) = sec.poll_send(now, PathId(0), 10_000) {
            total += grant.bytes;
            match runs.last_mut() {
                Some((stream, end)) if *stream == grant.stream.0 => *end = total,
                _ => runs.push((grant.stream.0, total)),
            }
        }
        assert_eq!(runs, [(2, 1_000_000), (1, 3_000_000), (3, 5_000_000)]);
        // At 1 MB/s these ends are the paper's 1 s, 3 s and 5 s.
    }

    #[test]
    fn split_by_hand_on_two_paths() {
        let fast = split_path(10, 0, 1e6);
        let slow = split_path(50, 0, 5e5);
        let mut out = [0; 2];
        // T = (100000 + 1e6 * 0.01 + 5e5 * 0.05) / 1.5e6 = 0.09 s.
        let finish = split_stream(100_000, &[fast, slow], &mut out).unwrap();
        assert!((finish - 0.09).abs() < 1e-12);
        assert_eq!(out, [80_000, 20_000]);
        // Too small for the slow path: T = (20000 + 10000) / 1e6 = 0.03 s < 0.05 s.
        let finish = split_stream(20_000, &[fast, slow], &mut out).unwrap();
        assert!((finish - 0.03).abs() < 1e-12);
        assert_eq!(out, [20_000, 0]);
        // A fast path busy for 40 ms starts with the slow one: 66666.67 / 33333.33, rounded
        // down and the missing byte to the larger fraction.
        let busy = split_path(10, 40, 1e6);
        split_stream(100_000, &[busy, slow], &mut out).unwrap();
        assert_eq!(out, [66_667, 33_333]);
    }

    #[test]
    fn split_survives_rates_far_apart() {
        let huge = SplitPath {
            delay: Duration::ZERO,
            queue: Duration::from_secs(1 << 60),
            bandwidth: rate(1.9e290),
        };
        let tiny = SplitPath {
            delay: Duration::ZERO,
            queue: Duration::ZERO,
            bandwidth: rate(4.3e-222),
        };
        let mut out = [0; 2];
        let finish = split_stream(0, &[huge, tiny], &mut out).unwrap();
        assert_eq!((finish, out), (0.0, [0, 0]));
    }

    #[test]
    fn split_refuses_bad_shapes() {
        let path = split_path(10, 0, 1e6);
        assert_eq!(split_stream(1, &[], &mut [0; 4]), Err(SchedError::NoPaths));
        assert_eq!(
            split_stream(1, &[path; MAX_PATHS + 1], &mut [0; MAX_PATHS + 1]),
            Err(SchedError::TooManyPaths { max: MAX_PATHS })
        );
        assert_eq!(
            split_stream(1, &[path; 3], &mut [0; 2]),
            Err(SchedError::AllocationOutput { paths: 3, out: 2 })
        );
    }

    #[test]
    fn sec_keeps_a_small_stream_off_the_slow_path_and_splits_a_big_one() {
        let now = Instant::now();
        let mut sec = StreamEarliestCompletion::default();
        let fast = PathSnapshot::new(PathId(0), Duration::from_millis(10), rate(1e6), 1 << 30);
        let slow = PathSnapshot::new(PathId(1), Duration::from_millis(50), rate(5e5), 1 << 30);
        sec.on_path_added(now, &fast).unwrap();
        sec.on_path_added(now, &slow).unwrap();
        let small = StreamMeta::new(StreamId(0)).with_size(20_000);
        sec.on_stream_opened(now, &small).unwrap();
        sec.on_data_queued(now, StreamId(0), 20_000).unwrap();
        assert_eq!(sec.poll_send(now, PathId(1), 1 << 20), None);
        assert_eq!(
            sec.poll_send(now, PathId(0), 1 << 20),
            Some(Grant {
                stream: StreamId(0),
                bytes: 20_000,
                urgency: Urgency::DEFAULT,
                first_in_bucket: false,
            })
        );

        let big = StreamMeta::new(StreamId(1)).with_size(100_000);
        sec.on_stream_opened(now, &big).unwrap();
        sec.on_data_queued(now, StreamId(1), 100_000).unwrap();
        let on =
            |sec: &mut StreamEarliestCompletion, path| sec.poll_send(now, PathId(path), 1 << 20);
        assert_eq!(on(&mut sec, 1).map(|g| g.bytes), Some(20_000));
        assert_eq!(on(&mut sec, 0).map(|g| g.bytes), Some(80_000));
        assert_eq!(on(&mut sec, 0), None);
        assert_eq!(on(&mut sec, 1), None);
    }

    fn arbitrary_path() -> impl Strategy<Value = SplitPath> {
        (0u64..10_000_000, 0u64..10_000_000, 1e3f64..1e10).prop_map(|(delay, queue, bw)| {
            SplitPath {
                delay: Duration::from_micros(delay),
                queue: Duration::from_micros(queue),
                bandwidth: rate(bw),
            }
        })
    }

    /// A packet's payload: what rounding may shift between paths is far below it.
    const MTU: f64 = 1200.0;

    proptest! {
        #[test]
        fn split_sums_exactly_and_finishes_together(
            size in 0u64..1_000_000_000_000,
            paths in prop::collection::vec(arbitrary_path(), 1..=MAX_PATHS),
        ) {
            let mut out = [0u64; MAX_PATHS];
            let finish = split_stream(size, &paths, &mut out).unwrap();
            let sum: u128 = out.iter().map(|&b| u128::from(b)).sum();
            prop_assert_eq!(sum, u128::from(size));
            for (path, &bytes) in paths.iter().zip(&out) {
                let start = path.delay.as_secs_f64() + path.queue.as_secs_f64();
                let mtu_time = MTU / path.bandwidth.bytes_per_sec();
                let slack = mtu_time + 1e-9 * finish.abs();
                if bytes > 0 {
                    let done = start + path.bandwidth.seconds_for(bytes);
                    prop_assert!((done - finish).abs() <= slack, "{done} vs {finish}");
                } else {
                    // Left out only if it could not have started before the others finished.
                    prop_assert!(start + slack >= finish, "{start} vs {finish}");
                }
            }
        }

        #[test]
        fn split_never_panics(
            size in any::<u64>(),
            paths in prop::collection::vec(
                (any::<u64>(), any::<u64>(), any::<f64>()), 0..=MAX_PATHS + 2),
            out_len in 0usize..=MAX_PATHS + 2,
        ) {
            let paths: Vec<SplitPath> = paths
                .into_iter()
                .filter_map(|(d, q, bw)| Some(SplitPath {
                    delay: Duration::from_nanos(d),
                    queue: Duration::from_secs(q),
                    bandwidth: Bandwidth::from_bytes_per_sec(bw).ok()?,
                }))
                .collect();
            let mut out = vec![0; out_len];
            if let Ok(finish) = split_stream(size, &paths, &mut out) {
                prop_assert!(!finish.is_nan());
                let sum: u128 = out[..paths.len()].iter().map(|&b| u128::from(b)).sum();
                prop_assert_eq!(sum, u128::from(size));
            }
        }

        #[test]
        fn fluid_wrr_never_panics_and_orders_by_size_over_weight(
            streams in prop::collection::vec((any::<u64>(), any::<u32>()), 0..40),
            bw in 1e-3f64..1e12,
        ) {
            let streams: Vec<_> = streams
                .into_iter()
                .map(|(size, weight)| FluidStream { size, weight })
                .collect();
            let done = wrr_completion(&streams, rate(bw));
            prop_assert_eq!(done.order.len(), streams.len());
            for pair in done.order.windows(2) {
                prop_assert!(done.seconds[pair[0]] <= done.seconds[pair[1]]);
            }
        }
    }
}
