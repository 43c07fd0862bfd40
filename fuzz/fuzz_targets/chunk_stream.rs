//! Chunk streams: the stream header and chunks read from arbitrary bytes never panic, and
//! every chunk read keeps the limits the format promises.
#![no_main]

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use libfuzzer_sys::fuzz_target;
use mpquic_core::wire::{read_chunk, read_varint, MAX_CHUNK, MAX_VARINT};

/// Runs a future over an in-memory reader, which never has to wait.
fn ready<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("a reader over a byte slice waited"),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut reader = data;
    if !matches!(ready(read_varint(&mut reader)), Ok(Some(_))) {
        return;
    }
    while let Ok(Some((offset, bytes))) = ready(read_chunk(&mut reader)) {
        let len = bytes.len() as u64;
        assert!(len <= MAX_CHUNK);
        assert!(offset + len <= MAX_VARINT);
    }
});
