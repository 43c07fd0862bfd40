//! Running every scheduler over one page and scenario, and the FRT/PLT table that compares
//! them with LRF (the mp-quic default the papers measure against) and with the oracle.

use std::fmt::Write as _;
use std::panic::{self, AssertUnwindSafe};
use std::time::Duration;

use super::{oracle, simulate, OracleBound, Page, PageResult, SimConfig, SimError};
use crate::SchedulerKind;

/// One scheduler's run in a [`Comparison`].
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The scheduler.
    pub kind: SchedulerKind,
    /// What it achieved, or why the run failed.
    pub result: Result<PageResult, SimError>,
}

/// Every scheduler's run over one page and configuration, with the oracle's bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// One row per scheduler, in the order asked.
    pub rows: Vec<Row>,
    /// The lower bounds.
    pub oracle: OracleBound,
}

/// The scheduler the table's reductions are measured against.
pub const BASELINE: SchedulerKind = SchedulerKind::Lrf;

/// Runs each of `kinds` over `page` with `config`.
///
/// A scheduler that panics (a bug in it) becomes a failed row with
/// [`SimError::SchedulerPanicked`], so one broken scheduler does not hide the others' results.
/// The panic hook still runs; callers that want quiet output install their own.
///
/// # Errors
/// Only an invalid configuration or page; per-run failures are in the rows.
pub fn compare(
    config: &SimConfig,
    page: &Page,
    kinds: &[SchedulerKind],
) -> Result<Comparison, SimError> {
    let oracle = oracle(config, page)?;
    let rows = kinds
        .iter()
        .map(|&kind| {
            let run =
                panic::catch_unwind(AssertUnwindSafe(|| simulate(config, kind.build(), page)));
            let result = run.unwrap_or_else(|payload| {
                let message = payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "(no message)".to_owned());
                Err(SimError::SchedulerPanicked {
                    name: kind.name().to_owned(),
                    message,
                })
            });
            Row { kind, result }
        })
        .collect();
    Ok(Comparison { rows, oracle })
}

fn millis(value: Duration) -> f64 {
    value.as_secs_f64() * 1e3
}

/// `(baseline - value) / baseline` in percent: positive is faster than the baseline.
pub fn reduction(value: Duration, baseline: Duration) -> Option<f64> {
    let base = baseline.as_secs_f64();
    (base > 0.0).then(|| (base - value.as_secs_f64()) / base * 100.0)
}

impl Comparison {
    /// The row of `kind`, if it was run.
    pub fn row(&self, kind: SchedulerKind) -> Option<&Row> {
        self.rows.iter().find(|r| r.kind == kind)
    }

    fn baseline(&self) -> Option<&PageResult> {
        self.row(BASELINE).and_then(|r| r.result.as_ref().ok())
    }

    /// The table: FRT and PLT in milliseconds per scheduler, their reduction against LRF, and
    /// the oracle's bounds last. Deterministic for a given configuration and page, so it can be
    /// snapshot-tested.
    pub fn render_table(&self) -> String {
        let base = self.baseline();
        let cell = |value: Option<Duration>, of: fn(&PageResult) -> Option<Duration>| {
            let ms = value.map_or_else(|| "-".to_owned(), |v| format!("{:.1}", millis(v)));
            let red = match (value, base.and_then(of)) {
                (Some(v), Some(b)) => {
                    reduction(v, b).map_or_else(|| "-".to_owned(), |r| format!("{r:+.1}%"))
                }
                _ => "-".to_owned(),
            };
            format!("{ms:>9} {red:>9}")
        };
        let frt: fn(&PageResult) -> Option<Duration> = |r| r.frt;
        let plt: fn(&PageResult) -> Option<Duration> = |r| Some(r.plt);
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{:<21} {:>9} {:>9} {:>9} {:>9}",
            "scheduler", "FRT ms", "vs lrf", "PLT ms", "vs lrf"
        );
        for row in &self.rows {
            let _ = match &row.result {
                Ok(r) => writeln!(
                    out,
                    "{:<21} {} {}",
                    row.kind.name(),
                    cell(r.frt, frt),
                    cell(Some(r.plt), plt)
                ),
                Err(e) => writeln!(out, "{:<21} failed: {e}", row.kind.name()),
            };
        }
        let _ = writeln!(
            out,
            "{:<21} {} {}",
            "oracle",
            cell(self.oracle.frt, frt),
            cell(Some(self.oracle.plt), plt)
        );
        out
    }
}
