//! One page load in the browser: the built site's page server, the run's emulated links, a
//! connection over them, the proxy on it, and headless Chromium through the proxy; the
//! browser's own metrics back.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mpquic_core::h3::H3Connection;
use mpquic_replay::{Connected, LinkDrops, Links, LocalServer, PageServer, RunConfig};
use rustls::pki_types::CertificateDer;
use serde::{Deserialize, Serialize};

use crate::chromium::{Chromium, Window};
use crate::error::BrowserError;
use crate::metrics::PaintReport;
use crate::proxy::{Proxy, ProxyLog};
use crate::site::Site;

/// How a browser load runs.
#[derive(Debug, Clone)]
pub struct BrowserOptions {
    /// The longest the page may take to report its metrics.
    ///
    /// # Default
    /// 60 s.
    pub timeout: Duration,
    /// The browser window.
    pub window: Window,
    /// Where to save a PNG of the rendered page, taken in a second load over the same
    /// connection after the measured one (so taking it costs the measurement nothing).
    pub screenshot: Option<PathBuf>,
}

impl Default for BrowserOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(60),
            window: Window::default(),
            screenshot: None,
        }
    }
}

/// What one browser load measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BrowserLoad {
    /// The page's id.
    pub page: String,
    /// `mpquic` or `quinn`.
    pub transport: String,
    /// The scheduler (mpquic) or `quinn`.
    pub scheduler: String,
    /// The scenario of the emulated links.
    pub scenario: String,
    /// Where the links ran.
    pub mode: String,
    /// The browser's own metrics.
    pub paint: PaintReport,
    /// What the proxy saw.
    pub proxy: ProxyLog,
    /// Stream bytes received on each mpquic path (empty for quinn).
    pub per_path_bytes: BTreeMap<u64, u64>,
    /// What the emulated links dropped, by scenario path.
    pub link_drops: BTreeMap<usize, LinkDrops>,
}

/// Loads `site` once in headless Chromium over `run`'s transport and emulated links on
/// loopback: a page server with the site's files ([`LocalServer`]), a relay per path
/// ([`Links`]), and [`load_direct_in_browser`] through them. Everything is torn down before it
/// returns.
///
/// # Errors
/// [`BrowserError`]: set-up failures, a browser that cannot start, or a page that reports no
/// metrics within the timeout.
pub async fn load_in_browser(
    site: &Arc<Site>,
    run: &RunConfig,
    chromium: &Chromium,
    options: &BrowserOptions,
) -> Result<BrowserLoad, BrowserError> {
    let server = page_server(site, run)?;
    let server = LocalServer::start(server, run)?;
    let links = Links::start(run, server.addr())?;
    let mut load = load_direct_in_browser(
        site,
        run,
        (&links.locals(), &links.fronts()),
        server.cert(),
        chromium,
        options,
    )
    .await?;
    load.link_drops = links.drops();
    Ok(load)
}

/// A page server for `site`: its files' bodies, and `run`'s dependency hints.
///
/// # Errors
/// [`BrowserError::Run`] when the page cannot be served.
pub fn page_server(site: &Site, run: &RunConfig) -> Result<PageServer, BrowserError> {
    let bodies = site.files.iter().map(|f| (f.key.clone(), f.body.clone()));
    Ok(PageServer::new(std::slice::from_ref(&site.page))
        .map_err(mpquic_replay::RunError::from)?
        .dependency_hints(run.dependency_hints)
        .with_bodies(bodies))
}

/// Loads `site` once in headless Chromium from a page server for it ([`page_server`]) reachable
/// at `remotes`, path k leaving from `locals[k]` (`(locals, remotes)`), with no emulator of its
/// own: inside the namespace testbed, the testbed's links are on the way. `link_drops` is left
/// empty for the caller.
///
/// # Errors
/// [`BrowserError`]: set-up failures, a browser that cannot start, or a page that reports no
/// metrics within the timeout.
pub async fn load_direct_in_browser(
    site: &Arc<Site>,
    run: &RunConfig,
    (locals, remotes): (&[SocketAddr], &[SocketAddr]),
    cert: CertificateDer<'static>,
    chromium: &Chromium,
    options: &BrowserOptions,
) -> Result<BrowserLoad, BrowserError> {
    let connected = Connected::open(run, locals, remotes, cert).await?;
    let outcome = through_proxy(site, &connected, chromium, options).await;
    let (scheduler, per_path_bytes) = match &connected {
        Connected::Mpquic { conn, .. } => (
            conn.scheduler_name(),
            conn.paths()
                .iter()
                .map(|p| (u64::from(p.id.0), p.bytes_received))
                .collect(),
        ),
        Connected::Quinn { .. } => (run.transport.name().to_owned(), BTreeMap::new()),
    };
    connected.close();
    let (paint, proxy) = outcome?;
    Ok(BrowserLoad {
        page: site.page.id.clone(),
        transport: run.transport.name().to_owned(),
        scheduler,
        scenario: run.scenario.name.to_owned(),
        mode: run.mode.name().to_owned(),
        paint,
        proxy,
        per_path_bytes,
        link_drops: BTreeMap::new(),
    })
}

/// The proxy on `connected` and the browser through it: the page's report, then the
/// screenshot if asked.
async fn through_proxy(
    site: &Arc<Site>,
    connected: &Connected,
    chromium: &Chromium,
    options: &BrowserOptions,
) -> Result<(PaintReport, ProxyLog), BrowserError> {
    let mut proxy = match connected {
        Connected::Mpquic { conn, .. } => {
            Proxy::start(site.clone(), H3Connection::new(conn.clone())).await?
        }
        Connected::Quinn { conn, .. } => {
            Proxy::start(site.clone(), h3_quinn::Connection::new(conn.clone())).await?
        }
    };
    let hosts = site.hosts();
    let browser = chromium.open(&site.start, &hosts, proxy.addr(), options.window)?;
    let report = proxy.report(options.timeout).await;
    let tail = browser.log_tail();
    browser.close().await;
    let log = proxy.log();
    let Some(report) = report else {
        return Err(BrowserError::NoReport {
            timeout: options.timeout,
            forwarded: log.forwarded,
            browser: tail,
        });
    };
    if let Some(png) = &options.screenshot {
        chromium
            .screenshot(
                &site.start,
                &hosts,
                proxy.addr(),
                options.window,
                png,
                options.timeout,
            )
            .await?;
    }
    Ok((report, log))
}
