//! Bulk transfer over several paths, checked with sha256.
//!
//! ```text
//! cargo run --release -p mpquic-lab --bin bulk -- --paths 2 --scheduler priority-bucket --size 100MB
//! ```
//!
//! By default the server and the client run in this one process on loopback: the server on
//! 127.0.0.1, the client's path `k` from 127.0.0.`k` (Linux routes all of 127/8 to `lo`). The
//! client sends `--size` bytes of deterministic pseudo-random data on one stream (with a size
//! hint), the server answers with their sha256, and the client prints one JSON line:
//!
//! ```text
//! {"bytes":100000000,"seconds":..,"goodput_mbps":..,"paths":2,"scheduler":"priority-bucket",
//!  "per_path_bytes":{"0":..,"1":..},
//!  "rtt":{"0":{"srtt_median_ms":..,"min_rtt_ms":..,"mtu":..,"datagram_bytes_mean":..},..},
//!  "sha256_match":true}
//! ```
//!
//! `rtt` is each path's smoothed RTT, sampled every 10 ms, as the median over the second half
//! of the transfer, and its minimum RTT at the end: how much queue the congestion controller
//! keeps standing once it is past its start. `mtu` is the largest UDP payload the path may
//! send at the end (quinn's path MTU discovery), and `datagram_bytes_mean` the mean payload of
//! the datagrams it sent by the last sample: below `mtu`, packets left part-filled.
//!
//! The exit code is non-zero if the digests differ or `--timeout` passes. To run the two ends
//! apart (e.g. in the netns testbed), start `--role server --local ADDR[,ADDR..]` (it writes its
//! certificate to `--cert`) and then `--role client --local A1,A2 --remote SERVER[,SERVER..]`
//! with the same `--cert` file; the client's path `k` goes from the `k`-th local address to the
//! `k`-th remote (cycling through the remotes). An address without a port takes port 0 (any).

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use mpquic_core::{Config, Endpoint, PathStats, PathStatus, SelfSigned, ServerConfig};
use rustls::pki_types::CertificateDer;
use serde_json::json;

use crate::transfer::{self, BoxError};
use mpquic_core::sim::Payload;

/// Which end(s) of the transfer run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Role {
    /// Server and client in this process.
    Both,
    /// Only the server: serves `--sessions` sessions, a JSON line each.
    Server,
    /// Only the client.
    Client,
}

/// The command line of `bulk`.
#[derive(Debug, Parser)]
#[command(about = "Bulk transfer over mpquic paths, checked with sha256")]
pub struct Args {
    /// Which end(s) to run.
    #[arg(long, value_enum, default_value = "both")]
    role: Role,
    /// Paths, from 127.0.0.1 .. 127.0.0.N (ignored when --local is given to a client).
    #[arg(long, default_value_t = 1)]
    paths: usize,
    /// Scheduler: priority-bucket, priority-bucket-paper, lrf, sa-ecf, wrr, sec, round-robin.
    #[arg(long, default_value = "priority-bucket")]
    scheduler: String,
    /// Bytes to send: 100MB, 10MiB, 12345, ...
    #[arg(long, default_value = "100MB", value_parser = transfer::parse_size)]
    size: u64,
    /// Local addresses, comma-separated: the client's paths, or the server's listening
    /// addresses (server default 127.0.0.1:4433); a bare IP takes port 0 (any).
    #[arg(long, value_delimiter = ',', value_parser = parse_local)]
    local: Vec<SocketAddr>,
    /// The server's addresses, comma-separated (client default 127.0.0.1:4433; with --role
    /// both, where the in-process server listens, default 127.0.0.1:0).
    #[arg(long, value_delimiter = ',')]
    remote: Vec<SocketAddr>,
    /// Congestion controller on every path, as `mpquic_core::CongestionControl` parses it: bbr,
    /// cubic-hystart, cubic (quinn's), quinn-bbr, ...
    #[arg(long, default_value = mpquic_core::CongestionControl::DEFAULT_NAME)]
    cc: String,
    /// Bytes every path's congestion window starts with (default: mpquic's, 32 packets;
    /// 12000 is quinn's own 10 packets).
    #[arg(long, value_parser = transfer::parse_size)]
    initial_window: Option<u64>,
    /// Turns off the per-path delivery reports (and the window credit they give).
    #[arg(long)]
    no_delivery_reports: bool,
    /// Gives up after this long (120s, 500ms, 2m).
    #[arg(long, default_value = "120s", value_parser = transfer::parse_duration)]
    timeout: Duration,
    /// Seed of the payload.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The server's certificate (DER) for split roles: the server writes it, the client reads it.
    #[arg(long, default_value = "/tmp/mpquic-bulk-cert.der")]
    cert: PathBuf,
    /// Sessions a `--role server` serves before it exits (0: until killed).
    #[arg(long, default_value_t = 1)]
    sessions: u64,
    /// The client writes at most this many Mbit/s (default: as fast as it can).
    #[arg(long)]
    rate_mbps: Option<f64>,
    /// The client stops writing after this long even if `--size` is not reached (30s, 2m): a
    /// transfer for a time; it reports the bytes it wrote.
    #[arg(long, value_parser = transfer::parse_duration)]
    duration: Option<Duration>,
    /// Turns off re-injection (`Config::reinjection`).
    #[arg(long)]
    no_reinjection: bool,
}

