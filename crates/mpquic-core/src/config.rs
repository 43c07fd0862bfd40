//! Connection settings: scheduler, limits, windows, failure detection, priors, congestion control.

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use mpquic_proto::wire::Params;
use mpquic_proto::{ReinjectionConfig, TransportConfig};
use mpquic_sched::{PathStatus, Scheduler, SchedulerKind, MAX_PATHS};
use quinn::congestion::{ControllerFactory, CubicConfig, NewRenoConfig};
use quinn::VarInt;

use crate::bbr::BbrConfig;
use crate::chunk_limit::ChunkStreamLimit;
use crate::error::{varint, ConfigError};
use crate::fld::FldConfig;
use crate::loss_based::{LossAlgorithm, LossBasedConfig};
use crate::telemetry::Telemetry;

/// The congestion window every path starts with unless [`Config::initial_window`] says
/// otherwise: 32 packets of 1200 bytes, the start of Chrome's QUIC and of tquic. Pages are what
/// this library is for, and most of a page's objects finish within the first round trips, where
/// quinn's own 10 packets (RFC 9002) leave a path idle; a path that joins later starts its own
/// slow start from here too.
pub const DEFAULT_INITIAL_WINDOW: u64 = 32 * 1200;

/// The longest each path's peer may hold an acknowledgement, asked of it with the ACK frequency
/// extension (draft-ietf-quic-ack-frequency, which quinn speaks on both ends). RFC 9000's
/// default is 25 ms, and a path's probe timeout waits for it on top of the RTT: on a 10 ms path
/// a lost last packet of a critical response then costs about 60 ms. Acks for every other
/// packet are unchanged; only a lone packet, usually a response's tail, is acknowledged sooner.
const REQUESTED_MAX_ACK_DELAY: Duration = Duration::from_millis(5);

/// Builds a fresh scheduler for each connection.
pub type SchedulerFactory = Arc<dyn Fn() -> Box<dyn Scheduler> + Send + Sync>;

/// The congestion controller each path's quinn connection runs.
#[derive(Clone)]
pub enum CongestionControl {
    /// quinn's CUBIC (quinn's default).
    Cubic,
    /// quinn's NewReno.
    NewReno,
    /// mpquic's CUBIC or NewReno with HyStart++ (RFC 9406) ending the initial slow start when
    /// the RTT rises (see [`loss_based`](crate::loss_based)).
    LossBased(LossBasedConfig),
    /// mpquic's BBRv3 (see [`bbr`](crate::bbr)).
    Bbr(BbrConfig),
    /// quinn's own BBR (marked experimental by quinn), for comparison.
    QuinnBbr,
    /// FLD, flow-length dependent (see [`fld`](crate::fld)).
    Fld(FldConfig),
    /// Any quinn controller factory, e.g. a research controller.
    Custom(Arc<dyn ControllerFactory + Send + Sync>),
}

impl CongestionControl {
    /// The quinn controller factory of this choice (what every path's connection is given,
    /// wrapped by mpquic's telemetry); also for a plain quinn connection that should run the same.
    pub fn factory(&self) -> Arc<dyn ControllerFactory + Send + Sync> {
        self.factory_with(None)
    }

    /// Like [`factory`](Self::factory), with quinn's controllers and BBR starting from
    /// `initial_window` bytes instead of their own 10 packets. FLD keeps its own initial window
    /// (part of its design) and a custom factory is used as given.
    pub fn factory_with(
        &self,
        initial_window: Option<u64>,
    ) -> Arc<dyn ControllerFactory + Send + Sync> {
        // Every factory here but FLD's has `initial_window(&mut self, u64)`, with no trait to
        // name it by.
        macro_rules! starting_from_initial_window {
            ($config:expr) => {{
                let mut config = $config;
                if let Some(bytes) = initial_window {
                    config.initial_window(bytes);
                }
                Arc::new(config)
            }};
        }
        match self {
            Self::Cubic => starting_from_initial_window!(CubicConfig::default()),
            Self::NewReno => starting_from_initial_window!(NewRenoConfig::default()),
            Self::QuinnBbr => {
                starting_from_initial_window!(quinn::congestion::BbrConfig::default())
            }
            Self::LossBased(config) => starting_from_initial_window!(*config),
            Self::Bbr(config) => starting_from_initial_window!(*config),
            Self::Fld(config) => Arc::new(*config),
            Self::Custom(factory) => factory.clone(),
        }
    }
}

