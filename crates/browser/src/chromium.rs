//! Headless Chromium: found on the machine, started with a fresh profile for one page load,
//! every host of the page resolving to the proxy and every other name to nothing, and ended by
//! its process group when the load is over.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use crate::error::BrowserError;

/// Where to look for the browser when `MPQUIC_CHROMIUM` is not set: Debian's `chromium`
/// package first.
const CANDIDATES: &[&str] = &["chromium", "chromium-browser", "google-chrome", "chrome"];

/// How long a browser gets to exit after SIGTERM before its group is killed.
const GRACE: Duration = Duration::from_secs(2);

/// A Chromium binary.
#[derive(Debug, Clone)]
pub struct Chromium {
    binary: PathBuf,
}

/// The browser window's size in CSS pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
}

impl Default for Window {
    fn default() -> Self {
        Self {
            width: 1280,
            height: 900,
        }
    }
}

impl Chromium {
    /// The browser named by `MPQUIC_CHROMIUM`, else the first of `chromium`,
    /// `chromium-browser`, `google-chrome`, `chrome` on `PATH`.
    ///
    /// # Errors
    /// [`BrowserError::NoChromium`] when there is none.
    pub fn find() -> Result<Self, BrowserError> {
        if let Some(binary) = std::env::var_os("MPQUIC_CHROMIUM") {
            let binary = PathBuf::from(binary);
            return if binary.is_file() {
                Ok(Self { binary })
            } else {
                Err(BrowserError::NoChromium(binary.display().to_string()))
            };
        }
        let path = std::env::var_os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .flat_map(|dir| CANDIDATES.iter().map(move |name| dir.join(name)))
            .find(|candidate| candidate.is_file())
            .map(|binary| Self { binary })
            .ok_or_else(|| BrowserError::NoChromium(CANDIDATES.join(", ")))
    }

    /// The binary.
    pub fn binary(&self) -> &Path {
        &self.binary
    }

    /// Opens `url` in a new headless browser whose names in `hosts` resolve to `proxy`.
    ///
    /// # Errors
    /// [`BrowserError`] when the profile or the process cannot be made.
    pub fn open(
        &self,
        url: &str,
        hosts: &BTreeSet<String>,
        proxy: SocketAddr,
        window: Window,
    ) -> Result<Browser, BrowserError> {
        self.start(url, hosts, proxy, window, None)
    }

    /// Loads `url` as [`Chromium::open`] does and saves a PNG of the rendered page (the
    /// window's size) to `png` once it has loaded; waits at most `timeout`.
    ///
    /// # Errors
    /// [`BrowserError`] when the browser cannot start, fails, or takes longer.
    pub async fn screenshot(
        &self,
        url: &str,
        hosts: &BTreeSet<String>,
        proxy: SocketAddr,
        window: Window,
        png: &Path,
        timeout: Duration,
    ) -> Result<(), BrowserError> {
        let mut browser = self.start(url, hosts, proxy, window, Some(png))?;
        let status = tokio::time::timeout(timeout, browser.child.wait()).await;
        let outcome = match status {
            Ok(Ok(status)) if status.success() && png.is_file() => Ok(()),
            Ok(Ok(status)) => Err(BrowserError::Chromium(format!(
                "no screenshot ({status}): {}",
                browser.log_tail()
            ))),
            Ok(Err(e)) => Err(BrowserError::Chromium(format!("waiting for it: {e}"))),
            Err(_) => Err(BrowserError::Chromium(format!(
                "no screenshot within {timeout:?}: {}",
                browser.log_tail()
            ))),
        };
        browser.close().await;
        outcome
    }

