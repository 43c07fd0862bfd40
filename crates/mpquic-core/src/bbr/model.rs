//! BBRv3's model and state machine (draft-ietf-ccwg-bbr), apart from quinn: it is fed sends,
//! acknowledged transmits, ends of ack batches and losses, each with the time, and yields a
//! congestion window, a pacing rate and the window quinn is given (see the module above).
//!
//! Names follow the draft's pseudocode (`max_bw`, `bw_lo`, `inflight_hi`, ...) so the two can
//! be read side by side. The deliberate departures are the loss response (see
//! [`BbrConfig::draft_loss_response`](super::BbrConfig::draft_loss_response)), Startup's exit
//! on a standing queue and the aggregation epoch's reset on a restart from idle (see the
//! module above).

use std::time::{Duration, Instant};

use mpquic_estimate::{BandwidthEstimator, RateSample, SentPacketState};

use super::BbrConfig;

const STARTUP_PACING_GAIN: f64 = 2.77;
const STARTUP_CWND_GAIN: f64 = 2.0;
const DRAIN_PACING_GAIN: f64 = 0.35;
const DEFAULT_CWND_GAIN: f64 = 2.0;
const PROBE_UP_CWND_GAIN: f64 = 2.25;
const PROBE_RTT_CWND_GAIN: f64 = 0.5;
/// Multiplicative decrease of the lower bounds and of `inflight_hi` on congestion.
const BETA: f64 = 0.7;
/// Room left below `inflight_hi` for other flows while cruising.
const HEADROOM: f64 = 0.15;
/// Startup ends after this many rounds without 25% bandwidth growth.
const FULL_BW_ROUNDS: u32 = 3;
const FULL_BW_GROWTH: f64 = 1.25;
/// Startup also ends after this many rounds without that growth whose smallest flight held a
/// queue of [`STARTUP_QUEUE_GAIN`] - 1 BDPs.
const STARTUP_QUEUE_ROUNDS: u32 = 2;
const STARTUP_QUEUE_GAIN: f64 = 1.75;
/// Startup ends on loss only after this many loss events in a round.
const STARTUP_FULL_LOSS_COUNT: u32 = 6;
/// Startup's delay check, with RFC 9406's HyStart++ constants: this many RTT samples in a row
/// above the minimum by an eighth of it, within 4-16 ms.
const STARTUP_DELAY_DIVISOR: u32 = 8;
const STARTUP_DELAY_MIN: Duration = Duration::from_millis(4);
const STARTUP_DELAY_MAX: Duration = Duration::from_millis(16);
const STARTUP_DELAY_SAMPLES: u32 = 8;
const MIN_PIPE_PACKETS: u64 = 4;
const PROBE_RTT_INTERVAL: Duration = Duration::from_secs(5);
const MIN_RTT_FILTER: Duration = Duration::from_secs(10);
const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);
/// A ProbeRTT interval whose smallest RTT sample came within this factor of the ProbeRTT
/// minimum saw the path without a queue, and counts as a ProbeRTT (QUICHE's
/// `kSimilarMinRttThreshold`).
const SIMILAR_MIN_RTT: f64 = 1.125;
const EXTRA_ACKED_ROUNDS: usize = 10;
/// The background loss estimate learns from each quiet round with this weight, and never
/// exceeds the cap: a path losing more than that is treated as congested whatever its history.
const BACKGROUND_LOSS_WEIGHT: f64 = 1.0 / 8.0;
const BACKGROUND_LOSS_CAP: f64 = 0.10;

/// Where in its state machine BBR is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BbrState {
    /// Doubling the sending rate each round until the bandwidth stops growing.
    Startup,
    /// Draining the queue Startup built.
    Drain,
    /// ProbeBW: sending below the estimate to leave room for others.
    ProbeBwDown,
    /// ProbeBW: sending at the estimate.
    ProbeBwCruise,
    /// ProbeBW: refilling the pipe before probing.
    ProbeBwRefill,
    /// ProbeBW: probing for more bandwidth.
    ProbeBwUp,
    /// Draining the pipe to measure the minimum RTT again.
    ProbeRtt,
}

impl BbrState {
    pub(crate) fn is_probe_bw(self) -> bool {
        matches!(
            self,
            Self::ProbeBwDown | Self::ProbeBwCruise | Self::ProbeBwRefill | Self::ProbeBwUp
        )
    }

    /// The draft's `BBRIsProbingBW`: while probing, losses are what the probe was for.
    fn is_probing_bw(self) -> bool {
        matches!(self, Self::Startup | Self::ProbeBwRefill | Self::ProbeBwUp)
    }
}

/// The draft's `BBR.ack_phase`: where the acks of a bandwidth probe are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AckPhase {
    Init,
    ProbeStopping,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
}

/// What is remembered of a transmit until its acknowledgement.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SentRecord {
    rate: SentPacketState,
    /// The draft's `P.tx_in_flight`: bytes in flight once this transmit left.
    tx_in_flight: u64,
    /// The draft's `P.lost`: bytes lost on the path when this transmit left.
    lost: u64,
    /// The draft's `P.delivered`: bytes delivered on the path when this transmit left.
    delivered: u64,
}

/// The acknowledgements of one ack batch, gathered transmit by transmit.
#[derive(Debug, Clone, Default)]
struct AckBatch {
    newly_acked: u64,
    /// The sample of the latest-sent transmit acknowledged (the draft's per-ACK `rs`).
    sample: Option<RateSample>,
    tx_in_flight: u64,
    lost_since_sent: u64,
    /// `P.delivered` of the latest-sent transmit acknowledged.
    prior_delivered: u64,
    /// RTT of the latest-sent transmit acknowledged.
    rtt: Option<Duration>,
    newest_sent: Option<Instant>,
}