impl CongestionControl {
    /// The name of the default controller, as [`FromStr`] reads it (for command lines).
    pub const DEFAULT_NAME: &'static str = "bbr";

    /// Whether the window opens with acknowledgements, so that mpquic's delivery credit
    /// (acknowledgements learnt early on a faster path) makes it open sooner. BBR's window is
    /// its pacing rate's flight, which acknowledgements do not open: there the credit mostly
    /// adds a standing queue (see [`bbr`](crate::bbr)).
    fn is_ack_clocked(&self) -> bool {
        !matches!(self, Self::Bbr(_) | Self::QuinnBbr)
    }
}

impl Default for CongestionControl {
    /// BBR: under 2% random loss it kept 66-93% of the paths' summed rates where quinn's CUBIC
    /// kept 18-73%; without loss it gave up 1-3 points of goodput for a queue of at most 0.22x
    /// the path's RTT where CUBIC kept 0.6-3.9x (docs/results/2026-11-24-cc, the measurements
    /// that decided it).
    fn default() -> Self {
        Self::Bbr(BbrConfig::default())
    }
}

impl fmt::Debug for CongestionControl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cubic => f.write_str("cubic"),
            Self::NewReno => f.write_str("newreno"),
            Self::LossBased(config) => f.write_str(config.name()),
            Self::Bbr(config) if config.uses_draft_loss_response() => f.write_str("bbr-draft-loss"),
            Self::Bbr(_) => f.write_str("bbr"),
            Self::QuinnBbr => f.write_str("quinn-bbr"),
            Self::Fld(_) => f.write_str("fld"),
            Self::Custom(_) => f.write_str("custom"),
        }
    }
}

impl FromStr for CongestionControl {
    type Err = ConfigError;

    /// `cubic`, `newreno` (quinn's), `cubic-hystart`, `newreno-hystart` (mpquic's, with
    /// HyStart++), `cubic-slow-start`, `newreno-slow-start` (mpquic's, without it), `bbr`,
    /// `bbr-draft-loss` (BBR with the draft's loss response), `quinn-bbr` or `fld` (each with
    /// its defaults).
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name {
            "cubic" => Ok(Self::Cubic),
            "newreno" | "reno" => Ok(Self::NewReno),
            "cubic-hystart" => Ok(Self::LossBased(LossBasedConfig::default())),
            "newreno-hystart" => Ok(Self::LossBased(
                *LossBasedConfig::default().algorithm(LossAlgorithm::NewReno),
            )),
            "cubic-slow-start" => Ok(Self::LossBased(*LossBasedConfig::default().hystart(false))),
            "newreno-slow-start" => Ok(Self::LossBased(
                *LossBasedConfig::default()
                    .algorithm(LossAlgorithm::NewReno)
                    .hystart(false),
            )),
            "bbr" => Ok(Self::Bbr(BbrConfig::default())),
            "bbr-draft-loss" => Ok(Self::Bbr(*BbrConfig::default().draft_loss_response(true))),
            "quinn-bbr" => Ok(Self::QuinnBbr),
            "fld" => Ok(Self::Fld(FldConfig::default())),
            _ => Err(ConfigError::Invalid(
                "congestion controller (expected cubic, newreno, cubic-hystart, newreno-hystart, \
                 cubic-slow-start, newreno-slow-start, bbr, bbr-draft-loss, quinn-bbr or fld)",
            )),
        }
    }
}

