//! The controller over a synthetic path: a bottleneck link of fixed rate with a drop-tail
//! buffer and a propagation delay, acking each packet when it would arrive back.

use std::collections::VecDeque;

use super::*;

const MSS: u64 = 1200;

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

fn config(algorithm: LossAlgorithm, hystart: bool) -> LossBasedConfig {
    let mut config = LossBasedConfig::default();
    config.algorithm(algorithm).hystart(hystart);
    config
}

struct InFlight {
    packet_number: u64,
    sent: Instant,
    /// When its ack arrives, or for a dropped packet when the sender notices the loss.
    returns: Instant,
    dropped: bool,
}

/// One sender over one bottleneck. Packets leave whenever the window allows, queue at the
/// bottleneck (served one per `per_packet`), are dropped when `buffer_packets` are already
/// queued, and are acked one by one after the propagation delay `base_rtt(sent)`.
struct Path {
    cc: LossBased,
    start: Instant,
    now: Instant,
    per_packet: Duration,
    buffer_packets: u128,
    base_rtt: Box<dyn Fn(Duration) -> Duration>,
    busy_until: Instant,
    last_return: Instant,
    in_flight: VecDeque<InFlight>,
    in_flight_bytes: u64,
    next_packet_number: u64,
    losses: u64,
    /// The window when the first loss was noticed, before the reduction.
    window_at_first_loss: Option<u64>,
    /// Each HyStart++ state in the order entered.
    states: Vec<HyStartState>,
}

impl Path {
    fn new(
        config: LossBasedConfig,
        per_packet: Duration,
        buffer_packets: u128,
        base_rtt: impl Fn(Duration) -> Duration + 'static,
    ) -> Self {
        let start = Instant::now();
        let cc = LossBased::new(config, MSS as u16);
        let mut path = Self {
            states: cc.hystart_state().into_iter().collect(),
            cc,
            start,
            now: start,
            per_packet,
            buffer_packets,
            base_rtt: Box::new(base_rtt),
            busy_until: start,
            last_return: start,
            in_flight: VecDeque::new(),
            in_flight_bytes: 0,
            next_packet_number: 0,
            losses: 0,
            window_at_first_loss: None,
        };
        path.fill();
        path
    }

    fn fill(&mut self) {
        while self.in_flight_bytes + MSS <= self.cc.window() {
            self.send_one();
        }
    }

    fn send_one(&mut self) {
        let queued = self
            .busy_until
            .saturating_duration_since(self.now)
            .as_nanos()
            / self.per_packet.as_nanos().max(1);
        let base_rtt = (self.base_rtt)(self.now - self.start);
        let dropped = queued >= self.buffer_packets;
        let returns = if dropped {
            // Noticed about when it would have been acked.
            self.busy_until + base_rtt
        } else {
            self.busy_until = self.busy_until.max(self.now) + self.per_packet;
            self.busy_until + base_rtt
        };
        // Acks come back in order even when the delay drops.
        self.last_return = self.last_return.max(returns);
        let packet_number = self.next_packet_number;
        self.next_packet_number += 1;
        self.in_flight.push_back(InFlight {
            packet_number,
            sent: self.now,
            returns: self.last_return,
            dropped,
        });
        self.in_flight_bytes += MSS;
        self.cc.on_sent(self.now, MSS, packet_number);
    }

    /// Handles the next ack or loss and sends what the window then allows.
    fn step(&mut self) {
        let Some(packet) = self.in_flight.pop_front() else {
            return;
        };
        self.now = self.now.max(packet.returns);
        self.in_flight_bytes -= MSS;
        if packet.dropped {
            self.losses += 1;
            self.window_at_first_loss.get_or_insert(self.cc.window());
            self.cc
                .on_congestion_event(self.now, packet.sent, false, MSS);
        } else {
            let rtt = self.now - packet.sent;
            self.cc.ack(self.now, packet.sent, MSS, false, rtt);
            self.cc.on_end_acks(
                self.now,
                self.in_flight_bytes,
                false,
                Some(packet.packet_number),
            );
        }
        if let Some(state) = self.cc.hystart_state() {
            if self.states.last() != Some(&state) {
                self.states.push(state);
            }
        }
        self.fill();
    }

    /// Runs until `elapsed` after the start.
    fn run_for(&mut self, elapsed: Duration) {
        let until = self.start + elapsed;
        while self.in_flight.front().is_some_and(|p| p.returns <= until) {
            self.step();
        }
    }

    /// Runs until `done` holds (or a generous number of steps passed).
    fn run_until(&mut self, done: impl Fn(&Self) -> bool) {
        for _ in 0..1_000_000 {
            if done(self) {
                return;
            }
            self.step();
        }
    }
}

