//! HTTP/2-style weighted round robin over streams, on mp-quic's lowest-RTT path rule.
//!
//! The stream scheduler the \[SEC\] paper measures against ("WRR + MIN-RTT") and the one
//! HTTP/2 servers use for sibling streams.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::baseline::{forward_events_to_tables, LowestRtt, Tables, PACKET_PAYLOAD};
use crate::{Grant, PathId, Scheduler, StreamId, StreamState, StreamTable};

/// Configuration of [`WeightedRoundRobin`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WrrConfig {
    quantum: u64,
}

impl WrrConfig {
    /// Most bytes one turn grants; 0 is taken as 1. Shares stay byte-accurate whatever the
    /// quantum, since each turn is charged by the bytes it actually took.
    ///
    /// # Default
    ///
    /// 1200 bytes, one packet payload.
    pub fn quantum(&mut self, bytes: u64) -> &mut Self {
        self.quantum = bytes.max(1);
        self
    }
}

impl Default for WrrConfig {
    fn default() -> Self {
        Self {
            quantum: PACKET_PAYLOAD,
        }
    }
}

/// Weighted round robin with weights [`Urgency::weight`](crate::Urgency::weight), in the form
/// nghttp2 uses for HTTP/2 (start-time fair queueing, "stride scheduling"): each stream carries
/// a virtual pass; the stream with queued bytes and the lowest pass sends next (ties to the
/// earlier opened), and a grant of `b` bytes advances its pass by `b * 256 / weight`. So while
/// streams stay backlogged their bytes follow their weights exactly, whatever the chunk sizes,
/// and a stream that was idle rejoins at the current virtual time instead of with saved credit.
///
/// Chosen over deficit round robin because a DRR quantum proportional to weight would hand
/// urgency-7 streams 150-byte grants (or make them wait rounds), and over smooth WRR because
/// that counts turns, not bytes. Paths follow the same rule as [`Lrf`](crate::Lrf): only the
/// usable path with the lowest SRTT among those with room gets data.
#[derive(Debug, Clone, Default)]
pub struct WeightedRoundRobin {
    config: WrrConfig,
    tables: Tables,
    turns: WeightedTurns,
}

impl WeightedRoundRobin {
    /// A WRR scheduler with `config`.
    pub fn new(config: WrrConfig) -> Self {
        Self {
            config,
            ..Self::default()
        }
    }
}

impl Scheduler for WeightedRoundRobin {
    fn name(&self) -> &str {
        "wrr"
    }

    forward_events_to_tables!();

    fn on_stream_closed(&mut self, _: Instant, stream: StreamId) {
        self.tables.close(stream);
        self.turns.forget(stream);
    }

    fn poll_send(&mut self, _: Instant, path: PathId, room: u64) -> Option<Grant> {
        let rule = LowestRtt::new(&self.tables.paths, path, room);
        if !rule.may_carry_any(&self.tables.streams) {
            return None;
        }
        let stream = self.turns.next(&self.tables.streams, |s| rule.carries(s))?;
        let grant = self
            .tables
            .grant(path, stream, room.min(self.config.quantum))?;
        self.turns.charge(&self.tables.streams, grant);
        Some(grant)
    }
}

/// The weighted turn-taking of [`WeightedRoundRobin`], shared with [`SaEcf`](crate::SaEcf)
/// which orders its streams the same way.
#[derive(Debug, Clone, Default)]
pub(crate) struct WeightedTurns {
    /// Virtual finish time of each stream's last grant; streams never served have none.
    passes: BTreeMap<StreamId, u128>,
    /// Virtual start time of the latest grant: where idle streams rejoin.
    now: u128,
}

impl WeightedTurns {
    /// The pass a stream would be served at: its own, or now if it fell behind while idle.
    fn start(&self, stream: &StreamState) -> u128 {
        self.passes
            .get(&stream.meta.id)
            .copied()
            .unwrap_or(0)
            .max(self.now)
    }

    /// The stream whose turn it is among those with queued bytes that are `eligible`.
    pub(crate) fn next(
        &self,
        streams: &StreamTable,
        eligible: impl Fn(&StreamState) -> bool,
    ) -> Option<StreamId> {
        streams
            .iter()
            .filter(|s| s.queued > 0 && eligible(s))
            .min_by_key(|s| (self.start(s), s.seq))
            .map(|s| s.meta.id)
    }

