//! When the newest stream bytes arrived, so that a second copy of them (a re-injection or the
//! original it raced) can be timed against the first: how much sooner the data was there
//! because it went twice.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Arrivals remembered per connection. A fixed number, not a time span, bounds the memory
/// (40 bytes each); contiguous arrivals of one stream share an entry, so at a few hundred
/// chunks per second this reaches back further than a path's probe timeout.
const KEPT: usize = 1024;

/// Contiguous bytes of a stream that arrive within this of an entry's first byte extend it.
/// The lead of a later copy is then measured from the entry's start: too long by at most this.
const JOIN_WITHIN: Duration = Duration::from_millis(2);

#[derive(Debug, Clone, Copy)]
struct Arrival {
    stream: u64,
    start: u64,
    end: u64,
    at: Instant,
}

/// The connection's recent first arrivals of stream bytes.
#[derive(Debug, Default)]
pub(crate) struct ArrivalLog {
    recent: VecDeque<Arrival>,
}

impl ArrivalLog {
    /// `stream`'s bytes `start..end` arrived for the first time at `now`.
    pub(crate) fn record(&mut self, stream: u64, start: u64, end: u64, now: Instant) {
        if let Some(last) = self.recent.back_mut() {
            let joins = last.stream == stream
                && last.end == start
                && now.saturating_duration_since(last.at) <= JOIN_WITHIN;
            if joins {
                last.end = end;
                return;
            }
        }
        if self.recent.len() == KEPT {
            self.recent.pop_front();
        }
        self.recent.push_back(Arrival {
            stream,
            start,
            end,
            at: now,
        });
    }

    /// A second copy of `stream`'s bytes `start..end` arrived at `now`: how long after the
    /// first, if the first is still remembered (the newest overlapping arrival counts).
    pub(crate) fn lead(&self, stream: u64, start: u64, end: u64, now: Instant) -> Option<Duration> {
        self.recent
            .iter()
            .rev()
            .find(|a| a.stream == stream && a.start < end && start < a.end)
            .map(|a| now.saturating_duration_since(a.at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_copy_is_timed_against_the_first() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut log = ArrivalLog::default();
        log.record(4, 0, 1000, t0);
        // Contiguous and soon after: the same entry.
        log.record(4, 1000, 2000, t0 + ms(1));
        log.record(8, 0, 500, t0 + ms(1));
        // Contiguous but late: an entry of its own.
        log.record(4, 2000, 3000, t0 + ms(30));
        assert_eq!(log.lead(4, 1500, 1600, t0 + ms(40)), Some(ms(40)));
        assert_eq!(log.lead(4, 2500, 2600, t0 + ms(40)), Some(ms(10)));
        assert_eq!(log.lead(8, 0, 10, t0 + ms(5)), Some(ms(4)));
        assert_eq!(log.lead(4, 3000, 3100, t0 + ms(40)), None);
    }

    #[test]
    fn it_keeps_a_bounded_number_of_arrivals() {
        let t0 = Instant::now();
        let mut log = ArrivalLog::default();
        for stream in 0..(KEPT as u64 + 10) {
            log.record(stream, 0, 10, t0);
        }
        assert_eq!(log.recent.len(), KEPT);
        assert_eq!(log.lead(0, 0, 10, t0), None);
        assert!(log.lead(KEPT as u64, 0, 10, t0).is_some());
    }
}
