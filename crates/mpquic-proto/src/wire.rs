//! The wire format: QUIC varints, control frames and chunk streams.
//!
//! Every path is its own quinn connection. On each path, one bidirectional quinn stream carries
//! control frames, and the bytes of every logical stream travel as chunks on unidirectional
//! quinn streams, one per (logical stream, path). All integers are QUIC variable-length
//! integers ("varints", RFC 9000 §16): the top two bits of the first byte give the encoded
//! length (1, 2, 4 or 8 bytes, big-endian), so values run up to [`MAX_VARINT`] = 2^62 - 1.
//!
//! | Where | Layout | Limits |
//! |---|---|---|
//! | control stream (one bidirectional per path) | frames: type varint, payload length varint, payload | payload at most [`MAX_FRAME_PAYLOAD`] bytes and consumed exactly |
//! | chunk stream (one unidirectional per logical stream and path) | logical stream id varint, then chunks: offset varint, length varint, `length` bytes | length at most [`MAX_CHUNK`], offset + length at most [`MAX_VARINT`] |
//!
//! Control frames ([`Frame`]); "params" is four varints: max data, max stream data, max
//! bidirectional streams, max unidirectional streams ([`Params`]):
//!
//! | Type | Frame | Payload |
//! |---|---|---|
//! | 0x01 | [`Frame::NewSession`] | params |
//! | 0x02 | [`Frame::Join`] | session varint, proof (32 bytes), params |
//! | 0x03 | [`Frame::Welcome`] | session varint, secret (16 bytes), path varint (fits u32), params |
//! | 0x04 | [`Frame::Joined`] | path varint (fits u32) |
//! | 0x05 | [`Frame::Refused`] | code varint, reason length varint (at most [`MAX_REASON_LEN`]), UTF-8 reason |
//! | 0x10 | [`Frame::MaxData`] | max varint |
//! | 0x11 | [`Frame::MaxStreamData`] | stream varint, max varint |
//! | 0x12 / 0x13 | [`Frame::MaxStreams`] bidirectional / unidirectional | count varint |
//! | 0x14 / 0x15 | [`Frame::DataAck`] without / with fin | stream varint, offset varint |
//! | 0x16 | [`Frame::Fin`] | stream varint, final size varint |
//! | 0x17 | [`Frame::ResetStream`] | stream varint, code varint, final size varint |
//! | 0x18 | [`Frame::StopSending`] | stream varint, code varint |
//! | 0x19 | [`Frame::PathStatus`] | varint 0 (active) or 1 (backup) |
//! | 0x1a | [`Frame::PathReceived`] | path varint (fits u32), bytes varint |
//! | 0x1b | [`Frame::Ping`] | (empty) |
//! | 0x1c | [`Frame::Missing`] | path varint (fits u32), transport stream varint, from varint |
//! | 0x1d | [`Frame::Tail`] | stream varint, end varint |
//! | 0x1e | [`Frame::MissingTail`] | path varint (fits u32), stream varint, from varint |
//!
//! Everything here parses bytes from the network: malformed input is an error, never a panic,
//! and lengths are checked against their limits before anything is allocated.

mod chunk_reader;
mod decoder;
#[cfg(test)]
mod tests;

pub use chunk_reader::ChunkReader;
pub use decoder::{Chunk, ChunkDecoder, FrameDecoder};

/// The largest value a QUIC varint can carry, 2^62 - 1.
pub const MAX_VARINT: u64 = (1 << 62) - 1;

/// The largest control frame payload accepted, in bytes; larger declared lengths are refused
/// before the payload is read, so a peer cannot make us buffer much.
pub const MAX_FRAME_PAYLOAD: u64 = 4096;

/// The largest chunk accepted on a chunk stream, in bytes (1 MiB).
pub const MAX_CHUNK: u64 = 1 << 20;