const DEFAULT_PORT_ADDR: &str = "127.0.0.1:4433";

/// `IP:PORT`, or a bare `IP` with port 0 (any).
fn parse_local(text: &str) -> Result<SocketAddr, String> {
    text.parse::<SocketAddr>()
        .or_else(|_| text.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 0)))
        .map_err(|_| format!("not an address: {text:?} (e.g. 10.0.1.1 or 10.0.1.1:0)"))
}

/// The server's TLS with `certificate` and its transport settings.
fn server_config(args: &Args, certificate: &SelfSigned) -> Result<ServerConfig, BoxError> {
    let mut tls = certificate.server_config()?;
    tls.transport_config(Arc::new(config(args, 8)?));
    Ok(tls)
}

fn config(args: &Args, paths: usize) -> Result<Config, BoxError> {
    let mut config = Config::default();
    config
        .scheduler(args.scheduler.parse()?)
        .max_paths(paths.max(8))?
        .congestion_control(args.cc.parse()?)
        .delivery_reports(!args.no_delivery_reports);
    if args.no_reinjection {
        config.reinjection(mpquic_core::ReinjectionConfig {
            urgency: None,
            suspect: false,
            ..Default::default()
        })?;
    }
    if let Some(bytes) = args.initial_window {
        config.initial_window(bytes)?;
    }
    Ok(config)
}

/// The client's local addresses: `--local`, or 127.0.0.1 ..= 127.0.0.N with any port.
fn client_locals(args: &Args) -> Result<Vec<SocketAddr>, BoxError> {
    if !args.local.is_empty() {
        return Ok(args.local.clone());
    }
    if args.paths == 0 || args.paths > 254 {
        return Err(format!("--paths {} out of range (1 to 254)", args.paths).into());
    }
    Ok((1..=args.paths)
        .map(|k| SocketAddr::from(([127, 0, 0, k as u8], 0)))
        .collect())
}

/// Serves sessions on `server` (0: without end): one hashed stream each, reported as a JSON
/// line when `report` is set.
async fn serve(server: Endpoint, sessions: u64, report: bool) {
    let mut served = 0;
    while sessions == 0 || served < sessions {
        let Some(incoming) = server.accept().await else {
            break;
        };
        let Ok(conn) = incoming.await else {
            continue;
        };
        served += 1;
        let task = tokio::spawn(async move {
            let start = Instant::now();
            let start_unix_ms = transfer::unix_ms();
            let serve = transfer::serve_checked(&conn);
            tokio::pin!(serve);
            let mut activity = PathActivity::default();
            let mut tick = tokio::time::interval(PATH_SAMPLE_INTERVAL);
            // Ends with the stream, which the client's `--timeout` bounds.
            let result = loop {
                tokio::select! {
                    result = &mut serve => break result,
                    _ = tick.tick() => activity.sample(&conn, start),
                }
            };
            let elapsed = start.elapsed();
            // Give the client time to read the digest and close.
            let _ = tokio::time::timeout(Duration::from_secs(5), conn.closed()).await;
            match result {
                Ok(hashed) if report => {
                    let per_path: serde_json::Map<_, _> = conn
                        .paths()
                        .iter()
                        .map(|p| (p.id.0.to_string(), json!(p.bytes_received)))
                        .collect();
                    let since_start = |t: Instant| (t - start).as_secs_f64() * 1e3;
                    println!(
                        "{}",
                        json!({
                            "role": "server",
                            "bytes": hashed.bytes,
                            "seconds": elapsed.as_secs_f64(),
                            "goodput_mbps": transfer::mbps(hashed.bytes, elapsed),
                            "per_path_bytes": per_path,
                            "sha256": hex(&hashed.digest),
                            "start_unix_ms": start_unix_ms,
                            "first_read_ms": hashed.first_read.map(since_start),
                            "longest_gap_ms": hashed.longest_gap.map(|(gap, _)| gap.as_secs_f64() * 1e3),
                            "longest_gap_from_ms": hashed.longest_gap.map(|(_, from)| since_start(from)),
                            "path_activity_ms": activity.json(),
                            "path_joined_ms": activity.joined_json(),
                            "arrivals": hashed.arrivals.json(),
                            "duplicate_bytes": conn.reinjection_stats().duplicate_received,
                            "first_copy_lead_ms": conn.reinjection_stats().first_copy_lead.as_secs_f64() * 1e3,
                        })
                    );
                }
                Ok(_) => {}
                Err(e) => eprintln!("bulk server: session failed: {e}"),
            }
        });
        if sessions != 0 && served >= sessions {
            let _ = task.await;
        }
    }
}

