//! Control frames: `wire::Frame::decode`, frame after frame as on a control stream, on
//! arbitrary bytes never panics, consumes something on success and nothing on error; a frame
//! that encodes decodes from its encoding to itself, consuming exactly the encoding; and the
//! async `wire::read_frame` reads the same frames and ends the same way.
#![no_main]

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use libfuzzer_sys::fuzz_target;
use mpquic_core::wire::{read_frame, Frame};

/// Runs a future over an in-memory reader, which never has to wait.
fn ready<F: Future>(future: F) -> F::Output {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("a reader over a byte slice waited"),
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = data;
    let mut stream = data;
    loop {
        let before = input.len();
        let frame = match Frame::decode(&mut input) {
            Ok(frame) => frame,
            Err(error) => {
                assert_eq!(input.len(), before, "a failed decode consumed bytes");
                let read = ready(read_frame(&mut stream));
                if input.is_empty() {
                    assert_eq!(read, Ok(None));
                } else {
                    assert_eq!(read, Err(error));
                }
                break;
            }
        };
        assert!(input.len() < before, "a frame decoded from no bytes");
        assert_eq!(
            ready(read_frame(&mut stream)).as_ref(),
            Ok(&Some(frame.clone()))
        );
        assert_eq!(stream.len(), input.len());
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
    }
});
