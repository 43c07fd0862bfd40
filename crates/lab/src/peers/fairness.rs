//! `cargo xtask peers fairness`: one mpquic path against one kernel TCP flow on the same
//! emulated link, on the namespace testbed (root).
//!
//! ```text
//! cargo xtask peers fairness [--scenario pb-low] [--seconds 30] [--runs 3]
//!                            [--cc bbr] [--tcp-cc cubic] [--out DIR]
//! ```
//!
//! Each run brings a fresh testbed of the scenario up and uses its first path only (pb-low's:
//! 25 Mbit/s, 5 ms each way). In the server namespace it starts the lab's `bulk` server and the
//! TCP harness server (`peers harness tcp-server`), then both clients at once (which one is
//! started first alternates by run), each writing for `--seconds` with more bytes than the
//! whole link could carry in that time, so neither runs dry. Both servers report what arrived
//! in each 100 ms ([`crate::transfer::Arrivals`]); the shares are taken over the time both
//! flows were arriving, from the later first byte to the earlier last one, as a whole and in
//! five-second windows. Writes `OUT/fairness.jsonl` (a line per run) and `OUT/fairness.md`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use clap::Args;
use mpquic_netns::topology::Side;
use mpquic_scenario::Scenario;
use serde_json::{json, Value};

use super::bed::{addrs, Bed, Proc};
use super::peer::last_json;
use super::write_runs;
use crate::bins::{self, Profile};
use crate::target_dir;
use crate::testbed::{catch_signals, stop_signal};
use crate::Failure;

/// How long a server may take to listen.
const READY: Duration = Duration::from_secs(10);
/// The windows the timeline of shares is cut into.
const WINDOW_MS: f64 = 5000.0;

/// The options of `peers fairness`.
#[derive(Debug, Args)]
pub struct FairnessArgs {
    /// The scenario preset whose first path both flows share.
    #[arg(long, default_value = "pb-low")]
    scenario: String,
    /// How long both flows write.
    #[arg(long, default_value_t = 30.0)]
    seconds: f64,
    /// Runs, each on a fresh testbed.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: u32,
    /// mpquic's congestion controller (default: the library's).
    #[arg(long, default_value = mpquic_core::CongestionControl::DEFAULT_NAME)]
    cc: String,
    /// The TCP flow's congestion control (TCP_CONGESTION).
    #[arg(long, default_value = "cubic")]
    tcp_cc: String,
    /// Where fairness.jsonl and fairness.md go (default: target/fairness).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Runs `cargo xtask peers fairness`.
pub fn run(args: &FairnessArgs) -> Result<ExitCode, Failure> {
    let scenario = Scenario::by_name(&args.scenario).map_err(|e| Failure::Usage(e.to_string()))?;
    if !(args.seconds.is_finite() && args.seconds >= 1.0 && args.seconds <= 600.0) {
        return Err(Failure::Usage("--seconds: between 1 and 600".to_owned()));
    }
    catch_signals()?;
    let bulk = bins::build("bulk", Profile::Release).map_err(Failure::Testbed)?;
    let lab = bins::build("lab", Profile::Release).map_err(Failure::Testbed)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| target_dir().join("fairness"));
    std::fs::create_dir_all(&out).map_err(|e| Failure::Testbed(e.to_string()))?;
    let mut lines = Vec::new();
    for run in 0..args.runs {
        let line = match one_run(args, scenario, (&bulk, &lab), &out, run) {
            Ok(line) => {
                eprintln!(
                    "run {run}: mpquic {:.1} Mbit/s, TCP {:.1} Mbit/s over {:.1} s together",
                    line["mpquic_mbps"].as_f64().unwrap_or(f64::NAN),
                    line["tcp_mbps"].as_f64().unwrap_or(f64::NAN),
                    line["together_s"].as_f64().unwrap_or(f64::NAN),
                );
                line
            }
            Err(e) => {
                eprintln!("run {run}: failed: {e}");
                json!({ "run": run, "error": e })
            }
        };
        lines.push(line);
        if stop_signal().is_some() {
            break;
        }
    }
    write_runs(&out, "fairness", &lines, &report(args, scenario, &lines))
}

