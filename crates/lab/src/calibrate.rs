//! `cargo xtask calibrate`: the simulation against the testbed. Reads the page loads of a
//! `cargo xtask experiment` run (its loads.csv), loads every one of its cells (scenario, page,
//! scheduler) on the full-stack simulation as often, and writes how far the simulated mean FRT
//! and PLT are from the measured ones, and whether PriorityBucket's FRT reduction against LRF
//! has the same sign in both.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use mpquic_replay::sim::load_simulated;
use mpquic_replay::RunConfig;

use crate::experiment::pages;
use crate::stats::{reduction_percent, Summary};
use crate::Failure;

/// How far a simulated mean may be from the measured one (the bar).
const TOLERANCE_PERCENT: f64 = 15.0;

/// The options of `cargo xtask calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// The experiment's output directory, or a copy of it, holding its loads.csv.
    #[arg(long)]
    testbed: PathBuf,
    /// Where to write the report (default: the testbed directory's calibration.md).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// A cell: scenario, page, scheduler.
type Cell = (String, String, String);

/// Per cell, the measured FRTs and PLTs (ms) and the time scale they were loaded with.
type Measured = BTreeMap<Cell, (Vec<f64>, Vec<f64>, f64)>;

/// What one cell measured and simulated.
struct Compared {
    testbed_frt: Summary,
    testbed_plt: Summary,
    sim_frt: Summary,
    sim_plt: Summary,
}

/// Runs the command: the report to `--out`, its summary to stdout.
pub fn calibrate(args: &CalibrateArgs) -> Result<(), Failure> {
    let file = args.testbed.join("loads.csv");
    let csv = std::fs::read_to_string(&file)
        .map_err(|e| Failure::Usage(format!("{}: {e}", file.display())))?;
    let measured =
        measured_loads(&csv).map_err(|e| Failure::Usage(format!("{}: {e}", file.display())))?;
    if measured.is_empty() {
        return Err(Failure::Usage(format!(
            "{}: no page loads over all paths in loads.csv",
            args.testbed.display()
        )));
    }
    let root = crate::workspace_root();
    let scratch = crate::target_dir().join("calibrate");
    let mut compared: BTreeMap<Cell, Compared> = BTreeMap::new();
    for ((scenario, page_name, scheduler), (frt, plt, time_scale)) in &measured {
        let page = pages::resolve(std::slice::from_ref(page_name), &root, &scratch)?.remove(0);
        let mut run =
            RunConfig::new(scheduler, scenario).map_err(|e| Failure::Usage(e.to_string()))?;
        run.load.time_scale = *time_scale;
        let (mut sim_frt, mut sim_plt) = (Vec::new(), Vec::new());
        for seed in 1..=frt.len() as u64 {
            let report = load_simulated(&page.page, &run, seed).map_err(|e| {
                Failure::Experiment(format!("{scenario} {page_name} {scheduler}: {e}"))
            })?;
            sim_frt.push(report.frt_ms);
            sim_plt.push(report.plt_ms);
        }
        let summary =
            |v: &[f64]| Summary::of(v).ok_or_else(|| Failure::Experiment("no data".into()));
        compared.insert(
            (scenario.clone(), page_name.clone(), scheduler.clone()),
            Compared {
                testbed_frt: summary(frt)?,
                testbed_plt: summary(plt)?,
                sim_frt: summary(&sim_frt)?,
                sim_plt: summary(&sim_plt)?,
            },
        );
    }
    let report = render(&compared);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| args.testbed.join("calibration.md"));
    std::fs::write(&out, &report)
        .map_err(|e| Failure::Experiment(format!("{}: {e}", out.display())))?;
    print!("{report}");
    println!("written: {}", out.display());
    Ok(())
}

/// The FRT and PLT of every load over all paths without error in the experiment's loads.csv,
/// by cell, with the cell's time scale.
fn measured_loads(csv: &str) -> Result<Measured, String> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let column = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| format!("no {name} column"))
    };
    let [scenario, page, scheduler, paths, time_scale, frt, plt, error] = [
        "scenario",
        "page",
        "scheduler",
        "paths",
        "time_scale",
        "frt_ms",
        "plt_ms",
        "error",
    ]
    .map(column);
    let (scenario, page, scheduler, paths) = (scenario?, page?, scheduler?, paths?);
    let (time_scale, frt, plt, error) = (time_scale?, frt?, plt?, error?);
    let mut measured = Measured::new();
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        let field = |k: usize| fields.get(k).copied().unwrap_or_default();
        if field(paths) != "all" || !field(error).is_empty() {
            continue;
        }
        let number = |k: usize| {
            field(k)
                .parse::<f64>()
                .map_err(|e| format!("{line:?}: {e}"))
        };
        let cell = (
            field(scenario).to_owned(),
            field(page).to_owned(),
            field(scheduler).to_owned(),
        );
        let entry = measured
            .entry(cell)
            .or_insert((Vec::new(), Vec::new(), number(time_scale)?));
        entry.0.push(number(frt)?);
        entry.1.push(number(plt)?);
    }
    Ok(measured)
}

