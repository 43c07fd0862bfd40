//! A path as the multipath core sees it: abstract. The driver runs the path's transport
//! (congestion control, pacing, loss recovery) and lets the core read its estimates through
//! [`PathTelemetry`]; the core keeps the path's status and counters, and what its sender owes.

use std::fmt;
use std::time::{Duration, Instant};

use mpquic_sched::{PathId, PathSnapshot, PathStatus};

/// What the driver's transport knows of one path, read by the core when it decides.
pub trait PathTelemetry: Send + fmt::Debug {
    /// What the scheduler sees of the path: estimates, window and bytes in flight.
    fn snapshot(&self, id: PathId, status: PathStatus) -> PathSnapshot;
    /// The estimated one-way delay towards the peer (control frames take the lowest).
    fn one_way_delay(&self) -> Duration;
    /// Since when the oldest unacknowledged packet waits (`None`: nothing is outstanding),
    /// and the smoothed RTT: failure detection's inputs.
    fn ack_wait(&self) -> (Option<Instant>, Duration);
    /// RFC 9002's probe timeout (smoothed RTT, four RTT variations and the peer's ack delay):
    /// a path that acknowledges nothing for this long while data is outstanding is suspected.
    fn probe_timeout(&self) -> Duration;
    /// The bytes the transport declared lost on the path so far.
    fn lost_bytes(&self) -> u64;
    /// When the packet the transport last declared lost was sent. Without it (`None`),
    /// re-injection on loss guesses which bytes the loss holds up.
    fn last_loss_sent(&self) -> Option<Instant> {
        None
    }
    /// Where the path's last transmission stands, for tail probes. Without it
    /// ([`Tail::Acked`]), the path is never probed.
    fn tail(&self) -> Tail {
        Tail::Acked
    }
    /// A number that changes whenever the estimates change.
    fn generation(&self) -> u64;
    /// Whether the path's sender found nothing to send with room in its window.
    fn set_app_limited(&self, limited: bool);
    /// The UDP payload bytes received on the path so far, for delivery reports.
    fn datagram_bytes_received(&self) -> u64;
}

/// Where the bytes handed to a path's transport stand, for tail probes
/// ([`ReinjectionConfig::probe_tails`](crate::ReinjectionConfig::probe_tails)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tail {
    /// Some wait in the transport to be sent.
    Queued,
    /// All were sent, and some are not acknowledged yet.
    Unacked,
    /// Nothing is outstanding.
    Acked,
}

/// Something that happened to a path.
#[derive(Debug, Clone, PartialEq)]
pub enum PathEvent {
    /// The path joined and may carry data.
    Up {
        /// The path.
        path: PathId,
    },
    /// The path acknowledged nothing for a probe timeout: its bytes in flight went on the
    /// others and it carries no new data until it acknowledges again.
    Suspected {
        /// The path.
        path: PathId,
    },
    /// A suspected path acknowledged again and carries data again.
    Resumed {
        /// The path.
        path: PathId,
    },
    /// The path failed or was closed; its unacknowledged data goes on the others.
    Down {
        /// The path.
        path: PathId,
        /// Why.
        reason: String,
    },
    /// The path became available or backup.
    Status {
        /// The path.
        path: PathId,
        /// Its new status.
        status: PathStatus,
    },
    /// Fresh estimates (at most one event per path every 100 ms).
    Estimates {
        /// The path.
        path: PathId,
        /// Smoothed RTT.
        srtt: Duration,
        /// Estimated bandwidth in bits per second.
        bandwidth_bps: f64,
        /// Congestion window in bytes.
        cwnd: u64,
    },
}

/// A path's stream bytes, as the core counted them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathCounters {
    /// Stream bytes granted on the path (re-sends included).
    pub bytes_sent: u64,
    /// Stream bytes received on the path.
    pub bytes_received: u64,
}

/// One path that is up.
#[derive(Debug)]
pub(crate) struct Path {
    pub(crate) telemetry: Box<dyn PathTelemetry>,
    pub(crate) status: PathStatus,
    /// Logical streams whose per-path transport streams are done: `true` to reset them (the
    /// stream was reset), `false` to finish them (nothing more will be sent).
    pub(crate) retire: Vec<(u64, bool)>,
    pub(crate) counters: PathCounters,
    pub(crate) last_estimate_event: Option<Instant>,
    pub(crate) generation: u64,
    /// The sender last found window room and nothing to send: a change of the scheduler's
    /// plans on another path (PriorityBucket re-allocating) must wake it.
    pub(crate) idle_with_room: bool,
    /// The sender waits in a transport write: the transport's buffer for this path is full,
    /// so the path has no room whatever its congestion window says (bytes waiting in the
    /// buffer are not yet in flight).
    pub(crate) writer_blocked: bool,
    /// The datagram bytes received on this path last reported to the peer.
    pub(crate) reported_received: u64,
    /// Since when the path is suspected ([`PathEvent::Suspected`]); the scheduler does not
    /// have it meanwhile.
    pub(crate) suspected: Option<Instant>,
    /// The transport's lost bytes last looked at, for re-injection on loss.
    pub(crate) lost_bytes_seen: u64,
    /// When to look whether urgent bytes, or a stream's last ones, handed to the transport end
    /// its flight, and probe them if so.
    pub(crate) probe_tail_at: Option<Instant>,
}

impl Path {
    pub(crate) fn new(telemetry: Box<dyn PathTelemetry>, status: PathStatus) -> Self {
        Self {
            telemetry,
            status,
            retire: Vec::new(),
            counters: PathCounters::default(),
            last_estimate_event: None,
            generation: 0,
            idle_with_room: false,
            writer_blocked: false,
            reported_received: 0,
            suspected: None,
            lost_bytes_seen: 0,
            probe_tail_at: None,
        }
    }

    /// Whether the path takes new data: up, not suspected, and not down.
    pub(crate) fn usable(&self) -> bool {
        self.suspected.is_none() && self.status != PathStatus::Down
    }

    /// When data sent now would arrive ([`PathSnapshot::delivery_delay`]).
    pub(crate) fn delivery_delay(&self, id: PathId) -> Duration {
        self.snapshot(id).delivery_delay()
    }

    /// What the scheduler sees of this path.
    pub(crate) fn snapshot(&self, id: PathId) -> PathSnapshot {
        let mut snapshot = self.telemetry.snapshot(id, self.status);
        if self.writer_blocked {
            snapshot.bytes_in_flight = snapshot.bytes_in_flight.max(snapshot.cwnd);
        }
        snapshot
    }
}
