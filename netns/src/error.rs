//! The testbed's error type: every failure names the problem (which setting, which trace line,
//! which event), so that bad input is reported before anything is set up.

use mpquic_scenario::UnknownScenario;

/// Everything that can go wrong in the testbed, typed so callers can tell bad input from I/O.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetnsError {
    /// A link configuration that cannot be emulated: zero or absurd rate, delay over 60 s, a loss
    /// probability outside `0..=1`, a queue smaller than one 1500-byte packet.
    #[error("invalid link: {reason}")]
    InvalidLink {
        /// What is wrong, naming the setting and its value.
        reason: String,
    },
    /// A malformed Mahimahi trace. `line` counts from 1; 0 means the trace as a whole (e.g. empty).
    #[error("trace line {line}: {reason}")]
    Trace {
        /// The 1-based line of the problem, or 0 for the whole trace.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A malformed or out-of-order timed event. `index` is its 0-based position in the list
    /// (0 for a single event parsed on its own).
    #[error("event {index}: {reason}")]
    Event {
        /// The 0-based position of the event.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// An I/O operation failed (reading a trace, binding a socket, ...).
    #[error("{context}: {source}")]
    Io {
        /// What was being done, e.g. `reading trace /tmp/x`.
        context: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A scenario name that is not one of the presets; the message lists them.
    #[error(transparent)]
    UnknownScenario(#[from] UnknownScenario),
}

impl NetnsError {
    /// An [`NetnsError::InvalidLink`] with `reason`.
    pub(crate) fn link(reason: impl Into<String>) -> Self {
        Self::InvalidLink {
            reason: reason.into(),
        }
    }

    /// A [`NetnsError::Trace`] at `line` with `reason`.
    pub(crate) fn trace(line: usize, reason: impl Into<String>) -> Self {
        Self::Trace {
            line,
            reason: reason.into(),
        }
    }

    /// A [`NetnsError::Event`] at `index` with `reason`.
    pub(crate) fn event(index: usize, reason: impl Into<String>) -> Self {
        Self::Event {
            index,
            reason: reason.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_place() {
        assert_eq!(
            NetnsError::trace(3, "not a number").to_string(),
            "trace line 3: not a number"
        );
        assert_eq!(NetnsError::event(2, "x").to_string(), "event 2: x");
        assert_eq!(
            NetnsError::link("rate is 0").to_string(),
            "invalid link: rate is 0"
        );
    }
}
