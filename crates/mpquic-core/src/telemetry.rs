//! Per-path telemetry: a wrapper around the path's quinn congestion controller that feeds the
//! estimators of `mpquic-estimate` and tells the path's sender when the window opens.
//!
//! quinn calls the controller for every packet sent, acknowledged and lost, inside its own
//! connection lock; the wrapper only updates a small shared record and wakes the path's sender,
//! which reads a [`PathSnapshot`] from it outside that lock.
//!
//! Delivery credit: each path is its own quinn connection, whose acknowledgements come back on
//! the path itself, so a slow path's window opens a slow round trip after its packets arrived.
//! The receiver reports each path's received bytes on the fastest path
//! ([`Frame::PathReceived`](crate::wire::Frame::PathReceived)); bytes that quinn still counts in
//! flight but that the report shows delivered are credited to the window, as if their
//! acknowledgements had come back that way, until quinn's own catch up. In slow start the
//! credit counts twice, for the growth those acknowledgements would have brought.

use std::any::Any;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use mpquic_estimate::{
    BandwidthConfig, BandwidthEstimator, OneWayDelay, RttConfig, RttEstimator, SentPacketState,
};
use mpquic_sched::{Bandwidth, PathId, PathSnapshot, PathStatus};
use quinn::congestion::{Controller, ControllerFactory};
use tokio::sync::Notify;

use crate::sent_log::SentLog;

/// What one path's controller has seen, shared between quinn and the path's sender.
#[derive(Debug)]
pub(crate) struct Telemetry {
    state: Mutex<TelemetryState>,
    /// What the delivery credit adds to the controller's window, read by quinn on every send
    /// without taking the state's lock.
    bonus: AtomicU64,
    /// Woken on every ack batch and loss: the window may have opened.
    pub(crate) changed: Notify,
}

#[derive(Debug)]
pub(crate) struct TelemetryState {
    pub(crate) rtt: RttEstimator,
    pub(crate) bandwidth: BandwidthEstimator,
    pub(crate) one_way: OneWayDelay,
    /// The window quinn sends by: the controller's plus the delivery credit's bonus.
    pub(crate) cwnd: u64,
    /// quinn's bytes in flight as of its last ack batch or loss.
    pub(crate) in_flight: u64,
    /// Bytes quinn sent since its last ack batch. With `in_flight` this is what is in flight
    /// now: in a slow-start round most of it was sent after the last batch. (ACK-only packets
    /// count too, a few bytes high until the next batch resets it.)
    sent_since_acks: u64,
    /// Stream and control bytes handed to quinn that it has not sent yet. Every packet quinn
    /// sends counts against it (ACK-only packets and re-sends too, so it errs low), and an ack
    /// batch that finds quinn with nothing to send clears it.
    queued: u64,
    /// The wrapped controller's own window.
    controller_window: u64,
    /// The controller's largest window of the last two smoothed RTTs, and when it was last
    /// that large: what quinn's send buffer must still hold after the window shrinks.
    window_peak: u64,
    window_peak_at: Option<Instant>,
    /// Whether the wrapped controller is in slow start (below its threshold).
    slow_start: bool,
    /// Bytes in flight for quinn that the peer reported delivered.
    credit: u64,
    /// Bytes acknowledged in the ack batch under way.
    acked_in_batch: u64,
    /// Since when packets have been waiting for an acknowledgement without any arriving
    /// (`None`: nothing outstanding). Path-failure detection counts from here.
    pub(crate) unacked_since: Option<Instant>,
    pub(crate) lost_bytes: u64,
    /// When the packet quinn last declared lost was sent.
    last_loss_sent: Option<Instant>,
    pub(crate) congestion_events: u64,
    /// Bumped on every change, so the sender re-reports estimates only when they moved.
    pub(crate) generation: u64,
    /// The sender had nothing to send: packets sent now are app-limited (BBR's marking).
    pub(crate) app_limited: bool,
    sent: SentLog<SentPacketState>,
    newest_acked_sent: Option<Instant>,
}

