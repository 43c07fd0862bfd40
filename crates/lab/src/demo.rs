//! `cargo xtask demo`: a bundled recorded page loaded over HTTP/3 over mpquic with every
//! scheduler, on two emulated paths on loopback (the link emulator of `mpquic-netns` as a UDP
//! relay per path, no root), and a table of first rendering time and page load time.
//!
//! The page is YouTube's home page as Chrome recorded it in 2013 (`pages/youtube.com-2013.har`:
//! 68 objects, 1.3 MB, 5 critical), the site the PriorityBucket paper loaded; the scenario is
//! its pb-high (10 Mbit/s with 10 ms RTT and 40 Mbit/s with 50 ms RTT). Like the papers' pages,
//! every sub-resource is requested the moment the document has arrived (the recording has no
//! initiators, and its start times hold the recording's own network and browser delays).
//! Each scheduler loads the page [`REPS`] times, the schedulers taking turns in each round so
//! that drift in the machine's load spreads over all of them.
//!
//! `cargo xtask demo --browser` loads a page in headless Chromium instead (`mpquic-browser`),
//! with priority-bucket and lrf, prints the browser's FCP, LCP and `load`, and saves a
//! screenshot of the rendered page.

use std::sync::Arc;
use std::time::Instant;

use mpquic_browser::{load_in_browser, BrowserLoad, BrowserOptions, Chromium, Site};
use mpquic_replay::{har, load_page_blocking, LoadReport, RunConfig};
use mpquic_sched::sim::BASELINE;
use mpquic_sched::SchedulerKind;

use crate::experiment::pages;
use crate::stats::Summary;
use crate::table::{reduction, summary_cell, CELL, RED};
use crate::Failure;

/// The page, relative to the workspace root.
pub const PAGE: &str = "pages/youtube.com-2013.har";
/// The scenario.
pub const SCENARIO: &str = "pb-high";
/// Loads per scheduler.
pub const REPS: usize = 5;

/// Runs the demo and prints its table.
pub fn demo() -> Result<(), Failure> {
    let root = crate::workspace_root();
    let page = har::load(&root.join(PAGE)).map_err(|e| Failure::Demo(e.to_string()))?;
    println!(
        "{} ({}: {} objects, {} bytes, {} critical), {SCENARIO} on loopback, {REPS} loads per scheduler",
        page.name,
        PAGE,
        page.objects.len(),
        page.total_bytes(),
        page.critical_count()
    );
    let started = Instant::now();
    let mut loads: Vec<Vec<LoadReport>> = vec![Vec::new(); SchedulerKind::ALL.len()];
    for _ in 0..REPS {
        for (kind, reports) in SchedulerKind::ALL.iter().zip(&mut loads) {
            let mut run =
                RunConfig::new(kind.name(), SCENARIO).map_err(|e| Failure::Demo(e.to_string()))?;
            run.load.time_scale = 0.0;
            let mut report = load_page_blocking(&page, &run, 1)
                .map_err(|e| Failure::Demo(format!("{}: {e}", kind.name())))?;
            reports.append(&mut report);
        }
    }
    println!("{}", render(&loads));
    println!(
        "real HTTP/3 over mpquic on emulated links; {} loads in {:.1} s",
        REPS * SchedulerKind::ALL.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn summaries(reports: &[LoadReport]) -> (Option<Summary>, Option<Summary>) {
    let frt: Vec<f64> = reports.iter().map(|r| r.frt_ms).collect();
    let plt: Vec<f64> = reports.iter().map(|r| r.plt_ms).collect();
    (Summary::of(&frt), Summary::of(&plt))
}

/// One row per scheduler: FRT and PLT as mean ± sd with the reduction against lrf's means.
fn render(loads: &[Vec<LoadReport>]) -> String {
    use std::fmt::Write as _;
    let base = SchedulerKind::ALL
        .iter()
        .position(|k| *k == BASELINE)
        .and_then(|i| loads.get(i))
        .map(|r| summaries(r));
    let base_frt = base.and_then(|b| b.0).map(|s| s.mean);
    let base_plt = base.and_then(|b| b.1).map(|s| s.mean);
    let mut out = String::new();
    let _ = write!(
        out,
        "{:<21} {:>CELL$} {:>RED$} {:>CELL$} {:>RED$}",
        "scheduler", "FRT ms mean ± sd", "vs lrf", "PLT ms mean ± sd", "vs lrf"
    );
    for (kind, reports) in SchedulerKind::ALL.iter().zip(loads) {
        let (frt, plt) = summaries(reports);
        let _ = write!(
            out,
            "\n{:<21} {:>CELL$} {:>RED$} {:>CELL$} {:>RED$}",
            kind.name(),
            summary_cell(frt),
            reduction(frt.map(|s| s.mean), base_frt),
            summary_cell(plt),
            reduction(plt.map(|s| s.mean), base_plt),
        );
    }
    out
}

/// `cargo xtask demo --browser`: `page` in Chromium over pb-high with priority-bucket and lrf,
/// `reps` loads each in turn; prints FCP, LCP and load, and saves a screenshot.
pub fn browser(page: &str, reps: u32) -> Result<(), Failure> {
    let root = crate::workspace_root();
    let out = root.join("target/browser-demo");
    std::fs::create_dir_all(&out).map_err(|e| Failure::Demo(format!("{}: {e}", out.display())))?;
    let page = pages::resolve(&[page.to_owned()], &root, &out)?
        .into_iter()
        .next()
        .ok_or_else(|| Failure::Usage("no page".into()))?;
    let site = Arc::new(Site::build(&page.page));
    let chromium = Chromium::find().map_err(|e| Failure::Demo(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::Demo(format!("tokio runtime: {e}")))?;
    let rows = [SchedulerKind::PriorityBucket.name(), BASELINE.name()];
    let png = out.join(format!("{}.png", page.label));
    println!(
        "{} ({}), {SCENARIO} on loopback, headless Chromium ({}), {reps} loads per scheduler",
        page.label,
        page.describe(),
        chromium.binary().display()
    );
    let mut loads: Vec<Vec<BrowserLoad>> = vec![Vec::new(); rows.len()];
    for rep in 0..reps {
        for (row, loads) in rows.iter().zip(&mut loads) {
            let mut run =
                RunConfig::new(row, SCENARIO).map_err(|e| Failure::Demo(e.to_string()))?;
            run.loss_seed = u64::from(rep);
            let options = BrowserOptions {
                // One screenshot, from the last load.
                screenshot: (rep + 1 == reps && *row == BASELINE.name()).then(|| png.clone()),
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
