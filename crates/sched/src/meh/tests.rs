//! \[MEH\]'s Table I and idle-time figures against the model, the readings of the paper's
//! ambiguous formula that were tried, input validation, and the page hint.

use std::time::Duration;

use proptest::prelude::*;

use super::*;

/// The page sizes of Table I, in the paper's "KB".
const PAGES_KB: [u64; 6] = [400, 800, 1200, 1600, 2400, 3600];
/// The RTTs of Table I, in milliseconds.
const RTTS_MS: [u64; 5] = [50, 75, 100, 125, 150];

/// \[MEH\] Table I ("Page load time reduction") at 20 Mbps: per page size (rows) and RTT
/// (columns), the reduction in percent and the chosen number of connections.
const PAPER: [[(f64, u32); 5]; 6] = [
    [(17.93, 2), (30.22, 4), (31.76, 4), (32.76, 4), (33.47, 4)],
    [(13.94, 2), (30.20, 4), (30.42, 4), (24.12, 3), (24.95, 3)],
    [(11.40, 2), (13.06, 2), (27.12, 4), (21.89, 3), (28.31, 4)],
    [(0.00, 1), (11.47, 2), (24.46, 4), (20.04, 3), (26.30, 4)],
    [(0.00, 1), (9.22, 2), (10.25, 2), (17.14, 3), (24.60, 4)],
    [(0.00, 1), (0.00, 1), (9.48, 2), (14.97, 3), (19.49, 4)],
];

/// One reading of the paper's units and brackets.
#[derive(Debug, Clone, Copy)]
struct Reading {
    /// Bytes in the paper's "KB": 1000 or 1024.
    kb: u64,
    /// Bits per second in its "Mbps": 1e6 or 2^20.
    mbit: f64,
    /// S_mss: 1460 or 1500.
    mss: u32,
    rounding: GammaRounding,
}

/// The reading the defaults and the Table I test use: KiB pages, 20 x 2^20 bit/s, S_mss 1460,
/// gamma in whole rounds ([`GammaRounding::Floor`]). 25 of 30 cells, the most of any reading
/// tried.
const CHOSEN: Reading = Reading {
    kb: 1024,
    mbit: 1_048_576.0,
    mss: 1460,
    rounding: GammaRounding::Floor,
};

impl Reading {
    fn model(self) -> MehModel {
        let mut model = MehModel::new();
        model.mss(self.mss).rounding(self.rounding);
        model
    }

    fn net(self, rtt_ms: u64) -> NetworkCondition {
        NetworkCondition::from_bits_per_sec(Duration::from_millis(rtt_ms), 20.0 * self.mbit)
            .unwrap()
    }

    /// Algorithm 1 in every cell of Table I.
    fn table(self) -> [[MehDecision; 5]; 6] {
        let model = self.model();
        PAGES_KB.map(|kb| RTTS_MS.map(|ms| model.choose(&self.net(ms), kb * self.kb).unwrap()))
    }

    /// Cells whose connection count matches the paper.
    fn matches(self) -> usize {
        let table = self.table();
        (0..6)
            .flat_map(|r| (0..5).map(move |c| (r, c)))
            .filter(|&(r, c)| table[r][c].connections == PAPER[r][c].1)
            .count()
    }
}

/// The cells where the chosen reading's n differs from the paper's: (page KB, RTT ms, model n,
/// paper n), and why. "Readings" are the 24 of [`readings_tried`].
///
/// - 400 KB, 75 ms (3 vs 4): G(3) = 0.106, G(4) = 0.023 < C = 1/14. Three and four connections
///   have the same gamma (2 rounds), so the fourth only saves the last term of T_HTTP. No
///   reading gives 4 (outside them, only gamma rounded to nearest without the "+1" does, and
///   it matches 13 cells).
/// - 400 KB, 125 ms (3 vs 4): G(4) = 0.025 < C = 1/23, gamma again 3 rounds for 3 and 4
///   connections, while G(5) = 0.086 would pass: Algorithm 1 stops at the first gain below the
///   cost. Only Ceil with S_mss 1500 and decimal units gives 4 (14 cells overall).
/// - 800 KB, 75 ms (3 vs 4): as 400 KB at 75 ms, G(4) = 0.018 < C = 1/14. No reading gives 4.
/// - 800 KB, 150 ms (4 vs 3): G(4) = 0.086 >= C = 1/27 (gamma drops from 5 to 4 rounds); the
///   paper's 3 is below its own 4 at 100 ms and its 4 for 1200 KB at 150 ms. No reading gives 3.
/// - 2400 KB, 100 ms (3 vs 2): G(3) = 0.057 against C = 1/18 = 0.056, 3% over. 17 readings
///   give the paper's 2, among them [`GammaRounding::FloorPlusOne`] with these units (24
///   cells), which loses 1200 KB at 50 ms and 1600 KB at 100 ms instead.
const DIFFERING: [(u64, u64, u32, u32); 5] = [
    (400, 75, 3, 4),
    (400, 125, 3, 4),
    (800, 75, 3, 4),
    (800, 150, 4, 3),
    (2400, 100, 3, 2),
];

