//! A multipath connection: the public handle and the tasks that drive each path.
//!
//! Every path is a quinn connection with four tasks: a sender that asks the scheduler what to
//! send whenever the path's congestion window has room, a receiver of chunk streams, a reader of
//! the control stream and a watcher that turns the quinn connection's end into "path down". One
//! more task per connection writes control frames (data acks, credits, fins) on the path with
//! the lowest one-way delay towards the peer.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::future::Future as _;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;
use std::time::{Duration, Instant};

use mpquic_sched::{PathId, PathStatus, StreamId};
use tokio::sync::{broadcast, Notify};
use tracing::Instrument;

use crate::config::CongestionControl;
use crate::endpoint::EndpointInner;
use crate::error::{codes, ConnectionError, OpenStreamError, PathError, ProtocolError, WriteError};
use crate::session;
use crate::state::{PathEntry, Side, State, Step};
use crate::stream::{RecvStream, SendStream};
use crate::telemetry::Telemetry;
use crate::wire::{self, Frame, SessionId, WireError};

/// Something that happened to a path.
#[derive(Debug, Clone, PartialEq)]
pub enum PathEvent {
    /// The path joined and may carry data.
    Up {
        /// The path.
        path: PathId,
    },
    /// The path failed or was closed; its unacknowledged data goes on the others.
    Down {
        /// The path.
        path: PathId,
        /// Why.
        reason: String,
    },
    /// The path became available or backup.
    Status {
        /// The path.
        path: PathId,
        /// Its new status.
        status: PathStatus,
    },
    /// Fresh estimates (at most one event per path every 100 ms).
    Estimates {
        /// The path.
        path: PathId,
        /// Smoothed RTT.
        srtt: Duration,
        /// Estimated bandwidth in bits per second.
        bandwidth_bps: f64,
        /// Congestion window in bytes.
        cwnd: u64,
    },
}

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
}

pub(crate) struct Shared {
    state: Mutex<State>,
    /// Wakes the control-frame writer.
    pub(crate) control_wake: Notify,
    /// Streams became acceptable or openable, or the connection ended.
    pub(crate) changed: Notify,
    pub(crate) session: SessionId,
    pub(crate) secret: [u8; session::SECRET_LEN],
    pub(crate) endpoint: Arc<EndpointInner>,
    pub(crate) server_name: String,
}

