use bytes::Bytes;
use proptest::prelude::*;

use super::decoder::VarintReader;
use super::*;

/// Reads one frame from `input` as a stream delivering a byte at a time would: `Ok(None)` if
/// the input ends cleanly before a frame.
fn read_frame(input: &mut &[u8]) -> Result<Option<Frame>, WireError> {
    let mut decoder = FrameDecoder::default();
    loop {
        let Some((first, rest)) = input.split_first() else {
            return decoder.finish().map(|()| None);
        };
        *input = rest;
        if let Some(frame) = decoder.decode(&mut std::slice::from_ref(first))? {
            return Ok(Some(frame));
        }
    }
}

/// Reads the next chunk from `input` a byte at a time: `Ok(None)` if the input ends cleanly
/// before one.
fn read_chunk(decoder: &mut ChunkDecoder, input: &mut &[u8]) -> Result<Option<Chunk>, WireError> {
    loop {
        let Some((first, rest)) = input.split_first() else {
            return decoder.finish().map(|()| None);
        };
        *input = rest;
        if let Some(chunk) = decoder.decode(&mut std::slice::from_ref(first))? {
            return Ok(Some(chunk));
        }
    }
}

/// A chunk stream's header for stream 9, then `body`.
fn chunk_stream(body: &[u8]) -> Vec<u8> {
    let mut buf = Vec::new();
    encode_chunk_stream_header(9, &mut buf).unwrap();
    buf.extend_from_slice(body);
    buf
}

fn chunk(stream: u64, offset: u64, data: &'static [u8]) -> Chunk {
    Chunk {
        stream,
        offset,
        data: Bytes::from_static(data),
    }
}

fn encoded(frame: &Frame) -> Vec<u8> {
    let mut buf = Vec::new();
    frame.encode(&mut buf).expect("encodes");
    buf
}

/// A frame with a hand-built header.
fn raw_frame(frame_type: u64, declared: u64, payload: &[u8]) -> Vec<u8> {
    let mut buf = Vec::new();
    put_varint(&mut buf, frame_type).unwrap();
    put_varint(&mut buf, declared).unwrap();
    buf.extend_from_slice(payload);
    buf
}

/// Decodes `bytes` both from a buffer and from a stream, checks they agree, and returns the
/// buffer's answer.
fn decode_both(bytes: &[u8]) -> Result<Frame, WireError> {
    let mut buf = bytes;
    let decoded = Frame::decode(&mut buf);
    let mut reader = bytes;
    let read = read_frame(&mut reader);
    assert_eq!(
        decoded.clone().map(Some),
        read,
        "decode and read_frame disagree"
    );
    decoded
}

const PARAMS: Params = Params {
    max_data: 1 << 24,
    max_stream_data: 1 << 20,
    max_bidi_streams: 100,
    max_uni_streams: 3,
};

fn every_variant() -> Vec<Frame> {
    vec![
        Frame::NewSession { params: PARAMS },
        Frame::Join {
            session: SessionId(MAX_VARINT),
            proof: [7; 32],
            params: PARAMS,
        },
        Frame::Welcome {
            session: SessionId(42),
            secret: [9; 16],
            path: u32::MAX,
            params: PARAMS,
        },
        Frame::Joined { path: 1 },
        Frame::Refused {
            code: 3,
            reason: "session unknown".into(),
        },
        Frame::MaxData { max: 1 << 40 },
        Frame::MaxStreamData {
            stream: 4,
            max: 65536,
        },
        Frame::MaxStreams {
            uni: false,
            count: 10,
        },
        Frame::MaxStreams {
            uni: true,
            count: 11,
        },
        Frame::DataAck {
            stream: 8,
            offset: 1000,
            fin: false,
        },
        Frame::DataAck {
            stream: 8,
            offset: 2000,
            fin: true,
        },
        Frame::Fin {
            stream: 8,
            final_size: 2000,
        },
        Frame::ResetStream {
            stream: 12,
            code: 0x101,
            final_size: 77,
        },
        Frame::StopSending {
            stream: 12,
            code: 0x102,
        },
        Frame::PathStatus { backup: false },
        Frame::PathStatus { backup: true },
        Frame::PathReceived {
            path: 1,
            bytes: 16_000_000,
        },
        Frame::Ping,
        Frame::Missing {
            path: 1,
            transport_stream: 7,
            from: 40_000,
        },
        Frame::Tail {
            stream: 4,
            end: 14_229,
        },
        Frame::MissingTail {
            path: 1,
            stream: 4,
            from: 13_000,
        },
    ]
}