/// The longest [`Frame::Refused`] reason, in bytes of UTF-8.
pub const MAX_REASON_LEN: usize = 256;

/// Errors from encoding or decoding the wire format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The input ended inside a varint, a frame or a chunk.
    #[error("input ended in the middle of a varint, frame or chunk")]
    Truncated,
    /// The value is larger than [`MAX_VARINT`] and cannot be encoded.
    #[error("{0} does not fit in a QUIC varint (at most 2^62 - 1)")]
    VarIntTooLarge(u64),
    /// A frame declared a payload longer than [`MAX_FRAME_PAYLOAD`].
    #[error("frame payload of {0} bytes exceeds the limit of {MAX_FRAME_PAYLOAD} bytes")]
    FrameTooLarge(u64),
    /// A frame's fields did not use its whole declared payload.
    #[error("frame type {frame_type:#x} declared a {declared}-byte payload but its fields used {used} bytes")]
    FrameLength {
        /// The frame's type.
        frame_type: u64,
        /// The declared payload length.
        declared: u64,
        /// The bytes the frame's fields took.
        used: u64,
    },
    /// The frame type is not one this version knows.
    #[error("unknown frame type {0:#x}")]
    UnknownFrame(u64),
    /// A field holds a value its frame does not allow.
    #[error("malformed frame: {0}")]
    Malformed(&'static str),
    /// A chunk declared a length above [`MAX_CHUNK`].
    #[error("chunk of {0} bytes exceeds the limit of {MAX_CHUNK} bytes")]
    ChunkTooLarge(u64),
    /// A chunk would end beyond [`MAX_VARINT`].
    #[error("chunk at offset {offset} with length {len} ends beyond 2^62 - 1")]
    OffsetOverflow {
        /// The chunk's offset.
        offset: u64,
        /// The chunk's length.
        len: u64,
    },
    /// More bytes of a chunk stream arrived past a hole than may wait for it
    /// ([`ChunkReader`]).
    #[error("more than {limit} bytes of a chunk stream arrived past a hole")]
    TooFarAhead {
        /// The most that may wait.
        limit: u64,
    },
}

/// Appends `value` as a QUIC varint in its shortest form. Leaves `buf` unchanged on error.
pub fn put_varint(buf: &mut Vec<u8>, value: u64) -> Result<(), WireError> {
    match value {
        0..=0x3f => buf.push(value as u8),
        0x40..=0x3fff => buf.extend_from_slice(&(0x4000 | value as u16).to_be_bytes()),
        0x4000..=0x3fff_ffff => buf.extend_from_slice(&(0x8000_0000 | value as u32).to_be_bytes()),
        0x4000_0000..=MAX_VARINT => {
            buf.extend_from_slice(&(0xc000_0000_0000_0000 | value).to_be_bytes())
        }
        _ => return Err(WireError::VarIntTooLarge(value)),
    }
    Ok(())
}

/// The number of bytes [`put_varint`] writes for `value`: 1, 2, 4 or 8 (8 also for values above
/// [`MAX_VARINT`], which cannot be encoded).
pub fn varint_len(value: u64) -> usize {
    match value {
        0..=0x3f => 1,
        0x40..=0x3fff => 2,
        0x4000..=0x3fff_ffff => 4,
        _ => 8,
    }
}

/// The encoded length of a varint, from its first byte.
fn encoded_len(first: u8) -> usize {
    1 << (first >> 6)
}

/// Combines a varint's first byte with the bytes after it.
fn assemble(first: u8, rest: &[u8]) -> u64 {
    rest.iter()
        .fold(u64::from(first & 0x3f), |acc, &b| (acc << 8) | u64::from(b))
}