/// Largest difference, in percentage points, between the model's reduction and the paper's in
/// the cells where n matches. The paper's percentages come from a computation it does not
/// give; no reading tried reproduces them to the printed two decimals (the closest reading
/// is off by ~2 points on average), so the test bounds the gap instead (the largest is 4.38
/// points, 400 KB at 100 ms).
const REDUCTION_TOLERANCE_PP: f64 = 4.5;

#[test]
fn table_one_connection_counts_and_reductions() {
    let table = CHOSEN.table();
    let mut differing = Vec::new();
    for (r, &kb) in PAGES_KB.iter().enumerate() {
        for (c, &ms) in RTTS_MS.iter().enumerate() {
            let (paper_pct, paper_n) = PAPER[r][c];
            let got = table[r][c];
            if got.connections == paper_n {
                let gap = (got.reduction_percent() - paper_pct).abs();
                assert!(
                    gap <= REDUCTION_TOLERANCE_PP,
                    "{kb} KB {ms} ms: {:.2}% vs the paper's {paper_pct}%",
                    got.reduction_percent()
                );
            } else {
                differing.push((kb, ms, got.connections, paper_n));
            }
            if got.connections == 1 {
                assert_eq!(got.reduction, 0.0);
            }
        }
    }
    assert_eq!(differing, DIFFERING);
}

/// The model's Table I under the chosen reading, to two decimals, so that a change that moves
/// any cell is seen (the paper's values are in [`PAPER`]).
#[test]
fn table_one_snapshot() {
    let expected: [[(f64, u32); 5]; 6] = [
        [(20.26, 2), (31.94, 3), (36.14, 4), (32.60, 3), (35.51, 4)],
        [(14.70, 2), (25.43, 3), (30.15, 4), (28.36, 3), (31.55, 4)],
        [(11.53, 2), (14.15, 2), (25.86, 4), (25.09, 3), (28.38, 4)],
        [(0.00, 1), (12.10, 2), (22.63, 4), (22.50, 3), (25.79, 4)],
        [(0.00, 1), (9.38, 2), (13.21, 3), (18.65, 3), (21.81, 4)],
        [(0.00, 1), (0.00, 1), (5.78, 2), (14.84, 3), (17.71, 4)],
    ];
    let table = CHOSEN.table();
    for r in 0..6 {
        for c in 0..5 {
            let got = table[r][c];
            let (pct, n) = expected[r][c];
            assert_eq!(got.connections, n, "{} KB {} ms", PAGES_KB[r], RTTS_MS[c]);
            assert!(
                (got.reduction_percent() - pct).abs() < 0.006,
                "{} KB {} ms: {:.4}",
                PAGES_KB[r],
                RTTS_MS[c],
                got.reduction_percent()
            );
        }
    }
}

