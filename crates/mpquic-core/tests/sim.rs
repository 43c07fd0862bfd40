//! The simulated driver: transfers on simulated time through the testbed's link model, with
//! real quinn-proto connections per path at both ends: deterministic, so exact expectations
//! hold where loopback tests had to allow for the machine's load.

use std::time::Duration;

use mpquic_core::sim::{Link, Pair, PathLinks};
use mpquic_core::{Config, PathEvent, PathId};
use mpquic_netns::events::{EventAction, TimedEvent};
use mpquic_netns::link::{self, LinkConfig};
use mpquic_sched::{allocate, AllocPath, Bandwidth, PriorityBucket, PriorityBucketConfig};
use sha2::{Digest, Sha256};

/// The testbed's link model as a simulated link.
fn emulated(config: LinkConfig) -> Box<dyn Link> {
    let mut link = link::Link::new(config).unwrap();
    Box::new(move |now, len| link.offer(now, len).arrival())
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

/// What a transfer measured: when it completed, what arrived, what the links carried, which
/// paths went down, and the stream's bytes sent on each path.
#[derive(Debug, PartialEq)]
struct Outcome {
    completed_at: Duration,
    digest: [u8; 32],
    datagrams: (u64, u64),
    paths_down: Vec<PathId>,
    per_path: Vec<u64>,
}

/// Connects and sends `data` on one client stream, read at the server as it comes.
fn transfer(mut pair: Pair, data: &[u8], limit: Duration) -> Outcome {
    assert!(pair.connect(Duration::from_secs(2)), "paths up");
    let stream = pair.client.core.open(true, pair.now()).unwrap();
    transfer_on(&mut pair, stream, data, limit)
}

/// Sends `data` on the client's open stream `stream` and reads it at the server as it comes.
fn transfer_on(pair: &mut Pair, stream: u64, data: &[u8], limit: Duration) -> Outcome {
    let len = data.len();
    let counters = pair.client.core.send_counters(stream).unwrap();
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
    let per_path = counters.per_path();
    Outcome {
        completed_at: pair.elapsed(),
        digest: received.finalize().into(),
        datagrams: pair.datagrams(),
        paths_down,
        per_path: (0..2)
            .map(|k| per_path.get(&PathId(k)).copied().unwrap_or(0))
            .collect(),
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

/// PriorityBucket splits a stream with a size hint in the allocator's proportions, read back
/// from the stream's per-path byte counts. Re-allocation is off, so the split is the one made
/// when the hint arrived, from the estimates read just before.
#[test]
fn a_size_hinted_stream_is_split_in_the_allocators_proportions() {
    let mut config = Config::default();
    config.scheduler_factory("priority-bucket", || {
        let mut pb = PriorityBucketConfig::default();
        pb.drift_threshold(f64::INFINITY);
        Box::new(PriorityBucket::new(pb))
    });
    let mut pair = Pair::new(&config, &config, two_paths(20_000_000, None), 5).unwrap();
    assert!(pair.connect(Duration::from_secs(2)));
    // Warm both paths so the estimates are measured, not priors.
    let data = payload(3_000_000);
    let warm_up = pair.client.core.open(true, pair.now()).unwrap();
    transfer_on(&mut pair, warm_up, &data, Duration::from_secs(10));

    let size = 2_000_000u64;
    let paths: Vec<AllocPath> = [PathId(0), PathId(1)]
        .iter()
        .map(|id| {
            let p = pair.client.core.path_snapshot(*id).unwrap();
            AllocPath {
                one_way_delay: p.one_way_delay,
                // PriorityBucket's rate: the estimate capped by what the window carries per RTT.
                bandwidth: Bandwidth::from_bits_per_sec(
                    (p.bandwidth.bytes_per_sec() * 8.0)
                        .min(p.cwnd as f64 * 8.0 / p.srtt.as_secs_f64()),
                )
                .unwrap(),
                queued: 0,
            }
        })
        .collect();
    let mut shares = vec![0; paths.len()];
    allocate(&paths, size, &mut shares).unwrap();

    let now = pair.now();
    let stream = pair.client.core.open(true, now).unwrap();
    pair.client.core.set_size_hint(stream, size, now).unwrap();
    let outcome = transfer_on(
        &mut pair,
        stream,
        &data[..size as usize],
        Duration::from_secs(10),
    );
    let on = |k: usize| outcome.per_path[k] as f64 / size as f64;
    let want = |k: usize| shares[k] as f64 / size as f64;
    for k in 0..2 {
        assert!(on(k) > 0.0, "path {k} carried part of the stream");
        assert!(
            (on(k) - want(k)).abs() < 0.02,
            "path {k}: {:.3} of the stream vs the allocator's {:.3}",
            on(k),
            want(k)
        );
    }
}
