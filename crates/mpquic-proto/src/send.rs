//! The sending half of a stream: the application's bytes until the receiver acknowledges
//! them, what was granted on which path, and what must go again after a path failed.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use mpquic_sched::{PathId, StreamId, StreamMeta, Urgency};

use crate::send_buffer::{RangeSet, SendBuffer};

/// How many transport streams a stream remembers (see `SendState::transport_streams`): one per
/// path it went on, more only if it was re-sent on a path after its transport stream there
/// was finished, which older reports do not name.
const TRANSPORT_STREAMS_KEPT: usize = 8;

/// Bytes a stream sent on each path (shared with the driver's stream handle, so they outlive
/// the stream's state).
#[derive(Debug, Default)]
pub struct StreamCounters {
    per_path: Mutex<BTreeMap<PathId, u64>>,
    pub(crate) resent: AtomicU64,
    pub(crate) reinjected: AtomicU64,
    /// The peer's stop-sending code, kept here because the stream's state may be gone by the
    /// time the application writes again.
    pub(crate) stopped: Mutex<Option<u64>>,
}

impl StreamCounters {
    pub(crate) fn add(&self, path: PathId, bytes: u64) {
        let mut map = self.per_path.lock().unwrap_or_else(|e| e.into_inner());
        *map.entry(path).or_default() += bytes;
    }

