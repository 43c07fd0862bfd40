//! What the baseline schedulers share: their tables, the round-robin cursor over streams and
//! the lowest-RTT path rule of mp-quic.
//!
//! Each baseline is a thin policy over the shared parts, so they cannot drift apart on the
//! bookkeeping the [`Scheduler`](crate::Scheduler) contract asks of all of them.

use crate::{
    Grant, PathId, PathSnapshot, PathTable, SchedError, StreamId, StreamMeta, StreamState,
    StreamTable,
};

/// The payload of one full-size QUIC packet, the default chunk of the round-robin baselines.
pub(crate) const PACKET_PAYLOAD: u64 = 1200;

/// The paths and streams a baseline knows, with the event handling every baseline does alike.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tables {
    /// Known paths with their latest snapshots.
    pub(crate) paths: PathTable,
    /// Open streams; closed ones are removed, so memory follows the open streams.
    pub(crate) streams: StreamTable,
}

impl Tables {
    pub(crate) fn add_path(&mut self, path: &PathSnapshot) -> Result<(), SchedError> {
        self.paths.add(*path)
    }

    pub(crate) fn update_path(&mut self, path: &PathSnapshot) -> Result<(), SchedError> {
        self.paths.update(*path).map(drop)
    }

    pub(crate) fn remove_path(&mut self, path: PathId) {
        self.paths.remove(path);
    }

    pub(crate) fn open_stream(&mut self, meta: &StreamMeta) -> Result<(), SchedError> {
        self.streams.open(*meta).map(drop)
    }

    pub(crate) fn update_stream(&mut self, meta: &StreamMeta) -> Result<(), SchedError> {
        self.streams.update(*meta).map(drop)
    }

    pub(crate) fn queue(&mut self, stream: StreamId, bytes: u64) -> Result<(), SchedError> {
        self.streams.queue(stream, bytes).map(drop)
    }

    pub(crate) fn finish(&mut self, stream: StreamId) -> Result<(), SchedError> {
        self.streams.finish(stream).map(drop)
    }

    pub(crate) fn close(&mut self, stream: StreamId) {
        self.streams.remove(stream);
    }

    /// Whether a poll may be answered at all: some room, and a path that may carry data now.
    pub(crate) fn may_send(&self, path: PathId, room: u64) -> bool {
        room > 0 && self.paths.is_usable(path)
    }

    /// Takes up to `bytes` of `stream` off its queue as a grant on `path`, whose room shrinks
    /// by as much; `None` rather than an empty grant when nothing is left.
    pub(crate) fn grant(&mut self, path: PathId, stream: StreamId, bytes: u64) -> Option<Grant> {
        let grant = self.streams.grant(stream, bytes)?;
        self.paths.charge(path, grant.bytes);
        Some(grant)
    }
}

/// Plain round robin over the streams with queued bytes, in stream-id order, one chunk per turn.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RoundRobinCursor {
    last: Option<StreamId>,
}

impl RoundRobinCursor {
    /// The stream whose turn it is: the first after the last served one that has queued bytes
    /// and is `eligible`, wrapping around.
    pub(crate) fn next(
        &self,
        streams: &StreamTable,
        eligible: impl Fn(&StreamState) -> bool,
    ) -> Option<StreamId> {
        let mut waiting = streams
            .iter()
            .filter(|s| s.queued > 0 && eligible(s))
            .map(|s| s.meta.id);
        let first = waiting.next()?;
        let Some(last) = self.last else {
            return Some(first);
        };
        if first > last {
            return Some(first);
        }
        Some(waiting.find(|&id| id > last).unwrap_or(first))
    }

    /// Records that `stream` had its turn.
    pub(crate) fn served(&mut self, stream: StreamId) {
        self.last = Some(stream);
    }
}

/// mp-quic's path rule (De Coninck and Bonaventure, CoNEXT 2017): data goes to the usable path
/// with the lowest smoothed RTT among those with congestion-window room. The asked path counts
/// as having `room`; the others their snapshots, less what was granted on them since
/// ([`PathTable::charge`](crate::PathTable::charge)). Paths tied on the lowest SRTT all qualify,
/// so equal paths are both used. A faster path counts as having room only with at least one
/// packet's payload of window: quinn, which carries each path, sends nothing into less, so a
/// few hundred bytes of window must not hold data back from the other paths.
///
/// A stream restricted to some paths ([`StreamMeta::paths`]) follows the rule among those: a
/// slower path carries it when no faster path it may use has room.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LowestRtt<'a> {
    paths: &'a PathTable,
    asked: PathId,
    room: u64,
    /// The rule's answer for streams that may use every path.
    for_any_path: bool,
}

