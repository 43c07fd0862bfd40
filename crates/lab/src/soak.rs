//! Soak test: does a long-lived process that runs many sessions, churns paths and meets hostile
//! peers keep its memory, tasks and file descriptors flat?
//!
//! ```text
//! cargo run --release -p mpquic-lab --bin soak -- --sessions 100 --streams 100 --rounds 4 --churn 1000
//! cargo run -p mpquic-lab --bin soak -- --quick                  # everything, small, under a minute
//! cargo run --release -p mpquic-lab --bin soak -- --adversarial --json /tmp/soak.json
//! ```
//!
//! Everything runs in this one process on loopback: an mpquic server on 127.0.0.1 and clients
//! whose first path comes from 127.0.0.1 and second (`open_path`) from 127.0.0.2. Phases:
//!
//! - **rounds** (`--rounds R`): each opens `--sessions N` sessions (`--concurrency` at a time),
//!   each sending `--streams M` streams, bidirectional or unidirectional, of 1 KiB to 64 KiB
//!   (chosen from `--seed`). The server hashes every stream with sha256 and answers the digest:
//!   on the stream itself, or for a unidirectional one on a stream of its own (the client
//!   stream's id, then the digest). The client checks each digest, closes every session, and
//!   the round ends once the server has seen all of them close.
//! - **churn** (`--churn K`): one session with two paths closes its second path
//!   (`Connection::close_path`) and opens a new one K times, with a checked transfer after each;
//!   once from 127.0.0.2 with port 0, once from a fixed port of 127.0.0.2.
//! - **adversarial** (`--adversarial`): a raw quinn peer that writes the wire format by hand:
//!   (a) 256 KiB chunks at offsets 3/4 window - k, each adding one byte, behind a hole at 0;
//!   (b) one-byte chunks at every other offset behind a hole at 0; (c) 1 MiB unidirectional
//!   streams reset by the writer after sending, read by the server afterwards, then one more
//!   stream that must arrive; (d) new sessions whose control stream is stopped, or whose
//!   connection is closed, before the server's Welcome is written. Each case prints whether
//!   the server closed the connection and with what code.
//!
//! After each round, every K/4 churns and around each adversarial case it prints the
//! process's figures: RSS (`VmRSS`), live heap bytes (a counting global allocator: allocated
//! minus freed), live tokio tasks and open file descriptors, each taken once the live tasks and
//! the live heap have stopped falling for 500 ms (at most 2 s). Figures that grow from round to
//! round, or that do not come back after a session or a case ends, are leaks. Round and churn
//! lines also give the client endpoint's bound sockets (`Endpoint::local_addrs`), read after
//! the figures because reading it releases the quinn endpoints of closed paths. `--linger S`
//! prints the figures once a second for S seconds after the rounds; `--json PATH` writes all
//! figures. The exit code is 1 if any checked stream did not arrive intact (or at all), 2 on a
//! set-up error.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use mpquic_core::wire::{self, Frame, Params};
use mpquic_core::{
    Config, Connection, Endpoint, PathConfig, PathId, PathStatus, RecvStream, SelfSigned,
    SendStream,
};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::transfer::{self, BoxError};
use mpquic_core::sim::{Payload, BLOCK};

// ---------------------------------------------------------------------------------------------
// The figures: RSS, live heap, live tasks, open fds.

/// Counts the bytes the whole process has allocated and not yet freed: the `soak` binary's
/// global allocator, whose count the figures read.
pub struct CountingAllocator;

static LIVE_HEAP: AtomicI64 = AtomicI64::new(0);

// A global allocator can only be written with `unsafe impl`; every call goes to the system
// allocator unchanged, only a counter is added.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout contract is the system allocator's.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            LIVE_HEAP.fetch_add(layout.size() as i64, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            LIVE_HEAP.fetch_add(layout.size() as i64, Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_HEAP.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator, so from the system one, with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`, and `new_size` is the caller's.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE_HEAP.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        }
        new
    }
}

/// What the process holds at one moment.
#[derive(Debug, Clone, Copy)]
struct Figures {
    rss_kib: u64,
    heap_bytes: i64,
    tasks: usize,
    fds: usize,
}

impl Figures {
    fn now() -> Self {
        Self {
            rss_kib: rss_kib(),
            heap_bytes: LIVE_HEAP.load(Ordering::Relaxed),
            tasks: live_tasks(),
            fds: open_fds(),
        }
    }

    fn json(&self) -> Value {
        json!({
            "rss_kib": self.rss_kib,
            "heap_bytes": self.heap_bytes,
            "tasks": self.tasks,
            "fds": self.fds,
        })
    }
}

impl fmt::Display for Figures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rss {:.1} MiB, heap {:.2} MiB, tasks {}, fds {}",
            self.rss_kib as f64 / 1024.0,
            self.heap_bytes as f64 / (1 << 20) as f64,
            self.tasks,
            self.fds
        )
    }
}

/// Resident set size from `/proc/self/status` (0 where there is none).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0)
}

/// Entries of `/proc/self/fd`.
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |dir| dir.count())
}

fn live_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Neither the live tasks nor the live heap may have fallen for this long before figures are
/// taken...
const SETTLE_QUIET: Duration = Duration::from_millis(500);
/// ... or this long have passed.
const SETTLE_MAX: Duration = Duration::from_secs(2);
/// A heap that falls by less than this is not falling (the runtime allocates as it idles).
const HEAP_NOISE: i64 = 64 * 1024;

/// Figures once the live tasks and the live heap stop falling (sampled every 100 ms; see
/// [`SETTLE_QUIET`], [`SETTLE_MAX`]), so that what is about to end anyway is not counted.
async fn settled_figures() -> Figures {
    let start = Instant::now();
    let mut lowest = Figures::now();
    let mut lowest_since = Instant::now();
    while start.elapsed() < SETTLE_MAX && lowest_since.elapsed() < SETTLE_QUIET {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = Figures::now();
        let fell = now.tasks < lowest.tasks || now.heap_bytes < lowest.heap_bytes - HEAP_NOISE;
        if fell {
            lowest = now;
            lowest_since = Instant::now();
        }
    }
    Figures::now()
}

// ---------------------------------------------------------------------------------------------
// Command line and plan.

