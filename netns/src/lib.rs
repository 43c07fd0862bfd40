//! The mpquic testbed: emulated multipath links with the papers' rates, delays, losses and
//! queues, so that every measurement comes from real UDP packets crossing them.
//!
//! The kernel the project runs on has no netem, so the links are emulated in user space by the
//! pure, deterministic link model of [`mpquic_scenario`] ([`mpquic_scenario::link::Link`]: rate
//! or Mahimahi trace, one-way delay, Bernoulli or Gilbert-Elliott loss, drop-tail queue in
//! bytes, timed events), which the simulator shares. The I/O shell around it is a per-path UDP
//! [`relay`] on loopback, which needs no root ([`loopback::LoopbackTestbed`]); [`probe`]
//! measures a path from its two ends (RTT, goodput, loss per direction) against what was
//! configured. Scenario presets are the simulator's ([`mpquic_scenario::Scenario`]), so a
//! preset name means the same paths everywhere. With root, [`topology::Topology`] joins a
//! client and a server network namespace by one pair of TUN devices per path, with the same
//! links in between, so real kernels' UDP and TCP cross them.
//!
//! # Example
//!
//! The PriorityBucket paper's high-heterogeneity scenario relayed on loopback: its first path is
//! 5 ms each way, so no echo probe comes back sooner than 10 ms.
//!
//! ```
//! use std::time::Duration;
//! use mpquic_netns::loopback::LoopbackTestbed;
//! use mpquic_scenario::Scenario;
//!
//! let testbed = LoopbackTestbed::start(Scenario::by_name("pb-high")?)?;
//! let rtt = testbed.prober(0)?.rtt(3, 64)?;
//! assert!(rtt.samples > 0 && rtt.min >= Duration::from_millis(10));
//! # Ok::<(), mpquic_netns::error::NetnsError>(())
//! ```

mod direction;
pub mod error;
pub mod loopback;
pub mod probe;
pub mod pump;
pub mod relay;
pub mod topology;
pub mod trace_file;
pub mod tun;
