//! The link model as a per-path UDP relay on loopback, so every example runs without root.
//!
//! Path k listens on a client-facing socket (`127.0.0.1:port_k`) and talks to the server from a
//! socket of its own. Datagrams from the client cross the path's uplink [`Link`] and go to the
//! server; datagrams from the server cross the downlink [`Link`] and go to the last client address
//! seen on that path. The links stay pure: this module is only the I/O shell that feeds them
//! `Instant::now() - start` and delivers what they accept at the time they say.
//!
//! One thread per relay, not an async runtime: the [`pump`] waits on every
//! socket and on a timer armed for the earliest delivery, so delivery is on time within the
//! kernel's ~50 us timer slack on a quiet link, and within [`QUANTUM`](crate::pump::QUANTUM) on
//! a busy one (where it works in rounds to keep its own cost down); a runtime's 1 ms timer wheel
//! would do worse.
//!
//! The link is charged [`IP_UDP_OVERHEAD`] bytes on top of each datagram, so that a flow through
//! the relay sees the same bytes per packet as one crossing the namespace testbed, whose links see
//! whole IPv4 packets.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::NetnsError;
use crate::events::EventAction;
use crate::link::{DropReason, Link, LinkConfig, Verdict};
use crate::pump::{self, Inlet, Input, Output};

/// Bytes of IPv4 (20) and UDP (8) headers charged to the link for every relayed datagram.
pub const IP_UDP_OVERHEAD: usize = 28;

/// Headroom on top of the computed queue + in-flight bound, so rounding never drops a packet
/// the link accepted.
const CAP_SLACK_BYTES: u64 = 64 * 1024;

/// How much a trace's peak rate is assumed to exceed its mean when sizing the hard cap.
const TRACE_PEAK_FACTOR: f64 = 4.0;

/// Hands out relay ids for thread names, so that [`Relay::cpu_time`] finds its own threads even
/// when several relays run in one process.
static NEXT_RELAY_ID: AtomicU64 = AtomicU64::new(0);

/// One path of the relay: where the client reaches it, where the server is, and its two links.
#[derive(Debug, Clone)]
pub struct RelayPath {
    /// Client-facing address, e.g. `127.0.0.1:port_k`; port 0 lets the system pick (see
    /// [`Relay::local_addrs`]).
    pub listen: SocketAddr,
    /// The server that datagrams from the client are forwarded to.
    pub server: SocketAddr,
    /// The link from client to server.
    pub uplink: LinkConfig,
    /// The link from server to client.
    pub downlink: LinkConfig,
}

/// Counters of one direction of one path, since the relay started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DirectionStats {
    /// Datagrams read from the receiving socket.
    pub received: u64,
    /// Datagrams handed to the sending socket without error.
    pub forwarded: u64,
    /// UDP payload bytes of the forwarded datagrams.
    pub forwarded_bytes: u64,
    /// Dropped by the link's drop-tail queue.
    pub dropped_queue: u64,
    /// Dropped by the link's random loss.
    pub dropped_loss: u64,
    /// Dropped because the link was down.
    pub dropped_down: u64,
    /// Accepted by the link but dropped by the relay's hard memory cap (should stay 0; nonzero
    /// means a trace or event pushed more in flight than the cap allows for).
    pub dropped_overflow: u64,
    /// Downlink only: dropped because no client had sent anything on this path yet.
    pub dropped_no_client: u64,
    /// Datagrams the sending socket refused (e.g. nobody listening at the server).
    pub send_errors: u64,
    /// Sum over forwarded datagrams of how late the sender handed them to the socket after the
    /// link's delivery time, in nanoseconds: the relay's own timing error.
    pub late_total_ns: u64,
    /// The latest of them, in nanoseconds.
    pub late_max_ns: u64,
}

impl DirectionStats {
    /// Mean lateness of a forwarded datagram behind its delivery time.
    pub fn mean_lateness(&self) -> Duration {
        Duration::from_nanos(self.late_total_ns / self.forwarded.max(1))
    }
}

