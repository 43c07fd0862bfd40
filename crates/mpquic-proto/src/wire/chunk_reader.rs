//! A chunk stream read as its transport hands the bytes over, out of order (quinn's unordered
//! reads), and put back in order for the [`ChunkDecoder`]. Bytes that arrive past a hole show
//! the receiver the hole a round trip before the sender's transport learns of the loss.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;

use super::{Chunk, ChunkDecoder, WireError};

/// Reads one chunk stream from pieces that may come out of order.
#[derive(Debug)]
pub struct ChunkReader {
    decoder: ChunkDecoder,
    /// The transport offset of the next byte the decoder takes.
    next: u64,
    /// Pieces past a hole, by transport offset, each copied into an allocation of its own
    /// length (a transport's piece may share a datagram's buffer).
    early: BTreeMap<u64, Bytes>,
    early_bytes: u64,
    /// What waits past holes in all the connection's chunk streams, and the most that may.
    waiting: Arc<AtomicU64>,
    limit: u64,
    /// Where the hole last reported starts: each hole is reported once.
    reported: Option<u64>,
}

impl ChunkReader {
    /// A reader whose bytes past a hole count in `waiting`, which the readers sharing it keep
    /// at most `limit`.
    pub fn new(waiting: Arc<AtomicU64>, limit: u64) -> Self {
        Self {
            decoder: ChunkDecoder::default(),
            next: 0,
            early: BTreeMap::new(),
            early_bytes: 0,
            waiting,
            limit,
            reported: None,
        }
    }

    /// Takes `data`, the chunk stream's bytes from transport offset `offset`, and hands every
    /// chunk now complete in order to `each`. Returns, the first time bytes arrive past a
    /// hole, the logical offset where the hole starts (0 when it is in a header, which hides
    /// it). More than the limit past holes fails with [`WireError::TooFarAhead`].
    pub fn read<E: From<WireError>>(
        &mut self,
        offset: u64,
        data: Bytes,
        mut each: impl FnMut(Chunk) -> Result<(), E>,
    ) -> Result<Option<u64>, E> {
        let end = offset.saturating_add(data.len() as u64);
        if end <= self.next {
            return Ok(None);
        }
        if offset > self.next {
            self.keep_early(offset, data)?;
        } else {
            // Past `next`, so the slice start is below the piece's length.
            self.feed(data.slice((self.next - offset) as usize..), &mut each)?;
            while let Some(entry) = self.early.first_entry() {
                if *entry.key() > self.next {
                    break;
                }
                let (at, piece) = entry.remove_entry();
                self.forget(piece.len() as u64);
                let piece_end = at + piece.len() as u64;
                if piece_end > self.next {
                    self.feed(piece.slice((self.next - at) as usize..), &mut each)?;
                }
            }
        }
        if self.early.is_empty() || self.reported == Some(self.next) {
            return Ok(None);
        }
        self.reported = Some(self.next);
        Ok(Some(self.decoder.next_offset().unwrap_or(0)))
    }

    fn keep_early(&mut self, offset: u64, data: Bytes) -> Result<(), WireError> {
        let len = data.len() as u64;
        // A transport hands each byte over once; a longer piece at the same place wins.
        if self
            .early
            .get(&offset)
            .is_some_and(|kept| kept.len() >= data.len())
        {
            return Ok(());
        }
        if let Some(replaced) = self.early.insert(offset, Bytes::copy_from_slice(&data)) {
            self.forget(replaced.len() as u64);
        }
        self.early_bytes += len;
        let waiting = self
            .waiting
            .fetch_add(len, Ordering::Relaxed)
            .saturating_add(len);
        if waiting > self.limit {
            return Err(WireError::TooFarAhead { limit: self.limit });
        }
        Ok(())
    }

    /// `len` bytes that waited past a hole no longer do.
    fn forget(&mut self, len: u64) {
        self.early_bytes -= len;
        self.waiting.fetch_sub(len, Ordering::Relaxed);
    }

    fn feed<E: From<WireError>>(
        &mut self,
        piece: Bytes,
        each: &mut impl FnMut(Chunk) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut input = &piece[..];
        while let Some(chunk) = self.decoder.decode(&mut input)? {
            each(chunk)?;
        }
        self.next += piece.len() as u64;
        Ok(())
    }
}

