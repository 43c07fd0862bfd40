//! What packets carry: frames (pieces of one object's body), packed up to the MTU.
//!
//! A frame keeps its identity when it is re-sent, so the client can ignore a duplicate and the
//! server can tell which bytes an acknowledgement covers.

/// A contiguous piece of one object's body, the unit a packet carries and a loss re-sends.
#[derive(Debug, Clone, Copy)]
pub(super) struct Frame {
    pub(super) object: usize,
    pub(super) len: u64,
    /// The client has it.
    pub(super) delivered: bool,
    /// The server knows the client has it.
    pub(super) acked: bool,
    /// Waiting in its path's retransmission queue.
    pub(super) pending: bool,
}

/// Packs frames into packets of at most `mtu` bytes.
#[derive(Debug)]
pub(super) struct PacketBuilder {
    mtu: u64,
    open: Option<(u64, Vec<usize>)>,
    done: Vec<(u64, Vec<usize>)>,
}

impl PacketBuilder {
    pub(super) fn new(mtu: u64) -> Self {
        Self {
            mtu,
            open: None,
            done: Vec::new(),
        }
    }

    /// Bytes still free in the open packet (0 if none is open).
    pub(super) fn space(&self) -> u64 {
        self.open
            .as_ref()
            .map_or(0, |(len, _)| self.mtu.saturating_sub(*len))
    }

    pub(super) fn close(&mut self) {
        if let Some(packet) = self.open.take() {
            self.done.push(packet);
        }
    }

    /// Adds a frame of `len` bytes, closing the open packet first if it does not fit.
    pub(super) fn push(&mut self, frame: usize, len: u64) {
        if len > self.space() {
            self.close();
        }
        let (used, frames) = self.open.get_or_insert_with(|| (0, Vec::new()));
        *used += len;
        frames.push(frame);
    }

    pub(super) fn finish(mut self) -> Vec<(u64, Vec<usize>)> {
        self.close();
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_fill_packets_up_to_the_mtu() {
        let mut b = PacketBuilder::new(1200);
        assert_eq!(b.space(), 0);
        b.push(0, 500);
        assert_eq!(b.space(), 700);
        b.push(1, 700);
        b.push(2, 1);
        b.push(3, 1200);
        assert_eq!(
            b.finish(),
            vec![(1200, vec![0, 1]), (1, vec![2]), (1200, vec![3])]
        );
    }
}