/// Counters of one path.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathStats {
    /// Client to server.
    pub uplink: DirectionStats,
    /// Server to client.
    pub downlink: DirectionStats,
}

/// A running relay; [`Relay::stop`] or dropping it stops and joins every thread.
#[derive(Debug)]
pub struct Relay {
    id: u64,
    local_addrs: Vec<SocketAddr>,
    paths: Vec<PathShared>,
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

/// What every thread of one relay (or one namespace topology) shares: the stop flag and the
/// links' clock.
#[derive(Debug)]
pub(crate) struct Shared {
    /// Set once to make every thread return.
    pub(crate) stop: AtomicBool,
    /// Link time zero: links see `start.elapsed()`.
    pub(crate) start: Instant,
}

impl Shared {
    /// Not stopped, clock starting now.
    pub(crate) fn new() -> Self {
        Shared {
            stop: AtomicBool::new(false),
            start: Instant::now(),
        }
    }
}

/// The two directions of one path, kept by the [`Relay`] for stats and shutdown.
#[derive(Debug)]
struct PathShared {
    uplink: Arc<Direction>,
    downlink: Arc<Direction>,
}

#[derive(Debug, Default)]
struct Counters {
    received: AtomicU64,
    forwarded: AtomicU64,
    forwarded_bytes: AtomicU64,
    dropped_queue: AtomicU64,
    dropped_loss: AtomicU64,
    dropped_down: AtomicU64,
    dropped_overflow: AtomicU64,
    dropped_no_client: AtomicU64,
    send_errors: AtomicU64,
    late_total_ns: AtomicU64,
    late_max_ns: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> DirectionStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        DirectionStats {
            received: get(&self.received),
            forwarded: get(&self.forwarded),
            forwarded_bytes: get(&self.forwarded_bytes),
            dropped_queue: get(&self.dropped_queue),
            dropped_loss: get(&self.dropped_loss),
            dropped_down: get(&self.dropped_down),
            dropped_overflow: get(&self.dropped_overflow),
            dropped_no_client: get(&self.dropped_no_client),
            send_errors: get(&self.send_errors),
            late_total_ns: get(&self.late_total_ns),
            late_max_ns: get(&self.late_max_ns),
        }
    }
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// A datagram the link accepted, waiting for its delivery time.
#[derive(Debug)]
struct Pending {
    at: Duration,
    seq: u64,
    data: Vec<u8>,
    /// Bytes charged to the link and the hard cap: the data plus the direction's overhead.
    cost: u64,
}

impl Pending {
    fn cost(&self) -> u64 {
        self.cost
    }
}

// Reversed on (at, seq) so that `BinaryHeap` (a max-heap) pops the earliest delivery first and
// keeps the link's order among equal times.
impl Ord for Pending {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Pending {}

/// The link of one direction and the datagrams it has accepted but not yet delivered.
struct Queue {
    link: Link,
    heap: BinaryHeap<Pending>,
    bytes: u64,
    cap: u64,
    seq: u64,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("pending", &self.heap.len())
            .field("bytes", &self.bytes)
            .field("cap", &self.cap)
            .finish()
    }
}

/// One direction of one path: its queue and its counters.
#[derive(Debug)]
pub(crate) struct Direction {
    queue: Mutex<Queue>,
    counters: Counters,
    /// Bytes charged to the link on top of each packet's own length: [`IP_UDP_OVERHEAD`] for
    /// UDP payloads, 0 for whole IP packets read from a TUN device.
    overhead: usize,
}

impl Direction {
    /// A direction through `link`, charging `overhead` bytes per packet on top of its length.
    pub(crate) fn new(link: Link, overhead: usize) -> Self {
        let cap = hard_cap(link.config());
        Direction {
            queue: Mutex::new(Queue {
                link,
                heap: BinaryHeap::new(),
                bytes: 0,
                cap,
                seq: 0,
            }),
            counters: Counters::default(),
            overhead,
        }
    }

    /// Its counters so far.
    pub(crate) fn stats(&self) -> DirectionStats {
        self.counters.snapshot()
    }

