//! The simulated driver: transfers on simulated time through the testbed's link model, with
//! real quinn-proto connections per path at both ends.

use std::time::Duration;

use mpquic_core::sim::{Link, Pair, PathLinks};
use mpquic_core::{Config, PathEvent, PathId};
use mpquic_netns::events::{EventAction, TimedEvent};
use mpquic_netns::link::{self, LinkConfig, Verdict};
use sha2::{Digest, Sha256};

/// The testbed's link model as a simulated link.
struct Emulated(link::Link);

impl Link for Emulated {
    fn offer(&mut self, now: Duration, len: usize) -> Option<Duration> {
        match self.0.offer(now, len) {
            Verdict::Deliver(at) => Some(at),
            Verdict::Dropped(_) => None,
        }
    }
}

fn emulated(config: LinkConfig) -> Box<dyn Link> {
    Box::new(Emulated(link::Link::new(config).unwrap()))
}

/// Two paths of `rate_bps` each way, 10 and 25 ms one way; path 1 goes down at `down_at`.
fn two_paths(rate_bps: u64, down_at: Option<Duration>) -> Vec<PathLinks> {
    [(10, None), (25, down_at)]
        .into_iter()
        .map(|(ms, down): (u64, Option<Duration>)| {
            let config = |seed| {
                let mut c = LinkConfig::new(rate_bps, Duration::from_millis(ms));
                c.seed = seed;
                c.events = down
                    .map(|at| TimedEvent {
                        at,
                        action: EventAction::Down,
                    })
                    .into_iter()
                    .collect();
                c
            };
            (emulated(config(ms)), emulated(config(ms + 1)))
        })
        .collect()
}

/// Deterministic bytes for a stream: a counter mixed by multiplication.
fn payload(len: usize) -> Vec<u8> {
    (0..len as u64)
        .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes()[7])
        .collect()
}

/// What a transfer measured: when it completed, what arrived, what the links carried.
#[derive(Debug, PartialEq)]
struct Outcome {
    completed_at: Duration,
    digest: [u8; 32],
    datagrams: (u64, u64),
    paths_down: Vec<PathId>,
}

/// Sends `data` on one client stream and reads it at the server as it comes.
fn transfer(mut pair: Pair, data: &[u8], limit: Duration) -> Outcome {
    let len = data.len();
    assert!(pair.connect(Duration::from_secs(2)), "paths up");
    let now = pair.now();
    let stream = pair.client.core.open(true, now).unwrap();
    let mut written = 0;
    let mut received = Sha256::new();
    let mut received_len = 0;
    let mut paths_down = Vec::new();
    let mut accepted = false;
    let done = pair.run_until(limit, |pair| {
        let now = pair.now();
        while written < len {
            let n = pair
                .client
                .core
                .write(stream, &data[written..], now)
                .unwrap();
            if n == 0 {
                break;
            }
            written += n;
            if written == len {
                pair.client.core.finish(stream, now).unwrap();
            }
        }
        if !accepted {
            accepted = pair.server.core.accept(true) == Some(stream);
        }
        while let Some(result) = accepted
            .then(|| pair.server.core.read(stream, usize::MAX))
            .flatten()
        {
            match result.unwrap() {
                Some(data) => {
                    received.update(&data);
                    received_len += data.len();
                }
                None => break,
            }
        }
        for event in pair.client.take_events() {
            if let PathEvent::Down { path, .. } = event {
                paths_down.push(path);
            }
        }
        received_len == len
    });
    assert!(
        done,
        "{received_len} of {len} bytes arrived by {:?}",
        pair.elapsed()
    );
    Outcome {
        completed_at: pair.elapsed(),
        digest: received.finalize().into(),
        datagrams: pair.datagrams(),
        paths_down,
    }
}

#[test]
fn a_transfer_is_identical_run_after_run() {
    let data = payload(2_000_000);
    let run = || {
        let pair = Pair::new(
            &Config::default(),
            &Config::default(),
            two_paths(20_000_000, None),
            7,
        )
        .unwrap();
        transfer(pair, &data, Duration::from_secs(10))
    };
    let first = run();
    assert_eq!(first.digest, <[u8; 32]>::from(Sha256::digest(&data)));
    assert_eq!(first, run());
}

#[test]
fn fifty_megabytes_survive_a_path_dying_at_one_second() {
    let data = payload(50_000_000);
    let pair = Pair::new(
        &Config::default(),
        &Config::default(),
        two_paths(100_000_000, Some(Duration::from_secs(1))),
        1,
    )
    .unwrap();
    let outcome = transfer(pair, &data, Duration::from_secs(60));
    assert_eq!(outcome.digest, <[u8; 32]>::from(Sha256::digest(&data)));
    assert_eq!(
        outcome.paths_down,
        vec![PathId(1)],
        "the dead path was declared down"
    );
    // One path of 100 Mbit/s carries 50 MB in 4 s; with the second for the first second, less.
    assert!(
        outcome.completed_at < Duration::from_secs(6),
        "completed at {:?}",
        outcome.completed_at
    );
}
