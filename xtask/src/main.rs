//! `cargo xtask ...`: `ci`, the checks, here; every other command belongs to the lab
//! (`crates/lab`) and is forwarded to its binary with `cargo run -p mpquic-lab --bin lab`, so
//! that `cargo xtask ci` starts with `cargo fmt` without compiling the lab's network peers.
//!
//! - `cargo xtask ci`: the checks, in order, stopping at the first failure (see `ci.rs`).
//! - `cargo xtask demo|sim|calibrate|experiment|testbed|peers ...`: the lab's commands, in the
//!   dev profile as this alias runs xtask (`cargo xtask help` lists them, `cargo xtask demo
//!   --help` explains one).

mod ci;

use std::ffi::OsString;
use std::os::unix::process::CommandExt as _;
use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    if args.first().is_some_and(|command| command == "ci") {
        if args.len() > 1 {
            eprintln!("error: `cargo xtask ci` takes no arguments");
            return ExitCode::from(2);
        }
        return match ci::run() {
            Ok(()) => ExitCode::SUCCESS,
            Err(failure) => {
                eprintln!("error: {failure}");
                ExitCode::FAILURE
            }
        };
    }
    forward_to_lab(&args)
}

/// Runs `cargo run --quiet -p mpquic-lab --bin lab -- ARGS` in this process's place (`exec`:
/// cargo execs the lab in turn), so the lab gets the terminal's signals and its exit code is
/// this command's.
fn forward_to_lab(args: &[OsString]) -> ExitCode {
    let mut lab = Command::new(ci::cargo());
    lab.args(["run", "--quiet", "-p", "mpquic-lab", "--bin", "lab", "--"])
        .args(args)
        .current_dir(ci::workspace_root());
    // `exec` returns only if it could not start cargo.
    let e = lab.exec();
    eprintln!("error: cannot run cargo to start the lab: {e}");
    ExitCode::FAILURE
}