/// Transmits smaller than this carry control frames alone (a tail probe, a data ack): their RTT
/// samples do not count toward Startup's delay check. A tail probe leaves an eighth of an RTT
/// after the flight it follows, so it queues behind that flight at the bottleneck, and the
/// flight of a page's first responses is app-limited but, against an estimate from such
/// samples, several bandwidth-delay products. Counted, the probes ended Startup just before a
/// page's last image was granted; the window fell from 56 to 13 kB and the image went partly
/// on the 50 ms path (pb-high bing-2013: 104 ms against 84 in half the testbed's loads,
/// docs/results/2026-12-05-idle-flights/).
const DELAY_SAMPLE_MIN_BYTES: u64 = 100;

/// The bandwidth maximum over the last two ProbeBW cycles (the draft's `MaxBwFilter`).
#[derive(Debug, Clone, Copy, Default)]
struct MaxBwFilter {
    cycles: [f64; 2],
}

impl MaxBwFilter {
    fn get(&self) -> f64 {
        self.cycles[0].max(self.cycles[1])
    }

    fn update(&mut self, bw: f64) {
        self.cycles[1] = self.cycles[1].max(bw);
    }

    fn advance(&mut self) {
        self.cycles = [self.cycles[1], 0.0];
    }
}

/// BBRv3 for one path.
#[derive(Debug, Clone)]
pub(crate) struct BbrModel {
    config: BbrConfig,
    mss: u64,
    state: BbrState,
    pacing_gain: f64,
    cwnd_gain: f64,
    rates: BandwidthEstimator,
    round_count: u64,
    round_start: bool,
    /// The draft's `next_round_delivered`: a round ends when a transmit sent after this much
    /// was delivered is acknowledged.
    next_round_delivered: u64,
    /// Bytes delivered (acknowledged) and lost on the path.
    delivered: u64,
    lost: u64,
    in_flight: u64,
    app_limited: bool,
    cwnd: u64,
    pacing_rate: f64,
    max_bw: MaxBwFilter,
    bw: f64,
    bw_latest: f64,
    inflight_latest: u64,
    bw_lo: f64,
    inflight_lo: u64,
    inflight_hi: u64,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Option<Instant>,
    probe_rtt_min_delay: Option<Duration>,
    probe_rtt_min_stamp: Option<Instant>,
    /// The smallest RTT sample after the one that last set `probe_rtt_min_stamp`.
    interval_min_rtt: Option<Duration>,
    probe_rtt_done_stamp: Option<Instant>,
    probe_rtt_round_done: bool,
    prior_cwnd: u64,
    idle_restart: bool,
    filled_pipe: bool,
    full_bw: f64,
    full_bw_count: u32,
    /// Startup's queue check: the bandwidth at the last round that grew, the rounds since
    /// whose flight never fell below the queue target, and this round's smallest flight.
    queue_check_bw: f64,
    queue_rounds: u32,
    min_in_flight_in_round: u64,
    /// Startup's delay check: RTT samples in a row that stood above the minimum by the margin.
    queued_samples: u32,
    // Loss accounting of the current round.
    loss_in_round: bool,
    lost_in_round: u64,
    delivered_in_round: u64,
    loss_events_in_round: u32,
    /// The loss rate the path shows when not congested (random loss), learned from quiet rounds.
    background_loss: f64,
    // ProbeBW.
    ack_phase: AckPhase,
    cycle_stamp: Option<Instant>,
    bw_probe_wait: Duration,
    rounds_since_bw_probe: u64,
    bw_probe_samples: bool,
    bw_probe_up_cnt: u64,
    bw_probe_up_acks: u64,
    bw_probe_up_rounds: u32,
    /// The largest flight since ProbeBW Up began.
    probe_up_flight: u64,
    // ACK aggregation.
    extra_acked: [u64; EXTRA_ACKED_ROUNDS],
    extra_acked_interval_start: Option<Instant>,
    extra_acked_delivered: u64,
    batch: AckBatch,
    /// Deterministic randomness for the probe wait (xorshift).
    random: u64,
}

