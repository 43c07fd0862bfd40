//! `summary.md` (the tables), `loads.csv` (one line per load), `report.md` (the tables with the
//! setup, the headline, where PriorityBucket stands, the FLD and MEH rows, the delivery-report
//! ablation, the bulk results of every `bulk.md` found, and the charts), and the SVG charts,
//! from the records of one matrix.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use mpquic_replay::RequestOrder;
use mpquic_sched::sim::BASELINE;
use mpquic_sched::SchedulerKind;

use super::blocks::{blocks, file_name, trimmed, Block, Cell};
use super::browser;
use super::raw::Client;
use super::{plot, Plan, Record, Variant, VariantKind};
use crate::stats::{self, quantile, reduction_percent, Summary};
use crate::table::reduction;
use crate::Failure;

/// What [`write()`] produced.
pub struct Written {
    /// The summary's text (also in summary.md).
    pub summary: String,
    /// Every file written.
    pub files: Vec<PathBuf>,
}

/// The table of one block, in Markdown.
pub fn block_table(block: &Block) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### {} / {}\n", block.scenario.name, block.page);
    let _ = writeln!(out, "{block_scenario}\n", block_scenario = block.scenario);
    let _ = writeln!(
        out,
        "| row | loads | FRT ms (mean ± sd) | FRT vs lrf | PLT ms (mean ± sd) | PLT vs lrf | paths |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---:|");
    for (v, c) in &block.rows {
        let (base_frt, base_plt) = block.baseline(v.client);
        let frt = c.frt();
        let plt = c.plt();
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            v.label(),
            c.runs_text(),
            trimmed(frt),
            reduction(frt.map(|s| s.mean), base_frt),
            trimmed(plt),
            reduction(plt.map(|s| s.mean), base_plt),
            c.paths_text()
        );
    }
    if let Some((frt, plt)) = block.oracle {
        let (base_frt, base_plt) = block.baseline(Client::Replay);
        let _ = writeln!(
            out,
            "| *oracle: the simulator's lower bound, not a measurement* | - | {} | {} | {:.1} | {} | {} |",
            frt.map_or_else(|| "-".to_owned(), |f| format!("{f:.1}")),
            reduction(frt, base_frt),
            plt,
            reduction(Some(plt), base_plt),
            block.scenario.paths.len()
        );
    }
    let failures: Vec<String> = block
        .rows
        .iter()
        .filter_map(|(v, c)| {
            c.first_error
                .as_ref()
                .map(|e| format!("- {}: {} failed; first: {e}", v.label(), c.failed))
        })
        .collect();
    if !failures.is_empty() {
        let _ = writeln!(out, "\nFailures:\n{}", failures.join("\n"));
    }
    out
}

fn pct(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| format!("{v:+.1}%"))
}

/// A change of `new` against `old` in percent, positive when `new` is lower (faster).
fn change(new: Option<Summary>, old: Option<Summary>) -> Option<f64> {
    reduction_percent(new?.mean, old?.mean)
}

/// Where priority-bucket stands against the other schedulers and the oracle.
fn priority_bucket_section(blocks: &[Block]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| scenario / page | PB FRT | best other (FRT) | PB vs best | PB vs worst | PB / oracle FRT | PB PLT | best other (PLT) | PB vs best | PB vs worst | PB / oracle PLT |"
    );
    let _ = writeln!(out, "|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|");
    let mut any = false;
    for b in blocks {
        let Some(pb) = b.main("priority-bucket") else {
            continue;
        };
        let others: Vec<(&str, &Cell)> = b
            .rows
            .iter()
            .filter(|(v, _)| {
                v.is_main_replay()
                    && v.scheduler != "priority-bucket"
                    && v.scheduler != "priority-bucket-paper"
            })
            .map(|(v, c)| (v.scheduler.as_str(), c))
            .collect();
        let side = |metric: fn(&Cell) -> Option<Summary>, bound: Option<f64>| -> [String; 5] {
            let pb_s = metric(pb);
            let mut means: Vec<(&str, f64)> = others
                .iter()
                .filter_map(|(n, c)| metric(c).map(|s| (*n, s.mean)))
                .collect();
            means.sort_by(|a, b| a.1.total_cmp(&b.1));
            let best = means.first();
            let worst = means.last();
            [
                pb_s.map_or_else(|| "-".to_owned(), |s| format!("{:.1}", s.mean)),
                best.map_or_else(|| "-".to_owned(), |(n, m)| format!("{n} {m:.1}")),
                pct(best.and_then(|(_, m)| reduction_percent(pb_s?.mean, *m))),
                pct(worst.and_then(|(_, m)| reduction_percent(pb_s?.mean, *m))),
                match (pb_s, bound) {
                    (Some(s), Some(o)) if o > 0.0 => format!("{:.2}x", s.mean / o),
                    _ => "-".to_owned(),
                },
            ]
        };
        let f = side(Cell::frt, b.oracle.and_then(|o| o.0));
        let p = side(Cell::plt, b.oracle.map(|o| o.1));
        any = true;
        let _ = writeln!(
            out,
            "| {} / {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            b.scenario.name, b.page, f[0], f[1], f[2], f[3], f[4], p[0], p[1], p[2], p[3], p[4]
        );
    }
    if any {
        out
    } else {
        "priority-bucket was not in this matrix.\n".to_owned()
    }
}

