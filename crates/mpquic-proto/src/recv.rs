//! The receiving half of a stream: the peer's chunks until the application reads them, the
//! stream's window and final size, and what the connection window counted for it.

use crate::reassembly::Reassembler;
use crate::receive_window::ReceiveWindow;

#[derive(Debug)]
pub(crate) struct RecvState {
    pub(crate) reasm: Reassembler,
    /// The window end advertised to the peer.
    pub(crate) max_stream_data: u64,
    pub(crate) final_size: Option<u64>,
    /// Highest end offset counted against the connection window.
    pub(crate) counted_end: u64,
    /// The offset up to which this stream's counted bytes were given back to the connection
    /// window: the read offset, or `counted_end` once the bytes are discarded.
    pub(crate) credited: u64,
    pub(crate) reset: Option<u64>,
    pub(crate) stopped: bool,
    /// The last data ack queued (offset, fin).
    pub(crate) acked: (u64, bool),
    /// The application waits for bytes, an end or a reset.
    pub(crate) reader_waiting: bool,
}

impl RecvState {
    pub(crate) fn new(window: u64) -> Self {
        Self {
            reasm: Reassembler::new(),
            max_stream_data: window,
            final_size: None,
            counted_end: 0,
            credited: 0,
            reset: None,
            stopped: false,
            acked: (0, false),
            reader_waiting: false,
        }
    }

    /// Whether the application waited to read (and no longer does): it must be woken.
    pub(crate) fn wake(&mut self) -> bool {
        std::mem::take(&mut self.reader_waiting)
    }

    pub(crate) fn complete(&self) -> bool {
        self.final_size == Some(self.reasm.contiguous_end())
    }

    /// Drops the buffered bytes, which nobody will read, and gives the credit and the memory
    /// they held back to the connection window.
    pub(crate) fn discard(&mut self, window: &mut ReceiveWindow) {
        window.free(self.reasm.footprint());
        self.reasm = Reassembler::new();
        window.consume(self.counted_end - self.credited);
        self.credited = self.counted_end;
    }
}
