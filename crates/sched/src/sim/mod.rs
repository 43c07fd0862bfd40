//! A deterministic packet-level simulator that drives any [`Scheduler`](crate::Scheduler) over
//! a web page load, and an oracle lower bound to judge it against.
//!
//! It makes scheduler behaviour testable in milliseconds: n paths with a rate, a one-way delay,
//! seeded random loss and a drop-tail queue; per-path NewReno (or Cubic) windows with ack
//! clocking, quinn's pacing and RFC 9002 loss detection; the estimate crate's RTT, one-way delay and bandwidth
//! estimators feeding the scheduler's path snapshots, starting from the configured values as
//! priors ("prior knowledge on creating a path", \[PB\] section 4.1). It complements the real
//! transport on emulated links; it never stands in for it in a reported result.
//!
//! - [`SimConfig`] and [`PathConfig`]: the knobs (`set_rate`, `set_delay`, `set_drop_rate`,
//!   `set_queue`, seed, MTU, congestion controller, pacing, limits).
//! - [`Scenario`]: the papers' path presets by name (`pb-high`, `sec-low-lossy`, `lte`, ...).
//! - [`Page`], [`Object`], [`Start`]: what is loaded, with the builtin `bing-2013` and
//!   `youtube-2013`.
//! - [`simulate`]: one run, giving a [`PageResult`] (FRT, PLT, per-object and per-path figures).
//! - [`oracle`]: the lower bounds, and why they are lower bounds.
//! - [`compare`]: every scheduler over one page, rendered as the FRT/PLT table.
//!
//! Determinism: the same configuration (seed included), page and scheduler give the same
//! result, bit for bit. Each path draws its losses from its own ChaCha8 stream of the seed.
//!
//! The FRT/PLT tables of the builtin pages on the \[PB\] scenarios are snapshot-tested against
//! `src/sim/snapshots/tables.txt` (paced, the default) and `tables-unpaced.txt` (pacing off),
//! so a change that moves them is seen in review. When a change is meant to move them,
//! regenerate the files with
//! `UPDATE_SNAPSHOTS=1 cargo test -p mpquic-sched --lib sim::tests::tables_match` (or only the
//! paced one with `sim::tests::tables_match_the_snapshot`) and commit them with the change.
//!
//! # Example
//! ```
//! use mpquic_sched::sim::{compare, Page, Scenario, SimConfig};
//! use mpquic_sched::SchedulerKind;
//!
//! let mut config = SimConfig::from_scenario(Scenario::by_name("pb-high-lossy")?);
//! config.set_seed(7);
//! let page = Page::builtin("youtube-2013")?;
//! let table = compare(&config, &page, &[SchedulerKind::Lrf, SchedulerKind::RoundRobin])?;
//! for row in &table.rows {
//!     let result = row.result.as_ref().expect("lrf and round-robin are implemented");
//!     assert!(result.plt >= table.oracle.plt);
//! }
//! println!("{}", table.render_table());
//! # Ok::<(), mpquic_sched::sim::SimError>(())
//! ```

mod builtin;
mod config;
mod congestion;
mod engine;
mod error;
mod events;
mod link;
mod oracle;
mod pacing;
mod packet;
mod page;
mod path;
mod report;
mod result;
mod scenario;
#[cfg(test)]
mod tests;

pub use config::{Congestion, PathConfig, SimConfig};
pub use engine::simulate;
pub use error::SimError;
pub use oracle::{oracle, OracleBound};
pub use page::{Object, Page, Start, MAX_OBJECTS, MAX_OBJECT_BYTES};
pub use report::{compare, reduction, Comparison, Row, BASELINE};
pub use result::{ObjectResult, PageResult, PathStats};
pub use scenario::{bdp_bytes, default_queue_bytes, PathSpec, Scenario, MIN_QUEUE_BYTES};
