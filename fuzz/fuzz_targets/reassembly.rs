//! Reassembly against a model (`Vec<Option<u8>>`, the byte received at each offset below a
//! 64 KiB window): chunks in any order, overlapping, repeated, beyond the window, with
//! conflicting bytes, and reads in between. Each insert is accepted or refused exactly as the
//! model says, every byte read equals the model's, in order, `contiguous_end` is the model's
//! in-order prefix, and the footprint stays within its bound.
#![no_main]

use arbitrary::Arbitrary;
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use mpquic_proto::fuzzing::{Reassembler, RANGE_OVERHEAD};

/// The flow-control limit every insert is given: the model's size.
const LIMIT: u64 = 1 << 16;

#[derive(Debug, Arbitrary)]
enum Op {
    /// Bytes at an offset in or just past the window: fresh bytes are `seed + offset`, and
    /// with `resend` the bytes already received are sent again as they were (except at
    /// `flip`, which is changed).
    Insert {
        offset: u16,
        len: u16,
        seed: u8,
        resend: bool,
        flip: Option<u16>,
    },
    /// Bytes anywhere, up to the end of the offset space.
    Far {
        offset: u64,
        len: u8,
    },
    Read {
        max: u16,
    },
}

/// The model: what has been received (and read).
struct Model {
    /// The byte received at each offset, `None` past the end.
    bytes: Vec<Option<u8>>,
    read_offset: u64,
    /// The end of the bytes received in order.
    contiguous_end: u64,
    /// Bytes received and not yet read.
    buffered: u64,
}

impl Model {
    fn at(&self, offset: u64) -> Option<u8> {
        self.bytes.get(offset as usize).copied().flatten()
    }

    /// Whether inserting `data` at `offset` must be accepted: it ends within the window and
    /// agrees with every byte received and not yet read.
    fn accepts(&self, offset: u64, data: &[u8]) -> bool {
        let Some(end) = offset.checked_add(data.len() as u64) else {
            return false;
        };
        end <= LIMIT
            && data.iter().enumerate().all(|(i, byte)| {
                let at = offset + i as u64;
                at < self.read_offset || self.at(at).is_none_or(|known| known == *byte)
            })
    }

    fn store(&mut self, offset: u64, data: &[u8]) {
        // Grown on demand: most inputs touch a small part of the window.
        let end = offset as usize + data.len();
        if self.bytes.len() < end {
            self.bytes.resize(end, None);
        }
        for (i, byte) in data.iter().enumerate() {
            let slot = &mut self.bytes[offset as usize + i];
            if slot.is_none() {
                *slot = Some(*byte);
                self.buffered += 1;
            }
        }
        while self.at(self.contiguous_end).is_some() {
            self.contiguous_end += 1;
        }
    }
}

fn insert(r: &mut Reassembler, model: &mut Model, offset: u64, data: Vec<u8>) {
    let accepts = model.accepts(offset, &data);
    let result = r.insert(offset, Bytes::from(data.clone()), LIMIT);
    assert_eq!(result.is_ok(), accepts, "insert at {offset}: {result:?}");
    if accepts {
        model.store(offset, &data);
    }
}

fuzz_target!(|ops: Vec<Op>| {
    let mut r = Reassembler::new();
    let mut model = Model {
        bytes: Vec::new(),
        read_offset: 0,
        contiguous_end: 0,
        buffered: 0,
    };
    for op in ops {
        match op {
            Op::Insert {
                offset,
                len,
                seed,
                resend,
                flip,
            } => {
                let (offset, len) = (u64::from(offset), u64::from(len) % 4097);
                let mut data: Vec<u8> = (offset..offset + len)
                    .map(|at| match model.at(at) {
                        Some(known) if resend => known,
                        _ => seed.wrapping_add(at as u8),
                    })
                    .collect();
                if let Some(byte) = flip.and_then(|i| data.get_mut(usize::from(i))) {
                    *byte ^= 0x80;
                }
                insert(&mut r, &mut model, offset, data);
            }
            Op::Far { offset, len } => {
                let data: Vec<u8> = (0..len).collect();
                insert(&mut r, &mut model, offset, data);
            }
            Op::Read { max } => {
                let at = r.read_offset();
                assert_eq!(at, model.read_offset);
                let expect_some = max > 0 && model.at(at).is_some();
                match r.read(usize::from(max)) {
                    Some(chunk) => {
                        assert!(expect_some, "read {} bytes at {at}", chunk.len());
                        assert!(!chunk.is_empty() && chunk.len() <= usize::from(max));
                        for (i, byte) in chunk.iter().enumerate() {
                            let offset = at + i as u64;
                            assert_eq!(Some(*byte), model.at(offset), "byte at {offset}");
                        }
                        model.read_offset += chunk.len() as u64;
                        model.buffered -= chunk.len() as u64;
                        assert_eq!(r.read_offset(), model.read_offset);
                    }
                    None => assert!(!expect_some, "nothing read at {at} (max {max})"),
                }
            }
        }
        assert_eq!(r.read_offset(), model.read_offset);
        assert_eq!(r.contiguous_end(), model.contiguous_end);
        // Every range holds a byte at least, and keeps at most twice its bytes alive.
        assert!(r.footprint() <= (2 + RANGE_OVERHEAD) * model.buffered);
    }
});
