//! A multipath connection: the public handle and the tasks that drive each path.
//!
//! The multipath protocol itself is [`mpquic_proto::Connection`]; this module drives it over
//! quinn. Every path is a quinn connection with five tasks: a sender that asks the core what to
//! send whenever the path's congestion window has room, a receiver of chunk streams, a reader of
//! the control stream, a writer of the control frames the core routes to the path, and a
//! watcher that turns the quinn connection's end into "path down". One more task per connection,
//! the driver, runs the core's timers and takes its control frames (data acks, credits, fins).

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future as _;
use std::net::SocketAddr;
use std::ops::{Deref, DerefMut};
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use mpquic_proto::wire::FrameDecoder;
use mpquic_proto::{Action, ChunkWork, PathCounters, PathEvent, Step};
use mpquic_sched::{Lead, PathId, PathSet, PathStatus, Priority, StreamId};
use quinn::VarInt;
use tokio::sync::{broadcast, mpsc, Notify};
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::chunk_limit::ChunkStreamLimit;
use crate::config::{Config, PathConfig};
use crate::endpoint::{Dial, EndpointInner};
use crate::error::{
    codes, varint, ConnectionError, OpenStreamError, PathError, ProtocolError, ReadError,
    ReadFrameError, SetupError, WriteError,
};
use crate::path_events::PathEvents;
use crate::session;
use crate::stream::{RecvStream, SendStream};
use crate::telemetry::{CoreTelemetry, ReceivedBytes, Telemetry};
use crate::tls::ClientConfig;
use crate::wire::{self, Frame, Params, SessionId};
use crate::Side;

/// The quinn priority of a path's control stream: above every chunk stream's
/// ([`mpquic_proto::ChunkWork::priority`] is at most `7 << 20 | 0xFFFFF`). Data acks, fins and
/// credits are a few bytes that gate delivery; at quinn's default of 0 they waited behind all
/// the data buffered on their path, and a page's objects completed only when the control path
/// ran out of data (found by the simulated driver, `tests/sim.rs`).
pub(crate) const CONTROL_PRIORITY: i32 = i32::MAX;

/// How many closed paths [`Connection::paths`] still lists.
pub const CLOSED_PATHS_KEPT: usize = 16;

/// One path's numbers, from [`Connection::paths`].
#[derive(Debug, Clone, PartialEq)]
pub struct PathStats {
    /// The path.
    pub id: PathId,
    /// Local address.
    pub local: SocketAddr,
    /// Remote address.
    pub remote: SocketAddr,
    /// Available, backup or down.
    pub status: PathStatus,
    /// Smoothed RTT.
    pub srtt: Duration,
    /// Smallest RTT seen.
    pub min_rtt: Duration,
    /// One-way delay towards the peer (estimated).
    pub one_way_delay: Duration,
    /// Estimated bandwidth in bits per second.
    pub bandwidth_bps: f64,
    /// Congestion window in bytes.
    pub cwnd: u64,
    /// Bytes in flight.
    pub bytes_in_flight: u64,
    /// Stream bytes sent on this path (re-sends included).
    pub bytes_sent: u64,
    /// Stream bytes received on this path.
    pub bytes_received: u64,
    /// Bytes quinn declared lost.
    pub lost_bytes: u64,
    /// Congestion events.
    pub congestion_events: u64,
    /// The largest UDP payload quinn sends on this path now (its path MTU discovery's result).
    pub mtu: u16,
    /// UDP datagrams quinn sent on this path.
    pub datagrams_sent: u64,
    /// Their UDP payload bytes: headers, frames and stream bytes, re-sends included.
    pub datagram_bytes_sent: u64,
}

/// One path's transport: its quinn connection and what the driver keeps beside it.
#[derive(Debug)]
pub(crate) struct QuinnPath {
    pub(crate) conn: quinn::Connection,
    pub(crate) telemetry: Arc<Telemetry>,
    local: SocketAddr,
    /// Encoded control frames for the path's control writer ([`write_control`]).
    control: mpsc::Sender<Vec<u8>>,
    /// Wakes the path's sender.
    wake: Arc<Notify>,
}

/// The multipath core and the quinn side of each path, under one lock.
pub(crate) struct Inner {
    pub(crate) core: mpquic_proto::Connection,
    pub(crate) config: Arc<Config>,
    pub(crate) paths: BTreeMap<PathId, QuinnPath>,
    /// The last numbers of the most recently closed paths, oldest first, at most
    /// [`CLOSED_PATHS_KEPT`].
    closed_paths: VecDeque<PathStats>,
    readers: HashMap<u64, Waker>,
    writers: HashMap<u64, Waker>,
    events: broadcast::Sender<PathEvent>,
    /// Failed paths for the driver to open again ([`rejoin`]).
    rejoins: Vec<Rejoin>,
}

/// A path the core declared failed, to open again from the same local address (both drivers).
#[derive(Debug)]
pub(crate) struct Rejoin {
    pub(crate) local: SocketAddr,
    pub(crate) remote: SocketAddr,
    /// How long one attempt (handshake and join) may take: four of the path's last smoothed
    /// RTTs, within 0.2-2 s.
    pub(crate) attempt: Duration,
}

impl Rejoin {
    pub(crate) fn new(local: SocketAddr, remote: SocketAddr, srtt: Duration) -> Self {
        Self {
            local,
            remote,
            attempt: (srtt * 4).clamp(Duration::from_millis(200), Duration::from_secs(2)),
        }
    }
}

/// How long a client keeps opening a failed path again before it gives up.
pub(crate) const REJOIN_FOR: Duration = Duration::from_secs(30);

