//! PriorityBucket: the scheduler, its allocator and its per-path buckets.

mod allocator;
mod buckets;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

pub use allocator::{allocate, allocate_two, AllocPath, Allocation};
use buckets::{BucketKey, PathBuckets};

use crate::baseline::PACKET_PAYLOAD;
use crate::drift;
use crate::{
    Bandwidth, Grant, Lead, PathId, PathSnapshot, PathTable, SchedError, Scheduler, StreamId,
    StreamMeta, StreamState, StreamTable, Urgency, MAX_PATHS,
};

/// The least a path may hold of less urgent streams: four packets, so that a path whose
/// bandwidth is not known yet still carries some and shows what it can do.
const QUEUE_LIMIT_FLOOR: u64 = 4 * PACKET_PAYLOAD;

/// Tuning of [`PriorityBucket`] beyond the paper.
#[derive(Debug, Clone, PartialEq)]
pub struct PriorityBucketConfig {
    drift_threshold: f64,
    unknown_size_window: u64,
    window_limited_rate: bool,
    small_stream: u64,
    wait_step: Duration,
    queue_limit: f64,
}

impl PriorityBucketConfig {
    /// Relative change of a path's bandwidth or one-way delay, since the last allocation, that
    /// triggers a re-allocation of every stream's unsent rest. 0 (and NaN or negatives)
    /// re-allocates on any change; infinity never does. Unless infinite, a path with half its
    /// window free that used up its quota while another path holds unsent quota re-allocates
    /// too, whatever the drift.
    ///
    /// # Default
    /// 0.25: estimates wobble by a few percent per ack, and re-allocating on every wobble would
    /// reshuffle streams for nothing; a quarter is well clear of the noise and well below the
    /// 4x rate ratio of the paper's high-heterogeneity scenario.
    pub fn drift_threshold(&mut self, threshold: f64) -> &mut Self {
        self.drift_threshold = threshold;
        self
    }

    /// Bytes left below which a stream counts as small for [`wait_step`](Self::wait_step); 0
    /// keeps the buckets strict.
    ///
    /// # Default
    /// 16 KiB: a dozen packets, so a small stream taken out of turn delays the streams it
    /// passes by about a millisecond at 100 Mbit/s and ten at 10 Mbit/s.
    pub fn small_stream(&mut self, bytes: u64) -> &mut Self {
        self.small_stream = bytes;
        self
    }

    /// How long a small stream with data to send may wait on a path before it goes first in
    /// its bucket; every further step lifts it one bucket. Strict buckets would otherwise
    /// starve a 1 kB script queued behind a megabyte of images of its own urgency, although
    /// what the page needs next may wait for it (the server's [`StreamMeta::leads_to`] hint
    /// fixes that when the server knows; this bounds the wait when it does not). Zero counts
    /// as one nanosecond.
    ///
    /// # Default
    /// 50 ms: a few round trips of the paper's paths, so a critical stream keeps its lead over
    /// small streams for 150 ms (three steps) before they reach its bucket.
    ///
    /// [`StreamMeta::leads_to`]: crate::StreamMeta::leads_to
    pub fn wait_step(&mut self, step: Duration) -> &mut Self {
        self.wait_step = step.max(Duration::from_nanos(1));
        self
    }

    /// Bytes of a stream of unknown size allocated at a time (at least 1).
    ///
    /// # Default
    /// 128 KiB: larger than the gap-filling share a fast path takes before a second path is
    /// worth using on the paper's scenarios, small enough to follow changing estimates.
    pub fn unknown_size_window(&mut self, bytes: u64) -> &mut Self {
        self.unknown_size_window = bytes.max(1);
        self
    }

    /// How much a path may hold of less urgent streams while more urgent ones are under way (or
    /// were within two of its round trips and may lead to more urgent requests), in bandwidth-delay
    /// products (estimated bandwidth times the smallest RTT; at least four packets): bytes in
    /// flight and waiting to leave, of every stream. A bottleneck is first in, first out, so what a
    /// less urgent stream puts into its queue delays every urgent stream that comes after it; a web
    /// page's urgent objects come a round trip apart, each behind the images and scripts granted
    /// before it. Two products let the path's delivery rate, and so its estimate, double per round
    /// trip, as slow start does. Once the urgent streams are over, the rest of the page is not held
    /// back. NaN or infinity: no limit.
    ///
    /// # Default
    /// 2.
    pub fn queue_limit(&mut self, bdps: f64) -> &mut Self {
        self.queue_limit = if bdps.is_nan() {
            f64::INFINITY
        } else {
            bdps.max(0.0)
        };
        self
    }
}

