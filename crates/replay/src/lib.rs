//! Recorded-page replay over HTTP/3 over multipath QUIC: what the PriorityBucket and SEC papers
//! measured, a browser-like client loading a recorded page from a server over several paths,
//! with first rendering time (FRT) and page load time (PLT) per scheduler.
//!
//! - [`har`]: a HAR recording (Chrome, Firefox, chrome-har, WebPageTest) into a [`Page`]: per
//!   object its URL and the key it is served under, the recorded transfer size, content type,
//!   RFC 9218 priority (Chrome's recorded `_priority`, else Chrome's default for the resource
//!   type), whether it is on the critical rendering path, and how the browser discovered it
//!   ([`Discovery`]: the recorded initiator when there is one, else the recorded start time
//!   relative to the main document's completion). The rules are in [`har`]'s docs.
//! - [`PageServer`]: every recorded object over the unmodified `h3` crate over an
//!   [`mpquic_core::Connection`]; 200 with a body of exactly the recorded size, the content
//!   type and a `priority` header, 404 for anything else; each response's urgency and size go
//!   to the multipath stream before its first byte, so the scheduler knows both.
//! - [`load`]: the client: the document first, then the sub-resources in discovery order, each
//!   request with its `priority` header; a [`LoadReport`] with every object's completion, FRT
//!   (last critical object) and PLT (last object) from the page request, and bytes per path.
//! - [`load_page`]: all of it in one process over a scenario's emulated links (the
//!   `mpquic-netns` link emulator as a UDP relay per path on loopback, no root).
//! - The baseline, [`Transport::Quinn`]: the same client and server over plain quinn (HTTP/3
//!   through h3-quinn, [`load_quinn`], [`PageServer::run_quinn`]) on one path, by default the
//!   scenario's better one ([`better_path`]). Nothing tells its transport a response's
//!   urgency: h3-quinn's request stream does not reach the quinn stream's priority.
//!
//! # Example
//!
//! A two-object page over pb-low's two paths with PriorityBucket:
//!
//! ```
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use mpquic_replay::{har, load_page, RunConfig};
//!
//! let text = r#"{"log": {"entries": [
//!   {"startedDateTime": "2024-01-01T00:00:00.000Z", "time": 50, "request": {"url": "https://a.test/"},
//!    "_resourceType": "document",
//!    "response": {"status": 200, "bodySize": 20000, "content": {"mimeType": "text/html"}}},
//!   {"startedDateTime": "2024-01-01T00:00:00.060Z", "request": {"url": "https://a.test/s.css"},
//!    "_initiator": "https://a.test/",
//!    "response": {"status": 200, "bodySize": 5000, "content": {"mimeType": "text/css"}}}
//! ]}}"#;
//! let page = har::parse(text, "example")?;
//! assert_eq!(page.objects[1].key, "/example/a.test/s.css");
//! assert!(page.objects[1].critical);
//!
//! let report = load_page(&page, &RunConfig::new("priority-bucket", "pb-low")?).await?;
//! assert_eq!(report.bytes, 25_000);
//! assert!(report.frt_ms > 0.0 && report.frt_ms <= report.plt_ms);
//! println!("{}", serde_json::to_string(&report)?);
//! # Ok(())
//! # }
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap()
//! #     .block_on(demo()).unwrap();
//! ```

mod client;
mod error;
pub mod har;
pub mod netns;
mod page;
mod plain;
mod report;
mod run;
mod server;
pub mod sim;
mod time;

pub use client::{load, load_h3, load_quinn, LoadError, LoadOptions, RequestOrder, Transport};
pub use error::RunError;
pub use har::HarError;
pub use page::{Discovery, Page, PageObject};
pub use plain::{quinn_connect, quinn_server};
pub use report::{LinkDrops, LoadReport, ObjectReport, RepeatedReport, Spread};
pub use run::{
    auto_paths, better_path, connect, load_direct, load_page, load_page_blocking, load_remote,
    loopback_local, self_signed, transport_config, Connected, Links, LocalServer, Mode, RunConfig,
};
pub use server::{PageServer, ServeError};
