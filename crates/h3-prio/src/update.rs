//! The HTTP/3 PRIORITY_UPDATE frame (RFC 9218 section 7.2).
//!
//! ```text
//! HTTP/3 PRIORITY_UPDATE Frame {
//!   Type (i) = 0xF0700..0xF0701,
//!   Length (i),
//!   Prioritized Element ID (i),
//!   Priority Field Value (..),
//! }
//! ```
//!
//! The caller's HTTP/3 frame reader finds the frame on the client control stream and hands
//! this module its type and payload; this module decodes and checks the payload. Errors carry
//! the HTTP/3 error code (RFC 9114 section 8.1) the connection is to be closed with.

use mpquic_sched::Priority;

use crate::priority::{FieldError, PriorityField};

/// Frame type of the PRIORITY_UPDATE that reprioritizes a request stream.
pub const PRIORITY_UPDATE_REQUEST: u64 = 0xF0700;

/// Frame type of the PRIORITY_UPDATE that reprioritizes a push stream.
pub const PRIORITY_UPDATE_PUSH: u64 = 0xF0701;

/// The largest value a QUIC variable-length integer holds (RFC 9000 section 16): 2^62 - 1.
pub const MAX_VARINT: u64 = (1 << 62) - 1;

/// The HTTP/3 error codes a PRIORITY_UPDATE can lead to (RFC 9114 section 8.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u64)]
pub enum H3ErrorCode {
    /// `H3_GENERAL_PROTOCOL_ERROR` (0x0101).
    GeneralProtocolError = 0x0101,
    /// `H3_FRAME_ERROR` (0x0106): a frame that fails its layout.
    FrameError = 0x0106,
    /// `H3_ID_ERROR` (0x0108): a stream or push id used wrongly.
    IdError = 0x0108,
}

impl H3ErrorCode {
    /// The code as sent in CONNECTION_CLOSE.
    pub const fn value(self) -> u64 {
        self as u64
    }

    /// The code's name in RFC 9114.
    pub const fn name(self) -> &'static str {
        match self {
            H3ErrorCode::GeneralProtocolError => "H3_GENERAL_PROTOCOL_ERROR",
            H3ErrorCode::FrameError => "H3_FRAME_ERROR",
            H3ErrorCode::IdError => "H3_ID_ERROR",
        }
    }
}

/// Why a PRIORITY_UPDATE frame was refused. [`UpdateError::code`] is the connection error to
/// close with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpdateError {
    /// The frame type is neither 0xF0700 nor 0xF0701.
    #[error("frame type {0:#x} is not PRIORITY_UPDATE")]
    NotPriorityUpdate(u64),
    /// A PRIORITY_UPDATE for a push stream (0xF0701). mpquic's servers never promise a push,
    /// and RFC 9218 section 7.2 says: "If a server receives a PRIORITY_UPDATE (type=0xF0701)
    /// with a push ID that is greater than the maximum push ID or that has not yet been
    /// promised, this MUST be treated as a connection error of type H3_ID_ERROR."
    #[error("PRIORITY_UPDATE for push id {0}, which was never promised")]
    PushNotPromised(u64),
    /// The payload ends inside the Prioritized Element ID.
    #[error("PRIORITY_UPDATE payload ends inside the prioritized element id")]
    Truncated,
    /// The element id of a request-stream update is not a client-initiated bidirectional
    /// stream. Section 7.2: "If a server receives a PRIORITY_UPDATE (type=0xF0700) for a
    /// stream ID that is not a request stream, this MUST be treated as a connection error of
    /// type H3_ID_ERROR."
    #[error(
        "PRIORITY_UPDATE for stream {0}, which is not a client-initiated bidirectional stream"
    )]
    NotRequestStream(u64),
    /// The stream is beyond the client's bidirectional stream limit ("this SHOULD be treated
    /// as a connection error of type H3_ID_ERROR"); see [`PriorityUpdate::check_limit`].
    #[error("PRIORITY_UPDATE for stream {stream_id}, beyond the limit of {limit} client streams")]
    BeyondStreamLimit {
        /// The stream id.
        stream_id: u64,
        /// The number of client-initiated bidirectional streams allowed.
        limit: u64,
    },
    /// The Priority Field Value does not parse. Section 7: "Failure to parse the Priority Field
    /// Value MAY be treated as a connection error. ... in HTTP/3, the error is of type
    /// H3_GENERAL_PROTOCOL_ERROR." A lenient receiver applies [`Priority::DEFAULT`] to
    /// `stream_id` instead ("Omitting a priority parameter is a signal to use its default
    /// value").
    #[error("PRIORITY_UPDATE for stream {stream_id} carries a bad priority field: {source}")]
    BadField {
        /// The stream the frame was for.
        stream_id: u64,
        /// What is wrong with the field.
        source: FieldError,
    },
}

