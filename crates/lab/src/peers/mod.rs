//! `cargo xtask peers bulk`: bulk aggregation of mpquic and the peers a user would pick instead,
//! as real transfers over the namespace testbed's emulated links (needs root).
//!
//! ```text
//! cargo xtask peers bulk [--scenarios pb-low,pb-high,...] [--size 50MB] [--reps 3]
//!                        [--peers mpquic,mpquic-single,quinn,tquic,noq,mptcp]
//!                        [--schedulers priority-bucket,lrf,...] [--defaults-only]
//!                        [--profile release|dev] [--out target/experiment]
//! ```
//!
//! For each scenario it brings a fresh testbed up ([`bed::Bed`]: the topology of
//! `mpquic-netns`, per-path source routing and MPTCP endpoints in the client namespace), runs
//! every variant of every peer `--reps` times (repetition by repetition, so slow drifts of the
//! shared machine spread over all of them), and tears the testbed down, also on an error or on
//! Ctrl-C (SIGINT, SIGTERM, SIGHUP: the run stops, the namespaces go, the summary of what was
//! measured is still written, and the exit code is 128 + the signal). Every process it starts is
//! killed by its own pid if it is still running when its run ends, and every run is bounded: 3
//! times the transfer's time at the configured rates plus 30 s.
//!
//! One JSON line per run goes to `OUT/bulk.jsonl` ([`report::Record`]), the summary to
//! `OUT/bulk.md` and to stdout: goodput in Mbit/s and as a fraction of the sum of the
//! scenario's configured path rates, mean ± sample sd over the successful runs, the UDP payload
//! bytes the emulated links forwarded per payload byte (headers, re-sends, part-filled packets),
//! and per peer its default and its best variant with the flags used. The exit code is 1 when
//! any run failed.
//!
//! The peers and their clocks (each is its own; all count the payload only):
//! - `mpquic`: the lab's `bulk` (split roles, `--local`/`--remote` per path) with every
//!   scheduler and CUBIC (from mpquic's default initial window, 32 packets), and
//!   priority-bucket and lrf with BBR, NewReno, CUBIC from quinn's own 10 packets
//!   (`--initial-window 12000`), and CUBIC without delivery reports (`--no-delivery-reports`, see
//!   `Config::delivery_reports`); client to server, timed from opening the stream to the
//!   server's sha256 answer.
//! - `mpquic-single`: the same over each path alone (priority-bucket, CUBIC).
//! - `quinn`: plain quinn 0.11 over the better path (highest rate), CUBIC (its default), BBR,
//!   NewReno, CUBIC from 32 packets; the harness in [`harness`], same exchange and clock as
//!   mpquic.
//! - `noq`: noq 1.4 (draft-21 multipath) with a path per testbed path, CUBIC (its default),
//!   BBRv3, NewReno, CUBIC from 32 packets; the harness in [`harness`], whose JSON line also
//!   carries noq's view of each path (RTT estimate, acknowledgement frames and datagrams that
//!   arrived on it: noq returns every path's acknowledgements on whichever path it sends on).
//! - `tquic`: `tquic_server`/`tquic_client` of tquic_tools (version [`peer::TQUIC_VERSION`],
//!   installed with `cargo install --locked` into `target/peers/tquic`, once), multipath on
//!   with a local address per path; schedulers minrtt (default), redundant, roundrobin with its
//!   default BBR, and minrtt with CUBIC, BBRv3 and COPA, roundrobin with CUBIC. It downloads a
//!   file (server to client; the links are symmetric), timed by the client's request time, and
//!   the file is checked by sha256.
//! - `mptcp`: Linux MPTCP (the kernel's path manager and default scheduler; a `subflow`
//!   endpoint per further client address), the harness in [`harness`] over `IPPROTO_MPTCP`
//!   sockets with the namespace's default TCP congestion control, and every other of CUBIC,
//!   BBR and Reno set with `TCP_CONGESTION`; same exchange and clock as mpquic, timed from the
//!   established connection.
//!
//! `cargo xtask peers page --scenario S --har FILE [--scheduler ..] [--cc ..]` is tquic's
//! page-level baseline: one page's objects from `tquic_server` to `tquic_client` as
//! concurrent requests on one multipath connection, one `LoadReport`-shaped JSON line (see
//! [`page`]).