impl Inner {
    /// A connection of `side`, with the limits both sides announced.
    pub(crate) fn new(side: Side, config: Arc<Config>, local: Params, peer: Params) -> Self {
        let scheduler = (config.scheduler)();
        let core = mpquic_proto::Connection::new(
            side,
            config.transport(),
            scheduler,
            local,
            peer,
            Instant::now(),
        );
        Self {
            core,
            config,
            paths: BTreeMap::new(),
            closed_paths: VecDeque::new(),
            readers: HashMap::new(),
            writers: HashMap::new(),
            events: broadcast::channel(256).0,
            rejoins: Vec::new(),
        }
    }

    /// Why the connection is over, if it is.
    pub(crate) fn error(&self) -> Option<ConnectionError> {
        self.core.error().cloned()
    }

    /// Writes to a stream; a full buffer (`Ok(0)`) keeps `waker` for when it drains.
    pub(crate) fn write(
        &mut self,
        id: u64,
        data: &[u8],
        waker: &Waker,
    ) -> Result<usize, WriteError> {
        let written = self.core.write(id, data, Instant::now())?;
        if written == 0 {
            self.writers.insert(id, waker.clone());
        }
        Ok(written)
    }

    /// Reads a stream; `None` keeps `waker` for when there is something to read.
    pub(crate) fn read(
        &mut self,
        id: u64,
        max: usize,
        waker: &Waker,
    ) -> Option<Result<Option<bytes::Bytes>, ReadError>> {
        let result = self.core.read(id, max);
        if result.is_none() {
            self.readers.insert(id, waker.clone());
        }
        result
    }

    /// A path's numbers: the core's counters and status with the transport's estimates.
    /// The peer's address on the lowest-numbered path that is up, else on the last path closed.
    fn remote_address(&self) -> SocketAddr {
        match self.paths.values().next() {
            Some(path) => path.conn.remote_address(),
            None => self
                .closed_paths
                .back()
                .map_or(SocketAddr::from(([0, 0, 0, 0], 0)), |p| p.remote),
        }
    }

    fn path_stats(
        &self,
        id: PathId,
        status: PathStatus,
        counters: PathCounters,
    ) -> Option<PathStats> {
        let path = self.paths.get(&id)?;
        let snapshot = path.telemetry.snapshot(id, status);
        // Before the telemetry lock: quinn takes its own lock and then the telemetry's.
        let remote = path.conn.remote_address();
        let quinn = path.conn.stats();
        let t = path.telemetry.lock();
        Some(PathStats {
            id,
            local: path.local,
            remote,
            status,
            srtt: snapshot.srtt,
            min_rtt: snapshot.min_rtt,
            one_way_delay: snapshot.one_way_delay,
            bandwidth_bps: snapshot.bandwidth.bytes_per_sec() * 8.0,
            cwnd: snapshot.cwnd,
            bytes_in_flight: snapshot.bytes_in_flight,
            bytes_sent: counters.bytes_sent,
            bytes_received: counters.bytes_received,
            lost_bytes: t.lost_bytes,
            congestion_events: t.congestion_events,
            mtu: quinn.path.current_mtu,
            datagrams_sent: quinn.udp_tx.datagrams,
            datagram_bytes_sent: quinn.udp_tx.bytes,
        })
    }

    /// Carries out what the core asks for: wake-ups, path closes, events, delivery credit.
    fn dispatch(&mut self) {
        while let Some(action) = self.core.poll_action() {
            match action {
                Action::Event(event) => {
                    let _ = self.events.send(event);
                }
                Action::PathDown {
                    path,
                    reason,
                    counters,
                    failed,
                } => {
                    tracing::info!(path = path.0, %reason, "path down");
                    if let Some(stats) = self.path_stats(path, PathStatus::Down, counters) {
                        if self.closed_paths.len() == CLOSED_PATHS_KEPT {
                            self.closed_paths.pop_front();
                        }
                        self.closed_paths.push_back(stats);
                    }
                    if let Some(gone) = self.paths.remove(&path) {
                        // Its sender may be asleep: wake it to find the path gone and end.
                        gone.wake.notify_one();
                        if failed && self.core.side() == Side::Client {
                            let srtt = gone.telemetry.lock().rtt.srtt();
                            self.rejoins.push(Rejoin::new(
                                SocketAddr::new(gone.local.ip(), 0),
                                gone.conn.remote_address(),
                                srtt,
                            ));
                        }
                    }
                    let _ = self.events.send(PathEvent::Down { path, reason });
                }
                Action::WakePath(path) => {
                    if let Some(path) = self.paths.get(&path) {
                        path.wake.notify_one();
                    }
                }
                Action::WakeReader(id) => {
                    if let Some(waker) = self.readers.remove(&id) {
                        waker.wake();
                    }
                }
                Action::WakeWriter(id) => {
                    if let Some(waker) = self.writers.remove(&id) {
                        waker.wake();
                    }
                }
                Action::ClosePath { path, code, reason } => {
                    if let Some(path) = self.paths.get(&path) {
                        path.conn.close(varint(code), reason.as_bytes());
                    }
                }
                Action::DeliveryReport { path, received } => {
                    if let Some(path) = self.paths.get(&path) {
                        let window = path.telemetry.on_peer_report(&path.conn.stats(), received);
                        path.conn.set_send_window(window);
                    }
                }
            }
        }
    }

