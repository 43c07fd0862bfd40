//! Stream-to-path schedulers for multipath QUIC.
//!
//! TODO crate doc (written with PriorityBucket).

pub mod baseline;
mod error;
mod kind;
mod lrf;
mod paths;
mod priority_bucket;
mod round_robin;
mod sa_ecf;
mod scheduler;
mod sec;
mod streams;
mod types;
mod wrr;

pub use error::SchedError;
pub use kind::SchedulerKind;
pub use lrf::Lrf;
pub use paths::{PathTable, MAX_PATHS};
pub use priority_bucket::{
    allocate, allocate_two, AllocPath, Allocation, PriorityBucket, PriorityBucketConfig,
};
pub use round_robin::RoundRobin;
pub use sa_ecf::SaEcf;
pub use scheduler::Scheduler;
pub use sec::StreamEarliestCompletion;
pub use streams::{StreamState, StreamTable};
pub use types::{
    Bandwidth, Grant, PathId, PathSnapshot, PathStatus, StreamId, StreamMeta, Urgency,
};
pub use wrr::WeightedRoundRobin;
