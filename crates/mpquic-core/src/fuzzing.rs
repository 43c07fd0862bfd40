//! Entry points for the fuzz targets in `fuzz/`, compiled only under `--cfg fuzzing` (which
//! cargo fuzz sets): the crate's private receive structures, thinly wrapped.

use std::sync::Arc;
use std::task::Waker;
use std::time::Instant;

use bytes::Bytes;
use mpquic_sched::PathId;

use crate::error::ProtocolError;
use crate::state::{Side, State};
use crate::wire::Frame;
use crate::Config;

/// One stream's reassembly buffer.
#[derive(Debug, Default)]
pub struct Reassembler(crate::reassembly::Reassembler);

impl Reassembler {
    /// Inserts `data` at `offset` below `limit`; `false` if it was refused.
    pub fn insert(&mut self, offset: u64, data: Bytes, limit: u64) -> bool {
        self.0.insert(offset, data, limit).is_ok()
    }

    /// The next in-order bytes, at most `max`.
    pub fn read(&mut self, max: usize) -> Option<Bytes> {
        self.0.read(max)
    }

    /// Bytes read so far.
    pub fn read_offset(&self) -> u64 {
        self.0.read_offset()
    }

    /// What the buffered bytes cost in memory.
    pub fn footprint(&self) -> u64 {
        self.0.footprint()
    }
}

/// A server's multipath state, fed as if a peer had sent it chunks and frames on path 0.
#[derive(Debug)]
pub struct Receiver(State);

impl Receiver {
    /// A server with the given stream and connection windows.
    pub fn new(stream_window: u64, window: u64) -> Self {
        let mut config = Config::default();
        config
            .stream_receive_window(stream_window)
            .and_then(|c| c.receive_window(window))
            .expect("the fuzz target's windows are valid");
        let params = State::params(&config);
        Self(State::new(
            Side::Server,
            Arc::new(config),
            params,
            params,
            Instant::now(),
        ))
    }

    /// A chunk of stream `id` arrived.
    pub fn chunk(&mut self, id: u64, offset: u64, data: Bytes) -> Result<(), ProtocolError> {
        self.0.on_chunk(PathId(0), id, offset, data, Instant::now())
    }

    /// A control frame arrived.
    pub fn frame(&mut self, frame: Frame) -> Result<(), ProtocolError> {
        self.0.on_frame(PathId(0), frame, Instant::now())
    }

    /// The application reads stream `id`.
    pub fn read(&mut self, id: u64, max: usize) {
        let _ = self.0.read(id, max, Waker::noop());
    }

    /// The application stops stream `id`.
    pub fn stop(&mut self, id: u64, code: u64) {
        let _ = self.0.stop(id, code);
    }

    /// The application accepts the next stream of a kind.
    pub fn accept(&mut self, uni: bool) -> Option<u64> {
        self.0.accept(uni)
    }

    /// The control frames due now go out.
    pub fn flush(&mut self) -> Vec<Frame> {
        self.0
            .drain_control(Instant::now())
            .into_iter()
            .map(|(_, frame)| frame)
            .collect()
    }
}