mod bed;
mod failover;
mod fairness;
mod harness;
mod page;
mod peer;
mod report;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use mpquic_netns::topology;
use mpquic_scenario::Scenario;
use mpquic_sched::SchedulerKind;

use crate::bins::{self, Profile};
use crate::testbed::{catch_signals, interrupted, stop_signal};
use crate::{target_dir, Failure};
use bed::Bed;
use peer::{Peer, Tools, Variant};
use report::Record;

/// The options of `cargo xtask peers`.
#[derive(Debug, Args)]
pub struct PeersArgs {
    #[command(subcommand)]
    command: PeersCommand,
}

#[derive(Debug, Subcommand)]
enum PeersCommand {
    /// Bulk transfers of every peer over each scenario's emulated paths (root).
    Bulk(BulkArgs),
    /// One recorded page loaded by tquic's client and server over a scenario's paths (root);
    /// prints one LoadReport-shaped JSON line.
    Page(page::PageArgs),
    /// A steady stream while one path dies and comes back, for each path (root).
    Failover(failover::FailoverArgs),
    /// One mpquic path against one kernel TCP flow on the same emulated link (root).
    Fairness(fairness::FairnessArgs),
    /// The plain-quinn and noq bulk harnesses (started by `bulk` inside the testbed).
    #[command(hide = true)]
    Harness(harness::HarnessArgs),
}

/// The options of `peers bulk`.
#[derive(Debug, Args)]
struct BulkArgs {
    /// Scenario presets, comma-separated (default: the eight pb-* and sec-* presets).
    #[arg(long, value_delimiter = ',')]
    scenarios: Vec<String>,
    /// Bytes per transfer: 50MB, 20MiB, 12345.
    #[arg(long, default_value = "50MB", value_parser = parse_size)]
    size: u64,
    /// Repetitions of every variant.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    reps: u32,
    /// Peers, comma-separated: mpquic, mpquic-single, quinn, tquic, noq, mptcp (default: all).
    #[arg(long, value_delimiter = ',')]
    peers: Vec<Peer>,
    /// mpquic's schedulers, comma-separated (default: all).
    #[arg(long, value_delimiter = ',')]
    schedulers: Vec<SchedulerKind>,
    /// Only each peer's default flags (no scheduler and congestion-control exploration).
    #[arg(long)]
    defaults_only: bool,
    /// How to build the bulk binary and the harness binary (the lab's own).
    #[arg(long, value_enum, default_value = "release")]
    profile: Profile,
    /// Where bulk.jsonl and bulk.md go (default: target/experiment).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Runs `cargo xtask peers ...`.
pub fn run(args: &PeersArgs) -> Result<ExitCode, Failure> {
    match &args.command {
        PeersCommand::Bulk(bulk_args) => bulk(bulk_args),
        PeersCommand::Page(page_args) => page::run(page_args),
        PeersCommand::Failover(failover_args) => failover::run(failover_args),
        PeersCommand::Fairness(fairness_args) => fairness::run(fairness_args),
        PeersCommand::Harness(harness_args) => harness::run(harness_args)
            .map(|()| ExitCode::SUCCESS)
            .map_err(Failure::Testbed),
    }
}

/// Writes `OUT/{name}.jsonl` (a line per run) and `OUT/{name}.md` (`report`) and prints the
/// report; the exit code fails if any run did (a line with an `error`).
fn write_runs(
    out: &std::path::Path,
    name: &str,
    lines: &[serde_json::Value],
    report: &str,
) -> Result<ExitCode, Failure> {
    let jsonl: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(out.join(format!("{name}.jsonl")), jsonl)
        .map_err(|e| Failure::Testbed(e.to_string()))?;
    std::fs::write(out.join(format!("{name}.md")), report)
        .map_err(|e| Failure::Testbed(e.to_string()))?;
    println!("{report}");
    let failed = lines.iter().any(|l| l.get("error").is_some());
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `100MB`, `10MiB`, `12345`.
fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("not a size: {text:?} (e.g. 50MB, 20MiB, 12345)"))?;
    let scale: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "kib" => 1 << 10,
        "mib" => 1 << 20,
        "gib" => 1 << 30,
        other => return Err(format!("unknown size unit {other:?} in {text:?}")),
    };
    number
        .checked_mul(scale)
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("size {text:?} out of range"))
}

