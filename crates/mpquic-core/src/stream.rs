//! Stream handles: [`SendStream`] (tokio `AsyncWrite`) and [`RecvStream`] (tokio `AsyncRead`).

use std::collections::BTreeMap;
use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use mpquic_sched::{Lead, PathId, PathSet, Priority, StreamId};
use quinn::VarInt;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::connection::{Handle, Shared};
use crate::error::{ReadError, ReadToEndError, WriteError};
use mpquic_proto::{RecvCounters, StreamCounters};

/// The sending half of a stream.
///
/// Dropping it without [`finish`](Self::finish) or [`reset`](Self::reset) finishes the stream.
pub struct SendStream {
    shared: Arc<Shared>,
    _handle: Arc<Handle>,
    id: u64,
    counters: Arc<StreamCounters>,
    done: bool,
}

impl std::fmt::Debug for SendStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendStream").field("id", &self.id).finish()
    }
}

impl SendStream {
    pub(crate) fn new(shared: Arc<Shared>, handle: Arc<Handle>, id: u64) -> Self {
        let counters = shared.lock().core.send_counters(id).unwrap_or_default();
        Self {
            shared,
            _handle: handle,
            id,
            counters,
            done: false,
        }
    }

    /// The stream's id.
    pub fn id(&self) -> StreamId {
        StreamId(self.id)
    }

    pub(crate) fn poll_write_inner(
        &mut self,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<Result<usize, WriteError>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let written = self.shared.lock().write(self.id, buf, cx.waker());
        match written {
            Ok(0) => Poll::Pending,
            Err(WriteError::ClosedStream) => Poll::Ready(Err(self.closed_error())),
            other => Poll::Ready(other),
        }
    }

    /// Why a write to a stream without state fails: the peer's stop code if it stopped it.
    fn closed_error(&self) -> WriteError {
        self.counters
            .stopped()
            .map_or(WriteError::ClosedStream, WriteError::Stopped)
    }

    /// Writes some of `buf`, waiting while the send buffer is full; returns how much.
    pub async fn write(&mut self, buf: &[u8]) -> Result<usize, WriteError> {
        poll_fn(|cx| self.poll_write_inner(cx, buf)).await
    }

    /// Writes all of `buf`.
    pub async fn write_all(&mut self, mut buf: &[u8]) -> Result<(), WriteError> {
        while !buf.is_empty() {
            let n = self.write(buf).await?;
            buf = &buf[n..];
        }
        Ok(())
    }

    /// Marks the end of the stream; everything written is still delivered.
    pub fn finish(&mut self) -> Result<(), WriteError> {
        self.done = true;
        let result = self.shared.lock().core.finish(self.id, Instant::now());
        self.shared.poke();
        result
    }

    /// Abandons the stream: unsent data is dropped and the reader sees `code`.
    pub fn reset(&mut self, code: VarInt) -> Result<(), WriteError> {
        let result = self
            .shared
            .lock()
            .core
            .reset(self.id, code.into_inner(), Instant::now());
        self.done = true;
        self.shared.poke();
        result
    }

    /// Sets the RFC 9218 priority the scheduler orders the stream by.
    pub fn set_priority(&mut self, priority: Priority) -> Result<(), WriteError> {
        self.shared
            .lock()
            .core
            .set_priority(self.id, priority, Instant::now())
    }

    /// Tells the scheduler the stream's total size (e.g. a response's `content-length`), so
    /// that PriorityBucket can split it across paths before the bytes are written.
    pub fn set_size_hint(&mut self, bytes: u64) -> Result<(), WriteError> {
        self.shared
            .lock()
            .core
            .set_size_hint(self.id, bytes, Instant::now())
    }

    /// Tells the scheduler what the peer requests once it has this stream (a server that knows
    /// its pages' dependencies knows): the most urgent of those requests and their bytes. A
    /// small script of low urgency that leads to critical CSS is then scheduled at the CSS's
    /// urgency rather than waiting behind the others of its own (priority inversion), and
    /// PriorityBucket sends a stream that starts a chain of requests before the streams that
    /// start none ([`PriorityBucket`](mpquic_sched::PriorityBucket) says when).
    pub fn set_leads_to(&mut self, lead: Lead) -> Result<(), WriteError> {
        self.shared
            .lock()
            .core
            .set_leads_to(self.id, lead, Instant::now())
    }

    /// Keeps the stream on `paths` (`None`: any path, the default): every scheduler sends it
    /// only there, PriorityBucket splits it over them, and re-injection copies it only onto
    /// them. While none of them is up the stream waits. Bytes already in flight stay where
    /// they are.
    pub fn set_paths(&mut self, paths: Option<PathSet>) -> Result<(), WriteError> {
        self.shared
            .lock()
            .core
            .set_paths(self.id, paths, Instant::now())
    }

    /// Bytes of this stream sent on each path so far (re-sends included).
    pub fn path_bytes(&self) -> BTreeMap<PathId, u64> {
        self.counters.per_path()
    }

