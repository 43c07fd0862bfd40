//! The multipath layer's state machine: streams, flow control, data acks and re-injection.
//!
//! Everything here is synchronous and runs under the connection's one lock; the async tasks in
//! [`connection`](crate::connection) do the I/O and call in. Peer input arrives through
//! [`State::on_chunk`] and [`State::on_frame`]; anything malformed becomes a [`ProtocolError`].

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Waker;
use std::time::{Duration, Instant};

use bytes::Bytes;
use mpquic_sched::{PathId, PathSnapshot, PathStatus, Scheduler, StreamId, StreamMeta, Urgency};
use tokio::sync::{broadcast, Notify};

use crate::config::Config;
use crate::error::{ConnectionError, ProtocolError, ReadError, WriteError};
use crate::pending_acks::PendingAcks;
use crate::reassembly::{Reassembler, ReassemblyError};
use crate::receive_window::ReceiveWindow;
use crate::send_buffer::{RangeSet, SendBuffer};
use crate::telemetry::Telemetry;
use crate::wire::{Frame, Params, MAX_VARINT};
use crate::{PathEvent, PathStats};

/// Largest grant asked of the scheduler at once, so that decisions stay close to the wire.
pub(crate) const MAX_GRANT: u64 = 64 * 1024;

/// How many closed paths [`Connection::paths`](crate::Connection::paths) still lists.
pub const CLOSED_PATHS_KEPT: usize = 16;

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

/// Bytes a stream sent on each path (shared with its [`SendStream`](crate::SendStream) so they
/// outlive the stream's state).
#[derive(Debug, Default)]
pub(crate) struct StreamCounters {
    per_path: Mutex<BTreeMap<PathId, u64>>,
    resent: AtomicU64,
    /// The peer's stop-sending code, kept here because the stream's state may be gone by the
    /// time the application writes again.
    stopped: Mutex<Option<u64>>,
}

impl StreamCounters {
    fn add(&self, path: PathId, bytes: u64) {
        let mut map = self.per_path.lock().unwrap_or_else(|e| e.into_inner());
        *map.entry(path).or_default() += bytes;
    }