impl PriorityBucketConfig {
    /// PriorityBucket as the paper publishes it: b_i is the bandwidth estimate alone, and a
    /// stream's allocation is computed once ("each stream only needs to be calculated once")
    /// and never revised for drifting estimates. Path events still re-allocate, since the
    /// paper's paths never change. Selected by name as `priority-bucket-paper`. Its buckets
    /// are strict, no small stream goes out of turn (a stream's bucket is still its
    /// [`effective_urgency`](crate::StreamMeta::effective_urgency)).
    pub fn paper() -> Self {
        Self {
            drift_threshold: f64::INFINITY,
            window_limited_rate: false,
            small_stream: 0,
            queue_limit: f64::INFINITY,
            ..Self::default()
        }
    }

    /// Whether this is [`paper`](Self::paper)'s configuration.
    fn is_paper(&self) -> bool {
        !self.window_limited_rate
            && !self.drift_threshold.is_finite()
            && self.small_stream == 0
            && !self.queue_limit.is_finite()
    }

    /// Whether b_i is the bandwidth estimate capped by cwnd / SRTT (`true`) or the bandwidth
    /// estimate alone, as in the paper (`false`).
    ///
    /// # Default
    /// `true`: a path with a small window delivers one window per round trip, far below its
    /// bottleneck rate, so the paper's b_i would pile a stream onto a long-RTT path that
    /// cannot carry it yet. Capped, the path gets what it can carry now, and as the window
    /// grows the drift rule re-allocates the unsent rest towards it. In slow start the cap is
    /// two windows per round trip, since the window doubles while the stream is under way:
    /// one window held a long-RTT path to a share it carries in half the time (pb-high's
    /// bing-2013: PLT 5.4% behind lrf's with one window, level with two,
    /// docs/results/2026-11-28-slow-start-share/).
    pub fn window_limited_rate(&mut self, enabled: bool) -> &mut Self {
        self.window_limited_rate = enabled;
        self
    }
}

impl Default for PriorityBucketConfig {
    fn default() -> Self {
        Self {
            drift_threshold: 0.25,
            unknown_size_window: 128 * 1024,
            window_limited_rate: true,
            small_stream: 16 * 1024,
            wait_step: Duration::from_millis(50),
            queue_limit: 2.0,
        }
    }
}

/// PriorityBucket (\[PB\]: Shi, Zhang, Liu, e-Energy 2020): every stream is split over the paths
/// in proportions computed from its size and each path's delay, bandwidth and queue
/// ([`allocate`]), and each path sends from priority buckets.
///
/// # What the paper specifies
/// - Per stream, once, on arrival: d_i bytes per path from Algorithm 1; "this number serves as
///   the upper sending limit of each stream on a path" (section 3.4.2).
/// - Per path: "Low priority buckets can only be transmitted after high priority buckets
///   complete the transmission, and can be preempted by newly arrival at high priority buckets.
///   Inside a bucket, the path transmits the earliest arrived stream until its completion or
///   sending limit" (section 4.2). Buckets are RFC 9218 urgencies, 0 first.
///
/// # What this implementation adds (the paper's future work)
/// - **Re-allocation.** "We acknowledge that periodic updating of the scheduling results can be
///   more beneficial under dynamic network conditions" (section 4.1). Instead of a period, the
///   unsent rest of every stream is re-allocated, most urgent and earliest first, when a path is
///   added, removed, changes status (fails, becomes backup) or when its bandwidth or one-way
///   delay has drifted by more than [`PriorityBucketConfig::drift_threshold`] (default 25%)
///   from the values the last allocation used, or when a path with half its window or more
///   free has used up its quota while another path still holds unsent quota (the plan's
///   estimates drifted by less than the threshold, yet enough to leave one path idle while
///   the other sends alone). Bytes that must be re-sent after a path died
///   arrive through `on_data_queued` and are allocated like new data.
/// - **Streams of unknown size** are allocated window by window: whenever a stream has queued
///   bytes not covered by its limits, up to [`PriorityBucketConfig::unknown_size_window`]
///   (default 128 KiB) of them are allocated as if they were a stream of that size. Once the
///   stream finishes, its size is known and the whole rest is allocated at once.
/// - **Window-limited b_i.** A path whose window is small delivers one congestion window per
///   round trip, which may be far below the bottleneck rate its estimate (or prior) gives; b_i
///   is therefore min(bandwidth, cwnd / SRTT) by default
///   ([`PriorityBucketConfig::window_limited_rate`]), two windows per round trip while the
///   path is in slow start ([`PathSnapshot::slow_start`]: the window doubles over the next
///   round trip), and the drift rule moves the unsent rest as the window grows. Set it to
///   `false` for the paper's b_i.
/// - A stream with quota on a path but nothing written yet does not block lower buckets: the
///   path moves on to the next stream that has data, so an idle application never idles a path.
/// - **Writes shared as planned.** A size-hinted stream that the application writes slower than
///   the paths carry has each write shared in the plan's proportions: a path takes its part of
///   what was written, not whatever the path asked first left of it.
/// - **No starvation of small streams.** A stream's bucket is its
///   [`effective_urgency`](crate::StreamMeta::effective_urgency): a stream that leads to more
///   urgent ones waits in their bucket. And a small stream that has waited
///   [`PriorityBucketConfig::wait_step`] goes first in its bucket, one bucket higher for every
///   further step ([`PriorityBucketConfig::small_stream`] says what is small).
/// - **Request chains go early.** A stream that starts further requests
///   ([`StreamMeta::leads_to`](crate::StreamMeta::leads_to), from a server that knows its
///   pages) is on the page load's critical path: a small one goes ahead of every bucket, also
///   ahead of what its path holds unsent ([`Grant::first_in_bucket`](crate::Grant)), and is
///   planned as waiting behind none of them, only behind each path's window; a larger one
///   that leads to more bytes than it has goes first in its bucket, below the two most urgent
///   buckets, whose arrival order the first paint depends on.
/// - **Less urgent streams do not build a queue.** A bottleneck is first in, first out, so the
///   buckets order only what has not left yet. While more urgent streams are under way (or
///   were within two round trips, unless what they lead to is known to be no more urgent
///   than the held ones), the less urgent ones may fill a path only up to two
///   bandwidth-delay products ([`PriorityBucketConfig::queue_limit`]), so the next urgent
///   stream waits behind at most about one product of them in the bottleneck's queue, not
///   behind a congestion window in slow start. A small stream of the two most urgent buckets
///   is not held: the first paint waits for it too.
#[derive(Debug, Default)]
pub struct PriorityBucket {
    config: PriorityBucketConfig,
    paths: PathTable,
    streams: StreamTable,
    /// One per known path, in the order of `paths`.
    lanes: Vec<Lane>,
    /// Since when each stream with queued bytes has had them without a grant.
    waiting: BTreeMap<StreamId, Instant>,
    /// Which buckets have streams, and since when the others have had none.
    presence: Presence,
}

