//! The mpquic lab: what measures mpquic against its peers and against the simulation, as a
//! library under the `lab` binary, which `cargo xtask <command>` runs (xtask itself keeps only
//! `ci`). The lab's other binaries are what its commands start: `bulk`, `page_client`,
//! `page_server`, `linkemu`, and the hardening `soak`.
//!
//! - `cargo xtask sim --scenario pb-high --page youtube-2013 [--runs N] [--seed S] [--json]`:
//!   runs every scheduler in the simulator over a page (a builtin or a `.har` file) `N` times
//!   (default 10, the papers' repetitions) with seeds `S`, `S + 1`, ... (default `S` = 1), and
//!   prints FRT and PLT as mean ± sample standard deviation with the reduction of the means
//!   against lrf and the oracle's bounds; with `--json`, one object keyed by scheduler name,
//!   each `{"frt_ms", "plt_ms"}` (the means), `"frt_sd_ms"`, `"plt_sd_ms"` and `"runs"` (or
//!   `"error"`), and `"oracle"`.
//! - `cargo xtask demo`: a bundled recorded page (YouTube, 2013) over HTTP/3 over mpquic with
//!   every scheduler, on pb-high's two paths emulated on loopback, and a table of FRT and PLT
//!   (mean ± sd over a few loads) with the reduction against lrf (see `demo.rs`).
//! - `cargo xtask calibrate`, `cargo xtask experiment`: the simulation against measurements,
//!   and the page-load matrix (see `experiment/mod.rs`).
//! - `cargo xtask testbed up|down|exec|check`: the namespace testbed (see `testbed.rs`).
//! - `cargo xtask peers bulk|page|failover`: mpquic against other multipath transports on the
//!   testbed (see `peers/mod.rs`).

// A command-line tool: its output is stdout.
#![allow(clippy::print_stdout)]

mod bins;
pub mod bulk;
mod calibrate;
mod demo;
mod experiment;
pub mod linkemu;
pub mod page_client;
pub mod page_server;
mod peers;
mod runs;
mod sim;
mod sim_bulk;
pub mod soak;
mod stats;
mod table;
mod testbed;
pub mod transfer;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::sim::SimArgs;
use crate::testbed::TestbedArgs;

#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "mpquic project tasks",
    after_help = "`cargo xtask ci` runs the checks (fmt, clippy, doc, test, root tests, fuzz smoke): \
                  xtask runs that one itself and hands every other command to the lab."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Loads a bundled recorded page with every scheduler over HTTP/3 over mpquic on two
    /// emulated paths on loopback (pb-high) and prints FRT and PLT against lrf; with
    /// `--browser`, in headless Chromium with two schedulers, printing FCP, LCP and load and
    /// saving a screenshot.
    Demo(DemoArgs),
    /// Runs every scheduler over a page on the full-stack simulation, repeated over seeds, and
    /// prints FRT and PLT (mean ± sd) against lrf and the oracle lower bound.
    Sim(SimArgs),
    /// Loads the cells of an experiment's raw.jsonl on the simulation and reports how far the
    /// simulated means are from the measured ones.
    Calibrate(calibrate::CalibrateArgs),
    /// The page-load matrix (schedulers x scenarios x pages, FLD and MEH rows) with the
    /// oracle's bounds, a report and SVG charts under target/experiment/.
    Experiment(experiment::ExperimentArgs),
    /// The namespace testbed: `up`, `down`, `exec client|server -- CMD`, `check`.
    Testbed(TestbedArgs),
    /// Bulk aggregation on the namespace testbed: mpquic against tquic, noq, quinn and MPTCP.
    Peers(peers::PeersArgs),
}

/// The options of `cargo xtask demo`.
#[derive(Debug, clap::Args)]
struct DemoArgs {
    /// Load the page in headless Chromium (Debian's `chromium`) instead of the replay client.
    #[arg(long)]
    browser: bool,
    /// The page of `--browser`: a name of pages/NAME.har or a HAR file.
    #[arg(long, default_value = "youtube-2013", requires = "browser")]
    page: String,
    /// Loads per scheduler with `--browser`.
    #[arg(long, default_value_t = 3, requires = "browser")]
    reps: u32,
}

/// A failure, with the exit code it maps to.
#[derive(Debug)]
enum Failure {
    /// Bad input from the command line: exit code 2, like clap's own usage errors.
    Usage(String),
    /// The testbed could not do what was asked (not root, already up, I/O): exit code 1.
    Testbed(String),
    /// The demo could not load its page: exit code 1.
    Demo(String),
    /// The experiment could not run or write its results: exit code 1.
    Experiment(String),
}

impl Failure {
    fn exit_code(&self) -> ExitCode {
        match self {
            Self::Usage(_) => ExitCode::from(2),
            Self::Testbed(_) | Self::Demo(_) | Self::Experiment(_) => ExitCode::FAILURE,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Usage(message)
            | Self::Testbed(message)
            | Self::Demo(message)
            | Self::Experiment(message) => f.write_str(message),
        }
    }
}

/// Runs the command line of `lab` (`cargo xtask <command>`): the exit code is the command's.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Demo(args) if args.browser => demo::browser(&args.page, args.reps),
        Command::Demo(_) => demo::demo(),
        Command::Sim(args) => sim::sim(&args),
        Command::Calibrate(args) => calibrate::calibrate(&args),
        Command::Experiment(args) => experiment::experiment(&args),
        Command::Peers(args) => match peers::run(&args) {
            Ok(code) => return code,
            Err(failure) => Err(failure),
        },
        Command::Testbed(args) => match testbed::run(&args) {
            Ok(code) => return code,
            Err(failure) => Err(failure),
        },
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("error: {failure}");
            failure.exit_code()
        }
    }
}

/// The workspace root: two levels above this crate's directory (`crates/lab`), as `cargo run`
/// gives it at run time, else as built in (see `xtask/src/ci.rs`'s `workspace_root`).
pub fn workspace_root() -> PathBuf {
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    manifest
        .ancestors()
        .nth(2)
        .unwrap_or(&manifest)
        .to_path_buf()
}

/// Where cargo builds: `$CARGO_TARGET_DIR`, else the workspace's `target/`.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}
