//! The [`h3`] crate's QUIC traits over a multipath connection (feature `h3`), so the unmodified
//! `h3` client and server run over mpquic.
//!
//! Wrap a [`Connection`] in [`H3Connection`] and hand it to `h3::server::builder().build()` or
//! `h3::client::new`. A server that knows a response's urgency and size tells the multipath
//! stream before writing it, with [`Connection::set_stream_priority`] and
//! [`Connection::set_stream_size_hint`] on the request's stream id, so that the scheduler
//! (PriorityBucket) can place it on the paths before its first byte is sent.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use ::h3::quic::{self, ConnectionErrorIncoming, StreamErrorIncoming, StreamId, WriteBuf};
use bytes::{Buf, Bytes};

use crate::error::{varint, ConnectionError, ReadError, WriteError};
use crate::{Connection, RecvStream, SendStream};

type Pending<T> = Pin<Box<dyn Future<Output = T> + Send + Sync>>;

fn connection_error(e: ConnectionError) -> ConnectionErrorIncoming {
    match e {
        ConnectionError::ApplicationClosed { code, .. } => {
            ConnectionErrorIncoming::ApplicationClose { error_code: code }
        }
        ConnectionError::TimedOut => ConnectionErrorIncoming::Timeout,
        other => ConnectionErrorIncoming::Undefined(Arc::new(other)),
    }
}

fn stream_error_from_connection(e: ConnectionError) -> StreamErrorIncoming {
    StreamErrorIncoming::ConnectionErrorIncoming {
        connection_error: connection_error(e),
    }
}

fn write_error(e: WriteError) -> StreamErrorIncoming {
    match e {
        WriteError::Stopped(code) => StreamErrorIncoming::StreamTerminated { error_code: code },
        WriteError::ConnectionLost(e) => stream_error_from_connection(e),
        other => StreamErrorIncoming::Unknown(Box::new(other)),
    }
}

fn read_error(e: ReadError) -> StreamErrorIncoming {
    match e {
        ReadError::Reset(code) => StreamErrorIncoming::StreamTerminated { error_code: code },
        ReadError::ConnectionLost(e) => stream_error_from_connection(e),
        other => StreamErrorIncoming::Unknown(Box::new(other)),
    }
}

fn h3_id(id: crate::StreamId) -> StreamId {
    // mpquic numbers streams as QUIC does (62-bit, initiator and direction in the low bits).
    StreamId::try_from(id.0).unwrap_or_else(|_| StreamId::try_from(0).expect("0 is valid"))
}

/// Polls a stored future, creating it when none is pending.
fn poll_pending<T>(
    slot: &mut Option<Pending<T>>,
    cx: &mut Context<'_>,
    make: impl FnOnce() -> Pending<T>,
) -> Poll<T> {
    let future = slot.get_or_insert_with(make);
    let result = future.as_mut().poll(cx);
    if result.is_ready() {
        *slot = None;
    }
    result
}

/// A multipath connection as the `h3` crate's `quic::Connection`.
pub struct H3Connection {
    conn: Connection,
    opener: H3Opener,
    accept_bi: Option<Pending<Result<(SendStream, RecvStream), ConnectionError>>>,
    accept_uni: Option<Pending<Result<RecvStream, ConnectionError>>>,
}

impl std::fmt::Debug for H3Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H3Connection")
            .field("conn", &self.conn)
            .finish_non_exhaustive()
    }
}

impl H3Connection {
    /// Wraps a multipath connection.
    pub fn new(conn: Connection) -> Self {
        Self {
            opener: H3Opener::new(conn.clone()),
            conn,
            accept_bi: None,
            accept_uni: None,
        }
    }

    /// The multipath connection underneath.
    pub fn inner(&self) -> &Connection {
        &self.conn
    }
}

impl<B: Buf> quic::Connection<B> for H3Connection {
    type RecvStream = H3RecvStream;
    type OpenStreams = H3Opener;

    fn poll_accept_recv(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::RecvStream, ConnectionErrorIncoming>> {
        let conn = &self.conn;
        poll_pending(&mut self.accept_uni, cx, || {
            let conn = conn.clone();
            Box::pin(async move { conn.accept_uni().await })
        })
        .map(|r| r.map(H3RecvStream::new).map_err(connection_error))
    }

    fn poll_accept_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::BidiStream, ConnectionErrorIncoming>> {
        let conn = &self.conn;
        poll_pending(&mut self.accept_bi, cx, || {
            let conn = conn.clone();
            Box::pin(async move { conn.accept_bi().await })
        })
        .map(|r| {
            r.map(|(send, recv)| H3BidiStream::new(send, recv))
                .map_err(connection_error)
        })
    }

    fn opener(&self) -> Self::OpenStreams {
        H3Opener::new(self.conn.clone())
    }
}

impl<B: Buf> quic::OpenStreams<B> for H3Connection {
    type BidiStream = H3BidiStream<B>;
    type SendStream = H3SendStream<B>;

    fn poll_open_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::BidiStream, StreamErrorIncoming>> {
        quic::OpenStreams::<B>::poll_open_bidi(&mut self.opener, cx)
    }

