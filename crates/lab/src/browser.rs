//! `cargo xtask browser` and `cargo xtask demo --browser`: recorded pages loaded by headless
//! Chromium over mpquic (and over plain quinn, the single-path baseline), with the browser's
//! own paint metrics beside the replay client's FRT and PLT for the same cells.
//!
//! Every (scenario, page, rep) loads the page once per row in turn (each scheduler, then
//! quinn), first in the browser, then with the replay client (`time_scale` 0, as the
//! experiment), so drift in the machine's load spreads over every row and both clients. Each
//! load appends one JSON line to `raw.jsonl` under the output directory (default
//! `target/browser/`); `report.md` has, per scenario and page, each row's FCP, LCP and load
//! (mean ± sd) with the reduction against lrf, and the replay client's FRT and PLT, and per page
//! the experiment's bar charts (`bars-{page}.svg`).

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use mpquic_browser::{load_in_browser, BrowserLoad, BrowserOptions, Chromium, PaintTimes, Site};
use mpquic_replay::{load_page, LoadReport, Mode, RunConfig, Transport};
use serde::{Deserialize, Serialize};

use crate::experiment::pages::{self, PageRef};
use crate::experiment::plot;
use crate::experiment::report::file_name;
use crate::stats::Summary;
use crate::table::{reduction, summary_cell, CELL, RED};
use crate::{bins, Failure};

/// The rows of the issue: three schedulers and the plain-quinn baseline.
pub const DEFAULT_ROWS: &[&str] = &["priority-bucket", "lrf", "sec", "quinn"];
/// The issue's presets.
pub const DEFAULT_SCENARIOS: &[&str] = &["pb-low", "pb-high", "pb-high-lossy"];
/// Loads per cell.
pub const DEFAULT_REPS: u32 = 10;
/// The row every other is compared with.
const BASE_ROW: &str = "lrf";

/// The options of `cargo xtask browser`.
#[derive(Debug, Args)]
pub struct BrowserArgs {
    /// Pages: names of pages/NAME.har (or the experiment's names), HAR files or directories.
    #[arg(long, value_delimiter = ',', num_args = 1.., default_value = "youtube-2013")]
    pages: Vec<String>,
    /// Rows: schedulers and `quinn`, comma-separated.
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    rows: Vec<String>,
    /// Scenario presets, comma-separated.
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    scenarios: Vec<String>,
    /// Loads per (scenario, page, row) and client.
    #[arg(long, default_value_t = DEFAULT_REPS, value_parser = clap::value_parser!(u32).range(1..=1000))]
    reps: u32,
    /// Seconds one load may take.
    #[arg(long, default_value_t = 60.0)]
    timeout: f64,
    /// Output directory (default: target/browser).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Load nothing: write the report and charts from what raw.jsonl already holds for these
    /// pages, rows, scenarios and mode.
    #[arg(long)]
    report_only: bool,
    /// loopback (relays on 127.0.0.x, no root) or netns (root: the namespace testbed, with the
    /// server and the browser or the replay client in their namespaces, each load one run of
    /// `page_client`).
    #[arg(long, default_value = "loopback")]
    mode: Mode,
}

/// One load, as `raw.jsonl` holds it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BrowserRecord {
    /// Scenario.
    pub scenario: String,
    /// Page label.
    pub page: String,
    /// Scheduler or `quinn`.
    pub row: String,
    /// Repetition, from 0.
    pub rep: u32,
    /// `chromium` or `replay`.
    pub client: String,
    /// `loopback` or `netns` (loopback in records written before the field was).
    #[serde(default = "loopback")]
    pub mode: String,
    /// The browser's milestones; for the replay client only `load_ms`, its PLT.
    #[serde(flatten)]
    pub times: PaintTimes,
    /// The replay client's FRT (last critical object).
    pub frt_ms: Option<f64>,
    /// Objects the browser asked for that the page does not have.
    pub unknown: usize,
    /// The browser's request log against the built page ([`Site::check_order`]): files it
    /// never requested, requested more than once, or before their parent had arrived.
    pub missing: usize,
    /// Files requested more than once.
    pub repeated: usize,
    /// Files requested before the file that references them had arrived.
    pub out_of_order: usize,
    /// Why the load failed, if it did.
    pub error: Option<String>,
}

fn loopback() -> String {
    Mode::Loopback.name().to_owned()
}

