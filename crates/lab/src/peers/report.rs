//! One JSON line per run, and the markdown summary of a `peers bulk` run.

use std::fmt::Write as _;

use mpquic_scenario::Scenario;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::stats::{self, Summary};

/// One bulk transfer, as written to `bulk.jsonl`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// The scenario preset.
    pub scenario: String,
    /// The peer (`mpquic`, `mpquic-single`, `quinn`, `tquic`, `noq`, `mptcp`).
    pub peer: String,
    /// What default and best are chosen within (`mpquic path 1` is its own group).
    pub group: String,
    /// The variant's short label.
    pub variant: String,
    /// Whether this is the group's default configuration.
    pub default: bool,
    /// The flags used.
    pub flags: Value,
    /// Repetition, from 0.
    pub rep: u32,
    /// Paths used (testbed path indices).
    pub paths: Vec<usize>,
    /// `upload` (client to server) or `download` (tquic serves a file).
    pub direction: String,
    /// Bytes asked for.
    pub size: u64,
    /// Whether the transfer completed and was verified.
    pub ok: bool,
    /// Why not, when it did not.
    pub error: Option<String>,
    /// Transfer time by the peer's own clock, seconds.
    pub seconds: Option<f64>,
    /// Goodput, Mbit/s (payload bits over `seconds`).
    pub goodput_mbps: Option<f64>,
    /// The sum of every configured path rate of the scenario, Mbit/s.
    pub sum_rate_mbps: f64,
    /// `goodput_mbps / sum_rate_mbps`.
    pub fraction: Option<f64>,
    /// Goodput over the sum of the rates of the paths this variant used.
    pub fraction_of_used: Option<f64>,
    /// Bytes the emulated links forwarded per path during the run, in the data direction.
    pub forwarded_bytes: Vec<u64>,
    /// Peer-specific output (its JSON line, statistics).
    pub detail: Value,
}

impl Record {
    /// UDP payload bytes the links forwarded per payload byte: what headers, re-sends and
    /// part-filled packets cost on the wire. `None` without forwarded bytes or size.
    pub fn wire_per_payload(&self) -> Option<f64> {
        let forwarded: u64 = self.forwarded_bytes.iter().sum();
        (forwarded > 0 && self.size > 0).then(|| forwarded as f64 / self.size as f64)
    }
}

/// `mean ± sd` with one decimal, or `-`.
fn cell(values: &[f64]) -> String {
    Summary::of(values).map_or_else(
        || "-".to_owned(),
        |s| format!("{:.1} ± {:.1}", s.mean, s.sd),
    )
}

/// `mean% ± sd%`, or `-`.
fn percent(values: &[f64]) -> String {
    match Summary::of(values) {
        Some(s) => format!("{:.1}% ± {:.1}%", s.mean * 100.0, s.sd * 100.0),
        None => "-".to_owned(),
    }
}

/// The rows of one scenario, grouped by (group, variant) in first-seen order.
fn variants(records: &[&Record]) -> Vec<(String, String, Vec<Record>)> {
    let mut out: Vec<(String, String, Vec<Record>)> = Vec::new();
    for r in records {
        match out
            .iter_mut()
            .find(|(g, v, _)| *g == r.group && *v == r.variant)
        {
            Some((_, _, rows)) => rows.push((*r).clone()),
            None => out.push((r.group.clone(), r.variant.clone(), vec![(*r).clone()])),
        }
    }
    out
}

/// The standing queue mpquic's client saw: per path, the mean over the runs of the median
/// smoothed RTT in the transfer's second half divided by the path's minimum RTT (the lab's `bulk`
/// reports both); `-` for peers that do not report it.
fn queue_ratios(rows: &[&Record]) -> String {
    let mut by_path: Vec<(String, Vec<f64>)> = Vec::new();
    for r in rows {
        let Some(paths) = r.detail.get("rtt").and_then(Value::as_object) else {
            continue;
        };
        for (path, rtt) in paths {
            let srtt = rtt.get("srtt_median_ms").and_then(Value::as_f64);
            let min = rtt.get("min_rtt_ms").and_then(Value::as_f64);
            let Some(ratio) = srtt.zip(min).filter(|(_, m)| *m > 0.0).map(|(s, m)| s / m) else {
                continue;
            };
            match by_path.iter_mut().find(|(p, _)| p == path) {
                Some((_, ratios)) => ratios.push(ratio),
                None => by_path.push((path.clone(), vec![ratio])),
            }
        }
    }
    if by_path.is_empty() {
        return "-".to_owned();
    }
    by_path
        .iter()
        .filter_map(|(path, ratios)| stats::mean(ratios).map(|mean| format!("{path}: {mean:.2}")))
        .collect::<Vec<_>>()
        .join(", ")
}

