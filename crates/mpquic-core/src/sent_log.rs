//! What a controller remembers about each transmit until it is acknowledged, keyed by send
//! time: quinn's controller callbacks name packets by the time they were sent, not by number.

use std::collections::VecDeque;
use std::time::Instant;

/// Transmits remembered; older ones are forgotten (their acks then find nothing), which bounds
/// memory on a path with a huge window.
const MAX_TRACKED_TRANSMITS: usize = 1 << 16;

/// Per-transmit records, oldest first, bounded.
#[derive(Debug, Clone)]
pub(crate) struct SentLog<T> {
    entries: VecDeque<(Instant, T)>,
}

impl<T> Default for SentLog<T> {
    fn default() -> Self {
        Self {
            entries: VecDeque::new(),
        }
    }
}

impl<T: Copy> SentLog<T> {
    pub(crate) fn push(&mut self, sent: Instant, record: T) {
        if self.entries.len() == MAX_TRACKED_TRANSMITS {
            self.entries.pop_front();
        }
        self.entries.push_back((sent, record));
    }

    /// The record of the transmit that a packet sent at `sent` belonged to.
    ///
    /// quinn reports acks in packet-number order, so sent times only grow: whatever is older
    /// than this packet and still remembered was lost or acked out of order. quinn calls
    /// `on_sent` once per transmit, which with GSO is a batch of packets sharing one send time,
    /// but `on_ack` once per packet: so a transmit's entry serves every packet of it and stays
    /// until a later packet is acked. (Taking the entry at the batch's first ack dropped the rest
    /// from the delivered count: a 40 Mbit/s path was estimated at 17.5.)
    pub(crate) fn acked(&mut self, sent: Instant) -> Option<T> {
        while self.entries.front().is_some_and(|(t, _)| *t < sent) {
            self.entries.pop_front();
        }
        self.entries
            .front()
            .filter(|(t, _)| *t == sent)
            .map(|(_, record)| *record)
    }
}
