//! Per-path estimators for multipath QUIC schedulers: round-trip time (RFC 6298 EWMA and min RTT),
//! one-way delay, and BBR-style bottleneck bandwidth.
//!
//! Every estimator starts from a configurable prior, the "initial values of RTT and bandwidth based
//! on prior knowledge on creating a path" of PriorityBucket (\[PB\] section 4.1), and refines it with
//! samples. The crate has no I/O and never reads a clock: every call that needs the time takes it
//! as an argument, so the estimators are deterministic and can be driven by a simulator. No input
//! makes them panic.
//!
//! - [`RttEstimator`]: smoothed RTT, RTT variation and RTO after RFC 6298, plus the minimum RTT.
//! - [`OneWayDelay`]: a measured one-way delay, or half the minimum RTT.
//! - [`BandwidthEstimator`]: delivery-rate samples per acknowledged packet and their windowed
//!   maximum over about ten round trips, with app-limited samples unable to lower it.
//!
//! # Example
//! ```
//! use std::time::{Duration, Instant};
//! use mpquic_estimate::{
//!     BandwidthConfig, BandwidthEstimator, OneWayDelay, RttConfig, RttEstimator,
//! };
//!
//! # fn main() -> Result<(), mpquic_estimate::EstimateError> {
//! let mut rtt = RttEstimator::new(RttConfig::default())?;
//! // A cautious prior of 100 kB/s for a path we know little about.
//! let prior = BandwidthConfig { initial_bandwidth: 100_000.0, ..BandwidthConfig::default() };
//! let mut bw = BandwidthEstimator::new(prior)?;
//! let owd = OneWayDelay::default();
//! // Before any sample the priors answer.
//! assert_eq!(rtt.srtt(), Duration::from_millis(100));
//! assert_eq!(bw.bandwidth(), 100_000.0);
//!
//! // A path with a 20 ms RTT: ten packets of 1200 bytes leave 1 ms apart...
//! // The caller owns the clock: one reading here, then offsets from it.
//! let start = Instant::now();
//! let mut in_flight = 0;
//! let mut sent = Vec::new();
//! for i in 0..10 {
//!     let now = start + Duration::from_millis(i);
//!     sent.push((now, bw.on_packet_sent(now, 1200, in_flight, false)));
//!     in_flight += 1200;
//! }
//! // ...and are acknowledged one RTT later.
//! for (sent_at, state) in &sent {
//!     let now = *sent_at + Duration::from_millis(20);
//!     rtt.on_sample(now - *sent_at);
//!     if let Some(sample) = bw.on_packet_acked(now, state, 1200) {
//!         println!("sample: {:.0} B/s over {:?}", sample.delivery_rate, sample.interval);
//!     }
//!     in_flight -= 1200;
//! }
//! println!(
//!     "srtt {:?}, rttvar {:?}, min {:?}, rto {:?}, one-way {:?}, bandwidth {:.0} B/s",
//!     rtt.srtt(),
//!     rtt.rttvar(),
//!     rtt.min_rtt(),
//!     rtt.rto(),
//!     owd.estimate(&rtt),
//!     bw.bandwidth(),
//! );
//! assert_eq!(rtt.srtt(), Duration::from_millis(20));
//! assert_eq!(owd.estimate(&rtt), Duration::from_millis(10));
//! // The last packet saw 12,000 bytes delivered over 29 ms (sent 9 ms after the first, acked
//! // 20 ms later): about 414 kB/s, the best sample so far and above the prior, which is a
//! // sample of round 0 in the same window.
//! assert!((bw.bandwidth() - 12_000.0 / 0.029).abs() < 1.0);
//! assert_eq!(bw.round_count(), 1);
//! # Ok(())
//! # }
//! ```

mod bandwidth;
mod error;
mod max_filter;
mod one_way;
mod rtt;

pub use bandwidth::{BandwidthConfig, BandwidthEstimator, RateSample, SentPacketState};
pub use error::EstimateError;
pub use one_way::OneWayDelay;
pub use rtt::{RttConfig, RttEstimator};
