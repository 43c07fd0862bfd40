//! `cargo xtask testbed up|down|exec|check`: the namespace testbed of `mpquic-netns` from the
//! command line.
//!
//! - `up --scenario NAME [--paths N] [--seconds S]` (root): brings the topology up, prints its
//!   namespaces and addresses, writes the state file (`target/testbed/current.json`, or
//!   `$MPQUIC_TESTBED_STATE`) and forwards packets in the foreground until the state file is
//!   removed (that is what `down` does), `--seconds` have passed, or it gets SIGINT (Ctrl-C),
//!   SIGTERM or SIGHUP. On each of these it tears everything down and removes the state file
//!   (after a signal it exits with 128 + the signal's number, as a shell would report it); only
//!   after `kill -9` do the namespaces outlive it, and `down` removes them.
//! - `down`: removes the state file, waits (up to 5 s) for the running `up` to tear down, then
//!   deletes every testbed namespace whose owner process is gone. It kills nothing.
//! - `exec client|server -- CMD...`: runs CMD in that namespace of the running testbed.
//! - `cost [--mode netns|loopback] [--paths 2] [--mbit 50] [--seconds 10]`: the emulator's own
//!   CPU cost while it forwards `--paths` saturated links of `--mbit` Mbit/s each (10 ms one
//!   way): CPU seconds of this process (getrusage; the links run in it, the load generators
//!   `linkemu blast` and `linkemu probe-server` in children) over a fixed window, as a share
//!   of one core.
//! - `check --scenario NAME [--mode netns|loopback]`: measures every path (RTT, goodput and
//!   loss per direction) against its configuration; exit code 1 when a check fails. Ctrl-C
//!   stops it, and its namespaces go with it.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command as Process, ExitCode, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clap::{Args, Subcommand, ValueEnum};
use mpquic_netns::loopback::{relay_paths, LoopbackTestbed};
use mpquic_netns::relay::{PathStats, Relay};
use mpquic_netns::topology::{
    self, client_addr, pid_alive, remove_stale_namespaces, server_addr, Side, Topology,
};
use mpquic_scenario::{PathSpec, Scenario};
use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::signal::{SigSet, Signal};

use crate::{bins, Failure};

/// Overrides the state file's location (the tests use their own).
pub const STATE_ENV: &str = "MPQUIC_TESTBED_STATE";
/// How often `up` looks for the stop request.
const POLL: Duration = Duration::from_millis(200);
/// How long `down` waits for a running `up` to tear down.
const DOWN_WAIT: Duration = Duration::from_secs(5);
/// The probe servers' port (each path has its own address in the server namespace).
const PROBE_PORT: u16 = 5201;
/// Longest a probe server may take to say it is listening.
const SERVER_READY: Duration = Duration::from_secs(10);
/// Longest one `linkemu probe` (one path, both directions) may run.
const PROBE_TIME: Duration = Duration::from_secs(60);

/// The signal that asked this process to stop (0: none yet); see [`catch_signals`].
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Turns SIGINT (Ctrl-C), SIGTERM and SIGHUP into a stop request ([`stop_signal`]) instead of
/// an exit that would leave the namespaces behind. They are blocked in this thread, and so in
/// every thread spawned after it (call this before any), and a thread of their own takes them
/// with `sigwait`: no handler runs in signal context. Children started with
/// `std::process::Command` get an empty mask again, so Ctrl-C still reaches them.
pub(crate) fn catch_signals() -> Result<(), Failure> {
    let mut set = SigSet::empty();
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
        set.add(signal);
    }
    set.thread_block()
        .map_err(|e| Failure::Testbed(format!("cannot block SIGINT/SIGTERM/SIGHUP: {e}")))?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            while let Ok(signal) = set.wait() {
                if STOP_SIGNAL.swap(signal as i32, Ordering::SeqCst) == 0 {
                    eprintln!("{signal}: stopping and tearing the testbed down");
                }
            }
        })
        .map_err(|e| Failure::Testbed(format!("cannot start the signal thread: {e}")))?;
    Ok(())
}

