//! The namespace testbed as the bulk runs use it, and the processes they start in it.
//!
//! [`Bed::up`] brings a scenario's [`Topology`] up and adds what the peers need on top:
//! - in the client namespace, a routing table per path (`ip rule from 10.(k+1).0.1 table
//!   100+k`, default route out of path k's device), so that a packet from path k's address
//!   leaves on path k whatever its destination (tquic opens every path towards the server's
//!   first address, and only its source address says which path it is);
//! - Linux MPTCP: `ip mptcp limits set subflow N add_addr_accepted N` on both sides and a
//!   `subflow` endpoint on every further client address, bound to its device.
//!
//! Everything lives in the two namespaces, so it goes when they go: dropping the [`Bed`] (or
//! the [`Topology`] inside, on any error or signal) removes it all.

use std::io::Read;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mpquic_netns::relay::PathStats;
use mpquic_netns::topology::{client_addr, server_addr, Side, Topology};
use mpquic_scenario::events::TimedEvent;
use mpquic_scenario::Scenario;

use crate::testbed::stop_signal;

/// How often a wait looks at its process and for a stop signal.
const POLL: Duration = Duration::from_millis(20);

/// A scenario's testbed, ready for the peers, and a scratch directory of its own.
#[derive(Debug)]
pub struct Bed {
    topo: Topology,
    scratch: Scratch,
}

/// A directory removed when dropped.
#[derive(Debug)]
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Bed {
    /// Brings `scenario` up with per-path source routing and MPTCP endpoints in the client
    /// namespace; `scratch` is created now and removed on drop.
    pub fn up(scenario: &'static Scenario, scratch: PathBuf) -> Result<Bed, String> {
        Self::up_with(scenario, &[], 0, scratch)
    }

    /// [`Bed::up`] with timed events on some paths and the loss sequences of run `loss_seed`
    /// ([`Topology::up_with`]).
    pub fn up_with(
        scenario: &'static Scenario,
        events: &[Vec<TimedEvent>],
        loss_seed: u64,
        scratch: PathBuf,
    ) -> Result<Bed, String> {
        let topo = Topology::up_with(scenario, events, loss_seed).map_err(|e| e.to_string())?;
        // From here `topo`'s Drop removes everything on an early return.
        let (client, server) = (topo.client_ns().to_owned(), topo.server_ns().to_owned());
        let n = scenario.paths.len();
        for k in 0..n {
            let table = (100 + k).to_string();
            let dev = format!("{client}{k}");
            let from = client_addr(k).to_string();
            ip(&["-n", &client, "rule", "add", "from", &from, "table", &table])?;
            ip(&[
                "-n", &client, "route", "add", "default", "dev", &dev, "table", &table,
            ])?;
        }
        let limit = n.max(2).to_string();
        for ns in [&client, &server] {
            ip(&[
                "-n",
                ns,
                "mptcp",
                "limits",
                "set",
                "subflow",
                &limit,
                "add_addr_accepted",
                &limit,
            ])?;
        }
        for k in 1..n {
            let dev = format!("{client}{k}");
            let addr = client_addr(k).to_string();
            ip(&[
                "-n", &client, "mptcp", "endpoint", "add", &addr, "dev", &dev, "subflow",
            ])?;
        }
        std::fs::create_dir_all(&scratch)
            .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
        Ok(Bed {
            topo,
            scratch: Scratch(scratch),
        })
    }

    /// The scenario it emulates.
    pub fn scenario(&self) -> &'static Scenario {
        self.topo.scenario()
    }

    /// A command running `program args...` in `side`'s namespace.
    pub fn exec(&self, side: Side, program: &Path) -> Command {
        self.topo.exec(side, [program.as_os_str()])
    }

    /// When the links' clock started (timed events count from here).
    pub fn started(&self) -> Instant {
        self.topo.started()
    }

    /// The per-path counters of the emulated links.
    pub fn stats(&self) -> Vec<PathStats> {
        self.topo.stats()
    }

    /// This testbed's scratch directory (certificates, files served, downloads).
    pub fn scratch(&self) -> &Path {
        &self.scratch.0
    }

    /// The client namespace's name.
    pub fn client_ns(&self) -> &str {
        self.topo.client_ns()
    }

    /// Removes the scratch directory and the testbed, reporting a failed teardown.
    pub fn down(self) -> Result<(), String> {
        let Bed { topo, scratch } = self;
        drop(scratch);
        topo.down().map_err(|e| e.to_string())
    }
}