/// Reads a varint from the front of `buf` and advances past it; on error `buf` is unchanged.
/// Non-shortest encodings are accepted, as RFC 9000 allows.
pub fn get_varint(buf: &mut &[u8]) -> Result<u64, WireError> {
    let first = *buf.first().ok_or(WireError::Truncated)?;
    let (bytes, rest) = buf
        .split_at_checked(encoded_len(first))
        .ok_or(WireError::Truncated)?;
    let value = assemble(first, bytes.get(1..).unwrap_or_default());
    *buf = rest;
    Ok(value)
}

/// Takes `N` raw bytes from the front of `buf`.
fn get_array<const N: usize>(buf: &mut &[u8]) -> Result<[u8; N], WireError> {
    let (head, rest) = buf.split_first_chunk::<N>().ok_or(WireError::Truncated)?;
    *buf = rest;
    Ok(*head)
}

/// Reads a varint that must fit a path id.
fn get_path(buf: &mut &[u8]) -> Result<u32, WireError> {
    u32::try_from(get_varint(buf)?).map_err(|_| WireError::Malformed("path id exceeds u32"))
}

/// Checks a declared frame payload length against [`MAX_FRAME_PAYLOAD`].
fn payload_len(len: u64) -> Result<usize, WireError> {
    if len > MAX_FRAME_PAYLOAD {
        return Err(WireError::FrameTooLarge(len));
    }
    usize::try_from(len).map_err(|_| WireError::FrameTooLarge(len))
}

/// A session: the logical connection that several paths join.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(pub u64);

/// Flow-control and stream limits one side grants the other when a path opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Bytes the peer may send over all streams of the session.
    pub max_data: u64,
    /// Bytes the peer may send on each stream.
    pub max_stream_data: u64,
    /// Bidirectional streams the peer may open.
    pub max_bidi_streams: u64,
    /// Unidirectional streams the peer may open.
    pub max_uni_streams: u64,
}

impl Params {
    fn encode(&self, buf: &mut Vec<u8>) -> Result<(), WireError> {
        put_varint(buf, self.max_data)?;
        put_varint(buf, self.max_stream_data)?;
        put_varint(buf, self.max_bidi_streams)?;
        put_varint(buf, self.max_uni_streams)
    }

    fn decode(buf: &mut &[u8]) -> Result<Params, WireError> {
        Ok(Params {
            max_data: get_varint(buf)?,
            max_stream_data: get_varint(buf)?,
            max_bidi_streams: get_varint(buf)?,
            max_uni_streams: get_varint(buf)?,
        })
    }
}

const NEW_SESSION: u64 = 0x01;
const JOIN: u64 = 0x02;
const WELCOME: u64 = 0x03;
const JOINED: u64 = 0x04;
const REFUSED: u64 = 0x05;
const MAX_DATA: u64 = 0x10;
const MAX_STREAM_DATA: u64 = 0x11;
const MAX_STREAMS_BIDI: u64 = 0x12;
const MAX_STREAMS_UNI: u64 = 0x13;
const DATA_ACK: u64 = 0x14;
const DATA_ACK_FIN: u64 = 0x15;
const FIN: u64 = 0x16;
const RESET_STREAM: u64 = 0x17;
const STOP_SENDING: u64 = 0x18;
const PATH_STATUS: u64 = 0x19;
const PATH_RECEIVED: u64 = 0x1a;
const PING: u64 = 0x1b;
const MISSING: u64 = 0x1c;
const TAIL: u64 = 0x1d;
const MISSING_TAIL: u64 = 0x1e;

