//! One multipath connection as a state machine: streams, flow control, data acks, control
//! frames, re-injection, failure detection and the scheduler's calls.
//!
//! Every input takes `now`; nothing here reads a clock or does I/O. The peer's bytes arrive
//! through [`Connection::on_chunk`] and [`Connection::on_frame`] (anything malformed becomes a
//! [`ProtocolError`]), the application's calls through the stream methods, and the driver
//! asks what to send on each path ([`Connection::poll_path`]), which control frames are due
//! ([`Connection::poll_control`]), when to come back ([`Connection::poll_timeout`]) and what
//! else to do ([`Connection::poll_action`]).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use mpquic_sched::{
    Grant, Lead, PathId, PathSet, PathSnapshot, PathStatus, Priority, Reinjection, Scheduler,
    StreamId, StreamMeta, Urgency,
};

use crate::arrivals::ArrivalLog;
use crate::error::{codes, ConnectionError, ProtocolError, ReadError, WriteError};
use crate::path::{Path, PathCounters, PathEvent, PathTelemetry, Tail};
use crate::pending_acks::PendingAcks;
use crate::reassembly::ReassemblyError;
use crate::receive_window::ReceiveWindow;
use crate::recv::{RecvCounters, RecvState};
use crate::reinjection::{Cause, ReinjectionConfig, ReinjectionStats};
use crate::send::{ChunkWork, Expected, Flight, SendState, StreamCounters};
use crate::send_buffer::{RangeSet, SendBuffer};
use crate::wire::{ChunkReader, Frame, Params, MAX_VARINT};

/// Largest grant asked of the scheduler at once, so that decisions stay close to the wire.
const MAX_GRANT: u64 = 64 * 1024;

/// Bytes a path may take on past its congestion window, waiting in the driver's transport.
///
/// quinn sends a packet as soon as an acknowledgement opens its window, with whatever stream
/// bytes it holds, before the path's sender has seen that acknowledgement and handed it more.
/// A path that held exactly its window therefore sent the tail of every hand-over as a packet
/// of its own: on the testbed, datagrams averaged 1130-1210 bytes where 1452 fit, and the
/// links carried 5.8% more than the payload instead of 4.6%. Two full packets' worth waiting
/// keeps every packet full: BBR's bulk goodput rose by about a point; loss-based controllers
/// lost about as much in pb-high, for a cause not found (docs/results/2026-11-27-full-packets/).
const AHEAD_OF_THE_WINDOW: u64 = 3000;

/// The least a path takes on once bytes wait in the transport past its window, on top of
/// [`AHEAD_OF_THE_WINDOW`]. Every grant is a chunk with a header of its own (offset and
/// length, about 6 bytes); granted as acknowledgements opened the window, a bulk transfer's
/// chunks averaged 3 kB, and their headers cost 0.2% of the bytes on the wire, the whole
/// difference to noq's (docs/results/2026-11-28-grant-quantum/).
const GRANT_QUANTUM: u64 = 12_000;

/// Streams this urgent (RFC 9218's highest: a page's document, CSS and blocking scripts) may
/// be granted past a full window ([`Scheduler::poll_send_urgent`]): the driver hands them to
/// quinn with a higher stream priority, so they go out ahead of the less urgent bytes the
/// path holds unsent, instead of behind all of them.
const PAST_THE_WINDOW: Urgency = Urgency::HIGHEST;

/// The most [`Frame::Missing`] and [`Frame::MissingTail`] reports queued at once; more wait
/// for the next hole or tail.
const MAX_MISSING_QUEUED: usize = 64;

/// The most streams one tail probe names ([`Frame::Tail`]).
const MAX_TAILS_PER_PROBE: usize = 4;

/// Which end of the connection this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Opened the connection and opens paths.
    Client,
    /// Accepted it.
    Server,
}

/// Stream kinds, indexing the per-kind arrays below.
const BIDI: usize = 0;
const UNI: usize = 1;

fn kind(id: u64) -> usize {
    if id & 2 == 0 {
        BIDI
    } else {
        UNI
    }
}

fn initiator(id: u64) -> Side {
    if id & 1 == 0 {
        Side::Client
    } else {
        Side::Server
    }
}

pub(crate) fn stream_id(side: Side, kind_index: usize, seq: u64) -> u64 {
    (seq << 2) | ((kind_index as u64) << 1) | u64::from(side == Side::Server)
}

#[derive(Debug, Default)]
pub(crate) struct Stream {
    pub(crate) send: Option<SendState>,
    pub(crate) recv: Option<RecvState>,
}

/// What a path's sender does next.
#[derive(Debug)]
pub enum Step {
    /// The path is gone or the connection is over: the sender ends.
    Stop,
    /// Write these chunks, in order.
    Send(Vec<ChunkWork>),
    /// Nothing to send now: ask again when woken ([`Action::WakePath`]) or at the deadline.
    Wait(Option<Instant>),
}

/// Something the driver must do, from [`Connection::poll_action`].
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Tell the application.
    Event(PathEvent),
    /// The path is gone: the driver drops its transport (closing it if it is still open)
    /// and tells the application ([`PathEvent::Down`]).
    PathDown {
        /// The path.
        path: PathId,
        /// Why.
        reason: String,
        /// Its last counters.
        counters: PathCounters,
        /// The core declared it failed (no acknowledgement by its failure deadline), rather
        /// than being told it closed: a client may open it again.
        failed: bool,
    },
    /// The path's sender may have something to do: call [`Connection::poll_path`].
    WakePath(PathId),
    /// The application waiting to read this stream may go on.
    WakeReader(u64),
    /// The application waiting to write this stream may go on.
    WakeWriter(u64),
    /// Close the path's transport with this code (the core already counts it down).
    ClosePath {
        /// The path.
        path: PathId,
        /// One of [`codes`].
        code: u64,
        /// Why, for the peer.
        reason: &'static str,
    },
    /// The peer received `received` UDP payload bytes on `path` so far
    /// ([`Frame::PathReceived`]): acknowledgements the path's own may not have brought yet.
    DeliveryReport {
        /// The path.
        path: PathId,
        /// The peer's count.
        received: u64,
    },
}

/// The settings of a connection's core (the driver's configuration, validated there).
#[derive(Debug, Clone)]
pub struct TransportConfig {
    /// Bytes a stream's send buffer holds before writes wait.
    pub send_buffer: u64,
    /// How long a session without open streams lives without activity.
    pub idle_timeout: Duration,
    /// Whether the receiver reports, on the control path, what each other path received.
    pub delivery_reports: bool,
    /// Whether the peer's delivery reports go to the path's congestion control.
    pub delivery_credit: bool,
    /// A path is declared failed when data waits this many smoothed RTTs for an ack...
    pub path_failure_rtts: u32,
    /// ...and at least this long.
    pub path_failure_floor: Duration,
    /// When bytes in flight on one path are sent again on another.
    pub reinjection: ReinjectionConfig,
}

/// A path the connection does not have up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no path {} is up", .0.0)]
pub struct UnknownPath(pub PathId);

/// One multipath connection, without I/O.
#[derive(Debug)]
pub struct Connection {
    side: Side,
    config: TransportConfig,
    scheduler: Box<dyn Scheduler>,
    local_params: Params,
    /// The paths that are up; a path that goes down leaves at once.
    paths: BTreeMap<PathId, Path>,
    streams: BTreeMap<u64, Stream>,
    next_local_seq: [u64; 2],
    peer_max_streams: [u64; 2],
    remote_next_seq: [u64; 2],
    local_max_streams: [u64; 2],
    incoming: [VecDeque<u64>; 2],
    send_max_data: u64,
    peer_max_stream_data: u64,
    released_total: u64,
    receive_window: ReceiveWindow,
    /// Frames to send, with the path they must go on if any.
    control: VecDeque<(Option<PathId>, Frame)>,
    pending_acks: PendingAcks,
    pending_max_stream_data: BTreeMap<u64, u64>,
    max_streams_dirty: [bool; 2],
    arrivals: u32,
    error: Option<ConnectionError>,
    /// When the peer or the application last did something with the session (see
    /// [`Connection::idle_deadline`]).
    last_activity: Instant,
    actions: VecDeque<Action>,
    paths_to_wake: BTreeSet<PathId>,
    /// The server's next path id.
    next_path_id: u32,
    reinjection: ReinjectionStats,
    /// Recent first arrivals, to time second copies against.
    first_arrivals: ArrivalLog,
    /// Streams with bytes waiting to be re-injected (`SendState::reinject`).
    reinjecting: BTreeSet<u64>,
    /// Bytes of the peer's chunk streams waiting past holes, in the drivers' readers.
    bytes_past_holes: Arc<AtomicU64>,
}

impl Connection {
    /// A connection of `side` with these limits of its own (`local`) and of the peer's
    /// (`peer`), scheduling with `scheduler`.
    pub fn new(
        side: Side,
        config: TransportConfig,
        scheduler: Box<dyn Scheduler>,
        local: Params,
        peer: Params,
        now: Instant,
    ) -> Self {
        Self {
            side,
            scheduler,
            local_params: local,
            paths: BTreeMap::new(),
            streams: BTreeMap::new(),
            next_local_seq: [0; 2],
            peer_max_streams: [peer.max_bidi_streams, peer.max_uni_streams],
            remote_next_seq: [0; 2],
            local_max_streams: [local.max_bidi_streams, local.max_uni_streams],
            incoming: [VecDeque::new(), VecDeque::new()],
            send_max_data: peer.max_data,
            peer_max_stream_data: peer.max_stream_data,
            released_total: 0,
            receive_window: ReceiveWindow::new(local.max_data),
            control: VecDeque::new(),
            pending_acks: PendingAcks::default(),
            pending_max_stream_data: BTreeMap::new(),
            max_streams_dirty: [false; 2],
            arrivals: 0,
            error: None,
            last_activity: now,
            actions: VecDeque::new(),
            paths_to_wake: BTreeSet::new(),
            next_path_id: 0,
            reinjection: ReinjectionStats::default(),
            first_arrivals: ArrivalLog::default(),
            reinjecting: BTreeSet::new(),
            bytes_past_holes: Arc::default(),
            config,
        }
    }