/// Every row against lrf, each scenario's pages averaged: the report's headline.
///
/// A cell is the mean over the scenario's pages of (lrf − row) / lrf of the means, so each
/// page weighs the same whatever its size.
pub fn headline_section(plan: &Plan, blocks: &[Block]) -> String {
    let mut labels: Vec<String> = Vec::new();
    for b in blocks {
        for (v, _) in &b.rows {
            if !labels.contains(&v.label()) {
                labels.push(v.label());
            }
        }
    }
    let oracle_label = "*oracle (computed bound)*";
    let mut out = String::new();
    for (metric, pick, bound) in [
        (
            "FRT",
            Cell::frt as fn(&Cell) -> Option<Summary>,
            (|o: (Option<f64>, f64)| o.0) as fn((Option<f64>, f64)) -> Option<f64>,
        ),
        ("PLT", Cell::plt, |o: (Option<f64>, f64)| Some(o.1)),
    ] {
        let _ = writeln!(
            out,
            "{metric} reduction vs lrf, mean over the pages (positive: faster than lrf):
"
        );
        let names: Vec<&str> = plan.scenarios.iter().map(|s| s.name).collect();
        let _ = writeln!(out, "| row | {} |", names.join(" | "));
        let _ = writeln!(out, "|---|{}", "---:|".repeat(names.len()));
        let per_scenario = |value: &dyn Fn(&Block) -> Option<f64>| -> Vec<String> {
            names
                .iter()
                .map(|name| {
                    let values: Vec<f64> = blocks
                        .iter()
                        .filter(|b| b.scenario.name == *name)
                        .filter_map(value)
                        .collect();
                    if values.is_empty() {
                        "-".to_owned()
                    } else {
                        pct(stats::mean(&values))
                    }
                })
                .collect()
        };
        let base = |b: &Block, client| {
            b.row(BASELINE.name(), client)
                .and_then(pick)
                .map(|s| s.mean)
        };
        for label in &labels {
            let cells = per_scenario(&|b: &Block| {
                let (v, cell) = b.rows.iter().find(|(v, _)| v.label() == *label)?;
                reduction_percent(pick(cell)?.mean, base(b, v.client)?)
            });
            let _ = writeln!(out, "| {label} | {} |", cells.join(" | "));
        }
        let cells = per_scenario(&|b: &Block| {
            reduction_percent(b.oracle.and_then(bound)?, base(b, Client::Replay)?)
        });
        let _ = writeln!(out, "| {oracle_label} | {} |\n", cells.join(" | "));
    }
    out
}

