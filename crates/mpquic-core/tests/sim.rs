//! The simulated driver: transfers on simulated time through the testbed's link model, with
//! real quinn-proto connections per path at both ends: deterministic, so exact expectations
//! hold where loopback tests had to allow for the machine's load.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::payload;

use mpquic_core::sim::{emulated_link, Link, Pair, PathLinks, Transfer, BLOCK};
use mpquic_core::{Config, PathEvent, PathId, PathSet, Priority, ReadError, ReinjectionConfig};
use mpquic_scenario::events::{EventAction, TimedEvent};
use mpquic_scenario::link::{LinkConfig, Loss};
use mpquic_scenario::Scenario;
use mpquic_sched::{
    allocate, AllocPath, Bandwidth, PriorityBucket, PriorityBucketConfig, SchedulerKind, Urgency,
};
use proptest::prelude::*;
use sha2::{Digest, Sha256};

/// The testbed's link model as a simulated link.
fn emulated(config: LinkConfig) -> Box<dyn Link> {
    emulated_link(config).unwrap()
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

/// An application sees bytes at the instant their datagram arrives: a request over a path of
/// 5 ms each way and its answer take one round trip, not an extra wait at each end for
/// whatever happens next.
#[test]
fn a_request_and_its_answer_take_one_round_trip() {
    let link = |seed| {
        let mut c = LinkConfig::new(10_000_000, Duration::from_millis(5));
        c.seed = seed;
        emulated(c)
    };
    let mut pair = Pair::new(
        &Config::default(),
        &Config::default(),
        vec![(link(1), link(2))],
        1,
    )
    .unwrap();
    assert!(pair.connect(Duration::from_secs(2)), "path up");
    let (start, now) = (pair.elapsed(), pair.now());
    let stream = pair.client.core.open(false, now).unwrap();
    pair.client.core.write(stream, b"request", now).unwrap();
    pair.client.core.finish(stream, now).unwrap();
    let (mut accepted, mut answered) = (false, false);
    let done = pair.run_until(Duration::from_secs(1), |pair| {
        let now = pair.now();
        accepted = accepted || pair.server.core.accept(false) == Some(stream);
        while let Some(Ok(read)) = (accepted && !answered)
            .then(|| pair.server.core.read(stream, usize::MAX))
            .flatten()
        {
            if read.is_none() {
                pair.server.core.write(stream, b"answer", now).unwrap();
                pair.server.core.finish(stream, now).unwrap();
                answered = true;
            }
        }
        while let Some(Ok(read)) = pair.client.core.read(stream, usize::MAX) {
            if read.is_none() {
                return true;
            }
        }
        false
    });
    assert!(done, "answered");
    let round_trip = pair.elapsed() - start;
    assert!(
        round_trip < Duration::from_millis(11),
        "10 ms of delay took {round_trip:?}"
    );
}

/// Connects and sends `data` on one client stream, read at the server as it comes.
fn transfer(mut pair: Pair, data: &[u8], limit: Duration) -> Transfer {
    assert!(pair.connect(Duration::from_secs(2)), "paths up");
    let stream = pair.client.core.open(true, pair.now()).unwrap();
    transfer_on(&mut pair, stream, data, limit)
}

/// [`Pair::send_stream`], which must deliver all of `data` within `limit`.
fn transfer_on(pair: &mut Pair, stream: u64, data: &[u8], limit: Duration) -> Transfer {
    let outcome = pair.send_stream(stream, data, limit).unwrap();
    assert_eq!(
        outcome.received,
        data.len() as u64,
        "bytes that arrived by {:?}",
        pair.elapsed()
    );
    outcome
}

#[test]
fn a_transfer_is_identical_run_after_run() {
    let data = payload(1, 2_000_000);
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
    let data = payload(1, 50_000_000);
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
    let data = payload(1, 3_000_000);
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
    let on = |k: u32| outcome.sent_on(k) as f64 / size as f64;
    let want = |k: u32| shares[k as usize] as f64 / size as f64;
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

#[test]
fn a_stream_kept_on_one_path_is_sent_only_there_by_every_scheduler() {
    for kind in SchedulerKind::ALL {
        let mut config = Config::default();
        config.scheduler(kind);
        let mut pair = Pair::new(&config, &config, two_paths(20_000_000, None), 7).unwrap();
        assert!(pair.connect(Duration::from_secs(2)), "{kind:?}: paths up");
        let now = pair.now();
        let stream = pair.client.core.open(true, now).unwrap();
        let slower = PathSet::new(&[PathId(1)]).unwrap();
        pair.client
            .core
            .set_paths(stream, Some(slower), now)
            .unwrap();
        pair.client
            .core
            .set_size_hint(stream, 1_000_000, now)
            .unwrap();
        let outcome = transfer_on(
            &mut pair,
            stream,
            &payload(1, 1_000_000),
            Duration::from_secs(10),
        );
        assert_eq!(
            (outcome.sent_on(0), outcome.sent_on(1)),
            (0, 1_000_000),
            "{kind:?}"
        );
    }
}

/// What the client does with a stream once its bytes are written: finish it, or reset it
/// with code 7 after this many bytes.
#[derive(Debug, Clone, Copy)]
enum End {
    Finish,
    ResetAfter(usize),
}

/// What the server saw of a stream: its bytes, and how it ended (`Err`: reset with a code).
#[derive(Debug, Default)]
struct Received {
    data: Vec<u8>,
    end: Option<Result<(), u64>>,
}

/// Opens a client stream per entry of `streams`, writes and ends each as planned, and reads
/// every stream at the server until it ends. Returns what the server saw, in opening order.
fn exchange(pair: &mut Pair, streams: &[(Vec<u8>, End)], limit: Duration) -> Vec<Received> {
    let now = pair.now();
    let ids: Vec<u64> = streams
        .iter()
        .map(|_| pair.client.core.open(true, now).unwrap())
        .collect();
    let mut written = vec![0; streams.len()];
    let mut ended = vec![false; streams.len()];
    let mut received: BTreeMap<u64, Received> = BTreeMap::new();
    let done = pair.run_until(limit, |pair| {
        let now = pair.now();
        for (k, (data, end)) in streams.iter().enumerate() {
            if ended[k] {
                continue;
            }
            let stop_at = match end {
                End::Finish => data.len(),
                End::ResetAfter(n) => (*n).min(data.len()),
            };
            while written[k] < stop_at {
                let n = pair
                    .client
                    .core
                    .write(ids[k], &data[written[k]..stop_at], now)
                    .unwrap();
                if n == 0 {
                    break;
                }
                written[k] += n;
            }
            if written[k] == stop_at {
                match end {
                    End::Finish => pair.client.core.finish(ids[k], now).unwrap(),
                    End::ResetAfter(_) => pair.client.core.reset(ids[k], 7, now).unwrap(),
                }
                ended[k] = true;
            }
        }
        while let Some(id) = pair.server.core.accept(true) {
            received.entry(id).or_default();
        }
        for (id, stream) in received.iter_mut().filter(|(_, r)| r.end.is_none()) {
            while let Some(result) = pair.server.core.read(*id, usize::MAX) {
                match result {
                    Ok(Some(data)) => stream.data.extend_from_slice(&data),
                    Ok(None) => {
                        stream.end = Some(Ok(()));
                        break;
                    }
                    Err(ReadError::Reset(code)) => {
                        stream.end = Some(Err(code));
                        break;
                    }
                    Err(e) => panic!("stream {id}: {e}"),
                }
            }
        }
        received.len() == ids.len() && received.values().all(|r| r.end.is_some())
    });
    assert!(done, "not every stream ended by {:?}", pair.elapsed());
    ids.iter()
        .map(|id| received.remove(id).unwrap_or_default())
        .collect()
}

/// Checks the server saw each finished stream whole and each reset one as a reset, with at
/// most the bytes written before it.
fn check_delivery(streams: &[(Vec<u8>, End)], received: &[Received]) {
    for (k, ((data, end), got)) in streams.iter().zip(received).enumerate() {
        match end {
            End::Finish => {
                assert_eq!(got.end, Some(Ok(())), "stream {k} finished");
                assert!(
                    got.data == *data,
                    "stream {k}: {} of {} bytes",
                    got.data.len(),
                    data.len()
                );
            }
            End::ResetAfter(n) => {
                assert_eq!(got.end, Some(Err(7)), "stream {k} was reset");
                assert!(
                    got.data.len() <= *n && data.starts_with(&got.data),
                    "stream {k}"
                );
            }
        }
    }
}

/// `paths` paths of 20 Mbit/s, one way 5 ms more each, with `loss` on every direction.
fn paths_with_loss(paths: usize, loss: f64, seed: u64) -> Vec<PathLinks> {
    (0..paths as u64)
        .map(|k| {
            let config = |direction: u64| {
                let mut c = LinkConfig::new(20_000_000, Duration::from_millis(5 + 5 * k));
                c.loss = if loss > 0.0 {
                    Loss::Bernoulli(loss)
                } else {
                    Loss::None
                };
                c.seed = seed * 16 + 2 * k + direction;
                c
            };
            (emulated(config(0)), emulated(config(1)))
        })
        .collect()
}

#[test]
fn every_scheduler_delivers_streams_of_every_size_over_one_two_and_four_paths() {
    let sizes = [0, 1, 1200, 100_000, 1_000_000];
    let streams: Vec<(Vec<u8>, End)> = sizes
        .iter()
        .map(|&n| (payload(1, n), End::Finish))
        .collect();
    for kind in SchedulerKind::ALL {
        for paths in [1, 2, 4] {
            let mut config = Config::default();
            config.scheduler(kind);
            let mut pair = Pair::new(&config, &config, paths_with_loss(paths, 0.0, 1), 1).unwrap();
            assert!(
                pair.connect(Duration::from_secs(2)),
                "{} over {paths}",
                kind.name()
            );
            let received = exchange(&mut pair, &streams, Duration::from_secs(20));
            check_delivery(&streams, &received);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random streams, ends, loss and a path that may die: every finished stream arrives
    /// whole, every reset one as a reset, whatever the scheduler.
    #[test]
    fn streams_are_delivered_whatever_the_loss_resets_and_path_deaths(
        plans in proptest::collection::vec((0usize..1_000_000, proptest::option::of(0usize..1_000_000)), 1..6),
        loss in prop_oneof![Just(0.0), 0.0..0.03],
        // After both paths are up (about 60 ms), mostly while data flows.
        path_dies_at in proptest::option::of(100u64..1_000),
        kind in proptest::sample::select(SchedulerKind::ALL.to_vec()),
        seed in 0u64..1_000,
    ) {
        let streams: Vec<(Vec<u8>, End)> = plans
            .iter()
            .map(|&(len, reset)| (payload(1, len), reset.map_or(End::Finish, End::ResetAfter)))
            .collect();
        let mut links = paths_with_loss(2, loss, seed);
        if let Some(ms) = path_dies_at {
            let mut config = LinkConfig::new(20_000_000, Duration::from_millis(10));
            config.events = vec![TimedEvent { at: Duration::from_millis(ms), action: EventAction::Down }];
            links[1] = (emulated(config.clone()), emulated(config));
        }
        let mut config = Config::default();
        config.scheduler(kind);
        let mut pair = Pair::new(&config, &config, links, seed).unwrap();
        prop_assert!(pair.connect(Duration::from_secs(2)));
        let received = exchange(&mut pair, &streams, Duration::from_secs(60));
        check_delivery(&streams, &received);
    }
}

/// pb-high's two paths (10 Mbit/s, 5 ms and 40 Mbit/s, 25 ms one way, `LinkConfig::from_spec`
/// queues); path `dies` goes down in both directions at `down`, and up again at `up` if set.
fn pb_high(dies: usize, down: Duration, up: Option<Duration>) -> Vec<PathLinks> {
    preset_with("pb-high", 0, |k, c| {
        if k == dies {
            c.events.push(TimedEvent {
                at: down,
                action: EventAction::Down,
            });
            c.events.extend(up.map(|at| TimedEvent {
                at,
                action: EventAction::Up,
            }));
        }
    })
}

/// The links of the scenario preset `name` (`LinkConfig::from_spec`), seeded from `seed`, each
/// direction's config of path `k` changed by `edit(k, config)` first.
fn preset_with(name: &str, seed: u64, edit: impl Fn(usize, &mut LinkConfig)) -> Vec<PathLinks> {
    let scenario = Scenario::by_name(name).unwrap();
    scenario
        .paths
        .iter()
        .enumerate()
        .map(|(k, spec)| {
            let (mut up, mut down) = LinkConfig::of_path(spec, seed, k);
            edit(k, &mut up);
            edit(k, &mut down);
            (emulated(up), emulated(down))
        })
        .collect()
}

/// What the receiving application saw of a stream written at a steady rate.
struct Steady {
    /// The longest time without a byte delivered, between the first and the last.
    longest_gap: Duration,
    /// When it ended.
    gap_from: Duration,
    intact: bool,
    suspected: Vec<PathId>,
    /// When a path that joined after the connection's start first delivered stream bytes.
    new_path_delivered: Option<Duration>,
    /// Datagrams the links dropped from then on.
    lost_after_rejoin: u64,
}

/// Writes `len` bytes on one client stream at `rate_bps`, read at the server as they come,
/// with `len` as the stream's size hint if `hinted` (as the testbed's writer gives it).
/// Blocks of [`BLOCK`] bytes are written as they fall due, as the testbed's writer does
/// (`send_payload` in `crates/lab/src/transfer.rs`). Writing whatever is due at every step of
/// the simulation would tie the write size to the packet rate: more packets, smaller writes,
/// and at 20 Mbit/s a flood of 50-byte packets that overflows the 40 Mbit/s path's queue.
fn steady_stream(
    pair: &mut Pair,
    rate_bps: u64,
    len: usize,
    hinted: bool,
    limit: Duration,
) -> Steady {
    assert!(pair.connect(Duration::from_secs(2)), "paths up");
    let data = payload(1, len);
    let start = pair.now();
    let stream = pair.client.core.open(true, start).unwrap();
    if hinted {
        pair.client
            .core
            .set_size_hint(stream, len as u64, start)
            .unwrap();
    }
    let (mut written, mut received) = (0, Vec::with_capacity(len));
    let mut last_delivery: Option<Duration> = None;
    let (mut longest_gap, mut gap_from) = (Duration::ZERO, Duration::ZERO);
    let mut suspected = Vec::new();
    let mut new_path_delivered = None;
    let mut lost_at_rejoin = 0;
    let first_paths: Vec<PathId> = pair.server.core.path_ids().collect();
    let mut accepted = false;
    let done = pair.run_until(limit, |pair| {
        let now = pair.now();
        while written < len {
            let block_start = written / BLOCK * BLOCK;
            if now < start + Duration::from_secs_f64(block_start as f64 * 8.0 / rate_bps as f64) {
                break;
            }
            let block_end = (block_start + BLOCK).min(len);
            let n = pair
                .client
                .core
                .write(stream, &data[written..block_end], now)
                .unwrap();
            if n == 0 {
                break;
            }
            written += n;
            if written == len {
                pair.client.core.finish(stream, now).unwrap();
            }
        }
        accepted = accepted || pair.server.core.accept(true) == Some(stream);
        while let Some(Ok(Some(bytes))) = accepted
            .then(|| pair.server.core.read(stream, usize::MAX))
            .flatten()
        {
            received.extend_from_slice(&bytes);
            let at = pair.elapsed();
            if let Some(last) = last_delivery {
                if at - last > longest_gap {
                    (longest_gap, gap_from) = (at - last, last);
                }
            }
            last_delivery = Some(at);
        }
        for event in pair.client.take_events() {
            if let PathEvent::Suspected { path } = event {
                suspected.push(path);
            }
        }
        let server = &pair.server.core;
        let new_delivering = server.path_ids().any(|id| {
            !first_paths.contains(&id) && server.path(id).is_some_and(|(_, c)| c.bytes_received > 0)
        });
        if new_delivering && new_path_delivered.is_none() {
            new_path_delivered = Some(pair.elapsed());
            lost_at_rejoin = pair.datagrams().1;
        }
        received.len() == len
    });
    assert!(done, "{} of {len} bytes arrived", received.len());
    Steady {
        longest_gap,
        gap_from,
        intact: received == data,
        suspected,
        new_path_delivered,
        lost_after_rejoin: new_path_delivered.map_or(0, |_| pair.datagrams().1 - lost_at_rejoin),
    }
}

/// A 20 Mbit/s stream over pb-high keeps flowing when either path dies at 2 s: the dead path is
/// suspected after a probe timeout and what it had in flight goes on the other at once, so the
/// receiving application waits less than 200 ms (rather than the 1 s failure deadline).
#[test]
fn a_stream_keeps_flowing_within_200_ms_when_either_path_dies() {
    for dies in [0, 1] {
        let mut pair = Pair::new(
            &Config::default(),
            &Config::default(),
            pb_high(dies, Duration::from_secs(2), None),
            3,
        )
        .unwrap();
        let outcome = steady_stream(
            &mut pair,
            20_000_000,
            10_000_000,
            false,
            Duration::from_secs(20),
        );
        eprintln!(
            "path {dies} dies: longest gap {:?} from {:?}",
            outcome.longest_gap, outcome.gap_from
        );
        assert!(
            outcome.intact,
            "path {dies} dies: the stream arrived intact"
        );
        assert_eq!(outcome.suspected, vec![PathId(dies as u32)]);
        assert!(
            outcome.longest_gap < Duration::from_millis(200),
            "path {dies} dies: the application waited {:?} from {:?}",
            outcome.longest_gap,
            outcome.gap_from
        );
    }
}

/// With every stream urgent, bytes on a lossy path that a faster path would deliver sooner are
/// re-sent there as they are lost, within the budget; the receiver keeps one copy of each.
#[test]
fn bytes_lost_on_a_slower_path_are_reinjected_within_the_budget() {
    let reinjection = ReinjectionConfig {
        urgency: Urgency::new(7).ok(),
        ..ReinjectionConfig::default()
    };
    let mut config = Config::default();
    config.reinjection(reinjection).unwrap();
    let mut pair = Pair::new(&config, &config, paths_with_loss(2, 0.02, 4), 4).unwrap();
    assert!(pair.connect(Duration::from_secs(2)));
    let streams: Vec<(Vec<u8>, End)> = (0..20)
        .map(|k| (payload(1, 50_000 + 10_000 * k), End::Finish))
        .collect();
    let received = exchange(&mut pair, &streams, Duration::from_secs(30));
    check_delivery(&streams, &received);
    let sent = pair.client.core.reinjection_stats();
    eprintln!("client {sent:?}");
    eprintln!("server {:?}", pair.server.core.reinjection_stats());
    assert!(
        sent.on_loss > 0,
        "losses on the slower path were re-injected"
    );
    let allowance = (sent.sent as f64 * reinjection.budget) as u64 + reinjection.budget_floor;
    assert!(
        sent.on_loss <= allowance,
        "{} bytes re-injected on loss against an allowance of {allowance}",
        sent.on_loss
    );
    assert!(pair.server.core.reinjection_stats().duplicate_received > 0);
}

/// An urgent 40 kB stream split over pb-high's paths loses the first packet of its share on the
/// 40 Mbit/s path (25 ms one way). The receiver gets none of that share until the path repairs
/// the loss: the share is one ordered quinn stream. So when the loss is declared, the whole
/// share goes again on the 10 Mbit/s path, not just the lost packet, and the stream ends when
/// that copy lands: 62 ms after it was opened, against 76 ms without re-injection and 76 ms
/// when only the lost packet went again (seed 1). With missing reports, the receiver sees the
/// hole when the share's next packet arrives and says so on the 10 ms path, a round trip of
/// the 40 Mbit/s path before its acknowledgements would: the share goes again then, and the
/// stream ends after 42 ms.
#[test]
fn a_loss_sends_every_byte_it_holds_up_again_on_the_faster_path() {
    let run = |reinjection: ReinjectionConfig| {
        let mut config = Config::default();
        config.reinjection(reinjection).unwrap();
        let armed = Arc::new(AtomicBool::new(false));
        let mut links = preset_with("pb-high", 1, |_, _| {});
        let (up, _) = &mut links[1];
        let mut inner = std::mem::replace(up, Box::new(|_, _| None));
        let drop_next = armed.clone();
        *up = Box::new(move |now, len| {
            // The first full datagram after arming: a packet of the stream's share.
            if len >= 1000 && drop_next.swap(false, Ordering::Relaxed) {
                return None;
            }
            inner.offer(now, len)
        });
        let mut pair = Pair::new(&config, &config, links, 1).unwrap();
        assert!(pair.connect(Duration::from_secs(2)), "paths up");
        let now = pair.now();
        let stream = pair.client.core.open(true, now).unwrap();
        let client = &mut pair.client.core;
        client
            .set_priority(stream, Priority::new(Urgency::HIGHEST, false), now)
            .unwrap();
        client.set_size_hint(stream, 40_000, now).unwrap();
        armed.store(true, Ordering::Relaxed);
        let started = pair.elapsed();
        let outcome = transfer_on(
            &mut pair,
            stream,
            &payload(1, 40_000),
            Duration::from_secs(5),
        );
        assert!(!armed.load(Ordering::Relaxed), "a packet was dropped");
        assert!(outcome.sent_on(1) > 5_000, "{:?}", outcome.per_path);
        (
            outcome.completed_at - started,
            pair.client.core.reinjection_stats(),
        )
    };
    let (took_on_loss, on_loss) = run(ReinjectionConfig {
        missing_reports: false,
        ..ReinjectionConfig::default()
    });
    let (took_reported, reported) = run(ReinjectionConfig::default());
    let (took_without, _) = run(ReinjectionConfig {
        urgency: None,
        ..ReinjectionConfig::default()
    });
    eprintln!(
        "took {took_reported:?} reported, {took_on_loss:?} on loss, {took_without:?} without; \
         {reported:?}, {on_loss:?}"
    );
    assert!(
        on_loss.on_loss > 2 * 1500,
        "more than the lost packet went again: {on_loss:?}"
    );
    assert!(
        took_on_loss + Duration::from_millis(10) < took_without,
        "{took_on_loss:?} with re-injection on loss, {took_without:?} without"
    );
    assert!(
        reported.on_missing > 2 * 1500,
        "the report sent the share again: {reported:?}"
    );
    assert!(
        took_reported + Duration::from_millis(10) < took_on_loss,
        "{took_reported:?} with missing reports, {took_on_loss:?} on loss alone"
    );
}

/// XLINK's stream-end re-injection: an urgent 100 kB stream is split over two 20 Mbit/s paths
/// (10 and 25 ms one way) when the 25 ms path's delay jumps to 300 ms. Its share there is
/// overdue a probe timeout after it was sent; the 10 ms path, idle, sends it again then, and
/// the stream completes in 128 ms instead of 317 ms (seed 3). Suspicion is off in both runs
/// and no link loses anything, so only the stream's end re-injects; the receiver times the
/// slower copies against the faster.
#[test]
fn an_urgent_streams_tail_on_a_slowed_path_is_sent_again_on_the_idle_one() {
    let spike = Duration::from_secs(1);
    let run = |reinjection: ReinjectionConfig| {
        let mut config = Config::default();
        config.reinjection(reinjection).unwrap();
        // The slowed path's whole share goes to quinn at once: a share partly held back by
        // the window would be re-allocated to the idle path before it was ever sent.
        config.initial_window(128 * 1024).unwrap();
        let paths = [(10, None), (25, Some(spike))]
            .into_iter()
            .map(|(ms, spike): (u64, Option<Duration>)| {
                let link = || {
                    let mut c = LinkConfig::new(20_000_000, Duration::from_millis(ms));
                    c.events = spike
                        .map(|at| TimedEvent {
                            at,
                            action: EventAction::Delay(Duration::from_millis(300)),
                        })
                        .into_iter()
                        .collect();
                    emulated(c)
                };
                (link(), link())
            })
            .collect();
        let mut pair = Pair::new(&config, &config, paths, 3).unwrap();
        assert!(pair.connect(Duration::from_secs(2)), "paths up");
        let wait = spike - Duration::from_millis(5) - pair.elapsed();
        pair.run_until(wait, |_| false);
        let stream = pair.client.core.open(true, pair.now()).unwrap();
        pair.client
            .core
            .set_priority(stream, Priority::new(Urgency::HIGHEST, false), pair.now())
            .unwrap();
        let started = pair.elapsed();
        let outcome = transfer_on(
            &mut pair,
            stream,
            &payload(1, 100_000),
            Duration::from_secs(10),
        );
        // The slower copies land after the stream is complete.
        pair.run_until(Duration::from_millis(500), |_| false);
        let stats = (
            pair.client.core.reinjection_stats(),
            pair.server.core.reinjection_stats(),
        );
        (outcome.completed_at - started, stats)
    };
    let mut with = ReinjectionConfig {
        suspect: false,
        stream_end: true,
        // Enough for the slowed path's whole share of this one stream.
        budget: 0.5,
        ..ReinjectionConfig::default()
    };
    let (took, (sent, received)) = run(with);
    with.urgency = None;
    let (took_without, _) = run(with);
    eprintln!("took {took:?} with, {took_without:?} without; {sent:?}; {received:?}");
    assert!(sent.at_stream_end > 0, "the tail was re-injected");
    assert_eq!(sent.on_loss + sent.on_suspicion, 0);
    assert!(
        took + Duration::from_millis(150) < took_without,
        "{took:?} with re-injection, {took_without:?} without"
    );
    assert!(received.timed_duplicates > 0);
    assert!(received.first_copy_lead > Duration::from_millis(150));
}

/// A path that died at 2 s and comes back at 5 s is declared failed, opened again by the client
/// from the same address, and carries stream bytes again before 5.5 s, whether the stream has
/// a size hint or not. With one, priority-bucket allocates the whole unsent rest when the path
/// joins; the path then gets its part of each write, not only what the other path leaves.
/// The stream never waits 200 ms, and the rejoined path's Startup, which meets the backlog of
/// the outage, leaves on the queue it builds before it overflows it (56-59 datagrams dropped
/// when the 40 Mbit/s path came back, before BBR's delay exit).
#[test]
fn a_failed_path_that_comes_back_carries_data_again_within_half_a_second() {
    for (dies, hinted) in [(0, false), (1, false), (0, true), (1, true)] {
        let (down, up) = (Duration::from_secs(2), Duration::from_secs(5));
        let mut pair = Pair::new(
            &Config::default(),
            &Config::default(),
            pb_high(dies, down, Some(up)),
            5,
        )
        .unwrap();
        let outcome = steady_stream(
            &mut pair,
            20_000_000,
            15_000_000,
            hinted,
            Duration::from_secs(30),
        );
        assert!(outcome.intact, "path {dies}: the stream arrived intact");
        let back = outcome.new_path_delivered;
        eprintln!(
            "path {dies} dies, size hint {hinted}: a new path delivered at {back:?}; longest gap \
             {:?} from {:?}; {} datagrams dropped after",
            outcome.longest_gap, outcome.gap_from, outcome.lost_after_rejoin
        );
        assert!(
            back.is_some_and(|at| at > up && at < up + Duration::from_millis(500)),
            "path {dies}, size hint {hinted}: a rejoined path delivered at {back:?}"
        );
        assert!(
            outcome.longest_gap < Duration::from_millis(200),
            "path {dies}, size hint {hinted}: the application waited {:?} from {:?}",
            outcome.longest_gap,
            outcome.gap_from
        );
        assert!(
            outcome.lost_after_rejoin <= 10,
            "path {dies}, size hint {hinted}: {} datagrams dropped after the path came back",
            outcome.lost_after_rejoin
        );
    }
}

// ---- receive credit (the hardening issue's regressions, moved from loopback) ----

/// A server whose connection window is 1 MiB and stream window `stream_window`.
fn small_window(stream_window: u64) -> Config {
    let mut config = Config::default();
    config
        .receive_window(1 << 20)
        .unwrap()
        .stream_receive_window(stream_window)
        .unwrap();
    config
}

/// One path of 100 Mbit/s, 5 ms each way.
fn one_path() -> Vec<PathLinks> {
    let link = || emulated(LinkConfig::new(100_000_000, Duration::from_millis(5)));
    vec![(link(), link())]
}

/// Stream bytes the server received on all its paths.
fn server_received(pair: &Pair) -> u64 {
    let core = &pair.server.core;
    core.path_ids()
        .filter_map(|id| core.path(id))
        .map(|(_, counters)| counters.bytes_received)
        .sum()
}

/// Writes what the stream takes of `data[*written..]`; finishes it once all is written if
/// `finish`.
fn write_some(pair: &mut Pair, stream: u64, data: &[u8], written: &mut usize, finish: bool) {
    let now = pair.now();
    while *written < data.len() {
        let n = pair
            .client
            .core
            .write(stream, &data[*written..], now)
            .unwrap();
        if n == 0 {
            return;
        }
        *written += n;
        if *written == data.len() && finish {
            pair.client.core.finish(stream, now).unwrap();
        }
    }
}

/// Opens `count` client streams, writes `data` on each (finishing them if `finish`) and runs
/// until the server has received all of it, unread; returns the streams.
fn fill_unread(
    pair: &mut Pair,
    count: usize,
    data: &[u8],
    finish: bool,
    limit: Duration,
) -> Vec<u64> {
    let now = pair.now();
    let streams: Vec<u64> = (0..count)
        .map(|_| pair.client.core.open(true, now).unwrap())
        .collect();
    let mut written = vec![0; count];
    let filled = pair.run_until(limit, |pair| {
        for (k, stream) in streams.iter().enumerate() {
            write_some(pair, *stream, data, &mut written[k], finish);
        }
        server_received(pair) >= (count * data.len()) as u64
    });
    assert!(
        filled,
        "the server received {} bytes",
        server_received(pair)
    );
    streams
}

/// Reads what the server has of `stream` into `into`; `Some` once it ended (with how).
fn read_some(pair: &mut Pair, stream: u64, into: &mut Vec<u8>) -> Option<Result<(), ReadError>> {
    loop {
        match pair.server.core.read(stream, usize::MAX)? {
            Ok(Some(bytes)) => into.extend_from_slice(&bytes),
            Ok(None) => return Some(Ok(())),
            // The server has not seen the stream yet (reads of an unknown stream fail so).
            Err(ReadError::ClosedStream) if into.is_empty() => return None,
            Err(e) => return Some(Err(e)),
        }
    }
}

#[test]
fn reading_a_reset_stream_returns_its_buffered_bytes_to_the_window() {
    const STREAM: usize = 64 * 1024;
    let limit = Duration::from_secs(10);
    let mut pair = Pair::new(&Config::default(), &small_window(256 * 1024), one_path(), 1).unwrap();
    assert!(pair.connect(Duration::from_secs(2)));
    // Sixteen streams fill the connection window, and stay buffered at the server...
    let data = payload(1, STREAM);
    let streams = fill_unread(&mut pair, 16, &data, false, limit);
    // ...until their writer resets them, and the server has the resets: the writer forgets a
    // reset stream once the server acknowledged it.
    let now = pair.now();
    for stream in &streams {
        pair.client.core.reset(*stream, 7, now).unwrap();
    }
    let forgotten = pair.run_until(limit, |pair| {
        let now = pair.now();
        streams.iter().all(|s| {
            pair.client
                .core
                .set_priority(*s, Priority::DEFAULT, now)
                .is_err()
        })
    });
    assert!(forgotten, "the server acknowledged the resets");
    for stream in &streams {
        assert_eq!(pair.server.core.accept(true), Some(*stream));
        let result = pair.server.core.read(*stream, usize::MAX);
        assert!(
            matches!(result, Some(Err(ReadError::Reset(7)))),
            "expected the reset, got {result:?}"
        );
    }
    // The window they held is free again: a seventeenth stream gets through.
    let stream = pair.client.core.open(true, pair.now()).unwrap();
    let (mut written, mut received) = (0, Vec::new());
    let arrived = pair.run_until(limit, |pair| {
        write_some(pair, stream, &data, &mut written, true);
        read_some(pair, stream, &mut received).is_some()
    });
    assert!(arrived, "{} of {STREAM} bytes arrived", received.len());
    assert!(received == data);
}

#[test]
fn unread_streams_below_the_window_do_not_block_the_others() {
    const UNREAD: usize = 300 * 1024;
    const READ: usize = 2 << 20;
    let limit = Duration::from_secs(20);
    let mut pair = Pair::new(&Config::default(), &small_window(512 * 1024), one_path(), 2).unwrap();
    assert!(pair.connect(Duration::from_secs(2)));
    // Two streams hold 600 KiB of the 1 MiB window, unread.
    let data = payload(1, UNREAD);
    let held = fill_unread(&mut pair, 2, &data, true, limit);
    // A third stream, twice the window, flows through the rest as it is read.
    let big = payload(1, READ);
    let stream = pair.client.core.open(true, pair.now()).unwrap();
    let (mut written, mut received) = (0, Vec::new());
    let arrived = pair.run_until(limit, |pair| {
        write_some(pair, stream, &big, &mut written, true);
        read_some(pair, stream, &mut received) == Some(Ok(()))
    });
    assert!(arrived, "{} of {READ} bytes arrived", received.len());
    assert!(received == big);
    // The held streams were intact all along.
    for stream in held {
        let mut got = Vec::new();
        assert_eq!(read_some(&mut pair, stream, &mut got), Some(Ok(())));
        assert!(got == data, "held stream {stream}");
    }
}

/// A writer that announced its end (fin) and is then stopped resets with the final size it
/// announced, not with what it had sent so far: the reader must not see two final sizes. (Found
/// as a flaky "final size violated" in the h3 tests; here every seed is a fixed interleaving.)
#[test]
fn stop_sending_after_the_fin_resets_with_the_announced_final_size() {
    let limit = Duration::from_secs(10);
    for seed in 1..=5 {
        let mut pair = Pair::new(
            &Config::default(),
            &Config::default(),
            two_paths(20_000_000, None),
            seed,
        )
        .unwrap();
        assert!(pair.connect(Duration::from_secs(2)));
        // More than the first congestion windows carry: most of it is still unsent when the
        // fin is announced and the stop arrives.
        let big = payload(1, 3 << 20);
        let stream = pair.client.core.open(true, pair.now()).unwrap();
        let mut written = 0;
        let stopped = pair.run_until(limit, |pair| {
            write_some(pair, stream, &big, &mut written, true);
            written == big.len() && pair.server.core.stop(stream, 9).is_ok()
        });
        assert!(
            stopped,
            "seed {seed}: the server saw the stream and stopped it"
        );
        let after = pair.client.core.open(true, pair.now()).unwrap();
        let (mut written, mut received) = (0, Vec::new());
        let arrived = pair.run_until(limit, |pair| {
            write_some(pair, after, b"after", &mut written, true);
            read_some(pair, after, &mut received) == Some(Ok(()))
        });
        assert!(arrived, "seed {seed}: the next stream arrived");
        assert_eq!(received, b"after");
        assert_eq!(pair.server.core.error(), None, "seed {seed}");
        assert_eq!(pair.client.core.error(), None, "seed {seed}");
    }
}

/// 2% random loss on both of pb-high's paths costs little more than the 2%. quinn keeps a
/// stream's bytes in its send window from the oldest unacknowledged one on, so a window of
/// one and a half congestion windows held a lossy path to 75% of the summed rates here
/// (`Telemetry::send_window` in `crates/mpquic-core/src/telemetry.rs`).
#[test]
fn random_loss_of_two_percent_keeps_a_bulk_transfer_near_the_paths_rates() {
    let data = payload(3, 20_000_000);
    for seed in 1..=3 {
        let share = bulk_share("pb-high-lossy", &Config::default(), &data, seed);
        assert!(
            share > 0.85,
            "seed {seed}: {:.1}% of the summed rates",
            100.0 * share
        );
    }
}

/// lrf aggregates two equal paths: it once waited for room the other path's grants had
/// already taken (55% of the summed rates here).
#[test]
fn lrf_aggregates_two_equal_paths() {
    let mut config = Config::default();
    config.scheduler(SchedulerKind::Lrf);
    let share = bulk_share("pb-low", &config, &payload(4, 5_000_000), 1);
    assert!(share > 0.85, "{:.1}% of the summed rates", 100.0 * share);
}

/// Without loss BBR keeps both of pb-low's paths busy. The window it hands quinn holds the
/// flight at the pacing rate's bandwidth-delay product, so pacing 1% below the estimate (the
/// draft's margin) left each bottleneck idle 1% of the time: 95.2% of the summed rates here,
/// against 95.5% without the margin (`crates/mpquic-core/src/bbr/model.rs`).
#[test]
fn bbr_keeps_two_lossless_paths_busy() {
    let share = bulk_share("pb-low", &Config::default(), &payload(5, 20_000_000), 1);
    assert!(share > 0.954, "{:.2}% of the summed rates", 100.0 * share);
}

/// The share of scenario `name`'s summed path rates that sending `data` on one stream gets.
fn bulk_share(name: &str, config: &Config, data: &[u8], seed: u64) -> f64 {
    let rates: u64 = Scenario::by_name(name)
        .unwrap()
        .paths
        .iter()
        .map(|p| p.rate_bps)
        .sum();
    let links = preset_with(name, seed, |_, _| {});
    let mut pair = Pair::new(config, config, links, seed).unwrap();
    assert!(pair.connect(Duration::from_secs(2)), "paths up");
    let start = pair.elapsed();
    let stream = pair.client.core.open(true, pair.now()).unwrap();
    let outcome = transfer_on(&mut pair, stream, data, Duration::from_secs(20));
    let seconds = (outcome.completed_at - start).as_secs_f64();
    data.len() as f64 * 8.0 / seconds / rates as f64
}
