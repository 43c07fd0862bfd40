//! Recorded pages loaded by a real browser over multipath QUIC.
//!
//! - [`site`]: the page builder, a recorded page as real files a browser loads the way the
//!   original did.
//! - [`metrics`]: the script in the built page that reports the browser's own paint metrics
//!   and request log, and the [`PaintReport`] it sends.

pub mod metrics;
pub mod site;

pub use metrics::{PaintReport, ResourceTiming};
pub use site::{OrderCheck, OutOfOrder, Site, SiteFile};
