//! The simulator's knobs: per-path link parameters and run-wide settings.
//!
//! Knob names follow the s2n-quic and quinn test harnesses (`set_delay`, `set_drop_rate`,
//! `set_rate`, `set_queue`) so the simulator and the netns testbed read alike.

use std::time::Duration;

use super::scenario::{default_queue_bytes, PathSpec, Scenario};
use super::SimError;

/// One emulated path: a drop-tail bottleneck of `rate` bit/s with a one-way `delay`, losing
/// data packets at random with probability `drop_rate`. Acknowledgements come back after the
/// same one-way delay and are never lost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathConfig {
    rate_bps: u64,
    delay: Duration,
    drop_rate: f64,
    queue: Option<u64>,
}

impl PathConfig {
    /// A lossless path with the default queue.
    pub fn new(rate_bps: u64, delay: Duration) -> Self {
        Self {
            rate_bps,
            delay,
            drop_rate: 0.0,
            queue: None,
        }
    }

    /// Sets the bottleneck rate in bits per second (must be positive).
    pub fn set_rate(&mut self, rate_bps: u64) -> &mut Self {
        self.rate_bps = rate_bps;
        self
    }

    /// Sets the one-way delay (the same in both directions).
    pub fn set_delay(&mut self, delay: Duration) -> &mut Self {
        self.delay = delay;
        self
    }

    /// Sets the probability that a data packet is lost at random.
    ///
    /// # Default
    /// 0.0.
    pub fn set_drop_rate(&mut self, drop_rate: f64) -> &mut Self {
        self.drop_rate = drop_rate;
        self
    }

    /// Sets the drop-tail queue at the bottleneck in bytes (the packet in service included).
    ///
    /// # Default
    /// One bandwidth-delay product, at least 64 kB
    /// ([`default_queue_bytes`](super::default_queue_bytes)).
    pub fn set_queue(&mut self, bytes: u64) -> &mut Self {
        self.queue = Some(bytes);
        self
    }

    /// The rate in bits per second.
    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// The one-way delay.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// The round-trip propagation delay.
    pub fn rtt(&self) -> Duration {
        self.delay.saturating_mul(2)
    }

    /// The random loss probability.
    pub fn drop_rate(&self) -> f64 {
        self.drop_rate
    }

    /// The queue in bytes, the default resolved.
    pub fn queue_bytes(&self) -> u64 {
        self.queue
            .unwrap_or_else(|| default_queue_bytes(self.rate_bps, self.delay))
    }

    /// The rate in bytes per second.
    pub fn bytes_per_sec(&self) -> f64 {
        self.rate_bps as f64 / 8.0
    }

    pub(super) fn validate(&self, index: usize, mtu: u64) -> Result<(), SimError> {
        let reason = if self.rate_bps == 0 {
            "the rate must be positive".to_owned()
        } else if !(0.0..=1.0).contains(&self.drop_rate) {
            format!("drop rate {} is not within 0..=1", self.drop_rate)
        } else if self.delay > Duration::from_secs(60) {
            "a one-way delay above 60 s is not a path".to_owned()
        } else if self.queue_bytes() < mtu {
            format!(
                "a queue of {} bytes cannot hold one {mtu}-byte packet",
                self.queue_bytes()
            )
        } else {
            return Ok(());
        };
        Err(SimError::InvalidPath { index, reason })
    }
}

impl From<&PathSpec> for PathConfig {
    fn from(spec: &PathSpec) -> Self {
        *Self::new(spec.rate_bps, spec.one_way_delay).set_drop_rate(spec.drop_rate)
    }
}

/// The congestion controller every simulated path runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Congestion {
    /// NewReno as in RFC 9002 section 7 (quinn's default until 0.11 switched to Cubic).
    #[default]
    NewReno,
    /// Cubic as in RFC 9438 (quinn 0.11's default).
    Cubic,
}

/// Everything a simulation run needs besides the scheduler and the page.
#[derive(Debug, Clone, PartialEq)]
pub struct SimConfig {
    paths: Vec<PathConfig>,
    seed: u64,
    mtu: u64,
    congestion: Congestion,
    pacing: bool,
    min_rto: Duration,
    time_limit: Duration,
    step_limit: u64,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            paths: Vec::new(),
            seed: 1,
            mtu: 1200,
            congestion: Congestion::NewReno,
            pacing: true,
            min_rto: Duration::from_millis(25),
            time_limit: Duration::from_secs(600),
            step_limit: 10_000_000,
        }
    }
}

impl SimConfig {
    /// A configuration without paths and every other knob at its default.
    pub fn new() -> Self {
        Self::default()
    }

    /// The paths of a scenario preset, every other knob at its default.
    pub fn from_scenario(scenario: &Scenario) -> Self {
        let mut config = Self::new();
        for spec in scenario.paths {
            config.add_path(spec.into());
        }
        config
    }

