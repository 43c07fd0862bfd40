//! Netns mode: the page server and the page client as processes in the namespace testbed's
//! server and client namespaces, path k from `10.(k+1).0.1` to `10.(k+1).0.2` across the
//! testbed's emulated link k (root), for each path k the run uses
//! ([`RunConfig::path_indices`]: plain quinn's one path too).
//!
//! The program that calls [`load_netns`] provides both roles: it is started again with
//! `--serve` in the server namespace and with `--direct` in the client namespace (see
//! the lab's `page_client`), so one binary holds the whole measurement.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mpquic_netns::topology::{self, Side, Topology};
use serde::de::DeserializeOwned;

use crate::error::RunError;
use crate::report::{LinkDrops, LoadReport};
use crate::run::RunConfig;

/// The page server's UDP port in the server namespace.
pub const SERVER_PORT: u16 = 4433;

/// How long the server may take to write its certificate.
const SERVER_START: Duration = Duration::from_secs(20);

/// The server's addresses on the first `paths` paths.
pub fn server_addrs(paths: usize) -> Vec<SocketAddr> {
    server_addrs_on(&(0..paths).collect::<Vec<_>>())
}

/// The client's addresses on the first `paths` paths (any port).
pub fn client_addrs(paths: usize) -> Vec<SocketAddr> {
    client_addrs_on(&(0..paths).collect::<Vec<_>>())
}

/// The server's addresses on the paths `indices`.
pub fn server_addrs_on(indices: &[usize]) -> Vec<SocketAddr> {
    indices
        .iter()
        .map(|&k| SocketAddr::from((topology::server_addr(k), SERVER_PORT)))
        .collect()
}

/// The client's addresses on the paths `indices` (any port).
pub fn client_addrs_on(indices: &[usize]) -> Vec<SocketAddr> {
    indices
        .iter()
        .map(|&k| SocketAddr::from((topology::client_addr(k), 0)))
        .collect()
}

/// Joins addresses with commas, as the command lines take them.
pub fn join(addrs: &[SocketAddr]) -> String {
    addrs
        .iter()
        .map(|a| a.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Kills and reaps a child when dropped, so no server outlives the measurement.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Brings the testbed up for `run`'s scenario, starts `exe --serve ... <serve_args>` in the
/// server namespace, runs `exe --direct ... <client_args>` `reps` times in the client namespace
/// and collects one JSON report per load from its output. Everything is torn down before it
/// returns, also on error.
///
/// # Errors
/// [`RunError::Connect`] when the testbed is unavailable (not root), the server does not come
/// up, or a client run fails; [`RunError::Netns`] when the topology cannot be built;
/// [`RunError::Path`] or [`RunError::Paths`] for paths the scenario does not have.
pub fn load_netns(
    exe: &Path,
    run: &RunConfig,
    serve_args: &[String],
    client_args: &[String],
    reps: usize,
) -> Result<Vec<LoadReport>, RunError> {
    let runs = load_netns_as::<LoadReport>(exe, run, serve_args, client_args, reps)?;
    Ok(runs
        .into_iter()
        .map(|(mut report, drops)| {
            report.link_drops = drops;
            report
        })
        .collect())
}

/// What the testbed's links dropped during one load, by scenario path.
pub type PathDrops = BTreeMap<usize, LinkDrops>;

/// [`load_netns`] for a client whose last line of output is any JSON report `T` (the browser's,
/// say): each load's report with what the testbed's links dropped during it, by scenario path.
///
/// # Errors
/// As [`load_netns`].
pub fn load_netns_as<T: DeserializeOwned>(
    exe: &Path,
    run: &RunConfig,
    serve_args: &[String],
    client_args: &[String],
    reps: usize,
) -> Result<Vec<(T, PathDrops)>, RunError> {
    let indices = run.path_indices()?;
    if let Some(reason) = topology::unavailable() {
        return Err(RunError::Connect(format!(
            "netns mode needs the namespace testbed: {reason}"
        )));
    }
    let testbed = Topology::up_with(run.scenario, &[], run.loss_seed)?;
    let cert = std::env::temp_dir().join(format!("mpquic-netns-{}.der", std::process::id()));
    let _ = std::fs::remove_file(&cert);
    let servers = server_addrs_on(&indices);
    let clients = client_addrs_on(&indices);
    let mut server = testbed.exec(Side::Server, [exe.as_os_str()]);
    server
        .arg("--serve")
        .arg(join(&servers))
        .arg("--cert")
        .arg(&cert)
        .args(serve_args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut server = Reaped(
        server
            .spawn()
            .map_err(|e| RunError::Connect(format!("starting the server: {e}")))?,
    );
    let started = Instant::now();
    while !cert.exists() {
        if let Ok(Some(status)) = server.0.try_wait() {
            let mut stderr = String::new();
            if let Some(mut pipe) = server.0.stderr.take() {
                let _ = pipe.read_to_string(&mut stderr);
            }
            return Err(RunError::Connect(format!(
                "the server exited ({status}): {}",
                stderr.trim()
            )));
        }
        if started.elapsed() > SERVER_START {
            return Err(RunError::Connect(format!(
                "the server wrote no certificate in {SERVER_START:?}"
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // The certificate file appears before the endpoint is bound; give it a moment.
    std::thread::sleep(Duration::from_millis(200));
    let mut reports = Vec::with_capacity(reps);
    for _ in 0..reps {
        let before = testbed.stats();
        let output = client_command(&testbed, exe, &servers, &clients, &cert, client_args)
            .output()
            .map_err(|e| RunError::Connect(format!("starting the client: {e}")))?;
        if !output.status.success() {
            return Err(RunError::Connect(format!(
                "the client failed ({}): {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )));
        }
        let text = String::from_utf8_lossy(&output.stdout);
        let line = text.lines().last().unwrap_or_default();
        let report: T = serde_json::from_str(line)
            .map_err(|e| RunError::Connect(format!("client output {line:?}: {e}")))?;
        let drops = before
            .iter()
            .zip(&testbed.stats())
            .enumerate()
            .filter(|(k, _)| indices.contains(k))
            .map(|(k, (before, after))| (k, LinkDrops::between(before, after)))
            .collect();
        reports.push((report, drops));
    }
    drop(server);
    let _ = std::fs::remove_file(&cert);
    testbed.down()?;
    Ok(reports)
}

fn client_command(
    testbed: &Topology,
    exe: &Path,
    servers: &[SocketAddr],
    clients: &[SocketAddr],
    cert: &Path,
    client_args: &[String],
) -> Command {
    let mut client = testbed.exec(Side::Client, [exe.as_os_str()]);
    client
        .arg("--direct")
        .arg(join(servers))
        .arg("--local")
        .arg(join(clients))
        .arg("--cert")
        .arg(cert)
        .args(client_args)
        .stdin(Stdio::null());
    client
}
