//! Stream-to-path affinity: every scheduler grants a stream restricted to some paths only on
//! those, and still sends every byte of every stream.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use mpquic_sched::{
    Bandwidth, PathId, PathSet, PathSnapshot, SchedulerKind, StreamId, StreamMeta, Urgency,
};

const SIZE: u64 = 200_000;

fn path(id: u32, rtt_ms: u64, mbit: f64) -> PathSnapshot {
    let rate = Bandwidth::from_bits_per_sec(mbit * 1e6).unwrap();
    PathSnapshot::new(PathId(id), Duration::from_millis(rtt_ms), rate, 1_000_000)
}

/// Bytes granted per stream and path when a fast path 0 and a slow path 1 are polled in turns
/// until nothing is left (at most 2000 rounds of 10 simulated ms), each round with fresh
/// snapshots: what the paths were granted before has been delivered.
fn grants(kind: SchedulerKind, streams: &[StreamMeta]) -> BTreeMap<(u64, u32), u64> {
    let mut scheduler = kind.build();
    let start = Instant::now();
    let paths = [path(0, 10, 50.0), path(1, 60, 10.0)];
    for path in &paths {
        scheduler.on_path_added(start, path).unwrap();
    }
    for meta in streams {
        scheduler.on_stream_opened(start, meta).unwrap();
        scheduler.on_data_queued(start, meta.id, SIZE).unwrap();
        scheduler.on_stream_finished(start, meta.id).unwrap();
    }
    let mut granted = BTreeMap::new();
    let mut total = 0;
    for round in 0..2000u32 {
        let now = start + Duration::from_millis(10) * round;
        for id in [0, 1] {
            scheduler.on_path_updated(now, &paths[id as usize]).unwrap();
            while let Some(grant) = scheduler.poll_send(now, PathId(id), 12_000) {
                *granted.entry((grant.stream.0, id)).or_insert(0) += grant.bytes;
                total += grant.bytes;
            }
        }
        if total == SIZE * streams.len() as u64 {
            break;
        }
    }
    granted
}

#[test]
fn every_scheduler_keeps_restricted_streams_on_their_paths_and_sends_everything() {
    let only = |id| PathSet::new(&[PathId(id)]).unwrap();
    let streams = [
        StreamMeta::new(StreamId(0)).with_size(SIZE),
        StreamMeta::new(StreamId(4))
            .with_size(SIZE)
            .with_paths(only(1)),
        StreamMeta::new(StreamId(8))
            .with_size(SIZE)
            .with_urgency(Urgency::HIGHEST)
            .with_paths(only(0)),
        StreamMeta::new(StreamId(12))
            .with_size(SIZE)
            .with_paths(PathSet::new(&[PathId(0), PathId(1)]).unwrap()),
    ];
    for kind in SchedulerKind::ALL {
        let granted = grants(kind, &streams);
        for meta in &streams {
            let sent: u64 = granted
                .iter()
                .filter(|((stream, _), _)| *stream == meta.id.0)
                .map(|(_, bytes)| bytes)
                .sum();
            assert_eq!(sent, SIZE, "{kind:?}: {} sent {sent} bytes", meta.id);
        }
        assert_eq!(
            granted.get(&(4, 0)),
            None,
            "{kind:?}: stream 4 went on path 0"
        );
        assert_eq!(
            granted.get(&(8, 1)),
            None,
            "{kind:?}: stream 8 went on path 1"
        );
    }
}

#[test]
fn priority_bucket_splits_a_stream_only_over_the_paths_it_may_use() {
    let both = StreamMeta::new(StreamId(0)).with_size(SIZE);
    let granted = grants(SchedulerKind::PriorityBucket, &[both]);
    assert!(granted.contains_key(&(0, 0)) && granted.contains_key(&(0, 1)));

    let kept = both.with_paths(PathSet::new(&[PathId(1)]).unwrap());
    let granted = grants(SchedulerKind::PriorityBucket, &[kept]);
    assert_eq!(granted.get(&(0, 1)), Some(&SIZE));
}

#[test]
fn a_path_set_holds_at_most_its_capacity_and_at_least_one_path() {
    let ids: Vec<PathId> = (0..=PathSet::CAPACITY as u32).map(PathId).collect();
    assert!(PathSet::new(&ids[..PathSet::CAPACITY]).is_ok());
    assert!(PathSet::new(&ids).is_err());
    assert!(PathSet::new(&[]).is_err());
    let set = PathSet::new(&[PathId(3), PathId(3), PathId(70)]).unwrap();
    assert_eq!(set.iter().collect::<Vec<_>>(), [PathId(3), PathId(70)]);
}
