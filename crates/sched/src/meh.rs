//! How many connections (paths, or parallel subflows on one path) a page load should open:
//! the completion-time model and connection-selection algorithm of \[MEH\] (Qian et al.,
//! "Enabling Context-aware HTTP with Mobile Edge Hint", section III), and the page hint the
//! mobile edge sends (object URLs and sizes).
//!
//! One connection in slow start leaves the bottleneck idle for the first rounds; `n` parallel
//! connections start with `n` initial windows and fill the pipe sooner. \[MEH\] models the page
//! completion time `T_HTTP` and opens one more connection while the relative gain is at least a
//! cost (Algorithm 1). Everything here is a pure function of its inputs: no I/O, no clock.
//!
//! # The model
//!
//! With RTT, bottleneck bandwidth `mu` (bytes/s), initial window `IW` segments of `S_mss` bytes
//! and a page of `S_page` bytes (equation (1)):
//!
//! ```text
//! T_HTTP = 2 RTT + S_page/mu + gamma (RTT + S_mss/mu) - 2 (1.5^gamma - 1) IW S_mss / mu
//! gamma  = min( [log_1.5(1 + RTT / (2 IW S_mss / mu)) + 1], [log_1.5(S_page / (IW S_mss)) + 1] - 1 )
//! T_idle = gamma (RTT + S_mss/mu) - 2 (1.5^gamma - 1) IW S_mss / mu            (equation (2))
//! ```
//!
//! "The constant 1.5 in this equation indicates that the delayed-ack is enabled". With `n`
//! parallel connections the initial windows add up: `IW` becomes `n IW` everywhere, including
//! in `gamma`. Algorithm 1 then takes `C = 1 / ConnectionNumber_max` with
//! `ConnectionNumber_max = min(ceil(BDP / (IW S_mss)), ceil(S_page / (IW S_mss)))`,
//! `G(i) = (T_HTTP(i-1) - T_HTTP(i)) / T_HTTP(1)`, starts at `i = 2`, increases `i` while
//! `G(i) >= C` and answers `n = i - 1`.
//!
//! The paper prints gamma's brackets as `[x]` next to a "+1" and a "-1", which is ambiguous;
//! [`GammaRounding`] offers three readings. The default, whole rounds
//! (`gamma = min(floor(A), floor(B))` with `A`, `B` the two logarithms), reproduces 25 of the 30
//! connection counts of the paper's Table I when its "KB" is 1024 bytes and its "Mbps"
//! 2^20 bit/s, more than any other reading tried. The tests in `meh/tests.rs` list every reading
//! tried, its count, and every cell that differs and why.
//!
//! # Example
//!
//! A 400 KiB page over 20 Mibit/s with a 150 ms RTT: four connections, about a third faster
//! (the paper's Table I: 4 connections, 33.47%; this model: 35.51%).
//!
//! ```
//! use std::time::Duration;
//! use mpquic_sched::meh::{paths_for_page, MehModel, NetworkCondition, PageHint};
//! use mpquic_sched::Bandwidth;
//!
//! let lte = NetworkCondition::new(Duration::from_millis(150), Bandwidth::from_bits_per_sec(20.0 * 1048576.0)?);
//! let model = MehModel::default();
//! let decision = model.choose(&lte, 400 * 1024)?;
//! assert_eq!(decision.connections, 4);
//! assert!((decision.reduction_percent() - 35.5).abs() < 0.1);
//!
//! // What the edge would send: the objects of the page and their sizes.
//! let hint = PageHint::new(vec![
//!     ("https://example.com/".to_string(), 30 * 1024),
//!     ("https://example.com/hero.jpg".to_string(), 370 * 1024),
//! ]);
//! assert_eq!(hint.size_of("https://example.com/hero.jpg"), Some(370 * 1024));
//! let plan = paths_for_page(&model, hint.total_size(), &[lte])?;
//! assert_eq!((plan.connections, plan.paths), (4, 1)); // one path: four subflows on it
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::time::Duration;

use crate::{Bandwidth, PathSnapshot, SchedError, StreamId, StreamMeta};

#[cfg(test)]
mod tests;

