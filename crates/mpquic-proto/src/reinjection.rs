//! Re-injection: bytes in flight on one path sent again on another before that path's own loss
//! recovery would, when a stream's urgency calls for it (XLINK, SIGCOMM 2021) or when the
//! path stops acknowledging anything. The receiver keeps the first copy of each byte.

use std::time::Duration;

use mpquic_sched::Urgency;

/// When the core re-sends bytes that are in flight on another path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReinjectionConfig {
    /// Streams at or below this urgency (0 is the most urgent) have their bytes in flight on
    /// a path that declares packets lost sent again on a path that delivers them sooner than
    /// the lossy path's repair. A stream that would have every byte by then, but for the
    /// loss, has everything the loss holds up sent again (each stream's bytes on a path are
    /// one ordered quinn stream, so the receiver gets none of them past the hole until the
    /// repair), if all of it lands before the repair and takes at most half the budget left;
    /// another has as many bytes as were lost, oldest first. `None`: never on loss.
    pub urgency: Option<Urgency>,
    /// Bytes re-sent on loss, on missing reports and at streams' ends are at most this
    /// fraction of the stream bytes sent so far...
    pub budget: f64,
    /// ...plus this many, so that the first losses of a connection can be covered.
    pub budget_floor: u64,
    /// A path that acknowledges nothing for a probe timeout while others are up is suspected:
    /// its bytes in flight go on the others at once (outside the budget: they are needed) and
    /// it carries no new data until it acknowledges again.
    pub suspect: bool,
    /// An urgent stream whose bytes are all granted has its tail sent again on a path with
    /// room where it lands more than a round trip sooner than on the path carrying it, or
    /// where it beats that path's recovery of an overdue ack (XLINK's stream-end
    /// re-injection), within the budget.
    ///
    /// Off by default: measured on the simulated pages (`cargo xtask sim`-style loads, ten
    /// seeds, pb-high and pb-high-lossy), it cut priority-bucket's FRT on two lossy pages
    /// (google.com-2021 by 11%, bing.com-2024 by 4%) but cost 5% of google.com-2021's bytes
    /// and 18-20% of wikipedia.org's (the 16 KiB floor on a 92 kB page) with no gain there:
    /// the landing estimates it compares are too rough early in a connection.
    pub stream_end: bool,
    /// Urgent bytes (as [`urgency`](Self::urgency)), or a stream's last bytes of any urgency,
    /// that end a path's flight are followed, an eighth of the path's smoothed RTT after they
    /// leave, by a probe on the path: a [`Frame::Tail`] for each urgent stream with bytes
    /// there not yet acknowledged, saying where they end (see
    /// [`missing_reports`](Self::missing_reports)), or a [`Frame::Ping`] if none has any;
    /// a packet the peer acknowledges at once, as it arrives after a gap. A loss among them is
    /// then found by the transport's time threshold about a round trip after they left, and
    /// re-injection on loss takes over, where without it nothing follows them to be
    /// acknowledged and the loss waits for the transport's probe timeout (its smoothed RTT,
    /// four variations and the peer's 25 ms ack delay), a round trip more for the probe's own
    /// ack, or for suspicion. A stream's last bytes are a request, or the end of a response or
    /// upload: their loss holds up the whole stream, and nothing of the stream follows them.
    ///
    /// [`Frame::Ping`]: crate::wire::Frame::Ping
    /// [`Frame::Tail`]: crate::wire::Frame::Tail
    pub probe_tails: bool,
    /// The receiver reports a hole in a path's chunk stream, as soon as bytes past it arrive,
    /// on the path with the lowest one-way delay ([`Frame::Missing`]); the sender then sends
    /// the stream's bytes from the hole on, all of which that path holds up until it repairs
    /// the hole, again on the path that delivers them soonest, if the stream is urgent (as
    /// [`urgency`](Self::urgency)), that path beats the holed one and the budget allows.
    /// Without it the sender learns of a loss on a slow path from that path's own
    /// acknowledgements, a round trip of the slow path after the lost packet left.
    ///
    /// A lost tail leaves no bytes past it to show a hole, so the tail probe says where the
    /// stream's bytes on the path end: a receiver that gets it without the last of them
    /// reports them the same way ([`Frame::MissingTail`]), half a round trip of the slow path
    /// after they left instead of a whole one and a time threshold. The probe goes ahead of
    /// any chunk bytes the path still queues, so it names only bytes the sender expects to
    /// have left.
    ///
    /// [`Frame::Missing`]: crate::wire::Frame::Missing
    /// [`Frame::MissingTail`]: crate::wire::Frame::MissingTail
    pub missing_reports: bool,
}