/// \[PB\]'s headline against this run: in pb-high and pb-high-lossy, priority-bucket's reductions
/// against lrf, against the best other scheduler of each page and against the worst, each as the
/// largest over the pages (the paper's "up to") and the mean.
pub fn verdict(blocks: &[Block]) -> String {
    let mut out = String::new();
    for scenario in ["pb-high", "pb-high-lossy"] {
        for (metric, pick, paper) in [
            ("FRT", Cell::frt as fn(&Cell) -> Option<Summary>, 34.0),
            ("PLT", Cell::plt, 35.0),
        ] {
            // Per page: PB against lrf, the best and the worst other scheduler.
            let mut vs: [Vec<(f64, &str)>; 3] = Default::default();
            for b in blocks.iter().filter(|b| b.scenario.name == scenario) {
                let Some(pb) = b.main("priority-bucket").and_then(pick) else {
                    continue;
                };
                let others: Vec<f64> = b
                    .rows
                    .iter()
                    .filter(|(v, _)| {
                        v.is_main_replay() && !v.scheduler.starts_with("priority-bucket")
                    })
                    .filter_map(|(_, c)| pick(c).map(|s| s.mean))
                    .collect();
                let lrf = b.main(BASELINE.name()).and_then(pick).map(|s| s.mean);
                let best = others.iter().copied().reduce(f64::min);
                let worst = others.iter().copied().reduce(f64::max);
                for (list, other) in vs.iter_mut().zip([lrf, best, worst]) {
                    if let Some(r) = other.and_then(|o| reduction_percent(pb.mean, o)) {
                        list.push((r, &b.page));
                    }
                }
            }
            let describe = |list: &[(f64, &str)]| -> Option<String> {
                let &(top, page) = list.iter().max_by(|a, b| a.0.total_cmp(&b.0))?;
                let reductions: Vec<f64> = list.iter().map(|(r, _)| *r).collect();
                let mean = stats::mean(&reductions)?;
                Some(format!("up to {top:+.1}% ({page}), mean {mean:+.1}%"))
            };
            let (Some(lrf), Some(best), Some(worst)) =
                (describe(&vs[0]), describe(&vs[1]), describe(&vs[2]))
            else {
                continue;
            };
            let holds = |list: &[(f64, &str)]| list.iter().any(|(r, _)| *r >= paper);
            let reading = match (holds(&vs[1]), holds(&vs[2])) {
                (true, _) => "holds even against the best other scheduler of some page",
                (false, true) => {
                    "holds only against the weakest scheduler of some page, not against the best"
                }
                (false, false) => "does not hold on any page",
            };
            let _ = writeln!(
                out,
                "- {scenario}, {metric}: against lrf {lrf}; against the best other scheduler of each page {best}; against the worst {worst}. The paper's \"up to {paper:.0}% lower\" {reading}."
            );
        }
    }
    if out.is_empty() {
        "No pb-high rows with priority-bucket in this matrix.\n".to_owned()
    } else {
        out
    }
}

/// FLD against cubic and MEH's path count against all paths, per scheduler.
fn extras_section(blocks: &[Block]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| scenario / page | scheduler | FRT cubic | FRT fld | fld vs cubic | PLT cubic | PLT fld | fld vs cubic | MEH paths | FRT auto | auto vs all | PLT auto | auto vs all |"
    );
    let _ = writeln!(
        out,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let mut any = false;
    for b in blocks {
        for (v, _) in b.rows.iter().filter(|(v, _)| v.kind == VariantKind::Fld) {
            let Some(cubic) = b.main(&v.scheduler) else {
                continue;
            };
            let fld = b.cell(|x| x.kind == VariantKind::Fld && x.scheduler == v.scheduler);
            let auto = b.cell(|x| x.kind == VariantKind::Meh && x.scheduler == v.scheduler);
            any = true;
            let _ = writeln!(
                out,
                "| {} / {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                b.scenario.name,
                b.page,
                v.scheduler,
                mean_cell(cubic.frt()),
                mean_cell(fld.and_then(Cell::frt)),
                pct(change(fld.and_then(Cell::frt), cubic.frt())),
                mean_cell(cubic.plt()),
                mean_cell(fld.and_then(Cell::plt)),
                pct(change(fld.and_then(Cell::plt), cubic.plt())),
                auto.map_or_else(|| "-".to_owned(), Cell::paths_text),
                mean_cell(auto.and_then(Cell::frt)),
                pct(change(auto.and_then(Cell::frt), cubic.frt())),
                mean_cell(auto.and_then(Cell::plt)),
                pct(change(auto.and_then(Cell::plt), cubic.plt())),
            );
        }
    }
    if any {
        let _ = writeln!(
            out,
            "\nPositive is faster than the same scheduler with cubic on all paths. MEH paths: the path counts `--paths auto` used."
        );
        out
    } else {
        "No FLD or MEH rows in this matrix (they run in lte and pb-high, with priority-bucket and lrf).\n".to_owned()
    }
}

