use super::*;
use crate::events::MAX_RATE_BPS;
use crate::preset::Scenario;
use proptest::prelude::*;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn link(config: LinkConfig) -> Link {
    Link::new(config).unwrap()
}

fn delivered(v: Verdict) -> Duration {
    match v {
        Verdict::Deliver(t) => t,
        other => panic!("expected a delivery, got {other:?}"),
    }
}

#[test]
fn serialization_is_exact() {
    // 1500 B = 12 000 bit at 12 Mbit/s: 1 ms on the wire, then 10 ms of delay.
    let mut l = link(LinkConfig::new(12_000_000, ms(10)));
    assert_eq!(l.offer(ms(5), 1500), Verdict::Deliver(ms(16)));
    // 1 byte at 3 bit/s: 8/3 s, rounded up to whole nanoseconds.
    let mut l = link(LinkConfig::new(3, Duration::ZERO));
    assert_eq!(
        l.offer(Duration::ZERO, 1),
        Verdict::Deliver(Duration::from_nanos(2_666_666_667))
    );
    // An empty datagram takes no time on the wire.
    let mut l = link(LinkConfig::new(1_000_000, ms(3)));
    assert_eq!(l.offer(ms(1), 0), Verdict::Deliver(ms(4)));
}

#[test]
fn back_to_back_packets_queue_and_leave_one_transmission_apart() {
    let mut l = link(LinkConfig::new(12_000_000, ms(10)));
    let times: Vec<Duration> = (0..5).map(|_| delivered(l.offer(ms(0), 1500))).collect();
    assert_eq!(times, vec![ms(11), ms(12), ms(13), ms(14), ms(15)]);
    // A packet arriving after the queue drained starts at once.
    assert_eq!(l.offer(ms(100), 1500), Verdict::Deliver(ms(111)));
    // Mixed sizes: 750 B takes 0.5 ms.
    assert_eq!(
        l.offer(ms(100), 750),
        Verdict::Deliver(Duration::from_micros(111_500))
    );
}

#[test]
fn drop_tail_at_the_configured_bytes() {
    let mut l = link(LinkConfig {
        queue_bytes: Some(4500),
        ..LinkConfig::new(12_000_000, ms(10))
    });
    for _ in 0..3 {
        assert!(matches!(l.offer(ms(0), 1500), Verdict::Deliver(_)));
    }
    assert_eq!(l.offer(ms(0), 1500), Verdict::Dropped(DropReason::Queue));
    assert_eq!(l.offer(ms(0), 1), Verdict::Dropped(DropReason::Queue));
    // At 1 ms the first packet's transmission has ended: room for exactly one more.
    assert_eq!(l.offer(ms(1), 1500), Verdict::Deliver(ms(14)));
    assert_eq!(l.offer(ms(1), 1500), Verdict::Dropped(DropReason::Queue));
    // A queue of 4000 bytes takes two 1500-byte packets and a 1000-byte one, not a third.
    let mut l = link(LinkConfig {
        queue_bytes: Some(4000),
        ..LinkConfig::new(12_000_000, ms(10))
    });
    assert!(matches!(l.offer(ms(0), 1500), Verdict::Deliver(_)));
    assert!(matches!(l.offer(ms(0), 1500), Verdict::Deliver(_)));
    assert_eq!(l.offer(ms(0), 1500), Verdict::Dropped(DropReason::Queue));
    assert!(matches!(l.offer(ms(0), 1000), Verdict::Deliver(_)));
    assert_eq!(l.config().queue_bytes, Some(4000));
}

#[test]
fn default_queue_is_the_simulators() {
    let l = link(LinkConfig::new(40_000_000, ms(25)));
    // 40 Mbit/s x 50 ms = 250 000 bytes.
    assert_eq!(l.config().queue_bytes, Some(250_000));
    let l = link(LinkConfig::new(1_000_000, ms(1)));
    assert_eq!(l.config().queue_bytes, Some(64 * 1024));
}

