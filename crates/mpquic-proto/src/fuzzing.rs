//! Entry points for the fuzz targets in `fuzz/`, compiled only under `--cfg fuzzing` (which
//! cargo fuzz sets): crate-private types, thinly wrapped. Nothing here is API; the wrappers
//! follow the private signatures and change with them.

use std::time::Instant;

use bytes::Bytes;
use mpquic_sched::{Grant, PathId, SchedulerKind, StreamId, Urgency};

use crate::error::{ConnectionError, ProtocolError, ReadError, WriteError};
use crate::send::Expected;
use crate::wire::{Frame, Params};
use crate::{Connection, Side, TransportConfig};

/// Heap bytes one buffered range costs besides its data (see [`Reassembler::footprint`]).
pub const RANGE_OVERHEAD: u64 = crate::reassembly::RANGE_OVERHEAD;

/// One stream's reassembly buffer.
#[derive(Debug, Default)]
pub struct Reassembler(crate::reassembly::Reassembler);

impl Reassembler {
    /// An empty stream.
    pub fn new() -> Self {
        Self(crate::reassembly::Reassembler::new())
    }

    /// Inserts `data` at `offset` below `limit`; the error says why it was refused.
    pub fn insert(&mut self, offset: u64, data: Bytes, limit: u64) -> Result<(), String> {
        self.0
            .insert(offset, data, limit)
            .map_err(|e| e.to_string())
    }

    /// The next in-order bytes, at most `max`.
    pub fn read(&mut self, max: usize) -> Option<Bytes> {
        self.0.read(max)
    }

    /// Bytes read so far.
    pub fn read_offset(&self) -> u64 {
        self.0.read_offset()
    }

    /// The end of the in-order prefix received.
    pub fn contiguous_end(&self) -> u64 {
        self.0.contiguous_end()
    }

    /// What the buffered bytes cost in memory: at most twice the bytes plus
    /// [`RANGE_OVERHEAD`] per range.
    pub fn footprint(&self) -> u64 {
        self.0.footprint()
    }
}

/// A connection's multipath state without paths: the peer's chunks and frames go in as if
/// they had arrived on a path, the application's calls as if made on its streams, and the
/// control frames due come out. Local and peer parameters are both `params`.
#[derive(Debug)]
pub struct StateDriver(Connection);

impl StateDriver {
    /// A fresh connection of `side` (the peer is the other side).
    pub fn new(side: Side, config: TransportConfig, params: Params, now: Instant) -> Self {
        let scheduler = SchedulerKind::PriorityBucket.build();
        Self(Connection::new(
            side, config, scheduler, params, params, now,
        ))
    }

    /// A chunk of stream `id` arrived on `path`.
    pub fn on_chunk(
        &mut self,
        path: u32,
        id: u64,
        offset: u64,
        data: Bytes,
        now: Instant,
    ) -> Result<(), ProtocolError> {
        self.0.on_chunk(PathId(path), id, offset, data, now)
    }

    /// A control frame arrived on `path`.
    pub fn on_frame(&mut self, path: u32, frame: Frame, now: Instant) -> Result<(), ProtocolError> {
        self.0.on_frame(PathId(path), frame, now)
    }

    /// Ends the connection for a protocol error, as the connection does when `on_chunk` or
    /// `on_frame` fails.
    pub fn fail(&mut self, error: ProtocolError) {
        self.0.fail(ConnectionError::Protocol(error));
    }

    /// The application reads stream `id` (`None`: it would wait).
    pub fn read(&mut self, id: u64, max: usize) -> Option<Result<Option<Bytes>, ReadError>> {
        self.0.read(id, max)
    }

    /// The application stops reading stream `id`.
    pub fn stop(&mut self, id: u64, code: u64) -> Result<(), ReadError> {
        self.0.stop(id, code)
    }

    /// The application opens a stream.
    pub fn open(&mut self, uni: bool, now: Instant) -> Option<u64> {
        self.0.open(uni, now)
    }

    /// The application writes to stream `id`; `Ok(0)`: the send buffer is full.
    pub fn write(&mut self, id: u64, data: &[u8], now: Instant) -> Result<usize, WriteError> {
        self.0.write(id, data, now)
    }

    /// The application finishes stream `id`.
    pub fn finish(&mut self, id: u64, now: Instant) -> Result<(), WriteError> {
        self.0.finish(id, now)
    }

    /// The application resets stream `id`.
    pub fn reset(&mut self, id: u64, code: u64, now: Instant) -> Result<(), WriteError> {
        self.0.reset(id, code, now)
    }

    /// The application accepts the next stream of a kind the peer opened.
    pub fn accept(&mut self, uni: bool) -> Option<u64> {
        self.0.accept(uni)
    }

    /// A path's sender takes a grant of `bytes` of stream `id` (as if the scheduler gave it):
    /// the bytes it would send, so that the peer's data acks have something to acknowledge.
    pub fn grant(&mut self, path: u32, id: u64, bytes: u64, now: Instant) -> Option<u64> {
        let expected = Expected {
            sent: now,
            leaves: now,
            lands: now,
            overdue: now,
        };
        let grant = Grant {
            stream: StreamId(id),
            bytes,
            urgency: Urgency::DEFAULT,
            first_in_bucket: false,
        };
        let work = self.0.take_grant(PathId(path), grant, expected)?;
        Some(work.bytes())
    }

    /// The control frames due at `now`, with the path each must take.
    pub fn drain_control(&mut self, now: Instant) -> Vec<(Option<PathId>, Frame)> {
        self.0.poll_control(now)
    }
}
