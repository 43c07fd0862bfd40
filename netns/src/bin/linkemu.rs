//! `linkemu`: the link emulator from the command line, without root.
//!
//! ```text
//! linkemu check --scenario NAME                     loopback self-check: configured vs measured per path
//! linkemu relay --scenario NAME --server A[,B]      relay path k from 127.0.0.1:port_k to server k
//!               [--listen A[,B]] [--seconds N]      (default: ports picked, runs until killed)
//! linkemu probe-server [--bind ADDR]                the far end of `probe` (default 127.0.0.1:0)
//! linkemu probe --target ADDR --scenario NAME --path K [--bind ADDR]
//!                                                   check one path against a probe server at ADDR
//! ```

// A command-line tool: its output is stdout.
#![allow(clippy::print_stdout)]

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use mpquic_netns::error::NetnsError;
use mpquic_netns::loopback::{any_loopback_port, relay_paths, LoopbackTestbed};
use mpquic_netns::probe::{check_path, PathCheck, ProbeServer, Prober};
use mpquic_netns::relay::Relay;
use mpquic_sched::sim::Scenario;

#[derive(Debug, Parser)]
#[command(
    name = "linkemu",
    about = "mpquic's userspace link emulator, on loopback"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Relays every path of a scenario on loopback to probe servers and prints configured vs
    /// measured RTT, goodput and loss per path and direction; exits 1 if a check fails.
    Check {
        /// Scenario preset (pb-high, pb-high-lossy, ...).
        #[arg(long)]
        scenario: String,
    },
    /// Relays path k of a scenario from 127.0.0.1:port_k to server k until killed.
    Relay {
        /// Scenario preset.
        #[arg(long)]
        scenario: String,
        /// One server address per path.
        #[arg(long, value_delimiter = ',', required = true)]
        server: Vec<SocketAddr>,
        /// Listen addresses per path (default: 127.0.0.1 with a free port).
        #[arg(long, value_delimiter = ',')]
        listen: Vec<SocketAddr>,
        /// Stop after this many seconds.
        #[arg(long)]
        seconds: Option<u64>,
    },
    /// Runs the far end of `probe` until killed.
    ProbeServer {
        /// Address to bind.
        #[arg(long, default_value_t = any_loopback_port())]
        bind: SocketAddr,
    },
    /// Checks one path of a scenario against a probe server.
    Probe {
        /// The probe server (or the relay in front of it).
        #[arg(long)]
        target: SocketAddr,
        /// Scenario preset the path is configured from.
        #[arg(long)]
        scenario: String,
        /// Path number in the scenario.
        #[arg(long)]
        path: usize,
        /// Local address to probe from (selects the path in the namespace testbed).
        #[arg(long)]
        bind: Option<SocketAddr>,
    },
}

/// What went wrong, for the one line printed before exiting.
#[derive(Debug)]
enum Failure {
    Netns(NetnsError),
    Checks(usize),
}

impl From<NetnsError> for Failure {
    fn from(e: NetnsError) -> Self {
        Self::Netns(e)
    }
}

fn main() -> ExitCode {
    let outcome = match Cli::parse().command {
        Command::Check { scenario } => check(&scenario),
        Command::Relay {
            scenario,
            server,
            listen,
            seconds,
        } => relay(&scenario, &server, &listen, seconds),
        Command::ProbeServer { bind } => probe_server(bind),
        Command::Probe {
            target,
            scenario,
            path,
            bind,
        } => probe(target, &scenario, path, bind),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Netns(e)) => {
            eprintln!("linkemu: {e}");
            ExitCode::FAILURE
        }
        Err(Failure::Checks(n)) => {
            eprintln!("linkemu: {n} check(s) failed");
            ExitCode::FAILURE
        }
    }
}

fn scenario(name: &str) -> Result<&'static Scenario, NetnsError> {
    // The error's message lists the known names.
    Scenario::by_name(name).map_err(|_| NetnsError::UnknownScenario(name.to_owned()))
}

/// Prints a path's checks and counts its failures.
fn report(label: &str, check: &PathCheck) -> usize {
    println!("{label}:");
    println!("{}", check.to_string().trim_end());
    check.failures().len()
}

fn check(name: &str) -> Result<(), Failure> {
    let testbed = LoopbackTestbed::start(scenario(name)?)?;
    println!("{}", testbed.scenario());
    let mut failed = 0;
    for (k, check) in testbed.check()?.iter().enumerate() {
        let target = testbed.relay().local_addrs()[k];
        failed += report(&format!("path {k} (relay {target})"), check);
    }
    match failed {
        0 => Ok(()),
        n => Err(Failure::Checks(n)),
    }
}

fn relay(
    name: &str,
    servers: &[SocketAddr],
    listen: &[SocketAddr],
    seconds: Option<u64>,
) -> Result<(), Failure> {
    let scenario = scenario(name)?;
    let relay = Relay::start(relay_paths(scenario, listen, servers)?)?;
    println!("{scenario}");
    for (k, a) in relay.local_addrs().iter().enumerate() {
        println!("path {k}: {a} -> {}", servers[k]);
    }
    let until = seconds.map(|s| Instant::now() + Duration::from_secs(s));
    let mut last_report = Instant::now();
    while until.is_none_or(|t| Instant::now() < t) {
        std::thread::sleep(Duration::from_millis(200));
        if last_report.elapsed() >= Duration::from_secs(10) {
            last_report = Instant::now();
            for (k, s) in relay.stats().iter().enumerate() {
                println!("path {k}: {s:?}");
            }
        }
    }
    relay.stop();
    Ok(())
}

fn probe_server(bind: SocketAddr) -> Result<(), Failure> {
    let server = ProbeServer::start(bind)?;
    println!("probe server on {}", server.local_addr());
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn probe(
    target: SocketAddr,
    name: &str,
    path: usize,
    bind: Option<SocketAddr>,
) -> Result<(), Failure> {
    let scenario = scenario(name)?;
    let spec = scenario
        .paths
        .get(path)
        .ok_or_else(|| NetnsError::InvalidLink {
            reason: format!(
                "{} has paths 0..{}, not {path}",
                scenario.name,
                scenario.paths.len()
            ),
        })?;
    let prober = match bind {
        Some(local) => Prober::bind(local, target)?,
        None => Prober::new(target)?,
    };
    match report(
        &format!("path {path} ({target})"),
        &check_path(&prober, spec)?,
    ) {
        0 => Ok(()),
        n => Err(Failure::Checks(n)),
    }
}
