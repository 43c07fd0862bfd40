//! `page_client`: the command line of the lab's `page_client` module.

use clap::Parser as _;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    mpquic_lab::page_client::main(mpquic_lab::page_client::Args::parse()).await
}