/// The signal that asked this process to stop, once one came.
pub(crate) fn stop_signal() -> Option<i32> {
    match STOP_SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

/// The exit code of a command stopped by `signal` (after its teardown): 128 + its number, as a
/// shell reports a process killed by it.
pub(crate) fn interrupted(signal: i32) -> ExitCode {
    ExitCode::from(u8::try_from(128 + signal).unwrap_or(u8::MAX))
}

/// The options of `cargo xtask testbed`.
#[derive(Debug, Args)]
pub struct TestbedArgs {
    #[command(subcommand)]
    command: TestbedCommand,
}

#[derive(Debug, Subcommand)]
enum TestbedCommand {
    /// Brings a scenario up between two namespaces and forwards packets until `testbed down`
    /// (root).
    Up {
        /// Scenario preset, e.g. pb-high.
        #[arg(long)]
        scenario: String,
        /// Use only the scenario's first N paths.
        #[arg(long)]
        paths: Option<usize>,
        /// Stop by itself after this many seconds.
        #[arg(long)]
        seconds: Option<u64>,
    },
    /// Stops the running testbed and removes what killed ones left behind.
    Down,
    /// Runs a command in the client or server namespace of the running testbed.
    Exec {
        /// Which namespace.
        side: SideArg,
        /// The command and its arguments (after `--`).
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Measures the emulator's own CPU cost while it forwards saturated links.
    Cost {
        /// netns (root: TUN devices between two namespaces) or loopback (UDP relay).
        #[arg(long, value_enum, default_value_t = Mode::Netns)]
        mode: Mode,
        /// How many paths, each saturated in the client-to-server direction.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=16))]
        paths: u64,
        /// Each path's rate in Mbit/s.
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=1000))]
        mbit: u64,
        /// The measured window, after one second of warm-up.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=600))]
        seconds: u64,
    },
    /// Measures every path of a scenario against its configuration and prints both.
    Check {
        /// Scenario preset, e.g. pb-high.
        #[arg(long)]
        scenario: String,
        /// Use only the scenario's first N paths.
        #[arg(long)]
        paths: Option<usize>,
        /// netns (root: two namespaces, real kernels) or loopback (UDP relay, no root).
        #[arg(long, value_enum, default_value_t = Mode::Netns)]
        mode: Mode,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum SideArg {
    Client,
    Server,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Mode {
    Netns,
    Loopback,
}

/// Runs the command; `Ok` carries the exit code (`exec` passes its command's on).
pub fn run(args: &TestbedArgs) -> Result<ExitCode, Failure> {
    match &args.command {
        TestbedCommand::Up {
            scenario,
            paths,
            seconds,
        } => up(scenario_of(scenario, *paths)?, *seconds),
        TestbedCommand::Down => down().map(|()| ExitCode::SUCCESS),
        TestbedCommand::Exec { side, command } => exec(*side, command),
        TestbedCommand::Check {
            scenario,
            paths,
            mode,
        } => check(scenario_of(scenario, *paths)?, *mode),
        TestbedCommand::Cost {
            mode,
            paths,
            mbit,
            seconds,
        } => cost(*mode, *paths, *mbit, *seconds),
    }
}

/// The preset `name`, cut to its first `paths` paths.
fn scenario_of(name: &str, paths: Option<usize>) -> Result<&'static Scenario, Failure> {
    let scenario = Scenario::by_name(name).map_err(|e| Failure::Usage(e.to_string()))?;
    match paths {
        None => Ok(scenario),
        Some(n) if n == scenario.paths.len() => Ok(scenario),
        Some(n) if (1..scenario.paths.len()).contains(&n) => {
            // One small struct per command; the paths are the preset's own.
            Ok(Box::leak(Box::new(Scenario {
                paths: &scenario.paths[..n],
                ..*scenario
            })))
        }
        Some(n) => Err(Failure::Usage(format!(
            "--paths {n}: {} has {} paths, so 1 to {}",
            scenario.name,
            scenario.paths.len(),
            scenario.paths.len()
        ))),
    }
}

/// Where the running testbed is described.
fn state_path() -> PathBuf {
    if let Some(path) = std::env::var_os(STATE_ENV) {
        return PathBuf::from(path);
    }
    crate::workspace_root()
        .join("target")
        .join("testbed")
        .join("current.json")
}

/// What the state file holds.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct State {
    scenario: String,
    pid: u32,
    client_ns: String,
    server_ns: String,
    paths: Vec<(String, String)>,
}

