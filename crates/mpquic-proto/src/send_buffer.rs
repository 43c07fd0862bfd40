//! The sending side's memory of one stream: bytes written and not yet acknowledged by the
//! receiver, and the ranges that must be sent again because their path died.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;

use bytes::Bytes;

/// Bytes `[start, end)` of a stream, as written, until the receiver's data ack frees them.
#[derive(Debug, Default)]
pub(crate) struct SendBuffer {
    segments: VecDeque<Bytes>,
    /// Offset of the first byte of `segments[0]`.
    start: u64,
    end: u64,
}

impl SendBuffer {
    pub(crate) fn push(&mut self, data: Bytes) {
        if data.is_empty() {
            return;
        }
        self.end += data.len() as u64;
        self.segments.push_back(data);
    }

    /// Bytes held.
    pub(crate) fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Offset just past the last byte written.
    pub(crate) fn end(&self) -> u64 {
        self.end
    }

    /// Forgets every byte below `offset`.
    pub(crate) fn ack_to(&mut self, offset: u64) {
        let offset = offset.min(self.end);
        while let Some(first) = self.segments.front_mut() {
            if self.start >= offset {
                break;
            }
            let len = first.len() as u64;
            if self.start + len <= offset {
                self.start += len;
                self.segments.pop_front();
            } else {
                let cut = (offset - self.start) as usize;
                *first = first.slice(cut..);
                self.start = offset;
            }
        }
        self.start = self.start.max(offset);
    }

    /// The bytes of `range` (clipped to what is held), as zero-copy slices.
    pub(crate) fn slice(&self, range: Range<u64>) -> Vec<Bytes> {
        let mut out = Vec::new();
        let mut seg_start = self.start;
        for seg in &self.segments {
            let seg_end = seg_start + seg.len() as u64;
            let lo = range.start.max(seg_start);
            let hi = range.end.min(seg_end);
            if lo < hi {
                out.push(seg.slice((lo - seg_start) as usize..(hi - seg_start) as usize));
            }
            if seg_end >= range.end {
                break;
            }
            seg_start = seg_end;
        }
        out
    }
}

/// Disjoint, non-adjacent byte ranges, kept in order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct RangeSet(BTreeMap<u64, u64>);

impl RangeSet {
    pub(crate) fn insert(&mut self, range: Range<u64>) {
        if range.is_empty() {
            return;
        }
        let (mut lo, mut hi) = (range.start, range.end);
        let overlapping: Vec<(u64, u64)> = self
            .0
            .range(..=hi)
            .rev()
            .take_while(|(_, &end)| end >= lo)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in overlapping {
            self.0.remove(&s);
            lo = lo.min(s);
            hi = hi.max(e);
        }
        self.0.insert(lo, hi);
    }

    /// Removes everything below `offset`.
    pub(crate) fn remove_below(&mut self, offset: u64) {
        while let Some((&s, &e)) = self.0.first_key_value() {
            if s >= offset {
                break;
            }
            self.0.remove(&s);
            if e > offset {
                self.0.insert(offset, e);
            }
        }
    }

    /// Takes up to `max` bytes from the front.
    pub(crate) fn pop_front(&mut self, max: u64) -> Option<Range<u64>> {
        let (s, e) = self.0.pop_first()?;
        let take = (e - s).min(max);
        if s + take < e {
            self.0.insert(s + take, e);
        }
        Some(s..s + take)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    #[cfg(test)]
    pub(crate) fn total(&self) -> u64 {
        self.0.iter().map(|(s, e)| e - s).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_span_segments_and_acks_trim_them() {
        let mut buf = SendBuffer::default();
        buf.push(Bytes::from_static(b"hello "));
        buf.push(Bytes::from_static(b"world"));
        let joined: Vec<u8> = buf.slice(3..8).concat();
        assert_eq!(joined, b"lo wo");
        buf.ack_to(4);
        assert_eq!(buf.len(), 7);
        assert_eq!(buf.slice(4..11).concat(), b"o world");
        buf.ack_to(11);
        assert_eq!(buf.len(), 0);
        assert!(buf.slice(0..11).is_empty());
    }

    #[test]
    fn range_sets_merge_trim_and_pop_in_order() {
        let mut set = RangeSet::default();
        set.insert(10..20);
        set.insert(30..40);
        set.insert(18..31);
        set.insert(0..2);
        assert_eq!(set.total(), 32);
        set.remove_below(1);
        assert_eq!(set.pop_front(5), Some(1..2));
        assert_eq!(set.pop_front(5), Some(10..15));
        assert_eq!(set.pop_front(100), Some(15..40));
        assert!(set.is_empty());
    }
}
