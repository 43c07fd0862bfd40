//! The matrix's rows in headless Chromium (`--browser`): every scheduler row and plain quinn
//! loaded by a stock browser through the browser crate's proxy (`page_client --browser`), with
//! the browser's own paint metrics.
//!
//! In the matrix's tables a Chromium row's FRT is its first contentful paint and its PLT its
//! `load` event, both counted from the browser's request for the document, as the replay client
//! counts from its own. What the browser did before that request (starting a renderer, the
//! connection to the proxy) is the browser's, not the transport's. This module keeps what
//! raw.jsonl holds of a browser load, writes the section that sets each Chromium row beside the
//! replay client's row of the same cell, and draws their charts.

use std::fmt::Write as _;

use mpquic_sched::sim::BASELINE;

use super::blocks::{file_name, trimmed, Block, Cell};
use super::raw::{Client, PaintRecord};
use super::{plot, Plan, Variant};
use crate::stats::{reduction_percent, Summary};
use crate::Failure;

/// The replay row a Chromium row is measured beside: the same scheduler (or quinn), replayed.
fn replay_twin<'a>(block: &'a Block, chromium: &Variant) -> Option<&'a Cell> {
    block.cell(|v| {
        v.client == Client::Replay && v.kind == chromium.kind && v.scheduler == chromium.scheduler
    })
}

fn of_paint(cell: &Cell, metric: fn(&PaintRecord) -> Option<f64>) -> Option<Summary> {
    Summary::of(&cell.paint.iter().filter_map(metric).collect::<Vec<_>>())
}

/// The reduction of `row`'s mean against `base`'s, as a table cell.
fn against(row: Option<Summary>, base: Option<Summary>) -> (String, Option<f64>) {
    let r = match (row, base) {
        (Some(row), Some(base)) => reduction_percent(row.mean, base.mean),
        _ => None,
    };
    (r.map_or_else(|| "-".to_owned(), |r| format!("{r:+.1}%")), r)
}

