//! The multipath receive state fed a peer's chunks and control frames (decoded from the
//! fuzzer's bytes, so any frame the wire can carry) and the application's reads, stops and
//! accepts, in any order: never a panic (overflow checks are on), and after a protocol error
//! the state still takes input without one.
#![no_main]

use arbitrary::Arbitrary;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use mpquic_core::fuzzing::Receiver;
use mpquic_core::wire::Frame;

#[derive(Debug, Arbitrary)]
enum Op {
    Chunk { stream: u8, offset: u64, len: u16 },
    NearChunk { stream: u8, offset: u16, len: u16 },
    Frame(Vec<u8>),
    Read { stream: u8, max: u16 },
    Stop { stream: u8, code: u64 },
    Accept { uni: bool },
    Flush,
}

fuzz_target!(|ops: Vec<Op>| {
    let mut receiver = Receiver::new(1 << 14, 1 << 15);
    for op in ops {
        match op {
            Op::Chunk {
                stream,
                offset,
                len,
            } => {
                let data = Bytes::from(vec![1; usize::from(len)]);
                let _ = receiver.chunk(u64::from(stream), offset, data);
            }
            Op::NearChunk {
                stream,
                offset,
                len,
            } => {
                let data = Bytes::from(vec![1; usize::from(len % 2048)]);
                let _ = receiver.chunk(u64::from(stream), u64::from(offset), data);
            }
            Op::Frame(bytes) => {
                if let Ok(frame) = Frame::decode(&mut &bytes[..]) {
                    let _ = receiver.frame(frame);
                }
            }
            Op::Read { stream, max } => receiver.read(u64::from(stream), usize::from(max)),
            Op::Stop { stream, code } => receiver.stop(u64::from(stream), code),
            Op::Accept { uni } => {
                let _ = receiver.accept(uni);
            }
            Op::Flush => {
                let _ = receiver.flush();
            }
        }
    }
});
