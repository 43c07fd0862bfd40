//! Endpoints: the quinn endpoints a side is bound to, TLS, and the server's session table.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use mpquic_sched::{PathId, PathStatus};
use quinn::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use quinn::{TransportConfig, VarInt};
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::config::{Config, CongestionControl};
use crate::connection::{client_handshake, read_frame, Connection, Inner, Shared};
use crate::error::{codes, ConfigError, ConnectionError, PathError};
use crate::session;
use crate::telemetry::Telemetry;
use crate::wire::{Frame, SessionId};
use crate::Side;

/// How long a new path may take to say what it is.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections the server has accepted and not yet handed out; more wait in quinn.
const ACCEPT_QUEUE: usize = 64;

pub(crate) struct EndpointInner {
    pub(crate) config: Arc<Config>,
    client_tls: Option<quinn::ClientConfig>,
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
    tls: quinn::ServerConfig,
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
    pub(crate) fn new_telemetry(&self) -> Arc<Telemetry> {
        self.config.new_telemetry()
    }

    /// quinn's settings for one path, reporting to `telemetry`.
    fn transport(
        &self,
        telemetry: &Arc<Telemetry>,
        congestion: Option<&CongestionControl>,
    ) -> Arc<TransportConfig> {
        self.config.quinn_transport(telemetry, congestion)
    }

