//! What a page-load experiment is made of, independent of the transport that runs it: the page
//! model, and a fluid lower bound to judge results against. The path presets are
//! `mpquic_scenario`'s.
//!
//! The simulator itself runs the real transport on simulated time (`mpquic_core::sim`, with page
//! loads in `mpquic_replay::sim` and `cargo xtask sim`); the netns testbed runs it on emulated
//! links. Both take their pages from here, so a page name means the same thing everywhere.
//!
//! - [`Page`], [`Object`], [`Start`]: what is loaded, with the builtin `bing-2013` and
//!   `youtube-2013`.
//! - [`SimConfig`] and [`PathConfig`]: the paths as the oracle sees them (rate and one-way
//!   delay).
//! - [`oracle`]: the lower bounds of the first rendering time and the page load time, and why
//!   they are lower bounds.
//! - [`BASELINE`]: the scheduler results are compared against.
//!
//! # Example
//! ```
//! use mpquic_scenario::Scenario;
//! use mpquic_sched::sim::{oracle, Page, SimConfig};
//!
//! let config = SimConfig::from_scenario(Scenario::by_name("pb-high-lossy")?);
//! let page = Page::builtin("youtube-2013")?;
//! let bound = oracle(&config, &page)?;
//! assert!(bound.frt.is_some_and(|frt| frt <= bound.plt));
//! # Ok::<(), mpquic_sched::sim::SimError>(())
//! ```

mod builtin;
mod config;
mod error;
mod oracle;
mod page;

pub use config::{PathConfig, SimConfig};
pub use error::SimError;
pub use oracle::{oracle, OracleBound};
pub use page::{Object, Page, Start, MAX_OBJECTS, MAX_OBJECT_BYTES};

use crate::SchedulerKind;

/// The scheduler that reports measure the others' FRT and PLT reductions against: LRF, the
/// mp-quic default the papers compare with.
pub const BASELINE: SchedulerKind = SchedulerKind::Lrf;