fn read_state(path: &Path) -> Result<Option<State>, Failure> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map(Some).map_err(|e| {
            Failure::Testbed(format!(
                "state file {} is not a testbed description ({e}); remove it by hand",
                path.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Failure::Testbed(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

fn require_netns() -> Result<(), Failure> {
    topology::unavailable().map_or(Ok(()), |why| {
        Err(Failure::Testbed(format!(
            "the namespace testbed cannot run here: {why}; run it as root, or use \
             `cargo xtask testbed check --mode loopback`"
        )))
    })
}

fn netns_error(e: mpquic_netns::error::NetnsError) -> Failure {
    Failure::Testbed(e.to_string())
}

/// Prints the topology: namespaces and per-path addresses.
fn describe(topo: &Topology) -> Vec<(String, String)> {
    println!("{}", topo.scenario());
    println!("client namespace {}", topo.client_ns());
    println!("server namespace {}", topo.server_ns());
    (0..topo.scenario().paths.len())
        .map(|k| {
            let (c, s) = (client_addr(k).to_string(), server_addr(k).to_string());
            println!("path {k}: client {c} <-> server {s}");
            (c, s)
        })
        .collect()
}

fn up(scenario: &'static Scenario, seconds: Option<u64>) -> Result<ExitCode, Failure> {
    require_netns()?;
    catch_signals()?;
    let path = state_path();
    if let Some(state) = read_state(&path)? {
        if state.pid != std::process::id() && pid_alive(state.pid) {
            return Err(Failure::Testbed(format!(
                "a testbed is already up ({}, pid {}, namespaces {} and {}); stop it with \
                 `cargo xtask testbed down`",
                state.scenario, state.pid, state.client_ns, state.server_ns
            )));
        }
        eprintln!(
            "note: replacing the state file of pid {}, which is gone (`testbed down` removes \
             its namespaces)",
            state.pid
        );
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::Testbed(format!("cannot create {}: {e}", dir.display())))?;
    }
    // From here a failure drops `topo`, which tears it down.
    let topo = Topology::up(scenario).map_err(netns_error)?;
    let paths = describe(&topo);
    let state = State {
        scenario: scenario.name.to_owned(),
        pid: std::process::id(),
        client_ns: topo.client_ns().to_owned(),
        server_ns: topo.server_ns().to_owned(),
        paths,
    };
    let text = serde_json::to_string_pretty(&state)
        .map_err(|e| Failure::Testbed(format!("cannot write the state file: {e}")))?;
    // Written whole under a temporary name and renamed, so readers never see half of it.
    let tmp = path.with_extension(format!("json.{}", std::process::id()));
    std::fs::write(&tmp, text + "\n")
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            Failure::Testbed(format!("cannot write {}: {e}", path.display()))
        })?;
    println!("state file {}", path.display());
    println!("forwarding; stop with `cargo xtask testbed down`");

    let until = seconds.map(|s| Instant::now() + Duration::from_secs(s));
    loop {
        if let Some(signal) = stop_signal() {
            println!("stopped by signal {signal}");
            break;
        }
        std::thread::sleep(POLL);
        let ours = matches!(read_state(&path), Ok(Some(s)) if s.pid == state.pid);
        if !ours {
            println!("stop requested");
            break;
        }
        if until.is_some_and(|t| Instant::now() >= t) {
            break;
        }
    }
    for (k, s) in topo.stats().iter().enumerate() {
        let (u, d) = (&s.uplink, &s.downlink);
        println!(
            "path {k}: uplink {} of {} packets forwarded, downlink {} of {}",
            u.forwarded, u.received, d.forwarded, d.received
        );
    }
    let outcome = topo.down().map_err(netns_error);
    // Only our own state file: `down` may already have removed it, or another `up` replaced it.
    if matches!(read_state(&path), Ok(Some(s)) if s.pid == state.pid) {
        let _ = std::fs::remove_file(&path);
    }
    outcome?;
    println!("down: {} and {} removed", state.client_ns, state.server_ns);
    Ok(stop_signal().map_or(ExitCode::SUCCESS, interrupted))
}

fn down() -> Result<(), Failure> {
    require_netns()?;
    let path = state_path();
    match read_state(&path) {
        Ok(Some(state)) => {
            std::fs::remove_file(&path)
                .map_err(|e| Failure::Testbed(format!("cannot remove {}: {e}", path.display())))?;
            println!("removed {}", path.display());
            if pid_alive(state.pid) {
                println!("waiting for the testbed of pid {} to stop", state.pid);
                let deadline = Instant::now() + DOWN_WAIT;
                while pid_alive(state.pid) && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(50));
                }
                if pid_alive(state.pid) {
                    return Err(Failure::Testbed(format!(
                        "the testbed of pid {} did not stop within {DOWN_WAIT:?}; it still \
                         owns {} and {}",
                        state.pid, state.client_ns, state.server_ns
                    )));
                }
                println!("pid {} stopped and tore its testbed down", state.pid);
            }
        }
        Ok(None) => println!("no testbed is up ({} does not exist)", path.display()),
        Err(e) => {
            // Unreadable: remove it anyway, it describes nothing we can stop.
            eprintln!("warning: {e}; removing it");
            let _ = std::fs::remove_file(&path);
        }
    }
    let removed = remove_stale_namespaces().map_err(netns_error)?;
    if removed.is_empty() {
        println!("no stale namespaces");
    }
    for ns in removed {
        println!("removed stale namespace {ns}");
    }
    Ok(())
}

