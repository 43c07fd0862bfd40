//! The proxy between a stock browser and the page server: the browser speaks HTTP/2 (or
//! HTTP/1.1) over TLS to it as to every origin of the page (its host names resolve here), and
//! each request becomes an HTTP/3 request over one mpquic connection or, as the baseline, one
//! plain quinn connection. Responses stream back as they arrive.
//!
//! Each request carries the browser's priority to the server: its `priority` header (RFC 9218)
//! where the browser sent one, else Chrome's default for the resource type its
//! `Sec-Fetch-Dest` names ([`Browser::Chrome`]'s table in `mpquic-h3-prio`). The page's metrics
//! script posts to [`BEACON_PATH`]; the proxy keeps those reports and forwards nothing.

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

use bytes::{Buf, Bytes};
use h3::client::SendRequest;
use h3::quic;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Channel, Either, Full, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use mpquic_core::SelfSigned;
use mpquic_h3_prio::{Browser, Priority, PriorityField, ResourceType};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;

use crate::error::BrowserError;
use crate::metrics::{PaintReport, BEACON_PATH};
use crate::site::Site;

/// The largest metrics report the proxy reads: the resource log of a page of a few thousand
/// objects fits many times over.
const MAX_REPORT_BYTES: usize = 16 << 20;

/// Response bodies are handed to the browser's connection through a channel of this many
/// pieces, so a slow browser holds back the upstream reads rather than filling memory.
const BODY_PIECES: usize = 16;

type Body = Either<Full<Bytes>, Channel<Bytes, std::io::Error>>;

/// What the proxy saw, for the load's report.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProxyLog {
    /// Requests forwarded to the page server.
    pub forwarded: u64,
    /// How many of them carried the browser's own `priority` header (the others got Chrome's
    /// default for their `Sec-Fetch-Dest`).
    pub browser_priority: u64,
    /// URLs the browser asked for that the page does not have (answered 404 by the proxy).
    pub unknown: Vec<String>,
    /// Requests that failed upstream, with the reason.
    pub failed: Vec<String>,
}

