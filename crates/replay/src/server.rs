//! The page server: every recorded object of one or more pages over HTTP/3 over mpquic or, as
//! the baseline, over plain quinn (h3-quinn); the request handling is one, generic over the
//! `h3` crate's QUIC traits.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use bytes::Bytes;
use h3::quic;
use h3::server::RequestResolver;
use mpquic_core::h3::H3Connection;
use mpquic_core::{Connection, Endpoint, Incoming, Lead, StreamId};
use mpquic_h3_prio::{Priority, PriorityField};
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::page::Page;

/// Body bytes are sent in pieces of at most this many bytes (mpquic's largest chunk).
const PIECE: usize = 64 * 1024;
static ZEROS: [u8; PIECE] = [0; PIECE];

/// Why a [`PageServer`] could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Two pages share an id, so their keys collide.
    #[error("two pages have the id {0:?}; every page needs its own")]
    DuplicatePage(String),
}

#[derive(Debug, Clone)]
struct Served {
    size: u64,
    content_type: String,
    priority: Priority,
    /// [`Page::leads_to`]'s hint for it.
    leads_to: Option<Lead>,
    /// What to send instead of `size` zeros ([`PageServer::with_bodies`]).
    body: Option<Bytes>,
}

/// Serves every object of its pages: `GET {key}` answers 200 with a body of exactly the
/// recorded size (zero bytes), the recorded content type, `content-length` and the recorded
/// RFC 9218 `priority` as a response header; any other path answers 404.
///
/// Before the body is written, the request's urgency and incremental flag (its `priority`
/// header, else the recorded priority) and the body's size go to the multipath stream
/// ([`Connection::set_stream_priority`], [`Connection::set_stream_size_hint`]), so the scheduler
/// knows both before the first byte is scheduled. So does what the response leads to
/// ([`Page::leads_to`], [`Connection::set_stream_leads_to`]) unless
/// [`dependency_hints`](PageServer::dependency_hints) is off. A connection that fails or goes away
/// mid-page ends only its own task: the server goes on accepting.
///
/// Over plain quinn ([`PageServer::run_quinn`], [`PageServer::serve_quinn`]) the responses are
/// the same but that step is skipped: h3-quinn's request stream gives no way to reach the
/// quinn stream's priority, so a server built on h3-quinn cannot order its responses by
/// urgency, and the baseline does exactly what such a server does.
#[derive(Debug, Clone)]
pub struct PageServer {
    objects: Arc<HashMap<String, Served>>,
    dependency_hints: bool,
}

impl PageServer {
    /// A server for `pages`.
    ///
    /// # Errors
    /// [`ServeError::DuplicatePage`] when two pages have the same id.
    pub fn new(pages: &[Page]) -> Result<Self, ServeError> {
        let mut objects = HashMap::new();
        let mut ids = std::collections::HashSet::new();
        for page in pages {
            if !ids.insert(page.id.as_str()) {
                return Err(ServeError::DuplicatePage(page.id.clone()));
            }
            for (o, leads_to) in page.objects.iter().zip(page.leads_to()) {
                objects.insert(
                    o.key.clone(),
                    Served {
                        size: o.size,
                        content_type: o.content_type.clone(),
                        priority: o.priority,
                        leads_to,
                        body: None,
                    },
                );
            }
        }
        Ok(Self {
            objects: Arc::new(objects),
            dependency_hints: true,
        })
    }

    /// Whether the server tells the transport what each response leads to (the default), or
    /// only its urgency and size, as a server that knows nothing of its pages would.
    pub fn dependency_hints(mut self, on: bool) -> Self {
        self.dependency_hints = on;
        self
    }

    /// Serves these bodies instead of zeros: each `(key, body)` replaces the body of the object
    /// served under `key` (its size becomes the body's length); keys it does not serve are
    /// ignored. A real browser needs real files: the page builder of `crates/browser` makes
    /// them.
    pub fn with_bodies(mut self, bodies: impl IntoIterator<Item = (String, Bytes)>) -> Self {
        let objects = Arc::make_mut(&mut self.objects);
        for (key, body) in bodies {
            if let Some(served) = objects.get_mut(&key) {
                served.size = body.len() as u64;
                served.body = Some(body);
            }
        }
        self
    }

    /// How many objects it serves.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether it serves nothing.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Accepts sessions on `endpoint`, each set up and served in its own task, until it is
    /// closed or `limit` attempts have been accepted; in the second case it then waits for
    /// them to end.
    pub async fn run(&self, endpoint: &Endpoint, limit: Option<u64>) {
        run_sessions(
            limit,
            || endpoint.accept(),
            |incoming: Incoming| {
                let server = self.clone();
                async move {
                    match incoming.await {
                        Ok(conn) => {
                            let span =
                                tracing::debug_span!("page-session", session = conn.session_id());
                            server.serve(conn).instrument(span).await;
                        }
                        Err(e) => tracing::debug!(%e, "session set-up failed"),
                    }
                }
            },
        )
        .await;
    }

    /// [`PageServer::run`] for plain quinn connections.
    pub async fn run_quinn(&self, endpoint: &quinn::Endpoint, limit: Option<u64>) {
        run_sessions(
            limit,
            || endpoint.accept(),
            |incoming: quinn::Incoming| {
                let server = self.clone();
                async move {
                    match incoming.await {
                        Ok(conn) => {
                            server.serve_quinn(conn).await;
                        }
                        Err(e) => tracing::debug!(%e, "quinn handshake failed"),
                    }
                }
            },
        )
        .await;
    }

