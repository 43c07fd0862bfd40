//! Endpoints: the quinn endpoints a side is bound to, TLS, and the server's session table.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use mpquic_sched::{PathId, PathStatus};
use quinn::VarInt;
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::config::CongestionControl;
use crate::connection::{client_handshake, read_frame, Connection, Inner, Shared};
use crate::error::{codes, varint, AcceptError, ConnectionError, PathError};
use crate::session;
use crate::telemetry::Telemetry;
use crate::tls::{ClientConfig, ServerConfig};
use crate::wire::{Frame, SessionId};
use crate::Side;

/// How long a new path may take to say what it is.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Attempts at new sessions that wait for the application's decision; more are refused.
const ACCEPT_QUEUE: usize = 64;

pub(crate) struct EndpointInner {
    server: Option<ServerSide>,
    bound: Mutex<Vec<Bound>>,
}

/// A quinn endpoint this side is bound to.
struct Bound {
    endpoint: quinn::Endpoint,
    /// Bound for a path from a fixed port (not one of the addresses the endpoint was created
    /// with): released once no connection uses it.
    on_demand: bool,
}

struct ServerSide {
    config: ServerConfig,
    sessions: Mutex<HashMap<SessionId, Weak<Shared>>>,
    /// Attempts at new sessions, for the application to decide on.
    incoming: mpsc::Sender<Incoming>,
    /// Connections accepted from quinn that are not yet a session or a path.
    half_open: Arc<AtomicUsize>,
}

/// One half-open connection, counted until it is admitted or refused.
struct HalfOpen(Arc<AtomicUsize>);

impl HalfOpen {
    /// Counts one more, unless `limit` are open already.
    fn try_new(count: &Arc<AtomicUsize>, limit: usize) -> Option<Self> {
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .ok()?;
        Some(Self(count.clone()))
    }
}

impl Drop for HalfOpen {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A new session whose first path is not added yet: ended, with its task, if admission fails
/// or is abandoned (the peer stopped listening, or the handshake timed out).
struct PendingSession {
    shared: Arc<Shared>,
    started: bool,
}

impl PendingSession {
    /// The session is set up: it lives on.
    fn started(mut self) -> Arc<Shared> {
        self.started = true;
        self.shared.clone()
    }
}

impl Drop for PendingSession {
    fn drop(&mut self) {
        if !self.started {
            let error = ConnectionError::Handshake("session set-up failed".into());
            self.shared.close_all(error, codes::PROTOCOL_VIOLATION, b"");
        }
    }
}

/// What a new quinn connection from this side is for.
pub(crate) enum Dial<'a> {
    /// A new session's first path.
    Session,
    /// A further path of a session, with its own congestion controller if it has one.
    Join(Option<&'a CongestionControl>),
}

impl EndpointInner {
    /// Starts a quinn connection from `local` to `remote` (binding `local` if needed) with the
    /// TLS of `client` and its settings, reporting to `telemetry`. A join's first packet goes to
    /// a connection ID of [`session::JOIN_CID_LEN`] bytes, by which the server knows it. Returns
    /// the connection with the address it was bound to.
    pub(crate) fn start_quinn(
        &self,
        client: &ClientConfig,
        dial: Dial<'_>,
        local: SocketAddr,
        remote: SocketAddr,
        server_name: &str,
        telemetry: &Arc<Telemetry>,
    ) -> Result<(quinn::Connecting, SocketAddr), PathError> {
        let mut tls = client.quinn.clone();
        let congestion = match dial {
            Dial::Session => None,
            Dial::Join(congestion) => {
                tls.initial_dst_cid_provider(Arc::new(session::join_cid));
                congestion
            }
        };
        tls.transport_config(client.transport.quinn_transport(telemetry, congestion));
        let endpoint = self.bind_client(local, true)?;
        let bound = endpoint.local_addr().unwrap_or(local);
        Ok((endpoint.connect_with(tls, remote, server_name)?, bound))
    }