/// How often the server samples each path's received bytes.
const PATH_SAMPLE_INTERVAL: Duration = Duration::from_millis(10);

/// When each path received stream bytes: intervals of consecutive samples in which its count
/// grew (a silence of more than 50 ms ends one), and the first sample that listed it (when it
/// joined), in ms since the session began.
#[derive(Default)]
struct PathActivity {
    last_bytes: BTreeMap<u32, u64>,
    intervals: BTreeMap<u32, Vec<(f64, f64)>>,
    joined: BTreeMap<u32, f64>,
}

impl PathActivity {
    fn sample(&mut self, conn: &mpquic_core::Connection, start: Instant) {
        let at = start.elapsed().as_secs_f64() * 1e3;
        for path in conn.paths() {
            self.joined.entry(path.id.0).or_insert(at);
            let last = self.last_bytes.insert(path.id.0, path.bytes_received);
            if path.bytes_received <= last.unwrap_or(0) {
                continue;
            }
            let intervals = self.intervals.entry(path.id.0).or_default();
            match intervals.last_mut() {
                Some((_, end)) if at - *end <= 50.0 => *end = at,
                _ => intervals.push((at, at)),
            }
        }
    }

    fn json(&self) -> serde_json::Value {
        by_path(&self.intervals)
    }

    fn joined_json(&self) -> serde_json::Value {
        by_path(&self.joined)
    }
}

