//! Chunk streams: `wire::ChunkDecoder`, fed arbitrary bytes in pieces of any size (the first
//! input byte), never panics; every chunk keeps the limits the format promises
//! (`len <= MAX_CHUNK`, `offset + len <= MAX_VARINT`, so `encode_chunk_header` takes it) and is
//! exactly what the synchronous `get_varint` finds at that point of the input; the stream ends
//! cleanly only where the input does, between chunks.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpquic_proto::wire::{encode_chunk_header, get_varint, ChunkDecoder, MAX_CHUNK, MAX_VARINT};

fuzz_target!(|data: &[u8]| {
    let Some((&piece, data)) = data.split_first() else {
        return;
    };
    // The model: the same bytes taken apart synchronously.
    let mut model = data;
    let mut decoder = ChunkDecoder::default();
    let mut header = None;
    for mut input in data.chunks(usize::from(piece.max(1))) {
        loop {
            let chunk = match decoder.decode(&mut input) {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(_) => return,
            };
            if header.is_none() {
                header = Some(get_varint(&mut model).expect("the model reads the header"));
            }
            assert_eq!(Some(chunk.stream), header);
            let len = chunk.data.len() as u64;
            assert!(len <= MAX_CHUNK);
            assert!(chunk.offset.checked_add(len).is_some_and(|end| end <= MAX_VARINT));
            assert_eq!(get_varint(&mut model), Ok(chunk.offset));
            assert_eq!(get_varint(&mut model), Ok(len));
            let (expected, rest) = model.split_at(chunk.data.len());
            assert_eq!(&chunk.data[..], expected);
            model = rest;
            encode_chunk_header(chunk.offset, len, &mut Vec::new()).expect("a chunk read encodes");
        }
    }
    if decoder.finish().is_ok() {
        // A clean end: nothing is left but, at most, the header of a stream with no chunks.
        if header.is_none() && !model.is_empty() {
            let _ = get_varint(&mut model);
        }
        assert!(model.is_empty(), "a clean end before {} bytes", model.len());
    }
});
