//! Multipath QUIC over quinn: one logical connection over several paths, each path its own quinn
//! connection, with a pluggable scheduler from [`mpquic_sched`] deciding which stream's bytes go
//! on which path.
//!
//! The first path creates a session; further paths join it by proving a secret handed out on
//! the first. A logical stream's bytes travel as chunks (offset, length) on per-path quinn
//! streams and are reassembled by offset; the receiver's data acks let bytes sent on a path that
//! dies be re-sent on the others. `docs/ARCHITECTURE.md` in the repository says how it is
//! built and what bounds it.
//!
//! ```
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use mpquic_core::{Endpoint, PathConfig, Priority, SchedulerKind, SelfSigned, Urgency, VarInt};
//! use std::sync::Arc;
//!
//! // Your own rustls configurations work as with quinn; here, a made-up certificate.
//! let certificate = SelfSigned::new(&["localhost"])?;
//! let mut config = mpquic_core::Config::default();
//! config.scheduler(SchedulerKind::PriorityBucket);
//! let config = Arc::new(config);
//!
//! let mut server_config = certificate.server_config()?;
//! server_config.transport_config(config.clone());
//! let server = Endpoint::server(server_config, "127.0.0.1:0".parse()?)?;
//! let server_addr = server.local_addr()?;
//! tokio::spawn(async move {
//!     while let Some(incoming) = server.accept().await {
//!         tokio::spawn(async move {
//!             let conn = incoming.await?;
//!             let (mut send, mut recv) = conn.accept_bi().await?;
//!             let request = recv.read_to_end(1024).await?;
//!             send.set_size_hint(request.len() as u64)?;
//!             send.write_all(&request).await?;
//!             send.finish()?;
//!             conn.closed().await;
//!             Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
//!         });
//!     }
//! });
//!
//! let mut client_config = certificate.client_config()?;
//! client_config.transport_config(config);
//! let mut client = Endpoint::client("127.0.0.1:0".parse()?)?;
//! client.set_default_client_config(client_config);
//! let conn = client.connect(server_addr, "localhost")?.await?;
//! // A second path from another local address, joined to the same session.
//! conn.open_path(&PathConfig::new("127.0.0.2:0".parse()?, server_addr)).await?;
//!
//! let (mut send, mut recv) = conn.open_bi().await?;
//! send.set_priority(Priority::new(Urgency::HIGHEST, false))?;
//! send.write_all(b"hello over two paths").await?;
//! send.finish()?;
//! assert_eq!(recv.read_to_end(1024).await?, b"hello over two paths");
//! conn.close(VarInt::from_u32(0), b"done");
//! # Ok(())
//! # }
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
//! #     .block_on(demo()).unwrap();
//! ```

pub mod bbr;
mod chunk_limit;
mod config;
mod connection;
mod endpoint;
pub mod error;
pub mod fld;
#[cfg(feature = "h3")]
pub mod h3;
pub mod loss_based;
mod path_events;
mod sent_log;
pub mod session;
pub mod sim;
mod stream;
mod telemetry;
mod tls;

pub use config::{Config, CongestionControl, PathConfig, SchedulerFactory, DEFAULT_INITIAL_WINDOW};
pub use connection::{read_frame, Connection, PathStats, CLOSED_PATHS_KEPT};
pub use endpoint::{Connecting, Endpoint, Incoming, RetryError};
pub use error::{
    codes, AcceptError, ConfigError, ConnectionError, OpenStreamError, PathError, ProtocolError,
    ReadError, ReadFrameError, ReadToEndError, SetupError, WriteError,
};
pub use mpquic_proto::{wire, PathEvent, ReinjectionConfig, ReinjectionStats, Side};
pub use mpquic_sched::{
    Lead, PathId, PathSet, PathStatus, Priority, SchedulerKind, StreamId, Urgency,
};
pub use path_events::{Missed, PathEvents};
pub use quinn::{crypto, VarInt};
pub use stream::{RecvStream, SendStream};
pub use tls::{CertificateError, ClientConfig, SelfSigned, ServerConfig};