impl BrowserRecord {
    fn new(run: &RunConfig, page: &str, row: &str, rep: u32, client: &str) -> Self {
        Self {
            scenario: run.scenario.name.to_owned(),
            page: page.to_owned(),
            row: row.to_owned(),
            rep,
            client: client.to_owned(),
            mode: run.mode.name().to_owned(),
            times: PaintTimes::default(),
            frt_ms: None,
            unknown: 0,
            missing: 0,
            repeated: 0,
            out_of_order: 0,
            error: None,
        }
    }

    /// The record of a browser load of `site`, or of why it failed.
    fn browser(mut self, outcome: Result<BrowserLoad, String>, site: &Site) -> Self {
        let load = match outcome {
            Ok(load) => load,
            Err(e) => {
                self.error = Some(e);
                return self;
            }
        };
        let paint = &load.paint;
        let order = site.check_order(&paint.resources);
        self.missing = order.missing.len();
        self.repeated = order.repeated.len();
        self.out_of_order = order.out_of_order.len();
        self.times = paint.times.clone();
        self.unknown = load.proxy.unknown.len();
        self
    }

    /// The record of a replay load, or of why it failed.
    fn replay(mut self, outcome: Result<LoadReport, String>) -> Self {
        match outcome {
            Ok(report) => {
                self.frt_ms = Some(report.frt_ms);
                self.times.load_ms = Some(report.plt_ms);
            }
            Err(e) => self.error = Some(e),
        }
        self
    }
}

/// The run configuration of `row` in `scenario` for repetition `rep`, whose loads draw the
/// links' random loss from seed `rep` in every row and with both clients, as the experiment's
/// do.
fn run_config(
    row: &str,
    scenario: &str,
    timeout: Duration,
    mode: Mode,
    rep: u32,
) -> Result<RunConfig, Failure> {
    let quinn = row == Transport::Quinn.name();
    let scheduler = if quinn { BASE_ROW } else { row };
    let mut run = RunConfig::new(scheduler, scenario).map_err(|e| Failure::Usage(e.to_string()))?;
    if quinn {
        run.transport = Transport::Quinn;
    }
    run.load.timeout = timeout;
    run.load.time_scale = 0.0;
    run.mode = mode;
    run.loss_seed = u64::from(rep);
    Ok(run)
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::Experiment(format!("tokio runtime: {e}")))
}

fn chromium() -> Result<Chromium, Failure> {
    Chromium::find().map_err(|e| Failure::Experiment(e.to_string()))
}

/// Runs `cargo xtask browser`.
pub fn browser(args: &BrowserArgs) -> Result<(), Failure> {
    let root = crate::workspace_root();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| root.join("target/browser"));
    std::fs::create_dir_all(&out)
        .map_err(|e| Failure::Experiment(format!("{}: {e}", out.display())))?;
    let pages = pages::resolve(&args.pages, &root, &out)?;
    let rows = pick(&args.rows, DEFAULT_ROWS);
    let scenarios = pick(&args.scenarios, DEFAULT_SCENARIOS);
    let timeout = Duration::from_secs_f64(args.timeout.max(1.0));
    // Every row parses before the first load.
    for row in &rows {
        for scenario in &scenarios {
            run_config(row, scenario, timeout, args.mode, 0)?;
        }
    }
    let raw = out.join("raw.jsonl");
    let records = if args.report_only {
        recorded(&raw, &pages, &rows, &scenarios, args.mode)?
    } else {
        measure(args, &raw, &pages, &rows, &scenarios, timeout)?
    };
    let mut report = render_report(&records, &rows, args.mode);
    for (page, file) in charts(&records, &rows, &scenarios, &pages, &out)? {
        let _ = write!(report, "\n![{page}]({file})\n");
    }
    let path = out.join("report.md");
    std::fs::write(&path, &report)
        .map_err(|e| Failure::Experiment(format!("{}: {e}", path.display())))?;
    println!("{report}");
    println!("raw loads: {}; report: {}", raw.display(), path.display());
    Ok(())
}

