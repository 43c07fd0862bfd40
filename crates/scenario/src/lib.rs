//! The paths of multipath QUIC experiments, independent of what runs over them: the papers'
//! presets by name, and the link model that turns a path into when each packet arrives. The
//! simulator (`mpquic_core::sim`, `mpquic_replay::sim`) and the emulator (`mpquic-netns`) both
//! take their paths from here, so a preset name means the same links everywhere.
//!
//! - [`Scenario`] and [`PathSpec`]: the papers' path presets by name (`pb-high`,
//!   `sec-low-lossy`, `lte`, ...), with [`bdp_bytes`] and [`default_queue_bytes`].
//! - [`link::Link`]: one direction of one path, pure and deterministic: rate or Mahimahi
//!   [`trace`], one-way delay, Bernoulli or Gilbert-Elliott loss, drop-tail queue in bytes,
//!   timed [`events`]. It never reads a clock and does no I/O; the caller passes the time in.
//!
//! The crate depends on no other mpquic crate, so the schedulers' oracle, the simulator and the
//! testbed can all use it.
//!
//! # Example
//!
//! The 10 Mbit/s, 5 ms path of the PriorityBucket paper's high-heterogeneity scenario: a
//! full-size packet takes 1.2 ms to serialize and 5 ms to propagate; the link goes down at 2 s.
//!
//! ```
//! use std::time::Duration;
//! use mpquic_scenario::events::TimedEvent;
//! use mpquic_scenario::link::{DropReason, Link, LinkConfig, Verdict};
//! use mpquic_scenario::Scenario;
//!
//! let path = Scenario::by_name("pb-high")?.paths[0];
//! let mut config = LinkConfig::from_spec(&path, 1);
//! config.events.push(TimedEvent::parse("2s down")?);
//! let mut link = Link::new(config)?;
//!
//! let ms = Duration::from_millis;
//! assert_eq!(link.offer(ms(0), 1500), Verdict::Deliver(Duration::from_micros(6_200)));
//! // Behind it in the queue: its serialization starts when the first one's ends.
//! assert_eq!(link.offer(ms(0), 1500), Verdict::Deliver(Duration::from_micros(7_400)));
//! assert_eq!(link.offer(ms(2_500), 1500), Verdict::Dropped(DropReason::Down));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
pub mod events;
pub mod link;
mod preset;
pub mod trace;

pub use error::{LinkError, UnknownScenario};
pub use preset::{bdp_bytes, default_queue_bytes, PathSpec, Scenario, MIN_QUEUE_BYTES};
