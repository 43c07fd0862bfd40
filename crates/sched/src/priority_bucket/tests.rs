//! Properties of the allocator and the buckets, on random inputs.

use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::*;
use crate::{Lead, PathStatus, Urgency};

const MTU: f64 = 1500.0;

fn alloc_path() -> impl Strategy<Value = AllocPath> {
    (
        0_u64..200_000,
        1e3_f64..1e9,
        prop_oneof![Just(0_u64), 0_u64..100_000_000],
    )
        .prop_map(|(owd_us, rate, queued)| AllocPath {
            one_way_delay: Duration::from_micros(owd_us),
            bandwidth: Bandwidth::from_bytes_per_sec(rate).unwrap(),
            queued,
        })
}

fn size() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0), 1_u64..2_000, 1_u64..10_000_000_000, Just(u64::MAX)]
}

/// The optimum of P1 by bisection on T: the least T with sum_i max(0, T - r_i) b_i >= D.
fn bisect_optimum(paths: &[AllocPath], size: u64) -> f64 {
    let capacity = |t: f64| -> f64 {
        paths
            .iter()
            .map(|p| (t - p.ready_time()).max(0.0) * p.bandwidth.bytes_per_sec())
            .sum()
    };
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while capacity(hi) < size as f64 {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if capacity(mid) >= size as f64 {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}

proptest! {
    #[test]
    fn shares_sum_to_the_stream_size(
        paths in prop::collection::vec(alloc_path(), 1..=MAX_PATHS),
        size in size(),
    ) {
        let mut out = [0; MAX_PATHS];
        allocate(&paths, size, &mut out).unwrap();
        let total: u128 = out.iter().map(|&d| u128::from(d)).sum();
        prop_assert_eq!(total, u128::from(size));
    }

    #[test]
    fn paths_given_data_finish_together_and_late_paths_get_nothing(
        paths in prop::collection::vec(alloc_path(), 1..=8),
        size in 1_u64..10_000_000_000,
    ) {
        let mut out = [0; MAX_PATHS];
        let allocation = allocate(&paths, size, &mut out).unwrap();
        let used: Vec<usize> = (0..paths.len()).filter(|&i| out[i] > 0).collect();
        for &i in &used {
            for &j in &used {
                let gap = (paths[i].finish_time(out[i]) - paths[j].finish_time(out[j])).abs();
                let slack = MTU / paths[i].bandwidth.bytes_per_sec()
                    + MTU / paths[j].bandwidth.bytes_per_sec();
                prop_assert!(gap <= slack, "paths {} and {} finish {} s apart", i, j, gap);
            }
        }
        for (i, path) in paths.iter().enumerate() {
            if path.ready_time() >= allocation.finish {
                prop_assert_eq!(out[i], 0, "path {} is ready only at or after T", i);
            }
        }
    }

    #[test]
    fn finish_time_is_the_optimum_of_p1(
        paths in prop::collection::vec(alloc_path(), 1..=8),
        size in 1_u64..10_000_000_000,
    ) {
        let mut out = [0; MAX_PATHS];
        let allocation = allocate(&paths, size, &mut out).unwrap();
        let optimum = bisect_optimum(&paths, size);
        prop_assert!(
            (allocation.finish - optimum).abs() <= 1e-9 * optimum.max(1.0),
            "allocator T = {}, bisection T = {}", allocation.finish, optimum
        );
        // The whole-byte shares finish no later than T plus a few bytes of rounding.
        let slowest = (0..paths.len())
            .filter(|&i| out[i] > 0)
            .map(|i| paths[i].finish_time(out[i]) - MTU / paths[i].bandwidth.bytes_per_sec())
            .fold(f64::MIN, f64::max);
        prop_assert!(slowest <= optimum * (1.0 + 1e-9));
    }

    #[test]
    fn closed_form_for_two_paths_agrees(
        first in alloc_path(),
        second in alloc_path(),
        size in 0_u64..10_000_000_000,
    ) {
        let mut out = [0; 2];
        allocate(&[first, second], size, &mut out).unwrap();
        let (d1, d2) = allocate_two(&first, &second, size);
        prop_assert_eq!(d1 + d2, size);
        prop_assert!(d1.abs_diff(out[0]) <= 2, "closed form {} vs allocator {}", d1, out[0]);
    }
}

/// One step of the bucket-order model test.
#[derive(Debug, Clone)]
enum Op {
    Open { urgency: u8, size: u64 },
    Poll { path: usize, room: u64 },
    Estimate { path: usize, rate: f64 },
    Fail { path: usize },
}

fn op(paths: usize) -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => (0_u8..8, 1_u64..200_000).prop_map(|(urgency, size)| Op::Open { urgency, size }),
        4 => (0..paths, 1_u64..20_000).prop_map(|(path, room)| Op::Poll { path, room }),
        1 => (0..paths, 1e5_f64..1e7).prop_map(|(path, rate)| Op::Estimate { path, rate }),
        1 => (0..paths).prop_map(|path| Op::Fail { path }),
    ]
}

