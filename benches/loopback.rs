//! Loopback overhead: plain quinn over one connection against mpquic over 1 and 2 paths,
//! measured side by side in one run.
//!
//! `cargo bench --bench loopback [-- --rounds 3 --size 200MB --scheduler priority-bucket]`
//!
//! Each setup sends `--size` bytes of pseudo-random data on one stream to a server that hashes
//! them (sha256) and answers the digest, which the client checks; the transfer code is the same
//! for all three (`mpquic_lab::transfer`, generic over tokio's `AsyncWrite`/`AsyncRead`): plain quinn
//! with quinn's default transport settings on 127.0.0.1, and mpquic with the client's path `k`
//! from 127.0.0.`k`. The setups are interleaved: every round runs each once, the order rotating
//! from round to round, after one unrecorded warm-up transfer each. Client and server run in
//! this one process on one tokio multi-thread runtime, so CPU time (getrusage `RUSAGE_SELF`,
//! user + system, over the timed transfer) is both ends together, payload generation and
//! hashing included. Reported: median goodput and CPU seconds per GB (10^9 bytes) per setup,
//! and the ratios mpquic-1 / quinn and mpquic-2 / mpquic-1, written to
//! `target/bench/loopback.{md,json}` and printed.
//!
//! Run without `--bench` (e.g. `cargo test --benches`) it does one small round as a smoke test
//! and writes no report.

// A benchmark report: its output is stdout.
#![allow(clippy::print_stdout)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use mpquic::sim::Payload;
use mpquic::{Config, PathStatus, SelfSigned};
use mpquic_lab::transfer::{self, BoxError};
use nix::sys::resource::{getrusage, UsageWho};
use serde_json::json;

#[derive(Debug, Parser)]
#[command(about = "Loopback goodput and CPU per GB: plain quinn vs mpquic over 1 and 2 paths")]
struct Args {
    /// Rounds; each runs every setup once.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Bytes per transfer (200MB, 64MiB, ...).
    #[arg(long, default_value = "200MB", value_parser = transfer::parse_size)]
    size: u64,
    /// mpquic's scheduler.
    #[arg(long, default_value = "priority-bucket")]
    scheduler: String,
    /// Setups to run, comma-separated (quinn, mpquic-1, mpquic-2, ... mpquic-N).
    #[arg(long, value_delimiter = ',', default_value = "quinn,mpquic-1,mpquic-2")]
    setups: Vec<String>,
    /// Where the report goes (default: the target directory's `bench/`).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Set by `cargo bench`; without it the bench runs as a quick smoke test.
    #[arg(long, hide = true)]
    bench: bool,
}

/// Tries per (round, setup) before it is given up.
const ATTEMPTS: usize = 3;

/// What carries the transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setup {
    /// Plain quinn, one connection.
    Quinn,
    /// mpquic over this many paths.
    Mpquic(usize),
}

impl Setup {
    fn parse(name: &str) -> Result<Self, BoxError> {
        if name == "quinn" {
            return Ok(Self::Quinn);
        }
        match name.strip_prefix("mpquic-").map(str::parse::<usize>) {
            Some(Ok(n)) if (1..=8).contains(&n) => Ok(Self::Mpquic(n)),
            _ => Err(format!("unknown setup {name:?} (quinn, mpquic-1 .. mpquic-8)").into()),
        }
    }

    fn name(self) -> String {
        match self {
            Self::Quinn => "quinn".into(),
            Self::Mpquic(n) => format!("mpquic-{n}"),
        }
    }
}

/// One timed transfer.
#[derive(Debug, Clone, Copy)]
struct Sample {
    seconds: f64,
    cpu_seconds: f64,
}

/// User + system CPU seconds of this process so far.
fn cpu_seconds() -> Result<f64, BoxError> {
    let usage = getrusage(UsageWho::RUSAGE_SELF)?;
    let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 * 1e-6;
    Ok(secs(usage.user_time()) + secs(usage.system_time()))
}