/// Per bucket, how many streams it holds, and when a stream last left that may lead to
/// requests as urgent as it: whether more urgent streams are under way, or were a moment ago,
/// so that more may follow.
#[derive(Debug, Default)]
struct Presence {
    streams: [u32; Urgency::LEVELS],
    /// By the least urgent of a stream's bucket and of the requests it leads to: when such a
    /// stream last left.
    left: [Option<Instant>; Urgency::LEVELS],
}

impl Presence {
    fn enter(&mut self, urgency: Urgency) {
        let count = &mut self.streams[usize::from(urgency.get())];
        *count = count.saturating_add(1);
    }

    /// A stream of bucket `urgency` leaves. What follows it is no more urgent than what it
    /// leads to, when that is known ([`StreamMeta::leads_to`]): then it holds back only the
    /// buckets below that.
    ///
    /// [`StreamMeta::leads_to`]: crate::StreamMeta::leads_to
    fn leave(&mut self, urgency: Urgency, leads_to: Option<Lead>, now: Instant) {
        let index = usize::from(urgency.get());
        self.streams[index] = self.streams[index].saturating_sub(1);
        let follows = leads_to.map_or(urgency, |lead| lead.urgency.max(urgency));
        self.left[usize::from(follows.get())] = Some(now);
    }

    /// Whether a bucket more urgent than `urgency` holds a stream, or a stream left within
    /// `recent` that may lead to requests more urgent than `urgency`.
    fn above(&self, urgency: Urgency, now: Instant, recent: Duration) -> bool {
        (0..usize::from(urgency.get())).any(|index| {
            self.streams[index] > 0
                || self.left[index].is_some_and(|left| now.saturating_duration_since(left) < recent)
        })
    }
}

/// What PriorityBucket keeps per path besides its snapshot.
#[derive(Debug)]
struct Lane {
    path: PathId,
    buckets: PathBuckets,
    /// The one-way delay and rate the last full allocation used, to detect drift.
    planned: (Duration, Bandwidth),
    /// Bytes granted since the path's snapshot was last updated, which it does not count yet.
    granted: u64,
    /// The path ran out of quota with room to send, and the unsent rest was re-allocated
    /// for it since its last grant: once per such pause, not on every poll.
    replanned_dry: bool,
}

impl PriorityBucket {
    /// A scheduler with the given tuning.
    pub fn new(config: PriorityBucketConfig) -> Self {
        Self {
            config,
            ..Self::default()
        }
    }

