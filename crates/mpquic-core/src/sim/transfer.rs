//! One stream written by the client and read at the server as it arrives: what a bulk
//! transfer measures, in the simulated tests and in `cargo xtask sim --bulk`.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::error::{ReadError, WriteError};
use sha2::{Digest, Sha256};

use super::Pair;
use crate::{PathEvent, PathId};

/// What sending one stream measured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transfer {
    /// The simulation's elapsed time when the server had read every byte, or when the limit
    /// ran out.
    pub completed_at: Duration,
    /// Bytes the server read.
    pub received: u64,
    /// SHA-256 of what the server read, in order.
    pub digest: [u8; 32],
    /// Datagrams the links carried and lost since the simulation's start.
    pub datagrams: (u64, u64),
    /// The paths the client saw go down, in order.
    pub paths_down: Vec<PathId>,
    /// Stream bytes the client sent on each path (re-sends included).
    pub per_path: BTreeMap<PathId, u64>,
}

impl Transfer {
    /// Stream bytes sent on path `k` (0 if none).
    pub fn sent_on(&self, k: u32) -> u64 {
        self.per_path.get(&PathId(k)).copied().unwrap_or(0)
    }
}

/// Why a transfer stopped before its limit.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// The client's stream refused a write or the finish.
    #[error("write: {0}")]
    Write(#[from] WriteError),
    /// The server's stream failed a read.
    #[error("read: {0}")]
    Read(#[from] ReadError),
    /// The stream is not the client's, or not open.
    #[error("stream {0} is not open at the client")]
    UnknownStream(u64),
}

impl Pair {
    /// Writes `data` on the client's open stream `stream` as fast as it takes it, finishes the
    /// stream, and reads it at the server as it comes, until every byte is read or `limit` of
    /// simulated time has passed (then [`Transfer::received`] is short).
    ///
    /// # Errors
    /// [`TransferError`]: a write or read failed, or `stream` is not open.
    pub fn send_stream(
        &mut self,
        stream: u64,
        data: &[u8],
        limit: Duration,
    ) -> Result<Transfer, TransferError> {
        let counters = self
            .client
            .core
            .send_counters(stream)
            .ok_or(TransferError::UnknownStream(stream))?;
        let mut progress = Progress {
            stream,
            written: 0,
            accepted: false,
            received: 0,
            digest: Sha256::new(),
            paths_down: Vec::new(),
        };
        let mut failed = None;
        self.run_until(limit, |pair| {
            progress.advance(pair, data).unwrap_or_else(|e| {
                failed = Some(e);
                true
            })
        });
        if let Some(e) = failed {
            return Err(e);
        }
        Ok(Transfer {
            completed_at: self.elapsed(),
            received: progress.received,
            digest: progress.digest.finalize().into(),
            datagrams: self.datagrams(),
            paths_down: progress.paths_down,
            per_path: counters.per_path(),
        })
    }
}

/// How far a [`Pair::send_stream`] has come.
struct Progress {
    stream: u64,
    written: usize,
    accepted: bool,
    received: u64,
    digest: Sha256,
    paths_down: Vec<PathId>,
}

impl Progress {
    /// Writes what the client's stream takes, reads what the server has: whether all of
    /// `data` has been read.
    fn advance(&mut self, pair: &mut Pair, data: &[u8]) -> Result<bool, TransferError> {
        let (stream, now) = (self.stream, pair.now());
        while self.written < data.len() {
            let n = pair.client.core.write(stream, &data[self.written..], now)?;
            if n == 0 {
                break;
            }
            self.written += n;
            if self.written == data.len() {
                pair.client.core.finish(stream, now)?;
            }
        }
        self.accepted = self.accepted || pair.server.core.accept(true) == Some(stream);
        while let Some(read) = self
            .accepted
            .then(|| pair.server.core.read(stream, usize::MAX))
            .flatten()
        {
            let Some(bytes) = read? else { break };
            self.digest.update(&bytes);
            self.received = self.received.saturating_add(bytes.len() as u64);
        }
        for event in pair.client.take_events() {
            if let PathEvent::Down { path, .. } = event {
                self.paths_down.push(path);
            }
        }
        Ok(self.received == data.len() as u64)
    }
}