fn snapshot(index: usize, rate: f64, status: PathStatus) -> PathSnapshot {
    PathSnapshot {
        status,
        ..PathSnapshot::new(
            PathId(index as u32),
            Duration::from_millis(10 + 40 * index as u64),
            Bandwidth::from_bytes_per_sec(rate).unwrap(),
            u64::MAX,
        )
    }
}

proptest! {
    /// Model test: after any sequence of arrivals, polls, estimate changes and failures, every
    /// byte of every stream was granted once at the end. While no time passes, no grant on a
    /// path goes to a stream while a more urgent (or equally urgent and earlier) stream has
    /// quota there; with 20 ms between operations small streams may rise out of turn.
    #[test]
    fn buckets_are_strict_and_every_byte_is_sent_once(
        paths in 1_usize..=4,
        ops in prop::collection::vec(op(4), 1..200),
        step_ms in prop_oneof![Just(0_u64), Just(20)],
    ) {
        let step = Duration::from_millis(step_ms);
        let mut now = Instant::now();
        let mut pb = PriorityBucket::default();
        let mut latest: Vec<PathSnapshot> = (0..paths)
            .map(|i| snapshot(i, 1e6 * (i + 1) as f64, PathStatus::Available))
            .collect();
        for path in &latest {
            pb.on_path_added(now, path).unwrap();
        }
        let mut opened: Vec<(StreamId, Urgency, u64)> = Vec::new();
        let mut granted: Vec<u64> = Vec::new();
        let grant = |pb: &mut PriorityBucket, now: Instant, path: PathId, room: u64,
                     opened: &[(StreamId, Urgency, u64)], granted: &mut Vec<u64>| {
            let Some(g) = pb.poll_send(now, path, room) else { return false };
            assert!(g.bytes > 0 && g.bytes <= room);
            let index = opened.iter().position(|s| s.0 == g.stream).unwrap();
            let (_, urgency, _) = opened[index];
            for (earlier, &(id, u, _)) in opened.iter().enumerate() {
                let ahead = u < urgency || (u == urgency && earlier < index);
                if ahead && step.is_zero() {
                    assert_eq!(pb.quota(id, path), 0, "{} has quota ahead of {}", id, g.stream);
                }
            }
            granted[index] += g.bytes;
            true
        };
        for op in ops {
            now += step;
            match op {
                Op::Open { urgency, size } => {
                    let id = StreamId(opened.len() as u64);
                    let urgency = Urgency::new(urgency).unwrap();
                    let meta = StreamMeta::new(id).with_urgency(urgency).with_size(size);
                    pb.on_stream_opened(now, &meta).unwrap();
                    pb.on_data_queued(now, id, size).unwrap();
                    pb.on_stream_finished(now, id).unwrap();
                    opened.push((id, urgency, size));
                    granted.push(0);
                }
                Op::Poll { path, room } if path < paths => {
                    // Bucket order is checked against the quotas just before the grant.
                    let _ = grant(&mut pb, now, PathId(path as u32), room, &opened, &mut granted);
                }
                Op::Estimate { path, rate } if path < paths => {
                    latest[path] = snapshot(path, rate, PathStatus::Available);
                    pb.on_path_updated(now, &latest[path]).unwrap();
                }
                Op::Fail { path } if path < paths && path > 0 => {
                    latest[path] = snapshot(path, 1e6, PathStatus::Down);
                    pb.on_path_updated(now, &latest[path]).unwrap();
                }
                _ => {}
            }
        }
        // Drain: every usable path until no grant is left, each path's earlier grants
        // acknowledged before it is polled (a fresh snapshot), as the queue limit expects.
        for _ in 0..1_000_000 {
            let progressed = (0..paths).any(|p| {
                pb.on_path_updated(now, &latest[p]).unwrap();
                grant(&mut pb, now, PathId(p as u32), 1_000_000, &opened, &mut granted)
            });
            if !progressed {
                break;
            }
        }
        for (index, &(id, _, size)) in opened.iter().enumerate() {
            prop_assert_eq!(granted[index], size, "{} granted {} of {}", id, granted[index], size);
        }
    }
}