fn exec(side: SideArg, command: &[String]) -> Result<ExitCode, Failure> {
    let path = state_path();
    let state = match read_state(&path)? {
        Some(state) if pid_alive(state.pid) => state,
        _ => {
            return Err(Failure::Testbed(format!(
                "no testbed is up ({} is missing or its pid is gone); start one with \
                 `cargo xtask testbed up --scenario NAME`",
                path.display()
            )))
        }
    };
    let ns = match side {
        SideArg::Client => &state.client_ns,
        SideArg::Server => &state.server_ns,
    };
    let status = Process::new("ip")
        .args(["netns", "exec", ns])
        .args(command)
        .status()
        .map_err(|e| Failure::Testbed(format!("cannot run `ip netns exec {ns}`: {e}")))?;
    Ok(match status.code() {
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        // Killed by a signal: the shell's convention would be 128 + signal; 1 is enough here.
        None => ExitCode::FAILURE,
    })
}

fn check(scenario: &'static Scenario, mode: Mode) -> Result<ExitCode, Failure> {
    let failed = match mode {
        Mode::Loopback => check_loopback(scenario)?,
        Mode::Netns => match (check_netns(scenario), stop_signal()) {
            (Ok(failed), None) => failed,
            // Stopped by a signal: the topology is down already (dropped on the way out).
            (outcome, Some(signal)) => {
                if let Err(e) = outcome {
                    eprintln!("error: {e}");
                }
                return Ok(interrupted(signal));
            }
            (Err(e), None) => return Err(e),
        },
    };
    if failed == 0 {
        println!("all checks passed");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("{failed} failure(s)");
        Ok(ExitCode::FAILURE)
    }
}

fn check_loopback(scenario: &'static Scenario) -> Result<usize, Failure> {
    let testbed = LoopbackTestbed::start(scenario).map_err(netns_error)?;
    println!("{scenario} (loopback relay)");
    let mut failed = 0;
    for (k, check) in testbed.check().map_err(netns_error)?.iter().enumerate() {
        let target = testbed.relay().local_addrs()[k];
        println!("path {k} (relay {target}):");
        println!("{}", check.to_string().trim_end());
        failed += check.failures().len();
    }
    Ok(failed)
}

/// Builds `linkemu` in the lab's own profile and returns its path.
fn linkemu() -> Result<PathBuf, Failure> {
    bins::build("linkemu", bins::Profile::current()).map_err(Failure::Testbed)
}

/// A child process this command started; killed (by its pid) and reaped when dropped.
struct Started(Child);

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `linkemu probe-server` on path `k` in the server namespace and waits until it
/// listens.
fn probe_server(topo: &Topology, linkemu: &Path, k: usize) -> Result<Started, Failure> {
    let bind = format!("{}:{PROBE_PORT}", server_addr(k));
    let command = topo.exec(Side::Server, [linkemu.as_os_str()]);
    start_probe_server(command, &bind).map(|(child, _)| child)
}

