//! Why a browser load failed.

use std::time::Duration;

/// Why a page could not be loaded in the browser.
#[derive(Debug, thiserror::Error)]
pub enum BrowserError {
    /// The proxy could not be set up.
    #[error("proxy: {0}")]
    Proxy(String),
    /// No Chromium binary was found.
    #[error("no Chromium found (looked for {0}); install Debian's `chromium` package or set MPQUIC_CHROMIUM")]
    NoChromium(String),
    /// Chromium could not be started or run.
    #[error("chromium: {0}")]
    Chromium(String),
    /// The page did not report its metrics in time.
    #[error(
        "the page reported no metrics within {timeout:?} ({forwarded} requests forwarded); \
         the browser's last lines: {browser}"
    )]
    NoReport {
        /// How long the load waited.
        timeout: Duration,
        /// Requests the proxy had forwarded by then.
        forwarded: u64,
        /// The end of the browser's own log.
        browser: String,
    },
    /// Setting up the page server, the links or the connection failed.
    #[error(transparent)]
    Run(#[from] mpquic_replay::RunError),
    /// Writing a file (the profile, a screenshot) failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being written.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}