/// \[PB\] section 4.2: a newly arrived higher-priority stream pre-empts a lower one mid-way.
#[test]
fn a_more_urgent_arrival_preempts_the_bucket_below() {
    let now = Instant::now();
    let mut pb = PriorityBucket::default();
    pb.on_path_added(now, &snapshot(0, 1e6, PathStatus::Available))
        .unwrap();
    let image = StreamMeta::new(StreamId(1))
        .with_urgency(Urgency::new(5).unwrap())
        .with_size(100_000);
    pb.on_stream_opened(now, &image).unwrap();
    pb.on_data_queued(now, image.id, 100_000).unwrap();
    assert_eq!(
        pb.poll_send(now, PathId(0), 1_200).unwrap().stream,
        image.id
    );

    let css = StreamMeta::new(StreamId(2))
        .with_urgency(Urgency::HIGHEST)
        .with_size(5_000);
    pb.on_stream_opened(now, &css).unwrap();
    pb.on_data_queued(now, css.id, 5_000).unwrap();
    let next = pb.poll_send(now, PathId(0), 100_000).unwrap();
    assert_eq!((next.stream, next.bytes), (css.id, 5_000));
    assert_eq!(
        pb.poll_send(now, PathId(0), 1_200).unwrap().stream,
        image.id
    );
}

/// Streams of unknown size are allocated one window at a time and still send every byte.
#[test]
fn unknown_size_streams_go_window_by_window() {
    let now = Instant::now();
    let mut config = PriorityBucketConfig::default();
    config.unknown_size_window(10_000);
    let mut pb = PriorityBucket::new(config);
    for i in 0..2 {
        pb.on_path_added(now, &snapshot(i, 1e6, PathStatus::Available))
            .unwrap();
    }
    let id = StreamId(0);
    pb.on_stream_opened(now, &StreamMeta::new(id)).unwrap();
    pb.on_data_queued(now, id, 50_000).unwrap();
    assert_eq!(pb.quota(id, PathId(0)) + pb.quota(id, PathId(1)), 10_000);

    let mut sent = 0;
    while let Some(g) = (0..2).find_map(|p| pb.poll_send(now, PathId(p), 3_000)) {
        sent += g.bytes;
    }
    assert_eq!(sent, 50_000);
}

/// A failed path's limits move to the others: nothing stays stuck on it.
#[test]
fn a_failed_path_hands_its_share_to_the_others() {
    let now = Instant::now();
    let mut pb = PriorityBucket::default();
    for i in 0..2 {
        pb.on_path_added(now, &snapshot(i, 1e6, PathStatus::Available))
            .unwrap();
    }
    let id = StreamId(7);
    pb.on_stream_opened(now, &StreamMeta::new(id).with_size(1_000_000))
        .unwrap();
    pb.on_data_queued(now, id, 1_000_000).unwrap();
    assert!(pb.quota(id, PathId(1)) > 0);

    pb.on_path_updated(now, &snapshot(1, 1e6, PathStatus::Down))
        .unwrap();
    assert_eq!(pb.quota(id, PathId(1)), 0);
    assert_eq!(pb.quota(id, PathId(0)), 1_000_000);
    assert_eq!(pb.poll_send(now, PathId(1), 1_000), None);
}

/// A path that sent its whole share, and has half its window free, while another still holds
/// unsent quota gets part of the rest: the estimates the plan used drifted by less than the
/// threshold (here 20%), yet the plan would leave the path idle while the other sends alone,
/// the tail of a bulk transfer.
#[test]
fn a_path_that_ran_out_of_quota_takes_part_of_the_unsent_rest() {
    let now = Instant::now();
    let id = StreamId(0);
    let run = |config: PriorityBucketConfig| {
        let mut pb = PriorityBucket::new(config);
        for i in 0..2 {
            pb.on_path_added(now, &snapshot(i, 1e6, PathStatus::Available))
                .unwrap();
        }
        pb.on_stream_opened(now, &StreamMeta::new(id).with_size(1_000_000))
            .unwrap();
        pb.on_data_queued(now, id, 1_000_000).unwrap();
        let window = 20_000;
        let faster = PathSnapshot {
            cwnd: window,
            ..snapshot(1, 1.2e6, PathStatus::Available)
        };
        pb.on_path_updated(now, &faster).unwrap();
        let share = pb.quota(id, PathId(1));
        let first = pb.poll_send(now, PathId(1), share).map(|g| g.bytes);
        assert_eq!(first, Some(share));
        // Most of its window still in flight, the path is busy, not idle.
        assert_eq!(pb.poll_send(now, PathId(1), window / 2 - 1), None);
        let more = pb.poll_send(now, PathId(1), window / 2).map(|g| g.bytes);
        let left = pb.quota(id, PathId(0)) + pb.quota(id, PathId(1)) + more.unwrap_or(0);
        assert_eq!(left, 1_000_000 - share, "every byte keeps one limit");
        more
    };
    assert_eq!(run(PriorityBucketConfig::default()), Some(10_000));
    // The paper's plan is never revised for estimates.
    assert_eq!(run(PriorityBucketConfig::paper()), None);
}