impl BbrModel {
    pub(crate) fn new(config: BbrConfig, mss: u64) -> Self {
        let mss = mss.max(1);
        let cwnd = config.initial_window.max(MIN_PIPE_PACKETS * mss);
        Self {
            config,
            mss,
            state: BbrState::Startup,
            pacing_gain: STARTUP_PACING_GAIN,
            cwnd_gain: STARTUP_CWND_GAIN,
            rates: BandwidthEstimator::default(),
            round_count: 0,
            round_start: false,
            next_round_delivered: 0,
            delivered: 0,
            lost: 0,
            in_flight: 0,
            app_limited: false,
            cwnd,
            // Until an RTT is known: the initial window per millisecond, as the draft's
            // `nominal_bandwidth = InitialCwnd / (SRTT ? SRTT : 1ms)`.
            pacing_rate: STARTUP_PACING_GAIN * cwnd as f64 * 1000.0,
            max_bw: MaxBwFilter::default(),
            bw: 0.0,
            bw_latest: 0.0,
            inflight_latest: 0,
            bw_lo: f64::INFINITY,
            inflight_lo: u64::MAX,
            inflight_hi: u64::MAX,
            min_rtt: None,
            min_rtt_stamp: None,
            probe_rtt_min_delay: None,
            probe_rtt_min_stamp: None,
            interval_min_rtt: None,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            prior_cwnd: 0,
            idle_restart: false,
            filled_pipe: false,
            full_bw: 0.0,
            full_bw_count: 0,
            queue_check_bw: 0.0,
            queue_rounds: 0,
            min_in_flight_in_round: u64::MAX,
            queued_samples: 0,
            loss_in_round: false,
            lost_in_round: 0,
            delivered_in_round: 0,
            loss_events_in_round: 0,
            // Until quiet rounds show the path's own loss rate, assume it may be as high as
            // the threshold: the first rounds after Startup must not take random loss for
            // congestion before there was a chance to learn it.
            background_loss: config.loss_threshold.min(BACKGROUND_LOSS_CAP),
            ack_phase: AckPhase::Init,
            cycle_stamp: None,
            bw_probe_wait: Duration::from_secs(2),
            rounds_since_bw_probe: 0,
            bw_probe_samples: false,
            bw_probe_up_cnt: u64::MAX,
            bw_probe_up_acks: 0,
            bw_probe_up_rounds: 0,
            probe_up_flight: 0,
            extra_acked: [0; EXTRA_ACKED_ROUNDS],
            extra_acked_interval_start: None,
            extra_acked_delivered: 0,
            batch: AckBatch::default(),
            random: 0x9E37_79B9_7F4A_7C15,
        }
    }

    /// Bytes per second.
    pub(crate) fn pacing_rate(&self) -> f64 {
        self.pacing_rate
    }

    /// The window quinn is given. quinn has no pacing rate input: it paces at 1.25 x window /
    /// smoothed RTT and caps what is in flight at the window. So the window is BBR's pacing
    /// rate times the minimum RTT (what that rate keeps in flight), plus the ack-aggregation
    /// allowance (and two packets while probing up, the draft's quantization budget), and
    /// never above BBR's cwnd: at a steady state the flight is
    /// then held at the pacing rate's bandwidth-delay product, and quinn's pacer, at least 1.25
    /// x faster, only smooths bursts. Before an RTT is known, the cwnd alone.
    pub(crate) fn window(&self) -> u64 {
        let Some(min_rtt) = self.min_rtt else {
            return self.cwnd;
        };
        let paced =
            to_bytes(self.pacing_rate * min_rtt.as_secs_f64()).saturating_add(self.extra_acked());
        self.quantization_budget(paced).min(self.cwnd)
    }

    /// The slow start threshold to report in quinn's metrics, which have no controller
    /// state: unbounded in Startup, as quinn's own controllers report it until their first
    /// loss (the window still doubles every round trip), none after.
    pub(crate) fn slow_start_threshold(&self) -> Option<u64> {
        (self.state == BbrState::Startup).then_some(u64::MAX)
    }

    pub(crate) fn on_mtu_update(&mut self, mss: u64) {
        self.mss = mss.max(1);
        self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
    }

    /// A transmit of `bytes` left; returns what its acknowledgement will need.
    pub(crate) fn on_sent(&mut self, now: Instant, bytes: u64) -> SentRecord {
        if self.in_flight == 0 && self.app_limited {
            // The draft's BBRHandleRestartFromIdle: the pipe is empty, so pace at the
            // estimate rather than at a probing gain that assumed a full pipe.
            self.idle_restart = true;
            // A new aggregation epoch, with nothing counted in it yet. The draft moves only
            // the epoch's start; Linux (`bbr_cwnd_event`) also clears its count, and without
            // that the bytes acknowledged before the pause all read as excess over an epoch
            // that starts now, so a path that goes idle between bursts ratchets `extra_acked`
            // up each time (190 kB, 15 BDPs, on pb-high's 10 Mbit/s path on the testbed).
            self.extra_acked_interval_start = Some(now);
            self.extra_acked_delivered = 0;
            if self.state.is_probe_bw() {
                self.set_pacing_rate_with_gain(1.0);
            } else if self.state == BbrState::ProbeRtt {
                self.check_probe_rtt_done(now);
            }
        }
        let rate = self
            .rates
            .on_packet_sent(now, bytes, self.in_flight, self.app_limited);
        self.in_flight = self.in_flight.saturating_add(bytes);
        self.probe_up_flight = self.probe_up_flight.max(self.in_flight);
        SentRecord {
            rate,
            tx_in_flight: self.in_flight,
            lost: self.lost,
            delivered: self.delivered,
        }
    }

