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
//! use mpquic_core::{Config, Endpoint, PathStatus};
//!
//! let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()])?;
//! let cert_der = cert.cert.der().clone();
//! let key = rustls::pki_types::PrivatePkcs8KeyDer::from(cert.key_pair.serialize_der());
//!
//! let mut config = Config::default();
//! config.scheduler("priority-bucket")?;
//! let server = Endpoint::server(
//!     &["127.0.0.1:0".parse()?],
//!     config.clone(),
//!     vec![cert_der.clone()],
//!     key.into(),
//! )?;
//! let server_addr = server.local_addrs()[0];
//! tokio::spawn(async move {
//!     while let Some(conn) = server.accept().await {
//!         tokio::spawn(async move {
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
//! let mut roots = rustls::RootCertStore::empty();
//! roots.add(cert_der)?;
//! let client = Endpoint::client(&["127.0.0.1:0".parse()?], config, roots)?;
//! let conn = client.connect(server_addr, "localhost")?.await?;
//! // A second path from another local address, joined to the same session.
//! conn.open_path("127.0.0.2:0".parse()?, server_addr, PathStatus::Available).await?;
//!
//! let (mut send, mut recv) = conn.open_bi().await?;
//! send.set_urgency(0, false)?;
//! send.write_all(b"hello over two paths").await?;
//! send.finish()?;
//! assert_eq!(recv.read_to_end(1024).await?, b"hello over two paths");
//! conn.close(0, b"done");
//! # Ok(())
//! # }
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
//! #     .block_on(demo()).unwrap();
//! ```

pub mod bbr;
mod config;
mod connection;
mod endpoint;
pub mod error;
pub mod fld;
#[cfg(feature = "h3")]
pub mod h3;
pub mod loss_based;
mod sent_log;
pub mod session;
pub mod sim;
mod stream;
mod telemetry;

pub use config::{Config, CongestionControl, SchedulerFactory, DEFAULT_INITIAL_WINDOW};
pub use connection::{read_frame, Connection, PathStats, ReadFrameError, CLOSED_PATHS_KEPT};
pub use endpoint::{Connecting, Endpoint};
pub use error::{
    codes, ConfigError, ConnectionError, OpenStreamError, PathError, ProtocolError, ReadError,
    ReadToEndError, WriteError,
};
pub use mpquic_proto::{wire, PathEvent, ReinjectionConfig, ReinjectionStats, Side};
pub use mpquic_sched::{PathId, PathStatus, StreamId};
pub use stream::{RecvStream, SendStream};
