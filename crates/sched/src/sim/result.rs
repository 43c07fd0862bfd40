//! What a simulated page load measured.

use std::time::Duration;

/// Per-path counters of one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathStats {
    /// Data packets sent, retransmissions included.
    pub packets_sent: u64,
    /// Payload bytes sent, retransmissions included.
    pub bytes_sent: u64,
    /// Payload bytes re-sent: frames of packets declared lost, and the copies probes carry.
    pub bytes_retransmitted: u64,
    /// Packets lost at random on the link (the drop rate).
    pub packets_lost: u64,
    /// Packets dropped by the full drop-tail queue.
    pub packets_dropped: u64,
    /// Packets the sender declared lost (by threshold or timeout).
    pub packets_declared_lost: u64,
    /// Declared losses whose packet was acknowledged after all.
    pub spurious_losses: u64,
    /// Probe timeouts (no ack for a whole timeout while packets were in flight).
    pub timeouts: u64,
}

/// One object's timeline, as offsets from the page request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectResult {
    /// The object's name.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// Whether it is critical (counts for the first rendering time).
    pub critical: bool,
    /// When the client sent its request.
    pub requested: Duration,
    /// When the client had received all of its bytes.
    pub completed: Duration,
}

/// The outcome of loading a page once.
#[derive(Debug, Clone, PartialEq)]
pub struct PageResult {
    /// The scheduler's name.
    pub scheduler: String,
    /// Every object, in page order.
    pub objects: Vec<ObjectResult>,
    /// First rendering time: the last critical object's completion (browser work ignored, as
    /// in \[PB\]); `None` when the page has no critical object.
    pub frt: Option<Duration>,
    /// Page load time: the last object's completion.
    pub plt: Duration,
    /// Per-path counters, path 0 first.
    pub paths: Vec<PathStats>,
    /// Page bytes over the page load time, in bits per second.
    pub goodput_bps: f64,
    /// Events the run processed.
    pub events: u64,
}

impl PageResult {
    /// Bytes re-sent over all paths.
    pub fn bytes_retransmitted(&self) -> u64 {
        self.paths.iter().map(|p| p.bytes_retransmitted).sum()
    }

    /// Packets lost at random or dropped by a queue, over all paths.
    pub fn packets_lost_or_dropped(&self) -> u64 {
        self.paths
            .iter()
            .map(|p| p.packets_lost + p.packets_dropped)
            .sum()
    }
}
