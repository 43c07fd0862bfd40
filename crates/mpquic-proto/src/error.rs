//! Errors of the multipath protocol and the close codes it puts on the wire.

use std::io;

use thiserror::Error;

use crate::wire::WireError;

/// Application error codes that mpquic itself uses when it closes a path's quinn connection.
///
/// They sit in a block of their own, [`codes::RESERVED`] (`0x6d70_xxxx`, "mp"), so that they do
/// not collide with an application's codes: a code of that block passed to the driver's
/// `Connection::close` reaches the peer as mpquic's error of that code.
pub mod codes {
    use std::ops::RangeInclusive;

    /// The codes mpquic reserves for itself; every other code is the application's.
    pub const RESERVED: RangeInclusive<u64> = 0x6d70_0000..=0x6d70_ffff;
    /// One path was closed on purpose; the connection goes on over the others.
    pub const PATH_CLOSED: u64 = 0x6d70_0000;
    /// The peer broke the protocol (a frame in the wrong place or state).
    pub const PROTOCOL_VIOLATION: u64 = 0x6d70_0001;
    /// The peer sent beyond a flow-control window.
    pub const FLOW_CONTROL: u64 = 0x6d70_0002;
    /// The peer sent data for a stream in a state that cannot take it (never opened, or ours).
    pub const STREAM_STATE: u64 = 0x6d70_0003;
    /// A frame or chunk could not be decoded.
    pub const FRAME_ENCODING: u64 = 0x6d70_0004;
    /// A join proved the wrong secret.
    pub const JOIN_REFUSED: u64 = 0x6d70_0005;
    /// A join named a session this endpoint does not have.
    pub const UNKNOWN_SESSION: u64 = 0x6d70_0006;
    /// A join would exceed the session's path limit.
    pub const TOO_MANY_PATHS: u64 = 0x6d70_0007;
    /// A path made no progress for too long and was given up.
    pub const PATH_FAILED: u64 = 0x6d70_0008;
    /// Bytes arrived past a stream's final size, or two final sizes disagree.
    pub const FINAL_SIZE: u64 = 0x6d70_0009;
    /// The peer opened more streams than allowed.
    pub const STREAM_LIMIT: u64 = 0x6d70_000a;
    /// Overlapping chunks carried different bytes for the same offsets.
    pub const CONFLICTING_DATA: u64 = 0x6d70_000b;
    /// The server already has its configured maximum of sessions.
    pub const SESSION_LIMIT: u64 = 0x6d70_000c;
    /// Nothing happened on the session for its idle timeout.
    pub const SESSION_IDLE: u64 = 0x6d70_000d;
}