impl UpdateError {
    /// The HTTP/3 connection error for this failure.
    pub const fn code(&self) -> H3ErrorCode {
        match self {
            UpdateError::NotPriorityUpdate(_) | UpdateError::Truncated => H3ErrorCode::FrameError,
            UpdateError::PushNotPromised(_)
            | UpdateError::NotRequestStream(_)
            | UpdateError::BeyondStreamLimit { .. } => H3ErrorCode::IdError,
            UpdateError::BadField { .. } => H3ErrorCode::GeneralProtocolError,
        }
    }
}

/// A decoded, checked request-stream PRIORITY_UPDATE: the stream it is for and the complete
/// priority it sets. Section 7: "A PRIORITY_UPDATE frame communicates a complete set of all
/// priority parameters ... Omitting a priority parameter is a signal to use its default
/// value", so it replaces the stream's priority rather than merging with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PriorityUpdate {
    /// The request stream (a client-initiated bidirectional stream id: `id % 4 == 0`).
    pub stream_id: u64,
    /// The priority it sets.
    pub priority: Priority,
}

impl PriorityUpdate {
    /// Decodes the payload of a frame of type `frame_type` (everything after the frame's
    /// Length). Unknown parameters and out-of-range or wrongly typed values in the field are
    /// ignored as in [`PriorityField::from_field`](crate::PriorityField::from_field); a field that does not parse at all is
    /// [`UpdateError::BadField`]. Does not check the stream limit: see
    /// [`PriorityUpdate::check_limit`].
    pub fn decode(frame_type: u64, payload: &[u8]) -> Result<Self, UpdateError> {
        let push = match frame_type {
            PRIORITY_UPDATE_REQUEST => false,
            PRIORITY_UPDATE_PUSH => true,
            other => return Err(UpdateError::NotPriorityUpdate(other)),
        };
        let (element_id, used) = decode_varint(payload).ok_or(UpdateError::Truncated)?;
        if push {
            return Err(UpdateError::PushNotPromised(element_id));
        }
        if element_id % 4 != 0 {
            return Err(UpdateError::NotRequestStream(element_id));
        }
        let field = payload.get(used..).unwrap_or_default();
        let priority = Priority::try_from_field(field).map_err(|source| UpdateError::BadField {
            stream_id: element_id,
            source,
        })?;
        Ok(Self {
            stream_id: element_id,
            priority,
        })
    }

    /// Checks the stream against the number of client-initiated bidirectional streams the
    /// server allows (its `initial_max_streams_bidi` and later MAX_STREAMS): section 7.2, "The
    /// stream ID MUST be within the client-initiated bidirectional stream limit".
    pub fn check_limit(&self, max_client_bidi_streams: u64) -> Result<(), UpdateError> {
        if self.stream_id / 4 >= max_client_bidi_streams {
            return Err(UpdateError::BeyondStreamLimit {
                stream_id: self.stream_id,
                limit: max_client_bidi_streams,
            });
        }
        Ok(())
    }

