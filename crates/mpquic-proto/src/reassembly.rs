//! Receive-side reassembly of one logical stream.
//!
//! A stream's chunks arrive over several paths, so out of order, and a chunk lost with a path
//! may be sent again on another one, possibly cut differently, so duplicated and overlapping.
//! [`Reassembler`] buffers each byte once, checks that re-sent bytes match what is already
//! buffered, and hands the bytes out in order, as zero-copy slices of the received chunks
//! where that does not keep much more memory alive than the bytes themselves. Small pieces that
//! arrive one right after another are copied into one allocation, so that a sender's small
//! writes cost about their bytes.
//!
//! Memory is what it really costs, not what the bytes count: a slice keeps its whole chunk's
//! allocation alive, and every buffered range has a fixed overhead. [`Reassembler::footprint`]
//! charges both, so the receiver can bound it whatever the peer's chunking (a peer that cuts
//! a stream into one-byte pieces behind a hole would otherwise buffer ~160 bytes of heap per
//! byte of window).

use std::collections::BTreeMap;

use bytes::Bytes;

/// Heap bytes one buffered range costs besides its data: its slot in the map's nodes (which
/// are half full at worst), the allocator's header and rounding of a small allocation, and the
/// shared-ownership header a sliced `Bytes` grows. Measured by the `footprint_covers_the_heap`
/// test below.
pub(crate) const RANGE_OVERHEAD: u64 = 160;

/// New bytes right after a buffered range are copied into one allocation with it when the
/// result stays this small and the copy costs at most [`MERGE_COST`] times the new bytes: a
/// sender that writes a stream in small pieces (an application's small writes behind a hole
/// left by a dead path) then costs about its bytes, not [`RANGE_OVERHEAD`] per piece.
const MERGE_MAX: usize = 16 * 1024;
/// Each received byte is copied at most this many times by merging.
const MERGE_COST: usize = 4;

/// Why an insert was refused; nothing from a refused insert is stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ReassemblyError {
    /// The bytes end beyond the flow-control limit.
    #[error("stream data ends at {end}, beyond the flow-control limit {limit}")]
    BeyondWindow {
        /// The exclusive end of the refused bytes.
        end: u64,
        /// The limit they exceed.
        limit: u64,
    },
    /// Re-sent bytes differ from the bytes already received at the same offsets.
    #[error("stream data at offset {offset} differs from the data received before")]
    Conflict {
        /// The first offset whose byte differs.
        offset: u64,
    },
    /// Offset plus length does not fit a `u64`.
    #[error("stream data offset plus length overflows")]
    Overflow,
}

/// Buffered bytes at one offset and the size of the allocation they keep alive.
#[derive(Debug)]
struct Held {
    data: Bytes,
    /// At least `data.len()`, at most twice it (see [`Held::compact`]).
    allocation: u64,
}

impl Held {
    /// Bytes that own their allocation exactly: a whole received chunk, or a copy.
    fn exact(data: Bytes) -> Self {
        let allocation = data.len() as u64;
        Self { data, allocation }
    }

    /// Copies the bytes out once they are less than half of the allocation they keep alive,
    /// so that a slice never pins more than twice its size. Each byte is copied at most about
    /// once on average, as every copy halves the allocation at least.
    fn compact(&mut self) {
        if (self.data.len() as u64) * 2 < self.allocation {
            *self = Self::exact(Bytes::copy_from_slice(&self.data));
        }
    }
}

/// Buffers a stream's out-of-order bytes and hands them out in order.
///
/// Bytes stay within the flow-control window: everything buffered lies in
/// `[read_offset(), limit)`, so `buffered() <= limit - read_offset()` as long as the caller
/// never lowers `limit`. Their memory is [`Reassembler::footprint`].
#[derive(Debug, Default)]
pub(crate) struct Reassembler {
    /// Buffered bytes by start offset: non-empty, non-overlapping, all at or after
    /// `read_offset`.
    ranges: BTreeMap<u64, Held>,
    /// Bytes handed out so far.
    read_offset: u64,
    /// End of the in-order prefix received; cached because reads and flow control ask often.
    contiguous_end: u64,
    /// Bytes in `ranges`.
    buffered: u64,
    /// Sum of the ranges' allocations.
    allocated: u64,
    /// Largest `offset + len` accepted.
    highest_end: u64,
}

