//! Control frames: `wire::Frame::decode`, frame after frame as on a control stream, on
//! arbitrary bytes never panics, consumes something on success and nothing on error; a frame
//! that encodes decodes from its encoding to itself, consuming exactly the encoding; and
//! `wire::FrameDecoder`, fed the same bytes in pieces of any size (the first input byte), finds
//! the same frames and ends the same way.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpquic_proto::wire::{Frame, FrameDecoder, WireError};

/// The frames `FrameDecoder` finds in `data` fed `piece` bytes at a time, and how it ends.
fn decode_in_pieces(data: &[u8], piece: usize) -> (Vec<Frame>, Result<(), WireError>) {
    let mut decoder = FrameDecoder::default();
    let mut frames = Vec::new();
    for mut input in data.chunks(piece) {
        loop {
            match decoder.decode(&mut input) {
                Ok(Some(frame)) => frames.push(frame),
                Ok(None) => break,
                Err(error) => return (frames, Err(error)),
            }
        }
    }
    (frames, decoder.finish())
}

fuzz_target!(|data: &[u8]| {
    let Some((&piece, data)) = data.split_first() else {
        return;
    };
    let mut input = data;
    let mut frames = Vec::new();
    let end = loop {
        let before = input.len();
        let frame = match Frame::decode(&mut input) {
            Ok(frame) => frame,
            Err(error) => {
                assert_eq!(input.len(), before, "a failed decode consumed bytes");
                break if input.is_empty() { Ok(()) } else { Err(error) };
            }
        };
        assert!(input.len() < before, "a frame decoded from no bytes");
        frames.push(frame.clone());
        let mut encoded = Vec::new();
        if frame.encode(&mut encoded).is_err() {
            // Encoding refuses values this end never sends; a peer's frame may hold them.
            continue;
        }
        let mut rest = &encoded[..];
        let again = Frame::decode(&mut rest).expect("an encoded frame decodes");
        assert_eq!(again, frame);
        assert!(
            rest.is_empty(),
            "decoding left {} bytes of one frame",
            rest.len()
        );
    };
    let (decoded, decoder_end) = decode_in_pieces(data, usize::from(piece.max(1)));
    assert_eq!(decoded, frames);
    assert_eq!(decoder_end, end);
});
