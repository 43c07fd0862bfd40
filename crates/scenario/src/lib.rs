//! The paths of multipath QUIC experiments, independent of what runs over them: the papers'
//! presets by name, so that a preset means the same paths in the simulator, the emulator and the
//! reports.
//!
//! - [`Scenario`] and [`PathSpec`]: the papers' path presets by name (`pb-high`,
//!   `sec-low-lossy`, `lte`, ...), with [`bdp_bytes`] and [`default_queue_bytes`].
//!
//! The crate depends on no other mpquic crate, so the schedulers' oracle, the simulator and the
//! testbed can all use it.
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use mpquic_scenario::Scenario;
//!
//! let pb_high = Scenario::by_name("pb-high")?;
//! // 40 Mbit/s over a 50 ms round trip: a 250 kB bandwidth-delay product.
//! assert_eq!(pb_high.paths[1].one_way_delay, Duration::from_millis(25));
//! assert_eq!(pb_high.paths[1].bdp_bytes(), 250_000);
//! # Ok::<(), mpquic_scenario::UnknownScenario>(())
//! ```

mod error;
mod preset;

pub use error::UnknownScenario;
pub use preset::{bdp_bytes, default_queue_bytes, PathSpec, Scenario, MIN_QUEUE_BYTES};