    /// `bytes` of a transmit sent at `sent` were acknowledged; `record` is its record if it is
    /// still known. The model moves at the end of the batch ([`Self::on_end_acks`]).
    pub(crate) fn on_ack(
        &mut self,
        now: Instant,
        sent: Instant,
        record: Option<&SentRecord>,
        bytes: u64,
    ) {
        self.delivered = self.delivered.saturating_add(bytes);
        self.delivered_in_round = self.delivered_in_round.saturating_add(bytes);
        self.batch.newly_acked = self.batch.newly_acked.saturating_add(bytes);
        let Some(record) = record else {
            return;
        };
        let sample = self.rates.on_packet_acked(now, &record.rate, bytes);
        // Startup's delay check counts packets the window held back, and those that left with
        // a full pipe, after the first round: the initial window and an app-limited burst
        // leave at once and queue behind themselves whatever the path's rate. A lone control
        // frame does not count either: a tail probe leaves an eighth of an RTT after the
        // flight it follows and queues behind that flight at the bottleneck.
        let counts = (!record.rate.is_app_limited()
            || record.tx_in_flight >= self.bdp_multiple(1.0))
            && bytes >= DELAY_SAMPLE_MIN_BYTES;
        if self.state == BbrState::Startup && self.round_count > 1 && counts {
            self.count_queued_sample(now.saturating_duration_since(sent));
        }
        let batch = &mut self.batch;
        if batch.newest_sent.is_none_or(|newest| sent >= newest) {
            batch.newest_sent = Some(sent);
            batch.rtt = Some(now.saturating_duration_since(sent));
            batch.tx_in_flight = record.tx_in_flight;
            batch.lost_since_sent = self.lost.saturating_sub(record.lost);
            batch.prior_delivered = record.delivered;
            if sample.is_some() {
                batch.sample = sample;
            }
        }
    }

    /// An ack batch ended: quinn's bytes in flight and whether the sender was app-limited.
    pub(crate) fn on_end_acks(&mut self, now: Instant, in_flight: u64, app_limited: bool) {
        self.in_flight = in_flight;
        self.app_limited = app_limited;
        let batch = std::mem::take(&mut self.batch);
        // The draft's BBRUpdateRound.
        self.round_start =
            batch.newest_sent.is_some() && batch.prior_delivered >= self.next_round_delivered;
        if self.round_start {
            self.next_round_delivered = self.delivered;
            self.round_count = self.round_count.saturating_add(1);
            self.rounds_since_bw_probe = self.rounds_since_bw_probe.saturating_add(1);
        }
        let sample = batch.sample;
        if let Some(sample) = sample {
            self.bw_latest = self.bw_latest.max(sample.delivery_rate);
            self.inflight_latest = self.inflight_latest.max(sample.delivered);
            if sample.delivery_rate >= self.max_bw.get() || !sample.app_limited {
                self.max_bw.update(sample.delivery_rate);
            }
        }
        let app_limited_sample = sample.is_none_or(|s| s.app_limited);
        if self.round_start {
            self.end_loss_round();
        }
        self.update_ack_aggregation(now, batch.newly_acked);
        self.check_full_bw_reached(sample, app_limited_sample);
        self.check_startup_queue();
        self.check_startup_delay();
        self.check_startup_done();
        self.check_drain(now);
        self.update_probe_bw_cycle_phase(now, &batch, app_limited_sample);
        let probe_rtt_expired = self.update_min_rtt(now, batch.rtt);
        self.check_probe_rtt(now, batch.newly_acked, probe_rtt_expired);
        if self.round_start {
            // The draft's BBRAdvanceLatestDeliverySignals.
            if let Some(sample) = sample {
                self.bw_latest = sample.delivery_rate;
                self.inflight_latest = sample.delivered;
            }
        }
        self.bw = self.max_bw.get().min(self.bw_lo);
        self.set_pacing_rate();
        self.set_cwnd(batch.newly_acked);
    }

    /// quinn declared `lost_bytes` lost (the newest of them sent at `sent`);
    /// `persistent`: RFC 9002's persistent congestion.
    pub(crate) fn on_loss(&mut self, now: Instant, lost_bytes: u64, persistent: bool) {
        let tx_in_flight = self.in_flight;
        self.lost = self.lost.saturating_add(lost_bytes);
        self.lost_in_round = self.lost_in_round.saturating_add(lost_bytes);
        self.loss_events_in_round = self.loss_events_in_round.saturating_add(1);
        self.loss_in_round = true;
        self.in_flight = self.in_flight.saturating_sub(lost_bytes);
        if persistent {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
            self.cwnd = self.min_pipe_cwnd();
            return;
        }
        // What quinn no longer counts in flight must not be sent again at once on top.
        self.cwnd = self
            .cwnd
            .saturating_sub(lost_bytes)
            .max(self.min_pipe_cwnd());
        // The draft's BBRHandleLostPacket: the loss rate of what was in flight when the lost
        // data left, judged while a probe's samples count. quinn reports losses in batches
        // without per-packet records here, so what is in flight now stands for it.
        if !self.bw_probe_samples {
            return;
        }
        let lost = self.lost_in_round;
        if self.excess_loss(lost, tx_in_flight.saturating_add(lost_bytes)) {
            self.handle_inflight_too_high(now, tx_in_flight, self.app_limited);
        }
    }

    /// Whether `lost` of `sent` bytes is more loss than the model tolerates. The draft's test
    /// is a loss rate above the threshold (2%). Ours asks for the threshold above the path's
    /// background loss, and for more lost packets than the background explains by chance
    /// (three standard deviations of a binomial count): a round of a hundred packets on a path
    /// that loses 2% at random loses five or more one time in twenty, which the rate alone
    /// would take for congestion, cutting the model by 30% several times per probing cycle.
    fn excess_loss(&self, lost: u64, sent: u64) -> bool {
        let threshold = self.config.loss_threshold;
        if self.config.draft_loss_response {
            return lost as f64 > sent as f64 * threshold;
        }
        let mss = self.mss as f64;
        let (lost, sent) = (lost as f64 / mss, sent as f64 / mss);
        let background = self.background_loss;
        let expected = sent * background;
        let deviation = (sent * background * (1.0 - background)).sqrt();
        lost > sent * (threshold + background) && lost > expected + 3.0 * deviation
    }

