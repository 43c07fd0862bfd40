//! Recorded pages loaded by a real browser over multipath QUIC.
//!
//! - [`site`]: the page builder, a recorded page as real files a browser loads the way the
//!   original did.
//! - [`metrics`]: the script in the built page that reports the browser's own paint metrics
//!   and request log, and the [`PaintReport`] it sends.
//! - [`Proxy`]: the browser's HTTP/2 over TLS to each of the page's origins, as HTTP/3 over an
//!   mpquic connection (or plain quinn) to the page server.
//! - [`Chromium`]: headless Chromium with a fresh profile per load, whose page hosts resolve to
//!   the proxy and nothing else.
//! - [`load_in_browser`]: one load of a built page, with the browser's first paint, first
//!   contentful paint, largest contentful paint, `DOMContentLoaded` and `load`.

mod chromium;
mod error;
mod load;
pub mod metrics;
mod proxy;
pub mod site;

pub use chromium::{Browser, Chromium, Window};
pub use error::BrowserError;
pub use load::{load_direct_in_browser, load_in_browser, page_server, BrowserLoad, BrowserOptions};
pub use metrics::{PaintReport, PaintTimes, ResourceTiming};
pub use proxy::{Proxy, ProxyLog};
pub use site::{OrderCheck, OutOfOrder, Site, SiteFile};
