//! `cargo xtask sim`: every scheduler over a page, or a bulk transfer (`--bulk`), on the
//! full-stack simulation (the real core, quinn-proto and scheduler on simulated time,
//! `mpquic_core::sim`), repeated over consecutive seeds, as a table or one JSON object.

use std::path::PathBuf;

use clap::Args;
use mpquic_core::CongestionControl;
use mpquic_replay::sim::HostTime;
use mpquic_replay::RequestOrder;
use mpquic_scenario::Scenario;
use mpquic_sched::SchedulerKind;

use crate::experiment::{pages, parse_schedulers};
use crate::runs::LoadOptions;
use crate::sim_bulk::{self, BulkOptions};
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
    /// A page as `cargo xtask experiment` names them: NAME for pages/NAME.har, a name's
    /// short form (youtube-2013), bing-2013 (built in), or the path of a .har file.
    #[arg(long, required_unless_present = "bulk", conflicts_with = "bulk")]
    page: Option<String>,
    /// Instead of a page, one stream of this many bytes (20MB, 5MiB, ...) from client to
    /// server with a size hint, as `cargo xtask peers bulk` sends it: the share of the paths'
    /// summed rates it gets.
    #[arg(long, value_parser = crate::transfer::parse_size)]
    bulk: Option<u64>,
    /// Every path's congestion controller (as the experiment's --cc: bbr, cubic, newreno,
    /// cubic-hystart, quinn-bbr, fld, ...).
    #[arg(long, default_value = mpquic_core::CongestionControl::DEFAULT_NAME)]
    cc: String,
    /// Print one JSON object keyed by scheduler name instead of the table.
    #[arg(long)]
    json: bool,
    /// Seed of the links' random loss and quinn-proto's random choices in the first run; run
    /// i uses seed + i.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// How many runs (1 to 1000); the papers repeat each experiment 10 times.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_RUNS)))]
    runs: u32,
    /// As the experiment's --time-scale: 0 requests every sub-resource when its initiator (or
    /// the document) has arrived; 1 keeps the recorded gaps.
    #[arg(long, default_value_t = 0.0, conflicts_with = "bulk")]
    time_scale: f64,
    /// Request every object at once, the document first, as the experiment's --all-at-once.
    #[arg(long, conflicts_with = "bulk")]
    all_at_once: bool,
    /// Schedulers, comma-separated (default: all).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    schedulers: Vec<String>,
    /// Without mpquic's re-injection (`Config::reinjection`), as mp-quic's schedulers ran.
    #[arg(long)]
    no_reinjection: bool,
    /// Pages: the hosts act in no time, instead of the time the testbed's page client and
    /// server take per round of requests (`mpquic_replay::sim::HostTime::TESTBED`).
    #[arg(long, conflicts_with = "bulk")]
    no_host_time: bool,
    /// Also write every load to this CSV file (scheduler, seed, FRT, PLT, bytes received
    /// twice; with --bulk: scheduler, seed, seconds, share, bytes per path), for the tails
    /// and per-seed comparisons the table's means hide.
    #[arg(long)]
    loads: Option<PathBuf>,
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
    if !(args.time_scale.is_finite() && args.time_scale >= 0.0) {
        return Err(Failure::Usage(format!(
            "--time-scale {}: must be a finite number >= 0",
            args.time_scale
        )));
    }
    let scenario = Scenario::by_name(&args.scenario).map_err(|e| Failure::Usage(e.to_string()))?;
    let schedulers = parse_schedulers(&args.schedulers)?;
    let cc: CongestionControl = args
        .cc
        .parse()
        .map_err(|e| Failure::Usage(format!("--cc {}: {e}", args.cc)))?;
    if let Some(size) = args.bulk {
        return bulk(args, scenario, &schedulers, cc, size);
    }
    let root = crate::workspace_root();
    let scratch = crate::target_dir().join("sim");
    let page = pages::resolve(args.page.as_slice(), &root, &scratch)?.remove(0);
    let options = LoadOptions {
        time_scale: args.time_scale,
        request_order: RequestOrder::from_flag(args.all_at_once),
        reinjection: !args.no_reinjection,
        cc,
        host: if args.no_host_time {
            HostTime::NONE
        } else {
            HostTime::TESTBED
        },
    };
    let runs = runs::run(&page, scenario, &schedulers, args.seed, args.runs, &options)
        .map_err(|e| Failure::Usage(e.to_string()))?;
    write_loads(args, || runs::loads_csv(&runs))?;
    if args.json {
        println!("{}", runs::to_json(&runs));
        return Ok(());
    }
    println!("scenario  {scenario}");
    println!("page      {}: {}", page.label, page.describe());
    println!(
        "runs      {} (seeds {}..={})",
        runs.runs,
        runs.first_seed,
        runs.last_seed()
    );
    if args.all_at_once {
        println!("requests  every object at once, the document first (--all-at-once)");
    }
    println!();
    print!("{}", table::render(&runs));
    println!();
    println!("mean ± sd: over the runs, sample standard deviation (n - 1); ms.");
    println!(
        "Simulated time: every load runs the real core, quinn-proto connections and scheduler \
         over the testbed's link model; a seed gives the same result every time."
    );
    if args.no_host_time {
        println!("Hosts: no time per round of requests (--no-host-time).");
    } else {
        println!(
            "Hosts: the page client and server take the testbed's traced time per round of \
             requests (sim::HostTime::TESTBED; --no-host-time for none)."
        );
    }
    println!(
        "vs lrf: reduction of the mean against lrf's mean, (lrf - x) / lrf; positive is faster."
    );
    println!("oracle: fluid lower bound, no slow start, loss or queueing (sim::oracle); no sd.");
    Ok(())
}

