//! The values a scheduler is fed: stream metadata and path snapshots.
//!
//! Every value here is validated when it is built, so schedulers never see a NaN bandwidth, an
//! urgency of 9 or a path without a delay estimate.

use std::fmt;
use std::time::Duration;

use crate::SchedError;

/// Identifies a logical stream of a multipath connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamId(pub u64);

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "stream {}", self.0)
    }
}

/// Identifies a path of a multipath connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PathId(pub u32);

impl fmt::Display for PathId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "path {}", self.0)
    }
}

/// An RFC 9218 urgency: 0 is the most urgent, 7 the least.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Urgency(u8);

impl Urgency {
    /// The most urgent level (0).
    pub const HIGHEST: Self = Self(0);
    /// The least urgent level (7).
    pub const LOWEST: Self = Self(7);
    /// RFC 9218 section 4.1: "The default value is 3."
    pub const DEFAULT: Self = Self(3);
    /// The number of urgency levels, and so of PriorityBucket buckets.
    pub const LEVELS: usize = 8;

    /// An urgency from its numeric value; values above 7 are refused.
    pub fn new(value: u8) -> Result<Self, SchedError> {
        if value <= Self::LOWEST.0 {
            Ok(Self(value))
        } else {
            Err(SchedError::UrgencyOutOfRange(value))
        }
    }

    /// The numeric value, 0..=7.
    pub fn get(self) -> u8 {
        self.0
    }

    /// An HTTP/2-style weight (1..=256) for weighted round robin: each step up in urgency
    /// doubles the share, so urgency 0 gets 256 and urgency 7 gets 2.
    pub fn weight(self) -> u32 {
        1 << (8 - u32::from(self.0))
    }
}

impl Default for Urgency {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl fmt::Display for Urgency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "u={}", self.0)
    }
}

/// An RFC 9218 priority: the urgency, and whether the receiver uses the data as it arrives
/// (the incremental flag). `Default` is the RFC's, `u=3` and not incremental.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Priority {
    urgency: Urgency,
    incremental: bool,
}

impl Priority {
    /// RFC 9218's defaults: `u=3`, not incremental.
    pub const DEFAULT: Self = Self::new(Urgency::DEFAULT, false);

    /// A priority of `urgency`, incremental or not.
    pub const fn new(urgency: Urgency, incremental: bool) -> Self {
        Self {
            urgency,
            incremental,
        }
    }

    /// The urgency.
    pub const fn urgency(self) -> Urgency {
        self.urgency
    }

    /// Whether the data is useful in parts as it arrives (RFC 9218 section 4.2).
    pub const fn incremental(self) -> bool {
        self.incremental
    }

    /// This priority with the incremental flag set to `incremental`.
    pub const fn with_incremental(self, incremental: bool) -> Self {
        Self::new(self.urgency, incremental)
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.urgency)?;
        if self.incremental {
            f.write_str(", i")?;
        }
        Ok(())
    }
}

/// The paths a stream may use, when it is restricted to some
/// ([`StreamMeta::paths`]): at most [`PathSet::CAPACITY`] of them. A stream kept on Wi-Fi, or a
/// control stream kept off a metered path, is restricted this way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PathSet {
    ids: [PathId; PathSet::CAPACITY],
    len: u8,
}

impl PathSet {
    /// The most paths a set names.
    pub const CAPACITY: usize = 8;

    /// The set of `paths` (duplicates count once).
    ///
    /// # Errors
    /// More than [`CAPACITY`](Self::CAPACITY) distinct paths, or none.
    pub fn new(paths: &[PathId]) -> Result<Self, SchedError> {
        let mut set = Self {
            ids: [PathId(0); Self::CAPACITY],
            len: 0,
        };
        for &path in paths {
            if set.contains(path) {
                continue;
            }
            let slot =
                set.ids
                    .get_mut(usize::from(set.len))
                    .ok_or(SchedError::TooManyAffinityPaths {
                        max: Self::CAPACITY,
                    })?;
            *slot = path;
            set.len += 1;
        }
        if set.len == 0 {
            return Err(SchedError::NoPaths);
        }
        Ok(set)
    }

    /// Whether `path` is in the set.
    pub fn contains(&self, path: PathId) -> bool {
        self.iter().any(|p| p == path)
    }