impl Shared {
    pub(crate) fn new(
        state: State,
        session: SessionId,
        secret: [u8; session::SECRET_LEN],
        endpoint: Arc<EndpointInner>,
        server_name: String,
    ) -> Arc<Self> {
        let shared = Arc::new(Self {
            state: Mutex::new(state),
            control_wake: Notify::new(),
            changed: Notify::new(),
            session,
            secret,
            endpoint,
            server_name,
        });
        tokio::spawn(
            flush_control(shared.clone())
                .instrument(tracing::debug_span!("mpquic", session = session.0)),
        );
        shared
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // State stays consistent between statements; keep going after a panic elsewhere.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes whoever may care after the state changed.
    pub(crate) fn poke(&self) {
        if self.lock().control_wanted(Instant::now()) {
            self.control_wake.notify_one();
        }
        self.changed.notify_waiters();
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
        {
            let mut state = self.lock();
            if let Some(error) = &state.error {
                return Err(error.clone());
            }
            let entry = PathEntry {
                conn: conn.clone(),
                telemetry: telemetry.clone(),
                status,
                local,
                remote: conn.remote_address(),
                control: Arc::new(tokio::sync::Mutex::new(control_send)),
                wake: wake.clone(),
                retire: Vec::new(),
                bytes_sent: 0,
                bytes_received: 0,
                last_estimate_event: None,
                generation: 0,
                idle_with_room: false,
                writer_blocked: false,
                reported_received: 0,
            };
            state.paths.insert(id, entry);
            let snapshot = state
                .paths
                .get(&id)
                .map_or_else(|| telemetry.snapshot(id, status), |p| p.snapshot(id));
            if let Err(e) = state.scheduler.on_path_added(Instant::now(), &snapshot) {
                tracing::warn!(path = id.0, %e, "scheduler refused the path");
            }
            let _ = state.events.send(PathEvent::Up { path: id });
        }
        let span = tracing::debug_span!("path", session = self.session.0, path = id.0);
        tokio::spawn(
            send_loop(self.clone(), id, conn.clone(), telemetry, wake).instrument(span.clone()),
        );
        tokio::spawn(recv_loop(self.clone(), id, conn.clone()).instrument(span.clone()));
        tokio::spawn(control_loop(self.clone(), id, control_recv).instrument(span.clone()));
        tokio::spawn(watch_acks(self.clone(), id).instrument(span.clone()));
        tokio::spawn(watch_closed(self.clone(), id, conn).instrument(span));
        // A new path may be the better place for control frames: repeat nothing, just flush.
        self.control_wake.notify_one();
        Ok(())
    }

    /// Ends the connection with `error` and closes every path with `code` (unless it is over
    /// already).
    pub(crate) fn close_all(&self, error: ConnectionError, code: u64, reason: &[u8]) {
        let code = quinn::VarInt::from_u64(code).unwrap_or_default();
        let conns: Vec<quinn::Connection> = {
            let mut state = self.lock();
            if state.error.is_some() {
                return;
            }
            state.fail(error);
            state.paths.values().map(|p| p.conn.clone()).collect()
        };
        for conn in conns {
            conn.close(code, reason);
        }
        self.changed.notify_waiters();
        self.control_wake.notify_one();
    }

    /// The peer broke the protocol: close every path with the error's code.
    pub(crate) fn protocol_error(&self, error: ProtocolError) {
        tracing::warn!(%error, "closing: peer protocol violation");
        let code = quinn::VarInt::from_u64(error.code()).unwrap_or(quinn::VarInt::MAX);
        let reason = error.to_string();
        let conns: Vec<quinn::Connection> = {
            let mut state = self.lock();
            state.fail(ConnectionError::Protocol(error));
            state.paths.values().map(|p| p.conn.clone()).collect()
        };
        for conn in conns {
            conn.close(code, reason.as_bytes());
        }
        self.changed.notify_waiters();
    }

    fn on_quinn_closed(&self, path: PathId, error: quinn::ConnectionError) {
        let now = Instant::now();
        let mut state = self.lock();
        let reason = error.to_string();
        if let quinn::ConnectionError::ApplicationClosed(close) = &error {
            let code = close.error_code.into_inner();
            let text = String::from_utf8_lossy(&close.reason).into_owned();
            match code {
                codes::PATH_CLOSED | codes::PATH_FAILED => {}
                codes::SESSION_IDLE => state.fail(ConnectionError::TimedOut),
                code if code >= codes::FIRST_RESERVED => {
                    state.fail(ConnectionError::PeerReportedError { code, reason: text })
                }
                code => state.fail(ConnectionError::ApplicationClosed { code, reason: text }),
            }
        }
        state.on_path_down(path, reason, now);
        let conns: Vec<quinn::Connection> = match &state.error {
            // The peer ended the whole connection: close the paths it has not closed yet.
            Some(ConnectionError::ApplicationClosed { .. })
            | Some(ConnectionError::PeerReportedError { .. }) => {
                state.paths.values().map(|p| p.conn.clone()).collect()
            }
            _ => Vec::new(),
        };
        drop(state);
        for conn in conns {
            conn.close(0u32.into(), b"");
        }
        self.changed.notify_waiters();
        self.control_wake.notify_one();
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
        self.shared.lock().side
    }

    /// The scheduler's name.
    pub fn scheduler_name(&self) -> String {
        self.shared.lock().scheduler.name().to_owned()
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
        self.wait_for(|state| match &state.error {
            Some(e) => Some(Err(e.clone().into())),
            None => state.open(uni, Instant::now()).map(Ok),
        })
        .await
    }

    /// Waits until `check` finds what it waits for in the state; it is called again whenever
    /// streams or the connection's end change.
    async fn wait_for<T>(&self, mut check: impl FnMut(&mut State) -> Option<T>) -> T {
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
        self.wait_for(|state| match state.accept(uni) {
            Some(id) => Some(Ok(id)),
            None => state.error.clone().map(Err),
        })
        .await
    }

    /// Sets the RFC 9218 urgency (0 to 7) and incremental flag of a stream this side sends on,
    /// by id: for code that holds the stream only through another layer (e.g. an `h3` server).
    pub fn set_stream_urgency(
        &self,
        stream: StreamId,
        urgency: u8,
        incremental: bool,
    ) -> Result<(), WriteError> {
        self.shared
            .lock()
            .set_urgency(stream.0, urgency, incremental, Instant::now())
    }

    /// Tells the scheduler the total size of a stream this side sends on, by id (see
    /// [`SendStream::set_size_hint`]).
    pub fn set_stream_size_hint(&self, stream: StreamId, bytes: u64) -> Result<(), WriteError> {
        self.shared
            .lock()
            .set_size_hint(stream.0, bytes, Instant::now())
    }

    /// Opens one more path from `local` to `remote` and joins it to this session (client only).
    pub async fn open_path(
        &self,
        local: SocketAddr,
        remote: SocketAddr,
        status: PathStatus,
    ) -> Result<PathId, PathError> {
        self.open_path_inner(local, remote, status, None).await
    }

    /// Like [`open_path`](Self::open_path), with this path's own congestion controller for what
    /// the client sends on it (the config's otherwise).
    pub async fn open_path_with_congestion(
        &self,
        local: SocketAddr,
        remote: SocketAddr,
        status: PathStatus,
        congestion: CongestionControl,
    ) -> Result<PathId, PathError> {
        self.open_path_inner(local, remote, status, Some(&congestion))
            .await
    }

    async fn open_path_inner(
        &self,
        local: SocketAddr,
        remote: SocketAddr,
        status: PathStatus,
        congestion: Option<&CongestionControl>,
    ) -> Result<PathId, PathError> {
        if status == PathStatus::Down {
            return Err(PathError::Handshake("a new path cannot start down".into()));
        }
        {
            let state = self.shared.lock();
            if state.side != Side::Client {
                return Err(PathError::NotClient);
            }
            if let Some(e) = &state.error {
                return Err(PathError::Closed(e.clone()));
            }
            if state.paths.len() >= state.config.max_paths {
                return Err(PathError::TooManyPaths(state.config.max_paths));
            }
        }
        let shared = &self.shared;
        let telemetry = shared.endpoint.new_telemetry();
        let (conn, local) = shared
            .endpoint
            .connect_quinn(local, remote, &shared.server_name, &telemetry, congestion)
            .await?;
        let exported = session::exporter(&conn, shared.session)
            .ok_or_else(|| PathError::Handshake("TLS exporter unavailable".into()))?;
        let join = Frame::Join {
            session: shared.session,
            proof: session::proof(&shared.secret, shared.session, &exported),
            params: State::params(&shared.endpoint.config),
        };
        let (send, recv, answer) = exchange(&conn, join).await.map_err(|e| match e {
            SetupFailure::Refused { code, reason } => PathError::Refused { code, reason },
            SetupFailure::Other(reason) => PathError::Handshake(reason),
        })?;
        match answer {
            Some(Frame::Joined { path }) => {
                let id = PathId(path);
                if let Err(e) =
                    shared.add_path(id, conn.clone(), telemetry, send, recv, local, status)
                {
                    conn.close(
                        quinn::VarInt::from_u64(codes::PATH_CLOSED).unwrap_or_default(),
                        b"connection closed",
                    );
                    return Err(PathError::Closed(e));
                }
                if status == PathStatus::Backup {
                    self.set_path_status(id, status)?;
                }
                Ok(id)
            }
            Some(Frame::Refused { code, reason }) => Err(PathError::Refused { code, reason }),
            other => {
                conn.close(
                    quinn::VarInt::from_u64(codes::PROTOCOL_VIOLATION).unwrap_or_default(),
                    b"expected Joined",
                );
                Err(PathError::Handshake(format!(
                    "unexpected answer to a join: {other:?}"
                )))
            }
        }
    }

    /// Closes one path; its unacknowledged data is re-sent on the others.
    pub fn close_path(&self, path: PathId) -> Result<(), PathError> {
        let mut state = self.shared.lock();
        let entry = state
            .paths
            .get(&path)
            .ok_or(PathError::UnknownPath(path.0))?;
        entry.conn.close(
            quinn::VarInt::from_u64(codes::PATH_CLOSED).unwrap_or_default(),
            b"path closed",
        );
        state.on_path_down(path, "closed locally".into(), Instant::now());
        drop(state);
        self.shared.poke();
        Ok(())
    }

    /// Makes a path available or backup (used only while no available path is up), on both ends.
    pub fn set_path_status(&self, path: PathId, status: PathStatus) -> Result<(), PathError> {
        if status == PathStatus::Down {
            return Err(PathError::Handshake(
                "use close_path to take a path down".into(),
            ));
        }
        let mut state = self.shared.lock();
        if !state.paths.contains_key(&path) {
            return Err(PathError::UnknownPath(path.0));
        }
        state.apply_path_status(path, status, Instant::now());
        state.control.push_back((
            Some(path),
            Frame::PathStatus {
                backup: status == PathStatus::Backup,
            },
        ));
        drop(state);
        self.shared.control_wake.notify_one();
        Ok(())
    }

    /// The paths that are up and the last [`CLOSED_PATHS_KEPT`](crate::CLOSED_PATHS_KEPT)
    /// closed ones (status [`PathStatus::Down`]), with their numbers, by id.
    pub fn paths(&self) -> Vec<PathStats> {
        let state = self.shared.lock();
        let mut paths: Vec<PathStats> = state
            .closed_paths
            .iter()
            .cloned()
            .chain(state.paths.iter().map(|(id, p)| p.stats(*id)))
            .collect();
        paths.sort_by_key(|p| p.id);
        paths
    }

    /// Path events from now on (a lagging receiver loses the oldest).
    pub fn path_events(&self) -> broadcast::Receiver<PathEvent> {
        self.shared.lock().events.subscribe()
    }

    /// Closes the connection on every path with an application `code` (below
    /// [`codes::FIRST_RESERVED`]) and `reason`.
    pub fn close(&self, code: u64, reason: &[u8]) {
        self.shared.close_all(
            ConnectionError::LocallyClosed,
            code.min(codes::FIRST_RESERVED - 1),
            reason,
        );
    }

    /// Waits until the connection is over and says why.
    pub async fn closed(&self) -> ConnectionError {
        self.wait_for(|state| state.error.clone()).await
    }

    /// Why the connection is over, if it is.
    pub fn close_reason(&self) -> Option<ConnectionError> {
        self.shared.lock().error.clone()
    }
}

/// quinn's send window (bytes it buffers, in flight or not) for a congestion window of `cwnd`.
/// Kept shallow: half a window (at least 64 KiB) beyond what congestion control lets fly, so
/// decisions are made with fresh estimates. A quarter window starved quinn between refills on
/// loopback (2.8 instead of 3.9 Gbit/s).
pub(crate) fn send_window_target(cwnd: u64) -> u64 {
    cwnd + (cwnd / 2).max(64 * 1024)
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
        let (step, retire) = shared.lock().next_step(path, Instant::now());
        for (id, reset) in retire {
            if let Some(mut stream) = streams.remove(&id) {
                let _ = if reset {
                    stream.reset(0u32.into())
                } else {
                    stream.finish()
                };
            }
        }
        let target = send_window_target(telemetry.lock().cwnd);
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
                telemetry.data_written(Instant::now());
                let mut write = pin!(write_batch(&conn, &mut streams, batch));
                // Most writes only copy into quinn's buffer; one that has to wait means the
                // buffer is full, which the scheduler must know (see `set_writer_blocked`).
                let first_try =
                    std::future::poll_fn(|cx| Poll::Ready(write.as_mut().poll(cx))).await;
                let result = match first_try {
                    Poll::Ready(result) => result,
                    Poll::Pending => {
                        shared.lock().set_writer_blocked(path, true, Instant::now());
                        let result = write.await;
                        shared
                            .lock()
                            .set_writer_blocked(path, false, Instant::now());
                        result
                    }
                };
                if let Err(e) = result {
                    tracing::debug!(%e, "path write failed");
                    return;
                }
            }
        }
    }
}

