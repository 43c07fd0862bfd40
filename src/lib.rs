//! mpquic: multipath QUIC on top of quinn, whose point is *where each stream's bytes go*.
//!
//! This facade re-exports the workspace's crates so an application needs one dependency:
//! - [`sched`]: the [`Scheduler`](sched::Scheduler) contract, PriorityBucket and the baseline
//!   schedulers, and a deterministic simulator;
//! - [`estimate`]: the RTT, one-way delay and bandwidth estimators the schedulers are fed from;
//! - at the top level, the transport of [`mpquic_core`]: [`Endpoint`], [`Connection`],
//!   [`SendStream`], [`RecvStream`] and [`Config`], one logical connection over several paths,
//!   and in [`h3`] the `h3` crate's QUIC traits over it;
//! - [`h3_prio`]: RFC 9218 priorities, default urgencies by resource type, critical objects.
//!
//! HTTP/3 priorities and the testbed are separate crates of the workspace; see the README.
//!
//! # Example
//!
//! How PriorityBucket splits a 1 MB stream over a 10 Mbit/s path with 5 ms one-way delay and a
//! 40 Mbit/s path with 25 ms: so that both parts arrive at the same moment.
//!
//! ```
//! use std::time::Duration;
//! use mpquic::sched::{allocate, AllocPath, Bandwidth};
//!
//! let path = |owd_ms, mbit: f64| -> Result<AllocPath, mpquic::sched::SchedError> {
//!     Ok(AllocPath {
//!         one_way_delay: Duration::from_millis(owd_ms),
//!         bandwidth: Bandwidth::from_bits_per_sec(mbit * 1e6)?,
//!         queued: 0,
//!     })
//! };
//! let paths = [path(5, 10.0)?, path(25, 40.0)?];
//! let mut shares = [0; 2];
//! let allocation = allocate(&paths, 1_000_000, &mut shares)?;
//! assert_eq!(shares, [220_000, 780_000]);
//! assert!((allocation.finish - 0.181).abs() < 1e-9); // seconds until the last byte arrives
//! # Ok::<(), mpquic::sched::SchedError>(())
//! ```

pub use mpquic_core::*;
pub use mpquic_estimate as estimate;
pub use mpquic_h3_prio as h3_prio;
pub use mpquic_sched as sched;