/// Starts `command` (a `linkemu` to which this adds `probe-server --bind BIND`) and waits
/// until it says where it listens.
fn start_probe_server(
    mut command: Process,
    bind: &str,
) -> Result<(Started, std::net::SocketAddr), Failure> {
    command.args(["probe-server", "--bind", bind]);
    let mut child = Started(
        command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Failure::Testbed(format!("cannot start the probe server: {e}")))?,
    );
    let stdout = child.0.stdout.take().expect("stdout is piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let deadline = Instant::now() + SERVER_READY;
    let ready = loop {
        match rx.recv_timeout(POLL) {
            Err(mpsc::RecvTimeoutError::Timeout)
                if Instant::now() < deadline && stop_signal().is_none() => {}
            other => break other,
        }
    };
    let listening = |line: &str| {
        line.trim()
            .strip_prefix("probe server on ")
            .and_then(|a| a.parse().ok())
    };
    match ready {
        Ok(line) if listening(&line).is_some() => {
            Ok((child, listening(&line).expect("checked just above")))
        }
        other => {
            let _ = child.0.kill();
            let _ = child.0.wait();
            let mut stderr = String::new();
            if let Some(mut e) = child.0.stderr.take() {
                let _ = e.read_to_string(&mut stderr);
            }
            Err(Failure::Testbed(format!(
                "probe server on {bind} did not start ({other:?}): {}",
                stderr.trim()
            )))
        }
    }
}

/// Runs `linkemu probe` for path `k` from the client namespace, printing its output; returns
/// whether it passed.
fn probe(topo: &Topology, linkemu: &Path, k: usize) -> Result<bool, Failure> {
    let target = format!("{}:{PROBE_PORT}", server_addr(k));
    let bind = format!("{}:0", client_addr(k));
    let path = k.to_string();
    let mut command = topo.exec(Side::Client, [linkemu.as_os_str()]);
    command.args([
        "probe",
        "--target",
        &target,
        "--bind",
        &bind,
        "--scenario",
        topo.scenario().name,
        "--path",
        &path,
    ]);
    // Its output goes straight to ours: the per-direction lines are the report.
    let mut child = Started(
        command
            .spawn()
            .map_err(|e| Failure::Testbed(format!("cannot start the probe: {e}")))?,
    );
    let deadline = Instant::now() + PROBE_TIME;
    loop {
        match child.0.try_wait() {
            Ok(Some(status)) => return Ok(status.success()),
            Ok(None) if Instant::now() >= deadline => {
                return Err(Failure::Testbed(format!(
                    "linkemu probe on path {k} still running after {PROBE_TIME:?}"
                )))
            }
            Ok(None) if stop_signal().is_some() => {
                return Err(Failure::Testbed(format!(
                    "linkemu probe on path {k} stopped"
                )))
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(Failure::Testbed(format!("waiting for the probe: {e}"))),
        }
    }
}

fn check_netns(scenario: &'static Scenario) -> Result<usize, Failure> {
    require_netns()?;
    catch_signals()?;
    let linkemu = linkemu()?;
    let topo = Topology::up(scenario).map_err(netns_error)?;
    describe(&topo);
    let mut failed = 0;
    for k in 0..scenario.paths.len() {
        if stop_signal().is_some() {
            break;
        }
        let server = probe_server(&topo, &linkemu, k)?;
        let passed = probe(&topo, &linkemu, k)?;
        drop(server);
        if !passed {
            failed += 1;
        }
    }
    topo.down().map_err(netns_error)?;
    Ok(failed)
}

/// The emulator `cost` measures, running in this process.
enum Emulator {
    Netns(Topology),
    Loopback(Relay),
}

/// CPU time (user + system) of this whole process so far.
fn own_cpu_time() -> Result<Duration, Failure> {
    let usage = getrusage(UsageWho::RUSAGE_SELF)
        .map_err(|e| Failure::Testbed(format!("getrusage: {e}")))?;
    let micros = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(u64::try_from(t.tv_sec()).unwrap_or(0))
            + Duration::from_micros(u64::try_from(t.tv_usec()).unwrap_or(0))
    };
    Ok(micros(usage.user_time()) + micros(usage.system_time()))
}

/// What forwarded counters and CPU time looked like at one moment.
struct Sample {
    at: Instant,
    cpu: Duration,
    bytes: Vec<u64>,
}

fn sample(stats: &[PathStats]) -> Result<Sample, Failure> {
    Ok(Sample {
        at: Instant::now(),
        cpu: own_cpu_time()?,
        bytes: stats.iter().map(|s| s.uplink.forwarded_bytes).collect(),
    })
}

