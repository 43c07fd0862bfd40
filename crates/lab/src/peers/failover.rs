//! `cargo xtask peers failover`: a steady stream over a scenario's paths while one of them dies
//! and comes back (the emulator's timed events), on the namespace testbed (root).
//!
//! ```text
//! cargo xtask peers failover [--scenario pb-high] [--rate-mbps 20] [--runs 10]
//!                            [--down 2s] [--up 5s] [--seconds 7] [--out DIR] [--no-reinjection]
//! ```
//!
//! For each path of the scenario and each run it brings a fresh testbed up whose path goes down
//! in both directions `--down` after the stream's planned start and up again at `--up`, starts
//! the lab's `bulk` as server and client (the client writes `--rate-mbps` for `--seconds`), and
//! reads the server's JSON line: the longest time the receiving application got no byte, when
//! each path carried stream bytes, and the bytes it received twice. The stream starts
//! `LEAD` after the testbed is up; times in the report count from the server's session
//! start, and the events are placed on that clock from the wall clock of both. Writes
//! `OUT/failover.jsonl` (a line per run) and `OUT/failover.md`.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use mpquic_netns::topology::Side;
use mpquic_scenario::events::{EventAction, TimedEvent};
use mpquic_scenario::Scenario;
use serde_json::{json, Value};

use super::bed::{addrs, Bed, Proc};
use super::peer::last_json;
use super::write_runs;
use crate::bins::{self, Profile};
use crate::target_dir;
use crate::testbed::catch_signals;
use crate::transfer::unix_ms;
use crate::Failure;

/// How long after the testbed is up the client starts, so that the events fall mid-stream.
const LEAD: Duration = Duration::from_secs(1);

/// How long a server may take to listen.
const READY: Duration = Duration::from_secs(10);

/// The options of `peers failover`.
#[derive(Debug, Args)]
pub struct FailoverArgs {
    /// The scenario preset.
    #[arg(long, default_value = "pb-high")]
    scenario: String,
    /// The stream's rate.
    #[arg(long, default_value_t = 20.0)]
    rate_mbps: f64,
    /// How long the stream lasts at that rate.
    #[arg(long, default_value_t = 7.0)]
    seconds: f64,
    /// When the path goes down, in seconds after the stream's planned start.
    #[arg(long, default_value_t = 2.0)]
    down: f64,
    /// When it comes back up (seconds after the stream's planned start).
    #[arg(long, default_value_t = 5.0)]
    up: f64,
    /// Runs per dying path.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100))]
    runs: u32,
    /// Both ends without re-injection (`--no-reinjection` of the bulk example).
    #[arg(long)]
    no_reinjection: bool,
    /// Where failover.jsonl and failover.md go (default: target/failover).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Runs `cargo xtask peers failover`.
pub fn run(args: &FailoverArgs) -> Result<ExitCode, Failure> {
    let scenario = Scenario::by_name(&args.scenario).map_err(|e| Failure::Usage(e.to_string()))?;
    if !(args.down > 0.0 && args.up > args.down && args.seconds > 0.0 && args.rate_mbps > 0.0) {
        return Err(Failure::Usage(
            "need 0 < --down < --up, and a positive --seconds and --rate-mbps".to_owned(),
        ));
    }
    catch_signals()?;
    let bulk = bins::build("bulk", Profile::Release).map_err(Failure::Testbed)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| target_dir().join("failover"));
    std::fs::create_dir_all(&out).map_err(|e| Failure::Testbed(e.to_string()))?;
    let mut lines = Vec::new();
    for run in 0..args.runs {
        for dies in 0..scenario.paths.len() {
            match one_run(args, scenario, &bulk, &out, dies, run) {
                Ok(line) => {
                    eprintln!(
                        "path {dies} dies, run {run}: longest gap {:.1} ms, back after {}",
                        line["longest_gap_ms"].as_f64().unwrap_or(f64::NAN),
                        line["back_after_ms"]
                            .as_f64()
                            .map_or("never".to_owned(), |ms| format!("{ms:.0} ms")),
                    );
                    lines.push(line);
                }
                Err(e) => {
                    eprintln!("path {dies} dies, run {run}: failed: {e}");
                    lines.push(json!({ "dies": dies, "run": run, "error": e }));
                }
            }
            if crate::testbed::stop_signal().is_some() {
                break;
            }
        }
    }
    write_runs(&out, "failover", &lines, &report(args, scenario, &lines))
}

