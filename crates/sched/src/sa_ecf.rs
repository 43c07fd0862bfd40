//! Stream-aware earliest completion first (Rabitsch, Hurtig, Brunstrom, "A Stream-Aware
//! Multipath QUIC Scheduler for Heterogeneous Paths", EPIQ 2018): ECF's choice between
//! waiting for the fastest path and using a slower one, made per stream with the bytes the
//! connection must still send before that stream completes.
//!
//! # What comes from where
//!
//! - ECF (Lim, Nahum, Towsley, Gibbens, "ECF: An MPTCP Path Scheduler to Manage Heterogeneous
//!   Paths", CoNEXT 2017), Algorithm 1, in the form of its authors' Linux implementation
//!   (`mptcp_ecf.c`): when the fastest path `f` is full and `s` is the best path with room,
//!   with `k` bytes to send, `delta = max(var_f, var_s)` and `beta = 0.25`, wait for `f` if
//!   `(1 + max(k, cwnd_f) / cwnd_f) * rtt_f < (1 + waiting * beta) * (rtt_s + delta)` and
//!   `max(k, cwnd_s) / cwnd_s * rtt_s >= 2 * rtt_f + delta`; `waiting` is the hysteresis
//!   flag, set when it waits and cleared when the first test fails.
//! - SA-ECF (EPIQ 2018, and its mp-quic implementation, `selectPathStreamAwareEarliestCompletionFirst`
//!   with `bytesUntilCompletion`): the test runs per stream, in the stream scheduler's order,
//!   with `k` = the bytes the whole connection sends until that stream completes given its
//!   weighted share, and a `waiting` flag per stream; the slow path goes to the first stream
//!   that does not gain by waiting, and to none if all do. Streams take turns by weight.
//!
//! Chosen here: `k` is computed exactly by the fluid WRR model of
//! [`wrr_completion`](crate::wrr_completion) (bytes sent until the stream completes
//! at a rate of one byte per second), where the mp-quic code approximates it from the
//! stream's share in the current round; the turn order is [`WeightedRoundRobin`]'s; `var` is
//! the snapshot's RTTVAR.
//!
//! [`WeightedRoundRobin`]: crate::WeightedRoundRobin

use std::collections::BTreeMap;
use std::time::Instant;

use crate::baseline::{forward_events_to_tables, LowestRtt, Tables, PACKET_PAYLOAD};
use crate::wrr::WeightedTurns;
use crate::{wrr_completion, FluidStream};
use crate::{Bandwidth, Grant, PathId, PathSnapshot, Scheduler, StreamId, StreamState};

/// Configuration of [`SaEcf`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SaEcfConfig {
    quantum: u64,
    beta: f64,
}

impl SaEcfConfig {
    /// Most bytes one grant carries; 0 is taken as 1.
    ///
    /// # Default
    ///
    /// 1200 bytes, one packet payload, so the decision is made packet by packet as in mp-quic.
    pub fn quantum(&mut self, bytes: u64) -> &mut Self {
        self.quantum = bytes.max(1);
        self
    }

    /// ECF's hysteresis `beta`: once a stream waits, the slow path must look this much
    /// (relative) worse before it stops waiting. NaN and negatives are taken as 0.
    ///
    /// # Default
    ///
    /// 0.25, ECF's value (`mptcp_ecf_r_beta = 4`).
    pub fn beta(&mut self, beta: f64) -> &mut Self {
        self.beta = if beta >= 0.0 { beta } else { 0.0 };
        self
    }
}

impl Default for SaEcfConfig {
    fn default() -> Self {
        Self {
            quantum: PACKET_PAYLOAD,
            beta: 0.25,
        }
    }
}

/// Stream-aware earliest completion first (see the module documentation for the rule and its
/// sources).
///
/// The fastest usable path (lowest SRTT) always gets the next stream by weighted turns. A
/// slower path is served only when every faster path is full, and then only for the first
/// stream, in turn order, that would not complete sooner by waiting for the fastest path;
/// otherwise `None`.
///
/// A wait relies on the fastest path's next ack: it is only chosen while that path has bytes
/// in flight. As a guard against stale estimates, a stream stops waiting `srtt_f + delta`
/// after its wait began ([`poll_timeout`](Scheduler::poll_timeout) reports that instant), is
/// granted one chunk on the slow path, and may then wait again.
#[derive(Debug, Clone, Default)]
pub struct SaEcf {
    config: SaEcfConfig,
    tables: Tables,
    turns: WeightedTurns,
    /// ECF state of streams that have been weighed against a slow path.
    waits: BTreeMap<StreamId, Wait>,
    /// The latest `now` seen, so that expired waits are not reported as timeouts.
    latest: Option<Instant>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Wait {
    /// ECF's `waiting` flag: the stream chose to wait last time it was weighed.
    waiting: bool,
    /// When the current wait stops holding the stream back.
    until: Option<Instant>,
}

impl SaEcf {
    /// An SA-ECF scheduler with `config`.
    pub fn new(config: SaEcfConfig) -> Self {
        Self {
            config,
            ..Self::default()
        }
    }

