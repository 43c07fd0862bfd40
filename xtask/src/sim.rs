//! `cargo xtask sim`: every scheduler over a page in the simulator, repeated over consecutive
//! seeds, as a table or one JSON object.

use std::path::Path;

use clap::Args;
use mpquic_sched::sim::{Page, Scenario, SimConfig};
use mpquic_sched::SchedulerKind;

use crate::{runs, table, Failure};

/// The most runs one command does (10 is the papers' count; 1000 already takes a while).
pub const MAX_RUNS: u32 = 1000;

/// The options of `cargo xtask sim`.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// Scenario preset: pb-low, pb-low-lossy, pb-high, pb-high-lossy, sec-low, sec-low-lossy,
    /// sec-high, sec-high-lossy, lte.
    #[arg(long)]
    scenario: String,
    /// A builtin page (bing-2013, youtube-2013) or the path of a .har file.
    #[arg(long)]
    page: String,
    /// Print one JSON object keyed by scheduler name instead of the table.
    #[arg(long)]
    json: bool,
    /// Seed of the per-path random loss in the first run; run i uses seed + i.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// How many runs (1 to 1000); the papers repeat each experiment 10 times.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_RUNS)))]
    runs: u32,
}

fn load_page(name: &str) -> Result<Page, Failure> {
    if Page::BUILTIN.contains(&name) {
        return Page::builtin(name).map_err(|e| Failure::Usage(e.to_string()));
    }
    let path = Path::new(name);
    if path.is_file() {
        return mpquic_replay::har::load(path)
            .map(|page| page.to_sim_page())
            .map_err(|e| Failure::Usage(e.to_string()));
    }
    Err(Failure::Usage(format!(
        "unknown page {name:?}: not a builtin page ({}) and not a .har file",
        Page::BUILTIN.join(", ")
    )))
}

/// Checks the run count and that the last seed fits in a `u64`.
fn check_runs(seed: u64, runs: u32) -> Result<(), Failure> {
    if !(1..=MAX_RUNS).contains(&runs) {
        return Err(Failure::Usage(format!(
            "--runs {runs}: must be between 1 and {MAX_RUNS}"
        )));
    }
    if seed.checked_add(u64::from(runs - 1)).is_none() {
        return Err(Failure::Usage(format!(
            "--seed {seed} with --runs {runs}: the last seed would overflow u64"
        )));
    }
    Ok(())
}

/// Runs the command: the table or the JSON object on stdout.
pub fn sim(args: &SimArgs) -> Result<(), Failure> {
    check_runs(args.seed, args.runs)?;
    let scenario = Scenario::by_name(&args.scenario).map_err(|e| Failure::Usage(e.to_string()))?;
    let page = load_page(&args.page)?;
    let config = SimConfig::from_scenario(scenario);
    // A scheduler that panics is reported in its row; keep the default hook's backtrace noise
    // out of the table.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = runs::run(&config, &page, &SchedulerKind::ALL, args.seed, args.runs);
    std::panic::set_hook(hook);
    let runs = outcome.map_err(|e| Failure::Usage(e.to_string()))?;
    if args.json {
        println!("{}", runs::to_json(&runs));
        return Ok(());
    }
    println!("scenario  {scenario}");
    println!(
        "page      {}: {} objects ({} critical), {} bytes",
        page.name,
        page.objects.len(),
        page.critical_count(),
        page.total_bytes()
    );
    println!(
        "runs      {} (seeds {}..={})",
        runs.runs,
        runs.first_seed,
        runs.last_seed()
    );
    println!();
    print!("{}", table::render(&runs));
    println!();
    println!("mean ± sd: over the runs, sample standard deviation (n - 1); ms.");
    println!("Lossless scenarios are deterministic (the seed only drives random loss): sd is 0.");
    println!(
        "vs lrf: reduction of the mean against lrf's mean, (lrf - x) / lrf; positive is faster."
    );
    println!("oracle: fluid lower bound, no slow start, loss or queueing (sim::oracle); no sd.");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_counts_and_seed_overflow() {
        assert!(check_runs(1, 1).is_ok());
        assert!(check_runs(1, MAX_RUNS).is_ok());
        assert!(check_runs(1, 0).is_err());
        assert!(check_runs(1, MAX_RUNS + 1).is_err());
        assert!(check_runs(u64::MAX, 1).is_ok());
        assert!(check_runs(u64::MAX, 2).is_err());
    }
}