    /// Poisoning only means another relay thread panicked mid-update; the queue is still
    /// consistent enough to keep forwarding (or to shut down).
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A datagram arrived at the link at `now`: offer it, and queue it for delivery if accepted.
    pub(crate) fn admit(&self, data: &[u8], now: Duration) {
        bump(&self.counters.received);
        let mut q = self.lock();
        let cost = data.len() + self.overhead;
        match q.link.offer(now, cost) {
            Verdict::Deliver(at) => {
                let pending = Pending {
                    at,
                    seq: q.seq,
                    data: data.to_vec(),
                    cost: cost as u64,
                };
                if q.bytes + pending.cost() > q.cap {
                    bump(&self.counters.dropped_overflow);
                    return;
                }
                q.seq += 1;
                q.bytes += pending.cost();
                q.heap.push(pending);
            }
            Verdict::Dropped(DropReason::Queue) => bump(&self.counters.dropped_queue),
            Verdict::Dropped(DropReason::Loss) => bump(&self.counters.dropped_loss),
            Verdict::Dropped(DropReason::Down) => bump(&self.counters.dropped_down),
        }
    }
}

impl Direction {
    /// When its earliest packet is due, if it holds any.
    pub(crate) fn next_due(&self) -> Option<Duration> {
        self.lock().heap.peek().map(|top| top.at)
    }

    /// Hands every packet due at `now` to `outlet` (in delivery order) and counts the
    /// outcome; `due` is scratch space kept by the caller. Returns how many it handed on.
    pub(crate) fn deliver_due(
        &self,
        now: Duration,
        outlet: &dyn Outlet,
        due: &mut Vec<(Vec<u8>, u64)>,
    ) -> usize {
        {
            let mut q = self.lock();
            while q.heap.peek().is_some_and(|top| top.at <= now) {
                if let Some(p) = q.heap.pop() {
                    q.bytes = q.bytes.saturating_sub(p.cost());
                    let late = u64::try_from((now - p.at).as_nanos()).unwrap_or(u64::MAX);
                    due.push((p.data, late));
                }
            }
        }
        let count = due.len();
        for (data, late) in due.drain(..) {
            match outlet.deliver(&data) {
                Delivery::Sent => {
                    bump(&self.counters.forwarded);
                    self.counters
                        .forwarded_bytes
                        .fetch_add(data.len() as u64, Ordering::Relaxed);
                    self.counters
                        .late_total_ns
                        .fetch_add(late, Ordering::Relaxed);
                    self.counters.late_max_ns.fetch_max(late, Ordering::Relaxed);
                }
                Delivery::NoDestination => bump(&self.counters.dropped_no_client),
                Delivery::Failed => bump(&self.counters.send_errors),
            }
        }
        count
    }
}

/// The most the relay holds for one direction: the link's queue plus what is in flight over
/// the delay at the highest rate and delay the config can reach, plus slack.
fn hard_cap(config: &LinkConfig) -> u64 {
    let mut rate = config.rate_bps as f64;
    let mut delay = config.delay;
    if let Some(trace) = &config.trace {
        rate = rate.max(trace.mean_rate_bps() * TRACE_PEAK_FACTOR);
    }
    for event in &config.events {
        match event.action {
            EventAction::Rate(r) => rate = rate.max(r as f64),
            EventAction::Delay(d) => delay = delay.max(d),
            EventAction::Down | EventAction::Up => {}
        }
    }
    let rate_u64 = rate.min(u64::MAX as f64) as u64;
    let queue = config
        .queue_bytes
        .unwrap_or_else(|| mpquic_sched::sim::default_queue_bytes(rate_u64, delay));
    let in_flight = (rate * delay.as_secs_f64() / 8.0).ceil();
    queue
        .saturating_add(in_flight.min(u64::MAX as f64) as u64)
        .saturating_add(CAP_SLACK_BYTES)
}

/// Where a direction's sender delivers.
enum Dest {
    /// The server: the socket is connected to it.
    Connected,
    /// The last client address seen on the path.
    LastClient(Arc<Mutex<Option<SocketAddr>>>),
}

/// What happened to one packet handed to an [`Outlet`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// Handed on.
    Sent,
    /// Nowhere to send it yet (the relay's downlink before a client spoke).
    NoDestination,
    /// The socket or device refused it.
    Failed,
}

