//! STUB: replaced by its implementation.

use std::time::Instant;

use crate::{Grant, PathId, PathSnapshot, SchedError, Scheduler, StreamId, StreamMeta};

/// STUB.
#[derive(Debug, Default)]
pub struct StreamEarliestCompletion;

impl Scheduler for StreamEarliestCompletion {
    fn name(&self) -> &str {
        "sec"
    }
    fn on_path_added(&mut self, _: Instant, _: &PathSnapshot) -> Result<(), SchedError> {
        unimplemented!()
    }
    fn on_path_updated(&mut self, _: Instant, _: &PathSnapshot) -> Result<(), SchedError> {
        unimplemented!()
    }
    fn on_path_removed(&mut self, _: Instant, _: PathId) {}
    fn on_stream_opened(&mut self, _: Instant, _: &StreamMeta) -> Result<(), SchedError> {
        unimplemented!()
    }
    fn on_stream_updated(&mut self, _: Instant, _: &StreamMeta) -> Result<(), SchedError> {
        unimplemented!()
    }
    fn on_data_queued(&mut self, _: Instant, _: StreamId, _: u64) -> Result<(), SchedError> {
        unimplemented!()
    }
    fn on_stream_finished(&mut self, _: Instant, _: StreamId) -> Result<(), SchedError> {
        unimplemented!()
    }
    fn on_stream_closed(&mut self, _: Instant, _: StreamId) {}
    fn poll_send(&mut self, _: Instant, _: PathId, _: u64) -> Option<Grant> {
        unimplemented!()
    }
}