    /// Adds a path; paths are numbered from 0 in the order they are added.
    pub fn add_path(&mut self, path: PathConfig) -> &mut Self {
        self.paths.push(path);
        self
    }

    /// A path to adjust with its `set_*` knobs.
    pub fn path_mut(&mut self, index: usize) -> Option<&mut PathConfig> {
        self.paths.get_mut(index)
    }

    /// Sets the seed of every random choice (per-path loss).
    ///
    /// # Default
    /// 1.
    pub fn set_seed(&mut self, seed: u64) -> &mut Self {
        self.seed = seed;
        self
    }

    /// Sets the payload bytes per packet (no header overhead is modelled).
    ///
    /// # Default
    /// 1200, QUIC's minimum datagram size and quinn's initial MTU.
    pub fn set_mtu(&mut self, mtu: u64) -> &mut Self {
        self.mtu = mtu;
        self
    }

    /// Sets the congestion controller of every path.
    ///
    /// # Default
    /// [`Congestion::NewReno`].
    pub fn set_congestion(&mut self, congestion: Congestion) -> &mut Self {
        self.congestion = congestion;
        self
    }

    /// Turns pacing on or off on every path.
    ///
    /// Paced, a path spreads its window over a round trip as quinn 0.11 does: a token bucket
    /// filled at 1.25 windows per smoothed RTT and holding window x 2 ms / srtt (at least 10,
    /// at most 256 packets); a packet leaves only when the bucket holds an MTU, and a path held
    /// back waits until the bucket is full again (`src/sim/pacing.rs` cites quinn's rules).
    /// Unpaced, a path sends all its window admits at once, as one burst, which overflows
    /// drop-tail queues in slow start more than the real transport does.
    ///
    /// # Default
    /// On, as in quinn.
    pub fn set_pacing(&mut self, pacing: bool) -> &mut Self {
        self.pacing = pacing;
        self
    }

    /// Sets the floor of the retransmission timeout.
    ///
    /// # Default
    /// 25 ms. RFC 6298's 1 s floor (and Linux's 200 ms) predate tail-loss probes; quinn's probe
    /// timeout is srtt + max(4 rttvar, 1 ms) + max_ack_delay (25 ms by default). The simulated
    /// receiver acks at once, so the estimate crate's RFC 6298 RTO floored at that ack delay
    /// fires about when quinn's probe would, on a steady path.
    pub fn set_min_rto(&mut self, min_rto: Duration) -> &mut Self {
        self.min_rto = min_rto;
        self
    }

    /// Sets the virtual time after which a run gives up with [`SimError::TimeLimit`].
    ///
    /// # Default
    /// 10 minutes.
    pub fn set_time_limit(&mut self, limit: Duration) -> &mut Self {
        self.time_limit = limit;
        self
    }

    /// Sets the number of events after which a run gives up with [`SimError::StepLimit`].
    ///
    /// # Default
    /// 10 million.
    pub fn set_step_limit(&mut self, limit: u64) -> &mut Self {
        self.step_limit = limit;
        self
    }

    /// The paths.
    pub fn paths(&self) -> &[PathConfig] {
        &self.paths
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Payload bytes per packet.
    pub fn mtu(&self) -> u64 {
        self.mtu
    }

    /// The congestion controller.
    pub fn congestion(&self) -> Congestion {
        self.congestion
    }

    /// Whether paths are paced.
    pub fn pacing(&self) -> bool {
        self.pacing
    }

    /// The retransmission-timeout floor.
    pub fn min_rto(&self) -> Duration {
        self.min_rto
    }

    /// The virtual time limit.
    pub fn time_limit(&self) -> Duration {
        self.time_limit
    }

    /// The event limit.
    pub fn step_limit(&self) -> u64 {
        self.step_limit
    }

    /// Checks every knob; called before a run.
    pub fn validate(&self) -> Result<(), SimError> {
        if self.paths.is_empty() {
            return Err(SimError::InvalidConfig(
                "at least one path is needed".into(),
            ));
        }
        if self.paths.len() > crate::MAX_PATHS {
            return Err(SimError::InvalidConfig(format!(
                "at most {} paths",
                crate::MAX_PATHS
            )));
        }
        if !(1..=65_527).contains(&self.mtu) {
            return Err(SimError::InvalidConfig(format!(
                "mtu {} is not within 1..=65527",
                self.mtu
            )));
        }
        if self.min_rto > Duration::from_secs(60) {
            return Err(SimError::InvalidConfig(
                "min_rto must not exceed the 60 s maximum RTO".into(),
            ));
        }
        for (index, path) in self.paths.iter().enumerate() {
            path.validate(index, self.mtu)?;
        }
        Ok(())
    }
}