    fn handle_inflight_too_high(&mut self, now: Instant, tx_in_flight: u64, app_limited: bool) {
        self.bw_probe_samples = false;
        if !app_limited {
            let target = to_bytes(self.target_inflight() as f64 * BETA);
            self.inflight_hi = tx_in_flight.max(target).max(self.min_pipe_cwnd());
        }
        if self.state == BbrState::ProbeBwUp {
            self.start_probe_bw_down(now);
        }
    }

    /// A round ended: judge its losses, learn the background loss, adapt the lower bounds.
    fn end_loss_round(&mut self) {
        let sent = self.delivered_in_round.saturating_add(self.lost_in_round);
        let rate = if sent == 0 {
            0.0
        } else {
            self.lost_in_round as f64 / sent as f64
        };
        let excess = self.excess_loss(self.lost_in_round, sent);
        let congested = if self.config.draft_loss_response {
            self.loss_in_round
        } else {
            self.loss_in_round && excess
        };
        // Startup's exit on loss (the draft's BBRCheckStartupHighLoss).
        if self.state == BbrState::Startup
            && !self.filled_pipe
            && excess
            && self.loss_events_in_round >= STARTUP_FULL_LOSS_COUNT
        {
            self.filled_pipe = true;
            self.inflight_hi = self.bdp_multiple(1.0).max(self.inflight_latest);
        }
        // Learn the background loss only in rounds that do not probe: losses while probing
        // are the probe's own.
        if !self.config.draft_loss_response && !self.state.is_probing_bw() && sent > 0 {
            let learned =
                self.background_loss + BACKGROUND_LOSS_WEIGHT * (rate - self.background_loss);
            self.background_loss = learned.clamp(0.0, BACKGROUND_LOSS_CAP);
        }
        // The draft's BBRAdaptLowerBoundsFromCongestion.
        if !self.state.is_probing_bw() && congested {
            if self.bw_lo.is_infinite() {
                self.bw_lo = self.max_bw.get();
            }
            if self.inflight_lo == u64::MAX {
                self.inflight_lo = self.cwnd;
            }
            self.bw_lo = self.bw_latest.max(BETA * self.bw_lo);
            self.inflight_lo = self
                .inflight_latest
                .max(to_bytes(BETA * self.inflight_lo as f64));
        }
        self.loss_in_round = false;
        self.lost_in_round = 0;
        self.delivered_in_round = 0;
        self.loss_events_in_round = 0;
    }

    fn update_ack_aggregation(&mut self, now: Instant, newly_acked: u64) {
        let start = *self.extra_acked_interval_start.get_or_insert(now);
        let interval = now.saturating_duration_since(start).as_secs_f64();
        let mut expected = to_bytes(self.bw * interval);
        if self.extra_acked_delivered <= expected {
            self.extra_acked_delivered = 0;
            self.extra_acked_interval_start = Some(now);
            expected = 0;
        }
        self.extra_acked_delivered = self.extra_acked_delivered.saturating_add(newly_acked);
        let extra = self
            .extra_acked_delivered
            .saturating_sub(expected)
            .min(self.cwnd);
        let slot = (self.round_count % EXTRA_ACKED_ROUNDS as u64) as usize;
        if self.round_start {
            self.extra_acked[slot] = 0;
        }
        self.extra_acked[slot] = self.extra_acked[slot].max(extra);
    }

    fn extra_acked(&self) -> u64 {
        self.extra_acked.iter().copied().max().unwrap_or(0)
    }

    fn check_full_bw_reached(&mut self, sample: Option<RateSample>, app_limited: bool) {
        if self.filled_pipe || !self.round_start || app_limited || sample.is_none() {
            return;
        }
        let max_bw = self.max_bw.get();
        if max_bw >= self.full_bw * FULL_BW_GROWTH {
            self.full_bw = max_bw;
            self.full_bw_count = 0;
            return;
        }
        self.full_bw_count += 1;
        if self.full_bw_count >= FULL_BW_ROUNDS {
            self.filled_pipe = true;
        }
    }

    /// Ends Startup on a standing queue, as QUICHE's BBRv2 does (`CheckPersistentQueue`,
    /// `max_startup_queue_rounds`): the bandwidth plateau counts only rounds that were not
    /// app-limited, so a path the scheduler keeps short of data (most paths of a page, a path
    /// that rejoins beside a faster one) never leaves Startup on it. Its window then stays
    /// where Startup grew it (two initial windows), several BDPs on a slow path, and the queue
    /// that builds holds every byte the path carries. A round whose smallest flight is still
    /// 1.75 BDPs did fill the pipe, app-limited or not.
    fn check_startup_queue(&mut self) {
        self.min_in_flight_in_round = self.min_in_flight_in_round.min(self.in_flight);
        if self.filled_pipe || !self.round_start {
            return;
        }
        let min_in_flight = std::mem::replace(&mut self.min_in_flight_in_round, u64::MAX);
        let max_bw = self.max_bw.get();
        if max_bw >= self.queue_check_bw * FULL_BW_GROWTH {
            self.queue_check_bw = max_bw;
            self.queue_rounds = 0;
            return;
        }
        let bdp = self.bdp_multiple(1.0);
        let target = self
            .bdp_multiple(STARTUP_QUEUE_GAIN)
            .max(bdp.saturating_add(2 * self.mss));
        if min_in_flight < target {
            self.queue_rounds = 0;
            return;
        }
        self.queue_rounds += 1;
        if self.queue_rounds >= STARTUP_QUEUE_ROUNDS {
            self.filled_pipe = true;
        }
    }