    /// Connects a new quinn connection from `local` to `remote` (binding `local` if needed).
    pub(crate) async fn connect_quinn(
        &self,
        local: SocketAddr,
        remote: SocketAddr,
        server_name: &str,
        telemetry: &Arc<Telemetry>,
        congestion: Option<&CongestionControl>,
    ) -> Result<(quinn::Connection, SocketAddr), PathError> {
        let mut tls = self.client_tls.clone().ok_or(PathError::NotClient)?;
        tls.transport_config(self.transport(telemetry, congestion));
        let endpoint = self.bind_client(local, true)?;
        let bound = endpoint.local_addr().unwrap_or(local);
        let conn = endpoint
            .connect_with(tls, remote, server_name)
            .map_err(|e| PathError::Handshake(e.to_string()))?
            .await
            .map_err(|e| PathError::Handshake(e.to_string()))?;
        Ok((conn, bound))
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
            reason: e.to_string(),
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

/// A client or server bound to one or more local addresses.
///
/// A client connects from its first address and opens further paths with
/// [`Connection::open_path`]; a server listens on every address and accepts both new sessions and
/// joins of further paths to existing ones.
pub struct Endpoint {
    inner: Arc<EndpointInner>,
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
    /// A client bound to `local` addresses (port 0 picks a free port), trusting `roots`.
    /// Must run inside a tokio runtime.
    pub fn client(
        local: &[SocketAddr],
        config: Config,
        roots: quinn::rustls::RootCertStore,
    ) -> Result<Self, ConfigError> {
        let tls = quinn::ClientConfig::with_root_certificates(Arc::new(roots))
            .map_err(|e| ConfigError::Tls(e.to_string()))?;
        let inner = Arc::new(EndpointInner {
            config: Arc::new(config),
            client_tls: Some(tls),
            server: None,
            bound: Mutex::new(Vec::new()),
        });
        for addr in local {
            inner.bind_client(*addr, false).map_err(|e| match e {
                PathError::Bind { addr, reason } => ConfigError::Bind { addr, reason },
                other => ConfigError::Tls(other.to_string()),
            })?;
        }
        Ok(Self {
            inner,
            accepted: None,
        })
    }

    /// A server listening on `local` addresses with a certificate chain and its key.
    /// Must run inside a tokio runtime.
    pub fn server(
        local: &[SocketAddr],
        config: Config,
        cert_chain: Vec<CertificateDer<'static>>,
        key: PrivateKeyDer<'static>,
    ) -> Result<Self, ConfigError> {
        let tls = quinn::ServerConfig::with_single_cert(cert_chain, key)
            .map_err(|e| ConfigError::Tls(e.to_string()))?;
        let (tx, rx) = mpsc::channel(ACCEPT_QUEUE);
        let inner = Arc::new(EndpointInner {
            config: Arc::new(config),
            client_tls: None,
            server: Some(ServerSide {
                tls: tls.clone(),
                sessions: Mutex::new(HashMap::new()),
                accepted: tx,
                half_open: Arc::new(AtomicUsize::new(0)),
            }),
            bound: Mutex::new(Vec::new()),
        });
        for addr in local {
            let endpoint =
                quinn::Endpoint::server(tls.clone(), *addr).map_err(|e| ConfigError::Bind {
                    addr: *addr,
                    reason: e.to_string(),
                })?;
            inner.bound().push(Bound {
                endpoint: endpoint.clone(),
                on_demand: false,
            });
            tokio::spawn(listen(Arc::downgrade(&inner), endpoint));
        }
        Ok(Self {
            inner,
            accepted: Some(tokio::sync::Mutex::new(rx)),
        })
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

    /// Connects to a server from this endpoint's first address.
    pub fn connect(&self, remote: SocketAddr, server_name: &str) -> Result<Connecting, PathError> {
        let local = *self
            .local_addrs()
            .first()
            .ok_or_else(|| PathError::Handshake("endpoint bound to no address".into()))?;
        self.connect_from(local, remote, server_name)
    }

    /// Connects to a server from a given local address (bound on demand).
    pub fn connect_from(
        &self,
        local: SocketAddr,
        remote: SocketAddr,
        server_name: &str,
    ) -> Result<Connecting, PathError> {
        if self.inner.client_tls.is_none() {
            return Err(PathError::NotClient);
        }
        let future = client_handshake(self.inner.clone(), local, remote, server_name.to_owned());
        Ok(Connecting(Box::pin(future)))
    }

    /// The next new session (server only); `None` once the endpoint stops.
    pub async fn accept(&self) -> Option<Connection> {
        self.accepted.as_ref()?.lock().await.recv().await
    }

    /// Stops listening and closes every quinn endpoint.
    pub fn close(&self) {
        for bound in self.inner.bound().iter() {
            bound.endpoint.close(0u32.into(), b"endpoint closed");
        }
    }
}

/// A connection on its way up: resolves once the first path has a session.
pub struct Connecting(
    Pin<Box<dyn Future<Output = Result<Connection, ConnectionError>> + Send + 'static>>,
);

impl std::fmt::Debug for Connecting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Connecting")
    }
}

impl Future for Connecting {
    type Output = Result<Connection, ConnectionError>;

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
        let Some(half_open) = HalfOpen::try_new(&server.half_open, inner.config.max_half_open)
        else {
            tracing::debug!("too many half-open connections: refusing one");
            incoming.refuse();
            continue;
        };
        let telemetry = inner.new_telemetry();
        let mut tls = server.tls.clone();
        tls.transport_config(inner.transport(&telemetry, None));
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
                            conn.close(
                                VarInt::from_u64(e.code).unwrap_or_default(),
                                e.reason.as_bytes(),
                            );
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
    let local_params = inner.config.params();
    match first {
        Some(Frame::NewSession { params }) => {
            let (session, secret) = session::new_session()
                .map_err(|e| Refusal::new(codes::PROTOCOL_VIOLATION, &e.to_string()))?;
            let shared = {
                let mut sessions = server.sessions.lock().unwrap_or_else(|e| e.into_inner());
                sessions.retain(|_, s| s.upgrade().is_some_and(|s| s.lock().error().is_none()));
                if sessions.len() >= inner.config.max_sessions {
                    return Err(Refusal::new(codes::SESSION_LIMIT, "too many sessions"));
                }
                let mut state =
                    Inner::new(Side::Server, inner.config.clone(), local_params, params);
                // The first path is 0.
                let _ = state.core.next_path_id();
                let shared = Shared::new(state, session, secret, inner.clone(), String::new());
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
