//! `cargo xtask ...`: project tasks that sit on top of the libraries.
//!
//! - `cargo xtask sim --scenario pb-high --page youtube-2013 [--json] [--seed N]`: runs every
//!   scheduler in the simulator over a page and prints the FRT/PLT table (or one JSON object).

// A command-line tool: its output is stdout.
#![allow(clippy::print_stdout)]

mod har;

use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use mpquic_sched::sim::{compare, Comparison, Page, Scenario, SimConfig};
use mpquic_sched::SchedulerKind;
use serde_json::{json, Map, Value};

#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about = "mpquic project tasks")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Runs every scheduler over a page in the simulator and prints FRT and PLT against lrf
    /// and the oracle lower bound.
    Sim(SimArgs),
}

#[derive(Debug, Args)]
struct SimArgs {
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
    /// Seed of the per-path random loss.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// A failure, with the exit code it maps to.
#[derive(Debug)]
enum Failure {
    /// Bad input from the command line: exit code 2, like clap's own usage errors.
    Usage(String),
}

impl Failure {
    fn exit_code(&self) -> ExitCode {
        match self {
            Self::Usage(_) => ExitCode::from(2),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Usage(message) => f.write_str(message),
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Sim(args) => sim(&args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("error: {failure}");
            failure.exit_code()
        }
    }
}

fn load_page(name: &str) -> Result<Page, Failure> {
    if Page::BUILTIN.contains(&name) {
        return Page::builtin(name).map_err(|e| Failure::Usage(e.to_string()));
    }
    let path = Path::new(name);
    if path.is_file() {
        return har::load(path).map_err(|e| Failure::Usage(e.to_string()));
    }
    Err(Failure::Usage(format!(
        "unknown page {name:?}: not a builtin page ({}) and not a .har file",
        Page::BUILTIN.join(", ")
    )))
}

fn sim(args: &SimArgs) -> Result<(), Failure> {
    let scenario = Scenario::by_name(&args.scenario).map_err(|e| Failure::Usage(e.to_string()))?;
    let page = load_page(&args.page)?;
    let mut config = SimConfig::from_scenario(scenario);
    config.set_seed(args.seed);
    // A scheduler that panics is reported in its row; keep the default hook's backtrace noise
    // out of the table.
    std::panic::set_hook(Box::new(|_| {}));
    let comparison =
        compare(&config, &page, &SchedulerKind::ALL).map_err(|e| Failure::Usage(e.to_string()))?;
    let _ = std::panic::take_hook();
    if args.json {
        println!("{}", to_json(&comparison));
    } else {
        println!("scenario  {scenario}");
        println!(
            "page      {}: {} objects ({} critical), {} bytes",
            page.name,
            page.objects.len(),
            page.critical_count(),
            page.total_bytes()
        );
        println!("seed      {}", args.seed);
        println!();
        print!("{}", comparison.render_table());
        println!();
        println!("vs lrf: reduction against lrf, (lrf - x) / lrf; positive is faster.");
        println!("oracle: fluid lower bound, no slow start, loss or queueing (sim::oracle).");
    }
    Ok(())
}

/// Milliseconds rounded to the microsecond, the simulator's useful precision.
fn millis(value: Option<std::time::Duration>) -> Value {
    value.map_or(Value::Null, |v| {
        json!((v.as_secs_f64() * 1e6).round() / 1e3)
    })
}

fn to_json(comparison: &Comparison) -> Value {
    let mut object = Map::new();
    for row in &comparison.rows {
        let value = match &row.result {
            Ok(r) => json!({ "frt_ms": millis(r.frt), "plt_ms": millis(Some(r.plt)) }),
            Err(e) => json!({ "frt_ms": null, "plt_ms": null, "error": e.to_string() }),
        };
        object.insert(row.kind.name().to_owned(), value);
    }
    object.insert(
        "oracle".to_owned(),
        json!({
            "frt_ms": millis(comparison.oracle.frt),
            "plt_ms": millis(Some(comparison.oracle.plt)),
        }),
    );
    Value::Object(object)
}