#[test]
fn varint_boundaries() {
    let cases = [
        (0, 1),
        (63, 1),
        (64, 2),
        (16383, 2),
        (16384, 4),
        ((1 << 30) - 1, 4),
        (1 << 30, 8),
        (MAX_VARINT, 8),
    ];
    for (value, len) in cases {
        let mut buf = Vec::new();
        put_varint(&mut buf, value).unwrap();
        assert_eq!(buf.len(), len, "{value}");
        assert_eq!(varint_len(value), len, "{value}");
        let mut rest = &buf[..];
        assert_eq!(get_varint(&mut rest), Ok(value));
        assert!(rest.is_empty());
    }
    for value in [MAX_VARINT + 1, u64::MAX] {
        let mut buf = vec![0xaa];
        assert_eq!(
            put_varint(&mut buf, value),
            Err(WireError::VarIntTooLarge(value))
        );
        assert_eq!(buf, [0xaa], "unchanged on error");
    }
}

#[test]
fn varint_examples_from_rfc_9000() {
    let cases: [(&[u8], u64); 5] = [
        (
            &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
            151_288_809_941_952_652,
        ),
        (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
        (&[0x7b, 0xbd], 15_293),
        (&[0x25], 37),
        (&[0x40, 0x25], 37), // not the shortest form, still accepted
    ];
    for (bytes, value) in cases {
        let mut rest = bytes;
        assert_eq!(get_varint(&mut rest), Ok(value));
        assert!(rest.is_empty());
    }
}

#[test]
fn truncated_varint_leaves_input_unchanged() {
    let mut buf = Vec::new();
    put_varint(&mut buf, MAX_VARINT).unwrap();
    for cut in 0..buf.len() {
        let mut rest = &buf[..cut];
        assert_eq!(get_varint(&mut rest), Err(WireError::Truncated));
        assert_eq!(rest.len(), cut);
    }
}

#[test]
fn varints_across_pieces() {
    let mut reader = VarintReader::default();
    assert_eq!(reader.feed(&mut &[][..]), None);
    let mut input = &[0x9d, 0x7f][..];
    assert_eq!(reader.feed(&mut input), None);
    assert!(input.is_empty() && !reader.is_empty());
    let mut input = &[0x3e, 0x7d, 0x25][..];
    assert_eq!(reader.feed(&mut input), Some(494_878_333));
    assert_eq!(reader.feed(&mut input), Some(37));
    assert!(input.is_empty() && reader.is_empty());
}

#[test]
fn every_variant_round_trips() {
    let mut stream = Vec::new();
    for frame in every_variant() {
        let bytes = encoded(&frame);
        assert_eq!(decode_both(&bytes), Ok(frame.clone()));
        let mut first = &bytes[..];
        assert_eq!(get_varint(&mut first), Ok(frame.frame_type()));
        stream.extend_from_slice(&bytes);
    }
    // Back to back, from a buffer and from a stream that delivers a byte at a time.
    let mut rest = &stream[..];
    for frame in every_variant() {
        assert_eq!(Frame::decode(&mut rest), Ok(frame));
    }
    assert!(rest.is_empty());
    let mut reader = &stream[..];
    for frame in every_variant() {
        assert_eq!(read_frame(&mut reader), Ok(Some(frame)));
    }
    assert_eq!(read_frame(&mut reader), Ok(None));
    // And in one piece through one decoder.
    let mut decoder = FrameDecoder::default();
    let mut rest = &stream[..];
    for frame in every_variant() {
        assert_eq!(decoder.decode(&mut rest), Ok(Some(frame)));
    }
    assert_eq!(decoder.decode(&mut rest), Ok(None));
    assert_eq!(decoder.finish(), Ok(()));
}

#[test]
fn frame_types_match_the_table() {
    let types: Vec<u64> = every_variant().iter().map(Frame::frame_type).collect();
    assert_eq!(
        types,
        [
            0x01, 0x02, 0x03, 0x04, 0x05, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18,
            0x19, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e
        ]
    );
}

#[test]
fn truncated_frames_at_every_cut() {
    for frame in every_variant() {
        let bytes = encoded(&frame);
        for cut in 0..bytes.len() {
            let mut rest = &bytes[..cut];
            assert_eq!(Frame::decode(&mut rest), Err(WireError::Truncated));
            assert_eq!(rest.len(), cut, "unchanged on error");
            let mut reader = &bytes[..cut];
            let expected = if cut == 0 {
                Ok(None)
            } else {
                Err(WireError::Truncated)
            };
            assert_eq!(read_frame(&mut reader), expected, "{frame:?} cut {cut}");
        }
    }
}

#[test]
fn extra_payload_bytes_are_a_length_error() {
    let bytes = raw_frame(0x10, 3, &[5, 0, 0]);
    assert_eq!(
        decode_both(&bytes),
        Err(WireError::FrameLength {
            frame_type: 0x10,
            declared: 3,
            used: 1,
        })
    );
    // A payload-less frame type with a payload.
    let bytes = raw_frame(0x04, 2, &[1, 1]);
    assert_eq!(
        decode_both(&bytes),
        Err(WireError::FrameLength {
            frame_type: 0x04,
            declared: 2,
            used: 1,
        })
    );
}

#[test]
fn short_payload_is_truncated() {
    // MaxStreamData needs two varints; the declared payload holds one.
    let bytes = raw_frame(0x11, 1, &[4, 9]);
    assert_eq!(decode_both(&bytes), Err(WireError::Truncated));
}

#[test]
fn huge_declared_length_fails_before_the_payload() {
    for len in [MAX_FRAME_PAYLOAD + 1, MAX_VARINT] {
        // No payload follows: the limit is checked before waiting for it.
        let bytes = raw_frame(0x10, len, &[]);
        assert_eq!(decode_both(&bytes), Err(WireError::FrameTooLarge(len)));
    }
    // Exactly the limit is read, then judged on its contents.
    let bytes = raw_frame(0x10, MAX_FRAME_PAYLOAD, &[0; MAX_FRAME_PAYLOAD as usize]);
    assert_eq!(
        decode_both(&bytes),
        Err(WireError::FrameLength {
            frame_type: 0x10,
            declared: MAX_FRAME_PAYLOAD,
            used: 1,
        })
    );
}

#[test]
fn unknown_frame_types() {
    for ty in [0x00, 0x06, 0x0f, 0x1f, MAX_VARINT] {
        assert_eq!(
            decode_both(&raw_frame(ty, 0, &[])),
            Err(WireError::UnknownFrame(ty))
        );
    }
}

#[test]
fn refused_reason_rules() {
    let mut payload = vec![7, 2, 0xff, 0xfe];
    assert_eq!(
        decode_both(&raw_frame(0x05, 4, &payload)),
        Err(WireError::Malformed("refusal reason is not UTF-8"))
    );
    payload = vec![7, 0x41, 0x01];
    payload.extend_from_slice(&[b'a'; 257]);
    assert_eq!(
        decode_both(&raw_frame(0x05, payload.len() as u64, &payload)),
        Err(WireError::Malformed("refusal reason longer than 256 bytes"))
    );

    let longest = Frame::Refused {
        code: 1,
        reason: "x".repeat(MAX_REASON_LEN),
    };
    assert_eq!(decode_both(&encoded(&longest)), Ok(longest));
    let too_long = Frame::Refused {
        code: 1,
        reason: "x".repeat(MAX_REASON_LEN + 1),
    };
    let mut buf = vec![1, 2, 3];
    assert!(matches!(
        too_long.encode(&mut buf),
        Err(WireError::Malformed(_))
    ));
    assert_eq!(buf, [1, 2, 3], "unchanged on error");
}

#[test]
fn refused_constructor_cuts_at_a_char_boundary() {
    let reason = format!("a{}", "é".repeat(200));
    let Frame::Refused { code, reason: cut } = Frame::refused(9, &reason) else {
        panic!("not Refused");
    };
    assert_eq!(code, 9);
    assert_eq!(cut.len(), 255);
    assert!(reason.starts_with(&cut));
    assert_eq!(
        Frame::refused(1, "short"),
        Frame::Refused {
            code: 1,
            reason: "short".into()
        }
    );
}

#[test]
fn path_ids_must_fit_u32() {
    let mut payload = Vec::new();
    put_varint(&mut payload, u64::from(u32::MAX) + 1).unwrap();
    assert_eq!(
        decode_both(&raw_frame(0x04, payload.len() as u64, &payload)),
        Err(WireError::Malformed("path id exceeds u32"))
    );
    let mut payload = vec![42];
    payload.extend_from_slice(&[0; 16]);
    put_varint(&mut payload, u64::from(u32::MAX) + 1).unwrap();
    payload.extend_from_slice(&[0; 4]);
    assert_eq!(
        decode_both(&raw_frame(0x03, payload.len() as u64, &payload)),
        Err(WireError::Malformed("path id exceeds u32"))
    );
}

#[test]
fn path_status_is_zero_or_one() {
    assert_eq!(
        decode_both(&raw_frame(0x19, 1, &[2])),
        Err(WireError::Malformed("path status is neither 0 nor 1"))
    );
}

#[test]
fn encode_rejects_oversized_values_and_leaves_buf_unchanged() {
    let frames = [
        Frame::MaxData {
            max: MAX_VARINT + 1,
        },
        Frame::Join {
            session: SessionId(u64::MAX),
            proof: [0; 32],
            params: PARAMS,
        },
        Frame::NewSession {
            params: Params {
                max_uni_streams: u64::MAX,
                ..PARAMS
            },
        },
    ];
    for frame in frames {
        let mut buf = vec![0xee];
        assert!(matches!(
            frame.encode(&mut buf),
            Err(WireError::VarIntTooLarge(_))
        ));
        assert_eq!(buf, [0xee]);
    }
}

#[test]
fn encode_appends_after_existing_bytes() {
    let mut buf = vec![0xee, 0xff];
    Frame::Joined { path: 3 }.encode(&mut buf).unwrap();
    assert_eq!(buf, [0xee, 0xff, 0x04, 0x01, 0x03]);
}

#[test]
fn chunk_stream_round_trip() {
    let mut buf = Vec::new();
    encode_chunk_stream_header(17, &mut buf).unwrap();
    encode_chunk_header(0, 5, &mut buf).unwrap();
    buf.extend_from_slice(b"hello");
    encode_chunk_header(100, 0, &mut buf).unwrap();
    encode_chunk_header(MAX_VARINT - 3, 3, &mut buf).unwrap();
    buf.extend_from_slice(b"end");

    let expected = [
        chunk(17, 0, b"hello"),
        chunk(17, 100, b""),
        chunk(17, MAX_VARINT - 3, b"end"),
    ];
    let mut decoder = ChunkDecoder::default();
    let mut reader = &buf[..];
    for want in &expected {
        assert_eq!(
            read_chunk(&mut decoder, &mut reader).as_ref(),
            Ok(&Some(want.clone()))
        );
    }
    assert_eq!(decoder.stream(), Some(17));
    assert_eq!(read_chunk(&mut decoder, &mut reader), Ok(None));
    // In one piece.
    let mut decoder = ChunkDecoder::default();
    let mut rest = &buf[..];
    for want in expected {
        assert_eq!(decoder.decode(&mut rest), Ok(Some(want)));
    }
    assert_eq!(decoder.decode(&mut rest), Ok(None));
    assert_eq!(decoder.finish(), Ok(()));
}

#[test]
fn a_stream_may_end_before_its_header_or_after_it() {
    let decoder = ChunkDecoder::default();
    assert_eq!(decoder.finish(), Ok(()));
    let mut decoder = ChunkDecoder::default();
    let header = chunk_stream(&[]);
    assert_eq!(decoder.decode(&mut &header[..]), Ok(None));
    assert_eq!(decoder.finish(), Ok(()));
    let mut decoder = ChunkDecoder::default();
    assert_eq!(decoder.decode(&mut &[0x40][..]), Ok(None));
    assert_eq!(decoder.finish(), Err(WireError::Truncated));
}

#[test]
fn a_chunk_is_allocated_at_its_size() {
    // The reassembler keeps whole chunks and charges them at their length.
    let len = 1 << 20;
    let mut body = Vec::new();
    encode_chunk_header(0, len, &mut body).unwrap();
    body.resize(body.len() + len as usize, 7);
    let stream = chunk_stream(&body);
    let mut decoder = ChunkDecoder::default();
    let before = crate::test_heap::live();
    // In pieces of a typical quinn read, so the buffer grows as bytes arrive.
    let mut data = None;
    for piece in stream.chunks(1200) {
        let mut piece = piece;
        if let Some(chunk) = decoder.decode(&mut piece).unwrap() {
            data = Some(chunk.data);
        }
    }
    let held = crate::test_heap::live() - before;
    let data = data.expect("the chunk");
    assert_eq!(data.len() as u64, len);
    assert!(
        held <= len as i64 + 4096,
        "a 1 MiB chunk holds {held} bytes"
    );
}

#[test]
fn chunk_eof_cases() {
    let mut body = Vec::new();
    encode_chunk_header(300, 4, &mut body).unwrap();
    body.extend_from_slice(b"data");
    let buf = chunk_stream(&body);
    let header = buf.len() - body.len();
    for cut in header..buf.len() {
        let mut decoder = ChunkDecoder::default();
        let mut reader = &buf[..cut];
        let expected = if cut == header {
            Ok(None)
        } else {
            Err(WireError::Truncated)
        };
        assert_eq!(read_chunk(&mut decoder, &mut reader), expected, "cut {cut}");
    }
}

#[test]
fn chunk_limits() {
    // Oversize: refused with no data behind the header.
    let mut body = Vec::new();
    put_varint(&mut body, 0).unwrap();
    put_varint(&mut body, MAX_CHUNK + 1).unwrap();
    assert_eq!(
        ChunkDecoder::default().decode(&mut &chunk_stream(&body)[..]),
        Err(WireError::ChunkTooLarge(MAX_CHUNK + 1))
    );
    // Exactly the limit is fine.
    let mut body = Vec::new();
    encode_chunk_header(0, MAX_CHUNK, &mut body).unwrap();
    body.resize(body.len() + MAX_CHUNK as usize, 0x5a);
    let got = ChunkDecoder::default()
        .decode(&mut &chunk_stream(&body)[..])
        .unwrap()
        .unwrap();
    assert_eq!((got.offset, got.data.len() as u64), (0, MAX_CHUNK));
    // Ending beyond MAX_VARINT.
    let mut body = Vec::new();
    put_varint(&mut body, MAX_VARINT).unwrap();
    put_varint(&mut body, 1).unwrap();
    body.push(0);
    assert_eq!(
        ChunkDecoder::default().decode(&mut &chunk_stream(&body)[..]),
        Err(WireError::OffsetOverflow {
            offset: MAX_VARINT,
            len: 1
        })
    );
}

#[test]
fn chunk_header_encoder_checks_the_reader_limits() {
    let mut buf = vec![1];
    assert_eq!(
        encode_chunk_header(0, MAX_CHUNK + 1, &mut buf),
        Err(WireError::ChunkTooLarge(MAX_CHUNK + 1))
    );
    assert_eq!(
        encode_chunk_header(MAX_VARINT, 1, &mut buf),
        Err(WireError::OffsetOverflow {
            offset: MAX_VARINT,
            len: 1
        })
    );
    assert_eq!(
        encode_chunk_header(u64::MAX, 1, &mut buf),
        Err(WireError::OffsetOverflow {
            offset: u64::MAX,
            len: 1
        })
    );
    assert_eq!(
        encode_chunk_stream_header(MAX_VARINT + 1, &mut buf),
        Err(WireError::VarIntTooLarge(MAX_VARINT + 1))
    );
    assert_eq!(buf, [1]);
    encode_chunk_header(MAX_VARINT, 0, &mut buf).unwrap();
}

/// Values spread over all four varint lengths.
fn varint() -> impl Strategy<Value = u64> {
    prop_oneof![
        0..=63u64,
        64..=16383u64,
        16384..=(1u64 << 30) - 1,
        0..=MAX_VARINT
    ]
}

fn params() -> impl Strategy<Value = Params> {
    (varint(), varint(), varint(), varint()).prop_map(|(a, b, c, d)| Params {
        max_data: a,
        max_stream_data: b,
        max_bidi_streams: c,
        max_uni_streams: d,
    })
}

fn frame() -> impl Strategy<Value = Frame> {
    prop_oneof![
        params().prop_map(|params| Frame::NewSession { params }),
        (varint(), any::<[u8; 32]>(), params()).prop_map(|(s, proof, params)| Frame::Join {
            session: SessionId(s),
            proof,
            params
        }),
        (varint(), any::<[u8; 16]>(), any::<u32>(), params()).prop_map(
            |(s, secret, path, params)| Frame::Welcome {
                session: SessionId(s),
                secret,
                path,
                params
            }
        ),
        any::<u32>().prop_map(|path| Frame::Joined { path }),
        // At most 64 chars of at most 4 bytes: within MAX_REASON_LEN.
        (varint(), "\\PC{0,64}").prop_map(|(code, reason)| Frame::Refused { code, reason }),
        varint().prop_map(|max| Frame::MaxData { max }),
        (varint(), varint()).prop_map(|(stream, max)| Frame::MaxStreamData { stream, max }),
        (any::<bool>(), varint()).prop_map(|(uni, count)| Frame::MaxStreams { uni, count }),
        (varint(), varint(), any::<bool>()).prop_map(|(stream, offset, fin)| Frame::DataAck {
            stream,
            offset,
            fin
        }),
        (varint(), varint()).prop_map(|(stream, final_size)| Frame::Fin { stream, final_size }),
        (varint(), varint(), varint()).prop_map(|(stream, code, final_size)| {
            Frame::ResetStream {
                stream,
                code,
                final_size,
            }
        }),
        (varint(), varint()).prop_map(|(stream, code)| Frame::StopSending { stream, code }),
        any::<bool>().prop_map(|backup| Frame::PathStatus { backup }),
        (any::<u32>(), varint()).prop_map(|(path, bytes)| Frame::PathReceived { path, bytes }),
        Just(Frame::Ping),
        (any::<u32>(), varint(), varint()).prop_map(|(path, transport_stream, from)| {
            Frame::Missing {
                path,
                transport_stream,
                from,
            }
        }),
        (varint(), varint()).prop_map(|(stream, end)| Frame::Tail { stream, end }),
        (any::<u32>(), varint(), varint()).prop_map(|(path, stream, from)| Frame::MissingTail {
            path,
            stream,
            from
        }),
    ]
}

proptest! {
    #[test]
    fn frames_round_trip(frame in frame()) {
        let bytes = encoded(&frame);
        prop_assert!(bytes.len() as u64 <= 3 + MAX_FRAME_PAYLOAD);
        prop_assert_eq!(decode_both(&bytes), Ok(frame));
    }

    #[test]
    fn frame_cuts_are_truncated(frame in frame()) {
        let bytes = encoded(&frame);
        for cut in 0..bytes.len() {
            let mut rest = &bytes[..cut];
            prop_assert_eq!(Frame::decode(&mut rest), Err(WireError::Truncated));
        }
    }

    #[test]
    fn varints_round_trip(value in varint()) {
        let mut buf = Vec::new();
        put_varint(&mut buf, value).unwrap();
        prop_assert_eq!(buf.len(), varint_len(value));
        let mut rest = &buf[..];
        prop_assert_eq!(get_varint(&mut rest), Ok(value));
        prop_assert!(rest.is_empty());
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let mut rest = &bytes[..];
        let decoded = Frame::decode(&mut rest);
        let mut reader = &bytes[..];
        let read = read_frame(&mut reader);
        if bytes.is_empty() {
            prop_assert_eq!(read, Ok(None));
        } else {
            prop_assert_eq!(decoded.clone().map(Some), read);
        }
        // Whatever decodes re-encodes to the same frame.
        if let Ok(frame) = decoded {
            let mut again = &encoded(&frame)[..];
            prop_assert_eq!(Frame::decode(&mut again), Ok(frame));
        }
    }

    #[test]
    fn arbitrary_chunk_streams_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let mut decoder = ChunkDecoder::default();
        let mut reader = &bytes[..];
        let mut previous = reader.len();
        while let Ok(Some(chunk)) = read_chunk(&mut decoder, &mut reader) {
            prop_assert!(chunk.data.len() as u64 <= MAX_CHUNK);
            prop_assert!(chunk.offset + chunk.data.len() as u64 <= MAX_VARINT);
            prop_assert!(reader.len() < previous, "each chunk consumes input");
            previous = reader.len();
        }
    }

    #[test]
    fn pieces_of_any_size_decode_alike(frame in frame(), cut in 0usize..64) {
        let bytes = encoded(&frame);
        let (head, tail) = bytes.split_at(cut.min(bytes.len()));
        let mut decoder = FrameDecoder::default();
        let mut head = head;
        let first = decoder.decode(&mut head);
        prop_assert!(head.is_empty() || first.as_ref().is_ok_and(Option::is_some));
        let decoded = match first {
            Ok(Some(frame)) => frame,
            other => {
                prop_assert_eq!(other, Ok(None));
                decoder.decode(&mut &tail[..]).unwrap().unwrap()
            }
        };
        prop_assert_eq!(decoded, frame);
    }
}
