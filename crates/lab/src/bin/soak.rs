//! `soak`: the command line of the lab's `soak` module, with the counting allocator its
//! figures read.

use clap::Parser as _;
use mpquic_lab::soak::CountingAllocator;

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    mpquic_lab::soak::main(mpquic_lab::soak::Args::parse()).await
}
