//! The contract between a multipath transport and a stream-to-path scheduler.

use std::fmt;
use std::time::Instant;

use crate::{Grant, PathId, PathSnapshot, SchedError, StreamId, StreamMeta, Urgency};

/// Decides which stream's bytes go on which path.
///
/// A scheduler never does I/O and never reads the clock: the transport passes `now` in every
/// call and asks [`poll_timeout`](Scheduler::poll_timeout) when the scheduler next wants to be
/// asked again.
///
/// # Calling contract
///
/// 1. Report paths with [`on_path_added`](Scheduler::on_path_added); report every change of
///    status or estimates with [`on_path_updated`](Scheduler::on_path_updated) (at least once per
///    ack batch, so window room and estimates stay fresh) and loss of a path with
///    [`on_path_removed`](Scheduler::on_path_removed).
/// 2. Report streams with [`on_stream_opened`](Scheduler::on_stream_opened) before any of their
///    data, bytes ready to send with [`on_data_queued`](Scheduler::on_data_queued) (new data and
///    bytes that must be re-sent because their path died), the last byte written with
///    [`on_stream_finished`](Scheduler::on_stream_finished), and the end of a stream with
///    [`on_stream_closed`](Scheduler::on_stream_closed) (all acknowledged, or reset).
/// 3. Whenever a path has congestion-window room, call [`poll_send`](Scheduler::poll_send) with
///    that room until it returns `None` or the room is used; once it is used, a transport that
///    sends urgent streams first may offer more with
///    [`poll_send_urgent`](Scheduler::poll_send_urgent). Every grant is taken as sent: the
///    transport sends exactly `bytes` of that stream's next unsent data on that path.
/// 4. Before re-sending bytes that are still in flight on another path, ask
///    [`on_reinjection`](Scheduler::on_reinjection) who decides where they go.
pub trait Scheduler: Send + fmt::Debug {
    /// The scheduler's name as selected (e.g. `priority-bucket`).
    fn name(&self) -> &str;

    /// A path may now carry data.
    fn on_path_added(&mut self, now: Instant, path: &PathSnapshot) -> Result<(), SchedError>;

    /// A path's status or estimates changed.
    fn on_path_updated(&mut self, now: Instant, path: &PathSnapshot) -> Result<(), SchedError>;

    /// A path is gone; whatever it was granted and not acknowledged comes back through
    /// [`on_data_queued`](Scheduler::on_data_queued). Unknown ids are ignored.
    fn on_path_removed(&mut self, now: Instant, path: PathId);

    /// A stream opened with its urgency and, if known, size.
    fn on_stream_opened(&mut self, now: Instant, meta: &StreamMeta) -> Result<(), SchedError>;

    /// A stream's urgency, incremental flag or size hint changed.
    fn on_stream_updated(&mut self, now: Instant, meta: &StreamMeta) -> Result<(), SchedError>;

    /// `bytes` more bytes of a stream are ready to send.
    fn on_data_queued(
        &mut self,
        now: Instant,
        stream: StreamId,
        bytes: u64,
    ) -> Result<(), SchedError>;

    /// The application wrote the stream's last byte.
    fn on_stream_finished(&mut self, now: Instant, stream: StreamId) -> Result<(), SchedError>;

    /// The stream is over (fully acknowledged or reset): forget it. Unknown ids are ignored.
    fn on_stream_closed(&mut self, now: Instant, stream: StreamId);

    /// `path` has `room` bytes of congestion window: which stream sends, and how much?
    /// `None` means nothing for this path now (possibly on purpose, to wait for a faster path).
    fn poll_send(&mut self, now: Instant, path: PathId, room: u64) -> Option<Grant>;

    /// `path`'s window is full, but the transport sends a path's more urgent streams first
    /// among the bytes it holds: a stream of urgency at most `urgency` may send up to `room`
    /// bytes past the window, to go out ahead of the less urgent bytes the path holds but has
    /// not sent. Like [`poll_send`](Scheduler::poll_send) otherwise. The default grants
    /// nothing: a scheduler without urgencies keeps to the window.
    fn poll_send_urgent(
        &mut self,
        now: Instant,
        path: PathId,
        room: u64,
        urgency: Urgency,
    ) -> Option<Grant> {
        let _ = (now, path, room, urgency);
        None
    }

    /// When the scheduler wants [`poll_send`](Scheduler::poll_send) to be tried again even if
    /// nothing else happens (e.g. a deliberate wait expires).
    fn poll_timeout(&self) -> Option<Instant> {
        None
    }

    /// `bytes` of `stream`, in flight on `from`, are to be sent again on another path: `from`
    /// lost packets while the stream is urgent, or stopped acknowledging anything. The default
    /// leaves them to the transport's own policy.
    fn on_reinjection(
        &mut self,
        now: Instant,
        stream: StreamId,
        bytes: u64,
        from: PathId,
    ) -> Reinjection {
        let _ = (now, stream, bytes, from);
        Reinjection::Transport
    }
}

/// Who sends a re-injection ([`Scheduler::on_reinjection`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reinjection {
    /// The transport sends the bytes at once on the path that delivers them soonest, ahead of
    /// any grant.
    Transport,
    /// The bytes come back through [`Scheduler::on_data_queued`], to be granted like any other.
    Scheduler,
    /// They are not sent again now: the path's own loss recovery, or its failure, re-sends them.
    Skip,
}
