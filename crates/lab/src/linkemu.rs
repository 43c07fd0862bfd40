//! `linkemu`: the link emulator from the command line, without root.
//!
//! ```text
//! linkemu check --scenario NAME                     loopback self-check: configured vs measured per path
//! linkemu relay --scenario NAME --server A[,B]      relay path k from 127.0.0.1:port_k to server k
//!               [--listen A[,B]] [--seconds N]      (default: ports picked, runs until killed)
//! linkemu probe-server [--bind ADDR]                the far end of `probe` (default 127.0.0.1:0)
//! linkemu probe --target ADDR --scenario NAME --path K [--bind ADDR]
//!                                                   check one path against a probe server at ADDR
//! linkemu tcp-sink --bind ADDR [--connections N]    receive TCP flows one at a time, discard the
//!                                                   data, measure goodput (after the first second)
//! linkemu tcp-send --target ADDR --seconds N        one TCP flow as fast as it goes for N seconds;
//!                                                   prints the sink's measurement
//! linkemu blast --target ADDR --rate-bps R --seconds N [--bind ADDR]
//!                                                   UDP at 1.1 x R to a probe server for N seconds
//!                                                   (load for measuring the emulator's cost)
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use mpquic_netns::error::NetnsError;
use mpquic_netns::loopback::{any_loopback_port, relay_paths, LoopbackTestbed};
use mpquic_netns::probe::{check_path, Direction, PathCheck, ProbeServer, Prober};
use mpquic_netns::relay::Relay;
use mpquic_scenario::Scenario;

