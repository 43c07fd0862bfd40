//! The namespace testbed: a client and a server network namespace joined by one emulated link
//! per path and direction (needs root).
//!
//! Path k is a pair of TUN devices opened by this process, one moved into each namespace, with
//! addresses [`client_addr`]`(k)` = `10.(k+1).0.1/24` and [`server_addr`]`(k)` =
//! `10.(k+1).0.2/24`; a process in the client namespace chooses path k by its local address (or
//! simply by the server address it sends to). One thread (the relay's
//! [`pump`]) reads the IP packets the kernel routes out of each TUN device, offers
//! them to that direction's [`Link`], and writes what the link delivers into the other
//! namespace's device at its delivery time. The links see whole IPv4
//! packets, so no overhead is added to their length.
//!
//! Names are unique per testbed (`mq<pid>x<n>c` and `mq<pid>x<n>s` for the namespaces,
//! `mq<pid>x<n>c<k>` / `mq<pid>x<n>s<k>` for the devices), so several can coexist. Everything
//! [`Topology::up`] creates is removed again by [`Topology::down`] or on drop, and by `up`
//! itself when it fails half way.

use std::io;
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use mpquic_scenario::Scenario;

use crate::direction::{Delivery, Direction, Outlet};
use crate::error::NetnsError;
use crate::pump::{self, Input, Output, Shared};
use crate::relay::PathStats;
use crate::tun::{validate_ifname, TunDevice};
use mpquic_scenario::events::TimedEvent;
use mpquic_scenario::link::{Link, LinkConfig};

/// Most paths a topology can have: path k uses the subnet `10.(k+1).0.0/24`.
pub const MAX_PATHS: usize = 254;

/// Hands out testbed numbers, so that topologies in one process get distinct names.
static NEXT_TESTBED: AtomicU64 = AtomicU64::new(0);

/// One end of the topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The client namespace (addresses `10.(k+1).0.1`).
    Client,
    /// The server namespace (addresses `10.(k+1).0.2`).
    Server,
}

/// The client's address on path `k`: `10.(k+1).0.1`. Meaningful for `k <` [`MAX_PATHS`].
pub fn client_addr(k: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, subnet(k), 0, 1)
}

/// The server's address on path `k`: `10.(k+1).0.2`. Meaningful for `k <` [`MAX_PATHS`].
pub fn server_addr(k: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, subnet(k), 0, 2)
}

fn subnet(k: usize) -> u8 {
    u8::try_from(k + 1).unwrap_or(u8::MAX)
}

/// A running namespace testbed; [`Topology::down`] or dropping it removes it.
#[derive(Debug)]
pub struct Topology {
    scenario: &'static Scenario,
    client_ns: String,
    server_ns: String,
    /// The namespaces this topology created (and only those), for teardown.
    created: Vec<String>,
    shared: Arc<Shared>,
    paths: Vec<[Arc<Direction>; 2]>,
    threads: Vec<JoinHandle<()>>,
    /// Every open device; the threads hold clones until they are joined.
    devices: Vec<Arc<TunDevice>>,
}

impl Topology {
    /// Sets up `scenario`'s paths between two new namespaces and starts shuttling packets.
    ///
    /// # Errors
    /// [`NetnsError::InvalidLink`] for a scenario that cannot be emulated (checked before
    /// anything is created); [`NetnsError::Io`] naming the failed `ip` command and its
    /// stderr, or the device that could not be created. Whatever was created before the
    /// failure is removed again.
    pub fn up(scenario: &'static Scenario) -> Result<Topology, NetnsError> {
        Self::up_with(scenario, &[], 0)
    }

