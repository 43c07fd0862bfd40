//! Property tests: the estimators stay within bounds and never panic, whatever they are fed.

use std::time::{Duration, Instant};

use mpquic_estimate::{
    BandwidthConfig, BandwidthEstimator, OneWayDelay, RttConfig, RttEstimator, SentPacketState,
};
use proptest::prelude::*;

/// Durations from zero to the largest representable, weighted towards realistic ones.
fn any_duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        4 => (0u64..10_000_000_000).prop_map(Duration::from_nanos),
        1 => any::<u64>().prop_map(Duration::from_nanos),
        1 => (any::<u64>(), 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
        1 => Just(Duration::ZERO),
        1 => Just(Duration::MAX),
    ]
}

proptest! {
    #[test]
    fn srtt_stays_between_the_smallest_and_largest_sample(
        samples in prop::collection::vec(any_duration(), 1..64),
    ) {
        let mut rtt = RttEstimator::new(RttConfig::default()).unwrap();
        let mut owd = OneWayDelay::default();
        for &s in &samples {
            rtt.on_sample(s);
        }
        let min = *samples.iter().min().unwrap();
        let max = *samples.iter().max().unwrap();
        prop_assert!(rtt.srtt() >= min && rtt.srtt() <= max);
        prop_assert_eq!(rtt.min_rtt(), min);
        prop_assert!(rtt.rttvar() <= max);
        prop_assert!(rtt.rto() >= rtt.config().min_rto && rtt.rto() <= rtt.config().max_rto);
        prop_assert_eq!(rtt.samples(), samples.len() as u64);
        prop_assert_eq!(owd.estimate(&rtt), min / 2);
        owd.set_measured(Some(max));
        prop_assert_eq!(owd.estimate(&rtt), max);
    }

    #[test]
    fn rto_respects_any_valid_clamp(
        initial in any_duration().prop_filter("non-zero prior", |d| !d.is_zero()),
        a in any_duration(),
        b in any_duration(),
        g in any_duration(),
        samples in prop::collection::vec(any_duration(), 0..16),
    ) {
        let config = RttConfig {
            initial_rtt: initial,
            min_rto: a.min(b),
            max_rto: a.max(b),
            clock_granularity: g,
        };
        let mut rtt = RttEstimator::new(config).unwrap();
        prop_assert!(rtt.rto() >= config.min_rto && rtt.rto() <= config.max_rto);
        for s in samples {
            rtt.on_sample(s);
            prop_assert!(rtt.rto() >= config.min_rto && rtt.rto() <= config.max_rto);
        }
    }
}

#[derive(Debug, Clone)]
enum Op {
    /// Send a packet `at_ms` after the base instant.
    Send {
        at_ms: u64,
        bytes: u64,
        in_flight: u64,
        app_limited: bool,
    },
    /// Acknowledge the `pick`-th remembered packet (modulo their number) `at_ms` after the base.
    Ack { at_ms: u64, pick: usize, bytes: u64 },
}

fn any_bytes() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 0u64..100_000, 1 => any::<u64>()]
}

fn any_op() -> impl Strategy<Value = Op> {
    // Times jump around freely (up to ~11 days), so sends and acks arrive in any order.
    let at = 0u64..1_000_000_000;
    prop_oneof![
        (at.clone(), any_bytes(), any_bytes(), any::<bool>()).prop_map(
            |(at_ms, bytes, in_flight, app_limited)| Op::Send {
                at_ms,
                bytes,
                in_flight,
                app_limited,
            }
        ),
        (at, any::<usize>(), any_bytes()).prop_map(|(at_ms, pick, bytes)| Op::Ack {
            at_ms,
            pick,
            bytes,
        }),
    ]
}

proptest! {
    #[test]
    fn bandwidth_never_panics_and_stays_finite_and_positive(
        initial in prop_oneof![Just(f64::MIN_POSITIVE), 1e-300f64..1e300, Just(f64::MAX)],
        window_rounds in prop_oneof![1u64..32, Just(u64::MAX)],
        idle_flight_samples in any::<bool>(),
        ops in prop::collection::vec(any_op(), 0..200),
    ) {
        let base = Instant::now();
        let config = BandwidthConfig { initial_bandwidth: initial, window_rounds, idle_flight_samples };
        let mut est = BandwidthEstimator::new(config).unwrap();
        let mut sent: Vec<SentPacketState> = Vec::new();
        let mut rounds = est.round_count();
        for op in ops {
            match op {
                Op::Send { at_ms, bytes, in_flight, app_limited } => {
                    let now = base + Duration::from_millis(at_ms);
                    sent.push(est.on_packet_sent(now, bytes, in_flight, app_limited));
                }
                Op::Ack { at_ms, pick, bytes } => {
                    if sent.is_empty() {
                        continue;
                    }
                    let state = sent[pick % sent.len()];
                    let now = base + Duration::from_millis(at_ms);
                    if let Some(s) = est.on_packet_acked(now, &state, bytes) {
                        prop_assert!(s.delivery_rate.is_finite() && s.delivery_rate > 0.0);
                        prop_assert!(!s.interval.is_zero());
                        prop_assert!(s.delivered > 0);
                    }
                }
            }
            let bw = est.bandwidth();
            prop_assert!(bw.is_finite() && bw > 0.0, "bandwidth {}", bw);
            prop_assert!(est.round_count() >= rounds);
            rounds = est.round_count();
        }
    }
}