    /// The frame's payload: the stream id as a variable-length integer, then the field value.
    /// A stream id above [`MAX_VARINT`] (which no QUIC stream has) is written as `MAX_VARINT`.
    pub fn encode_payload(&self, out: &mut Vec<u8>) {
        encode_varint(self.stream_id.min(MAX_VARINT), out);
        out.extend_from_slice(self.priority.to_field().as_bytes());
    }

    /// The whole frame, type and length included, as a client writes it on its control stream.
    pub fn encode_frame(&self, out: &mut Vec<u8>) {
        let mut payload = Vec::with_capacity(16);
        self.encode_payload(&mut payload);
        encode_varint(PRIORITY_UPDATE_REQUEST, out);
        encode_varint(payload.len() as u64, out);
        out.extend_from_slice(&payload);
    }
}

/// Reads a QUIC variable-length integer (RFC 9000 section 16) from the start of `buf`:
/// its value and the number of bytes it took, or `None` if `buf` is too short.
pub fn decode_varint(buf: &[u8]) -> Option<(u64, usize)> {
    let first = *buf.first()?;
    let len = 1usize << (first >> 6);
    let bytes = buf.get(..len)?;
    let mut value = u64::from(first & 0x3f);
    for b in &bytes[1..] {
        value = (value << 8) | u64::from(*b);
    }
    Some((value, len))
}

