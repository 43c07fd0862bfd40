//! [`Payload`]: deterministic bytes to send in tests and measurements.

use sha2::{Digest, Sha256};

/// Bytes per [`Payload::next_block`].
pub const BLOCK: usize = 64 * 1024;

/// Deterministic pseudo-random bytes (xorshift64) from a seed, generated block by block so
/// that any size can be sent without holding it in memory; the same seed and length give the
/// same bytes everywhere (the simulated tests, the loopback tests, the lab's transfers), and a
/// misplaced or repeated chunk changes their sha256.
#[derive(Debug, Clone)]
pub struct Payload {
    state: u64,
    remaining: u64,
}

impl Payload {
    /// `len` bytes from `seed`.
    pub fn new(seed: u64, len: u64) -> Self {
        Self {
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            remaining: len,
        }
    }

    /// Replaces `buf` with the next block (at most [`BLOCK`] bytes); `false` at the end.
    pub fn next_block(&mut self, buf: &mut Vec<u8>) -> bool {
        buf.clear();
        if self.remaining == 0 {
            return false;
        }
        let n = usize::try_from(self.remaining).map_or(BLOCK, |r| r.min(BLOCK));
        while buf.len() < n {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            buf.extend_from_slice(&self.state.to_le_bytes());
        }
        buf.truncate(n);
        self.remaining -= n as u64;
        true
    }

    /// All the remaining bytes at once.
    pub fn into_vec(mut self) -> Vec<u8> {
        let mut all = Vec::new();
        let mut buf = Vec::with_capacity(BLOCK);
        while self.next_block(&mut buf) {
            all.extend_from_slice(&buf);
        }
        all
    }

    /// The sha256 of the `len` bytes from `seed`.
    pub fn digest(seed: u64, len: u64) -> [u8; 32] {
        let mut payload = Self::new(seed, len);
        let mut hasher = Sha256::new();
        let mut buf = Vec::with_capacity(BLOCK);
        while payload.next_block(&mut buf) {
            hasher.update(&buf);
        }
        hasher.finalize().into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_add_up_to_the_length_and_repeat_with_the_seed() {
        let all = Payload::new(3, 200_001).into_vec();
        assert_eq!(all.len(), 200_001);
        assert_eq!(all, Payload::new(3, 200_001).into_vec());
        assert_ne!(all[..64], Payload::new(4, 64).into_vec()[..]);
        assert_eq!(
            Payload::digest(3, 200_001),
            <[u8; 32]>::from(Sha256::digest(&all))
        );
    }
}
