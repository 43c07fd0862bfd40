//! The mpquic testbed: emulated multipath links with the papers' rates, delays, losses and
//! queues, so that every measurement comes from real UDP packets crossing them.
//!
//! The kernel the project runs on has no netem, so the links are emulated in user space by a
//! pure, deterministic model ([`link::Link`]: rate or Mahimahi [`trace`], one-way delay,
//! Bernoulli or Gilbert-Elliott loss, drop-tail queue in bytes, timed [`events`]). The I/O
//! shell around it is a per-path UDP [`relay`] on loopback, which needs no root
//! ([`loopback::LoopbackTestbed`]); [`probe`] measures a path from its two ends (RTT, goodput,
//! loss per direction) against what was configured. Scenario presets are the simulator's
//! ([`mpquic_scenario::Scenario`]), so a preset name means the same paths everywhere. With
//! root, [`topology::Topology`] joins a client and a server network namespace by one pair of
//! TUN devices per path, with the same links in between, so real kernels' UDP and TCP cross
//! them.
//!
//! # Example
//!
//! The 10 Mbit/s, 5 ms path of the PriorityBucket paper's high-heterogeneity scenario: a
//! full-size packet takes 1.2 ms to serialize and 5 ms to propagate; the link goes down at 2 s.
//!
//! ```
//! use std::time::Duration;
//! use mpquic_netns::events::TimedEvent;
//! use mpquic_netns::link::{DropReason, Link, LinkConfig, Verdict};
//!
//! let mut config = LinkConfig::new(10_000_000, Duration::from_millis(5));
//! config.events.push(TimedEvent::parse("2s down")?);
//! let mut link = Link::new(config)?;
//!
//! let ms = Duration::from_millis;
//! assert_eq!(link.offer(ms(0), 1500), Verdict::Deliver(Duration::from_micros(6_200)));
//! // Behind it in the queue: its serialization starts when the first one's ends.
//! assert_eq!(link.offer(ms(0), 1500), Verdict::Deliver(Duration::from_micros(7_400)));
//! assert_eq!(link.offer(ms(2_500), 1500), Verdict::Dropped(DropReason::Down));
//! # Ok::<(), mpquic_netns::error::NetnsError>(())
//! ```

mod direction;
pub mod error;
pub mod events;
pub mod link;
pub mod loopback;
pub mod probe;
pub mod pump;
pub mod relay;
pub mod topology;
pub mod trace;
pub mod tun;