    /// A stream's remaining sending limit on a path (0 if it has none there).
    pub fn quota(&self, stream: StreamId, path: PathId) -> u64 {
        match (self.streams.get(stream), self.path_buckets(path)) {
            (Some(state), Some(buckets)) => buckets.quota(key_of(state)),
            _ => 0,
        }
    }

    fn lane(&self, path: PathId) -> Option<&Lane> {
        self.lanes.iter().find(|lane| lane.path == path)
    }

    fn lane_mut(&mut self, path: PathId) -> Option<&mut Lane> {
        self.lanes.iter_mut().find(|lane| lane.path == path)
    }

    fn path_buckets(&self, path: PathId) -> Option<&PathBuckets> {
        self.lane(path).map(|lane| &lane.buckets)
    }

    /// Allocates whatever part of a stream's pending bytes no path has a limit for yet.
    fn ensure_allocated(&mut self, stream: StreamId) {
        let Some(state) = self.streams.get(stream) else {
            return;
        };
        let key = key_of(state);
        let mut need = state.left().saturating_sub(self.limited(key));
        let sized = state.remaining().is_some();
        if !sized {
            need = need.min(self.config.unknown_size_window);
        }
        if need == 0 {
            return;
        }

        let mut inputs = [AllocPath {
            one_way_delay: Duration::ZERO,
            bandwidth: Bandwidth::UNIT,
            queued: 0,
        }; MAX_PATHS];
        let mut ids = [PathId(0); MAX_PATHS];
        let mut n = 0;
        // A stream that goes ahead of every bucket waits behind none of them.
        let ahead = self.chain(state) == Chain::Ahead;
        for path in self.paths.usable().filter(|p| state.meta.allows(p.id)) {
            let queued = if ahead {
                0
            } else {
                self.path_buckets(path.id)
                    .map_or(0, |b| b.queued_at_or_above(key.urgency))
            };
            // A stream of known size is allocated once: the queue a path holds then delays
            // it. One of unknown size is allocated piece by piece as it is written, and pieces
            // that followed each path's queue from write to write would flap between the paths
            // (2.4 times the grants in the failover test): its pieces follow the delays alone.
            let one_way_delay = if !sized {
                path.one_way_delay
            } else if ahead {
                // It also passes what the path holds unsent (`Grant::first_in_bucket`): only
                // the window's bytes are ahead of it. Counting the unsent ones too sent lte
                // bing.com-2024's 668-byte chain script to the 3G path (FRT 331 ms, 269 ms
                // counting the window's only; docs/results/2026-12-05-first-in-bucket/).
                PathSnapshot {
                    bytes_in_flight: path.bytes_in_flight.min(path.cwnd),
                    ..*path
                }
                .delivery_delay()
            } else {
                path.delivery_delay()
            };
            inputs[n] = AllocPath {
                one_way_delay,
                bandwidth: self.rate(path),
                queued,
            };
            ids[n] = path.id;
            n += 1;
        }
        let mut shares = [0_u64; MAX_PATHS];
        // With no usable path the stream waits: a path coming up re-allocates everything.
        if allocate(&inputs[..n], need, &mut shares).is_err() {
            return;
        }
        if !sized && need < PACKET_PAYLOAD {
            whole_on_one_path(&inputs[..n], &mut shares[..n]);
        }
        for (id, &bytes) in ids[..n].iter().zip(&shares[..n]) {
            if let Some(lane) = self.lane_mut(*id) {
                lane.buckets.add(key, bytes);
            }
        }
    }

    /// A stream's sending limits summed over the paths.
    fn limited(&self, key: BucketKey) -> u64 {
        self.lanes
            .iter()
            .fold(0, |sum, lane| sum.saturating_add(lane.buckets.quota(key)))
    }

    /// Drops a stream's limits everywhere.
    fn clear_stream(&mut self, key: BucketKey) {
        for lane in &mut self.lanes {
            lane.buckets.remove(key);
        }
    }

    /// Re-runs the allocation for the unsent rest of every stream, most urgent and earliest
    /// first, so each sees the streams ahead of it as h_i + e_i.
    fn reallocate_all(&mut self) {
        for lane in &mut self.lanes {
            lane.buckets.clear();
        }
        let mut order: Vec<BucketKey> = self.streams.iter().map(key_of).collect();
        order.sort_unstable();
        for key in order {
            self.ensure_allocated(key.stream);
        }
        for index in 0..self.lanes.len() {
            if let Some(path) = self.paths.get(self.lanes[index].path) {
                self.lanes[index].planned = (path.one_way_delay, self.rate(path));
            }
        }
    }

