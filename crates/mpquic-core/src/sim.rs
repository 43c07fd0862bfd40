//! The simulated driver: both ends of an mpquic connection in one thread, on simulated time,
//! over simulated links, deterministic.
//!
//! Each end runs the real multipath core ([`mpquic_proto::Connection`]), a real quinn-proto
//! connection per path (its congestion control, pacing and loss recovery, wrapped by the same
//! telemetry as the quinn driver's) and the real scheduler, and frames chunks and control frames
//! as the quinn driver does. What is simulated is the clock and the wire: every datagram goes
//! through a [`Link`] per direction of its path, which says when it arrives or that it is lost.
//! The harness follows quinn-proto's own test `Pair` (its `src/tests/util.rs`): step to the
//! next instant something is due, deliver what arrives then, let both ends act.
//!
//! What differs from the quinn driver: no sockets, a certificate made up per run, no join
//! secret (the simulation proves nothing), and the application acts between steps rather than
//! concurrently.
//!
//! ```
//! use std::time::Duration;
//! use mpquic_core::sim::{FixedLink, Link, Pair, PathLinks};
//! use mpquic_core::Config;
//!
//! // Two paths, 20 Mbit/s each way, 10 ms and 30 ms one way.
//! let links: Vec<PathLinks> = [10, 30]
//!     .into_iter()
//!     .map(|ms| {
//!         let link = || Box::new(FixedLink::new(20_000_000, Duration::from_millis(ms)));
//!         (link() as Box<dyn Link>, link() as Box<dyn Link>)
//!     })
//!     .collect();
//! let mut pair = Pair::new(&Config::default(), &Config::default(), links, 1).unwrap();
//! assert!(pair.connect(Duration::from_secs(1)));
//! let stream = pair.client.core.open(true, pair.now()).unwrap();
//! pair.client.core.write(stream, &[7; 100_000], pair.now()).unwrap();
//! pair.client.core.finish(stream, pair.now()).unwrap();
//! let mut received = 0;
//! assert!(pair.run_until(Duration::from_secs(5), |pair| {
//!     if let Some(id) = pair.server.core.accept(true) {
//!         assert_eq!(id, stream);
//!     }
//!     while let Some(Ok(Some(data))) = pair.server.core.read(stream, usize::MAX) {
//!         received += data.len();
//!     }
//!     received == 100_000
//! }));
//! ```

mod end;
mod payload;
mod transfer;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mpquic_proto::Side;
use mpquic_scenario::default_queue_bytes;
use mpquic_scenario::link::{LinkConfig, IP_UDP_OVERHEAD};
use mpquic_scenario::{LinkError, PathSpec};

use crate::config::Config;
use crate::tls::{CertificateError, SelfSigned};

pub use end::End;
pub use payload::{Payload, BLOCK};
pub use transfer::{Transfer, TransferError};

use end::Datagram;

/// One direction of a simulated path.
pub trait Link {
    /// A datagram enters the link at `now` (since the simulation's start) as an IP packet of
    /// `len` bytes (its payload and [`IP_UDP_OVERHEAD`]): when it reaches the far end, or `None`
    /// if it is lost. Arrivals never come before `now`.
    fn offer(&mut self, now: Duration, len: usize) -> Option<Duration>;
}

/// A closure is a link: `|now, len| model.offer(now, len)`.
impl<F: FnMut(Duration, usize) -> Option<Duration>> Link for F {
    fn offer(&mut self, now: Duration, len: usize) -> Option<Duration> {
        self(now, len)
    }
}

/// A link without loss: a rate, a one-way delay and a drop-tail queue of one bandwidth-delay
/// product (at least 64 kB), as the testbed sizes its queues by default.
#[derive(Debug, Clone)]
pub struct FixedLink {
    rate_bps: u64,
    delay: Duration,
    queue_bytes: u64,
    /// When the link finishes serializing what it has accepted.
    busy_until: Duration,
}

impl FixedLink {
    /// A link of `rate_bps` bit/s (at least 1) and `delay` one way.
    pub fn new(rate_bps: u64, delay: Duration) -> Self {
        let rate_bps = rate_bps.max(1);
        Self {
            rate_bps,
            delay,
            queue_bytes: default_queue_bytes(rate_bps, delay),
            busy_until: Duration::ZERO,
        }
    }

