//! Scenario presets from the papers: per-path rate, one-way delay and random loss.
//!
//! The table is transport-agnostic on purpose: the simulator (`mpquic_replay::sim`) and the
//! netns testbed turn the same row into links, and the oracle (`mpquic_sched::sim`) into its
//! paths, so all of them measure the same thing under the same name.
//!
//! Conversions made from the papers' numbers:
//! - \[PB\] Table 2 gives round-trip times, so the one-way delay here is half of them.
//! - \[SEC\] Table 1 gives one-way delays ("OWD") directly, and its lossy rows use a 2% packet
//!   loss rate ("2% PLR"), the same as \[PB\].
//! - \[FLD\] reports Netradar's effective LTE figures as "25 Mbps and delay is 13 ms" and states
//!   "The one-way delay for 13 ms was used in our LTE setup that makes the RTT at least 26 ms";
//!   its 3G figures ("7 Mbps and 25 ms") are given in the same sentence, so 25 ms is read as
//!   one-way too.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::error::UnknownScenario;

/// One path of a scenario, as an emulated link sees it in each direction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PathSpec {
    /// Bottleneck rate in bits per second.
    pub rate_bps: u64,
    /// One-way propagation delay (the round-trip time is twice this).
    pub one_way_delay: Duration,
    /// Probability that a data packet is lost at random, 0.0..=1.0.
    pub drop_rate: f64,
}

impl PathSpec {
    /// A lossless path.
    pub const fn new(rate_bps: u64, one_way_delay: Duration) -> Self {
        Self {
            rate_bps,
            one_way_delay,
            drop_rate: 0.0,
        }
    }

    /// The same path with random loss.
    pub const fn lossy(self, drop_rate: f64) -> Self {
        Self { drop_rate, ..self }
    }

    /// The bandwidth-delay product over the round trip, in bytes.
    pub fn bdp_bytes(&self) -> u64 {
        bdp_bytes(self.rate_bps, self.one_way_delay)
    }

    /// The default drop-tail queue for this path: see [`default_queue_bytes`].
    pub fn default_queue_bytes(&self) -> u64 {
        default_queue_bytes(self.rate_bps, self.one_way_delay)
    }
}

/// Smallest default bottleneck queue: 64 kB, so that slow paths (whose BDP is a few packets)
/// still absorb an initial window of ten packets and a few round trips of slow start.
pub const MIN_QUEUE_BYTES: u64 = 64 * 1024;

/// The bandwidth-delay product of a path over its round trip (twice `one_way_delay`), in bytes.
pub fn bdp_bytes(rate_bps: u64, one_way_delay: Duration) -> u64 {
    // Saturating: u64::MAX bit/s over ~10^10 s of delay overflows even u128.
    let bits = u128::from(rate_bps)
        .saturating_mul(one_way_delay.as_nanos())
        .saturating_mul(2)
        / 1_000_000_000;
    u64::try_from(bits / 8).unwrap_or(u64::MAX)
}

/// The default drop-tail queue: one bandwidth-delay product (the classic rule of thumb for a
/// single flow to keep the link busy across a halving), at least [`MIN_QUEUE_BYTES`].
pub fn default_queue_bytes(rate_bps: u64, one_way_delay: Duration) -> u64 {
    bdp_bytes(rate_bps, one_way_delay).max(MIN_QUEUE_BYTES)
}

/// A named set of paths from a paper, selectable by name.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scenario {
    /// The name it is selected by, e.g. `pb-high`.
    pub name: &'static str,
    /// The paths, path 0 first.
    pub paths: &'static [PathSpec],
    /// Where the numbers come from.
    pub source: &'static str,
}

const fn ms(value: u64) -> Duration {
    Duration::from_millis(value)
}

const MBIT: u64 = 1_000_000;

// [PB] Table 2: "Low: 25Mbps, 10ms, 0 | 25Mbps, 10ms, 0" (RTT), so 5 ms one way.
const PB_LOW: PathSpec = PathSpec::new(25 * MBIT, ms(5));
// [PB] Table 2: "High: 10Mbps, 10ms, 0 | 40Mbps, 50ms, 0" (RTT).
const PB_HIGH_1: PathSpec = PathSpec::new(10 * MBIT, ms(5));
const PB_HIGH_2: PathSpec = PathSpec::new(40 * MBIT, ms(25));
// [SEC] Table 1: "Low: 5 Mbps Bandwidth, 10 ms OWD, 0 PLR" on both paths.
const SEC_LOW: PathSpec = PathSpec::new(5 * MBIT, ms(10));
// [SEC] Table 1: "High: 3 Mbps Bandwidth, 10ms OWD, 0 PLR | 7 Mbps Bandwidth, 50 ms OWD, 0 PLR".
const SEC_HIGH_1: PathSpec = PathSpec::new(3 * MBIT, ms(10));
const SEC_HIGH_2: PathSpec = PathSpec::new(7 * MBIT, ms(50));
// [FLD] section 4 (Netradar): LTE "25 Mbps and delay is 13 ms", 3G "7 Mbps and 25 ms".
const FLD_LTE: PathSpec = PathSpec::new(25 * MBIT, ms(13));
const FLD_3G: PathSpec = PathSpec::new(7 * MBIT, ms(25));
// [PB] Table 2 and [SEC] Table 1 lossy rows: "2%" / "2% PLR" on every path.
const LOSS: f64 = 0.02;