fn loopback(k: usize) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, k as u8], 0))
}

/// Plain quinn: one connection, default transport settings, one stream.
async fn run_quinn(len: u64, seed: u64, expected: &[u8; 32]) -> Result<Sample, BoxError> {
    let certificate = SelfSigned::new(&["localhost"])?;
    let cert = certificate.cert_der();
    let server_config =
        quinn::ServerConfig::with_single_cert(vec![cert.clone()], certificate.key_der())?;
    let server = quinn::Endpoint::server(server_config, loopback(1))?;
    let server_addr = server.local_addr()?;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert)?;
    let mut client = quinn::Endpoint::client(loopback(1))?;
    client.set_default_client_config(quinn::ClientConfig::with_root_certificates(Arc::new(
        roots,
    ))?);
    let accepting = server.clone();
    let served = tokio::spawn(async move {
        let conn = accepting.accept().await.ok_or("server closed")?.await?;
        let (mut send, mut recv) = conn.accept_bi().await?;
        transfer::hash_stream(&mut recv, &mut send).await?;
        let _ = tokio::time::timeout(Duration::from_secs(5), conn.closed()).await;
        Ok::<_, BoxError>(())
    });
    let conn = client.connect(server_addr, "localhost")?.await?;

    let cpu = cpu_seconds()?;
    let start = std::time::Instant::now();
    let (mut send, mut recv) = conn.open_bi().await?;
    let (digest, _) =
        transfer::send_payload(&mut send, &mut recv, seed, len, Default::default()).await?;
    let seconds = start.elapsed().as_secs_f64();
    let cpu_seconds = cpu_seconds()? - cpu;

    conn.close(0u32.into(), b"done");
    served.await??;
    let _ = tokio::time::timeout(Duration::from_secs(2), client.wait_idle()).await;
    server.close(0u32.into(), b"done");
    if digest != expected {
        return Err("quinn: sha256 mismatch".into());
    }
    Ok(Sample {
        seconds,
        cpu_seconds,
    })
}

