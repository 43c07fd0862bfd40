//! Chunk streams: the async readers `wire::read_varint` (the stream id header) and then
//! `wire::read_chunk`, repeatedly, over arbitrary bytes never panic and never wait on a byte
//! slice; every chunk keeps the limits the format promises (`len <= MAX_CHUNK`,
//! `offset + len <= MAX_VARINT`, so `encode_chunk_header` takes it) and is exactly what the
//! synchronous `get_varint` finds at that point of the input; the stream ends cleanly only
//! where the input does.
#![no_main]

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use libfuzzer_sys::fuzz_target;
use mpquic_core::wire::{
    encode_chunk_header, get_varint, read_chunk, read_varint, MAX_CHUNK, MAX_VARINT,
};

/// Runs a future over an in-memory reader, which never has to wait.
fn ready<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("a reader over a byte slice waited"),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut reader = data;
    // The model: the same bytes taken apart synchronously.
    let mut model = data;
    match ready(read_varint(&mut reader)) {
        Ok(Some(id)) => assert_eq!(get_varint(&mut model), Ok(id)),
        Ok(None) => {
            assert!(data.is_empty());
            return;
        }
        Err(_) => return,
    }
    loop {
        match ready(read_chunk(&mut reader)) {
            Ok(Some((offset, bytes))) => {
                let len = bytes.len() as u64;
                assert!(len <= MAX_CHUNK);
                assert!(offset.checked_add(len).is_some_and(|end| end <= MAX_VARINT));
                assert_eq!(get_varint(&mut model), Ok(offset));
                assert_eq!(get_varint(&mut model), Ok(len));
                let (expected, rest) = model.split_at(bytes.len());
                assert_eq!(&bytes[..], expected);
                model = rest;
                assert_eq!(reader.len(), model.len());
                encode_chunk_header(offset, len, &mut Vec::new()).expect("a chunk read encodes");
            }
            Ok(None) => {
                assert!(model.is_empty(), "a clean end before {} bytes", model.len());
                break;
            }
            Err(_) => break,
        }
    }
});