    fn send(&mut self, path: PathId, stream: StreamId, room: u64) -> Option<Grant> {
        let grant = self
            .tables
            .grant(path, stream, room.min(self.config.quantum))?;
        self.turns.charge(&self.tables.streams, grant);
        if let Some(wait) = self.waits.get_mut(&stream) {
            wait.until = None;
        }
        Some(grant)
    }

    /// For each stream with bytes left, the bytes the connection sends until it completes.
    fn bytes_until_completion(&self) -> BTreeMap<StreamId, u64> {
        let streams: Vec<&StreamState> = self
            .tables
            .streams
            .iter()
            .filter(|s| s.left() > 0)
            .collect();
        let fluid: Vec<FluidStream> = streams
            .iter()
            .map(|s| FluidStream {
                size: s.left(),
                weight: s.meta.effective_urgency().weight(),
            })
            .collect();
        let done = wrr_completion(&fluid, Bandwidth::UNIT);
        streams
            .iter()
            .zip(done.seconds)
            .map(|(s, bytes)| (s.meta.id, bytes as u64))
            .collect()
    }

    /// ECF's test for one stream with `k` bytes until completion: wait for `fast` rather than
    /// send on `slow`?
    fn waits_for_fast(
        &mut self,
        now: Instant,
        stream: StreamId,
        k: u64,
        fast: &PathSnapshot,
        slow: &PathSnapshot,
    ) -> bool {
        // Nothing in flight on the fast path: no ack will open it, so waiting could be forever.
        if fast.cwnd == 0 || fast.bytes_in_flight == 0 {
            return false;
        }
        // ECF's var is RTTVAR, as `mptcp_ecf.c` uses `rttvar_us`.
        let delta = fast.rttvar.max(slow.rttvar);
        let (rtt_f, rtt_s) = (fast.srtt.as_secs_f64(), slow.srtt.as_secs_f64());
        let (d, k) = (delta.as_secs_f64(), k as f64);
        let (cwnd_f, cwnd_s) = (fast.cwnd as f64, slow.cwnd.max(1) as f64);
        let wait = self.waits.entry(stream).or_default();
        let margin = if wait.waiting { self.config.beta } else { 0.0 };
        let rounds_f = 1.0 + k.max(cwnd_f) / cwnd_f;
        if rounds_f * rtt_f >= (1.0 + margin) * (rtt_s + d) {
            wait.waiting = false;
            return false;
        }
        if k.max(cwnd_s) / cwnd_s * rtt_s < 2.0 * rtt_f + d {
            return false;
        }
        wait.waiting = true;
        let until = *wait.until.get_or_insert_with(|| {
            now.checked_add(fast.srtt.saturating_add(delta))
                .unwrap_or(now)
        });
        if now >= until {
            wait.until = None;
            return false;
        }
        true
    }
}

impl Scheduler for SaEcf {
    fn name(&self) -> &str {
        "sa-ecf"
    }

    forward_events_to_tables!();

    fn on_stream_closed(&mut self, _: Instant, stream: StreamId) {
        self.tables.close(stream);
        self.turns.forget(stream);
        self.waits.remove(&stream);
    }