/// The command line of `soak`.
#[derive(Debug, Parser)]
#[command(
    about = "Soak test of mpquic on loopback: memory, tasks and fds across sessions, \
                   path churn and hostile peers"
)]
pub struct Args {
    /// Sessions per round [default: 100; 10 with --quick].
    #[arg(long)]
    sessions: Option<usize>,
    /// Streams per session [default: 100; 10 with --quick].
    #[arg(long)]
    streams: Option<usize>,
    /// Rounds (0: none) [default: 4; 2 with --quick].
    #[arg(long)]
    rounds: Option<usize>,
    /// Path churns per variant (0: none) [default: 1000; 50 with --quick].
    #[arg(long)]
    churn: Option<usize>,
    /// Runs the hostile-peer cases too (on with --quick, with small counts).
    #[arg(long)]
    adversarial: bool,
    /// A small version of everything, under a minute in a debug build.
    #[arg(long)]
    quick: bool,
    /// Also writes every figure as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Sessions in flight at once within a round.
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// Seed of stream kinds, sizes and payloads.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// After the rounds, prints the figures once a second for this many seconds (what closed
    /// sessions still hold is released late or never).
    #[arg(long, default_value_t = 0)]
    linger: u64,
}

/// What to run, with `--quick`'s smaller defaults resolved.
#[derive(Debug)]
struct Plan {
    sessions: usize,
    streams: usize,
    rounds: usize,
    churn: usize,
    concurrency: usize,
    seed: u64,
    linger: u64,
    adversarial: Option<AdversarialPlan>,
}

/// Counts of the hostile-peer cases.
#[derive(Debug)]
struct AdversarialPlan {
    /// (a): chunks sent, each one byte further down.
    overlapping_chunks: u64,
    /// (b): one-byte chunks sent (at most half the stream window).
    sparse_chunks: u64,
    /// (c): 1 MiB streams reset after sending.
    reset_streams: usize,
    /// (d): new sessions abandoned before their Welcome.
    abandoned_sessions: usize,
}

impl Plan {
    fn new(args: &Args) -> Self {
        let pick = |given: Option<usize>, full: usize, quick: usize| {
            given.unwrap_or(if args.quick { quick } else { full })
        };
        let adversarial = if args.quick {
            Some(AdversarialPlan {
                overlapping_chunks: 51,
                sparse_chunks: 4096,
                reset_streams: 4,
                abandoned_sessions: 100,
            })
        } else {
            args.adversarial.then_some(AdversarialPlan {
                overlapping_chunks: 1001,
                sparse_chunks: SMALL_STREAM_WINDOW / 2,
                reset_streams: 16,
                abandoned_sessions: 2000,
            })
        };
        Self {
            sessions: pick(args.sessions, 100, 10),
            streams: pick(args.streams, 100, 10),
            rounds: pick(args.rounds, 4, 2),
            churn: pick(args.churn, 1000, 50),
            concurrency: args.concurrency.max(1),
            seed: args.seed,
            linger: args.linger,
            adversarial,
        }
    }

    fn json(&self) -> Value {
        json!({
            "sessions": self.sessions,
            "streams": self.streams,
            "rounds": self.rounds,
            "churn": self.churn,
            "concurrency": self.concurrency,
            "seed": self.seed,
            "linger": self.linger,
            "adversarial": self.adversarial.as_ref().map(|a| json!({
                "overlapping_chunks": a.overlapping_chunks,
                "sparse_chunks": a.sparse_chunks,
                "reset_streams": a.reset_streams,
                "abandoned_sessions": a.abandoned_sessions,
            })),
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Small helpers.

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const PATH_TIMEOUT: Duration = Duration::from_secs(10);
const STREAM_TIMEOUT: Duration = Duration::from_secs(60);
/// How long after its last send a session waits for the server's answers to its
/// unidirectional streams.
const ECHO_GRACE: Duration = Duration::from_secs(10);
/// How long a round waits for the server to see its sessions close.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(30);
/// Bound of one step of an adversarial case.
const CASE_TIMEOUT: Duration = Duration::from_secs(120);
/// Streams of one session in flight at once.
const STREAMS_IN_FLIGHT: usize = 8;
/// Error texts kept per phase.
const ERRORS_KEPT: usize = 5;

fn local(k: u8, port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, k], port))
}

/// `future`, failing after `limit`.
async fn timed<T>(
    limit: Duration,
    future: impl Future<Output = Result<T, BoxError>>,
) -> Result<T, BoxError> {
    tokio::time::timeout(limit, future)
        .await
        .map_err(|_| format!("timed out after {limit:?}"))?
}

/// Polls `done` every 10 ms until it holds (`true`) or `limit` passes (`false`).
async fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

/// Runs `tasks`, each spawned, at most `limit` at once; their results in completion order
/// (a task that panicked has none).
async fn run_bounded<F, T>(limit: usize, tasks: impl IntoIterator<Item = F>) -> Vec<T>
where
    F: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let mut running = JoinSet::new();
    let mut results = Vec::new();
    for task in tasks {
        while running.len() >= limit.max(1) {
            if let Some(Ok(result)) = running.join_next().await {
                results.push(result);
            }
        }
        running.spawn(task);
    }
    while let Some(joined) = running.join_next().await {
        if let Ok(result) = joined {
            results.push(result);
        }
    }
    results
}

