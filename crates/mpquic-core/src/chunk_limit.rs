//! How many chunk streams the peer may have open on one path at once.
//!
//! quinn-proto keeps the receive state of every stream it has freed and hands it to the next
//! stream id it allows (`free_recv` in quinn-proto's `connection/streams/state.rs`), but the
//! ids it allows up front start without one. A path that announces room for N streams therefore
//! allocates N receive states, about 1 KB each, as its first N streams pass through, even if
//! never more than one was open: a long-lived path's heap grows with every stream until N.
//!
//! So a path announces a small limit and doubles it while the peer's open chunk streams reach
//! half of it, up to the cap that the session's own stream limits imply. What a path keeps is
//! then set by the most streams the peer really had open on it, and the peer's sender is not
//! held up: the raise goes out while it still has half the limit to open.

use quinn::VarInt;

use crate::error::varint;

/// The limit a path starts with: more than a page's usual burst of streams on one path.
const INITIAL: u64 = 128;

/// One path's limit on the peer's open chunk streams.
#[derive(Debug, Clone)]
pub(crate) struct ChunkStreamLimit {
    limit: u64,
    cap: u64,
}

impl ChunkStreamLimit {
    /// A limit that may rise to `cap`.
    pub(crate) fn new(cap: u64) -> Self {
        Self {
            limit: cap.min(INITIAL),
            cap,
        }
    }

    /// The limit announced now.
    pub(crate) fn announced(&self) -> VarInt {
        varint(self.limit)
    }

    /// The peer has `open` chunk streams open on the path: the limit to announce, if it rises.
    pub(crate) fn on_open(&mut self, open: usize) -> Option<VarInt> {
        let open = u64::try_from(open).unwrap_or(u64::MAX);
        if self.limit >= self.cap || open.saturating_mul(2) < self.limit {
            return None;
        }
        self.limit = self.limit.saturating_mul(2).min(self.cap);
        Some(self.announced())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_doubles_at_half_and_stops_at_the_cap() {
        let mut limit = ChunkStreamLimit::new(300);
        assert_eq!(limit.announced(), VarInt::from_u32(128));
        assert_eq!(limit.on_open(63), None);
        assert_eq!(limit.on_open(64), Some(VarInt::from_u32(256)));
        assert_eq!(limit.on_open(127), None);
        assert_eq!(limit.on_open(128), Some(VarInt::from_u32(300)));
        assert_eq!(limit.on_open(300), None);
    }

    #[test]
    fn a_cap_below_the_start_is_the_limit() {
        let mut limit = ChunkStreamLimit::new(20);
        assert_eq!(limit.announced(), VarInt::from_u32(20));
        assert_eq!(limit.on_open(20), None);
    }
}
