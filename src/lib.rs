//! mpquic: multipath QUIC on top of quinn, whose point is *where each stream's bytes go*.
//!
//! One connection runs over several paths (Wi-Fi and LTE, two interfaces, two addresses); each
//! path is its own quinn connection, and a [scheduler](sched) decides which stream's bytes go
//! on which path. The API is quinn's where it can be: [`Endpoint`], [`ClientConfig`] and
//! [`ServerConfig`] around your own rustls configurations, [`Connection`], [`SendStream`],
//! [`RecvStream`], [`VarInt`] codes. What multipath adds is [`Connection::open_path`], RFC 9218
//! priorities on streams ([`SendStream::set_priority`]) and the choice of scheduler
//! ([`Config::scheduler`]).
//!
//! # A client and a server over two paths
//!
//! ```
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use mpquic::{Config, Endpoint, PathConfig, Priority, SchedulerKind, SelfSigned, Urgency};
//!
//! // A made-up certificate; any rustls configuration works (ClientConfig::new, ServerConfig::with_crypto).
//! let certificate = SelfSigned::new(&["localhost"])?;
//! let mut config = Config::default();
//! config.scheduler(SchedulerKind::PriorityBucket);
//! let config = Arc::new(config);
//!
//! // The server: one address; further paths of a session join it there.
//! let mut server_config = certificate.server_config()?;
//! server_config.transport_config(config.clone());
//! let server = Endpoint::server(server_config, "127.0.0.1:0".parse()?)?;
//! let server_addr = server.local_addr()?;
//! tokio::spawn(async move {
//!     while let Some(incoming) = server.accept().await {
//!         let conn = incoming.await?;
//!         let (mut send, mut recv) = conn.accept_bi().await?;
//!         let request = recv.read_to_end(1 << 10).await?;
//!         send.set_size_hint(request.len() as u64)?; // PriorityBucket splits by size
//!         send.write_all(&request).await?;
//!         send.finish()?;
//!         conn.closed().await;
//!     }
//!     Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
//! });
//!
//! // The client: a first path from 127.0.0.1, a second from 127.0.0.2.
//! let mut client_config = certificate.client_config()?;
//! client_config.transport_config(config);
//! let mut client = Endpoint::client("127.0.0.1:0".parse()?)?;
//! client.set_default_client_config(client_config);
//! let conn = client.connect(server_addr, "localhost")?.await?;
//! conn.open_path(&PathConfig::new("127.0.0.2:0".parse()?, server_addr)).await?;
//!
//! let (mut send, mut recv) = conn.open_bi().await?;
//! send.set_priority(Priority::new(Urgency::HIGHEST, false))?;
//! send.write_all(b"hello over two paths").await?;
//! send.finish()?;
//! assert_eq!(recv.read_to_end(1 << 10).await?, b"hello over two paths");
//! conn.close(0u32.into(), b"done");
//! # Ok(())
//! # }
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
//! #     .block_on(demo()).unwrap();
//! ```
//!
//! `examples/quinn_client.rs` and `quinn_server.rs` are quinn's own examples ported: the type
//! names change and the client opens one more path.
//!
//! # A scheduler of your own
//!
//! A scheduler is told of paths and streams and answers, whenever a path has room in its
//! congestion window, which stream sends how much on it ([`sched::Scheduler`]). This one sends
//! streams first come, first served, on every path:
//!
//! ```
//! use std::time::Instant;
//! use mpquic::sched::{Grant, PathId, PathSnapshot, SchedError, Scheduler, StreamId, StreamMeta, StreamTable};
//!
//! #[derive(Debug, Default)]
//! struct FirstComeFirstServed {
//!     streams: StreamTable,
//! }
//!
//! impl Scheduler for FirstComeFirstServed {
//!     fn name(&self) -> &str {
//!         "fcfs"
//!     }
//!     fn on_path_added(&mut self, _: Instant, _: &PathSnapshot) -> Result<(), SchedError> {
//!         Ok(())
//!     }
//!     fn on_path_updated(&mut self, _: Instant, _: &PathSnapshot) -> Result<(), SchedError> {
//!         Ok(())
//!     }
//!     fn on_path_removed(&mut self, _: Instant, _: PathId) {}
//!     fn on_stream_opened(&mut self, _: Instant, meta: &StreamMeta) -> Result<(), SchedError> {
//!         self.streams.open(*meta).map(drop)
//!     }
//!     fn on_stream_updated(&mut self, _: Instant, meta: &StreamMeta) -> Result<(), SchedError> {
//!         self.streams.update(*meta).map(drop)
//!     }
//!     fn on_data_queued(&mut self, _: Instant, id: StreamId, bytes: u64) -> Result<(), SchedError> {
//!         self.streams.queue(id, bytes).map(drop)
//!     }
//!     fn on_stream_finished(&mut self, _: Instant, id: StreamId) -> Result<(), SchedError> {
//!         self.streams.finish(id).map(drop)
//!     }
//!     fn on_stream_closed(&mut self, _: Instant, id: StreamId) {
//!         self.streams.remove(id);
//!     }
//!     fn poll_send(&mut self, _: Instant, _: PathId, room: u64) -> Option<Grant> {
//!         let first = self.streams.iter().filter(|s| s.queued > 0).min_by_key(|s| s.seq)?;
//!         let stream = first.meta.id;
//!         self.streams.grant(stream, room)
//!     }
//! }
//!
//! let mut config = mpquic::Config::default();
//! config.scheduler_factory("fcfs", || Box::new(FirstComeFirstServed::default()));
//! ```
//!
//! # The crates behind it
//! - [`sched`]: the scheduler contract, PriorityBucket and the baseline schedulers, and
//!   PriorityBucket's allocator;
//! - [`estimate`]: the RTT, one-way delay and bandwidth estimators the schedulers are fed from;
//! - [`h3`]: the `h3` crate's QUIC traits over a multipath connection, and [`h3_prio`]: RFC 9218
//!   priorities, default urgencies by resource type, critical objects;
//! - [`congestion`]: the congestion controllers a path can run.
//!
//! - [`sim`]: the same transport on simulated time and simulated links, deterministic, for
//!   tests and for comparing schedulers (`examples/two_paths.rs`).
//!
//! The wire format (`mpquic_core::wire`) is documented in `mpquic-core`; the testbed and the
//! page replay are separate crates of the workspace (see the README).

pub use mpquic_core::sim;
pub use mpquic_core::{
    codes, crypto, h3, CertificateError, ClientConfig, Config, ConfigError, Connecting, Connection,
    ConnectionError, Endpoint, Incoming, Missed, OpenStreamError, PathConfig, PathError, PathEvent,
    PathEvents, PathId, PathSet, PathStats, PathStatus, Priority, ProtocolError, ReadError,
    ReadToEndError, RecvStream, ReinjectionConfig, ReinjectionStats, SchedulerFactory,
    SchedulerKind, SelfSigned, SendStream, ServerConfig, SetupError, Side, StreamId, Urgency,
    VarInt, WriteError, CLOSED_PATHS_KEPT,
};
pub use mpquic_estimate as estimate;
pub use mpquic_h3_prio as h3_prio;
pub use mpquic_sched as sched;

/// The congestion controllers a path can run ([`Config::congestion_control`],
/// [`PathConfig::congestion_control`]).
pub mod congestion {
    pub use mpquic_core::bbr::BbrConfig;
    pub use mpquic_core::fld::FldConfig;
    pub use mpquic_core::loss_based::{LossAlgorithm, LossBasedConfig};
    pub use mpquic_core::{CongestionControl, DEFAULT_INITIAL_WINDOW};
}