    fn serialization(&self, len: usize) -> Duration {
        Duration::from_nanos((len as u64 * 8).saturating_mul(1_000_000_000) / self.rate_bps)
    }
}

impl Link for FixedLink {
    fn offer(&mut self, now: Duration, len: usize) -> Option<Duration> {
        let start = self.busy_until.max(now);
        let queued = start - now;
        let queued_bytes = queued.as_secs_f64() * self.rate_bps as f64 / 8.0;
        if queued_bytes + len as f64 > self.queue_bytes as f64 {
            return None;
        }
        self.busy_until = start + self.serialization(len);
        Some(self.busy_until + self.delay)
    }
}

/// A path's two directions: client to server, server to client.
pub type PathLinks = (Box<dyn Link>, Box<dyn Link>);

/// A link through the model the testbed emulates ([`mpquic_scenario::link`]).
///
/// # Errors
/// [`LinkError`]: a config the model refuses.
pub fn emulated_link(config: LinkConfig) -> Result<Box<dyn Link>, LinkError> {
    let mut link = mpquic_scenario::link::Link::new(config)?;
    Ok(Box::new(move |now, len| link.offer(now, len).arrival()))
}

/// Path `k` of a scenario as the testbed emulates it, both directions seeded from the run's
/// `seed` by the rule every emulator follows ([`LinkConfig::of_path`]).
///
/// # Errors
/// [`LinkError`]: a path the model refuses.
pub fn emulated_path(spec: &PathSpec, seed: u64, k: usize) -> Result<PathLinks, LinkError> {
    let (up, down) = LinkConfig::of_path(spec, seed, k);
    Ok((emulated_link(up)?, emulated_link(down)?))
}

/// Both ends of a connection, their paths and the datagrams between them.
pub struct Pair {
    /// The client end.
    pub client: End,
    /// The server end.
    pub server: End,
    links: Vec<PathLinks>,
    /// The client's address on each path (the path's index is its position).
    client_addrs: Vec<SocketAddr>,
    server_addrs: Vec<SocketAddr>,
    epoch: Instant,
    now: Instant,
    /// Datagrams in flight by arrival time, then by when they were sent.
    in_flight: BTreeMap<(Instant, u64), Datagram>,
    sent: u64,
    lost: u64,
}

impl std::fmt::Debug for Pair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pair")
            .field("now", &self.elapsed())
            .field("paths", &self.links.len())
            .field("in_flight", &self.in_flight.len())
            .finish_non_exhaustive()
    }
}

