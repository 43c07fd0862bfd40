//! `page_client`: the command line of the lab's `page_client` module.

use std::process::ExitCode;

use clap::Parser as _;
use mpquic_lab::page_client::{self, Args};

fn main() -> ExitCode {
    let args = Args::parse();
    let mut builder = if args.one_thread() {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    };
    match builder.enable_all().build() {
        Ok(runtime) => runtime.block_on(page_client::main(args)),
        Err(e) => {
            eprintln!("page_client: no runtime: {e}");
            ExitCode::FAILURE
        }
    }
}