/// A control frame, sent on a path's bidirectional control stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// Client to server on the first path: start a new session.
    NewSession {
        /// The client's limits.
        params: Params,
    },
    /// Client to server on every further path: add this path to an existing session.
    Join {
        /// The session to join.
        session: SessionId,
        /// Proof of knowing the session's secret.
        proof: [u8; 32],
        /// The client's limits.
        params: Params,
    },
    /// Server's answer to [`Frame::NewSession`].
    Welcome {
        /// The new session.
        session: SessionId,
        /// The secret further paths prove knowledge of.
        secret: [u8; 16],
        /// This path's id within the session.
        path: u32,
        /// The server's limits.
        params: Params,
    },
    /// Server's answer to [`Frame::Join`].
    Joined {
        /// This path's id within the session.
        path: u32,
    },
    /// Server's refusal of a [`Frame::NewSession`] or [`Frame::Join`].
    Refused {
        /// Why, for programs.
        code: u64,
        /// Why, for people: UTF-8, at most [`MAX_REASON_LEN`] bytes (see [`Frame::refused`]).
        reason: String,
    },
    /// Raises the session-wide data limit.
    MaxData {
        /// New limit in bytes, over all streams.
        max: u64,
    },
    /// Raises one stream's data limit.
    MaxStreamData {
        /// The logical stream.
        stream: u64,
        /// New limit in bytes (an exclusive end offset).
        max: u64,
    },
    /// Raises the number of streams the peer may open.
    MaxStreams {
        /// Unidirectional streams if set, else bidirectional.
        uni: bool,
        /// New cumulative limit.
        count: u64,
    },
    /// Acknowledges a stream's bytes as received.
    DataAck {
        /// The logical stream.
        stream: u64,
        /// Every byte below this offset was received.
        offset: u64,
        /// The stream's end was received too.
        fin: bool,
    },
    /// The sender will send no bytes on the stream at or beyond `final_size`.
    Fin {
        /// The logical stream.
        stream: u64,
        /// The stream's total length.
        final_size: u64,
    },
    /// The sender abandons the stream.
    ResetStream {
        /// The logical stream.
        stream: u64,
        /// Application error code.
        code: u64,
        /// Bytes the sender had sent, for flow-control accounting.
        final_size: u64,
    },
    /// The receiver asks the sender to stop sending on the stream.
    StopSending {
        /// The logical stream.
        stream: u64,
        /// Application error code.
        code: u64,
    },
    /// Marks the path as a backup, used only when no active path is left, or as active again.
    PathStatus {
        /// Backup if set, else active.
        backup: bool,
    },
    /// How many UDP payload bytes the receiver's quinn has taken in on a path so far, sent on
    /// the path with the lowest one-way delay so that the sender learns of delivery on a slow
    /// path before that path's own acknowledgements come back (see
    /// [`TransportConfig::delivery_reports`](crate::TransportConfig::delivery_reports)).
    PathReceived {
        /// The path the bytes arrived on.
        path: u32,
        /// Datagram bytes received on it since it opened.
        bytes: u64,
    },
    /// Nothing: a packet on the path that the peer's transport acknowledges, so that the
    /// sender learns of a loss among the packets before it a round trip after they left
    /// ([`ReinjectionConfig::probe_tails`](crate::ReinjectionConfig::probe_tails)).
    Ping,
    /// The receiver got bytes of a chunk stream past a hole on a path, sent on the path with the
    /// lowest one-way delay, so that the sender learns of the loss before that path's own
    /// acknowledgements come back; nothing of the chunk stream past the hole reaches the
    /// receiver until the path repairs it, so urgent bytes there go again on another path
    /// ([`ReinjectionConfig::missing_reports`](crate::ReinjectionConfig::missing_reports)).
    Missing {
        /// The path the hole is on.
        path: u32,
        /// The chunk stream: its transport stream id on that path.
        transport_stream: u64,
        /// The logical offset where the hole starts, or 0 if the receiver cannot tell (the
        /// hole took the chunk stream's header or a chunk's): bytes from here on are missing.
        from: u64,
    },
    /// A tail probe that says what it follows: the bytes of `stream` the sender had sent on
    /// this path end at `end`. It leaves after them on the same path, so a receiver that gets
    /// it without the last of them learns that the path lost the stream's last bytes there,
    /// which no later bytes of the stream would show as a hole
    /// ([`ReinjectionConfig::missing_reports`](crate::ReinjectionConfig::missing_reports)).
    Tail {
        /// The logical stream.
        stream: u64,
        /// The end of its bytes sent on the path so far.
        end: u64,
    },
    /// The receiver's answer to a [`Frame::Tail`] whose last bytes did not arrive, sent on the
    /// path with the lowest one-way delay, as [`Frame::Missing`] is.
    MissingTail {
        /// The path the tail was lost on.
        path: u32,
        /// The logical stream.
        stream: u64,
        /// Where the bytes missing before the tail's end start.
        from: u64,
    },
}

