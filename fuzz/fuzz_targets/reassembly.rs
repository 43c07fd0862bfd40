//! Reassembly against a model: chunks of a stream in any order, overlapping and repeated,
//! with reads in between; every byte read is the byte sent at its offset, in order, and the
//! buffer never costs more than its footprint bound.
#![no_main]

use arbitrary::Arbitrary;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use mpquic_core::fuzzing::Reassembler;

/// The window the chunks must fit.
const LIMIT: u64 = 1 << 16;

#[derive(Debug, Arbitrary)]
enum Op {
    Insert { offset: u16, len: u16 },
    Read { max: u16 },
}

/// The byte the sender puts at `offset`.
fn byte_at(offset: u64) -> u8 {
    (offset.wrapping_mul(31) % 251) as u8
}

fuzz_target!(|ops: Vec<Op>| {
    let mut r = Reassembler::default();
    let mut received = vec![false; LIMIT as usize];
    for op in ops {
        match op {
            Op::Insert { offset, len } => {
                let (offset, len) = (u64::from(offset), u64::from(len) % 4096);
                let data: Vec<u8> = (offset..offset + len).map(byte_at).collect();
                let fits = offset + len <= LIMIT;
                assert_eq!(r.insert(offset, Bytes::from(data), LIMIT), fits);
                if fits {
                    received[offset as usize..(offset + len) as usize].fill(true);
                }
            }
            Op::Read { max } => {
                let at = r.read_offset();
                if let Some(chunk) = r.read(usize::from(max)) {
                    assert!(!chunk.is_empty() && chunk.len() <= usize::from(max));
                    for (i, byte) in chunk.iter().enumerate() {
                        let offset = at + i as u64;
                        assert!(received[offset as usize], "byte {offset} was never sent");
                        assert_eq!(*byte, byte_at(offset));
                    }
                } else if max > 0 {
                    assert!(!received.get(at as usize).copied().unwrap_or(false));
                }
            }
        }
        // At most twice the bytes the window holds, plus a fixed cost per range.
        assert!(r.footprint() <= 2 * LIMIT + 160 * LIMIT);
    }
});