/// One run: both flows at once on a fresh testbed; the servers' lines and the shares.
fn one_run(
    args: &FairnessArgs,
    scenario: &'static Scenario,
    (bulk, lab): (&Path, &Path),
    out: &Path,
    run: u32,
) -> Result<Value, String> {
    let scratch = out.join(format!("scratch-{}-{run}", std::process::id()));
    let bed = Bed::up(scenario, scratch)?;
    let (client, server) = addrs(0);
    let (quic_at, tcp_at) = (format!("{server}:4433"), format!("{server}:5201"));
    let cert = bed.scratch().join("cert.der");
    let link_bps = scenario.paths[0].rate_bps as f64;
    // More than the whole link carries in the time, so that neither flow runs dry.
    let size = (link_bps / 8.0 * args.seconds * 2.0) as u64;
    let duration = format!("{}ms", (args.seconds * 1e3) as u64);
    let limit = Duration::from_secs_f64(args.seconds * 2.0 + 30.0);
    let timeout = format!("{}s", limit.as_secs());

    let quic = |role: &str| {
        let mut command = bed.exec(
            if role == "server" {
                Side::Server
            } else {
                Side::Client
            },
            bulk,
        );
        command
            .args(["--role", role, "--cc", &args.cc, "--timeout", &timeout])
            .arg("--cert")
            .arg(&cert);
        command
    };
    let tcp = |role: &str| {
        let side = if role == "tcp-server" {
            Side::Server
        } else {
            Side::Client
        };
        let mut command = bed.exec(side, lab);
        command.args(["peers", "harness", role, "--cc", &args.tcp_cc]);
        command
    };
    let mut quic_server = quic("server");
    quic_server.args(["--local", &quic_at, "--sessions", "1"]);
    let mut quic_server = Proc::spawn(quic_server, "bulk server")?;
    quic_server.wait_for("listening", READY)?;
    let mut tcp_server = tcp("tcp-server");
    tcp_server.args(["--listen", &tcp_at]);
    let mut tcp_server = Proc::spawn(tcp_server, "TCP server")?;
    tcp_server.wait_for("listening", READY)?;

    let mut quic_client = quic("client");
    quic_client.args(["--local", &client.to_string(), "--remote", &quic_at]);
    quic_client.args(["--size", &size.to_string(), "--duration", &duration]);
    let mut tcp_client = tcp("tcp-client");
    tcp_client.args(["--remote", &tcp_at]);
    tcp_client.args(["--size", &size.to_string(), "--duration", &duration]);
    let start = |command: Command, name: &str| Proc::spawn(command, name);
    let quic_first = run.is_multiple_of(2);
    let (quic_client, tcp_client) = if quic_first {
        let q = start(quic_client, "bulk client")?;
        (q, start(tcp_client, "TCP client")?)
    } else {
        let t = start(tcp_client, "TCP client")?;
        (start(quic_client, "bulk client")?, t)
    };
    let (quic_out, _) = quic_client.finish(limit)?;
    let (tcp_out, _) = tcp_client.finish(limit)?;
    let quic_line = last_json(&quic_out, "bulk client")?;
    let tcp_line = last_json(&tcp_out, "TCP client")?;
    let (quic_server_out, _) = quic_server.finish(Duration::from_secs(10))?;
    let (tcp_server_out, _) = tcp_server.finish(Duration::from_secs(10))?;
    let quic_arrivals = last_json(&quic_server_out, "bulk server")?["arrivals"].take();
    let tcp_arrivals = last_json(&tcp_server_out, "TCP server")?["arrivals"].take();
    bed.down()?;

    let quic = Flow::from_json(&quic_arrivals).ok_or("bulk server: no arrivals")?;
    let tcp = Flow::from_json(&tcp_arrivals).ok_or("TCP server: no arrivals")?;
    let from = quic.first_ms.max(tcp.first_ms);
    let to = quic.end_ms().min(tcp.end_ms());
    if to <= from {
        return Err("the two flows never arrived at the same time".to_owned());
    }
    let mbps = |bytes: f64, ms: f64| bytes * 8.0 / (ms * 1e3);
    let (q, t) = (quic.bytes_between(from, to), tcp.bytes_between(from, to));
    let mut windows = Vec::new();
    let mut at = from;
    while at + WINDOW_MS <= to + 1.0 {
        let (q, t) = (
            quic.bytes_between(at, at + WINDOW_MS),
            tcp.bytes_between(at, at + WINDOW_MS),
        );
        windows.push(json!({
            "mpquic_mbps": mbps(q, WINDOW_MS),
            "tcp_mbps": mbps(t, WINDOW_MS),
        }));
        at += WINDOW_MS;
    }
    Ok(json!({
        "run": run,
        "first": if quic_first { "mpquic" } else { "tcp" },
        "link_mbps": link_bps / 1e6,
        "together_s": (to - from) / 1e3,
        "mpquic_mbps": mbps(q, to - from),
        "tcp_mbps": mbps(t, to - from),
        "windows": windows,
        "mpquic_intact": quic_line["sha256_match"],
        "tcp_intact": tcp_line["sha256_match"],
        "mpquic_client": quic_line,
        "tcp_client": tcp_line,
    }))
}