impl Reassembler {
    /// An empty stream: nothing received, nothing read.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Inserts `data` received at `offset`; `limit` is the exclusive end the flow-control
    /// window allows. Bytes already read are dropped unchecked; bytes already buffered must
    /// match and are kept once. On error nothing is stored and nothing changes.
    ///
    /// `data` is kept as it is when all of it is new (its allocation is then charged at its
    /// length: give it a chunk that owns its allocation exactly); new parts of a chunk that
    /// overlaps what is buffered or read are copied, so that they do not keep the rest alive.
    pub(crate) fn insert(
        &mut self,
        offset: u64,
        data: Bytes,
        limit: u64,
    ) -> Result<(), ReassemblyError> {
        let end = offset
            .checked_add(data.len() as u64)
            .ok_or(ReassemblyError::Overflow)?;
        if end > limit {
            return Err(ReassemblyError::BeyondWindow { end, limit });
        }
        // Bytes already handed out are gone, so their duplicates cannot be checked: skip them.
        let start = offset.max(self.read_offset);
        let parts = if start < end {
            self.new_parts(start, &data.slice((start - offset) as usize..))?
        } else {
            Vec::new()
        };
        self.highest_end = self.highest_end.max(end);
        let whole = matches!(parts.as_slice(), [(_, part)] if part.len() == data.len());
        for (at, part) in parts {
            let held = if whole {
                Held::exact(part)
            } else {
                Held::exact(Bytes::copy_from_slice(&part))
            };
            self.add(at, held);
        }
        // A merged range may start before the contiguous end and reach past it.
        while let Some(end) = self
            .ranges
            .range(..=self.contiguous_end)
            .next_back()
            .map(|(start, held)| start + held.data.len() as u64)
            .filter(|end| *end > self.contiguous_end)
        {
            self.contiguous_end = end;
        }
        Ok(())
    }

    fn add(&mut self, at: u64, held: Held) {
        self.buffered += held.data.len() as u64;
        let before = self.ranges.range(..at).next_back();
        let merge = before.filter(|(start, prev)| {
            let (prev, new) = (prev.data.len(), held.data.len());
            **start + prev as u64 == at && prev + new <= MERGE_MAX && prev <= MERGE_COST * new
        });
        if let Some((&start, _)) = merge {
            if let Some(prev) = self.ranges.remove(&start) {
                self.allocated -= prev.allocation;
                let mut joined = Vec::with_capacity(prev.data.len() + held.data.len());
                joined.extend_from_slice(&prev.data);
                joined.extend_from_slice(&held.data);
                let joined = Held::exact(Bytes::from(joined));
                self.allocated += joined.allocation;
                self.ranges.insert(start, joined);
                return;
            }
        }
        self.allocated += held.allocation;
        self.ranges.insert(at, held);
    }

    /// The parts of `data` (starting at `start`, at or after `read_offset`, non-empty) not yet
    /// buffered, after checking that the parts already buffered are equal.
    fn new_parts(&self, start: u64, data: &Bytes) -> Result<Vec<(u64, Bytes)>, ReassemblyError> {
        let end = start + data.len() as u64;
        // Index into `data` of an offset within [start, end].
        let at = |offset: u64| (offset - start) as usize;
        let mut parts = Vec::new();
        // Offsets of `data` below `cursor` are either in `parts` or checked against `ranges`.
        let mut cursor = start;
        // The range starting before `start` may reach into `data`.
        let before = self.ranges.range(..start).next_back();
        for (&held_start, held) in before.into_iter().chain(self.ranges.range(start..end)) {
            let held = &held.data;
            let held_end = held_start + held.len() as u64;
            if held_end <= cursor {
                continue;
            }
            if held_start > cursor {
                parts.push((cursor, data.slice(at(cursor)..at(held_start))));
            }
            let from = held_start.max(cursor);
            let to = held_end.min(end);
            let ours = &data[at(from)..at(to)];
            let theirs = &held[(from - held_start) as usize..(to - held_start) as usize];
            if let Some(i) = ours.iter().zip(theirs).position(|(a, b)| a != b) {
                return Err(ReassemblyError::Conflict {
                    offset: from + i as u64,
                });
            }
            cursor = to;
        }
        if cursor < end {
            parts.push((cursor, data.slice(at(cursor)..)));
        }
        Ok(parts)
    }