/// PriorityBucket's default over pb-low's two alike paths (25 Mbit/s, 10 ms RTT), each with
/// a 100 kB window.
fn two_alike_paths(now: Instant) -> PriorityBucket {
    let mut pb = PriorityBucket::new(PriorityBucketConfig::default());
    for i in 0..2 {
        let alike = PathSnapshot::new(
            PathId(i),
            Duration::from_millis(10),
            Bandwidth::from_bits_per_sec(25e6).unwrap(),
            100_000,
        );
        pb.on_path_added(now, &alike).unwrap();
    }
    pb
}

/// A plan just made leaves each path what it sends in about the same time: the path asked
/// first takes its share and leaves the other's, however much room it has, instead of taking
/// half the rest again after every grant.
#[test]
fn a_fresh_split_of_a_small_stream_is_not_taken_apart_by_the_first_path_asked() {
    let now = Instant::now();
    let id = StreamId(0);
    let mut pb = two_alike_paths(now);
    pb.on_stream_opened(now, &StreamMeta::new(id).with_size(40_000))
        .unwrap();
    pb.on_data_queued(now, id, 40_000).unwrap();
    let (mine, theirs) = (pb.quota(id, PathId(0)), pb.quota(id, PathId(1)));
    assert!(mine > 0 && theirs > 0, "split: {mine} and {theirs}");
    let first = pb.poll_send(now, PathId(0), 100_000).map(|g| g.bytes);
    assert_eq!(first, Some(mine));
    assert_eq!(pb.poll_send(now, PathId(0), 100_000), None);
    assert_eq!(pb.quota(id, PathId(1)), theirs);
}

/// Requests of a page over two alike paths: each is smaller than a packet and of unknown
/// size, so it goes whole on one path, the least queued, instead of in halves on both.
#[test]
fn a_request_smaller_than_a_packet_goes_whole_on_one_path() {
    let now = Instant::now();
    let mut pb = two_alike_paths(now);
    for id in [StreamId(0), StreamId(4)] {
        pb.on_stream_opened(now, &StreamMeta::new(id)).unwrap();
        pb.on_data_queued(now, id, 90).unwrap();
    }
    let quotas = |pb: &PriorityBucket, id| (pb.quota(id, PathId(0)), pb.quota(id, PathId(1)));
    assert_eq!(quotas(&pb, StreamId(0)), (90, 0));
    assert_eq!(quotas(&pb, StreamId(4)), (0, 90));
    // A larger write of unknown size is still split by the paths' delays and rates.
    let id = StreamId(8);
    pb.on_stream_opened(now, &StreamMeta::new(id)).unwrap();
    pb.on_data_queued(now, id, 20_000).unwrap();
    let (mine, theirs) = quotas(&pb, id);
    assert!(mine > 0 && theirs > 0, "split: {mine} and {theirs}");
}

/// A long-RTT path with a small window carries one window per round trip, not its bottleneck
/// rate: capped by cwnd / SRTT it gets a smaller share than the paper's b_i would give it, and
/// in slow start, where the window doubles while the stream is under way, twice that rate.
#[test]
fn a_path_with_a_small_window_gets_what_its_window_carries() {
    let now = Instant::now();
    let share_of_slow_path = |window_limited: bool, slow_start: bool| {
        let mut config = PriorityBucketConfig::default();
        config.window_limited_rate(window_limited);
        let mut pb = PriorityBucket::new(config);
        let fast = PathSnapshot::new(
            PathId(0),
            Duration::from_millis(10),
            Bandwidth::from_bits_per_sec(10e6).unwrap(),
            100_000,
        );
        // 40 Mbit/s at 50 ms RTT, but an initial window of 12 kB: 240 kB/s for now.
        let slow = PathSnapshot {
            slow_start,
            ..PathSnapshot::new(
                PathId(1),
                Duration::from_millis(50),
                Bandwidth::from_bits_per_sec(40e6).unwrap(),
                12_000,
            )
        };
        pb.on_path_added(now, &fast).unwrap();
        pb.on_path_added(now, &slow).unwrap();
        let id = StreamId(0);
        pb.on_stream_opened(now, &StreamMeta::new(id).with_size(300_000))
            .unwrap();
        pb.quota(id, PathId(1))
    };
    // Paper: 25,000 bytes fill the gap on the fast path, the rest splits 1.25 : 5.
    assert_eq!(share_of_slow_path(false, false), 220_000);
    assert_eq!(share_of_slow_path(false, true), 220_000);
    // Capped: r_2 = 25 ms, b_2 = 12 kB / 50 ms = 240 kB/s, so past the gap the slow path
    // gets 275,000 x 0.24 / 1.49.
    assert_eq!(share_of_slow_path(true, false), 44_295);
    // In slow start, b_2 = 480 kB/s: 275,000 x 0.48 / 1.73.
    assert_eq!(share_of_slow_path(true, true), 76_300);
}