    /// b_i: the rate the path can deliver now, its bandwidth estimate capped, when so
    /// configured, by what its congestion window lets through per round trip (two windows in
    /// slow start).
    fn rate(&self, path: &PathSnapshot) -> Bandwidth {
        if !self.config.window_limited_rate || path.srtt.is_zero() {
            return path.bandwidth;
        }
        // In slow start the window doubles over the next round trip.
        let growth = if path.slow_start { 2.0 } else { 1.0 };
        let window_rate = growth * path.cwnd as f64 / path.srtt.as_secs_f64();
        match Bandwidth::from_bytes_per_sec(window_rate) {
            Ok(window) if window < path.bandwidth => window,
            _ => path.bandwidth,
        }
    }

    /// The stream a path sends next, what it may take of it ([`Self::allowance`]), the
    /// bucket it is taken from and whether it goes first there ([`Grant::first_in_bucket`]):
    /// the first in bucket order with some allowed there, small streams that waited counted
    /// in the bucket they have risen to.
    fn next_on(
        &self,
        path: PathId,
        now: Instant,
        most: Urgency,
    ) -> Option<(BucketKey, u64, Urgency, bool)> {
        let streams = &self.streams;
        let mut ready = self
            .path_buckets(path)?
            .iter()
            .filter(|(key, _)| key.urgency <= most)
            .filter_map(|(key, _)| {
                let queued = streams.get(key.stream)?.queued;
                let allowed = self.allowance(key, path, queued);
                (allowed > 0).then_some((key, allowed))
            });
        if self.config.small_stream == 0 {
            return ready
                .next()
                .map(|(key, allowed)| (key, allowed, key.urgency, false));
        }
        let (key, allowed, (bucket, _, _)) = ready
            .map(|(key, allowed)| (key, allowed, self.turn(key, now)))
            .min_by_key(|(_, _, turn)| *turn)?;
        let bucket = Urgency::new(bucket).unwrap_or(key.urgency);
        // Only a stream ahead of every bucket also goes ahead of the bytes the path holds
        // unsent: a small one that further requests wait for (nytimes.com's 1.5 kB
        // ad-view-manager.js was granted behind 50 kB its path held, and took 90-135 ms where
        // SEC took 30). Other rises keep arrival order there: taking them all first cost up to
        // 6% FRT in the simulated lossy presets.
        let ahead = self
            .streams
            .get(key.stream)
            .is_some_and(|state| self.chain(state) == Chain::Ahead);
        Some((key, allowed, bucket, ahead))
    }

    /// The next grant on `path` from the buckets of urgency at most `most`.
    fn grant(&mut self, now: Instant, path: PathId, room: u64, most: Urgency) -> Option<Grant> {
        if room == 0 || !self.paths.is_usable(path) {
            return None;
        }
        let (key, allowed, urgency, first_in_bucket) = match self.next_on(path, now, most) {
            Some(next) => next,
            None if self.replan_for_dry(path, room, most) => self.next_on(path, now, most)?,
            None => return None,
        };
        let queued = self.streams.get(key.stream).map_or(0, |s| s.queued);
        let mut bytes = room.min(allowed);
        if self.queue_limited(path, key, now) {
            bytes = bytes.min(self.queue_room(path));
            if bytes == 0 {
                return None;
            }
        }
        if let Some(lane) = self.lane_mut(path) {
            lane.buckets.take(key, bytes);
            lane.granted = lane.granted.saturating_add(bytes);
            lane.replanned_dry = false;
        }
        self.streams.take(key.stream, bytes);
        if bytes < queued {
            self.waiting.insert(key.stream, now);
        } else {
            self.waiting.remove(&key.stream);
        }
        // A stream of unknown size may have used up its window: allocate the next one. (A
        // known size was allocated whole, so its limits still cover what is left.)
        if self
            .streams
            .get(key.stream)
            .is_some_and(|s| s.remaining().is_none())
        {
            self.ensure_allocated(key.stream);
        }
        Some(Grant {
            stream: key.stream,
            bytes,
            urgency,
            first_in_bucket,
        })
    }