    /// Takes the control frames due at `now` and queues them, encoded, to their paths' writers,
    /// unless a writer has no room: then they stay in the core, which coalesces them.
    fn flush_control(&mut self, now: Instant) {
        let room = self.paths.values().all(|p| p.control.capacity() > 0);
        if !room || !self.core.has_control(now) {
            return;
        }
        let default_path = self.core.control_path();
        let mut batches: BTreeMap<PathId, Vec<u8>> = BTreeMap::new();
        for (target, frame) in self.core.poll_control(now) {
            let Some(path) = target.or(default_path) else {
                continue;
            };
            let buf = batches.entry(path).or_default();
            if let Err(e) = frame.encode(buf) {
                tracing::warn!(%e, ?frame, "cannot encode a control frame");
            }
        }
        for (path, buf) in batches {
            if let Some(entry) = self.paths.get(&path) {
                // Room was checked above, and only the driver queues.
                let _ = entry.control.try_send(buf);
            }
        }
    }

    /// Ends the connection with `error` and closes every path with `code` and `reason`.
    fn close_all(&mut self, error: ConnectionError, code: u64, reason: &[u8]) {
        self.core.fail(error);
        for path in self.paths.values() {
            path.conn.close(varint(code), reason);
        }
    }
}

/// The lock on a connection's [`Inner`]; what the core asked for is carried out when it is
/// released.
pub(crate) struct StateGuard<'a>(MutexGuard<'a, Inner>);

impl Deref for StateGuard<'_> {
    type Target = Inner;

    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl DerefMut for StateGuard<'_> {
    fn deref_mut(&mut self) -> &mut Inner {
        &mut self.0
    }
}

impl Drop for StateGuard<'_> {
    fn drop(&mut self) {
        self.0.dispatch();
    }
}

pub(crate) struct Shared {
    state: Mutex<Inner>,
    /// Wakes the driver ([`drive`]): control frames may be due, or a deadline may have moved.
    driver_wake: Notify,
    /// Streams became acceptable or openable, or the connection ended.
    pub(crate) changed: Notify,
    pub(crate) session: SessionId,
    pub(crate) secret: [u8; session::SECRET_LEN],
    /// The sockets of the endpoint it belongs to (paths of a client bind there).
    pub(crate) endpoint: Arc<EndpointInner>,
    /// How a client opens more paths; `None` on the server.
    dialer: Option<Dialer>,
}

/// What a client's further paths connect with: the configuration of its first path and the
/// server name that path verified.
pub(crate) struct Dialer {
    pub(crate) config: ClientConfig,
    pub(crate) server_name: String,
}

impl Shared {
    pub(crate) fn new(
        state: Inner,
        session: SessionId,
        secret: [u8; session::SECRET_LEN],
        endpoint: Arc<EndpointInner>,
        dialer: Option<Dialer>,
    ) -> Arc<Self> {
        let shared = Arc::new(Self {
            state: Mutex::new(state),
            driver_wake: Notify::new(),
            changed: Notify::new(),
            session,
            secret,
            endpoint,
            dialer,
        });
        let span = tracing::debug_span!("mpquic", session = session.0);
        tokio::spawn(drive(shared.clone()).instrument(span));
        shared
    }

    pub(crate) fn lock(&self) -> StateGuard<'_> {
        // State stays consistent between statements; keep going after a panic elsewhere.
        StateGuard(self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Wakes whoever may care after the state changed: the driver, and the application's
    /// opens, accepts and waits for the end.
    pub(crate) fn poke(&self) {
        self.driver_wake.notify_one();
        self.changed.notify_waiters();
    }

    /// Opens the path `config` describes and joins it to this session (client only).
    pub(crate) async fn join_path(
        self: &Arc<Self>,
        config: &PathConfig,
    ) -> Result<PathId, PathError> {
        let PathConfig {
            local,
            remote,
            status,
            ref congestion,
        } = *config;
        if status == PathStatus::Down {
            return Err(PathError::StatusDown);
        }
        let dialer = self.dialer.as_ref().ok_or(PathError::NotClient)?;
        let params = {
            let state = self.lock();
            if let Some(e) = state.error() {
                return Err(PathError::Closed(e));
            }
            if state.paths.len() >= state.config.max_paths {
                return Err(PathError::TooManyPaths(state.config.max_paths));
            }
            state.config.params()
        };
        let telemetry = dialer.config.transport.new_telemetry();
        let (connecting, local) = self.endpoint.start_quinn(
            &dialer.config,
            Dial::Join(congestion.as_ref()),
            local,
            remote,
            &dialer.server_name,
            &telemetry,
        )?;
        let conn = connecting.await?;
        let exported = session::exporter(&conn, self.session).ok_or(SetupError::NoExporter)?;
        let join = Frame::Join {
            session: self.session,
            proof: session::proof(&self.secret, self.session, &exported),
            params,
        };
        let (send, recv, answer) = exchange(&conn, join).await.map_err(|e| match e {
            SetupFailure::Refused { code, reason } => PathError::Refused { code, reason },
            SetupFailure::Other(e) => PathError::Setup(e),
        })?;
        match answer {
            Some(Frame::Joined { path }) => {
                let id = PathId(path);
                if let Err(e) =
                    self.add_path(id, conn.clone(), telemetry, send, recv, local, status)
                {
                    conn.close(varint(codes::PATH_CLOSED), b"connection closed");
                    return Err(PathError::Closed(e));
                }
                if status == PathStatus::Backup {
                    self.lock()
                        .core
                        .set_path_status(id, status, Instant::now())
                        .map_err(|_| PathError::UnknownPath(id.0))?;
                    self.poke();
                }
                Ok(id)
            }
            Some(Frame::Refused { code, reason }) => Err(PathError::Refused { code, reason }),
            other => {
                tracing::debug!(?other, "unexpected answer to a join");
                conn.close(varint(codes::PROTOCOL_VIOLATION), b"expected Joined");
                Err(SetupError::UnexpectedAnswer.into())
            }
        }
    }

    /// Adds a joined path and starts its tasks; refused, with nothing started, once the
    /// connection is over (a join can finish after its session ended).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add_path(
        self: &Arc<Self>,
        id: PathId,
        conn: quinn::Connection,
        telemetry: Arc<Telemetry>,
        control_send: quinn::SendStream,
        control_recv: quinn::RecvStream,
        local: SocketAddr,
        status: PathStatus,
    ) -> Result<(), ConnectionError> {
        let wake = Arc::new(Notify::new());
        // One batch queued while another is written: the driver takes no more frames from the
        // core until there is room, so a peer that does not read its control stream holds up
        // its acks and credits in the core, which coalesces them, instead of in a queue here.
        let (control_tx, control_rx) = mpsc::channel(1);
        let _ = control_send.set_priority(CONTROL_PRIORITY);
        let chunk_limit = {
            let mut state = self.lock();
            let path_telemetry =
                CoreTelemetry::new(telemetry.clone(), ReceivedBytes::Quinn(conn.clone()));
            state
                .core
                .add_path(id, Box::new(path_telemetry), status, Instant::now())?;
            let path = QuinnPath {
                conn: conn.clone(),
                telemetry: telemetry.clone(),
                local,
                control: control_tx,
                wake: wake.clone(),
            };
            state.paths.insert(id, path);
            state.config.chunk_stream_limit()
        };
        let span = tracing::debug_span!("path", session = self.session.0, path = id.0);
        tokio::spawn(
            send_loop(self.clone(), id, conn.clone(), telemetry.clone(), wake)
                .instrument(span.clone()),
        );
        tokio::spawn(
            recv_loop(self.clone(), id, conn.clone(), chunk_limit).instrument(span.clone()),
        );
        tokio::spawn(control_loop(self.clone(), id, control_recv).instrument(span.clone()));
        tokio::spawn(
            write_control(self.clone(), control_send, control_rx, telemetry)
                .instrument(span.clone()),
        );
        tokio::spawn(watch_closed(self.clone(), id, conn).instrument(span));
        // A new path may be the better place for control frames, and has a failure deadline.
        self.poke();
        Ok(())
    }