impl<'a> LowestRtt<'a> {
    pub(crate) fn new(paths: &'a PathTable, asked: PathId, room: u64) -> Self {
        let mut rule = Self {
            paths,
            asked,
            room,
            for_any_path: false,
        };
        rule.for_any_path = rule.holds_among(|_| true);
        rule
    }

    /// Whether the asked path may carry `stream` now.
    pub(crate) fn carries(&self, stream: &StreamState) -> bool {
        match stream.meta.paths {
            None => self.for_any_path,
            Some(set) => set.contains(self.asked) && self.holds_among(|p| set.contains(p)),
        }
    }

    /// Whether the asked path may carry some stream now: a cheap test before looking at each.
    pub(crate) fn may_carry_any(&self, streams: &StreamTable) -> bool {
        self.for_any_path || streams.iter().any(|s| s.meta.paths.is_some())
    }

    fn holds_among(&self, allowed: impl Fn(PathId) -> bool) -> bool {
        if self.room == 0 {
            return false;
        }
        let Some(me) = self.paths.usable().find(|p| p.id == self.asked) else {
            return false;
        };
        !self.paths.usable().any(|p| {
            p.id != self.asked && allowed(p.id) && p.room() >= PACKET_PAYLOAD && p.srtt < me.srtt
        })
    }
}

