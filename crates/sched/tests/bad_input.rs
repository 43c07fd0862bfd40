//! Bad input never panics a scheduler: NaN, zero, negative or infinite estimates are refused
//! when the values are built, and zero paths, empty streams, `u64::MAX` sizes, extreme delays
//! and more than [`MAX_PATHS`] paths give typed errors or defined results, for every scheduler.

use std::time::{Duration, Instant};

use mpquic_sched::{
    Bandwidth, PathId, PathSnapshot, SchedError, Scheduler, SchedulerKind, StreamId, StreamMeta,
    Urgency, MAX_PATHS,
};

fn rate(bytes_per_sec: f64) -> Bandwidth {
    Bandwidth::from_bytes_per_sec(bytes_per_sec).expect("a valid rate")
}

fn path(id: u32, rtt: Duration, bandwidth: Bandwidth, cwnd: u64) -> PathSnapshot {
    PathSnapshot::new(PathId(id), rtt, bandwidth, cwnd)
}

/// Polls every known path until nothing is granted (bounded), checking each grant.
fn drain(s: &mut dyn Scheduler, now: Instant, paths: &[u32], room: u64) -> u64 {
    let mut total = 0_u64;
    for _ in 0..10_000 {
        let mut progressed = false;
        for &p in paths {
            if let Some(grant) = s.poll_send(now, PathId(p), room) {
                assert!(
                    grant.bytes > 0 && grant.bytes <= room,
                    "{}: {grant:?}",
                    s.name()
                );
                total = total.saturating_add(grant.bytes);
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
    }
    total
}

#[test]
fn estimates_that_are_not_finite_positive_numbers_are_refused() {
    for bad in [f64::NAN, 0.0, -0.0, -1.0, f64::INFINITY, f64::NEG_INFINITY] {
        assert!(
            matches!(
                Bandwidth::from_bytes_per_sec(bad),
                Err(SchedError::InvalidBandwidth(_))
            ),
            "{bad}"
        );
    }
    assert!(Bandwidth::from_bits_per_sec(f64::MAX).is_ok());
    assert!(Bandwidth::from_bytes_per_sec(f64::MIN_POSITIVE / 2.0).is_ok());
    assert_eq!(Urgency::new(8), Err(SchedError::UrgencyOutOfRange(8)));
    assert_eq!(Urgency::new(255), Err(SchedError::UrgencyOutOfRange(255)));
}

#[test]
fn no_path_means_no_grant() {
    let now = Instant::now();
    for kind in SchedulerKind::ALL {
        let mut s = kind.build();
        let id = StreamId(0);
        s.on_stream_opened(now, &StreamMeta::new(id).with_size(10_000))
            .unwrap();
        s.on_data_queued(now, id, 10_000).unwrap();
        assert_eq!(s.poll_send(now, PathId(0), 1_200), None, "{kind}");
        // The path arrives later: the data goes.
        s.on_path_added(now, &path(0, Duration::from_millis(10), rate(1e6), 1 << 20))
            .unwrap();
        assert_eq!(drain(s.as_mut(), now, &[0], 1_200), 10_000, "{kind}");
    }
}

#[test]
fn path_limits_and_unknown_ids_are_typed_errors() {
    let now = Instant::now();
    let p = |id| path(id, Duration::from_millis(10), rate(1e6), 15_000);
    for kind in SchedulerKind::ALL {
        let mut s = kind.build();
        for id in 0..MAX_PATHS as u32 {
            s.on_path_added(now, &p(id)).unwrap();
        }
        assert_eq!(
            s.on_path_added(now, &p(MAX_PATHS as u32)),
            Err(SchedError::TooManyPaths { max: MAX_PATHS }),
            "{kind}"
        );
        assert_eq!(
            s.on_path_added(now, &p(0)),
            Err(SchedError::DuplicatePath(PathId(0)))
        );
        assert_eq!(
            s.on_path_updated(now, &p(99)),
            Err(SchedError::UnknownPath(PathId(99)))
        );
        s.on_path_removed(now, PathId(99)); // ignored
        assert_eq!(s.poll_send(now, PathId(99), 1_200), None, "{kind}");

        let meta = StreamMeta::new(StreamId(1)).with_size(5);
        s.on_stream_opened(now, &meta).unwrap();
        assert_eq!(
            s.on_stream_opened(now, &meta),
            Err(SchedError::DuplicateStream(StreamId(1)))
        );
        assert_eq!(
            s.on_data_queued(now, StreamId(2), 5),
            Err(SchedError::UnknownStream(StreamId(2)))
        );
        assert_eq!(
            s.on_stream_finished(now, StreamId(2)),
            Err(SchedError::UnknownStream(StreamId(2)))
        );
        s.on_stream_closed(now, StreamId(2)); // ignored
                                              // 32 paths carry a small stream without trouble.
        s.on_data_queued(now, StreamId(1), 5).unwrap();
        s.on_stream_finished(now, StreamId(1)).unwrap();
        let all: Vec<u32> = (0..MAX_PATHS as u32).collect();
        assert_eq!(drain(s.as_mut(), now, &all, 1_200), 5, "{kind}");
    }
}

#[test]
fn empty_and_huge_streams_have_defined_results() {
    let now = Instant::now();
    for kind in SchedulerKind::ALL {
        let mut s = kind.build();
        s.on_path_added(
            now,
            &path(0, Duration::from_millis(10), rate(1e6), u64::MAX),
        )
        .unwrap();
        s.on_path_added(
            now,
            &path(1, Duration::from_millis(50), rate(5e6), u64::MAX),
        )
        .unwrap();

        // D = 0: nothing to grant, ever.
        let empty = StreamId(0);
        s.on_stream_opened(now, &StreamMeta::new(empty).with_size(0))
            .unwrap();
        s.on_stream_finished(now, empty).unwrap();
        assert_eq!(drain(s.as_mut(), now, &[0, 1], 1_200), 0, "{kind}");

        // u64::MAX bytes declared and queued: grants stay within the room offered.
        let huge = StreamId(1);
        s.on_stream_opened(now, &StreamMeta::new(huge).with_size(u64::MAX))
            .unwrap();
        s.on_data_queued(now, huge, u64::MAX).unwrap();
        s.on_data_queued(now, huge, u64::MAX).unwrap(); // saturates, no overflow
        for p in [0, 1] {
            if let Some(grant) = s.poll_send(now, PathId(p), u64::MAX) {
                assert!(grant.bytes > 0, "{kind}");
            }
        }
        s.on_stream_closed(now, huge);
        s.on_stream_closed(now, empty);
        assert_eq!(drain(s.as_mut(), now, &[0, 1], 1_200), 0, "{kind}");
    }
}

#[test]
fn extreme_estimates_have_defined_results() {
    let now = Instant::now();
    let tiny = rate(f64::MIN_POSITIVE);
    let huge = rate(f64::MAX);
    let cases = [
        (Duration::ZERO, rate(1e6), 15_000),
        (Duration::MAX, rate(1e6), 15_000),
        (Duration::from_millis(10), tiny, 15_000),
        (Duration::from_millis(10), huge, u64::MAX),
        (Duration::from_millis(10), rate(1e6), 0),
    ];
    for kind in SchedulerKind::ALL {
        for (rtt, bandwidth, cwnd) in cases {
            let mut s = kind.build();
            s.on_path_added(now, &path(0, rtt, bandwidth, cwnd))
                .unwrap();
            // The other path as extreme in delay, so no sane path shields the odd one.
            s.on_path_added(now, &path(1, Duration::MAX, rate(1e6), 15_000))
                .unwrap();
            let id = StreamId(0);
            s.on_stream_opened(now, &StreamMeta::new(id).with_size(50_000))
                .unwrap();
            s.on_data_queued(now, id, 50_000).unwrap();
            s.on_stream_finished(now, id).unwrap();
            let _ = s.poll_timeout();
            let sent = drain(s.as_mut(), now, &[0, 1], 1_200);
            assert!(sent <= 50_000, "{kind} with {rtt:?} {bandwidth:?} {cwnd}");
            // Back to sane values: the rest of the stream still goes.
            let sane = path(0, Duration::from_millis(10), rate(1e6), 1 << 20);
            s.on_path_updated(now, &sane).unwrap();
            s.on_path_updated(now, &path(1, Duration::from_millis(30), rate(1e6), 1 << 20))
                .unwrap();
            let later = now + Duration::from_secs(1);
            let rest = drain(s.as_mut(), later, &[0, 1], 1_200);
            assert_eq!(
                sent + rest,
                50_000,
                "{kind} with {rtt:?} {bandwidth:?} {cwnd}"
            );
        }
    }
}
