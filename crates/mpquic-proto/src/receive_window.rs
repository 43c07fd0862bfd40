//! The connection's receive window: how much the peer may send over all streams, and what
//! the bytes it sent cost in memory.

use crate::error::ProtocolError;

/// The connection-wide receive credit and memory bound.
///
/// The peer may send up to [`ReceiveWindow::limit`] stream bytes in all (highest offsets,
/// summed over streams). Bytes the application read, stopped or saw reset are consumed, and
/// the limit follows them: it is raised to `consumed + window` as soon as that is worth a
/// frame (an eighth of the window, as quinn does), so unread bytes block other streams only
/// once they truly fill the window.
///
/// Independently of the byte counts, the reassembly buffers' real memory (see
/// [`Reassembler::footprint`](crate::reassembly::Reassembler::footprint)) may not exceed twice
/// the window: a peer whose chunking costs more is closed.
#[derive(Debug)]
pub(crate) struct ReceiveWindow {
    /// The configured window.
    window: u64,
    /// The largest total the peer may send: announced, or to be announced if `raised`.
    limit: u64,
    /// Stream bytes counted against the limit.
    received: u64,
    /// Counted bytes the application is done with.
    consumed: u64,
    /// `limit` grew since it was last announced.
    raised: bool,
    /// What the streams' reassembly buffers cost in memory.
    footprint: u64,
}

impl ReceiveWindow {
    pub(crate) fn new(window: u64) -> Self {
        Self {
            window,
            limit: window,
            received: 0,
            consumed: 0,
            raised: false,
            footprint: 0,
        }
    }

    /// Counts `grown` more bytes against the limit; a peer that exceeds it broke flow control.
    pub(crate) fn receive(&mut self, grown: u64) -> Result<(), ProtocolError> {
        match self.received.checked_add(grown) {
            Some(received) if received <= self.limit => {
                self.received = received;
                Ok(())
            }
            _ => Err(ProtocolError::ConnectionWindow {
                received: self.received.saturating_add(grown),
                limit: self.limit,
            }),
        }
    }

    /// The application is done with `bytes` counted bytes: the limit may move on.
    pub(crate) fn consume(&mut self, bytes: u64) {
        // Never more than was received, so it cannot overflow; saturate all the same.
        self.consumed = self.consumed.saturating_add(bytes).min(self.received);
        let target = self.consumed.saturating_add(self.window);
        if target.saturating_sub(self.limit) >= (self.window / 8).max(1) {
            self.limit = target;
            self.raised = true;
        }
    }

    /// The limit to announce, if it grew since it was last taken.
    pub(crate) fn take_update(&mut self) -> Option<u64> {
        std::mem::take(&mut self.raised).then_some(self.limit)
    }

    /// Whether a raised limit waits to be announced.
    pub(crate) fn has_update(&self) -> bool {
        self.raised
    }

    /// The counters, for checking invariants: (limit, received, consumed, footprint).
    #[cfg(test)]
    pub(crate) fn counters(&self) -> (u64, u64, u64, u64) {
        (self.limit, self.received, self.consumed, self.footprint)
    }

    /// Announce the limit again (the frame may have been lost with a path).
    pub(crate) fn repeat(&mut self) {
        self.raised = true;
    }

    /// A stream's reassembly buffer gave back `bytes` of memory.
    pub(crate) fn free(&mut self, bytes: u64) {
        self.footprint = self.footprint.saturating_sub(bytes);
    }

    /// A stream's reassembly buffer went from `before` to `after` bytes of memory; a peer
    /// that makes the buffers cost more than twice the window is refused.
    pub(crate) fn track_footprint(
        &mut self,
        stream: u64,
        before: u64,
        after: u64,
    ) -> Result<(), ProtocolError> {
        self.footprint = self.footprint.saturating_sub(before).saturating_add(after);
        let limit = self.window.saturating_mul(2);
        if self.footprint > limit {
            return Err(ProtocolError::ExcessiveBuffering {
                stream,
                footprint: self.footprint,
                limit,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_follows_what_is_consumed() {
        let mut w = ReceiveWindow::new(800);
        w.receive(800).unwrap();
        assert!(w.receive(1).is_err(), "a full window");
        // Less than an eighth consumed: not worth a frame yet.
        w.consume(99);
        assert_eq!(w.take_update(), None);
        w.consume(1);
        assert_eq!(w.take_update(), Some(900));
        assert_eq!(w.take_update(), None);
        w.receive(100).unwrap();
        assert!(w.receive(1).is_err());
    }

    #[test]
    fn counts_never_wrap() {
        let mut w = ReceiveWindow::new(u64::MAX / 2);
        assert!(w.receive(u64::MAX).is_err());
        w.receive(u64::MAX / 2).unwrap();
        w.consume(u64::MAX);
        assert_eq!(w.take_update(), Some(u64::MAX - 1));
        w.receive(u64::MAX / 2).unwrap();
        assert!(w.receive(2).is_err());
    }

    #[test]
    fn memory_beyond_twice_the_window_is_refused() {
        let mut w = ReceiveWindow::new(100);
        w.track_footprint(2, 0, 150).unwrap();
        w.track_footprint(6, 0, 50).unwrap();
        assert!(matches!(
            w.track_footprint(6, 50, 51),
            Err(ProtocolError::ExcessiveBuffering {
                stream: 6,
                footprint: 201,
                limit: 200
            })
        ));
        w.track_footprint(2, 150, 0).unwrap();
    }
}