/// A violation of the mpquic protocol by the peer. Each closes the connection with its code.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtocolError {
    /// A frame or chunk could not be decoded.
    #[error("malformed input: {0}")]
    Wire(#[from] WireError),
    /// Data went past a stream's receive window.
    #[error("stream {stream}: data up to offset {end} is beyond the window ending at {limit}")]
    StreamWindow {
        /// The logical stream.
        stream: u64,
        /// End offset of the offending chunk.
        end: u64,
        /// The window's end.
        limit: u64,
    },
    /// Data went past the connection's receive window.
    #[error("connection receive window exceeded: {received} bytes, window {limit}")]
    ConnectionWindow {
        /// Bytes the peer has sent in all.
        received: u64,
        /// The window.
        limit: u64,
    },
    /// Two chunks carried different bytes for the same stream offset.
    #[error("stream {stream}: conflicting bytes at offset {offset}")]
    ConflictingData {
        /// The logical stream.
        stream: u64,
        /// First differing offset.
        offset: u64,
    },
    /// Data for a stream this side never opened, or for a stream that only this side sends on.
    #[error("stream {0}: data for a stream that was never opened or cannot receive")]
    StreamState(u64),
    /// The peer opened a stream beyond the limit it was given.
    #[error("stream {0}: beyond the peer's stream limit")]
    StreamLimit(u64),
    /// Bytes past a stream's final size, or a changed final size.
    #[error("stream {0}: final size violated")]
    FinalSize(u64),
    /// A frame that is not allowed where it came (e.g. a second session frame).
    #[error("unexpected frame: {0}")]
    UnexpectedFrame(&'static str),
    /// The peer's chunks would cost the receiver more than twice its window in memory (e.g.
    /// single bytes behind holes).
    #[error("stream {stream}: buffering the peer's chunks would cost {footprint} bytes of memory, beyond {limit}")]
    ExcessiveBuffering {
        /// The stream whose chunk crossed the limit.
        stream: u64,
        /// The memory the buffered chunks would cost.
        footprint: u64,
        /// Twice the stream's or the connection's window.
        limit: u64,
    },
}

impl ProtocolError {
    /// The close code this violation is reported with.
    pub fn code(&self) -> u64 {
        match self {
            Self::Wire(_) => codes::FRAME_ENCODING,
            Self::StreamWindow { .. }
            | Self::ConnectionWindow { .. }
            | Self::ExcessiveBuffering { .. } => codes::FLOW_CONTROL,
            Self::ConflictingData { .. } => codes::CONFLICTING_DATA,
            Self::StreamState(_) => codes::STREAM_STATE,
            Self::StreamLimit(_) => codes::STREAM_LIMIT,
            Self::FinalSize(_) => codes::FINAL_SIZE,
            Self::UnexpectedFrame(_) => codes::PROTOCOL_VIOLATION,
        }
    }
}

/// Why a connection is over.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConnectionError {
    /// This side closed it.
    #[error("closed locally")]
    LocallyClosed,
    /// The peer closed it with an application code.
    #[error("closed by peer: code {code:#x}, {reason}")]
    ApplicationClosed {
        /// The peer's code.
        code: u64,
        /// The peer's reason.
        reason: String,
    },
    /// The peer broke the protocol; this side closed with the error's code.
    #[error("peer protocol violation: {0}")]
    Protocol(ProtocolError),
    /// The peer reported that this side broke the protocol.
    #[error("peer closed with protocol error code {code:#x}: {reason}")]
    PeerReportedError {
        /// One of [`codes`].
        code: u64,
        /// The peer's reason.
        reason: String,
    },
    /// Every path is gone.
    #[error("every path is down")]
    AllPathsDown,
    /// Nothing happened on the session for its idle timeout (either end may find it).
    #[error("the session was idle for its idle timeout")]
    TimedOut,
    /// Setting up the first path failed.
    #[error("handshake failed: {0}")]
    Handshake(String),
    /// The session was refused by the server.
    #[error("refused by the server: code {code:#x}, {reason}")]
    Refused {
        /// One of [`codes`].
        code: u64,
        /// The server's reason.
        reason: String,
    },
}

/// Why a write failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WriteError {
    /// The peer asked this side to stop sending.
    #[error("stopped by peer with code {0:#x}")]
    Stopped(u64),
    /// The stream was already finished or reset.
    #[error("stream already finished or reset")]
    ClosedStream,
    /// A reset code that does not fit a QUIC varint (at most 2^62 - 1).
    #[error("code {0:#x} does not fit a QUIC varint")]
    InvalidCode(u64),
    /// The connection is closed.
    #[error("connection closed: {0}")]
    ConnectionLost(#[from] ConnectionError),
}

impl From<WriteError> for io::Error {
    fn from(e: WriteError) -> Self {
        let kind = match e {
            WriteError::Stopped(_) => io::ErrorKind::ConnectionReset,
            WriteError::ClosedStream => io::ErrorKind::NotConnected,
            WriteError::InvalidCode(_) => io::ErrorKind::InvalidInput,
            WriteError::ConnectionLost(_) => io::ErrorKind::ConnectionAborted,
        };
        io::Error::new(kind, e)
    }
}

/// Why a read failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ReadError {
    /// The peer reset the stream.
    #[error("reset by peer with code {0:#x}")]
    Reset(u64),
    /// The connection is closed.
    #[error("connection closed: {0}")]
    ConnectionLost(#[from] ConnectionError),
    /// This side already stopped the stream.
    #[error("stream already stopped")]
    ClosedStream,
    /// A stop code that does not fit a QUIC varint (at most 2^62 - 1).
    #[error("code {0:#x} does not fit a QUIC varint")]
    InvalidCode(u64),
}

impl From<ReadError> for io::Error {
    fn from(e: ReadError) -> Self {
        let kind = match e {
            ReadError::Reset(_) => io::ErrorKind::ConnectionReset,
            ReadError::ClosedStream => io::ErrorKind::NotConnected,
            ReadError::InvalidCode(_) => io::ErrorKind::InvalidInput,
            ReadError::ConnectionLost(_) => io::ErrorKind::ConnectionAborted,
        };
        io::Error::new(kind, e)
    }
}