/// Each ablation row of `kind` in every block, with its block and the same scheduler's main
/// row: (block, variant, without, with).
fn ablations(
    blocks: &[Block],
    kind: VariantKind,
) -> impl Iterator<Item = (&Block, &Variant, &Cell, &Cell)> {
    blocks.iter().flat_map(move |b| {
        b.rows
            .iter()
            .filter(move |(v, _)| v.kind == kind)
            .filter_map(move |(v, without)| Some((b, v, without, b.main(&v.scheduler)?)))
    })
}

/// A mean in ms to one decimal, or "-".
fn mean_cell(s: Option<Summary>) -> String {
    s.map_or_else(|| "-".to_owned(), |s| format!("{:.1}", s.mean))
}

/// Three table cells: the mean without, the mean with, and the change.
fn without_with(without: Option<Summary>, with: Option<Summary>) -> String {
    format!(
        "{} | {} | {}",
        mean_cell(without),
        mean_cell(with),
        pct(change(with, without))
    )
}

/// Each scheduler with delivery reports against the same scheduler without them.
fn delivery_reports_section(blocks: &[Block]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| scenario / page | scheduler | FRT without | FRT with | with vs without | PLT without | PLT with | with vs without |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---:|---:|---:|---:|");
    let mut any = false;
    for (b, v, without, with) in ablations(blocks, VariantKind::NoDeliveryReports) {
        any = true;
        let _ = writeln!(
            out,
            "| {} / {} | {} | {} | {} |",
            b.scenario.name,
            b.page,
            v.scheduler,
            without_with(without.frt(), with.frt()),
            without_with(without.plt(), with.plt()),
        );
    }
    if any {
        let _ = writeln!(
            out,
            "\nPositive: faster with the reports (the default) than without them, same run."
        );
        out
    } else {
        "No rows without delivery reports in this matrix (they run in lte and pb-high, with priority-bucket and lrf).\n".to_owned()
    }
}

/// Each scheduler with re-injection (the default) against the same scheduler without it, with
/// the FRT's tail and the redundant bytes; then, per scenario, PriorityBucket with re-injection
/// against LRF without it (mp-quic's default) averaged over the pages.
fn reinjection_section(blocks: &[Block]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| scenario / page | scheduler | FRT without | FRT with | with vs without | FRT p90 / median, with | PLT without | PLT with | with vs without | bytes received twice | first copy ahead, ms |"
    );
    let _ = writeln!(
        out,
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    let mut headline: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut any = false;
    for (b, v, without, with) in ablations(blocks, VariantKind::NoReinjection) {
        let tail = match (quantile(&with.frt, 0.9), quantile(&with.frt, 0.5)) {
            (Some(p90), Some(median)) if median > 0.0 => format!("{:.2}", p90 / median),
            _ => "-".to_owned(),
        };
        let (twice, bytes) = (
            with.duplicate_bytes.iter().sum::<u64>(),
            with.bytes.iter().sum::<u64>(),
        );
        let redundant = if bytes > 0 {
            format!("{:.2}%", twice as f64 * 100.0 / bytes as f64)
        } else {
            "-".to_owned()
        };
        let timed = with.timed_duplicates.iter().sum::<u64>();
        let ahead = if timed > 0 {
            format!(
                "{:.1}",
                with.first_copy_lead_ms.iter().sum::<f64>() / timed as f64
            )
        } else {
            "-".to_owned()
        };
        any = true;
        let _ = writeln!(
            out,
            "| {} / {} | {} | {} | {} | {} | {} | {} |",
            b.scenario.name,
            b.page,
            v.scheduler,
            without_with(without.frt(), with.frt()),
            tail,
            without_with(without.plt(), with.plt()),
            redundant,
            ahead,
        );
    }
    for b in blocks {
        let pb_with = b.main(SchedulerKind::PriorityBucket.name());
        let lrf_without = b.rows.iter().find(|(v, _)| {
            v.kind == VariantKind::NoReinjection && v.scheduler == SchedulerKind::Lrf.name()
        });
        if let (Some(pb), Some((_, lrf))) = (pb_with, lrf_without) {
            if let Some(reduction) = change(pb.frt(), lrf.frt()) {
                headline.entry(b.scenario.name).or_default().push(reduction);
            }
        }
    }
    if !any {
        return "No rows without re-injection in this matrix (`--reinjection-ablation` adds them).\n"
            .to_owned();
    }
    let _ = writeln!(
        out,
        "\nPositive: faster with re-injection (the default) than without it, same run. Bytes received twice: of the page's body bytes, over every load with re-injection. First copy ahead: for the chunks received twice, how long before the second copy the first came, mean over the chunks of every load with re-injection (what re-injection saved where its copy came first).\n"
    );
    for (scenario, reductions) in headline {
        let _ = writeln!(
            out,
            "- {scenario}: priority-bucket with re-injection against lrf without it, FRT {} on average over {} pages.",
            pct(stats::mean(&reductions)),
            reductions.len()
        );
    }
    out
}

