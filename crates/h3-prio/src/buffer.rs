//! PRIORITY_UPDATE frames that arrive before their request stream.
//!
//! RFC 9218 section 7: "HTTP/3 offers no guaranteed ordering across streams, which could cause
//! the frame to be received earlier than intended. ... Servers SHOULD buffer the most recently
//! received PRIORITY_UPDATE frame and apply it once the referenced stream is opened. Holding
//! PRIORITY_UPDATE frames for each stream requires server resources, which can be bounded by
//! local implementation policy."

use std::collections::VecDeque;

use mpquic_sched::Priority;

use crate::update::PriorityUpdate;

/// Buffered PRIORITY_UPDATEs for request streams that are not open yet, at most
/// [`capacity`](PriorityUpdates::capacity) of them, one per stream.
///
/// # Calling contract
/// When a PRIORITY_UPDATE arrives (decoded and checked with [`PriorityUpdate::decode`] and
/// [`PriorityUpdate::check_limit`]): if its stream is open, apply it to the stream directly;
/// if the stream has been opened and is closed by now, drop it; otherwise
/// [`insert`](PriorityUpdates::insert) it here. When a request stream opens, call
/// [`take`](PriorityUpdates::take): if it returns a priority, that priority overrides the
/// request's `priority` header ("the most recently received PRIORITY_UPDATE frame can be
/// considered as the most up-to-date information that overrides any other signal").
///
/// # Bound
/// A later update for a stream replaces its earlier one (only "the most recently received
/// frame" is kept) and counts as the newest. When the buffer is full and an update for a new
/// stream arrives, the **oldest** buffered update is dropped to make room:
///
/// - the newest frame is the RFC's "most up-to-date information" and, with streams opened in
///   id order, most likely refers to a stream about to open; an update that has waited while
///   `capacity` others arrived most likely refers to a stream the client gave up on;
/// - refusing the newest instead would let stale entries fill the buffer for good;
/// - losing an update only costs that stream its priority signal (it keeps its header's or the
///   default), never correctness.
///
/// With the stream limit checked, an honest client cannot have more updates waiting than it
/// may open streams, so the default [`DEFAULT_CAPACITY`] (128, above quinn's default of 100
/// concurrent bidirectional streams) drops nothing from it. Operations are linear in the
/// number buffered, which the bound keeps small.
#[derive(Debug, Clone)]
pub struct PriorityUpdates {
    /// Oldest first.
    entries: VecDeque<(u64, Priority)>,
    capacity: usize,
    dropped: u64,
}

/// The default bound on buffered updates.
pub const DEFAULT_CAPACITY: usize = 128;

impl Default for PriorityUpdates {
    fn default() -> Self {
        Self::new()
    }
}

impl PriorityUpdates {
    /// An empty buffer holding up to [`DEFAULT_CAPACITY`] updates.
    pub fn new() -> Self {
        Self::with_capacity(DEFAULT_CAPACITY)
    }