impl Frame {
    /// A [`Frame::Refused`] whose reason is cut, at a character boundary, to
    /// [`MAX_REASON_LEN`] bytes so it always encodes.
    pub fn refused(code: u64, reason: &str) -> Frame {
        let mut end = reason.len().min(MAX_REASON_LEN);
        while !reason.is_char_boundary(end) {
            end -= 1;
        }
        Frame::Refused {
            code,
            reason: reason.get(..end).unwrap_or_default().to_owned(),
        }
    }

    /// The frame's type on the wire.
    pub fn frame_type(&self) -> u64 {
        match self {
            Frame::NewSession { .. } => NEW_SESSION,
            Frame::Join { .. } => JOIN,
            Frame::Welcome { .. } => WELCOME,
            Frame::Joined { .. } => JOINED,
            Frame::Refused { .. } => REFUSED,
            Frame::MaxData { .. } => MAX_DATA,
            Frame::MaxStreamData { .. } => MAX_STREAM_DATA,
            Frame::MaxStreams { uni: false, .. } => MAX_STREAMS_BIDI,
            Frame::MaxStreams { uni: true, .. } => MAX_STREAMS_UNI,
            Frame::DataAck { fin: false, .. } => DATA_ACK,
            Frame::DataAck { fin: true, .. } => DATA_ACK_FIN,
            Frame::Fin { .. } => FIN,
            Frame::ResetStream { .. } => RESET_STREAM,
            Frame::StopSending { .. } => STOP_SENDING,
            Frame::PathStatus { .. } => PATH_STATUS,
            Frame::PathReceived { .. } => PATH_RECEIVED,
            Frame::Ping => PING,
            Frame::Missing { .. } => MISSING,
            Frame::Tail { .. } => TAIL,
            Frame::MissingTail { .. } => MISSING_TAIL,
        }
    }

    /// Appends the encoded frame to `buf`. Fails, leaving `buf` unchanged, if a value exceeds
    /// [`MAX_VARINT`] or a [`Frame::Refused`] reason exceeds [`MAX_REASON_LEN`].
    pub fn encode(&self, buf: &mut Vec<u8>) -> Result<(), WireError> {
        let start = buf.len();
        let result = self.encode_at(buf, start);
        if result.is_err() {
            buf.truncate(start);
        }
        result
    }

    /// Writes the payload first, then the header behind it, and rotates the header to the
    /// front: the payload length is known without encoding twice or allocating.
    fn encode_at(&self, buf: &mut Vec<u8>, start: usize) -> Result<(), WireError> {
        self.encode_payload(buf)?;
        let len = (buf.len() - start) as u64;
        if len > MAX_FRAME_PAYLOAD {
            return Err(WireError::FrameTooLarge(len));
        }
        let header_start = buf.len();
        put_varint(buf, self.frame_type())?;
        put_varint(buf, len)?;
        let header_len = buf.len() - header_start;
        if let Some(frame) = buf.get_mut(start..) {
            frame.rotate_right(header_len);
        }
        Ok(())
    }