/// Builds (release) or finds (dev) what the chosen peers run.
fn tools(peers: &[Peer], profile: Profile) -> Result<Tools, Failure> {
    let needs = |p: &[Peer]| peers.iter().any(|x| p.contains(x));
    let binary = |name: &str, needed: bool| {
        if !needed {
            // No peer of this run starts it.
            return Ok(PathBuf::new());
        }
        bins::binary(name, profile).map_err(Failure::Testbed)
    };
    let bulk = binary("bulk", needs(&[Peer::Mpquic, Peer::MpquicSingle]))?;
    let harness = binary("lab", needs(&[Peer::Quinn, Peer::Noq, Peer::Mptcp]))?;
    let tquic = if needs(&[Peer::Tquic]) {
        tquic()
    } else {
        Err("not asked for".to_owned())
    };
    Ok(Tools {
        bulk,
        harness,
        tquic,
    })
}

/// `tquic_server` and `tquic_client`, installed once (pinned, `--locked`) under
/// `target/peers/tquic`; an error carries the end of the build log.
pub(crate) fn tquic() -> Result<(PathBuf, PathBuf), String> {
    let root = target_dir().join("peers").join("tquic");
    let bin = |name: &str| root.join("bin").join(name);
    let found = || bin("tquic_server").is_file() && bin("tquic_client").is_file();
    if !found() {
        eprintln!(
            "installing tquic_tools {} into {} (once; its log: install.log there)",
            peer::TQUIC_VERSION,
            root.display()
        );
        std::fs::create_dir_all(&root).map_err(|e| format!("creating {}: {e}", root.display()))?;
        let log = root.join("install.log");
        let file = std::fs::File::create(&log).map_err(|e| format!("creating log: {e}"))?;
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(&cargo)
            .args([
                "install",
                "--locked",
                "tquic_tools",
                "--version",
                peer::TQUIC_VERSION,
            ])
            .arg("--root")
            .arg(&root)
            .env("CARGO_TARGET_DIR", root.join("build"))
            .stdout(file.try_clone().map_err(|e| e.to_string())?)
            .stderr(file)
            .status()
            .map_err(|e| format!("cannot run cargo install: {e}"))?;
        if !status.success() || !found() {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(8).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            return Err(format!(
                "cargo install tquic_tools {} failed ({status}): {}",
                peer::TQUIC_VERSION,
                tail.join(" | ")
            ));
        }
    }
    Ok((bin("tquic_server"), bin("tquic_client")))
}

/// The scenarios asked for (default: the eight pb-* and sec-* presets).
fn scenarios(names: &[String]) -> Result<Vec<&'static Scenario>, Failure> {
    if names.is_empty() {
        return Ok(Scenario::ALL
            .iter()
            .filter(|s| s.name.starts_with("pb-") || s.name.starts_with("sec-"))
            .collect());
    }
    names
        .iter()
        .map(|n| Scenario::by_name(n).map_err(|e| Failure::Usage(e.to_string())))
        .collect()
}