/// `YYYY-MM-DD HH:MM UTC` for a Unix time (Howard Hinnant's civil-from-days).
pub fn utc(unix: u64) -> String {
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        secs / 3600,
        (secs % 3600) / 60
    )
}

/// The machine, for the report.
pub fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map_or_else(|_| "unknown".to_owned(), |s| s.trim().to_owned());
    format!("{cores} cores ({cpu}), Linux {kernel}")
}

/// One line per load of the matrix, FRT and PLT without the per-object detail of raw.jsonl: small
/// enough to commit next to a report, so its means can be recomputed. Every field of the run's
/// identity is a column, so that arms of an ablation (`--reinjection-ablation`) stay apart.
fn loads_csv(records: &[Record]) -> String {
    let mut out = String::from(
        "scenario,page,scheduler,cc,paths,rep,mode,time_scale,client,request_order,delivery_reports,reinjection,frt_ms,plt_ms,paths_used,wall_s,error\n",
    );
    let on_off = |on: bool| if on { "on" } else { "off" };
    for r in records {
        let id = &r.id;
        let one = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v:.1}"));
        let (frt, plt, used) = match (&r.report, &r.browser) {
            (Some(l), _) => (
                one(Some(l.frt_ms)),
                one(Some(l.plt_ms)),
                l.paths.to_string(),
            ),
            (None, Some(p)) => (
                one(p.fcp_from_request()),
                one(p.load_from_request()),
                String::new(),
            ),
            (None, None) => (String::new(), String::new(), String::new()),
        };
        // Quoted, inner quotes doubled (RFC 4180): errors contain commas.
        let error = r
            .error
            .as_deref()
            .map_or_else(String::new, |e| format!("\"{}\"", e.replace('"', "\"\"")));
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{frt},{plt},{used},{:.2},{error}",
            id.scenario,
            id.page,
            id.scheduler,
            id.cc,
            id.paths,
            id.rep,
            id.mode,
            id.time_scale,
            match id.client {
                Client::Replay => "replay",
                Client::Chromium => "chromium",
            },
            match id.request_order {
                RequestOrder::Discovered => "discovered",
                RequestOrder::AllAtOnce => "all-at-once",
            },
            on_off(id.delivery_reports),
            on_off(id.reinjection),
            r.wall_s
        );
    }
    out
}

/// `bulk.md` of `out` and of its direct subdirectories (one per `peers bulk` run), in name order.
fn bulk_reports(out: &std::path::Path) -> Vec<(PathBuf, String)> {
    let mut files = vec![out.join("bulk.md")];
    if let Ok(entries) = std::fs::read_dir(out) {
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        files.extend(dirs.into_iter().map(|d| d.join("bulk.md")));
    }
    files
        .into_iter()
        .filter_map(|f| std::fs::read_to_string(&f).ok().map(|t| (f, t)))
        .collect()
}

