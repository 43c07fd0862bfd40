//! Data acks and delivery reports waiting to be sent, held briefly so that they go out together.
//!
//! A receiver's data ack tells the sender which bytes of a stream arrived in order, so that it
//! can free them (they stay buffered for re-sending on another path until then). Sent for
//! every packet that grows a stream's in-order prefix, they made the receiver send an
//! ack-eliciting packet for nearly every data packet, each of which the sender's quinn
//! acknowledges in turn. Held for [`DATA_ACK_DELAY`], they go out a few hundred times a second
//! at most (20 MB bulk transfers on the testbed gained about 0.1 point of the summed path rates).
//! A stream's completion is not held: the sender forgets the stream on it.
//!
//! Delivery reports (each path's received bytes, see
//! [`Frame::PathReceived`](crate::wire::Frame::PathReceived)) share the timer: data arriving on
//! any path starts it, whether or not a stream's in-order prefix grew (on a slow path the prefix
//! can stall behind a chunk still in the sender's buffer, and the reports must not).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Longest a data ack waits for others. Far below anything the sender waits on: its send
/// buffer holds megabytes, and path failure is judged by quinn's own acknowledgements.
pub(crate) const DATA_ACK_DELAY: Duration = Duration::from_millis(5);

/// Per stream, the in-order end to acknowledge and whether the stream is complete.
#[derive(Debug, Default)]
pub(crate) struct PendingAcks {
    acks: BTreeMap<u64, (u64, bool)>,
    /// When the oldest held ack was queued.
    since: Option<Instant>,
    /// Data arrived since the last flush: delivery reports are due with it.
    arrivals: bool,
}

impl PendingAcks {
    /// Queues (or replaces) the ack of `stream`.
    pub(crate) fn insert(&mut self, stream: u64, end: u64, complete: bool, now: Instant) {
        self.acks.insert(stream, (end, complete));
        self.start(now);
    }

    /// Data arrived on some path: delivery reports are due with the next flush.
    pub(crate) fn note_arrival(&mut self, now: Instant) {
        self.arrivals = true;
        self.start(now);
    }

    fn start(&mut self, now: Instant) {
        if self.since.is_none() {
            self.since = Some(now);
        }
    }

    /// When the held acks must go out: at once if a stream completed, else [`DATA_ACK_DELAY`]
    /// after the oldest; `None` if none is held.
    pub(crate) fn due(&self) -> Option<Instant> {
        let since = self.since?;
        if self.acks.values().any(|&(_, complete)| complete) {
            Some(since)
        } else {
            Some(since + DATA_ACK_DELAY)
        }
    }

    /// Takes every held ack, due or not, and whether data arrived since the last take.
    pub(crate) fn take(&mut self) -> (BTreeMap<u64, (u64, bool)>, bool) {
        self.since = None;
        (
            std::mem::take(&mut self.acks),
            std::mem::take(&mut self.arrivals),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_until_the_delay_from_the_oldest() {
        let t0 = Instant::now();
        let mut acks = PendingAcks::default();
        assert_eq!(acks.due(), None);
        acks.insert(0, 1200, false, t0);
        acks.insert(0, 2400, false, t0 + Duration::from_millis(3));
        acks.insert(4, 100, false, t0 + Duration::from_millis(4));
        assert_eq!(acks.due(), Some(t0 + DATA_ACK_DELAY));
        let (taken, arrivals) = acks.take();
        assert!(!arrivals, "no data arrival was noted");
        assert_eq!(
            taken.get(&0),
            Some(&(2400, false)),
            "the latest ack of a stream wins"
        );
        assert_eq!(taken.len(), 2);
        assert_eq!(acks.due(), None);
    }

    #[test]
    fn a_completed_stream_is_due_at_once() {
        let t0 = Instant::now();
        let mut acks = PendingAcks::default();
        acks.insert(0, 1200, false, t0);
        acks.insert(8, 500, true, t0 + Duration::from_millis(1));
        assert_eq!(acks.due(), Some(t0));
    }

    #[test]
    fn an_arrival_without_an_ack_starts_the_timer_for_the_reports() {
        let t0 = Instant::now();
        let mut acks = PendingAcks::default();
        acks.note_arrival(t0);
        acks.insert(0, 1200, false, t0 + Duration::from_millis(2));
        assert_eq!(acks.due(), Some(t0 + DATA_ACK_DELAY));
        assert!(acks.take().1);
        assert!(!acks.take().1, "taken once");
    }
}
