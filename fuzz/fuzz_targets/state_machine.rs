//! The multipath connection state (`mpquic_proto::fuzzing::StateDriver`, a server or a client
//! with fuzzed windows and stream limits) driven by a sequence of operations: the peer's chunks
//! and control frames (decoded from the fuzzer's bytes, so any frame the wire can carry) on any
//! path, and the application's opens, writes, finishes, resets, reads, stops and accepts, the
//! senders' grants, control flushes and the clock. Checks that nothing panics (overflow checks
//! and debug assertions are on), also after `on_chunk` or `on_frame` returned an error (with
//! the connection failed as the real one does, or not), and a few promises: reads return at
//! most what was asked, writes take at most what was given, and flushed frames encode.
#![no_main]

use std::time::{Duration, Instant};

use arbitrary::Arbitrary;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use mpquic_proto::error::ProtocolError;
use mpquic_proto::fuzzing::StateDriver;
use mpquic_proto::wire::{Frame, Params};
use mpquic_proto::{Side, TransportConfig};

#[derive(Debug, Arbitrary)]
struct Input {
    client: bool,
    /// Windows and limits, offset by one where zero is invalid.
    stream_window: u16,
    window: u16,
    send_buffer: u16,
    max_bidi: u8,
    max_uni: u8,
    delivery_reports: bool,
    /// After a protocol error, fail the connection as the real one does (else go on as if
    /// another path's task had not heard of it yet).
    fail_on_error: bool,
    ops: Vec<Op>,
}

#[derive(Debug, Arbitrary)]
enum Op {
    /// A chunk anywhere in the stream's offset space.
    Chunk {
        path: u8,
        stream: u8,
        offset: u64,
        len: u16,
    },
    /// A chunk near the start, where the windows are.
    NearChunk {
        path: u8,
        stream: u8,
        offset: u16,
        len: u16,
    },
    Frame {
        path: u8,
        bytes: Vec<u8>,
    },
    Read {
        stream: u8,
        max: u16,
    },
    Stop {
        stream: u8,
        code: u64,
    },
    Open {
        uni: bool,
    },
    Write {
        stream: u8,
        len: u16,
    },
    Finish {
        stream: u8,
    },
    Reset {
        stream: u8,
        code: u64,
    },
    Accept {
        uni: bool,
    },
    Grant {
        path: u8,
        stream: u8,
        bytes: u16,
    },
    Drain,
    Advance {
        ms: u16,
    },
}

fn config(input: &Input) -> TransportConfig {
    TransportConfig {
        send_buffer: u64::from(input.send_buffer) + 1,
        idle_timeout: Duration::from_secs(30),
        delivery_reports: input.delivery_reports,
        delivery_credit: false,
        path_failure_rtts: 4,
        path_failure_floor: Duration::from_secs(1),
        reinjection: Default::default(),
    }
}

fn params(input: &Input) -> Params {
    Params {
        max_data: u64::from(input.window) + 1,
        max_stream_data: u64::from(input.stream_window) + 1,
        max_bidi_streams: input.max_bidi.into(),
        max_uni_streams: input.max_uni.into(),
    }
}

fuzz_target!(|input: Input| {
    let side = if input.client {
        Side::Client
    } else {
        Side::Server
    };
    let mut now = Instant::now();
    let mut state = StateDriver::new(side, config(&input), params(&input), now);
    let fail_on_error = input.fail_on_error;
    let received = |state: &mut StateDriver, result: Result<(), ProtocolError>| {
        if let Err(error) = result {
            // Every protocol error has a code to close the paths with.
            let _ = error.code();
            if fail_on_error {
                state.fail(error);
            }
        }
    };
    for op in input.ops {
        match op {
            Op::Chunk {
                path,
                stream,
                offset,
                len,
            } => {
                let data = Bytes::from(vec![1; usize::from(len)]);
                let result = state.on_chunk(path.into(), stream.into(), offset, data, now);
                received(&mut state, result);
            }
            Op::NearChunk {
                path,
                stream,
                offset,
                len,
            } => {
                let data = Bytes::from(vec![1; usize::from(len % 2048)]);
                let result = state.on_chunk(path.into(), stream.into(), offset.into(), data, now);
                received(&mut state, result);
            }
            Op::Frame { path, bytes } => {
                if let Ok(frame) = Frame::decode(&mut &bytes[..]) {
                    let result = state.on_frame(path.into(), frame, now);
                    received(&mut state, result);
                }
            }
            Op::Read { stream, max } => {
                if let Some(Ok(Some(data))) = state.read(stream.into(), max.into()) {
                    assert!(!data.is_empty() && data.len() <= usize::from(max));
                }
            }
            Op::Stop { stream, code } => {
                let _ = state.stop(stream.into(), code);
            }
            Op::Open { uni } => {
                let _ = state.open(uni, now);
            }
            Op::Write { stream, len } => {
                let data = vec![2; usize::from(len)];
                if let Ok(n) = state.write(stream.into(), &data, now) {
                    assert!(n <= data.len());
                }
            }
            Op::Finish { stream } => {
                let _ = state.finish(stream.into(), now);
            }
            Op::Reset { stream, code } => {
                let _ = state.reset(stream.into(), code, now);
            }
            Op::Accept { uni } => {
                let _ = state.accept(uni);
            }
            Op::Grant {
                path,
                stream,
                bytes,
            } => {
                if let Some(sent) = state.grant(path.into(), stream.into(), bytes.into(), now) {
                    assert!(sent <= u64::from(bytes));
                }
            }
            Op::Drain => {
                for (_, frame) in state.drain_control(now) {
                    let mut buf = Vec::new();
                    frame
                        .encode(&mut buf)
                        .expect("a frame this end sends encodes");
                }
            }
            Op::Advance { ms } => now += Duration::from_millis(ms.into()),
        }
    }
});
