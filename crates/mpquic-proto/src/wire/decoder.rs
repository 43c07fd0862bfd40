//! Incremental decoders for the two kinds of per-path stream: bytes go in as they arrive, in
//! pieces of any size, and whole frames or chunks come out. A driver feeds them whatever its
//! transport read; nothing here waits or reads.
//!
//! Limits are checked as soon as the header that declares them is complete, before any byte
//! of the payload is buffered, and a payload's buffer grows only with the bytes that arrived.

use bytes::Bytes;

use super::{check_chunk, encoded_len, payload_len, Frame, WireError};

/// The bytes of one varint, collected across pieces of input.
#[derive(Debug, Default)]
pub(super) struct VarintReader {
    bytes: [u8; 8],
    have: usize,
}

impl VarintReader {
    /// Takes what the varint still needs from the front of `input`; the value once complete.
    pub(super) fn feed(&mut self, input: &mut &[u8]) -> Option<u64> {
        let first = match self.have {
            0 => *input.first()?,
            _ => self.bytes[0],
        };
        let need = encoded_len(first) - self.have;
        let (taken, rest) = input.split_at(need.min(input.len()));
        self.bytes[self.have..self.have + taken.len()].copy_from_slice(taken);
        self.have += taken.len();
        *input = rest;
        if self.have < encoded_len(first) {
            return None;
        }
        let mut whole = &self.bytes[..self.have];
        self.have = 0;
        super::get_varint(&mut whole).ok()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.have == 0
    }
}

/// Decodes the frames of a control stream.
///
/// ```
/// use mpquic_proto::wire::{Frame, FrameDecoder};
///
/// let mut bytes = Vec::new();
/// Frame::MaxData { max: 1 << 20 }.encode(&mut bytes)?;
/// let mut decoder = FrameDecoder::default();
/// let (head, tail) = bytes.split_at(2);
/// assert_eq!(decoder.decode(&mut &head[..])?, None);
/// assert_eq!(decoder.decode(&mut &tail[..])?, Some(Frame::MaxData { max: 1 << 20 }));
/// assert!(decoder.finish().is_ok());
/// # Ok::<(), mpquic_proto::wire::WireError>(())
/// ```
#[derive(Debug, Default)]
pub struct FrameDecoder {
    varint: VarintReader,
    frame_type: Option<u64>,
    len: Option<usize>,
    payload: Vec<u8>,
}

impl FrameDecoder {
    /// Takes bytes from the front of `input` and returns the next whole frame, or `Ok(None)`
    /// once `input` is used up inside one. A payload declared above
    /// [`MAX_FRAME_PAYLOAD`](super::MAX_FRAME_PAYLOAD) fails before any of it is buffered.
    pub fn decode(&mut self, input: &mut &[u8]) -> Result<Option<Frame>, WireError> {
        let frame_type = match self.frame_type {
            Some(t) => t,
            None => {
                let Some(t) = self.varint.feed(input) else {
                    return Ok(None);
                };
                *self.frame_type.insert(t)
            }
        };
        let len = match self.len {
            Some(len) => len,
            None => {
                let Some(declared) = self.varint.feed(input) else {
                    return Ok(None);
                };
                *self.len.insert(payload_len(declared)?)
            }
        };
        let (taken, rest) = input.split_at((len - self.payload.len()).min(input.len()));
        self.payload.extend_from_slice(taken);
        *input = rest;
        if self.payload.len() < len {
            return Ok(None);
        }
        let frame = Frame::decode_payload(frame_type, &self.payload);
        self.frame_type = None;
        self.len = None;
        self.payload.clear();
        frame.map(Some)
    }

    /// The stream ended: fine between frames, [`WireError::Truncated`] inside one.
    pub fn finish(&self) -> Result<(), WireError> {
        if self.frame_type.is_none() && self.varint.is_empty() {
            Ok(())
        } else {
            Err(WireError::Truncated)
        }
    }
}

/// One chunk of a logical stream, as a chunk stream carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The logical stream (from the chunk stream's header).
    pub stream: u64,
    /// Where the bytes start in the logical stream.
    pub offset: u64,
    /// The bytes, in an allocation of their own length.
    pub data: Bytes,
}

/// Decodes a chunk stream: the logical stream id, then chunks.
#[derive(Debug, Default)]
pub struct ChunkDecoder {
    varint: VarintReader,
    stream: Option<u64>,
    offset: Option<u64>,
    len: Option<u64>,
    data: Vec<u8>,
}

/// A declared chunk length is only a claim: at most this much is reserved before the bytes
/// arrive (the largest chunk mpquic's own sender writes, so its chunks never reallocate).
const CHUNK_RESERVE: u64 = 64 * 1024;

impl ChunkDecoder {
    /// The logical stream this chunk stream carries, once its header has arrived.
    pub fn stream(&self) -> Option<u64> {
        self.stream
    }

    /// The logical offset of the next byte while inside a chunk's bytes; `None` in a header.
    pub fn next_offset(&self) -> Option<u64> {
        match (self.offset, self.len) {
            (Some(offset), Some(_)) => Some(offset + self.data.len() as u64),
            _ => None,
        }
    }

    /// Takes bytes from the front of `input` and returns the next whole chunk, or `Ok(None)`
    /// once `input` is used up inside the header or a chunk. Lengths above
    /// [`MAX_CHUNK`](super::MAX_CHUNK) and ends beyond [`MAX_VARINT`](super::MAX_VARINT) fail
    /// before any of the chunk's bytes are buffered.
    pub fn decode(&mut self, input: &mut &[u8]) -> Result<Option<Chunk>, WireError> {
        let stream = match self.stream {
            Some(s) => s,
            None => {
                let Some(s) = self.varint.feed(input) else {
                    return Ok(None);
                };
                *self.stream.insert(s)
            }
        };
        let offset = match self.offset {
            Some(o) => o,
            None => {
                let Some(o) = self.varint.feed(input) else {
                    return Ok(None);
                };
                *self.offset.insert(o)
            }
        };
        let len = match self.len {
            Some(len) => len,
            None => {
                let Some(len) = self.varint.feed(input) else {
                    return Ok(None);
                };
                check_chunk(offset, len)?;
                self.data = Vec::with_capacity(len.min(CHUNK_RESERVE) as usize);
                *self.len.insert(len)
            }
        };
        // The length is checked against MAX_CHUNK, so it fits a usize.
        let missing = len as usize - self.data.len();
        let (taken, rest) = input.split_at(missing.min(input.len()));
        self.data.extend_from_slice(taken);
        *input = rest;
        if self.data.len() < len as usize {
            return Ok(None);
        }
        self.offset = None;
        self.len = None;
        let mut data = std::mem::take(&mut self.data);
        // Growing may have doubled the allocation past the length (1 MiB into 2 MiB); the
        // receiver keeps the chunk as it is, so give the slack back.
        data.shrink_to_fit();
        Ok(Some(Chunk {
            stream,
            offset,
            data: Bytes::from(data),
        }))
    }

    /// The stream ended: fine before its header or between chunks, [`WireError::Truncated`]
    /// inside either.
    pub fn finish(&self) -> Result<(), WireError> {
        if self.offset.is_none() && self.varint.is_empty() {
            Ok(())
        } else {
            Err(WireError::Truncated)
        }
    }
}
