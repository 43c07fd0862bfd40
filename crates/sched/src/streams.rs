//! The table of streams every scheduler keeps: metadata, arrival order and unsent bytes.

use std::collections::BTreeMap;

use crate::{Grant, SchedError, StreamId, StreamMeta};

/// A stream as a scheduler tracks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamState {
    /// What the application said about the stream.
    pub meta: StreamMeta,
    /// Arrival order: lower opened earlier (FCFS tie-break everywhere).
    pub seq: u64,
    /// Bytes ready to send and not yet granted to a path.
    pub queued: u64,
    /// Bytes granted so far (re-sent bytes count again).
    pub granted: u64,
    /// The application finished writing: nothing beyond `queued` will come.
    pub finished: bool,
}

impl StreamState {
    /// Bytes the stream will still send, if known: what is queued once finished, else the
    /// declared size less what was granted (at least what is queued).
    pub fn remaining(&self) -> Option<u64> {
        if self.finished {
            return Some(self.queued);
        }
        self.meta
            .size
            .map(|size| size.saturating_sub(self.granted).max(self.queued))
    }

    /// Bytes the stream still has to send as far as is known now: [`remaining`](Self::remaining)
    /// when the size is known, else what is queued.
    pub fn left(&self) -> u64 {
        self.remaining().unwrap_or(self.queued)
    }
}

/// The streams a scheduler knows, keyed by id.
#[derive(Debug, Clone, Default)]
pub struct StreamTable {
    streams: BTreeMap<StreamId, StreamState>,
    next_seq: u64,
}

impl StreamTable {
    /// Opens a stream; refuses an id that is already open.
    pub fn open(&mut self, meta: StreamMeta) -> Result<&mut StreamState, SchedError> {
        if self.streams.contains_key(&meta.id) {
            return Err(SchedError::DuplicateStream(meta.id));
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        Ok(self.streams.entry(meta.id).or_insert(StreamState {
            meta,
            seq,
            queued: 0,
            granted: 0,
            finished: false,
        }))
    }

    /// Replaces a stream's metadata (a priority update or a size hint), keeping its place.
    pub fn update(&mut self, meta: StreamMeta) -> Result<&mut StreamState, SchedError> {
        let state = self.get_mut(meta.id)?;
        state.meta = meta;
        Ok(state)
    }

    /// Adds bytes ready to send: new application data or bytes to re-send.
    pub fn queue(&mut self, id: StreamId, bytes: u64) -> Result<&mut StreamState, SchedError> {
        let state = self.get_mut(id)?;
        state.queued = state.queued.saturating_add(bytes);
        Ok(state)
    }

    /// Marks that the application wrote its last byte.
    pub fn finish(&mut self, id: StreamId) -> Result<&mut StreamState, SchedError> {
        let state = self.get_mut(id)?;
        state.finished = true;
        Ok(state)
    }

    /// Records that `bytes` of a stream were granted to a path. Grants beyond what is queued
    /// are clamped, so a scheduler bug cannot underflow the table.
    pub fn take(&mut self, id: StreamId, bytes: u64) -> u64 {
        let Some(state) = self.streams.get_mut(&id) else {
            return 0;
        };
        let bytes = bytes.min(state.queued);
        state.queued -= bytes;
        state.granted = state.granted.saturating_add(bytes);
        bytes
    }

    /// Takes up to `bytes` of a stream's queued bytes ([`Self::take`]) as a grant in its own
    /// bucket, its effective urgency; `None` rather than an empty grant.
    pub fn grant(&mut self, id: StreamId, bytes: u64) -> Option<Grant> {
        let urgency = self.streams.get(&id)?.meta.effective_urgency();
        let bytes = self.take(id, bytes);
        (bytes > 0).then_some(Grant {
            stream: id,
            bytes,
            urgency,
            first_in_bucket: false,
        })
    }

    /// Forgets a stream (closed or reset); unknown ids are ignored.
    pub fn remove(&mut self, id: StreamId) -> Option<StreamState> {
        self.streams.remove(&id)
    }

    /// A stream's state.
    pub fn get(&self, id: StreamId) -> Option<&StreamState> {
        self.streams.get(&id)
    }

    /// A stream's state, mutable.
    pub fn get_mut(&mut self, id: StreamId) -> Result<&mut StreamState, SchedError> {
        self.streams
            .get_mut(&id)
            .ok_or(SchedError::UnknownStream(id))
    }

    /// Every stream, by id.
    pub fn iter(&self) -> impl Iterator<Item = &StreamState> + '_ {
        self.streams.values()
    }

    /// Number of streams.
    pub fn len(&self) -> usize {
        self.streams.len()
    }

    /// Whether no stream is open.
    pub fn is_empty(&self) -> bool {
        self.streams.is_empty()
    }
}
