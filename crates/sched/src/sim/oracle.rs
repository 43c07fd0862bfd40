//! A lower bound on the first rendering time and the page load time of a page over given
//! paths, that no scheduler (and no congestion controller) can beat on links of those rates
//! and delays.
//!
//! # The bound
//!
//! Path i delivers at most `b_i` bytes per second (its rate) and every byte spends at least
//! its one-way delay `o_i` in flight. Write `cap(t) = sum_i b_i * max(0, t - o_i)`: the most bytes
//! the paths together can deliver within `t` of the moment the bytes become available.
//!
//! 1. Release times. The request for object k leaves the client at its start offset, or when
//!    its parent has completed plus the delay. It reaches the server no earlier than
//!    `o_min = min_i o_i` later, whichever path it takes (and even if it is never queued or
//!    lost). So its bytes are available at the server no earlier than
//!    `r_k = start_k + o_min`, where a parent's completion is replaced by the parent's own lower
//!    bound (by induction over the page order, parents first).
//! 2. One object. Its `size_k` bytes must all cross after `r_k`, so it completes no earlier
//!    than `C_k = r_k + cap^-1(size_k)`.
//! 3. A set S of objects (the critical ones for the FRT, all of them for the PLT). For any
//!    threshold r, every object of S released at or after r has all its bytes delivered by the
//!    time S completes, and none of those bytes could leave before r; so S completes no earlier
//!    than `r + cap^-1(bytes of S released at or after r)`. The bound is the maximum over the
//!    release times of S, which includes every `C_k` of S.
//!
//! Using lower bounds of the release times in 3 only removes objects from each threshold's
//! set, which only lowers the bound, so it stays valid.
//!
//! Why no transport can do better: a link (the simulator's, or the testbed's emulated one)
//! serializes at most at its rate and adds at least its delay; each byte must be delivered at
//! least once; headers, slow start, the congestion window, queueing, losses and re-sends,
//! acknowledgement clocking, and a scheduler's waiting only delay bytes or add more of them. The FRT and PLT bounds are each valid on their own, even
//! though no single schedule may reach both; neither is claimed to be tight.
//!
//! # What it leaves out
//!
//! The bound holds for any congestion controller, so it ignores slow start, which dominates
//! short page loads: a fresh path that starts with ten packets of window and at most doubles it
//! per round trip lets the 40 Mbit/s, 50 ms path of `pb-high` deliver a few tens of kB in the
//! first round trips where the fluid pipe counts hundreds. A bound that also capped each
//! path's deliveries by that growth (initial window, window grown by at most the bytes
//! acknowledged, acks a round trip behind, plus the two probe packets a timeout allows) would
//! be far tighter (a rough calculation for `pb-high` / `youtube-2013` with NewReno's start gives
//! about 118 ms FRT and 186 ms PLT instead of 70 and 96), at the price of depending on the
//! controller's start. Read the oracle's row as "no transport could do better",
//! not as "a scheduler could reach this".

use std::time::Duration;

use super::{Page, SimConfig, SimError, Start};

/// The oracle's lower bounds for one page over one set of paths.
#[derive(Debug, Clone, PartialEq)]
pub struct OracleBound {
    /// Per object, in page order: the earliest it could complete on its own.
    pub objects: Vec<Duration>,
    /// Lower bound of the first rendering time (`None` if no object is critical).
    pub frt: Option<Duration>,
    /// Lower bound of the page load time.
    pub plt: Duration,
}

/// The paths as a fluid pipe: rates in bytes per second and delays in seconds, sorted by
/// delay.
struct Fluid {
    paths: Vec<(f64, f64)>,
}

impl Fluid {
    /// The least `t` with `cap(t) >= bytes`.
    fn time_for(&self, bytes: u64) -> f64 {
        let bytes = bytes as f64;
        let (mut rate, mut weighted) = (0.0, 0.0);
        for (i, &(b, o)) in self.paths.iter().enumerate() {
            rate += b;
            weighted += b * o;
            // With paths 0..=i sending: cap(t) = rate * t - weighted.
            let t = (bytes + weighted) / rate;
            match self.paths.get(i + 1) {
                Some(&(_, next)) if t > next => continue,
                _ => return t,
            }
        }
        0.0
    }
}

fn seconds(value: f64) -> Duration {
    // A nanosecond below, so float rounding can never lift the bound above the exact value.
    Duration::try_from_secs_f64(value)
        .unwrap_or(Duration::MAX)
        .saturating_sub(Duration::from_nanos(1))
}