    /// Every stream with queued bytes that is `eligible`, in the order their turns come.
    pub(crate) fn order(
        &self,
        streams: &StreamTable,
        eligible: impl Fn(&StreamState) -> bool,
    ) -> Vec<StreamId> {
        let mut waiting: Vec<_> = streams
            .iter()
            .filter(|s| s.queued > 0 && eligible(s))
            .map(|s| (self.start(s), s.seq, s.meta.id))
            .collect();
        waiting.sort_unstable();
        waiting.into_iter().map(|(_, _, id)| id).collect()
    }

    /// Charges a grant to its stream's pass.
    pub(crate) fn charge(&mut self, streams: &StreamTable, grant: Grant) {
        let Some(stream) = streams.get(grant.stream) else {
            return;
        };
        let start = self.start(stream);
        let stride = u128::from(grant.bytes) * u128::from(MAX_WEIGHT)
            / u128::from(stream.meta.effective_urgency().weight().max(1));
        self.now = start;
        self.passes
            .insert(grant.stream, start.saturating_add(stride.max(1)));
    }

    /// Drops a closed stream's pass.
    pub(crate) fn forget(&mut self, stream: StreamId) {
        self.passes.remove(&stream);
    }
}

/// The weight of the most urgent level; strides are scaled by it so a byte of the most urgent
/// stream costs one unit of virtual time and every stride is a whole number.
const MAX_WEIGHT: u32 = 256;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{Bandwidth, PathSnapshot, StreamMeta, Urgency};

    fn path(id: u32, rtt_ms: u64) -> PathSnapshot {
        let rate = Bandwidth::from_bytes_per_sec(1e6).unwrap();
        PathSnapshot::new(PathId(id), Duration::from_millis(rtt_ms), rate, 100_000)
    }

    fn open(wrr: &mut WeightedRoundRobin, now: Instant, id: u64, urgency: u8, bytes: u64) {
        let meta = StreamMeta::new(StreamId(id)).with_urgency(Urgency::new(urgency).unwrap());
        wrr.on_stream_opened(now, &meta).unwrap();
        wrr.on_data_queued(now, StreamId(id), bytes).unwrap();
    }

    #[test]
    fn the_most_urgent_weight_is_the_stride_scale() {
        assert_eq!(Urgency::HIGHEST.weight(), MAX_WEIGHT);
    }

    #[test]
    fn backlogged_streams_share_bytes_by_weight() {
        let now = Instant::now();
        let mut wrr = WeightedRoundRobin::default();
        wrr.on_path_added(now, &path(0, 10)).unwrap();
        open(&mut wrr, now, 0, 0, 1 << 30); // weight 256
        open(&mut wrr, now, 1, 3, 1 << 30); // weight 32
        open(&mut wrr, now, 2, 7, 1 << 30); // weight 2
        let mut sent = [0u64; 3];
        for _ in 0..2900 {
            let grant = wrr.poll_send(now, PathId(0), 1000).unwrap();
            sent[grant.stream.0 as usize] += grant.bytes;
        }
        // 2900 turns of 1000 bytes split 256:32:2.
        assert_eq!(sent, [2_560_000, 320_000, 20_000]);
    }

    #[test]
    fn an_idle_stream_rejoins_without_saved_credit() {
        let now = Instant::now();
        let mut wrr = WeightedRoundRobin::default();
        wrr.on_path_added(now, &path(0, 10)).unwrap();
        open(&mut wrr, now, 0, 3, 1 << 30);
        open(&mut wrr, now, 1, 3, 0);
        for _ in 0..100 {
            assert_eq!(
                wrr.poll_send(now, PathId(0), 1200).unwrap().stream,
                StreamId(0)
            );
        }
        wrr.on_data_queued(now, StreamId(1), 1 << 30).unwrap();
        let next: Vec<_> = (0..6)
            .map(|_| wrr.poll_send(now, PathId(0), 1200).unwrap().stream.0)
            .collect();
        assert_eq!(next, [1, 0, 1, 0, 1, 0]);
    }

    #[test]
    fn only_the_lowest_rtt_path_with_room_gets_data() {
        let now = Instant::now();
        let mut wrr = WeightedRoundRobin::default();
        wrr.on_path_added(now, &path(0, 80)).unwrap();
        wrr.on_path_added(now, &path(1, 20)).unwrap();
        open(&mut wrr, now, 0, 3, 10_000);
        assert_eq!(wrr.poll_send(now, PathId(0), 5000), None);
        assert!(wrr.poll_send(now, PathId(1), 5000).is_some());
    }
}