/// One flow's arrivals on the wall clock.
struct Flow {
    first_ms: f64,
    bin_ms: f64,
    bytes: Vec<f64>,
}

impl Flow {
    fn from_json(arrivals: &Value) -> Option<Flow> {
        Some(Flow {
            first_ms: arrivals["first_unix_ms"].as_f64()?,
            bin_ms: arrivals["bin_ms"].as_f64().filter(|b| *b > 0.0)?,
            bytes: arrivals["bytes"]
                .as_array()?
                .iter()
                .map(|b| b.as_f64().unwrap_or(0.0))
                .collect(),
        })
    }

    /// When its last bin ends.
    fn end_ms(&self) -> f64 {
        self.first_ms + self.bin_ms * self.bytes.len() as f64
    }

    /// Bytes that arrived from `from` to `to` (wall clock, ms), each bin counted by the part
    /// of it inside.
    fn bytes_between(&self, from: f64, to: f64) -> f64 {
        self.bytes
            .iter()
            .enumerate()
            .map(|(i, bytes)| {
                let start = self.first_ms + self.bin_ms * i as f64;
                let inside = (to.min(start + self.bin_ms) - from.max(start)).max(0.0);
                bytes * inside / self.bin_ms
            })
            .sum()
    }
}

fn report(args: &FairnessArgs, scenario: &Scenario, lines: &[Value]) -> String {
    let mut out = String::new();
    let path = &scenario.paths[0];
    let link = path.rate_bps as f64 / 1e6;
    let _ = writeln!(
        out,
        "# Fairness: one mpquic path ({}) against one TCP flow ({}) on {}'s first path\n",
        args.cc, args.tcp_cc, scenario.name
    );
    let _ = writeln!(
        out,
        "The link: {link} Mbit/s, {} ms each way, a queue of {} bytes. Both flows write for {} s; rates are what \
         arrived while both were arriving (from the later first byte to the earlier last one). \
         A third of the link is {:.2} Mbit/s.\n",
        path.one_way_delay.as_secs_f64() * 1e3,
        path.default_queue_bytes(),
        args.seconds,
        link / 3.0
    );
    let _ = writeln!(
        out,
        "| run | started first | together s | mpquic Mbit/s | TCP Mbit/s | mpquic share | link used | intact | mpquic Mbit/s per 5 s | TCP Mbit/s per 5 s |"
    );
    let _ = writeln!(out, "|---:|---|---:|---:|---:|---:|---:|---|---|---|");
    let series = |l: &Value, key: &str| {
        l["windows"]
            .as_array()
            .map(|w| {
                w.iter()
                    .map(|w| format!("{:.1}", w[key].as_f64().unwrap_or(f64::NAN)))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default()
    };
    let mut shares = Vec::new();
    for l in lines {
        if let Some(e) = l.get("error") {
            let _ = writeln!(out, "| {} | failed: {e} | | | | | | | | |", l["run"]);
            continue;
        }
        let (q, t) = (
            l["mpquic_mbps"].as_f64().unwrap_or(f64::NAN),
            l["tcp_mbps"].as_f64().unwrap_or(f64::NAN),
        );
        shares.push((q, t));
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} | {q:.2} | {t:.2} | {:.0}% | {:.0}% | {}/{} | {} | {} |",
            l["run"],
            l["first"].as_str().unwrap_or("-"),
            l["together_s"].as_f64().unwrap_or(f64::NAN),
            q / (q + t) * 100.0,
            (q + t) / link * 100.0,
            l["mpquic_intact"],
            l["tcp_intact"],
            series(l, "mpquic_mbps"),
            series(l, "tcp_mbps"),
        );
    }
    let third = link / 3.0;
    let held = shares
        .iter()
        .filter(|(q, t)| *q >= third && *t >= third)
        .count();
    let _ = writeln!(
        out,
        "\nNeither flow below a third of the link in {held} of {} runs.",
        shares.len()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_between_counts_the_part_of_each_bin_inside() {
        let flow = Flow {
            first_ms: 1000.0,
            bin_ms: 100.0,
            bytes: vec![100.0, 200.0, 300.0],
        };
        assert_eq!(flow.end_ms(), 1300.0);
        assert_eq!(flow.bytes_between(0.0, 5000.0), 600.0);
        assert_eq!(flow.bytes_between(1050.0, 1150.0), 50.0 + 100.0);
        assert_eq!(flow.bytes_between(1300.0, 1400.0), 0.0);
    }
}
