//! Errors of the scheduler crate.

use crate::{PathId, StreamId};

/// Why a scheduler refused an input. Every variant is a caller or peer mistake that the
/// scheduler detected instead of panicking on it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchedError {
    /// An urgency above 7 (RFC 9218 urgencies are 0..=7).
    #[error("urgency {0} is out of range 0..=7")]
    UrgencyOutOfRange(u8),
    /// A bandwidth that is NaN, infinite, zero or negative.
    #[error("bandwidth {0} bytes/s is not a finite positive number")]
    InvalidBandwidth(f64),
    /// A path beyond the most a scheduler tracks.
    #[error("a connection has at most {max} paths")]
    TooManyPaths {
        /// The limit, [`crate::MAX_PATHS`].
        max: usize,
    },
    /// A stream restricted to more paths than a [`crate::PathSet`] holds.
    #[error("a stream is restricted to at most {max} paths")]
    TooManyAffinityPaths {
        /// The limit, [`crate::PathSet::CAPACITY`].
        max: usize,
    },
    /// A path added twice.
    #[error("{0} already exists")]
    DuplicatePath(PathId),
    /// A path the scheduler does not know.
    #[error("{0} is unknown")]
    UnknownPath(PathId),
    /// A stream opened twice.
    #[error("{0} is already open")]
    DuplicateStream(StreamId),
    /// A stream the scheduler does not know.
    #[error("{0} is unknown")]
    UnknownStream(StreamId),
    /// An allocation asked over no path.
    #[error("no path to allocate over")]
    NoPaths,
    /// An allocation whose output slice is shorter than its list of paths.
    #[error("allocation over {paths} paths needs an output of that length, got {out}")]
    AllocationOutput {
        /// Paths given.
        paths: usize,
        /// Output length given.
        out: usize,
    },
    /// A scheduler name that is not one of [`crate::SchedulerKind::ALL`].
    #[error("unknown scheduler {0:?}; known: priority-bucket, priority-bucket-paper, lrf, sa-ecf, wrr, sec, round-robin")]
    UnknownScheduler(String),
}
