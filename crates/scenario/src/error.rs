//! What the presets and the link model refuse, each error naming the problem (which setting,
//! which trace line, which event), so that bad input is reported before anything runs.

/// A scenario name that is not in [`Scenario::ALL`](crate::Scenario::ALL).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scenario {name:?}; known: {known}")]
pub struct UnknownScenario {
    /// The name asked for.
    pub name: String,
    /// The known names, comma-separated.
    pub known: String,
}

/// Why a link, a trace or a timed event cannot be emulated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LinkError {
    /// A link configuration that cannot be emulated: zero or absurd rate, delay over 60 s, a loss
    /// probability outside `0..=1`, a queue smaller than one 1500-byte packet.
    #[error("invalid link: {reason}")]
    Invalid {
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
}

impl LinkError {
    /// A [`LinkError::Invalid`] with `reason`.
    pub(crate) fn invalid(reason: impl Into<String>) -> Self {
        Self::Invalid {
            reason: reason.into(),
        }
    }

    /// A [`LinkError::Trace`] at `line` with `reason`.
    pub(crate) fn trace(line: usize, reason: impl Into<String>) -> Self {
        Self::Trace {
            line,
            reason: reason.into(),
        }
    }

    /// A [`LinkError::Event`] at `index` with `reason`.
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
            LinkError::trace(3, "not a number").to_string(),
            "trace line 3: not a number"
        );
        assert_eq!(LinkError::event(2, "x").to_string(), "event 2: x");
        assert_eq!(
            LinkError::invalid("rate is 0").to_string(),
            "invalid link: rate is 0"
        );
    }
}