/// Every reading of the units and brackets this model can express, with its count of Table I
/// cells whose n matches. Readings outside it were tried in an exploratory program and none
/// did better: gamma unrounded (at most 19 cells), rounded to nearest (at most 19),
/// `ceil(A)` (the same as FloorPlusOne but at exact integers), the page term rounded apart from
/// the RTT term (it never binds in Table I), Algorithm 1 capped at ConnectionNumber_max (no
/// change: the gains bound n by it), ConnectionNumber_max with floor (at most 24) or from a BDP
/// in bits (at most 5), gamma kept at one connection's IW while only the last term uses `n IW`
/// (at most 4), and each of n connections carrying S_page/n at mu/n (at most 25). Sweeping
/// S_mss from 500 to 1600 bytes finds 26 cells only for 1390..=1420 with KiB pages and decimal
/// Mbit/s (Floor): a fitted value, not a reading of "the size of a TCP packet", so the default
/// stays 1460.
#[test]
fn readings_tried() {
    let mut counts = Vec::new();
    for kb in [1000, 1024] {
        for mbit in [1e6, 1_048_576.0] {
            for mss in [1460, 1500] {
                for rounding in [
                    GammaRounding::Floor,
                    GammaRounding::FloorPlusOne,
                    GammaRounding::Ceil,
                ] {
                    let reading = Reading {
                        kb,
                        mbit,
                        mss,
                        rounding,
                    };
                    counts.push((kb, mbit as u64, mss, rounding, reading.matches()));
                }
            }
        }
    }
    use GammaRounding::{Ceil, Floor, FloorPlusOne};
    let expected = vec![
        (1000, 1_000_000, 1460, Floor, 19),
        (1000, 1_000_000, 1460, FloorPlusOne, 21),
        (1000, 1_000_000, 1460, Ceil, 15),
        (1000, 1_000_000, 1500, Floor, 19),
        (1000, 1_000_000, 1500, FloorPlusOne, 21),
        (1000, 1_000_000, 1500, Ceil, 14),
        (1000, 1_048_576, 1460, Floor, 24),
        (1000, 1_048_576, 1460, FloorPlusOne, 23),
        (1000, 1_048_576, 1460, Ceil, 17),
        (1000, 1_048_576, 1500, Floor, 19),
        (1000, 1_048_576, 1500, FloorPlusOne, 20),
        (1000, 1_048_576, 1500, Ceil, 16),
        (1024, 1_000_000, 1460, Floor, 19),
        (1024, 1_000_000, 1460, FloorPlusOne, 21),
        (1024, 1_000_000, 1460, Ceil, 15),
        (1024, 1_000_000, 1500, Floor, 17),
        (1024, 1_000_000, 1500, FloorPlusOne, 19),
        (1024, 1_000_000, 1500, Ceil, 14),
        (1024, 1_048_576, 1460, Floor, 25),
        (1024, 1_048_576, 1460, FloorPlusOne, 24),
        (1024, 1_048_576, 1460, Ceil, 16),
        (1024, 1_048_576, 1500, Floor, 19),
        (1024, 1_048_576, 1500, FloorPlusOne, 21),
        (1024, 1_048_576, 1500, Ceil, 16),
    ];
    assert_eq!(counts, expected);
    let best = counts.iter().map(|c| c.4).max().unwrap();
    assert_eq!(best, CHOSEN.matches());
}

/// The paper's idle-time figures (Figure 4: "a 400KBytes page suffered from 52.3% idle time
/// while a 3600KBytes page only experiences 15.9%" at 20 Mbps and 50 ms; 80.1% and 40.8% at
/// 150 ms) against `T_idle / T_HTTP` over one connection.
///
/// No reading reproduces them. At a given RTT both pages have the same gamma (the RTT term
/// binds), hence the same T_idle = I, and `T_HTTP = 2 RTT + S_page/mu + I`. Then 52.3% and
/// 15.9% require `S_3600/mu - S_400/mu = I (1/0.159 - 1/0.523)`, i.e. I = 0.29 s at 50 ms,
/// while equation (2) peaks at 0.18 s over all gamma at 50 ms and 20 Mbit/s. The model keeps
/// the figure's shape: idle share falls with page size and rises with RTT.
#[test]
fn idle_fractions() {
    let model = CHOSEN.model();
    let idle = |kb: u64, ms: u64| {
        model
            .idle_fraction(&CHOSEN.net(ms), kb * CHOSEN.kb)
            .unwrap()
            * 100.0
    };
    // (page KB, RTT ms, the paper's %, the model's %)
    let cells = [
        (400, 50, 52.3, 37.99),
        (3600, 50, 15.9, 9.44),
        (400, 150, 80.1, 63.32),
        (3600, 150, 40.8, 31.58),
    ];
    for (kb, ms, _paper, model_pct) in cells {
        let got = idle(kb, ms);
        assert!((got - model_pct).abs() < 0.01, "{kb} KB {ms} ms: {got:.3}%");
    }
    assert!(idle(400, 50) > idle(3600, 50));
    assert!(idle(400, 150) > idle(400, 50));
    assert!(idle(3600, 150) > idle(3600, 50));
    // Idle time is part of the completion time, and both follow equations (1) and (2).
    let net = CHOSEN.net(50);
    let total = model.completion_time(&net, 400 * 1024, 1).unwrap();
    let idle_time = model.idle_time(&net, 400 * 1024, 1).unwrap();
    let transfer = 0.1 + 400.0 * 1024.0 / net.bandwidth.bytes_per_sec();
    assert!((total.as_secs_f64() - idle_time.as_secs_f64() - transfer).abs() < 1e-6);
    assert_eq!(model.slow_start_rounds(&net, 400 * 1024, 1).unwrap(), 4);
}