    /// Client or server.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The scheduler's name.
    pub fn scheduler_name(&self) -> &str {
        self.scheduler.name()
    }

    /// Why the connection is over, if it is.
    pub fn error(&self) -> Option<&ConnectionError> {
        self.error.as_ref()
    }

    /// The ids of the paths that are up.
    pub fn path_ids(&self) -> impl Iterator<Item = PathId> + '_ {
        self.paths.keys().copied()
    }

    /// A path's status and counters, if it is up.
    pub fn path(&self, path: PathId) -> Option<(PathStatus, PathCounters)> {
        self.paths.get(&path).map(|p| (p.status, p.counters))
    }

    /// What the scheduler sees of a path that is up: its estimates, window and bytes in flight.
    pub fn path_snapshot(&self, path: PathId) -> Option<PathSnapshot> {
        Some(self.paths.get(&path)?.snapshot(path))
    }

    /// What re-injection did so far, and the redundant bytes received.
    pub fn reinjection_stats(&self) -> ReinjectionStats {
        self.reinjection
    }

    /// How many paths are up.
    pub fn path_count(&self) -> usize {
        self.paths.len()
    }

    /// A new path id, for the server to hand to a joining path (the first is 0).
    pub fn next_path_id(&mut self) -> PathId {
        let id = PathId(self.next_path_id);
        self.next_path_id = self.next_path_id.wrapping_add(1);
        id
    }

    /// The next thing the driver must do, if any.
    pub fn poll_action(&mut self) -> Option<Action> {
        if let Some(action) = self.actions.pop_front() {
            return Some(action);
        }
        self.paths_to_wake.pop_first().map(Action::WakePath)
    }

    /// Adds a path that is up; the scheduler learns of it and the application gets
    /// [`PathEvent::Up`]. Refused once the connection is over.
    pub fn add_path(
        &mut self,
        id: PathId,
        telemetry: Box<dyn PathTelemetry>,
        status: PathStatus,
        now: Instant,
    ) -> Result<(), ConnectionError> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        let path = Path::new(telemetry, status);
        let snapshot = path.snapshot(id);
        self.paths.insert(id, path);
        // A scheduler may refuse a path it cannot use; the path still carries control frames.
        let _ = self.scheduler.on_path_added(now, &snapshot);
        self.actions
            .push_back(Action::Event(PathEvent::Up { path: id }));
        self.paths_to_wake.insert(id);
        Ok(())
    }

    fn wake_paths(&mut self) {
        self.paths_to_wake.extend(self.paths.keys().copied());
    }

    /// The up path with the lowest one-way delay towards the peer: where acks and other
    /// control frames go (SEC's uplink choice).
    pub fn control_path(&self) -> Option<PathId> {
        self.paths
            .iter()
            .min_by_key(|(_, p)| {
                (
                    p.suspected.is_some(),
                    p.status != PathStatus::Available,
                    p.telemetry.one_way_delay(),
                )
            })
            .map(|(id, _)| *id)
    }

    /// When the session ends for idleness: its idle timeout after the last stream data, frame
    /// or stream operation, once no stream is open. quinn's keep-alives hold a path open
    /// however long nothing happens on it, so the session keeps its own clock.
    fn idle_deadline(&self) -> Option<Instant> {
        self.streams
            .is_empty()
            .then(|| self.last_activity + self.config.idle_timeout)
    }

    // ---- streams opened and accepted here ----

    /// Opens a local stream if the peer's limit allows.
    pub fn open(&mut self, uni: bool, now: Instant) -> Option<u64> {
        let k = if uni { UNI } else { BIDI };
        if self.next_local_seq[k] >= self.peer_max_streams[k] {
            return None;
        }
        let id = stream_id(self.side, k, self.next_local_seq[k]);
        self.next_local_seq[k] += 1;
        self.last_activity = now;
        let stream = Stream {
            send: Some(self.new_send(id, now)),
            recv: (!uni).then(|| RecvState::new(self.local_params.max_stream_data)),
        };
        self.streams.insert(id, stream);
        Some(id)
    }

    fn new_send(&mut self, id: u64, now: Instant) -> SendState {
        self.arrivals = self.arrivals.wrapping_add(1);
        let send = SendState::new(id, self.peer_max_stream_data, self.arrivals);
        // Opening can only fail for a duplicate id, which the id counters rule out.
        let _ = self.scheduler.on_stream_opened(now, &send.meta);
        send
    }

    /// Checks the stream the peer refers to and opens remote streams implicitly (QUIC's rule: a
    /// stream opens every lower one of its kind too). `Ok(false)`: a stream that is already over.
    ///
    /// `ours_to_send` says which half the peer refers to: frames about this side's sending
    /// (acks, credits, stop-sending) or its receiving (chunks, fin, reset). A stream that has
    /// no such half at all is a protocol error; a half that is already over is not (late
    /// duplicates are normal with several paths).
    fn peer_stream(
        &mut self,
        id: u64,
        ours_to_send: bool,
        now: Instant,
    ) -> Result<bool, ProtocolError> {
        let k = kind(id);
        let ours = initiator(id) == self.side;
        let has_half = k == BIDI || ours == ours_to_send;
        if !has_half {
            return Err(ProtocolError::StreamState(id));
        }
        let seq = id >> 2;
        if initiator(id) == self.side {
            if seq >= self.next_local_seq[k] {
                return Err(ProtocolError::StreamState(id));
            }
            return Ok(self.streams.contains_key(&id));
        }
        if seq >= self.local_max_streams[k] {
            return Err(ProtocolError::StreamLimit(id));
        }
        while self.remote_next_seq[k] <= seq {
            let new_id = stream_id(initiator(id), k, self.remote_next_seq[k]);
            self.remote_next_seq[k] += 1;
            let mut stream = Stream {
                send: None,
                recv: Some(RecvState::new(self.local_params.max_stream_data)),
            };
            if k == BIDI {
                stream.send = Some(self.new_send(new_id, now));
            }
            self.streams.insert(new_id, stream);
            self.incoming[k].push_back(new_id);
        }
        Ok(self.streams.contains_key(&id))
    }

    /// The next stream of a kind the peer opened, if any.
    pub fn accept(&mut self, uni: bool) -> Option<u64> {
        self.incoming[if uni { UNI } else { BIDI }].pop_front()
    }

    /// Removes a stream whose halves are both over, and gives the peer a new stream credit.
    fn maybe_remove(&mut self, id: u64) {
        let done = self
            .streams
            .get(&id)
            .is_some_and(|s| s.send.is_none() && s.recv.is_none());
        if done {
            self.streams.remove(&id);
            if initiator(id) != self.side {
                let k = kind(id);
                self.local_max_streams[k] += 1;
                self.max_streams_dirty[k] = true;
            }
        }
    }

    // ---- the sending half ----

    /// The counters of a stream this side sends on.
    pub fn send_counters(&self, id: u64) -> Option<Arc<StreamCounters>> {
        Some(self.streams.get(&id)?.send.as_ref()?.counters.clone())
    }

    /// The counters of a stream this side receives on.
    pub fn recv_counters(&self, id: u64) -> Option<Arc<RecvCounters>> {
        Some(self.streams.get(&id)?.recv.as_ref()?.counters.clone())
    }

    fn conn_error<T>(&self) -> Result<T, ConnectionError> {
        Err(self.error.clone().unwrap_or(ConnectionError::LocallyClosed))
    }

    /// Copies as much of `data` as the stream's send buffer takes; `Ok(0)` means "full, try
    /// again after [`Action::WakeWriter`]".
    pub fn write(&mut self, id: u64, data: &[u8], now: Instant) -> Result<usize, WriteError> {
        if self.error.is_some() {
            return Ok(self.conn_error()?);
        }
        let limit = self.config.send_buffer;
        let send = self
            .streams
            .get_mut(&id)
            .and_then(|s| s.send.as_mut())
            .ok_or(WriteError::ClosedStream)?;
        if let Some(code) = send.stopped {
            return Err(WriteError::Stopped(code));
        }
        if send.fin.is_some() || send.reset.is_some() {
            return Err(WriteError::ClosedStream);
        }
        let space = limit.saturating_sub(send.buf.len());
        if space == 0 {
            send.writer_waiting = true;
            return Ok(0);
        }
        let n = (space as usize).min(data.len());
        send.buf.push(Bytes::copy_from_slice(&data[..n]));
        self.last_activity = now;
        self.release(id, now);
        Ok(n)
    }

    /// Hands newly written bytes to the scheduler as far as flow control allows.
    fn release(&mut self, id: u64, now: Instant) {
        let conn_room = self.send_max_data.saturating_sub(self.released_total);
        let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
            return;
        };
        if send.reset.is_some() {
            return;
        }
        let limit = send.buf.end().min(send.max_stream_data);
        let n = limit.saturating_sub(send.released).min(conn_room);
        if n == 0 {
            return;
        }
        send.released += n;
        self.released_total += n;
        let _ = self.scheduler.on_data_queued(now, StreamId(id), n);
        self.wake_paths();
    }

    fn release_all(&mut self, now: Instant) {
        let ids: Vec<u64> = self.streams.keys().copied().collect();
        for id in ids {
            self.release(id, now);
        }
    }

    /// No more bytes will be written on the stream.
    pub fn finish(&mut self, id: u64, now: Instant) -> Result<(), WriteError> {
        let send = self
            .streams
            .get_mut(&id)
            .and_then(|s| s.send.as_mut())
            .ok_or(WriteError::ClosedStream)?;
        if send.fin.is_some() || send.reset.is_some() {
            return Err(WriteError::ClosedStream);
        }
        let final_size = send.buf.end();
        send.fin = Some(final_size);
        let all_granted = send.all_granted();
        let _ = self.scheduler.on_stream_finished(now, StreamId(id));
        self.control.push_back((
            None,
            Frame::Fin {
                stream: id,
                final_size,
            },
        ));
        if all_granted {
            self.retire(id, false);
        }
        self.wake_paths();
        Ok(())
    }

    /// Abandons the stream's sending with `code`.
    pub fn reset(&mut self, id: u64, code: u64, now: Instant) -> Result<(), WriteError> {
        if code > MAX_VARINT {
            return Err(WriteError::InvalidCode(code));
        }
        let send = self
            .streams
            .get_mut(&id)
            .and_then(|s| s.send.as_mut())
            .ok_or(WriteError::ClosedStream)?;
        if send.reset.is_some() {
            return Err(WriteError::ClosedStream);
        }
        self.reset_send(id, code, now);
        Ok(())
    }

    /// Abandons a stream's sending: the receiver is told the final size and the buffers go.
    fn reset_send(&mut self, id: u64, code: u64, now: Instant) {
        let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
            return;
        };
        send.reset = Some(code);
        send.buf = SendBuffer::default();
        send.resend = RangeSet::default();
        send.reinject = RangeSet::default();
        send.in_flight.clear();
        if send.wake() {
            self.actions.push_back(Action::WakeWriter(id));
        }
        // A fin already announced a final size, which the receiver may hold: the reset must
        // repeat it (RFC 9000 section 4.5), though part of it was never sent. The receiver counts
        // it all against the connection's data limit, so this end does too.
        let final_size = send.fin.unwrap_or(send.next_fresh);
        let unreleased = final_size.saturating_sub(send.released);
        send.released += unreleased;
        self.released_total += unreleased;
        self.scheduler.on_stream_closed(now, StreamId(id));
        self.control.push_back((
            None,
            Frame::ResetStream {
                stream: id,
                code,
                final_size,
            },
        ));
        self.retire(id, true);
    }

    /// Tells every path's sender that the stream's transport streams are done.
    fn retire(&mut self, id: u64, reset: bool) {
        for path in self.paths.values_mut() {
            path.retire.push((id, reset));
        }
        self.wake_paths();
    }

    /// Sets a sending stream's RFC 9218 priority.
    pub fn set_priority(
        &mut self,
        id: u64,
        priority: Priority,
        now: Instant,
    ) -> Result<(), WriteError> {
        self.set_meta(
            id,
            |meta| {
                meta.urgency = priority.urgency();
                meta.incremental = priority.incremental();
            },
            now,
        )
    }

    /// Restricts a sending stream to `paths` (`None`: any path). Bytes already in flight stay
    /// where they are.
    pub fn set_paths(
        &mut self,
        id: u64,
        paths: Option<PathSet>,
        now: Instant,
    ) -> Result<(), WriteError> {
        self.set_meta(id, |meta| meta.paths = paths, now)
    }

    /// Tells the scheduler a sending stream's total size.
    pub fn set_size_hint(&mut self, id: u64, bytes: u64, now: Instant) -> Result<(), WriteError> {
        self.set_meta(id, |meta| meta.size = Some(bytes), now)
    }

    /// Tells the scheduler the requests the peer makes once it has this sending stream
    /// ([`StreamMeta::leads_to`]): a stream that leads to something more urgent than itself
    /// is scheduled and re-injected at that urgency, and PriorityBucket sends a stream that
    /// starts a chain of requests early.
    pub fn set_leads_to(&mut self, id: u64, lead: Lead, now: Instant) -> Result<(), WriteError> {
        self.set_meta(id, |meta| meta.leads_to = Some(lead), now)
    }

    fn set_meta(
        &mut self,
        id: u64,
        change: impl FnOnce(&mut StreamMeta),
        now: Instant,
    ) -> Result<(), WriteError> {
        let send = self
            .streams
            .get_mut(&id)
            .and_then(|s| s.send.as_mut())
            .ok_or(WriteError::ClosedStream)?;
        change(&mut send.meta);
        let meta = send.meta;
        let _ = self.scheduler.on_stream_updated(now, &meta);
        self.wake_paths();
        Ok(())
    }

    /// Turns a grant into chunks: re-sends first, then new bytes.
    pub(crate) fn take_grant(
        &mut self,
        path: PathId,
        grant: Grant,
        expected: Expected,
    ) -> Option<ChunkWork> {
        let send = self.streams.get_mut(&grant.stream.0)?.send.as_mut()?;
        if send.reset.is_some() {
            return None;
        }
        let mut budget = grant.bytes;
        let mut ranges = Vec::new();
        while budget > 0 {
            let Some(range) = send.resend.pop_front(budget) else {
                break;
            };
            budget -= range.end - range.start;
            send.counters
                .resent
                .fetch_add(range.end - range.start, Ordering::Relaxed);
            ranges.push(range);
        }
        let fresh = budget.min(send.released - send.next_fresh);
        if fresh > 0 {
            ranges.push(send.next_fresh..send.next_fresh + fresh);
            send.next_fresh += fresh;
        }
        let (work, sent) =
            send.send_ranges(path, ranges, expected, grant.urgency, grant.first_in_bucket);
        self.count_sent(path, sent);
        Some(work)
    }

    fn count_sent(&mut self, path: PathId, sent: u64) {
        self.reinjection.sent = self.reinjection.sent.saturating_add(sent);
        if let Some(entry) = self.paths.get_mut(&path) {
            entry.counters.bytes_sent = entry.counters.bytes_sent.saturating_add(sent);
        }
    }

    fn on_data_ack(
        &mut self,
        id: u64,
        offset: u64,
        fin: bool,
        now: Instant,
    ) -> Result<(), ProtocolError> {
        if !self.peer_stream(id, true, now)? {
            return Ok(());
        }
        let Some(stream) = self.streams.get_mut(&id) else {
            return Ok(());
        };
        let Some(send) = stream.send.as_mut() else {
            return Ok(());
        };
        if send.reset.is_some() {
            if fin {
                stream.send = None;
                self.maybe_remove(id);
            }
            return Ok(());
        }
        if offset > send.next_fresh {
            return Err(ProtocolError::UnexpectedFrame(
                "data ack beyond the data sent",
            ));
        }
        if offset > send.acked {
            send.acked = offset;
            send.buf.ack_to(offset);
            send.resend.remove_below(offset);
            send.reinject.remove_below(offset);
            while let Some(entry) = send.in_flight.first_entry() {
                if entry.get().end <= offset {
                    entry.remove();
                } else if *entry.key() < offset {
                    let flight = entry.remove();
                    send.in_flight.insert(offset, flight);
                    break;
                } else {
                    break;
                }
            }
            if send.wake() {
                self.actions.push_back(Action::WakeWriter(id));
            }
        }
        if fin && send.fin == Some(offset) {
            stream.send = None;
            self.scheduler.on_stream_closed(now, StreamId(id));
            self.retire(id, false);
            self.maybe_remove(id);
        }
        Ok(())
    }

    /// The driver opened `transport_stream` on `path` for the chunks of stream `id`: the
    /// peer's [`Frame::Missing`] reports name it.
    pub fn on_chunk_stream_opened(&mut self, path: PathId, id: u64, transport_stream: u64) {
        if let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) {
            send.opened_transport_stream(path, transport_stream);
        }
    }

    // ---- the receiving half ----

    /// A chunk of stream `id` arrived on `path`.
    pub fn on_chunk(
        &mut self,
        path: PathId,
        id: u64,
        offset: u64,
        data: Bytes,
        now: Instant,
    ) -> Result<(), ProtocolError> {
        let len = data.len() as u64;
        self.last_activity = now;
        if let Some(entry) = self.paths.get_mut(&path) {
            entry.counters.bytes_received = entry.counters.bytes_received.saturating_add(len);
        }
        if self.config.delivery_reports && self.paths.len() > 1 {
            self.pending_acks.note_arrival(now);
        }
        if !self.peer_stream(id, false, now)? {
            // A late copy of bytes a finished stream had: timed if its first is remembered.
            let end = offset.saturating_add(len);
            if let Some(lead) = self.first_arrivals.lead(id, offset, end, now) {
                self.reinjection.add_duplicate(len, Some(lead));
            }
            return Ok(());
        }
        let Some(recv) = self.streams.get_mut(&id).and_then(|s| s.recv.as_mut()) else {
            return Ok(());
        };
        let end = offset.checked_add(len).ok_or(ProtocolError::StreamWindow {
            stream: id,
            end: u64::MAX,
            limit: recv.max_stream_data,
        })?;
        if recv.final_size.is_some_and(|f| end > f) {
            return Err(ProtocolError::FinalSize(id));
        }
        if end > recv.max_stream_data {
            return Err(ProtocolError::StreamWindow {
                stream: id,
                end,
                limit: recv.max_stream_data,
            });
        }
        self.receive_window
            .receive(end.saturating_sub(recv.counted_end))?;
        recv.counted_end = recv.counted_end.max(end);
        if recv.stopped || recv.reset.is_some() {
            // Nobody reads these bytes: their credit comes straight back.
            recv.discard(&mut self.receive_window);
            return Ok(());
        }
        let before = recv.reasm.footprint();
        let buffered_before = recv
            .reasm
            .buffered()
            .saturating_add(recv.reasm.read_offset());
        recv.reasm
            .insert(offset, data, recv.max_stream_data)
            .map_err(|e| match e {
                ReassemblyError::Conflict { offset } => {
                    ProtocolError::ConflictingData { stream: id, offset }
                }
                ReassemblyError::BeyondWindow { end, limit } => ProtocolError::StreamWindow {
                    stream: id,
                    end,
                    limit,
                },
                ReassemblyError::Overflow => ProtocolError::StreamWindow {
                    stream: id,
                    end: u64::MAX,
                    limit: recv.max_stream_data,
                },
            })?;
        let new_bytes = (recv
            .reasm
            .buffered()
            .saturating_add(recv.reasm.read_offset()))
        .saturating_sub(buffered_before);
        let duplicate = len.saturating_sub(new_bytes);
        // Timed before this chunk's own new bytes are recorded.
        let lead = (duplicate > 0)
            .then(|| self.first_arrivals.lead(id, offset, end, now))
            .flatten();
        if new_bytes > 0 {
            self.first_arrivals.record(id, offset, end, now);
        }
        if duplicate > 0 {
            self.reinjection.add_duplicate(duplicate, lead);
            recv.counters.add_duplicate(duplicate, lead);
        }
        let footprint = recv.reasm.footprint();
        let stream_limit = self.local_params.max_stream_data.saturating_mul(2);
        if footprint > stream_limit {
            return Err(ProtocolError::ExcessiveBuffering {
                stream: id,
                footprint,
                limit: stream_limit,
            });
        }
        self.receive_window.track_footprint(id, before, footprint)?;
        Self::queue_ack(&mut self.pending_acks, id, recv, now);
        if recv.wake() {
            self.actions.push_back(Action::WakeReader(id));
        }
        Ok(())
    }

    /// A reader for a chunk stream the peer opened. At most two connection windows may wait
    /// past holes in all of them: what waits there was not delivered yet, so the peer sent it
    /// within its connection credit, once or, re-sent, twice.
    pub fn chunk_reader(&self) -> ChunkReader {
        let limit = self.local_params.max_data.saturating_mul(2);
        ChunkReader::new(self.bytes_past_holes.clone(), limit)
    }

    /// The driver read bytes of chunk stream `transport_stream` on `path` past a hole that
    /// starts at logical offset `from` (0 if it cannot tell): the peer learns of it on the path
    /// with the lowest one-way delay, if that is another path
    /// ([`ReinjectionConfig::missing_reports`]).
    pub fn on_missing(&mut self, path: PathId, transport_stream: u64, from: u64) {
        self.report_missing(
            path,
            Frame::Missing {
                path: path.0,
                transport_stream,
                from,
            },
        );
    }

    /// A tail probe on `path` says the peer's bytes of `stream` there end at `end`: the probe
    /// left after them, so if the last of them is not here, the path lost them.
    fn on_tail(&mut self, path: PathId, stream: u64, end: u64) {
        let Some(recv) = self.streams.get(&stream).and_then(|s| s.recv.as_ref()) else {
            return;
        };
        if recv.reset.is_some() || recv.stopped || end > recv.max_stream_data {
            return;
        }
        let Some(from) = recv.reasm.missing_before(end) else {
            return;
        };
        self.report_missing(
            path,
            Frame::MissingTail {
                path: path.0,
                stream,
                from,
            },
        );
    }

    /// Queues `report`, a [`Frame::Missing`] or [`Frame::MissingTail`] about `path`, for the
    /// path with the lowest one-way delay, if that is another path
    /// ([`ReinjectionConfig::missing_reports`]).
    fn report_missing(&mut self, path: PathId, report: Frame) {
        if self.config.reinjection.missing_report_urgency().is_none() {
            return;
        }
        if self.control_path().is_none_or(|control| control == path) {
            return;
        }
        // The peer's holes and tails drive these: bounded, so that a peer that makes many
        // cannot fill the queue faster than the control path drains it.
        let queued = self
            .control
            .iter()
            .filter(|(_, frame)| matches!(frame, Frame::Missing { .. } | Frame::MissingTail { .. }))
            .count();
        if queued < MAX_MISSING_QUEUED {
            self.control.push_back((None, report));
            self.reinjection.holes_reported = self.reinjection.holes_reported.saturating_add(1);
        }
    }

    /// Queues a data ack if the in-order prefix grew or the stream completed.
    fn queue_ack(pending: &mut PendingAcks, id: u64, recv: &mut RecvState, now: Instant) {
        let ack = (recv.reasm.contiguous_end(), recv.complete());
        if ack != recv.acked {
            recv.acked = ack;
            pending.insert(id, ack.0, ack.1, now);
        }
    }

    /// The next bytes of a stream for the application: `Ok(Some)` data, `Ok(None)` end of
    /// stream, `Err` reset or closed; `None` outer means "wait for [`Action::WakeReader`]".
    pub fn read(&mut self, id: u64, max: usize) -> Option<Result<Option<Bytes>, ReadError>> {
        let Some(recv) = self
            .streams
            .get_mut(&id)
            .and_then(|s| s.recv.as_mut())
            .filter(|r| !r.stopped)
        else {
            return Some(Err(ReadError::ClosedStream));
        };
        if let Some(code) = recv.reset {
            self.end_recv(id);
            return Some(Err(ReadError::Reset(code)));
        }
        let before = recv.reasm.footprint();
        if let Some(data) = recv.reasm.read(max) {
            let read_to = recv.reasm.read_offset();
            self.receive_window.consume(read_to - recv.credited);
            recv.credited = read_to;
            // Reads only shrink the buffer.
            self.receive_window
                .free(before.saturating_sub(recv.reasm.footprint()));
            // Keep a window's worth open ahead of the reader, announced in eighths of it,
            // unless the window already covers the end.
            let window = self.local_params.max_stream_data;
            let target = read_to.saturating_add(window);
            let short_of_end = recv.final_size.is_none_or(|f| recv.max_stream_data < f);
            let growth = target.saturating_sub(recv.max_stream_data);
            if short_of_end && growth >= (window / 8).max(1) {
                recv.max_stream_data = target;
                self.pending_max_stream_data.insert(id, target);
            }
            return Some(Ok(Some(data)));
        }
        if recv.final_size == Some(recv.reasm.read_offset()) {
            self.end_recv(id);
            return Some(Ok(None));
        }
        if let Some(e) = &self.error {
            return Some(Err(ReadError::ConnectionLost(e.clone())));
        }
        recv.reader_waiting = true;
        None
    }

    /// The receiving half is over: whatever it still holds goes back to the connection window,
    /// and the stream goes once both halves are over.
    fn end_recv(&mut self, id: u64) {
        let Some(mut recv) = self.streams.get_mut(&id).and_then(|s| s.recv.take()) else {
            return;
        };
        recv.discard(&mut self.receive_window);
        self.maybe_remove(id);
    }

    /// The application will not read this stream any more.
    pub fn stop(&mut self, id: u64, code: u64) -> Result<(), ReadError> {
        if code > MAX_VARINT {
            return Err(ReadError::InvalidCode(code));
        }
        let recv = self
            .streams
            .get_mut(&id)
            .and_then(|s| s.recv.as_mut())
            .ok_or(ReadError::ClosedStream)?;
        if recv.stopped {
            return Err(ReadError::ClosedStream);
        }
        recv.stopped = true;
        if recv.complete() || recv.reset.is_some() {
            self.end_recv(id);
            return Ok(());
        }
        recv.discard(&mut self.receive_window);
        self.control
            .push_back((None, Frame::StopSending { stream: id, code }));
        Ok(())
    }

    // ---- frames ----

    /// A control frame arrived on `path`.
    pub fn on_frame(
        &mut self,
        path: PathId,
        frame: Frame,
        now: Instant,
    ) -> Result<(), ProtocolError> {
        self.last_activity = now;
        match frame {
            Frame::MaxData { max } => {
                if max > self.send_max_data {
                    self.send_max_data = max;
                    self.release_all(now);
                }
            }
            Frame::MaxStreamData { stream: id, max } => {
                if !self.peer_stream(id, true, now)? {
                    return Ok(());
                }
                let Some(stream) = self.streams.get_mut(&id) else {
                    return Ok(());
                };
                let Some(send) = stream.send.as_mut() else {
                    return Ok(());
                };
                if max > send.max_stream_data {
                    send.max_stream_data = max;
                    self.release(id, now);
                }
            }
            Frame::MaxStreams { uni, count } => {
                let k = if uni { UNI } else { BIDI };
                self.peer_max_streams[k] = self.peer_max_streams[k].max(count);
            }
            Frame::DataAck {
                stream,
                offset,
                fin,
            } => self.on_data_ack(stream, offset, fin, now)?,
            Frame::Fin {
                stream: id,
                final_size,
            } => {
                if !self.peer_stream(id, false, now)? {
                    return Ok(());
                }
                let Some(stream) = self.streams.get_mut(&id) else {
                    return Ok(());
                };
                let Some(recv) = stream.recv.as_mut() else {
                    return Ok(());
                };
                if recv.final_size.is_some_and(|f| f != final_size) || final_size < recv.counted_end
                {
                    return Err(ProtocolError::FinalSize(id));
                }
                recv.final_size = Some(final_size);
                Self::queue_ack(&mut self.pending_acks, id, recv, now);
                if recv.wake() {
                    self.actions.push_back(Action::WakeReader(id));
                }
            }
            Frame::ResetStream {
                stream: id,
                code,
                final_size,
            } => self.on_reset(id, code, final_size, now)?,
            Frame::StopSending { stream: id, code } => {
                if !self.peer_stream(id, true, now)? {
                    return Ok(());
                }
                let Some(stream) = self.streams.get_mut(&id) else {
                    return Ok(());
                };
                let Some(send) = stream.send.as_mut() else {
                    return Ok(());
                };
                if send.reset.is_none() && send.stopped.is_none() {
                    send.stopped = Some(code);
                    *send
                        .counters
                        .stopped
                        .lock()
                        .unwrap_or_else(|e| e.into_inner()) = Some(code);
                    self.reset_send(id, code, now);
                }
            }
            Frame::PathStatus { backup } => {
                let status = if backup {
                    PathStatus::Backup
                } else {
                    PathStatus::Available
                };
                self.apply_path_status(path, status, now);
            }
            Frame::PathReceived { path, bytes } => {
                // A path already gone, or one this end does not know, has nothing to credit.
                let path = PathId(path);
                if self.config.delivery_credit && self.paths.contains_key(&path) {
                    self.actions.push_back(Action::DeliveryReport {
                        path,
                        received: bytes,
                    });
                }
            }
            // Its packet's acknowledgement was the point.
            Frame::Ping => {}
            Frame::Missing {
                path,
                transport_stream,
                from,
            } => self.resend_missing(PathId(path), transport_stream, from, now),
            Frame::Tail { stream, end } => self.on_tail(path, stream, end),
            Frame::MissingTail { path, stream, from } => {
                self.resend_behind_hole(PathId(path), stream, from, now)
            }
            Frame::NewSession { .. }
            | Frame::Join { .. }
            | Frame::Welcome { .. }
            | Frame::Joined { .. }
            | Frame::Refused { .. } => {
                return Err(ProtocolError::UnexpectedFrame(
                    "session frame after the session was set up",
                ))
            }
        }
        Ok(())
    }

    /// The peer abandoned a stream at `final_size`. Checked like a chunk ending there (RFC 9000
    /// section 4.5); the buffered bytes go at once, since reads now return the reset.
    fn on_reset(
        &mut self,
        id: u64,
        code: u64,
        final_size: u64,
        now: Instant,
    ) -> Result<(), ProtocolError> {
        if !self.peer_stream(id, false, now)? {
            return Ok(());
        }
        let Some(recv) = self.streams.get_mut(&id).and_then(|s| s.recv.as_mut()) else {
            return Ok(());
        };
        if recv.final_size.is_some_and(|f| f != final_size) || final_size < recv.counted_end {
            return Err(ProtocolError::FinalSize(id));
        }
        if final_size > recv.max_stream_data {
            return Err(ProtocolError::StreamWindow {
                stream: id,
                end: final_size,
                limit: recv.max_stream_data,
            });
        }
        self.receive_window.receive(final_size - recv.counted_end)?;
        recv.counted_end = final_size;
        recv.final_size = Some(final_size);
        recv.reset = Some(code);
        if recv.wake() {
            self.actions.push_back(Action::WakeReader(id));
        }
        let stopped = recv.stopped;
        recv.discard(&mut self.receive_window);
        // Tell the sender its reset arrived, so it can forget the stream.
        self.pending_acks.insert(id, final_size, true, now);
        if stopped {
            self.end_recv(id);
        }
        Ok(())
    }

    fn apply_path_status(&mut self, path: PathId, status: PathStatus, now: Instant) {
        let Some(entry) = self.paths.get_mut(&path) else {
            return;
        };
        if entry.status == status {
            return;
        }
        entry.status = status;
        let snapshot = entry.snapshot(path);
        let _ = self.scheduler.on_path_updated(now, &snapshot);
        self.actions
            .push_back(Action::Event(PathEvent::Status { path, status }));
        self.wake_paths();
    }

    /// Frames due to go out at `now`, with the path each must take (`None`: the control path,
    /// [`Connection::control_path`]). Data acks are held up to 5 ms to go out together, and go
    /// along with any other frame at once.
    pub fn poll_control(&mut self, now: Instant) -> Vec<(Option<PathId>, Frame)> {
        let acks_now = self.other_control() || self.pending_acks.due().is_some_and(|d| d <= now);
        let mut out: Vec<_> = self.control.drain(..).collect();
        let (acks, arrivals) = if acks_now {
            self.pending_acks.take()
        } else {
            (BTreeMap::new(), false)
        };
        if arrivals {
            out.extend(self.delivery_reports());
        }
        for (stream, (offset, fin)) in acks {
            out.push((
                None,
                Frame::DataAck {
                    stream,
                    offset,
                    fin,
                },
            ));
        }
        for (stream, max) in std::mem::take(&mut self.pending_max_stream_data) {
            out.push((None, Frame::MaxStreamData { stream, max }));
        }
        if let Some(max) = self.receive_window.take_update() {
            out.push((None, Frame::MaxData { max }));
        }
        for (k, uni) in [(BIDI, false), (UNI, true)] {
            if std::mem::take(&mut self.max_streams_dirty[k]) {
                out.push((
                    None,
                    Frame::MaxStreams {
                        uni,
                        count: self.local_max_streams[k],
                    },
                ));
            }
        }
        out
    }

    /// What each path other than the control path received since its last report (see
    /// [`Frame::PathReceived`]).
    fn delivery_reports(&mut self) -> Vec<(Option<PathId>, Frame)> {
        if !self.config.delivery_reports {
            return Vec::new();
        }
        let control = self.control_path();
        let mut out = Vec::new();
        for (id, entry) in self.paths.iter_mut() {
            if Some(*id) == control {
                continue;
            }
            let received = entry.telemetry.datagram_bytes_received();
            if received != entry.reported_received {
                entry.reported_received = received;
                out.push((
                    None,
                    Frame::PathReceived {
                        path: id.0,
                        bytes: received,
                    },
                ));
            }
        }
        out
    }

    /// Whether frames are due to go out at `now`.
    pub fn has_control(&self, now: Instant) -> bool {
        self.other_control() || self.pending_acks.due().is_some_and(|d| d <= now)
    }

    /// Control frames other than data acks, which never wait.
    fn other_control(&self) -> bool {
        !self.control.is_empty()
            || !self.pending_max_stream_data.is_empty()
            || self.receive_window.has_update()
            || self.max_streams_dirty.iter().any(|d| *d)
    }

    // ---- paths ----

    /// Sets a path available or backup here, and tells the peer on that path.
    pub fn set_path_status(
        &mut self,
        path: PathId,
        status: PathStatus,
        now: Instant,
    ) -> Result<(), UnknownPath> {
        if status == PathStatus::Down || !self.paths.contains_key(&path) {
            return Err(UnknownPath(path));
        }
        self.apply_path_status(path, status, now);
        self.control.push_back((
            Some(path),
            Frame::PathStatus {
                backup: status == PathStatus::Backup,
            },
        ));
        Ok(())
    }

    /// A path is gone (its transport closed, or the driver closed it): re-send what it
    /// carried and was not acknowledged on the others, and repeat the control state it may
    /// have lost ([`Action::PathDown`] follows).
    pub fn on_path_down(&mut self, path: PathId, reason: String, now: Instant) {
        self.path_down(path, reason, false, now);
    }

    fn path_down(&mut self, path: PathId, reason: String, failed: bool, now: Instant) {
        let Some(entry) = self.paths.remove(&path) else {
            return;
        };
        self.scheduler.on_path_removed(now, path);
        self.retarget_reinjections(path, now);
        self.actions.push_back(Action::PathDown {
            path,
            reason,
            counters: entry.counters,
            failed,
        });
        let ids: Vec<u64> = self.streams.keys().copied().collect();
        for id in ids {
            let Some(stream) = self.streams.get_mut(&id) else {
                continue;
            };
            if let Some(send) = stream.send.as_mut() {
                let mut bytes = 0;
                for range in send.take_in_flight(path, u64::MAX) {
                    bytes += range.end - range.start;
                    send.resend.insert(range);
                }
                if let Some(final_size) = send.fin.filter(|_| send.reset.is_none()) {
                    self.control.push_back((
                        None,
                        Frame::Fin {
                            stream: id,
                            final_size,
                        },
                    ));
                }
                if let Some(code) = send.reset {
                    self.control.push_back((
                        None,
                        Frame::ResetStream {
                            stream: id,
                            code,
                            final_size: send.next_fresh,
                        },
                    ));
                }
                if bytes > 0 {
                    let _ = self.scheduler.on_data_queued(now, StreamId(id), bytes);
                }
            }
            if let Some(recv) = stream.recv.as_mut() {
                self.pending_acks
                    .insert(id, recv.acked.0, recv.acked.1, now);
                self.pending_max_stream_data
                    .insert(id, recv.max_stream_data);
                if recv.stopped && recv.reset.is_none() {
                    self.control.push_back((
                        None,
                        Frame::StopSending {
                            stream: id,
                            code: 0,
                        },
                    ));
                }
            }
        }
        self.receive_window.repeat();
        self.max_streams_dirty = [true; 2];
        self.wake_paths();
        if self.paths.is_empty() && self.error.is_none() {
            self.fail(ConnectionError::AllPathsDown);
        }
    }

    /// Ends the connection (unless it is over already): every waiting reader and writer
    /// learns `error`, and every path's sender stops.
    pub fn fail(&mut self, error: ConnectionError) {
        if self.error.is_some() {
            return;
        }
        self.error = Some(error);
        for (id, stream) in &mut self.streams {
            if stream.send.as_mut().is_some_and(SendState::wake) {
                self.actions.push_back(Action::WakeWriter(*id));
            }
            if stream.recv.as_mut().is_some_and(RecvState::wake) {
                self.actions.push_back(Action::WakeReader(*id));
            }
        }
        self.wake_paths();
    }

    /// The path's sender started or stopped waiting in a transport write: tell the scheduler,
    /// and when the path fills, wake the others (a lowest-RTT-first scheduler now lets them
    /// send).
    pub fn set_writer_blocked(&mut self, path: PathId, blocked: bool, now: Instant) {
        let Some(entry) = self.paths.get_mut(&path) else {
            return;
        };
        if entry.writer_blocked == blocked {
            return;
        }
        entry.writer_blocked = blocked;
        let snapshot = entry.snapshot(path);
        let _ = self.scheduler.on_path_updated(now, &snapshot);
        if blocked {
            self.paths_to_wake
                .extend(self.paths.keys().filter(|id| **id != path));
        }
    }

    /// When `path` is declared failed unless an acknowledgement comes: its oldest
    /// unacknowledged data has waited `path_failure_rtts` smoothed RTTs (at least
    /// `path_failure_floor`). `None`: nothing is outstanding.
    fn failure_deadline(&self, path: &Path) -> Option<Instant> {
        let (unacked_since, srtt) = path.telemetry.ack_wait();
        let timeout = (srtt * self.config.path_failure_rtts).max(self.config.path_failure_floor);
        unacked_since.map(|since| since + timeout)
    }

    /// When [`Connection::handle_timeout`] is due: held data acks, the idle timeout, or a
    /// path's failure deadline. The paths' deadlines move as their transports send and are
    /// acknowledged, so a driver also asks again after those.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.error.is_some() {
            return None;
        }
        let failures = self.paths.values().filter_map(|p| self.failure_deadline(p));
        let suspicions = self
            .paths
            .keys()
            .filter_map(|id| self.suspicion_deadline(*id));
        let probes = self.paths.values().filter_map(|p| p.probe_tail_at);
        [self.pending_acks.due(), self.idle_deadline()]
            .into_iter()
            .flatten()
            .chain(failures)
            .chain(suspicions)
            .chain(probes)
            .min()
    }

    /// Does what is due at `now`: ends an idle session ([`ConnectionError::TimedOut`]),
    /// suspects the paths that acknowledged nothing for a probe timeout
    /// ([`PathEvent::Suspected`]), declares failed the paths whose data waited too long
    /// ([`Action::ClosePath`] with [`codes::PATH_FAILED`]) and probes the paths whose flight
    /// ends in urgent bytes or a stream's last ones ([`ReinjectionConfig::probe_tails`]). Held
    /// data acks that fell due, and probes, show in [`Connection::has_control`].
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.error.is_some() {
            return;
        }
        if self.idle_deadline().is_some_and(|d| d <= now) {
            self.close(ConnectionError::TimedOut, codes::SESSION_IDLE, "idle");
            return;
        }
        let suspected: Vec<PathId> = self
            .paths
            .keys()
            .filter(|id| self.suspicion_deadline(**id).is_some_and(|d| d <= now))
            .copied()
            .collect();
        for path in suspected {
            self.suspect(path, now);
        }
        let failed: Vec<PathId> = self
            .paths
            .iter()
            .filter(|(_, p)| self.failure_deadline(p).is_some_and(|d| d <= now))
            .map(|(id, _)| *id)
            .collect();
        for path in failed {
            const REASON: &str = "no acknowledgement progress";
            self.actions.push_back(Action::ClosePath {
                path,
                code: codes::PATH_FAILED,
                reason: REASON,
            });
            self.path_down(path, REASON.into(), true, now);
        }
        let mut probed = Vec::new();
        for (id, entry) in self.paths.iter_mut() {
            if entry.probe_tail_at.is_none_or(|t| t > now) {
                continue;
            }
            entry.probe_tail_at = match entry.telemetry.tail() {
                // Look again once they may have left.
                Tail::Queued => now.checked_add(tail_probe_delay(entry.telemetry.ack_wait().1)),
                Tail::Unacked => {
                    probed.push(*id);
                    None
                }
                Tail::Acked => None,
            };
        }
        for path in probed {
            self.probe_tail(path, now);
        }
    }

    /// Follows what `path` sent with a probe: a [`Frame::Tail`] for each of the urgent streams
    /// sent there last whose bytes there are not all acknowledged, so that the peer can report
    /// a lost tail on a faster path at once; a [`Frame::Ping`] if there is none.
    fn probe_tail(&mut self, path: PathId, now: Instant) {
        let urgent = self.config.reinjection.missing_report_urgency();
        let mut tails: Vec<(Instant, u64, u64)> = self
            .streams
            .iter()
            .filter_map(|(id, s)| {
                let send = s.send.as_ref()?;
                if send.reset.is_some() || urgent.is_none_or(|u| send.meta.effective_urgency() > u)
                {
                    return None;
                }
                // Only bytes expected to have left: the probe, on the control stream, goes
                // ahead of any chunk bytes the path still queues.
                let last = send
                    .in_flight
                    .values()
                    .filter(|flight| flight.path == path && flight.expected.leaves <= now)
                    .max_by_key(|flight| flight.end)?;
                Some((last.expected.sent, *id, last.end))
            })
            .collect();
        // The latest sent first: nothing else on the path may have shown their loss yet.
        tails.sort_unstable_by(|a, b| b.cmp(a));
        tails.truncate(MAX_TAILS_PER_PROBE);
        if tails.is_empty() {
            self.control.push_back((Some(path), Frame::Ping));
        }
        for (_, stream, end) in tails {
            self.control
                .push_back((Some(path), Frame::Tail { stream, end }));
        }
        self.reinjection.tail_probes = self.reinjection.tail_probes.saturating_add(1);
    }

    /// When `path` is suspected unless an acknowledgement comes: a probe timeout after the
    /// last one, while it has data outstanding and another path could take it.
    fn suspicion_deadline(&self, path: PathId) -> Option<Instant> {
        let entry = self.paths.get(&path)?;
        if !self.config.reinjection.suspect || entry.suspected.is_some() {
            return None;
        }
        if !self.paths.iter().any(|(id, p)| *id != path && p.usable()) {
            return None;
        }
        let (unacked_since, _) = entry.telemetry.ack_wait();
        unacked_since?.checked_add(entry.telemetry.probe_timeout())
    }

    /// The path acknowledged nothing for a probe timeout: the scheduler loses it, and its bytes
    /// in flight go on the others at once. It stays up, probed by its transport, until it
    /// acknowledges again ([`Connection::poll_path`] resumes it) or its failure deadline.
    fn suspect(&mut self, path: PathId, now: Instant) {
        let Some(entry) = self.paths.get_mut(&path) else {
            return;
        };
        entry.suspected = Some(now);
        self.reinjection.suspicions = self.reinjection.suspicions.saturating_add(1);
        self.scheduler.on_path_removed(now, path);
        self.actions
            .push_back(Action::Event(PathEvent::Suspected { path }));
        self.retarget_reinjections(path, now);
        self.reinject(path, Cause::Suspicion, u64::MAX, None, now);
        self.wake_paths();
    }

    /// A suspected path acknowledged again: the scheduler has it back.
    fn resume(&mut self, path: PathId, now: Instant) {
        let Some(entry) = self.paths.get_mut(&path) else {
            return;
        };
        entry.suspected = None;
        let snapshot = entry.snapshot(path);
        let _ = self.scheduler.on_path_added(now, &snapshot);
        self.actions
            .push_back(Action::Event(PathEvent::Resumed { path }));
        self.wake_paths();
    }

    /// The usable path other than `from` whose data would arrive soonest (available paths
    /// before backups), with that delay.
    fn reinjection_target(&self, from: PathId) -> Option<(PathId, Duration)> {
        self.paths
            .iter()
            .filter(|(id, p)| **id != from && p.usable())
            .map(|(id, p)| {
                (
                    p.status != PathStatus::Available,
                    p.delivery_delay(*id),
                    *id,
                )
            })
            .min()
            .map(|(_, delay, id)| (id, delay))
    }

    /// What `target`, whose bytes land after `delay`, delivers before a repair that lands
    /// after `repair`.
    fn before_repair(&self, target: PathId, delay: Duration, repair: Duration) -> u64 {
        self.paths.get(&target).map_or(0, |p| {
            let seconds = repair.saturating_sub(delay).as_secs_f64();
            (p.snapshot(target).bandwidth.bytes_per_sec() * seconds) as u64
        })
    }

    /// Sends bytes in flight on `from` again on the path that delivers them soonest, if that
    /// beats `from`'s own repair: on suspicion every stream's; on loss the urgent streams'.
    ///
    /// A stream's bytes on a path travel as one ordered transport stream, so the receiver gets
    /// none of them past a lost packet until the path repairs it. A stream that would
    /// otherwise have all its bytes by the repair, and had a flight on the wire when the lost
    /// packet left (at `lost_sent`), has everything it handed the path since that flight sent
    /// again, if the other path delivers all of it before the repair lands (so that the stream
    /// ends sooner) and it is at most half the budget left; without such a flight the packet
    /// was not its own. Every other urgent stream has its oldest bytes on the path sent again,
    /// as many as were `lost` in all. Within the budget, urgent streams go first, then in
    /// their order of arrival; the scheduler may take a stream's bytes or decline them
    /// ([`Scheduler::on_reinjection`]).
    fn reinject(
        &mut self,
        from: PathId,
        cause: Cause,
        lost: u64,
        lost_sent: Option<Instant>,
        now: Instant,
    ) {
        let Some(repair) = self.paths.get(&from).map(|p| p.delivery_delay(from)) else {
            return;
        };
        let Some((target, delay)) = self.reinjection_target(from) else {
            return;
        };
        let config = self.config.reinjection;
        let mut left = match cause {
            Cause::Suspicion => u64::MAX,
            Cause::Loss | Cause::StreamEnd | Cause::Missing if delay >= repair => return,
            Cause::Loss | Cause::StreamEnd | Cause::Missing => {
                self.reinjection.budget_left(&config)
            }
        };
        let before_repair = self.before_repair(target, delay, repair);
        let repaired = now.checked_add(repair).unwrap_or(now);
        let urgent = |meta: &StreamMeta| match cause {
            Cause::Suspicion => true,
            Cause::Loss | Cause::StreamEnd | Cause::Missing => config
                .urgency
                .is_some_and(|u| meta.effective_urgency() <= u),
        };
        let mut order: Vec<(Urgency, u32, u64)> = self
            .streams
            .iter()
            .filter_map(|(id, s)| s.send.as_ref().map(|send| (id, send)))
            .filter(|(_, send)| {
                send.reset.is_none() && urgent(&send.meta) && send.meta.allows(target)
            })
            .map(|(id, send)| (send.meta.effective_urgency(), send.arrival, *id))
            .collect();
        order.sort_unstable();
        let mut queued_to_scheduler = false;
        // Bytes re-sent for the `lost` ones, shared by the streams (unbounded on suspicion).
        let mut lost = lost;
        for (_, _, id) in order {
            if left == 0 {
                break;
            }
            let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
                continue;
            };
            // Since when the stream's bytes on `from` are held up, if it is about to end.
            let held_up = match (cause, lost_sent) {
                (Cause::Loss, Some(at)) if send.lands_by(repaired) => {
                    match send.on_the_wire(from, at) {
                        Some(since) => Some(since),
                        None => continue,
                    }
                }
                _ => None,
            };
            let flights = match held_up {
                // At most half the budget left, so that later losses of the streams that
                // gate a page still find some.
                Some(since) => send.take_all_where((left / 2).min(before_repair), |flight| {
                    flight.path == from && flight.expected.sent >= since
                }),
                None => send.take_in_flight_where(left.min(lost), |flight| flight.path == from),
            };
            let (bytes, to_scheduler) = self.offer_reinjection(id, flights, target, cause, now);
            queued_to_scheduler |= to_scheduler;
            left = left.saturating_sub(bytes);
            if held_up.is_none() {
                lost = lost.saturating_sub(bytes);
            }
        }
        self.paths_to_wake.insert(target);
        if queued_to_scheduler {
            self.wake_paths();
        }
    }

    /// The peer reported a hole in chunk stream `transport_stream` on `from_path`, from logical
    /// offset `from` on ([`Frame::Missing`]). A report of a transport stream this end no longer
    /// remembers is stale.
    fn resend_missing(
        &mut self,
        from_path: PathId,
        transport_stream: u64,
        from: u64,
        now: Instant,
    ) {
        let holed = self.streams.iter().find_map(|(id, s)| {
            let named = s
                .send
                .as_ref()?
                .transport_streams
                .contains(&(from_path, transport_stream));
            named.then_some(*id)
        });
        if let Some(id) = holed {
            self.resend_behind_hole(from_path, id, from, now);
        }
    }

    /// The peer lacks stream `id`'s bytes on `from_path` from logical offset `from` on
    /// ([`Frame::Missing`], [`Frame::MissingTail`]): the path holds them up until it repairs
    /// the loss. An urgent stream that would otherwise have all its bytes by the repair has
    /// those bytes sent again on the path that delivers them soonest, if that beats the repair
    /// and they take at most half the budget left (as on loss); a stream that ends later gains
    /// nothing from it. A report of a stream or path this end no longer has is stale.
    fn resend_behind_hole(&mut self, from_path: PathId, id: u64, from: u64, now: Instant) {
        let config = self.config.reinjection;
        let Some(threshold) = config.missing_report_urgency() else {
            return;
        };
        let Some(repair) = self
            .paths
            .get(&from_path)
            .map(|p| p.delivery_delay(from_path))
        else {
            return;
        };
        let Some((target, delay)) = self.reinjection_target(from_path) else {
            return;
        };
        if delay >= repair {
            return;
        }
        let repaired = now.checked_add(repair).unwrap_or(now);
        let max = (self.reinjection.budget_left(&config) / 2)
            .min(self.before_repair(target, delay, repair));
        let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
            return;
        };
        if send.reset.is_some()
            || send.meta.effective_urgency() > threshold
            || !send.meta.allows(target)
            || !send.lands_by(repaired)
        {
            return;
        }
        let flights =
            send.take_all_where(max, |flight| flight.path == from_path && flight.end > from);
        if flights.is_empty() {
            return;
        }
        let (_, to_scheduler) = self.offer_reinjection(id, flights, target, Cause::Missing, now);
        self.paths_to_wake.insert(target);
        if to_scheduler {
            self.wake_paths();
        }
    }

    /// Hands `flights` of stream `id`, taken out of flight on their path, to the scheduler's
    /// choice ([`Scheduler::on_reinjection`]): re-sent on `target` ahead of any grant, queued
    /// to the scheduler, or put back as they were. Returns the bytes re-injected and whether
    /// the scheduler got any.
    fn offer_reinjection(
        &mut self,
        id: u64,
        flights: Vec<(Range<u64>, Flight)>,
        target: PathId,
        cause: Cause,
        now: Instant,
    ) -> (u64, bool) {
        let bytes: u64 = flights.iter().map(|(r, _)| r.end - r.start).sum();
        let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
            return (0, false);
        };
        let Some(from) = flights.first().map(|(_, flight)| flight.path) else {
            return (0, false);
        };
        let choice = self
            .scheduler
            .on_reinjection(now, StreamId(id), bytes, from);
        for (range, flight) in flights {
            match choice {
                Reinjection::Skip => {
                    let flight = Flight {
                        end: range.end,
                        ..flight
                    };
                    send.in_flight.insert(range.start, flight);
                }
                Reinjection::Scheduler => send.resend.insert(range),
                Reinjection::Transport => send.reinject.insert(range),
            }
        }
        let to_scheduler = choice == Reinjection::Scheduler;
        match choice {
            Reinjection::Skip => return (0, false),
            Reinjection::Scheduler => {
                let _ = self.scheduler.on_data_queued(now, StreamId(id), bytes);
            }
            Reinjection::Transport => {
                send.reinject_to = Some(target);
                self.reinjecting.insert(id);
            }
        }
        send.counters.reinjected.fetch_add(bytes, Ordering::Relaxed);
        let stats = &mut self.reinjection;
        stats.reinjected = stats.reinjected.saturating_add(bytes);
        let by_cause = match cause {
            Cause::Loss => &mut stats.on_loss,
            Cause::Suspicion => &mut stats.on_suspicion,
            Cause::StreamEnd => &mut stats.at_stream_end,
            Cause::Missing => &mut stats.on_missing,
        };
        *by_cause = by_cause.saturating_add(bytes);
        (bytes, to_scheduler)
    }

    /// XLINK's stream-end re-injection: an urgent stream whose every byte is granted, and
    /// whose last bytes are in flight on a path where they arrive later than they would if
    /// `path` sent them now, has them sent again on `path`, from the room the scheduler left
    /// it and within the re-injection budget. The stream then ends when the sooner copy lands.
    /// Returns when a flight of such a stream becomes overdue: `path` should look again then.
    fn reinject_stream_ends(
        &mut self,
        path: PathId,
        room: u64,
        sent_here: Instant,
        now: Instant,
    ) -> Option<Instant> {
        let config = self.config.reinjection;
        let threshold = config.urgency.filter(|_| config.stream_end)?;
        let here = self.paths.get(&path).map(|p| p.snapshot(path))?;
        let mut left = room.min(self.reinjection.budget_left(&config));
        if left == 0 {
            return None;
        }
        // When each path would have a lost flight re-sent: a round trip, its own recovery.
        let recovered: BTreeMap<PathId, Instant> = self
            .paths
            .iter()
            .map(|(id, p)| {
                let (_, srtt) = p.telemetry.ack_wait();
                (*id, now.checked_add(srtt).unwrap_or(now))
            })
            .collect();
        // A flight on another path is late if it should land after a copy sent here now, or
        // if its ack is overdue (lost, or its path slowed down) and a copy sent here beats its
        // path's own recovery.
        let late = |flight: &Flight| -> Option<Late> {
            let recovered = *recovered.get(&flight.path)?;
            if flight.path == path {
                return None;
            }
            let Expected { lands, overdue, .. } = flight.expected;
            if overdue <= now {
                (sent_here < recovered).then_some(Late::Overdue)
            } else {
                (lands > sent_here).then_some(Late::Lands(lands))
            }
        };
        let ending = |send: &&SendState| {
            send.reset.is_none()
                && send.all_granted()
                && send.meta.effective_urgency() <= threshold
                && send.meta.allows(path)
        };
        let next_due = self
            .streams
            .values()
            .filter_map(|s| s.send.as_ref())
            .filter(ending)
            .flat_map(|send| send.in_flight.values())
            .filter(|flight| flight.path != path)
            .map(|flight| flight.expected.overdue)
            .filter(|due| *due > now)
            .min();
        // Streams whose late bytes all land sooner here, serialization included, with how many.
        let ends: Vec<(u64, u64)> = self
            .streams
            .iter()
            .filter_map(|(id, s)| Some((*id, s.send.as_ref()?)))
            .filter(|(_, send)| ending(send))
            .filter_map(|(id, send)| {
                let bytes = send.unacked_where(|flight| late(flight).is_some());
                let last = send.in_flight.values().filter_map(&late).max();
                let serialized = Duration::try_from_secs_f64(here.bandwidth.seconds_for(bytes))
                    .unwrap_or(Duration::MAX);
                // Worth a copy only if it saves more than a round trip here.
                let done_here =
                    Late::Lands(sent_here.checked_add(serialized.saturating_add(here.srtt))?);
                (bytes > 0 && last? > done_here).then_some((id, bytes))
            })
            .collect();
        for (id, bytes) in ends {
            // Part of a stream's tail would not finish it sooner.
            if bytes > left {
                continue;
            }
            let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
                continue;
            };
            let flights = send.take_in_flight_where(bytes, |flight| late(flight).is_some());
            let (sent, _) = self.offer_reinjection(id, flights, path, Cause::StreamEnd, now);
            left = left.saturating_sub(sent);
        }
        next_due
    }

    /// Re-injections waiting for `gone` (suspected or down) go to the next best path, or to
    /// the scheduler if there is none.
    fn retarget_reinjections(&mut self, gone: PathId, now: Instant) {
        let target = self.reinjection_target(gone).map(|(id, _)| id);
        for id in self.reinjecting.clone() {
            let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
                self.reinjecting.remove(&id);
                continue;
            };
            if send.reinject_to != Some(gone) {
                continue;
            }
            // A stream kept off the next best path goes back to the scheduler instead.
            if let Some(target) = target.filter(|t| send.meta.allows(*t)) {
                send.reinject_to = Some(target);
                continue;
            }
            let mut bytes = 0;
            while let Some(range) = send.reinject.pop_front(u64::MAX) {
                bytes += range.end - range.start;
                send.resend.insert(range);
            }
            send.reinject_to = None;
            self.reinjecting.remove(&id);
            let _ = self.scheduler.on_data_queued(now, StreamId(id), bytes);
        }
        if let Some(target) = target {
            self.paths_to_wake.insert(target);
        }
    }

    /// Re-injections waiting for `path`, ahead of the scheduler's grants, within `left`.
    fn take_reinjections(
        &mut self,
        path: PathId,
        left: &mut u64,
        batch: &mut Vec<ChunkWork>,
        expected: Expected,
    ) {
        for id in self.reinjecting.clone() {
            if *left == 0 {
                break;
            }
            let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
                self.reinjecting.remove(&id);
                continue;
            };
            if send.reinject_to != Some(path) {
                continue;
            }
            let mut ranges = Vec::new();
            while *left > 0 {
                let Some(range) = send.reinject.pop_front(*left) else {
                    break;
                };
                *left -= range.end - range.start;
                ranges.push(range);
            }
            if send.reinject.is_empty() {
                send.reinject_to = None;
                self.reinjecting.remove(&id);
            }
            let urgency = send.meta.effective_urgency();
            let (work, sent) = send.send_ranges(path, ranges, expected, urgency, false);
            self.count_sent(path, sent);
            if !work.pieces.is_empty() || work.all_granted {
                push_work(batch, work);
            }
        }
    }

    /// Ends the connection with `error` and has the driver close every path with `code`.
    pub fn close(&mut self, error: ConnectionError, code: u64, reason: &'static str) {
        if self.error.is_some() {
            return;
        }
        self.fail(error);
        let paths: Vec<PathId> = self.paths.keys().copied().collect();
        for path in paths {
            self.actions
                .push_back(Action::ClosePath { path, code, reason });
        }
    }

    /// Decides a path sender's next step, with the logical streams whose transport streams on
    /// the path are done (`true`: reset them, `false`: finish them), and reports the path's
    /// fresh estimates to the scheduler.
    pub fn poll_path(&mut self, path: PathId, now: Instant) -> (Step, Vec<(u64, bool)>) {
        let Some(entry) = self.paths.get_mut(&path) else {
            return (Step::Stop, Vec::new());
        };
        let retire = std::mem::take(&mut entry.retire);
        if self.error.is_some() {
            return (Step::Stop, retire);
        }
        if let Some(since) = entry.suspected {
            let (unacked_since, _) = entry.telemetry.ack_wait();
            if unacked_since.is_some_and(|t| t <= since) {
                return (Step::Wait(None), retire);
            }
            self.resume(path, now);
        }
        let Some(entry) = self.paths.get_mut(&path) else {
            return (Step::Stop, retire);
        };
        let lost = entry.telemetry.lost_bytes();
        let newly_lost = lost.saturating_sub(entry.lost_bytes_seen);
        entry.lost_bytes_seen = lost;
        if newly_lost > 0 && self.config.reinjection.urgency.is_some() {
            let lost_sent = entry.telemetry.last_loss_sent();
            self.reinject(path, Cause::Loss, newly_lost, lost_sent, now);
        }
        let Some(entry) = self.paths.get_mut(&path) else {
            return (Step::Stop, retire);
        };
        let generation = entry.telemetry.generation();
        let snapshot = entry.snapshot(path);
        entry.idle_with_room = false;
        let mut estimates_changed = false;
        if generation != entry.generation {
            entry.generation = generation;
            let _ = self.scheduler.on_path_updated(now, &snapshot);
            estimates_changed = true;
            if entry
                .last_estimate_event
                .is_none_or(|t| now.duration_since(t) >= Duration::from_millis(100))
            {
                entry.last_estimate_event = Some(now);
                self.actions.push_back(Action::Event(PathEvent::Estimates {
                    path,
                    srtt: snapshot.srtt,
                    bandwidth_bps: snapshot.bandwidth.bytes_per_sec() * 8.0,
                    cwnd: snapshot.cwnd,
                }));
            }
        }
        if estimates_changed {
            // New estimates may move quota to another path, whose sender may be asleep.
            let idle = self
                .paths
                .iter()
                .filter(|(id, other)| **id != path && other.idle_with_room);
            self.paths_to_wake.extend(idle.map(|(id, _)| *id));
        }
        let room = snapshot
            .cwnd
            .saturating_add(AHEAD_OF_THE_WINDOW + GRANT_QUANTUM)
            .saturating_sub(snapshot.bytes_in_flight)
            .min(MAX_GRANT);
        // While bytes wait past the window, less than a quantum waits for more room.
        let room = if snapshot.bytes_in_flight > snapshot.cwnd && room < GRANT_QUANTUM {
            0
        } else {
            room
        };
        // Past the window, urgent streams may commit up to one more window: quinn's send
        // window (three windows) takes it.
        let urgent_room = snapshot
            .cwnd
            .saturating_mul(2)
            .saturating_sub(snapshot.bytes_in_flight)
            .min(MAX_GRANT);
        let wait = self.scheduler.poll_timeout();
        if room == 0 && urgent_room == 0 {
            return (Step::Wait(wait), retire);
        }
        // Fill the room in one go: schedulers that grant a packet at a time (LRF's round robin)
        // would otherwise cost a wake-up and a quinn write per packet. Consecutive grants of
        // one stream merge into one chunk.
        let mut batch: Vec<ChunkWork> = Vec::new();
        let mut left = room;
        let mut look_again = None;
        // When bytes added to the batch now land: behind what the path holds and what the
        // batch already has.
        let overdue = now
            .checked_add(
                self.paths
                    .get(&path)
                    .map_or(Duration::ZERO, |p| p.telemetry.probe_timeout()),
            )
            .unwrap_or(now);
        let expected = |left: u64| {
            let lands = arrival(now, &snapshot, room - left);
            Expected {
                sent: now,
                leaves: lands
                    .checked_sub(snapshot.one_way_delay)
                    .map_or(now, |t| t.max(now)),
                lands,
                overdue,
            }
        };
        let at = expected(left);
        self.take_reinjections(path, &mut left, &mut batch, at);
        let probe_below = self
            .config
            .reinjection
            .urgency
            .filter(|_| self.config.reinjection.probe_tails);
        // Worth a tail probe: urgent bytes (re-injected bytes are urgent ones, or a suspected
        // path's), and a stream's last bytes, which nothing of their stream follows (a
        // request, or the end of a response).
        let mut probe = probe_below.is_some() && !batch.is_empty();
        while left > 0 {
            let Some(grant) = self.scheduler.poll_send(now, path, left) else {
                // Room the scheduler leaves may finish an urgent stream sooner.
                let at = expected(left);
                look_again = self.reinject_stream_ends(path, left, at.lands, now);
                self.take_reinjections(path, &mut left, &mut batch, at);
                break;
            };
            probe |= probe_below.is_some_and(|u| grant.urgency <= u);
            left = left.saturating_sub(grant.bytes);
            let Some(work) = self.take_grant(path, grant, expected(left)) else {
                continue;
            };
            probe |= probe_below.is_some() && work.all_granted;
            if work.pieces.is_empty() && !work.all_granted {
                continue;
            }
            push_work(&mut batch, work);
        }
        if left == 0 {
            let mut urgent_left = urgent_room.saturating_sub(room);
            while let Some(grant) =
                self.scheduler
                    .poll_send_urgent(now, path, urgent_left, PAST_THE_WINDOW)
            {
                urgent_left = urgent_left.saturating_sub(grant.bytes);
                probe |= probe_below.is_some_and(|u| grant.urgency <= u);
                let Some(work) = self.take_grant(path, grant, expected(0)) else {
                    continue;
                };
                probe |= probe_below.is_some() && work.all_granted;
                if !work.pieces.is_empty() || work.all_granted {
                    push_work(&mut batch, work);
                }
            }
        }
        if !batch.is_empty() {
            if let Some(entry) = self.paths.get_mut(&path) {
                entry.telemetry.set_app_limited(false);
                if probe {
                    entry.probe_tail_at = now.checked_add(tail_probe_delay(snapshot.srtt));
                }
            }
            return (Step::Send(batch), retire);
        }
        if snapshot.room() == 0 {
            // The window is full: the path waits for acks, it is not short of data.
            return (Step::Wait(wait), retire);
        }
        if let Some(entry) = self.paths.get_mut(&path) {
            entry.telemetry.set_app_limited(true);
            entry.idle_with_room = true;
        }
        let wait = match (wait, look_again) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        (Step::Wait(wait), retire)
    }
}

