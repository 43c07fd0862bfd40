//! The server's sender on one path: packet numbers, bytes in flight, loss detection, the
//! congestion window and the estimators the scheduler reads.
//!
//! Each path is its own QUIC connection in mpquic (see DESIGN.md), so loss recovery is per
//! path: a lost packet's frames are re-sent on the same path, ahead of new data.
//!
//! Loss detection follows RFC 9002 section 6, as quinn does:
//! - a packet is lost when a packet sent at least three later is acknowledged
//!   ("kPacketThreshold [...] RECOMMENDED value [...] 3"), or when a later one was acknowledged
//!   and it is older than 9/8 of the RTT ("kTimeThreshold"), for which a loss timer is armed;
//! - otherwise a probe timeout, based on the estimate crate's RFC 6298 RTO (srtt + max(G,
//!   4 rttvar), floored at [`SimConfig::set_min_rto`]), runs from the last packet sent and
//!   doubles on each expiry without an ack in between (RFC 9002 section 6.2.1, RFC 6298 (5.5)).
//!   It declares nothing lost: it lets up to two probe packets leave beyond the window,
//!   carrying copies of the oldest packets in flight, and their acknowledgement a round trip
//!   later lets the thresholds find whatever was really lost. This is how a tail loss, or a
//!   window full of lost packets, is recovered without spurious re-sends.
//!
//! Persistent congestion (RFC 9002 section 7.6) is not modelled: the window halves at most
//! once per round trip and never collapses to the minimum.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use mpquic_estimate::{
    BandwidthConfig, BandwidthEstimator, OneWayDelay, RttConfig, RttEstimator, SentPacketState,
};

use super::congestion::Controller;
use super::link::Link;
use super::pacing::Pacer;
use super::{PathConfig, PathStats, SimConfig, SimError};
use crate::{Bandwidth, PathId, PathSnapshot, PathStatus};

/// RFC 9002 section 6.1.1: "kPacketThreshold".
const PACKET_THRESHOLD: u64 = 3;
/// RFC 9002 section 6.1.2: "kTimeThreshold [...] 9/8".
const TIME_THRESHOLD: (u32, u32) = (9, 8);
/// RFC 9002 section 6.1.2: "kGranularity [...] 1 millisecond".
const GRANULARITY: Duration = Duration::from_millis(1);
/// Doublings of the probe timeout before it stops growing.
const MAX_BACKOFF: u32 = 6;
/// RFC 9002 section 6.2.4: "An endpoint MAY send up to two full-sized datagrams containing
/// ack-eliciting packets to avoid an expensive consecutive PTO expiration due to a single lost
/// datagram".
const PROBE_PACKETS: u64 = 2;

#[derive(Debug, Clone)]
struct SentPacket {
    sent_at: Duration,
    bytes: u64,
    frames: Vec<usize>,
    rate: SentPacketState,
}

/// What an acknowledgement or a timeout revealed.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    /// Frames now acknowledged (possibly again, if a late ack follows a declared loss).
    pub(super) acked: Vec<usize>,
    /// Frames of packets declared lost, to be re-sent on this path.
    pub(super) lost: Vec<usize>,
}

#[derive(Debug)]
pub(super) struct PathSender {
    pub(super) id: PathId,
    pub(super) link: Link,
    pub(super) delay: Duration,
    cc: Controller,
    /// The token bucket, when the run paces.
    pacer: Option<Pacer>,
    rtt: RttEstimator,
    owd: OneWayDelay,
    bandwidth: BandwidthEstimator,
    prior_bandwidth: Bandwidth,
    next_packet: u64,
    sent: BTreeMap<u64, SentPacket>,
    /// Frames of packets declared lost, kept to recognise a late (spurious-loss) ack.
    declared_lost: BTreeMap<u64, Vec<usize>>,
    in_flight: u64,
    largest_acked: Option<u64>,
    latest_rtt: Duration,
    /// When the last packet left: the probe timeout runs from here.
    last_sent: Duration,
    backoff: u32,
    /// The last send round ended with window room and nothing to send.
    pub(super) app_limited: bool,
    /// Packets the next send round may send beyond the window, after a timeout: RFC 9002
    /// section 7.5, "Probe packets MUST NOT be blocked by the congestion controller."
    pub(super) probes: u64,
    /// Frames the probes carry first: copies of the oldest packets in flight.
    pub(super) probe_frames: Vec<usize>,
    /// Frames to re-send here before any new data.
    pub(super) retransmit: VecDeque<usize>,
    /// Estimates or window changed since the scheduler last heard about this path.
    pub(super) dirty: bool,
    /// The deadline of the armed timer and its generation (stale timer events are ignored).
    pub(super) timer: Option<Duration>,
    pub(super) timer_generation: u64,
    /// The pending pacing wake-up (its event is ignored if this moved on).
    pub(super) pacing_timer: Option<Duration>,
    pub(super) stats: PathStats,
}