/// One path of 1 MB/s and `streams` (urgency, size) opened and queued in order at `now`.
fn one_path_with(
    config: PriorityBucketConfig,
    now: Instant,
    streams: &[StreamMeta],
) -> PriorityBucket {
    let mut pb = PriorityBucket::new(config);
    pb.on_path_added(now, &snapshot(0, 1e6, PathStatus::Available))
        .unwrap();
    for meta in streams {
        pb.on_stream_opened(now, meta).unwrap();
        pb.on_data_queued(now, meta.id, meta.size.unwrap()).unwrap();
    }
    pb
}

fn stream(id: u64, urgency: u8, size: u64) -> StreamMeta {
    StreamMeta::new(StreamId(id))
        .with_urgency(Urgency::new(urgency).unwrap())
        .with_size(size)
}

/// A small script of urgency 3 that leads to critical CSS is sent before the megabyte of
/// images of urgency 3 that arrived before it, and before a large urgency-1 stream.
#[test]
fn a_stream_that_leads_to_critical_ones_waits_in_their_bucket() {
    let now = Instant::now();
    let mut streams: Vec<StreamMeta> = (0..10).map(|i| stream(i, 3, 100_000)).collect();
    streams.push(stream(10, 1, 500_000));
    streams.push(stream(11, 3, 1_000).with_leads_to(lead(0, 500)));
    let mut pb = one_path_with(PriorityBucketConfig::paper(), now, &streams);
    let first = pb.poll_send(now, PathId(0), 1_200).unwrap();
    assert_eq!((first.stream, first.bytes), (StreamId(11), 1_000));
    assert_eq!(
        pb.poll_send(now, PathId(0), 1_200).unwrap().stream,
        StreamId(10)
    );
}

fn lead(urgency: u8, bytes: u64) -> Lead {
    Lead {
        urgency: Urgency::new(urgency).unwrap(),
        bytes,
    }
}

/// A stream that starts further requests is on the page load's critical path: a small one goes
/// ahead of every bucket at once, a large one that leads to more than itself first in its
/// bucket (below the two most urgent buckets), one that leads to less keeps its turn, and the
/// paper's strict buckets keep every stream in its turn.
#[test]
fn a_stream_that_starts_a_chain_of_requests_goes_early() {
    let now = Instant::now();
    let first = |config: PriorityBucketConfig, streams: &[StreamMeta]| {
        let mut pb = one_path_with(config, now, streams);
        pb.poll_send(now, PathId(0), 1_200).unwrap().stream
    };
    let default = PriorityBucketConfig::default;
    let images = stream(0, 3, 1_000_000);
    let css = stream(1, 0, 1_000_000);
    // A 9.6 kB script of urgency 1 that leads to 700 kB of urgency-3 scripts.
    let initializer = stream(2, 1, 9_600).with_leads_to(lead(3, 700_000));
    assert_eq!(first(default(), &[css, images, initializer]), StreamId(2));
    assert_eq!(
        first(PriorityBucketConfig::paper(), &[css, images, initializer]),
        StreamId(1)
    );
    // An 86 kB script of urgency 3 that leads to 333 kB more: ahead of the images that came
    // first in its bucket, still behind the CSS.
    let experience = stream(3, 3, 86_000).with_leads_to(lead(3, 333_000));
    assert_eq!(first(default(), &[images, experience]), StreamId(3));
    assert_eq!(first(default(), &[css, images, experience]), StreamId(1));
    // Leading to less than itself, or in a bucket the first paint waits for: its turn.
    let vendor = stream(4, 3, 446_000).with_leads_to(lead(3, 63_000));
    assert_eq!(first(default(), &[images, vendor]), StreamId(0));
    let framework = stream(5, 1, 100_000).with_leads_to(lead(1, 300_000));
    let critical_js = stream(6, 1, 50_000);
    assert_eq!(first(default(), &[critical_js, framework]), StreamId(6));
}