    fn poll_open_send(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::SendStream, StreamErrorIncoming>> {
        quic::OpenStreams::<B>::poll_open_send(&mut self.opener, cx)
    }

    fn close(&mut self, code: ::h3::error::Code, reason: &[u8]) {
        self.conn.close(varint(code.value()), reason);
    }
}

/// Opens streams on a multipath connection for `h3`.
pub struct H3Opener {
    conn: Connection,
    open_bi: Option<Pending<Result<(SendStream, RecvStream), crate::OpenStreamError>>>,
    open_uni: Option<Pending<Result<SendStream, crate::OpenStreamError>>>,
}

impl H3Opener {
    fn new(conn: Connection) -> Self {
        Self {
            conn,
            open_bi: None,
            open_uni: None,
        }
    }
}

impl Clone for H3Opener {
    fn clone(&self) -> Self {
        Self::new(self.conn.clone())
    }
}

impl<B: Buf> quic::OpenStreams<B> for H3Opener {
    type BidiStream = H3BidiStream<B>;
    type SendStream = H3SendStream<B>;

    fn poll_open_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::BidiStream, StreamErrorIncoming>> {
        let conn = &self.conn;
        poll_pending(&mut self.open_bi, cx, || {
            let conn = conn.clone();
            Box::pin(async move { conn.open_bi().await })
        })
        .map(|r| match r {
            Ok((send, recv)) => Ok(H3BidiStream::new(send, recv)),
            Err(crate::OpenStreamError::Closed(e)) => Err(stream_error_from_connection(e)),
        })
    }

    fn poll_open_send(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::SendStream, StreamErrorIncoming>> {
        let conn = &self.conn;
        poll_pending(&mut self.open_uni, cx, || {
            let conn = conn.clone();
            Box::pin(async move { conn.open_uni().await })
        })
        .map(|r| match r {
            Ok(send) => Ok(H3SendStream::new(send)),
            Err(crate::OpenStreamError::Closed(e)) => Err(stream_error_from_connection(e)),
        })
    }

    fn close(&mut self, code: ::h3::error::Code, reason: &[u8]) {
        self.conn.close(varint(code.value()), reason);
    }
}

/// A multipath sending stream for `h3`.
pub struct H3SendStream<B: Buf> {
    stream: SendStream,
    writing: Option<WriteBuf<B>>,
}

impl<B: Buf> H3SendStream<B> {
    fn new(stream: SendStream) -> Self {
        Self {
            stream,
            writing: None,
        }
    }
}

impl<B: Buf> quic::SendStream<B> for H3SendStream<B> {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        if let Some(data) = &mut self.writing {
            while data.has_remaining() {
                match self.stream.poll_write_inner(cx, data.chunk()) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(write_error(e))),
                    Poll::Ready(Ok(n)) => data.advance(n),
                }
            }
        }
        self.writing = None;
        Poll::Ready(Ok(()))
    }

    fn send_data<T: Into<WriteBuf<B>>>(&mut self, data: T) -> Result<(), StreamErrorIncoming> {
        if self.writing.is_some() {
            // h3 waits for poll_ready before sending more; anything else is its bug.
            return Err(StreamErrorIncoming::ConnectionErrorIncoming {
                connection_error: ConnectionErrorIncoming::InternalError(
                    "send_data while the previous data is still being written".into(),
                ),
            });
        }
        self.writing = Some(data.into());
        Ok(())
    }

    fn poll_finish(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        Poll::Ready(self.stream.finish().map_err(write_error))
    }

    fn reset(&mut self, reset_code: u64) {
        let _ = self.stream.reset(varint(reset_code));
    }

    fn send_id(&self) -> StreamId {
        h3_id(self.stream.id())
    }
}

/// A multipath receiving stream for `h3`.
pub struct H3RecvStream {
    stream: RecvStream,
}

impl H3RecvStream {
    fn new(stream: RecvStream) -> Self {
        Self { stream }
    }
}

impl quic::RecvStream for H3RecvStream {
    type Buf = Bytes;

    fn poll_data(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Self::Buf>, StreamErrorIncoming>> {
        self.stream.poll_chunk(cx, usize::MAX).map_err(read_error)
    }

    fn stop_sending(&mut self, error_code: u64) {
        let _ = self.stream.stop(varint(error_code));
    }

    fn recv_id(&self) -> StreamId {
        h3_id(self.stream.id())
    }
}

/// A multipath bidirectional stream for `h3`.
pub struct H3BidiStream<B: Buf> {
    send: H3SendStream<B>,
    recv: H3RecvStream,
}

impl<B: Buf> H3BidiStream<B> {
    fn new(send: SendStream, recv: RecvStream) -> Self {
        Self {
            send: H3SendStream::new(send),
            recv: H3RecvStream::new(recv),
        }
    }
}

impl<B: Buf> quic::BidiStream<B> for H3BidiStream<B> {
    type SendStream = H3SendStream<B>;
    type RecvStream = H3RecvStream;

    fn split(self) -> (Self::SendStream, Self::RecvStream) {
        (self.send, self.recv)
    }
}

impl<B: Buf> quic::SendStream<B> for H3BidiStream<B> {
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.send.poll_ready(cx)
    }

    fn send_data<T: Into<WriteBuf<B>>>(&mut self, data: T) -> Result<(), StreamErrorIncoming> {
        self.send.send_data(data)
    }

    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        self.send.poll_finish(cx)
    }

    fn reset(&mut self, reset_code: u64) {
        self.send.reset(reset_code)
    }

    fn send_id(&self) -> StreamId {
        self.send.send_id()
    }
}

impl<B: Buf> quic::RecvStream for H3BidiStream<B> {
    type Buf = Bytes;

    fn poll_data(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Self::Buf>, StreamErrorIncoming>> {
        self.recv.poll_data(cx)
    }

    fn stop_sending(&mut self, error_code: u64) {
        self.recv.stop_sending(error_code)
    }

    fn recv_id(&self) -> StreamId {
        self.recv.recv_id()
    }
}