    /// Bytes of this stream sent again because their path failed.
    pub fn resent_bytes(&self) -> u64 {
        self.counters.resent()
    }

    /// Bytes of this stream sent again on another path while their first copy was in flight:
    /// lost on a slower path while the stream was urgent, or on a suspected path
    /// ([`ReinjectionConfig`](crate::ReinjectionConfig)).
    pub fn reinjected_bytes(&self) -> u64 {
        self.counters.reinjected()
    }
}

impl Drop for SendStream {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.shared.lock().core.finish(self.id, Instant::now());
            self.shared.poke();
        }
    }
}

impl AsyncWrite for SendStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().poll_write_inner(cx, buf).map_err(Into::into)
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Written bytes are already in the scheduler's hands.
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(Ok(()));
        }
        Poll::Ready(this.finish().map_err(Into::into))
    }
}

/// The receiving half of a stream.
///
/// Dropping it before the end stops the stream (the peer's writes fail with code 0).
pub struct RecvStream {
    shared: Arc<Shared>,
    _handle: Arc<Handle>,
    id: u64,
    counters: Arc<RecvCounters>,
    done: bool,
}

impl std::fmt::Debug for RecvStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvStream").field("id", &self.id).finish()
    }
}

impl RecvStream {
    pub(crate) fn new(shared: Arc<Shared>, handle: Arc<Handle>, id: u64) -> Self {
        let counters = shared.lock().core.recv_counters(id).unwrap_or_default();
        Self {
            shared,
            _handle: handle,
            id,
            counters,
            done: false,
        }
    }

    /// The stream's id.
    pub fn id(&self) -> StreamId {
        StreamId(self.id)
    }

    /// Bytes of this stream that arrived a second time (a re-injected copy and its original,
    /// whichever came second).
    pub fn duplicate_bytes(&self) -> u64 {
        self.counters.duplicate()
    }

    /// How long after their first copy the second copies of this stream's bytes came, summed
    /// ([`ReinjectionStats::first_copy_lead`](crate::ReinjectionStats::first_copy_lead)): the
    /// time re-injection saved where its copy came first.
    pub fn first_copy_lead(&self) -> Duration {
        self.counters.first_copy_lead()
    }

    pub(crate) fn poll_chunk(
        &mut self,
        cx: &mut Context<'_>,
        max: usize,
    ) -> Poll<Result<Option<Bytes>, ReadError>> {
        if self.done {
            return Poll::Ready(Ok(None));
        }
        let result = self.shared.lock().read(self.id, max, cx.waker());
        match result {
            None => Poll::Pending,
            Some(result) => {
                if !matches!(result, Ok(Some(_))) {
                    self.done = true;
                }
                self.shared.poke();
                Poll::Ready(result)
            }
        }
    }

    /// The next in-order bytes, at most `max`; `None` at the end of the stream.
    pub async fn read_chunk(&mut self, max: usize) -> Result<Option<Bytes>, ReadError> {
        poll_fn(|cx| self.poll_chunk(cx, max)).await
    }

    /// Reads into `buf`; `None` at the end of the stream.
    pub async fn read(&mut self, buf: &mut [u8]) -> Result<Option<usize>, ReadError> {
        if buf.is_empty() {
            return Ok(Some(0));
        }
        Ok(self.read_chunk(buf.len()).await?.map(|chunk| {
            buf[..chunk.len()].copy_from_slice(&chunk);
            chunk.len()
        }))
    }

    /// Reads the whole stream, failing if it is longer than `limit` bytes.
    pub async fn read_to_end(&mut self, limit: usize) -> Result<Vec<u8>, ReadToEndError> {
        let mut out = Vec::new();
        while let Some(chunk) = self.read_chunk(usize::MAX).await? {
            if out.len() + chunk.len() > limit {
                let _ = self.stop(VarInt::from_u32(0));
                return Err(ReadToEndError::TooLong(limit));
            }
            out.extend_from_slice(&chunk);
        }
        Ok(out)
    }

    /// Stops reading: buffered and future bytes are discarded and the peer's writes fail with
    /// `code`.
    pub fn stop(&mut self, code: VarInt) -> Result<(), ReadError> {
        if self.done {
            return Err(ReadError::ClosedStream);
        }
        let result = self.shared.lock().core.stop(self.id, code.into_inner());
        self.done = true;
        self.shared.poke();
        result
    }
}

impl Drop for RecvStream {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.shared.lock().core.stop(self.id, 0);
            self.shared.poke();
        }
    }
}

impl AsyncRead for RecvStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.poll_chunk(cx, buf.remaining()) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(Some(chunk))) => {
                buf.put_slice(&chunk);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Ok(None)) => Poll::Ready(Ok(())),
            Poll::Ready(Err(e)) => Poll::Ready(Err(e.into())),
        }
    }
}
