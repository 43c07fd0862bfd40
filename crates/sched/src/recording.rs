//! A scheduler wrapper that records what the transport told it about streams and what it
//! granted, in order: to check on real transport that priorities and sizes reach the scheduler
//! before the first byte, or to trace a scheduler's decisions.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::{
    Grant, PathId, PathSnapshot, Reinjection, SchedError, Scheduler, StreamId, StreamMeta, Urgency,
};

/// One recorded event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// A stream opened, or its urgency, incremental flag or size hint changed.
    Meta(StreamMeta),
    /// The wrapped scheduler granted bytes of a stream on a path.
    Grant {
        /// The path asked.
        path: PathId,
        /// The grant.
        grant: Grant,
    },
}

/// The shared log of a [`Recording`]: the first `capacity` events, and how many came after.
#[derive(Debug)]
pub struct RecordLog {
    events: Vec<Recorded>,
    capacity: usize,
    dropped: u64,
}

impl RecordLog {
    /// A log keeping at most `capacity` events, so a long connection's memory stays bounded.
    pub fn new(capacity: usize) -> Arc<Mutex<Self>> {
        Arc::new(Mutex::new(Self {
            events: Vec::new(),
            capacity,
            dropped: 0,
        }))
    }

    /// The events kept, oldest first.
    pub fn events(&self) -> &[Recorded] {
        &self.events
    }

    /// Events that came after the log was full.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    fn push(&mut self, event: Recorded) {
        if self.events.len() < self.capacity {
            self.events.push(event);
        } else {
            self.dropped = self.dropped.saturating_add(1);
        }
    }
}

/// Forwards every call to `inner` and records stream metadata and grants in a [`RecordLog`].
#[derive(Debug)]
pub struct Recording {
    inner: Box<dyn Scheduler>,
    log: Arc<Mutex<RecordLog>>,
}

impl Recording {
    /// Wraps `inner`, recording into `log`.
    pub fn new(inner: Box<dyn Scheduler>, log: Arc<Mutex<RecordLog>>) -> Self {
        Self { inner, log }
    }

    fn record(&self, event: Recorded) {
        // A panic elsewhere while holding the lock leaves a consistent log behind.
        self.log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event);
    }
}

impl Scheduler for Recording {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn on_path_added(&mut self, now: Instant, path: &PathSnapshot) -> Result<(), SchedError> {
        self.inner.on_path_added(now, path)
    }

    fn on_path_updated(&mut self, now: Instant, path: &PathSnapshot) -> Result<(), SchedError> {
        self.inner.on_path_updated(now, path)
    }

    fn on_path_removed(&mut self, now: Instant, path: PathId) {
        self.inner.on_path_removed(now, path)
    }

    fn on_stream_opened(&mut self, now: Instant, meta: &StreamMeta) -> Result<(), SchedError> {
        self.record(Recorded::Meta(*meta));
        self.inner.on_stream_opened(now, meta)
    }

    fn on_stream_updated(&mut self, now: Instant, meta: &StreamMeta) -> Result<(), SchedError> {
        self.record(Recorded::Meta(*meta));
        self.inner.on_stream_updated(now, meta)
    }

    fn on_data_queued(
        &mut self,
        now: Instant,
        stream: StreamId,
        bytes: u64,
    ) -> Result<(), SchedError> {
        self.inner.on_data_queued(now, stream, bytes)
    }

    fn on_stream_finished(&mut self, now: Instant, stream: StreamId) -> Result<(), SchedError> {
        self.inner.on_stream_finished(now, stream)
    }

    fn on_stream_closed(&mut self, now: Instant, stream: StreamId) {
        self.inner.on_stream_closed(now, stream)
    }

    fn poll_send(&mut self, now: Instant, path: PathId, room: u64) -> Option<Grant> {
        let grant = self.inner.poll_send(now, path, room)?;
        self.record(Recorded::Grant { path, grant });
        Some(grant)
    }

    fn poll_send_urgent(
        &mut self,
        now: Instant,
        path: PathId,
        room: u64,
        urgency: Urgency,
    ) -> Option<Grant> {
        let grant = self.inner.poll_send_urgent(now, path, room, urgency)?;
        self.record(Recorded::Grant { path, grant });
        Some(grant)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.inner.poll_timeout()
    }

    fn on_reinjection(
        &mut self,
        now: Instant,
        stream: StreamId,
        bytes: u64,
        from: PathId,
    ) -> Reinjection {
        self.inner.on_reinjection(now, stream, bytes, from)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::{Bandwidth, SchedulerKind};

    #[test]
    fn records_metadata_and_grants_in_order_up_to_its_capacity() {
        let log = RecordLog::new(2);
        let mut scheduler = Recording::new(SchedulerKind::Lrf.build(), log.clone());
        let now = Instant::now();
        let rate = Bandwidth::from_bytes_per_sec(1e6).unwrap();
        let path = PathSnapshot::new(PathId(0), Duration::from_millis(10), rate, 10_000);
        scheduler.on_path_added(now, &path).unwrap();
        let meta = StreamMeta::new(StreamId(4)).with_size(5000);
        scheduler.on_stream_opened(now, &meta).unwrap();
        scheduler.on_data_queued(now, StreamId(4), 5000).unwrap();
        let first = scheduler.poll_send(now, PathId(0), 1200).unwrap();
        scheduler.poll_send(now, PathId(0), 1200).unwrap();

        let log = log.lock().unwrap();
        let grant = Recorded::Grant {
            path: PathId(0),
            grant: first,
        };
        assert_eq!(log.events(), [Recorded::Meta(meta), grant]);
        assert_eq!(log.dropped(), 1);
    }
}
