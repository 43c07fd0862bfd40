//! Measuring an emulated path from its two ends: round-trip time, UDP goodput and loss, per
//! direction, so the testbed's fidelity is checked against what was configured.
//!
//! A [`ProbeServer`] sits where the server would (behind the relay, or in the server namespace)
//! and speaks a tiny protocol; a [`Prober`] at the client drives every measurement. Both ends
//! work from what crosses the path, so the same code measures the loopback relay and the
//! namespace testbed. Every loop is bounded in count and in time: a dead path gives an error,
//! never a hang.
//!
//! Wire format (little endian): `magic "MPQP" | kind u8 | session u32 | seq u32 | t1 u64 | t2 u64`
//! then padding; kinds are echo request/reply, data, report request/reply and blast request.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::error::NetnsError;
use crate::relay::IP_UDP_OVERHEAD;

const MAGIC: [u8; 4] = *b"MPQP";
/// Bytes of the probe header; the smallest probe datagram.
pub const HEADER_BYTES: usize = 29;
const MAX_DATAGRAM: usize = 65_507;

const ECHO_REQUEST: u8 = 1;
const ECHO_REPLY: u8 = 2;
const DATA: u8 = 3;
const REPORT_REQUEST: u8 = 4;
const REPORT_REPLY: u8 = 5;
const BLAST_REQUEST: u8 = 6;

/// How often blocked loops look at their stop flag or deadline.
const POLL: Duration = Duration::from_millis(10);
/// A pacer that fell further behind than this (descheduled) forgets the debt instead of
/// bursting it into the link's queue.
const MAX_LAG: Duration = Duration::from_millis(20);
/// Limits on what a peer may ask the server to send, so a bad request cannot tie it up.
const MAX_BLAST_PACKETS: u64 = 10_000_000;
const MAX_BLAST_TIME: Duration = Duration::from_secs(60);
const MAX_CONCURRENT_BLASTS: usize = 4;
/// Sessions the server remembers counts for (oldest forgotten first).
const MAX_SESSIONS: usize = 256;
/// Goodput probes offer this much more than the configured rate, so the link stays saturated.
pub const GOODPUT_OVERDRIVE: f64 = 1.1;

/// Which way a measurement crosses the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Client to server.
    Uplink,
    /// Server to client.
    Downlink,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    kind: u8,
    session: u32,
    seq: u32,
    t1: u64,
    t2: u64,
}

impl Header {
    fn write(&self, buf: &mut [u8]) {
        if buf.len() < HEADER_BYTES {
            return;
        }
        buf[..4].copy_from_slice(&MAGIC);
        buf[4] = self.kind;
        buf[5..9].copy_from_slice(&self.session.to_le_bytes());
        buf[9..13].copy_from_slice(&self.seq.to_le_bytes());
        buf[13..21].copy_from_slice(&self.t1.to_le_bytes());
        buf[21..29].copy_from_slice(&self.t2.to_le_bytes());
    }

    /// `None` for anything that is not a probe datagram (strays are ignored, never trusted).
    fn read(buf: &[u8]) -> Option<Header> {
        if buf.get(..4)? != MAGIC {
            return None;
        }
        let u32_at = |i: usize| Some(u32::from_le_bytes(buf.get(i..i + 4)?.try_into().ok()?));
        let u64_at = |i: usize| Some(u64::from_le_bytes(buf.get(i..i + 8)?.try_into().ok()?));
        Some(Header {
            kind: *buf.get(4)?,
            session: u32_at(5)?,
            seq: u32_at(9)?,
            t1: u64_at(13)?,
            t2: u64_at(21)?,
        })
    }

    fn datagram(&self, len: usize) -> Vec<u8> {
        let mut buf = vec![0u8; len.clamp(HEADER_BYTES, MAX_DATAGRAM)];
        self.write(&mut buf);
        buf
    }
}

/// Wall-clock nanoseconds: both ends of a path run on the same host (loopback or namespaces
/// share the kernel clock), so one-way delays can be read off it.
fn wall_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn io_err(context: impl Into<String>, source: io::Error) -> NetnsError {
    NetnsError::Io {
        context: context.into(),
        source,
    }
}