    /// Counts an RTT sample towards Startup's delay check: one more in a row above the minimum
    /// by HyStart++'s margin (RFC 9406: an eighth of the minimum, within 4-16 ms), or none.
    fn count_queued_sample(&mut self, rtt: Duration) {
        let Some(min_rtt) = self.min_rtt else {
            return;
        };
        let margin = (min_rtt / STARTUP_DELAY_DIVISOR).clamp(STARTUP_DELAY_MIN, STARTUP_DELAY_MAX);
        self.queued_samples = if rtt >= min_rtt.saturating_add(margin) {
            self.queued_samples.saturating_add(1)
        } else {
            0
        };
    }

    /// Ends Startup when 8 RTT samples in a row found a queue (`count_queued_sample`): the
    /// pipe is full. The bandwidth plateau says so a round later, and the flight doubles in
    /// that round: a path that rejoined with a backlog overflowed its queue of one BDP there
    /// (49-78 datagrams dropped on the testbed), each drop a hole that held the stream up for a
    /// round trip of the full queue. Judged on the samples in a row rather than a round's
    /// first ones (HyStart++'s test), because the first acks of the round in which the queue
    /// builds come from packets sent before it did.
    fn check_startup_delay(&mut self) {
        if self.config.startup_delay_exit
            && self.state == BbrState::Startup
            && !self.filled_pipe
            && self.queued_samples >= STARTUP_DELAY_SAMPLES
        {
            self.filled_pipe = true;
        }
    }

    fn check_startup_done(&mut self) {
        if self.state == BbrState::Startup && self.filled_pipe {
            self.state = BbrState::Drain;
            self.pacing_gain = DRAIN_PACING_GAIN;
            self.cwnd_gain = STARTUP_CWND_GAIN;
        }
    }

    fn check_drain(&mut self, now: Instant) {
        if self.state == BbrState::Drain && self.in_flight <= self.inflight(1.0) {
            self.start_probe_bw_down(now);
        }
    }

    fn update_probe_bw_cycle_phase(&mut self, now: Instant, batch: &AckBatch, app_limited: bool) {
        if !self.filled_pipe {
            return;
        }
        self.adapt_upper_bounds(now, batch, app_limited);
        match self.state {
            BbrState::ProbeBwDown => {
                if self.check_time_to_probe_bw(now) {
                    return;
                }
                if self.check_time_to_cruise() {
                    self.start_probe_bw_cruise();
                }
            }
            BbrState::ProbeBwCruise => {
                self.check_time_to_probe_bw(now);
            }
            BbrState::ProbeBwRefill => {
                if self.round_start {
                    self.bw_probe_samples = true;
                    self.start_probe_bw_up(now);
                }
            }
            BbrState::ProbeBwUp => {
                // The draft's test is a flight above 1.25 BDP. On quinn the window is the
                // pacing rate's flight (see `window`), 1.25 BDP in this phase, so a flight that
                // reached the window (within a packet) has reached that too.
                let min_rtt = self.min_rtt.unwrap_or_default();
                let probed = self.in_flight > self.inflight(1.25)
                    || self.probe_up_flight.saturating_add(self.mss) > self.window();
                if self.has_elapsed_in_phase(now, min_rtt) && probed {
                    self.start_probe_bw_down(now);
                }
            }
            BbrState::Startup | BbrState::Drain | BbrState::ProbeRtt => {}
        }
    }