    /// The next in-order bytes, at most `max`, as a zero-copy slice of a received chunk;
    /// `None` if none are buffered at [`Reassembler::read_offset`] (or `max` is 0). One call
    /// returns at most one received chunk's bytes, so call again for more.
    pub(crate) fn read(&mut self, max: usize) -> Option<Bytes> {
        if max == 0 {
            return None;
        }
        let entry = self.ranges.first_entry()?;
        if *entry.key() != self.read_offset {
            return None;
        }
        let mut held = entry.remove();
        self.allocated -= held.allocation;
        let head = if held.data.len() > max {
            let head = held.data.split_to(max);
            // The rest still keeps the whole allocation alive, until it is small enough to copy.
            held.compact();
            self.allocated += held.allocation;
            self.ranges.insert(self.read_offset + max as u64, held);
            head
        } else {
            held.data
        };
        self.read_offset += head.len() as u64;
        self.buffered -= head.len() as u64;
        Some(head)
    }

    /// Bytes handed out by [`Reassembler::read`] so far.
    pub(crate) fn read_offset(&self) -> u64 {
        self.read_offset
    }

    /// The end of the in-order prefix received, at least [`Reassembler::read_offset`]: every
    /// byte below it has arrived.
    pub(crate) fn contiguous_end(&self) -> u64 {
        self.contiguous_end
    }

    /// Where the bytes missing just below `end` start, if byte `end - 1` has not arrived:
    /// after the last byte received below it, or at [`Reassembler::contiguous_end`].
    pub(crate) fn missing_before(&self, end: u64) -> Option<u64> {
        if end <= self.contiguous_end {
            return None;
        }
        let last_below = self
            .ranges
            .range(..end)
            .next_back()
            .map(|(start, held)| start + held.data.len() as u64);
        match last_below {
            Some(last) if last >= end => None,
            last => Some(last.unwrap_or(0).max(self.contiguous_end)),
        }
    }

    /// Heap bytes the buffered ranges cost: their allocations plus [`RANGE_OVERHEAD`] each.
    /// At most `2 * buffered() + RANGE_OVERHEAD * ranges`.
    pub(crate) fn footprint(&self) -> u64 {
        self.allocated + RANGE_OVERHEAD * self.ranges.len() as u64
    }

    /// Bytes held in memory.
    pub(crate) fn buffered(&self) -> u64 {
        self.buffered
    }

    /// The largest `offset + len` ever accepted, zero-length inserts included, for checking a
    /// final size against.
    #[cfg(test)]
    pub(crate) fn highest_end(&self) -> u64 {
        self.highest_end
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use proptest::sample::Index;

    use super::*;

    fn bytes(data: &[u8]) -> Bytes {
        Bytes::copy_from_slice(data)
    }

    /// Reads everything in order.
    fn read_all(r: &mut Reassembler) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some(data) = r.read(usize::MAX) {
            out.extend_from_slice(&data);
        }
        out
    }

    #[test]
    fn in_order_reads_are_zero_copy() {
        let mut r = Reassembler::new();
        let data = bytes(b"hello world");
        r.insert(0, data.clone(), 100).unwrap();
        assert_eq!(r.contiguous_end(), 11);
        assert_eq!(r.buffered(), 11);
        let out = r.read(100).unwrap();
        assert_eq!(out, data);
        assert_eq!(out.as_ptr(), data.as_ptr(), "a slice, not a copy");
        assert_eq!((r.read_offset(), r.buffered()), (11, 0));
        assert_eq!(r.read(100), None);
    }