impl PathSender {
    pub(super) fn new(index: usize, path: &PathConfig, sim: &SimConfig) -> Result<Self, SimError> {
        let rtt = RttEstimator::new(RttConfig {
            initial_rtt: path.rtt().max(GRANULARITY),
            min_rto: sim.min_rto(),
            ..RttConfig::default()
        })?;
        let bandwidth = BandwidthEstimator::new(BandwidthConfig {
            initial_bandwidth: path.bytes_per_sec(),
            ..BandwidthConfig::default()
        })?;
        let prior_bandwidth = Bandwidth::from_bytes_per_sec(path.bytes_per_sec())?;
        let id = PathId(u32::try_from(index).unwrap_or(u32::MAX));
        let cc = Controller::new(sim.congestion(), sim.mtu());
        let pacer = sim
            .pacing()
            .then(|| Pacer::new(rtt.srtt(), cc.window(), sim.mtu()));
        Ok(Self {
            id,
            link: Link::new(path, sim.seed(), index as u64),
            delay: path.delay(),
            cc,
            pacer,
            rtt,
            owd: OneWayDelay::default(),
            bandwidth,
            prior_bandwidth,
            next_packet: 0,
            sent: BTreeMap::new(),
            declared_lost: BTreeMap::new(),
            in_flight: 0,
            largest_acked: None,
            latest_rtt: Duration::ZERO,
            last_sent: Duration::ZERO,
            backoff: 0,
            app_limited: true,
            probes: 0,
            probe_frames: Vec::new(),
            retransmit: VecDeque::new(),
            dirty: false,
            timer: None,
            timer_generation: 0,
            pacing_timer: None,
            stats: PathStats::default(),
        })
    }

    /// What the scheduler may know about the path now. The bandwidth is the estimator's, or the
    /// prior (the configured rate) should the estimate ever be unusable.
    pub(super) fn snapshot(&self) -> PathSnapshot {
        PathSnapshot {
            id: self.id,
            status: PathStatus::Available,
            srtt: self.rtt.srtt(),
            rttvar: self.rtt.rttvar(),
            min_rtt: self.rtt.min_rtt(),
            one_way_delay: self.owd.estimate(&self.rtt),
            bandwidth: Bandwidth::from_bytes_per_sec(self.bandwidth.bandwidth())
                .unwrap_or(self.prior_bandwidth),
            cwnd: self.cc.window(),
            bytes_in_flight: self.in_flight,
        }
    }

    /// Bytes that may leave now: what the congestion window admits, less if pacing holds them
    /// back; or the probes a timeout allows if more (probes are neither congestion controlled
    /// nor paced, RFC 9002 section 7.5 and quinn).
    pub(super) fn room(&mut self, now: Duration, mtu: u64) -> u64 {
        let window = self.cc.window();
        let mut room = window.saturating_sub(self.in_flight);
        if room >= mtu {
            if let Some(pacer) = &mut self.pacer {
                room = room.min(pacer.budget(now, self.rtt.srtt(), window, mtu));
            }
        }
        room.max(self.probes * mtu)
    }

    /// When pacing next lets a packet leave, if the window has room for one that pacing holds
    /// back now: the instant the bucket is full again (quinn's pacing timer).
    pub(super) fn pacing_wake(&mut self, now: Duration, mtu: u64) -> Option<Duration> {
        let window = self.cc.window();
        if window.saturating_sub(self.in_flight) < mtu {
            return None;
        }
        self.pacer.as_mut()?.wake(now, self.rtt.srtt(), window, mtu)
    }

    /// Records a packet leaving at `now` and returns its number.
    pub(super) fn on_sent(
        &mut self,
        now: Duration,
        epoch: Instant,
        bytes: u64,
        frames: Vec<usize>,
    ) -> u64 {
        let number = self.next_packet;
        self.next_packet += 1;
        let rate =
            self.bandwidth
                .on_packet_sent(epoch + now, bytes, self.in_flight, self.app_limited);
        self.in_flight += bytes;
        self.last_sent = now;
        if let Some(pacer) = &mut self.pacer {
            pacer.on_sent(bytes);
        }
        self.sent.insert(
            number,
            SentPacket {
                sent_at: now,
                bytes,
                frames,
                rate,
            },
        );
        self.stats.packets_sent += 1;
        self.stats.bytes_sent += bytes;
        number
    }