#[test]
fn gains_add_up_to_the_reduction() {
    let model = CHOSEN.model();
    let net = CHOSEN.net(150);
    let page = 1200 * 1024;
    let decision = model.choose(&net, page).unwrap();
    assert_eq!(decision.connections, 4);
    let gains: Vec<f64> = (2..=5)
        .map(|i| model.gain(&net, page, i).unwrap())
        .collect();
    let sum: f64 = gains[..3].iter().sum();
    assert!((sum - decision.reduction).abs() < 1e-12);
    assert!(gains[..3].iter().all(|&g| g >= decision.cost));
    assert!(gains[3] < decision.cost);
    assert_eq!(
        decision.max_connections,
        model.max_connections(&net, page).unwrap()
    );
    assert_eq!(decision.max_connections, 27); // ceil(393 216 B / 14 600 B)
}

#[test]
fn small_page_fits_in_the_initial_window() {
    let model = MehModel::new();
    let net = CHOSEN.net(100);
    // 10 KB < IW S_mss: no slow-start round, one connection, nothing to gain.
    assert_eq!(model.slow_start_rounds(&net, 10_000, 1).unwrap(), 0);
    assert_eq!(model.idle_time(&net, 10_000, 1).unwrap(), Duration::ZERO);
    let decision = model.choose(&net, 10_000).unwrap();
    assert_eq!((decision.connections, decision.max_connections), (1, 1));
}

#[test]
fn invalid_inputs_are_typed_errors() {
    let model = MehModel::new();
    let net = CHOSEN.net(50);
    let zero_rtt = NetworkCondition::new(Duration::ZERO, net.bandwidth);
    assert_eq!(model.choose(&zero_rtt, 1000), Err(MehError::ZeroRtt));
    assert_eq!(model.choose(&net, 0), Err(MehError::ZeroPageSize));
    assert_eq!(
        model.completion_time(&net, 1000, 0),
        Err(MehError::ZeroConnections)
    );
    assert_eq!(model.gain(&net, 1000, 1), Err(MehError::ZeroConnections));
    assert_eq!(
        MehModel::new().mss(0).choose(&net, 1000),
        Err(MehError::ZeroMss)
    );
    assert_eq!(
        MehModel::new().initial_window(0).choose(&net, 1000),
        Err(MehError::ZeroInitialWindow)
    );
    for rate in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            NetworkCondition::from_bits_per_sec(Duration::from_millis(50), rate),
            Err(MehError::Bandwidth(_))
        ));
    }
    assert_eq!(paths_for_page(&model, 1000, &[]), Err(MehError::NoPaths));
}

#[test]
fn extreme_inputs_do_not_panic() {
    let model = MehModel::new();
    let slow = Bandwidth::from_bytes_per_sec(f64::MIN_POSITIVE).unwrap();
    let fast = Bandwidth::from_bytes_per_sec(f64::MAX).unwrap();
    for rtt in [Duration::from_nanos(1), Duration::MAX] {
        for bandwidth in [slow, fast] {
            for page in [1, u64::MAX] {
                let net = NetworkCondition::new(rtt, bandwidth);
                if let Ok(decision) = model.choose(&net, page) {
                    assert!(decision.connections >= 1);
                    assert!(decision.connections <= decision.max_connections);
                }
                let _ = model.idle_fraction(&net, page);
                let _ = paths_for_page(&model, page, &[net]);
            }
        }
    }
}