    fn encode_payload(&self, buf: &mut Vec<u8>) -> Result<(), WireError> {
        match self {
            Frame::NewSession { params } => params.encode(buf),
            Frame::Join {
                session,
                proof,
                params,
            } => {
                put_varint(buf, session.0)?;
                buf.extend_from_slice(proof);
                params.encode(buf)
            }
            Frame::Welcome {
                session,
                secret,
                path,
                params,
            } => {
                put_varint(buf, session.0)?;
                buf.extend_from_slice(secret);
                put_varint(buf, u64::from(*path))?;
                params.encode(buf)
            }
            Frame::Joined { path } => put_varint(buf, u64::from(*path)),
            Frame::Refused { code, reason } => {
                if reason.len() > MAX_REASON_LEN {
                    return Err(WireError::Malformed("refusal reason longer than 256 bytes"));
                }
                put_varint(buf, *code)?;
                put_varint(buf, reason.len() as u64)?;
                buf.extend_from_slice(reason.as_bytes());
                Ok(())
            }
            Frame::MaxData { max } => put_varint(buf, *max),
            Frame::MaxStreamData { stream, max } => {
                put_varint(buf, *stream)?;
                put_varint(buf, *max)
            }
            Frame::MaxStreams { count, .. } => put_varint(buf, *count),
            Frame::DataAck { stream, offset, .. } => {
                put_varint(buf, *stream)?;
                put_varint(buf, *offset)
            }
            Frame::Fin { stream, final_size } => {
                put_varint(buf, *stream)?;
                put_varint(buf, *final_size)
            }
            Frame::ResetStream {
                stream,
                code,
                final_size,
            } => {
                put_varint(buf, *stream)?;
                put_varint(buf, *code)?;
                put_varint(buf, *final_size)
            }
            Frame::StopSending { stream, code } => {
                put_varint(buf, *stream)?;
                put_varint(buf, *code)
            }
            Frame::PathStatus { backup } => put_varint(buf, u64::from(*backup)),
            Frame::PathReceived { path, bytes } => {
                put_varint(buf, u64::from(*path))?;
                put_varint(buf, *bytes)
            }
            Frame::Ping => Ok(()),
            Frame::Missing {
                path,
                transport_stream: stream,
                from,
            }
            | Frame::MissingTail { path, stream, from } => {
                put_varint(buf, u64::from(*path))?;
                put_varint(buf, *stream)?;
                put_varint(buf, *from)
            }
            Frame::Tail { stream, end } => {
                put_varint(buf, *stream)?;
                put_varint(buf, *end)
            }
        }
    }

    /// Decodes one whole frame from the front of `buf` and advances past it; on error `buf`
    /// is unchanged. [`WireError::Truncated`] means `buf` ends inside the frame, or the
    /// frame's fields need more bytes than its declared payload length.
    pub fn decode(buf: &mut &[u8]) -> Result<Frame, WireError> {
        let mut rest = *buf;
        let frame_type = get_varint(&mut rest)?;
        let len = payload_len(get_varint(&mut rest)?)?;
        let (payload, rest) = rest.split_at_checked(len).ok_or(WireError::Truncated)?;
        let frame = Frame::decode_payload(frame_type, payload)?;
        *buf = rest;
        Ok(frame)
    }

