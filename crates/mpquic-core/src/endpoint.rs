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
use crate::error::{codes, varint, ConnectionError, PathError};
use crate::session;
use crate::telemetry::Telemetry;
use crate::tls::{ClientConfig, ServerConfig};
use crate::wire::{Frame, SessionId};
use crate::Side;

/// How long a new path may take to say what it is.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections the server has accepted and not yet handed out; more wait in quinn.
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
    accepted: mpsc::Sender<Connection>,
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

impl EndpointInner {
    /// Starts a quinn connection from `local` to `remote` (binding `local` if needed) with the
    /// TLS of `client` and its settings, the path's own congestion controller if it has one,
    /// reporting to `telemetry`. Returns it with the address it was bound to.
    pub(crate) fn start_quinn(
        &self,
        client: &ClientConfig,
        local: SocketAddr,
        remote: SocketAddr,
        server_name: &str,
        telemetry: &Arc<Telemetry>,
        congestion: Option<&CongestionControl>,
    ) -> Result<(quinn::Connecting, SocketAddr), PathError> {
        let mut tls = client.quinn.clone();
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
    accepted: Option<tokio::sync::Mutex<mpsc::Receiver<Connection>>>,
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
        let (server, accepted) = match server {
            Some(config) => {
                let (tx, rx) = mpsc::channel(ACCEPT_QUEUE);
                let side = ServerSide {
                    config,
                    sessions: Mutex::new(HashMap::new()),
                    accepted: tx,
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
            accepted,
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
        let (quinn, local) =
            self.inner
                .start_quinn(&config, local, remote, server_name, &telemetry, None)?;
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

    /// The next new session (servers only); `None` once the endpoint is closed, or at once on
    /// an endpoint without a [`ServerConfig`].
    pub async fn accept(&self) -> Option<Incoming> {
        let connection = self.accepted.as_ref()?.lock().await.recv().await?;
        Some(Incoming(connection))
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

/// A new session a server endpoint accepted: its first path's handshake and the session
/// frame are done. Await it for the [`Connection`], or [`refuse`](Self::refuse) it.
#[derive(Debug)]
pub struct Incoming(Connection);

impl Incoming {
    /// The peer's address on the session's first path.
    pub fn remote_address(&self) -> SocketAddr {
        self.0.remote_address()
    }

    /// Ends the session at once, telling the peer it was refused.
    pub fn refuse(self) {
        self.0.close_with(codes::SESSION_REFUSED, b"refused");
    }
}

impl std::future::IntoFuture for Incoming {
    type Output = Result<Connection, ConnectionError>;
    type IntoFuture = std::future::Ready<Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        std::future::ready(Ok(self.0))
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

/// Accepts quinn connections on one server address, each with its own telemetry.
async fn listen(inner: Weak<EndpointInner>, endpoint: quinn::Endpoint) {
    while let Some(incoming) = endpoint.accept().await {
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let Some(server) = &inner.server else {
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
        let config = &server.config.transport;
        let Some(half_open) = HalfOpen::try_new(&server.half_open, config.max_half_open) else {
            tracing::debug!("too many half-open connections: refusing one");
            incoming.refuse();
            continue;
        };
        let telemetry = config.new_telemetry();
        let mut tls = server.config.quinn.clone();
        tls.transport_config(config.quinn_transport(&telemetry, None));
        let local = endpoint.local_addr().unwrap_or(([0, 0, 0, 0], 0).into());
        match incoming.accept_with(Arc::new(tls)) {
            Ok(connecting) => {
                tokio::spawn(
                    async move {
                        let _half_open = half_open;
                        let Ok(conn) = connecting.await else {
                            return;
                        };
                        if let Err(e) = tokio::time::timeout(
                            HANDSHAKE_TIMEOUT,
                            admit(&inner, conn.clone(), telemetry, local),
                        )
                        .await
                        .unwrap_or(Err(Refusal::new(
                            codes::PROTOCOL_VIOLATION,
                            "no session frame in time",
                        ))) {
                            tracing::info!(code = e.code, reason = %e.reason, "path refused");
                            conn.close(varint(e.code), e.reason.as_bytes());
                        }
                    }
                    .in_current_span(),
                );
            }
            Err(e) => tracing::debug!(%e, "incoming connection failed"),
        }
    }
}

struct Refusal {
    code: u64,
    reason: String,
}

impl Refusal {
    fn new(code: u64, reason: &str) -> Self {
        Self {
            code,
            reason: reason.to_owned(),
        }
    }
}

/// Reads a new path's first frame: a new session, or a join that must prove its secret.
async fn admit(
    inner: &Arc<EndpointInner>,
    conn: quinn::Connection,
    telemetry: Arc<Telemetry>,
    local: SocketAddr,
) -> Result<(), Refusal> {
    let server = inner
        .server
        .as_ref()
        .ok_or(Refusal::new(codes::PROTOCOL_VIOLATION, "not a server"))?;
    let (mut send, mut recv) = conn
        .accept_bi()
        .await
        .map_err(|e| Refusal::new(codes::PROTOCOL_VIOLATION, &e.to_string()))?;
    let first = read_frame(&mut recv)
        .await
        .map_err(|e| Refusal::new(codes::FRAME_ENCODING, &e.to_string()))?;
    let config = &server.config.transport;
    let local_params = config.params();
    match first {
        Some(Frame::NewSession { params }) => {
            let (session, secret) = session::new_session()
                .map_err(|e| Refusal::new(codes::PROTOCOL_VIOLATION, &e.to_string()))?;
            let shared = {
                let mut sessions = server.sessions.lock().unwrap_or_else(|e| e.into_inner());
                sessions.retain(|_, s| s.upgrade().is_some_and(|s| s.lock().error().is_none()));
                if sessions.len() >= config.max_sessions {
                    return Err(Refusal::new(codes::SESSION_LIMIT, "too many sessions"));
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
            let mut buf = Vec::new();
            Frame::Welcome {
                session,
                secret,
                path: 0,
                params: local_params,
            }
            .encode(&mut buf)
            .map_err(|e| Refusal::new(codes::PROTOCOL_VIOLATION, &e.to_string()))?;
            send.write_all(&buf)
                .await
                .map_err(|e| Refusal::new(codes::PROTOCOL_VIOLATION, &e.to_string()))?;
            let shared = shared.started();
            let connection = Connection::new(shared.clone());
            shared
                .add_path(
                    PathId(0),
                    conn,
                    telemetry,
                    send,
                    recv,
                    local,
                    PathStatus::Available,
                )
                .map_err(|e| Refusal::new(codes::UNKNOWN_SESSION, &e.to_string()))?;
            if server.accepted.send(connection).await.is_err() {
                tracing::debug!("endpoint gone; dropping a new session");
            }
            Ok(())
        }
        Some(Frame::Join { session, proof, .. }) => {
            let shared = server
                .sessions
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&session)
                .and_then(Weak::upgrade)
                .ok_or(Refusal::new(codes::UNKNOWN_SESSION, "unknown session"))?;
            let exported = session::exporter(&conn, session).ok_or(Refusal::new(
                codes::JOIN_REFUSED,
                "TLS exporter unavailable",
            ))?;
            if !session::verify(&shared.secret, session, &exported, &proof) {
                return Err(Refusal::new(codes::JOIN_REFUSED, "wrong join secret"));
            }
            let id = {
                let mut state = shared.lock();
                if state.error().is_some() {
                    return Err(Refusal::new(codes::UNKNOWN_SESSION, "session closed"));
                }
                if state.paths.len() >= state.config.max_paths {
                    return Err(Refusal::new(codes::TOO_MANY_PATHS, "too many paths"));
                }
                state.core.next_path_id().0
            };
            let mut buf = Vec::new();
            Frame::Joined { path: id }
                .encode(&mut buf)
                .map_err(|e| Refusal::new(codes::PROTOCOL_VIOLATION, &e.to_string()))?;
            send.write_all(&buf)
                .await
                .map_err(|e| Refusal::new(codes::PROTOCOL_VIOLATION, &e.to_string()))?;
            // The session may have ended while `Joined` was being written.
            shared
                .add_path(
                    PathId(id),
                    conn,
                    telemetry,
                    send,
                    recv,
                    local,
                    PathStatus::Available,
                )
                .map_err(|_| Refusal::new(codes::UNKNOWN_SESSION, "session closed"))?;
            Ok(())
        }
        _ => Err(Refusal::new(
            codes::PROTOCOL_VIOLATION,
            "expected a new session or a join",
        )),
    }
}