/// mpquic over `paths` paths from 127.0.0.1 ..= 127.0.0.`paths`, one stream with a size hint.
async fn run_mpquic(
    paths: usize,
    scheduler: &str,
    len: u64,
    seed: u64,
    expected: &[u8; 32],
) -> Result<Sample, BoxError> {
    let certificate = SelfSigned::new(&["localhost"])?;
    let mut config = Config::default();
    config.scheduler(scheduler.parse()?);
    let mut server_config = certificate.server_config()?;
    server_config.transport_config(Arc::new(config.clone()));
    let server = mpquic::Endpoint::server(server_config, loopback(1))?;
    let server_addr = server.local_addr()?;
    let served = tokio::spawn(async move {
        let conn = server.accept().await.ok_or("server closed")?.await?;
        // Every path joined before the first byte arrives.
        tokio::time::timeout(Duration::from_secs(5), async {
            while conn
                .paths()
                .iter()
                .filter(|p| p.status != PathStatus::Down)
                .count()
                < paths
            {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
        .await?;
        transfer::serve_checked(&conn).await?;
        let _ = tokio::time::timeout(Duration::from_secs(5), conn.closed()).await;
        server.close(0u32.into(), b"done");
        Ok::<_, BoxError>(())
    });
    let locals: Vec<SocketAddr> = (1..=paths).map(loopback).collect();
    let (client, conn) =
        transfer::connect_paths(config, certificate.cert_der(), &locals, &[server_addr]).await?;

    let cpu = cpu_seconds()?;
    let sent = transfer::send_checked(&conn, seed, len, expected, Default::default()).await?;
    let cpu_seconds = cpu_seconds()? - cpu;

    conn.close(0u32.into(), b"done");
    served.await??;
    client.close(0u32.into(), b"done");
    if !sent.matched {
        return Err(format!("mpquic over {paths} paths: sha256 mismatch").into());
    }
    if sent.per_path.values().filter(|&&b| b > 0).count() < paths {
        eprintln!(
            "note: mpquic over {paths} paths used only {:?}",
            sent.per_path
        );
    }
    Ok(Sample {
        seconds: sent.elapsed.as_secs_f64(),
        cpu_seconds,
    })
}

async fn run(setup: Setup, args: &Args, len: u64, expected: &[u8; 32]) -> Result<Sample, BoxError> {
    let seed = 1;
    let deadline = Duration::from_secs(20 + len / 10_000_000);
    let sample = match setup {
        Setup::Quinn => tokio::time::timeout(deadline, run_quinn(len, seed, expected)).await,
        Setup::Mpquic(paths) => {
            tokio::time::timeout(
                deadline,
                run_mpquic(paths, &args.scheduler, len, seed, expected),
            )
            .await
        }
    };
    let sample = sample
        .map_err(|_| format!("{}: timed out after {deadline:?}", setup.name()))?
        .map_err(|e| format!("{} ({len} bytes): {e}", setup.name()))?;
    // Let the closed connections' tasks finish before the next measurement.
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(sample)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// Median goodput (Mbit/s) and CPU seconds per GB of one setup's samples.
struct Summary {
    goodput: Vec<f64>,
    cpu_per_gb: Vec<f64>,
    median_goodput: f64,
    median_cpu_per_gb: f64,
}

fn summarize(samples: &[Sample], len: u64) -> Summary {
    let goodput: Vec<f64> = samples
        .iter()
        .map(|s| len as f64 * 8.0 / s.seconds / 1e6)
        .collect();
    let cpu_per_gb: Vec<f64> = samples
        .iter()
        .map(|s| s.cpu_seconds / (len as f64 / 1e9))
        .collect();
    Summary {
        median_goodput: median(&mut goodput.clone()),
        median_cpu_per_gb: median(&mut cpu_per_gb.clone()),
        goodput,
        cpu_per_gb,
    }
}

fn now_utc() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|| "unknown date".into())
}

fn out_dir(args: &Args) -> PathBuf {
    if let Some(out) = &args.out {
        return out.clone();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("bench")
}

fn report(
    args: &Args,
    setups: &[Setup],
    samples: &[Vec<Sample>],
    failures: &[String],
    len: u64,
) -> (String, String) {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let summaries: Vec<Summary> = samples.iter().map(|s| summarize(s, len)).collect();
    let find = |setup: Setup| setups.iter().position(|&s| s == setup);
    let ratio = |a: Setup, b: Setup| match (find(a), find(b)) {
        (Some(a), Some(b)) => Some(summaries[a].median_goodput / summaries[b].median_goodput),
        _ => None,
    };
    let one_vs_quinn = ratio(Setup::Mpquic(1), Setup::Quinn);
    let two_vs_one = ratio(Setup::Mpquic(2), Setup::Mpquic(1));
    let date = now_utc();

    let mut md = format!(
        "# Loopback overhead\n\n{date}; {cores} cores; {} rounds x {} setups, {} bytes each; \
         mpquic scheduler {}; client and server in one process (CPU = both ends).\n\n\
         | setup | median goodput (Mbit/s) | runs (Mbit/s) | median CPU s/GB | runs (CPU s/GB) |\n\
         |---|---:|---|---:|---|\n",
        args.rounds,
        setups.len(),
        len,
        args.scheduler
    );
    for (setup, s) in setups.iter().zip(&summaries) {
        let list = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:.0}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let list2 = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        md.push_str(&format!(
            "| {} | {:.0} | {} | {:.2} | {} |\n",
            setup.name(),
            s.median_goodput,
            list(&s.goodput),
            s.median_cpu_per_gb,
            list2(&s.cpu_per_gb)
        ));
    }
    md.push('\n');
    let verdict = |r: f64, bar: f64| if r >= bar { "meets" } else { "BELOW" };
    if let Some(r) = one_vs_quinn {
        md.push_str(&format!(
            "- mpquic-1 / quinn goodput: {:.1}% ({} the 80% bar)\n",
            r * 100.0,
            verdict(r, 0.8)
        ));
    }
    if let Some(r) = two_vs_one {
        md.push_str(&format!(
            "- mpquic-2 / mpquic-1 goodput: {:.1}% ({} the 90% bar)\n",
            r * 100.0,
            verdict(r, 0.9)
        ));
    }
    if !failures.is_empty() {
        md.push_str(&format!(
            "\n{} transfer(s) failed or stalled (not in the medians):\n",
            failures.len()
        ));
        for failure in failures {
            md.push_str(&format!("- {failure}\n"));
        }
    }

    let json = json!({
        "date": date,
        "cores": cores,
        "rounds": args.rounds,
        "bytes": len,
        "scheduler": args.scheduler,
        "setups": setups.iter().zip(&summaries).zip(samples).map(|((setup, s), raw)| json!({
            "setup": setup.name(),
            "median_goodput_mbps": s.median_goodput,
            "median_cpu_s_per_gb": s.median_cpu_per_gb,
            "goodput_mbps": s.goodput,
            "cpu_s_per_gb": s.cpu_per_gb,
            "seconds": raw.iter().map(|x| x.seconds).collect::<Vec<_>>(),
            "cpu_seconds": raw.iter().map(|x| x.cpu_seconds).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "ratio_mpquic1_quinn": one_vs_quinn,
        "ratio_mpquic2_mpquic1": two_vs_one,
        "failures": failures,
    });
    (md, format!("{json:#}\n"))
}

async fn bench(mut args: Args) -> Result<(), BoxError> {
    if !args.bench {
        args.rounds = 1;
        args.size = args.size.min(2_000_000);
    }
    let setups = args
        .setups
        .iter()
        .map(|s| Setup::parse(s))
        .collect::<Result<Vec<_>, _>>()?;
    let len = args.size;
    let expected = Payload::digest(1, len);

    // Warm-up: one smaller transfer per setup, not recorded.
    let warm = (len / 10).max(1_000_000).min(len);
    let warm_expected = Payload::digest(1, warm);
    for &setup in &setups {
        if let Err(e) = run(setup, &args, warm, &warm_expected).await {
            eprintln!("warm-up {}: FAILED: {e}", setup.name());
        }
    }

    let mut samples = vec![Vec::new(); setups.len()];
    let mut failures = Vec::new();
    for round in 0..args.rounds {
        for i in 0..setups.len() {
            let index = (i + round) % setups.len();
            let setup = setups[index];
            // A transfer that fails or stalls is reported, not hidden: it is listed in the
            // report and tried again, up to ATTEMPTS times in all.
            let mut sample = None;
            for _ in 0..ATTEMPTS {
                match run(setup, &args, len, &expected).await {
                    Ok(s) => {
                        sample = Some(s);
                        break;
                    }
                    Err(e) => {
                        eprintln!("round {} {:>9}: FAILED: {e}", round + 1, setup.name());
                        failures.push(format!("round {}: {e}", round + 1));
                    }
                }
            }
            let Some(sample) = sample else {
                continue;
            };
            eprintln!(
                "round {} {:>9}: {:>7.0} Mbit/s, {:.2} CPU s/GB",
                round + 1,
                setup.name(),
                len as f64 * 8.0 / sample.seconds / 1e6,
                sample.cpu_seconds / (len as f64 / 1e9)
            );
            samples[index].push(sample);
        }
    }

    let (md, json) = report(&args, &setups, &samples, &failures, len);
    println!("{md}");
    if args.bench {
        let dir = out_dir(&args);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("loopback.md"), &md)?;
        std::fs::write(dir.join("loopback.json"), &json)?;
        println!("written: {}", dir.join("loopback.{md,json}").display());
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("loopback: tokio runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(bench(args)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("loopback: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