    /// The draft's BBRAdaptUpperBounds.
    fn adapt_upper_bounds(&mut self, now: Instant, batch: &AckBatch, app_limited: bool) {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.state.is_probe_bw() && !app_limited {
                self.max_bw.advance();
            }
        }
        let lost = batch.lost_since_sent;
        if self.bw_probe_samples && self.excess_loss(lost, batch.tx_in_flight) {
            self.handle_inflight_too_high(now, batch.tx_in_flight, app_limited);
            return;
        }
        if self.inflight_hi == u64::MAX {
            return;
        }
        if batch.tx_in_flight > self.inflight_hi {
            self.inflight_hi = batch.tx_in_flight;
        }
        if self.state == BbrState::ProbeBwUp {
            self.probe_inflight_hi_upward(batch.newly_acked);
        }
    }

    fn probe_inflight_hi_upward(&mut self, newly_acked: u64) {
        if self.cwnd < self.inflight_hi {
            return;
        }
        self.bw_probe_up_acks = self.bw_probe_up_acks.saturating_add(newly_acked);
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self
                .inflight_hi
                .saturating_add(delta.saturating_mul(self.mss));
        }
        if self.round_start {
            self.raise_inflight_hi_slope();
        }
    }

    fn raise_inflight_hi_slope(&mut self) {
        let growth_this_round = self.mss << self.bw_probe_up_rounds.min(30);
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (self.cwnd / growth_this_round.max(1)).max(1);
    }

    fn check_time_to_probe_bw(&mut self, now: Instant) -> bool {
        if self.has_elapsed_in_phase(now, self.bw_probe_wait) || self.reno_coexistence_probe_time()
        {
            self.start_probe_bw_refill();
            return true;
        }
        false
    }

    /// Probe at least as often as Reno would grow through the same window (one packet per
    /// round), at most every 63 rounds.
    fn reno_coexistence_probe_time(&self) -> bool {
        let reno_rounds = (self.target_inflight() / self.mss).min(63);
        self.rounds_since_bw_probe >= reno_rounds
    }

    fn check_time_to_cruise(&self) -> bool {
        if self.in_flight > self.inflight_with_headroom() {
            return false;
        }
        self.in_flight <= self.inflight(1.0)
    }

    fn has_elapsed_in_phase(&self, now: Instant, interval: Duration) -> bool {
        self.cycle_stamp.is_some_and(|stamp| now > stamp + interval)
    }

    fn start_round(&mut self) {
        self.next_round_delivered = self.delivered;
    }

    fn start_probe_bw_down(&mut self, now: Instant) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = u64::MAX;
        // The draft's BBRPickProbeWait: 0-1 rounds and 2-3 s, random, so flows desynchronise.
        let random = self.next_random();
        self.rounds_since_bw_probe = random % 2;
        self.bw_probe_wait = Duration::from_secs(2) + Duration::from_millis(random % 1000);
        self.cycle_stamp = Some(now);
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round();
        self.enter(BbrState::ProbeBwDown, 0.9, DEFAULT_CWND_GAIN);
    }

    fn start_probe_bw_cruise(&mut self) {
        self.enter(BbrState::ProbeBwCruise, 1.0, DEFAULT_CWND_GAIN);
    }

    fn start_probe_bw_refill(&mut self) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = 0;
        self.bw_probe_up_acks = 0;
        self.ack_phase = AckPhase::Refilling;
        self.start_round();
        self.enter(BbrState::ProbeBwRefill, 1.0, DEFAULT_CWND_GAIN);
    }

    fn start_probe_bw_up(&mut self, now: Instant) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round();
        self.full_bw = self.max_bw.get();
        self.full_bw_count = 0;
        self.probe_up_flight = 0;
        self.cycle_stamp = Some(now);
        self.enter(BbrState::ProbeBwUp, 1.25, PROBE_UP_CWND_GAIN);
        self.raise_inflight_hi_slope();
    }

    fn enter(&mut self, state: BbrState, pacing_gain: f64, cwnd_gain: f64) {
        self.state = state;
        self.pacing_gain = pacing_gain;
        self.cwnd_gain = cwnd_gain;
    }

    fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.bw_latest = 0.0;
        self.inflight_latest = 0;
    }

    fn reset_lower_bounds(&mut self) {
        self.bw_lo = f64::INFINITY;
        self.inflight_lo = u64::MAX;
    }

    /// Whether some RTT sample after the one that set `probe_rtt_min_stamp` came within
    /// [`SIMILAR_MIN_RTT`] of the ProbeRTT minimum.
    fn interval_showed_min_rtt(&self) -> bool {
        match (self.interval_min_rtt, self.probe_rtt_min_delay) {
            (Some(seen), Some(min)) => seen.as_secs_f64() <= min.as_secs_f64() * SIMILAR_MIN_RTT,
            _ => false,
        }
    }

    /// Returns whether the ProbeRTT interval had expired (the draft's `probe_rtt_expired`,
    /// taken before this sample restarts it), and not been stood in for by its samples.
    fn update_min_rtt(&mut self, now: Instant, rtt: Option<Duration>) -> bool {
        let mut probe_rtt_expired = self
            .probe_rtt_min_stamp
            .is_some_and(|stamp| now > stamp + PROBE_RTT_INTERVAL);
        if probe_rtt_expired && self.interval_showed_min_rtt() {
            // Departure from the draft (QUICHE's `probe_rtt_skipped_if_similar_rtt`): the
            // interval already measured the path without a queue, so draining the flight to
            // half a BDP for 200 ms would learn nothing; the minimum stays, with a new stamp.
            self.probe_rtt_min_stamp = Some(now);
            self.interval_min_rtt = None;
            probe_rtt_expired = false;
        }
        if let Some(rtt) = rtt {
            if self.probe_rtt_min_delay.is_none_or(|min| rtt < min) || probe_rtt_expired {
                self.probe_rtt_min_delay = Some(rtt);
                self.probe_rtt_min_stamp = Some(now);
                self.interval_min_rtt = None;
            } else {
                self.interval_min_rtt = Some(self.interval_min_rtt.map_or(rtt, |m| m.min(rtt)));
            }
        }
        let min_rtt_expired = self
            .min_rtt_stamp
            .is_some_and(|stamp| now > stamp + MIN_RTT_FILTER);
        if let Some(delay) = self.probe_rtt_min_delay {
            if self.min_rtt.is_none_or(|min| delay < min) || min_rtt_expired {
                self.min_rtt = Some(delay);
                self.min_rtt_stamp = self.probe_rtt_min_stamp;
            }
        }
        probe_rtt_expired
    }

    fn check_probe_rtt(&mut self, now: Instant, newly_acked: u64, probe_rtt_expired: bool) {
        if self.state != BbrState::ProbeRtt && probe_rtt_expired && !self.idle_restart {
            self.prior_cwnd = self.prior_cwnd.max(self.cwnd);
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round();
            self.enter(BbrState::ProbeRtt, 1.0, PROBE_RTT_CWND_GAIN);
        }
        if self.state == BbrState::ProbeRtt {
            self.handle_probe_rtt(now);
        }
        if newly_acked > 0 {
            self.idle_restart = false;
        }
    }

    fn handle_probe_rtt(&mut self, now: Instant) {
        match self.probe_rtt_done_stamp {
            None if self.in_flight <= self.probe_rtt_cwnd() => {
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_DURATION);
                self.probe_rtt_round_done = false;
                self.start_round();
            }
            None => {}
            Some(_) => {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(now);
                }
            }
        }
    }

    fn check_probe_rtt_done(&mut self, now: Instant) {
        if self.probe_rtt_done_stamp.is_some_and(|done| now > done) {
            self.probe_rtt_min_stamp = Some(now);
            self.cwnd = self.cwnd.max(self.prior_cwnd);
            self.prior_cwnd = 0;
            self.reset_lower_bounds();
            if self.filled_pipe {
                self.start_probe_bw_down(now);
                self.start_probe_bw_cruise();
            } else {
                self.enter(BbrState::Startup, STARTUP_PACING_GAIN, STARTUP_CWND_GAIN);
            }
        }
    }

    fn set_pacing_rate_with_gain(&mut self, gain: f64) {
        // No margin below the estimate, unlike the draft: the window holds the flight (see
        // the module documentation).
        let rate = gain * self.bw / (1.0 - self.random_loss());
        if rate > 0.0 && (self.filled_pipe || rate > self.pacing_rate) {
            self.pacing_rate = rate;
        }
    }

    /// The share of what is sent that the path loses at random. `bw` counts delivered bytes
    /// only, so a path that drops that share before its bottleneck fills it only when paced
    /// that much faster than `bw`, and one that drops it after shows a `bw` that much below
    /// the bottleneck: either way the pacing rate makes up for it. The draft's own loss
    /// response learns no background loss and makes up for none.
    fn random_loss(&self) -> f64 {
        if self.config.draft_loss_response {
            0.0
        } else {
            self.background_loss
        }
    }

    fn set_pacing_rate(&mut self) {
        self.set_pacing_rate_with_gain(self.pacing_gain);
    }

    fn set_cwnd(&mut self, newly_acked: u64) {
        let max_inflight =
            self.quantization_budget(self.bdp_multiple(self.cwnd_gain) + self.extra_acked());
        if self.filled_pipe {
            self.cwnd = self.cwnd.saturating_add(newly_acked).min(max_inflight);
        } else if self.cwnd < max_inflight || self.delivered < self.config.initial_window {
            self.cwnd = self.cwnd.saturating_add(newly_acked);
        }
        self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        if self.state == BbrState::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
        // The draft's BBRBoundCwndForModel.
        let mut cap = match self.state {
            BbrState::ProbeBwCruise | BbrState::ProbeRtt => self.inflight_with_headroom(),
            state if state.is_probe_bw() => self.inflight_hi,
            _ => u64::MAX,
        };
        cap = cap.min(self.inflight_lo).max(self.min_pipe_cwnd());
        self.cwnd = self.cwnd.min(cap);
    }

    fn inflight_with_headroom(&self) -> u64 {
        if self.inflight_hi == u64::MAX {
            return u64::MAX;
        }
        let headroom = to_bytes(HEADROOM * self.inflight_hi as f64).max(self.mss);
        self.inflight_hi
            .saturating_sub(headroom)
            .max(self.min_pipe_cwnd())
    }

    fn bdp_multiple(&self, gain: f64) -> u64 {
        match self.min_rtt {
            Some(min_rtt) if self.bw > 0.0 => to_bytes(gain * self.bw * min_rtt.as_secs_f64()),
            _ => self.config.initial_window,
        }
    }

    fn quantization_budget(&self, inflight: u64) -> u64 {
        let mut inflight = inflight.max(self.min_pipe_cwnd());
        if self.state == BbrState::ProbeBwUp {
            inflight = inflight.saturating_add(2 * self.mss);
        }
        inflight
    }

    fn inflight(&self, gain: f64) -> u64 {
        self.quantization_budget(self.bdp_multiple(gain))
    }

    fn target_inflight(&self) -> u64 {
        self.bdp_multiple(1.0).min(self.cwnd)
    }

    fn probe_rtt_cwnd(&self) -> u64 {
        self.bdp_multiple(PROBE_RTT_CWND_GAIN)
            .max(self.min_pipe_cwnd())
    }

    fn min_pipe_cwnd(&self) -> u64 {
        MIN_PIPE_PACKETS * self.mss
    }

    fn next_random(&mut self) -> u64 {
        self.random ^= self.random << 13;
        self.random ^= self.random >> 7;
        self.random ^= self.random << 17;
        self.random
    }
}

/// Bytes from a non-negative float, saturating (NaN counts as 0).
fn to_bytes(value: f64) -> u64 {
    if value.is_nan() || value <= 0.0 {
        0
    } else if value >= u64::MAX as f64 {
        u64::MAX
    } else {
        value as u64
    }
}

/// What the tests look at.
#[cfg(test)]
impl BbrModel {
    pub(crate) fn state(&self) -> BbrState {
        self.state
    }

    pub(crate) fn cwnd(&self) -> u64 {
        self.cwnd
    }

    /// The bandwidth the model sends by: `min(max_bw, bw_lo)`, bytes per second.
    pub(crate) fn bw(&self) -> f64 {
        self.bw
    }

    pub(crate) fn max_bw(&self) -> f64 {
        self.max_bw.get()
    }

    pub(crate) fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    pub(crate) fn inflight_hi(&self) -> u64 {
        self.inflight_hi
    }

    pub(crate) fn background_loss(&self) -> f64 {
        self.background_loss
    }

    pub(crate) fn in_flight(&self) -> u64 {
        self.in_flight
    }

    pub(crate) fn extra_acked_now(&self) -> u64 {
        self.extra_acked()
    }
}