fn cost(mode: Mode, paths: u64, mbit: u64, seconds: u64) -> Result<ExitCode, Failure> {
    if mode == Mode::Netns {
        require_netns()?;
    }
    catch_signals()?;
    let linkemu = linkemu()?;
    let spec = PathSpec::new(mbit * 1_000_000, Duration::from_millis(10));
    let specs: &'static [PathSpec] = Box::leak(vec![spec; paths as usize].into_boxed_slice());
    let scenario: &'static Scenario = Box::leak(Box::new(Scenario {
        name: "cost",
        paths: specs,
        source: "cargo xtask testbed cost",
    }));
    // The load runs one second of warm-up, the window, and a second of slack.
    let blast_seconds = (seconds + 2).to_string();
    let rate = (mbit * 1_000_000).to_string();
    let blast = |mut command: Process, target: String, bind: Option<String>| {
        command.args(["blast", "--target", &target, "--rate-bps", &rate]);
        command.args(["--seconds", &blast_seconds]);
        if let Some(bind) = bind {
            command.args(["--bind", &bind]);
        }
        command
            .stdout(Stdio::null())
            .spawn()
            .map(Started)
            .map_err(|e| Failure::Testbed(format!("cannot start linkemu blast: {e}")))
    };
    let mut children = Vec::new();
    // The emulator runs in this process, the load in children.
    let emulator = match mode {
        Mode::Netns => {
            let topo = Topology::up(scenario).map_err(netns_error)?;
            for k in 0..scenario.paths.len() {
                children.push(probe_server(&topo, &linkemu, k)?);
            }
            for k in 0..scenario.paths.len() {
                let target = format!("{}:{PROBE_PORT}", server_addr(k));
                let bind = format!("{}:0", client_addr(k));
                let command = topo.exec(Side::Client, [linkemu.as_os_str()]);
                children.push(blast(command, target, Some(bind))?);
            }
            Emulator::Netns(topo)
        }
        Mode::Loopback => {
            let mut servers = Vec::new();
            for _ in 0..scenario.paths.len() {
                let (child, addr) = start_probe_server(Process::new(&linkemu), "127.0.0.1:0")?;
                children.push(child);
                servers.push(addr);
            }
            let relay = Relay::start(relay_paths(scenario, &[], &servers, 0).map_err(netns_error)?)
                .map_err(netns_error)?;
            for addr in relay.local_addrs() {
                children.push(blast(Process::new(&linkemu), addr.to_string(), None)?);
            }
            Emulator::Loopback(relay)
        }
    };
    let stats = || match &emulator {
        Emulator::Netns(topo) => topo.stats(),
        Emulator::Loopback(relay) => relay.stats(),
    };
    let wait = |d: Duration| {
        let until = Instant::now() + d;
        while Instant::now() < until && stop_signal().is_none() {
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait(Duration::from_secs(1));
    let first = sample(&stats())?;
    wait(Duration::from_secs(seconds));
    let last = sample(&stats())?;
    drop(children);
    if let Some(signal) = stop_signal() {
        return Ok(interrupted(signal));
    }
    let wall = (last.at - first.at).as_secs_f64();
    let what = match mode {
        Mode::Netns => "IP packets, TUN to TUN",
        Mode::Loopback => "UDP payload, relay",
    };
    for (k, (a, b)) in first.bytes.iter().zip(&last.bytes).enumerate() {
        println!(
            "path {k}: forwarded {:.2} Mbit/s ({what}) of {mbit} Mbit/s",
            (b - a) as f64 * 8.0 / wall / 1e6
        );
    }
    let cpu = (last.cpu - first.cpu).as_secs_f64();
    println!(
        "emulator cpu: {cpu:.3} s over {wall:.3} s = {:.1}% of one core ({mode:?}, {paths} x {mbit} Mbit/s)",
        cpu / wall * 100.0
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_cut_the_preset() {
        let s = scenario_of("pb-high", Some(1)).unwrap();
        assert_eq!(s.paths.len(), 1);
        assert_eq!(s.name, "pb-high");
        assert!(scenario_of("pb-high", Some(0)).is_err());
        assert!(scenario_of("pb-high", Some(3)).is_err());
        let e = scenario_of("nope", None).err().unwrap().to_string();
        assert!(e.contains("pb-high"), "{e}");
    }
}