    /// The quinn endpoints this side is bound to, after releasing those bound for paths whose
    /// connections are all gone (closed and drained).
    fn bound(&self) -> MutexGuard<'_, Vec<Bound>> {
        let mut bound = self.bound.lock().unwrap_or_else(|e| e.into_inner());
        bound.retain(|b| !b.on_demand || b.endpoint.open_connections() > 0);
        bound
    }

    /// The client endpoint bound to `local`, bound now if there is none. A path's endpoint
    /// from port 0 is its own and is not kept here: quinn ends it, socket and task, once its
    /// last connection has drained. One from a fixed port is kept while it has connections, so
    /// that other paths from that port share it.
    fn bind_client(
        &self,
        local: SocketAddr,
        on_demand: bool,
    ) -> Result<quinn::Endpoint, PathError> {
        let mut bound = self.bound();
        if local.port() != 0 {
            if let Some(b) = bound
                .iter()
                .find(|b| b.endpoint.local_addr().ok() == Some(local))
            {
                return Ok(b.endpoint.clone());
            }
        }
        let endpoint = quinn::Endpoint::client(local).map_err(|e| PathError::Bind {
            addr: local,
            source: Arc::new(e),
        })?;
        if !(on_demand && local.port() == 0) {
            bound.push(Bound {
                endpoint: endpoint.clone(),
                on_demand,
            });
        }
        Ok(endpoint)
    }
}

/// A client, a server or both, bound to one or more local addresses.
///
/// A client connects from its first address and opens further paths with
/// [`Connection::open_path`]; a server listens on every address and accepts both new sessions and
/// joins of further paths to existing ones. An endpoint with a [`ServerConfig`] and a default
/// [`ClientConfig`] does both.
pub struct Endpoint {
    inner: Arc<EndpointInner>,
    default_client: Option<ClientConfig>,
    incoming: Option<tokio::sync::Mutex<mpsc::Receiver<Incoming>>>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("local", &self.local_addrs())
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// An endpoint bound to each of `local` (port 0 picks a free port), accepting sessions if it
    /// has a `server` configuration. Must run inside a tokio runtime.
    ///
    /// # Errors
    /// An address cannot be bound.
    pub fn new(local: &[SocketAddr], server: Option<ServerConfig>) -> io::Result<Self> {
        let (server, incoming) = match server {
            Some(config) => {
                let (tx, rx) = mpsc::channel(ACCEPT_QUEUE);
                let side = ServerSide {
                    config,
                    sessions: Mutex::new(HashMap::new()),
                    incoming: tx,
                    half_open: Arc::new(AtomicUsize::new(0)),
                };
                (Some(side), Some(tokio::sync::Mutex::new(rx)))
            }
            None => (None, None),
        };
        let inner = Arc::new(EndpointInner {
            server,
            bound: Mutex::new(Vec::new()),
        });
        for addr in local {
            let endpoint = match &inner.server {
                Some(server) => {
                    let endpoint = quinn::Endpoint::server(server.config.quinn.clone(), *addr)?;
                    tokio::spawn(listen(Arc::downgrade(&inner), endpoint.clone()));
                    endpoint
                }
                None => quinn::Endpoint::client(*addr)?,
            };
            inner.bound().push(Bound {
                endpoint,
                on_demand: false,
            });
        }
        Ok(Self {
            inner,
            default_client: None,
            incoming,
        })
    }

    /// A client bound to `local` (port 0 picks a free port); it connects once it has a
    /// [`ClientConfig`] ([`set_default_client_config`](Self::set_default_client_config)).
    ///
    /// # Errors
    /// `local` cannot be bound.
    pub fn client(local: SocketAddr) -> io::Result<Self> {
        Self::new(&[local], None)
    }

    /// A server listening on `local`.
    ///
    /// # Errors
    /// `local` cannot be bound.
    pub fn server(config: ServerConfig, local: SocketAddr) -> io::Result<Self> {
        Self::new(&[local], Some(config))
    }

    /// The configuration [`connect`](Self::connect) uses.
    pub fn set_default_client_config(&mut self, config: ClientConfig) {
        self.default_client = Some(config);
    }