    /// The paths, in the order given.
    pub fn iter(&self) -> impl Iterator<Item = PathId> + '_ {
        self.ids[..usize::from(self.len)].iter().copied()
    }
}

/// What the receiver requests once it has a stream, as a server that knows its pages can say
/// (a script that fetches a stylesheet and three images): the requests that wait for the stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lead {
    /// The most urgent of those requests.
    pub urgency: Urgency,
    /// Their response bytes in all, with those of the requests they lead to in turn.
    pub bytes: u64,
}

impl Lead {
    /// Both sets of requests together: the more urgent of the two, the bytes of both.
    pub fn and(self, other: Lead) -> Lead {
        Lead {
            urgency: self.urgency.min(other.urgency),
            bytes: self.bytes.saturating_add(other.bytes),
        }
    }
}

/// What a scheduler knows about a stream when it opens (and when its priority or size changes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamMeta {
    /// The stream.
    pub id: StreamId,
    /// Its RFC 9218 urgency.
    pub urgency: Urgency,
    /// RFC 9218 incremental flag: the receiver can use the data as it arrives.
    pub incremental: bool,
    /// Total bytes the stream will send, if known (e.g. from `content-length`).
    pub size: Option<u64>,
    /// The requests the receiver makes once it has this stream, if known: see
    /// [`effective_urgency`](Self::effective_urgency).
    pub leads_to: Option<Lead>,
    /// The paths the stream may be sent on; `None`: any path. Every scheduler grants the
    /// stream only on these (PriorityBucket allocates it over them); while none of them is up,
    /// the stream waits.
    pub paths: Option<PathSet>,
}

impl StreamMeta {
    /// A stream with the default urgency, not incremental, of unknown size.
    pub fn new(id: StreamId) -> Self {
        Self {
            id,
            urgency: Urgency::DEFAULT,
            incremental: false,
            size: None,
            leads_to: None,
            paths: None,
        }
    }

    /// Whether the stream may be sent on `path` ([`paths`](Self::paths)).
    pub fn allows(&self, path: PathId) -> bool {
        self.paths.is_none_or(|set| set.contains(path))
    }

    /// The urgency a scheduler orders the stream by: its own, or what it leads to when that is
    /// more urgent. A small script of low urgency that leads to critical CSS would otherwise
    /// wait behind the images of its bucket while the page waits for it (priority inversion);
    /// it inherits the urgency of what waits for it.
    pub fn effective_urgency(&self) -> Urgency {
        self.leads_to
            .map_or(self.urgency, |lead| lead.urgency.min(self.urgency))
    }

    /// Sets the urgency.
    pub fn with_urgency(mut self, urgency: Urgency) -> Self {
        self.urgency = urgency;
        self
    }

    /// Sets the total size.
    pub fn with_size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }

    /// Sets the incremental flag.
    pub fn with_incremental(mut self, incremental: bool) -> Self {
        self.incremental = incremental;
        self
    }

    /// Sets what the stream leads to ([`leads_to`](Self::leads_to)).
    pub fn with_leads_to(mut self, lead: Lead) -> Self {
        self.leads_to = Some(lead);
        self
    }

    /// Restricts the stream to `paths` ([`paths`](Self::paths)).
    pub fn with_paths(mut self, paths: PathSet) -> Self {
        self.paths = Some(paths);
        self
    }
}

/// A bandwidth estimate in bytes per second: finite and strictly positive.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Bandwidth(f64);

impl Bandwidth {
    /// One byte per second: the unit rate (fluid models that only need an order run at it, and
    /// fixed-size arrays are filled with it).
    pub const UNIT: Self = Self(1.0);

    /// A bandwidth from bytes per second; NaN, infinite, zero and negative rates are refused,
    /// since every scheduler divides by it.
    pub fn from_bytes_per_sec(rate: f64) -> Result<Self, SchedError> {
        if rate.is_finite() && rate > 0.0 {
            Ok(Self(rate))
        } else {
            Err(SchedError::InvalidBandwidth(rate))
        }
    }

    /// A bandwidth from bits per second.
    pub fn from_bits_per_sec(rate: f64) -> Result<Self, SchedError> {
        Self::from_bytes_per_sec(rate / 8.0)
    }

    /// Bytes per second.
    pub fn bytes_per_sec(self) -> f64 {
        self.0
    }

