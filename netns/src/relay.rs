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

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use crate::direction::DirectionStats;
use crate::direction::{Delivery, Direction, Outlet};
use crate::error::NetnsError;
use crate::pump::{self, Inlet, Input, Output, Shared};
use mpquic_scenario::link::{Link, LinkConfig, IP_UDP_OVERHEAD};

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

/// The two directions of one path, kept by the [`Relay`] for stats and shutdown.
#[derive(Debug)]
struct PathShared {
    uplink: Arc<Direction>,
    downlink: Arc<Direction>,
}

/// Where a direction's sender delivers.
enum Dest {
    /// The server: the socket is connected to it.
    Connected,
    /// The last client address seen on the path.
    LastClient(Arc<Mutex<Option<SocketAddr>>>),
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
                uplink: p.uplink.stats(),
                downlink: p.downlink.stats(),
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
