//! The receiving half of a stream: the peer's chunks until the application reads them, the
//! stream's window and final size, and what the connection window counted for it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::reassembly::Reassembler;
use crate::receive_window::ReceiveWindow;

/// What a stream received twice (shared with the driver's stream handle, so they outlive the
/// stream's state).
#[derive(Debug, Default)]
pub struct RecvCounters {
    duplicate: AtomicU64,
    lead_micros: AtomicU64,
}

impl RecvCounters {
    pub(crate) fn add_duplicate(&self, bytes: u64, lead: Option<Duration>) {
        add(&self.duplicate, bytes);
        if let Some(lead) = lead {
            add(
                &self.lead_micros,
                u64::try_from(lead.as_micros()).unwrap_or(u64::MAX),
            );
        }
    }

    /// Bytes of this stream that arrived again after a first copy (on another path, or
    /// re-sent by the path's own loss recovery).
    pub fn duplicate(&self) -> u64 {
        self.duplicate.load(Ordering::Relaxed)
    }

    /// Summed over the chunks that arrived twice: how long after the first copy the second
    /// came ([`ReinjectionStats::first_copy_lead`](crate::ReinjectionStats::first_copy_lead)).
    pub fn first_copy_lead(&self) -> Duration {
        Duration::from_micros(self.lead_micros.load(Ordering::Relaxed))
    }
}

/// Adds without wrapping: the sums are fed by the peer.
fn add(counter: &AtomicU64, value: u64) {
    let sum = counter.load(Ordering::Relaxed).saturating_add(value);
    counter.store(sum, Ordering::Relaxed);
}

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
    pub(crate) counters: Arc<RecvCounters>,
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
            counters: Arc::default(),
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
