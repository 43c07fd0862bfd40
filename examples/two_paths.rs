//! One stream over two paths, with each scheduler: how long 1 MB takes over a fast
//! short-delay path and a slow long-delay one, on mpquic's simulated driver (the real
//! transport on simulated time: deterministic, no sockets, no certificate to set up).
//!
//! ```text
//! cargo run --example two_paths
//! ```

// An example: its result is stdout.
#![allow(clippy::print_stdout)]

use std::time::Duration;

use mpquic::sim::{FixedLink, Link, Pair, PathLinks};
use mpquic::{Config, SchedulerKind};

/// Bytes the stream carries.
const SIZE: usize = 1_000_000;

/// Two paths, both ways alike: 40 Mbit/s with 10 ms one way, and 10 Mbit/s with 40 ms.
fn links() -> Vec<PathLinks> {
    [(40_000_000, 10), (10_000_000, 40)]
        .into_iter()
        .map(|(rate_bps, ms)| {
            let link = || Box::new(FixedLink::new(rate_bps, Duration::from_millis(ms)));
            (link() as Box<dyn Link>, link() as Box<dyn Link>)
        })
        .collect()
}

/// The simulated time until the server has read the whole stream, with `scheduler` at both
/// ends; `None` if it did not arrive within 10 s.
fn transfer(scheduler: SchedulerKind) -> Result<Option<Duration>, Box<dyn std::error::Error>> {
    let mut config = Config::default();
    config.scheduler(scheduler);
    let mut pair = Pair::new(&config, &config, links(), 1)?;
    if !pair.connect(Duration::from_secs(1)) {
        return Err("the simulated handshake did not complete".into());
    }
    let start = pair.elapsed();
    let stream = pair
        .client
        .core
        .open(true, pair.now())
        .ok_or("the peer allows no more streams")?;
    pair.client.core.write(stream, &vec![7; SIZE], pair.now())?;
    pair.client.core.finish(stream, pair.now())?;
    let mut received = 0;
    let arrived = pair.run_until(Duration::from_secs(10), |pair| {
        pair.server.core.accept(true);
        while let Some(Ok(Some(data))) = pair.server.core.read(stream, usize::MAX) {
            received += data.len();
        }
        received == SIZE
    });
    Ok(arrived.then(|| pair.elapsed() - start))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    for scheduler in [
        SchedulerKind::PriorityBucket,
        SchedulerKind::Lrf,
        SchedulerKind::RoundRobin,
    ] {
        let name = scheduler.name();
        match transfer(scheduler)? {
            Some(took) => println!("{name:>16}: 1 MB in {:.1} ms", took.as_secs_f64() * 1e3),
            None => println!("{name:>16}: not delivered within 10 s"),
        }
    }
    Ok(())
}