    /// Serves one multipath session until the client closes it; returns how many requests it
    /// answered.
    pub async fn serve(&self, conn: Connection) -> usize {
        self.serve_h3(H3Connection::new(conn.clone()), Some(conn))
            .await
    }

    /// Serves one plain quinn connection (HTTP/3 through h3-quinn) until the client closes it;
    /// returns how many requests it answered. No urgency or size reaches the transport.
    pub async fn serve_quinn(&self, conn: quinn::Connection) -> usize {
        self.serve_h3(h3_quinn::Connection::new(conn), None).await
    }

    /// Serves one HTTP/3 connection over `quic`; `hints`, the multipath connection when there
    /// is one, is told each response's urgency and size.
    async fn serve_h3<C>(&self, quic: C, hints: Option<Connection>) -> usize
    where
        C: quic::Connection<Bytes> + 'static,
        C::BidiStream: Send + 'static,
    {
        let mut h3 = match h3::server::builder().build::<_, Bytes>(quic).await {
            Ok(h3) => h3,
            Err(e) => {
                tracing::debug!(%e, "h3 set-up failed");
                return 0;
            }
        };
        let mut requests = JoinSet::new();
        let mut answered = 0;
        loop {
            match h3.accept().await {
                Ok(Some(resolver)) => {
                    answered += 1;
                    let server = self.clone();
                    let hints = hints.clone();
                    requests.spawn(async move { server.answer(hints.as_ref(), resolver).await });
                    while requests.try_join_next().is_some() {}
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!(%e, "session over");
                    break;
                }
            }
        }
        // The client has gone: whatever is still being written fails quickly.
        while requests.join_next().await.is_some() {}
        answered
    }

    async fn answer<C>(&self, hints: Option<&Connection>, resolver: RequestResolver<C, Bytes>)
    where
        C: quic::Connection<Bytes>,
    {
        let (request, mut stream) = match resolver.resolve_request().await {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(%e, "bad request");
                return;
            }
        };
        let key = request
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        let Some(object) = self.objects.get(&key) else {
            tracing::debug!(key, "404");
            let response = http::Response::builder()
                .status(http::StatusCode::NOT_FOUND)
                .header(http::header::CONTENT_TYPE, "text/plain")
                .body(());
            let body = Bytes::from_static(b"not found\n");
            if let Ok(response) = response {
                let sent = async {
                    stream.send_response(response).await?;
                    stream.send_data(body).await?;
                    stream.finish().await
                };
                if let Err(e) = sent.await {
                    tracing::debug!(%e, "404 not delivered");
                }
            }
            return;
        };
        let priority = request
            .headers()
            .get("priority")
            .map_or(object.priority, |v| Priority::from_field(v.as_bytes()));
        if let Some(conn) = hints {
            let id = StreamId(stream.id().into_inner());
            let leads_to = object.leads_to.filter(|_| self.dependency_hints);
            if let Err(e) = conn
                .set_stream_priority(id, priority)
                .and_then(|()| conn.set_stream_size_hint(id, object.size))
                .and_then(|()| leads_to.map_or(Ok(()), |lead| conn.set_stream_leads_to(id, lead)))
            {
                tracing::debug!(%e, key, "stream gone before its response");
                return;
            }
        }
        let response = http::Response::builder()
            .status(http::StatusCode::OK)
            .header(http::header::CONTENT_TYPE, object.content_type.as_str())
            .header(http::header::CONTENT_LENGTH, object.size)
            .header("priority", object.priority.to_field())
            .body(());
        let response = match response {
            Ok(r) => r,
            // A recorded content type that is not a valid header value.
            Err(_) => match http::Response::builder()
                .status(http::StatusCode::OK)
                .header(http::header::CONTENT_TYPE, "application/octet-stream")
                .header(http::header::CONTENT_LENGTH, object.size)
                .header("priority", object.priority.to_field())
                .body(())
            {
                Ok(r) => r,
                Err(_) => return,
            },
        };
        let size = object.size;
        let body = object.body.clone();
        let sent = async {
            stream.send_response(response).await?;
            if let Some(body) = body {
                for start in (0..body.len()).step_by(PIECE) {
                    let end = body.len().min(start + PIECE);
                    stream.send_data(body.slice(start..end)).await?;
                }
            } else {
                let mut left = size;
                while left > 0 {
                    let n = left.min(PIECE as u64) as usize;
                    stream.send_data(Bytes::from_static(&ZEROS[..n])).await?;
                    left -= n as u64;
                }
            }
            stream.finish().await
        };
        if let Err(e) = sent.await {
            tracing::debug!(%e, key, "response not delivered");
        }
    }
}

/// The accept loop of both transports: each accepted session served by `serve` in its own
/// task, until `accept` ends or `limit` sessions were accepted (then waiting for them).
async fn run_sessions<T, A, F>(
    limit: Option<u64>,
    mut accept: impl FnMut() -> A,
    serve: impl Fn(T) -> F,
) where
    A: Future<Output = Option<T>>,
    F: Future<Output = ()> + Send + 'static,
{
    let mut sessions = JoinSet::new();
    let mut accepted = 0;
    while limit.is_none_or(|l| accepted < l) {
        let Some(session) = accept().await else {
            return;
        };
        accepted += 1;
        sessions.spawn(serve(session));
        // Reap finished sessions so the set does not grow without bound.
        while sessions.try_join_next().is_some() {}
    }
    while sessions.join_next().await.is_some() {}
}