impl Default for ReinjectionConfig {
    /// Critical objects (urgency 0 and 1, RFC 9218's highest), a 3% budget over a 16 KiB
    /// floor, suspicion on, stream ends off, tail probes and missing reports on.
    fn default() -> Self {
        Self {
            urgency: Urgency::new(1).ok(),
            budget: 0.03,
            budget_floor: 16 * 1024,
            suspect: true,
            stream_end: false,
            probe_tails: true,
            missing_reports: true,
        }
    }
}

impl ReinjectionConfig {
    /// The urgency at or below which holes and lost tails are reported and their bytes sent
    /// again ([`missing_reports`](Self::missing_reports)); `None` with reports off.
    pub(crate) fn missing_report_urgency(&self) -> Option<Urgency> {
        self.urgency.filter(|_| self.missing_reports)
    }
}

/// What re-injection did on one connection.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReinjectionStats {
    /// Stream bytes sent again on another path while their first copy was in flight.
    pub reinjected: u64,
    /// Of those, the bytes re-sent because their path lost packets (charged to the budget).
    pub on_loss: u64,
    /// Of those, the bytes re-sent because their path was suspected.
    pub on_suspicion: u64,
    /// Of those, an urgent stream's last bytes re-sent on a path with room that delivers them
    /// sooner than the path they were in flight on (charged to the budget).
    pub at_stream_end: u64,
    /// Of those, the bytes re-sent because the receiver reported a hole before them on their
    /// path (charged to the budget; [`ReinjectionConfig::missing_reports`]).
    pub on_missing: u64,
    /// Stream bytes sent on any path, re-sends included (the budget's base).
    pub sent: u64,
    /// Stream bytes this end received that it already had: redundant copies.
    pub duplicate_received: u64,
    /// For each chunk that arrived a second time while its first arrival was still remembered
    /// (the connection keeps its last 1024 arrivals): how long after the first copy the
    /// second came, summed. When the first copy was the re-injected one, that is the time the
    /// re-injection saved; when the original won the race, the re-injection was redundant and
    /// saved nothing. `timed_duplicates` counts the chunks summed.
    pub first_copy_lead: Duration,
    /// How many duplicate chunks [`first_copy_lead`](Self::first_copy_lead) sums.
    pub timed_duplicates: u64,
    /// How many times a path was suspected.
    pub suspicions: u64,
    /// How many tail probes were sent ([`ReinjectionConfig::probe_tails`]).
    pub tail_probes: u64,
    /// How many holes in the peer's chunk streams, and lost tails, this end reported
    /// ([`ReinjectionConfig::missing_reports`]).
    pub holes_reported: u64,
}

impl ReinjectionStats {
    /// `bytes` arrived a second time, `lead` after their first copy if that is known.
    pub(crate) fn add_duplicate(&mut self, bytes: u64, lead: Option<Duration>) {
        self.duplicate_received = self.duplicate_received.saturating_add(bytes);
        if let Some(lead) = lead {
            self.first_copy_lead = self.first_copy_lead.saturating_add(lead);
            self.timed_duplicates = self.timed_duplicates.saturating_add(1);
        }
    }

    /// How many bytes the budget still allows to re-send on loss, on missing reports or at
    /// streams' ends.
    pub(crate) fn budget_left(&self, config: &ReinjectionConfig) -> u64 {
        let allowed = (self.sent as f64 * config.budget.max(0.0)) as u64;
        let spent = self
            .on_loss
            .saturating_add(self.on_missing)
            .saturating_add(self.at_stream_end);
        allowed
            .saturating_add(config.budget_floor)
            .saturating_sub(spent)
    }
}

/// Why bytes are re-injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// The path declared packets lost and the stream is urgent: budgeted.
    Loss,
    /// The path acknowledged nothing for a probe timeout.
    Suspicion,
    /// An urgent stream's last bytes land sooner on another path: budgeted.
    StreamEnd,
    /// The receiver reported a hole in the stream's bytes on the path: budgeted.
    Missing,
}