/// The lower bounds of `page` over the paths of `config` (see the module documentation).
pub fn oracle(config: &SimConfig, page: &Page) -> Result<OracleBound, SimError> {
    config.validate()?;
    page.validate()?;
    let mut paths: Vec<(f64, f64)> = config
        .paths()
        .iter()
        .map(|p| (p.bytes_per_sec(), p.delay().as_secs_f64()))
        .collect();
    paths.sort_by(|a, b| a.1.total_cmp(&b.1));
    let request = paths.first().map_or(0.0, |p| p.1);
    let fluid = Fluid { paths };

    let mut release = Vec::with_capacity(page.objects.len());
    let mut complete: Vec<f64> = Vec::with_capacity(page.objects.len());
    for object in &page.objects {
        let start = match object.start {
            Start::At(at) => at.as_secs_f64(),
            // Validated: a parent comes first, so its bound is known.
            Start::After { parent, delay } => {
                complete.get(parent).copied().unwrap_or(0.0) + delay.as_secs_f64()
            }
        };
        let r = start + request;
        release.push(r);
        complete.push(r + fluid.time_for(object.size));
    }

    let set_bound = |member: &dyn Fn(usize) -> bool| -> Option<f64> {
        let members: Vec<usize> = (0..page.objects.len()).filter(|&k| member(k)).collect();
        members
            .iter()
            .map(|&k| {
                let r = release[k];
                let bytes: u64 = members
                    .iter()
                    .filter(|&&j| release[j] >= r)
                    .map(|&j| page.objects[j].size)
                    .sum();
                r + fluid.time_for(bytes)
            })
            .reduce(f64::max)
    };
    let frt = set_bound(&|k| page.objects[k].critical).map(seconds);
    let plt = set_bound(&|_| true).map(seconds).unwrap_or_default();
    Ok(OracleBound {
        objects: complete.into_iter().map(seconds).collect(),
        frt,
        plt,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{Object, PathConfig};

    fn ms(value: f64) -> Duration {
        Duration::from_secs_f64(value / 1e3)
    }

    fn close(a: Duration, b: Duration) -> bool {
        a.abs_diff(b) < Duration::from_micros(1)
    }

    #[test]
    fn one_path_one_object_is_request_plus_transfer_plus_delay() {
        let mut config = SimConfig::new();
        // 8 Mbit/s = 1 MB/s, 10 ms one way.
        config.add_path(PathConfig::new(8_000_000, Duration::from_millis(10)));
        let mut page = Page::new("one");
        page.push(Object::new("a", 100_000));
        let bound = oracle(&config, &page).unwrap();
        assert!(close(bound.plt, ms(10.0 + 100.0 + 10.0)), "{:?}", bound.plt);
        assert_eq!(bound.frt, None);
    }

    #[test]
    fn a_slow_far_path_only_helps_once_the_near_one_has_been_busy_long_enough() {
        let mut config = SimConfig::new();
        config
            .add_path(PathConfig::new(8_000_000, Duration::from_millis(10)))
            .add_path(PathConfig::new(8_000_000, Duration::from_millis(60)));
        // 10 kB: done on the near path 10 ms after release, before the far one delivers.
        let mut small = Page::new("small");
        small.push(Object::new("a", 10_000));
        assert!(close(
            oracle(&config, &small).unwrap().plt,
            ms(10.0 + 10.0 + 10.0)
        ));
        // 150 kB: both paths, t - 10 + t - 60 = 150 ms, so t = 110 ms after release.
        let mut large = Page::new("large");
        large.push(Object::new("a", 150_000));
        assert!(close(
            oracle(&config, &large).unwrap().plt,
            ms(10.0 + 110.0)
        ));
    }

    #[test]
    fn paths_and_pages_it_cannot_bound_are_errors() {
        let mut page = Page::new("one");
        page.push(Object::new("a", 1000));
        assert!(matches!(
            oracle(&SimConfig::new(), &page),
            Err(SimError::InvalidConfig(_))
        ));
        let mut config = SimConfig::new();
        config.add_path(PathConfig::new(0, Duration::from_millis(10)));
        assert!(matches!(
            oracle(&config, &page),
            Err(SimError::InvalidPath { index: 0, .. })
        ));
        config.path_mut(0).unwrap().set_rate(8_000_000);
        assert!(matches!(
            oracle(&config, &Page::new("empty")),
            Err(SimError::InvalidPage { .. })
        ));
        oracle(&config, &page).unwrap();
    }

    #[test]
    fn every_builtin_page_is_bounded_on_every_scenario() {
        for scenario in mpquic_scenario::Scenario::ALL {
            let config = SimConfig::from_scenario(scenario);
            for name in Page::BUILTIN {
                let page = Page::builtin(name).unwrap();
                let bound = oracle(&config, &page).unwrap();
                assert_eq!(bound.objects.len(), page.objects.len());
                // Both pages have critical objects; the PLT waits for every object.
                let frt = bound.frt.unwrap();
                assert!(frt > Duration::ZERO && frt <= bound.plt);
                assert!(bound.objects.iter().all(|&o| o <= bound.plt));
            }
        }
    }

    #[test]
    fn children_wait_for_their_parents_bound_and_sets_add_up() {
        let mut config = SimConfig::new();
        config.add_path(PathConfig::new(8_000_000, Duration::from_millis(10)));
        let mut page = Page::new("tree");
        let html = page.push(Object::new("html", 10_000).with_critical(true));
        let after = Start::After {
            parent: html,
            delay: Duration::from_millis(5),
        };
        page.push(
            Object::new("css", 20_000)
                .with_critical(true)
                .with_start(after),
        );
        page.push(Object::new("img", 50_000).with_start(after));
        let bound = oracle(&config, &page).unwrap();
        // html: 10 + 10 + 10 = 30 ms; children released at 30 + 5 + 10 = 45 ms.
        assert!(close(bound.objects[0], ms(30.0)));
        assert!(close(bound.objects[1], ms(45.0 + 20.0 + 10.0)));
        assert!(close(bound.frt.unwrap(), ms(75.0)));
        // Both children share the path: 70 kB after 45 ms.
        assert!(close(bound.plt, ms(45.0 + 70.0 + 10.0)));
    }
}