    /// Seconds needed to send `bytes` at this rate.
    pub fn seconds_for(self, bytes: u64) -> f64 {
        bytes as f64 / self.0
    }
}

/// Whether a path may carry data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathStatus {
    /// Carries data.
    Available,
    /// Carries data only while no available path is up.
    Backup,
    /// Failed or closed: carries nothing.
    Down,
}

/// Everything a scheduler may know about a path at one instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathSnapshot {
    /// The path.
    pub id: PathId,
    /// Whether it may carry data.
    pub status: PathStatus,
    /// Smoothed RTT (RFC 6298 SRTT).
    pub srtt: Duration,
    /// RTT variation (RFC 6298 RTTVAR).
    pub rttvar: Duration,
    /// Smallest RTT seen.
    pub min_rtt: Duration,
    /// One-way delay towards the receiver.
    pub one_way_delay: Duration,
    /// Estimated bottleneck bandwidth.
    pub bandwidth: Bandwidth,
    /// Congestion window in bytes.
    pub cwnd: u64,
    /// Bytes sent and not yet acknowledged or declared lost.
    pub bytes_in_flight: u64,
    /// Whether the congestion controller is in its initial slow start (BBR's Startup): the
    /// window about doubles every round trip.
    pub slow_start: bool,
}

impl PathSnapshot {
    /// A snapshot with every delay set to `rtt` (one-way delay half of it, RTT variation half
    /// of it as RFC 6298 (2.2) seeds it), nothing in flight.
    pub fn new(id: PathId, rtt: Duration, bandwidth: Bandwidth, cwnd: u64) -> Self {
        Self {
            id,
            status: PathStatus::Available,
            srtt: rtt,
            rttvar: rtt / 2,
            min_rtt: rtt,
            one_way_delay: rtt / 2,
            bandwidth,
            cwnd,
            bytes_in_flight: 0,
            slow_start: false,
        }
    }

    /// The bytes the path holds without a queue: its estimated bandwidth times its smallest
    /// RTT.
    pub fn bandwidth_delay_product(&self) -> f64 {
        self.bandwidth.bytes_per_sec() * self.min_rtt.as_secs_f64()
    }

    /// How long the path's standing queue takes to drain: what is in flight beyond its
    /// [`bandwidth_delay_product`](Self::bandwidth_delay_product), at its bandwidth.
    pub fn queue_delay(&self) -> Duration {
        let standing = (self.bytes_in_flight as f64 - self.bandwidth_delay_product()).max(0.0);
        Duration::try_from_secs_f64(standing / self.bandwidth.bytes_per_sec())
            .unwrap_or(Duration::MAX)
    }

    /// When a byte sent now would arrive: the one-way delay plus
    /// [`queue_delay`](Self::queue_delay). A path whose window is queued at its bottleneck
    /// (a 10 Mbit/s path with 75 kB in flight: 50 ms) delivers later than its delay says.
    pub fn delivery_delay(&self) -> Duration {
        self.one_way_delay.saturating_add(self.queue_delay())
    }

    /// Bytes the congestion window still admits.
    pub fn room(&self) -> u64 {
        self.cwnd.saturating_sub(self.bytes_in_flight)
    }

    /// Whether the path may carry data when `any_available` says if some path is `Available`.
    pub fn usable(&self, any_available: bool) -> bool {
        match self.status {
            PathStatus::Available => true,
            PathStatus::Backup => !any_available,
            PathStatus::Down => false,
        }
    }
}

/// A scheduler's answer to "this path has room: what goes next?".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// The stream whose next unsent bytes go on the path.
    pub stream: StreamId,
    /// How many bytes, at least 1 and at most the room offered.
    pub bytes: u64,
    /// The bucket the scheduler took them from: the stream's effective urgency, or a more
    /// urgent one where the scheduler lifted the stream ahead. The path's sender orders the
    /// bytes it holds by it, so that bytes sent ahead do not wait there behind more urgent
    /// bytes granted after them.
    pub urgency: Urgency,
    /// Whether the scheduler took the stream out of its arrival order, first in bucket
    /// `urgency` (PriorityBucket's small streams that further requests wait for). The path's
    /// sender puts such bytes before the bucket's others it holds unsent; otherwise a bucket's
    /// bytes leave in the order their streams arrived.
    pub first_in_bucket: bool,
}
