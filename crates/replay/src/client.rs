//! The page client: loads a page the way a browser would, over HTTP/3 over mpquic or, as the
//! baseline, over plain quinn (h3-quinn); the request logic is one, generic over the `h3`
//! crate's QUIC traits ([`load_h3`]).

use std::fmt;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use h3::client::SendRequest;
use h3::quic;
use mpquic_core::h3::H3Connection;
use mpquic_core::Connection;
use mpquic_h3_prio::{Priority, PriorityField};
use tokio::task::JoinSet;

use crate::page::{Discovery, Page};
use crate::report::{LoadReport, ObjectReport};

/// What the page travels over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transport {
    /// mpquic: one connection over the chosen paths, with `RunConfig::scheduler`.
    #[default]
    Mpquic,
    /// The baseline: plain quinn (HTTP/3 through h3-quinn), one connection over one path.
    Quinn,
}

impl Transport {
    /// Its name on command lines and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Mpquic => "mpquic",
            Self::Quinn => "quinn",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a page load failed.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// HTTP/3 could not be set up on the connection.
    #[error("HTTP/3 set-up failed: {0}")]
    H3(String),
    /// A request failed.
    #[error("{url}: {reason}")]
    Request {
        /// The object's URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// An object answered with a status other than 200.
    #[error("{url}: status {status}")]
    Status {
        /// The object's URL.
        url: String,
        /// The status.
        status: u16,
    },
    /// An object's body was not its recorded size.
    #[error("{url}: {received} bytes received, {recorded} recorded")]
    Size {
        /// The object's URL.
        url: String,
        /// Bytes received.
        received: u64,
        /// The recorded size.
        recorded: u64,
    },
    /// The page has no objects.
    #[error("page {0:?} has no objects")]
    Empty(String),
    /// The load did not finish in time.
    #[error("page load not finished after {0:?}")]
    Timeout(Duration),
}

/// How the client paces a load.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadOptions {
    /// The longest the load may take.
    ///
    /// # Default
    /// 60 s.
    pub timeout: Duration,
    /// Factor on the recorded offsets of [`Discovery::AfterDocument`] objects: 1 replays the
    /// recorded times, 0 requests them all the moment the main document completes (as the
    /// papers' pages do, which removes the recording's own network and browser delays).
    ///
    /// # Default
    /// 1.
    pub time_scale: f64,
    /// Whether objects are requested as they are discovered or all at once.
    ///
    /// # Default
    /// [`RequestOrder::Discovered`].
    pub request_order: RequestOrder,
}

impl Default for LoadOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
            time_scale: 1.0,
            request_order: RequestOrder::Discovered,
        }
    }
}

/// When the client requests a page's objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RequestOrder {
    /// As a browser does: the document first, every other object when what leads to it has
    /// arrived ([`Discovery`]).
    #[default]
    Discovered,
    /// Every object at the start, the document first, none waiting for another: the load of
    /// a client that knows the page's objects in advance, as `tquic_client` is given them.
    /// It measures the transport without the page's round trips of discovery.
    AllAtOnce,
}

impl RequestOrder {
    /// The order a command line's `--all-at-once` flag asks for.
    pub fn from_flag(all_at_once: bool) -> Self {
        if all_at_once {
            Self::AllAtOnce
        } else {
            Self::Discovered
        }
    }

    /// Whether this is the browser's order (the default, left out of records).
    pub fn is_discovered(&self) -> bool {
        *self == Self::Discovered
    }
}

/// The latest a request is delayed after the document (far beyond any timeout), so that no
/// recorded time or scale can overflow an `Instant`.
const LATEST: Duration = Duration::from_secs(86_400);

/// When a browser requests each object of a page: object 0 first; an object discovered by
/// another ([`Discovery::After`]) when that one completes; the others at their recorded offset
/// (scaled) after the main document completes ([`Discovery::AfterDocument`]). Or, in
/// [`RequestOrder::AllAtOnce`], every object at the start.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RequestPlan {
    /// Objects requested at the start, in order.
    pub(crate) first: Vec<usize>,
    /// Per object, the objects requested when it completes.
    pub(crate) children: Vec<Vec<usize>>,
    /// Objects requested after the main document, by offset.
    pub(crate) timed: Vec<(Duration, usize)>,
    /// The main document's index.
    pub(crate) main_document: usize,
}