    /// Ends the connection with `error` and closes every path with `code` (unless it is over
    /// already).
    pub(crate) fn close_all(&self, error: ConnectionError, code: u64, reason: &[u8]) {
        {
            let mut state = self.lock();
            if state.core.error().is_some() {
                return;
            }
            state.close_all(error, code, reason);
        }
        self.poke();
    }

    /// The peer broke the protocol: close every path with the error's code.
    pub(crate) fn protocol_error(&self, error: ProtocolError) {
        tracing::warn!(%error, "closing: peer protocol violation");
        let code = error.code();
        let reason = error.to_string();
        self.close_all(ConnectionError::Protocol(error), code, reason.as_bytes());
    }

    fn on_quinn_closed(&self, path: PathId, error: quinn::ConnectionError) {
        let now = Instant::now();
        let mut state = self.lock();
        if let Some(ended) = session_end(&error) {
            state.core.fail(ended);
        }
        state.core.on_path_down(path, error.to_string(), now);
        // The peer ended the whole connection: close the paths it has not closed yet.
        if let Some(ConnectionError::ApplicationClosed { .. })
        | Some(ConnectionError::PeerReportedError { .. }) = state.core.error()
        {
            for path in state.paths.values() {
                path.conn.close(0u32.into(), b"");
            }
        }
        drop(state);
        self.poke();
    }
}

/// What a path's quinn connection closing says of the whole session: the peer closed a path
/// with one of mpquic's own codes (idle, or an error of its own), or closed the connection
/// with an application code. `None`: only the path ended.
pub(crate) fn session_end(error: &quinn::ConnectionError) -> Option<ConnectionError> {
    let quinn::ConnectionError::ApplicationClosed(close) = error else {
        return None;
    };
    let code = close.error_code.into_inner();
    let reason = String::from_utf8_lossy(&close.reason).into_owned();
    match code {
        codes::PATH_CLOSED | codes::PATH_FAILED => None,
        codes::SESSION_IDLE => Some(ConnectionError::TimedOut),
        code if codes::RESERVED.contains(&code) => {
            Some(ConnectionError::PeerReportedError { code, reason })
        }
        code => Some(ConnectionError::ApplicationClosed { code, reason }),
    }
}

/// Held by every application handle (connections and streams); dropping the last one closes
/// the connection, as quinn does, so a forgotten connection does not keep its paths alive.
pub(crate) struct Handle {
    shared: Arc<Shared>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shared
            .close_all(ConnectionError::LocallyClosed, 0, b"");
    }
}

/// One logical connection over one or more paths.
///
/// Cloning gives another handle to the same connection; when every handle and every stream is
/// dropped, the connection closes with code 0.
#[derive(Clone)]
pub struct Connection {
    pub(crate) shared: Arc<Shared>,
    handle: Arc<Handle>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("session", &self.shared.session)
            .finish_non_exhaustive()
    }
}

