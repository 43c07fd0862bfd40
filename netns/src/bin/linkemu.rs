//! `linkemu`: the link emulator from the command line, without root.
//!
//! ```text
//! linkemu check --scenario NAME                 loopback self-check: configured vs measured per path
//! linkemu relay --scenario NAME --server A[,B]  relay path k of NAME from 127.0.0.1:port_k to server k
//!               [--listen A[,B]] [--seconds N]  (default: ports picked, runs until killed)
//! linkemu probe-server [--bind ADDR]            the far end of `probe` (default 127.0.0.1:0)
//! linkemu probe --target ADDR --scenario NAME --path K [--bind ADDR]
//!                                               check one path against a probe server at ADDR
//! ```
//!
//! No argument-parsing dependency: the grammar is four subcommands of `--flag value` pairs.

use std::collections::HashMap;
use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use mpquic_netns::error::NetnsError;
use mpquic_netns::link::LinkConfig;
use mpquic_netns::probe::{check_path, ProbeServer, Prober};
use mpquic_netns::relay::{Relay, RelayPath};
use mpquic_sched::sim::Scenario;

const USAGE: &str = "usage:
  linkemu check --scenario NAME
  linkemu relay --scenario NAME --server ADDR[,ADDR...] [--listen ADDR[,ADDR...]] [--seconds N]
  linkemu probe-server [--bind ADDR]
  linkemu probe --target ADDR --scenario NAME --path K [--bind ADDR]";

/// What went wrong, for the one line printed before exiting.
#[derive(Debug)]
enum CliError {
    Usage(String),
    Netns(NetnsError),
    Failed(usize),
}

impl From<NetnsError> for CliError {
    fn from(e: NetnsError) -> Self {
        CliError::Netns(e)
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(CliError::Usage(msg)) => {
            eprintln!("linkemu: {msg}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(CliError::Netns(e)) => {
            // NetnsError's message already carries its cause.
            eprintln!("linkemu: {e}");
            ExitCode::FAILURE
        }
        Err(CliError::Failed(n)) => {
            eprintln!("linkemu: {n} check(s) failed");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<(), CliError> {
    let Some((command, rest)) = args.split_first() else {
        return Err(CliError::Usage("no command".into()));
    };
    let flags = parse_flags(rest)?;
    match command.as_str() {
        "check" => check(&flags),
        "relay" => relay(&flags),
        "probe-server" => probe_server(&flags),
        "probe" => probe(&flags),
        "-h" | "--help" | "help" => {
            say(USAGE);
            Ok(())
        }
        other => Err(CliError::Usage(format!("unknown command {other:?}"))),
    }
}

fn say(line: &str) {
    let _ = writeln!(std::io::stdout(), "{line}");
}

fn parse_flags(args: &[String]) -> Result<HashMap<String, String>, CliError> {
    let mut out = HashMap::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let Some(name) = flag.strip_prefix("--") else {
            return Err(CliError::Usage(format!("expected --flag, got {flag:?}")));
        };
        let Some(value) = it.next() else {
            return Err(CliError::Usage(format!("--{name} needs a value")));
        };
        out.insert(name.to_owned(), value.clone());
    }
    Ok(out)
}

fn scenario(flags: &HashMap<String, String>) -> Result<&'static Scenario, CliError> {
    let name = flags
        .get("scenario")
        .ok_or_else(|| CliError::Usage("--scenario is required".into()))?;
    // The error's message lists the known names.
    Scenario::by_name(name).map_err(|_| CliError::Netns(NetnsError::UnknownScenario(name.clone())))
}

fn addr(text: &str, what: &str) -> Result<SocketAddr, CliError> {
    text.parse().map_err(|_| {
        CliError::Usage(format!(
            "{what}: {text:?} is not an address like 127.0.0.1:4433"
        ))
    })
}

fn addrs(flags: &HashMap<String, String>, name: &str) -> Result<Option<Vec<SocketAddr>>, CliError> {
    flags
        .get(name)
        .map(|list| list.split(',').map(|a| addr(a, name)).collect())
        .transpose()
}

fn loopback_any() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 0))
}