/// A grant carries the bucket its stream was taken from, so the path's sender keeps it ahead
/// of what was granted after it: the bucket a stream rose to, or its own. Only a small stream
/// that further requests wait for is also first in that bucket, ahead of the bucket's bytes
/// the path already holds.
#[test]
fn a_grant_says_the_bucket_its_stream_rose_to() {
    let now = Instant::now();
    let granted = |streams: &[StreamMeta], at: Instant| {
        let mut pb = one_path_with(PriorityBucketConfig::default(), now, streams);
        pb.poll_send(at, PathId(0), 1_200)
            .map(|grant| (grant.stream, grant.urgency.get(), grant.first_in_bucket))
    };
    let css = stream(1, 0, 1_000_000);
    let initializer = stream(2, 1, 9_600).with_leads_to(lead(3, 700_000));
    assert_eq!(
        granted(&[css, initializer], now),
        Some((StreamId(2), 0, true))
    );
    assert_eq!(granted(&[css], now), Some((StreamId(1), 0, false)));
    let images = stream(0, 3, 1_000_000);
    let script = stream(3, 4, 1_000);
    assert_eq!(
        granted(&[images, script], now),
        Some((StreamId(0), 3, false))
    );
    // Two steps of waiting lift the small script a bucket above its own, in its turn there.
    let later = now + Duration::from_millis(100);
    assert_eq!(
        granted(&[images, script], later),
        Some((StreamId(3), 3, false))
    );
    // A large script that leads to more than itself goes first in its bucket's order, but
    // not ahead of what the path holds.
    let experience = stream(4, 3, 86_000).with_leads_to(lead(3, 333_000));
    assert_eq!(
        granted(&[images, experience], now),
        Some((StreamId(4), 3, false))
    );
    // The paper's strict buckets put nothing first.
    let mut pb = one_path_with(PriorityBucketConfig::paper(), now, &[css, initializer]);
    let grant = pb.poll_send(now, PathId(0), 1_200).unwrap();
    assert_eq!((grant.stream, grant.first_in_bucket), (StreamId(1), false));
}

/// A small chain stream passes what a path holds unsent, so its plan counts only the window's
/// bytes ahead of it: it takes the nearby path that holds 50 kB unsent beyond its window,
/// where a stream in its turn, which would wait behind them, takes the far idle path.
#[test]
fn a_chain_stream_is_planned_behind_the_window_only() {
    let now = Instant::now();
    let rate = Bandwidth::from_bytes_per_sec(1.25e6).unwrap();
    let busy = PathSnapshot {
        bytes_in_flight: 80_000,
        ..PathSnapshot::new(PathId(0), Duration::from_millis(10), rate, 30_000)
    };
    let idle = PathSnapshot::new(PathId(1), Duration::from_millis(50), rate, 1_000_000);
    let mut pb = PriorityBucket::new(PriorityBucketConfig::default());
    pb.on_path_added(now, &busy).unwrap();
    pb.on_path_added(now, &idle).unwrap();
    let chain = stream(0, 1, 1_000).with_leads_to(lead(1, 50_000));
    let leaf = stream(1, 1, 1_000);
    for meta in [chain, leaf] {
        pb.on_stream_opened(now, &meta).unwrap();
        pb.on_data_queued(now, meta.id, 1_000).unwrap();
    }
    let plan = |id| (pb.quota(id, PathId(0)), pb.quota(id, PathId(1)));
    assert_eq!(plan(StreamId(0)), (1_000, 0));
    assert_eq!(plan(StreamId(1)), (0, 1_000));
}

/// A small stream that waits goes first in its bucket after one step and rises a bucket per
/// further step; a large stream and the paper's strict buckets never go out of turn.
#[test]
fn a_small_stream_rises_a_bucket_per_step_it_waits() {
    let t0 = Instant::now();
    let streams = [
        stream(0, 3, 1_000_000), // images ahead in the script's bucket
        stream(1, 2, 1_000_000), // a large stream one bucket up
        stream(2, 3, 1_000),     // the script
        stream(3, 4, 1_000_000), // large and waiting as long: never rises
    ];
    let next = |config: PriorityBucketConfig, after_ms: u64| {
        let mut pb = one_path_with(config, t0, &streams);
        pb.poll_send(t0 + Duration::from_millis(after_ms), PathId(0), 1_200)
            .unwrap()
            .stream
    };
    let default = PriorityBucketConfig::default;
    assert_eq!(next(default(), 0), StreamId(1));
    assert_eq!(next(default(), 49), StreamId(1));
    // One step (the default 50 ms): first in bucket 3, still behind bucket 2.
    let mut pb = one_path_with(default(), t0, &[streams[0], streams[2], streams[3]]);
    let at = t0 + Duration::from_millis(50);
    assert_eq!(
        pb.poll_send(at, PathId(0), 1_200).unwrap().stream,
        StreamId(2)
    );
    assert_eq!(next(default(), 50), StreamId(1));
    // Two steps: ahead of bucket 2.
    assert_eq!(next(default(), 100), StreamId(2));
    assert_eq!(next(PriorityBucketConfig::paper(), 10_000), StreamId(1));
    let mut large = default();
    large.small_stream(999);
    assert_eq!(next(large, 10_000), StreamId(1));
}