/// Loads every cell `args.reps` times with both clients, appending each load to `raw`.
fn measure(
    args: &BrowserArgs,
    raw: &std::path::Path,
    pages: &[PageRef],
    rows: &[String],
    scenarios: &[String],
    timeout: Duration,
) -> Result<Vec<BrowserRecord>, Failure> {
    let chromium = chromium()?;
    let runtime = runtime()?;
    // netns: each load is one run of page_client, which puts the server and the client in their
    // namespaces.
    let page_client = match args.mode {
        Mode::Netns => Some(
            bins::binary("page_client", bins::Profile::current()).map_err(Failure::Experiment)?,
        ),
        Mode::Loopback => None,
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(raw)
        .map_err(|e| Failure::Experiment(format!("{}: {e}", raw.display())))?;
    let started = Instant::now();
    let mut records = Vec::new();
    for scenario in scenarios {
        for page in pages {
            let site = Arc::new(Site::build(&page.page));
            for warning in &site.warnings {
                eprintln!("{}: {warning}", page.label);
            }
            for rep in 0..args.reps {
                for row in rows {
                    let run = run_config(row, scenario, timeout, args.mode, rep)?;
                    let loads = match &page_client {
                        Some(exe) => both_clients_netns(exe, page, &site, &run, row, rep),
                        None => {
                            runtime.block_on(both_clients(page, &site, &run, row, rep, &chromium))
                        }
                    };
                    for record in loads {
                        let line = serde_json::to_string(&record)
                            .map_err(|e| Failure::Experiment(e.to_string()))?;
                        writeln!(file, "{line}")
                            .map_err(|e| Failure::Experiment(format!("{}: {e}", raw.display())))?;
                        if let Some(error) = &record.error {
                            eprintln!(
                                "{scenario} {} {row} rep {rep} {}: {error}",
                                page.label, record.client
                            );
                        }
                        records.push(record);
                    }
                }
            }
            eprintln!(
                "{scenario} {}: done ({:.0} s so far)",
                page.label,
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(records)
}

/// The loads `raw` holds for these pages, rows and scenarios.
fn recorded(
    raw: &std::path::Path,
    pages: &[PageRef],
    rows: &[String],
    scenarios: &[String],
    mode: Mode,
) -> Result<Vec<BrowserRecord>, Failure> {
    let text = std::fs::read_to_string(raw)
        .map_err(|e| Failure::Experiment(format!("{}: {e}", raw.display())))?;
    let mut records = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let record: BrowserRecord = serde_json::from_str(line)
            .map_err(|e| Failure::Experiment(format!("{} line {}: {e}", raw.display(), n + 1)))?;
        if pages.iter().any(|p| p.label == record.page)
            && rows.contains(&record.row)
            && scenarios.contains(&record.scenario)
            && record.mode == mode.name()
        {
            records.push(record);
        }
    }
    Ok(records)
}

/// One load in the browser and one with the replay client, for the same cell.
async fn both_clients(
    page: &PageRef,
    site: &Arc<Site>,
    run: &RunConfig,
    row: &str,
    rep: u32,
    chromium: &Chromium,
) -> [BrowserRecord; 2] {
    let options = BrowserOptions {
        timeout: run.load.timeout,
        ..BrowserOptions::default()
    };
    let browser = load_in_browser(site, run, chromium, &options).await;
    let replay = load_page(&page.page, run).await;
    [
        BrowserRecord::new(run, &page.label, row, rep, "chromium")
            .browser(browser.map_err(|e| e.to_string()), site),
        BrowserRecord::new(run, &page.label, row, rep, "replay")
            .replay(replay.map_err(|e| e.to_string())),
    ]
}

/// [`both_clients`] in the namespace testbed: `page_client --mode netns`, with `--browser` and
/// without, each one load.
fn both_clients_netns(
    page_client: &std::path::Path,
    page: &PageRef,
    site: &Site,
    run: &RunConfig,
    row: &str,
    rep: u32,
) -> [BrowserRecord; 2] {
    let mut args: Vec<String> = vec![
        "--har".into(),
        page.har.display().to_string(),
        "--scenario".into(),
        run.scenario.name.into(),
        "--mode".into(),
        "netns".into(),
        "--time-scale".into(),
        "0".into(),
        "--timeout".into(),
        run.load.timeout.as_secs_f64().to_string(),
        "--loss-seed".into(),
        run.loss_seed.to_string(),
    ];
    match run.transport {
        Transport::Quinn => args.extend(["--transport".into(), "quinn".into()]),
        Transport::Mpquic => args.extend(["--scheduler".into(), row.to_owned()]),
    }
    let last_line = |browser: bool| -> Result<String, String> {
        let output = std::process::Command::new(page_client)
            .args(&args)
            .args(browser.then_some("--browser"))
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", page_client.display()))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        match stdout.lines().last() {
            Some(line) if output.status.success() => Ok(line.to_owned()),
            _ => Err(format!(
                "page_client failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )),
        }
    };
    let browser = last_line(true)
        .and_then(|l| serde_json::from_str::<BrowserLoad>(&l).map_err(|e| e.to_string()));
    let replay = last_line(false)
        .and_then(|l| serde_json::from_str::<LoadReport>(&l).map_err(|e| e.to_string()));
    [
        BrowserRecord::new(run, &page.label, row, rep, "chromium").browser(browser, site),
        BrowserRecord::new(run, &page.label, row, rep, "replay").replay(replay),
    ]
}

fn pick(given: &[String], default: &[&str]) -> Vec<String> {
    if given.is_empty() {
        default.iter().map(|s| (*s).to_owned()).collect()
    } else {
        given.to_vec()
    }
}

/// One measurement of a record.
type Metric = fn(&BrowserRecord) -> Option<f64>;

/// Per scenario and page, one line per row: the browser's FCP, LCP and load and the replay
/// client's FRT and PLT, each mean ± sd with the reduction against lrf.
fn render_report(records: &[BrowserRecord], rows: &[String], mode: Mode) -> String {
    let mut out = format!("# Pages in headless Chromium over mpquic ({mode})\n\n");
    out.push_str(
        "\
         FCP, LCP and load are the browser's own (PerformanceObserver and navigation timing, \
         from the navigation's start, which includes starting a renderer and connecting to \
         the proxy); `FCP - request` counts from the browser's request for the document, as \
         the replay client counts. FRT and PLT are the replay client's for the same cell \
         (last critical object, last object, from the page request). Milliseconds, mean ± sd; \
         `vs lrf` is the reduction of the mean against lrf's.\n",
    );
    let mut cells: Vec<(&str, &str)> = records
        .iter()
        .map(|r| (r.scenario.as_str(), r.page.as_str()))
        .collect();
    cells.dedup();
    for (scenario, page) in cells {
        let metric =
            |row: &str, client: &str, f: Metric| summary(records, (scenario, page, row, client), f);
        let columns: [(&str, &str, Metric); 6] = [
            ("FCP", "chromium", |r| r.times.fcp_ms),
            ("FCP - request", "chromium", fcp_from_request),
            ("LCP", "chromium", |r| r.times.lcp_ms),
            ("load", "chromium", |r| r.times.load_ms),
            ("replay FRT", "replay", |r| r.frt_ms),
            ("replay PLT", "replay", |r| r.times.load_ms),
        ];
        let in_cell = || {
            records
                .iter()
                .filter(move |r| r.scenario == scenario && r.page == page)
        };
        let failed = in_cell().filter(|r| r.error.is_some()).count();
        let browser_loads = in_cell().filter(|r| r.client == "chromium" && r.error.is_none());
        let (mut unknown, mut missing, mut repeated, mut out_of_order) = (0, 0, 0, 0);
        for r in browser_loads {
            unknown += r.unknown;
            missing += r.missing;
            repeated += r.repeated;
            out_of_order += r.out_of_order;
        }
        let _ = write!(out, "\n## {page} in {scenario}\n\n```\n{:<16}", "row");
        for (name, _, _) in &columns {
            let _ = write!(out, " {name:>CELL$} {:>RED$}", "vs lrf");
        }
        for row in rows {
            let _ = write!(out, "\n{row:<16}");
            for (_, client, f) in &columns {
                let value = metric(row, client, *f);
                let base = metric(BASE_ROW, client, *f).map(|s| s.mean);
                let _ = write!(
                    out,
                    " {:>CELL$} {:>RED$}",
                    summary_cell(value),
                    reduction(value.map(|s| s.mean), base)
                );
            }
        }
        let _ = writeln!(out, "\n```\n");
        let _ = writeln!(
            out,
            "Browser request logs against the built page, over all its loads: {unknown} \
             requests for objects the page lacks, {missing} files never requested, {repeated} \
             requested twice, {out_of_order} requested before their parent had arrived. \
             {failed} loads failed{}.",
            if failed > 0 { " (see raw.jsonl)" } else { "" }
        );
    }
    out
}

/// The mean and sd of `metric` over the loads of one cell, row and client.
fn summary(
    records: &[BrowserRecord],
    (scenario, page, row, client): (&str, &str, &str, &str),
    metric: Metric,
) -> Option<Summary> {
    let values: Vec<f64> = records
        .iter()
        .filter(|r| r.scenario == scenario && r.page == page && r.row == row && r.client == client)
        .filter_map(metric)
        .collect();
    Summary::of(&values)
}

/// Per page, the experiment's grouped bars (scenarios along x, one bar per row, sd as error
/// bars): the browser's FCP from the document request and `load`, the replay client's FRT and
/// PLT. Returns (page, file name) of each chart written under `out`.
fn charts(
    records: &[BrowserRecord],
    rows: &[String],
    scenarios: &[String],
    pages: &[PageRef],
    out: &std::path::Path,
) -> Result<Vec<(String, String)>, Failure> {
    let mut written = Vec::new();
    for page in pages {
        let values = |client: &str, metric: Metric| -> Vec<Vec<Option<(f64, f64)>>> {
            scenarios
                .iter()
                .map(|scenario| {
                    rows.iter()
                        .map(|row| {
                            summary(records, (scenario, &page.label, row, client), metric)
                                .map(|s| (s.mean, s.sd))
                        })
                        .collect()
                })
                .collect()
        };
        let name = format!("bars-{}.svg", file_name(&page.label));
        let file = out.join(&name);
        plot::bars(
            &file,
            &format!("{} in headless Chromium and the replay client", page.label),
            scenarios,
            rows,
            &[
                (
                    "Chromium FCP from the request (ms)",
                    values("chromium", fcp_from_request),
                ),
                ("replay FRT (ms)", values("replay", |r| r.frt_ms)),
                (
                    "Chromium load (ms)",
                    values("chromium", |r| r.times.load_ms),
                ),
                ("replay PLT (ms)", values("replay", |r| r.times.load_ms)),
            ],
        )
        .map_err(|e| Failure::Experiment(format!("{}: {e}", file.display())))?;
        written.push((page.label.clone(), name));
    }
    Ok(written)
}

/// FCP counted from the browser's request for the document, as the replay client counts.
fn fcp_from_request(r: &BrowserRecord) -> Option<f64> {
    Some(r.times.fcp_ms? - r.times.request_start_ms?)
}

/// `cargo xtask demo --browser`: `page` in Chromium over pb-high with priority-bucket and lrf,
/// `reps` loads each in turn; prints FCP, LCP and load, and saves a screenshot.
pub fn demo(page: &str, reps: u32) -> Result<(), Failure> {
    let root = crate::workspace_root();
    let out = root.join("target/browser-demo");
    std::fs::create_dir_all(&out).map_err(|e| Failure::Demo(format!("{}: {e}", out.display())))?;
    let page = pages::resolve(&[page.to_owned()], &root, &out)?
        .into_iter()
        .next()
        .ok_or_else(|| Failure::Usage("no page".into()))?;
    let site = Arc::new(Site::build(&page.page));
    let chromium = chromium().map_err(|e| Failure::Demo(e.to_string()))?;
    let runtime = runtime()?;
    let rows = ["priority-bucket", BASE_ROW];
    let png = out.join(format!("{}.png", page.label));
    println!(
        "{} ({}), pb-high on loopback, headless Chromium ({}), {reps} loads per scheduler",
        page.label,
        page.describe(),
        chromium.binary().display()
    );
    let mut loads: Vec<Vec<BrowserLoad>> = vec![Vec::new(); rows.len()];
    for rep in 0..reps {
        for (row, loads) in rows.iter().zip(&mut loads) {
            let run = run_config(row, "pb-high", Duration::from_secs(60), Mode::Loopback, rep)?;
            let options = BrowserOptions {
                // One screenshot, from the last load.
                screenshot: (rep + 1 == reps && *row == BASE_ROW).then(|| png.clone()),
                ..BrowserOptions::default()
            };
            let load = runtime
                .block_on(load_in_browser(&site, &run, &chromium, &options))
                .map_err(|e| Failure::Demo(format!("{row}: {e}")))?;
            loads.push(load);
        }
    }
    println!(
        "{:<16} {:>CELL$} {:>CELL$} {:>CELL$}",
        "scheduler", "FCP ms", "LCP ms", "load ms"
    );
    for (row, loads) in rows.iter().zip(&loads) {
        let cell = |f: fn(&BrowserLoad) -> Option<f64>| {
            summary_cell(Summary::of(&loads.iter().filter_map(f).collect::<Vec<_>>()))
        };
        println!(
            "{row:<16} {:>CELL$} {:>CELL$} {:>CELL$}",
            cell(|l| l.paint.times.fcp_ms),
            cell(|l| l.paint.times.lcp_ms),
            cell(|l| l.paint.times.load_ms)
        );
    }
    println!("screenshot: {}", png.display());
    Ok(())
}