impl Telemetry {
    pub(crate) fn new(rtt_prior: Duration, bandwidth_prior: f64) -> Arc<Self> {
        let rtt = RttEstimator::new(RttConfig {
            initial_rtt: rtt_prior,
            ..RttConfig::default()
        })
        .unwrap_or_else(|_| RttEstimator::new(RttConfig::default()).expect("default is valid"));
        let bandwidth = BandwidthEstimator::new(BandwidthConfig {
            initial_bandwidth: bandwidth_prior,
            // The scheduler feeds each path in bursts, which the draft's samples cannot measure.
            idle_flight_samples: true,
            ..BandwidthConfig::default()
        })
        .unwrap_or_else(|_| {
            BandwidthEstimator::new(BandwidthConfig::default()).expect("default is valid")
        });
        Arc::new(Self {
            state: Mutex::new(TelemetryState {
                rtt,
                bandwidth,
                one_way: OneWayDelay::default(),
                cwnd: 0,
                in_flight: 0,
                sent_since_acks: 0,
                queued: 0,
                controller_window: 0,
                window_peak: 0,
                window_peak_at: None,
                slow_start: false,
                credit: 0,
                acked_in_batch: 0,
                unacked_since: None,
                lost_bytes: 0,
                last_loss_sent: None,
                congestion_events: 0,
                generation: 0,
                app_limited: false,
                sent: SentLog::default(),
                newest_acked_sent: None,
            }),
            bonus: AtomicU64::new(0),
            changed: Notify::new(),
        })
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, TelemetryState> {
        // A panic elsewhere while holding the lock leaves plain numbers behind: keep using them.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The scheduler's view of the path.
    pub(crate) fn snapshot(&self, id: PathId, status: PathStatus) -> PathSnapshot {
        let state = self.lock();
        PathSnapshot {
            id,
            status,
            srtt: state.rtt.srtt(),
            rttvar: state.rtt.rttvar(),
            min_rtt: state.rtt.min_rtt(),
            one_way_delay: state.one_way.estimate(&state.rtt),
            bandwidth: Bandwidth::from_bytes_per_sec(state.bandwidth.bandwidth())
                .unwrap_or(Bandwidth::UNIT),
            cwnd: state.cwnd,
            // What the path has taken on: in flight, or waiting in quinn to leave. Counting the
            // waiting bytes keeps the scheduler from committing more than a window to a path.
            bytes_in_flight: state.in_flight_now().saturating_add(state.queued),
            slow_start: state.slow_start,
        }
    }

    /// The peer's report of `received` datagram bytes on this path, against this end's quinn
    /// having sent `sent` and declared `lost` of them lost: what quinn counts in flight beyond
    /// the bytes still unaccounted for (sent, neither received nor declared lost) has arrived.
    /// Errors err low (a lost ACK-only packet stays unaccounted for), and the credit never
    /// exceeds what is in flight, so a peer's report cannot open the window past twice that.
    pub(crate) fn on_delivery_report(&self, sent: u64, received: u64, lost: u64) {
        self.update(|s| {
            let unaccounted = sent.saturating_sub(received).saturating_sub(lost);
            s.credit = s.in_flight_now().saturating_sub(unaccounted);
            self.refresh_window(s);
        });
    }

    /// [`Telemetry::on_delivery_report`] against the path's quinn `stats`: the send window
    /// quinn should have now. Setting it matters even when it has not changed: quinn may be
    /// waiting for its own acks with a full buffer, where the path's sender cannot reach it,
    /// and setting the send window wakes it to send into the credited window.
    pub(crate) fn on_peer_report(&self, stats: &quinn::ConnectionStats, received: u64) -> u64 {
        self.on_delivery_report(stats.udp_tx.bytes, received, stats.path.lost_bytes);
        self.send_window()
    }

    /// quinn's send window (bytes it buffers, in flight or not) for this path.
    ///
    /// quinn charges a stream's bytes to this window from its oldest unacknowledged byte on,
    /// acked or not, so after a loss it holds the flight of before the loss until the re-sent
    /// packet is acknowledged, two round trips later. Three windows cover that: with a window
    /// and a half, pb-high-lossy's simulation moved 20 MB at 75% of the summed rates against
    /// 92%. The windows counted are the largest of the last two smoothed RTTs, not the
    /// current one: a controller that shrinks its window on a loss (BBR's Drain after
    /// Startup's overshoot: 531 kB to 114 kB on pb-high's 40 Mbit/s path) left quinn unable
    /// to take new data while the old flight was still charged, and the path idled for a
    /// round trip (about 0.6 points of pb-high's 20 MB bulk on the testbed, median of nine
    /// transfers against nine: docs/results/2026-11-27-tail/). What the scheduler may
    /// commit to the path is bounded separately, by the congestion window over the bytes in
    /// flight and queued in quinn, so the depth here does not let grants run ahead of it.
    pub(crate) fn send_window(&self) -> u64 {
        let s = self.lock();
        let window = s.cwnd.max(s.window_peak);
        window
            .saturating_mul(3)
            .max(window.saturating_add(64 * 1024))
    }

    /// Recomputes the window from the controller's and the credit.
    fn refresh_window(&self, s: &mut TelemetryState) {
        s.credit = s.credit.min(s.in_flight_now());
        let bonus = if s.slow_start {
            s.credit.saturating_mul(2)
        } else {
            s.credit
        };
        self.bonus.store(bonus, Ordering::Relaxed);
        s.cwnd = s.controller_window.saturating_add(bonus);
    }

    /// The path's sender handed `bytes` to quinn: from now on an acknowledgement is due.
    pub(crate) fn data_written(&self, now: Instant, bytes: u64) {
        let mut s = self.lock();
        s.unacked_since.get_or_insert(now);
        s.queued = s.queued.saturating_add(bytes);
    }

    /// A factory that wraps `inner`'s controllers so they report to `self`.
    pub(crate) fn factory(
        self: &Arc<Self>,
        inner: Arc<dyn ControllerFactory + Send + Sync>,
    ) -> Arc<TelemetryFactory> {
        Arc::new(TelemetryFactory {
            inner,
            telemetry: self.clone(),
        })
    }

    /// Takes the wrapped controller's window and phase after quinn called it at `now` (`None`
    /// where quinn passes no time: the window's peak then only grows).
    fn controller_changed(
        &self,
        s: &mut TelemetryState,
        controller: &dyn Controller,
        now: Option<Instant>,
    ) {
        s.controller_window = controller.window();
        let expired = match (now, s.window_peak_at) {
            (Some(now), Some(at)) => {
                now.saturating_duration_since(at) > s.rtt.srtt().saturating_mul(2)
            }
            _ => false,
        };
        if s.controller_window >= s.window_peak || expired {
            s.window_peak = s.controller_window;
            s.window_peak_at = now.or(s.window_peak_at);
        }
        s.slow_start = controller
            .metrics()
            .ssthresh
            .is_some_and(|threshold| s.controller_window < threshold);
        self.refresh_window(s);
    }

    fn update(&self, f: impl FnOnce(&mut TelemetryState)) {
        {
            let mut state = self.lock();
            f(&mut state);
            state.generation = state.generation.wrapping_add(1);
        }
        self.changed.notify_one();
    }
}

impl TelemetryState {
    /// Bytes in flight for quinn now, not only as of its last ack batch.
    fn in_flight_now(&self) -> u64 {
        self.in_flight.saturating_add(self.sent_since_acks)
    }
}

/// Builds [`TelemetryController`]s around another factory's controllers.
pub(crate) struct TelemetryFactory {
    inner: Arc<dyn ControllerFactory + Send + Sync>,
    telemetry: Arc<Telemetry>,
}

impl ControllerFactory for TelemetryFactory {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        let inner = self.inner.clone().build(now, current_mtu);
        self.telemetry.update(|s| {
            self.telemetry
                .controller_changed(s, inner.as_ref(), Some(now))
        });
        Box::new(TelemetryController {
            inner,
            telemetry: self.telemetry.clone(),
        })
    }
}

/// Forwards every call to the real controller and records what the estimators need.
struct TelemetryController {
    inner: Box<dyn Controller>,
    telemetry: Arc<Telemetry>,
}

impl Controller for TelemetryController {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        self.inner.on_sent(now, bytes, last_packet_number);
        // No notify: sending only closes the window.
        let mut s = self.telemetry.lock();
        let app_limited = s.app_limited;
        let in_flight = s.in_flight;
        let state = s
            .bandwidth
            .on_packet_sent(now, bytes, in_flight, app_limited);
        s.sent.push(now, state);
        s.sent_since_acks = s.sent_since_acks.saturating_add(bytes);
        s.queued = s.queued.saturating_sub(bytes);
        // quinn reports every packet here, ACK-only ones too, which never come back acked: so
        // bytes in flight come from quinn's own count at each ack batch, not from summing these.
        self.telemetry
            .controller_changed(&mut s, self.inner.as_ref(), Some(now));
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        app_limited: bool,
        rtt: &quinn_proto::RttEstimator,
    ) {
        self.inner.on_ack(now, sent, bytes, app_limited, rtt);
        let mut s = self.telemetry.lock();
        if let Some(state) = s.sent.acked(sent) {
            s.bandwidth.on_packet_acked(now, &state, bytes);
        }
        s.newest_acked_sent = Some(s.newest_acked_sent.map_or(sent, |n| n.max(sent)));
        s.acked_in_batch = s.acked_in_batch.saturating_add(bytes);
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        largest_packet_num_acked: Option<u64>,
    ) {
        self.inner
            .on_end_acks(now, in_flight, app_limited, largest_packet_num_acked);
        let inner = self.inner.as_ref();
        self.telemetry.update(|s| {
            // One RTT sample per ack batch, from its newest packet, as RFC 9002 takes it.
            if let Some(sent) = s.newest_acked_sent.take() {
                s.rtt.on_sample(now.saturating_duration_since(sent));
            }
            s.in_flight = in_flight;
            s.sent_since_acks = 0;
            if app_limited {
                s.queued = 0;
            }
            // quinn's acknowledgements caught up with (at most) these credited bytes.
            s.credit = s
                .credit
                .saturating_sub(std::mem::take(&mut s.acked_in_batch));
            self.telemetry.controller_changed(s, inner, Some(now));
            // Progress: the clock restarts, or stops if nothing is outstanding any more.
            s.unacked_since = (in_flight > 0).then_some(now);
        });
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        self.inner
            .on_congestion_event(now, sent, is_persistent_congestion, lost_bytes);
        let inner = self.inner.as_ref();
        self.telemetry.update(|s| {
            s.lost_bytes = s.lost_bytes.saturating_add(lost_bytes);
            if lost_bytes > 0 {
                s.last_loss_sent = Some(sent);
            }
            s.in_flight = s.in_flight_now().saturating_sub(lost_bytes);
            s.sent_since_acks = 0;
            s.congestion_events = s.congestion_events.saturating_add(1);
            self.telemetry.controller_changed(s, inner, Some(now));
        });
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.inner.on_mtu_update(new_mtu);
        let inner = self.inner.as_ref();
        self.telemetry
            .update(|s| self.telemetry.controller_changed(s, inner, None));
    }