    /// [`Topology::up`] with timed events on some paths, `events[k]` (if present) applying to
    /// both directions of path `k` with its times counted from now, and the loss sequences of
    /// run `loss_seed` ([`LinkConfig::of_path`]; [`Topology::up`] is run 0).
    ///
    /// # Errors
    /// As [`Topology::up`].
    pub fn up_with(
        scenario: &'static Scenario,
        events: &[Vec<TimedEvent>],
        loss_seed: u64,
    ) -> Result<Topology, NetnsError> {
        if scenario.paths.is_empty() || scenario.paths.len() > MAX_PATHS {
            return Err(NetnsError::link(format!(
                "{} has {} paths; the namespace topology supports 1 to {MAX_PATHS}",
                scenario.name,
                scenario.paths.len()
            )));
        }
        // Validate every link before touching the system.
        let mut links = Vec::with_capacity(scenario.paths.len());
        for (k, spec) in scenario.paths.iter().enumerate() {
            let (mut up, mut down) = LinkConfig::of_path(spec, loss_seed, k);
            let path_events = events.get(k).cloned().unwrap_or_default();
            up.events = path_events.clone();
            down.events = path_events;
            links.push((Link::new(up)?, Link::new(down)?));
        }
        let prefix = format!(
            "mq{}x{}",
            std::process::id(),
            NEXT_TESTBED.fetch_add(1, Ordering::Relaxed)
        );
        let last_tun = format!("{prefix}c{}", scenario.paths.len() - 1);
        validate_ifname(&last_tun)?;

        let mut topo = Topology {
            scenario,
            client_ns: format!("{prefix}c"),
            server_ns: format!("{prefix}s"),
            created: Vec::new(),
            shared: Arc::new(Shared::new()),
            paths: Vec::with_capacity(links.len()),
            threads: Vec::new(),
            devices: Vec::new(),
        };
        // From here an error returns early and `topo`'s Drop removes what was created.
        for ns in [topo.client_ns.clone(), topo.server_ns.clone()] {
            ip(&["netns", "add", &ns])?;
            topo.created.push(ns.clone());
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        let mut inputs = Vec::new();
        let mut outputs = Vec::new();
        for (k, (uplink, downlink)) in links.into_iter().enumerate() {
            let client = topo.device(&format!("{prefix}c{k}"), Side::Client, client_addr(k))?;
            let server = topo.device(&format!("{prefix}s{k}"), Side::Server, server_addr(k))?;
            let up = Arc::new(Direction::new(uplink, 0));
            let down = Arc::new(Direction::new(downlink, 0));
            topo.paths.push([Arc::clone(&up), Arc::clone(&down)]);
            inputs.push(Input {
                inlet: Box::new(Arc::clone(&client)),
                dir: Arc::clone(&up),
                accept: is_ipv4,
                last_sender: None,
            });
            inputs.push(Input {
                inlet: Box::new(Arc::clone(&server)),
                dir: Arc::clone(&down),
                accept: is_ipv4,
                last_sender: None,
            });
            outputs.push(Output {
                dir: up,
                outlet: Box::new(Device(server)),
            });
            outputs.push(Output {
                dir: down,
                outlet: Box::new(Device(client)),
            });
        }
        let name = format!("{prefix}pump");
        let handle = pump::spawn(name.clone(), Arc::clone(&topo.shared), inputs, outputs).map_err(
            |source| NetnsError::Io {
                context: format!("cannot start topology thread {name}"),
                source,
            },
        )?;
        topo.threads.push(handle);
        Ok(topo)
    }

    /// Creates the TUN device `name`, moves it into `side`'s namespace, gives it `addr`/24 and
    /// brings it up.
    fn device(
        &mut self,
        name: &str,
        side: Side,
        addr: Ipv4Addr,
    ) -> Result<Arc<TunDevice>, NetnsError> {
        let dev = Arc::new(TunDevice::create(name)?);
        dev.set_nonblocking().map_err(|source| NetnsError::Io {
            context: format!("cannot make TUN device {name} non-blocking"),
            source,
        })?;
        self.devices.push(Arc::clone(&dev));
        let ns = self.ns(side).to_owned();
        ip(&["link", "set", name, "netns", &ns])?;
        ip(&["-n", &ns, "addr", "add", &format!("{addr}/24"), "dev", name])?;
        ip(&["-n", &ns, "link", "set", name, "up"])?;
        Ok(dev)
    }

    /// The scenario it emulates.
    pub fn scenario(&self) -> &'static Scenario {
        self.scenario
    }

    /// The client namespace's name (for `ip netns exec`).
    pub fn client_ns(&self) -> &str {
        &self.client_ns
    }

    /// The server namespace's name.
    pub fn server_ns(&self) -> &str {
        &self.server_ns
    }

    /// The namespace of `side`.
    pub fn ns(&self, side: Side) -> &str {
        match side {
            Side::Client => &self.client_ns,
            Side::Server => &self.server_ns,
        }
    }

    /// A command running `args` (program first) in `side`'s namespace via `ip netns exec`.
    pub fn exec<I, S>(&self, side: Side, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", self.ns(side)]).args(args);
        command
    }

    /// When the links' clock started (timed events count from here).
    pub fn started(&self) -> std::time::Instant {
        self.shared.start
    }

    /// Counters of each path (uplink: client to server), in the scenario's order.
    pub fn stats(&self) -> Vec<PathStats> {
        self.paths
            .iter()
            .map(|[up, down]| PathStats {
                uplink: up.stats(),
                downlink: down.stats(),
            })
            .collect()
    }

    /// Stops the threads, closes the devices and deletes the namespaces.
    ///
    /// # Errors
    /// The first `ip netns del` that failed (the others are still attempted).
    pub fn down(mut self) -> Result<(), NetnsError> {
        self.shutdown()
    }

    fn shutdown(&mut self) -> Result<(), NetnsError> {
        self.shared
            .stop
            .store(true, std::sync::atomic::Ordering::SeqCst);
        for handle in self.threads.drain(..) {
            // A panicked thread has nothing left to clean up; joining is what matters.
            let _ = handle.join();
        }
        // The threads' clones are gone: this closes the devices, which deletes them.
        self.devices.clear();
        let mut first_error = None;
        for ns in self.created.drain(..).rev() {
            if let Err(e) = ip(&["netns", "del", &ns]) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        // Nothing to report to from Drop; `down` returns the error instead.
        let _ = self.shutdown();
    }
}

/// Only IPv4 packets go on the links; anything else the kernel sends out of a device (IPv6
/// neighbour discovery and the like) stays off them.
fn is_ipv4(packet: &[u8]) -> bool {
    packet.first().is_some_and(|b| b >> 4 == 4)
}

/// A device shared with the pump's inlets, as an outlet.
struct Device(Arc<TunDevice>);

impl Outlet for Device {
    fn deliver(&self, data: &[u8]) -> Delivery {
        self.0.deliver(data)
    }
}

/// The pid a testbed namespace name belongs to: `mq<pid>x<n>c` or `mq<pid>x<n>s` gives
/// `<pid>`; any other name gives `None`.
pub fn namespace_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("mq")?;
    let (pid, rest) = rest.split_once('x')?;
    let n = rest.strip_suffix('c').or_else(|| rest.strip_suffix('s'))?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if digits(pid) && digits(n) {
        pid.parse().ok()
    } else {
        None
    }
}

