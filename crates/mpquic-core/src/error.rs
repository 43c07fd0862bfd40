//! Errors and the close codes mpquic puts on the wire: the protocol's own (from
//! [`mpquic_proto::error`]) and the driver's, for paths, streams and configuration.

use std::sync::Arc;

use mpquic_proto::wire::WireError;
use thiserror::Error;

pub use mpquic_proto::error::{codes, ConnectionError, ProtocolError, ReadError, WriteError};

/// A code or limit as quinn takes it (values above 2^62 - 1 cannot be sent; they become the
/// largest one).
pub(crate) fn varint(value: u64) -> quinn::VarInt {
    quinn::VarInt::from_u64(value).unwrap_or(quinn::VarInt::MAX)
}

/// Why a path could not be opened or changed (the connection itself is unaffected).
#[derive(Debug, Clone, Error)]
pub enum PathError {
    /// Only the client opens paths.
    #[error("only the client side opens paths")]
    NotClient,
    /// The endpoint has no client configuration: give it one with
    /// [`Endpoint::set_default_client_config`](crate::Endpoint::set_default_client_config) or
    /// connect with [`Endpoint::connect_with`](crate::Endpoint::connect_with).
    #[error("no client configuration")]
    NoClientConfig,
    /// The endpoint is bound to no address to connect from.
    #[error("the endpoint is bound to no address")]
    NoLocalAddress,
    /// The connection already has its maximum number of paths.
    #[error("the connection already has {0} paths, its maximum")]
    TooManyPaths(usize),
    /// Binding the local address failed.
    #[error("cannot bind {addr}")]
    Bind {
        /// The address.
        addr: std::net::SocketAddr,
        /// What the operating system said.
        #[source]
        source: Arc<std::io::Error>,
    },
    /// quinn could not start the path's connection (e.g. an invalid remote address).
    #[error("cannot start the path's QUIC connection")]
    Connect(#[from] quinn::ConnectError),
    /// The path's QUIC or TLS handshake failed.
    #[error("the path's QUIC handshake failed")]
    Handshake(#[from] quinn::ConnectionError),
    /// The path's first exchange (its session or join frame and the answer) failed.
    #[error("the path's set-up failed")]
    Setup(#[from] SetupError),
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
    /// A path is taken down with [`Connection::close_path`](crate::Connection::close_path), not
    /// by its status, and a new path cannot start down.
    #[error("a path's status cannot be set to down")]
    StatusDown,
    /// The connection is closed.
    #[error("connection closed")]
    Closed(#[source] ConnectionError),
}

/// Why a server could not take a new path: a session's first (from awaiting an
/// [`Incoming`](crate::Incoming)) or a join.
#[derive(Debug, Clone, Error)]
pub enum AcceptError {
    /// The endpoint is gone.
    #[error("the endpoint is closed")]
    EndpointClosed,
    /// [`Config::max_half_open`](crate::Config::max_half_open) connections are already in
    /// their handshakes; quinn refused this one.
    #[error("too many half-open connections")]
    TooManyHalfOpen,
    /// The QUIC or TLS handshake failed.
    #[error("the QUIC handshake failed")]
    Handshake(#[source] quinn::ConnectionError),
    /// The path's set-up broke the protocol or a limit; it was closed with `code`.
    #[error("refused: code {code:#x}, {reason}")]
    Refused {
        /// One of [`codes`].
        code: u64,
        /// Why.
        reason: String,
    },
}

/// Why the first exchange on a new path failed: the frame that starts a session or joins one,
/// and the server's answer.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SetupError {
    /// The path's control stream could not be opened.
    #[error("cannot open the path's control stream")]
    Open(#[source] quinn::ConnectionError),
    /// The first frame could not be encoded.
    #[error("cannot encode the path's first frame")]
    Encode(#[source] WireError),
    /// The first frame could not be written.
    #[error("cannot send the path's first frame")]
    Write(#[source] quinn::WriteError),
    /// The server's answer could not be read.
    #[error("cannot read the server's answer")]
    Read(#[source] ReadFrameError),
    /// The server answered with something else than what the frame asks for.
    #[error("unexpected answer from the server")]
    UnexpectedAnswer,
    /// The TLS session offers no keying material to prove a join with.
    #[error("the TLS session cannot export keying material")]
    NoExporter,
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
    /// A value out of its range, with the setting's name.
    #[error("invalid {0}")]
    Invalid(&'static str),
}

/// Why [`read_frame`](crate::read_frame) failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReadFrameError {
    /// The quinn stream failed.
    #[error(transparent)]
    Read(#[from] quinn::ReadError),
    /// The bytes are not a frame.
    #[error(transparent)]
    Wire(#[from] WireError),
}