    /// What of a stream's `queued` bytes `path` may take now. A stream whose bytes the
    /// application has not all written yet has each write shared in the plan's proportions:
    /// a path takes its allocated part of what was written since the plan, less what it has
    /// sent of it. Otherwise an application that writes slower than the paths carry (a 20
    /// Mbit/s stream over 50 Mbit/s) has each write taken whole by the path asked first, and
    /// the plan's other paths wait with their quota: a path that came back after a failure
    /// sent nothing for 760 ms (`a_failed_path_that_comes_back_carries_data_again_within_half_a_second`).
    /// Once everything allocated is written, a path takes up to its quota, as before.
    fn allowance(&self, key: BucketKey, path: PathId, queued: u64) -> u64 {
        let (mut sent, mut planned) = (0u64, 0u64);
        let mut here = (0, 0);
        for lane in &self.lanes {
            if !self.paths.is_usable(lane.path) {
                continue;
            }
            let (lane_planned, quota) = lane.buckets.plan(key);
            sent = sent.saturating_add(lane_planned.saturating_sub(quota));
            planned = planned.saturating_add(lane_planned);
            if lane.path == path {
                here = (lane_planned, quota);
            }
        }
        let (here_planned, quota) = here;
        let written = sent.saturating_add(queued);
        if written >= planned {
            return quota.min(queued);
        }
        // `planned > written >= 0`, so the divisor is not 0 and the part is below `here_planned`.
        let part = u128::from(written) * u128::from(here_planned) / u128::from(planned);
        u64::try_from(part)
            .unwrap_or(u64::MAX)
            .saturating_sub(here_planned.saturating_sub(quota))
            .min(quota)
            .min(queued)
    }

    /// A path with half its window or more free has no quota of any stream with data (of
    /// urgency at most `most`), while another path holds more quota than it sends in a round
    /// trip of this one: the plan is stale.
    /// Re-allocates every unsent rest with the current estimates, once until the path's next
    /// grant; returns whether it did. Not with the paper's plan, which is never revised for
    /// estimates.
    ///
    /// Seen on pb-high's testbed (docs/results/2026-11-27-tail/): the last re-allocation of a
    /// 20 MB transfer came as BBR left Drain, while the 40 Mbit/s path's smoothed RTT still
    /// held Drain's queue, and its rate of 36 Mbit/s stayed within the threshold of the 39 it
    /// then ran at. The 10 Mbit/s path was left with 300 kB to send alone for 350 ms. With
    /// this, such a transfer still came once in 42; on pages it cut priority-bucket's PLT.
    fn replan_for_dry(&mut self, path: PathId, room: u64, most: Urgency) -> bool {
        // A path with most of its window in flight is busy, not idle: the bytes it sent
        // still hold its window, which the allocation does not see. Re-planning for it then
        // gave pb-high's 40 Mbit/s path, in its first window, more of bing-2013's image than
        // it could send in a round trip (+10 ms of PLT).
        let Some((cwnd, here)) = self.paths.get(path).map(|p| (p.cwnd, p.srtt)) else {
            return false;
        };
        if !self.config.drift_threshold.is_finite()
            || room.saturating_mul(2) < cwnd
            || self.lane(path).is_none_or(|lane| lane.replanned_dry)
        {
            return false;
        }
        // Only quota that keeps another path busy for longer than a round trip here is worth
        // a new plan. A fresh plan leaves every path as much as it sends in the same time,
        // and re-planning it anyway split each small stream in halves, again after every
        // grant, until the path asked first had taken nearly all of it: a 145-byte request
        // went out as seven chunks of 72, 37, ... 1 bytes (pb-low's testbed traces,
        // docs/results/2026-11-28-one-thread/).
        let streams = &self.streams;
        let elsewhere = self.lanes.iter().any(|lane| {
            let Some(there) = self.paths.get(lane.path).filter(|_| lane.path != path) else {
                return false;
            };
            let unsent: u64 = lane
                .buckets
                .iter()
                .filter(|(key, _)| key.urgency <= most)
                .map(|(key, quota)| quota.min(streams.get(key.stream).map_or(0, |s| s.queued)))
                .sum();
            self.rate(there).seconds_for(unsent) > here.as_secs_f64()
        });
        if !elsewhere {
            return false;
        }
        self.reallocate_all();
        if let Some(lane) = self.lane_mut(path) {
            lane.replanned_dry = true;
        }
        true
    }

    /// Whether a stream is held to the path's queue limit: while more urgent streams are under
    /// way, or were within two of the path's round trips, since the next urgent request of a
    /// page comes about a round trip after the last urgent response. A stream whose requests
    /// are known to be no more urgent than this stream's bucket holds nothing once it has left.
    ///
    /// A small stream of the [`ARRIVAL_ORDER`] buckets is never held: the first paint waits
    /// for it as for the more urgent ones, and it adds at most
    /// [`PriorityBucketConfig::small_stream`] bytes to the queue. The limit is two products
    /// of an estimate that a page load's short flights rarely lift above its prior: pb-low's
    /// 25 Mbit/s paths read as 10 Mbit/s 40 ms into youtube-2013, and its 11 kB
    /// render-blocking script waited for the queue to drain to 27 kB while the links went
    /// partly idle (FRT 46.2 ms against SEC's 42.5 simulated, 49.8 against 43.6 on the testbed;
    /// docs/results/2026-12-05-small-critical/).
    fn queue_limited(&self, path: PathId, key: BucketKey, now: Instant) -> bool {
        let recent = self
            .paths
            .get(path)
            .map_or(Duration::ZERO, |p| p.srtt.saturating_mul(2));
        self.config.queue_limit.is_finite()
            && self.presence.above(key.urgency, now, recent)
            && !self.small_critical(key)
    }