/// Writes summary.md, report.md and the charts.
pub fn write(plan: &Plan, records: &[Record], elapsed: Duration) -> Result<Written, Failure> {
    let io = |p: &std::path::Path, e: std::io::Error| {
        Failure::Experiment(format!("{}: {e}", p.display()))
    };
    let blocks = blocks(plan, records);
    let mut files = Vec::new();

    // Charts: per page, FRT and PLT bars per scheduler per scenario; per block, a CDF.
    let mut charts: Vec<(String, String)> = Vec::new();
    let schedulers: Vec<String> = plan
        .schedulers
        .iter()
        .map(|k| k.name().to_owned())
        .collect();
    for page in &plan.pages {
        let page_blocks: Vec<&Block> = blocks.iter().filter(|b| b.page == page.label).collect();
        let groups: Vec<String> = page_blocks
            .iter()
            .map(|b| b.scenario.name.to_owned())
            .collect();
        let values = |metric: fn(&Cell) -> Option<Summary>| -> Vec<Vec<Option<(f64, f64)>>> {
            page_blocks
                .iter()
                .map(|b| {
                    schedulers
                        .iter()
                        .map(|s| b.main(s).and_then(metric).map(|m| (m.mean, m.sd)))
                        .collect()
                })
                .collect()
        };
        let name = format!("bars-{}.svg", file_name(&page.label));
        let file = plan.out.join(&name);
        plot::bars(
            &file,
            &page.label,
            &groups,
            &schedulers,
            &[
                ("FRT (ms)", values(Cell::frt)),
                ("PLT (ms)", values(Cell::plt)),
            ],
        )
        .map_err(|e| Failure::Experiment(format!("{}: {e}", file.display())))?;
        files.push(file);
        charts.push((
            format!(
                "FRT and PLT per scheduler per scenario, {} (mean ± sd)",
                page.label
            ),
            name,
        ));
    }
    if plan.browser {
        for (title, name) in browser::charts(plan, &blocks)? {
            files.push(plan.out.join(&name));
            charts.push((title, name));
        }
    }
    for b in &blocks {
        let series: Vec<(String, Vec<f64>)> = b
            .rows
            .iter()
            .filter(|(v, _)| v.is_main_replay())
            .map(|(v, c)| (v.scheduler.clone(), c.completions.clone()))
            .collect();
        if series.iter().all(|(_, s)| s.is_empty()) {
            continue;
        }
        let name = format!(
            "cdf-{}-{}.svg",
            file_name(b.scenario.name),
            file_name(&b.page)
        );
        let file = plan.out.join(&name);
        plot::cdf(
            &file,
            &format!("stream completion times, {} / {}", b.scenario.name, b.page),
            &series,
        )
        .map_err(|e| Failure::Experiment(format!("{}: {e}", file.display())))?;
        files.push(file);
        charts.push((
            format!(
                "CDF of stream completion times, {} / {}",
                b.scenario.name, b.page
            ),
            name,
        ));
    }

    let loads = records.iter().filter(|r| r.measured()).count();
    let failed = records.len() - loads;
    let run_seconds: f64 = records.iter().map(|r| r.wall_s).sum();
    // First start to last end over the records, whichever invocations made them.
    let first = records.iter().map(|r| r.started_unix).min();
    let last = records
        .iter()
        .map(|r| r.started_unix as f64 + r.wall_s)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    let span = match (first, last) {
        (Some(f), Some(l)) => format!(
            "; the runs span {:.0} s of wall-clock time, from {}",
            (l - f as f64).max(0.0),
            utc(f)
        ),
        _ => String::new(),
    };
    let mut summary = String::new();
    let _ = writeln!(
        summary,
        "# Experiment summary\n\nmode {}, {} rep(s), time scale {}{}, {loads} loads ({failed} failed) in raw.jsonl for this matrix.\n",
        plan.mode, plan.reps, plan.time_scale, order_note(plan.request_order)
    );
    for b in &blocks {
        let _ = writeln!(summary, "{}", block_table(b));
    }

    let mut report = String::new();
    let now = super::unix_now();
    let _ = writeln!(report, "# Page-load experiment\n");
    let _ = writeln!(report, "- Date: {}", utc(now));
    let _ = writeln!(report, "- Machine: {}", machine());
    let _ = writeln!(report, "- Command: `{}`", plan.command);
    let _ = writeln!(report, "- Mode: {}", plan.mode_note);
    let _ = writeln!(
        report,
        "- Matrix: scenarios {}; schedulers {}; {} rep(s) per row asked (the loads column of each table says how many a cell has); rep r of every row draws the links' random loss from seed r (`--loss-seed`), so a cell's loads are independent draws and the rows are compared on the same ones; page_client `--time-scale {}` (0: every sub-resource is requested when its initiator, or the document, has arrived, as in [PB]){}; `--timeout {}` s per load",
        plan.scenarios.iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
        plan.schedulers.iter().map(|k| k.name()).collect::<Vec<_>>().join(", "),
        plan.reps,
        plan.time_scale,
        order_note(plan.request_order),
        plan.timeout
    );
    let _ = writeln!(
        report,
        "- Loads: {loads} measured, {failed} failed, {run_seconds:.0} s of page_client runs in total{span}; this invocation took {:.0} s (runs already in raw.jsonl are not repeated, so a resumed or regenerated report took less).",
        elapsed.as_secs_f64()
    );
    let _ = writeln!(
        report,
        "\n## Headline\n\n{}",
        headline_section(plan, &blocks)
    );
    let _ = writeln!(report, "\n## Pages\n");
    let _ = writeln!(report, "| name | file | content |\n|---|---|---|");
    for p in &plan.pages {
        let _ = writeln!(report, "| {} | {} | {} |", p.label, p.origin, p.describe());
    }
    let _ = writeln!(
        report,
        "\n## How to read the tables\n\n\
         - FRT: the page request to the last byte of the last critical object (document, CSS, blocking JS); PLT: to the last byte of the last object. Mean ± sample sd over the loads, ms.\n\
         - vs lrf: (lrf − x) / lrf of the means; positive is faster than lrf (mp-quic's default).\n\
         - Every row is real HTTP/3 over mpquic (quinn paths) through emulated links, one page_client process per load; the schedulers of one (scenario, page, rep) run back to back, so drift in the machine's load hits them alike.\n\
         - path k alone: mpquic on the scenario's path k only (`--path k`, paths counted from 0 as in the scenario line; with lrf, or the first selected scheduler without it; one path leaves a scheduler nothing to choose).\n\
         - quinn (h3-quinn), better path: plain quinn, HTTP/3 through the h3-quinn crate, on the scenario's better path (highest rate, then lowest RTT): what a user without multipath would run. Same client, same server, same pages; no priority reaches quinn's streams (h3-quinn does not expose them).\n\
         - tquic ... (all at once): tquic_tools' own multipath client and server (`cargo xtask peers page`, netns only) fetching the page's objects as concurrent requests on one connection, the document first in order but not waited for (tquic_client cannot follow an initiator graph), so its FRT and PLT are for a simpler load than the other rows'; no priorities. minrtt + bbr is tquic's default, minrtt + cubic the best of the bulk run. tquic_client starts with its default initial window of 32 packets, as mpquic does (`mpquic::DEFAULT_INITIAL_WINDOW`), plain quinn with 12 000 bytes (10 packets): on pages of a few hundred kB that alone is worth round trips.\n\
         - `+ fld`: `--cc fld` (Moktan et al.'s flow-length dependent controller) at both ends instead of cubic. `paths auto (MEH)`: `--paths auto`, MEH's model picks the path count from the page size and the paths' configured RTT and rate.\n\
         - ... in Chromium (`--browser`): the same row loaded by headless Chromium (Debian's `chromium`, a fresh profile per load) through the browser crate's proxy, which turns the browser's requests into HTTP/3 over the row's transport with the browser's priorities. Its FRT is the browser's first contentful paint and its PLT the browser's `load` event, both counted from the browser's request for the document; its `vs lrf` is against lrf in Chromium. The browser requests what its parser finds, so these rows load the page as a browser does, not all at once.\n\
         - *oracle*: `mpquic_sched::sim::oracle`, the simulator's fluid lower bound (no slow start, loss or queueing; every path's full rate from the first byte). It is computed, not measured: no transport could do better, and no scheduler is expected to reach it.\n"
    );
    let _ = writeln!(
        report,
        "## Where PriorityBucket stands\n\n\
         [PB]'s headline: up to 34% lower FRT and 35% lower PLT than the other schedulers in high heterogeneity (pb-high). Here, priority-bucket's mean against the best and the worst of the other schedulers (lrf, sa-ecf, wrr, sec, round-robin; priority-bucket-paper is its own variant), and how far it is from the oracle (PB's mean / the bound):\n"
    );
    let _ = writeln!(report, "{}", priority_bucket_section(&blocks));
    let _ = writeln!(
        report,
        "Against the paper's headline:\n\n{}",
        verdict(&blocks)
    );
    let _ = writeln!(
        report,
        "## FLD and MEH (issue 7)\n\nIn lte ([FLD]'s LTE and 3G links as the two paths) and pb-high:\n"
    );
    let _ = writeln!(report, "{}", extras_section(&blocks));
    let _ = writeln!(
        report,
        "## Delivery reports\n\nmpquic's receiver reports each path's received bytes on the fastest path and the sender credits the path's congestion window with them (`Config::delivery_reports`, on by default); in lte and pb-high each scheduler of the FLD rows also runs without them:\n"
    );
    let _ = writeln!(report, "{}", delivery_reports_section(&blocks));
    let _ = writeln!(
        report,
        "## Re-injection\n\nBytes in flight on one path sent again on another: an urgent stream's lost bytes where another path delivers sooner, within a budget, and everything a path that stops acknowledging had in flight (`Config::reinjection`, on by default). With `--reinjection-ablation` every scheduler also runs without it:\n"
    );
    let _ = writeln!(report, "{}", reinjection_section(&blocks));
    if plan.browser {
        let _ = writeln!(
            report,
            "## In the browser\n\nEvery scheduler row and plain quinn, also loaded by headless Chromium through the browser crate's proxy (`--browser`), with the browser's own paint metrics:\n"
        );
        let _ = writeln!(report, "{}", browser::section(&blocks));
    }
    let _ = writeln!(report, "## Tables\n");
    for b in &blocks {
        let _ = writeln!(report, "{}", block_table(b));
    }
    let bulk = bulk_reports(&plan.out);
    if bulk.is_empty() {
        let _ = writeln!(
            report,
            "## Bulk aggregation\n\nNot in this report: no bulk.md in {} or its subdirectories (`cargo xtask peers bulk --out DIR` writes one).\n",
            plan.out.display()
        );
    }
    for (file, text) in bulk {
        let _ = writeln!(
            report,
            "## Bulk aggregation (from `cargo xtask peers bulk`, {})\n\n{}\n",
            file.display(),
            // One level down: the bulk report's own headings become subsections.
            text.trim()
                .replace("\n## ", "\n### ")
                .replacen("# ", "### ", 1)
        );
    }
    let _ = writeln!(report, "## Charts\n");
    for (title, name) in &charts {
        let _ = writeln!(report, "### {title}\n\n![{title}]({name})\n");
    }
    let _ = writeln!(
        report,
        "## Caveats\n\n\
         - {} shares its cores with whatever else runs on the machine; the emulated links run in software on the same cores, so CPU contention adds delay and noise that the papers' testbeds did not have.\n\
         - With few reps the sd is a rough figure; differences smaller than the sd are not evidence of anything.\n",
        machine()
    );

    let loads_file = plan.out.join("loads.csv");
    std::fs::write(&loads_file, loads_csv(records)).map_err(|e| io(&loads_file, e))?;
    files.push(loads_file);

    let summary_file = plan.out.join("summary.md");
    std::fs::write(&summary_file, &summary).map_err(|e| io(&summary_file, e))?;
    let report_file = plan.out.join("report.md");
    std::fs::write(&report_file, &report).map_err(|e| io(&report_file, e))?;
    files.insert(0, report_file);
    files.insert(0, summary_file);
    Ok(Written { summary, files })
}

