//! Why a replay run failed.

use mpquic_core::ConfigError;
use mpquic_netns::error::NetnsError;
use mpquic_scenario::UnknownScenario;
use mpquic_sched::SchedError;

use crate::client::LoadError;
use crate::server::ServeError;

/// Why a replay run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// An unknown mode name.
    #[error("unknown mode {0:?}: loopback or netns")]
    Mode(String),
    /// An unknown transport name.
    #[error("unknown transport {0:?}: mpquic or quinn")]
    Transport(String),
    /// Netns mode runs the server and the client as processes in the testbed's namespaces
    /// ([`crate::netns::load_netns`]), not in this process.
    #[error(
        "netns mode runs the server and client in the testbed's namespaces: use \
         page_client --mode netns (root), or --mode loopback here"
    )]
    NetnsInProcess,
    /// A scenario that does not exist.
    #[error(transparent)]
    Scenario(#[from] UnknownScenario),
    /// More paths than the scenario has, or none.
    #[error("{scenario} has {available} paths; {asked} asked")]
    Paths {
        /// The scenario.
        scenario: &'static str,
        /// Paths it has.
        available: usize,
        /// Paths asked for.
        asked: usize,
    },
    /// A path index the scenario does not have.
    #[error("{scenario} has {available} paths (0 to {last}); path {asked} asked", last = available.saturating_sub(1))]
    Path {
        /// The scenario.
        scenario: &'static str,
        /// Paths it has.
        available: usize,
        /// The index asked for.
        asked: usize,
    },
    /// The transport's configuration.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A scheduler name that is none of the built-in ones.
    #[error(transparent)]
    Scheduler(#[from] SchedError),
    /// The certificate could not be made.
    #[error("certificate: {0}")]
    Certificate(String),
    /// The link emulator could not start.
    #[error(transparent)]
    Netns(#[from] NetnsError),
    /// The server could not be built.
    #[error(transparent)]
    Serve(#[from] ServeError),
    /// Connecting or joining a path failed.
    #[error("connecting: {0}")]
    Connect(String),
    /// The page load failed.
    #[error(transparent)]
    Load(#[from] LoadError),
}
