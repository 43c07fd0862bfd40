//! Errors of the simulator: a bad configuration or page, a scheduler that broke the contract,
//! or a run that hit its limits. None of them is a panic.

use std::time::Duration;

use mpquic_estimate::EstimateError;

use crate::{PathId, SchedError, StreamId};

/// Why a simulation could not start or did not finish.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// A scenario name that is not in [`Scenario::ALL`](super::Scenario::ALL).
    #[error("unknown scenario {name:?}; known: {known}")]
    UnknownScenario {
        /// The name asked for.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// A page name that is not one of [`Page::BUILTIN`](super::Page::BUILTIN).
    #[error("unknown page {name:?}; known: {known}")]
    UnknownPage {
        /// The name asked for.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// A configuration the simulator cannot run (no path, a zero MTU, ...).
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// A path whose parameters make no sense (zero rate, loss outside 0..1, ...).
    #[error("path {index}: {reason}")]
    InvalidPath {
        /// Index of the path in the configuration.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A page the simulator cannot load (no object, an empty object, a dependency cycle, ...).
    #[error("page {page:?}: {reason}")]
    InvalidPage {
        /// The page's name.
        page: String,
        /// What is wrong with it.
        reason: String,
    },
    /// An estimator refused the priors derived from a path's configuration.
    #[error("estimator: {0}")]
    Estimate(#[from] EstimateError),
    /// The scheduler refused an input the simulator gave it.
    #[error("scheduler refused an input: {0}")]
    Scheduler(#[from] SchedError),
    /// The scheduler granted bytes the contract does not allow (more than the room, more than
    /// the stream has unsent, zero, or for a stream that is not open).
    #[error("scheduler granted {bytes} bytes of {stream} on {path}: {reason}")]
    BadGrant {
        /// The path that was offered room.
        path: PathId,
        /// The stream granted.
        stream: StreamId,
        /// The bytes granted.
        bytes: u64,
        /// Which rule the grant broke.
        reason: &'static str,
    },
    /// The scheduler panicked (a bug in it, or a research scheduler plugged in unfinished).
    #[error("scheduler {name} panicked: {message}")]
    SchedulerPanicked {
        /// The scheduler's name.
        name: String,
        /// The panic payload, if it was a string.
        message: String,
    },
    /// Virtual time passed the configured limit before every object completed.
    #[error("time limit of {limit:?} reached with {incomplete} object(s) incomplete")]
    TimeLimit {
        /// The limit.
        limit: Duration,
        /// Objects not completed.
        incomplete: usize,
    },
    /// The run processed more events than the configured limit.
    #[error("step limit of {limit} events reached with {incomplete} object(s) incomplete")]
    StepLimit {
        /// The limit.
        limit: u64,
        /// Objects not completed.
        incomplete: usize,
    },
    /// Nothing is left to happen (no packet, ack, timer or scheduler wake-up pending) and the
    /// page is not complete: the scheduler left data ungranted with no reason to be asked again.
    #[error("stalled at {at:?} with {incomplete} object(s) incomplete: nothing left to happen")]
    Stalled {
        /// Virtual time since the page request.
        at: Duration,
        /// Objects not completed.
        incomplete: usize,
    },
}