impl Connection {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        let handle = Arc::new(Handle {
            shared: shared.clone(),
        });
        Self { shared, handle }
    }

    /// The session id both ends share.
    pub fn session_id(&self) -> u64 {
        self.shared.session.0
    }

    /// Client or server.
    pub fn side(&self) -> Side {
        self.shared.lock().core.side()
    }

    /// The scheduler's name.
    pub fn scheduler_name(&self) -> String {
        self.shared.lock().core.scheduler_name().to_owned()
    }

    /// Opens a bidirectional stream, waiting while the peer's stream limit is reached.
    pub async fn open_bi(&self) -> Result<(SendStream, RecvStream), OpenStreamError> {
        let id = self.open(false).await?;
        Ok((
            SendStream::new(self.shared.clone(), self.handle.clone(), id),
            RecvStream::new(self.shared.clone(), self.handle.clone(), id),
        ))
    }

    /// Opens a unidirectional stream, waiting while the peer's stream limit is reached.
    pub async fn open_uni(&self) -> Result<SendStream, OpenStreamError> {
        let id = self.open(true).await?;
        Ok(SendStream::new(
            self.shared.clone(),
            self.handle.clone(),
            id,
        ))
    }

    async fn open(&self, uni: bool) -> Result<u64, OpenStreamError> {
        self.wait_for(|state| match state.error() {
            Some(e) => Some(Err(e.into())),
            None => state.core.open(uni, Instant::now()).map(Ok),
        })
        .await
    }

    /// Waits until `check` finds what it waits for in the state; it is called again whenever
    /// streams or the connection's end change.
    async fn wait_for<T>(&self, mut check: impl FnMut(&mut Inner) -> Option<T>) -> T {
        loop {
            let mut notified = pin!(self.shared.changed.notified());
            notified.as_mut().enable();
            if let Some(found) = check(&mut self.shared.lock()) {
                return found;
            }
            notified.await;
        }
    }

    /// Waits for the peer's next bidirectional stream.
    pub async fn accept_bi(&self) -> Result<(SendStream, RecvStream), ConnectionError> {
        let id = self.accept(false).await?;
        Ok((
            SendStream::new(self.shared.clone(), self.handle.clone(), id),
            RecvStream::new(self.shared.clone(), self.handle.clone(), id),
        ))
    }

    /// Waits for the peer's next unidirectional stream.
    pub async fn accept_uni(&self) -> Result<RecvStream, ConnectionError> {
        let id = self.accept(true).await?;
        Ok(RecvStream::new(
            self.shared.clone(),
            self.handle.clone(),
            id,
        ))
    }

    async fn accept(&self, uni: bool) -> Result<u64, ConnectionError> {
        self.wait_for(|state| match state.core.accept(uni) {
            Some(id) => Some(Ok(id)),
            None => state.error().map(Err),
        })
        .await
    }

    /// Sets the RFC 9218 priority of a stream this side sends on, by id: for code that holds
    /// the stream only through another layer (e.g. an `h3` server).
    pub fn set_stream_priority(
        &self,
        stream: StreamId,
        priority: Priority,
    ) -> Result<(), WriteError> {
        self.shared
            .lock()
            .core
            .set_priority(stream.0, priority, Instant::now())
    }

    /// Tells the scheduler the total size of a stream this side sends on, by id (see
    /// [`SendStream::set_size_hint`]).
    pub fn set_stream_size_hint(&self, stream: StreamId, bytes: u64) -> Result<(), WriteError> {
        self.shared
            .lock()
            .core
            .set_size_hint(stream.0, bytes, Instant::now())
    }

    /// Tells the scheduler, by id, what the peer requests once it has this stream (see
    /// [`SendStream::set_leads_to`]).
    pub fn set_stream_leads_to(&self, stream: StreamId, lead: Lead) -> Result<(), WriteError> {
        self.shared
            .lock()
            .core
            .set_leads_to(stream.0, lead, Instant::now())
    }

    /// Keeps a stream this side sends on to `paths`, by id (see [`SendStream::set_paths`]).
    pub fn set_stream_paths(
        &self,
        stream: StreamId,
        paths: Option<PathSet>,
    ) -> Result<(), WriteError> {
        self.shared
            .lock()
            .core
            .set_paths(stream.0, paths, Instant::now())
    }

    /// Opens one more path, as `config` says, and joins it to this session (client only).
    ///
    /// ```no_run
    /// # async fn demo(conn: mpquic_core::Connection) -> Result<(), mpquic_core::PathError> {
    /// use mpquic_core::{PathConfig, PathStatus};
    /// let mut lte = PathConfig::new("10.0.2.1:0".parse().unwrap(), "192.0.2.1:4433".parse().unwrap());
    /// lte.status(PathStatus::Backup);
    /// let path = conn.open_path(&lte).await?;
    /// # Ok(())
    /// # }
    /// ```
    pub async fn open_path(&self, config: &PathConfig) -> Result<PathId, PathError> {
        self.shared.join_path(config).await
    }

    /// Closes one path; its unacknowledged data is re-sent on the others.
    pub fn close_path(&self, path: PathId) -> Result<(), PathError> {
        let mut state = self.shared.lock();
        let entry = state
            .paths
            .get(&path)
            .ok_or(PathError::UnknownPath(path.0))?;
        entry.conn.close(varint(codes::PATH_CLOSED), b"path closed");
        state
            .core
            .on_path_down(path, "closed locally".into(), Instant::now());
        drop(state);
        self.shared.poke();
        Ok(())
    }

    /// Makes a path available or backup (used only while no available path is up), on both ends.
    pub fn set_path_status(&self, path: PathId, status: PathStatus) -> Result<(), PathError> {
        if status == PathStatus::Down {
            return Err(PathError::StatusDown);
        }
        self.shared
            .lock()
            .core
            .set_path_status(path, status, Instant::now())
            .map_err(|_| PathError::UnknownPath(path.0))?;
        self.shared.poke();
        Ok(())
    }

    /// What re-injection did on this connection so far, and the redundant bytes received
    /// ([`ReinjectionConfig`](crate::ReinjectionConfig)).
    pub fn reinjection_stats(&self) -> crate::ReinjectionStats {
        self.shared.lock().core.reinjection_stats()
    }

    /// The paths that are up and the last [`CLOSED_PATHS_KEPT`] closed ones (status
    /// [`PathStatus::Down`]), with their numbers, by id.
    pub fn paths(&self) -> Vec<PathStats> {
        let state = self.shared.lock();
        let up = state.core.path_ids().filter_map(|id| {
            let (status, counters) = state.core.path(id)?;
            state.path_stats(id, status, counters)
        });
        let mut paths: Vec<PathStats> = state.closed_paths.iter().cloned().chain(up).collect();
        paths.sort_by_key(|p| p.id);
        paths
    }

    /// Path events from now on.
    pub fn path_events(&self) -> PathEvents {
        PathEvents::new(self.shared.lock().events.subscribe())
    }

    /// The peer's address on the lowest-numbered path that is up (the first path while it
    /// lasts); the last known one once every path is down.
    pub fn remote_address(&self) -> SocketAddr {
        self.shared.lock().remote_address()
    }

    /// What the TLS handshake of the lowest-numbered path that is up negotiated (every path
    /// shares the session's TLS configuration): for rustls, a
    /// `quinn::crypto::rustls::HandshakeData` with the ALPN protocol and server name.
    pub fn handshake_data(&self) -> Option<Box<dyn std::any::Any>> {
        let state = self.shared.lock();
        let (_, path) = state.paths.iter().next()?;
        path.conn.handshake_data()
    }

    /// Closes the connection on every path with an application `code` and `reason`. The
    /// codes of [`codes::RESERVED`] are mpquic's own: the peer reads one of them as mpquic's
    /// error of that code.
    pub fn close(&self, code: VarInt, reason: &[u8]) {
        self.close_with(code.into_inner(), reason);
    }

    pub(crate) fn close_with(&self, code: u64, reason: &[u8]) {
        self.shared
            .close_all(ConnectionError::LocallyClosed, code, reason);
    }

    /// Waits until the connection is over and says why.
    pub async fn closed(&self) -> ConnectionError {
        self.wait_for(|state| state.error()).await
    }

    /// Why the connection is over, if it is.
    pub fn close_reason(&self) -> Option<ConnectionError> {
        self.shared.lock().error()
    }
}