/// One run with path `dies` going down and up; the server's line plus what it says of the
/// events.
fn one_run(
    args: &FailoverArgs,
    scenario: &'static Scenario,
    bulk: &std::path::Path,
    out: &std::path::Path,
    dies: usize,
    run: u32,
) -> Result<Value, String> {
    let secs = Duration::from_secs_f64;
    let mut events: Vec<Vec<TimedEvent>> = vec![Vec::new(); scenario.paths.len()];
    events[dies] = vec![
        TimedEvent {
            at: LEAD + secs(args.down),
            action: EventAction::Down,
        },
        TimedEvent {
            at: LEAD + secs(args.up),
            action: EventAction::Up,
        },
    ];
    let scratch = out.join(format!("scratch-{}-{dies}-{run}", std::process::id()));
    let bed = Bed::up_with(scenario, &events, 0, scratch)?;
    // The links' clock zero on the wall clock.
    let bed_up = unix_ms() - bed.started().elapsed().as_secs_f64() * 1e3;
    let port = 4433;
    let join = |items: Vec<String>| items.join(",");
    let servers = join(
        (0..scenario.paths.len())
            .map(|k| format!("{}:{port}", addrs(k).1))
            .collect(),
    );
    let clients = join(
        (0..scenario.paths.len())
            .map(|k| format!("{}:0", addrs(k).0))
            .collect(),
    );
    let cert = bed.scratch().join("cert.der");
    let size = (args.rate_mbps * 1e6 / 8.0 * args.seconds) as u64;
    let timeout = format!("{}s", (args.seconds * 3.0 + 30.0) as u64);
    let common = |command: &mut std::process::Command| {
        command
            .arg("--cert")
            .arg(&cert)
            .args(["--timeout", &timeout]);
        if args.no_reinjection {
            command.arg("--no-reinjection");
        }
    };
    let mut server = bed.exec(Side::Server, bulk);
    server.args(["--role", "server", "--local", &servers, "--sessions", "1"]);
    common(&mut server);
    let mut server = Proc::spawn(server, "bulk server")?;
    server.wait_for("listening", READY)?;
    let start_at = bed_up + LEAD.as_secs_f64() * 1e3;
    let wait = start_at - unix_ms();
    if wait > 0.0 {
        std::thread::sleep(Duration::from_secs_f64(wait / 1e3));
    }
    let mut client = bed.exec(Side::Client, bulk);
    client.args([
        "--role", "client", "--local", &clients, "--remote", &servers,
    ]);
    client.args([
        "--size",
        &size.to_string(),
        "--rate-mbps",
        &args.rate_mbps.to_string(),
    ]);
    common(&mut client);
    let limit = secs(args.seconds * 3.0 + 40.0);
    let (client_out, _) = Proc::spawn(client, "bulk client")?.finish(limit)?;
    let client_line = last_json(&client_out, "bulk client")?;
    let (server_out, _) = server.finish(secs(10.0))?;
    let mut line = last_json(&server_out, "bulk server")?;
    // What the emulated queues dropped: a returning path's start overflowing its queue shows
    // here, apart from what the outage itself dropped.
    let queue_drops: Vec<u64> = bed
        .stats()
        .iter()
        .map(|s| s.uplink.dropped_queue + s.downlink.dropped_queue)
        .collect();
    bed.down()?;
    // The events on the server's session clock.
    let session_start = line["start_unix_ms"].as_f64().ok_or("no start_unix_ms")?;
    let down_ms = start_at + args.down * 1e3 - session_start;
    let up_ms = start_at + args.up * 1e3 - session_start;
    let back_after = back_after_ms(&line["path_activity_ms"], down_ms, up_ms);
    let joined_after = joined_after_ms(&line["path_joined_ms"], up_ms);
    line["dies"] = json!(dies);
    line["run"] = json!(run);
    line["down_ms"] = json!(down_ms);
    line["up_ms"] = json!(up_ms);
    line["back_after_ms"] = json!(back_after);
    line["joined_after_ms"] = json!(joined_after);
    line["queue_drops"] = json!(queue_drops);
    line["intact"] = client_line["sha256_match"].clone();
    line["client"] = client_line;
    Ok(line)
}

/// How long after `up_ms` a path that had been silent since `down_ms` carried bytes again: the
/// first activity interval starting after `up_ms` on a path (an id) with none between the
/// two events; `None` if none did.
fn back_after_ms(activity: &Value, down_ms: f64, up_ms: f64) -> Option<f64> {
    let paths = activity.as_object()?;
    paths
        .values()
        .filter_map(|intervals| {
            let intervals: Vec<(f64, f64)> = intervals
                .as_array()?
                .iter()
                .filter_map(|i| Some((i.get(0)?.as_f64()?, i.get(1)?.as_f64()?)))
                .collect();
            // Silent during the outage (allowing what was in flight at its start)...
            let silent = intervals
                .iter()
                .all(|(start, end)| *end <= down_ms + 100.0 || *start >= up_ms);
            // ...and active after it.
            let back = intervals.iter().find(|(start, _)| *start >= up_ms)?;
            silent.then_some(back.0 - up_ms)
        })
        .min_by(f64::total_cmp)
}