/// Why a [`Pair`] could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The made-up certificate or the TLS settings failed.
    #[error("TLS set-up")]
    Tls(#[from] CertificateError),
    /// quinn-proto refused to start a path.
    #[error("connect: {0}")]
    Connect(#[from] quinn_proto::ConnectError),
}

impl Pair {
    /// A client on `client` settings and a server on `server`'s, with one path per entry of
    /// `links`, and every random choice (quinn-proto's, the links') drawn from `seed`. The
    /// paths start their handshakes at once; [`Pair::connect`] waits for them.
    pub fn new(
        client: &Config,
        server: &Config,
        links: Vec<PathLinks>,
        seed: u64,
    ) -> Result<Self, SimError> {
        let (client_tls, server_tls) = tls()?;
        let epoch = Instant::now();
        let rng_seed = |side: u8| {
            let mut bytes = [side; 32];
            bytes[..8].copy_from_slice(&seed.to_le_bytes());
            bytes
        };
        let client_config = Arc::new(client.clone());
        let server_config = Arc::new(server.clone());
        let mut pair = Self {
            client: End::new(
                Side::Client,
                client_config,
                server.params(),
                None,
                rng_seed(1),
                epoch,
            ),
            server: End::new(
                Side::Server,
                server_config,
                client.params(),
                Some(server_tls),
                rng_seed(2),
                epoch,
            ),
            client_addrs: (0..links.len()).map(|k| address(k, 1, 40_000)).collect(),
            server_addrs: (0..links.len()).map(|k| address(k, 2, 443)).collect(),
            links,
            epoch,
            now: epoch,
            in_flight: BTreeMap::new(),
            sent: 0,
            lost: 0,
        };
        for k in 0..pair.links.len() {
            let (local, remote) = (pair.client_addrs[k], pair.server_addrs[k]);
            pair.client.connect(local, remote, &client_tls, epoch)?;
        }
        Ok(pair)
    }

    /// The simulated time now.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Simulated time since the start.
    pub fn elapsed(&self) -> Duration {
        self.now - self.epoch
    }

    /// Datagrams the links carried and lost so far.
    pub fn datagrams(&self) -> (u64, u64) {
        (self.sent, self.lost)
    }

    /// Runs until every path is up at both ends, for at most `limit` of simulated time.
    pub fn connect(&mut self, limit: Duration) -> bool {
        let paths = self.links.len();
        self.run_until(limit, |pair| {
            pair.client.core.path_count() == paths && pair.server.core.path_count() == paths
        })
    }

    /// Steps until `done` holds (checked before every step) or `limit` of simulated time has
    /// passed from now, or nothing is left to happen. Whether `done` held.
    pub fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&mut Self) -> bool) -> bool {
        let deadline = self.now + limit;
        loop {
            if done(self) {
                return true;
            }
            if self.now >= deadline || !self.step_before(deadline) {
                return done(self);
            }
        }
    }

    /// Lets both ends act at the current instant, then moves to the next instant something is
    /// due (at most `deadline`), delivers what arrives then and lets both ends take it in.
    /// `false`: nothing is left to happen.
    pub fn step(&mut self) -> bool {
        self.step_before(self.now + Duration::from_secs(3600))
    }

    fn step_before(&mut self, deadline: Instant) -> bool {
        self.settle();
        let next = [
            self.in_flight.keys().next().map(|(t, _)| *t),
            self.client.next_timeout(),
            self.server.next_timeout(),
        ]
        .into_iter()
        .flatten()
        // Whatever was due now has been done.
        .filter(|t| *t > self.now)
        .min();
        let Some(next) = next else {
            return false;
        };
        self.now = next.min(deadline);
        while let Some(entry) = self.in_flight.first_entry() {
            if entry.key().0 > self.now {
                break;
            }
            let (from, to, data) = entry.remove();
            if self.client_addrs.contains(&to) {
                self.client.deliver((from, to, data));
            } else {
                self.server.deliver((from, to, data));
            }
        }
        // The ends take in what arrived and what fell due before the application looks, so
        // that it sees at this instant what a socket would have handed it now.
        self.settle();
        true
    }

    /// Lets both ends act at `now` until neither has anything more to do then.
    fn settle(&mut self) {
        // Each round hands datagrams to links whose delay lies ahead; a handful of rounds
        // settles an instant. The bound only guards against a livelock in the ends.
        for _ in 0..64 {
            let mut out = Vec::new();
            let client = self.client.drive(self.now, &mut out);
            let server = self.server.drive(self.now, &mut out);
            for datagram in out {
                self.route(datagram);
            }
            if !client && !server {
                break;
            }
        }
    }

    /// Offers a datagram to its path's link in its direction.
    fn route(&mut self, (from, to, data): Datagram) {
        let up = self.client_addrs.iter().position(|a| *a == from);
        let down = self.client_addrs.iter().position(|a| *a == to);
        let link = match (up, down) {
            (Some(k), _) => &mut self.links[k].0,
            (None, Some(k)) => &mut self.links[k].1,
            (None, None) => return,
        };
        match link.offer(self.now - self.epoch, data.len() + IP_UDP_OVERHEAD) {
            Some(arrival) => {
                let at = (self.epoch + arrival).max(self.now);
                self.in_flight.insert((at, self.sent), (from, to, data));
                self.sent += 1;
            }
            None => self.lost += 1,
        }
    }
}

/// Path `k`'s address of host `host` (1: client, 2: server): 10.0.k.host.
fn address(k: usize, host: u8, port: u16) -> SocketAddr {
    let k = u8::try_from(k).unwrap_or(u8::MAX);
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, k, host)), port)
}

/// A made-up certificate for "localhost", and both ends' TLS settings around it.
fn tls() -> Result<(quinn_proto::ClientConfig, Arc<quinn_proto::ServerConfig>), CertificateError> {
    // Ed25519: its signatures have one size, so the handshake's packets do too, run after run.
    let certificate = SelfSigned::ed25519(&["localhost"])?;
    let client = certificate.client_config()?.quinn;
    let server = certificate.server_config()?.quinn;
    Ok((client, Arc::new(server)))
}