    /// Whether a stream is small (by its known size) and in an [`ARRIVAL_ORDER`] bucket.
    fn small_critical(&self, key: BucketKey) -> bool {
        key.urgency.get() <= ARRIVAL_ORDER
            && self.streams.get(key.stream).is_some_and(|state| {
                state
                    .meta
                    .size
                    .is_some_and(|size| size <= self.config.small_stream)
            })
    }

    /// What a path may still take of the streams its queue limit holds
    /// ([`PriorityBucketConfig::queue_limit`]).
    fn queue_room(&self, path: PathId) -> u64 {
        let (Some(snapshot), Some(lane)) = (self.paths.get(path), self.lane(path)) else {
            return 0;
        };
        let limit = (self.config.queue_limit * snapshot.bandwidth_delay_product())
            .max(QUEUE_LIMIT_FLOOR as f64);
        // `as` saturates: a limit beyond u64::MAX (an absurd bandwidth estimate) is u64::MAX.
        let holds = snapshot.bytes_in_flight.saturating_add(lane.granted);
        (limit as u64).saturating_sub(holds)
    }

    /// Where a stream stands in a path's order: (bucket, not risen, arrival). A stream that
    /// starts a chain of requests rises as [`Self::chain`] says; a small stream that has
    /// waited n >= 1 steps goes ahead of the rest of bucket `urgency - (n - 1)`.
    fn turn(&self, key: BucketKey, now: Instant) -> (u8, bool, u64) {
        let urgency = key.urgency.get();
        let Some(state) = self.streams.get(key.stream) else {
            return (urgency, true, key.seq);
        };
        match self.chain(state) {
            Chain::Ahead => return (0, false, key.seq),
            Chain::FirstInBucket => return (urgency, false, key.seq),
            Chain::None => {}
        }
        let small = state.left() <= self.config.small_stream;
        let waited = self
            .waiting
            .get(&key.stream)
            .map_or(Duration::ZERO, |since| {
                now.saturating_duration_since(*since)
            });
        let steps = waited.as_nanos() / self.config.wait_step.as_nanos();
        if !small || steps == 0 {
            return (urgency, true, key.seq);
        }
        let lift = u8::try_from(steps - 1).unwrap_or(u8::MAX);
        (urgency.saturating_sub(lift), false, key.seq)
    }

    /// How far a stream rises for the requests it starts ([`StreamMeta::leads_to`]): the
    /// page's next requests wait for it, so it is on the load's critical path. A small one goes
    /// ahead of every bucket, which delays the others by at most
    /// [`PriorityBucketConfig::small_stream`] bytes. A larger one goes first in its bucket when
    /// what it leads to outweighs it, in a bucket below [`ARRIVAL_ORDER`]. Strict buckets
    /// (`small_stream` 0) lift nothing.
    ///
    /// [`StreamMeta::leads_to`]: crate::StreamMeta::leads_to
    fn chain(&self, state: &StreamState) -> Chain {
        let Some(lead) = state.meta.leads_to else {
            return Chain::None;
        };
        if self.config.small_stream == 0 {
            return Chain::None;
        }
        if state.left() <= self.config.small_stream {
            return Chain::Ahead;
        }
        let outweighs = state.meta.size.is_some_and(|size| lead.bytes >= size);
        if outweighs && state.meta.effective_urgency().get() > ARRIVAL_ORDER {
            Chain::FirstInBucket
        } else {
            Chain::None
        }
    }

    /// Whether a path's estimates moved past the drift threshold since the last allocation.
    fn drifted(&self, path: &PathSnapshot) -> bool {
        let Some(lane) = self.lane(path.id) else {
            return true;
        };
        drift::drifted(
            lane.planned,
            (path.one_way_delay, self.rate(path)),
            self.config.drift_threshold,
        )
    }
}

/// Buckets up to this urgency keep arrival order for streams that start chains of requests:
/// a page's first paint waits for every stream in them (RFC 9218's two most urgent levels, the
/// critical objects re-injection covers by default), and a large script taken out of turn
/// there delays it. In the buckets below, the first paint waits for none, and the chain
/// decides the load time: bing.com-2024's 86 kB `experience.js` leads to 333 kB of further
/// requests (docs/results/2026-11-29-request-chains/).
const ARRIVAL_ORDER: u8 = 1;

/// How far a stream that starts further requests rises ([`PriorityBucket::chain`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chain {
    /// Its turn: it starts none, or does not rise for them.
    None,
    /// First in its bucket.
    FirstInBucket,
    /// Ahead of every bucket.
    Ahead,
}