/// Why the model refused its inputs. Every variant is a caller mistake detected instead of a
/// panic or a meaningless number.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MehError {
    /// A round-trip time of zero: slow start has no rounds to count.
    #[error("round-trip time must be positive")]
    ZeroRtt,
    /// A page of zero bytes: nothing to load.
    #[error("page size must be positive")]
    ZeroPageSize,
    /// Zero connections asked of the completion-time model.
    #[error("the number of connections must be at least 1")]
    ZeroConnections,
    /// An initial window of zero segments.
    #[error("initial window must be at least one segment")]
    ZeroInitialWindow,
    /// A segment size of zero bytes.
    #[error("segment size (S_mss) must be positive")]
    ZeroMss,
    /// [`paths_for_page`] asked over no path.
    #[error("no path to open connections on")]
    NoPaths,
    /// A bandwidth that is NaN, infinite, zero or negative.
    #[error(transparent)]
    Bandwidth(#[from] SchedError),
    /// The model produced a time that is not a finite positive duration (inputs so extreme
    /// that `1.5^gamma` or a sum overflows).
    #[error("the model's {0} is not a finite positive duration")]
    OutOfRange(&'static str),
}

/// The network a page load sees: \[MEH\] "assume\[s\] the BDP equals to bandwidth in the wireless
/// cellular link multiplied with the concatenation of wired and wireless latency".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NetworkCondition {
    /// End-to-end round-trip time.
    pub rtt: Duration,
    /// Bottleneck bandwidth (`mu`), in bytes per second.
    pub bandwidth: Bandwidth,
}

impl NetworkCondition {
    /// A condition from an RTT and a bandwidth.
    pub fn new(rtt: Duration, bandwidth: Bandwidth) -> Self {
        Self { rtt, bandwidth }
    }

    /// A condition from an RTT and a rate in bits per second; NaN, infinite, zero and negative
    /// rates are refused.
    pub fn from_bits_per_sec(rtt: Duration, bits_per_sec: f64) -> Result<Self, MehError> {
        Ok(Self::new(rtt, Bandwidth::from_bits_per_sec(bits_per_sec)?))
    }

    /// A path's condition as its estimator sees it: smoothed RTT and bandwidth estimate.
    pub fn from_snapshot(path: &PathSnapshot) -> Self {
        Self::new(path.srtt, path.bandwidth)
    }

    /// Bandwidth-delay product in bytes.
    pub fn bdp_bytes(&self) -> f64 {
        self.bandwidth.bytes_per_sec() * self.rtt.as_secs_f64()
    }
}

/// How gamma's brackets `[x]` are read. With `A = log_1.5(1 + RTT / (2 IW S_mss / mu))` (the
/// rounds until the window fills the pipe) and `B = log_1.5(S_page / (IW S_mss))` (until the
/// page is sent), the paper prints `gamma = min([A + 1], [B + 1] - 1)`. Counts are of the 30
/// connection counts of Table I matched, with the units the Table I test uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GammaRounding {
    /// Whole rounds: `gamma = min(floor(A), floor(B))`, the brackets as integer parts and the
    /// "-1" taken as cancelling the "+1" in both terms. 25 of 30, the most of any reading.
    #[default]
    Floor,
    /// The brackets as integer parts (Gauss brackets) with the "+1" as printed:
    /// `gamma = min(floor(A + 1), floor(B + 1) - 1)`, one round more than [`Self::Floor`]
    /// whenever the window fills the pipe first. 24 of 30.
    FloorPlusOne,
    /// The brackets as ceilings, as the project's issue transcribes the formula:
    /// `gamma = min(ceil(A + 1), ceil(B + 1) - 1)`. 16 of 30.
    Ceil,
}

impl GammaRounding {
    /// gamma's two terms, rounded: (rounds until the pipe is full, rounds until the page is sent).
    fn terms(self, until_full: f64, until_sent: f64) -> (f64, f64) {
        match self {
            Self::Floor => (until_full.floor(), until_sent.floor()),
            Self::FloorPlusOne => ((until_full + 1.0).floor(), (until_sent + 1.0).floor() - 1.0),
            Self::Ceil => ((until_full + 1.0).ceil(), (until_sent + 1.0).ceil() - 1.0),
        }
    }
}

/// The outcome of Algorithm 1 for one page and network.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MehDecision {
    /// The chosen number of parallel connections, `n` (at least 1).
    pub connections: u32,
    /// `ConnectionNumber_max`: the connections it takes to fill the pipe (or to carry the
    /// page) with initial windows alone.
    pub max_connections: u32,
    /// The cost of one more connection, `C = 1 / ConnectionNumber_max`.
    pub cost: f64,
    /// `T_HTTP(1)`: the page over one connection.
    pub single: Duration,
    /// `T_HTTP(n)`: the page over the chosen connections.
    pub chosen: Duration,
    /// `(T_HTTP(1) - T_HTTP(n)) / T_HTTP(1)`, the sum of the gains `G(2..=n)`; 0 when `n` is 1.
    pub reduction: f64,
}