/// `--loads`: the CSV `csv` makes, if asked for.
fn write_loads(args: &SimArgs, csv: impl FnOnce() -> String) -> Result<(), Failure> {
    let Some(path) = &args.loads else {
        return Ok(());
    };
    std::fs::write(path, csv())
        .map_err(|e| Failure::Experiment(format!("--loads {}: {e}", path.display())))
}

/// `--bulk`: the transfers, as the table or the JSON object.
fn bulk(
    args: &SimArgs,
    scenario: &'static Scenario,
    schedulers: &[SchedulerKind],
    cc: CongestionControl,
    size: u64,
) -> Result<(), Failure> {
    if !(1..=sim_bulk::MAX_BULK_BYTES).contains(&size) {
        return Err(Failure::Usage(format!(
            "--bulk {size}: must be between 1 byte and {} bytes",
            sim_bulk::MAX_BULK_BYTES
        )));
    }
    let options = BulkOptions {
        size,
        cc,
        reinjection: !args.no_reinjection,
    };
    let runs = sim_bulk::run(scenario, schedulers, &options, args.seed, args.runs);
    write_loads(args, || sim_bulk::loads_csv(&runs))?;
    if args.json {
        println!("{}", sim_bulk::to_json(&runs));
        return Ok(());
    }
    println!("scenario  {scenario}");
    println!(
        "bulk      {size} bytes on one stream, client to server, with a size hint; --cc {}",
        args.cc
    );
    println!(
        "runs      {} (seeds {}..={})",
        args.runs,
        args.seed,
        args.seed + u64::from(args.runs - 1)
    );
    println!();
    print!("{}", sim_bulk::render(&runs));
    println!();
    println!(
        "% of rates: goodput over the paths' summed configured rates; mean ± sd over the runs."
    );
    println!(
        "Simulated time: the real core, quinn-proto connections and scheduler over the \
         testbed's link model; timed from the stream's opening to its last byte read."
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_takes_no_page_and_none_of_the_page_only_flags() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            sim: SimArgs,
        }
        let base = ["sim", "--scenario", "pb-high", "--bulk", "5MB"];
        let bulk = Cli::try_parse_from(base).unwrap().sim;
        assert_eq!((bulk.bulk, bulk.page), (Some(5_000_000), None));
        let page_only: [&[&str]; 4] = [
            &["--page", "youtube-2013"],
            &["--all-at-once"],
            &["--no-host-time"],
            &["--time-scale", "1"],
        ];
        for flags in page_only {
            let argv = base.iter().chain(flags);
            assert!(Cli::try_parse_from(argv).is_err(), "{flags:?}");
        }
        let neither = Cli::try_parse_from(["sim", "--scenario", "pb-high"]);
        assert!(neither.is_err(), "a page or --bulk is needed");
    }

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