    #[test]
    fn read_respects_max() {
        let mut r = Reassembler::new();
        let data = bytes(b"abcdefgh");
        r.insert(0, data.clone(), 8).unwrap();
        let head = r.read(3).unwrap();
        assert_eq!(&head[..], b"abc");
        assert_eq!(head.as_ptr(), data.as_ptr());
        assert_eq!((r.read_offset(), r.buffered()), (3, 5));
        assert_eq!(&r.read(3).unwrap()[..], b"def");
        assert_eq!(&r.read(3).unwrap()[..], b"gh");
        assert_eq!(r.read(3), None);
    }

    #[test]
    fn nothing_to_read() {
        let mut r = Reassembler::new();
        assert_eq!(r.read(10), None);
        r.insert(5, bytes(b"later"), 100).unwrap();
        assert_eq!(r.read(10), None, "a gap at the read offset");
        r.insert(0, bytes(b"first"), 100).unwrap();
        assert_eq!(r.read(0), None);
        assert_eq!(read_all(&mut r), b"firstlater");
    }

    #[test]
    fn out_of_order_fills_the_gap() {
        let mut r = Reassembler::new();
        r.insert(6, bytes(b"world"), 100).unwrap();
        assert_eq!((r.contiguous_end(), r.buffered()), (0, 5));
        r.insert(0, bytes(b"hel"), 100).unwrap();
        assert_eq!(r.contiguous_end(), 3);
        r.insert(3, bytes(b"lo "), 100).unwrap();
        assert_eq!((r.contiguous_end(), r.buffered()), (11, 11));
        assert_eq!(read_all(&mut r), b"hello world");
        assert_eq!(r.contiguous_end(), r.read_offset());
    }

    #[test]
    fn the_bytes_missing_before_an_end_start_after_the_last_one_received() {
        let mut r = Reassembler::new();
        r.insert(0, bytes(b"hel"), 100).unwrap();
        r.insert(6, bytes(b"wor"), 100).unwrap();
        // Nothing missing below what arrived, in order or not.
        assert_eq!(r.missing_before(3), None);
        assert_eq!(r.missing_before(8), None);
        assert_eq!(r.missing_before(9), None);
        // A hole right before the end, after the in-order prefix or after a later range.
        assert_eq!(r.missing_before(5), Some(3));
        assert_eq!(r.missing_before(11), Some(9));
        read_all(&mut r);
        assert_eq!(r.missing_before(2), None, "read bytes arrived");
        assert_eq!(r.missing_before(4), Some(3));
    }

    #[test]
    fn overflow() {
        let mut r = Reassembler::new();
        assert_eq!(
            r.insert(u64::MAX - 1, bytes(b"ab"), u64::MAX),
            Err(ReassemblyError::Overflow)
        );
        r.insert(u64::MAX - 1, bytes(b"a"), u64::MAX).unwrap();
        assert_eq!(r.highest_end(), u64::MAX);
    }

    #[test]
    fn beyond_window_stores_nothing() {
        let mut r = Reassembler::new();
        assert_eq!(
            r.insert(8, bytes(b"abc"), 10),
            Err(ReassemblyError::BeyondWindow { end: 11, limit: 10 })
        );
        assert_eq!((r.buffered(), r.highest_end()), (0, 0));
        // Ending exactly at the limit is allowed.
        r.insert(7, bytes(b"abc"), 10).unwrap();
        assert_eq!((r.buffered(), r.highest_end()), (3, 10));
    }