impl MehDecision {
    /// [`reduction`](Self::reduction) in percent, as the paper's Table I prints it.
    pub fn reduction_percent(&self) -> f64 {
        self.reduction * 100.0
    }
}

/// \[MEH\]'s completion-time model and Algorithm 1, with its constants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MehModel {
    initial_window: u32,
    mss: u32,
    rounding: GammaRounding,
}

impl Default for MehModel {
    fn default() -> Self {
        Self {
            initial_window: 10,
            mss: 1460,
            rounding: GammaRounding::Floor,
        }
    }
}

impl MehModel {
    /// The model with its defaults (IW 10, S_mss 1460, [`GammaRounding::Floor`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// Initial window of one connection, in segments.
    ///
    /// # Default
    /// 10 ("IW is the initial congestion window which equals to 10").
    pub fn initial_window(&mut self, segments: u32) -> &mut Self {
        self.initial_window = segments;
        self
    }

    /// Segment size `S_mss` in bytes.
    ///
    /// # Default
    /// 1460, the TCP payload of a 1500-byte Ethernet packet: the paper calls `S_mss` "the size
    /// of a TCP packet", and 1460 reproduces more of Table I than 1500 (25 vs 19 cells).
    pub fn mss(&mut self, bytes: u32) -> &mut Self {
        self.mss = bytes;
        self
    }

    /// How gamma's brackets are read.
    ///
    /// # Default
    /// [`GammaRounding::Floor`].
    pub fn rounding(&mut self, rounding: GammaRounding) -> &mut Self {
        self.rounding = rounding;
        self
    }

    /// gamma: the slow-start rounds in which the aggregate window of `connections` grows by
    /// 1.5 per round before the pipe is full or the page is sent (equation (1)); never below 0.
    pub fn slow_start_rounds(
        &self,
        net: &NetworkCondition,
        page_size: u64,
        connections: u32,
    ) -> Result<u32, MehError> {
        let m = self.inputs(net, page_size, connections)?;
        Ok(self.gamma(&m) as u32)
    }

    /// `T_HTTP(n)`: the page's completion time over `connections` parallel connections whose
    /// initial windows add up (equation (1)).
    pub fn completion_time(
        &self,
        net: &NetworkCondition,
        page_size: u64,
        connections: u32,
    ) -> Result<Duration, MehError> {
        let m = self.inputs(net, page_size, connections)?;
        to_duration(self.t_http(&m), "completion time")
    }

    /// `T_idle`: how much of [`completion_time`](Self::completion_time) the bottleneck sits
    /// idle while slow start grows the window (equation (2)). Zero when gamma is 0, and
    /// clamped at zero where equation (2) goes negative (possible with
    /// [`GammaRounding::FloorPlusOne`] or [`GammaRounding::Ceil`] when the RTT is shorter than
    /// one initial window's transmission time).
    pub fn idle_time(
        &self,
        net: &NetworkCondition,
        page_size: u64,
        connections: u32,
    ) -> Result<Duration, MehError> {
        let m = self.inputs(net, page_size, connections)?;
        Duration::try_from_secs_f64(self.t_idle(&m).max(0.0))
            .map_err(|_| MehError::OutOfRange("idle time"))
    }

    /// `T_idle / T_HTTP` over one connection: the paper's "proportion of the total completion
    /// time" (its Figure 4), with `T_idle` clamped at zero as in
    /// [`idle_time`](Self::idle_time).
    pub fn idle_fraction(&self, net: &NetworkCondition, page_size: u64) -> Result<f64, MehError> {
        let m = self.inputs(net, page_size, 1)?;
        let total = self.t_http(&m);
        to_duration(total, "completion time")?;
        Ok(self.t_idle(&m).max(0.0) / total)
    }

    /// `ConnectionNumber_max = min(ceil(BDP / (IW S_mss)), ceil(S_page / (IW S_mss)))`: "the
    /// maximum number of connections to fully utilize this given BDP pipe", or to carry a page
    /// smaller than the BDP in initial windows. At least 1.
    pub fn max_connections(&self, net: &NetworkCondition, page_size: u64) -> Result<u32, MehError> {
        let m = self.inputs(net, page_size, 1)?;
        Ok(self.max_conns(&m))
    }