    /// An empty buffer holding up to `capacity` updates; a capacity of 0 keeps none.
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            entries: VecDeque::with_capacity(capacity.min(DEFAULT_CAPACITY)),
            capacity,
            dropped: 0,
        }
    }

    /// Buffers `update` for its stream, replacing an earlier one for the same stream and
    /// dropping the oldest entry if the buffer is full. Returns the stream whose update was
    /// dropped to make room, if any.
    pub fn insert(&mut self, update: PriorityUpdate) -> Option<u64> {
        if let Some(at) = self.position(update.stream_id) {
            self.entries.remove(at);
        }
        if self.capacity == 0 {
            self.dropped += 1;
            return Some(update.stream_id);
        }
        let mut dropped = None;
        if self.entries.len() >= self.capacity {
            dropped = self.entries.pop_front().map(|(id, _)| id);
            self.dropped += 1;
        }
        self.entries.push_back((update.stream_id, update.priority));
        dropped
    }

    /// Removes and returns the buffered priority for `stream_id`, for when that stream opens.
    pub fn take(&mut self, stream_id: u64) -> Option<Priority> {
        let at = self.position(stream_id)?;
        self.entries.remove(at).map(|(_, priority)| priority)
    }

    /// The buffered priority for `stream_id`, left in place.
    pub fn get(&self, stream_id: u64) -> Option<Priority> {
        self.position(stream_id).map(|at| self.entries[at].1)
    }

    /// Drops every update for a stream below `stream_id`: once the server has seen stream
    /// `stream_id` open, lower request streams that never took their update were already
    /// opened (streams open in order, RFC 9000 section 2.1) and will not open again.
    pub fn discard_below(&mut self, stream_id: u64) {
        self.entries.retain(|(id, _)| *id >= stream_id);
    }

    /// How many updates are buffered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether none is buffered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The most updates held at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many updates have been dropped for lack of room since the buffer was made.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    fn position(&self, stream_id: u64) -> Option<usize> {
        self.entries.iter().position(|(id, _)| *id == stream_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::priority::PriorityField;
    use crate::update::{encode_varint, PRIORITY_UPDATE_REQUEST};
    use mpquic_sched::Urgency;

    fn update(stream_id: u64, field: &str) -> PriorityUpdate {
        let mut payload = Vec::new();
        encode_varint(stream_id, &mut payload);
        payload.extend_from_slice(field.as_bytes());
        PriorityUpdate::decode(PRIORITY_UPDATE_REQUEST, &payload).unwrap()
    }

    /// The race of RFC 9218 section 7: the update arrives on the control stream before the
    /// request stream it names; it is held and applied when the stream opens, overriding the
    /// request's header.
    #[test]
    fn an_update_before_its_stream_is_applied_when_the_stream_opens() {
        let mut updates = PriorityUpdates::new();
        assert_eq!(updates.insert(update(8, "u=0")), None);
        assert_eq!(updates.take(4), None);
        let header = Priority::from_field("u=5, i");
        let applied = updates.take(8).unwrap_or(header);
        assert_eq!(applied, Priority::new(Urgency::new(0).unwrap(), false));
        assert!(updates.is_empty());
        assert_eq!(updates.take(8), None);
    }

    #[test]
    fn a_later_update_replaces_an_earlier_one_for_the_same_stream() {
        let mut updates = PriorityUpdates::new();
        updates.insert(update(4, "u=7"));
        updates.insert(update(8, "u=6"));
        updates.insert(update(4, "u=1, i"));
        assert_eq!(updates.len(), 2);
        assert_eq!(
            updates.get(4),
            Some(Priority::new(Urgency::new(1).unwrap(), true))
        );
        assert_eq!(
            updates.take(4),
            Some(Priority::new(Urgency::new(1).unwrap(), true))
        );
        assert_eq!(
            updates.take(8),
            Some(Priority::new(Urgency::new(6).unwrap(), false))
        );
    }

    #[test]
    fn a_full_buffer_drops_the_oldest() {
        let mut updates = PriorityUpdates::with_capacity(3);
        for id in [0, 4, 8] {
            assert_eq!(updates.insert(update(id, "u=1")), None);
        }
        // Refreshing stream 0 makes it the newest, so 4 is now the oldest.
        assert_eq!(updates.insert(update(0, "u=2")), None);
        assert_eq!(updates.insert(update(12, "u=1")), Some(4));
        assert_eq!(updates.len(), 3);
        assert_eq!(updates.dropped(), 1);
        assert_eq!(updates.get(4), None);
        assert_eq!(
            updates.get(0),
            Some(Priority::new(Urgency::new(2).unwrap(), false))
        );

        let mut flood = PriorityUpdates::new();
        for i in 0..10_000u64 {
            flood.insert(update(i * 4, "u=7"));
        }
        assert_eq!(flood.len(), DEFAULT_CAPACITY);
        assert_eq!(flood.dropped(), 10_000 - DEFAULT_CAPACITY as u64);
        assert!(flood.get(9_999 * 4).is_some());
        assert!(flood.get(0).is_none());
    }

    #[test]
    fn zero_capacity_keeps_nothing_and_discard_below_forgets_old_streams() {
        let mut none = PriorityUpdates::with_capacity(0);
        assert_eq!(none.insert(update(4, "u=1")), Some(4));
        assert!(none.is_empty());
        assert_eq!(none.capacity(), 0);

        let mut updates = PriorityUpdates::default();
        for id in [0, 4, 8, 12] {
            updates.insert(update(id, "u=1"));
        }
        updates.discard_below(8);
        assert_eq!(updates.len(), 2);
        assert!(updates.get(4).is_none() && updates.get(8).is_some());
    }
}