    #[test]
    fn bytes_already_read_are_dropped_unchecked() {
        let mut r = Reassembler::new();
        r.insert(0, bytes(b"abcd"), 100).unwrap();
        assert_eq!(read_all(&mut r), b"abcd");
        // Entirely consumed, even if different: dropped.
        r.insert(0, bytes(b"xyz"), 100).unwrap();
        assert_eq!(r.buffered(), 0);
        // Partly consumed: only the new tail is kept.
        r.insert(2, bytes(b"XYef"), 100).unwrap();
        assert_eq!((r.buffered(), r.contiguous_end()), (2, 6));
        assert_eq!(read_all(&mut r), b"ef");
        assert_eq!(r.highest_end(), 6);
    }

    #[test]
    fn equal_overlaps_are_stored_once() {
        let mut r = Reassembler::new();
        let data = b"0123456789abcdefghij";
        r.insert(2, bytes(&data[2..5]), 100).unwrap();
        r.insert(8, bytes(&data[8..10]), 100).unwrap();
        r.insert(12, bytes(&data[12..18]), 100).unwrap();
        assert_eq!(r.buffered(), 11);
        // Spans three buffered ranges and the gaps around them.
        r.insert(0, bytes(&data[0..16]), 100).unwrap();
        assert_eq!((r.buffered(), r.contiguous_end()), (18, 18));
        r.insert(0, bytes(&data[..]), 100).unwrap();
        assert_eq!(r.buffered(), 20);
        assert_eq!(read_all(&mut r), data);
    }

    #[test]
    fn conflict_reports_the_first_differing_byte_and_stores_nothing() {
        let mut r = Reassembler::new();
        r.insert(2, bytes(b"cd"), 100).unwrap();
        r.insert(6, bytes(b"gh"), 100).unwrap();
        // New bytes around both ranges, but offset 7 differs: none of it is kept.
        assert_eq!(
            r.insert(0, bytes(b"abcdefgXij"), 100),
            Err(ReassemblyError::Conflict { offset: 7 })
        );
        assert_eq!(
            (r.buffered(), r.contiguous_end(), r.highest_end()),
            (4, 0, 8)
        );
        // Two differences: the lower one is reported.
        assert_eq!(
            r.insert(3, bytes(b"Dxyz"), 100),
            Err(ReassemblyError::Conflict { offset: 3 })
        );
        r.insert(0, bytes(b"abcdefghij"), 100).unwrap();
        assert_eq!(read_all(&mut r), b"abcdefghij");
    }

    #[test]
    fn zero_length_inserts() {
        let mut r = Reassembler::new();
        r.insert(5, Bytes::new(), 10).unwrap();
        assert_eq!(
            (r.buffered(), r.contiguous_end(), r.highest_end()),
            (0, 0, 5)
        );
        assert_eq!(r.read(10), None);
        assert_eq!(
            r.insert(11, Bytes::new(), 10),
            Err(ReassemblyError::BeyondWindow { end: 11, limit: 10 })
        );
        r.insert(0, bytes(b"ab"), 10).unwrap();
        r.insert(2, Bytes::new(), 10).unwrap();
        r.insert(1, Bytes::new(), 10).unwrap();
        assert_eq!(read_all(&mut r), b"ab");
    }

    #[test]
    fn highest_end_tracks_the_largest_end() {
        let mut r = Reassembler::new();
        r.insert(10, bytes(b"xy"), 100).unwrap();
        r.insert(0, bytes(b"abc"), 100).unwrap();
        assert_eq!(r.highest_end(), 12);
        r.insert(20, bytes(b"z"), 100).unwrap();
        assert_eq!(r.highest_end(), 21);
    }

    #[test]
    fn a_chunk_that_adds_one_byte_keeps_one_byte() {
        let mut r = Reassembler::new();
        r.insert(10, Bytes::from(vec![7u8; 1 << 20]), 4 << 20)
            .unwrap();
        let whole = r.footprint();
        assert_eq!(
            whole,
            (1 << 20) + RANGE_OVERHEAD,
            "a whole chunk is kept as it is"
        );
        // One byte before it: one new byte, copied out of the 1 MiB chunk.
        r.insert(9, Bytes::from(vec![7u8; 1 << 20]), 4 << 20)
            .unwrap();
        assert_eq!(r.footprint(), whole + 1 + RANGE_OVERHEAD);
        assert_eq!(r.buffered(), (1 << 20) + 1);
    }