/// Appends `value` as a QUIC variable-length integer in its shortest form. Values above
/// [`MAX_VARINT`] are written as `MAX_VARINT`.
pub fn encode_varint(value: u64, out: &mut Vec<u8>) {
    let value = value.min(MAX_VARINT);
    if value < 1 << 6 {
        out.push(value as u8);
    } else if value < 1 << 14 {
        out.extend_from_slice(&((value as u16) | 0x4000).to_be_bytes());
    } else if value < 1 << 30 {
        out.extend_from_slice(&((value as u32) | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&(value | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mpquic_sched::Urgency;

    fn payload(id: u64, field: &str) -> Vec<u8> {
        let mut out = Vec::new();
        encode_varint(id, &mut out);
        out.extend_from_slice(field.as_bytes());
        out
    }

    #[test]
    fn varints_follow_rfc9000_examples() {
        // RFC 9000 appendix A.1's examples.
        assert_eq!(
            decode_varint(&[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c]),
            Some((151_288_809_941_952_652, 8))
        );
        assert_eq!(
            decode_varint(&[0x9d, 0x7f, 0x3e, 0x7d]),
            Some((494_878_333, 4))
        );
        assert_eq!(decode_varint(&[0x7b, 0xbd]), Some((15_293, 2)));
        assert_eq!(decode_varint(&[0x25]), Some((37, 1)));
        assert_eq!(decode_varint(&[0x40, 0x25]), Some((37, 2)));
        assert_eq!(decode_varint(&[0x7b]), None);
        assert_eq!(decode_varint(&[]), None);
        for v in [
            0,
            63,
            64,
            16_383,
            16_384,
            (1 << 30) - 1,
            1 << 30,
            MAX_VARINT,
        ] {
            let mut out = Vec::new();
            encode_varint(v, &mut out);
            assert_eq!(decode_varint(&out), Some((v, out.len())));
        }
        let mut out = Vec::new();
        encode_varint(u64::MAX, &mut out);
        assert_eq!(decode_varint(&out), Some((MAX_VARINT, 8)));
    }

    #[test]
    fn request_stream_updates_decode() {
        let update = PriorityUpdate::decode(PRIORITY_UPDATE_REQUEST, &payload(8, "u=0")).unwrap();
        assert_eq!(update.stream_id, 8);
        assert_eq!(
            update.priority,
            Priority::new(Urgency::new(0).unwrap(), false)
        );
        // Section 7: omitted parameters take their defaults (the update is complete).
        let update = PriorityUpdate::decode(PRIORITY_UPDATE_REQUEST, &payload(0, "")).unwrap();
        assert_eq!(update.priority, Priority::DEFAULT);
        let update =
            PriorityUpdate::decode(PRIORITY_UPDATE_REQUEST, &payload(400, "i, u=9")).unwrap();
        assert_eq!(
            update.priority,
            Priority::new(Urgency::new(3).unwrap(), true)
        );
    }

    #[test]
    fn round_trip_through_a_whole_frame() {
        let update = PriorityUpdate {
            stream_id: 1_000_000,
            priority: Priority::new(Urgency::new(6).unwrap(), true),
        };
        let mut frame = Vec::new();
        update.encode_frame(&mut frame);
        let (ty, a) = decode_varint(&frame).unwrap();
        let (len, b) = decode_varint(&frame[a..]).unwrap();
        assert_eq!(ty, PRIORITY_UPDATE_REQUEST);
        assert_eq!(len as usize, frame.len() - a - b);
        assert_eq!(PriorityUpdate::decode(ty, &frame[a + b..]), Ok(update));
    }

    #[test]
    fn bad_frames_map_to_their_h3_errors() {
        let err = PriorityUpdate::decode(PRIORITY_UPDATE_REQUEST, &payload(1, "u=1")).unwrap_err();
        assert_eq!(err, UpdateError::NotRequestStream(1));
        assert_eq!(err.code(), H3ErrorCode::IdError);
        assert_eq!(err.code().value(), 0x108);
        for id in [2, 3, 5, 6, 7, 4 * 9 + 2] {
            let err =
                PriorityUpdate::decode(PRIORITY_UPDATE_REQUEST, &payload(id, "")).unwrap_err();
            assert_eq!(err.code(), H3ErrorCode::IdError, "{id}");
        }
        let err = PriorityUpdate::decode(PRIORITY_UPDATE_PUSH, &payload(0, "u=1")).unwrap_err();
        assert_eq!(err, UpdateError::PushNotPromised(0));
        assert_eq!(err.code().name(), "H3_ID_ERROR");
        let err = PriorityUpdate::decode(PRIORITY_UPDATE_REQUEST, &[]).unwrap_err();
        assert_eq!(err, UpdateError::Truncated);
        assert_eq!(err.code(), H3ErrorCode::FrameError);
        let err = PriorityUpdate::decode(PRIORITY_UPDATE_REQUEST, &[0x80, 1]).unwrap_err();
        assert_eq!(err, UpdateError::Truncated);
        let err = PriorityUpdate::decode(0x10, &payload(0, "")).unwrap_err();
        assert_eq!(err, UpdateError::NotPriorityUpdate(0x10));
        let err = PriorityUpdate::decode(PRIORITY_UPDATE_REQUEST, &payload(4, "u=1,")).unwrap_err();
        assert!(matches!(err, UpdateError::BadField { stream_id: 4, .. }));
        assert_eq!(err.code(), H3ErrorCode::GeneralProtocolError);
        let big = "u=1".to_owned() + &" ".repeat(10_000);
        let err = PriorityUpdate::decode(PRIORITY_UPDATE_REQUEST, &payload(4, &big)).unwrap_err();
        assert!(matches!(
            err,
            UpdateError::BadField {
                source: FieldError::TooLong { .. },
                ..
            }
        ));
    }

    #[test]
    fn the_stream_limit_is_checked_on_request() {
        let update = PriorityUpdate::decode(PRIORITY_UPDATE_REQUEST, &payload(396, "")).unwrap();
        assert_eq!(update.check_limit(100), Ok(()));
        assert_eq!(
            update.check_limit(99),
            Err(UpdateError::BeyondStreamLimit {
                stream_id: 396,
                limit: 99
            })
        );
        assert_eq!(
            update.check_limit(0).unwrap_err().code(),
            H3ErrorCode::IdError
        );
    }
}