/// Asks the scheduler for data whenever the path has window room and writes it to quinn.
async fn send_loop(
    shared: Arc<Shared>,
    path: PathId,
    conn: quinn::Connection,
    telemetry: Arc<Telemetry>,
    wake: Arc<Notify>,
) {
    let mut streams: HashMap<u64, quinn::SendStream> = HashMap::new();
    let mut send_window = 0;
    loop {
        let (step, retire) = {
            let mut state = shared.lock();
            let deadline = state.core.poll_timeout();
            let polled = state.core.poll_path(path, Instant::now());
            // A tail probe armed for what this path sends now is a deadline the driver must
            // wake for.
            if state
                .core
                .poll_timeout()
                .is_some_and(|t| deadline.is_none_or(|d| t < d))
            {
                shared.driver_wake.notify_one();
            }
            polled
        };
        for (id, reset) in retire {
            if let Some(mut stream) = streams.remove(&id) {
                let _ = if reset {
                    stream.reset(0u32.into())
                } else {
                    stream.finish()
                };
            }
        }
        let target = telemetry.send_window();
        if target != send_window {
            conn.set_send_window(target);
            send_window = target;
        }
        match step {
            Step::Stop => break,
            Step::Wait(deadline) => {
                let sleep = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d.into()).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = wake.notified() => {}
                    _ = telemetry.changed.notified() => {}
                    _ = sleep => {}
                }
            }
            Step::Send(batch) => {
                telemetry.data_written(Instant::now(), batch.iter().map(ChunkWork::bytes).sum());
                let mut opened = Vec::new();
                let result = {
                    let mut write = pin!(write_batch(&conn, &mut streams, &mut opened, batch));
                    // Most writes only copy into quinn's buffer; one that has to wait means the
                    // buffer is full, which the scheduler must know (see `set_writer_blocked`).
                    let first_try =
                        std::future::poll_fn(|cx| Poll::Ready(write.as_mut().poll(cx))).await;
                    match first_try {
                        Poll::Ready(result) => result,
                        Poll::Pending => {
                            let blocked = |blocked| {
                                let mut state = shared.lock();
                                state.core.set_writer_blocked(path, blocked, Instant::now());
                            };
                            blocked(true);
                            let result = write.await;
                            blocked(false);
                            result
                        }
                    }
                };
                if !opened.is_empty() {
                    let mut state = shared.lock();
                    for (stream, transport) in opened {
                        state.core.on_chunk_stream_opened(path, stream, transport);
                    }
                }
                if let Err(e) = result {
                    tracing::debug!(%e, "path write failed");
                    return;
                }
            }
        }
    }
}

/// Writes a batch into quinn, noting in `opened` the chunk streams it opens (logical stream,
/// transport stream), which the core must hear of.
async fn write_batch(
    conn: &quinn::Connection,
    streams: &mut HashMap<u64, quinn::SendStream>,
    opened: &mut Vec<(u64, u64)>,
    batch: Vec<ChunkWork>,
) -> Result<(), String> {
    for work in batch {
        write_work(conn, streams, opened, work).await?;
    }
    Ok(())
}