    /// `G(i) = (T_HTTP(i-1) - T_HTTP(i)) / T_HTTP(1)`: what the `i`-th connection saves, as a
    /// share of the single-connection time. `i` must be at least 2.
    pub fn gain(&self, net: &NetworkCondition, page_size: u64, i: u32) -> Result<f64, MehError> {
        if i < 2 {
            return Err(MehError::ZeroConnections);
        }
        let m = self.inputs(net, page_size, 1)?;
        let single = self.t_http(&m);
        to_duration(single, "completion time")?;
        Ok((self.t_http(&m.with(i - 1)) - self.t_http(&m.with(i))) / single)
    }

    /// Algorithm 1: "the client iteratively compares gain and cost per each increased
    /// connection until the cost is larger than the gain".
    ///
    /// ```text
    /// i = 2, C = 1/ConnectionNumber_max
    /// while G(i) >= C: i = i + 1
    /// n = i - 1
    /// ```
    ///
    /// The gains add up to `(T_HTTP(1) - T_HTTP(n)) / T_HTTP(1) < 1` and each is at least
    /// `C`, so `n <= ConnectionNumber_max`; the loop is bounded by that.
    pub fn choose(&self, net: &NetworkCondition, page_size: u64) -> Result<MehDecision, MehError> {
        let m = self.inputs(net, page_size, 1)?;
        let single = self.t_http(&m);
        let single_d = to_duration(single, "completion time")?;
        let max_connections = self.max_conns(&m);
        let cost = 1.0 / f64::from(max_connections);
        let mut i: u32 = 2;
        let mut previous = single;
        while i <= max_connections {
            let next = self.t_http(&m.with(i));
            if (previous - next) / single >= cost {
                previous = next;
                i += 1;
            } else {
                break;
            }
        }
        let connections = i - 1;
        let chosen = to_duration(previous, "completion time")?;
        Ok(MehDecision {
            connections,
            max_connections,
            cost,
            single: single_d,
            chosen,
            reduction: (single - previous) / single,
        })
    }

    fn inputs(
        &self,
        net: &NetworkCondition,
        page_size: u64,
        connections: u32,
    ) -> Result<Inputs, MehError> {
        if net.rtt.is_zero() {
            return Err(MehError::ZeroRtt);
        }
        if page_size == 0 {
            return Err(MehError::ZeroPageSize);
        }
        if connections == 0 {
            return Err(MehError::ZeroConnections);
        }
        if self.initial_window == 0 {
            return Err(MehError::ZeroInitialWindow);
        }
        if self.mss == 0 {
            return Err(MehError::ZeroMss);
        }
        Ok(Inputs {
            rtt: net.rtt.as_secs_f64(),
            mu: net.bandwidth.bytes_per_sec(),
            page: page_size as f64,
            mss: f64::from(self.mss),
            iw: f64::from(self.initial_window),
            n: f64::from(connections),
        })
    }

    /// Equation (1)'s gamma with the aggregate window `n IW`.
    fn gamma(&self, m: &Inputs) -> f64 {
        let window = m.n * m.iw * m.mss; // bytes in the first round
        let until_full = log_1_5(1.0 + m.rtt / (2.0 * window / m.mu));
        let until_sent = log_1_5(m.page / window);
        let (full, sent) = self.rounding.terms(until_full, until_sent);
        full.min(sent).max(0.0)
    }

    /// Equation (2) with the aggregate window `n IW`.
    fn t_idle(&self, m: &Inputs) -> f64 {
        let gamma = self.gamma(m);
        gamma * (m.rtt + m.mss / m.mu)
            - 2.0 * (1.5_f64.powf(gamma) - 1.0) * m.n * m.iw * m.mss / m.mu
    }

    /// Equation (1) with the aggregate window `n IW`.
    fn t_http(&self, m: &Inputs) -> f64 {
        2.0 * m.rtt + m.page / m.mu + self.t_idle(m)
    }

    fn max_conns(&self, m: &Inputs) -> u32 {
        let window = m.iw * m.mss;
        let by_bdp = (m.mu * m.rtt / window).ceil();
        let by_page = (m.page / window).ceil();
        // `as` saturates; both are positive, so the result is at least 1.
        (by_bdp.min(by_page) as u32).max(1)
    }
}

/// The model's inputs as numbers, validated.
#[derive(Debug, Clone, Copy)]
struct Inputs {
    rtt: f64,
    mu: f64,
    page: f64,
    mss: f64,
    iw: f64,
    n: f64,
}

impl Inputs {
    fn with(self, connections: u32) -> Self {
        Self {
            n: f64::from(connections),
            ..self
        }
    }
}

fn log_1_5(x: f64) -> f64 {
    x.ln() / 1.5_f64.ln()
}

