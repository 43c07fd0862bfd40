//! The testbed's error type: every failure names the problem (which setting, which path, which
//! system call), so that bad input is reported before anything is set up.

use mpquic_scenario::{LinkError, UnknownScenario};

/// Everything that can go wrong in the testbed, typed so callers can tell bad input from I/O.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetnsError {
    /// A testbed the paths cannot be set up as: servers not one per path, a path the scenario
    /// does not have, more paths than the topology supports, a TUN device name the kernel
    /// would refuse.
    #[error("invalid link: {reason}")]
    InvalidLink {
        /// What is wrong, naming the setting and its value.
        reason: String,
    },
    /// A link, trace or timed event the link model refuses.
    #[error(transparent)]
    Link(#[from] LinkError),
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_models_errors_keep_their_message() {
        let refused = LinkError::Event {
            index: 2,
            reason: "at 1s is before the previous event's 2s".into(),
        };
        assert_eq!(
            NetnsError::from(refused.clone()).to_string(),
            refused.to_string()
        );
    }
}