async fn write_work(
    conn: &quinn::Connection,
    streams: &mut HashMap<u64, quinn::SendStream>,
    opened: &mut Vec<(u64, u64)>,
    work: ChunkWork,
) -> Result<(), String> {
    if !work.pieces.is_empty() {
        let stream = match streams.entry(work.stream) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(v) => {
                let mut stream = conn.open_uni().await.map_err(|e| e.to_string())?;
                opened.push((work.stream, u64::from(stream.id())));
                // Before the first write: quinn queues a stream for sending at the priority it
                // has when its first bytes arrive, and keeps it at that level until it sends a
                // frame of it. Set after the header, every new stream went out at priority 0,
                // behind the rest of any less urgent stream already sending.
                let _ = stream.set_priority(work.priority);
                let mut header = Vec::new();
                wire::encode_chunk_stream_header(work.stream, &mut header)
                    .map_err(|e| e.to_string())?;
                stream.write_all(&header).await.map_err(|e| e.to_string())?;
                v.insert(stream)
            }
        };
        let _ = stream.set_priority(work.priority);
        for (offset, parts) in work.pieces {
            let len: usize = parts.iter().map(|p| p.len()).sum();
            let mut header = Vec::new();
            wire::encode_chunk_header(offset, len as u64, &mut header)
                .map_err(|e| e.to_string())?;
            stream.write_all(&header).await.map_err(|e| e.to_string())?;
            for part in parts {
                stream.write_chunk(part).await.map_err(|e| e.to_string())?;
            }
        }
    }
    if work.all_granted {
        if let Some(mut stream) = streams.remove(&work.stream) {
            let _ = stream.finish();
        }
    }
    Ok(())
}

/// Accepts the peer's chunk streams on this path, each read by a task of its own that ends
/// with this loop, and raises the path's stream limit as they need.
async fn recv_loop(
    shared: Arc<Shared>,
    path: PathId,
    conn: quinn::Connection,
    mut limit: ChunkStreamLimit,
) {
    let mut readers = JoinSet::new();
    loop {
        tokio::select! {
            accepted = conn.accept_uni() => {
                let Ok(stream) = accepted else { break };
                readers.spawn(read_chunks(shared.clone(), path, stream).in_current_span());
                if let Some(raised) = limit.on_open(readers.len()) {
                    conn.set_max_concurrent_uni_streams(raised);
                }
            }
            Some(_) = readers.join_next() => {}
        }
    }
}

/// The most read from a quinn stream at once.
const READ_PIECE: usize = 64 * 1024;

/// Feeds one chunk stream to the core as its bytes arrive.
async fn read_chunks(shared: Arc<Shared>, path: PathId, mut stream: quinn::RecvStream) {
    let transport_stream = u64::from(stream.id());
    let mut reader = shared.lock().core.chunk_reader();
    let result: Result<(), ProtocolError> = async {
        // Out of order, so that bytes past a hole show it (`ChunkReader`). A read error means
        // the path or the stream went away: what it carried comes again on another path.
        while let Ok(Some(piece)) = stream.read_chunk(READ_PIECE, false).await {
            let hole = reader.read(piece.offset, piece.bytes, |chunk| {
                shared.lock().core.on_chunk(
                    path,
                    chunk.stream,
                    chunk.offset,
                    chunk.data,
                    Instant::now(),
                )?;
                shared.poke();
                Ok::<(), ProtocolError>(())
            })?;
            if let Some(from) = hole {
                shared.lock().core.on_missing(path, transport_stream, from);
                shared.poke();
            }
        }
        Ok(())
    }
    .await;
    if let Err(e) = result {
        shared.protocol_error(e);
    }
}

/// Reads the peer's control frames on this path.
async fn control_loop(shared: Arc<Shared>, path: PathId, mut recv: quinn::RecvStream) {
    let mut decoder = FrameDecoder::default();
    while let Ok(Some(piece)) = recv.read_chunk(READ_PIECE, true).await {
        let mut input = &piece.bytes[..];
        loop {
            let result = decoder.decode(&mut input).map_err(ProtocolError::from);
            let result = match result {
                Ok(Some(frame)) => shared.lock().core.on_frame(path, frame, Instant::now()),
                Ok(None) => break,
                Err(e) => Err(e),
            };
            if let Err(e) = result {
                shared.protocol_error(e);
                return;
            }
            shared.poke();
        }
    }
}

async fn watch_closed(shared: Arc<Shared>, path: PathId, conn: quinn::Connection) {
    let error = conn.closed().await;
    shared.on_quinn_closed(path, error);
}

/// Drives the core: runs its timers (held data acks falling due, the idle timeout, each path's
/// failure deadline) and hands its control frames to the paths' control writers, each frame on
/// its path or on the one with the lowest one-way delay towards the peer. Never waits on a
/// path, since a dead path may never complete a write. Ends with the connection.
async fn drive(shared: Arc<Shared>) {
    // A path's failure deadline moves as its transport sends, which the core does not see:
    // look again at least this often.
    const RECHECK: Duration = Duration::from_millis(100);
    loop {
        let now = Instant::now();
        let wake_at = {
            let mut state = shared.lock();
            state.core.handle_timeout(now);
            if state.core.error().is_some() {
                drop(state);
                shared.changed.notify_waiters();
                return;
            }
            state.flush_control(now);
            // A deadline already past is held acks waiting for a busy control writer, which
            // wakes the driver when it takes the next batch.
            let deadline = state.core.poll_timeout().filter(|t| *t > now);
            deadline.map_or(now + RECHECK, |t| t.min(now + RECHECK))
        };
        // Actions run as the lock is released, so a failure declared just now is queued by here.
        let rejoins = std::mem::take(&mut shared.lock().rejoins);
        for r in rejoins {
            tokio::spawn(rejoin(shared.clone(), r).in_current_span());
        }
        let _ = tokio::time::timeout_at(wake_at.into(), shared.driver_wake.notified()).await;
    }
}

