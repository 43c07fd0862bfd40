//! Plain round robin: every stream with data in turn, one chunk each, on whichever path asks.
//!
//! The reference point with no knowledge of paths or priorities at all; every other scheduler
//! should beat it somewhere.

use std::time::Instant;

use crate::baseline::{forward_events_to_tables, RoundRobinCursor, Tables, PACKET_PAYLOAD};
use crate::{Grant, PathId, Scheduler, StreamId};

/// Configuration of [`RoundRobin`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundRobinConfig {
    quantum: u64,
}

impl RoundRobinConfig {
    /// Bytes a stream may send per turn before the next stream's turn; 0 is taken as 1.
    ///
    /// # Default
    ///
    /// 1200 bytes, one packet payload, so streams interleave packet by packet.
    pub fn quantum(&mut self, bytes: u64) -> &mut Self {
        self.quantum = bytes.max(1);
        self
    }
}

impl Default for RoundRobinConfig {
    fn default() -> Self {
        Self {
            quantum: PACKET_PAYLOAD,
        }
    }
}

/// Plain round robin over streams with queued bytes (in stream-id order), each turn a chunk of
/// `min(room, queued, quantum)` on any usable path that has room.
#[derive(Debug, Clone, Default)]
pub struct RoundRobin {
    config: RoundRobinConfig,
    tables: Tables,
    cursor: RoundRobinCursor,
}

impl RoundRobin {
    /// A round-robin scheduler with `config`.
    pub fn new(config: RoundRobinConfig) -> Self {
        Self {
            config,
            ..Self::default()
        }
    }
}

impl Scheduler for RoundRobin {
    fn name(&self) -> &str {
        "round-robin"
    }

    forward_events_to_tables!();

    fn on_stream_closed(&mut self, _: Instant, stream: StreamId) {
        self.tables.close(stream);
    }

    fn poll_send(&mut self, _: Instant, path: PathId, room: u64) -> Option<Grant> {
        if !self.tables.may_send(path, room) {
            return None;
        }
        let stream = self
            .cursor
            .next(&self.tables.streams, |s| s.meta.allows(path))?;
        self.cursor.served(stream);
        self.tables
            .grant(path, stream, room.min(self.config.quantum))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{Bandwidth, PathSnapshot, StreamMeta};

    fn path(id: u32) -> PathSnapshot {
        let rate = Bandwidth::from_bytes_per_sec(1e6).unwrap();
        PathSnapshot::new(PathId(id), Duration::from_millis(20), rate, 100_000)
    }

    #[test]
    fn streams_take_turns_one_quantum_each() {
        let now = Instant::now();
        let mut rr = RoundRobin::default();
        rr.on_path_added(now, &path(0)).unwrap();
        for id in [3, 1, 2] {
            rr.on_stream_opened(now, &StreamMeta::new(StreamId(id)))
                .unwrap();
            rr.on_data_queued(now, StreamId(id), 2500).unwrap();
        }
        let order: Vec<_> = std::iter::from_fn(|| rr.poll_send(now, PathId(0), 10_000))
            .map(|g| (g.stream.0, g.bytes))
            .collect();
        assert_eq!(
            order,
            [
                (1, 1200),
                (2, 1200),
                (3, 1200),
                (1, 1200),
                (2, 1200),
                (3, 1200),
                (1, 100),
                (2, 100),
                (3, 100)
            ]
        );
    }

    #[test]
    fn quantum_is_a_knob_and_room_caps_it() {
        let now = Instant::now();
        let mut rr = RoundRobin::new(*RoundRobinConfig::default().quantum(5000));
        rr.on_path_added(now, &path(0)).unwrap();
        rr.on_stream_opened(now, &StreamMeta::new(StreamId(0)))
            .unwrap();
        rr.on_data_queued(now, StreamId(0), 9000).unwrap();
        assert_eq!(rr.poll_send(now, PathId(0), 700).unwrap().bytes, 700);
        assert_eq!(rr.poll_send(now, PathId(0), 70_000).unwrap().bytes, 5000);
        assert_eq!(rr.poll_send(now, PathId(0), 0), None);
        assert_eq!(rr.poll_send(now, PathId(9), 1000), None);
    }
}