    pub(crate) fn per_path(&self) -> BTreeMap<PathId, u64> {
        self.per_path
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    pub(crate) fn resent(&self) -> u64 {
        self.resent.load(Ordering::Relaxed)
    }

    pub(crate) fn stopped(&self) -> Option<u64> {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[derive(Debug)]
pub(crate) struct SendState {
    buf: SendBuffer,
    /// Everything below is acknowledged by the receiver.
    acked: u64,
    /// The first byte never granted.
    next_fresh: u64,
    /// Bytes handed to the scheduler (within flow control); `next_fresh <= released`.
    released: u64,
    resend: RangeSet,
    /// Granted and not yet acknowledged: start offset -> (end, path).
    in_flight: BTreeMap<u64, (u64, PathId)>,
    max_stream_data: u64,
    fin: Option<u64>,
    reset: Option<u64>,
    stopped: Option<u64>,
    meta: StreamMeta,
    arrival: u32,
    writer: Option<Waker>,
    pub(crate) counters: Arc<StreamCounters>,
}

impl SendState {
    fn new(id: u64, max_stream_data: u64, arrival: u32) -> Self {
        Self {
            buf: SendBuffer::default(),
            acked: 0,
            next_fresh: 0,
            released: 0,
            resend: RangeSet::default(),
            in_flight: BTreeMap::new(),
            max_stream_data,
            fin: None,
            reset: None,
            stopped: None,
            meta: StreamMeta::new(StreamId(id)),
            arrival,
            writer: None,
            counters: Arc::default(),
        }
    }

    /// Nothing is left to grant: the per-path quinn streams can be finished.
    fn all_granted(&self) -> bool {
        self.fin == Some(self.next_fresh) && self.resend.is_empty()
    }

    fn wake(&mut self) {
        if let Some(w) = self.writer.take() {
            w.wake();
        }
    }

    /// quinn priority of this stream's per-path streams: urgency bucket first, then arrival
    /// order (earlier first) unless incremental, where quinn's fairness round-robins.
    fn quinn_priority(&self) -> i32 {
        let bucket = i32::from(Urgency::LOWEST.get() - self.meta.urgency.get());
        if self.meta.incremental {
            bucket << 20
        } else {
            (bucket << 20) | (0xFFFFF - (self.arrival & 0xFFFFF) as i32)
        }
    }
}

#[derive(Debug)]
pub(crate) struct RecvState {
    reasm: Reassembler,
    /// The window end advertised to the peer.
    max_stream_data: u64,
    final_size: Option<u64>,
    /// Highest end offset counted against the connection window.
    counted_end: u64,
    /// The offset up to which this stream's counted bytes were given back to the connection
    /// window: the read offset, or `counted_end` once the bytes are discarded.
    credited: u64,
    reset: Option<u64>,
    stopped: bool,
    /// The last data ack queued (offset, fin).
    acked: (u64, bool),
    reader: Option<Waker>,
}

impl RecvState {
    fn new(window: u64) -> Self {
        Self {
            reasm: Reassembler::new(),
            max_stream_data: window,
            final_size: None,
            counted_end: 0,
            credited: 0,
            reset: None,
            stopped: false,
            acked: (0, false),
            reader: None,
        }
    }

    fn wake(&mut self) {
        if let Some(w) = self.reader.take() {
            w.wake();
        }
    }

    fn complete(&self) -> bool {
        self.final_size == Some(self.reasm.contiguous_end())
    }

    /// Drops the buffered bytes, which nobody will read, and gives the credit and the memory
    /// they held back to the connection window.
    fn discard(&mut self, window: &mut ReceiveWindow) {
        window.free(self.reasm.footprint());
        self.reasm = Reassembler::new();
        window.consume(self.counted_end - self.credited);
        self.credited = self.counted_end;
    }
}

#[derive(Debug, Default)]
pub(crate) struct Stream {
    pub(crate) send: Option<SendState>,
    pub(crate) recv: Option<RecvState>,
}

/// One path as the connection sees it.
#[derive(Debug)]
pub(crate) struct PathEntry {
    pub(crate) conn: quinn::Connection,
    pub(crate) telemetry: Arc<Telemetry>,
    pub(crate) status: PathStatus,
    pub(crate) local: SocketAddr,
    pub(crate) remote: SocketAddr,
    pub(crate) control: Arc<tokio::sync::Mutex<quinn::SendStream>>,
    /// Wakes the path's sender: data was queued or something changed.
    pub(crate) wake: Arc<Notify>,
    /// Logical streams whose per-path quinn streams are done: `true` to reset them (the
    /// stream was reset), `false` to finish them (nothing more will be sent).
    pub(crate) retire: Vec<(u64, bool)>,
    pub(crate) bytes_sent: u64,
    pub(crate) bytes_received: u64,
    pub(crate) last_estimate_event: Option<Instant>,
    pub(crate) generation: u64,
    /// The sender last found window room and nothing to send: a change of the scheduler's
    /// plans on another path (PriorityBucket re-allocating) must wake it.
    pub(crate) idle_with_room: bool,
    /// The sender waits in a quinn write: quinn's buffer for this path is full, so the path
    /// has no room whatever its congestion window says (bytes waiting in quinn's buffer are
    /// not yet in flight).
    pub(crate) writer_blocked: bool,
    /// The datagram bytes received on this path last reported to the peer.
    pub(crate) reported_received: u64,
}

impl PathEntry {
    /// The path's numbers for [`Connection::paths`](crate::Connection::paths).
    pub(crate) fn stats(&self, id: PathId) -> PathStats {
        let snapshot = self.telemetry.snapshot(id, self.status);
        let t = self.telemetry.lock();
        PathStats {
            id,
            local: self.local,
            remote: self.remote,
            status: self.status,
            srtt: snapshot.srtt,
            min_rtt: snapshot.min_rtt,
            one_way_delay: snapshot.one_way_delay,
            bandwidth_bps: snapshot.bandwidth.bytes_per_sec() * 8.0,
            cwnd: snapshot.cwnd,
            bytes_in_flight: snapshot.bytes_in_flight,
            bytes_sent: self.bytes_sent,
            bytes_received: self.bytes_received,
            lost_bytes: t.lost_bytes,
            congestion_events: t.congestion_events,
        }
    }

    /// What the scheduler sees of this path.
    pub(crate) fn snapshot(&self, id: PathId) -> PathSnapshot {
        let mut snapshot = self.telemetry.snapshot(id, self.status);
        if self.writer_blocked {
            snapshot.bytes_in_flight = snapshot.bytes_in_flight.max(snapshot.cwnd);
        }
        snapshot
    }
}

/// The chunks one grant turned into.
#[derive(Debug)]
pub(crate) struct ChunkWork {
    pub(crate) stream: u64,
    pub(crate) priority: i32,
    pub(crate) pieces: Vec<(u64, Vec<Bytes>)>,
    /// No more bytes of this stream will be granted unless a path fails.
    pub(crate) all_granted: bool,
}

impl ChunkWork {
    /// Appends a later grant of the same stream, joining byte-contiguous pieces.
    fn merge(&mut self, later: ChunkWork) {
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

/// What a path's sender does next.
#[derive(Debug)]
pub(crate) enum Step {
    Stop,
    Send(Vec<ChunkWork>),
    Wait(Option<Instant>),
}

#[derive(Debug)]
pub(crate) struct State {
    pub(crate) side: Side,
    pub(crate) config: Arc<Config>,
    pub(crate) scheduler: Box<dyn Scheduler>,
    pub(crate) local_params: Params,
    pub(crate) peer_params: Params,
    /// The paths that are up; a path that goes down leaves, with its tasks and its quinn
    /// connection, and its last numbers go to `closed_paths`.
    pub(crate) paths: BTreeMap<PathId, PathEntry>,
    /// The last numbers of the most recently closed paths, oldest first, at most
    /// [`CLOSED_PATHS_KEPT`].
    pub(crate) closed_paths: VecDeque<PathStats>,
    pub(crate) streams: BTreeMap<u64, Stream>,
    next_local_seq: [u64; 2],
    peer_max_streams: [u64; 2],
    remote_next_seq: [u64; 2],
    local_max_streams: [u64; 2],
    pub(crate) incoming: [VecDeque<u64>; 2],
    send_max_data: u64,
    released_total: u64,
    receive_window: ReceiveWindow,
    /// Frames to send, with the path they must go on if any.
    pub(crate) control: VecDeque<(Option<PathId>, Frame)>,
    pending_acks: PendingAcks,
    pending_max_stream_data: BTreeMap<u64, u64>,
    max_streams_dirty: [bool; 2],
    arrivals: u32,
    pub(crate) error: Option<ConnectionError>,
    /// When the peer or the application last did something with the session (see
    /// [`State::idle_deadline`]).
    last_activity: Instant,
    pub(crate) events: broadcast::Sender<PathEvent>,
    /// The server's next path id.
    pub(crate) next_path_id: u32,
}

impl State {
    pub(crate) fn new(
        side: Side,
        config: Arc<Config>,
        local: Params,
        peer: Params,
        now: Instant,
    ) -> Self {
        let scheduler = (config.scheduler)();
        Self {
            side,
            scheduler,
            local_params: local,
            peer_params: peer,
            paths: BTreeMap::new(),
            closed_paths: VecDeque::new(),
            streams: BTreeMap::new(),
            next_local_seq: [0; 2],
            peer_max_streams: [peer.max_bidi_streams, peer.max_uni_streams],
            remote_next_seq: [0; 2],
            local_max_streams: [local.max_bidi_streams, local.max_uni_streams],
            incoming: [VecDeque::new(), VecDeque::new()],
            send_max_data: peer.max_data,
            released_total: 0,
            receive_window: ReceiveWindow::new(local.max_data),
            control: VecDeque::new(),
            pending_acks: PendingAcks::default(),
            pending_max_stream_data: BTreeMap::new(),
            max_streams_dirty: [false; 2],
            arrivals: 0,
            error: None,
            last_activity: now,
            events: broadcast::channel(256).0,
            next_path_id: 0,
            config,
        }
    }

    pub(crate) fn params(config: &Config) -> Params {
        Params {
            max_data: config.receive_window,
            max_stream_data: config.stream_receive_window,
            max_bidi_streams: config.max_concurrent_bidi_streams,
            max_uni_streams: config.max_concurrent_uni_streams,
        }
    }

    fn wake_paths(&self) {
        for path in self.paths.values() {
            path.wake.notify_one();
        }
    }

    /// The up path with the lowest one-way delay towards the peer: where acks and other
    /// control frames go ([SEC]'s uplink choice).
    pub(crate) fn control_path(&self) -> Option<PathId> {
        self.paths
            .iter()
            .min_by_key(|(_, p)| {
                let t = p.telemetry.lock();
                (
                    p.status != PathStatus::Available,
                    t.one_way.estimate(&t.rtt),
                )
            })
            .map(|(id, _)| *id)
    }

    /// When the session ends for idleness: its idle timeout after the last stream data, frame
    /// or stream operation, once no stream is open. quinn's keep-alives hold a path open
    /// however long nothing happens on it, so the session keeps its own clock.
    pub(crate) fn idle_deadline(&self) -> Option<Instant> {
        self.streams
            .is_empty()
            .then(|| self.last_activity + self.config.idle_timeout)
    }

    // ---- streams opened and accepted here ----

    /// Opens a local stream if the peer's limit allows.
    pub(crate) fn open(&mut self, uni: bool, now: Instant) -> Option<u64> {
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
        let send = SendState::new(id, self.peer_params.max_stream_data, self.arrivals);
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

    pub(crate) fn accept(&mut self, uni: bool) -> Option<u64> {
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

    pub(crate) fn send_counters(&self, id: u64) -> Option<Arc<StreamCounters>> {
        Some(self.streams.get(&id)?.send.as_ref()?.counters.clone())
    }

    fn conn_error<T>(&self) -> Result<T, ConnectionError> {
        Err(self.error.clone().unwrap_or(ConnectionError::LocallyClosed))
    }

    /// Copies as much of `data` as the stream's send buffer takes; `Ok(0)` with a stored waker
    /// means "full, try again when woken".
    pub(crate) fn write(
        &mut self,
        id: u64,
        data: &[u8],
        waker: &Waker,
        now: Instant,
    ) -> Result<usize, WriteError> {
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
            send.writer = Some(waker.clone());
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

    pub(crate) fn finish(&mut self, id: u64, now: Instant) -> Result<(), WriteError> {
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

    pub(crate) fn reset(&mut self, id: u64, code: u64, now: Instant) -> Result<(), WriteError> {
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
        send.in_flight.clear();
        send.wake();
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

    /// Tells every path's sender that the stream's quinn streams are done.
    fn retire(&mut self, id: u64, reset: bool) {
        for path in self.paths.values_mut() {
            path.retire.push((id, reset));
            path.wake.notify_one();
        }
    }

    /// Sets a sending stream's RFC 9218 urgency (0 to 7) and incremental flag.
    pub(crate) fn set_urgency(
        &mut self,
        id: u64,
        urgency: u8,
        incremental: bool,
        now: Instant,
    ) -> Result<(), WriteError> {
        let urgency = Urgency::new(urgency).map_err(|_| WriteError::InvalidUrgency(urgency))?;
        self.set_meta(
            id,
            |meta| {
                meta.urgency = urgency;
                meta.incremental = incremental;
            },
            now,
        )
    }

    /// Tells the scheduler a sending stream's total size.
    pub(crate) fn set_size_hint(
        &mut self,
        id: u64,
        bytes: u64,
        now: Instant,
    ) -> Result<(), WriteError> {
        self.set_meta(id, |meta| meta.size = Some(bytes), now)
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
        stream: StreamId,
        bytes: u64,
    ) -> Option<ChunkWork> {
        let send = self.streams.get_mut(&stream.0)?.send.as_mut()?;
        if send.reset.is_some() {
            return None;
        }
        let mut budget = bytes;
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
        let mut pieces = Vec::with_capacity(ranges.len());
        let mut sent = 0;
        for range in ranges {
            let start = range.start.max(send.acked);
            if start >= range.end {
                continue;
            }
            send.in_flight.insert(start, (range.end, path));
            sent += range.end - start;
            pieces.push((start, send.buf.slice(start..range.end)));
        }
        send.counters.add(path, sent);
        let work = ChunkWork {
            stream: stream.0,
            priority: send.quinn_priority(),
            pieces,
            all_granted: send.all_granted(),
        };
        if let Some(entry) = self.paths.get_mut(&path) {
            entry.bytes_sent += sent;
        }
        Some(work)
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
            while let Some(entry) = send.in_flight.first_entry() {
                let (end, _) = *entry.get();
                if end <= offset {
                    entry.remove();
                } else if *entry.key() < offset {
                    let (start, (end, path)) = entry.remove_entry();
                    let _ = start;
                    send.in_flight.insert(offset, (end, path));
                    break;
                } else {
                    break;
                }
            }
            send.wake();
        }
        if fin && send.fin == Some(offset) {
            stream.send = None;
            self.scheduler.on_stream_closed(now, StreamId(id));
            self.retire(id, false);
            self.maybe_remove(id);
        }
        Ok(())
    }

    // ---- the receiving half ----

    /// A chunk arrived on `path`.
    pub(crate) fn on_chunk(
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
            entry.bytes_received = entry.bytes_received.saturating_add(len);
        }
        if self.config.delivery_reports && self.paths.len() > 1 {
            self.pending_acks.note_arrival(now);
        }
        if !self.peer_stream(id, false, now)? {
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
        recv.wake();
        Ok(())
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
    /// stream, `Err` reset or closed; `None` outer means "wait" (the waker is stored).
    pub(crate) fn read(
        &mut self,
        id: u64,
        max: usize,
        waker: &Waker,
    ) -> Option<Result<Option<Bytes>, ReadError>> {
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
        recv.reader = Some(waker.clone());
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
    pub(crate) fn stop(&mut self, id: u64, code: u64) -> Result<(), ReadError> {
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

    pub(crate) fn on_frame(
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
                recv.wake();
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
                let entry = self.paths.get(&PathId(path));
                if let Some(entry) = entry.filter(|_| self.config.delivery_credit()) {
                    let stats = entry.conn.stats();
                    entry.telemetry.on_delivery_report(
                        stats.udp_tx.bytes,
                        bytes,
                        stats.path.lost_bytes,
                    );
                    // quinn may be waiting for its own acks with a full buffer, where the
                    // path's sender cannot reach it: setting the send window wakes it to send
                    // into the credited window.
                    let cwnd = entry.telemetry.lock().cwnd;
                    entry
                        .conn
                        .set_send_window(crate::connection::send_window_target(cwnd));
                }
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
        recv.wake();
        let stopped = recv.stopped;
        recv.discard(&mut self.receive_window);
        // Tell the sender its reset arrived, so it can forget the stream.
        self.pending_acks.insert(id, final_size, true, now);
        if stopped {
            self.end_recv(id);
        }
        Ok(())
    }

    pub(crate) fn apply_path_status(&mut self, path: PathId, status: PathStatus, now: Instant) {
        let Some(entry) = self.paths.get_mut(&path) else {
            return;
        };
        if entry.status == status {
            return;
        }
        entry.status = status;
        let snapshot = entry.snapshot(path);
        let _ = self.scheduler.on_path_updated(now, &snapshot);
        let _ = self.events.send(PathEvent::Status { path, status });
        self.wake_paths();
    }

    /// Frames due to go out at `now`, with the path each must take (`None`: the control path).
    /// Held data acks go along with any other frame (see [`PendingAcks`]).
    pub(crate) fn drain_control(&mut self, now: Instant) -> Vec<(Option<PathId>, Frame)> {
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
            let received = entry.conn.stats().udp_rx.bytes;
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
    pub(crate) fn has_control(&self, now: Instant) -> bool {
        self.other_control() || self.pending_acks.due().is_some_and(|d| d <= now)
    }

    /// When held data acks fall due, if any are held.
    pub(crate) fn control_deadline(&self) -> Option<Instant> {
        self.pending_acks.due()
    }

    /// Whether the control task should look again: frames are due, or acks started to be
    /// held and it must set its timer.
    pub(crate) fn control_wanted(&mut self, now: Instant) -> bool {
        let fresh = self.pending_acks.announce();
        fresh || self.has_control(now)
    }

    /// Control frames other than data acks, which never wait.
    fn other_control(&self) -> bool {
        !self.control.is_empty()
            || !self.pending_max_stream_data.is_empty()
            || self.receive_window.has_update()
            || self.max_streams_dirty.iter().any(|d| *d)
    }

    // ---- paths ----

    /// A path is gone: re-send what it carried and was not acknowledged on the others, and
    /// repeat the control state it may have lost.
    pub(crate) fn on_path_down(&mut self, path: PathId, reason: String, now: Instant) {
        let Some(mut entry) = self.paths.remove(&path) else {
            return;
        };
        // Its sender may be asleep: wake it to find the path gone and end.
        entry.wake.notify_one();
        entry.status = PathStatus::Down;
        if self.closed_paths.len() == CLOSED_PATHS_KEPT {
            self.closed_paths.pop_front();
        }
        self.closed_paths.push_back(entry.stats(path));
        self.scheduler.on_path_removed(now, path);
        let _ = self.events.send(PathEvent::Down {
            path,
            reason: reason.clone(),
        });
        tracing::info!(path = path.0, %reason, "path down");
        let ids: Vec<u64> = self.streams.keys().copied().collect();
        for id in ids {
            let Some(stream) = self.streams.get_mut(&id) else {
                continue;
            };
            if let Some(send) = stream.send.as_mut() {
                let lost: Vec<u64> = send
                    .in_flight
                    .iter()
                    .filter(|(_, (_, p))| *p == path)
                    .map(|(start, _)| *start)
                    .collect();
                let mut bytes = 0;
                for start in lost {
                    if let Some((end, _)) = send.in_flight.remove(&start) {
                        let start = start.max(send.acked);
                        if start < end {
                            send.resend.insert(start..end);
                            bytes += end - start;
                        }
                    }
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

    /// Ends the connection: every waiting reader and writer learns `error`.
    pub(crate) fn fail(&mut self, error: ConnectionError) {
        if self.error.is_some() {
            return;
        }
        self.error = Some(error);
        for stream in self.streams.values_mut() {
            if let Some(s) = stream.send.as_mut() {
                s.wake();
            }
            if let Some(r) = stream.recv.as_mut() {
                r.wake();
            }
        }
        self.wake_paths();
    }

    /// The path's sender started or stopped waiting in a quinn write: tell the scheduler, and
    /// when the path fills, wake the others (a lowest-RTT-first scheduler now lets them send).
    pub(crate) fn set_writer_blocked(&mut self, path: PathId, blocked: bool, now: Instant) {
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
            for (id, other) in &self.paths {
                if *id != path {
                    other.wake.notify_one();
                }
            }
        }
    }

    /// Declares `path` failed if its data has waited too long for an acknowledgement
    /// (`path_failure_rtts` smoothed RTTs, at least `path_failure_floor`). Returns `None` once
    /// the path is down, else when to check again (`Some(None)`: nothing is outstanding).
    pub(crate) fn check_failure(&mut self, path: PathId, now: Instant) -> Option<Option<Instant>> {
        let entry = self.paths.get(&path)?;
        if self.error.is_some() {
            return None;
        }
        let (unacked_since, srtt) = {
            let t = entry.telemetry.lock();
            (t.unacked_since, t.rtt.srtt())
        };
        let timeout = (srtt * self.config.path_failure_rtts).max(self.config.path_failure_floor);
        let Some(deadline) = unacked_since.map(|since| since + timeout) else {
            return Some(None);
        };
        if now < deadline {
            return Some(Some(deadline));
        }
        entry.conn.close(
            quinn::VarInt::from_u64(crate::error::codes::PATH_FAILED).unwrap_or(quinn::VarInt::MAX),
            b"no acknowledgement progress",
        );
        self.on_path_down(path, "no acknowledgement progress".into(), now);
        None
    }

    /// Decides a path sender's next step and reports the path's fresh estimates to the scheduler.
    pub(crate) fn next_step(&mut self, path: PathId, now: Instant) -> (Step, Vec<(u64, bool)>) {
        let Some(entry) = self.paths.get_mut(&path) else {
            return (Step::Stop, Vec::new());
        };
        let retire = std::mem::take(&mut entry.retire);
        if self.error.is_some() {
            return (Step::Stop, retire);
        }
        let generation = entry.telemetry.lock().generation;
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
                let _ = self.events.send(PathEvent::Estimates {
                    path,
                    srtt: snapshot.srtt,
                    bandwidth_bps: snapshot.bandwidth.bytes_per_sec() * 8.0,
                    cwnd: snapshot.cwnd,
                });
            }
        }
        if estimates_changed {
            // New estimates may move quota to another path, whose sender may be asleep.
            for (id, other) in &self.paths {
                if *id != path && other.idle_with_room {
                    other.wake.notify_one();
                }
            }
        }
        let room = snapshot.room().min(MAX_GRANT);
        let wait = self.scheduler.poll_timeout();
        if room == 0 {
            return (Step::Wait(wait), retire);
        }
        // Fill the room in one go: schedulers that grant a packet at a time (LRF's round robin)
        // would otherwise cost a wake-up and a quinn write per packet. Consecutive grants of
        // one stream merge into one chunk.
        let mut batch: Vec<ChunkWork> = Vec::new();
        let mut left = room;
        while left > 0 {
            let Some(grant) = self.scheduler.poll_send(now, path, left) else {
                break;
            };
            left = left.saturating_sub(grant.bytes);
            let Some(work) = self.take_grant(path, grant.stream, grant.bytes) else {
                continue;
            };
            if work.pieces.is_empty() && !work.all_granted {
                continue;
            }
            match batch.last_mut() {
                Some(last) if last.stream == work.stream => last.merge(work),
                _ => batch.push(work),
            }
        }
        if !batch.is_empty() {
            if let Some(entry) = self.paths.get(&path) {
                entry.telemetry.lock().app_limited = false;
            }
            return (Step::Send(batch), retire);
        }
        if let Some(entry) = self.paths.get_mut(&path) {
            entry.telemetry.lock().app_limited = true;
            entry.idle_with_room = true;
        }
        (Step::Wait(wait), retire)
    }
}

#[cfg(test)]
mod tests;