/// A running proxy: listens on a loopback port until dropped.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    reports: mpsc::Receiver<PaintReport>,
    log: Arc<Mutex<ProxyLog>>,
    /// The accept loop; its connections and the HTTP/3 driver are its tasks, so aborting it
    /// (on drop) ends them all.
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Starts a proxy for `site` on 127.0.0.1 (a free port), forwarding over `upstream`: an
    /// HTTP/3-capable QUIC connection to the page server ([`mpquic_core::h3::H3Connection`]
    /// over an mpquic connection, or `h3_quinn::Connection` over plain quinn).
    ///
    /// # Errors
    /// [`BrowserError::Proxy`] when the listener, the certificate or HTTP/3 cannot be set up.
    pub async fn start<C, O>(site: Arc<Site>, upstream: C) -> Result<Proxy, BrowserError>
    where
        C: quic::Connection<Bytes, OpenStreams = O> + Send + 'static,
        C::RecvStream: Send + 'static,
        <C as quic::OpenStreams<Bytes>>::SendStream: Send + 'static,
        <C as quic::OpenStreams<Bytes>>::BidiStream: Send + 'static,
        O: quic::OpenStreams<Bytes> + Clone + Send + Sync + 'static,
        O::BidiStream: Send + 'static,
        O::SendStream: Send + 'static,
    {
        let acceptor = tls_acceptor(&site)?;
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(|e| BrowserError::Proxy(format!("binding the proxy: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| BrowserError::Proxy(format!("the proxy's address: {e}")))?;
        let (mut driver, send_request) = h3::client::new(upstream)
            .await
            .map_err(|e| BrowserError::Proxy(format!("HTTP/3 to the page server: {e}")))?;
        let (report_tx, reports) = mpsc::channel(4);
        let log = Arc::new(Mutex::new(ProxyLog::default()));
        let forward = Forward {
            site,
            send_request,
            reports: report_tx,
            log: log.clone(),
        };
        let task = tokio::spawn(async move {
            let mut tasks = JoinSet::new();
            tasks.spawn(async move {
                let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
            });
            loop {
                let (tcp, _) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        // Out of descriptors, say: wait a moment rather than spin.
                        tracing::debug!(%e, "proxy accept failed");
                        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                        continue;
                    }
                };
                let acceptor = acceptor.clone();
                let forward = forward.clone();
                tasks.spawn(async move {
                    let tls = match acceptor.accept(tcp).await {
                        Ok(tls) => tls,
                        Err(e) => {
                            tracing::debug!(%e, "browser TLS handshake failed");
                            return;
                        }
                    };
                    let service = service_fn(move |request| {
                        let forward = forward.clone();
                        async move { Ok::<_, Infallible>(forward.handle(request).await) }
                    });
                    let served = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                    if let Err(e) = served {
                        tracing::debug!(%e, "browser connection ended");
                    }
                });
                while tasks.try_join_next().is_some() {}
            }
        });
        Ok(Proxy {
            addr,
            reports,
            log,
            task,
        })
    }

    /// Where the browser connects.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The next metrics report the page posted, or `None` if none came within `timeout`.
    pub async fn report(&mut self, timeout: std::time::Duration) -> Option<PaintReport> {
        tokio::time::timeout(timeout, self.reports.recv())
            .await
            .ok()
            .flatten()
    }

    /// What the proxy has seen so far.
    pub fn log(&self) -> ProxyLog {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

/// A TLS acceptor with a self-signed certificate for every host of `site` (the browser is told
/// to accept it), offering HTTP/2 and HTTP/1.1.
fn tls_acceptor(site: &Site) -> Result<TlsAcceptor, BrowserError> {
    let hosts: Vec<String> = site.hosts().into_iter().collect();
    let names: Vec<&str> = hosts.iter().map(String::as_str).collect();
    let certificate =
        SelfSigned::new(&names).map_err(|e| BrowserError::Proxy(format!("certificate: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| {
            b.with_no_client_auth()
                .with_single_cert(vec![certificate.cert_der()], certificate.key_der())
        })
        .map_err(|e| BrowserError::Proxy(format!("TLS: {e}")))?;
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(tls)))
}

/// One proxy's request handling, shared by its connections.
struct Forward<O: quic::OpenStreams<Bytes>> {
    site: Arc<Site>,
    send_request: SendRequest<O, Bytes>,
    reports: mpsc::Sender<PaintReport>,
    log: Arc<Mutex<ProxyLog>>,
}

impl<O: quic::OpenStreams<Bytes> + Clone> Clone for Forward<O> {
    fn clone(&self) -> Self {
        Self {
            site: self.site.clone(),
            send_request: self.send_request.clone(),
            reports: self.reports.clone(),
            log: self.log.clone(),
        }
    }
}

impl<O> Forward<O>
where
    O: quic::OpenStreams<Bytes> + Clone + Send + 'static,
    O::BidiStream: Send + 'static,
{
    async fn handle(&self, request: Request<Incoming>) -> Response<Body> {
        if request.uri().path() == BEACON_PATH {
            return self.take_report(request).await;
        }
        let url = browser_url(&request);
        let Some(file) = self.site.file(&url) else {
            tracing::debug!(url, "not in the page");
            self.note(|log| log.unknown.push(url));
            return plain(StatusCode::NOT_FOUND, "not in the page\n");
        };
        let priority = request_priority(request.headers());
        let sent_priority = request.headers().contains_key("priority");
        match self.fetch(&file.key, priority).await {
            Ok(response) => {
                self.note(|log| {
                    log.forwarded += 1;
                    log.browser_priority += u64::from(sent_priority);
                });
                response
            }
            Err(reason) => {
                tracing::debug!(url, reason, "upstream failed");
                self.note(|log| log.failed.push(format!("{url}: {reason}")));
                plain(StatusCode::BAD_GATEWAY, "the page server did not answer\n")
            }
        }
    }

    fn note(&self, f: impl FnOnce(&mut ProxyLog)) {
        if let Ok(mut log) = self.log.lock() {
            f(&mut log);
        }
    }

    /// The page's metrics report: parsed and kept; the browser gets 204.
    async fn take_report(&self, request: Request<Incoming>) -> Response<Body> {
        let body = match Limited::new(request.into_body(), MAX_REPORT_BYTES)
            .collect()
            .await
        {
            Ok(body) => body.to_bytes(),
            Err(e) => {
                tracing::debug!(%e, "metrics report not read");
                return plain(StatusCode::BAD_REQUEST, "report not read\n");
            }
        };
        match PaintReport::parse(&body) {
            Ok(report) => {
                // A full channel means nobody is waiting for more reports: drop it.
                let _ = self.reports.try_send(report);
                plain(StatusCode::NO_CONTENT, "")
            }
            Err(e) => {
                tracing::debug!(%e, "metrics report malformed");
                plain(StatusCode::BAD_REQUEST, "report malformed\n")
            }
        }
    }

    /// GETs `key` from the page server with `priority`; the response's head as soon as it
    /// arrives, its body streamed.
    async fn fetch(&self, key: &str, priority: Priority) -> Result<Response<Body>, String> {
        let upstream = Request::get(format!("https://localhost{key}"))
            .header("priority", priority.to_field())
            .body(())
            .map_err(|e| e.to_string())?;
        let mut send = self.send_request.clone();
        let mut stream = send
            .send_request(upstream)
            .await
            .map_err(|e| e.to_string())?;
        stream.finish().await.map_err(|e| e.to_string())?;
        let head = stream.recv_response().await.map_err(|e| e.to_string())?;
        let (mut sender, body) = Channel::new(BODY_PIECES);
        tokio::spawn(async move {
            loop {
                match stream.recv_data().await {
                    Ok(Some(mut chunk)) => {
                        let piece = chunk.copy_to_bytes(chunk.remaining());
                        if sender.send_data(piece).await.is_err() {
                            // The browser went away.
                            return;
                        }
                    }
                    Ok(None) => return,
                    Err(e) => {
                        sender.abort(std::io::Error::other(e.to_string()));
                        return;
                    }
                }
            }
        });
        // The browser caches nothing: every load fetches every object. Every origin may read
        // every response, as from a CDN: the page's scripts fetch across origins, and fonts
        // need CORS.
        let mut response = Response::builder()
            .status(head.status())
            .header(http::header::CACHE_CONTROL, "no-store")
            .header(http::header::ACCESS_CONTROL_ALLOW_ORIGIN, "*");
        for name in [http::header::CONTENT_TYPE, http::header::CONTENT_LENGTH] {
            if let Some(value) = head.headers().get(&name) {
                response = response.header(name, value);
            }
        }
        response
            .body(Either::Right(body))
            .map_err(|e| e.to_string())
    }
}

/// The URL the browser asked for: `https://{authority}{path and query}` (HTTP/2 carries the
/// authority in the URI, HTTP/1.1 in `Host`).
fn browser_url<B>(request: &Request<B>) -> String {
    let authority = request
        .uri()
        .authority()
        .map(|a| a.as_str().to_owned())
        .or_else(|| {
            request
                .headers()
                .get(http::header::HOST)
                .and_then(|h| h.to_str().ok())
                .map(str::to_owned)
        })
        .unwrap_or_default();
    let path = request.uri().path_and_query().map_or("/", |p| p.as_str());
    format!("https://{authority}{path}")
}

/// The priority the browser asked for: its `priority` header, else Chrome's default for the
/// type its `Sec-Fetch-Dest` names.
fn request_priority(headers: &http::HeaderMap) -> Priority {
    if let Some(field) = headers.get("priority") {
        return Priority::from_field(field.as_bytes());
    }
    let dest = headers
        .get("sec-fetch-dest")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    Browser::Chrome.default_priority(destination_type(dest))
}

/// The resource type a `Sec-Fetch-Dest` value names (Fetch Metadata). A script's destination
/// does not say whether it blocks the parser; Chrome requests both kinds at the urgency of a
/// blocking one unless it knows better, so it counts as blocking.
fn destination_type(dest: &str) -> ResourceType {
    match dest {
        "document" | "iframe" | "frame" => ResourceType::Document,
        "style" => ResourceType::Stylesheet,
        "script" | "worker" | "sharedworker" | "serviceworker" => ResourceType::BLOCKING_SCRIPT,
        "font" => ResourceType::Font,
        "image" => ResourceType::Image,
        "audio" | "video" | "track" => ResourceType::Media,
        "empty" => ResourceType::Fetch,
        "manifest" => ResourceType::Manifest,
        "report" => ResourceType::Ping,
        _ => ResourceType::Other,
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Either::Left(Full::new(Bytes::from_static(text.as_bytes()))));
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_browser_priority_header_wins_over_the_destination() {
        let mut headers = http::HeaderMap::new();
        headers.insert("sec-fetch-dest", "image".parse().unwrap());
        assert_eq!(request_priority(&headers).urgency().get(), 3);
        headers.insert("priority", "u=1".parse().unwrap());
        assert_eq!(request_priority(&headers).urgency().get(), 1);
    }

    #[test]
    fn destinations_map_to_chrome_defaults() {
        let urgency = |dest: &str| {
            Browser::Chrome
                .default_priority(destination_type(dest))
                .urgency()
                .get()
        };
        assert_eq!(urgency("document"), 0);
        assert_eq!(urgency("style"), 0);
        assert_eq!(urgency("font"), 0);
        assert_eq!(urgency("script"), 1);
        assert_eq!(urgency("empty"), 1);
        assert_eq!(urgency("image"), 3);
    }

    #[test]
    fn the_url_comes_from_the_authority_or_the_host_header() {
        let h2 = Request::get("https://a.test/x?y=1").body(()).unwrap();
        assert_eq!(browser_url(&h2), "https://a.test/x?y=1");
        let h1 = Request::get("/x")
            .header("host", "b.test")
            .body(())
            .unwrap();
        assert_eq!(browser_url(&h1), "https://b.test/x");
    }
}