/// splitmix64 of `seed` and two indices: deterministic, well spread.
fn mix(seed: u64, a: u64, b: u64) -> u64 {
    let mut z = seed
        .wrapping_add(a.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(b.wrapping_mul(0xD1B5_4A32_D192_ED03))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Writes `len` bytes from `seed` (see [`Payload`]) without finishing the stream.
async fn write_payload(send: &mut SendStream, seed: u64, len: u64) -> Result<(), BoxError> {
    let mut payload = Payload::new(seed, len);
    let mut block = Vec::with_capacity(BLOCK);
    while payload.next_block(&mut block) {
        send.write_all(&block).await?;
    }
    Ok(())
}

/// Stream counts of a phase, and its first few errors.
#[derive(Debug, Default)]
struct Tally {
    ok: u64,
    failed: u64,
    errors: Vec<String>,
}

impl Tally {
    fn fail(&mut self, streams: u64, error: String) {
        self.failed += streams;
        self.note(error);
    }

    fn note(&mut self, error: String) {
        if self.errors.len() < ERRORS_KEPT {
            self.errors.push(error);
        }
    }

    fn add(&mut self, other: Tally) {
        self.ok += other.ok;
        self.failed += other.failed;
        for error in other.errors {
            self.note(error);
        }
    }
}

/// Everything printed, for `--json`, and the streams that failed.
#[derive(Debug, Default)]
struct Report {
    rounds: Vec<Value>,
    linger: Vec<Value>,
    churn: Vec<Value>,
    adversarial: Vec<Value>,
    failed_streams: u64,
}

// ---------------------------------------------------------------------------------------------
// The server of the rounds and the churn.

/// An mpquic server that hashes every stream and answers the digest, and what it has seen.
struct SoakServer {
    endpoint: Arc<Endpoint>,
    addr: SocketAddr,
    accepted: AtomicU64,
    closed: AtomicU64,
    /// Why sessions ended, as the server saw it, since [`SoakServer::take_close_reasons`].
    close_reasons: Mutex<BTreeMap<String, u64>>,
    /// Sessions not yet closed, by id.
    open: Mutex<HashMap<u64, Connection>>,
}

impl SoakServer {
    fn start(
        config: Config,
        tls: &Tls,
    ) -> Result<(Arc<Self>, tokio::task::JoinHandle<()>), BoxError> {
        let endpoint = tls.server(config)?;
        let addr = endpoint.local_addr()?;
        let server = Arc::new(Self {
            endpoint: Arc::new(endpoint),
            addr,
            accepted: AtomicU64::new(0),
            closed: AtomicU64::new(0),
            close_reasons: Mutex::new(BTreeMap::new()),
            open: Mutex::new(HashMap::new()),
        });
        let acceptor = tokio::spawn(accept_sessions(server.clone()));
        Ok((server, acceptor))
    }

    fn open_sessions(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Connection>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The server's end of session `id`, while it is open.
    fn connection(&self, id: u64) -> Option<Connection> {
        self.open_sessions().get(&id).cloned()
    }

    /// Why sessions ended since the last call (reason -> sessions).
    fn take_close_reasons(&self) -> BTreeMap<String, u64> {
        std::mem::take(&mut *self.close_reasons.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Waits until at least `accepted` sessions were accepted and all of them closed.
    async fn wait_all_closed(&self, accepted: u64, limit: Duration) -> bool {
        wait_until(limit, || {
            let seen = self.accepted.load(Ordering::Acquire);
            seen >= accepted && self.closed.load(Ordering::Acquire) == seen
        })
        .await
    }
}

async fn accept_sessions(server: Arc<SoakServer>) {
    while let Some(incoming) = server.endpoint.accept().await {
        // Handshakes run side by side, as a server's should.
        let server = server.clone();
        tokio::spawn(async move {
            let Ok(conn) = incoming.await else {
                return;
            };
            server.accepted.fetch_add(1, Ordering::AcqRel);
            serve_session(server, conn).await;
        });
    }
}

/// Answers every stream of a session until it closes, then counts it closed.
async fn serve_session(server: Arc<SoakServer>, conn: Connection) {
    server
        .open_sessions()
        .insert(conn.session_id(), conn.clone());
    let bidi = async {
        while let Ok((mut send, mut recv)) = conn.accept_bi().await {
            tokio::spawn(async move {
                let _ = timed(STREAM_TIMEOUT, async {
                    transfer::hash_stream(&mut recv, &mut send).await
                })
                .await;
            });
        }
    };
    let uni = async {
        while let Ok(recv) = conn.accept_uni().await {
            let conn = conn.clone();
            tokio::spawn(async move {
                let _ = timed(STREAM_TIMEOUT, echo_uni_hash(conn, recv)).await;
            });
        }
    };
    tokio::join!(bidi, uni);
    let reason = conn.closed().await.to_string();
    *server
        .close_reasons
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(reason)
        .or_default() += 1;
    server.open_sessions().remove(&conn.session_id());
    server.closed.fetch_add(1, Ordering::AcqRel);
}

/// Length of the answer to a unidirectional stream: its id, then its sha256.
const ECHO_LEN: usize = 8 + 32;

/// Hashes a client's unidirectional stream and answers on a stream of the server's own.
async fn echo_uni_hash(conn: Connection, mut recv: RecvStream) -> Result<(), BoxError> {
    let id = recv.id().0;
    let digest = transfer::hash_stream(&mut recv, &mut tokio::io::sink())
        .await?
        .digest;
    let mut answer = Vec::with_capacity(ECHO_LEN);
    answer.extend_from_slice(&id.to_le_bytes());
    answer.extend_from_slice(&digest);
    let mut send = conn.open_uni().await?;
    send.write_all(&answer).await?;
    send.finish()?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Phase 1: rounds of sessions.

/// One stream a session sends.
#[derive(Debug, Clone, Copy)]
struct StreamSpec {
    seed: u64,
    len: u64,
    uni: bool,
}

const MIN_STREAM: u64 = 1024;
const MAX_STREAM: u64 = 64 * 1024;

/// The streams of the session with `seed`: kinds and sizes (1 KiB to 64 KiB) from the seed.
fn stream_specs(seed: u64, count: usize) -> Vec<StreamSpec> {
    (0..count as u64)
        .map(|i| StreamSpec {
            seed: mix(seed, i, 0),
            len: MIN_STREAM + mix(seed, i, 1) % (MAX_STREAM - MIN_STREAM + 1),
            uni: mix(seed, i, 2) & 1 == 1,
        })
        .collect()
}

/// A sent stream: checked already (bidirectional), or waiting for the server's answer.
enum Sent {
    Checked { matched: bool },
    Uni { id: u64, expected: [u8; 32] },
}

async fn send_stream(conn: Connection, spec: StreamSpec) -> Result<Sent, BoxError> {
    let expected = Payload::digest(spec.seed, spec.len);
    timed(STREAM_TIMEOUT, async {
        if spec.uni {
            let mut send = conn.open_uni().await?;
            let id = send.id().0;
            write_payload(&mut send, spec.seed, spec.len).await?;
            send.finish()?;
            Ok(Sent::Uni { id, expected })
        } else {
            let sent =
                transfer::send_checked(&conn, spec.seed, spec.len, &expected, Default::default())
                    .await?;
            Ok(Sent::Checked {
                matched: sent.matched,
            })
        }
    })
    .await
}

/// Collects the server's answers to unidirectional streams (stream id -> digest) until the
/// connection ends or the task is aborted.
async fn collect_uni_echoes(conn: Connection, echoes: Arc<Mutex<HashMap<u64, [u8; 32]>>>) {
    while let Ok(mut recv) = conn.accept_uni().await {
        let Ok(answer) = recv.read_to_end(ECHO_LEN).await else {
            continue;
        };
        let (Some(id), Some(digest)) = (answer.get(..8), answer.get(8..ECHO_LEN)) else {
            continue;
        };
        let id = u64::from_le_bytes(id.try_into().unwrap_or_default());
        let digest: [u8; 32] = digest.try_into().unwrap_or_default();
        echoes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, digest);
    }
}

/// What one session of a round did.
#[derive(Debug, Default)]
struct SessionOutcome {
    connected: bool,
    second_path: bool,
    streams: Tally,
}

/// Connects, opens the second path, sends the session's streams, checks every digest, closes.
async fn run_session(
    client: Arc<Endpoint>,
    server: SocketAddr,
    seed: u64,
    streams: usize,
) -> SessionOutcome {
    let mut outcome = SessionOutcome::default();
    let connecting = async { Ok(client.connect(server, "localhost")?.await?) };
    let conn = match timed(CONNECT_TIMEOUT, connecting).await {
        Ok(conn) => conn,
        Err(e) => {
            outcome
                .streams
                .fail(streams as u64, format!("connect: {e}"));
            return outcome;
        }
    };
    outcome.connected = true;
    let second = async {
        Ok(conn
            .open_path(&PathConfig::new(local(2, 0), server))
            .await?)
    };
    match timed(PATH_TIMEOUT, second).await {
        Ok(_) => outcome.second_path = true,
        Err(e) => outcome.streams.note(format!("open_path: {e}")),
    }

    let echoes = Arc::new(Mutex::new(HashMap::new()));
    let collector = tokio::spawn(collect_uni_echoes(conn.clone(), echoes.clone()));
    let sends: Vec<_> = stream_specs(seed, streams)
        .into_iter()
        .map(|spec| send_stream(conn.clone(), spec))
        .collect();
    let sent = run_bounded(STREAMS_IN_FLIGHT, sends).await;
    let answers_due = sent
        .iter()
        .filter(|s| matches!(s, Ok(Sent::Uni { .. })))
        .count();
    wait_until(ECHO_GRACE, || {
        echoes.lock().unwrap_or_else(|e| e.into_inner()).len() >= answers_due
    })
    .await;
    collector.abort();
    let echoes = echoes.lock().unwrap_or_else(|e| e.into_inner());
    let tally = &mut outcome.streams;
    for result in &sent {
        match result {
            Ok(Sent::Checked { matched: true }) => tally.ok += 1,
            Ok(Sent::Checked { matched: false }) => tally.fail(1, "sha256 mismatch".into()),
            Ok(Sent::Uni { id, expected }) => match echoes.get(id) {
                Some(digest) if digest == expected => tally.ok += 1,
                Some(_) => tally.fail(1, format!("uni stream {id}: sha256 mismatch")),
                None => tally.fail(1, format!("uni stream {id}: no answer")),
            },
            Err(e) => tally.fail(1, format!("stream: {e}")),
        }
    }
    let lost = streams as u64 - (tally.ok + tally.failed).min(streams as u64);
    if lost > 0 {
        tally.fail(lost, format!("{lost} stream tasks panicked"));
    }
    conn.close(0u32.into(), b"round done");
    outcome
}

/// Prints the figures once a second for `seconds`, nothing else running.
async fn watch_linger(seconds: u64, report: &mut Report) {
    let start = Instant::now();
    for second in 1..=seconds {
        tokio::time::sleep_until((start + Duration::from_secs(second)).into()).await;
        let figures = Figures::now();
        println!("linger {second} s: {figures}");
        report
            .linger
            .push(json!({ "seconds": second, "figures": figures.json() }));
    }
}

/// Shared by the rounds and the churn.
struct Soak {
    server: Arc<SoakServer>,
    client: Arc<Endpoint>,
}

/// One round: N sessions, all checked and closed, then the figures.
async fn run_round(soak: &Soak, plan: &Plan, round: usize, report: &mut Report) {
    let start = Instant::now();
    let accepted_before = soak.server.accepted.load(Ordering::Acquire);
    let sessions = (0..plan.sessions).map(|i| {
        let seed = mix(plan.seed, round as u64, i as u64);
        run_session(soak.client.clone(), soak.server.addr, seed, plan.streams)
    });
    let outcomes = run_bounded(plan.concurrency, sessions).await;
    let mut streams = Tally::default();
    let connected = outcomes.iter().filter(|o| o.connected).count();
    let second_paths = outcomes.iter().filter(|o| o.second_path).count();
    for outcome in outcomes {
        streams.add(outcome.streams);
    }
    // Sessions whose task panicked sent nothing that was checked.
    let planned = (plan.sessions * plan.streams) as u64;
    streams.failed = planned - streams.ok;
    let all_closed = soak
        .server
        .wait_all_closed(accepted_before + connected as u64, CLOSE_TIMEOUT)
        .await;
    let seconds = start.elapsed().as_secs_f64();
    let close_reasons = soak.server.take_close_reasons();
    let figures = settled_figures().await;
    let sockets = soak.client.local_addrs().len();
    println!(
        "round {round}/{}: streams ok {} failed {} | sessions {connected}/{} connected, \
         {second_paths} with 2 paths, server saw all close: {} ({}) | {figures}, client \
         sockets {sockets} | {seconds:.1} s",
        plan.rounds,
        streams.ok,
        streams.failed,
        plan.sessions,
        yes_no(all_closed),
        histogram(&close_reasons),
    );
    for error in &streams.errors {
        eprintln!("  round {round}: {error}");
    }
    report.failed_streams += streams.failed;
    report.rounds.push(json!({
        "round": round,
        "streams_ok": streams.ok,
        "streams_failed": streams.failed,
        "sessions_connected": connected,
        "sessions_with_second_path": second_paths,
        "server_saw_all_close": all_closed,
        "server_close_reasons": close_reasons,
        "client_sockets": sockets,
        "seconds": seconds,
        "errors": streams.errors,
        "figures": figures.json(),
    }));
}

/// `3 x reason, 1 x other reason`.
fn histogram(counts: &BTreeMap<String, u64>) -> String {
    counts
        .iter()
        .map(|(what, n)| format!("{n} x {what}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

// ---------------------------------------------------------------------------------------------
// Phase 2: path churn.

/// One session; `churns` times its second path is closed and a new one opened from `from`
/// (port 0: a fresh port each time), with a checked transfer after each. Figures every
/// `churns / 4` and once the session is closed; returns the transfers that failed.
async fn run_churn(
    soak: &Soak,
    variant: &str,
    from: SocketAddr,
    churns: usize,
    seed: u64,
    report: &mut Report,
) -> u64 {
    let checkpoints = &mut report.churn;
    let server = soak.server.addr;
    let accepted_before = soak.server.accepted.load(Ordering::Acquire);
    let setup = async {
        let conn = soak.client.connect(server, "localhost")?.await?;
        conn.open_path(&PathConfig::new(from, server)).await?;
        Ok(conn)
    };
    let conn = match timed(CONNECT_TIMEOUT + PATH_TIMEOUT, setup).await {
        Ok(conn) => conn,
        Err(e) => {
            println!("churn {variant}: set-up failed: {e}");
            checkpoints.push(json!({ "variant": variant, "setup_error": e.to_string() }));
            return churns as u64;
        }
    };
    let mut transfers = Tally::default();
    let mut open_failed = 0u64;
    let every = (churns / 4).max(1);
    for churn in 1..=churns {
        let second = conn
            .paths()
            .into_iter()
            .find(|p| p.id != PathId(0) && p.status != PathStatus::Down);
        if let Some(second) = second {
            if let Err(e) = conn.close_path(second.id) {
                transfers.note(format!("churn {churn}: close_path: {e}"));
            }
        }
        let reopen = async { Ok(conn.open_path(&PathConfig::new(from, server)).await?) };
        if let Err(e) = timed(PATH_TIMEOUT, reopen).await {
            open_failed += 1;
            transfers.note(format!("churn {churn}: open_path: {e}"));
        }
        let seed = mix(seed, churn as u64, 3);
        let len = 4096 + seed % (12 * 1024);
        let expected = Payload::digest(seed, len);
        let check = transfer::send_checked(&conn, seed, len, &expected, Default::default());
        match timed(STREAM_TIMEOUT, check).await {
            Ok(sent) if sent.matched => transfers.ok += 1,
            Ok(_) => transfers.fail(1, format!("churn {churn}: sha256 mismatch")),
            Err(e) => transfers.fail(1, format!("churn {churn}: transfer: {e}")),
        }
        if churn % every == 0 || churn == churns {
            let figures = settled_figures().await;
            let client_paths = conn.paths().len();
            let server_paths = soak
                .server
                .connection(conn.session_id())
                .map(|c| c.paths().len());
            let sockets = soak.client.local_addrs().len();
            println!(
                "churn {variant} {churn}/{churns}: transfers ok {} failed {} | open_path \
                 failed {open_failed} | paths listed: client {client_paths}, server {} | client \
                 sockets {sockets} | {figures}",
                transfers.ok,
                transfers.failed,
                server_paths.map_or("-".into(), |n| n.to_string()),
            );
            checkpoints.push(json!({
                "variant": variant,
                "churns": churn,
                "transfers_ok": transfers.ok,
                "transfers_failed": transfers.failed,
                "open_path_failed": open_failed,
                "client_paths": client_paths,
                "server_paths": server_paths,
                "client_sockets": sockets,
                "figures": figures.json(),
            }));
        }
    }
    conn.close(0u32.into(), b"churn done");
    drop(conn);
    let closed = soak
        .server
        .wait_all_closed(accepted_before + 1, CLOSE_TIMEOUT)
        .await;
    let close_reasons = soak.server.take_close_reasons();
    let figures = settled_figures().await;
    let sockets = soak.client.local_addrs().len();
    println!(
        "churn {variant} closed: server saw it close: {} ({}) | client sockets {sockets} | \
         {figures}",
        yes_no(closed),
        histogram(&close_reasons),
    );
    for error in &transfers.errors {
        eprintln!("  churn {variant}: {error}");
    }
    checkpoints.push(json!({
        "variant": variant,
        "closed": true,
        "server_saw_close": closed,
        "server_close_reasons": close_reasons,
        "client_sockets": sockets,
        "errors": transfers.errors,
        "figures": figures.json(),
    }));
    transfers.failed
}

/// A port of 127.0.0.2 that was free a moment ago.
fn free_port() -> Result<u16, BoxError> {
    let socket = std::net::UdpSocket::bind(local(2, 0))?;
    Ok(socket.local_addr()?.port())
}

// ---------------------------------------------------------------------------------------------
// Phase 3: hostile peers.

/// The limits the raw peer announces: generous, so that only the server's matter.
const RAW_PARAMS: Params = Params {
    max_data: 1 << 20,
    max_stream_data: 1 << 20,
    max_bidi_streams: 16,
    max_uni_streams: 16,
};

/// The client's first unidirectional stream.
const UNI: u64 = 2;

/// The server's stream window in cases (a) and (b), and its connection window.
const SMALL_STREAM_WINDOW: u64 = 1 << 20;
const SMALL_WINDOW: u64 = 2 << 20;

/// Case (a)'s chunk size.
const OVERLAP_CHUNK: u64 = 256 * 1024;

/// A plain quinn client that speaks mpquic's wire format by hand.
#[derive(Clone)]
struct RawPeer {
    endpoint: quinn::Endpoint,
    tls: quinn::ClientConfig,
}

impl RawPeer {
    fn new(roots: &rustls::RootCertStore) -> Result<Self, BoxError> {
        let endpoint = quinn::Endpoint::client(local(2, 0))?;
        let tls = quinn::ClientConfig::with_root_certificates(Arc::new(roots.clone()))?;
        Ok(Self { endpoint, tls })
    }

    async fn connect(&self, server: SocketAddr) -> Result<quinn::Connection, BoxError> {
        let connecting = self
            .endpoint
            .connect_with(self.tls.clone(), server, "localhost")?;
        timed(CONNECT_TIMEOUT, async { Ok(connecting.await?) }).await
    }

    /// A connection that created a session (its Welcome read); the control stream is kept.
    async fn new_session(
        &self,
        server: SocketAddr,
    ) -> Result<(quinn::Connection, quinn::SendStream, quinn::RecvStream), BoxError> {
        let conn = self.connect(server).await?;
        let (mut control, mut control_recv) = conn.open_bi().await?;
        send_frame(&mut control, Frame::NewSession { params: RAW_PARAMS }).await?;
        match timed(CONNECT_TIMEOUT, async {
            Ok(mpquic_core::read_frame(&mut control_recv).await?)
        })
        .await?
        {
            Some(Frame::Welcome { .. }) => Ok((conn, control, control_recv)),
            other => Err(format!("expected a Welcome, got {other:?}").into()),
        }
    }
}

async fn send_frame(send: &mut quinn::SendStream, frame: Frame) -> Result<(), BoxError> {
    let mut buf = Vec::new();
    frame.encode(&mut buf)?;
    send.write_all(&buf).await?;
    Ok(())
}

/// How the server ended a raw connection, if it did: its application code and reason.
fn server_close(conn: &quinn::Connection) -> Option<(Option<u64>, String)> {
    match conn.close_reason()? {
        quinn::ConnectionError::ApplicationClosed(close) => Some((
            Some(close.error_code.into_inner()),
            String::from_utf8_lossy(&close.reason).into_owned(),
        )),
        quinn::ConnectionError::LocallyClosed => None,
        other => Some((None, other.to_string())),
    }
}

fn describe_close(close: &Option<(Option<u64>, String)>) -> String {
    match close {
        None => "no".into(),
        Some((Some(code), reason)) => format!("yes, code {code:#x} ({reason})"),
        Some((None, reason)) => format!("yes, without a code ({reason})"),
    }
}

/// What a case found, printed and kept for `--json`.
struct CaseReport {
    name: &'static str,
    /// One line: whether the server closed and with what code, and what happened.
    summary: String,
    detail: Value,
    before: Figures,
    /// While the hostile connection is still open (after its bytes were taken in).
    held: Option<Figures>,
    /// After the hostile connections are gone (the case's server still up).
    after: Figures,
    /// Checked streams that did not arrive.
    failed_streams: u64,
}

impl CaseReport {
    fn print(&self) {
        println!("adversarial {}: {}", self.name, self.summary);
        println!("  before: {}", self.before);
        if let Some(held) = self.held {
            println!("  held:   {held}");
        }
        println!("  after:  {}", self.after);
    }

    fn json(&self) -> Value {
        json!({
            "case": self.name,
            "summary": self.summary,
            "detail": self.detail,
            "before": self.before.json(),
            "held": self.held.map(|f| f.json()),
            "after": self.after.json(),
        })
    }
}

/// The bytes every hostile stream carries at each offset (so overlaps always agree).
fn offset_pattern(len: u64) -> Vec<u8> {
    (0..len).map(|offset| (offset % 251) as u8).collect()
}

fn small_window_config() -> Result<Config, BoxError> {
    let mut config = Config::default();
    config
        .stream_receive_window(SMALL_STREAM_WINDOW)?
        .receive_window(SMALL_WINDOW)?;
    Ok(config)
}

/// The mpquic server a case attacks, with the certificate its peers trust. It takes every
/// attempt at a session through its handshake, so that raw peers' sessions come up as they
/// would on a server that accepts everything.
struct CaseServer {
    endpoint: Arc<Endpoint>,
    addr: SocketAddr,
    sessions: tokio::sync::Mutex<mpsc::UnboundedReceiver<Connection>>,
    acceptor: tokio::task::JoinHandle<()>,
}

impl Drop for CaseServer {
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}

impl CaseServer {
    fn start(config: Config, tls: &Tls) -> Result<Self, BoxError> {
        let endpoint = Arc::new(tls.server(config)?);
        let addr = endpoint.local_addr()?;
        let (sessions, accepted) = mpsc::unbounded_channel();
        let acceptor = tokio::spawn({
            let endpoint = endpoint.clone();
            async move {
                while let Some(incoming) = endpoint.accept().await {
                    let sessions = sessions.clone();
                    // Ends with the handshake and set-up, each bounded by a timeout.
                    tokio::spawn(async move {
                        if let Ok(conn) = incoming.await {
                            let _ = sessions.send(conn);
                        }
                    });
                }
            }
        });
        Ok(Self {
            endpoint,
            addr,
            sessions: tokio::sync::Mutex::new(accepted),
            acceptor,
        })
    }

    /// The next session that came up; `None` once the endpoint has stopped.
    async fn next_session(&self) -> Option<Connection> {
        self.sessions.lock().await.recv().await
    }

    async fn accept(&self) -> Result<Connection, BoxError> {
        timed(CONNECT_TIMEOUT, async {
            Ok(self.next_session().await.ok_or("server endpoint stopped")?)
        })
        .await
    }
}

/// Bytes the server's end has taken in on all its paths.
fn received(conn: &Connection) -> u64 {
    conn.paths().iter().map(|p| p.bytes_received).sum()
}

/// Sends the hostile bytes of case (a) or (b) on a raw session, `count` chunks, the `i`-th at
/// `chunk(i)` (offset, length); waits until the server took them in (or closed), and reports
/// the figures while held and after the close.
async fn run_chunk_case(
    name: &'static str,
    tls: &Tls,
    count: u64,
    chunk: impl Fn(u64) -> (u64, u64),
) -> Result<CaseReport, BoxError> {
    let server = CaseServer::start(small_window_config()?, tls)?;
    let peer = RawPeer::new(&tls.roots)?;
    let before = settled_figures().await;
    let start = Instant::now();
    let (conn, _control, _control_recv) = peer.new_session(server.addr).await?;
    let server_conn = server.accept().await?;
    let pattern = offset_pattern(SMALL_STREAM_WINDOW);

    // One chunk stream; headers and data written as they are, with no copy of the data.
    let mut sent = 0u64;
    let mut sent_bytes = 0u64;
    let sending = async {
        let mut stream = conn.open_uni().await?;
        let mut header = Vec::new();
        wire::encode_chunk_stream_header(UNI, &mut header)?;
        stream.write_all(&header).await?;
        let mut batch = Vec::new();
        for (offset, len) in (0..count).map(&chunk) {
            wire::encode_chunk_header(offset, len, &mut batch)?;
            batch.extend_from_slice(&pattern[offset as usize..(offset + len) as usize]);
            if batch.len() >= 64 * 1024 {
                stream.write_all(&batch).await?;
                batch.clear();
            }
            sent += 1;
            sent_bytes += len;
        }
        stream.write_all(&batch).await?;
        let _ = stream.finish();
        Ok(())
    };
    let send_error = timed(CASE_TIMEOUT, sending).await.err();
    let taken_in = wait_until(CASE_TIMEOUT, || {
        received(&server_conn) >= sent_bytes || server_conn.close_reason().is_some()
    })
    .await;
    let seconds = start.elapsed().as_secs_f64();
    let held = settled_figures().await;
    let close = server_close(&conn);
    let server_view = server_conn.close_reason().map(|e| e.to_string());
    let taken = received(&server_conn);
    conn.close(0u32.into(), b"case over");
    let _ = tokio::time::timeout(CONNECT_TIMEOUT, server_conn.closed()).await;
    drop(server_conn);
    let after = settled_figures().await;
    peer.endpoint.close(0u32.into(), b"");
    server.endpoint.close(0u32.into(), b"");

    let summary = format!(
        "server closed: {} | {sent} of {} chunks sent ({sent_bytes} bytes), server took in \
         {taken} bytes{} in {seconds:.1} s{}",
        describe_close(&close),
        count,
        if taken_in {
            ""
        } else {
            " (not all: gave up waiting)"
        },
        send_error.map_or(String::new(), |e| format!(", sending stopped: {e}")),
    );
    Ok(CaseReport {
        name,
        summary,
        detail: json!({
            "server_closed": close.is_some(),
            "close_code": close.as_ref().and_then(|c| c.0),
            "close_reason": close.as_ref().map(|c| c.1.clone()),
            "server_error": server_view,
            "chunks_planned": count,
            "chunks_sent": sent,
            "bytes_sent": sent_bytes,
            "bytes_taken_in": taken,
            "seconds": seconds,
        }),
        before,
        held: Some(held),
        after,
        failed_streams: 0,
    })
}

/// (a): chunks of 256 KiB at offsets 3/4 window - k, k = 0..count-1: each adds one byte in
/// front of the previous one, none reaches offset 0, so nothing is ever read.
async fn case_overlapping_chunks(tls: &Tls, count: u64) -> Result<CaseReport, BoxError> {
    let top = SMALL_STREAM_WINDOW * 3 / 4;
    let name = "(a) overlapping 256 KiB chunks behind a hole";
    run_chunk_case(name, tls, count.min(top), |k| (top - k, OVERLAP_CHUNK)).await
}

/// (b): one byte at every other offset (1, 3, 5, ...) behind a hole at 0.
async fn case_sparse_bytes(tls: &Tls, count: u64) -> Result<CaseReport, BoxError> {
    let name = "(b) one-byte chunks at every other offset behind a hole";
    let count = count.min(SMALL_STREAM_WINDOW / 2);
    run_chunk_case(name, tls, count, |i| (1 + 2 * i, 1)).await
}

/// (c): `count` streams of 1 MiB, each reset by the client once sent and read by the server
/// afterwards, with a connection window of exactly `count` MiB; then one more 1 MiB stream,
/// which arrives only if reading the reset streams gave their bytes back to the window.
async fn case_reset_streams(tls: &Tls, count: usize) -> Result<CaseReport, BoxError> {
    const MIB: u64 = 1 << 20;
    const RESET_CODE: u32 = 7;
    let mut config = Config::default();
    config
        .receive_window(count as u64 * MIB)?
        .stream_receive_window(4 * MIB)?;
    let server = CaseServer::start(config, tls)?;
    let client = tls.client()?;
    let before = settled_figures().await;
    let start = Instant::now();
    let conn = timed(CONNECT_TIMEOUT, async {
        Ok(client.connect(server.addr, "localhost")?.await?)
    })
    .await?;
    let server_conn = server.accept().await?;

    let mut errors = Vec::new();
    let mut reset_sent = 0;
    for i in 0..count {
        let sending = async {
            let mut send = conn.open_uni().await?;
            write_payload(&mut send, i as u64, MIB).await?;
            // "After sending": every byte has gone out on some path.
            let all_out = wait_until(CONNECT_TIMEOUT, || {
                send.path_bytes().values().sum::<u64>() >= MIB
            })
            .await;
            send.reset(RESET_CODE.into())?;
            Ok(all_out)
        };
        match timed(CASE_TIMEOUT, sending).await {
            Ok(true) => reset_sent += 1,
            Ok(false) => errors.push(format!("stream {i}: not all sent before the reset")),
            Err(e) => errors.push(format!("stream {i}: {e}")),
        }
    }

    // The server reads them only now.
    let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
    for _ in 0..count {
        let reading = async {
            let mut recv = server_conn.accept_uni().await?;
            Ok(match recv.read_to_end(2 * MIB as usize).await {
                Ok(data) => format!("read {} bytes, no reset", data.len()),
                Err(e) => e.to_string(),
            })
        };
        let outcome = timed(CONNECT_TIMEOUT, reading)
            .await
            .unwrap_or_else(|e| format!("not accepted: {e}"));
        *outcomes.entry(outcome).or_default() += 1;
    }

    // One more stream, which needs the window back.
    let last_seed = count as u64;
    let delivery = async {
        let mut send = conn.open_uni().await?;
        write_payload(&mut send, last_seed, MIB).await?;
        send.finish()?;
        let mut recv = server_conn.accept_uni().await?;
        let data = recv.read_to_end(2 * MIB as usize).await?;
        Ok(Payload::digest(last_seed, MIB) == sha256(&data))
    };
    let delivered = timed(Duration::from_secs(15), delivery).await;
    let seconds = start.elapsed().as_secs_f64();
    let held = settled_figures().await;
    let close = conn.close_reason().map(|e| e.to_string());
    let server_error = server_conn.close_reason().map(|e| e.to_string());
    conn.close(0u32.into(), b"case over");
    drop(conn);
    let _ = tokio::time::timeout(CONNECT_TIMEOUT, server_conn.closed()).await;
    drop(server_conn);
    let after = settled_figures().await;
    client.close(0u32.into(), b"");
    server.endpoint.close(0u32.into(), b"");

    let delivered_text = match &delivered {
        Ok(true) => "delivered intact".to_string(),
        Ok(false) => "delivered with a sha256 mismatch".to_string(),
        Err(e) => format!("NOT delivered ({e})"),
    };
    let summary = format!(
        "server closed: {} | {reset_sent}/{count} streams of 1 MiB reset after sending; server \
         reads: {} | stream {}: {delivered_text} | {seconds:.1} s{}",
        server_error.as_deref().unwrap_or("no"),
        histogram(&outcomes),
        count + 1,
        if errors.is_empty() {
            String::new()
        } else {
            format!(" | {}", errors.join("; "))
        },
    );
    Ok(CaseReport {
        name: "(c) reset streams read afterwards, then one more stream",
        summary,
        detail: json!({
            "server_closed": server_error.is_some(),
            "server_error": server_error,
            "client_close": close,
            "streams_reset": reset_sent,
            "server_reads": outcomes,
            "last_stream_delivered": matches!(delivered, Ok(true)),
            "last_stream": delivered_text,
            "errors": errors,
            "seconds": seconds,
        }),
        before,
        held: Some(held),
        after,
        failed_streams: u64::from(!matches!(delivered, Ok(true))),
    })
}

fn sha256(data: &[u8]) -> [u8; 32] {
    use sha2::Digest as _;
    sha2::Sha256::digest(data).into()
}

/// One attempt of case (d): a new session whose control stream is stopped (`stop`) or whose
/// connection is closed right after the NewSession frame. Says how it ended.
async fn abandon_session(peer: RawPeer, server: SocketAddr, stop: bool) -> String {
    let attempt = async {
        let conn = peer.connect(server).await?;
        let (mut send, mut recv) = conn.open_bi().await?;
        send_frame(&mut send, Frame::NewSession { params: RAW_PARAMS }).await?;
        if !stop {
            conn.close(0u32.into(), b"gone");
            return Ok("closed by the peer".to_string());
        }
        // The frame and the stop travel together: the server reads one, then cannot answer.
        recv.stop(0u32.into())?;
        let _ = tokio::time::timeout(Duration::from_secs(2), conn.closed()).await;
        let outcome = match server_close(&conn) {
            Some((Some(code), _)) => format!("stopped: server closed with {code:#x}"),
            Some((None, reason)) => format!("stopped: connection lost ({reason})"),
            None => "stopped: server did not close within 2 s".to_string(),
        };
        conn.close(0u32.into(), b"bye");
        Ok(outcome)
    };
    timed(CASE_TIMEOUT, attempt)
        .await
        .unwrap_or_else(|e: BoxError| format!("attempt failed: {e}"))
}

/// (d): `count` new sessions abandoned before the server's Welcome, half stopped, half closed.
async fn case_abandoned_sessions(tls: &Tls, count: usize) -> Result<CaseReport, BoxError> {
    let server = Arc::new(CaseServer::start(Config::default(), tls)?);
    // Sessions that got their Welcome after all are counted and dropped (which closes them).
    let welcomed = Arc::new(AtomicU64::new(0));
    let acceptor = tokio::spawn({
        let server = server.clone();
        let welcomed = welcomed.clone();
        async move {
            while let Some(conn) = server.next_session().await {
                welcomed.fetch_add(1, Ordering::Relaxed);
                drop(conn);
            }
        }
    });
    let peer = RawPeer::new(&tls.roots)?;
    let before = settled_figures().await;
    let start = Instant::now();
    let attempts = (0..count).map(|i| abandon_session(peer.clone(), server.addr, i % 2 == 0));
    let mut outcomes: BTreeMap<String, u64> = BTreeMap::new();
    for outcome in run_bounded(32, attempts).await {
        *outcomes.entry(outcome).or_default() += 1;
    }
    let seconds = start.elapsed().as_secs_f64();
    peer.endpoint.close(0u32.into(), b"");
    let after = settled_figures().await;
    acceptor.abort();
    server.endpoint.close(0u32.into(), b"");
    let welcomed = welcomed.load(Ordering::Relaxed);
    let summary = format!(
        "{count} attempts in {seconds:.1} s: {} | sessions the server accepted after all: \
         {welcomed}",
        histogram(&outcomes),
    );
    Ok(CaseReport {
        name: "(d) new sessions abandoned before the Welcome",
        summary,
        detail: json!({
            "attempts": count,
            "outcomes": outcomes,
            "server_accepted": welcomed,
            "seconds": seconds,
        }),
        before,
        held: None,
        after,
        failed_streams: 0,
    })
}

/// The four cases, each on a server of its own.
async fn run_adversarial(tls: &Tls, plan: &AdversarialPlan, report: &mut Report) {
    let cases: [Result<CaseReport, BoxError>; 4] = [
        case_overlapping_chunks(tls, plan.overlapping_chunks).await,
        case_sparse_bytes(tls, plan.sparse_chunks).await,
        case_reset_streams(tls, plan.reset_streams).await,
        case_abandoned_sessions(tls, plan.abandoned_sessions).await,
    ];
    for (case, letter) in cases.into_iter().zip(["a", "b", "c", "d"]) {
        match case {
            Ok(case) => {
                case.print();
                report.failed_streams += case.failed_streams;
                report.adversarial.push(case.json());
            }
            Err(e) => {
                println!("adversarial ({letter}): could not run: {e}");
                report
                    .adversarial
                    .push(json!({ "case": letter, "error": e.to_string() }));
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Main.

/// The self-signed certificate every server here uses, and the roots that trust it.
struct Tls {
    certificate: SelfSigned,
    roots: rustls::RootCertStore,
}

impl Tls {
    fn new() -> Result<Self, BoxError> {
        let certificate = SelfSigned::new(&["localhost"])?;
        let roots = certificate.roots()?;
        Ok(Self { certificate, roots })
    }

    /// A server on 127.0.0.1 with `config`.
    fn server(&self, config: Config) -> Result<Endpoint, BoxError> {
        let mut tls = self.certificate.server_config()?;
        tls.transport_config(Arc::new(config));
        Ok(Endpoint::server(tls, local(1, 0))?)
    }

    /// A client on 127.0.0.1 that trusts the servers.
    fn client(&self) -> Result<Endpoint, BoxError> {
        let mut endpoint = Endpoint::client(local(1, 0))?;
        endpoint.set_default_client_config(self.certificate.client_config()?);
        Ok(endpoint)
    }
}

async fn run(plan: &Plan) -> Result<Report, BoxError> {
    let mut report = Report::default();
    let tls = Tls::new()?;
    let baseline = settled_figures().await;
    println!("start: {baseline}");

    if plan.rounds > 0 || plan.churn > 0 {
        let (server, acceptor) = SoakServer::start(Config::default(), &tls)?;
        let client = Arc::new(tls.client()?);
        let soak = Soak { server, client };
        println!("server and client up: {}", settled_figures().await);
        for round in 1..=plan.rounds {
            run_round(&soak, plan, round, &mut report).await;
        }
        watch_linger(plan.linger, &mut report).await;
        if plan.churn > 0 {
            let variants = [
                ("port-0", local(2, 0)),
                ("fixed-port", local(2, free_port()?)),
            ];
            for (variant, from) in variants {
                let failed =
                    run_churn(&soak, variant, from, plan.churn, plan.seed, &mut report).await;
                report.failed_streams += failed;
            }
        }
        soak.client.close(0u32.into(), b"");
        soak.server.endpoint.close(0u32.into(), b"");
        acceptor.abort();
    }
    if let Some(adversarial) = &plan.adversarial {
        run_adversarial(&tls, adversarial, &mut report).await;
    }
    println!("end: {}", settled_figures().await);
    Ok(report)
}

/// Runs the soak with `args`: the exit code is 1 if a checked stream failed, 2 on a set-up
/// error.
pub async fn main(args: Args) -> ExitCode {
    let plan = Plan::new(&args);
    let report = match run(&plan).await {
        Ok(report) => report,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(path) = &args.json {
        let all = json!({
            "plan": plan.json(),
            "rounds": report.rounds,
            "linger": report.linger,
            "churn": report.churn,
            "adversarial": report.adversarial,
            "failed_streams": report.failed_streams,
        });
        let text = serde_json::to_string_pretty(&all).unwrap_or_default();
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("soak: writing {}: {e}", path.display());
            return ExitCode::from(2);
        }
    }
    if report.failed_streams > 0 {
        eprintln!("soak: {} checked streams failed", report.failed_streams);
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