impl RequestPlan {
    /// The plan of a page with at least one object in `options`' order, recorded offsets
    /// times its time scale.
    pub(crate) fn new(page: &Page, options: &LoadOptions) -> Self {
        let n = page.objects.len();
        let main_document = page.main_document.min(n.saturating_sub(1));
        if options.request_order == RequestOrder::AllAtOnce {
            return Self {
                first: (0..n).collect(),
                children: vec![Vec::new(); n],
                timed: Vec::new(),
                main_document,
            };
        }
        let scale = if options.time_scale.is_finite() && options.time_scale > 0.0 {
            options.time_scale
        } else {
            0.0
        };
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut timed: Vec<(Duration, usize)> = Vec::new();
        for (i, o) in page.objects.iter().enumerate() {
            match o.discovery {
                Discovery::Document if i == 0 => {}
                Discovery::After { parent } if parent < i => children[parent].push(i),
                Discovery::AfterDocument(after) => {
                    let scaled = Duration::try_from_secs_f64(after.as_secs_f64() * scale);
                    timed.push((scaled.unwrap_or(LATEST).min(LATEST), i));
                }
                // A malformed model: treat as discovered with the document.
                _ => timed.push((Duration::ZERO, i)),
            }
        }
        timed.sort();
        Self {
            first: vec![0],
            children,
            timed,
            main_document,
        }
    }
}

/// What one request brought back.
struct Fetched {
    index: usize,
    status: u16,
    bytes: u64,
    done: Instant,
}

/// Loads `page` over the multipath `conn` and reports every object's completion, FRT and PLT.
///
/// The request logic is [`load_h3`]'s; the report's `transport` is `mpquic`, `scheduler` the
/// connection's, `paths` its path count and `per_path_bytes` the stream bytes it received on
/// each path. `scenario` and `mode` are left empty for the caller.
///
/// # Errors
/// [`LoadError`], as [`load_h3`].
pub async fn load(
    conn: &Connection,
    page: &Page,
    options: &LoadOptions,
) -> Result<LoadReport, LoadError> {
    let mut report = load_h3(H3Connection::new(conn.clone()), page, options).await?;
    let paths = conn.paths();
    report.transport = Transport::Mpquic.name().to_owned();
    report.scheduler = conn.scheduler_name();
    report.paths = paths.len();
    report.per_path_bytes = paths
        .iter()
        .map(|p| (u64::from(p.id.0), p.bytes_received))
        .collect();
    report.set_duplicates(&conn.reinjection_stats());
    Ok(report)
}

/// Loads `page` over the plain quinn connection `conn` (HTTP/3 through h3-quinn): the
/// baseline. The report's `transport` and `scheduler` are `quinn`, `paths` is 1 and
/// `per_path_bytes` is empty (quinn counts UDP bytes, not the stream bytes mpquic reports).
///
/// # Errors
/// [`LoadError`], as [`load_h3`].
pub async fn load_quinn(
    conn: &quinn::Connection,
    page: &Page,
    options: &LoadOptions,
) -> Result<LoadReport, LoadError> {
    let mut report = load_h3(h3_quinn::Connection::new(conn.clone()), page, options).await?;
    report.transport = Transport::Quinn.name().to_owned();
    report.scheduler = Transport::Quinn.name().to_owned();
    report.paths = 1;
    Ok(report)
}

/// Loads `page` over any QUIC connection the `h3` crate can use and reports every object's
/// completion, FRT and PLT.
///
/// Object 0 (the page request) goes first; every other object is requested when the object it
/// was discovered by has completed ([`Discovery::After`]), or at its recorded offset after the
/// main document has completed ([`Discovery::AfterDocument`]). Each request carries the
/// object's RFC 9218 `priority` header (recorded offsets scaled by
/// [`LoadOptions::time_scale`]). Times count from the page request. Only what HTTP/3 sees is
/// filled in: `transport`, `scheduler`, `scenario` and `mode` are empty, `paths` is 0 and
/// `per_path_bytes` empty, for the caller ([`load`], [`load_quinn`]).
///
/// # Errors
/// [`LoadError`]: a request that fails, a status other than 200, a body that is not the
/// recorded size, or the timeout passing (in-flight requests are then abandoned).
pub async fn load_h3<C, O>(
    conn: C,
    page: &Page,
    options: &LoadOptions,
) -> Result<LoadReport, LoadError>
where
    C: quic::Connection<Bytes, OpenStreams = O> + Send + 'static,
    C::RecvStream: Send + 'static,
    <C as quic::OpenStreams<Bytes>>::SendStream: Send + 'static,
    <C as quic::OpenStreams<Bytes>>::BidiStream: Send + 'static,
    O: quic::OpenStreams<Bytes> + Clone + Send + 'static,
    O::BidiStream: Send + 'static,
    O::SendStream: Send + 'static,
{
    let timeout = options.timeout;
    if page.objects.is_empty() {
        return Err(LoadError::Empty(page.id.clone()));
    }
    let (mut driver, send_request) = h3::client::new(conn)
        .await
        .map_err(|e| LoadError::H3(e.to_string()))?;
    let drive = tokio::spawn(async move {
        let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
    });
    let start = Instant::now();
    let outcome = tokio::time::timeout(timeout, run(page, send_request, start, options)).await;
    drive.abort();
    let objects = outcome.map_err(|_| LoadError::Timeout(timeout))??;

    Ok(LoadReport::of_objects(page, objects))
}

