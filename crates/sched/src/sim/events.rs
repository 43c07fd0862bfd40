//! The event queue: events ordered by virtual time, ties broken by insertion order, so a run is
//! a pure function of its inputs.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::Duration;

/// Something that happens at an instant of virtual time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Event {
    /// The client sends the request for an object.
    Request(usize),
    /// A request reaches the server.
    RequestArrives(usize),
    /// A data packet reaches the client.
    PacketArrives {
        path: usize,
        packet: u64,
        frames: Vec<usize>,
    },
    /// The acknowledgement of a packet reaches the server.
    AckArrives { path: usize, packet: u64 },
    /// A path's loss-detection timer, valid only while `generation` is the path's current one.
    PathTimer { path: usize, generation: u64 },
    /// A path's pacing bucket is full again, valid only while it is the path's pending one.
    PacingWake { path: usize },
    /// The scheduler asked to be polled again (its `poll_timeout`).
    SchedulerWake,
}

#[derive(Debug)]
struct Entry {
    at: Duration,
    seq: u64,
    event: Event,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    /// Reversed, so the max-heap pops the earliest (then the first inserted) entry.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// A min-queue of events keyed by (time, insertion sequence).
#[derive(Debug, Default)]
pub(super) struct EventQueue {
    heap: BinaryHeap<Entry>,
    next_seq: u64,
}

impl EventQueue {
    pub(super) fn push(&mut self, at: Duration, event: Event) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { at, seq, event });
    }

    /// The time of the earliest event.
    pub(super) fn peek_time(&self) -> Option<Duration> {
        self.heap.peek().map(|e| e.at)
    }

    /// The earliest event if it happens at `at` exactly.
    pub(super) fn pop_at(&mut self, at: Duration) -> Option<Event> {
        if self.peek_time() == Some(at) {
            self.heap.pop().map(|e| e.event)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_insertion_order() {
        let mut q = EventQueue::default();
        let t = Duration::from_millis;
        q.push(t(5), Event::Request(1));
        q.push(t(1), Event::Request(2));
        q.push(t(5), Event::Request(3));
        assert_eq!(q.peek_time(), Some(t(1)));
        assert_eq!(q.pop_at(t(5)), None);
        assert_eq!(q.pop_at(t(1)), Some(Event::Request(2)));
        assert_eq!(q.pop_at(t(5)), Some(Event::Request(1)));
        assert_eq!(q.pop_at(t(5)), Some(Event::Request(3)));
        assert_eq!(q.peek_time(), None);
    }
}