    fn poll_send(&mut self, now: Instant, path: PathId, room: u64) -> Option<Grant> {
        self.latest = Some(self.latest.map_or(now, |latest| latest.max(now)));
        if !self.tables.may_send(path, room) {
            return None;
        }
        let asked = *self.tables.paths.get(path)?;
        let fastest = *self.tables.paths.usable().min_by_key(|p| p.srtt)?;
        if asked.srtt <= fastest.srtt {
            let stream = self
                .turns
                .next(&self.tables.streams, |s| s.meta.allows(path))?;
            return self.send(path, stream, room);
        }
        // A faster path with room goes first; past this, every faster path is full.
        let rule = LowestRtt::new(&self.tables.paths, path, room);
        if !rule.may_carry_any(&self.tables.streams) {
            return None;
        }
        let until_done = self.bytes_until_completion();
        for stream in self.turns.order(&self.tables.streams, |s| rule.carries(s)) {
            // A stream kept to some paths follows the lowest-RTT rule among them: it does not
            // wait for a faster path it may not use.
            let restricted = self
                .tables
                .streams
                .get(stream)
                .is_some_and(|s| s.meta.paths.is_some());
            let k = until_done.get(&stream).copied().unwrap_or(0);
            if restricted || !self.waits_for_fast(now, stream, k, &fastest, &asked) {
                return self.send(path, stream, room);
            }
        }
        None
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.waits
            .values()
            .filter_map(|w| w.until)
            .filter(|&until| self.latest.is_none_or(|latest| until > latest))
            .min()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{StreamMeta, Urgency};

    const CWND_F: u64 = 12_000;

    fn path(id: u32, rtt_ms: u64, cwnd: u64, in_flight: u64) -> PathSnapshot {
        let rate = Bandwidth::from_bytes_per_sec(1e6).unwrap();
        let mut path = PathSnapshot::new(PathId(id), Duration::from_millis(rtt_ms), rate, cwnd);
        path.bytes_in_flight = in_flight;
        // Settled paths: no RTT variation, so ECF's delta is 0 and the arithmetic stays plain.
        path.rttvar = Duration::ZERO;
        path
    }

    /// A lossless fast path (10 ms) with a small window, full, and a slow path (100 ms) with
    /// room.
    fn fast_full_slow_open(now: Instant) -> SaEcf {
        let mut ecf = SaEcf::default();
        ecf.on_path_added(now, &path(0, 10, CWND_F, CWND_F))
            .unwrap();
        ecf.on_path_added(now, &path(1, 100, 100_000, 0)).unwrap();
        ecf
    }

    fn open(ecf: &mut SaEcf, now: Instant, id: u64, bytes: u64) {
        let meta = StreamMeta::new(StreamId(id)).with_size(bytes);
        ecf.on_stream_opened(now, &meta).unwrap();
        ecf.on_data_queued(now, StreamId(id), bytes).unwrap();
    }

    #[test]
    fn a_small_stream_waits_for_the_fast_path() {
        let now = Instant::now();
        let mut ecf = fast_full_slow_open(now);
        open(&mut ecf, now, 0, 5_000);
        assert_eq!(ecf.poll_send(now, PathId(1), 100_000), None);
        assert_eq!(ecf.poll_timeout(), Some(now + Duration::from_millis(10)));
        // The fast path's ack opens its window: the stream goes there.
        ecf.on_path_updated(now, &path(0, 10, CWND_F, 0)).unwrap();
        let grant = ecf.poll_send(now, PathId(0), CWND_F).unwrap();
        assert_eq!(grant.stream, StreamId(0));
        assert_eq!(ecf.poll_timeout(), None);
    }

    #[test]
    fn a_big_stream_uses_both_paths() {
        let now = Instant::now();
        let mut ecf = fast_full_slow_open(now);
        open(&mut ecf, now, 0, 10_000_000);
        assert!(ecf.poll_send(now, PathId(1), 100_000).is_some());
        ecf.on_path_updated(now, &path(0, 10, CWND_F, 0)).unwrap();
        assert!(ecf.poll_send(now, PathId(0), CWND_F).is_some());
    }

    #[test]
    fn the_slow_path_goes_to_the_stream_that_does_not_gain_by_waiting() {
        let now = Instant::now();
        let mut ecf = fast_full_slow_open(now);
        open(&mut ecf, now, 0, 5_000);
        open(&mut ecf, now, 1, 10_000_000);
        for _ in 0..10 {
            let grant = ecf.poll_send(now, PathId(1), 100_000).unwrap();
            assert_eq!(grant.stream, StreamId(1));
        }
    }

    #[test]
    fn a_low_weight_stream_counts_the_bytes_sent_before_it_completes() {
        // Alone, 30 kB would wait (3.5 fast RTTs of 10 ms < 100 ms); behind a heavier
        // 2 MB stream it completes only after ~2 MB, so it takes the slow path.
        let now = Instant::now();
        let mut ecf = fast_full_slow_open(now);
        let low = StreamMeta::new(StreamId(0))
            .with_size(30_000)
            .with_urgency(Urgency::LOWEST);
        ecf.on_stream_opened(now, &low).unwrap();
        ecf.on_data_queued(now, StreamId(0), 30_000).unwrap();
        let high = StreamMeta::new(StreamId(1))
            .with_size(2_000_000)
            .with_urgency(Urgency::HIGHEST);
        ecf.on_stream_opened(now, &high).unwrap();
        let grant = ecf.poll_send(now, PathId(1), 100_000).unwrap();
        assert_eq!(grant.stream, StreamId(0));

        let mut alone = fast_full_slow_open(now);
        open(&mut alone, now, 0, 30_000);
        assert_eq!(alone.poll_send(now, PathId(1), 100_000), None);
    }

    #[test]
    fn a_wait_expires_and_never_holds_without_data_in_flight() {
        let now = Instant::now();
        let mut ecf = fast_full_slow_open(now);
        open(&mut ecf, now, 0, 5_000);
        assert_eq!(ecf.poll_send(now, PathId(1), 100_000), None);
        let later = now + Duration::from_millis(11);
        assert!(ecf.poll_send(later, PathId(1), 100_000).is_some());

        // A full fast path with nothing in flight (cwnd collapsed to zero) is not waited for.
        let mut stalled = SaEcf::default();
        stalled.on_path_added(now, &path(0, 10, 0, 0)).unwrap();
        stalled
            .on_path_added(now, &path(1, 100, 100_000, 0))
            .unwrap();
        open(&mut stalled, now, 0, 5_000);
        assert!(stalled.poll_send(now, PathId(1), 100_000).is_some());
    }
}