    /// The addresses this endpoint is bound to: the ones it was created with, and fixed ports
    /// bound for paths while their connections last (a path's own port-0 socket is not listed).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.inner
            .bound()
            .iter()
            .filter_map(|b| b.endpoint.local_addr().ok())
            .collect()
    }

    /// The first address this endpoint is bound to.
    ///
    /// # Errors
    /// It is bound to none (every address was released).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.local_addrs()
            .first()
            .copied()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, "bound to no address"))
    }

    /// Connects to a server from this endpoint's first address with the default
    /// [`ClientConfig`].
    ///
    /// # Errors
    /// There is no default client configuration, or quinn cannot start the connection.
    pub fn connect(&self, remote: SocketAddr, server_name: &str) -> Result<Connecting, PathError> {
        let config = self
            .default_client
            .clone()
            .ok_or(PathError::NoClientConfig)?;
        self.connect_with(config, remote, server_name)
    }

    /// Connects to a server from this endpoint's first address with `config`.
    ///
    /// # Errors
    /// quinn cannot start the connection.
    pub fn connect_with(
        &self,
        config: ClientConfig,
        remote: SocketAddr,
        server_name: &str,
    ) -> Result<Connecting, PathError> {
        let local = self.local_addr().map_err(|_| PathError::NoLocalAddress)?;
        self.connect_from(config, local, remote, server_name)
    }

    /// Connects to a server from `local` (bound now if this endpoint is not bound to it yet)
    /// with `config`.
    ///
    /// # Errors
    /// `local` cannot be bound, or quinn cannot start the connection.
    pub fn connect_from(
        &self,
        config: ClientConfig,
        local: SocketAddr,
        remote: SocketAddr,
        server_name: &str,
    ) -> Result<Connecting, PathError> {
        let telemetry = config.transport.new_telemetry();
        let (quinn, local) = self.inner.start_quinn(
            &config,
            Dial::Session,
            local,
            remote,
            server_name,
            &telemetry,
        )?;
        let future = client_handshake(
            self.inner.clone(),
            config,
            quinn,
            telemetry,
            local,
            server_name.to_owned(),
        );
        Ok(Connecting(Box::pin(future)))
    }

    /// The next attempt at a new session (servers only), before its handshake; `None` once
    /// the endpoint is closed, or at once on an endpoint without a [`ServerConfig`]. Paths that
    /// join a session are admitted without it.
    pub async fn accept(&self) -> Option<Incoming> {
        self.incoming.as_ref()?.lock().await.recv().await
    }

    /// The sessions this server holds (those not yet over).
    pub fn open_connections(&self) -> usize {
        let Some(server) = &self.inner.server else {
            return 0;
        };
        let sessions = server.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions
            .values()
            .filter(|s| s.upgrade().is_some_and(|s| s.lock().error().is_none()))
            .count()
    }

    /// Stops listening and closes every quinn endpoint, with `code` and `reason` to the peers
    /// of the paths still open.
    pub fn close(&self, code: VarInt, reason: &[u8]) {
        for bound in self.inner.bound().iter() {
            bound.endpoint.close(code, reason);
        }
    }

    /// Waits until every path this endpoint is bound for has ended and told its peer (quinn's
    /// `wait_idle` on each of its sockets).
    pub async fn wait_idle(&self) {
        let endpoints: Vec<quinn::Endpoint> = self
            .inner
            .bound()
            .iter()
            .map(|b| b.endpoint.clone())
            .collect();
        for endpoint in endpoints {
            endpoint.wait_idle().await;
        }
    }
}

/// An attempt at a new session, before its handshake: the server's application decides, as
/// with quinn's `Incoming`, whether to await it (for the [`Connection`]), refuse it, ask the
/// client to prove its address with a stateless [`retry`](Self::retry), or ignore it.
/// Dropping it refuses it.
pub struct Incoming {
    quinn: quinn::Incoming,
    endpoint: Weak<EndpointInner>,
    /// The server address it came to.
    local: SocketAddr,
}

