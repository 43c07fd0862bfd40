//! Errors and the close codes mpquic puts on the wire: the protocol's own (from
//! [`mpquic_proto::error`]) and the driver's, for paths, streams and configuration.

use mpquic_sched::SchedError;
use thiserror::Error;

pub use mpquic_proto::error::{codes, ConnectionError, ProtocolError, ReadError, WriteError};

/// Why a path could not be opened (the connection itself is unaffected).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PathError {
    /// Only the client opens paths.
    #[error("only the client side opens paths")]
    NotClient,
    /// The connection already has its maximum number of paths.
    #[error("the connection already has {0} paths, its maximum")]
    TooManyPaths(usize),
    /// Binding the local address failed.
    #[error("cannot bind {addr}: {reason}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// The operating system's reason.
        reason: String,
    },
    /// QUIC or TLS setup of the path failed.
    #[error("path handshake failed: {0}")]
    Handshake(String),
    /// The server refused the join.
    #[error("join refused: code {code:#x}, {reason}")]
    Refused {
        /// One of [`codes`].
        code: u64,
        /// The server's reason.
        reason: String,
    },
    /// No such path.
    #[error("no path {0}")]
    UnknownPath(u32),
    /// The connection is closed.
    #[error("connection closed: {0}")]
    Closed(ConnectionError),
}

/// Why a stream could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OpenStreamError {
    /// The connection is closed.
    #[error("connection closed: {0}")]
    Closed(#[from] ConnectionError),
}

/// Why [`RecvStream::read_to_end`](crate::RecvStream::read_to_end) failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReadToEndError {
    /// A read failed.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The stream is longer than the limit given.
    #[error("stream longer than the {0}-byte limit")]
    TooLong(usize),
}

/// An invalid [`Config`](crate::Config) or stream setting.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ConfigError {
    /// The scheduler name is not one of the built-in ones.
    #[error(transparent)]
    Scheduler(#[from] SchedError),
    /// A value out of its range, with the setting's name.
    #[error("invalid {0}")]
    Invalid(&'static str),
    /// TLS set-up failed.
    #[error("TLS: {0}")]
    Tls(String),
    /// Binding a local address failed.
    #[error("cannot bind {addr}: {reason}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// The operating system's reason.
        reason: String,
    },
}
