//! Errors of the presets, pages and oracle: an unknown name, or paths or a page that make no
//! sense.

/// Why a scenario or page could not be found, or paths or a page could not be bounded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// A scenario name that is not one of `mpquic_scenario`'s presets.
    #[error(transparent)]
    UnknownScenario(#[from] mpquic_scenario::UnknownScenario),
    /// A page name that is not one of [`Page::BUILTIN`](super::Page::BUILTIN).
    #[error("unknown page {name:?}; known: {known}")]
    UnknownPage {
        /// The name asked for.
        name: String,
        /// The known names, comma-separated.
        known: String,
    },
    /// Paths the oracle cannot bound (none, or more than [`MAX_PATHS`](crate::MAX_PATHS)).
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// A path whose parameters make no sense (a zero rate, a one-way delay above 60 s).
    #[error("path {index}: {reason}")]
    InvalidPath {
        /// Index of the path in the configuration.
        index: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// A page that cannot be loaded (no object, an empty object, a dependency cycle, ...).
    #[error("page {page:?}: {reason}")]
    InvalidPage {
        /// The page's name.
        page: String,
        /// What is wrong with it.
        reason: String,
    },
}
