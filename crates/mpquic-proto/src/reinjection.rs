//! Re-injection: bytes in flight on one path sent again on another before that path's own loss
//! recovery would, when a stream's urgency calls for it (XLINK, SIGCOMM 2021) or when the
//! path stops acknowledging anything. The receiver keeps the first copy of each byte.

use mpquic_sched::Urgency;

/// When the core re-sends bytes that are in flight on another path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReinjectionConfig {
    /// Streams at or below this urgency (0 is the most urgent) have their bytes in flight on
    /// a path that declares packets lost sent again on a path that delivers them sooner, as
    /// many bytes as were lost, oldest first. `None`: never on loss.
    pub urgency: Option<Urgency>,
    /// Bytes re-sent on loss are at most this fraction of the stream bytes sent so far...
    pub budget: f64,
    /// ...plus this many, so that the first losses of a connection can be covered.
    pub budget_floor: u64,
    /// A path that acknowledges nothing for a probe timeout while others are up is suspected:
    /// its bytes in flight go on the others at once (outside the budget: they are needed) and
    /// it carries no new data until it acknowledges again.
    pub suspect: bool,
}

impl Default for ReinjectionConfig {
    /// Critical objects (urgency 0 and 1, RFC 9218's highest), a 3% budget over a 16 KiB
    /// floor, suspicion on.
    fn default() -> Self {
        Self {
            urgency: Urgency::new(1).ok(),
            budget: 0.03,
            budget_floor: 16 * 1024,
            suspect: true,
        }
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
    /// Stream bytes sent on any path, re-sends included (the budget's base).
    pub sent: u64,
    /// Stream bytes this end received that it already had: redundant copies.
    pub duplicate_received: u64,
    /// How many times a path was suspected.
    pub suspicions: u64,
}

impl ReinjectionStats {
    /// How many bytes the budget still allows to re-send on loss.
    pub(crate) fn loss_allowance(&self, config: &ReinjectionConfig) -> u64 {
        let allowed = (self.sent as f64 * config.budget.max(0.0)) as u64;
        allowed
            .saturating_add(config.budget_floor)
            .saturating_sub(self.on_loss)
    }
}

/// Why bytes are re-injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cause {
    /// The path declared packets lost and the stream is urgent: budgeted.
    Loss,
    /// The path acknowledged nothing for a probe timeout.
    Suspicion,
}
