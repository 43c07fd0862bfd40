//! mpquic: multipath QUIC with priority-aware stream schedulers (facade).

pub use mpquic_estimate as estimate;
pub use mpquic_sched as sched;