/// A 9.6 Gbit/s link with a 100 ms RTT: nothing queues at the rates slow start reaches here.
fn fast_path(config: LossBasedConfig) -> Path {
    Path::new(config, Duration::from_micros(1), u128::MAX, |_| ms(100))
}

#[test]
fn slow_start_doubles_the_window_every_round() {
    for algorithm in [LossAlgorithm::Cubic, LossAlgorithm::NewReno] {
        let mut path = fast_path(config(algorithm, true));
        for round in 1..=6 {
            path.run_for(ms(100 * round + 50));
            assert_eq!(
                path.cc.window(),
                12_000 << round,
                "{algorithm:?} round {round}"
            );
        }
        assert_eq!(path.states, [HyStartState::SlowStart]);
    }
}

/// 2000 packets/s (19.2 Mbit/s), 40 ms: 80 packets in flight fill the pipe. The buffer holds
/// 1000 packets (500 ms), so a queue builds long before anything is dropped.
fn bufferbloated_path(config: LossBasedConfig) -> Path {
    Path::new(config, Duration::from_micros(500), 1000, |_| ms(40))
}

#[test]
fn a_queue_building_rtt_ends_slow_start_before_a_loss() {
    for algorithm in [LossAlgorithm::Cubic, LossAlgorithm::NewReno] {
        let mut hystart = bufferbloated_path(config(algorithm, true));
        hystart.run_until(|path| !path.cc.window.segments().in_slow_start() || path.losses > 0);
        assert_eq!(hystart.losses, 0, "{algorithm:?}");
        assert_eq!(
            hystart.states,
            [
                HyStartState::SlowStart,
                HyStartState::ConservativeSlowStart,
                HyStartState::CongestionAvoidance
            ]
        );
        let exit_window = hystart.cc.window();
        assert_eq!(hystart.cc.window.segments().ssthresh(), exit_window);

        let mut plain = bufferbloated_path(config(algorithm, false));
        plain.run_until(|path| path.losses > 0);
        let loss_window = plain.window_at_first_loss.unwrap_or(0);
        assert!(
            exit_window * 3 < loss_window,
            "{algorithm:?}: HyStart++ left slow start at {exit_window} bytes, \
             slow start alone reached {loss_window}"
        );
    }
}

#[test]
fn an_rtt_that_falls_back_during_css_resumes_slow_start() {
    // The delay rises by 20 ms for what is sent between 150 and 250 ms, then falls back.
    let delay = |sent: Duration| {
        if (ms(150)..ms(250)).contains(&sent) {
            ms(70)
        } else {
            ms(50)
        }
    };
    let mut path = Path::new(
        config(LossAlgorithm::Cubic, true),
        Duration::from_micros(1),
        u128::MAX,
        delay,
    );
    path.run_for(ms(600));
    assert_eq!(
        path.states,
        [
            HyStartState::SlowStart,
            HyStartState::ConservativeSlowStart,
            HyStartState::SlowStart
        ]
    );
    assert_eq!(path.losses, 0);
    assert!(path.cc.window.segments().in_slow_start());
}

/// A controller that grew its window to `segments` in slow start.
fn grown_to(algorithm: LossAlgorithm, segments: u64) -> (LossBased, Instant) {
    let start = Instant::now();
    let mut cc = LossBased::new(config(algorithm, true), MSS as u16);
    let grow = segments * MSS - cc.window();
    cc.ack(start + ms(50), start, grow, false, ms(50));
    assert_eq!(cc.window(), segments * MSS);
    (cc, start + ms(50))
}

#[test]
fn a_loss_in_slow_start_exits_it_with_ssthresh_beta_times_the_window() {
    for (algorithm, beta) in [(LossAlgorithm::Cubic, 0.7), (LossAlgorithm::NewReno, 0.5)] {
        let (mut cc, now) = grown_to(algorithm, 100);
        cc.on_congestion_event(now, now, false, MSS);
        let expected = (100.0 * MSS as f64 * beta) as u64;
        assert_eq!(cc.metrics().ssthresh, Some(expected), "{algorithm:?}");
        assert_eq!(cc.window(), expected);
        assert!(!cc.window.segments().in_slow_start());
        assert_eq!(cc.hystart_state(), Some(HyStartState::CongestionAvoidance));
    }
}