/// What the summary and the report say of the request order: nothing for the browser's.
fn order_note(order: RequestOrder) -> &'static str {
    match order {
        RequestOrder::Discovered => "",
        RequestOrder::AllAtOnce => {
            ", every object requested at once (`--all-at-once`, as tquic's row loads a page)"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(utc(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc(1_795_312_800 + 76_800), "2026-11-22 23:20 UTC");
    }

    /// The arms of an ablation are told apart in loads.csv, and every line has the header's
    /// columns.
    #[test]
    fn loads_csv_keeps_the_arms_of_an_ablation_apart() {
        let line = |extra: &str| {
            serde_json::from_str::<Record>(&format!(
                r#"{{"scenario":"pb-high","page":"bing-2013","scheduler":"lrf","cc":"bbr","paths":"all","rep":0,"mode":"netns","time_scale":0.0{extra},"started_unix":1,"wall_s":0.5,"error":"a, b"}}"#
            ))
            .unwrap()
        };
        let records = [
            line(""),
            line(r#","reinjection":false"#),
            line(r#","request_order":"all-at-once","delivery_reports":false"#),
        ];
        let csv = loads_csv(&records);
        let mut lines = csv.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
        let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
        for row in &rows {
            // The error's comma is quoted and splits in two here.
            assert_eq!(row.len(), header.len() + 1, "{row:?}");
        }
        let of = |name: &str| rows.iter().map(|r| r[column(name)]).collect::<Vec<_>>();
        assert_eq!(of("reinjection"), ["on", "off", "on"]);
        assert_eq!(of("delivery_reports"), ["on", "on", "off"]);
        assert_eq!(
            of("request_order"),
            ["discovered", "discovered", "all-at-once"]
        );
    }

    #[test]
    fn file_names_are_safe() {
        assert_eq!(file_name("pb-high/x y.har"), "pb-high_x_y.har");
    }
}