/// Opens a failed path again from the same local address (a new port) until it joins, the
/// connection ends, or [`REJOIN_FOR`] has passed. Each attempt has `attempt` to finish its
/// handshake and join, and the next starts when it fails, so a path that comes back carries
/// data again within about one attempt.
async fn rejoin(shared: Arc<Shared>, r: Rejoin) {
    let give_up = Instant::now() + REJOIN_FOR;
    while Instant::now() < give_up {
        if shared.lock().error().is_some() {
            return;
        }
        let started = Instant::now();
        let path = PathConfig::new(r.local, r.remote);
        let attempt = shared.join_path(&path);
        match tokio::time::timeout(r.attempt, attempt).await {
            Ok(Ok(path)) => {
                tracing::info!(path = path.0, remote = %r.remote, "failed path joined again");
                return;
            }
            Ok(Err(PathError::Closed(_) | PathError::NotClient)) => return,
            // Lost in the outage, refused or timed out: a fresh attempt.
            Ok(Err(_)) | Err(_) => {}
        }
        // One that failed at once (no route yet) waits out its time.
        tokio::time::sleep_until((started + r.attempt).into()).await;
    }
}

/// Writes a path's control frames as the driver queues them. Ends when the path is gone (its
/// queue's sender dropped) or its stream fails, which the path's watcher notices and repeats
/// what was lost.
async fn write_control(
    shared: Arc<Shared>,
    mut send: quinn::SendStream,
    mut queue: mpsc::Receiver<Vec<u8>>,
    telemetry: Arc<Telemetry>,
) {
    while let Some(buf) = queue.recv().await {
        // There is room in the queue again.
        shared.driver_wake.notify_one();
        // Control frames want acknowledgements too: a receiver that sends nothing else must
        // still notice that its path died (its acks and credits would go nowhere).
        telemetry.data_written(Instant::now(), buf.len() as u64);
        if send.write_all(&buf).await.is_err() {
            return;
        }
    }
}

/// Reads one control frame from a quinn stream, a byte at a time so that nothing after it is
/// taken from the stream: how a path's first frame (a new session, a join, or the answer to
/// either) is read before the control stream's reader starts, and how a tool that speaks the
/// wire format by hand reads frames. `Ok(None)`: the stream ended before a frame.
pub async fn read_frame(recv: &mut quinn::RecvStream) -> Result<Option<Frame>, ReadFrameError> {
    let mut decoder = FrameDecoder::default();
    loop {
        let mut byte = [0u8; 1];
        match recv.read(&mut byte).await? {
            Some(1) => {
                if let Some(frame) = decoder.decode(&mut &byte[..])? {
                    return Ok(Some(frame));
                }
            }
            Some(_) => {}
            None => return Ok(decoder.finish().map(|()| None)?),
        }
    }
}

/// Why the first exchange on a new path failed.
enum SetupFailure {
    /// The server closed the path with a code (how it refuses sessions and joins).
    Refused { code: u64, reason: String },
    /// Anything else.
    Other(SetupError),
}

/// Opens a new path's control stream, sends `frame` and reads the server's answer.
async fn exchange(
    conn: &quinn::Connection,
    frame: Frame,
) -> Result<(quinn::SendStream, quinn::RecvStream, Option<Frame>), SetupFailure> {
    let result = async {
        let (mut send, mut recv) = conn.open_bi().await.map_err(SetupError::Open)?;
        let mut buf = Vec::new();
        frame.encode(&mut buf).map_err(SetupError::Encode)?;
        send.write_all(&buf).await.map_err(SetupError::Write)?;
        let answer = read_frame(&mut recv).await.map_err(SetupError::Read)?;
        Ok::<_, SetupError>((send, recv, answer))
    }
    .await;
    result.map_err(|error| match conn.close_reason() {
        // A refusal arrives as the quinn connection's close.
        Some(quinn::ConnectionError::ApplicationClosed(close)) => SetupFailure::Refused {
            code: close.error_code.into_inner(),
            reason: String::from_utf8_lossy(&close.reason).into_owned(),
        },
        _ => SetupFailure::Other(error),
    })
}

/// How the client's first path becomes a session.
pub(crate) async fn client_handshake(
    endpoint: Arc<EndpointInner>,
    config: ClientConfig,
    connecting: quinn::Connecting,
    telemetry: Arc<Telemetry>,
    local: SocketAddr,
    server_name: String,
) -> Result<Connection, PathError> {
    let conn = connecting.await?;
    let local_params = config.transport.params();
    let new_session = Frame::NewSession {
        params: local_params,
    };
    let (send, recv, answer) = exchange(&conn, new_session).await.map_err(|e| match e {
        SetupFailure::Refused { code, reason } => PathError::Refused { code, reason },
        SetupFailure::Other(e) => PathError::Setup(e),
    })?;
    match answer {
        Some(Frame::Welcome {
            session,
            secret,
            path,
            params,
        }) => {
            let transport = config.transport.clone();
            let state = Inner::new(Side::Client, transport, local_params, params);
            let dialer = Dialer {
                config,
                server_name,
            };
            let shared = Shared::new(state, session, secret, endpoint, Some(dialer));
            let connection = Connection::new(shared.clone());
            shared
                .add_path(
                    PathId(path),
                    conn,
                    telemetry,
                    send,
                    recv,
                    local,
                    PathStatus::Available,
                )
                .map_err(PathError::Closed)?;
            Ok(connection)
        }
        Some(Frame::Refused { code, reason }) => Err(PathError::Refused { code, reason }),
        other => {
            tracing::debug!(?other, "unexpected answer to a new session");
            Err(SetupError::UnexpectedAnswer.into())
        }
    }
}
