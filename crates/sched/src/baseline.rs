//! The baseline schedulers' configurations, and what the baselines share inside the crate:
//! their tables, the round-robin cursor over streams and the lowest-RTT path rule of mp-quic.
//!
//! Each baseline is a thin policy over the shared parts, so they cannot drift apart on the
//! bookkeeping the [`Scheduler`](crate::Scheduler) contract asks of all of them.

pub use crate::lrf::LrfConfig;
pub use crate::round_robin::RoundRobinConfig;
pub use crate::sa_ecf::SaEcfConfig;
pub use crate::sec::{
    split_stream, wrr_completion, FluidCompletion, FluidStream, SecConfig, SecDelay, SplitPath,
};
pub use crate::wrr::WrrConfig;

use crate::{
    Grant, PathId, PathSnapshot, PathTable, SchedError, StreamId, StreamMeta, StreamTable,
};

/// The paths and streams a baseline knows, with the event handling every baseline does alike.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tables {
    /// Known paths with their latest snapshots.
    pub(crate) paths: PathTable,
    /// Open streams; closed ones are removed, so memory follows the open streams.
    pub(crate) streams: StreamTable,
}

impl Tables {
    pub(crate) fn add_path(&mut self, path: &PathSnapshot) -> Result<(), SchedError> {
        self.paths.add(*path)
    }

    pub(crate) fn update_path(&mut self, path: &PathSnapshot) -> Result<(), SchedError> {
        self.paths.update(*path).map(drop)
    }

    pub(crate) fn remove_path(&mut self, path: PathId) {
        self.paths.remove(path);
    }

    pub(crate) fn open_stream(&mut self, meta: &StreamMeta) -> Result<(), SchedError> {
        self.streams.open(*meta).map(drop)
    }

    pub(crate) fn update_stream(&mut self, meta: &StreamMeta) -> Result<(), SchedError> {
        self.streams.update(*meta).map(drop)
    }

    pub(crate) fn queue(&mut self, stream: StreamId, bytes: u64) -> Result<(), SchedError> {
        self.streams.queue(stream, bytes).map(drop)
    }

    pub(crate) fn finish(&mut self, stream: StreamId) -> Result<(), SchedError> {
        self.streams.finish(stream).map(drop)
    }

    pub(crate) fn close(&mut self, stream: StreamId) {
        self.streams.remove(stream);
    }

    /// Whether a poll may be answered at all: some room, and a path that may carry data now.
    pub(crate) fn may_send(&self, path: PathId, room: u64) -> bool {
        room > 0 && self.paths.is_usable(path)
    }

    /// Takes up to `bytes` of `stream` off its queue as a grant; `None` rather than an empty
    /// grant when nothing is left.
    pub(crate) fn grant(&mut self, stream: StreamId, bytes: u64) -> Option<Grant> {
        let bytes = self.streams.take(stream, bytes);
        (bytes > 0).then_some(Grant { stream, bytes })
    }
}

/// Plain round robin over the streams with queued bytes, in stream-id order, one chunk per turn.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RoundRobinCursor {
    last: Option<StreamId>,
}

impl RoundRobinCursor {
    /// The stream whose turn it is: the first after the last served one that has queued bytes,
    /// wrapping around.
    pub(crate) fn next(&self, streams: &StreamTable) -> Option<StreamId> {
        let mut waiting = streams.iter().filter(|s| s.queued > 0).map(|s| s.meta.id);
        let first = waiting.next()?;
        let Some(last) = self.last else {
            return Some(first);
        };
        if first > last {
            return Some(first);
        }
        Some(waiting.find(|&id| id > last).unwrap_or(first))
    }

    /// Records that `stream` had its turn.
    pub(crate) fn served(&mut self, stream: StreamId) {
        self.last = Some(stream);
    }
}

/// mp-quic's path rule (De Coninck and Bonaventure, CoNEXT 2017): data goes to the usable path
/// with the lowest smoothed RTT among those with congestion-window room. The asked path counts
/// as having `room`; the others use their snapshots. Paths tied on the lowest SRTT all qualify,
/// so equal paths are both used.
pub(crate) fn is_lowest_rtt_with_room(paths: &PathTable, asked: PathId, room: u64) -> bool {
    if room == 0 {
        return false;
    }
    let Some(me) = paths.usable().find(|p| p.id == asked) else {
        return false;
    };
    !paths
        .usable()
        .any(|p| p.id != asked && p.room() > 0 && p.srtt < me.srtt)
}