impl std::fmt::Debug for Incoming {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Incoming")
            .field("remote", &self.remote_address())
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

impl Incoming {
    /// The local IP address the attempt came to, if the platform says.
    pub fn local_ip(&self) -> Option<std::net::IpAddr> {
        self.quinn.local_ip()
    }

    /// The client's address.
    pub fn remote_address(&self) -> SocketAddr {
        self.quinn.remote_address()
    }

    /// Whether the client has proven its address (it answered a retry).
    pub fn remote_address_validated(&self) -> bool {
        self.quinn.remote_address_validated()
    }

    /// Whether [`retry`](Self::retry) is possible (the client has not answered one yet).
    pub fn may_retry(&self) -> bool {
        self.quinn.may_retry()
    }

    /// Answers with a stateless retry (RFC 9000, section 8.1.2): the client comes back with a
    /// token that proves its address, and the server keeps nothing until then.
    ///
    /// # Errors
    /// The client has already answered a retry; the attempt is handed back.
    pub fn retry(self) -> Result<(), RetryError> {
        let Self {
            quinn,
            endpoint,
            local,
        } = self;
        quinn.retry().map_err(|e| {
            RetryError(Box::new(Self {
                quinn: e.into_incoming(),
                endpoint,
                local,
            }))
        })
    }

    /// Refuses the attempt: the client is told the connection was refused.
    pub fn refuse(self) {
        self.quinn.refuse();
    }

    /// Ignores the attempt, sending the client nothing.
    pub fn ignore(self) {
        self.quinn.ignore();
    }

    /// Runs the handshake and the session's set-up: the session's first path.
    async fn accept(self) -> Result<Connection, AcceptError> {
        let inner = self.endpoint.upgrade().ok_or(AcceptError::EndpointClosed)?;
        let path = Handshaking::start(&inner, self.quinn, self.local)?
            .finish()
            .await?;
        let conn = path.conn.clone();
        admit_in_time(&conn, admit_session(&inner, path)).await
    }
}

impl std::future::IntoFuture for Incoming {
    type Output = Result<Connection, AcceptError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send + 'static>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.accept())
    }
}

/// A [`retry`](Incoming::retry) that was not possible: the client has already answered one.
#[derive(Debug, thiserror::Error)]
#[error("the client has already answered a retry")]
pub struct RetryError(Box<Incoming>);

impl RetryError {
    /// The attempt, to accept, refuse or ignore.
    pub fn into_incoming(self) -> Incoming {
        *self.0
    }
}

/// A connection on its way up: resolves once the first path has a session, or says why the
/// first path could not be set up.
pub struct Connecting(
    Pin<Box<dyn Future<Output = Result<Connection, PathError>> + Send + 'static>>,
);

impl std::fmt::Debug for Connecting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Connecting")
    }
}

impl Future for Connecting {
    type Output = Result<Connection, PathError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.as_mut().poll(cx)
    }
}

/// Takes quinn connections on one server address: joins are admitted here, attempts at new
/// sessions wait for the application.
async fn listen(inner: Weak<EndpointInner>, endpoint: quinn::Endpoint) {
    let local = endpoint.local_addr().unwrap_or(([0, 0, 0, 0], 0).into());
    while let Some(incoming) = endpoint.accept().await {
        let Some(strong) = inner.upgrade() else {
            return;
        };
        let Some(server) = &strong.server else {
            return;
        };
        // A stateless retry makes the client prove its address before any state is kept.
        if server.config.retry_unvalidated && !incoming.remote_address_validated() {
            if let Err(e) = incoming.retry() {
                tracing::debug!(%e, "retry not possible: refusing");
                e.into_incoming().refuse();
            }
            continue;
        }
        if session::is_join(&incoming.orig_dst_cid()) {
            match Handshaking::start(&strong, incoming, local) {
                Ok(handshaking) => {
                    let inner = strong.clone();
                    tokio::spawn(
                        async move {
                            if let Err(e) = accept_join(&inner, handshaking).await {
                                tracing::info!(%e, "path refused");
                            }
                        }
                        .in_current_span(),
                    );
                }
                Err(e) => tracing::debug!(%e, "join refused before its handshake"),
            }
            continue;
        }
        let attempt = Incoming {
            quinn: incoming,
            endpoint: inner.clone(),
            local,
        };
        if let Err(e) = server.incoming.try_send(attempt) {
            // Full (the application is behind) or closed (the endpoint is going).
            tracing::debug!("no room for another attempt at a session: refusing it");
            e.into_inner().refuse();
        }
    }
}