    /// The acknowledgement of packet `number` arrived at `now`.
    pub(super) fn on_ack(&mut self, now: Duration, epoch: Instant, number: u64) -> Outcome {
        let mut outcome = Outcome::default();
        let Some(packet) = self.sent.remove(&number) else {
            if let Some(frames) = self.declared_lost.remove(&number) {
                self.stats.spurious_losses += 1;
                outcome.acked = frames;
            }
            return outcome;
        };
        self.dirty = true;
        self.in_flight = self.in_flight.saturating_sub(packet.bytes);
        self.latest_rtt = now.saturating_sub(packet.sent_at);
        self.rtt.on_sample(self.latest_rtt);
        // The sample only feeds the windowed maximum; the estimator keeps it.
        let _ = self
            .bandwidth
            .on_packet_acked(epoch + now, &packet.rate, packet.bytes);
        self.cc.on_ack(
            now,
            packet.sent_at,
            packet.bytes,
            self.app_limited,
            self.rtt.srtt(),
        );
        self.largest_acked = Some(self.largest_acked.map_or(number, |l| l.max(number)));
        self.backoff = 0;
        outcome.acked = packet.frames;
        outcome.lost = self.detect_losses(now);
        outcome
    }

    fn loss_delay(&self) -> Duration {
        let rtt = self.rtt.srtt().max(self.latest_rtt);
        (rtt.saturating_mul(TIME_THRESHOLD.0) / TIME_THRESHOLD.1).max(GRANULARITY)
    }

    /// RFC 9002 section 6.1: declares lost every packet below the largest acknowledged that is
    /// three packets or 9/8 of an RTT behind it.
    fn detect_losses(&mut self, now: Duration) -> Vec<usize> {
        let Some(largest) = self.largest_acked else {
            return Vec::new();
        };
        let delay = self.loss_delay();
        let lost: Vec<u64> = self
            .sent
            .range(..largest)
            .filter(|(number, p)| {
                largest - **number >= PACKET_THRESHOLD || p.sent_at + delay <= now
            })
            .map(|(number, _)| *number)
            .collect();
        self.declare_lost(now, &lost)
    }

    fn declare_lost(&mut self, now: Duration, numbers: &[u64]) -> Vec<usize> {
        let mut frames = Vec::new();
        let mut newest_sent = None;
        for number in numbers {
            if let Some(packet) = self.sent.remove(number) {
                self.in_flight = self.in_flight.saturating_sub(packet.bytes);
                self.stats.packets_declared_lost += 1;
                newest_sent = Some(packet.sent_at);
                frames.extend_from_slice(&packet.frames);
                self.declared_lost.insert(*number, packet.frames);
            }
        }
        if let Some(sent_at) = newest_sent {
            self.dirty = true;
            self.cc.on_congestion_event(now, sent_at);
        }
        frames
    }

    fn probe_timeout(&self) -> Duration {
        self.rtt.rto().saturating_mul(1 << self.backoff)
    }

    /// RFC 9002 section 6.1.2: when the oldest packet below the largest acknowledged one
    /// crosses the time threshold.
    fn loss_time(&self) -> Option<Duration> {
        let largest = self.largest_acked?;
        let (_, oldest) = self.sent.range(..largest).next()?;
        Some(oldest.sent_at + self.loss_delay())
    }

    /// When the path next needs [`on_timer`](Self::on_timer): the loss timer if one is due,
    /// else the probe timeout after the last packet sent, while anything is in flight (RFC
    /// 9002 section 6.2.1: "the PTO timer MUST NOT be set if a timer is set for time threshold
    /// loss detection").
    pub(super) fn next_timer(&self) -> Option<Duration> {
        if let Some(loss) = self.loss_time() {
            return Some(loss);
        }
        if self.sent.is_empty() {
            return None;
        }
        Some(self.last_sent + self.probe_timeout())
    }

    /// The timer fired at `now`: returns the frames of packets lost by the time threshold;
    /// or, on a probe timeout, arms the probes and returns nothing.
    pub(super) fn on_timer(&mut self, now: Duration) -> Vec<usize> {
        if self.loss_time().is_some_and(|t| t <= now) {
            return self.detect_losses(now);
        }
        if self.sent.is_empty() || self.last_sent + self.probe_timeout() > now {
            return Vec::new();
        }
        self.stats.timeouts += 1;
        self.backoff = (self.backoff + 1).min(MAX_BACKOFF);
        self.probes = PROBE_PACKETS;
        self.probe_frames = self
            .sent
            .values()
            .take(PROBE_PACKETS as usize)
            .flat_map(|p| p.frames.iter().copied())
            .collect();
        self.dirty = true;
        Vec::new()
    }
}