/// The command line of `linkemu`.
#[derive(Debug, Parser)]
#[command(
    name = "linkemu",
    about = "mpquic's userspace link emulator, on loopback"
)]
pub struct Cli {
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
    /// Accepts TCP connections one at a time, reads and discards what they send, and reports
    /// each one's goodput (measured after its first second, past slow start) on stdout and
    /// back to the sender.
    TcpSink {
        /// Address to listen on.
        #[arg(long)]
        bind: SocketAddr,
        /// Exit after this many connections (default: run until killed).
        #[arg(long)]
        connections: Option<u64>,
    },
    /// Offers 1.1 x the rate of full-size UDP datagrams to a probe server for N seconds (the
    /// link stays saturated), then prints the goodput that arrived: load for `cargo xtask
    /// testbed cost`.
    Blast {
        /// The probe server (or the relay in front of it).
        #[arg(long)]
        target: SocketAddr,
        /// Local address to send from (selects the path in the namespace testbed).
        #[arg(long)]
        bind: Option<SocketAddr>,
        /// The link rate to saturate, bit/s.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1_000..=10_000_000_000))]
        rate_bps: u64,
        /// How long to send.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=3600))]
        seconds: u64,
    },
    /// Sends one TCP flow as fast as it goes for N seconds to a `tcp-sink`, then prints the
    /// sink's measurement of it. The path is chosen by the target's subnet.
    TcpSend {
        /// The `tcp-sink`.
        #[arg(long)]
        target: SocketAddr,
        /// How long to send.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=3600))]
        seconds: u64,
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

/// Runs `linkemu` with `cli`: the exit code is 1 on an error or a failed check.
pub fn main(cli: Cli) -> ExitCode {
    let outcome = match cli.command {
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
        Command::TcpSink { bind, connections } => tcp_sink(bind, connections),
        Command::TcpSend { target, seconds } => tcp_send(target, seconds),
        Command::Blast {
            target,
            bind,
            rate_bps,
            seconds,
        } => blast(target, bind, rate_bps, seconds),
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
    Ok(Scenario::by_name(name)?)
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
    let relay = Relay::start(relay_paths(scenario, listen, servers, 0)?)?;
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

fn blast(
    target: SocketAddr,
    bind: Option<SocketAddr>,
    rate_bps: u64,
    seconds: u64,
) -> Result<(), Failure> {
    let prober = match bind {
        Some(local) => Prober::bind(local, target)?,
        None => Prober::new(target)?,
    };
    let stats = prober.goodput(
        Direction::Uplink,
        rate_bps,
        Duration::from_secs(seconds),
        BLAST_DATAGRAM,
    )?;
    println!(
        "blast to {target}: {} of {} datagrams arrived, goodput {:.3} Mbit/s",
        stats.received,
        stats.sent,
        stats.goodput_bps / 1e6
    );
    Ok(())
}

/// Full-size datagrams: 1472 bytes of payload fill a 1500-byte IPv4 packet.
const BLAST_DATAGRAM: usize = 1472;

/// The part of a TCP flow's start left out of its goodput (slow start).
const TCP_WARMUP: Duration = Duration::from_secs(1);
/// Longest a TCP read, write or connect may block before the flow is given up.
const TCP_STALL: Duration = Duration::from_secs(10);

fn io_error(what: String) -> impl FnOnce(std::io::Error) -> NetnsError {
    move |source| NetnsError::Io {
        context: what,
        source,
    }
}

fn tcp_sink(bind: SocketAddr, connections: Option<u64>) -> Result<(), Failure> {
    let listener = TcpListener::bind(bind).map_err(io_error(format!("bind tcp {bind}")))?;
    let local = listener
        .local_addr()
        .map_err(io_error(format!("tcp {bind}: local address")))?;
    println!("tcp sink on {local}");
    let mut served = 0;
    while connections.is_none_or(|n| served < n) {
        let (stream, peer) = match listener.accept() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("linkemu: tcp sink {local}: accept: {e}");
                std::thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        served += 1;
        match sink_one(stream) {
            Ok(line) => println!("{peer}: {line}"),
            Err(e) => eprintln!("linkemu: tcp sink {local}: {peer}: {e}"),
        }
    }
    Ok(())
}

/// Reads one flow to its end, then writes its measurement back (one line) and returns it.
fn sink_one(mut stream: TcpStream) -> std::io::Result<String> {
    stream.set_read_timeout(Some(TCP_STALL))?;
    stream.set_write_timeout(Some(TCP_STALL))?;
    let mut buf = vec![0u8; 256 * 1024];
    let mut total: u64 = 0;
    let mut first: Option<Instant> = None;
    let mut last = Instant::now();
    // Bytes and time from the first read at or after first + TCP_WARMUP.
    let mut steady: Option<(Instant, u64)> = None;
    loop {
        let n = stream.read(&mut buf)?;
        let now = Instant::now();
        if n == 0 {
            break;
        }
        let start = *first.get_or_insert(now);
        if steady.is_none() && now >= start + TCP_WARMUP {
            // This read's bytes arrived before `now`: they are not counted in the window.
            steady = Some((now, total + n as u64));
        }
        total += n as u64;
        last = now;
    }
    let elapsed = first.map_or(Duration::ZERO, |f| last - f);
    let (steady_bytes, steady_secs) = match steady {
        Some((t, at)) if last > t => (total - at, (last - t).as_secs_f64()),
        _ => (0, 0.0),
    };
    let goodput = if steady_secs > 0.0 {
        steady_bytes as f64 * 8.0 / steady_secs
    } else {
        0.0
    };
    let line = format!(
        "received_bytes={total} seconds={:.3} goodput_bps={goodput:.0} steady_bytes={steady_bytes} steady_seconds={steady_secs:.3}",
        elapsed.as_secs_f64()
    );
    stream.write_all(format!("{line}\n").as_bytes())?;
    Ok(line)
}

fn tcp_send(target: SocketAddr, seconds: u64) -> Result<(), Failure> {
    let mut stream = TcpStream::connect_timeout(&target, TCP_STALL)
        .map_err(io_error(format!("connect tcp {target}")))?;
    let ctx = |what: &str| format!("tcp {target}: {what}");
    stream
        .set_write_timeout(Some(TCP_STALL))
        .map_err(io_error(ctx("set write timeout")))?;
    stream
        .set_read_timeout(Some(TCP_STALL))
        .map_err(io_error(ctx("set read timeout")))?;
    let buf = vec![0x5au8; 64 * 1024];
    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    let mut sent: u64 = 0;
    while Instant::now() < until {
        let n = stream.write(&buf).map_err(io_error(ctx("write")))?;
        sent += n as u64;
    }
    let wrote = started.elapsed();
    stream
        .shutdown(Shutdown::Write)
        .map_err(io_error(ctx("shutdown")))?;
    // The sink answers once it has read everything (the queue drains at the link rate).
    let mut answer = String::new();
    BufReader::new(&stream)
        .read_line(&mut answer)
        .map_err(io_error(ctx("read the sink's measurement")))?;
    println!(
        "sent_bytes={sent} send_seconds={:.3} sender_bps={:.0}",
        wrote.as_secs_f64(),
        sent as f64 * 8.0 / wrote.as_secs_f64()
    );
    println!("sink: {}", answer.trim_end());
    Ok(())
}