/// Takes a path that joins a session through its handshake and its `Join`.
async fn accept_join(
    inner: &Arc<EndpointInner>,
    handshaking: Handshaking,
) -> Result<(), AcceptError> {
    let path = handshaking.finish().await?;
    let conn = path.conn.clone();
    admit_in_time(&conn, admit_join(inner, path)).await
}

/// A server's new path, its handshake done, counted as half-open until it is set up.
struct NewPath {
    conn: quinn::Connection,
    telemetry: Arc<Telemetry>,
    /// The server address it came to.
    local: SocketAddr,
    _half_open: HalfOpen,
}

impl NewPath {
    /// Opens the path's control stream and reads its first frame.
    async fn first_frame(
        &self,
    ) -> Result<(quinn::SendStream, quinn::RecvStream, Option<Frame>), AcceptError> {
        let (send, mut recv) = self
            .conn
            .accept_bi()
            .await
            .map_err(|e| refused(codes::PROTOCOL_VIOLATION, e))?;
        let first = read_frame(&mut recv)
            .await
            .map_err(|e| refused(codes::FRAME_ENCODING, e))?;
        Ok((send, recv, first))
    }

    /// Sends `answer` to the path's first frame and adds the path to `shared` as `id`.
    async fn answer(
        self,
        shared: &Arc<Shared>,
        id: PathId,
        answer: Frame,
        mut send: quinn::SendStream,
        recv: quinn::RecvStream,
    ) -> Result<(), AcceptError> {
        let mut buf = Vec::new();
        answer
            .encode(&mut buf)
            .map_err(|e| refused(codes::PROTOCOL_VIOLATION, e))?;
        send.write_all(&buf)
            .await
            .map_err(|e| refused(codes::PROTOCOL_VIOLATION, e))?;
        // The session may have ended while the answer was being written.
        shared
            .add_path(
                id,
                self.conn,
                self.telemetry,
                send,
                recv,
                self.local,
                PathStatus::Available,
            )
            .map_err(|_| refused(codes::UNKNOWN_SESSION, "session closed"))
    }
}

/// A new quinn connection in its handshake, counted as half-open until it is set up.
struct Handshaking {
    connecting: quinn::Connecting,
    telemetry: Arc<Telemetry>,
    local: SocketAddr,
    half_open: HalfOpen,
}

impl Handshaking {
    /// Starts `incoming`'s handshake; past
    /// [`Config::max_half_open`](crate::Config::max_half_open) connections in their handshake
    /// or set-up, it is refused at once, before any task is spent on it.
    fn start(
        inner: &EndpointInner,
        incoming: quinn::Incoming,
        local: SocketAddr,
    ) -> Result<Self, AcceptError> {
        let server = inner.server.as_ref().ok_or(AcceptError::EndpointClosed)?;
        let config = &server.config.transport;
        let Some(half_open) = HalfOpen::try_new(&server.half_open, config.max_half_open) else {
            incoming.refuse();
            return Err(AcceptError::TooManyHalfOpen);
        };
        let telemetry = config.new_telemetry();
        let mut tls = server.config.quinn.clone();
        tls.transport_config(config.quinn_transport(&telemetry, None));
        let connecting = incoming
            .accept_with(Arc::new(tls))
            .map_err(AcceptError::Handshake)?;
        Ok(Self {
            connecting,
            telemetry,
            local,
            half_open,
        })
    }

    /// Waits for the handshake.
    async fn finish(self) -> Result<NewPath, AcceptError> {
        let conn = self.connecting.await.map_err(AcceptError::Handshake)?;
        Ok(NewPath {
            conn,
            telemetry: self.telemetry,
            local: self.local,
            _half_open: self.half_open,
        })
    }
}

