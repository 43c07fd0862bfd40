//! The client end: [`Prober`] drives every measurement and summarises it as [`RttStats`],
//! [`GoodputStats`] or [`LossStats`].

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::check::{binomial_acceptance, quantile, wilson_interval};
use super::server::{Arrivals, Blast};
#[cfg(doc)]
use super::ProbeServer;
use super::{
    io_err, is_timeout, pace, timeout, wall_ns, Direction, Header, DATA, ECHO_REPLY, ECHO_REQUEST,
    GOODPUT_OVERDRIVE, HEADER_BYTES, MAX_DATAGRAM, POLL, REPORT_REPLY, REPORT_REQUEST,
};
use crate::error::NetnsError;
use mpquic_scenario::link::IP_UDP_OVERHEAD;

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