/// A JSON object with a member per path, keyed by the path's id.
fn by_path<K: ToString, V: serde::Serialize>(
    entries: impl IntoIterator<Item = (K, V)>,
) -> serde_json::Value {
    entries
        .into_iter()
        .map(|(path, value)| (path.to_string(), json!(value)))
        .collect::<serde_json::Map<_, _>>()
        .into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Connects, sends, prints the JSON line; `Ok(true)` if the digests matched.
async fn client(
    args: &Args,
    cert: CertificateDer<'static>,
    remotes: &[SocketAddr],
) -> Result<bool, BoxError> {
    let locals = client_locals(args)?;
    let expected = Payload::digest(args.seed, args.size);
    let (endpoint, conn) =
        transfer::connect_paths(config(args, locals.len())?, cert, &locals, remotes).await?;
    let writing = transfer::Writing {
        rate_bps: args.rate_mbps.map(|mbps| (mbps * 1e6) as u64),
        for_at_most: args.duration,
    };
    let send = transfer::send_checked(&conn, args.seed, args.size, &expected, writing);
    tokio::pin!(send);
    let start = Instant::now();
    let mut samples: Vec<(Duration, PathStats)> = Vec::new();
    let mut tick = tokio::time::interval(RTT_SAMPLE_INTERVAL);
    // Ends with the transfer, which `--timeout` bounds.
    let sent = loop {
        tokio::select! {
            sent = &mut send => break sent?,
            _ = tick.tick() => samples.extend(
                conn.paths()
                    .into_iter()
                    .filter(|p| p.status != PathStatus::Down)
                    .map(|p| (start.elapsed(), p)),
            ),
        }
    };
    let per_path = by_path(&sent.per_path);
    println!(
        "{}",
        json!({
            "bytes": sent.bytes,
            "seconds": sent.elapsed.as_secs_f64(),
            "goodput_mbps": transfer::mbps(sent.bytes, sent.elapsed),
            "paths": locals.len(),
            "scheduler": args.scheduler,
            "per_path_bytes": per_path,
            "rtt": second_half_rtts(&samples, sent.elapsed),
            "path_starts_ms": path_starts(&samples),
            "sha256_match": sent.matched,
        })
    );
    conn.close(0u32.into(), b"done");
    endpoint.close(0u32.into(), b"");
    Ok(sent.matched)
}

/// Per path, in ms since the transfer began: the first sample that listed it and the first in
/// which it had sent stream bytes (how long a path that joined late waited for its first grant).
fn path_starts(samples: &[(Duration, PathStats)]) -> serde_json::Value {
    let mut starts: BTreeMap<u32, (f64, Option<f64>)> = BTreeMap::new();
    for (at, stats) in samples {
        let at = at.as_secs_f64() * 1000.0;
        let (_, sent) = starts.entry(stats.id.0).or_insert((at, None));
        if stats.bytes_sent > 0 {
            sent.get_or_insert(at);
        }
    }
    by_path(
        starts
            .into_iter()
            .map(|(path, (listed, sent))| (path, json!({"listed": listed, "sent": sent}))),
    )
}

/// How often the client samples each path's RTT during the transfer.
const RTT_SAMPLE_INTERVAL: Duration = Duration::from_millis(10);

/// Per path: the median smoothed RTT over the second half of the transfer and the last minimum
/// RTT, in milliseconds.
fn second_half_rtts(samples: &[(Duration, PathStats)], elapsed: Duration) -> serde_json::Value {
    let mut by_path: BTreeMap<u32, Vec<&PathStats>> = BTreeMap::new();
    for (_, stats) in samples.iter().filter(|(at, _)| *at >= elapsed / 2) {
        by_path.entry(stats.id.0).or_default().push(stats);
    }
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let rtts: serde_json::Map<_, _> = by_path
        .into_iter()
        .map(|(path, stats)| {
            let mut srtts: Vec<Duration> = stats.iter().map(|s| s.srtt).collect();
            srtts.sort();
            let median = srtts.get(srtts.len() / 2).copied().unwrap_or_default();
            let last = stats.last();
            let min_rtt = last.map(|s| s.min_rtt).unwrap_or_default();
            let mtu = last.map(|s| s.mtu).unwrap_or_default();
            let datagram_mean = last.map_or(0.0, |s| {
                s.datagram_bytes_sent as f64 / s.datagrams_sent.max(1) as f64
            });
            let entry = json!({
                "srtt_median_ms": ms(median),
                "min_rtt_ms": ms(min_rtt),
                "mtu": mtu,
                "datagram_bytes_mean": datagram_mean,
            });
            (path.to_string(), entry)
        })
        .collect();
    json!(rtts)
}

async fn run(args: Args) -> Result<bool, BoxError> {
    let default_addr: SocketAddr = DEFAULT_PORT_ADDR.parse()?;
    match args.role {
        Role::Both => {
            let certificate = SelfSigned::new(&["localhost"])?;
            let listen = if args.remote.is_empty() {
                vec![SocketAddr::from(([127, 0, 0, 1], 0))]
            } else {
                args.remote.clone()
            };
            let server = Endpoint::new(&listen, Some(server_config(&args, &certificate)?))?;
            let remotes = server.local_addrs();
            tokio::spawn(serve(server, 1, false));
            client(&args, certificate.cert_der(), &remotes).await
        }
        Role::Server => {
            let certificate = SelfSigned::new(&["localhost"])?;
            std::fs::write(&args.cert, certificate.cert_der().as_ref())
                .map_err(|e| format!("writing {}: {e}", args.cert.display()))?;
            let listen = if args.local.is_empty() {
                vec![default_addr]
            } else {
                args.local.clone()
            };
            let server = Endpoint::new(&listen, Some(server_config(&args, &certificate)?))?;
            eprintln!("bulk server: listening on {:?}", server.local_addrs());
            serve(server, args.sessions, true).await;
            Ok(true)
        }
        Role::Client => {
            let der = std::fs::read(&args.cert)
                .map_err(|e| format!("reading {}: {e}", args.cert.display()))?;
            let remotes = if args.remote.is_empty() {
                vec![default_addr]
            } else {
                args.remote.clone()
            };
            client(&args, CertificateDer::from(der), &remotes).await
        }
    }
}

/// Runs `bulk` with `args` to its end: the exit code is 1 when the digests differ, on any
/// error, and when `--timeout` passes.
pub async fn main(args: Args) -> ExitCode {
    let timeout = args.timeout;
    let role = args.role;
    let outcome = if role == Role::Server && args.sessions == 0 {
        // Serves until killed: no overall deadline.
        run(args).await
    } else {
        match tokio::time::timeout(timeout, run(args)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!("timed out after {timeout:?}").into()),
        }
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("bulk: sha256 mismatch");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("bulk: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locals_take_port_zero_without_a_port() {
        let args = Args::parse_from(["bulk", "--local", "10.0.1.1,10.0.2.1:5000,::1"]);
        let expected: Vec<SocketAddr> = ["10.0.1.1:0", "10.0.2.1:5000", "[::1]:0"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect();
        assert_eq!(client_locals(&args).unwrap(), expected);
        assert!(Args::try_parse_from(["bulk", "--local", "host:1"]).is_err());
    }

    #[test]
    fn default_locals_are_one_loopback_address_per_path() {
        let args = Args::parse_from(["bulk", "--paths", "2"]);
        let locals = client_locals(&args).unwrap();
        assert_eq!(
            locals,
            [
                "127.0.0.1:0".parse().unwrap(),
                "127.0.0.2:0".parse().unwrap()
            ]
        );
        let args = Args::parse_from(["bulk", "--paths", "0"]);
        assert!(client_locals(&args).is_err());
    }
}