/// Waits for a path's set-up, at most [`HANDSHAKE_TIMEOUT`]; a path that is refused, or says
/// nothing in time, is closed with the refusal's code.
async fn admit_in_time<T>(
    conn: &quinn::Connection,
    admission: impl Future<Output = Result<T, AcceptError>>,
) -> Result<T, AcceptError> {
    let result = tokio::time::timeout(HANDSHAKE_TIMEOUT, admission)
        .await
        .unwrap_or_else(|_| {
            Err(refused(
                codes::PROTOCOL_VIOLATION,
                "no session frame in time",
            ))
        });
    if let Err(AcceptError::Refused { code, reason }) = &result {
        conn.close(varint(*code), reason.as_bytes());
    }
    result
}

fn refused(code: u64, reason: impl ToString) -> AcceptError {
    AcceptError::Refused {
        code,
        reason: reason.to_string(),
    }
}

/// Sets up a new session on its first path, which must say `NewSession`.
async fn admit_session(
    inner: &Arc<EndpointInner>,
    path: NewPath,
) -> Result<Connection, AcceptError> {
    let server = inner.server.as_ref().ok_or(AcceptError::EndpointClosed)?;
    let (send, recv, first) = path.first_frame().await?;
    let Some(Frame::NewSession { params }) = first else {
        return Err(refused(codes::PROTOCOL_VIOLATION, "expected a new session"));
    };
    let config = &server.config.transport;
    let local_params = config.params();
    let (session, secret) =
        session::new_session().map_err(|e| refused(codes::PROTOCOL_VIOLATION, e))?;
    let pending = {
        let mut sessions = server.sessions.lock().unwrap_or_else(|e| e.into_inner());
        sessions.retain(|_, s| s.upgrade().is_some_and(|s| s.lock().error().is_none()));
        if sessions.len() >= config.max_sessions {
            return Err(refused(codes::SESSION_LIMIT, "too many sessions"));
        }
        let mut state = Inner::new(Side::Server, config.clone(), local_params, params);
        // The first path is 0.
        let _ = state.core.next_path_id();
        let shared = Shared::new(state, session, secret, inner.clone(), None);
        sessions.insert(session, Arc::downgrade(&shared));
        PendingSession {
            shared,
            started: false,
        }
    };
    let welcome = Frame::Welcome {
        session,
        secret,
        path: 0,
        params: local_params,
    };
    path.answer(&pending.shared, PathId(0), welcome, send, recv)
        .await?;
    Ok(Connection::new(pending.started()))
}

/// Adds a path to the session it names, if it proves the session's secret.
async fn admit_join(inner: &Arc<EndpointInner>, path: NewPath) -> Result<(), AcceptError> {
    let server = inner.server.as_ref().ok_or(AcceptError::EndpointClosed)?;
    let (send, recv, first) = path.first_frame().await?;
    let Some(Frame::Join { session, proof, .. }) = first else {
        return Err(refused(codes::PROTOCOL_VIOLATION, "expected a join"));
    };
    let shared = server
        .sessions
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&session)
        .and_then(Weak::upgrade)
        .ok_or(refused(codes::UNKNOWN_SESSION, "unknown session"))?;
    let exported = session::exporter(&path.conn, session)
        .ok_or(refused(codes::JOIN_REFUSED, "TLS exporter unavailable"))?;
    if !session::verify(&shared.secret, session, &exported, &proof) {
        return Err(refused(codes::JOIN_REFUSED, "wrong join secret"));
    }
    let id = {
        let mut state = shared.lock();
        if state.error().is_some() {
            return Err(refused(codes::UNKNOWN_SESSION, "session closed"));
        }
        if state.paths.len() >= state.config.max_paths {
            return Err(refused(codes::TOO_MANY_PATHS, "too many paths"));
        }
        state.core.next_path_id()
    };
    path.answer(&shared, id, Frame::Joined { path: id.0 }, send, recv)
        .await
}