    fn start(
        &self,
        url: &str,
        hosts: &BTreeSet<String>,
        proxy: SocketAddr,
        window: Window,
        screenshot: Option<&Path>,
    ) -> Result<Browser, BrowserError> {
        let io = |what: &str| {
            let what = what.to_owned();
            move |source| BrowserError::Io { what, source }
        };
        let profile = tempfile::Builder::new()
            .prefix("mpquic-chromium-")
            .tempdir()
            .map_err(io("the browser profile"))?;
        let log_path = profile.path().join("chromium.log");
        let log = std::fs::File::create(&log_path).map_err(io("the browser log"))?;
        let mut command = Command::new(&self.binary);
        command
            .args(flags(profile.path(), hosts, proxy, window))
            .args(screenshot.map(|png| format!("--screenshot={}", png.display())))
            .arg(url)
            // Chromium keeps its singleton socket in a directory of its own under TMPDIR and
            // leaves it behind when it is ended: inside the profile, it goes with the profile.
            .env("TMPDIR", profile.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            // Its own process group, so that ending it ends its renderer and helper processes.
            .process_group(0)
            .kill_on_drop(true);
        let child = command
            .spawn()
            .map_err(|e| BrowserError::Chromium(format!("{}: {e}", self.binary.display())))?;
        Ok(Browser {
            child,
            log: log_path,
            _profile: profile,
        })
    }
}

/// The command line of one headless load. Every host of the page maps to the proxy and every
/// other name to nowhere, so the browser reaches no network but the proxy on loopback; its own
/// background traffic (updates, sync, safe browsing, metrics) is off. A fresh profile per load
/// means an empty cache; the proxy also marks every response `no-store`.
fn flags(
    profile: &Path,
    hosts: &BTreeSet<String>,
    proxy: SocketAddr,
    window: Window,
) -> Vec<String> {
    let mut rules: Vec<String> = hosts.iter().map(|h| format!("MAP {h} {proxy}")).collect();
    rules.push("MAP * ~NOTFOUND".into());
    vec![
        "--headless".into(),
        // The sandbox needs user namespaces, which containers and root often lack; the browser
        // only ever loads our own pages.
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--no-first-run".into(),
        "--no-default-browser-check".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--disable-extensions".into(),
        "--disable-default-apps".into(),
        "--disable-domain-reliability".into(),
        "--disable-client-side-phishing-detection".into(),
        "--metrics-recording-only".into(),
        "--mute-audio".into(),
        "--password-store=basic".into(),
        "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication"
            .into(),
        // The proxy's certificate is self-signed for the page's names.
        "--ignore-certificate-errors".into(),
        format!("--host-resolver-rules={}", rules.join(", ")),
        format!("--window-size={},{}", window.width, window.height),
        format!("--user-data-dir={}", profile.display()),
    ]
}

/// A running browser, ended (with its process group) by [`Browser::close`] or on drop.
#[derive(Debug)]
pub struct Browser {
    child: Child,
    log: PathBuf,
    /// Removed when the browser is dropped.
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Ends the browser and every process it started: SIGTERM to its group, SIGKILL after a
    /// grace period.
    pub async fn close(mut self) {
        let Some(pid) = self.child.id().and_then(|id| i32::try_from(id).ok()) else {
            return; // already reaped
        };
        let group = Pid::from_raw(pid);
        let _ = killpg(group, Signal::SIGTERM);
        if tokio::time::timeout(GRACE, self.child.wait())
            .await
            .is_err()
        {
            let _ = killpg(group, Signal::SIGKILL);
            let _ = self.child.wait().await;
        }
        // Helpers that outlived the main process are in the same group.
        let _ = killpg(group, Signal::SIGKILL);
    }

    /// The last lines the browser wrote to stderr, for error messages.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| !l.contains("dbus") && !l.trim().is_empty())
            .collect();
        lines[lines.len().saturating_sub(5)..].join("\n")
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id().and_then(|id| i32::try_from(id).ok()) {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_page_hosts_resolve_and_to_the_proxy() {
        let hosts: BTreeSet<String> = ["a.test".into(), "cdn.b.test".into()].into();
        let proxy: SocketAddr = "127.0.0.1:4433".parse().unwrap();
        let flags = flags(Path::new("/tmp/p"), &hosts, proxy, Window::default());
        let rules = flags
            .iter()
            .find_map(|f| f.strip_prefix("--host-resolver-rules="))
            .unwrap();
        assert_eq!(
            rules,
            "MAP a.test 127.0.0.1:4433, MAP cdn.b.test 127.0.0.1:4433, MAP * ~NOTFOUND"
        );
        assert!(flags.contains(&"--user-data-dir=/tmp/p".to_owned()));
    }
}