/// The simulated mean's distance from the measured one, in percent of the measured.
fn error_percent(sim: f64, testbed: f64) -> f64 {
    (sim - testbed) / testbed * 100.0
}

fn render(compared: &BTreeMap<Cell, Compared>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "| scenario | page | scheduler | FRT testbed | FRT sim | error | PLT testbed | PLT sim | error |"
    );
    let _ = writeln!(out, "|---|---|---|---:|---:|---:|---:|---:|---:|");
    let (mut within, mut cells) = (0, 0);
    for ((scenario, page, scheduler), c) in compared {
        let frt_error = error_percent(c.sim_frt.mean, c.testbed_frt.mean);
        let plt_error = error_percent(c.sim_plt.mean, c.testbed_plt.mean);
        for error in [frt_error, plt_error] {
            cells += 1;
            within += usize::from(error.abs() <= TOLERANCE_PERCENT);
        }
        let mark = |e: f64| {
            if e.abs() <= TOLERANCE_PERCENT {
                ""
            } else {
                " **miss**"
            }
        };
        let _ = writeln!(
            out,
            "| {scenario} | {page} | {scheduler} | {:.1} ± {:.1} | {:.1} ± {:.1} | {frt_error:+.1}%{} | {:.1} ± {:.1} | {:.1} ± {:.1} | {plt_error:+.1}%{} |",
            c.testbed_frt.mean,
            c.testbed_frt.sd,
            c.sim_frt.mean,
            c.sim_frt.sd,
            mark(frt_error),
            c.testbed_plt.mean,
            c.testbed_plt.sd,
            c.sim_plt.mean,
            c.sim_plt.sd,
            mark(plt_error),
        );
    }
    let _ = writeln!(
        out,
        "\n{within} of {cells} means within {TOLERANCE_PERCENT}% of the testbed's.\n"
    );
    let _ = writeln!(
        out,
        "| scenario | page | PB vs LRF FRT, testbed | sim | same sign |"
    );
    let _ = writeln!(out, "|---|---|---:|---:|---|");
    let (mut agree, mut pairs) = (0, 0);
    let groups: BTreeMap<(&str, &str), ()> = compared
        .keys()
        .map(|(s, p, _)| ((s.as_str(), p.as_str()), ()))
        .collect();
    for (scenario, page) in groups.keys() {
        let get = |scheduler: &str| {
            compared.get(&(
                scenario.to_string(),
                page.to_string(),
                scheduler.to_string(),
            ))
        };
        let (Some(pb), Some(lrf)) = (get("priority-bucket"), get("lrf")) else {
            continue;
        };
        let testbed = reduction_percent(pb.testbed_frt.mean, lrf.testbed_frt.mean);
        let sim = reduction_percent(pb.sim_frt.mean, lrf.sim_frt.mean);
        let (Some(testbed), Some(sim)) = (testbed, sim) else {
            continue;
        };
        pairs += 1;
        let same = testbed.signum() == sim.signum();
        agree += usize::from(same);
        let _ = writeln!(
            out,
            "| {scenario} | {page} | {testbed:+.1}% | {sim:+.1}% | {} |",
            if same { "yes" } else { "**no**" }
        );
    }
    let _ = writeln!(
        out,
        "\n{agree} of {pairs} PriorityBucket-vs-LRF FRT reductions have the testbed's sign."
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_over_all_paths_without_error_count() {
        let csv = "scenario,page,scheduler,cc,paths,rep,mode,time_scale,frt_ms,plt_ms,paths_used,wall_s,error\n\
                   pb-low,p,lrf,bbr,all,0,netns,0,10.0,20.0,2,0.7,\n\
                   pb-low,p,lrf,bbr,all,1,netns,0,12.0,22.0,2,0.7,\n\
                   pb-low,p,lrf,bbr,0,0,netns,0,99.0,99.0,1,0.7,\n\
                   pb-low,p,lrf,bbr,all,2,netns,0,,,2,0.7,timeout\n";
        let measured = measured_loads(csv).unwrap();
        let cell = ("pb-low".to_owned(), "p".to_owned(), "lrf".to_owned());
        assert_eq!(measured.len(), 1);
        assert_eq!(measured[&cell], (vec![10.0, 12.0], vec![20.0, 22.0], 0.0));
    }

    #[test]
    fn a_file_without_its_columns_is_refused() {
        assert!(measured_loads("scenario,page\npb-low,p\n").is_err());
    }
}
