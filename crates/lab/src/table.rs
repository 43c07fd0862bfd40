//! The multi-run table: per scheduler FRT and PLT as mean ± sample standard deviation (ms),
//! the reduction of each mean against lrf's mean, and the oracle's bounds last.

use std::fmt::Write as _;

use mpquic_sched::sim::BASELINE;

use crate::runs::{Measured, Runs};
use crate::stats::{reduction_percent, Summary};

/// Width of a "mean ± sd" cell: `{:>8.1} ± {:>5.1}`.
pub(crate) const CELL: usize = 16;
/// Width of a reduction cell.
pub(crate) const RED: usize = 8;

pub(crate) fn reduction(mean: Option<f64>, base: Option<f64>) -> String {
    match (mean, base) {
        (Some(m), Some(b)) => {
            reduction_percent(m, b).map_or_else(|| "-".to_owned(), |r| format!("{r:+.1}%"))
        }
        _ => "-".to_owned(),
    }
}

pub(crate) fn summary_cell(value: Option<Summary>) -> String {
    value.map_or_else(
        || "-".to_owned(),
        |s| format!("{:>8.1} ± {:>5.1}", s.mean, s.sd),
    )
}

/// A deterministic value: the mean column only, the sd column left blank.
fn exact_cell(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:>8.1}        "))
}

/// Renders `runs` as the table (one line per scheduler, then `oracle`).
pub fn render(runs: &Runs) -> String {
    let base: Option<Measured> = runs
        .rows
        .iter()
        .find(|r| r.kind == BASELINE)
        .and_then(|r| r.outcome.as_ref().ok().copied());
    let base_frt = base.and_then(|b| b.frt).map(|s| s.mean);
    let base_plt = base.map(|b| b.plt.mean);

    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<21} {:>CELL$} {:>RED$} {:>CELL$} {:>RED$}",
        "scheduler", "FRT ms mean ± sd", "vs lrf", "PLT ms mean ± sd", "vs lrf"
    );
    for row in &runs.rows {
        let name = row.kind.name();
        let _ = match &row.outcome {
            Ok(m) => {
                let frt = m.frt.map(|s| s.mean);
                writeln!(
                    out,
                    "{name:<21} {:>CELL$} {:>RED$} {:>CELL$} {:>RED$}",
                    summary_cell(m.frt),
                    reduction(frt, base_frt),
                    summary_cell(Some(m.plt)),
                    reduction(Some(m.plt.mean), base_plt),
                )
            }
            Err(f) => writeln!(
                out,
                "{name:<21} failed in {} of {} runs; first: {}",
                f.failed_runs, runs.runs, f.first
            ),
        };
    }
    let frt = runs.oracle.frt.map(|d| d.as_secs_f64() * 1e3);
    let plt = runs.oracle.plt.as_secs_f64() * 1e3;
    let _ = writeln!(
        out,
        "{:<21} {:>CELL$} {:>RED$} {:>CELL$} {:>RED$}",
        "oracle",
        exact_cell(frt),
        reduction(frt, base_frt),
        exact_cell(Some(plt)),
        reduction(Some(plt), base_plt),
    );
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use mpquic_sched::sim::OracleBound;
    use mpquic_sched::SchedulerKind;

    use super::*;
    use crate::runs::{Failed, RunRow};

    fn measured(frt: f64, plt: f64, sd: f64) -> Measured {
        Measured {
            frt: Some(Summary {
                mean: frt,
                sd,
                n: 10,
            }),
            plt: Summary {
                mean: plt,
                sd,
                n: 10,
            },
        }
    }

    #[test]
    fn rows_reductions_failures_and_oracle() {
        let runs = Runs {
            first_seed: 1,
            runs: 10,
            loads: Vec::new(),
            rows: vec![
                RunRow {
                    kind: SchedulerKind::PriorityBucket,
                    outcome: Ok(measured(100.0, 150.0, 2.24)),
                },
                RunRow {
                    kind: SchedulerKind::Lrf,
                    outcome: Ok(measured(200.0, 200.0, 0.0)),
                },
                RunRow {
                    kind: SchedulerKind::Sec,
                    outcome: Err(Failed {
                        failed_runs: 3,
                        first: "seed 2: scheduler sec panicked: todo".to_owned(),
                    }),
                },
            ],
            oracle: OracleBound {
                objects: Vec::new(),
                frt: Some(Duration::from_millis(50)),
                plt: Duration::from_millis(100),
            },
        };
        let table = render(&runs);
        let expected = "\
scheduler             FRT ms mean ± sd   vs lrf PLT ms mean ± sd   vs lrf
priority-bucket          100.0 ±   2.2   +50.0%    150.0 ±   2.2   +25.0%
lrf                      200.0 ±   0.0    +0.0%    200.0 ±   0.0    +0.0%
sec                   failed in 3 of 10 runs; first: seed 2: scheduler sec panicked: todo
oracle                    50.0           +75.0%    100.0           +50.0%
";
        assert_eq!(table, expected);
    }

    #[test]
    fn no_baseline_means_no_reduction() {
        let runs = Runs {
            first_seed: 1,
            runs: 1,
            loads: Vec::new(),
            rows: vec![RunRow {
                kind: SchedulerKind::RoundRobin,
                outcome: Ok(Measured {
                    frt: None,
                    plt: Summary {
                        mean: 10.0,
                        sd: 0.0,
                        n: 1,
                    },
                }),
            }],
            oracle: OracleBound {
                objects: Vec::new(),
                frt: None,
                plt: Duration::from_millis(5),
            },
        };
        let table = render(&runs);
        let lines: Vec<_> = table.lines().collect();
        assert_eq!(
            lines[1],
            "round-robin                          -        -     10.0 ±   0.0        -"
        );
        assert_eq!(
            lines[2],
            "oracle                               -        -      5.0                -"
        );
    }
}