fn to_duration(seconds: f64, what: &'static str) -> Result<Duration, MehError> {
    if seconds > 0.0 {
        Duration::try_from_secs_f64(seconds).map_err(|_| MehError::OutOfRange(what))
    } else {
        Err(MehError::OutOfRange(what))
    }
}

/// What the mobile edge sends about a page: "page meta-data (embedded URLs and page size)",
/// one entry per object, so the client knows sizes before the responses arrive.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PageHint {
    /// The page's objects: URL and size in bytes, in the edge's order.
    pub objects: Vec<(String, u64)>,
}

impl PageHint {
    /// A hint from `(url, size)` pairs.
    pub fn new(objects: Vec<(String, u64)>) -> Self {
        Self { objects }
    }

    /// The page size `S_page`: the sum of the object sizes ("obtained by adding up the size of
    /// each object"), saturating at `u64::MAX`.
    pub fn total_size(&self) -> u64 {
        self.objects
            .iter()
            .fold(0u64, |sum, (_, size)| sum.saturating_add(*size))
    }

    /// The size of the objects still to fetch: the client "checks its local cache information
    /// and compares with the meta-data in order to determine the URLs and size of pending
    /// page". `cached` says whether a URL is already cached.
    pub fn pending_size(&self, mut cached: impl FnMut(&str) -> bool) -> u64 {
        self.objects
            .iter()
            .filter(|(url, _)| !cached(url))
            .fold(0u64, |sum, (_, size)| sum.saturating_add(*size))
    }

    /// The hinted size of the object at `url` (the first entry, if the edge listed it twice).
    pub fn size_of(&self, url: &str) -> Option<u64> {
        self.objects
            .iter()
            .find(|(u, _)| u == url)
            .map(|&(_, size)| size)
    }

    /// Scheduler metadata for the stream that will carry `url`: its hinted size, if any, so
    /// the scheduler can plan with it before the response headers arrive.
    pub fn stream_meta(&self, id: StreamId, url: &str) -> StreamMeta {
        let meta = StreamMeta::new(id);
        match self.size_of(url) {
            Some(size) => meta.with_size(size),
            None => meta,
        }
    }
}

/// How many connections a page load opens, and over how many paths.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PagePlan {
    /// The model's `n`: parallel connections (subflows) in total.
    pub connections: u32,
    /// Distinct paths to use: `min(connections, paths available)`, at least 1.
    pub paths: usize,
    /// Index (into the slice given to [`paths_for_page`]) of the path the model ran on.
    pub best_path: usize,
    /// Algorithm 1's outcome on that path.
    pub decision: MehDecision,
}

impl PagePlan {
    /// Subflows to open on each used path when the connections are spread evenly:
    /// `ceil(connections / paths)` (1 when there are at least as many paths as connections).
    pub fn subflows_per_path(&self) -> u32 {
        let paths = u32::try_from(self.paths).unwrap_or(u32::MAX).max(1);
        self.connections.div_ceil(paths)
    }
}

/// "How many paths (or parallel subflows on one path) to open for this page", from the page
/// size and each path's RTT and bandwidth.
///
/// \[MEH\]'s model has one BDP; here it is the BDP of the best path: the one over which a single
/// connection would finish the page soonest (`T_HTTP(1)` smallest; ties to the lower index).
/// Each further path or subflow starts its own slow start with its own initial window, which
/// is what the model's `n IW` counts, so Algorithm 1 on the best path gives the number of
/// connections `n`; the plan uses `min(n, paths.len())` distinct paths, and a caller that can
/// open parallel subflows on one path opens the rest there
/// ([`PagePlan::subflows_per_path`]). Summing the paths' bandwidths instead would credit the
/// first connection with capacity it cannot reach before its own slow start ends.
pub fn paths_for_page(
    model: &MehModel,
    page_size: u64,
    paths: &[NetworkCondition],
) -> Result<PagePlan, MehError> {
    let mut best: Option<(usize, Duration)> = None;
    for (index, path) in paths.iter().enumerate() {
        let single = model.completion_time(path, page_size, 1)?;
        if best.is_none_or(|(_, fastest)| single < fastest) {
            best = Some((index, single));
        }
    }
    let (best_path, _) = best.ok_or(MehError::NoPaths)?;
    let decision = model.choose(&paths[best_path], page_size)?;
    let connections = decision.connections;
    let paths = usize::try_from(connections)
        .unwrap_or(usize::MAX)
        .min(paths.len())
        .max(1);
    Ok(PagePlan {
        connections,
        paths,
        best_path,
        decision,
    })
}