    /// Bytes sent on each path, re-sends included.
    pub fn per_path(&self) -> BTreeMap<PathId, u64> {
        self.per_path
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Bytes sent again after their path failed.
    pub fn resent(&self) -> u64 {
        self.resent.load(Ordering::Relaxed)
    }

    /// Bytes sent again on another path while their first copy was in flight (re-injection).
    pub fn reinjected(&self) -> u64 {
        self.reinjected.load(Ordering::Relaxed)
    }

    /// The code the peer stopped the stream with, if it did.
    pub fn stopped(&self) -> Option<u64> {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Bytes of a stream granted to a path and not yet acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flight {
    /// The end of the bytes (the start is the key they are kept under).
    pub(crate) end: u64,
    pub(crate) path: PathId,
    pub(crate) expected: Expected,
}

/// What the sender expects of bytes it sends on a path, estimated as they go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Expected {
    /// When they were handed to the path.
    pub(crate) sent: Instant,
    /// When their last byte leaves, behind what the path held.
    pub(crate) leaves: Instant,
    /// When they land.
    pub(crate) lands: Instant,
    /// When their ack is overdue: the path's probe timeout after they were sent.
    pub(crate) overdue: Instant,
}

#[derive(Debug)]
pub(crate) struct SendState {
    pub(crate) buf: SendBuffer,
    /// Everything below is acknowledged by the receiver.
    pub(crate) acked: u64,
    /// The first byte never granted.
    pub(crate) next_fresh: u64,
    /// Bytes handed to the scheduler (within flow control); `next_fresh <= released`.
    pub(crate) released: u64,
    pub(crate) resend: RangeSet,
    /// Bytes to re-inject on `reinject_to` ahead of any grant (see `crate::reinjection`).
    pub(crate) reinject: RangeSet,
    pub(crate) reinject_to: Option<PathId>,
    /// Granted and not yet acknowledged, by start offset.
    pub(crate) in_flight: BTreeMap<u64, Flight>,
    /// The transport streams the driver opened for this stream's chunks, by path, the latest
    /// [`TRANSPORT_STREAMS_KEPT`]: a receiver's [`Frame::Missing`] names one.
    ///
    /// [`Frame::Missing`]: crate::wire::Frame::Missing
    pub(crate) transport_streams: VecDeque<(PathId, u64)>,
    pub(crate) max_stream_data: u64,
    pub(crate) fin: Option<u64>,
    pub(crate) reset: Option<u64>,
    pub(crate) stopped: Option<u64>,
    pub(crate) meta: StreamMeta,
    pub(crate) arrival: u32,
    /// The application waits for room in the send buffer.
    pub(crate) writer_waiting: bool,
    pub(crate) counters: Arc<StreamCounters>,
}

impl SendState {
    pub(crate) fn new(id: u64, max_stream_data: u64, arrival: u32) -> Self {
        Self {
            buf: SendBuffer::default(),
            acked: 0,
            next_fresh: 0,
            released: 0,
            resend: RangeSet::default(),
            reinject: RangeSet::default(),
            reinject_to: None,
            in_flight: BTreeMap::new(),
            transport_streams: VecDeque::new(),
            max_stream_data,
            fin: None,
            reset: None,
            stopped: None,
            meta: StreamMeta::new(StreamId(id)),
            arrival,
            writer_waiting: false,
            counters: Arc::default(),
        }
    }

    /// The driver opened `transport_stream` on `path` for this stream's chunks.
    pub(crate) fn opened_transport_stream(&mut self, path: PathId, transport_stream: u64) {
        if self.transport_streams.len() == TRANSPORT_STREAMS_KEPT {
            self.transport_streams.pop_front();
        }
        self.transport_streams.push_back((path, transport_stream));
    }

    /// Nothing is left to grant: the per-path quinn streams can be finished.
    pub(crate) fn all_granted(&self) -> bool {
        self.fin == Some(self.next_fresh) && self.resend.is_empty() && self.reinject.is_empty()
    }

    /// Takes the bytes of `path`'s copy in flight out of `in_flight`, oldest first, at most
    /// `max`: they are to go again elsewhere.
    pub(crate) fn take_in_flight(&mut self, path: PathId, max: u64) -> Vec<Range<u64>> {
        self.take_in_flight_where(max, |flight| flight.path == path)
            .into_iter()
            .map(|(range, _)| range)
            .collect()
    }

    /// Takes the bytes in flight that `chosen` picks out of `in_flight`, lowest offsets first,
    /// at most `max`, each with the flight it was part of.
    pub(crate) fn take_in_flight_where(
        &mut self,
        max: u64,
        chosen: impl Fn(&Flight) -> bool,
    ) -> Vec<(Range<u64>, Flight)> {
        let mut taken = Vec::new();
        let mut left = max;
        let starts: Vec<u64> = self
            .in_flight
            .iter()
            .filter(|(_, flight)| chosen(flight))
            .map(|(start, _)| *start)
            .collect();
        for start in starts {
            if left == 0 {
                break;
            }
            let Some(flight) = self.in_flight.remove(&start) else {
                continue;
            };
            let start = start.max(self.acked);
            if start >= flight.end {
                continue;
            }
            let cut = flight.end.min(start.saturating_add(left));
            if cut < flight.end {
                self.in_flight.insert(cut, flight);
            }
            left -= cut - start;
            taken.push((start..cut, flight));
        }
        taken
    }

    /// The bytes in flight, not yet acknowledged, of the flights `chosen` picks.
    pub(crate) fn unacked_where(&self, chosen: impl Fn(&Flight) -> bool) -> u64 {
        self.in_flight
            .iter()
            .filter(|(_, flight)| chosen(flight))
            .map(|(start, flight)| flight.end.saturating_sub((*start).max(self.acked)))
            .sum()
    }

    /// Whether every byte of the stream is granted and expected to land by `at`.
    pub(crate) fn lands_by(&self, at: Instant) -> bool {
        self.all_granted() && self.in_flight.values().all(|f| f.expected.lands <= at)
    }

    /// When the flight on `path` that was on the wire at `at` (handed over before, its last
    /// byte leaving after) was handed over; `None` if none was.
    pub(crate) fn on_the_wire(&self, path: PathId, at: Instant) -> Option<Instant> {
        self.in_flight
            .values()
            .find(|f| f.path == path && f.expected.sent <= at && at <= f.expected.leaves)
            .map(|f| f.expected.sent)
    }

    /// The flights `chosen` picks, if they hold at most `max` unacknowledged bytes; none
    /// otherwise (part of them would not end the stream sooner).
    pub(crate) fn take_all_where(
        &mut self,
        max: u64,
        chosen: impl Fn(&Flight) -> bool,
    ) -> Vec<(Range<u64>, Flight)> {
        if self.unacked_where(&chosen) > max {
            return Vec::new();
        }
        self.take_in_flight_where(max, chosen)
    }

    /// Records `ranges` as sent on `path` and slices them into the chunks to write at
    /// `urgency`, first in that bucket when the grant says so ([`Grant::first_in_bucket`]),
    /// skipping bytes already acknowledged; returns them with the bytes they hold.
    ///
    /// [`Grant::first_in_bucket`]: mpquic_sched::Grant::first_in_bucket
    pub(crate) fn send_ranges(
        &mut self,
        path: PathId,
        ranges: Vec<Range<u64>>,
        expected: Expected,
        urgency: Urgency,
        first_in_bucket: bool,
    ) -> (ChunkWork, u64) {
        let mut pieces = Vec::with_capacity(ranges.len());
        let mut sent = 0;
        for range in ranges {
            let start = range.start.max(self.acked);
            if start >= range.end {
                continue;
            }
            self.in_flight.insert(
                start,
                Flight {
                    end: range.end,
                    path,
                    expected,
                },
            );
            sent += range.end - start;
            pieces.push((start, self.buf.slice(start..range.end)));
        }
        self.counters.add(path, sent);
        let work = ChunkWork {
            stream: self.meta.id.0,
            priority: self.quinn_priority(urgency, first_in_bucket),
            pieces,
            all_granted: self.all_granted(),
        };
        (work, sent)
    }

    /// Whether the application waited to write (and no longer does): it must be woken.
    pub(crate) fn wake(&mut self) -> bool {
        std::mem::take(&mut self.writer_waiting)
    }

    /// The priority of this stream's per-path transport streams when sent at `urgency`
    /// (quinn's scale, higher first): the urgency first, then streams the scheduler put first
    /// in that bucket, then arrival order (earlier first) unless incremental, where quinn's
    /// fairness round-robins.
    fn quinn_priority(&self, urgency: Urgency, first_in_bucket: bool) -> i32 {
        let bucket = i32::from(Urgency::LOWEST.get() - urgency.get());
        let rank = (bucket << 1) | i32::from(first_in_bucket);
        if self.meta.incremental {
            rank << 20
        } else {
            (rank << 20) | (0xFFFFF - (self.arrival & 0xFFFFF) as i32)
        }
    }
}

/// The chunks one grant turned into: what a path's sender writes on the stream's chunk
/// stream of that path.
#[derive(Debug)]
pub struct ChunkWork {
    /// The logical stream.
    pub stream: u64,
    /// The priority of its transport stream on the path (higher first).
    pub priority: i32,
    /// Chunks as (offset, bytes in pieces), each written as one chunk.
    pub pieces: Vec<(u64, Vec<Bytes>)>,
    /// No more bytes of this stream will be granted unless a path fails: its chunk stream on
    /// the path can be finished.
    pub all_granted: bool,
}

impl ChunkWork {
    /// The stream bytes this work carries.
    pub fn bytes(&self) -> u64 {
        self.pieces
            .iter()
            .flat_map(|(_, parts)| parts)
            .map(|part| part.len() as u64)
            .sum()
    }

    /// Appends a later grant of the same stream, joining byte-contiguous pieces.
    pub(crate) fn merge(&mut self, later: ChunkWork) {
        for (offset, parts) in later.pieces {
            match self.pieces.last_mut() {
                Some((start, prev))
                    if *start + prev.iter().map(|p| p.len() as u64).sum::<u64>() == offset =>
                {
                    prev.extend(parts)
                }
                _ => self.pieces.push((offset, parts)),
            }
        }
        self.priority = later.priority;
        self.all_granted = later.all_granted;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// quinn sends a path's unsent bytes by bucket, then first-in-bucket grants, then arrival:
    /// a later stream put first in its bucket passes the bucket's earlier ones, not a more
    /// urgent bucket.
    #[test]
    fn a_grant_first_in_its_bucket_passes_the_buckets_earlier_streams_only() {
        let earlier = SendState::new(0, 1 << 20, 0);
        let later = SendState::new(4, 1 << 20, 1);
        let urgent = Urgency::HIGHEST;
        let below = Urgency::new(1).expect("a valid urgency");
        assert!(earlier.quinn_priority(urgent, false) > later.quinn_priority(urgent, false));
        assert!(later.quinn_priority(urgent, true) > earlier.quinn_priority(urgent, false));
        assert!(earlier.quinn_priority(urgent, false) > later.quinn_priority(below, true));
    }
}