/// Past a full window only the urgent buckets send: the critical stream, then nothing.
#[test]
fn past_the_window_only_urgent_streams_are_granted() {
    let now = Instant::now();
    let mut pb = one_path_with(
        PriorityBucketConfig::default(),
        now,
        &[stream(1, 3, 100_000), stream(2, 0, 900)],
    );
    let grant = pb
        .poll_send_urgent(now, PathId(0), 100_000, Urgency::HIGHEST)
        .unwrap();
    assert_eq!((grant.stream, grant.bytes), (StreamId(2), 900));
    assert_eq!(
        pb.poll_send_urgent(now, PathId(0), 100_000, Urgency::HIGHEST),
        None
    );
    assert_eq!(
        pb.poll_send(now, PathId(0), 1_200).unwrap().stream,
        StreamId(1)
    );
}

/// While a more urgent stream is under way, the less urgent ones may fill a path only up to two
/// bandwidth-delay products, counting everything it has in flight and what was granted since
/// its last snapshot; the urgent stream is not limited.
#[test]
fn less_urgent_streams_queue_at_most_two_bdps_on_a_path() {
    let now = Instant::now();
    // 1 MB/s and 10 ms: a product of 10 kB.
    let mut pb = one_path_with(
        PriorityBucketConfig::default(),
        now,
        &[stream(1, 0, 30_000), stream(2, 3, 100_000)],
    );
    let urgent = pb.poll_send(now, PathId(0), 100_000).unwrap();
    assert_eq!((urgent.stream, urgent.bytes), (StreamId(1), 30_000));
    assert_eq!(pb.poll_send(now, PathId(0), 100_000), None);

    // The urgent bytes were acknowledged (a fresh snapshot): the image may have 20 kB there.
    pb.on_path_updated(now, &snapshot(0, 1e6, PathStatus::Available))
        .unwrap();
    let image = pb.poll_send(now, PathId(0), 15_000).unwrap();
    assert_eq!((image.stream, image.bytes), (StreamId(2), 15_000));
    assert_eq!(pb.poll_send(now, PathId(0), 100_000).unwrap().bytes, 5_000);
    assert_eq!(pb.poll_send(now, PathId(0), 100_000), None);

    // 15 kB of it still in flight: 5 kB more.
    let mut path = snapshot(0, 1e6, PathStatus::Available);
    path.bytes_in_flight = 15_000;
    pb.on_path_updated(now, &path).unwrap();
    assert_eq!(pb.poll_send(now, PathId(0), 100_000).unwrap().bytes, 5_000);
}

/// A small stream of the two most urgent buckets (a render-blocking script) is not held to
/// the queue limit while a more urgent one is under way; a large one of its bucket is, and
/// so is a small one of a lower bucket.
#[test]
fn a_small_stream_the_first_paint_waits_for_passes_the_queue_limit() {
    let now = Instant::now();
    let granted_after_the_urgent_one = |held: StreamMeta| {
        // 1 MB/s and 10 ms: a product of 10 kB, a limit of 20 kB, filled by the urgent one.
        let mut pb = one_path_with(
            PriorityBucketConfig::default(),
            now,
            &[stream(0, 0, 30_000), held, stream(2, 3, 5_000)],
        );
        let urgent = pb.poll_send(now, PathId(0), 100_000).unwrap();
        assert_eq!((urgent.stream, urgent.bytes), (StreamId(0), 30_000));
        std::iter::from_fn(|| pb.poll_send(now, PathId(0), 100_000))
            .map(|grant| (grant.stream.0, grant.bytes))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        granted_after_the_urgent_one(stream(1, 1, 11_000)),
        [(1, 11_000)]
    );
    assert_eq!(granted_after_the_urgent_one(stream(1, 1, 50_000)), []);
    assert_eq!(granted_after_the_urgent_one(stream(1, 2, 11_000)), []);
}