/// How long after a tail's bytes leave a probe follows them when nothing else did: an
/// eighth of the path's smoothed RTT, so that the probe's acknowledgement comes after the
/// transport's time threshold for the bytes before it (nine eighths of an RTT) has passed,
/// and at least a millisecond, so that the bytes have left in packets of their own.
fn tail_probe_delay(srtt: Duration) -> Duration {
    (srtt / 8).max(Duration::from_millis(1))
}

/// Appends `work` to a path's batch; consecutive work of one stream merges into one chunk.
fn push_work(batch: &mut Vec<ChunkWork>, work: ChunkWork) {
    match batch.last_mut() {
        Some(last) if last.stream == work.stream => last.merge(work),
        _ => batch.push(work),
    }
}

/// When bytes sent now on a path land, behind `ahead` more bytes than it holds: its
/// [`PathSnapshot::delivery_delay`] plus their time at its bandwidth.
fn arrival(now: Instant, path: &PathSnapshot, ahead: u64) -> Instant {
    let serialized =
        Duration::try_from_secs_f64(path.bandwidth.seconds_for(ahead)).unwrap_or(Duration::MAX);
    now.checked_add(path.delivery_delay().saturating_add(serialized))
        .unwrap_or(now)
}

/// When bytes in flight are expected to land, as far as the sender can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Late {
    /// At this instant.
    Lands(Instant),
    /// Their ack is overdue: later than any estimate.
    Overdue,
}

#[cfg(test)]
mod tests;