    #[test]
    fn a_partly_read_chunk_is_copied_once_it_is_under_half_its_allocation() {
        let mut r = Reassembler::new();
        let chunk = Bytes::from((0..=255u8).cycle().take(1000).collect::<Vec<_>>());
        r.insert(0, chunk.clone(), 1000).unwrap();
        let head = r.read(400).unwrap();
        assert_eq!(head.as_ptr(), chunk.as_ptr(), "reads stay zero-copy");
        assert_eq!(
            r.footprint(),
            1000 + RANGE_OVERHEAD,
            "the rest keeps the chunk alive"
        );
        let _ = r.read(200).unwrap();
        // 400 bytes left of a 1000-byte allocation: copied, so only they stay.
        assert_eq!(r.footprint(), 400 + RANGE_OVERHEAD);
        assert_eq!(read_all(&mut r), chunk[600..]);
        assert_eq!(r.footprint(), 0);
    }

    #[test]
    fn small_pieces_in_order_behind_a_hole_cost_about_their_bytes() {
        let mut r = Reassembler::new();
        for i in 0..1000u64 {
            r.insert(100 + 42 * i, Bytes::from(vec![7u8; 42]), u64::MAX)
                .unwrap();
        }
        assert_eq!(r.buffered(), 42_000);
        // Unmerged, every piece would cost RANGE_OVERHEAD besides its 42 bytes: 4.8 times them.
        assert!(
            r.footprint() <= 2 * r.buffered(),
            "footprint {} for {} bytes",
            r.footprint(),
            r.buffered()
        );
        r.insert(0, Bytes::from(vec![7u8; 100]), u64::MAX).unwrap();
        assert_eq!(r.contiguous_end(), 42_100);
        assert_eq!(read_all(&mut r), vec![7u8; 42_100]);
    }

    #[test]
    fn footprint_covers_the_heap() {
        // The worst chunkings: single bytes behind holes, one-byte additions that overlap big
        // chunks, and small chunks read a byte at a time.
        for pattern in 0..3u64 {
            let before = crate::test_heap::live();
            let mut r = Reassembler::new();
            for i in 0..20_000u64 {
                let (offset, len) = match pattern {
                    0 => (2 * i + 1, 1),
                    1 => (4_000_000 - i, 4096),
                    _ => (100 * i, 100),
                };
                r.insert(offset, Bytes::from(vec![1u8; len]), u64::MAX)
                    .unwrap();
                if pattern == 2 {
                    r.read(1).unwrap();
                }
            }
            let measured = crate::test_heap::live() - before;
            assert!(
                measured <= r.footprint() as i64,
                "pattern {pattern}: the heap grew by {measured} bytes, footprint {}",
                r.footprint()
            );
        }
    }

