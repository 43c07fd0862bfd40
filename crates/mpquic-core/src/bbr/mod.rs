//! BBR version 3 (draft-ietf-ccwg-bbr) as a quinn congestion controller.
//!
//! BBR models the path instead of reacting to each loss: it estimates the bottleneck bandwidth
//! (the maximum delivery rate over the last two probing cycles) and the minimum RTT, sends at
//! that bandwidth, keeps about one bandwidth-delay product in flight, and probes for more in
//! cycles (ProbeBW: Down, Cruise, Refill, Up), with a ProbeRTT every 5 s without a new
//! minimum RTT. Loss bounds the model (`inflight_hi`, `bw_lo`, `inflight_lo`) only when the
//! loss rate of a round passes a threshold, so the random loss of a radio link does not cut the
//! rate the way it cuts a loss-based window.
//!
//! # On quinn
//! quinn reports sends, acknowledged packets (by send time), ends of ack batches and losses
//! (in batches). The controller keeps a record per transmit (what had been delivered and lost
//! when it left and what was in flight), turns acknowledgements into delivery-rate samples with
//! `mpquic-estimate`'s sampler, and runs the draft's per-ACK steps once per ack batch with the
//! sample of the newest packet acknowledged, as the draft does per ACK.
//!
//! quinn has no pacing-rate input: it paces at 1.25 x window / smoothed RTT and stops at the
//! window. So the window handed to quinn is BBR's pacing rate times the minimum RTT, plus the
//! ack-aggregation allowance (two packets more while probing up), capped by BBR's cwnd: the
//! flight is held at what the pacing rate keeps in flight, the sending rate follows the pacing
//! rate through the ack clock, and quinn's pacer (at least 1.25 x faster) only smooths bursts.
//!
//! The pacing rate has no margin below the estimate. The draft paces 1% below it so that an
//! estimate a little above the bottleneck's rate does not build a queue; here the window holds
//! the flight at the pacing rate's bandwidth-delay product, so such a queue stays within the
//! estimate's error, while the margin left the bottleneck idle 1% of the time whenever the
//! estimate was right. In the simulation (`crates/mpquic-core/src/sim.rs`, 20 MB, 30 seeds)
//! dropping it took pb-high from 92.3 to 92.7% of the summed path rates and pb-low from 95.2
//! to 95.5%; from 1 s to 3 s of pb-high's transfer (seed 1) the 40 Mbit/s path carried 0.6%
//! more, as much as under CUBIC, whose full queue keeps it busy.
//!
//! quinn's metrics carry no controller state either: the controller reports Startup as an
//! unbounded slow start threshold, which is what quinn's own controllers report until their
//! first loss, so that the telemetry can tell the scheduler the window still doubles every
//! round trip (`PathSnapshot::slow_start`).
//!
//! # The loss response, changed
//! With [`BbrConfig::draft_loss_response`] off (the default), a round counts as congested
//! only when its loss rate exceeds the threshold (2%) *plus the path's background loss rate*,
//! which is learned from rounds that do not probe (an average with weight 1/8, capped at 10%).
//! The draft cuts `bw_lo` and `inflight_lo` by 30% after every round with any loss and
//! `inflight_hi` when a probe loses more than 2%: under 2% random loss every round has losses,
//! so the lower bounds ratchet down to what the last round delivered and the rate collapses.
//! Loss above the background still bounds the model exactly as the draft says.
//!
//! The pacing rate also makes up for the background loss: it is the draft's rate divided by
//! 1 - background. BBR's bandwidth counts delivered bytes only. A path that loses 2% at random
//! before its bottleneck (as the emulated links do) delivers the bottleneck's rate, so pacing
//! at that rate leaves the bottleneck 2% idle; one that loses after it shows a bandwidth 2%
//! below the bottleneck. In the simulation (`mpquic_core::sim::Pair`, 20 MB, three seeds) this
//! took the four lossy presets from 94.3 / 94.6 / 90.1 / 93.6% of the summed path rates
//! (sec-low, pb-low, pb-high, sec-high) to 94.6 / 95.0 / 90.7 / 94.3%; 5 MB transfers were
//! level within their noise (24 seeds), and lossless ones unchanged. On the namespace testbed
//! (docs/results/2026-11-28-loss-pacing/) pb-high-lossy went from 90.0 to 90.8% at 20 MB; the
//! other presets moved within the run-to-run noise.
//!
//! # Startup ends on a building queue
//! The draft's Startup ends on a bandwidth plateau (three rounds without 25% growth), on loss,
//! or here also on a standing queue (below). The plateau shows a round after the flight has
//! passed the BDP, and Startup doubles the flight in that round: with a bottleneck buffer of
//! one BDP (a common size, and the testbed's) it overflows. A path that had died and came back
//! meets the whole backlog of the outage that way: on pb-high's failover the 40 Mbit/s path
//! dropped 49-78 datagrams when it returned, and each drop held the stream up for a round trip
//! of the full queue (two in a row made a 200 ms wait, docs/results/2026-11-28-loss-pacing/).
//! So Startup also ends, as HyStart++ ends slow start (RFC 9406), when 8 RTT samples in a row
//! stood above the minimum by an eighth of it (4-16 ms): the pipe is full. Only samples of
//! packets the window held back count, and none of the first round: an app-limited burst or
//! the initial window leaves at once and queues behind itself whatever the path's rate. With
//! that the returning path dropped 0-10 datagrams and the longest wait was 112 ms
//! (docs/results/2026-11-28-startup-delay/); [`BbrConfig::startup_delay_exit`] turns it off.
//! A lone control frame's sample does not count: a tail probe queues behind the flight it
//! follows, and counted, it ended Startup on pb-high's 10 ms path in the middle of a page
//! load (docs/results/2026-12-05-idle-flights/).
//! Packets that left with a BDP or more in flight count too, app-limited or not: the pipe was
//! full when they left, so the queue they met is the path's. A multipath scheduler that holds
//! a path's flight at two BDPs of its estimate, a little below Startup's window, makes every
//! sample app-limited; the path then stayed in Startup with a BDP standing in its queue. In
//! the simulation of nytimes.com on pb-high, the 40 Mbit/s path held 50 ms of queue for
//! 250 ms, in front of every urgent response sent on it (docs/results/2026-12-04-startup-held/).
//!
//! # Two more departures, for paths a scheduler keeps short of data
//! A multipath scheduler feeds each path its share in bursts, so a slow path is often
//! app-limited and often idle between bursts. Two of the draft's rules misbehave there, and
//! both are changed as other implementations change them:
//! - Startup also ends on a standing queue (QUICHE's BBRv2 `CheckPersistentQueue`): two rounds
//!   without 25% bandwidth growth whose smallest flight stayed above 1.75 BDPs. The draft's
//!   plateau test skips app-limited rounds, so such a path never left Startup and kept the two
//!   initial windows Startup gave it, several BDPs and a standing queue on a slow path.
//! - A restart from idle clears the ack-aggregation epoch's count as well as its start (Linux's
//!   `bbr_cwnd_event`); the draft moves only the start, and each pause then turned what the
//!   previous epoch had counted into `extra_acked`, which grew without bound.
//!
//! On pb-high's 20 Mbit/s failover (`cargo xtask peers failover`), the two together took the
//! 10 Mbit/s path's emulated queue from 129-866 drops in a quarter of the runs to none, and the
//! longest delivery gap from 267 to 102 ms (docs/results/2026-11-25-bbr-idle/).
//!
//! # ProbeRTT only when the path hid its minimum
//! The draft drains the flight to half a BDP for 200 ms and a round whenever 5 s pass without
//! a new minimum RTT sample, even when the samples of those 5 s stood at the minimum. A path
//! cruising at one BDP has no queue to drain, so that only costs rate: about 2% of a long
//! transfer on each path. Here an interval in which some sample came within an eighth of the
//! ProbeRTT minimum counts as the probe and keeps the minimum with a new stamp, as QUICHE's
//! BBR does with `probe_rtt_skipped_if_similar_rtt` (QUICHE asks for an app-limited interval
//! too; a queue that hides the minimum shows in the samples whatever fills it). Another
//! flow's standing queue keeps every sample above the eighth, and ProbeRTT comes as the draft
//! says. In the simulation (`crates/mpquic-core/src/sim.rs`, pb-high, 50 MB, priority-bucket)
//! this took the transfer from 91.3% to 93.5% of the summed path rates (CUBIC: 94.7%); on the
//! namespace testbed it changed nothing measurable (92.0% against 91.9%,
//! docs/results/2026-11-27-bbr/).
//!
//! # Delivery reports
//! mpquic credits a loss-based controller's window early with bytes its receiver reports
//! delivered on a faster path (see `telemetry.rs`). With BBR the reports credit nothing
//! (`Config::delivery_reports`): its window is the flight its pacing rate needs, not an ack
//! clock, and its samples come only from quinn's own acknowledgements, so nothing is counted
//! twice. Measured on the loopback link emulator (`linkemu relay`, 20 MB, two runs each), the
//! credit kept the 40 Mbit/s path of pb-high at 1.33-1.40x its minimum RTT (1.03-1.06x without)
//! for 1-3% more goodput, and in pb-high-lossy gave 38-42 Mbit/s against 35-38 at 1.13-1.17x
//! against 1.08-1.12x: a standing queue for a little rate, which is what BBR exists to avoid.