/// Where a direction's sender hands packets at their delivery time: a UDP socket (the relay)
/// or a TUN device (the namespace topology).
pub(crate) trait Outlet {
    /// Hands `data` on, now.
    fn deliver(&self, data: &[u8]) -> Delivery;
}

/// The relay's outlet: a socket and where to send on it.
struct UdpOutlet {
    socket: UdpSocket,
    dest: Dest,
}

impl Outlet for UdpOutlet {
    fn deliver(&self, data: &[u8]) -> Delivery {
        let sent = match &self.dest {
            Dest::Connected => self.socket.send(data),
            Dest::LastClient(last) => {
                let last = *last.lock().unwrap_or_else(|e| e.into_inner());
                match last {
                    Some(addr) => self.socket.send_to(data, addr),
                    None => return Delivery::NoDestination,
                }
            }
        };
        match sent {
            Ok(_) => Delivery::Sent,
            Err(_) => Delivery::Failed,
        }
    }
}

/// The relay's inlet: a non-blocking socket.
struct UdpInlet(UdpSocket);

impl Inlet for UdpInlet {
    fn raw_fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(&self.0)
    }

    fn try_recv(&self, buf: &mut [u8]) -> io::Result<Option<(usize, Option<SocketAddr>)>> {
        match self.0.recv_from(buf) {
            Ok((n, from)) => Ok(Some((n, Some(from)))),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Every datagram goes on the link.
fn any_datagram(_: &[u8]) -> bool {
    true
}

impl Relay {
    /// Binds every path's sockets, then starts its thread; on any error nothing is left
    /// running or bound. A listen address in use fails with [`NetnsError::Io`] naming it.
    pub fn start(paths: Vec<RelayPath>) -> Result<Relay, NetnsError> {
        let id = NEXT_RELAY_ID.fetch_add(1, Ordering::Relaxed);
        // Validate and bind everything before spawning anything.
        let mut bound = Vec::with_capacity(paths.len());
        for (k, path) in paths.into_iter().enumerate() {
            let uplink = Link::new(path.uplink)?;
            let downlink = Link::new(path.downlink)?;
            let client = UdpSocket::bind(path.listen).map_err(|source| NetnsError::Io {
                context: format!("relay path {k}: cannot bind listen address {}", path.listen),
                source,
            })?;
            let server = bind_toward(path.server).map_err(|source| NetnsError::Io {
                context: format!(
                    "relay path {k}: cannot open a socket toward server {}",
                    path.server
                ),
                source,
            })?;
            let io = |what: &str, source| NetnsError::Io {
                context: format!("relay path {k} (listen {}): {what}", path.listen),
                source,
            };
            client
                .set_nonblocking(true)
                .map_err(|e| io("non-blocking", e))?;
            server
                .set_nonblocking(true)
                .map_err(|e| io("non-blocking", e))?;
            let local = client.local_addr().map_err(|e| io("listen address", e))?;
            bound.push((k, client, server, local, uplink, downlink));
        }

        let shared = Arc::new(Shared::new());
        let mut relay = Relay {
            id,
            local_addrs: bound.iter().map(|b| b.3).collect(),
            paths: Vec::with_capacity(bound.len()),
            shared,
            threads: Vec::new(),
        };
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        for (k, client, server, _, uplink, downlink) in bound {
            let up = Arc::new(Direction::new(uplink, IP_UDP_OVERHEAD));
            let down = Arc::new(Direction::new(downlink, IP_UDP_OVERHEAD));
            relay.paths.push(PathShared {
                uplink: Arc::clone(&up),
                downlink: Arc::clone(&down),
            });
            let clone = |s: &UdpSocket| {
                s.try_clone().map_err(|source| NetnsError::Io {
                    context: format!("relay path {k}: cannot clone socket"),
                    source,
                })
            };
            let last_client = Arc::new(Mutex::new(None));
            outputs.push(Output {
                dir: Arc::clone(&up),
                outlet: Box::new(UdpOutlet {
                    socket: clone(&server)?,
                    dest: Dest::Connected,
                }),
            });
            outputs.push(Output {
                dir: Arc::clone(&down),
                outlet: Box::new(UdpOutlet {
                    socket: clone(&client)?,
                    dest: Dest::LastClient(Arc::clone(&last_client)),
                }),
            });
            inputs.push(Input {
                inlet: Box::new(UdpInlet(client)),
                dir: up,
                accept: any_datagram,
                last_sender: Some(last_client),
            });
            inputs.push(Input {
                inlet: Box::new(UdpInlet(server)),
                dir: down,
                accept: any_datagram,
                last_sender: None,
            });
        }
        let name = relay.thread_prefix() + "ump";
        let handle = pump::spawn(name.clone(), Arc::clone(&relay.shared), inputs, outputs)
            .map_err(|source| NetnsError::Io {
                context: format!("cannot start relay thread {name}"),
                source,
            })?;
        relay.threads.push(handle);
        Ok(relay)
    }

    fn thread_prefix(&self) -> String {
        format!("rly{}p", self.id)
    }

    /// The client-facing address of each path, in the order given to [`Relay::start`].
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// Counters of each path, in the order given to [`Relay::start`].
    pub fn stats(&self) -> Vec<PathStats> {
        self.paths
            .iter()
            .map(|p| PathStats {
                uplink: p.uplink.counters.snapshot(),
                downlink: p.downlink.counters.snapshot(),
            })
            .collect()
    }

    /// When the links' clock started: link time is `Instant::now() - started()`.
    pub fn started(&self) -> Instant {
        self.shared.start
    }

    /// CPU time used so far by the relay's own threads (Linux: from `/proc/self/task`, found by
    /// thread name), to measure the emulator's cost apart from the traffic it carries. `None`
    /// where that is not available.
    pub fn cpu_time(&self) -> Option<Duration> {
        let prefix = self.thread_prefix();
        let tasks = std::fs::read_dir("/proc/self/task").ok()?;
        let mut total = Duration::ZERO;
        let mut found = false;
        for task in tasks.flatten() {
            let dir = task.path();
            let Ok(comm) = std::fs::read_to_string(dir.join("comm")) else {
                continue;
            };
            let comm = comm.trim_end();
            // "rly1p" must not match "rly12p...": the prefix ends in 'p', and what follows is the
            // path number.
            if !comm.starts_with(&prefix) {
                continue;
            }
            // schedstat's first field is nanoseconds on CPU (finer than stat's 10 ms ticks).
            let ns = std::fs::read_to_string(dir.join("schedstat"))
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok());
            if let Some(ns) = ns {
                total += Duration::from_nanos(ns);
                found = true;
            }
        }
        found.then_some(total)
    }

    /// Stops every thread and waits for them; the sockets close with them.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        for handle in self.threads.drain(..) {
            // A panicked relay thread has nothing left to clean up; joining is what matters.
            let _ = handle.join();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// A socket for talking to `server`: bound to the loopback (or unspecified) address of its
/// family, and connected, so that only the server's datagrams come back on it.
fn bind_toward(server: SocketAddr) -> io::Result<UdpSocket> {
    let ip: IpAddr = match (server.ip(), server.ip().is_loopback()) {
        (IpAddr::V4(_), true) => Ipv4Addr::LOCALHOST.into(),
        (IpAddr::V4(_), false) => Ipv4Addr::UNSPECIFIED.into(),
        (IpAddr::V6(_), true) => Ipv6Addr::LOCALHOST.into(),
        (IpAddr::V6(_), false) => Ipv6Addr::UNSPECIFIED.into(),
    };
    let socket = UdpSocket::bind(SocketAddr::new(ip, 0))?;
    socket.connect(server)?;
    Ok(socket)
}
