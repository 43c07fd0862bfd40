//! `bulk`: a sha256-checked bulk transfer over several mpquic paths (see the lab's `bulk`
//! module).

use clap::Parser as _;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    mpquic_lab::bulk::main(mpquic_lab::bulk::Args::parse()).await
}