/// Requests every object in discovery order and waits for all of them.
async fn run<O>(
    page: &Page,
    send_request: SendRequest<O, Bytes>,
    start: Instant,
    options: &LoadOptions,
) -> Result<Vec<ObjectReport>, LoadError>
where
    O: quic::OpenStreams<Bytes> + Clone + Send + 'static,
    O::BidiStream: Send + 'static,
{
    let n = page.objects.len();
    let RequestPlan {
        first,
        children,
        timed,
        main_document,
    } = RequestPlan::new(page, options);

    let mut reports: Vec<Option<ObjectReport>> = vec![None; n];
    let mut requested = vec![Duration::ZERO; n];
    let mut tasks = JoinSet::new();
    let spawn = |tasks: &mut JoinSet<_>, index: usize, requested: &mut [Duration]| {
        requested[index] = start.elapsed();
        let object = &page.objects[index];
        let uri = format!("https://localhost{}", object.key);
        let priority = object.priority;
        let send = send_request.clone();
        tasks.spawn(async move {
            let result = fetch(send, &uri, priority).await;
            (
                index,
                result.map(|(status, bytes)| Fetched {
                    index,
                    status,
                    bytes,
                    done: Instant::now(),
                }),
            )
        });
    };
    for index in first {
        spawn(&mut tasks, index, &mut requested);
    }
    let mut document_done: Option<Instant> = None;
    let mut next_timed = 0;
    let mut done = 0;
    while done < n {
        // Objects already due go at once: a timer rounds its deadline up to the runtime's next
        // millisecond tick, which held every request of a page discovered with its document
        // (recorded offsets scaled to 0) up to a millisecond after the document completed.
        while let (Some(at), Some(&(after, index))) = (document_done, timed.get(next_timed)) {
            if at + after > Instant::now() {
                break;
            }
            spawn(&mut tasks, index, &mut requested);
            next_timed += 1;
        }
        let due = document_done
            .zip(timed.get(next_timed))
            .map(|(at, (after, _))| at + *after);
        tokio::select! {
            Some(joined) = tasks.join_next(), if !tasks.is_empty() => {
                let (index, result) = joined.map_err(|e| LoadError::Request {
                    url: String::new(),
                    reason: e.to_string(),
                })?;
                let object = &page.objects[index];
                let fetched = result.map_err(|reason| LoadError::Request {
                    url: object.url.clone(),
                    reason,
                })?;
                if fetched.status != 200 {
                    return Err(LoadError::Status { url: object.url.clone(), status: fetched.status });
                }
                if fetched.bytes != object.size {
                    return Err(LoadError::Size {
                        url: object.url.clone(),
                        received: fetched.bytes,
                        recorded: object.size,
                    });
                }
                done += 1;
                reports[fetched.index] = Some(ObjectReport {
                    url: object.url.clone(),
                    key: object.key.clone(),
                    size: object.size,
                    bytes: fetched.bytes,
                    status: fetched.status,
                    critical: object.critical,
                    urgency: object.priority.urgency().get(),
                    requested_ms: requested[index].as_secs_f64() * 1e3,
                    completed_ms: fetched.done.saturating_duration_since(start).as_secs_f64() * 1e3,
                });
                if index == main_document {
                    document_done = Some(fetched.done);
                }
                for &child in &children[index] {
                    spawn(&mut tasks, child, &mut requested);
                }
            }
            // What fell due is requested at the top of the loop.
            () = sleep_until(due), if due.is_some() => {}
            else => {
                // Nothing in flight and nothing due: the model left objects unreachable.
                return Err(LoadError::Request {
                    url: page.objects.get(done).map(|o| o.url.clone()).unwrap_or_default(),
                    reason: "never requested: its parent is not in the page".into(),
                });
            }
        }
    }
    Ok(reports.into_iter().flatten().collect())
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
    }
}

/// One GET with its priority; the status and the body's length.
async fn fetch<O>(
    mut send: SendRequest<O, Bytes>,
    uri: &str,
    priority: Priority,
) -> Result<(u16, u64), String>
where
    O: quic::OpenStreams<Bytes>,
{
    let request = http::Request::get(uri)
        .header("priority", priority.to_field())
        .body(())
        .map_err(|e| e.to_string())?;
    let mut stream = send
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    stream.finish().await.map_err(|e| e.to_string())?;
    let response = stream.recv_response().await.map_err(|e| e.to_string())?;
    let mut bytes = 0u64;
    while let Some(chunk) = stream.recv_data().await.map_err(|e| e.to_string())? {
        bytes += chunk.remaining() as u64;
    }
    Ok((response.status().as_u16(), bytes))
}
