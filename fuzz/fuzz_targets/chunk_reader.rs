//! Chunk streams read out of order: `wire::ChunkReader`, fed the pieces of arbitrary bytes
//! (their size from the first input byte) in an order and with repeats the second byte picks,
//! never panics, and hands over exactly the chunks a `wire::ChunkDecoder` reads from the same
//! bytes in order: all of them once every piece is in, or those before the bytes the decoder
//! refuses.
#![no_main]

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use mpquic_proto::wire::{Chunk, ChunkDecoder, ChunkReader, WireError};

fuzz_target!(|data: &[u8]| {
    let [size, order, data @ ..] = data else {
        return;
    };
    // The model: the decoder, in order.
    let mut expected = Vec::new();
    let mut decoder = ChunkDecoder::default();
    let mut input = data;
    while let Ok(Some(chunk)) = decoder.decode(&mut input) {
        expected.push(chunk);
    }
    // The pieces, at their offsets: in order, reversed, or odd ones first; repeated or not.
    let mut pieces: Vec<(u64, &[u8])> = data
        .chunks(usize::from((*size).max(1)))
        .scan(0u64, |at, piece| {
            let offset = *at;
            *at += piece.len() as u64;
            Some((offset, piece))
        })
        .collect();
    match order % 3 {
        0 => {}
        1 => pieces.reverse(),
        _ => pieces.sort_by_key(|(offset, _)| (offset / u64::from((*size).max(1))) % 2 == 0),
    }
    if order & 4 != 0 {
        let again = pieces.clone();
        pieces.extend(again);
    }
    let mut reader = ChunkReader::new(Arc::new(AtomicU64::new(0)), u64::MAX);
    let mut got: Vec<Chunk> = Vec::new();
    let mut refused = false;
    for (offset, piece) in pieces {
        let read = reader.read(offset, Bytes::copy_from_slice(piece), |chunk| {
            got.push(chunk);
            Ok::<(), WireError>(())
        });
        if read.is_err() {
            refused = true;
            break;
        }
    }
    if refused {
        assert!(got.len() <= expected.len());
        assert_eq!(got[..], expected[..got.len()]);
    } else {
        assert_eq!(got, expected);
    }
});
