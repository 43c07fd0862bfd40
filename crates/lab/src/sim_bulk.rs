//! `cargo xtask sim --bulk SIZE`: one stream of SIZE bytes from the client to the server over
//! a preset's paths on the full-stack simulation (`mpquic_core::sim`), with a size hint, as
//! `cargo xtask peers bulk` sends it on the testbed; per scheduler and seed, the share of the
//! paths' summed rates it got.
//!
//! The transfer is timed from the stream's opening to its last byte read at the server. The
//! testbed's bulk client times until the server's digest is back, one more trip on the
//! server's fastest path: a few milliseconds of a transfer of seconds.

use std::fmt::Write as _;
use std::time::Duration;

use mpquic_core::sim::{emulated_path, Pair, Payload};
use mpquic_core::CongestionControl;
use mpquic_replay::transport_config;
use mpquic_scenario::Scenario;
use mpquic_sched::SchedulerKind;
use serde_json::{json, Map, Value};

use crate::runs::Failed;
use crate::stats::Summary;
use crate::table::{summary_cell, CELL};

/// The largest transfer: the simulation holds the whole payload in memory.
pub const MAX_BULK_BYTES: u64 = 500_000_000;

/// How a bulk run is set up, besides the scheduler and the seed.
#[derive(Debug, Clone)]
pub struct BulkOptions {
    /// Bytes on the stream.
    pub size: u64,
    /// Every path's congestion controller.
    pub cc: CongestionControl,
    /// Both ends re-inject (mpquic's default).
    pub reinjection: bool,
}

/// One transfer that completed.
#[derive(Debug, Clone, PartialEq)]
pub struct BulkLoad {
    /// The scheduler.
    pub kind: SchedulerKind,
    /// The seed of the links and quinn-proto connections.
    pub seed: u64,
    /// From the stream's opening to its last byte read.
    pub seconds: f64,
    /// The goodput as a share of the paths' summed rates, in percent.
    pub share_percent: f64,
    /// Stream bytes the client sent on each path, by path index (re-sends included).
    pub per_path: Vec<u64>,
}

/// One scheduler over all the runs: the share's and the time's mean and sd, or why a run
/// failed.
#[derive(Debug, Clone, PartialEq)]
pub struct BulkRow {
    /// The scheduler.
    pub kind: SchedulerKind,
    /// (share of the summed rates in percent, seconds), or the first failure.
    pub outcome: Result<(Summary, Summary), Failed>,
}

/// Every scheduler's transfers over `runs` seeds from `first_seed`.
#[derive(Debug, Clone, PartialEq)]
pub struct BulkRuns {
    /// One row per scheduler, in the order asked.
    pub rows: Vec<BulkRow>,
    /// Every transfer that completed, by seed, then in the order of the schedulers.
    pub loads: Vec<BulkLoad>,
}

/// Sends `options.size` bytes over `scenario` with each scheduler of `kinds`, `runs` times
/// over the seeds from `first_seed`.
pub fn run(
    scenario: &'static Scenario,
    kinds: &[SchedulerKind],
    options: &BulkOptions,
    first_seed: u64,
    runs: u32,
) -> BulkRuns {
    let data = payload(options.size);
    let mut loads = Vec::new();
    let mut failures: Vec<Vec<String>> = vec![Vec::new(); kinds.len()];
    for i in 0..u64::from(runs.max(1)) {
        let seed = first_seed.wrapping_add(i);
        for (k, kind) in kinds.iter().enumerate() {
            match transfer(scenario, *kind, options, &data, seed) {
                Ok(load) => loads.push(load),
                Err(e) => failures[k].push(format!("seed {seed}: {e}")),
            }
        }
    }
    let rows = kinds
        .iter()
        .zip(failures)
        .map(|(&kind, failed)| BulkRow {
            kind,
            outcome: summarize(kind, &loads, failed),
        })
        .collect();
    BulkRuns { rows, loads }
}

/// The payload every bulk tool sends ([`Payload`], seed 1).
fn payload(size: u64) -> Vec<u8> {
    let mut source = Payload::new(1, size);
    let (mut data, mut block) = (Vec::new(), Vec::new());
    while source.next_block(&mut block) {
        data.extend_from_slice(&block);
    }
    data
}