mod model;
#[cfg(test)]
mod tests;

use std::any::Any;
use std::sync::Arc;
use std::time::Instant;

use quinn::congestion::{Controller, ControllerFactory, ControllerMetrics};

pub use model::BbrState;
use model::{BbrModel, SentRecord};

use crate::sent_log::SentLog;

/// Settings of BBR; a quinn [`ControllerFactory`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BbrConfig {
    initial_window: u64,
    loss_threshold: f64,
    draft_loss_response: bool,
    startup_delay_exit: bool,
}

impl Default for BbrConfig {
    fn default() -> Self {
        Self {
            initial_window: crate::DEFAULT_INITIAL_WINDOW,
            loss_threshold: 0.02,
            draft_loss_response: false,
            startup_delay_exit: true,
        }
    }
}

impl BbrConfig {
    /// Bytes in flight allowed before the first RTT sample.
    ///
    /// # Default
    /// [`DEFAULT_INITIAL_WINDOW`](crate::DEFAULT_INITIAL_WINDOW).
    pub fn initial_window(&mut self, bytes: u64) -> &mut Self {
        self.initial_window = bytes;
        self
    }

    /// The loss rate of a round above which BBR bounds its model (the draft's
    /// `BBRLossThresh`), clamped to 0..=1.
    ///
    /// # Default
    /// 0.02.
    pub fn loss_threshold(&mut self, rate: f64) -> &mut Self {
        self.loss_threshold = if rate.is_nan() {
            0.02
        } else {
            rate.clamp(0.0, 1.0)
        };
        self
    }