/// A measurement that got no answer: reported as a timed-out I/O error naming what was tried.
fn timeout(context: impl Into<String>) -> NetnsError {
    io_err(
        context,
        io::Error::new(io::ErrorKind::TimedOut, "no answer through the path"),
    )
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Sends `count` datagrams of `size` bytes at `rate_bps` (charging each [`IP_UDP_OVERHEAD`]
/// more, as the link does), sleeping between them. Returns how many the socket took.
fn pace(
    socket: &UdpSocket,
    to: Option<SocketAddr>,
    header: Header,
    count: u64,
    size: usize,
    rate_bps: f64,
    stop: &AtomicBool,
) -> u64 {
    let mut buf = header.datagram(size);
    let interval = Duration::from_secs_f64(((buf.len() + IP_UDP_OVERHEAD) * 8) as f64 / rate_bps);
    let mut next = Instant::now();
    let mut sent = 0;
    for seq in 0..count {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else if now - next > MAX_LAG {
            next = now;
        }
        next += interval;
        Header {
            seq: u32::try_from(seq).unwrap_or(u32::MAX),
            t1: wall_ns(),
            ..header
        }
        .write(&mut buf);
        let ok = match to {
            Some(addr) => socket.send_to(&buf, addr),
            None => socket.send(&buf),
        };
        if ok.is_ok() {
            sent += 1;
        }
    }
    sent
}

/// Data-packet arrivals of one session, as counted by whoever receives them.
#[derive(Debug, Clone, Copy)]
struct Arrivals {
    packets: u64,
    bytes: u64,
    first: Instant,
    last: Instant,
    first_len: u64,
}

impl Arrivals {
    fn new(now: Instant, len: usize) -> Self {
        Arrivals {
            packets: 1,
            bytes: len as u64,
            first: now,
            last: now,
            first_len: len as u64,
        }
    }

    fn add(&mut self, now: Instant, len: usize) {
        self.packets += 1;
        self.bytes += len as u64;
        self.last = now;
    }
}

/// The far end of every measurement: echoes probes, counts data, sends data on request.
#[derive(Debug)]
pub struct ProbeServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ProbeServer {
    /// Binds `bind` (port 0 = pick) and serves until stopped or dropped.
    pub fn start(bind: SocketAddr) -> Result<ProbeServer, NetnsError> {
        let socket = UdpSocket::bind(bind)
            .map_err(|e| io_err(format!("probe server: cannot bind {bind}"), e))?;
        socket
            .set_read_timeout(Some(POLL))
            .map_err(|e| io_err("probe server: read timeout", e))?;
        let addr = socket
            .local_addr()
            .map_err(|e| io_err("probe server: local address", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::Builder::new()
            .name("probe-server".into())
            .spawn({
                let stop = Arc::clone(&stop);
                move || serve(&socket, &stop)
            })
            .map_err(|e| io_err("probe server: cannot spawn thread", e))?;
        Ok(ProbeServer {
            addr,
            stop,
            thread: Some(thread),
        })
    }

    /// Where it listens: the address to relay to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops serving and joins its threads.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ProbeServer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn serve(socket: &UdpSocket, stop: &Arc<AtomicBool>) {
    let mut buf = vec![0u8; MAX_DATAGRAM + 1];
    let mut sessions: HashMap<u32, Arrivals> = HashMap::new();
    let mut order: VecDeque<u32> = VecDeque::new();
    let mut blasts: Vec<(u32, JoinHandle<()>)> = Vec::new();
    let mut blasted: VecDeque<u32> = VecDeque::new();
    while !stop.load(Ordering::Relaxed) {
        blasts.retain(|(_, h)| !h.is_finished());
        let (n, from) = match socket.recv_from(&mut buf) {
            Ok(r) => r,
            Err(e) if is_timeout(&e) => continue,
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
            Err(_) => {
                std::thread::sleep(POLL);
                continue;
            }
        };
        let now = Instant::now();
        let Some(header) = Header::read(&buf[..n]) else {
            continue;
        };
        match header.kind {
            ECHO_REQUEST => {
                Header {
                    kind: ECHO_REPLY,
                    t2: wall_ns(),
                    ..header
                }
                .write(&mut buf[..n]);
                let _ = socket.send_to(&buf[..n], from);
            }
            DATA => match sessions.get_mut(&header.session) {
                Some(a) => a.add(now, n),
                None => {
                    if order.len() >= MAX_SESSIONS {
                        if let Some(old) = order.pop_front() {
                            sessions.remove(&old);
                        }
                    }
                    order.push_back(header.session);
                    sessions.insert(header.session, Arrivals::new(now, n));
                }
            },
            REPORT_REQUEST => {
                let reply = report_reply(header.session, sessions.get(&header.session));
                let _ = socket.send_to(&reply, from);
            }
            BLAST_REQUEST => {
                // Retried requests must not start a second blast of the same session.
                if blasted.contains(&header.session) || blasts.len() >= MAX_CONCURRENT_BLASTS {
                    continue;
                }
                let Some(blast) = Blast::parse(&header, &buf[..n]) else {
                    continue;
                };
                let Ok(tx) = socket.try_clone() else {
                    continue;
                };
                if blasted.len() >= MAX_SESSIONS {
                    blasted.pop_front();
                }
                blasted.push_back(header.session);
                let stop = Arc::clone(stop);
                let spawned = std::thread::Builder::new()
                    .name("probe-blast".into())
                    .spawn(move || {
                        pace(
                            &tx,
                            Some(from),
                            Header {
                                kind: DATA,
                                session: blast.session,
                                seq: 0,
                                t1: 0,
                                t2: 0,
                            },
                            blast.count,
                            blast.size,
                            blast.rate_bps,
                            &stop,
                        );
                    });
                if let Ok(h) = spawned {
                    blasts.push((header.session, h));
                }
            }
            _ => {}
        }
    }
    for (_, h) in blasts {
        let _ = h.join();
    }
}

/// Report reply: header, then packets, bytes, span ns, first_len (u64 each); all zero when the
/// session is unknown (nothing arrived).
fn report_reply(session: u32, arrivals: Option<&Arrivals>) -> Vec<u8> {
    let mut buf = Header {
        kind: REPORT_REPLY,
        session,
        seq: 0,
        t1: 0,
        t2: 0,
    }
    .datagram(HEADER_BYTES + 32);
    if let Some(a) = arrivals {
        let span = u64::try_from((a.last - a.first).as_nanos()).unwrap_or(u64::MAX);
        for (i, v) in [a.packets, a.bytes, span, a.first_len]
            .into_iter()
            .enumerate()
        {
            let at = HEADER_BYTES + 8 * i;
            buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
    }
    buf
}

/// What a peer asked the server to send: `count` data packets of `size` bytes at `rate_bps`.
#[derive(Debug, Clone, Copy)]
struct Blast {
    session: u32,
    count: u64,
    size: usize,
    rate_bps: f64,
}

impl Blast {
    /// Request body after the header: count u64, size u64, rate bit/s u64. Rejects requests that
    /// would run too long or send nonsense.
    fn parse(header: &Header, buf: &[u8]) -> Option<Blast> {
        let u64_at = |i: usize| Some(u64::from_le_bytes(buf.get(i..i + 8)?.try_into().ok()?));
        let count = u64_at(HEADER_BYTES)?;
        let size = usize::try_from(u64_at(HEADER_BYTES + 8)?).ok()?;
        let rate = u64_at(HEADER_BYTES + 16)?;
        if count == 0 || count > MAX_BLAST_PACKETS || rate < 1_000 {
            return None;
        }
        if !(HEADER_BYTES..=MAX_DATAGRAM).contains(&size) {
            return None;
        }
        let secs = (count as f64) * ((size + IP_UDP_OVERHEAD) * 8) as f64 / rate as f64;
        if secs > MAX_BLAST_TIME.as_secs_f64() {
            return None;
        }
        Some(Blast {
            session: header.session,
            count,
            size,
            rate_bps: rate as f64,
        })
    }

    fn request(&self) -> Vec<u8> {
        let mut buf = Header {
            kind: BLAST_REQUEST,
            session: self.session,
            seq: 0,
            t1: 0,
            t2: 0,
        }
        .datagram(HEADER_BYTES + 24);
        let rate = self.rate_bps.round().min(u64::MAX as f64) as u64;
        for (i, v) in [self.count, self.size as u64, rate].into_iter().enumerate() {
            let at = HEADER_BYTES + 8 * i;
            buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
        }
        buf
    }
}

/// Round-trip time over the path, with each direction's one-way delay.
#[derive(Debug, Clone, PartialEq)]
pub struct RttStats {
    /// Probes answered.
    pub samples: usize,
    /// Probes sent without an answer within the reply timeout.
    pub lost: usize,
    /// Probe datagram size (UDP payload bytes).
    pub size: usize,
    /// Smallest round trip.
    pub min: Duration,
    /// 10th percentile.
    pub p10: Duration,
    /// Median round trip.
    pub median: Duration,
    /// 90th percentile.
    pub p90: Duration,
    /// Largest round trip.
    pub max: Duration,
    /// Median one-way delay client to server (wall clock, same host).
    pub uplink_median: Duration,
    /// Median one-way delay server to client.
    pub downlink_median: Duration,
}

/// UDP goodput in one direction: payload bits over the time between first and last arrival.
#[derive(Debug, Clone, PartialEq)]
pub struct GoodputStats {
    /// Which way.
    pub direction: Direction,
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams received.
    pub received: u64,
    /// UDP payload bytes received.
    pub bytes: u64,
    /// From the first arrival to the last.
    pub span: Duration,
    /// UDP payload bits per second, excluding the first arrival (it opens the span).
    pub goodput_bps: f64,
    /// The same with [`IP_UDP_OVERHEAD`] per datagram: the rate the link itself was run at.
    pub wire_bps: f64,
}

/// Loss in one direction, against a configured probability.
#[derive(Debug, Clone, PartialEq)]
pub struct LossStats {
    /// Which way.
    pub direction: Direction,
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams received.
    pub received: u64,
    /// Measured loss fraction.
    pub loss: f64,
    /// The configured loss probability it is compared with.
    pub expected: f64,
    /// Exact binomial acceptance region at `confidence` around `expected`, as fractions: the
    /// losses a link with that probability produces in `sent` trials with that probability.
    pub interval: (f64, f64),
    /// Wilson score interval at `confidence` around the measured fraction (for reporting).
    pub wilson: (f64, f64),
    /// Confidence level of both intervals, e.g. 0.99.
    pub confidence: f64,
    /// Whether `loss` lies inside `interval`.
    pub inside: bool,
}

static NEXT_SESSION: AtomicU32 = AtomicU32::new(0);

/// A session id unlikely to collide with an earlier run's at a long-lived server.
fn new_session() -> u32 {
    let n = NEXT_SESSION.fetch_add(1, Ordering::Relaxed);
    ((wall_ns() >> 10) as u32) ^ n.wrapping_mul(0x9E37_79B9) ^ std::process::id()
}

/// The client end of every measurement, talking to a [`ProbeServer`] through `target` (the
/// relay's listen address, or the server's address across the testbed).
#[derive(Debug)]
pub struct Prober {
    socket: UdpSocket,
    target: SocketAddr,
    reply_timeout: Duration,
    settle: Duration,
}

impl Prober {
    /// A prober on a fresh loopback (or unspecified, for a non-loopback target) socket.
    pub fn new(target: SocketAddr) -> Result<Prober, NetnsError> {
        let ip: IpAddr = match (target.ip(), target.ip().is_loopback()) {
            (IpAddr::V4(_), true) => Ipv4Addr::LOCALHOST.into(),
            (IpAddr::V4(_), false) => Ipv4Addr::UNSPECIFIED.into(),
            (IpAddr::V6(_), true) => Ipv6Addr::LOCALHOST.into(),
            (IpAddr::V6(_), false) => Ipv6Addr::UNSPECIFIED.into(),
        };
        Self::bind(SocketAddr::new(ip, 0), target)
    }

    /// A prober on a socket bound to `local` (in the testbed, the address that picks the path).
    pub fn bind(local: SocketAddr, target: SocketAddr) -> Result<Prober, NetnsError> {
        let socket = UdpSocket::bind(local)
            .map_err(|e| io_err(format!("prober: cannot bind {local}"), e))?;
        socket
            .set_read_timeout(Some(POLL))
            .map_err(|e| io_err("prober: read timeout", e))?;
        Ok(Prober {
            socket,
            target,
            reply_timeout: Duration::from_secs(1),
            settle: Duration::from_millis(300),
        })
    }

    /// How long to wait for an answer before counting a probe lost or retrying a request
    /// (default 1 s; it must exceed the round trip plus a full queue's drain time).
    pub fn with_reply_timeout(mut self, timeout: Duration) -> Self {
        self.reply_timeout = timeout;
        self
    }

    /// How long a stream is quiet before it counts as over (default 300 ms).
    pub fn with_settle(mut self, settle: Duration) -> Self {
        self.settle = settle;
        self
    }

    /// The prober's own address.
    pub fn local_addr(&self) -> Result<SocketAddr, NetnsError> {
        self.socket
            .local_addr()
            .map_err(|e| io_err("prober: local address", e))
    }

    fn recv(&self, buf: &mut [u8]) -> io::Result<Option<(usize, Header)>> {
        match self.socket.recv_from(buf) {
            Ok((n, _)) => Ok(Header::read(&buf[..n]).map(|h| (n, h))),
            Err(e) if is_timeout(&e) || e.kind() == io::ErrorKind::ConnectionRefused => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Sends `count` echo probes of `size` bytes one at a time (each waits for its answer, or
    /// counts as lost after 4x the longest round trip so far, at least 50 ms, at most the reply
    /// timeout) and summarises the round trips; at most `3 * count` attempts.
    pub fn rtt(&self, count: usize, size: usize) -> Result<RttStats, NetnsError> {
        let session = new_session();
        let size = size.clamp(HEADER_BYTES, MAX_DATAGRAM);
        let mut rtts = Vec::with_capacity(count);
        let mut ups = Vec::with_capacity(count);
        let mut downs = Vec::with_capacity(count);
        let mut lost = 0;
        let mut longest: Option<Duration> = None;
        let mut buf = vec![0u8; MAX_DATAGRAM + 1];
        let attempts = count.saturating_mul(3);
        for seq in 0..attempts {
            if rtts.len() >= count {
                break;
            }
            let seq32 = u32::try_from(seq).unwrap_or(u32::MAX);
            let probe = Header {
                kind: ECHO_REQUEST,
                session,
                seq: seq32,
                t1: wall_ns(),
                t2: 0,
            }
            .datagram(size);
            let sent_at = Instant::now();
            self.socket
                .send_to(&probe, self.target)
                .map_err(|e| io_err(format!("prober: sending to {}", self.target), e))?;
            // A lost probe costs its whole timeout, so once the path's round trip is known,
            // wait a few of them (at least 50 ms) rather than the full reply timeout.
            let wait = match longest {
                Some(l) => (l * 4).clamp(Duration::from_millis(50), self.reply_timeout),
                None => self.reply_timeout,
            };
            let deadline = sent_at + wait;
            let mut answered = false;
            while Instant::now() < deadline {
                let Some((_, h)) = self
                    .recv(&mut buf)
                    .map_err(|e| io_err("prober: receiving echo", e))?
                else {
                    continue;
                };
                if h.kind != ECHO_REPLY || h.session != session || h.seq != seq32 {
                    continue; // a late answer to an earlier probe, or a stray
                }
                let now_wall = wall_ns();
                let rtt = sent_at.elapsed();
                longest = Some(longest.map_or(rtt, |l| l.max(rtt)));
                rtts.push(rtt);
                ups.push(Duration::from_nanos(h.t2.saturating_sub(h.t1)));
                downs.push(Duration::from_nanos(now_wall.saturating_sub(h.t2)));
                answered = true;
                break;
            }
            if !answered {
                lost += 1;
            }
        }
        if rtts.is_empty() {
            return Err(timeout(format!(
                "prober: no echo from {} in {attempts} probes",
                self.target
            )));
        }
        rtts.sort_unstable();
        ups.sort_unstable();
        downs.sort_unstable();
        Ok(RttStats {
            samples: rtts.len(),
            lost,
            size,
            min: rtts[0],
            p10: quantile(&rtts, 0.1),
            median: quantile(&rtts, 0.5),
            p90: quantile(&rtts, 0.9),
            max: rtts[rtts.len() - 1],
            uplink_median: quantile(&ups, 0.5),
            downlink_median: quantile(&downs, 0.5),
        })
    }

    /// UDP goodput in `direction`: a paced sender offers [`GOODPUT_OVERDRIVE`] times
    /// `rate_bps` (wire bytes) in `size`-byte datagrams for `duration`; the receiver counts the
    /// payload between first and last arrival.
    pub fn goodput(
        &self,
        direction: Direction,
        rate_bps: u64,
        duration: Duration,
        size: usize,
    ) -> Result<GoodputStats, NetnsError> {
        let size = size.clamp(HEADER_BYTES, MAX_DATAGRAM);
        let offered = rate_bps as f64 * GOODPUT_OVERDRIVE;
        let count = (duration.as_secs_f64() * offered / ((size + IP_UDP_OVERHEAD) * 8) as f64)
            .ceil()
            .max(2.0) as u64;
        let (sent, a) = self.stream(direction, count, size, offered)?;
        let span = a.last - a.first;
        if a.packets < 2 || span.is_zero() {
            return Err(timeout(format!(
                "prober: {direction:?} goodput to {}: {} of {sent} datagrams arrived",
                self.target, a.packets
            )));
        }
        let payload = (a.bytes - a.first_len) as f64 * 8.0;
        let wire = payload + ((a.packets - 1) * IP_UDP_OVERHEAD as u64 * 8) as f64;
        Ok(GoodputStats {
            direction,
            sent,
            received: a.packets,
            bytes: a.bytes,
            span,
            goodput_bps: payload / span.as_secs_f64(),
            wire_bps: wire / span.as_secs_f64(),
        })
    }

    /// Loss in `direction`: `count` datagrams of `size` bytes paced at `rate_bps` (keep it well
    /// under the link's rate so the queue never drops), compared with `expected` at
    /// `confidence` (e.g. 0.99).
    pub fn loss(
        &self,
        direction: Direction,
        count: u64,
        size: usize,
        rate_bps: u64,
        expected: f64,
        confidence: f64,
    ) -> Result<LossStats, NetnsError> {
        let size = size.clamp(HEADER_BYTES, MAX_DATAGRAM);
        let (sent, a) = self.stream(direction, count, size, rate_bps as f64)?;
        let received = a.packets.min(sent);
        let lost = sent - received;
        let loss = if sent == 0 {
            0.0
        } else {
            lost as f64 / sent as f64
        };
        let (lo, hi) = binomial_acceptance(sent, expected, confidence);
        let n = sent.max(1) as f64;
        Ok(LossStats {
            direction,
            sent,
            received,
            loss,
            expected,
            interval: (lo as f64 / n, hi as f64 / n),
            wilson: wilson_interval(lost, sent, confidence),
            confidence,
            inside: (lo..=hi).contains(&lost),
        })
    }

    /// Sends one paced stream of data packets in `direction` and counts what arrived.
    fn stream(
        &self,
        direction: Direction,
        count: u64,
        size: usize,
        rate_bps: f64,
    ) -> Result<(u64, Arrivals), NetnsError> {
        let session = new_session();
        match direction {
            Direction::Uplink => {
                let never = AtomicBool::new(false);
                let header = Header {
                    kind: DATA,
                    session,
                    seq: 0,
                    t1: 0,
                    t2: 0,
                };
                let sent = pace(
                    &self.socket,
                    Some(self.target),
                    header,
                    count,
                    size,
                    rate_bps,
                    &never,
                );
                // Let the link's queue drain before asking; the request then queues behind
                // any data still in it, so the answer counts everything that got through.
                std::thread::sleep(self.settle);
                let arrivals = self.report(session)?.ok_or_else(|| {
                    timeout(format!(
                        "prober: none of {sent} datagrams reached the server via {}",
                        self.target
                    ))
                })?;
                Ok((sent, arrivals))
            }
            Direction::Downlink => self.receive_blast(Blast {
                session,
                count,
                size,
                rate_bps,
            }),
        }
    }

    /// Asks the server what arrived in `session` (retrying lost requests, at most 5 times).
    fn report(&self, session: u32) -> Result<Option<Arrivals>, NetnsError> {
        let request = Header {
            kind: REPORT_REQUEST,
            session,
            seq: 0,
            t1: 0,
            t2: 0,
        }
        .datagram(HEADER_BYTES);
        let mut buf = vec![0u8; MAX_DATAGRAM + 1];
        for _ in 0..5 {
            self.socket
                .send_to(&request, self.target)
                .map_err(|e| io_err(format!("prober: sending to {}", self.target), e))?;
            let deadline = Instant::now() + self.reply_timeout;
            while Instant::now() < deadline {
                let Some((n, h)) = self
                    .recv(&mut buf)
                    .map_err(|e| io_err("prober: receiving report", e))?
                else {
                    continue;
                };
                if h.kind != REPORT_REPLY || h.session != session {
                    continue;
                }
                let body = &buf[..n];
                let at = |i: usize| {
                    body.get(HEADER_BYTES + 8 * i..HEADER_BYTES + 8 * i + 8)
                        .and_then(|b| b.try_into().ok())
                        .map(u64::from_le_bytes)
                };
                let (Some(packets), Some(bytes), Some(span), Some(first_len)) =
                    (at(0), at(1), at(2), at(3))
                else {
                    continue;
                };
                if packets == 0 {
                    return Ok(None);
                }
                // Only the span matters; rebuild it on this side's clock.
                let first = Instant::now();
                return Ok(Some(Arrivals {
                    packets,
                    bytes,
                    first,
                    last: first + Duration::from_nanos(span),
                    first_len,
                }));
            }
        }
        Err(timeout(format!(
            "prober: no report from {} after 5 requests",
            self.target
        )))
    }

    /// Asks the server to send a paced stream back and counts its arrivals. The request is
    /// retried (5 times at most) until data arrives; the stream is over when all of it arrived,
    /// when it has been quiet for the settle time, or at a hard deadline.
    fn receive_blast(&self, blast: Blast) -> Result<(u64, Arrivals), NetnsError> {
        let request = blast.request();
        let nominal = Duration::from_secs_f64(
            blast.count as f64 * ((blast.size + IP_UDP_OVERHEAD) * 8) as f64 / blast.rate_bps,
        );
        let mut buf = vec![0u8; MAX_DATAGRAM + 1];
        let mut arrivals: Option<Arrivals> = None;
        let mut tries = 0;
        let mut asked_at = Instant::now();
        let hard_deadline = asked_at + nominal * 2 + self.reply_timeout * 6 + self.settle;
        loop {
            let now = Instant::now();
            if now >= hard_deadline {
                break;
            }
            match &arrivals {
                None if tries == 0 || now - asked_at >= self.reply_timeout => {
                    if tries == 5 {
                        break;
                    }
                    tries += 1;
                    asked_at = now;
                    self.socket
                        .send_to(&request, self.target)
                        .map_err(|e| io_err(format!("prober: sending to {}", self.target), e))?;
                }
                Some(a) if a.packets >= blast.count || now - a.last >= self.settle => break,
                _ => {}
            }
            let Some((n, h)) = self
                .recv(&mut buf)
                .map_err(|e| io_err("prober: receiving data", e))?
            else {
                continue;
            };
            if h.kind != DATA || h.session != blast.session {
                continue;
            }
            let now = Instant::now();
            match &mut arrivals {
                Some(a) => a.add(now, n),
                None => arrivals = Some(Arrivals::new(now, n)),
            }
        }
        let a = arrivals.ok_or_else(|| {
            timeout(format!(
                "prober: no data from the server via {} after {tries} requests",
                self.target
            ))
        })?;
        Ok((blast.count, a))
    }
}

/// The fidelity bars of the testbed issue: RTT median within this of configured.
pub const RTT_TOLERANCE: Duration = Duration::from_millis(1);
/// UDP goodput within this fraction of the configured rate.
pub const GOODPUT_TOLERANCE: f64 = 0.05;
/// Confidence of the binomial interval the measured loss must fall in.
pub const LOSS_CONFIDENCE: f64 = 0.99;

/// How long each goodput measurement runs in [`check_path`].
pub const CHECK_GOODPUT_TIME: Duration = Duration::from_secs(2);
/// Echo probes in [`check_path`].
pub const CHECK_RTT_PROBES: usize = 100;
/// Datagrams per direction for the loss measurement in [`check_path`].
pub const CHECK_LOSS_PACKETS: u64 = 5000;
const CHECK_PROBE_BYTES: usize = 64;
const CHECK_GOODPUT_BYTES: usize = 1500 - IP_UDP_OVERHEAD;
const CHECK_LOSS_BYTES: usize = 200;

/// Configured against measured for one path: what `testbed check` prints.
#[derive(Debug, Clone, PartialEq)]
pub struct PathCheck {
    /// What the path was configured with.
    pub spec: mpquic_sched::sim::PathSpec,
    /// The round trip it should show: twice the one-way delay plus the probe's serialization
    /// in each direction.
    pub expected_rtt: Duration,
    /// Measured round trips.
    pub rtt: RttStats,
    /// Measured goodput, uplink then downlink.
    pub goodput: [GoodputStats; 2],
    /// Measured loss, uplink then downlink (only for lossy paths).
    pub loss: Option<[LossStats; 2]>,
}

impl PathCheck {
    /// Every bar the path misses, in words; empty when it passes.
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.rtt.median.abs_diff(self.expected_rtt) > RTT_TOLERANCE {
            out.push(format!(
                "rtt median {:?} not within {RTT_TOLERANCE:?} of {:?}",
                self.rtt.median, self.expected_rtt
            ));
        }
        let rate = self.spec.rate_bps as f64;
        for g in &self.goodput {
            if (g.goodput_bps / rate - 1.0).abs() > GOODPUT_TOLERANCE {
                out.push(format!(
                    "{:?} goodput {:.3} Mbit/s not within {}% of {:.3}",
                    g.direction,
                    g.goodput_bps / 1e6,
                    GOODPUT_TOLERANCE * 100.0,
                    rate / 1e6
                ));
            }
        }
        for l in self.loss.iter().flatten() {
            if !l.inside {
                out.push(format!(
                    "{:?} loss {:.3}% outside [{:.3}%, {:.3}%]",
                    l.direction,
                    l.loss * 100.0,
                    l.interval.0 * 100.0,
                    l.interval.1 * 100.0
                ));
            }
        }
        out
    }
}

impl std::fmt::Display for PathCheck {
    /// One line per measurement: configured, measured, verdict.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let ok = |b: bool| if b { "ok" } else { "FAIL" };
        let r = &self.rtt;
        writeln!(
            f,
            "  rtt      configured {:8.3} ms  measured median {:8.3} ms (p10 {:.3}, p90 {:.3}; up {:.3}, down {:.3}; {} probes, {} lost)  {}",
            ms(self.expected_rtt),
            ms(r.median),
            ms(r.p10),
            ms(r.p90),
            ms(r.uplink_median),
            ms(r.downlink_median),
            r.samples,
            r.lost,
            ok(r.median.abs_diff(self.expected_rtt) <= RTT_TOLERANCE)
        )?;
        let rate = self.spec.rate_bps as f64;
        for g in &self.goodput {
            let dir = if g.direction == Direction::Uplink {
                "up  "
            } else {
                "down"
            };
            writeln!(
                f,
                "  goodput {dir} configured {:8.3} Mbit/s  measured {:8.3} Mbit/s ({:+.2}%; on the wire {:.3})  {}",
                rate / 1e6,
                g.goodput_bps / 1e6,
                (g.goodput_bps / rate - 1.0) * 100.0,
                g.wire_bps / 1e6,
                ok((g.goodput_bps / rate - 1.0).abs() <= GOODPUT_TOLERANCE)
            )?;
        }
        for l in self.loss.iter().flatten() {
            let dir = if l.direction == Direction::Uplink {
                "up  "
            } else {
                "down"
            };
            writeln!(
                f,
                "  loss    {dir} configured {:7.3}%  measured {:7.3}% ({} of {}; {:.0}% interval [{:.3}%, {:.3}%])  {}",
                l.expected * 100.0,
                l.loss * 100.0,
                l.sent - l.received,
                l.sent,
                l.confidence * 100.0,
                l.interval.0 * 100.0,
                l.interval.1 * 100.0,
                ok(l.inside)
            )?;
        }
        Ok(())
    }
}

/// Measures one path through `prober` against `spec` (RTT, goodput both ways, and loss both
/// ways when the path is lossy): the testbed issue's fidelity check. Takes about
/// `100 * RTT + 4 * 2 s` plus, for a lossy path, two 5000-datagram runs at half the rate.
pub fn check_path(
    prober: &Prober,
    spec: &mpquic_sched::sim::PathSpec,
) -> Result<PathCheck, NetnsError> {
    let serialization = Duration::from_secs_f64(
        ((CHECK_PROBE_BYTES + IP_UDP_OVERHEAD) * 8) as f64 / spec.rate_bps.max(1) as f64,
    );
    let expected_rtt = (spec.one_way_delay + serialization) * 2;
    let rtt = prober.rtt(CHECK_RTT_PROBES, CHECK_PROBE_BYTES)?;
    let goodput = [Direction::Uplink, Direction::Downlink]
        .map(|d| prober.goodput(d, spec.rate_bps, CHECK_GOODPUT_TIME, CHECK_GOODPUT_BYTES));
    let [up, down] = goodput;
    let goodput = [up?, down?];
    let loss = if spec.drop_rate > 0.0 {
        let run = |d| {
            prober.loss(
                d,
                CHECK_LOSS_PACKETS,
                CHECK_LOSS_BYTES,
                spec.rate_bps / 2,
                spec.drop_rate,
                LOSS_CONFIDENCE,
            )
        };
        Some([run(Direction::Uplink)?, run(Direction::Downlink)?])
    } else {
        None
    };
    Ok(PathCheck {
        spec: *spec,
        expected_rtt,
        rtt,
        goodput,
        loss,
    })
}

/// The `q` quantile of sorted, non-empty `v` (nearest rank).
fn quantile(v: &[Duration], q: f64) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    v[i.min(v.len() - 1)]
}

/// Two-sided standard normal quantile for `confidence` (e.g. 0.99 -> 2.576), by bisection on
/// the complementary error function's series-free approximation (Abramowitz-Stegun 7.1.26).
fn z_for(confidence: f64) -> f64 {
    let tail = (1.0 - confidence.clamp(0.0, 1.0 - 1e-12)) / 2.0;
    let upper_tail = |z: f64| {
        // P(Z > z) for z >= 0.
        let x = z / std::f64::consts::SQRT_2;
        let t = 1.0 / (1.0 + 0.327_591_1 * x);
        let poly = t
            * (0.254_829_592
                + t * (-0.284_496_736
                    + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
        0.5 * poly * (-x * x).exp()
    };
    let (mut lo, mut hi) = (0.0, 40.0);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if upper_tail(mid) > tail {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// Wilson score interval for `k` successes in `n` trials at `confidence`.
pub fn wilson_interval(k: u64, n: u64, confidence: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let z = z_for(confidence);
    let n = n as f64;
    let p = k as f64 / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// The exact two-sided binomial acceptance region: the counts `lo..=hi` of `n` trials with
/// success probability `p` outside which each tail holds at most `(1 - confidence) / 2`.
/// Computed by summing the pmf in log space (no underflow for large `n`); `O(n)`.
pub fn binomial_acceptance(n: u64, p: f64, confidence: f64) -> (u64, u64) {
    if n == 0 || p.is_nan() || p <= 0.0 {
        return (0, 0);
    }
    if p >= 1.0 {
        return (n, n);
    }
    let tail = (1.0 - confidence.clamp(0.0, 1.0)) / 2.0;
    let (ln_p, ln_q) = (p.ln(), (1.0 - p).ln());
    let mut ln_pmf = n as f64 * ln_q;
    let mut cdf = 0.0;
    let mut lo = None;
    for k in 0..=n {
        if k > 0 {
            ln_pmf += ((n - k + 1) as f64 / k as f64).ln() + ln_p - ln_q;
        }
        cdf += ln_pmf.exp();
        if lo.is_none() && cdf > tail {
            lo = Some(k);
        }
        if cdf >= 1.0 - tail {
            return (lo.unwrap_or(k), k);
        }
    }
    (lo.unwrap_or(0), n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_rejects_strays() {
        let h = Header {
            kind: DATA,
            session: 7,
            seq: 9,
            t1: 11,
            t2: 13,
        };
        let d = h.datagram(100);
        assert_eq!(d.len(), 100);
        assert_eq!(Header::read(&d), Some(h));
        assert_eq!(Header::read(&d[..HEADER_BYTES - 1]), None);
        assert_eq!(Header::read(b"nope, not a probe at all......"), None);
    }

    #[test]
    fn z_matches_the_normal_table() {
        assert!((z_for(0.99) - 2.5758).abs() < 1e-3);
        assert!((z_for(0.95) - 1.9600).abs() < 1e-3);
    }

    #[test]
    fn binomial_acceptance_brackets_the_mean() {
        // n = 5000, p = 0.02: mean 100, sd 9.9; the 99% region is about 100 +- 26.
        let (lo, hi) = binomial_acceptance(5000, 0.02, 0.99);
        assert!((73..=77).contains(&lo), "{lo}");
        assert!((124..=128).contains(&hi), "{hi}");
        assert_eq!(binomial_acceptance(100, 0.0, 0.99), (0, 0));
        assert_eq!(binomial_acceptance(100, 1.0, 0.99), (100, 100));
        let (lo, hi) = wilson_interval(100, 5000, 0.99);
        assert!(lo < 0.02 && 0.02 < hi);
    }

    #[test]
    fn blast_requests_are_bounded() {
        let ok = Blast {
            session: 1,
            count: 1000,
            size: 1000,
            rate_bps: 1e6,
        };
        let h = Header::read(&ok.request()).expect("header");
        assert!(Blast::parse(&h, &ok.request()).is_some());
        let too_long = Blast {
            count: 1_000_000,
            ..ok
        };
        assert!(Blast::parse(&h, &too_long.request()).is_none());
        let truncated = ok.request();
        assert!(Blast::parse(&h, &truncated[..HEADER_BYTES + 10]).is_none());
    }
}