#[test]
fn page_hint_sizes_and_stream_metadata() {
    let hint = PageHint::new(vec![
        ("https://a.example/".into(), 20_000),
        ("https://a.example/app.js".into(), 300_000),
        ("https://a.example/logo.png".into(), 80_000),
        ("https://a.example/app.js".into(), 1),
    ]);
    assert_eq!(hint.total_size(), 400_001);
    assert_eq!(hint.size_of("https://a.example/app.js"), Some(300_000));
    assert_eq!(hint.size_of("https://a.example/missing"), None);
    assert_eq!(hint.pending_size(|url| url.ends_with(".png")), 320_001);
    let meta = hint.stream_meta(StreamId(4), "https://a.example/logo.png");
    assert_eq!((meta.id, meta.size), (StreamId(4), Some(80_000)));
    assert_eq!(
        hint.stream_meta(StreamId(8), "https://b.example/").size,
        None
    );
    let huge = PageHint::new(vec![("x".into(), u64::MAX), ("y".into(), 1)]);
    assert_eq!(huge.total_size(), u64::MAX);
    assert_eq!(PageHint::default().total_size(), 0);
}

#[test]
fn paths_for_page_uses_the_best_path_and_caps_by_path_count() {
    let model = CHOSEN.model();
    let page = 400 * 1024;
    let wifi = CHOSEN.net(150);
    let slow = NetworkCondition::from_bits_per_sec(Duration::from_millis(40), 1e6).unwrap();
    // The 20 Mbit/s path loads the page sooner alone, so the model runs on it: n = 4.
    let plan = paths_for_page(&model, page, &[slow, wifi]).unwrap();
    assert_eq!((plan.best_path, plan.connections, plan.paths), (1, 4, 2));
    assert_eq!(plan.subflows_per_path(), 2);
    assert_eq!(plan.decision, model.choose(&wifi, page).unwrap());
    // Six paths for four connections: four paths, one subflow each.
    let plan = paths_for_page(&model, page, &[wifi; 6]).unwrap();
    assert_eq!((plan.best_path, plan.connections, plan.paths), (0, 4, 4));
    assert_eq!(plan.subflows_per_path(), 1);
    // A path as the estimator reports it.
    let snapshot = PathSnapshot::new(crate::PathId(3), wifi.rtt, wifi.bandwidth, 14_600);
    assert_eq!(NetworkCondition::from_snapshot(&snapshot), wifi);
}

proptest! {
    #[test]
    fn choose_is_bounded_and_never_panics(
        rtt_us in 1u64..5_000_000,
        bits in 1e3f64..1e10,
        page in 1u64..100_000_000,
        iw in 1u32..100,
        mss in 1u32..9_000,
        rounding in prop_oneof![
            Just(GammaRounding::Floor),
            Just(GammaRounding::FloorPlusOne),
            Just(GammaRounding::Ceil),
        ],
    ) {
        let mut model = MehModel::new();
        model.initial_window(iw).mss(mss).rounding(rounding);
        let net = NetworkCondition::from_bits_per_sec(Duration::from_micros(rtt_us), bits).unwrap();
        if let Ok(decision) = model.choose(&net, page) {
            prop_assert!(decision.connections >= 1);
            prop_assert!(decision.connections <= decision.max_connections);
            prop_assert!((0.0..1.0).contains(&decision.reduction));
            prop_assert!(decision.chosen <= decision.single);
        }
    }
}

#[test]
fn idle_time_is_never_negative() {
    // 1 ms RTT at 20 Mibit/s: one window (14.6 kB) takes 5.6 ms to send, so equation (2) with
    // one round (FloorPlusOne) is negative; the public idle figures clamp it.
    let mut model = MehModel::new();
    model.rounding(GammaRounding::FloorPlusOne);
    let net =
        NetworkCondition::from_bits_per_sec(Duration::from_millis(1), 20.0 * 1_048_576.0).unwrap();
    assert_eq!(model.slow_start_rounds(&net, 1_000_000, 1).unwrap(), 1);
    assert_eq!(model.idle_time(&net, 1_000_000, 1).unwrap(), Duration::ZERO);
    assert_eq!(model.idle_fraction(&net, 1_000_000).unwrap(), 0.0);
    assert!(model.completion_time(&net, 1_000_000, 1).is_ok());
}