/// A connection whose streams share one urgency (a bulk transfer) is not limited, nor one
/// whose urgent streams ended two round trips ago, nor the paper's configuration.
#[test]
fn the_queue_limit_holds_only_while_more_urgent_streams_are_under_way() {
    let start = Instant::now();
    // The path's round trip is 10 ms.
    let later = start + Duration::from_millis(20);
    let cases = [
        (
            PriorityBucketConfig::default(),
            vec![stream(1, 3, 100_000)],
            None,
        ),
        (
            PriorityBucketConfig::default(),
            vec![stream(0, 0, 10), stream(1, 3, 100_000)],
            Some(later),
        ),
        (
            PriorityBucketConfig::paper(),
            vec![stream(0, 0, 10), stream(1, 3, 100_000)],
            None,
        ),
    ];
    for (config, streams, urgent_closed) in cases {
        let mut pb = one_path_with(config, start, &streams);
        let mut now = start;
        if let Some(closed) = urgent_closed {
            assert_eq!(
                pb.poll_send(now, PathId(0), 10).unwrap().stream,
                StreamId(0)
            );
            pb.on_stream_closed(closed - Duration::from_nanos(1), StreamId(0));
            assert_eq!(
                pb.poll_send(closed, PathId(0), 100_000).unwrap().bytes,
                19_990
            );
            now = closed + Duration::from_millis(20);
        }
        let mut bulk = 0;
        while let Some(grant) = pb.poll_send(now, PathId(0), 100_000) {
            if grant.stream == StreamId(1) {
                bulk += grant.bytes;
            }
        }
        let limited = if urgent_closed.is_some() { 19_990 } else { 0 };
        assert_eq!(bulk + limited, 100_000, "{urgent_closed:?}");
    }
}

/// A document that leads only to requests as little urgent as the stream below it (bing-2013's
/// image) does not hold that stream to the queue limit once it has left. One that leads to
/// more urgent requests, or whose requests are not known, holds it for two round trips.
#[test]
fn an_urgent_stream_holds_the_queue_after_it_only_for_more_urgent_requests() {
    let start = Instant::now();
    let closed = start + Duration::from_millis(20);
    let first_grant_after = |document: StreamMeta| {
        let streams = [document, stream(1, 3, 100_000)];
        let mut pb = one_path_with(PriorityBucketConfig::default(), start, &streams);
        let first = pb.poll_send(start, PathId(0), 10).unwrap();
        assert_eq!(first.stream, StreamId(0));
        pb.on_stream_closed(closed, StreamId(0));
        pb.poll_send(closed, PathId(0), 100_000).unwrap().bytes
    };
    let document = stream(0, 0, 10);
    assert_eq!(
        first_grant_after(document.with_leads_to(lead(3, 100_000))),
        100_000
    );
    assert_eq!(
        first_grant_after(document.with_leads_to(lead(2, 100_000))),
        19_990
    );
    assert_eq!(first_grant_after(document), 19_990);
}

/// An application that writes a size-hinted stream slower than the paths carry it: each write
/// is shared in the plan's proportions, whichever path is asked first, so that path does not
/// take it whole while the other waits with its quota. Once everything is written, each path
/// sends up to its quota.
#[test]
fn a_write_of_an_application_limited_stream_is_shared_in_the_plans_proportions() {
    let now = Instant::now();
    let mut pb = PriorityBucket::new(PriorityBucketConfig::default());
    for index in 0..2 {
        let path = PathSnapshot {
            cwnd: 1_000_000,
            ..snapshot(index, 1e6, PathStatus::Available)
        };
        pb.on_path_added(now, &path).unwrap();
    }
    let id = StreamId(0);
    pb.on_stream_opened(now, &StreamMeta::new(id).with_size(1_000_000))
        .unwrap();
    let (first, second) = (pb.quota(id, PathId(0)), pb.quota(id, PathId(1)));
    assert_eq!((first, second), (510_000, 490_000));
    let poll = |pb: &mut PriorityBucket, path: u32| {
        pb.poll_send(now, PathId(path), 1_000_000).map(|g| g.bytes)
    };
    // 100 kB written, then 100 kB more, each path asked first once: each takes its part.
    pb.on_data_queued(now, id, 100_000).unwrap();
    assert_eq!(poll(&mut pb, 1), Some(49_000));
    assert_eq!(poll(&mut pb, 0), Some(51_000));
    pb.on_data_queued(now, id, 100_000).unwrap();
    assert_eq!(poll(&mut pb, 0), Some(51_000));
    assert_eq!(poll(&mut pb, 1), Some(49_000));
    assert_eq!(poll(&mut pb, 1), None, "nothing left of the writes");
    // The rest of the stream written at once: each path sends up to its quota.
    pb.on_data_queued(now, id, 800_000).unwrap();
    assert_eq!(poll(&mut pb, 1), Some(392_000));
    assert_eq!(poll(&mut pb, 0), Some(408_000));
}