/// Puts a write of unknown size smaller than a packet's payload (a request, typically) on the
/// one path the allocation gave the most, the least queued of equals. Its allocation follows
/// the paths' delays alone, so alike paths split it in halves: every request of a page went
/// out in two chunks, one per path, complete only when both were in, and both ends handled
/// twice the chunks, to save a few microseconds of transmission. A stream of known size keeps
/// its split, which weighed the paths' queues.
fn whole_on_one_path(paths: &[AllocPath], shares: &mut [u64]) {
    let total: u64 = shares.iter().sum();
    let best = (0..shares.len()).max_by_key(|&i| {
        (
            shares[i],
            std::cmp::Reverse(paths[i].queued),
            std::cmp::Reverse(i),
        )
    });
    for (i, share) in shares.iter_mut().enumerate() {
        *share = if Some(i) == best { total } else { 0 };
    }
}

fn key_of(state: &StreamState) -> BucketKey {
    BucketKey {
        urgency: state.meta.effective_urgency(),
        seq: state.seq,
        stream: state.meta.id,
    }
}

impl Scheduler for PriorityBucket {
    fn name(&self) -> &str {
        if self.config.is_paper() {
            "priority-bucket-paper"
        } else {
            "priority-bucket"
        }
    }

    fn on_path_added(&mut self, _now: Instant, path: &PathSnapshot) -> Result<(), SchedError> {
        self.paths.add(*path)?;
        self.lanes.push(Lane {
            path: path.id,
            buckets: PathBuckets::default(),
            planned: (path.one_way_delay, self.rate(path)),
            granted: 0,
            replanned_dry: false,
        });
        self.reallocate_all();
        Ok(())
    }

    fn on_path_updated(&mut self, _now: Instant, path: &PathSnapshot) -> Result<(), SchedError> {
        let previous = self.paths.update(*path)?;
        if let Some(lane) = self.lane_mut(path.id) {
            lane.granted = 0;
        }
        if previous.status != path.status || self.drifted(path) {
            self.reallocate_all();
        }
        Ok(())
    }

    fn on_path_removed(&mut self, _now: Instant, path: PathId) {
        if self.paths.remove(path).is_some() {
            self.lanes.retain(|lane| lane.path != path);
            self.reallocate_all();
        }
    }

    fn on_stream_opened(&mut self, _now: Instant, meta: &StreamMeta) -> Result<(), SchedError> {
        self.streams.open(*meta)?;
        self.presence.enter(meta.effective_urgency());
        self.ensure_allocated(meta.id);
        Ok(())
    }

    fn on_stream_updated(&mut self, now: Instant, meta: &StreamMeta) -> Result<(), SchedError> {
        let state = self
            .streams
            .get(meta.id)
            .ok_or(SchedError::UnknownStream(meta.id))?;
        let (old, old_lead) = (key_of(state), state.meta.leads_to);
        self.clear_stream(old);
        self.streams.update(*meta)?;
        self.presence.leave(old.urgency, old_lead, now);
        self.presence.enter(meta.effective_urgency());
        self.ensure_allocated(meta.id);
        Ok(())
    }

    fn on_data_queued(
        &mut self,
        now: Instant,
        stream: StreamId,
        bytes: u64,
    ) -> Result<(), SchedError> {
        self.streams.queue(stream, bytes)?;
        self.waiting.entry(stream).or_insert(now);
        self.ensure_allocated(stream);
        Ok(())
    }

    fn on_stream_finished(&mut self, _now: Instant, stream: StreamId) -> Result<(), SchedError> {
        let state = self.streams.finish(stream)?;
        let (key, pending) = (key_of(state), state.left());
        // The size is now exact: limits sized for a larger declared size would count as
        // phantom h_i + e_i for later streams, so allocate the exact rest afresh.
        if self.limited(key) > pending {
            self.clear_stream(key);
        }
        self.ensure_allocated(stream);
        Ok(())
    }

    fn on_stream_closed(&mut self, now: Instant, stream: StreamId) {
        self.waiting.remove(&stream);
        if let Some(state) = self.streams.remove(stream) {
            let key = key_of(&state);
            self.presence.leave(key.urgency, state.meta.leads_to, now);
            self.clear_stream(key);
        }
    }

    fn poll_send(&mut self, now: Instant, path: PathId, room: u64) -> Option<Grant> {
        self.grant(now, path, room, Urgency::LOWEST)
    }

    fn poll_send_urgent(
        &mut self,
        now: Instant,
        path: PathId,
        room: u64,
        urgency: Urgency,
    ) -> Option<Grant> {
        self.grant(now, path, room, urgency)
    }
}