    /// Parses a frame's payload, which its fields must use exactly.
    fn decode_payload(frame_type: u64, payload: &[u8]) -> Result<Frame, WireError> {
        let mut rest = payload;
        let buf = &mut rest;
        let frame = match frame_type {
            NEW_SESSION => Frame::NewSession {
                params: Params::decode(buf)?,
            },
            JOIN => Frame::Join {
                session: SessionId(get_varint(buf)?),
                proof: get_array(buf)?,
                params: Params::decode(buf)?,
            },
            WELCOME => Frame::Welcome {
                session: SessionId(get_varint(buf)?),
                secret: get_array(buf)?,
                path: get_path(buf)?,
                params: Params::decode(buf)?,
            },
            JOINED => Frame::Joined {
                path: get_path(buf)?,
            },
            REFUSED => {
                let code = get_varint(buf)?;
                let len = get_varint(buf)?;
                if len > MAX_REASON_LEN as u64 {
                    return Err(WireError::Malformed("refusal reason longer than 256 bytes"));
                }
                let (reason, rest) = buf
                    .split_at_checked(len as usize)
                    .ok_or(WireError::Truncated)?;
                *buf = rest;
                let reason = std::str::from_utf8(reason)
                    .map_err(|_| WireError::Malformed("refusal reason is not UTF-8"))?;
                Frame::Refused {
                    code,
                    reason: reason.to_owned(),
                }
            }
            MAX_DATA => Frame::MaxData {
                max: get_varint(buf)?,
            },
            MAX_STREAM_DATA => Frame::MaxStreamData {
                stream: get_varint(buf)?,
                max: get_varint(buf)?,
            },
            MAX_STREAMS_BIDI | MAX_STREAMS_UNI => Frame::MaxStreams {
                uni: frame_type == MAX_STREAMS_UNI,
                count: get_varint(buf)?,
            },
            DATA_ACK | DATA_ACK_FIN => Frame::DataAck {
                stream: get_varint(buf)?,
                offset: get_varint(buf)?,
                fin: frame_type == DATA_ACK_FIN,
            },
            FIN => Frame::Fin {
                stream: get_varint(buf)?,
                final_size: get_varint(buf)?,
            },
            RESET_STREAM => Frame::ResetStream {
                stream: get_varint(buf)?,
                code: get_varint(buf)?,
                final_size: get_varint(buf)?,
            },
            STOP_SENDING => Frame::StopSending {
                stream: get_varint(buf)?,
                code: get_varint(buf)?,
            },
            PATH_STATUS => Frame::PathStatus {
                backup: match get_varint(buf)? {
                    0 => false,
                    1 => true,
                    _ => return Err(WireError::Malformed("path status is neither 0 nor 1")),
                },
            },
            PATH_RECEIVED => Frame::PathReceived {
                path: get_path(buf)?,
                bytes: get_varint(buf)?,
            },
            PING => Frame::Ping,
            MISSING => Frame::Missing {
                path: get_path(buf)?,
                transport_stream: get_varint(buf)?,
                from: get_varint(buf)?,
            },
            TAIL => Frame::Tail {
                stream: get_varint(buf)?,
                end: get_varint(buf)?,
            },
            MISSING_TAIL => Frame::MissingTail {
                path: get_path(buf)?,
                stream: get_varint(buf)?,
                from: get_varint(buf)?,
            },
            _ => return Err(WireError::UnknownFrame(frame_type)),
        };
        if !buf.is_empty() {
            return Err(WireError::FrameLength {
                frame_type,
                declared: payload.len() as u64,
                used: (payload.len() - buf.len()) as u64,
            });
        }
        Ok(frame)
    }
}

/// Appends a chunk stream's header, the logical stream id ([`ChunkDecoder`] reads it).
pub fn encode_chunk_stream_header(stream: u64, buf: &mut Vec<u8>) -> Result<(), WireError> {
    put_varint(buf, stream)
}

/// Checks a chunk's length and end against the limits [`ChunkDecoder`] enforces.
fn check_chunk(offset: u64, len: u64) -> Result<(), WireError> {
    if len > MAX_CHUNK {
        return Err(WireError::ChunkTooLarge(len));
    }
    match offset.checked_add(len) {
        Some(end) if end <= MAX_VARINT => Ok(()),
        _ => Err(WireError::OffsetOverflow { offset, len }),
    }
}

/// Appends a chunk header; the caller appends the `len` bytes after it. Fails, leaving `buf`
/// unchanged, on the limits [`ChunkDecoder`] enforces.
pub fn encode_chunk_header(offset: u64, len: u64, buf: &mut Vec<u8>) -> Result<(), WireError> {
    check_chunk(offset, len)?;
    // Both fit: the end is at most MAX_VARINT.
    put_varint(buf, offset)?;
    put_varint(buf, len)
}