/// Path k's client and server addresses.
pub fn addrs(k: usize) -> (Ipv4Addr, Ipv4Addr) {
    (client_addr(k), server_addr(k))
}

/// Runs `ip args...`; a failure names the command and carries its stderr.
fn ip(args: &[&str]) -> Result<(), String> {
    let output = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// A process this command started, with its stdout and stderr collected as they come; it is
/// killed (by its own pid) and reaped when dropped.
pub struct Proc {
    name: String,
    child: Child,
    stdout: Arc<Mutex<String>>,
    stderr: Arc<Mutex<String>>,
    readers: Vec<JoinHandle<()>>,
}

fn collect<R: Read + Send + 'static>(mut from: R, into: Arc<Mutex<String>>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = from.read(&mut buf) {
            if n == 0 {
                break;
            }
            if let Ok(mut text) = into.lock() {
                text.push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        }
    })
}

impl Proc {
    /// Starts `command` with piped output; `name` is how errors call it.
    pub fn spawn(mut command: Command, name: &str) -> Result<Proc, String> {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {name}: {e}"))?;
        let stdout = Arc::new(Mutex::new(String::new()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut readers = Vec::new();
        if let Some(out) = child.stdout.take() {
            readers.push(collect(out, Arc::clone(&stdout)));
        }
        if let Some(err) = child.stderr.take() {
            readers.push(collect(err, Arc::clone(&stderr)));
        }
        Ok(Proc {
            name: name.to_owned(),
            child,
            stdout,
            stderr,
            readers,
        })
    }

    fn text(&self) -> (String, String) {
        let get = |m: &Arc<Mutex<String>>| m.lock().map(|t| t.clone()).unwrap_or_default();
        (get(&self.stdout), get(&self.stderr))
    }

    /// The last lines of its stderr, for an error message.
    fn tail(&self) -> String {
        let (out, err) = self.text();
        let text = if err.trim().is_empty() { out } else { err };
        let lines: Vec<&str> = text.trim().lines().collect();
        lines[lines.len().saturating_sub(6)..].join(" | ")
    }

    /// Waits until `needle` shows in its stdout or stderr (a server saying it listens).
    pub fn wait_for(&mut self, needle: &str, within: Duration) -> Result<(), String> {
        let deadline = Instant::now() + within;
        loop {
            let (out, err) = self.text();
            if out.contains(needle) || err.contains(needle) {
                return Ok(());
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!(
                    "{} exited ({status}) before it was ready: {}",
                    self.name,
                    self.tail()
                ));
            }
            if stop_signal().is_some() {
                return Err(format!("{}: stopped by a signal", self.name));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "{} not ready after {within:?}: {}",
                    self.name,
                    self.tail()
                ));
            }
            std::thread::sleep(POLL);
        }
    }

    /// Waits for it to exit (killing it after `within` or on a stop signal) and returns its
    /// status and output; a non-zero exit is an error that quotes its stderr.
    pub fn finish(mut self, within: Duration) -> Result<(String, String), String> {
        let status = self.wait(within)?;
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        let (out, err) = self.text();
        if status.success() {
            Ok((out, err))
        } else {
            Err(format!("{} failed ({status}): {}", self.name, self.tail()))
        }
    }

    fn wait(&mut self, within: Duration) -> Result<ExitStatus, String> {
        let deadline = Instant::now() + within;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Ok(status),
                Ok(None) if stop_signal().is_some() => {
                    return Err(format!("{}: stopped by a signal", self.name))
                }
                Ok(None) if Instant::now() >= deadline => {
                    return Err(format!(
                        "{} still running after {within:?} (killed): {}",
                        self.name,
                        self.tail()
                    ))
                }
                Ok(None) => std::thread::sleep(POLL),
                Err(e) => return Err(format!("waiting for {}: {e}", self.name)),
            }
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}