/// Settings shared by every connection of an [`Endpoint`](crate::Endpoint).
///
/// ```
/// use std::time::Duration;
/// let mut config = mpquic_core::Config::default();
/// config
///     .scheduler(mpquic_core::SchedulerKind::Lrf)
///     .max_paths(4)?
///     .rtt_prior(Duration::from_millis(30))?
///     .congestion_control("newreno".parse()?);
/// # Ok::<(), mpquic_core::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct Config {
    pub(crate) scheduler_name: String,
    pub(crate) scheduler: SchedulerFactory,
    pub(crate) max_paths: usize,
    pub(crate) stream_receive_window: u64,
    pub(crate) receive_window: u64,
    pub(crate) send_buffer: u64,
    pub(crate) max_concurrent_bidi_streams: u64,
    pub(crate) max_concurrent_uni_streams: u64,
    pub(crate) path_failure_rtts: u32,
    pub(crate) path_failure_floor: Duration,
    pub(crate) reinjection: ReinjectionConfig,
    pub(crate) rtt_prior: Duration,
    pub(crate) bandwidth_prior: f64,
    pub(crate) congestion: CongestionControl,
    pub(crate) initial_window: u64,
    pub(crate) delivery_reports: bool,
    pub(crate) idle_timeout: Duration,
    pub(crate) max_sessions: usize,
    pub(crate) max_half_open: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            scheduler_name: SchedulerKind::PriorityBucket.name().to_owned(),
            scheduler: Arc::new(|| SchedulerKind::PriorityBucket.build()),
            max_paths: 8,
            stream_receive_window: 4 << 20,
            receive_window: 16 << 20,
            send_buffer: 4 << 20,
            max_concurrent_bidi_streams: 1024,
            max_concurrent_uni_streams: 1024,
            path_failure_rtts: 10,
            path_failure_floor: Duration::from_secs(1),
            reinjection: ReinjectionConfig::default(),
            rtt_prior: Duration::from_millis(100),
            bandwidth_prior: 1_250_000.0,
            congestion: CongestionControl::default(),
            initial_window: DEFAULT_INITIAL_WINDOW,
            delivery_reports: true,
            idle_timeout: Duration::from_secs(10),
            max_sessions: 4096,
            max_half_open: 256,
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("scheduler", &self.scheduler_name)
            .field("max_paths", &self.max_paths)
            .field("stream_receive_window", &self.stream_receive_window)
            .field("receive_window", &self.receive_window)
            .field("send_buffer", &self.send_buffer)
            .field("congestion", &self.congestion)
            .field("initial_window", &self.initial_window)
            .field("delivery_reports", &self.delivery_reports)
            .field("max_sessions", &self.max_sessions)
            .field("max_half_open", &self.max_half_open)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// Selects a built-in scheduler (a name parses into one: `"lrf".parse()?`).
    ///
    /// # Default
    /// [`SchedulerKind::PriorityBucket`].
    pub fn scheduler(&mut self, kind: SchedulerKind) -> &mut Self {
        self.scheduler_name = kind.name().to_owned();
        self.scheduler = Arc::new(move || kind.build());
        self
    }

    /// Uses a scheduler of your own; `factory` builds one per connection.
    pub fn scheduler_factory(
        &mut self,
        name: impl Into<String>,
        factory: impl Fn() -> Box<dyn Scheduler> + Send + Sync + 'static,
    ) -> &mut Self {
        self.scheduler_name = name.into();
        self.scheduler = Arc::new(factory);
        self
    }

    /// The selected scheduler's name.
    pub fn scheduler_name(&self) -> &str {
        &self.scheduler_name
    }

    /// Most paths one connection may have at once, 1 to 32.
    ///
    /// # Default
    /// 8.
    pub fn max_paths(&mut self, paths: usize) -> Result<&mut Self, ConfigError> {
        if !(1..=MAX_PATHS).contains(&paths) {
            return Err(ConfigError::Invalid("max_paths (1 to 32)"));
        }
        self.max_paths = paths;
        Ok(self)
    }

    /// Bytes of one stream the receiver buffers ahead of the application.
    ///
    /// # Default
    /// 4 MiB.
    pub fn stream_receive_window(&mut self, bytes: u64) -> Result<&mut Self, ConfigError> {
        if bytes == 0 || bytes > crate::wire::MAX_VARINT {
            return Err(ConfigError::Invalid("stream_receive_window"));
        }
        self.stream_receive_window = bytes;
        Ok(self)
    }

    /// Bytes of all streams together the receiver buffers ahead of the application
    /// (\[PB\] ran with 16 MB).
    ///
    /// # Default
    /// 16 MiB.
    pub fn receive_window(&mut self, bytes: u64) -> Result<&mut Self, ConfigError> {
        if bytes == 0 || bytes > crate::wire::MAX_VARINT {
            return Err(ConfigError::Invalid("receive_window"));
        }
        self.receive_window = bytes;
        Ok(self)
    }

    /// Bytes of one stream kept on the sending side until the receiver acknowledges them (so
    /// they can be re-sent on another path); writes wait beyond it.
    ///
    /// # Default
    /// 4 MiB.
    pub fn send_buffer(&mut self, bytes: u64) -> Result<&mut Self, ConfigError> {
        if bytes == 0 {
            return Err(ConfigError::Invalid("send_buffer"));
        }
        self.send_buffer = bytes;
        Ok(self)
    }

    /// Bidirectional streams the peer may have open at once (quinn's setting of that name).
    ///
    /// Each path's quinn connection allows up to this many plus the unidirectional limit plus
    /// 64 chunk streams at once. It starts at 128 and doubles as the peer's open streams need,
    /// since quinn keeps about 1 KB for every stream it has allowed
    /// (`crates/mpquic-core/src/chunk_limit.rs`).
    ///
    /// # Default
    /// 1024.
    pub fn max_concurrent_bidi_streams(&mut self, streams: VarInt) -> &mut Self {
        self.max_concurrent_bidi_streams = streams.into_inner();
        self
    }

    /// Unidirectional streams the peer may have open at once (quinn's setting of that name);
    /// see [`max_concurrent_bidi_streams`](Self::max_concurrent_bidi_streams) for what they cost.
    ///
    /// # Default
    /// 1024.
    pub fn max_concurrent_uni_streams(&mut self, streams: VarInt) -> &mut Self {
        self.max_concurrent_uni_streams = streams.into_inner();
        self
    }

    /// A path with data in flight and no acknowledgement for `rtts` smoothed RTTs (and at least
    /// `floor`) is declared failed; its unacknowledged data is re-sent on the other paths.
    ///
    /// # Default
    /// 10 RTTs, at least 1 s (a loaded machine can delay acks by hundreds of milliseconds
    /// without anything being wrong with the path).
    pub fn path_failure_timeout(
        &mut self,
        rtts: u32,
        floor: Duration,
    ) -> Result<&mut Self, ConfigError> {
        if rtts == 0 {
            return Err(ConfigError::Invalid("path_failure_timeout rtts"));
        }
        self.path_failure_rtts = rtts;
        self.path_failure_floor = floor;
        Ok(self)
    }

    /// When bytes in flight on one path are sent again on another: on loss, for urgent
    /// streams within a budget, and when a path acknowledges nothing for a probe timeout.
    ///
    /// # Default
    /// [`ReinjectionConfig::default`]: urgency 0 and 1, 3% budget over 16 KiB, suspicion on.
    ///
    /// # Errors
    /// A budget that is negative or not a number.
    pub fn reinjection(
        &mut self,
        reinjection: ReinjectionConfig,
    ) -> Result<&mut Self, ConfigError> {
        if reinjection.budget.is_nan() || reinjection.budget < 0.0 {
            return Err(ConfigError::Invalid("reinjection budget"));
        }
        self.reinjection = reinjection;
        Ok(self)
    }

    /// The RTT assumed for a new path before it is measured (\[PB\] 4.1, prior knowledge).
    ///
    /// # Default
    /// 100 ms.
    pub fn rtt_prior(&mut self, rtt: Duration) -> Result<&mut Self, ConfigError> {
        if rtt.is_zero() || rtt > Duration::from_secs(60) {
            return Err(ConfigError::Invalid("rtt_prior (0 to 60 s)"));
        }
        self.rtt_prior = rtt;
        Ok(self)
    }

    /// The bandwidth assumed for a new path before it is measured, in bits per second.
    ///
    /// # Default
    /// 10 Mbit/s.
    pub fn bandwidth_prior(&mut self, bits_per_sec: f64) -> Result<&mut Self, ConfigError> {
        if !(bits_per_sec.is_finite() && bits_per_sec > 0.0) {
            return Err(ConfigError::Invalid("bandwidth_prior"));
        }
        self.bandwidth_prior = bits_per_sec / 8.0;
        Ok(self)
    }

    /// The congestion controller of every path.
    ///
    /// # Default
    /// [`CongestionControl::Bbr`] with its defaults (see [`CongestionControl::default`]).
    pub fn congestion_control(&mut self, cc: CongestionControl) -> &mut Self {
        self.congestion = cc;
        self
    }

    /// Bytes each path's congestion window starts with (BBR's and quinn's controllers; see
    /// [`CongestionControl::factory_with`]). A path that joins an established connection starts
    /// its slow start from here, and on a long path every doubling costs a round trip of that
    /// path: 32 packets instead of 10 save almost two of them. 12 000 bytes gives quinn's own
    /// start (10 packets, RFC 9002, section 7.2).
    ///
    /// # Default
    /// [`DEFAULT_INITIAL_WINDOW`], 32 packets of 1200 bytes.
    pub fn initial_window(&mut self, bytes: u64) -> Result<&mut Self, ConfigError> {
        // Below two packets a window cannot open; above 1 MB it is a flood, not a start.
        if !(2400..=1 << 20).contains(&bytes) {
            return Err(ConfigError::Invalid("initial_window (2400 B to 1 MiB)"));
        }
        self.initial_window = bytes;
        Ok(self)
    }

    /// Whether this end reports each path's received bytes on the path with the lowest one-way
    /// delay, and credits its own paths' congestion windows with what the peer reports
    /// delivered. Every path is its own quinn connection, whose acknowledgements return on the
    /// path itself: without the reports, a slow path's window opens a whole slow round trip
    /// after its packets arrived, which makes its slow start slow (see
    /// [`Frame::PathReceived`](crate::wire::Frame::PathReceived)).
    ///
    /// With BBR the reports are sent but credit nothing: BBR's window is not opened by
    /// acknowledgements.
    ///
    /// # Default
    /// On.
    pub fn delivery_reports(&mut self, enabled: bool) -> &mut Self {
        self.delivery_reports = enabled;
        self
    }

    /// Whether the peer's delivery reports credit this end's windows.
    pub(crate) fn delivery_credit(&self) -> bool {
        self.delivery_reports && self.congestion.is_ack_clocked()
    }

    /// The limits this side announces to its peer.
    pub(crate) fn params(&self) -> Params {
        Params {
            max_data: self.receive_window,
            max_stream_data: self.stream_receive_window,
            max_bidi_streams: self.max_concurrent_bidi_streams,
            max_uni_streams: self.max_concurrent_uni_streams,
        }
    }

    /// quinn's settings for one path, its congestion controller (this one, or the config's)
    /// reporting to `telemetry`. Both drivers use it.
    pub(crate) fn quinn_transport(
        &self,
        telemetry: &Arc<Telemetry>,
        congestion: Option<&CongestionControl>,
    ) -> Arc<quinn::TransportConfig> {
        let congestion = congestion.unwrap_or(&self.congestion);
        let controller = telemetry.factory(congestion.factory_with(Some(self.initial_window)));
        let mut t = quinn::TransportConfig::default();
        t.congestion_controller_factory(controller)
            // Distinct priorities give strict buckets and FCFS; fairness round-robins only
            // incremental streams, which share a priority.
            .send_fairness(true)
            .max_concurrent_bidi_streams(1u32.into())
            .max_concurrent_uni_streams(self.chunk_stream_limit().announced())
            .stream_receive_window(varint(self.stream_receive_window))
            .receive_window(varint(self.receive_window))
            .send_window(256 * 1024)
            .initial_rtt(self.rtt_prior)
            .max_idle_timeout(quinn::IdleTimeout::try_from(self.idle_timeout).ok())
            .keep_alive_interval(Some(self.idle_timeout / 3))
            .datagram_receive_buffer_size(None);
        let mut acks = quinn::AckFrequencyConfig::default();
        acks.max_ack_delay(Some(REQUESTED_MAX_ACK_DELAY));
        // A packet that arrives after a gap is acknowledged at once (RFC 9000's own rule; the
        // extension's default waits for a second one): on one path a gap is far more often a
        // loss than reordering, and a tail probe exists to reveal it a round trip early.
        acks.reordering_threshold(1u32.into());
        t.ack_frequency_config(Some(acks));
        Arc::new(t)
    }

    /// How many chunk streams the peer may open on one path: one per logical stream the
    /// session allows, plus 64 for those whose chunk streams are still closing.
    pub(crate) fn chunk_stream_limit(&self) -> ChunkStreamLimit {
        ChunkStreamLimit::new(
            self.max_concurrent_bidi_streams
                .saturating_add(self.max_concurrent_uni_streams)
                .saturating_add(64),
        )
    }

    /// A path's telemetry, with this config's priors.
    pub(crate) fn new_telemetry(&self) -> Arc<Telemetry> {
        Telemetry::new(self.rtt_prior, self.bandwidth_prior)
    }

    /// The settings of a connection's multipath core.
    pub(crate) fn transport(&self) -> TransportConfig {
        TransportConfig {
            send_buffer: self.send_buffer,
            idle_timeout: self.idle_timeout,
            delivery_reports: self.delivery_reports,
            delivery_credit: self.delivery_credit(),
            path_failure_rtts: self.path_failure_rtts,
            path_failure_floor: self.path_failure_floor,
            reinjection: self.reinjection,
        }
    }

    /// A path silent for this long is closed by quinn (keep-alives are sent at a third of it),
    /// and a session with no stream open ends after this long without stream data, frames
    /// or stream operations ([`ConnectionError::TimedOut`](crate::ConnectionError::TimedOut)),
    /// whatever the keep-alives do.
    ///
    /// # Default
    /// 10 s.
    pub fn idle_timeout(&mut self, timeout: Duration) -> Result<&mut Self, ConfigError> {
        if timeout < Duration::from_millis(10) || timeout > Duration::from_secs(600) {
            return Err(ConfigError::Invalid("idle_timeout (10 ms to 600 s)"));
        }
        self.idle_timeout = timeout;
        Ok(self)
    }

    /// Most sessions a server holds at once; a new session beyond it is refused with
    /// [`codes::SESSION_LIMIT`](crate::codes::SESSION_LIMIT).
    ///
    /// # Default
    /// 4096.
    pub fn max_sessions(&mut self, sessions: usize) -> Result<&mut Self, ConfigError> {
        if sessions == 0 {
            return Err(ConfigError::Invalid("max_sessions (at least 1)"));
        }
        self.max_sessions = sessions;
        Ok(self)
    }

    /// Most connections a server holds that are not yet a session or a path (TLS handshake
    /// or first frame under way); quinn refuses more with `CONNECTION_REFUSED`.
    ///
    /// # Default
    /// 256.
    pub fn max_half_open(&mut self, connections: usize) -> Result<&mut Self, ConfigError> {
        if connections == 0 {
            return Err(ConfigError::Invalid("max_half_open (at least 1)"));
        }
        self.max_half_open = connections;
        Ok(self)
    }
}

