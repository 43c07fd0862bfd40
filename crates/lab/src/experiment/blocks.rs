//! The records of a matrix grouped for its report: a block per (scenario, page), a cell per
//! row of the block, and the formatting the report's tables and file names share.

use mpquic_sched::sim::{oracle, SimConfig, BASELINE};

use super::raw::{Client, PaintRecord};
use super::{Plan, Record, Variant, VariantKind};
use crate::stats::Summary;
use crate::table::summary_cell;

/// One row's measurements in one (scenario, page).
#[derive(Debug, Clone, Default)]
pub struct Cell {
    /// FRT of every successful load, ms.
    pub frt: Vec<f64>,
    /// PLT of every successful load, ms.
    pub plt: Vec<f64>,
    /// Path counts the loads used.
    pub paths: Vec<usize>,
    /// Every object's completion time over every load, ms.
    pub completions: Vec<f64>,
    /// Body bytes of every successful load.
    pub bytes: Vec<u64>,
    /// Stream bytes every successful load received twice (re-injected copies).
    pub duplicate_bytes: Vec<u64>,
    /// Per successful load, summed over its chunks received twice: how long before the
    /// second copy the first came, ms.
    pub first_copy_lead_ms: Vec<f64>,
    /// Per successful load, how many chunks received twice `first_copy_lead_ms` sums.
    pub timed_duplicates: Vec<u64>,
    /// The browser's report of every successful Chromium load.
    pub paint: Vec<PaintRecord>,
    /// Failed loads.
    pub failed: usize,
    /// The first failure.
    pub first_error: Option<String>,
}

impl Cell {
    fn of(records: &[Record], scenario: &str, page: &str, v: &Variant) -> Self {
        let mut cell = Self::default();
        for r in records
            .iter()
            .filter(|r| r.id.scenario == scenario && r.id.page == page && v.matches(&r.id))
        {
            match (&r.report, &r.browser) {
                (_, Some(paint)) => {
                    // A Chromium row: FCP and `load` from the document's request.
                    cell.frt.extend(paint.fcp_from_request());
                    cell.plt.extend(paint.load_from_request());
                    cell.paint.push(paint.clone());
                }
                (Some(report), None) => {
                    cell.frt.push(report.frt_ms);
                    cell.plt.push(report.plt_ms);
                    cell.paths.push(report.paths);
                    cell.bytes.push(report.bytes);
                    cell.duplicate_bytes.push(report.duplicate_bytes);
                    cell.first_copy_lead_ms.push(report.first_copy_lead_ms);
                    cell.timed_duplicates.push(report.timed_duplicates);
                    cell.completions
                        .extend(report.objects.iter().map(|o| o.completed_ms));
                }
                (None, None) => {
                    cell.failed += 1;
                    if cell.first_error.is_none() {
                        cell.first_error.clone_from(&r.error);
                    }
                }
            }
        }
        cell
    }

    /// FRT mean and sd.
    pub fn frt(&self) -> Option<Summary> {
        Summary::of(&self.frt)
    }

    /// PLT mean and sd.
    pub fn plt(&self) -> Option<Summary> {
        Summary::of(&self.plt)
    }

    pub(crate) fn paths_text(&self) -> String {
        let mut p = self.paths.clone();
        p.sort_unstable();
        p.dedup();
        if p.is_empty() {
            return "-".to_owned();
        }
        p.iter().map(usize::to_string).collect::<Vec<_>>().join("/")
    }

    pub(crate) fn runs_text(&self) -> String {
        match self.failed {
            0 => self.frt.len().to_string(),
            f => format!("{} ({f} failed)", self.frt.len()),
        }
    }
}

/// The measurements of one (scenario, page).
pub struct Block {
    /// The scenario.
    pub scenario: &'static mpquic_scenario::Scenario,
    /// The page label.
    pub page: String,
    /// Rows in order.
    pub rows: Vec<(Variant, Cell)>,
    /// The oracle's FRT and PLT bounds, ms.
    pub oracle: Option<(Option<f64>, f64)>,
}

impl Block {
    pub(crate) fn cell(&self, pred: impl Fn(&Variant) -> bool) -> Option<&Cell> {
        self.rows.iter().find(|(v, _)| pred(v)).map(|(_, c)| c)
    }

    /// `scheduler`'s row over every path with the matrix's controller, loaded by `client`.
    pub(crate) fn row(&self, scheduler: &str, client: Client) -> Option<&Cell> {
        self.cell(|v| v.kind == VariantKind::Main && v.scheduler == scheduler && v.client == client)
    }

    /// `scheduler`'s row with the replay client.
    pub(crate) fn main(&self, scheduler: &str) -> Option<&Cell> {
        self.row(scheduler, Client::Replay)
    }

    /// lrf's FRT and PLT means with `client`: what that client's rows are compared with.
    pub(crate) fn baseline(&self, client: Client) -> (Option<f64>, Option<f64>) {
        let base = self.row(BASELINE.name(), client);
        (
            base.and_then(Cell::frt).map(|s| s.mean),
            base.and_then(Cell::plt).map(|s| s.mean),
        )
    }
}

/// Every block of the plan, in order.
pub fn blocks(plan: &Plan, records: &[Record]) -> Vec<Block> {
    let mut out = Vec::new();
    for &scenario in &plan.scenarios {
        let config = SimConfig::from_scenario(scenario);
        for page in &plan.pages {
            let rows = plan
                .variants(scenario.name)
                .into_iter()
                .map(|v| {
                    let cell = Cell::of(records, scenario.name, &page.label, &v);
                    (v, cell)
                })
                .collect();
            let oracle = oracle(&config, &page.sim_page(plan.time_scale, plan.request_order))
                .ok()
                .map(|b| {
                    (
                        b.frt.map(|d| d.as_secs_f64() * 1e3),
                        b.plt.as_secs_f64() * 1e3,
                    )
                });
            out.push(Block {
                scenario,
                page: page.label.clone(),
                rows,
                oracle,
            });
        }
    }
    out
}

/// The table module's "mean ± sd" cell without its column padding.
pub(crate) fn trimmed(s: Option<Summary>) -> String {
    summary_cell(s)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// `s` with every character a file name should not hold replaced by `_`.
pub(crate) fn file_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
