//! `linkemu`: the command line of the lab's `linkemu` module.

use clap::Parser as _;

fn main() -> std::process::ExitCode {
    mpquic_lab::linkemu::main(mpquic_lab::linkemu::Cli::parse())
}