/// Losses among `n` packets spaced far enough apart that the queue never fills.
fn count_losses(loss: Loss, n: u64, seed: u64) -> (u64, Vec<bool>) {
    let mut l = link(LinkConfig {
        loss,
        seed,
        ..LinkConfig::new(MAX_RATE_BPS, ms(1))
    });
    let lost: Vec<bool> = (0..n)
        .map(|i| match l.offer(Duration::from_micros(i), 1200) {
            Verdict::Deliver(_) => false,
            Verdict::Dropped(DropReason::Loss) => true,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    (lost.iter().filter(|&&x| x).count() as u64, lost)
}

#[test]
fn bernoulli_two_percent_is_within_the_binomial_interval() {
    let n = 100_000;
    let p = 0.02;
    let mean = n as f64 * p;
    let half = 2.576 * (n as f64 * p * (1.0 - p)).sqrt();
    for seed in [1, 2, 3] {
        let (lost, _) = count_losses(Loss::Bernoulli(p), n, seed);
        assert!(
            (lost as f64 - mean).abs() <= half,
            "seed {seed}: {lost} lost, 99% interval {mean} +- {half}"
        );
    }
    assert_eq!(count_losses(Loss::Bernoulli(0.0), 1000, 1).0, 0);
    assert_eq!(count_losses(Loss::Bernoulli(1.0), 1000, 1).0, 1000);
}

#[test]
fn gilbert_elliott_matches_its_stationary_loss_and_is_bursty() {
    let (g2b, b2g, lg, lb) = (0.01, 0.1, 0.001, 0.5);
    let loss = Loss::GilbertElliott {
        good_to_bad: g2b,
        bad_to_good: b2g,
        loss_in_good: lg,
        loss_in_bad: lb,
    };
    let n = 400_000;
    let (lost, pattern) = count_losses(loss, n, 7);
    let stationary = (b2g * lg + g2b * lb) / (g2b + b2g);
    let measured = lost as f64 / n as f64;
    assert!(
        (measured - stationary).abs() <= 0.1 * stationary,
        "measured {measured}, stationary {stationary}"
    );
    // Bursts: a loss is far more likely right after a loss than on average.
    let after_loss = pattern.windows(2).filter(|w| w[0]).count() as f64;
    let both = pattern.windows(2).filter(|w| w[0] && w[1]).count() as f64;
    assert!(
        both / after_loss > 3.0 * measured,
        "{} vs {measured}",
        both / after_loss
    );
}

#[test]
fn seeded_runs_repeat() {
    let run = |seed| count_losses(Loss::Bernoulli(0.3), 2000, seed).1;
    assert_eq!(run(5), run(5));
    assert_ne!(run(5), run(6));
    let ge = Loss::GilbertElliott {
        good_to_bad: 0.2,
        bad_to_good: 0.2,
        loss_in_good: 0.1,
        loss_in_bad: 0.9,
    };
    assert_eq!(count_losses(ge, 2000, 9).1, count_losses(ge, 2000, 9).1);
}

#[test]
fn trace_delivers_at_its_opportunities() {
    // One opportunity per millisecond: 12 Mbit/s.
    let mut l = link(LinkConfig {
        trace: Some(Trace::parse("1\n").unwrap()),
        ..LinkConfig::new(0, ms(10))
    });
    let times: Vec<Duration> = (0..4).map(|_| delivered(l.offer(ms(0), 1500))).collect();
    assert_eq!(times, vec![ms(11), ms(12), ms(13), ms(14)]);
    // Small packets still take a whole opportunity; a 3000-byte one takes two.
    assert_eq!(l.offer(ms(0), 100), Verdict::Deliver(ms(15)));
    assert_eq!(l.offer(ms(0), 3000), Verdict::Deliver(ms(17)));
    // Unused opportunities are wasted: an idle link serves the next arrival at once.
    assert_eq!(l.offer(ms(50), 1500), Verdict::Deliver(ms(60)));
    assert_eq!(
        l.offer(Duration::from_micros(50_500), 1500),
        Verdict::Deliver(ms(61))
    );
}

#[test]
fn trace_queue_counts_bytes() {
    let mut l = link(LinkConfig {
        trace: Some(Trace::parse("10\n").unwrap()),
        queue_bytes: Some(3000),
        ..LinkConfig::new(0, ms(1))
    });
    assert_eq!(l.offer(ms(0), 1500), Verdict::Deliver(ms(11)));
    assert_eq!(l.offer(ms(0), 1500), Verdict::Deliver(ms(21)));
    assert_eq!(l.offer(ms(0), 1), Verdict::Dropped(DropReason::Queue));
    assert_eq!(l.offer(ms(10), 1500), Verdict::Deliver(ms(31)));
}

#[test]
fn trace_goodput_is_its_mean_rate() {
    // Bursts of 3 opportunities, a gap, 1 more: period 10 ms, 4 x 1500 B / 10 ms = 4.8 Mbit/s.
    let trace = Trace::parse("2\n2\n2\n10\n").unwrap();
    let mean = trace.mean_rate_bps();
    assert_eq!(mean, 4_800_000.0);
    let mut l = link(LinkConfig {
        trace: Some(trace),
        ..LinkConfig::new(0, ms(20))
    });
    // Offer 12 Mbit/s for 10 s; count what arrives between 1 s and 9 s.
    let mut bytes = 0u64;
    for i in 0..10_000 {
        if let Verdict::Deliver(t) = l.offer(ms(i), 1500) {
            if t > Duration::from_secs(1) && t <= Duration::from_secs(9) {
                bytes += 1500;
            }
        }
    }
    let rate = bytes as f64 * 8.0 / 8.0;
    assert!((rate - mean).abs() <= 0.01 * mean, "{rate} vs {mean}");
}

fn events(texts: &[&str]) -> Vec<TimedEvent> {
    texts
        .iter()
        .map(|t| TimedEvent::parse(t).unwrap())
        .collect()
}

#[test]
fn a_path_down_at_two_seconds_drops_everything_after() {
    let mut l = link(LinkConfig {
        events: events(&["2s down", "3.5s up"]),
        ..LinkConfig::new(10_000_000, ms(5))
    });
    // 1000 B every millisecond: 8 Mbit/s, below the rate, so only events drop.
    let verdicts: Vec<(u64, Verdict)> = (0..5000).map(|i| (i, l.offer(ms(i), 1000))).collect();
    for (i, v) in verdicts {
        let down = (2000..3500).contains(&i);
        match v {
            Verdict::Dropped(DropReason::Down) => assert!(down, "{i} ms dropped"),
            Verdict::Deliver(t) => {
                assert!(!down, "{i} ms delivered");
                assert_eq!(t, ms(i) + Duration::from_micros(800) + ms(5));
            }
            other => panic!("{i} ms: {other:?}"),
        }
    }
}

#[test]
fn rate_and_delay_events_apply_to_later_arrivals() {
    let mut l = link(LinkConfig {
        events: events(&["1s rate 6mbit", "2s delay 30ms"]),
        ..LinkConfig::new(12_000_000, ms(10))
    });
    assert_eq!(l.offer(ms(999), 1500), Verdict::Deliver(ms(1010)));
    assert_eq!(l.offer(ms(1000), 1500), Verdict::Deliver(ms(1012)));
    assert_eq!(l.offer(ms(2000), 1500), Verdict::Deliver(ms(2032)));
    // A rate event ends a trace.
    let mut l = link(LinkConfig {
        trace: Some(Trace::parse("100\n").unwrap()),
        events: events(&["1s rate 12mbit"]),
        ..LinkConfig::new(0, ms(0))
    });
    assert_eq!(l.offer(ms(0), 1500), Verdict::Deliver(ms(100)));
    assert_eq!(l.offer(ms(1000), 1500), Verdict::Deliver(ms(1001)));
}

#[test]
fn time_never_goes_backwards() {
    let mut l = link(LinkConfig {
        events: events(&["2s down"]),
        ..LinkConfig::new(12_000_000, ms(0))
    });
    assert_eq!(l.offer(ms(2000), 10), Verdict::Dropped(DropReason::Down));
    assert_eq!(l.offer(ms(0), 10), Verdict::Dropped(DropReason::Down));
}

#[test]
fn bad_configs_name_the_problem() {
    let base = || LinkConfig::new(10_000_000, ms(5));
    let cases: Vec<(LinkConfig, &str)> = vec![
        (LinkConfig::new(0, ms(5)), "rate is 0"),
        (LinkConfig::new(MAX_RATE_BPS + 1, ms(5)), "100 Gbit/s"),
        (LinkConfig::new(1000, Duration::from_secs(61)), "delay"),
        (
            LinkConfig {
                loss: Loss::Bernoulli(1.5),
                ..base()
            },
            "Bernoulli loss probability 1.5",
        ),
        (
            LinkConfig {
                loss: Loss::Bernoulli(-0.1),
                ..base()
            },
            "not in 0..=1",
        ),
        (
            LinkConfig {
                loss: Loss::Bernoulli(f64::NAN),
                ..base()
            },
            "NaN",
        ),
        (
            LinkConfig {
                loss: Loss::GilbertElliott {
                    good_to_bad: 0.1,
                    bad_to_good: f64::INFINITY,
                    loss_in_good: 0.0,
                    loss_in_bad: 1.0,
                },
                ..base()
            },
            "bad_to_good",
        ),
        (
            LinkConfig {
                queue_bytes: Some(1499),
                ..base()
            },
            "1500-byte",
        ),
    ];
    for (config, needle) in cases {
        match Link::new(config.clone()) {
            Err(e @ LinkError::Invalid { .. }) => {
                assert!(e.to_string().contains(needle), "{config:?}: {e}")
            }
            other => panic!("{config:?}: expected LinkError::Invalid, got {other:?}"),
        }
    }
    let bad_events: Vec<(Vec<TimedEvent>, usize, &str)> = vec![
        (events(&["2s down", "1s up"]), 1, "sorted"),
        (
            vec![TimedEvent {
                at: ms(1),
                action: EventAction::Rate(0),
            }],
            0,
            "rate is 0",
        ),
        (
            events(&["1s up", "2s down"])
                .into_iter()
                .chain([TimedEvent {
                    at: ms(3000),
                    action: EventAction::Delay(Duration::from_secs(90)),
                }])
                .collect(),
            2,
            "delay",
        ),
    ];
    for (evs, at, needle) in bad_events {
        match Link::new(LinkConfig {
            events: evs,
            ..base()
        }) {
            Err(LinkError::Event { index, reason }) => {
                assert_eq!(index, at, "{reason}");
                assert!(reason.contains(needle), "{reason}");
            }
            other => panic!("expected an event error, got {other:?}"),
        }
    }
    // Equal times are in order; a trace-driven link needs no rate.
    assert!(Link::new(LinkConfig {
        events: events(&["1s down", "1s up"]),
        ..base()
    })
    .is_ok());
    assert!(Link::new(LinkConfig {
        trace: Some(Trace::parse("1\n").unwrap()),
        ..LinkConfig::new(0, ms(5))
    })
    .is_ok());
}

#[test]
fn from_spec_builds_the_pb_high_rows() {
    let high = Scenario::by_name("pb-high").unwrap();
    let lossy = Scenario::by_name("pb-high-lossy").unwrap();
    let expect = [(10_000_000, ms(5)), (40_000_000, ms(25))];
    for (i, &(rate, delay)) in expect.iter().enumerate() {
        let spec = &high.paths[i];
        let config = LinkConfig::from_spec(spec, 42);
        assert_eq!(config.rate_bps, rate);
        assert_eq!(config.delay, delay);
        assert_eq!(config.loss, Loss::None);
        assert_eq!(config.seed, 42);
        let mut l = link(config);
        assert_eq!(l.config().queue_bytes, Some(spec.default_queue_bytes()));
        // A 1250-byte packet: 10 000 bit on the wire, then the one-way delay.
        let wire = Duration::from_nanos(10_000 * 1_000_000_000 / rate);
        assert_eq!(l.offer(ms(0), 1250), Verdict::Deliver(wire + delay));
        let config = LinkConfig::from_spec(&lossy.paths[i], 1);
        assert_eq!(config.loss, Loss::Bernoulli(0.02));
        assert!(Link::new(config).is_ok());
    }
}

#[test]
fn run_seeds_give_every_link_its_own_loss_sequence() {
    let spec = &Scenario::by_name("pb-high-lossy").unwrap().paths[0];
    // Run 0 keeps the seeds the testbed always had: 1 and 2 on path 0, 3 and 4 on path 1.
    let (up, down) = LinkConfig::of_path(spec, 0, 0);
    assert_eq!((up.seed, down.seed), (1, 2));
    assert_eq!(LinkConfig::of_path(spec, 0, 1).1.seed, 4);
    let drops = |config: LinkConfig| -> Vec<bool> {
        let mut l = link(config);
        (0..2000)
            .map(|i| matches!(l.offer(ms(10 * i), 100), Verdict::Dropped(_)))
            .collect()
    };
    let mut seen = std::collections::HashSet::new();
    for run in 0..3 {
        for k in 0..3 {
            let (up, down) = LinkConfig::of_path(spec, run, k);
            assert_eq!(
                drops(up.clone()),
                drops(up.clone()),
                "same seed, same losses"
            );
            assert!(
                seen.insert(drops(up)),
                "run {run} path {k} uplink repeats another link"
            );
            assert!(
                seen.insert(drops(down)),
                "run {run} path {k} downlink repeats another link"
            );
        }
    }
}

fn arb_loss() -> impl Strategy<Value = Loss> {
    prop_oneof![
        Just(Loss::None),
        (0.0..=1.0f64).prop_map(Loss::Bernoulli),
        (0.0..=1.0f64, 0.0..=1.0f64, 0.0..=1.0f64, 0.0..=1.0f64).prop_map(|(a, b, c, d)| {
            Loss::GilbertElliott {
                good_to_bad: a,
                bad_to_good: b,
                loss_in_good: c,
                loss_in_bad: d,
            }
        }),
    ]
}

fn arb_action() -> impl Strategy<Value = EventAction> {
    prop_oneof![
        Just(EventAction::Down),
        Just(EventAction::Up),
        any::<u64>().prop_map(EventAction::Rate),
        any::<u64>().prop_map(|ns| EventAction::Delay(Duration::from_nanos(ns))),
    ]
}

fn arb_config() -> impl Strategy<Value = LinkConfig> {
    (
        any::<u64>(),
        any::<u64>(),
        arb_loss(),
        proptest::option::of(any::<u64>()),
        proptest::option::of(proptest::collection::vec(0u64..5000, 1..8)),
        proptest::collection::vec((any::<u64>(), arb_action()), 0..6),
        any::<u64>(),
    )
        .prop_map(|(rate, delay_ns, loss, queue, trace, evs, seed)| {
            let trace = trace.and_then(|mut v| {
                v.sort_unstable();
                Trace::parse(&v.iter().map(|x| format!("{x}\n")).collect::<String>()).ok()
            });
            LinkConfig {
                rate_bps: rate % (2 * MAX_RATE_BPS),
                delay: Duration::from_nanos(delay_ns % 90_000_000_000),
                loss,
                queue_bytes: queue,
                trace,
                events: evs
                    .into_iter()
                    .map(|(at, action)| TimedEvent {
                        at: Duration::from_nanos(at),
                        action,
                    })
                    .collect(),
                seed,
            }
        })
}

proptest! {
    #[test]
    fn offer_never_panics(
        config in arb_config(),
        ops in proptest::collection::vec((any::<u64>(), any::<usize>()), 0..40),
    ) {
        if let Ok(mut l) = Link::new(config) {
            for (at, len) in ops {
                let v = l.offer(Duration::from_nanos(at), len);
                if let Verdict::Deliver(t) = v {
                    prop_assert!(t >= l.latest, "{t:?} before now {:?}", l.latest);
                }
            }
            let _ = l.offer(Duration::MAX, usize::MAX);
            let _ = l.offer(Duration::MAX, 1);
        }
    }

    #[test]
    fn lossless_deliveries_respect_delay_and_order(
        rate in 1_000u64..=MAX_RATE_BPS,
        delay_us in 0u64..1_000_000,
        trace in proptest::option::of(proptest::collection::vec(0u64..200, 1..10)),
        len in 1usize..3000,
        gaps in proptest::collection::vec(0u64..5_000_000, 1..100),
    ) {
        let delay = Duration::from_micros(delay_us);
        let trace = trace.and_then(|mut v| {
            v.sort_unstable();
            Trace::parse(&v.iter().map(|x| format!("{x}\n")).collect::<String>()).ok()
        });
        let mut l = Link::new(LinkConfig {
            trace,
            queue_bytes: Some(u64::MAX),
            ..LinkConfig::new(rate, delay)
        })
        .unwrap();
        let mut now = Duration::ZERO;
        let mut last = Duration::ZERO;
        for gap in gaps {
            now += Duration::from_nanos(gap);
            match l.offer(now, len) {
                Verdict::Deliver(t) => {
                    prop_assert!(t >= now + delay, "{t:?} < {now:?} + {delay:?}");
                    prop_assert!(t >= last, "{t:?} before {last:?}");
                    last = t;
                }
                other => prop_assert!(false, "lossless link gave {other:?}"),
            }
        }
    }
}
