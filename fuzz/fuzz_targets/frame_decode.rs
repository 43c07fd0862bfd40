//! Control frames: decoding arbitrary bytes never panics, and a frame that decodes encodes
//! back to bytes that decode to the same frame.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpquic_core::wire::Frame;

fuzz_target!(|data: &[u8]| {
    let mut input = data;
    while let Ok(frame) = Frame::decode(&mut input) {
        let mut encoded = Vec::new();
        frame.encode(&mut encoded).expect("a decoded frame encodes");
        let again = Frame::decode(&mut &encoded[..]).expect("an encoded frame decodes");
        assert_eq!(again, frame);
    }
});
