//! Lowest RTT first, the default scheduler of mp-quic (De Coninck and Bonaventure, "Multipath
//! QUIC: Design and Evaluation", CoNEXT 2017): streams take turns, and each chunk goes to the
//! path with the lowest smoothed RTT that has congestion-window room.
//!
//! The baseline every result is measured against ("reduction against LRF").

use std::time::Instant;

use crate::baseline::{
    forward_events_to_tables, LowestRtt, RoundRobinCursor, Tables, PACKET_PAYLOAD,
};
use crate::{Grant, PathId, Scheduler, StreamId};

/// Configuration of [`Lrf`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LrfConfig {
    quantum: u64,
}

impl LrfConfig {
    /// Bytes a stream may send per turn before the next stream's turn; 0 is taken as 1.
    ///
    /// # Default
    ///
    /// 1200 bytes, one packet payload: mp-quic's stream framer fills each packet from the
    /// streams in turn.
    pub fn quantum(&mut self, bytes: u64) -> &mut Self {
        self.quantum = bytes.max(1);
        self
    }
}

impl Default for LrfConfig {
    fn default() -> Self {
        Self {
            quantum: PACKET_PAYLOAD,
        }
    }
}

/// Lowest RTT first: round robin over streams with queued bytes, a chunk of
/// `min(room, queued, quantum)` per turn, granted only to the usable path with the lowest SRTT
/// among those with room (the asked path counts as having `room`; ties all qualify). A slower
/// path asked while a faster one has room gets `None`: the transport will ask the faster one.
#[derive(Debug, Clone, Default)]
pub struct Lrf {
    config: LrfConfig,
    tables: Tables,
    cursor: RoundRobinCursor,
}

impl Lrf {
    /// An LRF scheduler with `config`.
    pub fn new(config: LrfConfig) -> Self {
        Self {
            config,
            ..Self::default()
        }
    }
}

impl Scheduler for Lrf {
    fn name(&self) -> &str {
        "lrf"
    }

    forward_events_to_tables!();

    fn on_stream_closed(&mut self, _: Instant, stream: StreamId) {
        self.tables.close(stream);
    }

    fn poll_send(&mut self, _: Instant, path: PathId, room: u64) -> Option<Grant> {
        let rule = LowestRtt::new(&self.tables.paths, path, room);
        if !rule.may_carry_any(&self.tables.streams) {
            return None;
        }
        let stream = self
            .cursor
            .next(&self.tables.streams, |s| rule.carries(s))?;
        self.cursor.served(stream);
        self.tables
            .grant(path, stream, room.min(self.config.quantum))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{Bandwidth, PathSnapshot, PathStatus, StreamMeta};

    fn path(id: u32, rtt_ms: u64, cwnd: u64) -> PathSnapshot {
        let rate = Bandwidth::from_bytes_per_sec(1e6).unwrap();
        PathSnapshot::new(PathId(id), Duration::from_millis(rtt_ms), rate, cwnd)
    }

    fn lrf_with_one_stream(now: Instant) -> Lrf {
        let mut lrf = Lrf::default();
        lrf.on_path_added(now, &path(0, 50, 10_000)).unwrap();
        lrf.on_path_added(now, &path(1, 10, 10_000)).unwrap();
        lrf.on_stream_opened(now, &StreamMeta::new(StreamId(0)))
            .unwrap();
        lrf.on_data_queued(now, StreamId(0), 100_000).unwrap();
        lrf
    }

    #[test]
    fn slow_path_waits_while_the_fast_path_has_room() {
        let now = Instant::now();
        let mut lrf = lrf_with_one_stream(now);
        assert_eq!(lrf.poll_send(now, PathId(0), 5000), None);
        assert_eq!(lrf.poll_send(now, PathId(1), 5000).unwrap().bytes, 1200);
    }

    #[test]
    fn slow_path_sends_once_the_fast_path_is_full_or_down() {
        let now = Instant::now();
        let mut lrf = lrf_with_one_stream(now);
        let mut fast = path(1, 10, 10_000);
        fast.bytes_in_flight = 10_000;
        lrf.on_path_updated(now, &fast).unwrap();
        assert!(lrf.poll_send(now, PathId(0), 5000).is_some());

        fast.bytes_in_flight = 0;
        fast.status = PathStatus::Down;
        lrf.on_path_updated(now, &fast).unwrap();
        assert!(lrf.poll_send(now, PathId(0), 5000).is_some());
        assert_eq!(lrf.poll_send(now, PathId(1), 5000), None);
    }

    #[test]
    fn equal_paths_are_both_used() {
        let now = Instant::now();
        let mut lrf = Lrf::default();
        lrf.on_path_added(now, &path(0, 20, 10_000)).unwrap();
        lrf.on_path_added(now, &path(1, 20, 10_000)).unwrap();
        lrf.on_stream_opened(now, &StreamMeta::new(StreamId(0)))
            .unwrap();
        lrf.on_data_queued(now, StreamId(0), 100_000).unwrap();
        assert!(lrf.poll_send(now, PathId(0), 5000).is_some());
        assert!(lrf.poll_send(now, PathId(1), 5000).is_some());
    }

    /// The fast path's snapshot still shows the room its grants have taken until its next
    /// ack: the slow path must not wait for that room (on two near-equal paths, it halved the
    /// goodput of a bulk transfer).
    #[test]
    fn room_the_fast_path_has_granted_away_does_not_hold_the_slow_path() {
        let now = Instant::now();
        let mut lrf = lrf_with_one_stream(now);
        let mut granted = 0;
        while let Some(grant) = lrf.poll_send(now, PathId(1), 10_000 - granted) {
            granted += grant.bytes;
        }
        assert!(
            granted > 10_000 - 1200,
            "the fast path took its room: {granted}"
        );
        assert!(lrf.poll_send(now, PathId(0), 5000).is_some());
    }
}
