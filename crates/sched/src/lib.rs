//! Stream-to-path schedulers for multipath QUIC: where each stream's bytes go.
//!
//! A multipath transport feeds a [`Scheduler`] stream events (opened with an urgency and a size
//! if known, data queued, finished, closed) and path events (added, estimates updated, removed),
//! and asks it, whenever a path has congestion-window room, "which stream, how many bytes?"
//! ([`Scheduler::poll_send`]). Schedulers never do I/O and never read the clock: `now` is
//! passed in, so everything here is deterministic and testable in microseconds.
//!
//! The schedulers, each selectable by name through [`SchedulerKind`]:
//! - [`PriorityBucket`] (`priority-bucket`): splits every stream over the paths so that all its
//!   parts finish together ([`allocate`]) and sends each path's share from strict priority
//!   buckets, so the objects a browser needs to paint first arrive first;
//!   `priority-bucket-paper` is the same scheduler configured as the paper publishes it
//!   ([`PriorityBucketConfig::paper`]), for ablation.
//! - Baselines: [`Lrf`] (`lrf`), [`SaEcf`] (`sa-ecf`), [`WeightedRoundRobin`] (`wrr`),
//!   [`StreamEarliestCompletion`] (`sec`) and [`RoundRobin`] (`round-robin`).
//!
//! # Example
//!
//! Two paths like the PriorityBucket paper's high-heterogeneity scenario, a 10 kB critical
//! document and a 100 kB image: the document goes first, all on the path that finishes it
//! soonest.
//!
//! ```
//! use std::time::{Duration, Instant};
//! use mpquic_sched::{Bandwidth, PathId, PathSnapshot, SchedulerKind, StreamId, StreamMeta, Urgency};
//!
//! let now = Instant::now(); // the caller's clock; the scheduler never reads one
//! let mut scheduler = "priority-bucket".parse::<SchedulerKind>()?.build();
//! let wifi = PathSnapshot::new(PathId(0), Duration::from_millis(10), Bandwidth::from_bits_per_sec(10e6)?, 15_000);
//! let lte = PathSnapshot::new(PathId(1), Duration::from_millis(50), Bandwidth::from_bits_per_sec(40e6)?, 15_000);
//! scheduler.on_path_added(now, &wifi)?;
//! scheduler.on_path_added(now, &lte)?;
//!
//! let image = StreamMeta::new(StreamId(4)).with_urgency(Urgency::new(5)?).with_size(100_000);
//! let html = StreamMeta::new(StreamId(0)).with_urgency(Urgency::HIGHEST).with_size(10_000);
//! for meta in [image, html] {
//!     scheduler.on_stream_opened(now, &meta)?;
//!     scheduler.on_data_queued(now, meta.id, meta.size.unwrap_or(0))?;
//!     scheduler.on_stream_finished(now, meta.id)?;
//! }
//!
//! let first = scheduler.poll_send(now, wifi.id, wifi.room()).expect("data is queued");
//! assert_eq!((first.stream, first.bytes), (html.id, 10_000));
//! # Ok::<(), mpquic_sched::SchedError>(())
//! ```
//!
//! The [`sim`] module holds what page-load experiments share: the page model and the oracle, a
//! fluid lower bound of the first rendering and page load times.
//! The [`meh`] module picks how many paths or subflows a page load opens (\[MEH\], Qian et al.).
//! [`Recording`] wraps any scheduler and logs the stream metadata it is told and its grants.

mod baseline;
mod drift;
mod error;
mod kind;
mod lrf;
pub mod meh;
mod paths;
mod priority_bucket;
mod recording;
mod round_robin;
mod sa_ecf;
mod scheduler;
mod sec;
pub mod sim;
mod streams;
mod types;
mod wrr;

pub use error::SchedError;
pub use kind::SchedulerKind;
pub use lrf::{Lrf, LrfConfig};
pub use paths::{PathTable, MAX_PATHS};
pub use priority_bucket::{
    allocate, allocate_two, AllocPath, Allocation, PriorityBucket, PriorityBucketConfig,
};
pub use recording::{RecordLog, Recorded, Recording};
pub use round_robin::{RoundRobin, RoundRobinConfig};
pub use sa_ecf::{SaEcf, SaEcfConfig};
pub use scheduler::{Reinjection, Scheduler};
pub use sec::{
    split_stream, wrr_completion, FluidCompletion, FluidStream, SecConfig, SecDelay, SplitPath,
    StreamEarliestCompletion,
};
pub use streams::{StreamState, StreamTable};
pub use types::{
    Bandwidth, Grant, Lead, PathId, PathSet, PathSnapshot, PathStatus, Priority, StreamId,
    StreamMeta, Urgency,
};
pub use wrr::{WeightedRoundRobin, WrrConfig};