fn shell(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// The run's bound: 3 times the transfer at the configured rates of the paths used, plus 30 s.
fn limit(scenario: &Scenario, paths: &[usize], size: u64) -> Duration {
    let rate: u64 = paths.iter().map(|&k| scenario.paths[k].rate_bps).sum();
    let ideal = size as f64 * 8.0 / rate.max(1) as f64;
    Duration::from_secs_f64(3.0 * ideal + 30.0)
}

/// One run of one variant, as a record.
fn measure(bed: &Bed, tools: &Tools, variant: &Variant, rep: u32, size: u64, port: u16) -> Record {
    let scenario = bed.scenario();
    let sum_rate: u64 = scenario.paths.iter().map(|p| p.rate_bps).sum();
    let used_rate: u64 = variant
        .paths
        .iter()
        .map(|&k| scenario.paths[k].rate_bps)
        .sum();
    let before = bed.stats();
    let outcome = peer::run(&peer::Job {
        bed,
        tools,
        variant,
        size,
        port,
        limit: limit(scenario, &variant.paths, size),
    });
    let after = bed.stats();
    let forwarded = before
        .iter()
        .zip(&after)
        .map(|(b, a)| {
            if variant.download {
                a.downlink.forwarded_bytes - b.downlink.forwarded_bytes
            } else {
                a.uplink.forwarded_bytes - b.uplink.forwarded_bytes
            }
        })
        .collect();
    let (ok, error, seconds, goodput, detail) = match outcome {
        Ok(m) if m.verified => {
            let g = m.goodput_mbps();
            (true, None, Some(m.seconds), Some(g), m.detail)
        }
        Ok(m) => (
            false,
            Some("the payload did not check out".to_owned()),
            Some(m.seconds),
            Some(m.goodput_mbps()),
            m.detail,
        ),
        Err(e) => (false, Some(e), None, None, serde_json::Value::Null),
    };
    Record {
        scenario: scenario.name.to_owned(),
        peer: variant.peer.name().to_owned(),
        group: variant.group.clone(),
        variant: variant.label.clone(),
        default: variant.default,
        flags: variant.flags.clone(),
        rep,
        paths: variant.paths.clone(),
        direction: if variant.download {
            "download"
        } else {
            "upload"
        }
        .to_owned(),
        size,
        ok,
        error,
        seconds,
        goodput_mbps: goodput,
        sum_rate_mbps: sum_rate as f64 / 1e6,
        fraction: goodput.map(|g| g / (sum_rate as f64 / 1e6)),
        fraction_of_used: goodput.map(|g| g / (used_rate as f64 / 1e6)),
        forwarded_bytes: forwarded,
        detail,
    }
}

fn bulk(args: &BulkArgs) -> Result<ExitCode, Failure> {
    if let Some(why) = topology::unavailable() {
        return Err(Failure::Testbed(format!(
            "peers bulk runs on the namespace testbed, which cannot run here: {why}"
        )));
    }
    let scenarios = scenarios(&args.scenarios)?;
    let peers: Vec<Peer> = if args.peers.is_empty() {
        Peer::ALL.to_vec()
    } else {
        args.peers.clone()
    };
    let schedulers: Vec<String> = if args.schedulers.is_empty() {
        SchedulerKind::ALL.iter().map(|k| k.to_string()).collect()
    } else {
        args.schedulers.iter().map(|k| k.to_string()).collect()
    };
    let tools = tools(&peers, args.profile)?;
    // Before any thread of ours: the signals are blocked in every thread spawned after this.
    catch_signals()?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| target_dir().join("experiment"));
    std::fs::create_dir_all(&out)
        .map_err(|e| Failure::Testbed(format!("cannot create {}: {e}", out.display())))?;
    let jsonl = out.join("bulk.jsonl");
    let mut lines = std::fs::File::create(&jsonl)
        .map_err(|e| Failure::Testbed(format!("cannot create {}: {e}", jsonl.display())))?;
    let started = Instant::now();
    let mut records = Vec::new();
    let mut port: u16 = 20000;
    let mut tcp_cc = String::new();
    'scenarios: for scenario in scenarios {
        let scratch = target_dir().join("peers").join(format!(
            "run-{}-{}",
            std::process::id(),
            scenario.name
        ));
        let bed = Bed::up(scenario, scratch).map_err(Failure::Testbed)?;
        eprintln!("{scenario}: testbed up ({})", bed.client_ns());
        tcp_cc = peer::tcp_cc(&bed);
        let rates: Vec<u64> = scenario.paths.iter().map(|p| p.rate_bps).collect();
        let variants: Vec<Variant> = peers
            .iter()
            .flat_map(|&p| peer::variants(p, &rates, &schedulers, args.defaults_only, &tcp_cc))
            .collect();
        for rep in 0..args.reps {
            for variant in &variants {
                if stop_signal().is_some() {
                    break 'scenarios;
                }
                port = if port >= 60000 { 20000 } else { port + 1 };
                let record = measure(&bed, &tools, variant, rep, args.size, port);
                let shown = record.goodput_mbps.map_or_else(
                    || format!("failed: {}", record.error.as_deref().unwrap_or("?")),
                    |g| {
                        format!(
                            "{g:.1} Mbit/s, {:.1}% of {} Mbit/s{}",
                            record.fraction.unwrap_or(0.0) * 100.0,
                            record.sum_rate_mbps,
                            if record.ok { "" } else { " (not verified)" }
                        )
                    },
                );
                eprintln!(
                    "[{:>5.0}s] {} rep {rep} {} {}: {shown}",
                    started.elapsed().as_secs_f64(),
                    scenario.name,
                    record.group,
                    record.variant
                );
                let line = serde_json::to_string(&record)
                    .map_err(|e| Failure::Testbed(format!("cannot encode a record: {e}")))?;
                writeln!(lines, "{line}")
                    .and_then(|()| lines.flush())
                    .map_err(|e| Failure::Testbed(format!("writing {}: {e}", jsonl.display())))?;
                records.push(record);
                // Let the queues drain before the next transfer.
                std::thread::sleep(Duration::from_millis(300));
            }
        }
        bed.down().map_err(Failure::Testbed)?;
    }
    // A signal may have broken out of the loop with a testbed up: it was dropped (torn down)
    // on the way out of the loop's scope.
    let command: Vec<String> = std::env::args().skip(1).collect();
    let header = format!(
        "Command: `cargo xtask {}` ({} bytes per transfer, {} repetitions), {} on {} ({} CPUs); \
         tquic_tools {}, noq 1.4, quinn 0.11, Linux MPTCP (kernel {}) with TCP congestion control \
         by default `{}`. Real transfers over the emulated links of the namespace \
         testbed (no simulator). Goodput is payload bits over each peer's own transfer time \
         (see `crates/lab/src/peers/mod.rs`); \"of the sum\" divides by the sum of all the \
         scenario's configured path rates, \"of the paths used\" by those of the paths the \
         variant ran over. tquic downloads (server to client), the others upload; the \
         emulated paths are symmetric.\n",
        command.join(" "),
        args.size,
        args.reps,
        shell("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        shell("uname", &["-srm"]),
        shell("nproc", &[]),
        peer::TQUIC_VERSION,
        shell("uname", &["-r"]),
        tcp_cc,
    );
    let md = report::markdown(&records, &header);
    let md_path = out.join("bulk.md");
    std::fs::write(&md_path, &md)
        .map_err(|e| Failure::Testbed(format!("cannot write {}: {e}", md_path.display())))?;
    println!("{md}");
    println!(
        "raw runs: {}\nsummary: {}",
        jsonl.display(),
        md_path.display()
    );
    if let Some(signal) = stop_signal() {
        return Ok(interrupted(signal));
    }
    Ok(if records.iter().all(|r| r.ok) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("50MB"), Ok(50_000_000));
        assert_eq!(parse_size("2MiB"), Ok(2 << 20));
        assert_eq!(parse_size("12345"), Ok(12345));
        assert!(parse_size("0").is_err());
        assert!(parse_size("5 parsecs").is_err());
    }

    #[test]
    fn variants_cover_each_peer_with_one_default_per_group() {
        let rates = [10_000_000, 40_000_000];
        let schedulers: Vec<String> = SchedulerKind::ALL.iter().map(|k| k.to_string()).collect();
        for peer in Peer::ALL {
            for defaults_only in [false, true] {
                let vs = peer::variants(peer, &rates, &schedulers, defaults_only, "bbr");
                assert!(!vs.is_empty(), "{peer}");
                let mut groups: Vec<&str> = vs.iter().map(|v| v.group.as_str()).collect();
                groups.dedup();
                for g in groups {
                    let defaults = vs.iter().filter(|v| v.group == g && v.default).count();
                    assert_eq!(defaults, 1, "{peer} {g}");
                }
            }
        }
        // Plain quinn runs over the better (40 Mbit/s) path.
        let quinn = peer::variants(Peer::Quinn, &rates, &schedulers, true, "bbr");
        assert_eq!(quinn[0].paths, vec![1]);
        let mpquic = peer::variants(Peer::Mpquic, &rates, &schedulers, true, "bbr");
        assert_eq!(mpquic.len(), SchedulerKind::ALL.len());
    }

    #[test]
    fn the_bound_grows_with_the_transfer() {
        let s = Scenario::by_name("pb-high").unwrap();
        // 50 MB at 50 Mbit/s is 8 s: 3 * 8 + 30.
        assert_eq!(limit(s, &[0, 1], 50_000_000), Duration::from_secs(54));
        assert_eq!(limit(s, &[0], 50_000_000), Duration::from_secs(150));
    }
}