/// The event handlers a baseline forwards unchanged to its [`Tables`] in `self.tables`; the
/// baseline writes `name`, `on_stream_closed` (to forget its own per-stream state) and
/// `poll_send` itself.
macro_rules! forward_events_to_tables {
    () => {
        fn on_path_added(
            &mut self,
            _: std::time::Instant,
            path: &$crate::PathSnapshot,
        ) -> Result<(), $crate::SchedError> {
            self.tables.add_path(path)
        }

        fn on_path_updated(
            &mut self,
            _: std::time::Instant,
            path: &$crate::PathSnapshot,
        ) -> Result<(), $crate::SchedError> {
            self.tables.update_path(path)
        }

        fn on_path_removed(&mut self, _: std::time::Instant, path: $crate::PathId) {
            self.tables.remove_path(path);
        }

        fn on_stream_opened(
            &mut self,
            _: std::time::Instant,
            meta: &$crate::StreamMeta,
        ) -> Result<(), $crate::SchedError> {
            self.tables.open_stream(meta)
        }

        fn on_stream_updated(
            &mut self,
            _: std::time::Instant,
            meta: &$crate::StreamMeta,
        ) -> Result<(), $crate::SchedError> {
            self.tables.update_stream(meta)
        }

        fn on_data_queued(
            &mut self,
            _: std::time::Instant,
            stream: $crate::StreamId,
            bytes: u64,
        ) -> Result<(), $crate::SchedError> {
            self.tables.queue(stream, bytes)
        }

        fn on_stream_finished(
            &mut self,
            _: std::time::Instant,
            stream: $crate::StreamId,
        ) -> Result<(), $crate::SchedError> {
            self.tables.finish(stream)
        }
    };
}
pub(crate) use forward_events_to_tables;

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::{Duration, Instant};

    use proptest::prelude::*;

    use super::*;
    use crate::{
        Bandwidth, Lrf, PathStatus, RoundRobin, SaEcf, Scheduler, StreamEarliestCompletion,
        Urgency, WeightedRoundRobin,
    };

    fn baselines() -> Vec<Box<dyn Scheduler>> {
        vec![
            Box::<RoundRobin>::default(),
            Box::<Lrf>::default(),
            Box::<WeightedRoundRobin>::default(),
            Box::<StreamEarliestCompletion>::default(),
            Box::<SaEcf>::default(),
        ]
    }

    fn snapshot(id: u32, rtt_ms: u64, rate: f64, cwnd: u64) -> PathSnapshot {
        let rate = Bandwidth::from_bytes_per_sec(rate).unwrap();
        PathSnapshot::new(PathId(id), Duration::from_millis(rtt_ms), rate, cwnd)
    }

    /// Drives each scheduler in rounds: every path is polled with its window's room until it
    /// says no, then everything in flight is acknowledged; a stream closed midway gets nothing
    /// after its close.
    #[test]
    fn every_baseline_grants_each_byte_once_within_room_and_never_on_a_down_path() {
        let sizes: [(u64, u8, Option<u64>); 5] = [
            (0, 0, Some(3_000)),
            (1, 3, Some(70_000)),
            (2, 5, None),
            (3, 7, Some(1_200)),
            (4, 2, Some(250_000)),
        ];
        let closing = StreamId(9);
        for mut sched in baselines() {
            let name = sched.name().to_owned();
            let mut now = Instant::now();
            let mut paths = vec![
                snapshot(0, 10, 1e6, 15_000),
                snapshot(1, 60, 3e5, 40_000),
                snapshot(2, 5, 1e7, 1_000_000),
            ];
            paths[2].status = PathStatus::Down;
            for path in &paths {
                sched.on_path_added(now, path).unwrap();
            }
            for (id, urgency, size) in sizes {
                let mut meta =
                    StreamMeta::new(StreamId(id)).with_urgency(Urgency::new(urgency).unwrap());
                meta.size = size;
                sched.on_stream_opened(now, &meta).unwrap();
                let bytes = size.unwrap_or(123_456);
                sched.on_data_queued(now, StreamId(id), bytes).unwrap();
                sched.on_stream_finished(now, StreamId(id)).unwrap();
            }
            sched
                .on_stream_opened(now, &StreamMeta::new(closing))
                .unwrap();
            sched.on_data_queued(now, closing, 500_000).unwrap();

            let mut granted: BTreeMap<StreamId, u64> = BTreeMap::new();
            for round in 0..10_000 {
                if round == 2 {
                    sched.on_stream_closed(now, closing);
                    assert_eq!(
                        sched.on_data_queued(now, closing, 1),
                        Err(SchedError::UnknownStream(closing)),
                        "{name}"
                    );
                }
                for path in &mut paths {
                    path.bytes_in_flight = 0;
                    sched.on_path_updated(now, path).unwrap();
                }
                for index in [2, 0, 1] {
                    while let Some(grant) =
                        sched.poll_send(now, paths[index].id, paths[index].room())
                    {
                        let path = &mut paths[index];
                        assert_ne!(path.status, PathStatus::Down, "{name}");
                        assert!(grant.bytes > 0 && grant.bytes <= path.room(), "{name}");
                        assert!(round < 2 || grant.stream != closing, "{name}");
                        *granted.entry(grant.stream).or_default() += grant.bytes;
                        path.bytes_in_flight += grant.bytes;
                        sched.on_path_updated(now, path).unwrap();
                    }
                }
                now += Duration::from_millis(10);
                let done = sizes.iter().all(|&(id, _, size)| {
                    granted.get(&StreamId(id)).copied() == Some(size.unwrap_or(123_456))
                });
                if done {
                    break;
                }
            }
            for (id, _, size) in sizes {
                let expected = size.unwrap_or(123_456);
                assert_eq!(granted.get(&StreamId(id)), Some(&expected), "{name} {id}");
            }
            assert!(
                granted.get(&closing).copied().unwrap_or(0) <= 500_000,
                "{name}"
            );
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        AddPath(u32, u64, f64, u64),
        UpdatePath(u32, u8, u64, u64, u64),
        RemovePath(u32),
        Open(u64, u8, Option<u64>),
        Update(u64, u8, Option<u64>),
        Queue(u64, u64),
        Finish(u64),
        Close(u64),
        Poll(u32, u64),
        Tick(u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        let bytes = prop_oneof![8 => 0u64..300_000, 1 => any::<u64>()];
        let size = prop::option::of(prop_oneof![8 => 0u64..1_000_000, 1 => any::<u64>()]);
        prop_oneof![
            1 => (0u32..4, 0u64..300, 1e-3f64..1e10, 0u64..200_000)
                .prop_map(|(id, rtt, bw, cwnd)| Op::AddPath(id, rtt, bw, cwnd)),
            1 => (0u32..4, 0u8..3, 0u64..300, 0u64..300, 0u64..200_000)
                .prop_map(|(id, st, rtt, min, fl)| Op::UpdatePath(id, st, rtt, min, fl)),
            1 => (0u32..4).prop_map(Op::RemovePath),
            1 => (0u64..6, 0u8..8, size.clone()).prop_map(|(id, u, s)| Op::Open(id, u, s)),
            1 => (0u64..6, 0u8..8, size).prop_map(|(id, u, s)| Op::Update(id, u, s)),
            3 => (0u64..6, bytes).prop_map(|(id, b)| Op::Queue(id, b)),
            1 => (0u64..6).prop_map(Op::Finish),
            1 => (0u64..6).prop_map(Op::Close),
            6 => (0u32..5, prop_oneof![0u64..100_000, any::<u64>()])
                .prop_map(|(id, room)| Op::Poll(id, room)),
            1 => (0u64..200).prop_map(Op::Tick),
        ]
    }

    /// Applies `op` to a scheduler and to a model of what it was told, checking every grant
    /// against the model.
    fn apply(
        sched: &mut dyn Scheduler,
        model: &mut Tables,
        now: &mut Instant,
        op: &Op,
    ) -> Result<(), TestCaseError> {
        let name = sched.name().to_owned();
        let meta = |id: u64, urgency: u8, size: Option<u64>| {
            let mut meta = StreamMeta::new(StreamId(id))
                .with_urgency(Urgency::new(urgency).unwrap_or_default());
            meta.size = size;
            meta
        };
        match *op {
            Op::AddPath(id, rtt, bw, cwnd) => {
                let path = snapshot(id, rtt, bw, cwnd);
                let expected = model.add_path(&path).is_ok();
                prop_assert_eq!(
                    sched.on_path_added(*now, &path).is_ok(),
                    expected,
                    "{}",
                    name
                );
            }
            Op::UpdatePath(id, status, rtt, min_rtt, in_flight) => {
                let Some(mut path) = model.paths.get(PathId(id)).copied() else {
                    let path = snapshot(id, rtt, 1e6, 0);
                    prop_assert!(sched.on_path_updated(*now, &path).is_err(), "{}", name);
                    return Ok(());
                };
                path.status = [PathStatus::Available, PathStatus::Backup, PathStatus::Down]
                    [usize::from(status)];
                path.srtt = Duration::from_millis(rtt);
                path.min_rtt = Duration::from_millis(min_rtt);
                path.bytes_in_flight = in_flight;
                model.update_path(&path).unwrap();
                prop_assert!(sched.on_path_updated(*now, &path).is_ok(), "{}", name);
            }
            Op::RemovePath(id) => {
                model.remove_path(PathId(id));
                sched.on_path_removed(*now, PathId(id));
            }
            Op::Open(id, urgency, size) => {
                let expected = model.open_stream(&meta(id, urgency, size)).is_ok();
                let got = sched
                    .on_stream_opened(*now, &meta(id, urgency, size))
                    .is_ok();
                prop_assert_eq!(got, expected, "{}", name);
            }
            Op::Update(id, urgency, size) => {
                let expected = model.update_stream(&meta(id, urgency, size)).is_ok();
                let got = sched
                    .on_stream_updated(*now, &meta(id, urgency, size))
                    .is_ok();
                prop_assert_eq!(got, expected, "{}", name);
            }
            Op::Queue(id, bytes) => {
                let expected = model.queue(StreamId(id), bytes).is_ok();
                let got = sched.on_data_queued(*now, StreamId(id), bytes).is_ok();
                prop_assert_eq!(got, expected, "{}", name);
            }
            Op::Finish(id) => {
                let expected = model.finish(StreamId(id)).is_ok();
                let got = sched.on_stream_finished(*now, StreamId(id)).is_ok();
                prop_assert_eq!(got, expected, "{}", name);
            }
            Op::Close(id) => {
                model.close(StreamId(id));
                sched.on_stream_closed(*now, StreamId(id));
            }
            Op::Poll(path, room) => {
                if let Some(grant) = sched.poll_send(*now, PathId(path), room) {
                    prop_assert!(grant.bytes > 0 && grant.bytes <= room, "{}", name);
                    prop_assert!(model.paths.is_usable(PathId(path)), "{}", name);
                    let queued = model.streams.get(grant.stream).map(|s| s.queued);
                    prop_assert!(queued.is_some_and(|q| grant.bytes <= q), "{}", name);
                    model.streams.take(grant.stream, grant.bytes);
                }
            }
            Op::Tick(ms) => *now += Duration::from_millis(ms),
        }
        let _ = sched.poll_timeout();
        Ok(())
    }

    proptest! {
        #[test]
        fn random_events_never_break_the_contract(ops in prop::collection::vec(op(), 0..120)) {
            for mut sched in baselines() {
                let mut model = Tables::default();
                let mut now = Instant::now();
                for op in &ops {
                    apply(sched.as_mut(), &mut model, &mut now, op)?;
                }
            }
        }
    }
}
