//! `page_server`: the command line of the lab's `page_server` module.

use clap::Parser as _;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    mpquic_lab::page_server::main(mpquic_lab::page_server::Args::parse()).await
}