    /// Whether loss is judged as the draft does: any loss in a round lowers the lower bounds,
    /// and a probe's loss above the threshold lowers `inflight_hi`, whatever the path loses
    /// without congestion, and the pacing rate makes up for none of it. Off, the threshold
    /// applies above the learned background loss rate and the pacing rate is raised by it
    /// (see the [module documentation](self)); on, for comparison.
    ///
    /// # Default
    /// false.
    pub fn draft_loss_response(&mut self, draft: bool) -> &mut Self {
        self.draft_loss_response = draft;
        self
    }

    /// Whether Startup also ends when 8 RTT samples in a row show a queue building, as
    /// HyStart++ ends slow start (see the [module documentation](self)); off, Startup ends on
    /// the draft's bandwidth plateau and loss, and on the standing-queue check.
    ///
    /// # Default
    /// true.
    pub fn startup_delay_exit(&mut self, exit: bool) -> &mut Self {
        self.startup_delay_exit = exit;
        self
    }

    pub(crate) fn uses_draft_loss_response(&self) -> bool {
        self.draft_loss_response
    }
}

impl ControllerFactory for BbrConfig {
    fn build(self: Arc<Self>, _now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(Bbr {
            model: BbrModel::new(*self, u64::from(current_mtu)),
            sent: SentLog::default(),
            config: *self,
        })
    }
}

/// One path's BBR: the model and the records of its transmits.
#[derive(Debug, Clone)]
struct Bbr {
    model: BbrModel,
    sent: SentLog<SentRecord>,
    config: BbrConfig,
}

impl Controller for Bbr {
    fn on_sent(&mut self, now: Instant, bytes: u64, _last_packet_number: u64) {
        let record = self.model.on_sent(now, bytes);
        self.sent.push(now, record);
    }

    fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        bytes: u64,
        _app_limited: bool,
        _rtt: &quinn_proto::RttEstimator,
    ) {
        let record = self.sent.acked(sent);
        self.model.on_ack(now, sent, record.as_ref(), bytes);
    }

    fn on_end_acks(
        &mut self,
        now: Instant,
        in_flight: u64,
        app_limited: bool,
        _largest_packet_num_acked: Option<u64>,
    ) {
        self.model.on_end_acks(now, in_flight, app_limited);
    }

    fn on_congestion_event(
        &mut self,
        now: Instant,
        _sent: Instant,
        is_persistent_congestion: bool,
        lost_bytes: u64,
    ) {
        self.model
            .on_loss(now, lost_bytes, is_persistent_congestion);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.model.on_mtu_update(u64::from(new_mtu));
    }

    fn window(&self) -> u64 {
        self.model.window()
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut metrics = ControllerMetrics::default();
        metrics.congestion_window = self.model.window();
        // Bits per second, as quinn's qlog expects.
        metrics.pacing_rate = Some((self.model.pacing_rate() * 8.0) as u64);
        // The telemetry reads slow start from it (`PathSnapshot::slow_start`).
        metrics.ssthresh = self.model.slow_start_threshold();
        metrics
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        self.config.initial_window
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}