impl Scenario {
    /// Every preset, in the order of the design's scenario table.
    pub const ALL: &'static [Scenario] = &[
        Scenario {
            name: "pb-low",
            paths: &[PB_LOW, PB_LOW],
            source: "[PB] Table 2, Low",
        },
        Scenario {
            name: "pb-low-lossy",
            paths: &[PB_LOW.lossy(LOSS), PB_LOW.lossy(LOSS)],
            source: "[PB] Table 2, Low and Lossy",
        },
        Scenario {
            name: "pb-high",
            paths: &[PB_HIGH_1, PB_HIGH_2],
            source: "[PB] Table 2, High",
        },
        Scenario {
            name: "pb-high-lossy",
            paths: &[PB_HIGH_1.lossy(LOSS), PB_HIGH_2.lossy(LOSS)],
            source: "[PB] Table 2, High and Lossy",
        },
        Scenario {
            name: "sec-low",
            paths: &[SEC_LOW, SEC_LOW],
            source: "[SEC] Table 1, Low",
        },
        Scenario {
            name: "sec-low-lossy",
            paths: &[SEC_LOW.lossy(LOSS), SEC_LOW.lossy(LOSS)],
            source: "[SEC] Table 1, Low and Lossy",
        },
        Scenario {
            name: "sec-high",
            paths: &[SEC_HIGH_1, SEC_HIGH_2],
            source: "[SEC] Table 1, High",
        },
        Scenario {
            name: "sec-high-lossy",
            paths: &[SEC_HIGH_1.lossy(LOSS), SEC_HIGH_2.lossy(LOSS)],
            source: "[SEC] Table 1, High and Lossy",
        },
        Scenario {
            name: "lte",
            paths: &[FLD_LTE, FLD_3G],
            source: "[FLD] section 4, Netradar LTE and 3G",
        },
    ];

    /// The preset called `name`.
    pub fn by_name(name: &str) -> Result<&'static Scenario, UnknownScenario> {
        Self::ALL
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| UnknownScenario {
                name: name.to_owned(),
                known: Self::names().collect::<Vec<_>>().join(", "),
            })
    }

    /// Every preset's name.
    pub fn names() -> impl Iterator<Item = &'static str> {
        Self::ALL.iter().map(|s| s.name)
    }
}

impl fmt::Display for Scenario {
    /// `pb-high: 10 Mbit/s 5 ms 0% | 40 Mbit/s 25 ms 0% ([PB] Table 2, High)`; delays one-way.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.name)?;
        for (i, p) in self.paths.iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(
                f,
                "{} Mbit/s {} ms {}%",
                p.rate_bps as f64 / 1e6,
                p.one_way_delay.as_secs_f64() * 1e3,
                p.drop_rate * 100.0
            )?;
        }
        write!(f, " ({}; delays one-way)", self.source)
    }
}

impl FromStr for Scenario {
    type Err = UnknownScenario;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::by_name(name).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_round_trips_and_is_unique() {
        for s in Scenario::ALL {
            assert_eq!(s.name.parse::<Scenario>().as_ref(), Ok(s));
            assert_eq!(Scenario::names().filter(|n| *n == s.name).count(), 1);
            assert!(!s.paths.is_empty());
        }
        assert_eq!(Scenario::ALL.len(), 9);
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let err = "pb-medium".parse::<Scenario>().unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("pb-medium") && text.contains("pb-high-lossy") && text.contains("lte")
        );
    }

    #[test]
    fn pb_high_matches_the_paper_in_round_trips() {
        let s = Scenario::by_name("pb-high").unwrap();
        assert_eq!(s.paths[0].one_way_delay * 2, ms(10));
        assert_eq!(s.paths[1].one_way_delay * 2, ms(50));
        assert_eq!(s.paths[1].rate_bps, 40_000_000);
        // 40 Mbit/s over 50 ms is 250 kB; 10 Mbit/s over 10 ms is below the 64 kB floor.
        assert_eq!(s.paths[1].default_queue_bytes(), 250_000);
        assert_eq!(s.paths[0].default_queue_bytes(), MIN_QUEUE_BYTES);
    }

    #[test]
    fn bdp_saturates_instead_of_overflowing() {
        assert_eq!(bdp_bytes(u64::MAX, Duration::MAX), u64::MAX);
        // 8 Mbit/s = 1 MB/s over a 10 ms one-way delay (20 ms round trip).
        assert_eq!(bdp_bytes(8_000_000, ms(10)), 20_000);
        assert_eq!(default_queue_bytes(8_000_000, ms(10)), MIN_QUEUE_BYTES);
    }

    #[test]
    fn lossy_rows_lose_two_percent_and_differ_from_their_base_only_there() {
        for (base, lossy) in [
            ("pb-low", "pb-low-lossy"),
            ("pb-high", "pb-high-lossy"),
            ("sec-low", "sec-low-lossy"),
            ("sec-high", "sec-high-lossy"),
        ] {
            let base = Scenario::by_name(base).unwrap();
            let lossy = Scenario::by_name(lossy).unwrap();
            for (b, l) in base.paths.iter().zip(lossy.paths) {
                assert_eq!(b.drop_rate, 0.0);
                assert_eq!(*l, b.lossy(0.02));
            }
        }
    }
}