/// Whether process `pid` is running (a zombie, exited but not yet reaped, counts as dead).
pub fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state is the first field after the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Why the namespace testbed cannot run here, if it cannot: it needs root, `/dev/net/tun`, and
/// an `ip netns add` that works (tried with a throwaway namespace, removed at once).
pub fn unavailable() -> Option<String> {
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
        });
    if uid.as_deref() != Some("0") {
        return Some(format!(
            "it needs root (effective uid is {})",
            uid.as_deref().unwrap_or("unknown")
        ));
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("it needs TUN devices, and /dev/net/tun is missing".into());
    }
    static PROBES: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "mq{}avail{}",
        std::process::id(),
        PROBES.fetch_add(1, Ordering::Relaxed)
    );
    match ip(&["netns", "add", &name]) {
        Ok(()) => {
            let _ = ip(&["netns", "del", &name]);
            None
        }
        Err(e) => Some(format!("network namespaces are not available: {e}")),
    }
}

/// Every network namespace, as `ip netns list` names them.
///
/// # Errors
/// [`NetnsError::Io`] when `ip netns list` cannot run or fails.
pub fn namespaces() -> Result<Vec<String>, NetnsError> {
    let output = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map_err(|source| NetnsError::Io {
            context: "cannot run `ip netns list`".to_owned(),
            source,
        })?;
    if !output.status.success() {
        return Err(NetnsError::Io {
            context: format!("`ip netns list` failed ({})", output.status),
            source: io::Error::other(String::from_utf8_lossy(&output.stderr).trim().to_owned()),
        });
    }
    // Lines are `name` or `name (id: 3)`.
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect())
}

/// The testbed namespaces (`mq<pid>x<n>c`, `mq<pid>x<n>s`) whose owner process is gone: the
/// leftovers of a testbed whose owner was killed before it could tear down (a namespace
/// outlives its processes; the TUN devices die with their owner).
///
/// # Errors
/// [`NetnsError::Io`] when `ip netns list` cannot run or fails.
pub fn stale_namespaces() -> Result<Vec<String>, NetnsError> {
    Ok(namespaces()?
        .into_iter()
        .filter(|name| namespace_owner(name).is_some_and(|pid| !pid_alive(pid)))
        .collect())
}

/// Deletes the stale testbed namespaces ([`stale_namespaces`]) and returns their names.
///
/// # Errors
/// The first `ip netns del` that failed (the others are still attempted).
pub fn remove_stale_namespaces() -> Result<Vec<String>, NetnsError> {
    let mut removed = Vec::new();
    let mut first_error = None;
    for ns in stale_namespaces()? {
        match ip(&["netns", "del", &ns]) {
            Ok(()) => removed.push(ns),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(removed), Err)
}

/// Runs `ip args...`; a failure names the command and carries its stderr.
fn ip(args: &[&str]) -> Result<(), NetnsError> {
    let shown = format!("ip {}", args.join(" "));
    let output = Command::new("ip")
        .args(args)
        .output()
        .map_err(|source| NetnsError::Io {
            context: format!("cannot run `{shown}`"),
            source,
        })?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
    Err(NetnsError::Io {
        context: format!("`{shown}` failed ({})", output.status),
        source: io::Error::other(if stderr.is_empty() {
            "no output".to_owned()
        } else {
            stderr
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_per_path() {
        assert_eq!(client_addr(0), Ipv4Addr::new(10, 1, 0, 1));
        assert_eq!(server_addr(1), Ipv4Addr::new(10, 2, 0, 2));
    }

    #[test]
    fn namespace_owners() {
        assert_eq!(namespace_owner("mq123x0c"), Some(123));
        assert_eq!(namespace_owner("mq123x10s"), Some(123));
        assert_eq!(namespace_owner("mq123x0c1"), None);
        assert_eq!(namespace_owner("mq123avail0"), None);
        assert_eq!(namespace_owner("mqx0c"), None);
        assert_eq!(namespace_owner("other"), None);
    }

    #[test]
    fn this_process_is_alive() {
        assert!(pid_alive(std::process::id()));
        assert!(!pid_alive(u32::MAX));
    }

    #[test]
    fn failed_commands_name_themselves() {
        let e = ip(&["netns", "del", "mq-no-such-namespace-here"])
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("ip netns del mq-no-such-namespace-here"), "{e}");
    }
}