/// One transfer of `data` on the simulation, seeded from `seed`.
fn transfer(
    scenario: &'static Scenario,
    kind: SchedulerKind,
    options: &BulkOptions,
    data: &[u8],
    seed: u64,
) -> Result<BulkLoad, String> {
    let paths = scenario.paths.len();
    let config = transport_config(kind.name(), paths, &options.cc, true, options.reinjection)
        .map_err(|e| e.to_string())?;
    let links = (0..paths)
        .map(|k| emulated_path(&scenario.paths[k], seed, k))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let mut pair = Pair::new(&config, &config, links, seed).map_err(|e| e.to_string())?;
    if !pair.connect(Duration::from_secs(10)) {
        return Err("paths not up after 10 s".to_owned());
    }
    let (start, now) = (pair.elapsed(), pair.now());
    let stream = pair
        .client
        .core
        .open(true, now)
        .ok_or("no stream to open")?;
    pair.client
        .core
        .set_size_hint(stream, options.size, now)
        .map_err(|e| e.to_string())?;
    // At a tenth of the summed rates it would take this long; slower is a failure.
    let rates: u64 = scenario.paths.iter().map(|p| p.rate_bps).sum();
    let limit = Duration::from_secs_f64(80.0 * options.size as f64 / rates.max(1) as f64 + 10.0);
    let outcome = pair
        .send_stream(stream, data, limit)
        .map_err(|e| e.to_string())?;
    if outcome.received != options.size {
        return Err(format!(
            "{} of {} bytes arrived within {limit:?}",
            outcome.received, options.size
        ));
    }
    let seconds = (outcome.completed_at - start).as_secs_f64();
    Ok(BulkLoad {
        kind,
        seed,
        seconds,
        share_percent: 100.0 * options.size as f64 * 8.0 / seconds / rates as f64,
        per_path: (0..paths as u32).map(|k| outcome.sent_on(k)).collect(),
    })
}

fn summarize(
    kind: SchedulerKind,
    loads: &[BulkLoad],
    failed: Vec<String>,
) -> Result<(Summary, Summary), Failed> {
    if let Some(first) = failed.first() {
        return Err(Failed {
            failed_runs: failed.len(),
            first: first.clone(),
        });
    }
    let mine = loads.iter().filter(|l| l.kind == kind);
    let shares: Vec<f64> = mine.clone().map(|l| l.share_percent).collect();
    let seconds: Vec<f64> = mine.map(|l| l.seconds).collect();
    Summary::of(&shares)
        .zip(Summary::of(&seconds))
        .ok_or_else(|| Failed {
            failed_runs: 0,
            first: "no transfer measured".to_owned(),
        })
}

/// The table: per scheduler the share of the summed rates and the time, mean ± sd.
pub fn render(runs: &BulkRuns) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<21} {:>CELL$} {:>CELL$}",
        "scheduler", "% of rates ± sd", "seconds ± sd"
    );
    for row in &runs.rows {
        let name = row.kind.name();
        let _ = match &row.outcome {
            Ok((share, seconds)) => writeln!(
                out,
                "{name:<21} {:>CELL$} {:>CELL$}",
                summary_cell(Some(*share)),
                seconds_cell(*seconds)
            ),
            Err(f) => writeln!(
                out,
                "{name:<21} failed in {} runs; first: {}",
                f.failed_runs, f.first
            ),
        };
    }
    out
}

fn seconds_cell(s: Summary) -> String {
    format!("{:>8.3} ± {:>5.3}", s.mean, s.sd)
}

/// One JSON object keyed by scheduler name: `{"share_percent", "share_sd", "seconds",
/// "seconds_sd", "runs"}`, or `{"failed_runs", "error"}`.
pub fn to_json(runs: &BulkRuns) -> Value {
    let mut object = Map::new();
    for row in &runs.rows {
        let value = match &row.outcome {
            Ok((share, seconds)) => json!({
                "share_percent": share.mean,
                "share_sd": share.sd,
                "seconds": seconds.mean,
                "seconds_sd": seconds.sd,
                "runs": share.n,
            }),
            Err(f) => json!({ "failed_runs": f.failed_runs, "error": f.first }),
        };
        object.insert(row.kind.name().to_owned(), value);
    }
    Value::Object(object)
}

/// The transfers as CSV: `scheduler,seed,seconds,share_percent,path_bytes` (the per-path
/// bytes joined by `/`).
pub fn loads_csv(runs: &BulkRuns) -> String {
    let mut out = String::from("scheduler,seed,seconds,share_percent,path_bytes\n");
    for load in &runs.loads {
        let per_path: Vec<String> = load.per_path.iter().map(u64::to_string).collect();
        let _ = writeln!(
            out,
            "{},{},{:.6},{:.3},{}",
            load.kind.name(),
            load.seed,
            load.seconds,
            load.share_percent,
            per_path.join("/")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_simulated_bulk_transfer_repeats_exactly_and_uses_both_paths() {
        let scenario = Scenario::by_name("pb-high").unwrap();
        let options = BulkOptions {
            size: 2_000_000,
            cc: CongestionControl::default(),
            reinjection: true,
        };
        let kinds = [SchedulerKind::PriorityBucket, SchedulerKind::Lrf];
        let first = run(scenario, &kinds, &options, 1, 2);
        assert_eq!(first, run(scenario, &kinds, &options, 1, 2));
        assert_eq!(first.loads.len(), 4);
        for load in &first.loads {
            assert!(load.per_path.iter().all(|&b| b > 0), "{load:?}");
            // 2 MB over 50 Mbit/s: the slow start costs a good part, but not most.
            assert!((30.0..100.0).contains(&load.share_percent), "{load:?}");
        }
        let table = render(&first);
        assert!(
            table.contains("priority-bucket") && table.contains("lrf"),
            "{table}"
        );
        assert_eq!(to_json(&first)["lrf"]["runs"], 2);
    }
}