    /// SplitMix64: the delivery order and read sizes, reproducible from the seed.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) % n as u64) as usize
        }
    }

    proptest! {
        /// Chunks, duplicates and overlapping re-sends in random order, with reads in between,
        /// and a sender that keeps within the window: the input comes out exactly.
        #[test]
        fn any_delivery_order_reassembles(
            data in prop::collection::vec(any::<u8>(), 0..4096),
            chunk_lens in prop::collection::vec(1usize..=512, 1..64),
            resends in prop::collection::vec((any::<Index>(), any::<Index>()), 0..64),
            extra_window in 0u64..2048,
            seed in any::<u64>(),
        ) {
            let max_chunk = chunk_lens.iter().copied().max().unwrap_or(1);
            let window = max_chunk as u64 + extra_window;
            let mut pending: Vec<(u64, Bytes)> = Vec::new();
            let mut at = 0;
            for &len in chunk_lens.iter().cycle() {
                if at >= data.len() {
                    break;
                }
                let end = (at + len).min(data.len());
                pending.push((at as u64, bytes(&data[at..end])));
                at = end;
            }
            if !data.is_empty() {
                for (start, len) in &resends {
                    let start = start.index(data.len());
                    let end = (start + 1 + len.index(max_chunk)).min(data.len());
                    pending.push((start as u64, bytes(&data[start..end])));
                }
            }

            let mut rng = Rng(seed);
            let mut r = Reassembler::new();
            let mut out = Vec::new();
            // What has arrived, to check the reassembler's counters against.
            let mut received = vec![false; data.len()];
            let mut received_count = 0u64;
            let mut model_contiguous = 0;
            let mut model_highest = 0;
            loop {
                let limit = r.read_offset() + window;
                let fitting: Vec<usize> = (0..pending.len())
                    .filter(|&i| pending[i].0 + pending[i].1.len() as u64 <= limit)
                    .collect();
                if fitting.is_empty() || rng.below(3) == 0 {
                    let max = 1 + rng.below(2 * max_chunk);
                    match r.read(max) {
                        Some(chunk) => {
                            prop_assert!(!chunk.is_empty() && chunk.len() <= max);
                            out.extend_from_slice(&chunk);
                        }
                        None if pending.is_empty() => break,
                        // The chunk holding the read offset always fits the window.
                        None => prop_assert!(!fitting.is_empty(), "stuck"),
                    }
                } else {
                    let (offset, chunk) = pending.swap_remove(fitting[rng.below(fitting.len())]);
                    let end = offset + chunk.len() as u64;
                    r.insert(offset, chunk, limit).unwrap();
                    for seen in &mut received[offset as usize..end as usize] {
                        received_count += u64::from(!*seen);
                        *seen = true;
                    }
                    while received.get(model_contiguous) == Some(&true) {
                        model_contiguous += 1;
                    }
                    model_highest = model_highest.max(end);
                }
                prop_assert!(r.buffered() <= limit - r.read_offset());
                prop_assert!(r.buffered() <= window);
                prop_assert_eq!(r.buffered(), received_count - r.read_offset());
                prop_assert_eq!(r.contiguous_end(), model_contiguous as u64);
                prop_assert_eq!(r.highest_end(), model_highest);
                prop_assert_eq!(r.read_offset(), out.len() as u64);
            }
            prop_assert_eq!(out, data);
            prop_assert_eq!(r.buffered(), 0);
        }

        /// One differing byte in a re-send over buffered bytes is a conflict at that byte, and
        /// changes nothing.
        #[test]
        fn a_differing_byte_conflicts(
            data in prop::collection::vec(any::<u8>(), 1..1024),
            pieces in prop::collection::vec((any::<Index>(), any::<Index>()), 1..8),
            target in any::<Index>(),
            before in any::<Index>(),
            after in any::<Index>(),
            flip in 1u8..=255,
        ) {
            let len = data.len() as u64;
            let mut r = Reassembler::new();
            let mut held = vec![false; data.len()];
            for (start, size) in &pieces {
                let start = start.index(data.len());
                let end = start + 1 + size.index(data.len() - start);
                r.insert(start as u64, bytes(&data[start..end]), len).unwrap();
                held[start..end].iter_mut().for_each(|h| *h = true);
            }
            let held: Vec<usize> = (0..data.len()).filter(|&i| held[i]).collect();
            let pos = held[target.index(held.len())];
            let start = pos - before.index(pos + 1);
            let end = pos + 1 + after.index(data.len() - pos);
            let mut resend = data[start..end].to_vec();
            resend[pos - start] ^= flip;

            let state = (r.buffered(), r.contiguous_end(), r.highest_end());
            prop_assert_eq!(
                r.insert(start as u64, Bytes::from(resend), len),
                Err(ReassemblyError::Conflict { offset: pos as u64 })
            );
            prop_assert_eq!((r.buffered(), r.contiguous_end(), r.highest_end()), state);
            // Nothing of the bad re-send was kept: the true bytes still fit and come out.
            r.insert(0, bytes(&data), len).unwrap();
            prop_assert_eq!(read_all(&mut r), data);
        }
    }
}