/// How long after `up_ms` the server first listed a path that joined after it: the path that
/// came back (a new one, opened again by the client); `None` if none joined.
fn joined_after_ms(joined: &Value, up_ms: f64) -> Option<f64> {
    joined
        .as_object()?
        .values()
        .filter_map(Value::as_f64)
        .filter(|at| *at >= up_ms)
        .map(|at| at - up_ms)
        .min_by(f64::total_cmp)
}

fn report(args: &FailoverArgs, scenario: &Scenario, lines: &[Value]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# Failover: {} Mbit/s over {}, a path down at {} s and up at {} s\n",
        args.rate_mbps, scenario.name, args.down, args.up
    );
    let _ = writeln!(
        out,
        "Re-injection {}. Times from the server's session start; the outage on that clock from \
         both ends' wall clocks. Longest gap: the longest time the receiving application got \
         no byte. Back after: from the path's return until a path silent during the outage \
         carried stream bytes again; joined after: until the server listed the path opened \
         again (both sampled every 10 ms). Queue drops: datagrams the emulated \
         drop-tail queues dropped, both directions, by path.\n",
        if args.no_reinjection { "off" } else { "on" }
    );
    let _ = writeln!(
        out,
        "| dying path | run | intact | longest gap ms | gap from ms | outage ms | joined after ms | back after ms | bytes received twice | queue drops per path |"
    );
    let _ = writeln!(out, "|---|---:|---|---:|---:|---|---:|---:|---:|---|");
    for l in lines {
        let num = |key: &str| {
            l[key]
                .as_f64()
                .map_or("-".to_owned(), |v| format!("{v:.0}"))
        };
        if let Some(e) = l.get("error") {
            let _ = writeln!(
                out,
                "| {} | {} | failed: {e} | | | | | | | |",
                l["dies"], l["run"]
            );
            continue;
        }
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.1} | {} | {}-{} | {} | {} | {} | {} |",
            l["dies"],
            l["run"],
            l["intact"],
            l["longest_gap_ms"].as_f64().unwrap_or(f64::NAN),
            num("longest_gap_from_ms"),
            num("down_ms"),
            num("up_ms"),
            num("joined_after_ms"),
            num("back_after_ms"),
            l["duplicate_bytes"],
            l["queue_drops"],
        );
    }
    for dies in 0..scenario.paths.len() {
        let runs: Vec<&Value> = lines
            .iter()
            .filter(|l| l["dies"] == json!(dies) && l.get("error").is_none())
            .collect();
        let gaps: Vec<f64> = runs
            .iter()
            .filter_map(|l| l["longest_gap_ms"].as_f64())
            .collect();
        let under = gaps.iter().filter(|g| **g < 200.0).count();
        let back: Vec<f64> = runs
            .iter()
            .filter_map(|l| l["back_after_ms"].as_f64())
            .collect();
        let back_in_time = back.iter().filter(|b| **b <= 500.0).count();
        let intact = runs.iter().filter(|l| l["intact"] == json!(true)).count();
        let _ = writeln!(
            out,
            "\n- path {dies} dies: {intact} of {} runs intact; longest gap under 200 ms in {under} \
             (largest {:.1} ms); the path carried data again within 500 ms of its return in \
             {back_in_time}.",
            runs.len(),
            gaps.iter().copied().fold(0.0, f64::max),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The path that came back is the one whose bytes start after the outage, on a path id
    /// silent during it; the join is the first path listed after the return.
    #[test]
    fn the_returning_path_is_found_by_its_join_and_its_first_bytes() {
        let (down, up) = (2000.0, 5000.0);
        let activity = json!({
            "0": [[10.0, 1990.0], [5300.0, 6000.0]],
            "1": [[10.0, 7000.0]],
            "2": [[5150.0, 7000.0]],
        });
        // Path 0 came back too, but path 2 carried bytes sooner.
        assert_eq!(back_after_ms(&activity, down, up), Some(150.0));
        let joined = json!({ "0": 0.0, "1": 0.0, "2": 5040.0 });
        assert_eq!(joined_after_ms(&joined, up), Some(40.0));
        // Nothing joined after the return.
        assert_eq!(joined_after_ms(&json!({ "0": 0.0 }), up), None);
    }
}