/// A path to open ([`Connection::open_path`](crate::Connection::open_path)): from a local
/// address (port 0 picks a free port) to the server's, available or backup, with the
/// connection's congestion controller or one of its own.
#[derive(Debug, Clone)]
pub struct PathConfig {
    pub(crate) local: SocketAddr,
    pub(crate) remote: SocketAddr,
    pub(crate) status: PathStatus,
    pub(crate) congestion: Option<CongestionControl>,
}

impl PathConfig {
    /// An available path from `local` to `remote`, with the connection's congestion control.
    pub fn new(local: SocketAddr, remote: SocketAddr) -> Self {
        Self {
            local,
            remote,
            status: PathStatus::Available,
            congestion: None,
        }
    }

    /// Available (used whenever the scheduler wants it) or backup (used only while no
    /// available path is up); a path cannot start [`PathStatus::Down`].
    pub fn status(&mut self, status: PathStatus) -> &mut Self {
        self.status = status;
        self
    }

    /// This path's own congestion controller for what the client sends on it.
    pub fn congestion_control(&mut self, congestion: CongestionControl) -> &mut Self {
        self.congestion = Some(congestion);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_controller_name_parses_to_a_controller_of_that_name() {
        let names = [
            "cubic",
            "newreno",
            "cubic-hystart",
            "newreno-hystart",
            "cubic-slow-start",
            "newreno-slow-start",
            "bbr",
            "bbr-draft-loss",
            "quinn-bbr",
            "fld",
        ];
        for name in names {
            let cc: CongestionControl = name.parse().unwrap();
            assert_eq!(format!("{cc:?}"), name);
        }
        let default: CongestionControl = CongestionControl::DEFAULT_NAME.parse().unwrap();
        assert_eq!(
            format!("{default:?}"),
            format!("{:?}", CongestionControl::default())
        );
        assert!("cubic-hystart++".parse::<CongestionControl>().is_err());
    }
}