    fn window(&self) -> u64 {
        self.inner
            .window()
            .saturating_add(self.telemetry.bonus.load(Ordering::Relaxed))
    }

    fn metrics(&self) -> quinn::congestion::ControllerMetrics {
        self.inner.metrics()
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(Self {
            inner: self.inner.clone_box(),
            telemetry: self.telemetry.clone(),
        })
    }

    fn initial_window(&self) -> u64 {
        self.inner.initial_window()
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// Where a path's received datagram bytes are counted (for delivery reports).
#[derive(Debug)]
pub(crate) enum ReceivedBytes {
    /// quinn's own statistics.
    Quinn(quinn::Connection),
    /// A counter the simulated driver keeps.
    Counted(Arc<AtomicU64>),
}

/// The core's view of a path: its telemetry and the datagram bytes it received.
#[derive(Debug)]
pub(crate) struct CoreTelemetry {
    telemetry: Arc<Telemetry>,
    received: ReceivedBytes,
}

impl CoreTelemetry {
    pub(crate) fn new(telemetry: Arc<Telemetry>, received: ReceivedBytes) -> Self {
        Self {
            telemetry,
            received,
        }
    }
}

/// How long the peer may hold an acknowledgement: RFC 9000's default (section 18.2). The paths
/// ask for less with the ACK frequency extension (`config.rs`), but a peer keeps the default
/// until it takes the request, so suspicion waits for the default.
const PEER_MAX_ACK_DELAY: Duration = Duration::from_millis(25);

impl mpquic_proto::PathTelemetry for CoreTelemetry {
    fn snapshot(&self, id: PathId, status: PathStatus) -> PathSnapshot {
        self.telemetry.snapshot(id, status)
    }

    fn one_way_delay(&self) -> Duration {
        let t = self.telemetry.lock();
        t.one_way.estimate(&t.rtt)
    }

    fn ack_wait(&self) -> (Option<Instant>, Duration) {
        let t = self.telemetry.lock();
        (t.unacked_since, t.rtt.srtt())
    }

    fn probe_timeout(&self) -> Duration {
        let t = self.telemetry.lock();
        let variation = (t.rtt.rttvar() * 4).max(Duration::from_millis(1));
        t.rtt.srtt() + variation + PEER_MAX_ACK_DELAY
    }

    fn lost_bytes(&self) -> u64 {
        self.telemetry.lock().lost_bytes
    }

    fn tail(&self) -> mpquic_proto::Tail {
        let t = self.telemetry.lock();
        if t.queued > 0 {
            mpquic_proto::Tail::Queued
        } else if t.unacked_since.is_some() {
            mpquic_proto::Tail::Unacked
        } else {
            mpquic_proto::Tail::Acked
        }
    }

    fn last_loss_sent(&self) -> Option<Instant> {
        self.telemetry.lock().last_loss_sent
    }

    fn generation(&self) -> u64 {
        self.telemetry.lock().generation
    }

    fn set_app_limited(&self, limited: bool) {
        self.telemetry.lock().app_limited = limited;
    }

    fn datagram_bytes_received(&self) -> u64 {
        match &self.received {
            ReceivedBytes::Quinn(conn) => conn.stats().udp_rx.bytes,
            ReceivedBytes::Counted(count) => count.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_packet_of_a_gso_batch_counts_as_delivered() {
        let mut estimator = BandwidthEstimator::new(BandwidthConfig {
            initial_bandwidth: 1000.0,
            ..BandwidthConfig::default()
        })
        .unwrap();
        let mut log = SentLog::default();
        let start = Instant::now();
        // One transmit of ten 1200-byte packets, acked one by one 10 ms later.
        log.push(start, estimator.on_packet_sent(start, 12_000, 0, false));
        let acked = start + Duration::from_millis(10);
        for _ in 0..10 {
            let state = log.acked(start).expect("the batch is remembered");
            estimator.on_packet_acked(acked, &state, 1200);
        }
        // 12 000 bytes in 10 ms; a lone packet's 1200 would give a tenth of it.
        let rate = estimator.bandwidth();
        assert!((rate - 1_200_000.0).abs() < 1.0, "{rate}");
        // A packet sent later retires the batch; one sent before it is no longer known.
        let later = start + Duration::from_millis(1);
        log.push(later, estimator.on_packet_sent(later, 1200, 0, false));
        assert!(log.acked(later).is_some());
        assert!(log.acked(start).is_none());
    }

    /// A controller whose window the test sets, in slow start below `ssthresh`.
    #[derive(Clone)]
    struct FakeController {
        window: Arc<AtomicU64>,
        ssthresh: u64,
    }

    impl Controller for FakeController {
        fn on_congestion_event(&mut self, _: Instant, _: Instant, _: bool, _: u64) {}
        fn on_mtu_update(&mut self, _: u16) {}
        fn window(&self) -> u64 {
            self.window.load(Ordering::Relaxed)
        }
        fn metrics(&self) -> quinn::congestion::ControllerMetrics {
            let mut metrics = quinn::congestion::ControllerMetrics::default();
            metrics.congestion_window = self.window();
            metrics.ssthresh = Some(self.ssthresh);
            metrics
        }
        fn clone_box(&self) -> Box<dyn Controller> {
            Box::new(self.clone())
        }
        fn initial_window(&self) -> u64 {
            12_000
        }
        fn into_any(self: Box<Self>) -> Box<dyn Any> {
            self
        }
    }

    fn wrapped(ssthresh: u64) -> (Arc<Telemetry>, Arc<AtomicU64>, TelemetryController) {
        let telemetry = Telemetry::new(Duration::from_millis(50), 1e6);
        let window = Arc::new(AtomicU64::new(12_000));
        let inner = FakeController {
            window: window.clone(),
            ssthresh,
        };
        let controller = TelemetryController {
            inner: Box::new(inner),
            telemetry: telemetry.clone(),
        };
        (telemetry, window, controller)
    }

    #[test]
    fn a_delivery_report_opens_the_window_as_early_acks_would() {
        let (telemetry, window, mut controller) = wrapped(u64::MAX);
        let now = Instant::now();
        // quinn: ten 1200-byte packets in flight, none acknowledged yet.
        controller.on_end_acks(now, 12_000, false, None);
        assert_eq!(controller.window(), 12_000);
        // The peer got six of them (and everything quinn sent before: 20 000 bytes of the
        // handshake); four are on the way.
        telemetry.on_delivery_report(32_000, 27_200, 0);
        // Slow start: the six count twice, once as no longer in flight, once as growth.
        assert_eq!(controller.window(), 12_000 + 2 * 7_200);
        assert_eq!(telemetry.lock().cwnd, controller.window());
        let room = controller.window() - 12_000;
        // quinn's own acknowledgements of the six arrive: its controller grows by them and the
        // credit goes, leaving the room where the report had put it.
        window.fetch_add(7_200, Ordering::Relaxed);
        telemetry.lock().acked_in_batch = 7_200;
        controller.on_end_acks(now, 4_800, false, None);
        assert_eq!(telemetry.lock().credit, 0);
        assert_eq!(controller.window() - 4_800, room);
    }

    #[test]
    fn packets_sent_since_the_last_ack_batch_are_credited_too() {
        let (telemetry, _, mut controller) = wrapped(u64::MAX);
        let now = Instant::now();
        // A slow-start round: nothing was in flight at the last ack batch, then quinn sent ten
        // packets, and the report comes before any of their acknowledgements.
        controller.on_end_acks(now, 0, false, None);
        controller.on_sent(now, 12_000, 9);
        telemetry.on_delivery_report(12_000, 7_200, 0);
        assert_eq!(controller.window(), 12_000 + 2 * 7_200);
        // Bytes quinn declares lost leave the count.
        controller.on_congestion_event(now, now, false, 4_800);
        telemetry.on_delivery_report(12_000, 7_200, 4_800);
        assert_eq!(telemetry.lock().credit, 7_200);
        // quinn's batch resets the count to its own.
        controller.on_end_acks(now, 0, false, None);
        assert_eq!(telemetry.lock().credit, 0);
    }

    #[test]
    fn bytes_waiting_in_quinn_take_the_window_until_quinn_has_sent_them() {
        let (telemetry, _, mut controller) = wrapped(u64::MAX);
        let now = Instant::now();
        let room = || telemetry.snapshot(PathId(0), PathStatus::Available).room();
        controller.on_end_acks(now, 0, true, None);
        assert_eq!(room(), 12_000);
        // The sender hands quinn 8000 bytes: they are the path's before they leave.
        telemetry.data_written(now, 8_000);
        assert_eq!(room(), 4_000);
        // quinn sends them in packets a little larger (headers): still taken, now in flight.
        controller.on_sent(now, 5_000, 1);
        controller.on_sent(now, 3_200, 2);
        assert_eq!(telemetry.lock().queued, 0);
        assert_eq!(room(), 12_000 - 8_200);
        // Acked; quinn then found nothing to send, so nothing can still be waiting in it.
        telemetry.data_written(now, 500);
        controller.on_end_acks(now, 0, true, None);
        assert_eq!(room(), 12_000);
    }

    #[test]
    fn the_scheduler_sees_slow_start_while_the_window_is_below_the_threshold() {
        let now = Instant::now();
        for (ssthresh, slow_start) in [(u64::MAX, true), (12_000, false)] {
            let (telemetry, _, mut controller) = wrapped(ssthresh);
            controller.on_end_acks(now, 0, false, None);
            let snapshot = telemetry.snapshot(PathId(0), PathStatus::Available);
            assert_eq!(snapshot.slow_start, slow_start, "ssthresh {ssthresh}");
        }
    }

    #[test]
    fn credit_counts_once_after_slow_start_and_never_beyond_what_is_in_flight() {
        let (telemetry, _, mut controller) = wrapped(0);
        let now = Instant::now();
        controller.on_end_acks(now, 12_000, false, None);
        telemetry.on_delivery_report(12_000, 7_200, 0);
        assert_eq!(controller.window(), 12_000 + 7_200);
        // A report of more than was ever sent credits at most what is in flight.
        telemetry.on_delivery_report(12_000, u64::MAX, 0);
        assert_eq!(controller.window(), 12_000 + 12_000);
        // Bytes declared lost are not waited for; bytes neither received nor lost are.
        telemetry.on_delivery_report(12_000, 6_000, 2_400);
        assert_eq!(controller.window(), 12_000 + 8_400);
    }

    #[test]
    fn quinn_buffers_the_flight_of_before_a_shrinking_window_for_two_round_trips() {
        let (telemetry, window, mut controller) = wrapped(0);
        let start = Instant::now();
        let at = |ms| start + Duration::from_millis(ms);
        window.store(500_000, Ordering::Relaxed);
        controller.on_end_acks(start, 500_000, false, None);
        assert_eq!(telemetry.send_window(), 1_500_000);
        // A loss, and the controller drains (BBR after Startup): quinn still charges the
        // flight of before the loss until its re-sent bytes are acknowledged.
        window.store(100_000, Ordering::Relaxed);
        controller.on_congestion_event(at(10), start, false, 1200);
        assert_eq!(telemetry.send_window(), 1_500_000);
        controller.on_end_acks(at(90), 400_000, false, None);
        assert_eq!(telemetry.send_window(), 1_500_000);
        // Two smoothed RTTs (50 ms, the prior) after the window was last that large.
        controller.on_end_acks(at(101), 100_000, false, None);
        assert_eq!(telemetry.send_window(), 300_000);
        // A window that grows counts at once.
        window.store(200_000, Ordering::Relaxed);
        controller.on_end_acks(at(102), 100_000, false, None);
        assert_eq!(telemetry.send_window(), 600_000);
    }
}