impl Drop for ChunkReader {
    fn drop(&mut self) {
        self.waiting.fetch_sub(self.early_bytes, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{encode_chunk_header, encode_chunk_stream_header};

    /// Stream 4's chunk stream: its header, then one chunk of 3000 bytes at logical offset
    /// 1000. Returns the bytes and where the chunk's bytes start in them.
    fn chunk_stream() -> (Vec<u8>, usize) {
        let mut bytes = Vec::new();
        encode_chunk_stream_header(4, &mut bytes).unwrap();
        encode_chunk_header(1000, 3000, &mut bytes).unwrap();
        let data_start = bytes.len();
        bytes.extend((0..3000u32).map(|i| i as u8));
        (bytes, data_start)
    }

    fn read(
        reader: &mut ChunkReader,
        bytes: &[u8],
        at: usize,
        end: usize,
    ) -> (Vec<Chunk>, Option<u64>) {
        let mut chunks = Vec::new();
        let piece = Bytes::copy_from_slice(&bytes[at..end]);
        let hole = reader
            .read(at as u64, piece, |chunk| {
                chunks.push(chunk);
                Ok::<(), WireError>(())
            })
            .unwrap();
        (chunks, hole)
    }

    #[test]
    fn bytes_past_a_hole_report_it_once_and_wait_for_it() {
        let (bytes, data_start) = chunk_stream();
        let mut reader = ChunkReader::new(Arc::default(), 1 << 20);
        let hole_at = data_start + 1200;
        assert_eq!(read(&mut reader, &bytes, 0, hole_at), (vec![], None));
        // Bytes past the hole: it starts 1200 bytes into the chunk, at logical offset 2200.
        let (chunks, hole) = read(&mut reader, &bytes, hole_at + 1200, bytes.len());
        assert_eq!((chunks.len(), hole), (0, Some(2200)));
        // More of them: the same hole, not reported again.
        let (chunks, hole) = read(&mut reader, &bytes, hole_at + 600, hole_at + 1200);
        assert_eq!((chunks.len(), hole), (0, None));
        // The hole fills: the whole chunk comes out, as it was sent.
        let (chunks, hole) = read(&mut reader, &bytes, hole_at, hole_at + 600);
        assert_eq!(hole, None);
        assert_eq!(chunks.len(), 1);
        assert_eq!((chunks[0].stream, chunks[0].offset), (4, 1000));
        assert_eq!(chunks[0].data[..], bytes[data_start..]);
    }

    #[test]
    fn a_hole_in_a_header_is_reported_from_the_start() {
        let (bytes, _) = chunk_stream();
        let mut reader = ChunkReader::new(Arc::default(), 1 << 20);
        assert_eq!(
            read(&mut reader, &bytes, 1200, bytes.len()),
            (vec![], Some(0))
        );
        let (chunks, hole) = read(&mut reader, &bytes, 0, 1200);
        assert_eq!((chunks.len(), hole), (1, None));
    }

    #[test]
    fn bytes_already_taken_are_ignored_and_overlaps_are_cut() {
        let (bytes, _) = chunk_stream();
        let mut reader = ChunkReader::new(Arc::default(), 1 << 20);
        read(&mut reader, &bytes, 0, 2000);
        assert_eq!(read(&mut reader, &bytes, 500, 1500), (vec![], None));
        let (chunks, hole) = read(&mut reader, &bytes, 1000, bytes.len());
        assert_eq!((chunks.len(), hole), (1, None));
        assert_eq!(chunks[0].data.len(), 3000);
    }

    #[test]
    fn more_than_the_limit_past_holes_of_all_streams_is_refused() {
        let (bytes, _) = chunk_stream();
        let waiting = Arc::new(AtomicU64::new(0));
        let mut first = ChunkReader::new(waiting.clone(), 1000);
        let mut second = ChunkReader::new(waiting.clone(), 1000);
        read(&mut first, &bytes, 100, 600);
        read(&mut second, &bytes, 100, 600);
        let piece = Bytes::copy_from_slice(&bytes[600..601]);
        let refused = second.read(600, piece, |_| Ok::<(), WireError>(()));
        assert_eq!(refused, Err(WireError::TooFarAhead { limit: 1000 }));
        // A hole filled, or a reader gone, gives its share back.
        read(&mut first, &bytes, 0, 100);
        drop(second);
        assert_eq!(waiting.load(Ordering::Relaxed), 0);
    }
}