#[test]
fn losses_of_packets_sent_before_recovery_began_are_ignored() {
    let (mut cc, now) = grown_to(LossAlgorithm::NewReno, 100);
    cc.on_congestion_event(now, now - ms(1), false, MSS);
    assert_eq!(cc.window(), 50 * MSS);
    // Same event: sent before (or when) recovery began.
    cc.on_congestion_event(now + ms(10), now, false, MSS);
    cc.on_congestion_event(now + ms(10), now - ms(5), true, MSS);
    assert_eq!(cc.window(), 50 * MSS);
    // Their acks do not grow the window either.
    for _ in 0..100 {
        cc.ack(now + ms(20), now, MSS, false, ms(50));
    }
    assert_eq!(cc.window(), 50 * MSS);
    // A packet sent after recovery began starts a new event.
    cc.on_congestion_event(now + ms(60), now + ms(1), false, MSS);
    assert_eq!(cc.window(), 25 * MSS);
}

#[test]
fn persistent_congestion_collapses_to_the_minimum_window() {
    for algorithm in [LossAlgorithm::Cubic, LossAlgorithm::NewReno] {
        let (mut cc, now) = grown_to(algorithm, 100);
        cc.on_congestion_event(now, now, true, 50 * MSS);
        assert_eq!(cc.window(), 2 * MSS, "{algorithm:?}");
        // Slow start back up to the reduced ssthresh, without HyStart++.
        assert!(cc.window.segments().in_slow_start());
        cc.ack(now + ms(100), now + ms(1), MSS, false, ms(50));
        assert_eq!(cc.window(), 3 * MSS);
    }
}

#[test]
fn app_limited_acks_do_not_grow_the_window() {
    let start = Instant::now();
    let mut cc = LossBased::new(LossBasedConfig::default(), MSS as u16);
    cc.ack(start + ms(50), start, 10 * MSS, true, ms(50));
    assert_eq!(cc.window(), 10 * MSS);
}

#[test]
fn the_factory_builds_a_controller_with_the_configured_initial_window() {
    let now = Instant::now();
    let default = Arc::new(LossBasedConfig::default()).build(now, 1200);
    assert_eq!(default.window(), 12_000);
    assert_eq!(default.initial_window(), 12_000);
    assert_eq!(default.metrics().ssthresh, Some(u64::MAX));

    let mut config = LossBasedConfig::default();
    config
        .algorithm(LossAlgorithm::NewReno)
        .hystart(false)
        .initial_window(40_000);
    assert_ne!(config, LossBasedConfig::default());
    let custom = Arc::new(config).build(now, 1200);
    assert_eq!(custom.window(), 40_000);

    // Below two packets the window would stall; it is raised.
    config.initial_window(0);
    assert_eq!(Arc::new(config).build(now, 1200).window(), 2400);
    config.initial_window(None);
    assert_eq!(config, {
        let mut expected = LossBasedConfig::default();
        expected.algorithm(LossAlgorithm::NewReno).hystart(false);
        expected
    });
}

#[test]
fn an_mtu_update_keeps_the_window_at_least_two_packets() {
    let mut cc = LossBased::new(LossBasedConfig::default(), 1200);
    cc.on_mtu_update(9000);
    assert_eq!(cc.window(), 18_000);
    cc.on_mtu_update(0);
    assert_eq!(cc.window(), 18_000);
}

#[test]
fn absurd_inputs_neither_panic_nor_overflow() {
    for algorithm in [LossAlgorithm::Cubic, LossAlgorithm::NewReno] {
        let start = Instant::now();
        let later = start + Duration::from_secs(3600);
        let mut cc = LossBased::new(config(algorithm, true), 0);
        cc.on_sent(start, u64::MAX, u64::MAX);
        // Zero RTT, and time going backwards (acked before it was sent).
        cc.ack(start, start, u64::MAX, false, Duration::ZERO);
        cc.ack(start, later, u64::MAX, false, Duration::ZERO);
        cc.on_end_acks(start, u64::MAX, false, Some(u64::MAX));
        cc.on_end_acks(start, 0, false, Some(0));
        cc.on_end_acks(start, 0, true, None);
        assert_eq!(cc.window(), u64::MAX);
        cc.on_congestion_event(start, later, false, u64::MAX);
        // Congestion avoidance with an absurd RTT, and backwards again.
        cc.ack(later, later, u64::MAX, false, Duration::MAX);
        cc.ack(start, later, u64::MAX, false, Duration::MAX);
        cc.on_sent(start, 0, 0);
        cc.on_congestion_event(start, later + ms(1), true, 0);
        cc.on_mtu_update(u16::MAX);
        cc.on_mtu_update(0);
        assert!(cc.window() >= 2);
        let _ = cc.metrics();
        let copy = cc.clone_box();
        assert_eq!(copy.window(), cc.window());
    }
}
