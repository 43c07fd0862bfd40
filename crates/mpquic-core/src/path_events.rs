//! [`PathEvents`]: a connection's path events as a `futures` stream.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;
use tokio::sync::broadcast;
use tokio_stream::wrappers::errors::BroadcastStreamRecvError;
use tokio_stream::wrappers::BroadcastStream;

use crate::PathEvent;

/// The path events of a connection from the moment it was asked for
/// ([`Connection::path_events`](crate::Connection::path_events)), in order; it ends with the
/// connection. Events are buffered for a slow reader up to a bound; one that falls behind
/// further is told how many it missed.
///
/// ```no_run
/// # async fn demo(conn: mpquic_core::Connection) {
/// let mut events = conn.path_events();
/// while let Some(event) = events.next().await {
///     println!("{event:?}");
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct PathEvents(BroadcastStream<PathEvent>);

/// A [`PathEvents`] reader fell behind and this many events were dropped before the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{0} path events were missed")]
pub struct Missed(pub u64);

impl PathEvents {
    pub(crate) fn new(receiver: broadcast::Receiver<PathEvent>) -> Self {
        Self(BroadcastStream::new(receiver))
    }

    /// The next event; `None` once the connection is over.
    pub async fn next(&mut self) -> Option<Result<PathEvent, Missed>> {
        std::future::poll_fn(|cx| Pin::new(&mut *self).poll_next(cx)).await
    }
}

impl Stream for PathEvents {
    type Item = Result<PathEvent, Missed>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.0).poll_next(cx).map(|item| {
            item.map(|event| event.map_err(|BroadcastStreamRecvError::Lagged(n)| Missed(n)))
        })
    }
}