async fn write_batch(
    conn: &quinn::Connection,
    streams: &mut HashMap<u64, quinn::SendStream>,
    batch: Vec<crate::state::ChunkWork>,
) -> Result<(), String> {
    for work in batch {
        write_work(conn, streams, work).await?;
    }
    Ok(())
}

async fn write_work(
    conn: &quinn::Connection,
    streams: &mut HashMap<u64, quinn::SendStream>,
    work: crate::state::ChunkWork,
) -> Result<(), String> {
    if !work.pieces.is_empty() {
        let stream = match streams.entry(work.stream) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(v) => {
                let mut stream = conn.open_uni().await.map_err(|e| e.to_string())?;
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

/// Accepts the peer's chunk streams on this path.
async fn recv_loop(shared: Arc<Shared>, path: PathId, conn: quinn::Connection) {
    while let Ok(stream) = conn.accept_uni().await {
        tokio::spawn(read_chunks(shared.clone(), path, stream).in_current_span());
    }
}

async fn read_chunks(shared: Arc<Shared>, path: PathId, mut stream: quinn::RecvStream) {
    let result: Result<(), ProtocolError> = async {
        let Some(id) = wire::read_varint(&mut stream).await? else {
            return Ok(());
        };
        while let Some((offset, data)) = wire::read_chunk(&mut stream).await? {
            shared
                .lock()
                .on_chunk(path, id, offset, data, Instant::now())?;
            shared.poke();
        }
        Ok(())
    }
    .await;
    match result {
        // The path or the stream went away: what it carried comes again on another path.
        Err(ProtocolError::Wire(WireError::Io(_))) | Ok(()) => {}
        Err(e) => shared.protocol_error(e),
    }
}

/// Reads the peer's control frames on this path.
async fn control_loop(shared: Arc<Shared>, path: PathId, mut recv: quinn::RecvStream) {
    loop {
        match wire::read_frame(&mut recv).await {
            Ok(Some(frame)) => {
                let result = shared.lock().on_frame(path, frame, Instant::now());
                if let Err(e) = result {
                    shared.protocol_error(e);
                    return;
                }
                shared.poke();
            }
            Ok(None) | Err(WireError::Io(_)) => return,
            Err(e) => {
                shared.protocol_error(e.into());
                return;
            }
        }
    }
}

/// Declares the path failed when its data waits too long for an acknowledgement. A task of its
/// own, because the sender may be blocked in a quinn write that a dead path never completes.
async fn watch_acks(shared: Arc<Shared>, path: PathId) {
    // With nothing outstanding, look again at this pace.
    const IDLE_CHECK: Duration = Duration::from_millis(100);
    loop {
        let now = Instant::now();
        let Some(next) = shared.lock().check_failure(path, now) else {
            shared.poke();
            return;
        };
        let at = next.map_or(now + IDLE_CHECK, |deadline| deadline.min(now + IDLE_CHECK));
        tokio::time::sleep_until(at.into()).await;
    }
}

async fn watch_closed(shared: Arc<Shared>, path: PathId, conn: quinn::Connection) {
    let error = conn.closed().await;
    shared.on_quinn_closed(path, error);
}

/// Writes control frames, each on its path or on the one with the lowest one-way delay; held
/// data acks when they fall due. Ends the session when it has been idle too long.
async fn flush_control(shared: Arc<Shared>) {
    // Also look now and then, so the task ends once the connection is over.
    const RECHECK: Duration = Duration::from_secs(1);
    loop {
        let now = Instant::now();
        let wake_at = {
            let state = shared.lock();
            [state.control_deadline(), state.idle_deadline()]
                .into_iter()
                .flatten()
                .fold(now + RECHECK, Instant::min)
        };
        let _ = tokio::time::timeout_at(wake_at.into(), shared.control_wake.notified()).await;
        let (over, idle) = {
            let state = shared.lock();
            let idle = state.idle_deadline().is_some_and(|d| d <= Instant::now());
            (state.error.is_some(), idle)
        };
        if idle {
            shared.close_all(ConnectionError::TimedOut, codes::SESSION_IDLE, b"idle");
        }
        if over || idle {
            return;
        }
        loop {
            let batches = {
                let mut state = shared.lock();
                let now = Instant::now();
                if !state.has_control(now) {
                    break;
                }
                let default_path = state.control_path();
                let mut batches: BTreeMap<PathId, Vec<u8>> = BTreeMap::new();
                for (target, frame) in state.drain_control(now) {
                    let Some(path) = target.or(default_path) else {
                        continue;
                    };
                    let buf = batches.entry(path).or_default();
                    if let Err(e) = frame.encode(buf) {
                        tracing::warn!(%e, ?frame, "cannot encode a control frame");
                    }
                }
                batches
                    .into_iter()
                    .filter_map(|(path, buf)| {
                        let entry = state.paths.get(&path)?;
                        Some((entry.control.clone(), buf))
                    })
                    .collect::<Vec<_>>()
            };
            for (control, buf) in batches {
                // A failing path is noticed by its watcher, which repeats what was lost.
                let _ = control.lock().await.write_all(&buf).await;
            }
        }
    }
}

/// Why the first exchange on a new path failed.
enum SetupFailure {
    /// The server closed the path with a code (how it refuses sessions and joins).
    Refused { code: u64, reason: String },
    /// Anything else, as text.
    Other(String),
}

/// Opens a new path's control stream, sends `frame` and reads the server's answer.
async fn exchange(
    conn: &quinn::Connection,
    frame: Frame,
) -> Result<(quinn::SendStream, quinn::RecvStream, Option<Frame>), SetupFailure> {
    let result = async {
        let (mut send, mut recv) = conn.open_bi().await.map_err(|e| e.to_string())?;
        let mut buf = Vec::new();
        frame.encode(&mut buf).map_err(|e| e.to_string())?;
        send.write_all(&buf).await.map_err(|e| e.to_string())?;
        let answer = wire::read_frame(&mut recv)
            .await
            .map_err(|e| e.to_string())?;
        Ok::<_, String>((send, recv, answer))
    }
    .await;
    result.map_err(|reason| match conn.close_reason() {
        // A refusal arrives as the quinn connection's close.
        Some(quinn::ConnectionError::ApplicationClosed(close)) => SetupFailure::Refused {
            code: close.error_code.into_inner(),
            reason: String::from_utf8_lossy(&close.reason).into_owned(),
        },
        _ => SetupFailure::Other(reason),
    })
}

/// How the client's first path becomes a session.
pub(crate) async fn client_handshake(
    endpoint: Arc<EndpointInner>,
    local: SocketAddr,
    remote: SocketAddr,
    server_name: String,
) -> Result<Connection, ConnectionError> {
    let telemetry = endpoint.new_telemetry();
    let (conn, local) = endpoint
        .connect_quinn(local, remote, &server_name, &telemetry, None)
        .await
        .map_err(|e| ConnectionError::Handshake(e.to_string()))?;
    let local_params = State::params(&endpoint.config);
    let new_session = Frame::NewSession {
        params: local_params,
    };
    let (send, recv, answer) = exchange(&conn, new_session).await.map_err(|e| match e {
        SetupFailure::Refused { code, reason } => ConnectionError::Refused { code, reason },
        SetupFailure::Other(reason) => ConnectionError::Handshake(reason),
    })?;
    match answer {
        Some(Frame::Welcome {
            session,
            secret,
            path,
            params,
        }) => {
            let config = endpoint.config.clone();
            let state = State::new(Side::Client, config, local_params, params, Instant::now());
            let shared = Shared::new(state, session, secret, endpoint, server_name);
            let connection = Connection::new(shared.clone());
            shared.add_path(
                PathId(path),
                conn,
                telemetry,
                send,
                recv,
                local,
                PathStatus::Available,
            )?;
            Ok(connection)
        }
        Some(Frame::Refused { code, reason }) => Err(ConnectionError::Refused { code, reason }),
        other => Err(ConnectionError::Handshake(format!(
            "unexpected answer to a new session: {other:?}"
        ))),
    }
}
