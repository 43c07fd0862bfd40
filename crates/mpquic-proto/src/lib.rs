//! The multipath protocol of mpquic without I/O.
//!
//! Nothing here reads a clock, a socket or a task: the pieces take bytes and `now` in and are
//! asked for what to send. `mpquic-core` drives them over quinn; Cargo keeps this crate free of
//! quinn, tokio and async.
//!
//! - [`Connection`]: one multipath connection (streams, flow control, data acks, control
//!   frames, re-injection, path suspicion and failure, the scheduler's calls).
//!   Paths are abstract: the driver adds them with a [`PathTelemetry`] to read their
//!   estimates from, asks [`Connection::poll_path`] what to send on each, and carries out
//!   [`Connection::poll_action`]'s actions.
//! - [`wire`]: the wire format (varints, control frames, chunk streams) and incremental
//!   decoders that take bytes as they arrive.
//! - [`ReinjectionConfig`]: when bytes in flight on one path go again on another (urgent
//!   streams' losses within a budget, and every byte of a path that stops acknowledging).
//! - [`error`]: protocol violations and the close codes they map to.
//!
//! ```
//! use mpquic_proto::wire::{encode_chunk_header, encode_chunk_stream_header, ChunkDecoder};
//!
//! // Stream 4's bytes 0..5, as a sender writes them on a path's chunk stream...
//! let mut bytes = Vec::new();
//! encode_chunk_stream_header(4, &mut bytes)?;
//! encode_chunk_header(0, 5, &mut bytes)?;
//! bytes.extend_from_slice(b"hello");
//!
//! // ...and as the receiver decodes them, however the transport cut them up.
//! let mut decoder = ChunkDecoder::default();
//! let (first, second) = bytes.split_at(3);
//! assert_eq!(decoder.decode(&mut &first[..])?, None);
//! let chunk = decoder.decode(&mut &second[..])?.expect("a whole chunk");
//! assert_eq!((chunk.stream, chunk.offset, &chunk.data[..]), (4, 0, &b"hello"[..]));
//! # Ok::<(), mpquic_proto::wire::WireError>(())
//! ```

mod arrivals;
mod connection;
pub mod error;
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing;
mod path;
mod pending_acks;
mod reassembly;
mod receive_window;
mod recv;
mod reinjection;
mod send;
mod send_buffer;
#[cfg(test)]
mod test_heap;
pub mod wire;

pub use connection::{Action, Connection, Side, Step, TransportConfig, UnknownPath};
pub use path::{PathCounters, PathEvent, PathTelemetry, Tail};
pub use recv::RecvCounters;
pub use reinjection::{ReinjectionConfig, ReinjectionStats};
pub use send::{ChunkWork, StreamCounters};