/// Relay paths for `scenario`, seeded per path and direction so runs are reproducible.
fn relay_paths(
    scenario: &Scenario,
    listen: &[SocketAddr],
    servers: &[SocketAddr],
) -> Vec<RelayPath> {
    scenario
        .paths
        .iter()
        .enumerate()
        .map(|(k, spec)| RelayPath {
            listen: listen.get(k).copied().unwrap_or_else(loopback_any),
            server: servers[k],
            uplink: LinkConfig::from_spec(spec, 2 * k as u64 + 1),
            downlink: LinkConfig::from_spec(spec, 2 * k as u64 + 2),
        })
        .collect()
}

fn check(flags: &HashMap<String, String>) -> Result<(), CliError> {
    let scenario = scenario(flags)?;
    say(&format!("{scenario}"));
    let servers = scenario
        .paths
        .iter()
        .map(|_| ProbeServer::start(loopback_any()))
        .collect::<Result<Vec<_>, _>>()?;
    let server_addrs: Vec<_> = servers.iter().map(ProbeServer::local_addr).collect();
    let relay = Relay::start(relay_paths(scenario, &[], &server_addrs))?;
    let mut failed = 0;
    for (k, spec) in scenario.paths.iter().enumerate() {
        let target = relay.local_addrs()[k];
        let result = check_path(&Prober::new(target)?, spec)?;
        say(&format!("path {k} (relay {target}):"));
        say(result.to_string().trim_end());
        failed += result.failures().len();
    }
    relay.stop();
    if failed > 0 {
        return Err(CliError::Failed(failed));
    }
    Ok(())
}

fn relay(flags: &HashMap<String, String>) -> Result<(), CliError> {
    let scenario = scenario(flags)?;
    let servers =
        addrs(flags, "server")?.ok_or_else(|| CliError::Usage("--server is required".into()))?;
    if servers.len() != scenario.paths.len() {
        return Err(CliError::Usage(format!(
            "{} has {} paths but {} --server addresses were given",
            scenario.name,
            scenario.paths.len(),
            servers.len()
        )));
    }
    let listen = addrs(flags, "listen")?.unwrap_or_default();
    let seconds = flags
        .get("seconds")
        .map(|s| s.parse::<u64>())
        .transpose()
        .map_err(|_| CliError::Usage("--seconds takes a whole number".into()))?;
    let relay = Relay::start(relay_paths(scenario, &listen, &servers))?;
    say(&format!("{scenario}"));
    for (k, a) in relay.local_addrs().iter().enumerate() {
        say(&format!("path {k}: {a} -> {}", servers[k]));
    }
    let until = seconds.map(|s| Instant::now() + Duration::from_secs(s));
    let mut last_report = Instant::now();
    while until.is_none_or(|t| Instant::now() < t) {
        std::thread::sleep(Duration::from_millis(200));
        if last_report.elapsed() >= Duration::from_secs(10) {
            last_report = Instant::now();
            for (k, s) in relay.stats().iter().enumerate() {
                say(&format!("path {k}: {s:?}"));
            }
        }
    }
    relay.stop();
    Ok(())
}

fn probe_server(flags: &HashMap<String, String>) -> Result<(), CliError> {
    let bind = match flags.get("bind") {
        Some(a) => addr(a, "bind")?,
        None => loopback_any(),
    };
    let server = ProbeServer::start(bind)?;
    say(&format!("probe server on {}", server.local_addr()));
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

fn probe(flags: &HashMap<String, String>) -> Result<(), CliError> {
    let scenario = scenario(flags)?;
    let target = addr(
        flags
            .get("target")
            .ok_or_else(|| CliError::Usage("--target is required".into()))?,
        "target",
    )?;
    let k: usize = flags
        .get("path")
        .ok_or_else(|| CliError::Usage("--path is required".into()))?
        .parse()
        .map_err(|_| CliError::Usage("--path takes a path number".into()))?;
    let spec = scenario.paths.get(k).ok_or_else(|| {
        CliError::Usage(format!(
            "{} has paths 0..{}",
            scenario.name,
            scenario.paths.len()
        ))
    })?;
    let prober = match flags.get("bind") {
        Some(a) => Prober::bind(addr(a, "bind")?, target)?,
        None => Prober::new(target)?,
    };
    let result = check_path(&prober, spec)?;
    say(&format!("path {k} ({target}):"));
    say(result.to_string().trim_end());
    let failed = result.failures().len();
    if failed > 0 {
        return Err(CliError::Failed(failed));
    }
    Ok(())
}
