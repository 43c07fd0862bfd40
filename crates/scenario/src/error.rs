//! What the presets refuse: a name that is not one of them.

/// A scenario name that is not in [`Scenario::ALL`](crate::Scenario::ALL).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown scenario {name:?}; known: {known}")]
pub struct UnknownScenario {
    /// The name asked for.
    pub name: String,
    /// The known names, comma-separated.
    pub known: String,
}