fn fractions(rows: &[Record]) -> Vec<f64> {
    rows.iter()
        .filter(|r| r.ok)
        .filter_map(|r| r.fraction)
        .collect()
}

/// The markdown summary: per scenario, every variant (goodput and fraction of the sum of path
/// rates, mean ± sd over the successful runs), then each peer's default and best.
pub fn markdown(records: &[Record], header: &str) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# Bulk aggregation on the namespace testbed\n");
    md.push_str(header);
    let mut scenarios: Vec<&str> = Vec::new();
    for r in records {
        if !scenarios.contains(&r.scenario.as_str()) {
            scenarios.push(&r.scenario);
        }
    }
    for name in scenarios {
        let rows: Vec<&Record> = records.iter().filter(|r| r.scenario == name).collect();
        let described = Scenario::by_name(name).map_or_else(|_| name.to_owned(), |s| s.to_string());
        let sum = rows.first().map_or(0.0, |r| r.sum_rate_mbps);
        let _ = writeln!(md, "\n## {described}\n");
        let _ = writeln!(md, "Sum of the configured path rates: {sum} Mbit/s.\n");
        let _ = writeln!(
            md,
            "| peer | variant (flags) | ok/runs | goodput Mbit/s | of the sum | of the paths used \
             | wire bytes / payload | sRTT 2nd half / min RTT |"
        );
        let _ = writeln!(md, "|---|---|---|---|---|---|---|---|");
        let grouped = variants(&rows);
        for (group, variant, runs) in &grouped {
            let ok: Vec<&Record> = runs.iter().filter(|r| r.ok).collect();
            let goodput: Vec<f64> = ok.iter().filter_map(|r| r.goodput_mbps).collect();
            let used: Vec<f64> = ok.iter().filter_map(|r| r.fraction_of_used).collect();
            let wire: Vec<f64> = ok.iter().filter_map(|r| r.wire_per_payload()).collect();
            let default = if runs[0].default { " (default)" } else { "" };
            let _ = writeln!(
                md,
                "| {group} | {variant}{default} | {}/{} | {} | {} | {} | {} | {} |",
                ok.len(),
                runs.len(),
                cell(&goodput),
                percent(&fractions(runs)),
                percent(&used),
                stats::mean(&wire).map_or_else(|| "-".to_owned(), |m| format!("{m:.3}")),
                queue_ratios(&ok),
            );
        }
        let _ = writeln!(
            md,
            "\n| peer | default: variant, of the sum | best: variant, of the sum |"
        );
        let _ = writeln!(md, "|---|---|---|");
        let mut groups: Vec<&str> = Vec::new();
        for (group, _, _) in &grouped {
            if !groups.contains(&group.as_str()) {
                groups.push(group);
            }
        }
        for group in groups {
            let mean = |runs: &[Record]| stats::mean(&fractions(runs));
            let shown = |(variant, runs): (&String, &Vec<Record>)| {
                mean(runs).map_or_else(
                    || format!("{variant}: no successful run"),
                    |m| format!("{variant}: {:.1}%", m * 100.0),
                )
            };
            let members: Vec<(&String, &Vec<Record>)> = grouped
                .iter()
                .filter(|(g, _, _)| g == group)
                .map(|(_, v, runs)| (v, runs))
                .collect();
            let default = members
                .iter()
                .find(|(_, runs)| runs[0].default)
                .map_or_else(|| "-".to_owned(), |m| shown(*m));
            let best = members
                .iter()
                .filter(|(_, runs)| mean(runs).is_some())
                .max_by(|a, b| {
                    mean(a.1)
                        .partial_cmp(&mean(b.1))
                        .unwrap_or(std::cmp::Ordering::Equal)
                })
                .map_or_else(|| "-".to_owned(), |m| shown(*m));
            let _ = writeln!(md, "| {group} | {default} | {best} |");
        }
        let failed: Vec<&&Record> = rows.iter().filter(|r| !r.ok).collect();
        if !failed.is_empty() {
            let _ = writeln!(md, "\nFailed runs:\n");
            for r in failed {
                let _ = writeln!(
                    md,
                    "- {} {} rep {}: {}",
                    r.group,
                    r.variant,
                    r.rep,
                    r.error.as_deref().unwrap_or("?")
                );
            }
        }
    }
    md
}