/// Per (scenario, page), each Chromium row's FCP, LCP and `load` with its reductions against
/// lrf in Chromium, beside the replay client's reductions for the same scheduler; then where
/// the two clients agree in sign, and what the browser's request logs showed.
pub fn section(blocks: &[Block]) -> String {
    let mut out = String::from(
        "| scenario / page | row | loads | FCP | FCP − request | vs lrf | replay FRT vs lrf | LCP | load − request | vs lrf | replay PLT vs lrf |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let (mut compared, mut agree) = (0, 0);
    let (mut unknown, mut missing, mut repeated, mut out_of_order, mut loads) = (0, 0, 0, 0, 0);
    for b in blocks {
        let base = b.row(BASELINE.name(), Client::Chromium);
        let replay_base = b.main(BASELINE.name());
        for (v, c) in b.rows.iter().filter(|(v, _)| v.client == Client::Chromium) {
            let replay = replay_twin(b, v);
            let (fcp_vs, fcp_r) = against(c.frt(), base.and_then(Cell::frt));
            let (frt_vs, frt_r) =
                against(replay.and_then(Cell::frt), replay_base.and_then(Cell::frt));
            let (load_vs, _) = against(c.plt(), base.and_then(Cell::plt));
            let (plt_vs, _) = against(replay.and_then(Cell::plt), replay_base.and_then(Cell::plt));
            if v.scheduler != BASELINE.name() {
                if let (Some(a), Some(b)) = (fcp_r, frt_r) {
                    compared += 1;
                    agree += usize::from((a >= 0.0) == (b >= 0.0));
                }
            }
            for p in &c.paint {
                loads += 1;
                unknown += p.unknown;
                missing += p.missing;
                repeated += p.repeated;
                out_of_order += p.out_of_order;
            }
            let _ = writeln!(
                out,
                "| {} / {} | {} | {} | {} | {} | {fcp_vs} | {frt_vs} | {} | {} | {load_vs} | {plt_vs} |",
                b.scenario.name,
                b.page,
                v.scheduler,
                c.paint.len(),
                trimmed(of_paint(c, |p| p.times.fcp_ms)),
                trimmed(c.frt()),
                trimmed(of_paint(c, |p| p.times.lcp_ms)),
                trimmed(c.plt()),
            );
        }
    }
    if loads == 0 {
        return "No browser loads in this matrix (`--browser` adds them).\n".to_owned();
    }
    let _ = writeln!(
        out,
        "\nMilliseconds, mean ± sd. FCP and LCP count from the navigation's start (starting a renderer and connecting to the proxy included); `FCP − request` and `load − request` from the browser's request for the document, as the replay client counts (they are the Chromium rows' FRT and PLT in the tables). `vs lrf`: against lrf in Chromium; `replay ... vs lrf`: the same scheduler's replay row against replay lrf, same cell.\n\n\
         - The two clients agree in the sign of the FRT difference against lrf for {agree} of {compared} (row, cell) pairs.\n\
         - The browser's request logs against the built pages, over {loads} browser loads: {unknown} requests for objects a page lacks, {missing} files never requested, {repeated} requested twice, {out_of_order} requested before their parent had arrived."
    );
    out
}

/// Per page, grouped bars (scenarios along x, one bar per Chromium row, sd as error bars): the
/// browser's FCP and `load` from the request beside the replay client's FRT and PLT of the same
/// rows. Returns (title, file name) of each chart written under the plan's output directory.
pub fn charts(plan: &Plan, blocks: &[Block]) -> Result<Vec<(String, String)>, Failure> {
    let mut written = Vec::new();
    for page in &plan.pages {
        let page_blocks: Vec<&Block> = blocks.iter().filter(|b| b.page == page.label).collect();
        let Some(first) = page_blocks.first() else {
            continue;
        };
        let rows: Vec<&Variant> = first
            .rows
            .iter()
            .filter(|(v, _)| v.client == Client::Chromium)
            .map(|(v, _)| v)
            .collect();
        if rows.is_empty() {
            continue;
        }
        let groups: Vec<String> = page_blocks
            .iter()
            .map(|b| b.scenario.name.to_owned())
            .collect();
        let values = |pick: &dyn Fn(&Block, &Variant) -> Option<Summary>| {
            page_blocks
                .iter()
                .map(|b| {
                    rows.iter()
                        .map(|v| pick(b, v).map(|s| (s.mean, s.sd)))
                        .collect()
                })
                .collect::<Vec<Vec<_>>>()
        };
        let name = format!("bars-chromium-{}.svg", file_name(&page.label));
        let file = plan.out.join(&name);
        let title = format!("{} in headless Chromium and the replay client", page.label);
        plot::bars(
            &file,
            &title,
            &groups,
            &rows.iter().map(|v| v.scheduler.clone()).collect::<Vec<_>>(),
            &[
                (
                    "Chromium FCP from the request (ms)",
                    values(&|b, v| b.cell(|x| x == v)?.frt()),
                ),
                ("replay FRT (ms)", values(&|b, v| replay_twin(b, v)?.frt())),
                (
                    "Chromium load from the request (ms)",
                    values(&|b, v| b.cell(|x| x == v)?.plt()),
                ),
                ("replay PLT (ms)", values(&|b, v| replay_twin(b, v)?.plt())),
            ],
        )
        .map_err(|e| Failure::Experiment(format!("{}: {e}", file.display())))?;
        written.push((title, name));
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use mpquic_browser::PaintTimes;

    use super::*;

    #[test]
    fn a_browser_load_counts_from_its_request_for_the_document() {
        let record = PaintRecord {
            times: PaintTimes {
                request_start_ms: Some(150.0),
                fcp_ms: Some(400.0),
                load_ms: Some(900.0),
                ..PaintTimes::default()
            },
            unknown: 0,
            missing: 0,
            repeated: 0,
            out_of_order: 0,
        };
        assert_eq!(record.fcp_from_request(), Some(250.0));
        assert_eq!(record.load_from_request(), Some(750.0));
        let line = serde_json::to_string(&record).unwrap();
        assert!(line.contains(r#""fcp_ms":400.0"#), "{line}");
        assert_eq!(serde_json::from_str::<PaintRecord>(&line).unwrap(), record);
        let no_paint = PaintRecord {
            times: PaintTimes::default(),
            ..record
        };
        assert_eq!(no_paint.fcp_from_request(), None);
    }
}
